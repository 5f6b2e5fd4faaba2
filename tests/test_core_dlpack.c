/* DLPack export and import, both forms, with DLPack's ownership rules,
 * against the DLPack header kdispatch ships (kd/dlpack/dlpack.h, 1.1): no
 * other DLPack header is included first (tests/dlpack_system/ does that). */
#include "kd_test.h"

#include "kd/dlpack.h"

#if !defined(KD_DLPACK_VENDORED) || DLPACK_MAJOR_VERSION != 1 || DLPACK_MINOR_VERSION != 1
#error "expected the shipped DLPack 1.1 header"
#endif

static void test_export_roundtrip(void **state) {
  (void)state;
  int32_t data[6] = {1, 2, 3, 4, 5, 6};
  kd_tensor *t, *v;
  KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){2, 3}, KD_INT32, data, &t));
  KD_ASSERT_OK(kd_tensor_as_strided(t, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &v));
  DLManagedTensor *m;
  KD_ASSERT_OK(kd_tensor_to_dlpack(v, &m));
  assert_int_equal(kd_tensor_refcount(v), 2); /* the managed tensor holds one */
  DLTensor *dl = &m->dl_tensor;
  assert_int_equal(dl->ndim, 2);
  assert_int_equal(dl->shape[0], 3);
  assert_int_equal(dl->strides[0], 1);
  assert_int_equal(dl->strides[1], 3);
  assert_int_equal(dl->dtype.code, kDLInt);
  assert_int_equal(dl->dtype.bits, 32);
  assert_int_equal(dl->dtype.lanes, 1);
  assert_int_equal(dl->device.device_type, kDLCPU);
  assert_ptr_equal(dl->data, kd_tensor_data(t));

  /* Import: the same bytes; the consumer owns the managed tensor. */
  kd_tensor *back;
  KD_ASSERT_OK(kd_tensor_from_dlpack(m, &back));
  assert_ptr_equal(kd_tensor_data(back), kd_tensor_data(t));
  assert_int_equal(kd_tensor_stride(back, 1), 3);
  assert_int_equal(kd_tensor_dtype(back), KD_INT32);
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){2, 1}, &x));
  assert_int_equal(x.v.i, 6);
  kd_tensor_release(v);
  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_tensor_release(t);
  /* The bytes stay alive through the import until it is released (ASan
   * checks this read). */
  KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){0, 0}, &x));
  assert_int_equal(x.v.i, 1);
  kd_tensor_release(back);
}

static void test_export_dtypes(void **state) {
  (void)state;
  static const struct {
    kd_dtype dt;
    uint8_t code, bits;
  } rows[] = {
      {KD_UINT8, kDLUInt, 8},       {KD_INT8, kDLInt, 8},         {KD_INT64, kDLInt, 64},
      {KD_FLOAT16, kDLFloat, 16},   {KD_BFLOAT16, kDLBfloat, 16}, {KD_FLOAT64, kDLFloat, 64},
      {KD_COMPLEX64, kDLComplex, 64}, {KD_COMPLEX128, kDLComplex, 128},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    kd_tensor *t, *back;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, rows[i].dt, kd_device_cpu(), &t));
    DLManagedTensor *m;
    KD_ASSERT_OK(kd_tensor_to_dlpack(t, &m));
    assert_int_equal(m->dl_tensor.dtype.code, rows[i].code);
    assert_int_equal(m->dl_tensor.dtype.bits, rows[i].bits);
    KD_ASSERT_OK(kd_tensor_from_dlpack(m, &back));
    assert_int_equal(kd_tensor_dtype(back), rows[i].dt);
    kd_tensor_release(back);
    kd_tensor_release(t);
  }
  /* bool is kDLBool (8 bits) in the unversioned form too. */
  kd_tensor *b, *bb;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_BOOL, kd_device_cpu(), &b));
  DLManagedTensor *m = (DLManagedTensor *)0x1;
  KD_ASSERT_OK(kd_tensor_to_dlpack(b, &m));
  assert_int_equal(m->dl_tensor.dtype.code, kDLBool);
  assert_int_equal(m->dl_tensor.dtype.bits, 8);
  KD_ASSERT_OK(kd_tensor_from_dlpack(m, &bb));
  assert_int_equal(kd_tensor_dtype(bb), KD_BOOL);
  kd_tensor_release(bb);
  kd_tensor_release(b);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &b));
  KD_ASSERT_ERR(kd_tensor_to_dlpack(b, &m), KD_EUNSUPPORTED,
                "device type 'meta' has no DLPack device type");
  kd_tensor_release(b);
  KD_ASSERT_ERR(kd_tensor_to_dlpack(NULL, &m), KD_EINVAL, "NULL");
}

/* A producer of our own: memory and shape owned by a context that the
 * deleter frees, as another framework's export would be. */
