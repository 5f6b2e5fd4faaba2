/*
 * dispatcher_impl.h: operators, table entries and kernel records, shared by
 * the call path (src/dispatch) and registration (src/registry). Not installed.
 *
 * Readers (calls) take no lock: they load op->info and op->table[key] with
 * acquire loads inside a reclaim read section (reclaim.h). Everything they
 * can reach is immutable once published, except a functor entry's state
 * pointer, which is set once by compare-and-swap. Writers (registration) hold
 * kd__registry_lock, build new objects, publish them with release stores and
 * retire what they replace.
 */
#ifndef KD_DISPATCH_IMPL_H
#define KD_DISPATCH_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/keys_impl.h"
#include "core/tensor_impl.h"
#include "dispatch/reclaim.h"
#include "kd/dispatch.h"
#include "kd/library.h"

#define KD__NUM_KEYS (KD_KEY_INVALID_) /* runtime slots + alias keys, for impl stacks */

/* How an argument moves between a kd_value and a kd_arg (from its type). */
typedef enum kd__arg_kind {
  KD__ARG_TENSOR,
  KD__ARG_OPT_TENSOR,
  KD__ARG_INT,
  KD__ARG_FLOAT,
  KD__ARG_BOOL,
  KD__ARG_SCALAR,
  KD__ARG_OPT_SCALAR,
  KD__ARG_DTYPE,
  KD__ARG_LAYOUT,
  KD__ARG_MEMORY_FORMAT,
  KD__ARG_DEVICE,
  KD__ARG_OPT_INT,
  KD__ARG_OPT_FLOAT,
  KD__ARG_OPT_BOOL,
  KD__ARG_OPT_DTYPE,
  KD__ARG_OPT_LAYOUT,
  KD__ARG_OPT_MEMORY_FORMAT,
  KD__ARG_OPT_DEVICE,
  KD__ARG_INTS,
  KD__ARG_OPT_INTS,
  KD__ARG_FLOATS,
  KD__ARG_OPT_FLOATS,
  KD__ARG_BOOLS,
  KD__ARG_OPT_BOOLS,
  KD__ARG_TENSORS,
  KD__ARG_OPT_TENSORS, /* Tensor?[] */
  KD__ARG_STR,
  KD__ARG_OPT_STR,
  KD__ARG_VALUE, /* any other type, boxed */
} kd__arg_kind;

/* A Tensor or Tensor? argument: one that can carry dispatch keys and
 * argument definitions. */
static inline bool kd__is_tensor_kind(uint8_t kind) {
  return kind == KD__ARG_TENSOR || kind == KD__ARG_OPT_TENSOR;
}

/* What the call path needs from a schema, computed once at def. Immutable. */
typedef struct kd__op_info {
  kd__retire_node retire; /* for kd__retire when it is replaced (made with it) */
  kd_schema *schema; /* owned */
  uint32_t nargs, nrets;
  uint32_t ntensor;          /* arguments that carry dispatch keys */
  int32_t single_tensor;     /* the index when exactly one does and it is a Tensor, else -1 */
  int32_t key_tensor;        /* the first Tensor or Tensor? argument (kernel keys), else -1 */
  bool plain_tensors;        /* every argument that carries keys (if any) is a Tensor or
                              * Tensor?, no list: typed calls OR their keys inline */
  bool simple;               /* <= 8 arguments of kinds Tensor, int, float, bool; <= 4 returns:
                              * boxed calls take the short path */
  bool box_tensors;          /* simple, and every argument (at least one) is a Tensor:
                              * the short path's own loop */
  int32_t box1;              /* one argument, a Tensor, and nrets <= 1: nrets (the boxed
                              * call's one-tensor entries); else -1 */
  uint8_t kinds[64];         /* kd__arg_kind of argument i (nargs <= 64) */
  uint8_t ret_kinds[16];     /* of return i (nrets <= 16) */
  uint8_t tensor_idx[64];    /* indices of the arguments that carry keys */
  kd_value *defaults;        /* nargs values: the decoded default, or None (same block) */
  bool *has_default;         /* nargs flags (same block) */
} kd__op_info;

/* A registered kernel: the kd_kernel copied, plus the parsed signature. */
typedef struct kd__kernel {
  _Atomic int64_t refs;  /* its registration and every table entry using it */
  kd_kernel k;           /* strings and ctor_args point at the copies below */
  const kd_schema *signature; /* the signature parsed (shared, from the cache), or NULL */
  const char *signature_text; /* its text (shared, from the cache) */
  char *debug_text;      /* owned copy of k.debug, or NULL */
  kd_value *ctor_args;
} kd__kernel;

