/*
 * kd_oom.h: allocation-failure injection for the tests, through the public
 * host allocator (kd/memory.h). kd_oom_install() installs an allocator that
 * delegates to the C library and counts the allocations (malloc, calloc,
 * realloc) of libkdispatch, libkdops and the kd tool; kd_oom_arm(n) makes the
 * n-th allocation from then on fail, once (later ones succeed again, as a
 * transient failure would). kd_oom_fired() says whether it did: a workload
 * that ran with allocation n armed and did not fire it made fewer than n
 * allocations, so every failure point has been tried.
 *
 * The allocator wraps the C library's, so blocks made before it was
 * installed are freed correctly through it (the rule of kd/memory.h).
 */
#ifndef KD_OOM_H
#define KD_OOM_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd/kd.h"

static _Atomic long kd_oom_countdown_; /* 0: disarmed; n: fail the n-th from now */
static _Atomic long kd_oom_calls_;     /* allocations counted since kd_oom_arm */
static _Atomic int kd_oom_fired_;

static inline bool kd_oom_fail_now_(void) {
  atomic_fetch_add(&kd_oom_calls_, 1);
  long c = atomic_load(&kd_oom_countdown_);
  while (c > 0) {
    if (atomic_compare_exchange_weak(&kd_oom_countdown_, &c, c - 1)) {
      if (c == 1) {
        atomic_store(&kd_oom_fired_, 1);
        return true;
      }
      return false;
    }
  }
  return false;
}

static void *kd_oom_malloc_(void *ctx, size_t n) {
  (void)ctx;
  return kd_oom_fail_now_() ? NULL : malloc(n);
}
static void *kd_oom_calloc_(void *ctx, size_t count, size_t size) {
  (void)ctx;
  return kd_oom_fail_now_() ? NULL : calloc(count, size);
}
static void *kd_oom_realloc_(void *ctx, void *p, size_t n) {
  (void)ctx;
  return kd_oom_fail_now_() ? NULL : realloc(p, n);
}
static void kd_oom_free_(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

static inline void kd_oom_install(void) {
  kd_host_allocator a = {KD_HOST_ALLOCATOR_API_VERSION, kd_oom_malloc_, kd_oom_calloc_,
                         kd_oom_realloc_, kd_oom_free_, NULL};
  if (kd_host_allocator_set(&a) != KD_OK) abort();
}

static inline void kd_oom_uninstall(void) { kd_host_allocator_set(NULL); }

/* Fails the n-th allocation from now (n >= 1); 0 disarms. */
static inline void kd_oom_arm(long n) {
  atomic_store(&kd_oom_fired_, 0);
  atomic_store(&kd_oom_calls_, 0);
  atomic_store(&kd_oom_countdown_, n);
}
static inline void kd_oom_disarm(void) { atomic_store(&kd_oom_countdown_, 0); }
static inline bool kd_oom_fired(void) { return atomic_load(&kd_oom_fired_) != 0; }
static inline long kd_oom_calls(void) { return atomic_load(&kd_oom_calls_); }

/* ---- The registry as text, to compare before and after a failure ---------- */

typedef struct kd_oom_buf {
  char *data;
  size_t len, cap;
} kd_oom_buf;

static inline void kd_oom_buf_put(kd_oom_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *d = realloc(b->data, cap);
    if (!d) abort();
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static inline void kd_oom_put_dump(kd_oom_buf *b, const kd_op *op,
                                   size_t (*dump)(const kd_op *, char *, size_t)) {
  size_t n = dump(op, NULL, 0);
  char *tmp = malloc(n + 1);
  if (!tmp) abort();
  dump(op, tmp, n + 1);
  kd_oom_buf_put(b, tmp, n);
  free(tmp);
}

static int kd_oom_snapshot_op_(kd_op *op, void *user) {
  kd_oom_put_dump(user, op, kd_op_dump);
  kd_oom_put_dump(user, op, kd_op_dump_table);
  return 0;
}

/* Every live operator's registrations (kd_op_dump) and computed table
 * (kd_op_dump_table), sorted by name, as `kd dump` shows them, followed by
 * the verdict of kd_dispatcher_check. Taken with injection disarmed (the
 * caller's countdown is kept). The caller frees the result with free(). */
static inline char *kd_oom_snapshot(void) {
  long saved = atomic_exchange(&kd_oom_countdown_, 0);
  kd_oom_buf b = {0};
  kd_oom_buf_put(&b, "", 0);
  if (kd_ops_foreach(kd_oom_snapshot_op_, &b) != 0) abort();
  kd_status st = kd_dispatcher_check();
  char line[600];
  int n = snprintf(line, sizeof line, "check: %s %s\n", kd_status_name(st),
                   st ? kd_last_error() : "");
  kd_oom_buf_put(&b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  atomic_store(&kd_oom_countdown_, saved);
  return b.data;
}

#endif /* KD_OOM_H */
