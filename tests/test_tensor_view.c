/* kd_tensor_get_view (kdk/view.h): every field of version 1 agrees with the
 * public accessors, for a contiguous tensor, a strided view with an offset,
 * a 0-dim wrapped number and a meta tensor; bad arguments and versions. */
#include <string.h>

#include "kd_test.h"
#include "kdk/view.h"

static void check_view(const kd_tensor *t) {
  kd_tensor_view v;
  memset(&v, 0xA5, sizeof v);
  v.api_version = KD_TENSOR_VIEW_API_VERSION;
  KD_ASSERT_OK(kd_tensor_get_view(t, &v));
  assert_int_equal(v.api_version, KD_TENSOR_VIEW_API_VERSION);
  assert_int_equal(v.dtype, kd_tensor_dtype(t));
  assert_int_equal(v.ndim, kd_tensor_ndim(t));
  for (int d = 0; d < v.ndim; d++) {
    assert_int_equal(v.sizes[d], kd_tensor_sizes(t)[d]);
    assert_int_equal(v.strides[d], kd_tensor_strides(t)[d]);
  }
  assert_ptr_equal(v.data, kd_tensor_data(t));
  assert_int_equal(v.numel, kd_tensor_numel(t));
  assert_int_equal(v.storage_offset, kd_tensor_storage_offset(t));
  assert_int_equal(v.itemsize, kd_dtype_size(kd_tensor_dtype(t)));
  assert_true(kd_device_equal(v.device, kd_tensor_device(t)));
  assert_int_equal(v.is_contiguous, kd_tensor_is_contiguous(t));
  assert_int_equal(v.is_wrapped_number, kd_tensor_is_wrapped_number(t));
}

static void test_fields(void **state) {
  (void)state;
  kd_tensor *a, *s, *w, *m;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 4}, KD_FLOAT32, kd_device_cpu(), &a));
  check_view(a);
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){2, 2}, (int64_t[]){1, 4}, 5, &s));
  check_view(s);
  kd_tensor_view va = {.api_version = 1}, vs = {.api_version = 1};
  KD_ASSERT_OK(kd_tensor_get_view(a, &va));
  KD_ASSERT_OK(kd_tensor_get_view(s, &vs));
  assert_ptr_equal(va.storage, vs.storage); /* one storage */
  assert_ptr_equal((char *)vs.data, (char *)va.data + 5 * 4);
  assert_false(vs.is_contiguous);
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT64, kd_device_cpu(), &w));
  kd_tensor_set_wrapped_number(w, true);
  check_view(w);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){5}, KD_INT8, (kd_device){KD_DEVICE_META, 0}, &m));
  check_view(m);
  kd_tensor_view vm = {.api_version = 1};
  KD_ASSERT_OK(kd_tensor_get_view(m, &vm));
  assert_null(vm.data);
  assert_ptr_not_equal(vm.storage, va.storage);
  kd_tensor_release(a);
  kd_tensor_release(s);
  kd_tensor_release(w);
  kd_tensor_release(m);
}

static void test_errors(void **state) {
  (void)state;
  kd_tensor *a;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, kd_device_cpu(), &a));
  kd_tensor_view v = {.api_version = KD_TENSOR_VIEW_API_VERSION + 6};
  assert_int_equal(kd_tensor_get_view(a, &v), KD_EUNSUPPORTED);
  KD_ASSERT_STR_EQ(kd_last_error(), "kd_tensor_get_view: api_version 7, this library fills 1");
  v.api_version = 0;
  assert_int_equal(kd_tensor_get_view(a, &v), KD_EUNSUPPORTED);
  KD_ASSERT_STR_EQ(kd_last_error(), "kd_tensor_get_view: api_version 0, this library fills 1");
  v.api_version = 1;
  assert_int_equal(kd_tensor_get_view(NULL, &v), KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(), "kd_tensor_get_view: tensor is NULL");
  assert_int_equal(kd_tensor_get_view(a, NULL), KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(), "kd_tensor_get_view: out is NULL");
  kd_tensor_release(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fields), cmocka_unit_test(test_errors)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
