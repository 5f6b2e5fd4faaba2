/*
 * kdk/stubs.h: libkdops' dispatch stubs and their loop types, part of the
 * kernel-author kit (kdk/common.h; the mechanism is kdk/stub.h).
 *
 * libkdops' impl functions (kdk_native_*, the upstream impls a backend's
 * Legacy operators reuse) build a kdk_iter and call one of these stubs for
 * the iterator's device. A backend registers its loop per stub and device
 * type (KDK_REGISTER_DEVICE_STUB); ops/native_functions.yaml names, on each
 * structured out entry, the stubs its impl calls (kd_stubs:, docs/CODEGEN.md).
 *
 * Every loop returns KD_OK or an error set with kd_set_error (a dtype it
 * does not handle: "\"add_cpu\" not implemented for 'bool'", ...); its
 * arguments are borrowed for the call. Loops run only on built, non-meta
 * iterators whose operands are on the loop's device; they may use
 * kdk_iter_for_each (kdk/iter.h) or run their own device code over
 * kdk_iter_data / kdk_iter_stride.
 */
#ifndef KDK_STUBS_H
#define KDK_STUBS_H

#include "kd/ops.h"
#include "kdk/iter.h"
#include "kdk/stub.h"

KD_EXTERN_C_BEGIN

/* ---- Pointwise binary (add, mul, div, comparisons, where, clamp, ...) --------
 * Every binary stub has one type: the iterator (built by the operator's meta
 * function; its inputs already in the common dtype) and up to two scalar
 * parameters (alpha, clamp's min and max, pow's exponent, masked_fill's
 * value; NULL when the operator has none).
 *
 * Iterator layouts (operand order: outputs, then inputs):
 *   binary (add ... logical_xor, clamp with one tensor bound): out, a, b
 *   comparison and logical: out (bool, or the common dtype), a, b
 *   pow_tensor_scalar, clamp_scalar (unary): out, a
 *   where: out, condition (bool), a, b        (a, b and out of one dtype)
 *   clamp_tensor: out, a, min, max
 *   masked_fill: self (the output), mask (bool)
 */
typedef kd_status kdk_binary_fn(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1);

/* The flat list of stubs: X(name). */
#define KDK_BINARY_STUBS(X)                                                          \
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

#define KDK_BINARY_DECLARE_(name) KDK_DECLARE_STUB(name, kdk_binary_fn);
KDK_BINARY_STUBS(KDK_BINARY_DECLARE_)
#undef KDK_BINARY_DECLARE_

/* ---- Pointwise unary (neg, abs, exp, sin, gelu, logical_not, ...) ---------- */

/* The loops the unary stub knows. */
typedef enum kdk_unary_op {
  KDK_UNARY_NEG,
  KDK_UNARY_ABS,         /* same dtype in and out (complex: |z| + 0i) */
  KDK_UNARY_ABS_TO_REAL, /* complex in, its real dtype out */
  KDK_UNARY_SIGN,
  KDK_UNARY_BITWISE_NOT,
  KDK_UNARY_RELU,
  KDK_UNARY_FLOOR,
  KDK_UNARY_CEIL,
  KDK_UNARY_TRUNC,
  KDK_UNARY_ROUND,
  KDK_UNARY_ROUND_DECIMALS, /* extra: ten_pow, neg_decimals */
  KDK_UNARY_EXP,
  KDK_UNARY_LOG,
  KDK_UNARY_LOG1P,
  KDK_UNARY_EXPM1,
  KDK_UNARY_SQRT,
  KDK_UNARY_RSQRT,
  KDK_UNARY_SIN,
  KDK_UNARY_COS,
  KDK_UNARY_TAN,
  KDK_UNARY_TANH,
  KDK_UNARY_SIGMOID,
  KDK_UNARY_RECIPROCAL,
  KDK_UNARY_ERF,
  KDK_UNARY_GELU,      /* approximate='none' */
  KDK_UNARY_GELU_TANH, /* approximate='tanh' */
  KDK_UNARY_LOGICAL_NOT, /* any dtype in, any dtype out */
  KDK_UNARY_OP_COUNT
} kdk_unary_op;

