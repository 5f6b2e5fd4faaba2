/*
 * lang_eval.c: the interpreter of the little language (lang.h).
 *
 * PROGRAMS are statements, one per line or separated by ';':
 *   name = expr          binds a variable (variables live as long as the
 *                        interpreter, across kdc_lang_run calls)
 *   a, b = expr          unpacks a tuple or list, one name per value
 *   expr                 evaluates; the value is printed (as kdc_print_value
 *                        writes it) followed by a newline, unless it is None
 * A statement runs as soon as it is parsed, so the statements before an
 * error (syntax or run time) have taken effect; the first error stops the
 * run and is reported as "NAME:LINE:COL: error: MESSAGE".
 *
 * VALUES AND NAMES. Literals: see lang_lex.c (ints, floats, 2j, strings,
 * True, False, None), [a, b] lists (a tensor literal where a Tensor is
 * expected: lang_tensor.c), (a, b) tuples. A name is, in this order: a
 * variable; inf or nan; a dtype (float32, int8, float, long, ...: the names
 * kd_dtype_from_name knows); a device type (cpu, meta, cuda, and names
 * registered later, such as opencl); a layout (strided, ...); a memory
 * format (contiguous_format, channels_last, ...). An operator's name is not
 * a value: it is only called.
 *
 * CALLS. f(args) calls the builtin f if there is one (below), else the
 * operator f with PyTorch's overload resolution (lang_call.c): add(x, y),
 * add.Tensor(x, y), demo::neg(x), sum(x, [1], keepdim=True).
 *
 * OPERATORS. `a + b`, `a - b`, `a * b`, `a / b` on numbers compute as Python
 * does (ints stay ints but for '/'; int overflow is an error); when either
 * side is a tensor or a list they call aten add, sub, mul, div (and `a @ b`
 * calls matmul), so [1, 2] + [3, 4] is a tensor. `-x` negates a number or
 * calls neg on a tensor. `v[i]` indexes a tuple, list or string (negative
 * from the end; out of range is an error) and selects along dim 0 of a
 * tensor (aten select.int).
 *
 * BUILTINS (documented again in `kd run --help`):
 *   print(a, ...)      prints its arguments separated by spaces (strings
 *                      without quotes), then a newline
 *   tensor(data, dtype=None)   a tensor from a list literal or a number
 *                      (torch.tensor: ints int64, floats float32), converted
 *                      to dtype when given
 *   table(op)          prints the operator's computed dispatch table as
 *                      `kd table` does; op is add.Tensor, demo::scale, max
 *                      or a string "aten::add.Tensor"
 *   overloads(name)    prints the overloads of name in the order calls try
 *                      them
 *   trace(True|False)  puts the Tracer mode key in this thread's include
 *                      set (or takes it out): every operator call then goes
 *                      through the Tracer fallback of demo_ops.c, which
 *                      prints a line per call to the interpreter's output
 * Builtins take precedence over operators of the same name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "lang_impl.h"
#include "print.h"
#include "kd/memory.h"

typedef struct lang_var {
  char *name; /* owned */
  kdc_lval val;
} lang_var;

struct kd_lang {
  FILE *out, *err;
  lang_var *vars;
  size_t nvars, cap;
  bool tracing;
  kd_tls_keys saved_keys;    /* while tracing: the thread's keys before */
  FILE *saved_trace_out;     /* while tracing: kdc_tool_trace_out before */
  kdc_lerr e;
};

/* ---- Values -------------------------------------------------------------------- */

void kdc_lval_destroy(kdc_lval *v) {
  kd_value_destroy(&v->v);
  v->named = NULL;
}

static kdc_lval lval_of(kd_value v) {
  kdc_lval l;
  l.v = v;
  l.named = NULL;
  return l;
}

const char *kdc_value_type_name(const kd_value *v) {
  switch (v->tag) {
    case KD_VALUE_NONE: return "NoneType";
    case KD_VALUE_BOOL: return "bool";
    case KD_VALUE_INT: return "int";
    case KD_VALUE_DOUBLE: return "float";
    case KD_VALUE_COMPLEX: return "complex";
    case KD_VALUE_STRING: return "str";
    case KD_VALUE_SCALAR:
      switch (v->u.s.kind) {
        case KD_SCALAR_BOOL: return "bool";
        case KD_SCALAR_INT: return "int";
        case KD_SCALAR_DOUBLE: return "float";
        default: return "complex";
      }
    case KD_VALUE_DTYPE: return "dtype";
    case KD_VALUE_LAYOUT: return "layout";
    case KD_VALUE_DEVICE: return "device";
    case KD_VALUE_MEMORY_FORMAT: return "memory_format";
    case KD_VALUE_TENSOR: return "Tensor";
    case KD_VALUE_TUPLE: return "tuple";
    default: return "list";
  }
}

