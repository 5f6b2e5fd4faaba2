/*
 * test_views.c: the view operators (ops/native/views.c) through the
 * generated entry points: view, view.dtype, view_as, reshape, reshape_as,
 * transpose, transpose_, t, t_, permute, expand, expand_as, squeeze (and
 * .dim, squeeze_, squeeze_.dim), unsqueeze, unsqueeze_, flatten, slice,
 * select, narrow (and .Tensor), contiguous and clone.
 *
 * Expected values are worked out by hand in the comments. Views must share
 * their base's storage: the tests compare data pointers and write through
 * views. Every dtype runs through each operator (the kernels move bytes);
 * meta tensors give geometry only; errors are checked by status and message.
 * The copying shape operators (cat, stack, tril, index_select, ...) are in
 * test_shape.c.
 */
#include "ops_check.h"

/* Writing 99 at index vi of view v shows at index bi of base (the value
 * there is restored afterwards). */
static void expect_write_through(kd_tensor *v, const int64_t *vi, kd_tensor *base,
                                 const int64_t *bi) {
  kd_scalar old, got, mark = kd_scalar_int(99);
  KD_ASSERT_OK(kd_tensor_get(base, bi, &old));
  KD_ASSERT_OK(kd_tensor_set(v, vi, &mark));
  KD_ASSERT_OK(kd_tensor_get(base, bi, &got));
  if (kd_scalar_to_double(&got) != 99) fail_msg("a write through the view did not reach its base");
  KD_ASSERT_OK(kd_tensor_set(base, bi, &old));
}

/* ---- view, view_as --------------------------------------------------------------- */

