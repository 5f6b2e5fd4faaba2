/*
 * default.c: kd_argument_default_value, the decoding of a default's text into
 * a boxed value of the argument's type.
 *
 * The default text was checked by the parser to be one of: '-'? NUMBER,
 * '-'? IDENT, a string literal, or a bracketed list of those. Here it is read
 * again with the same lexer and interpreted by type:
 *   T? / NoneType / Any / t: None          bool: True, False
 *   int, SymInt: integers; Mean=1, Sum=2, None=0 (at::Reduction)
 *   float: numbers, inf, -inf, nan         complex: numbers, 2j
 *   Scalar, number: int -> int scalar; float text -> double scalar; j -> complex
 *   str: quoted with escapes               Device: "cpu", 'cuda:1' or cpu
 *   ScalarType, Layout, MemoryFormat: names (long, strided, contiguous_format)
 *   lists: [a, b] of their element type; T[N]=x is N copies of x.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "schema/lexer.h"
#include "schema/schema_impl.h"

typedef struct decoder {
  kd__lexer lx;
  kd__token cur;
  const char *text;
} decoder;

static void dnext(decoder *d) { kd__lex_next(&d->lx, &d->cur); }

static bool tok_is(const decoder *d, const char *word) {
  size_t n = d->cur.end - d->cur.start;
  return d->cur.kind == KD__TK_IDENT && strlen(word) == n &&
         memcmp(d->text + d->cur.start, word, n) == 0;
}

/* Copies the current token's text (optionally after a '-') into buf. */
static bool tok_text(const decoder *d, bool neg, char *buf, size_t cap) {
  size_t n = d->cur.end - d->cur.start;
  if (n + 2 > cap) return false;
  size_t k = 0;
  if (neg) buf[k++] = '-';
  memcpy(buf + k, d->text + d->cur.start, n);
  buf[k + n] = '\0';
  return true;
}

/* A number token (optionally negated) or inf/nan. Sets *is_int when written
 * as an integer, *is_imag for a trailing 'j'. */
static bool read_number(decoder *d, double *dv, int64_t *iv, bool *is_int, bool *is_imag) {
  bool neg = false;
  if (d->cur.kind == '-') {
    neg = true;
    dnext(d);
  }
  char buf[128];
  *is_imag = false;
  if (d->cur.kind == KD__TK_IDENT) {
    if (tok_is(d, "inf")) *dv = neg ? -INFINITY : INFINITY;
    else if (tok_is(d, "nan")) *dv = neg ? -NAN : NAN;
    else return false;
    *is_int = false;
    dnext(d);
    return true;
  }
  if (d->cur.kind != KD__TK_NUMBER) return false;
  /* Up to 18 decimal digits (what strtoll would read, and cannot overflow). */
  const char *digits = d->text + d->cur.start;
  size_t nd = d->cur.end - d->cur.start, k = 0;
  int64_t acc = 0;
  while (k < nd && k < 18 && (unsigned)(digits[k] - '0') < 10u) acc = acc * 10 + (digits[k++] - '0');
  if (k == nd) {
    *is_int = true;
    *iv = neg ? -acc : acc;
    *dv = (double)*iv;
    dnext(d);
    return true;
  }
  if (!tok_text(d, neg, buf, sizeof buf)) return false;
  size_t n = strlen(buf);
  if (buf[n - 1] == 'j') {
    *is_imag = true;
    buf[--n] = '\0';
  }
  *is_int = !*is_imag && strpbrk(buf, ".eE") == NULL;
  char *end;
  errno = 0;
  if (*is_int) {
    long long v = strtoll(buf, &end, 10);
    if (errno == ERANGE || *end) return false;
    *iv = v;
    *dv = (double)v;
  } else {
    *dv = strtod(buf, &end);
    if (*end) return false;
  }
  dnext(d);
  return true;
}

static bool read_int(decoder *d, int64_t *out) {
  if (tok_is(d, "Mean") || tok_is(d, "Sum") || tok_is(d, "None")) {
    *out = tok_is(d, "Mean") ? 1 : tok_is(d, "Sum") ? 2 : 0;
    dnext(d);
    return true;
  }
  double dv;
  bool is_int, is_imag;
  return read_number(d, &dv, out, &is_int, &is_imag) && is_int;
}

