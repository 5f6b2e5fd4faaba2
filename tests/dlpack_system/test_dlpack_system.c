/* kd/dlpack.h after a DLPack header of the program's own: the system's
 * <dlpack/dlpack.h> (Debian's libdlpack-dev, DLPack 0.6) is included first,
 * so its include guard keeps kdispatch's shipped 1.1 header out, and the
 * prototypes of kd/dlpack.h must still compile and link (against the shared
 * library: all four functions are exported whatever header the caller has).
 * Built with KD_TEST_NO_SYSTEM_DLPACK when no system header is installed: the
 * test then reports itself skipped (exit 77). */
#ifndef KD_TEST_NO_SYSTEM_DLPACK
#include <dlpack/dlpack.h>
#endif

#include "kd_test.h"

#ifndef KD_TEST_NO_SYSTEM_DLPACK
#include "kd/dlpack.h"

/* The system header took effect, not the shipped one (which defines
 * KD_DLPACK_VENDORED): 0.x defines DLPACK_VERSION and no major version; a
 * 1.x one its own major version. */
#ifdef KD_DLPACK_VENDORED
#error "kd/dlpack.h replaced the DLPack header included before it"
#endif
#if !defined(DLPACK_VERSION) && !defined(DLPACK_MAJOR_VERSION)
#error "no DLPack version macro: which dlpack.h was included?"
#endif
#if defined(DLPACK_MAJOR_VERSION) && !defined(DLPACK_VERSION)
#define SYS_IS_1X 1
#else
#define SYS_IS_1X 0
#endif

/* The producer's deleter: counts its calls in the int at manager_ctx. */
static void foreign_deleter(DLManagedTensor *self) {
  ++*(int *)self->manager_ctx;
}

/* The unversioned form with the system's structs: a foreign tensor made by
 * this program, then an export read back through them. */
static void test_unversioned(void **state) {
  (void)state;
  double data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 2}, strides[2] = {1, 2};
  int deleted = 0;
  DLManagedTensor m = {
      .dl_tensor = {.data = data, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 64, 1},
                    .shape = shape, .strides = strides, .byte_offset = 2 * sizeof(double)},
      .manager_ctx = &deleted,
      .deleter = foreign_deleter,
  };
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_dlpack(&m, &t));
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){1, 1}, &x)); /* data[2 + 1 + 2] */
  assert_true(x.v.d == 5.0);
  assert_int_equal(kd_tensor_stride(t, 1), 2);
  kd_tensor_release(t);
  assert_int_equal(deleted, 1);

  /* Errors: the caller keeps the tensor. */
  m.dl_tensor.dtype.lanes = 4;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&m, &t), KD_EUNSUPPORTED, "lanes=4");
  assert_int_equal(deleted, 1);

  /* bool is DLPack's code 6, 8 bits, whether or not this header names it. */
  kd_tensor *b, *back;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){5}, KD_BOOL, kd_device_cpu(), &b));
  DLManagedTensor *e;
  KD_ASSERT_OK(kd_tensor_to_dlpack(b, &e));
  assert_int_equal(e->dl_tensor.dtype.code, 6);
  assert_int_equal(e->dl_tensor.dtype.bits, 8);
  assert_int_equal(e->dl_tensor.ndim, 1);
  assert_int_equal(e->dl_tensor.shape[0], 5);
  assert_int_equal(e->dl_tensor.strides[0], 1);
  assert_ptr_equal(e->dl_tensor.data, kd_tensor_data(b));
  KD_ASSERT_OK(kd_tensor_from_dlpack(e, &back));
  assert_int_equal(kd_tensor_dtype(back), KD_BOOL);
  kd_tensor_release(back);
  kd_tensor_release(b);
}

/* The versioned form: with a 0.x header the struct is incomplete, and a
 * pointer from the export can still be handed to the import. */
static void test_versioned_opaque(void **state) {
  (void)state;
  int32_t data[3] = {7, 8, 9};
  kd_tensor *t, *back;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){3}, KD_INT32, data, &t));
  struct DLManagedTensorVersioned *v = NULL;
  KD_ASSERT_OK(kd_tensor_to_dlpack_versioned(t, &v));
  assert_non_null(v);
  assert_int_equal(kd_tensor_refcount(t), 2);
#if SYS_IS_1X
  assert_int_equal(v->version.major, 1);
  assert_int_equal(v->flags, 0);
#endif
  KD_ASSERT_OK(kd_tensor_from_dlpack_versioned(v, &back));
  assert_ptr_equal(kd_tensor_data(back), kd_tensor_data(t));
  kd_scalar x;
  KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){2}, &x));
  assert_int_equal(x.v.i, 9);
  kd_tensor_release(back);
  assert_int_equal(kd_tensor_refcount(t), 1); /* the import's deleter ran */
  KD_ASSERT_ERR(kd_tensor_to_dlpack_versioned(t, NULL), KD_EINVAL,
                "kd_tensor_to_dlpack_versioned: NULL argument");
  KD_ASSERT_ERR(kd_tensor_from_dlpack_versioned(NULL, &back), KD_EINVAL,
                "kd_tensor_from_dlpack_versioned: NULL argument");
  kd_tensor_release(t);
}
#endif

int main(void) {
#ifdef KD_TEST_NO_SYSTEM_DLPACK
  printf("no system dlpack/dlpack.h (libdlpack-dev): skipped\n");
  return 77;
#else
#ifdef DLPACK_VERSION
  printf("system DLPack header first: DLPACK_VERSION %d\n", (int)DLPACK_VERSION);
#else
  printf("system DLPack header first: %d.%d\n", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unversioned),
      cmocka_unit_test(test_versioned_opaque),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
