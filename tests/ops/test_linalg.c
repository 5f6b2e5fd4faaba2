/* Linear-algebra kernels (ops/native/linalg.c), called directly until
 * kdgen's entry points land. */
#include <math.h>

#include "kd_test.h"
#include "native/factories.h"
#include "native/linalg.h"

static const kd_dtype num_dtypes[] = {KD_UINT8,   KD_INT8,    KD_INT16,    KD_INT32,
                                      KD_INT64,   KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32,
                                      KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};
#define N_NUM (sizeof num_dtypes / sizeof num_dtypes[0])
static const kd_device meta = {KD_DEVICE_META, 0};

/* A new cpu tensor of dtype dt holding `vals` (row-major). */
static kd_tensor *mk(kd_dtype dt, int ndim, const int64_t *sizes, const double *vals) {
  kd_tensor *d, *t;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, KD_FLOAT64, vals, &d));
  KD_ASSERT_OK(kd_tensor_to_dtype(d, dt, &t));
  kd_tensor_release(d);
  return t;
}

static kd_tensor *mk_meta(kd_dtype dt, int ndim, const int64_t *sizes) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, meta, &t));
  return t;
}

/* A view with the last two dims swapped. */
static kd_tensor *mT(kd_tensor *t) {
  int nd = kd_tensor_ndim(t);
  int64_t s[KD_MAX_DIMS], st[KD_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    s[i] = kd_tensor_size(t, i);
    st[i] = kd_tensor_stride(t, i);
  }
  int64_t x = s[nd - 1];
  s[nd - 1] = s[nd - 2];
  s[nd - 2] = x;
  x = st[nd - 1];
  st[nd - 1] = st[nd - 2];
  st[nd - 2] = x;
  kd_tensor *v;
  KD_ASSERT_OK(kd_tensor_as_strided(t, nd, s, st, kd_tensor_storage_offset(t), &v));
  return v;
}

static void flat_index(const kd_tensor *t, int64_t flat, int64_t *idx) {
  for (int d = kd_tensor_ndim(t) - 1; d >= 0; d--) {
    int64_t s = kd_tensor_size(t, d);
    idx[d] = flat % s;
    flat /= s;
  }
}

static kd_scalar get(const kd_tensor *t, int64_t flat) {
  int64_t idx[KD_MAX_DIMS];
  flat_index(t, flat, idx);
  kd_scalar v;
  KD_ASSERT_OK(kd_tensor_get(t, kd_tensor_ndim(t) ? idx : NULL, &v));
  return v;
}

static double at(const kd_tensor *t, int64_t flat) {
  kd_scalar v = get(t, flat);
  return kd_scalar_to_double(&v);
}

static void expect_values(const kd_tensor *t, int ndim, const int64_t *sizes, const double *vals,
                          double tol) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int i = 0; i < ndim; i++) assert_int_equal(kd_tensor_size(t, i), sizes[i]);
  for (int64_t i = 0; i < kd_tensor_numel(t); i++)
    if (fabs(at(t, i) - vals[i]) > tol)
      fail_msg("%s element %lld: %g, expected %g", kd_dtype_name(kd_tensor_dtype(t)),
               (long long)i, at(t, i), vals[i]);
}

static const double A23[] = {1, 2, 3, 4, 5, 6};       /* [[1 2 3] [4 5 6]] */
static const double B32[] = {7, 8, 9, 10, 11, 12};    /* [[7 8] [9 10] [11 12]] */
static const double AB[] = {58, 64, 139, 154};        /* A23 @ B32 */

static void test_mm_dtypes(void **state) {
  (void)state;
  for (size_t i = 0; i < N_NUM; i++) {
    kd_dtype dt = num_dtypes[i];
    kd_tensor *a = mk(dt, 2, (int64_t[]){2, 3}, A23), *b = mk(dt, 2, (int64_t[]){3, 2}, B32), *c;
    KD_ASSERT_OK(kd__native_mm_cpu(a, b, &c));
    assert_int_equal(kd_tensor_dtype(c), dt);
    /* uint8/int8 wrap as PyTorch's (139 -> -117 in int8, 154 -> 154 in uint8) */
    double expect[4];
    for (int k = 0; k < 4; k++) {
      expect[k] = AB[k];
      if (dt == KD_INT8) expect[k] = (double)(int8_t)(uint8_t)(int)AB[k];
      if (dt == KD_UINT8) expect[k] = (double)(uint8_t)(int)AB[k];
    }
    expect_values(c, 2, (int64_t[]){2, 2}, expect, 0);
    kd_tensor_release(c);
    /* transposed (column-major) operands give the same product */
    kd_tensor *at_ = mk(dt, 2, (int64_t[]){3, 2}, (double[]){1, 4, 2, 5, 3, 6});
    kd_tensor *bt_ = mk(dt, 2, (int64_t[]){2, 3}, (double[]){7, 9, 11, 8, 10, 12});
    kd_tensor *av = mT(at_), *bv = mT(bt_);
    KD_ASSERT_OK(kd__native_mm_cpu(av, bv, &c));
    expect_values(c, 2, (int64_t[]){2, 2}, expect, 0);
    kd_tensor_release(c);
    kd_tensor_release(av);
    kd_tensor_release(bv);
    kd_tensor_release(at_);
    kd_tensor_release(bt_);
    kd_tensor_release(a);
    kd_tensor_release(b);
  }
}

