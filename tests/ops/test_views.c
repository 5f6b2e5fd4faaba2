/*
 * The view and shape operators (ops/native/views.c, shape.c), called
 * directly through their kernels (views.h) until kdgen declares them.
 * Expected values are worked out by hand in the comments.
 */
#include "kd_test.h"

#include "native/views.h"

#define I(...) ((const int64_t[]){__VA_ARGS__})
#define NI(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define INTS(...) ((kd_ints){I(__VA_ARGS__), NI(__VA_ARGS__)})
#define NO_INTS ((kd_ints){NULL, 0})
#define D(...) ((const double[]){__VA_ARGS__})
#define ND(...) ((int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))
#define EXPECT_VALS(t, ...) expect_vals((t), D(__VA_ARGS__), ND(__VA_ARGS__))
#define EXPECT_GEOM(t, sizes, strides, offset) \
  expect_geom((t), NI sizes, I sizes, I strides, (offset))

static kd_device meta_dev(void) { return (kd_device){KD_DEVICE_META, 0}; }

/* A cpu tensor of `dt` holding 0, 1, 2, ... in row-major order. */
static kd_tensor *arange(kd_dtype dt, int ndim, const int64_t *sizes) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t));
  int64_t n = kd_tensor_numel(t), idx[KD_MAX_DIMS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k;
    for (int i = ndim - 1; i >= 0; i--) {
      idx[i] = rem % sizes[i];
      rem /= sizes[i];
    }
    kd_scalar s = kd_scalar_int(k);
    KD_ASSERT_OK(kd_tensor_set(t, idx, &s));
  }
  return t;
}
#define ARANGE(dt, ...) arange((dt), NI(__VA_ARGS__), I(__VA_ARGS__))

static kd_tensor *from_i64(int ndim, const int64_t *sizes, const int64_t *data) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, KD_INT64, data, &t));
  return t;
}

static kd_tensor *meta(kd_dtype dt, int ndim, const int64_t *sizes) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, meta_dev(), &t));
  return t;
}
#define META(dt, ...) meta((dt), NI(__VA_ARGS__), I(__VA_ARGS__))

/* t's values in row-major order against want (as doubles; real part). */
static void expect_vals(const kd_tensor *t, const double *want, int64_t n) {
  assert_int_equal(kd_tensor_numel(t), n);
  int nd = kd_tensor_ndim(t);
  int64_t idx[KD_MAX_DIMS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k;
    for (int i = nd - 1; i >= 0; i--) {
      idx[i] = rem % kd_tensor_sizes(t)[i];
      rem /= kd_tensor_sizes(t)[i];
    }
    kd_scalar s;
    KD_ASSERT_OK(kd_tensor_get(t, idx, &s));
    double got = kd_scalar_to_double(&s);
    if (got != want[k]) fail_msg("element %lld: got %g, expected %g", (long long)k, got, want[k]);
  }
}

static void expect_geom(const kd_tensor *t, int ndim, const int64_t *sizes,
                        const int64_t *strides, int64_t offset) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int i = 0; i < ndim; i++) {
    if (kd_tensor_sizes(t)[i] != sizes[i] || kd_tensor_strides(t)[i] != strides[i])
      fail_msg("dim %d: size %lld stride %lld, expected %lld %lld", i,
               (long long)kd_tensor_sizes(t)[i], (long long)kd_tensor_strides(t)[i],
               (long long)sizes[i], (long long)strides[i]);
  }
  assert_int_equal(kd_tensor_storage_offset(t), offset);
}

/* Scalar-free 0-dim tensor */
static kd_tensor *scalar_f(double v) {
  kd_tensor *t;
  kd_scalar s = kd_scalar_double(v);
  KD_ASSERT_OK(kd_tensor_from_scalar(&s, KD_FLOAT32, &t));
  return t;
}

static int warnings;
static char last_warning[1024];
static void count_warning(const char *m, void *ud) {
  (void)ud;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", m);
}

/* ---- view ----------------------------------------------------------------- */

