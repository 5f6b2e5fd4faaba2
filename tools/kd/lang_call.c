/*
 * lang_call.c: operator calls of the little language: which overload, how
 * each argument becomes a boxed value, the boxed call itself.
 *
 * NAMES. `add` means aten::add; `demo::neg` names another namespace;
 * `add.Tensor` names one overload (`max.default` the overload with no name).
 * Without an overload name every defined overload of the operator is a
 * candidate (kd_ops_foreach finds them).
 *
 * ORDER. The candidates are tried in the order PyTorch's generated Python
 * bindings try an operator's signatures (tools/autograd/gen_python_functions.py,
 * sort_overloads), so that the first one that accepts the arguments wins:
 * 1. sort by the text of the argument list without the out arguments (the
 *    keyword-only arguments the overload writes), "(Tensor self, Tensor
 *    other, *, Scalar alpha=1)"; an overload without out arguments before
 *    the out overload of the same text (PyTorch groups the two into one
 *    signature and picks the out one when out= is given; trying the base
 *    first then the out one gives the same result), then by name;
 * 2. then a stable topological sort by a partial order: overload A comes
 *    after overload B when both have the same number of (non-out) arguments,
 *    every argument type of A equals B's or is "smaller", and not all are
 *    equal. A type is smaller than another when it is Scalar against Tensor,
 *    holds Dimname against one that does not, is int[] against int or int?,
 *    or is Tensor[] against any other list. So add.Tensor (Tensor other) is
 *    tried before add.Scalar (Scalar other). SymInt is compared as int.
 * `overloads(name)` prints the order.
 *
 * ACCEPTING ARGUMENTS (PyTorch's FunctionSignature::parse): more positional
 * arguments than the schema has positional parameters rejects the overload
 * ("takes 2 positional arguments but 3 were given"); a keyword-only
 * parameter never takes a positional argument; a parameter not given takes
 * its default, or rejects ("missing required argument 'dim'"); None fits an
 * optional parameter (T?) or one whose default is None; a keyword that
 * names no parameter rejects ("got an unexpected keyword argument 'foo'"),
 * as does a keyword for a parameter given by position ("got multiple values
 * for argument 'self'"). When the only positional parameter is an int list,
 * several ints are taken as that list (zeros(2, 3) is zeros([2, 3])).
 * A value fits a parameter type as follows:
 *   Tensor      a tensor; a list literal of numbers (made a tensor, see
 *               lang_tensor.c); a number only for the operators PyTorch lets
 *               numbers stand for tensors (add, sub, mul, div, true_divide,
 *               floor_divide, their aliases divide/multiply/subtract, their
 *               in-place and out forms, to, _to_copy, copy_): it becomes a
 *               0-dim "wrapped number" tensor (int64, float64, bool or
 *               complex128), which type promotion ranks below tensors
 *   int         an int (not a bool); a 0-dim integral tensor
 *   float       an int or a float; a 0-dim tensor
 *   complex     an int, float or complex; a 0-dim tensor
 *   bool        a bool
 *   Scalar      a bool, int, float or complex; a 0-dim tensor (its value)
 *   str         a string
 *   ScalarType  a dtype name (float32, int8, float, long, ...)
 *   Device      a device name (cpu, meta, ...) or a string ("cpu", "cuda:1")
 *   Layout, MemoryFormat   their names (strided, contiguous_format, ...)
 *   int[N]      a list or tuple of ints; with N given, also one int (repeated
 *               N times: sum(x, 1) is sum(x, [1])); float[], bool[] alike
 *   Tensor[]    a list or tuple of tensors or list literals; a tensor list
 *   Tensor?[]   as Tensor[], None allowed
 * Other types (Generator, Dimname, ...) take only None where optional.
 * A rejected overload says why, as PyTorch does: "argument 'other'
 * (position 2) must be Tensor, not str". When no candidate accepts, the
 * error lists every candidate's schema in the order tried with its reason
 * (one candidate: just its reason).
 *
 * THE CALL. The arguments are pushed on a kd_stack in schema order (defaults
 * of skipped parameters from the schema: kd_argument_default_value, and
 * kd_op_fill_defaults for the trailing ones) and kd_call_boxed runs it.
 * One result is the value; several make a tuple, labelled with the
 * operator when every return has a name (printed as return_types.max(...)).
 */
#include <stdlib.h>
#include <string.h>

#include "lang_impl.h"
#include "kd/memory.h"

#define MAX_ARGS 64

/* ---- Names and candidates --------------------------------------------------- */

char *kdc_lang_qualify(const char *name) {
  const char *prefix = strstr(name, "::") ? "" : "aten::";
  size_t n = strlen(prefix) + strlen(name) + 1;
  char *q = kd_host_malloc(n);
  if (q) snprintf(q, n, "%s%s", prefix, name);
  return q;
}

typedef struct gather {
  const char *qual;
  size_t qlen;
  kd_op **ops;
  size_t n, cap;
  bool oom;
} gather;

