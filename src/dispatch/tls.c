/*
 * tls.c: the thread-local key sets (include/exclude) and inference mode.
 */
#include "core/keys_impl.h"
#include "core/tensor_impl.h"
#include "dispatch/dispatcher_impl.h"
#include "kd/dispatch.h"

kd_keyset kd_tensor_key_set(const kd_tensor *tensor) { return tensor ? tensor->keys : 0; }

_Thread_local kd__tls_mask kd__tls_keys
    __attribute__((tls_model("initial-exec"))) = {0, ~(kd_keyset)0};

_Thread_local bool kd__tls_inference_mode __attribute__((tls_model("initial-exec")));

kd_tls_keys kd_tls_keys_get(void) {
  kd_tls_keys k = {kd__tls_keys.include, ~kd__tls_keys.keep};
  return k;
}

kd_tls_keys kd_tls_include(kd_keyset keys) {
  kd_tls_keys prev = kd_tls_keys_get();
  kd__tls_keys.include |= keys;
  return prev;
}

kd_tls_keys kd_tls_exclude(kd_keyset keys) {
  kd_tls_keys prev = kd_tls_keys_get();
  kd__tls_keys.keep &= ~keys;
  return prev;
}

void kd_tls_restore(kd_tls_keys previous) {
  kd__tls_keys.include = previous.include;
  kd__tls_keys.keep = ~previous.exclude;
}

/* PyTorch's InferenceMode excludes autograd_dispatch_keyset_with_ADInplaceOrView. */
kd_inference_mode_guard kd_inference_mode_enter(bool enabled) {
  kd_inference_mode_guard prev = {kd__tls_inference_mode, kd_tls_keys_get()};
  kd__tls_inference_mode = enabled;
  kd_keyset ad = KD__AUTOGRAD_KEYS | kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW);
  if (enabled)
    kd__tls_keys.keep &= ~ad;
  else
    kd__tls_keys.keep |= ad;
  return prev;
}

void kd_inference_mode_exit(kd_inference_mode_guard previous) {
  kd__tls_inference_mode = previous.previous;
  kd_tls_restore(previous.tls);
}

bool kd_inference_mode_is_enabled(void) { return kd__tls_inference_mode; }
