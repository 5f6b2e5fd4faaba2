/* The tensor iterator's short path (kdk_iter_build on same-shape contiguous
 * operands) against the general path (kdk__iter_build_general) on the same
 * inputs: the same geometry, dtypes, outputs and results, and the same
 * errors where the short path does not apply. */
#include "iter.h"
#include "kd_test.h"

typedef enum { BINARY, BINARY_FLOAT, COMPARISON, UNARY } builder;

/* Configures `it` as the builder would (without building). */
static void configure(kdk_iter *it, builder b, kd_tensor *out, kd_tensor *x, kd_tensor *y) {
  kdk_iter_add_output(it, out);
  kdk_iter_add_input(it, x);
  if (b != UNARY) kdk_iter_add_input(it, y);
  switch (b) {
  case BINARY_FLOAT:
    kdk_iter_promote_integer_inputs_to_float(it, true);
    /* fall through */
  case BINARY:
    kdk_iter_promote_inputs_to_common_dtype(it, true);
    kdk_iter_cast_common_dtype_to_outputs(it, true);
    kdk_iter_enforce_safe_casting_to_output(it, true);
    break;
  case COMPARISON:
    kdk_iter_promote_inputs_to_common_dtype(it, true);
    if (!out)
      kdk_iter_declare_static_dtype(it, KD_BOOL);
    else if (kd_tensor_dtype(out) != KD_BOOL)
      kdk_iter_cast_common_dtype_to_outputs(it, true);
    break;
  case UNARY:
    kdk_iter_cast_common_dtype_to_outputs(it, true);
    kdk_iter_enforce_safe_casting_to_output(it, true);
    kdk_iter_check_all_same_dtype(it, false);
    break;
  }
}

static void assert_same_tensor_geometry(const kd_tensor *a, const kd_tensor *b) {
  assert_int_equal(kd_tensor_ndim(a), kd_tensor_ndim(b));
  for (int d = 0; d < kd_tensor_ndim(a); d++) {
    assert_int_equal(kd_tensor_sizes(a)[d], kd_tensor_sizes(b)[d]);
    assert_int_equal(kd_tensor_strides(a)[d], kd_tensor_strides(b)[d]);
  }
  assert_int_equal(kd_tensor_dtype(a), kd_tensor_dtype(b));
  assert_true(kd_device_equal(kd_tensor_device(a), kd_tensor_device(b)));
}

/* Adds element 0 and 1 as doubles (any real dtype): enough to see both
 * iterators drive the same operands. */
typedef struct sum_ctx {
  kd_dtype in, out;
} sum_ctx;

static void sum_loop(void *p, char **data, const int64_t *strides, int64_t n0, int64_t n1) {
  const sum_ctx *c = p;
  for (int64_t j = 0; j < n1; j++)
    for (int64_t i = 0; i < n0; i++) {
      kd_scalar a, b;
      kd_scalar_from_element(data[1] + i * strides[1] + j * strides[4], c->in, &a);
      kd_scalar_from_element(data[2] + i * strides[2] + j * strides[5], c->in, &b);
      kd_scalar r = kd_scalar_double(kd_scalar_to_double(&a) + kd_scalar_to_double(&b));
      if (c->out == KD_BOOL) r = kd_scalar_bool(kd_scalar_to_double(&r) != 0);
      kd_scalar_to_element(&r, c->out, data[0] + i * strides[0] + j * strides[3]);
    }
}

/* Builds the same configuration twice, short path and general path, with
 * s == NULL and NULL (or given) outputs, and compares everything. For given
 * outputs, `out1` / `out2` are two equal tensors (one per build). */
