/*
 * fakedev_compare.c: runs a representative set of libkdops operators on the
 * fake device and on the CPU, and compares every result.
 *
 *   fakedev_compare path/to/libkd_fakedev.so
 *
 * Loads the plugin with kd_backend_load, then, for each case and for each of
 * the two devices (fakedev:0 and fakedev:1): makes the inputs on the CPU,
 * moves copies to the device, runs the same code on both, and checks that
 * the device's result lives on that device (index included), and has the
 * CPU result's dtype, sizes and values. Views must share their base's
 * storage; in-place and out= cases check the tensor the caller passed.
 * Last, it checks that the plugin's own kernels ran (the others went
 * through the CPU fallback), that no device memory is left, and that the
 * plugin unloads. Exit status 0 when everything matched; every mismatch is
 * printed as "FAIL case (device): what".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <kd/kd.h>
#include <kd/ops.h>

/* The plugin's extras (get_proc_address). */
typedef long long (*fakedev_live_bytes_fn_t)(int32_t index);
typedef long long (*fakedev_kernel_calls_fn_t)(const char *kernel);

#define NIN 10 /* inputs: see make_inputs */
typedef kd_status (*case_fn)(kd_tensor **x, kd_device dev, kd_tensor **out);

enum { VALUES = 0, VIEW = 1, NO_VALUES = 2 }; /* what a case's result is checked for */

static int failures;

/* Prints "FAIL name (device): message" and counts it. */
__attribute__((format(printf, 3, 4))) static void FAIL(const char *name, kd_device dev,
                                                       const char *fmt, ...) {
  char d[32];
  va_list ap;
  kd_device_format(dev, d, sizeof d);
  printf("FAIL %s (%s): ", name, d);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  failures++;
}

#define I(...) ((kd_ints){(const int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / 8})
#define TS(...) \
  ((kd_tensors){(kd_tensor *const[]){__VA_ARGS__}, sizeof((kd_tensor *[]){__VA_ARGS__}) / sizeof(kd_tensor *)})

/* A copy of x on its own device (what an in-place case mutates; not
 * kd_clone, which is a case of its own). */
static kd_status dup(kd_tensor *x, kd_tensor **out) {
  return kd_tensor_to_device(x, kd_tensor_device(x), out);
}

/* An empty tensor of `dtype` on dev with no elements: an out= argument the
 * operator must resize. */
static kd_status empty_out(kd_dtype dtype, kd_device dev, kd_tensor **out) {
  return kd_empty_memory_format(I(0), &dtype, NULL, &dev, NULL, NULL, out);
}

/* ---- The cases --------------------------------------------------------------
 * x[0] A  float32 [3,4]     x[1] B  float32 [3,4]     x[2] C  float32 [4]
 * x[3] I  int64 [3,4]       x[4] J  int32 [3,4]       x[5] D  float64 [3,4]
 * x[6] S  float32 []        x[7] M  float32 [4,5]     x[8] Bo bool [3,4]
 * x[9] F  float32 [2,3,4] */
#define UNUSED __attribute__((unused))
#define CASE(name) static kd_status name(kd_tensor **x UNUSED, kd_device dev UNUSED, kd_tensor **out)

static const kd_scalar two_and_half = {.kind = KD_SCALAR_DOUBLE, .v.d = 2.5};
static const kd_scalar three = {.kind = KD_SCALAR_INT, .v.i = 3};
static const kd_scalar minus_half = {.kind = KD_SCALAR_DOUBLE, .v.d = -0.5};

