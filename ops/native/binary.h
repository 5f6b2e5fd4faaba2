/*
 * binary.h: the stubs of the pointwise binary operators (ops/native/binary.c
 * builds the iterators, ops/cpu/binary.c has the loops). Private to libkdops.
 *
 * Every stub has one type: the iterator (built by the operator's meta
 * function; its inputs already in the common dtype) and up to two scalar
 * parameters (alpha, clamp's min and max, pow's exponent, masked_fill's
 * value; NULL when the operator has none). A stub returns KD_OK or an error
 * set with kd_set_error: a dtype the loop does not support ("\"bitwise_and_cpu\"
 * not implemented for 'float32'"), an integer division by zero
 * ("ZeroDivisionError"), a parameter that does not fit the dtype.
 *
 * Iterator layouts:
 *   binary (add ... logical_xor, clamp with one tensor bound): out, a, b
 *   comparison and logical: out (bool, or the common dtype), a, b
 *   pow_tensor_scalar, clamp_scalar (unary): out, a
 *   where: out, condition (bool), a, b        (a, b and out of one dtype)
 *   clamp_tensor: out, a, min, max
 *   masked_fill: self (the output), mask (bool)
 */
#ifndef KD_OPS_NATIVE_BINARY_H
#define KD_OPS_NATIVE_BINARY_H

#include "iter.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

typedef kd_status kd__binary_fn(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1);

/* The flat list of stubs: X(name). */
#define KD__BINARY_STUBS(X)                                                          \
  X(add_stub)            /* out = a + p0 * b (p0: alpha; sub passes -alpha) */      \
  X(mul_stub)                                                                        \
  X(div_true_stub)       /* floating and complex only (ints are promoted) */        \
  X(div_trunc_stub)                                                                  \
  X(div_floor_stub)                                                                  \
  X(remainder_stub)                                                                  \
  X(atan2_stub)                                                                      \
  X(maximum_stub)                                                                    \
  X(minimum_stub)                                                                    \
  X(pow_tensor_tensor_stub)                                                          \
  X(pow_tensor_scalar_stub) /* unary: out = a ** p0 */                              \
  X(bitwise_and_stub)                                                                \
  X(bitwise_or_stub)                                                                 \
  X(bitwise_xor_stub)                                                                \
  X(lshift_stub)                                                                     \
  X(rshift_stub)                                                                     \
  X(eq_stub)                                                                         \
  X(ne_stub)                                                                         \
  X(lt_stub)                                                                         \
  X(le_stub)                                                                         \
  X(gt_stub)                                                                         \
  X(ge_stub)                                                                         \
  X(logical_and_stub)                                                                \
  X(logical_or_stub)                                                                 \
  X(logical_xor_stub)                                                                \
  X(where_stub)                                                                      \
  X(clamp_scalar_stub)   /* unary: p0 = min or NULL, p1 = max or NULL */            \
  X(clamp_tensor_stub)   /* out, a, min, max */                                     \
  X(masked_fill_stub)    /* p0: the value */

#define KD__BINARY_DECLARE(name) KD_DECLARE_STUB(name, kd__binary_fn);
KD__BINARY_STUBS(KD__BINARY_DECLARE)
#undef KD__BINARY_DECLARE

KD_EXTERN_C_END

#endif
