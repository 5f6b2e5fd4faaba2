/*
 * parser.c: kd_schema_parse, a recursive-descent parser of PyTorch's
 * function-schema language (the grammar of the JIT's schema_type_parser and
 * function_schema_parser).
 *
 * Memory: the parser writes every node into one scratch arena (on the stack
 * for schemas up to several hundred bytes, else one malloc) whose size is
 * bounded in advance by the input length, so nothing is allocated per token
 * or per node. Links are self-relative offsets (schema_impl.h), so on success
 * the used part of the arena is copied into one exact-size malloc'd block,
 * which is the kd_schema. Names and defaults are not copied one by one: the
 * input is copied once, with a NUL and 15 zero bytes after it, to the start
 * of the arena; the lexer reads that copy (the padding lets it scan without
 * bounds checks and 16 bytes at a time), and each needed token becomes a
 * string by a NUL written over the byte after it (always a separator) once
 * parsing is done.
 */
#include <pthread.h>
#include <stdio.h>

#include "schema/lexer.h"
#include "schema/schema_impl.h"

#define KD__SCHEMA_MAX_LEN (1u << 24)
#define KD__SCHEMA_MAX_DEPTH 64
/* Upper bound of arena bytes per input byte (a type node is 24 bytes and
 * takes at least one byte; see the notes in parse_*), plus a constant. */
#define KD__ARENA_PER_BYTE 40u
#define KD__ARENA_FIXED 512u
#define KD__STACK_SCRATCH 32768u

const uint8_t kd__lex_class[256] = {
    ['\t'] = 8, ['\n'] = 8, ['\v'] = 8, ['\f'] = 8, ['\r'] = 8, [' '] = 8,
    ['0'] = 6, ['1'] = 6, ['2'] = 6, ['3'] = 6, ['4'] = 6,
    ['5'] = 6, ['6'] = 6, ['7'] = 6, ['8'] = 6, ['9'] = 6,
    ['_'] = 3,
    ['a'] = 3, ['b'] = 3, ['c'] = 3, ['d'] = 3, ['e'] = 3, ['f'] = 3, ['g'] = 3,
    ['h'] = 3, ['i'] = 3, ['j'] = 3, ['k'] = 3, ['l'] = 3, ['m'] = 3, ['n'] = 3,
    ['o'] = 3, ['p'] = 3, ['q'] = 3, ['r'] = 3, ['s'] = 3, ['t'] = 3, ['u'] = 3,
    ['v'] = 3, ['w'] = 3, ['x'] = 3, ['y'] = 3, ['z'] = 3,
    ['A'] = 3, ['B'] = 3, ['C'] = 3, ['D'] = 3, ['E'] = 3, ['F'] = 3, ['G'] = 3,
    ['H'] = 3, ['I'] = 3, ['J'] = 3, ['K'] = 3, ['L'] = 3, ['M'] = 3, ['N'] = 3,
    ['O'] = 3, ['P'] = 3, ['Q'] = 3, ['R'] = 3, ['S'] = 3, ['T'] = 3, ['U'] = 3,
    ['V'] = 3, ['W'] = 3, ['X'] = 3, ['Y'] = 3, ['Z'] = 3,
};

typedef struct parser {
  kd__lexer lx;
  kd__token cur; /* the lookahead token */
  char *base;    /* arena; the kd_schema header is at offset 0 */
  size_t used, cap;
  char *text;    /* the copy of the input inside the arena */
  const void **pend; /* children waiting for their parent's array */
  size_t npend, pend_cap;
  uint32_t *cuts;    /* offsets in `text` where a NUL goes once parsed */
  size_t ncuts, cuts_cap;
} parser;

#define TRY(expr)                  \
  do {                             \
    kd_status try_st_ = (expr);    \
    if (try_st_ != KD_OK) return try_st_; \
  } while (0)

/* ---- Errors ------------------------------------------------------------- */

static void describe_token(const parser *p, const kd__token *t, char *buf, size_t cap) {
  const unsigned char *s = p->lx.src + t->start;
  size_t n = t->end - t->start;
  if (t->kind == KD__TK_EOF) {
    snprintf(buf, cap, "end of input");
    return;
  }
  if (t->kind == KD__TK_BAD) {
    if (s[0] == '\'' || s[0] == '"') {
      snprintf(buf, cap, "unterminated string");
    } else if (s[0] >= 0x21 && s[0] < 0x7f) {
      snprintf(buf, cap, "'%c'", s[0]);
    } else {
      snprintf(buf, cap, "byte 0x%02x", s[0]);
    }
    return;
  }
  if (n > 32) snprintf(buf, cap, "'%.32s...'", (const char *)s);
  else snprintf(buf, cap, "'%.*s'", (int)n, (const char *)s);
}

