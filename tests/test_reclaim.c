/*
 * test_reclaim.c: safe memory reclamation (src/dispatch/reclaim.c).
 *
 * Single-thread semantics (retire, reclaim, nesting, callbacks that retire,
 * shutdown), cross-thread blocking and thread exit, and a stress test: reader
 * threads dereference a shared block while a writer swaps and retires it; a
 * freed block has its magic overwritten before free(), so an early free shows
 * up as a bad magic even without ASan (and as a race under TSan).
 */
#include <pthread.h>
#include <sched.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "kd_test.h"

#include "dispatch/reclaim.h"

/* ---- helpers --------------------------------------------------------------- */

/* kd__retire takes the node from the retired object; these tests retire
 * plain pointers, so each gets a node of its own, freed after the callback. */
typedef struct retired_ptr {
  kd__retire_node node;
  void (*fn)(void *);
  void *ptr;
} retired_ptr;
static void run_retired_ptr(void *p) {
  retired_ptr *r = p;
  r->fn(r->ptr);
  free(r);
}
static void retire(void (*fn)(void *), void *ptr) {
  retired_ptr *r = malloc(sizeof *r);
  assert_non_null(r);
  r->fn = fn;
  r->ptr = ptr;
  kd__retire(&r->node, run_retired_ptr, r);
}

static _Atomic size_t g_freed;

static void count_cb(void *p) {
  int *n = p;
  (*n)++;
  atomic_fetch_add(&g_freed, 1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A two-party handshake: wait_phase spins (yielding) until the phase is n. */
static _Atomic int g_phase;
static void set_phase(int n) {
  atomic_store(&g_phase, n);
}
static void wait_phase(int n) {
  while (atomic_load(&g_phase) != n) sched_yield();
}

static int setup(void **state) {
  (void)state;
  kd__read_exit(0); /* a failed test may have left a call */
  kd__reclaim_shutdown(); /* start every test from an empty list */
  atomic_store(&g_freed, 0);
  set_phase(0);
  return 0;
}

/* ---- single thread ----------------------------------------------------------- */

static void test_mode(void **state) {
  (void)state;
  assert_int_equal(kd__read_enter(), 0); /* registers this thread, fixes the mode */
  assert_true(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST) != 0);
  kd__read_exit(0);
  assert_true(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST) == 0);
  print_message("reclaim mode: %s\n", kd__reader_fence ? "fence" : "membarrier");
  assert_int_equal(kd__tls_reader.mode, kd__reader_fence ? KD__READ_FENCE : KD__READ_STORE);
  assert_true(__atomic_load_n(&kd__global_epoch, __ATOMIC_SEQ_CST) != 0);
#if KD__TSAN
  assert_true(kd__reader_fence);
#endif
}

static void test_retire_then_reclaim(void **state) {
  (void)state;
  int n = 0;
  retire(count_cb, &n);
  assert_int_equal(n, 0); /* never synchronously */
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(n, 1);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(n, 1);
}

static void test_not_freed_inside_call(void **state) {
  (void)state;
  int n = 0;
  (void)kd__read_enter(); /* outermost: kd__read_exit(0) */
  assert_int_not_equal(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST), 0);
  retire(count_cb, &n);
  assert_int_equal(kd__reclaim(false), 1);
  assert_int_equal(kd__reclaim(false), 1);
  assert_int_equal(n, 0);
  kd__read_exit(0);
  assert_int_equal(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST), 0);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(n, 1);
}

static void test_nesting(void **state) {
  (void)state;
  int n = 0;
  uint64_t r1 = kd__read_enter();
  uint64_t e = __atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST);
  uint64_t r2 = kd__read_enter();
  uint64_t r3 = kd__read_enter();
  assert_int_equal(r1, 0); /* only the outermost exit clears the epoch */
  assert_true(r2 == e && r3 == e);
  assert_true(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST) == e); /* inner enters keep it */
  retire(count_cb, &n);
  kd__read_exit(r3);
  kd__read_exit(r2);
  assert_true(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST) == e);
  assert_int_equal(kd__reclaim(false), 1);
  assert_int_equal(n, 0);
  kd__read_exit(r1);
  assert_true(__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_SEQ_CST) == 0);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(n, 1);
}

