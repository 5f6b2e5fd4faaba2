/*
 * lang_parse.c: statements and expressions of the little language into
 * syntax trees (lang_impl.h). The grammar, loosest binding first:
 *
 *   statement  := [ exprlist [ '=' exprlist ] ] ( newline | ';' | end )
 *                 with '=' every target of the left list a plain name
 *   exprlist   := expr { ',' expr } [ ',' ]     (more than one, or a trailing
 *                                                comma: a tuple)
 *   expr       := term { ('+' | '-') term }
 *   term       := unary { ('*' | '/' | '@') unary }
 *   unary      := ('-' | '+') unary | postfix
 *   postfix    := primary { '(' args ')' | '[' expr ']' | '.' NAME }
 *   args       := [ arg { ',' arg } [ ',' ] ],  arg := NAME '=' expr | expr
 *                 (no positional argument after a keyword one; no keyword twice)
 *   primary    := INT | FLOAT | IMAG | STRING | True | False | None | NAME
 *               | '[' [ expr { ',' expr } [ ',' ] ] ']'
 *               | '(' ')' | '(' expr ')' | '(' expr ',' [ expr { ',' expr } [ ',' ] ] ')'
 *
 * Errors name what was expected and what was found, at the found token; a
 * bracket left open at the end of the input is reported at the bracket.
 * Nesting deeper than MAX_NEST is an error, not a stack overflow.
 */
#include <stdlib.h>
#include <string.h>

#include "lang_impl.h"
#include "kd/memory.h"

#define MAX_NEST 200

/* A growing array of node pointers (malloc'd), copied into the arena once
 * complete. */
typedef struct nodevec {
  kdc_node **items;
  size_t n, cap;
} nodevec;

static int vec_push(kdc_lexer *lx, nodevec *v, kdc_node *node) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 8;
    kdc_node **p = kd_host_realloc(v->items, cap * sizeof *p);
    if (!p) return kdc_lerr_oom(lx->err, node->pos);
    v->items = p;
    v->cap = cap;
  }
  v->items[v->n++] = node;
  return 0;
}

/* Moves the vector's items into the arena as node->items; frees the vector. */
static int vec_finish(kdc_lexer *lx, nodevec *v, kdc_node *node) {
  node->n = v->n;
  node->items = NULL;
  if (v->n) {
    node->items = kdc_arena_alloc(lx->arena, v->n * sizeof *node->items);
    if (!node->items) {
      kd_host_free(v->items);
      return kdc_lerr_oom(lx->err, node->pos);
    }
    memcpy(node->items, v->items, v->n * sizeof *node->items);
  }
  kd_host_free(v->items);
  v->items = NULL;
  v->n = v->cap = 0;
  return 0;
}

static kdc_node *new_node(kdc_lexer *lx, kdc_node_kind kind, kdc_lpos pos) {
  kdc_node *n = kdc_arena_alloc(lx->arena, sizeof *n);
  if (!n) {
    kdc_lerr_oom(lx->err, pos);
    return NULL;
  }
  n->kind = kind;
  n->pos = pos;
  return n;
}

static int peek(kdc_lexer *lx, int k, kdc_token **t) { return kdc_lex_peek(lx, k, t); }

static int peek_kind(kdc_lexer *lx, kdc_tok_kind *kind) {
  kdc_token *t;
  if (peek(lx, 0, &t)) return -1;
  *kind = t->kind;
  return 0;
}

static int unexpected(kdc_lexer *lx, const char *expected) {
  kdc_token *t;
  if (peek(lx, 0, &t)) return -1;
  return kdc_lerr_set(lx->err, t->pos, "expected %s, found %s", expected, kdc_tok_describe(lx, t));
}

/* Expects the bracket `close` that ends what `open_pos` opened. */
static int expect_close(kdc_lexer *lx, kdc_tok_kind close, kdc_lpos open_pos, const char *expected) {
  kdc_token *t;
  if (peek(lx, 0, &t)) return -1;
  if (t->kind == close) {
    kdc_token tok;
    return kdc_lex_next(lx, &tok);
  }
  if (t->kind == KDC_T_EOF)
    return kdc_lerr_set(lx->err, open_pos, "'%c' was never closed",
                        close == KDC_T_RPAREN ? '(' : '[');
  return unexpected(lx, expected);
}

static int parse_expr(kdc_lexer *lx, kdc_node **out);

/* Items up to the closing bracket, separated by commas, a trailing comma
 * allowed; the opening bracket is consumed already. *trailing tells whether
 * the last item was followed by a comma. */
