/*
 * main_unused.c: the same link line as main_used.c (kd_slops, then the static
 * kdispatch), but nothing in the program names a symbol of ops.o. A linker
 * takes a member out of a static archive only to resolve an undefined
 * symbol, so ops.o is left out, and its constructors with it: slops::twice is
 * never registered. This is why KD_USE_LIBRARY exists (or, alternatively,
 * -Wl,--whole-archive, or an explicit kd_library_open_desc as in
 * main_explicit.c).
 */
#include "kd_test.h"

static int count_slops(kd_op *op, void *ud) {
  if (!strncmp(kd_op_name(op), "slops::", 7)) (*(int *)ud)++;
  return 0;
}

static void test_not_registered(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_ERR(kd_op_find("slops::twice", "", &op), KD_ENOTFOUND,
                "operator 'slops::twice' not found");
  int n = 0;
  assert_int_equal(kd_ops_foreach(count_slops, &n), 0);
  assert_int_equal(n, 0);
}

/* The library itself works: an operator registered here is found. */
static kd_status k_inc(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(a[0].i + 1);
  return KD_OK;
}

static void test_library_works(void **state) {
  (void)state;
  kd_library *lib;
  KD_ASSERT_OK(
      kd_library_open(KD_LIBRARY_DEF, "unused", KD_KEY_UNDEFINED, __FILE__, __LINE__, &lib));
  KD_ASSERT_OK(kd_library_def(lib, "inc(int x) -> int", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_inc, "(int) -> int");
  KD_ASSERT_OK(kd_library_impl_key(lib, "inc", KD_KEY_CATCH_ALL, &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("unused::inc", "", &op));
  kd_arg a[1] = {{.i = 1}};
  kd_value r[1] = {kd_value_none()};
  KD_ASSERT_OK(kd_call_unboxed(op, a, r));
  assert_int_equal(r[0].u.i, 2);
  kd_value_destroy(&r[0]);
  kd_library_close(lib);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_not_registered),
      cmocka_unit_test(test_library_works),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
