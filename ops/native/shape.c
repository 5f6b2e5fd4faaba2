/*
 * shape.c: shape operators that copy (clone, cat, stack, tril, triu,
 * index_select, gather). One kernel serves cpu and meta: on meta the sizes,
 * dtypes and argument checks are computed and the result allocated, no
 * bytes are read or written (index values, which live in the index tensor's
 * bytes, are then not checked). Elements move as bytes of the element
 * size, so every dtype works. Behaviour and messages follow PyTorch 1.13.
 * Prototypes and ownership rules: views.h.
 */
#include "native/views.h"

#include "kd/ops/cat.h"

#include <stdlib.h>
#include <string.h>
#include "kd/memory.h"
#include "kdk/native.h" /* the kit's (exported) declarations of these kernels */

static bool on_meta(const kd_tensor *t) { return kd_tensor_device(t).type == KD_DEVICE_META; }

static char *bytes_of(const kd_tensor *t) { return (char *)kd_tensor_data(t); }

/* ---- clone ------------------------------------------------------------------- */

kd_status kdk_native_clone(kd_tensor *self, const kd_memory_format *memory_format,
                           kd_tensor **out) {
  if (out) *out = NULL;
  if (!self || !out) return kd_set_error(KD_EINVAL, "clone: NULL argument");
  kd_status st = kdk__vw_check_cpu_or_meta("clone", self);
  if (st) return st;
  kd_memory_format mf = memory_format ? *memory_format : KD_MEMORY_FORMAT_PRESERVE;
  int n = kd_tensor_ndim(self);
  int64_t strides[KD_MAX_DIMS];
  if (mf == KD_MEMORY_FORMAT_PRESERVE && kdk__vw_non_overlapping_and_dense(self))
    memcpy(strides, kd_tensor_strides(self), (size_t)n * sizeof(int64_t));
  else if ((st = kdk__vw_format_strides(n, kd_tensor_sizes(self), mf, strides)))
    return st;
  kd_tensor *r;
  if ((st = kd_tensor_empty_strided(n, kd_tensor_sizes(self), strides, kd_tensor_dtype(self),
                                    kd_tensor_device(self), &r)))
    return st;
  if (!on_meta(self))
    kdk__vw_strided_copy(n, kd_tensor_sizes(self), bytes_of(r), strides, bytes_of(self),
                        kd_tensor_strides(self), kd_tensor_itemsize(self));
  *out = r;
  return KD_OK;
}

/* ---- cat, stack ---------------------------------------------------------------- */

/* PyTorch's canCast: no complex to real, floating to integral, or non-bool
 * to bool. */
static bool can_cast(kd_dtype from, kd_dtype to) {
  if (kd_dtype_is_complex(from) && !kd_dtype_is_complex(to)) return false;
  if (kd_dtype_is_floating(from) && kd_dtype_is_integral(to, true)) return false;
  if (from != KD_BOOL && to == KD_BOOL) return false;
  return true;
}

/* The legacy rule: 1-dim tensors of size 0 are skipped by cat. */
static bool cat_skip(const kd_tensor *t) {
  return kd_tensor_ndim(t) == 1 && kd_tensor_sizes(t)[0] == 0;
}

/* The body of cat and cat.out: `given` is the out= tensor or NULL (then
 * *result receives a new tensor). */
