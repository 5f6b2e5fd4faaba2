/*
 * call.c: the call path. A typed call costs: the key set of its tensor
 * arguments, the thread's include/exclude sets and the operator's
 * fallthrough mask (a few loads and bit operations), the highest set bit,
 * one acquire load of the slot, and an indirect call. No lock, no hashing, no
 * allocation. Everything unusual (missing kernels, functors, adapters between
 * boxed and unboxed forms, tracing) is on the slow path.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dispatch/dispatcher_impl.h"
#include "kd/cpu_fallback.h"

bool kd__trace;
bool kd__slow;

__attribute__((constructor)) static void kd__trace_init(void) {
  const char *v = getenv("KD_SHOW_DISPATCH_TRACE");
  if (v && *v && strcmp(v, "0") != 0) kd__set_slow(true);
}

/* The two call entries start on a cache line: their hot paths are a few
 * dozen instructions, and where they fall relative to 64-byte lines
 * otherwise moves with every change to unrelated code in this file, and the
 * same call's cost with it (bench/kd_bench_dispatch.c measures across
 * placements for that reason). */
#if defined(__GNUC__) || defined(__clang__)
#define KD__HOT_ALIGN __attribute__((aligned(64)))
#else
#define KD__HOT_ALIGN
#endif

#define KD__LIKELY(x) __builtin_expect(!!(x), 1)
#define KD__UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Calls in progress on this thread while tracing (for the indentation):
 * counted on the slow path, which every call takes while tracing. */
static _Thread_local int t_trace_depth;

static void trace(const char *what, const kd_op *op, kd_dispatch_key key, kd_keyset ks) {
  char keys[256];
  kd_keyset_format(ks, keys, sizeof keys);
  fprintf(stderr, "[kd dispatch] %*s%s %s: key %s of %s\n", 2 * (t_trace_depth - 1), "", what,
          op->name, kd_dispatch_key_name(key), keys);
}

kd_status kd__no_op_info(const kd_op *op) {
  if (!kd__op_alive(op))
    return kd_set_error(KD_ESTATE,
                        "operator '%s' is not defined: nothing defines or implements it (its "
                        "last registration was released, or it never had one); the handle works "
                        "again once a library defines it",
                        op->name);
  return kd_set_error(KD_ESTATE,
                      "operator '%s' is not defined: it has no schema (a DEF or FRAGMENT library "
                      "must def it before it can be called)",
                      op->name);
}

/* The keys whose slot has a kernel (for the missing-kernel message). */
static kd_keyset available_keys(const kd_op *op) {
  kd_keyset ks = 0;
  kd_keyset ft = ~atomic_load_explicit(&op->keep, memory_order_relaxed);
  for (unsigned k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    const kd__entry *e = atomic_load_explicit(&op->table[k], memory_order_acquire);
    if (e && e->reason != KD__REASON_MISSING && !(ft & ((kd_keyset)1 << k))) ks |= (kd_keyset)1 << k;
  }
  return ks;
}

kd_status kd__no_kernel(const kd_op *op, const kd__entry *e, kd_dispatch_key key,
                        const kd_tensor *kt, const char *fallback_why) {
  /* What became of the CPU fallback: tried (and why it did not apply), or
   * off, said for the device backends it is meant for. */
  char note[1024] = "";
  const char *kn = kd_dispatch_key_name(key);
  bool device_key = key == KD_KEY_CUDA || key == KD_KEY_PRIVATEUSE1 || key == KD_KEY_PRIVATEUSE2 ||
                    key == KD_KEY_PRIVATEUSE3;
  if (fallback_why)
    snprintf(note, sizeof note, "the CPU fallback for %s was tried and did not apply: %s", kn,
             fallback_why);
  else if (device_key)
    snprintf(note, sizeof note,
             "the CPU fallback is off for %s (kd_backend_set_cpu_fallback turns it on)", kn);
  bool keyed = e && e->select && kt && e->reason != KD__REASON_MISSING &&
               e->kernel->k.kind != KD_KERNEL_FALLTHROUGH;
  if (keyed)
    return kd_set_error(KD_ENOKERNEL,
                        "kernel '%s' has no %s kernel for dtype %s (layout %s); registered: %s%s%s",
                        op->name, kn, kd_dtype_name(kt->dtype), kd_layout_name(kt->layout),
                        e->select_text, note[0] ? "; " : "", note);
  char avail[512];
  kd_keyset_format(available_keys(op), avail, sizeof avail);
  const char *why = kd__rejected_why(op, key); /* a kernel set aside (library.c) */
  if (note[0]) note[0] = (char)(note[0] - 'a' + 'A'); /* a sentence of its own */
  return kd_set_error(KD_ENOKERNEL,
                      "Could not run '%s' with arguments from the '%s' backend. This could be "
                      "because the operator doesn't exist for this backend, or was omitted during "
                      "the selective/custom build process (if using custom build). '%s' is only "
                      "available for these backends: %s.%s%s%s%s%s",
                      op->name, kn, op->name, avail,
                      why ? " A kernel registered for it was rejected: " : "", why ? why : "",
                      note[0] ? " " : "", note, note[0] ? "." : "");
}

/* The data a kernel gets: a closure's data, or this slot's functor state,
 * made on first use. */
static kd_status kernel_data(const kd__entry *e, const kd__kernel *k, void **data) {
  if (k->k.kind != KD_KERNEL_FUNCTOR) {
    *data = k->k.data;
    return KD_OK;
  }
  kd__entry *me = (kd__entry *)e; /* only the state is written */
  void *state = atomic_load_explicit(&me->state, memory_order_acquire);
  if (state) {
    *data = state;
    return KD_OK;
  }
  kd_status st = k->k.create(k->k.data, k->ctor_args, k->k.nctor_args, &state);
  if (st) return st;
  void *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&me->state, &expected, state, memory_order_acq_rel,
                                               memory_order_acquire)) {
    if (k->k.destroy) k->k.destroy(state); /* another thread won */
    state = expected;
  }
  *data = state;
  return KD_OK;
}

