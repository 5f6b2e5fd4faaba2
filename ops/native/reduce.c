/*
 * reduce.c: meta and impl functions of the reductions (sum, mean, prod,
 * amax, amin, argmax, argmin, max.dim, min.dim, max, min, all, any) and of
 * cumsum. The loops are in ops/cpu/reduce.c (reduce_stub, cumsum_stub).
 *
 * As in PyTorch, meta checks the arguments and sets up the outputs (the
 * reduced shape, keepdim, the dtype), and impl builds a kdk_iter in
 * reduction mode over them (make_reduction: the outputs given, the input
 * converted to the computation dtype) whose rows the stub reduces, on
 * threads above the grain size (in stages when the reduced dims are several
 * runs of memory, below).
 *
 * Dtype rules are PyTorch 1.13's: sum/prod of integral or bool inputs give
 * int64 unless dtype is given (an out variant without dtype takes out's
 * dtype); the input is converted to the output dtype before reducing (as
 * the CPU TensorIterator does); mean needs a floating or complex dtype
 * (float16 and bfloat16 are summed and divided in float32, then rounded
 * once); argmax/argmin and the indices of max.dim/min.dim are int64;
 * all/any give bool, or uint8 for a uint8 input.
 */
#include <string.h>

#include "native/reduce.h"
#include "native/views.h"
#include "structured.h"

#include "kdgen_all_native.h"
#include "kd/ops_all.h"

KD_DEFINE_STUB(reduce_stub);
KD_DEFINE_STUB(cumsum_stub);

/* ---- Dimensions ------------------------------------------------------------------ */

/* PyTorch's maybe_wrap_dim (kdk__wrap_dim) as an int: a 0-dim tensor accepts
 * -1 and 0; KD_ERANGE "<op>: Dimension out of range ...". */
static kd_status wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
  int64_t d = 0;
  kd_status st = kdk__wrap_dim(op, KD_ERANGE, dim, ndim, &d);
  if (!st) *out = (int)d;
  return st;
}

/* The reduced dimensions as a mask over self's dimensions: None or an empty
 * list reduce every dimension (PyTorch's make_dim_mask). */
static kd_status dim_mask(const char *op, kd_ints dims, int ndim, bool *mask) {
  for (int d = 0; d < KD_MAX_DIMS; d++) mask[d] = false;
  if (dims.size <= 0) {
    for (int d = 0; d < ndim; d++) mask[d] = true;
    return KD_OK;
  }
  if (!dims.data) return kd_set_error(KD_EINVAL, "%s: NULL list of dims", op);
  bool scalar_seen = false; /* a 0-dim tensor: dim 0 (or -1) names nothing, once */
  for (int64_t i = 0; i < dims.size; i++) {
    int d = 0;
    kd_status st = wrap_dim(op, dims.data[i], ndim, &d);
    if (st) return st;
    bool *seen = ndim == 0 ? &scalar_seen : &mask[d];
    if (*seen)
      return kd_set_error(KD_EINVAL, "%s: dim %d appears multiple times in the list of dims", op, d);
    *seen = true;
  }
  return KD_OK;
}

/* The output shape of a reduction over `mask`. */
static int reduced_shape(const kd_tensor *self, const bool *mask, bool keepdim, int64_t *sizes) {
  int ndim = kd_tensor_ndim(self), n = 0;
  const int64_t *s = kd_tensor_sizes(self);
  for (int d = 0; d < ndim; d++) {
    if (!mask[d]) sizes[n++] = s[d];
    else if (keepdim) sizes[n++] = 1;
  }
  return n;
}

static kd_status set_reduced_output(kdk_structured *s, int i, const kd_tensor *self,
                                    const bool *mask, bool keepdim, kd_dtype dtype) {
  int64_t sizes[KD_MAX_DIMS];
  int n = reduced_shape(self, mask, keepdim, sizes);
  return kdk_structured_set_output(s, i, n, sizes, NULL, dtype);
}