static kd_status cat_impl(kd_tensors tensors, int64_t dim, kd_tensor *given, kd_tensor **result) {
  kd_status st;
  int64_t n = tensors.size;
  if (n > 0 && !tensors.data) return kd_set_error(KD_EINVAL, "cat: NULL tensor list");
  for (int64_t i = 0; i < n; i++) {
    const kd_tensor *t = tensors.data[i];
    if (!t) return kd_set_error(KD_EINVAL, "cat: tensor %lld of the list is NULL", (long long)i);
    if (kd_tensor_ndim(t) == 0)
      return kd_set_error(KD_EINVAL,
                          "zero-dimensional tensor (at position %lld) cannot be concatenated",
                          (long long)i);
  }
  for (int64_t i = 0; i < n; i++) /* legacy_cat_wrap_dim */
    if (!cat_skip(tensors.data[i])) {
      if ((st = kdk__vw_wrap_dim(dim, kd_tensor_ndim(tensors.data[i]), &dim))) return st;
      break;
    }
  if (n == 0) return kd_set_error(KD_EINVAL, "torch.cat(): expected a non-empty list of Tensors");
  int64_t valid = n;
  for (int64_t i = 0; i < n && valid == n; i++)
    if (!cat_skip(tensors.data[i])) valid = i;

  kd_result_type_state rs;
  kd_result_type_init(&rs);
  for (int64_t i = 0; i < n; i++)
    kd_result_type_add_tensor(&rs, kd_tensor_dtype(tensors.data[i]),
                              kd_tensor_ndim(tensors.data[i]));
  kd_dtype dtype = kd_result_type_finish(&rs);
  const kd_tensor *first = tensors.data[0];
  for (int64_t i = 0; i < n; i++) {
    if ((st = kdk__vw_check_same_device(first, tensors.data[i]))) return st;
    if ((st = kdk__vw_check_cpu_or_meta("cat", tensors.data[i]))) return st;
  }
  if (given) {
    if (!can_cast(dtype, kd_tensor_dtype(given)))
      return kd_set_error(KD_ETYPE,
                          "torch.cat(): input types can't be cast to the desired output type %s",
                          kd_dtype_name(kd_tensor_dtype(given)));
    dtype = kd_tensor_dtype(given);
  }

  int ndim = 1;
  int64_t sizes[KD_MAX_DIMS] = {0};
  if (valid < n) {
    const kd_tensor *ref = tensors.data[valid];
    ndim = kd_tensor_ndim(ref);
    int64_t at_dim = 0;
    for (int64_t i = 0; i < n; i++) {
      const kd_tensor *t = tensors.data[i];
      if (cat_skip(t)) continue;
      if (kd_tensor_ndim(t) != ndim)
        return kd_set_error(KD_EINVAL,
                            "Tensors must have same number of dimensions: got %d and %d", ndim,
                            kd_tensor_ndim(t));
      for (int d = 0; d < ndim; d++) {
        if (d == dim) continue;
        if (kd_tensor_sizes(t)[d] != kd_tensor_sizes(ref)[d])
          return kd_set_error(KD_EINVAL,
                              "Sizes of tensors must match except in dimension %lld. Expected "
                              "size %lld but got size %lld for tensor number %lld in the list.",
                              (long long)dim, (long long)kd_tensor_sizes(ref)[d],
                              (long long)kd_tensor_sizes(t)[d], (long long)i);
      }
      at_dim += kd_tensor_sizes(t)[dim];
    }
    memcpy(sizes, kd_tensor_sizes(ref), (size_t)ndim * sizeof(int64_t));
    sizes[dim] = at_dim;
  }

  kd_tensor *r;
  bool via_temp = false;
  if (given) {
    /* Overlap is checked before out is resized (so that a refused out is
     * left alone) and again after (its new sizes may reach an input). */
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1 &&
          (st = kdk__vw_prepare_out(given, ndim, sizes, dtype, false, kd_tensor_device(first))))
        return st;
      if (pass == 1 && (st = kdk__vw_check_internal_overlap(given))) return st;
      for (int64_t i = 0; i < n; i++)
        if ((st = kdk__vw_check_no_overlap(given, tensors.data[i], false))) return st;
    }
    for (int64_t i = 0; i < n; i++)
      if (kdk__vw_overlap_of(given, tensors.data[i]) != KDK__VW_OVERLAP_NO) via_temp = true;
    r = given;
    if (via_temp && !on_meta(given) &&
        (st = kd_tensor_empty(ndim, sizes, dtype, kd_tensor_device(first), &r)))
      return st;
  } else if ((st = kd_tensor_empty(ndim, sizes, dtype, kd_tensor_device(first), &r))) {
    return st;
  }
  if (!on_meta(r) && valid < n) {
    /* Each input goes into the slice of r it covers along dim. */
    int64_t off = 0;
    for (int64_t i = 0; i < n && st == KD_OK; i++) {
      const kd_tensor *t = tensors.data[i];
      if (cat_skip(t)) continue;
      int64_t len = kd_tensor_sizes(t)[dim];
      int64_t vs[KD_MAX_DIMS];
      memcpy(vs, kd_tensor_sizes(r), (size_t)ndim * sizeof(int64_t));
      vs[dim] = len;
      int64_t voff = kd_tensor_storage_offset(r) + off * kd_tensor_strides(r)[dim];
      off += len;
      if (len == 0 || kd_tensor_numel(t) == 0) continue;
      kd_tensor *slot;
      if ((st = kd_tensor_as_strided(r, ndim, vs, kd_tensor_strides(r), voff, &slot))) break;
      if (kd_tensor_dtype(t) == kd_tensor_dtype(r))
        kdk__vw_strided_copy(ndim, vs, bytes_of(slot), kd_tensor_strides(slot), bytes_of(t),
                            kd_tensor_strides(t), kd_tensor_itemsize(t));
      else
        st = kd_tensor_copy_(slot, t);
      kd_tensor_release(slot);
    }
  }
  if (st == KD_OK && via_temp && r != given) st = kd_tensor_copy_(given, r);
  if (r != given && (st || given)) kd_tensor_release(r);
  if (st) return st;
  if (!given) *result = r;
  return KD_OK;
}