static void test_view(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3), *v = NULL, *tr = NULL;
  KD_ASSERT_OK(kd_view(a, INTS(3, 2), &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5);
  oc_expect_view_of(v, a, 0);
  expect_write_through(v, I(2, 0), a, I(1, 1)); /* element 4 */
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_view(a, INTS(-1), &v));
  EXPECT_GEOM(v, (6), (1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_view(a, INTS(1, -1, 1, 2), &v));
  EXPECT_GEOM(v, (1, 3, 1, 2), (6, 2, 2, 1), 0);
  kd_tensor_release(v);

  /* Invalid sizes. */
  KD_ASSERT_ERR(kd_view(a, INTS(3, 5), &v), KD_EINVAL,
                "shape '[3, 5]' is invalid for input of size 6");
  assert_null(v);
  KD_ASSERT_ERR(kd_view(a, INTS(-1, -1), &v), KD_EINVAL, "only one dimension can be inferred");
  KD_ASSERT_ERR(kd_view(a, INTS(-2, 3), &v), KD_EINVAL, "invalid shape dimension -2");
  KD_ASSERT_ERR(kd_view(a, INTS(4, -1), &v), KD_EINVAL,
                "shape '[4, -1]' is invalid for input of size 6");

  /* a.t(): sizes [3, 2] strides [1, 3]: [6] would cross two chunks... */
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &tr));
  KD_ASSERT_ERR(kd_view(tr, INTS(6), &v), KD_EINVAL,
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  assert_null(v);
  /* ...but splitting or adding size-1 dimensions is fine. */
  KD_ASSERT_OK(kd_view(tr, INTS(3, 1, 2), &v));
  EXPECT_GEOM(v, (3, 1, 2), (1, 6, 3), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  kd_tensor_release(tr);

  /* A view of a view with an offset keeps it. b = a[1] = [3, 4, 5]. */
  kd_tensor *b = NULL;
  KD_ASSERT_OK(kd_select_int(a, 0, 1, &b));
  KD_ASSERT_OK(kd_view(b, INTS(3, 1), &v));
  EXPECT_GEOM(v, (3, 1), (1, 1), 3);
  EXPECT_VALS(v, 3, 4, 5);
  oc_expect_view_of(v, a, 3);
  expect_write_through(v, I(1, 0), a, I(1, 1));
  kd_tensor_release(v);
  kd_tensor_release(b);

  /* view_as takes the other tensor's sizes (any dtype or device). */
  kd_tensor *shape = META(KD_INT8, 6, 1);
  KD_ASSERT_OK(kd_view_as(a, shape, &v));
  EXPECT_GEOM(v, (6, 1), (1, 1), 0);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  kd_tensor_release(shape);
  kd_tensor *wrong = META(KD_INT8, 4);
  KD_ASSERT_ERR(kd_view_as(a, wrong, &v), KD_EINVAL, "shape '[4]' is invalid for input of size 6");
  kd_tensor_release(wrong);
  kd_tensor_release(a);

  /* 0-dim and zero-size tensors. */
  kd_tensor *s = oc_scalar(7), *back = NULL;
  KD_ASSERT_OK(kd_view(s, INTS(1, 1), &v));
  EXPECT_GEOM(v, (1, 1), (1, 1), 0);
  EXPECT_VALS(v, 7);
  KD_ASSERT_OK(kd_view(v, NO_INTS, &back));
  assert_int_equal(kd_tensor_ndim(back), 0);
  oc_expect_view_of(back, s, 0);
  kd_tensor_release(back);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *z = EMPTY(KD_FLOAT32, 0, 3);
  KD_ASSERT_OK(kd_view(z, INTS(3, 0, 2), &v));
  EXPECT_GEOM(v, (3, 0, 2), (2, 2, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_view(z, INTS(0, -1), &v), KD_EINVAL,
                "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified "
                "dimension size -1 can be any value and is ambiguous");
  kd_tensor_release(z);

  /* Meta: geometry only, dtype kept. */
  kd_tensor *m = META(KD_FLOAT64, 4, 5);
  KD_ASSERT_OK(kd_view(m, INTS(2, 10), &v));
  EXPECT_SHAPE(v, KD_FLOAT64, KD_DEVICE_META, 2, 10);
  EXPECT_GEOM(v, (2, 10), (10, 1), 0);
  oc_expect_view_of(v, m, 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_view(m, INTS(3, 7), &v), KD_EINVAL,
                "shape '[3, 7]' is invalid for input of size 20");
  kd_tensor_release(m);
}

/* Zero-element views: the row-major strides view/reshape give them must fit
 * in int64, and so must their spans (they used to come back wrapped). */
static void test_view_zero_elements_overflow(void **state) {
  (void)state;
  oc_open();
  kd_tensor *e = NULL, *v = NULL;
  KD_ASSERT_OK(kd_empty_memory_format(INTS(0), NULL, NULL, NULL, NULL, NULL, &e));
  /* Strides [2^64, 4, 1]. */
  KD_ASSERT_ERR(kd_view(e, INTS(0, INT64_C(1) << 62, 4), &v), KD_EOVERFLOW,
                "view: the strides of a zero-element view with shape [0, 4611686018427387904, "
                "4] overflow int64");
  assert_null(v);
  KD_ASSERT_ERR(kd_reshape(e, INTS(0, INT64_C(1) << 62, 4), &v), KD_EOVERFLOW,
                "reshape: the strides of a zero-element view with shape [0, 4611686018427387904, "
                "4] overflow int64");
  assert_null(v);
  /* Strides [2^62, 2, 1] fit, the byte extent does not. */
  KD_ASSERT_ERR(kd_view(e, INTS(0, INT64_C(1) << 61, 2), &v), KD_EOVERFLOW,
                "storage size calculation overflows");
  assert_null(v);
  /* What fits is a view. */
  KD_ASSERT_OK(kd_view(e, INTS(0, INT64_C(1) << 40, 4), &v));
  EXPECT_GEOM(v, (0, INT64_C(1) << 40, 4), (INT64_C(1) << 42, 4, 1), 0);
  kd_tensor_release(v);
  /* clone of an expanded zero-element tensor: row-major strides for its
   * sizes do not fit. */
  kd_tensor *one = IOTA(KD_FLOAT32, 1), *x = NULL;
  KD_ASSERT_OK(kd_expand(one, INTS(0, INT64_C(1) << 62, INT64_C(1) << 62), false, &x));
  KD_ASSERT_ERR(kd_clone(x, NULL, &v), KD_EOVERFLOW,
                "the contiguous_format strides of sizes [0, 4611686018427387904, "
                "4611686018427387904] overflow int64");
  assert_null(v);
  RELEASE(x, one, e);

  /* A zero-element tensor's size * stride need not fit: [2, 0] with strides
   * [2^62, 1] (uint8) has an extent of 2^62 + 1 bytes, but unsqueeze(0) and a
   * new leading dimension of expand would get the stride 2 * 2^62. */
  KD_ASSERT_OK(kd_tensor_empty_strided(2, (int64_t[]){2, 0}, (int64_t[]){INT64_C(1) << 62, 1},
                                       KD_UINT8, kd_device_cpu(), &e));
  KD_ASSERT_ERR(kd_unsqueeze(e, 0, &v), KD_EOVERFLOW,
                "unsqueeze: the stride of new dimension 0 (size 2 * stride 4611686018427387904) "
                "overflows int64");
  assert_null(v);
  KD_ASSERT_ERR(kd_expand(e, INTS(1, 2, 0), false, &v), KD_EOVERFLOW,
                "expand: the stride of new dimension 0 overflows int64");
  assert_null(v);
  KD_ASSERT_OK(kd_expand(e, INTS(3, 2, 0), false, &v)); /* expanded: stride 0 */
  EXPECT_GEOM(v, (3, 2, 0), (0, INT64_C(1) << 62, 1), 0);
  RELEASE(v, e);
  /* flatten of [0, 2^62, 2^62] (strides 0) over its last two dimensions. */
  KD_ASSERT_OK(kd_tensor_empty_strided(3, (int64_t[]){0, INT64_C(1) << 62, INT64_C(1) << 62},
                                       (int64_t[]){0, 0, 0}, KD_UINT8, kd_device_cpu(), &e));
  KD_ASSERT_ERR(kd_flatten_using_ints(e, 1, 2, &v), KD_EOVERFLOW,
                "flatten: the size of dimensions 1 to 2 flattened overflows int64");
  assert_null(v);
  kd_tensor_release(e);
}

static void test_view_dtype(void **state) {
  (void)state;
  oc_open();
  int32_t data[4] = {1, 2, 3, 4};
  kd_tensor *a = NULL, *v = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(2, I(2, 2), KD_INT32, data, &a));
  /* Same size: float32 bits of the ints. */
  KD_ASSERT_OK(kd_view_dtype(a, KD_FLOAT32, &v));
  EXPECT_GEOM(v, (2, 2), (2, 1), 0);
  assert_int_equal(kd_tensor_dtype(v), KD_FLOAT32);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  /* Same dtype: a new alias of self (PyTorch's x.view(x.dtype) is not x): a
   * metadata change of the result leaves self as it was. */
  KD_ASSERT_OK(kd_view_dtype(a, KD_INT32, &v));
  assert_ptr_not_equal(v, a);
  EXPECT_GEOM(v, (2, 2), (2, 1), 0);
  assert_int_equal(kd_tensor_dtype(v), KD_INT32);
  oc_expect_view_of(v, a, 0);
  KD_ASSERT_OK(kd_transpose_(v, 0, 1));
  EXPECT_GEOM(v, (2, 2), (1, 2), 0);
  EXPECT_GEOM(a, (2, 2), (2, 1), 0);
  expect_write_through(v, I(1, 0), a, I(0, 1));
  kd_tensor_release(v);
  /* Smaller: int32 [2, 2] -> int16 [2, 4] (little endian: 1, 0, 2, 0, ...). */
  KD_ASSERT_OK(kd_view_dtype(a, KD_INT16, &v));
  EXPECT_GEOM(v, (2, 4), (4, 1), 0);
  EXPECT_VALS(v, 1, 0, 2, 0, 3, 0, 4, 0);
  oc_expect_view_of(v, a, 0);
  /* Writing the high half of element 1 (int16 index [0, 3]) changes a[0][1] to 2 + 65536. */
  kd_scalar one = kd_scalar_int(1), got;
  KD_ASSERT_OK(kd_tensor_set(v, I(0, 3), &one));
  KD_ASSERT_OK(kd_tensor_get(a, I(0, 1), &got));
  assert_int_equal(kd_scalar_to_int64(&got), 2 + 65536);
  kd_scalar zero = kd_scalar_int(0);
  KD_ASSERT_OK(kd_tensor_set(v, I(0, 3), &zero));
  kd_tensor_release(v);
  /* Larger: int32 [2, 2] -> int64 [2, 1]: 1 | 2 << 32, 3 | 4 << 32. */
  KD_ASSERT_OK(kd_view_dtype(a, KD_INT64, &v));
  EXPECT_GEOM(v, (2, 1), (1, 1), 0);
  EXPECT_VALS(v, (double)(1 + (2LL << 32)), (double)(3 + (4LL << 32)));
  kd_tensor_release(v);
  /* Errors. */
  kd_tensor *tr = NULL, *row = NULL, *r3 = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &tr));
  KD_ASSERT_ERR(kd_view_dtype(tr, KD_INT8, &v), KD_EINVAL,
                "self.stride(-1) must be 1 to view Int as Char (different element sizes), but got 2");
  assert_null(v);
  KD_ASSERT_OK(kd_select_int(a, 0, 1, &row));                  /* offset 2 */
  KD_ASSERT_OK(kd_slice_Tensor(row, 0, I(1), NULL, 1, &r3)); /* offset 3, size 1 */
  KD_ASSERT_ERR(kd_view_dtype(r3, KD_INT64, &v), KD_EINVAL,
                "self.size(-1) must be divisible by 2 to view Int as Long (different element "
                "sizes), but got 1");
  kd_tensor *r3b = NULL; /* [4] from offset 3 of an [8] buffer: size fine, offset odd */
  kd_tensor *buf = IOTA(KD_INT32, 8);
  KD_ASSERT_OK(kd_slice_Tensor(buf, 0, I(3), I(7), 1, &r3b));
  KD_ASSERT_ERR(kd_view_dtype(r3b, KD_INT64, &v), KD_EINVAL,
                "self.storage_offset() must be divisible by 2 to view Int as Long (different "
                "element sizes), but got 3");
  RELEASE(r3b, buf, r3, row, tr);
  kd_tensor *s = oc_scalar(1);
  KD_ASSERT_ERR(kd_view_dtype(s, KD_FLOAT64, &v), KD_EINVAL,
                "self.dim() cannot be 0 to view Float as Double (different element sizes)");
  kd_tensor_release(s);
  /* Rows 1: of [3, 2] int32 have offset 2: as int64, offset 1 and strides [1, 1]. */
  kd_tensor *a3 = IOTA(KD_INT32, 3, 2), *sl = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(a3, 0, I(1), NULL, 1, &sl));
  KD_ASSERT_OK(kd_view_dtype(sl, KD_INT64, &v));
  EXPECT_GEOM(v, (2, 1), (1, 1), 1);
  oc_expect_view_of(v, a3, 1);
  EXPECT_VALS(v, (double)(2 + (3LL << 32)), (double)(4 + (5LL << 32)));
  kd_tensor_release(v);
  kd_tensor_release(sl);
  kd_tensor_release(a3);
  kd_tensor *odd = IOTA(KD_INT32, 2, 3), *ev = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(odd, 1, I(0), I(2), 1, &ev)); /* [2, 2] strides [3, 1] */
  KD_ASSERT_ERR(kd_view_dtype(ev, KD_INT64, &v), KD_EINVAL,
                "self.stride(0) must be divisible by 2 to view Int as Long (different element "
                "sizes), but got 3");
  RELEASE(ev, odd, a);
  /* Meta: complex64 [3] is float32 [6]. */
  kd_tensor *m = META(KD_COMPLEX64, 3);
  KD_ASSERT_OK(kd_view_dtype(m, KD_FLOAT32, &v));
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 6);
  EXPECT_GEOM(v, (6), (1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- reshape, reshape_as -------------------------------------------------------- */

static void test_reshape(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT64, 2, 3), *r = NULL, *tr = NULL;
  KD_ASSERT_OK(kd_reshape(a, INTS(3, -1), &r));
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  oc_expect_view_of(r, a, 0); /* a view */
  expect_write_through(r, I(2, 1), a, I(1, 2));
  kd_tensor_release(r);
  /* a.t() = [[0, 3], [1, 4], [2, 5]] cannot be viewed as [6]: a copy. */
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &tr));
  KD_ASSERT_OK(kd_reshape(tr, INTS(6), &r));
  assert_false(kd_tensor_shares_storage(a, r));
  EXPECT_GEOM(r, (6), (1), 0);
  EXPECT_VALS(r, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_reshape(tr, INTS(2, 3), &r));
  EXPECT_VALS(r, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(r);
  /* Splitting a dimension of the transpose is still a view. */
  KD_ASSERT_OK(kd_reshape(tr, INTS(3, 2, 1), &r));
  oc_expect_view_of(r, a, 0);
  EXPECT_GEOM(r, (3, 2, 1), (1, 3, 3), 0);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_reshape(tr, INTS(4), &r), KD_EINVAL,
                "shape '[4]' is invalid for input of size 6");
  assert_null(r);
  KD_ASSERT_ERR(kd_reshape(tr, INTS(-1, 0), &r), KD_EINVAL,
                "shape '[-1, 0]' is invalid for input of size 6");
  KD_ASSERT_ERR(kd_reshape(tr, INTS(2, -3), &r), KD_EINVAL, "invalid shape dimension -3");
  /* reshape_as */
  kd_tensor *like = META(KD_BOOL, 1, 6);
  KD_ASSERT_OK(kd_reshape_as(tr, like, &r));
  EXPECT_GEOM(r, (1, 6), (6, 1), 0);
  EXPECT_VALS(r, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(r);
  kd_tensor_release(like);
  /* A zero-size tensor reshapes to any sizes with no elements; a 0-dim one to [1]. */
  kd_tensor *z = EMPTY(KD_INT8, 2, 0);
  KD_ASSERT_OK(kd_reshape(z, INTS(0, 5, 7), &r));
  EXPECT_SHAPE(r, KD_INT8, KD_DEVICE_CPU, 0, 5, 7);
  kd_tensor_release(r);
  kd_tensor_release(z);
  kd_tensor *s = oc_scalar(3);
  KD_ASSERT_OK(kd_reshape(s, INTS(-1), &r));
  EXPECT_GEOM(r, (1), (1), 0);
  EXPECT_VALS(r, 3);
  oc_expect_view_of(r, s, 0);
  kd_tensor_release(r);
  kd_tensor_release(s);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  /* Meta, both routes: the copy is a new meta tensor. */
  kd_tensor *m = META(KD_FLOAT16, 2, 3), *mt = NULL;
  KD_ASSERT_OK(kd_transpose_int(m, 0, 1, &mt));
  KD_ASSERT_OK(kd_reshape(mt, INTS(-1), &r));
  EXPECT_SHAPE(r, KD_FLOAT16, KD_DEVICE_META, 6);
  EXPECT_GEOM(r, (6), (1), 0);
  assert_false(kd_tensor_shares_storage(m, r));
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_reshape(m, INTS(-1), &r));
  assert_true(kd_tensor_shares_storage(m, r));
  kd_tensor_release(r);
  RELEASE(mt, m);
}

