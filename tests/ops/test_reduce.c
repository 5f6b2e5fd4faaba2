/*
 * test_reduce.c: the reductions (sum, mean, prod, amax, amin, argmax, argmin,
 * max.dim, min.dim, max, min, all, any), cumsum, softmax and log_softmax,
 * through the generated entry points: values worked out by hand, every
 * dtype, dims lists, negative dims, keepdim, non-contiguous inputs,
 * zero-size tensors, out variants, meta shapes and error messages.
 */
#include <math.h>

#include "test_reduce_util.h"

static const kd_dtype ALL_REAL[] = {KD_BOOL,    KD_UINT8,    KD_INT8,    KD_INT16,  KD_INT32,
                                    KD_INT64,   KD_FLOAT16,  KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
#define NREAL (sizeof ALL_REAL / sizeof ALL_REAL[0])

/* ---- sum ------------------------------------------------------------------------------- */

static void test_sum_values(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3};
  const double v[6] = {1, 2, 3, 4, 5, 6};
  kd_tensor *a = mk(2, sz, KD_FLOAT32, v), *r = NULL;
  KD_ASSERT_OK(kd_sum(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){21}, 0);
  kd_tensor_release(r);
  int64_t d0 = 0, d1 = -1, both[2] = {1, 0}, s3 = 3, s2 = 2;
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d0, 1), false, NULL, &r));
  check(r, 1, &s3, KD_FLOAT32, (double[]){5, 7, 9}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d1, 1), false, NULL, &r));
  check(r, 1, &s2, KD_FLOAT32, (double[]){6, 15}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d1, 1), true, NULL, &r));
  check(r, 2, (int64_t[]){2, 1}, KD_FLOAT32, (double[]){6, 15}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(both, 2), true, NULL, &r));
  check(r, 2, (int64_t[]){1, 1}, KD_FLOAT32, (double[]){21}, 0);
  kd_tensor_release(r);
  /* dim=[] and dim=None reduce everything */
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(NULL, 0), false, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){21}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum_dim_IntList(a, NONE, true, NULL, &r));
  check(r, 2, (int64_t[]){1, 1}, KD_FLOAT32, (double[]){21}, 0);
  kd_tensor_release(r);
  kd_tensor_release(a);
}

static void test_sum_dtypes(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 2}, two = 2;
  const double v[4] = {1, 0, 3, 4};
  for (size_t i = 0; i < NREAL; i++) {
    kd_dtype dt = ALL_REAL[i];
    kd_dtype want = kd_dtype_is_integral(dt, true) ? KD_INT64 : dt;
    kd_tensor *a = mk(2, sz, dt, v), *r = NULL;
    KD_ASSERT_OK(kd_sum(a, NULL, &r));
    check(r, 0, NULL, want, (double[]){dt == KD_BOOL ? 3 : 8}, 0);
    kd_tensor_release(r);
    int64_t d = 1;
    KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d, 1), false, NULL, &r));
    if (dt == KD_BOOL) check(r, 1, &two, want, (double[]){1, 2}, 0);
    else check(r, 1, &two, want, (double[]){1, 7}, 0);
    kd_tensor_release(r);
    /* explicit dtype keeps the dtype: sum(bool, dtype=bool) is "any" */
    KD_ASSERT_OK(kd_sum(a, &dt, &r));
    check(r, 0, NULL, dt, (double[]){dt == KD_BOOL ? 1 : 8}, 0);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  /* complex */
  kd_tensor *c = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &two, KD_COMPLEX64, kd_device_cpu(), &c));
  float *p = kd_tensor_data(c);
  p[0] = 1, p[1] = 2, p[2] = 3, p[3] = -5;
  KD_ASSERT_OK(kd_sum(c, NULL, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_COMPLEX64);
  float *q = kd_tensor_data(r);
  assert_true(q[0] == 4 && q[1] == -3);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_prod(c, NULL, &r));
  q = kd_tensor_data(r);
  assert_true(q[0] == 13 && q[1] == 1); /* (1+2i)(3-5i) = 3 - 5i + 6i + 10 */
  kd_tensor_release(r);
  kd_tensor_release(c);
  /* dtype converts each element first: 0.5 + 0.5 as int64 is 0 */
  kd_tensor *h = mk(1, &two, KD_FLOAT32, (double[]){0.5, 0.5});
  kd_dtype i64 = KD_INT64, f64 = KD_FLOAT64;
  KD_ASSERT_OK(kd_sum(h, &i64, &r));
  check(r, 0, NULL, KD_INT64, (double[]){0}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(h, &f64, &r));
  check(r, 0, NULL, KD_FLOAT64, (double[]){1}, 0);
  kd_tensor_release(r);
  kd_tensor_release(h);
  /* int8 overflows into int64, not int8 */
  kd_tensor *b = mk(1, &two, KD_INT8, (double[]){100, 100});
  KD_ASSERT_OK(kd_sum(b, NULL, &r));
  check(r, 0, NULL, KD_INT64, (double[]){200}, 0);
  kd_tensor_release(r);
  kd_tensor_release(b);
}

