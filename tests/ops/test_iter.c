/* The tensor iterator (ops/src/iter.h): shapes, dtypes, layouts, loops,
 * reductions, structured outputs. */
#include <pthread.h>
#include <stdatomic.h>

#include "iter.h"
#include "kd_test.h"

/* ---- helpers ----------------------------------------------------------------- */

static kd_tensor *ft(int ndim, const int64_t *sizes, const float *data) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, KD_FLOAT32, data, &t));
  return t;
}

static kd_tensor *empty(int ndim, const int64_t *sizes, kd_dtype dt) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t));
  return t;
}

static kd_tensor *wrapped(kd_scalar v) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kdk_iter_wrap_scalar(&v, &t));
  return t;
}

static kd_tensor *zero_dim(kd_dtype dt, double v) {
  kd_tensor *t = NULL;
  kd_scalar s = kd_scalar_double(v);
  KD_ASSERT_OK(kd_tensor_from_scalar(&s, dt, &t));
  return t;
}

static double get(const kd_tensor *t, const int64_t *idx) {
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(t, idx, &s));
  return kd_scalar_to_double(&s);
}

static void assert_shape(const kd_tensor *t, int ndim, const int64_t *sizes) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int d = 0; d < ndim; d++) assert_int_equal(kd_tensor_size(t, d), sizes[d]);
}

typedef struct loop_count {
  atomic_int calls;
  atomic_llong elements;
  atomic_int other_thread; /* calls not on the creating thread */
  pthread_t main;
} loop_count;

/* out = a + b, float32, any strides; counts calls. */
static void add_f32(void *ctx, char **data, const int64_t *st, int64_t n0, int64_t n1) {
  loop_count *c = ctx;
  if (c) {
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_add(&c->elements, n0 * n1);
    if (!pthread_equal(pthread_self(), c->main)) atomic_fetch_add(&c->other_thread, 1);
  }
  for (int64_t j = 0; j < n1; j++) {
    char *o = data[0] + j * st[3], *a = data[1] + j * st[4], *b = data[2] + j * st[5];
    for (int64_t i = 0; i < n0; i++)
      *(float *)(o + i * st[0]) = *(float *)(a + i * st[1]) + *(float *)(b + i * st[2]);
  }
}

/* Row loop: out = sum of the row (float32 in and out, any strides). */
static void sum_rows_f32(void *ctx, char **data, const int64_t *st, int64_t n0, int64_t n1) {
  (void)ctx;
  for (int64_t j = 0; j < n1; j++) {
    char *o = data[0] + j * st[2], *a = data[1] + j * st[3];
    double acc = 0;
    for (int64_t i = 0; i < n0; i++) acc += *(float *)(a + i * st[1]);
    *(float *)o = (float)acc;
  }
}

/* Row loop: out[r] = index of the max of the row (int64 out, float in). */
static void argmax_rows(void *ctx, char **data, const int64_t *st, int64_t n0, int64_t n1) {
  (void)ctx;
  for (int64_t j = 0; j < n1; j++) {
    char *o = data[0] + j * st[2], *a = data[1] + j * st[3];
    int64_t best = 0;
    for (int64_t i = 1; i < n0; i++)
      if (*(float *)(a + i * st[1]) > *(float *)(a + best * st[1])) best = i;
    *(int64_t *)o = best;
  }
}

/* Row loop: cumulative sum along the row. */
static void cumsum_rows(void *ctx, char **data, const int64_t *st, int64_t n0, int64_t n1) {
  (void)ctx;
  for (int64_t j = 0; j < n1; j++) {
    char *o = data[0] + j * st[2], *a = data[1] + j * st[3];
    float acc = 0;
    for (int64_t i = 0; i < n0; i++) {
      acc += *(float *)(a + i * st[1]);
      *(float *)(o + i * st[0]) = acc;
    }
  }
}

/* Builds a binary op without a structured call and returns the dtype. */
static kd_dtype binary_dtype(const kd_tensor *a, const kd_tensor *b, bool float_op) {
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  if (float_op)
    KD_ASSERT_OK(kdk_iter_build_binary_float_op(&it, NULL, a, b));
  else
    KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  kd_dtype d = kd_tensor_dtype(kdk_iter_output(&it, 0));
  assert_int_equal(d, kdk_iter_common_dtype(&it));
  assert_int_equal(kdk_iter_dtype(&it, 1), d);
  assert_int_equal(kdk_iter_dtype(&it, 2), d);
  kdk_iter_release(&it);
  return d;
}

/* ---- tests ------------------------------------------------------------------- */