static void test_mm_complex(void **state) {
  (void)state;
  /* [[1+i, 2]] @ [[i], [1-i]] = (1+i)i + 2(1-i) = -1+i + 2-2i = 1-i */
  const double a[] = {1, 1, 2, 0}, b[] = {0, 1, 1, -1};
  for (int k = 0; k < 2; k++) {
    kd_dtype dt = k ? KD_COMPLEX128 : KD_COMPLEX64;
    kd_tensor *a128, *b128, *ta, *tb, *c;
    KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){1, 2}, KD_COMPLEX128, a, &a128));
    KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){2, 1}, KD_COMPLEX128, b, &b128));
    KD_ASSERT_OK(kd_tensor_to_dtype(a128, dt, &ta));
    KD_ASSERT_OK(kd_tensor_to_dtype(b128, dt, &tb));
    KD_ASSERT_OK(kd__native_mm_cpu(ta, tb, &c));
    kd_scalar v = get(c, 0);
    assert_true(v.kind == KD_SCALAR_COMPLEX && v.v.c.re == 1 && v.v.c.im == -1);
    kd_tensor_release(c);
    /* addmm with complex alpha: alpha = i -> i(1-i) = 1+i; beta 0 */
    kd_scalar alpha = kd_scalar_complex(0, 1), beta = kd_scalar_int(0);
    KD_ASSERT_ERR(kd__native_addmm_cpu(ta, ta, tb, &beta, &alpha, &c), KD_EINVAL,
                  "The expanded size of the tensor (1) must match the existing size (2)");
    kd_tensor *self1;
    KD_ASSERT_OK(kd_tensor_empty(0, NULL, dt, kd_device_cpu(), &self1));
    KD_ASSERT_OK(kd__native_addmm_cpu(self1, ta, tb, &beta, &alpha, &c));
    v = get(c, 0);
    assert_true(v.v.c.re == 1 && v.v.c.im == 1);
    kd_tensor_release(c);
    /* dot does not conjugate */
    kd_tensor *va, *vb;
    KD_ASSERT_OK(kd_tensor_as_strided(ta, 1, (int64_t[]){2}, (int64_t[]){1}, 0, &va));
    KD_ASSERT_OK(kd_tensor_as_strided(tb, 1, (int64_t[]){2}, (int64_t[]){1}, 0, &vb));
    KD_ASSERT_OK(kd__native_dot_cpu(va, vb, &c));
    v = get(c, 0);
    assert_true(v.v.c.re == 1 && v.v.c.im == -1);
    kd_tensor_release(c);
    kd_tensor_release(va);
    kd_tensor_release(vb);
    kd_tensor_release(self1);
    kd_tensor_release(ta);
    kd_tensor_release(tb);
    kd_tensor_release(a128);
    kd_tensor_release(b128);
  }
}

/* Reference product in double over any strides. */
static void reference(const kd_tensor *a, const kd_tensor *b, double *out) {
  int64_t n = kd_tensor_size(a, 0), m = kd_tensor_size(a, 1), p = kd_tensor_size(b, 1);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < p; j++) {
      double s = 0;
      for (int64_t k = 0; k < m; k++) s += at(a, i * m + k) * at(b, k * p + j);
      out[i * p + j] = s;
    }
}

static void test_mm_layouts(void **state) {
  (void)state;
  /* 7x5 @ 5x6 with each operand row-major, column-major, or strided every
   * other column (needs a copy), and out row-major, transposed or strided */
  enum { N = 7, M = 5, P = 6 };
  double av[2 * N * M], bv[2 * M * P];
  for (int i = 0; i < 2 * N * M; i++) av[i] = (double)((i * 7) % 11) - 5;
  for (int i = 0; i < 2 * M * P; i++) bv[i] = (double)((i * 5) % 13) - 6;
  const kd_dtype dts[] = {KD_FLOAT32, KD_FLOAT64, KD_INT32, KD_BFLOAT16, KD_COMPLEX64};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    kd_dtype dt = dts[d];
    kd_tensor *abuf = mk(dt, 1, (int64_t[]){2 * N * M}, av), *bbuf = mk(dt, 1, (int64_t[]){2 * M * P}, bv);
    for (int la = 0; la < 3; la++)
      for (int lb = 0; lb < 3; lb++)
        for (int lc = 0; lc < 3; lc++) {
          kd_tensor *a, *b, *c, *cbuf;
          const int64_t sa[3][2] = {{M, 1}, {1, N}, {2 * M, 2}};
          const int64_t sb[3][2] = {{P, 1}, {1, M}, {2 * P, 2}};
          const int64_t sc[3][2] = {{P, 1}, {1, N}, {2 * P, 2}};
          KD_ASSERT_OK(kd_tensor_as_strided(abuf, 2, (int64_t[]){N, M}, sa[la], 1, &a));
          KD_ASSERT_OK(kd_tensor_as_strided(bbuf, 2, (int64_t[]){M, P}, sb[lb], 0, &b));
          KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2 * N * P}, dt, kd_device_cpu(), &cbuf));
          KD_ASSERT_OK(kd_tensor_as_strided(cbuf, 2, (int64_t[]){N, P}, sc[lc], 0, &c));
          KD_ASSERT_OK(kd__native_mm_out_cpu(a, b, c));
          assert_int_equal(kd_tensor_stride(c, 0), sc[lc][0]); /* out kept its strides */
          double ref[N * P];
          reference(a, b, ref);
          expect_values(c, 2, (int64_t[]){N, P}, ref, dt == KD_BFLOAT16 ? 2 : 1e-3);
          kd_tensor_release(a);
          kd_tensor_release(b);
          kd_tensor_release(c);
          kd_tensor_release(cbuf);
        }
    kd_tensor_release(abuf);
    kd_tensor_release(bbuf);
  }
}

