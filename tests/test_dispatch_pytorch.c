/*
 * PyTorch 1.13's test/test_dispatch.py, ported: the scenarios with the
 * autograd keys and the alias keys (Autograd, AutogradCPU, AutogradOther,
 * CompositeImplicitAutograd, CompositeExplicitAutograd, fallthrough), run by
 * a C `commute` harness as PyTorch's run_ops/commute.
 *
 * The harness (commute below): every registration ("op") is made in its own
 * FRAGMENT (or IMPL, for fallbacks) library, so that closing the library
 * undoes exactly it, as PyTorch's tests drop one c10::Library. The ops are
 * run in every order of registration and, for each, in every order of
 * release; after every step kd_dispatcher_check() must pass, and the
 * operator's state (kd_op_dump) and computed table (kd_op_dump_table) must
 * equal those first seen for the same SET of active registrations (path
 * independence). At the end the state and the lines of the table for the
 * keys PyTorch checks (its dispatch_keys_to_check, extracted as its
 * extract_dispatch_table_with_keys does) must equal the text written out in
 * the test. After every step the harness also calls the operator, with a
 * real CPU tensor (which carries ADInplaceOrView and AutogradCPU) and with
 * explicit key sets for the other columns, and checks that the kernel the
 * table names is the one that runs (every kernel records its own name).
 *
 * Cost: with 5 ops, 120 x 120 orders is 14400 runs; the harness runs every
 * release order only up to 4 ops. With 5 ops it runs every registration
 * order with three release orders (reverse, same, rotated), plus every
 * release order after the registrations in the written order: every subset
 * of the registrations is still reached, from many paths. The environment
 * variable KD_TEST_COMMUTE_ALL=1 runs all 14400 (by hand: about 30 times
 * longer).
 *
 * Differences from PyTorch, by design (each scenario says which apply):
 *  - XLA: kdispatch has no XLA key; PrivateUse1 stands in for it
 *    (AutogradPrivateUse1 for AutogradXLA).
 *  - An operator implemented with no key (PyTorch's m.impl("foo", fn), and
 *    the kernel of m.def("foo", fn)) goes to kdispatch's CatchAll, not to
 *    CompositeImplicitAutograd: CatchAll fills a backend's slot after its
 *    kernels and composites ("catch-all"), and an autograd slot only after
 *    the autograd fallthrough, so it never hides a backend kernel under an
 *    autograd key. Where PyTorch's def_name_t_t serves to give the operator
 *    a CompositeImplicitAutograd kernel (the computed-table scenarios), the
 *    port registers exactly that: a definition plus a
 *    CompositeImplicitAutograd kernel, in one library.
 *  - An operator handle lives for the process: once its last registration
 *    is released, kd_op_find fails, which the harness records as the empty
 *    state, as PyTorch's _dispatch_dump of an unknown operator is "".
 *  - Dump wording: kdispatch's (docs/ARCHITECTURE.md), with PyTorch's text
 *    quoted above each expectation; the registrations of kd_op_dump are
 *    listed in key order (runtime keys, then the aliases in enum order).
 *  - Failures: defining the same schema twice adds a reference (no error);
 *    a kernel whose signature does not fit fails when the operator is
 *    defined first, and is set aside (rejected) by a later definition.
 *    test_multiple_def and test_def_impl_schema_mismatch say how.
 * Not ported: alias analysis kinds (test_def_with_explicit_alias,
 * test_multiple_def_alias_*), dangling impls and the registration listing
 * by key (no kdispatch counterpart), and TestPythonDispatcher's refusals
 * (its Python model's own rules).
 */
#include "kd_test.h"

/* ---- Kernels that say who they are ------------------------------------------ */

/* The name of the kernel that ran last (its closure data). */
static char ran[64];

static kd_status k_named(const kd_call *c, const kd_arg *a, kd_value *r) {
  snprintf(ran, sizeof ran, "%s", (const char *)c->data);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* A boxed fallback: records its name, leaves its argument as the result. */
static kd_status fb_named(const kd_call *c, kd_stack *s) {
  (void)s;
  snprintf(ran, sizeof ran, "%s", (const char *)c->data);
  return KD_OK;
}

static void quiet(const char *msg, void *ud) {
  (void)msg;
  (void)ud;
}

/* ---- Registrations ------------------------------------------------------------- */

typedef enum op_kind {
  OP_DEF,          /* m.def(schema) */
  OP_DEF_NAME,     /* m.def("foo", fn): kd_library_def_kernel (CatchAll) */
  OP_DEF_NAME_CIA, /* m.def("foo", fn) as PyTorch registers it: a definition
                      and a CompositeImplicitAutograd kernel */
  OP_IMPL,         /* m.impl("foo", key, fn) */
  OP_IMPL_FALLTHROUGH, /* m.impl("foo", key, CppFunction::makeFallthrough()) */
  OP_FALLBACK,     /* a boxed fallback for key */
  OP_FALLBACK_FALLTHROUGH, /* a fallthrough fallback for key */
} op_kind;

typedef struct reg_op {
  op_kind kind;
  kd_dispatch_key key; /* IMPL*, FALLBACK* */
  const char *text;    /* DEF: the schema; others: the kernel's name and debug string */
} reg_op;

#define DEF(schema) {OP_DEF, KD_KEY_UNDEFINED, schema}
#define DEF_NAME(fn) {OP_DEF_NAME, KD_KEY_UNDEFINED, fn}
#define DEF_NAME_CIA(fn) {OP_DEF_NAME_CIA, KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD, fn}
#define IMPL(key, fn) {OP_IMPL, KD_KEY_##key, fn}
#define IMPL_FALLTHROUGH(key, fn) {OP_IMPL_FALLTHROUGH, KD_KEY_##key, fn}
#define FALLBACK(key, fn) {OP_FALLBACK, KD_KEY_##key, fn}
#define FALLBACK_FALLTHROUGH(key, fn) {OP_FALLBACK_FALLTHROUGH, KD_KEY_##key, fn}

static const char *SIG = "(Tensor) -> Tensor";

/* Opens op's library (owned by the caller: kd_library_close) and makes its
 * registrations there; returns the first failure (the library stays open,
 * holding what succeeded, for the caller to close). */
static kd_status apply_op(const reg_op *op, const char *ns, kd_library **lib) {
  bool fallback = op->kind == OP_FALLBACK || op->kind == OP_FALLBACK_FALLTHROUGH;
  KD_ASSERT_OK(kd_library_open(fallback ? KD_LIBRARY_IMPL : KD_LIBRARY_FRAGMENT, ns,
                               fallback ? op->key : KD_KEY_CATCH_ALL, "/dev/null", 0, lib));
  kd_kernel k = kd_kernel_closure(k_named, SIG, (void *)op->text, NULL);
  k.debug = op->text;
  kd_status st;
  switch (op->kind) {
    case OP_DEF:
      return kd_library_def(*lib, op->text, NULL, 0, NULL);
    case OP_DEF_NAME:
      return kd_library_def_kernel(*lib, "foo", &k, NULL);
    case OP_DEF_NAME_CIA:
      if ((st = kd_library_def(*lib, "foo(Tensor _0) -> Tensor", NULL, 0, NULL))) return st;
      return kd_library_impl_key(*lib, "foo", op->key, &k, NULL);
    case OP_IMPL:
      return kd_library_impl_key(*lib, "foo", op->key, &k, NULL);
    case OP_IMPL_FALLTHROUGH:
      k = kd_kernel_fallthrough();
      k.debug = op->text;
      return kd_library_impl_key(*lib, "foo", op->key, &k, NULL);
    case OP_FALLBACK:
      k = kd_kernel_boxed(fb_named);
      k.data = (void *)op->text;
      k.debug = op->text;
      return kd_library_fallback(*lib, &k, NULL);
    case OP_FALLBACK_FALLTHROUGH:
      k = kd_kernel_fallthrough();
      k.debug = op->text;
      return kd_library_fallback(*lib, &k, NULL);
  }
  return KD_EINVAL;
}

/* ---- Text --------------------------------------------------------------------- */

/* s with every occurrence of `from` replaced by `to`; malloc'd. */
static char *replace_all(const char *s, const char *from, const char *to) {
  size_t nf = strlen(from), nt = strlen(to), n = 0;
  for (const char *p = s; (p = strstr(p, from)); p += nf) n++;
  char *out = malloc(strlen(s) + n * (nt > nf ? nt - nf : 0) + 1);
  assert_non_null(out);
  char *w = out;
  for (const char *p = s, *q; *p; p = q + nf) {
    if (!(q = strstr(p, from))) {
      strcpy(w, p);
      return out;
    }
    memcpy(w, p, (size_t)(q - p));
    w += q - p;
    memcpy(w, to, nt);
    w += nt;
  }
  *w = '\0';
  return out;
}

/* The line of `table` for key `name` ("  NAME: ..."), without its indent
 * and newline, copied into buf; false when the table has no such line (a
 * missing slot). */
static bool table_line(const char *table, const char *name, char *buf, size_t cap) {
  size_t n = strlen(name);
  for (const char *p = table; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, "  ", 2) == 0 && strncmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
      const char *end = strchr(p, '\n');
      size_t len = end ? (size_t)(end - p - 2) : strlen(p + 2);
      if (len >= cap) fail_msg("table line of %s too long", name);
      memcpy(buf, p + 2, len);
      buf[len] = '\0';
      return true;
    }
  }
  return false;
}

