/*
 * op_info.c: what calls need to know of a schema (argument kinds, which
 * arguments carry dispatch keys, decoded defaults), kernel signatures, and the
 * conversions between boxed values and unboxed arguments that the adapters
 * are made of.
 */
#include <stdio.h>

#include "dispatch/dispatcher_impl.h"

/* ---- Argument kinds --------------------------------------------------------- */

static int optional_kind(const kd_type *e) {
  switch (kd_type_kind_of(e)) {
    case KD_TYPE_TENSOR:
      return KD__ARG_OPT_TENSOR;
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
    case KD_TYPE_DEVICE_INDEX:
      return KD__ARG_OPT_INT;
    case KD_TYPE_FLOAT:
      return KD__ARG_OPT_FLOAT;
    case KD_TYPE_BOOL:
      return KD__ARG_OPT_BOOL;
    case KD_TYPE_SCALAR:
      return KD__ARG_OPT_SCALAR;
    case KD_TYPE_SCALAR_TYPE:
      return KD__ARG_OPT_DTYPE;
    case KD_TYPE_LAYOUT:
      return KD__ARG_OPT_LAYOUT;
    case KD_TYPE_MEMORY_FORMAT:
      return KD__ARG_OPT_MEMORY_FORMAT;
    case KD_TYPE_DEVICE:
      return KD__ARG_OPT_DEVICE;
    case KD_TYPE_STR:
      return KD__ARG_OPT_STR;
    case KD_TYPE_LIST: {
      kd_type_kind k = kd_type_kind_of(kd_type_element(e));
      if (k == KD_TYPE_INT || k == KD_TYPE_SYMINT) return KD__ARG_OPT_INTS;
      if (k == KD_TYPE_FLOAT) return KD__ARG_OPT_FLOATS;
      if (k == KD_TYPE_BOOL) return KD__ARG_OPT_BOOLS;
      return KD__ARG_VALUE;
    }
    default:
      return KD__ARG_VALUE;
  }
}

static int arg_kind(const kd_type *t) {
  switch (kd_type_kind_of(t)) {
    case KD_TYPE_TENSOR:
      return KD__ARG_TENSOR;
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
    case KD_TYPE_DEVICE_INDEX:
      return KD__ARG_INT;
    case KD_TYPE_FLOAT:
      return KD__ARG_FLOAT;
    case KD_TYPE_BOOL:
      return KD__ARG_BOOL;
    case KD_TYPE_SCALAR:
      return KD__ARG_SCALAR;
    case KD_TYPE_SCALAR_TYPE:
      return KD__ARG_DTYPE;
    case KD_TYPE_LAYOUT:
      return KD__ARG_LAYOUT;
    case KD_TYPE_MEMORY_FORMAT:
      return KD__ARG_MEMORY_FORMAT;
    case KD_TYPE_DEVICE:
      return KD__ARG_DEVICE;
    case KD_TYPE_STR:
      return KD__ARG_STR;
    case KD_TYPE_OPTIONAL:
      return optional_kind(kd_type_element(t));
    case KD_TYPE_LIST: {
      const kd_type *e = kd_type_element(t);
      kd_type_kind k = kd_type_kind_of(e);
      if (k == KD_TYPE_INT || k == KD_TYPE_SYMINT) return KD__ARG_INTS;
      if (k == KD_TYPE_FLOAT) return KD__ARG_FLOATS;
      if (k == KD_TYPE_BOOL) return KD__ARG_BOOLS;
      if (k == KD_TYPE_TENSOR) return KD__ARG_TENSORS;
      if (k == KD_TYPE_OPTIONAL && kd_type_kind_of(kd_type_element(e)) == KD_TYPE_TENSOR)
        return KD__ARG_OPT_TENSORS;
      return KD__ARG_VALUE;
    }
    default:
      return KD__ARG_VALUE;
  }
}

static bool carries_keys(int kind) {
  return kind == KD__ARG_TENSOR || kind == KD__ARG_OPT_TENSOR || kind == KD__ARG_TENSORS ||
         kind == KD__ARG_OPT_TENSORS;
}

void kd__op_info_free(kd__op_info *info) {
  if (!info) return;
  for (uint32_t i = 0; i < info->nargs; i++) kd_value_destroy(&info->defaults[i]);
  kd_schema_free(info->schema);
  kd__free(info);
}