/* pointwise */
CASE(add_f32) { return kd_add_Tensor(x[0], x[1], NULL, out); }
CASE(add_alpha_broadcast) { return kd_add_Tensor(x[0], x[2], &two_and_half, out); }
CASE(add_i64) { return kd_add_Tensor(x[3], x[3], &three, out); }
CASE(add_i32_fallback) { return kd_add_Tensor(x[4], x[4], NULL, out); }
CASE(add_i64_f32_promotes) { return kd_add_Tensor(x[3], x[0], NULL, out); }
CASE(add_0dim) { return kd_add_Tensor(x[0], x[6], NULL, out); }
CASE(add_scalar) { return kd_add_Scalar(x[0], &two_and_half, NULL, out); }
CASE(mul_f32) { return kd_mul_Tensor(x[0], x[1], out); }
CASE(mul_f64_fallback) { return kd_mul_Tensor(x[5], x[5], out); }
CASE(mul_i32_by_f32) { return kd_mul_Tensor(x[4], x[0], out); }
CASE(neg_f32) { return kd_neg(x[0], out); }
CASE(neg_i64) { return kd_neg(x[3], out); }
CASE(neg_strided) {
  kd_tensor *t;
  kd_status st = kd_transpose_int(x[0], 0, 1, &t);
  if (!st) st = kd_neg(t, out);
  kd_tensor_release(t);
  return st;
}
CASE(sub_alpha) { return kd_sub_Tensor(x[0], x[1], &three, out); }
CASE(div_f32) { return kd_div_Tensor(x[0], x[1], out); }
CASE(div_floor) { return kd_div_Tensor_mode(x[0], x[1], "floor", out); }
CASE(exp_f64) { return kd_exp(x[5], out); }
CASE(sqrt_f32) { return kd_sqrt(x[1], out); }
CASE(eq_bool) { return kd_eq_Tensor(x[0], x[1], out); }
CASE(where_self) { return kd_where_self(x[8], x[0], x[1], out); }
CASE(clamp_f32) { return kd_clamp(x[0], &minus_half, &two_and_half, out); }
CASE(relu_f32) { return kd_relu(x[0], out); }
/* reductions */
CASE(sum_f32) { return kd_sum(x[0], NULL, out); }
CASE(sum_i32_to_i64) { return kd_sum(x[4], NULL, out); }
CASE(sum_dim_keepdim) { return kd_sum_dim_IntList(x[9], I(0, 2), true, NULL, out); }
CASE(mean_dim) { return kd_mean_dim(x[0], I(1), false, NULL, out); }
CASE(amax_dim) { return kd_amax(x[9], I(1), false, out); }
CASE(argmax_dim) { int64_t d = 0; return kd_argmax(x[0], &d, false, out); }
CASE(prod_f64) { return kd_prod(x[5], NULL, out); }
/* views: results share the input's storage */
CASE(view) { return kd_view(x[0], I(4, 3), out); }
CASE(transpose) { return kd_transpose_int(x[0], 0, 1, out); }
CASE(slice) { int64_t s = 1, e = 4; return kd_slice_Tensor(x[0], 1, &s, &e, 2, out); }
CASE(select) { return kd_select_int(x[9], 1, 2, out); }
CASE(expand) { return kd_expand(x[2], I(3, 4), false, out); }
CASE(permute) { return kd_permute(x[9], I(2, 0, 1), out); }
CASE(narrow) { return kd_narrow(x[0], 0, 1, 2, out); }
CASE(unsqueeze) { return kd_unsqueeze(x[2], 0, out); }
/* composites that copy */
CASE(contiguous_of_transpose) {
  kd_tensor *t;
  kd_status st = kd_transpose_int(x[9], 0, 2, &t);
  if (!st) st = kd_contiguous(t, KD_MEMORY_FORMAT_CONTIGUOUS, out);
  kd_tensor_release(t);
  return st;
}
CASE(clone) { return kd_clone(x[3], NULL, out); }
CASE(reshape_copy) {
  kd_tensor *t;
  kd_status st = kd_transpose_int(x[0], 0, 1, &t);
  if (!st) st = kd_reshape(t, I(12), out);
  kd_tensor_release(t);
  return st;
}
CASE(to_int64) { return kd_to_dtype(x[0], KD_INT64, false, false, NULL, out); }
CASE(mm) { return kd_mm(x[0], x[7], out); }
CASE(matmul_vec) { return kd_matmul(x[0], x[2], out); }
/* factories with device= (on the CPU run, dev is the cpu) */
CASE(zeros) { kd_dtype dt = KD_INT32; return kd_zeros(I(2, 3), &dt, NULL, &dev, NULL, out); }
CASE(ones) { return kd_ones(I(5), NULL, NULL, &dev, NULL, out); }
CASE(full) { return kd_full(I(2, 2), &two_and_half, NULL, NULL, &dev, NULL, out); }
CASE(arange) { kd_dtype dt = KD_INT64; return kd_arange(&three, &dt, NULL, &dev, NULL, out); }
CASE(empty_channels_last) {
  kd_memory_format mf = KD_MEMORY_FORMAT_CHANNELS_LAST;
  return kd_empty_memory_format(I(2, 3, 4, 5), NULL, NULL, &dev, NULL, &mf, out);
}
CASE(zeros_like) { return kd_zeros_like(x[3], NULL, NULL, NULL, NULL, NULL, out); }
CASE(ones_like_f64) {
  kd_dtype dt = KD_FLOAT64;
  return kd_ones_like(x[0], &dt, NULL, NULL, NULL, NULL, out);
}
CASE(full_like) { return kd_full_like(x[0], &three, NULL, NULL, NULL, NULL, NULL, out); }
CASE(empty_like) { return kd_empty_like(x[9], NULL, NULL, NULL, NULL, NULL, out); }
/* out= variants: `out` starts empty on the device and must be resized */
#define OUT_CASE(name, dtype, call)                      \
  CASE(name) {                                           \
    kd_tensor *o;                                        \
    kd_status st = empty_out(dtype, dev, &o);            \
    if (!st) st = call;                                  \
    if (st) kd_tensor_release(o);                        \
    else *out = o;                                       \
    return st;                                           \
  }
