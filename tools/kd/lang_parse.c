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
  kd__node **items;
  size_t n, cap;
} nodevec;

static int vec_push(kd__lexer *lx, nodevec *v, kd__node *node) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 8;
    kd__node **p = kd_host_realloc(v->items, cap * sizeof *p);
    if (!p) return kd__lerr_oom(lx->err, node->pos);
    v->items = p;
    v->cap = cap;
  }
  v->items[v->n++] = node;
  return 0;
}

/* Moves the vector's items into the arena as node->items; frees the vector. */
static int vec_finish(kd__lexer *lx, nodevec *v, kd__node *node) {
  node->n = v->n;
  node->items = NULL;
  if (v->n) {
    node->items = kd__arena_alloc(lx->arena, v->n * sizeof *node->items);
    if (!node->items) {
      kd_host_free(v->items);
      return kd__lerr_oom(lx->err, node->pos);
    }
    memcpy(node->items, v->items, v->n * sizeof *node->items);
  }
  kd_host_free(v->items);
  v->items = NULL;
  v->n = v->cap = 0;
  return 0;
}

static kd__node *new_node(kd__lexer *lx, kd__node_kind kind, kd__lpos pos) {
  kd__node *n = kd__arena_alloc(lx->arena, sizeof *n);
  if (!n) {
    kd__lerr_oom(lx->err, pos);
    return NULL;
  }
  n->kind = kind;
  n->pos = pos;
  return n;
}

static int peek(kd__lexer *lx, int k, kd__token **t) { return kd__lex_peek(lx, k, t); }

static int peek_kind(kd__lexer *lx, kd__tok_kind *kind) {
  kd__token *t;
  if (peek(lx, 0, &t)) return -1;
  *kind = t->kind;
  return 0;
}

static int unexpected(kd__lexer *lx, const char *expected) {
  kd__token *t;
  if (peek(lx, 0, &t)) return -1;
  return kd__lerr_set(lx->err, t->pos, "expected %s, found %s", expected, kd__tok_describe(lx, t));
}

/* Expects the bracket `close` that ends what `open_pos` opened. */
static int expect_close(kd__lexer *lx, kd__tok_kind close, kd__lpos open_pos, const char *expected) {
  kd__token *t;
  if (peek(lx, 0, &t)) return -1;
  if (t->kind == close) {
    kd__token tok;
    return kd__lex_next(lx, &tok);
  }
  if (t->kind == KD__T_EOF)
    return kd__lerr_set(lx->err, open_pos, "'%c' was never closed",
                        close == KD__T_RPAREN ? '(' : '[');
  return unexpected(lx, expected);
}

static int parse_expr(kd__lexer *lx, kd__node **out);

/* Items up to the closing bracket, separated by commas, a trailing comma
 * allowed; the opening bracket is consumed already. *trailing tells whether
 * the last item was followed by a comma. */
static int parse_items(kd__lexer *lx, kd__tok_kind close, kd__lpos open_pos, kd__node *node,
                       bool *trailing) {
  nodevec v = {0};
  *trailing = false;
  const char *expected = close == KD__T_RPAREN ? "',' or ')'" : "',' or ']'";
  for (;;) {
    kd__tok_kind k;
    if (peek_kind(lx, &k)) goto fail;
    if (k == close) break;
    if (k == KD__T_EOF) {
      kd__lerr_set(lx->err, open_pos, "'%c' was never closed", close == KD__T_RPAREN ? '(' : '[');
      goto fail;
    }
    kd__node *item;
    if (parse_expr(lx, &item) || vec_push(lx, &v, item)) goto fail;
    *trailing = false;
    if (peek_kind(lx, &k)) goto fail;
    if (k != KD__T_COMMA) break;
    kd__token tok;
    if (kd__lex_next(lx, &tok)) goto fail;
    *trailing = true;
  }
  if (expect_close(lx, close, open_pos, expected)) goto fail;
  return vec_finish(lx, &v, node);
fail:
  kd_host_free(v.items);
  return -1;
}

