/*
 * iter.c: kdk_iter, PyTorch's TensorIterator (iter.h).
 *
 * build follows TensorIteratorBase::build: operands, memory-overlap checks,
 * broadcast shape, output resize marks, dtypes (with casts), a fast set-up
 * for same-shape contiguous operands, else strides, a permutation from the
 * strides (reorder_dimensions), output allocation following it, rows for
 * reductions, and coalescing. Messages are formatted only on errors.
 */
#include "iter.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kd/tensor_head.h"

/* Only the owned operands need anything; the rest are forgotten with
 * ntensors (every reader stops at ntensors). */
void kdk_iter_release_owned(kdk_iter *it) {
  for (unsigned o = it->owned; o; o &= o - 1) {
    int k = __builtin_ctz(o);
    kd_tensor_release(it->tensors[k]);
    it->tensors[k] = NULL;
  }
  it->owned = 0;
}

/* ---- Configuration ----------------------------------------------------------- */

static void cfg_error(kdk_iter *it, kd_status st, const char *what) {
  if (it->cfg_status) return;
  it->cfg_status = st;
  it->cfg_msg = what;
}

static bool add_operand(kdk_iter *it, kd_tensor *t) {
  if (it->ntensors >= KDK_ITER_MAX_TENSORS) {
    cfg_error(it, KD_EINVAL, "too many operands for the tensor iterator (at most 8)");
    return false;
  }
  int k = it->ntensors++;
  it->tensors[k] = t;
  it->originals[k] = NULL;
  it->out_dtype[k] = KD_DTYPE_UNDEFINED;
  return true;
}

void kdk_iter_add_output_slow(kdk_iter *it, kd_tensor *out, kd_dtype dtype) {
  if (it->ntensors != it->noutputs) {
    cfg_error(it, KD_EINVAL, "tensor iterator: outputs must be added before inputs");
    return;
  }
  if (!add_operand(it, out)) return;
  it->out_dtype[it->noutputs++] = dtype;
}

void kdk_iter_add_input_slow(kdk_iter *it, const kd_tensor *in) {
  if (!in) {
    cfg_error(it, KD_EINVAL, "tensor iterator: an input is NULL");
    return;
  }
  add_operand(it, (kd_tensor *)in);
}

void kdk_iter_add_owned_input(kdk_iter *it, kd_tensor *in) {
  if (!in) {
    cfg_error(it, KD_EINVAL, "tensor iterator: an input is NULL");
    return;
  }
  if (add_operand(it, in))
    it->owned |= 1u << (it->ntensors - 1);
  else
    kd_tensor_release(in);
}

void kdk_iter_declare_static_shape(kdk_iter *it, int ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > KD_MAX_DIMS) {
    cfg_error(it, KD_EINVAL, "tensor iterator: static shape with a bad number of dimensions");
    return;
  }
  it->static_ndim = ndim;
  for (int d = 0; d < ndim; d++) it->static_shape[d] = shape[d];
}

void kdk_iter_set_reduction(kdk_iter *it, const int64_t *dims, int n, bool keepdim) {
  if (n > KD_MAX_DIMS) {
    cfg_error(it, KD_EINVAL, "tensor iterator: too many reduction dims");
    return;
  }
  it->flags |= KDK_ITER_F_REDUCTION;
  it->flags &= ~(unsigned)KDK_ITER_F_ROW_DIM;
  kdk_iter_set_flag(it, KDK_ITER_F_KEEPDIM, keepdim);
  it->nreduce = dims && n > 0 ? n : 0;
  for (int i = 0; i < it->nreduce; i++) it->reduce_dims[i] = dims[i];
}

void kdk_iter_set_row_dim(kdk_iter *it, int64_t dim) {
  it->flags |= KDK_ITER_F_ROW_DIM;
  it->flags &= ~(unsigned)(KDK_ITER_F_REDUCTION | KDK_ITER_F_KEEPDIM);
  it->nreduce = 1;
  it->reduce_dims[0] = dim;
}

/* ---- Helpers ----------------------------------------------------------------- */

static bool same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int d = 0; d < na; d++)
    if (a[d] != b[d]) return false;
  return true;
}

kd_status kdk__wrap_dim(const char *op, kd_status code, int64_t dim, int64_t ndim, int64_t *out) {
  int64_t n = ndim > 0 ? ndim : 1; /* a scalar wraps as a 1-dim tensor (wrap_scalar) */
  if (dim < -n || dim >= n)
    return kd_set_error(code,
                        "%s%sDimension out of range (expected to be in range of [%lld, %lld], but "
                        "got %lld)",
                        op ? op : "", op ? ": " : "", (long long)-n, (long long)(n - 1),
                        (long long)dim);
  *out = dim < 0 ? dim + n : dim;
  return KD_OK;
}

