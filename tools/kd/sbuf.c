/*
 * sbuf.c: the kd tool's growing text buffer (sbuf.h).
 */
#include "sbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kd/memory.h"

/* Room for `extra` more bytes and the NUL after them; false (and `failed`
 * set) when there is none to be had. */
static bool sbuf_reserve(kdc_sbuf *b, size_t extra) {
  if (b->failed) return false;
  if (b->cap > b->len && extra < b->cap - b->len) return true;
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

void kdc_sbuf_repeat(kdc_sbuf *b, char c, size_t n) {
  if (!sbuf_reserve(b, n)) return;
  memset(b->data + b->len, c, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void kdc_sbuf_vprintf(kdc_sbuf *b, const char *fmt, va_list ap) {
  if (b->failed) return;
  /* Formatted once into the room there is; a second time when it did not fit. */
  size_t room = b->cap - b->len;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    b->failed = true;
  } else if ((size_t)n < room) {
    b->len += (size_t)n;
    return;
  } else if (sbuf_reserve(b, (size_t)n)) {
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return;
  }
  if (b->data) b->data[b->len] = '\0'; /* drop what a truncated try wrote */
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