typedef struct foreign {
  DLManagedTensor managed;
  int64_t shape[2];
  float data[6];
  int *deleted;
} foreign;

static void foreign_deleter(DLManagedTensor *self) {
  foreign *f = self->manager_ctx;
  (*f->deleted)++;
  free(f);
}

static foreign *make_foreign(int *deleted) {
  foreign *f = calloc(1, sizeof *f);
  f->shape[0] = 2;
  f->shape[1] = 3;
  for (int i = 0; i < 6; i++) f->data[i] = (float)i * 0.5f;
  f->deleted = deleted;
  f->managed.manager_ctx = f;
  f->managed.deleter = foreign_deleter;
  DLTensor *dl = &f->managed.dl_tensor;
  dl->data = f->data;
  dl->device.device_type = kDLCPU;
  dl->ndim = 2;
  dl->dtype.code = kDLFloat;
  dl->dtype.bits = 32;
  dl->dtype.lanes = 1;
  dl->shape = f->shape;
  dl->strides = NULL; /* row-major */
  dl->byte_offset = 0;
  return f;
}

static void test_import_foreign(void **state) {
  (void)state;
  int deleted = 0;
  foreign *f = make_foreign(&deleted);
  f->managed.dl_tensor.byte_offset = 4; /* skip one float: a 2x3 view needs 6 more */
  f->shape[0] = 1;
  kd_tensor *t, *view;
  KD_ASSERT_OK(kd_tensor_from_dlpack(&f->managed, &t));
  assert_int_equal(kd_tensor_stride(t, 0), 3);
  assert_true(kd_tensor_is_contiguous(t));
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){0, 2}, &x));
  assert_true(x.v.d == 1.5);
  /* A view keeps the producer's memory alive after the tensor goes. */
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){3}, (int64_t[]){1}, 0, &view));
  kd_tensor_release(t);
  assert_int_equal(deleted, 0);
  kd_tensor_release(view);
  assert_int_equal(deleted, 1);
}

static void test_import_errors(void **state) {
  (void)state;
  int deleted = 0;
  foreign *f = make_foreign(&deleted);
  kd_tensor *t = (kd_tensor *)0x1;
  f->managed.dl_tensor.dtype.lanes = 4;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EUNSUPPORTED, "lanes=4");
  assert_null(t);
  f->managed.dl_tensor.dtype.lanes = 1;
  f->managed.dl_tensor.dtype.bits = 24;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EUNSUPPORTED, "code 2, bits 24");
  f->managed.dl_tensor.dtype.bits = 32;
  f->managed.dl_tensor.device.device_type = kDLVulkan;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EUNSUPPORTED,
                "DLPack device type 7 has no kdispatch device type");
  f->managed.dl_tensor.device.device_type = kDLCPU;
  f->shape[1] = -3;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EINVAL, "size -3 of dimension 1");
  f->shape[1] = 3;
  f->managed.dl_tensor.ndim = 40;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EINVAL, "ndim 40 out of range");
  f->managed.dl_tensor.ndim = 2;
  int64_t neg[2] = {3, -1};
  f->managed.dl_tensor.strides = neg;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EUNSUPPORTED, "negative stride");
  f->managed.dl_tensor.strides = NULL;
  f->managed.dl_tensor.data = NULL;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), KD_EINVAL, "NULL data pointer");
  /* After every failure the caller still owns it. */
  assert_int_equal(deleted, 0);
  f->managed.deleter(&f->managed);
  assert_int_equal(deleted, 1);
}

/* Imports f with the given shape/strides (ndim entries; strides may be NULL)
 * and byte_offset, expecting `status` with `needle` in the message; the
 * caller keeps f. */
static void import_refused(foreign *f, int ndim, int64_t *shape, int64_t *strides,
                           uint64_t byte_offset, kd_status status, const char *needle) {
  DLTensor *dl = &f->managed.dl_tensor;
  DLTensor saved = *dl;
  dl->ndim = ndim;
  dl->shape = shape;
  dl->strides = strides;
  dl->byte_offset = byte_offset;
  kd_tensor *t = (kd_tensor *)0x1;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&f->managed, &t), status, needle);
  assert_null(t);
  *dl = saved;
}

/* Foreign sizes, strides and byte offsets: every address the tensor can
 * reach and its storage extent must be computable (regressions: all of
 * these used to import, with wrapped strides, pointers or storage sizes). */