const char *kdk__fmt_ints(char *buf, size_t cap, const int64_t *v, int64_t n) {
  if (cap == 0) return buf;
  buf[0] = '\0';
  int w = snprintf(buf, cap, "[");
  size_t len = w > 0 ? (size_t)w : 0;
  for (int64_t i = 0; i < n && len < cap; i++) {
    w = snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (w < 0) break;
    len += (size_t)w;
  }
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

kd_status kdk__error_with_op(const char *op, kd_status st) {
  const char *msg = kd_last_error();
  size_t n = strlen(op);
  if (strncmp(msg, op, n) == 0 && msg[n] == ':') return st;
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", msg);
  return kd_set_error(st, "%s: %s", op, copy);
}

bool kdk__can_cast(kd_dtype from, kd_dtype to) {
  if (kd_dtype_is_complex(from) && !kd_dtype_is_complex(to)) return false;
  if (kd_dtype_is_floating(from) && kd_dtype_is_integral(to, false)) return false;
  if (from != KD_BOOL && to == KD_BOOL) return false;
  return true;
}

/* Non-overlapping and dense: some permutation of the dims is contiguous. */
static bool non_overlapping_dense(const kd_tensor *t) {
  int nd = kd_tensor_head_of(t)->ndim;
  const int64_t *sz = kd_tensor_head_of(t)->sizes, *st = kd_tensor_head_of(t)->strides;
  int order[KD_MAX_DIMS], n = 0;
  for (int d = 0; d < nd; d++) {
    if (sz[d] == 1) continue;
    int i = n++;
    while (i > 0 && st[order[i - 1]] > st[d]) {
      order[i] = order[i - 1];
      i--;
    }
    order[i] = d;
  }
  int64_t need = 1;
  for (int i = 0; i < n; i++) {
    if (st[order[i]] != need) return false;
    need *= sz[order[i]];
  }
  return true;
}

static kd_status check_overlap(const kdk_iter *it, const kd_tensor *out, const kd_tensor *const *ins,
                               int nin) {
  int nd = kd_tensor_head_of(out)->ndim;
  const int64_t *sz = kd_tensor_head_of(out)->sizes, *st = kd_tensor_head_of(out)->strides;
  int64_t on = kd_tensor_head_of(out)->numel;
  /* as PyTorch's has_internal_overlap: a tensor without elements is
   * contiguous, so an expanded [3, 0] never overlaps */
  for (int d = 0; d < nd && on > 0; d++)
    if (sz[d] > 1 && st[d] == 0)
      return kd_set_error(KD_EINVAL,
                          "%s: unsupported operation: more than one element of the written-to "
                          "tensor refers to a single memory location. Please clone() the tensor "
                          "before performing the operation.",
                          it->op);
  if (on == 0) return KD_OK;
  for (int j = 0; j < nin; j++) {
    const kd_tensor *in = ins[j];
    if (in == out ||
        !(in && out && kd_tensor_head_of(in)->storage == kd_tensor_head_of(out)->storage))
      continue;
    int64_t inn = kd_tensor_head_of(in)->numel;
    if (inn == 0 || !non_overlapping_dense(in) || !non_overlapping_dense(out)) continue;
    int64_t a0 = kd_tensor_head_of(out)->offset * (int64_t)kd_tensor_head_of(out)->itemsize;
    int64_t a1 = a0 + on * (int64_t)kd_tensor_head_of(out)->itemsize;
    int64_t b0 = kd_tensor_head_of(in)->offset * (int64_t)kd_tensor_head_of(in)->itemsize;
    int64_t b1 = b0 + inn * (int64_t)kd_tensor_head_of(in)->itemsize;
    bool partial;
    if (a0 == b0 && a1 == b1) {
      int ind = kd_tensor_head_of(in)->ndim;
      partial = !same_shape(nd, st, ind, kd_tensor_head_of(in)->strides);
    } else {
      partial = a0 < b1 && b0 < a1;
    }
    if (partial)
      return kd_set_error(KD_EINVAL,
                          "%s: unsupported operation: some elements of the input tensor and the "
                          "written-to tensor refer to a single memory location. Please clone() "
                          "the tensor before performing the operation.",
                          it->op);
  }
  return KD_OK;
}

/* shape (nd, in/out) = broadcast(shape, sizes); PyTorch's infer_size. */
static kd_status broadcast_into(const kdk_iter *it, int *nd, int64_t *shape, int nb,
                                const int64_t *b) {
  int n = *nd > nb ? *nd : nb;
  int64_t res[KD_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int off = n - 1 - i;
    int da = *nd - 1 - off, db = nb - 1 - off;
    int64_t sa = da >= 0 ? shape[da] : 1, sb = db >= 0 ? b[db] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return kd_set_error(KD_EINVAL,
                          "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) "
                          "at non-singleton dimension %d",
                          it->op, (long long)sa, (long long)sb, i);
    res[i] = sa == 1 ? sb : sa;
  }
  for (int i = 0; i < n; i++) shape[i] = res[i];
  *nd = n;
  return KD_OK;
}

/* Byte strides of t broadcast to (nd, shape), aligned to the right. */
static void broadcast_strides(const kd_tensor *t, int nd, const int64_t *shape, int64_t *out) {
  int tn = kd_tensor_head_of(t)->ndim;
  const int64_t *sz = kd_tensor_head_of(t)->sizes, *st = kd_tensor_head_of(t)->strides;
  int64_t isz = (int64_t)kd_tensor_head_of(t)->itemsize;
  int off = nd - tn;
  for (int d = 0; d < off; d++) out[d] = 0;
  for (int d = 0; d < tn; d++)
    out[off + d] = (sz[d] == 1 && shape[off + d] != 1) ? 0 : st[d] * isz;
}

/* ---- Build ------------------------------------------------------------------- */

typedef struct opinfo {
  const kd_tensor *t; /* for shapes, dtypes, strides: the operand or the given output */
  bool structured;    /* output k is structured output k */
  bool will_resize;   /* output gets new geometry */
  bool read_write;    /* output is also an input */
  bool needs_temp;    /* output written through a temporary of common_dtype */
  bool have_strides;  /* ostr filled */
} opinfo;

typedef struct build_state {
  opinfo info[KDK_ITER_MAX_TENSORS];
  int64_t ostr[KDK_ITER_MAX_TENSORS][KD_MAX_DIMS]; /* bytes, in dim order of the full shape */
  int perm[KD_MAX_DIMS];                          /* iteration dim i <- full dim perm[i] */
  bool reduced[KD_MAX_DIMS];                      /* row / reduced dims of the full shape */
  int out_ndim;
  int64_t out_shape[KD_MAX_DIMS];
  kd_device device;
} build_state;

static kd_status resolve_reduce_dims(kdk_iter *it, build_state *b) {
  int nd = it->full_ndim;
  for (int d = 0; d < nd; d++) b->reduced[d] = false;
  bool row_dim = (it->flags & KDK_ITER_F_ROW_DIM) != 0;
  if (it->nreduce == 0) {
    for (int d = 0; d < nd; d++) b->reduced[d] = true;
    return KD_OK;
  }
  for (int i = 0; i < it->nreduce; i++) {
    int64_t d = 0;
    kd_status st = kdk__wrap_dim(it->op, KD_EINVAL, it->reduce_dims[i], nd, &d);
    if (st) return st;
    if (nd == 0) continue; /* a 0-dim tensor: dim 0 / -1 names nothing to reduce */
    if (b->reduced[d] && !row_dim)
      return kd_set_error(KD_EINVAL, "%s: dim %lld appears multiple times in the list of dims",
                          it->op, (long long)d);
    b->reduced[d] = true;
  }
  return KD_OK;
}

/* t converted to `dtype` as PyTorch's Tensor.to(dtype) lays it out
 * (_to_copy with preserve_format): a non-overlapping and dense tensor keeps
 * its strides; another one gets the dense strides of its permutation
 * (infer_dense_strides: dims ordered by stride, stride-0 dims left in place,
 * ties kept in order). The converted input then leads the output's layout as
 * the original would have: a permuted int64 input of a float32 add gives a
 * permuted result. Contiguous (and empty) inputs take kd_tensor_to_dtype. */
static kd_status convert_input(const kd_tensor *t, kd_dtype dtype, kd_tensor **out) {
  int nd = kd_tensor_head_of(t)->ndim;
  const int64_t *sz = kd_tensor_head_of(t)->sizes, *st = kd_tensor_head_of(t)->strides;
  int64_t strides[KD_MAX_DIMS];
  if (nd < 2 || kd_tensor_head_of(t)->contiguous || kd_tensor_head_of(t)->numel == 0)
    return kd_tensor_to_dtype(t, dtype, out);
  if (non_overlapping_dense(t)) {
    for (int d = 0; d < nd; d++) strides[d] = st[d];
  } else {
    int perm[KD_MAX_DIMS]; /* perm[0]: the innermost dim */
    for (int i = 0; i < nd; i++) perm[i] = nd - 1 - i;
    for (int i = 1; i < nd; i++) {
      int dim1 = i;
      for (int dim0 = i - 1; dim0 >= 0; dim0--) {
        int64_t s0 = st[perm[dim0]], s1 = st[perm[dim1]];
        if (s0 == 0 || s1 == 0 || s0 == s1) continue;
        if (s0 < s1) break;
        int tmp = perm[dim0];
        perm[dim0] = perm[dim1];
        perm[dim1] = tmp;
        dim1 = dim0;
      }
    }
    int64_t next = 1;
    for (int i = 0; i < nd; i++) {
      strides[perm[i]] = next;
      if (sz[perm[i]] > 1) next *= sz[perm[i]];
    }
  }
  kd_tensor *c = NULL;
  kd_status r =
      kd_tensor_empty_strided(nd, sz, strides, dtype, kd_tensor_head_of(t)->storage->device, &c);
  if (!r) r = kd_tensor_copy_(c, t);
  if (r) {
    kd_tensor_release(c);
    return r;
  }
  *out = c;
  return KD_OK;
}

/* Common dtype and output dtypes (compute_types). */
static kd_status compute_types(kdk_iter *it, build_state *b, bool all_scalars) {
  int nout = it->noutputs, nt = it->ntensors;
  kd_dtype common = KD_DTYPE_UNDEFINED;
  bool different = false;
  for (int k = nout; k < nt; k++) {
    kd_dtype d = kd_tensor_head_of(it->tensors[k])->dtype;
    if (common == KD_DTYPE_UNDEFINED)
      common = d;
    else if (d != common)
      different = true;
  }
  unsigned f = it->flags;
  if (f & KDK_ITER_F_CHECK_SAME_DTYPE) {
    bool bad = different;
    for (int k = 0; k < nout && !bad; k++)
      if (b->info[k].t && common != KD_DTYPE_UNDEFINED &&
          kd_tensor_head_of(b->info[k].t)->dtype != common)
        bad = true;
    if (bad) {
      for (int k = 0; k < nt; k++) {
        const kd_tensor *t = b->info[k].t;
        if (t && kd_tensor_head_of(t)->dtype != common)
          return kd_set_error(KD_ETYPE, "%s: Found dtype %s but expected %s", it->op,
                              kd_dtype_name(kd_tensor_head_of(t)->dtype), kd_dtype_name(common));
      }
    }
  }
  if (it->forced_common != KD_DTYPE_UNDEFINED) {
    common = it->forced_common;
  } else if ((f & KDK_ITER_F_PROMOTE_INPUTS) && (different || all_scalars) && nt > nout) {
    kd_result_type_state rs;
    kd_result_type_init(&rs);
    for (int k = nout; k < nt; k++) {
      const kd_tensor *t = it->tensors[k];
      if ((t && kd_tensor_head_of(t)->wrapped_number))
        kd_result_type_add_scalar(&rs, kd_tensor_head_of(t)->dtype);
      else
        kd_result_type_add_tensor(&rs, kd_tensor_head_of(t)->dtype, kd_tensor_head_of(t)->ndim);
    }
    common = kd_result_type_finish(&rs);
  }
  if ((f & KDK_ITER_F_INT_TO_FLOAT) && common != KD_DTYPE_UNDEFINED &&
      kd_dtype_is_integral(common, true))
    common = kd_get_default_dtype();
  it->common_dtype = common;

  /* outputs */
  for (int k = 0; k < nout; k++) {
    opinfo *o = &b->info[k];
    if (o->t) {
      kd_dtype od = kd_tensor_head_of(o->t)->dtype;
      it->dtypes[k] = od;
      if (common == KD_DTYPE_UNDEFINED || od == common) continue;
      if ((f & KDK_ITER_F_SAFE_CAST) && !kdk__can_cast(common, od))
        return kd_set_error(KD_ETYPE,
                            "%s: result type %s can't be cast to the desired output type %s",
                            it->op, kd_dtype_name(common), kd_dtype_name(od));
      if ((f & KDK_ITER_F_CAST_OUTPUTS) && !it->is_meta) o->needs_temp = true;
    } else {
      kd_dtype od = it->out_dtype[k] != KD_DTYPE_UNDEFINED ? it->out_dtype[k]
                    : it->static_dtype != KD_DTYPE_UNDEFINED ? it->static_dtype
                                                              : common;
      if (od == KD_DTYPE_UNDEFINED)
        return kd_set_error(KD_EINVAL,
                            "%s: cannot infer the dtype of output %d: no inputs and no static "
                            "dtype",
                            it->op, k);
      it->dtypes[k] = od;
    }
  }
  /* inputs */
  for (int k = nout; k < nt; k++) {
    kd_tensor *t = it->tensors[k];
    kd_dtype d = kd_tensor_head_of(t)->dtype;
    if ((f & KDK_ITER_F_PROMOTE_INPUTS) && d != common && !it->is_meta) {
      kd_tensor *c = NULL;
      kd_status st = convert_input(t, common, &c);
      if (st) return kdk__error_with_op(it->op, st);
      if (it->owned & (1u << k)) kd_tensor_release(t);
      it->tensors[k] = c;
      it->owned |= 1u << k;
      b->info[k].t = c;
      d = common;
    }
    it->dtypes[k] = d;
  }
  return KD_OK;
}

/* PyTorch's reorder_dimensions: b->perm over the full dims. */
static void reorder(const kdk_iter *it, build_state *b) {
  int nd = it->full_ndim;
  for (int i = 0; i < nd; i++) b->perm[i] = nd - 1 - i;
  if (nd <= 1 || (it->flags & KDK_ITER_F_LINEAR)) return;
  int nt = it->ntensors;
  for (int i = 1; i < nd; i++) {
    int dim1 = i;
    for (int dim0 = i - 1; dim0 >= 0; dim0--) {
      int d0 = b->perm[dim0], d1 = b->perm[dim1];
      int cmp = 0;
      for (int k = 0; k < nt; k++) {
        if (!b->info[k].have_strides) continue;
        int64_t s0 = b->ostr[k][d0], s1 = b->ostr[k][d1];
        if (s0 == 0 || s1 == 0) continue;
        if (s0 < s1) {
          cmp = -1;
          break;
        }
        if (s0 > s1) {
          cmp = 1;
          break;
        }
        if (it->full_shape[d0] > it->full_shape[d1]) {
          cmp = 1;
          break;
        }
      }
      if (cmp > 0) {
        b->perm[dim0] = d1;
        b->perm[dim1] = d0;
        dim1 = dim0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
}

/* Element strides for a new output of the full shape following perm; false
 * when that is plain row-major (then NULL strides are passed). */
static bool layout_strides(const kdk_iter *it, const build_state *b, int64_t *strides) {
  int nd = it->full_ndim;
  int64_t next = 1;
  bool rowmajor = true;
  for (int i = 0; i < nd; i++) {
    int d = b->perm[i];
    if (d != nd - 1 - i) rowmajor = false;
    strides[d] = next;
    /* Strides that do not fit (a zero-size shape can have them): row-major,
     * whose allocation reports the overflow. */
    if (__builtin_mul_overflow(next, it->full_shape[d] > 1 ? it->full_shape[d] : 1, &next))
      return false;
  }
  return !rowmajor;
}

/* Output k gets its tensor: structured set_output, resize, or allocation;
 * then a temporary when it needs one. */
static kd_status set_up_output(kdk_iter *it, build_state *b, int k, int ndim, const int64_t *sizes,
                               const int64_t *strides, const int64_t *temp_strides) {
  opinfo *o = &b->info[k];
  kd_dtype dt = o->t ? kd_tensor_head_of(o->t)->dtype : it->dtypes[k];
  kd_tensor *t;
  kd_status st;
  if (o->structured) {
    st = kdk_structured_set_output(it->s, k, ndim, sizes, o->will_resize || !o->t ? strides : NULL,
                                  dt);
    if (st) return st;
    t = kdk_structured_output(it->s, k);
  } else if (it->tensors[k]) {
    t = it->tensors[k];
    if (o->will_resize) {
      st = kd_tensor_resize_(t, ndim, sizes, strides);
      if (st) return kdk__error_with_op(it->op, st);
    }
  } else {
    st = strides ? kd_tensor_empty_strided(ndim, sizes, strides, dt, b->device, &t)
                 : kd_tensor_empty(ndim, sizes, dt, b->device, &t);
    if (st) return kdk__error_with_op(it->op, st);
    it->owned |= 1u << k;
  }
  it->tensors[k] = t;
  if (o->needs_temp) {
    kd_tensor *tmp = NULL;
    st = temp_strides ? kd_tensor_empty_strided(ndim, sizes, temp_strides, it->common_dtype,
                                                kd_tensor_head_of(t)->storage->device, &tmp)
                      : kd_tensor_empty(ndim, sizes, it->common_dtype,
                                        kd_tensor_head_of(t)->storage->device, &tmp);
    if (st) return kdk__error_with_op(it->op, st);
    it->originals[k] = t;
    it->temps |= 1u << k;
    it->tensors[k] = tmp;
    it->owned |= 1u << k;
    it->dtypes[k] = it->common_dtype;
  }
  return KD_OK;
}

/* A copy of input k whose row dims are innermost and row-major. */
static kd_status copy_for_rows(kdk_iter *it, build_state *b, int k) {
  int nd = it->full_ndim;
  int64_t strides[KD_MAX_DIMS], next = 1;
  for (int pass = 0; pass < 2; pass++) /* row dims first (innermost), then the others */
    for (int d = nd - 1; d >= 0; d--) {
      if (b->reduced[d] != (pass == 0)) continue;
      strides[d] = next;
      next *= it->full_shape[d] > 1 ? it->full_shape[d] : 1;
    }
  kd_tensor *c = NULL;
  kd_tensor *src = it->tensors[k];
  kd_status st = kd_tensor_empty_strided(nd, it->full_shape, strides, kd_tensor_head_of(src)->dtype,
                                         kd_tensor_head_of(src)->storage->device, &c);
  if (!st) st = kd_tensor_copy_(c, src);
  if (st) {
    kd_tensor_release(c);
    return kdk__error_with_op(it->op, st);
  }
  if (it->owned & (1u << k)) kd_tensor_release(src);
  it->tensors[k] = c;
  it->owned |= 1u << k;
  b->info[k].t = c;
  broadcast_strides(c, nd, it->full_shape, b->ostr[k]);
  return KD_OK;
}

/* Row length and per-operand row strides; copies inputs whose row dims are
 * not one run. */
static kd_status compute_row(kdk_iter *it, build_state *b) {
  int nd = it->full_ndim;
  int64_t len = 1;
  for (int d = 0; d < nd; d++)
    if (b->reduced[d]) len *= it->full_shape[d];
  it->row_len = len;
  if (len == 0) { /* empty rows: nothing is read along them, whatever the strides */
    for (int k = 0; k < it->ntensors; k++) it->row_strides[k] = 0;
    return KD_OK;
  }
  for (int k = 0; k < it->ntensors; k++) {
    bool copied = false;
  again:;
    int64_t inner = 0; /* stride of the innermost row dim of size > 1 seen so far */
    int64_t expect = -1;
    bool ok = true;
    for (int d = nd - 1; d >= 0; d--) {
      if (!b->reduced[d] || it->full_shape[d] == 1) continue;
      int64_t s = b->ostr[k][d];
      if (expect < 0) {
        inner = s;
      } else if (s != expect) {
        ok = false;
        break;
      }
      expect = s * it->full_shape[d];
    }
    if (!ok) {
      if (k < it->noutputs || copied)
        return kd_set_error(KD_EINTERNAL, "%s: operand %d cannot be iterated by rows", it->op, k);
      kd_status st = copy_for_rows(it, b, k);
      if (st) return st;
      copied = true;
      goto again;
    }
    it->row_strides[k] = inner;
  }
  return KD_OK;
}

/* Permuted, row dims dropped, coalesced iteration geometry. */
static void finish_geometry(kdk_iter *it, build_state *b) {
  int nt = it->ntensors, n = 0;
  for (int i = 0; i < it->full_ndim; i++) {
    int d = b->perm[i];
    if (it->has_row && b->reduced[d]) continue;
    it->shape[n] = it->full_shape[d];
    for (int k = 0; k < nt; k++) it->strides[n][k] = b->ostr[k][d];
    n++;
  }
  /* coalesce_dimensions */
  if (n > 1) {
    int prev = 0;
    for (int d = 1; d < n; d++) {
      int64_t s0 = it->shape[prev], s1 = it->shape[d];
      bool can = s0 == 1 || s1 == 1;
      if (!can) {
        can = true;
        for (int k = 0; k < nt; k++)
          if (s0 * it->strides[prev][k] != it->strides[d][k]) {
            can = false;
            break;
          }
      }
      if (can) {
        if (s0 == 1)
          for (int k = 0; k < nt; k++) it->strides[prev][k] = it->strides[d][k];
        it->shape[prev] *= s1;
      } else {
        prev++;
        if (prev != d) {
          for (int k = 0; k < nt; k++) it->strides[prev][k] = it->strides[d][k];
          it->shape[prev] = s1;
        }
      }
    }
    n = prev + 1;
  }
  it->ndim = n;
  int64_t outer = 1;
  for (int d = 0; d < n; d++) outer *= it->shape[d];
  it->outer_numel = outer;
}

/* The common case, built without build_state: elementwise (no rows, no
 * static shape, no forced dtype), every input non-meta with the same shape,
 * dtype and device, contiguous, no wrapped number among 0-dim inputs; every
 * given output (structured out / inplace, or passed in) already of that
 * shape, dtype and device, contiguous, and not partly overlapping an input.
 * Then nothing is converted, resized or cast, the layout is row-major, and
 * the geometry is one dimension of numel elements (the general path would
 * compute the same; kdk_iter_build_general is what tests compare with).
 * Returns 1 when the case does not apply, with nothing changed. */
static int build_fast(kdk_iter *it, kd_status *status) {
  unsigned f = it->flags;
  int nt = it->ntensors, nout = it->noutputs;
  if ((f & (KDK_ITER_F_REDUCTION | KDK_ITER_F_ROW_DIM)) || it->static_ndim >= 0 ||
      it->forced_common != KD_DTYPE_UNDEFINED || nt <= nout || nout < 1)
    return 1;
  kdk_structured *s = it->s;
  if (s && s->mode != KDK_STRUCTURED_FUNCTIONAL && s->mode != KDK_STRUCTURED_OUT &&
      s->mode != KDK_STRUCTURED_INPLACE)
    return 1;
  const kd_tensor *first = it->tensors[nout];
  kd_dtype common = kd_tensor_head_of(first)->dtype;
  kd_device dev = kd_tensor_head_of(first)->storage->device;
  int nd = kd_tensor_head_of(first)->ndim;
  if (dev.type == KD_DEVICE_META || !kd_tensor_head_of(first)->contiguous ||
      (nd == 0 && (first && kd_tensor_head_of(first)->wrapped_number)))
    return 1;
  const int64_t *shape = kd_tensor_head_of(first)->sizes;
  int64_t numel = kd_tensor_head_of(first)->numel;
  /* the other inputs against the first: numel first (cheap, and it settles
   * most mismatches), then the full shape */
  for (int k = nout + 1; k < nt; k++) {
    const kd_tensor *t = it->tensors[k];
    if (t == first) continue;
    if (kd_tensor_head_of(t)->dtype != common || kd_tensor_head_of(t)->numel != numel ||
        !kd_tensor_head_of(t)->contiguous ||
        !same_shape(kd_tensor_head_of(t)->ndim, kd_tensor_head_of(t)->sizes, nd, shape) ||
        (nd == 0 && (t && kd_tensor_head_of(t)->wrapped_number)) ||
        (!(t && first && kd_tensor_head_of(t)->storage == kd_tensor_head_of(first)->storage) &&
         !kd_device_equal(kd_tensor_head_of(t)->storage->device, dev)))
      return 1;
  }
  if ((f & KDK_ITER_F_INT_TO_FLOAT) && kd_dtype_is_integral(common, true)) return 1;
  /* outputs: what each one is, without changing anything yet */
  for (int k = 0; k < nout; k++) {
    const kd_tensor *o = it->tensors[k];
    if (!o && s) {
      if (k >= s->nout) return 1;
      if (s->mode != KDK_STRUCTURED_FUNCTIONAL) o = s->given[k];
      else if (!kd_device_equal(s->device, dev)) return 1;
    }
    if (!o) continue; /* a new output, allocated below */
    if (kd_tensor_head_of(o)->dtype != common || kd_tensor_head_of(o)->numel != numel ||
        !kd_tensor_head_of(o)->contiguous ||
        !kd_device_equal(kd_tensor_head_of(o)->storage->device, dev) ||
        !same_shape(kd_tensor_head_of(o)->ndim, kd_tensor_head_of(o)->sizes, nd, shape))
      return 1;
    if ((f & KDK_ITER_F_CHECK_OVERLAP) && numel != 0) {
      /* contiguous, same shape: an input sharing the storage must start at
       * the same element or not overlap at all */
      int64_t isz = (int64_t)kd_tensor_head_of(o)->itemsize;
      int64_t a0 = kd_tensor_head_of(o)->offset * isz, a1 = a0 + numel * isz;
      for (int j = nout; j < nt; j++) {
        const kd_tensor *in = it->tensors[j];
        if (in == o ||
            !(in && o && kd_tensor_head_of(in)->storage == kd_tensor_head_of(o)->storage))
          continue;
        int64_t b0 = kd_tensor_head_of(in)->offset * isz, b1 = b0 + numel * isz;
        if (b0 != a0 && a0 < b1 && b0 < a1) return 1;
      }
    }
  }
  /* from here on it is the fast path */
  it->is_meta = false;
  it->device = dev;
  it->common_dtype = common;
  it->full_ndim = nd;
  for (int d = 0; d < nd; d++) it->full_shape[d] = shape[d];
  it->numel = numel;
  for (int k = nout; k < nt; k++) it->dtypes[k] = common;
  for (int k = 0; k < nout; k++) {
    kd_dtype dt = it->out_dtype[k] != KD_DTYPE_UNDEFINED ? it->out_dtype[k]
                  : it->static_dtype != KD_DTYPE_UNDEFINED ? it->static_dtype
                                                            : common;
    kd_tensor *t = it->tensors[k];
    kd_status st;
    if (!t && s) {
      const kd_tensor *g = s->mode == KDK_STRUCTURED_FUNCTIONAL ? NULL : s->given[k];
      if (g) dt = kd_tensor_head_of(g)->dtype;
      /* a given tensor passed every check of set_output above */
      st = g ? kdk__structured_adopt_given(s, k)
             : kdk_structured_set_output(s, k, nd, it->full_shape, NULL, dt);
      if (st) {
        *status = st;
        return 0;
      }
      t = kdk_structured_output(s, k);
    } else if (t) {
      dt = kd_tensor_head_of(t)->dtype;
    } else {
      st = kd_tensor_empty(nd, it->full_shape, dt, dev, &t);
      if (st) {
        *status = kdk__error_with_op(it->op, st);
        return 0;
      }
      it->owned |= 1u << k;
    }
    it->tensors[k] = t;
    it->dtypes[k] = dt;
  }
  it->has_row = false;
  it->ndim = nd > 0 ? 1 : 0;
  it->shape[0] = numel;
  it->outer_numel = numel;
  bool ready = nd > 0;
  for (int k = 0; k < nt; k++) { /* tensors[k] has dtypes[k]: its itemsize is the stride */
    const kd_tensor *t = it->tensors[k];
    int64_t isz = (int64_t)kd_tensor_head_of(t)->itemsize;
    it->strides[0][k] = isz;
    it->loop_strides[k] = isz;
    it->loop_strides[nt + k] = 0;
    char *d = kd_tensor_head_data(kd_tensor_head_of(t));
    it->data[k] = d;
    ready = ready && d;
  }
  it->loop_ready = ready;
  it->built = true;
  *status = KD_OK;
  return 0;
}

kd_status kdk__iter_check_abi(const kdk_iter *it) {
  if (it->api_version != KDK_API_VERSION || it->struct_size != sizeof(kdk_iter))
    /* it->op may lie anywhere in a struct of another layout: not read */
    return kd_set_error(KD_EUNSUPPORTED,
                        "kdk_iter of kit ABI %u, %u bytes, but libkdops has kit ABI %d, %zu "
                        "bytes: rebuild the kernel against this libkdops' headers",
                        (unsigned)it->api_version, (unsigned)it->struct_size, KDK_API_VERSION,
                        sizeof(kdk_iter));
  return it->s ? kdk__structured_check_abi(it->s) : KD_OK;
}

kd_status kdk_iter_build(kdk_iter *it) {
  if (__builtin_expect(it->api_version != KDK_API_VERSION || it->struct_size != sizeof(kdk_iter) ||
                           (it->s && (it->s->api_version != KDK_API_VERSION ||
                                      it->s->struct_size != sizeof(kdk_structured))),
                       0))
    return kdk__iter_check_abi(it);
  if (it->cfg_status) return kd_set_error(it->cfg_status, "%s: %s", it->op, it->cfg_msg);
  if (it->built) return kd_set_error(KD_ESTATE, "%s: the tensor iterator was built twice", it->op);
  kd_status st;
  if (!build_fast(it, &st)) return st;
  return kdk__iter_build_general(it);
}

/* The device the loops run on: output 0's (a 0-dim CPU input may go with
 * tensors of another device), else the build's. */
static kd_device iter_device(const kdk_iter *it, const build_state *b) {
  return it->noutputs > 0 && it->tensors[0] ? kd_tensor_head_of(it->tensors[0])->storage->device
                                            : b->device;
}

kd_status kdk__iter_build_general(kdk_iter *it) {
  if (it->cfg_status) return kd_set_error(it->cfg_status, "%s: %s", it->op, it->cfg_msg);
  if (it->built) return kd_set_error(KD_ESTATE, "%s: the tensor iterator was built twice", it->op);
  build_state bs;
  build_state *b = &bs;
  int nt = it->ntensors, nout = it->noutputs;
  kdk_structured *s = it->s;
  unsigned f = it->flags;
  bool reduction = (f & KDK_ITER_F_REDUCTION) != 0;
  bool rows = reduction || (f & KDK_ITER_F_ROW_DIM);
  kd_status st;

  /* operands */
  it->is_meta = s && s->mode == KDK_STRUCTURED_META;
  b->device = s ? s->device : kd_device_cpu();
  bool have_device = false;
  for (int k = nout; k < nt; k++) {
    const kd_tensor *t = it->tensors[k];
    kd_device d = kd_tensor_head_of(t)->storage->device;
    if (d.type == KD_DEVICE_META) it->is_meta = true;
    if (!have_device) {
      if (!s) b->device = d;
      have_device = true;
    }
    b->info[k].t = t;
    b->info[k].structured = b->info[k].will_resize = b->info[k].read_write = false;
    b->info[k].needs_temp = b->info[k].have_strides = false;
  }
  for (int k = 0; k < nout; k++) {
    opinfo *o = &b->info[k];
    o->structured = o->will_resize = o->read_write = o->needs_temp = o->have_strides = false;
    const kd_tensor *t = it->tensors[k];
    if (!t && s) {
      if (k >= s->nout)
        return kd_set_error(KD_EINVAL, "%s: output %d of the iterator is not an output of the call",
                            it->op, k);
      o->structured = true;
      if (s->mode == KDK_STRUCTURED_INPLACE || s->mode == KDK_STRUCTURED_OUT) t = s->given[k];
      if (s->mode == KDK_STRUCTURED_INPLACE) o->read_write = true;
    }
    o->t = t;
    if (!t) continue;
    if (!have_device && !s) {
      b->device = kd_tensor_head_of(t)->storage->device;
      have_device = true;
    }
    if (kd_tensor_head_of(t)->storage->device.type == KD_DEVICE_META) it->is_meta = true;
    for (int j = nout; j < nt; j++)
      if (it->tensors[j] == t) o->read_write = true;
  }
  if ((f & KDK_ITER_F_CHECK_SAME_DEVICE) && nt > 1) {
    /* As PyTorch's TensorIterator: a 0-dim CPU input (a wrapped Scalar) may
     * go with tensors of another device; the others must agree. */
    const kd_tensor *first = NULL;
    for (int k = 0; k < nt; k++) {
      const kd_tensor *t = b->info[k].t;
      if (!t) continue;
      if (k >= nout && kd_tensor_head_of(t)->ndim == 0 &&
          kd_tensor_head_of(t)->storage->device.type == KD_DEVICE_CPU)
        continue;
      if (!first) {
        first = t;
      } else if (!kd_device_equal(kd_tensor_head_of(t)->storage->device,
                                  kd_tensor_head_of(first)->storage->device)) {
        char a[64], c[64];
        kd_device_format(kd_tensor_head_of(first)->storage->device, a, sizeof a);
        kd_device_format(kd_tensor_head_of(t)->storage->device, c, sizeof c);
        return kd_set_error(KD_EINVAL,
                            "%s: Expected all tensors to be on the same device, but found at "
                            "least two devices, %s and %s!",
                            it->op, a, c);
      }
    }
  }
  if ((f & KDK_ITER_F_CHECK_OVERLAP) && !it->is_meta) {
    for (int k = 0; k < nout; k++) {
      if (!b->info[k].t) continue;
      st = check_overlap(it, b->info[k].t, (const kd_tensor *const *)it->tensors + nout, nt - nout);
      if (st) return st;
    }
  }

  /* shape */
  bool all_same = true, has_scalars = false, has_tensors = false, any = false;
  int nd = 0;
  int64_t *shape = it->full_shape;
  if (it->static_ndim >= 0) {
    nd = it->static_ndim;
    for (int d = 0; d < nd; d++) shape[d] = it->static_shape[d];
    all_same = false;
    for (int k = 0; k < nt; k++) {
      const kd_tensor *t = b->info[k].t;
      if (!t || (k < nout && (reduction || b->info[k].structured))) continue;
      int tmp_nd = nd;
      int64_t tmp[KD_MAX_DIMS];
      for (int d = 0; d < nd; d++) tmp[d] = shape[d];
      st =
          broadcast_into(it, &tmp_nd, tmp, kd_tensor_head_of(t)->ndim, kd_tensor_head_of(t)->sizes);
      if (st) return st;
      if (!same_shape(tmp_nd, tmp, nd, shape))
        return kd_set_error(KD_EINVAL, "%s: operand %d of shape %s does not fit the static shape",
                            it->op, k,
                            kdk__fmt_ints((char[256]){0}, 256, kd_tensor_head_of(t)->sizes,
                                          kd_tensor_head_of(t)->ndim));
    }
  } else {
    for (int k = 0; k < nt; k++) {
      const kd_tensor *t = b->info[k].t;
      if (!t) continue;
      if (k < nout && (reduction || (f & KDK_ITER_F_RESIZE_OUTPUTS))) continue;
      int tn = kd_tensor_head_of(t)->ndim;
      const int64_t *ts = kd_tensor_head_of(t)->sizes;
      if (tn == 0)
        has_scalars = true;
      else
        has_tensors = true;
      if (has_scalars && has_tensors) all_same = false;
      if (!any) {
        nd = tn;
        for (int d = 0; d < tn; d++) shape[d] = ts[d];
        any = true;
      } else if (!same_shape(nd, shape, tn, ts)) {
        all_same = false;
        st = broadcast_into(it, &nd, shape, tn, ts);
        if (st) return st;
      }
    }
  }
  it->full_ndim = nd;
  /* Zero-size and expanded operands can have sizes whose product does not
   * fit: a zero anywhere makes it 0, otherwise an overflow is an error. */
  int64_t numel = 1;
  for (int d = 0; d < nd; d++)
    if (shape[d] == 0) numel = 0;
  for (int d = 0; d < nd && numel; d++)
    if (__builtin_mul_overflow(numel, shape[d], &numel))
      return kd_set_error(KD_EOVERFLOW, "%s: the broadcast shape %s has more than 2^63 elements",
                          it->op, kdk__fmt_ints((char[256]){0}, 256, shape, nd));
  it->numel = numel;

  /* output shapes: resize marks, reduction shape */
  if (rows) {
    st = resolve_reduce_dims(it, b);
    if (st) return st;
  }
  if (reduction) {
    int on = 0;
    bool keep = (f & KDK_ITER_F_KEEPDIM) != 0;
    for (int d = 0; d < nd; d++) {
      if (!b->reduced[d])
        b->out_shape[on++] = shape[d];
      else if (keep)
        b->out_shape[on++] = 1;
    }
    b->out_ndim = on;
    for (int k = 0; k < nout; k++) {
      opinfo *o = &b->info[k];
      if (!o->t) continue;
      if (!same_shape(kd_tensor_head_of(o->t)->ndim, kd_tensor_head_of(o->t)->sizes, on,
                      b->out_shape))
        o->will_resize = true;
    }
  } else {
    b->out_ndim = nd;
    for (int d = 0; d < nd; d++) b->out_shape[d] = shape[d];
    for (int k = 0; k < nout; k++) {
      opinfo *o = &b->info[k];
      if (!o->t ||
          same_shape(kd_tensor_head_of(o->t)->ndim, kd_tensor_head_of(o->t)->sizes, nd, shape))
        continue;
      if ((f & KDK_ITER_F_RESIZE_OUTPUTS) && !o->read_write && it->static_ndim < 0) {
        o->will_resize = true;
      } else {
        char have[256], want[256];
        return kd_set_error(KD_EINVAL,
                            "%s: output with shape %s doesn't match the broadcast shape %s", it->op,
                            kdk__fmt_ints(have, sizeof have, kd_tensor_head_of(o->t)->sizes,
                                          kd_tensor_head_of(o->t)->ndim),
                            kdk__fmt_ints(want, sizeof want, shape, nd));
      }
    }
  }

  /* dtypes */
  st = compute_types(it, b, !has_tensors);
  if (st) return st;

  /* fast set-up: same shapes, all contiguous */
  bool fast = all_same && !rows && it->static_ndim < 0;
  if (fast) {
    for (int k = 0; k < nt && fast; k++) {
      const kd_tensor *t = b->info[k].t;
      if (!t || b->info[k].will_resize) continue;
      if (!kd_tensor_head_of(t)->contiguous) fast = false;
    }
  }
  if (fast) {
    for (int k = 0; k < nout; k++) {
      st = set_up_output(it, b, k, nd, shape, NULL, NULL);
      if (st) return st;
    }
    it->has_row = false;
    it->ndim = nd > 0 ? 1 : 0;
    it->shape[0] = numel;
    it->outer_numel = numel;
    for (int k = 0; k < nt; k++) {
      it->strides[0][k] = (int64_t)kd_dtype_size(it->dtypes[k]);
      it->data[k] = kd_tensor_head_data(kd_tensor_head_of(it->tensors[k]));
    }
    it->device = iter_device(it, b);
    it->built = true;
    return KD_OK;
  }

  /* strides of the operands that have their geometry */
  for (int k = 0; k < nt; k++) {
    opinfo *o = &b->info[k];
    if (!o->t || o->will_resize || (k < nout && reduction)) continue;
    broadcast_strides(o->t, nd, shape, b->ostr[k]);
    o->have_strides = true;
  }
  reorder(it, b);

  /* outputs */
  int64_t lay[KD_MAX_DIMS];
  bool strided = !reduction && layout_strides(it, b, lay);
  for (int k = 0; k < nout; k++) {
    st = set_up_output(it, b, k, b->out_ndim, b->out_shape, strided ? lay : NULL,
                       strided ? lay : NULL);
    if (st) return st;
    const kd_tensor *t = it->tensors[k];
    if (!reduction) {
      broadcast_strides(t, nd, shape, b->ostr[k]);
    } else {
      const int64_t *ts = kd_tensor_head_of(t)->strides;
      int64_t isz = (int64_t)kd_tensor_head_of(t)->itemsize;
      bool keep = (f & KDK_ITER_F_KEEPDIM) != 0;
      int j = 0;
      for (int d = 0; d < nd; d++) {
        if (b->reduced[d]) {
          b->ostr[k][d] = 0;
          if (keep) j++;
        } else {
          b->ostr[k][d] = shape[d] == 1 ? 0 : ts[j] * isz;
          j++;
        }
      }
    }
    b->info[k].have_strides = true;
  }

  it->has_row = rows;
  if (rows) {
    st = compute_row(it, b);
    if (st) return st;
  }
  finish_geometry(it, b);
  for (int k = 0; k < nt; k++) it->data[k] = kd_tensor_head_data(kd_tensor_head_of(it->tensors[k]));
  it->device = iter_device(it, b);
  it->built = true;
  return KD_OK;
}

kd_status kdk_iter_copy_temps(kdk_iter *it) {
  if (!it->built || it->is_meta) return KD_OK;
  for (int k = 0; k < it->noutputs; k++) {
    if (!(it->temps & (1u << k)) || !it->originals[k]) continue;
    kd_status st = kd_tensor_copy_(it->originals[k], it->tensors[k]);
    if (st) return kdk__error_with_op(it->op, st);
  }
  return KD_OK;
}

/* ---- Convenience builders ----------------------------------------------------- */

kd_status kdk_iter_build_binary_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                  const kd_tensor *b) {
  kdk_iter_add_output(it, out);
  kdk_iter_add_input(it, a);
  kdk_iter_add_input(it, b);
  it->flags = (it->flags | KDK_ITER_F_PROMOTE_INPUTS | KDK_ITER_F_CAST_OUTPUTS | KDK_ITER_F_SAFE_CAST) &
              ~(unsigned)KDK_ITER_F_CHECK_SAME_DTYPE;
  return kdk_iter_build(it);
}

kd_status kdk_iter_build_binary_float_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                        const kd_tensor *b) {
  it->flags |= KDK_ITER_F_INT_TO_FLOAT;
  return kdk_iter_build_binary_op(it, out, a, b);
}

kd_status kdk_iter_build_comparison_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                      const kd_tensor *b) {
  kdk_iter_add_output(it, out);
  kdk_iter_add_input(it, a);
  kdk_iter_add_input(it, b);
  it->flags = (it->flags | KDK_ITER_F_PROMOTE_INPUTS) & ~(unsigned)KDK_ITER_F_CHECK_SAME_DTYPE;
  /* the output the call will write: given, or structured given */
  const kd_tensor *o = out;
  if (!o && it->s && it->noutputs > 0 &&
      (it->s->mode == KDK_STRUCTURED_INPLACE || it->s->mode == KDK_STRUCTURED_OUT))
    o = it->s->given[0];
  if (!o)
    it->static_dtype = KD_BOOL;
  else if (kd_tensor_head_of(o)->dtype != KD_BOOL)
    it->flags |= KDK_ITER_F_CAST_OUTPUTS;
  return kdk_iter_build(it);
}

/* PyTorch's build_borrowing_unary_op: check_all_same_dtype, no casts. */
kd_status kdk_iter_build_unary_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a) {
  kdk_iter_add_output(it, out);
  kdk_iter_add_input(it, a);
  it->flags = (it->flags | KDK_ITER_F_CHECK_SAME_DTYPE) &
              ~(unsigned)(KDK_ITER_F_PROMOTE_INPUTS | KDK_ITER_F_CAST_OUTPUTS | KDK_ITER_F_SAFE_CAST);
  return kdk_iter_build(it);
}

