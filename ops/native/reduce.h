/*
 * reduce.h: the reductions' dispatch stubs, shared by ops/native/reduce.c
 * (meta and impl functions of sum, mean, prod, amax, amin, argmax, argmin,
 * max.dim, min.dim, max, min, all, any, cumsum) and ops/cpu/reduce.c (the
 * typed loops, compiled once per CPU capability). Private to libkdops.
 *
 * The impl functions build a kdk_iter in reduction mode (PyTorch's
 * make_reduction: the outputs the meta functions set up, the input converted
 * to the computation dtype) and hand it to reduce_stub, which runs the loops
 * over the iterator's rows (ops/src/iter.h, "Reductions and rows"); several
 * iterators in stages when the reduced dims are several runs of memory
 * (reduce.c, "Stages"). cumsum builds one with a row dim and hands it to
 * cumsum_stub.
 */
#ifndef KD_OPS_NATIVE_REDUCE_H
#define KD_OPS_NATIVE_REDUCE_H

#include "iter.h"
#include "kd/ops.h"
#include "kdk/stubs.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

/* The loop types and the stubs are public: include/kdk/stubs.h. */
KD_DECLARE_STUB_CAPS(reduce_stub);
KD_DECLARE_STUB_CAPS(cumsum_stub);

/* The kernels (kdk_meta_*, kdk_native_* of reduce.c and softmax.c) are
 * declared by kdgen's generated headers only (kdk/native/<name>.h,
 * docs/CODEGEN.md). */

KD_EXTERN_C_END

#endif
