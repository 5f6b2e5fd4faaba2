/*
 * lexer.h: the tokens of the schema language. Header-only (static inline) so
 * that the parser's hot loop has no calls. Any byte value is allowed
 * (unknown bytes give KD__TK_BAD).
 *
 * The buffer must hold a NUL at src[len] followed by KD__LEX_PAD - 1 more
 * readable bytes: scans stop at that NUL without bounds checks, and
 * identifiers are measured 16 bytes at a time. A NUL before `len` is a bad
 * byte; the one at `len` is the end.
 */
#ifndef KD_SCHEMA_LEXER_H
#define KD_SCHEMA_LEXER_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define KD__LEX_PAD 16

/* Single-character punctuation tokens use the character itself as kind. */
enum {
  KD__TK_EOF = 256,
  KD__TK_IDENT,  /* [A-Za-z_][A-Za-z0-9_]* */
  KD__TK_NUMBER, /* [0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)?j? */
  KD__TK_STRING, /* '...' or "..." with backslash escapes, on one line */
  KD__TK_ARROW,  /* -> */
  KD__TK_DOTS,   /* ... */
  KD__TK_COLONS, /* :: */
  KD__TK_BAD     /* a byte that starts no token, or an unterminated string */
};

typedef struct kd__token {
  int kind;
  uint32_t start; /* offset of the first byte */
  uint32_t end;   /* offset one past the last byte */
} kd__token;

typedef struct kd__lexer {
  const unsigned char *src;
  uint32_t len;
  uint32_t pos;
} kd__lexer;

/* Character classes: 1 ident start, 2 ident continue, 4 digit, 8 space. */
extern const uint8_t kd__lex_class[256];
#define KD__LC_START 1
#define KD__LC_CONT 2
#define KD__LC_DIGIT 4
#define KD__LC_SPACE 8

/* Number of identifier characters at p (stops at the NUL terminator). */
static inline uint32_t kd__lex_ident_span(const unsigned char *p) {
#if defined(__SSE2__)
  uint32_t n = 0;
  for (;;) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + n));
    __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                                  _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    __m128i under = _mm_cmpeq_epi8(v, _mm_set1_epi8('_'));
    unsigned ok = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), under));
    unsigned stop = ~ok & 0xFFFFu;
    if (stop) return n + (uint32_t)__builtin_ctz(stop);
    n += 16; /* all 16 are identifier bytes, so the NUL lies further on */
  }
#else
  uint32_t n = 0;
  while (kd__lex_class[p[n]] & KD__LC_CONT) n++;
  return n;
#endif
}

/* Reads the next token into *out. (Writing through a pointer: returning the
 * struct by value made compilers store it in halves and reload it whole, a
 * store-forwarding stall that cost more than the lexing.) */
static inline void kd__lex_next(kd__lexer *lx, kd__token *out) {
  const unsigned char *s = lx->src;
  uint32_t n = lx->len, i = lx->pos;
  int kind;
  while (kd__lex_class[s[i]] & KD__LC_SPACE) i++;
  out->start = i;
  unsigned char c = s[i];
  uint8_t cls = kd__lex_class[c];
  if (cls & KD__LC_START) {
    i += 1 + kd__lex_ident_span(s + i + 1);
    kind = KD__TK_IDENT;
  } else if (c == '\0' && i >= n) {
    kind = KD__TK_EOF;
  } else if (cls & KD__LC_DIGIT) {
    i++;
    while (kd__lex_class[s[i]] & KD__LC_DIGIT) i++;
    if (s[i] == '.') {
      i++;
      while (kd__lex_class[s[i]] & KD__LC_DIGIT) i++;
    }
    if (s[i] == 'e' || s[i] == 'E') {
      uint32_t k = i + 1;
      if (s[k] == '+' || s[k] == '-') k++;
      if (kd__lex_class[s[k]] & KD__LC_DIGIT) {
        while (kd__lex_class[s[k]] & KD__LC_DIGIT) k++;
        i = k;
      }
    }
    if (s[i] == 'j') i++;
    kind = KD__TK_NUMBER;
  } else if (c == '\'' || c == '"') {
    i++;
    kind = KD__TK_BAD;
    for (;;) {
      unsigned char d = s[i];
      if (d == c) {
        i++;
        kind = KD__TK_STRING;
        break;
      }
      if (d == '\n' || d == '\r' || d == '\0') break;
      if (d == '\\') {
        if (s[i + 1] == '\0' || s[i + 1] == '\n' || s[i + 1] == '\r') break;
        i += 2;
      } else {
        i++;
      }
    }
    if (kind == KD__TK_BAD) i = n; /* unterminated: the rest is the bad token */
  } else if (c == '-' && s[i + 1] == '>') {
    i += 2;
    kind = KD__TK_ARROW;
  } else if (c == '.' && s[i + 1] == '.' && s[i + 2] == '.') {
    i += 3;
    kind = KD__TK_DOTS;
  } else if (c == ':' && s[i + 1] == ':') {
    i += 2;
    kind = KD__TK_COLONS;
  } else {
    switch (c) {
      case '(': case ')': case '[': case ']': case ',': case '*': case '?':
      case '!': case '|': case '=': case '.': case '-':
        kind = c;
        break;
      default:
        kind = KD__TK_BAD;
        break;
    }
    i++;
  }
  out->kind = kind;
  out->end = i;
  lx->pos = i;
}

#endif /* KD_SCHEMA_LEXER_H */
