/*
 * test_reduce_util.h: the reduction tests' (test_reduce.c, test_reduce_ref.c)
 * forms of ops_check.h's helpers: cpu tensors from values, and checks of
 * shape, dtype and values. Static inline, so that each test uses what it needs.
 */
#ifndef KD_TEST_REDUCE_UTIL_H
#define KD_TEST_REDUCE_UTIL_H

#include "ops_check.h"

static inline kd_ints ints(const int64_t *d, int64_t n) {
  kd_ints r = {d, n};
  return r;
}
static const kd_ints NONE = {NULL, -1};

/* ops_check.h's builders in the reduction tests' argument order: a cpu
 * tensor with values v (row-major), a meta tensor. */
static inline kd_tensor *mk(int ndim, const int64_t *sizes, kd_dtype dt, const double *v) {
  return oc_from(dt, ndim, sizes, v);
}
static inline kd_tensor *meta(int ndim, const int64_t *sizes, kd_dtype dt) {
  return oc_meta(dt, ndim, sizes);
}

static inline void check_shape(const kd_tensor *t, int ndim, const int64_t *sizes, kd_dtype dt) {
  assert_non_null(t);
  if (kd_tensor_dtype(t) != dt)
    fail_msg("dtype %s, expected %s", kd_dtype_name(kd_tensor_dtype(t)), kd_dtype_name(dt));
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int d = 0; d < ndim; d++) assert_int_equal(kd_tensor_sizes(t)[d], sizes[d]);
}

/* Checks shape, dtype and values (NaN matches NaN; tol relative). */
static inline void check(const kd_tensor *t, int ndim, const int64_t *sizes, kd_dtype dt, const double *v,
                  double tol) {
  check_shape(t, ndim, sizes, dt);
  int64_t n = kd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double got = oc_at(t, i);
    if ((isnan(v[i]) && isnan(got)) || got == v[i]) continue;
    if (!(fabs(got - v[i]) <= tol * fmax(1.0, fabs(v[i]))))
      fail_msg("%s element %lld: got %.9g, expected %.9g", kd_dtype_name(dt), (long long)i, got,
               v[i]);
  }
}

static inline void setup_ops(void) { KD_ASSERT_OK(kd_ops_open()); }

#endif
