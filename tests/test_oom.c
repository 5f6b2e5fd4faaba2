/*
 * test_oom.c: every allocation failure of libkdispatch is survived.
 *
 * Through the public host allocator (kd/memory.h, tests/kd_oom.h), each
 * workload runs with allocation N = 1, 2, ... made to fail until a run makes
 * fewer than N allocations (every failure point tried). Each run must: not
 * crash; return KD_OK or KD_ENOMEM (never another status) with a message;
 * leave nothing allocated once its objects are released (LeakSanitizer in
 * the ASan build); and, for registrations, leave the registry exactly as it
 * was when one fails (kd_dispatcher_check and the dump of every operator,
 * compared before and after the failing registration).
 *
 * Workloads: registration (define, implement plain, keyed and composite
 * kernels, override, def_kernel, a fallback, custom kernels and their
 * merge); calls (tensors made, typed and boxed calls, kernel-key
 * selection); libraries described by KD_LIBRARY (opened all or nothing,
 * closed and released, where a failure can only degrade a slot, which the
 * next change repairs); operators coming (back) to life beside a fallback,
 * whose slot the registration's transaction fills. The number of failure points tried per workload is
 * printed.
 */
#define KD_NO_AUTO_REGISTER /* the described library below is opened by the test */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_oom.h"
#include "kd_test.h"

static int g_warnings;
static char g_last_warning[512];
static void count_warning(const char *msg, void *ud) {
  (void)ud;
  snprintf(g_last_warning, sizeof g_last_warning, "%s", msg);
  g_warnings++;
}

static int setup(void **state) {
  (void)state;
  kd_set_warning_handler(count_warning, NULL);
  kd_oom_install();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_oom_disarm();
  kd_oom_uninstall();
  kd_set_warning_handler(NULL, NULL);
  return 0;
}

/* ---- Kernels ------------------------------------------------------------- */

/* A new tensor shaped as the first argument (its bytes copied): allocates,
 * so it fails under injection too and must report it. */
static kd_status copy_kernel(const kd_call *call, const kd_arg *args, kd_value *rets) {
  (void)call;
  kd_tensor *t = args[0].t, *out;
  kd_status st = kd_tensor_empty(kd_tensor_ndim(t), kd_tensor_sizes(t), kd_tensor_dtype(t),
                                 kd_device_cpu(), &out);
  if (st) return st;
  memcpy(kd_tensor_data(out), kd_tensor_data(t), (size_t)kd_tensor_numel(t) * kd_tensor_itemsize(t));
  rets[0] = kd_value_tensor(out); /* takes its own reference */
  kd_tensor_release(out);
  return KD_OK;
}

static kd_status add_kernel(const kd_call *call, const kd_arg *args, kd_value *rets) {
  return copy_kernel(call, args, rets);
}

static kd_status boxed_fallback(const kd_call *call, kd_stack *stack) {
  return kd_call_boxed_keys(call->op, call->keys & ~kd_keyset_of(call->key), stack);
}

/* ---- Registration ------------------------------------------------------------ */

typedef struct reg_state {
  kd_library *def, *cpu, *mode, *custom;
  kd_registration *neg_override;
} reg_state;

#define NEG_SCHEMA "oomr::neg(Tensor self) -> Tensor"
#define ADD_SCHEMA "oomr::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"