/* An out= (out variants) that overlaps self: refused before it is resized,
 * with PyTorch's message for partial overlap, when it partly overlaps self
 * or is self's memory but not of the result's sizes (the resize would make
 * the output and the input different views of the same elements). An out=
 * that is exactly self's memory with the result's sizes (every reduced dim
 * of size 1) reads each element before writing it, and is accepted. max.dim
 * and min.dim do this as PyTorch's TensorIterator; sum, mean and prod (which
 * 1.13 does not check: undefined there) by decision. */
static kd_status check_out_vs_self(const kdk_structured *s, int nout, const kd_tensor *self,
                                   const bool *mask, bool keepdim) {
  if (s->mode != KDK_STRUCTURED_OUT) return KD_OK;
  int64_t sizes[KD_MAX_DIMS];
  int n = reduced_shape(self, mask, keepdim, sizes);
  for (int i = 0; i < nout; i++) {
    const kd_tensor *o = s->given[i];
    if (!o) continue;
    kdk__vw_overlap ov = kdk__vw_overlap_of(o, self);
    bool same_sizes = kd_tensor_ndim(o) == n &&
                      (n == 0 || !memcmp(kd_tensor_sizes(o), sizes, (size_t)n * sizeof(int64_t)));
    if (ov == KDK__VW_OVERLAP_PARTIAL || (ov == KDK__VW_OVERLAP_FULL && !same_sizes))
      return kd_set_error(KD_EINVAL,
                          "unsupported operation: some elements of the input tensor and the "
                          "written-to tensor refer to a single memory location. Please clone() "
                          "the tensor before performing the operation.");
  }
  return KD_OK;
}

/* PyTorch's zero_numel_check_dims for one dim (already checked to be in
 * range; a 0-dim tensor has an element). The message names dim as given. */
static kd_status nonzero_dim(const char *fn, const kd_tensor *self, int64_t dim) {
  int ndim = kd_tensor_ndim(self);
  if (ndim == 0) return KD_OK;
  int d = 0;
  kd_status st = wrap_dim(fn, dim, ndim, &d);
  if (st) return st;
  if (kd_tensor_sizes(self)[d] == 0)
    return kd_set_error(KD_ERANGE, "%s: Expected reduction dim %lld to have non-zero size.", fn,
                        (long long)dim);
  return KD_OK;
}

static kd_status check_self(const char *op, const kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL", op);
  return KD_OK;
}

/* The dtype of out when s runs an out variant. */
static bool given_dtype(const kdk_structured *s, int i, kd_dtype *dt) {
  if (s->mode != KDK_STRUCTURED_OUT || !s->given[i]) return false;
  *dt = kd_tensor_dtype(s->given[i]);
  return true;
}

/* get_dtype_from_self(self, dtype, promote_integers=true). */
static kd_dtype promoted_dtype(const kd_tensor *self, const kd_dtype *dtype) {
  if (dtype) return *dtype;
  kd_dtype dt = kd_tensor_dtype(self);
  return kd_dtype_is_integral(dt, true) ? KD_INT64 : dt;
}

/* infer_dtype_from_optional: dtype, else out's dtype (out variants), else
 * the promoted input dtype. */
static kd_dtype infer_dtype(const kdk_structured *s, const kd_tensor *self, const kd_dtype *dtype) {
  kd_dtype dt;
  if (dtype) return *dtype;
  if (given_dtype(s, 0, &dt)) return dt;
  return promoted_dtype(self, dtype);
}

static kd_status check_dtype_arg(const char *op, const kd_dtype *dtype) {
  if (dtype && !kd_dtype_valid(*dtype))
    return kd_set_error(KD_EINVAL, "%s: invalid dtype %d", op, (int)*dtype);
  return KD_OK;
}

/* ---- make_reduction ------------------------------------------------------------- */

static kd_status check_device(const char *op, const kd_tensor *t) {
  kd_device d = kd_tensor_device(t);
  if (d.type != KD_DEVICE_CPU && d.type != KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED, "%s: the cpu kernel got a tensor on device '%s'", op,
                        kd_device_type_name(d.type));
  return KD_OK;
}

