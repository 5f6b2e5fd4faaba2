/*
 * reduce.c: meta and impl functions of the reductions (sum, mean, prod,
 * amax, amin, argmax, argmin, max.dim, min.dim, max, min, all, any) and of
 * cumsum; the planning and threading of the reduction engine (reduce.h).
 * The typed loops are in ops/cpu/reduce.c.
 *
 * Dtype rules are PyTorch 1.13's: sum/prod of integral or bool inputs give
 * int64 unless dtype is given (an out variant without dtype takes out's
 * dtype); the input is converted to the output dtype before reducing (as
 * the CPU TensorIterator does); mean needs a floating or complex dtype;
 * argmax/argmin and the indices of max.dim/min.dim are int64; all/any give
 * bool, or uint8 for a uint8 input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native/reduce.h"
#include "parallel.h"
#include "structured.h"

#include "kdgen_all_native.h"
#include "kd/ops_all.h"

KD_DEFINE_STUB(reduce_rows_stub);
KD_DEFINE_STUB(reduce_part_stub);
KD_DEFINE_STUB(reduce_finish_stub);
KD_DEFINE_STUB(cumsum_stub);

/* ---- Dimensions ------------------------------------------------------------------ */

/* PyTorch's maybe_wrap_dim: a 0-dim tensor accepts -1 and 0. */
static kd_status wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
  int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n)
    return kd_set_error(KD_ERANGE,
                        "%s: Dimension out of range (expected to be in range of [%lld, %lld], but "
                        "got %lld)",
                        op, (long long)-n, (long long)(n - 1), (long long)dim);
  *out = (int)(dim < 0 ? dim + n : dim);
  return KD_OK;
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
  for (int64_t i = 0; i < dims.size; i++) {
    int d = 0;
    kd_status st = wrap_dim(op, dims.data[i], ndim, &d);
    if (st) return st;
    if (ndim == 0) continue;
    if (mask[d])
      return kd_set_error(KD_EINVAL, "%s: dim %d appears multiple times in the list of dims", op, d);
    mask[d] = true;
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

static kd_status set_reduced_output(kd_structured *s, int i, const kd_tensor *self,
                                    const bool *mask, bool keepdim, kd_dtype dtype) {
  int64_t sizes[KD_MAX_DIMS];
  int n = reduced_shape(self, mask, keepdim, sizes);
  return kd_structured_set_output(s, i, n, sizes, NULL, dtype);
}

/* PyTorch's zero_numel_check_dims for one dim. */
static kd_status nonzero_dim(const char *fn, const kd_tensor *self, int64_t dim) {
  if (kd_tensor_ndim(self) == 0) {
    if (dim != 0 && dim != -1)
      return kd_set_error(KD_ERANGE, "%s: Expected reduction dim -1 or 0 for scalar but got %lld",
                          fn, (long long)dim);
    return KD_OK;
  }
  int d = 0;
  kd_status st = wrap_dim(fn, dim, kd_tensor_ndim(self), &d);
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
static bool given_dtype(const kd_structured *s, int i, kd_dtype *dt) {
  if (s->mode != KD_STRUCTURED_OUT || !s->given[i]) return false;
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
static kd_dtype infer_dtype(const kd_structured *s, const kd_tensor *self, const kd_dtype *dtype) {
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

/* ---- The engine ------------------------------------------------------------------ */

static void build_plan(const kd_tensor *in, const bool *mask, bool keepdim, const kd_tensor *out0,
                       const kd_tensor *out1, kd__red_plan *p) {
  memset(p, 0, sizeof *p);
  int ndim = kd_tensor_ndim(in);
  const int64_t *sz = kd_tensor_sizes(in), *st = kd_tensor_strides(in);
  const int64_t *os0 = out0 ? kd_tensor_strides(out0) : NULL;
  const int64_t *os1 = out1 ? kd_tensor_strides(out1) : NULL;
  /* Output dimension of each kept input dimension. */
  int odim[KD_MAX_DIMS];
  for (int d = 0, j = 0; d < ndim; d++) {
    odim[d] = j;
    if (!mask[d] || keepdim) j++;
  }
  p->out_numel = 1;
  p->red_numel = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    if (mask[d]) p->red_numel *= sz[d];
    else p->out_numel *= sz[d];
    if (sz[d] == 1) continue;
    if (mask[d]) {
      if (p->nred > 0 && p->rstride[p->nred - 1] * p->rsize[p->nred - 1] == st[d]) {
        p->rsize[p->nred - 1] *= sz[d];
      } else {
        p->rsize[p->nred] = sz[d];
        p->rstride[p->nred] = st[d];
        p->nred++;
      }
    } else {
      int64_t a = st[d], b = os0 ? os0[odim[d]] : 0, c = os1 ? os1[odim[d]] : 0;
      int k = p->nouter - 1;
      if (k >= 0 && p->ostride_in[k] * p->osize[k] == a && p->ostride_out[0][k] * p->osize[k] == b &&
          p->ostride_out[1][k] * p->osize[k] == c) {
        p->osize[k] *= sz[d];
      } else {
        k = p->nouter++;
        p->osize[k] = sz[d];
        p->ostride_in[k] = a;
        p->ostride_out[0][k] = b;
        p->ostride_out[1][k] = c;
      }
    }
  }
  if (p->nred == 0) {
    p->nred = 1;
    p->rsize[0] = 1;
    p->rstride[0] = 0;
  }
}

typedef struct par_ctx {
  const kd__red_task *task;
  kd__reduce_part_fn *part;
  kd__red_acc *parts;
  int64_t nparts, chunk, rlen;
  kd__reduce_rows_fn *rows;
} par_ctx;

static void par_rows(void *ctx, int64_t b, int64_t e) {
  const par_ctx *c = ctx;
  c->rows(c->task, b, e);
}

/* Work items b..e: item k is part (k % nparts) of output position k / nparts. */
static void par_parts(void *ctx, int64_t b, int64_t e) {
  const par_ctx *c = ctx;
  for (int64_t k = b; k < e; k++) {
    int64_t pos = k / c->nparts, j = k % c->nparts;
    int64_t rb = j * c->chunk, re = rb + c->chunk < c->rlen ? rb + c->chunk : c->rlen;
    c->part(c->task, pos, rb, re, &c->parts[k]);
  }
}

/* Runs a reduction of `in` (already of the compute dtype) over mask into
 * out0 (values; may be NULL for argmax) and out1 (int64 indices or NULL).
 * Splits the outputs over threads, or, for few outputs of long rows, each
 * row into parts whose partials are combined in order. */
static kd_status run_reduction(const char *op, kd__red_kind kind, const kd_tensor *in,
                               const bool *mask, bool keepdim, kd_tensor *out0, kd_tensor *out1,
                               kd_dtype out_dtype) {
  kd__red_plan plan;
  build_plan(in, mask, keepdim, out0, out1, &plan);
  if (plan.out_numel == 0) return KD_OK;
  kd__red_task t = {kind, kd_tensor_dtype(in), out_dtype, &plan, kd_tensor_data(in),
                    {out0 ? kd_tensor_data(out0) : NULL, out1 ? kd_tensor_data(out1) : NULL}};
  kd__reduce_rows_fn *rows = KD_STUB(reduce_rows_stub);
  if (!rows) return kd_set_error(KD_EINTERNAL, "%s: no reduction kernel", op);
  par_ctx c = {&t, NULL, NULL, 0, 0, 0, rows};
  int64_t total = plan.out_numel * (plan.red_numel > 0 ? plan.red_numel : 1);
  int nthreads = kd__parallel_chunks(0, total, KD_GRAIN_SIZE);
  if (nthreads <= 1) {
    rows(&t, 0, plan.out_numel);
    return KD_OK;
  }
  if (plan.out_numel >= nthreads || plan.nred != 1) {
    int64_t grain = KD_GRAIN_SIZE / (plan.red_numel > 0 ? plan.red_numel : 1);
    kd__parallel_for(0, plan.out_numel, grain > 0 ? grain : 1, par_rows, &c);
    return KD_OK;
  }
  /* Few long rows: nthreads parts per row. */
  int64_t rlen = plan.rsize[0];
  int64_t nparts = nthreads;
  int64_t chunk = (rlen + nparts - 1) / nparts;
  chunk = (chunk + 63) / 64 * 64;
  nparts = (rlen + chunk - 1) / chunk;
  kd__red_acc local[64];
  kd__red_acc *parts = local;
  int64_t nitems = plan.out_numel * nparts;
  if (nitems > 64) {
    parts = malloc((size_t)nitems * sizeof *parts);
    if (!parts) return kd_set_error(KD_ENOMEM, "%s: out of memory", op);
  }
  c.part = KD_STUB(reduce_part_stub);
  c.parts = parts;
  c.nparts = nparts;
  c.chunk = chunk;
  c.rlen = rlen;
  kd__parallel_for(0, nitems, 1, par_parts, &c);
  kd__reduce_finish_fn *finish = KD_STUB(reduce_finish_stub);
  for (int64_t pos = 0; pos < plan.out_numel; pos++) finish(&t, pos, parts + pos * nparts, (int)nparts);
  if (parts != local) free(parts);
  return KD_OK;
}

static bool on_meta(const kd_tensor *t) { return kd_tensor_device(t).type == KD_DEVICE_META; }

static kd_status check_cpu(const char *op, const kd_tensor *t) {
  kd_device d = kd_tensor_device(t);
  if (d.type != KD_DEVICE_CPU)
    return kd_set_error(KD_EUNSUPPORTED, "%s: the cpu kernel got a tensor on device '%s'", op,
                        kd_device_type_name(d.type));
  return KD_OK;
}

/* `self` converted to dtype (a new reference; self itself when it has it). */
static kd_status as_dtype(const kd_tensor *self, kd_dtype dtype, kd_tensor **out) {
  if (kd_tensor_dtype(self) == dtype) {
    kd_tensor_retain((kd_tensor *)self);
    *out = (kd_tensor *)self;
    return KD_OK;
  }
  return kd_tensor_to_dtype(self, dtype, out);
}

/* Converts self to the compute dtype and reduces. */
static kd_status reduce_into(const char *op, kd__red_kind kind, kd_tensor *self, const bool *mask,
                             bool keepdim, kd_dtype compute, kd_tensor *out0, kd_tensor *out1) {
  if (out0 && on_meta(out0)) return KD_OK;
  kd_status st = check_cpu(op, self);
  if (st) return st;
  kd_tensor *in = NULL;
  if ((st = as_dtype(self, compute, &in))) return st;
  kd_dtype od = out0 ? kd_tensor_dtype(out0) : compute;
  st = run_reduction(op, kind, in, mask, keepdim, out0, out1, od);
  kd_tensor_release(in);
  return st;
}

/* ---- sum ---------------------------------------------------------------------------- */

kd_status kd__meta_sum_dim_IntList(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                   const kd_dtype *dtype) {
  const char *op = "sum";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  bool mask[KD_MAX_DIMS];
  if ((st = dim_mask(op, dim, kd_tensor_ndim(self), mask))) return st;
  return set_reduced_output(s, 0, self, mask, keepdim, infer_dtype(s, self, dtype));
}

kd_status kd__native_sum_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                 const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  bool mask[KD_MAX_DIMS];
  kd_status st = dim_mask("sum", dim, kd_tensor_ndim(self), mask);
  if (st) return st;
  return reduce_into("sum", KD__RED_SUM, self, mask, keepdim, kd_tensor_dtype(out), out, NULL);
}

kd_status kd__native_sum(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  kd_ints none = {NULL, -1};
  return kd_sum_dim_IntList(self, none, false, dtype, out);
}

/* ---- mean --------------------------------------------------------------------------- */

kd_status kd__meta_mean_dim(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
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
  return set_reduced_output(s, 0, self, mask, keepdim, infer_dtype(s, self, dtype));
}

/* Divides every element of out (floating or complex; any strides) by n. */
static void divide_by(kd_tensor *out, double n) {
  kd__red_plan p;
  bool mask[KD_MAX_DIMS] = {false};
  build_plan(out, mask, true, out, NULL, &p);
  kd_dtype dt = kd_tensor_dtype(out);
  char *base = kd_tensor_data(out);
  int64_t es = (int64_t)kd_dtype_size(dt);
  for (int64_t pos = 0; pos < p.out_numel; pos++) {
    int64_t a, b, c;
    kd__red_offsets(&p, pos, &a, &b, &c);
    char *q = base + a * es;
    switch (dt) {
    case KD_FLOAT32: *(float *)q = (float)(*(float *)q / n); break;
    case KD_FLOAT64: *(double *)q /= n; break;
    case KD_FLOAT16:
      *(uint16_t *)q = kd_float_to_half((float)(kd_half_to_float(*(uint16_t *)q) / n));
      break;
    case KD_BFLOAT16:
      *(uint16_t *)q = kd_float_to_bfloat16((float)(kd_bfloat16_to_float(*(uint16_t *)q) / n));
      break;
    case KD_COMPLEX64:
      ((float *)q)[0] = (float)(((float *)q)[0] / n);
      ((float *)q)[1] = (float)(((float *)q)[1] / n);
      break;
    case KD_COMPLEX128:
      ((double *)q)[0] /= n;
      ((double *)q)[1] /= n;
      break;
    default: break;
    }
  }
}

kd_status kd__native_mean_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  const char *op = "mean";
  bool mask[KD_MAX_DIMS];
  kd_status st = dim_mask(op, dim, kd_tensor_ndim(self), mask);
  if (st) return st;
  if (on_meta(out)) return KD_OK;
  int64_t count = 1;
  for (int d = 0; d < kd_tensor_ndim(self); d++)
    if (mask[d]) count *= kd_tensor_sizes(self)[d];
  kd_dtype dt = kd_tensor_dtype(out);
  /* float16/bfloat16: sum in float32, divide, round once (as PyTorch). */
  if (dt == KD_FLOAT16 || dt == KD_BFLOAT16) {
    kd_tensor *tmp = NULL;
    int64_t sizes[KD_MAX_DIMS];
    int n = reduced_shape(self, mask, keepdim, sizes);
    if ((st = kd_tensor_empty(n, sizes, KD_FLOAT32, kd_device_cpu(), &tmp))) return st;
    st = reduce_into(op, KD__RED_SUM, self, mask, keepdim, KD_FLOAT32, tmp, NULL);
    if (!st) {
      divide_by(tmp, (double)count);
      st = kd_tensor_copy_(out, tmp);
    }
    kd_tensor_release(tmp);
    return st;
  }
  if ((st = reduce_into(op, KD__RED_SUM, self, mask, keepdim, dt, out, NULL))) return st;
  divide_by(out, (double)count);
  return KD_OK;
}

kd_status kd__native_mean(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  kd_ints none = {NULL, -1};
  return kd_mean_dim(self, none, false, dtype, out);
}

/* ---- prod --------------------------------------------------------------------------- */

kd_status kd__meta_prod_dim_int(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                const kd_dtype *dtype) {
  const char *op = "prod";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {&dim, 1};
  if ((st = dim_mask(op, dims, kd_tensor_ndim(self), mask))) return st;
  return set_reduced_output(s, 0, self, mask, keepdim, infer_dtype(s, self, dtype));
}

kd_status kd__native_prod_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {&dim, 1};
  kd_status st = dim_mask("prod", dims, kd_tensor_ndim(self), mask);
  if (st) return st;
  return reduce_into("prod", KD__RED_PROD, self, mask, keepdim, kd_tensor_dtype(out), out, NULL);
}

