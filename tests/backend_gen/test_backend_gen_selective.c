/*
 * A selective build reaches a generated backend's registration table
 * (docs/CODEGEN.md, "Backends", "Selective builds"): the proof backend
 * "fakegen" (examples/backend_gen), its generated plugin compiled with
 * `-include tests/backend_gen/fakegen_allow.h`, an allow-list that keeps
 * aten::add.Tensor (and the empty primitives) on PrivateUse1. The plugin
 * loads; add.Tensor runs on the fake device and agrees with the CPU; a
 * dropped operator (mul.Tensor, the new fakegen::scale_add) fails with
 * KD_ENOKERNEL (the plugin turns on no CPU fallback); add_stub has the
 * device loop and mul_stub none; the dropped wrappers and direct calls are
 * not in the plugin's symbol table.
 *
 *   test_backend_gen_selective path/to/libfakegen_sel.so
 */
#include <stdint.h>

#include "kd_test.h"

#include <kd/backend.h>
#include <kd/ops.h>
#include <kdk/kdk.h>

static const char *plugin_path;
static kd_plugin *plugin;

static int setup(void **state) {
  (void)state;
  if (kd_backend_load(plugin_path, &plugin)) {
    fprintf(stderr, "kd_backend_load(%s): %s\n", plugin_path, kd_last_error());
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return kd_backend_unload(plugin) ? -1 : 0;
}

static const kd_device dev0 = {KD_DEVICE_PRIVATEUSE1, 0};

static kd_tensor *cpu_values(float first) {
  kd_tensor *t;
  int64_t sizes[2] = {3, 4};
  assert_int_equal(kd_tensor_empty(2, sizes, KD_FLOAT32, kd_device_cpu(), &t), KD_OK);
  float *p = kd_tensor_data(t);
  for (int i = 0; i < 12; i++) p[i] = first + (float)(i * 7 % 5) * 0.5f;
  return t;
}

/* The kept operator runs on the device and agrees with the CPU. */
static void test_kept(void **state) {
  (void)state;
  kd_tensor *a = cpu_values(-1.25f), *b = cpu_values(2.0f), *da, *db, *dsum, *back, *want;
  assert_int_equal(kd_tensor_to_device(a, dev0, &da), KD_OK);
  assert_int_equal(kd_tensor_to_device(b, dev0, &db), KD_OK);
  kd_status st = kd_add_Tensor(da, db, NULL, &dsum);
  if (st) fail_msg("add.Tensor on the device: %s: %s", kd_status_name(st), kd_last_error());
  assert_int_equal(kd_tensor_device(dsum).type, KD_DEVICE_PRIVATEUSE1);
  assert_int_equal(kd_tensor_to_device(dsum, kd_device_cpu(), &back), KD_OK);
  assert_int_equal(kd_add_Tensor(a, b, NULL, &want), KD_OK);
  const float *g = kd_tensor_data(back), *w = kd_tensor_data(want);
  for (int i = 0; i < 12; i++) assert_float_equal(g[i], w[i], 0);
  kd_tensor *ts[] = {a, b, da, db, dsum, back, want};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) kd_tensor_release(ts[i]);
}

/* Operators the allow-list lacks have no kernel on the device. */
static void test_dropped(void **state) {
  (void)state;
  kd_tensor *a = cpu_values(0.5f), *da, *r = NULL;
  assert_int_equal(kd_tensor_to_device(a, dev0, &da), KD_OK);
  KD_ASSERT_ERR(kd_mul_Tensor(da, da, &r), KD_ENOKERNEL, "mul.Tensor");
  assert_null(r);
  if (!strstr(kd_last_error(), "PrivateUse1")) fail_msg("message lacks the key: %s", kd_last_error());
  /* The CPU keeps its kernel: only the backend's table was filtered. */
  assert_int_equal(kd_mul_Tensor(a, a, &r), KD_OK);
  kd_tensor_release(r);
  kd_tensor_release(da);
  kd_tensor_release(a);
}

/* add_stub's device loop is registered (add.Tensor's group is kept);
 * mul_stub's is not (no mul operator is). */
static void test_stubs(void **state) {
  (void)state;
  assert_non_null(kdk_stub_lookup(&KDK_STUB_OBJECT(add_stub), KD_DEVICE_PRIVATEUSE1, "aten::add.Tensor"));
  kd_clear_error();
  assert_null(kdk_stub_lookup(&KDK_STUB_OBJECT(mul_stub), KD_DEVICE_PRIVATEUSE1, "aten::mul.Tensor"));
  if (!strstr(kd_last_error(), "mul_stub")) fail_msg("message lacks the stub: %s", kd_last_error());
}

/* The wrappers and direct calls of dropped operators were not compiled. */
static void test_symbols(void **state) {
  (void)state;
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "nm '%s' 2>&1", plugin_path);
  int status;
  char *out = kd_test_run(cmd, &status);
  assert_int_equal(status, 0);
  if (!strstr(out, " kd_fakegen_add_Tensor\n")) fail_msg("kd_fakegen_add_Tensor missing:\n%.2000s", out);
  const char *gone[] = {" kd_fakegen_mul_Tensor\n", " kd_fakegen_neg\n", " kd_fakegen_scale_add\n",
                        " kd_fakegen_sub_out\n", " fakegen__s_mul_Tensor\n"};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
    if (strstr(out, gone[i])) fail_msg("the selective plugin has%s", gone[i]);
  free(out);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_backend_gen_selective path/to/libfakegen_sel.so\n");
    return 2;
  }
  plugin_path = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kept),
      cmocka_unit_test(test_dropped),
      cmocka_unit_test(test_stubs),
      cmocka_unit_test(test_symbols),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
