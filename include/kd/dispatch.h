/*
 * dispatch.h: dispatch keys, key sets, thread-local key state, kernels, calls.
 *
 * An operator call picks a kernel in two steps. Its key set is the OR of the
 * key sets of every tensor argument, plus the thread's include set, minus the
 * thread's exclude set and the keys the operator falls through. The highest
 * key of that set indexes the operator's dispatch table, whose slot holds the
 * kernel. Registration (kd/library.h) fills the tables.
 */
#ifndef KD_DISPATCH_H
#define KD_DISPATCH_H

#include "kd/common.h"
#include "kd/keys.h"
#include "kd/schema.h"
#include "kd/status.h"
#include "kd/tensor.h"
#include "kd/value.h"

KD_EXTERN_C_BEGIN

/* Dispatch keys and key sets are in kd/keys.h; a tensor's key set is
 * kd_tensor_key_set (kd/tensor.h). */

/* ---- Thread-local keys ---------------------------------------------------- */

/* Keys added to (include) and removed from (exclude) every call's key set on
 * this thread. Exclusion wins. */
typedef struct kd_tls_keys {
  kd_keyset include;
  kd_keyset exclude;
} kd_tls_keys;

KD_API kd_tls_keys kd_tls_keys_get(void);
/* Scoped guards, nestable: each returns the previous state, which the caller
 * hands back to kd_tls_restore at the end of its scope. */
KD_API kd_tls_keys kd_tls_include(kd_keyset keys);
KD_API kd_tls_keys kd_tls_exclude(kd_keyset keys);
KD_API void kd_tls_restore(kd_tls_keys previous);

/* Inference mode (PyTorch's InferenceMode), per thread and nestable. While
 * enabled, tensors made on this thread carry no ADInplaceOrView or Autograd
 * key, and those keys are excluded from every call's key set. Returns the
 * previous state, which the caller hands back to kd_inference_mode_exit at
 * the end of its scope (restoring the mode and the thread-local key sets as
 * they were). Tensors keep the keys they were made with. */
typedef struct kd_inference_mode_guard {
  bool previous;         /* the mode before */
  kd_tls_keys tls;       /* the thread-local key sets before */
} kd_inference_mode_guard;

KD_API kd_inference_mode_guard kd_inference_mode_enter(bool enabled);
KD_API void kd_inference_mode_exit(kd_inference_mode_guard previous);
/* True while inference mode is enabled on this thread. */
KD_API bool kd_inference_mode_is_enabled(void);

/* ---- Unboxed arguments ---------------------------------------------------- */

/* One argument of a typed (unboxed) call: untagged, borrowed (no reference is
 * taken), in the member its schema type selects:
 *
 *   Tensor, Tensor?                t   (NULL for None)
 *   int, SymInt                    i
 *   float                          f
 *   bool                           b
 *   Scalar, Scalar?                s   (pointer; NULL for None)
 *   ScalarType                     dtype
 *   Layout                         layout
 *   MemoryFormat                   mf
 *   Device                         device
 *   int?, SymInt?, float?, bool?, ScalarType?, Layout?, MemoryFormat?,
 *   Device?                        opt (opt.has false for None; value in opt.v)
 *   int[], SymInt[], int[N]        ints   (size -1 for None when optional)
 *   float[]                        floats (size -1 for None when optional)
 *   bool[], bool[N]                bools  (size -1 for None when optional)
 *   Tensor[], Tensor?[]            tensors (entries NULL for None in Tensor?[])
 *   str, str?                      str    (data NULL for None)
 *   anything else                  value  (a borrowed boxed value; NULL for None)
 *
 * Results of typed calls come back as owned kd_values (one per return). */
typedef union kd_arg {
  kd_tensor *t;
  int64_t i;
  double f;
  bool b;
  const kd_scalar *s;
  kd_dtype dtype;
  kd_layout layout;
  kd_memory_format mf;
  kd_device device;
  struct {
    union {
      int64_t i;
      double f;
      bool b;
      kd_dtype dtype;
      kd_layout layout;
      kd_memory_format mf;
      kd_device device;
    } v;
    bool has;
  } opt;
  struct {
    const int64_t *data;
    int64_t size;
  } ints;
  struct {
    const double *data;
    int64_t size;
  } floats;
  struct {
    const bool *data;
    int64_t size;
  } bools;
  struct {
    kd_tensor *const *data;
    int64_t size;
  } tensors;
  struct {
    const char *data;
    int64_t size;
  } str;
  const kd_value *value;
} kd_arg;

/* ---- Kernels --------------------------------------------------------------- */

typedef struct kd_op kd_op;

/* What a kernel receives besides its arguments. */
typedef struct kd_call {
  kd_op *op;           /* the operator called */
  kd_keyset keys;      /* the call's key set, after include/exclude/fallthrough */
  kd_dispatch_key key; /* the key whose table slot chose this kernel */
  void *data;          /* closure data, or the functor's state for this slot */
} kd_call;