static int parse_call_args(kd__lexer *lx, kd__node *call, kd__lpos open_pos) {
  nodevec v = {0};
  bool seen_kw = false;
  for (;;) {
    kd__token *t0, *t1;
    if (peek(lx, 0, &t0)) goto fail;
    if (t0->kind == KD__T_RPAREN) break;
    if (t0->kind == KD__T_EOF) {
      kd__lerr_set(lx->err, open_pos, "'(' was never closed");
      goto fail;
    }
    kd__lpos pos = t0->pos;
    if (t0->kind == KD__T_NAME && !strstr(t0->text, "::")) {
      if (peek(lx, 1, &t1)) goto fail;
      if (t1->kind == KD__T_ASSIGN) {
        kd__token name, eq;
        if (kd__lex_next(lx, &name) || kd__lex_next(lx, &eq)) goto fail;
        for (size_t i = 0; i < v.n; i++) {
          if (v.items[i]->kind == KD__N_KWARG && !strcmp(v.items[i]->s, name.text)) {
            kd__lerr_set(lx->err, pos, "keyword argument repeated: '%s'", name.text);
            goto fail;
          }
        }
        kd__node *kw = new_node(lx, KD__N_KWARG, pos);
        if (!kw) goto fail;
        kw->s = name.text;
        kw->slen = name.len;
        if (parse_expr(lx, &kw->a) || vec_push(lx, &v, kw)) goto fail;
        seen_kw = true;
        goto next;
      }
    }
    {
      kd__node *arg;
      if (parse_expr(lx, &arg)) goto fail;
      if (seen_kw) {
        kd__lerr_set(lx->err, pos, "positional argument follows keyword argument");
        goto fail;
      }
      if (vec_push(lx, &v, arg)) goto fail;
    }
  next:;
    kd__tok_kind k;
    if (peek_kind(lx, &k)) goto fail;
    if (k != KD__T_COMMA) break;
    kd__token tok;
    if (kd__lex_next(lx, &tok)) goto fail;
  }
  if (expect_close(lx, KD__T_RPAREN, open_pos, "',' or ')'")) goto fail;
  return vec_finish(lx, &v, call);
fail:
  kd_host_free(v.items);
  return -1;
}