static int gather_fn(kd_op *op, void *ud) {
  gather *g = ud;
  const char *name = kd_op_name(op);
  if (strncmp(name, g->qual, g->qlen) || (name[g->qlen] != '\0' && name[g->qlen] != '.')) return 0;
  if (!kd_op_schema(op)) return 0; /* implemented only: nothing to call */
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 8;
    kd_op **p = kd_host_realloc(g->ops, cap * sizeof *p);
    if (!p) {
      g->oom = true;
      return 1;
    }
    g->ops = p;
    g->cap = cap;
  }
  g->ops[g->n++] = op;
  return 0;
}

static bool is_out_arg(const kd_argument *a) {
  return kd_argument_kwarg_only(a) && kd_argument_is_write(a);
}

/* The type as compared by the ordering: the schema spelling, SymInt as int. */
static void type_text(const kd_type *t, char *buf, size_t cap) {
  char raw[128];
  kd_type_format(t, raw, sizeof raw);
  size_t o = 0;
  for (const char *p = raw; *p && o + 1 < cap;) {
    if (!strncmp(p, "SymInt", 6)) {
      for (const char *r = "int"; *r && o + 1 < cap; r++) buf[o++] = *r;
      p += 6;
    } else {
      buf[o++] = *p++;
    }
  }
  buf[o] = '\0';
}

typedef struct cand {
  kd_op *op;
  kdc_sbuf key;               /* the sort key: the non-out arguments' text */
  size_t pkey_len;            /* the length of its positional part */
  bool is_out;
  size_t nin;                 /* arguments that are not out arguments */
  char (*types)[128];         /* their type texts (malloc'd) */
} cand;

static int cand_init(cand *c, kd_op *op) {
  memset(c, 0, sizeof *c);
  c->op = op;
  const kd_schema *s = kd_op_schema(op);
  size_t na = kd_schema_num_arguments(s);
  c->types = kd_host_malloc((na ? na : 1) * sizeof *c->types);
  if (!c->types) return -1;
  bool kw = false;
  kdc_sbuf_puts(&c->key, "(");
  for (size_t i = 0; i < na; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (is_out_arg(a)) {
      c->is_out = true;
      continue;
    }
    type_text(kd_argument_type(a), c->types[c->nin], sizeof c->types[c->nin]);
    if (kd_argument_kwarg_only(a) && !kw) c->pkey_len = c->key.len;
    if (c->nin) kdc_sbuf_puts(&c->key, ", ");
    if (kd_argument_kwarg_only(a) && !kw) {
      kdc_sbuf_puts(&c->key, "*, ");
      kw = true;
    }
    const char *d = kd_argument_default(a);
    kdc_sbuf_printf(&c->key, "%s %s%s%s", c->types[c->nin], kd_argument_name(a), d ? "=" : "",
                    d ? d : "");
    c->nin++;
  }
  if (!kw) c->pkey_len = c->key.len;
  kdc_sbuf_puts(&c->key, ")");
  return c->key.failed ? -1 : 0;
}

static void cand_free(cand *c) {
  kdc_sbuf_free(&c->key);
  kd_host_free(c->types);
}

static int cand_cmp(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  int r = strcmp(kdc_sbuf_str(&a->key), kdc_sbuf_str(&b->key));
  if (r) return r;
  if (a->is_out != b->is_out) return a->is_out ? 1 : -1;
  return strcmp(kd_op_name(a->op), kd_op_name(b->op));
}

static bool is_arg_smaller(const char *t1, const char *t2) {
  return (!strcmp(t1, "Scalar") && !strcmp(t2, "Tensor")) ||
         (strstr(t1, "Dimname") && !strstr(t2, "Dimname")) ||
         (!strcmp(t1, "int[]") && (!strcmp(t2, "int") || !strcmp(t2, "int?"))) ||
         (!strcmp(t1, "Tensor[]") && strstr(t2, "[]"));
}

/* a < b in the partial order: a is tried after b. */
static bool is_smaller(const cand *a, const cand *b) {
  if (a->nin != b->nin) return false;
  bool equal = true;
  for (size_t i = 0; i < a->nin; i++) {
    if (!strcmp(a->types[i], b->types[i])) continue;
    equal = false;
    if (!is_arg_smaller(a->types[i], b->types[i])) return false;
  }
  return !equal;
}