/* Step i of the registration workload; KD_OK past the last step sets *done. */
static kd_status reg_step(reg_state *s, int i, bool *done) {
  static const char *const tags[] = {"pointwise", "core"};
  kd_kernel neg = kd_kernel_unboxed(copy_kernel, "(Tensor) -> Tensor");
  kd_kernel add = kd_kernel_unboxed(add_kernel, "(Tensor, Tensor, Scalar) -> Tensor");
  kd_kernel mul = kd_kernel_unboxed(add_kernel, "(Tensor, Tensor) -> Tensor");
  kd_kernel fb = kd_kernel_boxed(boxed_fallback);
  switch (i) {
    case 0:
      return kd_library_open(KD_LIBRARY_DEF, "oomr", KD_KEY_UNDEFINED, __FILE__, __LINE__, &s->def);
    case 1:
      return kd_library_open(KD_LIBRARY_IMPL, "oomr", KD_KEY_CPU, __FILE__, __LINE__, &s->cpu);
    case 2:
      return kd_library_def(s->def, NEG_SCHEMA, tags, 2, NULL);
    case 3: /* a kernel before its operator's schema */
      return kd_library_impl_keyed(s->cpu, "add.Tensor", KD_ALL_LAYOUT,
                                   KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_INT64), &add, NULL);
    case 4: /* the schema arrives: the selector's plans are made again */
      return kd_library_def(s->def, ADD_SCHEMA, NULL, 0, NULL);
    case 5:
      return kd_library_impl(s->cpu, "neg", &neg, NULL);
    case 6: /* overrides the one of step 5 */
      return kd_library_impl(s->cpu, "neg", &neg, &s->neg_override);
    case 7:
      return kd_library_impl_keyed(s->cpu, "add.Tensor", KD_LAYOUT_STRIDED,
                                   KD_DTYPE_BIT(KD_FLOAT64), &add, NULL);
    case 8:
      return kd_library_impl_key(s->def, "neg", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD, &neg, NULL);
    case 9:
      return kd_library_def_kernel(s->def, "mul", &mul, NULL);
    case 10:
      return kd_library_open(KD_LIBRARY_IMPL, "oomr", KD_KEY_MODE1, __FILE__, __LINE__, &s->mode);
    case 11: /* every operator's Mode1 slot */
      return kd_library_fallback(s->mode, &fb, NULL);
    case 12:
      return kd_library_open(KD_LIBRARY_IMPL, "oomr", KD_KEY_CPU, __FILE__, __LINE__, &s->custom);
    case 13: {
      kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32),
                              &add, KD_KERNEL_CUSTOM | KD_KERNEL_OVERRIDE, -1, NULL, NULL};
      return kd_library_impl_keyed_ex(s->custom, "add.Tensor", &spec, NULL);
    }
    case 14: {
      kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_INT32),
                              &add, KD_KERNEL_CUSTOM, -1, NULL, NULL};
      return kd_library_impl_keyed_ex(s->custom, "add.Tensor", &spec, NULL);
    }
    case 15:
      return kd_custom_kernels_merge(NULL);
    case 16: { /* a kernel that will not fit the schema, before it */
      kd_kernel bad = kd_kernel_unboxed(add_kernel, "(Tensor, int) -> Tensor");
      return kd_library_impl(s->cpu, "sub", &bad, NULL);
    }
    case 17: /* the schema arrives: the kernel is set aside (all or nothing) */
      return kd_library_def(s->def, "sub(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
    /* Registrations whose dependent slots change too: the composite fills
     * the NestedTensor keys; a Quantized kernel makes AutogradOther
     * ambiguous; the Autograd alias fills the autograd keys. */
    case 18:
      return kd_library_impl_key(s->def, "neg", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD, &neg, NULL);
    case 19:
      return kd_library_impl_key(s->def, "neg", KD_KEY_QUANTIZED_CPU, &neg, NULL);
    case 20:
      return kd_library_impl_key(s->def, "neg", KD_KEY_AUTOGRAD, &neg, NULL);
    default:
      *done = true;
      return KD_OK;
  }
}

static void reg_close(reg_state *s) {
  kd_library_close(s->custom);
  kd_library_close(s->mode);
  kd_library_close(s->cpu);
  kd_library_close(s->def);
  memset(s, 0, sizeof *s);
}