static void test_broadcast(void **state) {
  (void)state;
  kd_tensor *a = empty(3, (int64_t[]){2, 1, 3}, KD_FLOAT32);
  kd_tensor *b = empty(2, (int64_t[]){4, 1}, KD_FLOAT32);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  assert_shape(kdk_iter_output(&it, 0), 3, (int64_t[]){2, 4, 3});
  assert_int_equal(kdk_iter_numel(&it), 24);
  assert_int_equal(kdk_iter_ntensors(&it), 3);
  assert_int_equal(kdk_iter_noutputs(&it), 1);
  assert_int_equal(kdk_iter_full_ndim(&it), 3);
  kdk_iter_release(&it);
  kdk_iter_release(&it); /* twice is fine */

  kd_tensor *c = empty(2, (int64_t[]){2, 3}, KD_FLOAT32);
  kd_tensor *d = empty(2, (int64_t[]){2, 4}, KD_FLOAT32);
  kdk_iter_init(&it, NULL);
  kdk_iter_set_op_name(&it, "aten::add.Tensor");
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, NULL, c, d), KD_EINVAL,
                "aten::add.Tensor: The size of tensor a (3) must match the size of tensor b (4) "
                "at non-singleton dimension 1");
  kdk_iter_release(&it);
  /* the dimension is counted in the broadcast shape */
  kd_tensor *e = empty(3, (int64_t[]){5, 2, 3}, KD_FLOAT32);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, NULL, e, d), KD_EINVAL,
                "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
                "dimension 2");
  kdk_iter_release(&it);
  /* a given output of another shape is resized; an in-place one is not */
  kd_tensor *out = empty(1, (int64_t[]){7}, KD_FLOAT32);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, out, a, b));
  assert_shape(out, 3, (int64_t[]){2, 4, 3});
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, b, b, a), KD_EINVAL,
                "output with shape [4, 1] doesn't match the broadcast shape [2, 4, 3]");
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(c);
  kd_tensor_release(d);
  kd_tensor_release(e);
  kd_tensor_release(out);
}

static void test_promotion(void **state) {
  (void)state;
  int64_t n3[] = {3};
  kd_tensor *i8 = empty(1, n3, KD_INT8), *u8 = empty(1, n3, KD_UINT8), *i32 = empty(1, n3, KD_INT32);
  kd_tensor *f32 = empty(1, n3, KD_FLOAT32), *bl = empty(1, n3, KD_BOOL);
  kd_tensor *w1000 = wrapped(kd_scalar_int(1000)), *w25 = wrapped(kd_scalar_double(2.5));
  kd_tensor *wtrue = wrapped(kd_scalar_bool(true)), *wc = wrapped(kd_scalar_complex(1, 2));
  kd_tensor *z64 = zero_dim(KD_FLOAT64, 2.5), *zi64 = zero_dim(KD_INT64, 3);
  assert_int_equal(kd_tensor_dtype(w1000), KD_INT64);
  assert_int_equal(kd_tensor_dtype(w25), KD_FLOAT64);
  assert_int_equal(kd_tensor_dtype(wtrue), KD_BOOL);
  assert_int_equal(kd_tensor_dtype(wc), KD_COMPLEX128);
  assert_true(kd_tensor_is_wrapped_number(w25));

  assert_int_equal(binary_dtype(i8, w1000, false), KD_INT8);
  assert_int_equal(binary_dtype(i32, w25, false), KD_FLOAT32);
  assert_int_equal(binary_dtype(w25, i32, false), KD_FLOAT32);
  assert_int_equal(binary_dtype(u8, i8, false), KD_INT16);
  assert_int_equal(binary_dtype(bl, bl, false), KD_BOOL);
  assert_int_equal(binary_dtype(bl, w1000, false), KD_INT64);
  assert_int_equal(binary_dtype(bl, wtrue, false), KD_BOOL);
  assert_int_equal(binary_dtype(i32, wc, false), KD_COMPLEX64);
  assert_int_equal(binary_dtype(f32, z64, false), KD_FLOAT32);
  /* a 0-dim tensor of a higher category counts with its own dtype, as
   * PyTorch (int32 tensor + torch.tensor(2.5, dtype=float64) is float64);
   * a wrapped float64 number counts as the default dtype */
  assert_int_equal(binary_dtype(i32, z64, false), KD_FLOAT64);
  assert_int_equal(binary_dtype(i8, zi64, false), KD_INT8);
  /* two 0-dim operands: zero-dim rules */
  assert_int_equal(binary_dtype(zi64, w25, false), KD_FLOAT32);
  /* integer inputs to float */
  assert_int_equal(binary_dtype(i32, i32, true), KD_FLOAT32);
  assert_int_equal(binary_dtype(bl, u8, true), KD_FLOAT32);
  assert_int_equal(binary_dtype(f32, z64, true), KD_FLOAT32);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  assert_int_equal(binary_dtype(i32, w25, false), KD_FLOAT64);
  assert_int_equal(binary_dtype(i32, i8, true), KD_FLOAT64);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));

  /* the wrapped input is converted; its value survives */
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, i32, w25));
  assert_true(kdk_iter_is_scalar(&it, 2));
  assert_false(kdk_iter_is_scalar(&it, 1));
  kd_scalar v;
  KD_ASSERT_OK(kdk_iter_scalar_value(&it, 2, &v));
  assert_int_equal(v.kind, KD_SCALAR_DOUBLE);
  assert_true(v.v.d == 2.5);
  assert_int_equal(kd_tensor_dtype(kdk_iter_input(&it, 1)), KD_FLOAT32);
  KD_ASSERT_ERR(kdk_iter_scalar_value(&it, 1, &v), KD_EINVAL, "not a scalar");
  kdk_iter_remove_operand(&it, 2);
  assert_int_equal(kdk_iter_ntensors(&it), 2);
  assert_int_equal(kdk_iter_dtype(&it, 1), KD_FLOAT32);
  kdk_iter_release(&it);

  /* comparison: bool output, promoted inputs */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_comparison_op(&it, NULL, i32, f32));
  assert_int_equal(kdk_iter_common_dtype(&it), KD_FLOAT32);
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_BOOL);
  assert_int_equal(kdk_iter_input_dtype(&it, 0), KD_FLOAT32);
  kdk_iter_release(&it);
  /* a given float output of a comparison keeps its dtype (through a temporary) */
  kd_tensor *fo = empty(1, n3, KD_FLOAT64);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_comparison_op(&it, fo, i32, i8));
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_INT32);
  assert_ptr_equal(kdk_iter_output(&it, 0), fo);
  kdk_iter_release(&it);

  /* unary_float_op: int to the default float */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_unary_float_op(&it, NULL, i8));
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_FLOAT32);
  assert_int_equal(kdk_iter_dtype(&it, 1), KD_FLOAT32);
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_unary_op(&it, NULL, i8));
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_INT8);
  kdk_iter_release(&it);

  kd_tensor *all[] = {i8, u8, i32, f32, bl, w1000, w25, wtrue, wc, z64, zi64, fo};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) kd_tensor_release(all[i]);
}

