/*
 * main_used.c: a program linked with the static archive kd_slops (and the
 * static kdispatch) that names its descriptors with KD_USE_LIBRARY. The
 * reference makes the linker keep ops.o, and with it the constructors that
 * register slops::twice before main runs.
 */
#include "kd_test.h"

KD_USE_LIBRARY(kd_library_def_slops);
KD_USE_LIBRARY(kd_library_impl_slops_CATCH_ALL);

static void test_registered_by_constructor(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("slops::twice", "", &op));
  assert_non_null(kd_op_schema(op));
  KD_ASSERT_STR_EQ(kd_op_name(op), "slops::twice");
  KD_ASSERT_OK(kd_op_find_typed("slops::twice", NULL, "(int) -> int", &op));
  /* Opening a descriptor the constructor already opened does nothing. */
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_def_slops));
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_impl_slops_CATCH_ALL));
  KD_ASSERT_OK(kd_dispatcher_check());
}

static void test_typed_call(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find_typed("slops::twice", NULL, "(int) -> int", &op));
  kd_arg a[1] = {{.i = 21}};
  kd_value r[1] = {kd_value_none()};
  KD_ASSERT_OK(kd_call_unboxed(op, a, r));
  assert_int_equal(r[0].tag, KD_VALUE_INT);
  assert_int_equal(r[0].u.i, 42);
  kd_value_destroy(&r[0]);
}

static void test_boxed_call(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("slops::twice", NULL, &op));
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_int(-7);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  assert_int_equal(s.size, 1);
  assert_int_equal(s.items[0].tag, KD_VALUE_INT);
  assert_int_equal(s.items[0].u.i, -14);
  kd_stack_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registered_by_constructor),
      cmocka_unit_test(test_typed_call),
      cmocka_unit_test(test_boxed_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