static void test_mm_zero_size_meta(void **state) {
  (void)state;
  for (size_t i = 0; i < N_NUM; i++) {
    kd_dtype dt = num_dtypes[i];
    kd_tensor *a, *b, *c;
    KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 0}, dt, kd_device_cpu(), &a));
    KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){0, 3}, dt, kd_device_cpu(), &b));
    KD_ASSERT_OK(kd__native_mm_cpu(a, b, &c)); /* 2x0 @ 0x3: zeros */
    expect_values(c, 2, (int64_t[]){2, 3}, (double[]){0, 0, 0, 0, 0, 0}, 0);
    kd_tensor_release(c);
    kd_tensor *m32 = mk(dt, 2, (int64_t[]){3, 2}, B32);
    KD_ASSERT_OK(kd__native_mm_cpu(b, m32, &c)); /* 0x3 @ 3x2 */
    assert_int_equal(kd_tensor_size(c, 0), 0);
    assert_int_equal(kd_tensor_size(c, 1), 2);
    kd_tensor_release(c);
    kd_tensor_release(m32);
    kd_tensor *bt = mT(b), *at_ = mT(a);
    KD_ASSERT_OK(kd__native_mm_cpu(bt, at_, &c)); /* 3x0 @ 0x2 */
    expect_values(c, 2, (int64_t[]){3, 2}, (double[]){0, 0, 0, 0, 0, 0}, 0);
    kd_tensor_release(c);
    KD_ASSERT_ERR(kd__native_mm_cpu(at_, bt, &c), KD_EINVAL,
                  "mat1 and mat2 shapes cannot be multiplied (0x2 and 3x0)");
    kd_tensor_release(bt);
    kd_tensor_release(at_);
    kd_tensor_release(a);
    kd_tensor_release(b);
  }
  /* meta: shapes only, any dtype */
  kd_tensor *a = mk_meta(KD_BOOL, 2, (int64_t[]){4, 5}), *b = mk_meta(KD_BOOL, 2, (int64_t[]){5, 6}), *c;
  KD_ASSERT_OK(kd__native_mm_meta(a, b, &c));
  assert_int_equal(kd_tensor_device(c).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_size(c, 0), 4);
  assert_int_equal(kd_tensor_size(c, 1), 6);
  kd_tensor_release(c);
  kd_tensor *o = mk_meta(KD_BOOL, 1, (int64_t[]){0});
  KD_ASSERT_OK(kd__native_mm_out_meta(a, b, o));
  assert_int_equal(kd_tensor_ndim(o), 2);
  assert_int_equal(kd_tensor_size(o, 1), 6);
  kd_tensor_release(o);
  KD_ASSERT_ERR(kd__native_mm_meta(b, b, &c), KD_EINVAL,
                "mat1 and mat2 shapes cannot be multiplied (5x6 and 5x6)");
  KD_ASSERT_ERR(kd__native_mm_cpu(a, b, &c), KD_EINVAL, "expects cpu tensors, got meta");
  kd_tensor_release(a);
  kd_tensor_release(b);
}

static int warnings;
static char last_warning[512];
static void count_warning(const char *message, void *user_data) {
  (void)user_data;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", message);
}

