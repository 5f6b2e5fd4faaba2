/*
 * test_binary.c: the pointwise binary operators through their generated
 * entry points (kd/ops_all.h): values worked out by hand, dtypes, type
 * promotion, broadcasting, strides, zero-size and meta tensors, the
 * functional / inplace / out variants and their errors.
 */
#include <math.h>

#include "kd_test.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static kd_tensor *T1(kd_dtype dt, int64_t n, const void *data) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, dt, data, &t));
  return t;
}
static kd_tensor *T2(kd_dtype dt, int64_t r, int64_t c, const void *data) {
  kd_tensor *t = NULL;
  int64_t s[2] = {r, c};
  KD_ASSERT_OK(kd_tensor_from_data(2, s, dt, data, &t));
  return t;
}

/* Element `flat` (row-major) of t as a double. */
static double at(const kd_tensor *t, int64_t flat) {
  int nd = kd_tensor_ndim(t);
  int64_t idx[KD_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    int64_t n = kd_tensor_sizes(t)[d];
    idx[d] = flat % n;
    flat /= n;
  }
  kd_scalar v;
  KD_ASSERT_OK(kd_tensor_get(t, nd ? idx : NULL, &v));
  if (v.kind == KD_SCALAR_COMPLEX) return v.v.c.re;
  return kd_scalar_to_double(&v);
}

static void expect(const kd_tensor *t, kd_dtype dt, int64_t n, const double *want) {
  assert_non_null(t);
  if (kd_tensor_dtype(t) != dt)
    fail_msg("dtype %s, expected %s", kd_dtype_name(kd_tensor_dtype(t)), kd_dtype_name(dt));
  assert_int_equal(kd_tensor_numel(t), n);
  for (int64_t i = 0; i < n; i++) {
    double g = at(t, i);
    if (!(g == want[i] || (isnan(g) && isnan(want[i])) || fabs(g - want[i]) < 1e-6 * fabs(want[i])))
      fail_msg("element %lld: got %.17g, expected %.17g", (long long)i, g, want[i]);
  }
}

static void setup_open(void) { KD_ASSERT_OK(kd_ops_open()); }

static void test_add_every_dtype(void **state) {
  (void)state;
  setup_open();
  /* 1 + 2 = 3, 4 + (-1)... computed in each dtype from float64 data. */
  const kd_dtype dts[] = {KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64,
                          KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};
  for (size_t k = 0; k < sizeof dts / sizeof *dts; k++) {
    double a[3] = {1, 4, 10}, b[3] = {2, 3, 5};
    kd_tensor *ta = T1(KD_FLOAT64, 3, a), *tb = T1(KD_FLOAT64, 3, b), *ca, *cb, *r = NULL;
    KD_ASSERT_OK(kd_tensor_to_dtype(ta, dts[k], &ca));
    KD_ASSERT_OK(kd_tensor_to_dtype(tb, dts[k], &cb));
    kd_scalar alpha = kd_scalar_int(2);
    KD_ASSERT_OK(kd_add_Tensor(ca, cb, &alpha, &r));
    expect(r, dts[k], 3, (double[]){5, 10, 20});
    kd_tensor_release(r);
    r = NULL;
    KD_ASSERT_OK(kd_sub_Tensor(ca, cb, NULL, &r));
    if (dts[k] == KD_UINT8)
      expect(r, dts[k], 3, (double[]){255, 1, 5});
    else
      expect(r, dts[k], 3, (double[]){-1, 1, 5});
    kd_tensor_release(r);
    r = NULL;
    KD_ASSERT_OK(kd_mul_Tensor(ca, cb, &r));
    expect(r, dts[k], 3, (double[]){2, 12, 50});
    kd_tensor_release(r);
    kd_tensor_release(ta), kd_tensor_release(tb), kd_tensor_release(ca), kd_tensor_release(cb);
  }
  bool x[4] = {0, 0, 1, 1}, y[4] = {0, 1, 0, 1};
  kd_tensor *bx = T1(KD_BOOL, 4, x), *by = T1(KD_BOOL, 4, y), *r = NULL;
  KD_ASSERT_OK(kd_add_Tensor(bx, by, NULL, &r));
  expect(r, KD_BOOL, 4, (double[]){0, 1, 1, 1});
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_sub_Tensor(bx, by, NULL, &r), KD_EINVAL, "two bool tensors");
  kd_tensor_release(bx), kd_tensor_release(by);
}