/* PyTorch's build_borrowing_unary_float_op: promote (integers to float),
 * cast to a given output after the safe-casting check. */
kd_status kdk_iter_build_unary_float_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a) {
  kdk_iter_add_output(it, out);
  kdk_iter_add_input(it, a);
  it->flags = (it->flags | KDK_ITER_F_PROMOTE_INPUTS | KDK_ITER_F_INT_TO_FLOAT |
               KDK_ITER_F_CAST_OUTPUTS | KDK_ITER_F_SAFE_CAST) &
              ~(unsigned)KDK_ITER_F_CHECK_SAME_DTYPE;
  return kdk_iter_build(it);
}

kd_status kdk_iter_build_nullary_op(kdk_iter *it, kd_tensor *out) {
  kdk_iter_add_output(it, out);
  it->flags = (it->flags & ~(unsigned)(KDK_ITER_F_CHECK_SAME_DTYPE | KDK_ITER_F_RESIZE_OUTPUTS));
  return kdk_iter_build(it);
}

kd_status kdk_iter_build_reduce_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                  const int64_t *dims, int n, bool keepdim, kd_dtype out_dtype) {
  kdk_iter_add_output_dtype(it, out, out_dtype);
  kdk_iter_add_input(it, a);
  it->flags &= ~(unsigned)(KDK_ITER_F_CHECK_SAME_DTYPE | KDK_ITER_F_CHECK_OVERLAP);
  kdk_iter_set_reduction(it, dims, n, keepdim);
  return kdk_iter_build(it);
}

