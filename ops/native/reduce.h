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

/* ---- Kernels (ops/native/reduce.c) ------------------------------------------------
 * Prototypes as kdgen declares them from the Reductions section of
 * ops/native_functions.yaml (docs/CODEGEN.md); the structured metas with a
 * precomputed struct (max.dim, min.dim, all.dim, any.dim) come from the
 * generated headers only. */
#include "structured.h"

kd_status kdk_meta_sum_dim_IntList(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                   const kd_dtype *dtype);
kd_status kdk_native_sum_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                 const kd_dtype *dtype, kd_tensor *out);
kd_status kdk_meta_mean_dim(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                            const kd_dtype *dtype);
kd_status kdk_native_mean_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out);
kd_status kdk_meta_prod_dim_int(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                const kd_dtype *dtype);
kd_status kdk_native_prod_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out);
/* prod(): CPU, Meta: prod_all. */
kd_status kdk_native_prod_all(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out);
kd_status kdk_meta_amax(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim);
kd_status kdk_meta_amin(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim);
kd_status kdk_native_amax_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out);
kd_status kdk_native_amin_out_cpu(kdk_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out);
kd_status kdk_meta_argmax(kdk_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim);
kd_status kdk_meta_argmin(kdk_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim);
kd_status kdk_native_argmax_out_cpu(kdk_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out);
kd_status kdk_native_argmin_out_cpu(kdk_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out);
kd_status kdk_native_max_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices);
kd_status kdk_native_min_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices);
/* max(), min(): CPU, Meta: max_all / min_all. */
kd_status kdk_native_max_all(kd_tensor *self, kd_tensor **out);
kd_status kdk_native_min_all(kd_tensor *self, kd_tensor **out);
kd_status kdk_meta_all(kdk_structured *s, kd_tensor *self);
kd_status kdk_meta_any(kdk_structured *s, kd_tensor *self);
kd_status kdk_native_all_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out);
kd_status kdk_native_any_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out);
kd_status kdk_native_all_all_out_cpu(kdk_structured *s, kd_tensor *self, kd_tensor *out);
kd_status kdk_native_any_all_out_cpu(kdk_structured *s, kd_tensor *self, kd_tensor *out);
kd_status kdk_meta_cumsum(kdk_structured *s, kd_tensor *self, int64_t dim, const kd_dtype *dtype);
kd_status kdk_native_cumsum_out_cpu(kdk_structured *s, kd_tensor *self, int64_t dim,
                                    const kd_dtype *dtype, kd_tensor *out);
/* Composites (generated builds only): sum(), mean(). */
kd_status kdk_native_sum(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out);
kd_status kdk_native_mean(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out);

/* softmax.c */
kd_status kdk_meta__softmax(kdk_structured *s, kd_tensor *self, int64_t dim, bool half_to_float);
kd_status kdk_meta__log_softmax(kdk_structured *s, kd_tensor *self, int64_t dim,
                                bool half_to_float);
kd_status kdk_native_softmax_cpu_out(kdk_structured *s, kd_tensor *self, int64_t dim,
                                     bool half_to_float, kd_tensor *out);
kd_status kdk_native_log_softmax_cpu_out(kdk_structured *s, kd_tensor *self, int64_t dim,
                                         bool half_to_float, kd_tensor *out);
kd_status kdk_native_softmax_int(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                 kd_tensor **out);
kd_status kdk_native_softmax_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                 kd_tensor *out);
kd_status kdk_native_log_softmax_int(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                     kd_tensor **out);
kd_status kdk_native_log_softmax_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                     kd_tensor *out);

KD_EXTERN_C_END

#endif