static void test_mm_errors(void **state) {
  (void)state;
  kd_tensor *a = mk(KD_FLOAT32, 2, (int64_t[]){2, 3}, A23), *c;
  kd_tensor *b = mk(KD_FLOAT32, 2, (int64_t[]){3, 2}, B32);
  kd_tensor *v = mk(KD_FLOAT32, 1, (int64_t[]){3}, A23);
  kd_tensor *d = mk(KD_FLOAT64, 2, (int64_t[]){3, 2}, B32);
  kd_tensor *w;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){4, 5}, KD_FLOAT32, kd_device_cpu(), &w));
  KD_ASSERT_ERR(kd__native_mm_cpu(a, w, &c), KD_EINVAL,
                "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  assert_null(c);
  KD_ASSERT_ERR(kd__native_mm_cpu(v, b, &c), KD_EINVAL, "self must be a matrix");
  KD_ASSERT_ERR(kd__native_mm_cpu(a, v, &c), KD_EINVAL, "mat2 must be a matrix");
  KD_ASSERT_ERR(kd__native_mm_cpu(a, d, &c), KD_ETYPE,
                "expected scalar type float32 but found float64");
  kd_tensor *bb = mk(KD_BOOL, 2, (int64_t[]){2, 3}, A23), *bb2 = mk(KD_BOOL, 2, (int64_t[]){3, 2}, B32);
  KD_ASSERT_ERR(kd__native_mm_cpu(bb, bb2, &c), KD_ENOKERNEL,
                "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  kd_tensor *o64;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 2}, KD_FLOAT64, kd_device_cpu(), &o64));
  KD_ASSERT_ERR(kd__native_mm_out_cpu(a, b, o64), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got float64 instead");
  kd_tensor *mb = mk_meta(KD_FLOAT32, 2, (int64_t[]){3, 2});
  KD_ASSERT_ERR(kd__native_mm_cpu(a, mb, &c), KD_EINVAL,
                "Expected all tensors to be on the same device, but found at least two devices, "
                "cpu and meta!");
  kd_tensor *om = mk_meta(KD_FLOAT32, 2, (int64_t[]){2, 2});
  KD_ASSERT_ERR(kd__native_mm_out_cpu(a, b, om), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  /* out of the wrong size: resized with a warning; out aliasing an input */
  kd_tensor *o;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &o));
  warnings = 0;
  kd_set_warning_handler(count_warning, NULL);
  KD_ASSERT_OK(kd__native_mm_out_cpu(a, b, o));
  KD_ASSERT_OK(kd__native_mm_out_cpu(a, b, o)); /* right size now: no warning */
  kd_set_warning_handler(NULL, NULL);
  assert_int_equal(warnings, 1);
  assert_non_null(strstr(last_warning, "had shape [3], which does not match the required output shape [2, 2]"));
  expect_values(o, 2, (int64_t[]){2, 2}, AB, 0);
  kd_tensor *sq = mk(KD_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  KD_ASSERT_OK(kd__native_mm_out_cpu(sq, sq, sq)); /* [[7 10] [15 22]] */
  expect_values(sq, 2, (int64_t[]){2, 2}, (double[]){7, 10, 15, 22}, 0);
  kd_tensor *objs[] = {a, b, v, d, w, bb, bb2, o64, mb, om, o, sq};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) kd_tensor_release(objs[i]);
}

static void test_bmm(void **state) {
  (void)state;
  /* batch 0: A23 @ B32; batch 1: 2*A23 @ B32 */
  double a2[12], b2[12];
  for (int i = 0; i < 6; i++) {
    a2[i] = A23[i];
    a2[6 + i] = 2 * A23[i];
    b2[i] = B32[i];
    b2[6 + i] = B32[i];
  }
  const double expect[] = {58, 64, 139, 154, 116, 128, 278, 308};
  for (size_t i = 0; i < N_NUM; i++) {
    kd_dtype dt = num_dtypes[i];
    if (dt == KD_INT8 || dt == KD_UINT8) continue;
    kd_tensor *a = mk(dt, 3, (int64_t[]){2, 2, 3}, a2), *b = mk(dt, 3, (int64_t[]){2, 3, 2}, b2), *c;
    KD_ASSERT_OK(kd__native_bmm_cpu(a, b, &c));
    expect_values(c, 3, (int64_t[]){2, 2, 2}, expect, dt == KD_BFLOAT16 ? 1 : 0);
    kd_tensor_release(c);
    /* the second operand transposed per batch */
    kd_tensor *bt = mk(dt, 3, (int64_t[]){2, 2, 3}, (double[]){7, 9, 11, 8, 10, 12, 7, 9, 11, 8, 10, 12});
    kd_tensor *btv = mT(bt);
    kd_tensor *out;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, dt, kd_device_cpu(), &out));
    KD_ASSERT_OK(kd__native_bmm_out_cpu(a, btv, out));
    expect_values(out, 3, (int64_t[]){2, 2, 2}, expect, dt == KD_BFLOAT16 ? 1 : 0);
    kd_tensor_release(out);
    kd_tensor_release(btv);
    kd_tensor_release(bt);
    kd_tensor_release(a);
    kd_tensor_release(b);
  }
  kd_tensor *a = mk(KD_FLOAT32, 3, (int64_t[]){2, 2, 3}, a2), *c;
  kd_tensor *b = mk(KD_FLOAT32, 3, (int64_t[]){2, 3, 2}, b2);
  kd_tensor *m2 = mk(KD_FLOAT32, 2, (int64_t[]){2, 3}, A23);
  kd_tensor *b3;
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){3, 3, 2}, KD_FLOAT32, kd_device_cpu(), &b3));
  KD_ASSERT_ERR(kd__native_bmm_cpu(m2, b, &c), KD_EINVAL, "batch1 must be a 3D tensor");
  KD_ASSERT_ERR(kd__native_bmm_cpu(a, m2, &c), KD_EINVAL, "batch2 must be a 3D tensor");
  KD_ASSERT_ERR(kd__native_bmm_cpu(a, b3, &c), KD_EINVAL,
                "batch1 and batch2 must have same number of batches, got 2 and 3");
  KD_ASSERT_ERR(kd__native_bmm_cpu(a, a, &c), KD_EINVAL,
                "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 2].");
  /* zero batches, meta */
  kd_tensor *z1, *z2;
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){0, 2, 3}, KD_FLOAT32, kd_device_cpu(), &z1));
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){0, 3, 4}, KD_FLOAT32, kd_device_cpu(), &z2));
  KD_ASSERT_OK(kd__native_bmm_cpu(z1, z2, &c));
  assert_int_equal(kd_tensor_size(c, 2), 4);
  assert_int_equal(kd_tensor_numel(c), 0);
  kd_tensor_release(c);
  kd_tensor *ma = mk_meta(KD_FLOAT16, 3, (int64_t[]){5, 2, 3}), *mb = mk_meta(KD_FLOAT16, 3, (int64_t[]){5, 3, 7});
  KD_ASSERT_OK(kd__native_bmm_meta(ma, mb, &c));
  assert_int_equal(kd_tensor_size(c, 0), 5);
  assert_int_equal(kd_tensor_size(c, 2), 7);
  kd_tensor_release(c);
  kd_tensor *mo = mk_meta(KD_FLOAT16, 1, (int64_t[]){0});
  KD_ASSERT_OK(kd__native_bmm_out_meta(ma, mb, mo));
  assert_int_equal(kd_tensor_ndim(mo), 3);
  kd_tensor *objs[] = {a, b, m2, b3, z1, z2, ma, mb, mo};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) kd_tensor_release(objs[i]);
}