kd_status kdk_iter_wrap_scalar(const kd_scalar *v, kd_tensor **out) {
  if (!v || !out) return kd_set_error(KD_EINVAL, "kdk_iter_wrap_scalar: NULL argument");
  kd_status st = kd_tensor_from_scalar(v, kd_scalar_dtype(v), out);
  if (st) return st;
  kd_tensor_set_wrapped_number(*out, true);
  return KD_OK;
}

/* ---- Loops ------------------------------------------------------------------- */

/* What loops get for an operand without bytes (a zero-element input of a
 * reduction whose rows are empty): a valid address never read, so that
 * loops may do pointer arithmetic with zero offsets. */
static union {
  max_align_t a;
  char c[64];
} no_bytes;

static void serial_range_nd(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t begin,
                            int64_t end);

void kdk_iter_serial_for_each_range(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx,
                                   int64_t begin, int64_t end) {
  if (!it->built || it->is_meta || begin >= end) return;
  int nt = it->ntensors;
  char *ptrs[KDK_ITER_MAX_TENSORS];
  if (begin == 0 && it->loop_ready) { /* the whole of a fast-built iterator */
    for (int k = 0; k < nt; k++) ptrs[k] = it->data[k];
    loop(ctx, ptrs, it->loop_strides, end, 1);
    return;
  }
  if (it->ndim != 1 || it->has_row) {
    serial_range_nd(it, loop, ctx, begin, end);
    return;
  }
  /* the common case, kept lean: one (coalesced) dimension */
  int64_t st[2 * KDK_ITER_MAX_TENSORS];
  for (int k = 0; k < nt; k++) {
    int64_t s0 = it->strides[0][k];
    char *d = it->data[k];
    st[k] = s0;
    st[nt + k] = 0;
    ptrs[k] = d ? d + begin * s0 : no_bytes.c;
  }
  loop(ctx, ptrs, st, end - begin, 1);
}