OUT_CASE(add_out, KD_FLOAT32, kd_add_out(x[0], x[1], &three, o))
OUT_CASE(mul_out, KD_FLOAT32, kd_mul_out(x[0], x[2], o))
OUT_CASE(neg_out, KD_INT64, kd_neg_out(x[3], o))
OUT_CASE(sum_out, KD_FLOAT32, kd_sum_IntList_out(x[9], I(1), false, NULL, o))
OUT_CASE(cat_out, KD_FLOAT32, kd_cat_out(TS(x[0], x[1]), 1, o))
OUT_CASE(zeros_out, KD_FLOAT32, kd_zeros_out(I(3, 2), o))
/* in-place: on a clone, which the case returns */
#define INPLACE_CASE(name, src, call)                    \
  CASE(name) {                                           \
                                             \
    kd_tensor *t;                                        \
    kd_status st = dup(src, &t);                         \
    if (!st) st = call;                                  \
    if (st) kd_tensor_release(t);                        \
    else *out = t;                                       \
    return st;                                           \
  }
INPLACE_CASE(add_, x[0], kd_add_Tensor_(t, x[1], &two_and_half))
INPLACE_CASE(add_i32_, x[4], kd_add_Tensor_(t, x[4], NULL))
INPLACE_CASE(mul_, x[0], kd_mul_Tensor_(t, x[2]))
INPLACE_CASE(neg_, x[3], kd_neg_(t))
INPLACE_CASE(fill_, x[0], kd_fill_Scalar_(t, &minus_half))
INPLACE_CASE(zero_, x[3], kd_zero_(t))
INPLACE_CASE(relu_, x[0], kd_relu_(t))
INPLACE_CASE(clamp_, x[5], kd_clamp_(t, &minus_half, NULL))
CASE(copy_transposed) {
  kd_tensor *t, *tr;
  kd_status st = kd_transpose_int(x[0], 0, 1, &tr);
  if (st) return st;
  st = dup(x[7], &t); /* [4,5] */
  kd_tensor *n = NULL;
  if (!st) st = kd_narrow(t, 1, 1, 3, &n); /* a strided [4,3] view of it */
  if (!st) st = kd_copy_(n, tr, false);
  kd_tensor_release(n);
  kd_tensor_release(tr);
  if (st) kd_tensor_release(t);
  else *out = t;
  return st;
}
CASE(copy_from_int) {
  kd_tensor *t;
  kd_status st = dup(x[0], &t);
  if (!st) st = kd_copy_(t, x[3], false);
  if (st) kd_tensor_release(t);
  else *out = t;
  return st;
}
/* Tensor[] arguments */
CASE(cat_dim0) { return kd_cat(TS(x[0], x[1], x[0]), 0, out); }
CASE(cat_dim1) { return kd_cat(TS(x[0], x[3]), 1, out); }
CASE(stack) { return kd_stack_op(TS(x[0], x[1]), 1, out); }

