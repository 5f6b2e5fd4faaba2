/* The structured-kernel runtime (ops/src/structured.h): every mode. */
#include "kd_test.h"
#include "structured.h"

static const kd_device meta = {KD_DEVICE_META, 0};

typedef struct warnings {
  int count;
  char last[1024];
} warnings;

static void on_warning(const char *message, void *user) {
  warnings *w = user;
  w->count++;
  snprintf(w->last, sizeof w->last, "%s", message);
}

static void assert_sizes(const kd_tensor *t, int ndim, const int64_t *sizes) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int d = 0; d < ndim; d++) assert_int_equal(kd_tensor_size(t, d), sizes[d]);
}

static void assert_strides(const kd_tensor *t, int ndim, const int64_t *strides) {
  for (int d = 0; d < ndim; d++) assert_int_equal(kd_tensor_stride(t, d), strides[d]);
}

static void test_functional(void **state) {
  (void)state;
  kdk_structured s;
  kdk_structured_init(&s, "aten::add.Tensor", KDK_STRUCTURED_FUNCTIONAL, 2, NULL, kd_device_cpu());
  assert_null(kdk_structured_output(&s, 0));
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, NULL, KD_FLOAT32));
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 1, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, KD_INT64));
  kd_tensor *a = kdk_structured_output(&s, 0), *b = kdk_structured_output(&s, 1);
  assert_sizes(a, 2, (int64_t[]){2, 3});
  assert_strides(a, 2, (int64_t[]){3, 1});
  assert_int_equal(kd_tensor_dtype(a), KD_FLOAT32);
  assert_int_equal(kd_tensor_device(a).type, KD_DEVICE_CPU);
  assert_sizes(b, 2, (int64_t[]){2, 3});
  assert_strides(b, 2, (int64_t[]){1, 2});
  assert_int_equal(kd_tensor_dtype(b), KD_INT64);
  assert_false((s.proxies & (1u << 0)) || (s.proxies & (1u << 1)));
  /* Twice for one output; an index out of range. */
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_FLOAT32), KD_ESTATE,
                "aten::add.Tensor: output 0 was set twice");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 2, 1, (int64_t[]){2}, NULL, KD_FLOAT32), KD_EINVAL,
                "aten::add.Tensor: output index 2 out of range: the call has 2 outputs");
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kd_tensor *took[2];
  kdk_structured_release(&s, took);
  assert_ptr_equal(took[0], a);
  assert_ptr_equal(took[1], b);
  assert_null(kdk_structured_output(&s, 0));
  assert_int_equal(kd_tensor_refcount(a), 1);
  kd_tensor_release(a);
  kd_tensor_release(b);

  /* Without take, release frees; allocation errors name the operator. */
  kdk_structured_init(&s, "aten::mul.Tensor", KDK_STRUCTURED_FUNCTIONAL, 2, NULL, kd_device_cpu());
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 0, NULL, NULL, KD_BOOL));
  assert_int_equal(kd_tensor_ndim(kdk_structured_output(&s, 0)), 0);
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 1, 1, (int64_t[]){-1}, NULL, KD_FLOAT32), KD_EINVAL,
                "aten::mul.Tensor: ");
  assert_null(kdk_structured_output(&s, 1));
  kdk_structured_release(&s, NULL);
  assert_null(kdk_structured_output(&s, 0));
}

static void test_meta(void **state) {
  (void)state;
  kdk_structured s;
  kdk_structured_init(&s, "aten::add.Tensor", KDK_STRUCTURED_META, 1, NULL, kd_device_cpu());
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 0, 2, (int64_t[]){4, 5}, (int64_t[]){1, 4}, KD_FLOAT64));
  kd_tensor *t = kdk_structured_output(&s, 0);
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_META);
  assert_null(kd_tensor_data(t));
  assert_sizes(t, 2, (int64_t[]){4, 5});
  assert_strides(t, 2, (int64_t[]){1, 4});
  assert_int_equal(kd_tensor_dtype(t), KD_FLOAT64);
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kd_tensor *took;
  kdk_structured_release(&s, &took);
  assert_ptr_equal(took, t);
  kd_tensor_release(took);
}