/* What a call runs: the kernel, its data, what to enforce around it. */
typedef struct resolved {
  const kd__kernel *kernel;
  void *data;
  const kd__plan *plan; /* kernel keys: argument definitions to enforce, or NULL */
  kd_dispatch_key key;  /* the slot the kernel comes from */
  bool fallback;        /* no kernel: the backend's CPU fallback runs the call */
  bool helper;          /* fallback through kd_cpu_fallback */
} resolved;

/* The tensor whose layout and dtype select within a slot (NULL: none). */
static inline const kd_tensor *key_tensor(const kd__op_info *info, const kd__entry *e,
                                          const kd_arg *args) {
  int32_t i = e && e->select ? e->key_arg : info->key_tensor;
  return i >= 0 ? args[i].t : NULL;
}

static inline const kd_tensor *key_tensor_boxed(const kd__op_info *info, const kd__entry *e,
                                                const kd_value *in) {
  int32_t i = e && e->select ? e->key_arg : info->key_tensor;
  return i >= 0 && in[i].tag == KD_VALUE_TENSOR ? in[i].u.t : NULL;
}

/* The kernel an entry runs for this call and its data: the entry's own, or
 * for kernel keys the one the key tensor's layout and dtype select; or, when
 * there is none and the key's CPU fallback is on, r->fallback. */
static kd_status prepare(const kd_op *op, const kd__entry *e, kd_dispatch_key key,
                         const kd_tensor *kt, resolved *r) {
  r->kernel = NULL;
  r->data = NULL;
  r->plan = NULL;
  r->key = key;
  r->fallback = false;
  r->helper = false;
  if (!e || e->reason == KD__REASON_MISSING || e->kernel->k.kind == KD_KERNEL_FALLTHROUGH) {
    if (kd__fallback_on(key)) {
      r->fallback = true;
      return KD_OK;
    }
    return kd__no_kernel(op, e, key, kt, NULL);
  }
  if (e->select) {
    if (!kt)
      return kd_set_error(KD_ENOKERNEL,
                          "kernel '%s' has %s kernels by dtype, but the call has no tensor to "
                          "select by; registered: %s",
                          op->name, kd_dispatch_key_name(key), e->select_text);
    int idx = (int)kt->layout * KD_DTYPE_COUNT + (int)kt->dtype;
    const kd__cell *cell = &e->select[idx];
    const kd__entry *slot = e; /* whose state a functor cell uses */
    if (!cell->kernel) {
      if (kd__fallback_on(key)) {
        r->fallback = true;
        return KD_OK;
      }
      return kd__no_kernel(op, e, key, kt, NULL);
    }
    r->kernel = cell->kernel;
    r->data = cell->data;
    r->plan = cell->plan;
    /* A plain functor kernel in the cells no keyed kernel serves: the slot's
     * state (keyed kernels are never functors, so there is one at most). */
    if (cell->kernel->k.kind == KD_KERNEL_FUNCTOR) return kernel_data(slot, cell->kernel, &r->data);
    return KD_OK;
  }
  if (e->kernel->k.kind == KD_KERNEL_NOT_SUPPORTED)
    return kd_set_error(KD_EUNSUPPORTED, "'%s' is not supported for dispatch key '%s'", op->name,
                        kd_dispatch_key_name(key));
  r->kernel = e->kernel;
  return kernel_data(e, e->kernel, &r->data);
}

/* A boxed kernel called typed: box the arguments (tensors borrowed, as the
 * typed caller holds them for the call), call, unbox the results (owned). */
static kd_status unboxed_via_boxed(const kd__op_info *info, const kd__kernel *k, const kd_call *c,
                                   const kd_arg *args, kd_value *rets) {
  kd_stack stack;
  kd_stack_init(&stack);
  kd_status st = kd_stack_reserve(&stack, info->nargs > info->nrets ? info->nargs : info->nrets);
  for (uint32_t i = 0; st == KD_OK && i < info->nargs; i++) {
    kd_value v;
    if (info->kinds[i] == KD__ARG_TENSOR || info->kinds[i] == KD__ARG_OPT_TENSOR)
      v = kd_value_tensor_borrowed(args[i].t);
    else
      st = kd__arg_to_value(info->kinds[i], &args[i], &v);
    if (st == KD_OK) st = kd_stack_push(&stack, &v);
  }
  if (st == KD_OK) st = k->k.boxed(c, &stack);
  if (st == KD_OK && stack.size != info->nrets)
    st = kd_set_error(KD_EINTERNAL, "boxed kernel for '%s' left %zu values on the stack, expected %u",
                      c->op->name, stack.size, info->nrets);
  if (st == KD_OK) {
    for (uint32_t i = 0; i < info->nrets; i++) {
      kd_value_own(&stack.items[i]);
      kd_value_move(&rets[i], &stack.items[i]);
    }
    stack.size = 0;
  }
  kd_stack_free(&stack);
  return st;
}

/* Drops a value the stack owned (or borrowed). */
static inline void drop_value(kd_value *v) {
  if (v->tag >= KD_VALUE_STRING && !(v->flags & KD_VALUE_BORROWED) &&
      (v->tag == KD_VALUE_STRING || v->tag >= KD_VALUE_TENSOR))
    kd_value_destroy(v);
}

/* An unboxed kernel called boxed: read the arguments in place, call, replace
 * them with the results. `args`, `scratch` and `rets` have room for the
 * operator's arguments and returns. */
