/*
 * test_linalg.c: the linear-algebra operators (ops/native/linalg.c) through
 * the generated entry points: mm, mm.out, bmm, bmm.out, addmm, addmm_,
 * addmm.out, dot, dot.out, matmul, matmul.out.
 *
 * float32, float64, complex64 and complex128 go through OpenBLAS, the other
 * dtypes through the library's own loops; both are checked against values
 * worked out by hand (small cases) or computed here in double from the
 * operands' elements (larger ones), for row-major, column-major and strided
 * operands and outs. Also: zero-size operands, out and inplace variants,
 * meta shapes and dtypes, and errors by status and message.
 */
#include "ops_check.h"
#include "native/linalg.h"

/* Every dtype the cpu kernels compute (all but bool). */
static const kd_dtype NUM[] = {KD_UINT8,   KD_INT8,    KD_INT16,    KD_INT32,
                               KD_INT64,   KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32,
                               KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};
#define NNUM ((int)(sizeof NUM / sizeof NUM[0]))

/* A new cpu tensor of dtype dt holding vals (row-major), as oc_from. */
static kd_tensor *mk(kd_dtype dt, int ndim, const int64_t *sizes, const double *vals) {
  return oc_from(dt, ndim, sizes, vals);
}

/* A view of t with its last two dims swapped (a new reference). */
static kd_tensor *mT(kd_tensor *t) {
  kd_tensor *v = NULL;
  KD_ASSERT_OK(kd_transpose_int(t, -2, -1, &v));
  return v;
}

/* Shape and values (tol as oc_expect_vals_tol). */
static void expect_values(const kd_tensor *t, int ndim, const int64_t *sizes, const double *vals,
                          double tol) {
  assert_non_null(t);
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int i = 0; i < ndim; i++) assert_int_equal(kd_tensor_size(t, i), sizes[i]);
  oc_expect_vals_tol(t, vals, kd_tensor_numel(t), tol);
}

/* What an integer dtype stores for the exact value v (wrapping). */
static double wrap(kd_dtype dt, double v) {
  int64_t i = (int64_t)v;
  switch (dt) {
  case KD_UINT8: return (double)(uint8_t)i;
  case KD_INT8: return (double)(int8_t)(uint8_t)i;
  case KD_INT16: return (double)(int16_t)(uint16_t)i;
  default: return v;
  }
}

/* Tolerance of a dtype for sums of small integers (bfloat16 keeps 8 bits). */
static double tol_of(kd_dtype dt) { return dt == KD_BFLOAT16 ? 1e-2 : 0; }

static const double A23[] = {1, 2, 3, 4, 5, 6};    /* [[1 2 3] [4 5 6]] */
static const double B32[] = {7, 8, 9, 10, 11, 12}; /* [[7 8] [9 10] [11 12]] */
static const double AB[] = {58, 64, 139, 154};     /* A23 @ B32 */

/* ---- mm ---------------------------------------------------------------------------------- */

static void test_mm_dtypes(void **state) {
  (void)state;
  oc_open();
  for (int i = 0; i < NNUM; i++) {
    kd_dtype dt = NUM[i];
    kd_tensor *a = mk(dt, 2, I(2, 3), A23), *b = mk(dt, 2, I(3, 2), B32), *c = NULL;
    KD_ASSERT_OK(kd_mm(a, b, &c));
    /* uint8/int8 wrap as PyTorch's (139 -> -117 in int8, 154 -> 154 in uint8) */
    double expect[4];
    for (int k = 0; k < 4; k++) expect[k] = wrap(dt, AB[k]);
    oc_expect_shape(c, 2, I(2, 2), dt, KD_DEVICE_CPU);
    oc_expect_vals_tol(c, expect, 4, tol_of(dt));
    kd_tensor_release(c);
    /* transposed (column-major) operands give the same product */
    kd_tensor *at = mk(dt, 2, I(3, 2), D(1, 4, 2, 5, 3, 6));
    kd_tensor *bt = mk(dt, 2, I(2, 3), D(7, 9, 11, 8, 10, 12));
    kd_tensor *av = mT(at), *bv = mT(bt);
    KD_ASSERT_OK(kd_mm(av, bv, &c));
    oc_expect_vals_tol(c, expect, 4, tol_of(dt));
    kd_tensor_release(c);
    KD_ASSERT_OK(kd_mm(a, bv, &c)); /* one of each */
    oc_expect_vals_tol(c, expect, 4, tol_of(dt));
    kd_tensor_release(c);
    /* mm.out into a fresh, empty out */
    kd_tensor *o = oc_empty(dt, 1, I(0));
    KD_ASSERT_OK(kd_mm_out(av, b, o));
    oc_expect_shape(o, 2, I(2, 2), dt, KD_DEVICE_CPU);
    oc_expect_vals_tol(o, expect, 4, tol_of(dt));
    /* meta: the same shape and dtype, no data */
    kd_tensor *ma = oc_meta(dt, 2, I(2, 3)), *mb = oc_meta(dt, 2, I(3, 2));
    KD_ASSERT_OK(kd_mm(ma, mb, &c));
    EXPECT_SHAPE(c, dt, KD_DEVICE_META, 2, 2);
    kd_tensor_release(c);
    RELEASE(mb, ma, o, bv, av, bt, at, b, a);
  }
}