kd_status kd__op_info_new(kd_schema *schema, kd__op_info **out) {
  *out = NULL;
  size_t nargs = kd_schema_num_arguments(schema), nrets = kd_schema_num_returns(schema);
  if (nargs > 64 || nrets > 16) {
    char name[256];
    kd_schema_format(schema, name, sizeof name);
    kd_schema_free(schema);
    return kd_set_error(KD_EUNSUPPORTED,
                        "operator '%s' has %zu arguments and %zu returns: at most 64 and 16 are "
                        "supported",
                        name, nargs, nrets);
  }
  /* One block: the info, then the defaults, then the flags. */
  kd__op_info *info = kd__calloc(1, sizeof *info + nargs * (sizeof(kd_value) + sizeof(bool)));
  if (!info) {
    kd_schema_free(schema);
    return kd__oom("operator info");
  }
  info->schema = schema;
  info->defaults = (kd_value *)(info + 1);
  info->has_default = (bool *)(info->defaults + nargs);
  info->nargs = (uint32_t)nargs;
  info->nrets = (uint32_t)nrets;
  for (size_t i = 0; i < nargs; i++) {
    const kd_argument *a = kd_schema_argument(schema, i);
    int kind = arg_kind(kd_argument_type(a));
    info->kinds[i] = (uint8_t)kind;
    if (carries_keys(kind)) info->tensor_idx[info->ntensor++] = (uint8_t)i;
    if (kd_argument_default(a)) {
      kd_status st = kd_argument_default_value(a, &info->defaults[i]);
      if (st) {
        kd__op_info_free(info);
        return st;
      }
      info->has_default[i] = true;
    }
  }
  for (size_t i = 0; i < nrets; i++)
    info->ret_kinds[i] = (uint8_t)arg_kind(kd_argument_type(kd_schema_return(schema, i)));
  info->single_tensor = info->ntensor == 1 && info->kinds[info->tensor_idx[0]] == KD__ARG_TENSOR
                            ? info->tensor_idx[0]
                            : -1;
  info->plain_tensors = true;
  for (uint32_t k = 0; k < info->ntensor; k++) {
    int kind = info->kinds[info->tensor_idx[k]];
    if (kind != KD__ARG_TENSOR && kind != KD__ARG_OPT_TENSOR) info->plain_tensors = false;
  }
  info->key_tensor = -1;
  for (size_t i = 0; i < nargs && info->key_tensor < 0; i++)
    if (info->kinds[i] == KD__ARG_TENSOR || info->kinds[i] == KD__ARG_OPT_TENSOR)
      info->key_tensor = (int32_t)i;
  info->simple = nargs <= 8 && nrets <= 4;
  for (size_t i = 0; i < nargs; i++) {
    int k = info->kinds[i];
    if (k != KD__ARG_TENSOR && k != KD__ARG_INT && k != KD__ARG_FLOAT && k != KD__ARG_BOOL)
      info->simple = false;
  }
  info->box_tensors = info->simple && nargs > 0;
  for (size_t i = 0; i < nargs; i++)
    if (info->kinds[i] != KD__ARG_TENSOR) info->box_tensors = false;
  info->box1 = nargs == 1 && info->kinds[0] == KD__ARG_TENSOR && nrets <= 1 ? (int32_t)nrets : -1;
  *out = info;
  return KD_OK;
}

/* ---- Key sets of calls ----------------------------------------------------------- */

kd_keyset kd__args_keys(const kd__op_info *info, const kd_arg *args) {
  kd_keyset ks = 0;
  for (uint32_t k = 0; k < info->ntensor; k++) {
    uint32_t i = info->tensor_idx[k];
    const kd_arg *a = &args[i];
    switch (info->kinds[i]) {
      case KD__ARG_TENSOR:
      case KD__ARG_OPT_TENSOR:
        if (a->t) ks |= a->t->keys;
        break;
      default: /* lists */
        for (int64_t j = 0; j < a->tensors.size; j++)
          if (a->tensors.data[j]) ks |= a->tensors.data[j]->keys;
        break;
    }
  }
  return ks;
}

