/*
 * registry.c: the operator table (lookup by name without a lock), dispatch
 * table computation, listeners and introspection. Registration itself is in
 * library.c; both run under kd__registry_lock.
 */
#define _DEFAULT_SOURCE /* MADV_POPULATE_WRITE */

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dispatch/dispatcher_impl.h"

/* The versions of kd_kernel (core/internal.h). */
static const size_t kernel_ends[] = {KD__ABI_END(kd_kernel, debug)};
KD__ABI_TABLE(kd__abi_kernel, kd_kernel, KD_KERNEL_API_VERSION, kernel_ends);

pthread_mutex_t kd__registry_lock = PTHREAD_MUTEX_INITIALIZER;
kd_registration *kd__fallbacks[KD_NUM_RUNTIME_KEYS];

/* ---- Operator lookup ---------------------------------------------------------- */

/* Open addressing, linear probing, at most half full. Readers load the
 * current array and probe it; a resize publishes a new array and retires
 * the old one. Operators are never removed (a handle stays valid). */
typedef struct op_table {
  kd__retire_node retire; /* for kd__retire when it is replaced (made with it) */
  size_t mask;
  _Atomic(kd_op *) slots[]; /* written once each (release), read with acquire */
} op_table;

static _Atomic(op_table *) ops_by_name;
static size_t op_count;
static kd_op *all_ops; /* every operator ever made, newest first */

static uint64_t hash_name(const char *base, size_t base_len, const char *overload, size_t ov_len) {
  return kd__hash_mix(
      kd__hash_bytes(overload, ov_len, kd__hash_bytes(base, base_len, 0x243f6a8885a308d3ull)));
}

static bool name_equal(const kd_op *op, const char *base, size_t base_len, const char *ov,
                       size_t ov_len) {
  if (op->base_len != base_len || memcmp(op->name, base, base_len) != 0) return false;
  if (ov_len == 0) return op->name_len == base_len;
  return op->name_len == base_len + 1 + ov_len && op->name[base_len] == '.' &&
         memcmp(op->name + base_len + 1, ov, ov_len) == 0;
}

/* Probes the current table for a name of hash h; call inside a read section
 * or under the lock. */
static kd_op *lookup_hashed(uint64_t h, const char *base, size_t base_len, const char *ov,
                            size_t ov_len) {
  op_table *t = atomic_load_explicit(&ops_by_name, memory_order_acquire);
  if (!t) return NULL;
  for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
    kd_op *op = atomic_load_explicit(&t->slots[i], memory_order_acquire);
    if (!op) return NULL;
    if (op->hash == h && name_equal(op, base, base_len, ov, ov_len)) return op;
  }
}

static kd_op *lookup(const char *base, size_t base_len, const char *ov, size_t ov_len) {
  return lookup_hashed(hash_name(base, base_len, ov, ov_len), base, base_len, ov, ov_len);
}

/* Splits "ns::name.overload" into base and overload. */
static void split_qualified(const char *q, size_t len, size_t *base_len) {
  const char *colons = NULL; /* after the last "::" */
  for (const char *c = q; len > 1 && (c = memchr(c, ':', len - 1 - (size_t)(c - q))); c++)
    if (c[1] == ':') colons = c + 2;
  const char *start = colons ? colons : q;
  const char *dot = memchr(start, '.', len - (size_t)(start - q));
  *base_len = dot ? (size_t)(dot - q) : len;
}

/* Into a table no reader sees yet (or under the lock, for the current one:
 * the release store publishes the operator's fields with it). */
static void table_insert(op_table *t, kd_op *op) {
  for (size_t i = op->hash & t->mask;; i = (i + 1) & t->mask) {
    if (!atomic_load_explicit(&t->slots[i], memory_order_relaxed)) {
      atomic_store_explicit(&t->slots[i], op, memory_order_release);
      return;
    }
  }
}

static void free_table(void *p) { kd__free(p); }

/* Operators are never freed, so they are carved from large zeroed blocks,
 * newest first in a list that keeps them reachable: one allocation per few
 * hundred operators rather than one each. Under the lock. */
#define KD__OP_BLOCK_SIZE ((size_t)256 * 1024)
#define KD__OP_ALIGN ((size_t)16)

typedef struct op_block {
  struct op_block *next;
} op_block;

static op_block *op_blocks;
static size_t op_block_used; /* bytes of the newest block in use */

static kd_op *op_alloc(size_t size) {
  size_t hdr = (sizeof(op_block) + KD__OP_ALIGN - 1) & ~(KD__OP_ALIGN - 1);
  size = (size + KD__OP_ALIGN - 1) & ~(KD__OP_ALIGN - 1);
  if (size > KD__OP_BLOCK_SIZE - hdr) return kd__calloc(1, size);
  if (!op_blocks || size > KD__OP_BLOCK_SIZE - op_block_used) {
    op_block *b = kd__calloc(1, KD__OP_BLOCK_SIZE);
    if (!b) return NULL;
#if defined(MADV_POPULATE_WRITE)
    /* The block will be filled: fault its pages in at once rather than one
     * by one (a hint; older kernels refuse it and nothing changes). */
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) {
      uintptr_t lo = ((uintptr_t)b + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
      uintptr_t hi = ((uintptr_t)b + KD__OP_BLOCK_SIZE) & ~((uintptr_t)page - 1);
      if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
    }
#endif
    b->next = op_blocks;
    op_blocks = b;
    op_block_used = hdr;
  }
  kd_op *op = (kd_op *)(void *)((char *)op_blocks + op_block_used);
  op_block_used += size;
  return op;
}

