/*
 * test_factories.c: the factory operators (ops/native/factories.c,
 * random.c) through the generated entry points: empty.memory_format,
 * empty_like, zeros, ones, full (their _like and out variants), arange (its
 * overloads and out variants), eye (and .m, .out, .m_out), rand and randn
 * (and .generator, .out, .generator_out) with the seedable default
 * generator (kd_manual_seed).
 *
 * A factory has no tensor argument: the dispatcher finds the backend from
 * its `device` argument (cpu when NULL), so meta results come from
 * device=meta. Values are worked out by hand, every dtype each operator
 * supports is run, and errors are checked by status and message.
 */
#include "ops_check.h"
#include "native/factories.h"

/* Every element of t equals `expect`. */
static void expect_all(const kd_tensor *t, double expect) {
  for (int64_t i = 0; i < kd_tensor_numel(t); i++)
    if (oc_at(t, i) != expect)
      fail_msg("%s element %lld: %g != %g", kd_dtype_name(kd_tensor_dtype(t)), (long long)i,
               oc_at(t, i), expect);
}

static const kd_dtype F16 = KD_FLOAT16, I8 = KD_INT8, I16 = KD_INT16, I32 = KD_INT32,
                      I64 = KD_INT64, F64 = KD_FLOAT64, C128 = KD_COMPLEX128, BOOL_ = KD_BOOL;

/* ---- empty, empty_like ------------------------------------------------------------------- */

static void test_empty(void **state) {
  (void)state;
  oc_open();
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_empty_memory_format(INTS(2, 3), NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, kd_get_default_dtype(), KD_DEVICE_CPU, 2, 3);
  /* Regression: a device whose backend has no kernel used to send the
   * backend-select composite back to itself until the stack overflowed. */
  kd_device no_backend = {KD_DEVICE_CUDA, 0};
  kd_tensor *none = NULL;
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), NULL, NULL, &no_backend, NULL, NULL, &none),
                KD_ENOKERNEL,
                "Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' backend");
  assert_null(none);
  EXPECT_GEOM(t, (2, 3), (3, 1), 0);
  assert_non_null(kd_tensor_data(t));
  kd_tensor_release(t);
  /* Every option given; channels_last strides for NCHW [2, 3, 4, 5]. */
  kd_layout strided = KD_LAYOUT_STRIDED;
  kd_device cpu = kd_device_cpu();
  bool no = false;
  kd_memory_format cl = KD_MEMORY_FORMAT_CHANNELS_LAST, cl3 = KD_MEMORY_FORMAT_CHANNELS_LAST_3D,
                   cf = KD_MEMORY_FORMAT_CONTIGUOUS;
  KD_ASSERT_OK(kd_empty_memory_format(INTS(2, 3, 4, 5), &I16, &strided, &cpu, &no, &cl, &t));
  EXPECT_SHAPE(t, KD_INT16, KD_DEVICE_CPU, 2, 3, 4, 5);
  EXPECT_GEOM(t, (2, 3, 4, 5), (60, 1, 15, 3), 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_empty_memory_format(INTS(1, 2, 2, 2, 2), NULL, NULL, NULL, NULL, &cl3, &t));
  EXPECT_GEOM(t, (1, 2, 2, 2, 2), (16, 1, 8, 4, 2), 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_empty_memory_format(INTS(2, 2), NULL, NULL, NULL, NULL, &cf, &t));
  EXPECT_GEOM(t, (2, 2), (2, 1), 0);
  kd_tensor_release(t);
  /* Every dtype, on cpu and on meta. */
  for (int i = 0; i < OC_NALL; i++) {
    kd_dtype dt = OC_ALL[i];
    KD_ASSERT_OK(kd_empty_memory_format(INTS(3, 2), &dt, NULL, NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_CPU, 3, 2);
    assert_true(kd_tensor_is_contiguous(t));
    assert_non_null(kd_tensor_data(t));
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_empty_memory_format(INTS(3, 2), &dt, NULL, &OC_META, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 3, 2);
    EXPECT_GEOM(t, (3, 2), (2, 1), 0);
    kd_tensor_release(t);
  }
  /* Zero-size and 0-dim. */
  KD_ASSERT_OK(kd_empty_memory_format(INTS(0, 4), NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 0, 4);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_empty_memory_format(NO_INTS, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE0(t, KD_FLOAT32, KD_DEVICE_CPU);
  assert_int_equal(kd_tensor_numel(t), 1);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_empty_memory_format(INTS(2, 0, 3, 3), NULL, NULL, &OC_META, NULL, &cl, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_META, 2, 0, 3, 3);
  kd_tensor_release(t);
  /* Errors. */
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, -1), NULL, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "Trying to create tensor with negative dimension -1: [2, -1]");
  assert_null(t);
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(-2), NULL, NULL, &OC_META, NULL, NULL, &t), KD_EINVAL,
                "Trying to create tensor with negative dimension -2: [-2]");
  /* Too many elements, on both the contiguous path and the strided one. */
  KD_ASSERT_ERR(
      kd_empty_memory_format(INTS(1LL << 40, 1LL << 40), NULL, NULL, NULL, NULL, NULL, &t),
      KD_EOVERFLOW, "empty: tensor too large");
  assert_null(t);
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(1LL << 20, 1LL << 20, 1LL << 20, 1LL << 20), NULL, NULL,
                                       NULL, NULL, &cl, &t),
                KD_EOVERFLOW, "empty: tensor too large");
  assert_null(t);
  kd_layout coo = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), NULL, &coo, NULL, NULL, NULL, &t),
                KD_EUNSUPPORTED, "layout sparse_coo is not supported");
  bool yes = true;
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), NULL, NULL, NULL, &yes, NULL, &t),
                KD_EUNSUPPORTED, "pin_memory");
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), NULL, NULL, NULL, NULL, &cl, &t), KD_EINVAL,
                "required rank 4 tensor to use channels_last format");
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), NULL, NULL, NULL, NULL, &cl3, &t), KD_EINVAL,
                "required rank 5 tensor to use channels_last_3d format");
  kd_memory_format pr = KD_MEMORY_FORMAT_PRESERVE;
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), NULL, NULL, NULL, NULL, &pr, &t), KD_EINVAL,
                "Unsupported memory format. Preserve");
  kd_dtype bad = (kd_dtype)99;
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2, 3), &bad, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "invalid dtype");
  kd_device cpu1 = {KD_DEVICE_CPU, 1};
  KD_ASSERT_ERR(kd_empty_memory_format(INTS(2), NULL, NULL, &cpu1, NULL, NULL, &t), KD_EINVAL,
                "cpu has only device index 0");
  /* Direct calls only: a kernel given the other backend's device (the
   * dispatcher routes by device), and a device with no kernel at all. */
  KD_ASSERT_ERR(kdk_native_empty_cpu(INTS(2), NULL, NULL, &OC_META, NULL, NULL, &t), KD_EINVAL,
                "expected a cpu device");
  KD_ASSERT_ERR(kdk_native_empty_meta(INTS(2), NULL, NULL, &cpu, NULL, NULL, &t), KD_EINVAL,
                "expected a meta device");
  kd_device cuda = {KD_DEVICE_CUDA, 0};
  KD_ASSERT_ERR(kdk_native_empty_cpu(INTS(2), NULL, NULL, &cuda, NULL, NULL, &t), KD_EUNSUPPORTED,
                "device 'cuda:0' is not supported");
}