static void compare(builder b, kd_tensor *x, kd_tensor *y, kd_tensor *out1, kd_tensor *out2) {
  kdk_iter f, g;
  kdk_iter_init(&f, NULL);
  kdk_iter_init(&g, NULL);
  configure(&f, b, out1, x, y);
  configure(&g, b, out2, x, y);
  kd_status sf = kdk_iter_build(&f);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", kd_last_error());
  kd_status sg = kdk__iter_build_general(&g);
  assert_int_equal(sf, sg);
  if (sf) {
    assert_string_equal(msg, kd_last_error());
  } else {
    assert_int_equal(kdk_iter_ntensors(&f), kdk_iter_ntensors(&g));
    assert_int_equal(kdk_iter_ndim(&f), kdk_iter_ndim(&g));
    assert_int_equal(kdk_iter_numel(&f), kdk_iter_numel(&g));
    assert_int_equal(kdk_iter_num_rows(&f), kdk_iter_num_rows(&g));
    assert_int_equal(kdk_iter_has_row(&f), kdk_iter_has_row(&g));
    assert_int_equal(kdk_iter_common_dtype(&f), kdk_iter_common_dtype(&g));
    assert_int_equal(kdk_iter_is_contiguous(&f), kdk_iter_is_contiguous(&g));
    assert_int_equal(kdk_iter_is_meta(&f), kdk_iter_is_meta(&g));
    assert_int_equal(kdk_iter_full_ndim(&f), kdk_iter_full_ndim(&g));
    for (int d = 0; d < kdk_iter_full_ndim(&f); d++)
      assert_int_equal(kdk_iter_full_shape(&f)[d], kdk_iter_full_shape(&g)[d]);
    for (int d = 0; d < kdk_iter_ndim(&f); d++) {
      assert_int_equal(kdk_iter_shape(&f)[d], kdk_iter_shape(&g)[d]);
      for (int k = 0; k < kdk_iter_ntensors(&f); k++)
        assert_int_equal(kdk_iter_stride(&f, k, d), kdk_iter_stride(&g, k, d));
    }
    for (int k = 0; k < kdk_iter_ntensors(&f); k++) {
      assert_int_equal(kdk_iter_dtype(&f, k), kdk_iter_dtype(&g, k));
      assert_int_equal(kdk_iter_data(&f, k) != NULL, kdk_iter_data(&g, k) != NULL);
      assert_int_equal(kdk_iter_is_scalar(&f, k), kdk_iter_is_scalar(&g, k));
    }
    for (int k = 0; k < kdk_iter_ninputs(&f); k++) /* the same, or equal converted copies */
      assert_same_tensor_geometry(kdk_iter_input(&f, k), kdk_iter_input(&g, k));
    kd_tensor *of = kdk_iter_output(&f, 0), *og = kdk_iter_output(&g, 0);
    assert_same_tensor_geometry(of, og);
    if (out1) {
      assert_ptr_equal(of, out1);
      assert_ptr_equal(og, out2);
    }
    if (b != UNARY && kdk_iter_ninputs(&f) == 2 && kd_dtype_is_floating(kdk_iter_dtype(&f, 1)) ==
                                                    kd_dtype_is_floating(kdk_iter_dtype(&g, 1))) {
      sum_ctx cf = {kdk_iter_dtype(&f, 1), kdk_iter_dtype(&f, 0)};
      sum_ctx cg = {kdk_iter_dtype(&g, 1), kdk_iter_dtype(&g, 0)};
      if (!kd_dtype_is_complex(cf.in) && !kd_dtype_is_complex(cf.out)) {
        kdk_iter_for_each(&f, sum_loop, &cf, 0);
        kdk_iter_for_each(&g, sum_loop, &cg, 0);
        assert_int_equal(kdk_iter_finish(&f), KD_OK);
        assert_int_equal(kdk_iter_finish(&g), KD_OK);
        int64_t n = kd_tensor_numel(of);
        size_t isz = kd_tensor_itemsize(of);
        if (n > 0 && kd_tensor_is_contiguous(of))
          assert_memory_equal(kd_tensor_data(of), kd_tensor_data(og), (size_t)n * isz);
      }
    }
  }
  kdk_iter_release(&f);
  kdk_iter_release(&g);
}

static kd_tensor *filled(int ndim, const int64_t *sizes, kd_dtype dt, int seed) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t));
  int64_t idx[KD_MAX_DIMS] = {0};
  for (int64_t e = 0; e < kd_tensor_numel(t); e++) {
    int64_t r = e;
    for (int d = ndim - 1; d >= 0; d--) {
      idx[d] = r % sizes[d];
      r /= sizes[d];
    }
    kd_scalar v = kd_scalar_int((e * 7 + seed) % 5);
    KD_ASSERT_OK(kd_tensor_set(t, idx, &v));
  }
  return t;
}

static void test_same_shape_every_dtype(void **state) {
  (void)state;
  static const struct {
    int ndim;
    int64_t sizes[3];
  } shapes[] = {{0, {0}}, {1, {1}}, {1, {5}}, {2, {2, 3}}, {3, {2, 1, 4}}, {1, {0}}, {2, {3, 0}}};
  const builder builders[] = {BINARY, BINARY_FLOAT, COMPARISON, UNARY};
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
    for (int dt = 0; dt < KD_DTYPE_COUNT; dt++) {
      if (!kd_dtype_valid((kd_dtype)dt)) continue;
      int nd = shapes[si].ndim;
      const int64_t *sz = shapes[si].sizes;
      kd_tensor *x = filled(nd, sz, (kd_dtype)dt, 1), *y = filled(nd, sz, (kd_dtype)dt, 2);
      for (size_t bi = 0; bi < sizeof builders / sizeof *builders; bi++) {
        compare(builders[bi], x, y, NULL, NULL);
        /* given outputs: same dtype, another dtype, another shape */
        kd_dtype ods[] = {(kd_dtype)dt, KD_FLOAT64, KD_BOOL};
        for (size_t oi = 0; oi < 3; oi++) {
          kd_tensor *o1 = filled(nd, sz, ods[oi], 0), *o2 = filled(nd, sz, ods[oi], 0);
          compare(builders[bi], x, y, o1, o2);
          kd_tensor_release(o1);
          kd_tensor_release(o2);
        }
        kd_tensor *o1 = filled(1, (int64_t[]){7}, (kd_dtype)dt, 0);
        kd_tensor *o2 = filled(1, (int64_t[]){7}, (kd_dtype)dt, 0);
        compare(builders[bi], x, y, o1, o2);
        kd_tensor_release(o1);
        kd_tensor_release(o2);
      }
      kd_tensor_release(x);
      kd_tensor_release(y);
    }
  }
}

