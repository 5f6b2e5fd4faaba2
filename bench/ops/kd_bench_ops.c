/*
 * kd_bench_ops.c: `kd-bench ops`, the operator library's figures, printed as
 * "name value" lines (kd-bench-libtorch ops prints the same for libtorch):
 *   add_1_ns        functional add of two 1-element float32 tensors through
 *                   the dispatcher, result released (median ns per call)
 *   add_out_1_ns    add.out into a preallocated 1-element tensor
 *   empty_1_ns      empty([1]) float32, released
 *   neg_1_ns        functional neg of a 1-element float32 tensor (a unary
 *                   through the iterator), result released
 *   sum_1_ns        sum of a 1-element float32 tensor (a reduction), result
 *                   released
 *   c_loop_add_16M_f32_GBps   c[i] = a[i] + b[i] over 16M floats, a plain C
 *                   loop (the reference; 12 bytes moved per element)
 *   add_16M_f32_GBps_1t, add_16M_f32_GBps   add.out over 16M floats, one
 *                   thread and all threads (12 bytes per element)
 *   sum_16M_f32_GBps  sum of 16M floats (4 bytes per element), all threads
 *   mm_512_f32_gflops        mm.out of two 512x512 float32 matrices
 *   blas_mm_512_f32_gflops   cblas_sgemm called directly on the same data
 *                   (when libkdops was built with OpenBLAS)
 * Small figures: median of 15 repetitions of 200,000 calls; large ones:
 * median of 15 repetitions of one call, after a warm-up.
 */
#include <stdio.h>
#include <string.h>

#include "bench_groups.h"
#include "bench_util.h"
#include "kd/ops.h"
#ifdef KD_BENCH_HAVE_CBLAS
#include <cblas.h>
#endif

#define REPS 15
#define SMALL_CALLS 200000
#define BIG ((int64_t)16 * 1024 * 1024)

typedef struct bench_ctx {
  kd_tensor *a, *b, *o;
} bench_ctx;

static int check(kd_status st, const char *what) {
  if (st) fprintf(stderr, "kd-bench ops: %s: %s\n", what, kd_last_error());
  return st != KD_OK;
}

static double small_add(bench_ctx *c, int variant) {
  double s[REPS];
  const int64_t one = 1;
  kd_ints size = {&one, 1};
  kd_dtype f32 = KD_FLOAT32;
  for (int r = -1; r < REPS; r++) {
    uint64_t t0 = kd_bench_now_ns();
    for (int i = 0; i < SMALL_CALLS; i++) {
      kd_tensor *t = NULL;
      if (variant == 0) {
        kd_add_Tensor(c->a, c->b, NULL, &t);
      } else if (variant == 1) {
        kd_add_out(c->a, c->b, NULL, c->o);
      } else if (variant == 3) {
        kd_neg(c->a, &t);
      } else if (variant == 4) {
        kd_sum(c->a, NULL, &t);
      } else {
        kd_empty_memory_format(size, &f32, NULL, NULL, NULL, NULL, &t);
      }
      kd_tensor_release(t);
    }
    uint64_t t1 = kd_bench_now_ns();
    if (r >= 0) s[r] = (double)(t1 - t0) / SMALL_CALLS;
  }
  return kd_bench_median(s, REPS);
}

static void c_add(const float *restrict a, const float *restrict b, float *restrict o, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}

/* Median seconds of one call of `what` (0 C loop, 1 add.out, 2 sum, 3 mm.out, 4 sgemm). */
static double big_secs(bench_ctx *c, int what) {
  double s[REPS];
  for (int r = -1; r < REPS; r++) {
    kd_tensor *t = NULL;
    uint64_t t0 = kd_bench_now_ns();
    switch (what) {
    case 0:
      c_add(kd_tensor_data(c->a), kd_tensor_data(c->b), kd_tensor_data(c->o), kd_tensor_numel(c->a));
      break;
    case 1: kd_add_out(c->a, c->b, NULL, c->o); break;
    case 2: kd_sum(c->a, NULL, &t); break;
    case 3: kd_mm_out(c->a, c->b, c->o); break;
    default:
#ifdef KD_BENCH_HAVE_CBLAS
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 512, 512, 512, 1.0f, kd_tensor_data(c->a),
                  512, kd_tensor_data(c->b), 512, 0.0f, kd_tensor_data(c->o), 512);
#endif
      break;
    }
    uint64_t t1 = kd_bench_now_ns();
    kd_bench_escape(kd_tensor_data(c->o));
    kd_tensor_release(t);
    if (r >= 0) s[r] = (double)(t1 - t0) * 1e-9;
  }
  return kd_bench_median(s, REPS);
}

