/*
 * test_reduce_util.h: helpers shared by the reduction tests (test_reduce.c,
 * test_reduce_ref.c): cpu tensors from values, and checks of shape, dtype
 * and values. Static inline, so that each test uses what it needs.
 */
#ifndef KD_TEST_REDUCE_UTIL_H
#define KD_TEST_REDUCE_UTIL_H

#include <math.h>

#include "kd_test.h"
#include "kd/ops.h"

static inline kd_ints ints(const int64_t *d, int64_t n) {
  kd_ints r = {d, n};
  return r;
}
static const kd_ints NONE = {NULL, -1};

/* A cpu tensor of dtype with values v (row-major). */
static inline kd_tensor *mk(int ndim, const int64_t *sizes, kd_dtype dt, const double *v) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t));
  int64_t n = kd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    int64_t idx[KD_MAX_DIMS], r = i;
    for (int d = ndim - 1; d >= 0; d--) {
      idx[d] = r % sizes[d];
      r /= sizes[d];
    }
    kd_scalar s = kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt) ? kd_scalar_double(v[i])
                  : dt == KD_BOOL                                     ? kd_scalar_bool(v[i] != 0)
                                                                      : kd_scalar_int((int64_t)v[i]);
    KD_ASSERT_OK(kd_tensor_set(t, ndim ? idx : NULL, &s));
  }
  return t;
}

static inline kd_tensor *meta(int ndim, const int64_t *sizes, kd_dtype dt) {
  kd_tensor *t = NULL;
  kd_device m = {KD_DEVICE_META, 0};
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, m, &t));
  return t;
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
    int64_t idx[KD_MAX_DIMS], r = i;
    for (int d = ndim - 1; d >= 0; d--) {
      idx[d] = r % sizes[d];
      r /= sizes[d];
    }
    kd_scalar s;
    KD_ASSERT_OK(kd_tensor_get(t, ndim ? idx : NULL, &s));
    double got = kd_scalar_to_double(&s);
    if ((isnan(v[i]) && isnan(got)) || got == v[i]) continue;
    if (!(fabs(got - v[i]) <= tol * fmax(1.0, fabs(v[i]))))
      fail_msg("%s element %lld: got %.9g, expected %.9g", kd_dtype_name(dt), (long long)i, got,
               v[i]);
  }
}

static inline void setup_ops(void) { KD_ASSERT_OK(kd_ops_open()); }

#endif
