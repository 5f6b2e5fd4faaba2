/*
 * views.h: the view and shape operators of libkdops (views.c, shape.c), and
 * the helpers they share. Private to libkdops.
 *
 * The kernel prototypes follow docs/CODEGEN.md exactly (kdk_native_<kernel>
 * of the "Views and shapes" section of ops/native_functions.yaml); kdgen
 * will declare them in BUILD/gen/ops/<name>_native.h and this list can then
 * shrink to the helpers.
 *
 * Ownership: every `kd_tensor **out` gives the caller one reference (NULL on
 * error). Tensor arguments are borrowed. Views share the storage of `self`;
 * where PyTorch returns `self` itself (flatten with start_dim == end_dim,
 * contiguous of a contiguous tensor) *out is `self` with one more reference.
 * Inplace variants (`transpose_`...) change `self` and return nothing else.
 * Out variants write `out` (resized when its sizes differ, with a warning
 * when it had elements, as PyTorch's resize_output).
 */
#ifndef KD_OPS_NATIVE_VIEWS_H
#define KD_OPS_NATIVE_VIEWS_H

#include "kd/ops.h"

/* ---- views.c: views (no data is touched; any device) ------------------------ */

kd_status kdk_native_view(kd_tensor *self, kd_ints size, kd_tensor **out);
kd_status kdk_native_view_dtype(kd_tensor *self, kd_dtype dtype, kd_tensor **out);
kd_status kdk_native_view_as(kd_tensor *self, kd_tensor *other, kd_tensor **out);
kd_status kdk_native_reshape(kd_tensor *self, kd_ints shape, kd_tensor **out);
kd_status kdk_native_reshape_as(kd_tensor *self, kd_tensor *other, kd_tensor **out);
kd_status kdk_native_transpose(kd_tensor *self, int64_t dim0, int64_t dim1, kd_tensor **out);
kd_status kdk_native_transpose_(kd_tensor *self, int64_t dim0, int64_t dim1);
kd_status kdk_native_t(kd_tensor *self, kd_tensor **out);
kd_status kdk_native_t_(kd_tensor *self);
kd_status kdk_native_permute(kd_tensor *self, kd_ints dims, kd_tensor **out);
kd_status kdk_native_expand(kd_tensor *self, kd_ints size, bool implicit, kd_tensor **out);
kd_status kdk_native_expand_as(kd_tensor *self, kd_tensor *other, kd_tensor **out);
kd_status kdk_native_squeeze(kd_tensor *self, kd_tensor **out);
kd_status kdk_native_squeeze_dim(kd_tensor *self, int64_t dim, kd_tensor **out);
kd_status kdk_native_squeeze_(kd_tensor *self);
kd_status kdk_native_squeeze_dim_(kd_tensor *self, int64_t dim);
kd_status kdk_native_unsqueeze(kd_tensor *self, int64_t dim, kd_tensor **out);
kd_status kdk_native_unsqueeze_(kd_tensor *self, int64_t dim);
kd_status kdk_native_flatten_using_ints(kd_tensor *self, int64_t start_dim, int64_t end_dim,
                                        kd_tensor **out);
kd_status kdk_native_slice(kd_tensor *self, int64_t dim, const int64_t *start,
                           const int64_t *end, int64_t step, kd_tensor **out);
kd_status kdk_native_select(kd_tensor *self, int64_t dim, int64_t index, kd_tensor **out);
kd_status kdk_native_narrow(kd_tensor *self, int64_t dim, int64_t start, int64_t length,
                            kd_tensor **out);
kd_status kdk_native_narrow_Tensor(kd_tensor *self, int64_t dim, kd_tensor *start,
                                   int64_t length, kd_tensor **out);
/* Tensor[] results: views of self in a caller-owned list (kd_tensor_list_free);
 * {NULL, 0} on error. */
kd_status kdk_native_unbind(kd_tensor *self, int64_t dim, kd_tensor_list *out);
kd_status kdk_native_split(kd_tensor *self, int64_t split_size, int64_t dim, kd_tensor_list *out);
kd_status kdk_native_chunk(kd_tensor *self, int64_t chunks, int64_t dim, kd_tensor_list *out);
kd_status kdk_native_contiguous(kd_tensor *self, kd_memory_format memory_format,
                                kd_tensor **out);

/* ---- shape.c: copies (cpu; meta computes sizes only) --------------------------- */

kd_status kdk_native_clone(kd_tensor *self, const kd_memory_format *memory_format,
                           kd_tensor **out);
