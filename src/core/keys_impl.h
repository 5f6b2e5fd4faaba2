/*
 * keys_impl.h: key-set constants and the tensor key rule, for the library's
 * own sources (src/core/keys.c defines the names). Not installed.
 */
#ifndef KD_CORE_KEYS_IMPL_H
#define KD_CORE_KEYS_IMPL_H

#include "kd/keys.h"

/* Every defined runtime key. */
#define KD__KEYBIT_(E, name, bit) | ((kd_keyset)1 << bit)
#define KD__RUNTIME_KEYS ((kd_keyset)0 KD_DISPATCH_KEY_LIST(KD__KEYBIT_))

/* The keys of one per-backend functionality: six bits from its first key. */
#define KD__FUNCTIONALITY_KEYS(first) ((((kd_keyset)1 << KD_NUM_BACKENDS) - 1) << (first))
/* The dense backend keys, CPU .. PrivateUse3. */
#define KD__BACKEND_KEYS KD__FUNCTIONALITY_KEYS(KD_KEY_CPU)
/* Every Autograd<B> key. */
#define KD__AUTOGRAD_BACKEND_KEYS KD__FUNCTIONALITY_KEYS(KD_KEY_AUTOGRAD_CPU)
/* What the Autograd alias stands for. */
#define KD__AUTOGRAD_KEYS                                                          \
  (KD__AUTOGRAD_BACKEND_KEYS | ((kd_keyset)1 << KD_KEY_AUTOGRAD_OTHER) |            \
   ((kd_keyset)1 << KD_KEY_AUTOGRAD_NESTED_TENSOR))

/* PyTorch's autogradother_backends: the keys of the layouts whose autograd
 * is AutogradOther (Quantized, Sparse, SparseCsr, every backend). */
#define KD__AUTOGRAD_OTHER_BACKENDS                                                  \
  (KD__FUNCTIONALITY_KEYS(KD_KEY_QUANTIZED_CPU) | KD__FUNCTIONALITY_KEYS(KD_KEY_SPARSE_CPU) | \
   KD__FUNCTIONALITY_KEYS(KD_KEY_SPARSE_CSR_CPU))
/* The NestedTensor keys. */
#define KD__NESTED_KEYS KD__FUNCTIONALITY_KEYS(KD_KEY_NESTED_TENSOR_CPU)

/* Iterates k over the set bits of ks, lowest first. */
#define KD__FOR_EACH_KEY(k, ks) \
  for (kd_keyset k##_rest_ = (ks); k##_rest_ && ((k = (unsigned)__builtin_ctzll(k##_rest_)), 1); \
       k##_rest_ &= k##_rest_ - 1)

/* This thread's inference mode (src/dispatch/tls.c sets it, tensor
 * creation reads it). */
extern _Thread_local bool kd__tls_inference_mode __attribute__((tls_model("initial-exec")));

/* The key set of a new tensor on a device type: its dense backend key, plus
 * ADInplaceOrView and its Autograd key outside inference mode. */
static inline kd_keyset kd__tensor_keyset(kd_device_type type) {
  kd_keyset ks = (kd_keyset)1 << (KD_KEY_CPU + (int)type);
  if (!kd__tls_inference_mode)
    ks |= ((kd_keyset)1 << KD_KEY_AD_INPLACE_OR_VIEW) |
          ((kd_keyset)1 << (KD_KEY_AUTOGRAD_CPU + (int)type));
  return ks;
}

#endif /* KD_CORE_KEYS_IMPL_H */
