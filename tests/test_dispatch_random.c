/* Random sequences of registrations and releases at runtime keys (CPU, Meta,
 * SparseCPU, NestedTensorCPU, AutogradCPU: kernels and a fallthrough) and
 * alias keys (Autograd, CompositeExplicitAutograd and its NonFunctional
 * variant, CompositeImplicitAutograd and its NestedTensor variant, CatchAll),
 * with fallbacks toggled at Meta and AutogradCPU: after every step the cached
 * tables equal a fresh computation (kd_dispatcher_check), every slot of the
 * computed table holds the kernel, with the reason, that a model predicts,
 * calls with CPU and Meta tensors (with their autograd keys or made in
 * inference mode, and called in and out of inference mode) and calls with
 * each runtime key alone (kd_call_unboxed_keys) give what the model predicts,
 * and at the end everything is gone.
 *
 * The model (model_slot, model_call) is written from the rules of
 * docs/ARCHITECTURE.md ("How a slot is filled", PyTorch 1.13's
 * OperatorEntry::computeDispatchTableEntryWithDebug) and the key layout of
 * kd/keys.h, not from the registry's code: it is the check of that code. */
#include <stdio.h>
#include <string.h>

#include "dispatch/reclaim.h"
#include "kd_test.h"

/* ---- Kernels -------------------------------------------------------------- */

/* Every registration's kernel is one closure whose data is the registration's
 * sequence number: a call tells which registration ran. */
static kd_status k_id(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)a;
  r[0] = kd_value_int((int64_t)(intptr_t)c->data);
  return KD_OK;
}

#define FB_META_RESULT 100000  /* what the Meta fallback returns */
#define FB_AUTOGRAD_ADD 1000000 /* what the AutogradCPU fallback adds to the result below it */

/* The Meta fallback: a backend fallback that answers by itself. */
static kd_status fb_meta(const kd_call *c, kd_stack *s) {
  (void)c;
  kd_status st = kd_stack_drop(s, 1);
  if (st) return st;
  kd_value v = kd_value_int(FB_META_RESULT);
  return kd_stack_push(s, &v);
}

/* The AutogradCPU fallback: a wrapper, as an autograd kernel is, that
 * redispatches below its key and marks the result. */
static kd_status fb_autograd(const kd_call *c, kd_stack *s) {
  kd_status st = kd_redispatch_boxed(c, s);
  if (st) return st;
  kd_value *top = kd_stack_peek(s, 0);
  if (!top || top->tag != KD_VALUE_INT)
    return kd_set_error(KD_EINTERNAL, "fb_autograd: the redispatch returned no int");
  top->u.i += FB_AUTOGRAD_ADD;
  return KD_OK;
}

static void quiet(const char *m, void *u) {
  (void)m;
  (void)u;
}

/* ---- What the test registers ------------------------------------------------ */

/* The targets of registrations: a kernel at each of these keys, and (the last
 * one) a fallthrough kernel at AutogradCPU. */
static const kd_dispatch_key targets[] = {
    KD_KEY_CPU,
    KD_KEY_META,
    KD_KEY_AUTOGRAD_CPU,
    KD_KEY_AUTOGRAD,
    KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD,
    KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL,
    KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD,
    KD_KEY_CATCH_ALL,
    KD_KEY_SPARSE_CPU, /* a backend of AutogradOther */
    KD_KEY_NESTED_TENSOR_CPU, /* a backend of AutogradNestedTensor */
    KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR,
    KD_KEY_AUTOGRAD_CPU, /* fallthrough */
};
#define NTARGETS (sizeof targets / sizeof targets[0])
#define FALLTHROUGH_TARGET (NTARGETS - 1)
#define MAXREG 64

typedef struct reg {
  kd_registration *r;
  int target; /* index in targets */
  int order;  /* registration sequence number: the kernel's id */
} reg;

/* ---- The model -------------------------------------------------------------- */

