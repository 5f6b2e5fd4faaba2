/*
 * views.c: view operators (view, reshape, transpose, permute, expand,
 * squeeze, unsqueeze, flatten, slice, select, narrow, t, contiguous) and the
 * helpers views.c and shape.c share. A view only computes a new geometry
 * (sizes, strides, storage offset) over self's storage, so one kernel serves
 * every device, meta included. Behaviour and messages follow PyTorch 1.13
 * (aten/src/ATen/native/TensorShape.cpp, ATen/InferSize.h,
 * ATen/TensorUtils.cpp). Prototypes and ownership rules: views.h.
 */
#include "native/views.h"

#include "core/checked.h"
#include "kd/memory.h"
#include "kd/ops/clone.h"
#include "kdk/native.h" /* the kit's (exported) declarations of these kernels */

#include <stdio.h>
#include <string.h>

/* ---- Shared helpers ------------------------------------------------------------ */

kd_status kdk__vw_check_list(const char *op, const char *what, kd_ints list) {
  if (list.size < 0 || list.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "%s: %s has %lld entries; expected 0 to %d", op, what,
                        (long long)list.size, KD_MAX_DIMS);
  if (list.size > 0 && !list.data)
    return kd_set_error(KD_EINVAL, "%s: %s has %lld entries but no data", op, what,
                        (long long)list.size);
  return KD_OK;
}

kd_status kdk__vw_format_strides(int ndim, const int64_t *sizes, kd_memory_format format,
                                int64_t *strides) {
  /* Dimension orders from the innermost outwards. */
  static const int nhwc[4] = {1, 3, 2, 0};
  static const int ndhwc[5] = {1, 4, 3, 2, 0};
  const int *order = NULL;
  switch (format) {
  case KD_MEMORY_FORMAT_CONTIGUOUS:
  case KD_MEMORY_FORMAT_PRESERVE:
    if (kd__contiguous_strides_overflow(ndim, sizes, strides)) {
      format = KD_MEMORY_FORMAT_CONTIGUOUS; /* what preserve_format computes here */
      goto overflow;
    }
    return KD_OK;
  case KD_MEMORY_FORMAT_CHANNELS_LAST:
    if (ndim != 4)
      return kd_set_error(KD_EINVAL, "required rank 4 tensor to use channels_last format");
    order = nhwc;
    break;
  case KD_MEMORY_FORMAT_CHANNELS_LAST_3D:
    if (ndim != 5)
      return kd_set_error(KD_EINVAL, "required rank 5 tensor to use channels_last_3d format");
    order = ndhwc;
    break;
  default:
    return kd_set_error(KD_EINVAL, "invalid memory format %d", (int)format);
  }
  int64_t s = 1;
  for (int k = 0; k < ndim; k++) {
    strides[order[k]] = s;
    if (k + 1 < ndim && __builtin_mul_overflow(s, sizes[order[k]] > 1 ? sizes[order[k]] : 1, &s))
      goto overflow;
  }
  return KD_OK;
overflow: {
  /* Sizes of a tensor whose spans fit can still have row-major strides
   * that do not (an expanded tensor: stride 0). */
  char buf[512];
  return kd_set_error(KD_EOVERFLOW, "the %s strides of sizes %s overflow int64",
                      kd_memory_format_name(format), kdk__fmt_ints(buf, sizeof buf, sizes, ndim));
}
}

bool kdk__vw_is_contiguous_as(const kd_tensor *t, kd_memory_format format) {
  static const int nhwc[4] = {1, 3, 2, 0};
  static const int ndhwc[5] = {1, 4, 3, 2, 0};
  int ndim = kd_tensor_ndim(t);
  const int64_t *sz = kd_tensor_sizes(t), *st = kd_tensor_strides(t);
  const int *order;
  if (format == KD_MEMORY_FORMAT_CHANNELS_LAST && ndim == 4)
    order = nhwc;
  else if (format == KD_MEMORY_FORMAT_CHANNELS_LAST_3D && ndim == 5)
    order = ndhwc;
  else if (format == KD_MEMORY_FORMAT_CHANNELS_LAST || format == KD_MEMORY_FORMAT_CHANNELS_LAST_3D)
    return false;
  else /* as PyTorch's compute_contiguous, a tensor without elements is contiguous */
    return kd_tensor_is_contiguous(t) || kd_tensor_numel(t) == 0;
  int64_t expected = 1;
  for (int k = 0; k < ndim; k++) {
    int d = order[k];
    if (sz[d] != 1) {
      if (st[d] != expected) return false;
      expected *= sz[d];
    }
  }
  return true;
}

bool kdk__vw_non_overlapping_and_dense(const kd_tensor *t) {
  int ndim = kd_tensor_ndim(t);
  const int64_t *sz = kd_tensor_sizes(t), *st = kd_tensor_strides(t);
  if (ndim == 1) return sz[0] < 2 || st[0] == 1;
  /* Dimensions by increasing stride; those of size < 2 last. */
  int perm[KD_MAX_DIMS];
  for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++) { /* insertion sort: stable, tiny */
    int p = perm[i], j = i;
    while (j > 0) {
      int q = perm[j - 1];
      bool p_before_q = sz[q] < 2 ? sz[p] >= 2 : (sz[p] >= 2 && st[p] < st[q]);
      if (!p_before_q) break;
      perm[j] = q;
      j--;
    }
    perm[j] = p;
  }
  int64_t require = 1;
  for (int i = 0; i < ndim; i++) {
    int64_t s = sz[perm[i]];
    if (s < 2) return true;
    if (st[perm[i]] != require) return false;
    require *= s;
  }
  return true;
}

