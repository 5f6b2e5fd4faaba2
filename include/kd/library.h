/*
 * library.h: registering operators and kernels.
 *
 * A library is a unit of registration, as in PyTorch:
 *   DEF       defines the operators of one namespace (one DEF library per
 *             namespace at a time);
 *   FRAGMENT  adds definitions to a namespace from elsewhere;
 *   IMPL      implements operators of a namespace for one dispatch key (a
 *             runtime key or an alias key), or for every key (CatchAll).
 *
 * Every registration returns a handle owned by its library: releasing the
 * handle undoes exactly that registration, and closing the library releases
 * those still held. A registration that fails changes nothing.
 *
 * Registration is serialized by one lock and may run while other threads
 * call operators: a call sees the table from before or after a registration,
 * never a half-built one or freed memory.
 */
#ifndef KD_LIBRARY_H
#define KD_LIBRARY_H

#include "kd/common.h"
#include "kd/dispatch.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

typedef enum kd_library_kind {
  KD_LIBRARY_DEF = 0,
  KD_LIBRARY_FRAGMENT = 1,
  KD_LIBRARY_IMPL = 2,
} kd_library_kind;

typedef struct kd_library kd_library;
typedef struct kd_registration kd_registration;

/* Opens a library. `ns` is the namespace (an identifier); `key` is the key of
 * an IMPL library (ignored otherwise; KD_KEY_CATCH_ALL for every key). `file`
 * and `line` say where, for dump and error messages (file may be NULL).
 * KD_EEXIST when a DEF library for `ns` is already open (naming where);
 * KD_EINVAL for a bad namespace or key. The caller owns *out: kd_library_close. */
KD_API kd_status kd_library_open(kd_library_kind kind, const char *ns, kd_dispatch_key key,
                                 const char *file, int line, kd_library **out);

/* Releases every registration of the library still held (newest first, as
 * kd_registration_release), then frees it. NULL is ignored. */
KD_API void kd_library_close(kd_library *lib);

/* Defines an operator from a schema ("name.overload(args) -> returns"; a
 * namespace, if written, must be the library's). `tags` (ntags entries,
 * copied) are kept on the operator. Defining the same schema again adds a
 * reference (released separately); a different schema under the same name
 * and overload is KD_EEXIST naming both. KD_ESYNTAX for a bad schema,
 * KD_EINVAL for an illegal name or overload, or a namespace other than the
 * library's; KD_ESTATE for an IMPL library. `out` may be NULL. */
KD_API kd_status kd_library_def(kd_library *lib, const char *schema, const char *const *tags,
                                size_t ntags, kd_registration **out);

/* Defines an operator by name only ("name" or "name.overload"), inferring
 * its schema from the kernel's signature (arguments named _0, _1, ...), and
 * implements it with that kernel for CatchAll (the inferred schema has no
 * alias annotations). KD_EINVAL when the kernel has no signature. */
KD_API kd_status kd_library_def_kernel(kd_library *lib, const char *name, const kd_kernel *kernel,
                                       kd_registration **out);

/* Implements operator `name` ("name" or "name.overload", in the library's
 * namespace) for the library's key. The operator need not be defined yet;
 * when it is (now or later), a kernel whose signature does not match its
 * schema is an error (KD_ETYPE naming the argument). Kernels for one key
 * stack up: the newest is active, releasing it brings the older one back; an
 * override warns, naming both registrations. */
KD_API kd_status kd_library_impl(kd_library *lib, const char *name, const kd_kernel *kernel,
                                 kd_registration **out);

/* As kd_library_impl for one explicit key (runtime or alias) of a FRAGMENT or
 * DEF library, or of an IMPL library whose key is CatchAll. */
KD_API kd_status kd_library_impl_key(kd_library *lib, const char *name, kd_dispatch_key key,
                                     const kd_kernel *kernel, kd_registration **out);