/* Why a slot holds what it holds (kd__compute_slot; the dump words of
 * kd_op_dump_table are PyTorch's, in brackets). */
typedef enum kd__reason {
  KD__REASON_MISSING = 0,
  KD__REASON_KERNEL,                   /* "kernel": registered at the key */
  KD__REASON_DEFAULT_BACKEND,          /* "default backend kernel": CompositeExplicitAutograd
                                        * (NonFunctional) */
  KD__REASON_NESTED,                   /* "nested kernel": CompositeImplicitAutogradNestedTensor */
  KD__REASON_MATH,                     /* "math kernel": CompositeImplicitAutograd */
  KD__REASON_AMBIGUOUS_AUTOGRAD_OTHER, /* "ambiguous autogradother": the static kernel that
                                        * fails (kd__ambiguous_autograd_other) */
  KD__REASON_AUTOGRAD,                 /* "autograd kernel": the Autograd alias */
  KD__REASON_CATCH_ALL,                /* "catch-all" */
  KD__REASON_FALLBACK,                 /* "backend fallback": registered or built in */
} kd__reason;

/* What the dispatcher enforces around one kernel-key kernel for one dtype:
 * the tensor inputs it may have to move or cast, the tensor results it
 * checks (kernel argument definitions, library.h). Immutable. */
typedef struct kd__plan_item {
  uint16_t index;  /* schema argument index (inputs) or return index (outputs) */
  kd_arg_def def;
} kd__plan_item;

typedef struct kd__plan {
  kd_dispatch_key key; /* the slot */
  int layout;          /* the registration's layout (KD_ALL_LAYOUT or a kd_layout) */
  kd_dtype dtype;      /* the cell's dtype */
  uint32_t nin, nout;  /* items[0..nin) inputs, items[nin..nin+nout) outputs */
  kd__plan_item items[];
} kd__plan;

/* One cell of a kernel-key selector: the kernel for one (layout, dtype). */
typedef struct kd__cell {
  kd_unboxed_fn fast;        /* the kernel's unboxed fn when there is nothing to enforce */
  void *data;                /* its closure data */
  const kd__kernel *kernel;  /* NULL: no kernel for this cell */
  const kd__plan *plan;      /* NULL: nothing to enforce */
  bool keyed;                /* from a kernel-key registration (else a plain kernel) */
  int layout;                /* the registration's kernel key (for kd_op_select_kernel) */
  kd_dtype_set dtypes;
} kd__cell;

/* One slot of a dispatch table. Immutable once published, except `state`. */
typedef struct kd__entry {
  /* What a typed call calls, never NULL: `fast` with `data`, or, for every
   * other entry (and every entry while kd__slow), kd__entry_slow with the
   * entry itself as call->data. One indirect call, no tests. */
  kd_unboxed_fn call_fn;
  void *call_data;
  kd_unboxed_fn fast;        /* the kernel's unboxed fn when it can be called as is */
  kd_boxed_fn boxed;         /* the kernel's boxed fn (FUNCTION kernels), or NULL */
  /* What the boxed short path calls: `fast` when the kernel has no boxed fn
   * and calls are not all sent down the slow path (kd__slow), else NULL.
   * One load and test instead of three. */
  kd_unboxed_fn boxed_fast;
  void *data;                /* call->data for FUNCTION kernels */
  const kd__kernel *kernel;  /* NULL when missing */
  kd__reason reason;
  kd_dispatch_key key;       /* the slot */
  _Atomic(void *) state;     /* FUNCTOR: this slot's state, made on first call */
  /* Kernel keys: when the slot's key has kernels registered per (layout,
   * dtype), the kernel for layout l and dtype d is select[l * KD_DTYPE_COUNT
   * + d] (NULL: none), wildcards resolved; owned, one kernel reference per
   * non-NULL cell. NULL for an ordinary slot. */
  kd__cell *select;
  char *select_text;         /* "(CPU, ALL_LAYOUT, [float32, float64]); ...": what is registered */
  int32_t key_arg;           /* kernel keys: the argument that selects (-1: none) */
  const struct kd__op_info *select_info; /* the schema the plans were made for */
  kd__retire_node retire;    /* for kd__retire when it is replaced (made with it) */
  bool shared;               /* one of the built-in fallthrough's entries (registry.c):
                              * shared by every operator, never freed nor retired */
} kd__entry;