kdk__vw_overlap kdk__vw_overlap_of(const kd_tensor *a, const kd_tensor *b) {
  if (a == b) return KDK__VW_OVERLAP_FULL;
  if (kd_tensor_numel(a) == 0 || kd_tensor_numel(b) == 0) return KDK__VW_OVERLAP_NO;
  if (!kd_tensor_shares_storage(a, b)) return KDK__VW_OVERLAP_NO;
  /* Byte ranges inside the common storage. */
  int64_t a_lo = kd_tensor_storage_offset(a) * (int64_t)kd_tensor_itemsize(a);
  int64_t b_lo = kd_tensor_storage_offset(b) * (int64_t)kd_tensor_itemsize(b);
  if (!kdk__vw_non_overlapping_and_dense(a) || !kdk__vw_non_overlapping_and_dense(b)) {
    /* Not dense: the spans may still be disjoint. */
    int64_t a_hi = a_lo + (int64_t)kd_tensor_itemsize(a), b_hi = b_lo + (int64_t)kd_tensor_itemsize(b);
    for (int i = 0; i < kd_tensor_ndim(a); i++)
      a_hi += (kd_tensor_sizes(a)[i] - 1) * kd_tensor_strides(a)[i] * (int64_t)kd_tensor_itemsize(a);
    for (int i = 0; i < kd_tensor_ndim(b); i++)
      b_hi += (kd_tensor_sizes(b)[i] - 1) * kd_tensor_strides(b)[i] * (int64_t)kd_tensor_itemsize(b);
    return a_lo < b_hi && b_lo < a_hi ? KDK__VW_OVERLAP_TOO_HARD : KDK__VW_OVERLAP_NO;
  }
  int64_t a_hi = a_lo + kd_tensor_numel(a) * (int64_t)kd_tensor_itemsize(a);
  int64_t b_hi = b_lo + kd_tensor_numel(b) * (int64_t)kd_tensor_itemsize(b);
  if (a_lo == b_lo && a_hi == b_hi && kd_tensor_ndim(a) == kd_tensor_ndim(b) &&
      !memcmp(kd_tensor_strides(a), kd_tensor_strides(b),
              (size_t)kd_tensor_ndim(a) * sizeof(int64_t)))
    return KDK__VW_OVERLAP_FULL;
  if (a_lo < b_hi && b_lo < a_hi) return KDK__VW_OVERLAP_PARTIAL;
  return KDK__VW_OVERLAP_NO;
}

kd_status kdk__vw_check_internal_overlap(const kd_tensor *out) {
  if (kd_tensor_numel(out) == 0) return KD_OK; /* empty: contiguous, as in PyTorch */
  for (int i = 0; i < kd_tensor_ndim(out); i++)
    if (kd_tensor_sizes(out)[i] > 1 && kd_tensor_strides(out)[i] == 0)
      return kd_set_error(KD_EINVAL,
                          "unsupported operation: more than one element of the written-to tensor "
                          "refers to a single memory location. Please clone() the tensor before "
                          "performing the operation.");
  return KD_OK;
}

kd_status kdk__vw_check_no_overlap(const kd_tensor *out, const kd_tensor *in, bool partial_only) {
  kdk__vw_overlap o = kdk__vw_overlap_of(out, in);
  if (o == KDK__VW_OVERLAP_PARTIAL || (!partial_only && o == KDK__VW_OVERLAP_FULL))
    return kd_set_error(KD_EINVAL,
                        "unsupported operation: some elements of the input tensor and the "
                        "written-to tensor refer to a single memory location. Please clone() the "
                        "tensor before performing the operation.");
  return KD_OK;
}

static bool same_sizes(int n, const int64_t *a, int m, const int64_t *b) {
  return n == m && (n == 0 || !memcmp(a, b, (size_t)n * sizeof(int64_t)));
}

kd_status kdk__vw_prepare_out(kd_tensor *out, int ndim, const int64_t *sizes, kd_dtype dtype,
                             bool check_dtype, kd_device device) {
  if (!kd_device_equal(kd_tensor_device(out), device)) {
    char want[48], got[48];
    kd_device_format(device, want, sizeof want);
    kd_device_format(kd_tensor_device(out), got, sizeof got);
    return kd_set_error(KD_EINVAL, "Expected out tensor to have device %s, but got %s instead",
                        want, got);
  }
  if (check_dtype && kd_tensor_dtype(out) != dtype)
    return kd_set_error(KD_ETYPE, "Expected out tensor to have dtype %s, but got %s instead",
                        kd_dtype_name(dtype), kd_dtype_name(kd_tensor_dtype(out)));
  if (same_sizes(kd_tensor_ndim(out), kd_tensor_sizes(out), ndim, sizes)) return KD_OK;
  if (kd_tensor_numel(out) != 0) {
    char had[256], want[256];
    kdk__fmt_ints(had, sizeof had, kd_tensor_sizes(out), kd_tensor_ndim(out));
    kdk__fmt_ints(want, sizeof want, sizes, ndim);
    kd_warn("An output with one or more elements was resized since it had shape %s, which does "
            "not match the required output shape %s. This behavior is deprecated, and in a "
            "future PyTorch release outputs will not be resized unless they have zero elements. "
            "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
            "with t.resize_(0).",
            had, want);
  }
  return kd_tensor_resize_(out, ndim, sizes, NULL);
}

void kdk__vw_strided_copy(int ndim, const int64_t *sizes, char *dst, const int64_t *dst_strides,
                         const char *src, const int64_t *src_strides, size_t itemsize) {
  for (int i = 0; i < ndim; i++)
    if (sizes[i] == 0) return;
  if (ndim == 0) {
    memcpy(dst, src, itemsize);
    return;
  }
  int64_t idx[KD_MAX_DIMS] = {0};
  int last = ndim - 1;
  int64_t n = sizes[last];
  int64_t ds = dst_strides[last] * (int64_t)itemsize, ss = src_strides[last] * (int64_t)itemsize;
  bool run = ds == (int64_t)itemsize && ss == (int64_t)itemsize;
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int i = 0; i < last; i++) {
      doff += idx[i] * dst_strides[i];
      soff += idx[i] * src_strides[i];
    }
    char *d = dst + doff * (int64_t)itemsize;
    const char *s = src + soff * (int64_t)itemsize;
    if (run) {
      memcpy(d, s, (size_t)n * itemsize);
    } else {
      for (int64_t j = 0; j < n; j++) memcpy(d + j * ds, s + j * ss, itemsize);
    }
    int i = last - 1;
    while (i >= 0 && ++idx[i] == sizes[i]) idx[i--] = 0;
    if (i < 0) break;
  }
}

