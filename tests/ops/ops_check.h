/*
 * ops_check.h: the ops tests' one set of helpers (test_views.c, test_shape.c,
 * test_factories.c, test_linalg.c, test_binary.c, test_bitwise.c, ...):
 * building small tensors from arrays of numbers, and checking the sizes,
 * strides, dtype, device and values of results.
 *
 * Every tensor a helper returns is a new reference the test releases. A
 * helper that fails stops the test through cmocka (fail_msg), so tests
 * never check their results.
 */
#ifndef KD_OPS_CHECK_H
#define KD_OPS_CHECK_H

#include <math.h>

#include "kd_test.h"
#include "kd/ops.h"

/* Literal lists: I(1, 2) is a `const int64_t *`, NI(1, 2) its length,
 * INTS(1, 2) the kd_ints of both; D(...) and ND(...) the same for doubles. */
#define I(...) ((const int64_t[]){__VA_ARGS__})
#define NI(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define INTS(...) ((kd_ints){I(__VA_ARGS__), NI(__VA_ARGS__)})
#define NO_INTS ((kd_ints){NULL, 0})
#define D(...) ((const double[]){__VA_ARGS__})
#define ND(...) ((int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))
#define TENSORS(...) \
  ((kd_tensors){(kd_tensor *[]){__VA_ARGS__}, sizeof((kd_tensor *[]){__VA_ARGS__}) / sizeof(kd_tensor *)})

/* Every dtype, in kd_dtype order. */
static const kd_dtype OC_ALL[] = {KD_BOOL,    KD_UINT8,    KD_INT8,      KD_INT16,
                                  KD_INT32,   KD_INT64,    KD_FLOAT16,   KD_BFLOAT16,
                                  KD_FLOAT32, KD_FLOAT64,  KD_COMPLEX64, KD_COMPLEX128};
#define OC_NALL ((int)(sizeof OC_ALL / sizeof OC_ALL[0]))

static const kd_device OC_META = {KD_DEVICE_META, 0};

/* Operators registered once per process; every test calls it first (cmocka
 * may run a single test). */
static inline void oc_open(void) { KD_ASSERT_OK(kd_ops_open()); }

/* Position `flat` (row-major) of a tensor of these sizes as an index. */
static inline void oc_unflatten(int ndim, const int64_t *sizes, int64_t flat, int64_t *idx) {
  for (int d = ndim - 1; d >= 0; d--) {
    idx[d] = flat % sizes[d];
    flat /= sizes[d];
  }
}

/* A new cpu tensor of dtype dt holding vals (row-major; the real part for
 * complex dtypes, nonzero for bool). vals may be NULL when there are no
 * elements. */
static inline kd_tensor *oc_from(kd_dtype dt, int ndim, const int64_t *sizes, const double *vals) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t));
  int64_t n = kd_tensor_numel(t), idx[KD_MAX_DIMS];
  for (int64_t k = 0; k < n; k++) {
    oc_unflatten(ndim, sizes, k, idx);
    kd_scalar s = dt == KD_BOOL                  ? kd_scalar_bool(vals[k] != 0)
                  : kd_dtype_is_integral(dt, false) ? kd_scalar_int((int64_t)vals[k])
                                                  : kd_scalar_double(vals[k]);
    KD_ASSERT_OK(kd_tensor_set(t, ndim ? idx : NULL, &s));
  }
  return t;
}
#define FROM(dt, sizes, ...) oc_from((dt), NI sizes, I sizes, D(__VA_ARGS__))

/* A new cpu tensor of dtype dt holding 0, 1, 2, ... in row-major order
 * (for bool: 0, 1, 1, ...). */
static inline kd_tensor *oc_iota(kd_dtype dt, int ndim, const int64_t *sizes) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
  assert_non_null(v);
  for (int64_t k = 0; k < n; k++) v[k] = (double)k;
  kd_tensor *t = oc_from(dt, ndim, sizes, v);
  free(v);
  return t;
}
#define IOTA(dt, ...) oc_iota((dt), NI(__VA_ARGS__), I(__VA_ARGS__))

/* A new uninitialised tensor on dev (kd_tensor_empty's argument order). */
static inline kd_tensor *oc_empty_on(int ndim, const int64_t *sizes, kd_dtype dt, kd_device dev) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, dev, &t));
  return t;
}

