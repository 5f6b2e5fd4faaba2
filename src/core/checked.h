/*
 * checked.h: checked arithmetic for tensor geometry made from foreign
 * numbers (user sizes and strides, DLPack, the language, views). Shared by
 * libkdispatch and libkdops (static inline, so nothing is exported). Not
 * installed.
 *
 * The rule every tensor obeys (docs/ARCHITECTURE.md, "Foreign geometry"): sizes,
 * strides and the storage offset are >= 0, and with itemsize the element
 * size in bytes,
 *   - every stride * itemsize fits in int64 (byte strides are computable);
 *   - extent = (offset + 1 + sum over dimensions of (size - 1) * stride,
 *     counting size-0 dimensions as size 1) * itemsize fits in int64,
 *     whether or not the tensor has elements.
 * So every byte address a tensor can reach, its data pointer (offset *
 * itemsize) and the storage it needs (extent, or 0 with no elements) are
 * computable without overflow. As PyTorch's computeStorageNbytes, but also
 * for zero-element tensors, where PyTorch stops at the first size 0.
 */
#ifndef KD_CORE_CHECKED_H
#define KD_CORE_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* a * b, a + b into *out; true on overflow (*out then holds the wrapped
 * value and must not be used). */
static inline bool kd__mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
static inline bool kd__add_overflow_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}

/* The product of n sizes (each >= 0): 0 as soon as one of them is 0, even
 * when the product of the others would overflow. True on overflow. */
static inline bool kd__numel_overflow(int n, const int64_t *sizes, int64_t *out) {
  for (int i = 0; i < n; i++) {
    if (sizes[i] == 0) {
      *out = 0;
      return false;
    }
  }
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, sizes[i], &p)) return true;
  *out = p;
  return false;
}

/* Row-major strides of n sizes (each >= 0; size-0 dimensions count as 1, as
 * PyTorch's contiguous strides). True when one does not fit in int64; then
 * `strides` is partly written. */
static inline bool kd__contiguous_strides_overflow(int n, const int64_t *sizes,
                                                   int64_t *strides) {
  int64_t s = 1;
  for (int i = n - 1; i >= 0; i--) {
    strides[i] = s;
    if (i > 0 && __builtin_mul_overflow(s, sizes[i] > 1 ? sizes[i] : 1, &s)) return true;
  }
  return false;
}

/* The geometry rule above, for sizes, strides and offset already known to
 * be >= 0: *extent is the byte extent (offset + 1 + spans) * itemsize. True
 * when a stride, a span or the extent overflows int64. */
static inline bool kd__extent_overflow(int n, const int64_t *sizes, const int64_t *strides,
                                       int64_t offset, int64_t itemsize, int64_t *extent) {
  int64_t last = offset, span, bytes;
  for (int i = 0; i < n; i++) {
    if (__builtin_mul_overflow(strides[i], itemsize, &bytes)) return true;
    if (sizes[i] > 1 && (__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) ||
                         __builtin_add_overflow(last, span, &last)))
      return true;
  }
  return __builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, itemsize, extent);
}

#endif /* KD_CORE_CHECKED_H */
