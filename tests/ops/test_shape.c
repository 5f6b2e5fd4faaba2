/*
 * test_shape.c: the shape operators that copy (ops/native/shape.c) through
 * the generated entry points: cat, cat.out, stack, stack.out, tril, tril_,
 * tril.out, triu, triu_, triu.out, index_select, index_select.out, gather,
 * gather.out.
 *
 * Expected values are worked out by hand in the comments. The kernels move
 * bytes, so every dtype runs through each operator (compared byte for
 * byte); meta tensors give sizes and dtypes only; errors are checked by
 * status and message. The views are in test_views.c.
 */
#include "ops_check.h"
#include "native/views.h"

/* ---- cat ------------------------------------------------------------------------------ */

static void test_cat(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 2), *b = IOTA(KD_FLOAT32, 1, 2), *r = NULL;
  KD_ASSERT_OK(kd_cat(TENSORS(a, b), 0, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 3, 2);
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  EXPECT_VALS(r, 0, 1, 2, 3, 0, 1);
  assert_false(kd_tensor_shares_storage(r, a));
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cat(TENSORS(a), 0, &r)); /* one input: a copy */
  EXPECT_VALS(r, 0, 1, 2, 3);
  assert_false(kd_tensor_shares_storage(r, a));
  kd_tensor_release(r);
  /* Shape mismatch and dimension out of range. */
  KD_ASSERT_ERR(kd_cat(TENSORS(a, b), 1, &r), KD_EINVAL,
                "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 1 "
                "for tensor number 1 in the list.");
  assert_null(r);
  KD_ASSERT_ERR(kd_cat(TENSORS(a, b), 2, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  KD_ASSERT_ERR(kd_cat(TENSORS(a, b), -3, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  /* Along -1 with a transposed int32 second input: promoted to float32.
   * a = [[0, 1], [2, 3]]; c = [[0, 1], [2, 3]]^T = [[0, 2], [1, 3]]. */
  kd_tensor *c0 = IOTA(KD_INT32, 2, 2), *c = NULL;
  KD_ASSERT_OK(kd_t(c0, &c));
  KD_ASSERT_OK(kd_cat(TENSORS(a, c), -1, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 2, 4);
  EXPECT_GEOM(r, (2, 4), (4, 1), 0);
  EXPECT_VALS(r, 0, 1, 0, 2, 2, 3, 1, 3);
  kd_tensor_release(r);
  /* Three inputs, the middle one with no rows along dim. */
  kd_tensor *z = EMPTY(KD_FLOAT32, 0, 2);
  KD_ASSERT_OK(kd_cat(TENSORS(b, z, a), 0, &r));
  EXPECT_VALS(r, 0, 1, 0, 1, 2, 3);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cat(TENSORS(z, z), 0, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 0, 2);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cat(TENSORS(z, z), 1, &r)); /* [0, 4] */
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 0, 4);
  kd_tensor_release(r);
  /* Legacy: 1-dim size-0 tensors are skipped whatever their sizes and dtype
   * (which still takes part in promotion: int64 and float32 give float32). */
  kd_tensor *e = EMPTY(KD_INT64, 0);
  KD_ASSERT_OK(kd_cat(TENSORS(e, a, e, b), 0, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 3, 2);
  EXPECT_VALS(r, 0, 1, 2, 3, 0, 1);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cat(TENSORS(e, e), 0, &r));
  EXPECT_GEOM(r, (0), (1), 0);
  kd_tensor_release(r);
  /* Errors. */
  kd_tensor *s = oc_scalar(1), *three = IOTA(KD_FLOAT32, 1, 2, 2), *m = META(KD_FLOAT32, 1, 2);
  KD_ASSERT_ERR(kd_cat(TENSORS(a, s), 0, &r), KD_EINVAL,
                "zero-dimensional tensor (at position 1) cannot be concatenated");
  KD_ASSERT_ERR(kd_cat(TENSORS(a, three), 0, &r), KD_EINVAL,
                "Tensors must have same number of dimensions: got 2 and 3");
  KD_ASSERT_ERR(kd_cat(TENSORS(a, m), 0, &r), KD_EINVAL,
                "Expected all tensors to be on the same device, but found at least two devices, "
                "cpu and meta!");
  KD_ASSERT_ERR(kd_cat(TENSORS(m, a), 0, &r), KD_EINVAL,
                "Expected all tensors to be on the same device, but found at least two devices, "
                "meta and cpu!");
  /* An empty list has no tensor to dispatch on: as in PyTorch, cat (a CPU
   * and Meta kernel, no composite one) is found for no backend. */
  KD_ASSERT_ERR(kd_cat((kd_tensors){NULL, 0}, 0, &r), KD_ENOKERNEL,
                "Could not run 'aten::cat' with arguments from the 'Undefined' backend");
  /* The kernel's own message for it, which no entry point reaches. */
  KD_ASSERT_ERR(kdk_native_cat((kd_tensors){NULL, 0}, 0, &r), KD_EINVAL,
                "torch.cat(): expected a non-empty list of Tensors");
  /* Meta: sizes and the promoted dtype. */
  kd_tensor *m2 = META(KD_FLOAT64, 1, 5);
  KD_ASSERT_OK(kd_cat(TENSORS(m, m2), 1, &r));
  EXPECT_SHAPE(r, KD_FLOAT64, KD_DEVICE_META, 1, 7);
  EXPECT_GEOM(r, (1, 7), (7, 1), 0);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_cat(TENSORS(m, m2), 0, &r), KD_EINVAL,
                "Sizes of tensors must match except in dimension 0. Expected size 2 but got size 5 "
                "for tensor number 1 in the list.");
  RELEASE(m2, m, three, s, e, z, c, c0, b, a);
}

/* Promotion of mixed dtypes (the result dtype and one value of it). */
static void test_cat_promotion(void **state) {
  (void)state;
  oc_open();
  static const struct {
    kd_dtype a, b, want;
  } cases[] = {
      {KD_BOOL, KD_BOOL, KD_BOOL},          {KD_BOOL, KD_UINT8, KD_UINT8},
      {KD_UINT8, KD_INT8, KD_INT16},        {KD_INT16, KD_INT32, KD_INT32},
      {KD_INT64, KD_FLOAT16, KD_FLOAT16},   {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32},
      {KD_FLOAT32, KD_FLOAT64, KD_FLOAT64}, {KD_INT32, KD_COMPLEX64, KD_COMPLEX64},
      {KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kd_tensor *a = FROM(cases[i].a, (2), 1, 0), *b = FROM(cases[i].b, (1), 1), *r = NULL;
    KD_ASSERT_OK(kd_cat(TENSORS(a, b), 0, &r));
    EXPECT_SHAPE(r, cases[i].want, KD_DEVICE_CPU, 3);
    EXPECT_VALS(r, 1, 0, 1);
    kd_tensor_release(r);
    kd_tensor *ma = oc_meta(cases[i].a, 1, I(2)), *mb = oc_meta(cases[i].b, 1, I(4));
    KD_ASSERT_OK(kd_cat(TENSORS(mb, ma), 0, &r));
    EXPECT_SHAPE(r, cases[i].want, KD_DEVICE_META, 6);
    kd_tensor_release(r);
    RELEASE(mb, ma, b, a);
  }
}

static void test_cat_out(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT32, 2), *b = IOTA(KD_INT32, 3), *out = EMPTY(KD_INT64, 1);
  /* An out with elements and other sizes is resized, with a warning. */
  oc_watch_warnings();
  KD_ASSERT_OK(kd_cat_out(TENSORS(a, b), 0, out));
  assert_int_equal(oc_warnings, 1);
  assert_non_null(strstr(oc_last_warning, "An output with one or more elements was resized since "
                                          "it had shape [1], which does not match the required "
                                          "output shape [5]."));
  EXPECT_GEOM(out, (5), (1), 0);
  assert_int_equal(kd_tensor_dtype(out), KD_INT64); /* out's dtype wins */
  EXPECT_VALS(out, 0, 1, 0, 1, 2);
  /* Right sizes: no warning. */
  KD_ASSERT_OK(kd_cat_out(TENSORS(b, a), -1, out));
  EXPECT_VALS(out, 0, 1, 2, 0, 1);
  /* An empty out: no warning either. */
  kd_tensor *e = EMPTY(KD_FLOAT64, 0);
  KD_ASSERT_OK(kd_cat_out(TENSORS(a, a), 0, e));
  assert_int_equal(oc_warnings, 1);
  oc_unwatch_warnings();
  EXPECT_SHAPE(e, KD_FLOAT64, KD_DEVICE_CPU, 4);
  EXPECT_VALS(e, 0, 1, 0, 1);
  /* Wrong out dtype: float inputs cannot go into an int64 out, complex into float, ints into bool. */
  kd_tensor *f = IOTA(KD_FLOAT32, 2), *cx = IOTA(KD_COMPLEX64, 2), *bo = EMPTY(KD_BOOL, 0);
  KD_ASSERT_ERR(kd_cat_out(TENSORS(a, f), 0, out), KD_ETYPE,
                "torch.cat(): input types can't be cast to the desired output type int64");
  KD_ASSERT_ERR(kd_cat_out(TENSORS(cx), 0, e), KD_ETYPE,
                "torch.cat(): input types can't be cast to the desired output type float64");
  KD_ASSERT_ERR(kd_cat_out(TENSORS(a), 0, bo), KD_ETYPE,
                "torch.cat(): input types can't be cast to the desired output type bool");
  EXPECT_GEOM(out, (5), (1), 0); /* a refused out is left alone */
  /* out overlapping an input. */
  KD_ASSERT_ERR(kd_cat_out(TENSORS(a, out), 0, out), KD_EINVAL,
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.");
  /* An out whose elements share memory (an expanded view). */
  kd_tensor *one = EMPTY(KD_INT32, 1), *ex = NULL;
  KD_ASSERT_OK(kd_expand(one, INTS(5), false, &ex));
  KD_ASSERT_ERR(kd_cat_out(TENSORS(a, b), 0, ex), KD_EINVAL,
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location.");
  /* A strided out: every other element of a [10] buffer. */
  kd_tensor *buf = IOTA(KD_INT32, 10), *strided = NULL;
  KD_ASSERT_OK(kd_slice_Tensor(buf, 0, NULL, NULL, 2, &strided));
  KD_ASSERT_OK(kd_cat_out(TENSORS(a, b), 0, strided));
  EXPECT_VALS(buf, 0, 1, 1, 3, 0, 5, 1, 7, 2, 9);
  /* A transposed 2-d out of the right sizes keeps its strides. */
  kd_tensor *o2 = EMPTY(KD_INT32, 3, 2), *o2t = NULL, *r2 = IOTA(KD_INT32, 1, 3);
  KD_ASSERT_OK(kd_t(o2, &o2t)); /* [2, 3] strides [1, 2] */
  KD_ASSERT_OK(kd_cat_out(TENSORS(r2, r2), 0, o2t));
  EXPECT_GEOM(o2t, (2, 3), (1, 2), 0);
  EXPECT_VALS(o2t, 0, 1, 2, 0, 1, 2);
  /* Device: a meta out for cpu inputs. */
  kd_tensor *meta_out = META(KD_INT32, 0);
  KD_ASSERT_ERR(kd_cat_out(TENSORS(a, b), 0, meta_out), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  /* Meta inputs into a meta out. */
  kd_tensor *ma = META(KD_INT32, 2, 2);
  KD_ASSERT_OK(kd_cat_out(TENSORS(ma, ma), 1, meta_out));
  EXPECT_SHAPE(meta_out, KD_INT32, KD_DEVICE_META, 2, 4);
  EXPECT_GEOM(meta_out, (2, 4), (4, 1), 0);
  kd_tensor *meta_f = META(KD_FLOAT32, 2, 2);
  KD_ASSERT_ERR(kd_cat_out(TENSORS(ma, meta_f), 1, meta_out), KD_ETYPE,
                "torch.cat(): input types can't be cast to the desired output type int32");
  RELEASE(meta_f, ma, meta_out, r2, o2t, o2, strided, buf, ex, one, bo, cx, f, e, out, b, a);
}

/* ---- stack ------------------------------------------------------------------------------- */

static void test_stack(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT64, 2), *b = FROM(KD_INT64, (2), 5, 6), *r = NULL;
  KD_ASSERT_OK(kd_stack_op(TENSORS(a, b), 0, &r));
  EXPECT_GEOM(r, (2, 2), (2, 1), 0);
  EXPECT_VALS(r, 0, 1, 5, 6);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_stack_op(TENSORS(a, b), -1, &r));
  EXPECT_GEOM(r, (2, 2), (2, 1), 0);
  EXPECT_VALS(r, 0, 5, 1, 6);
  kd_tensor_release(r);
  /* 2-d, non-contiguous inputs: x = [[0, 1, 2], [3, 4, 5]]^T = [[0, 3], [1, 4], [2, 5]];
   * stack(x, x, dim=1) is [3, 2, 2] with r[i][j] = x[i]. */
  kd_tensor *x0 = IOTA(KD_FLOAT32, 2, 3), *x = NULL;
  KD_ASSERT_OK(kd_t(x0, &x));
  KD_ASSERT_OK(kd_stack_op(TENSORS(x, x), 1, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 3, 2, 2);
  EXPECT_VALS(r, 0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5);
  kd_tensor_release(r);
  /* Mixed dtypes promote as cat. */
  kd_tensor *h = FROM(KD_FLOAT16, (2), 0.5, 1.5);
  KD_ASSERT_OK(kd_stack_op(TENSORS(a, h), 0, &r));
  EXPECT_SHAPE(r, KD_FLOAT16, KD_DEVICE_CPU, 2, 2);
  EXPECT_VALS(r, 0, 1, 0.5, 1.5);
  kd_tensor_release(r);
  /* Errors. */
  KD_ASSERT_ERR(kd_stack_op(TENSORS(a, b), 2, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  assert_null(r);
  kd_tensor *c = IOTA(KD_INT64, 3);
  KD_ASSERT_ERR(kd_stack_op(TENSORS(a, c), 0, &r), KD_EINVAL,
                "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at "
                "entry 1");
  /* At the last dimension PyTorch reports cat's error. */
  KD_ASSERT_ERR(kd_stack_op(TENSORS(a, c), 1, &r), KD_EINVAL,
                "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 "
                "for tensor number 1 in the list.");
  kd_tensor *m1 = META(KD_INT64, 2);
  KD_ASSERT_ERR(kd_stack_op(TENSORS(a, m1), 0, &r), KD_EINVAL,
                "Expected all tensors to be on the same device");
  /* An empty list has no tensor to dispatch on: stack is a composite
   * (CompositeExplicitAutograd) kernel, which fills the Undefined slot as in
   * PyTorch, so the call reaches it and gets its message. */
  KD_ASSERT_ERR(kd_stack_op((kd_tensors){NULL, 0}, 0, &r), KD_EINVAL,
                "stack expects a non-empty TensorList");
  assert_null(r);
  /* Scalars stack into a vector; zero-size inputs into a zero-size result. */
  kd_tensor *s1 = oc_scalar(1), *s2 = oc_scalar(2);
  KD_ASSERT_OK(kd_stack_op(TENSORS(s1, s2), 0, &r));
  EXPECT_GEOM(r, (2), (1), 0);
  EXPECT_VALS(r, 1, 2);
  kd_tensor_release(r);
  kd_tensor *z = EMPTY(KD_INT8, 0, 3);
  KD_ASSERT_OK(kd_stack_op(TENSORS(z, z, z), 1, &r));
  EXPECT_SHAPE(r, KD_INT8, KD_DEVICE_CPU, 0, 3, 3);
  kd_tensor_release(r);
  /* stack.out */
  kd_tensor *out = EMPTY(KD_INT64, 2, 2);
  KD_ASSERT_OK(kd_stack_out(TENSORS(a, b), 1, out));
  EXPECT_VALS(out, 0, 5, 1, 6);
  kd_tensor *out0 = EMPTY(KD_FLOAT64, 0);
  KD_ASSERT_OK(kd_stack_out(TENSORS(a, b), 0, out0)); /* resized, converted */
  EXPECT_SHAPE(out0, KD_FLOAT64, KD_DEVICE_CPU, 2, 2);
  EXPECT_VALS(out0, 0, 1, 5, 6);
  KD_ASSERT_ERR(kd_stack_out(TENSORS(a, h), 0, out), KD_ETYPE,
                "torch.cat(): input types can't be cast to the desired output type int64");
  KD_ASSERT_ERR(kd_stack_out(TENSORS(a, c), 0, out), KD_EINVAL,
                "stack expects each tensor to be equal size");
  /* Meta */
  kd_tensor *m = META(KD_FLOAT32, 3, 0), *mo = META(KD_FLOAT32, 0);
  KD_ASSERT_OK(kd_stack_op(TENSORS(m, m, m), 1, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_META, 3, 3, 0);
  EXPECT_GEOM(r, (3, 3, 0), (3, 1, 1), 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_stack_out(TENSORS(m, m), -1, mo));
  EXPECT_SHAPE(mo, KD_FLOAT32, KD_DEVICE_META, 3, 0, 2);
  RELEASE(mo, m, out0, out, z, s2, s1, m1, c, h, x, x0, b, a);
}

/* ---- tril, triu --------------------------------------------------------------------------- */

static void test_tril_triu(void **state) {
  (void)state;
  oc_open();
  /* a = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] */
  kd_tensor *a = FROM(KD_FLOAT32, (3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9), *r = NULL;
  KD_ASSERT_OK(kd_tril(a, 0, &r));
  EXPECT_VALS(r, 1, 0, 0, 4, 5, 0, 7, 8, 9);
  assert_false(kd_tensor_shares_storage(r, a));
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tril(a, 1, &r));
  EXPECT_VALS(r, 1, 2, 0, 4, 5, 6, 7, 8, 9);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tril(a, -1, &r));
  EXPECT_VALS(r, 0, 0, 0, 4, 0, 0, 7, 8, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tril(a, -3, &r)); /* below every element: all zero */
  EXPECT_VALS(r, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_triu(a, 0, &r));
  EXPECT_VALS(r, 1, 2, 3, 0, 5, 6, 0, 0, 9);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_triu(a, 2, &r));
  EXPECT_VALS(r, 0, 0, 3, 0, 0, 0, 0, 0, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_triu(a, -5, &r));
  EXPECT_VALS(r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  kd_tensor_release(r);
  /* Transposed input: a^T = [[1, 4, 7], [2, 5, 8], [3, 6, 9]]; the result is row-major. */
  kd_tensor *at = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &at));
  KD_ASSERT_OK(kd_triu(at, 1, &r));
  EXPECT_VALS(r, 0, 4, 7, 0, 0, 8, 0, 0, 0);
  EXPECT_GEOM(r, (3, 3), (3, 1), 0);
  kd_tensor_release(r);
  /* Inplace on the transposed view writes through to a: tril(a^T) keeps
   * a^T[i][j] for j <= i, i.e. a[j][i] with j <= i: a's upper triangle. */
  KD_ASSERT_OK(kd_tril_(at, 0));
  EXPECT_VALS(a, 1, 2, 3, 0, 5, 6, 0, 0, 9);
  KD_ASSERT_OK(kd_triu_(a, 1));
  EXPECT_VALS(a, 0, 2, 3, 0, 0, 6, 0, 0, 0);
  kd_tensor_release(at);
  /* Batched, non-square: [2, 2, 3] of 0..11; triu(1): j - i >= 1; tril(-1): j - i <= -1. */
  kd_tensor *b = IOTA(KD_INT64, 2, 2, 3);
  KD_ASSERT_OK(kd_triu(b, 1, &r));
  EXPECT_VALS(r, 0, 1, 2, 0, 0, 5, 0, 7, 8, 0, 0, 11);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tril(b, -1, &r));
  EXPECT_VALS(r, 0, 0, 0, 3, 0, 0, 0, 0, 0, 9, 0, 0);
  kd_tensor_release(r);
  /* out: an empty out is resized without a warning; wrong dtype refused. */
  kd_tensor *out = EMPTY(KD_INT64, 0);
  oc_watch_warnings();
  KD_ASSERT_OK(kd_tril_out(b, 0, out));
  assert_int_equal(oc_warnings, 0);
  EXPECT_GEOM(out, (2, 2, 3), (6, 3, 1), 0);
  EXPECT_VALS(out, 0, 0, 0, 3, 4, 0, 6, 0, 0, 9, 10, 0);
  /* An out with elements and other sizes: resized with a warning. */
  kd_tensor *out3 = EMPTY(KD_INT64, 3);
  KD_ASSERT_OK(kd_triu_out(b, 0, out3));
  assert_int_equal(oc_warnings, 1);
  assert_non_null(strstr(oc_last_warning, "had shape [3], which does not match the required "
                                          "output shape [2, 2, 3]"));
  oc_unwatch_warnings();
  EXPECT_VALS(out3, 0, 1, 2, 0, 4, 5, 6, 7, 8, 0, 10, 11);
  KD_ASSERT_ERR(kd_tril_out(a, 0, out), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got int64 instead");
  kd_tensor *mo = META(KD_INT64, 0);
  KD_ASSERT_ERR(kd_tril_out(b, 0, mo), KD_EINVAL,
                "Expected out tensor to have device cpu, but got meta instead");
  /* out == self (as tril_). */
  KD_ASSERT_OK(kd_triu_out(out, 0, out));
  EXPECT_VALS(out, 0, 0, 0, 0, 4, 0, 6, 0, 0, 0, 10, 0);
  /* out overlapping self in another arrangement goes through a temporary:
   * b2 = [[0, 1], [2, 3]]; out = b2^T; tril(b2) = [[0, 0], [2, 3]] written into b2^T. */
  kd_tensor *b2 = IOTA(KD_INT64, 2, 2), *b2t = NULL;
  KD_ASSERT_OK(kd_transpose_int(b2, 0, 1, &b2t));
  KD_ASSERT_OK(kd_tril_out(b2, 0, b2t));
  EXPECT_VALS(b2t, 0, 0, 2, 3);
  RELEASE(b2t, b2, out3, out);
  /* Errors: fewer than 2 dims; an inplace self whose elements share memory. */
  kd_tensor *v = IOTA(KD_FLOAT32, 3), *ex = NULL, *s = oc_scalar(1);
  KD_ASSERT_ERR(kd_tril(v, 0, &r), KD_EINVAL, "tril: input tensor must have at least 2 dimensions");
  assert_null(r);
  KD_ASSERT_ERR(kd_triu(s, 0, &r), KD_EINVAL, "triu: input tensor must have at least 2 dimensions");
  KD_ASSERT_ERR(kd_triu_(v, 0), KD_EINVAL, "triu: input tensor must have at least 2 dimensions");
  kd_tensor *o1 = EMPTY(KD_FLOAT32, 0);
  KD_ASSERT_ERR(kd_tril_out(v, 0, o1), KD_EINVAL,
                "tril: input tensor must have at least 2 dimensions");
  KD_ASSERT_OK(kd_expand(v, INTS(2, 3), false, &ex));
  KD_ASSERT_ERR(kd_tril_(ex, 0), KD_EINVAL,
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location.");
  RELEASE(o1, ex, s, v);
  /* Zero-size. */
  kd_tensor *z = EMPTY(KD_FLOAT32, 0, 3);
  KD_ASSERT_OK(kd_tril(z, 0, &r));
  EXPECT_GEOM(r, (0, 3), (3, 1), 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_triu_(z, 0));
  kd_tensor_release(z);
  /* Meta: functional, inplace and out. */
  kd_tensor *m = META(KD_COMPLEX64, 4, 5, 6), *mo2 = META(KD_COMPLEX64, 0);
  KD_ASSERT_OK(kd_triu(m, 0, &r));
  EXPECT_SHAPE(r, KD_COMPLEX64, KD_DEVICE_META, 4, 5, 6);
  EXPECT_GEOM(r, (4, 5, 6), (30, 6, 1), 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_triu_(m, 0));
  KD_ASSERT_OK(kd_tril_out(m, -2, mo2));
  EXPECT_SHAPE(mo2, KD_COMPLEX64, KD_DEVICE_META, 4, 5, 6);
  KD_ASSERT_ERR(kd_tril_out(m, 0, mo), KD_ETYPE,
                "Expected out tensor to have dtype complex64, but got int64 instead");
  kd_tensor *m1 = META(KD_FLOAT32, 4);
  KD_ASSERT_ERR(kd_tril(m1, 0, &r), KD_EINVAL,
                "tril: input tensor must have at least 2 dimensions");
  RELEASE(m1, mo2, m, mo, b, a);
}

/* ---- index_select --------------------------------------------------------------------------- */

static void test_index_select(void **state) {
  (void)state;
  oc_open();
  /* a = [[0, 1], [2, 3], [4, 5]] */
  kd_tensor *a = IOTA(KD_FLOAT64, 3, 2), *r = NULL;
  kd_tensor *idx = FROM(KD_INT64, (3), 2, 0, 2);
  KD_ASSERT_OK(kd_index_select(a, 0, idx, &r));
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  EXPECT_VALS(r, 4, 5, 0, 1, 4, 5);
  assert_false(kd_tensor_shares_storage(r, a));
  kd_tensor_release(r);
  /* int32 index, dim -1: columns [1, 1, 0]. */
  kd_tensor *idx32 = FROM(KD_INT32, (3), 1, 1, 0);
  KD_ASSERT_OK(kd_index_select(a, -1, idx32, &r));
  EXPECT_GEOM(r, (3, 3), (3, 1), 0);
  EXPECT_VALS(r, 1, 1, 0, 3, 3, 2, 5, 5, 4);
  kd_tensor_release(r);
  /* Non-contiguous self (a^T = [[0, 2, 4], [1, 3, 5]]) and a strided index (idx[::2] = [2, 2]). */
  kd_tensor *at = NULL, *sidx = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &at));
  KD_ASSERT_OK(kd_slice_Tensor(idx, 0, NULL, NULL, 2, &sidx));
  KD_ASSERT_OK(kd_index_select(at, 1, sidx, &r));
  EXPECT_VALS(r, 4, 4, 5, 5);
  kd_tensor_release(r);
  /* A 3-d self along its middle dimension: t[i][j][k] = 4i + 2j + k, j from [1, 0]. */
  kd_tensor *t3 = IOTA(KD_INT16, 2, 2, 2), *rev = FROM(KD_INT64, (2), 1, 0);
  KD_ASSERT_OK(kd_index_select(t3, 1, rev, &r));
  EXPECT_VALS(r, 2, 3, 0, 1, 6, 7, 4, 5);
  kd_tensor_release(r);
  /* 0-dim index. */
  kd_tensor *i0 = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(0, NULL, KD_INT64, (int64_t[]){1}, &i0));
  KD_ASSERT_OK(kd_index_select(a, 0, i0, &r));
  EXPECT_GEOM(r, (1, 2), (2, 1), 0);
  EXPECT_VALS(r, 2, 3);
  kd_tensor_release(r);
  /* Empty index. */
  kd_tensor *ie = EMPTY(KD_INT64, 0);
  KD_ASSERT_OK(kd_index_select(a, 1, ie, &r));
  EXPECT_SHAPE(r, KD_FLOAT64, KD_DEVICE_CPU, 3, 0);
  kd_tensor_release(r);
  /* Self empty along another dimension (no storage): an empty result, no write
   * (regression: fuzz/corpus/boxed/finding-13-index-select-empty-self). */
  kd_tensor *no_cols = EMPTY(KD_FLOAT32, 2, 0), *one = FROM(KD_INT64, (1), 1);
  KD_ASSERT_OK(kd_index_select(no_cols, 0, one, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 1, 0);
  kd_tensor_release(r);
  kd_tensor_release(one);
  kd_tensor_release(no_cols);
  /* Errors. */
  kd_tensor *ib = FROM(KD_INT64, (1), 3), *in = FROM(KD_INT64, (1), -1);
  KD_ASSERT_ERR(kd_index_select(a, 0, ib, &r), KD_ERANGE, "index out of range in self");
  assert_null(r);
  KD_ASSERT_ERR(kd_index_select(a, 0, in, &r), KD_ERANGE, "index out of range in self");
  kd_tensor *i2 = FROM(KD_INT64, (1, 1), 0);
  KD_ASSERT_ERR(kd_index_select(a, 0, i2, &r), KD_ERANGE,
                "index_select(): Index is supposed to be a vector");
  kd_tensor *fi = IOTA(KD_FLOAT32, 1), *i16 = IOTA(KD_INT16, 1);
  KD_ASSERT_ERR(kd_index_select(a, 0, fi, &r), KD_ETYPE,
                "index_select(): Expected dtype int32 or int64 for index");
  KD_ASSERT_ERR(kd_index_select(a, 0, i16, &r), KD_ETYPE,
                "index_select(): Expected dtype int32 or int64 for index");
  KD_ASSERT_ERR(kd_index_select(a, 2, idx, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kd_tensor *s = oc_scalar(9), *zero = FROM(KD_INT64, (1), 0);
  KD_ASSERT_ERR(kd_index_select(s, 0, idx, &r), KD_EINVAL,
                "index_select(): Index to scalar can have only 1 value, got 3 value(s)");
  KD_ASSERT_OK(kd_index_select(s, 0, zero, &r));
  assert_int_equal(kd_tensor_ndim(r), 0);
  EXPECT_VALS(r, 9);
  kd_tensor_release(r);
  kd_tensor *empty_rows = EMPTY(KD_FLOAT32, 0, 2);
  KD_ASSERT_ERR(kd_index_select(empty_rows, 0, zero, &r), KD_EINVAL,
                "index_select(): self indexing axis dim should be positive");
  /* .out */
  kd_tensor *out = EMPTY(KD_FLOAT64, 0), *out32 = EMPTY(KD_FLOAT32, 0);
  KD_ASSERT_OK(kd_index_select_out(a, 0, idx, out));
  EXPECT_SHAPE(out, KD_FLOAT64, KD_DEVICE_CPU, 3, 2);
  EXPECT_VALS(out, 4, 5, 0, 1, 4, 5);
  KD_ASSERT_ERR(kd_index_select_out(a, 0, idx, out32), KD_ETYPE,
                "index_select(): self and result must have the same scalar type");
  KD_ASSERT_ERR(kd_index_select_out(a, 0, idx, a), KD_EINVAL,
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location.");
  EXPECT_VALS(a, 0, 1, 2, 3, 4, 5); /* a refused out is left alone */
  KD_ASSERT_ERR(kd_index_select_out(a, 0, ib, out), KD_ERANGE, "index out of range in self");
  /* An expanded out= is refused before the resize, as PyTorch's
   * assert_no_internal_overlap, even when its sizes ([2, 3]) are not the
   * result's ([3, 2]) and the resize would have replaced it. */
  kd_tensor *row3 = FROM(KD_FLOAT64, (3), 7, 8, 9), *xo = NULL;
  KD_ASSERT_OK(kd_expand(row3, INTS(2, 3), false, &xo));
  KD_ASSERT_ERR(kd_index_select_out(a, 0, idx, xo), KD_EINVAL,
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.");
  EXPECT_GEOM(xo, (2, 3), (0, 1), 0);
  EXPECT_VALS(row3, 7, 8, 9);
  RELEASE(xo, row3);
  /* A transposed out of the right sizes is written through its strides. */
  kd_tensor *ob = EMPTY(KD_FLOAT64, 2, 3), *obt = NULL;
  KD_ASSERT_OK(kd_t(ob, &obt));
  KD_ASSERT_OK(kd_index_select_out(a, 0, idx, obt));
  EXPECT_GEOM(obt, (3, 2), (1, 3), 0);
  EXPECT_VALS(obt, 4, 5, 0, 1, 4, 5);
  /* Meta (index values are not read there). */
  kd_tensor *m = META(KD_INT8, 4, 5), *mi = META(KD_INT64, 7), *mo = META(KD_INT8, 0);
  KD_ASSERT_OK(kd_index_select(m, 1, mi, &r));
  EXPECT_SHAPE(r, KD_INT8, KD_DEVICE_META, 4, 7);
  EXPECT_GEOM(r, (4, 7), (7, 1), 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_index_select_out(m, 0, mi, mo));
  EXPECT_SHAPE(mo, KD_INT8, KD_DEVICE_META, 7, 5);
  KD_ASSERT_ERR(kd_index_select(m, 1, idx, &r), KD_EINVAL,
                "Expected all tensors to be on the same device");
  kd_tensor *mf = META(KD_FLOAT32, 7);
  KD_ASSERT_ERR(kd_index_select(m, 1, mf, &r), KD_ETYPE,
                "index_select(): Expected dtype int32 or int64 for index");
  RELEASE(mf, mo, mi, m, obt, ob, out32, out, empty_rows, zero, s, i16, fi, i2, in, ib, ie, i0,
          rev, t3, sidx, at, idx32, idx, a);
}

/* ---- gather ------------------------------------------------------------------------------ */

static void test_gather(void **state) {
  (void)state;
  oc_open();
  /* a = [[0, 1], [2, 3]] */
  kd_tensor *a = IOTA(KD_INT16, 2, 2), *r = NULL;
  kd_tensor *idx = FROM(KD_INT64, (2, 2), 0, 0, 1, 0);
  /* dim 1: r[i][j] = a[i][idx[i][j]] = [[0, 0], [3, 2]] */
  KD_ASSERT_OK(kd_gather(a, 1, idx, false, &r));
  EXPECT_SHAPE(r, KD_INT16, KD_DEVICE_CPU, 2, 2);
  EXPECT_VALS(r, 0, 0, 3, 2);
  kd_tensor_release(r);
  /* dim 0: r[i][j] = a[idx[i][j]][j] = [[0, 1], [2, 1]] */
  KD_ASSERT_OK(kd_gather(a, -2, idx, true, &r));
  EXPECT_VALS(r, 0, 1, 2, 1);
  kd_tensor_release(r);
  /* A smaller index: [1, 2] of [[1, 0]] along dim 1 -> [[1, 0]]. */
  kd_tensor *small = FROM(KD_INT64, (1, 2), 1, 0);
  KD_ASSERT_OK(kd_gather(a, 1, small, false, &r));
  EXPECT_GEOM(r, (1, 2), (2, 1), 0);
  EXPECT_VALS(r, 1, 0);
  kd_tensor_release(r);
  /* Transposed self and index: a^T = [[0, 2], [1, 3]], idx^T = [[0, 1], [0, 0]];
   * dim 1: [[0, 2], [1, 1]]. */
  kd_tensor *at = NULL, *it = NULL;
  KD_ASSERT_OK(kd_transpose_int(a, 0, 1, &at));
  KD_ASSERT_OK(kd_transpose_int(idx, 0, 1, &it));
  KD_ASSERT_OK(kd_gather(at, 1, it, false, &r));
  EXPECT_VALS(r, 0, 2, 1, 1);
  kd_tensor_release(r);
  /* Errors. */
  kd_tensor *i32 = FROM(KD_INT32, (1, 1), 0);
  KD_ASSERT_ERR(kd_gather(a, 0, i32, false, &r), KD_ETYPE, "gather(): Expected dtype int64 for index");
  assert_null(r);
  kd_tensor *i1 = FROM(KD_INT64, (1), 0);
  KD_ASSERT_ERR(kd_gather(a, 0, i1, false, &r), KD_EINVAL,
                "Index tensor must have the same number of dimensions as input tensor");
  kd_tensor *wide = FROM(KD_INT64, (1, 3), 0, 0, 0);
  KD_ASSERT_ERR(kd_gather(a, 0, wide, false, &r), KD_EINVAL,
                "Size does not match at dimension 1 expected index [1, 3] to be smaller than self "
                "[2, 2] apart from dimension 0");
  kd_tensor *oob = FROM(KD_INT64, (1, 2), 0, 2);
  KD_ASSERT_ERR(kd_gather(a, 0, oob, false, &r), KD_ERANGE,
                "index 2 is out of bounds for dimension 0 with size 2");
  kd_tensor *negi = FROM(KD_INT64, (1, 1), -1);
  KD_ASSERT_ERR(kd_gather(a, 1, negi, false, &r), KD_ERANGE,
                "index -1 is out of bounds for dimension 1 with size 2");
  KD_ASSERT_ERR(kd_gather(a, 2, idx, false, &r), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  /* An empty index of any dtype gives an empty result. */
  kd_tensor *ef = EMPTY(KD_FLOAT32, 0);
  KD_ASSERT_OK(kd_gather(a, 0, ef, false, &r));
  EXPECT_SHAPE(r, KD_INT16, KD_DEVICE_CPU, 0);
  kd_tensor_release(r);
  /* Scalars: gather(scalar, 0, scalar index 0). */
  kd_tensor *s = oc_scalar(6), *z0 = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(0, NULL, KD_INT64, (int64_t[]){0}, &z0));
  KD_ASSERT_OK(kd_gather(s, 0, z0, false, &r));
  assert_int_equal(kd_tensor_ndim(r), 0);
  EXPECT_VALS(r, 6);
  kd_tensor_release(r);
  /* .out */
  kd_tensor *out = EMPTY(KD_INT16, 2, 2), *o64 = EMPTY(KD_INT64, 2, 2), *o0 = EMPTY(KD_INT16, 0);
  KD_ASSERT_OK(kd_gather_out(a, 1, idx, false, out));
  EXPECT_VALS(out, 0, 0, 3, 2);
  KD_ASSERT_OK(kd_gather_out(a, 0, small, false, o0)); /* resized to [1, 2]: [a[1][0], a[0][1]] */
  EXPECT_SHAPE(o0, KD_INT16, KD_DEVICE_CPU, 1, 2);
  EXPECT_VALS(o0, 2, 1);
  KD_ASSERT_ERR(kd_gather_out(a, 1, idx, false, a), KD_EINVAL,
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location.");
  KD_ASSERT_ERR(kd_gather_out(a, 1, idx, false, o64), KD_ETYPE,
                "Expected out tensor to have dtype int16, but got int64 instead");
  KD_ASSERT_ERR(kd_gather_out(a, 0, oob, false, out), KD_ERANGE,
                "index 2 is out of bounds for dimension 0 with size 2");
  /* Meta. */
  kd_tensor *m = META(KD_FLOAT32, 3, 4), *mi = META(KD_INT64, 2, 4), *mo = META(KD_FLOAT32, 0);
  KD_ASSERT_OK(kd_gather(m, 0, mi, false, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_META, 2, 4);
  EXPECT_GEOM(r, (2, 4), (4, 1), 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_gather_out(m, 1, mi, false, mo));
  EXPECT_SHAPE(mo, KD_FLOAT32, KD_DEVICE_META, 2, 4);
  kd_tensor *mwide = META(KD_INT64, 4, 4);
  KD_ASSERT_ERR(kd_gather(m, 1, mwide, false, &r), KD_EINVAL,
                "Size does not match at dimension 0 expected index [4, 4] to be smaller than self "
                "[3, 4] apart from dimension 1");
  KD_ASSERT_ERR(kd_gather(m, 0, idx, false, &r), KD_EINVAL,
                "Expected all tensors to be on the same device");
  RELEASE(mwide, mo, mi, m, o0, o64, out, z0, s, ef, negi, oob, wide, i1, i32, it, at, small, idx,
          a);
}

/* ---- Every dtype ------------------------------------------------------------------------------ */

/* Element k of the contiguous tensor r holds the bytes of element map[k]
 * of `src`, or all-zero bytes where map[k] < 0. */
static void expect_bytes(const kd_tensor *r, const unsigned char *src, const int *map, int n,
                         const char *what) {
  size_t isz = kd_tensor_itemsize(r);
  static const unsigned char zeros[16] = {0};
  assert_true(kd_tensor_is_contiguous(r));
  assert_int_equal(kd_tensor_numel(r), n);
  const unsigned char *q = kd_tensor_data(r);
  for (int k = 0; k < n; k++) {
    const unsigned char *want = map[k] < 0 ? zeros : src + (size_t)map[k] * isz;
    if (memcmp(q + (size_t)k * isz, want, isz) != 0)
      fail_msg("%s (%s): element %d is wrong", what, kd_dtype_name(kd_tensor_dtype(r)), k);
  }
}

static void test_every_dtype(void **state) {
  (void)state;
  oc_open();
  for (int d = 0; d < OC_NALL; d++) {
    kd_dtype dt = OC_ALL[d];
    size_t isz = kd_dtype_size(dt);
    /* a: [2, 3] of distinct byte patterns (element k: bytes k*16 + b + 1). */
    kd_tensor *a = oc_empty(dt, 2, I(2, 3)), *r = NULL, *tr = NULL;
    unsigned char *p = kd_tensor_data(a);
    for (size_t k = 0; k < 6; k++)
      for (size_t b = 0; b < isz; b++) p[k * isz + b] = (unsigned char)(k * 16 + b + 1);
    KD_ASSERT_OK(kd_t(a, &tr));
    /* cat of a with itself along 1: rows [a0 a0; a1 a1]; of a^T twice along 0. */
    KD_ASSERT_OK(kd_cat(TENSORS(a, a), 1, &r));
    assert_int_equal(kd_tensor_dtype(r), dt);
    expect_bytes(r, p, (const int[]){0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, 12, "cat");
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_cat(TENSORS(tr, tr), 0, &r));
    expect_bytes(r, p, (const int[]){0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5}, 12, "cat of a^T");
    kd_tensor_release(r);
    kd_tensor *out = oc_empty(dt, 1, I(0));
    KD_ASSERT_ERR(kd_cat_out(TENSORS(a, tr), -1, out), KD_EINVAL,
                  "Sizes of tensors must match except in dimension 1. Expected size 2 but got size "
                  "3 for tensor number 1 in the list.");
    KD_ASSERT_OK(kd_cat_out(TENSORS(a, a), 0, out));
    expect_bytes(out, p, (const int[]){0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, 12, "cat.out");
    kd_tensor_release(out);
    /* stack of a with itself along the last dimension: [2, 3, 2], r[i][j][k] = a[i][j]. */
    KD_ASSERT_OK(kd_stack_op(TENSORS(a, a), 2, &r));
    expect_bytes(r, p, (const int[]){0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, 12, "stack");
    kd_tensor_release(r);
    /* triu: the lower element (1, 0) becomes zero bytes, the others are kept;
     * tril(-1) of a^T ([3, 2]): keeps (1, 0), (2, 0), (2, 1) = a[0][1], a[0][2], a[1][2]. */
    KD_ASSERT_OK(kd_triu(a, 0, &r));
    expect_bytes(r, p, (const int[]){0, 1, 2, -1, 4, 5}, 6, "triu");
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_tril(tr, -1, &r));
    expect_bytes(r, p, (const int[]){-1, -1, 1, -1, 2, 5}, 6, "tril");
    kd_tensor_release(r);
    kd_tensor *c = NULL;
    KD_ASSERT_OK(kd_clone(a, NULL, &c));
    KD_ASSERT_OK(kd_tril_(c, 0));
    expect_bytes(c, p, (const int[]){0, -1, -1, 3, 4, -1}, 6, "tril_");
    kd_tensor_release(c);
    /* index_select of columns [2, 0]; gather along 1 with [[1], [2]]. */
    kd_tensor *idx = FROM(KD_INT64, (2), 2, 0), *gi = FROM(KD_INT64, (2, 1), 1, 2);
    KD_ASSERT_OK(kd_index_select(a, 1, idx, &r));
    expect_bytes(r, p, (const int[]){2, 0, 5, 3}, 4, "index_select");
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_index_select(tr, 0, idx, &r)); /* rows 2, 0 of a^T */
    expect_bytes(r, p, (const int[]){2, 5, 0, 3}, 4, "index_select of a^T");
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_gather(a, 1, gi, false, &r));
    expect_bytes(r, p, (const int[]){1, 5}, 2, "gather");
    kd_tensor_release(r);
    /* Meta: the dtype is kept. */
    kd_tensor *m = oc_meta(dt, 2, I(2, 3)), *mi = oc_meta(KD_INT64, 1, I(4));
    KD_ASSERT_OK(kd_cat(TENSORS(m, m), 0, &r));
    EXPECT_SHAPE(r, dt, KD_DEVICE_META, 4, 3);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_tril(m, 0, &r));
    EXPECT_SHAPE(r, dt, KD_DEVICE_META, 2, 3);
    kd_tensor_release(r);
    KD_ASSERT_OK(kd_index_select(m, 1, mi, &r));
    EXPECT_SHAPE(r, dt, KD_DEVICE_META, 2, 4);
    kd_tensor_release(r);
    RELEASE(mi, m, gi, idx, tr, a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cat),
      cmocka_unit_test(test_cat_promotion),
      cmocka_unit_test(test_cat_out),
      cmocka_unit_test(test_stack),
      cmocka_unit_test(test_tril_triu),
      cmocka_unit_test(test_index_select),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_every_dtype),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
