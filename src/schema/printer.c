/*
 * printer.c: the canonical form of schemas and types, as the JIT prints them
 * (FunctionSchema's operator<<): ", " between arguments, "*, " before the
 * first keyword-only argument, defaults as written after "=", " -> ", and
 * parentheses around the returns unless there is exactly one (that does not
 * itself start with "(").
 */
#include "schema/schema_impl.h"

static void put_i64(kd__out *o, int64_t v) {
  char tmp[24];
  size_t n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[sizeof tmp - 1 - n++] = '-';
  kd__out_putn(o, tmp + sizeof tmp - n, n);
}

static void put_set(kd__out *o, const kd__rel *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) kd__out_putc(o, '|');
    kd__out_puts(o, kd__rel_at(names, i));
  }
}

void kd__alias_print(kd__out *o, const kd_alias_info *a) {
  kd__out_putc(o, '(');
  put_set(o, kd__rel_get(&a->before), a->nbefore);
  if (a->is_write) kd__out_putc(o, '!');
  if (a->has_arrow) {
    kd__out_putn(o, " -> ", 4);
    put_set(o, kd__rel_get(&a->after), a->nafter);
  }
  kd__out_putc(o, ')');
}

static void put_members(kd__out *o, const kd_type *t, unsigned flags) {
  const kd__rel *items = kd__rel_get(&t->a);
  for (int64_t i = 0; i < t->n; i++) {
    if (i) kd__out_putn(o, ", ", 2);
    kd__type_print(o, kd__rel_at(items, (size_t)i), flags);
  }
}

void kd__type_print(kd__out *o, const kd_type *t, unsigned flags) {
  kd_type_kind k = (kd_type_kind)t->kind;
  if (k < KD_TYPE_VAR) {
    kd__out_put16(o, kd__type_base_names[k], kd__type_base_lens[k]);
  } else {
    switch (k) {
      case KD_TYPE_VAR:
      case KD_TYPE_CLASS:
        kd__out_put16(o, kd__rel_get(&t->a), (size_t)t->b);
        break;
      case KD_TYPE_OPTIONAL:
        kd__type_print(o, kd__rel_get(&t->a), flags);
        kd__out_putc(o, '?');
        break;
      case KD_TYPE_LIST:
        kd__type_print(o, kd__rel_get(&t->a), flags);
        kd__out_putc(o, '[');
        if (t->n >= 0) put_i64(o, t->n);
        kd__out_putc(o, ']');
        break;
      case KD_TYPE_DICT:
        kd__out_putn(o, "Dict(", 5);
        kd__type_print(o, kd__rel_get(&t->b), flags);
        kd__out_putn(o, ", ", 2);
        kd__type_print(o, kd__rel_get(&t->a), flags);
        kd__out_putc(o, ')');
        break;
      case KD_TYPE_FUTURE:
      case KD_TYPE_RREF:
        if (k == KD_TYPE_FUTURE) kd__out_putn(o, "Future(", 7);
        else kd__out_putn(o, "RRef(", 5);
        kd__type_print(o, kd__rel_get(&t->a), flags);
        kd__out_putc(o, ')');
        break;
      case KD_TYPE_UNION:
        kd__out_putn(o, "Union(", 6);
        put_members(o, t, flags);
        kd__out_putc(o, ')');
        break;
      case KD_TYPE_TUPLE:
        kd__out_putc(o, '(');
        put_members(o, t, flags);
        kd__out_putc(o, ')');
        break;
      default:
        break;
    }
  }
  if ((flags & KD__PRINT_ALIAS) && t->alias) kd__alias_print(o, kd__rel_get(&t->alias));
}

void kd__argument_print(kd__out *o, const kd_argument *arg, unsigned flags, bool with_name,
                        bool with_default) {
  kd__type_print(o, kd__rel_get(&arg->type), flags);
  if (with_name && arg->name) {
    kd__out_putc(o, ' ');
    kd__out_put16(o, kd__rel_get(&arg->name), arg->name_len);
  }
  if (with_default && arg->def) {
    kd__out_putc(o, '=');
    kd__out_put16(o, kd__rel_get(&arg->def), arg->def_len);
  }
}

size_t kd_type_format(const kd_type *type, char *buf, size_t cap) {
  kd__out o = {buf, cap, 0};
  if (type) kd__type_print(&o, type, KD__PRINT_ALIAS);
  return kd__out_finish(&o);
}

/* True when the printed type starts with '(' (a tuple, possibly under
 * `?` and `[]`). */
static bool starts_with_paren(const kd_type *t) {
  while (t->kind == KD_TYPE_OPTIONAL || t->kind == KD_TYPE_LIST) t = kd__rel_get(&t->a);
  return t->kind == KD_TYPE_TUPLE;
}

size_t kd_schema_format(const kd_schema *s, char *buf, size_t cap) {
  kd__out o = {buf, cap, 0};
  if (!s) return kd__out_finish(&o);
  if (s->ns) {
    kd__out_put16(&o, kd__rel_get(&s->ns), s->ns_len);
    kd__out_putn(&o, "::", 2);
  }
  kd__out_put16(&o, kd__rel_get(&s->name), s->name_len);
  if (s->overload) {
    kd__out_putc(&o, '.');
    kd__out_put16(&o, kd__rel_get(&s->overload), s->overload_len);
  }
  kd__out_putc(&o, '(');
  const kd__rel *args = kd__rel_get(&s->args);
  bool seen_kwarg = false;
  for (uint32_t i = 0; i < s->nargs; i++) {
    const kd_argument *a = kd__rel_at(args, i);
    if (i) kd__out_putn(&o, ", ", 2);
    if (a->kwarg_only && !seen_kwarg) {
      kd__out_putn(&o, "*, ", 3);
      seen_kwarg = true;
    }
    kd__argument_print(&o, a, KD__PRINT_ALIAS, true, true);
  }
  if (s->vararg) {
    if (s->nargs) kd__out_putn(&o, ", ", 2);
    kd__out_putn(&o, "...", 3);
  }
  kd__out_putn(&o, ") -> ", 5);
  const kd__rel *rets = kd__rel_get(&s->rets);
  bool paren = !((s->nrets == 1 && !s->varret) || (s->nrets == 0 && s->varret));
  if (s->nrets == 1 && !s->varret) {
    const kd_argument *r = kd__rel_at(rets, 0);
    if (starts_with_paren(kd__rel_get(&r->type))) paren = true;
  }
  if (paren) kd__out_putc(&o, '(');
  for (uint32_t i = 0; i < s->nrets; i++) {
    if (i) kd__out_putn(&o, ", ", 2);
    kd__argument_print(&o, kd__rel_at(rets, i), KD__PRINT_ALIAS, true, false);
  }
  if (s->varret) {
    if (s->nrets) kd__out_putn(&o, ", ", 2);
    kd__out_putn(&o, "...", 3);
  }
  if (paren) kd__out_putc(&o, ')');
  return kd__out_finish(&o);
}