static void test_casting_errors(void **state) {
  (void)state;
  int64_t n2[] = {2};
  kd_tensor *f = ft(1, n2, (float[]){1.5f, 2.5f});
  kd_tensor *i64 = empty(1, n2, KD_INT64), *bo = empty(1, n2, KD_BOOL);
  kd_tensor *c = empty(1, n2, KD_COMPLEX64);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  kdk_iter_set_op_name(&it, "aten::add.out");
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, i64, f, f), KD_ETYPE,
                "aten::add.out: result type float32 can't be cast to the desired output type int64");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, bo, i64, i64), KD_ETYPE,
                "result type int64 can't be cast to the desired output type bool");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, f, c, f), KD_ETYPE,
                "result type complex64 can't be cast to the desired output type float32");
  kdk_iter_release(&it);
  assert_true(kdk__can_cast(KD_INT64, KD_FLOAT32));
  assert_true(kdk__can_cast(KD_BOOL, KD_BOOL));
  assert_false(kdk__can_cast(KD_FLOAT16, KD_UINT8));

  /* check_all_same_dtype (the default without promotion) */
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, f);
  kdk_iter_add_input(&it, i64);
  KD_ASSERT_ERR(kdk_iter_build(&it), KD_ETYPE, "kdk_iter: Found dtype int64 but expected float32");
  kdk_iter_release(&it);

  /* int output of a float computation without safe casting: a temporary,
   * truncated by finish */
  kd_tensor *io = empty(1, n2, KD_INT64);
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, io);
  kdk_iter_add_input(&it, f);
  kdk_iter_add_input(&it, f);
  kdk_iter_promote_inputs_to_common_dtype(&it, true);
  kdk_iter_cast_common_dtype_to_outputs(&it, true);
  KD_ASSERT_OK(kdk_iter_build(&it));
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_FLOAT32);
  assert_ptr_equal(kdk_iter_output(&it, 0), io);
  kdk_iter_for_each(&it, add_f32, NULL, 0);
  KD_ASSERT_OK(kdk_iter_finish(&it));
  kdk_iter_release(&it);
  assert_true(get(io, (int64_t[]){0}) == 3.0);
  assert_true(get(io, (int64_t[]){1}) == 5.0);

  /* too many operands, inputs before outputs */
  kdk_iter_init(&it, NULL);
  for (int i = 0; i < 9; i++) kdk_iter_add_input(&it, f);
  KD_ASSERT_ERR(kdk_iter_build(&it), KD_EINVAL, "too many operands");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  kdk_iter_add_input(&it, f);
  kdk_iter_add_output(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build(&it), KD_EINVAL, "outputs must be added before inputs");
  kdk_iter_release(&it);

  kd_tensor_release(f);
  kd_tensor_release(i64);
  kd_tensor_release(bo);
  kd_tensor_release(c);
  kd_tensor_release(io);
}