static inline __attribute__((always_inline)) kd_status
boxed_via_unboxed_in(const kd__op_info *info, kd_unboxed_fn fn, const kd_call *c,
                     kd_stack *stack, kd_arg *args, kd_scalar *scratch, kd_value *rets) {
  uint32_t nargs = info->nargs, nrets = info->nrets;
  kd_value *in = stack->items + stack->size - nargs;
  for (uint32_t i = 0; i < nargs; i++) {
    if (KD__LIKELY(info->kinds[i] == KD__ARG_TENSOR && in[i].tag == KD_VALUE_TENSOR)) {
      args[i].t = in[i].u.t;
    } else {
      kd_status st = kd__value_to_arg(info, i, &in[i], &args[i], scratch);
      if (st) return st;
    }
  }
  for (uint32_t i = 0; i < nrets; i++) rets[i] = kd_value_none();
  kd_status st = fn(c, args, rets);
  if (KD__UNLIKELY(st)) {
    for (uint32_t i = 0; i < nrets; i++) kd_value_destroy(&rets[i]);
    return st;
  }
  /* Own a borrowed result before the arguments go: it may be one of them,
   * held by nothing but the stack. */
  for (uint32_t i = 0; i < nrets; i++)
    if (KD__UNLIKELY(rets[i].flags & KD_VALUE_BORROWED)) kd_value_own(&rets[i]);
  for (uint32_t i = 0; i < nargs; i++) drop_value(&in[i]);
  stack->size -= nargs;
  if (KD__UNLIKELY(stack->size + nrets > stack->capacity) &&
      (st = kd_stack_reserve(stack, stack->size + nrets))) {
    for (uint32_t i = 0; i < nrets; i++) kd_value_destroy(&rets[i]);
    return st;
  }
  for (uint32_t i = 0; i < nrets; i++) stack->items[stack->size++] = rets[i];
  return KD_OK;
}

/* Operators of up to 8 arguments and 4 returns use small frames; the rest
 * the largest the limits allow, out of line. */
static kd_status __attribute__((noinline))
boxed_via_unboxed_big(const kd__op_info *info, kd_unboxed_fn fn, const kd_call *c,
                      kd_stack *stack) {
  kd_arg args[64];
  kd_scalar scratch[64];
  kd_value rets[16];
  return boxed_via_unboxed_in(info, fn, c, stack, args, scratch, rets);
}

static inline kd_status boxed_via_unboxed(const kd__op_info *info, kd_unboxed_fn fn,
                                          const kd_call *c, kd_stack *stack) {
  if (KD__UNLIKELY(info->nargs > 8 || info->nrets > 4))
    return boxed_via_unboxed_big(info, fn, c, stack);
  kd_arg args[8];
  kd_scalar scratch[8];
  kd_value rets[4];
  return boxed_via_unboxed_in(info, fn, c, stack, args, scratch, rets);
}

/* True when every tensor input the plan lists already is what its
 * definition asks (the common case: nothing to move or cast). */
static inline bool plan_inputs_hold(const kd__plan *p, const kd_arg *args) {
  for (uint32_t j = 0; j < p->nin; j++) {
    const kd__plan_item *it = &p->items[j];
    const kd_tensor *t = args[it->index].t;
    if (!t) continue;
    if ((it->def.dtype != KD_ALL_DTYPE && (int)t->dtype != it->def.dtype) ||
        (it->def.backend != KD_ALL_BACKEND && !(t->keys & ((kd_keyset)1 << it->def.backend))) ||
        (it->def.layout != KD_ALL_LAYOUT && (int)t->layout != it->def.layout))
      return false;
  }
  return true;
}

/* After a kernel ran: results owned (a borrowed one may be a temporary),
 * checked against the plan; None on error. */
static kd_status finish_results(const kd_op *op, const kd__op_info *info, const kd__plan *plan,
                                kd_value *rets) {
  for (uint32_t i = 0; i < info->nrets; i++)
    if (rets[i].flags & KD_VALUE_BORROWED) kd_value_own(&rets[i]);
  kd_status st = kd__enforce_outputs(op, plan, rets, info->nrets);
  if (st)
    for (uint32_t i = 0; i < info->nrets; i++) kd_value_destroy(&rets[i]);
  return st;
}

/* A kernel-key kernel with argument definitions to enforce, or reached by
 * CPU fallback: bring the arguments (a copy) to what it asks, call, own and
 * check the results, move them back home after a fallback. */
static kd_status __attribute__((noinline))
run_enforced(const kd_op *op, const kd__op_info *info, const resolved *r, const kd_call *c,
             const kd_tensor *kt, const kd_arg *args, kd_value *rets) {
  if (plan_inputs_hold(r->plan, args) && r->kernel->k.unboxed) {
    /* Nothing to bring: call as is, check the results if the plan has any. */
    kd_status st = r->kernel->k.unboxed(c, args, rets);
    if (st != KD_OK || r->plan->nout == 0) return st;
    return finish_results(op, info, r->plan, rets);
  }
  kd_arg local[64];
  kd_tensor *temps[64];
  int32_t written[64];
  uint32_t ntemps = 0;
  memcpy(local, args, info->nargs * sizeof *args);
  kd_status st = kd__enforce_inputs(op, info, r->plan, kt, local, temps, written, &ntemps);
  if (st == KD_OK) {
    for (uint32_t i = 0; i < info->nrets; i++) rets[i] = kd_value_none();
    st = r->kernel->k.unboxed ? r->kernel->k.unboxed(c, local, rets)
                              : unboxed_via_boxed(info, r->kernel, c, local, rets);
    if (st == KD_OK) st = finish_results(op, info, r->plan, rets);
    /* Tensor(a!) arguments brought for the call: written back (never lost). */
    if (st == KD_OK && ntemps &&
        (st = kd__enforce_write_back(op, info, r->plan, args, local, temps, written, ntemps, rets)))
      for (uint32_t i = 0; i < info->nrets; i++) kd_value_destroy(&rets[i]);
  }
  for (uint32_t i = 0; i < ntemps; i++) kd_tensor_release(temps[i]);
  return st;
}

/* The same for a boxed call (or the CPU fallback of one, r->fallback, with
 * the slot's entry e): read the arguments in place, run as above, replace
 * them with the results. */