static const struct {
  const char *name;
  case_fn fn;
  int check;
} cases[] = {
#define C(name) {#name, name, VALUES}
#define V(name) {#name, name, VIEW}
#define N(name) {#name, name, NO_VALUES}
    C(add_f32), C(add_alpha_broadcast), C(add_i64), C(add_i32_fallback), C(add_i64_f32_promotes),
    C(add_0dim), C(add_scalar), C(mul_f32), C(mul_f64_fallback), C(mul_i32_by_f32), C(neg_f32),
    C(neg_i64), C(neg_strided), C(sub_alpha), C(div_f32), C(div_floor), C(exp_f64),
    C(sqrt_f32), C(eq_bool), C(where_self), C(clamp_f32), C(relu_f32),
    C(sum_f32), C(sum_i32_to_i64), C(sum_dim_keepdim), C(mean_dim), C(amax_dim), C(argmax_dim),
    C(prod_f64),
    V(view), V(transpose), V(slice), V(select), V(expand), V(permute), V(narrow), V(unsqueeze),
    C(contiguous_of_transpose), C(clone), C(reshape_copy), C(to_int64), C(mm), C(matmul_vec),
    C(zeros), C(ones), C(full), C(arange), N(empty_channels_last), C(zeros_like), C(ones_like_f64),
    C(full_like), N(empty_like),
    C(add_out), C(mul_out), C(neg_out), C(sum_out), C(cat_out), C(zeros_out),
    C(add_), C(add_i32_), C(mul_), C(neg_), C(fill_), C(zero_), C(relu_), C(clamp_),
    C(copy_transposed), C(copy_from_int),
    C(cat_dim0), C(cat_dim1), C(stack),
#undef C
#undef V
#undef N
};

/* ---- Inputs and comparison -------------------------------------------------- */

static const kd_dtype in_dtypes[NIN] = {KD_FLOAT32, KD_FLOAT32, KD_FLOAT32, KD_INT64, KD_INT32,
                                        KD_FLOAT64, KD_FLOAT32, KD_FLOAT32, KD_BOOL, KD_FLOAT32};
static const int in_ndim[NIN] = {2, 2, 1, 2, 2, 2, 0, 2, 2, 3};
static const int64_t in_sizes[NIN][3] = {{3, 4}, {3, 4}, {4}, {3, 4}, {3, 4},
                                         {3, 4}, {0},    {4, 5}, {3, 4}, {2, 3, 4}};

/* Deterministic values: small integers and halves, some negative; B is
 * positive (sqrt, div). */
static kd_status make_inputs(kd_tensor **x) {
  for (int k = 0; k < NIN; k++) {
    kd_status st = kd_tensor_empty(in_ndim[k], in_sizes[k], in_dtypes[k], kd_device_cpu(), &x[k]);
    if (st) return st;
    int64_t n = kd_tensor_numel(x[k]), idx[3] = {0};
    for (int64_t i = 0; i < n; i++) {
      int64_t r = i;
      for (int d = in_ndim[k] - 1; d >= 0; d--) {
        idx[d] = r % in_sizes[k][d];
        r /= in_sizes[k][d];
      }
      double v = (double)((i * 7 + k * 3) % 11) - 5;
      if (k == 1) v = 0.5 + (double)((i * 5) % 9);
      if (kd_dtype_is_floating(in_dtypes[k])) v += (i % 2) * 0.5;
      kd_scalar s = in_dtypes[k] == KD_BOOL ? kd_scalar_bool((i % 3) != 0)
                    : kd_dtype_is_floating(in_dtypes[k]) ? kd_scalar_double(v)
                                                          : kd_scalar_int((int64_t)v);
      if ((st = kd_tensor_set(x[k], in_ndim[k] ? idx : NULL, &s))) return st;
    }
  }
  return KD_OK;
}