/* A new tensor of these sizes on meta (no data). */
static inline kd_tensor *oc_meta(kd_dtype dt, int ndim, const int64_t *sizes) {
  return oc_empty_on(ndim, sizes, dt, OC_META);
}
#define META(dt, ...) oc_meta((dt), NI(__VA_ARGS__), I(__VA_ARGS__))

/* A new uninitialised cpu tensor. */
static inline kd_tensor *oc_empty(kd_dtype dt, int ndim, const int64_t *sizes) {
  return oc_empty_on(ndim, sizes, dt, kd_device_cpu());
}
#define EMPTY(dt, ...) oc_empty((dt), NI(__VA_ARGS__), I(__VA_ARGS__))

/* A view of t with other sizes: its storage and offset, row-major strides.
 * Takes t's reference (released here); returns the view's. */
static inline kd_tensor *oc_reshaped(kd_tensor *t, int ndim, const int64_t *sizes) {
  int64_t st[KD_MAX_DIMS], s = 1;
  for (int d = ndim - 1; d >= 0; d--) st[d] = s, s *= sizes[d];
  kd_tensor *v = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(t, ndim, sizes, st, kd_tensor_storage_offset(t), &v));
  kd_tensor_release(t);
  return v;
}

/* A 0-dim float32 tensor holding v. */
static inline kd_tensor *oc_scalar(double v) {
  kd_tensor *t = NULL;
  kd_scalar s = kd_scalar_double(v);
  KD_ASSERT_OK(kd_tensor_from_scalar(&s, KD_FLOAT32, &t));
  return t;
}

/* Element `flat` (row-major) of t as a scalar / as a double (real part). */
static inline kd_scalar oc_get(const kd_tensor *t, int64_t flat) {
  int64_t idx[KD_MAX_DIMS];
  oc_unflatten(kd_tensor_ndim(t), kd_tensor_sizes(t), flat, idx);
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(t, kd_tensor_ndim(t) ? idx : NULL, &s));
  return s;
}
static inline double oc_at(const kd_tensor *t, int64_t flat) {
  kd_scalar s = oc_get(t, flat);
  return kd_scalar_to_double(&s);
}
/* ... as an int64 (bool: 0 or 1); the imaginary part of a complex one. */
static inline int64_t oc_at_int(const kd_tensor *t, int64_t flat) {
  kd_scalar s = oc_get(t, flat);
  return kd_scalar_to_int64(&s);
}
static inline double oc_at_im(const kd_tensor *t, int64_t flat) {
  kd_scalar s = oc_get(t, flat);
  assert_int_equal(s.kind, KD_SCALAR_COMPLEX);
  return s.v.c.im;
}

/* t's sizes are these. */
static inline void oc_expect_sizes(const kd_tensor *t, int ndim, const int64_t *sizes) {
  assert_non_null(t);
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int d = 0; d < ndim; d++)
    if (kd_tensor_size(t, d) != sizes[d])
      fail_msg("size %d is %lld, expected %lld", d, (long long)kd_tensor_size(t, d),
               (long long)sizes[d]);
}

/* t's values (row-major) against want, within tol (absolute, times
 * max(1, |want|)); NaN matches NaN. */
static inline void oc_expect_vals_tol(const kd_tensor *t, const double *want, int64_t n,
                                      double tol) {
  assert_non_null(t);
  if (kd_tensor_numel(t) != n)
    fail_msg("%lld elements, expected %lld", (long long)kd_tensor_numel(t), (long long)n);
  for (int64_t k = 0; k < n; k++) {
    double got = oc_at(t, k);
    if (got == want[k] || (isnan(got) && isnan(want[k]))) continue;
    if (!(fabs(got - want[k]) <= tol * fmax(1.0, fabs(want[k]))))
      fail_msg("%s element %lld: got %.9g, expected %.9g", kd_dtype_name(kd_tensor_dtype(t)),
               (long long)k, got, want[k]);
  }
}
#define EXPECT_VALS(t, ...) oc_expect_vals_tol((t), D(__VA_ARGS__), ND(__VA_ARGS__), 0)