/* PyTorch's make_reduction: builds `it` (initialised here; the caller
 * releases it, also on error) reducing self over the n dims (n <= 0: every
 * dim) into out0 and out1 (NULL: none; out0 NULL: a new tensor of dtype
 * new_dtype, allocated by the iterator). in_dtype: the dtype the loops read,
 * self converted to it (KD_DTYPE_UNDEFINED: self's). cast_out: out0 has
 * another dtype than in_dtype and the loops write a temporary of in_dtype,
 * copied into out0 by kdk_iter_finish (mean of float16). The meta function
 * checked the dims and set up the outputs already. */
static kd_status make_reduction(kdk_iter *it, const char *op, const kd_tensor *self,
                                const int64_t *dims, int n, bool keepdim, kd_tensor *out0,
                                kd_tensor *out1, kd_dtype in_dtype, kd_dtype new_dtype,
                                bool cast_out) {
  kdk_iter_init(it, NULL);
  kdk_iter_set_op_name(it, op);
  kdk_iter_add_output_dtype(it, out0, new_dtype);
  if (out1) kdk_iter_add_output(it, out1);
  kdk_iter_add_input(it, self);
  kdk_iter_check_all_same_dtype(it, false);
  kdk_iter_check_mem_overlap(it, false);
  if (in_dtype != KD_DTYPE_UNDEFINED) {
    kdk_iter_set_common_dtype(it, in_dtype);
    kdk_iter_promote_inputs_to_common_dtype(it, true);
  }
  kdk_iter_cast_common_dtype_to_outputs(it, cast_out);
  kdk_iter_set_reduction(it, n > 0 ? dims : NULL, n > 0 ? n : 0, keepdim);
  return kdk_iter_build(it);
}

/* Runs reduction `kind` over a built iterator and finishes it. */
static kd_status run_iter(const char *op, kdk_iter *it, kdk_reduce_kind kind) {
  (void)op; /* the iterator's name is the operator's */
  if (kdk_iter_is_meta(it)) return KD_OK; /* no loops run on meta */
  kdk_reduce_fn *fn = KD_ITER_STUB(reduce_stub, it);
  kd_status st = fn ? fn(it, kind) : KD_ENOKERNEL;
  return st ? st : kdk_iter_finish(it);
}

/* ---- Stages --------------------------------------------------------------------------
 * The iterator reduces rows that are one run of memory: the reduced dims,
 * in row-major order and size-1 dims left out, each step by the size of the
 * next inner one. An input whose reduced dims are not one run it copies
 * first. Sums over N, H and W of an NCHW tensor (H and W one run, N another)
 * or over every dim of a transposed matrix would copy the whole input, so
 * such reductions go in stages instead: the run nearest in memory (smallest
 * stride) is reduced into a temporary that keeps its dims (size 1), which
 * leaves one run fewer, until the last stage reduces the rest into the
 * outputs. Each stage reads its input once along rows. Only for kinds whose
 * result does not depend on the order of the elements beyond rounding (sum,
 * prod, max, min, all, any; mean as a mean of means of equal-length rows);
 * argmax/argmin index in row-major order and keep the iterator's copy. */

/* The number of runs the reduced dims (mask) of t form, by the iterator's
 * rule (kept dims do not matter, size-1 dims are left out); in_run: the
 * dims of the run with the smallest stride. */
static int reduced_runs(const kd_tensor *t, const bool *mask, bool *in_run) {
  int nd = kd_tensor_ndim(t), runs = 0, best_run = -1;
  const int64_t *sz = kd_tensor_sizes(t), *st = kd_tensor_strides(t);
  int run_of[KD_MAX_DIMS];
  int64_t expect = 0, best = 0;
  for (int d = nd - 1; d >= 0; d--) {
    run_of[d] = -1;
    if (!mask[d] || sz[d] == 1) continue;
    if (runs == 0 || st[d] != expect) { /* a run starts here, at its innermost dim */
      int64_t inner = st[d] < 0 ? -st[d] : st[d];
      if (best_run < 0 || inner < best) best = inner, best_run = runs;
      runs++;
    }
    run_of[d] = runs - 1;
    expect = st[d] * sz[d];
  }
  for (int d = 0; d < nd; d++) in_run[d] = best_run >= 0 && run_of[d] == best_run;
  return runs;
}

