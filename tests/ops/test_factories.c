/* Factory kernels (ops/native/factories.c, random.c), called directly until
 * kdgen's entry points land. */
#include <math.h>

#include "kd_test.h"
#include "native/factories.h"

static const kd_dtype all_dtypes[] = {KD_BOOL,    KD_UINT8,    KD_INT8,    KD_INT16,
                                      KD_INT32,   KD_INT64,    KD_FLOAT16, KD_BFLOAT16,
                                      KD_FLOAT32, KD_FLOAT64,  KD_COMPLEX64, KD_COMPLEX128};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

static kd_ints ints(const int64_t *data, int64_t n) {
  kd_ints r = {data, n};
  return r;
}

/* Element i (row-major) of t as a double (real part). */
static double at(const kd_tensor *t, int64_t flat) {
  int nd = kd_tensor_ndim(t);
  int64_t idx[KD_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    int64_t s = kd_tensor_size(t, d);
    idx[d] = flat % s;
    flat /= s;
  }
  kd_scalar v;
  KD_ASSERT_OK(kd_tensor_get(t, nd ? idx : NULL, &v));
  return kd_scalar_to_double(&v);
}

static void assert_all(const kd_tensor *t, double expect) {
  for (int64_t i = 0; i < kd_tensor_numel(t); i++)
    if (at(t, i) != expect) fail_msg("element %lld: %g != %g", (long long)i, at(t, i), expect);
}

static void assert_sizes(const kd_tensor *t, int ndim, const int64_t *sizes) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int i = 0; i < ndim; i++) assert_int_equal(kd_tensor_size(t, i), sizes[i]);
}

static const kd_device meta = {KD_DEVICE_META, 0};

static void test_empty(void **state) {
  (void)state;
  int64_t sz[] = {2, 3};
  kd_tensor *t;
  KD_ASSERT_OK(kd__native_empty_cpu(ints(sz, 2), NULL, NULL, NULL, NULL, NULL, &t));
  assert_sizes(t, 2, sz);
  assert_int_equal(kd_tensor_dtype(t), kd_get_default_dtype());
  assert_true(kd_tensor_is_contiguous(t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_CPU);
  kd_tensor_release(t);

  kd_dtype i16 = KD_INT16;
  kd_layout strided = KD_LAYOUT_STRIDED;
  kd_device cpu = kd_device_cpu();
  bool no = false;
  kd_memory_format cl = KD_MEMORY_FORMAT_CHANNELS_LAST;
  int64_t sz4[] = {2, 3, 4, 5};
  KD_ASSERT_OK(kd__native_empty_cpu(ints(sz4, 4), &i16, &strided, &cpu, &no, &cl, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_INT16);
  assert_int_equal(kd_tensor_stride(t, 0), 60);
  assert_int_equal(kd_tensor_stride(t, 1), 1);
  assert_int_equal(kd_tensor_stride(t, 2), 15);
  assert_int_equal(kd_tensor_stride(t, 3), 3);
  kd_tensor_release(t);

  /* zero-size and 0-dim */
  int64_t z[] = {0, 4};
  KD_ASSERT_OK(kd__native_empty_cpu(ints(z, 2), NULL, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_numel(t), 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_empty_cpu(ints(NULL, 0), NULL, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_ndim(t), 0);
  assert_int_equal(kd_tensor_numel(t), 1);
  kd_tensor_release(t);

  /* meta */
  KD_ASSERT_OK(kd__native_empty_meta(ints(sz, 2), NULL, NULL, &meta, NULL, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  assert_null(kd_tensor_data(t));
  assert_sizes(t, 2, sz);
  kd_tensor_release(t);

  /* errors */
  int64_t neg[] = {2, -1};
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(neg, 2), NULL, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "Trying to create tensor with negative dimension -1: [2, -1]");
  assert_null(t);
  kd_layout coo = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), NULL, &coo, NULL, NULL, NULL, &t),
                KD_EUNSUPPORTED, "layout sparse_coo is not supported");
  kd_device cuda = {KD_DEVICE_CUDA, 0};
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), NULL, NULL, &cuda, NULL, NULL, &t),
                KD_EUNSUPPORTED, "device 'cuda:0' is not supported");
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), NULL, NULL, &meta, NULL, NULL, &t), KD_EINVAL,
                "expected a cpu device");
  bool yes = true;
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), NULL, NULL, NULL, &yes, NULL, &t),
                KD_EUNSUPPORTED, "pin_memory");
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), NULL, NULL, NULL, NULL, &cl, &t), KD_EINVAL,
                "required rank 4 tensor to use channels_last format");
  kd_memory_format pr = KD_MEMORY_FORMAT_PRESERVE;
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), NULL, NULL, NULL, NULL, &pr, &t), KD_EINVAL,
                "Preserve");
  kd_dtype bad = (kd_dtype)99;
  KD_ASSERT_ERR(kd__native_empty_cpu(ints(sz, 2), &bad, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "invalid dtype");
}