static void test_registration(void **state) {
  (void)state;
  char *initial = kd_oom_snapshot();
  long n;
  int failures = 0;
  for (n = 1;; n++) {
    reg_state s = {0};
    bool done = false;
    kd_oom_arm(n);
    for (int i = 0; !done; i++) {
      char *before = kd_oom_snapshot();
      kd_status st = reg_step(&s, i, &done);
      if (st) {
        /* The failed registration changed nothing. */
        assert_int_equal(st, KD_ENOMEM);
        assert_true(kd_oom_fired());
        assert_non_null(strstr(kd_last_error(), "out of memory"));
        /* The message names the operator (and key) of the registration. */
        static const char *const names[] = {NULL,  NULL,  "neg", "add", "add",   "neg",
                                             "neg", "add", "neg", "mul", NULL,    "Mode1",
                                             NULL,  "add", "add", "add", "sub", "sub",
                                             "neg", "neg", "neg"};
        if (names[i] && !strstr(kd_last_error(), names[i]))
          fail_msg("N=%ld, step %d: the message does not name '%s': %s", n, i, names[i],
                   kd_last_error());
        char *after = kd_oom_snapshot();
        if (strcmp(before, after) != 0)
          fail_msg("N=%ld, step %d (%s): the registry changed:\n--- before\n%s--- after\n%s", n,
                   i, kd_last_error(), before, after);
        free(after);
        free(before);
        failures++;
        break;
      }
      free(before);
    }
    kd_oom_disarm();
    bool fired = kd_oom_fired();
    if (done) { /* every registration made: the tables are right */
      KD_ASSERT_OK(kd_dispatcher_check());
      kd_op *op;
      KD_ASSERT_OK(kd_op_find("oomr::add", "Tensor", &op));
      KD_ASSERT_OK(kd_op_find("oomr::neg", NULL, &op));
      char table[8192];
      kd_op_dump_table(op, table, sizeof table);
      if (!strstr(table, "\n  AutogradOther: unboxed+boxed [ambiguous autogradother]") ||
          !strstr(table, "\n  AutogradCPU: unboxed [autograd kernel]"))
        fail_msg("N=%ld: oomr::neg's autograd slots:\n%s", n, table);
    }
    reg_close(&s);
    char *end = kd_oom_snapshot();
    assert_string_equal(end, initial);
    free(end);
    if (!fired) break; /* fewer than n allocations: every point tried */
  }
  print_message("registration: %ld failure points tried, %d registrations failed with "
                "KD_ENOMEM and changed nothing\n",
                n - 1, failures);
  assert_true(n > 20);
  assert_true(failures > 0);
  free(initial);
}

/* ---- Calls ------------------------------------------------------------------- */

static kd_status call_workload(void) {
  kd_op *neg, *add;
  kd_status st = kd_op_find_typed("oomc::neg", NULL, "(Tensor) -> Tensor", &neg);
  if (!st) st = kd_op_find_typed("oomc::add", "Tensor", "(Tensor, Tensor, Scalar) -> Tensor", &add);
  if (st) return st;
  int64_t sizes[2] = {2, 3}, big[1] = {100};
  float data[6] = {1, 2, 3, 4, 5, 6};
  kd_tensor *a = NULL, *b = NULL;
  if ((st = kd_tensor_from_data(2, sizes, KD_FLOAT32, data, &a))) return st;
  if ((st = kd_tensor_empty(1, big, KD_INT64, kd_device_cpu(), &b))) goto out;
  /* Typed: a plain kernel, then a kernel-key selection. */
  kd_arg args[3];
  kd_value ret = kd_value_none();
  args[0].t = a;
  if ((st = kd_call_unboxed(neg, args, &ret))) goto out;
  kd_value_destroy(&ret);
  kd_scalar one = kd_scalar_int(1);
  args[0].t = b;
  args[1].t = b;
  args[2].s = &one;
  if ((st = kd_call_unboxed(add, args, &ret))) goto out;
  kd_value_destroy(&ret);
  /* Boxed, with the default of alpha filled in from the schema. */
  kd_stack stack;
  kd_stack_init(&stack);
  st = kd_stack_push_tensor(&stack, a);
  if (!st) st = kd_stack_push_tensor(&stack, a);
  if (!st) st = kd_stack_push_int(&stack, 2);
  if (!st) st = kd_call_boxed(add, &stack);
  if (!st) st = kd_call_boxed(neg, &stack);
  kd_stack_free(&stack);
out:
  kd_tensor_release(a);
  kd_tensor_release(b);
  return st;
}

static void test_calls(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "oomc", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "oomc", KD_KEY_CPU);
  kd_kernel neg = kd_kernel_unboxed(copy_kernel, "(Tensor) -> Tensor");
  kd_kernel add = kd_kernel_unboxed(add_kernel, "(Tensor, Tensor, Scalar) -> Tensor");
  KD_ASSERT_OK(kd_library_def(def, "oomc::neg(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(
      def, "oomc::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", NULL, 0,
      NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "neg", &neg, NULL));
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "add.Tensor", KD_ALL_LAYOUT,
                                     KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_INT64), &add, NULL));
  KD_ASSERT_OK(call_workload()); /* warm: first-use caches */
  long n;
  int failures = 0;
  for (n = 1;; n++) {
    kd_oom_arm(n);
    kd_status st = call_workload();
    kd_oom_disarm();
    if (st) {
      if (st != KD_ENOMEM) fail_msg("N=%ld: %s: %s", n, kd_status_name(st), kd_last_error());
      assert_true(kd_oom_fired());
      assert_true(strlen(kd_last_error()) > 0);
      failures++;
    }
    if (!kd_oom_fired()) {
      KD_ASSERT_OK(st);
      break;
    }
  }
  print_message("calls: %ld failure points tried, %d calls failed with KD_ENOMEM\n", n - 1,
                failures);
  assert_true(failures > 0);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cpu);
  kd_library_close(def);
}

