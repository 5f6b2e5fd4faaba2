/*
 * lang_impl.h: the parts of the little language (lang.h) shared between its
 * files. Nothing here is for other code.
 *
 *   lang_util.c    a growing text buffer, the arena, the interpreter's error
 *   lang_lex.c     tokens (and kd_lang_complete)
 *   lang_parse.c   statements and expressions into syntax trees
 *   lang_eval.c    the interpreter: kd_lang_new/run/free, names, builtins
 *   lang_call.c    operator calls: overload resolution, argument conversion
 *   lang_tensor.c  tensor literals (nested lists into tensors)
 *
 * Ownership: syntax trees and the text of tokens live in an arena that one
 * kd_lang_run owns and frees at its end; values (kd__lval) own their
 * kd_value; the interpreter owns its variables.
 */
#ifndef KD_TOOL_LANG_IMPL_H
#define KD_TOOL_LANG_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kd/kd.h"
#include "lang.h"

/* ---- Text buffer and arena (lang_util.c) ---------------------------------- */

/* A growing NUL-terminated string. `data` is owned (NULL until the first
 * write); once `failed` is set (out of memory) writes are dropped. */
typedef struct kd__sbuf {
  char *data;
  size_t len, cap;
  bool failed;
} kd__sbuf;

void kd__sbuf_putn(kd__sbuf *b, const char *s, size_t n);
void kd__sbuf_puts(kd__sbuf *b, const char *s);
void kd__sbuf_printf(kd__sbuf *b, const char *fmt, ...) KD_PRINTF_LIKE(2, 3);
void kd__sbuf_vprintf(kd__sbuf *b, const char *fmt, va_list ap);
/* The text so far ("" before any write). */
const char *kd__sbuf_str(const kd__sbuf *b);
void kd__sbuf_free(kd__sbuf *b);

/* Bump allocation of zeroed memory, all freed at once. */
typedef struct kd__arena_block kd__arena_block;
typedef struct kd__arena {
  kd__arena_block *head;
} kd__arena;

/* NULL when out of memory. */
void *kd__arena_alloc(kd__arena *a, size_t size);
/* A NUL-terminated copy of n bytes. NULL when out of memory. */
char *kd__arena_strndup(kd__arena *a, const char *s, size_t n);
void kd__arena_free(kd__arena *a);

/* ---- Positions and the interpreter's error ------------------------------- */

typedef struct kd__lpos {
  int line, col; /* 1-based; col counts bytes */
} kd__lpos;

/* The error state every part reports to. The first error recorded wins
 * until kd__lerr_clear; functions that fail return -1 after recording. */
typedef struct kd__lerr {
  bool failed;
  kd__lpos pos;
  kd__sbuf msg;
} kd__lerr;

int kd__lerr_set(kd__lerr *e, kd__lpos pos, const char *fmt, ...) KD_PRINTF_LIKE(3, 4);
/* Records "out of memory". */
int kd__lerr_oom(kd__lerr *e, kd__lpos pos);
void kd__lerr_clear(kd__lerr *e);

/* ---- Tokens (lang_lex.c) --------------------------------------------------- */

typedef enum kd__tok_kind {
  KD__T_EOF = 0,
  KD__T_NEWLINE, /* also ';': the end of a statement */
  KD__T_NAME,    /* text: identifier, possibly qualified (demo::neg) */
  KD__T_INT,     /* i */
  KD__T_FLOAT,   /* d */
  KD__T_IMAG,    /* d: 2j */
  KD__T_STRING,  /* text (decoded, arena), len */
  KD__T_TRUE,
  KD__T_FALSE,
  KD__T_NONE,
  KD__T_LPAREN,
  KD__T_RPAREN,
  KD__T_LBRACKET,
  KD__T_RBRACKET,
  KD__T_COMMA,
  KD__T_DOT,
  KD__T_ASSIGN,
  KD__T_PLUS,
  KD__T_MINUS,
  KD__T_STAR,
  KD__T_SLASH,
  KD__T_AT,
} kd__tok_kind;

typedef struct kd__token {
  kd__tok_kind kind;
  kd__lpos pos;
  const char *text; /* NAME, STRING: arena copy, NUL-terminated */
  size_t len;
  int64_t i;
  double d;
} kd__token;

/* A lexer over one source, producing tokens on demand (so that statements
 * before a bad token run). Newlines inside brackets, comments and
 * backslash-newline are skipped. */
typedef struct kd__lexer {
  const char *src;
  size_t len, off;
  int line, col;
  int depth; /* open brackets: newlines inside are not tokens */
  int joins; /* the last token was an operator, ',' or '=': a newline after it is
              * not a token either (kd_lang_complete asks for more in both cases) */
  int nest; /* the parser's recursion depth, bounded */
  kd__token ahead[2];
  int nahead;
  kd__arena *arena;
  kd__lerr *err;
} kd__lexer;

void kd__lex_init(kd__lexer *lx, const char *src, size_t len, kd__arena *arena, kd__lerr *err);
/* The token `k` places ahead (0 or 1) without consuming it; -1 on a lexical
 * error (recorded in err). */
int kd__lex_peek(kd__lexer *lx, int k, kd__token **out);
/* Consumes the next token into *out; -1 on a lexical error. */
int kd__lex_next(kd__lexer *lx, kd__token *out);
/* "name 'x'", "integer 3", "'('", "end of input" ... for messages; static or
 * arena storage. */