/* Kernel keys (PHI's): a kernel for one backend, one layout (or
 * KD_ALL_LAYOUT) and a set of dtypes. Within the slot of the library's key
 * (a runtime key), a call picks the kernel by the layout and dtype of its
 * key tensor (the first Tensor argument): the kernel registered for that
 * exact (layout, dtype), else for (KD_ALL_LAYOUT, dtype), else for
 * (layout, any dtype) from a plain kd_library_impl; the newest wins among
 * equals. A call whose dtype no kernel serves fails with KD_ENOKERNEL
 * listing what is registered. The kernel must be a FUNCTION (plain, boxed
 * or closure). KD_EINVAL for an alias key, an empty dtype set, a bad layout. */
#define KD_ALL_LAYOUT (-1)
KD_API kd_status kd_library_impl_keyed(kd_library *lib, const char *name, int layout,
                                       kd_dtype_set dtypes, const kd_kernel *kernel,
                                       kd_registration **out);

/* ---- Kernel argument definitions ------------------------------------------
 *
 * A kernel-key kernel (backend B, layout L, dtype D) expects by default every
 * Tensor or Tensor? argument and every Tensor result on B, in L, of dtype D.
 * B is the slot's key for a dense backend key (CPU, CUDA, ...: what kernel
 * keys are for); for another per-backend key the dense key of its column
 * (AutogradCPU, SparseCPU: CPU); for a key of no backend (a mode key,
 * AutogradOther) KD_ALL_BACKEND.
 * A registration may change that, per dtype, field by field: an input on
 * KD_ALL_BACKEND is used wherever it lives (never moved), an input of
 * KD_ALL_DTYPE is never cast, an output may be bool for a comparison, an
 * index input may have to be int64. The dispatcher enforces the definitions
 * on every call of the kernel: a tensor input on another backend is moved
 * (kd_tensor_to_device) and one of another dtype is cast (kd_tensor_to_dtype)
 * before the kernel runs, for the call only (a moved input lands on the key
 * tensor's device index when it goes to the key tensor's device type); a
 * tensor result that breaks its definition makes the call fail with
 * KD_EINTERNAL naming the kernel. A mutated argument (`Tensor(a!)`: out=,
 * in-place) that was moved or cast is never lost: after the kernel, the copy
 * is written back into the caller's tensor (resized, cast back, moved back)
 * and a return aliasing it is the caller's tensor; a write-back that fails
 * fails the call with the copy's status. A layout is checked, never converted
 * (KD_ETYPE). */
#define KD_ALL_BACKEND (-1) /* an argument definition's backend: anywhere */
#define KD_ALL_DTYPE (-1)   /* an argument definition's dtype: any */

typedef enum kd_argdef_field {
  KD_ARGDEF_BACKEND = 0, /* a backend key (KD_KEY_CPU, ...) or KD_ALL_BACKEND */
  KD_ARGDEF_LAYOUT = 1,  /* a kd_layout or KD_ALL_LAYOUT */
  KD_ARGDEF_DTYPE = 2,   /* a kd_dtype or KD_ALL_DTYPE */
} kd_argdef_field;

/* One argument's or result's definition, as listed by kd_op_kernels_foreach. */
typedef struct kd_arg_def {
  int backend; /* a backend key or KD_ALL_BACKEND */
  int layout;  /* a kd_layout or KD_ALL_LAYOUT */
  int dtype;   /* a kd_dtype or KD_ALL_DTYPE */
} kd_arg_def;

/* The argument definitions of one registration for one dtype, handed to the
 * registration's `args` callback (valid only during it). */
typedef struct kd_kernel_args kd_kernel_args;

/* Sets one field of the definition of input `arg` (the schema's argument
 * index; it must be a Tensor or Tensor? argument) or of output `ret` (the
 * schema's return index; a Tensor return). Indices are checked against the
 * schema when the operator is (or becomes) defined: KD_EINVAL then names the
 * argument. A bad field or value is recorded and makes the registration fail
 * with KD_EINVAL. */
KD_API void kd_kernel_args_input(kd_kernel_args *args, size_t arg, kd_argdef_field field, int value);
KD_API void kd_kernel_args_output(kd_kernel_args *args, size_t ret, kd_argdef_field field,
                                  int value);
/* Selects kernels by argument `arg` (a Tensor or Tensor? argument) instead
 * of the first tensor: the same for every dtype of the registration; it
 * replaces the spec's key_arg. */
KD_API void kd_kernel_args_key(kd_kernel_args *args, size_t arg);