/* Sizes, strides and storage offset. */
static inline void oc_expect_geom(const kd_tensor *t, int ndim, const int64_t *sizes,
                                  const int64_t *strides, int64_t offset) {
  assert_non_null(t);
  if (kd_tensor_ndim(t) != ndim) fail_msg("%d dims, expected %d", kd_tensor_ndim(t), ndim);
  for (int i = 0; i < ndim; i++) {
    if (kd_tensor_sizes(t)[i] != sizes[i] || kd_tensor_strides(t)[i] != strides[i])
      fail_msg("dim %d: size %lld stride %lld, expected %lld %lld", i,
               (long long)kd_tensor_sizes(t)[i], (long long)kd_tensor_strides(t)[i],
               (long long)sizes[i], (long long)strides[i]);
  }
  if (kd_tensor_storage_offset(t) != offset)
    fail_msg("storage offset %lld, expected %lld", (long long)kd_tensor_storage_offset(t),
             (long long)offset);
}
#define EXPECT_GEOM(t, sizes, strides, offset) \
  oc_expect_geom((t), NI sizes, I sizes, I strides, (offset))

/* Sizes, dtype and device type; a meta result must have no data. */
static inline void oc_expect_shape(const kd_tensor *t, int ndim, const int64_t *sizes, kd_dtype dt,
                                   kd_device_type dev) {
  assert_non_null(t);
  if (kd_tensor_dtype(t) != dt)
    fail_msg("dtype %s, expected %s", kd_dtype_name(kd_tensor_dtype(t)), kd_dtype_name(dt));
  if (kd_tensor_device(t).type != dev)
    fail_msg("device %s, expected %s", kd_device_type_name(kd_tensor_device(t).type),
             kd_device_type_name(dev));
  if (kd_tensor_ndim(t) != ndim) fail_msg("%d dims, expected %d", kd_tensor_ndim(t), ndim);
  for (int i = 0; i < ndim; i++)
    if (kd_tensor_sizes(t)[i] != sizes[i])
      fail_msg("size %d is %lld, expected %lld", i, (long long)kd_tensor_sizes(t)[i],
               (long long)sizes[i]);
  if (dev == KD_DEVICE_META && kd_tensor_data(t) != NULL) fail_msg("a meta tensor has data");
}
#define EXPECT_SHAPE(t, dt, dev, ...) \
  oc_expect_shape((t), NI(__VA_ARGS__), I(__VA_ARGS__), (dt), (dev))
#define EXPECT_SHAPE0(t, dt, dev) oc_expect_shape((t), 0, NULL, (dt), (dev))

/* v is a view of base: the same storage, and v's first element is at
 * `offset` elements into it (checked through the data pointers). */
static inline void oc_expect_view_of(const kd_tensor *v, const kd_tensor *base, int64_t offset) {
  assert_non_null(v);
  assert_true(kd_tensor_shares_storage(v, base));
  assert_ptr_equal(kd_tensor_storage(v), kd_tensor_storage(base));
  if (kd_tensor_device(base).type == KD_DEVICE_META) return;
  const char *b0 = (const char *)kd_tensor_data(base) -
                   kd_tensor_storage_offset(base) * (int64_t)kd_tensor_itemsize(base);
  assert_ptr_equal(kd_tensor_data(v), b0 + offset * (int64_t)kd_tensor_itemsize(v));
}

/* Warnings (kd_warn) counted while a handler is installed. */
static int oc_warnings;
static char oc_last_warning[1024];
static inline void oc_count_warning(const char *m, void *ud) {
  (void)ud;
  oc_warnings++;
  snprintf(oc_last_warning, sizeof oc_last_warning, "%s", m);
}
static inline void oc_watch_warnings(void) {
  oc_warnings = 0;
  oc_last_warning[0] = '\0';
  kd_set_warning_handler(oc_count_warning, NULL);
}
static inline void oc_unwatch_warnings(void) { kd_set_warning_handler(NULL, NULL); }

/* Releases a NULL-terminated list of tensors. */
static inline void oc_release(kd_tensor *first, ...) {
  va_list ap;
  va_start(ap, first);
  for (kd_tensor *t = first; t; t = va_arg(ap, kd_tensor *)) kd_tensor_release(t);
  va_end(ap);
}
#define RELEASE(...) oc_release(__VA_ARGS__, (kd_tensor *)NULL)

#endif /* KD_OPS_CHECK_H */