static void test_sum_noncontiguous(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3};
  kd_tensor *a = mk(2, sz, KD_FLOAT64, (double[]){1, 2, 3, 4, 5, 6}), *t = NULL, *r = NULL;
  /* t = a.T: [[1,4],[2,5],[3,6]] */
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &t));
  int64_t d0 = 0, d1 = 1, s2 = 2, s3 = 3;
  KD_ASSERT_OK(kd_sum_dim_IntList(t, ints(&d0, 1), false, NULL, &r));
  check(r, 1, &s2, KD_FLOAT64, (double[]){6, 15}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum_dim_IntList(t, ints(&d1, 1), false, NULL, &r));
  check(r, 1, &s3, KD_FLOAT64, (double[]){5, 7, 9}, 0);
  kd_tensor_release(r);
  /* a column: a[:, 1] (stride 3) */
  kd_tensor *col = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 1, &s2, &s3, 1, &col));
  KD_ASSERT_OK(kd_sum(col, NULL, &r));
  check(r, 0, NULL, KD_FLOAT64, (double[]){7}, 0);
  kd_tensor_release(r);
  /* an expanded tensor (stride 0) */
  kd_tensor *e = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){4, 3}, (int64_t[]){0, 1}, 0, &e));
  KD_ASSERT_OK(kd_sum_dim_IntList(e, ints(&d0, 1), false, NULL, &r));
  check(r, 1, &s3, KD_FLOAT64, (double[]){4, 8, 12}, 0);
  kd_tensor_release(r);
  kd_tensor_release(e);
  kd_tensor_release(col);
  kd_tensor_release(t);
  kd_tensor_release(a);
}

static void test_sum_zero_size(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {0, 3}, s3 = 3, s0 = 0;
  kd_tensor *a = mk(2, sz, KD_FLOAT32, NULL), *r = NULL;
  int64_t d0 = 0, d1 = 1;
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d0, 1), false, NULL, &r));
  check(r, 1, &s3, KD_FLOAT32, (double[]){0, 0, 0}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d1, 1), false, NULL, &r));
  check_shape(r, 1, &s0, KD_FLOAT32);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){0}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_prod(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_mean(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){NAN}, 0);
  kd_tensor_release(r);
  kd_tensor_release(a);
  /* 0-dim input: dims 0 and -1 are accepted */
  kd_tensor *z = mk(0, NULL, KD_INT32, (double[]){7});
  int64_t m1 = -1, one = 1;
  KD_ASSERT_OK(kd_sum_dim_IntList(z, ints(&m1, 1), true, NULL, &r));
  check(r, 0, NULL, KD_INT64, (double[]){7}, 0);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_sum_dim_IntList(z, ints(&one, 1), false, NULL, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(z);
}

static void count_warning(const char *message, void *user) {
  (void)message;
  ++*(int *)user;
}

static void test_sum_out(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3}, s2 = 2, s3 = 3;
  kd_tensor *a = mk(2, sz, KD_FLOAT32, (double[]){1, 2, 3, 4, 5, 6});
  int64_t d1 = 1;
  /* out of another shape is resized; its dtype is the result's when dtype is None */
  kd_tensor *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_FLOAT64, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_sum_IntList_out(a, ints(&d1, 1), false, NULL, o));
  check(o, 1, &s2, KD_FLOAT64, (double[]){6, 15}, 0);
  kd_tensor_release(o);
  KD_ASSERT_OK(kd_tensor_empty(1, &s3, KD_FLOAT32, kd_device_cpu(), &o));
  int warnings = 0;
  kd_set_warning_handler(count_warning, &warnings);
  KD_ASSERT_OK(kd_sum_IntList_out(a, ints(&d1, 1), true, NULL, o));
  kd_set_warning_handler(NULL, NULL);
  assert_int_equal(warnings, 1); /* out had elements */
  check(o, 2, (int64_t[]){2, 1}, KD_FLOAT32, (double[]){6, 15}, 0);
  kd_tensor_release(o);
  /* a strided out (every other element of a buffer) */
  kd_tensor *buf = NULL, *view = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){6}, KD_FLOAT32, kd_device_cpu(), &buf));
  KD_ASSERT_OK(kd_tensor_as_strided(buf, 1, &s3, &s2, 0, &view));
  int64_t d0 = 0;
  KD_ASSERT_OK(kd_sum_IntList_out(a, ints(&d0, 1), false, NULL, view));
  check(view, 1, &s3, KD_FLOAT32, (double[]){5, 7, 9}, 0);
  kd_tensor_release(view);
  kd_tensor_release(buf);
  /* dtype given and out of another dtype: error */
  kd_dtype f64 = KD_FLOAT64;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_FLOAT32, kd_device_cpu(), &o));
  KD_ASSERT_ERR(kd_sum_IntList_out(a, ints(&d1, 1), false, &f64, o), KD_ETYPE,
                "Expected out tensor to have dtype float64, but got float32 instead");
  kd_tensor_release(o);
  kd_tensor_release(a);
}