/* Flags of a kernel-key registration. */
#define KD_KERNEL_CUSTOM 0x1u   /* a plugin's kernel: staged until kd_custom_kernels_merge */
#define KD_KERNEL_OVERRIDE 0x2u /* a custom kernel that may replace a built-in one */

/* A kernel-key registration in full (kd_library_impl_keyed is the short form).
 * Versioned as kd/version.h says. Version 1: api_version, layout, dtypes,
 * kernel, flags, key_arg, args, user_data. */
#define KD_KEYED_KERNEL_API_VERSION 1
#define KD_KEYED_KERNEL_VERSION KD_KEYED_KERNEL_API_VERSION /* the old name */
typedef struct kd_keyed_kernel {
  uint32_t api_version;   /* KD_KEYED_KERNEL_API_VERSION (1 to it are accepted) */
  int layout;             /* a kd_layout or KD_ALL_LAYOUT */
  kd_dtype_set dtypes;    /* the dtypes served; not empty */
  const kd_kernel *kernel; /* a FUNCTION kernel; copied */
  uint32_t flags;         /* KD_KERNEL_CUSTOM, KD_KERNEL_OVERRIDE */
  /* The argument whose layout and dtype select the kernel: -1 for the first
   * Tensor or Tensor? argument, else a schema argument index. Every
   * kernel-key registration of one (operator, key) must agree. */
  int key_arg;
  /* Adjusts the argument definitions, called once per dtype of `dtypes`
   * during the registration; NULL keeps the defaults. */
  void (*args)(kd_kernel_args *args, kd_dtype dtype, void *user_data);
  void *user_data; /* passed to args */
} kd_keyed_kernel;

/* Registers a kernel-key kernel as kd_library_impl_keyed, with argument
 * definitions, a key argument and flags. A KD_KERNEL_CUSTOM registration is
 * staged: it takes no part in dispatch until kd_custom_kernels_merge.
 * KD_EINVAL for a bad spec (naming the field) or an argument definition
 * that does not fit the schema; KD_EEXIST when the key argument disagrees
 * with an earlier registration for the same key (naming it). */
KD_API kd_status kd_library_impl_keyed_ex(kd_library *lib, const char *name,
                                          const kd_keyed_kernel *spec, kd_registration **out);

/* Merges every staged custom kernel into dispatch, all or nothing: a custom
 * kernel whose (operator, key, layout) and some dtype equal a built-in
 * (non-custom) registration's is refused unless it has KD_KERNEL_OVERRIDE;
 * then nothing is merged and KD_EEXIST names both registrations (and how
 * many other refusals there are). A merged override warns as any override.
 * *merged (may be NULL) gets how many were merged. Thread-safe (under the
 * registration lock, as every registration). */
KD_API kd_status kd_custom_kernels_merge(size_t *merged);

/* The CPU fallback of a backend (kd/cpu_fallback.h says everything it
 * does): when enabled, a call that reaches the backend's slot and finds no
 * kernel there (an empty slot, or a kernel-key slot without a kernel for the
 * key tensor's layout and dtype) runs the operator's CPU kernel, whatever
 * form it has, on CPU copies of the tensor arguments; mutated arguments are
 * written back into the caller's tensors and returned as the schema's
 * aliases, other results moved to the arguments' device and index. It is
 * the slot's last resort: every kernel, composite or kd_library_fallback of
 * the key wins over it. The first fallback of each (operator, backend) warns
 * (kd_warn); kd_op_fallback_count counts them. No dispatch table changes:
 * turning it off restores exactly the earlier behaviour. KD_EINVAL for a key
 * that is not a backend other than CPU. Thread-safe (an atomic bit): a call
 * on another thread meanwhile runs with or without the fallback. */
KD_API kd_status kd_backend_set_cpu_fallback(kd_dispatch_key backend, bool enabled);

/* Which kernel a call of `op` under `key` on a key tensor of (layout,
 * dtype) would run, without running it. */