static kd_status __attribute__((noinline))
run_enforced_boxed(const kd_op *op, const kd__op_info *info, const resolved *r, const kd_call *c,
                   const kd__entry *e, const kd_tensor *kt, kd_stack *stack) {
  kd_arg args[64];
  kd_scalar scratch[64];
  kd_value rets[16];
  kd_value *in = stack->items + stack->size - info->nargs;
  for (uint32_t i = 0; i < info->nargs; i++) {
    kd_status st = kd__value_to_arg(info, i, &in[i], &args[i], scratch);
    if (st) return st;
  }
  kd_status st = r->fallback ? kd__cpu_fallback(op, info, c, e, kt, r->helper, args, rets)
                             : run_enforced(op, info, r, c, kt, args, rets);
  if (st) return st;
  for (uint32_t i = 0; i < info->nargs; i++) drop_value(&in[i]);
  stack->size -= info->nargs;
  if ((st = kd_stack_reserve(stack, stack->size + info->nrets))) {
    for (uint32_t i = 0; i < info->nrets; i++) kd_value_destroy(&rets[i]);
    return st;
  }
  for (uint32_t i = 0; i < info->nrets; i++) stack->items[stack->size++] = rets[i];
  return KD_OK;
}

/* Everything but the plain case: a missing or special entry, a functor, a
 * boxed-only kernel, a fallthrough entry reached through a stale mask,
 * tracing. */
static kd_status dispatch_unboxed_slow_in(kd_op *op, const kd__op_info *info, kd_keyset ks,
                                         const kd_arg *args, kd_value *rets) {
  for (;;) {
    kd_dispatch_key key = kd_keyset_highest(ks);
    const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
    if (e && e->kernel->k.kind == KD_KERNEL_FALLTHROUGH && key != KD_KEY_UNDEFINED) {
      ks &= ~kd_keyset_of(key); /* the mask was read before the slot changed */
      continue;
    }
    if (KD__UNLIKELY(kd__trace)) trace("call", op, key, ks);
    kd_call c = {op, ks, key, NULL};
    const kd_tensor *kt = key_tensor(info, e, args);
    resolved r;
    kd_status st = prepare(op, e, key, kt, &r);
    if (st) return st;
    if (KD__UNLIKELY(kd__record)) kd__record_call(op, r.key, kt ? (int)kt->dtype : -1);
    c.data = r.data;
    if (r.fallback) return kd__cpu_fallback(op, info, &c, e, kt, false, args, rets);
    if (r.plan) return run_enforced(op, info, &r, &c, kt, args, rets);
    if (r.kernel->k.unboxed) return r.kernel->k.unboxed(&c, args, rets);
    return unboxed_via_boxed(info, r.kernel, &c, args, rets);
  }
}

static kd_status __attribute__((noinline))
dispatch_unboxed_slow(kd_op *op, const kd__op_info *info, kd_keyset ks, const kd_arg *args,
                      kd_value *rets) {
  if (KD__LIKELY(!kd__trace)) return dispatch_unboxed_slow_in(op, info, ks, args, rets);
  t_trace_depth++;
  kd_status st = dispatch_unboxed_slow_in(op, info, ks, args, rets);
  t_trace_depth--;
  return st;
}

/* An empty slot (out of line): the missing-kernel error, or the schema's
 * absence when the operator was undefined since the call began. */
static kd_status __attribute__((noinline))
dispatch_unboxed_missing(kd_op *op, kd_keyset ks, const kd_arg *args, kd_value *rets) {
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  if (!info) return kd__no_op_info(op);
  return dispatch_unboxed_slow(op, info, ks, args, rets);
}

/* The typed call after the key set: one slot load and one indirect call.
 * A slot without a plain kernel (missing aside) calls kd__entry_slow. */
static inline __attribute__((always_inline)) kd_status
dispatch_unboxed(kd_op *op, kd_keyset ks, const kd_arg *args, kd_value *rets) {
  ks &= atomic_load_explicit(&op->keep, memory_order_relaxed);
  kd_dispatch_key key = kd_keyset_highest(ks);
  const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
  if (KD__LIKELY(e != NULL)) {
    kd_call c = {op, ks, key, e->call_data};
    return e->call_fn(&c, args, rets);
  }
  return dispatch_unboxed_missing(op, ks, args, rets);
}

kd_status kd__entry_slow(const kd_call *call, const kd_arg *args, kd_value *rets) {
  const kd__entry *e = call->data;
  kd_op *op = call->op;
  kd_keyset ks = call->keys;
  kd_dispatch_key key = call->key;
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  if (KD__UNLIKELY(!info)) return kd__no_op_info(op); /* undefined since the call began */
  if (e->select && e->key_arg >= 0 && !kd__slow) {
    /* Kernel keys: one more load, by the key tensor's layout and dtype. */
    const kd_tensor *kt = args[e->key_arg].t;
    const kd__cell *cell = kt ? &e->select[(int)kt->layout * KD_DTYPE_COUNT + (int)kt->dtype] : NULL;
    if (KD__LIKELY(cell && cell->fast)) {
      kd_call c = {op, ks, key, cell->data};
      return cell->fast(&c, args, rets);
    }
    if (cell && cell->plan) { /* argument definitions to enforce */
      kd_call c = {op, ks, key, cell->data};
      resolved r = {cell->kernel, cell->data, cell->plan, key, false, false};
      return run_enforced(op, info, &r, &c, kt, args, rets);
    }
  }
  return dispatch_unboxed_slow(op, info, ks, args, rets);
}

static kd_status dispatch_boxed_slow_in(kd_op *op, const kd__op_info *info, kd_keyset ks,
                                       kd_stack *stack) {
  for (;;) {
    kd_dispatch_key key = kd_keyset_highest(ks);
    const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
    if (e && e->kernel->k.kind == KD_KERNEL_FALLTHROUGH && key != KD_KEY_UNDEFINED) {
      ks &= ~kd_keyset_of(key);
      continue;
    }
    if (KD__UNLIKELY(kd__trace)) trace("call boxed", op, key, ks);
    kd_call c = {op, ks, key, NULL};
    const kd_tensor *kt = key_tensor_boxed(info, e, stack->items + stack->size - info->nargs);
    resolved r;
    kd_status st = prepare(op, e, key, kt, &r);
    if (st) return st;
    if (KD__UNLIKELY(kd__record)) kd__record_call(op, r.key, kt ? (int)kt->dtype : -1);
    c.data = r.data;
    if (r.plan || r.fallback) return run_enforced_boxed(op, info, &r, &c, e, kt, stack);
    if (r.kernel->k.boxed) return r.kernel->k.boxed(&c, stack);
    return boxed_via_unboxed(info, r.kernel->k.unboxed, &c, stack);
  }
}

