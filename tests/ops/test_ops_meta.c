/*
 * test_ops_meta.c: "A Meta backend computes shapes and dtypes only, for every
 * operator". Every aten operator has a kernel reachable for the Meta key (its
 * own, a composite or a fallback), and a representative call of each family
 * (pointwise, reduction, view, factory, linalg, shape) gives the right sizes
 * and dtype on meta without data.
 */
#include "kd_test.h"
#include "kd/library.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static int check_meta(kd_op *op, void *user_data) {
  int *missing = user_data;
  if (strncmp(kd_op_name(op), "aten::", 6) != 0) return 0;
  kd_kernel_selection sel;
  if (kd_op_select_kernel(op, KD_KEY_META, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel) != KD_OK) {
    char table[4096];
    kd_op_dump_table(op, table, sizeof table);
    print_message("no Meta kernel: %s\n%s", kd_op_name(op), table);
    (*missing)++;
  }
  return 0;
}

static int count_aten(kd_op *op, void *user_data) {
  if (strncmp(kd_op_name(op), "aten::", 6) == 0) (*(int *)user_data)++;
  return 0;
}

static void test_every_op_has_meta(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  int missing = 0, count = 0;
  kd_ops_foreach(check_meta, &missing);
  kd_ops_foreach(count_aten, &count);
  assert_true(count > 300); /* the registry was really walked */
  assert_int_equal(missing, 0);
}
/* ---- Representative calls ------------------------------------------------------- */

static const kd_device META = {KD_DEVICE_META, 0};
static const kd_dtype F32 = KD_FLOAT32;

static kd_tensor *M(int ndim, const int64_t *sizes, kd_dtype dt) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, META, &t));
  return t;
}

/* r is a meta tensor of those sizes and dtype, with no data; releases it. */
static void is_meta(kd_tensor *r, int ndim, const int64_t *sizes, kd_dtype dt, const char *what) {
  if (!r) fail_msg("%s: no result", what);
  if (kd_tensor_device(r).type != KD_DEVICE_META) fail_msg("%s: not on meta", what);
  if (kd_tensor_dtype(r) != dt)
    fail_msg("%s: dtype %s, expected %s", what, kd_dtype_name(kd_tensor_dtype(r)), kd_dtype_name(dt));
  if (kd_tensor_ndim(r) != ndim) fail_msg("%s: %d dims, expected %d", what, kd_tensor_ndim(r), ndim);
  for (int d = 0; d < ndim; d++)
    if (kd_tensor_size(r, d) != sizes[d])
      fail_msg("%s: size %d is %lld, expected %lld", what, d, (long long)kd_tensor_size(r, d),
               (long long)sizes[d]);
  if (kd_tensor_data(r) != NULL) fail_msg("%s: a meta result has data", what);
  kd_tensor_release(r);
}

