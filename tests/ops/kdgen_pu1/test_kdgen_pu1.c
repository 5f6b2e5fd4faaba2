/*
 * test_kdgen_pu1.c: kdgen's in-tree generation for a key other than CPU and
 * Meta, in a namespace other than aten. tests/kdgen/gen/pu1.yaml is
 * generated at build time with `kdgen --namespace kdgtest` and linked into
 * this program, which writes the kernels the generated native header
 * declares: kdgt_twice (structured: one meta, a CPU and a PrivateUse1 impl)
 * and kdgt_halves (unstructured, PrivateUse1 only, returning Tensor[]).
 *
 * The PrivateUse1 device is host memory (a test allocator). Each impl
 * counts its calls, so a test proves which wrapper the dispatcher reached:
 * the PrivateUse1 wrapper for tensors of that device, the CPU one for CPU
 * tensors, the meta-only one for meta tensors.
 */
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"
#include "kd/ops.h"
#include "kd/library.h"
#include "gen_support.h"
#include "kdgen_all_native.h"

kd_status kdk__kdgtest_register(kd_library **lib);

static int cpu_calls, pu1_calls, halves_calls;

/* ---- The kernels kdgen declared (ops/kdgt_twice_native.h) ---------------- */

kd_status kdk_meta_kdgt_twice(kdk_structured *s, kd_tensor *self) {
  if (kd_tensor_dtype(self) != KD_FLOAT32)
    return kd_set_error(KD_ETYPE, "kdgt_twice: expected float32, got %s",
                        kd_dtype_name(kd_tensor_dtype(self)));
  return kdk_structured_set_output(s, 0, kd_tensor_ndim(self), kd_tensor_sizes(self), NULL,
                                  KD_FLOAT32);
}

static kd_status twice_loop(kd_tensor *self, kd_tensor *out) {
  if (!kd_tensor_is_contiguous(self) || !kd_tensor_is_contiguous(out))
    return kd_set_error(KD_EINVAL, "kdgt_twice: contiguous tensors only");
  const float *x = kd_tensor_data(self);
  float *y = kd_tensor_data(out);
  for (int64_t i = 0; i < kd_tensor_numel(self); i++) y[i] = 2 * x[i];
  return KD_OK;
}

kd_status kdk_native_kdgt_twice_cpu(kdk_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  cpu_calls++;
  assert_int_equal(kd_tensor_device(out).type, KD_DEVICE_CPU);
  return twice_loop(self, out);
}

kd_status kdk_native_kdgt_twice_pu1(kdk_structured *s, kd_tensor *self, kd_tensor *out) {
  (void)s;
  pu1_calls++;
  assert_int_equal(kd_tensor_device(out).type, KD_DEVICE_PRIVATEUSE1);
  return twice_loop(self, out);
}

/* Two references to self: the list plumbing, not the values, is tested. */
kd_status kdk_native_kdgt_halves_pu1(kd_tensor *self, kd_tensor_list *out) {
  halves_calls++;
  kd_tensor **data = kd_host_malloc(2 * sizeof *data);
  if (!data) return kd_set_error(KD_ENOMEM, "kdgt_halves: out of memory");
  data[0] = data[1] = self;
  kd_tensor_retain(self);
  kd_tensor_retain(self);
  *out = (kd_tensor_list){data, 2};
  return KD_OK;
}

/* ---- The device --------------------------------------------------------------- */

static void *h_alloc(void *ctx, kd_device d, size_t n) {
  (void)ctx;
  (void)d;
  return malloc(n ? n : 1);
}
static void h_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)ctx;
  (void)d;
  (void)n;
  free(p);
}
static kd_status h_copy(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}

static const kd_device PU1 = {KD_DEVICE_PRIVATEUSE1, 0};
static kd_library *lib;

static int setup(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, h_alloc, h_free, NULL, h_copy, h_copy};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a));
  KD_ASSERT_OK(kdk__kdgtest_register(&lib));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_library_close(lib);
  return 0;
}

static kd_tensor *f32(kd_device dev, int64_t n, float start) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, dev, &t));
  if (dev.type != KD_DEVICE_META) {
    float *p = kd_tensor_data(t);
    for (int64_t i = 0; i < n; i++) p[i] = start + (float)i;
  }
  return t;
}

static void expect_f32(const kd_tensor *t, kd_device_type type, const float *want, int64_t n) {
  assert_int_equal(kd_tensor_device(t).type, type);
  assert_int_equal(kd_tensor_numel(t), n);
  const float *p = kd_tensor_data(t);
  for (int64_t i = 0; i < n; i++) assert_float_equal(p[i], want[i], 0);
}

/* ---- Tests ---------------------------------------------------------------------- */