static void test_sum_errors(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3};
  kd_tensor *a = mk(2, sz, KD_FLOAT32, (double[]){1, 2, 3, 4, 5, 6}), *r = NULL;
  int64_t bad = 2, rep[2] = {0, -2};
  KD_ASSERT_ERR(kd_sum_dim_IntList(a, ints(&bad, 1), false, NULL, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  assert_null(r);
  KD_ASSERT_ERR(kd_sum_dim_IntList(a, ints(rep, 2), false, NULL, &r), KD_EINVAL,
                "dim 0 appears multiple times in the list of dims");
  KD_ASSERT_ERR(kd_mean_dim(a, ints(&bad, 1), false, NULL, &r), KD_ERANGE, "but got 2");
  KD_ASSERT_ERR(kd_prod_dim_int(a, -3, false, NULL, &r), KD_ERANGE, "but got -3");
  kd_tensor_release(a);
}

static void test_sum_large(void **state) {
  (void)state;
  setup_ops();
  /* 3M ones: pairwise float32 sums stay exact (a naive loop would stop at 2^24) */
  const int64_t n = 3 << 20;
  kd_tensor *a = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, kd_device_cpu(), &a));
  float *p = kd_tensor_data(a);
  for (int64_t i = 0; i < n; i++) p[i] = 1.0f;
  KD_ASSERT_OK(kd_sum(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){(double)n}, 0);
  kd_tensor_release(r);
  /* 20M ones > 2^24: still exact enough */
  kd_tensor_release(a);
  const int64_t big = 20 << 20;
  KD_ASSERT_OK(kd_tensor_empty(1, &big, KD_FLOAT32, kd_device_cpu(), &a));
  p = kd_tensor_data(a);
  for (int64_t i = 0; i < big; i++) p[i] = 1.0f;
  KD_ASSERT_OK(kd_sum(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){(double)big}, 1e-6);
  kd_tensor_release(r);
  kd_tensor_release(a);
  /* [1000, 999] reduced over either dim, against double sums */
  const int64_t sz[2] = {1000, 999};
  KD_ASSERT_OK(kd_tensor_empty(2, sz, KD_FLOAT32, kd_device_cpu(), &a));
  p = kd_tensor_data(a);
  for (int64_t i = 0; i < sz[0] * sz[1]; i++) p[i] = (float)((i * 37) % 101) * 0.25f;
  for (int dim = 0; dim < 2; dim++) {
    int64_t d = dim;
    KD_ASSERT_OK(kd_sum_dim_IntList(a, ints(&d, 1), false, NULL, &r));
    const float *q = kd_tensor_data(r);
    for (int64_t j = 0; j < sz[1 - dim]; j++) {
      double e = 0;
      for (int64_t k = 0; k < sz[dim]; k++) e += dim == 0 ? p[k * sz[1] + j] : p[j * sz[1] + k];
      if (fabs(q[j] - e) > 1e-6 * e) fail_msg("dim %d column %lld: %g vs %g", dim, (long long)j, q[j], e);
    }
    kd_tensor_release(r);
  }
  /* argmax of the big one: the last maximum is at (i*37)%101 == 100 first */
  KD_ASSERT_OK(kd_argmax(a, NULL, false, &r));
  int64_t first = 0;
  while ((first * 37) % 101 != 100) first++;
  check(r, 0, NULL, KD_INT64, (double[]){(double)first}, 0);
  kd_tensor_release(r);
  kd_tensor_release(a);
}

static void test_sum_meta(void **state) {
  (void)state;
  setup_ops();
  kd_tensor *m = meta(3, (int64_t[]){2, 3, 4}, KD_INT16), *r = NULL;
  int64_t dims[2] = {0, -1};
  KD_ASSERT_OK(kd_sum_dim_IntList(m, ints(dims, 2), false, NULL, &r));
  check_shape(r, 1, (int64_t[]){3}, KD_INT64);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(m, NULL, &r));
  check_shape(r, 0, NULL, KD_INT64);
  kd_tensor_release(r);
  kd_dtype f32 = KD_FLOAT32;
  KD_ASSERT_OK(kd_mean_dim(m, ints(dims, 2), true, &f32, &r));
  check_shape(r, 3, (int64_t[]){1, 3, 1}, KD_FLOAT32);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_prod(m, NULL, &r));
  check_shape(r, 0, NULL, KD_INT64);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amax(m, ints(dims + 1, 1), true, &r));
  check_shape(r, 3, (int64_t[]){2, 3, 1}, KD_INT16);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_argmin(m, &dims[0], false, &r));
  check_shape(r, 2, (int64_t[]){3, 4}, KD_INT64);
  kd_tensor_release(r);
  kd_tensor *v = NULL, *i = NULL;
  KD_ASSERT_OK(kd_max_dim(m, 1, true, &v, &i));
  check_shape(v, 3, (int64_t[]){2, 1, 4}, KD_INT16);
  check_shape(i, 3, (int64_t[]){2, 1, 4}, KD_INT64);
  kd_tensor_release(v);
  kd_tensor_release(i);
  KD_ASSERT_OK(kd_max(m, &r));
  check_shape(r, 0, NULL, KD_INT16);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_all_dim(m, 2, false, &r));
  check_shape(r, 2, (int64_t[]){2, 3}, KD_BOOL);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cumsum(m, 1, NULL, &r));
  check_shape(r, 3, (int64_t[]){2, 3, 4}, KD_INT64);
  kd_tensor_release(r);
  kd_tensor_release(m);
  m = meta(2, (int64_t[]){2, 3}, KD_BFLOAT16);
  KD_ASSERT_OK(kd_softmax_int(m, -1, NULL, &r));
  check_shape(r, 2, (int64_t[]){2, 3}, KD_BFLOAT16);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_log_softmax_int(m, 0, &f32, &r));
  check_shape(r, 2, (int64_t[]){2, 3}, KD_FLOAT32);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_sum_dim_IntList(m, ints((int64_t[]){5}, 1), false, NULL, &r), KD_ERANGE,
                "Dimension out of range");
  kd_tensor_release(m);
}

/* ---- mean / prod ---------------------------------------------------------------------------- */