static int make(int ndim, const int64_t *sizes, float value, kd_tensor **out) {
  if (check(kd_tensor_empty(ndim, sizes, KD_FLOAT32, kd_device_cpu(), out), "empty")) return 1;
  float *p = kd_tensor_data(*out);
  for (int64_t i = 0; i < kd_tensor_numel(*out); i++) p[i] = value + (float)(i % 7);
  return 0;
}

int kd_bench_ops(int argc, char **argv) {
  (void)argc;
  (void)argv;
  if (check(kd_ops_open(), "kd_ops_open")) return 1;
  bench_ctx c = {0};
  int rc = 1;
  const int64_t one = 1, big = BIG, mat[2] = {512, 512};
  if (make(1, &one, 1, &c.a) || make(1, &one, 2, &c.b) || make(1, &one, 0, &c.o)) goto done;
  /* Each timed call must work: a failing call would be timed as an error path. */
  kd_tensor *probe = NULL;
  kd_dtype f32 = KD_FLOAT32;
  if (check(kd_add_Tensor(c.a, c.b, NULL, &probe), "add")) goto done;
  kd_tensor_release(probe);
  probe = NULL;
  if (check(kd_add_out(c.a, c.b, NULL, c.o), "add.out")) goto done;
  if (check(kd_empty_memory_format((kd_ints){&one, 1}, &f32, NULL, NULL, NULL, NULL, &probe), "empty"))
    goto done;
  kd_tensor_release(probe);
  probe = NULL;
  if (check(kd_neg(c.a, &probe), "neg")) goto done;
  kd_tensor_release(probe);
  probe = NULL;
  if (check(kd_sum(c.a, NULL, &probe), "sum")) goto done;
  kd_tensor_release(probe);
  printf("add_1_ns %.1f\n", small_add(&c, 0));
  printf("add_out_1_ns %.1f\n", small_add(&c, 1));
  printf("empty_1_ns %.1f\n", small_add(&c, 2));
  printf("neg_1_ns %.1f\n", small_add(&c, 3));
  printf("sum_1_ns %.1f\n", small_add(&c, 4));
  kd_tensor_release(c.a);
  kd_tensor_release(c.b);
  kd_tensor_release(c.o);
  c.a = c.b = c.o = NULL;

  if (make(1, &big, 1, &c.a) || make(1, &big, 2, &c.b) || make(1, &big, 0, &c.o)) goto done;
  if (check(kd_add_out(c.a, c.b, NULL, c.o), "add.out 16M")) goto done;
  if (check(kd_sum(c.a, NULL, &probe), "sum")) goto done;
  kd_tensor_release(probe);
  double bytes = (double)BIG * 12;
  printf("c_loop_add_16M_f32_GBps %.2f\n", bytes / big_secs(&c, 0) * 1e-9);
  int threads = kd_get_num_threads();
  kd_set_num_threads(1);
  printf("add_16M_f32_GBps_1t %.2f\n", bytes / big_secs(&c, 1) * 1e-9);
  kd_set_num_threads(threads);
  printf("add_16M_f32_GBps %.2f\n", bytes / big_secs(&c, 1) * 1e-9);
  printf("sum_16M_f32_GBps %.2f\n", (double)BIG * 4 / big_secs(&c, 2) * 1e-9);
  kd_tensor_release(c.a);
  kd_tensor_release(c.b);
  kd_tensor_release(c.o);
  c.a = c.b = c.o = NULL;

  if (make(2, mat, 1, &c.a) || make(2, mat, 2, &c.b) || make(2, mat, 0, &c.o)) goto done;
  if (check(kd_mm_out(c.a, c.b, c.o), "mm.out")) goto done;
  double flops = 2.0 * 512 * 512 * 512;
  printf("mm_512_f32_gflops %.2f\n", flops / big_secs(&c, 3) * 1e-9);
#ifdef KD_BENCH_HAVE_CBLAS
  printf("blas_mm_512_f32_gflops %.2f\n", flops / big_secs(&c, 4) * 1e-9);
#endif
  printf("threads %d\ncpu_capability %s\n", threads, kd_cpu_capability());
  rc = 0;
done:
  kd_tensor_release(c.a);
  kd_tensor_release(c.b);
  kd_tensor_release(c.o);
  return rc;
}