static void test_view(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 3), *v, *tr;
  KD_ASSERT_OK(kd__native_view(a, INTS(3, 2), &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5);
  assert_true(kd_tensor_shares_storage(a, v));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_view(a, INTS(-1), &v));
  EXPECT_GEOM(v, (6), (1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_view(a, INTS(1, -1, 1, 2), &v));
  EXPECT_GEOM(v, (1, 3, 1, 2), (6, 2, 2, 1), 0);
  kd_tensor_release(v);

  KD_ASSERT_ERR(kd__native_view(a, INTS(3, 5), &v), KD_EINVAL,
                "shape '[3, 5]' is invalid for input of size 6");
  assert_null(v);
  KD_ASSERT_ERR(kd__native_view(a, INTS(-1, -1), &v), KD_EINVAL,
                "only one dimension can be inferred");
  KD_ASSERT_ERR(kd__native_view(a, INTS(-2, 3), &v), KD_EINVAL, "invalid shape dimension -2");
  KD_ASSERT_ERR(kd__native_view(a, INTS(4, -1), &v), KD_EINVAL,
                "shape '[4, -1]' is invalid for input of size 6");

  /* a.t(): sizes [3, 2] strides [1, 3]: [6] would cross two chunks... */
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &tr));
  KD_ASSERT_ERR(kd__native_view(tr, INTS(6), &v), KD_EINVAL,
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  /* ...but splitting or adding size-1 dimensions is fine. */
  KD_ASSERT_OK(kd__native_view(tr, INTS(3, 1, 2), &v));
  EXPECT_GEOM(v, (3, 1, 2), (1, 6, 3), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(v);
  kd_tensor_release(tr);

  /* A view of a view with an offset keeps it. b = a[1] = [3, 4, 5]. */
  kd_tensor *b;
  KD_ASSERT_OK(kd__native_select(a, 0, 1, &b));
  KD_ASSERT_OK(kd__native_view(b, INTS(3, 1), &v));
  EXPECT_GEOM(v, (3, 1), (1, 1), 3);
  EXPECT_VALS(v, 3, 4, 5);
  kd_tensor_release(v);
  kd_tensor_release(b);

  /* view_as */
  kd_tensor *shape = META(KD_INT8, 6, 1);
  KD_ASSERT_OK(kd__native_view_as(a, shape, &v));
  EXPECT_GEOM(v, (6, 1), (1, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(shape);
  kd_tensor_release(a);

  /* 0-dim and zero-size tensors. */
  kd_tensor *s = scalar_f(7);
  KD_ASSERT_OK(kd__native_view(s, INTS(1, 1), &v));
  EXPECT_GEOM(v, (1, 1), (1, 1), 0);
  EXPECT_VALS(v, 7);
  kd_tensor *back;
  KD_ASSERT_OK(kd__native_view(v, NO_INTS, &back));
  assert_int_equal(kd_tensor_ndim(back), 0);
  kd_tensor_release(back);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *z = ARANGE(KD_FLOAT32, 0, 3);
  KD_ASSERT_OK(kd__native_view(z, INTS(3, 0, 2), &v));
  EXPECT_GEOM(v, (3, 0, 2), (2, 2, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_view(z, INTS(0, -1), &v), KD_EINVAL,
                "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified "
                "dimension size -1 can be any value and is ambiguous");
  kd_tensor_release(z);

  /* Meta: geometry only. */
  kd_tensor *m = META(KD_FLOAT64, 4, 5);
  KD_ASSERT_OK(kd__native_view(m, INTS(2, 10), &v));
  EXPECT_GEOM(v, (2, 10), (10, 1), 0);
  assert_int_equal(kd_tensor_device(v).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_dtype(v), KD_FLOAT64);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

static void test_view_dtype(void **state) {
  (void)state;
  int32_t data[4] = {1, 2, 3, 4};
  kd_tensor *a, *v;
  KD_ASSERT_OK(kd_tensor_from_data(2, I(2, 2), KD_INT32, data, &a));
  /* Same size: float32 bits of the ints. */
  KD_ASSERT_OK(kd__native_view_dtype(a, KD_FLOAT32, &v));
  EXPECT_GEOM(v, (2, 2), (2, 1), 0);
  assert_int_equal(kd_tensor_dtype(v), KD_FLOAT32);
  assert_true(kd_tensor_shares_storage(a, v));
  kd_tensor_release(v);
  /* Same dtype: self itself. */
  KD_ASSERT_OK(kd__native_view_dtype(a, KD_INT32, &v));
  assert_ptr_equal(v, a);
  kd_tensor_release(v);
  /* Smaller: int32 [2, 2] -> int16 [2, 4] (little endian: 1, 0, 2, 0, ...). */
  KD_ASSERT_OK(kd__native_view_dtype(a, KD_INT16, &v));
  EXPECT_GEOM(v, (2, 4), (4, 1), 0);
  EXPECT_VALS(v, 1, 0, 2, 0, 3, 0, 4, 0);
  kd_tensor_release(v);
  /* Larger: int32 [2, 2] -> int64 [2, 1]: 1 | 2 << 32, 3 | 4 << 32. */
  KD_ASSERT_OK(kd__native_view_dtype(a, KD_INT64, &v));
  EXPECT_GEOM(v, (2, 1), (1, 1), 0);
  EXPECT_VALS(v, (double)(1 + (2LL << 32)), (double)(3 + (4LL << 32)));
  kd_tensor_release(v);
  /* Errors. */
  kd_tensor *tr, *row;
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &tr));
  KD_ASSERT_ERR(kd__native_view_dtype(tr, KD_INT8, &v), KD_EINVAL,
                "self.stride(-1) must be 1 to view Int as Char (different element sizes), but got 2");
  KD_ASSERT_OK(kd__native_select(a, 0, 1, &row)); /* offset 2 */
  kd_tensor *r3;
  KD_ASSERT_OK(kd__native_slice(row, 0, I(1), NULL, 1, &r3)); /* offset 3, size 1 */
  KD_ASSERT_ERR(kd__native_view_dtype(r3, KD_INT64, &v), KD_EINVAL,
                "self.size(-1) must be divisible by 2 to view Int as Long (different element "
                "sizes), but got 1");
  kd_tensor_release(r3);
  kd_tensor_release(row);
  kd_tensor_release(tr);
  kd_tensor *s = scalar_f(1);
  KD_ASSERT_ERR(kd__native_view_dtype(s, KD_FLOAT64, &v), KD_EINVAL,
                "self.dim() cannot be 0 to view Float as Double (different element sizes)");
  kd_tensor_release(s);
  kd_tensor *a3 = ARANGE(KD_INT32, 3, 2); /* strides [2, 1]; [1:] has offset 2 */
  kd_tensor *sl;
  KD_ASSERT_OK(kd__native_slice(a3, 0, I(1), NULL, 1, &sl));
  KD_ASSERT_OK(kd__native_view_dtype(sl, KD_INT64, &v)); /* offset 2 -> 1, strides [1, 1] */
  EXPECT_GEOM(v, (2, 1), (1, 1), 1);
  kd_tensor_release(v);
  kd_tensor_release(sl);
  kd_tensor *t3 = ARANGE(KD_INT32, 3, 2);
  kd_tensor *mid;
  KD_ASSERT_OK(kd__native_slice(t3, 0, I(1), I(2), 1, &mid)); /* [1, 2] offset 2 */
  kd_tensor_release(mid);
  kd_tensor *odd = ARANGE(KD_INT32, 2, 3);
  kd_tensor *ev;
  KD_ASSERT_OK(kd__native_slice(odd, 1, I(0), I(2), 1, &ev)); /* [2, 2] strides [3, 1] */
  KD_ASSERT_ERR(kd__native_view_dtype(ev, KD_INT64, &v), KD_EINVAL,
                "self.stride(0) must be divisible by 2 to view Int as Long (different element "
                "sizes), but got 3");
  kd_tensor_release(ev);
  kd_tensor_release(odd);
  kd_tensor_release(t3);
  kd_tensor_release(a3);
  kd_tensor_release(a);
  /* Meta. */
  kd_tensor *m = META(KD_COMPLEX64, 3);
  KD_ASSERT_OK(kd__native_view_dtype(m, KD_FLOAT32, &v));
  EXPECT_GEOM(v, (6), (1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

static void test_reshape(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT64, 2, 3), *r, *tr;
  KD_ASSERT_OK(kd__native_reshape(a, INTS(3, -1), &r));
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  assert_true(kd_tensor_shares_storage(a, r)); /* a view */
  kd_tensor_release(r);
  /* a.t() = [[0, 3], [1, 4], [2, 5]] cannot be viewed as [6]: a copy. */
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &tr));
  KD_ASSERT_OK(kd__native_reshape(tr, INTS(6), &r));
  assert_false(kd_tensor_shares_storage(a, r));
  EXPECT_GEOM(r, (6), (1), 0);
  EXPECT_VALS(r, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_reshape(tr, INTS(2, 3), &r));
  EXPECT_VALS(r, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd__native_reshape(tr, INTS(4), &r), KD_EINVAL,
                "shape '[4]' is invalid for input of size 6");
  /* reshape_as */
  kd_tensor *like = META(KD_BOOL, 1, 6);
  KD_ASSERT_OK(kd__native_reshape_as(tr, like, &r));
  EXPECT_GEOM(r, (1, 6), (6, 1), 0);
  EXPECT_VALS(r, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(r);
  kd_tensor_release(like);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  /* Meta, both routes. */
  kd_tensor *m = META(KD_FLOAT16, 2, 3), *mt;
  KD_ASSERT_OK(kd__native_transpose(m, 0, 1, &mt));
  KD_ASSERT_OK(kd__native_reshape(mt, INTS(-1), &r));
  EXPECT_GEOM(r, (6), (1), 0);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  assert_false(kd_tensor_shares_storage(m, r));
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_reshape(m, INTS(-1), &r));
  assert_true(kd_tensor_shares_storage(m, r));
  kd_tensor_release(r);
  kd_tensor_release(mt);
  kd_tensor_release(m);
}

/* ---- transpose, t, permute --------------------------------------------------- */

static void test_transpose(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 3, 4), *v;
  KD_ASSERT_OK(kd__native_transpose(a, 0, -1, &v));
  EXPECT_GEOM(v, (4, 3, 2), (1, 4, 12), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_transpose(a, 1, 1, &v)); /* an alias */
  EXPECT_GEOM(v, (2, 3, 4), (12, 4, 1), 0);
  assert_ptr_not_equal(v, a);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_transpose(a, 3, 0, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  KD_ASSERT_ERR(kd__native_transpose(a, 0, -4, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  /* 2x3: [[0, 1, 2], [3, 4, 5]]^T = [[0, 3], [1, 4], [2, 5]]. */
  kd_tensor *b = ARANGE(KD_UINT8, 2, 3);
  KD_ASSERT_OK(kd__native_transpose(b, 1, 0, &v));
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(v);
  /* In place. */
  KD_ASSERT_OK(kd__native_transpose_(b, -1, -2));
  EXPECT_GEOM(b, (3, 2), (1, 3), 0);
  EXPECT_VALS(b, 0, 3, 1, 4, 2, 5);
  KD_ASSERT_ERR(kd__native_transpose_(b, 2, 0), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_GEOM(b, (3, 2), (1, 3), 0);
  kd_tensor_release(b);
  /* Scalars: dims 0 and -1 are allowed. */
  kd_tensor *s = scalar_f(2);
  KD_ASSERT_OK(kd__native_transpose(s, 0, -1, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_transpose(s, 0, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(s);
  kd_tensor_release(a);
  kd_tensor *m = META(KD_FLOAT32, 5, 0);
  KD_ASSERT_OK(kd__native_transpose(m, 0, 1, &v));
  EXPECT_GEOM(v, (0, 5), (1, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

static void test_t(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT16, 2, 3), *v;
  KD_ASSERT_OK(kd__native_t(a, &v));
  EXPECT_GEOM(v, (3, 2), (1, 3), 0);
  kd_tensor_release(v);
  kd_tensor *one = ARANGE(KD_INT16, 4);
  KD_ASSERT_OK(kd__native_t(one, &v));
  EXPECT_GEOM(v, (4), (1), 0);
  kd_tensor_release(v);
  kd_tensor *three = ARANGE(KD_INT16, 1, 2, 3);
  KD_ASSERT_ERR(kd__native_t(three, &v), KD_EINVAL,
                "t() expects a tensor with <= 2 dimensions, but self is 3D");
  KD_ASSERT_ERR(kd__native_t_(three), KD_EINVAL,
                "t_() expects a tensor with <= 2 dimensions, but self is 3D");
  KD_ASSERT_OK(kd__native_t_(a));
  EXPECT_GEOM(a, (3, 2), (1, 3), 0);
  kd_tensor_release(three);
  kd_tensor_release(one);
  kd_tensor_release(a);
}

static void test_permute(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT64, 2, 3, 4), *v;
  KD_ASSERT_OK(kd__native_permute(a, INTS(2, 0, 1), &v));
  EXPECT_GEOM(v, (4, 2, 3), (1, 12, 4), 0);
  /* v[1][1][2] = a[1][2][1] = 12 + 8 + 1 */
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(v, I(1, 1, 2), &s));
  assert_true(kd_scalar_to_double(&s) == 21);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_permute(a, INTS(-1, -3, 1), &v));
  EXPECT_GEOM(v, (4, 2, 3), (1, 12, 4), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_permute(a, INTS(0, 1), &v), KD_EINVAL,
                "number of dims don't match in permute");
  KD_ASSERT_ERR(kd__native_permute(a, INTS(0, 1, -3), &v), KD_EINVAL, "repeated dim in permute");
  KD_ASSERT_ERR(kd__native_permute(a, INTS(0, 1, 3), &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  kd_tensor_release(a);
  kd_tensor *s0 = scalar_f(1);
  KD_ASSERT_OK(kd__native_permute(s0, NO_INTS, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  kd_tensor_release(s0);
  kd_tensor *m = META(KD_BOOL, 2, 3);
  KD_ASSERT_OK(kd__native_permute(m, INTS(1, 0), &v));
  EXPECT_GEOM(v, (3, 2), (1, 3), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- expand ------------------------------------------------------------------ */

static void test_expand(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT32, 3, 1), *v;
  KD_ASSERT_OK(kd__native_expand(a, INTS(2, 3, 4), false, &v));
  EXPECT_GEOM(v, (2, 3, 4), (0, 1, 0), 0);
  /* v[i][j][k] = j */
  EXPECT_VALS(v, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_expand(a, INTS(-1, 2), true, &v));
  EXPECT_GEOM(v, (3, 2), (1, 0), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_expand(a, INTS(1, 3, 1), false, &v)); /* new leading 1: stride 3 */
  EXPECT_GEOM(v, (1, 3, 1), (3, 1, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_expand(a, INTS(4), false, &v), KD_EINVAL,
                "expand(CPUIntType{[3, 1]}, size=[4]): the number of sizes provided (1) must be "
                "greater or equal to the number of dimensions in the tensor (2)");
  KD_ASSERT_ERR(kd__native_expand(a, INTS(2, 4), false, &v), KD_EINVAL,
                "The expanded size of the tensor (2) must match the existing size (3) at "
                "non-singleton dimension 0.  Target sizes: [2, 4].  Tensor sizes: [3, 1]");
  KD_ASSERT_ERR(kd__native_expand(a, INTS(-1, 3, 1), false, &v), KD_EINVAL,
                "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                "dimension 0");
  KD_ASSERT_ERR(kd__native_expand(a, INTS(3, -2), false, &v), KD_EINVAL,
                "The expanded size of the tensor (-2) isn't allowed");
  /* expand_as; to size 0. */
  kd_tensor *like = META(KD_FLOAT32, 3, 0);
  KD_ASSERT_OK(kd__native_expand_as(a, like, &v));
  EXPECT_GEOM(v, (3, 0), (1, 0), 0);
  kd_tensor_release(v);
  kd_tensor_release(like);
  kd_tensor_release(a);
  /* A scalar to [2, 2]. */
  kd_tensor *s = scalar_f(5);
  KD_ASSERT_OK(kd__native_expand(s, INTS(2, 2), false, &v));
  EXPECT_GEOM(v, (2, 2), (0, 0), 0);
  EXPECT_VALS(v, 5, 5, 5, 5);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *m = META(KD_FLOAT32, 1);
  KD_ASSERT_OK(kd__native_expand(m, INTS(7), false, &v));
  EXPECT_GEOM(v, (7), (0), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_expand(m, NO_INTS, false, &v), KD_EINVAL,
                "expand(MetaFloatType{[1]}, size=[]): the number of sizes provided (0)");
  kd_tensor_release(m);
}

/* ---- squeeze, unsqueeze ------------------------------------------------------ */

static void test_squeeze(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 1, 3, 1, 2), *v;
  KD_ASSERT_OK(kd__native_squeeze(a, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_squeeze_dim(a, -2, &v));
  EXPECT_GEOM(v, (1, 3, 2), (6, 2, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_squeeze_dim(a, 1, &v)); /* size 3: unchanged */
  EXPECT_GEOM(v, (1, 3, 1, 2), (6, 2, 2, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_squeeze_dim(a, 4, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-4, 3], but got 4)");
  KD_ASSERT_OK(kd__native_squeeze__dim(a, 0));
  EXPECT_GEOM(a, (3, 1, 2), (2, 2, 1), 0);
  KD_ASSERT_OK(kd__native_squeeze_(a));
  EXPECT_GEOM(a, (3, 2), (2, 1), 0);
  EXPECT_VALS(a, 0, 1, 2, 3, 4, 5);
  KD_ASSERT_ERR(kd__native_squeeze__dim(a, -3), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  kd_tensor_release(a);
  /* Scalars. */
  kd_tensor *s = scalar_f(3);
  KD_ASSERT_OK(kd__native_squeeze(s, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_squeeze_dim(s, -1, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *m = META(KD_INT8, 1, 1, 0);
  KD_ASSERT_OK(kd__native_squeeze(m, &v));
  EXPECT_GEOM(v, (0), (1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

static void test_unsqueeze(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 3), *v;
  KD_ASSERT_OK(kd__native_unsqueeze(a, 0, &v));
  EXPECT_GEOM(v, (1, 2, 3), (6, 3, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_unsqueeze(a, 1, &v));
  EXPECT_GEOM(v, (2, 1, 3), (3, 3, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_unsqueeze(a, -1, &v));
  EXPECT_GEOM(v, (2, 3, 1), (3, 1, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_unsqueeze(a, 3, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  KD_ASSERT_ERR(kd__native_unsqueeze(a, -4, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  /* Non-contiguous: the transpose [3, 2] strides [1, 3]. */
  kd_tensor *tr;
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &tr));
  KD_ASSERT_OK(kd__native_unsqueeze(tr, 1, &v));
  EXPECT_GEOM(v, (3, 1, 2), (1, 6, 3), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_unsqueeze_(tr, 0));
  EXPECT_GEOM(tr, (1, 3, 2), (3, 1, 3), 0);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  kd_tensor *s = scalar_f(1);
  KD_ASSERT_OK(kd__native_unsqueeze(s, -1, &v));
  EXPECT_GEOM(v, (1), (1), 0);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *m = META(KD_COMPLEX128, 4);
  KD_ASSERT_OK(kd__native_unsqueeze(m, 1, &v));
  EXPECT_GEOM(v, (4, 1), (1, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- flatten ----------------------------------------------------------------- */

static void test_flatten(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 3, 4), *v;
  KD_ASSERT_OK(kd__native_flatten_using_ints(a, 0, -1, &v));
  EXPECT_GEOM(v, (24), (1), 0);
  assert_true(kd_tensor_shares_storage(a, v));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_flatten_using_ints(a, 1, 2, &v));
  EXPECT_GEOM(v, (2, 12), (12, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_flatten_using_ints(a, -2, -2, &v));
  assert_ptr_equal(v, a); /* PyTorch returns self */
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_flatten_using_ints(a, 2, 1, &v), KD_EINVAL,
                "flatten() has invalid args: start_dim cannot come after end_dim");
  KD_ASSERT_ERR(kd__native_flatten_using_ints(a, 0, 3, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  /* Non-contiguous: a copy. a.transpose(0, 2) is [4, 3, 2]; flattened [0, 12, 4, 16, 8, 20, ...] */
  kd_tensor *tr;
  KD_ASSERT_OK(kd__native_transpose(a, 0, 2, &tr));
  KD_ASSERT_OK(kd__native_flatten_using_ints(tr, 1, 2, &v));
  EXPECT_GEOM(v, (4, 6), (6, 1), 0);
  assert_false(kd_tensor_shares_storage(a, v));
  EXPECT_VALS(v, 0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19,
              11, 23);
  kd_tensor_release(v);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  kd_tensor *s = scalar_f(4);
  KD_ASSERT_OK(kd__native_flatten_using_ints(s, 0, -1, &v));
  EXPECT_GEOM(v, (1), (1), 0);
  EXPECT_VALS(v, 4);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *m = META(KD_FLOAT32, 2, 0, 3);
  KD_ASSERT_OK(kd__native_flatten_using_ints(m, 0, 1, &v));
  EXPECT_GEOM(v, (0, 3), (3, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- slice, select, narrow --------------------------------------------------- */

static void test_slice(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT64, 5), *v;
  KD_ASSERT_OK(kd__native_slice(a, 0, I(1), I(4), 2, &v));
  EXPECT_GEOM(v, (2), (2), 1);
  EXPECT_VALS(v, 1, 3);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_slice(a, -1, NULL, NULL, 3, &v));
  EXPECT_VALS(v, 0, 3);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_slice(a, 0, I(-2), I(100), 1, &v));
  EXPECT_GEOM(v, (2), (1), 3);
  EXPECT_VALS(v, 3, 4);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_slice(a, 0, I(-100), I(-4), 1, &v));
  EXPECT_VALS(v, 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_slice(a, 0, I(4), I(2), 1, &v)); /* empty */
  EXPECT_GEOM(v, (0), (1), 4);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_slice(a, 0, I(7), NULL, 1, &v)); /* empty, at the end */
  EXPECT_GEOM(v, (0), (1), 5);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_slice(a, 0, I(INT64_MIN), NULL, INT64_MAX, &v)); /* no overflow */
  EXPECT_GEOM(v, (1), (INT64_MAX), 0);
  EXPECT_VALS(v, 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_slice(a, 0, NULL, NULL, 0, &v), KD_EINVAL, "slice step must be positive");
  KD_ASSERT_ERR(kd__native_slice(a, 1, NULL, NULL, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(a);
  /* 2-D, columns 1: of [[0, 1, 2], [3, 4, 5]] */
  kd_tensor *b = ARANGE(KD_FLOAT32, 2, 3);
  KD_ASSERT_OK(kd__native_slice(b, 1, I(1), NULL, 1, &v));
  EXPECT_GEOM(v, (2, 2), (3, 1), 1);
  EXPECT_VALS(v, 1, 2, 4, 5);
  kd_tensor_release(v);
  kd_tensor_release(b);
  kd_tensor *s = scalar_f(1);
  KD_ASSERT_ERR(kd__native_slice(s, 0, NULL, NULL, 1, &v), KD_ERANGE,
                "slice() cannot be applied to a 0-dim tensor.");
  kd_tensor_release(s);
  kd_tensor *m = META(KD_FLOAT32, 10, 2);
  KD_ASSERT_OK(kd__native_slice(m, 0, I(2), I(9), 3, &v)); /* 2, 5, 8 */
  EXPECT_GEOM(v, (3, 2), (6, 1), 4);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

static void test_select(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 3), *v;
  KD_ASSERT_OK(kd__native_select(a, 1, -1, &v));
  EXPECT_GEOM(v, (2), (3), 2);
  EXPECT_VALS(v, 2, 5);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_select(a, -2, 1, &v));
  EXPECT_VALS(v, 3, 4, 5);
  kd_tensor *e;
  KD_ASSERT_OK(kd__native_select(v, 0, 2, &e)); /* to 0-dim */
  assert_int_equal(kd_tensor_ndim(e), 0);
  assert_int_equal(kd_tensor_storage_offset(e), 5);
  kd_tensor_release(e);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_select(a, 0, 2, &v), KD_ERANGE,
                "select(): index 2 out of range for tensor of size [2, 3] at dimension 0");
  KD_ASSERT_ERR(kd__native_select(a, -1, -4, &v), KD_ERANGE,
                "select(): index -4 out of range for tensor of size [2, 3] at dimension 1");
  KD_ASSERT_ERR(kd__native_select(a, 2, 0, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor_release(a);
  kd_tensor *s = scalar_f(1);
  KD_ASSERT_ERR(kd__native_select(s, 0, 0, &v), KD_ERANGE,
                "select() cannot be applied to a 0-dim tensor.");
  kd_tensor_release(s);
  kd_tensor *z = META(KD_FLOAT32, 0, 4);
  KD_ASSERT_OK(kd__native_select(z, 1, 3, &v));
  EXPECT_GEOM(v, (0), (4), 3);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_select(z, 0, 0, &v), KD_ERANGE,
                "select(): index 0 out of range for tensor of size [0, 4] at dimension 0");
  kd_tensor_release(z);
}

static void test_narrow(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT32, 4, 3), *v;
  KD_ASSERT_OK(kd__native_narrow(a, 0, 1, 2, &v));
  EXPECT_GEOM(v, (2, 3), (3, 1), 3);
  EXPECT_VALS(v, 3, 4, 5, 6, 7, 8);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_narrow(a, -1, -1, 1, &v));
  EXPECT_GEOM(v, (4, 1), (3, 1), 2);
  EXPECT_VALS(v, 2, 5, 8, 11);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_narrow(a, 0, 4, 0, &v)); /* start == size */
  EXPECT_GEOM(v, (0, 3), (3, 1), 12);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_narrow(a, 0, 3, 2, &v), KD_EINVAL,
                "start (3) + length (2) exceeds dimension size (4).");
  KD_ASSERT_ERR(kd__native_narrow(a, 0, 0, -1, &v), KD_EINVAL,
                "start (0) + length (-1) exceeds dimension size (4).");
  KD_ASSERT_ERR(kd__native_narrow(a, 0, 5, 0, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-4, 3], but got 5)");
  KD_ASSERT_ERR(kd__native_narrow(a, 2, 0, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  /* narrow.Tensor */
  kd_tensor *st;
  KD_ASSERT_OK(kd_tensor_from_data(0, NULL, KD_INT64, (int64_t[]){2}, &st));
  KD_ASSERT_OK(kd__native_narrow_Tensor(a, 0, st, 2, &v));
  EXPECT_VALS(v, 6, 7, 8, 9, 10, 11);
  kd_tensor_release(v);
  kd_tensor_release(st);
  kd_tensor *fs = scalar_f(1);
  KD_ASSERT_ERR(kd__native_narrow_Tensor(a, 0, fs, 1, &v), KD_EINVAL,
                "start must be an 0-dim integral Tensor.");
  KD_ASSERT_ERR(kd__native_narrow(fs, 0, 0, 1, &v), KD_EINVAL,
                "narrow() cannot be applied to a 0-dim tensor.");
  kd_tensor_release(fs);
  kd_tensor_release(a);
  kd_tensor *m = META(KD_FLOAT32, 6);
  KD_ASSERT_OK(kd__native_narrow(m, 0, 2, 3, &v));
  EXPECT_GEOM(v, (3), (1), 2);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- contiguous, clone ------------------------------------------------------- */

static void test_contiguous_clone(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 3), *v, *tr;
  KD_ASSERT_OK(kd__native_contiguous(a, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
  assert_ptr_equal(v, a);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &tr));
  KD_ASSERT_OK(kd__native_contiguous(tr, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  assert_false(kd_tensor_shares_storage(v, a));
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd__native_contiguous(tr, KD_MEMORY_FORMAT_PRESERVE, &v), KD_EINVAL,
                "preserve memory format is unsupported by the contiguous operator");
  KD_ASSERT_ERR(kd__native_contiguous(tr, KD_MEMORY_FORMAT_CHANNELS_LAST, &v), KD_EINVAL,
                "required rank 4 tensor to use channels_last format");
  /* clone: preserve keeps the strides of a dense tensor... */
  KD_ASSERT_OK(kd__native_clone(tr, NULL, &v));
  EXPECT_GEOM(v, (3, 2), (1, 3), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  assert_false(kd_tensor_shares_storage(v, a));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd__native_clone(tr, &(kd_memory_format){KD_MEMORY_FORMAT_CONTIGUOUS}, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(v);
  /* ...and makes others row-major: columns 0 and 2 of a. */
  kd_tensor *sl;
  KD_ASSERT_OK(kd__native_slice(a, 1, NULL, NULL, 2, &sl));
  KD_ASSERT_OK(kd__native_clone(sl, NULL, &v));
  EXPECT_GEOM(v, (2, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 2, 3, 5);
  kd_tensor_release(v);
  kd_tensor_release(sl);
  KD_ASSERT_ERR(kd__native_clone(a, &(kd_memory_format){KD_MEMORY_FORMAT_CHANNELS_LAST_3D}, &v),
                KD_EINVAL, "required rank 5 tensor to use channels_last_3d format");
  kd_tensor_release(tr);
  kd_tensor_release(a);
  /* channels_last: NCHW [1, 2, 2, 2] -> strides [8, 1, 4, 2]. */
  kd_tensor *img = ARANGE(KD_INT64, 1, 2, 2, 2);
  KD_ASSERT_OK(kd__native_contiguous(img, KD_MEMORY_FORMAT_CHANNELS_LAST, &v));
  EXPECT_GEOM(v, (1, 2, 2, 2), (8, 1, 4, 2), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5, 6, 7);
  /* The bytes in memory: c fastest: 0, 4, 1, 5, 2, 6, 3, 7. */
  const int64_t *p = kd_tensor_data(v);
  assert_int_equal(p[0], 0);
  assert_int_equal(p[1], 4);
  assert_int_equal(p[2], 1);
  assert_int_equal(p[7], 7);
  kd_tensor *again;
  KD_ASSERT_OK(kd__native_contiguous(v, KD_MEMORY_FORMAT_CHANNELS_LAST, &again));
  assert_ptr_equal(again, v);
  kd_tensor_release(again);
  KD_ASSERT_OK(kd__native_clone(v, NULL, &again)); /* preserve keeps channels_last */
  EXPECT_GEOM(again, (1, 2, 2, 2), (8, 1, 4, 2), 0);
  kd_tensor_release(again);
  kd_tensor_release(v);
  kd_tensor_release(img);
  /* Zero-size and meta. */
  kd_tensor *z = ARANGE(KD_FLOAT32, 0, 2);
  KD_ASSERT_OK(kd__native_clone(z, NULL, &v));
  EXPECT_GEOM(v, (0, 2), (2, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(z);
  kd_tensor *m = META(KD_BFLOAT16, 2, 3), *mt;
  KD_ASSERT_OK(kd__native_transpose(m, 0, 1, &mt));
  KD_ASSERT_OK(kd__native_contiguous(mt, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  assert_int_equal(kd_tensor_device(v).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_dtype(v), KD_BFLOAT16);
  kd_tensor_release(v);
  kd_tensor_release(mt);
  kd_tensor_release(m);
}

/* ---- cat, stack -------------------------------------------------------------- */

static void test_cat(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_FLOAT32, 2, 2), *b = ARANGE(KD_FLOAT32, 1, 2), *r;
  kd_tensor *ab[] = {a, b};
  KD_ASSERT_OK(kd__native_cat((kd_tensors){ab, 2}, 0, &r));
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  EXPECT_VALS(r, 0, 1, 2, 3, 0, 1);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd__native_cat((kd_tensors){ab, 2}, 1, &r), KD_EINVAL,
                "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 1 "
                "for tensor number 1 in the list.");
  KD_ASSERT_ERR(kd__native_cat((kd_tensors){ab, 2}, 2, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  /* Along -1 with a transposed, int32 second input: promotion to float32.
   * a = [[0, 1], [2, 3]]; c = [[0, 1, 2], [3, 4, 5]]^T... use c = [[0, 2], [1, 3]] (2x2 transposed). */
  kd_tensor *c0 = ARANGE(KD_INT32, 2, 2), *c;
  KD_ASSERT_OK(kd__native_transpose(c0, 0, 1, &c));
  kd_tensor *ac[] = {a, c};
  KD_ASSERT_OK(kd__native_cat((kd_tensors){ac, 2}, -1, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_FLOAT32);
  EXPECT_GEOM(r, (2, 4), (4, 1), 0);
  EXPECT_VALS(r, 0, 1, 0, 2, 2, 3, 1, 3);
  kd_tensor_release(r);
  /* Legacy: 1-dim size-0 tensors are skipped whatever their sizes. */
  kd_tensor *e = ARANGE(KD_INT64, 0);
  kd_tensor *eab[] = {e, a, e, b};
  KD_ASSERT_OK(kd__native_cat((kd_tensors){eab, 4}, 0, &r));
  EXPECT_VALS(r, 0, 1, 2, 3, 0, 1);
  assert_int_equal(kd_tensor_dtype(r), KD_FLOAT32); /* int64 + float32 */
  kd_tensor_release(r);
  kd_tensor *ee[] = {e, e};
  KD_ASSERT_OK(kd__native_cat((kd_tensors){ee, 2}, 0, &r));
  EXPECT_GEOM(r, (0), (1), 0);
  kd_tensor_release(r);
  /* Errors. */
  KD_ASSERT_ERR(kd__native_cat((kd_tensors){NULL, 0}, 0, &r), KD_EINVAL,
                "torch.cat(): expected a non-empty list of Tensors");
  kd_tensor *s = scalar_f(1);
  kd_tensor *as[] = {a, s};
  KD_ASSERT_ERR(kd__native_cat((kd_tensors){as, 2}, 0, &r), KD_EINVAL,
                "zero-dimensional tensor (at position 1) cannot be concatenated");
  kd_tensor *three = ARANGE(KD_FLOAT32, 1, 2, 2);
  kd_tensor *a3[] = {a, three};
  KD_ASSERT_ERR(kd__native_cat((kd_tensors){a3, 2}, 0, &r), KD_EINVAL,
                "Tensors must have same number of dimensions: got 2 and 3");
  kd_tensor *m = META(KD_FLOAT32, 1, 2);
  kd_tensor *am[] = {a, m};
  KD_ASSERT_ERR(kd__native_cat((kd_tensors){am, 2}, 0, &r), KD_EINVAL,
                "Expected all tensors to be on the same device, but found at least two devices, "
                "cpu and meta!");
  /* Meta. */
  kd_tensor *m2 = META(KD_FLOAT64, 1, 5), *mm[] = {m, m2};
  KD_ASSERT_OK(kd__native_cat((kd_tensors){mm, 2}, 1, &r));
  EXPECT_GEOM(r, (1, 7), (7, 1), 0);
  assert_int_equal(kd_tensor_dtype(r), KD_FLOAT64);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  kd_tensor_release(r);
  kd_tensor_release(m2);
  kd_tensor_release(m);
  kd_tensor_release(three);
  kd_tensor_release(s);
  kd_tensor_release(e);
  kd_tensor_release(c);
  kd_tensor_release(c0);
  kd_tensor_release(b);
  kd_tensor_release(a);
}

static void test_cat_out(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT32, 2), *b = ARANGE(KD_INT32, 3), *out;
  kd_tensor *ab[] = {a, b};
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT64, kd_device_cpu(), &out)); /* 1 element */
  warnings = 0;
  kd_set_warning_handler(count_warning, NULL);
  KD_ASSERT_OK(kd__native_cat_out((kd_tensors){ab, 2}, 0, out));
  assert_int_equal(warnings, 1);
  assert_non_null(strstr(last_warning, "An output with one or more elements was resized since "
                                       "it had shape [], which does not match the required output "
                                       "shape [5]."));
  EXPECT_GEOM(out, (5), (1), 0);
  assert_int_equal(kd_tensor_dtype(out), KD_INT64); /* out's dtype wins */
  EXPECT_VALS(out, 0, 1, 0, 1, 2);
  /* Right sizes: no warning. */
  KD_ASSERT_OK(kd__native_cat_out((kd_tensors){ab, 2}, -1, out));
  assert_int_equal(warnings, 1);
  kd_set_warning_handler(NULL, NULL);
  /* Float inputs cannot go into an int64 out. */
  kd_tensor *f = ARANGE(KD_FLOAT32, 2), *af[] = {a, f};
  KD_ASSERT_ERR(kd__native_cat_out((kd_tensors){af, 2}, 0, out), KD_ETYPE,
                "torch.cat(): input types can't be cast to the desired output type int64");
  /* out overlapping an input. */
  kd_tensor *ao[] = {a, out};
  KD_ASSERT_ERR(kd__native_cat_out((kd_tensors){ao, 2}, 0, out), KD_EINVAL,
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.");
  /* A strided out: every other element of a [10] buffer. */
  kd_tensor *buf = ARANGE(KD_INT32, 10), *strided;
  KD_ASSERT_OK(kd__native_slice(buf, 0, NULL, NULL, 2, &strided));
  KD_ASSERT_OK(kd__native_cat_out((kd_tensors){ab, 2}, 0, strided));
  EXPECT_VALS(buf, 0, 1, 1, 3, 0, 5, 1, 7, 2, 9);
  kd_tensor *meta_out = META(KD_INT32, 0);
  KD_ASSERT_ERR(kd__native_cat_out((kd_tensors){ab, 2}, 0, meta_out), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  kd_tensor *ma = META(KD_INT32, 2, 2), *mam[] = {ma, ma};
  KD_ASSERT_OK(kd__native_cat_out((kd_tensors){mam, 2}, 1, meta_out));
  EXPECT_GEOM(meta_out, (2, 4), (4, 1), 0);
  kd_tensor_release(ma);
  kd_tensor_release(meta_out);
  kd_tensor_release(strided);
  kd_tensor_release(buf);
  kd_tensor_release(f);
  kd_tensor_release(out);
  kd_tensor_release(b);
  kd_tensor_release(a);
}

static void test_stack(void **state) {
  (void)state;
  kd_tensor *a = ARANGE(KD_INT64, 2), *b, *r;
  int64_t bd[] = {5, 6};
  b = from_i64(1, I(2), bd);
  kd_tensor *ab[] = {a, b};
  KD_ASSERT_OK(kd__native_stack((kd_tensors){ab, 2}, 0, &r));
  EXPECT_GEOM(r, (2, 2), (2, 1), 0);
  EXPECT_VALS(r, 0, 1, 5, 6);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_stack((kd_tensors){ab, 2}, -1, &r));
  EXPECT_GEOM(r, (2, 2), (2, 1), 0);
  EXPECT_VALS(r, 0, 5, 1, 6);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd__native_stack((kd_tensors){ab, 2}, 2, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor *c = ARANGE(KD_INT64, 3), *ac[] = {a, c};
  KD_ASSERT_ERR(kd__native_stack((kd_tensors){ac, 2}, 0, &r), KD_EINVAL,
                "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at "
                "entry 1");
  /* At the last dimension PyTorch reports cat's error. */
  KD_ASSERT_ERR(kd__native_stack((kd_tensors){ac, 2}, 1, &r), KD_EINVAL,
                "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 "
                "for tensor number 1 in the list.");
  KD_ASSERT_ERR(kd__native_stack((kd_tensors){NULL, 0}, 0, &r), KD_EINVAL,
                "stack expects a non-empty TensorList");
  /* Scalars stack into a vector. */
  kd_tensor *s1 = scalar_f(1), *s2 = scalar_f(2), *ss[] = {s1, s2};
  KD_ASSERT_OK(kd__native_stack((kd_tensors){ss, 2}, 0, &r));
  EXPECT_GEOM(r, (2), (1), 0);
  EXPECT_VALS(r, 1, 2);
  kd_tensor_release(r);
  /* stack.out */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(2, I(2, 2), KD_INT64, kd_device_cpu(), &out));
  KD_ASSERT_OK(kd__native_stack_out((kd_tensors){ab, 2}, 1, out));
  EXPECT_VALS(out, 0, 5, 1, 6);
  kd_tensor_release(out);
  /* Meta */
  kd_tensor *m = META(KD_FLOAT32, 3, 0), *mm[] = {m, m, m};
  KD_ASSERT_OK(kd__native_stack((kd_tensors){mm, 3}, 1, &r));
  EXPECT_GEOM(r, (3, 3, 0), (3, 1, 1), 0);
  kd_tensor_release(r);
  kd_tensor_release(m);
  kd_tensor_release(s1);
  kd_tensor_release(s2);
  kd_tensor_release(c);
  kd_tensor_release(b);
  kd_tensor_release(a);
}

/* ---- tril, triu -------------------------------------------------------------- */

static void test_tril_triu(void **state) {
  (void)state;
  /* a = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] (arange + 1 through int values) */
  kd_tensor *a0 = ARANGE(KD_FLOAT32, 3, 3), *a, *r;
  KD_ASSERT_OK(kd__native_clone(a0, NULL, &a));
  for (int64_t i = 0; i < 9; i++) {
    kd_scalar v = kd_scalar_double((double)(i + 1));
    KD_ASSERT_OK(kd_tensor_set(a, (int64_t[]){i / 3, i % 3}, &v));
  }
  KD_ASSERT_OK(kd__native_tril(a, 0, &r));
  EXPECT_VALS(r, 1, 0, 0, 4, 5, 0, 7, 8, 9);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_tril(a, 1, &r));
  EXPECT_VALS(r, 1, 2, 0, 4, 5, 6, 7, 8, 9);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_tril(a, -1, &r));
  EXPECT_VALS(r, 0, 0, 0, 4, 0, 0, 7, 8, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_triu(a, 0, &r));
  EXPECT_VALS(r, 1, 2, 3, 0, 5, 6, 0, 0, 9);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_triu(a, 2, &r));
  EXPECT_VALS(r, 0, 0, 3, 0, 0, 0, 0, 0, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_triu(a, -5, &r));
  EXPECT_VALS(r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  kd_tensor_release(r);
  /* Transposed input: a^T = [[1, 4, 7], [2, 5, 8], [3, 6, 9]]. */
  kd_tensor *at;
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &at));
  KD_ASSERT_OK(kd__native_triu(at, 1, &r));
  EXPECT_VALS(r, 0, 4, 7, 0, 0, 8, 0, 0, 0);
  EXPECT_GEOM(r, (3, 3), (3, 1), 0);
  kd_tensor_release(r);
  /* Inplace on the transposed view writes through to a. */
  KD_ASSERT_OK(kd__native_tril_(at, 0));
  EXPECT_VALS(a, 1, 2, 3, 0, 5, 6, 0, 0, 9);
  kd_tensor_release(at);
  /* Batched, non-square: [2, 2, 3] of 0..11; triu(1): j - i >= 1. */
  kd_tensor *b = ARANGE(KD_INT64, 2, 2, 3);
  KD_ASSERT_OK(kd__native_triu(b, 1, &r));
  EXPECT_VALS(r, 0, 1, 2, 0, 0, 5, 0, 7, 8, 0, 0, 11);
  kd_tensor_release(r);
  /* out: wrong sizes resized (empty out: no warning), wrong dtype refused. */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, I(0), KD_INT64, kd_device_cpu(), &out));
  warnings = 0;
  kd_set_warning_handler(count_warning, NULL);
  KD_ASSERT_OK(kd__native_tril_out(b, 0, out));
  assert_int_equal(warnings, 0);
  kd_set_warning_handler(NULL, NULL);
  EXPECT_GEOM(out, (2, 2, 3), (6, 3, 1), 0);
  EXPECT_VALS(out, 0, 0, 0, 3, 4, 0, 6, 0, 0, 9, 10, 0);
  KD_ASSERT_ERR(kd__native_tril_out(a, 0, out), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got int64 instead");
  /* out == self (as tril_). */
  KD_ASSERT_OK(kd__native_triu_out(out, 0, out));
  EXPECT_VALS(out, 0, 0, 0, 0, 4, 0, 6, 0, 0, 0, 10, 0);
  /* out overlapping self in another arrangement goes through a temporary:
   * b2 = [[0, 1], [2, 3]]; out = b2^T; tril(b2) = [[0, 0], [2, 3]] written into b2^T. */
  kd_tensor *b2 = ARANGE(KD_INT64, 2, 2), *b2t;
  KD_ASSERT_OK(kd__native_transpose(b2, 0, 1, &b2t));
  KD_ASSERT_OK(kd__native_tril_out(b2, 0, b2t));
  EXPECT_VALS(b2t, 0, 0, 2, 3);
  kd_tensor_release(b2t);
  kd_tensor_release(b2);
  kd_tensor_release(out);
  /* Errors. */
  kd_tensor *v = ARANGE(KD_FLOAT32, 3);
  KD_ASSERT_ERR(kd__native_tril(v, 0, &r), KD_EINVAL,
                "tril: input tensor must have at least 2 dimensions");
  KD_ASSERT_ERR(kd__native_triu_(v, 0), KD_EINVAL,
                "triu: input tensor must have at least 2 dimensions");
  kd_tensor *ex;
  KD_ASSERT_OK(kd__native_expand(v, INTS(2, 3), false, &ex));
  KD_ASSERT_ERR(kd__native_tril_(ex, 0), KD_EINVAL,
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location.");
  kd_tensor_release(ex);
  kd_tensor_release(v);
  /* Zero-size and meta. */
  kd_tensor *z = ARANGE(KD_FLOAT32, 0, 3);
  KD_ASSERT_OK(kd__native_tril(z, 0, &r));
  EXPECT_GEOM(r, (0, 3), (3, 1), 0);
  kd_tensor_release(r);
  kd_tensor_release(z);
  kd_tensor *m = META(KD_COMPLEX64, 4, 5, 6);
  KD_ASSERT_OK(kd__native_triu(m, 0, &r));
  EXPECT_GEOM(r, (4, 5, 6), (30, 6, 1), 0);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd__native_triu_(m, 0));
  kd_tensor_release(m);
  kd_tensor_release(b);
  kd_tensor_release(a);
  kd_tensor_release(a0);
}

/* ---- index_select ------------------------------------------------------------ */

static void test_index_select(void **state) {
  (void)state;
  /* a = [[0, 1], [2, 3], [4, 5]] */
  kd_tensor *a = ARANGE(KD_FLOAT64, 3, 2), *r;
  int64_t id[] = {2, 0, 2};
  kd_tensor *idx = from_i64(1, I(3), id);
  KD_ASSERT_OK(kd__native_index_select(a, 0, idx, &r));
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  EXPECT_VALS(r, 4, 5, 0, 1, 4, 5);
  kd_tensor_release(r);
  /* int32 index, dim -1: columns [1, 1, 0]. */
  int32_t id32[] = {1, 1, 0};
  kd_tensor *idx32;
  KD_ASSERT_OK(kd_tensor_from_data(1, I(3), KD_INT32, id32, &idx32));
  KD_ASSERT_OK(kd__native_index_select(a, -1, idx32, &r));
  EXPECT_GEOM(r, (3, 3), (3, 1), 0);
  EXPECT_VALS(r, 1, 1, 0, 3, 3, 2, 5, 5, 4);
  kd_tensor_release(r);
  /* Non-contiguous self (a^T = [[0, 2, 4], [1, 3, 5]]) and a strided index (id[::2] = [2, 2]). */
  kd_tensor *at, *sidx;
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &at));
  KD_ASSERT_OK(kd__native_slice(idx, 0, NULL, NULL, 2, &sidx));
  KD_ASSERT_OK(kd__native_index_select(at, 1, sidx, &r));
  EXPECT_VALS(r, 4, 4, 5, 5);
  kd_tensor_release(r);
  /* 0-dim index. */
  kd_tensor *i0 = from_i64(0, NULL, (int64_t[]){1});
  KD_ASSERT_OK(kd__native_index_select(a, 0, i0, &r));
  EXPECT_GEOM(r, (1, 2), (2, 1), 0);
  EXPECT_VALS(r, 2, 3);
  kd_tensor_release(r);
  /* Empty index. */
  kd_tensor *ie = from_i64(1, I(0), NULL);
  KD_ASSERT_OK(kd__native_index_select(a, 1, ie, &r));
  EXPECT_GEOM(r, (3, 0), (1, 1), 0);
  kd_tensor_release(r);
  /* Errors. */
  int64_t bad[] = {3};
  kd_tensor *ib = from_i64(1, I(1), bad);
  KD_ASSERT_ERR(kd__native_index_select(a, 0, ib, &r), KD_ERANGE, "index out of range in self");
  kd_tensor_release(ib);
  int64_t neg[] = {-1};
  kd_tensor *in = from_i64(1, I(1), neg);
  KD_ASSERT_ERR(kd__native_index_select(a, 0, in, &r), KD_ERANGE, "index out of range in self");
  kd_tensor_release(in);
  kd_tensor *i2 = from_i64(2, I(1, 1), (int64_t[]){0});
  KD_ASSERT_ERR(kd__native_index_select(a, 0, i2, &r), KD_ERANGE,
                "index_select(): Index is supposed to be a vector");
  kd_tensor_release(i2);
  kd_tensor *fi = ARANGE(KD_FLOAT32, 1);
  KD_ASSERT_ERR(kd__native_index_select(a, 0, fi, &r), KD_ETYPE,
                "index_select(): Expected dtype int32 or int64 for index");
  kd_tensor_release(fi);
  KD_ASSERT_ERR(kd__native_index_select(a, 2, idx, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor *s = scalar_f(9);
  KD_ASSERT_ERR(kd__native_index_select(s, 0, idx, &r), KD_EINVAL,
                "index_select(): Index to scalar can have only 1 value, got 3 value(s)");
  kd_tensor *zero = from_i64(1, I(1), (int64_t[]){0});
  KD_ASSERT_OK(kd__native_index_select(s, 0, zero, &r));
  assert_int_equal(kd_tensor_ndim(r), 0);
  EXPECT_VALS(r, 9);
  kd_tensor_release(r);
  kd_tensor *empty_rows = ARANGE(KD_FLOAT32, 0, 2);
  KD_ASSERT_ERR(kd__native_index_select(empty_rows, 0, zero, &r), KD_EINVAL,
                "index_select(): self indexing axis dim should be positive");
  kd_tensor_release(empty_rows);
  /* .out */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, I(0), KD_FLOAT64, kd_device_cpu(), &out));
  KD_ASSERT_OK(kd__native_index_select_out(a, 0, idx, out));
  EXPECT_VALS(out, 4, 5, 0, 1, 4, 5);
  kd_tensor *out32;
  KD_ASSERT_OK(kd_tensor_empty(1, I(0), KD_FLOAT32, kd_device_cpu(), &out32));
  KD_ASSERT_ERR(kd__native_index_select_out(a, 0, idx, out32), KD_ETYPE,
                "index_select(): self and result must have the same scalar type");
  KD_ASSERT_ERR(kd__native_index_select_out(a, 0, idx, a), KD_EINVAL,
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location.");
  kd_tensor_release(out32);
  kd_tensor_release(out);
  /* Meta. */
  kd_tensor *m = META(KD_INT8, 4, 5), *mi = META(KD_INT64, 7);
  KD_ASSERT_OK(kd__native_index_select(m, 1, mi, &r));
  EXPECT_GEOM(r, (4, 7), (7, 1), 0);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd__native_index_select(m, 1, idx, &r), KD_EINVAL,
                "Expected all tensors to be on the same device");
  kd_tensor_release(mi);
  kd_tensor_release(m);
  kd_tensor_release(zero);
  kd_tensor_release(s);
  kd_tensor_release(ie);
  kd_tensor_release(i0);
  kd_tensor_release(sidx);
  kd_tensor_release(at);
  kd_tensor_release(idx32);
  kd_tensor_release(idx);
  kd_tensor_release(a);
}

/* ---- gather ---------------------------------------------------------------- */

static void test_gather(void **state) {
  (void)state;
  /* a = [[1, 2], [3, 4]] as 0..3 + 1: use [[0, 1], [2, 3]]. */
  kd_tensor *a = ARANGE(KD_INT16, 2, 2), *r;
  int64_t id[] = {0, 0, 1, 0};
  kd_tensor *idx = from_i64(2, I(2, 2), id);
  /* dim 1: r[i][j] = a[i][idx[i][j]] = [[0, 0], [3, 2]] */
  KD_ASSERT_OK(kd__native_gather(a, 1, idx, false, &r));
  EXPECT_VALS(r, 0, 0, 3, 2);
  kd_tensor_release(r);
  /* dim 0: r[i][j] = a[idx[i][j]][j] = [[0, 1], [2, 1]] */
  KD_ASSERT_OK(kd__native_gather(a, -2, idx, true, &r));
  EXPECT_VALS(r, 0, 1, 2, 1);
  kd_tensor_release(r);
  /* A smaller index: [1, 2] of [[1, 0]] along dim 1 -> [[1, 0]]. */
  kd_tensor *small = from_i64(2, I(1, 2), (int64_t[]){1, 0});
  KD_ASSERT_OK(kd__native_gather(a, 1, small, false, &r));
  EXPECT_GEOM(r, (1, 2), (2, 1), 0);
  EXPECT_VALS(r, 1, 0);
  kd_tensor_release(r);
  /* Transposed self and index: a^T = [[0, 2], [1, 3]], idx^T = [[0, 1], [0, 0]];
   * dim 1: [[0, 2], [1, 1]]. */
  kd_tensor *at, *it;
  KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &at));
  KD_ASSERT_OK(kd__native_transpose(idx, 0, 1, &it));
  KD_ASSERT_OK(kd__native_gather(at, 1, it, false, &r));
  EXPECT_VALS(r, 0, 2, 1, 1);
  kd_tensor_release(r);
  /* Errors. */
  int32_t id32[] = {0};
  kd_tensor *i32;
  KD_ASSERT_OK(kd_tensor_from_data(2, I(1, 1), KD_INT32, id32, &i32));
  KD_ASSERT_ERR(kd__native_gather(a, 0, i32, false, &r), KD_ETYPE,
                "gather(): Expected dtype int64 for index");
  kd_tensor_release(i32);
  kd_tensor *i1 = from_i64(1, I(1), (int64_t[]){0});
  KD_ASSERT_ERR(kd__native_gather(a, 0, i1, false, &r), KD_EINVAL,
                "Index tensor must have the same number of dimensions as input tensor");
  kd_tensor *wide = from_i64(2, I(1, 3), (int64_t[]){0, 0, 0});
  KD_ASSERT_ERR(kd__native_gather(a, 0, wide, false, &r), KD_EINVAL,
                "Size does not match at dimension 1 expected index [1, 3] to be smaller than self "
                "[2, 2] apart from dimension 0");
  kd_tensor *oob = from_i64(2, I(1, 2), (int64_t[]){0, 2});
  KD_ASSERT_ERR(kd__native_gather(a, 0, oob, false, &r), KD_ERANGE,
                "index 2 is out of bounds for dimension 0 with size 2");
  kd_tensor *negi = from_i64(2, I(1, 1), (int64_t[]){-1});
  KD_ASSERT_ERR(kd__native_gather(a, 1, negi, false, &r), KD_ERANGE,
                "index -1 is out of bounds for dimension 1 with size 2");
  KD_ASSERT_ERR(kd__native_gather(a, 2, idx, false, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  /* An empty index of any dtype gives an empty result. */
  kd_tensor *ef;
  KD_ASSERT_OK(kd_tensor_empty(1, I(0), KD_FLOAT32, kd_device_cpu(), &ef));
  KD_ASSERT_OK(kd__native_gather(a, 0, ef, false, &r));
  EXPECT_GEOM(r, (0), (1), 0);
  assert_int_equal(kd_tensor_dtype(r), KD_INT16);
  kd_tensor_release(r);
  kd_tensor_release(ef);
  /* Scalars: gather(scalar, 0, scalar index 0). */
  kd_tensor *s = scalar_f(6), *z0 = from_i64(0, NULL, (int64_t[]){0});
  KD_ASSERT_OK(kd__native_gather(s, 0, z0, false, &r));
  assert_int_equal(kd_tensor_ndim(r), 0);
  EXPECT_VALS(r, 6);
  kd_tensor_release(r);
  /* .out */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(2, I(2, 2), KD_INT16, kd_device_cpu(), &out));
  KD_ASSERT_OK(kd__native_gather_out(a, 1, idx, false, out));
  EXPECT_VALS(out, 0, 0, 3, 2);
  KD_ASSERT_ERR(kd__native_gather_out(a, 1, idx, false, a), KD_EINVAL,
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location.");
  kd_tensor *o64;
  KD_ASSERT_OK(kd_tensor_empty(2, I(2, 2), KD_INT64, kd_device_cpu(), &o64));
  KD_ASSERT_ERR(kd__native_gather_out(a, 1, idx, false, o64), KD_ETYPE,
                "Expected out tensor to have dtype int16, but got int64 instead");
  kd_tensor_release(o64);
  kd_tensor_release(out);
  /* Meta. */
  kd_tensor *m = META(KD_FLOAT32, 3, 4), *mi = META(KD_INT64, 2, 4);
  KD_ASSERT_OK(kd__native_gather(m, 0, mi, false, &r));
  EXPECT_GEOM(r, (2, 4), (4, 1), 0);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  kd_tensor_release(r);
  kd_tensor_release(mi);
  kd_tensor_release(m);
  kd_tensor_release(z0);
  kd_tensor_release(s);
  kd_tensor_release(negi);
  kd_tensor_release(oob);
  kd_tensor_release(wide);
  kd_tensor_release(i1);
  kd_tensor_release(it);
  kd_tensor_release(at);
  kd_tensor_release(small);
  kd_tensor_release(idx);
  kd_tensor_release(a);
}

/* ---- Every dtype: the byte-moving kernels ------------------------------------- */

static void test_all_dtypes(void **state) {
  (void)state;
  for (int d = 0; d < KD_DTYPE_COUNT; d++) {
    kd_dtype dt = (kd_dtype)d;
    size_t isz = kd_dtype_size(dt);
    /* A [2, 3] tensor of distinct byte patterns (element k: bytes k*16 + b). */
    kd_tensor *a;
    KD_ASSERT_OK(kd_tensor_empty(2, I(2, 3), dt, kd_device_cpu(), &a));
    unsigned char *p = kd_tensor_data(a);
    for (size_t k = 0; k < 6; k++)
      for (size_t b = 0; b < isz; b++) p[k * isz + b] = (unsigned char)(k * 16 + b + 1);
    /* Transpose then clone contiguous: element order 0, 3, 1, 4, 2, 5. */
    kd_tensor *tr, *c;
    KD_ASSERT_OK(kd__native_transpose(a, 0, 1, &tr));
    KD_ASSERT_OK(kd__native_contiguous(tr, KD_MEMORY_FORMAT_CONTIGUOUS, &c));
    const size_t order[6] = {0, 3, 1, 4, 2, 5};
    const unsigned char *q = kd_tensor_data(c);
    for (size_t k = 0; k < 6; k++)
      assert_memory_equal(q + k * isz, p + order[k] * isz, isz);
    /* cat of a with itself along 1: rows [a0 a0; a1 a1]. */
    kd_tensor *aa[] = {a, a}, *r;
    KD_ASSERT_OK(kd__native_cat((kd_tensors){aa, 2}, 1, &r));
    assert_int_equal(kd_tensor_dtype(r), dt);
    q = kd_tensor_data(r);
    const size_t corder[12] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
    for (size_t k = 0; k < 12; k++) assert_memory_equal(q + k * isz, p + corder[k] * isz, isz);
    kd_tensor_release(r);
    /* triu: lower element (1, 0) becomes zero bytes, others kept. */
    KD_ASSERT_OK(kd__native_triu(a, 0, &r));
    q = kd_tensor_data(r);
    unsigned char zeros[16] = {0};
    for (size_t k = 0; k < 6; k++)
      assert_memory_equal(q + k * isz, k == 3 ? zeros : p + k * isz, isz);
    kd_tensor_release(r);
    /* index_select of columns [2, 0] and gather along 1. */
    kd_tensor *idx = from_i64(1, I(2), (int64_t[]){2, 0});
    KD_ASSERT_OK(kd__native_index_select(a, 1, idx, &r));
    q = kd_tensor_data(r);
    const size_t sorder[4] = {2, 0, 5, 3};
    for (size_t k = 0; k < 4; k++) assert_memory_equal(q + k * isz, p + sorder[k] * isz, isz);
    kd_tensor_release(r);
    kd_tensor *gi = from_i64(2, I(2, 1), (int64_t[]){1, 2});
    KD_ASSERT_OK(kd__native_gather(a, 1, gi, false, &r));
    q = kd_tensor_data(r);
    assert_memory_equal(q, p + 1 * isz, isz);
    assert_memory_equal(q + isz, p + 5 * isz, isz);
    kd_tensor_release(r);
    kd_tensor_release(gi);
    kd_tensor_release(idx);
    kd_tensor_release(c);
    kd_tensor_release(tr);
    kd_tensor_release(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_view),
      cmocka_unit_test(test_view_dtype),
      cmocka_unit_test(test_reshape),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_t),
      cmocka_unit_test(test_permute),
      cmocka_unit_test(test_expand),
      cmocka_unit_test(test_squeeze),
      cmocka_unit_test(test_unsqueeze),
      cmocka_unit_test(test_flatten),
      cmocka_unit_test(test_slice),
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_narrow),
      cmocka_unit_test(test_contiguous_clone),
      cmocka_unit_test(test_cat),
      cmocka_unit_test(test_cat_out),
      cmocka_unit_test(test_stack),
      cmocka_unit_test(test_tril_triu),
      cmocka_unit_test(test_index_select),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_all_dtypes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
