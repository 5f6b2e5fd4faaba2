/*
 * keys.h: dispatch keys and key sets, the core layer's part of dispatch.
 *
 * The key space is two-dimensional, as PyTorch's: a functionality (dense,
 * Quantized, Sparse, SparseCsr, NestedTensor, Autograd) crossed with a backend
 * (CPU, CUDA, Meta, PrivateUse1..3, in the order of kd_device_type), plus keys
 * that belong to no backend (BackendSelect, ADInplaceOrView, AutogradOther,
 * AutogradNestedTensor, the mode keys). Unlike PyTorch, which stores a
 * functionality bit and a backend bit and computes the table slot from both,
 * kdispatch gives every runtime key its own bit of one 64-bit set: the bit is
 * the key's priority (higher wins) and its dispatch-table slot, so a call
 * finds its slot with one count-leading-zeros (docs/ARCHITECTURE.md, "Dispatch
 * keys"). The keys of one per-backend functionality are contiguous, one per
 * backend in device-type order, and the functionalities are stacked in
 * PyTorch's priority order.
 *
 * Every tensor carries its dense backend key, and, unless it was made in
 * inference mode (kd_inference_mode_enter, kd/dispatch.h), ADInplaceOrView
 * and its backend's Autograd key. Both fall through (a fallthrough fallback is
 * registered for them at startup), so a call goes on to the backend unless an
 * operator has a kernel for them. kdispatch's tensors are strided only: no
 * tensor carries a Quantized, Sparse, SparseCsr or NestedTensor key, but
 * kernels can be registered for those keys and show in the dispatch tables.
 */
#ifndef KD_KEYS_H
#define KD_KEYS_H

#include "kd/common.h"
#include "kd/device.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

/* ---- Runtime keys ----------------------------------------------------------
 *
 * X(ENUM, name, bit). The bit is the priority (higher wins) and the table
 * slot. Reserved bits (32..35, 49..63) are kept for keys to come; bits are
 * ABI (kd/version.h). The names of a private backend's column change when the
 * key is renamed (kd_dispatch_key_rename: AutogradPrivateUse1 becomes
 * AutogradOpenCL); the names here are the defaults.
 *
 *   Undefined                 the slot of a call whose key set is empty (no
 *                             tensor arguments, as factories)
 *   CPU .. PrivateUse3        dense backends, one per device type
 *   Quantized<B>, Sparse<B>, SparseCsr<B>, NestedTensor<B>
 *                             the other layouts' functionalities, per backend
 *   BackendSelect             picks a backend for factory functions
 *   ADInplaceOrView           views and in-place bookkeeping (falls through)
 *   AutogradOther             autograd of backends without their own key
 *   Autograd<B>               autograd, per backend (falls through)
 *   AutogradNestedTensor      autograd of nested tensors
 *   Tracer, Profiler, Mode1, Mode2   mode keys for wrappers that redispatch */
