/*
 * json_parse.h: a small, strict JSON parser for the tests of kd's --json
 * output (RFC 8259): it builds a tree, and rejects what a lenient parser
 * would let through, so a test that parses the output also checks that it is
 * well formed: trailing commas, missing commas or colons, leading zeros,
 * raw control characters in strings, bad escapes, lone surrogates, bytes
 * that are not UTF-8, duplicate keys in one object, and anything after the
 * value. Header-only (static inline) so any test can include it.
 *
 * Ownership: jp_parse returns a tree the caller frees with jp_free; the
 * accessors return pointers into it.
 */
#ifndef KD_TEST_JSON_PARSE_H
#define KD_TEST_JSON_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum jp_type { JP_NULL, JP_BOOL, JP_NUMBER, JP_STRING, JP_ARRAY, JP_OBJECT } jp_type;

typedef struct jp_value {
  jp_type type;
  bool b;                  /* JP_BOOL */
  double num;              /* JP_NUMBER */
  char *str;               /* JP_STRING: decoded UTF-8, NUL-terminated */
  size_t len;              /* JP_STRING: bytes of str */
  struct jp_value **items; /* JP_ARRAY, JP_OBJECT: the values, in order */
  char **keys;             /* JP_OBJECT: the keys, decoded */
  size_t n;                /* JP_ARRAY, JP_OBJECT: how many */
} jp_value;

typedef struct jp_parser {
  const char *s, *p, *end;
  char *err;
  size_t errcap;
  int depth;
} jp_parser;

static inline void jp_free(jp_value *v) {
  if (!v) return;
  for (size_t i = 0; i < v->n; i++) {
    jp_free(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  free(v);
}

/* Records the first error as "line L, column C: MESSAGE"; returns NULL. */
static inline jp_value *jp_fail(jp_parser *ps, const char *msg) {
  if (ps->err && ps->err[0] == '\0') {
    int line = 1, col = 1;
    for (const char *q = ps->s; q < ps->p; q++) {
      if (*q == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    snprintf(ps->err, ps->errcap, "line %d, column %d: %s", line, col, msg);
  }
  return NULL;
}

static inline void jp_skip_ws(jp_parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static inline jp_value *jp_new(jp_type type) {
  jp_value *v = calloc(1, sizeof *v);
  if (v) v->type = type;
  return v;
}

static inline bool jp_push(jp_value *v, jp_value *item, char *key) {
  jp_value **items = realloc(v->items, (v->n + 1) * sizeof *items);
  if (!items) return false;
  v->items = items;
  if (v->type == JP_OBJECT) {
    char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
    if (!keys) return false;
    v->keys = keys;
    v->keys[v->n] = key;
  }
  v->items[v->n++] = item;
  return true;
}

/* Appends code point cp as UTF-8. */
static inline void jp_put_utf8(char *out, size_t *len, uint32_t cp) {
  if (cp < 0x80) {
    out[(*len)++] = (char)cp;
  } else if (cp < 0x800) {
    out[(*len)++] = (char)(0xc0 | (cp >> 6));
    out[(*len)++] = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out[(*len)++] = (char)(0xe0 | (cp >> 12));
    out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[(*len)++] = (char)(0x80 | (cp & 0x3f));
  } else {
    out[(*len)++] = (char)(0xf0 | (cp >> 18));
    out[(*len)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[(*len)++] = (char)(0x80 | (cp & 0x3f));
  }
}

static inline bool jp_hex4(jp_parser *ps, uint32_t *out) {
  if (ps->end - ps->p < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    char c = ps->p[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
    else return false;
  }
  ps->p += 4;
  *out = v;
  return true;
}

/* The length of a valid UTF-8 sequence at p, or 0. */
static inline size_t jp_utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0], lo = 0x80, hi = 0xbf;
  size_t len;
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else return 0;
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return len;
}

/* A string at ps->p (on the opening quote): the decoded bytes, malloc'd. */
static inline char *jp_string(jp_parser *ps, size_t *len_out) {
  ps->p++;
  /* Decoded text is never longer than the source. */
  char *out = malloc((size_t)(ps->end - ps->p) + 1);
  if (!out) return (char *)jp_fail(ps, "out of memory");
  size_t len = 0;
  for (;;) {
    if (ps->p >= ps->end) {
      free(out);
      return (char *)jp_fail(ps, "unterminated string");
    }
    unsigned char c = (unsigned char)*ps->p;
    if (c == '"') {
      ps->p++;
      break;
    }
    if (c < 0x20) {
      free(out);
      return (char *)jp_fail(ps, "control character in a string");
    }
    if (c == '\\') {
      ps->p++;
      char e = ps->p < ps->end ? *ps->p++ : '\0';
      uint32_t cp;
      switch (e) {
        case '"': out[len++] = '"'; break;
        case '\\': out[len++] = '\\'; break;
        case '/': out[len++] = '/'; break;
        case 'b': out[len++] = '\b'; break;
        case 'f': out[len++] = '\f'; break;
        case 'n': out[len++] = '\n'; break;
        case 'r': out[len++] = '\r'; break;
        case 't': out[len++] = '\t'; break;
        case 'u':
          if (!jp_hex4(ps, &cp)) {
            free(out);
            return (char *)jp_fail(ps, "bad \\u escape");
          }
          if (cp >= 0xdc00 && cp <= 0xdfff) {
            free(out);
            return (char *)jp_fail(ps, "lone low surrogate");
          }
          if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t lo;
            if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
              free(out);
              return (char *)jp_fail(ps, "lone high surrogate");
            }
            ps->p += 2;
            if (!jp_hex4(ps, &lo) || lo < 0xdc00 || lo > 0xdfff) {
              free(out);
              return (char *)jp_fail(ps, "bad surrogate pair");
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          jp_put_utf8(out, &len, cp);
          break;
        default:
          free(out);
          return (char *)jp_fail(ps, "bad escape");
      }
      continue;
    }
    if (c < 0x80) {
      out[len++] = (char)c;
      ps->p++;
      continue;
    }
    size_t n = jp_utf8_len((const unsigned char *)ps->p, (size_t)(ps->end - ps->p));
    if (!n) {
      free(out);
      return (char *)jp_fail(ps, "bytes that are not UTF-8");
    }
    memcpy(out + len, ps->p, n);
    len += n;
    ps->p += n;
  }
  out[len] = '\0';
  *len_out = len;
  return out;
}

static inline jp_value *jp_value_at(jp_parser *ps);

static inline jp_value *jp_container(jp_parser *ps, bool object) {
  if (++ps->depth > 64) return jp_fail(ps, "nested too deep");
  ps->p++;
  jp_value *v = jp_new(object ? JP_OBJECT : JP_ARRAY);
  if (!v) return jp_fail(ps, "out of memory");
  char close = object ? '}' : ']';
  jp_skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    ps->depth--;
    return v;
  }
  for (;;) {
    jp_skip_ws(ps);
    char *key = NULL;
    if (object) {
      size_t klen;
      if (ps->p >= ps->end || *ps->p != '"') {
        jp_free(v);
        return jp_fail(ps, "expected a key");
      }
      key = jp_string(ps, &klen);
      if (!key) {
        jp_free(v);
        return NULL;
      }
      for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) {
          free(key);
          jp_free(v);
          return jp_fail(ps, "duplicate key");
        }
      jp_skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') {
        free(key);
        jp_free(v);
        return jp_fail(ps, "expected ':'");
      }
      ps->p++;
    }
    jp_value *item = jp_value_at(ps);
    if (!item || !jp_push(v, item, key)) {
      free(key);
      jp_free(item);
      jp_free(v);
      return item ? jp_fail(ps, "out of memory") : NULL;
    }
    jp_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ps->p++;
      ps->depth--;
      return v;
    }
    jp_free(v);
    return jp_fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static inline jp_value *jp_number(jp_parser *ps) {
  const char *start = ps->p;
  if (*ps->p == '-') ps->p++;
  if (ps->p < ps->end && *ps->p == '0') {
    ps->p++;
  } else if (ps->p < ps->end && *ps->p >= '1' && *ps->p <= '9') {
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
  } else {
    return jp_fail(ps, "bad number");
  }
  if (ps->p < ps->end && *ps->p == '.') {
    ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return jp_fail(ps, "bad number");
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
  }
  if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
    ps->p++;
    if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return jp_fail(ps, "bad number");
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
  }
  if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') return jp_fail(ps, "leading zero");
  jp_value *v = jp_new(JP_NUMBER);
  if (!v) return jp_fail(ps, "out of memory");
  char buf[64];
  size_t n = (size_t)(ps->p - start);
  if (n >= sizeof buf) n = sizeof buf - 1;
  memcpy(buf, start, n);
  buf[n] = '\0';
  v->num = strtod(buf, NULL);
  return v;
}

static inline bool jp_word(jp_parser *ps, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n)) return false;
  ps->p += n;
  return true;
}