static void line_col(const parser *p, uint32_t off, unsigned *line, unsigned *col) {
  unsigned l = 1;
  uint32_t line_start = 0;
  for (uint32_t i = 0; i < off && i < p->lx.len; i++) {
    if (p->lx.src[i] == '\n') {
      l++;
      line_start = i + 1;
    }
  }
  *line = l;
  *col = (unsigned)(off - line_start) + 1;
}

static kd_status error_at(const parser *p, uint32_t off, const char *expected, const char *found) {
  unsigned line, col;
  line_col(p, off, &line, &col);
  return kd_set_error(KD_ESYNTAX, "line %u, column %u: expected %s, found %s", line, col,
                      expected, found);
}

/* "expected X, found <the token t>". */
static kd_status perr(const parser *p, const kd__token *t, const char *expected) {
  char found[64];
  describe_token(p, t, found, sizeof found);
  return error_at(p, t->start, expected, found);
}

/* ---- Arena -------------------------------------------------------------- */

static kd_status arena_overflow(void) {
  return kd_set_error(KD_EINTERNAL, "schema parser: arena bound exceeded");
}

static inline void *palloc(parser *p, size_t n) {
  n = (n + 7u) & ~(size_t)7u;
  if (n > p->cap - p->used) return NULL;
  void *r = p->base + p->used;
  p->used += n;
  return r;
}

static inline kd_status push(parser *p, const void *item) {
  if (p->npend >= p->pend_cap) return arena_overflow();
  p->pend[p->npend++] = item;
  return KD_OK;
}

/* Moves the children pushed since `mark` into an array of offsets. */
static kd_status pop_array(parser *p, size_t mark, kd__rel *slot, uint32_t *count) {
  size_t n = p->npend - mark;
  *count = (uint32_t)n;
  if (n == 0) {
    *slot = 0;
    return KD_OK;
  }
  kd__rel *arr = palloc(p, n * sizeof(kd__rel));
  if (!arr) return arena_overflow();
  for (size_t i = 0; i < n; i++) kd__rel_set(&arr[i], p->pend[mark + i]);
  kd__rel_set(slot, arr);
  p->npend = mark;
  return KD_OK;
}

/* The text of [start, end) as a string inside the block: the NUL at `end`
 * is written after parsing (the lexer still reads that byte). */
static inline const char *take_text(parser *p, uint32_t start, uint32_t end) {
  if (p->ncuts < p->cuts_cap) p->cuts[p->ncuts++] = end;
  return p->text + start;
}

static inline void advance(parser *p) { kd__lex_next(&p->lx, &p->cur); }

static inline kd_status expect(parser *p, int kind, const char *what) {
  if (p->cur.kind != kind) return perr(p, &p->cur, what);
  advance(p);
  return KD_OK;
}

/* ---- Types -------------------------------------------------------------- */

const char kd__type_base_names[][24] = {
#define KD_TYPE_NAME_(E, spelling) spelling,
    KD_TYPE_BASE_LIST(KD_TYPE_NAME_)
#undef KD_TYPE_NAME_
};
const uint8_t kd__type_base_lens[] = {
#define KD_TYPE_LEN_(E, spelling) (uint8_t)(sizeof(spelling) - 1),
    KD_TYPE_BASE_LIST(KD_TYPE_LEN_)
#undef KD_TYPE_LEN_
};

/* Whether the n bytes at s (16 readable) equal the padded name row. */
static inline bool name_eq(const unsigned char *s, const char *row, size_t n) {
#if defined(__SSE2__)
  if (n <= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i y = _mm_loadu_si128((const __m128i *)(const void *)row);
    unsigned diff = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) & ((1u << n) - 1u);
    return diff == 0;
  }
#endif
  return memcmp(s, row, n) == 0;
}

static int lookup_base(const unsigned char *s, size_t n) {
  for (int k = 0; k < (int)KD_TYPE_VAR; k++) {
    if (kd__type_base_lens[k] == n && name_eq(s, kd__type_base_names[k], n)) return k;
  }
  return -1;
}

static inline kd_type *new_type(parser *p, kd_type_kind kind) {
  kd_type *t = palloc(p, sizeof(kd_type));
  if (!t) return NULL;
  t->kind = (uint8_t)kind;
  t->pad_[0] = t->pad_[1] = t->pad_[2] = 0;
  t->alias = 0;
  t->a = 0;
  t->b = 0;
  t->n = -1;
  return t;
}