/* ---- transpose, t, permute --------------------------------------------------------- */

static void test_transpose(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3, 4), *v = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, -1, &v));
  EXPECT_GEOM(v, (4, 3, 2), (1, 4, 12), 0);
  oc_expect_view_of(v, a, 0);
  /* v[3][2][1] is a[1][2][3] = 12 + 8 + 3 */
  assert_true(oc_at(v, 3 * 6 + 2 * 2 + 1) == 23);
  expect_write_through(v, I(1, 0, 1), a, I(1, 0, 1));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_transpose_int(a, 1, 1, &v)); /* an alias */
  EXPECT_GEOM(v, (2, 3, 4), (12, 4, 1), 0);
  assert_ptr_not_equal(v, a);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_transpose_int(a, 3, 0, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  assert_null(v);
  KD_ASSERT_ERR(kd_transpose_int(a, 0, -4, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  /* 2x3: [[0, 1, 2], [3, 4, 5]]^T = [[0, 3], [1, 4], [2, 5]]. */
  kd_tensor *b = IOTA(KD_UINT8, 2, 3);
  KD_ASSERT_OK(kd_transpose_int(b, 1, 0, &v));
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(v);
  /* In place: b itself changes geometry, over the same bytes. */
  void *before = kd_tensor_data(b);
  KD_ASSERT_OK(kd_transpose_(b, -1, -2));
  EXPECT_GEOM(b, (3, 2), (1, 3), 0);
  EXPECT_VALS(b, 0, 3, 1, 4, 2, 5);
  assert_ptr_equal(kd_tensor_data(b), before);
  KD_ASSERT_ERR(kd_transpose_(b, 2, 0), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_GEOM(b, (3, 2), (1, 3), 0); /* unchanged by the error */
  kd_tensor_release(b);
  /* Scalars: dims 0 and -1 are allowed. */
  kd_tensor *s = oc_scalar(2);
  KD_ASSERT_OK(kd_transpose_int(s, 0, -1, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  EXPECT_VALS(v, 2);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_transpose_int(s, 0, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(s);
  kd_tensor_release(a);
  /* Zero-size and meta. */
  kd_tensor *m = META(KD_FLOAT32, 5, 0);
  KD_ASSERT_OK(kd_transpose_int(m, 0, 1, &v));
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 0, 5);
  EXPECT_GEOM(v, (0, 5), (1, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_transpose_(m, 0, 1));
  EXPECT_GEOM(m, (0, 5), (1, 1), 0);
  kd_tensor_release(m);
}

static void test_t(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT16, 2, 3), *v = NULL;
  KD_ASSERT_OK(kd_t(a, &v));
  EXPECT_GEOM(v, (3, 2), (1, 3), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  kd_tensor *one = IOTA(KD_INT16, 4), *s = oc_scalar(5);
  KD_ASSERT_OK(kd_t(one, &v)); /* 1-d: unchanged */
  EXPECT_GEOM(v, (4), (1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_t(s, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  kd_tensor *three = IOTA(KD_INT16, 1, 2, 3);
  KD_ASSERT_ERR(kd_t(three, &v), KD_EINVAL,
                "t() expects a tensor with <= 2 dimensions, but self is 3D");
  assert_null(v);
  KD_ASSERT_ERR(kd_t_(three), KD_EINVAL,
                "t_() expects a tensor with <= 2 dimensions, but self is 3D");
  KD_ASSERT_OK(kd_t_(a));
  EXPECT_GEOM(a, (3, 2), (1, 3), 0);
  EXPECT_VALS(a, 0, 3, 1, 4, 2, 5);
  kd_tensor *m = META(KD_BFLOAT16, 7, 2);
  KD_ASSERT_OK(kd_t(m, &v));
  EXPECT_SHAPE(v, KD_BFLOAT16, KD_DEVICE_META, 2, 7);
  kd_tensor_release(v);
  RELEASE(m, three, s, one, a);
}

static void test_permute(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT64, 2, 3, 4), *v = NULL;
  KD_ASSERT_OK(kd_permute(a, INTS(2, 0, 1), &v));
  EXPECT_GEOM(v, (4, 2, 3), (1, 12, 4), 0);
  oc_expect_view_of(v, a, 0);
  /* v[1][1][2] = a[1][2][1] = 12 + 8 + 1 */
  assert_true(oc_at(v, 1 * 6 + 1 * 3 + 2) == 21);
  expect_write_through(v, I(3, 1, 0), a, I(1, 0, 3));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_permute(a, INTS(-1, -3, 1), &v));
  EXPECT_GEOM(v, (4, 2, 3), (1, 12, 4), 0);
  kd_tensor_release(v);
  /* Permuting a permuted view composes the strides. */
  kd_tensor *p = NULL, *q = NULL;
  KD_ASSERT_OK(kd_permute(a, INTS(1, 2, 0), &p)); /* [3, 4, 2] strides [4, 1, 12] */
  KD_ASSERT_OK(kd_permute(p, INTS(2, 0, 1), &q)); /* back to a's geometry */
  EXPECT_GEOM(q, (2, 3, 4), (12, 4, 1), 0);
  RELEASE(q, p);
  KD_ASSERT_ERR(kd_permute(a, INTS(0, 1), &v), KD_EINVAL, "number of dims don't match in permute");
  assert_null(v);
  KD_ASSERT_ERR(kd_permute(a, INTS(0, 1, -3), &v), KD_EINVAL, "repeated dim in permute");
  KD_ASSERT_ERR(kd_permute(a, INTS(0, 1, 3), &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  kd_tensor_release(a);
  kd_tensor *s0 = oc_scalar(1);
  KD_ASSERT_OK(kd_permute(s0, NO_INTS, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  kd_tensor_release(s0);
  kd_tensor *m = META(KD_BOOL, 2, 0, 3);
  KD_ASSERT_OK(kd_permute(m, INTS(2, 0, 1), &v));
  EXPECT_SHAPE(v, KD_BOOL, KD_DEVICE_META, 3, 2, 0);
  EXPECT_GEOM(v, (3, 2, 0), (1, 3, 3), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- expand, expand_as ---------------------------------------------------------------- */

static void test_expand(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT32, 3, 1), *v = NULL;
  KD_ASSERT_OK(kd_expand(a, INTS(2, 3, 4), false, &v));
  EXPECT_GEOM(v, (2, 3, 4), (0, 1, 0), 0);
  oc_expect_view_of(v, a, 0);
  /* v[i][j][k] = j */
  EXPECT_VALS(v, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2);
  /* Every element of a row is one memory location: a write shows in all of them. */
  expect_write_through(v, I(1, 2, 3), a, I(2, 0));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_expand(a, INTS(-1, 2), true, &v));
  EXPECT_GEOM(v, (3, 2), (1, 0), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_expand(a, INTS(1, 3, 1), false, &v)); /* new leading 1: stride 3 */
  EXPECT_GEOM(v, (1, 3, 1), (3, 1, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_expand(a, INTS(4), false, &v), KD_EINVAL,
                "expand(CPUIntType{[3, 1]}, size=[4]): the number of sizes provided (1) must be "
                "greater or equal to the number of dimensions in the tensor (2)");
  assert_null(v);
  KD_ASSERT_ERR(kd_expand(a, INTS(2, 4), false, &v), KD_EINVAL,
                "The expanded size of the tensor (2) must match the existing size (3) at "
                "non-singleton dimension 0.  Target sizes: [2, 4].  Tensor sizes: [3, 1]");
  KD_ASSERT_ERR(kd_expand(a, INTS(-1, 3, 1), false, &v), KD_EINVAL,
                "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                "dimension 0");
  KD_ASSERT_ERR(kd_expand(a, INTS(3, -2), false, &v), KD_EINVAL,
                "The expanded size of the tensor (-2) isn't allowed");
  /* expand_as; to size 0. */
  kd_tensor *like = META(KD_FLOAT32, 3, 0);
  KD_ASSERT_OK(kd_expand_as(a, like, &v));
  EXPECT_GEOM(v, (3, 0), (1, 0), 0);
  kd_tensor_release(v);
  kd_tensor_release(like);
  kd_tensor *small = META(KD_FLOAT32, 2);
  KD_ASSERT_ERR(kd_expand_as(a, small, &v), KD_EINVAL, "the number of sizes provided (1)");
  kd_tensor_release(small);
  /* A non-contiguous input keeps its strides: a^T [1, 3] strides [1, 1] to [2, 3]. */
  kd_tensor *at = NULL;
  KD_ASSERT_OK(kd_t(a, &at));
  KD_ASSERT_OK(kd_expand(at, INTS(2, 3), false, &v));
  EXPECT_GEOM(v, (2, 3), (0, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 0, 1, 2);
  RELEASE(v, at, a);
  /* A scalar to [2, 2]. */
  kd_tensor *s = oc_scalar(5);
  KD_ASSERT_OK(kd_expand(s, INTS(2, 2), false, &v));
  EXPECT_GEOM(v, (2, 2), (0, 0), 0);
  EXPECT_VALS(v, 5, 5, 5, 5);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *m = META(KD_FLOAT32, 1);
  KD_ASSERT_OK(kd_expand(m, INTS(7), false, &v));
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 7);
  EXPECT_GEOM(v, (7), (0), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_expand(m, NO_INTS, false, &v), KD_EINVAL,
                "expand(MetaFloatType{[1]}, size=[]): the number of sizes provided (0)");
  kd_tensor_release(m);
}

/* ---- squeeze, unsqueeze ------------------------------------------------------------------ */

static void test_squeeze(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 1, 3, 1, 2), *v = NULL;
  KD_ASSERT_OK(kd_squeeze(a, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5);
  oc_expect_view_of(v, a, 0);
  expect_write_through(v, I(2, 1), a, I(0, 2, 0, 1));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_squeeze_dim(a, -2, &v));
  EXPECT_GEOM(v, (1, 3, 2), (6, 2, 1), 0);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_squeeze_dim(a, 1, &v)); /* size 3: unchanged */
  EXPECT_GEOM(v, (1, 3, 1, 2), (6, 2, 2, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_squeeze_dim(a, 4, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-4, 3], but got 4)");
  assert_null(v);
  KD_ASSERT_OK(kd_squeeze_dim_(a, 0));
  EXPECT_GEOM(a, (3, 1, 2), (2, 2, 1), 0);
  KD_ASSERT_OK(kd_squeeze_(a));
  EXPECT_GEOM(a, (3, 2), (2, 1), 0);
  EXPECT_VALS(a, 0, 1, 2, 3, 4, 5);
  KD_ASSERT_ERR(kd_squeeze_dim_(a, -3), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_GEOM(a, (3, 2), (2, 1), 0);
  kd_tensor_release(a);
  /* A sliced view keeps its offset: b[:, 1:2] of [2, 3] is [2, 1] at offset 1. */
  kd_tensor *b = IOTA(KD_INT64, 2, 3), *col = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(b, 1, I(1), I(2), 1, &col));
  KD_ASSERT_OK(kd_squeeze(col, &v));
  EXPECT_GEOM(v, (2), (3), 1);
  EXPECT_VALS(v, 1, 4);
  oc_expect_view_of(v, b, 1);
  RELEASE(v, col, b);
  /* Scalars. */
  kd_tensor *s = oc_scalar(3);
  KD_ASSERT_OK(kd_squeeze(s, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_squeeze_dim(s, -1, &v));
  assert_int_equal(kd_tensor_ndim(v), 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_squeeze_dim(s, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(s);
  /* Zero-size and meta: the size-0 dimension stays. */
  kd_tensor *m = META(KD_INT8, 1, 1, 0);
  KD_ASSERT_OK(kd_squeeze(m, &v));
  EXPECT_SHAPE(v, KD_INT8, KD_DEVICE_META, 0);
  EXPECT_GEOM(v, (0), (1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_squeeze_dim(m, 2, &v));
  EXPECT_SHAPE(v, KD_INT8, KD_DEVICE_META, 1, 1, 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_squeeze_(m));
  EXPECT_SHAPE(m, KD_INT8, KD_DEVICE_META, 0);
  kd_tensor_release(m);
}

static void test_unsqueeze(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3), *v = NULL;
  KD_ASSERT_OK(kd_unsqueeze(a, 0, &v));
  EXPECT_GEOM(v, (1, 2, 3), (6, 3, 1), 0);
  oc_expect_view_of(v, a, 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_unsqueeze(a, 1, &v));
  EXPECT_GEOM(v, (2, 1, 3), (3, 3, 1), 0);
  expect_write_through(v, I(1, 0, 2), a, I(1, 2));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_unsqueeze(a, -1, &v));
  EXPECT_GEOM(v, (2, 3, 1), (3, 1, 1), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_unsqueeze(a, 3, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  assert_null(v);
  KD_ASSERT_ERR(kd_unsqueeze(a, -4, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  KD_ASSERT_ERR(kd_unsqueeze_(a, 5), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 5)");
  EXPECT_GEOM(a, (2, 3), (3, 1), 0);
  /* Non-contiguous: the transpose [3, 2] strides [1, 3]. */
  kd_tensor *tr = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &tr));
  KD_ASSERT_OK(kd_unsqueeze(tr, 1, &v));
  EXPECT_GEOM(v, (3, 1, 2), (1, 6, 3), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_unsqueeze_(tr, 0));
  EXPECT_GEOM(tr, (1, 3, 2), (3, 1, 3), 0);
  oc_expect_view_of(tr, a, 0);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  kd_tensor *s = oc_scalar(1);
  KD_ASSERT_OK(kd_unsqueeze(s, -1, &v));
  EXPECT_GEOM(v, (1), (1), 0);
  EXPECT_VALS(v, 1);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_unsqueeze(s, 2, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 2)");
  kd_tensor_release(s);
  kd_tensor *m = META(KD_COMPLEX128, 4, 0);
  KD_ASSERT_OK(kd_unsqueeze(m, 1, &v));
  EXPECT_SHAPE(v, KD_COMPLEX128, KD_DEVICE_META, 4, 1, 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_unsqueeze_(m, 2));
  EXPECT_SHAPE(m, KD_COMPLEX128, KD_DEVICE_META, 4, 0, 1);
  kd_tensor_release(m);
}

/* ---- flatten --------------------------------------------------------------------------- */

static void test_flatten(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3, 4), *v = NULL;
  KD_ASSERT_OK(kd_flatten_using_ints(a, 0, -1, &v));
  EXPECT_GEOM(v, (24), (1), 0);
  oc_expect_view_of(v, a, 0);
  expect_write_through(v, I(13), a, I(1, 0, 1));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_flatten_using_ints(a, 1, 2, &v));
  EXPECT_GEOM(v, (2, 12), (12, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_flatten_using_ints(a, -2, -2, &v));
  assert_ptr_equal(v, a); /* PyTorch returns self */
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_flatten_using_ints(a, 2, 1, &v), KD_EINVAL,
                "flatten() has invalid args: start_dim cannot come after end_dim");
  assert_null(v);
  KD_ASSERT_ERR(kd_flatten_using_ints(a, 0, 3, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  KD_ASSERT_ERR(kd_flatten_using_ints(a, -4, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  /* Non-contiguous: a copy. a.transpose(0, 2) is [4, 3, 2]; flattened [0, 12, 4, 16, 8, 20, ...] */
  kd_tensor *tr = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, 2, &tr));
  KD_ASSERT_OK(kd_flatten_using_ints(tr, 1, 2, &v));
  EXPECT_GEOM(v, (4, 6), (6, 1), 0);
  assert_false(kd_tensor_shares_storage(a, v));
  EXPECT_VALS(v, 0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19,
              11, 23);
  kd_tensor_release(v);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  kd_tensor *s = oc_scalar(4);
  KD_ASSERT_OK(kd_flatten_using_ints(s, 0, -1, &v));
  EXPECT_GEOM(v, (1), (1), 0);
  EXPECT_VALS(v, 4);
  kd_tensor_release(v);
  kd_tensor_release(s);
  kd_tensor *m = META(KD_FLOAT32, 2, 0, 3);
  KD_ASSERT_OK(kd_flatten_using_ints(m, 0, 1, &v));
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 0, 3);
  EXPECT_GEOM(v, (0, 3), (3, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- slice, select, narrow ----------------------------------------------------------------- */

static void test_slice(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT64, 5), *v = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(a, 0, I(1), I(4), 2, &v));
  EXPECT_GEOM(v, (2), (2), 1);
  EXPECT_VALS(v, 1, 3);
  oc_expect_view_of(v, a, 1);
  expect_write_through(v, I(1), a, I(3));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_slice_Tensor(a, -1, NULL, NULL, 3, &v));
  EXPECT_VALS(v, 0, 3);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_slice_Tensor(a, 0, I(-2), I(100), 1, &v));
  EXPECT_GEOM(v, (2), (1), 3);
  EXPECT_VALS(v, 3, 4);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_slice_Tensor(a, 0, I(-100), I(-4), 1, &v));
  EXPECT_VALS(v, 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_slice_Tensor(a, 0, I(4), I(2), 1, &v)); /* empty */
  EXPECT_GEOM(v, (0), (1), 4);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_slice_Tensor(a, 0, I(7), NULL, 1, &v)); /* empty, at the end */
  EXPECT_GEOM(v, (0), (1), 5);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_slice_Tensor(a, 0, I(INT64_MIN), NULL, INT64_MAX, &v)); /* no overflow */
  /* PyTorch gives the stride INT64_MAX, whose byte stride overflows: the
   * one element left keeps a's stride (docs/ARCHITECTURE.md, "Foreign
   * geometry"). */
  EXPECT_GEOM(v, (1), (1), 0);
  EXPECT_VALS(v, 0);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_slice_Tensor(a, 0, NULL, NULL, 0, &v), KD_EINVAL, "slice step must be positive");
  assert_null(v);
  KD_ASSERT_ERR(kd_slice_Tensor(a, 0, NULL, NULL, -1, &v), KD_EINVAL,
                "slice step must be positive");
  KD_ASSERT_ERR(kd_slice_Tensor(a, 1, NULL, NULL, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  kd_tensor_release(a);
  /* 2-D, columns 1: of [[0, 1, 2], [3, 4, 5]]; then rows of that. */
  kd_tensor *b = IOTA(KD_FLOAT32, 2, 3), *w = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(b, 1, I(1), NULL, 1, &v));
  EXPECT_GEOM(v, (2, 2), (3, 1), 1);
  EXPECT_VALS(v, 1, 2, 4, 5);
  KD_ASSERT_OK(kd_slice_Tensor(v, 0, I(1), NULL, 1, &w)); /* [[4, 5]] at offset 4 */
  EXPECT_GEOM(w, (1, 2), (3, 1), 4);
  EXPECT_VALS(w, 4, 5);
  oc_expect_view_of(w, b, 4);
  RELEASE(w, v, b);
  kd_tensor *s = oc_scalar(1);
  KD_ASSERT_ERR(kd_slice_Tensor(s, 0, NULL, NULL, 1, &v), KD_ERANGE,
                "slice() cannot be applied to a 0-dim tensor.");
  kd_tensor_release(s);
  kd_tensor *m = META(KD_FLOAT32, 10, 2);
  KD_ASSERT_OK(kd_slice_Tensor(m, 0, I(2), I(9), 3, &v)); /* 2, 5, 8 */
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 3, 2);
  EXPECT_GEOM(v, (3, 2), (6, 1), 4);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

static void test_select(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3), *v = NULL;
  KD_ASSERT_OK(kd_select_int(a, 1, -1, &v));
  EXPECT_GEOM(v, (2), (3), 2);
  EXPECT_VALS(v, 2, 5);
  oc_expect_view_of(v, a, 2);
  expect_write_through(v, I(1), a, I(1, 2));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_select_int(a, -2, 1, &v));
  EXPECT_VALS(v, 3, 4, 5);
  kd_tensor *e = NULL;
  KD_ASSERT_OK(kd_select_int(v, 0, 2, &e)); /* to 0-dim */
  assert_int_equal(kd_tensor_ndim(e), 0);
  oc_expect_view_of(e, a, 5);
  EXPECT_VALS(e, 5);
  kd_tensor_release(e);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_select_int(a, 0, 2, &v), KD_ERANGE,
                "select(): index 2 out of range for tensor of size [2, 3] at dimension 0");
  assert_null(v);
  KD_ASSERT_ERR(kd_select_int(a, -1, -4, &v), KD_ERANGE,
                "select(): index -4 out of range for tensor of size [2, 3] at dimension 1");
  KD_ASSERT_ERR(kd_select_int(a, 2, 0, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor_release(a);
  kd_tensor *s = oc_scalar(1);
  KD_ASSERT_ERR(kd_select_int(s, 0, 0, &v), KD_ERANGE,
                "select() cannot be applied to a 0-dim tensor.");
  kd_tensor_release(s);
  /* Zero-size, on meta. */
  kd_tensor *z = META(KD_FLOAT32, 0, 4);
  KD_ASSERT_OK(kd_select_int(z, 1, 3, &v));
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 0);
  EXPECT_GEOM(v, (0), (4), 3);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_select_int(z, 0, 0, &v), KD_ERANGE,
                "select(): index 0 out of range for tensor of size [0, 4] at dimension 0");
  kd_tensor_release(z);
}

static void test_narrow(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT32, 4, 3), *v = NULL;
  KD_ASSERT_OK(kd_narrow(a, 0, 1, 2, &v));
  EXPECT_GEOM(v, (2, 3), (3, 1), 3);
  EXPECT_VALS(v, 3, 4, 5, 6, 7, 8);
  oc_expect_view_of(v, a, 3);
  expect_write_through(v, I(1, 2), a, I(2, 2));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_narrow(a, -1, -1, 1, &v));
  EXPECT_GEOM(v, (4, 1), (3, 1), 2);
  EXPECT_VALS(v, 2, 5, 8, 11);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_narrow(a, 0, 4, 0, &v)); /* start == size */
  EXPECT_GEOM(v, (0, 3), (3, 1), 12);
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_narrow(a, 0, 3, 2, &v), KD_EINVAL,
                "start (3) + length (2) exceeds dimension size (4).");
  assert_null(v);
  KD_ASSERT_ERR(kd_narrow(a, 0, 0, -1, &v), KD_EINVAL,
                "start (0) + length (-1) exceeds dimension size (4).");
  KD_ASSERT_ERR(kd_narrow(a, 0, 5, 0, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-4, 3], but got 5)");
  KD_ASSERT_ERR(kd_narrow(a, 2, 0, 1, &v), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  /* narrow.Tensor: start from a 0-dim integral tensor. */
  kd_tensor *st = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(0, NULL, KD_INT64, (int64_t[]){2}, &st));
  KD_ASSERT_OK(kd_narrow_Tensor(a, 0, st, 2, &v));
  EXPECT_VALS(v, 6, 7, 8, 9, 10, 11);
  oc_expect_view_of(v, a, 6);
  kd_tensor_release(v);
  kd_tensor_release(st);
  kd_tensor *fs = oc_scalar(1), *vec = IOTA(KD_INT64, 1);
  KD_ASSERT_ERR(kd_narrow_Tensor(a, 0, fs, 1, &v), KD_EINVAL,
                "start must be an 0-dim integral Tensor.");
  KD_ASSERT_ERR(kd_narrow_Tensor(a, 0, vec, 1, &v), KD_EINVAL,
                "start must be an 0-dim integral Tensor.");
  KD_ASSERT_ERR(kd_narrow(fs, 0, 0, 1, &v), KD_EINVAL,
                "narrow() cannot be applied to a 0-dim tensor.");
  RELEASE(vec, fs, a);
  kd_tensor *m = META(KD_FLOAT32, 6);
  KD_ASSERT_OK(kd_narrow(m, 0, 2, 3, &v));
  EXPECT_SHAPE(v, KD_FLOAT32, KD_DEVICE_META, 3);
  EXPECT_GEOM(v, (3), (1), 2);
  kd_tensor_release(v);
  kd_tensor_release(m);
}

/* ---- contiguous, clone -------------------------------------------------------------------- */

static void test_contiguous_clone(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3), *v = NULL, *tr = NULL;
  KD_ASSERT_OK(kd_contiguous(a, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
  assert_ptr_equal(v, a); /* already contiguous: self itself */
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &tr));
  KD_ASSERT_OK(kd_contiguous(tr, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  assert_false(kd_tensor_shares_storage(v, a));
  kd_tensor_release(v);
  KD_ASSERT_ERR(kd_contiguous(tr, KD_MEMORY_FORMAT_PRESERVE, &v), KD_EINVAL,
                "preserve memory format is unsupported by the contiguous operator");
  assert_null(v);
  KD_ASSERT_ERR(kd_contiguous(tr, KD_MEMORY_FORMAT_CHANNELS_LAST, &v), KD_EINVAL,
                "required rank 4 tensor to use channels_last format");
  /* clone: preserve keeps the strides of a dense tensor... */
  KD_ASSERT_OK(kd_clone(tr, NULL, &v));
  EXPECT_GEOM(v, (3, 2), (1, 3), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  assert_false(kd_tensor_shares_storage(v, a));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_clone(tr, &(kd_memory_format){KD_MEMORY_FORMAT_CONTIGUOUS}, &v));
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 3, 1, 4, 2, 5);
  kd_tensor_release(v);
  /* ...and makes others row-major: columns 0 and 2 of a. */
  kd_tensor *sl = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(a, 1, NULL, NULL, 2, &sl));
  KD_ASSERT_OK(kd_clone(sl, NULL, &v));
  EXPECT_GEOM(v, (2, 2), (2, 1), 0);
  EXPECT_VALS(v, 0, 2, 3, 5);
  kd_tensor_release(v);
  kd_tensor_release(sl);
  KD_ASSERT_ERR(kd_clone(a, &(kd_memory_format){KD_MEMORY_FORMAT_CHANNELS_LAST_3D}, &v),
                KD_EINVAL, "required rank 5 tensor to use channels_last_3d format");
  /* A clone is independent of its source. */
  KD_ASSERT_OK(kd_clone(a, NULL, &v));
  kd_scalar nine = kd_scalar_int(9);
  KD_ASSERT_OK(kd_tensor_set(v, I(0, 0), &nine));
  EXPECT_VALS(a, 0, 1, 2, 3, 4, 5);
  kd_tensor_release(v);
  kd_tensor_release(tr);
  kd_tensor_release(a);
  /* channels_last: NCHW [1, 2, 2, 2] -> strides [8, 1, 4, 2]. */
  kd_tensor *img = IOTA(KD_INT64, 1, 2, 2, 2), *again = NULL;
  KD_ASSERT_OK(kd_contiguous(img, KD_MEMORY_FORMAT_CHANNELS_LAST, &v));
  EXPECT_GEOM(v, (1, 2, 2, 2), (8, 1, 4, 2), 0);
  EXPECT_VALS(v, 0, 1, 2, 3, 4, 5, 6, 7);
  /* The bytes in memory: c fastest: 0, 4, 1, 5, 2, 6, 3, 7. */
  const int64_t *p = kd_tensor_data(v);
  const int64_t bytes[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (int k = 0; k < 8; k++) assert_int_equal(p[k], bytes[k]);
  KD_ASSERT_OK(kd_contiguous(v, KD_MEMORY_FORMAT_CHANNELS_LAST, &again));
  assert_ptr_equal(again, v);
  kd_tensor_release(again);
  KD_ASSERT_OK(kd_clone(v, NULL, &again)); /* preserve keeps channels_last */
  EXPECT_GEOM(again, (1, 2, 2, 2), (8, 1, 4, 2), 0);
  kd_tensor_release(again);
  RELEASE(v, img);
  /* Zero-size and meta. */
  kd_tensor *z = EMPTY(KD_FLOAT32, 0, 2);
  KD_ASSERT_OK(kd_clone(z, NULL, &v));
  EXPECT_GEOM(v, (0, 2), (2, 1), 0);
  kd_tensor_release(v);
  kd_tensor_release(z);
  kd_tensor *m = META(KD_BFLOAT16, 2, 3), *mt = NULL;
  KD_ASSERT_OK(kd_transpose_int(m, 0, 1, &mt));
  KD_ASSERT_OK(kd_contiguous(mt, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
  EXPECT_SHAPE(v, KD_BFLOAT16, KD_DEVICE_META, 3, 2);
  EXPECT_GEOM(v, (3, 2), (2, 1), 0);
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_clone(mt, NULL, &v));
  EXPECT_SHAPE(v, KD_BFLOAT16, KD_DEVICE_META, 3, 2);
  EXPECT_GEOM(v, (3, 2), (1, 3), 0);
  kd_tensor_release(v);
  RELEASE(mt, m);
}

/* ---- Every dtype ---------------------------------------------------------------------------- */

/* Element k (row-major) of v holds the bytes of base element map[k]: bytes
 * compared directly, so that every dtype is checked the same way. */
static void expect_elements(const kd_tensor *v, const unsigned char *base_bytes,
                            const int *map, int n, const char *what) {
  size_t isz = kd_tensor_itemsize(v);
  assert_int_equal(kd_tensor_numel(v), n);
  int nd = kd_tensor_ndim(v);
  for (int k = 0; k < n; k++) {
    int64_t idx[KD_MAX_DIMS], off = 0;
    oc_unflatten(nd, kd_tensor_sizes(v), k, idx);
    for (int d = 0; d < nd; d++) off += idx[d] * kd_tensor_strides(v)[d];
    const unsigned char *got = (const unsigned char *)kd_tensor_data(v) + off * (int64_t)isz;
    if (memcmp(got, base_bytes + (size_t)map[k] * isz, isz) != 0)
      fail_msg("%s (%s): element %d is not element %d of the base", what,
               kd_dtype_name(kd_tensor_dtype(v)), k, map[k]);
  }
}

static void test_every_dtype(void **state) {
  (void)state;
  oc_open();
  for (int d = 0; d < OC_NALL; d++) {
    kd_dtype dt = OC_ALL[d];
    size_t isz = kd_dtype_size(dt);
    /* a: [2, 3] of distinct byte patterns (element k: bytes k*16 + b + 1). */
    kd_tensor *a = EMPTY(dt, 2, 3), *v = NULL;
    unsigned char *p = kd_tensor_data(a);
    for (size_t k = 0; k < 6; k++)
      for (size_t b = 0; b < isz; b++) p[k * isz + b] = (unsigned char)(k * 16 + b + 1);
    static const int same[6] = {0, 1, 2, 3, 4, 5}, tmap[6] = {0, 3, 1, 4, 2, 5};
#define VIEW_CASE(call, what, offset, map, n)          \
  do {                                                 \
    v = NULL;                                          \
    KD_ASSERT_OK(call);                                \
    assert_int_equal(kd_tensor_dtype(v), dt);          \
    oc_expect_view_of(v, a, (offset));                 \
    expect_elements(v, p, (map), (n), (what));         \
    kd_tensor_release(v);                              \
  } while (0)
    VIEW_CASE(kd_view(a, INTS(3, 2), &v), "view", 0, same, 6);
    VIEW_CASE(kd_reshape(a, INTS(6), &v), "reshape", 0, same, 6);
    VIEW_CASE(kd_transpose_int(a, 0, 1, &v), "transpose", 0, tmap, 6);
    VIEW_CASE(kd_t(a, &v), "t", 0, tmap, 6);
    VIEW_CASE(kd_permute(a, INTS(1, 0), &v), "permute", 0, tmap, 6);
    VIEW_CASE(kd_unsqueeze(a, 1, &v), "unsqueeze", 0, same, 6);
    VIEW_CASE(kd_flatten_using_ints(a, 0, 1, &v), "flatten", 0, same, 6);
    VIEW_CASE(kd_slice_Tensor(a, 1, I(1), NULL, 1, &v), "slice", 1, ((const int[]){1, 2, 4, 5}), 4);
    VIEW_CASE(kd_select_int(a, 0, 1, &v), "select", 3, ((const int[]){3, 4, 5}), 3);
    VIEW_CASE(kd_narrow(a, 1, 2, 1, &v), "narrow", 2, ((const int[]){2, 5}), 2);
    kd_tensor *row = NULL;
    KD_ASSERT_OK(kd_view(a, INTS(1, 6), &row));
    VIEW_CASE(kd_squeeze(row, &v), "squeeze", 0, same, 6);
    VIEW_CASE(kd_expand(row, INTS(2, 6), false, &v), "expand", 0,
              ((const int[]){0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}), 12);
    kd_tensor_release(row);
#undef VIEW_CASE
    /* The copies: reshape of the transpose, contiguous, clone. */
    kd_tensor *tr = NULL;
    KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &tr));
    KD_ASSERT_OK(kd_reshape(tr, INTS(6), &v));
    assert_false(kd_tensor_shares_storage(v, a));
    expect_elements(v, p, tmap, 6, "reshape (copy)");
    kd_tensor_release(v);
    KD_ASSERT_OK(kd_contiguous(tr, KD_MEMORY_FORMAT_CONTIGUOUS, &v));
    assert_false(kd_tensor_shares_storage(v, a));
    assert_true(kd_tensor_is_contiguous(v));
    expect_elements(v, p, tmap, 6, "contiguous");
    kd_tensor_release(v);
    KD_ASSERT_OK(kd_clone(tr, NULL, &v));
    assert_false(kd_tensor_shares_storage(v, a));
    expect_elements(v, p, tmap, 6, "clone");
    kd_tensor_release(v);
    kd_tensor_release(tr);
    /* Meta: dtype kept. */
    kd_tensor *m = oc_meta(dt, 2, I(2, 3));
    KD_ASSERT_OK(kd_permute(m, INTS(1, 0), &v));
    EXPECT_SHAPE(v, dt, KD_DEVICE_META, 3, 2);
    kd_tensor_release(v);
    KD_ASSERT_OK(kd_reshape(m, INTS(-1), &v));
    EXPECT_SHAPE(v, dt, KD_DEVICE_META, 6);
    kd_tensor_release(v);
    RELEASE(m, a);
  }
}

/* ---- Key sets: views keep their base's, new tensors follow inference mode ------- */

/* Every view operator's result carries `want`, the key set of its base a. */
static void expect_views_keep_keys(kd_tensor *a, kd_keyset want) {
  kd_tensor *v[9] = {NULL};
  KD_ASSERT_OK(kd_view(a, INTS(3, 2), &v[0]));
  KD_ASSERT_OK(kd_view_dtype(a, KD_INT32, &v[1]));
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &v[2]));
  KD_ASSERT_OK(kd_t(a, &v[3]));
  KD_ASSERT_OK(kd_select_int(a, 0, 1, &v[4]));
  KD_ASSERT_OK(kd_narrow(a, 1, 1, 2, &v[5]));
  KD_ASSERT_OK(kd_unsqueeze(a, 0, &v[6]));
  KD_ASSERT_OK(kd_expand(a, INTS(4, 2, 3), false, &v[7]));
  KD_ASSERT_OK(kd_contiguous(a, KD_MEMORY_FORMAT_CONTIGUOUS, &v[8])); /* a itself */
  for (int i = 0; i < 9; i++) {
    assert_true(kd_tensor_shares_storage(v[i], a));
    if (kd_tensor_key_set(v[i]) != want) fail_msg("view %d does not carry its base's keys", i);
    kd_tensor_release(v[i]);
  }
}

static void test_view_keys(void **state) {
  (void)state;
  oc_open();
  kd_keyset normal = kd_keyset_of(KD_KEY_CPU) | kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW) |
                     kd_keyset_of(KD_KEY_AUTOGRAD_CPU);
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3), *c = NULL, *n = NULL;
  assert_true(kd_tensor_key_set(a) == normal);
  expect_views_keep_keys(a, normal);
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  /* Inside: views of a normal tensor stay normal... */
  expect_views_keep_keys(a, normal);
  /* ...kernels' results are inference tensors, and so are their views. */
  KD_ASSERT_OK(kd_clone(a, NULL, &c));
  KD_ASSERT_OK(kd_neg(a, &n));
  assert_true(kd_tensor_key_set(c) == kd_keyset_of(KD_KEY_CPU));
  assert_true(kd_tensor_key_set(n) == kd_keyset_of(KD_KEY_CPU));
  expect_views_keep_keys(c, kd_keyset_of(KD_KEY_CPU));
  kd_inference_mode_exit(g);
  expect_views_keep_keys(c, kd_keyset_of(KD_KEY_CPU));
  RELEASE(a, c, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_view_keys),
      cmocka_unit_test(test_view),
      cmocka_unit_test(test_view_zero_elements_overflow),
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
      cmocka_unit_test(test_every_dtype),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
