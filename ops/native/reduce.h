/*
 * reduce.h: the reduction engine shared by ops/native/reduce.c (meta and
 * impl functions of sum, mean, prod, amax, amin, argmax, argmin, max.dim,
 * min.dim, max, min, all, any, cumsum) and ops/cpu/reduce.c (the typed
 * loops, compiled once per CPU capability). Private to libkdops.
 *
 * A reduction is planned once (kd__red_plan): the kept dimensions ("outer")
 * and the reduced ones, each innermost first, size-1 dimensions dropped and
 * neighbours that step evenly merged. The reduced dimensions keep their
 * logical order, so the odometer over them counts the row-major flat index
 * (argmax without dim).
 */
#ifndef KD_OPS_NATIVE_REDUCE_H
#define KD_OPS_NATIVE_REDUCE_H

#include "kd/ops.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

typedef enum kd__red_kind {
  KD__RED_SUM = 0,
  KD__RED_PROD = 1,
  KD__RED_MAX = 2, /* amax, max(): NaN propagates */
  KD__RED_MIN = 3,
  KD__RED_ALL = 4, /* out dtype bool or uint8 */
  KD__RED_ANY = 5,
  KD__RED_ARGMAX = 6, /* out[0] values (may be NULL), out[1] int64 indices; first of ties, first NaN */
  KD__RED_ARGMIN = 7,
} kd__red_kind;

typedef struct kd__red_plan {
  int nouter; /* kept dimensions, innermost first */
  int64_t osize[KD_MAX_DIMS];
  int64_t ostride_in[KD_MAX_DIMS];     /* input strides (elements) */
  int64_t ostride_out[2][KD_MAX_DIMS]; /* strides of out[0], out[1] (elements) */
  int nred;                            /* reduced dimensions, innermost first */
  int64_t rsize[KD_MAX_DIMS];
  int64_t rstride[KD_MAX_DIMS];
  int64_t out_numel, red_numel;
} kd__red_plan;

/* One reduction to run: the input (of dtype `dtype`) and up to two outputs. */
typedef struct kd__red_task {
  kd__red_kind kind;
  kd_dtype dtype;     /* input dtype; out[0] has it too except for ALL/ANY */
  kd_dtype out_dtype; /* ALL/ANY: bool or uint8 */
  const kd__red_plan *plan;
  const char *in; /* element 0 of the input */
  char *out[2];   /* element 0 of the outputs (out[1]: int64 indices) */
} kd__red_task;

/* A partial result of one output position over part of its reduced range. */
typedef struct kd__red_acc {
  union {
    double d;
    float f;
    int64_t i;
    double c[2];
    float cf[2];
  } v;
  int64_t index; /* index ops: the flat index of the chosen element */
  bool any;      /* index ops: false while no element was seen */
} kd__red_acc;

/* Reduces output positions [begin, end) (linear over the plan's outer
 * dimensions, innermost fastest). */
typedef void kd__reduce_rows_fn(const kd__red_task *t, int64_t begin, int64_t end);
KD_DECLARE_STUB(reduce_rows_stub, kd__reduce_rows_fn);

/* Plans with nred == 1: the partial of output position `pos` over reduced
 * indices [rb, re) into *acc. */
typedef void kd__reduce_part_fn(const kd__red_task *t, int64_t pos, int64_t rb, int64_t re,
                                kd__red_acc *acc);
KD_DECLARE_STUB(reduce_part_stub, kd__reduce_part_fn);

/* Combines n partials of output position `pos` (in order of their ranges)
 * and writes the result. */
typedef void kd__reduce_finish_fn(const kd__red_task *t, int64_t pos, const kd__red_acc *parts,
                                  int n);
KD_DECLARE_STUB(reduce_finish_stub, kd__reduce_finish_fn);

/* Cumulative sum along one dimension: n outer positions (given as element
 * offsets via the same odometer as rows), `len` elements `istride` /
 * `ostride` apart. in and out have dtype `dtype`. */
typedef void kd__cumsum_fn(kd_dtype dtype, const kd__red_plan *plan, const char *in, char *out,
                           int64_t len, int64_t istride, int64_t ostride);
KD_DECLARE_STUB(cumsum_stub, kd__cumsum_fn);