/* Length of an alias set name in the text copy (not yet NUL-cut). */
static size_t set_name_len(const char *s) {
  return s[0] == '*' ? 1 : 1 + kd__lex_ident_span((const unsigned char *)s + 1);
}

/* Whether the after set repeats the before set exactly (`a -> a`). */
static bool alias_same(const kd_alias_info *x) {
  if (x->nbefore != x->nafter) return false;
  for (size_t i = 0; i < x->nbefore; i++) {
    const char *b = kd__rel_at((const kd__rel *)kd__rel_get(&x->before), i);
    const char *a = kd__rel_at((const kd__rel *)kd__rel_get(&x->after), i);
    size_t n = set_name_len(b);
    if (n != set_name_len(a) || memcmp(a, b, n) != 0) return false;
  }
  return true;
}

/* set := ('*' | IDENT) ('|' ('*' | IDENT))* ; pushes the names. */
static kd_status parse_alias_set(parser *p) {
  for (;;) {
    if (p->cur.kind != '*' && p->cur.kind != KD__TK_IDENT)
      return perr(p, &p->cur, "alias set name");
    TRY(push(p, take_text(p, p->cur.start, p->cur.end)));
    advance(p);
    if (p->cur.kind != '|') return KD_OK;
    advance(p);
  }
}

/* annotation := '(' set '!'? ('->' set)? ')' ; the current token is '('.
 * Takes at least 3 bytes for 16 + 8 + 8 arena bytes. */
static kd_status parse_alias(parser *p, kd__rel *slot) {
  advance(p);
  kd_alias_info *a = palloc(p, sizeof(kd_alias_info));
  if (!a) return arena_overflow();
  memset(a, 0, sizeof *a);
  size_t mark = p->npend;
  uint32_t n;
  TRY(parse_alias_set(p));
  TRY(pop_array(p, mark, &a->before, &n));
  a->nbefore = n;
  const char *expected = "'|', '!', '->' or ')'";
  if (p->cur.kind == '!') {
    a->is_write = 1;
    advance(p);
    expected = "'->' or ')'";
  }
  if (p->cur.kind == KD__TK_ARROW) {
    advance(p);
    TRY(parse_alias_set(p));
    TRY(pop_array(p, mark, &a->after, &n));
    a->nafter = n;
    a->has_arrow = 1;
    if (alias_same(a)) a->has_arrow = 0;
    expected = "'|' or ')'";
  } else {
    kd__rel_set(&a->after, kd__rel_get(&a->before));
    a->nafter = a->nbefore;
  }
  if (p->cur.kind != ')') return perr(p, &p->cur, expected);
  advance(p);
  kd__rel_set(slot, a);
  return KD_OK;
}

static kd_status parse_type(parser *p, int depth, kd_type **out, int *height);

/* T (',' T)* ')' after the opening '(' (or just ')'). */
static kd_status parse_type_list(parser *p, int depth, kd_type *t, int *height) {
  size_t mark = p->npend;
  int h = 0;
  if (p->cur.kind != ')') {
    for (;;) {
      kd_type *e;
      int eh;
      TRY(parse_type(p, depth + 1, &e, &eh));
      if (eh > h) h = eh;
      TRY(push(p, e));
      if (p->cur.kind == ',') {
        advance(p);
        continue;
      }
      if (p->cur.kind == ')') break;
      return perr(p, &p->cur, "',' or ')'");
    }
  }
  advance(p);
  uint32_t n;
  TRY(pop_array(p, mark, &t->a, &n));
  t->n = n;
  *height = h;
  return KD_OK;
}

/* One parenthesised type argument: '(' T ')' (Future, RRef). */
static kd_status parse_type_arg(parser *p, int depth, kd_type *t, int *height) {
  TRY(expect(p, '(', "'('"));
  kd_type *e;
  TRY(parse_type(p, depth + 1, &e, height));
  kd__rel_set(&t->a, e);
  return expect(p, ')', "')'");
}