static void test_mm_complex(void **state) {
  (void)state;
  oc_open();
  /* [[1+i, 2]] @ [[i], [1-i]] = (1+i)i + 2(1-i) = -1+i + 2-2i = 1-i */
  const double a[] = {1, 1, 2, 0}, b[] = {0, 1, 1, -1};
  for (int k = 0; k < 2; k++) {
    kd_dtype dt = k ? KD_COMPLEX128 : KD_COMPLEX64;
    kd_tensor *a128 = NULL, *b128 = NULL, *ta = NULL, *tb = NULL, *c = NULL;
    KD_ASSERT_OK(kd_tensor_from_data(2, I(1, 2), KD_COMPLEX128, a, &a128));
    KD_ASSERT_OK(kd_tensor_from_data(2, I(2, 1), KD_COMPLEX128, b, &b128));
    KD_ASSERT_OK(kd_tensor_to_dtype(a128, dt, &ta));
    KD_ASSERT_OK(kd_tensor_to_dtype(b128, dt, &tb));
    KD_ASSERT_OK(kd_mm(ta, tb, &c));
    kd_scalar v = oc_get(c, 0);
    assert_true(v.kind == KD_SCALAR_COMPLEX && v.v.c.re == 1 && v.v.c.im == -1);
    kd_tensor_release(c);
    /* addmm with complex alpha: alpha = i -> i(1-i) = 1+i; beta 0 */
    kd_scalar alpha = kd_scalar_complex(0, 1), beta = kd_scalar_int(0);
    KD_ASSERT_ERR(kd_addmm(ta, ta, tb, &beta, &alpha, &c), KD_EINVAL,
                  "The expanded size of the tensor (1) must match the existing size (2)");
    kd_tensor *self1 = NULL;
    KD_ASSERT_OK(kd_tensor_empty(0, NULL, dt, kd_device_cpu(), &self1));
    KD_ASSERT_OK(kd_addmm(self1, ta, tb, &beta, &alpha, &c));
    v = oc_get(c, 0);
    assert_true(v.v.c.re == 1 && v.v.c.im == 1);
    kd_tensor_release(c);
    /* complex beta: self = 2, beta = i, alpha = 1: 2i + 1-i = 1+i */
    kd_scalar two = kd_scalar_int(2), bi = kd_scalar_complex(0, 1);
    KD_ASSERT_OK(kd_tensor_set(self1, NULL, &two));
    KD_ASSERT_OK(kd_addmm(self1, ta, tb, &bi, NULL, &c));
    v = oc_get(c, 0);
    assert_true(v.v.c.re == 1 && v.v.c.im == 1);
    kd_tensor_release(c);
    /* dot does not conjugate */
    kd_tensor *va = NULL, *vb = NULL;
    KD_ASSERT_OK(kd_view(ta, INTS(2), &va));
    KD_ASSERT_OK(kd_view(tb, INTS(2), &vb));
    KD_ASSERT_OK(kd_dot(va, vb, &c));
    v = oc_get(c, 0);
    assert_true(v.v.c.re == 1 && v.v.c.im == -1);
    kd_tensor_release(c);
    /* matmul of the vectors is dot, of the matrices mm */
    KD_ASSERT_OK(kd_matmul(va, vb, &c));
    EXPECT_SHAPE0(c, dt, KD_DEVICE_CPU);
    v = oc_get(c, 0);
    assert_true(v.v.c.re == 1 && v.v.c.im == -1);
    kd_tensor_release(c);
    RELEASE(vb, va, self1, tb, ta, b128, a128);
  }
}

/* Reference product in double over any strides: out[i][j] = sum_k a[i][k] b[k][j]. */
static void reference(const kd_tensor *a, const kd_tensor *b, double *out) {
  int64_t n = kd_tensor_size(a, 0), m = kd_tensor_size(a, 1), p = kd_tensor_size(b, 1);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < p; j++) {
      double s = 0;
      for (int64_t k = 0; k < m; k++) s += oc_at(a, i * m + k) * oc_at(b, k * p + j);
      out[i * p + j] = s;
    }
}

static void test_mm_layouts(void **state) {
  (void)state;
  oc_open();
  /* 7x5 @ 5x6 with each operand row-major, column-major, or strided every
   * other column (needs a copy), and out row-major, transposed or strided.
   * Values are small integers, so every dtype's result is exact (bfloat16
   * and float16 up to their rounding). */
  enum { N = 7, M = 5, P = 6 };
  double av[2 * N * M], bv[2 * M * P];
  for (int i = 0; i < 2 * N * M; i++) av[i] = (double)((i * 7) % 11) - 5;
  for (int i = 0; i < 2 * M * P; i++) bv[i] = (double)((i * 5) % 13) - 6;
  const kd_dtype dts[] = {KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128,
                          KD_INT32,   KD_INT64,   KD_FLOAT16,   KD_BFLOAT16};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    kd_dtype dt = dts[d];
    kd_tensor *abuf = mk(dt, 1, I(2 * N * M), av), *bbuf = mk(dt, 1, I(2 * M * P), bv);
    for (int la = 0; la < 3; la++)
      for (int lb = 0; lb < 3; lb++)
        for (int lc = 0; lc < 3; lc++) {
          kd_tensor *a = NULL, *b = NULL, *c = NULL, *cbuf = NULL;
          const int64_t sa[3][2] = {{M, 1}, {1, N}, {2 * M, 2}};
          const int64_t sb[3][2] = {{P, 1}, {1, M}, {2 * P, 2}};
          const int64_t sc[3][2] = {{P, 1}, {1, N}, {2 * P, 2}};
          KD_ASSERT_OK(kd_tensor_as_strided(abuf, 2, I(N, M), sa[la], 1, &a));
          KD_ASSERT_OK(kd_tensor_as_strided(bbuf, 2, I(M, P), sb[lb], 0, &b));
          cbuf = oc_empty(dt, 1, I(2 * N * P));
          KD_ASSERT_OK(kd_tensor_as_strided(cbuf, 2, I(N, P), sc[lc], 0, &c));
          KD_ASSERT_OK(kd_mm_out(a, b, c));
          assert_int_equal(kd_tensor_stride(c, 0), sc[lc][0]); /* out kept its strides */
          assert_int_equal(kd_tensor_stride(c, 1), sc[lc][1]);
          double ref[N * P];
          reference(a, b, ref);
          /* float16 rounds sums above 2048 to even; bfloat16 keeps 8 bits */
          double tol = dt == KD_BFLOAT16 ? 1e-2 : dt == KD_FLOAT16 ? 1e-3 : 0;
          expect_values(c, 2, I(N, P), ref, tol);
          RELEASE(a, b, c, cbuf);
        }
    RELEASE(abuf, bbuf);
  }
}

static void test_mm_zero_size(void **state) {
  (void)state;
  oc_open();
  for (int i = 0; i < NNUM; i++) {
    kd_dtype dt = NUM[i];
    kd_tensor *a = oc_empty(dt, 2, I(2, 0)), *b = oc_empty(dt, 2, I(0, 3)), *c = NULL;
    KD_ASSERT_OK(kd_mm(a, b, &c)); /* 2x0 @ 0x3: zeros */
    expect_values(c, 2, I(2, 3), D(0, 0, 0, 0, 0, 0), 0);
    kd_tensor_release(c);
    kd_tensor *m32 = mk(dt, 2, I(3, 2), B32);
    KD_ASSERT_OK(kd_mm(b, m32, &c)); /* 0x3 @ 3x2 */
    oc_expect_shape(c, 2, I(0, 2), dt, KD_DEVICE_CPU);
    kd_tensor_release(c);
    kd_tensor *bt = mT(b), *at = mT(a);
    KD_ASSERT_OK(kd_mm(bt, at, &c)); /* 3x0 @ 0x2 */
    expect_values(c, 2, I(3, 2), D(0, 0, 0, 0, 0, 0), 0);
    kd_tensor_release(c);
    /* an out full of garbage is overwritten with zeros */
    kd_tensor *o = mk(dt, 2, I(3, 2), D(9, 9, 9, 9, 9, 9));
    KD_ASSERT_OK(kd_mm_out(bt, at, o));
    expect_values(o, 2, I(3, 2), D(0, 0, 0, 0, 0, 0), 0);
    KD_ASSERT_ERR(kd_mm(at, bt, &c), KD_EINVAL,
                  "mat1 and mat2 shapes cannot be multiplied (0x2 and 3x0)");
    RELEASE(o, bt, at, m32, a, b);
  }
}

