/* Devices, allocators, storage and tensors. */
#include "kd_test.h"

static void test_device_names(void **state) {
  (void)state;
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_CPU), "cpu");
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_META), "meta");
  KD_ASSERT_STR_EQ(kd_device_type_name((kd_device_type)77), "invalid");
  kd_device d;
  KD_ASSERT_OK(kd_device_parse("cuda:3", &d));
  assert_int_equal(d.type, KD_DEVICE_CUDA);
  assert_int_equal(d.index, 3);
  KD_ASSERT_OK(kd_device_parse("cpu", &d));
  assert_true(kd_device_equal(d, kd_device_cpu()));
  KD_ASSERT_ERR(kd_device_parse("gpu:0", &d), KD_ENOTFOUND, "unknown device type 'gpu'");
  KD_ASSERT_ERR(kd_device_parse("cuda:", &d), KD_EINVAL, "column 6: expected a device index");
  KD_ASSERT_ERR(kd_device_parse("cuda:1x", &d), KD_EINVAL, "column 7: unexpected 'x'");
  KD_ASSERT_ERR(kd_device_parse("cpu:1", &d), KD_EINVAL, "only device index 0");
  KD_ASSERT_ERR(kd_device_parse("", &d), KD_EINVAL, "expected a device type");
  KD_ASSERT_ERR(kd_device_parse("cuda:99999999999", &d), KD_EINVAL, "too large");
  char buf[32];
  assert_int_equal(kd_device_format((kd_device){KD_DEVICE_CUDA, 1}, buf, sizeof buf), 6);
  KD_ASSERT_STR_EQ(buf, "cuda:1");
  kd_device_format(kd_device_cpu(), buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "cpu");
}

static void test_device_register(void **state) {
  (void)state;
  KD_ASSERT_ERR(kd_device_type_register(KD_DEVICE_CUDA, "gpu", 0), KD_EINVAL,
                "not a private device type");
  KD_ASSERT_ERR(kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "OpenCL", 4), KD_EINVAL,
                "bad device name 'OpenCL'");
  KD_ASSERT_ERR(kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "cpu", 4), KD_EEXIST,
                "the name 'cpu' is taken");
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "opencl", 4));
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "opencl", 4)); /* same again */
  KD_ASSERT_ERR(kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "vulkan", 7), KD_EEXIST,
                "already registered as 'opencl'");
  KD_ASSERT_ERR(kd_device_type_register(KD_DEVICE_PRIVATEUSE2, "opencl", 4), KD_EEXIST,
                "taken");
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "opencl");
  assert_int_equal(kd_device_type_dlpack(KD_DEVICE_PRIVATEUSE1), 4);
  kd_device d;
  KD_ASSERT_OK(kd_device_parse("opencl:1", &d));
  assert_int_equal(d.type, KD_DEVICE_PRIVATEUSE1);
  assert_int_equal(d.index, 1);
}

typedef struct counting {
  int allocs, frees;
  size_t bytes;
} counting;

static void *count_alloc(void *ctx, kd_device dev, size_t n) {
  (void)dev;
  counting *c = ctx;
  c->allocs++;
  c->bytes += n;
  return malloc(n);
}
static void count_free(void *ctx, kd_device dev, void *p, size_t n) {
  (void)dev;
  (void)n;
  counting *c = ctx;
  c->frees++;
  free(p);
}

