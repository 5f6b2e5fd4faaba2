/*
 * binary.h: the stubs of the pointwise binary operators (ops/native/binary.c
 * builds the iterators, ops/cpu/binary.c has the loops). Private to libkdops;
 * the loop type and the stubs' list are public (include/kdk/stubs.h).
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
#include "kdk/stubs.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

/* The loop type and the stubs are public: include/kdk/stubs.h. */
#define KDK__BINARY_CAPS(name) KD_DECLARE_STUB_CAPS(name);
KDK_BINARY_STUBS(KDK__BINARY_CAPS)
#undef KDK__BINARY_CAPS

/* The composite Scalar overloads (binary.c, bitwise.c): wraps the scalar `v`
 * as a 0-dim tensor (kdk_iter_wrap_scalar), returns CALL's status (CALL names
 * the wrapped tensor w) after releasing it; the wrapping's error else. */
#define KDK__WITH_WRAPPED(v, CALL)                  \
  do {                                              \
    kd_tensor *w = NULL;                            \
    kd_status st_ = kdk_iter_wrap_scalar(v, &w);    \
    if (st_) return st_;                            \
    st_ = (CALL);                                   \
    kd_tensor_release(w);                           \
    return st_;                                     \
  } while (0)

KD_EXTERN_C_END

#endif
