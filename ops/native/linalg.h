/*
 * linalg.h: the linear-algebra kernels (ops/native/linalg.c): mm, bmm,
 * addmm, dot, matmul. Private to libkdops.
 *
 * The kernels are declared by kdgen only (kdk/native.h, included here), from
 * ops/native_functions.yaml; what each does is below. `kd_tensor **out`: the caller owns the new
 * tensor (NULL on error). `kd_tensor *out` (out variants) and `self` of
 * addmm_: the caller's tensor, written in place (out is resized as PyTorch's
 * resize_output, with a warning when it had elements). Other tensors are
 * borrowed.
 *
 * float32, float64, complex64 and complex128 go through CBLAS; the integer
 * types, float16 and bfloat16 (accumulated in float32) through loops; bool
 * is not supported on cpu, as in PyTorch. Meta kernels check and compute
 * shapes only.
 */
#ifndef KD_OPS_NATIVE_LINALG_H
#define KD_OPS_NATIVE_LINALG_H

#include "kd/ops.h"
#include "kdk/native.h"

/* mm: CPU: mm_cpu, Meta: mm_meta; mm.out: CPU: mm_out_cpu, Meta: mm_out_meta. */

/* bmm: CPU: bmm_cpu, Meta: bmm_meta; bmm.out: CPU: bmm_out_cpu, Meta: bmm_out_meta. */

/* addmm: beta * self + alpha * (mat1 @ mat2); self broadcasts to the
 * product's shape; with beta == 0 self's values are not read.
 * addmm: CPU: addmm_cpu, Meta: addmm_meta; addmm.out: CPU: addmm_out_cpu,
 * Meta: addmm_out_meta; addmm_: CPU: addmm_inplace_cpu, Meta: addmm_inplace_meta. */

/* dot: CPU: dot_cpu, Meta: dot_meta (a 0-dim result, no conjugation);
 * dot.out: CompositeExplicitAutograd: dot_out (cpu or meta tensors). */

/* matmul / matmul.out: CompositeImplicitAutograd: matmul / matmul_out.
 * PyTorch's rules: 1-d x 1-d is dot; a 1-d first operand is a row vector
 * and a 1-d second operand a column vector, their dimension removed from
 * the result; dimensions before the last two are batch dimensions and
 * broadcast. cpu or meta tensors. */

#endif /* KD_OPS_NATIVE_LINALG_H */
