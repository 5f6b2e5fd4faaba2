/*
 * sbuf.h: the kd tool's growing text buffer (sbuf.c), shared by the little
 * language (its error messages, tensor texts) and the printer (print.c).
 * Nothing here is for other code.
 */
#ifndef KD_TOOL_SBUF_H
#define KD_TOOL_SBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "kd/common.h"

/* A growing NUL-terminated string; zero-initialise it ({0}) to start empty.
 * `data` is owned (kd_host_realloc'd, NULL until the first write) and freed
 * by kdc_sbuf_free. Once `failed` is set (out of memory, or a format error)
 * every later write is dropped: the caller checks `failed` once at the end
 * and reports KD_ENOMEM; the text so far stays readable and NUL-terminated. */
typedef struct kdc_sbuf {
  char *data;
  size_t len, cap;
  bool failed;
} kdc_sbuf;

/* Appends the n bytes at s (which may hold NULs; s may be NULL when n is 0). */
void kdc_sbuf_putn(kdc_sbuf *b, const char *s, size_t n);
/* Appends the NUL-terminated s. */
void kdc_sbuf_puts(kdc_sbuf *b, const char *s);
/* Appends n copies of c. */
void kdc_sbuf_repeat(kdc_sbuf *b, char c, size_t n);
/* Appends printf's text. */
void kdc_sbuf_printf(kdc_sbuf *b, const char *fmt, ...) KD_PRINTF_LIKE(2, 3);
void kdc_sbuf_vprintf(kdc_sbuf *b, const char *fmt, va_list ap);
/* The text so far ("" before any write); valid until the next write. */
const char *kdc_sbuf_str(const kdc_sbuf *b);
/* Frees the text and empties the buffer (it may be written again). */
void kdc_sbuf_free(kdc_sbuf *b);

#endif /* KD_TOOL_SBUF_H */
