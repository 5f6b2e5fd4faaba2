/*
 * tensor.h: storage and tensors.
 *
 * Storage is a reference-counted block of bytes on one device, owned through
 * the device type's allocator (or through a deleter, for memory that came from
 * elsewhere). A tensor is a reference-counted handle onto a storage: an element
 * offset, sizes, strides (in elements), a dtype and a device. Views are tensors
 * that share a storage.
 *
 * Reference counting: a function that returns a new handle through `**out`
 * gives the caller one reference, released with kd_tensor_release /
 * kd_storage_release. A function that takes a handle borrows it unless its
 * comment says otherwise. Counts are atomic, so handles may be shared between
 * threads; the bytes themselves are not synchronised.
 */
#ifndef KD_TENSOR_H
#define KD_TENSOR_H

#include "kd/common.h"
#include "kd/device.h"
#include "kd/dtype.h"
#include "kd/keys.h"
#include "kd/scalar.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

/* The most dimensions a tensor may have. */
#define KD_MAX_DIMS 16

/* Layouts (schema type `Layout`). Tensors of this version are always strided;
 * the others exist so that schemas and boxed values can name them. Append only. */
typedef enum kd_layout {
  KD_LAYOUT_STRIDED = 0,
  KD_LAYOUT_SPARSE = 1, /* COO */
  KD_LAYOUT_SPARSE_CSR = 2,
  KD_LAYOUT_SPARSE_CSC = 3,
  KD_LAYOUT_SPARSE_BSR = 4,
  KD_LAYOUT_SPARSE_BSC = 5,
  KD_LAYOUT_MKLDNN = 6,
  KD_LAYOUT_COUNT
} kd_layout;

/* Memory formats (schema type `MemoryFormat`). Append only. */
typedef enum kd_memory_format {
  KD_MEMORY_FORMAT_CONTIGUOUS = 0,
  KD_MEMORY_FORMAT_PRESERVE = 1,
  KD_MEMORY_FORMAT_CHANNELS_LAST = 2,
  KD_MEMORY_FORMAT_CHANNELS_LAST_3D = 3,
  KD_MEMORY_FORMAT_COUNT
} kd_memory_format;

/* "strided", "sparse_coo", ...; as PyTorch spells them in schemas
 * (`torch.strided`). Static storage; "invalid" for a bad value. */
KD_API const char *kd_layout_name(kd_layout layout);
KD_API kd_status kd_layout_from_name(const char *name, kd_layout *out);
/* "contiguous_format", "preserve_format", "channels_last", "channels_last_3d". */
KD_API const char *kd_memory_format_name(kd_memory_format format);
KD_API kd_status kd_memory_format_from_name(const char *name, kd_memory_format *out);

/* ---- Storage ------------------------------------------------------------ */

typedef struct kd_storage kd_storage;

/* New storage of `nbytes` bytes on `device` from the device type's allocator.
 * The bytes are not initialised. nbytes == 0 gives storage with a NULL data
 * pointer; meta storage never has bytes. KD_ENOMEM when allocation fails,
 * KD_EUNSUPPORTED when the device type has no allocator, KD_EINVAL for a bad
 * device. The caller owns one reference. */
KD_API kd_status kd_storage_new(kd_device device, size_t nbytes, kd_storage **out);

/* Wraps memory the library does not own. When the last reference goes,
 * `deleter(deleter_ctx)` is called (when deleter is not NULL). On error the
 * deleter is not called and the caller still owns the memory. */
KD_API kd_status kd_storage_wrap(kd_device device, void *data, size_t nbytes,
                                 void (*deleter)(void *ctx), void *deleter_ctx,
                                 kd_storage **out);

/* Adds / drops a reference. Release frees at zero; NULL is ignored by both. */
KD_API void kd_storage_retain(kd_storage *storage);
KD_API void kd_storage_release(kd_storage *storage);

KD_API void *kd_storage_data(const kd_storage *storage);
KD_API size_t kd_storage_nbytes(const kd_storage *storage);
KD_API kd_device kd_storage_device(const kd_storage *storage);
/* The current reference count (for tests and debugging; racy by nature). */
KD_API int64_t kd_storage_refcount(const kd_storage *storage);

/* ---- Tensors ------------------------------------------------------------ */

typedef struct kd_tensor kd_tensor;