#define KD_DISPATCH_KEY_LIST(X)                               \
  X(UNDEFINED, "Undefined", 0)                                \
  X(CPU, "CPU", 1)                                            \
  X(CUDA, "CUDA", 2)                                          \
  X(META, "Meta", 3)                                          \
  X(PRIVATEUSE1, "PrivateUse1", 4)                            \
  X(PRIVATEUSE2, "PrivateUse2", 5)                            \
  X(PRIVATEUSE3, "PrivateUse3", 6)                            \
  X(QUANTIZED_CPU, "QuantizedCPU", 7)                         \
  X(QUANTIZED_CUDA, "QuantizedCUDA", 8)                       \
  X(QUANTIZED_META, "QuantizedMeta", 9)                       \
  X(QUANTIZED_PRIVATEUSE1, "QuantizedPrivateUse1", 10)        \
  X(QUANTIZED_PRIVATEUSE2, "QuantizedPrivateUse2", 11)        \
  X(QUANTIZED_PRIVATEUSE3, "QuantizedPrivateUse3", 12)        \
  X(SPARSE_CPU, "SparseCPU", 13)                              \
  X(SPARSE_CUDA, "SparseCUDA", 14)                            \
  X(SPARSE_META, "SparseMeta", 15)                            \
  X(SPARSE_PRIVATEUSE1, "SparsePrivateUse1", 16)              \
  X(SPARSE_PRIVATEUSE2, "SparsePrivateUse2", 17)              \
  X(SPARSE_PRIVATEUSE3, "SparsePrivateUse3", 18)              \
  X(SPARSE_CSR_CPU, "SparseCsrCPU", 19)                       \
  X(SPARSE_CSR_CUDA, "SparseCsrCUDA", 20)                     \
  X(SPARSE_CSR_META, "SparseCsrMeta", 21)                     \
  X(SPARSE_CSR_PRIVATEUSE1, "SparseCsrPrivateUse1", 22)       \
  X(SPARSE_CSR_PRIVATEUSE2, "SparseCsrPrivateUse2", 23)       \
  X(SPARSE_CSR_PRIVATEUSE3, "SparseCsrPrivateUse3", 24)       \
  X(NESTED_TENSOR_CPU, "NestedTensorCPU", 25)                 \
  X(NESTED_TENSOR_CUDA, "NestedTensorCUDA", 26)               \
  X(NESTED_TENSOR_META, "NestedTensorMeta", 27)               \
  X(NESTED_TENSOR_PRIVATEUSE1, "NestedTensorPrivateUse1", 28) \
  X(NESTED_TENSOR_PRIVATEUSE2, "NestedTensorPrivateUse2", 29) \
  X(NESTED_TENSOR_PRIVATEUSE3, "NestedTensorPrivateUse3", 30) \
  X(BACKEND_SELECT, "BackendSelect", 31)                      \
  X(AD_INPLACE_OR_VIEW, "ADInplaceOrView", 36)                \
  X(AUTOGRAD_OTHER, "AutogradOther", 37)                      \
  X(AUTOGRAD_CPU, "AutogradCPU", 38)                          \
  X(AUTOGRAD_CUDA, "AutogradCUDA", 39)                        \
  X(AUTOGRAD_META, "AutogradMeta", 40)                        \
  X(AUTOGRAD_PRIVATEUSE1, "AutogradPrivateUse1", 41)          \
  X(AUTOGRAD_PRIVATEUSE2, "AutogradPrivateUse2", 42)          \
  X(AUTOGRAD_PRIVATEUSE3, "AutogradPrivateUse3", 43)          \
  X(AUTOGRAD_NESTED_TENSOR, "AutogradNestedTensor", 44)       \
  X(TRACER, "Tracer", 45)                                     \
  X(PROFILER, "Profiler", 46)                                 \
  X(MODE1, "Mode1", 47)                                       \
  X(MODE2, "Mode2", 48)

/* ---- Alias keys --------------------------------------------------------------
 *
 * X(ENUM, name). For registration only; each stands for a set of runtime keys
 * (kd_dispatch_key_expand), with PyTorch 1.13's precedence when a runtime
 * key's own slot has no kernel: CompositeExplicitAutogradNonFunctional, then
 * CompositeExplicitAutograd, then CompositeImplicitAutogradNestedTensor, then
 * CompositeImplicitAutograd, then Autograd, then the key's fallback
 * (docs/ARCHITECTURE.md, "How a slot is filled"). Values are appended only.
 *   CompositeExplicitAutograd   Undefined and every backend key of the dense,
 *                               Quantized, Sparse and SparseCsr functionalities
 *   CompositeImplicitAutograd   those, the NestedTensor keys, and every
 *                               autograd key; an autograd key takes it only
 *                               when its backend has no kernel of its own
 *   CatchAll                    every runtime key (lowest precedence: after a
 *                               functionality key's fallback, before a
 *                               backend's)
 *   Autograd                    Autograd<B> for every backend, AutogradOther,
 *                               AutogradNestedTensor
 *   CompositeExplicitAutogradNonFunctional
 *                               CompositeExplicitAutograd's keys less Sparse
 *   CompositeImplicitAutogradNestedTensor
 *                               the NestedTensor keys and AutogradNestedTensor */
