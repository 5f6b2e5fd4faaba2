/*
 * test_opencl_reload.c: the OpenCL plugin unloaded while idle and loaded
 * again in one process (issue 18, "Proof"), and the loader's refusals.
 *
 *   test_opencl_reload PLUGIN
 *
 * Three rounds of: load, run operators (results checked against the CPU),
 * free every tensor (the last kernels may still be queued: unload must wait
 * for them), unload, check that nothing of the backend is left (the device
 * type lost its name, no devices, no PrivateUse1 kernel for add). Loading it
 * a second time while loaded is refused and changes nothing; unloading while a
 * tensor lives is KD_EBUSY and changes nothing. Under AddressSanitizer the
 * rounds are also the leak check: tests/opencl/lsan.supp suppresses only
 * PoCL's and the ICD loader's own allocations. Skipped (77) without an
 * OpenCL platform.
 */
#include <math.h>

#include <kd/ops.h>

#include "kd_test.h"
#include "opencl_test_util.h"

static const char *g_plugin_path;

static kd_device opencl0(void) {
  kd_device d = {KD_DEVICE_PRIVATEUSE1, 0};
  return d;
}

/* A cpu float32 tensor of n values k * 0.25 - 1. Owned. */
static kd_tensor *ramp(int64_t r, int64_t c) {
  int64_t sz[2] = {r, c};
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(2, sz, KD_FLOAT32, kd_device_cpu(), &t));
  float *v = kd_tensor_data(t);
  for (int64_t k = 0; k < r * c; k++) v[k] = (float)k * 0.25f - 1.0f;
  return t;
}

/* d (on opencl) equals c (cpu float32) within 1e-5 relative. */
static void assert_same(kd_tensor *c, kd_tensor *d) {
  assert_int_equal(kd_tensor_device(d).type, KD_DEVICE_PRIVATEUSE1);
  kd_tensor *h = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(d, kd_device_cpu(), &h));
  assert_int_equal(kd_tensor_numel(h), kd_tensor_numel(c));
  assert_true(kd_tensor_is_contiguous(c));
  const float *a = kd_tensor_data(h), *b = kd_tensor_data(c);
  for (int64_t i = 0; i < kd_tensor_numel(c); i++)
    if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-5f * fabsf(b[i])))
      fail_msg("element %lld: %g on opencl, %g on the cpu", (long long)i, a[i], b[i]);
  kd_tensor_release(h);
}

/* Runs add, sum, mm on opencl:0 and on the cpu; frees everything. Leaves a
 * large add queued whose result is freed at once. */
static void run_ops(void) {
  kd_tensor *a = ramp(16, 16), *b = ramp(16, 16), *ad, *bd, *rc, *rd;
  KD_ASSERT_OK(kd_tensor_to_device(a, opencl0(), &ad));
  KD_ASSERT_OK(kd_tensor_to_device(b, opencl0(), &bd));
  KD_ASSERT_OK(kd_add_Tensor(a, b, NULL, &rc));
  KD_ASSERT_OK(kd_add_Tensor(ad, bd, NULL, &rd));
  assert_same(rc, rd);
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  KD_ASSERT_OK(kd_sum(a, NULL, &rc));
  KD_ASSERT_OK(kd_sum(ad, NULL, &rd));
  assert_same(rc, rd);
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  KD_ASSERT_OK(kd_mm(a, b, &rc));
  KD_ASSERT_OK(kd_mm(ad, bd, &rd));
  assert_same(rc, rd);
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  /* Queued and dropped: nobody waits for it but the unload. */
  kd_tensor *big, *bigd, *sumd;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1 << 20}, KD_FLOAT32, opencl0(), &big));
  kd_scalar one = kd_scalar_double(1.0);
  KD_ASSERT_OK(kd_fill_Scalar_(big, &one));
  KD_ASSERT_OK(kd_add_Tensor(big, big, NULL, &bigd));
  KD_ASSERT_OK(kd_mul_Tensor(bigd, big, &sumd));
  kd_tensor_release(big);
  kd_tensor_release(bigd);
  kd_tensor_release(sumd);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(ad);
  kd_tensor_release(bd);
}

/* Nothing of the backend is left after an unload. */
static void assert_gone(void) {
  assert_int_equal(kd_device_count(KD_DEVICE_PRIVATEUSE1), 0);
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  kd_device d;
  assert_int_not_equal(kd_device_parse("opencl:0", &d), KD_OK);
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("aten::add", "Tensor", &op));
  kd_kernel_selection sel;
  KD_ASSERT_ERR(kd_op_select_kernel(op, KD_KEY_PRIVATEUSE1, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel),
                KD_ENOKERNEL, "add");
}

static void test_unload_and_reload(void **state) {
  (void)state;
  for (int round = 0; round < 3; round++) {
    kd_plugin *p = NULL;
    KD_ASSERT_OK(kd_backend_load(g_plugin_path, &p));
    assert_non_null(p);
    assert_string_equal(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "opencl");
    assert_true(kd_device_count(KD_DEVICE_PRIVATEUSE1) >= 1);
    run_ops();
    KD_ASSERT_OK(kd_backend_unload(p));
    assert_gone();
  }
}

static void test_load_twice_refused(void **state) {
  (void)state;
  kd_plugin *p = NULL, *q = (kd_plugin *)&q;
  KD_ASSERT_OK(kd_backend_load(g_plugin_path, &p));
  KD_ASSERT_ERR(kd_backend_load(g_plugin_path, &q), KD_EEXIST, "opencl");
  assert_null(q);
  /* The first one is untouched. */
  assert_string_equal(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "opencl");
  run_ops();
  KD_ASSERT_OK(kd_backend_unload(p));
  assert_gone();
}

static void test_unload_busy(void **state) {
  (void)state;
  kd_plugin *p = NULL;
  KD_ASSERT_OK(kd_backend_load(g_plugin_path, &p));
  kd_tensor *a = ramp(4, 4), *ad;
  KD_ASSERT_OK(kd_tensor_to_device(a, opencl0(), &ad));
  KD_ASSERT_ERR(kd_backend_unload(p), KD_EBUSY, "in use");
  /* Nothing changed: the tensor and the operators still work. */
  assert_string_equal(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "opencl");
  kd_tensor *rc, *rd;
  KD_ASSERT_OK(kd_neg(a, &rc));
  KD_ASSERT_OK(kd_neg(ad, &rd));
  assert_same(rc, rd);
  kd_tensor_release(rc);
  KD_ASSERT_ERR(kd_backend_unload(p), KD_EBUSY, "2 storages");
  kd_tensor_release(rd);
  kd_tensor_release(ad);
  kd_tensor_release(a);
  KD_ASSERT_OK(kd_backend_unload(p));
  assert_gone();
}

int main(int argc, char **argv) {
  int r = kdcl_test_main_start(argc, argv, &g_plugin_path, NULL, NULL);
  if (r >= 0) return r;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unload_and_reload),
      cmocka_unit_test(test_load_twice_refused),
      cmocka_unit_test(test_unload_busy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
