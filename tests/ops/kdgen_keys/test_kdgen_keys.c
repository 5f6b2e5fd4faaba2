/*
 * test_kdgen_keys.c: kdgen registers every key of the runtime, each kernel at
 * its own key. tests/kdgen/gen/keys_runtime.yaml is generated at build time
 * with `kdgen --namespace kdgkeys` and linked into this program, which
 * writes the kernels the generated native headers declare:
 *
 *   kdgk_twice      structured (CPU impl), SparseCPU kernel on the functional
 *                   variant, QuantizedCPU kernel on the out= variant
 *   kdgk_neg        CPU, AutogradCPU and CompositeImplicitAutogradNestedTensor
 *   kdgk_scale      CompositeExplicitAutogradNonFunctional, Autograd and
 *                   SparsePrivateUse1
 *
 * Every kernel appends its name to a trace, so a test proves which kernel a
 * call reached; the computed tables (kd_op_dump_table) are checked line by
 * line for the slots the YAML fills, with the reasons of PyTorch 1.13's fill
 * rules (docs/ARCHITECTURE.md, "How a slot is filled").
 */
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"
#include "kd/ops.h"
#include "kd/library.h"
#include "gen_support.h"
#include "kdgen_all_native.h"

kd_status kdk__kdgkeys_register(kd_library **lib);

static char trace[1024]; /* "name name ..." of the kernels that ran */

static void ran(const char *name) {
  size_t n = strlen(trace);
  snprintf(trace + n, sizeof trace - n, "%s%s", n ? " " : "", name);
}

/* The kernels below return their input (one more reference): what they
 * compute is not the point, which kernel ran is. */
static kd_status same(kd_tensor *self, kd_tensor **out) {
  kd_tensor_retain(self);
  *out = self;
  return KD_OK;
}

/* ---- The kernels kdgen declared --------------------------------------------- */

kd_status kdk_meta_kdgk_twice(kdk_structured *s, kd_tensor *self) {
  return kdk_structured_set_output(s, 0, kd_tensor_ndim(self), kd_tensor_sizes(self), NULL,
                                  kd_tensor_dtype(self));
}

kd_status kdk_native_kdgk_twice_cpu(kdk_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  (void)self;
  (void)out;
  ran("twice_cpu");
  return KD_OK;
}

kd_status kdk_native_kdgk_twice_sparse(kd_tensor *self, kd_tensor **out) {
  ran("twice_sparse");
  return same(self, out);
}

kd_status kdk_native_kdgk_twice_out_quantized(kd_tensor *self, kd_tensor *out) {
  (void)self;
  (void)out;
  ran("twice_out_quantized");
  return KD_OK;
}

kd_status kdk_native_kdgk_neg_cpu(kd_tensor *self, kd_tensor **out) {
  ran("neg_cpu");
  return same(self, out);
}

/* The pattern of an autograd kernel: record, then go on below the autograd
 * keys with the tensor's own key set. */
kd_status kdk_native_kdgk_neg_autograd_cpu(kd_tensor *self, kd_tensor **out) {
  ran("neg_autograd_cpu");
  return kd_redispatch_kdgk_neg(kd_keyset_below(kd_tensor_key_set(self), KD_KEY_AUTOGRAD_CPU), self,
                                out);
}

kd_status kdk_native_kdgk_neg_nested(kd_tensor *self, kd_tensor **out) {
  ran("neg_nested");
  return same(self, out);
}

kd_status kdk_native_kdgk_scale(kd_tensor *self, kd_tensor **out) {
  ran("scale");
  return same(self, out);
}

kd_status kdk_native_kdgk_scale_autograd(kd_tensor *self, kd_tensor **out) {
  ran("scale_autograd");
  kd_keyset ks = kd_tensor_key_set(self);
  return kd_redispatch_kdgk_scale(kd_keyset_below(ks, kd_keyset_highest(ks & kd_keyset_autograd())),
                                  self, out);
}

kd_status kdk_native_kdgk_scale_sparse_pu1(kd_tensor *self, kd_tensor **out) {
  ran("scale_sparse_pu1");
  return same(self, out);
}

/* ---- Fixtures ------------------------------------------------------------------- */

static kd_library *lib;

static int setup(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  KD_ASSERT_OK(kdk__kdgkeys_register(&lib));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_library_close(lib);
  return 0;
}

static kd_tensor *tensor_on(kd_device_type type) {
  kd_tensor *t = NULL;
  int64_t n = 2;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, (kd_device){type, 0}, &t));
  return t;
}