/* PyTorch's dispatch_keys_to_check, XLA -> PrivateUse1. */
static const kd_dispatch_key KEYS_TO_CHECK[] = {
    KD_KEY_UNDEFINED,      KD_KEY_CPU,          KD_KEY_CUDA,         KD_KEY_PRIVATEUSE1,
    KD_KEY_AUTOGRAD_OTHER, KD_KEY_AUTOGRAD_CPU, KD_KEY_AUTOGRAD_CUDA, KD_KEY_AUTOGRAD_PRIVATEUSE1,
};

/* extract_dispatch_table_with_keys: the lines of `keys`, in that order (plus
 * `extra` when it is not Undefined), each without its indent. Malloc'd. */
static char *extract(const char *table, kd_dispatch_key extra) {
  char *out = calloc(1, 4096), line[512];
  assert_non_null(out);
  size_t n = sizeof KEYS_TO_CHECK / sizeof *KEYS_TO_CHECK;
  for (size_t i = 0; i <= n; i++) {
    if (i == n && extra == KD_KEY_UNDEFINED) break;
    kd_dispatch_key k = i < n ? KEYS_TO_CHECK[i] : extra;
    if (table_line(table, kd_dispatch_key_name(k), line, sizeof line)) {
      strcat(out, line);
      strcat(out, "\n");
    }
  }
  return out;
}

/* ---- Calls ------------------------------------------------------------------------ */

/* How many calls of each outcome the harness checked: a kernel ran, a
 * missing slot failed, the ambiguous kernel failed, a fallthrough slot was
 * skipped on the way. */
static struct {
  unsigned ran, missing, ambiguous, fell_through;
} calls;

/* What a call with key set `keys` must do according to the computed table:
 * walk the keys from the highest, skipping fallthrough slots, to the first
 * slot that is not one (Undefined when all are). Then call and compare:
 * a kernel must run and be the one the line names; a missing slot fails
 * with KD_ENOKERNEL; the ambiguous-AutogradOther kernel fails with
 * KD_EUNSUPPORTED naming the operator. Each call is made typed and boxed:
 * `real` calls with kd_call_unboxed / kd_call_boxed (the tensor's own keys
 * and the thread-local sets), else with kd_call_unboxed_keys /
 * kd_call_boxed_keys. t is borrowed. */
static void check_call(kd_op *op, const char *table, kd_keyset keys, kd_tensor *t, bool real,
                       const char *what, const char *prov) {
  char line[512];
  bool found = false;
  kd_keyset ks = keys | 1;
  for (;;) {
    kd_dispatch_key k = kd_keyset_highest(ks);
    found = table_line(table, kd_dispatch_key_name(k), line, sizeof line);
    if (!found || k == KD_KEY_UNDEFINED) break;
    const char *colon = strchr(line, ':');
    if (strncmp(colon + 2, "fallthrough ", 12) != 0) break;
    ks &= ~kd_keyset_of(k);
    calls.fell_through++;
  }
  for (int boxed = 0; boxed < 2; boxed++) {
    const char *form = boxed ? "boxed" : "unboxed";
    kd_status st;
    ran[0] = '\0';
    kd_clear_error();
    if (boxed) {
      kd_stack s;
      kd_stack_init(&s);
      kd_value v = kd_value_tensor(t);
      KD_ASSERT_OK(kd_stack_push(&s, &v));
      st = real ? kd_call_boxed(op, &s) : kd_call_boxed_keys(op, keys, &s);
      if (st == KD_OK && (s.size != 1 || s.items[0].tag != KD_VALUE_TENSOR || s.items[0].u.t != t))
        fail_msg("%s, %s (%s): the result is not the argument", what, form, prov);
      kd_stack_free(&s);
    } else {
      kd_arg a[1] = {{.t = t}};
      kd_value r[1] = {kd_value_none()};
      st = real ? kd_call_unboxed(op, a, r) : kd_call_unboxed_keys(op, keys, a, r);
      if (st == KD_OK && (r[0].tag != KD_VALUE_TENSOR || r[0].u.t != t))
        fail_msg("%s, %s (%s): the result is not the argument", what, form, prov);
      kd_value_destroy(&r[0]);
    }
    if (!found) {
      if (st != KD_ENOKERNEL)
        fail_msg("%s, %s (%s): the table has no kernel, the call returned %s (%s) after '%s'",
                 what, form, prov, kd_status_name(st), kd_last_error(), ran);
      calls.missing++;
      continue;
    }
    if (strstr(line, "[ambiguous autogradother]")) {
      if (st != KD_EUNSUPPORTED || !strstr(kd_last_error(), kd_op_name(op)) ||
          !strstr(kd_last_error(), "CompositeImplicitAutograd"))
        fail_msg("%s, %s (%s): the ambiguous kernel returned %s (%s)", what, form, prov,
                 kd_status_name(st), kd_last_error());
      calls.ambiguous++;
      continue;
    }
    const char *from = strstr(line, "] from ");
    if (!from) fail_msg("%s (%s): cannot read the table line '%s'", what, prov, line);
    if (st != KD_OK || strcmp(ran, from + 7) != 0)
      fail_msg("%s, %s (%s): the table says '%s', the call returned %s (%s) and ran '%s'", what,
               form, prov, line, kd_status_name(st), kd_last_error(), ran);
    calls.ran++;
  }
}

/* The calls of every observation: a real CPU tensor (dense, ADInplaceOrView
 * and AutogradCPU keys), the same in inference mode, and explicit key sets
 * for the CUDA, PrivateUse1 and QuantizedCPU columns and Undefined. */
static void check_calls(kd_op *op, const char *table, const char *prov) {
  /* Only an operator defined as "(Tensor) -> Tensor" can be called so (not
   * one that is only implemented, nor foo(Tensor x, Tensor y)). */
  const kd_schema *schema = kd_op_schema(op);
  if (!schema || kd_schema_num_arguments(schema) != 1) return;
  kd_tensor *t = kd_test_tensor_on(KD_DEVICE_CPU);
  kd_keyset adiov = kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW);
  /* A new tensor carries its autograd keys (the contract). */
  assert_true(kd_tensor_key_set(t) ==
              (kd_keyset_of(KD_KEY_CPU) | adiov | kd_keyset_of(KD_KEY_AUTOGRAD_CPU)));
  check_call(op, table, kd_tensor_key_set(t), t, true, "call with a CPU tensor", prov);
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  check_call(op, table, kd_keyset_of(KD_KEY_CPU), t, true, "call in inference mode", prov);
  kd_inference_mode_exit(g);
  check_call(op, table,
             kd_keyset_of(KD_KEY_CUDA) | adiov | kd_keyset_of(KD_KEY_AUTOGRAD_CUDA), t, false,
             "call with keys [CUDA, ADInplaceOrView, AutogradCUDA]", prov);
  check_call(op, table,
             kd_keyset_of(KD_KEY_PRIVATEUSE1) | adiov | kd_keyset_of(KD_KEY_AUTOGRAD_PRIVATEUSE1),
             t, false, "call with keys [PrivateUse1, ADInplaceOrView, AutogradPrivateUse1]", prov);
  check_call(op, table,
             kd_keyset_of(KD_KEY_QUANTIZED_CPU) | adiov | kd_keyset_of(KD_KEY_AUTOGRAD_OTHER), t,
             false, "call with keys [QuantizedCPU, ADInplaceOrView, AutogradOther]", prov);
  check_call(op, table, 0, t, false, "call with no keys (Undefined)", prov);
  kd_tensor_release(t);
}

/* ---- The harness -------------------------------------------------------------------- */

#define MAX_OPS 5

typedef struct result {
  bool seen;
  char *state, *table, *provenance; /* malloc'd */
} result;