#define KD__SELECT_CELLS (KD_LAYOUT_COUNT * KD_DTYPE_COUNT)

typedef struct kd_registration kd_registration;

struct kd_op {
  /* ---- read by calls ---- */
  _Atomic(const kd__entry *) table[KD_NUM_RUNTIME_KEYS];
  _Atomic kd_keyset keep; /* keys whose slot does not fall through: the
                           * complement of the fallthrough set (a call
                           * ands it in; all ones while nothing falls through) */
  _Atomic int32_t fast_arg; /* the schema's only Tensor argument, when it has
                             * exactly one and its info is published; else -1
                             * (written with info) */
  _Atomic int32_t box1;     /* info->box1 while its info is published, else -1
                             * (written with info): which boxed entry a boxed
                             * call takes */
  _Atomic(const kd__op_info *) info; /* NULL while not defined */
  _Atomic uint32_t live;    /* defs + impls held: 0 when the operator has disappeared
                             * (read by lookups without the lock); while 0 the
                             * table is empty and info NULL (kd__op_live_add) */
  /* ---- registry side, under the lock ---- */
  uint32_t nselect;      /* entries in `table` with a kernel-key selector */
  kd_keyset stale;       /* slots left empty by a failed allocation in a release
                          * (kd__tx_degrade): rebuilt by the next change */
  const char *name;      /* "ns::name.overload" or "ns::name" (name_buf) */
  size_t name_len;
  size_t base_len;       /* length of "ns::name" */
  uint64_t hash;
  kd_registration *defs;                 /* definitions (same schema), newest first */
  kd_registration *impls; /* kernels of every key, newest first: the first of a
                           * key is its active one, the others stack below it */
  kd_registration *rejected; /* kernels set aside because their signature or
                              * argument definitions do not match the schema
                              * that came after them (library.c): held (they
                              * count in `live`), listed, never dispatched to */
  /* What the missing-kernel message says about `rejected`, readable in a
   * read section (replaced and retired under the lock); NULL when none. */
  _Atomic(struct kd__rejected_note *) rejected_note;
  char **tags;
  size_t ntags;
  kd_op *next_in_list;   /* all operators ever made */
  char name_buf[];
};

typedef enum kd__reg_kind { KD__REG_DEF, KD__REG_IMPL, KD__REG_FALLBACK } kd__reg_kind;

struct kd_registration {
  kd__reg_kind kind;
  kd_library *lib;
  kd_op *op;            /* DEF, IMPL */
  kd_dispatch_key key;  /* IMPL, FALLBACK */
  kd__kernel *kernel;   /* IMPL, FALLBACK (one reference) */
  bool keyed;           /* IMPL with a kernel key: */
  int layout;           /*   a kd_layout, or KD_ALL_LAYOUT */
  kd_dtype_set dtypes;  /*   the dtypes it serves */
  uint32_t flags;       /*   KD_KERNEL_CUSTOM, KD_KERNEL_OVERRIDE */
  int key_arg;          /*   -1 or the schema argument that selects */
  struct kd__argdef_override *overrides; /* owned; argument definitions changed */
  size_t noverrides;
  bool staged;          /*   a custom kernel not merged yet (in kd__staged, not op->impls) */
  const char *debug;    /* "file.c:12": the kernel's or the library's string */
  char *rejected;       /* IMPL set aside (in op->rejected, or staged and never to be
                         * merged): why, owned; NULL otherwise */
  kd_registration *op_next;   /* in op->defs / op->impls[key] / fallbacks[key] */
  kd_registration *companion; /* released with this one (def_kernel's impl) */
  kd_registration *owner;     /* the registration this one is the companion of */
  kd_registration *lib_next, *lib_prev;
};

struct kd_library {
  kd_library_kind kind;
  char *ns;
  kd_dispatch_key key;
  char *debug;
  kd_registration *regs; /* held registrations */
  /* While kd_library_open_desc runs the body (on its thread): the first
   * registration failure through this library and its message. */
  bool in_body;
  kd_status body_status;
  char body_error[512];
};

/* ---- The registry (src/registry/registry.c) ---- */
extern pthread_mutex_t kd__registry_lock;
/* Fallback registrations per runtime key (stacks, newest first; at most one). */
extern kd_registration *kd__fallbacks[KD_NUM_RUNTIME_KEYS];