/* Fails unless the computed table of kdgkeys::NAME has every line of want[]. */
static void expect_table(const char *name, const char *overload, const char *const *want,
                         size_t n) {
  kd_op *op = NULL;
  KD_ASSERT_OK(kd_op_find(name, overload, &op));
  size_t len = kd_op_dump_table(op, NULL, 0);
  char *buf = malloc(len + 1);
  assert_non_null(buf);
  kd_op_dump_table(op, buf, len + 1);
  for (size_t i = 0; i < n; i++)
    if (!strstr(buf, want[i])) fail_msg("the table lacks \"%s\":\n%s", want[i], buf);
  free(buf);
}

#define KSET(k) ((kd_keyset)1 << KD_KEY_##k)

/* ---- Tests ---------------------------------------------------------------------- */

/* AutogradCPU has its own kernel: a CPU tensor (which carries AutogradCPU)
 * reaches it first, and it redispatches to CPU. */
static void test_autograd_cpu_kernel(void **state) {
  (void)state;
  kd_tensor *x = tensor_on(KD_DEVICE_CPU), *y = NULL;
  trace[0] = 0;
  KD_ASSERT_OK(kd_kdgk_neg(x, &y));
  assert_string_equal(trace, "neg_autograd_cpu neg_cpu");
  assert_ptr_equal(y, x);
  kd_tensor_release(y);
  /* in inference mode the autograd keys are excluded: the CPU kernel only */
  trace[0] = 0;
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  KD_ASSERT_OK(kd_kdgk_neg(x, &y));
  kd_inference_mode_exit(g);
  assert_string_equal(trace, "neg_cpu");
  kd_tensor_release(y);
  /* Meta has no kernel: AutogradMeta falls through to an empty slot */
  kd_tensor *m = tensor_on(KD_DEVICE_META);
  trace[0] = 0;
  KD_ASSERT_ERR(kd_kdgk_neg(m, &y), KD_ENOKERNEL, "'kdgkeys::kdgk_neg'");
  assert_string_equal(trace, "");
  assert_null(y);
  kd_tensor_release(m);
  kd_tensor_release(x);
  static const char *const want[] = {
      "  CPU: unboxed+boxed [kernel] from gen/keys_runtime.yaml:21\n",
      "  NestedTensorCPU: unboxed+boxed [nested kernel] from gen/keys_runtime.yaml:23\n",
      "  NestedTensorPrivateUse1: unboxed+boxed [nested kernel] from gen/keys_runtime.yaml:23\n",
      "  AutogradCPU: unboxed+boxed [kernel] from gen/keys_runtime.yaml:22\n",
      "  AutogradMeta: fallthrough [backend fallback] from kdispatch (built-in autograd fallthrough)\n",
      "  AutogradNestedTensor: unboxed+boxed [nested kernel] from gen/keys_runtime.yaml:23\n",
  };
  expect_table("kdgkeys::kdgk_neg", "", want, sizeof want / sizeof *want);
}

/* CompositeImplicitAutogradNestedTensor fills the NestedTensor keys and
 * AutogradNestedTensor, not the dense ones. */
static void test_nested_kernel(void **state) {
  (void)state;
  kd_tensor *x = tensor_on(KD_DEVICE_CPU), *y = NULL;
  const kd_keyset nested[] = {KSET(NESTED_TENSOR_CPU), KSET(NESTED_TENSOR_META),
                                     KSET(AUTOGRAD_NESTED_TENSOR) | KSET(NESTED_TENSOR_CPU)};
  for (size_t i = 0; i < sizeof nested / sizeof *nested; i++) {
    trace[0] = 0;
    KD_ASSERT_OK(kd_redispatch_kdgk_neg(nested[i], x, &y));
    assert_string_equal(trace, "neg_nested");
    kd_tensor_release(y);
  }
  /* no composite for the dense keys: CUDA has no kernel */
  KD_ASSERT_ERR(kd_redispatch_kdgk_neg(KSET(CUDA), x, &y), KD_ENOKERNEL, "'CUDA' backend");
  assert_null(y);
  kd_tensor_release(x);
}

/* Autograd (the alias) fills every Autograd<B> slot; its kernel goes on below
 * to the CompositeExplicitAutogradNonFunctional kernel, which fills the dense,
 * Quantized and SparseCsr keys but not the Sparse ones. */