/* Orders c[0..n) as the comment at the top says; writes the order to ops. */
static int order_candidates(cand *c, size_t n, kd_op **ops) {
  qsort(c, n, sizeof *c, cand_cmp);
  /* larger[i * n + j]: i is smaller than j, so j must come first. */
  bool *larger = kd_host_calloc(n * n + 1, sizeof *larger);
  size_t *order = kd_host_malloc((n + 1) * sizeof *order), *pending = kd_host_calloc(n + 1, sizeof *pending);
  bool *placed = kd_host_calloc(n + 1, sizeof *placed);
  if (!larger || !order || !pending || !placed) {
    kd_host_free(larger);
    kd_host_free(order);
    kd_host_free(pending);
    kd_host_free(placed);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      if (i != j && is_smaller(&c[i], &c[j])) {
        larger[i * n + j] = true;
        pending[i]++;
      }
  size_t len = 0;
  for (size_t i = 0; i < n; i++)
    if (!pending[i]) {
      order[len++] = i;
      placed[i] = true;
    }
  for (size_t idx = 0; idx < len; idx++) {
    size_t i = order[idx];
    for (size_t j = 0; j < n; j++) {
      if (placed[j] || !larger[j * n + i]) continue;
      larger[j * n + i] = false;
      if (--pending[j] == 0) {
        order[len++] = j;
        placed[j] = true;
      }
    }
  }
  for (size_t j = 0; j < n; j++) /* cannot happen for a strict order; keep them all anyway */
    if (!placed[j]) order[len++] = j;
  for (size_t k = 0; k < n; k++) ops[k] = c[order[k]].op;
  kd_host_free(larger);
  kd_host_free(order);
  kd_host_free(pending);
  kd_host_free(placed);
  return 0;
}

/* An out overload whose key no functional overload has takes the key of the
 * first functional overload with the same positional arguments (zeros.out
 * after zeros, max.dim_max after max.dim), as PyTorch groups them. */
static int adopt_base_keys(cand *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!c[i].is_out) continue;
    const cand *same = NULL, *base = NULL;
    for (size_t j = 0; j < n; j++) {
      if (c[j].is_out) continue;
      if (!strcmp(kdc_sbuf_str(&c[j].key), kdc_sbuf_str(&c[i].key))) same = &c[j];
      if (!base && c[j].pkey_len == c[i].pkey_len &&
          !strncmp(kdc_sbuf_str(&c[j].key), kdc_sbuf_str(&c[i].key), c[i].pkey_len))
        base = &c[j];
    }
    if (same || !base) continue;
    kdc_sbuf key = {0};
    kdc_sbuf_puts(&key, kdc_sbuf_str(&base->key));
    if (key.failed) {
      kdc_sbuf_free(&key);
      return -1;
    }
    kdc_sbuf_free(&c[i].key);
    c[i].key = key;
  }
  return 0;
}

/* The defined overloads of a qualified name, unordered. */
static int find_overloads(const char *qual, kd_op ***ops, size_t *n) {
  gather g = {qual, strlen(qual), NULL, 0, 0, false};
  /* -1: kd_ops_foreach could not allocate its list (gather_fn stops with 1
   * only when it sets g.oom): not "no such operator". */
  if (kd_ops_foreach(gather_fn, &g) < 0 || g.oom) {
    kd_host_free(g.ops);
    return -1;
  }
  *ops = g.ops;
  *n = g.n;
  return 0;
}

static int sort_overloads(kd_op **ops, size_t n) {
  if (n < 2) return 0;
  cand *c = kd_host_calloc(n, sizeof *c);
  if (!c) return -1;
  int rc = 0;
  size_t made = 0;
  for (; made < n; made++) {
    if (cand_init(&c[made], ops[made])) {
      cand_free(&c[made]);
      rc = -1;
      break;
    }
  }
  if (!rc) rc = adopt_base_keys(c, n);
  if (!rc) rc = order_candidates(c, n, ops);
  for (size_t i = 0; i < made; i++) cand_free(&c[i]);
  kd_host_free(c);
  return rc;
}

int kdc_lang_overloads(const char *name, kd_op ***ops, size_t *n) {
  *ops = NULL;
  *n = 0;
  char *qual = kdc_lang_qualify(name);
  if (!qual) return -1;
  int rc = find_overloads(qual, ops, n);
  kd_host_free(qual);
  if (rc) return -1;
  if (sort_overloads(*ops, *n)) {
    kd_host_free(*ops);
    *ops = NULL;
    *n = 0;
    return -1;
  }
  return 0;
}

/* ---- Does a value fit a parameter type? ------------------------------------ */

static bool zero_dim_tensor(const kd_value *v) {
  return v->tag == KD_VALUE_TENSOR && kd_tensor_ndim(v->u.t) == 0;
}

static bool is_number(const kd_value *v) {
  return v->tag == KD_VALUE_BOOL || v->tag == KD_VALUE_INT || v->tag == KD_VALUE_DOUBLE ||
         v->tag == KD_VALUE_COMPLEX || v->tag == KD_VALUE_SCALAR;
}

static bool is_seq(const kd_value *v) {
  return v->tag == KD_VALUE_LIST || v->tag == KD_VALUE_TUPLE;
}

/* The operators whose Tensor parameters accept numbers (PyTorch's
 * should_allow_numbers_as_tensors, by schema name: add.out is named add). */
static bool numbers_as_tensors(kd_op *op) {
  const kd_schema *s = kd_op_schema(op);
  static const char *const names[] = {
      "add",          "add_",          "div",           "div_",         "divide",
      "divide_",      "mul",           "mul_",          "multiply",     "multiply_",
      "sub",          "sub_",          "subtract",      "subtract_",    "true_divide",
      "true_divide_", "floor_divide",  "floor_divide_", "to",           "_to_copy",
      "copy_",
  };
  if (strncmp(kd_op_name(op), "aten::", 6) != 0) return false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(kd_schema_name(s), names[i])) return true;
  return false;
}

static bool fits_tensor(const kd_value *v, bool nat) {
  return v->tag == KD_VALUE_TENSOR || kdc_is_tensor_literal(v) || (nat && is_number(v));
}