/* A new contiguous tensor with fresh storage; elements not initialised.
 * `sizes` has `ndim` entries (it may be NULL when ndim == 0), each >= 0.
 * KD_EINVAL: ndim < 0 or > KD_MAX_DIMS, a negative size, an invalid dtype;
 * KD_EOVERFLOW: the row-major strides, the element count or the byte size
 * overflow, even with no elements (docs/ARCHITECTURE.md, "Foreign
 * geometry"); KD_ENOMEM. */
KD_API kd_status kd_tensor_empty(int ndim, const int64_t *sizes, kd_dtype dtype,
                                 kd_device device, kd_tensor **out);

/* As kd_tensor_empty with explicit strides (in elements, >= 0); the storage is
 * just large enough for the largest element offset. KD_EINVAL also for a
 * negative stride; KD_EOVERFLOW when a byte stride or the extent overflows,
 * even with no elements (docs/ARCHITECTURE.md, "Foreign geometry"). */
KD_API kd_status kd_tensor_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides,
                                         kd_dtype dtype, kd_device device, kd_tensor **out);

/* A new contiguous cpu tensor holding a copy of `data` (numel elements of
 * `dtype`, row-major). Errors as kd_tensor_empty; KD_EINVAL for NULL data with
 * numel > 0. */
KD_API kd_status kd_tensor_from_data(int ndim, const int64_t *sizes, kd_dtype dtype,
                                     const void *data, kd_tensor **out);

/* A 0-dim tensor of `dtype` holding `value` (converted as
 * kd_scalar_to_element does, with its errors), on cpu. */
KD_API kd_status kd_tensor_from_scalar(const kd_scalar *value, kd_dtype dtype, kd_tensor **out);

/* A tensor over existing storage (which it retains): element `offset`, sizes
 * and strides. KD_ERANGE when an element would lie outside the storage
 * (naming the dimension and the bytes needed); KD_EINVAL for negative sizes,
 * strides or offset; KD_EOVERFLOW when a byte offset the tensor can reach,
 * offset * element size included, overflows int64 (even with no elements:
 * docs/ARCHITECTURE.md, "Foreign geometry"). Without elements the tensor
 * may start past the storage's end. */
KD_API kd_status kd_tensor_from_storage(kd_storage *storage, int64_t offset, int ndim,
                                        const int64_t *sizes, const int64_t *strides,
                                        kd_dtype dtype, kd_tensor **out);

/* A view of `base` (borrowed): the same storage and dtype, new sizes, strides
 * and element offset (absolute in the storage, as torch.as_strided). The view
 * has base's dispatch keys, whatever the thread's inference mode (a tensor
 * made with kd_tensor_from_storage is a new tensor and follows it). The caller
 * owns *out. Errors as kd_tensor_from_storage, and KD_EINVAL for a NULL base
 * (*out is NULL then). */
KD_API kd_status kd_tensor_as_strided(const kd_tensor *base, int ndim, const int64_t *sizes,
                                      const int64_t *strides, int64_t offset, kd_tensor **out);
/* As kd_tensor_as_strided, with the view's elements of `dtype` (sizes,
 * strides and offset in elements of dtype): PyTorch's view(dtype). Errors as
 * kd_tensor_as_strided; KD_EINVAL for an invalid dtype. */
KD_API kd_status kd_tensor_as_strided_dtype(const kd_tensor *base, kd_dtype dtype, int ndim,
                                            const int64_t *sizes, const int64_t *strides,
                                            int64_t offset, kd_tensor **out);

/* Changes t's sizes in place (PyTorch's resize_): `ndim` sizes, and
 * `strides` (in elements) or NULL for row-major strides. The element offset
 * stays; when the storage is too small for the new geometry it grows: new
 * bytes from the device's allocator, the old bytes copied to their start
 * (values beyond the old end are not initialised), and every view of the
 * storage sees the new bytes. Growing needs storage that came from an
 * allocator (or has no bytes yet); on a device other than cpu and meta the
 * old bytes are carried over device to host to device with the allocator's
 * copy functions (kd_allocator v2), then the old block is freed. t is
 * borrowed.
 * KD_EINVAL: NULL t, bad ndim, negative sizes or strides. KD_EOVERFLOW
 * (the geometry rule, with t's offset).
 * KD_EUNSUPPORTED: the storage must grow but wraps foreign memory, or lives on
 * a device whose allocator has no copy functions while it holds bytes.
 * KD_ENOMEM. A failing copy function's status, with its message. On error t
 * (and its storage) is unchanged. */
