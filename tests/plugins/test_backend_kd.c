/* kd and plugins: kd --load PLUGIN (before or after the command, repeated),
 * KD_BACKENDS, and a plugin that cannot be loaded. kd links the shared
 * libkdispatch, so the plugin registers into kd's own registry: its operator
 * shows in kd ops, kd table and kd kernels, and kd call runs it. */
#include "kd_test.h"

static char *kd(const char *env, const char *args, int *status) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s '%s/kd' %s 2>&1 </dev/null", env, KD_BIN_DIR, args);
  return kd_test_run(cmd, status);
}

static void expect(const char *env, const char *args, int want_status, const char *needle) {
  int status;
  char *out = kd(env, args, &status);
  if (status != want_status || !strstr(out, needle))
    fail_msg("kd %s: exit %d (expected %d), output does not contain \"%s\":\n%s", args, status,
             want_status, needle, out);
  free(out);
}

static void test_load_option(void **state) {
  (void)state;
  const char *P = KD_PLUGIN_GOOD;
  char args[1024];
  /* Without it, the plugin's operator does not exist. */
  expect("", "table plug::hello", 1, "plug::hello");
  snprintf(args, sizeof args, "--load '%s' ops", P);
  expect("", args, 0, "plug::hello\thello(Tensor self) -> Tensor");
  snprintf(args, sizeof args, "ops --load='%s'", P);
  expect("", args, 0, "plug::hello\thello(Tensor self) -> Tensor");
  snprintf(args, sizeof args, "--load '%s' table plug::hello", P);
  expect("", args, 0, "  PrivateUse1: unboxed [kernel] from " KD_PLUGIN_GOOD);
  snprintf(args, sizeof args, "kernels --load '%s' plug::hello", P);
  expect("", args, 0, "PrivateUse1                ALL_LAYOUT ALL_DTYPE  unboxed  " KD_PLUGIN_GOOD);
  snprintf(args, sizeof args, "--load '%s' call plug::hello '[1.5, 2.5]'", P);
  expect("", args, 0, "tensor([1.5000, 2.5000])");
  /* And in the little language. */
  snprintf(args, sizeof args, "run --load '%s' -e 'print(plug::hello([1.5, 2.5]))'", P);
  expect("", args, 0, "tensor([1.5000, 2.5000])");
  /* Two plugins claiming one device type: the second is refused. */
  snprintf(args, sizeof args, "--load '%s' --load '%s' ops", P, KD_PLUGIN_TAKEN);
  expect("", args, 1, "the type already has the backend 'plugdev'");
  expect("", "--load /nonexistent/p.so ops", 1,
         "kd: kd_backend_load: cannot open the plugin /nonexistent/p.so");
  expect("", "ops --load", 2, "kd: --load needs a plugin path");
}

static void test_kd_backends(void **state) {
  (void)state;
  char env[1024];
  snprintf(env, sizeof env, "KD_BACKENDS='/nonexistent/a.so:%s'", KD_PLUGIN_GOOD);
  /* A failure is warned; the next one loads, and kd runs. */
  expect(env, "ops", 0, "KD_BACKENDS: kd_backend_load: cannot open the plugin /nonexistent/a.so");
  expect(env, "ops", 0, "plug::hello\thello(Tensor self) -> Tensor");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_option),
      cmocka_unit_test(test_kd_backends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