/* The key sets of the functionalities, written out from the layout of
 * kd/keys.h: Undefined 0; dense CPU..PrivateUse3 1..6; Quantized 7..12;
 * Sparse 13..18; SparseCsr 19..24; NestedTensor 25..30; BackendSelect 31;
 * ADInplaceOrView 36; AutogradOther 37; Autograd<B> 38..43;
 * AutogradNestedTensor 44; Tracer 45, Profiler 46, Mode1 47, Mode2 48. */
static kd_keyset range(unsigned lo, unsigned hi) {
  kd_keyset s = 0;
  for (unsigned k = lo; k <= hi; k++) s |= (kd_keyset)1 << k;
  return s;
}
#define BIT(k) ((kd_keyset)1 << (k))
static kd_keyset m_dense, m_quantized, m_sparse, m_sparse_csr, m_nested, m_autograd_b;
static kd_keyset m_ceanf, m_cea, m_cia, m_autograd_alias, m_backend_like, m_builtin_ft;
static const unsigned U_ADIOV = 36, U_AUTOGRAD_OTHER = 37, U_AUTOGRAD_NT = 44;

static void model_init(void) {
  m_dense = range(1, 6);
  m_quantized = range(7, 12);
  m_sparse = range(13, 18);
  m_sparse_csr = range(19, 24);
  m_nested = range(25, 30);
  m_autograd_b = range(38, 43);
  /* The aliases (contract; PyTorch's getRuntimeDispatchKeySet). */
  m_cea = m_dense | m_quantized | m_sparse | m_sparse_csr;
  m_ceanf = m_cea & ~m_sparse;
  m_autograd_alias = m_autograd_b | BIT(U_AUTOGRAD_OTHER) | BIT(U_AUTOGRAD_NT);
  m_cia = m_cea | m_nested | m_autograd_alias;
  m_backend_like = BIT(0) | m_cea | m_nested;
  m_builtin_ft = m_autograd_alias | BIT(U_ADIOV);
}

/* What fills a slot. */
typedef enum slot_kind {
  S_MISSING,
  S_KERNEL,       /* a registration's kernel: id */
  S_FALLTHROUGH,  /* the fallthrough registration at AutogradCPU: id */
  S_FB_META,      /* the Meta fallback */
  S_FB_AUTOGRAD,  /* the AutogradCPU fallback */
  S_BUILTIN_FT,   /* the built-in autograd fallthrough */
  S_AMBIGUOUS,    /* the ambiguous-AutogradOther kernel */
} slot_kind;

typedef struct slot {
  slot_kind kind;
  int id;             /* the registration's order for S_KERNEL, S_FALLTHROUGH */
  const char *reason; /* the dump's reason */
} slot;

typedef struct model {
  const reg *regs;
  int n;
  bool fb_meta, fb_autograd;
} model;

/* The newest registration at key (as the registry's `top`): its index, or -1.
 * Alias and runtime keys alike; a fallthrough registration counts. */
static int top(const model *m, kd_dispatch_key key) {
  int best = -1;
  for (int i = 0; i < m->n; i++)
    if (targets[m->regs[i].target] == key && (best < 0 || m->regs[i].order > m->regs[best].order))
      best = i;
  return best;
}

static slot reg_slot(const model *m, int i, const char *reason) {
  slot s = {m->regs[i].target == (int)FALLTHROUGH_TARGET ? S_FALLTHROUGH : S_KERNEL,
            m->regs[i].order, reason};
  return s;
}

/* Whether any registration is at a key of `keys` (runtime keys only). */
static bool any_at(const model *m, kd_keyset keys) {
  for (int i = 0; i < m->n; i++) {
    kd_dispatch_key k = targets[m->regs[i].target];
    if ((unsigned)k < 64 && (keys & BIT(k))) return true;
  }
  return false;
}

