/*
 * kdk/view.h: a borrowed, read-only view of a tensor's fields, filled by
 * one call, for kernels and loops that read many fields (the kernel-author
 * kit, kdk/common.h; implemented by libkdispatch, so any library may use it).
 *
 *   kd_tensor_view v = {.api_version = KD_TENSOR_VIEW_API_VERSION};
 *   if (kd_tensor_get_view(t, &v)) return kd_last_status();
 *   for (int64_t i = 0; i < v.sizes[0]; i++) ... ((float *)v.data)[i * v.strides[0]] ...
 *
 * The view borrows from the tensor: `sizes`, `strides` and `data` stay
 * valid while the tensor lives (a reference is held) and is not resized,
 * restrided or set to other storage (kd_tensor_resize_, as_strided_, set_);
 * the scalar fields are a snapshot. Nothing in it is owned by the caller
 * and nothing needs freeing. Writing through `data` is the caller's business
 * (the tensor's elements are mutable; the view's fields are not).
 *
 * For reads without a call, a kd_tensor's first bytes are its public head
 * (kd/tensor_head.h, included here): kd_tensor_head_of(t)->dtype, ... is a
 * load; libkdops' iterator reads tensors that way. kd_tensor_get_view is for
 * callers that want a versioned snapshot with `data` and `device` resolved.
 *
 * Versioning (DLPack style): the caller sets api_version to the version its
 * headers know; the library fills the fields of that version and leaves any
 * later field alone. Fields are only appended.
 */
#ifndef KDK_VIEW_H
#define KDK_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kd/device.h"
#include "kd/dtype.h"
#include "kd/status.h"
#include "kd/tensor.h"
#include "kd/tensor_head.h"

KD_EXTERN_C_BEGIN

#define KD_TENSOR_VIEW_API_VERSION 1

typedef struct kd_tensor_view {
  /* Set by the caller before the call: KD_TENSOR_VIEW_API_VERSION. */
  uint32_t api_version;
  /* The element type. */
  kd_dtype dtype;
  /* Number of dimensions, 0 .. KD_MAX_DIMS (0: a scalar, one element). */
  int32_t ndim;
  /* ndim sizes, >= 0; borrowed (see above). Never NULL (a 0-dim tensor's
   * points at no entry that may be read). */
  const int64_t *sizes;
  /* ndim strides in elements (not bytes), any sign allowed by the library
   * (>= 0 today); borrowed like sizes. */
  const int64_t *strides;
  /* Address of element 0 with the storage offset applied, on `device`
   * (dereferenceable on the host only for cpu and host-memory devices);
   * NULL when the storage has no bytes (meta tensors, empty storages). */
  void *data;
  /* Product of sizes (1 for 0-dim, 0 when a size is 0). */
  int64_t numel;
  /* Offset of element 0 in the storage, in elements. */
  int64_t storage_offset;
  /* Bytes per element (kd_dtype_size(dtype)). */
  size_t itemsize;
  /* Where the elements are. */
  kd_device device;
  /* Row-major contiguous (sizes-1 dims' strides ignored, as PyTorch). */
  bool is_contiguous;
  /* A 0-dim tensor made from a Python-style scalar (type promotion treats
   * it as one: kd_tensor_set_wrapped_number). */
  bool is_wrapped_number;
  /* The storage's identity: two views with the same (non-NULL) value share
   * memory. Not dereferenceable. */
  const void *storage;
} kd_tensor_view;

/* Fills *out with t's fields (the fields of out->api_version). t is
 * borrowed; out is the caller's (nothing to free). Errors: KD_EINVAL for a
 * NULL t or out; KD_EUNSUPPORTED for an api_version of 0 or newer than this
 * library's ("kd_tensor_get_view: api_version 7, this library fills 1"),
 * *out left as it was but for nothing. */
KD_API kd_status kd_tensor_get_view(const kd_tensor *t, kd_tensor_view *out);

KD_EXTERN_C_END

#endif