kd_status kdk__vw_check_cpu_or_meta(const char *op, const kd_tensor *t) {
  kd_device_type dt = kd_tensor_device(t).type;
  if (dt != KD_DEVICE_CPU && dt != KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED, "%s: tensors on device '%s' are not supported (cpu and meta only)",
                        op, kd_device_type_name(dt));
  return KD_OK;
}

kd_status kdk__vw_check_same_device(const kd_tensor *a, const kd_tensor *b) {
  if (kd_device_equal(kd_tensor_device(a), kd_tensor_device(b))) return KD_OK;
  char da[48], db[48];
  kd_device_format(kd_tensor_device(a), da, sizeof da);
  kd_device_format(kd_tensor_device(b), db, sizeof db);
  return kd_set_error(KD_EINVAL,
                      "Expected all tensors to be on the same device, but found at least two "
                      "devices, %s and %s!",
                      da, db);
}

/* ---- Geometry ------------------------------------------------------------------ */

typedef struct geom {
  int ndim;
  int64_t sizes[KD_MAX_DIMS];
  int64_t strides[KD_MAX_DIMS];
  int64_t offset;
} geom;

static void geom_of(const kd_tensor *t, geom *g) {
  g->ndim = kd_tensor_ndim(t);
  for (int i = 0; i < g->ndim; i++) {
    g->sizes[i] = kd_tensor_sizes(t)[i];
    g->strides[i] = kd_tensor_strides(t)[i];
  }
  g->offset = kd_tensor_storage_offset(t);
}

/* A new view of self with geometry g; the caller owns *out. */
static kd_status view_of(kd_tensor *self, const geom *g, kd_tensor **out) {
  return kd_tensor_as_strided(self, g->ndim, g->sizes, g->strides, g->offset, out);
}

/* Inplace views keep the storage offset; only sizes and strides change (the
 * elements stay inside the storage, so resize_ never grows it). */
static kd_status restride(kd_tensor *self, const geom *g) {
  return kd_tensor_resize_(self, g->ndim, g->sizes, g->strides);
}

#define KD_VW_CHECK_SELF(op)                                                 \
  do {                                                                       \
    if (out) *out = NULL;                                                    \
    if (!self || !out) return kd_set_error(KD_EINVAL, op ": NULL argument"); \
  } while (0)

/* InferSize.h: one -1 inferred; KD_EINVAL with PyTorch's messages. */
static kd_status infer_size(kd_ints shape, int64_t numel, int64_t *res) {
  int64_t newsize = 1;
  int64_t infer = -1;
  bool overflow = false;
  for (int64_t i = 0; i < shape.size; i++) {
    int64_t s = shape.data[i];
    res[i] = s;
    if (s == -1) {
      if (infer >= 0) return kd_set_error(KD_EINVAL, "only one dimension can be inferred");
      infer = i;
    } else if (s >= 0) {
      if (__builtin_mul_overflow(newsize, s, &newsize)) overflow = true;
    } else {
      return kd_set_error(KD_EINVAL, "invalid shape dimension %lld", (long long)s);
    }
  }
  char buf[512];
  if (!overflow && (numel == newsize || (infer >= 0 && newsize > 0 && numel % newsize == 0))) {
    if (infer >= 0) {
      if (newsize == 0)
        return kd_set_error(KD_EINVAL,
                            "cannot reshape tensor of 0 elements into shape %s because the "
                            "unspecified dimension size -1 can be any value and is ambiguous",
                            kdk__fmt_ints(buf, sizeof buf, shape.data, shape.size));
      res[infer] = numel / newsize;
    }
    return KD_OK;
  }
  return kd_set_error(KD_EINVAL, "shape '%s' is invalid for input of size %lld",
                      kdk__fmt_ints(buf, sizeof buf, shape.data, shape.size),
                      (long long)numel);
}

/* TensorUtils.cpp computeStride: strides for viewing (oldshape, oldstride) as
 * newshape without copying (STRIDE_OK), or STRIDE_NONE when no such strides
 * exist, or STRIDE_OVERFLOW when the row-major strides a zero-element view
 * gets do not fit in int64 (PyTorch lets them wrap). */