static void test_structured_privateuse1(void **state) {
  (void)state;
  cpu_calls = pu1_calls = 0;
  kd_tensor *x = f32(PU1, 3, 1), *y = NULL; /* [1 2 3] */
  KD_ASSERT_OK(kd_kdgt_twice(x, &y));      /* functional: a new PrivateUse1 tensor */
  expect_f32(y, KD_DEVICE_PRIVATEUSE1, (float[]){2, 4, 6}, 3);
  assert_int_equal(pu1_calls, 1);
  assert_int_equal(cpu_calls, 0);
  KD_ASSERT_OK(kd_kdgt_twice_out(y, x)); /* out: x = 2y */
  expect_f32(x, KD_DEVICE_PRIVATEUSE1, (float[]){4, 8, 12}, 3);
  KD_ASSERT_OK(kd_kdgt_twice_(x)); /* inplace */
  expect_f32(x, KD_DEVICE_PRIVATEUSE1, (float[]){8, 16, 24}, 3);
  assert_int_equal(pu1_calls, 3);
  kd_tensor_release(y);
  /* the direct call of the PrivateUse1 wrapper, without the dispatcher */
  KD_ASSERT_OK(kd_privateuse1_kdgt_twice(x, &y));
  expect_f32(y, KD_DEVICE_PRIVATEUSE1, (float[]){16, 32, 48}, 3);
  assert_int_equal(pu1_calls, 4);
  kd_tensor_release(y);
  /* the meta shared by both impls checks for both keys */
  kd_tensor *i = NULL;
  int64_t n = 2;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_INT64, PU1, &i));
  KD_ASSERT_ERR(kd_kdgt_twice(i, &y), KD_ETYPE, "kdgt_twice: expected float32, got int64");
  assert_null(y);
  assert_int_equal(pu1_calls, 4);
  kd_tensor_release(i);
  kd_tensor_release(x);
}

static void test_structured_cpu_and_meta(void **state) {
  (void)state;
  cpu_calls = pu1_calls = 0;
  kd_tensor *x = f32(kd_device_cpu(), 2, 5), *y = NULL;
  KD_ASSERT_OK(kd_kdgt_twice(x, &y));
  expect_f32(y, KD_DEVICE_CPU, (float[]){10, 12}, 2);
  assert_int_equal(cpu_calls, 1);
  assert_int_equal(pu1_calls, 0);
  kd_tensor_release(y);
  /* a CPU out for a PrivateUse1 input: the structured protocol's device check */
  kd_tensor *p = f32(PU1, 2, 0);
  KD_ASSERT_ERR(kd_kdgt_twice_out(p, x), KD_EINVAL, "kdgtest::kdgt_twice.out");
  kd_tensor_release(p);
  kd_tensor_release(x);
  /* meta: the generated Meta wrapper runs the meta function only */
  kd_tensor *m = f32((kd_device){KD_DEVICE_META, 0}, 4, 0);
  KD_ASSERT_OK(kd_kdgt_twice(m, &y));
  assert_int_equal(kd_tensor_device(y).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_sizes(y)[0], 4);
  assert_int_equal(cpu_calls + pu1_calls, 1);
  kd_tensor_release(y);
  kd_tensor_release(m);
}

static void test_boxed_and_list(void **state) {
  (void)state;
  pu1_calls = halves_calls = 0;
  kd_op *op = NULL;
  KD_ASSERT_OK(kd_op_find("kdgtest::kdgt_twice", "", &op));
  kd_tensor *x = f32(PU1, 2, 1);
  kd_stack st;
  kd_stack_init(&st);
  KD_ASSERT_OK(kd_stack_push_tensor(&st, x));
  KD_ASSERT_OK(kd_call_boxed(op, &st));
  assert_int_equal(st.size, 1);
  expect_f32(kd_stack_peek(&st, 0)->u.t, KD_DEVICE_PRIVATEUSE1, (float[]){2, 4}, 2);
  assert_int_equal(pu1_calls, 1);
  kd_stack_free(&st);
  /* Tensor[] through the PrivateUse1 kernel */
  kd_tensor_list l = {NULL, 0};
  KD_ASSERT_OK(kd_kdgt_halves(x, &l));
  assert_int_equal(l.size, 2);
  assert_ptr_equal(l.data[0], x);
  assert_ptr_equal(l.data[1], x);
  assert_int_equal(kd_tensor_refcount(x), 3);
  kd_tensor_list_free(&l);
  assert_int_equal(kd_tensor_refcount(x), 1);
  assert_int_equal(halves_calls, 1);
  /* no CPU kernel: an error naming the operator, not a crash */
  kd_tensor *c = f32(kd_device_cpu(), 2, 1);
  KD_ASSERT_ERR(kd_kdgt_halves(c, &l), KD_ENOKERNEL, "kdgtest::kdgt_halves");
  assert_null(l.data);
  assert_int_equal(halves_calls, 1);
  kd_tensor_release(c);
  kd_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structured_privateuse1),
      cmocka_unit_test(test_structured_cpu_and_meta),
      cmocka_unit_test(test_boxed_and_list),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