static void test_mean(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3}, s2 = 2, s3 = 3;
  const double v[6] = {1, 2, 3, 4, 5, 7};
  const kd_dtype fl[] = {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
  for (size_t k = 0; k < 4; k++) {
    kd_tensor *a = mk(2, sz, fl[k], v), *r = NULL;
    KD_ASSERT_OK(kd_mean(a, NULL, &r));
    check(r, 0, NULL, fl[k], (double[]){22.0 / 6}, fl[k] == KD_BFLOAT16 ? 4e-3 : 1e-3);
    kd_tensor_release(r);
    int64_t d = 0, e = -1;
    KD_ASSERT_OK(kd_mean_dim(a, ints(&d, 1), false, NULL, &r));
    check(r, 1, &s3, fl[k], (double[]){2.5, 3.5, 5}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_mean_dim(a, ints(&e, 1), true, NULL, &r));
    check(r, 2, (int64_t[]){2, 1}, fl[k], (double[]){2, 16.0 / 3}, 4e-3);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  kd_tensor *i = mk(1, &s2, KD_INT64, (double[]){1, 2}), *r = NULL;
  KD_ASSERT_ERR(kd_mean(i, NULL, &r), KD_ETYPE,
                "mean(): could not infer output dtype. Input dtype must be either a floating point "
                "or complex dtype. Got: int64");
  kd_dtype i32 = KD_INT32, f64 = KD_FLOAT64;
  KD_ASSERT_ERR(kd_mean(i, &i32, &r), KD_ETYPE, "Optional dtype must be either");
  KD_ASSERT_OK(kd_mean(i, &f64, &r));
  check(r, 0, NULL, KD_FLOAT64, (double[]){1.5}, 0);
  kd_tensor_release(r);
  /* out variant */
  kd_tensor *f = mk(2, sz, KD_FLOAT32, v), *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_FLOAT32, kd_device_cpu(), &o));
  int64_t d1 = 1;
  KD_ASSERT_OK(kd_mean_out(f, ints(&d1, 1), false, NULL, o));
  check(o, 1, &s2, KD_FLOAT32, (double[]){2, 16.0 / 3}, 1e-6);
  kd_tensor_release(o);
  kd_tensor_release(f);
  kd_tensor_release(i);
}

static void test_prod(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3}, s2 = 2, s3 = 3;
  const double v[6] = {1, 2, 3, 4, 5, 6};
  for (size_t k = 0; k < NREAL; k++) {
    kd_dtype dt = ALL_REAL[k];
    kd_dtype want = kd_dtype_is_integral(dt, true) ? KD_INT64 : dt;
    kd_tensor *a = mk(2, sz, dt, v), *r = NULL;
    KD_ASSERT_OK(kd_prod(a, NULL, &r));
    check(r, 0, NULL, want, (double[]){dt == KD_BOOL ? 1 : 720}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_prod_dim_int(a, 0, false, NULL, &r));
    if (dt == KD_BOOL) check(r, 1, &s3, want, (double[]){1, 1, 1}, 0);
    else check(r, 1, &s3, want, (double[]){4, 10, 18}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_prod_dim_int(a, -1, true, NULL, &r));
    if (dt != KD_BOOL) check(r, 2, (int64_t[]){2, 1}, want, (double[]){6, 120}, 0);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  /* out */
  kd_tensor *a = mk(2, sz, KD_INT32, v), *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_INT32, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_prod_int_out(a, 1, false, NULL, o));
  check(o, 1, &s2, KD_INT32, (double[]){6, 120}, 0);
  kd_tensor_release(o);
  kd_tensor_release(a);
}

/* ---- amax / amin / max / min ------------------------------------------------------------------- */

static void test_amax_amin(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[3] = {2, 2, 2}, s2 = 2;
  const double v[8] = {3, 1, 4, 1, 5, 9, 2, 6};
  for (size_t k = 0; k < NREAL; k++) {
    kd_dtype dt = ALL_REAL[k];
    kd_tensor *a = mk(3, sz, dt, v), *r = NULL;
    int64_t d[2] = {0, 2}, m1 = -1;
    bool b = dt == KD_BOOL;
    KD_ASSERT_OK(kd_amax(a, ints(d, 2), false, &r));
    check(r, 1, &s2, dt, b ? (double[]){1, 1} : (double[]){9, 6}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_amin(a, ints(d, 2), true, &r));
    check(r, 3, (int64_t[]){1, 2, 1}, dt, b ? (double[]){1, 1} : (double[]){1, 1}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_amax(a, ints(NULL, 0), false, &r));
    check(r, 0, NULL, dt, (double[]){b ? 1 : 9}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_amin(a, ints(&m1, 1), false, &r));
    check(r, 2, (int64_t[]){2, 2}, dt, b ? (double[]){1, 1, 1, 1} : (double[]){1, 1, 5, 2}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_max(a, &r));
    check(r, 0, NULL, dt, (double[]){b ? 1 : 9}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_min(a, &r));
    check(r, 0, NULL, dt, (double[]){1}, 0);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  /* NaN propagates; -inf and negatives */
  kd_tensor *f = mk(2, (int64_t[]){2, 3}, KD_FLOAT32, (double[]){-1, NAN, -3, -INFINITY, -5, -6}), *r = NULL;
  int64_t d1 = 1;
  KD_ASSERT_OK(kd_amax(f, ints(&d1, 1), false, &r));
  check(r, 1, &s2, KD_FLOAT32, (double[]){NAN, -5}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amin(f, ints(&d1, 1), false, &r));
  check(r, 1, &s2, KD_FLOAT32, (double[]){NAN, -INFINITY}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_max(f, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){NAN}, 0);
  kd_tensor_release(r);
  /* errors */
  kd_tensor *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_FLOAT64, kd_device_cpu(), &o));
  KD_ASSERT_ERR(kd_amax_out(f, ints(&d1, 1), false, o), KD_ETYPE,
                "Expected the dtype for input and out to match, but got float32 for input's dtype "
                "and float64 for out's dtype.");
  kd_tensor_release(o);
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_FLOAT32, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_amin_out(f, ints(&d1, 1), false, o));
  check(o, 1, &s2, KD_FLOAT32, (double[]){NAN, -INFINITY}, 0);
  kd_tensor_release(o);
  kd_tensor_release(f);
  kd_tensor *z = mk(2, (int64_t[]){0, 3}, KD_FLOAT32, NULL);
  int64_t d0 = 0;
  KD_ASSERT_ERR(kd_amax(z, ints(&d0, 1), false, &r), KD_ERANGE,
                "amax(): Expected reduction dim 0 to have non-zero size.");
  KD_ASSERT_ERR(kd_amax(z, ints(NULL, 0), false, &r), KD_ERANGE,
                "Expected reduction dim to be specified for input.numel() == 0");
  KD_ASSERT_OK(kd_amin(z, ints(&d1, 1), false, &r));
  check_shape(r, 1, (int64_t[]){0}, KD_FLOAT32);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_max(z, &r), KD_ERANGE, "max(): Expected reduction dim to be specified");
  kd_tensor_release(z);
}