enum { STRIDE_NONE = 0, STRIDE_OK = 1, STRIDE_OVERFLOW = -1 };
static int compute_stride(int on, const int64_t *oldshape, const int64_t *oldstride, int nn,
                          const int64_t *newshape, int64_t *newstride) {
  if (on == 0) {
    for (int i = 0; i < nn; i++) newstride[i] = 1;
    return STRIDE_OK;
  }
  int64_t numel = 1;
  for (int i = 0; i < on; i++) numel *= oldshape[i];
  if (numel == 0 && same_sizes(on, oldshape, nn, newshape)) {
    for (int i = 0; i < nn; i++) newstride[i] = oldstride[i];
    return STRIDE_OK;
  }
  if (numel == 0)
    return kd__contiguous_strides_overflow(nn, newshape, newstride) ? STRIDE_OVERFLOW : STRIDE_OK;
  int view_d = nn - 1;
  int64_t chunk_base_stride = oldstride[on - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = on - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return STRIDE_NONE;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1 ? STRIDE_OK : STRIDE_NONE;
}

/* The error for STRIDE_OVERFLOW. */
static kd_status stride_overflow(const char *op, const geom *g) {
  char buf[512];
  return kd_set_error(KD_EOVERFLOW,
                      "%s: the strides of a zero-element view with shape %s overflow int64", op,
                      kdk__fmt_ints(buf, sizeof buf, g->sizes, g->ndim));
}

/* ---- view, reshape ----------------------------------------------------------- */

kd_status kdk_native_view(kd_tensor *self, kd_ints size, kd_tensor **out) {
  KD_VW_CHECK_SELF("view");
  kd_status st = kdk__vw_check_list("view", "size", size);
  if (st) return st;
  geom g;
  g.ndim = (int)size.size;
  if ((st = infer_size(size, kd_tensor_numel(self), g.sizes))) return st;
  int cs = compute_stride(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_strides(self),
                          g.ndim, g.sizes, g.strides);
  if (cs == STRIDE_OVERFLOW) return stride_overflow("view", &g);
  if (cs == STRIDE_NONE)
    return kd_set_error(KD_EINVAL,
                        "view size is not compatible with input tensor's size and stride (at "
                        "least one dimension spans across two contiguous subspaces). Use "
                        ".reshape(...) instead.");
  g.offset = kd_tensor_storage_offset(self);
  return view_of(self, &g, out);
}

kd_status kdk_native_view_as(kd_tensor *self, kd_tensor *other, kd_tensor **out) {
  KD_VW_CHECK_SELF("view_as");
  if (!other) return kd_set_error(KD_EINVAL, "view_as: NULL argument");
  kd_ints size = {kd_tensor_sizes(other), kd_tensor_ndim(other)};
  return kdk_native_view(self, size, out);
}

/* The ScalarType names PyTorch prints ("Float"). */
static const char *pt_dtype_name(kd_dtype dt) {
  static const char *const names[KD_DTYPE_COUNT] = {
      "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double",
      "ComplexFloat", "ComplexDouble"};
  return kd_dtype_valid(dt) ? names[dt] : "Undefined";
}

/* The dispatch key names PyTorch's toString() prints ("CPU" in "CPUFloatType"). */
static const char *pt_backend_name(kd_device_type type) {
  switch (type) {
  case KD_DEVICE_CPU: return "CPU";
  case KD_DEVICE_META: return "Meta";
  case KD_DEVICE_CUDA: return "CUDA";
  default: return kd_device_type_name(type);
  }
}

kd_status kdk_native_view_dtype(kd_tensor *self, kd_dtype dtype, kd_tensor **out) {
  KD_VW_CHECK_SELF("view.dtype");
  if (!kd_dtype_valid(dtype))
    return kd_set_error(KD_EINVAL, "view.dtype: invalid dtype %d", (int)dtype);
  kd_dtype from = kd_tensor_dtype(self);
  geom g;
  geom_of(self, &g);
  if (from == dtype) return view_of(self, &g, out); /* a new alias, as in PyTorch */
  int64_t old_size = (int64_t)kd_dtype_size(from), new_size = (int64_t)kd_dtype_size(dtype);
  const char *a = pt_dtype_name(from), *b = pt_dtype_name(dtype);
  int last = g.ndim - 1;
  if (old_size != new_size) {
    if (g.ndim == 0)
      return kd_set_error(KD_EINVAL,
                          "self.dim() cannot be 0 to view %s as %s (different element sizes)", a,
                          b);
    if (g.strides[last] != 1)
      return kd_set_error(KD_EINVAL,
                          "self.stride(-1) must be 1 to view %s as %s (different element sizes), "
                          "but got %lld",
                          a, b, (long long)g.strides[last]);
  }
  if (old_size > new_size) { /* smaller elements: the last dimension grows */
    int64_t r = old_size / new_size;
    for (int i = 0; i < last; i++) g.strides[i] *= r;
    g.sizes[last] *= r;
    g.offset *= r;
  } else if (old_size < new_size) {
    int64_t r = new_size / old_size;
    if (g.sizes[last] % r)
      return kd_set_error(KD_EINVAL,
                          "self.size(-1) must be divisible by %lld to view %s as %s (different "
                          "element sizes), but got %lld",
                          (long long)r, a, b, (long long)g.sizes[last]);
    if (g.offset % r)
      return kd_set_error(KD_EINVAL,
                          "self.storage_offset() must be divisible by %lld to view %s as %s "
                          "(different element sizes), but got %lld",
                          (long long)r, a, b, (long long)g.offset);
    for (int i = 0; i < last; i++)
      if (g.strides[i] % r)
        return kd_set_error(KD_EINVAL,
                            "self.stride(%d) must be divisible by %lld to view %s as %s "
                            "(different element sizes), but got %lld",
                            i, (long long)r, a, b, (long long)g.strides[i]);
    for (int i = 0; i < last; i++) g.strides[i] /= r;
    g.sizes[last] /= r;
    g.offset /= r;
  }
  return kd_tensor_as_strided_dtype(self, dtype, g.ndim, g.sizes, g.strides, g.offset, out);
}

kd_status kdk_native_reshape(kd_tensor *self, kd_ints shape, kd_tensor **out) {
  KD_VW_CHECK_SELF("reshape");
  kd_status st = kdk__vw_check_list("reshape", "shape", shape);
  if (st) return st;
  geom g;
  g.ndim = (int)shape.size;
  if ((st = infer_size(shape, kd_tensor_numel(self), g.sizes))) return st;
  int how = compute_stride(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_strides(self),
                           g.ndim, g.sizes, g.strides);
  if (how == STRIDE_OVERFLOW) return stride_overflow("reshape", &g);
  if (how == STRIDE_OK) {
    g.offset = kd_tensor_storage_offset(self);
    return view_of(self, &g, out);
  }
  /* No view exists: a contiguous copy with the new sizes. Off the cpu and
   * meta, the dispatched clone makes it (self's backend copies), viewed with
   * the new sizes. */
  kd_device_type dt = kd_tensor_device(self).type;
  if (dt != KD_DEVICE_CPU && dt != KD_DEVICE_META) {
    kd_memory_format mf = KD_MEMORY_FORMAT_CONTIGUOUS;
    kd_tensor *c;
    if ((st = kd_clone(self, &mf, &c))) return st;
    geom_of(c, &g);
    g.ndim = (int)shape.size;
    if ((st = infer_size(shape, kd_tensor_numel(self), g.sizes)) ||
        (st = kdk__vw_format_strides(g.ndim, g.sizes, KD_MEMORY_FORMAT_CONTIGUOUS, g.strides))) {
      kd_tensor_release(c);
      return st;
    }
    st = view_of(c, &g, out);
    kd_tensor_release(c);
    return st;
  }
  kd_tensor *r;
  if ((st = kd_tensor_empty(g.ndim, g.sizes, kd_tensor_dtype(self), kd_tensor_device(self), &r)))
    return st;
  if (kd_tensor_device(self).type == KD_DEVICE_CPU) {
    /* Same element order: copy self into a view of r with self's sizes. */
    int64_t cs[KD_MAX_DIMS];
    kdk__vw_format_strides(kd_tensor_ndim(self), kd_tensor_sizes(self),
                          KD_MEMORY_FORMAT_CONTIGUOUS, cs);
    kdk__vw_strided_copy(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_data(r), cs,
                        kd_tensor_data(self), kd_tensor_strides(self), kd_tensor_itemsize(self));
  }
  *out = r;
  return KD_OK;
}

kd_status kdk_native_reshape_as(kd_tensor *self, kd_tensor *other, kd_tensor **out) {
  KD_VW_CHECK_SELF("reshape_as");
  if (!other) return kd_set_error(KD_EINVAL, "reshape_as: NULL argument");
  kd_ints shape = {kd_tensor_sizes(other), kd_tensor_ndim(other)};
  return kdk_native_reshape(self, shape, out);
}

/* ---- transpose, t, permute ---------------------------------------------------- */

static kd_status transpose_geom(const kd_tensor *self, int64_t dim0, int64_t dim1, geom *g) {
  int64_t d0 = 0, d1 = 0;
  kd_status st;
  if ((st = kdk__vw_wrap_dim(dim0, kd_tensor_ndim(self), &d0))) return st;
  if ((st = kdk__vw_wrap_dim(dim1, kd_tensor_ndim(self), &d1))) return st;
  geom_of(self, g);
  if (g->ndim == 0) return KD_OK; /* dims 0 / -1 of a scalar: itself */
  int64_t s = g->sizes[d0], t = g->strides[d0];
  g->sizes[d0] = g->sizes[d1];
  g->strides[d0] = g->strides[d1];
  g->sizes[d1] = s;
  g->strides[d1] = t;
  return KD_OK;
}

kd_status kdk_native_transpose(kd_tensor *self, int64_t dim0, int64_t dim1, kd_tensor **out) {
  KD_VW_CHECK_SELF("transpose");
  geom g;
  kd_status st = transpose_geom(self, dim0, dim1, &g);
  return st ? st : view_of(self, &g, out);
}

kd_status kdk_native_transpose_(kd_tensor *self, int64_t dim0, int64_t dim1) {
  if (!self) return kd_set_error(KD_EINVAL, "transpose_: NULL argument");
  geom g;
  kd_status st = transpose_geom(self, dim0, dim1, &g);
  return st ? st : restride(self, &g);
}

static kd_status check_t(const kd_tensor *self, const char *fn) {
  if (kd_tensor_ndim(self) > 2)
    return kd_set_error(KD_EINVAL, "%s expects a tensor with <= 2 dimensions, but self is %dD",
                        fn, kd_tensor_ndim(self));
  return KD_OK;
}

kd_status kdk_native_t(kd_tensor *self, kd_tensor **out) {
  KD_VW_CHECK_SELF("t");
  kd_status st = check_t(self, "t()");
  return st ? st : kdk_native_transpose(self, 0, kd_tensor_ndim(self) < 2 ? 0 : 1, out);
}

kd_status kdk_native_t_(kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "t_: NULL argument");
  kd_status st = check_t(self, "t_()");
  return st ? st : kdk_native_transpose_(self, 0, kd_tensor_ndim(self) < 2 ? 0 : 1);
}