typedef struct kd_kernel_selection {
  kd_dispatch_key key;  /* the slot whose kernel runs: `key`, or KD_KEY_CPU after a fallback */
  bool fell_back;       /* the backend's CPU fallback chose the kernel */
  bool keyed;           /* a kernel-key kernel (else the slot's plain kernel) */
  int layout;           /* keyed: the registration's layout (KD_ALL_LAYOUT or a kd_layout) */
  kd_dtype_set dtypes;  /* keyed: the registration's dtypes */
} kd_kernel_selection;

/* Fills the caller's *out (zeroed first; untouched on KD_EINVAL); takes
 * nothing. KD_ENOKERNEL as a call would fail (the message lists what is
 * registered); KD_EINVAL for a NULL argument, a bad key, layout or dtype. */
KD_API kd_status kd_op_select_kernel(const kd_op *op, kd_dispatch_key key, kd_layout layout,
                                     kd_dtype dtype, kd_kernel_selection *out);

/* A kernel for every operator under the library's key (an IMPL library with a
 * runtime key): a boxed function, a fallthrough, or not-supported. A second
 * fallback for one key is KD_EEXIST naming the first. */
KD_API kd_status kd_library_fallback(kd_library *lib, const kd_kernel *kernel,
                                     kd_registration **out);

/* Undoes one registration now; the registration handle is invalid after
 * (the kd_op handles stay valid). What it referenced is freed once no call in
 * flight can use it: a kernel's record (its destroy_data called), the table
 * entries and functor states that used it. When it was the last definition
 * or kernel of its operator, the operator keeps only its handle and name
 * (see kd_op_find). NULL is ignored. */
KD_API void kd_registration_release(kd_registration *reg);

/* ---- Listeners ------------------------------------------------------------ */

typedef enum kd_registry_event_kind {
  KD_EVENT_DEF = 0,           /* an operator became defined */
  KD_EVENT_UNDEF = 1,         /* its last definition was released */
  KD_EVENT_IMPL = 2,          /* a kernel was registered for (op, key) */
  KD_EVENT_IMPL_RELEASE = 3,  /* ... and released */
  KD_EVENT_FALLBACK = 4,      /* a fallback was registered for key (op NULL) */
  KD_EVENT_FALLBACK_RELEASE = 5,
} kd_registry_event_kind;

typedef struct kd_registry_event {
  kd_registry_event_kind kind;
  kd_op *op;           /* NULL for fallback events */
  kd_dispatch_key key; /* IMPL and FALLBACK events */
  const char *debug;   /* where the registration was made; may be NULL */
} kd_registry_event;

typedef void (*kd_listener_fn)(const kd_registry_event *event, void *user_data);
typedef struct kd_listener kd_listener;

/* Adds a listener, told of every def/impl/fallback and their release, under
 * the registration lock (it must not register; the event and its strings are
 * valid only during the call). A new listener first hears a DEF, IMPL or
 * FALLBACK event for everything registered now. The caller owns *out and
 * passes it to kd_listener_remove, which frees it (NULL is ignored);
 * `user_data` stays the caller's. KD_EINVAL for a NULL fn or out; KD_ENOMEM.
 * Both are thread-safe (under the registration lock); fn runs on the thread
 * that registers, never two at once. */
KD_API kd_status kd_listener_add(kd_listener_fn fn, void *user_data, kd_listener **out);
KD_API void kd_listener_remove(kd_listener *listener);

/* ---- Introspection ------------------------------------------------------- */

/* Calls fn for every operator that is defined or implemented, in name order.
 * Stops early (returning what fn returned) when fn returns non-zero. Returns
 * -1 without calling fn, with KD_ENOMEM in kd_last_error, when it cannot
 * allocate its list of operators (so that -1 stays unambiguous, fn should
 * not return it). */
KD_API int kd_ops_foreach(int (*fn)(kd_op *op, void *user_data), void *user_data);