static void test_promotion_broadcast(void **state) {
  (void)state;
  setup_open();
  int64_t ia[3] = {1, 2, 3};
  float fb[2] = {0.5f, 1.5f};
  kd_tensor *a = T2(KD_INT64, 3, 1, ia), *b = T1(KD_FLOAT32, 2, fb), *r = NULL;
  KD_ASSERT_OK(kd_add_Tensor(a, b, NULL, &r));
  assert_int_equal(kd_tensor_ndim(r), 2);
  assert_int_equal(kd_tensor_size(r, 0), 3);
  assert_int_equal(kd_tensor_size(r, 1), 2);
  expect(r, KD_FLOAT32, 6, (double[]){1.5, 2.5, 2.5, 3.5, 3.5, 4.5});
  kd_tensor_release(r);
  /* int8 tensor + wrapped 1000 stays int8 (wraps); + 2.5 is float32 */
  int8_t i8[2] = {1, 2};
  kd_tensor *c = T1(KD_INT8, 2, i8);
  kd_scalar s = kd_scalar_int(3);
  KD_ASSERT_OK(kd_add_Scalar(c, &s, NULL, &r));
  expect(r, KD_INT8, 2, (double[]){4, 5});
  kd_tensor_release(r);
  s = kd_scalar_double(2.5);
  KD_ASSERT_OK(kd_mul_Scalar(c, &s, &r));
  expect(r, KD_FLOAT32, 2, (double[]){2.5, 5});
  kd_tensor_release(r);
  /* int / int is true division */
  int64_t n[2] = {7, -7}, d[2] = {2, 2};
  kd_tensor *tn = T1(KD_INT64, 2, n), *td = T1(KD_INT64, 2, d);
  KD_ASSERT_OK(kd_div_Tensor(tn, td, &r));
  expect(r, KD_FLOAT32, 2, (double[]){3.5, -3.5});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_div_Tensor_mode(tn, td, "trunc", &r));
  expect(r, KD_INT64, 2, (double[]){3, -3});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_div_Tensor_mode(tn, td, "floor", &r));
  expect(r, KD_INT64, 2, (double[]){3, -4});
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_div_Tensor_mode(tn, td, "round", &r), KD_EINVAL, "rounding_mode");
  int64_t z[2] = {1, 0};
  kd_tensor *tz = T1(KD_INT64, 2, z);
  KD_ASSERT_ERR(kd_div_Tensor_mode(tn, tz, "floor", &r), KD_EINVAL, "ZeroDivisionError");
  KD_ASSERT_ERR(kd_remainder_Tensor(tn, tz, &r), KD_EINVAL, "ZeroDivisionError");
  s = kd_scalar_int(3);
  KD_ASSERT_OK(kd_remainder_Scalar(tn, &s, &r));
  expect(r, KD_INT64, 2, (double[]){1, 2});
  kd_tensor_release(r);
  double fn[2] = {-7.5, 7.5}, fd[2] = {2, -2};
  kd_tensor *f1 = T1(KD_FLOAT64, 2, fn), *f2 = T1(KD_FLOAT64, 2, fd);
  KD_ASSERT_OK(kd_div_Tensor_mode(f1, f2, "floor", &r));
  expect(r, KD_FLOAT64, 2, (double[]){-4, -4});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_remainder_Tensor(f1, f2, &r));
  expect(r, KD_FLOAT64, 2, (double[]){0.5, -0.5});
  kd_tensor_release(r);
  kd_tensor_release(a), kd_tensor_release(b), kd_tensor_release(c), kd_tensor_release(tn);
  kd_tensor_release(td), kd_tensor_release(tz), kd_tensor_release(f1), kd_tensor_release(f2);
}

