/* Random sequences of registrations and releases: after every step the cached
 * tables equal a fresh computation (kd_dispatcher_check), calls reach the
 * kernel the model predicts, and at the end everything is gone. */
#include "dispatch/reclaim.h"
#include "kd_test.h"

/* Each kernel returns its own id, so a call tells which one ran. */
#define KERNEL(n)                                                            \
  static kd_status k##n(const kd_call *c, const kd_arg *a, kd_value *r) {  \
    (void)c;                                                               \
    (void)a;                                                               \
    r[0] = kd_value_int(n);                                                \
    return KD_OK;                                                          \
  }
KERNEL(0)
KERNEL(1)
KERNEL(2)
KERNEL(3)
KERNEL(4)
KERNEL(5)
static const kd_unboxed_fn kernels[] = {k0, k1, k2, k3, k4, k5};

static kd_status fb_meta(const kd_call *c, kd_stack *s) {
  (void)c;
  kd_stack_drop(s, 1);
  kd_value v = kd_value_int(100);
  return kd_stack_push(s, &v);
}

static void quiet(const char *m, void *u) {
  (void)m;
  (void)u;
}

/* The keys registrations go to. */
static const kd_dispatch_key keys[] = {KD_KEY_CPU, KD_KEY_META, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD,
                                       KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD, KD_KEY_CATCH_ALL};
#define NKEYS (sizeof keys / sizeof keys[0])
#define MAXREG 64

typedef struct reg {
  kd_registration *r;
  int key;    /* index in keys, or -1 for the Meta fallback */
  int kernel; /* id */
  int order;  /* registration sequence number */
} reg;

/* The kernel id the model expects for a call on a device, or -1 (missing). */
static int expect(const reg *regs, int n, kd_dispatch_key backend, bool fallback) {
  int best[NKEYS];
  int best_order[NKEYS];
  for (size_t k = 0; k < NKEYS; k++) best[k] = -1, best_order[k] = -1;
  for (int i = 0; i < n; i++)
    if (regs[i].key >= 0 && regs[i].order > best_order[regs[i].key]) {
      best_order[regs[i].key] = regs[i].order;
      best[regs[i].key] = regs[i].kernel;
    }
  int direct = backend == KD_KEY_CPU ? best[0] : best[1];
  if (direct >= 0) return direct;
  if (best[2] >= 0) return best[2]; /* composite explicit */
  if (best[3] >= 0) return best[3]; /* composite implicit */
  if (best[4] >= 0) return best[4]; /* catch-all, before a backend's fallback */
  if (backend == KD_KEY_META && fallback) return 100;
  return -1;
}

static void test_random_sequences(void **state) {
  (void)state;
  kd_set_warning_handler(quiet, NULL);
  kd_library *def, *libs[NKEYS], *fb;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "rnd", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  for (size_t k = 0; k < NKEYS; k++)
    KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "rnd", keys[k], __FILE__, __LINE__, &libs[k]));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "rnd", KD_KEY_META, __FILE__, __LINE__, &fb));
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> int", NULL, 0, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("rnd::f", "", &op));
  kd_tensor *cpu, *meta;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &cpu));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &meta));

  reg regs[MAXREG];
  int n = 0, order = 0;
  bool fallback = false;
  kd_registration *fb_reg = NULL;
  uint32_t seed = 12345;
  for (int step = 0; step < 3000; step++) {
    seed = seed * 1103515245u + 12345u;
    uint32_t roll = (seed >> 16) % 100;
    if (roll < 50 && n < MAXREG) { /* register */
      int key = (int)((seed >> 8) % NKEYS), id = (int)((seed >> 4) % 6);
      kd_kernel k = kd_kernel_unboxed(kernels[id], "(Tensor) -> int");
      KD_ASSERT_OK(kd_library_impl(libs[key], "f", &k, &regs[n].r));
      regs[n].key = key;
      regs[n].kernel = id;
      regs[n].order = order++;
      n++;
    } else if (roll < 90 && n > 0) { /* release any one */
      int i = (int)((seed >> 8) % (uint32_t)n);
      kd_registration_release(regs[i].r);
      regs[i] = regs[--n];
    } else { /* toggle the Meta fallback */
      if (fallback) {
        kd_registration_release(fb_reg);
      } else {
        kd_kernel k = kd_kernel_boxed(fb_meta);
        KD_ASSERT_OK(kd_library_fallback(fb, &k, &fb_reg));
      }
      fallback = !fallback;
    }
    KD_ASSERT_OK(kd_dispatcher_check());
    kd_tensor *ts[2] = {cpu, meta};
    kd_dispatch_key bk[2] = {KD_KEY_CPU, KD_KEY_META};
    for (int d = 0; d < 2; d++) {
      int want = expect(regs, n, bk[d], fallback);
      kd_arg a[1] = {{.t = ts[d]}};
      kd_value r = kd_value_none();
      kd_status st = kd_call_unboxed(op, a, &r);
      if (want < 0) {
        if (st != KD_ENOKERNEL) fail_msg("step %d: expected no kernel on %s, got status %d", step,
                                         kd_dispatch_key_name(bk[d]), st);
      } else if (st != KD_OK || r.u.i != want) {
        fail_msg("step %d on %s: expected kernel %d, got %s / %lld (%s)", step,
                 kd_dispatch_key_name(bk[d]), want, kd_status_name(st), (long long)r.u.i,
                 kd_last_error());
      }
      kd_value_destroy(&r);
    }
  }
  for (size_t k = 0; k < NKEYS; k++) kd_library_close(libs[k]);
  kd_library_close(fb);
  kd_library_close(def);
  KD_ASSERT_ERR(kd_op_find("rnd::f", "", &op), KD_ENOTFOUND, "not found");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(cpu);
  kd_tensor_release(meta);
  kd__reclaim(true);
  kd_set_warning_handler(NULL, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_sequences)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