enum { MANY = 1000 };

static void test_callbacks_once(void **state) {
  (void)state;
  static int counts[MANY];
  memset(counts, 0, sizeof counts);
  for (int i = 0; i < MANY; i++) {
    retire(count_cb, &counts[i]);
    if (i % 7 == 0) kd__reclaim(false);
  }
  assert_int_equal(kd__reclaim(true), 0);
  for (int i = 0; i < MANY; i++) assert_int_equal(counts[i], 1);
  assert_int_equal(atomic_load(&g_freed), MANY);
  assert_int_equal(kd__reclaim(true), 0);
  for (int i = 0; i < MANY; i++) assert_int_equal(counts[i], 1);
}

/* More retired above the threshold than any reader blocks: reclaimed on the
 * way without anyone calling kd__reclaim. */
static void test_threshold_reclaims(void **state) {
  (void)state;
  static int counts[MANY];
  memset(counts, 0, sizeof counts);
  for (int i = 0; i < MANY; i++) retire(count_cb, &counts[i]);
  assert_true(atomic_load(&g_freed) >= MANY - 130);
  kd__reclaim(true);
}

/* A chain: each callback retires the next link. */
typedef struct chain_link {
  int freed;
  struct chain_link *next;
} chain_link;

static void chain_cb(void *p) {
  chain_link *l = p;
  l->freed++;
  if (l->next) retire(chain_cb, l->next);
  if (l->next) kd__reclaim(false); /* allowed from a callback too */
}

static void test_retire_from_callback(void **state) {
  (void)state;
  enum { N = 100 };
  static chain_link links[N];
  for (int i = 0; i < N; i++) links[i] = (chain_link){0, i + 1 < N ? &links[i + 1] : NULL};
  retire(chain_cb, &links[0]);
  assert_int_equal(kd__reclaim(true), 0);
  for (int i = 0; i < N; i++) assert_int_equal(links[i].freed, 1);
}

static void test_wait_inside_call_returns(void **state) {
  (void)state;
  int a = 0, b = 0;
  (void)kd__read_enter(); /* outermost: kd__read_exit(0) */
  retire(count_cb, &a);
  retire(count_cb, &b);
  /* Documented misuse: must not hang; what this call holds stays. */
  assert_int_equal(kd__reclaim(true), 2);
  assert_int_equal(a + b, 0);
  kd__read_exit(0);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(a + b, 2);
}

static void test_shutdown_frees_all(void **state) {
  (void)state;
  int n = 0;
  (void)kd__read_enter(); /* outermost: kd__read_exit(0) */
  retire(count_cb, &n);
  kd__reclaim_shutdown();
  assert_int_equal(n, 1);
  kd__read_exit(0);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(n, 1);
}

/* ---- other threads ----------------------------------------------------------- */

/* Phase 1: inside a call; waits for phase 2, leaves the call, sets 3. */
static void *hold_call(void *arg) {
  (void)arg;
  (void)kd__read_enter(); /* outermost: kd__read_exit(0) */
  set_phase(1);
  wait_phase(2);
  kd__read_exit(0);
  set_phase(3);
  return NULL;
}

/* One holder thread at a time; the teardown releases it should a test fail
 * halfway (else every later kd__reclaim(true) would wait on it). */
static pthread_t g_holder;
static bool g_holder_live;

static void start_holder(void) {
  assert_int_equal(pthread_create(&g_holder, NULL, hold_call, NULL), 0);
  g_holder_live = true;
  wait_phase(1);
}

static void join_holder(void) {
  if (!g_holder_live) return;
  g_holder_live = false;
  set_phase(2);
  assert_int_equal(pthread_join(g_holder, NULL), 0);
}

static int teardown(void **state) {
  (void)state;
  join_holder();
  kd__read_exit(0);
  return 0;
}