/* Kinds that may go in stages (see above). */
static bool stageable(kdk_reduce_kind kind) {
  return kind != KDK_REDUCE_ARGMAX && kind != KDK_REDUCE_ARGMIN;
}

/* reduce(self) over `dim` into out0 (and out1): make_reduction, in stages
 * when the reduced dims form several runs. */
static kd_status run_reduction(const char *op, kdk_reduce_kind kind, kd_tensor *self, kd_ints dim,
                               bool keepdim, kd_tensor *out0, kd_tensor *out1, kd_dtype in_dtype,
                               bool cast_out) {
  kd_status st = check_self(op, self);
  if (st || (st = check_device(op, self))) return st;
  int nd = kd_tensor_ndim(self), n = dim.size > 0 ? (int)dim.size : 0;
  bool mask[KD_MAX_DIMS], run[KD_MAX_DIMS];
  kd_tensor *t = self; /* what the next stage reads */
  kd_tensor_retain(t);
  if (stageable(kind) && kd_tensor_device(self).type == KD_DEVICE_CPU &&
      !(st = dim_mask(op, dim, nd, mask))) {
    /* temporaries: the loops' dtype (bool for all / any) */
    kd_dtype tmp_dtype = kind == KDK_REDUCE_ALL || kind == KDK_REDUCE_ANY ? KD_BOOL
                         : in_dtype != KD_DTYPE_UNDEFINED         ? in_dtype
                                                                  : kd_tensor_dtype(self);
    while (reduced_runs(t, mask, run) > 1) {
      int64_t dims[KD_MAX_DIMS];
      int k = 0;
      for (int d = 0; d < nd; d++)
        if (run[d]) dims[k++] = d;
      kdk_iter it;
      st = make_reduction(&it, op, t, dims, k, true, NULL, NULL, in_dtype, tmp_dtype, false);
      if (!st) st = run_iter(op, &it, kind);
      kd_tensor *next = st ? NULL : kdk_iter_output(&it, 0);
      if (next) kd_tensor_retain(next);
      kdk_iter_release(&it);
      if (st) break;
      kd_tensor_release(t);
      t = next;
    }
  }
  if (!st) {
    kdk_iter it;
    st = make_reduction(&it, op, t, dim.data, n, keepdim, out0, out1, in_dtype,
                        KD_DTYPE_UNDEFINED, cast_out);
    if (!st) st = run_iter(op, &it, kind);
    kdk_iter_release(&it);
  }
  kd_tensor_release(t);
  return st;
}

/* A full reduction into a new 0-dim tensor of dtype `dtype` (self converted
 * to it) on self's device (cpu, or meta: nothing is computed). */
static kd_status reduce_all_new(const char *op, kdk_reduce_kind kind, kd_tensor *self,
                                kd_dtype dtype, kd_tensor **out) {
  *out = NULL;
  kd_tensor *r = NULL;
  kd_ints all = {NULL, -1};
  kd_status st = check_device(op, self);
  if (!st) st = kd_tensor_empty(0, NULL, dtype, kd_tensor_device(self), &r);
  if (!st) st = run_reduction(op, kind, self, all, false, r, NULL, dtype, false);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

/* ---- sum ---------------------------------------------------------------------------- */

kd_status kdk_meta_sum_dim_IntList(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                   const kd_dtype *dtype) {
  const char *op = "sum";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  bool mask[KD_MAX_DIMS];
  if ((st = dim_mask(op, dim, kd_tensor_ndim(self), mask))) return st;
  if ((st = check_out_vs_self(s, 1, self, mask, keepdim))) return st;
  return set_reduced_output(s, 0, self, mask, keepdim, infer_dtype(s, self, dtype));
}

kd_status kdk_native_sum_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                 const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  return run_reduction("sum", KDK_REDUCE_SUM, self, dim, keepdim, out, NULL, kd_tensor_dtype(out),
                       false);
}