static void test_empty_like(void **state) {
  (void)state;
  int64_t sz[] = {3, 2};
  kd_tensor *base, *tr, *t;
  KD_ASSERT_OK(kd_tensor_empty(2, sz, KD_FLOAT64, kd_device_cpu(), &base));
  /* a transposed view [2, 3] with strides [1, 2]: dense, so preserved */
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &tr));
  KD_ASSERT_OK(kd__native_empty_like(tr, NULL, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT64);
  assert_int_equal(kd_tensor_stride(t, 0), 1);
  assert_int_equal(kd_tensor_stride(t, 1), 2);
  kd_tensor_release(t);
  kd_memory_format cf = KD_MEMORY_FORMAT_CONTIGUOUS;
  kd_dtype i8 = KD_INT8;
  KD_ASSERT_OK(kd__native_empty_like(tr, &i8, NULL, NULL, NULL, &cf, &t));
  assert_true(kd_tensor_is_contiguous(t));
  assert_int_equal(kd_tensor_dtype(t), KD_INT8);
  kd_tensor_release(t);
  /* a non-dense view (every other row) gives a contiguous result */
  kd_tensor *rows;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 2}, (int64_t[]){4, 1}, 0, &rows));
  KD_ASSERT_OK(kd__native_empty_like(rows, NULL, NULL, NULL, NULL, NULL, &t));
  assert_true(kd_tensor_is_contiguous(t));
  kd_tensor_release(t);
  /* to meta */
  KD_ASSERT_OK(kd__native_empty_like(tr, NULL, NULL, &meta, NULL, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  assert_sizes(t, 2, (int64_t[]){2, 3});
  kd_tensor_release(t);
  kd_tensor_release(rows);
  kd_tensor_release(tr);
  kd_tensor_release(base);
}

static void test_zeros_ones_full(void **state) {
  (void)state;
  int64_t sz[] = {2, 3};
  for (size_t i = 0; i < N_DTYPES; i++) {
    kd_dtype dt = all_dtypes[i];
    kd_tensor *t;
    KD_ASSERT_OK(kd__native_zeros(ints(sz, 2), &dt, NULL, NULL, NULL, &t));
    assert_int_equal(kd_tensor_dtype(t), dt);
    assert_sizes(t, 2, sz);
    assert_all(t, 0);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd__native_ones(ints(sz, 2), &dt, NULL, NULL, NULL, &t));
    assert_all(t, 1);
    kd_tensor_release(t);
    kd_scalar v = kd_scalar_int(dt == KD_BOOL ? 1 : 7);
    KD_ASSERT_OK(kd__native_full(ints(sz, 2), &v, &dt, NULL, NULL, NULL, &t));
    assert_all(t, dt == KD_BOOL ? 1 : 7);
    kd_tensor_release(t);
  }
  kd_tensor *t;
  /* default dtype and full's inference */
  KD_ASSERT_OK(kd__native_zeros(ints(sz, 2), NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT32);
  kd_tensor_release(t);
  kd_scalar vb = kd_scalar_bool(true), vi = kd_scalar_int(3), vd = kd_scalar_double(2.5),
            vc = kd_scalar_complex(1, 2);
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vb, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_BOOL);
  assert_all(t, 1);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vi, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_INT64);
  assert_all(t, 3);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vd, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT32);
  assert_all(t, 2.5);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vc, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_COMPLEX64);
  kd_scalar got;
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){1, 2}, &got));
  assert_true(got.kind == KD_SCALAR_COMPLEX && got.v.c.re == 1 && got.v.c.im == 2);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vc, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_COMPLEX128);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_ones(ints(sz, 2), NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT64);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
  /* float into an integer dtype truncates; out of range is an error */
  kd_dtype i8 = KD_INT8;
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vd, &i8, NULL, NULL, NULL, &t));
  assert_all(t, 2);
  kd_tensor_release(t);
  kd_scalar big = kd_scalar_int(300);
  KD_ASSERT_ERR(kd__native_full(ints(sz, 2), &big, &i8, NULL, NULL, NULL, &t), KD_EOVERFLOW,
                "300");
  assert_null(t);
  /* zero-size, meta */
  int64_t z[] = {3, 0};
  KD_ASSERT_OK(kd__native_ones(ints(z, 2), NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_numel(t), 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_full(ints(sz, 2), &vd, NULL, NULL, &meta, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  assert_sizes(t, 2, sz);
  kd_tensor_release(t);
  int64_t neg[] = {-3};
  KD_ASSERT_ERR(kd__native_zeros(ints(neg, 1), NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "negative dimension -3");
}

static void test_out_and_like(void **state) {
  (void)state;
  kd_tensor *out, *t;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_INT32, kd_device_cpu(), &out));
  int64_t sz[] = {2, 2};
  KD_ASSERT_OK(kd__native_ones_out(ints(sz, 2), out));
  assert_sizes(out, 2, sz);
  assert_int_equal(kd_tensor_dtype(out), KD_INT32);
  assert_all(out, 1);
  KD_ASSERT_OK(kd__native_zeros_out(ints(sz, 2), out));
  assert_all(out, 0);
  kd_scalar v = kd_scalar_double(-4.0);
  KD_ASSERT_OK(kd__native_full_out(ints((int64_t[]){3}, 1), &v, out));
  assert_sizes(out, 1, (int64_t[]){3});
  assert_all(out, -4);
  kd_scalar big = kd_scalar_double(1e20);
  KD_ASSERT_ERR(kd__native_full_out(ints(sz, 2), &big, out), KD_EOVERFLOW, "");
  assert_sizes(out, 1, (int64_t[]){3}); /* unchanged */
  kd_tensor_release(out);

  /* a transposed out of the right size keeps its strides */
  kd_tensor *base, *tr;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 2}, KD_FLOAT32, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &tr));
  kd_scalar five = kd_scalar_int(5);
  KD_ASSERT_OK(kd__native_full_out(ints((int64_t[]){2, 3}, 2), &five, tr));
  assert_int_equal(kd_tensor_stride(tr, 0), 1);
  assert_int_equal(kd_tensor_stride(tr, 1), 2);
  assert_all(base, 5);

  /* _like keep dtype, device, strides */
  KD_ASSERT_OK(kd__native_zeros_like(tr, NULL, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_stride(t, 0), 1);
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT32);
  assert_all(t, 0);
  kd_tensor_release(t);
  kd_dtype c128 = KD_COMPLEX128;
  KD_ASSERT_OK(kd__native_ones_like(tr, &c128, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_COMPLEX128);
  assert_all(t, 1);
  kd_tensor_release(t);
  kd_scalar h = kd_scalar_double(0.5);
  KD_ASSERT_OK(kd__native_full_like(tr, &h, NULL, NULL, NULL, NULL, NULL, &t));
  assert_all(t, 0.5);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_full_like(tr, &h, NULL, NULL, &meta, NULL, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  kd_tensor_release(t);
  kd_dtype i64 = KD_INT64;
  KD_ASSERT_OK(kd__native_full_like(tr, &h, &i64, NULL, NULL, NULL, NULL, &t));
  assert_all(t, 0);
  kd_tensor_release(t);
  kd_tensor_release(tr);
  kd_tensor_release(base);

  /* meta out */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, meta, &out));
  KD_ASSERT_OK(kd__native_ones_out(ints((int64_t[]){4, 5}, 2), out));
  assert_sizes(out, 2, (int64_t[]){4, 5});
  kd_tensor_release(out);
}