static bool fits_int(const kd_value *v) {
  return v->tag == KD_VALUE_INT ||
         (zero_dim_tensor(v) && kd_dtype_is_integral(kd_tensor_dtype(v->u.t), false));
}

/* Whether v fits type t. For a list type, *bad_elem is set to the index of
 * the first element that does not fit (when that is why). */
static bool fits(const kd_type *t, const kd_value *v, bool nat, long *bad_elem) {
  switch (kd_type_kind_of(t)) {
    case KD_TYPE_OPTIONAL:
      return v->tag == KD_VALUE_NONE || fits(kd_type_element(t), v, nat, bad_elem);
    case KD_TYPE_TENSOR:
      return fits_tensor(v, nat);
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
    case KD_TYPE_DEVICE_INDEX:
      return fits_int(v);
    case KD_TYPE_FLOAT:
      return v->tag == KD_VALUE_INT || v->tag == KD_VALUE_DOUBLE || zero_dim_tensor(v);
    case KD_TYPE_COMPLEX:
      return v->tag == KD_VALUE_INT || v->tag == KD_VALUE_DOUBLE || v->tag == KD_VALUE_COMPLEX ||
             zero_dim_tensor(v);
    case KD_TYPE_BOOL:
      return v->tag == KD_VALUE_BOOL;
    case KD_TYPE_SCALAR:
      return is_number(v) || zero_dim_tensor(v);
    case KD_TYPE_STR:
      return v->tag == KD_VALUE_STRING;
    case KD_TYPE_SCALAR_TYPE:
      return v->tag == KD_VALUE_DTYPE;
    case KD_TYPE_LAYOUT:
      return v->tag == KD_VALUE_LAYOUT;
    case KD_TYPE_MEMORY_FORMAT:
      return v->tag == KD_VALUE_MEMORY_FORMAT;
    case KD_TYPE_DEVICE: {
      if (v->tag == KD_VALUE_DEVICE) return true;
      kd_device d;
      return v->tag == KD_VALUE_STRING && kd_device_parse(kd_value_string_data(v, NULL), &d) == KD_OK;
    }
    case KD_TYPE_LIST: {
      const kd_type *e = kd_type_element(t);
      kd_type_kind ek = kd_type_kind_of(e);
      bool opt_tensor = ek == KD_TYPE_OPTIONAL && kd_type_kind_of(kd_type_element(e)) == KD_TYPE_TENSOR;
      switch (v->tag) {
        case KD_VALUE_INT_LIST: return ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT;
        case KD_VALUE_DOUBLE_LIST: return ek == KD_TYPE_FLOAT;
        case KD_VALUE_BOOL_LIST: return ek == KD_TYPE_BOOL;
        case KD_VALUE_TENSOR_LIST: return ek == KD_TYPE_TENSOR || opt_tensor;
        case KD_VALUE_OPT_TENSOR_LIST: return opt_tensor;
        case KD_VALUE_INT:
          return (ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT) && kd_type_list_size(t) > 0;
        default: break;
      }
      if (!is_seq(v)) return false;
      size_t n = kd_value_list_size(v);
      for (size_t i = 0; i < n; i++) {
        const kd_value *x = kd_value_list_at(v, i);
        bool ok;
        switch (ek) {
          case KD_TYPE_INT:
          case KD_TYPE_SYMINT:
          case KD_TYPE_DEVICE_INDEX: ok = fits_int(x); break;
          case KD_TYPE_FLOAT: ok = x->tag == KD_VALUE_INT || x->tag == KD_VALUE_DOUBLE; break;
          case KD_TYPE_BOOL: ok = x->tag == KD_VALUE_BOOL; break;
          case KD_TYPE_TENSOR: ok = x->tag == KD_VALUE_TENSOR || kdc_is_tensor_literal(x); break;
          default:
            if (!opt_tensor) return false; /* a list type the language does not make */
            ok = x->tag == KD_VALUE_NONE || x->tag == KD_VALUE_TENSOR || kdc_is_tensor_literal(x);
            break;
        }
        if (!ok) {
          *bad_elem = (long)i;
          return false;
        }
      }
      return true;
    }
    default:
      return false; /* Generator, Dimname, ...: only None, where optional */
  }
}

/* ---- Binding arguments to parameters ---------------------------------------- */

enum { SRC_DEFAULT = -1, SRC_NONE = -2, SRC_VARARGS = -3 };

static bool is_int_list_type(const kd_type *t) {
  if (kd_type_kind_of(t) == KD_TYPE_OPTIONAL) t = kd_type_element(t);
  if (kd_type_kind_of(t) != KD_TYPE_LIST) return false;
  kd_type_kind ek = kd_type_kind_of(kd_type_element(t));
  return ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT;
}

static void param_type_name(const kd_type *t, char *buf, size_t cap) {
  type_text(t, buf, cap);
  size_t n = strlen(buf);
  if (n && buf[n - 1] == '?') buf[n - 1] = '\0';
}

