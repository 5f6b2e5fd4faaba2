/*
 * test_dispatch_device_stub.c: dispatch stubs keyed by device (kdk/stub.h,
 * issue 17). libkdops' own structured add (its meta function and impl, the
 * generated CPU wrapper registered here for PrivateUse2) runs on a tensor
 * of a test device and reaches the loop registered for that device; without
 * one it is a KD_ENOKERNEL naming the operator, the stub and the device.
 * Registration errors, the kit's ABI check, and register / unregister racing
 * with calls (named "dispatch" for the ThreadSanitizer subset of .ci/run).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "add_native.h" /* kdk__s_CPU_add_Tensor: libkdops' generated CPU wrapper */
#include "kd_test.h"
#include "kd/ops.h"
#include "kd/ops_all.h"
#include "kdk/kdk.h"

#define DEV KD_DEVICE_PRIVATEUSE2

/* expr fails with status (its message is checked after). */
#define KD_ASSERT_STATUS(expr, status) assert_int_equal((expr), (status))

static atomic_int loop_calls;

/* The device's add loop: float32 only, out = a + alpha * b over the
 * iterator (the test device's memory is host memory). */
typedef struct {
  float alpha;
} add_ctx;
static void add_loop2d(void *ctx, char **data, const int64_t *strides, int64_t n0, int64_t n1) {
  float alpha = ((add_ctx *)ctx)->alpha;
  for (int64_t j = 0; j < n1; j++)
    for (int64_t i = 0; i < n0; i++) {
      float *o = (float *)(data[0] + i * strides[0] + j * strides[3]);
      const float *a = (const float *)(data[1] + i * strides[1] + j * strides[4]);
      const float *b = (const float *)(data[2] + i * strides[2] + j * strides[5]);
      *o = *a + alpha * *b;
    }
}
static kdk_stub_fn_add_stub dev_add;
static kd_status dev_add(kdk_iter *it, const kd_scalar *alpha, const kd_scalar *unused) {
  (void)unused;
  atomic_fetch_add(&loop_calls, 1);
  if (kdk_iter_device(it).type != DEV)
    return kd_set_error(KD_EINTERNAL, "dev_add: called for another device");
  if (kdk_iter_common_dtype(it) != KD_FLOAT32)
    return kd_set_error(KD_ETYPE, "\"add_stubdev\" not implemented for '%s'",
                        kd_dtype_name(kdk_iter_common_dtype(it)));
  add_ctx c = {alpha ? (float)kd_scalar_to_double(alpha) : 1.0f};
  kdk_iter_for_each(it, add_loop2d, &c, 0);
  return KD_OK;
}

/* A loop of the unary stub's type (for the type check of the macro). */
static kdk_stub_fn_unary_stub dev_unary;
static kd_status dev_unary(kdk_iter *it, kdk_unary_op op, const kdk_unary_extra *extra) {
  (void)it, (void)op, (void)extra;
  return KD_OK;
}

/* libkdops' generated CPU wrapper of add.Tensor (meta + impl), registered
 * for the device's key: the upstream structured kernel, run on the device. */
static kd_status k_add(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  kd_scalar one = kd_scalar_int(1);
  kd_tensor *out = NULL;
  kd_status st = kdk__s_CPU_add_Tensor(a[0].t, a[1].t, a[2].s ? a[2].s : &one, &out);
  if (st) return st;
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

static int setup(void **state) {
  (void)state;
  if (kd_ops_open()) return -1;
  kd_allocator al = kd_test_host_allocator();
  if (kd_device_type_register(DEV, "stubdev", 0) || kd_allocator_set(DEV, &al)) return -1;
  kd_library *lib;
  if (kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE2, __FILE__, __LINE__, &lib))
    return -1;
  kd_kernel k = kd_kernel_unboxed(k_add, "(Tensor, Tensor, Scalar) -> Tensor");
  return kd_library_impl(lib, "add.Tensor", &k, NULL) ? -1 : 0;
}

