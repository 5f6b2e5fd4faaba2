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

/* Releases every registration of the library still held, then frees it.
 * NULL is ignored. */
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

/* A kernel for every operator under the library's key (an IMPL library with a
 * runtime key): a boxed function, a fallthrough, or not-supported. A second
 * fallback for one key is KD_EEXIST naming the first. */
KD_API kd_status kd_library_fallback(kd_library *lib, const kd_kernel *kernel,
                                     kd_registration **out);

/* Undoes one registration now. The handle is invalid after. NULL is ignored. */
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
 * `user_data` stays the caller's. KD_EINVAL for a NULL fn or out; KD_ENOMEM. */
KD_API kd_status kd_listener_add(kd_listener_fn fn, void *user_data, kd_listener **out);
KD_API void kd_listener_remove(kd_listener *listener);

/* ---- Introspection ------------------------------------------------------- */

/* Calls fn for every operator that is defined or implemented, in name order.
 * Stops early (returning what fn returned) when fn returns non-zero. */
KD_API int kd_ops_foreach(int (*fn)(kd_op *op, void *user_data), void *user_data);

/* Every registration of the operator, per key, with its debug string; the
 * inactive (overridden) ones are marked. Returns the needed length. */
KD_API size_t kd_op_dump(const kd_op *op, char *buf, size_t cap);

/* The computed table: one line per runtime key that is not missing, with
 * the reason (kernel, composite explicit, composite implicit, catch-all,
 * fallback, fallthrough), then the missing ones. Returns the needed length. */
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
} kd_kernel_info;

/* Calls fn for every kernel registration of the operator, by key, newest
 * first within a key, under the registration lock (fn must not register).
 * Stops early when fn returns non-zero and returns that; else 0. */
KD_API int kd_op_kernels_foreach(const kd_op *op, int (*fn)(const kd_kernel_info *, void *),
                                 void *user_data);

/* Recomputes every operator's table from its registrations and compares with
 * the cached one. KD_EINTERNAL names the first operator and key that differ. */
KD_API kd_status kd_dispatcher_check(void);

/* ---- Static registration ------------------------------------------------- */

/* A library described at compile time: what the KD_LIBRARY macros emit. */
#define KD_LIBRARY_DESC_VERSION 1
typedef struct kd_library_desc {
  uint32_t version; /* KD_LIBRARY_DESC_VERSION */
  kd_library_kind kind;
  const char *ns;
  kd_dispatch_key key;
  void (*body)(kd_library *lib); /* the registrations */
  const char *file;
  int line;
} kd_library_desc;

/* Opens a described library and runs its body once per process; later calls
 * for the same descriptor do nothing. The library stays open for the life of
 * the process. The body's registrations return their statuses as anywhere
 * else; a failure to open the library itself is returned and also reported
 * with kd_warn (a constructor has no caller to tell). */
KD_API kd_status kd_library_open_desc(const kd_library_desc *desc);

/* The macros: a library whose body runs when the program or shared library
 * loads (a constructor), and whose descriptor is a global symbol, so that a
 * program can force the linker to keep it (KD_USE_LIBRARY) when it lives in a
 * static archive, or open it explicitly with kd_library_open_desc.
 *
 *   KD_LIBRARY(myops, m) { kd_library_def(m, "add(Tensor a, Tensor b) -> Tensor", 0, 0, 0); }
 *   KD_LIBRARY_IMPL(myops, CPU, m) { kd_library_impl(m, "add", &kernel, 0); }
 *   KD_LIBRARY_FRAGMENT(myops, extra, m) { ... }   (extra: a unique name)
 *   KD_USE_LIBRARY(kd_library_def_myops);          (in the program)
 *
 * Descriptor symbols: kd_library_def_NS, kd_library_fragment_NS_NAME,
 * kd_library_impl_NS_KEY. Define KD_NO_AUTO_REGISTER to leave out the
 * constructors (then open each descriptor explicitly). */
#if defined(KD_NO_AUTO_REGISTER)
#define KD__AUTO_OPEN(sym)
#else
#define KD__AUTO_OPEN(sym)                                            \
  __attribute__((constructor)) static void sym##_auto_open_(void) { \
    kd_library_open_desc(&sym);                                      \
  }
#endif

#define KD__LIBRARY_BLOCK(sym, kind, ns, key, m)                                     \
  static void sym##_body_(kd_library *m);                                            \
  extern const kd_library_desc sym;                                                  \
  const kd_library_desc sym = {KD_LIBRARY_DESC_VERSION, kind, #ns, key, sym##_body_, \
                               __FILE__, __LINE__};                                  \
  KD__AUTO_OPEN(sym)                                                                 \
  static void sym##_body_(kd_library *m)

#define KD_LIBRARY(ns, m) \
  KD__LIBRARY_BLOCK(kd_library_def_##ns, KD_LIBRARY_DEF, ns, KD_KEY_UNDEFINED, m)
#define KD_LIBRARY_FRAGMENT(ns, name, m)                                             \
  KD__LIBRARY_BLOCK(kd_library_fragment_##ns##_##name, KD_LIBRARY_FRAGMENT, ns,      \
                    KD_KEY_UNDEFINED, m)
#define KD_LIBRARY_IMPL(ns, key, m) \
  KD__LIBRARY_BLOCK(kd_library_impl_##ns##_##key, KD_LIBRARY_IMPL, ns, KD_KEY_##key, m)

/* Kernel keys in one line, PHI's PD_REGISTER_KERNEL in C: registers `fn`
 * (an unboxed kernel with `signature`) for operator `op` of namespace `ns`,
 * dispatch key KEY (CPU, META, PRIVATEUSE1, ...), a layout (KD_ALL_LAYOUT
 * or a kd_layout) and the listed dtypes, when the program loads:
 *
 *   KD_REGISTER_KERNEL(myops, neg, CPU, KD_ALL_LAYOUT, neg_kernel, "(Tensor) -> Tensor",
 *                      KD_INT32, KD_INT64, KD_FLOAT32, KD_FLOAT64)
 *
 * The dtypes become an array initializer (no macro recursion); `fn` reads
 * the key tensor's dtype itself (a type-generic kernel switches on it). The
 * descriptor is kd_library_kernel_NS_OP_KEY (for KD_USE_LIBRARY). */
#define KD_REGISTER_KERNEL(ns, op, key, layout, fn, signature, ...)                               \
  static const kd_dtype kd_library_kernel_##ns##_##op##_##key##_dtypes_[] = {__VA_ARGS__};        \
  KD__LIBRARY_BLOCK(kd_library_kernel_##ns##_##op##_##key, KD_LIBRARY_IMPL, ns, KD_KEY_##key,     \
                    kd_lib_) {                                                                    \
    kd_kernel kd_k_ = kd_kernel_unboxed(fn, signature);                                           \
    kd_library_impl_keyed(                                                                        \
        kd_lib_, #op, layout,                                                                     \
        kd_dtype_set_of(kd_library_kernel_##ns##_##op##_##key##_dtypes_,                          \
                        sizeof kd_library_kernel_##ns##_##op##_##key##_dtypes_ / sizeof(kd_dtype)), \
        &kd_k_, NULL);                                                                            \
  }

#define KD_USE_LIBRARY(sym)                                                \
  extern const kd_library_desc sym;                                        \
  __attribute__((used)) static const kd_library_desc *const sym##_used_ = &sym

KD_EXTERN_C_END

#endif /* KD_LIBRARY_H */
