/*
 * bench_util.h: timing helpers for kd-bench. Every figure is the median of
 * several repetitions, each timing a batch of iterations.
 */
#ifndef KD_BENCH_UTIL_H
#define KD_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t kd_bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int kd_bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of n samples (sorts them in place). */
static inline double kd_bench_median(double *samples, size_t n) {
  qsort(samples, n, sizeof *samples, kd_bench_cmp_double);
  if (n == 0) return 0;
  return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

/* Keeps the compiler from discarding a computed value. */
static inline void kd_bench_escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

#endif