static void test_addmm(void **state) {
  (void)state;
  kd_scalar beta = kd_scalar_int(2), alpha = kd_scalar_int(3), one = kd_scalar_int(1),
            zero = kd_scalar_int(0);
  const kd_dtype dts[] = {KD_INT16, KD_INT32, KD_INT64, KD_FLOAT16, KD_BFLOAT16,
                          KD_FLOAT32, KD_FLOAT64, KD_COMPLEX128};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    kd_dtype dt = dts[i];
    kd_tensor *a = mk(dt, 2, (int64_t[]){2, 3}, A23), *b = mk(dt, 2, (int64_t[]){3, 2}, B32), *c;
    /* self [2]: broadcast along rows; 2*[1, -1] + 3*AB */
    kd_tensor *s = mk(dt, 1, (int64_t[]){2}, (double[]){1, -1});
    KD_ASSERT_OK(kd__native_addmm_cpu(s, a, b, &beta, &alpha, &c));
    double tol = dt == KD_BFLOAT16 ? 2 : 0;
    expect_values(c, 2, (int64_t[]){2, 2}, (double[]){176, 190, 419, 460}, tol);
    kd_tensor_release(c);
    /* out variant, then the inplace one on a [2, 2] self */
    kd_tensor *o;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, dt, kd_device_cpu(), &o));
    KD_ASSERT_OK(kd__native_addmm_out_cpu(s, a, b, &one, &one, o));
    expect_values(o, 2, (int64_t[]){2, 2}, (double[]){59, 63, 140, 153}, tol);
    KD_ASSERT_OK(kd__native_addmm_inplace_cpu(o, a, b, &beta, &one)); /* 2*o + AB */
    expect_values(o, 2, (int64_t[]){2, 2}, (double[]){176, 190, 419, 460}, tol);
    kd_tensor_release(o);
    kd_tensor_release(s);
    kd_tensor_release(a);
    kd_tensor_release(b);
  }
  /* beta = 0: self's NaNs are not read */
  kd_tensor *a = mk(KD_FLOAT32, 2, (int64_t[]){2, 3}, A23), *b = mk(KD_FLOAT32, 2, (int64_t[]){3, 2}, B32), *c;
  kd_tensor *nan_self = mk(KD_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){NAN, NAN, NAN, NAN});
  KD_ASSERT_OK(kd__native_addmm_cpu(nan_self, a, b, &zero, &one, &c));
  expect_values(c, 2, (int64_t[]){2, 2}, AB, 0);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd__native_addmm_inplace_cpu(nan_self, a, b, &zero, &one));
  expect_values(nan_self, 2, (int64_t[]){2, 2}, AB, 0);
  kd_tensor *hs = mk(KD_FLOAT16, 0, NULL, (double[]){NAN});
  kd_tensor *ha = mk(KD_FLOAT16, 2, (int64_t[]){2, 3}, A23), *hb = mk(KD_FLOAT16, 2, (int64_t[]){3, 2}, B32);
  KD_ASSERT_OK(kd__native_addmm_cpu(hs, ha, hb, &zero, &one, &c));
  expect_values(c, 2, (int64_t[]){2, 2}, AB, 0);
  kd_tensor_release(c);
  /* 2x0 @ 0x2 with beta: beta * self */
  kd_tensor *e1, *e2, *s22 = mk(KD_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 0}, KD_FLOAT64, kd_device_cpu(), &e1));
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){0, 2}, KD_FLOAT64, kd_device_cpu(), &e2));
  KD_ASSERT_OK(kd__native_addmm_cpu(s22, e1, e2, &beta, &alpha, &c));
  expect_values(c, 2, (int64_t[]){2, 2}, (double[]){2, 4, 6, 8}, 0);
  kd_tensor_release(c);
  /* errors */
  kd_tensor *bad = mk(KD_FLOAT32, 1, (int64_t[]){3}, A23);
  KD_ASSERT_ERR(kd__native_addmm_cpu(bad, a, b, &one, &one, &c), KD_EINVAL,
                "The expanded size of the tensor (2) must match the existing size (3) at "
                "non-singleton dimension 1.  Target sizes: [2, 2].  Tensor sizes: [3]");
  KD_ASSERT_ERR(kd__native_addmm_cpu(bad, bad, b, &one, &one, &c), KD_EINVAL,
                "mat1 must be a matrix, got 1-D tensor");
  KD_ASSERT_ERR(kd__native_addmm_cpu(bad, a, bad, &one, &one, &c), KD_EINVAL,
                "mat2 must be a matrix, got 1-D tensor");
  KD_ASSERT_ERR(kd__native_addmm_cpu(bad, a, a, &one, &one, &c), KD_EINVAL,
                "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  KD_ASSERT_ERR(kd__native_addmm_cpu(s22, a, b, &one, &one, &c), KD_ETYPE,
                "expected scalar type float32 but found float64");
  KD_ASSERT_ERR(kd__native_addmm_inplace_cpu(bad, a, b, &one, &one), KD_EINVAL,
                "Bad in-place call: input tensor size [3] and output tensor size [2, 2] should match");
  /* meta */
  kd_tensor *ms = mk_meta(KD_FLOAT32, 1, (int64_t[]){1}), *m1 = mk_meta(KD_FLOAT32, 2, (int64_t[]){4, 3}),
            *m2 = mk_meta(KD_FLOAT32, 2, (int64_t[]){3, 5});
  KD_ASSERT_OK(kd__native_addmm_meta(ms, m1, m2, &one, &one, &c));
  assert_int_equal(kd_tensor_size(c, 0), 4);
  assert_int_equal(kd_tensor_size(c, 1), 5);
  KD_ASSERT_OK(kd__native_addmm_inplace_meta(c, m1, m2, &one, &one));
  kd_tensor *mo = mk_meta(KD_FLOAT32, 1, (int64_t[]){0});
  KD_ASSERT_OK(kd__native_addmm_out_meta(ms, m1, m2, &one, &one, mo));
  assert_int_equal(kd_tensor_size(mo, 1), 5);
  kd_tensor_release(c);
  kd_tensor *objs[] = {a, b, nan_self, hs, ha, hb, e1, e2, s22, bad, ms, m1, m2, mo};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) kd_tensor_release(objs[i]);
}