static void test_allocators(void **state) {
  (void)state;
  counting c = {0, 0, 0};
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, count_alloc, count_free, &c, NULL, NULL}, got;
  /* No allocator for a private type yet. */
  kd_storage *s;
  KD_ASSERT_ERR(kd_storage_new((kd_device){KD_DEVICE_PRIVATEUSE2, 0}, 16, &s), KD_EUNSUPPORTED,
                "no allocator is registered");
  KD_ASSERT_ERR(kd_allocator_get(KD_DEVICE_PRIVATEUSE2, &got), KD_ENOTFOUND, "no allocator");
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a));
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_PRIVATEUSE2, &got));
  assert_ptr_equal(got.ctx, &c);
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 3}, KD_FLOAT32,
                               (kd_device){KD_DEVICE_PRIVATEUSE2, 1}, &t));
  assert_int_equal(c.allocs, 1);
  assert_int_equal(c.bytes, 24);
  /* Reading an element of a device tensor needs the allocator's copy
   * functions (this version-1 allocator has none); writing needs cpu bytes. */
  kd_scalar v;
  KD_ASSERT_ERR(kd_tensor_get(t, (int64_t[]){0, 0}, &v), KD_EUNSUPPORTED,
                "kd_tensor_get: cannot read an element of a float32 tensor on 'privateusetwo:1': "
                "the device's allocator has no copy_to_host");
  v = kd_scalar_double(0.0);
  KD_ASSERT_ERR(kd_tensor_set(t, (int64_t[]){0, 0}, &v), KD_EUNSUPPORTED,
                "element access needs a cpu tensor, but the tensor is on 'privateusetwo:1'");
  /* Replacing the allocator keeps the old one for existing storage. */
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, NULL));
  kd_tensor_release(t);
  assert_int_equal(c.frees, 1);
  a.api_version = 99;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_CPU, &a), KD_EINVAL,
                "kd_allocator_set(cpu): kd_allocator api_version 99 is not supported: this "
                "library accepts 1 to 2 (KD_ALLOCATOR_API_VERSION)");
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_META, NULL), KD_EINVAL, "meta");
  KD_ASSERT_ERR(kd_allocator_set((kd_device_type)-1, NULL), KD_EINVAL, "invalid device type");
}