kd_status kd__op_get(const char *qualified, size_t len, kd_op **out) {
  size_t base_len;
  split_qualified(qualified, len, &base_len);
  const char *ov = base_len < len ? qualified + base_len + 1 : "";
  size_t ov_len = base_len < len ? len - base_len - 1 : 0;
  uint64_t hash = hash_name(qualified, base_len, ov, ov_len);
  kd_op *op = lookup_hashed(hash, qualified, base_len, ov, ov_len);
  if (op) {
    *out = op;
    return KD_OK;
  }
  op_table *t = atomic_load_explicit(&ops_by_name, memory_order_relaxed);
  size_t cap = t ? t->mask + 1 : 0;
  op_table *grown = NULL;
  if ((op_count + 1) * 2 > cap) {
    size_t ncap = cap ? cap * 2 : 256;
    grown = kd__calloc(1, sizeof *grown + ncap * sizeof(kd_op *));
    if (!grown) return kd__oom("operator table");
    grown->mask = ncap - 1;
  }
  op = op_alloc(sizeof *op + len + 1);
  if (!op) {
    kd__free(grown);
    return kd__oom("operator");
  }
  memcpy(op->name_buf, qualified, len);
  op->name_buf[len] = '\0';
  op->name = op->name_buf;
  op->name_len = len;
  op->base_len = base_len;
  op->hash = hash;
  atomic_init(&op->keep, ~(kd_keyset)0);
  atomic_init(&op->fast_arg, -1);
  atomic_init(&op->box1, -1);
  if (grown) {
    for (size_t i = 0; t && i < cap; i++) {
      kd_op *old = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
      if (old) table_insert(grown, old);
    }
    table_insert(grown, op);
    atomic_store_explicit(&ops_by_name, grown, memory_order_release);
    if (t) kd__retire(&t->retire, free_table, t);
  } else {
    table_insert(t, op);
  }
  op->next_in_list = all_ops;
  all_ops = op;
  op_count++;
  /* Nothing defines or implements it yet: its table stays empty, even in
   * the slots of keys with a fallback, until a registration's transaction
   * fills them (kd__tx_add_keys). */
  *out = op;
  return KD_OK;
}

bool kd__op_alive(const kd_op *op) {
  return atomic_load_explicit(&((kd_op *)op)->live, memory_order_acquire) != 0;
}

/* The keys with a fallback: the slots an operator coming alive gets. */
static kd_keyset fallback_keys(void) {
  kd_keyset keys = 0;
  unsigned key;
  KD__FOR_EACH_KEY(key, KD__RUNTIME_KEYS)
    if (kd__fallbacks[key]) keys |= (kd_keyset)1 << key;
  return keys | KD__AUTOGRAD_KEYS | kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW); /* built-in */
}

/* Something defines or implements the operator (under the lock): the
 * registry-side truth, ahead of op->live while a registration is prepared. */
static bool op_held(const kd_op *op) { return op->defs || op->impls || op->rejected; }

void kd__op_live_add(kd_op *op, int delta) {
  uint32_t before = atomic_fetch_add_explicit(&op->live, (uint32_t)delta, memory_order_release);
  uint32_t after = before + (uint32_t)delta;
  /* Coming alive (0 -> 1) allocates nothing here: the registration's
   * transaction prepared the fallback slots (kd__tx_add_keys), so that a
   * failure changes nothing. */
  if (before != 0 && after == 0) {
    /* Gone: every entry is retired (with the kernel references and functor
     * state it holds); only the handle and its name stay. Emptying slots
     * allocates nothing (the transaction's items are inline). */
    kd_keyset held = 0;
    unsigned key;
    KD__FOR_EACH_KEY(key, KD__RUNTIME_KEYS)
      if (atomic_load_explicit(&op->table[key], memory_order_relaxed)) held |= (kd_keyset)1 << key;
    if (held || op->stale) kd__op_rebuild_keys(op, held);
  }
}

kd_status kd_op_find(const char *name, const char *overload, kd_op **out) {
  if (!name || !out) return kd_set_error(KD_EINVAL, "kd_op_find: NULL argument");
  *out = NULL;
  size_t base_len = strlen(name), ov_len;
  const char *ov = overload;
  if (!ov) {
    size_t len = base_len;
    split_qualified(name, len, &base_len);
    ov = base_len < len ? name + base_len + 1 : "";
    ov_len = base_len < len ? len - base_len - 1 : 0;
  } else {
    ov_len = strlen(ov);
  }
  uint64_t rd = kd__read_enter();
  kd_op *op = lookup(name, base_len, ov, ov_len);
  kd__read_exit(rd);
  if (!op || !kd__op_alive(op))
    return kd_set_error(KD_ENOTFOUND, "operator '%.*s%s%.*s' not found", (int)base_len, name,
                        ov_len ? "." : "", (int)ov_len, ov);
  *out = op;
  return KD_OK;
}

kd_status kd_op_find_typed(const char *name, const char *overload, const char *signature,
                           kd_op **out) {
  kd_op *op;
  kd_status st = kd_op_find(name, overload, &op);
  if (st) {
    if (out) *out = NULL;
    return st;
  }
  *out = NULL;
  if (!signature) return kd_set_error(KD_EINVAL, "kd_op_find_typed(%s): NULL signature", op->name);
  kd_schema *sig;
  if ((st = kd__signature_parse(signature, &sig))) return st;
  pthread_mutex_lock(&kd__registry_lock);
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_relaxed);
  if (!info)
    st = kd__no_op_info(op);
  else
    st = kd__signature_check(op->name, info->schema, sig, signature, NULL);
  pthread_mutex_unlock(&kd__registry_lock);
  kd_schema_free(sig);
  if (st == KD_OK) *out = op;
  return st;
}

const kd_schema *kd_op_schema(const kd_op *op) {
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_acquire);
  return info ? info->schema : NULL;
}

const char *kd_op_name(const kd_op *op) { return op->name; }

/* ---- Dispatch tables -------------------------------------------------------------- */

/* The active kernel of a key: the newest registration for it. */
static const kd__kernel *top(const kd_op *op, kd_dispatch_key key) {
  for (const kd_registration *r = op->impls; r; r = r->op_next)
    if (r->key == key) return r->kernel;
  return NULL;
}

/* True when the operator has a kernel registered at any runtime key of
 * `keys` (PyTorch's hasKernelForAnyDispatchKey). */
static bool has_kernel_in(const kd_op *op, kd_keyset keys) {
  for (const kd_registration *r = op->impls; r; r = r->op_next)
    if (kd_keyset_of(r->key) & keys) return true;
  return false;
}

/* The fallback of the autograd keys and ADInplaceOrView when none is
 * registered: a fallthrough, as PyTorch registers for them
 * (VariableFallbackKernel.cpp). Built in, it costs no registration; a
 * fallback registered for one of those keys replaces it while it lasts.
 * Static: its count never reaches 0. */
static kd__kernel builtin_fallthrough = {
    .refs = INT64_MAX / 2,
    .k = {.api_version = KD_KERNEL_API_VERSION,
          .kind = KD_KERNEL_FALLTHROUGH,
          .debug = "kdispatch (built-in autograd fallthrough)"},
};