static void test_variants(void **state) {
  (void)state;
  setup_open();
  float a[4] = {1, 2, 3, 4}, b[2] = {10, 20};
  kd_tensor *ta = T2(KD_FLOAT32, 2, 2, a), *tb = T1(KD_FLOAT32, 2, b), *r = NULL;
  /* inplace */
  KD_ASSERT_OK(kd_add__Tensor(ta, tb, NULL));
  expect(ta, KD_FLOAT32, 4, (double[]){11, 22, 13, 24});
  /* inplace whose result does not fit self */
  KD_ASSERT_ERR(kd_add__Tensor(tb, ta, NULL), KD_EINVAL, "doesn't match the broadcast shape");
  int64_t ib[2] = {1, 2};
  kd_tensor *ti = T1(KD_INT64, 2, ib);
  KD_ASSERT_ERR(kd_add__Tensor(ti, tb, NULL), KD_ETYPE, "");
  /* out: resized; wrong dtype refused */
  kd_tensor *out = NULL;
  int64_t zero = 0;
  KD_ASSERT_OK(kd_tensor_empty(1, &zero, KD_FLOAT32, (kd_device){KD_DEVICE_CPU, 0}, &out));
  KD_ASSERT_OK(kd_mul_out(ta, tb, out));
  expect(out, KD_FLOAT32, 4, (double[]){110, 440, 130, 480});
  assert_int_equal(kd_tensor_ndim(out), 2);
  KD_ASSERT_ERR(kd_mul_out(ta, tb, ti), KD_ETYPE, "");
  /* non-contiguous: a transposed view */
  kd_tensor *tt = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(ta, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 0, &tt));
  KD_ASSERT_OK(kd_sub_Tensor(tt, tb, NULL, &r));
  expect(r, KD_FLOAT32, 4, (double[]){1, -7, 12, 4});
  kd_tensor_release(r);
  /* zero-size */
  kd_tensor *e = NULL;
  int64_t s0[2] = {0, 2};
  KD_ASSERT_OK(kd_tensor_empty(2, s0, KD_FLOAT32, (kd_device){KD_DEVICE_CPU, 0}, &e));
  KD_ASSERT_OK(kd_add_Tensor(e, tb, NULL, &r));
  assert_int_equal(kd_tensor_numel(r), 0);
  assert_int_equal(kd_tensor_size(r, 1), 2);
  kd_tensor_release(r);
  /* meta */
  kd_tensor *m = NULL;
  int64_t ms[2] = {3, 1};
  KD_ASSERT_OK(kd_tensor_empty(2, ms, KD_INT32, (kd_device){KD_DEVICE_META, 0}, &m));
  kd_tensor *m2 = NULL;
  int64_t ms2[1] = {4};
  KD_ASSERT_OK(kd_tensor_empty(1, ms2, KD_FLOAT64, (kd_device){KD_DEVICE_META, 0}, &m2));
  KD_ASSERT_OK(kd_add_Tensor(m, m2, NULL, &r));
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_size(r, 0), 3);
  assert_int_equal(kd_tensor_size(r, 1), 4);
  assert_int_equal(kd_tensor_dtype(r), KD_FLOAT64);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_lt_Tensor(m, m2, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_BOOL);
  kd_tensor_release(r);
  kd_tensor_release(m), kd_tensor_release(m2), kd_tensor_release(e), kd_tensor_release(tt);
  kd_tensor_release(out), kd_tensor_release(ti), kd_tensor_release(ta), kd_tensor_release(tb);
}

