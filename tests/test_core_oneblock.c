/* One-block tensors (kd__tensor_new): the tensor, its storage and small
 * bytes in one allocation; views keeping it alive, resize_ moving the bytes
 * out, installed allocators, reference counts. */
#include <pthread.h>

#include "core/tensor_impl.h"
#include "kd_test.h"

static kd_tensor *from_floats(int ndim, const int64_t *sizes, const float *data) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, KD_FLOAT32, data, &t));
  return t;
}

static void test_layout(void **state) {
  (void)state;
  kd_tensor *t = from_floats(1, (int64_t[]){3}, (float[]){1, 2, 3});
  kd_storage *s = kd_tensor_storage(t);
  assert_true(t->embedded);
  assert_ptr_equal(s->block, t);
  assert_true(s->data_inline);
  assert_true(s->owns_via_allocator);
  assert_int_equal((uintptr_t)kd_tensor_data(t) % 16, 0);
  assert_int_equal(kd_storage_nbytes(s), 12);
  assert_int_equal(kd_storage_refcount(s), 1);
  assert_int_equal(kd_tensor_refcount(t), 1);
  assert_true(kd_tensor_is_contiguous(t));
  kd_tensor_release(t);
  /* 64 bytes and more: the allocator's (64-byte aligned) bytes */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){16}, KD_FLOAT32, kd_device_cpu(), &t));
  s = kd_tensor_storage(t);
  assert_true(t->embedded);
  assert_false(s->data_inline);
  assert_int_equal((uintptr_t)kd_tensor_data(t) % 64, 0);
  kd_tensor_release(t);
  /* no bytes: meta, zero elements */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &t));
  assert_null(kd_tensor_data(t));
  assert_false(kd_tensor_storage(t)->data_inline);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &t));
  assert_null(kd_tensor_data(t));
  kd_tensor_release(t);
  /* 0-dim, every dtype */
  for (int dt = 0; dt < KD_DTYPE_COUNT; dt++) {
    if (!kd_dtype_valid((kd_dtype)dt)) continue;
    KD_ASSERT_OK(kd_tensor_empty(0, NULL, (kd_dtype)dt, kd_device_cpu(), &t));
    assert_int_equal(kd_tensor_itemsize(t), kd_dtype_size((kd_dtype)dt));
    assert_int_equal((uintptr_t)kd_tensor_data(t) % 16, 0);
    kd_tensor_release(t);
  }
  /* small storage on its own: bytes inline too */
  KD_ASSERT_OK(kd_storage_new(kd_device_cpu(), 8, &s));
  assert_true(s->data_inline);
  assert_null(s->block);
  memset(kd_storage_data(s), 0xab, 8);
  kd_storage_release(s);
}

static void test_views_keep_block(void **state) {
  (void)state;
  kd_tensor *t = from_floats(1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
  kd_tensor *v = NULL, *v2 = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){2}, (int64_t[]){2}, 1, &v));
  assert_int_equal(kd_storage_refcount(kd_tensor_storage(t)), 2);
  kd_tensor_release(t); /* the block stays: the view holds the storage */
  assert_int_equal(kd_storage_refcount(kd_tensor_storage(v)), 1);
  assert_true(((float *)kd_tensor_data(v))[0] == 2.0f);
  assert_true(((float *)kd_tensor_data(v))[2] == 4.0f);
  KD_ASSERT_OK(kd_tensor_as_strided(v, 1, (int64_t[]){1}, (int64_t[]){1}, 0, &v2));
  kd_tensor_release(v);
  assert_true(((float *)kd_tensor_data(v2))[0] == 1.0f);
  kd_tensor_release(v2); /* frees the block */
  /* a storage retained on its own outlives its tensor too */
  t = from_floats(1, (int64_t[]){2}, (float[]){5, 6});
  kd_storage *s = kd_tensor_storage(t);
  kd_storage_retain(s);
  kd_tensor_release(t);
  assert_true(((float *)kd_storage_data(s))[1] == 6.0f);
  kd_tensor *t2 = NULL;
  KD_ASSERT_OK(kd_tensor_from_storage(s, 0, 1, (int64_t[]){2}, (int64_t[]){1}, KD_FLOAT32, &t2));
  kd_storage_release(s);
  assert_true(((float *)kd_tensor_data(t2))[0] == 5.0f);
  kd_tensor_release(t2);
  /* retained tensor: the last release frees */
  t = from_floats(0, NULL, (float[]){7});
  kd_tensor_retain(t);
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_tensor_release(t);
  assert_true(*(float *)kd_tensor_data(t) == 7.0f);
  kd_tensor_release(t);
}