static void test_inplace(void **state) {
  (void)state;
  kd_tensor *self;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_INT64, kd_device_cpu(), &self));
  kdk_structured s;
  kdk_structured_init(&s, "aten::add_.Tensor", KDK_STRUCTURED_INPLACE, 1, &self, kd_device_cpu());
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 2}, NULL, KD_INT64), KD_EINVAL,
                "output with shape [2] doesn't match the broadcast shape [2, 2]");
  assert_string_equal(
      kd_last_error(),
      "aten::add_.Tensor: output with shape [2] doesn't match the broadcast shape [2, 2]");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_FLOAT32), KD_ETYPE,
                "");
  assert_string_equal(kd_last_error(),
                      "aten::add_.Tensor: bad in-place call: input tensor dtype int64 and "
                      "output tensor dtype float32 should match");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 0, NULL, NULL, KD_INT64), KD_EINVAL,
                "output with shape [2] doesn't match the broadcast shape []");
  assert_null(kdk_structured_output(&s, 0));
  /* Fits: output 0 is self itself. */
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, (int64_t[]){1}, KD_INT64));
  assert_ptr_equal(kdk_structured_output(&s, 0), self);
  assert_false((s.proxies & (1u << 0)));
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kdk_structured_release(&s, NULL);
  assert_int_equal(kd_tensor_refcount(self), 1);

  /* Another device than the call's. */
  kdk_structured_init(&s, "aten::add_.Tensor", KDK_STRUCTURED_INPLACE, 1, &self, meta);
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_INT64), KD_EINVAL,
                "aten::add_.Tensor: bad in-place call: input tensor device cpu and output tensor "
                "device meta should match");
  kdk_structured_release(&s, NULL);

  /* No tensor given. */
  kd_tensor *none = NULL;
  kdk_structured_init(&s, "aten::add_.Tensor", KDK_STRUCTURED_INPLACE, 1, &none, kd_device_cpu());
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_INT64), KD_EINVAL,
                "aten::add_.Tensor: output 0: no tensor was given for the in-place variant");
  kdk_structured_release(&s, NULL);
  kd_tensor_release(self);
}

static void test_inplace_proxy(void **state) {
  (void)state;
  /* self is [2, 3] transposed storage; meta asks for row-major strides. */
  kd_tensor *base, *self;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 2}, KD_INT32, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &self));
  kdk_structured s;
  kdk_structured_init(&s, "aten::cumsum_", KDK_STRUCTURED_INPLACE, 1, &self, kd_device_cpu());
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, (int64_t[]){3, 1}, KD_INT32));
  kd_tensor *p = kdk_structured_output(&s, 0);
  assert_true((s.proxies & (1u << 0)));
  assert_ptr_not_equal(p, self);
  assert_strides(p, 2, (int64_t[]){3, 1});
  for (int32_t i = 0; i < 6; i++) ((int32_t *)kd_tensor_data(p))[i] = i;
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kdk_structured_release(&s, NULL);
  for (int64_t r = 0; r < 2; r++)
    for (int64_t c = 0; c < 3; c++) {
      kd_scalar v;
      KD_ASSERT_OK(kd_tensor_get(self, (int64_t[]){r, c}, &v));
      assert_int_equal(v.v.i, r * 3 + c);
    }
  kd_tensor_release(self);
  kd_tensor_release(base);
}

