/* Operator lifetime: a handle stays valid for the life of the process, an
 * operator whose last registration is released keeps only its handle and
 * name (no schema, no table entries, no kernel records, no per-slot state),
 * defining it again reuses the handle, and opening and closing the same
 * libraries over and over keeps the process's memory flat.
 *
 * Memory is measured by counting live heap bytes, never by time: glibc's
 * mallinfo2() (bytes in use in every arena plus mmap'd chunks), or the
 * sanitizer allocator's count under ASan/TSan, which replace malloc. */
#include "dispatch/dispatcher_impl.h"
#include "dispatch/reclaim.h"
#include "kd_memtest.h"
#include "kd_test.h"

/* ---- Kernels ------------------------------------------------------------------ */

static int data_alive, states_alive;

static kd_status k_ident(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static kd_status k_ident_n(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  r[0] = kd_value_tensor(a[0].t);
  return a[1].i == 7 ? KD_OK : kd_set_error(KD_EINVAL, "k_ident_n: n = %lld", (long long)a[1].i);
}

/* A closure whose data is counted, so a leak of the kernel record shows. */
static kd_status k_closure(const kd_call *call, const kd_arg *a, kd_value *r) {
  if (*(int *)call->data != 42) return kd_set_error(KD_EINTERNAL, "k_closure: bad data");
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static void data_destroy(void *p) {
  data_alive--;
  free(p);
}
static int *data_new(void) {
  int *p = malloc(sizeof *p);
  assert_non_null(p);
  *p = 42;
  data_alive++;
  return p;
}

/* A functor: state per slot, made on the slot's first call. */
static kd_status st_create(void *data, const kd_value *ctor, size_t n, void **state) {
  (void)data;
  if (n != 1 || ctor[0].tag != KD_VALUE_INT) return kd_set_error(KD_EINVAL, "st_create: args");
  int64_t *s = malloc(sizeof *s);
  if (!s) return KD_ENOMEM;
  *s = ctor[0].u.i;
  states_alive++;
  *state = s;
  return KD_OK;
}
static void st_destroy(void *s) {
  states_alive--;
  free(s);
}
static kd_status k_functor(const kd_call *call, const kd_arg *a, kd_value *r) {
  if (!call->data || *(int64_t *)call->data != 5) return kd_set_error(KD_EINTERNAL, "k_functor: bad state");
  r[0] = kd_value_tensor(a[0].t);
  return a[1].i == 7 ? KD_OK : KD_EINVAL;
}

/* A fallback for a mode key: passes the call on below its key. */
static int fallback_calls;
static kd_status k_mode_fallback(const kd_call *call, kd_stack *stack) {
  fallback_calls++;
  return kd_redispatch_boxed(call, stack);
}

static int events;
static void count_events(const kd_registry_event *ev, void *ud) {
  (void)ev;
  (void)ud;
  events++;
}

/* ---- One set of libraries ------------------------------------------------------ */

typedef struct libs {
  kd_library *def, *frag, *cpu, *meta, *mode1, *mode2;
  kd_listener *listener;
} libs;

/* DEF + FRAGMENT + IMPL libraries in namespace `ns`: plain, closure, functor
 * and kernel-key kernels, a def_kernel, tags, a mode fallback, a
 * fallthrough and a listener. */
static void libs_open(libs *l, const char *ns) {
  KD_ASSERT_OK(kd_listener_add(count_events, NULL, &l->listener));
  l->def = kd_test_open_lib(KD_LIBRARY_DEF, ns, KD_KEY_UNDEFINED);
  l->frag = kd_test_open_lib(KD_LIBRARY_FRAGMENT, ns, KD_KEY_UNDEFINED);
  l->cpu = kd_test_open_lib(KD_LIBRARY_IMPL, ns, KD_KEY_CPU);
  l->meta = kd_test_open_lib(KD_LIBRARY_IMPL, ns, KD_KEY_META);
  l->mode1 = kd_test_open_lib(KD_LIBRARY_IMPL, ns, KD_KEY_MODE1);
  l->mode2 = kd_test_open_lib(KD_LIBRARY_IMPL, ns, KD_KEY_MODE2);
  const char *tags[] = {"pointwise", "core"};
  KD_ASSERT_OK(kd_library_def(l->def, "f(Tensor self) -> Tensor", tags, 2, NULL));
  KD_ASSERT_OK(kd_library_def(l->def, "g.n(Tensor self, int n=7) -> Tensor", NULL, 0, NULL));
  kd_kernel kc = kd_kernel_closure(k_closure, "(Tensor) -> Tensor", data_new(), data_destroy);
  KD_ASSERT_OK(kd_library_def_kernel(l->def, "h", &kc, NULL));
  KD_ASSERT_OK(kd_library_def(l->frag, "frag(Tensor self) -> Tensor", NULL, 0, NULL));

  kd_kernel kf = kd_kernel_unboxed(k_ident, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(l->cpu, "f", &kf, NULL));
  kd_kernel kg = kd_kernel_unboxed(k_functor, "(Tensor, int) -> Tensor");
  kg.kind = KD_KERNEL_FUNCTOR;
  kg.create = st_create;
  kg.destroy = st_destroy;
  kd_value five = kd_value_int(5);
  kg.ctor_args = &five;
  kg.nctor_args = 1;
  KD_ASSERT_OK(kd_library_impl(l->cpu, "g.n", &kg, NULL));
  kd_kernel kfr = kd_kernel_closure(k_closure, "(Tensor) -> Tensor", data_new(), data_destroy);
  KD_ASSERT_OK(kd_library_impl(l->cpu, "frag", &kfr, NULL));
  kd_kernel kk = kd_kernel_unboxed(k_ident, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl_keyed(l->meta, "frag", KD_ALL_LAYOUT,
                                     KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_FLOAT64), &kk, NULL));
  kd_kernel kn = kd_kernel_unboxed(k_ident_n, "(Tensor, int) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(l->meta, "g.n", &kn, NULL));
  kd_kernel fb = kd_kernel_boxed(k_mode_fallback);
  KD_ASSERT_OK(kd_library_fallback(l->mode1, &fb, NULL));
  kd_kernel ft = kd_kernel_fallthrough();
  KD_ASSERT_OK(kd_library_fallback(l->mode2, &ft, NULL));
}

static void libs_close(libs *l) {
  kd_library_close(l->mode2);
  kd_library_close(l->mode1);
  kd_library_close(l->meta);
  kd_library_close(l->cpu);
  kd_library_close(l->frag);
  kd_library_close(l->def);
  kd_listener_remove(l->listener);
}

static kd_op *find(const char *name) {
  kd_op *op;
  KD_ASSERT_OK(kd_op_find(name, NULL, &op));
  return op;
}

static kd_status call1(kd_op *op, kd_tensor *t) {
  kd_value r[1] = {kd_value_none()};
  kd_status st = kd_call_unboxed(op, ((kd_arg[]){{.t = t}}), r);
  if (st == KD_OK && r[0].u.t != t) st = KD_EINTERNAL;
  kd_value_destroy(&r[0]);
  return st;
}

static kd_status call_n(kd_op *op, kd_tensor *t, int64_t n) {
  kd_value r[1] = {kd_value_none()};
  kd_status st = kd_call_unboxed(op, ((kd_arg[]){{.t = t}, {.i = n}}), r);
  kd_value_destroy(&r[0]);
  return st;
}

static kd_status call_boxed1(kd_op *op, kd_tensor *t) {
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(t);
  kd_status st = kd_stack_push(&s, &v);
  if (st == KD_OK) st = kd_call_boxed(op, &s);
  if (st == KD_OK && (s.size != 1 || s.items[0].u.t != t)) st = KD_EINTERNAL;
  kd_stack_free(&s);
  return st;
}

/* Calls every operator of the set, on CPU and Meta, plain, through the mode
 * fallback and through the fallthrough. */
static void libs_call(const char *ns, kd_tensor *cpu, kd_tensor *meta) {
  char name[64];
  snprintf(name, sizeof name, "%s::f", ns);
  kd_op *f = find(name);
  snprintf(name, sizeof name, "%s::g.n", ns);
  kd_op *g = find(name);
  snprintf(name, sizeof name, "%s::h", ns);
  kd_op *h = find(name);
  snprintf(name, sizeof name, "%s::frag", ns);
  kd_op *frag = find(name);
  KD_ASSERT_OK(call1(f, cpu));
  KD_ASSERT_OK(call_boxed1(f, cpu));
  KD_ASSERT_OK(call_n(g, cpu, 7)); /* makes the functor's CPU state */
  KD_ASSERT_OK(call_n(g, meta, 7));
  KD_ASSERT_OK(call1(h, cpu));
  KD_ASSERT_OK(call1(frag, cpu));
  KD_ASSERT_OK(call1(frag, meta)); /* kernel keys */
  int before = fallback_calls;
  kd_tls_keys prev = kd_tls_include(kd_keyset_of(KD_KEY_MODE1) | kd_keyset_of(KD_KEY_MODE2));
  kd_status st = call1(f, cpu);
  kd_status st2 = call_boxed1(frag, meta);
  kd_tls_restore(prev);
  KD_ASSERT_OK(st);
  KD_ASSERT_OK(st2);
  assert_int_equal(fallback_calls, before + 2);
}

static kd_tensor *cpu_t, *meta_t;

static int setup(void **state) {
  (void)state;
  cpu_t = kd_test_tensor_on(KD_DEVICE_CPU);
  meta_t = kd_test_tensor_on(KD_DEVICE_META);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_tensor_release(cpu_t);
  kd_tensor_release(meta_t);
  return 0;
}

/* ---- Tests ---------------------------------------------------------------------- */

/* Released: the handle stays, lookups fail, calls fail naming the operator,
 * and nothing is left in its table, not even the slots of keys that have a
 * fallback. Defined again: the same handle, working. */
static void test_release_frees_and_redefine_reuses(void **state) {
  (void)state;
  libs l;
  libs_open(&l, "life");
  libs_call("life", cpu_t, meta_t);
  kd_op *f = find("life::f"), *g = find("life::g.n"), *frag = find("life::frag");
  assert_int_equal(states_alive, 1);
  /* A fallback that stays while the operators go. */
  kd_library *keep = kd_test_open_lib(KD_LIBRARY_IMPL, "other", KD_KEY_TRACER);
  kd_kernel fb = kd_kernel_boxed(k_mode_fallback);
  KD_ASSERT_OK(kd_library_fallback(keep, &fb, NULL));
  libs_close(&l);
  kd__reclaim(true);
  assert_int_equal(data_alive, 0);
  assert_int_equal(states_alive, 0);

  KD_ASSERT_ERR(kd_op_find("life::f", NULL, &(kd_op *){NULL}), KD_ENOTFOUND,
                "operator 'life::f' not found");
  KD_ASSERT_ERR(call1(f, cpu_t), KD_ESTATE, "operator 'life::f' is not defined");
  KD_ASSERT_ERR(call_boxed1(f, cpu_t), KD_ESTATE, "operator 'life::f' is not defined");
  KD_ASSERT_ERR(call_n(g, cpu_t, 7), KD_ESTATE, "operator 'life::g.n' is not defined");
  /* Through the slot of a key with a fallback too. */
  kd_tls_keys prev = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  KD_ASSERT_ERR(call1(frag, cpu_t), KD_ESTATE, "operator 'life::frag' is not defined");
  KD_ASSERT_ERR(call_boxed1(frag, cpu_t), KD_ESTATE, "operator 'life::frag' is not defined");
  kd_tls_restore(prev);
  assert_null(kd_op_schema(f));
  KD_ASSERT_STR_EQ(kd_op_name(f), "life::f");
  /* Only the handle and its name are left. */
  kd_op *ops[] = {f, g, frag};
  for (size_t i = 0; i < 3; i++) {
    assert_null(atomic_load(&ops[i]->info));
    assert_null(ops[i]->defs);
    assert_null(ops[i]->impls);
    assert_null(ops[i]->tags);
    for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++)
      if (atomic_load(&ops[i]->table[k]))
        fail_msg("%s: slot %s still holds an entry", ops[i]->name,
                 kd_dispatch_key_name((kd_dispatch_key)k));
    char dump[2048];
    kd_op_dump_table(ops[i], dump, sizeof dump);
    if (strstr(dump, "fallback")) fail_msg("a released operator's table:\n%s", dump);
  }
  KD_ASSERT_OK(kd_dispatcher_check());

  /* Defined again (by fresh libraries): the same handles, working, and the
   * fallback that stayed is in the table again. */
  libs_open(&l, "life");
  assert_ptr_equal(find("life::f"), f);
  assert_ptr_equal(find("life::g.n"), g);
  assert_ptr_equal(find("life::frag"), frag);
  libs_call("life", cpu_t, meta_t);
  char dump[8192];
  kd_op_dump_table(f, dump, sizeof dump);
  if (!strstr(dump, "\n  Tracer: boxed [backend fallback] from "))
    fail_msg("the fallback is missing from the table:\n%s", dump);
  int before = fallback_calls;
  prev = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  kd_status st = call1(f, cpu_t);
  kd_tls_restore(prev);
  KD_ASSERT_OK(st);
  assert_int_equal(fallback_calls, before + 1);
  KD_ASSERT_OK(kd_dispatcher_check());
  libs_close(&l);
  kd_library_close(keep);
  kd__reclaim(true);
  assert_int_equal(data_alive, 0);
  assert_int_equal(states_alive, 0);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* An operator only implemented (never defined) that loses its last kernel
 * also keeps nothing; a fallback registered while it is gone adds nothing. */
static void test_fallback_while_gone(void **state) {
  (void)state;
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "gone", KD_KEY_CPU);
  kd_kernel kf = kd_kernel_unboxed(k_ident, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "only_impl", &kf, NULL));
  kd_op *op = find("gone::only_impl");
  KD_ASSERT_ERR(call1(op, cpu_t), KD_ESTATE, "operator 'gone::only_impl' is not defined");
  kd_library_close(cpu);
  kd_library *m = kd_test_open_lib(KD_LIBRARY_IMPL, "gone", KD_KEY_PROFILER);
  kd_kernel fb = kd_kernel_boxed(k_mode_fallback);
  KD_ASSERT_OK(kd_library_fallback(m, &fb, NULL));
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++) assert_null(atomic_load(&op->table[k]));
  KD_ASSERT_OK(kd_dispatcher_check());
  /* Implemented again: the fallback's slot is filled. */
  cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "gone", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_impl(cpu, "only_impl", &kf, NULL));
  assert_ptr_equal(find("gone::only_impl"), op);
  assert_non_null(atomic_load(&op->table[KD_KEY_PROFILER]));
  assert_non_null(atomic_load(&op->table[KD_KEY_CPU]));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cpu);
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++) assert_null(atomic_load(&op->table[k]));
  kd_library_close(m);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* A functor registered plainly for a key that also has kernel-key kernels
 * serves the dtypes no keyed kernel serves: it gets its per-slot state (made
 * on first call, destroyed with the slot), not the factory's data. */