/* Every other geometry: 0-dim, several dimensions, rows. */
__attribute__((noinline)) static void serial_range_nd(const kdk_iter *it, kdk_iter_loop2d loop,
                                                      void *ctx, int64_t begin, int64_t end) {
  int nt = it->ntensors, nd = it->ndim;
  bool row = it->has_row;
  char *ptrs[KDK_ITER_MAX_TENSORS];
  int64_t st[2 * KDK_ITER_MAX_TENSORS];
  if (nd == 0) {
    for (int k = 0; k < nt; k++) {
      ptrs[k] = it->data[k] ? it->data[k] : no_bytes.c;
      st[k] = row ? it->row_strides[k] : 0;
      st[nt + k] = 0;
    }
    loop(ctx, ptrs, st, row ? it->row_len : 1, 1);
    return;
  }
  for (int k = 0; k < nt; k++) {
    if (row) {
      st[k] = it->row_strides[k];
      st[nt + k] = it->strides[0][k];
    } else {
      st[k] = it->strides[0][k];
      st[nt + k] = nd > 1 ? it->strides[1][k] : 0;
    }
  }
  int64_t idx[KD_MAX_DIMS];
  int64_t rem = begin;
  for (int d = 0; d < nd; d++) {
    idx[d] = rem % it->shape[d];
    rem /= it->shape[d];
  }
  int64_t off = begin;
  while (off < end) {
    for (int k = 0; k < nt; k++) {
      int64_t o = 0;
      for (int d = 0; d < nd; d++) o += idx[d] * it->strides[d][k];
      ptrs[k] = it->data[k] ? it->data[k] + o : no_bytes.c;
    }
    int64_t step0 = it->shape[0] - idx[0];
    if (step0 > end - off) step0 = end - off;
    int64_t step1 = 1;
    if (!row && nd > 1 && idx[0] == 0 && step0 == it->shape[0]) {
      step1 = it->shape[1] - idx[1];
      int64_t fit = (end - off) / it->shape[0];
      if (step1 > fit) step1 = fit;
    }
    if (row)
      loop(ctx, ptrs, st, it->row_len, step0);
    else
      loop(ctx, ptrs, st, step0, step1);
    off += step0 * step1;
    int d = 0;
    int64_t carry = step0;
    if (step1 != 1) {
      d = 1;
      carry = step1;
    }
    for (; d < nd && carry > 0; d++) {
      int64_t v = idx[d] + carry;
      if (v >= it->shape[d]) {
        v -= it->shape[d];
        carry = 1;
      } else {
        carry = 0;
      }
      idx[d] = v;
    }
  }
}