static void test_dot(void **state) {
  (void)state;
  for (size_t i = 0; i < N_NUM; i++) {
    kd_dtype dt = num_dtypes[i];
    kd_tensor *a = mk(dt, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    kd_tensor *buf = mk(dt, 1, (int64_t[]){6}, (double[]){4, 0, 5, 0, 6, 0}), *b, *c;
    KD_ASSERT_OK(kd_tensor_as_strided(buf, 1, (int64_t[]){3}, (int64_t[]){2}, 0, &b));
    KD_ASSERT_OK(kd__native_dot_cpu(a, b, &c));
    assert_int_equal(kd_tensor_ndim(c), 0);
    assert_int_equal(kd_tensor_dtype(c), dt);
    assert_true(at(c, 0) == 32);
    kd_tensor_release(c);
    kd_tensor *o;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, dt, kd_device_cpu(), &o));
    KD_ASSERT_OK(kd__native_dot_out(a, b, o));
    assert_int_equal(kd_tensor_ndim(o), 0);
    assert_true(at(o, 0) == 32);
    kd_tensor_release(o);
    kd_tensor_release(a);
    kd_tensor_release(b);
    kd_tensor_release(buf);
  }
  kd_tensor *a = mk(KD_FLOAT32, 1, (int64_t[]){3}, A23), *b = mk(KD_FLOAT32, 1, (int64_t[]){4}, A23);
  kd_tensor *d = mk(KD_FLOAT64, 1, (int64_t[]){3}, A23), *m = mk(KD_FLOAT32, 2, (int64_t[]){2, 3}, A23), *c;
  KD_ASSERT_ERR(kd__native_dot_cpu(a, b, &c), KD_EINVAL,
                "inconsistent tensor size, expected tensor [3] and src [4] to have the same number "
                "of elements, but got 3 and 4 elements respectively");
  KD_ASSERT_ERR(kd__native_dot_cpu(a, d, &c), KD_ETYPE,
                "expected both vectors to have same dtype, but found float32 and float64");
  KD_ASSERT_ERR(kd__native_dot_cpu(m, a, &c), KD_EINVAL, "1D tensors expected, but got 2D and 1D tensors");
  kd_tensor *o;
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_FLOAT64, kd_device_cpu(), &o));
  KD_ASSERT_ERR(kd__native_dot_out(a, a, o), KD_ETYPE, "Expected out tensor to have dtype float32");
  kd_tensor_release(o);
  /* empty vectors: 0 */
  kd_tensor *e;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &e));
  KD_ASSERT_OK(kd__native_dot_cpu(e, e, &c));
  assert_true(at(c, 0) == 0);
  kd_tensor_release(c);
  kd_tensor *ma = mk_meta(KD_FLOAT32, 1, (int64_t[]){3});
  KD_ASSERT_OK(kd__native_dot_meta(ma, ma, &c));
  assert_int_equal(kd_tensor_ndim(c), 0);
  assert_int_equal(kd_tensor_device(c).type, KD_DEVICE_META);
  kd_tensor_release(c);
  kd_tensor *objs[] = {a, b, d, m, e, ma};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) kd_tensor_release(objs[i]);
}