static void test_mixed_operands(void **state) {
  (void)state;
  kd_tensor *a = filled(2, (int64_t[]){2, 3}, KD_FLOAT32, 1);
  kd_tensor *b = filled(2, (int64_t[]){2, 3}, KD_INT64, 2);
  kd_tensor *c = filled(1, (int64_t[]){3}, KD_FLOAT32, 3);
  kd_tensor *t = NULL, *w = NULL, *z = NULL, *v = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &t));
  kd_tensor *t2 = filled(2, (int64_t[]){3, 2}, KD_FLOAT32, 4);
  kd_scalar one = kd_scalar_double(1.5);
  KD_ASSERT_OK(kdk_iter_wrap_scalar(&one, &w));
  KD_ASSERT_OK(kd_tensor_from_scalar(&one, KD_FLOAT64, &z));
  KD_ASSERT_OK(kd_tensor_from_scalar(&one, KD_FLOAT32, &v));
  kd_tensor *ints = filled(2, (int64_t[]){2, 3}, KD_INT32, 5);
  const builder builders[] = {BINARY, BINARY_FLOAT, COMPARISON};
  for (size_t bi = 0; bi < 3; bi++) {
    compare(builders[bi], a, b, NULL, NULL);     /* dtypes differ */
    compare(builders[bi], a, c, NULL, NULL);     /* broadcast */
    compare(builders[bi], t, t2, NULL, NULL);    /* transposed input */
    compare(builders[bi], w, w, NULL, NULL);     /* wrapped numbers */
    compare(builders[bi], z, w, NULL, NULL);     /* 0-dim and wrapped */
    compare(builders[bi], v, v, NULL, NULL);     /* 0-dim float32 */
    compare(builders[bi], ints, ints, NULL, NULL); /* integers (float op: promoted) */
  }
  /* an output sharing the input's storage: the same elements, or partly */
  kd_tensor *base = filled(1, (int64_t[]){8}, KD_FLOAT32, 1);
  kd_tensor *lo = NULL, *hi = NULL, *lo2 = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){5}, (int64_t[]){1}, 0, &lo));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){5}, (int64_t[]){1}, 0, &lo2));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){5}, (int64_t[]){1}, 3, &hi));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  configure(&it, BINARY, hi, lo, lo);
  KD_ASSERT_ERR(kdk_iter_build(&it), KD_EINVAL, "some elements of the input tensor and the written-to");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  configure(&it, BINARY, lo2, lo, lo);
  KD_ASSERT_OK(kdk_iter_build(&it));
  kdk_iter_release(&it);
  kd_tensor *all[] = {a, b, c, t, t2, w, z, v, ints, base, lo, hi, lo2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) kd_tensor_release(all[i]);
}

/* Structured calls take the short path too: functional, out, in place. */
static void test_structured_short_path(void **state) {
  (void)state;
  kd_tensor *a = filled(1, (int64_t[]){4}, KD_FLOAT32, 1);
  kd_tensor *b = filled(1, (int64_t[]){4}, KD_FLOAT32, 2);
  kd_tensor *o = filled(1, (int64_t[]){4}, KD_FLOAT32, 0);
  kdk_structured s;
  kdk_iter it;
  kdk_structured_init(&s, "aten::add.Tensor", KDK_STRUCTURED_FUNCTIONAL, 1, NULL, kd_device_cpu());
  kdk_iter_init(&it, &s);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  kd_tensor *r = kdk_structured_output(&s, 0);
  assert_non_null(r);
  assert_ptr_equal(kdk_iter_output(&it, 0), r);
  assert_int_equal(kd_tensor_numel(r), 4);
  kdk_iter_release(&it);
  kd_tensor *take[1];
  kdk_structured_release(&s, take);
  assert_int_equal(kd_tensor_refcount(take[0]), 1);
  kd_tensor_release(take[0]);
  kd_tensor *given[1] = {o};
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, given, kd_device_cpu());
  kdk_iter_init(&it, &s);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  assert_ptr_equal(kdk_structured_output(&s, 0), o);
  assert_ptr_equal(kdk_iter_data(&it, 0), kd_tensor_data(o));
  /* set twice: the same error as the general path */
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){4}, NULL, KD_FLOAT32), KD_ESTATE,
                "output 0 was set twice");
  kdk_iter_release(&it);
  kdk_structured_release(&s, NULL);
  assert_int_equal(kd_tensor_refcount(o), 1);
  given[0] = a;
  kdk_structured_init(&s, "aten::add_.Tensor", KDK_STRUCTURED_INPLACE, 1, given, kd_device_cpu());
  kdk_iter_init(&it, &s);
  KD_ASSERT_OK(kdk_iter_build_binary_op(&it, NULL, a, b));
  assert_ptr_equal(kdk_structured_output(&s, 0), a);
  kdk_iter_release(&it);
  kdk_structured_release(&s, NULL);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_shape_every_dtype),
      cmocka_unit_test(test_mixed_operands),
      cmocka_unit_test(test_structured_short_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
