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
 * write. The writer side pays instead: kd__reclaim bumps a global epoch,
 * issues an asymmetric barrier (Linux membarrier, private expedited), and
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
 * Nesting (a kernel that redispatches) is counted; only the outermost enter
 * and exit touch the epoch.
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
  _Atomic uint64_t epoch; /* 0 when not inside a call, else the epoch seen at entry */
  uint32_t depth;         /* nesting, touched only by the owning thread */
  bool registered;
  struct kd__reader *next; /* global list, under the reclaim lock */
} kd__reader;

extern _Thread_local kd__reader kd__tls_reader __attribute__((tls_model("initial-exec")));
extern _Atomic uint64_t kd__global_epoch;
/* true: readers fence (no membarrier). Set once, under the reclaim lock,
 * before the first reader registers; read only by registered readers. */
extern bool kd__reader_fence;

void kd__reader_register(kd__reader *r); /* slow path: first call on a thread */

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

KD__NO_SANITIZE_NULL static inline void kd__read_enter(void) {
  kd__reader *r = &kd__tls_reader;
  if (r->depth++ != 0) return;
  if (__builtin_expect(!r->registered, 0)) kd__reader_register(r);
  uint64_t e = atomic_load_explicit(&kd__global_epoch, memory_order_acquire);
  if (kd__reader_fence) {
#if KD__TSAN || defined(__x86_64__) || defined(__i386__)
    /* A locked instruction: a full barrier on x86 (cheaper than mfence). */
    atomic_exchange_explicit(&r->epoch, e, memory_order_seq_cst);
#else
    atomic_store_explicit(&r->epoch, e, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
#endif
  } else {
    atomic_store_explicit(&r->epoch, e, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst); /* compiler barrier only */
  }
}

KD__NO_SANITIZE_NULL static inline void kd__read_exit(void) {
  kd__reader *r = &kd__tls_reader;
  if (--r->depth != 0) return;
  atomic_store_explicit(&r->epoch, 0, memory_order_release);
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