int kdc_lval_print(FILE *out, const kdc_lval *v) {
  const kd_schema *s = v->named ? kd_op_schema(v->named) : NULL;
  size_t n = kd_value_list_size(&v->v);
  if (!s || v->v.tag != KD_VALUE_TUPLE || kd_schema_num_returns(s) != n)
    return kdc_print_value(out, &v->v);
  /* return_types.max(\nvalues=...,\nindices=...), built whole first so that
   * nothing is half-written on error. */
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) {
    kd_set_error(KD_ENOMEM, "out of memory");
    return -1;
  }
  int rc = 0;
  fprintf(m, "return_types.%s(", kd_schema_name(s));
  for (size_t i = 0; i < n && !rc; i++) {
    fprintf(m, "\n%s=", kd_argument_name(kd_schema_return(s, i)));
    rc = kdc_print_value(m, kd_value_list_at(&v->v, i));
    fputs(i + 1 < n ? "," : ")", m);
  }
  if (fclose(m) != 0 && !rc) {
    kd_set_error(KD_ENOMEM, "out of memory");
    rc = -1;
  }
  if (!rc && fwrite(buf, 1, len, out) != len) {
    kd_set_error(KD_EINTERNAL, "cannot write the output");
    rc = -1;
  }
  free(buf); /* open_memstream's buffer: the C library's */
  return rc;
}

/* ---- The interpreter ------------------------------------------------------------- */

kd_lang *kdc_lang_new(FILE *out, FILE *err) {
  kd_lang *L = kd_host_calloc(1, sizeof *L);
  if (!L) return NULL;
  L->out = out;
  L->err = err;
  return L;
}

static void trace_off(kd_lang *L) {
  if (!L->tracing) return;
  kd_tls_restore(L->saved_keys);
  kdc_tool_trace_out = L->saved_trace_out;
  L->tracing = false;
}

void kdc_lang_free(kd_lang *L) {
  if (!L) return;
  trace_off(L);
  for (size_t i = 0; i < L->nvars; i++) {
    kd_host_free(L->vars[i].name);
    kdc_lval_destroy(&L->vars[i].val);
  }
  kd_host_free(L->vars);
  kdc_sbuf_free(&L->e.msg);
  kd_host_free(L);
}

static lang_var *find_var(kd_lang *L, const char *name) {
  for (size_t i = 0; i < L->nvars; i++)
    if (!strcmp(L->vars[i].name, name)) return &L->vars[i];
  return NULL;
}

/* Binds name to *v, taking it (*v is None after, also on error). */
static int set_var(kd_lang *L, const char *name, kdc_lpos pos, kdc_lval *v) {
  lang_var *var = find_var(L, name);
  if (var) {
    kdc_lval_destroy(&var->val);
    var->val = *v;
    *v = lval_of(kd_value_none());
    return 0;
  }
  if (L->nvars == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 16;
    lang_var *p = kd_host_realloc(L->vars, cap * sizeof *p);
    if (!p) {
      kdc_lval_destroy(v);
      return kdc_lerr_oom(&L->e, pos);
    }
    L->vars = p;
    L->cap = cap;
  }
  size_t n = strlen(name) + 1;
  char *copy = kd_host_malloc(n);
  if (!copy) {
    kdc_lval_destroy(v);
    return kdc_lerr_oom(&L->e, pos);
  }
  memcpy(copy, name, n);
  L->vars[L->nvars].name = copy;
  L->vars[L->nvars].val = *v;
  L->nvars++;
  *v = lval_of(kd_value_none());
  return 0;
}

static int eval(kd_lang *L, const kdc_node *n, kdc_lval *out);

/* ---- Names ------------------------------------------------------------------------ */

static bool names_operator(const char *name) {
  kd_op **ops = NULL;
  size_t n = 0;
  if (kdc_lang_overloads(name, &ops, &n)) return false;
  kd_host_free(ops);
  return n > 0;
}

static int eval_name(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  const char *name = n->s;
  lang_var *var = find_var(L, name);
  if (var) {
    kd_value_copy(&out->v, &var->val.v);
    out->named = var->val.named;
    return 0;
  }
  if (!strstr(name, "::")) {
    kd_dtype dt;
    kd_device_type dev;
    kd_layout layout;
    kd_memory_format mf;
    if (!strcmp(name, "inf")) {
      out->v = kd_value_double(INFINITY);
      return 0;
    }
    if (!strcmp(name, "nan")) {
      out->v = kd_value_double(NAN);
      return 0;
    }
    if (kd_dtype_from_name(name, &dt) == KD_OK) {
      out->v = kd_value_dtype(dt);
      return 0;
    }
    if (kd_device_type_from_name(name, &dev) == KD_OK) {
      kd_device d = {dev, 0};
      out->v = kd_value_device(d);
      return 0;
    }
    if (kd_layout_from_name(name, &layout) == KD_OK) {
      out->v = kd_value_layout(layout);
      return 0;
    }
    if (kd_memory_format_from_name(name, &mf) == KD_OK) {
      out->v = kd_value_memory_format(mf);
      return 0;
    }
  }
  if (names_operator(name))
    return kdc_lerr_set(&L->e, n->pos, "'%s' is an operator, not a value: call it, as %s(...)",
                        name, name);
  if (strstr(name, "::")) return kdc_lerr_set(&L->e, n->pos, "unknown operator '%s'", name);
  return kdc_lerr_set(&L->e, n->pos, "name '%s' is not defined", name);
}