/* ---- Described libraries: opened all or nothing, closed ---------------------- */

KD_LIBRARY(ooml, m) {
  kd_library_def(m, "ooml::neg(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "ooml::add.Tensor(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
  kd_kernel ce = kd_kernel_unboxed(copy_kernel, "(Tensor) -> Tensor");
  kd_library_impl_key(m, "neg", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD, &ce, NULL);
}

static int g_cpu_neg_calls;
static kd_status cpu_neg(const kd_call *call, const kd_arg *args, kd_value *rets) {
  g_cpu_neg_calls++;
  return copy_kernel(call, args, rets);
}

KD_LIBRARY_IMPL(ooml, CPU, m) {
  kd_kernel neg = kd_kernel_unboxed(cpu_neg, "(Tensor) -> Tensor");
  kd_library_impl(m, "neg", &neg, NULL);
  kd_library_impl(m, "neg", &neg, NULL); /* stacked: a release exposes the first */
}

static kd_status bin_copy(const kd_call *call, const kd_arg *args, kd_value *rets) {
  return copy_kernel(call, args, rets);
}

KD_REGISTER_KERNEL_OVERLOAD(ooml, add, Tensor, CPU, KD_ALL_LAYOUT, bin_copy,
                            "(Tensor, Tensor) -> Tensor", KD_FLOAT32, KD_INT64) {}

static const kd_library_desc *const ooml_descs[] = {
    &kd_library_def_ooml, &kd_library_kernel_ooml_add_Tensor_CPU, &kd_library_impl_ooml_CPU};
#define NDESCS (sizeof ooml_descs / sizeof ooml_descs[0])

static void close_descs(void) {
  for (size_t i = NDESCS; i-- > 0;) kd_library_close_desc(ooml_descs[i]);
}

static void test_libraries(void **state) {
  (void)state;
  char *initial = kd_oom_snapshot();
  long n;
  int failures = 0;
  /* Opening: each descriptor all or nothing. */
  for (n = 1;; n++) {
    kd_oom_arm(n);
    kd_status st = KD_OK;
    for (size_t i = 0; i < NDESCS && !st; i++) {
      char *before = kd_oom_snapshot();
      st = kd_library_open_desc(ooml_descs[i]);
      if (st) {
        assert_int_equal(st, KD_ENOMEM);
        assert_non_null(strstr(kd_last_error(), "out of memory"));
        char *after = kd_oom_snapshot();
        if (strcmp(before, after) != 0)
          fail_msg("N=%ld, descriptor %zu: the registry changed:\n--- before\n%s--- after\n%s", n,
                   i, before, after);
        free(after);
        failures++;
      }
      free(before);
    }
    kd_oom_disarm();
    bool fired = kd_oom_fired();
    if (!st) {
      kd_op *op;
      KD_ASSERT_OK(kd_op_find("ooml::add", "Tensor", &op));
      KD_ASSERT_OK(kd_dispatcher_check());
    }
    close_descs();
    if (!fired) break;
  }
  print_message("libraries (open): %ld failure points tried, %d opens failed with KD_ENOMEM and "
                "changed nothing\n",
                n - 1, failures);
  assert_true(failures > 0);

  /* Closing: a release cannot fail; a slot it cannot rebuild is left empty
   * (never the released kernel) with a warning, and the next change of the
   * operator rebuilds it. */
  long m;
  int degraded = 0;
  for (m = 1;; m++) {
    for (size_t i = 0; i < NDESCS; i++) KD_ASSERT_OK(kd_library_open_desc(ooml_descs[i]));
    int warnings = g_warnings;
    kd_oom_arm(m);
    kd_library_close_desc(ooml_descs[2]); /* the stacked CPU kernels of neg */
    kd_oom_disarm();
    bool fired = kd_oom_fired();
    /* Consistent, or a slot left empty and reported, with a warning. */
    kd_status check = kd_dispatcher_check();
    if (check) {
      assert_int_equal(check, KD_EINTERNAL);
      assert_non_null(strstr(kd_last_error(), "stale"));
      assert_int_not_equal(g_warnings, warnings);
      degraded++;
    }
    /* Never the released kernel: the composite one, or no kernel. */
    kd_op *neg;
    KD_ASSERT_OK(kd_op_find("ooml::neg", NULL, &neg));
    int64_t size = 4;
    kd_tensor *t;
    KD_ASSERT_OK(kd_tensor_empty(1, &size, KD_FLOAT32, kd_device_cpu(), &t));
    kd_arg arg = {.t = t};
    kd_value ret = kd_value_none();
    int calls = g_cpu_neg_calls;
    kd_status st = kd_call_unboxed(neg, &arg, &ret);
    assert_int_equal(g_cpu_neg_calls, calls);
    if (check)
      assert_int_equal(st, KD_ENOKERNEL);
    else
      KD_ASSERT_OK(st);
    kd_value_destroy(&ret);
    kd_tensor_release(t);
    close_descs();
    for (size_t i = 0; i < NDESCS; i++) KD_ASSERT_OK(kd_library_open_desc(ooml_descs[i]));
    check = kd_dispatcher_check(); /* repaired by the next change */
    if (check) fail_msg("M=%ld: %s", m, kd_last_error());
    close_descs();
    if (!fired) break;
  }
  print_message("libraries (close): %ld failure points tried, %d left a slot to repair\n", m - 1,
                degraded);
  char *end = kd_oom_snapshot();
  assert_string_equal(end, initial);
  free(end);
  free(initial);
}

/* ---- Operators coming alive beside a fallback -------------------------------- */

/* An operator nothing defines or implements has an empty table, even at
 * keys with a fallback (docs/ARCHITECTURE.md, "Operator lifetime"): the
 * registration that brings it (back) to life fills those slots, and must do
 * so inside its transaction, so that a failure changes nothing and a success
 * leaves no slot stale. Each path: a definition, a plain kernel before any
 * definition, a custom kernel merged. The first run creates the operators;
 * every later one revives them (closed at the end of each run). */
typedef struct revive_state {
  kd_library *def, *cpu;
} revive_state;

static kd_status revive_step(revive_state *s, int i, bool *done) {
  kd_kernel k = kd_kernel_unboxed(copy_kernel, "(Tensor) -> Tensor");
  switch (i) {
    case 0:
      return kd_library_open(KD_LIBRARY_DEF, "oomv", KD_KEY_UNDEFINED, __FILE__, __LINE__, &s->def);
    case 1:
      return kd_library_open(KD_LIBRARY_IMPL, "oomv", KD_KEY_CPU, __FILE__, __LINE__, &s->cpu);
    case 2:
      return kd_library_def(s->def, "oomv::a(Tensor self) -> Tensor", NULL, 0, NULL);
    case 3: /* alive through a kernel alone */
      return kd_library_impl(s->cpu, "b", &k, NULL);
    case 4: {
      kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32),
                              &k, KD_KERNEL_CUSTOM, -1, NULL, NULL};
      return kd_library_impl_keyed_ex(s->cpu, "c", &spec, NULL);
    }
    case 5: /* "c" comes alive here */
      return kd_custom_kernels_merge(NULL);
    default:
      *done = true;
      return KD_OK;
  }
}

