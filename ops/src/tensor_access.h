/*
 * tensor_access.h: inline reads of tensor fields for libkdops' hot paths.
 *
 * libkdops is built on the public API, with one exception: the tensor
 * iterator and the structured-kernel records read tensor fields through
 * these inline functions instead of the public accessors (kd_tensor_dtype
 * and friends), which cost a call each, about 40 per small pointwise call.
 * They read the layout of src/core/tensor_impl.h, so libkdops must run with
 * the libkdispatch of its own build: kd_ops_open compares the layout stamp
 * it was compiled with (kd__tensor_layout_here) with libkdispatch's
 * (kd_tensor_layout_stamp) and refuses to open on a difference. Out-of-tree backends use the public API.
 *
 * Same contracts as the public accessors (include/kd/tensor.h), for valid,
 * non-NULL tensors; kd__t_is_wrapped_number and kd__t_shares_storage accept
 * NULL as theirs do.
 */
#ifndef KD_OPS_TENSOR_ACCESS_H
#define KD_OPS_TENSOR_ACCESS_H

#include "core/tensor_impl.h"

static inline kd_dtype kd__t_dtype(const kd_tensor *t) { return t->dtype; }
static inline int kd__t_ndim(const kd_tensor *t) { return t->ndim; }
static inline kd_device kd__t_device(const kd_tensor *t) { return t->storage->device; }
static inline const int64_t *kd__t_sizes(const kd_tensor *t) { return t->sizes; }
static inline const int64_t *kd__t_strides(const kd_tensor *t) { return t->strides; }
static inline size_t kd__t_itemsize(const kd_tensor *t) { return (size_t)t->itemsize; }
static inline int64_t kd__t_numel(const kd_tensor *t) { return t->numel; }
static inline int64_t kd__t_storage_offset(const kd_tensor *t) { return t->offset; }
static inline bool kd__t_is_contiguous(const kd_tensor *t) { return t->contiguous; }
static inline bool kd__t_is_wrapped_number(const kd_tensor *t) { return t && t->wrapped_number; }
static inline bool kd__t_shares_storage(const kd_tensor *a, const kd_tensor *b) {
  return a && b && a->storage == b->storage;
}
static inline void *kd__t_data(const kd_tensor *t) {
  char *d = (char *)t->storage->data;
  return d ? d + t->offset * (int64_t)t->itemsize : NULL;
}

#endif