kd_status kdk_native_cat(kd_tensors tensors, int64_t dim, kd_tensor **out) {
  if (out) *out = NULL;
  if (!out) return kd_set_error(KD_EINVAL, "cat: NULL argument");
  return cat_impl(tensors, dim, NULL, out);
}

kd_status kdk_native_cat_out(kd_tensors tensors, int64_t dim, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "cat.out: NULL argument");
  return cat_impl(tensors, dim, out, NULL);
}

/* stack = cat of the inputs each unsqueezed at dim (PyTorch takes the same
 * route, checking equal sizes first where it can view). */
static kd_status stack_impl(kd_tensors tensors, int64_t dim, kd_tensor *given, kd_tensor **result) {
  if (tensors.size <= 0) return kd_set_error(KD_EINVAL, "stack expects a non-empty TensorList");
  if (!tensors.data) return kd_set_error(KD_EINVAL, "stack: NULL tensor list");
  for (int64_t i = 0; i < tensors.size; i++)
    if (!tensors.data[i])
      return kd_set_error(KD_EINVAL, "stack: tensor %lld of the list is NULL", (long long)i);
  const kd_tensor *t0 = tensors.data[0];
  int n0 = kd_tensor_ndim(t0);
  int64_t wd = 0;
  kd_status st = kdk__vw_wrap_dim(dim, n0 + 1, &wd);
  if (st) return st;
  if (wd < n0) {
    for (int64_t i = 1; i < tensors.size; i++) {
      const kd_tensor *t = tensors.data[i];
      if (kd_tensor_ndim(t) != n0 ||
          (n0 && memcmp(kd_tensor_sizes(t), kd_tensor_sizes(t0), (size_t)n0 * sizeof(int64_t)))) {
        char a[256], b[256];
        return kd_set_error(KD_EINVAL,
                            "stack expects each tensor to be equal size, but got %s at entry 0 "
                            "and %s at entry %lld",
                            kdk__fmt_ints(a, sizeof a, kd_tensor_sizes(t0), n0),
                            kdk__fmt_ints(b, sizeof b, kd_tensor_sizes(t), kd_tensor_ndim(t)),
                            (long long)i);
      }
    }
  }
  kd_tensor **parts = kd_host_calloc((size_t)tensors.size, sizeof *parts);
  if (!parts) return kd_set_error(KD_ENOMEM, "stack: out of memory");
  for (int64_t i = 0; i < tensors.size && st == KD_OK; i++)
    st = kdk_native_unsqueeze(tensors.data[i], wd, &parts[i]);
  if (st == KD_OK) {
    kd_tensors list = {parts, tensors.size};
    /* cat directly on the cpu and meta; elsewhere the dispatched cat, which
     * the tensors' backend (or its fallback) serves. */
    kd_device_type ty = kd_tensor_device(t0).type;
    if (ty == KD_DEVICE_CPU || ty == KD_DEVICE_META)
      st = given ? cat_impl(list, wd, given, NULL) : cat_impl(list, wd, NULL, result);
    else
      st = given ? kd_cat_out(list, wd, given) : kd_cat(list, wd, result);
  }
  for (int64_t i = 0; i < tensors.size; i++) kd_tensor_release(parts[i]);
  kd_host_free(parts);
  return st;
}