static bool read_double(decoder *d, double *out) {
  int64_t iv;
  bool is_int, is_imag;
  return read_number(d, out, &iv, &is_int, &is_imag) && !is_imag;
}

static bool read_bool(decoder *d, bool *out) {
  if (tok_is(d, "True") || tok_is(d, "False")) {
    *out = tok_is(d, "True");
    dnext(d);
    return true;
  }
  return false;
}

/* Decodes a string literal into a heap buffer (caller frees). */
static kd_status read_string(decoder *d, kd_value *out) {
  if (d->cur.kind != KD__TK_STRING) return KD_ETYPE;
  const char *s = d->text + d->cur.start + 1;
  size_t n = d->cur.end - d->cur.start - 2, k = 0;
  char *buf = kd__malloc(n + 1);
  if (!buf) return kd__oom("default string");
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c != '\\' || i + 1 >= n) {
      buf[k++] = c;
      continue;
    }
    c = s[++i];
    switch (c) {
      case 'n': buf[k++] = '\n'; break;
      case 't': buf[k++] = '\t'; break;
      case 'r': buf[k++] = '\r'; break;
      case 'a': buf[k++] = '\a'; break;
      case 'b': buf[k++] = '\b'; break;
      case 'f': buf[k++] = '\f'; break;
      case 'v': buf[k++] = '\v'; break;
      case '\\': case '\'': case '"': buf[k++] = c; break;
      case 'x': {
        unsigned v = 0, m = 0;
        while (m < 2 && i + 1 < n && strchr("0123456789abcdefABCDEF", s[i + 1]) && s[i + 1]) {
          char h = s[++i];
          v = v * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
          m++;
        }
        if (m == 0) {
          buf[k++] = '\\';
          buf[k++] = 'x';
        } else {
          buf[k++] = (char)v;
        }
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          unsigned v = (unsigned)(c - '0'), m = 1;
          while (m < 3 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7') {
            v = v * 8 + (unsigned)(s[++i] - '0');
            m++;
          }
          buf[k++] = (char)v;
        } else {
          buf[k++] = '\\';
          buf[k++] = c;
        }
        break;
    }
  }
  kd_status st = kd_value_string(buf, k, out);
  kd__free(buf);
  if (st == KD_OK) dnext(d);
  return st;
}

/* The text of a name token (NUL-terminated) for the *_from_name lookups. */
static bool read_name(decoder *d, char *buf, size_t cap) {
  if (d->cur.kind == KD__TK_IDENT) return tok_text(d, false, buf, cap);
  if (d->cur.kind == KD__TK_STRING) {
    size_t n = d->cur.end - d->cur.start - 2;
    if (n + 1 > cap) return false;
    memcpy(buf, d->text + d->cur.start + 1, n);
    buf[n] = '\0';
    return true;
  }
  return false;
}

static kd_status decode(decoder *d, const kd_type *t, int64_t n, int depth, kd_value *out);

/* Growable array of decoded elements. */
typedef struct elems {
  kd_value *v;
  size_t n, cap;
} elems;

static void elems_free(elems *e) {
  for (size_t i = 0; i < e->n; i++) kd_value_destroy(&e->v[i]);
  kd__free(e->v);
}

/* A list of element type `et` (a node of the schema, or a static one for
 * Any's lists: never a node on the stack, whose 32-bit self-relative links
 * could not reach a static node); n >= 0 for a fixed size T[N]. */