static void test_layout(void **state) {
  (void)state;
  /* a transposed [3, 4] input (strides [1, 3]) gives a transposed output */
  float src[12];
  for (int i = 0; i < 12; i++) src[i] = (float)i;
  kd_tensor *base = ft(2, (int64_t[]){4, 3}, src);
  kd_tensor *tr = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3}, 0, &tr));
  kd_tensor *one = wrapped(kd_scalar_double(1.0));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, tr, one));
  kd_tensor *out = kdk_iter_output(&it, 0);
  assert_shape(out, 2, (int64_t[]){3, 4});
  assert_int_equal(kd_tensor_stride(out, 0), 1);
  assert_int_equal(kd_tensor_stride(out, 1), 3);
  assert_int_equal(kdk_iter_ndim(&it), 1); /* dense in the same order: one run */
  assert_false(kdk_iter_is_contiguous(&it)); /* the scalar has stride 0 */
  assert_int_equal(kdk_iter_stride(&it, 0, 0), 4);
  assert_int_equal(kdk_iter_stride(&it, 1, 0), 4);
  kdk_iter_for_each(&it, add_f32, NULL, 0);
  for (int64_t r = 0; r < 3; r++)
    for (int64_t c = 0; c < 4; c++) assert_true(get(out, (int64_t[]){r, c}) == (float)(c * 3 + r) + 1);
  kdk_iter_release(&it);

  /* linear iteration: a contiguous output */
  kdk_iter_init(&it, NULL);
  kdk_iter_enforce_linear_iteration(&it, true);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, tr, one));
  assert_int_equal(kd_tensor_stride(kdk_iter_output(&it, 0), 0), 4);
  assert_int_equal(kdk_iter_ndim(&it), 2);
  kdk_iter_release(&it);

  /* a transposed input and a contiguous one: mixed; contiguous wins the tie of the first */
  kd_tensor *ct = ft(2, (int64_t[]){3, 4}, src);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, ct, tr));
  assert_int_equal(kd_tensor_stride(kdk_iter_output(&it, 0), 1), 1);
  assert_int_equal(kdk_iter_ndim(&it), 2);
  assert_false(kdk_iter_is_contiguous(&it));
  kdk_iter_for_each(&it, add_f32, NULL, 0);
  for (int64_t r = 0; r < 3; r++)
    for (int64_t c = 0; c < 4; c++)
      assert_true(get(kdk_iter_output(&it, 0), (int64_t[]){r, c}) ==
                  (float)(r * 4 + c) + (float)(c * 3 + r));
  kdk_iter_release(&it);
  kd_tensor_release(base);
  kd_tensor_release(tr);
  kd_tensor_release(one);
  kd_tensor_release(ct);
}

static void test_coalesce(void **state) {
  (void)state;
  int64_t s3[] = {2, 3, 4};
  kd_tensor *a = empty(3, s3, KD_FLOAT32), *b = empty(3, s3, KD_FLOAT32);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  assert_int_equal(kdk_iter_ndim(&it), 1);
  assert_int_equal(kdk_iter_shape(&it)[0], 24);
  assert_true(kdk_iter_is_contiguous(&it));
  assert_int_equal(kdk_iter_stride(&it, 1, 0), 4);
  kdk_iter_release(&it);
  /* with a broadcast scalar (the general path) still one dimension */
  kd_tensor *w = wrapped(kd_scalar_int(2));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, w));
  assert_int_equal(kdk_iter_ndim(&it), 1);
  assert_int_equal(kdk_iter_shape(&it)[0], 24);
  assert_int_equal(kdk_iter_stride(&it, 2, 0), 0);
  assert_false(kdk_iter_is_contiguous(&it));
  kdk_iter_release(&it);
  /* a row broadcast over the first dim: [2, 12] in iteration order {12, 2} */
  kd_tensor *row = empty(2, (int64_t[]){3, 4}, KD_FLOAT32);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, row));
  assert_int_equal(kdk_iter_ndim(&it), 2);
  assert_int_equal(kdk_iter_shape(&it)[0], 12);
  assert_int_equal(kdk_iter_shape(&it)[1], 2);
  assert_int_equal(kdk_iter_stride(&it, 2, 1), 0);
  kdk_iter_release(&it);
  /* 0-dim operands only */
  kd_tensor *z = zero_dim(KD_FLOAT32, 1.5);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, z, z));
  assert_int_equal(kdk_iter_ndim(&it), 0);
  assert_int_equal(kdk_iter_numel(&it), 1);
  assert_int_equal(kd_tensor_ndim(kdk_iter_output(&it, 0)), 0);
  loop_count c = {.main = pthread_self()};
  kdk_iter_for_each(&it, add_f32, &c, 0);
  assert_int_equal(atomic_load(&c.calls), 1);
  assert_true(get(kdk_iter_output(&it, 0), NULL) == 3.0);
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(w);
  kd_tensor_release(row);
  kd_tensor_release(z);
}

static void test_noncontiguous(void **state) {
  (void)state;
  float src[24];
  for (int i = 0; i < 24; i++) src[i] = (float)i;
  kd_tensor *base = ft(2, (int64_t[]){4, 6}, src);
  /* every other column: [4, 3] strides [6, 2], offset 1 */
  kd_tensor *a = NULL, *b = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){4, 3}, (int64_t[]){6, 2}, 1, &a));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){3}, (int64_t[]){1}, 20, &b));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  kd_tensor *out = kdk_iter_output(&it, 0);
  assert_true(kd_tensor_is_contiguous(out));
  loop_count c = {.main = pthread_self()};
  kdk_iter_for_each(&it, add_f32, &c, 0);
  assert_int_equal(atomic_load(&c.elements), 12);
  for (int64_t r = 0; r < 4; r++)
    for (int64_t k = 0; k < 3; k++)
      assert_true(get(out, (int64_t[]){r, k}) == (float)(r * 6 + 1 + 2 * k) + (float)(20 + k));
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(base);
}