static kd_status parse_primary(parser *p, int depth, kd_type **out, int *height) {
  kd__token tok = p->cur;
  kd_type *t = NULL;
  int h = 0;
  if (tok.kind == '(') {
    if (!(t = new_type(p, KD_TYPE_TUPLE))) return arena_overflow();
    advance(p);
    TRY(parse_type_list(p, depth, t, &h));
  } else if (tok.kind == KD__TK_IDENT) {
    const unsigned char *src = p->lx.src;
    const unsigned char *s = src + tok.start;
    size_t n = tok.end - tok.start;
    uint32_t e = tok.end, len = p->lx.len;
    if (e + 1 < len && src[e] == '.' && (kd__lex_class[src[e + 1]] & KD__LC_START)) {
      /* A custom class: a dotted name, written without spaces. */
      while (e + 1 < len && src[e] == '.' && (kd__lex_class[src[e + 1]] & KD__LC_START)) {
        e += 2;
        while (e < len && (kd__lex_class[src[e]] & KD__LC_CONT)) e++;
      }
      if (!(t = new_type(p, KD_TYPE_CLASS))) return arena_overflow();
      kd__rel_set(&t->a, take_text(p, tok.start, e));
      t->b = (kd__rel)(e - tok.start);
      p->lx.pos = e;
      advance(p);
    } else {
      int k = lookup_base(s, n);
      if (k >= 0) {
        if (!(t = new_type(p, (kd_type_kind)k))) return arena_overflow();
        advance(p);
      } else if (n == 4 && memcmp(s, "Dict", 4) == 0) {
        if (!(t = new_type(p, KD_TYPE_DICT))) return arena_overflow();
        advance(p);
        TRY(expect(p, '(', "'('"));
        kd_type *key, *val;
        int kh, vh;
        TRY(parse_type(p, depth + 1, &key, &kh));
        TRY(expect(p, ',', "','"));
        TRY(parse_type(p, depth + 1, &val, &vh));
        TRY(expect(p, ')', "')'"));
        kd__rel_set(&t->b, key);
        kd__rel_set(&t->a, val);
        h = kh > vh ? kh : vh;
      } else if ((n == 6 && memcmp(s, "Future", 6) == 0) || (n == 4 && memcmp(s, "RRef", 4) == 0)) {
        if (!(t = new_type(p, n == 6 ? KD_TYPE_FUTURE : KD_TYPE_RREF))) return arena_overflow();
        advance(p);
        TRY(parse_type_arg(p, depth, t, &h));
      } else if (n == 5 && memcmp(s, "Union", 5) == 0) {
        if (!(t = new_type(p, KD_TYPE_UNION))) return arena_overflow();
        advance(p);
        TRY(expect(p, '(', "'('"));
        if (p->cur.kind == ')') return perr(p, &p->cur, "type");
        TRY(parse_type_list(p, depth, t, &h));
      } else if (s[0] >= 'a' && s[0] <= 'z') {
        if (!(t = new_type(p, KD_TYPE_VAR))) return arena_overflow();
        kd__rel_set(&t->a, take_text(p, tok.start, tok.end));
        t->b = (kd__rel)n;
        advance(p);
      } else {
        return perr(p, &tok, "type");
      }
    }
  } else {
    return perr(p, &tok, "type");
  }
  *out = t;
  *height = h + 1;
  return KD_OK;
}

/* Parses N of `[N]`: a decimal integer that fits int64. */
static kd_status parse_list_size(parser *p, int64_t *n) {
  const unsigned char *s = p->lx.src + p->cur.start;
  size_t len = p->cur.end - p->cur.start;
  int64_t v = 0;
  if (p->cur.kind != KD__TK_NUMBER) return perr(p, &p->cur, "']' or list size");
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return perr(p, &p->cur, "integer list size");
    if (v > (INT64_MAX - (s[i] - '0')) / 10) return perr(p, &p->cur, "list size that fits int64");
    v = v * 10 + (s[i] - '0');
  }
  *n = v;
  advance(p);
  return KD_OK;
}

/* type := primary annotation? ('?' | '[' N? ']' annotation?)* */
static kd_status parse_type(parser *p, int depth, kd_type **out, int *height) {
  if (depth >= KD__SCHEMA_MAX_DEPTH) return perr(p, &p->cur, "at most 64 nested types");
  kd_type *t = NULL;
  int h = 0;
  TRY(parse_primary(p, depth, &t, &h));
  if (p->cur.kind == '(') TRY(parse_alias(p, &t->alias));
  for (;;) {
    int k = p->cur.kind;
    if (k != '?' && k != '[') break;
    if (h >= KD__SCHEMA_MAX_DEPTH) return perr(p, &p->cur, "at most 64 nested types");
    kd_type *w = new_type(p, k == '?' ? KD_TYPE_OPTIONAL : KD_TYPE_LIST);
    if (!w) return arena_overflow();
    kd__rel_set(&w->a, t);
    advance(p);
    if (k == '[') {
      if (p->cur.kind != ']') TRY(parse_list_size(p, &w->n));
      TRY(expect(p, ']', "']'"));
      if (p->cur.kind == '(') TRY(parse_alias(p, &w->alias));
    }
    t = w;
    h++;
  }
  if (h > KD__SCHEMA_MAX_DEPTH) return perr(p, &p->cur, "at most 64 nested types");
  *out = t;
  *height = h;
  return KD_OK;
}

