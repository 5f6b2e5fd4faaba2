/*
 * classify.c: torchgen's view of a schema (torchgen/model.py of PyTorch
 * 1.13): SchemaKind (FunctionSchema.kind()) and the grouping signature
 * (FunctionSchema.signature()).
 *
 * The facts followed:
 * - BaseOperatorName: a name matching ^__([^_]+)__$ is a dunder method; it is
 *   in-place when the middle is 'i' + one of the augmented-assignment names
 *   (__iadd__, __iand__, ...), and its base drops that 'i'. Any other name is
 *   in-place when it ends in '_', and its base drops that '_'.
 * - The argument that torchgen calls `self` is the first positional argument
 *   named "self"; post_self_positional are the positional arguments after it
 *   (all positional arguments when there is none).
 * - `out` arguments are the keyword-only arguments whose annotation writes.
 * - kind(): inplace if the name is in-place; else scratch if an out argument
 *   is named _scratch_*; else out if there are out arguments; else mutable
 *   if a post-self positional argument is written; else functional.
 * - signature(): the base name without the in-place mark (dunders stay
 *   dunders), no namespace or overload; the arguments without annotations and
 *   without out arguments (defaults kept); the returns without names or
 *   annotations, followed by one return per written argument (self, then the
 *   out arguments, then the post-self positional ones) whose annotation no
 *   return carries. For "bernoulli.p", "float p" becomes "float p=0.5" in the
 *   argument text (torchgen's Note [bernoulli.p schema]).
 */
#include "schema/schema_impl.h"

static const char *const augmented_names[] = {"add", "sub", "mul", "div", "mod", "pow",
                                              "lshift", "rshift", "and", "xor", "or"};

typedef struct base_name {
  const char *base;
  size_t len;
  bool inplace;
  bool dunder;
} base_name;

static base_name parse_base_name(const char *op) {
  base_name r;
  size_t n = strlen(op);
  r.dunder = false;
  if (n >= 5 && op[0] == '_' && op[1] == '_' && op[n - 1] == '_' && op[n - 2] == '_' &&
      memchr(op + 2, '_', n - 4) == NULL) {
    r.dunder = true;
    r.base = op + 2;
    r.len = n - 4;
    r.inplace = false;
    if (r.base[0] == 'i') {
      for (size_t i = 0; i < KD__ARRAY_SIZE(augmented_names); i++) {
        size_t an = strlen(augmented_names[i]);
        if (an == r.len - 1 && memcmp(r.base + 1, augmented_names[i], an) == 0) {
          r.inplace = true;
          r.base++;
          r.len--;
          break;
        }
      }
    }
    return r;
  }
  r.base = op;
  r.inplace = n > 0 && op[n - 1] == '_';
  r.len = n - (r.inplace ? 1 : 0);
  return r;
}

static bool writes(const kd_argument *a) {
  const kd_alias_info *al = kd__argument_annotation(a);
  return al && al->is_write;
}

static bool is_out_arg(const kd_argument *a) { return a->kwarg_only && writes(a); }

/* Index of torchgen's self argument, or -1. */
static long self_index(const kd_schema *s) {
  for (size_t i = 0; i < s->nargs; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (a->kwarg_only) break;
    if (a->name && strcmp(kd__rel_get(&a->name), "self") == 0) return (long)i;
  }
  return -1;
}

kd_schema_kind kd_schema_kind_of(const kd_schema *s) {
  if (!s) return KD_SCHEMA_FUNCTIONAL;
  if (parse_base_name(kd__rel_get(&s->name)).inplace) return KD_SCHEMA_INPLACE;
  bool out = false, scratch = false, mutable_ = false;
  long self_ix = self_index(s);
  for (size_t i = 0; i < s->nargs; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (is_out_arg(a)) {
      out = true;
      if (a->name && strncmp(kd__rel_get(&a->name), "_scratch_", 9) == 0) scratch = true;
    } else if (!a->kwarg_only && (long)i > self_ix && writes(a)) {
      mutable_ = true;
    }
  }
  if (scratch) return KD_SCHEMA_SCRATCH;
  if (out) return KD_SCHEMA_OUT;
  if (mutable_) return KD_SCHEMA_MUTABLE;
  return KD_SCHEMA_FUNCTIONAL;
}

const char *kd_schema_kind_name(kd_schema_kind kind) {
  switch (kind) {
    case KD_SCHEMA_FUNCTIONAL: return "functional";
    case KD_SCHEMA_INPLACE: return "inplace";
    case KD_SCHEMA_OUT: return "out";
    case KD_SCHEMA_MUTABLE: return "mutable";
    case KD_SCHEMA_SCRATCH: return "scratch";
  }
  return "invalid";
}

static bool set_equal(const kd_alias_info *a, const kd_alias_info *b, bool after) {
  uint32_t na = after ? a->nafter : a->nbefore, nb = after ? b->nafter : b->nbefore;
  if (na != nb) return false;
  const kd__rel *xa = kd__rel_get(after ? &a->after : &a->before);
  const kd__rel *xb = kd__rel_get(after ? &b->after : &b->before);
  for (uint32_t i = 0; i < na; i++) {
    if (strcmp(kd__rel_at(xa, i), kd__rel_at(xb, i)) != 0) return false;
  }
  return true;
}

bool kd__alias_equal(const kd_alias_info *a, const kd_alias_info *b) {
  if (!a || !b) return a == b;
  if (a->is_write != b->is_write || a->has_arrow != b->has_arrow) return false;
  if (!set_equal(a, b, false)) return false;
  return !a->has_arrow || set_equal(a, b, true);
}