/* ---- Sequences ---------------------------------------------------------------------- */

/* Whether v can be indexed and unpacked; its length. */
static bool seq_len(const kd_value *v, size_t *n) {
  switch (v->tag) {
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE:
    case KD_VALUE_INT_LIST:
    case KD_VALUE_DOUBLE_LIST:
    case KD_VALUE_BOOL_LIST:
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST:
      *n = kd_value_list_size(v);
      return true;
    default:
      return false;
  }
}

/* *out = a new owner of element i (i < length). */
static void seq_get(const kd_value *v, size_t i, kd_value *out) {
  switch (v->tag) {
    case KD_VALUE_INT_LIST: *out = kd_value_int(kd_value_int_list_data(v)[i]); break;
    case KD_VALUE_DOUBLE_LIST: *out = kd_value_double(kd_value_double_list_data(v)[i]); break;
    case KD_VALUE_BOOL_LIST: *out = kd_value_bool(kd_value_bool_list_data(v)[i]); break;
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST: *out = kd_value_tensor(kd_value_tensor_list_data(v)[i]); break;
    default: kd_value_copy(out, kd_value_list_at(v, i)); break;
  }
}

static int eval_index(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  kdc_lval base = lval_of(kd_value_none()), idx = lval_of(kd_value_none());
  int rc = -1;
  if (eval(L, n->a, &base) || eval(L, n->b, &idx)) goto done;
  if (base.v.tag == KD_VALUE_TENSOR) {
    kd_value zero = kd_value_int(0);
    kdc_larg args[3] = {{NULL, &base.v, n->a->pos}, {NULL, &zero, n->pos}, {NULL, &idx.v, n->b->pos}};
    rc = kdc_lang_invoke(&L->e, n->pos, "aten::select", NULL, args, 3, out);
    goto done;
  }
  size_t len;
  const char *what = kdc_value_type_name(&base.v);
  bool is_str = base.v.tag == KD_VALUE_STRING;
  const char *text = is_str ? kd_value_string_data(&base.v, &len) : NULL;
  if (!is_str && !seq_len(&base.v, &len)) {
    kdc_lerr_set(&L->e, n->pos, "'%s' object is not subscriptable", what);
    goto done;
  }
  if (idx.v.tag != KD_VALUE_INT) {
    kdc_lerr_set(&L->e, n->b->pos, "%s indices must be integers, not %s", what,
                 kdc_value_type_name(&idx.v));
    goto done;
  }
  int64_t i = idx.v.u.i;
  if (i < 0) i += (int64_t)len;
  if (i < 0 || (uint64_t)i >= (uint64_t)len) {
    kdc_lerr_set(&L->e, n->b->pos, "%s index %lld out of range (length %zu)", what,
                 (long long)idx.v.u.i, len);
    goto done;
  }
  if (is_str) {
    if (kd_value_string(text + i, 1, &out->v)) {
      kdc_lerr_oom(&L->e, n->pos);
      goto done;
    }
  } else {
    seq_get(&base.v, (size_t)i, &out->v);
  }
  rc = 0;
done:
  kdc_lval_destroy(&base);
  kdc_lval_destroy(&idx);
  return rc;
}

/* ---- Arithmetic ------------------------------------------------------------------------- */

static bool is_num(const kd_value *v) {
  return v->tag == KD_VALUE_BOOL || v->tag == KD_VALUE_INT || v->tag == KD_VALUE_DOUBLE ||
         v->tag == KD_VALUE_COMPLEX;
}

static bool is_tensorish(const kd_value *v) {
  return v->tag == KD_VALUE_TENSOR || v->tag == KD_VALUE_LIST || v->tag == KD_VALUE_TUPLE;
}

static double num_re(const kd_value *v) {
  switch (v->tag) {
    case KD_VALUE_BOOL: return v->u.b;
    case KD_VALUE_INT: return (double)v->u.i;
    case KD_VALUE_DOUBLE: return v->u.d;
    default: return v->u.c.re;
  }
}

static double num_im(const kd_value *v) { return v->tag == KD_VALUE_COMPLEX ? v->u.c.im : 0; }

static int64_t num_int(const kd_value *v) { return v->tag == KD_VALUE_BOOL ? v->u.b : v->u.i; }

