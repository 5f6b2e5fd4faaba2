/*
 * copy.c: fill_, zero_, copy_, _to_copy and to.dtype (copy.h).
 *
 * fill_ and zero_ write through the fill stub (ops/src/fill.h); copy_ and
 * _to_copy build on the core's kd_tensor_copy_, which converts dtypes,
 * broadcasts and handles any strides and overlap between source and
 * destination. Behaviour and messages follow PyTorch 1.13.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "iter.h"
#include "native/copy.h"

#include "_to_copy_native.h"
#include "copy_native.h"
#include "fill_native.h"
#include "kd/ops/_to_copy.h"
#include "kd/ops/copy.h"
#include "kd/ops/empty_strided.h"
#include "native/factories.h"
#include "to_native.h"
#include "zero_native.h"

/* ---- fill_, zero_ -------------------------------------------------------------- */

static kd_status fill(const char *op, kd_tensor *self, const kd_scalar *value) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL: expected a tensor", op);
  if (!value) return kd_set_error(KD_EINVAL, "%s: value is NULL: expected a scalar", op);
  kd_device_type type = kd_tensor_device(self).type;
  if (type == KD_DEVICE_META) return KD_OK; /* nothing to write */
  kdk_fill_fn *fn = KDK_STUB_FOR(fill_stub, type, op);
  if (!fn) return KD_ENOKERNEL;
  kd_status st = fn(self, value);
  return st ? kdk__error_with_op(op, st) : KD_OK;
}

kd_status kdk_native_fill_scalar_(kd_tensor *self, const kd_scalar *value) {
  return fill("fill_", self, value);
}

kd_status kdk_native_fill_tensor_(kd_tensor *self, kd_tensor *value) {
  if (!self || !value)
    return kd_set_error(KD_EINVAL, "fill_: %s is NULL: expected a tensor", self ? "value" : "self");
  if (kd_tensor_ndim(value) != 0)
    return kd_set_error(KD_EINVAL,
                        "fill_ only supports 0-dimension value tensor but got tensor with %d "
                        "dimensions.",
                        kd_tensor_ndim(value));
  /* A meta self needs no value (PyTorch's fill_meta_ checks the rank only). */
  if (kd_tensor_device(self).type == KD_DEVICE_META) return KD_OK;
  kd_scalar v;
  kd_status st = kd_tensor_item(value, &v);
  if (st) return kdk__error_with_op("fill_", st);
  return fill("fill_", self, &v);
}

kd_status kdk_native_zero_(kd_tensor *self) {
  kd_scalar zero = kd_scalar_int(0);
  return fill("zero_", self, &zero);
}

/* ---- copy_ ----------------------------------------------------------------------- */

/* The same tensor: storage, offset, sizes, strides and dtype. */
static bool same_tensor(const kd_tensor *a, const kd_tensor *b) {
  if (a == b) return true;
  if (kd_tensor_storage(a) != kd_tensor_storage(b) || kd_tensor_dtype(a) != kd_tensor_dtype(b) ||
      kd_tensor_storage_offset(a) != kd_tensor_storage_offset(b) ||
      kd_tensor_ndim(a) != kd_tensor_ndim(b))
    return false;
  int n = kd_tensor_ndim(a);
  return !memcmp(kd_tensor_sizes(a), kd_tensor_sizes(b), (size_t)n * sizeof(int64_t)) &&
         !memcmp(kd_tensor_strides(a), kd_tensor_strides(b), (size_t)n * sizeof(int64_t));
}

kd_status kdk_native_copy_(kd_tensor *self, kd_tensor *src, bool non_blocking) {
  (void)non_blocking; /* copies are synchronous */
  if (!self || !src)
    return kd_set_error(KD_EINVAL, "copy_: %s is NULL: expected a tensor", self ? "src" : "self");
  if (same_tensor(self, src)) return KD_OK;
  if (kd_dtype_is_complex(kd_tensor_dtype(src)) && !kd_dtype_is_complex(kd_tensor_dtype(self)) &&
      kd_tensor_device(self).type != KD_DEVICE_META)
    kd_warn("copy_: Casting complex values to real discards the imaginary part");
  kd_status st = kd_tensor_copy_(self, src);
  return st ? kdk__error_with_op("copy_", st) : KD_OK;
}