static void too_many(const kd_schema *s, size_t npos, kdc_sbuf *why) {
  size_t na = kd_schema_num_arguments(s), max_pos = 0, min_pos = 0;
  for (size_t i = 0; i < na; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (kd_argument_kwarg_only(a)) continue;
    max_pos++;
    if (!kd_argument_default(a)) min_pos++;
  }
  if (min_pos != max_pos)
    kdc_sbuf_printf(why, "takes from %zu to %zu positional arguments but %zu were given", min_pos,
                    max_pos, npos);
  else
    kdc_sbuf_printf(why, "takes %zu positional argument%s but %zu %s given", max_pos,
                    max_pos == 1 ? "" : "s", npos, npos == 1 ? "was" : "were");
}

/* Binds args (npos positional, then keywords) to the schema's parameters:
 * src[i] is the index in args of parameter i's value, or SRC_*. On
 * rejection writes the reason to why and returns false. */
static bool bind(kd_op *op, const kdc_larg *args, size_t nargs, size_t npos, int *src,
                 kdc_sbuf *why) {
  const kd_schema *s = kd_op_schema(op);
  size_t na = kd_schema_num_arguments(s);
  if (na > MAX_ARGS) {
    kdc_sbuf_printf(why, "has %zu arguments, more than the language supports (%d)", na, MAX_ARGS);
    return false;
  }
  bool nat = numbers_as_tensors(op);
  size_t max_pos = 0;
  for (size_t i = 0; i < na; i++)
    if (!kd_argument_kwarg_only(kd_schema_argument(s, i))) max_pos++;
  bool varargs_ok = max_pos == 1 && na > 0 && is_int_list_type(kd_argument_type(kd_schema_argument(s, 0)));
  if (npos > max_pos && !varargs_ok) {
    too_many(s, npos, why);
    return false;
  }
  size_t argpos = 0, used_kw = 0;
  for (size_t i = 0; i < na; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    const kd_type *t = kd_argument_type(a);
    long idx = -1;
    bool is_kw = false;
    if (argpos < npos) {
      if (kd_argument_kwarg_only(a)) {
        too_many(s, npos, why);
        return false;
      }
      idx = (long)argpos;
    } else {
      for (size_t j = npos; j < nargs; j++)
        if (!strcmp(args[j].kw, kd_argument_name(a))) idx = (long)j;
      is_kw = true;
    }
    if (idx < 0) {
      if (kd_argument_default(a)) {
        src[i] = SRC_DEFAULT;
        continue;
      }
      kdc_sbuf_printf(why, "missing required argument '%s'", kd_argument_name(a));
      return false;
    }
    const kd_value *v = args[idx].v, *elem = NULL;
    long bad = -1;
    const char *d = kd_argument_default(a);
    if (v->tag == KD_VALUE_NONE &&
        (kd_type_kind_of(t) == KD_TYPE_OPTIONAL || (d && !strcmp(d, "None")))) {
      src[i] = SRC_NONE;
    } else if (fits(t, v, nat, &bad)) {
      src[i] = (int)idx;
    } else if (varargs_ok && i == 0 && !is_kw && !is_seq(v)) {
      /* Varargs only when the first argument is not itself a list (as
       * PyTorch: zeros(2, 3)); a list that does not fit reports its own
       * element, whose index `bad` is not an index into args. */
      for (size_t j = 0; j < npos && bad < 0; j++)
        if (!fits_int(args[j].v)) bad = (long)j;
      if (bad >= 0) {
        elem = args[bad].v; /* as PyTorch reports it: the positional arguments as the list */
        goto mismatch;
      }
      src[i] = SRC_VARARGS;
      argpos = npos;
      continue;
    } else {
      goto mismatch;
    }
    if (!is_kw) argpos++;
    else used_kw++;
    continue;
  mismatch:;
    char tn[128];
    param_type_name(t, tn, sizeof tn);
    kdc_sbuf_printf(why, "argument '%s'", kd_argument_name(a));
    if (!is_kw) kdc_sbuf_printf(why, " (position %zu)", argpos + 1);
    if (bad >= 0 && !elem) elem = kd_value_list_at(v, (size_t)bad);
    if (bad >= 0)
      kdc_sbuf_printf(why, " must be %s, but found element of type %s at pos %ld", tn,
                      kdc_value_type_name(elem), bad);
    else
      kdc_sbuf_printf(why, " must be %s, not %s", tn, kdc_value_type_name(v));
    return false;
  }
  if (used_kw < nargs - npos) {
    for (size_t j = npos; j < nargs; j++) {
      bool known = false, taken = false;
      for (size_t i = 0; i < na; i++) {
        if (strcmp(args[j].kw, kd_argument_name(kd_schema_argument(s, i)))) continue;
        known = true;
        taken = src[i] != (int)j;
      }
      if (!known) {
        kdc_sbuf_printf(why, "got an unexpected keyword argument '%s'", args[j].kw);
        return false;
      }
      if (taken) {
        kdc_sbuf_printf(why, "got multiple values for argument '%s'", args[j].kw);
        return false;
      }
    }
  }
  return true;
}

/* ---- Converting a value to its parameter's boxed value ---------------------- */

static int item_of(kdc_lerr *err, kdc_lpos pos, const kd_value *v, kd_scalar *s) {
  if (kd_tensor_item(v->u.t, s)) return kdc_lerr_set(err, pos, "%s", kd_last_error());
  return 0;
}

