/*
 * lang_lex.c: the tokens of the little language, and kdc_lang_complete.
 *
 * Tokens, as Python spells them where Python has them:
 * - names: a letter or '_' then letters, digits, '_'; a name may be
 *   qualified by a namespace with no spaces around "::" (demo::neg);
 *   True, False and None are keywords;
 * - integers: decimal, 0x hex, 0o octal, 0b binary (int64; a larger one is
 *   an error); floats: 1.5, 1., .5, 1e-3, 2.5E+10; imaginary numbers: 2j,
 *   1.5j (complex); '_' between digits is allowed, as in Python;
 * - strings: '...' or "..." on one line, with the escapes \\ \' \" \n \t \r
 *   \0 \a \b \f \v \xHH, and backslash-newline to continue the string on the
 *   next line; an unknown escape is an error;
 * - punctuation: ( ) [ ] , . = ; + - * / @
 * - '#' starts a comment to the end of the line; a backslash at the end of a
 *   line joins it with the next; newlines inside brackets are spaces;
 *   otherwise a newline (or ';') ends a statement.
 * Positions are 1-based lines and byte columns.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang_impl.h"

void kdc_lex_init(kdc_lexer *lx, const char *src, size_t len, kdc_arena *arena, kdc_lerr *err) {
  memset(lx, 0, sizeof *lx);
  lx->src = src;
  lx->len = len;
  lx->line = 1;
  lx->col = 1;
  lx->arena = arena;
  lx->err = err;
}

static int cur(const kdc_lexer *lx) {
  return lx->off < lx->len ? (unsigned char)lx->src[lx->off] : -1;
}
static int at(const kdc_lexer *lx, size_t k) {
  return lx->off + k < lx->len ? (unsigned char)lx->src[lx->off + k] : -1;
}
static void adv(kdc_lexer *lx) {
  if (lx->off >= lx->len) return;
  if (lx->src[lx->off] == '\n') {
    lx->line++;
    lx->col = 1;
  } else {
    lx->col++;
  }
  lx->off++;
}
static kdc_lpos here(const kdc_lexer *lx) {
  kdc_lpos p = {lx->line, lx->col};
  return p;
}

static bool is_name_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_name_char(int c) { return is_name_start(c) || is_digit(c); }

static int bad_char(kdc_lexer *lx, kdc_lpos pos, int c) {
  if (c >= 0x20 && c < 0x7f)
    return kdc_lerr_set(lx->err, pos, "invalid character '%c'", c);
  return kdc_lerr_set(lx->err, pos, "invalid character (byte 0x%02x)", (unsigned)c);
}

/* Skips spaces, comments, backslash-newlines; and newlines inside brackets. */
static int skip_space(kdc_lexer *lx) {
  for (;;) {
    int c = cur(lx);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      adv(lx);
    } else if (c == '#') {
      while (cur(lx) >= 0 && cur(lx) != '\n') adv(lx);
    } else if (c == '\\') {
      kdc_lpos pos = here(lx);
      size_t k = 1;
      while (at(lx, k) == ' ' || at(lx, k) == '\t' || at(lx, k) == '\r') k++;
      if (at(lx, k) == '\n') {
        while (k-- > 0) adv(lx);
        adv(lx); /* the newline */
      } else if (at(lx, k) < 0) {
        return kdc_lerr_set(lx->err, pos, "unexpected end of input after line continuation");
      } else {
        return kdc_lerr_set(lx->err, pos, "unexpected character after line continuation character");
      }
    } else if (c == '\n' && (lx->depth > 0 || lx->joins)) {
      adv(lx);
    } else {
      return 0;
    }
  }
}

