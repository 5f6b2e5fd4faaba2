/*
 * tensor_head.h: the public first bytes of every tensor and storage object,
 * read inline (DLPack style: zero cost, no call).
 *
 * A kd_tensor's first bytes ARE a kd_tensor_head and a kd_storage's first
 * bytes ARE a kd_storage_head: libkdispatch's private structs
 * (src/core/tensor_impl.h) start with the same field lists (the macros
 * below) and assert at compile time that every offset agrees. So a kernel,
 * a loop or a library such as libkdops reads a tensor's fields with a load,
 * not a call:
 *
 *   const kd_tensor_head *h = kd_tensor_head_of(t);
 *   if (h->dtype == KD_FLOAT32 && h->contiguous) ... kd_tensor_head_data(h) ...
 *
 * Borrowed and read-only: the head is the tensor itself, valid while the
 * tensor lives (the caller holds a reference); its fields change only when
 * the tensor is changed (kd_tensor_resize_, as_strided_, set_, ...), never
 * behind the caller's back. Never write through it (the pointers are const;
 * casting that away is undefined as far as this library is concerned), never
 * copy one by value to keep (take kd_tensor_get_view of kdk/view.h for a
 * versioned snapshot), never allocate one.
 *
 * ABI (include/kd/version.h): the heads are part of libkdispatch's ABI.
 * Fields are only appended (after `strides` for the tensor, after `device`
 * for the storage), with KD_TENSOR_HEAD_VERSION incremented; nothing before
 * them moves, is retyped or changes meaning within a major version.
 * A program compiled against version N reads only version N's fields.
 */
#ifndef KD_TENSOR_HEAD_H
#define KD_TENSOR_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kd/device.h"
#include "kd/dtype.h"
#include "kd/tensor.h"

KD_EXTERN_C_BEGIN

/* The version of the heads' field lists (appended fields increment it). */
#define KD_TENSOR_HEAD_VERSION 1

/* The storage head's fields (version 1), in order.
 *   data:   the first byte; NULL for meta storage and for nbytes == 0. On
 *           the storage's device (dereferenceable on the host only for cpu
 *           and host-memory devices).
 *   nbytes: the storage's size in bytes.
 *   device: where the bytes are. */
#define KD_STORAGE_HEAD_FIELDS \
  void *data;                  \
  size_t nbytes;               \
  kd_device device;

/* The tensor head's fields (version 1), in order; STORAGE_T is the type the
 * storage pointer points to (kd_storage_head publicly, the private storage
 * struct in libkdispatch: the same object).
 *   storage:        never NULL; the storage's head. Two tensors with the
 *                   same storage pointer share memory.
 *   offset:         offset of element 0 in the storage, in elements (>= 0).
 *   numel:          product of sizes (1 for 0-dim, 0 when a size is 0).
 *   ndim:           number of dimensions, 0 .. KD_MAX_DIMS.
 *   dtype:          the element type.
 *   itemsize:       bytes per element, kd_dtype_size(dtype).
 *   contiguous:     row-major contiguous (size-1 dims' strides ignored, as
 *                   PyTorch; kd_tensor_is_contiguous).
 *   wrapped_number: a 0-dim tensor made from a scalar (type promotion treats
 *                   it as one: kd_tensor_set_wrapped_number).
 *   sizes:          the first ndim entries are the sizes (>= 0); the others
 *                   are unspecified.
 *   strides:        the first ndim entries are the strides in elements (not
 *                   bytes); the others are unspecified. */
#define KD_TENSOR_HEAD_FIELDS(STORAGE_T) \
  STORAGE_T *storage;                    \
  int64_t offset;                        \
  int64_t numel;                         \
  int ndim;                              \
  kd_dtype dtype;                        \
  int itemsize;                          \
  bool contiguous;                       \
  bool wrapped_number;                   \
  int64_t sizes[KD_MAX_DIMS];            \
  int64_t strides[KD_MAX_DIMS];

/* The first bytes of every kd_storage (see above). */
typedef struct kd_storage_head {
  KD_STORAGE_HEAD_FIELDS
} kd_storage_head;

/* The first bytes of every kd_tensor (see above). */
typedef struct kd_tensor_head {
  KD_TENSOR_HEAD_FIELDS(const kd_storage_head)
} kd_tensor_head;

/* t's head: t itself, borrowed (nothing to free). t must be a valid tensor;
 * NULL gives NULL. Cannot fail. */
static inline const kd_tensor_head *kd_tensor_head_of(const kd_tensor *t) {
  return (const kd_tensor_head *)(const void *)t;
}

/* s's head: s itself, borrowed. NULL gives NULL. Cannot fail. */
static inline const kd_storage_head *kd_storage_head_of(const kd_storage *s) {
  return (const kd_storage_head *)(const void *)s;
}

/* The address of element 0 (the storage offset applied), as
 * kd_tensor_data: NULL when the storage has no bytes or the offset lies past
 * them. h is a valid head. Borrowed; writing the elements through it is the
 * caller's business (they are mutable, the head is not). */
static inline void *kd_tensor_head_data(const kd_tensor_head *h) {
  char *d = (char *)h->storage->data;
  size_t off = (size_t)h->offset * (size_t)h->itemsize;
  return d && off <= h->storage->nbytes ? d + off : NULL;
}

KD_EXTERN_C_END

#endif /* KD_TENSOR_HEAD_H */