kd_status kdk_native_stack(kd_tensors tensors, int64_t dim, kd_tensor **out) {
  if (out) *out = NULL;
  if (!out) return kd_set_error(KD_EINVAL, "stack: NULL argument");
  return stack_impl(tensors, dim, NULL, out);
}

kd_status kdk_native_stack_out(kd_tensors tensors, int64_t dim, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "stack.out: NULL argument");
  return stack_impl(tensors, dim, out, NULL);
}

/* ---- tril, triu --------------------------------------------------------------- */

/* dst = the lower (or upper) band of src, zeros elsewhere. dst and src have
 * the same sizes and are identical or disjoint. */
static void band_copy(const kd_tensor *src, kd_tensor *dst, int64_t k, bool lower) {
  int n = kd_tensor_ndim(src);
  const int64_t *sz = kd_tensor_sizes(src), *ss = kd_tensor_strides(src), *ds = kd_tensor_strides(dst);
  size_t isz = kd_tensor_itemsize(src);
  if (kd_tensor_numel(src) == 0) return;
  int64_t rows = sz[n - 2], cols = sz[n - 1];
  int64_t idx[KD_MAX_DIMS] = {0};
  const char *sbase = bytes_of(src);
  char *dbase = bytes_of(dst);
  for (;;) {
    int64_t so = 0, dof = 0;
    for (int i = 0; i < n - 2; i++) {
      so += idx[i] * ss[i];
      dof += idx[i] * ds[i];
    }
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        char *d = dbase + (dof + i * ds[n - 2] + j * ds[n - 1]) * (int64_t)isz;
        bool keep = lower ? j - i <= k : j - i >= k;
        if (keep) {
          const char *s = sbase + (so + i * ss[n - 2] + j * ss[n - 1]) * (int64_t)isz;
          if (s != d) memcpy(d, s, isz);
        } else {
          memset(d, 0, isz); /* zero is all-zero bytes in every dtype */
        }
      }
    int i = n - 3;
    while (i >= 0 && ++idx[i] == sz[i]) idx[i--] = 0;
    if (i < 0) break;
  }
}

static kd_status band_check(const char *op, const kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  kd_status st = kdk__vw_check_cpu_or_meta(op, self);
  if (st) return st;
  if (kd_tensor_ndim(self) < 2)
    return kd_set_error(KD_EINVAL, "%s: input tensor must have at least 2 dimensions", op);
  return KD_OK;
}

static kd_status band(const char *op, kd_tensor *self, int64_t k, bool lower, kd_tensor **out) {
  if (out) *out = NULL;
  kd_status st = band_check(op, self);
  if (st) return st;
  if (!out) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  kd_tensor *r;
  if ((st = kd_tensor_empty(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_dtype(self),
                            kd_tensor_device(self), &r)))
    return st;
  if (!on_meta(self)) band_copy(self, r, k, lower);
  *out = r;
  return KD_OK;
}

static kd_status band_(const char *op, kd_tensor *self, int64_t k, bool lower) {
  kd_status st = band_check(op, self);
  if (st) return st;
  if ((st = kdk__vw_check_internal_overlap(self))) return st;
  if (!on_meta(self)) band_copy(self, self, k, lower);
  return KD_OK;
}

static kd_status band_out(const char *op, kd_tensor *self, int64_t k, bool lower, kd_tensor *out) {
  kd_status st = band_check(op, self);
  if (st) return st;
  if (!out) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  if ((st = kdk__vw_prepare_out(out, kd_tensor_ndim(self), kd_tensor_sizes(self),
                               kd_tensor_dtype(self), true, kd_tensor_device(self))))
    return st;
  if ((st = kdk__vw_check_internal_overlap(out))) return st;
  if (on_meta(out)) return KD_OK;
  kdk__vw_overlap o = kdk__vw_overlap_of(out, self);
  if (o == KDK__VW_OVERLAP_NO || (o == KDK__VW_OVERLAP_FULL && kd_tensor_storage_offset(out) ==
                                                                 kd_tensor_storage_offset(self))) {
    band_copy(self, out, k, lower);
    return KD_OK;
  }
  kd_tensor *tmp; /* out and self share bytes in another arrangement */
  if ((st = band(op, self, k, lower, &tmp))) return st;
  st = kd_tensor_copy_(out, tmp);
  kd_tensor_release(tmp);
  return st;
}