static void test_empty_and_views(void **state) {
  (void)state;
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){2, 3, 4}, KD_INT32, kd_device_cpu(), &t));
  assert_int_equal(kd_tensor_ndim(t), 3);
  assert_int_equal(kd_tensor_numel(t), 24);
  assert_int_equal(kd_tensor_stride(t, 0), 12);
  assert_int_equal(kd_tensor_stride(t, -1), 1);
  assert_int_equal(kd_tensor_size(t, -2), 3);
  assert_int_equal(kd_tensor_size(t, 3), -1);
  assert_true(kd_tensor_is_contiguous(t));
  assert_int_equal(kd_tensor_itemsize(t), 4);
  assert_int_equal(kd_tensor_layout(t), KD_LAYOUT_STRIDED);
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 96);
  assert_true(((uintptr_t)kd_tensor_data(t) & 63) == 0);
  for (int64_t i = 0; i < 24; i++)
    ((int32_t *)kd_tensor_data(t))[i] = (int32_t)i;

  /* Transposed view of dims 1 and 2: shares storage, not contiguous. */
  kd_tensor *v;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 3, (int64_t[]){2, 4, 3}, (int64_t[]){12, 1, 4}, 0, &v));
  assert_true(kd_tensor_shares_storage(t, v));
  assert_false(kd_tensor_is_contiguous(v));
  assert_int_equal(kd_storage_refcount(kd_tensor_storage(t)), 2);
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(v, (int64_t[]){1, 3, 2}, &x)); /* t[1][2][3] = 12 + 8 + 3 */
  assert_int_equal(x.kind, KD_SCALAR_INT);
  assert_int_equal(x.v.i, 23);
  KD_ASSERT_OK(kd_tensor_get(v, (int64_t[]){-1, -1, -1}, &x));
  assert_int_equal(x.v.i, 23);
  kd_scalar nine = kd_scalar_int(-9);
  KD_ASSERT_OK(kd_tensor_set(v, (int64_t[]){0, 1, 0}, &nine));
  assert_int_equal(((int32_t *)kd_tensor_data(t))[1], -9); /* written through the view */
  char desc[96];
  kd_tensor_describe(v, desc, sizeof desc);
  KD_ASSERT_STR_EQ(desc, "tensor(int32[2, 4, 3], cpu, strides=[12, 1, 4])");
  kd_tensor_describe(t, desc, sizeof desc);
  KD_ASSERT_STR_EQ(desc, "tensor(int32[2, 3, 4], cpu)");

  /* Errors. */
  KD_ASSERT_ERR(kd_tensor_get(v, (int64_t[]){2, 0, 0}, &x), KD_ERANGE,
                "index 2 is out of bounds for dimension 0 with size 2");
  KD_ASSERT_ERR(kd_tensor_get(v, (int64_t[]){0, -5, 0}, &x), KD_ERANGE, "dimension 1 with size 4");
  kd_scalar big = kd_scalar_int(1LL << 40);
  KD_ASSERT_ERR(kd_tensor_set(v, (int64_t[]){0, 0, 0}, &big), KD_EOVERFLOW, "int32");
  kd_tensor *bad = (kd_tensor *)0x1;
  KD_ASSERT_ERR(kd_tensor_as_strided(t, 1, (int64_t[]){25}, (int64_t[]){1}, 0, &bad), KD_ERANGE,
                "needs 100 bytes of storage (offset 0, int32), but the storage has 96 bytes");
  assert_null(bad);
  KD_ASSERT_ERR(kd_tensor_as_strided(t, 1, (int64_t[]){2}, (int64_t[]){-1}, 1, &bad), KD_EINVAL,
                "stride -1 of dimension 0 is negative");
  KD_ASSERT_ERR(kd_tensor_as_strided(t, 1, (int64_t[]){2}, (int64_t[]){1}, -1, &bad), KD_EINVAL,
                "offset -1 is negative");
  /* A view past the end is fine when it has no elements. */
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, 1000, &bad));
  assert_int_equal(kd_tensor_numel(bad), 0);
  kd_tensor_release(bad);
  KD_ASSERT_ERR(kd_tensor_item(t, &x), KD_EINVAL, "a tensor with 24 elements");

  /* Offset views. */
  kd_tensor *row;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){4}, (int64_t[]){1}, 20, &row));
  assert_int_equal(kd_tensor_storage_offset(row), 20);
  assert_int_equal(*(int32_t *)kd_tensor_data(row), 20);
  kd_tensor_release(row);

  kd_tensor_release(v);
  assert_int_equal(kd_storage_refcount(kd_tensor_storage(t)), 1);
  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_tensor_retain(t);
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_tensor_release(t);
  kd_tensor_release(t);
  kd_tensor_release(NULL);
}

static void test_create_errors(void **state) {
  (void)state;
  kd_tensor *t = NULL;
  KD_ASSERT_ERR(kd_tensor_empty(17, (int64_t[17]){0}, KD_FLOAT32, kd_device_cpu(), &t),
                KD_EINVAL, "ndim 17 out of range: expected 0..16");
  KD_ASSERT_ERR(kd_tensor_empty(2, (int64_t[]){2, -1}, KD_FLOAT32, kd_device_cpu(), &t),
                KD_EINVAL, "size -1 of dimension 1 is negative");
  KD_ASSERT_ERR(kd_tensor_empty(1, (int64_t[]){2}, (kd_dtype)12, kd_device_cpu(), &t),
                KD_EINVAL, "invalid dtype 12");
  KD_ASSERT_ERR(kd_tensor_empty(3, (int64_t[]){1LL << 31, 1LL << 31, 1LL << 31}, KD_FLOAT32,
                                kd_device_cpu(), &t),
                KD_EOVERFLOW, "too many elements");
  /* Regression: strides overflowed (UB) before the element count was checked,
   * and can overflow even with zero elements. */
  KD_ASSERT_ERR(kd_tensor_empty(3, (int64_t[]){0, 1LL << 40, 1LL << 40}, KD_FLOAT32,
                                kd_device_cpu(), &t),
                KD_EOVERFLOW,
                "kd_tensor_empty: the row-major strides of sizes [0, 1099511627776, "
                "1099511627776] overflow int64");
  KD_ASSERT_ERR(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){(kd_device_type)9, 0},
                                &t),
                KD_EINVAL, "invalid device");
  KD_ASSERT_ERR(kd_tensor_from_data(1, (int64_t[]){2}, KD_FLOAT32, NULL, &t), KD_EINVAL,
                "NULL data for 2 elements");
  assert_null(t);
  kd_scalar s = kd_scalar_double(1e300);
  KD_ASSERT_ERR(kd_tensor_from_scalar(&s, KD_FLOAT32, &t), KD_EOVERFLOW, "float32");
}