kd_status kdk_native_permute(kd_tensor *self, kd_ints dims, kd_tensor **out) {
  KD_VW_CHECK_SELF("permute");
  kd_status st = kdk__vw_check_list("permute", "dims", dims);
  if (st) return st;
  int n = kd_tensor_ndim(self);
  if (dims.size != n) return kd_set_error(KD_EINVAL, "number of dims don't match in permute");
  geom g;
  geom_of(self, &g);
  bool seen[KD_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    int64_t d = 0;
    if ((st = kdk__vw_wrap_dim(dims.data[i], n, &d))) return st;
    if (seen[d]) return kd_set_error(KD_EINVAL, "repeated dim in permute");
    seen[d] = true;
    g.sizes[i] = kd_tensor_sizes(self)[d];
    g.strides[i] = kd_tensor_strides(self)[d];
  }
  return view_of(self, &g, out);
}

/* ---- expand ------------------------------------------------------------------ */

kd_status kdk_native_expand(kd_tensor *self, kd_ints size, bool implicit, kd_tensor **out) {
  (void)implicit; /* only autograd cares */
  KD_VW_CHECK_SELF("expand");
  kd_status st = kdk__vw_check_list("expand", "size", size);
  if (st) return st;
  int tdim = kd_tensor_ndim(self), ndim = (int)size.size;
  const int64_t *tsz = kd_tensor_sizes(self), *tst = kd_tensor_strides(self);
  char b1[256], b2[256];
  if (ndim < tdim)
    return kd_set_error(KD_EINVAL,
                        "expand(%s%sType{%s}, size=%s): the number of sizes provided (%d) must be "
                        "greater or equal to the number of dimensions in the tensor (%d)",
                        pt_backend_name(kd_tensor_device(self).type),
                        pt_dtype_name(kd_tensor_dtype(self)),
                        kdk__fmt_ints(b1, sizeof b1, tsz, tdim),
                        kdk__fmt_ints(b2, sizeof b2, size.data, size.size), ndim, tdim);
  geom g;
  g.ndim = ndim;
  g.offset = kd_tensor_storage_offset(self);
  for (int i = ndim - 1; i >= 0; i--) {
    int dim = tdim - (ndim - i);
    int64_t s = dim >= 0 ? tsz[dim] : 1;
    int64_t stride = 1;
    bool wrapped = false; /* a zero-element tensor's size * stride need not fit */
    if (dim >= 0)
      stride = tst[dim];
    else if (i + 1 < ndim)
      wrapped = kd__mul_overflow_i64(g.sizes[i + 1], g.strides[i + 1], &stride);
    int64_t target = size.data[i];
    if (target == -1) {
      if (dim < 0)
        return kd_set_error(KD_EINVAL,
                            "The expanded size of the tensor (-1) isn't allowed in a leading, "
                            "non-existing dimension %d",
                            i);
      target = s;
    }
    if (target < 0)
      return kd_set_error(KD_EINVAL,
                          "The expanded size of the tensor (%lld) isn't allowed: sizes must be "
                          "non-negative (or -1 to keep an existing one)",
                          (long long)target);
    if (s != target) {
      if (s != 1)
        return kd_set_error(KD_EINVAL,
                            "The expanded size of the tensor (%lld) must match the existing size "
                            "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                            "sizes: %s",
                            (long long)target, (long long)s, i,
                            kdk__fmt_ints(b2, sizeof b2, size.data, size.size),
                            kdk__fmt_ints(b1, sizeof b1, tsz, tdim));
      s = target;
      stride = 0;
      wrapped = false;
    }
    if (wrapped)
      return kd_set_error(KD_EOVERFLOW, "expand: the stride of new dimension %d overflows int64",
                          i);
    g.sizes[i] = s;
    g.strides[i] = stride;
  }
  return view_of(self, &g, out);
}