/* The keys whose kernels AutogradOther stands for: every backend's
 * Quantized, Sparse and SparseCsr keys. PyTorch 1.13's autogradother_backends
 * also holds FPGA, ORT, Vulkan, Metal, MkldnnCPU and CustomRNGKeyId, which
 * kdispatch does not have, and its SparseCsr has CPU and CUDA keys only;
 * here SparseCsr is per backend like Sparse and Quantized (as PyTorch 2.x). */
/* Keys that fall back as a backend does: the catch-all kernel implements
 * the operator there, ahead of the key's fallback. */
#define KD__BACKEND_LIKE_KEYS                                                   \
  ((kd_keyset)1 | KD__BACKEND_KEYS | KD__AUTOGRAD_OTHER_BACKENDS | KD__NESTED_KEYS)

/* The backend keys an autograd key stands for (PyTorch's
 * getBackendKeySetFromAutograd): Autograd<B> the dense key of B,
 * AutogradOther the keys above, AutogradNestedTensor the NestedTensor keys;
 * none for any other key. */
static kd_keyset backend_keys_of_autograd(kd_dispatch_key key) {
  if (key >= KD_KEY_AUTOGRAD_CPU && key <= KD_KEY_AUTOGRAD_PRIVATEUSE3)
    return kd_keyset_of((kd_dispatch_key)(KD_KEY_CPU + (key - KD_KEY_AUTOGRAD_CPU)));
  if (key == KD_KEY_AUTOGRAD_OTHER) return KD__AUTOGRAD_OTHER_BACKENDS;
  if (key == KD_KEY_AUTOGRAD_NESTED_TENSOR) return KD__NESTED_KEYS;
  return 0;
}

/* `keys` and the slots whose computation reads the registrations at them:
 * what a registration change at keys must recompute besides keys. */
static kd_keyset slot_dependents(kd_keyset keys) {
  kd_keyset more = 0;
  /* A kernel at dense B decides whether AutogradB takes the math kernel. */
  more |= ((keys & KD__BACKEND_KEYS) >> KD_KEY_CPU) << KD_KEY_AUTOGRAD_CPU;
  if (keys & KD__AUTOGRAD_OTHER_BACKENDS) more |= kd_keyset_of(KD_KEY_AUTOGRAD_OTHER);
  if (keys & KD__NESTED_KEYS) more |= kd_keyset_of(KD_KEY_AUTOGRAD_NESTED_TENSOR);
  /* A CompositeExplicitAutograd kernel (it and the other composite keys
   * fill Undefined, and only they do) counts as a backend kernel wherever
   * CompositeImplicitAutograd looks for one: the autograd keys and the
   * NestedTensor keys, which CompositeExplicitAutograd does not fill. */
  if (keys & 1) more |= KD__AUTOGRAD_KEYS | KD__NESTED_KEYS;
  return keys | more;
}

/* Calling an operator at AutogradOther when it has a
 * CompositeImplicitAutograd kernel and a kernel for a backend mapped to
 * AutogradOther: which of the two is its autograd is ambiguous (PyTorch's
 * ambiguous_autogradother_kernel). */
static kd_status ambiguous_autograd_other_error(const kd_call *call) {
  return kd_set_error(
      KD_EUNSUPPORTED,
      "'%s' has kernels for both CompositeImplicitAutograd and a backend mapped to AutogradOther "
      "(Quantized, Sparse or SparseCsr), so its AutogradOther kernel is ambiguous: register a "
      "dedicated Autograd<backend> kernel (or a kernel at AutogradOther) for it, or call it in "
      "inference mode (kd_inference_mode_enter)",
      call && call->op ? kd_op_name(call->op) : "?");
}

static kd_status ambiguous_unboxed(const kd_call *call, const kd_arg *args, kd_value *rets) {
  (void)args;
  (void)rets;
  return ambiguous_autograd_other_error(call);
}

static kd_status ambiguous_boxed(const kd_call *call, kd_stack *stack) {
  (void)stack;
  return ambiguous_autograd_other_error(call);
}

/* Static, as the built-in fallthrough; boxed and unboxed, so both call
 * paths reach the message (it fits any signature: it reads no argument). */
static kd__kernel ambiguous_autograd_other = {
    .refs = INT64_MAX / 2,
    .k = {.api_version = KD_KERNEL_API_VERSION,
          .kind = KD_KERNEL_FUNCTION,
          .unboxed = ambiguous_unboxed,
          .boxed = ambiguous_boxed,
          .debug = "kdispatch (ambiguous autogradother)"},
};

/* PyTorch 1.13's OperatorEntry::computeDispatchTableEntryWithDebug, for
 * kdispatch's key space (docs/ARCHITECTURE.md, "How a slot is filled"). The
 * differences: CompositeImplicitAutogradNestedTensor (a 2.x alias) comes
 * before CompositeImplicitAutograd; the CatchAll alias (a project extension,
 * PyTorch removed its catch-all) comes with the fallbacks; the autograd keys
 * and ADInplaceOrView fall through by a built-in kernel instead of a
 * registered fallback. */