static int arith(kd_lang *L, const kdc_node *n, const kd_value *a, const kd_value *b, kd_value *out) {
  int op = n->op;
  if (op == '@')
    return kdc_lerr_set(&L->e, n->pos, "unsupported operand type(s) for @: '%s' and '%s'",
                        kdc_value_type_name(a), kdc_value_type_name(b));
  if (a->tag == KD_VALUE_COMPLEX || b->tag == KD_VALUE_COMPLEX) {
    double ar = num_re(a), ai = num_im(a), br = num_re(b), bi = num_im(b);
    double re, im;
    if (op == '+') re = ar + br, im = ai + bi;
    else if (op == '-') re = ar - br, im = ai - bi;
    else if (op == '*') re = ar * br - ai * bi, im = ar * bi + ai * br;
    else {
      double d = br * br + bi * bi;
      if (d == 0) return kdc_lerr_set(&L->e, n->pos, "complex division by zero");
      re = (ar * br + ai * bi) / d;
      im = (ai * br - ar * bi) / d;
    }
    *out = kd_value_complex(re, im);
    return 0;
  }
  if (a->tag == KD_VALUE_DOUBLE || b->tag == KD_VALUE_DOUBLE || op == '/') {
    double x = num_re(a), y = num_re(b), r;
    if (op == '+') r = x + y;
    else if (op == '-') r = x - y;
    else if (op == '*') r = x * y;
    else {
      if (y == 0) return kdc_lerr_set(&L->e, n->pos, "division by zero");
      r = x / y;
    }
    *out = kd_value_double(r);
    return 0;
  }
  int64_t x = num_int(a), y = num_int(b), r;
  bool overflow = op == '+' ? __builtin_add_overflow(x, y, &r)
                  : op == '-' ? __builtin_sub_overflow(x, y, &r)
                              : __builtin_mul_overflow(x, y, &r);
  if (overflow) return kdc_lerr_set(&L->e, n->pos, "integer overflow in %c (int64)", op);
  *out = kd_value_int(r);
  return 0;
}

static int eval_binary(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  kdc_lval a = lval_of(kd_value_none()), b = lval_of(kd_value_none());
  int rc = -1;
  if (eval(L, n->a, &a) || eval(L, n->b, &b)) goto done;
  if (is_num(&a.v) && is_num(&b.v)) {
    rc = arith(L, n, &a.v, &b.v, &out->v);
  } else if ((is_tensorish(&a.v) || is_num(&a.v)) && (is_tensorish(&b.v) || is_num(&b.v))) {
    const char *op = n->op == '+' ? "add" : n->op == '-' ? "sub" : n->op == '*' ? "mul"
                   : n->op == '/' ? "div" : "matmul";
    kdc_larg args[2] = {{NULL, &a.v, n->a->pos}, {NULL, &b.v, n->b->pos}};
    rc = kdc_lang_invoke(&L->e, n->pos, op, NULL, args, 2, out);
  } else {
    rc = kdc_lerr_set(&L->e, n->pos, "unsupported operand type(s) for %c: '%s' and '%s'", n->op,
                      kdc_value_type_name(&a.v), kdc_value_type_name(&b.v));
  }
done:
  kdc_lval_destroy(&a);
  kdc_lval_destroy(&b);
  return rc;
}

static int eval_unary(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  kdc_lval a = lval_of(kd_value_none());
  if (eval(L, n->a, &a)) return -1;
  int rc = 0;
  kd_value *v = &a.v;
  bool neg = n->op == '-';
  if (v->tag == KD_VALUE_BOOL || v->tag == KD_VALUE_INT) {
    int64_t x = num_int(v);
    if (neg && x == INT64_MIN) rc = kdc_lerr_set(&L->e, n->pos, "integer overflow in - (int64)");
    else out->v = kd_value_int(neg ? -x : x);
  } else if (v->tag == KD_VALUE_DOUBLE) {
    out->v = kd_value_double(neg ? -v->u.d : v->u.d);
  } else if (v->tag == KD_VALUE_COMPLEX) {
    out->v = neg ? kd_value_complex(-v->u.c.re, -v->u.c.im) : *v;
  } else if (is_tensorish(v)) {
    if (neg) {
      kdc_larg args[1] = {{NULL, v, n->a->pos}};
      rc = kdc_lang_invoke(&L->e, n->pos, "neg", NULL, args, 1, out);
    } else {
      kd_value_move(&out->v, v);
    }
  } else {
    rc = kdc_lerr_set(&L->e, n->pos, "bad operand type for unary %c: '%s'", n->op,
                      kdc_value_type_name(v));
  }
  kdc_lval_destroy(&a);
  return rc;
}

/* ---- Calls ------------------------------------------------------------------------------ */

/* Evaluates a call's arguments into vals[] and args[] (both n long). */
static int eval_args(kd_lang *L, const kdc_node *call, kdc_lval *vals, kdc_larg *args) {
  for (size_t i = 0; i < call->n; i++) {
    const kdc_node *item = call->items[i];
    bool kw = item->kind == KDC_N_KWARG;
    if (eval(L, kw ? item->a : item, &vals[i])) return -1;
    args[i].kw = kw ? item->s : NULL;
    args[i].v = &vals[i].v;
    args[i].pos = kw ? item->a->pos : item->pos;
  }
  return 0;
}