/* Finds or creates the operator (under the lock). */
kd_status kd__op_get(const char *qualified, size_t len, kd_op **out);

/* A change of dispatch tables in two steps, so that a registration either
 * happens completely or fails with KD_ENOMEM and changes nothing: prepare
 * (kd__tx_add_*: compute and allocate every new entry, publish nothing;
 * may fail), then commit (publish and retire, cannot fail) or abort (free
 * what was prepared). The registration being made is linked into the
 * operator's lists before it is prepared (the computation reads them) and
 * unlinked again on failure. Under the lock; at most one kd__tx_add_* per
 * operator per transaction, and nothing else may change the operators
 * between prepare and commit. */
typedef struct kd__tx_item {
  kd_op *op;
  kd__entry *entry; /* the slot's new entry (NULL: empty), or unused for KD__TX_KEEP */
  unsigned key;     /* the slot, or KD__TX_KEEP: set op->keep and op->stale */
  kd_keyset keep;
  kd_keyset stale;
} kd__tx_item;
#define KD__TX_KEEP 64u
typedef struct kd__tx {
  kd__tx_item *items; /* inline_items, or a kd__malloc'd array when that is full */
  size_t n, cap;
  bool degrade; /* see kd__tx_degrade */
  kd__tx_item inline_items[KD_NUM_RUNTIME_KEYS + 2];
} kd__tx;
void kd__tx_init(kd__tx *tx);
/* Prepares the slots of `keys` of op (those a registration for a key can
 * change: kd_dispatch_key_expand of it), and any slot left stale by an
 * earlier failure, for the op's schema `info` (the op's published info, or
 * the one a definition is about to publish). For an operator coming alive
 * (its registration linked, op->live still 0) the slots of keys with a
 * fallback too: kd__op_live_add allocates nothing. KD_ENOMEM with a message
 * naming the operator and key; the transaction must then be aborted. */
kd_status kd__tx_add_keys(kd__tx *tx, kd_op *op, kd_keyset keys, const struct kd__op_info *info);
/* The slots a change of the op's schema can change: those with kernel-key
 * selectors (their plans are made for the schema); those of keys with a
 * fallback too for an operator coming alive; and `extra` (the slots of
 * kernels a definition sets aside). */
kd_status kd__tx_add_schema(kd__tx *tx, kd_op *op, const struct kd__op_info *info,
                            kd_keyset extra);

/* What the missing-kernel message says about an operator's set-aside
 * kernels (kd_op.rejected_note; library.c). Immutable once published. */
typedef struct kd__rejected_note {
  kd__retire_node retire; /* for kd__retire when it is replaced */
  kd_keyset keys;         /* runtime keys a set-aside kernel was registered for */
  char text[];            /* their messages, "; " between them */
} kd__rejected_note;
/* The note's text when a set-aside kernel of op was registered for `key`
 * (an alias key counts for the keys it stands for), else NULL. Called in a
 * read section (kd__read_enter); the text is valid until it ends. */
const char *kd__rejected_why(const kd_op *op, kd_dispatch_key key);
/* kd__tx_add_keys for every operator alive (a dead one's table stays empty). */
kd_status kd__tx_add_all(kd__tx *tx, kd_keyset keys);
void kd__tx_commit(kd__tx *tx);
void kd__tx_abort(kd__tx *tx);
/* For changes that cannot fail (releases, switching to the slow path): a
 * transaction that never fails. A slot whose new entry cannot be allocated
 * becomes empty (calls to it fail as a missing kernel: never the released
 * kernel), is marked stale (kd_dispatcher_check reports it) and is rebuilt
 * by the next change of the operator; a warning says so. */
void kd__tx_degrade(kd__tx *tx);
/* Degraded rebuilds, committed at once (under the lock). */
void kd__op_rebuild_keys(kd_op *op, kd_keyset keys);
void kd__op_rebuild_schema(kd_op *op);
void kd__rebuild_all_keys(kd_keyset keys);
/* True when something defines or implements the op. */
bool kd__op_alive(const kd_op *op);
/* Counts a definition or kernel in (+1) or out (-1) of op->live (under the
 * lock); allocates nothing. The operator that comes alive (0 -> 1) must have
 * had its table prepared, fallback slots included, by the registration's
 * transaction (kd__tx_add_keys does it for an operator held with live 0),
 * then committed after this call. The one nothing holds any more loses every
 * table entry (retired, so calls in flight stay safe), keeping only its
 * handle and name. */
