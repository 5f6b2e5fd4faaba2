/*
 * ops.c: a namespace of operators registered with the static registration
 * macros, built into a static archive (kd_slops) on its own. Whether its
 * registrations happen in a program depends on whether the linker keeps this
 * archive member: see main_used.c, main_unused.c and main_explicit.c.
 *
 *   slops::twice(int x) -> int      CatchAll, unboxed
 */
#include "kd/kd.h"

static kd_status twice(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(a[0].i * 2);
  return KD_OK;
}

KD_LIBRARY(slops, m) {
  kd_library_def(m, "twice(int x) -> int", NULL, 0, NULL);
}

KD_LIBRARY_IMPL(slops, CATCH_ALL, m) {
  kd_kernel k = kd_kernel_unboxed(twice, "(int) -> int");
  kd_library_impl(m, "twice", &k, NULL);
}