static kd_status __attribute__((noinline))
dispatch_boxed_slow(kd_op *op, const kd__op_info *info, kd_keyset ks, kd_stack *stack) {
  if (KD__LIKELY(!kd__trace)) return dispatch_boxed_slow_in(op, info, ks, stack);
  t_trace_depth++;
  kd_status st = dispatch_boxed_slow_in(op, info, ks, stack);
  t_trace_depth--;
  return st;
}

static inline __attribute__((always_inline)) kd_status
dispatch_boxed(kd_op *op, const kd__op_info *info, kd_keyset ks, kd_stack *stack) {
  ks &= atomic_load_explicit(&op->keep, memory_order_relaxed);
  kd_dispatch_key key = kd_keyset_highest(ks);
  const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
  if (KD__LIKELY(e && (e->fast || e->boxed) && !kd__slow)) {
    kd_call c = {op, ks, key, e->data};
    if (e->boxed) return e->boxed(&c, stack);
    return boxed_via_unboxed(info, e->fast, &c, stack);
  }
  return dispatch_boxed_slow(op, info, ks, stack);
}

/* Results of boxed calls are owned, even when a kernel passed a borrowed
 * argument through. */
static inline void own_results(const kd__op_info *info, kd_stack *stack) {
  kd_value *r = stack->items + stack->size - info->nrets;
  for (uint32_t i = 0; i < info->nrets; i++)
    if (KD__UNLIKELY(r[i].flags & KD_VALUE_BORROWED)) kd_value_own(&r[i]);
}

static inline kd_keyset with_tls(kd_keyset ks) {
  kd__tls_mask tls = kd__tls_keys;
  return (ks | tls.include) & tls.keep;
}

/* Every typed call but the plain one, inside the caller's read section. */
static kd_status __attribute__((noinline))
call_unboxed_in(kd_op *op, const kd_arg *args, kd_value *rets) {
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  if (KD__UNLIKELY(!info)) return kd__no_op_info(op);
  kd_keyset ks;
  if (KD__LIKELY(info->single_tensor >= 0)) {
    const kd_tensor *t0 = args[info->single_tensor].t; /* NULL: no keys, not a crash */
    ks = KD__LIKELY(t0 != NULL) ? t0->keys : 0;
  } else {
    ks = kd__args_keys(info, args);
  }
  return dispatch_unboxed(op, with_tls(ks), args, rets);
}

/* The same with its own read section, for a first call on a thread or the
 * fence mode (kd__read_enter's slow path). */
static kd_status __attribute__((noinline))
call_unboxed_cold(kd_op *op, const kd_arg *args, kd_value *rets) {
  uint64_t rd = kd__read_enter();
  kd_status st = call_unboxed_in(op, args, rets);
  kd__read_exit(rd);
  return st;
}

/* The key set of a typed call's tensor arguments, for the two plain typed
 * calls: one tensor at a precomputed index, or a list of Tensor and Tensor?
 * arguments. false: anything else (argument lists, no schema), which
 * call_unboxed_in handles. */
static inline __attribute__((always_inline)) bool typed_keys(kd_op *op, const kd_arg *args,
                                                             kd_keyset *out) {
  int32_t ti = atomic_load_explicit(&op->fast_arg, memory_order_acquire);
  if (KD__LIKELY(ti >= 0)) {
    const kd_tensor *t0 = args[ti].t; /* NULL: no keys, not a crash */
    *out = KD__LIKELY(t0 != NULL) ? t0->keys : 0;
    return true;
  }
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  if (KD__UNLIKELY(!info) || !info->plain_tensors) return false;
  kd_keyset ks = 0;
  for (uint32_t k = 0; k < info->ntensor; k++) {
    const kd_tensor *t = args[info->tensor_idx[k]].t; /* Tensor? may be NULL */
    if (t) ks |= t->keys;
  }
  *out = ks;
  return true;
}

/* The plain typed call is written so that nothing but the saved epoch lives
 * across a call: one small frame; a first call on a thread and argument
 * lists go out of line (call_unboxed_in), everything after the key set is
 * dispatch_unboxed's (its own slow path out of line). */
