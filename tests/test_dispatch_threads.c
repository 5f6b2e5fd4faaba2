/* Calls take no lock and stay safe while other threads register and release
 * kernels of the same operator: a caller sees the old or the new kernel,
 * never freed memory. Run under ThreadSanitizer in CI (and ASan). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "dispatch/reclaim.h"
#include "kd_test.h"

#define ALIVE 0x5eed5eedu
#define DEAD 0xdeaddeadu

typedef struct closure {
  _Atomic unsigned magic;
  int which;
} closure;

static atomic_int bad_magic, bad_status, calls_done;
static atomic_int destroyed;
static atomic_bool stop;

static void closure_destroy(void *p) {
  closure *c = p;
  atomic_store(&c->magic, DEAD);
  atomic_fetch_add(&destroyed, 1);
  free(c);
}

static kd_status k_closure(const kd_call *call, const kd_arg *a, kd_value *r) {
  closure *c = call->data;
  if (!c || atomic_load(&c->magic) != ALIVE) atomic_fetch_add(&bad_magic, 1);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static kd_status k_base(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* A functor: state per slot, made on first call by whichever thread. */
static kd_status st_create(void *data, const kd_value *ctor, size_t n, void **state) {
  (void)data;
  (void)ctor;
  (void)n;
  closure *c = malloc(sizeof *c);
  atomic_init(&c->magic, ALIVE);
  c->which = 2;
  *state = c;
  return KD_OK;
}

static void quiet(const char *msg, void *ud) {
  (void)msg;
  (void)ud;
}

static kd_op *the_op;
static kd_tensor *cpu_tensor;

static void *caller(void *arg) {
  int boxed = (int)(intptr_t)arg;
  kd_stack s;
  kd_stack_init(&s);
  while (!atomic_load(&stop)) {
    kd_status st;
    if (boxed) {
      kd_value v = kd_value_tensor(cpu_tensor);
      kd_stack_push(&s, &v);
      st = kd_call_boxed(the_op, &s);
      kd_stack_clear(&s);
    } else {
      kd_arg a[1] = {{.t = cpu_tensor}};
      kd_value r[1] = {kd_value_none()};
      st = kd_call_unboxed(the_op, a, r);
      if (st == KD_OK && r[0].u.t != cpu_tensor) atomic_fetch_add(&bad_status, 1);
      kd_value_destroy(&r[0]);
    }
    if (st != KD_OK) atomic_fetch_add(&bad_status, 1);
    /* Lookups race with operator-table growth. */
    kd_op *found;
    if (kd_op_find("threads::f", "", &found) != KD_OK || found != the_op)
      atomic_fetch_add(&bad_status, 1);
    /* ... and with an operator that comes and goes. */
    kd_status hs = kd_op_find("threads::h", "", &found);
    if (hs != KD_OK && hs != KD_ENOTFOUND) atomic_fetch_add(&bad_status, 1);
    atomic_fetch_add(&calls_done, 1);
  }
  kd_stack_free(&s);
  return NULL;
}

