/*
 * reclaim.c: epoch-based reclamation with an asymmetric (membarrier) fence.
 *
 * Why it is safe
 * --------------
 * Reader (kd__read_enter, a call, kd__read_exit), on thread R:
 *   e = load(global_epoch, acquire); store(R.epoch, e); [barrier B_R];
 *   p = load(slot, acquire); ... use *p ...; store(R.epoch, 0, release)
 * where B_R is a compiler barrier only (membarrier mode) or a seq_cst fence
 * (fence mode).
 * Writer: old = swap(slot, new); retire(old) records r = global_epoch under
 * the lock. Later a reclaim pass: g = ++global_epoch (seq_cst RMW, under the
 * lock); asymmetric barrier B_W; load every R.epoch (acquire) under the lock;
 * frees `old` iff r < g and every epoch e it read is 0 or e > r.
 *
 * Take any reader R and the epoch value v the pass read for it.
 *
 * 1. v = e > r. R's call loaded e from global_epoch. Every write to
 *    global_epoch is an RMW done under the lock, and the retire that read r
 *    held the same lock, so the increment that produced r + 1 <= e came after
 *    that retire: swap -> retire -> bump(r+1) in happens-before, and R's
 *    acquire load of e (in the release sequence of that bump) synchronizes
 *    with it. R's later load of the slot therefore sees `new` (or later): this
 *    call cannot hold `old`. Earlier calls of R ended with a release store of
 *    0 that the value e follows in modification order (same-thread stores
 *    extend a release sequence, C11 5.1.2.4p10), so their accesses happen
 *    before the free as well.
 * 2. v = 0 from an exit: release store / acquire load, so everything R's call
 *    did with `old` happens before the free.
 * 3. v = 0 although R is inside a call: R's epoch store was not yet visible.
 *    - membarrier mode: MEMBARRIER_CMD_PRIVATE_EXPEDITED makes every running
 *      thread of the process execute a full barrier (threads not running get
 *      one from the scheduler) between the syscall's entry and its return,
 *      which are themselves full barriers. Let P be that point in R's
 *      program. Had R's epoch store preceded P, it would be visible to the
 *      loads after the syscall; so it follows P, and so does R's slot load
 *      (program order; the compiler barrier keeps the compiler from hoisting
 *      the load). The swap precedes B_W, so a load after P sees `new`.
 *    - fence mode: seq_cst fences on both sides (B_R after the store, B_W
 *      before the epoch loads; both are totally ordered in S). If B_R precedes
 *      B_W, the epoch load after B_W sees R's store or later (not this 0); so
 *      B_W precedes B_R, the swap happens before B_W, and R's slot load after
 *      B_R sees `new` (C++20 [atomics.order]p4, the store-buffering shape).
 *      On x86 the reader's store and B_R are one seq_cst exchange instead:
 *      a locked instruction, which the hardware makes a full barrier (C11
 *      alone promises the outcome only with the fence, which other targets
 *      use). ThreadSanitizer builds use the exchange on every target: TSan
 *      does not model fences, and the happens-before edges it checks are
 *      those of cases 1 and 2.
 * 4. v = e <= r: the item waits.
 * 5. R not in the list: it registers (under the lock) after the scan, so the
 *    swap happens before its first call.
 * Items retired after the bump get r >= g and wait for a later pass whose
 * barrier follows their swap (case 3 needs the swap to precede B_W).
 *
 * The reader's cost is a load of the global epoch and a plain store to its
 * own cache line; the writer pays a syscall per pass (IPIs to the CPUs
 * running the process).
 *
 * Mode selection: decided once, under the lock, before the first reader is
 * registered (a reader copies kd__reader_fence into its own `mode` when it
 * registers, under the lock), so no reader ever runs the plain-store path
 * without a working membarrier. A fork child that cannot re-register for
 * membarrier switches to the fence mode, and so does its one thread.
 * ThreadSanitizer does not model membarrier, so under it
 * the fence mode is forced; so is it by KD_RECLAIM_FENCE=1 in the
 * environment, or when MEMBARRIER_CMD_QUERY / _REGISTER_PRIVATE_EXPEDITED
 * fail. Should the expedited barrier ever fail later (ENOMEM), that pass
 * frees nothing.
 *
 * Threads: a reader record lives in the thread's TLS; it is linked into the
 * global list on first use and unlinked by a pthread key destructor at thread
 * exit (inside a call or not), before the TLS block goes away. The main
 * thread's record stays listed. After fork() the child keeps only the
 * forking thread's record and re-registers for membarrier.
 *
 * Callbacks run outside the lock, in retire order; they may retire more
 * (which never triggers a nested reclaim from inside a callback) and may call
 * kd__reclaim(false).
 */
#define _GNU_SOURCE /* syscall() */

#include "reclaim.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

KD_API _Thread_local kd__reader kd__tls_reader __attribute__((tls_model("initial-exec")));
KD_API uint64_t kd__global_epoch = 1;
bool kd__reader_fence = false;

