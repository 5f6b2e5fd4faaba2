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

/* The loops the unary stub knows, one row each: X(ENUM, name, kernel, kind).
 *   ENUM:   the value KDK_UNARY_<ENUM>. The rows' order is the ABI: append only.
 *   name:   the loop's name in libkdops (its CPU loop table, ops/cpu/unary.c;
 *           for the structured ones also the operator, kdk_meta_<name>).
 *   kernel: the kernel name of PyTorch's dtype errors
 *           ("\"exp_cpu\" not implemented for 'int64'").
 *   kind:   FLOAT, structured, integer inputs computed in the default
 *           floating dtype; SAME, structured, the output of the input's dtype;
 *           OWN, a kernel of its own (ops/native/unary.c).
 * libkdops generates the enum, the kernel names, its loop tables and its
 * structured kernels from this one list. */
#define KDK_UNARY_OPS(X)                                                                \
  X(NEG, neg, "neg_cpu", SAME)                                                          \
  X(ABS, abs, "abs_cpu", OWN) /* same dtype in and out (complex: |z| + 0i) */           \
  X(ABS_TO_REAL, abs_to_real, "abs_cpu", OWN) /* complex in, its real dtype out */      \
  X(SIGN, sign, "sign_cpu", SAME)                                                       \
  X(BITWISE_NOT, bitwise_not, "bitwise_not_cpu", OWN)                                   \
  X(RELU, relu, "relu_cpu", OWN)                                                        \
  X(FLOOR, floor, "floor_cpu", SAME)                                                    \
  X(CEIL, ceil, "ceil_cpu", SAME)                                                       \
  X(TRUNC, trunc, "trunc_cpu", SAME)                                                    \
  X(ROUND, round, "round_cpu", SAME)                                                    \
  X(ROUND_DECIMALS, round_decimals, "round_cpu", OWN) /* extra: ten_pow, neg_decimals */ \
  X(EXP, exp, "exp_cpu", FLOAT)                                                         \
  X(LOG, log, "log_cpu", FLOAT)                                                         \
  X(LOG1P, log1p, "log1p_cpu", FLOAT)                                                   \
  X(EXPM1, expm1, "expm1_cpu", FLOAT)                                                   \
  X(SQRT, sqrt, "sqrt_cpu", FLOAT)                                                      \
  X(RSQRT, rsqrt, "rsqrt_cpu", FLOAT)                                                   \
  X(SIN, sin, "sin_cpu", FLOAT)                                                         \
  X(COS, cos, "cos_cpu", FLOAT)                                                         \
  X(TAN, tan, "tan_cpu", FLOAT)                                                         \
  X(TANH, tanh, "tanh_cpu", FLOAT)                                                      \
  X(SIGMOID, sigmoid, "sigmoid_cpu", FLOAT)                                             \
  X(RECIPROCAL, reciprocal, "reciprocal_cpu", FLOAT)                                    \
  X(ERF, erf, "erf_cpu", FLOAT)                                                         \
  X(GELU, gelu, "GeluKernelImpl", OWN)            /* approximate='none' */              \
  X(GELU_TANH, gelu_tanh, "GeluKernelImpl", OWN)  /* approximate='tanh' */              \
  X(LOGICAL_NOT, logical_not, "logical_not_cpu", OWN) /* any dtype in, any dtype out */

typedef enum kdk_unary_op {
#define KDK_UNARY_ENUM_(E, name, kernel, kind) KDK_UNARY_##E,
  KDK_UNARY_OPS(KDK_UNARY_ENUM_)
#undef KDK_UNARY_ENUM_
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

/* The reductions, one row each: X(ENUM, kernel). ENUM: the value
 * KDK_REDUCE_<ENUM>, the rows' order is the ABI (append only); kernel: the
 * kernel name of PyTorch's dtype errors. */
#define KDK_REDUCE_KINDS(X)                                                             \
  X(SUM, "sum_cpu")                                                                     \
  X(PROD, "prod_cpu")                                                                   \
  X(MEAN, "mean_cpu")         /* the sum, then each output divided by the row length */ \
  X(MAX, "max_values_cpu")    /* amax, max(): NaN propagates */                         \
  X(MIN, "min_values_cpu")                                                              \
  X(ALL, "all_cpu")           /* output bool or uint8, input any dtype */               \
  X(ANY, "any_cpu")                                                                     \
  X(ARGMAX, "argmax_cpu")     /* first of ties, first NaN */                            \
  X(ARGMIN, "argmin_cpu")

typedef enum kdk_reduce_kind {
#define KDK_REDUCE_ENUM_(E, kernel) KDK_REDUCE_##E,
  KDK_REDUCE_KINDS(KDK_REDUCE_ENUM_)
#undef KDK_REDUCE_ENUM_
} kdk_reduce_kind;
/* How many rows KDK_REDUCE_KINDS has (not a kdk_reduce_kind: switches over
 * one need no case for it). */
#define KDK_REDUCE_COUNT_(E, kernel) +1
enum { KDK_REDUCE_KIND_COUNT = 0 KDK_REDUCE_KINDS(KDK_REDUCE_COUNT_) };
#undef KDK_REDUCE_COUNT_

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