static void test_register_while_calling(void **state) {
  (void)state;
  kd_library *def, *base, *churn, *ops;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "threads", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "threads", KD_KEY_CPU, __FILE__, __LINE__, &base));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "threads", KD_KEY_CPU, __FILE__, __LINE__, &churn));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_FRAGMENT, "threads", KD_KEY_UNDEFINED, __FILE__, __LINE__, &ops));
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel kb = kd_kernel_unboxed(k_base, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(base, "f", &kb, NULL)); /* always there under the churn */
  KD_ASSERT_OK(kd_op_find("threads::f", "", &the_op));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, kd_device_cpu(), &cpu_tensor));

  kd_set_warning_handler(quiet, NULL); /* every churn impl overrides the base one */
  pthread_t threads[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&threads[i], NULL, caller, (void *)(intptr_t)(i == 2));

  /* The writer: stack and release closures and functors on the operator's
   * CPU slot, and define/release other operators (growing the name table). */
  int rounds = 0, made = 0;
  char name[64];
  /* At least 3,000 rounds and 20,000 calls, at most about two seconds. */
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;; rounds++) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    double elapsed = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
    if ((rounds >= 3000 && atomic_load(&calls_done) >= 20000) || elapsed > 2.0) break;
    kd_registration *r;
    if (rounds % 3 == 2) {
      kd_kernel kf = kd_kernel_unboxed(k_closure, "(Tensor) -> Tensor");
      kf.kind = KD_KERNEL_FUNCTOR;
      kf.create = st_create;
      kf.destroy = closure_destroy;
      KD_ASSERT_OK(kd_library_impl(churn, "f", &kf, &r));
    } else {
      closure *c = malloc(sizeof *c);
      atomic_init(&c->magic, ALIVE);
      c->which = rounds;
      kd_kernel kc = kd_kernel_closure(k_closure, "(Tensor) -> Tensor", c, closure_destroy);
      KD_ASSERT_OK(kd_library_impl(churn, "f", &kc, &r));
      made++;
    }
    kd_registration *rh;
    KD_ASSERT_OK(kd_library_def(ops, "h(Tensor self) -> Tensor", NULL, 0, &rh));
    kd_registration_release(rh);
    if (rounds % 10 == 0) {
      snprintf(name, sizeof name, "g%d(Tensor self) -> Tensor", rounds);
      KD_ASSERT_OK(kd_library_def(ops, name, NULL, 0, NULL));
    }
    kd_registration_release(r);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
  kd_set_warning_handler(NULL, NULL);

  assert_int_equal(atomic_load(&bad_magic), 0);
  assert_int_equal(atomic_load(&bad_status), 0);
  assert_true(atomic_load(&calls_done) > 0);
  fprintf(stderr, "%d registration rounds, %d calls\n", rounds, atomic_load(&calls_done));
  kd__reclaim(true);
  /* Every closure, and every functor state that was made, was destroyed. */
  assert_true(atomic_load(&destroyed) >= made);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(ops);
  kd_library_close(churn);
  kd_library_close(base);
  kd_library_close(def);
  kd_tensor_release(cpu_tensor);
  kd__reclaim(true);
}

/* A new thread starts with empty include/exclude sets whatever another
 * thread has set (the exclude set is kept as its complement internally, so
 * a zero-filled thread would exclude every key: regression test). */
static kd_status k_mark_cpu(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)a;
  (void)r;
  atomic_fetch_add(&calls_done, call->key == KD_KEY_CPU ? 1 : 1000);
  return KD_OK;
}

static void *fresh_thread(void *arg) {
  kd_op *op = arg;
  kd_tls_keys k = kd_tls_keys_get();
  if (k.include != 0 || k.exclude != 0) atomic_fetch_add(&bad_status, 1);
  kd_arg a[1] = {{.t = cpu_tensor}};
  if (kd_call_unboxed(op, a, NULL) != KD_OK) atomic_fetch_add(&bad_status, 1);
  return NULL;
}

static void test_new_thread_tls(void **state) {
  (void)state;
  kd_library *def, *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "fresh", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "fresh", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> ()", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_mark_cpu, "(Tensor) -> ()");
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("fresh::f", "", &op));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, kd_device_cpu(), &cpu_tensor));
  atomic_store(&calls_done, 0);
  atomic_store(&bad_status, 0);
  /* This thread excludes CPU: its own call finds no kernel ... */
  kd_tls_keys prev = kd_tls_exclude(kd_keyset_of(KD_KEY_CPU));
  kd_arg a[1] = {{.t = cpu_tensor}};
  KD_ASSERT_ERR(kd_call_unboxed(op, a, NULL), KD_ENOKERNEL, "fresh::f");
  /* ... while a new thread's call reaches the CPU kernel. */
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fresh_thread, op), 0);
  pthread_join(t, NULL);
  kd_tls_restore(prev);
  assert_int_equal(atomic_load(&bad_status), 0);
  assert_int_equal(atomic_load(&calls_done), 1);
  KD_ASSERT_OK(kd_call_unboxed(op, a, NULL));
  assert_int_equal(atomic_load(&calls_done), 2);
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(cpu_tensor);
  kd__reclaim(true);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_register_while_calling),
                                     cmocka_unit_test(test_new_thread_tls)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