static void test_compare_bitwise(void **state) {
  (void)state;
  setup_open();
  int32_t a[4] = {1, 2, 3, 4};
  double b[4] = {1, 2.5, 2, 4};
  kd_tensor *ta = T1(KD_INT32, 4, a), *tb = T1(KD_FLOAT64, 4, b), *r = NULL;
  KD_ASSERT_OK(kd_eq_Tensor(ta, tb, &r));
  expect(r, KD_BOOL, 4, (double[]){1, 0, 0, 1});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_lt_Tensor(ta, tb, &r));
  expect(r, KD_BOOL, 4, (double[]){0, 1, 0, 0});
  kd_tensor_release(r);
  kd_scalar s = kd_scalar_int(2);
  KD_ASSERT_OK(kd_ge_Scalar(ta, &s, &r));
  expect(r, KD_BOOL, 4, (double[]){0, 1, 1, 1});
  kd_tensor_release(r);
  /* inplace comparison keeps self's dtype */
  kd_tensor *c = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(tb, KD_FLOAT64, &c));
  KD_ASSERT_OK(kd_gt__Scalar(c, &s));
  expect(c, KD_FLOAT64, 4, (double[]){0, 1, 0, 1});
  int32_t m[4] = {12, 10, -1, 7}, n[4] = {10, 6, 3, 1};
  kd_tensor *tm = T1(KD_INT32, 4, m), *tn = T1(KD_INT32, 4, n);
  KD_ASSERT_OK(kd_bitwise_and_Tensor(tm, tn, &r));
  expect(r, KD_INT32, 4, (double[]){8, 2, 3, 1});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_bitwise_xor_Tensor(tm, tn, &r));
  expect(r, KD_INT32, 4, (double[]){6, 12, -4, 6});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_bitwise_left_shift_Tensor(tm, tn, &r));
  expect(r, KD_INT32, 4, (double[]){12288, 640, -8, 14});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_bitwise_right_shift_Tensor(tm, tn, &r));
  expect(r, KD_INT32, 4, (double[]){0, 0, -1, 3});
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_bitwise_and_Tensor(tb, tb, &r), KD_EUNSUPPORTED,
                "\"bitwise_and_cpu\" not implemented for 'float64'");
  KD_ASSERT_OK(kd_logical_xor(tm, tb, &r));
  expect(r, KD_BOOL, 4, (double[]){0, 0, 0, 0});
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_maximum(ta, tb, &r));
  expect(r, KD_FLOAT64, 4, (double[]){1, 2.5, 3, 4});
  kd_tensor_release(r);
  kd_tensor_release(c), kd_tensor_release(tm), kd_tensor_release(tn);
  kd_tensor_release(ta), kd_tensor_release(tb);
}

static void test_pow_where_clamp_fill(void **state) {
  (void)state;
  setup_open();
  int64_t a[4] = {2, -3, 0, 5};
  kd_tensor *ta = T1(KD_INT64, 4, a), *r = NULL;
  kd_scalar e = kd_scalar_int(3);
  KD_ASSERT_OK(kd_pow_Tensor_Scalar(ta, &e, &r));
  expect(r, KD_INT64, 4, (double[]){8, -27, 0, 125});
  kd_tensor_release(r);
  e = kd_scalar_int(-1);
  KD_ASSERT_ERR(kd_pow_Tensor_Scalar(ta, &e, &r), KD_EINVAL, "negative integer powers");
  e = kd_scalar_double(0.5);
  KD_ASSERT_OK(kd_pow_Tensor_Scalar(ta, &e, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_FLOAT32);
  kd_tensor_release(r);
  kd_scalar base = kd_scalar_int(2);
  KD_ASSERT_OK(kd_pow_Scalar(&base, ta, &r));
  expect(r, KD_INT64, 4, (double[]){4, 0, 1, 32});
  kd_tensor_release(r);
  kd_scalar lo = kd_scalar_int(0), hi = kd_scalar_int(3);
  KD_ASSERT_OK(kd_clamp(ta, &lo, &hi, &r));
  expect(r, KD_INT64, 4, (double[]){2, 0, 0, 3});
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_clamp(ta, NULL, NULL, &r), KD_EINVAL, "At least one of 'min' or 'max'");
  bool c[4] = {1, 0, 1, 0};
  kd_tensor *tc = T1(KD_BOOL, 4, c);
  double o[4] = {9, 8, 7, 6};
  kd_tensor *to = T1(KD_FLOAT64, 4, o);
  KD_ASSERT_OK(kd_where_self(tc, ta, to, &r));
  expect(r, KD_FLOAT64, 4, (double[]){2, 8, 0, 6});
  kd_tensor_release(r);
  kd_scalar v = kd_scalar_double(-1);
  KD_ASSERT_OK(kd_masked_fill_Scalar(to, tc, &v, &r));
  expect(r, KD_FLOAT64, 4, (double[]){-1, 8, -1, 6});
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_masked_fill__Scalar(to, ta, &v), KD_ETYPE, "boolean masks");
  kd_tensor_release(ta), kd_tensor_release(tc), kd_tensor_release(to);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_every_dtype),
      cmocka_unit_test(test_promotion_broadcast),
      cmocka_unit_test(test_variants),
      cmocka_unit_test(test_compare_bitwise),
      cmocka_unit_test(test_pow_where_clamp_fill),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