#define CHECK(call, ndim, dt, ...)                         \
  do {                                                     \
    r = NULL;                                              \
    kd_status st_ = (call);                                \
    if (st_) fail_msg("%s: %s", #call, kd_last_error());   \
    is_meta(r, ndim, (const int64_t[]){__VA_ARGS__}, dt, #call); \
  } while (0)
#define INTS(...) ((kd_ints){(const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)})

static void test_meta_pointwise(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *h = M(2, (int64_t[]){2, 3}, KD_FLOAT16), *i = M(2, (int64_t[]){2, 3}, KD_INT64), *r;
  kd_tensor *c = M(1, (int64_t[]){3}, KD_COMPLEX64);
  CHECK(kd_exp(h, &r), 2, KD_FLOAT16, 2, 3);
  CHECK(kd_exp(i, &r), 2, KD_FLOAT32, 2, 3);
  CHECK(kd_abs(c, &r), 1, KD_FLOAT32, 3);
  CHECK(kd_sigmoid(h, &r), 2, KD_FLOAT16, 2, 3);
  CHECK(kd_neg(i, &r), 2, KD_INT64, 2, 3);
  CHECK(kd_gelu(h, "tanh", &r), 2, KD_FLOAT16, 2, 3);
  CHECK(kd_relu(i, &r), 2, KD_INT64, 2, 3);
  CHECK(kd_logical_not(h, &r), 2, KD_BOOL, 2, 3);
  CHECK(kd_mul_Tensor(h, c, &r), 2, KD_COMPLEX64, 2, 3);
  CHECK(kd_clone(h, NULL, &r), 2, KD_FLOAT16, 2, 3);
  CHECK(kd_to_dtype(i, KD_BFLOAT16, false, false, NULL, &r), 2, KD_BFLOAT16, 2, 3);
  KD_ASSERT_OK(kd_exp_(h));
  KD_ASSERT_OK(kd_zero_(h));
  kd_scalar one = kd_scalar_int(1);
  KD_ASSERT_OK(kd_fill_Scalar_(i, &one));
  assert_null(kd_tensor_data(h));
  kd_tensor_release(h), kd_tensor_release(i), kd_tensor_release(c);
}

static void test_meta_reduction(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *f = M(3, (int64_t[]){2, 3, 4}, KD_FLOAT32), *i = M(3, (int64_t[]){2, 3, 4}, KD_INT32);
  kd_tensor *r = NULL, *idx = NULL;
  CHECK(kd_sum(f, NULL, &r), 0, KD_FLOAT32, 0);
  CHECK(kd_sum(i, NULL, &r), 0, KD_INT64, 0);
  CHECK(kd_sum_dim_IntList(f, INTS(1), false, NULL, &r), 2, KD_FLOAT32, 2, 4);
  CHECK(kd_sum_dim_IntList(i, INTS(0, 2), true, NULL, &r), 3, KD_INT64, 1, 3, 1);
  kd_dtype f64 = KD_FLOAT64;
  CHECK(kd_sum_dim_IntList(f, INTS(-1), false, &f64, &r), 2, KD_FLOAT64, 2, 3);
  CHECK(kd_mean_dim(f, INTS(2), true, NULL, &r), 3, KD_FLOAT32, 2, 3, 1);
  CHECK(kd_prod_dim_int(i, 1, false, NULL, &r), 2, KD_INT64, 2, 4);
  CHECK(kd_amax(f, INTS(0, 1), false, &r), 1, KD_FLOAT32, 4);
  CHECK(kd_amin(i, ((kd_ints){NULL, 0}), false, &r), 0, KD_INT32, 0);
  CHECK(kd_argmax(f, (int64_t[]){1}, true, &r), 3, KD_INT64, 2, 1, 4);
  CHECK(kd_argmin(f, NULL, false, &r), 0, KD_INT64, 0);
  CHECK(kd_any(f, &r), 0, KD_BOOL, 0);
  CHECK(kd_all_dim(i, 2, false, &r), 2, KD_BOOL, 2, 3);
  CHECK(kd_max(i, &r), 0, KD_INT32, 0);
  KD_ASSERT_OK(kd_max_dim(f, 1, false, &r, &idx));
  is_meta(idx, 2, (int64_t[]){2, 4}, KD_INT64, "max.dim indices");
  is_meta(r, 2, (int64_t[]){2, 4}, KD_FLOAT32, "max.dim values");
  CHECK(kd_cumsum(i, 1, NULL, &r), 3, KD_INT64, 2, 3, 4);
  CHECK(kd_softmax_int(f, -1, NULL, &r), 3, KD_FLOAT32, 2, 3, 4);
  CHECK(kd_log_softmax_int(f, 0, &f64, &r), 3, KD_FLOAT64, 2, 3, 4);
  kd_clear_error();
  assert_int_not_equal(kd_sum_dim_IntList(f, INTS(3), false, NULL, &r), KD_OK);
  kd_tensor_release(f), kd_tensor_release(i);
}

static void test_meta_views(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *f = M(3, (int64_t[]){2, 3, 4}, F32), *r = NULL;
  CHECK(kd_view(f, INTS(6, -1), &r), 2, F32, 6, 4);
  CHECK(kd_reshape(f, INTS(4, 6), &r), 2, F32, 4, 6);
  CHECK(kd_transpose_int(f, 0, 2, &r), 3, F32, 4, 3, 2);
  CHECK(kd_permute(f, INTS(1, 2, 0), &r), 3, F32, 3, 4, 2);
  CHECK(kd_select_int(f, 1, -1, &r), 2, F32, 2, 4);
  CHECK(kd_slice_Tensor(f, 2, (int64_t[]){1}, NULL, 2, &r), 3, F32, 2, 3, 2);
  CHECK(kd_narrow(f, 0, 1, 1, &r), 3, F32, 1, 3, 4);
  CHECK(kd_unsqueeze(f, 0, &r), 4, F32, 1, 2, 3, 4);
  CHECK(kd_flatten_using_ints(f, 1, 2, &r), 2, F32, 2, 12);
  kd_tensor *s = M(3, (int64_t[]){1, 3, 1}, F32);
  CHECK(kd_squeeze(s, &r), 1, F32, 3);
  CHECK(kd_expand(s, INTS(5, 3, 2), false, &r), 3, F32, 5, 3, 2);
  /* a view's strides are the base's */
  KD_ASSERT_OK(kd_transpose_int(f, 0, 2, &r));
  assert_int_equal(kd_tensor_stride(r, 0), 1);
  assert_int_equal(kd_tensor_stride(r, 2), 12);
  kd_tensor *c = NULL;
  KD_ASSERT_OK(kd_contiguous(r, KD_MEMORY_FORMAT_CONTIGUOUS, &c));
  assert_int_equal(kd_tensor_stride(c, 0), 6);
  is_meta(c, 3, (int64_t[]){4, 3, 2}, F32, "contiguous");
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_view(f, INTS(5, 5), &r), KD_EINVAL, "");
  kd_tensor_release(f), kd_tensor_release(s);
}

static void test_meta_factories(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *r = NULL;
  kd_device dev = META;
  kd_dtype i64 = KD_INT64, f64 = KD_FLOAT64;
  kd_scalar v = kd_scalar_double(2.5), e = kd_scalar_int(10), s0 = kd_scalar_int(2), st = kd_scalar_int(3);
  CHECK(kd_zeros(INTS(2, 3), NULL, NULL, &dev, NULL, &r), 2, F32, 2, 3);
  CHECK(kd_ones(INTS(4), &i64, NULL, &dev, NULL, &r), 1, KD_INT64, 4);
  CHECK(kd_full(INTS(2, 2), &v, NULL, NULL, &dev, NULL, &r), 2, F32, 2, 2);
  CHECK(kd_empty_memory_format(INTS(0, 7), &f64, NULL, &dev, NULL, NULL, &r), 2, KD_FLOAT64, 0, 7);
  CHECK(kd_arange(&e, NULL, NULL, &dev, NULL, &r), 1, KD_INT64, 10);
  CHECK(kd_arange_start_step(&s0, &e, &st, &f64, NULL, &dev, NULL, &r), 1, KD_FLOAT64, 3);
  CHECK(kd_eye(3, NULL, NULL, &dev, NULL, &r), 2, F32, 3, 3);
  CHECK(kd_eye_m(2, 5, &i64, NULL, &dev, NULL, &r), 2, KD_INT64, 2, 5);
  CHECK(kd_rand(INTS(3, 1), NULL, NULL, &dev, NULL, &r), 2, F32, 3, 1);
  CHECK(kd_randn(INTS(6), &f64, NULL, &dev, NULL, &r), 1, KD_FLOAT64, 6);
  kd_tensor *m = M(2, (int64_t[]){3, 2}, KD_INT32);
  CHECK(kd_zeros_like(m, NULL, NULL, NULL, NULL, NULL, &r), 2, KD_INT32, 3, 2);
  CHECK(kd_full_like(m, &v, &f64, NULL, NULL, NULL, NULL, &r), 2, KD_FLOAT64, 3, 2);
  CHECK(kd_ones_like(m, NULL, NULL, NULL, NULL, NULL, &r), 2, KD_INT32, 3, 2);
  CHECK(kd_empty_like(m, NULL, NULL, NULL, NULL, NULL, &r), 2, KD_INT32, 3, 2);
  kd_tensor_release(m);
}

static void test_meta_linalg(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *a = M(2, (int64_t[]){2, 3}, F32), *b = M(2, (int64_t[]){3, 4}, F32), *r = NULL;
  kd_tensor *ba = M(3, (int64_t[]){5, 2, 3}, F32), *bb = M(3, (int64_t[]){5, 3, 4}, F32);
  kd_tensor *v = M(1, (int64_t[]){3}, F32), *bias = M(1, (int64_t[]){4}, F32);
  CHECK(kd_mm(a, b, &r), 2, F32, 2, 4);
  CHECK(kd_bmm(ba, bb, &r), 3, F32, 5, 2, 4);
  CHECK(kd_matmul(ba, b, &r), 3, F32, 5, 2, 4);
  CHECK(kd_matmul(v, b, &r), 1, F32, 4);
  CHECK(kd_matmul(a, v, &r), 1, F32, 2);
  CHECK(kd_dot(v, v, &r), 0, F32, 0);
  CHECK(kd_addmm(bias, a, b, NULL, NULL, &r), 2, F32, 2, 4);
  KD_ASSERT_ERR(kd_mm(a, a, &r), KD_EINVAL, "");
  kd_tensor_release(a), kd_tensor_release(b), kd_tensor_release(ba), kd_tensor_release(bb);
  kd_tensor_release(v), kd_tensor_release(bias);
}

static void test_meta_shape(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *a = M(2, (int64_t[]){2, 3}, F32), *b = M(2, (int64_t[]){4, 3}, F32), *r = NULL;
  kd_tensor *idx = M(1, (int64_t[]){5}, KD_INT64), *gi = M(2, (int64_t[]){2, 7}, KD_INT64);
  kd_tensor *mask = M(2, (int64_t[]){2, 3}, KD_BOOL);
  kd_tensor *ts[2] = {a, b}, *same[2] = {a, a};
  CHECK(kd_cat((kd_tensors){ts, 2}, 0, &r), 2, F32, 6, 3);
  CHECK(kd_stack_op((kd_tensors){same, 2}, 1, &r), 3, F32, 2, 2, 3);
  CHECK(kd_index_select(b, 0, idx, &r), 2, F32, 5, 3);
  CHECK(kd_gather(a, 1, gi, false, &r), 2, F32, 2, 7);
  CHECK(kd_tril(b, -1, &r), 2, F32, 4, 3);
  CHECK(kd_where_self(mask, a, a, &r), 2, F32, 2, 3);
  kd_scalar z = kd_scalar_int(0);
  CHECK(kd_masked_fill_Scalar(a, mask, &z, &r), 2, F32, 2, 3);
  kd_tensor_release(a), kd_tensor_release(b), kd_tensor_release(idx), kd_tensor_release(gi);
  kd_tensor_release(mask);
}


int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_op_has_meta),
      cmocka_unit_test(test_meta_pointwise),
      cmocka_unit_test(test_meta_reduction),
      cmocka_unit_test(test_meta_views),
      cmocka_unit_test(test_meta_factories),
      cmocka_unit_test(test_meta_linalg),
      cmocka_unit_test(test_meta_shape),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