/* ---- argmax / argmin / max.dim / min.dim --------------------------------------------------------- */

static void test_argmax(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3}, s2 = 2, s3 = 3;
  const double v[6] = {1, 7, 7, 0, 7, 0};
  for (size_t k = 0; k < NREAL; k++) {
    kd_dtype dt = ALL_REAL[k];
    kd_tensor *a = mk(2, sz, dt, v), *r = NULL;
    bool b = dt == KD_BOOL;
    KD_ASSERT_OK(kd_argmax(a, NULL, false, &r));
    check(r, 0, NULL, KD_INT64, (double[]){b ? 0 : 1}, 0); /* first of ties */
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_argmin(a, NULL, true, &r));
    check(r, 2, (int64_t[]){1, 1}, KD_INT64, (double[]){3}, 0);
    kd_tensor_release(r);
    int64_t d0 = 0, m1 = -1;
    KD_ASSERT_OK(kd_argmax(a, &d0, false, &r));
    check(r, 1, &s3, KD_INT64, (double[]){0, 0, 0}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_argmin(a, &m1, true, &r));
    check(r, 2, (int64_t[]){2, 1}, KD_INT64, (double[]){0, 0}, 0);
    kd_tensor_release(r);
    kd_tensor *vals = NULL, *idx = NULL;
    KD_ASSERT_OK(kd_max_dim(a, 1, false, &vals, &idx));
    check(vals, 1, &s2, dt, b ? (double[]){1, 1} : (double[]){7, 7}, 0);
    check(idx, 1, &s2, KD_INT64, b ? (double[]){0, 1} : (double[]){1, 1}, 0);
    kd_tensor_release(vals);
    kd_tensor_release(idx);
    KD_ASSERT_OK(kd_min_dim(a, -2, true, &vals, &idx));
    check(vals, 2, (int64_t[]){1, 3}, dt, b ? (double[]){0, 1, 0} : (double[]){0, 7, 0}, 0);
    check(idx, 2, (int64_t[]){1, 3}, KD_INT64, (double[]){1, 0, 1}, 0);
    kd_tensor_release(vals);
    kd_tensor_release(idx);
    kd_tensor_release(a);
  }
  /* non-contiguous: the flat index is in the view's row-major order */
  kd_tensor *a = mk(2, sz, KD_FLOAT32, (double[]){1, 2, 9, 4, 5, 6}), *t = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &t));
  KD_ASSERT_OK(kd_argmax(t, NULL, false, &r)); /* t = [[1,4],[2,5],[9,6]] */
  check(r, 0, NULL, KD_INT64, (double[]){4}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_argmin(t, (int64_t[]){1}, false, &r));
  check(r, 1, &s3, KD_INT64, (double[]){0, 0, 1}, 0);
  kd_tensor_release(r);
  kd_tensor_release(t);
  kd_tensor_release(a);
  /* NaN wins argmax and argmin (the first one) */
  kd_tensor *n = mk(1, (int64_t[]){4}, KD_FLOAT64, (double[]){1, NAN, 3, NAN});
  KD_ASSERT_OK(kd_argmax(n, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_argmin(n, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){1}, 0);
  kd_tensor_release(r);
  kd_tensor *vals = NULL, *idx = NULL;
  KD_ASSERT_OK(kd_max_dim(n, 0, false, &vals, &idx));
  check(vals, 0, NULL, KD_FLOAT64, (double[]){NAN}, 0);
  check(idx, 0, NULL, KD_INT64, (double[]){1}, 0);
  kd_tensor_release(vals);
  kd_tensor_release(idx);
  /* out variants */
  kd_tensor *ov = NULL, *oi = NULL;
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_FLOAT64, kd_device_cpu(), &ov));
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT64, kd_device_cpu(), &oi));
  KD_ASSERT_OK(kd_min_dim_min(n, 0, false, ov, oi));
  check(ov, 0, NULL, KD_FLOAT64, (double[]){NAN}, 0);
  check(oi, 0, NULL, KD_INT64, (double[]){1}, 0);
  KD_ASSERT_OK(kd_argmax_out(n, NULL, false, oi));
  check(oi, 0, NULL, KD_INT64, (double[]){1}, 0);
  KD_ASSERT_ERR(kd_argmax_out(n, NULL, false, ov), KD_ETYPE,
                "Expected out tensor to have dtype int64, but got float64 instead");
  KD_ASSERT_ERR(kd_max_dim_max(n, 0, false, oi, oi), KD_ETYPE, "Expected out tensor to have dtype");
  kd_tensor_release(ov);
  kd_tensor_release(oi);
  kd_tensor_release(n);
  /* 0-dim input */
  kd_tensor *s = mk(0, NULL, KD_INT16, (double[]){5});
  KD_ASSERT_OK(kd_argmax(s, (int64_t[]){-1}, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){0}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_max_dim(s, 0, true, &vals, &idx));
  check(vals, 0, NULL, KD_INT16, (double[]){5}, 0);
  check(idx, 0, NULL, KD_INT64, (double[]){0}, 0);
  kd_tensor_release(vals);
  kd_tensor_release(idx);
  kd_tensor_release(s);
  /* errors */
  kd_tensor *z = mk(2, (int64_t[]){2, 0}, KD_FLOAT32, NULL);
  KD_ASSERT_ERR(kd_argmax(z, NULL, false, &r), KD_ERANGE,
                "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  KD_ASSERT_ERR(kd_argmin(z, (int64_t[]){1}, false, &r), KD_ERANGE,
                "argmin(): Expected reduction dim 1 to have non-zero size.");
  KD_ASSERT_ERR(kd_max_dim(z, -1, false, &vals, &idx), KD_ERANGE,
                "max(): Expected reduction dim 1 to have non-zero size.");
  assert_null(vals);
  assert_null(idx);
  KD_ASSERT_OK(kd_argmax(z, (int64_t[]){0}, false, &r));
  check_shape(r, 1, (int64_t[]){0}, KD_INT64);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_argmax(z, (int64_t[]){2}, false, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor_release(z);
  kd_tensor *c = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_COMPLEX64, kd_device_cpu(), &c));
  KD_ASSERT_ERR(kd_max_dim(c, 0, false, &vals, &idx), KD_ETYPE, "does not support complex");
  KD_ASSERT_ERR(kd_amax(c, ints(NULL, 0), false, &r), KD_ETYPE, "does not support complex");
  kd_tensor_release(c);
}