static void test_mm_meta(void **state) {
  (void)state;
  oc_open();
  /* meta: shapes only, any dtype (bool included: no loop runs) */
  kd_tensor *a = META(KD_BOOL, 4, 5), *b = META(KD_BOOL, 5, 6), *c = NULL;
  KD_ASSERT_OK(kd_mm(a, b, &c));
  EXPECT_SHAPE(c, KD_BOOL, KD_DEVICE_META, 4, 6);
  kd_tensor_release(c);
  kd_tensor *o = META(KD_BOOL, 0);
  KD_ASSERT_OK(kd_mm_out(a, b, o));
  EXPECT_SHAPE(o, KD_BOOL, KD_DEVICE_META, 4, 6);
  KD_ASSERT_ERR(kd_mm(b, b, &c), KD_EINVAL,
                "mat1 and mat2 shapes cannot be multiplied (5x6 and 5x6)");
  assert_null(c);
  kd_tensor *f = META(KD_FLOAT32, 5, 6), *of = META(KD_FLOAT32, 0);
  KD_ASSERT_ERR(kd_mm(a, f, &c), KD_ETYPE, "expected scalar type bool but found float32");
  KD_ASSERT_ERR(kd_mm_out(a, b, of), KD_ETYPE,
                "Expected out tensor to have dtype bool, but got float32 instead");
  /* A kernel registered for one backend refuses tensors of another (only a
   * direct call can get there: the dispatcher picks the kernel by device). */
  kd_tensor *ca = mk(KD_FLOAT32, 2, I(2, 3), A23), *cb = mk(KD_FLOAT32, 2, I(3, 2), B32);
  KD_ASSERT_ERR(kdk_native_mm_cpu(a, b, &c), KD_EINVAL, "expects cpu tensors, got meta");
  KD_ASSERT_ERR(kdk_native_mm_meta(ca, cb, &c), KD_EINVAL, "expects meta tensors, got cpu");
  RELEASE(cb, ca, of, f, o, a, b);
}