/* ---- _to_copy, to.dtype ---------------------------------------------------------- */

/* Strides of a dense, non-overlapping layout of `sizes`, with dimension
 * perm[0] innermost, perm[1] next, ... KD_EOVERFLOW when they do not fit in
 * int64 (a zero-size tensor with huge other sizes: found by fuzz_boxed). */
static kd_status strides_for_order(int ndim, const int64_t *sizes, const int *perm,
                                   int64_t *strides) {
  int64_t step = 1;
  for (int k = 0; k < ndim; k++) {
    int d = perm[k];
    strides[d] = step;
    if (k + 1 < ndim && __builtin_mul_overflow(step, sizes[d] > 1 ? sizes[d] : 1, &step))
      return kd_set_error(KD_EOVERFLOW,
                          "_to_copy: the strides of a tensor of %d dimensions with a size of "
                          "%lld do not fit in int64", ndim, (long long)sizes[d]);
  }
  return KD_OK;
}

/* PyTorch's is_non_overlapping_and_dense: the dimensions, innermost first by
 * stride, step exactly over each other. Fills `perm` (innermost first). */
static bool dense_order(const kd_tensor *t, int *perm) {
  int n = kd_tensor_ndim(t);
  const int64_t *sz = kd_tensor_sizes(t), *st = kd_tensor_strides(t);
  for (int i = 0; i < n; i++) perm[i] = n - 1 - i;
  /* Insertion sort by stride (stable: ties keep the later dimension inner). */
  for (int i = 1; i < n; i++) {
    int d = perm[i], j = i;
    while (j > 0 && st[perm[j - 1]] > st[d]) {
      perm[j] = perm[j - 1];
      j--;
    }
    perm[j] = d;
  }
  int64_t expect = 1;
  for (int k = 0; k < n; k++) {
    int d = perm[k];
    if (sz[d] == 1) continue;
    if (st[d] != expect) return false;
    expect *= sz[d];
  }
  return true;
}

/* The strides of _to_copy's result. */
static kd_status result_strides(const kd_tensor *self, const kd_memory_format *mf,
                                int64_t *strides) {
  int n = kd_tensor_ndim(self);
  const int64_t *sz = kd_tensor_sizes(self);
  int perm[KD_MAX_DIMS] = {0};
  kd_memory_format f = mf ? *mf : KD_MEMORY_FORMAT_PRESERVE;
  switch (f) {
  case KD_MEMORY_FORMAT_PRESERVE:
    if (dense_order(self, perm)) {
      memcpy(strides, kd_tensor_strides(self), (size_t)n * sizeof(int64_t));
      /* size-1 dimensions may carry any stride: give them row-major ones */
      int rm[KD_MAX_DIMS] = {0};
      int64_t rs[KD_MAX_DIMS];
      for (int i = 0; i < n; i++) rm[i] = n - 1 - i;
      kd_status st = strides_for_order(n, sz, rm, rs);
      if (st) return st;
      for (int i = 0; i < n; i++)
        if (sz[i] == 1) strides[i] = rs[i];
      return KD_OK;
    }
    for (int i = 0; i < n; i++) perm[i] = n - 1 - i; /* not dense: contiguous */
    return strides_for_order(n, sz, perm, strides);
  case KD_MEMORY_FORMAT_CONTIGUOUS:
    for (int i = 0; i < n; i++) perm[i] = n - 1 - i;
    return strides_for_order(n, sz, perm, strides);
  case KD_MEMORY_FORMAT_CHANNELS_LAST:
  case KD_MEMORY_FORMAT_CHANNELS_LAST_3D: {
    int rank = f == KD_MEMORY_FORMAT_CHANNELS_LAST ? 4 : 5;
    if (n != rank)
      return kd_set_error(KD_EINVAL, "_to_copy: required rank %d tensor to use %s format", rank,
                          rank == 4 ? "channels_last" : "channels_last_3d");
    /* innermost: C, then the spatial dimensions from the last, then N */
    perm[0] = 1;
    for (int k = 1; k < n - 1; k++) perm[k] = n - k;
    perm[n - 1] = 0;
    return strides_for_order(n, sz, perm, strides);
  }
  default:
    return kd_set_error(KD_EINVAL, "_to_copy: invalid memory format %d", (int)f);
  }
}