static void test_resize_moves_bytes_out(void **state) {
  (void)state;
  kd_tensor *t = from_floats(1, (int64_t[]){3}, (float[]){1, 2, 3});
  kd_tensor *v = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){3}, (int64_t[]){1}, 0, &v));
  void *before = kd_tensor_data(t);
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){100}, NULL));
  kd_storage *s = kd_tensor_storage(t);
  assert_false(s->data_inline);
  assert_ptr_not_equal(kd_tensor_data(t), before);
  assert_int_equal((uintptr_t)kd_tensor_data(t) % 64, 0);
  assert_int_equal(kd_storage_nbytes(s), 400);
  const float *p = kd_tensor_data(t);
  assert_true(p[0] == 1.0f && p[1] == 2.0f && p[2] == 3.0f);
  /* the view shares the grown storage */
  assert_ptr_equal(kd_tensor_data(v), kd_tensor_data(t));
  ((float *)kd_tensor_data(t))[99] = 9.0f;
  /* shrinking keeps the storage; growing again moves again */
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){2}, NULL));
  KD_ASSERT_OK(kd_tensor_resize_(t, 2, (int64_t[]){30, 30}, NULL));
  assert_true(((float *)kd_tensor_data(t))[99] == 9.0f);
  kd_tensor_release(t);
  assert_true(((float *)kd_tensor_data(v))[2] == 3.0f);
  kd_tensor_release(v);
  /* a storage alone */
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT8, kd_device_cpu(), &t));
  *(int8_t *)kd_tensor_data(t) = 42;
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){1000}, NULL));
  assert_int_equal(*(int8_t *)kd_tensor_data(t), 42);
  kd_tensor_release(t);
}

static int allocs, frees;
static void *count_alloc(void *ctx, kd_device d, size_t n) {
  (void)ctx, (void)d;
  allocs++;
  return malloc(n);
}
static void count_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)ctx, (void)d, (void)n;
  frees++;
  free(p);
}

static void test_installed_allocator(void **state) {
  (void)state;
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, count_alloc, count_free, NULL, NULL, NULL};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_CPU, &a));
  allocs = frees = 0;
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &t));
  assert_int_equal(allocs, 1); /* small bytes from the installed allocator, not inline */
  assert_false(kd_tensor_storage(t)->data_inline);
  kd_storage *s = NULL;
  KD_ASSERT_OK(kd_storage_new(kd_device_cpu(), 4, &s));
  assert_int_equal(allocs, 2);
  kd_storage_release(s);
  kd_tensor_release(t);
  assert_int_equal(frees, 2);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_CPU, NULL));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &t));
  assert_int_equal(allocs, 2);
  assert_true(kd_tensor_storage(t)->data_inline);
  kd_tensor_release(t);
  assert_int_equal(frees, 2);
}

static void test_errors(void **state) {
  (void)state;
  kd_tensor *t = (kd_tensor *)(uintptr_t)1;
  KD_ASSERT_ERR(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, (kd_device){KD_DEVICE_CPU, -1}, &t),
                KD_EINVAL, "invalid device");
  assert_null(t);
  KD_ASSERT_ERR(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, (kd_device){KD_DEVICE_CUDA, 0}, &t),
                KD_EUNSUPPORTED, "no allocator is registered");
  assert_null(t);
  KD_ASSERT_ERR(kd_tensor_empty(2, (int64_t[]){INT64_MAX / 2, 4}, KD_FLOAT32, kd_device_cpu(), &t),
                KD_EOVERFLOW, "");
  assert_null(t);
}

/* Threads retaining and releasing one tensor and its storage: the count-1
 * shortcut of release must leave the last release to free the block once. */
static void *churn(void *p) {
  kd_tensor *t = p;
  for (int i = 0; i < 2000; i++) {
    kd_tensor_retain(t);
    kd_tensor *v = NULL;
    if (kd_tensor_as_strided(t, 0, NULL, NULL, 1, &v) == KD_OK) kd_tensor_release(v);
    kd_tensor_release(t);
  }
  kd_tensor_release(t); /* the reference the main thread gave */
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  kd_tensor *t = from_floats(1, (int64_t[]){2}, (float[]){1, 2});
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    kd_tensor_retain(t);
    assert_int_equal(pthread_create(&th[i], NULL, churn, t), 0);
  }
  kd_tensor_release(t);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_views_keep_block),
      cmocka_unit_test(test_resize_moves_bytes_out),
      cmocka_unit_test(test_installed_allocator),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