void kd__compute_slot(const kd_op *op, kd_dispatch_key key, const kd__kernel **kernel,
                      kd__reason *reason) {
  kd_keyset bit = kd_keyset_of(key);
  const kd__kernel *k;
  *kernel = NULL;
  *reason = KD__REASON_MISSING;
  /* An operator nothing defines or implements has no entries, not even the
   * fallbacks': what stays of it must not grow with the fallbacks. (The
   * registration lists, not op->live: a transaction that brings the
   * operator to life is prepared with its registration linked and live
   * still 0.) */
  if (!op_held(op)) return;
  /* 1. A kernel at the key itself. */
  if ((k = top(op, key))) {
    *kernel = k;
    *reason = KD__REASON_KERNEL;
    return;
  }
  /* 2., 3. CompositeExplicitAutogradNonFunctional, then
   * CompositeExplicitAutograd; their sets hold Undefined (a call whose
   * tensors carry no keys, such as stack([])), as PyTorch fills its
   * Undefined entry from them. */
  if ((kd_dispatch_key_expand(KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL) & bit) &&
      (k = top(op, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL))) {
    *kernel = k;
    *reason = KD__REASON_DEFAULT_BACKEND;
    return;
  }
  const kd__kernel *explicit_k = top(op, KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD);
  if ((kd_dispatch_key_expand(KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD) & bit) && explicit_k) {
    *kernel = explicit_k;
    *reason = KD__REASON_DEFAULT_BACKEND;
    return;
  }
  /* 4. CompositeImplicitAutogradNestedTensor (not Undefined). */
  if ((kd_dispatch_key_expand(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR) & bit) &&
      (k = top(op, KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR))) {
    *kernel = k;
    *reason = KD__REASON_NESTED;
    return;
  }
  /* 5. CompositeImplicitAutograd: an autograd key takes it only when its
   * backends have no kernel and there is no CompositeExplicitAutograd
   * kernel (a NonFunctional one does not count, as in PyTorch); AutogradOther
   * with a kernel at any of its backends gets the ambiguous kernel. */
  if ((kd_dispatch_key_expand(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD) & bit) &&
      (k = top(op, KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD))) {
    if (key == KD_KEY_AUTOGRAD_OTHER && has_kernel_in(op, KD__AUTOGRAD_OTHER_BACKENDS)) {
      *kernel = &ambiguous_autograd_other;
      *reason = KD__REASON_AMBIGUOUS_AUTOGRAD_OTHER;
      return;
    }
    if (!explicit_k && !has_kernel_in(op, backend_keys_of_autograd(key))) {
      *kernel = k;
      *reason = KD__REASON_MATH;
      return;
    }
  }
  /* 6. The Autograd alias. */
  if ((KD__AUTOGRAD_KEYS & bit) && (k = top(op, KD_KEY_AUTOGRAD))) {
    *kernel = k;
    *reason = KD__REASON_AUTOGRAD;
    return;
  }
  /* 7. A catch-all kernel implements the operator: it beats a backend's
   * fallback, but a functionality key's fallback (a mode) wraps it, and
   * the autograd keys and ADInplaceOrView fall through (built in) before
   * it. */
  const kd__kernel *catch_all = top(op, KD_KEY_CATCH_ALL);
  const kd__kernel *fallback = kd__fallbacks[key] ? kd__fallbacks[key]->kernel : NULL;
  if (KD__BACKEND_LIKE_KEYS & bit) {
    if (catch_all) {
      *kernel = catch_all;
      *reason = KD__REASON_CATCH_ALL;
    } else if (fallback) {
      *kernel = fallback;
      *reason = KD__REASON_FALLBACK;
    }
    return;
  }
  if (fallback) {
    *kernel = fallback;
    *reason = KD__REASON_FALLBACK;
  } else if ((KD__AUTOGRAD_KEYS | kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW)) & bit) {
    *kernel = &builtin_fallthrough;
    *reason = KD__REASON_FALLBACK;
  } else if (catch_all) {
    *kernel = catch_all;
    *reason = KD__REASON_CATCH_ALL;
  }
}

static void kernel_unref(const kd__kernel *k);

/* The entries of the built-in fallthrough, one per key it serves, shared by
 * every operator's table: a slot that only falls through is never called
 * (the operator's keep mask skips it), so its entry is the same for all
 * operators, and an operator costs no allocation for its nine autograd and
 * ADInplaceOrView slots. Made under the registry lock on first use;
 * immutable after; never freed nor retired. */
static kd__entry builtin_entries[KD_NUM_RUNTIME_KEYS];

static kd__entry *builtin_entry(unsigned key) {
  kd__entry *e = &builtin_entries[key];
  if (!e->kernel) {
    e->call_fn = kd__entry_slow;
    e->call_data = e;
    e->kernel = &builtin_fallthrough;
    e->reason = KD__REASON_FALLBACK;
    e->key = (kd_dispatch_key)key;
    e->key_arg = -1;
    e->shared = true;
  }
  return e;
}

static void free_entry_now(kd__entry *e) {
  if (e->shared) return;
  void *state = atomic_load_explicit(&e->state, memory_order_acquire);
  /* The functor that made the state: the slot's kernel, or in a kernel-key
   * slot the plain functor kernel of the cells no keyed kernel serves. */
  const kd__kernel *maker = e->kernel;
  for (int i = 0; state && e->select && maker->k.kind != KD_KERNEL_FUNCTOR && i < KD__SELECT_CELLS; i++)
    if (e->select[i].kernel && e->select[i].kernel->k.kind == KD_KERNEL_FUNCTOR)
      maker = e->select[i].kernel;
  if (state && maker->k.destroy) maker->k.destroy(state);
  kd__select_free(e->select);
  kd__free(e->select_text);
  kernel_unref(e->kernel);
  kd__free(e);
}

static void free_entry(void *p) { free_entry_now(p); }

void kd__tx_init(kd__tx *tx) {
  tx->items = tx->inline_items;
  tx->n = 0;
  tx->cap = KD__ARRAY_SIZE(tx->inline_items);
  tx->degrade = false;
}

void kd__tx_degrade(kd__tx *tx) { tx->degrade = true; }

static kd__tx_item *tx_push(kd__tx *tx) {
  if (tx->n == tx->cap) {
    size_t ncap = tx->cap * 2;
    kd__tx_item *grown = tx->items == tx->inline_items ? kd__malloc(ncap * sizeof *grown)
                                                       : kd__realloc(tx->items, ncap * sizeof *grown);
    if (!grown) return NULL;
    if (tx->items == tx->inline_items) memcpy(grown, tx->items, tx->n * sizeof *grown);
    tx->items = grown;
    tx->cap = ncap;
  }
  return &tx->items[tx->n++];
}

static kd_status tx_oom(const kd_op *op, unsigned key) {
  return kd_set_error(KD_ENOMEM,
                      "out of memory building the dispatch table of '%s' for key %s; nothing "
                      "was changed",
                      op->name, kd_dispatch_key_name((kd_dispatch_key)key));
}

/* The new entry of one slot; *entry NULL for an empty slot. False when out
 * of memory (nothing allocated then). */
