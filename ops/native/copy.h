/*
 * copy.h: fill_, zero_, copy_, _to_copy and to.dtype (ops/native/copy.c).
 * Private to libkdops.
 *
 * The kernels are declared by kdgen only (kdk/native.h, included here); what
 * each does is below. Tensor arguments are borrowed; a `kd_tensor **out` receives one new reference
 * (NULL on error).
 */
#ifndef KD_OPS_NATIVE_COPY_H
#define KD_OPS_NATIVE_COPY_H

#include "kd/ops.h"
#include "kdk/native.h"

KD_EXTERN_C_BEGIN

/* fill_.Scalar / fill_.Tensor (CPU and Meta): every element of self becomes
 * value, converted to self's dtype with PyTorch's overflow checks. The Tensor
 * overload takes a 0-dim value. */

/* zero_ (CPU and Meta). */

/* copy_ (CompositeExplicitAutograd): src broadcast to self's sizes and
 * converted to self's dtype (a warning when a complex src loses its
 * imaginary part). */

/* _to_copy (CompositeExplicitAutograd): a new tensor with self's values and
 * sizes, of dtype / device when given (else self's), strided only, laid out
 * as memory_format says (preserve, the default, keeps self's strides when
 * they are dense and non-overlapping). */

/* to.dtype (CompositeImplicitAutograd): self itself (one more reference) when
 * it already has that dtype and format and copy is false, else _to_copy. */

KD_EXTERN_C_END

#endif