static kd_status decode_list(decoder *d, const kd_type *et, int64_t n, int depth, kd_value *out) {
  kd_type_kind ek = (kd_type_kind)et->kind;
  elems e = {NULL, 0, 0};
  kd_status st = KD_OK;
  if (d->cur.kind == '[') {
    if (depth > 64) return KD_ETYPE;
    dnext(d);
    while (d->cur.kind != ']') {
      if (e.n == e.cap) {
        size_t cap = e.cap ? e.cap * 2 : 8;
        kd_value *nv = kd__realloc(e.v, cap * sizeof *nv);
        if (!nv) {
          elems_free(&e);
          return kd__oom("default list");
        }
        e.v = nv;
        e.cap = cap;
      }
      e.v[e.n] = kd_value_none();
      st = decode(d, et, -1, depth + 1, &e.v[e.n]);
      if (st != KD_OK) break;
      e.n++;
      if (d->cur.kind == ',') dnext(d);
      else if (d->cur.kind != ']') st = KD_ETYPE;
      if (st != KD_OK) break;
    }
    if (st == KD_OK) dnext(d);
  } else if (n >= 0 && (ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT || ek == KD_TYPE_FLOAT ||
                        ek == KD_TYPE_BOOL)) {
    /* int[2] stride=1 means [1, 1]. */
    kd_value one = kd_value_none();
    st = decode(d, et, -1, depth + 1, &one);
    if (st == KD_OK && n > 4096) st = KD_ETYPE;
    if (st == KD_OK) {
      e.v = kd__malloc(((size_t)n + 1) * sizeof *e.v);
      if (!e.v) st = kd__oom("default list");
      for (int64_t i = 0; st == KD_OK && i < n; i++) e.v[e.n++] = one;
    }
  } else {
    st = KD_ETYPE;
  }
  if (st != KD_OK) {
    elems_free(&e);
    return st;
  }
  /* Typed lists for the element types that have one. */
  size_t cnt = e.n;
  if (ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT || ek == KD_TYPE_FLOAT || ek == KD_TYPE_BOOL) {
    void *arr = kd__malloc((cnt ? cnt : 1) * sizeof(int64_t));
    if (!arr) {
      elems_free(&e);
      return kd__oom("default list");
    }
    for (size_t i = 0; i < cnt; i++) {
      if (ek == KD_TYPE_FLOAT) ((double *)arr)[i] = e.v[i].u.d;
      else if (ek == KD_TYPE_BOOL) ((bool *)arr)[i] = e.v[i].u.b;
      else ((int64_t *)arr)[i] = e.v[i].u.i;
    }
    if (ek == KD_TYPE_FLOAT) st = kd_value_double_list(arr, cnt, out);
    else if (ek == KD_TYPE_BOOL) st = kd_value_bool_list(arr, cnt, out);
    else st = kd_value_int_list(arr, cnt, out);
    kd__free(arr);
  } else if (ek == KD_TYPE_TENSOR) {
    st = cnt == 0 ? kd_value_tensor_list(NULL, 0, out) : KD_ETYPE;
  } else if (ek == KD_TYPE_OPTIONAL &&
             ((const kd_type *)kd__rel_get(&et->a))->kind == KD_TYPE_TENSOR) {
    kd_tensor **nulls = kd__calloc(cnt ? cnt : 1, sizeof *nulls);
    if (!nulls) st = kd__oom("default list");
    else st = kd_value_opt_tensor_list(nulls, cnt, out);
    kd__free(nulls);
  } else {
    st = kd_value_list(e.v, cnt, out);
  }
  elems_free(&e);
  return st;
}

/* Generic literal for Any and type variables. */
static kd_status decode_any(decoder *d, int depth, kd_value *out) {
  bool b;
  if (tok_is(d, "None")) {
    dnext(d);
    *out = kd_value_none();
    return KD_OK;
  }
  if (read_bool(d, &b)) {
    *out = kd_value_bool(b);
    return KD_OK;
  }
  if (d->cur.kind == KD__TK_STRING) return read_string(d, out);
  if (d->cur.kind == '[') {
    /* A generic list whose elements are decoded as Any again. */
    static const struct kd_type any_t = {KD_TYPE_ANY, {0, 0, 0}, 0, 0, 0, -1};
    return decode_list(d, &any_t, -1, depth, out);
  }
  double dv;
  int64_t iv;
  bool is_int, is_imag;
  if (!read_number(d, &dv, &iv, &is_int, &is_imag)) return KD_ETYPE;
  *out = is_imag ? kd_value_complex(0, dv) : is_int ? kd_value_int(iv) : kd_value_double(dv);
  return KD_OK;
}