/* Retired items form a FIFO list; epochs are taken under the lock, and every
 * bump is under the lock too, so epochs never decrease along the list and the
 * freeable items are a prefix. */
typedef kd__retire_node kd__retired;

enum { KD__RETIRE_THRESHOLD = 64 };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_inited;              /* under g_lock */
static pthread_key_t g_key;        /* thread-exit hook for reader records */
static kd__reader *g_readers;      /* under g_lock */
static kd__retired *g_head;        /* under g_lock */
static kd__retired **g_tail = &g_head;
static size_t g_count;             /* items in the list */
static size_t g_threshold = KD__RETIRE_THRESHOLD; /* auto-reclaim above this */

/* Set while this thread runs reclaim callbacks: no nested auto-reclaim, and
 * kd__reclaim(true) notices that its callbacks retired more. */
static _Thread_local bool t_in_callbacks;
static _Thread_local size_t t_retired_in_callbacks;

static void lock(void) {
  if (pthread_mutex_lock(&g_lock) != 0) abort();
}
static void unlock(void) {
  pthread_mutex_unlock(&g_lock);
}

/* ---- membarrier ---------------------------------------------------------- */

static bool membarrier_register(void) {
#if defined(__linux__) && defined(SYS_membarrier)
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0) return false;
  if (!(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
      !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
    return false;
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) != 0) return false;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0;
#else
  return false;
#endif
}

/* B_W of the argument above. False: no barrier was issued, free nothing. */
static bool writer_barrier(void) {
  if (kd__reader_fence) {
#if !KD__TSAN
    atomic_thread_fence(memory_order_seq_cst);
#endif
    return true;
  }
#if defined(__linux__) && defined(SYS_membarrier)
  for (int i = 0; i < 16; i++) {
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0) return true;
    if (errno != EINTR && errno != EAGAIN && errno != ENOMEM) break;
    sched_yield();
  }
#endif
  return false;
}

/* ---- reader records ------------------------------------------------------ */

static void unlink_reader_locked(kd__reader *r) {
  for (kd__reader **pp = &g_readers; *pp; pp = &(*pp)->next) {
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  }
  r->next = NULL;
  r->mode = KD__READ_UNREGISTERED;
  __atomic_store_n(&r->epoch, 0, __ATOMIC_RELEASE);
}

/* Key destructor: the thread is exiting (possibly from inside a call, in
 * which case its epoch is not 0; it is cleared here). */
static void reader_thread_exit(void *p) {
  lock();
  unlink_reader_locked(p);
  unlock();
}

static void atfork_prepare(void) {
  lock();
}
static void atfork_parent(void) {
  unlock();
}
static void atfork_child(void) {
  /* Only this thread survives: drop the other threads' records (their TLS is
   * gone with them) and re-register the new process for membarrier. */
  kd__reader *self = &kd__tls_reader;
  g_readers = NULL;
  if (!kd__reader_fence && !membarrier_register()) kd__reader_fence = true;
  if (self->mode != KD__READ_UNREGISTERED) {
    self->next = NULL;
    g_readers = self;
    self->mode = kd__reader_fence ? KD__READ_FENCE : KD__READ_STORE;
  }
  unlock();
}

static bool env_forces_fence(void) {
  const char *s = getenv("KD_RECLAIM_FENCE");
  return s && *s && strcmp(s, "0") != 0;
}