static void test_data_scalar_meta(void **state) {
  (void)state;
  double data[] = {1, 2, 3, 4, 5, 6};
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){3, 2}, KD_FLOAT64, data, &t));
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){2, 1}, &x));
  assert_true(x.kind == KD_SCALAR_DOUBLE && x.v.d == 6);
  kd_tensor_release(t);

  kd_scalar c = kd_scalar_complex(1, -1);
  KD_ASSERT_OK(kd_tensor_from_scalar(&c, KD_COMPLEX64, &t));
  assert_int_equal(kd_tensor_ndim(t), 0);
  assert_int_equal(kd_tensor_numel(t), 1);
  KD_ASSERT_OK(kd_tensor_item(t, &x));
  assert_true(x.kind == KD_SCALAR_COMPLEX && x.v.c.re == 1 && x.v.c.im == -1);
  kd_tensor_release(t);

  /* Every dtype stores and loads through element access. */
  for (int dt = 0; dt < KD_DTYPE_COUNT; dt++) {
    kd_tensor *e;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, (kd_dtype)dt, kd_device_cpu(), &e));
    kd_scalar one = kd_scalar_int(1);
    KD_ASSERT_OK(kd_tensor_set(e, (int64_t[]){2}, &one));
    KD_ASSERT_OK(kd_tensor_get(e, (int64_t[]){2}, &x));
    assert_true(kd_scalar_to_double(&x) == 1.0);
    kd_tensor_release(e);
  }

  /* Meta tensors have shapes but no bytes. */
  kd_tensor *m;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){1000, 1000}, KD_FLOAT32,
                               (kd_device){KD_DEVICE_META, 0}, &m));
  assert_null(kd_tensor_data(m));
  assert_int_equal(kd_tensor_numel(m), 1000000);
  KD_ASSERT_ERR(kd_tensor_get(m, (int64_t[]){0, 0}, &x), KD_EUNSUPPORTED, "'meta'");
  kd_tensor_release(m);

  /* Strided empty: storage sized to the last element. */
  KD_ASSERT_OK(kd_tensor_empty_strided(2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, KD_INT16,
                                       kd_device_cpu(), &t));
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 12);
  assert_false(kd_tensor_is_contiguous(t));
  kd_tensor_release(t);
  /* Size-1 dimensions may have any stride and still be contiguous. */
  KD_ASSERT_OK(kd_tensor_empty_strided(2, (int64_t[]){1, 3}, (int64_t[]){99, 1}, KD_INT16,
                                       kd_device_cpu(), &t));
  assert_true(kd_tensor_is_contiguous(t));
  kd_tensor_release(t);
}

static int wrapped_freed;
static void wrapped_deleter(void *ctx) {
  wrapped_freed++;
  free(ctx);
}

static void test_storage_wrap(void **state) {
  (void)state;
  float *mem = malloc(4 * sizeof(float));
  kd_storage *s;
  KD_ASSERT_ERR(kd_storage_wrap(kd_device_cpu(), NULL, 16, NULL, NULL, &s), KD_EINVAL, "NULL data");
  KD_ASSERT_OK(kd_storage_wrap(kd_device_cpu(), mem, 16, wrapped_deleter, mem, &s));
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_storage(s, 1, 1, (int64_t[]){3}, (int64_t[]){1}, KD_FLOAT32, &t));
  kd_tensor *bad;
  KD_ASSERT_ERR(kd_tensor_from_storage(s, 2, 1, (int64_t[]){3}, (int64_t[]){1}, KD_FLOAT32, &bad),
                KD_ERANGE, "storage has 16 bytes");
  assert_null(bad);
  kd_storage_release(s); /* the tensor still holds it */
  assert_int_equal(wrapped_freed, 0);
  assert_ptr_equal(kd_tensor_data(t), mem + 1);
  kd_tensor_release(t);
  assert_int_equal(wrapped_freed, 1);
}