/* The builtins' shared check: no keyword arguments, `min`..`max` positional. */
static int plain_args(kd_lang *L, const kdc_node *call, const char *name, size_t min, size_t max) {
  for (size_t i = 0; i < call->n; i++)
    if (call->items[i]->kind == KDC_N_KWARG)
      return kdc_lerr_set(&L->e, call->items[i]->pos,
                          "%s() got an unexpected keyword argument '%s'", name, call->items[i]->s);
  if (call->n < min || call->n > max) {
    if (min == max)
      return kdc_lerr_set(&L->e, call->pos, "%s() takes %zu argument%s (%zu given)", name, min,
                          min == 1 ? "" : "s", call->n);
    return kdc_lerr_set(&L->e, call->pos, "%s() takes from %zu to %zu arguments (%zu given)", name,
                        min, max, call->n);
  }
  return 0;
}

static int write_value(kd_lang *L, kdc_lpos pos, const kdc_lval *v) {
  if (kdc_lval_print(L->out, v)) return kdc_lerr_set(&L->e, pos, "cannot print: %s", kd_last_error());
  return 0;
}

static int builtin_print(kd_lang *L, const kdc_node *call) {
  if (plain_args(L, call, "print", 0, (size_t)-1)) return -1;
  kdc_lval *vals = kd_host_calloc(call->n + 1, sizeof *vals);
  if (!vals) return kdc_lerr_oom(&L->e, call->pos);
  int rc = 0;
  for (size_t i = 0; i < call->n && !rc; i++) rc = eval(L, call->items[i], &vals[i]);
  for (size_t i = 0; i < call->n && !rc; i++) {
    if (i) fputc(' ', L->out);
    size_t len;
    const char *text = kd_value_string_data(&vals[i].v, &len);
    if (text) fwrite(text, 1, len, L->out);
    else rc = write_value(L, call->items[i]->pos, &vals[i]);
  }
  if (!rc) fputc('\n', L->out);
  for (size_t i = 0; i < call->n; i++) kdc_lval_destroy(&vals[i]);
  kd_host_free(vals);
  return rc;
}

static int builtin_trace(kd_lang *L, const kdc_node *call) {
  kdc_lval v = lval_of(kd_value_none());
  if (plain_args(L, call, "trace", 1, 1) || eval(L, call->items[0], &v)) return -1;
  if (v.v.tag != KD_VALUE_BOOL) {
    int rc = kdc_lerr_set(&L->e, call->items[0]->pos,
                          "trace() takes True or False, not %s", kdc_value_type_name(&v.v));
    kdc_lval_destroy(&v);
    return rc;
  }
  if (v.v.u.b && !L->tracing) {
    L->saved_keys = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
    L->saved_trace_out = kdc_tool_trace_out;
    kdc_tool_trace_out = L->out;
    L->tracing = true;
  } else if (!v.v.u.b) {
    trace_off(L);
  }
  return 0;
}

/* The operator a table() argument names: add.Tensor, demo::scale, max, or a
 * string. */
static int op_of_arg(kd_lang *L, const kdc_node *arg, const char *who, kd_op **op) {
  const char *name = NULL, *overload = "";
  if (arg->kind == KDC_N_NAME) {
    name = arg->s;
  } else if (arg->kind == KDC_N_ATTR && arg->a->kind == KDC_N_NAME) {
    name = arg->a->s;
    overload = arg->s;
  } else if (arg->kind == KDC_N_STR) {
    name = arg->s;
    overload = NULL;
  } else {
    return kdc_lerr_set(&L->e, arg->pos,
                        "%s() takes an operator: add.Tensor, demo::scale or \"aten::add.Tensor\"",
                        who);
  }
  char *qual = kdc_lang_qualify(name);
  if (!qual) return kdc_lerr_oom(&L->e, arg->pos);
  kd_status st = kd_op_find(qual, overload, op);
  if (st != KD_OK && overload && !strcmp(overload, "default")) st = kd_op_find(qual, "", op);
  if (st == KD_OK) {
    kd_host_free(qual);
    return 0;
  }
  /* Name the overloads there are. */
  kd_op **ops = NULL;
  size_t n = 0;
  int rc;
  if (!overload || overload[0] || kdc_lang_overloads(name, &ops, &n) || n == 0) {
    rc = kdc_lerr_set(&L->e, arg->pos, "%s(): no operator '%s%s%s'", who, qual,
                      overload && overload[0] ? "." : "", overload ? overload : "");
  } else {
    kdc_sbuf names = {0};
    for (size_t i = 0; i < n; i++)
      kdc_sbuf_printf(&names, "%s%s", i ? ", " : "", kd_op_name(ops[i]));
    rc = kdc_lerr_set(&L->e, arg->pos, "%s(): '%s' has overloads; name one: %s", who, qual,
                      kdc_sbuf_str(&names));
    kdc_sbuf_free(&names);
  }
  kd_host_free(ops);
  kd_host_free(qual);
  return rc;
}