typedef struct commute_ctx {
  char ns[32];
  const reg_op *ops;
  size_t n;
  bool expect_raises;
  /* Record the latest result of each set instead of comparing: for the
   * orders that are path dependent by design. */
  bool path_dependent;
  result results[1u << MAX_OPS];
  unsigned runs;
} commute_ctx;

static void ctx_init(commute_ctx *c, const reg_op *ops, size_t n, bool expect_raises) {
  static unsigned counter;
  memset(c, 0, sizeof *c);
  assert_true(n <= MAX_OPS);
  /* A fresh namespace per scenario, as PyTorch's __testN__ (the trailing
   * underscore makes no name a prefix of another), written "test" in the
   * expected text. */
  snprintf(c->ns, sizeof c->ns, "pyt%u_", ++counter);
  c->ops = ops;
  c->n = n;
  c->expect_raises = expect_raises;
}

static void ctx_free(commute_ctx *c) {
  for (size_t i = 0; i < (1u << MAX_OPS); i++) {
    free(c->results[i].state);
    free(c->results[i].table);
    free(c->results[i].provenance);
  }
}

/* Compares (state, table) with what was first seen for the set `active`,
 * or records them. Takes ownership of state and table. */
static void record(commute_ctx *c, unsigned active, char *state, char *table, const char *prov) {
  result *r = &c->results[active];
  if (r->seen && c->path_dependent) {
    free(r->state);
    free(r->table);
    free(r->provenance);
    r->seen = false;
  }
  if (!r->seen) {
    r->seen = true;
    r->state = state;
    r->table = table;
    r->provenance = strdup(prov);
    assert_non_null(r->provenance);
    return;
  }
  if (strcmp(r->state, state) != 0)
    fail_msg("state differs:\nexpected (from %s):\n%s\nactual (from %s):\n%s", r->provenance,
             r->state, prov, state);
  if (strcmp(r->table, table) != 0)
    fail_msg("table differs:\nexpected (from %s):\n%s\nactual (from %s):\n%s", r->provenance,
             r->table, prov, table);
  free(state);
  free(table);
}

/* A dump (kd_op_dump or kd_op_dump_table) of op, malloc'd: one call into a
 * buffer that is usually big enough, a second with the size it asked for
 * otherwise. */
static char *dump_of(size_t (*fn)(const kd_op *, char *, size_t), const kd_op *op) {
  size_t cap = 8192;
  char *buf = malloc(cap);
  assert_non_null(buf);
  size_t n = fn(op, buf, cap);
  if (n >= cap) {
    free(buf);
    buf = malloc(n + 1);
    assert_non_null(buf);
    assert_int_equal(fn(op, buf, n + 1), n);
  }
  return buf;
}

/* check_invariants: the dispatcher's own check, then the state and table of
 * ns::foo against the results, then the calls. */
static void observe(commute_ctx *c, unsigned active, const char *prov) {
  kd_status st = kd_dispatcher_check();
  if (st != KD_OK) fail_msg("kd_dispatcher_check after %s: %s", prov, kd_last_error());
  char qualified[64], ns_colons[40];
  snprintf(qualified, sizeof qualified, "%s::foo", c->ns);
  snprintf(ns_colons, sizeof ns_colons, "%s::", c->ns);
  kd_op *op;
  if (kd_op_find(qualified, "", &op) != KD_OK) {
    record(c, active, strdup(""), strdup(""), prov);
    return;
  }
  char *state = dump_of(kd_op_dump, op), *table = dump_of(kd_op_dump_table, op);
  check_calls(op, table, prov);
  char *nstate = replace_all(state, ns_colons, "test::");
  char *ntable = replace_all(table, ns_colons, "test::");
  free(state);
  free(table);
  record(c, active, nstate, ntable, prov);
}

static void fmt_order(char *buf, size_t cap, const unsigned *order, size_t n) {
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%u", i ? ", " : "", order[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* run_ops: the registrations in ctor order, then the releases in dtor
 * order, observing after each step. Returns the set to report: every op, or
 * the set at the failure when one registration failed (expect_raises). */
static unsigned run_ops(commute_ctx *c, const unsigned *ctor, const unsigned *dtor) {
  kd_library *libs[MAX_OPS] = {0};
  unsigned active = 0, full = (1u << c->n) - 1, report = full;
  char prov[256], co[64] = "[]", dor[64];
  size_t last = c->n;
  c->runs++;
  observe(c, 0, "the initial state");
  for (size_t i = 0; i < c->n; i++) {
    unsigned ix = ctor[i];
    active |= 1u << ix;
    fmt_order(co, sizeof co, ctor, i + 1);
    kd_clear_error();
    kd_status st = apply_op(&c->ops[ix], c->ns, &libs[ix]);
    if (st == KD_OK) {
      snprintf(prov, sizeof prov, "running ctors %s", co);
      observe(c, active, prov);
      continue;
    }
    if (!c->expect_raises) fail_msg("ctor %u failed (ctors %s): %s", ix, co, kd_last_error());
    char ns_colons[40];
    snprintf(ns_colons, sizeof ns_colons, "%s::", c->ns);
    char *msg = replace_all(kd_last_error(), ns_colons, "test::");
    char *err = malloc(strlen(msg) + 32);
    assert_non_null(err);
    sprintf(err, "%s: %s", kd_status_name(st), msg);
    free(msg);
    snprintf(prov, sizeof prov, "error after running ctors %s", co);
    record(c, active, err, strdup(""), prov);
    report = active;
    /* A failed registration changes nothing: the state is that before it. */
    kd_library_close(libs[ix]);
    libs[ix] = NULL;
    active &= ~(1u << ix);
    snprintf(prov, sizeof prov,
             "running ctors %s and then failing to run ctor %u (did this failure leave the "
             "dispatcher in a wedged state?)",
             co, ix);
    observe(c, active, prov);
    last = i;
    break;
  }
  if (c->expect_raises && active == full)
    fail_msg("expected a registration to fail, but none did (ctors %s)", co);
  fmt_order(co, sizeof co, ctor, last < c->n ? last + 1 : c->n);
  for (size_t i = 0; i < c->n; i++) {
    unsigned ix = dtor[i];
    kd_library_close(libs[ix]); /* NULL (never made, or failed) is ignored */
    libs[ix] = NULL;
    active &= ~(1u << ix);
    fmt_order(dor, sizeof dor, dtor, i + 1);
    snprintf(prov, sizeof prov, "running ctors %s, then running dtors %s", co, dor);
    observe(c, active, prov);
  }
  return report;
}

/* Every permutation of 0..n-1 in lexicographic order into perms (n! rows of
 * n); returns how many. */
static size_t permutations(size_t n, unsigned perms[][MAX_OPS]) {
  unsigned p[MAX_OPS];
  size_t count = 0;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned)i;
  for (;;) {
    memcpy(perms[count++], p, sizeof p);
    size_t i = n;
    while (i > 1 && p[i - 2] >= p[i - 1]) i--;
    if (i <= 1) return count;
    size_t j = n;
    while (p[j - 1] <= p[i - 2]) j--;
    unsigned tmp = p[i - 2];
    p[i - 2] = p[j - 1];
    p[j - 1] = tmp;
    for (size_t a = i - 1, b = n - 1; a < b; a++, b--) {
      tmp = p[a];
      p[a] = p[b];
      p[b] = tmp;
    }
  }
}

/* commute: every ctor order (or only `ctor` when given) with every dtor
 * order (for 5 ops: three dtor orders per ctor order, plus every dtor order
 * after the written ctor order). Returns the result of the full set (or of
 * the failing set with expect_raises). */
static const result *commute(commute_ctx *c, const unsigned *ctor) {
  static unsigned perms[120][MAX_OPS];
  size_t np = permutations(c->n, perms);
  unsigned report = (1u << c->n) - 1;
  /* KD_TEST_COMMUTE_ALL=1 runs every dtor order for 5 ops too (14400 runs
   * a scenario instead of 480: about 30 times slower; not in the suite). */
  const char *all = getenv("KD_TEST_COMMUTE_ALL");
  bool all_dtors = c->n <= 4 || (all && strcmp(all, "1") == 0);
  for (size_t a = 0; a < np; a++) {
    const unsigned *co = ctor ? ctor : perms[a];
    if (ctor && a > 0) break;
    if (all_dtors || a == 0) {
      for (size_t b = 0; b < np; b++) report = run_ops(c, co, perms[b]);
    } else {
      unsigned rev[MAX_OPS], rot[MAX_OPS];
      for (size_t i = 0; i < c->n; i++) {
        rev[i] = co[c->n - 1 - i];
        rot[i] = co[(i + 2) % c->n];
      }
      report = run_ops(c, co, rev);
      report = run_ops(c, co, co);
      report = run_ops(c, co, rot);
    }
  }
  const result *r = &c->results[report];
  assert_true(r->seen);
  return r;
}