static int to_tensor(kdc_lerr *err, kdc_lpos pos, const kd_value *v, kd_tensor **out) {
  if (v->tag == KD_VALUE_TENSOR) {
    kd_tensor_retain(v->u.t);
    *out = v->u.t;
    return 0;
  }
  if (is_seq(v)) return kdc_tensor_from_literal(err, pos, v, out);
  return kdc_tensor_from_number(err, pos, v, true, out);
}

static int convert_list(kdc_lerr *err, kdc_lpos pos, const kd_type *t, const kd_value *v,
                        kd_value *out) {
  const kd_type *e = kd_type_element(t);
  kd_type_kind ek = kd_type_kind_of(e);
  if (v->tag != KD_VALUE_LIST && v->tag != KD_VALUE_TUPLE && v->tag != KD_VALUE_INT) {
    kd_value_copy(out, v); /* a typed list already */
    return 0;
  }
  size_t n = v->tag == KD_VALUE_INT ? (size_t)kd_type_list_size(t) : kd_value_list_size(v);
  kd_status st = KD_OK;
  if (ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT) {
    int64_t *xs = kd_host_malloc((n ? n : 1) * sizeof *xs);
    if (!xs) return kdc_lerr_oom(err, pos);
    for (size_t i = 0; i < n; i++) {
      const kd_value *x = v->tag == KD_VALUE_INT ? v : kd_value_list_at(v, i);
      kd_scalar s;
      if (x->tag == KD_VALUE_INT) {
        xs[i] = x->u.i;
      } else if (item_of(err, pos, x, &s)) {
        kd_host_free(xs);
        return -1;
      } else {
        xs[i] = kd_scalar_to_int64(&s);
      }
    }
    st = kd_value_int_list(xs, n, out);
    kd_host_free(xs);
  } else if (ek == KD_TYPE_FLOAT) {
    double *xs = kd_host_malloc((n ? n : 1) * sizeof *xs);
    if (!xs) return kdc_lerr_oom(err, pos);
    for (size_t i = 0; i < n; i++) {
      const kd_value *x = kd_value_list_at(v, i);
      xs[i] = x->tag == KD_VALUE_INT ? (double)x->u.i : x->u.d;
    }
    st = kd_value_double_list(xs, n, out);
    kd_host_free(xs);
  } else if (ek == KD_TYPE_BOOL) {
    bool *xs = kd_host_malloc((n ? n : 1) * sizeof *xs);
    if (!xs) return kdc_lerr_oom(err, pos);
    for (size_t i = 0; i < n; i++) xs[i] = kd_value_list_at(v, i)->u.b;
    st = kd_value_bool_list(xs, n, out);
    kd_host_free(xs);
  } else { /* Tensor[] or Tensor?[] */
    kd_tensor **ts = kd_host_calloc(n ? n : 1, sizeof *ts);
    if (!ts) return kdc_lerr_oom(err, pos);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
      const kd_value *x = kd_value_list_at(v, i);
      if (x->tag != KD_VALUE_NONE) rc = to_tensor(err, pos, x, &ts[i]);
    }
    if (!rc)
      st = ek == KD_TYPE_TENSOR ? kd_value_tensor_list(ts, n, out)
                                : kd_value_opt_tensor_list(ts, n, out);
    for (size_t i = 0; i < n; i++) kd_tensor_release(ts[i]);
    kd_host_free(ts);
    if (rc) return -1;
  }
  if (st) return kdc_lerr_set(err, pos, "%s", kd_last_error());
  return 0;
}

/* *out = the boxed value of v for type t (v fits t). */
static int convert(kdc_lerr *err, kdc_lpos pos, const kd_type *t, const kd_value *v,
                   kd_value *out) {
  *out = kd_value_none();
  kd_scalar s;
  switch (kd_type_kind_of(t)) {
    case KD_TYPE_OPTIONAL:
      if (v->tag == KD_VALUE_NONE) return 0;
      return convert(err, pos, kd_type_element(t), v, out);
    case KD_TYPE_TENSOR: {
      kd_tensor *x;
      if (to_tensor(err, pos, v, &x)) return -1;
      *out = kd_value_tensor(x);
      kd_tensor_release(x);
      return 0;
    }
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
    case KD_TYPE_DEVICE_INDEX:
      if (v->tag != KD_VALUE_TENSOR) break;
      if (item_of(err, pos, v, &s)) return -1;
      *out = kd_value_int(kd_scalar_to_int64(&s));
      return 0;
    case KD_TYPE_FLOAT:
      if (v->tag == KD_VALUE_INT) {
        *out = kd_value_double((double)v->u.i);
        return 0;
      }
      if (v->tag != KD_VALUE_TENSOR) break;
      if (item_of(err, pos, v, &s)) return -1;
      *out = kd_value_double(kd_scalar_to_double(&s));
      return 0;
    case KD_TYPE_COMPLEX:
      if (v->tag == KD_VALUE_INT || v->tag == KD_VALUE_DOUBLE) {
        *out = kd_value_complex(v->tag == KD_VALUE_INT ? (double)v->u.i : v->u.d, 0);
        return 0;
      }
      if (v->tag != KD_VALUE_TENSOR) break;
      if (item_of(err, pos, v, &s)) return -1;
      *out = kd_value_complex(s.kind == KD_SCALAR_COMPLEX ? s.v.c.re : kd_scalar_to_double(&s),
                              s.kind == KD_SCALAR_COMPLEX ? s.v.c.im : 0);
      return 0;
    case KD_TYPE_SCALAR:
      if (v->tag != KD_VALUE_TENSOR) break;
      if (item_of(err, pos, v, &s)) return -1;
      *out = kd_value_scalar(s);
      return 0;
    case KD_TYPE_DEVICE:
      if (v->tag == KD_VALUE_STRING) {
        kd_device d;
        if (kd_device_parse(kd_value_string_data(v, NULL), &d))
          return kdc_lerr_set(err, pos, "%s", kd_last_error());
        *out = kd_value_device(d);
        return 0;
      }
      break;
    case KD_TYPE_LIST:
      return convert_list(err, pos, t, v, out);
    default:
      break;
  }
  kd_value_copy(out, v);
  return 0;
}