/* Every registration of the operator (not the fallbacks, not the built-in
 * autograd fallthrough), under the registration lock: "operator: NAME",
 * "schema: ..." ("(none)"), a "  def registered at WHERE" line per
 * definition, "  tag T" lines, then per key in key order (runtime keys,
 * then alias keys) one line per kernel, newest first:
 *   "  KEY: FORM kernel registered at WHERE"
 * with " [inactive: overridden]" after the first of a key, an alias key
 * written "NAME[alias]" as PyTorch's dumpState does
 * ("  Autograd[alias]: unboxed kernel registered at f.c:12"), kernel-key
 * kernels as "  KEY: FORM kernel for (LAYOUT, [dtypes]) registered at
 * WHERE" and set-aside ones ending " [rejected: WHY]". FORM is "unboxed",
 * "boxed", "unboxed+boxed", "closure", "functor", "fallthrough" or "not
 * supported"; WHERE is the debug string or "?". Writes at most cap bytes,
 * NUL-terminated when cap > 0 (buf may be NULL when cap is 0), and returns
 * the length the whole text needs, as snprintf; the caller owns buf. Cannot
 * fail. */
KD_API size_t kd_op_dump(const kd_op *op, char *buf, size_t cap);

/* The computed dispatch table, under the registration lock: the line
 * "dispatch table of NAME:", then, in ascending key order, one line per
 * runtime key whose slot is not missing:
 *   "  KEY: FORM [REASON] from DEBUG"
 * (no padding; FORM as kd_op_dump's, DEBUG the kernel's debug string or
 * "?"), or for a slot that selects among kernel-key kernels
 *   "  KEY: kernel keys [REASON]: (KEY, LAYOUT, [dtypes]); ..."
 * and last "  missing: [K1, K2, ...]". REASON is PyTorch's word for the
 * rule that filled the slot (docs/ARCHITECTURE.md, "How a slot is
 * filled"): "kernel" (registered at the key), "default backend kernel"
 * (CompositeExplicitAutograd or its NonFunctional variant), "nested kernel"
 * (CompositeImplicitAutogradNestedTensor), "math kernel"
 * (CompositeImplicitAutograd), "ambiguous autogradother" (a built-in kernel
 * that fails, see there), "autograd kernel" (the Autograd alias),
 * "catch-all", "backend fallback" (a registered fallback, or for the
 * autograd keys and ADInplaceOrView the built-in fallthrough, "fallthrough
 * [backend fallback] from kdispatch (built-in autograd fallthrough)").
 * Buffer and return as kd_op_dump. Cannot fail. */
KD_API size_t kd_op_dump_table(const kd_op *op, char *buf, size_t cap);

/* One kernel registration of an operator, for listings. Strings are valid
 * only during the callback. */
typedef struct kd_kernel_info {
  kd_dispatch_key key;  /* runtime or alias key */
  bool keyed;           /* registered with a kernel key (kd_library_impl_keyed) */
  int layout;           /* keyed: a kd_layout or KD_ALL_LAYOUT; else KD_ALL_LAYOUT */
  kd_dtype_set dtypes;  /* keyed: the dtypes served; else KD_ALL_DTYPES */
  const char *form;     /* "unboxed", "boxed", "unboxed+boxed", "closure", "functor", ... */
  const char *signature; /* the kernel's C signature, or NULL */
  const char *debug;    /* where it was registered, or NULL */
  bool active;          /* false when a newer plain kernel for the key overrides it */
  /* Appended (kernel argument definitions): for a keyed registration of a
   * defined operator, argdefs[d * (nargs + nrets) + i] is the definition of
   * argument i (i < nargs) or of result i - nargs for dtype d (d served);
   * arguments and results that are not tensors have every field
   * KD_ARGDEF_NOT_TENSOR. NULL otherwise. */
  const kd_arg_def *argdefs;
  uint32_t nargs, nrets;
  bool custom;          /* registered with KD_KERNEL_CUSTOM */
  bool staged;          /* custom and not merged yet (takes no part in dispatch) */
  int key_arg;          /* keyed: the selecting argument (-1: the first tensor) */
  /* Appended (set-aside kernels): NULL, or why the kernel was set aside. A kernel
   * registered before its operator's definition whose signature or argument
   * definitions do not fit the schema is set aside when the definition
   * comes (the definition succeeds): it takes no part in dispatch, is
   * listed inactive with this message (which names its registration and
   * every difference), and stays so until it is released. */
  const char *rejected;
} kd_kernel_info;
#define KD_ARGDEF_NOT_TENSOR (-2)