static bool make_entry(kd_op *op, unsigned key, const kd__kernel *kernel, kd__reason reason,
                       const kd__op_info *info, bool keyed, kd__entry **entry, bool *unchanged) {
  const kd__entry *old = atomic_load_explicit(&op->table[key], memory_order_relaxed);
  kd__cell *sel = NULL;
  char *sel_text = NULL;
  int32_t key_arg = -1;
  *entry = NULL;
  *unchanged = false;
  if (keyed && !kd__select_build(op, (kd_dispatch_key)key, info, &sel, &sel_text, &key_arg))
    return false;
  bool same = old ? (old->kernel == kernel && old->reason == reason &&
                     (old->call_fn == kd__entry_slow) == (kd__slow || !old->fast) &&
                     (old->select ? sel && old->select_info == info && old->key_arg == key_arg &&
                                        kd__select_same(old->select, sel)
                                  : !sel))
                  : !kernel;
  if (same || !kernel) {
    kd__select_free(sel);
    kd__free(sel_text);
    *unchanged = same;
    return true;
  }
  if (kernel == &builtin_fallthrough && !sel) {
    kd__free(sel_text);
    *entry = builtin_entry(key);
    return true;
  }
  kd__entry *e = kd__calloc(1, sizeof *e);
  if (!e) {
    kd__select_free(sel);
    kd__free(sel_text);
    return false;
  }
  e->select = sel;
  e->select_text = sel_text;
  e->key_arg = key_arg;
  e->select_info = info;
  e->kernel = kernel;
  e->reason = reason;
  e->key = (kd_dispatch_key)key;
  e->data = kernel->k.data;
  e->fast = kernel->k.kind == KD_KERNEL_FUNCTION && !sel ? kernel->k.unboxed : NULL;
  e->boxed = kernel->k.kind == KD_KERNEL_FUNCTION && !sel ? kernel->k.boxed : NULL;
  e->call_fn = e->fast && !kd__slow ? e->fast : kd__entry_slow;
  e->boxed_fast = e->fast && !e->boxed && !kd__slow ? e->fast : NULL;
  e->call_data = e->call_fn == kd__entry_slow ? (void *)e : e->data;
  atomic_fetch_add_explicit(&((kd__kernel *)kernel)->refs, 1, memory_order_relaxed);
  *entry = e;
  return true;
}

kd_status kd__tx_add_keys(kd__tx *tx, kd_op *op, kd_keyset keys, const kd__op_info *info) {
  /* An operator coming alive (held, live still 0: its table is empty) gets
   * the slots of keys with a fallback as well. */
  if (!kd__op_alive(op) && op_held(op)) keys |= fallback_keys();
  /* A registration at a key changes the slots that look at it too: the
   * Autograd key of its backend, AutogradOther, ... */
  keys = slot_dependents(keys) | op->stale;
  kd_keyset fallthrough = ~atomic_load_explicit(&op->keep, memory_order_relaxed) & ~keys;
  kd_keyset stale = op->stale & ~keys;
  unsigned key;
  KD__FOR_EACH_KEY(key, keys & KD__RUNTIME_KEYS) {
    const kd__kernel *kernel;
    kd__reason reason;
    kd__compute_slot(op, (kd_dispatch_key)key, &kernel, &reason);
    if (kernel && kernel->k.kind == KD_KERNEL_FALLTHROUGH) fallthrough |= (kd_keyset)1 << key;
    bool keyed = reason == KD__REASON_KERNEL && kd__slot_is_keyed(op, (kd_dispatch_key)key);
    kd__entry *e;
    bool unchanged;
    if (!make_entry(op, key, kernel, reason, info, keyed, &e, &unchanged)) {
      if (!tx->degrade) return tx_oom(op, key);
      kd_warn("out of memory rebuilding the dispatch table of '%s' at key %s: the slot stays "
              "empty until the next change of the operator",
              op->name, kd_dispatch_key_name((kd_dispatch_key)key));
      stale |= (kd_keyset)1 << key;
      e = NULL;
      unchanged = atomic_load_explicit(&op->table[key], memory_order_relaxed) == NULL;
    }
    if (unchanged) continue;
    kd__tx_item *it = tx_push(tx);
    if (!it) {
      if (e) free_entry_now(e);
      /* A degraded transaction reserves its items up front (kd__rebuild_all_keys),
       * and one operator's fit in the inline items. */
      KD__ASSERT(!tx->degrade);
      return tx_oom(op, key);
    }
    *it = (kd__tx_item){op, e, key, 0, 0};
  }
  kd__tx_item *it = tx_push(tx);
  if (!it) {
    KD__ASSERT(!tx->degrade);
    return tx_oom(op, 0);
  }
  *it = (kd__tx_item){op, NULL, KD__TX_KEEP, ~fallthrough, stale};
  return KD_OK;
}

/* The slots with selectors now, and those that will have one (a keyed
 * registration for the key): only a selector depends on the schema, so the
 * other slots would be found unchanged. */
static kd_keyset schema_keys(const kd_op *op) {
  kd_keyset keys = 0;
  for (const kd_registration *r = op->impls; r; r = r->op_next)
    if (r->keyed) keys |= kd_dispatch_key_expand(r->key);
  unsigned key;
  if (op->nselect) {
    KD__FOR_EACH_KEY(key, KD__RUNTIME_KEYS & ~keys) {
      const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_relaxed);
      if (e && e->select) keys |= (kd_keyset)1 << key;
    }
  }
  return keys;
}

kd_status kd__tx_add_schema(kd__tx *tx, kd_op *op, const kd__op_info *info, kd_keyset extra) {
  kd_keyset keys = schema_keys(op) | extra;
  bool reviving = !kd__op_alive(op) && op_held(op);
  return keys || op->stale || reviving ? kd__tx_add_keys(tx, op, keys, info) : KD_OK;
}

kd_status kd__tx_add_all(kd__tx *tx, kd_keyset keys) {
  for (kd_op *op = all_ops; op; op = op->next_in_list) {
    if (!kd__op_alive(op)) continue; /* an empty table, kept empty */
    kd_status st =
        kd__tx_add_keys(tx, op, keys, atomic_load_explicit(&op->info, memory_order_relaxed));
    if (st) return st;
  }
  return KD_OK;
}

void kd__tx_commit(kd__tx *tx) {
  for (size_t i = 0; i < tx->n; i++) {
    kd__tx_item *it = &tx->items[i];
    kd_op *op = it->op;
    if (it->key == KD__TX_KEEP) {
      atomic_store_explicit(&op->keep, it->keep, memory_order_release);
      op->stale = it->stale;
      continue;
    }
    kd__entry *old = (kd__entry *)atomic_load_explicit(&op->table[it->key], memory_order_relaxed);
    atomic_store_explicit(&op->table[it->key], it->entry, memory_order_release);
    op->nselect += (uint32_t)(it->entry && it->entry->select) - (uint32_t)(old && old->select);
    if (old && !old->shared) kd__retire(&old->retire, free_entry, old);
  }
  if (tx->items != tx->inline_items) kd__free(tx->items);
  kd__tx_init(tx);
}

void kd__tx_abort(kd__tx *tx) {
  for (size_t i = 0; i < tx->n; i++)
    if (tx->items[i].key != KD__TX_KEEP && tx->items[i].entry) free_entry_now(tx->items[i].entry);
  if (tx->items != tx->inline_items) kd__free(tx->items);
  kd__tx_init(tx);
}