/* _to_copy's argument checks, shared by the direct and the composite
 * kernel: *dt is the result's dtype. */
static kd_status to_copy_args(const kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                              const bool *pin_memory, kd_tensor **out, kd_dtype *dt) {
  *dt = KD_FLOAT32; /* set on every path (the callers read it only on KD_OK) */
  if (!out) return kd_set_error(KD_EINVAL, "_to_copy: out is NULL");
  *out = NULL;
  if (!self) return kd_set_error(KD_EINVAL, "_to_copy: self is NULL: expected a tensor");
  if (layout && *layout != KD_LAYOUT_STRIDED)
    return kd_set_error(KD_EUNSUPPORTED, "_to_copy: layout %s is not supported: expected strided",
                        kd_layout_name(*layout));
  if (pin_memory && *pin_memory)
    return kd_set_error(KD_EUNSUPPORTED,
                        "_to_copy: pin_memory=True is not supported: expected False or None");
  *dt = dtype ? *dtype : kd_tensor_dtype(self);
  if (!kd_dtype_valid(*dt)) return kd_set_error(KD_EINVAL, "_to_copy: invalid dtype %d", (int)*dt);
  return KD_OK;
}

kd_status kdk_native_internal_to_copy(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                              const kd_device *device, const bool *pin_memory, bool non_blocking,
                              const kd_memory_format *memory_format, kd_tensor **out) {
  (void)non_blocking;
  kd_dtype dt;
  kd_status ast = to_copy_args(self, dtype, layout, pin_memory, out, &dt);
  if (ast) return ast;
  kd_device from = kd_tensor_device(self), to = device ? *device : from;
  if (kdk__off_host(&to) || kdk__off_host(&from))
    return kdk_native_internal_to_copy_composite(self, dtype, layout, device, pin_memory, non_blocking,
                                         memory_format, out);
  int64_t strides[KD_MAX_DIMS];
  kd_status st = result_strides(self, memory_format, strides);
  if (st) return st;

  {
    if (from.type == KD_DEVICE_META && to.type == KD_DEVICE_CPU)
      return kd_set_error(KD_EUNSUPPORTED,
                          "_to_copy: Cannot copy out of meta tensor; no data! (self is a meta "
                          "tensor: expected a tensor with data to copy to cpu)");
    kd_tensor *r = NULL;
    st = kd_tensor_empty_strided(kd_tensor_ndim(self), kd_tensor_sizes(self), strides, dt, to, &r);
    if (st) return kdk__error_with_op("_to_copy", st);
    if (to.type == KD_DEVICE_CPU) {
      if (kd_dtype_is_complex(kd_tensor_dtype(self)) && !kd_dtype_is_complex(dt))
        kd_warn("_to_copy: Casting complex values to real discards the imaginary part");
      st = kd_tensor_copy_(r, self);
      if (st) {
        kd_tensor_release(r);
        return kdk__error_with_op("_to_copy", st);
      }
    }
    *out = r;
    return KD_OK;
  }
}

/* _to_copy on any device: the dispatched empty_strided on the target device
 * and copy_, which the backend of the device involved serves (a copy between
 * a device and the cpu reaches the device's copy_: its key is the higher). */