/* ---- Arguments ---------------------------------------------------------- */

/* default := '-'? (NUMBER | IDENT) | STRING | '[' (default (',' default)*)? ']' */
static kd_status parse_default_item(parser *p, int depth, uint32_t *end) {
  int k = p->cur.kind;
  if (k == '-') {
    advance(p);
    if (p->cur.kind != KD__TK_NUMBER && p->cur.kind != KD__TK_IDENT)
      return perr(p, &p->cur, "number");
    *end = p->cur.end;
    advance(p);
  } else if (k == KD__TK_NUMBER || k == KD__TK_IDENT || k == KD__TK_STRING) {
    *end = p->cur.end;
    advance(p);
  } else if (k == '[') {
    if (depth >= KD__SCHEMA_MAX_DEPTH) return perr(p, &p->cur, "at most 64 nested lists");
    advance(p);
    if (p->cur.kind != ']') {
      for (;;) {
        TRY(parse_default_item(p, depth + 1, end));
        if (p->cur.kind == ',') {
          advance(p);
          continue;
        }
        if (p->cur.kind == ']') break;
        return perr(p, &p->cur, "',' or ']'");
      }
    }
    *end = p->cur.end;
    advance(p);
  } else {
    return perr(p, &p->cur, "default value");
  }
  return KD_OK;
}

/* argument := type NAME ('=' default)? ; return := type NAME?
 * The node (16 bytes) comes with a type (>= 1 byte) and, for arguments, a
 * name; an unnamed return takes its type's byte plus a separator or end. */
static kd_status parse_argument(parser *p, bool is_return, bool kwarg_only, kd_argument **out) {
  kd_argument *a = palloc(p, sizeof(kd_argument));
  if (!a) return arena_overflow();
  memset(a, 0, sizeof *a);
  a->kwarg_only = kwarg_only;
  kd_type *t;
  int h;
  TRY(parse_type(p, 0, &t, &h));
  kd__rel_set(&a->type, t);
  if (p->cur.kind == KD__TK_IDENT) {
    uint32_t n = p->cur.end - p->cur.start;
    if (n > UINT16_MAX) return perr(p, &p->cur, "a name of at most 65535 bytes");
    a->name_len = (uint16_t)n;
    kd__rel_set(&a->name, take_text(p, p->cur.start, p->cur.end));
    advance(p);
  } else if (!is_return) {
    return perr(p, &p->cur, "argument name");
  }
  if (!is_return && p->cur.kind == '=') {
    advance(p);
    uint32_t start = p->cur.start, end = start;
    TRY(parse_default_item(p, 0, &end));
    if (end - start > UINT16_MAX)
      return error_at(p, start, "a default of at most 65535 bytes", "a longer one");
    a->def_len = (uint16_t)(end - start);
    kd__rel_set(&a->def, take_text(p, start, end));
  }
  *out = a;
  return KD_OK;
}

/* ---- Schema ------------------------------------------------------------- */

static kd_status parse_returns(parser *p, kd_schema *s) {
  size_t mark = p->npend;
  uint32_t n;
  if (p->cur.kind == KD__TK_DOTS) {
    s->varret = 1;
    advance(p);
  } else if (p->cur.kind == '(') {
    advance(p);
    if (p->cur.kind != ')') {
      for (;;) {
        if (p->cur.kind == KD__TK_DOTS) {
          s->varret = 1;
          advance(p);
          if (p->cur.kind != ')') return perr(p, &p->cur, "')' after '...'");
          break;
        }
        kd_argument *r;
        TRY(parse_argument(p, true, false, &r));
        TRY(push(p, r));
        if (p->cur.kind == ',') {
          advance(p);
          continue;
        }
        if (p->cur.kind == ')') break;
        return perr(p, &p->cur, "',' or ')'");
      }
    }
    advance(p);
  } else {
    kd_argument *r;
    TRY(parse_argument(p, true, false, &r));
    TRY(push(p, r));
  }
  TRY(pop_array(p, mark, &s->rets, &n));
  s->nrets = n;
  return KD_OK;
}