/* A float32 tensor on the device holding v[0..n). */
static kd_tensor *on_device(const float *v, int64_t n) {
  kd_tensor *h, *d;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, kd_device_cpu(), &h));
  memcpy(kd_tensor_data(h), v, (size_t)n * sizeof(float));
  KD_ASSERT_OK(kd_tensor_to_device(h, (kd_device){DEV, 0}, &d));
  kd_tensor_release(h);
  return d;
}

static void test_upstream_add_reaches_device_loop(void **state) {
  (void)state;
  float av[5] = {1, 2, 3, 4, 5}, bv[5] = {10, 20, 30, 40, 50};
  kd_tensor *a = on_device(av, 5), *b = on_device(bv, 5), *r = NULL, *h = NULL;
  KD_ASSERT_OK(KDK_REGISTER_DEVICE_STUB(add_stub, DEV, dev_add));
  atomic_store(&loop_calls, 0);
  kd_scalar two = kd_scalar_double(2.0);
  KD_ASSERT_OK(kd_add_Tensor(a, b, &two, &r));
  assert_int_equal(atomic_load(&loop_calls), 1);
  assert_int_equal(kd_tensor_device(r).type, DEV);
  KD_ASSERT_OK(kd_tensor_to_device(r, kd_device_cpu(), &h));
  const float *p = kd_tensor_data(h);
  for (int i = 0; i < 5; i++) assert_true(p[i] == av[i] + 2.0f * bv[i]);
  kd_tensor_release(h);
  kd_tensor_release(r);
  r = NULL;

  /* the upstream meta runs as on the CPU: a shape error before any loop */
  float cv[2] = {1, 2};
  kd_tensor *c = on_device(cv, 2);
  atomic_store(&loop_calls, 0);
  KD_ASSERT_STATUS(kd_add_Tensor(a, c, &two, &r), KD_EINVAL);
  assert_non_null(strstr(kd_last_error(), "The size of tensor a (5) must match the size of tensor b (2)"));
  assert_int_equal(atomic_load(&loop_calls), 0);
  kd_tensor_release(c);

  /* the device loop's own error comes back */
  kd_tensor *ai, *bi;
  KD_ASSERT_OK(kd_tensor_to_dtype(a, KD_INT32, &ai));
  KD_ASSERT_OK(kd_tensor_to_dtype(b, KD_INT32, &bi));
  kd_scalar itwo = kd_scalar_int(2);
  KD_ASSERT_STATUS(kd_add_Tensor(ai, bi, &itwo, &r), KD_ETYPE);
  KD_ASSERT_STR_EQ(kd_last_error(), "\"add_stubdev\" not implemented for 'int32'");
  kd_tensor_release(ai);
  kd_tensor_release(bi);

  /* the CPU is untouched by the device's loop */
  kd_tensor *x = NULL, *y = NULL, *z = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(a, kd_device_cpu(), &x));
  KD_ASSERT_OK(kd_tensor_to_device(b, kd_device_cpu(), &y));
  atomic_store(&loop_calls, 0);
  KD_ASSERT_OK(kd_add_Tensor(x, y, &two, &z));
  assert_int_equal(atomic_load(&loop_calls), 0);
  assert_true(((float *)kd_tensor_data(z))[4] == 105.0f);
  kd_tensor_release(x);
  kd_tensor_release(y);
  kd_tensor_release(z);

  /* unregistered: a clear error, never a crash */
  KD_ASSERT_OK(KDK_UNREGISTER_DEVICE_STUB(add_stub, DEV));
  r = NULL;
  KD_ASSERT_STATUS(kd_add_Tensor(a, b, &two, &r), KD_ENOKERNEL);
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "aten::add.Tensor: dispatch stub add_stub has no loop for device stubdev; its "
                   "backend registers one with KDK_REGISTER_DEVICE_STUB(add_stub, ...)");
  assert_null(r);
  kd_tensor_release(a);
  kd_tensor_release(b);
}