kd_keyset kd__stack_keys(const kd__op_info *info, const kd_value *args) {
  kd_keyset ks = 0;
  for (uint32_t k = 0; k < info->ntensor; k++) {
    const kd_value *v = &args[info->tensor_idx[k]];
    if (v->tag == KD_VALUE_TENSOR) {
      ks |= v->u.t->keys;
    } else if (v->tag == KD_VALUE_TENSOR_LIST || v->tag == KD_VALUE_OPT_TENSOR_LIST) {
      kd_tensor *const *items = kd_value_tensor_list_data(v);
      size_t n = kd_value_list_size(v);
      for (size_t j = 0; j < n; j++)
        if (items[j]) ks |= items[j]->keys;
    }
  }
  return ks;
}

/* ---- Boxed value <-> unboxed argument ---------------------------------------------- */

static kd_status mismatch(const kd__op_info *info, size_t i, const char *expected,
                          const kd_value *v) {
  const kd_argument *a = kd_schema_argument(info->schema, i);
  char type[128];
  kd_type_format(kd_argument_type(a), type, sizeof type);
  return kd_set_error(KD_ETYPE,
                      "%s::%s: argument %zu '%s' of type %s expected %s, found a value of type %s",
                      kd_schema_namespace(info->schema), kd_schema_name(info->schema), i,
                      kd_argument_name(a), type, expected, kd_value_tag_name(v->tag));
}

