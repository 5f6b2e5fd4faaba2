/* The inline typed call (kd_call_unboxed as the macro for
 * kd__call_unboxed_inline) against the exported function
 * `(kd_call_unboxed)(...)`: the same results, keys and errors; a read section
 * that covers the kernel and ends with the call; nested calls; a thread's
 * first call; a function pointer to the exported call. */
#include <pthread.h>

#include "kd_test.h"

/* What the last kernel saw. */
static kd_keyset g_keys;
static kd_dispatch_key g_key;
static uint64_t g_epoch;       /* this thread's reader epoch while the kernel ran */
static uint64_t g_inner_epoch; /* the same, in the nested kernel */
static uint64_t g_after_inner; /* the outer kernel's epoch after the nested call */
static kd_op *g_inner_op;

static uint64_t my_epoch(void) { return __atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_RELAXED); }

/* pick(Tensor a, Tensor b, int n) -> Tensor: returns a (owned), records the
 * call; fails for n < 0. */
static kd_status k_pick(const kd_call *c, const kd_arg *a, kd_value *r) {
  g_keys = c->keys;
  g_key = c->key;
  g_epoch = my_epoch();
  if (a[2].i < 0) return kd_set_error(KD_EINVAL, "pick: n must be >= 0, got %lld", (long long)a[2].i);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* inner(int x) -> int */
static kd_status k_inner(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  g_inner_epoch = my_epoch();
  r[0] = kd_value_int(a[0].i + 1);
  return KD_OK;
}

/* outer(int x) -> int: calls inner(x) typed, from inside its own call. */
static kd_status k_outer(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  g_epoch = my_epoch();
  kd_value ir[1];
  kd_status st = kd_call_unboxed(g_inner_op, a, ir);
  g_after_inner = my_epoch();
  if (st) return st;
  r[0] = kd_value_int(ir[0].u.i * 10);
  return KD_OK;
}

typedef struct {
  kd_library *def, *cpu, *meta, *any;
  kd_op *pick, *outer, *inner, *bare, *cpu_only;
} fixture;

static fixture setup(void) {
  fixture f;
  f.def = kd_test_open_lib(KD_LIBRARY_DEF, "inl", KD_KEY_UNDEFINED);
  f.cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "inl", KD_KEY_CPU);
  f.meta = kd_test_open_lib(KD_LIBRARY_IMPL, "inl", KD_KEY_META);
  f.any = kd_test_open_lib(KD_LIBRARY_IMPL, "inl", KD_KEY_CATCH_ALL);
  KD_ASSERT_OK(kd_library_def(f.def, "pick(Tensor a, Tensor b, int n) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(f.def, "outer(int x) -> int", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(f.def, "inner(int x) -> int", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(f.def, "bare(Tensor a) -> ()", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(f.def, "cpu_only(Tensor a, Tensor b, int n) -> Tensor", NULL, 0, NULL));
  kd_kernel kp = kd_kernel_unboxed(k_pick, "(Tensor, Tensor, int) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(f.cpu, "pick", &kp, NULL));
  KD_ASSERT_OK(kd_library_impl(f.meta, "pick", &kp, NULL));
  KD_ASSERT_OK(kd_library_impl(f.cpu, "cpu_only", &kp, NULL));
  kd_kernel ko = kd_kernel_unboxed(k_outer, "(int) -> int");
  kd_kernel ki = kd_kernel_unboxed(k_inner, "(int) -> int");
  KD_ASSERT_OK(kd_library_impl(f.any, "outer", &ko, NULL));
  KD_ASSERT_OK(kd_library_impl(f.any, "inner", &ki, NULL));
  KD_ASSERT_OK(kd_op_find_typed("inl::pick", "", "(Tensor, Tensor, int) -> Tensor", &f.pick));
  KD_ASSERT_OK(kd_op_find_typed("inl::outer", "", "(int) -> int", &f.outer));
  KD_ASSERT_OK(kd_op_find_typed("inl::inner", "", "(int) -> int", &f.inner));
  KD_ASSERT_OK(kd_op_find_typed("inl::bare", "", "(Tensor) -> ()", &f.bare));
  KD_ASSERT_OK(kd_op_find_typed("inl::cpu_only", "", "(Tensor, Tensor, int) -> Tensor", &f.cpu_only));
  g_inner_op = f.inner;
  return f;
}

static void teardown(fixture *f) {
  kd_library_close(f->any);
  kd_library_close(f->meta);
  kd_library_close(f->cpu);
  kd_library_close(f->def);
}

/* Calls pick both ways and checks that they agree on the status, the
 * message, the result and what the kernel saw. */
static void pick_both(kd_op *op, kd_tensor *a, kd_tensor *b, int64_t n, kd_status want,
                      kd_dispatch_key want_key) {
  kd_arg args[3] = {{.t = a}, {.t = b}, {.i = n}};
  kd_value r1[1] = {kd_value_none()}, r2[1] = {kd_value_none()};
  char msg1[1024];

  kd_clear_error();
  g_key = KD_KEY_UNDEFINED;
  kd_status s1 = kd_call_unboxed(op, args, r1);
  snprintf(msg1, sizeof msg1, "%s", kd_last_error());
  kd_dispatch_key key1 = g_key;
  kd_keyset keys1 = g_keys;
  assert_int_equal(s1, want);
  assert_int_equal(my_epoch(), 0); /* the section ended with the call */

  kd_clear_error();
  g_key = KD_KEY_UNDEFINED;
  kd_status s2 = (kd_call_unboxed)(op, args, r2);
  assert_int_equal(s2, s1);
  KD_ASSERT_STR_EQ(kd_last_error(), msg1);
  assert_int_equal(my_epoch(), 0);
  if (s1 == KD_OK || s1 == KD_EINVAL) { /* the kernel ran */
    assert_int_equal(key1, want_key);
    assert_int_equal(g_key, key1);
    assert_true(g_keys == keys1);
  }
  if (s1 == KD_OK) {
    assert_int_equal(r1[0].tag, KD_VALUE_TENSOR);
    assert_ptr_equal(r1[0].u.t, a);
    assert_ptr_equal(r2[0].u.t, a);
    kd_value_destroy(&r1[0]);
    kd_value_destroy(&r2[0]);
  }
}

static void test_same_as_exported(void **state) {
  (void)state;
  fixture f = setup();
  kd_tensor *c = kd_test_tensor_on(KD_DEVICE_CPU), *p = kd_test_tensor_on(KD_DEVICE_META);
  pick_both(f.pick, c, c, 1, KD_OK, KD_KEY_CPU);
  /* The union of both tensors' keys: Meta is above CPU. */
  pick_both(f.pick, c, p, 1, KD_OK, KD_KEY_META);
  pick_both(f.pick, p, c, 1, KD_OK, KD_KEY_META);
  /* A failing kernel: its status and message come back unchanged. */
  pick_both(f.pick, c, c, -1, KD_EINVAL, KD_KEY_CPU);
  KD_ASSERT_ERR(kd_call_unboxed(f.pick, ((kd_arg[]){{.t = c}, {.t = c}, {.i = -2}}),
                                ((kd_value[]){kd_value_none()})),
                KD_EINVAL, "pick: n must be >= 0, got -2");
  /* Thread-local keys apply as in the exported call. */
  kd_tls_keys prev = kd_tls_exclude(kd_keyset_of(KD_KEY_META));
  pick_both(f.pick, c, p, 1, KD_OK, KD_KEY_CPU);
  kd_tls_restore(prev);
  kd_tensor_release(p);
  kd_tensor_release(c);
  teardown(&f);
}

static void test_errors(void **state) {
  (void)state;
  fixture f = setup();
  kd_tensor *c = kd_test_tensor_on(KD_DEVICE_CPU), *m = kd_test_tensor_on(KD_DEVICE_META);
  /* No kernel for the tensor's key, or no tensor at all. */
  pick_both(f.cpu_only, m, m, 1, KD_ENOKERNEL, KD_KEY_META);
  KD_ASSERT_ERR(kd_call_unboxed(f.cpu_only, ((kd_arg[]){{.t = m}, {.t = c}, {.i = 1}}),
                                ((kd_value[]){kd_value_none()})),
                KD_ENOKERNEL,
                "Could not run 'inl::cpu_only' with arguments from the 'Meta' backend");
  KD_ASSERT_ERR(kd_call_unboxed(f.cpu_only, ((kd_arg[]){{.t = m}, {.t = c}, {.i = 1}}),
                                ((kd_value[]){kd_value_none()})),
                KD_ENOKERNEL, "is only available for these backends: [CPU]");
  KD_ASSERT_ERR(kd_call_unboxed(f.bare, ((kd_arg[]){{.t = c}}), NULL), KD_ENOKERNEL,
                "Could not run 'inl::bare' with arguments from the 'CPU' backend");
  KD_ASSERT_ERR(kd_call_unboxed(f.bare, ((kd_arg[]){{.t = NULL}}), NULL), KD_ENOKERNEL,
                "from the 'Undefined' backend");
  assert_int_equal(my_epoch(), 0);
  /* An operator whose def is gone (the handle stays): KD_ESTATE. */
  kd_library_close(f.any);
  kd_library_close(f.meta);
  kd_library_close(f.cpu);
  kd_library_close(f.def);
  KD_ASSERT_ERR(kd_call_unboxed(f.pick, ((kd_arg[]){{.t = c}, {.t = c}, {.i = 1}}),
                                ((kd_value[]){kd_value_none()})),
                KD_ESTATE, "operator 'inl::pick' is not defined");
  KD_ASSERT_ERR((kd_call_unboxed)(f.pick, ((kd_arg[]){{.t = c}, {.t = c}, {.i = 1}}),
                                  ((kd_value[]){kd_value_none()})),
                KD_ESTATE, "operator 'inl::pick' is not defined");
  assert_int_equal(my_epoch(), 0);
  kd_tensor_release(m);
  kd_tensor_release(c);
}

/* The kernel runs inside the read section (its entry and state cannot be
 * freed under it); a nested call keeps the outer call's epoch, and only the
 * outermost exit clears it. */
static void test_section_and_nesting(void **state) {
  (void)state;
  fixture f = setup();
  kd_value r[1];
  g_epoch = g_inner_epoch = g_after_inner = 0;
  KD_ASSERT_OK(kd_call_unboxed(f.outer, ((kd_arg[]){{.i = 4}}), r));
  assert_int_equal(r[0].tag, KD_VALUE_INT);
  assert_int_equal(r[0].u.i, 50);
  assert_true(g_epoch != 0);
  assert_true(g_inner_epoch == g_epoch);
  assert_true(g_after_inner == g_epoch);
  assert_int_equal(my_epoch(), 0);
  /* The same through the exported call. */
  g_epoch = g_inner_epoch = g_after_inner = 0;
  KD_ASSERT_OK((kd_call_unboxed)(f.outer, ((kd_arg[]){{.i = 5}}), r));
  assert_int_equal(r[0].u.i, 60);
  assert_true(g_epoch != 0 && g_inner_epoch == g_epoch && g_after_inner == g_epoch);
  assert_int_equal(my_epoch(), 0);
  teardown(&f);
}

/* A function pointer names the exported call (the macro takes arguments). */
static void test_function_pointer(void **state) {
  (void)state;
  fixture f = setup();
  kd_status (*fp)(kd_op *, const kd_arg *, kd_value *) = kd_call_unboxed;
  kd_value r[1];
  KD_ASSERT_OK(fp(f.inner, ((kd_arg[]){{.i = 41}}), r));
  assert_int_equal(r[0].u.i, 42);
  assert_int_equal(my_epoch(), 0);
  teardown(&f);
}

/* A new thread's first call registers it (the exported path), its later
 * ones take the inline one; both leave the thread outside a section. */
static kd_op *g_thread_op;
static void *thread_calls(void *arg) {
  int *bad = arg;
  for (int i = 0; i < 3; i++) {
    kd_value r[1];
    if (kd_call_unboxed(g_thread_op, ((kd_arg[]){{.i = i}}), r) != KD_OK || r[0].u.i != i + 1 ||
        my_epoch() != 0 || kd__tls_reader.mode == 0)
      (*bad)++;
  }
  return NULL;
}

static void test_new_thread(void **state) {
  (void)state;
  fixture f = setup();
  g_thread_op = f.inner;
  int bad = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, thread_calls, &bad), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(bad, 0);
  teardown(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_as_exported),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_section_and_nesting),
      cmocka_unit_test(test_function_pointer),
      cmocka_unit_test(test_new_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