static void test_out_checks(void **state) {
  (void)state;
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_INT64, kd_device_cpu(), &out));
  kdk_structured s;
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_FLOAT32), KD_ETYPE,
                "");
  assert_string_equal(kd_last_error(),
                      "aten::add.out: Expected out tensor to have dtype float32, but got int64 "
                      "instead");
  kdk_structured_release(&s, NULL);
  kd_tensor_release(out);

  /* A meta out for a cpu call. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, meta, &out));
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_FLOAT32), KD_EINVAL,
                "");
  assert_string_equal(kd_last_error(),
                      "aten::add.out: Expected out tensor to have device cpu, but got meta "
                      "instead");
  assert_sizes(out, 1, (int64_t[]){0}); /* untouched */
  kdk_structured_release(&s, NULL);
  /* ...and for a meta call it is fine (the Meta backend's out wrapper). */
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, meta);
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 2, (int64_t[]){3, 2}, NULL, KD_FLOAT32));
  assert_ptr_equal(kdk_structured_output(&s, 0), out);
  assert_sizes(out, 2, (int64_t[]){3, 2});
  kdk_structured_release(&s, NULL);
  kd_tensor_release(out);

  /* Invalid arguments. */
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, NULL, kd_device_cpu());
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_FLOAT32), KD_EINVAL,
                "aten::add.out: output 0: no tensor was given for the out variant");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, NULL, NULL, KD_FLOAT32), KD_EINVAL,
                "aten::add.out: output 0: bad shape (ndim 1, NULL sizes)");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, KD_MAX_DIMS + 1, (int64_t[KD_MAX_DIMS + 1]){0},
                                         NULL, KD_FLOAT32),
                KD_EINVAL, "bad shape (ndim 17)");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 0, NULL, NULL, (kd_dtype)99), KD_EINVAL,
                "aten::add.out: output 0: invalid dtype 99");
  KD_ASSERT_ERR(kdk_structured_set_output(&s, -1, 0, NULL, NULL, KD_FLOAT32), KD_EINVAL,
                "output index -1 out of range");
  kdk_structured_release(&s, NULL);
}

static void test_out_resize(void **state) {
  (void)state;
  warnings w = {0, ""};
  kd_set_warning_handler(on_warning, &w);

  /* An empty out grows silently. */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &out));
  kdk_structured s;
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, NULL, KD_FLOAT32));
  assert_ptr_equal(kdk_structured_output(&s, 0), out);
  assert_false((s.proxies & (1u << 0)));
  assert_sizes(out, 2, (int64_t[]){2, 3});
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(out)), 24);
  assert_int_equal(w.count, 0);
  kdk_structured_release(&s, NULL);

  /* The same sizes: nothing happens. */
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, NULL, KD_FLOAT32));
  assert_int_equal(w.count, 0);
  kdk_structured_release(&s, NULL);

  /* A non-empty out that must change shape: one warning. Asked-for strides
   * become out's; no proxy. */
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 0, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3}, KD_FLOAT32));
  assert_int_equal(w.count, 1);
  KD_ASSERT_STR_EQ(w.last,
                   "aten::add.out: an out tensor with elements was resized from shape [2, 3] to "
                   "the required output shape [3, 4]. Resizing an out tensor that has elements "
                   "is deprecated (PyTorch will stop doing it); to reuse an out tensor, resize "
                   "it to zero elements first (t.resize_(0))");
  assert_ptr_equal(kdk_structured_output(&s, 0), out);
  assert_false((s.proxies & (1u << 0)));
  assert_sizes(out, 2, (int64_t[]){3, 4});
  assert_strides(out, 2, (int64_t[]){1, 3});
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kdk_structured_release(&s, NULL);
  assert_int_equal(kd_tensor_refcount(out), 1);
  kd_tensor_release(out);

  /* A 0-dim out with one element counts as non-empty. */
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_FLOAT32, kd_device_cpu(), &out));
  kdk_structured_init(&s, "aten::sum.IntList_out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 1, (int64_t[]){2}, NULL, KD_FLOAT32));
  assert_int_equal(w.count, 2);
  assert_non_null(strstr(w.last, "from shape [] to the required output shape [2]"));
  kdk_structured_release(&s, NULL);
  kd_tensor_release(out);

  /* An out over foreign memory cannot grow: the error names the operator. */
  float mem[2];
  kd_storage *st;
  KD_ASSERT_OK(kd_storage_wrap(kd_device_cpu(), mem, sizeof mem, NULL, NULL, &st));
  KD_ASSERT_OK(kd_tensor_from_storage(st, 0, 1, (int64_t[]){0}, (int64_t[]){1}, KD_FLOAT32, &out));
  kd_storage_release(st);
  kdk_structured_init(&s, "aten::add.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_ERR(kdk_structured_set_output(&s, 0, 1, (int64_t[]){4}, NULL, KD_FLOAT32),
                KD_EUNSUPPORTED, "aten::add.out: resize_: the storage wraps memory");
  assert_null(kdk_structured_output(&s, 0));
  assert_sizes(out, 1, (int64_t[]){0});
  kdk_structured_release(&s, NULL);
  kd_tensor_release(out);

  kd_set_warning_handler(NULL, NULL);
}