/* ---- The call ----------------------------------------------------------------- */

static void describe_args(kdc_sbuf *b, const kdc_larg *args, size_t nargs) {
  kdc_sbuf_puts(b, "(");
  for (size_t i = 0; i < nargs; i++) {
    if (i) kdc_sbuf_puts(b, ", ");
    if (args[i].kw) kdc_sbuf_printf(b, "%s=", args[i].kw);
    kdc_sbuf_puts(b, kdc_value_type_name(args[i].v));
  }
  kdc_sbuf_puts(b, ")");
}

static void put_schema(kdc_sbuf *b, kd_op *op) {
  char buf[1024];
  kd_schema_format(kd_op_schema(op), buf, sizeof buf);
  const char *paren = strchr(buf, '(');
  kdc_sbuf_printf(b, "%s%s", kd_op_name(op), paren ? paren : "");
}

static int run_call(kdc_lerr *err, kdc_lpos pos, kd_op *op, const int *src, const kdc_larg *args,
                    size_t npos, kdc_lval *out) {
  const kd_schema *s = kd_op_schema(op);
  size_t na = kd_schema_num_arguments(s);
  size_t given = 0; /* parameters up to the last one not taking its default */
  for (size_t i = 0; i < na; i++)
    if (src[i] != SRC_DEFAULT) given = i + 1;
  kd_stack st;
  kd_stack_init(&st);
  if (kd_stack_reserve(&st, na + 4)) return kdc_lerr_oom(err, pos);
  for (size_t i = 0; i < given; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    kd_value v = kd_value_none();
    int rc = 0;
    if (src[i] == SRC_DEFAULT) {
      if (kd_argument_default_value(a, &v)) rc = kdc_lerr_set(err, pos, "%s", kd_last_error());
    } else if (src[i] == SRC_VARARGS) {
      int64_t xs[MAX_ARGS];
      for (size_t j = 0; j < npos && j < MAX_ARGS; j++) {
        kd_scalar sc;
        if (args[j].v->tag == KD_VALUE_INT) {
          xs[j] = args[j].v->u.i;
        } else if (item_of(err, args[j].pos, args[j].v, &sc)) {
          rc = -1;
          break;
        } else {
          xs[j] = kd_scalar_to_int64(&sc);
        }
      }
      if (!rc && kd_value_int_list(xs, npos < MAX_ARGS ? npos : MAX_ARGS, &v))
        rc = kdc_lerr_oom(err, pos);
    } else if (src[i] != SRC_NONE) {
      rc = convert(err, args[src[i]].pos, kd_argument_type(a), args[src[i]].v, &v);
    }
    if (!rc && kd_stack_push(&st, &v)) rc = kdc_lerr_oom(err, pos);
    kd_value_destroy(&v);
    if (rc) {
      kd_stack_free(&st);
      return -1;
    }
  }
  if (given < na && kd_op_fill_defaults(op, &st, given)) {
    kdc_lerr_set(err, pos, "%s", kd_last_error());
    kd_stack_free(&st);
    return -1;
  }
  if (kd_call_boxed(op, &st)) {
    kdc_lerr_set(err, pos, "%s", kd_last_error());
    kd_stack_free(&st);
    return -1;
  }
  out->named = NULL;
  if (st.size == 1) {
    kd_value_move(&out->v, &st.items[0]);
  } else if (st.size > 1) {
    if (kd_value_tuple(st.items, st.size, &out->v)) {
      kd_stack_free(&st);
      return kdc_lerr_oom(err, pos);
    }
    bool named = kd_schema_num_returns(s) == st.size;
    for (size_t i = 0; named && i < st.size; i++)
      if (!kd_argument_name(kd_schema_return(s, i))[0]) named = false;
    if (named) out->named = op;
  }
  kd_stack_free(&st);
  return 0;
}

