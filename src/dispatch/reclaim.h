/*
 * reclaim.h: safe memory reclamation for the lock-free call path.
 *
 * Calls read dispatch tables without a lock while registration swaps their
 * entries. A swapped-out entry (and a functor's state, a closure's data) may
 * still be in use by a call that loaded it just before the swap, so it is
 * not freed at once: it is *retired*, and freed once every call that could
 * have seen it has finished.
 *
 * Readers (calls) bracket their reads with kd__read_enter / kd__read_exit:
 * a thread-local epoch store on the way in and out, no fence, no shared
 * write, no nesting counter. The writer side pays instead: kd__reclaim
 * bumps a global epoch, issues an asymmetric barrier (Linux membarrier, private expedited), and
 * frees what every active reader has moved past. Where membarrier is not
 * available (or under ThreadSanitizer, which does not model it), readers add
 * a sequentially consistent fence after the store instead (a seq_cst
 * exchange on x86, where that is a full barrier, and under ThreadSanitizer,
 * which does not model fences). The mode is
 * fixed before the first reader registers; KD_RECLAIM_FENCE=1 in the
 * environment forces the fence mode. reclaim.c gives the ordering argument.
 *
 * The pointers that readers load inside a call must be loaded with
 * memory_order_acquire (and swapped with release or stronger).
 *
 * Nesting (a kernel that redispatches) is seen from the epoch itself: only
 * the outermost enter and exit change it.
 */
#ifndef KD_DISPATCH_RECLAIM_H
#define KD_DISPATCH_RECLAIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#define KD__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KD__TSAN 1
#endif
#endif
#ifndef KD__TSAN
#define KD__TSAN 0
#endif

/* One per thread that has called an operator; linked into a global list on
 * first use and unlinked when the thread exits. */
typedef struct kd__reader {
  _Atomic uint64_t epoch; /* 0 when not inside a call, else the epoch seen at
                           * the outermost entry (written by the owning thread) */
  uint8_t mode;           /* KD__READ_*: how this thread enters */
  struct kd__reader *next; /* global list, under the reclaim lock */
} kd__reader;

enum {
  KD__READ_UNREGISTERED = 0, /* first call on this thread: register first */
  KD__READ_STORE = 1,        /* membarrier mode: a plain store */
  KD__READ_FENCE = 2         /* fence mode: the store and a full barrier */
};

extern _Thread_local kd__reader kd__tls_reader __attribute__((tls_model("initial-exec")));
extern _Atomic uint64_t kd__global_epoch;
/* true: readers fence (no membarrier). Set once, under the reclaim lock,
 * before the first reader registers (and in a fork child before it runs). */
extern bool kd__reader_fence;

/* The outermost entry when this thread is not in the plain-store mode
 * (registers on first use, fences in fence mode). */
void kd__read_enter_slow(kd__reader *r);

/* UBSan's null check is off here: gcc tests the thread-local's address with
 * the flags of an add that the linker relaxes into a lea (initial-exec to
 * local-exec TLS in a static executable), so the check reads stale flags and
 * fires on valid code. The address of a thread-local is never null. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define KD__NO_SANITIZE_NULL __attribute__((no_sanitize("null")))
#endif
#endif
#ifndef KD__NO_SANITIZE_NULL
#define KD__NO_SANITIZE_NULL
#endif

/* Enters a read section; returns what kd__read_exit must restore. Nesting
 * needs no counter: a nested entry finds the epoch already set (not 0),
 * leaves it, and its exit stores the same value back; only the outermost
 * exit stores 0. */
KD__NO_SANITIZE_NULL static inline uint64_t kd__read_enter(void) {
  kd__reader *r = &kd__tls_reader;
  uint64_t old = atomic_load_explicit(&r->epoch, memory_order_relaxed); /* own store */
  if (old != 0) return old;
  if (__builtin_expect(r->mode != KD__READ_STORE, 0)) {
    kd__read_enter_slow(r);
    return 0;
  }
  uint64_t e = atomic_load_explicit(&kd__global_epoch, memory_order_acquire);
  atomic_store_explicit(&r->epoch, e, memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst); /* compiler barrier only */
  return 0;
}

KD__NO_SANITIZE_NULL static inline void kd__read_exit(uint64_t saved) {
  atomic_store_explicit(&kd__tls_reader.epoch, saved, memory_order_release);
}

/* Hands `ptr` to `fn` once no call that started before now is still running.
 * Never blocks; may reclaim older retired items on the way. Thread-safe. */
void kd__retire(void (*fn)(void *ptr), void *ptr);

/* Frees every retired item that no running call can still see. Returns the
 * number left waiting (0 when nothing is in flight elsewhere). Thread-safe;
 * callbacks run outside the lock and may retire more. With `wait`, yields
 * until every item retired before the call (and any retired by the callbacks
 * it ran) is freed. Must not be called with `wait` from inside a call on this
 * thread: it does not deadlock, but it skips the items this thread's own call
 * still holds, so they are not freed on return. */
size_t kd__reclaim(bool wait);

/* Frees every retired item now, whether or not a call may still see it.
 * For tests and teardown only, when no call can be running. */
void kd__reclaim_shutdown(void);

#endif