void kd__op_rebuild_keys(kd_op *op, kd_keyset keys) {
  kd__tx tx;
  kd__tx_init(&tx);
  kd__tx_degrade(&tx);
  (void)kd__tx_add_keys(&tx, op, keys, atomic_load_explicit(&op->info, memory_order_relaxed));
  kd__tx_commit(&tx);
}

void kd__op_rebuild_schema(kd_op *op) {
  kd_keyset keys = schema_keys(op);
  if (keys || op->stale) kd__op_rebuild_keys(op, keys);
}

void kd__rebuild_all_keys(kd_keyset keys) {
  /* Operator by operator: each fits in the inline items, so nothing but
   * the entries themselves is allocated. An operator that is not alive has
   * an empty table and keeps it empty. */
  for (kd_op *op = all_ops; op; op = op->next_in_list)
    if (kd__op_alive(op)) kd__op_rebuild_keys(op, keys);
}

void kd__set_slow(bool trace) {
  pthread_mutex_lock(&kd__registry_lock);
  if (trace) kd__trace = true;
  kd__slow = true;
  kd__rebuild_all_keys(KD__RUNTIME_KEYS); /* entries made before: kd__entry_slow */
  pthread_mutex_unlock(&kd__registry_lock);
}

/* ---- Kernel records ------------------------------------------------------------------- */

static void kernel_free_now(kd__kernel *k) {
  if (k->k.destroy_data) k->k.destroy_data(k->k.data);
  for (size_t i = 0; i < k->k.nctor_args; i++) kd_value_destroy(&k->ctor_args[i]);
  kd__free(k->ctor_args);
  kd__free(k->debug_text);
  kd__free(k);
}

static void kernel_unref(const kd__kernel *k) {
  kd__kernel *m = (kd__kernel *)k;
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) kernel_free_now(m);
}

void kd__kernel_free(void *kernel) { kernel_unref(kernel); }

kd_status kd__kernel_new(const kd_kernel *kernel, const char *debug, kd__kernel **out) {
  *out = NULL;
  /* Any accepted version, read into this version's layout. */
  kd_kernel copy;
  char where[300];
  snprintf(where, sizeof where, "kernel registered at %s", debug ? debug : "?");
  kd_status vst = kd__abi_copy(&kd__abi_kernel, kernel, &copy, where, NULL);
  if (vst) return vst;
  const kd_kernel *k = &copy;
  switch (k->kind) {
    case KD_KERNEL_FUNCTION:
    case KD_KERNEL_FUNCTOR:
      if (!k->unboxed && !k->boxed)
        return kd_set_error(KD_EINVAL, "kernel registered at %s: neither an unboxed nor a boxed function",
                            debug ? debug : "?");
      if (k->unboxed && !k->signature)
        return kd_set_error(KD_EINVAL,
                            "kernel registered at %s: an unboxed function needs its signature",
                            debug ? debug : "?");
      if (k->kind == KD_KERNEL_FUNCTOR && !k->create)
        return kd_set_error(KD_EINVAL, "functor kernel registered at %s: no create function",
                            debug ? debug : "?");
      break;
    case KD_KERNEL_FALLTHROUGH:
    case KD_KERNEL_NOT_SUPPORTED:
      break;
    default:
      return kd_set_error(KD_EINVAL, "kernel: invalid kind %d", (int)k->kind);
  }
  kd__kernel *r = kd__calloc(1, sizeof *r);
  if (!r) return kd__oom("kernel");
  r->k = *k;
  atomic_init(&r->refs, 1);
  kd_status st = KD_OK;
  if (k->signature) st = kd__signature_get(k->signature, &r->signature, &r->signature_text);
  if (st == KD_OK && k->debug && !(r->debug_text = kd__strdup(k->debug))) st = kd__oom("kernel");
  if (st == KD_OK && k->nctor_args) {
    r->ctor_args = kd__calloc(k->nctor_args, sizeof *r->ctor_args);
    if (!r->ctor_args) st = kd__oom("kernel");
    for (size_t i = 0; st == KD_OK && i < k->nctor_args; i++)
      kd_value_copy(&r->ctor_args[i], &k->ctor_args[i]);
  }
  if (st) {
    r->k.destroy_data = NULL; /* the caller keeps its data on failure */
    r->k.nctor_args = r->ctor_args ? k->nctor_args : 0;
    kernel_free_now(r);
    return st;
  }
  r->k.signature = r->signature_text;
  r->k.debug = r->debug_text ? r->debug_text : debug; /* the library outlives the kernel's use */
  r->k.ctor_args = r->ctor_args;
  *out = r;
  return KD_OK;
}

/* ---- Listeners ------------------------------------------------------------------------- */

struct kd_listener {
  kd_listener_fn fn;
  void *user_data;
  kd_listener *next;
};
static kd_listener *listeners;

void kd__notify(kd_registry_event_kind kind, kd_op *op, kd_dispatch_key key, const char *debug) {
  kd_registry_event ev = {kind, op, key, debug};
  for (kd_listener *l = listeners; l; l = l->next) l->fn(&ev, l->user_data);
}

kd_status kd_listener_add(kd_listener_fn fn, void *user_data, kd_listener **out) {
  if (!fn || !out) return kd_set_error(KD_EINVAL, "kd_listener_add: NULL argument");
  kd_listener *l = kd__calloc(1, sizeof *l);
  if (!l) return kd__oom("listener");
  l->fn = fn;
  l->user_data = user_data;
  pthread_mutex_lock(&kd__registry_lock);
  /* Replay what exists, oldest registration first within each list. */
  for (kd_op *op = all_ops; op; op = op->next_in_list) {
    if (op->defs) {
      kd_registry_event ev = {KD_EVENT_DEF, op, KD_KEY_UNDEFINED, op->defs->debug};
      fn(&ev, user_data);
    }
    for (int k = 0; k < KD__NUM_KEYS; k++)
      for (kd_registration *r = op->impls; r; r = r->op_next) {
        if (r->key != (kd_dispatch_key)k) continue;
        kd_registry_event ev = {KD_EVENT_IMPL, op, (kd_dispatch_key)k, r->debug};
        fn(&ev, user_data);
      }
  }
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++)
    if (kd__fallbacks[k]) {
      kd_registry_event ev = {KD_EVENT_FALLBACK, NULL, (kd_dispatch_key)k, kd__fallbacks[k]->debug};
      fn(&ev, user_data);
    }
  l->next = listeners;
  listeners = l;
  pthread_mutex_unlock(&kd__registry_lock);
  *out = l;
  return KD_OK;
}