kd_status kdk_native_expand_as(kd_tensor *self, kd_tensor *other, kd_tensor **out) {
  KD_VW_CHECK_SELF("expand_as");
  if (!other) return kd_set_error(KD_EINVAL, "expand_as: NULL argument");
  kd_ints size = {kd_tensor_sizes(other), kd_tensor_ndim(other)};
  return kdk_native_expand(self, size, false, out);
}

/* ---- squeeze, unsqueeze ---------------------------------------------------- */

/* dim < 0: every size-1 dimension. */
static kd_status squeeze_geom(const kd_tensor *self, bool all, int64_t dim, geom *g) {
  geom_of(self, g);
  int n = g->ndim;
  int64_t d = -1;
  if (!all) {
    kd_status st = kdk__vw_wrap_dim(dim, n, &d);
    if (st) return st;
    if (n == 0 || g->sizes[d] != 1) return KD_OK; /* nothing to squeeze */
  }
  int k = 0;
  for (int i = 0; i < n; i++) {
    bool drop = all ? g->sizes[i] == 1 : i == d;
    if (drop) continue;
    g->sizes[k] = g->sizes[i];
    g->strides[k] = g->strides[i];
    k++;
  }
  g->ndim = k;
  return KD_OK;
}

kd_status kdk_native_squeeze(kd_tensor *self, kd_tensor **out) {
  KD_VW_CHECK_SELF("squeeze");
  geom g;
  kd_status st = squeeze_geom(self, true, 0, &g);
  return st ? st : view_of(self, &g, out);
}

kd_status kdk_native_squeeze_dim(kd_tensor *self, int64_t dim, kd_tensor **out) {
  KD_VW_CHECK_SELF("squeeze");
  geom g;
  kd_status st = squeeze_geom(self, false, dim, &g);
  return st ? st : view_of(self, &g, out);
}

kd_status kdk_native_squeeze_(kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "squeeze_: NULL argument");
  geom g;
  kd_status st = squeeze_geom(self, true, 0, &g);
  return st ? st : restride(self, &g);
}

kd_status kdk_native_squeeze_dim_(kd_tensor *self, int64_t dim) {
  if (!self) return kd_set_error(KD_EINVAL, "squeeze_: NULL argument");
  geom g;
  kd_status st = squeeze_geom(self, false, dim, &g);
  return st ? st : restride(self, &g);
}

static kd_status unsqueeze_geom(const kd_tensor *self, int64_t dim, geom *g) {
  geom_of(self, g);
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, g->ndim + 1, &d);
  if (st) return st;
  if (g->ndim >= KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "unsqueeze: a tensor has at most %d dimensions", KD_MAX_DIMS);
  int64_t stride = 1;
  if (d < g->ndim && kd__mul_overflow_i64(g->sizes[d], g->strides[d], &stride))
    return kd_set_error(KD_EOVERFLOW,
                        "unsqueeze: the stride of new dimension %lld (size %lld * stride %lld) "
                        "overflows int64",
                        (long long)d, (long long)g->sizes[d], (long long)g->strides[d]);
  for (int i = g->ndim; i > d; i--) {
    g->sizes[i] = g->sizes[i - 1];
    g->strides[i] = g->strides[i - 1];
  }
  g->sizes[d] = 1;
  g->strides[d] = stride;
  g->ndim++;
  return KD_OK;
}

kd_status kdk_native_unsqueeze(kd_tensor *self, int64_t dim, kd_tensor **out) {
  KD_VW_CHECK_SELF("unsqueeze");
  geom g;
  kd_status st = unsqueeze_geom(self, dim, &g);
  return st ? st : view_of(self, &g, out);
}