kd_status kdk_native_tril(kd_tensor *self, int64_t diagonal, kd_tensor **out) {
  return band("tril", self, diagonal, true, out);
}
kd_status kdk_native_tril_(kd_tensor *self, int64_t diagonal) {
  return band_("tril", self, diagonal, true);
}
kd_status kdk_native_tril_out(kd_tensor *self, int64_t diagonal, kd_tensor *out) {
  return band_out("tril", self, diagonal, true, out);
}
kd_status kdk_native_triu(kd_tensor *self, int64_t diagonal, kd_tensor **out) {
  return band("triu", self, diagonal, false, out);
}
kd_status kdk_native_triu_(kd_tensor *self, int64_t diagonal) {
  return band_("triu", self, diagonal, false);
}
kd_status kdk_native_triu_out(kd_tensor *self, int64_t diagonal, kd_tensor *out) {
  return band_out("triu", self, diagonal, false, out);
}

/* ---- index_select ------------------------------------------------------------ */

/* Element i of a 0- or 1-dim integer index tensor on cpu. */
static int64_t index_at(const kd_tensor *index, int64_t i) {
  const char *p = bytes_of(index);
  int64_t off = kd_tensor_ndim(index) ? i * kd_tensor_strides(index)[0] : 0;
  if (kd_tensor_dtype(index) == KD_INT32) {
    int32_t v;
    memcpy(&v, p + off * 4, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, p + off * 8, 8);
  return v;
}

/* Checks everything, sizes the result (sizes/ndim) and, on cpu, the index
 * values; *dim is wrapped. */
static kd_status index_select_check(kd_tensor *self, int64_t *dim, kd_tensor *index,
                                    int64_t *sizes, int *ndim) {
  if (!self || !index) return kd_set_error(KD_EINVAL, "index_select: NULL argument");
  kd_status st;
  if ((st = kdk__vw_check_cpu_or_meta("index_select", self))) return st;
  if ((st = kdk__vw_check_same_device(self, index))) return st;
  int n = kd_tensor_ndim(self);
  if ((st = kdk__vw_wrap_dim(*dim, n, dim))) return st;
  int64_t numel = kd_tensor_numel(index);
  if (kd_tensor_ndim(index) > 1)
    return kd_set_error(KD_ERANGE, "index_select(): Index is supposed to be a vector");
  if (n == 0 && numel != 1)
    return kd_set_error(KD_EINVAL,
                        "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                        (long long)numel);
  if (kd_tensor_dtype(index) != KD_INT64 && kd_tensor_dtype(index) != KD_INT32)
    return kd_set_error(KD_ETYPE, "index_select(): Expected dtype int32 or int64 for index");
  *ndim = n;
  memcpy(sizes, kd_tensor_sizes(self), (size_t)n * sizeof(int64_t));
  if (n > 0) sizes[*dim] = numel;
  if (on_meta(self)) return KD_OK;
  int64_t bound = n ? kd_tensor_sizes(self)[*dim] : 1;
  if (n > 1 && kd_tensor_numel(self) == 0 && numel > 0 && bound <= 0)
    return kd_set_error(KD_EINVAL, "index_select(): self indexing axis dim should be positive");
  for (int64_t i = 0; i < numel; i++) {
    int64_t v = index_at(index, i);
    if (v < 0 || v >= bound) return kd_set_error(KD_ERANGE, "index out of range in self");
  }
  return KD_OK;
}

static void index_select_write(const kd_tensor *self, int64_t dim, const kd_tensor *index,
                               kd_tensor *r) {
  int n = kd_tensor_ndim(self);
  size_t isz = kd_tensor_itemsize(self);
  /* Nothing to write: an empty result may have no storage (no pointer
   * arithmetic on NULL, even by zero). */
  if (kd_tensor_numel(r) == 0) return;
  if (n == 0) {
    memcpy(bytes_of(r), bytes_of(self), isz);
    return;
  }
  /* Every other dimension: one strided copy per selected slice. */
  int64_t sz[KD_MAX_DIMS], ss[KD_MAX_DIMS], ds[KD_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (i == dim) continue;
    sz[k] = kd_tensor_sizes(self)[i];
    ss[k] = kd_tensor_strides(self)[i];
    ds[k] = kd_tensor_strides(r)[i];
    k++;
  }
  int64_t numel = kd_tensor_numel(index);
  for (int64_t j = 0; j < numel; j++) {
    int64_t v = index_at(index, j);
    kdk__vw_strided_copy(k, sz, bytes_of(r) + j * kd_tensor_strides(r)[dim] * (int64_t)isz, ds,
                        bytes_of(self) + v * kd_tensor_strides(self)[dim] * (int64_t)isz, ss,
                        isz);
  }
}

kd_status kdk_native_index_select(kd_tensor *self, int64_t dim, kd_tensor *index,
                                  kd_tensor **out) {
  if (out) *out = NULL;
  if (!out) return kd_set_error(KD_EINVAL, "index_select: NULL argument");
  int64_t sizes[KD_MAX_DIMS];
  int ndim = 0;
  kd_status st = index_select_check(self, &dim, index, sizes, &ndim);
  if (st) return st;
  kd_tensor *r;
  if ((st = kd_tensor_empty(ndim, sizes, kd_tensor_dtype(self), kd_tensor_device(self), &r)))
    return st;
  if (!on_meta(self)) index_select_write(self, dim, index, r);
  *out = r;
  return KD_OK;
}

kd_status kdk_native_index_select_out(kd_tensor *self, int64_t dim, kd_tensor *index,
                                      kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "index_select.out: NULL argument");
  int64_t sizes[KD_MAX_DIMS];
  int ndim = 0;
  kd_status st = index_select_check(self, &dim, index, sizes, &ndim);
  if (st) return st;
  if (kd_tensor_dtype(out) != kd_tensor_dtype(self))
    return kd_set_error(KD_ETYPE, "index_select(): self and result must have the same scalar type");
  /* Overlap before the resize (a refused out stays as it was; PyTorch
   * refuses an expanded out= even when the resize would replace it) and
   * after. */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && (st = kdk__vw_prepare_out(out, ndim, sizes, kd_tensor_dtype(self), true,
                                              kd_tensor_device(self))))
      return st;
    if ((st = kdk__vw_check_internal_overlap(out)) ||
        (st = kdk__vw_check_no_overlap(out, self, false)) ||
        (st = kdk__vw_check_no_overlap(out, index, false)))
      return st;
  }
  if (on_meta(out)) return KD_OK;
  if (kdk__vw_overlap_of(out, self) == KDK__VW_OVERLAP_NO &&
      kdk__vw_overlap_of(out, index) == KDK__VW_OVERLAP_NO) {
    index_select_write(self, dim, index, out);
    return KD_OK;
  }
  kd_tensor *tmp;
  if ((st = kdk_native_index_select(self, dim, index, &tmp))) return st;
  st = kd_tensor_copy_(out, tmp);
  kd_tensor_release(tmp);
  return st;
}