static void test_mm_errors(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = mk(KD_FLOAT32, 2, I(2, 3), A23), *b = mk(KD_FLOAT32, 2, I(3, 2), B32), *c = NULL;
  kd_tensor *v = mk(KD_FLOAT32, 1, I(3), A23), *d = mk(KD_FLOAT64, 2, I(3, 2), B32);
  kd_tensor *w = oc_empty(KD_FLOAT32, 2, I(4, 5));
  KD_ASSERT_ERR(kd_mm(a, w, &c), KD_EINVAL, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  assert_null(c);
  KD_ASSERT_ERR(kd_mm(v, b, &c), KD_EINVAL, "self must be a matrix");
  KD_ASSERT_ERR(kd_mm(a, v, &c), KD_EINVAL, "mat2 must be a matrix");
  KD_ASSERT_ERR(kd_mm(a, d, &c), KD_ETYPE, "expected scalar type float32 but found float64");
  /* bool is not computed on cpu */
  kd_tensor *bb = mk(KD_BOOL, 2, I(2, 3), A23), *bb2 = mk(KD_BOOL, 2, I(3, 2), B32);
  KD_ASSERT_ERR(kd_mm(bb, bb2, &c), KD_ENOKERNEL, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  /* wrong out dtype, out device, mixed devices */
  kd_tensor *o64 = oc_empty(KD_FLOAT64, 2, I(2, 2));
  KD_ASSERT_ERR(kd_mm_out(a, b, o64), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got float64 instead");
  kd_tensor *mb = META(KD_FLOAT32, 3, 2), *om = META(KD_FLOAT32, 2, 2);
  KD_ASSERT_ERR(kd_mm(a, mb, &c), KD_EINVAL,
                "Expected all tensors to be on the same device, but found at least two devices, "
                "cpu and meta!");
  KD_ASSERT_ERR(kd_mm(mb, a, &c), KD_EINVAL,
                "Expected all tensors to be on the same device, but found at least two devices, "
                "meta and cpu!");
  /* An out on another device than the inputs. The dispatcher picks the Meta
   * kernel from the out's key (Meta ranks above CPU): that kernel reports the
   * out, not the inputs (it used to say "this kernel expects meta tensors"). */
  kd_tensor *mo = oc_empty(KD_FLOAT32, 2, I(2, 2));
  KD_ASSERT_ERR(kd_mm_out(a, b, om), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  kd_tensor *ma = META(KD_FLOAT32, 2, 3);
  KD_ASSERT_ERR(kd_mm_out(ma, mb, mo), KD_EINVAL,
                "Expected out tensor to have device meta, but got cpu instead");
  /* out of the wrong size: resized with a warning (once); out aliasing an input */
  kd_tensor *o = oc_empty(KD_FLOAT32, 1, I(3));
  oc_watch_warnings();
  KD_ASSERT_OK(kd_mm_out(a, b, o));
  KD_ASSERT_OK(kd_mm_out(a, b, o)); /* right size now: no warning */
  oc_unwatch_warnings();
  assert_int_equal(oc_warnings, 1);
  assert_non_null(
      strstr(oc_last_warning, "had shape [3], which does not match the required output shape [2, 2]"));
  expect_values(o, 2, I(2, 2), AB, 0);
  /* sq @ sq into sq: [[1 2] [3 4]]^2 = [[7 10] [15 22]] (float64 through BLAS, int32 by the loop) */
  for (int k = 0; k < 2; k++) {
    kd_tensor *sq = mk(k ? KD_INT32 : KD_FLOAT64, 2, I(2, 2), D(1, 2, 3, 4));
    KD_ASSERT_OK(kd_mm_out(sq, sq, sq));
    expect_values(sq, 2, I(2, 2), D(7, 10, 15, 22), 0);
    kd_tensor *sqt = mT(sq); /* sq^T @ sq into sq^T: [[7 15] [10 22]] @ [[7 10] [15 22]] */
    KD_ASSERT_OK(kd_mm_out(sqt, sq, sqt));
    expect_values(sqt, 2, I(2, 2), D(274, 400, 400, 584), 0);
    RELEASE(sqt, sq);
  }
  RELEASE(ma, mo, o, om, mb, o64, bb2, bb, w, d, v, b, a);
}

/* ---- bmm ----------------------------------------------------------------------------------- */

static void test_bmm(void **state) {
  (void)state;
  oc_open();
  /* batch 0: A23 @ B32; batch 1: 2*A23 @ B32 */
  double a2[12], b2[12];
  for (int i = 0; i < 6; i++) {
    a2[i] = A23[i];
    a2[6 + i] = 2 * A23[i];
    b2[i] = B32[i];
    b2[6 + i] = B32[i];
  }
  const double exact[] = {58, 64, 139, 154, 116, 128, 278, 308};
  for (int i = 0; i < NNUM; i++) {
    kd_dtype dt = NUM[i];
    double expect[8];
    for (int k = 0; k < 8; k++) expect[k] = wrap(dt, exact[k]);
    kd_tensor *a = mk(dt, 3, I(2, 2, 3), a2), *b = mk(dt, 3, I(2, 3, 2), b2), *c = NULL;
    KD_ASSERT_OK(kd_bmm(a, b, &c));
    oc_expect_shape(c, 3, I(2, 2, 2), dt, KD_DEVICE_CPU);
    oc_expect_vals_tol(c, expect, 8, tol_of(dt));
    kd_tensor_release(c);
    /* the second operand transposed per batch, into an out */
    kd_tensor *bt = mk(dt, 3, I(2, 2, 3), D(7, 9, 11, 8, 10, 12, 7, 9, 11, 8, 10, 12));
    kd_tensor *btv = mT(bt), *out = oc_empty(dt, 1, I(0));
    KD_ASSERT_OK(kd_bmm_out(a, btv, out));
    oc_expect_shape(out, 3, I(2, 2, 2), dt, KD_DEVICE_CPU);
    oc_expect_vals_tol(out, expect, 8, tol_of(dt));
    /* one matrix expanded over the batches (batch stride 0) */
    kd_tensor *b1 = mk(dt, 3, I(1, 3, 2), B32), *bx = NULL;
    KD_ASSERT_OK(kd_expand(b1, INTS(2, 3, 2), false, &bx));
    KD_ASSERT_OK(kd_bmm(a, bx, &c));
    oc_expect_vals_tol(c, expect, 8, tol_of(dt));
    kd_tensor_release(c);
    kd_tensor *ma = oc_meta(dt, 3, I(2, 2, 3)), *mb = oc_meta(dt, 3, I(2, 3, 5));
    KD_ASSERT_OK(kd_bmm(ma, mb, &c));
    EXPECT_SHAPE(c, dt, KD_DEVICE_META, 2, 2, 5);
    kd_tensor_release(c);
    RELEASE(mb, ma, bx, b1, out, btv, bt, a, b);
  }
  kd_tensor *a = mk(KD_FLOAT32, 3, I(2, 2, 3), a2), *b = mk(KD_FLOAT32, 3, I(2, 3, 2), b2), *c = NULL;
  kd_tensor *m2 = mk(KD_FLOAT32, 2, I(2, 3), A23), *b3 = oc_empty(KD_FLOAT32, 3, I(3, 3, 2));
  kd_tensor *bd = mk(KD_FLOAT64, 3, I(2, 3, 2), b2), *bb = mk(KD_BOOL, 3, I(2, 2, 3), a2);
  KD_ASSERT_ERR(kd_bmm(m2, b, &c), KD_EINVAL, "batch1 must be a 3D tensor");
  assert_null(c);
  KD_ASSERT_ERR(kd_bmm(a, m2, &c), KD_EINVAL, "batch2 must be a 3D tensor");
  KD_ASSERT_ERR(kd_bmm(a, b3, &c), KD_EINVAL,
                "batch1 and batch2 must have same number of batches, got 2 and 3");
  KD_ASSERT_ERR(kd_bmm(a, a, &c), KD_EINVAL,
                "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 2].");
  KD_ASSERT_ERR(kd_bmm(a, bd, &c), KD_ETYPE, "expected scalar type float32 but found float64");
  kd_tensor *bb2 = mk(KD_BOOL, 3, I(2, 3, 2), b2);
  KD_ASSERT_ERR(kd_bmm(bb, bb2, &c), KD_ENOKERNEL, "\"bmm\" not implemented for 'Bool'");
  kd_tensor *o64 = oc_empty(KD_FLOAT64, 1, I(0)), *om = META(KD_FLOAT32, 0);
  KD_ASSERT_ERR(kd_bmm_out(a, b, o64), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got float64 instead");
  KD_ASSERT_ERR(kd_bmm_out(a, b, om), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  /* out aliasing both inputs: [[1 2] [3 4]] squared into itself (through a temporary) */
  kd_tensor *sq = mk(KD_FLOAT64, 3, I(1, 2, 2), D(1, 2, 3, 4));
  KD_ASSERT_OK(kd_bmm_out(sq, sq, sq));
  expect_values(sq, 3, I(1, 2, 2), D(7, 10, 15, 22), 0);
  /* zero batches, zero inner size */
  kd_tensor *z1 = oc_empty(KD_FLOAT32, 3, I(0, 2, 3)), *z2 = oc_empty(KD_FLOAT32, 3, I(0, 3, 4));
  KD_ASSERT_OK(kd_bmm(z1, z2, &c));
  EXPECT_SHAPE(c, KD_FLOAT32, KD_DEVICE_CPU, 0, 2, 4);
  kd_tensor_release(c);
  kd_tensor *k1 = oc_empty(KD_INT32, 3, I(2, 1, 0)), *k2 = oc_empty(KD_INT32, 3, I(2, 0, 2));
  KD_ASSERT_OK(kd_bmm(k1, k2, &c));
  expect_values(c, 3, I(2, 1, 2), D(0, 0, 0, 0), 0);
  kd_tensor_release(c);
  /* meta out */
  kd_tensor *ma = META(KD_FLOAT16, 5, 2, 3), *mb = META(KD_FLOAT16, 5, 3, 7), *mo = META(KD_FLOAT16, 0);
  KD_ASSERT_OK(kd_bmm_out(ma, mb, mo));
  EXPECT_SHAPE(mo, KD_FLOAT16, KD_DEVICE_META, 5, 2, 7);
  KD_ASSERT_ERR(kd_bmm(ma, ma, &c), KD_EINVAL,
                "Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [5, 2].");
  RELEASE(mo, mb, ma, k2, k1, z2, z1, sq, om, o64, bb2, bb, bd, b3, m2, b, a);
}

/* ---- addmm ------------------------------------------------------------------------------------ */

static void test_addmm(void **state) {
  (void)state;
  oc_open();
  kd_scalar beta = kd_scalar_int(2), alpha = kd_scalar_int(3), one = kd_scalar_int(1),
            zero = kd_scalar_int(0);
  for (int i = 0; i < NNUM; i++) {
    kd_dtype dt = NUM[i];
    if (dt == KD_UINT8) continue; /* self holds -1 below; uint8 has its own case */
    kd_tensor *a = mk(dt, 2, I(2, 3), A23), *b = mk(dt, 2, I(3, 2), B32), *c = NULL;
    /* self [2] broadcasts along rows: 2*[1, -1] + 3*AB = [176, 190, 419, 460] */
    kd_tensor *s = mk(dt, 1, I(2), D(1, -1));
    double e1[4] = {176, 190, 419, 460}, e2[4] = {59, 63, 140, 153};
    for (int k = 0; k < 4; k++) e1[k] = wrap(dt, e1[k]), e2[k] = wrap(dt, e2[k]);
    KD_ASSERT_OK(kd_addmm(s, a, b, &beta, &alpha, &c));
    oc_expect_shape(c, 2, I(2, 2), dt, KD_DEVICE_CPU);
    oc_expect_vals_tol(c, e1, 4, tol_of(dt));
    kd_tensor_release(c);
    /* defaults (NULL): beta = alpha = 1: [1, -1] + AB */
    KD_ASSERT_OK(kd_addmm(s, a, b, NULL, NULL, &c));
    oc_expect_vals_tol(c, e2, 4, tol_of(dt));
    kd_tensor_release(c);
    /* out variant, then the inplace one on a [2, 2] self: 2*o + AB */
    kd_tensor *o = oc_empty(dt, 1, I(0));
    KD_ASSERT_OK(kd_addmm_out(s, a, b, &one, &one, o));
    oc_expect_shape(o, 2, I(2, 2), dt, KD_DEVICE_CPU);
    oc_expect_vals_tol(o, e2, 4, tol_of(dt));
    KD_ASSERT_OK(kd_addmm_(o, a, b, &beta, &one));
    double e3[4] = {176, 190, 419, 460};
    for (int k = 0; k < 4; k++) e3[k] = wrap(dt, e3[k]);
    oc_expect_vals_tol(o, e3, 4, tol_of(dt));
    /* inplace on a transposed self: st = base^T = [[1, 3], [2, 4]], written through to base */
    kd_tensor *base = mk(dt, 2, I(2, 2), D(1, 2, 3, 4)), *st = mT(base);
    KD_ASSERT_OK(kd_addmm_(st, a, b, &one, &one)); /* st = [[1 3] [2 4]] + AB */
    double e4[4] = {59, 67, 141, 158}, e4t[4] = {59, 141, 67, 158};
    for (int k = 0; k < 4; k++) e4[k] = wrap(dt, e4[k]), e4t[k] = wrap(dt, e4t[k]);
    oc_expect_vals_tol(st, e4, 4, tol_of(dt));
    EXPECT_GEOM(st, (2, 2), (1, 2), 0); /* still a view of base */
    oc_expect_view_of(st, base, 0);
    oc_expect_vals_tol(base, e4t, 4, tol_of(dt));
    /* meta: functional, inplace, out */
    kd_tensor *ms = oc_meta(dt, 1, I(1)), *m1 = oc_meta(dt, 2, I(4, 3)), *m2 = oc_meta(dt, 2, I(3, 5));
    kd_tensor *mo = oc_meta(dt, 1, I(0));
    KD_ASSERT_OK(kd_addmm(ms, m1, m2, NULL, NULL, &c));
    EXPECT_SHAPE(c, dt, KD_DEVICE_META, 4, 5);
    KD_ASSERT_OK(kd_addmm_(c, m1, m2, &one, &one));
    KD_ASSERT_OK(kd_addmm_out(ms, m1, m2, &one, &one, mo));
    EXPECT_SHAPE(mo, dt, KD_DEVICE_META, 4, 5);
    kd_tensor_release(c);
    RELEASE(mo, m2, m1, ms, st, base, o, s, a, b);
  }
  /* uint8 wraps: self [1, 255], beta 1, alpha 1: [1 + 58, 255 + 64] = [59, 319 -> 63], [140, 409 -> 153] */
  kd_tensor *ua = mk(KD_UINT8, 2, I(2, 3), A23), *ub = mk(KD_UINT8, 2, I(3, 2), B32),
            *us = mk(KD_UINT8, 1, I(2), D(1, 255)), *uc = NULL;
  KD_ASSERT_OK(kd_addmm(us, ua, ub, NULL, NULL, &uc));
  EXPECT_VALS(uc, 59, 63, 140, 153);
  RELEASE(uc, us, ub, ua);
  /* self shapes that broadcast: [2, 1], [1, 1], 0-dim. */
  kd_tensor *a = mk(KD_FLOAT64, 2, I(2, 3), A23), *b = mk(KD_FLOAT64, 2, I(3, 2), B32), *c = NULL;
  kd_tensor *col = mk(KD_FLOAT64, 2, I(2, 1), D(10, 20)), *one1 = mk(KD_FLOAT64, 2, I(1, 1), D(5));
  kd_tensor *s0 = mk(KD_FLOAT64, 0, NULL, D(-1));
  KD_ASSERT_OK(kd_addmm(col, a, b, NULL, NULL, &c));
  EXPECT_VALS(c, 68, 74, 159, 174);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_addmm(one1, a, b, &one, &zero, &c)); /* alpha 0: beta * self only */
  EXPECT_VALS(c, 5, 5, 5, 5);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_addmm(s0, a, b, &beta, &one, &c));
  EXPECT_VALS(c, 56, 62, 137, 152);
  kd_tensor_release(c);
  /* beta = 0: self's NaNs are not read (BLAS and the float16 loop) */
  kd_tensor *af = mk(KD_FLOAT32, 2, I(2, 3), A23), *bf = mk(KD_FLOAT32, 2, I(3, 2), B32);
  kd_tensor *nan_self = mk(KD_FLOAT32, 2, I(2, 2), D(NAN, NAN, NAN, NAN));
  KD_ASSERT_OK(kd_addmm(nan_self, af, bf, &zero, &one, &c));
  expect_values(c, 2, I(2, 2), AB, 0);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_addmm_(nan_self, af, bf, &zero, &one));
  expect_values(nan_self, 2, I(2, 2), AB, 0);
  kd_tensor *hs = mk(KD_FLOAT16, 0, NULL, D(NAN));
  kd_tensor *ha = mk(KD_FLOAT16, 2, I(2, 3), A23), *hb = mk(KD_FLOAT16, 2, I(3, 2), B32);
  KD_ASSERT_OK(kd_addmm(hs, ha, hb, &zero, &one, &c));
  expect_values(c, 2, I(2, 2), AB, 0);
  kd_tensor_release(c);
  /* 2x0 @ 0x2 with beta: beta * self */
  kd_tensor *e1 = oc_empty(KD_FLOAT64, 2, I(2, 0)), *e2 = oc_empty(KD_FLOAT64, 2, I(0, 2));
  kd_tensor *s22 = mk(KD_FLOAT64, 2, I(2, 2), D(1, 2, 3, 4));
  KD_ASSERT_OK(kd_addmm(s22, e1, e2, &beta, &alpha, &c));
  expect_values(c, 2, I(2, 2), D(2, 4, 6, 8), 0);
  kd_tensor_release(c);
  /* out == self */
  KD_ASSERT_OK(kd_addmm_out(s22, a, b, &one, &one, s22));
  EXPECT_VALS(s22, 59, 66, 142, 158);
  /* errors */
  kd_tensor *bad = mk(KD_FLOAT32, 1, I(3), A23);
  KD_ASSERT_ERR(kd_addmm(bad, af, bf, &one, &one, &c), KD_EINVAL,
                "The expanded size of the tensor (2) must match the existing size (3) at "
                "non-singleton dimension 1.  Target sizes: [2, 2].  Tensor sizes: [3]");
  assert_null(c);
  KD_ASSERT_ERR(kd_addmm(bad, bad, bf, &one, &one, &c), KD_EINVAL,
                "mat1 must be a matrix, got 1-D tensor");
  KD_ASSERT_ERR(kd_addmm(bad, af, bad, &one, &one, &c), KD_EINVAL,
                "mat2 must be a matrix, got 1-D tensor");
  KD_ASSERT_ERR(kd_addmm(bad, af, af, &one, &one, &c), KD_EINVAL,
                "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  KD_ASSERT_ERR(kd_addmm(s22, af, bf, &one, &one, &c), KD_ETYPE,
                "expected scalar type float32 but found float64");
  KD_ASSERT_ERR(kd_addmm_(bad, af, bf, &one, &one), KD_EINVAL,
                "Bad in-place call: input tensor size [3] and output tensor size [2, 2] should match");
  kd_tensor *o64 = oc_empty(KD_FLOAT64, 2, I(2, 2));
  KD_ASSERT_ERR(kd_addmm_out(nan_self, af, bf, &one, &one, o64), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got float64 instead");
  kd_tensor *bs = mk(KD_BOOL, 2, I(2, 2), D(1, 0, 0, 1));
  KD_ASSERT_ERR(kd_addmm(bs, bs, bs, NULL, NULL, &c), KD_ENOKERNEL,
                "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  kd_tensor *ms = META(KD_FLOAT32, 2, 2);
  KD_ASSERT_ERR(kd_addmm(ms, af, bf, NULL, NULL, &c), KD_EINVAL,
                "Expected all tensors to be on the same device");
  KD_ASSERT_ERR(kd_addmm_out(nan_self, af, bf, NULL, NULL, ms), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  kd_tensor *m1 = META(KD_FLOAT32, 4, 3), *m2 = META(KD_FLOAT32, 3, 5);
  KD_ASSERT_ERR(kd_addmm_(ms, m1, m2, NULL, NULL), KD_EINVAL,
                "Bad in-place call: input tensor size [2, 2] and output tensor size [4, 5] should match");
  RELEASE(m2, m1, ms, bs, o64, bad, s22, e2, e1, hb, ha, hs, nan_self, bf, af, s0, one1, col, b, a);
}

/* ---- dot -------------------------------------------------------------------------------------- */

static void test_dot(void **state) {
  (void)state;
  oc_open();
  for (int i = 0; i < NNUM; i++) {
    kd_dtype dt = NUM[i];
    /* [1, 2, 3] . [4, 5, 6] (every other element of a buffer) = 32 */
    kd_tensor *a = mk(dt, 1, I(3), D(1, 2, 3)), *buf = mk(dt, 1, I(6), D(4, 0, 5, 0, 6, 0));
    kd_tensor *b = NULL, *c = NULL, *o = oc_empty(dt, 1, I(0));
    KD_ASSERT_OK(kd_slice_Tensor(buf, 0, NULL, NULL, 2, &b));
    KD_ASSERT_OK(kd_dot(a, b, &c));
    EXPECT_SHAPE0(c, dt, KD_DEVICE_CPU);
    EXPECT_VALS(c, 32);
    kd_tensor_release(c);
    KD_ASSERT_OK(kd_dot_out(a, b, o));
    EXPECT_SHAPE0(o, dt, KD_DEVICE_CPU);
    EXPECT_VALS(o, 32);
    /* a vector with stride 0: [2, 2, 2] . [4, 5, 6] = 30 */
    kd_tensor *two = mk(dt, 1, I(1), D(2)), *ex = NULL;
    KD_ASSERT_OK(kd_expand(two, INTS(3), false, &ex));
    KD_ASSERT_OK(kd_dot(ex, b, &c));
    EXPECT_VALS(c, 30);
    kd_tensor_release(c);
    /* wrapping in small integers: [100, 100] . [2, 2] = 400 */
    kd_tensor *h = mk(dt, 1, I(2), D(100, 100)), *t2 = mk(dt, 1, I(2), D(2, 2));
    KD_ASSERT_OK(kd_dot(h, t2, &c));
    EXPECT_VALS(c, wrap(dt, 400));
    kd_tensor_release(c);
    kd_tensor *m = oc_meta(dt, 1, I(3));
    KD_ASSERT_OK(kd_dot(m, m, &c));
    EXPECT_SHAPE0(c, dt, KD_DEVICE_META);
    kd_tensor_release(c);
    RELEASE(m, t2, h, ex, two, o, b, buf, a);
  }
  kd_tensor *a = mk(KD_FLOAT32, 1, I(3), A23), *b = mk(KD_FLOAT32, 1, I(4), A23);
  kd_tensor *d = mk(KD_FLOAT64, 1, I(3), A23), *m = mk(KD_FLOAT32, 2, I(2, 3), A23), *c = NULL;
  KD_ASSERT_ERR(kd_dot(a, b, &c), KD_EINVAL,
                "inconsistent tensor size, expected tensor [3] and src [4] to have the same number "
                "of elements, but got 3 and 4 elements respectively");
  assert_null(c);
  KD_ASSERT_ERR(kd_dot(a, d, &c), KD_ETYPE,
                "expected both vectors to have same dtype, but found float32 and float64");
  KD_ASSERT_ERR(kd_dot(m, a, &c), KD_EINVAL, "1D tensors expected, but got 2D and 1D tensors");
  kd_tensor *bo = mk(KD_BOOL, 1, I(2), D(1, 1));
  KD_ASSERT_ERR(kd_dot(bo, bo, &c), KD_ENOKERNEL, "\"dot\" not implemented for 'Bool'");
  kd_tensor *o = oc_empty(KD_FLOAT64, 0, NULL), *ma = META(KD_FLOAT32, 3), *mo = META(KD_FLOAT32, 0);
  KD_ASSERT_ERR(kd_dot_out(a, a, o), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got float64 instead");
  KD_ASSERT_ERR(kd_dot(a, ma, &c), KD_EINVAL, "Expected all tensors to be on the same device");
  /* meta out: resized to 0-dim */
  KD_ASSERT_OK(kd_dot_out(ma, ma, mo));
  EXPECT_SHAPE0(mo, KD_FLOAT32, KD_DEVICE_META);
  /* empty vectors: 0 */
  kd_tensor *e = oc_empty(KD_FLOAT32, 1, I(0)), *ei = oc_empty(KD_INT64, 1, I(0));
  KD_ASSERT_OK(kd_dot(e, e, &c));
  EXPECT_VALS(c, 0);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_dot(ei, ei, &c));
  EXPECT_VALS(c, 0);
  kd_tensor_release(c);
  RELEASE(ei, e, mo, ma, o, bo, m, d, b, a);
}

/* ---- matmul -------------------------------------------------------------------------------------- */

/* matmul(a, b) has these sizes and values, and matmul.out into an empty
 * out gives the same. */
static void check_matmul(kd_tensor *a, kd_tensor *b, int rn, const int64_t *rs, const double *expect,
                         double tol) {
  kd_tensor *c = NULL, *o = oc_empty(kd_tensor_dtype(a), 1, I(0));
  KD_ASSERT_OK(kd_matmul(a, b, &c));
  assert_int_equal(kd_tensor_dtype(c), kd_tensor_dtype(a));
  expect_values(c, rn, rs, expect, tol);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_matmul_out(a, b, o));
  expect_values(o, rn, rs, expect, tol);
  kd_tensor_release(o);
}

static void test_matmul(void **state) {
  (void)state;
  oc_open();
  double a2[12], b2[12], b3[18];
  for (int i = 0; i < 6; i++) a2[i] = A23[i], a2[6 + i] = -A23[i];
  for (int i = 0; i < 6; i++) b2[i] = B32[i], b2[6 + i] = 2 * B32[i];
  for (int i = 0; i < 6; i++) b3[i] = B32[i], b3[6 + i] = 0, b3[12 + i] = -B32[i];
  const kd_dtype dts[] = {KD_FLOAT64, KD_FLOAT32, KD_COMPLEX64, KD_INT64, KD_INT32, KD_FLOAT16};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    kd_dtype dt = dts[d];
    kd_tensor *v3 = mk(dt, 1, I(3), D(1, 2, 3)), *v2 = mk(dt, 1, I(2), D(1, -1));
    kd_tensor *a = mk(dt, 2, I(2, 3), A23), *b = mk(dt, 2, I(3, 2), B32);
    check_matmul(v3, v3, 0, NULL, D(14), 0);                  /* dot */
    check_matmul(a, v3, 1, I(2), D(14, 32), 0);               /* mv */
    check_matmul(v2, a, 1, I(3), D(-3, -3, -3), 0);           /* vm */
    check_matmul(a, b, 2, I(2, 2), AB, 0);                    /* mm */
    /* batched self [2, 2, 3] @ matrix: batch 1 is -A23 */
    kd_tensor *ab = mk(dt, 3, I(2, 2, 3), a2);
    check_matmul(ab, b, 3, I(2, 2, 2), D(58, 64, 139, 154, -58, -64, -139, -154), 0);
    check_matmul(ab, v3, 2, I(2, 2), D(14, 32, -14, -32), 0);
    /* vector and matrix @ batched: [3] @ [2, 3, 2], [2, 3] @ [2, 3, 2] */
    kd_tensor *bb = mk(dt, 3, I(2, 3, 2), b2);
    check_matmul(v3, bb, 2, I(2, 2), D(58, 64, 116, 128), 0);
    check_matmul(a, bb, 3, I(2, 2, 2), D(58, 64, 139, 154, 116, 128, 278, 308), 0);
    /* broadcast batch dims: [2, 1, 2, 3] @ [3, 3, 2] -> [2, 3, 2, 2];
     * batch (i, j) is (i ? -A23 : A23) @ (j == 0 ? B32 : j == 1 ? 0 : -B32) */
    kd_tensor *a4 = mk(dt, 4, I(2, 1, 2, 3), a2), *b3t = mk(dt, 3, I(3, 3, 2), b3);
    double e4[24];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++)
          e4[(i * 3 + j) * 4 + k] = AB[k] * (i ? -1 : 1) * (j == 0 ? 1 : j == 1 ? 0 : -1);
    check_matmul(a4, b3t, 4, I(2, 3, 2, 2), e4, 0);
    /* batches that do not fold into one stride (expanded views) are copied */
    kd_tensor *a4v = NULL, *b22 = NULL;
    KD_ASSERT_OK(kd_expand(a4, INTS(2, 3, 2, 3), false, &a4v));
    KD_ASSERT_OK(kd_expand(b3t, INTS(2, 3, 3, 2), false, &b22));
    check_matmul(a4v, b22, 4, I(2, 3, 2, 2), e4, 0);
    /* transposed operands inside batches */
    kd_tensor *bbt = mk(dt, 3, I(2, 2, 3), D(7, 9, 11, 8, 10, 12, 14, 18, 22, 16, 20, 24));
    kd_tensor *bbv = mT(bbt); /* = bb */
    check_matmul(a, bbv, 3, I(2, 2, 2), D(58, 64, 139, 154, 116, 128, 278, 308), 0);
    /* zero-size: [0, 3] @ [3, 2], [2, 0] @ [0, 3] (zeros), [0, 2, 3] @ [3] */
    kd_tensor *z03 = oc_empty(dt, 2, I(0, 3)), *z20 = oc_empty(dt, 2, I(2, 0)),
              *z023 = oc_empty(dt, 3, I(0, 2, 3));
    check_matmul(z03, b, 2, I(0, 2), NULL, 0);
    check_matmul(z20, z03, 2, I(2, 3), D(0, 0, 0, 0, 0, 0), 0);
    check_matmul(z023, v3, 2, I(0, 2), NULL, 0);
    /* meta */
    kd_tensor *ma = oc_meta(dt, 4, I(5, 1, 2, 3)), *mb = oc_meta(dt, 3, I(4, 3, 7)), *mv = oc_meta(dt, 1, I(3)),
              *c = NULL;
    KD_ASSERT_OK(kd_matmul(ma, mb, &c));
    EXPECT_SHAPE(c, dt, KD_DEVICE_META, 5, 4, 2, 7);
    kd_tensor_release(c);
    KD_ASSERT_OK(kd_matmul(ma, mv, &c));
    EXPECT_SHAPE(c, dt, KD_DEVICE_META, 5, 1, 2);
    kd_tensor_release(c);
    KD_ASSERT_OK(kd_matmul(mv, mv, &c));
    EXPECT_SHAPE0(c, dt, KD_DEVICE_META);
    kd_tensor_release(c);
    RELEASE(mv, mb, ma, z023, z20, z03, bbv, bbt, b22, a4v, b3t, a4, bb, ab, b, a, v2, v3);
  }
  /* int8 wraps as mm does: [[1 2 3] [4 5 6]] @ [7 9 11] = [58, 139 -> -117] */
  kd_tensor *i8 = mk(KD_INT8, 2, I(2, 3), A23), *v8 = mk(KD_INT8, 1, I(3), D(7, 9, 11)), *c = NULL;
  KD_ASSERT_OK(kd_matmul(i8, v8, &c));
  EXPECT_VALS(c, 58, -117);
  RELEASE(c, v8, i8);
  /* errors */
  kd_tensor *a = mk(KD_FLOAT64, 2, I(2, 3), A23), *v3 = mk(KD_FLOAT64, 1, I(3), D(1, 2, 3));
  kd_tensor *ab = mk(KD_FLOAT64, 3, I(2, 2, 3), a2);
  kd_tensor *s0 = mk(KD_FLOAT64, 0, NULL, D(1)), *v4 = mk(KD_FLOAT64, 1, I(4), a2);
  KD_ASSERT_ERR(kd_matmul(s0, a, &c), KD_EINVAL,
                "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  assert_null(c);
  KD_ASSERT_ERR(kd_matmul(a, s0, &c), KD_EINVAL,
                "both arguments to matmul need to be at least 1D, but they are 2D and 0D");
  KD_ASSERT_ERR(kd_matmul(a, v4, &c), KD_EINVAL, "size mismatch, got input (2), mat (2x3), vec (4)");
  KD_ASSERT_ERR(kd_matmul(a, a, &c), KD_EINVAL, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  KD_ASSERT_ERR(kd_matmul(v3, v4, &c), KD_EINVAL, "inconsistent tensor size");
  kd_tensor *bad = oc_empty(KD_FLOAT64, 3, I(3, 3, 2));
  KD_ASSERT_ERR(kd_matmul(ab, bad, &c), KD_EINVAL,
                "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
  kd_tensor *f = mk(KD_FLOAT32, 2, I(3, 2), B32), *bo = mk(KD_BOOL, 2, I(2, 2), D(1, 0, 0, 1));
  KD_ASSERT_ERR(kd_matmul(a, f, &c), KD_ETYPE, "expected scalar type float64 but found float32");
  KD_ASSERT_ERR(kd_matmul(bo, bo, &c), KD_ENOKERNEL, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  kd_tensor *o32 = oc_empty(KD_FLOAT32, 1, I(0)), *m = META(KD_FLOAT64, 3, 2);
  KD_ASSERT_ERR(kd_matmul_out(a, v3, o32), KD_ETYPE,
                "Expected out tensor to have dtype float64, but got float32 instead");
  KD_ASSERT_ERR(kd_matmul(a, m, &c), KD_EINVAL, "Expected all tensors to be on the same device");
  /* an out with elements is resized with a warning */
  kd_tensor *o = oc_empty(KD_FLOAT64, 2, I(2, 2));
  oc_watch_warnings();
  KD_ASSERT_OK(kd_matmul_out(a, v3, o));
  oc_unwatch_warnings();
  assert_int_equal(oc_warnings, 1);
  expect_values(o, 1, I(2), D(14, 32), 0);
  RELEASE(o, m, o32, bo, f, bad, v4, s0, ab, v3, a);
}

/* ---- BLAS against a reference --------------------------------------------------------------------- */

/* Products large enough for OpenBLAS's blocked kernels, in float32 and
 * float64, against sums computed here in long double from the operands'
 * elements; and the same product through the library's loop (bfloat16 is
 * too coarse, so float16 of small integers, exact). */
static void test_large_against_reference(void **state) {
  (void)state;
  oc_open();
  enum { N = 37, M = 53, P = 29 };
  kd_manual_seed(1);
  for (int k = 0; k < 2; k++) {
    kd_dtype dt = k ? KD_FLOAT64 : KD_FLOAT32;
    kd_tensor *a = NULL, *b = NULL, *c = NULL, *at = NULL;
    KD_ASSERT_OK(kd_randn(INTS(M, N), &dt, NULL, NULL, NULL, &a));
    KD_ASSERT_OK(kd_randn(INTS(M, P), &dt, NULL, NULL, NULL, &b));
    at = mT(a); /* N x M, column-major */
    KD_ASSERT_OK(kd_mm(at, b, &c));
    double tol = k ? 1e-12 : 1e-5;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < P; j++) {
        long double s = 0;
        for (int q = 0; q < M; q++) s += (long double)oc_at(at, i * M + q) * oc_at(b, q * P + j);
        double got = oc_at(c, i * P + j);
        if (fabs(got - (double)s) > tol * (1 + fabs((double)s)))
          fail_msg("%s [%d][%d]: %.17g vs %.17g", kd_dtype_name(dt), i, j, got, (double)s);
      }
    RELEASE(at, c, b, a);
  }
  /* The loop: 37x53 @ 53x29 in int64 and float16 of values in [-3, 3]. */
  double *av = malloc(sizeof(double) * N * M), *bv = malloc(sizeof(double) * M * P);
  assert_non_null(av);
  assert_non_null(bv);
  for (int i = 0; i < N * M; i++) av[i] = (double)(i * 3 % 7) - 3;
  for (int i = 0; i < M * P; i++) bv[i] = (double)(i * 5 % 7) - 3;
  for (int k = 0; k < 2; k++) {
    kd_dtype dt = k ? KD_FLOAT16 : KD_INT64;
    kd_tensor *a = mk(dt, 2, I(N, M), av), *b = mk(dt, 2, I(M, P), bv), *c = NULL;
    KD_ASSERT_OK(kd_mm(a, b, &c));
    double ref[N * P];
    reference(a, b, ref);
    expect_values(c, 2, I(N, P), ref, 0);
    RELEASE(c, b, a);
  }
  free(av);
  free(bv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mm_dtypes),
      cmocka_unit_test(test_mm_complex),
      cmocka_unit_test(test_mm_layouts),
      cmocka_unit_test(test_mm_zero_size),
      cmocka_unit_test(test_mm_meta),
      cmocka_unit_test(test_mm_errors),
      cmocka_unit_test(test_bmm),
      cmocka_unit_test(test_addmm),
      cmocka_unit_test(test_dot),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_large_against_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