static int parse_primary(kd__lexer *lx, kd__node **out) {
  kd__token *t;
  if (peek(lx, 0, &t)) return -1;
  kd__node *n = NULL;
  kd__lpos pos = t->pos;
  switch (t->kind) {
    case KD__T_INT:
    case KD__T_FLOAT:
    case KD__T_IMAG:
    case KD__T_STRING:
    case KD__T_TRUE:
    case KD__T_FALSE:
    case KD__T_NONE:
    case KD__T_NAME: {
      kd__token tok;
      if (kd__lex_next(lx, &tok)) return -1;
      static const kd__node_kind kinds[] = {
          [KD__T_INT] = KD__N_INT,   [KD__T_FLOAT] = KD__N_FLOAT, [KD__T_IMAG] = KD__N_IMAG,
          [KD__T_STRING] = KD__N_STR, [KD__T_TRUE] = KD__N_BOOL,  [KD__T_FALSE] = KD__N_BOOL,
          [KD__T_NONE] = KD__N_NONE, [KD__T_NAME] = KD__N_NAME,
      };
      if (!(n = new_node(lx, kinds[tok.kind], pos))) return -1;
      n->i = tok.kind == KD__T_TRUE ? 1 : tok.i;
      n->d = tok.d;
      n->s = tok.text;
      n->slen = tok.len;
      break;
    }
    case KD__T_LBRACKET: {
      kd__token tok;
      bool trailing;
      if (kd__lex_next(lx, &tok) || !(n = new_node(lx, KD__N_LIST, pos)) ||
          parse_items(lx, KD__T_RBRACKET, pos, n, &trailing))
        return -1;
      break;
    }
    case KD__T_LPAREN: {
      kd__token tok;
      bool trailing;
      if (kd__lex_next(lx, &tok) || !(n = new_node(lx, KD__N_TUPLE, pos)) ||
          parse_items(lx, KD__T_RPAREN, pos, n, &trailing))
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

static int parse_postfix(kd__lexer *lx, kd__node **out) {
  kd__node *n = NULL;
  if (parse_primary(lx, &n)) return -1;
  for (;;) {
    kd__token *t;
    if (peek(lx, 0, &t)) return -1;
    kd__lpos pos = t->pos;
    kd__token tok;
    if (t->kind == KD__T_LPAREN) {
      if (kd__lex_next(lx, &tok)) return -1;
      kd__node *call = new_node(lx, KD__N_CALL, n->pos);
      if (!call) return -1;
      call->a = n;
      if (parse_call_args(lx, call, pos)) return -1;
      n = call;
    } else if (t->kind == KD__T_LBRACKET) {
      if (kd__lex_next(lx, &tok)) return -1;
      kd__node *idx = new_node(lx, KD__N_INDEX, pos);
      if (!idx) return -1;
      idx->a = n;
      if (parse_expr(lx, &idx->b) || expect_close(lx, KD__T_RBRACKET, pos, "']'")) return -1;
      n = idx;
    } else if (t->kind == KD__T_DOT) {
      if (kd__lex_next(lx, &tok)) return -1;
      kd__token *name;
      if (peek(lx, 0, &name)) return -1;
      if (name->kind != KD__T_NAME || strstr(name->text, "::"))
        return unexpected(lx, "an overload name after '.'");
      if (kd__lex_next(lx, &tok)) return -1;
      kd__node *attr = new_node(lx, KD__N_ATTR, n->pos);
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

static int parse_unary(kd__lexer *lx, kd__node **out) {
  kd__token *t;
  if (peek(lx, 0, &t)) return -1;
  if (t->kind != KD__T_MINUS && t->kind != KD__T_PLUS) return parse_postfix(lx, out);
  kd__token tok;
  if (kd__lex_next(lx, &tok)) return -1;
  if (++lx->nest > MAX_NEST) return kd__lerr_set(lx->err, tok.pos, "expression nested too deeply");
  kd__node *n = new_node(lx, KD__N_UNARY, tok.pos);
  if (!n) return -1;
  n->op = tok.kind == KD__T_MINUS ? '-' : '+';
  int rc = parse_unary(lx, &n->a);
  lx->nest--;
  if (rc) return -1;
  *out = n;
  return 0;
}

static int parse_binary(kd__lexer *lx, int level, kd__node **out) {
  kd__node *lhs;
  if (level == 0 ? parse_unary(lx, &lhs) : parse_binary(lx, level - 1, &lhs)) return -1;
  for (;;) {
    kd__token *t;
    if (peek(lx, 0, &t)) return -1;
    int op = 0;
    if (level == 1 && (t->kind == KD__T_PLUS || t->kind == KD__T_MINUS))
      op = t->kind == KD__T_PLUS ? '+' : '-';
    if (level == 0 && (t->kind == KD__T_STAR || t->kind == KD__T_SLASH || t->kind == KD__T_AT))
      op = t->kind == KD__T_STAR ? '*' : t->kind == KD__T_SLASH ? '/' : '@';
    if (!op) break;
    kd__token tok;
    if (kd__lex_next(lx, &tok)) return -1;
    kd__node *n = new_node(lx, KD__N_BINARY, tok.pos);
    if (!n) return -1;
    n->op = op;
    n->a = lhs;
    if (level == 0 ? parse_unary(lx, &n->b) : parse_binary(lx, level - 1, &n->b)) return -1;
    lhs = n;
  }
  *out = lhs;
  return 0;
}

static int parse_expr(kd__lexer *lx, kd__node **out) {
  kd__token *t;
  if (peek(lx, 0, &t)) return -1;
  if (++lx->nest > MAX_NEST) return kd__lerr_set(lx->err, t->pos, "expression nested too deeply");
  int rc = parse_binary(lx, 1, out);
  lx->nest--;
  return rc;
}

static bool ends_statement(kd__tok_kind k) { return k == KD__T_NEWLINE || k == KD__T_EOF; }

/* exprlist: one expression, or a tuple of several (or of one with a
 * trailing comma). */
static int parse_exprlist(kd__lexer *lx, kd__node **out) {
  kd__node *first;
  if (parse_expr(lx, &first)) return -1;
  kd__tok_kind k;
  if (peek_kind(lx, &k)) return -1;
  if (k != KD__T_COMMA) {
    *out = first;
    return 0;
  }
  nodevec v = {0};
  kd__node *tuple = new_node(lx, KD__N_TUPLE, first->pos);
  if (!tuple || vec_push(lx, &v, first)) goto fail;
  while (k == KD__T_COMMA) {
    kd__token tok;
    if (kd__lex_next(lx, &tok) || peek_kind(lx, &k)) goto fail;
    if (ends_statement(k) || k == KD__T_ASSIGN) break;
    kd__node *item;
    if (parse_expr(lx, &item) || vec_push(lx, &v, item) || peek_kind(lx, &k)) goto fail;
  }
  if (vec_finish(lx, &v, tuple)) return -1;
  *out = tuple;
  return 0;
fail:
  kd_host_free(v.items);
  return -1;
}

static int end_statement(kd__lexer *lx) {
  kd__tok_kind k;
  if (peek_kind(lx, &k)) return -1;
  if (k == KD__T_EOF) return 0;
  if (k != KD__T_NEWLINE) return unexpected(lx, "the end of the statement");
  kd__token tok;
  return kd__lex_next(lx, &tok);
}

int kd__parse_stmt(kd__lexer *lx, kd__stmt *out) {
  memset(out, 0, sizeof *out);
  kd__token *t;
  for (;;) {
    if (peek(lx, 0, &t)) return -1;
    if (t->kind == KD__T_EOF) return 0;
    if (t->kind != KD__T_NEWLINE) break;
    kd__token tok;
    if (kd__lex_next(lx, &tok)) return -1;
  }
  out->pos = t->pos;
  kd__node *lhs;
  if (parse_exprlist(lx, &lhs)) return -1;
  kd__tok_kind k;
  if (peek_kind(lx, &k)) return -1;
  if (k != KD__T_ASSIGN) {
    out->value = lhs;
    return end_statement(lx) ? -1 : 1;
  }
  /* An assignment: every target a plain name. */
  kd__node **targets = lhs->kind == KD__N_TUPLE ? lhs->items : &lhs;
  size_t n = lhs->kind == KD__N_TUPLE ? lhs->n : 1;
  if (n == 0) return kd__lerr_set(lx->err, lhs->pos, "cannot assign to ()");
  for (size_t i = 0; i < n; i++) {
    if (targets[i]->kind != KD__N_NAME || strstr(targets[i]->s, "::"))
      return kd__lerr_set(lx->err, targets[i]->pos,
                          "cannot assign to this expression: the target of '=' must be a name");
  }
  out->targets = kd__arena_alloc(lx->arena, n * sizeof *out->targets);
  out->target_pos = kd__arena_alloc(lx->arena, n * sizeof *out->target_pos);
  if (!out->targets || !out->target_pos) return kd__lerr_oom(lx->err, lhs->pos);
  for (size_t i = 0; i < n; i++) {
    out->targets[i] = targets[i]->s;
    out->target_pos[i] = targets[i]->pos;
  }
  out->ntargets = n;
  kd__token tok;
  if (kd__lex_next(lx, &tok)) return -1;
  if (peek_kind(lx, &k)) return -1;
  if (ends_statement(k)) return unexpected(lx, "an expression after '='");
  if (parse_exprlist(lx, &out->value)) return -1;
  return end_statement(lx) ? -1 : 1;
}

int kd__parse_expr_only(kd__lexer *lx, kd__node **out) {
  kd__tok_kind k;
  for (;;) {
    if (peek_kind(lx, &k)) return -1;
    if (k != KD__T_NEWLINE) break;
    kd__token tok;
    if (kd__lex_next(lx, &tok)) return -1;
  }
  if (parse_expr(lx, out)) return -1;
  for (;;) {
    if (peek_kind(lx, &k)) return -1;
    if (k == KD__T_EOF) return 0;
    if (k != KD__T_NEWLINE) return unexpected(lx, "the end of the argument");
    kd__token tok;
    if (kd__lex_next(lx, &tok)) return -1;
  }
}
