/* The DLPack 1.x versioned forms and bool, compiled against the stand-in 1.x
 * header in this folder (src/core/dlpack.c is compiled into this test with
 * the same header). */
#include "kd_test.h"

#ifndef KD_HAVE_DLPACK_VERSIONED
#error "this test must be compiled against a DLPack 1.x header"
#endif

static void test_versioned_roundtrip(void **state) {
  (void)state;
  kd_tensor *t, *back;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 2}, KD_BOOL, kd_device_cpu(), &t));
  kd_scalar yes = kd_scalar_bool(true);
  KD_ASSERT_OK(kd_tensor_set(t, (int64_t[]){1, 0}, &yes));
  DLManagedTensorVersioned *m;
  KD_ASSERT_OK(kd_tensor_to_dlpack_versioned(t, &m));
  assert_int_equal(m->version.major, 1);
  assert_int_equal(m->version.minor, 0);
  assert_int_equal(m->flags, 0);
  assert_int_equal(m->dl_tensor.dtype.code, kDLBool);
  assert_int_equal(m->dl_tensor.dtype.bits, 8);
  KD_ASSERT_OK(kd_tensor_from_dlpack_versioned(m, &back));
  assert_int_equal(kd_tensor_dtype(back), KD_BOOL);
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){1, 0}, &x));
  assert_true(x.kind == KD_SCALAR_BOOL && x.v.b);
  kd_tensor_release(t);
  kd_tensor_release(back);

  /* The unversioned form exports bool too with a 1.x header. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_BOOL, kd_device_cpu(), &t));
  DLManagedTensor *u;
  KD_ASSERT_OK(kd_tensor_to_dlpack(t, &u));
  assert_int_equal(u->dl_tensor.dtype.code, kDLBool);
  u->deleter(u);
  kd_tensor_release(t);
}

static int deleted;
static void deleter(DLManagedTensorVersioned *self) {
  (void)self;
  deleted++;
}

static void test_versioned_errors(void **state) {
  (void)state;
  float data[2] = {1, 2};
  int64_t shape[1] = {2};
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = 2;
  m.deleter = deleter;
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;
  kd_tensor *t;
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(&m, &t), KD_EUNSUPPORTED,
                "major version 2 is not supported: expected 1");
  m.version.major = 1;
  m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(&m, &t), KD_EUNSUPPORTED, "read-only");
  assert_int_equal(deleted, 0);
  m.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
  KD_ASSERT_OK(kd_tensor_from_dlpack_versioned(&m, &t));
  kd_tensor_release(t);
  assert_int_equal(deleted, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_versioned_roundtrip),
      cmocka_unit_test(test_versioned_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