static double elem(const kd_tensor *t, int64_t flat) {
  int nd = kd_tensor_ndim(t);
  int64_t idx[KD_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = flat % kd_tensor_sizes(t)[d];
    flat /= kd_tensor_sizes(t)[d];
  }
  kd_scalar v;
  if (kd_tensor_get(t, nd ? idx : NULL, &v)) return NAN;
  return kd_scalar_to_double(&v);
}

/* Compares the device result `got` (already on the cpu) with `want`. */
static void compare(const char *name, kd_device dev, const kd_tensor *want, const kd_tensor *got,
                    int check) {
  if (kd_tensor_dtype(got) != kd_tensor_dtype(want)) {
    FAIL(name, dev, "dtype %s, expected %s", kd_dtype_name(kd_tensor_dtype(got)),
         kd_dtype_name(kd_tensor_dtype(want)));
    return;
  }
  int nd = kd_tensor_ndim(want);
  if (kd_tensor_ndim(got) != nd ||
      memcmp(kd_tensor_sizes(got), kd_tensor_sizes(want), sizeof(int64_t) * (size_t)nd)) {
    char a[128], b[128];
    kd_tensor_describe(got, a, sizeof a);
    kd_tensor_describe(want, b, sizeof b);
    FAIL(name, dev, "got %s, expected %s", a, b);
    return;
  }
  if (check == NO_VALUES) return;
  bool fl = kd_dtype_is_floating(kd_tensor_dtype(want));
  for (int64_t i = 0; i < kd_tensor_numel(want); i++) {
    double g = elem(got, i), w = elem(want, i);
    bool ok = fl ? (g == w || (isnan(g) && isnan(w)) || fabs(g - w) <= 1e-5 * fabs(w) + 1e-6)
                 : g == w;
    if (!ok) {
      FAIL(name, dev, "element %lld: %.9g, expected %.9g", (long long)i, g, w);
      return;
    }
  }
}

static void run_case(int c, kd_tensor **cpu_in, kd_device dev) {
  const char *name = cases[c].name;
  kd_tensor *dev_in[NIN] = {0}, *want = NULL, *got = NULL, *got_host = NULL;
  for (int k = 0; k < NIN; k++)
    if (kd_tensor_to_device(cpu_in[k], dev, &dev_in[k])) {
      FAIL(name, dev, "moving input %d to the device: %s", k, kd_last_error());
      goto done;
    }
  if (cases[c].fn(cpu_in, kd_device_cpu(), &want)) {
    FAIL(name, dev, "on the cpu: %s", kd_last_error());
    goto done;
  }
  if (cases[c].fn(dev_in, dev, &got)) {
    FAIL(name, dev, "%s", kd_last_error());
    goto done;
  }
  if (!kd_device_equal(kd_tensor_device(got), dev)) {
    char d[32];
    kd_device_format(kd_tensor_device(got), d, sizeof d);
    FAIL(name, dev, "the result is on %s", d);
    goto done;
  }
  if (cases[c].check == VIEW) {
    /* a view of whichever input it was made from */
    bool shares = false;
    for (int k = 0; k < NIN; k++) shares |= kd_tensor_shares_storage(got, dev_in[k]);
    if (!shares) FAIL(name, dev, "the result is not a view of its input (a copy)");
  }
  if (kd_tensor_to_device(got, kd_device_cpu(), &got_host)) {
    FAIL(name, dev, "moving the result to the cpu: %s", kd_last_error());
    goto done;
  }
  compare(name, dev, want, got_host, cases[c].check);
done:
  kd_tensor_release(got_host);
  kd_tensor_release(got);
  kd_tensor_release(want);
  for (int k = 0; k < NIN; k++) kd_tensor_release(dev_in[k]);
}

