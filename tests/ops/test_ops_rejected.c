/*
 * test_ops_rejected.c: a plugin's kernel for aten::add.Tensor whose C
 * signature does not fit the schema, registered before kd_ops_open() (the
 * plugin was loaded first), does not make kd_ops_open() fail: the kernel is
 * set aside, reported against its own registration, and every operator
 * works. (Before, kd_ops_open failed for good.) Nothing may call an
 * operator before the first test: the entry points open the library.
 */
#include "kd_test.h"
#include "kd/library.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static char warnings[4096];
static int nwarnings;
static void on_warning(const char *msg, void *ud) {
  (void)ud;
  if (strstr(msg, "set aside")) {
    snprintf(warnings, sizeof warnings, "%s", msg);
    nwarnings++;
  }
}

static kd_status k_bad(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)a;
  r[0] = kd_value_int(-1); /* never called */
  return KD_OK;
}

static int find_rejected(const kd_kernel_info *ki, void *ud) {
  if (ki->rejected && ki->key == KD_KEY_PRIVATEUSE1) {
    snprintf(ud, 1024, "%s", ki->rejected);
    return 1;
  }
  return 0;
}

static void test_mismatched_plugin_kernel_before_open(void **state) {
  (void)state;
  kd_set_warning_handler(on_warning, NULL);
  kd_library *plugin;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE1, "plugin.c", 7,
                               &plugin));
  kd_kernel bad = kd_kernel_unboxed(k_bad, "(Tensor, int) -> int");
  KD_ASSERT_OK(kd_library_impl(plugin, "add.Tensor", &bad, NULL)); /* not defined yet */

  KD_ASSERT_OK(kd_ops_open());
  assert_int_equal(nwarnings, 1);
  if (!strstr(warnings,
              "kernel for 'aten::add.Tensor' (PrivateUse1) registered at plugin.c:7 has "
              "signature (Tensor, int) -> int, which does not match the schema of "
              "'aten::add.Tensor' (3 differences): argument 1 'other' is Tensor in the schema "
              "but int in the kernel; the schema has 3 arguments, the kernel 2; return 0 is "
              "Tensor in the schema but int in the kernel"))
    fail_msg("warning: %s", warnings);

  /* add itself and the other operators work on the CPU. */
  int64_t n = 3;
  kd_tensor *a, *sum = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_INT64, kd_device_cpu(), &a));
  for (int64_t i = 0; i < n; i++) {
    kd_scalar s = kd_scalar_int(i + 1);
    KD_ASSERT_OK(kd_tensor_set(a, &i, &s));
  }
  kd_scalar two = kd_scalar_int(2);
  KD_ASSERT_OK(kd_add_Tensor(a, a, &two, &sum));
  int64_t i = 2;
  kd_scalar got;
  KD_ASSERT_OK(kd_tensor_get(sum, &i, &got));
  assert_int_equal(got.v.i, 9);
  kd_tensor *neg = NULL;
  KD_ASSERT_OK(kd_neg(a, &neg));
  kd_tensor_release(neg);
  kd_tensor_release(sum);
  kd_tensor_release(a);

  kd_op *op;
  KD_ASSERT_OK(kd_op_find("aten::add", "Tensor", &op));
  char why[1024] = "";
  assert_int_equal(kd_op_kernels_foreach(op, find_rejected, why), 1);
  assert_non_null(strstr(why, "registered at plugin.c:7"));
  KD_ASSERT_OK(kd_dispatcher_check());

  /* Closing and opening libkdops again (the definition goes and comes back)
   * keeps the plugin's kernel set aside, and opening works again. */
  kd_ops_close();
  KD_ASSERT_OK(kd_ops_open());
  why[0] = '\0';
  assert_int_equal(kd_op_kernels_foreach(op, find_rejected, why), 1);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(plugin);
  why[0] = '\0';
  assert_int_equal(kd_op_kernels_foreach(op, find_rejected, why), 0);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_set_warning_handler(NULL, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mismatched_plugin_kernel_before_open),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
