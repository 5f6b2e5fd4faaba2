/*
 * test_dispatch_fallback_threads.c: the CPU fallback called from several
 * threads at once (issue 16): every call counted exactly once, one warning
 * per (operator, backend) even when the first calls race, results right.
 * Named for the ThreadSanitizer subset of .ci/run ("dispatch").
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "kd_test.h"
#include "kd/cpu_fallback.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static atomic_int warnings;
static void on_warning(const char *msg, void *user) {
  (void)user;
  if (strstr(msg, "'fbth::twice' has no PrivateUse1 kernel")) atomic_fetch_add(&warnings, 1);
}

/* 2 * self, on the CPU. */
static kd_status k_twice(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *t;
  kd_status st = kd_tensor_to_device(a[0].t, kd_device_cpu(), &t);
  if (st) return st;
  float *p = kd_tensor_data(t);
  for (int64_t i = 0; i < kd_tensor_numel(t); i++) p[i] *= 2.0f;
  r[0] = kd_value_tensor(t);
  kd_tensor_release(t);
  return KD_OK;
}

enum { THREADS = 4, CALLS = 200 };
static kd_op *twice;
static atomic_int failures;

static void *worker(void *arg) {
  float base = (float)(intptr_t)arg;
  kd_tensor *x, *xd;
  if (kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &x)) return NULL;
  for (int i = 0; i < 3; i++) ((float *)kd_tensor_data(x))[i] = base + (float)i;
  if (kd_tensor_to_device(x, (kd_device){KD_DEVICE_PRIVATEUSE1, 0}, &xd)) {
    kd_tensor_release(x);
    atomic_fetch_add(&failures, 1);
    return NULL;
  }
  for (int n = 0; n < CALLS; n++) {
    kd_arg a[1] = {{.t = xd}};
    kd_value r = kd_value_none();
    kd_tensor *h = NULL, *neg = NULL, *nh = NULL;
    bool ok = kd_call_unboxed(twice, a, &r) == KD_OK &&
              kd_tensor_device(r.u.t).type == KD_DEVICE_PRIVATEUSE1 &&
              kd_tensor_to_device(r.u.t, kd_device_cpu(), &h) == KD_OK &&
              ((float *)kd_tensor_data(h))[2] == 2.0f * (base + 2.0f) &&
              kd_neg(xd, &neg) == KD_OK && kd_tensor_to_device(neg, kd_device_cpu(), &nh) == KD_OK &&
              ((float *)kd_tensor_data(nh))[1] == -(base + 1.0f);
    if (!ok) atomic_fetch_add(&failures, 1);
    kd_value_destroy(&r);
    kd_tensor_release(h);
    kd_tensor_release(neg);
    kd_tensor_release(nh);
  }
  kd_tensor_release(xd);
  kd_tensor_release(x);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_allocator al = kd_test_host_allocator();
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &al));
  kd_library *def, *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "fbth", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  KD_ASSERT_OK(kd_library_def(def, "twice(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "fbth", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_twice, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "twice", &k, NULL));
  KD_ASSERT_OK(kd_op_find("fbth::twice", NULL, &twice));
  kd_op *negop;
  KD_ASSERT_OK(kd_op_find("aten::neg", NULL, &negop));
  kd_set_warning_handler(on_warning, NULL);
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  uint64_t neg_before = kd_op_fallback_count(negop, KD_KEY_PRIVATEUSE1);
  pthread_t th[THREADS];
  for (intptr_t i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)(10 * i)), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  kd_set_warning_handler(NULL, NULL);
  assert_int_equal(atomic_load(&failures), 0);
  assert_int_equal(kd_op_fallback_count(twice, KD_KEY_PRIVATEUSE1), THREADS * CALLS);
  assert_int_equal(kd_op_fallback_count(negop, KD_KEY_PRIVATEUSE1), neg_before + THREADS * CALLS);
  assert_int_equal(atomic_load(&warnings), 1);
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, false));
  kd_library_close(cpu);
  kd_library_close(def);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