void kd_listener_remove(kd_listener *listener) {
  if (!listener) return;
  pthread_mutex_lock(&kd__registry_lock);
  for (kd_listener **p = &listeners; *p; p = &(*p)->next)
    if (*p == listener) {
      *p = listener->next;
      break;
    }
  pthread_mutex_unlock(&kd__registry_lock);
  kd__free(listener);
}

/* ---- Introspection ---------------------------------------------------------------------- */

static int compare_ops(const void *a, const void *b) {
  return strcmp((*(kd_op *const *)a)->name, (*(kd_op *const *)b)->name);
}

int kd_ops_foreach(int (*fn)(kd_op *op, void *user_data), void *user_data) {
  pthread_mutex_lock(&kd__registry_lock);
  size_t n = 0;
  for (kd_op *op = all_ops; op; op = op->next_in_list) n += kd__op_alive(op);
  kd_op **list = kd__malloc((n ? n : 1) * sizeof *list);
  if (!list) {
    pthread_mutex_unlock(&kd__registry_lock);
    kd__oom("operator list");
    return -1;
  }
  n = 0;
  for (kd_op *op = all_ops; op; op = op->next_in_list)
    if (kd__op_alive(op)) list[n++] = op;
  pthread_mutex_unlock(&kd__registry_lock);
  qsort(list, n, sizeof *list, compare_ops);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) rc = fn(list[i], user_data);
  kd__free(list);
  return rc;
}

static const char *kernel_form(const kd__kernel *k) {
  switch (k->k.kind) {
    case KD_KERNEL_FALLTHROUGH:
      return "fallthrough";
    case KD_KERNEL_NOT_SUPPORTED:
      return "not supported";
    case KD_KERNEL_FUNCTOR:
      return "functor";
    default:
      if (k->k.unboxed && k->k.boxed) return "unboxed+boxed";
      if (k->k.unboxed) return k->k.data ? "closure" : "unboxed";
      return "boxed";
  }
}

size_t kd_op_dump(const kd_op *op, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  pthread_mutex_lock(&kd__registry_lock);
  kd__fmt_printf(&f, "operator: %s\n", op->name);
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_relaxed);
  if (info) {
    char schema[1024];
    kd_schema_format(info->schema, schema, sizeof schema);
    kd__fmt_printf(&f, "schema: %s\n", schema);
  } else {
    kd__fmt_puts(&f, "schema: (none)\n");
  }
  for (const kd_registration *r = op->defs; r; r = r->op_next)
    kd__fmt_printf(&f, "  def registered at %s\n", r->debug ? r->debug : "?");
  for (size_t i = 0; i < op->ntags; i++) kd__fmt_printf(&f, "  tag %s\n", op->tags[i]);
  for (int k = 0; k < KD__NUM_KEYS; k++) {
    bool first = true;
    /* PyTorch's dumpState wording: "CompositeImplicitAutograd[alias]: ..." */
    const char *alias = kd_dispatch_key_is_alias((kd_dispatch_key)k) ? "[alias]" : "";
    for (const kd_registration *r = op->impls; r; r = r->op_next) {
      if (r->key != (kd_dispatch_key)k) continue;
      if (r->keyed) {
        kd__fmt_printf(&f, "  %s%s: %s kernel for (%s, ", kd_dispatch_key_name((kd_dispatch_key)k),
                       alias, kernel_form(r->kernel),
                       r->layout == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)r->layout));
        kd__fmt_dtype_set(&f, r->dtypes);
        kd__fmt_printf(&f, ") registered at %s\n", r->debug ? r->debug : "?");
        continue; /* keyed kernels are selected, not stacked */
      }
      kd__fmt_printf(&f, "  %s%s: %s kernel registered at %s%s\n",
                     kd_dispatch_key_name((kd_dispatch_key)k), alias, kernel_form(r->kernel),
                     r->debug ? r->debug : "?", first ? "" : " [inactive: overridden]");
      first = false;
    }
    for (const kd_registration *r = op->rejected; r; r = r->op_next)
      if (r->key == (kd_dispatch_key)k)
        kd__fmt_printf(&f, "  %s%s: %s kernel registered at %s [rejected: %s]\n",
                       kd_dispatch_key_name((kd_dispatch_key)k), alias, kernel_form(r->kernel),
                       r->debug ? r->debug : "?", r->rejected);
  }
  pthread_mutex_unlock(&kd__registry_lock);
  return f.len;
}

/* PyTorch's words for why a slot holds its kernel (dumpComputedTable). */
static const char *reason_name(kd__reason r) {
  switch (r) {
    case KD__REASON_KERNEL:
      return "kernel";
    case KD__REASON_DEFAULT_BACKEND:
      return "default backend kernel";
    case KD__REASON_NESTED:
      return "nested kernel";
    case KD__REASON_MATH:
      return "math kernel";
    case KD__REASON_AMBIGUOUS_AUTOGRAD_OTHER:
      return "ambiguous autogradother";
    case KD__REASON_AUTOGRAD:
      return "autograd kernel";
    case KD__REASON_CATCH_ALL:
      return "catch-all";
    case KD__REASON_FALLBACK:
      return "backend fallback";
    default:
      return "missing";
  }
}

size_t kd_op_dump_table(const kd_op *op, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  pthread_mutex_lock(&kd__registry_lock);
  kd__fmt_printf(&f, "dispatch table of %s:\n", op->name);
  kd_keyset missing_keys = 0;
  for (unsigned k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    if (!kd_dispatch_key_is_runtime((kd_dispatch_key)k)) continue;
    const kd__entry *e = atomic_load_explicit(&op->table[k], memory_order_relaxed);
    if (!e) {
      missing_keys |= (kd_keyset)1 << k;
      continue;
    }
    if (e->select) {
      kd__fmt_printf(&f, "  %s: kernel keys [%s]: %s\n", kd_dispatch_key_name((kd_dispatch_key)k),
                     reason_name(e->reason), e->select_text);
      continue;
    }
    const char *what = e->kernel->k.kind == KD_KERNEL_FALLTHROUGH ? "fallthrough"
                                                                   : kernel_form(e->kernel);
    kd__fmt_printf(&f, "  %s: %s [%s] from %s\n", kd_dispatch_key_name((kd_dispatch_key)k),
                   what, reason_name(e->reason), e->kernel->k.debug ? e->kernel->k.debug : "?");
  }
  char keys[2048]; /* every runtime key by name: ~1300 bytes */
  kd_keyset_format(missing_keys, keys, sizeof keys);
  kd__fmt_printf(&f, "  missing: %s\n", keys);
  pthread_mutex_unlock(&kd__registry_lock);
  return f.len;
}

