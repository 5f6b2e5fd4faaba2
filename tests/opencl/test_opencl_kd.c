/*
 * test_opencl_kd.c: the OpenCL plugin in `kd` (issue 18, "Usable"): kd
 * --load and KD_BACKENDS bring it in; tensors move to opencl with to(x,
 * "opencl") or to(x, device="opencl"); x + y runs the backend's kernel and printing copies the
 * result back; kd table and kd kernels show the backend's kernels (with the
 * YAML line that made them) and the CPU fallback's count for an operator it
 * does not cover; a device that does not exist is an error.
 *
 *   test_opencl_kd PLUGIN
 *
 * Runs the kd binary (KD_BIN_DIR/kd). Skipped (77) without an OpenCL
 * platform.
 */
#include "kd_test.h"
#include "opencl_test_util.h"

static const char *P;

static char *kd(const char *env, const char *args, int *status) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s '%s/kd' %s 2>&1 </dev/null", env, KD_BIN_DIR, args);
  return kd_test_run(cmd, status);
}

/* kd ARGS (with --load P first when load) exits with want_status and its
 * output contains every needle (NULL-terminated). */
static void expect(const char *env, bool load, const char *args, int want_status, ...) {
  char full[3072];
  snprintf(full, sizeof full, "%s%s%s %s", load ? "--load '" : "", load ? P : "", load ? "'" : "",
           args);
  int status;
  char *out = kd(env, full, &status);
  if (status != want_status) fail_msg("kd %s: exit %d, expected %d:\n%s", full, status, want_status, out);
  va_list ap;
  va_start(ap, want_status);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    if (!strstr(out, needle)) {
      va_end(ap);
      fail_msg("kd %s: the output does not contain \"%s\":\n%s", full, needle, out);
    }
  va_end(ap);
  free(out);
}

static void test_run_on_opencl(void **state) {
  (void)state;
  /* to(x, "opencl") (the form) and to(x, device="opencl:0"), x + y on
   * the device, printed (a copy to the host). */
  expect("", true,
         "run -e 'x = to(tensor([1.0, 2.0, 3.0]), \"opencl\")' "
         "-e 'y = to(tensor([10.0, 20.0, 30.0]), device=\"opencl:0\")' -e 'print(x + y)' "
         "-e 'print(sum(x * y))'",
         0, "tensor([11., 22., 33.], device='opencl:0')", "tensor(140., device='opencl:0')",
         NULL);
  /* Broadcasting, an integer dtype, and a result moved back with to(). */
  expect("", true,
         "run -e 'a = to(arange(6), \"opencl\")' -e 'print(to(a * 2 + 1, \"cpu\"))'",
         0, "tensor([ 1,  3,  5,  7,  9, 11])", NULL);
  /* The backend's own kernel ran: nothing fell back for add. */
  expect("", true,
         "run -e 'x = to(tensor([1.0]), device=\"opencl\")' -e 'print(x + x)' "
         "-e 'table(\"aten::add.Tensor\")'",
         0, "tensor([2.], device='opencl:0')", "PrivateUse1: unboxed [kernel] from ", NULL);
}

static void test_table_and_kernels(void **state) {
  (void)state;
  /* The kernel, the YAML entry that generated it (relative to the backend's
   * folder: no path of the build machine) and its strategy. */
  expect("", true, "table aten::add.Tensor", 0, "PrivateUse1: unboxed [kernel] from opencl.yaml:",
         " (Legacy, structured)", NULL);
  expect("", true, "table aten::mm", 0, "PrivateUse1: unboxed [kernel] from opencl.yaml:",
         " (Customized, unstructured)", NULL);
  expect("", true, "table aten::sum.dim_IntList", 0, "from opencl.yaml:", " (LegacyMeta)", NULL);
  expect("", true, "table aten::_softmax", 0, "from opencl.yaml:", " (Customized, structured)",
         NULL);
  expect("", true, "kernels aten::add.Tensor", 0, "PrivateUse1", "opencl.yaml:", NULL);
  expect("", true, "kernels aten::sum.dim_IntList", 0, "PrivateUse1", NULL);
  /* Without the plugin there is no PrivateUse1 kernel. */
  int status;
  char *out = kd("", "table aten::add.Tensor", &status);
  assert_int_equal(status, 0);
  assert_null(strstr(out, "opencl.yaml"));
  free(out);
  /* An operator the YAML does not list runs through the CPU fallback, counted in the table. */
  expect("", true,
         "run -e 'x = to(tensor([[1.0, 2.0], [3.0, 4.0]]), device=\"opencl\")' "
         "-e 'print(cumsum(x, 1))' -e 'table(\"aten::cumsum\")'",
         0, "[3., 7.]], device='opencl:0')", "cpu fallback: PrivateUse1 1 call", NULL);
}

static void test_backends_env_and_errors(void **state) {
  (void)state;
  char env[1024];
  snprintf(env, sizeof env, "KD_BACKENDS='%s'", P);
  expect(env, false, "run -e 'print(to(arange(3), device=\"opencl\") * 2)'", 0,
         "tensor([0, 2, 4], device='opencl:0')", NULL);
  /* A device index the platform does not have. */
  expect("", true, "run -e 'to(tensor([1.0]), device=\"opencl:7\")'", 1, "opencl:7",
         "does not exist", NULL);
  expect("", true, "run -e 'to(tensor([1.0]), \"opencl:7\")'", 1, "opencl:7", "does not exist",
         NULL);
  /* Without the plugin, "opencl" names no device: the string is no Device. */
  expect("", false, "run -e 'to(tensor([1.0]), device=\"opencl\")'", 1,
         "argument 'device' must be Device, not str", NULL);
  expect("", false, "run -e 'to(tensor([1.0]), \"opencl\")'", 1,
         "argument 'device' (position 2) must be Device, not str", NULL);
}

int main(int argc, char **argv) {
  int r = kdcl_test_main_start(argc, argv, &P, NULL, NULL);
  if (r >= 0) return r;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_on_opencl),
      cmocka_unit_test(test_table_and_kernels),
      cmocka_unit_test(test_backends_env_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