static kd_status parse_arguments(parser *p, kd_schema *s) {
  size_t mark = p->npend;
  bool kwarg_only = false;
  uint32_t n;
  kd__token dots = p->cur;
  TRY(expect(p, '(', "'('"));
  if (p->cur.kind != ')') {
    for (;;) {
      if (p->cur.kind == '*' && !kwarg_only) {
        kwarg_only = true;
        advance(p);
      } else if (p->cur.kind == KD__TK_DOTS) {
        dots = p->cur;
        s->vararg = 1;
        advance(p);
        if (p->cur.kind != ')') return perr(p, &p->cur, "')' after '...'");
        break;
      } else {
        kd_argument *a;
        TRY(parse_argument(p, false, kwarg_only, &a));
        TRY(push(p, a));
      }
      if (p->cur.kind == ',') {
        advance(p);
        continue;
      }
      if (p->cur.kind == ')') break;
      return perr(p, &p->cur, "',' or ')'");
    }
  }
  advance(p);
  if (s->vararg) {
    /* As the JIT: a schema with `...` has no defaults. */
    for (size_t i = mark; i < p->npend; i++) {
      const kd_argument *a = p->pend[i];
      if (a->def) {
        char found[96];
        snprintf(found, sizeof found, "a default for '%.*s'", (int)(a->name_len < 64 ? a->name_len : 64),
                 (const char *)kd__rel_get(&a->name));
        return error_at(p, dots.start, "no defaults in a schema with '...'", found);
      }
    }
  }
  TRY(pop_array(p, mark, &s->args, &n));
  s->nargs = n;
  return KD_OK;
}

/* A name of the operator: an identifier of at most 65535 bytes. */
static kd_status take_name(parser *p, const char *what, kd__rel *slot, uint16_t *len) {
  if (p->cur.kind != KD__TK_IDENT) return perr(p, &p->cur, what);
  uint32_t n = p->cur.end - p->cur.start;
  if (n > UINT16_MAX) return perr(p, &p->cur, "a name of at most 65535 bytes");
  kd__rel_set(slot, take_text(p, p->cur.start, p->cur.end));
  *len = (uint16_t)n;
  advance(p);
  return KD_OK;
}

static kd_status parse_schema(parser *p, kd_schema *s) {
  advance(p);
  TRY(take_name(p, "operator name", &s->name, &s->name_len));
  if (p->cur.kind == KD__TK_COLONS) {
    kd__rel_set(&s->ns, kd__rel_get(&s->name));
    s->ns_len = s->name_len;
    advance(p);
    TRY(take_name(p, "operator name", &s->name, &s->name_len));
  }
  if (p->cur.kind == '.') {
    advance(p);
    TRY(take_name(p, "overload name", &s->overload, &s->overload_len));
  }
  if (p->cur.kind != '(') return perr(p, &p->cur, s->overload ? "'('" : "'.', '::' or '('");
  TRY(parse_arguments(p, s));
  TRY(expect(p, KD__TK_ARROW, "'->'"));
  TRY(parse_returns(p, s));
  if (p->cur.kind != KD__TK_EOF) return perr(p, &p->cur, "end of input");
  return KD_OK;
}

/* ---- Repeated signatures ------------------------------------------------ *
 *
 * Registering many operators with one signature (overloads, generated code,
 * custom operators made in bulk) parses the same text after the name over and
 * over. A schema whose name part is plain, IDENT ('::' IDENT)? ('.' IDENT)?
 * directly followed by '(', parses its rest exactly as any other schema with
 * the same rest does: the lexer and parser look at nothing before the '('
 * once they reach it. So when the rest is byte for byte that of a schema
 * parsed successfully before, the block is made from that schema's block: its
 * text from the '(' on and its nodes are copied as they are (every link among
 * them is relative, and they keep their offset from each other), and the name
 * part goes in front of them. Only successful parses are remembered, so every
 * error comes from the parser. A rest is remembered the second time it is
 * seen in a row in its slot, so that schemas that are all different pay only
 * for a hash. */

#define KD__REST_SLOTS 16u
#define KD__REST_MAX_LEN 4096u /* longer schemas are always parsed (bounds what is kept) */

typedef struct rest_template {
  size_t rest_len;  /* the text from the '(' to the end, kept after the block */
  size_t used;      /* the block's size */
  size_t rest_off;  /* offset of the '(' in the block */
  kd_schema *block; /* a schema parsed from some plain name part + this rest */
} rest_template;

typedef struct rest_slot {
  uint64_t seen;    /* hash of the last rest that missed here */
  rest_template *t;
} rest_slot;

static rest_slot rest_slots[KD__REST_SLOTS];
static pthread_mutex_t rest_lock = PTHREAD_MUTEX_INITIALIZER;

