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

static bool sbuf_reserve(kdc_sbuf *b, size_t extra) {
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

void kdc_sbuf_putn(kdc_sbuf *b, const char *s, size_t n) {
  if (!sbuf_reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void kdc_sbuf_puts(kdc_sbuf *b, const char *s) { kdc_sbuf_putn(b, s, strlen(s)); }

void kdc_sbuf_vprintf(kdc_sbuf *b, const char *fmt, va_list ap) {
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

void kdc_sbuf_printf(kdc_sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kdc_sbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *kdc_sbuf_str(const kdc_sbuf *b) { return b->data ? b->data : ""; }

void kdc_sbuf_free(kdc_sbuf *b) {
  kd_host_free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}

/* ---- Arena ----------------------------------------------------------------- */

struct kdc_arena_block {
  kdc_arena_block *next;
  size_t used, cap;
  max_align_t data[]; /* cap bytes */
};

void *kdc_arena_alloc(kdc_arena *a, size_t size) {
  size_t align = sizeof(max_align_t);
  size = (size + align - 1) / align * align;
  if (size == 0) size = align;
  kdc_arena_block *b = a->head;
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

char *kdc_arena_strndup(kdc_arena *a, const char *s, size_t n) {
  char *p = kdc_arena_alloc(a, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void kdc_arena_free(kdc_arena *a) {
  kdc_arena_block *b = a->head;
  while (b) {
    kdc_arena_block *next = b->next;
    kd_host_free(b);
    b = next;
  }
  a->head = NULL;
}

/* ---- Errors ---------------------------------------------------------------- */

int kdc_lerr_set(kdc_lerr *e, kdc_lpos pos, const char *fmt, ...) {
  if (e->failed) return -1; /* the first error is the one reported */
  e->failed = true;
  e->pos = pos;
  e->msg.len = 0;
  if (e->msg.data) e->msg.data[0] = '\0';
  va_list ap;
  va_start(ap, fmt);
  kdc_sbuf_vprintf(&e->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int kdc_lerr_oom(kdc_lerr *e, kdc_lpos pos) { return kdc_lerr_set(e, pos, "out of memory"); }

void kdc_lerr_clear(kdc_lerr *e) {
  e->failed = false;
  e->pos.line = e->pos.col = 0;
  e->msg.len = 0;
  e->msg.failed = false;
  if (e->msg.data) e->msg.data[0] = '\0';
}