/* Runs the scenario (ctor: a fixed registration order, or NULL for all);
 * checks the final state, and the extracted table when want_table is not
 * NULL (with the line of `extra` too, unless it is Undefined). */
static void commute_check(const reg_op *ops, size_t n, const unsigned *ctor,
                          const char *want_state, kd_dispatch_key extra,
                          const char *want_table) {
  commute_ctx c;
  ctx_init(&c, ops, n, false);
  const result *r = commute(&c, ctor);
  KD_ASSERT_STR_EQ(r->state, want_state);
  if (want_table) {
    char *x = extract(r->table, extra);
    KD_ASSERT_STR_EQ(x, want_table);
    free(x);
  }
  ctx_free(&c);
}
#define COMMUTE(ops, ctor, want_state, extra, want_table) \
  commute_check(ops, sizeof(ops) / sizeof *(ops), ctor, want_state, extra, want_table)

#define FT_BUILTIN "fallthrough [backend fallback] from kdispatch (built-in autograd fallthrough)"

/* ---- State scenarios --------------------------------------------------------------- */

/* test_def. PyTorch:
 *   name: test::foo
 *   schema: foo(Tensor x) -> (Tensor)
 *   debug: registered at /dev/null:0
 *   alias analysis kind: FROM_SCHEMA
 *   CPU: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   AutogradCPU: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   Autograd[alias]: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 * The keyless impl is kdispatch's CatchAll (see the top of the file), each
 * kernel has its own name so that calls tell them apart, and the keys are
 * listed in key order (runtime keys, then aliases in enum order). The table
 * (PyTorch checks only the state) shows CatchAll's place: after the CPU
 * kernel, and under the autograd keys after the Autograd kernel. */
static void test_def(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CATCH_ALL, "fn_catchall"),
      IMPL(CPU, "fn_cpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(AUTOGRAD_CPU, "fn_autogradcpu"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  AutogradCPU: closure kernel registered at fn_autogradcpu\n"
          "  CatchAll[alias]: closure kernel registered at fn_catchall\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [catch-all] from fn_catchall\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [catch-all] from fn_catchall\n"
          "PrivateUse1: closure [catch-all] from fn_catchall\n"
          "AutogradOther: closure [autograd kernel] from fn_autograd\n"
          "AutogradCPU: closure [kernel] from fn_autogradcpu\n"
          "AutogradCUDA: closure [autograd kernel] from fn_autograd\n"
          "AutogradPrivateUse1: closure [autograd kernel] from fn_autograd\n");
}

/* test_def_with_inference. PyTorch:
 *   name: test::foo
 *   schema: foo(Tensor _0) -> (Tensor _0)
 *   debug: registered at /dev/null:0
 *   alias analysis kind: CONSERVATIVE
 *   CPU: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   AutogradCPU: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   Autograd[alias]: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   CompositeImplicitAutograd[alias]: default_def_name_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 * kdispatch's def-by-kernel (kd_library_def_kernel) infers the schema from
 * the kernel's signature and implements the operator for CatchAll. */
static void test_def_with_inference(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF_NAME("default_def_name_t_t"),
      IMPL(CPU, "fn_cpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(AUTOGRAD_CPU, "fn_autogradcpu"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor _0) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  AutogradCPU: closure kernel registered at fn_autogradcpu\n"
          "  CatchAll[alias]: closure kernel registered at default_def_name_t_t\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [catch-all] from default_def_name_t_t\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [catch-all] from default_def_name_t_t\n"
          "PrivateUse1: closure [catch-all] from default_def_name_t_t\n"
          "AutogradOther: closure [autograd kernel] from fn_autograd\n"
          "AutogradCPU: closure [kernel] from fn_autogradcpu\n"
          "AutogradCUDA: closure [autograd kernel] from fn_autograd\n"
          "AutogradPrivateUse1: closure [autograd kernel] from fn_autograd\n");
}

/* test_def_only. PyTorch:
 *   name: test::foo
 *   schema: test::foo(Tensor x, Tensor y) -> (Tensor)
 *   debug: registered at /dev/null:0
 *   alias analysis kind: FROM_SCHEMA
 * The same (kdispatch has no alias analysis kinds; its schema is printed as
 * written). A defined operator without kernels has only the built-in
 * autograd fallthrough in its table. */
static void test_def_only(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x, Tensor y) -> Tensor"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x, Tensor y) -> Tensor\n"
          "  def registered at /dev/null:0\n",
          KD_KEY_UNDEFINED,
          "AutogradOther: " FT_BUILTIN "\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: " FT_BUILTIN "\n"
          "AutogradPrivateUse1: " FT_BUILTIN "\n");
}

/* test_impl_only. PyTorch:
 *   name: test::foo
 *   schema: (none)
 *   CPU: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   AutogradCPU: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   Autograd[alias]: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   CompositeImplicitAutograd[alias]: impl_t_t :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 * An implemented but undefined operator has a table (and no calls). */
static void test_impl_only(void **state) {
  (void)state;
  static const reg_op ops[] = {
      IMPL(CATCH_ALL, "fn_catchall"),
      IMPL(CPU, "fn_cpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(AUTOGRAD_CPU, "fn_autogradcpu"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: (none)\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  AutogradCPU: closure kernel registered at fn_autogradcpu\n"
          "  CatchAll[alias]: closure kernel registered at fn_catchall\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [catch-all] from fn_catchall\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [catch-all] from fn_catchall\n"
          "PrivateUse1: closure [catch-all] from fn_catchall\n"
          "AutogradOther: closure [autograd kernel] from fn_autograd\n"
          "AutogradCPU: closure [kernel] from fn_autogradcpu\n"
          "AutogradCUDA: closure [autograd kernel] from fn_autograd\n"
          "AutogradPrivateUse1: closure [autograd kernel] from fn_autograd\n");
}

/* ---- Computed tables -------------------------------------------------------------- */

/* test_computed_table. PyTorch (extracted):
 *   Undefined: default_def_name_t_t [math kernel]
 *   CPU: fn_cpu [kernel]
 *   CUDA: default_def_name_t_t [math kernel]
 *   XLA: fn_xla [kernel]
 *   AutogradOther: default_def_name_t_t [math kernel]
 *   AutogradCPU: fn_autogradcpu [kernel]
 *   AutogradCUDA: default_def_name_t_t [math kernel]
 *   AutogradXLA: fn_autograd [autograd kernel]
 * The same (XLA -> PrivateUse1). */
static void test_computed_table(void **state) {
  (void)state;
  memset(&calls, 0, sizeof calls);
  static const reg_op ops[] = {
      DEF_NAME_CIA("default_def_name_t_t"),
      IMPL(CPU, "fn_cpu"),
      IMPL(PRIVATEUSE1, "fn_xla"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(AUTOGRAD_CPU, "fn_autogradcpu"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor _0) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  PrivateUse1: closure kernel registered at fn_xla\n"
          "  AutogradCPU: closure kernel registered at fn_autogradcpu\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at default_def_name_t_t\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from default_def_name_t_t\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [math kernel] from default_def_name_t_t\n"
          "PrivateUse1: closure [kernel] from fn_xla\n"
          "AutogradOther: closure [math kernel] from default_def_name_t_t\n"
          "AutogradCPU: closure [kernel] from fn_autogradcpu\n"
          "AutogradCUDA: closure [math kernel] from default_def_name_t_t\n"
          "AutogradPrivateUse1: closure [autograd kernel] from fn_autograd\n");
  assert_true(calls.ran > 0);
  assert_true(calls.fell_through > 0);
}

/* test_computed_table_with_cpu_math_autogradcpu_fallthrough. PyTorch:
 *   Undefined: default_def_name_t_t [math kernel]
 *   CPU: impl_t_t [kernel]
 *   CUDA: default_def_name_t_t [math kernel]
 *   XLA: default_def_name_t_t [math kernel]
 *   AutogradOther: default_def_name_t_t [math kernel]
 *   AutogradCPU: fallthrough registered in pytorch framework [backend fallback]
 *   AutogradCUDA: default_def_name_t_t [math kernel]
 *   AutogradXLA: default_def_name_t_t [math kernel]
 * The same: kdispatch's built-in autograd fallthrough is PyTorch's
 * framework fallthrough (PyTorch's global AutogradCPU library there
 * registers nothing). */
static void test_computed_table_with_cpu_math_autogradcpu_fallthrough(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF_NAME_CIA("default_def_name_t_t"),
      IMPL(CPU, "impl_t_t"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor _0) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at impl_t_t\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at default_def_name_t_t\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from default_def_name_t_t\n"
          "CPU: closure [kernel] from impl_t_t\n"
          "CUDA: closure [math kernel] from default_def_name_t_t\n"
          "PrivateUse1: closure [math kernel] from default_def_name_t_t\n"
          "AutogradOther: closure [math kernel] from default_def_name_t_t\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: closure [math kernel] from default_def_name_t_t\n"
          "AutogradPrivateUse1: closure [math kernel] from default_def_name_t_t\n");
}

/* test_computed_table_with_math. PyTorch: every checked key
 * "impl_t_t [math kernel]". The same. */
static void test_computed_table_with_math(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "impl_t_t"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at impl_t_t\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from impl_t_t\n"
          "CPU: closure [math kernel] from impl_t_t\n"
          "CUDA: closure [math kernel] from impl_t_t\n"
          "PrivateUse1: closure [math kernel] from impl_t_t\n"
          "AutogradOther: closure [math kernel] from impl_t_t\n"
          "AutogradCPU: closure [math kernel] from impl_t_t\n"
          "AutogradCUDA: closure [math kernel] from impl_t_t\n"
          "AutogradPrivateUse1: closure [math kernel] from impl_t_t\n");
}