/* The name part of a schema, when plain. Offsets in the text; len is the
 * offset of the '('. */
typedef struct plain_head {
  uint32_t len;
  uint32_t ns_len;  /* 0: no namespace */
  uint32_t name_start, name_len;
  uint32_t ov_start, ov_len; /* ov_len 0: no overload */
} plain_head;

/* Length of the identifier at text[i] (0 when none), bounded by len. */
static uint32_t ident_at(const char *text, size_t len, size_t i) {
  if (i >= len || !(kd__lex_class[(unsigned char)text[i]] & KD__LC_START)) return 0;
  size_t j = i + 1;
  while (j < len && (kd__lex_class[(unsigned char)text[j]] & KD__LC_CONT)) j++;
  return j - i > UINT16_MAX ? 0 : (uint32_t)(j - i);
}

static bool head_is_plain(const char *text, size_t len, plain_head *h) {
  memset(h, 0, sizeof *h);
  uint32_t n = ident_at(text, len, 0);
  if (!n) return false;
  if (n + 1 < len && text[n] == ':' && text[n + 1] == ':') {
    h->ns_len = n;
    h->name_start = n + 2;
    if (!(n = ident_at(text, len, h->name_start))) return false;
  }
  h->name_len = n;
  uint32_t i = h->name_start + n;
  if (i < len && text[i] == '.') {
    if (!(n = ident_at(text, len, i + 1))) return false;
    h->ov_start = i + 1;
    h->ov_len = n;
    i += 1 + n;
  }
  if (i >= len || text[i] != '(') return false;
  h->len = i;
  return true;
}

/* A new block: the name part of `text` (plain, as h says), then the
 * template's text from its '(' on and its nodes. NULL when out of memory. */
static kd_schema *from_template(const rest_template *t, const char *text, const plain_head *h) {
  size_t hdr_sz = (sizeof(kd_schema) + 7) & ~(size_t)7;
  size_t start = hdr_sz + h->len;
  /* The '(' lands at the same offset modulo 8, so the nodes stay aligned. */
  size_t rest_off = start + ((t->rest_off - start) & 7u);
  size_t tail = t->used - t->rest_off;
  char *b = kd__malloc(rest_off + tail);
  if (!b) return NULL;
  char *name_part = b + rest_off - h->len;
  memset(b, 0, (size_t)(name_part - b));
  memcpy(name_part, text, h->len);
  memcpy(b + rest_off, (const char *)t->block + t->rest_off, tail);
  const kd_schema *o = t->block;
  kd_schema *s = (kd_schema *)(void *)b;
  kd__rel shift = (kd__rel)((ptrdiff_t)rest_off - (ptrdiff_t)t->rest_off);
  s->nargs = o->nargs;
  s->nrets = o->nrets;
  s->args = o->args ? o->args + shift : 0;
  s->rets = o->rets ? o->rets + shift : 0;
  s->vararg = o->vararg;
  s->varret = o->varret;
  if (h->ns_len) {
    kd__rel_set(&s->ns, name_part);
    s->ns_len = (uint16_t)h->ns_len;
    name_part[h->ns_len] = '\0';
  }
  kd__rel_set(&s->name, name_part + h->name_start);
  s->name_len = (uint16_t)h->name_len;
  name_part[h->name_start + h->name_len] = '\0';
  if (h->ov_len) {
    kd__rel_set(&s->overload, name_part + h->ov_start);
    s->overload_len = (uint16_t)h->ov_len;
    /* the byte after it is the '(', a NUL in the template's block */
  }
  return s;
}

/* Remembers a parsed block as the template of its rest (in its slot). */
static void remember_rest(rest_slot *slot, const char *text, size_t len, const plain_head *h,
                          const kd_schema *block, size_t used) {
  size_t rest_len = len - h->len;
  size_t used8 = (used + 7) & ~(size_t)7;
  size_t t_sz = (sizeof(rest_template) + 7) & ~(size_t)7;
  rest_template *t = kd__malloc(t_sz + used8 + rest_len);
  if (!t) return; /* only slower next time */
  t->rest_len = rest_len;
  t->used = used;
  t->rest_off = ((sizeof(kd_schema) + 7) & ~(size_t)7) + h->len;
  t->block = (kd_schema *)(void *)((char *)t + t_sz);
  memcpy(t->block, block, used);
  memcpy((char *)t->block + used8, text + h->len, rest_len);
  pthread_mutex_lock(&rest_lock);
  rest_template *old = slot->t;
  slot->t = t;
  pthread_mutex_unlock(&rest_lock);
  kd__free(old);
}