void kd__op_live_add(kd_op *op, int delta);
void kd__notify(kd_registry_event_kind kind, kd_op *op, kd_dispatch_key key, const char *debug);
/* Computes the entry a slot should hold: kernel and reason. */
void kd__compute_slot(const kd_op *op, kd_dispatch_key key, const kd__kernel **kernel,
                      kd__reason *reason);

/* ---- Kernel keys (src/registry/kernel_keys.c) ---- */
/* One field of an argument definition changed for one dtype. */
typedef struct kd__argdef_override {
  uint8_t dtype;
  uint8_t output; /* 0: input (schema argument), 1: output (return) */
  uint8_t field;  /* kd_argdef_field */
  uint16_t index;
  int value;
} kd__argdef_override;

/* Staged custom kernels (newest first, linked by op_next), under the lock. */
extern kd_registration *kd__staged;
/* Backends whose CPU fallback is on (kd_backend_set_cpu_fallback): read on
 * the slow path of a call that finds no kernel (call.c, prepare). */
extern _Atomic kd_keyset kd__cpu_fallback_keys;

bool kd__slot_is_keyed(const kd_op *op, kd_dispatch_key key);
/* Runs a spec's args callback per dtype; *items owned by the caller. */
kd_status kd__collect_overrides(const char *name, const kd_keyed_kernel *spec,
                                kd__argdef_override **items, size_t *n, int *key_arg);
/* Links every staged custom kernel (library.c; under the lock). */
kd_status kd__merge_staged_locked(size_t *merged);
/* Builds the selector of a keyed slot and its description; false when out of
 * memory. `info` may be NULL (no plans: the operator is not defined). */
bool kd__select_build(const kd_op *op, kd_dispatch_key key, const struct kd__op_info *info,
                      kd__cell **sel, char **text, int32_t *key_arg);
void kd__select_free(kd__cell *sel);
bool kd__select_same(const kd__cell *a, const kd__cell *b);
/* Checks a registration's argument definitions and key argument against a
 * schema (KD_EINVAL naming the argument). */
kd_status kd__argdefs_check(const char *opname, const kd_schema *schema, const kd_registration *r);
/* The definition of input (output=false) or output `index` for `dtype`. */
kd_arg_def kd__argdef_of(const kd_registration *r, kd_dispatch_key key, kd_dtype dtype,
                         bool output, size_t index);
/* The device type of a backend key (the inverse of kd_backend_key). */
bool kd__device_of_backend(int backend, kd_device_type *out);

/* ---- Enforcement and CPU fallback (src/dispatch/enforce.c) ---- */
/* Brings a typed call's arguments (a copy the caller may change) to what
 * the plan asks for; a moved input lands on `kt`'s device index when it goes
 * to kt's device type. New tensors go to temps (room for nargs), released by
 * the caller after the call; temps[i] of a `Tensor(a!)` argument is recorded
 * in written[] as its argument index (else -1), for kd__enforce_write_back. */
kd_status kd__enforce_inputs(const kd_op *op, const struct kd__op_info *info, const kd__plan *plan,
                             const kd_tensor *kt, kd_arg *args, kd_tensor **temps,
                             int32_t *written, uint32_t *ntemps);
/* After the kernel: every `Tensor(a!)` argument the plan moved or cast is
 * written back into the caller's tensor (cast back, moved back), and a
 * return aliasing it becomes the caller's tensor. Results must be owned. */
kd_status kd__enforce_write_back(const kd_op *op, const struct kd__op_info *info,
                                 const kd__plan *plan, const kd_arg *orig, const kd_arg *local,
                                 kd_tensor *const *temps, const int32_t *written, uint32_t ntemps,
                                 kd_value *rets);
/* Checks the results against the plan's outputs. Results must be owned. */
kd_status kd__enforce_outputs(const kd_op *op, const kd__plan *plan, kd_value *rets,
                              uint32_t nrets);

/* ---- The CPU fallback (src/dispatch/fallback.c) ---- */
/* Runs a typed call of op for backend call->key on the CPU (kd/cpu_fallback.h):
 * `e` and `kt` are the slot's entry (may be NULL) and key tensor, for the
 * KD_ENOKERNEL message when it does not apply (`helper`: called through
 * kd_cpu_fallback, whose message says so instead). rets as a typed kernel's. */