kd_status kdk_native_unsqueeze_(kd_tensor *self, int64_t dim) {
  if (!self) return kd_set_error(KD_EINVAL, "unsqueeze_: NULL argument");
  geom g;
  kd_status st = unsqueeze_geom(self, dim, &g);
  return st ? st : restride(self, &g);
}

/* ---- flatten ------------------------------------------------------------------ */

kd_status kdk_native_flatten_using_ints(kd_tensor *self, int64_t start_dim, int64_t end_dim,
                                        kd_tensor **out) {
  KD_VW_CHECK_SELF("flatten");
  int n = kd_tensor_ndim(self);
  int64_t s = 0, e = 0;
  kd_status st;
  if ((st = kdk__vw_wrap_dim(start_dim, n, &s))) return st;
  if ((st = kdk__vw_wrap_dim(end_dim, n, &e))) return st;
  if (s > e)
    return kd_set_error(KD_EINVAL,
                        "flatten() has invalid args: start_dim cannot come after end_dim");
  int64_t shape[KD_MAX_DIMS];
  if (n == 0) {
    shape[0] = 1;
    return kdk_native_reshape(self, (kd_ints){shape, 1}, out);
  }
  if (s == e) { /* PyTorch returns self itself */
    kd_tensor_retain(self);
    *out = self;
    return KD_OK;
  }
  const int64_t *sz = kd_tensor_sizes(self);
  int k = 0;
  for (int64_t i = 0; i < s; i++) shape[k++] = sz[i];
  int64_t numel = 1;
  if (kd__numel_overflow((int)(e - s + 1), sz + s, &numel))
    return kd_set_error(KD_EOVERFLOW,
                        "flatten: the size of dimensions %lld to %lld flattened overflows int64",
                        (long long)s, (long long)e);
  shape[k++] = numel;
  for (int64_t i = e + 1; i < n; i++) shape[k++] = sz[i];
  return kdk_native_reshape(self, (kd_ints){shape, k}, out);
}

/* ---- slice, select, narrow ------------------------------------------------ */

kd_status kdk_native_slice(kd_tensor *self, int64_t dim, const int64_t *start,
                           const int64_t *end, int64_t step, kd_tensor **out) {
  KD_VW_CHECK_SELF("slice");
  if (kd_tensor_ndim(self) == 0)
    return kd_set_error(KD_ERANGE, "slice() cannot be applied to a 0-dim tensor.");
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, kd_tensor_ndim(self), &d);
  if (st) return st;
  if (step <= 0) return kd_set_error(KD_EINVAL, "slice step must be positive");
  geom g;
  geom_of(self, &g);
  int64_t size = g.sizes[d];
  int64_t lo = start ? *start : 0, hi = end ? *end : INT64_MAX;
  if (lo < 0) lo += size;
  if (hi < 0) hi += size;
  if (lo < 0)
    lo = 0;
  else if (lo >= size)
    lo = size;
  if (hi < lo)
    hi = lo;
  else if (hi >= size)
    hi = size;
  g.offset += lo * g.strides[d];
  g.sizes[d] = hi == lo ? 0 : (hi - lo - 1) / step + 1; /* rounded up, without overflow */
  int64_t stride, bytes;
  /* An overflow, of the stride or of the byte stride every tensor's must fit
   * in (docs/ARCHITECTURE.md, "Foreign geometry"), only happens when at most
   * one element remains, whose stride reaches nothing: it keeps self's. */
  if (__builtin_mul_overflow(g.strides[d], step, &stride) ||
      __builtin_mul_overflow(stride, (int64_t)kd_tensor_itemsize(self), &bytes))
    stride = g.strides[d];
  g.strides[d] = stride;
  return view_of(self, &g, out);
}

kd_status kdk_native_select(kd_tensor *self, int64_t dim, int64_t index, kd_tensor **out) {
  KD_VW_CHECK_SELF("select");
  int n = kd_tensor_ndim(self);
  if (n == 0) return kd_set_error(KD_ERANGE, "select() cannot be applied to a 0-dim tensor.");
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, n, &d);
  if (st) return st;
  int64_t size = kd_tensor_sizes(self)[d];
  if (index < -size || index >= size) {
    char buf[256];
    return kd_set_error(KD_ERANGE,
                        "select(): index %lld out of range for tensor of size %s at dimension "
                        "%lld",
                        (long long)index, kdk__fmt_ints(buf, sizeof buf, kd_tensor_sizes(self), n),
                        (long long)d);
  }
  if (index < 0) index += size;
  geom g;
  geom_of(self, &g);
  g.offset += index * g.strides[d];
  for (int i = (int)d; i < n - 1; i++) {
    g.sizes[i] = g.sizes[i + 1];
    g.strides[i] = g.strides[i + 1];
  }
  g.ndim--;
  return view_of(self, &g, out);
}

kd_status kdk_native_narrow(kd_tensor *self, int64_t dim, int64_t start, int64_t length,
                            kd_tensor **out) {
  KD_VW_CHECK_SELF("narrow");
  int n = kd_tensor_ndim(self);
  if (n == 0) return kd_set_error(KD_EINVAL, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, n, &d);
  if (st) return st;
  int64_t cur = kd_tensor_sizes(self)[d];
  /* start == cur is a valid start (an empty result), not a valid index. */
  if (start != cur && (st = kdk__vw_wrap_dim(start, cur, &start))) return st;
  if (length < 0 || start > cur - length)
    return kd_set_error(KD_EINVAL, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                        (long long)start, (long long)length, (long long)cur);
  int64_t end = start + length;
  return kdk_native_slice(self, d, &start, &end, 1, out);
}

/* ---- Tensor[] results: unbind, split, chunk ------------------------------------ */