/* test_computed_table_with_cpu_math. PyTorch:
 *   Undefined: fn_math [math kernel]
 *   CPU: fn_cpu [kernel]
 *   CUDA: fn_math [math kernel]
 *   XLA: fn_math [math kernel]
 *   AutogradOther: fn_math [math kernel]
 *   AutogradCPU: fallthrough registered in pytorch framework [backend fallback]
 *   AutogradCUDA: fn_math [math kernel]
 *   AutogradXLA: fn_math [math kernel]
 * The same. */
static void test_computed_table_with_cpu_math(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn_math\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from fn_math\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [math kernel] from fn_math\n"
          "PrivateUse1: closure [math kernel] from fn_math\n"
          "AutogradOther: closure [math kernel] from fn_math\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: closure [math kernel] from fn_math\n"
          "AutogradPrivateUse1: closure [math kernel] from fn_math\n");
}

/* test_computed_table_with_autograd. PyTorch (no line for the keys without
 * a kernel):
 *   AutogradOther: impl_t_t [autograd kernel]
 *   AutogradCPU: impl_t_t [autograd kernel]
 *   AutogradCUDA: impl_t_t [autograd kernel]
 *   AutogradXLA: impl_t_t [autograd kernel]
 * The same: Undefined and the backends are missing, so a CPU call runs the
 * Autograd kernel, and in inference mode (no autograd keys) it fails with
 * KD_ENOKERNEL. */
static void test_computed_table_with_autograd(void **state) {
  (void)state;
  memset(&calls, 0, sizeof calls);
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(AUTOGRAD, "impl_t_t"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  Autograd[alias]: closure kernel registered at impl_t_t\n",
          KD_KEY_UNDEFINED,
          "AutogradOther: closure [autograd kernel] from impl_t_t\n"
          "AutogradCPU: closure [autograd kernel] from impl_t_t\n"
          "AutogradCUDA: closure [autograd kernel] from impl_t_t\n"
          "AutogradPrivateUse1: closure [autograd kernel] from impl_t_t\n");
  assert_true(calls.missing > 0); /* in inference mode */
  assert_true(calls.ran > 0);
}

/* test_computed_table_with_cpu_autograd_math. PyTorch:
 *   Undefined: fn_math [math kernel]
 *   CPU: fn_cpu [kernel]
 *   CUDA: fn_math [math kernel]
 *   XLA: fn_math [math kernel]
 *   AutogradOther: fn_math [math kernel]
 *   AutogradCPU: fn_autograd [autograd kernel]
 *   AutogradCUDA: fn_math [math kernel]
 *   AutogradXLA: fn_math [math kernel]
 * The same. */
static void test_computed_table_with_cpu_autograd_math(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn_math\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from fn_math\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [math kernel] from fn_math\n"
          "PrivateUse1: closure [math kernel] from fn_math\n"
          "AutogradOther: closure [math kernel] from fn_math\n"
          "AutogradCPU: closure [autograd kernel] from fn_autograd\n"
          "AutogradCUDA: closure [math kernel] from fn_math\n"
          "AutogradPrivateUse1: closure [math kernel] from fn_math\n");
}

/* test_computed_table_with_ambiguous_autogradother. PyTorch:
 *   Undefined: fn_math [math kernel]
 *   CPU: fn_math [math kernel]
 *   CUDA: fn_math [math kernel]
 *   XLA: fn_math [math kernel]
 *   AutogradOther: ambiguous_autogradother [ambiguous autogradother]
 *   AutogradCPU: fn_math [math kernel]
 *   AutogradCUDA: fn_math [math kernel]
 *   AutogradXLA: fn_math [math kernel]
 *   QuantizedCPU: fn_quantizedcpu [kernel]
 * The same; the ambiguous kernel's call fails (check_call). */
static void test_computed_table_with_ambiguous_autogradother(void **state) {
  (void)state;
  memset(&calls, 0, sizeof calls);
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
      IMPL(QUANTIZED_CPU, "fn_quantizedcpu"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  QuantizedCPU: closure kernel registered at fn_quantizedcpu\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn_math\n",
          KD_KEY_QUANTIZED_CPU,
          "Undefined: closure [math kernel] from fn_math\n"
          "CPU: closure [math kernel] from fn_math\n"
          "CUDA: closure [math kernel] from fn_math\n"
          "PrivateUse1: closure [math kernel] from fn_math\n"
          "AutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch (ambiguous "
          "autogradother)\n"
          "AutogradCPU: closure [math kernel] from fn_math\n"
          "AutogradCUDA: closure [math kernel] from fn_math\n"
          "AutogradPrivateUse1: closure [math kernel] from fn_math\n"
          "QuantizedCPU: closure [kernel] from fn_quantizedcpu\n");
  assert_true(calls.ambiguous > 0);
  assert_true(calls.ran > 0);
}

/* Not in test_dispatch.py: what resolves the ambiguity. PyTorch 1.13's
 * computeDispatchTableEntryWithDebug decides AutogradOther's ambiguity
 * (step 2.3) before it looks at the Autograd alias (2.4), so an Autograd
 * kernel does not resolve it; a kernel registered at AutogradOther itself
 * (step 1) does. Both subsets are checked. */
static void test_ambiguous_autogradother_resolved(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
      IMPL(QUANTIZED_CPU, "fn_quantizedcpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(AUTOGRAD_OTHER, "fn_autogradother"),
  };
  static const char *rest =
      "AutogradCPU: closure [math kernel] from fn_math\n"
      "AutogradCUDA: closure [math kernel] from fn_math\n"
      "AutogradPrivateUse1: closure [math kernel] from fn_math\n"
      "QuantizedCPU: closure [kernel] from fn_quantizedcpu\n";
  static const char *backends = "Undefined: closure [math kernel] from fn_math\n"
                                "CPU: closure [math kernel] from fn_math\n"
                                "CUDA: closure [math kernel] from fn_math\n"
                                "PrivateUse1: closure [math kernel] from fn_math\n";
  char want[2048];
  commute_ctx c;
  memset(&calls, 0, sizeof calls);
  ctx_init(&c, ops, 5, false);
  const result *r = commute(&c, NULL);
  char *x = extract(r->table, KD_KEY_QUANTIZED_CPU);
  snprintf(want, sizeof want, "%sAutogradOther: closure [kernel] from fn_autogradother\n%s",
           backends, rest);
  KD_ASSERT_STR_EQ(x, want);
  free(x);
  const result *without = &c.results[0xf]; /* every op but the AutogradOther kernel */
  assert_true(without->seen);
  x = extract(without->table, KD_KEY_QUANTIZED_CPU);
  snprintf(want, sizeof want,
           "%sAutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch (ambiguous "
           "autogradother)\n%s",
           backends, rest);
  KD_ASSERT_STR_EQ(x, want);
  free(x);
  ctx_free(&c);
  assert_true(calls.ambiguous > 0);
}

/* Not in test_dispatch.py (CompositeExplicitAutogradNonFunctional is newer
 * than most of it): the NonFunctional alias fills the backend keys but the
 * Sparse ones (SparseCPU takes the math kernel), and, unlike
 * CompositeExplicitAutograd, does not count as every autograd key's
 * backend kernel (PyTorch 1.13's has_backend_kernel reads
 * CompositeExplicitAutograd only): AutogradCUDA takes the math kernel. */
