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
#include "stub.h"

KD_EXTERN_C_BEGIN

typedef enum kd__red_kind {
  KD__RED_SUM = 0,
  KD__RED_PROD = 1,
  KD__RED_MEAN = 2, /* the sum, then each output divided by the row length */
  KD__RED_MAX = 3,  /* amax, max(): NaN propagates */
  KD__RED_MIN = 4,
  KD__RED_ALL = 5, /* output bool or uint8, input any dtype */
  KD__RED_ANY = 6,
  KD__RED_ARGMAX = 7, /* first of ties, first NaN */
  KD__RED_ARGMIN = 8,
} kd__red_kind;

/* Runs reduction `kind` over `it`, a reduction iterator (kdk_iter_set_reduction)
 * with one input (the last operand) and these outputs:
 *   SUM, PROD, MEAN, MAX, MIN: one, of the input's dtype (mean: floating or
 *     complex);
 *   ALL, ANY: one, bool or uint8;
 *   ARGMAX, ARGMIN: one (the int64 indices), or two (values of the input's
 *     dtype, then the int64 indices: max.dim / min.dim).
 * Indices count elements of the row in row-major order of the reduced dims.
 * Runs over threads above KD_GRAIN_SIZE elements, a single long row in
 * pieces. Nothing on meta. KD_ETYPE ("\"sum_cpu\" not implemented for
 * 'complex64'") when no loop handles the dtypes; nothing is written then. */
typedef kd_status kd__reduce_fn(const kdk_iter *it, kd__red_kind kind);
KD_DECLARE_STUB(reduce_stub, kd__reduce_fn);

/* Cumulative sum along the row of `it` (kdk_iter_set_row_dim): output 0 and
 * input 1 of the same dtype; rows over threads. KD_ETYPE as reduce_stub. */
typedef kd_status kd__cumsum_fn(const kdk_iter *it);
KD_DECLARE_STUB(cumsum_stub, kd__cumsum_fn);

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