/* ---- all / any ----------------------------------------------------------------------------------- */

static void test_all_any(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3}, s2 = 2, s3 = 3;
  const double v[6] = {1, 0, 2, 3, 0, 4};
  for (size_t k = 0; k < NREAL; k++) {
    kd_dtype dt = ALL_REAL[k];
    kd_dtype want = dt == KD_UINT8 ? KD_UINT8 : KD_BOOL;
    kd_tensor *a = mk(2, sz, dt, v), *r = NULL;
    KD_ASSERT_OK(kd_all(a, &r));
    check(r, 0, NULL, want, (double[]){0}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_any(a, &r));
    check(r, 0, NULL, want, (double[]){1}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_all_dim(a, 0, false, &r));
    check(r, 1, &s3, want, (double[]){1, 0, 1}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_any_dim(a, -1, true, &r));
    check(r, 2, (int64_t[]){2, 1}, want, (double[]){1, 1}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_all_dim(a, 1, false, &r));
    check(r, 1, &s2, want, (double[]){0, 0}, 0);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  /* NaN is true; complex; empty */
  kd_tensor *f = mk(1, &s2, KD_FLOAT32, (double[]){NAN, -0.0}), *r = NULL;
  KD_ASSERT_OK(kd_any(f, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_all(f, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){0}, 0);
  kd_tensor_release(r);
  kd_tensor *z = mk(2, (int64_t[]){0, 2}, KD_INT32, NULL);
  KD_ASSERT_OK(kd_all(z, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_any_dim(z, 0, false, &r));
  check(r, 1, &s2, KD_BOOL, (double[]){0, 0}, 0);
  kd_tensor_release(r);
  kd_tensor_release(z);
  /* out: bool or uint8 only */
  kd_tensor *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_UINT8, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_any_all_out(f, o));
  check(o, 0, NULL, KD_UINT8, (double[]){1}, 0);
  kd_tensor_release(o);
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_FLOAT32, kd_device_cpu(), &o));
  KD_ASSERT_ERR(kd_all_all_out(f, o), KD_ETYPE, "all only supports bool tensor for result, got: float32");
  KD_ASSERT_ERR(kd_any_out(f, 0, false, o), KD_ETYPE, "any only supports bool tensor for result");
  kd_tensor_release(o);
  KD_ASSERT_ERR(kd_all_dim(f, 1, false, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(f);
  kd_tensor *c = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &s2, KD_COMPLEX128, kd_device_cpu(), &c));
  double *p = kd_tensor_data(c);
  p[0] = 0, p[1] = 1, p[2] = 0, p[3] = 0;
  KD_ASSERT_OK(kd_any(c, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_all(c, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){0}, 0);
  kd_tensor_release(r);
  kd_tensor_release(c);
}

/* ---- cumsum ------------------------------------------------------------------------------------------ */

/* A zero-element tensor whose other dimension is huge: done at once, not
 * row by empty row (found by fuzz_boxed; before the fix this test ran for
 * hours and hit the CTest timeout). */
static void test_cumsum_empty_huge(void **state) {
  (void)state;
  int64_t sizes[2] = {0, (int64_t)1 << 57};
  kd_tensor *a = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_empty(2, sizes, KD_BOOL, kd_device_cpu(), &a));
  KD_ASSERT_OK(kd_cumsum(a, -2, NULL, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_INT64);
  assert_int_equal(kd_tensor_ndim(r), 2);
  assert_int_equal(kd_tensor_size(r, 0), 0);
  assert_int_equal(kd_tensor_size(r, 1), sizes[1]);
  kd_tensor_release(r);
  kd_tensor_release(a);
}

