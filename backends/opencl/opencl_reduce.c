/*
 * opencl_reduce.c: the reductions (LegacyMeta: libkdops' meta, this impl)
 * and softmax / log_softmax (Customized: this meta and impl) of the OpenCL
 * backend. The OpenCL C is in opencl_reduce.cl.h.
 *
 * Reductions. libkdops' meta (kdk_meta_sum_dim_IntList, ...) checked the
 * arguments and resized out (the reduced shape, keepdim, the dtype: sum of
 * an integer input is int64, dtype= converts, argmax is int64); the impl
 * computes the reduction on the device without a tensor iterator: the
 * reduced dims (from `dim`, every dim when none) and the kept dims become a
 * geometry of sizes and strides (size-1 dims left out, adjacent reduced dims
 * that are one run of memory merged), and one work-group reduces each
 * output: its work-items each reduce a part of the row, in order, then a
 * tree in local memory combines them. When there are fewer outputs than the
 * device has work for (a full reduction: one output) and rows are long, each
 * row is split into S parts reduced by S work-groups into a temporary, and a
 * second kernel combines the parts of each output: a two-stage reduction.
 * Inputs may be strided (any strides, also 0), out= may be strided.
 *
 * Arithmetic: each element is converted to the output dtype first (as the
 * CPU converts the input before reducing), then accumulated: float32 in
 * float32, float64 in float64, integers and bool in int64 (wrapping, then
 * converted to the output dtype: the CPU's result modulo 2^bits). The float
 * order is blocks per work-item (8 interleaved chains each), then a tree,
 * not the CPU's, so float sums agree to rounding: the error bound of such a
 * sum is about (the longest chain + log2 n) * eps * sum |x| (a 16M float32
 * sum on PoCL: chains of 8K elements), and in practice far below it (the
 * tests use rtol 1e-5 for float32 and 1e-12 for float64). max/min and argmax/argmin
 * are exact: NaN wins (argmax/argmin: the first NaN), ties give the first
 * index. An empty reduction gives the identity (sum 0, prod 1, mean NaN);
 * amax/amin/argmax/argmin of empty rows are refused by the meta, as on the CPU.
 *
 * Dtypes the device does not compute (float16, bfloat16, complex, float64
 * without fp64; a bool sum or prod) run the CPU's operator instead: self
 * copied to the CPU (which waits for the device), the result written into
 * out (one blocking write when out is contiguous). Their results and errors
 * are the CPU's.
 *
 * Softmax: one work-group per row along dim (the other dims' positions),
 * max-subtracted: the maximum (NaN wins; a row of -inf: 0), the sum of
 * exp(x - max) in the dtype, then exp(x - max) / sum or x - max - log(sum).
 * The CPU computes rows in float64: float32 agrees to about 1e-6 relative.
 * float16 / bfloat16 run the CPU's kernel, as above.
 *
 * Nothing waits: the kernels are queued on the device's queue; the
 * temporaries of two-stage reductions are released after queueing (OpenCL
 * frees them when the kernels using them are done).
 */
#include <stdio.h>
#include <string.h>

#include "kdcl.h"
#include "opencl_functions.h"
#include "opencl_reduce.cl.h"

#include <kd/ops_all.h>

/* ---- Geometry (the layout of geom in opencl_reduce.cl.h) ----------------------- */

_Static_assert(KD_MAX_DIMS == 16, "geom in opencl_reduce.cl.h has 16 dims");

typedef struct kdcl_geom {
  cl_long nr, nk, R, S, chunk, blocked, in_off, out_off, flags;
  cl_long rsize[16], rstride[16], ksize[16], kstride[16], ostride[16];
} kdcl_geom;

enum { R_SUM, R_PROD, R_MEAN, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN };

/* Rows this short are reduced (softmaxed) by one work-item each, not one
 * work-group: many short rows would otherwise cost a work-group launch
 * each, which dwarfs the few additions of a short row. */
#define KDCL_SHORT_ROW 32

