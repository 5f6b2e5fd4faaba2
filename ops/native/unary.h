/*
 * unary.h: the pointwise unary operators' stub (loops in ops/cpu/unary.c,
 * meta functions and impls in ops/native/unary.c). Private to libkdops.
 */
#ifndef KD_OPS_NATIVE_UNARY_H
#define KD_OPS_NATIVE_UNARY_H

#include "iter.h"
#include "kdk/stubs.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

/* A 1-d loop: n elements, out and in advancing os / is bytes. */
typedef void kdk__uloop(char *out, const char *in, int64_t n, int64_t os, int64_t is,
                       const void *extra);

/* The kernel name PyTorch's dtype errors use ("bitwise_not_cpu"). */
const char *kdk__unary_kernel_name(kdk_unary_op op);

KD_DECLARE_STUB_CAPS(unary_stub);

/* ---- Kernels (docs/CODEGEN.md; with kdgen also declared by the generated
 * <name>_native.h headers, which must agree) ---------------------------------- */

/* Structured, structured_inherits: TensorIteratorBase. */
#define KDK__UNARY_STRUCTURED(X) \
  X(neg) X(sign) X(floor) X(ceil) X(trunc) X(round) X(exp) X(log) X(log1p) \
  X(expm1) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(tanh) X(sigmoid) X(erf) X(reciprocal)
#define KDK__UNARY_DECLARE(name)                                                          \
  kd_status kdk_meta_##name(kdk_structured *s, kdk_iter *iter, kd_tensor *self);           \
  kd_status kdk_native_##name##_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self,   \
                                    kd_tensor *out);
KDK__UNARY_STRUCTURED(KDK__UNARY_DECLARE)
#undef KDK__UNARY_DECLARE

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