static int builtin_table(kd_lang *L, const kdc_node *call) {
  kd_op *op;
  if (plain_args(L, call, "table", 1, 1) || op_of_arg(L, call->items[0], "table", &op)) return -1;
  if (kdc_print_op_table(L->out, op)) return kdc_lerr_oom(&L->e, call->pos);
  return 0;
}

static int builtin_overloads(kd_lang *L, const kdc_node *call) {
  if (plain_args(L, call, "overloads", 1, 1)) return -1;
  const kdc_node *arg = call->items[0];
  if (arg->kind != KDC_N_NAME && arg->kind != KDC_N_STR)
    return kdc_lerr_set(&L->e, arg->pos, "overloads() takes an operator name: add, demo::neg");
  kd_op **ops = NULL;
  size_t n = 0;
  if (kdc_lang_overloads(arg->s, &ops, &n)) return kdc_lerr_oom(&L->e, arg->pos);
  int rc = 0;
  if (n == 0) rc = kdc_lerr_set(&L->e, arg->pos, "overloads(): no operator named '%s'", arg->s);
  for (size_t i = 0; i < n; i++) {
    char buf[1024];
    kd_schema_format(kd_op_schema(ops[i]), buf, sizeof buf);
    const char *paren = strchr(buf, '(');
    fprintf(L->out, "%s%s\n", kd_op_name(ops[i]), paren ? paren : "");
  }
  kd_host_free(ops);
  return rc;
}

static int builtin_tensor(kd_lang *L, const kdc_node *call, kdc_lval *out) {
  kdc_lval vals[2] = {lval_of(kd_value_none()), lval_of(kd_value_none())};
  kdc_larg args[2];
  int rc = -1;
  if (call->n < 1 || call->n > 2) {
    return kdc_lerr_set(&L->e, call->pos, "tensor() takes from 1 to 2 arguments (%zu given)",
                        call->n);
  }
  if (eval_args(L, call, vals, args)) goto done;
  const kd_value *data = args[0].v, *dtype = NULL;
  if (args[0].kw) {
    kdc_lerr_set(&L->e, args[0].pos, "tensor() takes its data by position");
    goto done;
  }
  if (call->n == 2) {
    if (args[1].kw && strcmp(args[1].kw, "dtype")) {
      kdc_lerr_set(&L->e, call->items[1]->pos, "tensor() got an unexpected keyword argument '%s'",
                   args[1].kw);
      goto done;
    }
    dtype = args[1].v;
    if (dtype->tag == KD_VALUE_NONE) {
      dtype = NULL;
    } else if (dtype->tag != KD_VALUE_DTYPE) {
      kdc_lerr_set(&L->e, args[1].pos, "tensor(): argument 'dtype' must be a dtype, not %s",
                   kdc_value_type_name(dtype));
      goto done;
    }
  }
  kd_tensor *t = NULL;
  if (data->tag == KD_VALUE_TENSOR) {
    if (kd_tensor_to_dtype(data->u.t, kd_tensor_dtype(data->u.t), &t)) {
      kdc_lerr_set(&L->e, args[0].pos, "%s", kd_last_error());
      goto done;
    }
  } else if (data->tag == KD_VALUE_LIST || data->tag == KD_VALUE_TUPLE) {
    if (kdc_tensor_from_literal(&L->e, args[0].pos, data, &t)) goto done;
  } else if (is_num(data)) {
    if (kdc_tensor_from_number(&L->e, args[0].pos, data, false, &t)) goto done;
  } else {
    kdc_lerr_set(&L->e, args[0].pos, "tensor() takes a list of numbers, a number or a tensor, not %s",
                 kdc_value_type_name(data));
    goto done;
  }
  if (dtype && kd_tensor_dtype(t) != dtype->u.dtype) {
    kd_tensor *c;
    kd_status st = kd_tensor_to_dtype(t, dtype->u.dtype, &c);
    kd_tensor_release(t);
    if (st) {
      kdc_lerr_set(&L->e, args[1].pos, "%s", kd_last_error());
      goto done;
    }
    t = c;
  }
  out->v = kd_value_tensor(t);
  kd_tensor_release(t);
  rc = 0;
done:
  kdc_lval_destroy(&vals[0]);
  kdc_lval_destroy(&vals[1]);
  return rc;
}