/* ---- kd_tensor_resize_ and wrapped numbers ---------------------------------------- */

static void assert_geometry(const kd_tensor *t, int ndim, const int64_t *sizes,
                            const int64_t *strides) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    assert_int_equal(kd_tensor_size(t, d), sizes[d]);
    assert_int_equal(kd_tensor_stride(t, d), strides[d]);
    numel *= sizes[d];
  }
  assert_int_equal(kd_tensor_numel(t), numel);
}

static void test_resize(void **state) {
  (void)state;
  /* A counting cpu allocator: growing allocates once and frees the old bytes. */
  counting c = {0, 0, 0};
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, count_alloc, count_free, &c, NULL, NULL};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_CPU, &a));
  kd_tensor *t, *view;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 3}, KD_INT32, kd_device_cpu(), &t));
  for (int32_t i = 0; i < 6; i++) ((int32_t *)kd_tensor_data(t))[i] = i;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){3}, (int64_t[]){2}, 1, &view));
  assert_int_equal(c.allocs, 1);

  /* Grow: the old bytes stay at the start; every view sees the new storage. */
  KD_ASSERT_OK(kd_tensor_resize_(t, 2, (int64_t[]){4, 3}, NULL));
  assert_geometry(t, 2, (int64_t[]){4, 3}, (int64_t[]){3, 1});
  assert_true(kd_tensor_is_contiguous(t));
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 48);
  assert_int_equal(c.allocs, 2);
  assert_int_equal(c.frees, 1);
  for (int32_t i = 0; i < 6; i++) assert_int_equal(((int32_t *)kd_tensor_data(t))[i], i);
  assert_true(kd_tensor_shares_storage(t, view));
  assert_ptr_equal(kd_tensor_data(view), (int32_t *)kd_tensor_data(t) + 1);
  ((int32_t *)kd_tensor_data(t))[11] = 11;
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(view, (int64_t[]){2}, &x)); /* element 5 */
  assert_int_equal(x.v.i, 5);

  /* Shrink: the storage keeps its bytes and size. */
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){2}, NULL));
  assert_geometry(t, 1, (int64_t[]){2}, (int64_t[]){1});
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 48);
  assert_int_equal(c.allocs, 2);
  assert_int_equal(((int32_t *)kd_tensor_data(t))[1], 1);

  /* Strides given: [2, 3] column-major fits in the 12 elements. */
  KD_ASSERT_OK(kd_tensor_resize_(t, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}));
  assert_geometry(t, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2});
  assert_false(kd_tensor_is_contiguous(t));
  assert_int_equal(c.allocs, 2);
  /* ... and strides that need more room grow it. */
  KD_ASSERT_OK(kd_tensor_resize_(t, 2, (int64_t[]){2, 3}, (int64_t[]){1, 10}));
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 88); /* (1 + 1 + 20) * 4 */
  kd_tensor_release(t);
  kd_tensor_release(view);
  assert_int_equal(c.frees, c.allocs);

  /* The storage offset stays and counts: a view at element 4 of 6. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){6}, KD_INT64, kd_device_cpu(), &t));
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){2}, (int64_t[]){1}, 4, &view));
  KD_ASSERT_OK(kd_tensor_resize_(view, 1, (int64_t[]){3}, NULL));
  assert_int_equal(kd_tensor_storage_offset(view), 4);
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 56);
  /* 0-dim and no elements. */
  KD_ASSERT_OK(kd_tensor_resize_(view, 0, NULL, NULL));
  assert_int_equal(kd_tensor_ndim(view), 0);
  assert_int_equal(kd_tensor_numel(view), 1);
  KD_ASSERT_OK(kd_tensor_resize_(view, 2, (int64_t[]){0, 1000}, NULL));
  assert_int_equal(kd_tensor_numel(view), 0);
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 56);
  kd_tensor_release(view);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_CPU, NULL));
  assert_int_equal(c.frees, c.allocs);

  /* Empty storage from kd_storage_new grows from the device's allocator. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &t));
  assert_null(kd_tensor_data(t));
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){5}, NULL));
  assert_non_null(kd_tensor_data(t));
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 20);
  kd_tensor_release(t);

  /* Meta storage "grows" without bytes. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT64, (kd_device){KD_DEVICE_META, 0}, &t));
  KD_ASSERT_OK(kd_tensor_resize_(t, 2, (int64_t[]){10, 10}, NULL));
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 800);
  assert_null(kd_tensor_data(t));
  kd_tensor_release(t);
}

static void test_resize_refused(void **state) {
  (void)state;
  /* Wrapped memory: shrinking or staying within is fine, growing is refused. */
  float *mem = malloc(4 * sizeof(float));
  kd_storage *s;
  KD_ASSERT_OK(kd_storage_wrap(kd_device_cpu(), mem, 16, wrapped_deleter, mem, &s));
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_storage(s, 0, 1, (int64_t[]){4}, (int64_t[]){1}, KD_FLOAT32, &t));
  kd_storage_release(s);
  KD_ASSERT_OK(kd_tensor_resize_(t, 2, (int64_t[]){2, 2}, NULL));
  KD_ASSERT_ERR(kd_tensor_resize_(t, 1, (int64_t[]){5}, NULL), KD_EUNSUPPORTED,
                "resize_: the storage wraps memory the library does not own (16 bytes); it "
                "cannot grow to 20 bytes");
  assert_geometry(t, 2, (int64_t[]){2, 2}, (int64_t[]){2, 1}); /* unchanged */
  assert_ptr_equal(kd_tensor_data(t), mem);
  int before = wrapped_freed;
  kd_tensor_release(t);
  assert_int_equal(wrapped_freed, before + 1);

  /* Wrapped with no bytes but a deleter: growing would lose the deleter. */
  void *ctx = malloc(1);
  KD_ASSERT_OK(kd_storage_wrap(kd_device_cpu(), NULL, 0, wrapped_deleter, ctx, &s));
  KD_ASSERT_OK(kd_tensor_from_storage(s, 0, 1, (int64_t[]){0}, (int64_t[]){1}, KD_FLOAT32, &t));
  kd_storage_release(s);
  KD_ASSERT_ERR(kd_tensor_resize_(t, 1, (int64_t[]){2}, NULL), KD_EUNSUPPORTED,
                "wraps memory the library does not own");
  kd_tensor_release(t);
  assert_int_equal(wrapped_freed, before + 2);

  /* A device whose allocator has no copy functions cannot carry the old
   * bytes over. */
  counting c = {0, 0, 0};
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, count_alloc, count_free, &c, NULL, NULL};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE3, &a));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_INT8, (kd_device){KD_DEVICE_PRIVATEUSE3, 0},
                               &t));
  KD_ASSERT_ERR(kd_tensor_resize_(t, 1, (int64_t[]){3}, NULL), KD_EUNSUPPORTED,
                "resize_: cannot grow storage on device 'privateusethree' from 2 to 3 bytes: its "
                "allocator has no copy functions");
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){1}, NULL));
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE3, NULL));
  assert_int_equal(c.frees, 1);

  /* Bad arguments leave the tensor as it was. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_INT16, kd_device_cpu(), &t));
  KD_ASSERT_ERR(kd_tensor_resize_(NULL, 1, (int64_t[]){3}, NULL), KD_EINVAL,
                "resize_: NULL tensor");
  KD_ASSERT_ERR(kd_tensor_resize_(t, -1, NULL, NULL), KD_EINVAL, "ndim -1 out of range");
  KD_ASSERT_ERR(kd_tensor_resize_(t, KD_MAX_DIMS + 1, (int64_t[KD_MAX_DIMS + 1]){0}, NULL),
                KD_EINVAL, "ndim 17 out of range");
  KD_ASSERT_ERR(kd_tensor_resize_(t, 2, NULL, NULL), KD_EINVAL, "NULL sizes with ndim 2");
  KD_ASSERT_ERR(kd_tensor_resize_(t, 2, (int64_t[]){2, -3}, NULL), KD_EINVAL,
                "size -3 of dimension 1 is negative");
  KD_ASSERT_ERR(kd_tensor_resize_(t, 2, (int64_t[]){2, 3}, (int64_t[]){-1, 1}), KD_EINVAL,
                "resize_: stride -1 of dimension 0 is negative");
  KD_ASSERT_ERR(kd_tensor_resize_(t, 2, (int64_t[]){INT64_MAX / 2, 4}, NULL), KD_EOVERFLOW, "");
  KD_ASSERT_ERR(kd_tensor_resize_(t, 1, (int64_t[]){INT64_MAX / 2 + 2}, NULL), KD_EOVERFLOW,
                "resize_: storage size calculation overflows with sizes=[4611686018427387905], "
                "strides=[1], storage offset 0 and int16 elements of 2 bytes");
  KD_ASSERT_ERR(kd_tensor_resize_(t, 2, (int64_t[]){3, 3}, (int64_t[]){INT64_MAX / 2, 1}),
                KD_EOVERFLOW, "resize_: storage size calculation overflows");
  assert_geometry(t, 1, (int64_t[]){3}, (int64_t[]){1});
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 6);
  kd_tensor_release(t);
}

/* The geometry rule (docs/ARCHITECTURE.md, "Foreign geometry"): every byte offset a
 * tensor can reach and its storage extent fit in int64, even with zero
 * elements; the element count is 0 whenever a size is 0. */