/* ---- gather -------------------------------------------------------------------- */

/* Size of dimension i, a scalar counting as [1] (ensure_nonempty_size). */
static int64_t size_ne(const kd_tensor *t, int i) {
  return kd_tensor_ndim(t) ? kd_tensor_sizes(t)[i] : 1;
}
static int64_t stride_ne(const kd_tensor *t, int i) {
  return kd_tensor_ndim(t) ? kd_tensor_strides(t)[i] : 1;
}

/* Visits every position of index: fn-free, two passes (check, then write). */
static kd_status gather_run(const kd_tensor *self, int64_t dim, const kd_tensor *index,
                            kd_tensor *r) {
  int n = kd_tensor_ndim(index) ? kd_tensor_ndim(index) : 1;
  int64_t numel = kd_tensor_numel(index);
  if (numel == 0) return KD_OK;
  int64_t bound = size_ne(self, (int)dim);
  size_t isz = kd_tensor_itemsize(self);
  int64_t idx[KD_MAX_DIMS] = {0};
  const char *ib = bytes_of(index), *sb = bytes_of(self);
  char *rb = r ? bytes_of(r) : NULL;
  for (;;) {
    int64_t io = 0, so = 0, ro = 0;
    for (int i = 0; i < n; i++) {
      io += idx[i] * stride_ne(index, i);
      if (i != dim) so += idx[i] * stride_ne(self, i);
      if (r) ro += idx[i] * stride_ne(r, i);
    }
    int64_t v;
    memcpy(&v, ib + io * 8, 8);
    if (!r) {
      if (v < 0 || v >= bound)
        return kd_set_error(KD_ERANGE, "index %lld is out of bounds for dimension %lld with size %lld",
                            (long long)v, (long long)dim, (long long)bound);
    } else {
      so += v * stride_ne(self, (int)dim);
      memcpy(rb + ro * (int64_t)isz, sb + so * (int64_t)isz, isz);
    }
    int i = n - 1;
    while (i >= 0 && ++idx[i] == size_ne(index, i)) idx[i--] = 0;
    if (i < 0) break;
  }
  return KD_OK;
}