/* Calls fn for every kernel registration of the operator, by key, newest
 * first within a key (staged custom kernels, then set-aside kernels last,
 * inactive), under the
 * registration lock (fn must not register). Stops early when fn returns
 * non-zero and returns that; else 0. */
KD_API int kd_op_kernels_foreach(const kd_op *op, int (*fn)(const kd_kernel_info *, void *),
                                 void *user_data);

/* Recomputes every operator's table from its registrations and compares with
 * the cached one. KD_EINTERNAL names the first operator and key that differ. */
KD_API kd_status kd_dispatcher_check(void);

/* ---- Static registration ------------------------------------------------- */

/* A library described at compile time: what the KD_LIBRARY macros emit.
 * Versioned as kd/version.h says:
 *   version 1: api_version, kind, ns, key, body, file, line;
 *   version 2 appends id.
 * kd_library_open_desc accepts versions 1 and 2 and reads only the fields of
 * the descriptor's version (a version-1 descriptor has no id). */
#define KD_LIBRARY_DESC_API_VERSION 2
#define KD_LIBRARY_DESC_VERSION KD_LIBRARY_DESC_API_VERSION /* the old name */
typedef struct kd_library_desc {
  uint32_t api_version; /* KD_LIBRARY_DESC_API_VERSION (1 to it are accepted) */
  kd_library_kind kind;
  const char *ns;
  kd_dispatch_key key;
  void (*body)(kd_library *lib); /* the registrations */
  const char *file;
  int line;
  /* ---- Version 2 ---- */
  /* The unique id of a KD_LIBRARY_IMPL_ID block ("fused"), or NULL: named in
   * messages about the library. */
  const char *id;
} kd_library_desc;

/* Opens a described library and runs its body once; later calls for the
 * same descriptor do nothing until kd_library_close_desc. The descriptor is
 * the caller's and must stay valid (and at the same address) while the
 * library is open. KD_EINVAL for a NULL descriptor or body, or an
 * api_version outside 1..KD_LIBRARY_DESC_API_VERSION (the message names the
 * struct, the version found and the versions accepted). The library stays
 * open until kd_library_close_desc (for the life of the process, for those a
 * constructor opens). The body's registrations return their statuses as
 * anywhere else; a failure to open the library itself is returned and also
 * reported with kd_warn (a constructor has no caller to tell). When a
 * registration of the body fails with KD_ENOMEM the library is all or
 * nothing: everything the body registered is released, the descriptor stays
 * unopened (a later call runs the body again), and KD_ENOMEM is returned and
 * warned with the failed registration's message. */
KD_API kd_status kd_library_open_desc(const kd_library_desc *desc);

/* Closes the library kd_library_open_desc opened for `desc` (kd_library_close:
 * every registration it holds is released, newest first) and forgets that it
 * was opened, so that a later kd_library_open_desc opens it and runs its body
 * again. Does nothing when `desc` is NULL or not open. Thread-safe; the
 * descriptor stays the caller's. For a library that must be unloaded or
 * reopened, such as libkdops' in kd_ops_close, for a runtime that undoes a
 * failed start, and for tests. */
KD_API void kd_library_close_desc(const kd_library_desc *desc);

/* The macros: a library whose body runs when the program or shared library
 * loads (a constructor), and whose descriptor is a global symbol, so that a
 * program can force the linker to keep it (KD_USE_LIBRARY) when it lives in a
 * static archive, or open it explicitly with kd_library_open_desc.
 *
 *   KD_LIBRARY(myops, m) { kd_library_def(m, "add(Tensor a, Tensor b) -> Tensor", 0, 0, 0); }
 *   KD_LIBRARY_IMPL(myops, CPU, m) { kd_library_impl(m, "add", &kernel, 0); }
 *   KD_LIBRARY_IMPL_ID(myops, CPU, fused, m) { ... }  (fused: a unique id)
 *   KD_LIBRARY_FRAGMENT(myops, extra, m) { ... }   (extra: a unique name)
 *   KD_USE_LIBRARY(kd_library_def_myops);          (in the program)
 *
 * Descriptor symbols: kd_library_def_NS, kd_library_fragment_NS_NAME,
 * kd_library_impl_NS_KEY, kd_library_impl_NS_KEY_ID. KD_LIBRARY_IMPL can
 * appear once per (namespace, key) in a program, as its symbol is global;
 * KD_LIBRARY_IMPL_ID, as TORCH_LIBRARY_IMPL does with its hidden unique id,
 * allows any number of blocks for one (namespace, key), each with its own
 * id (an identifier, unique among the blocks of that namespace and key). Every
 * block opens its own IMPL library; they all register. Define
 * KD_NO_AUTO_REGISTER to leave out the constructors (then open each
 * descriptor explicitly). */