static void test_other_thread_blocks(void **state) {
  (void)state;
  int n = 0;
  start_holder();
  retire(count_cb, &n);
  assert_int_equal(kd__reclaim(false), 1);
  assert_int_equal(n, 0);
  set_phase(2);
  assert_int_equal(kd__reclaim(true), 0); /* waits for the other call */
  assert_int_equal(n, 1);
  join_holder();
}

/* Retired before this thread's call began, blocked by another thread: a
 * kd__reclaim(true) from inside our call frees it once the other call ends,
 * and skips what our own call may still see. */
static void test_wait_inside_call_frees_older(void **state) {
  (void)state;
  int older = 0, mine = 0;
  start_holder();
  retire(count_cb, &older);
  assert_int_equal(kd__reclaim(false), 1); /* bumps the epoch */
  (void)kd__read_enter(); /* later than `older` */
  retire(count_cb, &mine);
  set_phase(2);
  assert_int_equal(kd__reclaim(true), 1);
  assert_int_equal(older, 1);
  assert_int_equal(mine, 0);
  kd__read_exit(0);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(mine, 1);
  join_holder();
}

static void *exit_inside_call(void *arg) {
  (void)arg;
  (void)kd__read_enter();
  (void)kd__read_enter();
  return NULL; /* never leaves: the thread-exit hook must unregister it */
}

static void *exit_outside_call(void *arg) {
  (void)arg;
  (void)kd__read_enter(); /* outermost: kd__read_exit(0) */
  kd__read_exit(0);
  return NULL;
}

static void test_thread_exit_unregisters(void **state) {
  (void)state;
  for (int i = 0; i < 8; i++) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, i % 2 ? exit_inside_call : exit_outside_call, NULL),
                     0);
    assert_int_equal(pthread_join(t, NULL), 0);
  }
  int n = 0;
  retire(count_cb, &n);
  assert_int_equal(kd__reclaim(false), 0);
  assert_int_equal(n, 1);
}

/* fork() while another thread is inside a call: the child drops that
 * thread's record (it has no such thread), so its reclaim is not blocked. */
static void test_fork_child_drops_other_readers(void **state) {
  (void)state;
  int n = 0;
  start_holder();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(10); /* a child that waits forever fails instead */
    (void)kd__read_enter(); /* outermost: kd__read_exit(0) */
    kd__read_exit(0);
    retire(count_cb, &n);
    _exit(kd__reclaim(true) == 0 && n == 1 ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  retire(count_cb, &n); /* the parent still sees the other call */
  assert_int_equal(kd__reclaim(false), 1);
  set_phase(2);
  assert_int_equal(kd__reclaim(true), 0);
  assert_int_equal(n, 1);
  join_holder();
}

/* ---- stress -------------------------------------------------------------------- */

#define LIVE 0x4c495645c0ffee11ULL
#define DEAD 0xdeaddeaddeaddeadULL

typedef struct block {
  uint64_t magic;
  uint64_t seq;
  uint64_t payload[6];
} block;

static _Atomic(block *) g_shared;
static _Atomic bool g_stop;
static _Atomic size_t g_bad;
static _Atomic size_t g_reads;
static _Atomic size_t g_block_frees;
static _Atomic int g_started;

static block *new_block(uint64_t seq) {
  block *b = malloc(sizeof *b);
  assert_non_null(b);
  b->magic = LIVE;
  b->seq = seq;
  for (int i = 0; i < 6; i++) b->payload[i] = seq * 7 + (uint64_t)i;
  return b;
}

static void free_block(void *p) {
  block *b = p;
  b->magic = DEAD; /* a reader still holding it sees this */
  b->seq = ~b->seq;
  free(b);
  atomic_fetch_add_explicit(&g_block_frees, 1, memory_order_relaxed);
}

/* One call: load the shared block and check it; returns its sequence number. */
static uint64_t read_once(bool nest) {
  uint64_t r1 = kd__read_enter();
  block *b = atomic_load_explicit(&g_shared, memory_order_acquire);
  uint64_t r2 = nest ? kd__read_enter() : 0;
  uint64_t seq = b->seq;
  bool ok = b->magic == LIVE;
  for (int i = 0; i < 6; i++) ok &= b->payload[i] == seq * 7 + (uint64_t)i;
  if (nest) kd__read_exit(r2);
  ok &= b->magic == LIVE;
  kd__read_exit(r1);
  if (!ok) atomic_fetch_add(&g_bad, 1);
  return seq;
}

static void *reader_main(void *arg) {
  (void)arg;
  uint64_t last = 0;
  size_t n = 0;
  atomic_fetch_add(&g_started, 1);
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    uint64_t seq = read_once(n % 16 == 0);
    if (seq < last) atomic_fetch_add(&g_bad, 1); /* acquire: never goes back */
    last = seq;
    n++;
  }
  atomic_fetch_add(&g_reads, n);
  return NULL;
}

