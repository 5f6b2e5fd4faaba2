/*
 * trace.c: recording which (operator, dispatch key, dtype) a program calls,
 * for selective builds (`kd trace`, include/kd/selective.h).
 *
 * When the environment variable KD_TRACE_KERNELS names a file as the
 * program loads, every call takes the slow path (kd__slow), which reports
 * the slot whose kernel runs and the dtype of the call's key tensor (-1:
 * none) to kd__record_call. The records go into a set keyed by (operator,
 * key) holding a dtype mask, under a mutex; a thread first compares with the
 * last record it made, so a loop calling one operator takes no lock. At exit
 * the set is appended to the file, one line per (operator, key), sorted:
 *
 *   demo::neg CPU float32,int64
 *   myops::twice UNDEFINED *          (* : a call without a key tensor)
 *
 * The key is the enum suffix of kd_dispatch_key (the token KD_REGISTER_KERNEL
 * takes), never a renamed display name. The file is opened with O_APPEND and
 * written with one write when it fits, so child processes that inherit the
 * variable add their own lines; `kd trace` merges them. Nothing here aborts:
 * out of memory loses records (with one warning), a failed write warns.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/dispatcher_impl.h"

bool kd__record;

/* One (operator, key) with the dtypes seen. */
typedef struct kd__trace_rec {
  const kd_op *op; /* NULL: an empty slot */
  uint32_t key;
  kd_dtype_set dtypes;
  bool no_dtype; /* a call without a key tensor */
} kd__trace_rec;

static struct {
  pthread_mutex_t lock;
  kd__trace_rec *slots; /* open addressing, a power of two */
  size_t cap, count;
  char *path;           /* owned; NULL when not recording */
  bool closed;          /* written at exit: later records are dropped */
  bool warned_oom;
} kd__trace_state = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL, false, false};

/* The last record this thread made (skips the lock for repeated calls). */
static _Thread_local const kd_op *kd__trace_last_op;
static _Thread_local int kd__trace_last_key = -1, kd__trace_last_dtype = -2;

static const char *key_token(unsigned key) {
  switch (key) {
#define KD__TRACE_KEY_(E, name, bit) \
  case bit: return #E;
    KD_DISPATCH_KEY_LIST(KD__TRACE_KEY_)
#undef KD__TRACE_KEY_
    default: return NULL;
  }
}

static size_t slot_of(const kd_op *op, uint32_t key, size_t cap) {
  uint64_t h = ((uint64_t)(uintptr_t)op >> 4) * 0x9e3779b97f4a7c15ull ^
               (uint64_t)key * 0xff51afd7ed558ccdull;
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* Doubles the table (under the lock); false when out of memory. */
static bool grow(void) {
  size_t cap = kd__trace_state.cap ? kd__trace_state.cap * 2 : 64;
  kd__trace_rec *slots = kd__calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < kd__trace_state.cap; i++) {
    const kd__trace_rec *r = &kd__trace_state.slots[i];
    if (!r->op) continue;
    size_t j = slot_of(r->op, r->key, cap);
    while (slots[j].op) j = (j + 1) & (cap - 1);
    slots[j] = *r;
  }
  kd__free(kd__trace_state.slots);
  kd__trace_state.slots = slots;
  kd__trace_state.cap = cap;
  return true;
}

void kd__record_call(const kd_op *op, kd_dispatch_key key, int dtype) {
  if (!op || (unsigned)key >= KD_NUM_RUNTIME_KEYS) return;
  if (dtype >= (int)KD_DTYPE_COUNT || dtype < -1) dtype = -1;
  if (op == kd__trace_last_op && (int)key == kd__trace_last_key && dtype == kd__trace_last_dtype)
    return;
  pthread_mutex_lock(&kd__trace_state.lock);
  bool stored = false, warn_oom = false;
  if (!kd__trace_state.closed && kd__trace_state.path) {
    if ((kd__trace_state.count + 1) * 2 > kd__trace_state.cap && !grow()) {
      warn_oom = !kd__trace_state.warned_oom;
      kd__trace_state.warned_oom = true;
    } else {
      size_t j = slot_of(op, (uint32_t)key, kd__trace_state.cap);
      kd__trace_rec *r = &kd__trace_state.slots[j];
      while (r->op && (r->op != op || r->key != (uint32_t)key)) {
        j = (j + 1) & (kd__trace_state.cap - 1);
        r = &kd__trace_state.slots[j];
      }
      if (!r->op) {
        r->op = op;
        r->key = (uint32_t)key;
        kd__trace_state.count++;
      }
      if (dtype < 0) r->no_dtype = true;
      else r->dtypes |= KD_DTYPE_BIT(dtype);
      stored = true;
    }
  }
  pthread_mutex_unlock(&kd__trace_state.lock);
  /* Outside the lock: a warning handler may call operators. */
  if (warn_oom)
    kd_warn("KD_TRACE_KERNELS: out of memory: calls of '%s' and later may not be recorded",
            op->name);
  if (stored) {
    kd__trace_last_op = op;
    kd__trace_last_key = (int)key;
    kd__trace_last_dtype = dtype;
  }
}