static void test_import_geometry_overflow(void **state) {
  (void)state;
  int deleted = 0;
  foreign *f = make_foreign(&deleted);
  /* Row-major strides computed for NULL strides overflow before the size 0
   * is seen: the stride of dimension 0 would be 2^64. */
  import_refused(f, 4, (int64_t[]){1, INT64_C(1) << 62, 4, 0}, NULL, 0, KD_EOVERFLOW,
                 "DLPack import: the row-major strides of the shape overflow int64");
  /* A byte_offset that wraps the pointer to 4 bytes before the buffer. */
  import_refused(f, 2, (int64_t[]){2, 3}, NULL, UINT64_MAX - 3, KD_EOVERFLOW,
                 "DLPack import: byte_offset 18446744073709551612 overflows the address");
  /* A byte_offset that is not a whole number of elements. */
  import_refused(f, 1, (int64_t[]){1}, NULL, 3, KD_EINVAL,
                 "DLPack import: byte_offset 3 is not a multiple of the element size 4 "
                 "(float32)");
  /* The storage size (last + 1) * itemsize: 2^64 + 4 bytes, once 4. */
  import_refused(f, 1, (int64_t[]){2}, (int64_t[]){INT64_C(1) << 62}, 0, KD_EOVERFLOW,
                 "DLPack import: storage size calculation overflows with sizes=[2], "
                 "strides=[4611686018427387904], storage offset 0 and float32 elements");
  /* A stride whose byte stride does not fit, even on a dimension of size 1. */
  import_refused(f, 2, (int64_t[]){1, 1}, (int64_t[]){INT64_C(1) << 62, 1}, 0, KD_EOVERFLOW,
                 "storage size calculation overflows");
  /* With no elements the spans must still be computable. */
  import_refused(f, 2, (int64_t[]){0, INT64_C(1) << 62}, (int64_t[]){1, 4}, 0, KD_EOVERFLOW,
                 "storage size calculation overflows");
  /* An element read through a misaligned pointer. */
  float *saved = f->managed.dl_tensor.data;
  f->managed.dl_tensor.data = (char *)saved + 1;
  import_refused(f, 1, (int64_t[]){1}, NULL, 0, KD_EINVAL, "is not aligned to 4 bytes");
  f->managed.dl_tensor.data = saved;
  assert_int_equal(deleted, 0);

  /* Zero elements with large sizes and zero strides: the element count is 0
   * (a running product would have overflowed before the 0). */
  kd_tensor *t;
  int64_t shape[3] = {INT64_C(1) << 62, INT64_C(1) << 62, 0}, strides[3] = {0, 0, 1};
  f->managed.dl_tensor.ndim = 3;
  f->managed.dl_tensor.shape = shape;
  f->managed.dl_tensor.strides = strides;
  KD_ASSERT_OK(kd_tensor_from_dlpack(&f->managed, &t));
  assert_int_equal(kd_tensor_numel(t), 0);
  assert_int_equal(kd_tensor_size(t, 1), INT64_C(1) << 62);
  kd_tensor_release(t);
  assert_int_equal(deleted, 1);
}

/* A zero-element tensor past the end of its storage exports a NULL data
 * pointer (as PyTorch's data_ptr of an empty tensor), never a pointer past
 * the producer's buffer. */
static void test_export_empty_past_end(void **state) {
  (void)state;
  kd_tensor *t, *v;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, kd_device_cpu(), &t));
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, 1000, &v));
  DLManagedTensor *m;
  KD_ASSERT_OK(kd_tensor_to_dlpack(v, &m));
  assert_null(m->dl_tensor.data);
  assert_int_equal(m->dl_tensor.byte_offset, 0);
  assert_int_equal(m->dl_tensor.shape[0], 0);
  m->deleter(m);
  kd_tensor_release(v);
  /* An offset whose byte address overflows int64 is refused. */
  v = (kd_tensor *)0x1;
  KD_ASSERT_ERR(kd_tensor_as_strided(t, 1, (int64_t[]){0}, (int64_t[]){1}, INT64_C(1) << 62, &v),
                KD_EOVERFLOW,
                "kd_tensor_as_strided: storage size calculation overflows with sizes=[0], "
                "strides=[1], storage offset 4611686018427387904 and float32 elements");
  assert_null(v);
  kd_tensor_release(t);
}

static void test_private_device(void **state) {
  (void)state;
  /* A private device with a DLPack type exchanges through it. */
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE3, "vulkan_test", kDLVulkan));
  int deleted = 0;
  foreign *f = make_foreign(&deleted);
  f->managed.dl_tensor.device.device_type = kDLVulkan;
  f->managed.dl_tensor.device.device_id = 2;
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_dlpack(&f->managed, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_PRIVATEUSE3);
  assert_int_equal(kd_tensor_device(t).index, 2);
  DLManagedTensor *m;
  KD_ASSERT_OK(kd_tensor_to_dlpack(t, &m));
  assert_int_equal(m->dl_tensor.device.device_type, kDLVulkan);
  assert_int_equal(m->dl_tensor.device.device_id, 2);
  m->deleter(m);
  kd_tensor_release(t);
  assert_int_equal(deleted, 1);
}