kd_status kd__value_to_arg(const kd__op_info *info, size_t i, const kd_value *v, kd_arg *a,
                           kd_scalar *scratch) {
  int kind = info->kinds[i];
  bool none = v->tag == KD_VALUE_NONE;
  switch (kind) {
    case KD__ARG_OPT_TENSOR:
      if (none) {
        a->t = NULL;
        return KD_OK;
      }
      /* fall through */
    case KD__ARG_TENSOR:
      if (v->tag != KD_VALUE_TENSOR) return mismatch(info, i, "a Tensor", v);
      a->t = v->u.t;
      return KD_OK;
    case KD__ARG_INT:
      if (v->tag != KD_VALUE_INT) return mismatch(info, i, "an int", v);
      a->i = v->u.i;
      return KD_OK;
    case KD__ARG_FLOAT:
      if (v->tag == KD_VALUE_DOUBLE) a->f = v->u.d;
      else if (v->tag == KD_VALUE_INT) a->f = (double)v->u.i;
      else return mismatch(info, i, "a float", v);
      return KD_OK;
    case KD__ARG_BOOL:
      if (v->tag != KD_VALUE_BOOL) return mismatch(info, i, "a bool", v);
      a->b = v->u.b;
      return KD_OK;
    case KD__ARG_OPT_SCALAR:
      if (none) {
        a->s = NULL;
        return KD_OK;
      }
      /* fall through */
    case KD__ARG_SCALAR:
      if (kd_value_get_scalar(v, &scratch[i]) != KD_OK) return mismatch(info, i, "a Scalar", v);
      a->s = &scratch[i];
      return KD_OK;
    case KD__ARG_DTYPE:
      if (v->tag != KD_VALUE_DTYPE) return mismatch(info, i, "a ScalarType", v);
      a->dtype = v->u.dtype;
      return KD_OK;
    case KD__ARG_LAYOUT:
      if (v->tag != KD_VALUE_LAYOUT) return mismatch(info, i, "a Layout", v);
      a->layout = v->u.layout;
      return KD_OK;
    case KD__ARG_MEMORY_FORMAT:
      if (v->tag != KD_VALUE_MEMORY_FORMAT) return mismatch(info, i, "a MemoryFormat", v);
      a->mf = v->u.mf;
      return KD_OK;
    case KD__ARG_DEVICE:
      if (v->tag != KD_VALUE_DEVICE) return mismatch(info, i, "a Device", v);
      a->device = v->u.device;
      return KD_OK;
    case KD__ARG_OPT_INT:
    case KD__ARG_OPT_FLOAT:
    case KD__ARG_OPT_BOOL:
    case KD__ARG_OPT_DTYPE:
    case KD__ARG_OPT_LAYOUT:
    case KD__ARG_OPT_MEMORY_FORMAT:
    case KD__ARG_OPT_DEVICE: {
      a->opt.has = !none;
      if (none) return KD_OK;
      kd_value_tag want = kind == KD__ARG_OPT_INT ? KD_VALUE_INT
                        : kind == KD__ARG_OPT_FLOAT ? KD_VALUE_DOUBLE
                        : kind == KD__ARG_OPT_BOOL ? KD_VALUE_BOOL
                        : kind == KD__ARG_OPT_DTYPE ? KD_VALUE_DTYPE
                        : kind == KD__ARG_OPT_LAYOUT ? KD_VALUE_LAYOUT
                        : kind == KD__ARG_OPT_MEMORY_FORMAT ? KD_VALUE_MEMORY_FORMAT
                        : KD_VALUE_DEVICE;
      if (want == KD_VALUE_DOUBLE && v->tag == KD_VALUE_INT) {
        a->opt.v.f = (double)v->u.i;
        return KD_OK;
      }
      if (v->tag != want) return mismatch(info, i, kd_value_tag_name(want), v);
      switch (want) {
        case KD_VALUE_INT: a->opt.v.i = v->u.i; break;
        case KD_VALUE_DOUBLE: a->opt.v.f = v->u.d; break;
        case KD_VALUE_BOOL: a->opt.v.b = v->u.b; break;
        case KD_VALUE_DTYPE: a->opt.v.dtype = v->u.dtype; break;
        case KD_VALUE_LAYOUT: a->opt.v.layout = v->u.layout; break;
        case KD_VALUE_MEMORY_FORMAT: a->opt.v.mf = v->u.mf; break;
        default: a->opt.v.device = v->u.device; break;
      }
      return KD_OK;
    }
    case KD__ARG_OPT_INTS:
    case KD__ARG_OPT_FLOATS:
    case KD__ARG_OPT_BOOLS:
      if (none) {
        a->ints.data = NULL;
        a->ints.size = -1;
        return KD_OK;
      }
      kind--; /* the non-optional kind precedes the optional one */
      /* fall through */
    case KD__ARG_INTS:
    case KD__ARG_FLOATS:
    case KD__ARG_BOOLS: {
      kd_value_tag want = kind == KD__ARG_INTS ? KD_VALUE_INT_LIST
                        : kind == KD__ARG_FLOATS ? KD_VALUE_DOUBLE_LIST : KD_VALUE_BOOL_LIST;
      if (v->tag != want) return mismatch(info, i, kd_value_tag_name(want), v);
      if (kind == KD__ARG_INTS) {
        a->ints.data = kd_value_int_list_data(v);
        a->ints.size = (int64_t)kd_value_list_size(v);
      } else if (kind == KD__ARG_FLOATS) {
        a->floats.data = kd_value_double_list_data(v);
        a->floats.size = (int64_t)kd_value_list_size(v);
      } else {
        a->bools.data = kd_value_bool_list_data(v);
        a->bools.size = (int64_t)kd_value_list_size(v);
      }
      return KD_OK;
    }
    case KD__ARG_TENSORS:
    case KD__ARG_OPT_TENSORS:
      if (v->tag != KD_VALUE_TENSOR_LIST && v->tag != KD_VALUE_OPT_TENSOR_LIST)
        return mismatch(info, i, kind == KD__ARG_TENSORS ? "Tensor[]" : "Tensor?[]", v);
      a->tensors.data = kd_value_tensor_list_data(v);
      a->tensors.size = (int64_t)kd_value_list_size(v);
      return KD_OK;
    case KD__ARG_OPT_STR:
      if (none) {
        a->str.data = NULL;
        a->str.size = 0;
        return KD_OK;
      }
      /* fall through */
    case KD__ARG_STR: {
      size_t len;
      const char *s = kd_value_string_data(v, &len);
      if (!s) return mismatch(info, i, "a str", v);
      a->str.data = s;
      a->str.size = (int64_t)len;
      return KD_OK;
    }
    default:
      a->value = none ? NULL : v;
      return KD_OK;
  }
}