KD__HOT_ALIGN kd_status(kd_call_unboxed)(kd_op *op, const kd_arg *args, kd_value *rets) {
  kd__reader *r = &kd__tls_reader;
  uint64_t rd = __atomic_load_n(&r->epoch, __ATOMIC_RELAXED);
  if (rd == 0) {
    if (KD__UNLIKELY(r->mode != KD__READ_STORE)) return call_unboxed_cold(op, args, rets);
    __atomic_store_n(&r->epoch, __atomic_load_n(&kd__global_epoch, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELAXED);
    atomic_signal_fence(memory_order_seq_cst); /* as kd__read_enter */
  }
  kd_keyset ks;
  kd_status st = KD__LIKELY(typed_keys(op, args, &ks)) ? dispatch_unboxed(op, with_tls(ks), args, rets)
                                                      : call_unboxed_in(op, args, rets);
  kd__read_exit(rd);
  return st;
}

/* The inline typed call's part (kd__call_unboxed_inline in
 * kd/detail/dispatch_abi.h): what kd_call_unboxed does between entering and
 * leaving its read section, which here is the caller's. The context goes to
 * the caller's storage, so that the kernel call is the last thing done (a
 * tail call). */
KD__HOT_ALIGN kd_status kd__call_unboxed_in_section(kd_op *op, const kd_arg *args, kd_value *rets,
                                                    kd_call *call) {
  kd_keyset ks;
  if (KD__UNLIKELY(!typed_keys(op, args, &ks))) return call_unboxed_in(op, args, rets);
  ks = with_tls(ks) & atomic_load_explicit(&op->keep, memory_order_relaxed);
  kd_dispatch_key key = kd_keyset_highest(ks);
  const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
  if (KD__UNLIKELY(e == NULL)) return dispatch_unboxed_missing(op, ks, args, rets);
  call->op = op;
  call->keys = ks;
  call->key = key;
  call->data = e->call_data;
  return e->call_fn(call, args, rets);
}

static kd_status check_stack(const kd_op *op, const kd__op_info *info, const kd_stack *stack) {
  if (stack->size < info->nargs)
    return kd_set_error(KD_ESTATE,
                        "boxed call of '%s': the stack holds %zu values but the operator takes %u "
                        "arguments",
                        op->name, stack->size, info->nargs);
  return KD_OK;
}

/* A scalar argument of the short path (int, float or bool): false when the
 * value's tag is not the one its kind takes (the general path then converts
 * or fails with the usual message). */
static inline bool short_scalar_arg(uint8_t kind, const kd_value *v, kd_arg *a) {
  switch (kind) {
    case KD__ARG_INT:
      if (v->tag != KD_VALUE_INT) return false;
      a->i = v->u.i;
      return true;
    case KD__ARG_FLOAT:
      if (v->tag != KD_VALUE_DOUBLE) return false;
      a->f = v->u.d;
      return true;
    case KD__ARG_BOOL:
      if (v->tag != KD_VALUE_BOOL) return false;
      a->b = v->u.b;
      return true;
    default: /* a Tensor argument whose value is not a tensor */
      return false;
  }
}

/* Drops the argument references the short path holds: bit i of `owned` set
 * when args[i] is a tensor the stack owned. */
static inline void release_owned(const kd_arg *args, uint32_t owned) {
  while (owned) {
    kd__tensor_release(args[__builtin_ctz(owned)].t);
    owned &= owned - 1;
  }
}

/* The short path's kernel failed: drop the results it may have left (the
 * top `nrets` values of the stack) and take them off, then drop the
 * argument references the stack owned. Out of line, never on the hot path. */
static kd_status __attribute__((noinline, cold))
short_failed(kd_stack *stack, uint32_t nrets, const kd_arg *args, uint32_t owned, kd_status st) {
  kd_value *rets = stack->items + stack->size - nrets;
  for (uint32_t i = 0; i < nrets; i++) kd_value_destroy(&rets[i]);
  stack->size -= nrets;
  release_owned(args, owned);
  return st;
}

/* Reads the arguments of an operator whose arguments are all Tensor, int,
 * float or bool (at most 8) into args, with their key set and which tensor
 * references the stack owns (bit i: args[i].t). False when a value does not
 * have the kind its argument takes. Out of line: the common case, Tensor
 * arguments only, has its own loop in call_boxed_short. */
static bool __attribute__((noinline))
short_args_mixed(const kd__op_info *info, const kd_value *in, kd_arg *args, kd_keyset *keys,
                 uint32_t *owned_bits) {
  uint32_t owned = 0;
  kd_keyset ks = 0;
  for (uint32_t i = 0; i < info->nargs; i++) {
    const kd_value *v = &in[i];
    if (v->tag == KD_VALUE_TENSOR && info->kinds[i] == KD__ARG_TENSOR) {
      kd_tensor *t = v->u.t;
      args[i].t = t;
      ks |= t->keys;
      owned |= (uint32_t)(~v->flags & KD_VALUE_BORROWED) << i;
    } else if (!short_scalar_arg(info->kinds[i], v, &args[i])) {
      return false;
    }
  }
  *keys = ks;
  *owned_bits = owned;
  return true;
}

/* The short path of a boxed call: an unboxed FUNCTION kernel, an operator
 * whose arguments are all Tensor, int, float or bool (info->simple). Returns
 * 1 when it does not apply (nothing done), else the call's status.
 *
 * Arguments are read straight from their stack slots into the kernel's
 * argument array, Tensors first (one tag test per argument, the key set and
 * which references the stack owned gathered in the same pass, as a bit
 * mask). The kernel writes its results straight into the stack, over the
 * arguments (read out first; the owned tensor references wait in `args`
 * until the kernel is done). Copying results the kernel built would read
 * 16 bytes at a time what it wrote in narrower stores, which the CPU cannot
 * forward from its store buffer: a stall per result. On error the arguments
 * are gone and no result is on the stack (the state kd_call_boxed allows). */
static inline __attribute__((always_inline)) int
call_boxed_short(kd_op *op, const kd__op_info *info, kd_stack *stack, kd_status *status) {
  uint32_t nargs = info->nargs;
  size_t size = stack->size;
  if (size < nargs) return 1;
  size_t base = size - nargs;
  const kd_value *in = stack->items + base;
  kd_arg args[8];
  uint32_t owned = 0;
  kd_keyset ks = 0;
  if (KD__LIKELY(info->box_tensors)) {
    /* Tensors only (at least one): one tag test per argument, no kinds to
     * read; the first argument outside the loop, often the only one. */
    if (KD__UNLIKELY(in[0].tag != KD_VALUE_TENSOR)) return 1;
    args[0].t = in[0].u.t;
    ks = in[0].u.t->keys;
    owned = ~in[0].flags & KD_VALUE_BORROWED;
    for (uint32_t i = 1; i < nargs; i++) {
      const kd_value *v = &in[i];
      if (KD__UNLIKELY(v->tag != KD_VALUE_TENSOR)) return 1;
      kd_tensor *t = v->u.t;
      args[i].t = t;
      ks |= t->keys;
      owned |= (uint32_t)(~v->flags & KD_VALUE_BORROWED) << i;
    }
  } else {
    /* Through memory only here: the tensor loop keeps ks and owned in
     * registers. */
    kd_keyset mks;
    uint32_t mowned;
    if (!info->simple || !short_args_mixed(info, in, args, &mks, &mowned)) return 1;
    ks = mks;
    owned = mowned;
  }
  ks = with_tls(ks) & atomic_load_explicit(&op->keep, memory_order_relaxed);
  kd_dispatch_key key = kd_keyset_highest(ks);
  const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
  kd_unboxed_fn fn;
  if (!e || !(fn = e->boxed_fast)) return 1;
  uint32_t nrets = info->nrets;
  kd_status st;
  if (KD__UNLIKELY(base + nrets > stack->capacity) &&
      (st = kd_stack_reserve(stack, base + nrets))) {
    *status = st; /* nothing done: the arguments stay */
    return 0;
  }
  /* From here the stack holds None results; the arguments live in args. */
  kd_value *rets = stack->items + base;
  for (uint32_t i = 0; i < nrets; i++) rets[i] = kd_value_none();
  stack->size = base + nrets;
  kd_call c = {op, ks, key, e->data};
  st = fn(&c, args, rets);
  if (KD__UNLIKELY(st)) {
    *status = short_failed(stack, nrets, args, owned, st);
    return 0;
  }
  /* Before the arguments go: a borrowed result may be one of them, held by
   * nothing but the stack. */
  for (uint32_t i = 0; i < nrets; i++)
    if (KD__UNLIKELY(rets[i].flags & KD_VALUE_BORROWED)) kd_value_own(&rets[i]);
  release_owned(args, owned);
  *status = KD_OK;
  return 0;
}

/* Every boxed call but the short path's, inside the caller's read section. */
static kd_status __attribute__((noinline))
call_boxed_in(kd_op *op, const kd__op_info *info, kd_stack *stack) {
  kd_status st = info ? check_stack(op, info, stack) : kd__no_op_info(op);
  if (st == KD_OK) {
    const kd_value *in = stack->items + stack->size - info->nargs;
    kd_keyset ks = info->single_tensor >= 0 && in[info->single_tensor].tag == KD_VALUE_TENSOR
                       ? in[info->single_tensor].u.t->keys
                       : kd__stack_keys(info, in);
    st = dispatch_boxed(op, info, with_tls(ks), stack);
    if (st == KD_OK) own_results(info, stack);
  }
  return st;
}

/* Every boxed call but the one-tensor entries': the short path, else the
 * general one. Its own read section (a one-tensor entry that declines
 * leaves its section first). */
static kd_status __attribute__((noinline)) KD__HOT_ALIGN
call_boxed_any(kd_op *op, kd_stack *stack) {
  uint64_t rd = kd__read_enter();
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  kd_status st;
  if (KD__UNLIKELY(!info) || call_boxed_short(op, info, stack, &st) != 0)
    st = call_boxed_in(op, info, stack);
  kd__read_exit(rd);
  return st;
}

/* A one-tensor entry's kernel with a result failed (out of line): the
 * result it may have left on top goes, then the argument reference if the
 * stack owned it. */
static kd_status __attribute__((noinline, cold))
one_failed(kd_stack *stack, kd_tensor *owned, kd_status st) {
  kd_value_destroy(&stack->items[--stack->size]);
  if (owned) kd__tensor_release(owned);
  return st;
}

/* A one-tensor entry's borrowed result made owned, then the argument
 * reference dropped if the stack owned it (out of line, as the next). */
static kd_status __attribute__((noinline, cold)) one_own(kd_value *slot, kd_tensor *owned) {
  kd_value_own(slot);
  if (owned) kd__tensor_release(owned);
  return KD_OK;
}

/* The last reference to a one-tensor entry's argument went. */
static kd_status __attribute__((noinline)) one_free(kd_tensor *t) {
  kd__tensor_free_last(t);
  return KD_OK;
}

/* The kernel call of a one-tensor entry (below), for a stack that owned
 * the argument or lent it (`owned`: a constant in each copy), and the end
 * of the call's read section (`rd`). The slot is above the stack (nrets 0)
 * or the result, None until the kernel writes it (nrets 1), and `size` is
 * the stack's size with the argument. Each way out ends the read section
 * itself: the status of a call that succeeded is a constant, not a value
 * kept across the calls that follow it. */
static inline __attribute__((always_inline)) kd_status
one_call(const kd_call *c, kd_unboxed_fn fn, kd_stack *stack, size_t size, kd_value *slot,
         kd_tensor *t, uint32_t nrets, bool owned, uint64_t rd) {
  kd_arg arg;
  arg.t = t;
  stack->size = size - 1 + nrets;
  kd_status st;
  if (nrets == 0) {
    /* Success or failure, the argument goes and nothing else changes. */
    st = fn(c, &arg, slot);
    if (owned) kd__tensor_release(arg.t); /* read back: nothing else kept */
    kd__read_exit(rd);
    return st;
  }
  *slot = kd_value_none();
  st = fn(c, &arg, slot);
  /* What is left touches no table entry: the read section ends here. */
  kd__read_exit(rd);
  if (KD__UNLIKELY(st)) return one_failed(stack, owned ? arg.t : NULL, st);
  /* Before the argument goes: a borrowed result may be it. */
  if (KD__UNLIKELY(slot->flags & KD_VALUE_BORROWED)) return one_own(slot, owned ? arg.t : NULL);
  if (owned && KD__UNLIKELY(kd__ref_dec_last(&arg.t->refs))) return one_free(arg.t);
  return KD_OK;
}

/* The boxed call of an operator of one Tensor argument and `nrets` (0 or 1)
 * results (op->box1), with an entry that calls an unboxed FUNCTION kernel
 * as is (boxed_fast): what kd_call_unboxed does, plus reading the one slot
 * and writing the result over it. Anything else (an empty stack, a value
 * that is not a tensor, no such entry, a thread's first call) leaves the
 * read section and takes call_boxed_any, which does everything again the
 * general way (nothing was changed). The same errors and ownership as
 * call_boxed_short: on error the argument is gone and no result is on the
 * stack. */
static inline __attribute__((always_inline)) kd_status
call_boxed_one(kd_op *op, kd_stack *stack, uint32_t nrets) {
  kd__reader *r = &kd__tls_reader;
  uint64_t rd = __atomic_load_n(&r->epoch, __ATOMIC_RELAXED);
  if (KD__LIKELY(rd == 0)) { /* an outermost call */
    if (KD__UNLIKELY(r->mode != KD__READ_STORE)) return call_boxed_any(op, stack);
    __atomic_store_n(&r->epoch, __atomic_load_n(&kd__global_epoch, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELAXED);
    atomic_signal_fence(memory_order_seq_cst); /* as kd__read_enter */
  }
  size_t size = stack->size;
  if (KD__UNLIKELY(size == 0)) goto other;
  kd_value *slot = &stack->items[size - 1];
  if (KD__UNLIKELY(slot->tag != KD_VALUE_TENSOR)) goto other;
  kd_tensor *t = slot->u.t;
  kd_keyset ks = with_tls(t->keys) & atomic_load_explicit(&op->keep, memory_order_relaxed);
  kd_dispatch_key key = kd_keyset_highest(ks);
  const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
  kd_unboxed_fn fn;
  if (KD__UNLIKELY(!e || !(fn = e->boxed_fast))) goto other;
  kd_call c = {op, ks, key, e->data};
  if (slot->flags & KD_VALUE_BORROWED)
    return one_call(&c, fn, stack, size, slot, t, nrets, false, rd);
  return one_call(&c, fn, stack, size, slot, t, nrets, true, rd);
other:
  kd__read_exit(rd);
  return call_boxed_any(op, stack);
}

static kd_status __attribute__((noinline)) KD__HOT_ALIGN
call_boxed_one1(kd_op *op, kd_stack *stack) {
  return call_boxed_one(op, stack, 1);
}

/* A boxed call of any operator but one of a Tensor argument and no result. */
static kd_status __attribute__((noinline)) call_boxed_other(kd_op *op, kd_stack *stack,
                                                            int32_t shape) {
  if (shape == 1) return call_boxed_one1(op, stack);
  return call_boxed_any(op, stack);
}

/* The one-tensor entry without a result inline (the benchmark's shape and
 * a frame of two saved registers, as the typed call's), the others out of
 * line. The shape is read relaxed, before the read section: operators are
 * never freed, and the entries read nothing of the schema but that. */
KD__HOT_ALIGN kd_status kd_call_boxed(kd_op *op, kd_stack *stack) {
  int32_t shape = atomic_load_explicit(&op->box1, memory_order_relaxed);
  if (KD__UNLIKELY(shape != 0)) return call_boxed_other(op, stack, shape);
  return call_boxed_one(op, stack, 0);
}

kd_status kd_call_unboxed_keys(kd_op *op, kd_keyset keys, const kd_arg *args, kd_value *rets) {
  uint64_t rd = kd__read_enter();
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  kd_status st = info ? dispatch_unboxed(op, keys, args, rets) : kd__no_op_info(op);
  kd__read_exit(rd);
  return st;
}

kd_status kd_call_boxed_keys(kd_op *op, kd_keyset keys, kd_stack *stack) {
  uint64_t rd = kd__read_enter();
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  kd_status st = info ? check_stack(op, info, stack) : kd__no_op_info(op);
  if (st == KD_OK) st = dispatch_boxed(op, info, keys, stack);
  if (st == KD_OK) own_results(info, stack);
  kd__read_exit(rd);
  return st;
}

kd_status kd_redispatch_unboxed(const kd_call *call, const kd_arg *args, kd_value *rets) {
  if (KD__UNLIKELY(kd__trace)) fprintf(stderr, "[kd dispatch] redispatch below %s\n", kd_dispatch_key_name(call->key));
  return kd_call_unboxed_keys(call->op, kd_keyset_below(call->keys, call->key), args, rets);
}

kd_status kd_redispatch_boxed(const kd_call *call, kd_stack *stack) {
  if (KD__UNLIKELY(kd__trace)) fprintf(stderr, "[kd dispatch] redispatch below %s\n", kd_dispatch_key_name(call->key));
  return kd_call_boxed_keys(call->op, kd_keyset_below(call->keys, call->key), stack);
}

kd_status kd_op_fill_defaults(kd_op *op, kd_stack *stack, size_t given) {
  uint64_t rd = kd__read_enter();
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  kd_status st = info ? KD_OK : kd__no_op_info(op);
  for (size_t i = given; st == KD_OK && info && i < info->nargs; i++) {
    if (!info->has_default[i]) {
      st = kd_set_error(KD_EINVAL, "'%s': argument %zu '%s' was not given and has no default",
                        op->name, i, kd_argument_name(kd_schema_argument(info->schema, i)));
      break;
    }
    st = kd_stack_push_copy(stack, &info->defaults[i]);
  }
  kd__read_exit(rd);
  return st;
}

kd_status kd_cpu_fallback(const kd_call *call, kd_stack *stack) {
  if (!call || !call->op || !stack) return kd_set_error(KD_EINVAL, "kd_cpu_fallback: NULL argument");
  kd_op *op = call->op;
  kd_dispatch_key key = call->key;
  if (key != KD_KEY_CUDA && key != KD_KEY_PRIVATEUSE1 && key != KD_KEY_PRIVATEUSE2 &&
      key != KD_KEY_PRIVATEUSE3)
    return kd_set_error(KD_EINVAL,
                        "kd_cpu_fallback('%s'): the call's key %s is not a device backend key "
                        "(expected CUDA or PrivateUse1..3)",
                        op->name, kd_dispatch_key_name(key));
  uint64_t rd = kd__read_enter();
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  kd_status st = info ? check_stack(op, info, stack) : kd__no_op_info(op);
  if (st == KD_OK) {
    resolved r = {NULL, NULL, NULL, key, true, true};
    st = run_enforced_boxed(op, info, &r, call, NULL, NULL, stack);
  }
  kd__read_exit(rd);
  return st;
}