/* The slot of runtime key k, from PyTorch 1.13's rules in their order. */
static slot model_slot(const model *m, unsigned k) {
  kd_keyset b = BIT(k);
  int i;
  /* 1. a kernel registered at the key itself */
  if ((i = top(m, (kd_dispatch_key)k)) >= 0) return reg_slot(m, i, "kernel");
  /* 2. CompositeExplicitAutogradNonFunctional, 3. CompositeExplicitAutograd
   * (both fill Undefined) */
  if ((k == 0 || (m_ceanf & b)) &&
      (i = top(m, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL)) >= 0)
    return reg_slot(m, i, "default backend kernel");
  if ((k == 0 || (m_cea & b)) && (i = top(m, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD)) >= 0)
    return reg_slot(m, i, "default backend kernel");
  /* 4. CompositeImplicitAutogradNestedTensor (not Undefined), whatever the
   * backend has */
  if ((m_nested & b || k == U_AUTOGRAD_NT) &&
      (i = top(m, KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR)) >= 0)
    return reg_slot(m, i, "nested kernel");
  /* 5. CompositeImplicitAutograd: an autograd key takes it only when its
   * backend has no kernel of its own and there is no CEA kernel (CEANF does
   * not count, as in PyTorch); AutogradOther would be ambiguous with a kernel
   * at a Quantized/Sparse/SparseCsr key (none is registered here). */
  if ((k == 0 || (m_cia & b)) && (i = top(m, KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD)) >= 0) {
    kd_keyset backend = 0;
    if (m_autograd_b & b) backend = BIT(k - 38 + 1); /* Autograd<B> -> dense B */
    if (k == U_AUTOGRAD_OTHER) backend = m_quantized | m_sparse | m_sparse_csr;
    if (k == U_AUTOGRAD_NT) backend = m_nested;
    bool has_backend_kernel =
        any_at(m, backend) || top(m, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD) >= 0;
    if (k == U_AUTOGRAD_OTHER && any_at(m, m_quantized | m_sparse | m_sparse_csr))
      return (slot){S_AMBIGUOUS, -1, "ambiguous autogradother"};
    if (!has_backend_kernel) {
      return reg_slot(m, i, "math kernel");
    }
  }
  /* 6. the Autograd alias */
  if ((m_autograd_alias & b) && (i = top(m, KD_KEY_AUTOGRAD)) >= 0)
    return reg_slot(m, i, "autograd kernel");
  /* 7. CatchAll and fallbacks */
  bool fb = (k == KD_KEY_META && m->fb_meta) || (k == KD_KEY_AUTOGRAD_CPU && m->fb_autograd);
  slot fallback = {k == KD_KEY_META ? S_FB_META : S_FB_AUTOGRAD, -1, "backend fallback"};
  int ca = top(m, KD_KEY_CATCH_ALL);
  if (m_backend_like & b) {
    if (ca >= 0) return reg_slot(m, ca, "catch-all");
    if (fb) return fallback;
  } else {
    if (fb) return fallback;
    if (m_builtin_ft & b) return (slot){S_BUILTIN_FT, -1, "backend fallback"};
    if (ca >= 0) return reg_slot(m, ca, "catch-all");
  }
  return (slot){S_MISSING, -1, NULL};
}

/* The result of a call with key set ks: KD_OK and *out, KD_ENOKERNEL, or
 * KD_EUNSUPPORTED (the ambiguous AutogradOther kernel). Fallthrough slots
 * pass to the next key down; the AutogradCPU fallback redispatches with the
 * keys below the Autograd functionality. */
static kd_status model_call(const model *m, kd_keyset ks, int64_t *out) {
  for (;;) {
    unsigned k = 0;
    for (unsigned j = 63; ks && j > 0; j--)
      if (ks & BIT(j)) {
        k = j;
        break;
      }
    slot s = model_slot(m, k);
    switch (s.kind) {
      case S_MISSING:
        return KD_ENOKERNEL;
      case S_AMBIGUOUS:
        return KD_EUNSUPPORTED;
      case S_FALLTHROUGH:
      case S_BUILTIN_FT:
        if (k == 0) fail_msg("model: a fallthrough at Undefined");
        ks &= ~BIT(k);
        continue;
      case S_KERNEL:
        *out = s.id;
        return KD_OK;
      case S_FB_META:
        *out = FB_META_RESULT;
        return KD_OK;
      case S_FB_AUTOGRAD: {
        int64_t below;
        kd_status st = model_call(m, ks & (BIT(38) - 1), &below);
        if (st) return st;
        *out = below + FB_AUTOGRAD_ADD;
        return KD_OK;
      }
    }
  }
}

