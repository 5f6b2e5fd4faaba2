/*
 * copy.h: fill_, zero_, copy_, _to_copy and to.dtype (ops/native/copy.c).
 * Private to libkdops.
 *
 * The prototypes follow docs/CODEGEN.md; with kdgen they are also declared
 * by the generated <name>_native.h headers and must match them. Tensor
 * arguments are borrowed; a `kd_tensor **out` receives one new reference
 * (NULL on error).
 */
#ifndef KD_OPS_NATIVE_COPY_H
#define KD_OPS_NATIVE_COPY_H

#include "kd/ops.h"

KD_EXTERN_C_BEGIN

/* fill_.Scalar / fill_.Tensor (CPU and Meta): every element of self becomes
 * value, converted to self's dtype with PyTorch's overflow checks. The Tensor
 * overload takes a 0-dim value. */
kd_status kdk_native_fill_scalar_(kd_tensor *self, const kd_scalar *value);
kd_status kdk_native_fill_tensor_(kd_tensor *self, kd_tensor *value);

/* zero_ (CPU and Meta). */
kd_status kdk_native_zero_(kd_tensor *self);

/* copy_ (CompositeExplicitAutograd): src broadcast to self's sizes and
 * converted to self's dtype (a warning when a complex src loses its
 * imaginary part). */
kd_status kdk_native_copy_(kd_tensor *self, kd_tensor *src, bool non_blocking);

/* _to_copy (CompositeExplicitAutograd): a new tensor with self's values and
 * sizes, of dtype / device when given (else self's), strided only, laid out
 * as memory_format says (preserve, the default, keeps self's strides when
 * they are dense and non-overlapping). */
kd_status kdk_native__to_copy(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                              const kd_device *device, const bool *pin_memory, bool non_blocking,
                              const kd_memory_format *memory_format, kd_tensor **out);

/* to.dtype (CompositeImplicitAutograd): self itself (one more reference) when
 * it already has that dtype and format and copy is false, else _to_copy. */
kd_status kdk_native_to_dtype(kd_tensor *self, kd_dtype dtype, bool non_blocking, bool copy,
                              const kd_memory_format *memory_format, kd_tensor **out);

KD_EXTERN_C_END

#endif
