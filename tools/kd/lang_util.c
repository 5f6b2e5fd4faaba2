/*
 * lang_util.c: small pieces of the little language (lang_impl.h): a growing
 * text buffer, an arena for syntax trees, the error record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang_impl.h"
#include "kd/memory.h"

/* ---- Text buffer ----------------------------------------------------------- */

static bool sbuf_reserve(kd__sbuf *b, size_t extra) {
  if (b->failed) return false;
  if (b->cap > b->len && extra < b->cap - b->len) return true; /* room for the NUL too */
  size_t cap = b->cap ? b->cap : 128;
  while (cap - b->len <= extra) {
    if (cap > SIZE_MAX / 2) {
      b->failed = true;
      return false;
    }
    cap *= 2;
  }
  char *p = kd_host_realloc(b->data, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  b->data = p;
  b->cap = cap;
  return true;
}

void kd__sbuf_putn(kd__sbuf *b, const char *s, size_t n) {
  if (!sbuf_reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void kd__sbuf_puts(kd__sbuf *b, const char *s) { kd__sbuf_putn(b, s, strlen(s)); }

void kd__sbuf_vprintf(kd__sbuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    b->failed = true;
    return;
  }
  if (!sbuf_reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void kd__sbuf_printf(kd__sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kd__sbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *kd__sbuf_str(const kd__sbuf *b) { return b->data ? b->data : ""; }

void kd__sbuf_free(kd__sbuf *b) {
  kd_host_free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}

/* ---- Arena ----------------------------------------------------------------- */

struct kd__arena_block {
  kd__arena_block *next;
  size_t used, cap;
  max_align_t data[]; /* cap bytes */
};

void *kd__arena_alloc(kd__arena *a, size_t size) {
  size_t align = sizeof(max_align_t);
  size = (size + align - 1) / align * align;
  if (size == 0) size = align;
  kd__arena_block *b = a->head;
  if (!b || b->cap - b->used < size) {
    size_t cap = size > 8192 ? size : 8192;
    b = kd_host_malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->used = 0;
    b->next = a->head;
    a->head = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *kd__arena_strndup(kd__arena *a, const char *s, size_t n) {
  char *p = kd__arena_alloc(a, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void kd__arena_free(kd__arena *a) {
  kd__arena_block *b = a->head;
  while (b) {
    kd__arena_block *next = b->next;
    kd_host_free(b);
    b = next;
  }
  a->head = NULL;
}

/* ---- Errors ---------------------------------------------------------------- */

int kd__lerr_set(kd__lerr *e, kd__lpos pos, const char *fmt, ...) {
  if (e->failed) return -1; /* the first error is the one reported */
  e->failed = true;
  e->pos = pos;
  e->msg.len = 0;
  if (e->msg.data) e->msg.data[0] = '\0';
  va_list ap;
  va_start(ap, fmt);
  kd__sbuf_vprintf(&e->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int kd__lerr_oom(kd__lerr *e, kd__lpos pos) { return kd__lerr_set(e, pos, "out of memory"); }

void kd__lerr_clear(kd__lerr *e) {
  e->failed = false;
  e->pos.line = e->pos.col = 0;
  e->msg.len = 0;
  e->msg.failed = false;
  if (e->msg.data) e->msg.data[0] = '\0';
}
