/*
 * stub.h: dispatch stubs, CPU inner loops chosen by CPU capability
 * (docs/CODEGEN.md, "Dispatch stubs"). Private to libkdops.
 *
 *   // a header: the stub's function type
 *   typedef void kd__add_fn(kdk_iter *iter, const kd_scalar *alpha);
 *   KD_DECLARE_STUB(add_stub, kd__add_fn);
 *   // one ordinary .c file of ops/src or ops/native
 *   KD_DEFINE_STUB(add_stub);
 *   // ops/cpu/binary.c, compiled once per capability
 *   static void add_kernel(kdk_iter *iter, const kd_scalar *alpha) { ... }
 *   KD_REGISTER_STUB(add_stub, add_kernel);
 *   // impl
 *   KD_STUB(add_stub)(iter, alpha);
 *
 * Each capability build of an ops/cpu file defines the pointer
 * kd__stub_<name>_<CAP> (CAP from -DKD_CPU_CAP=...). KD_DEFINE_STUB refers to
 * the pointer of every capability the library was built with
 * (KD_HAVE_CPU_CAP_*), so every capability build must register the stub:
 * a kernel that exists only for some capabilities registers NULL in the
 * others,
 *
 *   #ifdef KD_CPU_CAPABILITY_DEFAULT
 *   KD_REGISTER_STUB(foo_stub, foo_kernel);
 *   #else
 *   KD_REGISTER_STUB(foo_stub, NULL);  // the next lower capability's kernel runs
 *   #endif
 *
 * (strong references: a static link keeps every capability's object).
 *
 * The first KD_STUB of a stub picks its kernel: the chosen capability's, or
 * the closest lower one's when that is NULL. Later uses are one acquire load.
 * KD_STUB gives NULL only when no capability at or below the chosen one has a
 * kernel (register one for DEFAULT).
 */
#ifndef KD_OPS_STUB_H
#define KD_OPS_STUB_H

#include <stdatomic.h>
#include <stddef.h>

#include "kd/ops.h"

KD_EXTERN_C_BEGIN

/* Capabilities, lowest first; kd_cpu_capability() names them. */
typedef enum kd__cpu_cap {
  KD__CPU_CAP_DEFAULT = 0,
  KD__CPU_CAP_AVX2 = 1,
  KD__CPU_CAP_AVX512 = 2,
  KD__CPU_CAP_COUNT
} kd__cpu_cap;

/* Any function pointer, stored; cast back to the stub's type to call. */
typedef void (*kd__stub_generic)(void);

typedef struct kd__stub {
  _Atomic(kd__stub_generic) fn; /* the chosen kernel; NULL until the first use */
  const char *name;
  /* Writes each built capability's kernel (or NULL) into c[KD__CPU_CAP_COUNT]. */
  void (*candidates)(kd__stub_generic *c);
} kd__stub;

/* The chosen capability (picked once per process, thread-safe). */
kd__cpu_cap kd__cpu_capability_get(void);

/* The best capability this processor supports among those built (ignores
 * KD_CPU_CAPABILITY). */
kd__cpu_cap kd__cpu_capability_best(void);

/* "default", "avx2", "avx512"; "invalid" otherwise. */
const char *kd__cpu_capability_name(kd__cpu_cap cap);

/* The kernel for `cap` among c[0..KD__CPU_CAP_COUNT): c[cap], else the
 * closest lower non-NULL entry, else NULL. */
kd__stub_generic kd__stub_pick(const kd__stub_generic *c, kd__cpu_cap cap);

/* Slow path of KD_STUB: picks and publishes s->fn. */
kd__stub_generic kd__stub_choose(kd__stub *s);

static inline kd__stub_generic kd__stub_get(kd__stub *s) {
  kd__stub_generic f = atomic_load_explicit(&s->fn, memory_order_acquire);
  if (__builtin_expect(f == NULL, 0)) f = kd__stub_choose(s);
  return f;
}

/* ---- The macros -------------------------------------------------------------- */

#define KD_DECLARE_STUB(name, fn_type)                                       \
  typedef fn_type kd__stub_fn_##name;                                        \
  extern kd__stub kd__stub_##name;                                           \
  extern kd__stub_fn_##name *const kd__stub_##name##_DEFAULT;                \
  extern kd__stub_fn_##name *const kd__stub_##name##_AVX2;                   \
  extern kd__stub_fn_##name *const kd__stub_##name##_AVX512

/* Per built capability: one assignment in the candidates function. */
#define KD__STUB_CAND_DEFAULT(c, name) \
  c[KD__CPU_CAP_DEFAULT] = (kd__stub_generic)kd__stub_##name##_DEFAULT;
#ifdef KD_HAVE_CPU_CAP_AVX2
#define KD__STUB_CAND_AVX2(c, name) c[KD__CPU_CAP_AVX2] = (kd__stub_generic)kd__stub_##name##_AVX2;
#else
#define KD__STUB_CAND_AVX2(c, name)
#endif
#ifdef KD_HAVE_CPU_CAP_AVX512
#define KD__STUB_CAND_AVX512(c, name) \
  c[KD__CPU_CAP_AVX512] = (kd__stub_generic)kd__stub_##name##_AVX512;
#else
#define KD__STUB_CAND_AVX512(c, name)
#endif

#define KD_DEFINE_STUB(sname)                                          \
  static void kd__stub_candidates_##sname(kd__stub_generic *c) {       \
    KD__STUB_CAND_DEFAULT(c, sname)                                    \
    KD__STUB_CAND_AVX2(c, sname)                                       \
    KD__STUB_CAND_AVX512(c, sname)                                     \
  }                                                                    \
  kd__stub kd__stub_##sname = {.name = #sname, .candidates = kd__stub_candidates_##sname}

/* kd__stub_<name>_<CAP>: KD_CPU_CAP is expanded (it is an argument of
 * KD__STUB_SYM not next to ##) before KD__STUB_PASTE pastes it. */
#define KD__STUB_PASTE(a, b) a##b
#define KD__STUB_SYM(name, cap) KD__STUB_PASTE(kd__stub_##name##_, cap)

#ifdef KD_CPU_CAP
#define KD_REGISTER_STUB(name, fn) \
  kd__stub_fn_##name *const KD__STUB_SYM(name, KD_CPU_CAP) = (fn)
#else
#define KD_REGISTER_STUB(name, fn) \
  _Static_assert(0, "KD_REGISTER_STUB belongs in ops/cpu/*.c (compiled with -DKD_CPU_CAP=...)")
#endif

/* The stub's kernel, typed; the first use picks it. */
#define KD_STUB(name) ((kd__stub_fn_##name *)kd__stub_get(&kd__stub_##name))

KD_EXTERN_C_END

#endif