kd_status kdk_native_cat(kd_tensors tensors, int64_t dim, kd_tensor **out);
kd_status kdk_native_cat_out(kd_tensors tensors, int64_t dim, kd_tensor *out);
kd_status kdk_native_stack(kd_tensors tensors, int64_t dim, kd_tensor **out);
kd_status kdk_native_stack_out(kd_tensors tensors, int64_t dim, kd_tensor *out);
kd_status kdk_native_tril(kd_tensor *self, int64_t diagonal, kd_tensor **out);
kd_status kdk_native_tril_(kd_tensor *self, int64_t diagonal);
kd_status kdk_native_tril_out(kd_tensor *self, int64_t diagonal, kd_tensor *out);
kd_status kdk_native_triu(kd_tensor *self, int64_t diagonal, kd_tensor **out);
kd_status kdk_native_triu_(kd_tensor *self, int64_t diagonal);
kd_status kdk_native_triu_out(kd_tensor *self, int64_t diagonal, kd_tensor *out);
kd_status kdk_native_index_select(kd_tensor *self, int64_t dim, kd_tensor *index,
                                  kd_tensor **out);
kd_status kdk_native_index_select_out(kd_tensor *self, int64_t dim, kd_tensor *index,
                                      kd_tensor *out);
kd_status kdk_native_gather(kd_tensor *self, int64_t dim, kd_tensor *index, bool sparse_grad,
                            kd_tensor **out);
kd_status kdk_native_gather_out(kd_tensor *self, int64_t dim, kd_tensor *index,
                                bool sparse_grad, kd_tensor *out);

/* ---- Helpers shared by views.c and shape.c ------------------------------------ */

/* PyTorch's maybe_wrap_dim(dim, ndim) (a 0-dim tensor counts as 1-dim):
 * KD_ERANGE "Dimension out of range (expected to be in range of [-2, 1], but
 * got 2)". */
kd_status kdk__vw_wrap_dim(int64_t dim, int64_t ndim, int64_t *out);

/* "[2, 3]" into buf (cut at cap); returns buf. */
const char *kdk__vw_fmt_ints(char *buf, size_t cap, const int64_t *v, int64_t n);

/* The sizes of an int list argument checked as a shape (0..KD_MAX_DIMS entries). */
kd_status kdk__vw_check_list(const char *op, const char *what, kd_ints list);

/* Strides of `sizes` for a memory format: row-major (CONTIGUOUS), NHWC
 * (CHANNELS_LAST, ndim 4) or NDHWC (CHANNELS_LAST_3D, ndim 5); KD_EINVAL
 * "required rank 4 tensor to use channels_last format" otherwise; KD_EOVERFLOW
 * when a stride does not fit in int64. */
kd_status kdk__vw_format_strides(int ndim, const int64_t *sizes, kd_memory_format format,
                                int64_t *strides);

/* PyTorch's is_contiguous(memory_format) (PRESERVE counts as CONTIGUOUS). */
bool kdk__vw_is_contiguous_as(const kd_tensor *t, kd_memory_format format);

/* PyTorch's is_non_overlapping_and_dense. */
bool kdk__vw_non_overlapping_and_dense(const kd_tensor *t);

/* PyTorch's get_overlap_status between a written tensor and an input. */
typedef enum kdk__vw_overlap {
  KDK__VW_OVERLAP_NO = 0,
  KDK__VW_OVERLAP_FULL,
  KDK__VW_OVERLAP_PARTIAL,
  KDK__VW_OVERLAP_TOO_HARD, /* shares storage, not provably disjoint */
} kdk__vw_overlap;
kdk__vw_overlap kdk__vw_overlap_of(const kd_tensor *a, const kd_tensor *b);

/* assert_no_internal_overlap (a dimension of size > 1 with stride 0) and
 * assert_no_overlap / assert_no_partial_overlap: KD_EINVAL with PyTorch's
 * messages. */
kd_status kdk__vw_check_internal_overlap(const kd_tensor *out);
kd_status kdk__vw_check_no_overlap(const kd_tensor *out, const kd_tensor *in, bool partial_only);

/* Prepares an out= tensor: KD_EINVAL unless it is on `device`, KD_ETYPE unless
 * it has `dtype` (when check_dtype; "Expected out tensor to have dtype
 * float32, but got int64 instead"), then resizes it to `sizes` (row-major)
 * when they differ, warning when it had elements (PyTorch's resize_output). */
kd_status kdk__vw_prepare_out(kd_tensor *out, int ndim, const int64_t *sizes, kd_dtype dtype,
                             bool check_dtype, kd_device device);

/* Copies elements of `itemsize` bytes between strided layouts (strides in
 * elements); dst and src must not overlap. */
void kdk__vw_strided_copy(int ndim, const int64_t *sizes, char *dst, const int64_t *dst_strides,
                         const char *src, const int64_t *src_strides, size_t itemsize);

/* KD_EUNSUPPORTED unless t is on cpu or meta (the copy kernels read bytes on cpu). */
kd_status kdk__vw_check_cpu_or_meta(const char *op, const kd_tensor *t);

/* KD_EINVAL "Expected all tensors to be on the same device, but found at least
 * two devices, cpu and meta!" */
kd_status kdk__vw_check_same_device(const kd_tensor *a, const kd_tensor *b);

#endif