static int warnings;
static void count_warning(const char *message, void *user_data) {
  (void)message, (void)user_data;
  warnings++;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s path/to/libkd_fakedev.so\n", argv[0]);
    return 2;
  }
  kd_plugin *plugin;
  if (kd_ops_open() || kd_backend_load(argv[1], &plugin)) {
    fprintf(stderr, "%s\n", kd_last_error());
    return 1;
  }
  kd_set_warning_handler(count_warning, NULL); /* one per operator that falls back */
  const kd_backend *backend = kd_backend_for_device(KD_DEVICE_PRIVATEUSE1);
  const kd_backend_iface *b = backend ? kd_backend_iface_of(backend) : NULL;
  if (!b || strcmp(b->name, "fakedev")) {
    fprintf(stderr, "the plugin did not register the fakedev backend\n");
    return 1;
  }
  fakedev_live_bytes_fn_t live = (fakedev_live_bytes_fn_t)(uintptr_t)b->get_proc_address(
      b->ctx, "fakedev_live_bytes");
  fakedev_kernel_calls_fn_t calls = (fakedev_kernel_calls_fn_t)(uintptr_t)b->get_proc_address(
      b->ctx, "fakedev_kernel_calls");
  if (!live || !calls) {
    fprintf(stderr, "the plugin has no fakedev_live_bytes / fakedev_kernel_calls\n");
    return 1;
  }
  kd_tensor *x[NIN] = {0};
  if (make_inputs(x)) {
    fprintf(stderr, "inputs: %s\n", kd_last_error());
    return 1;
  }
  /* The device really scrambles: a CPU kernel reading its bytes would see
   * none of the values. */
  kd_tensor *probe;
  if (kd_tensor_to_device(x[0], (kd_device){KD_DEVICE_PRIVATEUSE1, 0}, &probe)) {
    fprintf(stderr, "to fakedev: %s\n", kd_last_error());
    return 1;
  }
  const float *raw = kd_tensor_data(probe), *vals = kd_tensor_data(x[0]);
  for (int64_t i = 0; i < kd_tensor_numel(x[0]); i++)
    if (raw[i] == vals[i]) {
      printf("FAIL fakedev:0 holds element %lld unscrambled\n", (long long)i);
      failures++;
    }
  kd_tensor_release(probe);
  size_t ncases = sizeof cases / sizeof cases[0];
  for (int32_t index = 0; index < 2; index++) {
    kd_device dev = {KD_DEVICE_PRIVATEUSE1, index};
    for (size_t c = 0; c < ncases; c++) run_case((int)c, x, dev);
  }
  for (int k = 0; k < NIN; k++) kd_tensor_release(x[k]);
  /* The plugin's own kernels ran for the dtypes they serve. */
  const char *own[] = {"empty", "fill_", "copy_", "neg", "add", "mul", "sum"};
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (calls(own[i]) <= 0) {
      printf("FAIL the plugin's %s kernel never ran\n", own[i]);
      failures++;
    }
  /* ... and the CPU fallback ran the dtypes they do not serve, and nothing
   * they do. */
  const struct {
    const char *op;
    bool fell_back;
  } fb[] = {{"aten::add.Tensor", true}, {"aten::mul.Tensor", true}, {"aten::exp", true},
            {"aten::cat", true},        {"aten::sum", false},       {"aten::copy_", false},
            {"aten::fill_.Scalar", false}};
  for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
    kd_op *op;
    uint64_t n = kd_op_find(fb[i].op, NULL, &op) ? 0 : kd_op_fallback_count(op, KD_KEY_PRIVATEUSE1);
    if ((n > 0) != fb[i].fell_back) {
      printf("FAIL %s fell back %llu times\n", fb[i].op, (unsigned long long)n);
      failures++;
    }
  }
  for (int32_t index = 0; index < 2; index++)
    if (live(index) != 0) {
      printf("FAIL fakedev:%d still holds %lld bytes\n", (int)index, live(index));
      failures++;
    }
  if (kd_backend_unload(plugin)) {
    printf("FAIL unload: %s\n", kd_last_error());
    failures++;
  }
  printf("%zu cases on 2 devices, %d fallback warnings: %d failures\n", ncases, warnings, failures);
  return failures ? 1 : 0;
}