kd_status kdk_native_sum(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  kd_ints none = {NULL, -1};
  return kd_sum_dim_IntList(self, none, false, dtype, out);
}

/* ---- mean --------------------------------------------------------------------------- */

kd_status kdk_meta_mean_dim(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                            const kd_dtype *dtype) {
  const char *op = "mean";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  kd_dtype in_dtype = promoted_dtype(self, dtype);
  if (!kd_dtype_is_floating(in_dtype) && !kd_dtype_is_complex(in_dtype))
    return kd_set_error(KD_ETYPE,
                        "mean(): could not infer output dtype. %s dtype must be either a floating "
                        "point or complex dtype. Got: %s",
                        dtype ? "Optional" : "Input",
                        kd_dtype_name(dtype ? *dtype : kd_tensor_dtype(self)));
  bool mask[KD_MAX_DIMS];
  if ((st = dim_mask(op, dim, kd_tensor_ndim(self), mask))) return st;
  if ((st = check_out_vs_self(s, 1, self, mask, keepdim))) return st;
  return set_reduced_output(s, 0, self, mask, keepdim, infer_dtype(s, self, dtype));
}

kd_status kdk_native_mean_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  kd_dtype dt = kd_tensor_dtype(out);
  /* an integral out (mean.out without dtype): PyTorch's sum_out(...).div_ refuses it */
  if (!kd_dtype_is_floating(dt) && !kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "mean: result type %s can't be cast to the desired output type %s",
                        kd_dtype_name(kd_get_default_dtype()), kd_dtype_name(dt));
  /* float16/bfloat16: summed and divided in float32, rounded once (as PyTorch) */
  bool low = dt == KD_FLOAT16 || dt == KD_BFLOAT16;
  return run_reduction("mean", KDK_REDUCE_MEAN, self, dim, keepdim, out, NULL,
                       low ? KD_FLOAT32 : dt, low);
}

kd_status kdk_native_mean(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  kd_ints none = {NULL, -1};
  return kd_mean_dim(self, none, false, dtype, out);
}

/* ---- prod --------------------------------------------------------------------------- */

kd_status kdk_meta_prod_dim_int(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                const kd_dtype *dtype) {
  const char *op = "prod";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {&dim, 1};
  if ((st = dim_mask(op, dims, kd_tensor_ndim(self), mask))) return st;
  if ((st = check_out_vs_self(s, 1, self, mask, keepdim))) return st;
  return set_reduced_output(s, 0, self, mask, keepdim, infer_dtype(s, self, dtype));
}

kd_status kdk_native_prod_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  kd_ints dims = {&dim, 1};
  return run_reduction("prod", KDK_REDUCE_PROD, self, dims, keepdim, out, NULL,
                       kd_tensor_dtype(out), false);
}

kd_status kdk_native_prod_all(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  const char *op = "prod";
  *out = NULL;
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  return reduce_all_new(op, KDK_REDUCE_PROD, self, promoted_dtype(self, dtype), out);
}

/* ---- amax / amin ----------------------------------------------------------------------- */