/* Short-lived readers: registration and thread-exit unregistration racing
 * with the writer's scans. Every third exits from inside a call. */
static void *short_reader(void *arg) {
  for (int i = 0; i < 50; i++) read_once(false);
  if (arg) (void)kd__read_enter();
  return NULL;
}

static void *churn_main(void *arg) {
  (void)arg;
  size_t k = 0;
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    pthread_t t;
    if (pthread_create(&t, NULL, short_reader, k % 3 == 0 ? &k : NULL) != 0) break;
    pthread_join(t, NULL);
    k++;
  }
  return NULL;
}

static void test_stress(void **state) {
  (void)state;
  enum { READERS = 3, SWAPS = 20000 };
  const double budget_s = 1.0; /* the writer stops at SWAPS or here */
  atomic_store(&g_shared, new_block(0));
  atomic_store(&g_stop, false);
  atomic_store(&g_bad, 0);
  atomic_store(&g_reads, 0);
  atomic_store(&g_block_frees, 0);
  atomic_store(&g_started, 0);

  pthread_t readers[READERS], churn;
  for (int i = 0; i < READERS; i++)
    assert_int_equal(pthread_create(&readers[i], NULL, reader_main, NULL), 0);
  assert_int_equal(pthread_create(&churn, NULL, churn_main, NULL), 0);

  while (atomic_load(&g_started) < READERS) sched_yield();
  double t0 = now_s();
  size_t swaps = 0;
  while (swaps < SWAPS) {
    block *old = atomic_exchange_explicit(&g_shared, new_block(swaps + 1), memory_order_acq_rel);
    retire(free_block, old);
    swaps++;
    if (swaps % 32 == 0) {
      kd__reclaim(false);
      if (now_s() - t0 > budget_s) break;
    }
  }
  double t1 = now_s();
  atomic_store(&g_stop, true);
  for (int i = 0; i < READERS; i++) assert_int_equal(pthread_join(readers[i], NULL), 0);
  assert_int_equal(pthread_join(churn, NULL), 0);

  retire(free_block, atomic_exchange(&g_shared, NULL));
  assert_int_equal(kd__reclaim(true), 0);
  print_message("stress (%s): %zu swaps in %.2f s, %zu reads, %zu frees\n",
                kd__reader_fence ? "fence" : "membarrier", swaps, t1 - t0,
                atomic_load(&g_reads), atomic_load(&g_block_frees));
  assert_int_equal(atomic_load(&g_bad), 0);
  assert_int_equal(atomic_load(&g_block_frees), swaps + 1);
  assert_true(swaps >= 1000);
  assert_true(atomic_load(&g_reads) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_mode, setup, teardown),
      cmocka_unit_test_setup_teardown(test_retire_then_reclaim, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_freed_inside_call, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nesting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_callbacks_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threshold_reclaims, setup, teardown),
      cmocka_unit_test_setup_teardown(test_retire_from_callback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wait_inside_call_returns, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shutdown_frees_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_other_thread_blocks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wait_inside_call_frees_older, setup, teardown),
      cmocka_unit_test_setup_teardown(test_thread_exit_unregisters, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fork_child_drops_other_readers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stress, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