static void test_zero_size(void **state) {
  (void)state;
  kd_tensor *a = empty(2, (int64_t[]){0, 3}, KD_FLOAT32), *b = empty(1, (int64_t[]){3}, KD_FLOAT32);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  assert_shape(kdk_iter_output(&it, 0), 2, (int64_t[]){0, 3});
  assert_int_equal(kdk_iter_numel(&it), 0);
  loop_count c = {.main = pthread_self()};
  kdk_iter_for_each(&it, add_f32, &c, 0);
  kdk_iter_serial_for_each(&it, add_f32, &c);
  assert_int_equal(atomic_load(&c.calls), 0);
  kdk_iter_release(&it);
  /* broadcasting 0 against 1 */
  kd_tensor *d = empty(2, (int64_t[]){1, 0}, KD_FLOAT32), *e = empty(2, (int64_t[]){4, 1}, KD_FLOAT32);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, d, e));
  assert_shape(kdk_iter_output(&it, 0), 2, (int64_t[]){4, 0});
  kdk_iter_for_each(&it, add_f32, &c, 0);
  assert_int_equal(atomic_load(&c.calls), 0);
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(d);
  kd_tensor_release(e);
}

/* Broadcast shapes whose sizes multiply past int64 (found by fuzz_boxed).
 * With a zero size the count is 0 without overflowing on the way (UBSan
 * watches; the output's strides still overflow, so the build fails there);
 * without one the build fails naming the shape. */
static void test_huge_broadcast(void **state) {
  (void)state;
  int64_t big = (int64_t)1 << 60;
  kd_tensor *z0 = empty(2, (int64_t[]){big, 0}, KD_FLOAT32), *z = NULL;
  kd_tensor *one = empty(1, (int64_t[]){1}, KD_FLOAT32);
  /* [16, 2^60, 0]: 16 * 2^60 overflows before the 0 is reached */
  KD_ASSERT_OK(kd_tensor_as_strided(z0, 3, (int64_t[]){16, big, 0}, (int64_t[]){0, 1, 1}, 0, &z));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, NULL, z, one), KD_EOVERFLOW,
                "sizes=[16, 1152921504606846976, 0]");
  kdk_iter_release(&it);
  /* expanded operands (stride 0 over one element): [2^33, 1] with [1, 2^31] */
  kd_tensor *a = NULL, *b = NULL;
  int64_t zero[2] = {0, 0};
  KD_ASSERT_OK(kd_tensor_as_strided(one, 2, (int64_t[]){(int64_t)1 << 33, 1}, zero, 0, &a));
  KD_ASSERT_OK(kd_tensor_as_strided(one, 2, (int64_t[]){1, (int64_t)1 << 31}, zero, 0, &b));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, NULL, a, b), KD_EOVERFLOW,
                "the broadcast shape [8589934592, 2147483648] has more than 2^63 elements");
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(z);
  kd_tensor_release(z0);
  kd_tensor_release(one);
}

static void test_threads(void **state) {
  (void)state;
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(4));
  int64_t n = 1 << 20;
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  assert_non_null(x);
  assert_non_null(y);
  for (int64_t i = 0; i < n; i++) {
    x[i] = (float)(i % 1000);
    y[i] = 1.0f;
  }
  kd_tensor *a = ft(1, &n, x), *b = ft(1, &n, y);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  loop_count c = {.main = pthread_self()};
  kdk_iter_for_each(&it, add_f32, &c, KDK_GRAIN_SIZE);
  assert_int_equal(atomic_load(&c.elements), n);
  assert_true(atomic_load(&c.calls) > 1);
  assert_true(atomic_load(&c.calls) <= 4);
  const float *o = kd_tensor_data(kdk_iter_output(&it, 0));
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += o[i];
  double want = 0;
  for (int64_t i = 0; i < n; i++) want += (double)(i % 1000) + 1;
  assert_true(sum == want);
  /* serial: one call on this thread */
  loop_count s = {.main = pthread_self()};
  kdk_iter_serial_for_each(&it, add_f32, &s);
  assert_int_equal(atomic_load(&s.calls), 1);
  assert_int_equal(atomic_load(&s.other_thread), 0);
  kdk_iter_release(&it);

  /* below the grain: one call on this thread */
  int64_t small = 1000;
  kd_tensor *sa = ft(1, &small, x), *sb = ft(1, &small, y);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, sa, sb));
  loop_count t = {.main = pthread_self()};
  kdk_iter_for_each(&it, add_f32, &t, 0);
  assert_int_equal(atomic_load(&t.calls), 1);
  assert_int_equal(atomic_load(&t.other_thread), 0);
  kdk_iter_release(&it);

  /* a 2-d non-contiguous iteration over threads: chunks cut inside rows */
  kd_tensor *m = NULL, *mt = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){1024, 1000}, (int64_t[]){1, 1024}, 0, &mt));
  kd_tensor *cm = empty(2, (int64_t[]){1024, 1000}, KD_FLOAT32);
  KD_ASSERT_OK(kd_tensor_as_strided(b, 2, (int64_t[]){1024, 1000}, (int64_t[]){1000, 1}, 0, &m));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, cm, mt, m));
  assert_int_equal(kdk_iter_ndim(&it), 2);
  loop_count u = {.main = pthread_self()};
  kdk_iter_for_each(&it, add_f32, &u, 100000);
  assert_int_equal(atomic_load(&u.elements), 1024 * 1000);
  kdk_iter_release(&it);
  for (int64_t r = 0; r < 1024; r += 97)
    for (int64_t k = 0; k < 1000; k += 31)
      assert_true(get(cm, (int64_t[]){r, k}) == (float)((r + k * 1024) % 1000) + 1);

  kd_tensor *all[] = {a, b, sa, sb, m, mt, cm};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) kd_tensor_release(all[i]);
  free(x);
  free(y);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