static kd_status meta_amaxmin(const char *fn, kdk_structured *s, kd_tensor *self, kd_ints dim,
                              bool keepdim) {
  kd_status st = check_self(fn, self);
  if (st) return st;
  kd_dtype dt = kd_tensor_dtype(self), od;
  if (given_dtype(s, 0, &od) && od != dt)
    return kd_set_error(KD_ETYPE,
                        "%s: Expected the dtype for input and out to match, but got %s for input's "
                        "dtype and %s for out's dtype.",
                        fn, kd_dtype_name(dt), kd_dtype_name(od));
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "%s: does not support complex input (got %s)", fn,
                        kd_dtype_name(dt));
  bool mask[KD_MAX_DIMS];
  if ((st = dim_mask(fn, dim, kd_tensor_ndim(self), mask))) return st;
  if (kd_tensor_numel(self) == 0) {
    if (dim.size <= 0)
      return kd_set_error(KD_ERANGE,
                          "%s: Expected reduction dim to be specified for input.numel() == 0. "
                          "Specify the reduction dim with the 'dim' argument.",
                          fn);
    for (int64_t i = 0; i < dim.size; i++)
      if ((st = nonzero_dim(fn, self, dim.data[i]))) return st;
  }
  return set_reduced_output(s, 0, self, mask, keepdim, dt);
}

kd_status kdk_meta_amax(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim) {
  return meta_amaxmin("amax()", s, self, dim, keepdim);
}
kd_status kdk_meta_amin(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim) {
  return meta_amaxmin("amin()", s, self, dim, keepdim);
}

kd_status kdk_native_amax_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out) {
  (void)s;
  return run_reduction("amax", KDK_REDUCE_MAX, self, dim, keepdim, out, NULL, KD_DTYPE_UNDEFINED,
                       false);
}
kd_status kdk_native_amin_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out) {
  (void)s;
  return run_reduction("amin", KDK_REDUCE_MIN, self, dim, keepdim, out, NULL, KD_DTYPE_UNDEFINED,
                       false);
}

/* ---- argmax / argmin -------------------------------------------------------------------- */

static kd_status meta_arg(const char *fn, kdk_structured *s, kd_tensor *self, const int64_t *dim,
                          bool keepdim) {
  kd_status st = check_self(fn, self);
  if (st) return st;
  kd_dtype dt = kd_tensor_dtype(self);
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "%s: does not support complex input (got %s)", fn,
                        kd_dtype_name(dt));
  if (dim) {
    int d = 0;
    if ((st = wrap_dim(fn, *dim, kd_tensor_ndim(self), &d))) return st;
    if ((st = nonzero_dim(fn, self, d))) return st;
  } else if (kd_tensor_numel(self) == 0) {
    return kd_set_error(KD_ERANGE,
                        "%s: Expected reduction dim to be specified for input.numel() == 0.", fn);
  }
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {dim, dim ? 1 : -1};
  if ((st = dim_mask(fn, dims, kd_tensor_ndim(self), mask))) return st;
  return set_reduced_output(s, 0, self, mask, keepdim, KD_INT64);
}

kd_status kdk_meta_argmax(kdk_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim) {
  return meta_arg("argmax()", s, self, dim, keepdim);
}
kd_status kdk_meta_argmin(kdk_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim) {
  return meta_arg("argmin()", s, self, dim, keepdim);
}

kd_status kdk_native_argmax_out_cpu(kdk_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out) {
  (void)s;
  kd_ints dims = {dim, dim ? 1 : -1};
  return run_reduction("argmax", KDK_REDUCE_ARGMAX, self, dims, keepdim, out, NULL,
                       KD_DTYPE_UNDEFINED, false);
}
kd_status kdk_native_argmin_out_cpu(kdk_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out) {
  (void)s;
  kd_ints dims = {dim, dim ? 1 : -1};
  return run_reduction("argmin", KDK_REDUCE_ARGMIN, self, dims, keepdim, out, NULL,
                       KD_DTYPE_UNDEFINED, false);
}

/* ---- max.dim / min.dim --------------------------------------------------------------------- */

static kd_status meta_dim_idx(const char *fn, kdk_structured *s, kd_tensor *self, int64_t dim,
                              bool keepdim, int64_t *pre_dim) {
  kd_status st = check_self(fn, self);
  if (st) return st;
  int d = 0;
  if ((st = wrap_dim(fn, dim, kd_tensor_ndim(self), &d))) return st;
  if ((st = nonzero_dim(fn, self, d))) return st;
  kd_dtype dt = kd_tensor_dtype(self);
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "%s: does not support complex input (got %s)", fn,
                        kd_dtype_name(dt));
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {&dim, 1};
  if ((st = dim_mask(fn, dims, kd_tensor_ndim(self), mask))) return st;
  if ((st = check_out_vs_self(s, 2, self, mask, keepdim))) return st;
  if ((st = set_reduced_output(s, 0, self, mask, keepdim, dt))) return st;
  if ((st = set_reduced_output(s, 1, self, mask, keepdim, KD_INT64))) return st;
  *pre_dim = d;
  return KD_OK;
}