static void test_out_proxy(void **state) {
  (void)state;
  /* out has the right sizes but is a transposed view: meta asks for
   * row-major strides, so impl writes a proxy that finish copies back. */
  kd_tensor *base, *out;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 2}, KD_FLOAT64, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &out));
  kdk_structured s;
  kdk_structured_init(&s, "aten::mm.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, (int64_t[]){3, 1}, KD_FLOAT64));
  kd_tensor *p = kdk_structured_output(&s, 0);
  assert_true((s.proxies & (1u << 0)));
  assert_ptr_not_equal(p, out);
  assert_false(kd_tensor_shares_storage(p, out));
  assert_sizes(p, 2, (int64_t[]){2, 3});
  assert_strides(p, 2, (int64_t[]){3, 1});
  assert_int_equal(kd_tensor_dtype(p), KD_FLOAT64);
  for (int i = 0; i < 6; i++) ((double *)kd_tensor_data(p))[i] = 0.5 * i;
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kdk_structured_release(&s, NULL);
  assert_null(kdk_structured_output(&s, 0));
  assert_int_equal(kd_tensor_refcount(out), 1);
  for (int64_t r = 0; r < 2; r++)
    for (int64_t c = 0; c < 3; c++) {
      kd_scalar v;
      KD_ASSERT_OK(kd_tensor_get(out, (int64_t[]){r, c}, &v));
      assert_true(v.v.d == 0.5 * (double)(r * 3 + c));
    }
  /* The same strides: no proxy. Without strides: no proxy either. */
  kdk_structured_init(&s, "aten::mm.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, KD_FLOAT64));
  assert_false((s.proxies & (1u << 0)));
  assert_ptr_equal(kdk_structured_output(&s, 0), out);
  kdk_structured_release(&s, NULL);
  kdk_structured_init(&s, "aten::mm.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, NULL, KD_FLOAT64));
  assert_false((s.proxies & (1u << 0)));
  kdk_structured_release(&s, NULL);

  /* A proxy dropped after an error (finish not called) is still freed. */
  kdk_structured_init(&s, "aten::mm.out", KDK_STRUCTURED_OUT, 1, &out, kd_device_cpu());
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 3}, (int64_t[]){3, 1}, KD_FLOAT64));
  assert_true((s.proxies & (1u << 0)));
  kdk_structured_release(&s, NULL);
  kd_tensor_release(out);
  kd_tensor_release(base);
}

static void test_two_outputs(void **state) {
  (void)state;
  /* max.dim_max style: values and indices, one proxied, one resized. */
  kd_tensor *values, *indices, *base;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 2}, KD_FLOAT32, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 0, &values));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_INT64, kd_device_cpu(), &indices));
  kd_tensor *given[2] = {values, indices};
  kdk_structured s;
  kdk_structured_init(&s, "aten::max.dim_max", KDK_STRUCTURED_OUT, 2, given, kd_device_cpu());
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 0, 2, (int64_t[]){2, 2}, (int64_t[]){2, 1}, KD_FLOAT32));
  KD_ASSERT_OK(
      kdk_structured_set_output(&s, 1, 2, (int64_t[]){2, 2}, (int64_t[]){2, 1}, KD_INT64));
  assert_true((s.proxies & (1u << 0)));
  assert_false((s.proxies & (1u << 1)));
  assert_ptr_equal(kdk_structured_output(&s, 1), indices);
  float *pv = kd_tensor_data(kdk_structured_output(&s, 0));
  for (int i = 0; i < 4; i++) pv[i] = (float)i;
  KD_ASSERT_OK(kdk_structured_finish(&s));
  kdk_structured_release(&s, NULL);
  const float *bv = kd_tensor_data(base);
  /* values[r][c] = r*2 + c lives at base[c*2 + r]. */
  assert_true(bv[0] == 0.0f && bv[1] == 2.0f && bv[2] == 1.0f && bv[3] == 3.0f);
  kd_tensor_release(values);
  kd_tensor_release(indices);
  kd_tensor_release(base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_functional),    cmocka_unit_test(test_meta),
      cmocka_unit_test(test_inplace),       cmocka_unit_test(test_inplace_proxy),
      cmocka_unit_test(test_out_checks),    cmocka_unit_test(test_out_resize),
      cmocka_unit_test(test_out_proxy),     cmocka_unit_test(test_two_outputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
