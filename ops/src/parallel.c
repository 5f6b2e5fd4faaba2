/*
 * parallel.c: the thread pool behind kdk_parallel_for (parallel.h).
 *
 * One region runs at a time: a caller that finds the pool busy runs its range
 * serially instead of waiting. A region is posted under the pool mutex with
 * a new generation number; workers wake on the generation change, take
 * chunks from an atomic counter, and the last one to finish signals the
 * caller. Workers start on the first region that needs them and stay (they
 * are detached and sleep on a condition variable).
 */
#include "parallel.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include "kd/memory.h"

/* Upper bound on threads (caller included). */
#define KD_MAX_THREADS 256

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static atomic_int num_threads; /* 0 until threads_once ran */

static void init_num_threads(void) {
  int n = 0;
  const char *env = getenv("KD_NUM_THREADS");
  if (env && *env) {
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno == 0 && end && *end == '\0' && v > 0) n = v > KD_MAX_THREADS ? KD_MAX_THREADS : (int)v;
  }
  if (n <= 0) {
    long p = sysconf(_SC_NPROCESSORS_ONLN);
    n = p > 0 ? (p > KD_MAX_THREADS ? KD_MAX_THREADS : (int)p) : 1;
  }
  int expected = 0;
  /* kd_set_num_threads may have run first: keep its value. */
  atomic_compare_exchange_strong(&num_threads, &expected, n);
}

int kd_get_num_threads(void) {
  pthread_once(&threads_once, init_num_threads);
  return atomic_load_explicit(&num_threads, memory_order_relaxed);
}

kd_status kd_set_num_threads(int n) {
  if (n <= 0)
    return kd_set_error(KD_EINVAL, "kd_set_num_threads: expected a positive number of threads, got %d",
                        n);
  pthread_once(&threads_once, init_num_threads);
  atomic_store(&num_threads, n > KD_MAX_THREADS ? KD_MAX_THREADS : n);
  return KD_OK;
}

/* ---- The pool ---------------------------------------------------------------- */

typedef struct pool {
  pthread_mutex_t mu;        /* guards everything below except `next` */
  pthread_cond_t work_cv;    /* generation changed */
  pthread_cond_t done_cv;    /* active reached 0 */
  pthread_mutex_t region_mu; /* held by the thread running a region */
  int nworkers;              /* started so far */
  uint64_t generation;
  /* the current region */
  void (*fn)(void *ctx, int64_t b, int64_t e);
  void *ctx;
  int64_t begin, end, chunk, nchunks;
  int participants; /* workers 0..participants-1 take part */
  int active;       /* participants not yet done */
  atomic_llong next; /* next chunk index */
} pool;

static pool the_pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work_cv = PTHREAD_COND_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
    .region_mu = PTHREAD_MUTEX_INITIALIZER,
};

static _Thread_local bool in_region;

bool kdk_in_parallel_region(void) { return in_region; }

/* Takes chunks until none is left. fn, ctx and the bounds were read under
 * the mutex by the caller of this function. */
static void run_chunks(void (*fn)(void *, int64_t, int64_t), void *ctx, int64_t begin,
                       int64_t end, int64_t chunk, int64_t nchunks, atomic_llong *next) {
  for (;;) {
    long long k = atomic_fetch_add_explicit(next, 1, memory_order_relaxed);
    if (k >= nchunks) break;
    int64_t b = begin + (int64_t)k * chunk;
    int64_t e = end - b > chunk ? b + chunk : end;
    fn(ctx, b, e);
  }
}

typedef struct worker_arg {
  int index;
  uint64_t generation; /* the generation current when it was started */
} worker_arg;

static void *worker_main(void *p) {
  worker_arg a = *(worker_arg *)p;
  kd_host_free(p);
  in_region = true; /* workers never start nested regions */
  pool *pl = &the_pool;
  uint64_t seen = a.generation;
  pthread_mutex_lock(&pl->mu);
  for (;;) {
    while (pl->generation == seen) pthread_cond_wait(&pl->work_cv, &pl->mu);
    seen = pl->generation;
    if (a.index >= pl->participants) continue;
    void (*fn)(void *, int64_t, int64_t) = pl->fn;
    void *ctx = pl->ctx;
    int64_t begin = pl->begin, end = pl->end, chunk = pl->chunk, nchunks = pl->nchunks;
    pthread_mutex_unlock(&pl->mu);
    run_chunks(fn, ctx, begin, end, chunk, nchunks, &pl->next);
    pthread_mutex_lock(&pl->mu);
    if (--pl->active == 0) pthread_cond_signal(&pl->done_cv);
  }
  return NULL;
}

/* Starts workers until there are `want` (under pl->mu). Returns how many
 * there are (fewer when pthread_create fails). */
static int ensure_workers(pool *pl, int want) {
  while (pl->nworkers < want) {
    worker_arg *a = kd_host_malloc(sizeof *a);
    if (!a) break;
    a->index = pl->nworkers;
    a->generation = pl->generation;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = pthread_create(&th, &attr, worker_main, a);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      kd_host_free(a);
      break;
    }
    pl->nworkers++;
  }
  return pl->nworkers;
}

int kdk_parallel_chunks(int64_t begin, int64_t end, int64_t grain) {
  if (begin >= end) return 0;
  if (grain < 1) grain = 1;
  int64_t n = end - begin;
  int t = kd_get_num_threads();
  if (n < grain || t <= 1 || in_region) return 1;
  int64_t c = (n + grain - 1) / grain;
  return c < t ? (int)c : t;
}

void kdk_parallel_for(int64_t begin, int64_t end, int64_t grain,
                      void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx) {
  if (begin >= end) return;
  int nthreads = kdk_parallel_chunks(begin, end, grain);
  pool *pl = &the_pool;
  if (nthreads <= 1 || pthread_mutex_trylock(&pl->region_mu) != 0) {
    fn(ctx, begin, end);
    return;
  }
  pthread_mutex_lock(&pl->mu);
  int workers = ensure_workers(pl, nthreads - 1);
  if (workers < nthreads - 1) nthreads = workers + 1;
  int64_t n = end - begin;
  int64_t chunk = (n + nthreads - 1) / nthreads;
  pl->fn = fn;
  pl->ctx = ctx;
  pl->begin = begin;
  pl->end = end;
  pl->chunk = chunk;
  pl->nchunks = (n + chunk - 1) / chunk;
  pl->participants = nthreads - 1;
  pl->active = nthreads - 1;
  atomic_store_explicit(&pl->next, 0, memory_order_relaxed);
  pl->generation++;
  pthread_cond_broadcast(&pl->work_cv);
  int64_t nchunks = pl->nchunks;
  pthread_mutex_unlock(&pl->mu);

  in_region = true;
  run_chunks(fn, ctx, begin, end, chunk, nchunks, &pl->next);
  in_region = false;

  pthread_mutex_lock(&pl->mu);
  while (pl->active > 0) pthread_cond_wait(&pl->done_cv, &pl->mu);
  pthread_mutex_unlock(&pl->mu);
  pthread_mutex_unlock(&pl->region_mu);
}