/* A 0-dim result of a full reduction, allocated on self's device. */
static kd_status full_result(const char *op, kd_tensor *self, kd_dtype dtype, kd_tensor **out) {
  kd_status st = check_self(op, self);
  if (st) return st;
  kd_device dev = kd_tensor_device(self);
  if (dev.type != KD_DEVICE_CPU && dev.type != KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED, "%s: device '%s' is not supported", op,
                        kd_device_type_name(dev.type));
  return kd_tensor_empty(0, NULL, dtype, dev, out);
}

kd_status kd__native_prod_all(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  const char *op = "prod";
  *out = NULL;
  kd_status st = check_dtype_arg(op, dtype);
  if (st) return st;
  kd_tensor *r = NULL;
  if (!self) return check_self(op, self);
  kd_dtype dt = promoted_dtype(self, dtype);
  if ((st = full_result(op, self, dt, &r))) return st;
  bool mask[KD_MAX_DIMS];
  kd_ints all = {NULL, -1};
  if (!(st = dim_mask(op, all, kd_tensor_ndim(self), mask)))
    st = reduce_into(op, KD__RED_PROD, self, mask, false, dt, r, NULL);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

/* ---- amax / amin ----------------------------------------------------------------------- */

static kd_status meta_amaxmin(const char *fn, kd_structured *s, kd_tensor *self, kd_ints dim,
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

kd_status kd__meta_amax(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim) {
  return meta_amaxmin("amax()", s, self, dim, keepdim);
}
kd_status kd__meta_amin(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim) {
  return meta_amaxmin("amin()", s, self, dim, keepdim);
}

kd_status kd__native_amax_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out) {
  (void)s;
  bool mask[KD_MAX_DIMS];
  kd_status st = dim_mask("amax", dim, kd_tensor_ndim(self), mask);
  if (st) return st;
  return reduce_into("amax", KD__RED_MAX, self, mask, keepdim, kd_tensor_dtype(self), out, NULL);
}
kd_status kd__native_amin_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out) {
  (void)s;
  bool mask[KD_MAX_DIMS];
  kd_status st = dim_mask("amin", dim, kd_tensor_ndim(self), mask);
  if (st) return st;
  return reduce_into("amin", KD__RED_MIN, self, mask, keepdim, kd_tensor_dtype(self), out, NULL);
}

