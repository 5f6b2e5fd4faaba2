/*
 * test_signature_mismatch.c: a kernel whose C signature does not fit the
 * schema is reported against its own registration (file:line, operator,
 * key), with every difference, where the mismatch becomes known: refused at
 * the impl when the schema is known, set aside at the def when the kernel
 * came first. It never makes the def or other kernels fail.
 */
#include "kd_test.h"

static char warnings[4096];
static int nwarnings;
static void on_warning(const char *msg, void *ud) {
  (void)ud;
  snprintf(warnings, sizeof warnings, "%s", msg);
  nwarnings++;
}

static kd_status k_ok(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static kd_status k_bad(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)a;
  r[0] = kd_value_int(-1); /* never called */
  return KD_OK;
}

static kd_tensor *tensor_on(kd_device_type type) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){type, 0}, &t));
  return t;
}

static kd_status call2(kd_op *op, kd_tensor *a, kd_tensor *b) {
  kd_arg args[2] = {{.t = a}, {.t = b}};
  kd_value r = kd_value_none();
  kd_status st = kd_call_unboxed(op, args, &r);
  kd_value_destroy(&r);
  return st;
}

typedef struct listing {
  int n, nrejected;
  char rejected[2048];
  bool rejected_active;
} listing;
static int list_kernel(const kd_kernel_info *ki, void *ud) {
  listing *l = ud;
  l->n++;
  if (ki->rejected) {
    l->nrejected++;
    l->rejected_active = ki->active;
    snprintf(l->rejected, sizeof l->rejected, "%s", ki->rejected);
  }
  return 0;
}

#define MISMATCHES                                                                              \
  "argument 0 'self' is Tensor in the schema but int in the kernel; argument 1 'other' is "     \
  "Tensor in the schema but float in the kernel; the schema has 2 arguments, the kernel 3; "    \
  "the schema has 1 returns, the kernel 2; return 0 is Tensor in the schema but int in the "    \
  "kernel"

/* The kernel came first (a plugin loaded before the library that defines the
 * operator): the def succeeds and sets the kernel aside. */
static void test_impl_before_def(void **state) {
  (void)state;
  kd_set_warning_handler(on_warning, NULL);
  nwarnings = 0;
  kd_library *meta = kd_test_open_lib(KD_LIBRARY_IMPL, "sigm", KD_KEY_META);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "sigm", KD_KEY_CPU);
  kd_kernel bad = kd_kernel_unboxed(k_bad, "(int, float, bool) -> (int, Tensor)");
  bad.debug = "plugin.c:12";
  kd_registration *rbad;
  KD_ASSERT_OK(kd_library_impl(meta, "mul", &bad, &rbad)); /* the schema is not known yet */
  kd_kernel good = kd_kernel_unboxed(k_ok, "(Tensor, Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "mul", &good, NULL));

  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "sigm", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "mul(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL));
  /* Warned once, against the kernel's own registration, with every
   * difference. */
  assert_int_equal(nwarnings, 1);
  if (!strstr(warnings,
              "kernel for 'sigm::mul' (Meta) registered at plugin.c:12 has signature (int, float, "
              "bool) -> (int, Tensor), which does not match the schema of 'sigm::mul' (5 "
              "differences): " MISMATCHES
              "; the kernel is set aside: it takes no part in dispatch until it is released"))
    fail_msg("warning: %s", warnings);

  kd_op *op;
  KD_ASSERT_OK(kd_op_find("sigm::mul", "", &op));
  assert_non_null(kd_op_schema(op));
  /* Other keys work. */
  kd_tensor *c = tensor_on(KD_DEVICE_CPU), *m = tensor_on(KD_DEVICE_META);
  KD_ASSERT_OK(call2(op, c, c));
  /* The set-aside kernel's key has no kernel, and the message says why. */
  KD_ASSERT_ERR(call2(op, m, m), KD_ENOKERNEL,
                "is only available for these backends: [CPU]. A kernel registered for it was "
                "rejected: kernel for 'sigm::mul' (Meta) registered at plugin.c:12 has signature");
  KD_ASSERT_ERR(call2(op, m, m), KD_ENOKERNEL, MISMATCHES);
  /* Listed as rejected. */
  char dump[4096];
  kd_op_dump(op, dump, sizeof dump);
  if (!strstr(dump, "  Meta: unboxed kernel registered at plugin.c:12 [rejected: kernel for "
                    "'sigm::mul' (Meta)"))
    fail_msg("dump:\n%s", dump);
  listing l = {0};
  kd_op_kernels_foreach(op, list_kernel, &l);
  assert_int_equal(l.n, 2);
  assert_int_equal(l.nrejected, 1);
  assert_false(l.rejected_active);
  assert_non_null(strstr(l.rejected, MISMATCHES));
  KD_ASSERT_OK(kd_dispatcher_check());

  /* Released, it is gone from the listing and the message; a kernel that
   * fits takes the key. */
  kd_registration_release(rbad);
  kd_op_dump(op, dump, sizeof dump);
  assert_null(strstr(dump, "rejected"));
  KD_ASSERT_ERR(call2(op, m, m), KD_ENOKERNEL, "available for these backends: [CPU].");
  assert_null(strstr(kd_last_error(), "rejected"));
  KD_ASSERT_OK(kd_library_impl(meta, "mul", &good, NULL));
  KD_ASSERT_OK(call2(op, m, m));
  KD_ASSERT_OK(kd_dispatcher_check());

  kd_tensor_release(c);
  kd_tensor_release(m);
  kd_library_close(def);
  kd_library_close(cpu);
  kd_library_close(meta);
  kd_set_warning_handler(NULL, NULL);
}