void kdk_iter_serial_for_each(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx) {
  kdk_iter_serial_for_each_range(it, loop, ctx, 0, it->outer_numel);
}

typedef struct for_each_ctx {
  const kdk_iter *it;
  kdk_iter_loop2d loop;
  void *ctx;
} for_each_ctx;

static void for_each_chunk(void *p, int64_t b, int64_t e) {
  const for_each_ctx *c = p;
  kdk_iter_serial_for_each_range(c->it, c->loop, c->ctx, b, e);
}

void kdk_iter_for_each(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t grain) {
  if (!it->built || it->is_meta) return;
  int64_t n = it->outer_numel;
  if (n <= 0) return;
  if (grain <= 0) grain = KDK_GRAIN_SIZE;
  int64_t per = it->has_row && it->row_len > 1 ? it->row_len : 1;
  if (n == 1 || n * per < grain || kdk_in_parallel_region() || kd_get_num_threads() <= 1) {
    kdk_iter_serial_for_each_range(it, loop, ctx, 0, n);
    return;
  }
  int64_t g = (grain + per - 1) / per;
  for_each_ctx c = {it, loop, ctx};
  kdk_parallel_for(0, n, g, for_each_chunk, &c);
}

void kdk_iter_for_each_row(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t grain) {
  kdk_iter_for_each(it, loop, ctx, grain);
}