static void test_computed_table_with_cpu_nonfunctional_math(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL(COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL, "fn_nonfunctional"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn_math\n"
          "  CompositeExplicitAutogradNonFunctional[alias]: closure kernel registered at "
          "fn_nonfunctional\n",
          KD_KEY_SPARSE_CPU,
          "Undefined: closure [default backend kernel] from fn_nonfunctional\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [default backend kernel] from fn_nonfunctional\n"
          "PrivateUse1: closure [default backend kernel] from fn_nonfunctional\n"
          "AutogradOther: closure [math kernel] from fn_math\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: closure [math kernel] from fn_math\n"
          "AutogradPrivateUse1: closure [math kernel] from fn_math\n"
          "SparseCPU: closure [math kernel] from fn_math\n");
}

/* test_computed_table_with_cpu_defaultbackend. PyTorch:
 *   Undefined: fn_defaultbackend [default backend kernel]
 *   CPU: fn_cpu [kernel]
 *   CUDA: fn_defaultbackend [default backend kernel]
 *   XLA: fn_defaultbackend [default backend kernel]
 *   AutogradOther: fallthrough registered in pytorch framework [backend fallback]
 *   AutogradCPU: fallthrough registered in pytorch framework [backend fallback]
 *   AutogradCUDA: fallthrough registered in pytorch framework [backend fallback]
 *   AutogradXLA: fallthrough registered in pytorch framework [backend fallback]
 * The same. */
static void test_computed_table_with_cpu_defaultbackend(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL(COMPOSITE_EXPLICIT_AUTOGRAD, "fn_defaultbackend"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  CompositeExplicitAutograd[alias]: closure kernel registered at fn_defaultbackend\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [default backend kernel] from fn_defaultbackend\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [default backend kernel] from fn_defaultbackend\n"
          "PrivateUse1: closure [default backend kernel] from fn_defaultbackend\n"
          "AutogradOther: " FT_BUILTIN "\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: " FT_BUILTIN "\n"
          "AutogradPrivateUse1: " FT_BUILTIN "\n");
}

/* test_computed_table_with_cpu_autograd_defaultbackend. PyTorch:
 *   Undefined: fn_defaultbackend [default backend kernel]
 *   CPU: fn_cpu [kernel]
 *   CUDA: fn_defaultbackend [default backend kernel]
 *   XLA: fn_defaultbackend [default backend kernel]
 *   AutogradOther: fn_autograd [autograd kernel]
 *   AutogradCPU: fn_autograd [autograd kernel]
 *   AutogradCUDA: fn_autograd [autograd kernel]
 *   AutogradXLA: fn_autograd [autograd kernel]
 *   QuantizedCPU: fn_defaultbackend [default backend kernel]
 * The same. */
static void test_computed_table_with_cpu_autograd_defaultbackend(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(COMPOSITE_EXPLICIT_AUTOGRAD, "fn_defaultbackend"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  CompositeExplicitAutograd[alias]: closure kernel registered at fn_defaultbackend\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_QUANTIZED_CPU,
          "Undefined: closure [default backend kernel] from fn_defaultbackend\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [default backend kernel] from fn_defaultbackend\n"
          "PrivateUse1: closure [default backend kernel] from fn_defaultbackend\n"
          "AutogradOther: closure [autograd kernel] from fn_autograd\n"
          "AutogradCPU: closure [autograd kernel] from fn_autograd\n"
          "AutogradCUDA: closure [autograd kernel] from fn_autograd\n"
          "AutogradPrivateUse1: closure [autograd kernel] from fn_autograd\n"
          "QuantizedCPU: closure [default backend kernel] from fn_defaultbackend\n");
}

/* test_computed_table_with_cpu_autograd_math_defaultbackend. PyTorch:
 *   Undefined: fn_defaultbackend [default backend kernel]
 *   CPU: fn_cpu [kernel]
 *   CUDA: fn_defaultbackend [default backend kernel]
 *   XLA: fn_defaultbackend [default backend kernel]
 *   AutogradOther: fn_autograd [autograd kernel]
 *   AutogradCPU: fn_autograd [autograd kernel]
 *   AutogradCUDA: fn_autograd [autograd kernel]
 *   AutogradXLA: fn_autograd [autograd kernel]
 * The same: a CompositeExplicitAutograd kernel counts as every autograd
 * key's backend kernel, so CompositeImplicitAutograd fills none of them.
 * Five ops: every ctor order with three dtor orders, plus every dtor order
 * of the written ctor order. */
static void test_computed_table_with_cpu_autograd_math_defaultbackend(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL(AUTOGRAD, "fn_autograd"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
      IMPL(COMPOSITE_EXPLICIT_AUTOGRAD, "fn_defaultbackend"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  CompositeExplicitAutograd[alias]: closure kernel registered at fn_defaultbackend\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn_math\n"
          "  Autograd[alias]: closure kernel registered at fn_autograd\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [default backend kernel] from fn_defaultbackend\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [default backend kernel] from fn_defaultbackend\n"
          "PrivateUse1: closure [default backend kernel] from fn_defaultbackend\n"
          "AutogradOther: closure [autograd kernel] from fn_autograd\n"
          "AutogradCPU: closure [autograd kernel] from fn_autograd\n"
          "AutogradCUDA: closure [autograd kernel] from fn_autograd\n"
          "AutogradPrivateUse1: closure [autograd kernel] from fn_autograd\n");
}

/* ---- Fallthrough ----------------------------------------------------------------- */

/* No PyTorch counterpart in test_dispatch.py (its "Things not tested here"
 * lists fallbacks); PyTorch's own C++ tests register these. A fallthrough
 * kernel for one operator at AutogradCPU (m.impl("foo", kAutogradCPU,
 * CppFunction::makeFallthrough())) takes the slot from the composite: a CPU
 * call goes on to the CPU kernel. */
static void test_fallthrough_kernel(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      IMPL_FALLTHROUGH(AUTOGRAD_CPU, "fn_fallthrough"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_math"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n"
          "  AutogradCPU: fallthrough kernel registered at fn_fallthrough\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn_math\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from fn_math\n"
          "CPU: closure [kernel] from fn_cpu\n"
          "CUDA: closure [math kernel] from fn_math\n"
          "PrivateUse1: closure [math kernel] from fn_math\n"
          "AutogradOther: closure [math kernel] from fn_math\n"
          "AutogradCPU: fallthrough [kernel] from fn_fallthrough\n"
          "AutogradCUDA: closure [math kernel] from fn_math\n"
          "AutogradPrivateUse1: closure [math kernel] from fn_math\n");
}

/* Registered fallbacks, as registrations that commute with the operator's
 * own: a boxed fallback at AutogradCPU replaces the built-in fallthrough
 * while it lasts, and a fallthrough fallback at PrivateUse1 (XLA) fills
 * that backend's slot, so a PrivateUse1 call falls through every key and
 * fails at the missing Undefined slot. Fallbacks are no registrations of
 * the operator: they do not show in its state. */
static void test_fallback_registrations(void **state) {
  (void)state;
  memset(&calls, 0, sizeof calls);
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_cpu"),
      FALLBACK(AUTOGRAD_CPU, "fb_autogradcpu"),
      FALLBACK_FALLTHROUGH(PRIVATEUSE1, "fb_xla_fallthrough"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_cpu\n",
          KD_KEY_UNDEFINED,
          "CPU: closure [kernel] from fn_cpu\n"
          "PrivateUse1: fallthrough [backend fallback] from fb_xla_fallthrough\n"
          "AutogradOther: " FT_BUILTIN "\n"
          "AutogradCPU: boxed [backend fallback] from fb_autogradcpu\n"
          "AutogradCUDA: " FT_BUILTIN "\n"
          "AutogradPrivateUse1: " FT_BUILTIN "\n");
  /* PrivateUse1 calls fell through to the missing Undefined slot. */
  assert_true(calls.missing > 0);
  assert_true(calls.fell_through > 0);
  assert_true(calls.ran > 0);
}

/* test_multiple_fallback: a second fallback for one key. PyTorch:
 *   Tried to register multiple backend fallbacks for the same dispatch key
 *   XLA; previous registration registered at /dev/null:0, new registration
 *   registered at /dev/null:0
 * kdispatch: KD_EEXIST naming the first registration; the first stays. */
static void test_multiple_fallback(void **state) {
  (void)state;
  kd_library *lib;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "_", KD_KEY_PRIVATEUSE1, "/dev/null", 0, &lib));
  kd_kernel ft = kd_kernel_fallthrough();
  KD_ASSERT_OK(kd_library_fallback(lib, &ft, NULL));
  KD_ASSERT_ERR(kd_library_fallback(lib, &ft, NULL), KD_EEXIST, "/dev/null:0");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(lib);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* ---- Failures ---------------------------------------------------------------------- */

