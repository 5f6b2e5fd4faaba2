/* kd_tensor_get_view (kdk/view.h): every field of version 1 agrees with the
 * public accessors, for a contiguous tensor, a strided view with an offset,
 * a 0-dim wrapped number and a meta tensor; bad arguments and versions.
 * The inline head (kd/tensor_head.h, the tensor's first bytes) agrees with
 * the accessors for contiguous, strided, offset, resized, 0-dim,
 * wrapped-number and meta tensors, and follows changes to the tensor. */
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

/* Every field of t's head (and its storage's head) against the public
 * accessors, which read the private struct. */
static void check_head(const kd_tensor *t) {
  const kd_tensor_head *h = kd_tensor_head_of(t);
  assert_ptr_equal(h, (const void *)t);
  assert_int_equal(h->dtype, kd_tensor_dtype(t));
  assert_int_equal(h->ndim, kd_tensor_ndim(t));
  for (int d = 0; d < h->ndim; d++) {
    assert_int_equal(h->sizes[d], kd_tensor_sizes(t)[d]);
    assert_int_equal(h->strides[d], kd_tensor_strides(t)[d]);
  }
  assert_int_equal(h->numel, kd_tensor_numel(t));
  assert_int_equal(h->offset, kd_tensor_storage_offset(t));
  assert_int_equal(h->itemsize, kd_dtype_size(kd_tensor_dtype(t)));
  assert_int_equal(h->contiguous, kd_tensor_is_contiguous(t));
  assert_int_equal(h->wrapped_number, kd_tensor_is_wrapped_number(t));
  assert_ptr_equal(kd_tensor_head_data(h), kd_tensor_data(t));
  const kd_storage *s = kd_tensor_storage(t);
  assert_ptr_equal(h->storage, kd_storage_head_of(s));
  assert_ptr_equal(h->storage->data, kd_storage_data(s));
  assert_int_equal(h->storage->nbytes, kd_storage_nbytes(s));
  assert_true(kd_device_equal(h->storage->device, kd_storage_device(s)));
  assert_true(kd_device_equal(h->storage->device, kd_tensor_device(t)));
  /* the versioned snapshot says the same */
  kd_tensor_view v = {.api_version = KD_TENSOR_VIEW_API_VERSION};
  KD_ASSERT_OK(kd_tensor_get_view(t, &v));
  assert_ptr_equal(v.sizes, h->sizes);
  assert_ptr_equal(v.strides, h->strides);
  assert_ptr_equal(v.storage, h->storage);
  assert_ptr_equal(v.data, kd_tensor_head_data(h));
}

static void test_head(void **state) {
  (void)state;
  kd_tensor *a, *s, *t, *z, *w, *m;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 4}, KD_FLOAT32, kd_device_cpu(), &a));
  check_head(a);
  assert_true(kd_tensor_head_of(a)->contiguous);
  assert_int_equal(kd_tensor_head_of(a)->numel, 12);
  /* strided, with an offset */
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){2, 2}, (int64_t[]){1, 4}, 5, &s));
  check_head(s);
  assert_int_equal(kd_tensor_head_of(s)->offset, 5);
  assert_false(kd_tensor_head_of(s)->contiguous);
  assert_ptr_equal(kd_tensor_head_of(s)->storage, kd_tensor_head_of(a)->storage);
  assert_ptr_equal(kd_tensor_head_data(kd_tensor_head_of(s)),
                   (char *)kd_tensor_head_data(kd_tensor_head_of(a)) + 5 * 4);
  /* resized: the head follows (a grown storage moves its bytes) */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT64, kd_device_cpu(), &t));
  check_head(t);
  KD_ASSERT_OK(kd_tensor_resize_(t, 3, (int64_t[]){5, 6, 7}, NULL));
  check_head(t);
  assert_int_equal(kd_tensor_head_of(t)->ndim, 3);
  assert_int_equal(kd_tensor_head_of(t)->numel, 210);
  assert_int_equal(kd_tensor_head_of(t)->strides[0], 42);
  assert_true(kd_tensor_head_of(t)->storage->nbytes >= 210 * 8);
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){0}, NULL));
  check_head(t);
  assert_int_equal(kd_tensor_head_of(t)->numel, 0);
  /* 0-dim, then a wrapped number */
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT32, kd_device_cpu(), &z));
  check_head(z);
  assert_int_equal(kd_tensor_head_of(z)->numel, 1);
  assert_false(kd_tensor_head_of(z)->wrapped_number);
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT64, kd_device_cpu(), &w));
  kd_tensor_set_wrapped_number(w, true);
  check_head(w);
  assert_true(kd_tensor_head_of(w)->wrapped_number);
  /* meta: no bytes */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){5}, KD_INT8, (kd_device){KD_DEVICE_META, 0}, &m));
  check_head(m);
  assert_null(kd_tensor_head_of(m)->storage->data);
  assert_null(kd_tensor_head_data(kd_tensor_head_of(m)));
  assert_int_equal(kd_tensor_head_of(m)->storage->device.type, KD_DEVICE_META);
  assert_null(kd_tensor_head_of(NULL));
  kd_tensor_release(a);
  kd_tensor_release(s);
  kd_tensor_release(t);
  kd_tensor_release(z);
  kd_tensor_release(w);
  kd_tensor_release(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fields), cmocka_unit_test(test_errors),
                                     cmocka_unit_test(test_head)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