static void check_arange(kd_tensor *t, kd_dtype dt, int64_t n, double start, double step) {
  assert_int_equal(kd_tensor_dtype(t), dt);
  assert_sizes(t, 1, &n);
  for (int64_t i = 0; i < n; i++)
    if (at(t, i) != start + step * (double)i)
      fail_msg("arange[%lld] = %g, expected %g", (long long)i, at(t, i), start + step * (double)i);
  kd_tensor_release(t);
}

static void test_arange(void **state) {
  (void)state;
  kd_tensor *t;
  kd_scalar i0 = kd_scalar_int(0), i5 = kd_scalar_int(5), i10 = kd_scalar_int(10),
            i3 = kd_scalar_int(3), im3 = kd_scalar_int(-3), d1 = kd_scalar_double(1.0),
            q = kd_scalar_double(0.25), d25 = kd_scalar_double(2.5), h = kd_scalar_double(0.5),
            i1 = kd_scalar_int(1);
  KD_ASSERT_OK(kd__native_arange(&i5, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 5, 0, 1);
  KD_ASSERT_OK(kd__native_arange_start(&i3, &i10, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 7, 3, 1);
  KD_ASSERT_OK(kd__native_arange_start_step(&i0, &i10, &i3, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 4, 0, 3); /* 0 3 6 9 */
  KD_ASSERT_OK(kd__native_arange_start_step(&i10, &i0, &im3, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 4, 10, -3); /* 10 7 4 1 */
  /* any float argument gives the default dtype */
  KD_ASSERT_OK(kd__native_arange_start_step(&i0, &d1, &q, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT32, 4, 0, 0.25);
  KD_ASSERT_OK(kd__native_arange(&d25, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT32, 3, 0, 1);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  KD_ASSERT_OK(kd__native_arange_start_step(&d1, &d25, &h, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT64, 3, 1, 0.5);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
  /* every dtype arange supports */
  const kd_dtype dts[] = {KD_UINT8,   KD_INT8,     KD_INT16,   KD_INT32,
                          KD_INT64,   KD_FLOAT16,  KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    KD_ASSERT_OK(kd__native_arange_start_step(&i1, &i10, &i3, &dts[i], NULL, NULL, NULL, &t));
    check_arange(t, dts[i], 3, 1, 3);
  }
  kd_dtype f16 = KD_FLOAT16;
  KD_ASSERT_OK(kd__native_arange_start_step(&i0, &d1, &q, &f16, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT16, 4, 0, 0.25);
  /* PyTorch's integer quirks: int64 truncates the bounds first, other
   * integer dtypes size from the real bounds */
  kd_dtype i64 = KD_INT64, i32 = KD_INT32;
  KD_ASSERT_OK(kd__native_arange_start_step(&i0, &d25, &i1, &i64, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 2, 0, 1);
  KD_ASSERT_OK(kd__native_arange_start_step(&i0, &d25, &i1, &i32, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT32, 3, 0, 1);
  /* empty range */
  KD_ASSERT_OK(kd__native_arange_start(&i5, &i5, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 0, 0, 1);
  /* errors */
  KD_ASSERT_ERR(kd__native_arange_start_step(&i0, &i10, &i0, NULL, NULL, NULL, NULL, &t),
                KD_EINVAL, "step must be nonzero");
  assert_null(t);
  KD_ASSERT_ERR(kd__native_arange_start_step(&i0, &d1, &h, &i64, NULL, NULL, NULL, &t), KD_EINVAL,
                "step must be nonzero"); /* 0.5 truncates to 0 */
  KD_ASSERT_ERR(kd__native_arange_start_step(&i0, &i10, &im3, NULL, NULL, NULL, NULL, &t),
                KD_EINVAL, "upper bound and larger bound inconsistent with step sign");
  kd_scalar nan_s = kd_scalar_double(NAN);
  KD_ASSERT_ERR(kd__native_arange(&nan_s, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "unsupported range: 0 -> nan");
  kd_dtype b = KD_BOOL;
  KD_ASSERT_ERR(kd__native_arange(&i5, &b, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"arange_cpu\" not implemented for 'bool'");
  kd_scalar huge = kd_scalar_double(1e300);
  KD_ASSERT_ERR(kd__native_arange_start_step(&i0, &huge, &q, NULL, NULL, NULL, NULL, &t),
                KD_EINVAL, "invalid size, possible overflow?");
  kd_scalar mx = kd_scalar_int(INT64_MAX), mn = kd_scalar_int(INT64_MIN);
  KD_ASSERT_ERR(kd__native_arange_start(&mn, &mx, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "possible overflow");
  /* meta */
  KD_ASSERT_OK(kd__native_arange(&i10, NULL, NULL, &meta, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  assert_sizes(t, 1, (int64_t[]){10});
  kd_tensor_release(t);
}

static void test_arange_out(void **state) {
  (void)state;
  kd_tensor *out;
  kd_scalar i4 = kd_scalar_int(4), i0 = kd_scalar_int(0), i1 = kd_scalar_int(1);
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 2}, KD_FLOAT64, kd_device_cpu(), &out));
  /* four elements already: PyTorch keeps out's shape */
  KD_ASSERT_OK(kd__native_arange_out(&i4, out));
  assert_sizes(out, 2, (int64_t[]){2, 2});
  for (int i = 0; i < 4; i++) assert_true(at(out, i) == i);
  kd_scalar i6 = kd_scalar_int(6);
  KD_ASSERT_OK(kd__native_arange_start_out(&i0, &i6, &i1, out));
  assert_sizes(out, 1, (int64_t[]){6});
  for (int i = 0; i < 6; i++) assert_true(at(out, i) == i);
  kd_tensor_release(out);
  /* non-contiguous out */
  kd_tensor *base, *every2;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){8}, KD_INT16, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){4}, (int64_t[]){2}, 0, &every2));
  KD_ASSERT_OK(kd__native_arange_out(&i4, every2));
  for (int i = 0; i < 4; i++) assert_true(at(base, 2 * i) == i);
  kd_tensor_release(every2);
  kd_tensor_release(base);
  /* out's dtype decides */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_BOOL, kd_device_cpu(), &out));
  KD_ASSERT_ERR(kd__native_arange_out(&i4, out), KD_ENOKERNEL, "not implemented for 'bool'");
  kd_tensor_release(out);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, meta, &out));
  KD_ASSERT_OK(kd__native_arange_out(&i4, out));
  assert_sizes(out, 1, (int64_t[]){4});
  kd_tensor_release(out);
}

static void test_eye(void **state) {
  (void)state;
  kd_tensor *t;
  for (size_t i = 0; i < N_DTYPES; i++) {
    KD_ASSERT_OK(kd__native_eye_m(2, 3, &all_dtypes[i], NULL, NULL, NULL, &t));
    assert_int_equal(kd_tensor_dtype(t), all_dtypes[i]);
    assert_sizes(t, 2, (int64_t[]){2, 3});
    const double expect[] = {1, 0, 0, 0, 1, 0};
    for (int k = 0; k < 6; k++) assert_true(at(t, k) == expect[k]);
    kd_tensor_release(t);
  }
  KD_ASSERT_OK(kd__native_eye(3, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT32);
  for (int k = 0; k < 9; k++) assert_true(at(t, k) == (k % 4 == 0));
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_eye_m(3, 1, NULL, NULL, NULL, NULL, &t));
  for (int k = 0; k < 3; k++) assert_true(at(t, k) == (k == 0));
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_eye(0, NULL, NULL, NULL, NULL, &t));
  assert_sizes(t, 2, (int64_t[]){0, 0});
  kd_tensor_release(t);
  KD_ASSERT_ERR(kd__native_eye(-1, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "n must be greater or equal to 0, got -1");
  KD_ASSERT_ERR(kd__native_eye_m(2, -2, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "m must be greater or equal to 0, got -2");
  KD_ASSERT_OK(kd__native_eye(4, NULL, NULL, &meta, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  kd_tensor_release(t);
  /* out: resized, and a transposed out of the right shape is written in place */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){5}, KD_INT64, kd_device_cpu(), &out));
  KD_ASSERT_OK(kd__native_eye_out_cpu(2, out));
  assert_sizes(out, 2, (int64_t[]){2, 2});
  for (int k = 0; k < 4; k++) assert_true(at(out, k) == (k % 3 == 0));
  kd_tensor_release(out);
  kd_tensor *base, *tr;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 2}, KD_FLOAT64, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &tr));
  KD_ASSERT_OK(kd__native_eye_m_out_cpu(2, 3, tr));
  const double expect[] = {1, 0, 0, 0, 1, 0};
  for (int k = 0; k < 6; k++) assert_true(at(tr, k) == expect[k]);
  kd_tensor_release(tr);
  kd_tensor_release(base);
}

/* ---- rand / randn ---------------------------------------------------------------- */

static void moments(const kd_tensor *t, double *mean, double *var, double *lo, double *hi) {
  int64_t n = kd_tensor_numel(t);
  double s = 0, s2 = 0;
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double v = at(t, i);
    s += v;
    s2 += v * v;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
  *mean = s / (double)n;
  *var = s2 / (double)n - *mean * *mean;
}

static void test_rand_reproducible(void **state) {
  (void)state;
  int64_t sz[] = {1000};
  kd_tensor *a, *b, *c;
  kd_manual_seed(42);
  KD_ASSERT_OK(kd__native_rand(ints(sz, 1), NULL, NULL, NULL, NULL, &a));
  KD_ASSERT_OK(kd__native_randn(ints(sz, 1), NULL, NULL, NULL, NULL, &c));
  kd_manual_seed(42);
  KD_ASSERT_OK(kd__native_rand_generator(ints(sz, 1), NULL, NULL, NULL, NULL, NULL, &b));
  assert_memory_equal(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float));
  kd_tensor_release(b);
  KD_ASSERT_OK(kd__native_randn(ints(sz, 1), NULL, NULL, NULL, NULL, &b));
  assert_memory_equal(kd_tensor_data(c), kd_tensor_data(b), 1000 * sizeof(float));
  kd_tensor_release(b);
  kd_tensor_release(c);
  /* the next call differs from the first */
  KD_ASSERT_OK(kd__native_rand(ints(sz, 1), NULL, NULL, NULL, NULL, &b));
  assert_true(memcmp(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float)) != 0);
  kd_tensor_release(b);
  /* another seed differs */
  kd_manual_seed(43);
  KD_ASSERT_OK(kd__native_rand(ints(sz, 1), NULL, NULL, NULL, NULL, &b));
  assert_true(memcmp(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float)) != 0);
  kd_tensor_release(b);
  kd_tensor_release(a);
}