KD_API kd_status kd_tensor_resize_(kd_tensor *t, int ndim, const int64_t *sizes,
                                   const int64_t *strides);

/* A "wrapped number" is a 0-dim tensor made from a Python-style scalar (as
 * PyTorch's add(t, 2) wraps 2): type promotion counts it after every real
 * tensor (see kd_result_type_state). Only 0-dim tensors can be marked;
 * setting it on others is ignored. */
KD_API void kd_tensor_set_wrapped_number(kd_tensor *t, bool wrapped);
KD_API bool kd_tensor_is_wrapped_number(const kd_tensor *t);

/* Adds / drops a reference; release frees the tensor at zero and drops its
 * storage reference. NULL is ignored. */
KD_API void kd_tensor_retain(kd_tensor *tensor);
KD_API void kd_tensor_release(kd_tensor *tensor);
KD_API int64_t kd_tensor_refcount(const kd_tensor *tensor);

/* Accessors. Pointers returned point into the tensor and live as long as it. */
KD_API int kd_tensor_ndim(const kd_tensor *tensor);
KD_API const int64_t *kd_tensor_sizes(const kd_tensor *tensor);
KD_API const int64_t *kd_tensor_strides(const kd_tensor *tensor);
/* Size / stride of dimension `dim`; negative dims count from the end. Returns
 * -1 for a dimension out of range. */
KD_API int64_t kd_tensor_size(const kd_tensor *tensor, int dim);
KD_API int64_t kd_tensor_stride(const kd_tensor *tensor, int dim);
KD_API kd_dtype kd_tensor_dtype(const kd_tensor *tensor);
KD_API kd_device kd_tensor_device(const kd_tensor *tensor);
/* The tensor's dispatch keys (kd/keys.h): its dense backend key, and
 * ADInplaceOrView and its backend's Autograd key unless it was made in
 * inference mode. A view has its base's keys. 0 for NULL. */
KD_API kd_keyset kd_tensor_key_set(const kd_tensor *tensor);
KD_API kd_layout kd_tensor_layout(const kd_tensor *tensor);
KD_API int64_t kd_tensor_storage_offset(const kd_tensor *tensor);
/* Borrowed: the tensor holds the reference. */
KD_API kd_storage *kd_tensor_storage(const kd_tensor *tensor);
/* The address of element 0 (storage data + offset * element size); NULL for
 * meta tensors, empty storage, and a tensor without elements that starts past
 * its storage's end (as PyTorch's data_ptr, which is NULL for every tensor
 * without elements). */
KD_API void *kd_tensor_data(const kd_tensor *tensor);
KD_API int64_t kd_tensor_numel(const kd_tensor *tensor);
KD_API size_t kd_tensor_itemsize(const kd_tensor *tensor);
/* True when the strides are the row-major strides of the sizes (size-1
 * dimensions may have any stride, as in PyTorch). */
KD_API bool kd_tensor_is_contiguous(const kd_tensor *tensor);
/* True when both tensors view the same storage. */
KD_API bool kd_tensor_shares_storage(const kd_tensor *a, const kd_tensor *b);

/* Element access. `index` has ndim entries (NULL for 0-dim); negative entries
 * count from the end; strides and the storage offset are honoured. KD_ERANGE
 * for an index out of range (naming the dimension, the index and the size).
 * Get (and kd_tensor_item) also read a tensor on a backend device: the
 * element's bytes are copied to the host with the copy_to_host of the
 * storage's allocator (for wrapped storage: of the device type's installed
 * allocator), which waits for the work queued on the device (a
 * synchronisation point, like a copy to the cpu); KD_EUNSUPPORTED when that
 * allocator has no copy functions, or for a meta tensor (no bytes); a failed
 * copy returns the backend's status and message. Set needs a cpu tensor
 * (KD_EUNSUPPORTED otherwise) and converts as kd_scalar_to_element, with its
 * errors; on error nothing is written. The tensor is borrowed. */