kd_status kdk_meta_max_dim(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kdk_precompute_max_dim *pre) {
  return meta_dim_idx("max()", s, self, dim, keepdim, &pre->dim);
}
kd_status kdk_meta_min_dim(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kdk_precompute_min_dim *pre) {
  return meta_dim_idx("min()", s, self, dim, keepdim, &pre->dim);
}

kd_status kdk_native_max_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices) {
  (void)s;
  kd_ints dims = {&dim, 1};
  return run_reduction("max", KDK_REDUCE_ARGMAX, self, dims, keepdim, values, indices,
                       KD_DTYPE_UNDEFINED, false);
}
kd_status kdk_native_min_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices) {
  (void)s;
  kd_ints dims = {&dim, 1};
  return run_reduction("min", KDK_REDUCE_ARGMIN, self, dims, keepdim, values, indices,
                       KD_DTYPE_UNDEFINED, false);
}

/* ---- max() / min() ------------------------------------------------------------------------ */

static kd_status full_maxmin(const char *fn, kdk_reduce_kind kind, kd_tensor *self, kd_tensor **out) {
  *out = NULL;
  kd_status st = check_self(fn, self);
  if (st) return st;
  if (kd_tensor_numel(self) == 0)
    return kd_set_error(KD_ERANGE,
                        "%s: Expected reduction dim to be specified for input.numel() == 0. "
                        "Specify the reduction dim with the 'dim' argument.",
                        fn);
  kd_dtype dt = kd_tensor_dtype(self);
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "%s: does not support complex input (got %s)", fn,
                        kd_dtype_name(dt));
  return reduce_all_new(fn, kind, self, dt, out);
}

kd_status kdk_native_max_all(kd_tensor *self, kd_tensor **out) {
  return full_maxmin("max()", KDK_REDUCE_MAX, self, out);
}
kd_status kdk_native_min_all(kd_tensor *self, kd_tensor **out) {
  return full_maxmin("min()", KDK_REDUCE_MIN, self, out);
}

/* ---- all / any ------------------------------------------------------------------------------ */

static kd_status meta_allany(const char *fn, kdk_structured *s, kd_tensor *self, kd_ints dim,
                             bool keepdim, int64_t *pre_dim) {
  kd_status st = check_self(fn, self);
  if (st) return st;
  kd_dtype od;
  if (given_dtype(s, 0, &od)) {
    if (od != KD_BOOL && od != KD_UINT8)
      return kd_set_error(KD_ETYPE, "%s only supports bool tensor for result, got: %s", fn,
                          kd_dtype_name(od));
  } else {
    od = kd_tensor_dtype(self) == KD_UINT8 ? KD_UINT8 : KD_BOOL;
  }
  bool mask[KD_MAX_DIMS];
  if ((st = dim_mask(fn, dim, kd_tensor_ndim(self), mask))) return st;
  if (pre_dim) {
    int d = 0;
    if ((st = wrap_dim(fn, dim.data[0], kd_tensor_ndim(self), &d))) return st;
    *pre_dim = d;
  }
  return set_reduced_output(s, 0, self, mask, keepdim, od);
}

/* all.dim / any.dim need the generated precomputed structs. */
kd_status kdk_meta_all_dim(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kdk_precompute_all_dim *pre) {
  kd_ints dims = {&dim, 1};
  return meta_allany("all", s, self, dims, keepdim, &pre->dim);
}
kd_status kdk_meta_any_dim(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kdk_precompute_any_dim *pre) {
  kd_ints dims = {&dim, 1};
  return meta_allany("any", s, self, dims, keepdim, &pre->dim);
}