#define KD_ALIAS_KEY_LIST(X)                                                     \
  X(COMPOSITE_EXPLICIT_AUTOGRAD, "CompositeExplicitAutograd")                    \
  X(COMPOSITE_IMPLICIT_AUTOGRAD, "CompositeImplicitAutograd")                    \
  X(CATCH_ALL, "CatchAll")                                                       \
  X(AUTOGRAD, "Autograd")                                                        \
  X(COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL, "CompositeExplicitAutogradNonFunctional") \
  X(COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR, "CompositeImplicitAutogradNestedTensor")

#define KD_NUM_RUNTIME_KEYS 64

typedef enum kd_dispatch_key {
#define KD_DISPATCH_KEY_ENUM_(E, name, bit) KD_KEY_##E = bit,
  KD_DISPATCH_KEY_LIST(KD_DISPATCH_KEY_ENUM_)
#undef KD_DISPATCH_KEY_ENUM_
  KD_KEY_ALIAS_FIRST_ = KD_NUM_RUNTIME_KEYS - 1,
#define KD_ALIAS_KEY_ENUM_(E, name) KD_KEY_##E,
  KD_ALIAS_KEY_LIST(KD_ALIAS_KEY_ENUM_)
#undef KD_ALIAS_KEY_ENUM_
  KD_KEY_INVALID_
} kd_dispatch_key;

/* ---- Functionalities and backends ---------------------------------------------
 *
 * The per-backend functionalities: X(ENUM, name prefix, first key). Key
 * (functionality f, backend b) is f's first key + b, b a kd_device_type. */
#define KD_FUNCTIONALITY_LIST(X)                        \
  X(DENSE, "", KD_KEY_CPU)                              \
  X(QUANTIZED, "Quantized", KD_KEY_QUANTIZED_CPU)       \
  X(SPARSE, "Sparse", KD_KEY_SPARSE_CPU)                \
  X(SPARSE_CSR, "SparseCsr", KD_KEY_SPARSE_CSR_CPU)     \
  X(NESTED_TENSOR, "NestedTensor", KD_KEY_NESTED_TENSOR_CPU) \
  X(AUTOGRAD, "Autograd", KD_KEY_AUTOGRAD_CPU)

typedef enum kd_functionality {
#define KD_FUNCTIONALITY_ENUM_(E, prefix, first) KD_FUNCTIONALITY_##E,
  KD_FUNCTIONALITY_LIST(KD_FUNCTIONALITY_ENUM_)
#undef KD_FUNCTIONALITY_ENUM_
  KD_FUNCTIONALITY_COUNT
} kd_functionality;

/* The number of backends: one per device type (CPU, CUDA, Meta, PrivateUse1..3). */
#define KD_NUM_BACKENDS KD_DEVICE_TYPE_COUNT

/* ---- Key sets -------------------------------------------------------------- */

/* A set of runtime keys: bit k is key k. */
typedef uint64_t kd_keyset;

static inline kd_keyset kd_keyset_of(kd_dispatch_key key) {
  return (unsigned)key < KD_NUM_RUNTIME_KEYS ? (kd_keyset)1 << (unsigned)key : 0;
}
static inline bool kd_keyset_has(kd_keyset ks, kd_dispatch_key key) {
  return (ks & kd_keyset_of(key)) != 0;
}
/* The highest key of a set; KD_KEY_UNDEFINED for the empty set. */
static inline kd_dispatch_key kd_keyset_highest(kd_keyset ks) {
  return (kd_dispatch_key)(63 - __builtin_clzll(ks | 1));
}
/* The lowest key of `key`'s functionality: AutogradCPU for AutogradCUDA, CPU
 * for Meta; the key itself for a key of no backend. */
static inline kd_dispatch_key kd_dispatch_key_functionality_first(kd_dispatch_key key) {
  unsigned k = (unsigned)key;
  if (k >= KD_KEY_CPU && k <= KD_KEY_NESTED_TENSOR_PRIVATEUSE3)
    return (kd_dispatch_key)(k - (k - KD_KEY_CPU) % KD_NUM_BACKENDS);
  if (k >= KD_KEY_AUTOGRAD_CPU && k <= KD_KEY_AUTOGRAD_PRIVATEUSE3) return KD_KEY_AUTOGRAD_CPU;
  return key;
}
/* The keys of `ks` below `key`'s functionality: what a kernel at `key`
 * redispatches to. A kernel at AutogradCUDA called with CPU and CUDA
 * tensors goes on to CUDA, not to AutogradCPU (as PyTorch's redispatch drops
 * the whole functionality). */