static void test_functor_beside_kernel_keys(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "fk", KD_KEY_UNDEFINED);
  kd_library *meta = kd_test_open_lib(KD_LIBRARY_IMPL, "fk", KD_KEY_META);
  KD_ASSERT_OK(kd_library_def(def, "g(Tensor self, int n) -> Tensor", NULL, 0, NULL));
  kd_kernel kg = kd_kernel_unboxed(k_functor, "(Tensor, int) -> Tensor");
  kg.kind = KD_KERNEL_FUNCTOR;
  kg.create = st_create;
  kg.destroy = st_destroy;
  kd_value five = kd_value_int(5);
  kg.ctor_args = &five;
  kg.nctor_args = 1;
  KD_ASSERT_OK(kd_library_impl(meta, "g", &kg, NULL));
  kd_kernel kn = kd_kernel_unboxed(k_ident_n, "(Tensor, int) -> Tensor");
  KD_ASSERT_OK(kd_library_impl_keyed(meta, "g", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT64), &kn, NULL));
  kd_op *g = find("fk::g");
  /* meta_t is float32: the functor's cell. */
  KD_ASSERT_OK(call_n(g, meta_t, 7));
  assert_int_equal(states_alive, 1);
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(meta_t), n = kd_value_int(7);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  KD_ASSERT_OK(kd_stack_push(&s, &n));
  KD_ASSERT_OK(kd_call_boxed(g, &s));
  kd_stack_free(&s);
  assert_int_equal(states_alive, 1);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(meta);
  kd_library_close(def);
  kd__reclaim(true);
  assert_int_equal(states_alive, 0);
}