static void test_empty_like(void **state) {
  (void)state;
  oc_open();
  kd_tensor *base = EMPTY(KD_FLOAT64, 3, 2), *tr = NULL, *t = NULL, *rows = NULL;
  /* A transposed view [2, 3] with strides [1, 2]: dense, so its strides are kept. */
  KD_ASSERT_OK(kd_t(base, &tr));
  KD_ASSERT_OK(kd_empty_like(tr, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT64, KD_DEVICE_CPU, 2, 3);
  EXPECT_GEOM(t, (2, 3), (1, 2), 0);
  assert_false(kd_tensor_shares_storage(t, base));
  kd_tensor_release(t);
  kd_memory_format cf = KD_MEMORY_FORMAT_CONTIGUOUS, cl = KD_MEMORY_FORMAT_CHANNELS_LAST;
  KD_ASSERT_OK(kd_empty_like(tr, &I8, NULL, NULL, NULL, &cf, &t));
  EXPECT_SHAPE(t, KD_INT8, KD_DEVICE_CPU, 2, 3);
  EXPECT_GEOM(t, (2, 3), (3, 1), 0);
  kd_tensor_release(t);
  /* A non-dense view (every other row) gives a contiguous result. */
  kd_tensor *tall = EMPTY(KD_FLOAT64, 4, 2);
  KD_ASSERT_OK(kd_slice_Tensor(tall, 0, NULL, NULL, 2, &rows)); /* [2, 2] strides [4, 1] */
  KD_ASSERT_OK(kd_empty_like(rows, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_GEOM(t, (2, 2), (2, 1), 0);
  kd_tensor_release(t);
  /* channels_last is kept by preserve, and asked for on 4-d only. */
  kd_tensor *img = EMPTY(KD_FLOAT32, 1, 2, 3, 3), *img_cl = NULL;
  KD_ASSERT_OK(kd_empty_like(img, NULL, NULL, NULL, NULL, &cl, &img_cl));
  EXPECT_GEOM(img_cl, (1, 2, 3, 3), (18, 1, 6, 2), 0);
  KD_ASSERT_OK(kd_empty_like(img_cl, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_GEOM(t, (1, 2, 3, 3), (18, 1, 6, 2), 0);
  kd_tensor_release(t);
  KD_ASSERT_ERR(kd_empty_like(tr, NULL, NULL, NULL, NULL, &cl, &t), KD_EINVAL,
                "required rank 4 tensor to use channels_last format");
  assert_null(t);
  /* Every dtype; to meta through device; a meta self gives a meta result. */
  for (int i = 0; i < OC_NALL; i++) {
    kd_dtype dt = OC_ALL[i];
    KD_ASSERT_OK(kd_empty_like(tr, &dt, NULL, &OC_META, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 2, 3);
    EXPECT_GEOM(t, (2, 3), (1, 2), 0);
    kd_tensor *back = NULL;
    KD_ASSERT_OK(kd_empty_like(t, NULL, NULL, NULL, NULL, NULL, &back));
    EXPECT_SHAPE(back, dt, KD_DEVICE_META, 2, 3);
    kd_tensor_release(back);
    kd_device cpu = kd_device_cpu();
    KD_ASSERT_OK(kd_empty_like(t, NULL, NULL, &cpu, NULL, NULL, &back));
    EXPECT_SHAPE(back, dt, KD_DEVICE_CPU, 2, 3);
    assert_non_null(kd_tensor_data(back));
    kd_tensor_release(back);
    kd_tensor_release(t);
  }
  /* Zero-size. */
  kd_tensor *z = EMPTY(KD_INT32, 0, 3);
  KD_ASSERT_OK(kd_empty_like(z, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_INT32, KD_DEVICE_CPU, 0, 3);
  kd_tensor_release(t);
  /* Errors. */
  kd_layout coo = KD_LAYOUT_SPARSE;
  bool yes = true;
  kd_dtype bad = (kd_dtype)-3;
  KD_ASSERT_ERR(kd_empty_like(tr, NULL, &coo, NULL, NULL, NULL, &t), KD_EUNSUPPORTED,
                "empty_like: layout sparse_coo is not supported");
  KD_ASSERT_ERR(kd_empty_like(tr, NULL, NULL, NULL, &yes, NULL, &t), KD_EUNSUPPORTED, "pin_memory");
  KD_ASSERT_ERR(kd_empty_like(tr, &bad, NULL, NULL, NULL, NULL, &t), KD_EINVAL, "invalid dtype");
  kd_device cuda = {KD_DEVICE_CUDA, 0};
  /* A device whose backend has no kernels: the composite reaches its slot
   * for the primitive (docs/OPS.md, "Device-neutral composites"). */
  KD_ASSERT_ERR(kd_empty_like(tr, NULL, NULL, &cuda, NULL, NULL, &t), KD_ENOKERNEL,
                "Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend");
  RELEASE(z, img_cl, img, rows, tall, tr, base);
}

/* ---- zeros, ones, full -------------------------------------------------------------------- */

static void test_zeros_ones_full(void **state) {
  (void)state;
  oc_open();
  kd_tensor *t = NULL;
  for (int i = 0; i < OC_NALL; i++) {
    kd_dtype dt = OC_ALL[i];
    KD_ASSERT_OK(kd_zeros(INTS(2, 3), &dt, NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_CPU, 2, 3);
    expect_all(t, 0);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_ones(INTS(2, 3), &dt, NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_CPU, 2, 3);
    expect_all(t, 1);
    kd_tensor_release(t);
    kd_scalar v = kd_scalar_int(dt == KD_BOOL ? 1 : 7);
    KD_ASSERT_OK(kd_full(INTS(2, 3), &v, &dt, NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_CPU, 2, 3);
    expect_all(t, dt == KD_BOOL ? 1 : 7);
    kd_tensor_release(t);
    /* meta: the dtype and sizes, no data */
    KD_ASSERT_OK(kd_zeros(INTS(4), &dt, NULL, &OC_META, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 4);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_ones(INTS(0, 2), &dt, NULL, &OC_META, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 0, 2);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_full(INTS(1, 1, 1), &v, &dt, NULL, &OC_META, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 1, 1, 1);
    kd_tensor_release(t);
  }
  /* The default dtype, and full's inference from the fill value. */
  KD_ASSERT_OK(kd_zeros(INTS(2, 3), NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 2, 3);
  kd_tensor_release(t);
  kd_scalar vb = kd_scalar_bool(true), vi = kd_scalar_int(3), vd = kd_scalar_double(2.5),
            vc = kd_scalar_complex(1, 2);
  KD_ASSERT_OK(kd_full(INTS(2, 3), &vb, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_BOOL, KD_DEVICE_CPU, 2, 3);
  expect_all(t, 1);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_full(INTS(2, 3), &vi, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_INT64, KD_DEVICE_CPU, 2, 3);
  expect_all(t, 3);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_full(INTS(2, 3), &vd, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 2, 3);
  expect_all(t, 2.5);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_full(INTS(2, 3), &vc, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_COMPLEX64, KD_DEVICE_CPU, 2, 3);
  kd_scalar got = oc_get(t, 5);
  assert_true(got.kind == KD_SCALAR_COMPLEX && got.v.c.re == 1 && got.v.c.im == 2);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_full(INTS(2), &vc, NULL, NULL, &OC_META, NULL, &t));
  EXPECT_SHAPE(t, KD_COMPLEX64, KD_DEVICE_META, 2);
  kd_tensor_release(t);
  /* With float64 as the default dtype. */
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  KD_ASSERT_OK(kd_full(INTS(2, 3), &vc, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_COMPLEX128);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_ones(INTS(2, 3), NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT64);
  kd_tensor_release(t);
  /* empty's one-piece path (cpu:0, strided, contiguous, every option given)
   * reads the default dtype too */
  {
    kd_device cpu0 = kd_device_cpu();
    kd_layout strided = KD_LAYOUT_STRIDED;
    kd_memory_format contig = KD_MEMORY_FORMAT_CONTIGUOUS;
    bool no = false;
    KD_ASSERT_OK(kd_empty_memory_format(INTS(2, 3), NULL, &strided, &cpu0, &no, &contig, &t));
    EXPECT_SHAPE(t, KD_FLOAT64, KD_DEVICE_CPU, 2, 3);
    kd_tensor_release(t);
    kd_device cpu1 = {KD_DEVICE_CPU, 1};
    KD_ASSERT_ERR(kd_empty_memory_format(INTS(2), NULL, NULL, &cpu1, NULL, NULL, &t), KD_EINVAL,
                  "empty: cpu has only device index 0");
    assert_null(t);
  }
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
  /* A float into an integer dtype truncates; one out of range is an error. */
  KD_ASSERT_OK(kd_full(INTS(2, 3), &vd, &I8, NULL, NULL, NULL, &t));
  expect_all(t, 2);
  kd_tensor_release(t);
  kd_scalar big = kd_scalar_int(300), nan_v = kd_scalar_double(NAN);
  KD_ASSERT_ERR(kd_full(INTS(2, 3), &big, &I8, NULL, NULL, NULL, &t), KD_EOVERFLOW, "300");
  assert_null(t);
  KD_ASSERT_ERR(kd_full(INTS(2, 3), &vc, &I32, NULL, NULL, NULL, &t), KD_ETYPE,
                "full: value (1+2j) cannot be converted to type int32: it has an imaginary part");
  KD_ASSERT_OK(kd_full(INTS(2), &nan_v, NULL, NULL, NULL, NULL, &t)); /* NaN into float32 */
  assert_true(isnan(oc_at(t, 1)));
  kd_tensor_release(t);
  /* Zero-size and 0-dim. */
  KD_ASSERT_OK(kd_ones(INTS(3, 0), NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 3, 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_full(NO_INTS, &vi, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE0(t, KD_INT64, KD_DEVICE_CPU);
  expect_all(t, 3);
  kd_tensor_release(t);
  /* Invalid sizes and options. */
  KD_ASSERT_ERR(kd_zeros(INTS(-3), NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "zeros: Trying to create tensor with negative dimension -3: [-3]");
  KD_ASSERT_ERR(kd_ones(INTS(2, -1), NULL, NULL, &OC_META, NULL, &t), KD_EINVAL,
                "ones: Trying to create tensor with negative dimension -1: [2, -1]");
  KD_ASSERT_ERR(kd_full(INTS(1, -2), &vi, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "full: Trying to create tensor with negative dimension -2: [1, -2]");
  kd_layout coo = KD_LAYOUT_SPARSE;
  kd_device cuda = {KD_DEVICE_CUDA, 0};
  bool yes = true;
  KD_ASSERT_ERR(kd_zeros(INTS(2), NULL, &coo, NULL, NULL, &t), KD_EUNSUPPORTED,
                "zeros: layout sparse_coo is not supported");
  KD_ASSERT_ERR(kd_ones(INTS(2), NULL, NULL, &cuda, NULL, &t), KD_ENOKERNEL,
                "Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' "
                "backend");
  KD_ASSERT_ERR(kd_full(INTS(2), &vi, NULL, NULL, NULL, &yes, &t), KD_EUNSUPPORTED, "pin_memory");
}

static void test_zeros_ones_full_out(void **state) {
  (void)state;
  oc_open();
  kd_tensor *out = EMPTY(KD_INT32, 0);
  KD_ASSERT_OK(kd_ones_out(INTS(2, 2), out));
  EXPECT_SHAPE(out, KD_INT32, KD_DEVICE_CPU, 2, 2); /* out's dtype is kept */
  expect_all(out, 1);
  KD_ASSERT_OK(kd_zeros_out(INTS(2, 2), out));
  expect_all(out, 0);
  kd_scalar v = kd_scalar_double(-4.0);
  KD_ASSERT_OK(kd_full_out(INTS(3), &v, out));
  EXPECT_SHAPE(out, KD_INT32, KD_DEVICE_CPU, 3);
  expect_all(out, -4);
  /* A value out's dtype cannot hold: an error, out unchanged. */
  kd_scalar huge = kd_scalar_double(1e20);
  KD_ASSERT_ERR(kd_full_out(INTS(2, 2), &huge, out), KD_EOVERFLOW,
                "full: value 1e+20 cannot be converted to type int32 without overflow");
  EXPECT_SHAPE(out, KD_INT32, KD_DEVICE_CPU, 3);
  expect_all(out, -4);
  KD_ASSERT_ERR(kd_zeros_out(INTS(-1), out), KD_EINVAL,
                "zeros: Trying to create tensor with negative dimension -1: [-1]");
  kd_tensor_release(out);
  /* Every dtype of out. */
  for (int i = 0; i < OC_NALL; i++) {
    kd_tensor *o = oc_empty(OC_ALL[i], 1, I(5));
    kd_scalar yes = kd_scalar_bool(true);
    KD_ASSERT_OK(kd_full_out(INTS(2, 1), &yes, o));
    EXPECT_SHAPE(o, OC_ALL[i], KD_DEVICE_CPU, 2, 1);
    expect_all(o, 1);
    KD_ASSERT_OK(kd_zeros_out(INTS(2, 1), o));
    expect_all(o, 0);
    kd_tensor_release(o);
  }
  /* A transposed out of the right sizes keeps its strides and writes through. */
  kd_tensor *base = EMPTY(KD_FLOAT32, 3, 2), *tr = NULL;
  KD_ASSERT_OK(kd_t(base, &tr));
  kd_scalar five = kd_scalar_int(5);
  KD_ASSERT_OK(kd_full_out(INTS(2, 3), &five, tr));
  EXPECT_GEOM(tr, (2, 3), (1, 2), 0);
  expect_all(base, 5);
  /* A sliced out (every other element) leaves the elements between alone. */
  kd_tensor *row = FROM(KD_INT64, (6), 9, 9, 9, 9, 9, 9), *every2 = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(row, 0, NULL, NULL, 2, &every2));
  KD_ASSERT_OK(kd_ones_out(INTS(3), every2));
  EXPECT_VALS(row, 1, 9, 1, 9, 1, 9);
  RELEASE(every2, row, tr, base);
  /* Meta out: resized, nothing written. */
  kd_tensor *mo = META(KD_FLOAT32, 1);
  KD_ASSERT_OK(kd_ones_out(INTS(4, 5), mo));
  EXPECT_SHAPE(mo, KD_FLOAT32, KD_DEVICE_META, 4, 5);
  KD_ASSERT_OK(kd_full_out(INTS(2), &five, mo));
  EXPECT_SHAPE(mo, KD_FLOAT32, KD_DEVICE_META, 2);
  kd_tensor_release(mo);
}

static void test_like(void **state) {
  (void)state;
  oc_open();
  /* self: a transposed view [2, 3] with strides [1, 2]. */
  kd_tensor *base = EMPTY(KD_FLOAT32, 3, 2), *tr = NULL, *t = NULL;
  KD_ASSERT_OK(kd_t(base, &tr));
  /* _like keep self's dtype, device and (dense) strides. */
  KD_ASSERT_OK(kd_zeros_like(tr, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 2, 3);
  EXPECT_GEOM(t, (2, 3), (1, 2), 0);
  expect_all(t, 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_ones_like(tr, &C128, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_COMPLEX128, KD_DEVICE_CPU, 2, 3);
  expect_all(t, 1);
  kd_tensor_release(t);
  kd_scalar h = kd_scalar_double(0.5), big = kd_scalar_int(1000);
  KD_ASSERT_OK(kd_full_like(tr, &h, NULL, NULL, NULL, NULL, NULL, &t));
  expect_all(t, 0.5);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_full_like(tr, &h, &I64, NULL, NULL, NULL, NULL, &t)); /* 0.5 truncates */
  EXPECT_SHAPE(t, KD_INT64, KD_DEVICE_CPU, 2, 3);
  expect_all(t, 0);
  kd_tensor_release(t);
  kd_memory_format cf = KD_MEMORY_FORMAT_CONTIGUOUS;
  KD_ASSERT_OK(kd_ones_like(tr, NULL, NULL, NULL, NULL, &cf, &t));
  EXPECT_GEOM(t, (2, 3), (3, 1), 0);
  kd_tensor_release(t);
  /* Every dtype, cpu and meta. */
  for (int i = 0; i < OC_NALL; i++) {
    kd_dtype dt = OC_ALL[i];
    KD_ASSERT_OK(kd_zeros_like(tr, &dt, NULL, NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_CPU, 2, 3);
    expect_all(t, 0);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_ones_like(tr, &dt, NULL, &OC_META, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 2, 3);
    kd_tensor *again = NULL; /* a meta self stays on meta */
    KD_ASSERT_OK(kd_full_like(t, &h, NULL, NULL, NULL, NULL, NULL, &again));
    EXPECT_SHAPE(again, dt, KD_DEVICE_META, 2, 3);
    kd_tensor_release(again);
    kd_tensor_release(t);
  }
  /* Zero-size self. */
  kd_tensor *z = EMPTY(KD_INT16, 2, 0);
  KD_ASSERT_OK(kd_full_like(z, &big, NULL, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_INT16, KD_DEVICE_CPU, 2, 0);
  kd_tensor_release(t);
  /* Errors: a value the dtype cannot hold, a layout, a device. */
  KD_ASSERT_ERR(kd_full_like(tr, &big, &I8, NULL, NULL, NULL, NULL, &t), KD_EOVERFLOW, "1000");
  assert_null(t);
  kd_layout coo = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_zeros_like(tr, NULL, &coo, NULL, NULL, NULL, &t), KD_EUNSUPPORTED,
                "zeros_like: layout sparse_coo is not supported");
  kd_device cuda = {KD_DEVICE_CUDA, 0};
  KD_ASSERT_ERR(kd_ones_like(tr, NULL, NULL, &cuda, NULL, NULL, &t), KD_ENOKERNEL,
                "Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend");
  RELEASE(z, tr, base);
}

/* ---- arange ---------------------------------------------------------------------------------- */

/* t is [n] of dtype dt holding start, start + step, ...; releases t. */
static void check_arange(kd_tensor *t, kd_dtype dt, int64_t n, double start, double step) {
  oc_expect_shape(t, 1, &n, dt, KD_DEVICE_CPU);
  for (int64_t i = 0; i < n; i++)
    if (oc_at(t, i) != start + step * (double)i)
      fail_msg("arange %s [%lld] = %g, expected %g", kd_dtype_name(dt), (long long)i, oc_at(t, i),
               start + step * (double)i);
  kd_tensor_release(t);
}

static void test_arange(void **state) {
  (void)state;
  oc_open();
  kd_tensor *t = NULL;
  kd_scalar i0 = kd_scalar_int(0), i5 = kd_scalar_int(5), i10 = kd_scalar_int(10),
            i3 = kd_scalar_int(3), im3 = kd_scalar_int(-3), d1 = kd_scalar_double(1.0),
            q = kd_scalar_double(0.25), d25 = kd_scalar_double(2.5), h = kd_scalar_double(0.5),
            i1 = kd_scalar_int(1), bt = kd_scalar_bool(true);
  KD_ASSERT_OK(kd_arange(&i5, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 5, 0, 1);
  KD_ASSERT_OK(kd_arange_start(&i3, &i10, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 7, 3, 1);
  KD_ASSERT_OK(kd_arange_start_step(&i0, &i10, &i3, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 4, 0, 3); /* 0 3 6 9 */
  KD_ASSERT_OK(kd_arange_start_step(&i10, &i0, &im3, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 4, 10, -3); /* 10 7 4 1 */
  KD_ASSERT_OK(kd_arange_start_step(&i0, &i5, NULL, NULL, NULL, NULL, NULL, &t)); /* step=1 */
  check_arange(t, KD_INT64, 5, 0, 1);
  KD_ASSERT_OK(kd_arange(&bt, NULL, NULL, NULL, NULL, &t)); /* a bool end counts as an integer */
  check_arange(t, KD_INT64, 1, 0, 1);
  /* Any float argument gives the default dtype. */
  KD_ASSERT_OK(kd_arange_start_step(&i0, &d1, &q, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT32, 4, 0, 0.25);
  KD_ASSERT_OK(kd_arange(&d25, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT32, 3, 0, 1);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  KD_ASSERT_OK(kd_arange_start_step(&d1, &d25, &h, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT64, 3, 1, 0.5);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
  /* Every dtype arange supports: 1, 4, 7. */
  const kd_dtype dts[] = {KD_UINT8,   KD_INT8,     KD_INT16,   KD_INT32, KD_INT64,
                          KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    KD_ASSERT_OK(kd_arange_start_step(&i1, &i10, &i3, &dts[i], NULL, NULL, NULL, &t));
    check_arange(t, dts[i], 3, 1, 3);
    KD_ASSERT_OK(kd_arange_start_step(&i1, &i10, &i3, &dts[i], NULL, &OC_META, NULL, &t));
    EXPECT_SHAPE(t, dts[i], KD_DEVICE_META, 3);
    kd_tensor_release(t);
  }
  KD_ASSERT_OK(kd_arange_start_step(&i0, &d1, &q, &F16, NULL, NULL, NULL, &t));
  check_arange(t, KD_FLOAT16, 4, 0, 0.25);
  /* PyTorch's integer quirks: int64 truncates the bounds first, other
   * integer dtypes size from the real bounds: [0, 2.5) is 0 1 in int64 but
   * 0 1 2 in int32. */
  KD_ASSERT_OK(kd_arange_start_step(&i0, &d25, &i1, &I64, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 2, 0, 1);
  KD_ASSERT_OK(kd_arange_start_step(&i0, &d25, &i1, &I32, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT32, 3, 0, 1);
  /* Empty ranges. */
  KD_ASSERT_OK(kd_arange_start(&i5, &i5, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 0, 0, 1);
  KD_ASSERT_OK(kd_arange(&i0, NULL, NULL, NULL, NULL, &t));
  check_arange(t, KD_INT64, 0, 0, 1);
  /* Errors. */
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &i10, &i0, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "step must be nonzero");
  assert_null(t);
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &d1, &h, &I64, NULL, NULL, NULL, &t), KD_EINVAL,
                "step must be nonzero"); /* 0.5 truncates to 0 */
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &i10, &im3, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "upper bound and larger bound inconsistent with step sign");
  KD_ASSERT_ERR(kd_arange_start_step(&d1, &i0, &q, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "upper bound and larger bound inconsistent with step sign");
  kd_scalar nan_s = kd_scalar_double(NAN), inf_s = kd_scalar_double(INFINITY);
  KD_ASSERT_ERR(kd_arange(&nan_s, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "unsupported range: 0 -> nan");
  KD_ASSERT_ERR(kd_arange_start(&i0, &inf_s, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "unsupported range: 0 -> inf");
  KD_ASSERT_ERR(kd_arange(&i5, &BOOL_, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"arange_cpu\" not implemented for 'bool'");
  KD_ASSERT_ERR(kd_arange(&i5, &C128, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"arange_cpu\" not implemented for 'complex128'");
  kd_scalar cpx = kd_scalar_complex(1, 1);
  KD_ASSERT_ERR(kd_arange(&cpx, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "expected real numbers, got a complex value");
  kd_scalar huge = kd_scalar_double(1e300);
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &huge, &q, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "invalid size, possible overflow?");
  /* Exactly 2^63 elements: INT64_MAX as a double is 2^63, so a bound of
   * "<= 9223372036854775807.0" let the size through to an undefined
   * double -> int64 conversion. */
  kd_scalar two63 = kd_scalar_double(9223372036854775808.0), d_one = kd_scalar_double(1);
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &two63, &d_one, &F64, NULL, NULL, NULL, &t), KD_EINVAL,
                "arange: invalid size, possible overflow?");
  assert_null(t);
  kd_scalar lo62 = kd_scalar_int(-(INT64_C(1) << 62)), hi62 = kd_scalar_int(INT64_C(1) << 62);
  KD_ASSERT_ERR(kd_arange_start(&lo62, &hi62, &I32, NULL, NULL, NULL, &t), KD_EINVAL,
                "arange: invalid size, possible overflow?");
  kd_scalar mx = kd_scalar_int(INT64_MAX), mn = kd_scalar_int(INT64_MIN);
  KD_ASSERT_ERR(kd_arange_start(&mn, &mx, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "possible overflow");
  kd_layout coo = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_arange(&i5, NULL, &coo, NULL, NULL, &t), KD_EUNSUPPORTED,
                "arange: layout sparse_coo is not supported");
  /* Meta: the size is computed, nothing written. */
  KD_ASSERT_OK(kd_arange(&i10, NULL, NULL, &OC_META, NULL, &t));
  EXPECT_SHAPE(t, KD_INT64, KD_DEVICE_META, 10);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_arange_start_step(&i0, &d1, &q, NULL, NULL, &OC_META, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_META, 4);
  kd_tensor_release(t);
  KD_ASSERT_ERR(kd_arange(&i5, &BOOL_, NULL, &OC_META, NULL, &t), KD_ENOKERNEL,
                "not implemented for 'bool'");
  /* Integral dtypes: nan, inf or an out-of-range start, end or step fails as
   * PyTorch's checked int64 conversion does (end=nan into an int64 out= once
   * gave an empty tensor). out keeps its shape and values. */
  kd_tensor *iout = IOTA(KD_INT64, 3);
  KD_ASSERT_ERR(kd_arange_out(&nan_s, iout), KD_EOVERFLOW,
                "arange: value cannot be converted to type int64_t without overflow");
  EXPECT_SHAPE(iout, KD_INT64, KD_DEVICE_CPU, 3);
  EXPECT_VALS(iout, 0, 1, 2);
  KD_ASSERT_ERR(kd_arange_start_out(&nan_s, &i5, &i1, iout), KD_EOVERFLOW,
                "arange: value cannot be converted to type int64_t without overflow");
  KD_ASSERT_ERR(kd_arange_start_out(&i0, &i5, &inf_s, iout), KD_EOVERFLOW,
                "arange: value cannot be converted to type int64_t without overflow");
  EXPECT_VALS(iout, 0, 1, 2);
  kd_tensor_release(iout);
  kd_scalar ninf_s = kd_scalar_double(-INFINITY);
  KD_ASSERT_ERR(kd_arange_start_step(&ninf_s, &i5, &i1, &I32, NULL, NULL, NULL, &t), KD_EOVERFLOW,
                "arange: value cannot be converted to type int64_t without overflow");
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &huge, &i1, &I32, NULL, NULL, NULL, &t), KD_EOVERFLOW,
                "arange: value cannot be converted to type int64_t without overflow");
  assert_null(t);
  /* Floating dtypes: a nan step is "step must be nonzero" (nan is neither > 0 nor < 0). */
  KD_ASSERT_ERR(kd_arange_start_step(&i0, &i5, &nan_s, &F64, NULL, NULL, NULL, &t), KD_EINVAL,
                "step must be nonzero");
}

static void test_arange_out(void **state) {
  (void)state;
  oc_open();
  kd_scalar i4 = kd_scalar_int(4), i0 = kd_scalar_int(0), i1 = kd_scalar_int(1),
            i6 = kd_scalar_int(6), i2 = kd_scalar_int(2), h = kd_scalar_double(0.5);
  kd_tensor *out = EMPTY(KD_FLOAT64, 2, 2);
  /* Four elements already: PyTorch keeps out's shape. */
  KD_ASSERT_OK(kd_arange_out(&i4, out));
  EXPECT_SHAPE(out, KD_FLOAT64, KD_DEVICE_CPU, 2, 2);
  EXPECT_VALS(out, 0, 1, 2, 3);
  /* Another number of elements: resized to 1-d. */
  KD_ASSERT_OK(kd_arange_start_out(&i0, &i6, &i1, out));
  EXPECT_SHAPE(out, KD_FLOAT64, KD_DEVICE_CPU, 6);
  EXPECT_VALS(out, 0, 1, 2, 3, 4, 5);
  KD_ASSERT_OK(kd_arange_start_out(&i1, &i2, &h, out)); /* step in out's dtype: 1, 1.5 */
  EXPECT_VALS(out, 1, 1.5);
  KD_ASSERT_OK(kd_arange_start_out(&i2, &i6, NULL, out)); /* step=1 */
  EXPECT_VALS(out, 2, 3, 4, 5);
  kd_tensor_release(out);
  /* A non-contiguous out is written through its strides. */
  kd_tensor *base = FROM(KD_INT16, (8), -1, -1, -1, -1, -1, -1, -1, -1), *every2 = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(base, 0, NULL, NULL, 2, &every2));
  KD_ASSERT_OK(kd_arange_out(&i4, every2));
  EXPECT_VALS(base, 0, -1, 1, -1, 2, -1, 3, -1);
  RELEASE(every2, base);
  /* out's dtype decides: every integer and floating dtype; bool and complex are refused. */
  const kd_dtype dts[] = {KD_UINT8,   KD_INT8,     KD_INT16,   KD_INT32, KD_INT64,
                          KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    kd_tensor *o = oc_empty(dts[i], 1, I(0));
    KD_ASSERT_OK(kd_arange_start_out(&i1, &i6, &i2, o));
    check_arange(o, dts[i], 3, 1, 2);
  }
  out = EMPTY(KD_BOOL, 0);
  KD_ASSERT_ERR(kd_arange_out(&i4, out), KD_ENOKERNEL, "not implemented for 'bool'");
  EXPECT_SHAPE(out, KD_BOOL, KD_DEVICE_CPU, 0); /* left alone */
  kd_tensor_release(out);
  out = EMPTY(KD_COMPLEX64, 0);
  KD_ASSERT_ERR(kd_arange_out(&i4, out), KD_ENOKERNEL, "not implemented for 'complex64'");
  kd_tensor_release(out);
  out = EMPTY(KD_INT32, 3);
  KD_ASSERT_ERR(kd_arange_start_out(&i0, &i4, &i0, out), KD_EINVAL, "step must be nonzero");
  EXPECT_SHAPE(out, KD_INT32, KD_DEVICE_CPU, 3);
  kd_tensor_release(out);
  /* An out whose elements share memory (an expanded view of one element)
   * cannot hold 0 1 2 3; before the fix the copy into it failed with a
   * message about kd_tensor_copy_. */
  kd_tensor *one = EMPTY(KD_FLOAT32, 1), *ex = NULL;
  KD_ASSERT_OK(kd_expand(one, INTS(4), false, &ex));
  KD_ASSERT_ERR(kd_arange_out(&i4, ex), KD_EINVAL,
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                "operation.");
  RELEASE(ex, one);
  /* Meta out. */
  out = META(KD_FLOAT32, 0);
  KD_ASSERT_OK(kd_arange_out(&i4, out));
  EXPECT_SHAPE(out, KD_FLOAT32, KD_DEVICE_META, 4);
  kd_tensor_release(out);
}

/* ---- eye ------------------------------------------------------------------------------------ */

static void test_eye(void **state) {
  (void)state;
  oc_open();
  kd_tensor *t = NULL;
  for (int i = 0; i < OC_NALL; i++) {
    kd_dtype dt = OC_ALL[i];
    KD_ASSERT_OK(kd_eye_m(2, 3, &dt, NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_CPU, 2, 3);
    EXPECT_VALS(t, 1, 0, 0, 0, 1, 0);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_eye(2, &dt, NULL, &OC_META, NULL, &t));
    EXPECT_SHAPE(t, dt, KD_DEVICE_META, 2, 2);
    kd_tensor_release(t);
    kd_tensor *o = oc_empty(dt, 1, I(0));
    KD_ASSERT_OK(kd_eye_out(2, o));
    EXPECT_SHAPE(o, dt, KD_DEVICE_CPU, 2, 2);
    EXPECT_VALS(o, 1, 0, 0, 1);
    kd_tensor_release(o);
  }
  KD_ASSERT_OK(kd_eye(3, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 3, 3);
  EXPECT_VALS(t, 1, 0, 0, 0, 1, 0, 0, 0, 1);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_eye_m(3, 1, NULL, NULL, NULL, NULL, &t));
  EXPECT_VALS(t, 1, 0, 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_eye(0, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 0, 0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_eye_m(0, 4, &I64, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_INT64, KD_DEVICE_CPU, 0, 4);
  kd_tensor_release(t);
  KD_ASSERT_ERR(kd_eye(-1, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "n must be greater or equal to 0, got -1");
  assert_null(t);
  KD_ASSERT_ERR(kd_eye_m(2, -2, NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "m must be greater or equal to 0, got -2");
  KD_ASSERT_ERR(kd_eye(-1, NULL, NULL, &OC_META, NULL, &t), KD_EINVAL,
                "n must be greater or equal to 0, got -1");
  kd_layout coo = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_eye(2, NULL, &coo, NULL, NULL, &t), KD_EUNSUPPORTED,
                "eye: layout sparse_coo is not supported");
  /* out: resized; a transposed out of the right shape is written in place. */
  kd_tensor *out = EMPTY(KD_INT64, 5);
  KD_ASSERT_OK(kd_eye_out(2, out));
  EXPECT_SHAPE(out, KD_INT64, KD_DEVICE_CPU, 2, 2);
  EXPECT_VALS(out, 1, 0, 0, 1);
  KD_ASSERT_ERR(kd_eye_m_out(2, -1, out), KD_EINVAL, "m must be greater or equal to 0, got -1");
  EXPECT_SHAPE(out, KD_INT64, KD_DEVICE_CPU, 2, 2);
  kd_tensor_release(out);
  kd_tensor *base = FROM(KD_FLOAT64, (3, 2), 7, 7, 7, 7, 7, 7), *tr = NULL;
  KD_ASSERT_OK(kd_t(base, &tr));
  KD_ASSERT_OK(kd_eye_m_out(2, 3, tr));
  EXPECT_GEOM(tr, (2, 3), (1, 2), 0);
  EXPECT_VALS(tr, 1, 0, 0, 0, 1, 0);
  EXPECT_VALS(base, 1, 0, 0, 1, 0, 0); /* base = tr^T */
  RELEASE(tr, base);
  kd_tensor *mo = META(KD_BFLOAT16, 0);
  KD_ASSERT_OK(kd_eye_m_out(4, 2, mo));
  EXPECT_SHAPE(mo, KD_BFLOAT16, KD_DEVICE_META, 4, 2);
  kd_tensor_release(mo);
}

/* ---- rand, randn ---------------------------------------------------------------------------- */

/* A float in [0, 1) from the top 24 bits of a 32-bit word, as rand makes
 * float32 values. */
static double u24(uint32_t w) { return (double)(w >> 8) / 16777216.0; }

static void test_rand_known_values(void **state) {
  (void)state;
  oc_open();
  /* The generator is Philox4x32-10 keyed by the seed over a block counter.
   * Its published known-answer vector for key 0, counter 0 is
   * 6627e8d5 e169c58d bc57ac4c 9b00dbd8 (block 0), and for key 0, counter 1
   * (block 1) the words below; float32 rand uses one word per value. */
  kd_tensor *t = NULL;
  kd_manual_seed(0);
  KD_ASSERT_OK(kd_rand(INTS(4), NULL, NULL, NULL, NULL, &t));
  oc_expect_vals_tol(t, D(u24(0x6627e8d5u), u24(0xe169c58du), u24(0xbc57ac4cu), u24(0x9b00dbd8u)),
                     4, 0);
  kd_tensor_release(t);
  /* The next call starts at the next block. */
  KD_ASSERT_OK(kd_rand(INTS(2), NULL, NULL, NULL, NULL, &t));
  oc_expect_vals_tol(t, D(0.9722411632537842, 0.362091064453125), 2, 0);
  kd_tensor_release(t);
  /* Reseeding starts the sequence again; float64 takes 53 bits of two words. */
  kd_manual_seed(0);
  KD_ASSERT_OK(kd_rand(INTS(2), &F64, NULL, NULL, NULL, &t));
  double w0 = (double)(((uint64_t)0x6627e8d5u << 32 | 0xe169c58du) >> 11) / 9007199254740992.0;
  double w1 = (double)(((uint64_t)0xbc57ac4cu << 32 | 0x9b00dbd8u) >> 11) / 9007199254740992.0;
  oc_expect_vals_tol(t, D(w0, w1), 2, 0);
  kd_tensor_release(t);
}

static void test_rand_reproducible(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = NULL, *b = NULL, *c = NULL;
  kd_manual_seed(42);
  KD_ASSERT_OK(kd_rand(INTS(1000), NULL, NULL, NULL, NULL, &a));
  KD_ASSERT_OK(kd_randn(INTS(1000), NULL, NULL, NULL, NULL, &c));
  kd_manual_seed(42);
  KD_ASSERT_OK(kd_rand_generator(INTS(1000), NULL, NULL, NULL, NULL, NULL, &b));
  assert_memory_equal(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float));
  kd_tensor_release(b);
  KD_ASSERT_OK(kd_randn(INTS(1000), NULL, NULL, NULL, NULL, &b));
  assert_memory_equal(kd_tensor_data(c), kd_tensor_data(b), 1000 * sizeof(float));
  kd_tensor_release(b);
  /* The out variants draw the same numbers. */
  kd_manual_seed(42);
  b = EMPTY(KD_FLOAT32, 0);
  KD_ASSERT_OK(kd_rand_out(INTS(1000), b));
  assert_memory_equal(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float));
  KD_ASSERT_OK(kd_randn_generator_out(INTS(1000), NULL, b));
  assert_memory_equal(kd_tensor_data(c), kd_tensor_data(b), 1000 * sizeof(float));
  kd_tensor_release(b);
  /* The next call differs from the first; another seed differs. */
  KD_ASSERT_OK(kd_rand(INTS(1000), NULL, NULL, NULL, NULL, &b));
  assert_true(memcmp(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float)) != 0);
  kd_tensor_release(b);
  kd_manual_seed(43);
  KD_ASSERT_OK(kd_rand(INTS(1000), NULL, NULL, NULL, NULL, &b));
  assert_true(memcmp(kd_tensor_data(a), kd_tensor_data(b), 1000 * sizeof(float)) != 0);
  RELEASE(b, c, a);
  /* A meta call draws nothing: the stream after it is the one without it. */
  kd_tensor *x = NULL, *y = NULL, *m = NULL;
  kd_manual_seed(7);
  KD_ASSERT_OK(kd_randn(INTS(8), NULL, NULL, NULL, NULL, &x));
  kd_manual_seed(7);
  KD_ASSERT_OK(kd_randn(INTS(100), NULL, NULL, &OC_META, NULL, &m));
  KD_ASSERT_OK(kd_randn(INTS(8), NULL, NULL, NULL, NULL, &y));
  assert_memory_equal(kd_tensor_data(x), kd_tensor_data(y), 8 * sizeof(float));
  RELEASE(m, y, x);
}

static void moments(const kd_tensor *t, double *mean, double *var, double *lo, double *hi) {
  int64_t n = kd_tensor_numel(t);
  double s = 0, s2 = 0;
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double v = oc_at(t, i);
    s += v;
    s2 += v * v;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
  *mean = s / (double)n;
  *var = s2 / (double)n - *mean * *mean;
}

/* Seeded, so the statistics below are fixed numbers: the bounds are wide
 * enough for any correct generator and fail for a wrong distribution. */
static void test_rand_distribution(void **state) {
  (void)state;
  oc_open();
  const kd_dtype dts[] = {KD_FLOAT32, KD_FLOAT64, KD_FLOAT16, KD_BFLOAT16};
  kd_manual_seed(7);
  for (size_t i = 0; i < 4; i++) {
    kd_tensor *t = NULL;
    double mean, var, lo, hi;
    KD_ASSERT_OK(kd_rand(INTS(200, 500), &dts[i], NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dts[i], KD_DEVICE_CPU, 200, 500);
    moments(t, &mean, &var, &lo, &hi);
    if (fabs(mean - 0.5) > 0.01 || fabs(var - 1.0 / 12) > 0.005 || lo < 0 || hi >= 1 ||
        lo > 0.01 || hi < 0.99)
      fail_msg("rand %s: mean %g var %g range [%g, %g]", kd_dtype_name(dts[i]), mean, var, lo, hi);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_randn(INTS(200, 500), &dts[i], NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dts[i], KD_DEVICE_CPU, 200, 500);
    moments(t, &mean, &var, &lo, &hi);
    if (fabs(mean) > 0.02 || fabs(var - 1) > 0.03 || lo > -3 || hi < 3)
      fail_msg("randn %s: mean %g var %g range [%g, %g]", kd_dtype_name(dts[i]), mean, var, lo, hi);
    kd_tensor_release(t);
  }
  /* complex: both parts random; randn's parts each of variance 1/2 */
  kd_dtype c64 = KD_COMPLEX64;
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_randn(INTS(200, 500), &c64, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_COMPLEX64, KD_DEVICE_CPU, 200, 500);
  const float *f = kd_tensor_data(t);
  double s2re = 0, s2im = 0;
  for (int64_t i = 0; i < 100000; i++) {
    s2re += (double)f[2 * i] * f[2 * i];
    s2im += (double)f[2 * i + 1] * f[2 * i + 1];
  }
  assert_true(fabs(s2re / 100000 - 0.5) < 0.02 && fabs(s2im / 100000 - 0.5) < 0.02);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_rand(INTS(200, 500), &C128, NULL, NULL, NULL, &t));
  const double *z = kd_tensor_data(t);
  double sre = 0, sim = 0;
  for (int64_t i = 0; i < 100000; i++) sre += z[2 * i], sim += z[2 * i + 1];
  assert_true(fabs(sre / 100000 - 0.5) < 0.01 && fabs(sim / 100000 - 0.5) < 0.01);
  kd_tensor_release(t);
}

static void test_rand_errors_out_meta(void **state) {
  (void)state;
  oc_open();
  kd_tensor *t = NULL;
  /* Dtypes without a kernel: every integer and bool. */
  KD_ASSERT_ERR(kd_rand(INTS(3, 4), &I64, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"check_uniform_bounds\" not implemented for 'Long'");
  assert_null(t);
  KD_ASSERT_ERR(kd_randn(INTS(3, 4), &BOOL_, NULL, NULL, NULL, &t), KD_ENOKERNEL,
                "\"normal_kernel_cpu\" not implemented for 'Bool'");
  KD_ASSERT_ERR(kd_randn(INTS(3, 4), &I8, NULL, &OC_META, NULL, &t), KD_ENOKERNEL,
                "\"normal_kernel_cpu\" not implemented for 'Char'");
  /* Generators: None is the default one; an explicit one is not supported. */
  kd_value gen = kd_value_int(3), none = kd_value_none();
  KD_ASSERT_ERR(kd_rand_generator(INTS(3, 4), &gen, NULL, NULL, NULL, NULL, &t), KD_EUNSUPPORTED,
                "generators are not supported");
  KD_ASSERT_ERR(kd_randn_generator(INTS(2), &gen, NULL, NULL, NULL, NULL, &t), KD_EUNSUPPORTED,
                "generators are not supported");
  KD_ASSERT_OK(kd_randn_generator(INTS(3, 4), &none, NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 3, 4);
  kd_tensor_release(t);
  /* Invalid sizes and options. */
  KD_ASSERT_ERR(kd_rand(INTS(2, -2), NULL, NULL, NULL, NULL, &t), KD_EINVAL,
                "rand: Trying to create tensor with negative dimension -2: [2, -2]");
  kd_layout coo = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_randn(INTS(2), NULL, &coo, NULL, NULL, &t), KD_EUNSUPPORTED,
                "randn: layout sparse_coo is not supported");
  /* Out variants resize (empty: without a warning) and keep out's dtype. */
  kd_tensor *out = EMPTY(KD_FLOAT64, 0);
  KD_ASSERT_OK(kd_rand_out(INTS(3, 4), out));
  EXPECT_SHAPE(out, KD_FLOAT64, KD_DEVICE_CPU, 3, 4);
  for (int i = 0; i < 12; i++) assert_true(oc_at(out, i) >= 0 && oc_at(out, i) < 1);
  KD_ASSERT_OK(kd_randn_out(INTS(5), out));
  EXPECT_SHAPE(out, KD_FLOAT64, KD_DEVICE_CPU, 5);
  KD_ASSERT_OK(kd_rand_generator_out(INTS(5), NULL, out));
  KD_ASSERT_OK(kd_randn_generator_out(INTS(5), &none, out));
  KD_ASSERT_ERR(kd_rand_generator_out(INTS(5), &gen, out), KD_EUNSUPPORTED,
                "generators are not supported");
  KD_ASSERT_ERR(kd_randn_out(INTS(-5), out), KD_EINVAL, "negative dimension -5");
  kd_tensor_release(out);
  /* A wrong out dtype is refused before out is resized. */
  out = EMPTY(KD_INT32, 2);
  KD_ASSERT_ERR(kd_rand_out(INTS(3, 4), out), KD_ENOKERNEL, "'Int'");
  EXPECT_SHAPE(out, KD_INT32, KD_DEVICE_CPU, 2);
  kd_tensor_release(out);
  /* A non-contiguous out is written through its strides. */
  kd_tensor *base = NULL, *every2 = NULL;
  KD_ASSERT_OK(kd_zeros(INTS(8), NULL, NULL, NULL, NULL, &base));
  KD_ASSERT_OK(kd_slice_Tensor(base, 0, NULL, NULL, 2, &every2));
  KD_ASSERT_OK(kd_rand_out(INTS(4), every2));
  for (int i = 0; i < 4; i++) {
    assert_true(oc_at(base, 2 * i + 1) == 0);
    assert_true(oc_at(base, 2 * i) > 0 && oc_at(base, 2 * i) < 1);
  }
  RELEASE(every2, base);
  /* An out whose elements share memory is refused (PyTorch's message, not
   * the internal copy's), and the refused call draws no numbers. */
  kd_tensor *one = EMPTY(KD_FLOAT32, 1), *ex = NULL, *x = NULL, *y = NULL;
  KD_ASSERT_OK(kd_expand(one, INTS(4), false, &ex));
  kd_manual_seed(5);
  KD_ASSERT_OK(kd_rand(INTS(4), NULL, NULL, NULL, NULL, &x));
  kd_manual_seed(5);
  KD_ASSERT_ERR(kd_rand_out(INTS(4), ex), KD_EINVAL,
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location.");
  KD_ASSERT_ERR(kd_randn_out(INTS(4), ex), KD_EINVAL,
                "more than one element of the written-to tensor refers to a single memory location");
  KD_ASSERT_OK(kd_rand(INTS(4), NULL, NULL, NULL, NULL, &y));
  assert_memory_equal(kd_tensor_data(x), kd_tensor_data(y), 4 * sizeof(float));
  RELEASE(y, x, ex, one);
  /* Meta: shape and dtype only, every floating and complex dtype. */
  const kd_dtype dts[] = {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64,
                          KD_COMPLEX128};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    KD_ASSERT_OK(kd_randn(INTS(3, 4), &dts[i], NULL, &OC_META, NULL, &t));
    EXPECT_SHAPE(t, dts[i], KD_DEVICE_META, 3, 4);
    kd_tensor_release(t);
    KD_ASSERT_OK(kd_rand(INTS(2), &dts[i], NULL, NULL, NULL, &t));
    EXPECT_SHAPE(t, dts[i], KD_DEVICE_CPU, 2);
    kd_tensor_release(t);
  }
  kd_tensor *mo = META(KD_FLOAT32, 1);
  KD_ASSERT_OK(kd_rand_out(INTS(2, 3), mo));
  EXPECT_SHAPE(mo, KD_FLOAT32, KD_DEVICE_META, 2, 3);
  kd_tensor_release(mo);
  /* Zero elements. */
  KD_ASSERT_OK(kd_rand(INTS(0), NULL, NULL, NULL, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_CPU, 0);
  kd_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_empty_like),
      cmocka_unit_test(test_zeros_ones_full),
      cmocka_unit_test(test_zeros_ones_full_out),
      cmocka_unit_test(test_like),
      cmocka_unit_test(test_arange),
      cmocka_unit_test(test_arange_out),
      cmocka_unit_test(test_eye),
      cmocka_unit_test(test_rand_known_values),
      cmocka_unit_test(test_rand_reproducible),
      cmocka_unit_test(test_rand_distribution),
      cmocka_unit_test(test_rand_errors_out_meta),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