/* Work-items of a CPU device run one after another inside a work-group:
 * each takes a contiguous block (blocked) and groups are small. */
static bool is_cpu(const kdcl_device *d) {
  cl_device_type t = 0;
  if (clGetDeviceInfo(kdcl_device_id(d), CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS) return false;
  return (t & CL_DEVICE_TYPE_CPU) != 0;
}

/* The largest power of two <= n (n >= 1). */
static size_t pow2_floor(size_t n) {
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/* The work-group size for groups reducing `n` elements each. */
static size_t local_size(const kdcl_device *d, bool cpu, int64_t n) {
  size_t cap = cpu ? 16 : 256, mw = kdcl_info(d)->max_work_group;
  if (mw && mw < cap) cap = pow2_floor(mw);
  size_t l = cap;
  while (l > 1 && (int64_t)(l / 2) >= n) l /= 2;
  return l;
}

static bool same_device(const kd_tensor *a, const kd_tensor *b) {
  return kd_device_equal(kd_tensor_device(a), kd_tensor_device(b));
}

static kd_status device_mismatch(const char *op, const kd_tensor *a, const kd_tensor *b) {
  char x[64], y[64];
  kd_device_format(kd_tensor_device(a), x, sizeof x);
  kd_device_format(kd_tensor_device(b), y, sizeof y);
  return kd_set_error(KD_EINVAL,
                      "%s: Expected all tensors to be on the same device, but found at least two "
                      "devices, %s and %s!",
                      op, x, y);
}

/* The device both tensors are on (an opencl device), or NULL with the error set. */
static kdcl_device *common_device(const char *op, const kd_tensor *self, const kd_tensor *out) {
  if (!self || !out) {
    kd_set_error(KD_EINVAL, "%s (opencl): NULL tensor argument", op);
    return NULL;
  }
  if (!same_device(self, out)) {
    device_mismatch(op, out, self);
    return NULL;
  }
  return kdcl_tensor_device(out, op);
}

/* The element offset of t's element 0 in *buf (NULL when t has no bytes). */
static kd_status elem_buffer(const kd_tensor *t, cl_mem *buf, cl_long *off, const char *op) {
  size_t bytes = 0;
  kd_status st = kdcl_tensor_buffer(t, buf, &bytes, op);
  if (st) return st;
  *off = (cl_long)(bytes / kd_tensor_itemsize(t));
  return KD_OK;
}

/* The reduced dims of self as a mask: dims (size <= 0: every dim), wrapped
 * (the meta checked them). */
static kd_status reduce_mask(const char *op, const kd_tensor *self, kd_ints dims, bool *mask) {
  int nd = kd_tensor_ndim(self);
  for (int d = 0; d < KD_MAX_DIMS; d++) mask[d] = dims.size <= 0 && d < nd;
  for (int64_t i = 0; i < dims.size; i++) {
    int64_t n = nd > 0 ? nd : 1, v = dims.data[i];
    if (v < -n || v >= n)
      return kd_set_error(KD_ERANGE, "%s (opencl): dim %lld out of range for a %d-d tensor", op,
                          (long long)v, nd);
    if (nd > 0) mask[v < 0 ? v + n : v] = true;
  }
  return KD_OK;
}

/* Fills g's kept and reduced dims for self reduced over mask into out
 * (keepdim when out has self's ndim), and g->R. */
static void reduce_geom(const kd_tensor *self, const bool *mask, const kd_tensor *out, kdcl_geom *g) {
  int nd = kd_tensor_ndim(self);
  const int64_t *sz = kd_tensor_sizes(self), *st = kd_tensor_strides(self);
  const int64_t *ost = kd_tensor_strides(out);
  bool keep = kd_tensor_ndim(out) == nd;
  int j = 0; /* out's dim */
  g->R = 1;
  for (int d = 0; d < nd; d++) {
    if (!mask[d]) {
      if (sz[d] != 1) {
        g->ksize[g->nk] = sz[d];
        g->kstride[g->nk] = st[d];
        g->ostride[g->nk] = ost[j];
        g->nk++;
      }
      j++;
      continue;
    }
    if (keep) j++;
    g->R *= sz[d];
    if (sz[d] == 1) continue;
    if (g->nr > 0 && g->rstride[g->nr - 1] == st[d] * sz[d]) { /* one run with the previous */
      g->rsize[g->nr - 1] *= sz[d];
      g->rstride[g->nr - 1] = st[d];
    } else {
      g->rsize[g->nr] = sz[d];
      g->rstride[g->nr] = st[d];
      g->nr++;
    }
  }
}

static const char *const op_names[] = {"sum", "prod", "mean", "amax", "amin", "argmax", "argmin"};

/* The identity of max (lowest) or min (highest) for dt, as OpenCL C. */
static const char *extreme(kd_dtype dt, bool lowest) {
  switch (dt) {
  case KD_BOOL:
  case KD_UINT8: return lowest ? "0" : "255";
  case KD_INT8: return lowest ? "(-128)" : "127";
  case KD_INT16: return lowest ? "(-32768)" : "32767";
  case KD_INT32: return lowest ? "(-2147483647-1)" : "2147483647";
  case KD_INT64: return lowest ? "(-9223372036854775807L-1)" : "9223372036854775807L";
  default: return lowest ? "(-INFINITY)" : "INFINITY";
  }
}

/* Reduces self over mask into out (resized by the meta) with reduction
 * `kind` on their device. Borrows both; queues the kernels without waiting.
 * Errors: KD_EINVAL (tensors on two devices, not opencl), KD_ETYPE (a dtype
 * the device cannot run, a bool sum/prod), kdcl_fail for OpenCL errors. */
static kd_status reduce_run(int kind, kd_tensor *self, const bool *mask, kd_tensor *out) {
  const char *op = op_names[kind];
  kdcl_device *d = common_device(op, self, out);
  if (!d) return kd_last_status();
  kd_dtype in_dt = kd_tensor_dtype(self), out_dt = kd_tensor_dtype(out);
  const char *t_in = kdcl_ctype(d, in_dt, op), *t_out = t_in ? kdcl_ctype(d, out_dt, op) : NULL;
  if (!t_in || !t_out) return kd_last_status();
  bool arg = kind == R_ARGMAX || kind == R_ARGMIN;
  const char *acc = t_in, *ident = "0";
  size_t acc_size = kd_dtype_size(in_dt);
  if (kind == R_SUM || kind == R_PROD || kind == R_MEAN) {
    if (out_dt == KD_BOOL || (kind == R_MEAN && !kd_dtype_is_floating(out_dt)))
      return kd_set_error(KD_ETYPE, "%s (opencl): an output of dtype %s is not supported on opencl:%d",
                          op, kd_dtype_name(out_dt), kdcl_info(d)->index);
    bool fl = kd_dtype_is_floating(out_dt);
    acc = fl ? t_out : "long";
    acc_size = fl ? kd_dtype_size(out_dt) : 8;
    ident = kind == R_PROD ? "1" : "0";
  } else if (!arg) {
    ident = extreme(in_dt, kind == R_MAX);
  }
  kdcl_geom g;
  memset(&g, 0, sizeof g);
  reduce_geom(self, mask, out, &g);
  int64_t O = kd_tensor_numel(out);
  if (O == 0) return KD_OK;
  cl_mem in_buf = NULL, out_buf = NULL;
  kd_status st = elem_buffer(self, &in_buf, &g.in_off, op);
  if (!st) st = elem_buffer(out, &out_buf, &g.out_off, op);
  if (st) return st;
  bool cpu = is_cpu(d);
  int64_t cu = kdcl_info(d)->compute_units ? kdcl_info(d)->compute_units : 1;
  int64_t target = (cpu ? 8 : 64) * cu, S = 1;
  if (O < target && g.R > 8192) {
    S = (target + O - 1) / O;
    if (S > g.R / 4096) S = g.R / 4096;
    if (S > 1024) S = 1024;
    if (S < 1) S = 1;
  }
  g.chunk = S > 1 ? (g.R + S - 1) / S : g.R;
  g.S = S > 1 ? (g.R + g.chunk - 1) / g.chunk : 1;
  g.blocked = cpu;
  char opts[256];
  bool flt = !strcmp(acc, "float") || !strcmp(acc, "double");
  snprintf(opts, sizeof opts, "-DOP=%d -DT_IN=%s -DT_OUT=%s -DACC=%s -DIDENT=%s%s", kind, t_in, t_out,
           acc, ident, flt ? " -DFLT" : "");
  kdcl_kernel *k1 = NULL, *k2 = NULL;
  if (g.R <= KDCL_SHORT_ROW) { /* one work-item per output */
    if ((st = kdcl_kernel_get(d, kdcl_reduce_src, opts, "kd_reduce_each", &k1, op))) return st;
    cl_long nout = O;
    size_t global = (size_t)O;
    kdcl_arg a[] = {KDCL_ARG(in_buf), KDCL_ARG(out_buf), KDCL_ARG(g), KDCL_ARG(nout)};
    return kdcl_launch(d, k1, 4, a, 1, &global, NULL, op);
  }
  if ((st = kdcl_kernel_get(d, kdcl_reduce_src, opts, "kd_reduce", &k1, op))) return st;
  if (g.S > 1 && (st = kdcl_kernel_get(d, kdcl_reduce_src, opts, "kd_reduce_partials", &k2, op)))
    return st;
  cl_mem pv = NULL, pi = NULL;
  if (g.S > 1) {
    cl_int err = CL_SUCCESS;
    size_t n = (size_t)(O * g.S);
    pv = clCreateBuffer(kdcl_context(d), CL_MEM_READ_WRITE, n * acc_size, NULL, &err);
    if (err == CL_SUCCESS && arg)
      pi = clCreateBuffer(kdcl_context(d), CL_MEM_READ_WRITE, n * sizeof(cl_long), NULL, &err);
    if (err != CL_SUCCESS) {
      if (pv) clReleaseMemObject(pv);
      return kdcl_fail(err, "clCreateBuffer", op, d);
    }
  }
  size_t l1 = local_size(d, cpu, g.chunk);
  size_t global1 = (size_t)(O * g.S) * l1;
  kdcl_arg a1[] = {KDCL_ARG(in_buf), KDCL_ARG(out_buf), KDCL_ARG(pv), KDCL_ARG(pi), KDCL_ARG(g),
                   {l1 * acc_size, NULL}, {arg ? l1 * sizeof(cl_long) : sizeof(cl_long), NULL}};
  st = kdcl_launch(d, k1, 7, a1, 1, &global1, &l1, op);
  if (!st && g.S > 1) {
    size_t l2 = local_size(d, cpu, g.S);
    size_t global2 = (size_t)O * l2;
    kdcl_arg a2[] = {KDCL_ARG(pv), KDCL_ARG(pi), KDCL_ARG(out_buf), KDCL_ARG(g),
                     {l2 * acc_size, NULL}, {arg ? l2 * sizeof(cl_long) : sizeof(cl_long), NULL}};
    st = kdcl_launch(d, k2, 6, a2, 1, &global2, &l2, op);
  }
  if (pv) clReleaseMemObject(pv);
  if (pi) clReleaseMemObject(pi);
  return st;
}

/* Whether the device computes kind from in_dt into out_dt (else the CPU does:
 * float16, bfloat16, complex, float64 without fp64, a bool sum or prod). */
static bool on_device(const kdcl_device *d, int kind, kd_dtype in_dt, kd_dtype out_dt) {
  const kdcl_device_info *info = kdcl_info(d);
  kd_dtype dts[2] = {in_dt, out_dt};
  for (int i = 0; i < 2; i++) {
    kd_dtype t = dts[i];
    if (t == KD_FLOAT16 || t == KD_BFLOAT16 || kd_dtype_is_complex(t)) return false;
    if (t == KD_FLOAT64 && !info->fp64) return false;
  }
  return !((kind == R_SUM || kind == R_PROD) && out_dt == KD_BOOL);
}

/* kdcl.h (opencl_reduce.c's section). */
kd_status kdcl_write_from_cpu(kd_tensor *out, kd_tensor *r, const char *op) {
  if (kd_tensor_is_contiguous(out) && kd_tensor_is_contiguous(r) &&
      kd_tensor_numel(out) == kd_tensor_numel(r) && kd_tensor_dtype(out) == kd_tensor_dtype(r)) {
    cl_mem buf = NULL;
    size_t off = 0;
    kd_status st = kdcl_tensor_buffer(out, &buf, &off, op);
    if (st || !buf) return st;
    kdcl_device *d = kdcl_tensor_device(out, op);
    if (!d) return kd_last_status();
    cl_int err = clEnqueueWriteBuffer(kdcl_queue(d), buf, CL_TRUE, off,
                                      (size_t)kd_tensor_numel(r) * kd_tensor_itemsize(r),
                                      kd_tensor_data(r), 0, NULL, NULL);
    return KDCL_CHECK(err, "clEnqueueWriteBuffer", op, d);
  }
  kd_tensor *rd = NULL;
  kd_status st = kd_tensor_to_device(r, kd_tensor_device(out), &rd);
  if (!st) st = kd_copy_(out, rd, false);
  kd_tensor_release(rd);
  return st;
}

/* The CPU's reduction for what the device does not compute: self copied to
 * the CPU (this waits for the device), the CPU's operator with out's dtype
 * (the meta's choice), the result copied into out. Borrows self; writes
 * out; temporaries released. Errors: the copies', the CPU kernel's. */
static kd_status reduce_on_cpu(int kind, kd_tensor *self, kd_ints dim, bool keepdim, kd_tensor *out) {
  kd_tensor *c = NULL, *r = NULL;
  kd_dtype odt = kd_tensor_dtype(out);
  kd_status st = kd_tensor_to_device(self, kd_device_cpu(), &c);
  if (!st) {
    switch (kind) {
    case R_SUM: st = kd_sum_dim_IntList(c, dim, keepdim, &odt, &r); break;
    case R_MEAN: st = kd_mean_dim(c, dim, keepdim, &odt, &r); break;
    case R_PROD: st = kd_prod_dim_int(c, dim.data[0], keepdim, &odt, &r); break;
    case R_MAX: st = kd_amax(c, dim, keepdim, &r); break;
    case R_MIN: st = kd_amin(c, dim, keepdim, &r); break;
    case R_ARGMAX: st = kd_argmax(c, dim.size > 0 ? dim.data : NULL, keepdim, &r); break;
    default: st = kd_argmin(c, dim.size > 0 ? dim.data : NULL, keepdim, &r); break;
    }
  }
  if (!st) st = kdcl_write_from_cpu(out, r, op_names[kind]);
  kd_tensor_release(c);
  kd_tensor_release(r);
  return st;
}

/* One impl: on the device, or the CPU's for dtypes the device lacks. */
static kd_status reduce_dims(int kind, kd_tensor *self, kd_ints dim, bool keepdim, kd_tensor *out) {
  const char *op = op_names[kind];
  kdcl_device *d = common_device(op, self, out);
  if (!d) return kd_last_status();
  if (!on_device(d, kind, kd_tensor_dtype(self), kd_tensor_dtype(out)))
    return reduce_on_cpu(kind, self, dim, keepdim, out);
  bool mask[KD_MAX_DIMS];
  kd_status st = reduce_mask(op, self, dim, mask);
  return st ? st : reduce_run(kind, self, mask, out);
}

/* ---- The LegacyMeta impls (opencl_functions.h). All borrow their tensors
 * and write `out` (resized by libkdops' meta: dtype and keepdim applied);
 * errors as reduce_run. ---------------------------------------------------- */

kd_status opencl_sum_out(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                         const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype; /* the meta applied it to out */
  return reduce_dims(R_SUM, self, dim, keepdim, out);
}

kd_status opencl_mean_out(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                          const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  kd_dtype dt = out ? kd_tensor_dtype(out) : KD_FLOAT32;
  /* an integral out (mean.out without dtype), as the CPU's mean_out_cpu */
  if (!kd_dtype_is_floating(dt) && !kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "mean: result type %s can't be cast to the desired output type %s",
                        kd_dtype_name(kd_get_default_dtype()), kd_dtype_name(dt));
  return reduce_dims(R_MEAN, self, dim, keepdim, out);
}

kd_status opencl_prod_out(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                          const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  kd_ints dims = {&dim, 1};
  return reduce_dims(R_PROD, self, dims, keepdim, out);
}

kd_status opencl_amax_out(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                          kd_tensor *out) {
  (void)s;
  return reduce_dims(R_MAX, self, dim, keepdim, out);
}

kd_status opencl_amin_out(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                          kd_tensor *out) {
  (void)s;
  return reduce_dims(R_MIN, self, dim, keepdim, out);
}

kd_status opencl_argmax_out(kdk_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim,
                            kd_tensor *out) {
  (void)s;
  kd_ints dims = {dim, dim ? 1 : -1};
  return reduce_dims(R_ARGMAX, self, dims, keepdim, out);
}

kd_status opencl_argmin_out(kdk_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim,
                            kd_tensor *out) {
  (void)s;
  kd_ints dims = {dim, dim ? 1 : -1};
  return reduce_dims(R_ARGMIN, self, dims, keepdim, out);
}

/* ---- softmax / log_softmax (Customized) ----------------------------------------- */

/* The backend's meta: the CPU's checks and messages (dim in range, no
 * half_to_float, a floating dtype) before the output is allocated, dim
 * wrapped once into pre->dim, the output of self's sizes and dtype. */
static kd_status softmax_meta(const char *op, bool is_log, kdk_structured *s, kd_tensor *self,
                              int64_t dim, bool half_to_float, int64_t *pre_dim) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL", op);
  int nd = kd_tensor_ndim(self);
  int64_t n = nd > 0 ? nd : 1;
  if (dim < -n || dim >= n)
    return kd_set_error(KD_ERANGE,
                        "%s: Dimension out of range (expected to be in range of [%lld, %lld], but "
                        "got %lld)",
                        op, (long long)-n, (long long)(n - 1), (long long)dim);
  if (half_to_float)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: softmax with half to float conversion is not supported on opencl", op);
  kd_dtype dt = kd_tensor_dtype(self);
  if (!kd_dtype_is_floating(dt))
    return kd_set_error(KD_ETYPE,
                        "%s: \"%s\" not implemented for '%s' (expected a floating point dtype; "
                        "softmax and log_softmax take dtype= to convert the input)",
                        op, is_log ? "log_softmax" : "softmax", kd_dtype_name(dt));
  *pre_dim = dim < 0 ? dim + n : dim;
  if (nd == 0) *pre_dim = 0;
  return kdk_structured_set_output(s, 0, nd, kd_tensor_sizes(self), NULL, dt);
}

kd_status opencl_meta_internal_softmax(kdk_structured *s, kd_tensor *self, int64_t dim,
                                       bool half_to_float, opencl_precompute_internal_softmax *pre) {
  return softmax_meta("_softmax", false, s, self, dim, half_to_float, &pre->dim);
}

kd_status opencl_meta_internal_log_softmax(kdk_structured *s, kd_tensor *self, int64_t dim,
                                           bool half_to_float,
                                           opencl_precompute_internal_log_softmax *pre) {
  return softmax_meta("_log_softmax", true, s, self, dim, half_to_float, &pre->dim);
}

/* Queues softmax (or log_softmax) of self's rows along dim (wrapped by the
 * meta) into out (self's sizes and dtype). Borrows both. Errors: KD_EINVAL
 * (two devices), KD_ETYPE (float16 / bfloat16 / float64 without fp64),
 * kdcl_fail. */
static kd_status softmax_run(const char *op, bool is_log, kd_tensor *self, int64_t dim,
                             kd_tensor *out) {
  kdcl_device *d = common_device(op, self, out);
  if (!d) return kd_last_status();
  kd_dtype dt = kd_tensor_dtype(self);
  if (dt != KD_FLOAT32 && !(dt == KD_FLOAT64 && kdcl_info(d)->fp64)) {
    /* float16, bfloat16 (or float64 without fp64): the CPU's kernel, as reduce_on_cpu */
    kd_tensor *c = NULL, *r = NULL;
    kd_status st = kd_tensor_to_device(self, kd_device_cpu(), &c);
    if (!st) st = is_log ? kd_internal_log_softmax(c, dim, false, &r) : kd_internal_softmax(c, dim, false, &r);
    if (!st) st = kdcl_write_from_cpu(out, r, op);
    kd_tensor_release(c);
    kd_tensor_release(r);
    return st;
  }
  const char *t = kdcl_ctype(d, dt, op);
  if (!t) return kd_last_status();
  int nd = kd_tensor_ndim(self);
  int64_t rows = 1;
  kdcl_geom g;
  memset(&g, 0, sizeof g);
  g.R = 1;
  for (int k = 0; k < nd; k++) {
    int64_t sz = kd_tensor_size(self, k);
    if (k == dim) {
      g.R = sz;
      g.rstride[0] = kd_tensor_stride(self, k);
      g.rstride[1] = kd_tensor_stride(out, k);
      continue;
    }
    rows *= sz;
    if (sz == 1) continue;
    g.ksize[g.nk] = sz;
    g.kstride[g.nk] = kd_tensor_stride(self, k);
    g.ostride[g.nk] = kd_tensor_stride(out, k);
    g.nk++;
  }
  g.flags = nd == 0;
  if (rows == 0 || g.R == 0) return KD_OK;
  cl_mem in_buf = NULL, out_buf = NULL;
  kd_status st = elem_buffer(self, &in_buf, &g.in_off, op);
  if (!st) st = elem_buffer(out, &out_buf, &g.out_off, op);
  if (st) return st;
  bool cpu = is_cpu(d);
  g.blocked = cpu;
  char opts[96];
  snprintf(opts, sizeof opts, "-DT=%s -DLOG=%d", t, is_log ? 1 : 0);
  kdcl_kernel *k = NULL;
  if (g.R <= KDCL_SHORT_ROW) { /* one work-item per row */
    if ((st = kdcl_kernel_get(d, kdcl_softmax_src, opts, "kd_softmax_each", &k, op))) return st;
    cl_long nrows = rows;
    size_t global = (size_t)rows;
    kdcl_arg a[] = {KDCL_ARG(in_buf), KDCL_ARG(out_buf), KDCL_ARG(g), KDCL_ARG(nrows)};
    return kdcl_launch(d, k, 4, a, 1, &global, NULL, op);
  }
  if ((st = kdcl_kernel_get(d, kdcl_softmax_src, opts, "kd_softmax", &k, op))) return st;
  size_t l = local_size(d, cpu, g.R), global = (size_t)rows * l;
  kdcl_arg a[] = {KDCL_ARG(in_buf), KDCL_ARG(out_buf), KDCL_ARG(g), {l * kd_tensor_itemsize(self), NULL}};
  return kdcl_launch(d, k, 4, a, 1, &global, &l, op);
}

kd_status opencl_softmax_out(kdk_structured *s, kd_tensor *self, int64_t dim, bool half_to_float,
                             kd_tensor *out) {
  (void)s, (void)half_to_float; /* refused by the meta */
  return softmax_run("_softmax", false, self, dim, out);
}

kd_status opencl_log_softmax_out(kdk_structured *s, kd_tensor *self, int64_t dim,
                                 bool half_to_float, kd_tensor *out) {
  (void)s, (void)half_to_float;
  return softmax_run("_log_softmax", true, self, dim, out);
}