/* matmul of a and b against a reference computed from mm on each batch. */
static void check_matmul(kd_tensor *a, kd_tensor *b, int rn, const int64_t *rs, const double *expect) {
  kd_tensor *c;
  KD_ASSERT_OK(kd__native_matmul(a, b, &c));
  expect_values(c, rn, rs, expect, 1e-9);
  kd_tensor_release(c);
}

static void test_matmul(void **state) {
  (void)state;
  kd_dtype dt = KD_FLOAT64;
  kd_tensor *v3 = mk(dt, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  kd_tensor *v2 = mk(dt, 1, (int64_t[]){2}, (double[]){1, -1});
  kd_tensor *a = mk(dt, 2, (int64_t[]){2, 3}, A23), *b = mk(dt, 2, (int64_t[]){3, 2}, B32);
  check_matmul(v3, v3, 0, NULL, (double[]){14});                       /* dot */
  check_matmul(a, v3, 1, (int64_t[]){2}, (double[]){14, 32});          /* mv */
  check_matmul(v2, a, 1, (int64_t[]){3}, (double[]){-3, -3, -3});      /* vm */
  check_matmul(a, b, 2, (int64_t[]){2, 2}, AB);                        /* mm */
  /* batched self [2, 2, 3] @ matrix: batch 1 is -A23 */
  double a2[12];
  for (int i = 0; i < 6; i++) a2[i] = A23[i], a2[6 + i] = -A23[i];
  kd_tensor *ab = mk(dt, 3, (int64_t[]){2, 2, 3}, a2);
  check_matmul(ab, b, 3, (int64_t[]){2, 2, 2}, (double[]){58, 64, 139, 154, -58, -64, -139, -154});
  check_matmul(ab, v3, 2, (int64_t[]){2, 2}, (double[]){14, 32, -14, -32});
  /* vector @ batched: [3] @ [2, 3, 2] */
  double b2[12];
  for (int i = 0; i < 6; i++) b2[i] = B32[i], b2[6 + i] = 2 * B32[i];
  kd_tensor *bb = mk(dt, 3, (int64_t[]){2, 3, 2}, b2);
  check_matmul(v3, bb, 2, (int64_t[]){2, 2}, (double[]){58, 64, 116, 128});
  check_matmul(a, bb, 3, (int64_t[]){2, 2, 2}, (double[]){58, 64, 139, 154, 116, 128, 278, 308});
  /* broadcast batch dims: [2, 1, 2, 3] @ [3, 3, 2] -> [2, 3, 2, 2] */
  kd_tensor *a4 = mk(dt, 4, (int64_t[]){2, 1, 2, 3}, a2);
  double b3[18];
  for (int i = 0; i < 6; i++) b3[i] = B32[i], b3[6 + i] = 0, b3[12 + i] = -B32[i];
  kd_tensor *b3t = mk(dt, 3, (int64_t[]){3, 3, 2}, b3), *c;
  KD_ASSERT_OK(kd__native_matmul(a4, b3t, &c));
  double e4[24];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) e4[(i * 3 + j) * 4 + k] = AB[k] * (i ? -1 : 1) * (j == 0 ? 1 : j == 1 ? 0 : -1);
  expect_values(c, 4, (int64_t[]){2, 3, 2, 2}, e4, 1e-9);
  kd_tensor_release(c);
  /* batches that do not fold into one stride (expanded views) are copied */
  kd_tensor *a4v;
  KD_ASSERT_OK(kd_tensor_as_strided(a4, 4, (int64_t[]){2, 3, 2, 3}, (int64_t[]){6, 0, 3, 1}, 0, &a4v));
  kd_tensor *b22;
  KD_ASSERT_OK(kd_tensor_as_strided(b3t, 4, (int64_t[]){2, 3, 3, 2}, (int64_t[]){0, 6, 2, 1}, 0, &b22));
  KD_ASSERT_OK(kd__native_matmul(a4v, b22, &c));
  expect_values(c, 4, (int64_t[]){2, 3, 2, 2}, e4, 1e-9);
  kd_tensor_release(c);
  /* matmul.out */
  kd_tensor *o;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, dt, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd__native_matmul_out(a, v3, o));
  expect_values(o, 1, (int64_t[]){2}, (double[]){14, 32}, 0);
  kd_tensor_release(o);
  /* errors */
  kd_tensor *s0 = mk(dt, 0, NULL, (double[]){1}), *v4 = mk(dt, 1, (int64_t[]){4}, a2);
  KD_ASSERT_ERR(kd__native_matmul(s0, a, &c), KD_EINVAL,
                "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  KD_ASSERT_ERR(kd__native_matmul(a, v4, &c), KD_EINVAL, "size mismatch, got input (2), mat (2x3), vec (4)");
  KD_ASSERT_ERR(kd__native_matmul(a, a, &c), KD_EINVAL, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  KD_ASSERT_ERR(kd__native_matmul(v3, v4, &c), KD_EINVAL, "inconsistent tensor size");
  kd_tensor *bad;
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){3, 3, 2}, dt, kd_device_cpu(), &bad));
  KD_ASSERT_ERR(kd__native_matmul(ab, bad, &c), KD_EINVAL,
                "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
  kd_tensor *f = mk(KD_FLOAT32, 2, (int64_t[]){3, 2}, B32);
  KD_ASSERT_ERR(kd__native_matmul(a, f, &c), KD_ETYPE, "expected scalar type float64 but found float32");
  /* meta shapes */
  kd_tensor *ma = mk_meta(KD_FLOAT32, 4, (int64_t[]){5, 1, 2, 3}), *mb = mk_meta(KD_FLOAT32, 3, (int64_t[]){4, 3, 7});
  KD_ASSERT_OK(kd__native_matmul(ma, mb, &c));
  assert_int_equal(kd_tensor_device(c).type, KD_DEVICE_META);
  int64_t want[] = {5, 4, 2, 7};
  for (int i = 0; i < 4; i++) assert_int_equal(kd_tensor_size(c, i), want[i]);
  kd_tensor_release(c);
  kd_tensor *mv = mk_meta(KD_FLOAT32, 1, (int64_t[]){3});
  KD_ASSERT_OK(kd__native_matmul(ma, mv, &c));
  assert_int_equal(kd_tensor_ndim(c), 3);
  assert_int_equal(kd_tensor_size(c, 2), 2);
  kd_tensor_release(c);
  /* integers and half through matmul */
  kd_tensor *ia = mk(KD_INT64, 3, (int64_t[]){2, 2, 3}, a2), *ib = mk(KD_INT64, 2, (int64_t[]){3, 2}, B32);
  check_matmul(ia, ib, 3, (int64_t[]){2, 2, 2}, (double[]){58, 64, 139, 154, -58, -64, -139, -154});
  kd_tensor *objs[] = {v3, v2, a, b, ab, bb, a4, b3t, a4v, b22, s0, v4, bad, f, ma, mb, mv, ia, ib};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) kd_tensor_release(objs[i]);
}