static void test_revive_beside_fallback(void **state) {
  (void)state;
  kd_library *mode;
  kd_kernel fb = kd_kernel_boxed(boxed_fallback);
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "oomv", KD_KEY_MODE1, __FILE__, __LINE__, &mode));
  KD_ASSERT_OK(kd_library_fallback(mode, &fb, NULL));
  char *initial = kd_oom_snapshot();
  static const char *const names[] = {NULL, NULL, "oomv::a", "oomv::b", "oomv::c", "oomv::c"};
  long n;
  int failures = 0;
  for (n = 1;; n++) {
    revive_state s = {0};
    bool done = false;
    kd_oom_arm(n);
    for (int i = 0; !done; i++) {
      char *before = kd_oom_snapshot();
      kd_status st = revive_step(&s, i, &done);
      if (st) {
        assert_int_equal(st, KD_ENOMEM);
        assert_true(kd_oom_fired());
        assert_non_null(strstr(kd_last_error(), "out of memory"));
        if (names[i] && !strstr(kd_last_error(), names[i] + 6))
          fail_msg("N=%ld, step %d: the message does not name '%s': %s", n, i, names[i],
                   kd_last_error());
        char *after = kd_oom_snapshot();
        if (strcmp(before, after) != 0)
          fail_msg("N=%ld, step %d (%s): the registry changed:\n--- before\n%s--- after\n%s", n,
                   i, kd_last_error(), before, after);
        free(after);
        free(before);
        failures++;
        break;
      }
      free(before);
      /* A registration that succeeded left no slot stale (checked with
       * injection held off). */
      long saved = atomic_exchange(&kd_oom_countdown_, 0);
      if (kd_dispatcher_check()) fail_msg("N=%ld, after step %d: %s", n, i, kd_last_error());
      atomic_store(&kd_oom_countdown_, saved);
    }
    kd_oom_disarm();
    bool fired = kd_oom_fired();
    if (done) { /* all three alive, each with the fallback's slot */
      for (size_t i = 2; i < 5; i++) {
        kd_op *op;
        KD_ASSERT_OK(kd_op_find(names[i], NULL, &op));
        char table[8192];
        kd_op_dump_table(op, table, sizeof table);
        if (!strstr(table, "\n  Mode1: boxed [backend fallback] from "))
          fail_msg("N=%ld: '%s' has no fallback slot:\n%s", n, names[i], table);
      }
    }
    kd_library_close(s.cpu);
    kd_library_close(s.def);
    char *end = kd_oom_snapshot();
    assert_string_equal(end, initial);
    free(end);
    if (!fired) break;
  }
  print_message("operators coming alive beside a fallback: %ld failure points tried, %d "
                "registrations failed with KD_ENOMEM and changed nothing\n",
                n - 1, failures);
  assert_true(failures > 5);
  kd_library_close(mode);
  free(initial);
}