/* ---- Checks ----------------------------------------------------------------- */

/* Every runtime key's line of kd_op_dump_table as the model says: present with
 * "[REASON] from DEBUG" or absent (missing). */
static void check_table(int step, kd_op *op, const model *m) {
  static char dump[16384];
  size_t len = kd_op_dump_table(op, dump, sizeof dump);
  if (len >= sizeof dump) fail_msg("step %d: the dump is %zu bytes", step, len);
  for (unsigned k = 0; k < 64; k++) {
    if (!kd_dispatch_key_is_runtime((kd_dispatch_key)k)) continue;
    char head[64];
    snprintf(head, sizeof head, "\n  %s: ", kd_dispatch_key_name((kd_dispatch_key)k));
    const char *line = strstr(dump, head);
    slot s = model_slot(m, k);
    if (s.kind == S_MISSING) {
      if (line) fail_msg("step %d: %s should be missing in\n%s", step, head + 3, dump);
      continue;
    }
    if (!line) fail_msg("step %d: no line for %s in\n%s", step, head + 3, dump);
    char want[128];
    switch (s.kind) {
      case S_KERNEL:
      case S_FALLTHROUGH:
        snprintf(want, sizeof want, "%s[%s] from r%d\n",
                 s.kind == S_FALLTHROUGH ? "fallthrough " : "", s.reason, s.id);
        break;
      case S_FB_META:
        snprintf(want, sizeof want, "boxed [backend fallback] from fb-meta\n");
        break;
      case S_FB_AUTOGRAD:
        snprintf(want, sizeof want, "boxed [backend fallback] from fb-autograd\n");
        break;
      case S_AMBIGUOUS: /* its form and debug are the registry's own */
        if (!strstr(line, " [ambiguous autogradother] from ") ||
            strstr(line, " [ambiguous autogradother] from ") > strchr(line + 1, '\n'))
          fail_msg("step %d: %s should be [ambiguous autogradother] in\n%s", step, head + 3, dump);
        continue;
      default:
        snprintf(want, sizeof want,
                 "fallthrough [backend fallback] from kdispatch (built-in autograd fallthrough)\n");
        break;
    }
    const char *end = strchr(line + 1, '\n');
    size_t wl = strlen(want);
    if (!end || (size_t)(end + 1 - line) < wl || memcmp(end + 1 - wl, want, wl) != 0)
      fail_msg("step %d: %s should end with \"%.*s\" in\n%s", step, head + 3, (int)wl - 1, want,
               dump);
  }
}

/* What the sequence reached, so that the test proves its own coverage: the
 * reasons seen at a few slots (index: slot kind, reason) and the calls that
 * redispatched from the AutogradCPU fallback or found no kernel. */