static void print_signature_args(kd__out *o, const kd_schema *s) {
  bool first = true, seen_kwarg = false;
  for (size_t i = 0; i < s->nargs; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (is_out_arg(a)) continue;
    if (!first) kd__out_putn(o, ", ", 2);
    first = false;
    if (a->kwarg_only && !seen_kwarg) {
      kd__out_putn(o, "*, ", 3);
      seen_kwarg = true;
    }
    kd__argument_print(o, a, 0, true, true);
  }
  if (s->vararg) {
    if (!first) kd__out_putn(o, ", ", 2);
    kd__out_putn(o, "...", 3);
  }
}

/* Argument text with every "float p" replaced by "float p=0.5". */
static void print_bernoulli_p_args(kd__out *o, const kd_schema *s) {
  kd__out tmp = {NULL, 0, 0};
  print_signature_args(&tmp, s);
  size_t n = tmp.len;
  tmp.buf = kd__malloc(n + 1);
  tmp.cap = n + 1;
  tmp.len = 0;
  if (!tmp.buf) {
    print_signature_args(o, s);
    return;
  }
  print_signature_args(&tmp, s);
  static const char needle[] = "float p";
  size_t k = sizeof needle - 1;
  for (size_t i = 0; i < n;) {
    if (i + k <= n && memcmp(tmp.buf + i, needle, k) == 0) {
      kd__out_putn(o, "float p=0.5", 11);
      i += k;
    } else {
      kd__out_putc(o, tmp.buf[i++]);
    }
  }
  kd__free(tmp.buf);
}

/* Whether written argument `a` becomes an extra return of the signature. */
static bool extra_return(const kd_schema *s, const kd_argument *a) {
  const kd_alias_info *an = kd__argument_annotation(a);
  if (!an || !an->is_write) return false;
  for (size_t r = 0; r < s->nrets; r++) {
    if (kd__alias_equal(an, kd__argument_annotation(kd_schema_return(s, r)))) return false;
  }
  return true;
}

typedef struct ret_list {
  const kd_argument *items[64];
  size_t n;
  size_t total;
} ret_list;

static void add_ret(ret_list *l, const kd_argument *a) {
  if (l->n < KD__ARRAY_SIZE(l->items)) l->items[l->n++] = a;
  l->total++;
}

size_t kd_schema_signature(const kd_schema *s, char *buf, size_t cap) {
  kd__out o = {buf, cap, 0};
  if (!s) return kd__out_finish(&o);
  const char *name = kd__rel_get(&s->name);
  base_name bn = parse_base_name(name);
  if (bn.dunder) kd__out_putn(&o, "__", 2);
  kd__out_putn(&o, bn.base, bn.len);
  if (bn.dunder) kd__out_putn(&o, "__", 2);
  kd__out_putc(&o, '(');
  const char *overload = kd__rel_get(&s->overload);
  if (strcmp(name, "bernoulli") == 0 && overload && strcmp(overload, "p") == 0)
    print_bernoulli_p_args(&o, s);
  else
    print_signature_args(&o, s);
  kd__out_putn(&o, ") -> ", 5);

  /* The extra returns: self, then out arguments, then post-self positional. */
  ret_list extra;
  extra.n = extra.total = 0;
  long self_ix = self_index(s);
  if (self_ix >= 0) {
    const kd_argument *a = kd_schema_argument(s, (size_t)self_ix);
    if (extra_return(s, a)) add_ret(&extra, a);
  }
  for (size_t i = 0; i < s->nargs; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (is_out_arg(a) && extra_return(s, a)) add_ret(&extra, a);
  }
  for (size_t i = (size_t)(self_ix + 1); i < s->nargs; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (!a->kwarg_only && extra_return(s, a)) add_ret(&extra, a);
  }
  if (extra.total > extra.n) {
    /* More than 64 extra returns: count them again while printing. */
    extra.n = 0;
  }

  size_t total = s->nrets + extra.total;
  bool paren = !(total == 1 && !s->varret);
  if (!paren) {
    const kd_argument *only = s->nrets ? kd_schema_return(s, 0) : extra.items[0];
    const kd_type *t = kd_argument_type(only);
    while (t->kind == KD_TYPE_OPTIONAL || t->kind == KD_TYPE_LIST) t = kd_type_element(t);
    if (t->kind == KD_TYPE_TUPLE) paren = true;
  }
  if (paren) kd__out_putc(&o, '(');
  size_t printed = 0;
  for (size_t r = 0; r < s->nrets; r++) {
    if (printed++) kd__out_putn(&o, ", ", 2);
    kd__argument_print(&o, kd_schema_return(s, r), 0, false, false);
  }
  if (extra.n == extra.total) {
    for (size_t r = 0; r < extra.n; r++) {
      if (printed++) kd__out_putn(&o, ", ", 2);
      kd__argument_print(&o, extra.items[r], 0, false, false);
    }
  } else {
    /* Same order as above, without the array. */
    for (int pass = 0; pass < 3; pass++) {
      for (size_t i = 0; i < s->nargs; i++) {
        const kd_argument *a = kd_schema_argument(s, i);
        bool take = pass == 0   ? (long)i == self_ix
                    : pass == 1 ? is_out_arg(a)
                                : (!a->kwarg_only && (long)i > self_ix);
        if (!take || !extra_return(s, a)) continue;
        if (printed++) kd__out_putn(&o, ", ", 2);
        kd__argument_print(&o, a, 0, false, false);
      }
    }
  }
  if (s->varret) {
    if (printed) kd__out_putn(&o, ", ", 2);
    kd__out_putn(&o, "...", 3);
  }
  if (paren) kd__out_putc(&o, ')');
  return kd__out_finish(&o);
}
