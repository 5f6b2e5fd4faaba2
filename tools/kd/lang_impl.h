/*
 * lang_impl.h: the parts of the little language (lang.h) shared between its
 * files. Nothing here is for other code.
 *
 *   lang_util.c    the arena, the interpreter's error
 *   lang_lex.c     tokens (and kdc_lang_complete)
 *   lang_parse.c   statements and expressions into syntax trees
 *   lang_eval.c    the interpreter: kdc_lang_new/run/free, names, builtins
 *   lang_call.c    operator calls: overload resolution, argument conversion
 *   lang_tensor.c  tensor literals (nested lists into tensors)
 *
 * Ownership: syntax trees and the text of tokens live in an arena that one
 * kdc_lang_run owns and frees at its end; values (kdc_lval) own their
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
#include "sbuf.h" /* the text buffer (kdc_sbuf) */

/* ---- Arena (lang_util.c) ------------------------------------------------- */

/* Bump allocation of zeroed memory, all freed at once. */
typedef struct kdc_arena_block kdc_arena_block;
typedef struct kdc_arena {
  kdc_arena_block *head;
} kdc_arena;

/* NULL when out of memory. */
void *kdc_arena_alloc(kdc_arena *a, size_t size);
/* A NUL-terminated copy of n bytes. NULL when out of memory. */
char *kdc_arena_strndup(kdc_arena *a, const char *s, size_t n);
void kdc_arena_free(kdc_arena *a);

/* ---- Positions and the interpreter's error ------------------------------- */

typedef struct kdc_lpos {
  int line, col; /* 1-based; col counts bytes */
} kdc_lpos;

/* The error state every part reports to. The first error recorded wins
 * until kdc_lerr_clear; functions that fail return -1 after recording. */
typedef struct kdc_lerr {
  bool failed;
  kdc_lpos pos;
  kdc_sbuf msg;
} kdc_lerr;

int kdc_lerr_set(kdc_lerr *e, kdc_lpos pos, const char *fmt, ...) KD_PRINTF_LIKE(3, 4);
/* Records "out of memory". */
int kdc_lerr_oom(kdc_lerr *e, kdc_lpos pos);
void kdc_lerr_clear(kdc_lerr *e);

/* ---- Tokens (lang_lex.c) --------------------------------------------------- */

typedef enum kdc_tok_kind {
  KDC_T_EOF = 0,
  KDC_T_NEWLINE, /* also ';': the end of a statement */
  KDC_T_NAME,    /* text: identifier, possibly qualified (demo::neg) */
  KDC_T_INT,     /* i */
  KDC_T_FLOAT,   /* d */
  KDC_T_IMAG,    /* d: 2j */
  KDC_T_STRING,  /* text (decoded, arena), len */
  KDC_T_TRUE,
  KDC_T_FALSE,
  KDC_T_NONE,
  KDC_T_LPAREN,
  KDC_T_RPAREN,
  KDC_T_LBRACKET,
  KDC_T_RBRACKET,
  KDC_T_COMMA,
  KDC_T_DOT,
  KDC_T_ASSIGN,
  KDC_T_PLUS,
  KDC_T_MINUS,
  KDC_T_STAR,
  KDC_T_SLASH,
  KDC_T_AT,
} kdc_tok_kind;

typedef struct kdc_token {
  kdc_tok_kind kind;
  kdc_lpos pos;
  const char *text; /* NAME, STRING: arena copy, NUL-terminated */
  size_t len;
  int64_t i;
  double d;
} kdc_token;

/* A lexer over one source, producing tokens on demand (so that statements
 * before a bad token run). Newlines inside brackets, comments and
 * backslash-newline are skipped. */
typedef struct kdc_lexer {
  const char *src;
  size_t len, off;
  int line, col;
  int depth; /* open brackets: newlines inside are not tokens */
  int joins; /* the last token was an operator, ',' or '=': a newline after it is
              * not a token either (kdc_lang_complete asks for more in both cases) */
  int nest; /* the parser's recursion depth, bounded */
  kdc_token ahead[2];
  int nahead;
  kdc_arena *arena;
  kdc_lerr *err;
} kdc_lexer;

void kdc_lex_init(kdc_lexer *lx, const char *src, size_t len, kdc_arena *arena, kdc_lerr *err);
/* The token `k` places ahead (0 or 1) without consuming it; -1 on a lexical
 * error (recorded in err). */
int kdc_lex_peek(kdc_lexer *lx, int k, kdc_token **out);
/* Consumes the next token into *out; -1 on a lexical error. */
int kdc_lex_next(kdc_lexer *lx, kdc_token *out);
/* "name 'x'", "integer 3", "'('", "end of input" ... for messages; static or
 * arena storage. */
const char *kdc_tok_describe(kdc_lexer *lx, const kdc_token *t);

/* ---- Syntax trees (lang_parse.c) ------------------------------------------ */