typedef struct coverage {
  const char *key;
  slot_kind kind;
  const char *reason;
  int seen;
} coverage;
static coverage cover[] = {
    {"CPU", S_KERNEL, "kernel", 0},
    {"CPU", S_KERNEL, "default backend kernel", 0},
    {"CPU", S_KERNEL, "math kernel", 0},
    {"CPU", S_KERNEL, "catch-all", 0},
    {"Meta", S_FB_META, "backend fallback", 0},
    {"Meta", S_KERNEL, "catch-all", 0},
    {"AutogradCPU", S_KERNEL, "kernel", 0},
    {"AutogradCPU", S_FALLTHROUGH, "kernel", 0},
    {"AutogradCPU", S_KERNEL, "math kernel", 0},
    {"AutogradCPU", S_KERNEL, "autograd kernel", 0},
    {"AutogradCPU", S_FB_AUTOGRAD, "backend fallback", 0},
    {"AutogradCPU", S_BUILTIN_FT, "backend fallback", 0},
    {"AutogradMeta", S_KERNEL, "math kernel", 0},
    {"AutogradMeta", S_KERNEL, "autograd kernel", 0},
    {"AutogradOther", S_KERNEL, "math kernel", 0},
    {"AutogradOther", S_AMBIGUOUS, "ambiguous autogradother", 0},
    {"SparseCPU", S_KERNEL, "kernel", 0},
    {"NestedTensorCPU", S_KERNEL, "kernel", 0},
    {"NestedTensorCPU", S_KERNEL, "nested kernel", 0},
    {"NestedTensorCPU", S_KERNEL, "math kernel", 0},
    {"NestedTensorMeta", S_KERNEL, "nested kernel", 0},
    {"AutogradNestedTensor", S_KERNEL, "nested kernel", 0},
    {"AutogradNestedTensor", S_KERNEL, "math kernel", 0},
    {"AutogradNestedTensor", S_KERNEL, "autograd kernel", 0},
    {"SparseCPU", S_KERNEL, "default backend kernel", 0},
    {"Undefined", S_KERNEL, "default backend kernel", 0},
    {"Undefined", S_KERNEL, "catch-all", 0},
};
#define NCOVER (sizeof cover / sizeof cover[0])
/* A CEANF kernel at CPU while a CIA kernel fills AutogradCPU (CEANF does not
 * count as the backend's kernel, CEA does). */
static int seen_ceanf_with_math;
static int seen_redispatch, seen_redispatch_missing, seen_missing;

static void note_coverage(const model *m) {
  for (size_t c = 0; c < NCOVER; c++) {
    kd_dispatch_key k;
    if (kd_dispatch_key_from_name(cover[c].key, &k)) fail_msg("no key %s", cover[c].key);
    slot s = model_slot(m, (unsigned)k);
    if (s.kind == cover[c].kind && strcmp(s.reason, cover[c].reason) == 0) cover[c].seen++;
  }
  slot cpu = model_slot(m, KD_KEY_CPU), acpu = model_slot(m, KD_KEY_AUTOGRAD_CPU);
  int ceanf = top(m, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL);
  if (ceanf >= 0 && cpu.kind == S_KERNEL && cpu.id == m->regs[ceanf].order &&
      strcmp(acpu.reason, "math kernel") == 0)
    seen_ceanf_with_math++;
}

/* A call's status st and result *r (destroyed here) against the model's. */
static void compare(int step, kd_op *op, const char *what, const char *what2, kd_status want_st,
                    int64_t want, kd_status st, kd_value *r) {
  if (want_st != KD_OK) {
    if (st != want_st)
      fail_msg("step %d, %s %s: expected %s, got %s / %lld", step, what, what2,
               kd_status_name(want_st), kd_status_name(st), (long long)r->u.i);
    /* The ambiguous AutogradOther kernel says what to do (contract). */
    if (st == KD_EUNSUPPORTED &&
        (!strstr(kd_last_error(), kd_op_name(op)) || !strstr(kd_last_error(), "AutogradOther") ||
         !strstr(kd_last_error(), "CompositeImplicitAutograd")))
      fail_msg("step %d, %s %s: the ambiguity's message is \"%s\"", step, what, what2,
               kd_last_error());
  } else if (st != KD_OK || r->u.i != want) {
    fail_msg("step %d, %s %s: expected %lld, got %s / %lld (%s)", step, what, what2,
             (long long)want, kd_status_name(st), (long long)r->u.i, st ? kd_last_error() : "");
  }
  kd_value_destroy(r);
}