#if defined(KD_NO_AUTO_REGISTER)
#define KD__AUTO_OPEN(sym)
#else
#define KD__AUTO_OPEN(sym)                                            \
  __attribute__((constructor)) static void sym##_auto_open_(void) { \
    kd_library_open_desc(&sym);                                      \
  }
#endif

#define KD__LIBRARY_BLOCK_ID(sym, kind, ns, key, id, m)                                  \
  static void sym##_body_(kd_library *m);                                                \
  extern const kd_library_desc sym;                                                      \
  const kd_library_desc sym = {KD_LIBRARY_DESC_API_VERSION, kind, #ns, key, sym##_body_, \
                               __FILE__, __LINE__, id};                                  \
  KD__AUTO_OPEN(sym)                                                                     \
  static void sym##_body_(kd_library *m)
#define KD__LIBRARY_BLOCK(sym, kind, ns, key, m) KD__LIBRARY_BLOCK_ID(sym, kind, ns, key, NULL, m)

#define KD_LIBRARY(ns, m) \
  KD__LIBRARY_BLOCK(kd_library_def_##ns, KD_LIBRARY_DEF, ns, KD_KEY_UNDEFINED, m)
#define KD_LIBRARY_FRAGMENT(ns, name, m)                                             \
  KD__LIBRARY_BLOCK(kd_library_fragment_##ns##_##name, KD_LIBRARY_FRAGMENT, ns,      \
                    KD_KEY_UNDEFINED, m)
#define KD_LIBRARY_IMPL(ns, key, m) \
  KD__LIBRARY_BLOCK(kd_library_impl_##ns##_##key, KD_LIBRARY_IMPL, ns, KD_KEY_##key, m)
#define KD_LIBRARY_IMPL_ID(ns, key, id, m)                                                  \
  KD__LIBRARY_BLOCK_ID(kd_library_impl_##ns##_##key##_##id, KD_LIBRARY_IMPL, ns, KD_KEY_##key, \
                       #id, m)

/* Kernel keys in one line, PHI's PD_REGISTER_KERNEL in C: registers `fn`
 * (an unboxed kernel with `signature`) for operator `op` of namespace `ns`,
 * dispatch key KEY (CPU, META, PRIVATEUSE1, ...), a layout (KD_ALL_LAYOUT
 * or a kd_layout) and the listed dtypes, when the program loads. A body
 * follows, run once per dtype with `kernel` (kd_kernel_args *) and `dtype`,
 * to change argument definitions; it may be empty:
 *
 *   KD_REGISTER_KERNEL(myops, neg, CPU, KD_ALL_LAYOUT, neg_kernel, "(Tensor) -> Tensor",
 *                      KD_INT32, KD_INT64, KD_FLOAT32, KD_FLOAT64) {}
 *   KD_REGISTER_KERNEL(myops, eq, CPU, KD_ALL_LAYOUT, eq_kernel, "(Tensor, Tensor) -> Tensor",
 *                      KD_INT64, KD_FLOAT32) {
 *     kd_kernel_args_output(kernel, 0, KD_ARGDEF_DTYPE, KD_BOOL);
 *   }
 *
 * KD_REGISTER_KERNEL_OVERLOAD(ns, op, overload, KEY, layout, fn, signature,
 * dtypes...) is the same for the overload "op.overload" (`overload` an
 * identifier, as in the schema):
 *
 *   KD_REGISTER_KERNEL_OVERLOAD(myops, add, Tensor, CPU, KD_ALL_LAYOUT, add_kernel,
 *                               "(Tensor, Tensor) -> Tensor", KD_INT64, KD_FLOAT32) {}
 *
 * The dtypes become an array initializer (no macro recursion; a macro that
 * expands to a comma-separated list works too); `fn` reads the key tensor's
 * dtype itself (a type-generic kernel switches on it). The descriptor is
 * kd_library_kernel_NS_OP_KEY, or kd_library_kernel_NS_OP_OVERLOAD_KEY for
 * an overload (for KD_USE_LIBRARY and kd_library_open_desc; op `add_Tensor`
 * without overload would name the same symbol, so do not mix the two forms
 * for one operator). A failed registration is reported with kd_warn naming
 * the macro, operator and key (a constructor has no caller).
 *
 * In a selective build (kd/selective.h: an allow-list header defines
 * KD_SELECTIVE_BUILD) only the listed dtypes that the allow-list allows for
 * (ns::op, KEY) are registered, where an overload is named by the token
 * `kd trace` writes for "ns::op.overload" (KD_ALLOW_ns__op_overload__KEY);
 * when none is, nothing is, and `fn` is only referenced in code the compiler
 * removes. The descriptor is always there.
 *
 * Both macros expand to KD__REGISTER_KERNEL(sym, macro, ns, name, token, KEY,
 * layout, fn, signature, dtypes...): `sym` the descriptor, `macro` the
 * macro's name for messages, `name` the operator's name as a string, `token`
 * its allow-list token. */
#include "kd/selective.h"
#define KD__UNUSED_PARAM __attribute__((unused))
#define KD__REGISTER_KERNEL(sym, macro, ns, name, token, key, layout, fn, signature, ...)         \
  static const kd_dtype sym##_dtypes_[] = {__VA_ARGS__};                                          \
  static void sym##_args_(kd_kernel_args * kernel, kd_dtype dtype);                               \
  static void sym##_thunk_(kd_kernel_args * a, kd_dtype d, void *u) {                             \
    (void)u;                                                                                      \
    sym##_args_(a, d);                                                                            \
  }                                                                                               \
  KD__LIBRARY_BLOCK(sym, KD_LIBRARY_IMPL, ns, KD_KEY_##key, kd_lib_) {                            \
    if (KD__SEL_REGISTERS(ns, token, key, __VA_ARGS__)) { /* a constant: 1 unless selective */  \
      kd_kernel kd_k_ = kd_kernel_unboxed(fn, signature);                                         \
      kd_keyed_kernel kd_s_ = {                                                                   \
          KD_KEYED_KERNEL_API_VERSION, layout,                                                    \
          kd_dtype_set_of(sym##_dtypes_, sizeof sym##_dtypes_ / sizeof(kd_dtype)) &               \
              KD__SEL_DTYPES(ns, token, key),                                                     \
          &kd_k_, 0, -1, sym##_thunk_, NULL};                                                     \
      if (kd_library_impl_keyed_ex(kd_lib_, name, &kd_s_, NULL))                                  \
        kd_warn("%s(%s::%s, %s) at %s:%d: %s", macro, #ns, name, #key, __FILE__, __LINE__,        \
                kd_last_error());                                                                 \
    }                                                                                             \
  }                                                                                               \
  static void sym##_args_(kd_kernel_args * kernel KD__UNUSED_PARAM, kd_dtype dtype KD__UNUSED_PARAM)

#define KD_REGISTER_KERNEL(ns, op, key, layout, fn, signature, ...)                          \
  KD__REGISTER_KERNEL(kd_library_kernel_##ns##_##op##_##key, "KD_REGISTER_KERNEL", ns, #op, op, \
                      key, layout, fn, signature, __VA_ARGS__)
#define KD_REGISTER_KERNEL_OVERLOAD(ns, op, overload, key, layout, fn, signature, ...)          \
  KD__REGISTER_KERNEL(kd_library_kernel_##ns##_##op##_##overload##_##key,                      \
                      "KD_REGISTER_KERNEL_OVERLOAD", ns, #op "." #overload, op##_##overload, key, \
                      layout, fn, signature, __VA_ARGS__)

#define KD_USE_LIBRARY(sym)                                                \
  extern const kd_library_desc sym;                                        \
  __attribute__((used)) static const kd_library_desc *const sym##_used_ = &sym

KD_EXTERN_C_END

#endif /* KD_LIBRARY_H */