kd_status kdk_meta_all(kdk_structured *s, kd_tensor *self) {
  kd_ints all = {NULL, -1};
  return meta_allany("all", s, self, all, false, NULL);
}
kd_status kdk_meta_any(kdk_structured *s, kd_tensor *self) {
  kd_ints all = {NULL, -1};
  return meta_allany("any", s, self, all, false, NULL);
}
kd_status kdk_native_all_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out) {
  (void)s;
  kd_ints dims = {&dim, 1};
  return run_reduction("all", KDK_REDUCE_ALL, self, dims, keepdim, out, NULL, KD_DTYPE_UNDEFINED,
                       false);
}
kd_status kdk_native_any_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out) {
  (void)s;
  kd_ints dims = {&dim, 1};
  return run_reduction("any", KDK_REDUCE_ANY, self, dims, keepdim, out, NULL, KD_DTYPE_UNDEFINED,
                       false);
}
kd_status kdk_native_all_all_out_cpu(kdk_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  kd_ints all = {NULL, -1};
  return run_reduction("all", KDK_REDUCE_ALL, self, all, false, out, NULL, KD_DTYPE_UNDEFINED, false);
}
kd_status kdk_native_any_all_out_cpu(kdk_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  kd_ints all = {NULL, -1};
  return run_reduction("any", KDK_REDUCE_ANY, self, all, false, out, NULL, KD_DTYPE_UNDEFINED, false);
}

/* ---- cumsum ------------------------------------------------------------------------------------ */

kd_status kdk_meta_cumsum(kdk_structured *s, kd_tensor *self, int64_t dim, const kd_dtype *dtype) {
  const char *op = "cumsum";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  int d = 0;
  if ((st = wrap_dim(op, dim, kd_tensor_ndim(self), &d))) return st;
  kd_dtype od;
  if (dtype) od = *dtype;
  else if (s->mode == KDK_STRUCTURED_OUT || s->mode == KDK_STRUCTURED_INPLACE) od = kd_tensor_dtype(s->given[0]);
  else od = promoted_dtype(self, NULL);
  return kdk_structured_set_output(s, 0, kd_tensor_ndim(self), kd_tensor_sizes(self), NULL, od);
}

/* An iterator whose row is `dim` (out and the input keep self's shape), as
 * PyTorch's cumulative kernels squash that dim out of a TensorIterator. The
 * input is self converted to out's dtype; it is a copy also when self shares
 * out's storage (cumsum_ writes self while reading it). */
kd_status kdk_native_cumsum_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim,
                                    const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  const char *op = "cumsum";
  kd_status st = check_self(op, self);
  if (st || (st = check_device(op, self))) return st;
  /* Nothing to sum (out already has self's empty shape); the iterator's rows
   * are the other dimensions, which alone can number 2^57 (found by
   * fuzz_boxed: [0, 2^57] along dim 0 looped over 2^57 empty rows). */
  if (kd_tensor_numel(self) == 0) return KD_OK;
  kd_dtype dt = kd_tensor_dtype(out);
  kd_tensor *in = NULL;
  if (kd_tensor_dtype(self) == dt && !kd_tensor_shares_storage(self, out)) {
    kd_tensor_retain(self);
    in = self;
  } else if ((st = kd_tensor_to_dtype(self, dt, &in))) {
    return st;
  }
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  kdk_iter_set_op_name(&it, op);
  kdk_iter_add_output(&it, out);
  kdk_iter_add_input(&it, in);
  kdk_iter_set_row_dim(&it, dim);
  st = kdk_iter_build(&it);
  if (!st && !kdk_iter_is_meta(&it)) {
    kdk_cumsum_fn *fn = KD_ITER_STUB(cumsum_stub, &it);
    st = fn ? fn(&it) : KD_ENOKERNEL;
  }
  kdk_iter_release(&it);
  kd_tensor_release(in);
  return st;
}
