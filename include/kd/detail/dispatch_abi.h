/*
 * kd/detail/dispatch_abi.h: ABI, not API.
 *
 * Included by kd/dispatch.h for its inline functions; do not include or use
 * directly; a change here changes the soname (kd/version.h).
 *
 * kd_call_unboxed(op, args, rets), written with its parentheses, is a macro
 * for kd__call_unboxed_inline below (gcc and clang; kd/dispatch.h documents
 * the call). The inline call copies the reader protocol of
 * src/dispatch/reclaim.c into the caller's code, so a change to kd__reader,
 * to the meaning of its fields or to kd__call_unboxed_in_section changes the
 * library's soname. kd__tls_reader, kd__global_epoch and
 * kd__call_unboxed_in_section are the only kd__ symbols libkdispatch exports
 * (the test test_exports checks it).
 */
#ifndef KD_DETAIL_DISPATCH_ABI_H
#define KD_DETAIL_DISPATCH_ABI_H

#ifndef KD_DISPATCH_H
#  error "kd/detail/dispatch_abi.h is included by kd/dispatch.h only"
#endif

/* A calling thread's reader record (the library's; one per thread). */
typedef struct kd__reader {
  uint64_t epoch;          /* 0 outside calls; else the global epoch seen at the
                            * outermost entry. Written by its own thread only,
                            * read by reclaim passes: __atomic builtins only */
  uint8_t mode;            /* KD__READER_PLAIN: entered by a plain store, as
                            * below; anything else takes the exported call */
  struct kd__reader *next; /* the library's list of readers */
} kd__reader;

#define KD__READER_PLAIN 1

#if defined(__GNUC__) || defined(__clang__)
#  ifdef __cplusplus
#    define KD__THREAD_LOCAL thread_local
#  else
#    define KD__THREAD_LOCAL _Thread_local
#  endif
/* This thread's record, and the epoch the reclaimer advances. */
KD_API extern KD__THREAD_LOCAL kd__reader kd__tls_reader
    __attribute__((tls_model("initial-exec")));
KD_API extern uint64_t kd__global_epoch;
#endif

/* The part of a typed call inside the caller's read section: computes the
 * key set, finds the kernel, fills *call and calls the kernel with it (a tail
 * call where the kernel is a plain function). Same results and errors as
 * kd_call_unboxed; `call` is the caller's (uninitialised) storage, which the
 * kernel reads until it returns. Only for kd__call_unboxed_inline. */
KD_API kd_status kd__call_unboxed_in_section(kd_op *op, const kd_arg *args, kd_value *rets,
                                             kd_call *call);

#if (defined(__GNUC__) || defined(__clang__)) && !defined(KD_NO_INLINE_CALL)
/* UBSan's null check is off: gcc tests a thread-local's address with the
 * flags of an add that the linker relaxes into a lea in a static program, so
 * the check reads stale flags (see src/dispatch/reclaim.h). */
#  if defined(__has_attribute)
#    if __has_attribute(no_sanitize)
#      define KD__CALL_NO_SANITIZE_NULL __attribute__((no_sanitize("null")))
#    endif
#  endif
#  ifndef KD__CALL_NO_SANITIZE_NULL
#    define KD__CALL_NO_SANITIZE_NULL
#  endif

/* kd_call_unboxed, inline: enters the read section (an outermost call on a
 * thread in the plain-store mode; any other thread state takes the exported
 * call), calls, and leaves it (a nested call finds the epoch set and stores
 * back the same value). Ownership and errors as kd_call_unboxed. */
KD__CALL_NO_SANITIZE_NULL static inline kd_status
kd__call_unboxed_inline(kd_op *op, const kd_arg *args, kd_value *rets) {
  kd__reader *r = &kd__tls_reader;
  uint64_t saved = __atomic_load_n(&r->epoch, __ATOMIC_RELAXED);
  if (saved == 0) {
    if (__builtin_expect(r->mode != KD__READER_PLAIN, 0)) return (kd_call_unboxed)(op, args, rets);
    __atomic_store_n(&r->epoch, __atomic_load_n(&kd__global_epoch, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the reclaimer's membarrier orders the rest */
  }
  kd_call call;
  kd_status st = kd__call_unboxed_in_section(op, args, rets, &call);
  __atomic_store_n(&r->epoch, saved, __ATOMIC_RELEASE);
  return st;
}
#  define kd_call_unboxed(op, args, rets) kd__call_unboxed_inline(op, args, rets)
#endif

#endif /* KD_DETAIL_DISPATCH_ABI_H */