static void test_cumsum(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3};
  const double v[6] = {1, 2, 3, 4, 5, 6};
  for (size_t k = 0; k < NREAL; k++) {
    kd_dtype dt = ALL_REAL[k];
    kd_dtype want = kd_dtype_is_integral(dt, true) ? KD_INT64 : dt;
    kd_tensor *a = mk(2, sz, dt, v), *r = NULL;
    KD_ASSERT_OK(kd_cumsum(a, 1, NULL, &r));
    if (dt == KD_BOOL) check(r, 2, sz, want, (double[]){1, 2, 3, 1, 2, 3}, 0);
    else check(r, 2, sz, want, (double[]){1, 3, 6, 4, 9, 15}, 0);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_cumsum(a, -2, NULL, &r));
    if (dt != KD_BOOL) check(r, 2, sz, want, (double[]){1, 2, 3, 5, 7, 9}, 0);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  /* dtype, inplace, non-contiguous, out */
  kd_tensor *a = mk(2, sz, KD_FLOAT32, v), *t = NULL, *r = NULL;
  kd_dtype f64 = KD_FLOAT64;
  KD_ASSERT_OK(kd_cumsum(a, 1, &f64, &r));
  check(r, 2, sz, KD_FLOAT64, (double[]){1, 3, 6, 4, 9, 15}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &t));
  KD_ASSERT_OK(kd_cumsum(t, 0, NULL, &r)); /* t = [[1,4],[2,5],[3,6]] */
  check(r, 2, (int64_t[]){3, 2}, KD_FLOAT32, (double[]){1, 4, 3, 9, 6, 15}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cumsum_(t, 1, NULL)); /* in place through the view */
  check(a, 2, sz, KD_FLOAT32, (double[]){1, 2, 3, 5, 7, 9}, 0);
  kd_tensor_release(t);
  kd_tensor *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT64, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_cumsum_out(a, 0, NULL, o));
  check(o, 2, sz, KD_FLOAT64, (double[]){1, 2, 3, 6, 9, 12}, 0);
  kd_tensor_release(o);
  KD_ASSERT_ERR(kd_cumsum(a, 2, NULL, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor_release(a);
  kd_tensor *s = mk(0, NULL, KD_INT8, (double[]){-4});
  KD_ASSERT_OK(kd_cumsum(s, 0, NULL, &r));
  check(r, 0, NULL, KD_INT64, (double[]){-4}, 0);
  kd_tensor_release(r);
  kd_tensor_release(s);
  kd_tensor *z = mk(2, (int64_t[]){0, 2}, KD_FLOAT32, NULL);
  KD_ASSERT_OK(kd_cumsum(z, 0, NULL, &r));
  check_shape(r, 2, (int64_t[]){0, 2}, KD_FLOAT32);
  kd_tensor_release(r);
  kd_tensor_release(z);
}

/* ---- softmax / log_softmax ------------------------------------------------------------------------------ */

/* An out= that is self, or overlaps it, is refused before anything is
 * resized or written: max.dim/min.dim as PyTorch (its TensorIterator), sum,
 * mean and prod by decision (1.13 does not check them; the result is
 * undefined there). self keeps its sizes and values. An out= that is self
 * with the result's sizes (a reduced dim of size 1, keepdim) is accepted. */
static void test_out_overlapping_self(void **state) {
  (void)state;
  setup_ops();
  const char *msg = "unsupported operation: some elements of the input tensor and the written-to "
                    "tensor refer to a single memory location. Please clone() the tensor before "
                    "performing the operation.";
  const int64_t sz[2] = {2, 3}, s2 = 2, one = 1;
  const double v[6] = {1, 5, 3, 6, 2, 4};
  kd_tensor *a = mk(2, sz, KD_INT64, v), *ov = NULL, *oi = NULL, *part = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_INT64, kd_device_cpu(), &ov));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_INT64, kd_device_cpu(), &oi));
  KD_ASSERT_ERR(kd_max_dim_max(a, 1, false, a, oi), KD_EINVAL, msg);
  KD_ASSERT_ERR(kd_max_dim_max(a, 1, false, ov, a), KD_EINVAL, msg);
  KD_ASSERT_ERR(kd_min_dim_min(a, 1, false, a, oi), KD_EINVAL, msg);
  KD_ASSERT_ERR(kd_min_dim_min(a, 1, false, ov, a), KD_EINVAL, msg);
  /* the first two elements of a: a partial overlap */
  KD_ASSERT_OK(kd_tensor_as_strided(a, 1, &s2, &one, 0, &part));
  KD_ASSERT_ERR(kd_max_dim_max(a, 1, false, part, oi), KD_EINVAL, msg);
  check(a, 2, sz, KD_INT64, v, 0);
  check(ov, 1, (int64_t[]){0}, KD_INT64, NULL, 0);
  check(oi, 1, (int64_t[]){0}, KD_INT64, NULL, 0);
  kd_tensor_release(part);
  /* self [2, 1], dim 1 kept: out=self has the result's sizes */
  kd_tensor *c = mk(2, (int64_t[]){2, 1}, KD_INT64, (double[]){3, 4});
  KD_ASSERT_OK(kd_max_dim_max(c, 1, true, c, oi));
  check(c, 2, (int64_t[]){2, 1}, KD_INT64, (double[]){3, 4}, 0);
  check(oi, 2, (int64_t[]){2, 1}, KD_INT64, (double[]){0, 0}, 0);
  kd_tensor_release(c);
  /* sum, mean, prod */
  kd_tensor *f = mk(2, sz, KD_FLOAT32, v);
  int64_t d1 = 1;
  KD_ASSERT_ERR(kd_sum_IntList_out(f, ints(&d1, 1), false, NULL, f), KD_EINVAL, msg);
  KD_ASSERT_ERR(kd_mean_out(f, ints(&d1, 1), false, NULL, f), KD_EINVAL, msg);
  KD_ASSERT_ERR(kd_prod_int_out(f, 1, false, NULL, f), KD_EINVAL, msg);
  KD_ASSERT_ERR(kd_sum_IntList_out(f, ints(&d1, 1), true, NULL, f), KD_EINVAL, msg);
  check(f, 2, sz, KD_FLOAT32, v, 0);
  kd_tensor *g = mk(2, (int64_t[]){2, 1}, KD_FLOAT32, (double[]){3, 4});
  KD_ASSERT_OK(kd_sum_IntList_out(g, ints(&d1, 1), true, NULL, g));
  check(g, 2, (int64_t[]){2, 1}, KD_FLOAT32, (double[]){3, 4}, 0);
  kd_tensor_release(g);
  kd_tensor_release(f);
  kd_tensor_release(oi);
  kd_tensor_release(ov);
  kd_tensor_release(a);
}