static inline jp_value *jp_value_at(jp_parser *ps) {
  jp_skip_ws(ps);
  if (ps->p >= ps->end) return jp_fail(ps, "expected a value");
  char c = *ps->p;
  if (c == '{' || c == '[') return jp_container(ps, c == '{');
  if (c == '"') {
    jp_value *v = jp_new(JP_STRING);
    if (!v) return jp_fail(ps, "out of memory");
    v->str = jp_string(ps, &v->len);
    if (!v->str) {
      free(v);
      return NULL;
    }
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return jp_number(ps);
  jp_value *v = NULL;
  if (jp_word(ps, "true") || jp_word(ps, "false")) {
    v = jp_new(JP_BOOL);
    if (v) v->b = ps->p[-1] == 'e' && ps->p[-2] == 'u';
  } else if (jp_word(ps, "null")) {
    v = jp_new(JP_NULL);
  } else {
    return jp_fail(ps, "expected a value");
  }
  return v ? v : jp_fail(ps, "out of memory");
}

/* Parses the whole of `text` (one value, whitespace around it). NULL on
 * error, with the reason in err (cap bytes; may be NULL). */
static inline jp_value *jp_parse(const char *text, char *err, size_t cap) {
  jp_parser ps = {text, text, text + strlen(text), err, cap, 0};
  if (err && cap) err[0] = '\0';
  jp_value *v = jp_value_at(&ps);
  if (!v) return NULL;
  jp_skip_ws(&ps);
  if (ps.p != ps.end) {
    jp_free(v);
    return jp_fail(&ps, "text after the value");
  }
  return v;
}

/* An object's member, or NULL (also when v is not an object). */
static inline const jp_value *jp_get(const jp_value *v, const char *key) {
  if (!v || v->type != JP_OBJECT) return NULL;
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->keys[i], key)) return v->items[i];
  return NULL;
}

/* An array's or object's i-th value, or NULL. */
static inline const jp_value *jp_at(const jp_value *v, size_t i) {
  if (!v || (v->type != JP_ARRAY && v->type != JP_OBJECT) || i >= v->n) return NULL;
  return v->items[i];
}

/* A string value's text, or NULL when v is not a string. */
static inline const char *jp_str(const jp_value *v) {
  return v && v->type == JP_STRING ? v->str : NULL;
}

#endif /* KD_TEST_JSON_PARSE_H */
