/*
 * stub.c: the CPU capability (picked once per process) and the slow path of
 * dispatch stubs (stub.h). Also defines the runtime's own stubs.
 */
#include "stub.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "fill.h"

static const char *const cap_names[KDK__CPU_CAP_COUNT] = {"default", "avx2", "avx512"};

const char *kdk__cpu_capability_name(kdk__cpu_cap cap) {
  return cap >= 0 && cap < KDK__CPU_CAP_COUNT ? cap_names[cap] : "invalid";
}

static bool cap_built(kdk__cpu_cap cap) {
  switch (cap) {
  case KDK__CPU_CAP_DEFAULT:
    return true;
  case KDK__CPU_CAP_AVX2:
#ifdef KD_HAVE_CPU_CAP_AVX2
    return true;
#else
    return false;
#endif
  case KDK__CPU_CAP_AVX512:
#ifdef KD_HAVE_CPU_CAP_AVX512
    return true;
#else
    return false;
#endif
  default:
    return false;
  }
}

static bool cap_supported(kdk__cpu_cap cap) {
  switch (cap) {
  case KDK__CPU_CAP_DEFAULT:
    return true;
#if defined(__x86_64__) || defined(__i386__)
  case KDK__CPU_CAP_AVX2:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case KDK__CPU_CAP_AVX512:
    __builtin_cpu_init();
    /* The AVX512 build also uses AVX2 and FMA instructions. */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  default:
    return false;
  }
}

kdk__cpu_cap kdk__cpu_capability_best(void) {
  for (int c = KDK__CPU_CAP_COUNT - 1; c > KDK__CPU_CAP_DEFAULT; c--)
    if (cap_built((kdk__cpu_cap)c) && cap_supported((kdk__cpu_cap)c)) return (kdk__cpu_cap)c;
  return KDK__CPU_CAP_DEFAULT;
}

static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static kdk__cpu_cap cap_chosen = KDK__CPU_CAP_DEFAULT;

static void choose_capability(void) {
  kdk__cpu_cap best = kdk__cpu_capability_best();
  cap_chosen = best;
  const char *env = getenv("KD_CPU_CAPABILITY");
  if (!env || !*env) return;
  int want = -1;
  for (int c = 0; c < KDK__CPU_CAP_COUNT; c++)
    if (!strcasecmp(env, cap_names[c])) want = c;
  if (want < 0) {
    kd_warn("KD_CPU_CAPABILITY='%s' is not one of default, avx2, avx512; using %s", env,
            kdk__cpu_capability_name(best));
  } else if (!cap_built((kdk__cpu_cap)want)) {
    kd_warn("KD_CPU_CAPABILITY=%s: libkdops was built without %s kernels; using %s", env,
            kdk__cpu_capability_name((kdk__cpu_cap)want), kdk__cpu_capability_name(best));
  } else if (!cap_supported((kdk__cpu_cap)want)) {
    kd_warn("KD_CPU_CAPABILITY=%s: this processor does not support %s; using %s", env,
            kdk__cpu_capability_name((kdk__cpu_cap)want), kdk__cpu_capability_name(best));
  } else {
    cap_chosen = (kdk__cpu_cap)want;
  }
}

kdk__cpu_cap kdk__cpu_capability_get(void) {
  pthread_once(&cap_once, choose_capability);
  return cap_chosen;
}

const char *kd_cpu_capability(void) { return cap_names[kdk__cpu_capability_get()]; }

kdk_stub_fn kdk__stub_pick(const kdk_stub_fn *c, kdk__cpu_cap cap) {
  if (cap < 0 || cap >= KDK__CPU_CAP_COUNT) return NULL;
  for (int k = (int)cap; k >= 0; k--)
    if (c[k]) return c[k];
  return NULL;
}

/* "fakedev", or "device type 9" for a value out of range. */
static const char *type_name(kd_device_type type, char *buf, size_t cap) {
  if ((int)type >= 0 && type < KD_DEVICE_TYPE_COUNT) return kd_device_type_name(type);
  snprintf(buf, cap, "device type %d", (int)type);
  return buf;
}

