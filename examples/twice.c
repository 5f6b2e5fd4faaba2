/* The README's example: define an operator, implement it, call it. Built and
 * run by the test suite (test_example_twice). */
#include <stdio.h>

#include <kd/kd.h>

static kd_status twice(const kd_call *call, const kd_arg *args, kd_value *rets) {
  (void)call;
  rets[0] = kd_value_int(2 * args[0].i); /* int -> .i; one owned value per return */
  return KD_OK;
}

KD_LIBRARY(myops, m) { kd_library_def(m, "twice(int x) -> int", NULL, 0, NULL); }
KD_LIBRARY_IMPL(myops, CATCH_ALL, m) {
  kd_kernel k = kd_kernel_unboxed(twice, "(int) -> int"); /* checked against the schema */
  kd_library_impl(m, "twice", &k, NULL);
}

int main(void) {
  kd_op *op;
  if (kd_op_find_typed("myops::twice", "", "(int) -> int", &op) != KD_OK) {
    fprintf(stderr, "%s\n", kd_last_error());
    return 1;
  }
  kd_arg args[1] = {{.i = 21}};
  kd_value r = kd_value_none();
  if (kd_call_unboxed(op, args, &r) != KD_OK) {
    fprintf(stderr, "%s\n", kd_last_error());
    return 1;
  }
  printf("myops::twice(21) = %lld\n", (long long)r.u.i);
  return r.u.i == 42 ? 0 : 1;
}
