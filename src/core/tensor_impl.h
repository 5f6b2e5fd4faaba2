/*
 * tensor_impl.h: the layout of storage and tensor objects, for the library's
 * own sources (core and the layers above it: the dispatcher reads a tensor's
 * key set straight from it on every call). Its first fields are the public heads of
 * kd/tensor_head.h. Not installed.
 */
#ifndef KD_CORE_TENSOR_IMPL_H
#define KD_CORE_TENSOR_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "core/keys_impl.h"
#include "kd/tensor.h"
#include "kd/tensor_head.h"

/* Both structs start with their public head (kd/tensor_head.h: the same
 * field lists, asserted below), which libkdops and kernel authors read
 * inline; the private fields follow. */
struct kd_storage {
  KD_STORAGE_HEAD_FIELDS /* data, nbytes, device */
  kd__refcount refs;
  /* Exactly one way to free the bytes: the allocator copy it came from, or a
   * deleter for wrapped memory (or neither, for meta / empty). */
  bool owns_via_allocator;
  kd_allocator allocator;
  void (*deleter)(void *ctx);
  void *deleter_ctx;
  /* One-block storage (kd__tensor_new): `block` is the malloc'd block that
   * holds this struct (and the tensor made with it, and, when data_inline,
   * the bytes); the last release frees it. NULL: the struct is its own
   * allocation. data_inline: `data` points into the block, not to memory from
   * `allocator` (which is still the allocator resize_ grows it with); a grown
   * storage moves its bytes out and clears the flag. */
  void *block;
  bool data_inline;
};

/* The head's fields: storage (one reference, never NULL), offset (in
 * elements), numel (cached product of sizes), ndim, dtype, itemsize (cached
 * kd_dtype_size(dtype)), contiguous (cached), wrapped_number (a 0-dim tensor
 * made from a scalar), sizes, strides. */
struct kd_tensor {
  KD_TENSOR_HEAD_FIELDS(kd_storage)
  kd__refcount refs;
  kd_keyset keys; /* dispatch keys (kd_tensor_key_set): its dense backend key, and
                     ADInplaceOrView and its Autograd key unless made in inference
                     mode; a view copies its base's */
  kd_layout layout;
  /* The tensor lives in its storage's block (kd__tensor_new): its memory goes
   * with the storage's last reference, so `storage` never changes. */
  bool embedded;
};

/* The public heads are the private structs' first bytes. */
#define KD__HEAD_SAME(priv, pub, f)                                                  \
  _Static_assert(offsetof(struct priv, f) == offsetof(pub, f) &&                      \
                     sizeof(((struct priv *)0)->f) == sizeof(((pub *)0)->f),          \
                 #priv "." #f " is not where " #pub " has it")
KD__HEAD_SAME(kd_storage, kd_storage_head, data);
KD__HEAD_SAME(kd_storage, kd_storage_head, nbytes);
KD__HEAD_SAME(kd_storage, kd_storage_head, device);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, storage);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, offset);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, numel);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, ndim);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, dtype);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, itemsize);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, contiguous);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, wrapped_number);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, sizes);
KD__HEAD_SAME(kd_tensor, kd_tensor_head, strides);
_Static_assert(sizeof(struct kd_storage) >= sizeof(kd_storage_head), "storage head");
_Static_assert(sizeof(struct kd_tensor) >= sizeof(kd_tensor_head), "tensor head");

/* Makes a tensor header over `storage` (retained) without bounds checks;
 * the callers have checked. */
kd_status kd__tensor_make(kd_storage *storage, int64_t offset, int ndim, const int64_t *sizes,
                          const int64_t *strides, kd_dtype dtype, kd_tensor **out);

/* A new tensor with fresh storage of nbytes bytes on `device`, in one block
 * with its storage (and, for small cpu tensors with the default allocator,
 * the bytes): strides and sizes are trusted (the callers checked them and
 * computed nbytes). One malloc for a small cpu tensor. */
