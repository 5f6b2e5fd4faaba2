/*
 * test_tensor_lists.c: operators returning Tensor[] (ops/native/views.c:
 * unbind.int, split.Tensor, chunk) through the generated entry points
 * (a caller-owned kd_tensor_list), the direct calls, the boxed path (a
 * TENSOR_LIST value on the stack) and the meta device.
 *
 * Expected pieces are worked out by hand in the comments: each piece is a
 * view of the input, checked by geometry (sizes, strides, offset into the
 * input's storage) and values. Errors are checked by status and message.
 */
#include "ops_check.h"

/* Piece i of list l is a view of base with these sizes, strides and
 * element offset. */
static void expect_piece(const kd_tensor_list *l, int64_t i, const kd_tensor *base, int ndim,
                         const int64_t *sizes, const int64_t *strides, int64_t offset) {
  assert_true(i < l->size);
  oc_expect_geom(l->data[i], ndim, sizes, strides, offset);
  if (kd_tensor_numel(l->data[i])) oc_expect_view_of(l->data[i], base, offset);
}
#define PIECE(l, i, base, sizes, strides, offset) \
  expect_piece((l), (i), (base), NI sizes, I sizes, I strides, (offset))

static void test_unbind(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_FLOAT32, 2, 3); /* [[0 1 2] [3 4 5]] */
  kd_tensor_list l = {NULL, 0};
  KD_ASSERT_OK(kd_unbind_int(a, 0, &l)); /* rows */
  assert_int_equal(l.size, 2);
  PIECE(&l, 0, a, (3), (1), 0);
  PIECE(&l, 1, a, (3), (1), 3);
  EXPECT_VALS(l.data[1], 3, 4, 5);
  /* each piece holds one reference the caller owns, and keeps a alive */
  assert_int_equal(kd_tensor_refcount(l.data[0]), 1);
  kd_tensor_list_free(&l);
  assert_null(l.data);
  assert_int_equal(l.size, 0);
  KD_ASSERT_OK(kd_unbind_int(a, -1, &l)); /* columns: [0 3] [1 4] [2 5] */
  assert_int_equal(l.size, 3);
  PIECE(&l, 2, a, (2), (3), 2);
  EXPECT_VALS(l.data[2], 2, 5);
  kd_tensor_list_free(&l);
  /* the direct call of the composite kernel gives the same pieces */
  KD_ASSERT_OK(kd_cpu_unbind_int(a, 1, &l));
  assert_int_equal(l.size, 3);
  EXPECT_VALS(l.data[0], 0, 3);
  kd_tensor_list_free(&l);
  /* an empty dimension: an empty list */
  kd_tensor *e = oc_empty(KD_FLOAT32, 2, I(0, 4));
  KD_ASSERT_OK(kd_unbind_int(e, 0, &l));
  assert_int_equal(l.size, 0);
  assert_null(l.data);
  kd_tensor_list_free(&l);
  kd_tensor_list_free(NULL); /* does nothing */
  /* errors leave {NULL, 0} */
  l.size = 7;
  KD_ASSERT_ERR(kd_unbind_int(a, 2, &l), KD_ERANGE,
                "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  assert_null(l.data);
  assert_int_equal(l.size, 0);
  kd_tensor *s = oc_scalar(1);
  KD_ASSERT_ERR(kd_unbind_int(s, 0, &l), KD_ERANGE, "Dimension specified as 0 but tensor has no dimensions");
  KD_ASSERT_ERR(kd_unbind_int(a, 0, NULL), KD_EINVAL, "kd_unbind_int: NULL output 'out'");
  RELEASE(a, e, s);
}