kd_status kd__arg_to_value(uint8_t kind, const kd_arg *a, kd_value *v) {
  *v = kd_value_none();
  switch (kind) {
    case KD__ARG_TENSOR:
    case KD__ARG_OPT_TENSOR:
      *v = kd_value_tensor(a->t);
      return KD_OK;
    case KD__ARG_INT:
      *v = kd_value_int(a->i);
      return KD_OK;
    case KD__ARG_FLOAT:
      *v = kd_value_double(a->f);
      return KD_OK;
    case KD__ARG_BOOL:
      *v = kd_value_bool(a->b);
      return KD_OK;
    case KD__ARG_SCALAR:
    case KD__ARG_OPT_SCALAR:
      if (a->s) *v = kd_value_scalar(*a->s);
      return KD_OK;
    case KD__ARG_DTYPE:
      *v = kd_value_dtype(a->dtype);
      return KD_OK;
    case KD__ARG_LAYOUT:
      *v = kd_value_layout(a->layout);
      return KD_OK;
    case KD__ARG_MEMORY_FORMAT:
      *v = kd_value_memory_format(a->mf);
      return KD_OK;
    case KD__ARG_DEVICE:
      *v = kd_value_device(a->device);
      return KD_OK;
    case KD__ARG_OPT_INT:
      if (a->opt.has) *v = kd_value_int(a->opt.v.i);
      return KD_OK;
    case KD__ARG_OPT_FLOAT:
      if (a->opt.has) *v = kd_value_double(a->opt.v.f);
      return KD_OK;
    case KD__ARG_OPT_BOOL:
      if (a->opt.has) *v = kd_value_bool(a->opt.v.b);
      return KD_OK;
    case KD__ARG_OPT_DTYPE:
      if (a->opt.has) *v = kd_value_dtype(a->opt.v.dtype);
      return KD_OK;
    case KD__ARG_OPT_LAYOUT:
      if (a->opt.has) *v = kd_value_layout(a->opt.v.layout);
      return KD_OK;
    case KD__ARG_OPT_MEMORY_FORMAT:
      if (a->opt.has) *v = kd_value_memory_format(a->opt.v.mf);
      return KD_OK;
    case KD__ARG_OPT_DEVICE:
      if (a->opt.has) *v = kd_value_device(a->opt.v.device);
      return KD_OK;
    case KD__ARG_OPT_INTS:
      if (a->ints.size < 0) return KD_OK;
      /* fall through */
    case KD__ARG_INTS:
      return kd_value_int_list(a->ints.data, (size_t)a->ints.size, v);
    case KD__ARG_OPT_FLOATS:
      if (a->floats.size < 0) return KD_OK;
      /* fall through */
    case KD__ARG_FLOATS:
      return kd_value_double_list(a->floats.data, (size_t)a->floats.size, v);
    case KD__ARG_OPT_BOOLS:
      if (a->bools.size < 0) return KD_OK;
      /* fall through */
    case KD__ARG_BOOLS:
      return kd_value_bool_list(a->bools.data, (size_t)a->bools.size, v);
    case KD__ARG_TENSORS:
      return kd_value_tensor_list(a->tensors.data, (size_t)a->tensors.size, v);
    case KD__ARG_OPT_TENSORS:
      return kd_value_opt_tensor_list(a->tensors.data, (size_t)a->tensors.size, v);
    case KD__ARG_OPT_STR:
      if (!a->str.data) return KD_OK;
      /* fall through */
    case KD__ARG_STR:
      return kd_value_string(a->str.data, (size_t)a->str.size, v);
    default:
      if (a->value) kd_value_copy(v, a->value);
      return KD_OK;
  }
}

/* ---- Signatures ----------------------------------------------------------------------- */