static void test_geometry_rule(void **state) {
  (void)state;
  const int64_t big = INT64_C(1) << 62;
  kd_tensor *t = (kd_tensor *)0x1, *v;
  /* A byte stride that overflows, on a dimension of size 1. */
  KD_ASSERT_ERR(kd_tensor_empty_strided(1, (int64_t[]){1}, (int64_t[]){big}, KD_FLOAT32,
                                        kd_device_cpu(), &t),
                KD_EOVERFLOW, "storage size calculation overflows");
  /* Large sizes with zero strides and a size 0: no elements, no overflow
   * (the element count is not a running product that overflows first). */
  KD_ASSERT_OK(kd_tensor_empty_strided(3, (int64_t[]){big, big, 0}, (int64_t[]){0, 0, 1},
                                       KD_FLOAT32, kd_device_cpu(), &t));
  assert_int_equal(kd_tensor_numel(t), 0);
  assert_int_equal(kd_storage_nbytes(kd_tensor_storage(t)), 0);
  kd_tensor_release(t);
  /* Zero elements: the spans of the other dimensions still count. */
  KD_ASSERT_ERR(kd_tensor_empty_strided(2, (int64_t[]){0, big}, (int64_t[]){1, 4}, KD_FLOAT32,
                                        kd_device_cpu(), &t),
                KD_EOVERFLOW,
                "kd_tensor_empty_strided: storage size calculation overflows with sizes=[0, "
                "4611686018427387904], strides=[1, 4]");
  assert_null(t);
  /* Contiguous: strides fit, but the span of dimension 0 does not. */
  KD_ASSERT_ERR(kd_tensor_empty(3, (int64_t[]){big, 0, 4}, KD_FLOAT32, kd_device_cpu(), &t),
                KD_EOVERFLOW, "kd_tensor_empty: storage size calculation overflows");
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){1LL << 20, 0, 4}, KD_FLOAT32, kd_device_cpu(), &t));
  assert_int_equal(kd_tensor_numel(t), 0);
  kd_tensor_release(t);

  /* Storage offsets: offset * itemsize must fit, elements or not. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, kd_device_cpu(), &t));
  v = (kd_tensor *)0x1;
  /* (offset + 1) * 4 is the extent: 2^63 does not fit, 2^63 - 4 does. */
  KD_ASSERT_ERR(
      kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, (INT64_C(1) << 61) - 1, &v),
      KD_EOVERFLOW, "storage offset 2305843009213693951 and float32 elements of 4 bytes");
  assert_null(v);
  KD_ASSERT_ERR(kd_tensor_from_storage(kd_tensor_storage(t), big, 1, (int64_t[]){0},
                                       (int64_t[]){1}, KD_FLOAT32, &v),
                KD_EOVERFLOW, "kd_tensor_from_storage: storage size calculation overflows");
  KD_ASSERT_OK(
      kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, (INT64_C(1) << 61) - 2, &v));
  /* Past the end of the storage: no address (as PyTorch's data_ptr). */
  assert_null(kd_tensor_data(v));
  kd_tensor_release(v);
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, 4, &v));
  assert_ptr_equal(kd_tensor_data(v), (char *)kd_tensor_data(t) + 16);
  kd_tensor_release(v);
  /* resize_ keeps the offset: the new geometry counts it. */
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, INT64_C(1) << 40, &v));
  KD_ASSERT_ERR(kd_tensor_resize_(v, 2, (int64_t[]){0, INT64_C(1) << 61}, NULL), KD_EOVERFLOW,
                "resize_: storage size calculation overflows");
  assert_int_equal(kd_tensor_ndim(v), 1);
  kd_tensor_release(v);
  kd_tensor_release(t);
}