static void test_reduction(void **state) {
  (void)state;
  float src[12];
  for (int i = 0; i < 12; i++) src[i] = (float)i;
  kd_tensor *a = ft(2, (int64_t[]){3, 4}, src);
  kdk_iter it;
  /* sum over dim 1 */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, a, (int64_t[]){1}, 1, false, KD_DTYPE_UNDEFINED));
  kd_tensor *out = kdk_iter_output(&it, 0);
  assert_shape(out, 1, (int64_t[]){3});
  assert_true(kdk_iter_has_row(&it));
  assert_int_equal(kdk_iter_row_len(&it), 4);
  assert_int_equal(kdk_iter_num_rows(&it), 3);
  kdk_iter_for_each_row(&it, sum_rows_f32, NULL, 0);
  for (int64_t r = 0; r < 3; r++) assert_true(get(out, &r) == (float)(r * 16 + 6));
  kdk_iter_release(&it);
  /* over dim 0, keepdim */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, a, (int64_t[]){-2}, 1, true, KD_DTYPE_UNDEFINED));
  out = kdk_iter_output(&it, 0);
  assert_shape(out, 2, (int64_t[]){1, 4});
  kdk_iter_for_each(&it, sum_rows_f32, NULL, 0);
  for (int64_t c = 0; c < 4; c++) assert_true(get(out, (int64_t[]){0, c}) == (float)(12 + 3 * c));
  kdk_iter_release(&it);
  /* all dims of a transposed view: copied so that the row is row-major */
  kd_tensor *tr = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 0, &tr));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, tr, NULL, 0, false, KD_INT64));
  assert_int_equal(kd_tensor_ndim(kdk_iter_output(&it, 0)), 0);
  assert_int_equal(kdk_iter_row_len(&it), 12);
  kdk_iter_for_each(&it, argmax_rows, NULL, 0);
  assert_true(get(kdk_iter_output(&it, 0), NULL) == 11.0);
  kdk_iter_release(&it);
  /* argmax over dim 0 of the transposed view (rows of stride 4 elements) */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, tr, (int64_t[]){0}, 1, false, KD_INT64));
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_INT64);
  kdk_iter_for_each(&it, argmax_rows, NULL, 0);
  for (int64_t c = 0; c < 3; c++) assert_true(get(kdk_iter_output(&it, 0), &c) == 3.0);
  kdk_iter_release(&it);
  /* errors */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_reduce_op(&it, NULL, a, (int64_t[]){2}, 1, false, KD_DTYPE_UNDEFINED),
                KD_EINVAL, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(
      kdk_iter_build_reduce_op(&it, NULL, a, (int64_t[]){1, -1}, 2, false, KD_DTYPE_UNDEFINED),
      KD_EINVAL, "dim 1 appears multiple times in the list of dims");
  kdk_iter_release(&it);
  /* an empty reduced dim: rows of length 0 are visited */
  kd_tensor *e = empty(2, (int64_t[]){3, 0}, KD_FLOAT32);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, e, (int64_t[]){1}, 1, false, KD_DTYPE_UNDEFINED));
  kdk_iter_for_each(&it, sum_rows_f32, NULL, 0);
  for (int64_t r = 0; r < 3; r++) assert_true(get(kdk_iter_output(&it, 0), &r) == 0.0);
  kdk_iter_release(&it);
  /* a 0-dim input */
  kd_tensor *z = zero_dim(KD_FLOAT32, 4.5);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, z, NULL, 0, false, KD_DTYPE_UNDEFINED));
  kdk_iter_for_each(&it, sum_rows_f32, NULL, 0);
  assert_true(get(kdk_iter_output(&it, 0), NULL) == 4.5);
  kdk_iter_release(&it);

  /* row dim: cumsum over dim 1 of the transposed view; output follows the layout */
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, tr);
  kdk_iter_set_row_dim(&it, 1);
  KD_ASSERT_OK(kdk_iter_build(&it));
  out = kdk_iter_output(&it, 0);
  assert_shape(out, 2, (int64_t[]){4, 3});
  assert_int_equal(kd_tensor_stride(out, 0), 1);
  kdk_iter_for_each(&it, cumsum_rows, NULL, 0);
  for (int64_t r = 0; r < 4; r++) {
    float acc = 0;
    for (int64_t c = 0; c < 3; c++) {
      acc += (float)(r + 4 * c);
      assert_true(get(out, (int64_t[]){r, c}) == acc);
    }
  }
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(tr);
  kd_tensor_release(e);
  kd_tensor_release(z);
}