kd_status kd_dispatcher_check(void) {
  kd_status st = KD_OK;
  pthread_mutex_lock(&kd__registry_lock);
  for (kd_op *op = all_ops; op && st == KD_OK; op = op->next_in_list) {
    kd_keyset ft = 0;
    uint32_t nselect = 0;
    for (unsigned k = 0; k < KD_NUM_RUNTIME_KEYS && st == KD_OK; k++) {
      if (!kd_dispatch_key_is_runtime((kd_dispatch_key)k)) continue;
      const kd__kernel *kernel;
      kd__reason reason;
      kd__compute_slot(op, (kd_dispatch_key)k, &kernel, &reason);
      if (kernel && kernel->k.kind == KD_KERNEL_FALLTHROUGH) ft |= (kd_keyset)1 << k;
      const kd__entry *e = atomic_load_explicit(&op->table[k], memory_order_relaxed);
      nselect += e && e->select;
      bool same = e ? (e->kernel == kernel && e->reason == reason) : !kernel;
      bool keyed = reason == KD__REASON_KERNEL && kd__slot_is_keyed(op, (kd_dispatch_key)k);
      if (same && (keyed || (e && e->select))) {
        kd__cell *sel = NULL;
        char *text = NULL;
        int32_t key_arg = -1;
        const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_relaxed);
        if (keyed && !kd__select_build(op, (kd_dispatch_key)k, info, &sel, &text, &key_arg)) {
          st = kd_set_error(KD_ENOMEM, "kd_dispatcher_check: out of memory checking '%s' at key %s",
                            op->name, kd_dispatch_key_name((kd_dispatch_key)k));
          break;
        }
        same = e->select && sel && kd__select_same(e->select, sel) && e->key_arg == key_arg &&
               e->select_info == info;
        kd__select_free(sel);
        kd__free(text);
      }
      if (!same)
        st = kd_set_error(KD_EINTERNAL,
                          "dispatch table of '%s' is stale at key %s: cached %s, computed %s",
                          op->name, kd_dispatch_key_name((kd_dispatch_key)k),
                          e ? reason_name(e->reason) : "missing", reason_name(reason));
    }
    if (st == KD_OK && ft != ~atomic_load_explicit(&op->keep, memory_order_relaxed))
      st = kd_set_error(KD_EINTERNAL, "fallthrough mask of '%s' is stale", op->name);
    if (st == KD_OK && nselect != op->nselect)
      st = kd_set_error(KD_EINTERNAL, "selector count of '%s' is stale: %u, counted %u", op->name,
                        (unsigned)op->nselect, (unsigned)nselect);
  }
  pthread_mutex_unlock(&kd__registry_lock);
  return st;
}

/* The argument definitions of keyed registration r for every dtype it
 * serves (see kd_kernel_info); NULL when not keyed, not defined, or out of
 * memory. Caller frees. */
static kd_arg_def *argdefs_of(const kd_registration *r, const kd__op_info *info) {
  if (!r->keyed || !info) return NULL;
  size_t n = info->nargs + info->nrets;
  kd_arg_def *defs = kd__calloc(KD_DTYPE_COUNT * (n ? n : 1), sizeof *defs);
  if (!defs) return NULL;
  const kd_arg_def none = {KD_ARGDEF_NOT_TENSOR, KD_ARGDEF_NOT_TENSOR, KD_ARGDEF_NOT_TENSOR};
  for (int d = 0; d < KD_DTYPE_COUNT; d++) {
    if (!(r->dtypes & KD_DTYPE_BIT(d))) continue;
    for (size_t i = 0; i < n; i++) {
      bool out = i >= info->nargs;
      size_t idx = out ? i - info->nargs : i;
      uint8_t kind = out ? info->ret_kinds[idx] : info->kinds[idx];
      bool tensor = out ? kind == KD__ARG_TENSOR : kd__is_tensor_kind(kind);
      defs[d * n + i] = tensor ? kd__argdef_of(r, r->key, (kd_dtype)d, out, idx) : none;
    }
  }
  return defs;
}

static int report_kernel(const kd_registration *r, bool active, const kd__op_info *info,
                         int (*fn)(const kd_kernel_info *, void *), void *user_data) {
  /* (a set-aside kernel's definitions do not fit the schema) */
  kd_arg_def *defs = r->rejected ? NULL : argdefs_of(r, info);
  kd_kernel_info ki = {r->key,
                       r->keyed,
                       r->keyed ? r->layout : KD_ALL_LAYOUT,
                       r->keyed ? r->dtypes : KD_ALL_DTYPES,
                       kernel_form(r->kernel),
                       r->kernel->k.signature,
                       r->debug,
                       active,
                       defs,
                       defs ? info->nargs : 0,
                       defs ? info->nrets : 0,
                       (r->flags & KD_KERNEL_CUSTOM) != 0,
                       r->staged,
                       r->keyed ? r->key_arg : -1,
                       r->rejected};
  int rc = fn(&ki, user_data);
  kd__free(defs);
  return rc;
}

int kd_op_kernels_foreach(const kd_op *op, int (*fn)(const kd_kernel_info *, void *),
                          void *user_data) {
  if (!op || !fn) return 0;
  int rc = 0;
  pthread_mutex_lock(&kd__registry_lock);
  const kd__op_info *info = atomic_load_explicit(&op->info, memory_order_relaxed);
  for (int k = 0; k < KD__NUM_KEYS && rc == 0; k++) {
    bool plain_seen = false;
    for (const kd_registration *r = op->impls; r && rc == 0; r = r->op_next) {
      if (r->key != (kd_dispatch_key)k) continue;
      rc = report_kernel(r, r->keyed || !plain_seen, info, fn, user_data);
      if (!r->keyed) plain_seen = true;
    }
    for (const kd_registration *r = kd__staged; r && rc == 0; r = r->op_next)
      if (r->op == op && r->key == (kd_dispatch_key)k) rc = report_kernel(r, false, info, fn, user_data);
    for (const kd_registration *r = op->rejected; r && rc == 0; r = r->op_next)
      if (r->key == (kd_dispatch_key)k) rc = report_kernel(r, false, info, fn, user_data);
  }
  pthread_mutex_unlock(&kd__registry_lock);
  return rc;
}