static int no_such_overload(kdc_lerr *err, kdc_lpos pos, const char *qual, const char *overload) {
  kd_op **ops = NULL;
  size_t n = 0;
  if (find_overloads(qual, &ops, &n)) return kdc_lerr_oom(err, pos);
  if (n == 0) {
    kd_host_free(ops);
    return kdc_lerr_set(err, pos, "unknown operator '%s'", qual);
  }
  kdc_sbuf names = {0};
  for (size_t i = 0; i < n; i++) {
    const char *ov = kd_schema_overload(kd_op_schema(ops[i]));
    kdc_sbuf_printf(&names, "%s%s", i ? ", " : "", ov[0] ? ov : "default");
  }
  kd_host_free(ops);
  kdc_lerr_set(err, pos, "operator '%s' has no overload '%s' (its overloads: %s)", qual, overload,
               kdc_sbuf_str(&names));
  kdc_sbuf_free(&names);
  return -1;
}

/* True for to(x, "opencl"): a call of aten::to without an overload name whose
 * only positional arguments are the tensor and a string naming a device
 * ("cpu", "meta", a registered backend's name, each with an optional ":N");
 * the string (or a device name written bare: to(x, meta)) becomes the keyword
 * device= (to.dtype_layout: the dtype is kept).
 * A dtype (float32) is not a string and resolves as before. Borrows all. */
static bool to_positional_device(const char *qual, const char *overload, const kdc_larg *args,
                                 size_t npos) {
  if (overload || strcmp(qual, "aten::to") != 0 || npos != 2) return false;
  const kd_value *v = args[1].v;
  if (v->tag == KD_VALUE_DEVICE) return true; /* to(x, meta) */
  if (v->tag != KD_VALUE_STRING) return false;
  kd_device d;
  bool ok = kd_device_parse(kd_value_string_data(v, NULL), &d) == KD_OK;
  if (!ok) kd_clear_error(); /* not a device: resolution reports the string */
  return ok;
}

int kdc_lang_invoke(kdc_lerr *err, kdc_lpos pos, const char *name, const char *overload,
                    const kdc_larg *args, size_t nargs, kdc_lval *out) {
  out->v = kd_value_none();
  out->named = NULL;
  size_t npos = 0;
  while (npos < nargs && !args[npos].kw) npos++;
  kdc_larg moved[MAX_ARGS];
  if (nargs <= MAX_ARGS &&
      to_positional_device(strcmp(name, "to") ? name : "aten::to", overload, args, npos)) {
    memcpy(moved, args, nargs * sizeof *args);
    moved[1].kw = "device";
    args = moved;
    npos = 1;
  }
  for (size_t j = npos; j < nargs; j++)
    if (!args[j].kw)
      return kdc_lerr_set(err, args[j].pos, "positional argument follows keyword argument");
  char *qual = kdc_lang_qualify(name);
  if (!qual) return kdc_lerr_oom(err, pos);
  kd_op **ops = NULL;
  size_t n = 0;
  int rc = 0;
  if (overload) {
    /* max.default names the overload "" unless one is called "default". */
    kd_op *op = NULL;
    kd_status st = kd_op_find(qual, overload, &op);
    if ((st || !kd_op_schema(op)) && !strcmp(overload, "default")) st = kd_op_find(qual, "", &op);
    if (st || !kd_op_schema(op)) {
      rc = no_such_overload(err, pos, qual, overload);
      kd_host_free(qual);
      return rc;
    }
    ops = kd_host_malloc(sizeof *ops);
    if (!ops) {
      kd_host_free(qual);
      return kdc_lerr_oom(err, pos);
    }
    ops[0] = op;
    n = 1;
  } else {
    if (find_overloads(qual, &ops, &n) || sort_overloads(ops, n)) {
      kd_host_free(ops);
      kd_host_free(qual);
      return kdc_lerr_oom(err, pos);
    }
    if (n == 0) {
      kd_host_free(ops);
      rc = kdc_lerr_set(err, pos, "unknown operator '%s'", qual);
      kd_host_free(qual);
      return rc;
    }
  }
  int src[MAX_ARGS];
  kdc_sbuf report = {0};
  kdc_sbuf why = {0};
  size_t chosen = n;
  for (size_t k = 0; k < n && chosen == n; k++) {
    why.len = 0;
    if (why.data) why.data[0] = '\0';
    if (bind(ops[k], args, nargs, npos, src, &why)) {
      chosen = k;
      break;
    }
    if (n == 1) break;
    kdc_sbuf_puts(&report, "\n  ");
    put_schema(&report, ops[k]);
    kdc_sbuf_printf(&report, "\n      %s", kdc_sbuf_str(&why));
  }
  if (chosen < n) {
    rc = run_call(err, pos, ops[chosen], src, args, npos, out);
  } else if (n == 1) {
    rc = kdc_lerr_set(err, pos, "%s(): %s", kd_op_name(ops[0]), kdc_sbuf_str(&why));
  } else {
    kdc_sbuf head = {0};
    kdc_sbuf_printf(&head, "no overload of %s accepts the arguments ", qual);
    describe_args(&head, args, nargs);
    kdc_sbuf_puts(&head, "; tried in this order:");
    rc = kdc_lerr_set(err, pos, "%s%s", kdc_sbuf_str(&head), kdc_sbuf_str(&report));
    kdc_sbuf_free(&head);
  }
  kdc_sbuf_free(&report);
  kdc_sbuf_free(&why);
  kd_host_free(ops);
  kd_host_free(qual);
  return rc;
}