static void test_rand_distribution(void **state) {
  (void)state;
  const kd_dtype dts[] = {KD_FLOAT32, KD_FLOAT64, KD_FLOAT16, KD_BFLOAT16};
  int64_t sz[] = {200, 500};
  kd_manual_seed(7);
  for (size_t i = 0; i < 4; i++) {
    kd_tensor *t;
    double mean, var, lo, hi;
    KD_ASSERT_OK(kd__native_rand(ints(sz, 2), &dts[i], NULL, NULL, NULL, &t));
    assert_int_equal(kd_tensor_dtype(t), dts[i]);
    moments(t, &mean, &var, &lo, &hi);
    if (fabs(mean - 0.5) > 0.01 || fabs(var - 1.0 / 12) > 0.005 || lo < 0 || hi >= 1 ||
        lo > 0.01 || hi < 0.99)
      fail_msg("rand %s: mean %g var %g range [%g, %g]", kd_dtype_name(dts[i]), mean, var, lo, hi);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd__native_randn(ints(sz, 2), &dts[i], NULL, NULL, NULL, &t));
    moments(t, &mean, &var, &lo, &hi);
    if (fabs(mean) > 0.02 || fabs(var - 1) > 0.03 || lo > -3 || hi < 3)
      fail_msg("randn %s: mean %g var %g range [%g, %g]", kd_dtype_name(dts[i]), mean, var, lo, hi);
    kd_tensor_release(t);
  }
  /* complex: both parts random; randn parts of variance 1/2 */
  kd_dtype c64 = KD_COMPLEX64;
  kd_tensor *t;
  KD_ASSERT_OK(kd__native_randn(ints(sz, 2), &c64, NULL, NULL, NULL, &t));
  const float *f = kd_tensor_data(t);
  double s2re = 0, s2im = 0;
  for (int64_t i = 0; i < 100000; i++) {
    s2re += (double)f[2 * i] * f[2 * i];
    s2im += (double)f[2 * i + 1] * f[2 * i + 1];
  }
  assert_true(fabs(s2re / 100000 - 0.5) < 0.02 && fabs(s2im / 100000 - 0.5) < 0.02);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd__native_rand(ints(sz, 2), &c64, NULL, NULL, NULL, &t));
  f = kd_tensor_data(t);
  double sim = 0;
  for (int64_t i = 0; i < 100000; i++) sim += f[2 * i + 1];
  assert_true(fabs(sim / 100000 - 0.5) < 0.01);
  kd_tensor_release(t);
}