static void test_softmax(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[2] = {2, 3};
  const double v[6] = {0, 1, 2, 1, 1, 1};
  double e = exp(1.0), e2 = exp(2.0), z = 1 + e + e2;
  double sm1[6] = {1 / z, e / z, e2 / z, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  double lsm1[6], sm0[6], lsm0[6];
  for (int i = 0; i < 6; i++) lsm1[i] = log(sm1[i]);
  /* dim 0: columns (0,1), (1,1), (2,1) */
  double c0 = 1 / (1 + e), c1 = e / (1 + e);
  double s0v[6] = {c0, 0.5, 1 / (1 + exp(-1.0)), c1, 0.5, 1 - 1 / (1 + exp(-1.0))};
  for (int i = 0; i < 6; i++) sm0[i] = s0v[i], lsm0[i] = log(s0v[i]);
  const kd_dtype fl[] = {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
  for (size_t k = 0; k < 4; k++) {
    double tol = fl[k] == KD_FLOAT64 ? 1e-12 : fl[k] == KD_FLOAT32 ? 1e-6 : 1e-2;
    kd_tensor *a = mk(2, sz, fl[k], v), *r = NULL;
    KD_ASSERT_OK(kd_softmax_int(a, 1, NULL, &r));
    check(r, 2, sz, fl[k], sm1, tol);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_log_softmax_int(a, -1, NULL, &r));
    check(r, 2, sz, fl[k], lsm1, tol);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_softmax_int(a, -2, NULL, &r));
    check(r, 2, sz, fl[k], sm0, tol);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_internal_log_softmax(a, 0, false, &r));
    check(r, 2, sz, fl[k], lsm0, tol);
    kd_tensor_release(r);
    kd_tensor_release(a);
  }
  /* integer input with dtype; without it is an error */
  kd_tensor *i = mk(2, sz, KD_INT64, v), *r = NULL;
  kd_dtype f64 = KD_FLOAT64;
  KD_ASSERT_OK(kd_softmax_int(i, 1, &f64, &r));
  check(r, 2, sz, KD_FLOAT64, sm1, 1e-12);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_softmax_int(i, 1, NULL, &r), KD_ETYPE, "not implemented for 'int64'");
  KD_ASSERT_ERR(kd_log_softmax_int(i, 2, &f64, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  /* out variant, non-contiguous input, a row of -inf */
  kd_tensor *a = mk(2, sz, KD_FLOAT32, (double[]){0, 1, 2, -INFINITY, -INFINITY, 5}), *t = NULL, *o = NULL;
  KD_ASSERT_OK(kd_tensor_empty(2, sz, KD_FLOAT32, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_softmax_int_out(a, 1, NULL, o));
  check(o, 2, sz, KD_FLOAT32, (double[]){sm1[0], sm1[1], sm1[2], 0, 0, 1}, 1e-6);
  KD_ASSERT_OK(kd_log_softmax_int_out(a, 1, NULL, o));
  check(o, 2, sz, KD_FLOAT32, (double[]){lsm1[0], lsm1[1], lsm1[2], -INFINITY, -INFINITY, 0}, 1e-6);
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &t));
  KD_ASSERT_OK(kd_softmax_int(t, 0, NULL, &r));
  check(r, 2, (int64_t[]){3, 2}, KD_FLOAT32, (double[]){sm1[0], 0, sm1[1], 0, sm1[2], 1}, 1e-6);
  kd_tensor_release(r);
  kd_tensor_release(t);
  /* An expanded out= of the result's sizes is refused as PyTorch's copy_
   * into it refuses it (internal overlap), after the argument checks; its
   * base keeps its values. */
  KD_ASSERT_OK(kd_tensor_as_strided(o, 2, sz, (int64_t[]){0, 1}, 0, &t));
  kd_scalar seven = kd_scalar_int(7);
  KD_ASSERT_OK(kd_fill_Scalar_(o, &seven));
  const char *internal = "unsupported operation: more than one element of the written-to tensor "
                         "refers to a single memory location. Please clone() the tensor before "
                         "performing the operation.";
  KD_ASSERT_ERR(kd_softmax_int_out(a, 1, NULL, t), KD_EINVAL, internal);
  KD_ASSERT_ERR(kd_log_softmax_int_out(a, 1, NULL, t), KD_EINVAL, internal);
  KD_ASSERT_ERR(kd_softmax_int_out(a, 2, NULL, t), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  check(o, 2, sz, KD_FLOAT32, (double[]){7, 7, 7, 7, 7, 7}, 0);
  kd_tensor_release(t);
  kd_tensor_release(o);
  kd_tensor_release(a);
  kd_tensor_release(i);
  /* 0-dim */
  kd_tensor *s = mk(0, NULL, KD_FLOAT32, (double[]){3});
  KD_ASSERT_OK(kd_softmax_int(s, 0, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_log_softmax_int(s, -1, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){0}, 0);
  kd_tensor_release(r);
  kd_tensor_release(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sum_values),   cmocka_unit_test(test_sum_dtypes),
      cmocka_unit_test(test_sum_noncontiguous), cmocka_unit_test(test_sum_zero_size),
      cmocka_unit_test(test_sum_out),      cmocka_unit_test(test_sum_errors),
      cmocka_unit_test(test_sum_large),    cmocka_unit_test(test_sum_meta),
      cmocka_unit_test(test_mean),         cmocka_unit_test(test_prod),
      cmocka_unit_test(test_amax_amin),    cmocka_unit_test(test_argmax),
      cmocka_unit_test(test_all_any),      cmocka_unit_test(test_cumsum),
      cmocka_unit_test(test_cumsum_empty_huge),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_out_overlapping_self),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