kdk_stub_fn kdk_stub_lookup(kdk_stub *s, kd_device_type type, const char *op) {
  const char *who = op ? op : "kdk_stub_lookup";
  if (!s) {
    kd_set_error(KD_ENOKERNEL, "%s: the dispatch stub is NULL", who);
    return NULL;
  }
  if (type == KD_DEVICE_CPU) {
    kdk_stub_fn f = atomic_load_explicit(&s->cpu, memory_order_acquire);
    if (f) return f;
    kdk_stub_fn c[KDK__CPU_CAP_COUNT] = {NULL};
    s->candidates(c);
    kdk__cpu_cap cap = kdk__cpu_capability_get();
    f = kdk__stub_pick(c, cap);
    if (!f) {
      kd_set_error(KD_ENOKERNEL,
                   "%s: dispatch stub %s has no CPU loop for capability %s or below", who,
                   s->name, kdk__cpu_capability_name(cap));
      return NULL;
    }
    /* Threads racing here compute the same pointer. */
    atomic_store_explicit(&s->cpu, f, memory_order_release);
    return f;
  }
  char buf[32];
  if ((int)type < 0 || type >= KD_DEVICE_TYPE_COUNT || type == KD_DEVICE_META) {
    kd_set_error(KD_ENOKERNEL, "%s: dispatch stub %s has no loop for %s", who, s->name,
                 type == KD_DEVICE_META ? "the meta device (no loops run on meta)"
                                        : type_name(type, buf, sizeof buf));
    return NULL;
  }
  kdk_stub_fn f = atomic_load_explicit(&s->device[type], memory_order_acquire);
  if (!f)
    kd_set_error(KD_ENOKERNEL,
                 "%s: dispatch stub %s has no loop for device %s; its backend registers one "
                 "with KDK_REGISTER_DEVICE_STUB(%s, ...)",
                 who, s->name, kd_device_type_name(type), s->name);
  return f;
}

/* KD_OK when `type` can have a registered loop, else KD_EINVAL. */
static kd_status check_device_type(const char *fn, const kdk_stub *s, kd_device_type type) {
  char buf[32];
  if (type == KD_DEVICE_CPU)
    return kd_set_error(KD_EINVAL,
                        "%s: stub %s: the CPU loops are chosen by CPU capability, not "
                        "registered; register a loop for a backend's device type",
                        fn, s->name);
  if (type == KD_DEVICE_META)
    return kd_set_error(KD_EINVAL, "%s: stub %s: no loops run on the meta device", fn, s->name);
  if ((int)type < 0 || type >= KD_DEVICE_TYPE_COUNT)
    return kd_set_error(KD_EINVAL, "%s: stub %s: %s is not a device type", fn, s->name,
                        type_name(type, buf, sizeof buf));
  return KD_OK;
}

kd_status kdk_stub_register_device(kdk_stub *stub, kd_device_type type, kdk_stub_fn fn) {
  if (!stub) return kd_set_error(KD_EINVAL, "kdk_stub_register_device: stub is NULL");
  kd_status st = check_device_type("kdk_stub_register_device", stub, type);
  if (st) return st;
  if (!fn)
    return kd_set_error(KD_EINVAL, "kdk_stub_register_device: stub %s, device %s: the loop is NULL",
                        stub->name, kd_device_type_name(type));
  kdk_stub_fn expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(&stub->device[type], &expected, fn,
                                               memory_order_acq_rel, memory_order_acquire))
    return kd_set_error(KD_EEXIST,
                        "kdk_stub_register_device: stub %s already has a loop for device %s "
                        "(unregister it first)",
                        stub->name, kd_device_type_name(type));
  return KD_OK;
}

kd_status kdk_stub_unregister_device(kdk_stub *stub, kd_device_type type) {
  if (!stub) return kd_set_error(KD_EINVAL, "kdk_stub_unregister_device: stub is NULL");
  kd_status st = check_device_type("kdk_stub_unregister_device", stub, type);
  if (st) return st;
  kdk_stub_fn old = atomic_exchange_explicit(&stub->device[type], NULL, memory_order_acq_rel);
  if (!old)
    return kd_set_error(KD_ENOTFOUND, "kdk_stub_unregister_device: stub %s has no loop for device %s",
                        stub->name, kd_device_type_name(type));
  return KD_OK;
}

/* ---- The runtime's stubs --------------------------------------------------------- */

KD_DEFINE_STUB(fill_stub);