/* test_multiple_def_error. PyTorch (the same schema twice):
 *   Tried to register an operator (test::foo(Tensor x, Tensor y) -> (Tensor))
 *   with the same name and overload name multiple times. ...
 * kdispatch differs by design: defining the same schema again adds a
 * reference (both show in the state, commuting); a different schema under
 * the same name is the error, KD_EEXIST naming both, in either order (not
 * commutative: the message names the first definition first). */
static void test_multiple_def(void **state) {
  (void)state;
  static const reg_op same[] = {
      DEF("foo(Tensor x, Tensor y) -> Tensor"),
      DEF("foo(Tensor x, Tensor y) -> Tensor"),
  };
  COMMUTE(same, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x, Tensor y) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  def registered at /dev/null:0\n",
          KD_KEY_UNDEFINED, NULL);
  static const reg_op different[] = {
      DEF("foo(Tensor x, Tensor y) -> Tensor"),
      DEF("foo(Tensor x) -> Tensor"),
  };
  static const unsigned forward[] = {0, 1}, backward[] = {1, 0};
  commute_ctx c;
  ctx_init(&c, different, 2, true);
  const result *r = commute(&c, forward);
  KD_ASSERT_STR_EQ(r->state,
                   "KD_EEXIST: operator 'test::foo' is already defined with schema 'foo(Tensor "
                   "x, Tensor y) -> Tensor' (at /dev/null:0); it cannot also be defined as "
                   "'foo(Tensor x) -> Tensor' (at /dev/null:0)");
  ctx_free(&c);
  ctx_init(&c, different, 2, true);
  r = commute(&c, backward);
  KD_ASSERT_STR_EQ(r->state,
                   "KD_EEXIST: operator 'test::foo' is already defined with schema 'foo(Tensor "
                   "x) -> Tensor' (at /dev/null:0); it cannot also be defined as 'foo(Tensor x, "
                   "Tensor y) -> Tensor' (at /dev/null:0)");
  ctx_free(&c);
}

/* test_def_impl_schema_mismatch. PyTorch (either order):
 *   Inferred operator schema for a C++ kernel function doesn't match the
 *   expected function schema.
 *     operator: test::foo
 *     expected schema: foo(Tensor x, Tensor y) -> (Tensor)
 *       registered at /dev/null:0
 *     inferred schema: (Tensor _0) -> (Tensor _0)
 *       impl_t_t
 *     reason: The number of arguments is different. 2 vs 1.
 * kdispatch: defined first, the kernel's registration fails with KD_ETYPE
 * naming the operator and the kernel; implemented first, the definition
 * succeeds and sets the kernel aside (listed, rejected, taking no part in
 * dispatch: issue 16), so the two orders differ by design. */
static void test_def_impl_schema_mismatch(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x, Tensor y) -> Tensor"),
      IMPL(CPU, "impl_t_t"),
  };
  static const unsigned def_first[] = {0, 1}, impl_first[] = {1, 0};
  commute_ctx c;
  ctx_init(&c, ops, 2, true);
  const result *r = commute(&c, def_first);
  KD_ASSERT_STR_EQ(r->state,
                   "KD_ETYPE: kernel for 'test::foo' (CPU) registered at impl_t_t has signature "
                   "(Tensor) -> Tensor, which does not match the schema of 'test::foo' (1 "
                   "difference): the schema has 2 arguments, the kernel 1");
  ctx_free(&c);
  /* Implemented first: the definition succeeds and sets the kernel aside.
   * The rejection outlives the definition (a kernel set aside stays so
   * until it is released: issue 16), so the state after releasing the
   * definition depends on the path: the two release orders are run without
   * comparing paths, and checked. */
  static const unsigned impl_released_first[] = {1, 0}, def_released_first[] = {0, 1};
  static const char *rejected =
      "  CPU: closure kernel registered at impl_t_t [rejected: kernel for 'test::foo' (CPU) "
      "registered at impl_t_t has signature (Tensor) -> Tensor, which does not match the schema "
      "of 'test::foo' (1 difference): the schema has 2 arguments, the kernel 1]\n";
  char want[1024];
  snprintf(want, sizeof want,
           "operator: test::foo\n"
           "schema: foo(Tensor x, Tensor y) -> Tensor\n"
           "  def registered at /dev/null:0\n"
           "%s",
           rejected);
  ctx_init(&c, ops, 2, false);
  c.path_dependent = true;
  assert_int_equal(run_ops(&c, impl_first, impl_released_first), 3);
  KD_ASSERT_STR_EQ(c.results[3].state, want);
  /* A rejected kernel takes no part in dispatch: only the built-in
   * autograd fallthrough is left. */
  char *x = extract(c.results[3].table, KD_KEY_UNDEFINED);
  KD_ASSERT_STR_EQ(x, "AutogradOther: " FT_BUILTIN "\n"
                      "AutogradCPU: " FT_BUILTIN "\n"
                      "AutogradCUDA: " FT_BUILTIN "\n"
                      "AutogradPrivateUse1: " FT_BUILTIN "\n");
  free(x);
  KD_ASSERT_STR_EQ(c.results[1].state, "operator: test::foo\n"
                                       "schema: foo(Tensor x, Tensor y) -> Tensor\n"
                                       "  def registered at /dev/null:0\n");
  ctx_free(&c);
  ctx_init(&c, ops, 2, false);
  c.path_dependent = true;
  run_ops(&c, impl_first, def_released_first);
  snprintf(want, sizeof want, "operator: test::foo\nschema: (none)\n%s", rejected);
  KD_ASSERT_STR_EQ(c.results[2].state, want);
  ctx_free(&c);
}

/* test_overwrite_math: two CompositeImplicitAutograd kernels do not commute
 * (the newest wins); the ctor order is fixed, every dtor order runs. PyTorch:
 *   name: test::foo
 *   schema: (none)
 *   CompositeImplicitAutograd[alias]: fn2 :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 *   CompositeImplicitAutograd[alias] (inactive): fn1 :: (Tensor _0) -> (Tensor _0) [ boxed unboxed ]
 */
static void test_overwrite_math(void **state) {
  (void)state;
  static const reg_op ops[] = {
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn1"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn2"),
  };
  static const unsigned order[] = {0, 1};
  COMMUTE(ops, order,
          "operator: test::foo\n"
          "schema: (none)\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn2\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at fn1 [inactive: "
          "overridden]\n",
          KD_KEY_UNDEFINED,
          "Undefined: closure [math kernel] from fn2\n"
          "CPU: closure [math kernel] from fn2\n"
          "CUDA: closure [math kernel] from fn2\n"
          "PrivateUse1: closure [math kernel] from fn2\n"
          "AutogradOther: closure [math kernel] from fn2\n"
          "AutogradCPU: closure [math kernel] from fn2\n"
          "AutogradCUDA: closure [math kernel] from fn2\n"
          "AutogradPrivateUse1: closure [math kernel] from fn2\n");
}

/* The harness's helpers: extraction keeps PyTorch's key order and drops
 * other keys, namespaces are normalized, permutations are all there. */
static void test_harness_helpers(void **state) {
  (void)state;
  /* extract() keeps the order of PyTorch's keys and drops the others. */
  char *x = extract("dispatch table of t::foo:\n"
                    "  CPU: closure [kernel] from a\n"
                    "  Undefined: closure [kernel] from u\n"
                    "  Meta: closure [kernel] from m\n"
                    "  missing: []\n",
                    KD_KEY_UNDEFINED);
  KD_ASSERT_STR_EQ(x, "Undefined: closure [kernel] from u\nCPU: closure [kernel] from a\n");
  free(x);
  /* replace_all. */
  x = replace_all("a::b a::c", "a::", "test::");
  KD_ASSERT_STR_EQ(x, "test::b test::c");
  free(x);
  /* permutations: 4! distinct orders. */
  static unsigned perms[120][MAX_OPS];
  assert_int_equal(permutations(4, perms), 24);
  assert_int_equal(permutations(5, perms), 120);
  assert_int_equal(perms[119][0], 4);
  assert_int_equal(perms[119][4], 0);
}

/* ---- TestPythonDispatcher --------------------------------------------------------- */

/* PyTorch's TestPythonDispatcher (torch/_python_dispatcher.py) computes the
 * same tables in Python, for operators registered at the listed keys after
 * a definition. Its Lazy column behaves as its XLA column and is left out
 * (kdispatch has no Lazy key; with it the scenarios would have 6 ops). */

