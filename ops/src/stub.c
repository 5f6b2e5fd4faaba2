/*
 * stub.c: the CPU capability (picked once per process) and the slow path of
 * dispatch stubs (stub.h). Also defines the runtime's own stubs.
 */
#include "stub.h"

#include <pthread.h>
#include <stdlib.h>
#include <strings.h>

#include "fill.h"

static const char *const cap_names[KD__CPU_CAP_COUNT] = {"default", "avx2", "avx512"};

const char *kd__cpu_capability_name(kd__cpu_cap cap) {
  return cap >= 0 && cap < KD__CPU_CAP_COUNT ? cap_names[cap] : "invalid";
}

static bool cap_built(kd__cpu_cap cap) {
  switch (cap) {
  case KD__CPU_CAP_DEFAULT:
    return true;
  case KD__CPU_CAP_AVX2:
#ifdef KD_HAVE_CPU_CAP_AVX2
    return true;
#else
    return false;
#endif
  case KD__CPU_CAP_AVX512:
#ifdef KD_HAVE_CPU_CAP_AVX512
    return true;
#else
    return false;
#endif
  default:
    return false;
  }
}

static bool cap_supported(kd__cpu_cap cap) {
  switch (cap) {
  case KD__CPU_CAP_DEFAULT:
    return true;
#if defined(__x86_64__) || defined(__i386__)
  case KD__CPU_CAP_AVX2:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case KD__CPU_CAP_AVX512:
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

kd__cpu_cap kd__cpu_capability_best(void) {
  for (int c = KD__CPU_CAP_COUNT - 1; c > KD__CPU_CAP_DEFAULT; c--)
    if (cap_built((kd__cpu_cap)c) && cap_supported((kd__cpu_cap)c)) return (kd__cpu_cap)c;
  return KD__CPU_CAP_DEFAULT;
}

static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static kd__cpu_cap cap_chosen = KD__CPU_CAP_DEFAULT;

static void choose_capability(void) {
  kd__cpu_cap best = kd__cpu_capability_best();
  cap_chosen = best;
  const char *env = getenv("KD_CPU_CAPABILITY");
  if (!env || !*env) return;
  int want = -1;
  for (int c = 0; c < KD__CPU_CAP_COUNT; c++)
    if (!strcasecmp(env, cap_names[c])) want = c;
  if (want < 0) {
    kd_warn("KD_CPU_CAPABILITY='%s' is not one of default, avx2, avx512; using %s", env,
            kd__cpu_capability_name(best));
  } else if (!cap_built((kd__cpu_cap)want)) {
    kd_warn("KD_CPU_CAPABILITY=%s: libkdops was built without %s kernels; using %s", env,
            kd__cpu_capability_name((kd__cpu_cap)want), kd__cpu_capability_name(best));
  } else if (!cap_supported((kd__cpu_cap)want)) {
    kd_warn("KD_CPU_CAPABILITY=%s: this processor does not support %s; using %s", env,
            kd__cpu_capability_name((kd__cpu_cap)want), kd__cpu_capability_name(best));
  } else {
    cap_chosen = (kd__cpu_cap)want;
  }
}

kd__cpu_cap kd__cpu_capability_get(void) {
  pthread_once(&cap_once, choose_capability);
  return cap_chosen;
}

const char *kd_cpu_capability(void) { return cap_names[kd__cpu_capability_get()]; }

kd__stub_generic kd__stub_pick(const kd__stub_generic *c, kd__cpu_cap cap) {
  if (cap < 0 || cap >= KD__CPU_CAP_COUNT) return NULL;
  for (int k = (int)cap; k >= 0; k--)
    if (c[k]) return c[k];
  return NULL;
}

kd__stub_generic kd__stub_choose(kd__stub *s) {
  kd__stub_generic c[KD__CPU_CAP_COUNT] = {NULL};
  s->candidates(c);
  kd__stub_generic f = kd__stub_pick(c, kd__cpu_capability_get());
  /* Threads racing here compute the same pointer. */
  if (f) atomic_store_explicit(&s->fn, f, memory_order_release);
  return f;
}

/* ---- The runtime's stubs --------------------------------------------------------- */

KD_DEFINE_STUB(fill_stub);