/* Element offsets of output position `pos` in the input and in both outputs. */
static inline void kd__red_offsets(const kd__red_plan *p, int64_t pos, int64_t *in_off,
                                   int64_t *out0_off, int64_t *out1_off) {
  int64_t a = 0, b = 0, c = 0;
  for (int d = 0; d < p->nouter && pos > 0; d++) {
    int64_t i = pos % p->osize[d];
    pos /= p->osize[d];
    a += i * p->ostride_in[d];
    b += i * p->ostride_out[0][d];
    c += i * p->ostride_out[1][d];
  }
  *in_off = a;
  *out0_off = b;
  *out1_off = c;
}

/* ---- Kernels (ops/native/reduce.c) ------------------------------------------------
 * Prototypes as kdgen declares them from the Reductions section of
 * ops/native_functions.yaml (docs/CODEGEN.md); the structured metas with a
 * precomputed struct (max.dim, min.dim, all.dim, any.dim) come from the
 * generated headers only. */
#include "structured.h"

kd_status kd__meta_sum_dim_IntList(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                   const kd_dtype *dtype);
kd_status kd__native_sum_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                 const kd_dtype *dtype, kd_tensor *out);
kd_status kd__meta_mean_dim(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                            const kd_dtype *dtype);
kd_status kd__native_mean_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out);
kd_status kd__meta_prod_dim_int(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                const kd_dtype *dtype);
kd_status kd__native_prod_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                  const kd_dtype *dtype, kd_tensor *out);
/* prod(): CPU, Meta: prod_all. */
kd_status kd__native_prod_all(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out);
kd_status kd__meta_amax(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim);
kd_status kd__meta_amin(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim);
kd_status kd__native_amax_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out);
kd_status kd__native_amin_out_cpu(kd_structured *s, kd_tensor *self, kd_ints dim, bool keepdim,
                                  kd_tensor *out);
kd_status kd__meta_argmax(kd_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim);
kd_status kd__meta_argmin(kd_structured *s, kd_tensor *self, const int64_t *dim, bool keepdim);
kd_status kd__native_argmax_out_cpu(kd_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out);
kd_status kd__native_argmin_out_cpu(kd_structured *s, kd_tensor *self, const int64_t *dim,
                                    bool keepdim, kd_tensor *out);
kd_status kd__native_max_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices);
kd_status kd__native_min_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *values, kd_tensor *indices);
/* max(), min(): CPU, Meta: max_all / min_all. */
kd_status kd__native_max_all(kd_tensor *self, kd_tensor **out);
kd_status kd__native_min_all(kd_tensor *self, kd_tensor **out);
kd_status kd__meta_all(kd_structured *s, kd_tensor *self);
kd_status kd__meta_any(kd_structured *s, kd_tensor *self);
kd_status kd__native_all_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out);
kd_status kd__native_any_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim, bool keepdim,
                                 kd_tensor *out);
kd_status kd__native_all_all_out_cpu(kd_structured *s, kd_tensor *self, kd_tensor *out);
kd_status kd__native_any_all_out_cpu(kd_structured *s, kd_tensor *self, kd_tensor *out);
kd_status kd__meta_cumsum(kd_structured *s, kd_tensor *self, int64_t dim, const kd_dtype *dtype);
kd_status kd__native_cumsum_out_cpu(kd_structured *s, kd_tensor *self, int64_t dim,
                                    const kd_dtype *dtype, kd_tensor *out);
/* Composites (generated builds only): sum(), mean(). */
kd_status kd__native_sum(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out);
kd_status kd__native_mean(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out);

/* softmax.c */
kd_status kd__meta__softmax(kd_structured *s, kd_tensor *self, int64_t dim, bool half_to_float);
kd_status kd__meta__log_softmax(kd_structured *s, kd_tensor *self, int64_t dim,
                                bool half_to_float);
kd_status kd__native_softmax_cpu_out(kd_structured *s, kd_tensor *self, int64_t dim,
                                     bool half_to_float, kd_tensor *out);
kd_status kd__native_log_softmax_cpu_out(kd_structured *s, kd_tensor *self, int64_t dim,
                                         bool half_to_float, kd_tensor *out);
kd_status kd__native_softmax_int(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                 kd_tensor **out);
kd_status kd__native_softmax_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                 kd_tensor *out);
kd_status kd__native_log_softmax_int(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                     kd_tensor **out);
kd_status kd__native_log_softmax_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                     kd_tensor *out);

KD_EXTERN_C_END

#endif