static void test_wrapped_number(void **state) {
  (void)state;
  kd_tensor *t;
  kd_scalar two = kd_scalar_int(2);
  KD_ASSERT_OK(kd_tensor_from_scalar(&two, KD_INT64, &t));
  assert_false(kd_tensor_is_wrapped_number(t));
  kd_tensor_set_wrapped_number(t, true);
  assert_true(kd_tensor_is_wrapped_number(t));
  kd_tensor_set_wrapped_number(t, false);
  assert_false(kd_tensor_is_wrapped_number(t));
  kd_tensor_set_wrapped_number(t, true);
  /* Resizing to 0-dim keeps the mark; to more dimensions clears it. */
  KD_ASSERT_OK(kd_tensor_resize_(t, 0, NULL, NULL));
  assert_true(kd_tensor_is_wrapped_number(t));
  KD_ASSERT_OK(kd_tensor_resize_(t, 1, (int64_t[]){1}, NULL));
  assert_false(kd_tensor_is_wrapped_number(t));
  /* Only 0-dim tensors can be marked. */
  kd_tensor_set_wrapped_number(t, true);
  assert_false(kd_tensor_is_wrapped_number(t));
  KD_ASSERT_OK(kd_tensor_resize_(t, 0, NULL, NULL));
  assert_false(kd_tensor_is_wrapped_number(t)); /* not marked back */
  kd_tensor_release(t);
  /* NULL is ignored / false. */
  kd_tensor_set_wrapped_number(NULL, true);
  assert_false(kd_tensor_is_wrapped_number(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_names),    cmocka_unit_test(test_device_register),
      cmocka_unit_test(test_allocators),      cmocka_unit_test(test_empty_and_views),
      cmocka_unit_test(test_create_errors),   cmocka_unit_test(test_data_scalar_meta),
      cmocka_unit_test(test_storage_wrap),    cmocka_unit_test(test_resize),
      cmocka_unit_test(test_resize_refused),  cmocka_unit_test(test_wrapped_number),
      cmocka_unit_test(test_geometry_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