static void test_register_errors(void **state) {
  (void)state;
  kdk_stub *add = &KDK_STUB_OBJECT(add_stub);
  KD_ASSERT_OK(KDK_REGISTER_DEVICE_STUB(add_stub, DEV, dev_add));
  KD_ASSERT_STATUS(KDK_REGISTER_DEVICE_STUB(add_stub, DEV, dev_add), KD_EEXIST);
  KD_ASSERT_STR_EQ(kd_last_error(), "kdk_stub_register_device: stub add_stub already has a loop "
                                    "for device stubdev (unregister it first)");
  KD_ASSERT_STATUS(KDK_REGISTER_DEVICE_STUB(add_stub, KD_DEVICE_CPU, dev_add), KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "kdk_stub_register_device: stub add_stub: the CPU loops are chosen by CPU "
                   "capability, not registered; register a loop for a backend's device type");
  KD_ASSERT_STATUS(KDK_REGISTER_DEVICE_STUB(add_stub, KD_DEVICE_META, dev_add), KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "kdk_stub_register_device: stub add_stub: no loops run on the meta device");
  KD_ASSERT_STATUS(kdk_stub_register_device(add, (kd_device_type)42, (kdk_stub_fn)dev_add),
                   KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "kdk_stub_register_device: stub add_stub: device type 42 is not a device type");
  KD_ASSERT_STATUS(kdk_stub_register_device(add, KD_DEVICE_PRIVATEUSE3, NULL), KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "kdk_stub_register_device: stub add_stub, device privateusethree: the loop is NULL");
  KD_ASSERT_STATUS(kdk_stub_register_device(NULL, DEV, (kdk_stub_fn)dev_add), KD_EINVAL);
  KD_ASSERT_STR_EQ(kd_last_error(), "kdk_stub_register_device: stub is NULL");
  /* one stub's slot is not another's */
  KD_ASSERT_OK(KDK_REGISTER_DEVICE_STUB(unary_stub, DEV, dev_unary));
  assert_ptr_equal(KDK_STUB_FOR(unary_stub, DEV, NULL), dev_unary);
  assert_ptr_equal(KDK_STUB_FOR(add_stub, DEV, NULL), dev_add);
  KD_ASSERT_OK(KDK_UNREGISTER_DEVICE_STUB(unary_stub, DEV));
  KD_ASSERT_OK(KDK_UNREGISTER_DEVICE_STUB(add_stub, DEV));
  KD_ASSERT_STATUS(KDK_UNREGISTER_DEVICE_STUB(add_stub, DEV), KD_ENOTFOUND);
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "kdk_stub_unregister_device: stub add_stub has no loop for device stubdev");
  /* lookups: meta and a bad type name the stub and the operator */
  assert_null(kdk_stub_lookup(add, KD_DEVICE_META, "aten::add.out"));
  KD_ASSERT_STR_EQ(kd_last_error(), "aten::add.out: dispatch stub add_stub has no loop for the "
                                    "meta device (no loops run on meta)");
  assert_int_equal(kd_last_status(), KD_ENOKERNEL);
  assert_null(kdk_stub_lookup(add, (kd_device_type)-1, "aten::add.out"));
  KD_ASSERT_STR_EQ(kd_last_error(),
                   "aten::add.out: dispatch stub add_stub has no loop for device type -1");
  /* the CPU loop is the capability's, one load after the first */
  assert_non_null(KDK_STUB_FOR(add_stub, KD_DEVICE_CPU, NULL));
  assert_ptr_equal((kdk_stub_fn)KDK_STUB_FOR(add_stub, KD_DEVICE_CPU, NULL), atomic_load(&add->cpu));
}

/* A kdk_iter or kdk_structured initialised by headers of another layout is
 * refused before anything is read from it. */