kd_status kd__signature_parse(const char *sig, kd_schema **out) {
  *out = NULL;
  size_t n = strlen(sig);
  const char *open = strchr(sig, '(');
  if (!open) return kd_set_error(KD_ESYNTAX, "kernel signature '%s': expected '(' types ')' -> returns", sig);
  /* Name every unnamed argument _0, _1, ... so the schema parser accepts it. */
  size_t cap = n * 2 + 64;
  char *text = kd__malloc(cap);
  if (!text) return kd__oom("signature");
  kd__fmt f = kd__fmt_init(text, cap);
  kd__fmt_puts(&f, "_(");
  const char *p = open + 1;
  int depth = 0, index = 0;
  const char *piece = p;
  for (;; p++) {
    char c = *p;
    if (c == '\0') {
      kd__free(text);
      return kd_set_error(KD_ESYNTAX, "kernel signature '%s': unclosed '('", sig);
    }
    if (c == '(' || c == '[') depth++;
    if ((c == ')' || c == ']') && depth > 0) {
      depth--;
      continue;
    }
    if ((c == ',' || c == ')') && depth == 0) {
      const char *s = piece, *e = p;
      while (s < e && *s == ' ') s++;
      while (e > s && e[-1] == ' ') e--;
      if (e > s) {
        if (index > 0) kd__fmt_puts(&f, ", ");
        kd__fmt_putn(&f, s, (size_t)(e - s));
        /* Named already when the piece ends in an identifier after a space at
         * depth 0 (e.g. "Tensor self"). */
        const char *sp = NULL;
        int d = 0;
        for (const char *q = s; q < e; q++) {
          if (*q == '(' || *q == '[') d++;
          else if (*q == ')' || *q == ']') d--;
          else if (*q == ' ' && d == 0) sp = q;
        }
        bool named = sp && (e[-1] == '_' || (e[-1] >= 'a' && e[-1] <= 'z') ||
                            (e[-1] >= 'A' && e[-1] <= 'Z') || (e[-1] >= '0' && e[-1] <= '9')) &&
                     !(e - s == 1 && *s == '*');
        if (!(e - s == 1 && *s == '*') && !named) kd__fmt_printf(&f, " _%d", index);
        index++;
      }
      piece = p + 1;
      if (c == ')') break;
    }
  }
  kd__fmt_puts(&f, p);
  kd_status st = kd_schema_parse(text, strlen(text), out);
  if (st) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    kd_set_error(st, "kernel signature '%s': %s", sig, msg);
  }
  kd__free(text);
  return st;
}

/* The type as text with alias annotations removed and SymInt spelled int:
 * what decides the C form of an argument. */
static void normalized_type(const kd_type *t, char *out, size_t cap) {
  char raw[256];
  kd_type_format(t, raw, sizeof raw);
  size_t o = 0;
  for (size_t i = 0; raw[i] && o + 1 < cap; i++) {
    if (raw[i] == '(' && i >= 6 && !strncmp(raw + i - 6, "Tensor", 6)) {
      int d = 0;
      for (; raw[i]; i++) {
        if (raw[i] == '(') d++;
        if (raw[i] == ')' && --d == 0) break;
      }
      if (!raw[i]) break;
      continue;
    }
    if (!strncmp(raw + i, "SymInt", 6)) {
      if (o + 3 < cap) memcpy(out + o, "int", 3), o += 3;
      i += 5;
      continue;
    }
    out[o++] = raw[i];
  }
  out[o] = '\0';
}

/* Whether two types have the same C form: alias annotations and list sizes
 * do not matter, and SymInt is int. */
static bool same_c_type(const kd_type *a, const kd_type *b) {
  kd_type_kind ka = kd_type_kind_of(a), kb = kd_type_kind_of(b);
  if (ka == KD_TYPE_SYMINT) ka = KD_TYPE_INT;
  if (kb == KD_TYPE_SYMINT) kb = KD_TYPE_INT;
  if (ka != kb) return false;
  switch (ka) {
    case KD_TYPE_VAR:
    case KD_TYPE_CLASS:
      return strcmp(kd_type_name(a), kd_type_name(b)) == 0;
    case KD_TYPE_DICT:
      if (!same_c_type(kd_type_key(a), kd_type_key(b))) return false;
      /* fall through */
    case KD_TYPE_OPTIONAL:
    case KD_TYPE_LIST:
    case KD_TYPE_FUTURE:
    case KD_TYPE_RREF:
      return same_c_type(kd_type_element(a), kd_type_element(b));
    case KD_TYPE_TUPLE:
    case KD_TYPE_UNION: {
      size_t n = kd_type_tuple_size(a);
      if (n != kd_type_tuple_size(b)) return false;
      for (size_t i = 0; i < n; i++)
        if (!same_c_type(kd_type_tuple_at(a, i), kd_type_tuple_at(b, i))) return false;
      return true;
    }
    default:
      return true;
  }
}