/* ---- argmax / argmin -------------------------------------------------------------------- */

static kd_status meta_arg(const char *fn, kd_structured *s, kd_tensor *self, const int64_t *dim,
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

kd_status kd__meta_argmax(kd_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim) {
  return meta_arg("argmax()", s, self, dim, keepdim);
}
kd_status kd__meta_argmin(kd_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim) {
  return meta_arg("argmin()", s, self, dim, keepdim);
}

static kd_status impl_arg(const char *op, kd__red_kind kind, kd_tensor *self, const int64_t *dim,
                          bool keepdim, kd_tensor *out) {
  if (on_meta(out)) return KD_OK;
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {dim, dim ? 1 : -1};
  kd_status st = dim_mask(op, dims, kd_tensor_ndim(self), mask);
  if (st || (st = check_cpu(op, self))) return st;
  return run_reduction(op, kind, self, mask, keepdim, NULL, out, KD_INT64);
}

kd_status kd__native_argmax_out_cpu(kd_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out) {
  (void)s;
  return impl_arg("argmax", KD__RED_ARGMAX, self, dim, keepdim, out);
}
kd_status kd__native_argmin_out_cpu(kd_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out) {
  (void)s;
  return impl_arg("argmin", KD__RED_ARGMIN, self, dim, keepdim, out);
}

/* ---- max.dim / min.dim --------------------------------------------------------------------- */

static kd_status meta_dim_idx(const char *fn, kd_structured *s, kd_tensor *self, int64_t dim,
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
  if ((st = set_reduced_output(s, 0, self, mask, keepdim, dt))) return st;
  if ((st = set_reduced_output(s, 1, self, mask, keepdim, KD_INT64))) return st;
  *pre_dim = d;
  return KD_OK;
}

static kd_status impl_dim_idx(const char *op, kd__red_kind kind, kd_tensor *self, int64_t dim,
                              bool keepdim, kd_tensor *values, kd_tensor *indices) {
  if (on_meta(values)) return KD_OK;
  bool mask[KD_MAX_DIMS];
  kd_ints dims = {&dim, 1};
  kd_status st = dim_mask(op, dims, kd_tensor_ndim(self), mask);
  if (st || (st = check_cpu(op, self))) return st;
  return run_reduction(op, kind, self, mask, keepdim, values, indices, kd_tensor_dtype(values));
}

kd_status kd__meta_max_dim(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kd__precompute_max_dim *pre) {
  return meta_dim_idx("max()", s, self, dim, keepdim, &pre->dim);
}
kd_status kd__meta_min_dim(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kd__precompute_min_dim *pre) {
  return meta_dim_idx("min()", s, self, dim, keepdim, &pre->dim);
}

kd_status kd__native_max_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices) {
  (void)s;
  return impl_dim_idx("max", KD__RED_ARGMAX, self, dim, keepdim, values, indices);
}
kd_status kd__native_min_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices) {
  (void)s;
  return impl_dim_idx("min", KD__RED_ARGMIN, self, dim, keepdim, values, indices);
}

