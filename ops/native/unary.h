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

/* The kernels (kdk_meta_<name>, kdk_native_<name>...) are declared by kdgen's
 * generated headers only (kdk/native/<name>.h, docs/CODEGEN.md); the list of
 * loops, from which unary.c defines the structured ones, is KDK_UNARY_OPS
 * (kdk/stubs.h). */

KD_EXTERN_C_END

#endif