/* One call: the result the model predicts, or its error. */
static void check_call(int step, kd_op *op, const model *m, kd_tensor *t, kd_keyset tensor_keys,
                       bool inference, const char *what) {
  kd_keyset ks = tensor_keys;
  if (inference) ks &= ~(m_autograd_alias | BIT(U_ADIOV));
  int64_t want = -1;
  kd_status want_st = model_call(m, ks, &want);
  if (want_st == KD_OK && want >= FB_AUTOGRAD_ADD) seen_redispatch++;
  if (want_st == KD_ENOKERNEL) {
    seen_missing++;
    if (model_slot(m, kd_keyset_highest(ks)).kind == S_FB_AUTOGRAD) seen_redispatch_missing++;
  }
  kd_inference_mode_guard g = kd_inference_mode_enter(inference);
  kd_arg a[1] = {{.t = t}};
  kd_value r = kd_value_none();
  kd_status st = kd_call_unboxed(op, a, &r);
  kd_inference_mode_exit(g);
  compare(step, op, what, inference ? " in inference mode" : "", want_st, want, st, &r);
}

/* A call with the explicit key set {key} (kd_call_unboxed_keys): reaches
 * every slot, those no tensor's key set selects included. */
static void check_key_call(int step, kd_op *op, const model *m, kd_tensor *t, unsigned key) {
  int64_t want = -1;
  kd_status want_st = model_call(m, BIT(key), &want);
  kd_arg a[1] = {{.t = t}};
  kd_value r = kd_value_none();
  kd_status st = kd_call_unboxed_keys(op, BIT(key), a, &r);
  compare(step, op, "a call with the key set", kd_dispatch_key_name((kd_dispatch_key)key), want_st,
          want, st, &r);
}