static void test_zero_size(void **state) {
  (void)state;
  kd_tensor *t, *back;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){0, 5}, KD_FLOAT32, kd_device_cpu(), &t));
  DLManagedTensor *m;
  KD_ASSERT_OK(kd_tensor_to_dlpack(t, &m));
  KD_ASSERT_OK(kd_tensor_from_dlpack(m, &back));
  assert_int_equal(kd_tensor_numel(back), 0);
  assert_int_equal(kd_tensor_size(back, 1), 5);
  kd_tensor_release(back);
  kd_tensor_release(t);
}

/* ---- The versioned form (DLManagedTensorVersioned) -------------------- */

static void test_versioned_roundtrip(void **state) {
  (void)state;
  kd_tensor *t, *back;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 2}, KD_BOOL, kd_device_cpu(), &t));
  kd_scalar yes = kd_scalar_bool(true);
  KD_ASSERT_OK(kd_tensor_set(t, (int64_t[]){1, 0}, &yes));
  DLManagedTensorVersioned *m;
  KD_ASSERT_OK(kd_tensor_to_dlpack_versioned(t, &m));
  assert_int_equal(kd_tensor_refcount(t), 2); /* the managed tensor holds one */
  assert_int_equal(m->version.major, 1);
  assert_int_equal(m->version.minor, 1);
  assert_int_equal(m->flags, 0);
  assert_int_equal(m->dl_tensor.dtype.code, kDLBool);
  assert_int_equal(m->dl_tensor.dtype.bits, 8);
  assert_int_equal(m->dl_tensor.strides[0], 2);
  assert_ptr_equal(m->dl_tensor.data, kd_tensor_data(t));
  KD_ASSERT_OK(kd_tensor_from_dlpack_versioned(m, &back));
  assert_int_equal(kd_tensor_dtype(back), KD_BOOL);
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){1, 0}, &x));
  assert_true(x.kind == KD_SCALAR_BOOL && x.v.b);
  kd_tensor_release(t);
  kd_tensor_release(back);

  /* Export errors are the unversioned form's, and leave *out NULL. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &t));
  m = (DLManagedTensorVersioned *)0x1;
  KD_ASSERT_ERR(kd_tensor_to_dlpack_versioned(t, &m), KD_EUNSUPPORTED,
                "DLPack export: device type 'meta' has no DLPack device type");
  assert_null(m);
  kd_tensor_release(t);
  KD_ASSERT_ERR(kd_tensor_to_dlpack_versioned(NULL, &m), KD_EINVAL,
                "kd_tensor_to_dlpack_versioned: NULL argument");
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(NULL, &t), KD_EINVAL,
                "kd_tensor_from_dlpack_versioned: NULL argument");
}

/* Counts the calls of a versioned producer's deleter. */
static int deleted_v;
static void deleter_v(DLManagedTensorVersioned *self) {
  (void)self;
  deleted_v++;
}

static void test_versioned_errors(void **state) {
  (void)state;
  float data[2] = {1, 2};
  int64_t shape[1] = {2};
  DLManagedTensorVersioned m = {
      .version = {2, 0},
      .deleter = deleter_v,
      .dl_tensor = {.data = data, .device = {kDLCPU, 0}, .ndim = 1,
                    .dtype = {kDLFloat, 32, 1}, .shape = shape},
  };
  kd_tensor *t;
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(&m, &t), KD_EUNSUPPORTED,
                "major version 2 is not supported: expected 1");
  m.version.major = 1;
  m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(&m, &t), KD_EUNSUPPORTED, "read-only");
  /* The DLTensor's checks are the unversioned form's. */
  m.flags = 0;
  m.dl_tensor.dtype.lanes = 2;
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(&m, &t), KD_EUNSUPPORTED, "lanes=2");
  m.dl_tensor.dtype.lanes = 1;
  assert_int_equal(deleted_v, 0);
  /* A newer minor version and the is-copied flag are accepted. */
  m.version.minor = 7;
  m.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
  KD_ASSERT_OK(kd_tensor_from_dlpack_versioned(&m, &t));
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){1}, &x));
  assert_true(x.v.d == 2.0);
  kd_tensor_release(t);
  assert_int_equal(deleted_v, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_roundtrip), cmocka_unit_test(test_export_dtypes),
      cmocka_unit_test(test_import_foreign),   cmocka_unit_test(test_import_errors),
      cmocka_unit_test(test_private_device),   cmocka_unit_test(test_zero_size),
      cmocka_unit_test(test_import_geometry_overflow),
      cmocka_unit_test(test_export_empty_past_end),
      cmocka_unit_test(test_versioned_roundtrip),
      cmocka_unit_test(test_versioned_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