static void test_autograd_alias_and_noncomposite(void **state) {
  (void)state;
  static const kd_device_type types[] = {KD_DEVICE_CPU, KD_DEVICE_META};
  kd_tensor *y = NULL;
  for (size_t i = 0; i < 2; i++) {
    kd_tensor *x = tensor_on(types[i]);
    trace[0] = 0;
    KD_ASSERT_OK(kd_kdgk_scale(x, &y));
    assert_string_equal(trace, "scale_autograd scale");
    kd_tensor_release(y);
    kd_tensor_release(x);
  }
  kd_tensor *x = tensor_on(KD_DEVICE_CPU);
  const kd_keyset composite[] = {KSET(QUANTIZED_CPU), KSET(SPARSE_CSR_CUDA),
                                        KSET(PRIVATEUSE2)};
  for (size_t i = 0; i < sizeof composite / sizeof *composite; i++) {
    trace[0] = 0;
    KD_ASSERT_OK(kd_redispatch_kdgk_scale(composite[i], x, &y));
    assert_string_equal(trace, "scale");
    kd_tensor_release(y);
  }
  /* SparsePrivateUse1 has its own kernel; the other Sparse keys none */
  trace[0] = 0;
  KD_ASSERT_OK(kd_redispatch_kdgk_scale(KSET(SPARSE_PRIVATEUSE1), x, &y));
  assert_string_equal(trace, "scale_sparse_pu1");
  kd_tensor_release(y);
  KD_ASSERT_ERR(kd_redispatch_kdgk_scale(KSET(SPARSE_CPU), x, &y), KD_ENOKERNEL,
                "'SparseCPU' backend");
  assert_null(y);
  /* the direct call of CPU takes the composite kernel, without the dispatcher */
  trace[0] = 0;
  KD_ASSERT_OK(kd_cpu_kdgk_scale(x, &y));
  assert_string_equal(trace, "scale");
  kd_tensor_release(y);
  kd_tensor_release(x);
  static const char *const want[] = {
      "  Undefined: unboxed+boxed [default backend kernel] from gen/keys_runtime.yaml:27\n",
      "  CPU: unboxed+boxed [default backend kernel] from gen/keys_runtime.yaml:27\n",
      "  QuantizedMeta: unboxed+boxed [default backend kernel] from gen/keys_runtime.yaml:27\n",
      "  SparsePrivateUse1: unboxed+boxed [kernel] from gen/keys_runtime.yaml:29\n",
      "  SparseCsrCPU: unboxed+boxed [default backend kernel] from gen/keys_runtime.yaml:27\n",
      "  AutogradOther: unboxed+boxed [autograd kernel] from gen/keys_runtime.yaml:28\n",
      "  AutogradCPU: unboxed+boxed [autograd kernel] from gen/keys_runtime.yaml:28\n",
      "  AutogradPrivateUse3: unboxed+boxed [autograd kernel] from gen/keys_runtime.yaml:28\n",
  };
  expect_table("kdgkeys::kdgk_scale", "", want, sizeof want / sizeof *want);
}

/* A structured group's Sparse and Quantized kernels: the functional
 * variant's SparseCPU kernel, the out= variant's QuantizedCPU kernel (with
 * the out function's parameters), beside the structured CPU wrapper. */
static void test_structured_group_keys(void **state) {
  (void)state;
  kd_tensor *x = tensor_on(KD_DEVICE_CPU), *y = NULL;
  trace[0] = 0;
  KD_ASSERT_OK(kd_kdgk_twice(x, &y));
  assert_string_equal(trace, "twice_cpu");
  kd_tensor_release(y);
  trace[0] = 0;
  KD_ASSERT_OK(kd_redispatch_kdgk_twice(KSET(SPARSE_CPU), x, &y));
  assert_string_equal(trace, "twice_sparse");
  kd_tensor_release(y);
  kd_tensor *o = tensor_on(KD_DEVICE_CPU);
  trace[0] = 0;
  KD_ASSERT_OK(kd_redispatch_kdgk_twice_out(KSET(QUANTIZED_CPU), x, o));
  assert_string_equal(trace, "twice_out_quantized");
  /* the functional variant has no QuantizedCPU kernel, the out= one no SparseCPU one */
  KD_ASSERT_ERR(kd_redispatch_kdgk_twice(KSET(QUANTIZED_CPU), x, &y), KD_ENOKERNEL,
                "'QuantizedCPU' backend");
  KD_ASSERT_ERR(kd_redispatch_kdgk_twice_out(KSET(SPARSE_CPU), x, o), KD_ENOKERNEL,
                "'SparseCPU' backend");
  kd_tensor_release(o);
  kd_tensor_release(x);
  static const char *const fn[] = {
      "  SparseCPU: unboxed+boxed [kernel] from gen/keys_runtime.yaml:11\n"};
  expect_table("kdgkeys::kdgk_twice", "", fn, 1);
  static const char *const out[] = {
      "  CPU: unboxed+boxed [kernel] from gen/keys_runtime.yaml:16\n",
      "  QuantizedCPU: unboxed+boxed [kernel] from gen/keys_runtime.yaml:17\n"};
  expect_table("kdgkeys::kdgk_twice", "out", out, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_autograd_cpu_kernel),
      cmocka_unit_test(test_nested_kernel),
      cmocka_unit_test(test_autograd_alias_and_noncomposite),
      cmocka_unit_test(test_structured_group_keys),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