static void test_random_sequences(void **state) {
  (void)state;
  model_init();
  kd_set_warning_handler(quiet, NULL);
  kd_library *def, *libs[NTARGETS], *fb_lib_meta, *fb_lib_autograd;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "rnd", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  for (size_t t = 0; t < NTARGETS; t++)
    KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "rnd", targets[t], __FILE__, __LINE__, &libs[t]));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "rnd", KD_KEY_META, __FILE__, __LINE__, &fb_lib_meta));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "rnd", KD_KEY_AUTOGRAD_CPU, __FILE__, __LINE__,
                               &fb_lib_autograd));
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> int", NULL, 0, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("rnd::f", "", &op));

  /* CPU and Meta tensors with their autograd keys, and made in inference mode. */
  kd_device meta_dev = {KD_DEVICE_META, 0};
  kd_tensor *cpu, *meta, *cpu_inf, *meta_inf;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &cpu));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, meta_dev, &meta));
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &cpu_inf));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, meta_dev, &meta_inf));
  kd_inference_mode_exit(g);
  kd_tensor *ts[4] = {cpu, meta, cpu_inf, meta_inf};
  const kd_keyset tkeys[4] = {BIT(KD_KEY_CPU) | BIT(U_ADIOV) | BIT(38),
                              BIT(KD_KEY_META) | BIT(U_ADIOV) | BIT(40), BIT(KD_KEY_CPU),
                              BIT(KD_KEY_META)};
  const char *names[4] = {"cpu", "meta", "cpu made in inference mode",
                          "meta made in inference mode"};
  for (int d = 0; d < 4; d++)
    if (kd_tensor_key_set(ts[d]) != tkeys[d])
      fail_msg("the key set of the %s tensor is %#llx, not %#llx", names[d],
               (unsigned long long)kd_tensor_key_set(ts[d]), (unsigned long long)tkeys[d]);

  reg regs[MAXREG];
  int n = 0, order = 0;
  model m = {regs, 0, false, false};
  kd_registration *fb_meta_reg = NULL, *fb_autograd_reg = NULL;
  int seen[NTARGETS] = {0};
  uint32_t seed = 12345;
  for (int step = 0; step < 3000; step++) {
    seed = seed * 1103515245u + 12345u;
    uint32_t roll = (seed >> 16) % 100;
    /* Few registrations live at a time (about 4 to 8, for 12 targets), so that
     * keys come and go: registering is likelier the fewer there are. */
    uint32_t reg_chance = n < 4 ? 60 : n < 8 ? 44 : 30;
    if (roll < reg_chance && n < MAXREG) { /* register */
      int t = (int)((seed >> 8) % NTARGETS);
      char debug[32];
      snprintf(debug, sizeof debug, "r%d", order);
      kd_kernel k = t == (int)FALLTHROUGH_TARGET
                        ? kd_kernel_fallthrough()
                        : kd_kernel_closure(k_id, "(Tensor) -> int", (void *)(intptr_t)order, NULL);
      k.debug = debug;
      KD_ASSERT_OK(kd_library_impl(libs[t], "f", &k, &regs[n].r));
      regs[n].target = t;
      regs[n].order = order++;
      seen[t]++;
      n++;
    } else if (roll < 88 && n > 0) { /* release any one */
      int i = (int)((seed >> 8) % (uint32_t)n);
      kd_registration_release(regs[i].r);
      regs[i] = regs[--n];
    } else if (roll < 94) { /* toggle the Meta fallback */
      if (m.fb_meta) {
        kd_registration_release(fb_meta_reg);
      } else {
        kd_kernel k = kd_kernel_boxed(fb_meta);
        k.debug = "fb-meta";
        KD_ASSERT_OK(kd_library_fallback(fb_lib_meta, &k, &fb_meta_reg));
      }
      m.fb_meta = !m.fb_meta;
    } else { /* toggle the AutogradCPU fallback */
      if (m.fb_autograd) {
        kd_registration_release(fb_autograd_reg);
      } else {
        kd_kernel k = kd_kernel_boxed(fb_autograd);
        k.debug = "fb-autograd";
        KD_ASSERT_OK(kd_library_fallback(fb_lib_autograd, &k, &fb_autograd_reg));
      }
      m.fb_autograd = !m.fb_autograd;
    }
    m.n = n;
    KD_ASSERT_OK(kd_dispatcher_check());
    check_table(step, op, &m);
    note_coverage(&m);
    for (int d = 0; d < 4; d++)
      for (int inf = 0; inf < 2; inf++) check_call(step, op, &m, ts[d], tkeys[d], inf, names[d]);
    for (unsigned k = 0; k < 64; k++)
      if (kd_dispatch_key_is_runtime((kd_dispatch_key)k)) check_key_call(step, op, &m, cpu, k);
  }
  /* The sequence reached every target. */
  for (size_t t = 0; t < NTARGETS; t++)
    if (seen[t] == 0) fail_msg("target %zu was never registered", t);
  for (size_t c = 0; c < NCOVER; c++)
    if (cover[c].seen == 0)
      fail_msg("the sequence never had %s filled with [%s] (kind %d)", cover[c].key,
               cover[c].reason, (int)cover[c].kind);
  if (!seen_ceanf_with_math || !seen_redispatch || !seen_redispatch_missing || !seen_missing)
    fail_msg("coverage: CEANF beside a math AutogradCPU %d, redispatches %d, of which missing "
             "%d, missing %d", seen_ceanf_with_math, seen_redispatch, seen_redispatch_missing,
             seen_missing);

  if (m.fb_meta) kd_registration_release(fb_meta_reg);
  if (m.fb_autograd) kd_registration_release(fb_autograd_reg);
  for (size_t t = 0; t < NTARGETS; t++) kd_library_close(libs[t]);
  kd_library_close(fb_lib_meta);
  kd_library_close(fb_lib_autograd);
  kd_library_close(def);
  KD_ASSERT_ERR(kd_op_find("rnd::f", "", &op), KD_ENOTFOUND, "not found");
  KD_ASSERT_OK(kd_dispatcher_check());
  for (int d = 0; d < 4; d++) kd_tensor_release(ts[d]);
  kd__reclaim(true);
  kd_set_warning_handler(NULL, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_sequences)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