static void test_reduction_threads(void **state) {
  (void)state;
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(4));
  int64_t n = 1 << 20;
  float *x = malloc((size_t)n * sizeof *x);
  assert_non_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 7);
  double want = 0;
  for (int64_t i = 0; i < n; i++) want += x[i];
  kd_tensor *a = ft(1, &n, x);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, a, NULL, 0, false, KD_DTYPE_UNDEFINED));
  KD_ASSERT_OK(kdk_iter_reduce_rows(&it, sum_rows_f32, NULL, 0));
  assert_true(get(kdk_iter_output(&it, 0), NULL) == (float)want);
  kdk_iter_release(&it);
  /* many rows: split over rows */
  kd_tensor *m = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){1024, 1024}, (int64_t[]){1024, 1}, 0, &m));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, m, (int64_t[]){1}, 1, false, KD_DTYPE_UNDEFINED));
  KD_ASSERT_OK(kdk_iter_reduce_rows(&it, sum_rows_f32, NULL, 0));
  for (int64_t r = 0; r < 1024; r += 101) {
    double s = 0;
    for (int64_t c = 0; c < 1024; c++) s += x[r * 1024 + c];
    assert_true(get(kdk_iter_output(&it, 0), &r) == (float)s);
  }
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(m);
  free(x);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

static void test_overlap(void **state) {
  (void)state;
  kd_tensor *a = ft(1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  kd_tensor *lo = NULL, *hi = NULL, *bc = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 1, (int64_t[]){3}, (int64_t[]){1}, 0, &lo));
  KD_ASSERT_OK(kd_tensor_as_strided(a, 1, (int64_t[]){3}, (int64_t[]){1}, 1, &hi));
  KD_ASSERT_OK(kd_tensor_as_strided(a, 1, (int64_t[]){3}, (int64_t[]){0}, 0, &bc));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, hi, lo, lo), KD_EINVAL,
                "some elements of the input tensor and the written-to tensor refer to a single "
                "memory location");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build_binary_op(&it, bc, lo, lo), KD_EINVAL,
                "more than one element of the written-to tensor refers to a single memory location");
  kdk_iter_release(&it);
  /* in place is fine */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, lo, lo, lo));
  kdk_iter_release(&it);
  kd_tensor_release(a);
  kd_tensor_release(lo);
  kd_tensor_release(hi);
  kd_tensor_release(bc);
}

/* A structured add (meta + impl) as generated wrappers run it. */
static kd_status structured_add(kdk_structured_mode mode, kd_tensor *given, kd_tensor *a,
                                kd_tensor *b, kd_tensor **result) {
  kdk_structured s;
  kd_tensor *g[1] = {given};
  kdk_structured_init(&s, mode == KDK_STRUCTURED_OUT ? "aten::add.out" : "aten::add.Tensor", mode, 1,
                     given ? g : NULL, mode == KDK_STRUCTURED_META ? (kd_device){KD_DEVICE_META, 0} : kd_device_cpu());
  kdk_iter it;
  kdk_iter_init(&it, &s);
  kd_status st = kdk_iter_build_binary_op(&it, NULL, a, b);
  if (!st && mode != KDK_STRUCTURED_META) kdk_iter_for_each(&it, add_f32, NULL, 0);
  if (!st) st = kdk_iter_finish(&it);
  if (!st) st = kdk_structured_finish(&s);
  kdk_iter_release(&it);
  kd_tensor *take[1] = {NULL};
  bool functional = mode == KDK_STRUCTURED_FUNCTIONAL || mode == KDK_STRUCTURED_META;
  kdk_structured_release(&s, st || !functional ? NULL : take);
  if (result) *result = take[0];
  return st;
}