static int compare_recs(const void *a, const void *b) {
  const kd__trace_rec *x = a, *y = b;
  int c = strcmp(x->op->name, y->op->name);
  if (c) return c;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* Appends one record's line to buf (which has room: see write_records). */
static size_t format_rec(char *buf, const kd__trace_rec *r) {
  const char *key = key_token(r->key);
  char keybuf[16];
  if (!key) {
    snprintf(keybuf, sizeof keybuf, "KEY%u", (unsigned)r->key);
    key = keybuf;
  }
  size_t n = (size_t)sprintf(buf, "%s %s ", r->op->name, key);
  if (r->no_dtype || !r->dtypes) {
    buf[n++] = '*';
  } else {
    bool first = true;
    for (int d = 0; d < KD_DTYPE_COUNT; d++) {
      if (!(r->dtypes & KD_DTYPE_BIT(d))) continue;
      if (!first) buf[n++] = ',';
      const char *name = kd_dtype_name((kd_dtype)d);
      size_t len = strlen(name);
      memcpy(buf + n, name, len);
      n += len;
      first = false;
    }
  }
  buf[n++] = '\n';
  return n;
}

static void write_all(int fd, const char *buf, size_t len, const char *path) {
  while (len) {
    ssize_t w = write(fd, buf, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      kd_warn("KD_TRACE_KERNELS: cannot write '%s': %s", path,
              w < 0 ? strerror(errno) : "short write");
      return;
    }
    buf += w;
    len -= (size_t)w;
  }
}

/* At exit: sort the records, append them to the file, free everything. */
static void write_records(void) {
  pthread_mutex_lock(&kd__trace_state.lock);
  kd__trace_state.closed = true;
  kd__trace_rec *slots = kd__trace_state.slots;
  size_t cap = kd__trace_state.cap, n = 0;
  char *path = kd__trace_state.path;
  kd__trace_state.slots = NULL;
  kd__trace_state.cap = kd__trace_state.count = 0;
  kd__trace_state.path = NULL;
  pthread_mutex_unlock(&kd__trace_state.lock);

  /* Compact in place, sort, and size the text: name, key, dtypes. */
  size_t bytes = 0;
  size_t dtype_names = 0;
  for (int d = 0; d < KD_DTYPE_COUNT; d++) dtype_names += strlen(kd_dtype_name((kd_dtype)d)) + 1;
  for (size_t i = 0; i < cap; i++)
    if (slots[i].op) {
      bytes += strlen(slots[i].op->name) + 24 + dtype_names;
      slots[n++] = slots[i];
    }
  if (n) {
    qsort(slots, n, sizeof *slots, compare_recs);
    char *text = kd__malloc(bytes + 1);
    if (!text) {
      kd_warn("KD_TRACE_KERNELS: out of memory writing '%s'", path);
    } else {
      size_t len = 0;
      for (size_t i = 0; i < n; i++) len += format_rec(text + len, &slots[i]);
      int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) {
        kd_warn("KD_TRACE_KERNELS: cannot open '%s': %s", path, strerror(errno));
      } else {
        write_all(fd, text, len, path);
        if (close(fd) != 0)
          kd_warn("KD_TRACE_KERNELS: cannot write '%s': %s", path, strerror(errno));
      }
      kd__free(text);
    }
  }
  kd__free(slots);
  kd__free(path);
}

/* Before the default-priority constructors, so that calls made by static
 * registration bodies are recorded too. */
__attribute__((constructor(101))) static void kd__trace_kernels_init(void) {
  const char *v = getenv("KD_TRACE_KERNELS");
  if (!v || !*v) return;
  size_t len = strlen(v);
  char *path = kd__malloc(len + 1);
  if (!path) {
    kd_warn("KD_TRACE_KERNELS: out of memory: not recording");
    return;
  }
  memcpy(path, v, len + 1);
  if (atexit(write_records) != 0) {
    kd_warn("KD_TRACE_KERNELS: cannot register the exit handler: not recording");
    kd__free(path);
    return;
  }
  kd__trace_state.path = path;
  kd__record = true;
  kd__set_slow(false);
}
