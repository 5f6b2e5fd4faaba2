/*
 * tensor_impl.h: the layout of storage and tensor objects, for the library's
 * own sources (the dispatcher reads key sets from here later). Not installed.
 */
#ifndef KD_CORE_TENSOR_IMPL_H
#define KD_CORE_TENSOR_IMPL_H

#include "core/internal.h"
#include "kd/dispatch.h"
#include "kd/tensor.h"

struct kd_storage {
  kd__refcount refs;
  void *data;    /* NULL for meta storage and for nbytes == 0 */
  size_t nbytes;
  kd_device device;
  /* Exactly one way to free the bytes: the allocator copy it came from, or a
   * deleter for wrapped memory (or neither, for meta / empty). */
  bool owns_via_allocator;
  kd_allocator allocator;
  void (*deleter)(void *ctx);
  void *deleter_ctx;
};

struct kd_tensor {
  kd__refcount refs;
  kd_keyset keys;      /* dispatch keys: the backend key of the device */
  kd_storage *storage; /* one reference, never NULL */
  int64_t offset;      /* in elements */
  int ndim;
  kd_dtype dtype;
  kd_layout layout;
  int64_t numel;       /* cached product of sizes */
  bool contiguous;     /* cached */
  bool wrapped_number; /* a 0-dim tensor made from a scalar */
  int64_t sizes[KD_MAX_DIMS];
  int64_t strides[KD_MAX_DIMS];
};

/* The backend key of a device type: backend keys follow the device types in
 * order (checked in src/dispatch/keys.c). */
static inline kd_keyset kd__backend_keyset(kd_device_type type) {
  return (kd_keyset)1 << (KD_KEY_CPU + (int)type);
}

/* Makes a tensor header over `storage` (retained) without bounds checks;
 * the callers have checked. */
kd_status kd__tensor_make(kd_storage *storage, int64_t offset, int ndim, const int64_t *sizes,
                          const int64_t *strides, kd_dtype dtype, kd_tensor **out);

/* Checks sizes/strides/offset fit in `nbytes` of storage for `dtype`. */
kd_status kd__check_geometry(int ndim, const int64_t *sizes, const int64_t *strides,
                             int64_t offset, kd_dtype dtype, size_t nbytes);

#endif