static void test_structured(void **state) {
  (void)state;
  kd_tensor *a = ft(2, (int64_t[]){2, 2}, (float[]){1, 2, 3, 4});
  kd_tensor *b = ft(1, (int64_t[]){2}, (float[]){10, 20});
  kd_tensor *r = NULL;
  KD_ASSERT_OK(structured_add(KDK_STRUCTURED_FUNCTIONAL, NULL, a, b, &r));
  assert_shape(r, 2, (int64_t[]){2, 2});
  assert_true(get(r, (int64_t[]){1, 1}) == 24.0);
  assert_int_equal(kd_tensor_refcount(r), 1);
  kd_tensor_release(r);
  /* in place: self is output and input */
  KD_ASSERT_OK(structured_add(KDK_STRUCTURED_INPLACE, a, a, b, NULL));
  assert_true(get(a, (int64_t[]){0, 1}) == 22.0);
  KD_ASSERT_ERR(structured_add(KDK_STRUCTURED_INPLACE, b, b, a, NULL), KD_EINVAL,
                "aten::add.Tensor: output with shape [2] doesn't match the broadcast shape [2, 2]");
  kd_tensor *i64 = empty(2, (int64_t[]){2, 2}, KD_INT64);
  KD_ASSERT_ERR(structured_add(KDK_STRUCTURED_INPLACE, i64, i64, a, NULL), KD_ETYPE,
                "aten::add.Tensor: result type float32 can't be cast to the desired output type "
                "int64");
  /* out: resized, and of another dtype through a temporary */
  kd_tensor *o = empty(1, (int64_t[]){0}, KD_FLOAT64);
  KD_ASSERT_OK(structured_add(KDK_STRUCTURED_OUT, o, a, b, NULL));
  assert_shape(o, 2, (int64_t[]){2, 2});
  assert_int_equal(kd_tensor_dtype(o), KD_FLOAT64);
  assert_true(get(o, (int64_t[]){1, 0}) == 23.0);
  /* a non-contiguous out of the right shape is written in place */
  kd_tensor *ob = empty(2, (int64_t[]){2, 2}, KD_FLOAT32), *ot = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(ob, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 0, &ot));
  KD_ASSERT_OK(structured_add(KDK_STRUCTURED_OUT, ot, a, b, NULL));
  assert_true(get(ot, (int64_t[]){0, 1}) == 22.0 + 20.0);
  assert_true(get(ot, (int64_t[]){1, 0}) == 23.0);
  /* meta: shapes and dtypes only */
  kd_tensor *ma = NULL, *mb = NULL, *mr = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(a, (kd_device){KD_DEVICE_META, 0}, &ma));
  KD_ASSERT_OK(kd_tensor_to_device(i64, (kd_device){KD_DEVICE_META, 0}, &mb));
  KD_ASSERT_OK(structured_add(KDK_STRUCTURED_META, NULL, mb, ma, &mr));
  assert_int_equal(kd_tensor_device(mr).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_dtype(mr), KD_FLOAT32);
  assert_shape(mr, 2, (int64_t[]){2, 2});
  kd_tensor *all[] = {a, b, i64, o, ob, ot, ma, mb, mr};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) kd_tensor_release(all[i]);
}

static void test_nullary_and_static(void **state) {
  (void)state;
  kd_tensor *o = empty(2, (int64_t[]){2, 3}, KD_INT32);
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_nullary_op(&it, o));
  assert_int_equal(kdk_iter_ntensors(&it), 1);
  assert_int_equal(kdk_iter_numel(&it), 6);
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_INT32);
  kdk_iter_release(&it);
  /* static shape and dtype, no inputs */
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_declare_static_shape(&it, 2, (int64_t[]){3, 5});
  kdk_iter_declare_static_dtype(&it, KD_FLOAT64);
  KD_ASSERT_OK(kdk_iter_build(&it));
  assert_shape(kdk_iter_output(&it, 0), 2, (int64_t[]){3, 5});
  assert_int_equal(kd_tensor_dtype(kdk_iter_output(&it, 0)), KD_FLOAT64);
  kdk_iter_release(&it);
  /* no dtype at all */
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  KD_ASSERT_ERR(kdk_iter_build(&it), KD_EINVAL, "cannot infer the dtype of output 0");
  kdk_iter_release(&it);
  /* a forced computation dtype converts inputs */
  kd_tensor *i = empty(1, (int64_t[]){4}, KD_INT32);
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, i);
  kdk_iter_set_common_dtype(&it, KD_INT64);
  kdk_iter_promote_inputs_to_common_dtype(&it, true);
  KD_ASSERT_OK(kdk_iter_build(&it));
  assert_int_equal(kdk_iter_dtype(&it, 0), KD_INT64);
  assert_int_equal(kdk_iter_dtype(&it, 1), KD_INT64);
  kdk_iter_release(&it);
  /* an owned input is released by the iterator */
  kd_tensor *w = wrapped(kd_scalar_int(3));
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, i);
  kdk_iter_add_owned_input(&it, w);
  kdk_iter_promote_inputs_to_common_dtype(&it, true);
  KD_ASSERT_OK(kdk_iter_build(&it));
  assert_int_equal(kdk_iter_common_dtype(&it), KD_INT32);
  kdk_iter_release(&it);
  kd_tensor_release(o);
  kd_tensor_release(i);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_broadcast),      cmocka_unit_test(test_promotion),
      cmocka_unit_test(test_casting_errors), cmocka_unit_test(test_layout),
      cmocka_unit_test(test_coalesce),       cmocka_unit_test(test_noncontiguous),
      cmocka_unit_test(test_zero_size),      cmocka_unit_test(test_huge_broadcast),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_reduction),      cmocka_unit_test(test_reduction_threads),
      cmocka_unit_test(test_overlap),        cmocka_unit_test(test_structured),
      cmocka_unit_test(test_nullary_and_static),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