/* What some loops read besides the elements. */
typedef struct kdk_unary_extra {
  double ten_pow;   /* round.decimals: 10^|decimals| */
  int neg_decimals; /* round.decimals: decimals < 0 */
  kd_dtype in_dtype, out_dtype; /* logical_not; filled by the kernel */
} kdk_unary_extra;

/* Runs loop `op` over the iterator (output 0, input 1; built by one of the
 * unary builders). The loop is chosen by the input's dtype (which is the
 * output's, except for ABS_TO_REAL and LOGICAL_NOT). KD_ETYPE ("\"exp_cpu\" not
 * implemented for 'int64'") when the operator has no loop for that dtype;
 * nothing is written then. `extra` may be NULL for loops that read none. */
typedef kd_status kdk_unary_fn(kdk_iter *iter, kdk_unary_op op, const kdk_unary_extra *extra);
KDK_DECLARE_STUB(unary_stub, kdk_unary_fn);

/* ---- Reductions ---------------------------------------------------------------- */

typedef enum kdk_reduce_kind {
  KDK_REDUCE_SUM = 0,
  KDK_REDUCE_PROD = 1,
  KDK_REDUCE_MEAN = 2, /* the sum, then each output divided by the row length */
  KDK_REDUCE_MAX = 3,  /* amax, max(): NaN propagates */
  KDK_REDUCE_MIN = 4,
  KDK_REDUCE_ALL = 5, /* output bool or uint8, input any dtype */
  KDK_REDUCE_ANY = 6,
  KDK_REDUCE_ARGMAX = 7, /* first of ties, first NaN */
  KDK_REDUCE_ARGMIN = 8,
} kdk_reduce_kind;

/* Runs reduction `kind` over `it`, a reduction iterator (kdk_iter_set_reduction)
 * with one input (the last operand) and these outputs:
 *   SUM, PROD, MEAN, MAX, MIN: one, of the input's dtype (mean: floating or
 *     complex);
 *   ALL, ANY: one, bool or uint8;
 *   ARGMAX, ARGMIN: one (the int64 indices), or two (values of the input's
 *     dtype, then the int64 indices: max.dim / min.dim).
 * Indices count elements of the row in row-major order of the reduced dims.
 * Runs over threads above KDK_GRAIN_SIZE elements, a single long row in
 * pieces. Nothing on meta. KD_ETYPE ("\"sum_cpu\" not implemented for
 * 'complex64'") when no loop handles the dtypes; nothing is written then. */
typedef kd_status kdk_reduce_fn(const kdk_iter *it, kdk_reduce_kind kind);
KDK_DECLARE_STUB(reduce_stub, kdk_reduce_fn);

/* Cumulative sum along the row of `it` (kdk_iter_set_row_dim): output 0 and
 * input 1 of the same dtype; rows over threads. KD_ETYPE as reduce_stub. */
typedef kd_status kdk_cumsum_fn(const kdk_iter *it);
KDK_DECLARE_STUB(cumsum_stub, kdk_cumsum_fn);

/* ---- Fill ---------------------------------------------------------------------- */

/* Writes `value`, converted to self's dtype as kd_scalar_to_element converts
 * (with its errors: KD_EOVERFLOW, KD_ETYPE; nothing is written then), into
 * every element of self: any sizes, strides and storage offset. Elements that
 * share memory (expanded tensors) are simply written more than once.
 * libkdops calls it for the tensor's device (nothing for meta tensors); its
 * CPU loop refuses a tensor of another device with KD_EUNSUPPORTED. */
typedef kd_status kdk_fill_fn(kd_tensor *self, const kd_scalar *value);
KDK_DECLARE_STUB(fill_stub, kdk_fill_fn);

KD_EXTERN_C_END

#endif