#define MAX_PARTIALS 64

typedef struct split_ctx {
  const kdk_iter *it;
  kdk_iter_row_piece piece;
  void *ctx;
  int64_t chunk;
} split_ctx;

static void split_chunk(void *p, int64_t b, int64_t e) {
  const split_ctx *c = p;
  const kdk_iter *it = c->it;
  int nt = it->ntensors;
  char *ptrs[KDK_ITER_MAX_TENSORS];
  for (int64_t i = b; i < e; i++) {
    int64_t lo = i * c->chunk, hi = lo + c->chunk < it->row_len ? lo + c->chunk : it->row_len;
    for (int k = 0; k < nt; k++) ptrs[k] = it->data[k] + lo * it->row_strides[k];
    c->piece(c->ctx, (int)i, ptrs, it->row_strides, lo, hi - lo);
  }
}

int kdk_iter_split_row(const kdk_iter *it, kdk_iter_row_piece piece, void *ctx, int max_parts,
                      int64_t grain) {
  if (!it->built || it->is_meta || !it->has_row || it->outer_numel != 1 || max_parts < 2)
    return 0;
  if (grain <= 0) grain = KDK_GRAIN_SIZE;
  if (it->row_len < grain || kdk_in_parallel_region()) return 0;
  int parts = kdk_parallel_chunks(0, it->row_len, grain);
  if (parts <= 1) return 0;
  if (parts > max_parts) parts = max_parts;
  /* one row of >= grain elements: every operand has its bytes (data != NULL) */
  split_ctx c = {it, piece, ctx, (it->row_len + parts - 1) / parts};
  parts = (int)((it->row_len + c.chunk - 1) / c.chunk);
  kdk_parallel_for(0, parts, 1, split_chunk, &c);
  return parts;
}