kd_status kdk_native_internal_to_copy_composite(kd_tensor *self, const kd_dtype *dtype,
                                        const kd_layout *layout, const kd_device *device,
                                        const bool *pin_memory, bool non_blocking,
                                        const kd_memory_format *memory_format, kd_tensor **out) {
  kd_dtype dt;
  kd_status ast = to_copy_args(self, dtype, layout, pin_memory, out, &dt);
  if (ast) return ast;
  kd_device from = kd_tensor_device(self), to = device ? *device : from;
  if (from.type == KD_DEVICE_META && to.type != KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED,
                        "_to_copy: Cannot copy out of meta tensor; no data! (self is a meta "
                        "tensor: expected a tensor with data to copy to %s)",
                        kd_device_type_name(to.type));
  int n = kd_tensor_ndim(self);
  int64_t strides[KD_MAX_DIMS];
  kd_status st = result_strides(self, memory_format, strides);
  if (st) return st;
  kd_tensor *r;
  kd_ints sz = {kd_tensor_sizes(self), n}, sd = {strides, n};
  if ((st = kd_empty_strided(sz, sd, &dt, NULL, &to, NULL, &r))) return st;
  if (to.type != KD_DEVICE_META && (st = kd_copy_(r, self, non_blocking))) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

/* self already laid out as `f` asks (preserve always is). */
static bool has_format(const kd_tensor *self, kd_memory_format f) {
  if (f == KD_MEMORY_FORMAT_PRESERVE) return true;
  int64_t strides[KD_MAX_DIMS];
  kd_status st = result_strides(self, &f, strides);
  if (st) {
    kd_clear_error();
    return false;
  }
  const int64_t *sz = kd_tensor_sizes(self), *have = kd_tensor_strides(self);
  for (int i = 0; i < kd_tensor_ndim(self); i++)
    if (sz[i] != 1 && have[i] != strides[i]) return false;
  return true;
}

/* PyTorch's to_impl: self itself when nothing changes and copy is false
 * (pin_memory is not looked at then, as in to_will_alias), else the
 * dispatched _to_copy. */
static kd_status to_common(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                           const kd_device *device, const bool *pin_memory, bool non_blocking,
                           bool copy, const kd_memory_format *memory_format, kd_tensor **out) {
  if (!out) return kd_set_error(KD_EINVAL, "to: out is NULL");
  *out = NULL;
  if (!self) return kd_set_error(KD_EINVAL, "to: self is NULL: expected a tensor");
  if (dtype && !kd_dtype_valid(*dtype))
    return kd_set_error(KD_EINVAL, "to: invalid dtype %d", (int)*dtype);
  kd_device have = kd_tensor_device(self);
  bool same = !copy && (!dtype || kd_tensor_dtype(self) == *dtype) &&
              (!layout || *layout == kd_tensor_layout(self)) &&
              (!device || (device->type == have.type && device->index == have.index)) &&
              (!memory_format || has_format(self, *memory_format));
  if (same) {
    kd_tensor_retain(self);
    *out = self;
    return KD_OK;
  }
  return kd_internal_to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format, out);
}

kd_status kdk_native_to_dtype(kd_tensor *self, kd_dtype dtype, bool non_blocking, bool copy,
                              const kd_memory_format *memory_format, kd_tensor **out) {
  if (!kd_dtype_valid(dtype)) {
    if (out) *out = NULL;
    return kd_set_error(KD_EINVAL, "to: invalid dtype %d", (int)dtype);
  }
  return to_common(self, &dtype, NULL, NULL, NULL, non_blocking, copy, memory_format, out);
}

kd_status kdk_native_to_device(kd_tensor *self, kd_device device, kd_dtype dtype,
                               bool non_blocking, bool copy, const kd_memory_format *memory_format,
                               kd_tensor **out) {
  return to_common(self, &dtype, NULL, &device, NULL, non_blocking, copy, memory_format, out);
}

kd_status kdk_native_to_dtype_layout(kd_tensor *self, const kd_dtype *dtype,
                                     const kd_layout *layout, const kd_device *device,
                                     const bool *pin_memory, bool non_blocking, bool copy,
                                     const kd_memory_format *memory_format, kd_tensor **out) {
  return to_common(self, dtype, layout, device, pin_memory, non_blocking, copy, memory_format, out);
}

kd_status kdk_native_to_other(kd_tensor *self, kd_tensor *other, bool non_blocking, bool copy,
                              const kd_memory_format *memory_format, kd_tensor **out) {
  if (!other) {
    if (out) *out = NULL;
    return kd_set_error(KD_EINVAL, "to: other is NULL: expected a tensor");
  }
  kd_dtype dt = kd_tensor_dtype(other);
  kd_device dev = kd_tensor_device(other);
  return to_common(self, &dt, NULL, &dev, NULL, non_blocking, copy, memory_format, out);
}
