/*
 * main_explicit.c: ops.c built with KD_NO_AUTO_REGISTER (the archive
 * kd_slops_explicit), so its descriptors carry no constructors. The program
 * opens them itself with kd_library_open_desc, the way a Lua module's
 * luaopen_ function registers its functions: nothing is registered before
 * that call, and naming the descriptors is what pulls ops.o out of the
 * archive.
 */
#include "kd_test.h"

#ifndef KD_NO_AUTO_REGISTER
#error "main_explicit.c is built with -DKD_NO_AUTO_REGISTER"
#endif

extern const kd_library_desc kd_library_def_slops;
extern const kd_library_desc kd_library_impl_slops_CATCH_ALL;

static void test_absent_before_open(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_ERR(kd_op_find("slops::twice", "", &op), KD_ENOTFOUND,
                "operator 'slops::twice' not found");
}

static void test_open_and_call(void **state) {
  (void)state;
  assert_int_equal(kd_library_def_slops.api_version, KD_LIBRARY_DESC_API_VERSION);
  assert_int_equal(kd_library_def_slops.kind, KD_LIBRARY_DEF);
  KD_ASSERT_STR_EQ(kd_library_def_slops.ns, "slops");
  assert_int_equal(kd_library_impl_slops_CATCH_ALL.kind, KD_LIBRARY_IMPL);
  assert_int_equal(kd_library_impl_slops_CATCH_ALL.key, KD_KEY_CATCH_ALL);

  /* The implementation first: the operator exists (implemented only) but
   * cannot be called until it is defined. */
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_impl_slops_CATCH_ALL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("slops::twice", "", &op));
  assert_null(kd_op_schema(op));
  kd_arg a[1] = {{.i = 5}};
  kd_value r[1] = {kd_value_none()};
  KD_ASSERT_ERR(kd_call_unboxed(op, a, r), KD_ESTATE, "operator 'slops::twice' is not defined");

  KD_ASSERT_OK(kd_library_open_desc(&kd_library_def_slops));
  assert_non_null(kd_op_schema(op));
  KD_ASSERT_OK(kd_op_find_typed("slops::twice", NULL, "(int) -> int", &op));
  KD_ASSERT_OK(kd_call_unboxed(op, a, r));
  assert_int_equal(r[0].tag, KD_VALUE_INT);
  assert_int_equal(r[0].u.i, 10);
  kd_value_destroy(&r[0]);

  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_int(8);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  assert_int_equal(s.size, 1);
  assert_int_equal(s.items[0].u.i, 16);
  kd_stack_free(&s);

  /* Opening again does nothing (once per process). */
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_def_slops));
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_impl_slops_CATCH_ALL));
  KD_ASSERT_OK(kd_dispatcher_check());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_absent_before_open),
      cmocka_unit_test(test_open_and_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
