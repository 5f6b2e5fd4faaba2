/*
 * json.c: the JSON writer of json.h.
 */
#include "json.h"

#include <string.h>

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0 when
 * the bytes there are not one (overlong forms, surrogates and code points
 * above U+10FFFF are not valid). */
static size_t utf8_length(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf; /* the allowed range of the second byte */
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;      /* overlong */
    else if (c == 0xed) hi = 0x9f; /* surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;      /* overlong */
    else if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xbf) return 0;
  return len;
}

void kdc_json_put_string(FILE *out, const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', out);
  for (size_t i = 0; i < len;) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
      i++;
    } else if (c < 0x20) {
      switch (c) {
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default: fprintf(out, "\\u%04x", c); break;
      }
      i++;
    } else if (c < 0x80) {
      fputc(c, out);
      i++;
    } else {
      size_t n = utf8_length(s + i, len - i);
      if (n) {
        fwrite(s + i, 1, n, out);
        i += n;
      } else {
        fputs("\\ufffd", out); /* one replacement per byte that is not valid */
        i++;
      }
    }
  }
  fputc('"', out);
}

void kdc_json_init(kdc_json *j, FILE *out, int line_depth) {
  j->out = out;
  j->line_depth = line_depth;
  j->depth = 0;
  j->key_pending = false;
  j->done = false;
  j->misused = false;
}

static void indent(kdc_json *j, int depth) {
  fputc('\n', j->out);
  for (int i = 0; i < depth; i++) fputs("  ", j->out);
}

/* Before a value: the separator the position needs. False (and misuse
 * recorded) when no value may come here. */
static bool before_value(kdc_json *j) {
  if (j->misused) return false;
  if (j->depth == 0) {
    if (j->done) j->misused = true;
    return !j->misused;
  }
  int top = j->depth - 1;
  if (j->kind[top] == '{') {
    if (!j->key_pending) j->misused = true;
    j->key_pending = false;
    return !j->misused;
  }
  /* An array item. */
  if (top < j->line_depth && !j->flat[top]) {
    if (j->count[top]) fputc(',', j->out);
    indent(j, j->depth);
  } else if (j->count[top]) {
    fputs(", ", j->out);
  }
  j->count[top]++;
  return true;
}

/* After a scalar value or a closed container. */
static void after_value(kdc_json *j) {
  if (j->depth == 0) j->done = true;
}

static void begin(kdc_json *j, char kind, bool flat) {
  if (!before_value(j)) return;
  if (j->depth >= KDC_JSON_MAX_DEPTH) {
    j->misused = true;
    return;
  }
  fputc(kind, j->out);
  j->kind[j->depth] = kind;
  j->count[j->depth] = 0;
  /* Inside a flat container everything is flat. */
  j->flat[j->depth] = flat || (j->depth > 0 && j->flat[j->depth - 1]);
  j->depth++;
}

static void end(kdc_json *j, char kind) {
  if (j->misused) return;
  if (j->depth == 0 || j->kind[j->depth - 1] != kind || j->key_pending) {
    j->misused = true;
    return;
  }
  j->depth--;
  if (j->count[j->depth] && j->depth < j->line_depth && !j->flat[j->depth]) indent(j, j->depth);
  fputc(kind == '[' ? ']' : '}', j->out);
  after_value(j);
}

void kdc_json_begin_array(kdc_json *j) { begin(j, '[', false); }
void kdc_json_begin_flat_array(kdc_json *j) { begin(j, '[', true); }
void kdc_json_end_array(kdc_json *j) { end(j, '['); }
void kdc_json_begin_object(kdc_json *j) { begin(j, '{', false); }
void kdc_json_end_object(kdc_json *j) { end(j, '{'); }

void kdc_json_key(kdc_json *j, const char *key) {
  if (j->misused) return;
  int top = j->depth - 1;
  if (top < 0 || j->kind[top] != '{' || j->key_pending || !key) {
    j->misused = true;
    return;
  }
  if (top < j->line_depth && !j->flat[top]) {
    if (j->count[top]) fputc(',', j->out);
    indent(j, j->depth);
  } else if (j->count[top]) {
    fputs(", ", j->out);
  }
  j->count[top]++;
  kdc_json_put_string(j->out, key, strlen(key));
  fputs(": ", j->out);
  j->key_pending = true;
}

void kdc_json_string_n(kdc_json *j, const char *s, size_t len) {
  if (!before_value(j)) return;
  kdc_json_put_string(j->out, s, len);
  after_value(j);
}

void kdc_json_string(kdc_json *j, const char *s) {
  if (!s) kdc_json_null(j);
  else kdc_json_string_n(j, s, strlen(s));
}

void kdc_json_int(kdc_json *j, long long v) {
  if (!before_value(j)) return;
  fprintf(j->out, "%lld", v);
  after_value(j);
}

void kdc_json_bool(kdc_json *j, bool v) {
  if (!before_value(j)) return;
  fputs(v ? "true" : "false", j->out);
  after_value(j);
}

void kdc_json_null(kdc_json *j) {
  if (!before_value(j)) return;
  fputs("null", j->out);
  after_value(j);
}

void kdc_json_field_string(kdc_json *j, const char *key, const char *s) {
  kdc_json_key(j, key);
  kdc_json_string(j, s);
}

void kdc_json_field_int(kdc_json *j, const char *key, long long v) {
  kdc_json_key(j, key);
  kdc_json_int(j, v);
}

void kdc_json_field_bool(kdc_json *j, const char *key, bool v) {
  kdc_json_key(j, key);
  kdc_json_bool(j, v);
}

int kdc_json_finish(kdc_json *j) {
  if (j->misused || j->depth != 0 || !j->done) return -1;
  fputc('\n', j->out);
  return ferror(j->out) ? -1 : 0;
}