static const char *template_rest(const rest_template *t) {
  return (const char *)t->block + ((t->used + 7) & ~(size_t)7);
}

/* The schema made from a remembered template, when the rest of `text` has
 * one (KD_OK, *out set); else *slot_out, *remember say what to do after a
 * successful parse. */
static bool parse_from_template(const char *text, size_t len, kd_schema **out, kd_status *st,
                                rest_slot **slot_out, plain_head *h, bool *remember) {
  *slot_out = NULL;
  *remember = false;
  if (len > KD__REST_MAX_LEN || !head_is_plain(text, len, h)) return false;
  const char *rest = text + h->len;
  size_t rest_len = len - h->len;
  uint64_t hash = kd__hash_mix(kd__hash_bytes(rest, rest_len, 0x9e3779b97f4a7c15ull));
  rest_slot *slot = &rest_slots[hash % KD__REST_SLOTS];
  pthread_mutex_lock(&rest_lock);
  const rest_template *t = slot->t;
  if (t && t->rest_len == rest_len && memcmp(template_rest(t), rest, rest_len) == 0) {
    kd_schema *s = from_template(t, text, h);
    pthread_mutex_unlock(&rest_lock);
    *st = s ? KD_OK : kd__oom("schema");
    *out = s;
    return true;
  }
  *remember = slot->seen == hash;
  slot->seen = hash;
  pthread_mutex_unlock(&rest_lock);
  *slot_out = slot;
  return false;
}

kd_status kd_schema_parse(const char *text, size_t len, kd_schema **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_schema_parse: out is NULL");
  *out = NULL;
  if (!text && len) return kd_set_error(KD_EINVAL, "kd_schema_parse: text is NULL");
  if (len > KD__SCHEMA_MAX_LEN)
    return kd_set_error(KD_ESYNTAX, "line 1, column 1: expected a schema of at most %u bytes, found %zu bytes",
                        KD__SCHEMA_MAX_LEN, len);
  rest_slot *slot;
  plain_head head;
  bool remember;
  kd_status cached_st;
  if (parse_from_template(text, len, out, &cached_st, &slot, &head, &remember)) return cached_st;

  /* Scratch: [header | text copy + pad | nodes ... (arena_cap) | pending
   * pointers | cuts]. */
  size_t text_sz = (len + KD__LEX_PAD + 7) & ~(size_t)7;
  size_t hdr_sz = (sizeof(kd_schema) + 7) & ~(size_t)7;
  size_t arena_cap = hdr_sz + text_sz + KD__ARENA_PER_BYTE * len + KD__ARENA_FIXED;
  size_t pend_cap = len + 16;
  size_t need = arena_cap + pend_cap * (sizeof(void *) + sizeof(uint32_t));
  union {
    uint64_t align;
    char bytes[KD__STACK_SCRATCH];
  } stack_scratch;
  char *scratch = stack_scratch.bytes;
  if (need > sizeof stack_scratch) {
    scratch = kd__malloc(need);
    if (!scratch) return kd__oom("schema parser scratch");
  }

  parser p;
  p.base = scratch;
  p.cap = arena_cap;
  p.used = hdr_sz + text_sz;
  p.text = scratch + hdr_sz;
  if (len) memcpy(p.text, text, len);
  memset(p.text + len, 0, text_sz - len);
  p.lx.src = (const unsigned char *)p.text;
  p.lx.len = (uint32_t)len;
  p.lx.pos = 0;
  p.pend = (const void **)(void *)(scratch + arena_cap);
  p.npend = 0;
  p.pend_cap = pend_cap;
  p.cuts = (uint32_t *)(void *)(scratch + arena_cap + pend_cap * sizeof(void *));
  p.ncuts = 0;
  p.cuts_cap = pend_cap;

  kd_schema *s = (kd_schema *)(void *)scratch;
  memset(s, 0, sizeof *s);
  kd_status st = parse_schema(&p, s);
  if (st == KD_OK) {
    for (size_t i = 0; i < p.ncuts; i++) p.text[p.cuts[i]] = '\0';
    kd_schema *block = kd__malloc(p.used);
    if (!block) {
      st = kd__oom("schema");
    } else {
      memcpy(block, scratch, p.used);
      *out = block;
      if (remember) remember_rest(slot, text, len, &head, block, p.used);
    }
  }
  if (scratch != stack_scratch.bytes) kd__free(scratch);
  return st;
}

void kd_schema_free(kd_schema *schema) { kd__free(schema); }
