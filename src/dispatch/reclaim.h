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

/* kd__reader (one per thread that has called an operator, linked into a
 * global list on first use and unlinked when the thread exits),
 * kd__tls_reader and kd__global_epoch are declared in kd/detail/dispatch_abi.h:
 * the inline typed call (kd__call_unboxed_inline) enters and leaves its read
 * section in the caller's code. Their fields are read and written with the
 * __atomic builtins only. */
#include "kd/dispatch.h"

enum {
  KD__READ_UNREGISTERED = 0, /* first call on this thread: register first */
  KD__READ_STORE = 1,        /* membarrier mode: a plain store */
  KD__READ_FENCE = 2         /* fence mode: the store and a full barrier */
};

_Static_assert(KD__READ_STORE == KD__READER_PLAIN,
               "the inline typed call's test of the plain-store mode "
               "(kd/detail/dispatch_abi.h)");
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
  uint64_t old = __atomic_load_n(&r->epoch, __ATOMIC_RELAXED); /* own store */
  if (old != 0) return old;
  if (__builtin_expect(r->mode != KD__READ_STORE, 0)) {
    kd__read_enter_slow(r);
    return 0;
  }
  uint64_t e = __atomic_load_n(&kd__global_epoch, __ATOMIC_ACQUIRE);
  __atomic_store_n(&r->epoch, e, __ATOMIC_RELAXED);
  atomic_signal_fence(memory_order_seq_cst); /* compiler barrier only */
  return 0;
}

KD__NO_SANITIZE_NULL static inline void kd__read_exit(uint64_t saved) {
  __atomic_store_n(&kd__tls_reader.epoch, saved, __ATOMIC_RELEASE);
}

/* The record of one retired object. It lives inside the object it retires
 * (or anything else that lives until the callback runs), so that retiring
 * never allocates and cannot fail: what retiring needs is allocated with
 * the object, before the object is published. */
typedef struct kd__retire_node {
  struct kd__retire_node *next;
  void (*fn)(void *ptr);
  void *ptr;
  uint64_t epoch;
} kd__retire_node;

/* Hands `ptr` to `fn` once no call that started before now is still running,
 * using `node` (not in use by another retire) for the bookkeeping; `fn` may
 * free the memory of `node`. Never blocks, never allocates; may reclaim
 * older retired items on the way. Thread-safe. */
void kd__retire(kd__retire_node *node, void (*fn)(void *ptr), void *ptr);

/* Frees every retired item that no running call can still see. Returns the
 * number left waiting (0 when nothing is in flight elsewhere). Thread-safe;
 * callbacks run outside the lock and may retire more. With `wait`, yields
 * until every item retired before the call (and any retired by the callbacks
 * it ran) is freed. Must not be called with `wait` from inside a call on this
 * thread: it does not deadlock, but it skips the items this thread's own call
 * still holds, so they are not freed on return. */
size_t kd__reclaim(bool wait);

/* A grace period: returns once every operator call that was running on
 * another thread when it was called has finished (and every item retired
 * before it is freed, so destroy callbacks have run). Blocks (yields);
 * must not be called from inside a call on this thread (it would skip that
 * call). kd_backend_unload uses it before it dlcloses a plugin. */
void kd__synchronize(void);

/* Frees every retired item now, whether or not a call may still see it.
 * For tests and teardown only, when no call can be running. */
void kd__reclaim_shutdown(void);

#endif