/* A list of n NULLs the caller fills (kd_tensor_list_free gives it back). */
static kd_status list_alloc(const char *op, int64_t n, kd_tensor_list *out) {
  *out = (kd_tensor_list){NULL, 0};
  if (n == 0) return KD_OK;
  kd_tensor **data = kd_host_calloc((size_t)n, sizeof *data);
  if (!data) return kd_set_error(KD_ENOMEM, "%s: out of memory for a list of %lld tensors", op, (long long)n);
  *out = (kd_tensor_list){data, n};
  return KD_OK;
}

kd_status kdk_native_unbind(kd_tensor *self, int64_t dim, kd_tensor_list *out) {
  if (out) *out = (kd_tensor_list){NULL, 0};
  if (!self || !out) return kd_set_error(KD_EINVAL, "unbind: NULL argument");
  int n = kd_tensor_ndim(self);
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, n, &d);
  if (st) return st;
  if (n == 0) return kd_set_error(KD_ERANGE, "Dimension specified as 0 but tensor has no dimensions");
  int64_t size = kd_tensor_sizes(self)[d];
  if ((st = list_alloc("unbind", size, out))) return st;
  for (int64_t i = 0; i < size && !st; i++) st = kdk_native_select(self, d, i, &out->data[i]);
  if (st) kd_tensor_list_free(out);
  return st;
}

kd_status kdk_native_split(kd_tensor *self, int64_t split_size, int64_t dim, kd_tensor_list *out) {
  if (out) *out = (kd_tensor_list){NULL, 0};
  if (!self || !out) return kd_set_error(KD_EINVAL, "split: NULL argument");
  int n = kd_tensor_ndim(self);
  if (n == 0) return kd_set_error(KD_ERANGE, "split expects at least a 1-dimensional tensor");
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, n, &d);
  if (st) return st;
  if (split_size < 0)
    return kd_set_error(KD_EINVAL, "split expects split_size be non-negative, but got split_size=%lld",
                        (long long)split_size);
  int64_t dim_size = kd_tensor_sizes(self)[d];
  if (split_size == 0 && dim_size != 0)
    return kd_set_error(KD_EINVAL,
                        "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                        (long long)dim_size);
  /* PyTorch: ceil(dim_size / split_size) pieces, at least one; the last one
   * holds what remains. */
  int64_t pieces = split_size ? dim_size / split_size + (dim_size % split_size != 0) : 1;
  if (pieces < 1) pieces = 1;
  int64_t last = dim_size - split_size * (pieces - 1);
  if ((st = list_alloc("split", pieces, out))) return st;
  for (int64_t i = 0; i < pieces && !st; i++) {
    int64_t start = i * split_size, end = start + (i == pieces - 1 ? last : split_size);
    st = kdk_native_slice(self, d, &start, &end, 1, &out->data[i]);
  }
  if (st) kd_tensor_list_free(out);
  return st;
}

kd_status kdk_native_chunk(kd_tensor *self, int64_t chunks, int64_t dim, kd_tensor_list *out) {
  if (out) *out = (kd_tensor_list){NULL, 0};
  if (!self || !out) return kd_set_error(KD_EINVAL, "chunk: NULL argument");
  int n = kd_tensor_ndim(self);
  if (n == 0) return kd_set_error(KD_ERANGE, "chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0)
    return kd_set_error(KD_EINVAL, "chunk expects `chunks` to be greater than 0, got: %lld",
                        (long long)chunks);
  int64_t d = 0;
  kd_status st = kdk__vw_wrap_dim(dim, n, &d);
  if (st) return st;
  int64_t dim_size = kd_tensor_sizes(self)[d];
  int64_t split_size = dim_size / chunks + (dim_size % chunks != 0);
  /* PyTorch: an empty dimension with several chunks gives as many empty
   * pieces (split_size 0 would give one). */
  if (split_size == 0 && dim_size == 0) {
    if ((st = list_alloc("chunk", chunks, out))) return st;
    for (int64_t i = 0; i < chunks && !st; i++) {
      int64_t zero = 0;
      st = kdk_native_slice(self, d, &zero, &zero, 1, &out->data[i]);
    }
    if (st) kd_tensor_list_free(out);
    return st;
  }
  return kdk_native_split(self, split_size, d, out);
}

kd_status kdk_native_narrow_Tensor(kd_tensor *self, int64_t dim, kd_tensor *start,
                                   int64_t length, kd_tensor **out) {
  KD_VW_CHECK_SELF("narrow");
  if (!start) return kd_set_error(KD_EINVAL, "narrow: NULL argument");
  if (kd_tensor_ndim(start) != 0 || !kd_dtype_is_integral(kd_tensor_dtype(start), false))
    return kd_set_error(KD_EINVAL, "start must be an 0-dim integral Tensor.");
  kd_scalar v;
  kd_status st = kd_tensor_item(start, &v);
  if (st) return st;
  return kdk_native_narrow(self, dim, kd_scalar_to_int64(&v), length, out);
}

/* ---- contiguous ----------------------------------------------------------------- */

kd_status kdk_native_contiguous(kd_tensor *self, kd_memory_format memory_format,
                                kd_tensor **out) {
  KD_VW_CHECK_SELF("contiguous");
  if (kdk__vw_is_contiguous_as(self, memory_format)) { /* PyTorch returns self itself */
    kd_tensor_retain(self);
    *out = self;
    return KD_OK;
  }
  if (memory_format == KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EINVAL,
                        "preserve memory format is unsupported by the contiguous operator");
  /* On the cpu and meta the clone kernel directly (no second dispatch);
   * elsewhere the dispatched clone: self's backend copies. */
  kd_device_type dt = kd_tensor_device(self).type;
  if (dt == KD_DEVICE_CPU || dt == KD_DEVICE_META) return kdk_native_clone(self, &memory_format, out);
  return kd_clone(self, &memory_format, out);
}