static kd_status decode(decoder *d, const kd_type *t, int64_t n, int depth, kd_value *out) {
  kd_type_kind k = (kd_type_kind)t->kind;
  if (tok_is(d, "None") && (k == KD_TYPE_OPTIONAL || k == KD_TYPE_NONE)) {
    dnext(d);
    *out = kd_value_none();
    return KD_OK;
  }
  char name[64];
  double dv;
  int64_t iv;
  bool b, is_int, is_imag;
  switch (k) {
    case KD_TYPE_OPTIONAL:
      return decode(d, kd__rel_get(&t->a), n, depth, out);
    case KD_TYPE_BOOL:
      if (!read_bool(d, &b)) return KD_ETYPE;
      *out = kd_value_bool(b);
      return KD_OK;
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
    case KD_TYPE_DEVICE_INDEX:
      if (!read_int(d, &iv)) return KD_ETYPE;
      *out = kd_value_int(iv);
      return KD_OK;
    case KD_TYPE_FLOAT:
      if (!read_double(d, &dv)) return KD_ETYPE;
      *out = kd_value_double(dv);
      return KD_OK;
    case KD_TYPE_COMPLEX:
      if (!read_number(d, &dv, &iv, &is_int, &is_imag)) return KD_ETYPE;
      *out = is_imag ? kd_value_complex(0, dv) : kd_value_complex(dv, 0);
      return KD_OK;
    case KD_TYPE_SCALAR:
    case KD_TYPE_NUMBER:
      if (read_bool(d, &b)) {
        *out = kd_value_scalar(kd_scalar_bool(b));
        return KD_OK;
      }
      if (!read_number(d, &dv, &iv, &is_int, &is_imag)) return KD_ETYPE;
      *out = kd_value_scalar(is_imag  ? kd_scalar_complex(0, dv)
                             : is_int ? kd_scalar_int(iv)
                                      : kd_scalar_double(dv));
      return KD_OK;
    case KD_TYPE_STR:
      return read_string(d, out);
    case KD_TYPE_SCALAR_TYPE: {
      kd_dtype dt;
      if (!read_name(d, name, sizeof name) || kd_dtype_from_name(name, &dt) != KD_OK)
        return KD_ETYPE;
      dnext(d);
      *out = kd_value_dtype(dt);
      return KD_OK;
    }
    case KD_TYPE_LAYOUT: {
      kd_layout l;
      if (!read_name(d, name, sizeof name) || kd_layout_from_name(name, &l) != KD_OK)
        return KD_ETYPE;
      dnext(d);
      *out = kd_value_layout(l);
      return KD_OK;
    }
    case KD_TYPE_MEMORY_FORMAT: {
      kd_memory_format mf;
      if (!read_name(d, name, sizeof name) || kd_memory_format_from_name(name, &mf) != KD_OK)
        return KD_ETYPE;
      dnext(d);
      *out = kd_value_memory_format(mf);
      return KD_OK;
    }
    case KD_TYPE_DEVICE: {
      kd_device dev;
      if (!read_name(d, name, sizeof name) || kd_device_parse(name, &dev) != KD_OK)
        return KD_ETYPE;
      dnext(d);
      *out = kd_value_device(dev);
      return KD_OK;
    }
    case KD_TYPE_LIST:
      return decode_list(d, kd__rel_get(&t->a), t->n, depth, out);
    case KD_TYPE_ANY:
    case KD_TYPE_VAR:
      return decode_any(d, depth, out);
    default:
      return KD_ETYPE;
  }
}

kd_status kd_argument_default_value(const kd_argument *arg, kd_value *out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_argument_default_value: out is NULL");
  *out = kd_value_none();
  if (!arg) return kd_set_error(KD_EINVAL, "kd_argument_default_value: arg is NULL");
  const char *text = kd__rel_get(&arg->def);
  const char *name = kd_argument_name(arg);
  if (!text) return kd_set_error(KD_ENOTFOUND, "argument '%s' has no default", name);
  decoder d;
  d.text = text;
  d.lx.src = (const unsigned char *)text;
  d.lx.len = (uint32_t)strlen(text);
  d.lx.pos = 0;
  dnext(&d);
  kd_status st = decode(&d, kd__rel_get(&arg->type), -1, 0, out);
  if (st == KD_OK && d.cur.kind != KD__TK_EOF) {
    kd_value_destroy(out);
    st = KD_ETYPE;
  }
  if (st == KD_ETYPE) {
    char type[256];
    kd_type_format(kd__rel_get(&arg->type), type, sizeof type);
    return kd_set_error(KD_ETYPE, "argument '%s' of type %s: default '%s' does not fit the type",
                        name, type, text);
  }
  if (st != KD_OK) *out = kd_value_none();
  return st;
}
