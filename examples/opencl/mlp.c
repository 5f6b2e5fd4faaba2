/*
 * mlp.c: one small computation run on the CPU and on an OpenCL device through
 * the dispatcher, the same code for both (docs/GUIDE.md, "An OpenCL backend").
 *
 *   kd_opencl_mlp path/to/libkd_opencl.so
 *
 * The computation is one layer of a tiny multi-layer perceptron and a loss-
 * like total:
 *
 *   h = relu(x @ W + b)        x [8,16], W [16,32], b [32] (broadcast)
 *   p = softmax(h, dim=1)      each row sums to 1
 *   s = sum(p * h)             a scalar
 *
 * The program loads the OpenCL plugin (as `kd --load` or KD_BACKENDS would),
 * makes x, W and b on the CPU, moves copies to opencl:0 (kd_tensor_to_device),
 * and runs the same function on both sets of inputs: which kernels run is the
 * dispatcher's choice, from the inputs' device. mm and addmm go to CLBlast,
 * add and mul to the backend's pointwise loops, softmax and sum to its
 * reductions, relu to whatever the plugin registers (else the CPU fallback,
 * counted and shown at the end). Nothing waits for the device until the
 * results are printed (printing copies them to the host).
 *
 * It prints both results and the largest difference, and exits 1 when that
 * is above 1e-4 (CTest runs it: example_opencl_mlp). Without an OpenCL
 * platform it says so and exits 77.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kd/kd.h>
#include <kd/ops.h>

/* Makes a cpu float32 tensor of the given sizes with values from a fixed
 * pseudo-random sequence scaled by `scale`. The caller owns *out. */
static kd_status make_input(int ndim, const int64_t *sizes, float scale, unsigned seed,
                            kd_tensor **out) {
  kd_status st = kd_tensor_empty(ndim, sizes, KD_FLOAT32, kd_device_cpu(), out);
  if (st) return st;
  float *v = kd_tensor_data(*out); /* a cpu tensor: its data is host memory */
  for (int64_t i = 0; i < kd_tensor_numel(*out); i++) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = scale * ((float)(seed >> 8) / (float)(1u << 24) - 0.5f);
  }
  return KD_OK;
}

/* The layer: every operator goes through the dispatcher, which picks the
 * kernels from the device of x, W and b. Borrows the inputs; on success the
 * caller owns *p_out and *s_out; on error both are NULL and the status says
 * which step failed (kd_last_error). */
static kd_status layer(kd_tensor *x, kd_tensor *w, kd_tensor *b, kd_tensor **p_out,
                       kd_tensor **s_out) {
  kd_tensor *xw = NULL, *z = NULL, *h = NULL, *p = NULL, *ph = NULL, *s = NULL;
  kd_status st = kd_mm(x, w, &xw);                 /* [8,32] */
  if (!st) st = kd_add_Tensor(xw, b, NULL, &z);    /* + b, broadcast over rows */
  if (!st) st = kd_relu(z, &h);                    /* max(z, 0) */
  if (!st) st = kd_softmax_int(h, 1, NULL, &p);    /* rows sum to 1 */
  if (!st) st = kd_mul_Tensor(p, h, &ph);
  if (!st) st = kd_sum(ph, NULL, &s);              /* 0-dim */
  kd_tensor *tmp[] = {xw, z, h, ph};
  for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
    if (tmp[i]) kd_tensor_release(tmp[i]);
  if (st) {
    if (p) kd_tensor_release(p);
    if (s) kd_tensor_release(s);
    p = s = NULL;
  }
  *p_out = p;
  *s_out = s;
  return st;
}

/* The largest |a - b| over two tensors of the same sizes (b may be on any
 * device: it is copied to the host, which waits for the device). -1 on error. */
static double max_diff(const kd_tensor *a, const kd_tensor *b) {
  kd_tensor *hb = NULL;
  if (kd_tensor_to_device(b, kd_device_cpu(), &hb)) return -1;
  double m = 0;
  const float *pa = kd_tensor_data(a), *pb = kd_tensor_data(hb);
  for (int64_t i = 0; i < kd_tensor_numel(a); i++) {
    double d = fabs((double)pa[i] - (double)pb[i]);
    if (!(d <= m)) m = d; /* NaN counts as the largest */
  }
  kd_tensor_release(hb);
  return m;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/libkd_opencl.so\n", argv[0]);
    return 2;
  }
  kd_plugin *plugin = NULL;
  if (kd_backend_load(argv[1], &plugin)) {
    /* No OpenCL platform (or no device on it) is not an error of this program. */
    int none = strstr(kd_last_error(), "platform") != NULL;
    printf("%s: the OpenCL backend did not load: %s\n", none ? "SKIP" : "error", kd_last_error());
    return none ? 77 : 1;
  }
  kd_device cl;
  if (kd_device_parse("opencl:0", &cl)) return 1;

  int rc = 1;
  kd_tensor *x = NULL, *w = NULL, *b = NULL, *xd = NULL, *wd = NULL, *bd = NULL;
  kd_tensor *p = NULL, *s = NULL, *pd = NULL, *sd = NULL;
  kd_status st = make_input(2, (int64_t[]){8, 16}, 2.0f, 1, &x);
  if (!st) st = make_input(2, (int64_t[]){16, 32}, 1.0f, 2, &w);
  if (!st) st = make_input(1, (int64_t[]){32}, 0.5f, 3, &b);
  /* The same bytes on the device: copies are queued, not waited for. */
  if (!st) st = kd_tensor_to_device(x, cl, &xd);
  if (!st) st = kd_tensor_to_device(w, cl, &wd);
  if (!st) st = kd_tensor_to_device(b, cl, &bd);
  if (!st) st = layer(x, w, b, &p, &s);
  if (!st) st = layer(xd, wd, bd, &pd, &sd);
  if (st) {
    fprintf(stderr, "error: %s: %s\n", kd_status_name(st), kd_last_error());
    goto out;
  }
  /* Reading the opencl scalar on the host (kd_tensor_item copies its one
   * element) is the one wait for the device. */
  kd_scalar vs, vsd;
  st = kd_tensor_item(s, &vs);
  if (!st) st = kd_tensor_item(sd, &vsd);
  if (st) {
    fprintf(stderr, "error: kd_tensor_item: %s: %s\n", kd_status_name(st), kd_last_error());
    goto out;
  }
  printf("sum(softmax(h) * h): cpu %.6f, opencl %.6f\n", vs.v.d, vsd.v.d);
  double dp = max_diff(p, pd), ds = max_diff(s, sd);
  printf("max |cpu - opencl|: softmax %.3g, sum %.3g\n", dp, ds);

  /* What did not run on the device: the CPU fallback's count per operator. */
  kd_op *relu;
  if (!kd_op_find("aten::relu", "", &relu))
    printf("relu through the CPU fallback: %llu call(s)\n",
           (unsigned long long)kd_op_fallback_count(relu, kd_backend_key(cl.type)));
  rc = dp >= 0 && ds >= 0 && dp <= 1e-4 && ds <= 1e-4 * (1 + fabs(vs.v.d)) ? 0 : 1;
  printf("%s\n", rc ? "MISMATCH" : "OK");
out:;
  kd_tensor *all[] = {x, w, b, xd, wd, bd, p, s, pd, sd};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (all[i]) kd_tensor_release(all[i]);
  /* Every opencl tensor is freed: the plugin can go. */
  if (kd_backend_unload(plugin)) {
    fprintf(stderr, "unload: %s\n", kd_last_error());
    rc = 1;
  }
  return rc;
}