static int lex_number(kdc_lexer *lx, kdc_token *t) {
  const char *s = lx->src + lx->off;
  size_t n = 0, avail = lx->len - lx->off;
  char buf[256];
  size_t blen = 0;
  bool is_float = false;
  int base = 10;
  /* Copy the literal without '_' separators into buf. */
#define PUT(ch)                                            \
  do {                                                     \
    if (blen + 1 >= sizeof buf) goto too_long;             \
    buf[blen++] = (char)(ch);                              \
  } while (0)
  if (s[0] == '0' && n + 1 < avail && s[1] != '\0' && strchr("xXoObB", s[1])) {
    base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
    n = 2;
    while (n < avail) {
      int c = (unsigned char)s[n];
      bool ok = base == 16 ? (is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                : base == 8 ? (c >= '0' && c <= '7')
                            : (c == '0' || c == '1');
      if (ok) PUT(c);
      else if (c != '_') break;
      n++;
    }
    if (blen == 0) return kdc_lerr_set(lx->err, t->pos, "invalid number literal");
  } else {
    while (n < avail && (is_digit((unsigned char)s[n]) || (s[n] == '_' && blen > 0))) {
      if (s[n] != '_') PUT(s[n]);
      n++;
    }
    if (n < avail && s[n] == '.') {
      is_float = true;
      PUT('.');
      n++;
      while (n < avail && (is_digit((unsigned char)s[n]) || s[n] == '_')) {
        if (s[n] != '_') PUT(s[n]);
        n++;
      }
    }
    if (n < avail && (s[n] == 'e' || s[n] == 'E')) {
      size_t m = n + 1;
      if (m < avail && (s[m] == '+' || s[m] == '-')) m++;
      if (m < avail && is_digit((unsigned char)s[m])) {
        is_float = true;
        PUT('e');
        if (s[n + 1] == '-' || s[n + 1] == '+') PUT(s[n + 1]);
        n = m;
        while (n < avail && (is_digit((unsigned char)s[n]) || s[n] == '_')) {
          if (s[n] != '_') PUT(s[n]);
          n++;
        }
      }
    }
  }
  buf[blen] = '\0';
  bool imag = false;
  if (n < avail && (s[n] == 'j' || s[n] == 'J') && base == 10) {
    imag = true;
    n++;
  }
  if (n < avail && is_name_char((unsigned char)s[n]))
    return kdc_lerr_set(lx->err, t->pos, "invalid number literal");
  if (is_float || imag) {
    errno = 0;
    t->d = strtod(buf, NULL);
    t->kind = imag ? KDC_T_IMAG : KDC_T_FLOAT;
  } else {
    errno = 0;
    unsigned long long v = strtoull(buf, NULL, base);
    if (errno == ERANGE || v > (unsigned long long)INT64_MAX)
      return kdc_lerr_set(lx->err, t->pos, "integer literal %.*s is too large (int64 holds at most "
                          "9223372036854775807)", (int)n, s);
    t->i = (int64_t)v;
    t->kind = KDC_T_INT;
  }
  while (n-- > 0) adv(lx);
  return 0;
too_long:
  return kdc_lerr_set(lx->err, t->pos, "number literal too long");
#undef PUT
}

static int hexval(int c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int lex_string(kdc_lexer *lx, kdc_token *t) {
  int quote = cur(lx);
  adv(lx);
  kdc_sbuf b = {0};
  for (;;) {
    int c = cur(lx);
    if (c < 0 || c == '\n') {
      kdc_sbuf_free(&b);
      return kdc_lerr_set(lx->err, t->pos, "unterminated string literal");
    }
    if (c == quote) {
      adv(lx);
      break;
    }
    if (c != '\\') {
      char ch = (char)c;
      kdc_sbuf_putn(&b, &ch, 1);
      adv(lx);
      continue;
    }
    kdc_lpos epos = here(lx);
    adv(lx);
    int e = cur(lx);
    char ch;
    switch (e) {
      case '\n': adv(lx); continue; /* continues on the next line */
      case '\\': ch = '\\'; break;
      case '\'': ch = '\''; break;
      case '"': ch = '"'; break;
      case 'n': ch = '\n'; break;
      case 't': ch = '\t'; break;
      case 'r': ch = '\r'; break;
      case '0': ch = '\0'; break;
      case 'a': ch = '\a'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'v': ch = '\v'; break;
      case 'x': {
        int h1 = hexval(at(lx, 1)), h2 = hexval(at(lx, 2));
        if (h1 < 0 || h2 < 0) {
          kdc_sbuf_free(&b);
          return kdc_lerr_set(lx->err, epos, "invalid \\x escape: two hex digits expected");
        }
        adv(lx);
        adv(lx);
        ch = (char)(h1 * 16 + h2);
        break;
      }
      default:
        kdc_sbuf_free(&b);
        if (e < 0) return kdc_lerr_set(lx->err, t->pos, "unterminated string literal");
        return kdc_lerr_set(lx->err, epos, "unknown escape sequence '\\%c'", e);
    }
    adv(lx);
    kdc_sbuf_putn(&b, &ch, 1);
  }
  if (b.failed) {
    kdc_sbuf_free(&b);
    return kdc_lerr_oom(lx->err, t->pos);
  }
  t->kind = KDC_T_STRING;
  t->len = b.len;
  t->text = kdc_arena_strndup(lx->arena, kdc_sbuf_str(&b), b.len);
  kdc_sbuf_free(&b);
  return t->text ? 0 : kdc_lerr_oom(lx->err, t->pos);
}

static int lex_one(kdc_lexer *lx, kdc_token *t) {
  memset(t, 0, sizeof *t);
  if (skip_space(lx)) return -1;
  t->pos = here(lx);
  int c = cur(lx);
  if (c < 0) {
    t->kind = KDC_T_EOF;
    return 0;
  }
  if (c == '\n' || c == ';') {
    adv(lx);
    t->kind = KDC_T_NEWLINE;
    return 0;
  }
  if (is_name_start(c)) {
    size_t start = lx->off;
    for (;;) {
      while (is_name_char(cur(lx))) adv(lx);
      if (cur(lx) == ':' && at(lx, 1) == ':' && is_name_start(at(lx, 2))) {
        adv(lx);
        adv(lx);
        continue;
      }
      break;
    }
    size_t n = lx->off - start;
    const char *s = lx->src + start;
    if (n == 4 && !memcmp(s, "True", 4)) t->kind = KDC_T_TRUE;
    else if (n == 5 && !memcmp(s, "False", 5)) t->kind = KDC_T_FALSE;
    else if (n == 4 && !memcmp(s, "None", 4)) t->kind = KDC_T_NONE;
    else t->kind = KDC_T_NAME;
    t->text = kdc_arena_strndup(lx->arena, s, n);
    t->len = n;
    return t->text ? 0 : kdc_lerr_oom(lx->err, t->pos);
  }
  if (is_digit(c) || (c == '.' && is_digit(at(lx, 1)))) return lex_number(lx, t);
  if (c == '\'' || c == '"') return lex_string(lx, t);
  switch (c) {
    case '(': t->kind = KDC_T_LPAREN; lx->depth++; break;
    case '[': t->kind = KDC_T_LBRACKET; lx->depth++; break;
    case ')': t->kind = KDC_T_RPAREN; if (lx->depth > 0) lx->depth--; break;
    case ']': t->kind = KDC_T_RBRACKET; if (lx->depth > 0) lx->depth--; break;
    case ',': t->kind = KDC_T_COMMA; break;
    case '.': t->kind = KDC_T_DOT; break;
    case '=': t->kind = KDC_T_ASSIGN; break;
    case '+': t->kind = KDC_T_PLUS; break;
    case '-': t->kind = KDC_T_MINUS; break;
    case '*': t->kind = KDC_T_STAR; break;
    case '/': t->kind = KDC_T_SLASH; break;
    case '@': t->kind = KDC_T_AT; break;
    default: return bad_char(lx, t->pos, c);
  }
  adv(lx);
  return 0;
}

int kdc_lex_peek(kdc_lexer *lx, int k, kdc_token **out) {
  while (lx->nahead <= k) {
    if (lex_one(lx, &lx->ahead[lx->nahead])) return -1;
    switch (lx->ahead[lx->nahead].kind) {
      case KDC_T_COMMA: case KDC_T_ASSIGN: case KDC_T_PLUS: case KDC_T_MINUS:
      case KDC_T_STAR: case KDC_T_SLASH: case KDC_T_AT:
        lx->joins = 1;
        break;
      default:
        lx->joins = 0;
    }
    lx->nahead++;
  }
  *out = &lx->ahead[k];
  return 0;
}

int kdc_lex_next(kdc_lexer *lx, kdc_token *out) {
  kdc_token *t;
  if (kdc_lex_peek(lx, 0, &t)) return -1;
  *out = *t;
  lx->ahead[0] = lx->ahead[1];
  lx->nahead--;
  return 0;
}

const char *kdc_tok_describe(kdc_lexer *lx, const kdc_token *t) {
  static const char *const fixed[] = {
      [KDC_T_EOF] = "end of input", [KDC_T_NEWLINE] = "end of line",
      [KDC_T_TRUE] = "True",        [KDC_T_FALSE] = "False",
      [KDC_T_NONE] = "None",        [KDC_T_LPAREN] = "'('",
      [KDC_T_RPAREN] = "')'",       [KDC_T_LBRACKET] = "'['",
      [KDC_T_RBRACKET] = "']'",     [KDC_T_COMMA] = "','",
      [KDC_T_DOT] = "'.'",          [KDC_T_ASSIGN] = "'='",
      [KDC_T_PLUS] = "'+'",         [KDC_T_MINUS] = "'-'",
      [KDC_T_STAR] = "'*'",         [KDC_T_SLASH] = "'/'",
      [KDC_T_AT] = "'@'",
  };
  char buf[96];
  switch (t->kind) {
    case KDC_T_NAME: snprintf(buf, sizeof buf, "name '%.64s'", t->text); break;
    case KDC_T_INT: snprintf(buf, sizeof buf, "integer %lld", (long long)t->i); break;
    case KDC_T_FLOAT: snprintf(buf, sizeof buf, "number %g", t->d); break;
    case KDC_T_IMAG: snprintf(buf, sizeof buf, "number %gj", t->d); break;
    case KDC_T_STRING: return "a string";
    case KDC_T_NEWLINE:
      /* ';' and newline are the same token; name the character. */
      if (t->pos.line >= 1 && lx->src) {
        /* Find the byte at the token's position. */
        int line = 1;
        size_t i = 0;
        while (i < lx->len && line < t->pos.line) {
          if (lx->src[i] == '\n') line++;
          i++;
        }
        i += (size_t)(t->pos.col - 1);
        if (i < lx->len && lx->src[i] == ';') return "';'";
      }
      return fixed[t->kind];
    default: return fixed[t->kind];
  }
  char *s = kdc_arena_strndup(lx->arena, buf, strlen(buf));
  return s ? s : "a token";
}

/* ---- kdc_lang_complete --------------------------------------------------- */

int kdc_lang_complete(const char *src, size_t len) {
  int depth = 0;
  char last = 0; /* the last significant character outside strings and comments */
  size_t i = 0;
  while (i < len) {
    char c = src[i];
    if (c == '#') {
      while (i < len && src[i] != '\n') i++;
      continue;
    }
    if (c == '\'' || c == '"') {
      char q = c;
      i++;
      bool closed = false;
      while (i < len) {
        if (src[i] == '\\') {
          i += 2;
          continue;
        }
        if (src[i] == '\n') return 1; /* an unterminated string: an error to report now */
        if (src[i] == q) {
          closed = true;
          i++;
          break;
        }
        i++;
      }
      if (i >= len && !closed) return 0; /* open at the end (or continued by a backslash) */
      last = q;
      continue;
    }
    if (c == '\\') {
      /* A continuation when only spaces follow on this line. */
      size_t k = i + 1;
      while (k < len && (src[k] == ' ' || src[k] == '\t' || src[k] == '\r')) k++;
      if (k >= len) return 0;
      last = c;
      i = k;
      continue;
    }
    if (c == '(' || c == '[') depth++;
    if ((c == ')' || c == ']') && depth > 0) depth--;
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\f') last = c;
    i++;
  }
  if (depth > 0) return 0;
  if (last && strchr("+-*/@=,\\", last)) return 0;
  return 1;
}