kd_status kd__cpu_fallback(const kd_op *op, const struct kd__op_info *info, const kd_call *call,
                           const struct kd__entry *e, const kd_tensor *kt, bool helper,
                           const kd_arg *args, kd_value *rets);
/* The KD_ENOKERNEL error of a slot with no kernel for the call (call.c): the
 * missing-kernel or kernel-key message, then what became of the CPU fallback:
 * `fallback_why` says why it did not apply, or NULL when it was not tried
 * (for a device backend key the message then says it is off). */
kd_status kd__no_kernel(const kd_op *op, const struct kd__entry *e, kd_dispatch_key key,
                        const kd_tensor *kt, const char *fallback_why);
/* The argument that return j aliases (shares an alias set name with, on
 * the tensor or on a list's elements), or -1. */
int kd__return_alias(const struct kd__op_info *info, uint32_t j);
/* True when the CPU fallback is on for key. */
static inline bool kd__fallback_on(kd_dispatch_key key) {
  return (unsigned)key < 64 &&
         (atomic_load_explicit(&kd__cpu_fallback_keys, memory_order_relaxed) & ((kd_keyset)1 << key));
}

/* ---- Kernel tracing for selective builds (src/registry/trace.c) ---- */
/* True while KD_TRACE_KERNELS names a file: every call takes the slow path
 * and records (operator, key, dtype). */
extern bool kd__record;
void kd__record_call(const kd_op *op, kd_dispatch_key key, int dtype);

/* ---- Schemas and signatures (src/dispatch/op_info.c) ---- */
kd_status kd__op_info_new(kd_schema *schema, kd__op_info **out); /* takes the schema */
void kd__op_info_free(kd__op_info *info);
/* Parses "(T1, T2) -> R" into a schema named "_". */
kd_status kd__signature_parse(const char *sig, kd_schema **out);
/* The same through a cache: parsed once per distinct text, kept for the life
 * of the process (there are few distinct signatures). *text is the cached
 * copy of the text. Thread-safe. */
kd_status kd__signature_get(const char *sig, const kd_schema **out, const char **text);
/* Checks a kernel signature against a schema; KD_ETYPE lists every difference
 * (arguments, counts, returns). `who` names the kernel in the message
 * ("kernel for 'ns::op' (CPU) registered at f.c:3"), or NULL for "kernel for
 * 'ns::op'". */
kd_status kd__signature_check(const char *opname, const kd_schema *schema, const kd_schema *sig,
                              const char *sig_text, const char *who);
/* value -> arg, borrowing from the value (scratch holds converted scalars). */
kd_status kd__value_to_arg(const kd__op_info *info, size_t i, const kd_value *v, kd_arg *a,
                           kd_scalar *scratch);
/* arg -> new owned value. */
kd_status kd__arg_to_value(uint8_t kind, const kd_arg *a, kd_value *v);
/* The key set of a typed call's arguments / of a boxed call's arguments. */
kd_keyset kd__args_keys(const kd__op_info *info, const kd_arg *args);
kd_keyset kd__stack_keys(const kd__op_info *info, const kd_value *args);

/* ---- Calls (src/dispatch/call.c) ---- */
extern bool kd__trace; /* KD_SHOW_DISPATCH_TRACE: print every call */
extern bool kd__slow;  /* tracing or recording: every call takes the slow path */
/* This thread's include/exclude keys as a call uses them: the key set is
 * (keys | include) & keep, keep being the complement of the exclude set (one
 * instruction fewer per call than and-not). Zero-initialised threads would
 * exclude everything, so keep starts as all ones. */
typedef struct kd__tls_mask {
  kd_keyset include;
  kd_keyset keep;
} kd__tls_mask;
extern _Thread_local kd__tls_mask kd__tls_keys __attribute__((tls_model("initial-exec")));
kd_status kd__no_op_info(const kd_op *op);
/* The call_fn of an entry without a plain fast kernel (see kd__entry):
 * call->data is the entry; finishes the typed call the general way. */
kd_status kd__entry_slow(const kd_call *call, const kd_arg *args, kd_value *rets);
/* Sets kd__slow (and kd__trace when `trace`), then points every published
 * entry at kd__entry_slow. For the load-time constructors that read the
 * environment. */
void kd__set_slow(bool trace);

/* ---- Kernels ---- */
kd_status kd__kernel_new(const kd_kernel *k, const char *debug, kd__kernel **out);
void kd__kernel_free(void *kernel); /* retire callback */

#endif /* KD_DISPATCH_IMPL_H */