kd_status kd__signature_check(const char *opname, const kd_schema *schema, const kd_schema *sig,
                              const char *sig_text, const char *who) {
  size_t na = kd_schema_num_arguments(schema), nb = kd_schema_num_arguments(sig);
  size_t ra = kd_schema_num_returns(schema), rb = kd_schema_num_returns(sig);
  size_t n = na < nb ? na : nb, nr = ra < rb ? ra : rb;
  char ta[256], tb[256], list[2048];
  kd__fmt f = kd__fmt_init(list, sizeof list);
  size_t found = 0;
  /* Every difference, arguments then returns, "; " between them. */
  for (size_t i = 0; i < n; i++) {
    const kd_argument *a = kd_schema_argument(schema, i);
    const kd_type *xa = kd_argument_type(a), *xb = kd_argument_type(kd_schema_argument(sig, i));
    if (same_c_type(xa, xb)) continue;
    normalized_type(xa, ta, sizeof ta);
    normalized_type(xb, tb, sizeof tb);
    kd__fmt_printf(&f, "%sargument %zu '%s' is %s in the schema but %s in the kernel",
                   found++ ? "; " : "", i, kd_argument_name(a), ta, tb);
  }
  if (na != nb)
    kd__fmt_printf(&f, "%sthe schema has %zu arguments, the kernel %zu", found++ ? "; " : "", na,
                   nb);
  if (ra != rb)
    kd__fmt_printf(&f, "%sthe schema has %zu returns, the kernel %zu", found++ ? "; " : "", ra,
                   rb);
  for (size_t i = 0; i < nr; i++) {
    const kd_type *xa = kd_argument_type(kd_schema_return(schema, i));
    const kd_type *xb = kd_argument_type(kd_schema_return(sig, i));
    if (same_c_type(xa, xb)) continue;
    normalized_type(xa, ta, sizeof ta);
    normalized_type(xb, tb, sizeof tb);
    kd__fmt_printf(&f, "%sreturn %zu is %s in the schema but %s in the kernel",
                   found++ ? "; " : "", i, ta, tb);
  }
  if (!found) return KD_OK;
  if (who)
    return kd_set_error(KD_ETYPE,
                        "%s has signature %s, which does not match the schema of '%s' (%zu "
                        "difference%s): %s",
                        who, sig_text, opname, found, found == 1 ? "" : "s", list);
  return kd_set_error(KD_ETYPE,
                      "kernel for '%s' has signature %s, which does not match the schema (%zu "
                      "difference%s): %s",
                      opname, sig_text, found, found == 1 ? "" : "s", list);
}

/* ---- The signature cache ------------------------------------------------------------ */

typedef struct sig_entry {
  char *text;
  kd_schema *schema;
  struct sig_entry *next;
} sig_entry;

static sig_entry *sig_buckets[256];
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

kd_status kd__signature_get(const char *sig, const kd_schema **out, const char **text) {
  uint32_t h = 2166136261u;
  for (const char *p = sig; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  sig_entry **bucket = &sig_buckets[h & 255];
  pthread_mutex_lock(&sig_lock);
  for (sig_entry *e = *bucket; e; e = e->next)
    if (!strcmp(e->text, sig)) {
      *out = e->schema;
      *text = e->text;
      pthread_mutex_unlock(&sig_lock);
      return KD_OK;
    }
  pthread_mutex_unlock(&sig_lock);
  kd_schema *schema;
  kd_status st = kd__signature_parse(sig, &schema);
  if (st) return st;
  size_t n = strlen(sig) + 1;
  sig_entry *e = kd__malloc(sizeof *e);
  char *copy = kd__malloc(n);
  if (!e || !copy) {
    kd__free(e);
    kd__free(copy);
    kd_schema_free(schema);
    return kd__oom("signature");
  }
  memcpy(copy, sig, n);
  e->text = copy;
  e->schema = schema;
  pthread_mutex_lock(&sig_lock);
  /* Another thread may have added it meanwhile: keep the first. */
  for (sig_entry *o = *bucket; o; o = o->next)
    if (!strcmp(o->text, sig)) {
      pthread_mutex_unlock(&sig_lock);
      kd_schema_free(schema);
      kd__free(copy);
      kd__free(e);
      *out = o->schema;
      *text = o->text;
      return KD_OK;
    }
  e->next = *bucket;
  *bucket = e;
  pthread_mutex_unlock(&sig_lock);
  *out = e->schema;
  *text = e->text;
  return KD_OK;
}
