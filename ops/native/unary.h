/*
 * unary.h: the pointwise unary operators' stub (loops in ops/cpu/unary.c,
 * meta functions and impls in ops/native/unary.c). Private to libkdops.
 */
#ifndef KD_OPS_NATIVE_UNARY_H
#define KD_OPS_NATIVE_UNARY_H

#include "iter.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

/* The loops the unary stub knows. */
typedef enum kd__unary_op {
  KD__UNARY_NEG,
  KD__UNARY_ABS,         /* same dtype in and out (complex: |z| + 0i) */
  KD__UNARY_ABS_TO_REAL, /* complex in, its real dtype out */
  KD__UNARY_SIGN,
  KD__UNARY_BITWISE_NOT,
  KD__UNARY_RELU,
  KD__UNARY_FLOOR,
  KD__UNARY_CEIL,
  KD__UNARY_TRUNC,
  KD__UNARY_ROUND,
  KD__UNARY_ROUND_DECIMALS, /* extra: ten_pow, neg_decimals */
  KD__UNARY_EXP,
  KD__UNARY_LOG,
  KD__UNARY_LOG1P,
  KD__UNARY_EXPM1,
  KD__UNARY_SQRT,
  KD__UNARY_RSQRT,
  KD__UNARY_SIN,
  KD__UNARY_COS,
  KD__UNARY_TAN,
  KD__UNARY_TANH,
  KD__UNARY_SIGMOID,
  KD__UNARY_RECIPROCAL,
  KD__UNARY_ERF,
  KD__UNARY_GELU,      /* approximate='none' */
  KD__UNARY_GELU_TANH, /* approximate='tanh' */
  KD__UNARY_LOGICAL_NOT, /* any dtype in, any dtype out */
  KD__UNARY_OP_COUNT
} kd__unary_op;

/* What some loops read besides the elements. */
typedef struct kd__unary_extra {
  double ten_pow;   /* round.decimals: 10^|decimals| */
  int neg_decimals; /* round.decimals: decimals < 0 */
  kd_dtype in_dtype, out_dtype; /* logical_not; filled by the kernel */
} kd__unary_extra;

/* A 1-d loop: n elements, out and in advancing os / is bytes. */
typedef void kd__uloop(char *out, const char *in, int64_t n, int64_t os, int64_t is,
                       const void *extra);

/* The kernel name PyTorch's dtype errors use ("bitwise_not_cpu"). */
const char *kd__unary_kernel_name(kd__unary_op op);

/* Runs loop `op` over the iterator (output 0, input 1; built by one of the
 * unary builders). The loop is chosen by the input's dtype (which is the
 * output's, except for ABS_TO_REAL and LOGICAL_NOT). KD_ETYPE ("\"exp_cpu\" not
 * implemented for 'int64'") when the operator has no loop for that dtype;
 * nothing is written then. `extra` may be NULL for loops that read none. */
typedef kd_status kd__unary_fn(kdk_iter *iter, kd__unary_op op, const kd__unary_extra *extra);
KD_DECLARE_STUB(unary_stub, kd__unary_fn);

/* ---- Kernels (docs/CODEGEN.md; with kdgen also declared by the generated
 * <name>_native.h headers, which must agree) ---------------------------------- */

/* Structured, structured_inherits: TensorIteratorBase. */
#define KD__UNARY_STRUCTURED(X) \
  X(neg) X(sign) X(floor) X(ceil) X(trunc) X(round) X(exp) X(log) X(log1p) \
  X(expm1) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(tanh) X(sigmoid) X(erf) X(reciprocal)
#define KD__UNARY_DECLARE(name)                                                          \
  kd_status kdk_meta_##name(kdk_structured *s, kdk_iter *iter, kd_tensor *self);           \
  kd_status kdk_native_##name##_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self,   \
                                    kd_tensor *out);
KD__UNARY_STRUCTURED(KD__UNARY_DECLARE)
#undef KD__UNARY_DECLARE

kd_status kdk_meta_round_decimals(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                  int64_t decimals);
kd_status kdk_native_round_decimals_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                        int64_t decimals, kd_tensor *out);
kd_status kdk_meta_gelu(kdk_structured *s, kdk_iter *iter, kd_tensor *self, const char *approximate);
kd_status kdk_native_gelu_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                  const char *approximate, kd_tensor *out);

/* Not structured: abs and logical_not (CompositeExplicitAutograd functional
 * and inplace variants over the out kernel, which serves CPU and Meta), relu
 * (CPU and Meta). */
kd_status kdk_native_abs(kd_tensor *self, kd_tensor **out);
kd_status kdk_native_abs_(kd_tensor *self);
kd_status kdk_native_abs_out(kd_tensor *self, kd_tensor *out);
kd_status kdk_native_logical_not(kd_tensor *self, kd_tensor **out);
kd_status kdk_native_logical_not_(kd_tensor *self);
kd_status kdk_native_logical_not_out(kd_tensor *self, kd_tensor *out);
kd_status kdk_native_relu(kd_tensor *self, kd_tensor **out);
kd_status kdk_native_relu_(kd_tensor *self);

KD_EXTERN_C_END

#endif