static int parse_items(kdc_lexer *lx, kdc_tok_kind close, kdc_lpos open_pos, kdc_node *node,
                       bool *trailing) {
  nodevec v = {0};
  *trailing = false;
  const char *expected = close == KDC_T_RPAREN ? "',' or ')'" : "',' or ']'";
  for (;;) {
    kdc_tok_kind k;
    if (peek_kind(lx, &k)) goto fail;
    if (k == close) break;
    if (k == KDC_T_EOF) {
      kdc_lerr_set(lx->err, open_pos, "'%c' was never closed", close == KDC_T_RPAREN ? '(' : '[');
      goto fail;
    }
    kdc_node *item;
    if (parse_expr(lx, &item) || vec_push(lx, &v, item)) goto fail;
    *trailing = false;
    if (peek_kind(lx, &k)) goto fail;
    if (k != KDC_T_COMMA) break;
    kdc_token tok;
    if (kdc_lex_next(lx, &tok)) goto fail;
    *trailing = true;
  }
  if (expect_close(lx, close, open_pos, expected)) goto fail;
  return vec_finish(lx, &v, node);
fail:
  kd_host_free(v.items);
  return -1;
}

static int parse_call_args(kdc_lexer *lx, kdc_node *call, kdc_lpos open_pos) {
  nodevec v = {0};
  bool seen_kw = false;
  for (;;) {
    kdc_token *t0, *t1;
    if (peek(lx, 0, &t0)) goto fail;
    if (t0->kind == KDC_T_RPAREN) break;
    if (t0->kind == KDC_T_EOF) {
      kdc_lerr_set(lx->err, open_pos, "'(' was never closed");
      goto fail;
    }
    kdc_lpos pos = t0->pos;
    if (t0->kind == KDC_T_NAME && !strstr(t0->text, "::")) {
      if (peek(lx, 1, &t1)) goto fail;
      if (t1->kind == KDC_T_ASSIGN) {
        kdc_token name, eq;
        if (kdc_lex_next(lx, &name) || kdc_lex_next(lx, &eq)) goto fail;
        for (size_t i = 0; i < v.n; i++) {
          if (v.items[i]->kind == KDC_N_KWARG && !strcmp(v.items[i]->s, name.text)) {
            kdc_lerr_set(lx->err, pos, "keyword argument repeated: '%s'", name.text);
            goto fail;
          }
        }
        kdc_node *kw = new_node(lx, KDC_N_KWARG, pos);
        if (!kw) goto fail;
        kw->s = name.text;
        kw->slen = name.len;
        if (parse_expr(lx, &kw->a) || vec_push(lx, &v, kw)) goto fail;
        seen_kw = true;
        goto next;
      }
    }
    {
      kdc_node *arg;
      if (parse_expr(lx, &arg)) goto fail;
      if (seen_kw) {
        kdc_lerr_set(lx->err, pos, "positional argument follows keyword argument");
        goto fail;
      }
      if (vec_push(lx, &v, arg)) goto fail;
    }
  next:;
    kdc_tok_kind k;
    if (peek_kind(lx, &k)) goto fail;
    if (k != KDC_T_COMMA) break;
    kdc_token tok;
    if (kdc_lex_next(lx, &tok)) goto fail;
  }
  if (expect_close(lx, KDC_T_RPAREN, open_pos, "',' or ')'")) goto fail;
  return vec_finish(lx, &v, call);
fail:
  kd_host_free(v.items);
  return -1;
}

static int parse_primary(kdc_lexer *lx, kdc_node **out) {
  kdc_token *t;
  if (peek(lx, 0, &t)) return -1;
  kdc_node *n = NULL;
  kdc_lpos pos = t->pos;
  switch (t->kind) {
    case KDC_T_INT:
    case KDC_T_FLOAT:
    case KDC_T_IMAG:
    case KDC_T_STRING:
    case KDC_T_TRUE:
    case KDC_T_FALSE:
    case KDC_T_NONE:
    case KDC_T_NAME: {
      kdc_token tok;
      if (kdc_lex_next(lx, &tok)) return -1;
      static const kdc_node_kind kinds[] = {
          [KDC_T_INT] = KDC_N_INT,   [KDC_T_FLOAT] = KDC_N_FLOAT, [KDC_T_IMAG] = KDC_N_IMAG,
          [KDC_T_STRING] = KDC_N_STR, [KDC_T_TRUE] = KDC_N_BOOL,  [KDC_T_FALSE] = KDC_N_BOOL,
          [KDC_T_NONE] = KDC_N_NONE, [KDC_T_NAME] = KDC_N_NAME,
      };
      if (!(n = new_node(lx, kinds[tok.kind], pos))) return -1;
      n->i = tok.kind == KDC_T_TRUE ? 1 : tok.i;
      n->d = tok.d;
      n->s = tok.text;
      n->slen = tok.len;
      break;
    }
    case KDC_T_LBRACKET: {
      kdc_token tok;
      bool trailing;
      if (kdc_lex_next(lx, &tok) || !(n = new_node(lx, KDC_N_LIST, pos)) ||
          parse_items(lx, KDC_T_RBRACKET, pos, n, &trailing))
        return -1;
      break;
    }
    case KDC_T_LPAREN: {
      kdc_token tok;
      bool trailing;
      if (kdc_lex_next(lx, &tok) || !(n = new_node(lx, KDC_N_TUPLE, pos)) ||
          parse_items(lx, KDC_T_RPAREN, pos, n, &trailing))
        return -1;
      if (n->n == 1 && !trailing) n = n->items[0]; /* parentheses only group */
      break;
    }
    default:
      return unexpected(lx, "an expression");
  }
  *out = n;
  return 0;
}