typedef struct partial_ctx {
  kdk_iter_loop2d loop;
  void *ctx;
  int64_t isz;
  char *partials;
} partial_ctx;

/* kdk_iter_reduce_rows' pieces: the loop reduces piece i into partial i. */
static void partial_piece(void *p, int part, char **data, const int64_t *strides, int64_t begin,
                          int64_t len) {
  (void)begin;
  const partial_ctx *c = p;
  char *ptrs[2] = {c->partials + part * c->isz, data[1]};
  int64_t st[4] = {0, strides[1], 0, 0};
  c->loop(c->ctx, ptrs, st, len, 1);
}

kd_status kdk_iter_reduce_rows(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t grain) {
  if (!it->built || it->is_meta) return KD_OK;
  union {
    char bytes[MAX_PARTIALS * 16];
    long double align;
  } buf;
  partial_ctx c = {loop, ctx, (int64_t)kd_dtype_size(it->dtypes[0]), buf.bytes};
  int parts = 0;
  if (it->noutputs == 1 && it->ntensors == 2 && it->dtypes[0] == it->dtypes[1])
    parts = kdk_iter_split_row(it, partial_piece, &c, MAX_PARTIALS, grain);
  if (parts == 0) {
    kdk_iter_for_each(it, loop, ctx, grain);
    return KD_OK;
  }
  char *ptrs[2] = {it->data[0], buf.bytes};
  int64_t st[4] = {0, c.isz, 0, 0};
  loop(ctx, ptrs, st, parts, 1);
  return KD_OK;
}

/* ---- Accessors --------------------------------------------------------------- */

bool kdk_iter_is_contiguous(const kdk_iter *it) {
  if (it->numel == 1) return true;
  if (it->has_row || it->ndim != 1) return false;
  for (int k = 0; k < it->ntensors; k++)
    if (it->strides[0][k] != (int64_t)kd_dtype_size(it->dtypes[k])) return false;
  return true;
}

bool kdk_iter_is_scalar(const kdk_iter *it, int k) {
  if (k < 0 || k >= it->ntensors) return false;
  for (int d = 0; d < it->ndim; d++)
    if (it->strides[d][k] != 0 && it->shape[d] != 1) return false;
  if (it->has_row && it->row_strides[k] != 0 && it->row_len > 1) return false;
  return true;
}

kd_status kdk_iter_scalar_value(const kdk_iter *it, int k, kd_scalar *out) {
  if (!it->built || !kdk_iter_is_scalar(it, k) || !it->data[k])
    return kd_set_error(KD_EINVAL, "%s: operand %d of the iterator is not a scalar", it->op, k);
  return kd_scalar_from_element(it->data[k], it->dtypes[k], out);
}

void kdk_iter_remove_operand(kdk_iter *it, int k) {
  if (k < it->noutputs || k >= it->ntensors) return;
  it->loop_ready = false;
  if (it->owned & (1u << k)) kd_tensor_release(it->tensors[k]);
  unsigned low = it->owned & ((1u << k) - 1), high = it->owned >> (k + 1);
  it->owned = low | (high << k);
  for (int j = k; j + 1 < it->ntensors; j++) {
    it->tensors[j] = it->tensors[j + 1];
    it->originals[j] = it->originals[j + 1];
    it->out_dtype[j] = it->out_dtype[j + 1];
    it->dtypes[j] = it->dtypes[j + 1];
    it->data[j] = it->data[j + 1];
    it->row_strides[j] = it->row_strides[j + 1];
    for (int d = 0; d < it->ndim; d++) it->strides[d][j] = it->strides[d][j + 1];
  }
  it->ntensors--;
}