static void init_locked(void) {
  if (g_inited) return;
  g_inited = true;
  if (pthread_key_create(&g_key, reader_thread_exit) != 0) {
    fputs("kdispatch: reclaim: pthread_key_create failed\n", stderr);
    abort();
  }
  bool fence = KD__TSAN || env_forces_fence();
  if (!fence) fence = !membarrier_register();
  kd__reader_fence = fence;
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void reader_register(kd__reader *r) {
  lock();
  init_locked();
  if (r->mode == KD__READ_UNREGISTERED) {
    /* The key's value must be non-NULL for the destructor to run; set it
     * before linking so that a failure leaves nothing dangling. */
    if (pthread_setspecific(g_key, r) != 0) {
      unlock();
      fputs("kdispatch: reclaim: pthread_setspecific failed\n", stderr);
      abort();
    }
    __atomic_store_n(&r->epoch, 0, __ATOMIC_RELAXED);
    r->next = g_readers;
    g_readers = r;
    r->mode = kd__reader_fence ? KD__READ_FENCE : KD__READ_STORE;
  }
  unlock();
}

void kd__read_enter_slow(kd__reader *r) {
  if (r->mode == KD__READ_UNREGISTERED) reader_register(r);
  uint64_t e = __atomic_load_n(&kd__global_epoch, __ATOMIC_ACQUIRE);
  if (r->mode == KD__READ_FENCE) {
#if KD__TSAN || defined(__x86_64__) || defined(__i386__)
    /* A locked instruction: a full barrier on x86 (cheaper than mfence). */
    __atomic_exchange_n(&r->epoch, e, __ATOMIC_SEQ_CST);
#else
    __atomic_store_n(&r->epoch, e, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_seq_cst);
#endif
  } else {
    __atomic_store_n(&r->epoch, e, __ATOMIC_RELAXED);
    atomic_signal_fence(memory_order_seq_cst);
  }
}

/* ---- retire / reclaim ---------------------------------------------------- */

void kd__retire(kd__retire_node *it, void (*fn)(void *ptr), void *ptr) {
  it->next = NULL;
  it->fn = fn;
  it->ptr = ptr;
  if (t_in_callbacks) t_retired_in_callbacks++;
  lock();
  /* Relaxed is enough: every bump happens under this lock. */
  it->epoch = __atomic_load_n(&kd__global_epoch, __ATOMIC_RELAXED);
  *g_tail = it;
  g_tail = &it->next;
  bool run = ++g_count > g_threshold && !t_in_callbacks;
  unlock();
  if (run) kd__reclaim(false);
}

static void run_callbacks(kd__retired *list) {
  bool outer = t_in_callbacks;
  t_in_callbacks = true;
  while (list) {
    kd__retired *next = list->next;
    list->fn(list->ptr); /* may free the node */
    list = next;
  }
  t_in_callbacks = outer;
}

/* Detaches the prefix of items with epoch < limit. Under the lock. */
static kd__retired *detach_below_locked(uint64_t limit) {
  kd__retired *first = g_head, **pp = &g_head;
  while (*pp && (*pp)->epoch < limit) {
    pp = &(*pp)->next;
    g_count--;
  }
  if (pp == &g_head) return NULL;
  g_head = *pp;
  *pp = NULL;
  if (g_head == NULL) g_tail = &g_head;
  return first;
}

/* One pass: bump, barrier, scan, free. Sets *g_out to the bumped epoch. */
static size_t reclaim_pass(uint64_t *g_out) {
  lock();
  init_locked();
  uint64_t g = __atomic_fetch_add(&kd__global_epoch, 1, __ATOMIC_SEQ_CST) + 1;
  unlock();
  bool ok = writer_barrier();
  lock();
  uint64_t limit = 0;
  if (ok) {
    limit = g; /* items retired after the bump wait for a later barrier */
    for (kd__reader *r = g_readers; r; r = r->next) {
      uint64_t e = __atomic_load_n(&r->epoch, KD__TSAN ? __ATOMIC_SEQ_CST : __ATOMIC_ACQUIRE);
      if (e != 0 && e <= limit) limit = e; /* free r iff r < e for all e != 0 */
    }
  }
  kd__retired *list = detach_below_locked(limit);
  size_t left = g_count;
  g_threshold = left * 2 > KD__RETIRE_THRESHOLD ? left * 2 : KD__RETIRE_THRESHOLD;
  unlock();
  run_callbacks(list);
  *g_out = g;
  return left;
}

size_t kd__reclaim(bool wait) {
  uint64_t g;
  size_t before = t_retired_in_callbacks;
  size_t left = reclaim_pass(&g);
  if (!wait) return left;
  /* Wait for everything retired before now (epoch < target), and for what
   * the callbacks we run retire in turn. */
  uint64_t target = g;
  for (;;) {
    if (t_retired_in_callbacks != before)
      target = __atomic_load_n(&kd__global_epoch, __ATOMIC_RELAXED) + 1;
    /* Items this thread's own call may see never clear while we wait. */
    kd__reader *self = &kd__tls_reader;
    uint64_t mine = __atomic_load_n(&self->epoch, __ATOMIC_RELAXED); /* 0: not in a call */
    uint64_t limit = mine != 0 && mine < target ? mine : target;
    lock();
    bool pending = g_head != NULL && g_head->epoch < limit;
    left = g_count;
    unlock();
    if (!pending) return left;
    sched_yield();
    before = t_retired_in_callbacks;
    reclaim_pass(&g);
  }
}

void kd__reclaim_shutdown(void) {
  for (;;) {
    lock();
    kd__retired *list = g_head;
    g_head = NULL;
    g_tail = &g_head;
    g_count = 0;
    g_threshold = KD__RETIRE_THRESHOLD;
    unlock();
    if (list == NULL) return;
    run_callbacks(list);
  }
}

/* ---- grace period ---------------------------------------------------------- */

static void sync_done(void *p) { __atomic_store_n((bool *)p, true, __ATOMIC_RELEASE); }

/* A sentinel retired now carries the current epoch e; it is freed once every
 * reader is outside a call or entered one after a bump past e, which is
 * exactly "every call running now has finished" (cases 1-3 above, with the
 * sentinel standing for a swapped-out entry). */
void kd__synchronize(void) {
  bool done = false;
  kd__retire_node node;
  kd__retire(&node, sync_done, &done);
  while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
    kd__reclaim(true);
    if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) sched_yield();
  }
}