typedef enum kdc_node_kind {
  KDC_N_INT,    /* i */
  KDC_N_FLOAT,  /* d */
  KDC_N_IMAG,   /* d */
  KDC_N_STR,    /* s, slen */
  KDC_N_BOOL,   /* i (0 or 1) */
  KDC_N_NONE,
  KDC_N_NAME,   /* s: a name, possibly qualified */
  KDC_N_ATTR,   /* a.s: an operator's overload */
  KDC_N_LIST,   /* items */
  KDC_N_TUPLE,  /* items */
  KDC_N_CALL,   /* a(items); an item of kind KWARG is a keyword argument */
  KDC_N_KWARG,  /* s=a, only among a call's items */
  KDC_N_INDEX,  /* a[b] */
  KDC_N_UNARY,  /* op a, op '-' or '+' */
  KDC_N_BINARY, /* a op b, op one of + - * / @ */
} kdc_node_kind;

typedef struct kdc_node kdc_node;
struct kdc_node {
  kdc_node_kind kind;
  kdc_lpos pos;
  int op;
  int64_t i;
  double d;
  const char *s;
  size_t slen;
  kdc_node *a, *b;
  kdc_node **items;
  size_t n;
};

/* A statement: `targets = value` (ntargets > 0; each target a name) or a
 * bare expression (ntargets == 0). */
typedef struct kdc_stmt {
  kdc_lpos pos;
  const char **targets;
  kdc_lpos *target_pos;
  size_t ntargets;
  kdc_node *value;
} kdc_stmt;

/* Parses the next statement. Returns 1 with *out set (out->value NULL for
 * an empty statement), 0 at the end of the source, -1 on a syntax error
 * (recorded in the lexer's err). Nodes live in the lexer's arena. */
int kdc_parse_stmt(kdc_lexer *lx, kdc_stmt *out);
/* Parses a whole source that must be exactly one expression (for kd call's
 * arguments). 0 or -1. */
int kdc_parse_expr_only(kdc_lexer *lx, kdc_node **out);

/* ---- Values and the interpreter (lang_eval.c) ----------------------------- */

/* A value of the language: a boxed value, and for a tuple returned by an
 * operator whose returns are all named, that operator (the names are read
 * from its schema when printing: return_types.max(values=..., indices=...)).
 * Owns v. */
typedef struct kdc_lval {
  kd_value v;
  kd_op *named;
} kdc_lval;

void kdc_lval_destroy(kdc_lval *v);

/* Writes a value as the language prints it (no newline): kdc_print_value,
 * or return_types.NAME(\nfield=...,\nfield=...) for a named tuple. 0, or -1
 * with kd_last_error() set. */
int kdc_lval_print(FILE *out, const kdc_lval *v);

/* Python's name of a value's type, for messages: int, float, bool, str,
 * NoneType, Tensor, list, tuple, dtype, device, ... */
const char *kdc_value_type_name(const kd_value *v);

/* ---- Operator calls (lang_call.c) ----------------------------------------- */

/* One argument of a call: positional (kw NULL) or keyword. v is borrowed. */
typedef struct kdc_larg {
  const char *kw;
  const kd_value *v;
  kdc_lpos pos;
} kdc_larg;

/* Calls the operator named `name` (add, aten::add, demo::neg) with overload
 * `overload` (NULL: resolve among all overloads; "default" or "" for the
 * operator without an overload name). Errors go to err at `pos` (argument
 * conversion errors at the argument's position). The caller owns *out
 * (None on error). 0 or -1. */
int kdc_lang_invoke(kdc_lerr *err, kdc_lpos pos, const char *name, const char *overload,
                    const kdc_larg *args, size_t nargs, kdc_lval *out);

/* The overloads of `name` in the order kdc_lang_invoke tries them (see
 * lang_call.c). *ops is malloc'd (the caller frees it), *n its length;
 * 0 and none found is not an error here. -1 on out of memory. */
int kdc_lang_overloads(const char *name, kd_op ***ops, size_t *n);

/* "aten::" + name when name has no namespace; a malloc'd string or NULL. */
char *kdc_lang_qualify(const char *name);

/* ---- Tensor literals (lang_tensor.c) -------------------------------------- */

/* True when v is a list or tuple whose leaves are all numbers (bool, int,
 * float, complex), at any depth: what a Tensor parameter accepts as a
 * literal. The empty list counts. */
bool kdc_is_tensor_literal(const kd_value *v);
/* Makes a tensor from a tensor literal: int64 for ints, the default float
 * dtype when any float, the default complex dtype when any complex, bool
 * when all bools, the default float dtype for no elements. The caller owns
 * *out. -1 with a message in err at `pos` for ragged lists ("expected a list
 * of length 2 at dim 1, found 1 element"), non-numbers, too many
 * dimensions. */
int kdc_tensor_from_literal(kdc_lerr *err, kdc_lpos pos, const kd_value *v, kd_tensor **out);
/* A 0-dim tensor from a number. `wrapped`: int64, float64, bool or
 * complex128 (as PyTorch's scalar_to_tensor), marked as a wrapped number;
 * otherwise as torch.tensor(number): floats in the default dtype (float32)
 * and complex numbers in the default complex dtype. The caller owns *out.
 * -1 on error (a value that is not a number). */
int kdc_tensor_from_number(kdc_lerr *err, kdc_lpos pos, const kd_value *v, bool wrapped,
                           kd_tensor **out);

#endif
