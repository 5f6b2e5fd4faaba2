/*
 * lang_util.c: small pieces of the little language (lang_impl.h): an arena
 * for syntax trees, the error record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lang_impl.h"
#include "kd/memory.h"

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