KD_API kd_status kd_tensor_get(const kd_tensor *tensor, const int64_t *index, kd_scalar *out);
KD_API kd_status kd_tensor_set(kd_tensor *tensor, const int64_t *index, const kd_scalar *value);
/* The only element of a one-element tensor, on any device with a copy_to_host
 * (as kd_tensor_get, synchronising); KD_EINVAL when numel != 1. */
KD_API kd_status kd_tensor_item(const kd_tensor *tensor, kd_scalar *out);

/* Formats a one-line description: "tensor(float32[2, 3], cpu)", with
 * ", strides=[1, 2]" added when the tensor is not contiguous. Returns the
 * needed length as snprintf. */
KD_API size_t kd_tensor_describe(const kd_tensor *tensor, char *buf, size_t cap);

/* ---- Conversion between dtypes and devices --------------------------------- */

/* A new contiguous tensor on t's device with t's sizes and its values
 * converted to `dtype` as PyTorch's Tensor.to(dtype) converts them: floating
 * to integral truncates toward zero; anything to bool is `!= 0` (NaN is true;
 * a complex value is true when either part is non-zero); complex to real keeps
 * the real part; real to complex has imaginary part 0; integral to integral
 * wraps modulo 2^bits (exact for int64, never through double); float16 and
 * bfloat16 round to nearest even (values wider than float32 round through
 * float32, as c10::Half does). Floating values outside int64's range, and NaN,
 * become INT64_MIN before wrapping to a narrower integer (PyTorch leaves them
 * undefined). Any strides and storage offset, 0-dim and zero-element tensors;
 * the same dtype still gives a new copy. A meta tensor gives a meta tensor of
 * `dtype` (no data).
 * t is borrowed; the caller owns *out (one reference), which is NULL on error.
 * A tensor on another device is converted by its backend's device-side cast
 * when it has one, else through the host (moved to the cpu with its
 * allocator's copies, converted, moved back to the same device and index):
 * the result is on t's device.
 * KD_EINVAL: NULL t or out, an invalid dtype. KD_EUNSUPPORTED: t's device type
 * has no allocator copy functions (as kd_tensor_to_device). KD_ENOMEM. */
KD_API kd_status kd_tensor_to_dtype(const kd_tensor *t, kd_dtype dtype, kd_tensor **out);

/* A new contiguous tensor on `device` with t's sizes, dtype and values. Any
 * strides and storage offset. Bytes move through the host with the copy
 * functions of the device types' allocators (kd_allocator version 2); cpu is
 * host memory. To the same device it is a contiguous copy. To meta: an empty
 * meta tensor of t's sizes and dtype. From meta to a device other than meta:
 * KD_EUNSUPPORTED (meta tensors have no data).
 * t is borrowed; the caller owns *out (one reference), which is NULL on error.
 * KD_EINVAL: NULL t or out, an invalid device type, a negative index, or an
 * index other than 0 for cpu or meta. KD_EUNSUPPORTED: a device type involved
 * has no allocator, or an allocator without copy functions (the message names
 * the device type). KD_ENOMEM. A copy function's own error status is passed
 * on, with its message. */
KD_API kd_status kd_tensor_to_device(const kd_tensor *t, kd_device device, kd_tensor **out);

/* Copies src's values into dst in place (PyTorch's dst.copy_(src)), converting
 * dtypes as kd_tensor_to_dtype and broadcasting src's sizes to dst's. dst may
 * have any strides (but no two of its elements may share memory); src may
 * overlap dst (it is read completely first then). dst may be on cpu, meta
 * (nothing is written) or a device whose allocator has copy functions (the
 * values are converted on the host and written with copy_from_host; when dst's
 * strides leave gaps, the bytes it spans are read first so the gaps keep
 * their values); src may be on any device kd_tensor_to_device can move to
 * cpu. Both are borrowed; dst's bytes are written.
 * KD_EINVAL: NULL argument, sizes that do not broadcast, a dst whose elements
 * overlap. KD_EUNSUPPORTED: src on meta with a dst that is not meta, or as
 * kd_tensor_to_device. KD_ENOMEM. On error dst is unchanged, except when the
 * device's final copy_from_host fails (its status and message are returned;
 * dst's contents are then what the allocator left). */
KD_API kd_status kd_tensor_copy_(kd_tensor *dst, const kd_tensor *src);

KD_EXTERN_C_END

#endif /* KD_TENSOR_H */