static inline kd_keyset kd_keyset_below(kd_keyset ks, kd_dispatch_key key) {
  if ((unsigned)key >= KD_NUM_RUNTIME_KEYS) return ks;
  return ks & (kd_keyset_of(kd_dispatch_key_functionality_first(key)) - 1);
}

/* Every dense backend key (CPU .. PrivateUse3). */
KD_API kd_keyset kd_keyset_backends(void);
/* The keys of one per-backend functionality (all six Autograd<B> keys for
 * KD_FUNCTIONALITY_AUTOGRAD); 0 for a value out of range. */
KD_API kd_keyset kd_keyset_functionality(kd_functionality f);
/* Every autograd key: Autograd<B>, AutogradOther, AutogradNestedTensor (what
 * the Autograd alias stands for). */
KD_API kd_keyset kd_keyset_autograd(void);

/* ---- Keys ------------------------------------------------------------------ */

/* True for a defined runtime key, for an alias key. */
KD_API bool kd_dispatch_key_is_runtime(kd_dispatch_key key);
KD_API bool kd_dispatch_key_is_alias(kd_dispatch_key key);
/* The runtime keys an alias key (or a runtime key: itself) stands for; 0 for
 * an invalid key. */
KD_API kd_keyset kd_dispatch_key_expand(kd_dispatch_key key);

/* The key of functionality f for backend (device type) b: (AUTOGRAD, CPU) is
 * AutogradCPU, (DENSE, META) is Meta. KD_KEY_INVALID_ when either is out of
 * range. */
KD_API kd_dispatch_key kd_dispatch_key_of(kd_functionality f, kd_device_type backend);
/* Splits a per-backend key into its functionality and backend. False (and
 * nothing written) for a key of no backend (Undefined, BackendSelect,
 * AutogradOther, ..., alias keys). Either pointer may be NULL. */
KD_API bool kd_dispatch_key_split(kd_dispatch_key key, kd_functionality *f,
                                  kd_device_type *backend);

/* The key's name ("CPU", "AutogradCPU", "CompositeImplicitAutograd", or the
 * name a backend gave a private column: "AutogradOpenCL"); "Invalid"
 * otherwise. Static or registry storage, valid for the life of the process. */
KD_API const char *kd_dispatch_key_name(kd_dispatch_key key);
/* Looks a key up by name (runtime and alias keys, renamed private columns).
 * KD_ENOTFOUND lists the known names; KD_EINVAL for NULL. */
KD_API kd_status kd_dispatch_key_from_name(const char *name, kd_dispatch_key *out);
/* Renames PrivateUse1..3 (e.g. "OpenCL") and with it the key's whole column
 * (QuantizedOpenCL, SparseOpenCL, SparseCsrOpenCL, NestedTensorOpenCL,
 * AutogradOpenCL). Rules as kd_device_type_register but letters of either
 * case are allowed. KD_EINVAL: not a private dense key or a bad name;
 * KD_EEXIST: a name of the column is taken or the key already has another
 * name. Thread-safe (serialized with other renames), but key names are read
 * without a lock (kd_dispatch_key_name, kd_keyset_format, messages): rename
 * before other threads name or parse the key, as a backend's registration
 * does. */
KD_API kd_status kd_dispatch_key_rename(kd_dispatch_key key, const char *name);

/* The dense backend key of a device type (cpu -> CPU, privateuseone ->
 * PrivateUse1); KD_KEY_UNDEFINED for a type out of range. */
KD_API kd_dispatch_key kd_backend_key(kd_device_type type);
/* The Autograd key of a device type (cpu -> AutogradCPU);
 * KD_KEY_UNDEFINED for a type out of range. */
KD_API kd_dispatch_key kd_autograd_key(kd_device_type type);

/* Formats "[CPU, AutogradCPU]" (ascending). Returns the needed length as
 * snprintf; writes at most cap bytes, NUL-terminated when cap > 0. */
KD_API size_t kd_keyset_format(kd_keyset ks, char *buf, size_t cap);

KD_EXTERN_C_END

#endif /* KD_KEYS_H */