/* A set-aside kernel that was the active one of its key: the slot falls to
 * what is below it (here a CatchAll kernel), and a kernel-key kernel is set
 * aside the same way. Closing the library releases it. */
static void test_set_aside_slot_falls_through(void **state) {
  (void)state;
  kd_set_warning_handler(on_warning, NULL);
  nwarnings = 0;
  kd_library *all = kd_test_open_lib(KD_LIBRARY_IMPL, "sigm", KD_KEY_CATCH_ALL);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "sigm", KD_KEY_CPU);
  kd_kernel good = kd_kernel_unboxed(k_ok, "(Tensor, Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(all, "add", &good, NULL));
  kd_kernel bad = kd_kernel_unboxed(k_bad, "(Tensor, int) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "add", &bad, NULL)); /* the CPU slot's kernel for now */
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "sub", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &bad,
                                     NULL));
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "sigm", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "add(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "sub(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL));
  assert_int_equal(nwarnings, 2);
  assert_non_null(strstr(warnings, "kernel for 'sigm::sub' (CPU) registered at"));
  assert_non_null(strstr(warnings, "argument 1 'other' is Tensor in the schema but int"));
  kd_op *add, *sub;
  KD_ASSERT_OK(kd_op_find("sigm::add", "", &add));
  KD_ASSERT_OK(kd_op_find("sigm::sub", "", &sub));
  kd_tensor *c = tensor_on(KD_DEVICE_CPU);
  KD_ASSERT_OK(call2(add, c, c)); /* the CatchAll kernel: k_bad would return an int */
  KD_ASSERT_ERR(call2(sub, c, c), KD_ENOKERNEL, "A kernel registered for it was rejected");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cpu); /* releases the set-aside kernels */
  KD_ASSERT_OK(call2(add, c, c));
  KD_ASSERT_ERR(call2(sub, c, c), KD_ENOKERNEL, "'sigm::sub' is only available");
  assert_null(strstr(kd_last_error(), "rejected"));
  kd_tensor_release(c);
  kd_library_close(def);
  kd_library_close(all);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_set_warning_handler(NULL, NULL);
}

/* The schema is known: the impl is refused, with every difference, named by
 * its registration. */
static void test_impl_after_def(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "sigm", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "div(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL));
  kd_library *meta = kd_test_open_lib(KD_LIBRARY_IMPL, "sigm", KD_KEY_META);
  kd_kernel bad = kd_kernel_unboxed(k_bad, "(int, float, bool) -> (int, Tensor)");
  bad.debug = "plugin.c:30";
  KD_ASSERT_ERR(kd_library_impl(meta, "div", &bad, NULL), KD_ETYPE,
                "kernel for 'sigm::div' (Meta) registered at plugin.c:30 has signature (int, "
                "float, bool) -> (int, Tensor), which does not match the schema of 'sigm::div' (5 "
                "differences): " MISMATCHES);
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("sigm::div", "", &op));
  listing l = {0};
  kd_op_kernels_foreach(op, list_kernel, &l);
  assert_int_equal(l.n, 0); /* refused: nothing registered */
  kd_library_close(meta);
  kd_library_close(def);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_impl_before_def),
      cmocka_unit_test(test_set_aside_slot_falls_through),
      cmocka_unit_test(test_impl_after_def),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