/* ---- max() / min() ------------------------------------------------------------------------ */

static kd_status full_maxmin(const char *fn, kd__red_kind kind, kd_tensor *self, kd_tensor **out) {
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
  kd_tensor *r = NULL;
  if ((st = full_result(fn, self, dt, &r))) return st;
  bool mask[KD_MAX_DIMS];
  kd_ints all = {NULL, -1};
  if (!(st = dim_mask(fn, all, kd_tensor_ndim(self), mask)))
    st = reduce_into(fn, kind, self, mask, false, dt, r, NULL);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

kd_status kd__native_max_all(kd_tensor *self, kd_tensor **out) {
  return full_maxmin("max()", KD__RED_MAX, self, out);
}
kd_status kd__native_min_all(kd_tensor *self, kd_tensor **out) {
  return full_maxmin("min()", KD__RED_MIN, self, out);
}

/* ---- all / any ------------------------------------------------------------------------------ */

static kd_status meta_allany(const char *fn, kd_structured *s, kd_tensor *self, kd_ints dim,
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

static kd_status impl_allany(const char *op, kd__red_kind kind, kd_tensor *self, kd_ints dim,
                             bool keepdim, kd_tensor *out) {
  if (on_meta(out)) return KD_OK;
  bool mask[KD_MAX_DIMS];
  kd_status st = dim_mask(op, dim, kd_tensor_ndim(self), mask);
  if (st || (st = check_cpu(op, self))) return st;
  return run_reduction(op, kind, self, mask, keepdim, out, NULL, kd_tensor_dtype(out));
}

/* all.dim / any.dim need the generated precomputed structs. */
kd_status kd__meta_all_dim(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kd__precompute_all_dim *pre) {
  kd_ints dims = {&dim, 1};
  return meta_allany("all", s, self, dims, keepdim, &pre->dim);
}
kd_status kd__meta_any_dim(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                           kd__precompute_any_dim *pre) {
  kd_ints dims = {&dim, 1};
  return meta_allany("any", s, self, dims, keepdim, &pre->dim);
}

kd_status kd__meta_all(kd_structured *s, kd_tensor *self) {
  kd_ints all = {NULL, -1};
  return meta_allany("all", s, self, all, false, NULL);
}
kd_status kd__meta_any(kd_structured *s, kd_tensor *self) {
  kd_ints all = {NULL, -1};
  return meta_allany("any", s, self, all, false, NULL);
}
kd_status kd__native_all_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out) {
  (void)s;
  kd_ints dims = {&dim, 1};
  return impl_allany("all", KD__RED_ALL, self, dims, keepdim, out);
}
kd_status kd__native_any_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out) {
  (void)s;
  kd_ints dims = {&dim, 1};
  return impl_allany("any", KD__RED_ANY, self, dims, keepdim, out);
}
kd_status kd__native_all_all_out_cpu(kd_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  kd_ints all = {NULL, -1};
  return impl_allany("all", KD__RED_ALL, self, all, false, out);
}
kd_status kd__native_any_all_out_cpu(kd_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  kd_ints all = {NULL, -1};
  return impl_allany("any", KD__RED_ANY, self, all, false, out);
}