/* ---- The host allocator API ------------------------------------------------------- */

static void test_host_allocator_api(void **state) {
  (void)state;
  kd_host_allocator a;
  KD_ASSERT_OK(kd_host_allocator_get(&a));
  assert_ptr_equal(a.malloc, kd_oom_malloc_);
  kd_host_allocator bad = a;
  bad.api_version = 7;
  KD_ASSERT_ERR(kd_host_allocator_set(&bad), KD_EINVAL,
                "kd_host_allocator_set: kd_host_allocator api_version 7 is not supported: this "
                "library accepts only 1 (KD_HOST_ALLOCATOR_API_VERSION)");
  bad = a;
  bad.free = NULL;
  KD_ASSERT_ERR(kd_host_allocator_set(&bad), KD_EINVAL, "must all be set");
  KD_ASSERT_ERR(kd_host_allocator_get(NULL), KD_EINVAL, "NULL out");
  KD_ASSERT_OK(kd_host_allocator_get(&a)); /* unchanged by the refusals */
  assert_ptr_equal(a.free, kd_oom_free_);
  /* The public functions go through it, and their edge cases. */
  kd_oom_arm(1);
  assert_null(kd_host_malloc(8));
  assert_true(kd_oom_fired());
  kd_oom_arm(2);
  char *p = kd_host_strdup("abc");
  assert_string_equal(p, "abc");
  assert_null(kd_host_realloc(p, 100)); /* the second: fails, p intact */
  assert_string_equal(p, "abc");
  kd_oom_disarm();
  kd_host_free(p);
  assert_null(kd_host_calloc((size_t)1 << 40, (size_t)1 << 40)); /* overflow */
  assert_null(kd_host_strdup(NULL));
  kd_host_free(NULL);
  void *z = kd_host_malloc(0);
  assert_non_null(z);
  kd_host_free(z);
  /* A tensor's bytes come from it too (the default cpu allocator), aligned. */
  int64_t sizes[1] = {1000};
  kd_tensor *t;
  kd_oom_arm(2); /* the tensor's header, then its bytes */
  KD_ASSERT_ERR(kd_tensor_empty(1, sizes, KD_FLOAT64, kd_device_cpu(), &t), KD_ENOMEM,
                "out of memory");
  kd_oom_disarm();
  KD_ASSERT_OK(kd_tensor_empty(1, sizes, KD_FLOAT64, kd_device_cpu(), &t));
  assert_int_equal((uintptr_t)kd_tensor_data(t) % 64, 0);
  kd_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_allocator_api),
      cmocka_unit_test(test_registration),
      cmocka_unit_test(test_calls),
      cmocka_unit_test(test_libraries),
      cmocka_unit_test(test_revive_beside_fallback),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
