/*
 * stub.h: libkdops' side of dispatch stubs (public part: include/kdk/stub.h;
 * docs/CODEGEN.md, "Dispatch stubs"). Private to libkdops.
 *
 *   // include/kdk/stubs.h: the stub's loop type and the exported object
 *   typedef kd_status kdk_binary_fn(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1);
 *   KDK_DECLARE_STUB(add_stub, kdk_binary_fn);
 *   // a private header: the capability builds' pointers
 *   KD_DECLARE_STUB_CAPS(add_stub);
 *   // one ordinary .c file of ops/src or ops/native
 *   KD_DEFINE_STUB(add_stub);
 *   // ops/cpu/binary.c, compiled once per capability
 *   static kd_status add_kernel(kdk_iter *iter, const kd_scalar *alpha, const kd_scalar *p1) { ... }
 *   KD_REGISTER_STUB(add_stub, add_kernel);
 *   // impl: the loop for the iterator's device (NULL: KD_ENOKERNEL is set)
 *   kdk_binary_fn *fn = KD_ITER_STUB(add_stub, iter);
 *   return fn ? fn(iter, alpha, NULL) : KD_ENOKERNEL;
 *
 * Each capability build of an ops/cpu file defines the pointer
 * kdk__stub_<name>_<CAP> (CAP from -DKD_CPU_CAP=...). KD_DEFINE_STUB refers to
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
 * The first CPU use of a stub picks its kernel: the chosen capability's, or
 * the closest lower one's when that is NULL. Later uses are one acquire load.
 * The CPU lookup gives NULL (with KD_ENOKERNEL) only when no capability at or
 * below the chosen one has a kernel (register one for DEFAULT).
 */
#ifndef KD_OPS_STUB_H
#define KD_OPS_STUB_H

#include <stdatomic.h>
#include <stddef.h>

#include "kd/ops.h"
#include "kdk/stub.h"

KD_EXTERN_C_BEGIN

/* Capabilities, lowest first; kd_cpu_capability() names them. */
typedef enum kdk__cpu_cap {
  KDK__CPU_CAP_DEFAULT = 0,
  KDK__CPU_CAP_AVX2 = 1,
  KDK__CPU_CAP_AVX512 = 2,
  KDK__CPU_CAP_COUNT
} kdk__cpu_cap;
_Static_assert(KDK__CPU_CAP_COUNT == KDK_STUB_CPU_CAPS, "kdk/stub.h's KDK_STUB_CPU_CAPS");

/* The chosen capability (picked once per process, thread-safe). */
kdk__cpu_cap kdk__cpu_capability_get(void);

/* The best capability this processor supports among those built (ignores
 * KD_CPU_CAPABILITY). */
kdk__cpu_cap kdk__cpu_capability_best(void);

/* "default", "avx2", "avx512"; "invalid" otherwise. */
const char *kdk__cpu_capability_name(kdk__cpu_cap cap);

/* The kernel for `cap` among c[0..KDK__CPU_CAP_COUNT): c[cap], else the
 * closest lower non-NULL entry, else NULL. */
kdk_stub_fn kdk__stub_pick(const kdk_stub_fn *c, kdk__cpu_cap cap);

/* ---- The macros -------------------------------------------------------------- */

/* The capability builds' pointers of stub `name` (declared by
 * KDK_DECLARE_STUB in kdk/stubs.h). Hidden: libkdops-internal. */
#define KD_DECLARE_STUB_CAPS(name)                                           \
  extern kdk_stub_fn_##name *const kdk__stub_##name##_DEFAULT;                \
  extern kdk_stub_fn_##name *const kdk__stub_##name##_AVX2;                   \
  extern kdk_stub_fn_##name *const kdk__stub_##name##_AVX512

/* Per built capability: one assignment in the candidates function. */
#define KDK__STUB_CAND_DEFAULT(c, name) \
  c[KDK__CPU_CAP_DEFAULT] = (kdk_stub_fn)kdk__stub_##name##_DEFAULT;
#ifdef KD_HAVE_CPU_CAP_AVX2
#define KDK__STUB_CAND_AVX2(c, name) c[KDK__CPU_CAP_AVX2] = (kdk_stub_fn)kdk__stub_##name##_AVX2;
#else
#define KDK__STUB_CAND_AVX2(c, name)
#endif
#ifdef KD_HAVE_CPU_CAP_AVX512
#define KDK__STUB_CAND_AVX512(c, name) \
  c[KDK__CPU_CAP_AVX512] = (kdk_stub_fn)kdk__stub_##name##_AVX512;
#else
#define KDK__STUB_CAND_AVX512(c, name)
#endif

/* The exported stub object (kdk/stub.h) of `sname`. */
#define KD_DEFINE_STUB(sname)                                          \
  static void kdk__stub_candidates_##sname(kdk_stub_fn *c) {            \
    KDK__STUB_CAND_DEFAULT(c, sname)                                    \
    KDK__STUB_CAND_AVX2(c, sname)                                       \
    KDK__STUB_CAND_AVX512(c, sname)                                     \
  }                                                                    \
  KDK_API kdk_stub KDK_STUB_OBJECT(sname) = {.name = #sname,           \
                                             .candidates = kdk__stub_candidates_##sname}

/* kdk__stub_<name>_<CAP>: KD_CPU_CAP is expanded (it is an argument of
 * KDK__STUB_SYM not next to ##) before KDK__STUB_PASTE pastes it. */
#define KDK__STUB_PASTE(a, b) a##b
#define KDK__STUB_SYM(name, cap) KDK__STUB_PASTE(kdk__stub_##name##_, cap)

#ifdef KD_CPU_CAP
#define KD_REGISTER_STUB(name, fn) \
  kdk_stub_fn_##name *const KDK__STUB_SYM(name, KD_CPU_CAP) = (fn)
#else
#define KD_REGISTER_STUB(name, fn) \
  _Static_assert(0, "KD_REGISTER_STUB belongs in ops/cpu/*.c (compiled with -DKD_CPU_CAP=...)")
#endif

/* The stub's CPU kernel, typed (NULL with KD_ENOKERNEL when there is none);
 * the first use picks it. For tests and CPU-only code: impls use
 * KD_ITER_STUB / KDK_STUB_FOR with the device they run on. */
#define KD_STUB(name) KDK_STUB_FOR(name, KD_DEVICE_CPU, NULL)

/* The loop of stub `name` for iterator `it`'s device, typed; NULL with
 * KD_ENOKERNEL (naming it's operator, the stub and the device) when that
 * device has none. */
#define KD_ITER_STUB(name, it) KDK_STUB_FOR(name, kdk_iter_device(it).type, (it)->op)

KD_EXTERN_C_END

#endif