/* Unboxed kernel: reads args[0..nargs), writes one owned value per return
 * into rets[0..nrets) (which start as None). One exception: a result that is
 * one of the kernel's own tensor arguments (the `Tensor(a!)` return of an
 * out= or in-place operator) may be written borrowed, kd_value_tensor_borrowed
 * (PyTorch returns `Tensor&` there); the dispatcher's boxed paths take a
 * reference to it before the arguments leave the stack. On error it returns
 * the status with kd_set_error and leaves rets None. */
typedef kd_status (*kd_unboxed_fn)(const kd_call *call, const kd_arg *args, kd_value *rets);

/* Boxed kernel: the operator's arguments are the top nargs values of the
 * stack; it replaces them with its nrets results (fallbacks work on any
 * operator this way, reading kd_op_schema(call->op)). On error the stack
 * holds the arguments or nothing of the call; the caller clears it. */
typedef kd_status (*kd_boxed_fn)(const kd_call *call, kd_stack *stack);

typedef enum kd_kernel_kind {
  KD_KERNEL_FUNCTION = 0,      /* unboxed and/or boxed function, optional data */
  KD_KERNEL_FUNCTOR = 1,       /* as FUNCTION, with per-slot state from a factory */
  KD_KERNEL_FALLTHROUGH = 2,   /* skip this key: dispatch goes to the next key down */
  KD_KERNEL_NOT_SUPPORTED = 3, /* fails with KD_EUNSUPPORTED naming operator and key */
} kd_kernel_kind;

#define KD_KERNEL_API_VERSION 1

/* A kernel description, copied by impl/fallback. Every form becomes one
 * uniform kernel record: a call through either entry works, through an
 * adapter driven by the schema when only the other one is given.
 * Versioned as kd/version.h says. Version 1: api_version, kind, unboxed,
 * boxed, signature, data, destroy_data, create, destroy, ctor_args,
 * nctor_args, debug. */
typedef struct kd_kernel {
  uint32_t api_version; /* KD_KERNEL_API_VERSION (1 to it are accepted) */
  kd_kernel_kind kind;
  kd_unboxed_fn unboxed; /* at least one of unboxed / boxed for FUNCTION, FUNCTOR */
  kd_boxed_fn boxed;
  /* The unboxed entry's C signature as schema types, e.g.
   * "(Tensor, Tensor, Scalar) -> Tensor" (names, defaults and alias
   * annotations are ignored; SymInt equals int). Checked against the schema
   * at impl, and used to infer a schema for def-by-name. NULL for boxed-only
   * kernels, which work with any schema. Copied. */
  const char *signature;
  /* FUNCTION: passed as call->data (a closure). FUNCTOR: passed to create. */
  void *data;
  /* Called with `data` once the registration is released and no call can
   * still be using it. May be NULL. */
  void (*destroy_data)(void *data);
  /* FUNCTOR only: makes the state of one table slot, the first time that
   * slot is called, from the constructor arguments given at registration
   * (ctor_args, copied then). Returns KD_OK and sets *state, or an error that
   * the call that triggered it returns. */
  kd_status (*create)(void *data, const kd_value *ctor_args, size_t nctor_args, void **state);
  /* FUNCTOR only: destroys a state made by create, after release. */
  void (*destroy)(void *state);
  const kd_value *ctor_args; /* FUNCTOR only: copied (retained) at registration */
  size_t nctor_args;
  /* Where the kernel was registered ("file.c:12"), for dump; copied; may be NULL. */
  const char *debug;
} kd_kernel;

static inline kd_kernel kd_kernel_zero_(void) {
  kd_kernel k;
  k.api_version = KD_KERNEL_API_VERSION;
  k.kind = KD_KERNEL_FUNCTION;
  k.unboxed = 0;
  k.boxed = 0;
  k.signature = 0;
  k.data = 0;
  k.destroy_data = 0;
  k.create = 0;
  k.destroy = 0;
  k.ctor_args = 0;
  k.nctor_args = 0;
  k.debug = 0;
  return k;
}
/* A plain unboxed function with its C signature. */
static inline kd_kernel kd_kernel_unboxed(kd_unboxed_fn fn, const char *signature) {
  kd_kernel k = kd_kernel_zero_();
  k.unboxed = fn;
  k.signature = signature;
  return k;
}
/* A boxed function (works for any schema). */
static inline kd_kernel kd_kernel_boxed(kd_boxed_fn fn) {
  kd_kernel k = kd_kernel_zero_();
  k.boxed = fn;
  return k;
}
/* A closure: an unboxed function plus data (destroyed after release). */
static inline kd_kernel kd_kernel_closure(kd_unboxed_fn fn, const char *signature, void *data,
                                          void (*destroy_data)(void *)) {
  kd_kernel k = kd_kernel_unboxed(fn, signature);
  k.data = data;
  k.destroy_data = destroy_data;
  return k;
}
static inline kd_kernel kd_kernel_fallthrough(void) {
  kd_kernel k = kd_kernel_zero_();
  k.kind = KD_KERNEL_FALLTHROUGH;
  return k;
}
static inline kd_kernel kd_kernel_not_supported(void) {
  kd_kernel k = kd_kernel_zero_();
  k.kind = KD_KERNEL_NOT_SUPPORTED;
  return k;
}