static void test_split_chunk(void **state) {
  (void)state;
  oc_open();
  kd_tensor *a = IOTA(KD_INT64, 5, 2); /* rows [0 1] [2 3] [4 5] [6 7] [8 9] */
  kd_tensor_list l = {NULL, 0};
  KD_ASSERT_OK(kd_split_Tensor(a, 2, 0, &l)); /* rows 0-1, 2-3, 4 */
  assert_int_equal(l.size, 3);
  PIECE(&l, 0, a, (2, 2), (2, 1), 0);
  PIECE(&l, 1, a, (2, 2), (2, 1), 4);
  PIECE(&l, 2, a, (1, 2), (2, 1), 8);
  EXPECT_VALS(l.data[2], 8, 9);
  kd_tensor_list_free(&l);
  KD_ASSERT_OK(kd_split_Tensor(a, 7, 0, &l)); /* larger than the dimension: one piece */
  assert_int_equal(l.size, 1);
  PIECE(&l, 0, a, (5, 2), (2, 1), 0);
  kd_tensor_list_free(&l);
  KD_ASSERT_OK(kd_split_Tensor(a, 1, 1, &l)); /* columns */
  assert_int_equal(l.size, 2);
  PIECE(&l, 1, a, (5, 1), (2, 1), 1);
  EXPECT_VALS(l.data[1], 1, 3, 5, 7, 9);
  kd_tensor_list_free(&l);
  /* chunk: ceil(5 / 3) = 2 rows a piece: 2, 2, 1 */
  KD_ASSERT_OK(kd_chunk(a, 3, 0, &l));
  assert_int_equal(l.size, 3);
  PIECE(&l, 2, a, (1, 2), (2, 1), 8);
  kd_tensor_list_free(&l);
  /* chunk: more chunks than rows gives one row a piece */
  KD_ASSERT_OK(kd_chunk(a, 9, 0, &l));
  assert_int_equal(l.size, 5);
  PIECE(&l, 4, a, (1, 2), (2, 1), 8);
  kd_tensor_list_free(&l);
  /* an empty dimension: split gives one empty piece, chunk `chunks` of them */
  kd_tensor *e = oc_empty(KD_FLOAT32, 2, I(0, 3));
  KD_ASSERT_OK(kd_split_Tensor(e, 0, 0, &l));
  assert_int_equal(l.size, 1);
  EXPECT_SHAPE(l.data[0], KD_FLOAT32, KD_DEVICE_CPU, 0, 3);
  kd_tensor_list_free(&l);
  KD_ASSERT_OK(kd_chunk(e, 4, 0, &l));
  assert_int_equal(l.size, 4);
  EXPECT_SHAPE(l.data[3], KD_FLOAT32, KD_DEVICE_CPU, 0, 3);
  kd_tensor_list_free(&l);
  KD_ASSERT_ERR(kd_split_Tensor(a, -1, 0, &l), KD_EINVAL,
                "split expects split_size be non-negative, but got split_size=-1");
  KD_ASSERT_ERR(kd_split_Tensor(a, 0, 0, &l), KD_EINVAL,
                "split_size can only be 0 if dimension size is 0, but got dimension size of 5");
  KD_ASSERT_ERR(kd_chunk(a, 0, 0, &l), KD_EINVAL, "chunk expects `chunks` to be greater than 0, got: 0");
  kd_tensor *s = oc_scalar(1);
  KD_ASSERT_ERR(kd_chunk(s, 2, 0, &l), KD_ERANGE, "chunk expects at least a 1-dimensional tensor");
  KD_ASSERT_ERR(kd_split_Tensor(s, 2, 0, &l), KD_ERANGE, "split expects at least a 1-dimensional tensor");
  assert_null(l.data);
  RELEASE(a, e, s);
}

static void test_meta(void **state) {
  (void)state;
  oc_open();
  kd_tensor *m = oc_meta(KD_FLOAT64, 2, I(4, 6));
  kd_tensor_list l = {NULL, 0};
  KD_ASSERT_OK(kd_chunk(m, 4, 1, &l)); /* ceil(6 / 4) = 2 columns a piece: 3 pieces */
  assert_int_equal(l.size, 3);
  for (int i = 0; i < 3; i++) EXPECT_SHAPE(l.data[i], KD_FLOAT64, KD_DEVICE_META, 4, 2);
  kd_tensor_list_free(&l);
  RELEASE(m);
}

static void test_boxed(void **state) {
  (void)state;
  oc_open();
  kd_op *op = NULL;
  KD_ASSERT_OK(kd_op_find("aten::unbind", "int", &op));
  kd_tensor *a = IOTA(KD_FLOAT32, 3, 2); /* rows [0 1] [2 3] [4 5] */
  kd_stack st;
  kd_stack_init(&st);
  KD_ASSERT_OK(kd_stack_push_tensor(&st, a));
  kd_value dim = kd_value_int(0);
  KD_ASSERT_OK(kd_stack_push(&st, &dim));
  KD_ASSERT_OK(kd_call_boxed(op, &st));
  assert_int_equal(st.size, 1);
  const kd_value *res = kd_stack_peek(&st, 0);
  assert_int_equal(res->tag, KD_VALUE_TENSOR_LIST);
  assert_int_equal(kd_value_list_size(res), 3);
  kd_tensor *const *items = kd_value_tensor_list_data(res);
  oc_expect_geom(items[2], 1, I(2), I(1), 4);
  oc_expect_view_of(items[2], a, 4);
  EXPECT_VALS(items[2], 4, 5);
  /* the list holds the only reference to each piece */
  assert_int_equal(kd_tensor_refcount(items[0]), 1);
  kd_stack_free(&st);
  /* split through the boxed path with its default dim */
  KD_ASSERT_OK(kd_op_find("aten::split", "Tensor", &op));
  kd_stack_init(&st);
  KD_ASSERT_OK(kd_stack_push_tensor(&st, a));
  kd_value two = kd_value_int(2);
  KD_ASSERT_OK(kd_stack_push(&st, &two));
  KD_ASSERT_OK(kd_op_fill_defaults(op, &st, 2));
  KD_ASSERT_OK(kd_call_boxed(op, &st));
  res = kd_stack_peek(&st, 0);
  assert_int_equal(res->tag, KD_VALUE_TENSOR_LIST);
  assert_int_equal(kd_value_list_size(res), 2);
  oc_expect_geom(kd_value_tensor_list_data(res)[1], 2, I(1, 2), I(2, 1), 4);
  kd_stack_free(&st);
  kd_tensor_release(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unbind),
      cmocka_unit_test(test_split_chunk),
      cmocka_unit_test(test_meta),
      cmocka_unit_test(test_boxed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