const char *kd__tok_describe(kd__lexer *lx, const kd__token *t);

/* ---- Syntax trees (lang_parse.c) ------------------------------------------ */

typedef enum kd__node_kind {
  KD__N_INT,    /* i */
  KD__N_FLOAT,  /* d */
  KD__N_IMAG,   /* d */
  KD__N_STR,    /* s, slen */
  KD__N_BOOL,   /* i (0 or 1) */
  KD__N_NONE,
  KD__N_NAME,   /* s: a name, possibly qualified */
  KD__N_ATTR,   /* a.s: an operator's overload */
  KD__N_LIST,   /* items */
  KD__N_TUPLE,  /* items */
  KD__N_CALL,   /* a(items); an item of kind KWARG is a keyword argument */
  KD__N_KWARG,  /* s=a, only among a call's items */
  KD__N_INDEX,  /* a[b] */
  KD__N_UNARY,  /* op a, op '-' or '+' */
  KD__N_BINARY, /* a op b, op one of + - * / @ */
} kd__node_kind;

typedef struct kd__node kd__node;
struct kd__node {
  kd__node_kind kind;
  kd__lpos pos;
  int op;
  int64_t i;
  double d;
  const char *s;
  size_t slen;
  kd__node *a, *b;
  kd__node **items;
  size_t n;
};

/* A statement: `targets = value` (ntargets > 0; each target a name) or a
 * bare expression (ntargets == 0). */
typedef struct kd__stmt {
  kd__lpos pos;
  const char **targets;
  kd__lpos *target_pos;
  size_t ntargets;
  kd__node *value;
} kd__stmt;

/* Parses the next statement. Returns 1 with *out set (out->value NULL for
 * an empty statement), 0 at the end of the source, -1 on a syntax error
 * (recorded in the lexer's err). Nodes live in the lexer's arena. */
int kd__parse_stmt(kd__lexer *lx, kd__stmt *out);
/* Parses a whole source that must be exactly one expression (for kd call's
 * arguments). 0 or -1. */
int kd__parse_expr_only(kd__lexer *lx, kd__node **out);

/* ---- Values and the interpreter (lang_eval.c) ----------------------------- */

/* A value of the language: a boxed value, and for a tuple returned by an
 * operator whose returns are all named, that operator (the names are read
 * from its schema when printing: return_types.max(values=..., indices=...)).
 * Owns v. */
typedef struct kd__lval {
  kd_value v;
  kd_op *named;
} kd__lval;

void kd__lval_destroy(kd__lval *v);

/* Writes a value as the language prints it (no newline): kd__print_value,
 * or return_types.NAME(\nfield=...,\nfield=...) for a named tuple. 0, or -1
 * with kd_last_error() set. */
int kd__lval_print(FILE *out, const kd__lval *v);

/* Python's name of a value's type, for messages: int, float, bool, str,
 * NoneType, Tensor, list, tuple, dtype, device, ... */
const char *kd__value_type_name(const kd_value *v);

/* ---- Operator calls (lang_call.c) ----------------------------------------- */

/* One argument of a call: positional (kw NULL) or keyword. v is borrowed. */
typedef struct kd__larg {
  const char *kw;
  const kd_value *v;
  kd__lpos pos;
} kd__larg;

/* Calls the operator named `name` (add, aten::add, demo::neg) with overload
 * `overload` (NULL: resolve among all overloads; "default" or "" for the
 * operator without an overload name). Errors go to err at `pos` (argument
 * conversion errors at the argument's position). The caller owns *out
 * (None on error). 0 or -1. */
int kd__lang_invoke(kd__lerr *err, kd__lpos pos, const char *name, const char *overload,
                    const kd__larg *args, size_t nargs, kd__lval *out);

/* The overloads of `name` in the order kd__lang_invoke tries them (see
 * lang_call.c). *ops is malloc'd (the caller frees it), *n its length;
 * 0 and none found is not an error here. -1 on out of memory. */
int kd__lang_overloads(const char *name, kd_op ***ops, size_t *n);

/* "aten::" + name when name has no namespace; a malloc'd string or NULL. */
char *kd__lang_qualify(const char *name);

/* ---- Tensor literals (lang_tensor.c) -------------------------------------- */

/* True when v is a list or tuple whose leaves are all numbers (bool, int,
 * float, complex), at any depth: what a Tensor parameter accepts as a
 * literal. The empty list counts. */
bool kd__is_tensor_literal(const kd_value *v);
/* Makes a tensor from a tensor literal: int64 for ints, the default float
 * dtype when any float, the default complex dtype when any complex, bool
 * when all bools, the default float dtype for no elements. The caller owns
 * *out. -1 with a message in err at `pos` for ragged lists ("expected a list
 * of length 2 at dim 1, found 1 element"), non-numbers, too many
 * dimensions. */
int kd__tensor_from_literal(kd__lerr *err, kd__lpos pos, const kd_value *v, kd_tensor **out);
/* A 0-dim tensor from a number. `wrapped`: int64, float64, bool or
 * complex128 (as PyTorch's scalar_to_tensor), marked as a wrapped number;
 * otherwise as torch.tensor(number): floats in the default dtype (float32)
 * and complex numbers in the default complex dtype. The caller owns *out.
 * -1 on error (a value that is not a number). */
int kd__tensor_from_number(kd__lerr *err, kd__lpos pos, const kd_value *v, bool wrapped,
                           kd_tensor **out);

#endif