static void test_rand_errors_out_meta(void **state) {
  (void)state;
  int64_t sz[] = {3, 4};
  kd_tensor *t;
  kd_dtype i64 = KD_INT64, b = KD_BOOL;
  KD_ASSERT_ERR(kd__native_rand(ints(sz, 2), &i64, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"check_uniform_bounds\" not implemented for 'Long'");
  assert_null(t);
  KD_ASSERT_ERR(kd__native_randn(ints(sz, 2), &b, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"normal_kernel_cpu\" not implemented for 'Bool'");
  kd_value gen = kd_value_int(3);
  KD_ASSERT_ERR(kd__native_rand_generator(ints(sz, 2), &gen, NULL, NULL, NULL, NULL, &t),
                KD_EUNSUPPORTED, "generators are not supported");
  kd_value none = kd_value_none();
  KD_ASSERT_OK(kd__native_randn_generator(ints(sz, 2), &none, NULL, NULL, NULL, NULL, &t));
  kd_tensor_release(t);
  /* out variants resize */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT64, kd_device_cpu(), &out));
  KD_ASSERT_OK(kd__native_rand_out(ints(sz, 2), out));
  assert_sizes(out, 2, sz);
  for (int i = 0; i < 12; i++) assert_true(at(out, i) >= 0 && at(out, i) < 1);
  KD_ASSERT_OK(kd__native_randn_out(ints((int64_t[]){5}, 1), out));
  assert_sizes(out, 1, (int64_t[]){5});
  KD_ASSERT_OK(kd__native_rand_generator_out(ints((int64_t[]){5}, 1), NULL, out));
  KD_ASSERT_OK(kd__native_randn_generator_out(ints((int64_t[]){5}, 1), NULL, out));
  kd_tensor_release(out);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_INT32, kd_device_cpu(), &out));
  KD_ASSERT_ERR(kd__native_rand_out(ints(sz, 2), out), KD_ENOKERNEL, "'Int'");
  assert_sizes(out, 1, (int64_t[]){2}); /* unchanged */
  kd_tensor_release(out);
  /* non-contiguous out is written through its strides */
  kd_tensor *base, *every2;
  KD_ASSERT_OK(kd__native_zeros(ints((int64_t[]){8}, 1), NULL, NULL, NULL, NULL, &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){4}, (int64_t[]){2}, 0, &every2));
  KD_ASSERT_OK(kd__native_rand_out(ints((int64_t[]){4}, 1), every2));
  for (int i = 0; i < 4; i++) assert_true(at(base, 2 * i + 1) == 0);
  kd_tensor_release(every2);
  kd_tensor_release(base);
  /* meta: shape only */
  KD_ASSERT_OK(kd__native_randn(ints(sz, 2), NULL, NULL, &meta, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  assert_sizes(t, 2, sz);
  kd_tensor_release(t);
  /* zero elements */
  KD_ASSERT_OK(kd__native_rand(ints((int64_t[]){0}, 1), NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_numel(t), 0);
  kd_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_empty_like),
      cmocka_unit_test(test_zeros_ones_full),
      cmocka_unit_test(test_out_and_like),
      cmocka_unit_test(test_arange),
      cmocka_unit_test(test_arange_out),
      cmocka_unit_test(test_eye),
      cmocka_unit_test(test_rand_reproducible),
      cmocka_unit_test(test_rand_distribution),
      cmocka_unit_test(test_rand_errors_out_meta),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