static int eval_call(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  const kdc_node *callee = n->a;
  const char *name = NULL, *overload = NULL;
  if (callee->kind == KDC_N_NAME) {
    name = callee->s;
    if (!strcmp(name, "print")) return builtin_print(L, n);
    if (!strcmp(name, "trace")) return builtin_trace(L, n);
    if (!strcmp(name, "table")) return builtin_table(L, n);
    if (!strcmp(name, "overloads")) return builtin_overloads(L, n);
    if (!strcmp(name, "tensor")) return builtin_tensor(L, n, out);
  } else if (callee->kind == KDC_N_ATTR && callee->a->kind == KDC_N_NAME) {
    name = callee->a->s;
    overload = callee->s;
  } else {
    return kdc_lerr_set(&L->e, callee->pos,
                        "only operators and builtins can be called (add(x, y), add.Tensor(x, y))");
  }
  kdc_lval *vals = kd_host_calloc(n->n + 1, sizeof *vals);
  kdc_larg *args = kd_host_calloc(n->n + 1, sizeof *args);
  int rc = -1;
  if (!vals || !args) {
    kdc_lerr_oom(&L->e, n->pos);
  } else if (!eval_args(L, n, vals, args)) {
    rc = kdc_lang_invoke(&L->e, n->pos, name, overload, args, n->n, out);
  }
  for (size_t i = 0; vals && i < n->n; i++) kdc_lval_destroy(&vals[i]);
  kd_host_free(vals);
  kd_host_free(args);
  return rc;
}

/* ---- Expressions ---------------------------------------------------------------------------- */

static int eval_items(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  kd_value *items = kd_host_calloc(n->n + 1, sizeof *items);
  if (!items) return kdc_lerr_oom(&L->e, n->pos);
  int rc = 0;
  for (size_t i = 0; i < n->n && !rc; i++) {
    kdc_lval v = lval_of(kd_value_none());
    rc = eval(L, n->items[i], &v);
    items[i] = v.v; /* a named tuple inside a list prints as a plain tuple */
  }
  if (!rc) {
    kd_status st = n->kind == KDC_N_LIST ? kd_value_list(items, n->n, &out->v)
                                         : kd_value_tuple(items, n->n, &out->v);
    if (st) rc = kdc_lerr_oom(&L->e, n->pos);
  }
  for (size_t i = 0; i < n->n; i++) kd_value_destroy(&items[i]);
  kd_host_free(items);
  return rc;
}

static int eval(kd_lang *L, const kdc_node *n, kdc_lval *out) {
  *out = lval_of(kd_value_none());
  switch (n->kind) {
    case KDC_N_INT: out->v = kd_value_int(n->i); return 0;
    case KDC_N_FLOAT: out->v = kd_value_double(n->d); return 0;
    case KDC_N_IMAG: out->v = kd_value_complex(0, n->d); return 0;
    case KDC_N_BOOL: out->v = kd_value_bool(n->i != 0); return 0;
    case KDC_N_NONE: return 0;
    case KDC_N_STR:
      if (kd_value_string(n->s, n->slen, &out->v)) return kdc_lerr_oom(&L->e, n->pos);
      return 0;
    case KDC_N_NAME: return eval_name(L, n, out);
    case KDC_N_ATTR:
      if (n->a->kind == KDC_N_NAME && !find_var(L, n->a->s))
        return kdc_lerr_set(&L->e, n->pos, "'%s.%s' is an operator, not a value: call it, as %s.%s(...)",
                            n->a->s, n->s, n->a->s, n->s);
      return kdc_lerr_set(&L->e, n->pos, "attributes are not supported ('.' only names an overload)");
    case KDC_N_LIST:
    case KDC_N_TUPLE: return eval_items(L, n, out);
    case KDC_N_CALL: return eval_call(L, n, out);
    case KDC_N_INDEX: return eval_index(L, n, out);
    case KDC_N_UNARY: return eval_unary(L, n, out);
    case KDC_N_BINARY: return eval_binary(L, n, out);
    case KDC_N_KWARG: break;
  }
  return kdc_lerr_set(&L->e, n->pos, "a keyword argument outside a call");
}

/* ---- Statements ------------------------------------------------------------------------------- */

static int unpack(kd_lang *L, const kdc_stmt *s, kdc_lval *v) {
  size_t len;
  if (!seq_len(&v->v, &len))
    return kdc_lerr_set(&L->e, s->value->pos, "cannot unpack non-iterable %s object",
                        kdc_value_type_name(&v->v));
  if (len > s->ntargets)
    return kdc_lerr_set(&L->e, s->value->pos, "too many values to unpack (expected %zu, got %zu)",
                        s->ntargets, len);
  if (len < s->ntargets)
    return kdc_lerr_set(&L->e, s->value->pos, "not enough values to unpack (expected %zu, got %zu)",
                        s->ntargets, len);
  for (size_t i = 0; i < len; i++) {
    kdc_lval item = lval_of(kd_value_none());
    seq_get(&v->v, i, &item.v);
    if (set_var(L, s->targets[i], s->target_pos[i], &item)) return -1;
  }
  return 0;
}

static int exec(kd_lang *L, const kdc_stmt *s) {
  kdc_lval v = lval_of(kd_value_none());
  if (eval(L, s->value, &v)) return -1;
  int rc = 0;
  if (s->ntargets == 1) {
    rc = set_var(L, s->targets[0], s->target_pos[0], &v);
  } else if (s->ntargets > 1) {
    rc = unpack(L, s, &v);
  } else if (v.v.tag != KD_VALUE_NONE) {
    rc = write_value(L, s->value->pos, &v);
    if (!rc) fputc('\n', L->out);
  }
  kdc_lval_destroy(&v);
  return rc;
}