kd_status kd__tensor_new(kd_device device, size_t nbytes, int ndim, const int64_t *sizes,
                         const int64_t *strides, kd_dtype dtype, kd_tensor **out);

/* The default cpu allocator, or NULL when a cpu allocator was installed
 * (kd_allocator_set); no lock. kd__cpu_builtin_allocator: the default one,
 * installed or not. */
const kd_allocator *kd__cpu_default_allocator(void);
const kd_allocator *kd__cpu_builtin_allocator(void);

static inline bool kd__device_ok(kd_device d) {
  return d.type >= 0 && d.type < KD_DEVICE_TYPE_COUNT && d.index >= 0;
}

/* Storage bytes kept in the storage's own block: fewer than this many, on
 * cpu with the default allocator (whose blocks under 64 bytes are malloc's,
 * 16-byte aligned, as the bytes at KD__STORAGE_HEAD of a malloc'd block). */
#define KD__INLINE_BYTES 64
#define KD__ROUND16(n) (((n) + (size_t)15) & ~(size_t)15)
#define KD__STORAGE_HEAD KD__ROUND16(sizeof(struct kd_storage))
#define KD__TENSOR_HEAD KD__ROUND16(sizeof(struct kd_tensor))
static inline bool kd__inline_bytes(kd_device device, size_t nbytes) {
  return device.type == KD_DEVICE_CPU && nbytes > 0 && nbytes < KD__INLINE_BYTES &&
         kd__cpu_default_allocator() != NULL;
}

/* Sets up storage s in memory the caller provides (`block`: the malloc'd
 * block holding it, freed by the last release; NULL: s itself is freed) and
 * gets its bytes: `inline_data` (inside the block; see kd__inline_bytes) or
 * from the device type's allocator. On error the caller frees the memory. */
kd_status kd__storage_setup(struct kd_storage *s, void *block, kd_device device, size_t nbytes,
                            void *inline_data);

/* Drops a reference; true when it was the last. The only holder of a
 * reference (count 1) skips the atomic read-modify-write: nobody else can
 * hold one to add to it. */
static inline bool kd__ref_dec_last(kd__refcount *r) {
  if (atomic_load_explicit(r, memory_order_acquire) == 1) return true;
  return kd__ref_dec(r);
}

/* Frees a tensor whose last reference was just dropped (kd_tensor_release's
 * second half). */
void kd__tensor_free_last(kd_tensor *tensor);

/* kd_tensor_release for the library's own hot paths (the boxed call, value
 * destruction): the count inline, no call unless it was the last reference.
 * `tensor` is not NULL. */
static inline void kd__tensor_release(kd_tensor *tensor) {
  if (kd__ref_dec_last(&tensor->refs)) kd__tensor_free_last(tensor);
}

/* kd_dtype_size inline, for the tensor constructors (dtype.c fills it). */
extern const uint8_t kd__dtype_size_table[KD_DTYPE_COUNT];
static inline size_t kd__dtype_size(kd_dtype dtype) {
  return (unsigned)dtype < (unsigned)KD_DTYPE_COUNT ? kd__dtype_size_table[dtype] : 0;
}

/* The geometry rule (src/core/checked.h) for sizes (>= 0, checked by the
 * caller), strides and offset from outside: KD_EINVAL for a negative stride
 * or offset, KD_EOVERFLOW naming `fn`, the geometry and the dtype when an
 * address or the extent overflows. *numel: the element count; *need: the
 * bytes of storage the tensor needs (0 without elements). */
kd_status kd__geometry_extent(const char *fn, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset, kd_dtype dtype,
                              int64_t *numel, int64_t *need);

/* kd__geometry_extent, and KD_ERANGE when the tensor does not fit in
 * `nbytes` of storage. */
kd_status kd__check_geometry(const char *fn, int ndim, const int64_t *sizes,
                             const int64_t *strides, int64_t offset, kd_dtype dtype,
                             size_t nbytes);

#endif