/* test_basic: register(["CPU", "XLA", "Lazy", "CompositeImplicitAutograd"]).
 *   CPU             fn_CPU [kernel]
 *   XLA             fn_XLA [kernel]
 *   QuantizedCPU    fn_CompositeImplicitAutograd [math kernel]
 *   AutogradOther   fn_CompositeImplicitAutograd [math kernel]
 *   AutogradCPU     fallthrough [backend fallback]
 *   AutogradXLA     fallthrough [backend fallback]
 * The same. */
static void test_python_dispatcher_basic(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_CPU"),
      IMPL(PRIVATEUSE1, "fn_XLA"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_CompositeImplicitAutograd"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_CPU\n"
          "  PrivateUse1: closure kernel registered at fn_XLA\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at "
          "fn_CompositeImplicitAutograd\n",
          KD_KEY_QUANTIZED_CPU,
          "Undefined: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "CPU: closure [kernel] from fn_CPU\n"
          "CUDA: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "PrivateUse1: closure [kernel] from fn_XLA\n"
          "AutogradOther: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "AutogradPrivateUse1: " FT_BUILTIN "\n"
          "QuantizedCPU: closure [math kernel] from fn_CompositeImplicitAutograd\n");
}

/* test_math_autogradcpu: register(["CPU", "XLA", "Lazy",
 * "CompositeImplicitAutograd", "AutogradCPU"]).
 *   CPU             fn_CPU [kernel]
 *   XLA             fn_XLA [kernel]
 *   QuantizedCPU    fn_CompositeImplicitAutograd [math kernel]
 *   AutogradOther   fn_CompositeImplicitAutograd [math kernel]
 *   AutogradCPU     fn_AutogradCPU [kernel]
 *   AutogradXLA     fallthrough [backend fallback]
 * The same. */
static void test_python_dispatcher_math_autogradcpu(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_CPU"),
      IMPL(PRIVATEUSE1, "fn_XLA"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_CompositeImplicitAutograd"),
      IMPL(AUTOGRAD_CPU, "fn_AutogradCPU"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_CPU\n"
          "  PrivateUse1: closure kernel registered at fn_XLA\n"
          "  AutogradCPU: closure kernel registered at fn_AutogradCPU\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at "
          "fn_CompositeImplicitAutograd\n",
          KD_KEY_QUANTIZED_CPU,
          "Undefined: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "CPU: closure [kernel] from fn_CPU\n"
          "CUDA: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "PrivateUse1: closure [kernel] from fn_XLA\n"
          "AutogradOther: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "AutogradCPU: closure [kernel] from fn_AutogradCPU\n"
          "AutogradCUDA: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "AutogradPrivateUse1: " FT_BUILTIN "\n"
          "QuantizedCPU: closure [math kernel] from fn_CompositeImplicitAutograd\n");
}

/* test_defaultbackend_autogradcpu: register(["CPU", "XLA", "Lazy",
 * "CompositeExplicitAutograd", "AutogradCPU"]).
 *   CPU             fn_CPU [kernel]
 *   XLA             fn_XLA [kernel]
 *   QuantizedCPU    fn_CompositeExplicitAutograd [default backend kernel]
 *   AutogradOther   fallthrough [backend fallback]
 *   AutogradCPU     fn_AutogradCPU [kernel]
 *   AutogradXLA     fallthrough [backend fallback]
 * The same. */
static void test_python_dispatcher_defaultbackend_autogradcpu(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_CPU"),
      IMPL(PRIVATEUSE1, "fn_XLA"),
      IMPL(COMPOSITE_EXPLICIT_AUTOGRAD, "fn_CompositeExplicitAutograd"),
      IMPL(AUTOGRAD_CPU, "fn_AutogradCPU"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_CPU\n"
          "  PrivateUse1: closure kernel registered at fn_XLA\n"
          "  AutogradCPU: closure kernel registered at fn_AutogradCPU\n"
          "  CompositeExplicitAutograd[alias]: closure kernel registered at "
          "fn_CompositeExplicitAutograd\n",
          KD_KEY_QUANTIZED_CPU,
          "Undefined: closure [default backend kernel] from fn_CompositeExplicitAutograd\n"
          "CPU: closure [kernel] from fn_CPU\n"
          "CUDA: closure [default backend kernel] from fn_CompositeExplicitAutograd\n"
          "PrivateUse1: closure [kernel] from fn_XLA\n"
          "AutogradOther: " FT_BUILTIN "\n"
          "AutogradCPU: closure [kernel] from fn_AutogradCPU\n"
          "AutogradCUDA: " FT_BUILTIN "\n"
          "AutogradPrivateUse1: " FT_BUILTIN "\n"
          "QuantizedCPU: closure [default backend kernel] from fn_CompositeExplicitAutograd\n");
}

/* test_autogradother: register(["CPU", "QuantizedCPU",
 * "CompositeImplicitAutograd"]).
 *   CPU             fn_CPU [kernel]
 *   XLA             fn_CompositeImplicitAutograd [math kernel]
 *   QuantizedCPU    fn_QuantizedCPU [kernel]
 *   AutogradOther   ambiguous_autogradother [ambiguous autogradother]
 *   AutogradCPU     fallthrough [backend fallback]
 *   AutogradXLA     fn_CompositeImplicitAutograd [math kernel]
 * The same. */
static void test_python_dispatcher_autogradother(void **state) {
  (void)state;
  static const reg_op ops[] = {
      DEF("foo(Tensor x) -> Tensor"),
      IMPL(CPU, "fn_CPU"),
      IMPL(QUANTIZED_CPU, "fn_QuantizedCPU"),
      IMPL(COMPOSITE_IMPLICIT_AUTOGRAD, "fn_CompositeImplicitAutograd"),
  };
  COMMUTE(ops, NULL,
          "operator: test::foo\n"
          "schema: foo(Tensor x) -> Tensor\n"
          "  def registered at /dev/null:0\n"
          "  CPU: closure kernel registered at fn_CPU\n"
          "  QuantizedCPU: closure kernel registered at fn_QuantizedCPU\n"
          "  CompositeImplicitAutograd[alias]: closure kernel registered at "
          "fn_CompositeImplicitAutograd\n",
          KD_KEY_QUANTIZED_CPU,
          "Undefined: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "CPU: closure [kernel] from fn_CPU\n"
          "CUDA: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "PrivateUse1: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "AutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch (ambiguous "
          "autogradother)\n"
          "AutogradCPU: " FT_BUILTIN "\n"
          "AutogradCUDA: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "AutogradPrivateUse1: closure [math kernel] from fn_CompositeImplicitAutograd\n"
          "QuantizedCPU: closure [kernel] from fn_QuantizedCPU\n");
}

/* test_defaultbackend_math: PyTorch's Python model refuses a registration at
 * both CompositeImplicitAutograd and CompositeExplicitAutograd; its C++
 * dispatcher (and kdispatch) accepts it:
 * test_computed_table_with_cpu_autograd_math_defaultbackend above. */

int main(void) {
  kd_set_warning_handler(quiet, NULL); /* overrides warn */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_harness_helpers),
      cmocka_unit_test(test_def),
      cmocka_unit_test(test_def_with_inference),
      cmocka_unit_test(test_def_only),
      cmocka_unit_test(test_impl_only),
      cmocka_unit_test(test_computed_table),
      cmocka_unit_test(test_computed_table_with_cpu_math_autogradcpu_fallthrough),
      cmocka_unit_test(test_computed_table_with_math),
      cmocka_unit_test(test_computed_table_with_cpu_math),
      cmocka_unit_test(test_computed_table_with_autograd),
      cmocka_unit_test(test_computed_table_with_cpu_autograd_math),
      cmocka_unit_test(test_computed_table_with_ambiguous_autogradother),
      cmocka_unit_test(test_ambiguous_autogradother_resolved),
      cmocka_unit_test(test_computed_table_with_cpu_nonfunctional_math),
      cmocka_unit_test(test_computed_table_with_cpu_defaultbackend),
      cmocka_unit_test(test_computed_table_with_cpu_autograd_defaultbackend),
      cmocka_unit_test(test_computed_table_with_cpu_autograd_math_defaultbackend),
      cmocka_unit_test(test_fallthrough_kernel),
      cmocka_unit_test(test_fallback_registrations),
      cmocka_unit_test(test_multiple_fallback),
      cmocka_unit_test(test_multiple_def),
      cmocka_unit_test(test_def_impl_schema_mismatch),
      cmocka_unit_test(test_overwrite_math),
      cmocka_unit_test(test_python_dispatcher_basic),
      cmocka_unit_test(test_python_dispatcher_math_autogradcpu),
      cmocka_unit_test(test_python_dispatcher_defaultbackend_autogradcpu),
      cmocka_unit_test(test_python_dispatcher_autogradother),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