/* A larger product through BLAS against the loop path's float64 result. */
static void test_large_against_reference(void **state) {
  (void)state;
  enum { N = 37, M = 53, P = 29 };
  kd_tensor *a, *b, *c, *ref, *a64, *b64;
  kd_manual_seed(1);
  int64_t sa[] = {M, N}, sb[] = {M, P};
  KD_ASSERT_OK(kd__native_randn((kd_ints){sa, 2}, NULL, NULL, NULL, NULL, &a));
  KD_ASSERT_OK(kd__native_randn((kd_ints){sb, 2}, NULL, NULL, NULL, NULL, &b));
  kd_tensor *at_ = mT(a); /* N x M, column-major */
  KD_ASSERT_OK(kd__native_mm_cpu(at_, b, &c));
  /* reference: the same product in float64 (checked by hand at one element) */
  KD_ASSERT_OK(kd_tensor_to_dtype(at_, KD_FLOAT64, &a64));
  KD_ASSERT_OK(kd_tensor_to_dtype(b, KD_FLOAT64, &b64));
  KD_ASSERT_OK(kd__native_mm_cpu(a64, b64, &ref));
  double *r = kd_tensor_data(ref);
  const float *got = kd_tensor_data(c);
  for (int i = 0; i < N * P; i++)
    if (fabs(got[i] - r[i]) > 1e-4 * (1 + fabs(r[i]))) fail_msg("element %d: %g vs %g", i, got[i], r[i]);
  double manual = 0;
  for (int k = 0; k < M; k++) manual += at(a64, 5 * M + k) * at(b64, k * P + 7);
  assert_true(fabs(manual - r[5 * P + 7]) < 1e-9);
  kd_tensor *objs[] = {a, b, c, ref, a64, b64, at_};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) kd_tensor_release(objs[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mm_dtypes),
      cmocka_unit_test(test_mm_complex),
      cmocka_unit_test(test_mm_layouts),
      cmocka_unit_test(test_mm_zero_size_meta),
      cmocka_unit_test(test_mm_errors),
      cmocka_unit_test(test_bmm),
      cmocka_unit_test(test_addmm),
      cmocka_unit_test(test_dot),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_large_against_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