static int parse_postfix(kdc_lexer *lx, kdc_node **out) {
  kdc_node *n = NULL;
  if (parse_primary(lx, &n)) return -1;
  for (;;) {
    kdc_token *t;
    if (peek(lx, 0, &t)) return -1;
    kdc_lpos pos = t->pos;
    kdc_token tok;
    if (t->kind == KDC_T_LPAREN) {
      if (kdc_lex_next(lx, &tok)) return -1;
      kdc_node *call = new_node(lx, KDC_N_CALL, n->pos);
      if (!call) return -1;
      call->a = n;
      if (parse_call_args(lx, call, pos)) return -1;
      n = call;
    } else if (t->kind == KDC_T_LBRACKET) {
      if (kdc_lex_next(lx, &tok)) return -1;
      kdc_node *idx = new_node(lx, KDC_N_INDEX, pos);
      if (!idx) return -1;
      idx->a = n;
      if (parse_expr(lx, &idx->b) || expect_close(lx, KDC_T_RBRACKET, pos, "']'")) return -1;
      n = idx;
    } else if (t->kind == KDC_T_DOT) {
      if (kdc_lex_next(lx, &tok)) return -1;
      kdc_token *name;
      if (peek(lx, 0, &name)) return -1;
      if (name->kind != KDC_T_NAME || strstr(name->text, "::"))
        return unexpected(lx, "an overload name after '.'");
      if (kdc_lex_next(lx, &tok)) return -1;
      kdc_node *attr = new_node(lx, KDC_N_ATTR, n->pos);
      if (!attr) return -1;
      attr->a = n;
      attr->s = tok.text;
      attr->slen = tok.len;
      n = attr;
    } else {
      break;
    }
  }
  *out = n;
  return 0;
}

static int parse_unary(kdc_lexer *lx, kdc_node **out) {
  kdc_token *t;
  if (peek(lx, 0, &t)) return -1;
  if (t->kind != KDC_T_MINUS && t->kind != KDC_T_PLUS) return parse_postfix(lx, out);
  kdc_token tok;
  if (kdc_lex_next(lx, &tok)) return -1;
  if (++lx->nest > MAX_NEST) return kdc_lerr_set(lx->err, tok.pos, "expression nested too deeply");
  kdc_node *n = new_node(lx, KDC_N_UNARY, tok.pos);
  if (!n) return -1;
  n->op = tok.kind == KDC_T_MINUS ? '-' : '+';
  int rc = parse_unary(lx, &n->a);
  lx->nest--;
  if (rc) return -1;
  *out = n;
  return 0;
}

static int parse_binary(kdc_lexer *lx, int level, kdc_node **out) {
  kdc_node *lhs;
  if (level == 0 ? parse_unary(lx, &lhs) : parse_binary(lx, level - 1, &lhs)) return -1;
  for (;;) {
    kdc_token *t;
    if (peek(lx, 0, &t)) return -1;
    int op = 0;
    if (level == 1 && (t->kind == KDC_T_PLUS || t->kind == KDC_T_MINUS))
      op = t->kind == KDC_T_PLUS ? '+' : '-';
    if (level == 0 && (t->kind == KDC_T_STAR || t->kind == KDC_T_SLASH || t->kind == KDC_T_AT))
      op = t->kind == KDC_T_STAR ? '*' : t->kind == KDC_T_SLASH ? '/' : '@';
    if (!op) break;
    kdc_token tok;
    if (kdc_lex_next(lx, &tok)) return -1;
    kdc_node *n = new_node(lx, KDC_N_BINARY, tok.pos);
    if (!n) return -1;
    n->op = op;
    n->a = lhs;
    if (level == 0 ? parse_unary(lx, &n->b) : parse_binary(lx, level - 1, &n->b)) return -1;
    lhs = n;
  }
  *out = lhs;
  return 0;
}

static int parse_expr(kdc_lexer *lx, kdc_node **out) {
  kdc_token *t;
  if (peek(lx, 0, &t)) return -1;
  if (++lx->nest > MAX_NEST) return kdc_lerr_set(lx->err, t->pos, "expression nested too deeply");
  int rc = parse_binary(lx, 1, out);
  lx->nest--;
  return rc;
}