static void report(kd_lang *L, const char *name) {
  fflush(L->out); /* what ran before the error comes first on a shared terminal or pipe */
  fprintf(L->err, "%s:%d:%d: error: %s\n", name, L->e.pos.line, L->e.pos.col,
          L->e.msg.failed ? "out of memory" : kdc_sbuf_str(&L->e.msg));
}

int kdc_lang_run(kd_lang *L, const char *src, size_t len, const char *name) {
  if (!name) name = "<string>";
  kdc_lerr_clear(&L->e);
  kdc_arena arena = {NULL};
  kdc_lexer lx;
  kdc_lex_init(&lx, src ? src : "", src ? len : 0, &arena, &L->e);
  int rc = 0;
  for (;;) {
    kdc_stmt s;
    int got = kdc_parse_stmt(&lx, &s);
    if (got == 0) break;
    if (got < 0 || exec(L, &s)) {
      rc = 1;
      break;
    }
  }
  if (rc) report(L, name);
  fflush(L->out);
  kdc_arena_free(&arena);
  return rc;
}

/* ---- kd call ------------------------------------------------------------------------------------- */

int kdc_lang_call_argv(kd_lang *L, const char *op, int argc, char **argv) {
  kdc_lerr_clear(&L->e);
  kdc_arena arena = {NULL};
  size_t n = argc > 0 ? (size_t)argc : 0;
  kdc_lval *vals = kd_host_calloc(n + 1, sizeof *vals);
  kdc_larg *args = kd_host_calloc(n + 1, sizeof *args);
  char *name = NULL;
  kdc_lval result = lval_of(kd_value_none());
  int rc = 1;
  kdc_lpos nopos = {1, 1};
  if (!vals || !args || !(name = kd_host_malloc(strlen(op) + 1))) {
    fprintf(L->err, "kd call: error: out of memory\n");
    goto done;
  }
  /* The operator: NAME or NAME.OVERLOAD. */
  strcpy(name, op);
  char *dot = strrchr(name, '.');
  const char *overload = NULL;
  if (dot && !strstr(dot, "::")) {
    *dot = '\0';
    overload = dot + 1;
  }
  /* Positional arguments first, then NAME=EXPR keywords (in the order given). */
  size_t k = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < n; i++) {
      const char *text = argv[i], *eq = NULL;
      size_t j = 0;
      if ((text[0] >= 'a' && text[0] <= 'z') || (text[0] >= 'A' && text[0] <= 'Z') || text[0] == '_') {
        while (text[j] == '_' || (text[j] >= 'a' && text[j] <= 'z') ||
               (text[j] >= 'A' && text[j] <= 'Z') || (text[j] >= '0' && text[j] <= '9'))
          j++;
        if (text[j] == '=' && text[j + 1] != '=') eq = text + j;
      }
      if ((pass == 0) != (eq == NULL)) continue;
      const char *expr = eq ? eq + 1 : text;
      char where[32];
      snprintf(where, sizeof where, "<arg %zu>", i + 1);
      kdc_lexer lx;
      kdc_lex_init(&lx, expr, strlen(expr), &arena, &L->e);
      kdc_node *node;
      if (kdc_parse_expr_only(&lx, &node) || eval(L, node, &vals[k])) {
        report(L, where);
        goto done;
      }
      if (eq) {
        char *kw = kdc_arena_strndup(&arena, text, j);
        if (!kw) {
          fprintf(L->err, "kd call: error: out of memory\n");
          goto done;
        }
        for (size_t m = 0; m < k; m++) {
          if (args[m].kw && !strcmp(args[m].kw, kw)) {
            fprintf(L->err, "kd call: error: keyword argument repeated: '%s'\n", kw);
            goto done;
          }
        }
        args[k].kw = kw;
      }
      args[k].v = &vals[k].v;
      args[k].pos = nopos;
      k++;
    }
  }
  if (kdc_lang_invoke(&L->e, nopos, name, overload, args, k, &result)) {
    fprintf(L->err, "kd call: error: %s\n", L->e.msg.failed ? "out of memory" : kdc_sbuf_str(&L->e.msg));
    goto done;
  }
  rc = 0;
  if (result.v.tag != KD_VALUE_NONE) {
    if (kdc_lval_print(L->out, &result)) {
      fprintf(L->err, "kd call: error: cannot print: %s\n", kd_last_error());
      rc = 1;
    } else {
      fputc('\n', L->out);
    }
  }
done:
  fflush(L->out);
  kdc_lval_destroy(&result);
  for (size_t i = 0; vals && i < n; i++) kdc_lval_destroy(&vals[i]);
  kd_host_free(vals);
  kd_host_free(args);
  kd_host_free(name);
  kdc_arena_free(&arena);
  return rc;
}