/* ---- Operators and calls ------------------------------------------------- */

/* Finds an operator by "ns::name" and overload ("" for none), or by the
 * qualified "ns::name.overload" with overload NULL. *out is a handle owned by
 * the library and valid for the life of the process; never freed by the
 * caller. An operator whose last definition and kernel are released keeps
 * only its handle and name (schema, table entries, kernel records and
 * per-slot state are freed once no call can use them): lookups then fail
 * with KD_ENOTFOUND, calls through the handle fail with KD_ESTATE naming the
 * operator, and defining it again reuses the same handle. Each distinct name
 * ever defined costs its handle (about 640 bytes) for the life of the
 * process (docs/ARCHITECTURE.md, "Operator lifetime"). KD_ENOTFOUND when no
 * such operator is defined or implemented now; *out is NULL on error. */
KD_API kd_status kd_op_find(const char *name, const char *overload, kd_op **out);

/* As kd_op_find, then checks that `signature` (as in kd_kernel.signature)
 * matches the operator's schema: this is the caller's promise about how it
 * fills kd_arg and reads results. KD_ETYPE names the first argument or return
 * that differs; KD_ESTATE when the operator has no schema (not defined). */
KD_API kd_status kd_op_find_typed(const char *name, const char *overload, const char *signature,
                                  kd_op **out);

/* The schema (borrowed; valid while the operator stays defined: it is freed
 * after its last definition is released), or NULL when not defined. */
KD_API const kd_schema *kd_op_schema(const kd_op *op);
/* "ns::name.overload" (or "ns::name"); static for the life of the process. */
KD_API const char *kd_op_name(const kd_op *op);

/* A typed call: args as the schema says (see kd_arg), one value per return
 * written to rets, which the caller destroys (kd_value_destroy). Results are
 * owned, except that a result which is one of the caller's own tensor
 * arguments (an out= or in-place operator's `Tensor(a!)` return) may come
 * back borrowed (flags KD_VALUE_BORROWED, as the kernel wrote it): valid as
 * long as the caller's argument is; kd_value_own gives it its own
 * reference. Boxed calls always return owned values. KD_ENOKERNEL when the
 * chosen slot has no kernel, with the message "Could not run 'ns::op' with
 * arguments from the 'KEY' backend ... available for: [CPU, ...]". */
KD_API kd_status kd_call_unboxed(kd_op *op, const kd_arg *args, kd_value *rets);
/* A boxed call: the operator's arguments are the top nargs values of the
 * stack (all of them: see kd_op_fill_defaults); on success they are replaced
 * by the results. On error the stack is left in an unspecified state between
 * the two; the caller clears it. KD_ESTATE when the stack holds too few
 * values; KD_ETYPE when a value does not fit its argument (naming both). */
KD_API kd_status kd_call_boxed(kd_op *op, kd_stack *stack);

/* Pushes the defaults of arguments given..nargs-1, for a caller that pushed
 * only the first `given` arguments. KD_EINVAL names the first of those
 * arguments that has no default (what was pushed before it stays). */
KD_API kd_status kd_op_fill_defaults(kd_op *op, kd_stack *stack, size_t given);

/* Calls the operator again from inside a kernel with only the keys below the
 * kernel's own (call->key): how a mode key's wrapper reaches the backend. */
KD_API kd_status kd_redispatch_unboxed(const kd_call *call, const kd_arg *args, kd_value *rets);
KD_API kd_status kd_redispatch_boxed(const kd_call *call, kd_stack *stack);

/* Calls with an explicit key set, used as it is: the thread-local sets are
 * not applied again (they were when the key set was first computed); the
 * operator's fallthrough keys are still skipped. */
KD_API kd_status kd_call_unboxed_keys(kd_op *op, kd_keyset keys, const kd_arg *args,
                                      kd_value *rets);
KD_API kd_status kd_call_boxed_keys(kd_op *op, kd_keyset keys, kd_stack *stack);

/* ---- The typed call, inline ----------------------------------------------
 *
 * kd_call_unboxed(op, args, rets) written with its parentheses is a macro for
 * an inline function (gcc and clang), which does the same as the
 * exported function: the kernel returns straight to the caller instead of
 * into the library, which the library's own call cannot do, since its read
 * section must outlast the kernel (see docs/ARCHITECTURE.md, "Inline typed
 * call"). The exported kd_call_unboxed stays for function pointers
 * (&kd_call_unboxed, or `(kd_call_unboxed)(...)`), bindings and other
 * compilers; KD_NO_INLINE_CALL before the first include turns the macro off.
 * The inline function and the three exported kd__ symbols it uses are in
 * kd/detail/dispatch_abi.h: ABI, not API. */

#include "kd/detail/dispatch_abi.h"

KD_EXTERN_C_END

#endif /* KD_DISPATCH_H */