/* ---- cumsum ------------------------------------------------------------------------------------ */

kd_status kd__meta_cumsum(kd_structured *s, kd_tensor *self, int64_t dim, const kd_dtype *dtype) {
  const char *op = "cumsum";
  kd_status st = check_self(op, self);
  if (st || (st = check_dtype_arg(op, dtype))) return st;
  int d = 0;
  if ((st = wrap_dim(op, dim, kd_tensor_ndim(self), &d))) return st;
  kd_dtype od;
  if (dtype) od = *dtype;
  else if (s->mode == KD_STRUCTURED_OUT || s->mode == KD_STRUCTURED_INPLACE) od = kd_tensor_dtype(s->given[0]);
  else od = promoted_dtype(self, NULL);
  return kd_structured_set_output(s, 0, kd_tensor_ndim(self), kd_tensor_sizes(self), NULL, od);
}

kd_status kd__native_cumsum_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim,
                                    const kd_dtype *dtype, kd_tensor *out) {
  (void)s, (void)dtype;
  const char *op = "cumsum";
  if (on_meta(out)) return KD_OK;
  kd_status st = check_cpu(op, self);
  if (st) return st;
  int ndim = kd_tensor_ndim(self), d = 0;
  if ((st = wrap_dim(op, dim, ndim, &d))) return st;
  if (kd_tensor_numel(self) == 0) return KD_OK;
  kd_dtype dt = kd_tensor_dtype(out);
  /* The input is converted (and copied: out may be self, as for cumsum_). */
  kd_tensor *in = NULL;
  if ((st = kd_tensor_to_dtype(self, dt, &in))) return st;
  if (ndim == 0) {
    st = kd_tensor_copy_(out, in);
    kd_tensor_release(in);
    return st;
  }
  bool mask[KD_MAX_DIMS] = {false};
  mask[d] = true;
  kd__red_plan plan;
  build_plan(in, mask, true, out, NULL, &plan);
  kd__cumsum_fn *f = KD_STUB(cumsum_stub);
  f(dt, &plan, kd_tensor_data(in), kd_tensor_data(out), kd_tensor_sizes(in)[d],
    kd_tensor_strides(in)[d], kd_tensor_strides(out)[d]);
  kd_tensor_release(in);
  return KD_OK;
}