static bool ends_statement(kdc_tok_kind k) { return k == KDC_T_NEWLINE || k == KDC_T_EOF; }

/* exprlist: one expression, or a tuple of several (or of one with a
 * trailing comma). */
static int parse_exprlist(kdc_lexer *lx, kdc_node **out) {
  kdc_node *first;
  if (parse_expr(lx, &first)) return -1;
  kdc_tok_kind k;
  if (peek_kind(lx, &k)) return -1;
  if (k != KDC_T_COMMA) {
    *out = first;
    return 0;
  }
  nodevec v = {0};
  kdc_node *tuple = new_node(lx, KDC_N_TUPLE, first->pos);
  if (!tuple || vec_push(lx, &v, first)) goto fail;
  while (k == KDC_T_COMMA) {
    kdc_token tok;
    if (kdc_lex_next(lx, &tok) || peek_kind(lx, &k)) goto fail;
    if (ends_statement(k) || k == KDC_T_ASSIGN) break;
    kdc_node *item;
    if (parse_expr(lx, &item) || vec_push(lx, &v, item) || peek_kind(lx, &k)) goto fail;
  }
  if (vec_finish(lx, &v, tuple)) return -1;
  *out = tuple;
  return 0;
fail:
  kd_host_free(v.items);
  return -1;
}

static int end_statement(kdc_lexer *lx) {
  kdc_tok_kind k;
  if (peek_kind(lx, &k)) return -1;
  if (k == KDC_T_EOF) return 0;
  if (k != KDC_T_NEWLINE) return unexpected(lx, "the end of the statement");
  kdc_token tok;
  return kdc_lex_next(lx, &tok);
}

int kdc_parse_stmt(kdc_lexer *lx, kdc_stmt *out) {
  memset(out, 0, sizeof *out);
  kdc_token *t;
  for (;;) {
    if (peek(lx, 0, &t)) return -1;
    if (t->kind == KDC_T_EOF) return 0;
    if (t->kind != KDC_T_NEWLINE) break;
    kdc_token tok;
    if (kdc_lex_next(lx, &tok)) return -1;
  }
  out->pos = t->pos;
  kdc_node *lhs;
  if (parse_exprlist(lx, &lhs)) return -1;
  kdc_tok_kind k;
  if (peek_kind(lx, &k)) return -1;
  if (k != KDC_T_ASSIGN) {
    out->value = lhs;
    return end_statement(lx) ? -1 : 1;
  }
  /* An assignment: every target a plain name. */
  kdc_node **targets = lhs->kind == KDC_N_TUPLE ? lhs->items : &lhs;
  size_t n = lhs->kind == KDC_N_TUPLE ? lhs->n : 1;
  if (n == 0) return kdc_lerr_set(lx->err, lhs->pos, "cannot assign to ()");
  for (size_t i = 0; i < n; i++) {
    if (targets[i]->kind != KDC_N_NAME || strstr(targets[i]->s, "::"))
      return kdc_lerr_set(lx->err, targets[i]->pos,
                          "cannot assign to this expression: the target of '=' must be a name");
  }
  out->targets = kdc_arena_alloc(lx->arena, n * sizeof *out->targets);
  out->target_pos = kdc_arena_alloc(lx->arena, n * sizeof *out->target_pos);
  if (!out->targets || !out->target_pos) return kdc_lerr_oom(lx->err, lhs->pos);
  for (size_t i = 0; i < n; i++) {
    out->targets[i] = targets[i]->s;
    out->target_pos[i] = targets[i]->pos;
  }
  out->ntargets = n;
  kdc_token tok;
  if (kdc_lex_next(lx, &tok)) return -1;
  if (peek_kind(lx, &k)) return -1;
  if (ends_statement(k)) return unexpected(lx, "an expression after '='");
  if (parse_exprlist(lx, &out->value)) return -1;
  return end_statement(lx) ? -1 : 1;
}

int kdc_parse_expr_only(kdc_lexer *lx, kdc_node **out) {
  kdc_tok_kind k;
  for (;;) {
    if (peek_kind(lx, &k)) return -1;
    if (k != KDC_T_NEWLINE) break;
    kdc_token tok;
    if (kdc_lex_next(lx, &tok)) return -1;
  }
  if (parse_expr(lx, out)) return -1;
  for (;;) {
    if (peek_kind(lx, &k)) return -1;
    if (k == KDC_T_EOF) return 0;
    if (k != KDC_T_NEWLINE) return unexpected(lx, "the end of the argument");
    kdc_token tok;
    if (kdc_lex_next(lx, &tok)) return -1;
  }
}