/* Opening and closing the same libraries keeps memory flat: the figure after
 * the warm-up (cycle 100) and after the last cycle differ by no more than
 * allocator noise. */
static void test_cycles_keep_memory_flat(void **state) {
  (void)state;
  const int cycles = KD_TEST_SANITIZED ? 1000 : 10000, warmup = 100;
  const size_t tolerance = 4096;
  size_t after_warmup = 0;
  int events0 = events;
  for (int i = 1; i <= cycles; i++) {
    libs l;
    libs_open(&l, "flat");
    libs_call("flat", cpu_t, meta_t);
    libs_close(&l);
    if (i == warmup) after_warmup = kd_memtest_live_bytes();
  }
  size_t after = kd_memtest_live_bytes();
  assert_int_equal(data_alive, 0);
  assert_int_equal(states_alive, 0);
  assert_true(events > events0);
  print_message("live heap bytes after cycle %d: %zu, after cycle %d: %zu\n", warmup,
                after_warmup, cycles, after);
  if (after > after_warmup + tolerance)
    fail_msg("memory grew by %zu bytes over %d open/close cycles (%.2f bytes per cycle)",
             after - after_warmup, cycles - warmup,
             (double)(after - after_warmup) / (cycles - warmup));
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* What grows with the number of distinct operator names ever defined: the
 * handle (with its name) and the name table's share, and nothing else, even
 * with fallbacks registered (docs/ARCHITECTURE.md gives the figure). */
static void test_distinct_names_cost_only_handles(void **state) {
  (void)state;
  kd_library *m1 = kd_test_open_lib(KD_LIBRARY_IMPL, "names", KD_KEY_MODE1);
  kd_library *m2 = kd_test_open_lib(KD_LIBRARY_IMPL, "names", KD_KEY_MODE2);
  kd_kernel fb = kd_kernel_boxed(k_mode_fallback), ft = kd_kernel_fallthrough();
  KD_ASSERT_OK(kd_library_fallback(m1, &fb, NULL));
  KD_ASSERT_OK(kd_library_fallback(m2, &ft, NULL));
  const int n = KD_TEST_SANITIZED ? 2000 : 8000;
  size_t before = kd_memtest_live_bytes();
  kd_kernel kf = kd_kernel_unboxed(k_ident, "(Tensor) -> Tensor");
  char schema[64], name[64];
  for (int i = 0; i < n; i++) {
    kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "names", KD_KEY_UNDEFINED);
    kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "names", KD_KEY_CPU);
    snprintf(schema, sizeof schema, "op%05d(Tensor self) -> Tensor", i);
    snprintf(name, sizeof name, "op%05d", i);
    KD_ASSERT_OK(kd_library_def(def, schema, NULL, 0, NULL));
    KD_ASSERT_OK(kd_library_impl(cpu, name, &kf, NULL));
    if (i % 97 == 0) {
      snprintf(name, sizeof name, "names::op%05d", i);
      KD_ASSERT_OK(call1(find(name), cpu_t));
    }
    kd_library_close(cpu);
    kd_library_close(def);
  }
  size_t after = kd_memtest_live_bytes();
  double per_name = (double)(after - before) / n;
  /* The handle, 16-byte aligned, with "names::opNNNNN" and its NUL; the
   * name table (at most half full, so 2 to 4 pointers a name); and the
   * 256 KiB blocks handles are carved from (one partly used block). */
  size_t handle = (sizeof(kd_op) + strlen("names::op00000") + 1 + 15) & ~(size_t)15;
  double bound = (double)handle + 4 * sizeof(void *) + 256.0 * 1024 / n;
  print_message("%d distinct names: %.1f bytes each (handle %zu, bound %.1f)\n", n, per_name,
                handle, bound);
  if (per_name > bound)
    fail_msg("each distinct operator name costs %.1f bytes, more than its handle and name "
             "table share (%.1f)",
             per_name, bound);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(m2);
  kd_library_close(m1);
}


int main(int argc, char **argv) {
  (void)argc;
  kd_memtest_without_tcache(argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_release_frees_and_redefine_reuses),
      cmocka_unit_test(test_fallback_while_gone),
      cmocka_unit_test(test_functor_beside_kernel_keys),
      cmocka_unit_test(test_cycles_keep_memory_flat),
      cmocka_unit_test(test_distinct_names_cost_only_handles),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