static kd_status gather_check(kd_tensor *self, int64_t *dim, kd_tensor *index) {
  if (!self || !index) return kd_set_error(KD_EINVAL, "gather: NULL argument");
  kd_status st;
  if ((st = kdk__vw_check_cpu_or_meta("gather", self))) return st;
  if ((st = kdk__vw_check_same_device(self, index))) return st;
  if ((st = kdk__vw_wrap_dim(*dim, kd_tensor_ndim(self), dim))) return st;
  if (kd_tensor_numel(index) == 0) return KD_OK;
  if (kd_tensor_dtype(index) != KD_INT64)
    return kd_set_error(KD_ETYPE, "gather(): Expected dtype int64 for index");
  int sd = kd_tensor_ndim(self) ? kd_tensor_ndim(self) : 1;
  int id = kd_tensor_ndim(index) ? kd_tensor_ndim(index) : 1;
  if (sd != id)
    return kd_set_error(KD_EINVAL,
                        "Index tensor must have the same number of dimensions as input tensor");
  for (int i = 0; i < sd; i++) {
    if (i == *dim) continue;
    if (size_ne(index, i) > size_ne(self, i)) {
      char a[256], b[256];
      return kd_set_error(KD_EINVAL,
                          "Size does not match at dimension %d expected index %s to be smaller "
                          "than self %s apart from dimension %lld",
                          i, kdk__fmt_ints(a, sizeof a, kd_tensor_sizes(index), kd_tensor_ndim(index)),
                          kdk__fmt_ints(b, sizeof b, kd_tensor_sizes(self), kd_tensor_ndim(self)),
                          (long long)*dim);
    }
  }
  if (on_meta(self)) return KD_OK;
  return gather_run(self, *dim, index, NULL); /* index values */
}

kd_status kdk_native_gather(kd_tensor *self, int64_t dim, kd_tensor *index, bool sparse_grad,
                            kd_tensor **out) {
  (void)sparse_grad; /* only the backward pass uses it */
  if (out) *out = NULL;
  if (!out) return kd_set_error(KD_EINVAL, "gather: NULL argument");
  kd_status st = gather_check(self, &dim, index);
  if (st) return st;
  kd_tensor *r;
  if ((st = kd_tensor_empty(kd_tensor_ndim(index), kd_tensor_sizes(index), kd_tensor_dtype(self),
                            kd_tensor_device(self), &r)))
    return st;
  if (!on_meta(self)) gather_run(self, dim, index, r);
  *out = r;
  return KD_OK;
}

kd_status kdk_native_gather_out(kd_tensor *self, int64_t dim, kd_tensor *index,
                                bool sparse_grad, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "gather.out: NULL argument");
  kd_status st;
  if ((st = gather_check(self, &dim, index))) return st;
  /* Overlap before the resize (a refused out stays as it was) and after. */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && ((st = kdk__vw_prepare_out(out, kd_tensor_ndim(index), kd_tensor_sizes(index),
                                               kd_tensor_dtype(self), true,
                                               kd_tensor_device(self))) ||
                      (st = kdk__vw_check_internal_overlap(out))))
      return st;
    if ((st = kdk__vw_check_no_overlap(out, self, false)) ||
        (st = kdk__vw_check_no_overlap(out, index, true)))
      return st;
  }
  if (on_meta(out)) return KD_OK;
  if (kdk__vw_overlap_of(out, self) == KDK__VW_OVERLAP_NO &&
      kdk__vw_overlap_of(out, index) == KDK__VW_OVERLAP_NO) {
    gather_run(self, dim, index, out);
    return KD_OK;
  }
  kd_tensor *tmp;
  if ((st = kdk_native_gather(self, dim, index, sparse_grad, &tmp))) return st;
  st = kd_tensor_copy_(out, tmp);
  kd_tensor_release(tmp);
  return st;
}