static void test_abi_check(void **state) {
  (void)state;
  kd_tensor *a;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &a));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, a);
  it.struct_size -= 8;
  char expected[256];
  snprintf(expected, sizeof expected,
           "kdk_iter of kit ABI %d, %zu bytes, but libkdops has kit ABI %d, %zu bytes: rebuild "
           "the kernel against this libkdops' headers",
           KDK_API_VERSION, sizeof(kdk_iter) - 8, KDK_API_VERSION, sizeof(kdk_iter));
  KD_ASSERT_STATUS(kdk_iter_build(&it), KD_EUNSUPPORTED);
  KD_ASSERT_STR_EQ(kd_last_error(), expected);
  kdk_iter_release(&it);

  kdk_structured s;
  kdk_structured_init(&s, "test", KDK_STRUCTURED_FUNCTIONAL, 1, NULL, kd_device_cpu());
  s.api_version = KDK_API_VERSION + 1;
  kdk_iter_init(&it, &s);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, a);
  snprintf(expected, sizeof expected,
           "kdk_structured of kit ABI %d, %zu bytes, but libkdops has kit ABI %d, %zu bytes: "
           "rebuild the kernel against this libkdops' headers",
           KDK_API_VERSION + 1, sizeof(kdk_structured), KDK_API_VERSION, sizeof(kdk_structured));
  KD_ASSERT_STATUS(kdk_iter_build(&it), KD_EUNSUPPORTED);
  KD_ASSERT_STR_EQ(kd_last_error(), expected);
  kdk_iter_release(&it);
  KD_ASSERT_STATUS(kdk_structured_set_output(&s, 0, 1, (int64_t[]){3}, NULL, KD_FLOAT32),
                   KD_EUNSUPPORTED);
  KD_ASSERT_STR_EQ(kd_last_error(), expected);
  kd_tensor_release(a);
}

/* Calls on the device while another thread registers and unregisters the
 * loop: every call either runs the loop (right result) or is KD_ENOKERNEL. */
enum { CALLERS = 3, CALLS = 300, FLIPS = 300 };
static atomic_int bad, done;
static kd_tensor *ta, *tb;

static void *caller(void *arg) {
  (void)arg;
  for (int n = 0; n < CALLS; n++) {
    kd_tensor *r = NULL, *h = NULL;
    kd_status st = kd_add_Tensor(ta, tb, NULL, &r);
    if (st == KD_OK) {
      if (kd_tensor_to_device(r, kd_device_cpu(), &h) || ((float *)kd_tensor_data(h))[1] != 22.0f)
        atomic_fetch_add(&bad, 1);
    } else if (st != KD_ENOKERNEL || !strstr(kd_last_error(), "has no loop for device stubdev")) {
      atomic_fetch_add(&bad, 1);
    }
    kd_tensor_release(h);
    kd_tensor_release(r);
  }
  atomic_fetch_add(&done, 1);
  return NULL;
}

static void test_register_races_calls(void **state) {
  (void)state;
  float av[3] = {1, 2, 3}, bv[3] = {10, 20, 30};
  ta = on_device(av, 3);
  tb = on_device(bv, 3);
  pthread_t th[CALLERS];
  for (int i = 0; i < CALLERS; i++) assert_int_equal(pthread_create(&th[i], NULL, caller, NULL), 0);
  for (int i = 0; i < FLIPS || atomic_load(&done) < CALLERS; i++) {
    if (KDK_REGISTER_DEVICE_STUB(add_stub, DEV, dev_add)) atomic_fetch_add(&bad, 1);
    if (KDK_UNREGISTER_DEVICE_STUB(add_stub, DEV)) atomic_fetch_add(&bad, 1);
  }
  for (int i = 0; i < CALLERS; i++) pthread_join(th[i], NULL);
  assert_int_equal(atomic_load(&bad), 0);
  kd_tensor_release(ta);
  kd_tensor_release(tb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_upstream_add_reaches_device_loop),
      cmocka_unit_test(test_register_errors),
      cmocka_unit_test(test_abi_check),
      cmocka_unit_test(test_register_races_calls),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
