/*
 * value.c: boxed values (kd_value) and their heap payloads.
 */
#include <inttypes.h>
#include <stdio.h>

#include "core/internal.h"
#include "core/tensor_impl.h"
#include "kd/value.h"
#include "value/value_impl.h"

/* kd_value_move (value.h) copies the payload as three 8-byte words. */
_Static_assert(sizeof(((kd_value *)0)->u) == 24, "kd_value payload is three words");

const char *kd_value_tag_name(kd_value_tag tag) {
  switch (tag) {
#define KD__CASE(E, name) \
  case KD_VALUE_##E:      \
    return name;
    KD_VALUE_TAG_LIST(KD__CASE)
#undef KD__CASE
    case KD_VALUE_TAG_COUNT:
      break;
  }
  return "invalid";
}

static bool is_list_tag(kd_value_tag tag) {
  switch (tag) {
    case KD_VALUE_INT_LIST:
    case KD_VALUE_DOUBLE_LIST:
    case KD_VALUE_BOOL_LIST:
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST:
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE:
      return true;
    default:
      return false;
  }
}

/* Size of one element of a list of this kind. */
static size_t list_elem_size(kd_value_tag kind) {
  switch (kind) {
    case KD_VALUE_INT_LIST:
      return sizeof(int64_t);
    case KD_VALUE_DOUBLE_LIST:
      return sizeof(double);
    case KD_VALUE_BOOL_LIST:
      return sizeof(bool);
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST:
      return sizeof(kd_tensor *);
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE:
      return sizeof(kd_value);
    default:
      KD__ASSERT(!"not a list kind");
      return 1;
  }
}

/* ---- Heap payloads --------------------------------------------------------- */

/* A new list of `n` uninitialised elements with one reference, or NULL. */
static kd_list *list_alloc(kd_value_tag kind, size_t n) {
  size_t esize = list_elem_size(kind);
  if (n > (SIZE_MAX - sizeof(kd_list)) / esize) return NULL;
  kd_list *list = kd__malloc(sizeof(kd_list) + n * esize);
  if (!list) return NULL;
  kd__ref_init(&list->refcount);
  list->kind = kind;
  list->size = n;
  return list;
}

static void list_release(kd_list *list) {
  if (!list || !kd__ref_dec(&list->refcount)) return;
  switch (list->kind) {
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST: {
      kd_tensor **items = KD__LIST_ITEMS(list, kd_tensor *);
      for (size_t i = 0; i < list->size; i++) kd_tensor_release(items[i]);
      break;
    }
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE: {
      kd_value *items = KD__LIST_ITEMS(list, kd_value);
      for (size_t i = 0; i < list->size; i++) kd_value_destroy(&items[i]);
      break;
    }
    default:
      break;
  }
  kd__free(list);
}

static void string_release(kd_string *str) {
  if (str && kd__ref_dec(&str->refcount)) kd__free(str);
}

static kd_value list_value(kd_list *list) {
  kd_value v = kd_value_none();
  v.tag = list->kind;
  v.u.list = list;
  return v;
}

/* ---- Constructors ---------------------------------------------------------- */

kd_status kd_value_string(const char *text, size_t len, kd_value *out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_value_string: out is NULL");
  *out = kd_value_none();
  if (!text && len > 0) {
    return kd_set_error(KD_EINVAL, "kd_value_string: text is NULL but len is %zu", len);
  }
  if (len > SIZE_MAX - sizeof(kd_string) - 1) return kd__oom("a string value");
  kd_string *str = kd__malloc(sizeof(kd_string) + len + 1);
  if (!str) return kd__oom("a string value");
  kd__ref_init(&str->refcount);
  str->len = len;
  if (len) memcpy(str->data, text, len);
  str->data[len] = '\0';
  out->tag = KD_VALUE_STRING;
  out->u.str = str;
  return KD_OK;
}

/* Common checks and allocation of the typed-list constructors. */
static kd_status list_begin(const char *fn, kd_value_tag kind, const void *items, size_t n,
                            kd_value *out, kd_list **list) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", fn);
  *out = kd_value_none();
  if (!items && n > 0) {
    return kd_set_error(KD_EINVAL, "%s: items is NULL but n is %zu", fn, n);
  }
  *list = list_alloc(kind, n);
  if (!*list) return kd__oom(kd_value_tag_name(kind));
  return KD_OK;
}

static kd_status plain_list(const char *fn, kd_value_tag kind, const void *items, size_t n,
                            kd_value *out) {
  kd_list *list = NULL;
  kd_status st = list_begin(fn, kind, items, n, out, &list);
  if (st != KD_OK) return st;
  if (n) memcpy(list->data, items, n * list_elem_size(kind));
  *out = list_value(list);
  return KD_OK;
}

kd_status kd_value_int_list(const int64_t *items, size_t n, kd_value *out) {
  return plain_list("kd_value_int_list", KD_VALUE_INT_LIST, items, n, out);
}

kd_status kd_value_double_list(const double *items, size_t n, kd_value *out) {
  return plain_list("kd_value_double_list", KD_VALUE_DOUBLE_LIST, items, n, out);
}

kd_status kd_value_bool_list(const bool *items, size_t n, kd_value *out) {
  return plain_list("kd_value_bool_list", KD_VALUE_BOOL_LIST, items, n, out);
}

static kd_status tensor_list(const char *fn, kd_value_tag kind, kd_tensor *const *items,
                             size_t n, kd_value *out) {
  if (kind == KD_VALUE_TENSOR_LIST && items) {
    for (size_t i = 0; i < n; i++) {
      if (!items[i]) {
        if (out) *out = kd_value_none();
        return kd_set_error(KD_EINVAL,
                            "%s: element %zu is NULL; a Tensor[] cannot hold None "
                            "(use a Tensor?[])",
                            fn, i);
      }
    }
  }
  kd_list *list = NULL;
  kd_status st = list_begin(fn, kind, items, n, out, &list);
  if (st != KD_OK) return st;
  kd_tensor **dst = KD__LIST_ITEMS(list, kd_tensor *);
  for (size_t i = 0; i < n; i++) {
    kd_tensor_retain(items[i]); /* NULL is ignored */
    dst[i] = items[i];
  }
  *out = list_value(list);
  return KD_OK;
}

kd_status kd_value_tensor_list(kd_tensor *const *items, size_t n, kd_value *out) {
  return tensor_list("kd_value_tensor_list", KD_VALUE_TENSOR_LIST, items, n, out);
}

kd_status kd_value_opt_tensor_list(kd_tensor *const *items, size_t n, kd_value *out) {
  return tensor_list("kd_value_opt_tensor_list", KD_VALUE_OPT_TENSOR_LIST, items, n, out);
}

static kd_status value_list(const char *fn, kd_value_tag kind, const kd_value *items, size_t n,
                            kd_value *out) {
  kd_list *list = NULL;
  kd_status st = list_begin(fn, kind, items, n, out, &list);
  if (st != KD_OK) return st;
  kd_value *dst = KD__LIST_ITEMS(list, kd_value);
  for (size_t i = 0; i < n; i++) kd_value_copy(&dst[i], &items[i]);
  *out = list_value(list);
  return KD_OK;
}

kd_status kd_value_list(const kd_value *items, size_t n, kd_value *out) {
  return value_list("kd_value_list", KD_VALUE_LIST, items, n, out);
}

kd_status kd_value_tuple(const kd_value *items, size_t n, kd_value *out) {
  return value_list("kd_value_tuple", KD_VALUE_TUPLE, items, n, out);
}

/* ---- Lifetime -------------------------------------------------------------- */

/* Drops a string or list value's reference and sets it to None (out of
 * line: kd_value_destroy's common case is a tensor). */
static void __attribute__((noinline)) destroy_heap(kd_value *value) {
  if (value->tag == KD_VALUE_STRING)
    string_release(value->u.str);
  else if (is_list_tag(value->tag))
    list_release(value->u.list);
  *value = kd_value_none();
}

void kd_value_destroy(kd_value *value) {
  if (!value) return;
  kd_value_tag tag = value->tag;
  uint32_t flags = value->flags;
  if (tag == KD_VALUE_TENSOR) {
    /* None first: the release is the last thing done, with nothing to keep. */
    kd_tensor *t = value->u.t;
    *value = kd_value_none();
    if (!(flags & KD_VALUE_BORROWED) && t) kd__tensor_release(t);
    return;
  }
  if (tag > KD_VALUE_TENSOR || tag == KD_VALUE_STRING) {
    if (!(flags & KD_VALUE_BORROWED)) {
      destroy_heap(value);
      return;
    }
  }
  *value = kd_value_none();
}

void kd_value_copy(kd_value *dst, const kd_value *src) {
  if (!dst) return;
  if (!src) {
    *dst = kd_value_none();
    return;
  }
  *dst = *src;
  dst->flags &= ~KD_VALUE_BORROWED;
  switch (src->tag) {
    case KD_VALUE_TENSOR:
      kd_tensor_retain(src->u.t);
      break;
    case KD_VALUE_STRING:
      if (src->u.str) kd__ref_inc(&src->u.str->refcount);
      break;
    default:
      if (is_list_tag(src->tag) && src->u.list) kd__ref_inc(&src->u.list->refcount);
      break;
  }
}

void kd_value_own(kd_value *value) {
  if (!value || !(value->flags & KD_VALUE_BORROWED)) return;
  kd_value copy;
  kd_value_copy(&copy, value);
  *value = copy;
}

/* ---- Accessors ------------------------------------------------------------- */

static const char *scalar_kind_name(kd_scalar_kind kind) {
  switch (kind) {
    case KD_SCALAR_BOOL:
      return "bool";
    case KD_SCALAR_INT:
      return "int";
    case KD_SCALAR_DOUBLE:
      return "float";
    case KD_SCALAR_COMPLEX:
      return "complex";
  }
  return "invalid";
}

static kd_status type_error(const char *expected, const kd_value *v) {
  if (v->tag == KD_VALUE_SCALAR) {
    return kd_set_error(KD_ETYPE, "expected a value of type %s, found Scalar holding a %s",
                        expected, scalar_kind_name(v->u.s.kind));
  }
  return kd_set_error(KD_ETYPE, "expected a value of type %s, found %s", expected,
                      kd_value_tag_name(v->tag));
}

#define KD__CHECK_ARGS(fn)                                        \
  do {                                                            \
    if (!v) return kd_set_error(KD_EINVAL, fn ": value is NULL"); \
    if (!out) return kd_set_error(KD_EINVAL, fn ": out is NULL"); \
  } while (0)

kd_status kd_value_get_bool(const kd_value *v, bool *out) {
  KD__CHECK_ARGS("kd_value_get_bool");
  if (v->tag == KD_VALUE_BOOL) {
    *out = v->u.b;
    return KD_OK;
  }
  if (v->tag == KD_VALUE_SCALAR && v->u.s.kind == KD_SCALAR_BOOL) {
    *out = v->u.s.v.b;
    return KD_OK;
  }
  return type_error("bool", v);
}

kd_status kd_value_get_int(const kd_value *v, int64_t *out) {
  KD__CHECK_ARGS("kd_value_get_int");
  if (v->tag == KD_VALUE_INT) {
    *out = v->u.i;
    return KD_OK;
  }
  if (v->tag == KD_VALUE_SCALAR && v->u.s.kind == KD_SCALAR_INT) {
    *out = v->u.s.v.i;
    return KD_OK;
  }
  return type_error("int", v);
}

kd_status kd_value_get_double(const kd_value *v, double *out) {
  KD__CHECK_ARGS("kd_value_get_double");
  switch (v->tag) {
    case KD_VALUE_DOUBLE:
      *out = v->u.d;
      return KD_OK;
    case KD_VALUE_INT:
      *out = (double)v->u.i;
      return KD_OK;
    case KD_VALUE_SCALAR:
      /* A Scalar reads as a float when it holds a float, or an int (the same
       * int -> double conversion an INT value gets). */
      if (v->u.s.kind == KD_SCALAR_DOUBLE) {
        *out = v->u.s.v.d;
        return KD_OK;
      }
      if (v->u.s.kind == KD_SCALAR_INT) {
        *out = (double)v->u.s.v.i;
        return KD_OK;
      }
      break;
    default:
      break;
  }
  return type_error("float", v);
}

kd_status kd_value_get_scalar(const kd_value *v, kd_scalar *out) {
  KD__CHECK_ARGS("kd_value_get_scalar");
  switch (v->tag) {
    case KD_VALUE_SCALAR:
      *out = v->u.s;
      return KD_OK;
    case KD_VALUE_BOOL:
      *out = kd_scalar_bool(v->u.b);
      return KD_OK;
    case KD_VALUE_INT:
      *out = kd_scalar_int(v->u.i);
      return KD_OK;
    case KD_VALUE_DOUBLE:
      *out = kd_scalar_double(v->u.d);
      return KD_OK;
    case KD_VALUE_COMPLEX:
      *out = kd_scalar_complex(v->u.c.re, v->u.c.im);
      return KD_OK;
    default:
      return type_error("Scalar", v);
  }
}

kd_status kd_value_get_tensor(const kd_value *v, kd_tensor **out) {
  KD__CHECK_ARGS("kd_value_get_tensor");
  if (v->tag == KD_VALUE_TENSOR) {
    *out = v->u.t;
    return KD_OK;
  }
  return type_error("Tensor", v);
}

#undef KD__CHECK_ARGS

const char *kd_value_string_data(const kd_value *v, size_t *len) {
  if (!v || v->tag != KD_VALUE_STRING || !v->u.str) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = v->u.str->len;
  return v->u.str->data;
}

size_t kd_value_list_size(const kd_value *v) {
  if (!v || !is_list_tag(v->tag) || !v->u.list) return 0;
  return v->u.list->size;
}

/* The list of `v` when its tag is `a` or `b`, else NULL. */
static const kd_list *list_of(const kd_value *v, kd_value_tag a, kd_value_tag b) {
  if (!v || (v->tag != a && v->tag != b)) return NULL;
  return v->u.list;
}

const int64_t *kd_value_int_list_data(const kd_value *v) {
  const kd_list *l = list_of(v, KD_VALUE_INT_LIST, KD_VALUE_INT_LIST);
  return l ? KD__LIST_CITEMS(l, int64_t) : NULL;
}

const double *kd_value_double_list_data(const kd_value *v) {
  const kd_list *l = list_of(v, KD_VALUE_DOUBLE_LIST, KD_VALUE_DOUBLE_LIST);
  return l ? KD__LIST_CITEMS(l, double) : NULL;
}

const bool *kd_value_bool_list_data(const kd_value *v) {
  const kd_list *l = list_of(v, KD_VALUE_BOOL_LIST, KD_VALUE_BOOL_LIST);
  return l ? KD__LIST_CITEMS(l, bool) : NULL;
}

kd_tensor *const *kd_value_tensor_list_data(const kd_value *v) {
  const kd_list *l = list_of(v, KD_VALUE_TENSOR_LIST, KD_VALUE_OPT_TENSOR_LIST);
  return l ? KD__LIST_CITEMS(l, kd_tensor *) : NULL;
}

const kd_value *kd_value_list_at(const kd_value *v, size_t i) {
  const kd_list *l = list_of(v, KD_VALUE_LIST, KD_VALUE_TUPLE);
  if (!l || i >= l->size) return NULL;
  return &KD__LIST_CITEMS(l, kd_value)[i];
}

/* ---- Equality -------------------------------------------------------------- */

static bool list_equal(const kd_list *a, const kd_list *b) {
  if (a == NULL || b == NULL) return a == b;
  if (a->kind != b->kind || a->size != b->size) return false;
  size_t n = a->size;
  switch (a->kind) {
    case KD_VALUE_INT_LIST: {
      const int64_t *x = KD__LIST_CITEMS(a, int64_t), *y = KD__LIST_CITEMS(b, int64_t);
      for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return false;
      return true;
    }
    case KD_VALUE_DOUBLE_LIST: {
      const double *x = KD__LIST_CITEMS(a, double), *y = KD__LIST_CITEMS(b, double);
      for (size_t i = 0; i < n; i++)
        if (!(x[i] == y[i])) return false;
      return true;
    }
    case KD_VALUE_BOOL_LIST: {
      const bool *x = KD__LIST_CITEMS(a, bool), *y = KD__LIST_CITEMS(b, bool);
      for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return false;
      return true;
    }
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST: {
      kd_tensor *const *x = KD__LIST_CITEMS(a, kd_tensor *);
      kd_tensor *const *y = KD__LIST_CITEMS(b, kd_tensor *);
      for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return false;
      return true;
    }
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE: {
      const kd_value *x = KD__LIST_CITEMS(a, kd_value);
      const kd_value *y = KD__LIST_CITEMS(b, kd_value);
      for (size_t i = 0; i < n; i++)
        if (!kd_value_equal(&x[i], &y[i])) return false;
      return true;
    }
    default:
      return false;
  }
}

bool kd_value_equal(const kd_value *a, const kd_value *b) {
  if (!a || !b) return a == b;
  if (a->tag != b->tag) return false;
  switch (a->tag) {
    case KD_VALUE_NONE:
      return true;
    case KD_VALUE_BOOL:
      return a->u.b == b->u.b;
    case KD_VALUE_INT:
      return a->u.i == b->u.i;
    case KD_VALUE_DOUBLE:
      return a->u.d == b->u.d;
    case KD_VALUE_COMPLEX:
      return a->u.c.re == b->u.c.re && a->u.c.im == b->u.c.im;
    case KD_VALUE_STRING:
      if (!a->u.str || !b->u.str) return a->u.str == b->u.str;
      return a->u.str->len == b->u.str->len &&
             memcmp(a->u.str->data, b->u.str->data, a->u.str->len) == 0;
    case KD_VALUE_SCALAR:
      return kd_scalar_equal(&a->u.s, &b->u.s);
    case KD_VALUE_DTYPE:
      return a->u.dtype == b->u.dtype;
    case KD_VALUE_LAYOUT:
      return a->u.layout == b->u.layout;
    case KD_VALUE_DEVICE:
      return kd_device_equal(a->u.device, b->u.device);
    case KD_VALUE_MEMORY_FORMAT:
      return a->u.mf == b->u.mf;
    case KD_VALUE_TENSOR:
      return a->u.t == b->u.t;
    case KD_VALUE_INT_LIST:
    case KD_VALUE_DOUBLE_LIST:
    case KD_VALUE_BOOL_LIST:
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST:
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE:
      return list_equal(a->u.list, b->u.list);
    case KD_VALUE_TAG_COUNT:
      break;
  }
  return false;
}

/* ---- Formatting ------------------------------------------------------------ */

static void fmt_scalar(kd__fmt *f, kd_scalar s) {
  char tmp[128];
  size_t n = kd_scalar_format(&s, tmp, sizeof tmp);
  kd__fmt_putn(f, tmp, n < sizeof tmp ? n : sizeof tmp - 1);
}

static void fmt_tensor(kd__fmt *f, const kd_tensor *t) {
  if (!t) {
    kd__fmt_puts(f, "None");
    return;
  }
  char tmp[1024];
  size_t n = kd_tensor_describe(t, tmp, sizeof tmp);
  if (n < sizeof tmp) {
    kd__fmt_putn(f, tmp, n);
    return;
  }
  char *big = kd__malloc(n + 1);
  if (big) {
    size_t m = kd_tensor_describe(t, big, n + 1);
    kd__fmt_putn(f, big, m <= n ? m : n);
    kd__free(big);
  } else {
    /* Keep the length right even when the text cannot be had. */
    kd__fmt_putn(f, tmp, sizeof tmp - 1);
    f->len += n - (sizeof tmp - 1);
  }
}

static void fmt_string(kd__fmt *f, const char *s, size_t len) {
  kd__fmt_putn(f, "\"", 1);
  size_t run = 0; /* start of the pending run of plain bytes */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char hex[5];
    switch (c) {
      case '"':
        esc = "\\\"";
        break;
      case '\\':
        esc = "\\\\";
        break;
      case '\n':
        esc = "\\n";
        break;
      case '\r':
        esc = "\\r";
        break;
      case '\t':
        esc = "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          snprintf(hex, sizeof hex, "\\x%02x", c);
          esc = hex;
        }
        break;
    }
    if (esc) {
      kd__fmt_putn(f, s + run, i - run);
      kd__fmt_puts(f, esc);
      run = i + 1;
    }
  }
  kd__fmt_putn(f, s + run, len - run);
  kd__fmt_putn(f, "\"", 1);
}

static void fmt_value(kd__fmt *f, const kd_value *v);

static void fmt_list(kd__fmt *f, const kd_list *l) {
  bool tuple = l->kind == KD_VALUE_TUPLE;
  kd__fmt_putn(f, tuple ? "(" : "[", 1);
  for (size_t i = 0; i < l->size; i++) {
    if (i) kd__fmt_putn(f, ", ", 2);
    switch (l->kind) {
      case KD_VALUE_INT_LIST:
        kd__fmt_printf(f, "%" PRId64, KD__LIST_CITEMS(l, int64_t)[i]);
        break;
      case KD_VALUE_DOUBLE_LIST:
        fmt_scalar(f, kd_scalar_double(KD__LIST_CITEMS(l, double)[i]));
        break;
      case KD_VALUE_BOOL_LIST:
        kd__fmt_puts(f, KD__LIST_CITEMS(l, bool)[i] ? "True" : "False");
        break;
      case KD_VALUE_TENSOR_LIST:
      case KD_VALUE_OPT_TENSOR_LIST:
        fmt_tensor(f, KD__LIST_CITEMS(l, kd_tensor *)[i]);
        break;
      case KD_VALUE_LIST:
      case KD_VALUE_TUPLE:
        fmt_value(f, &KD__LIST_CITEMS(l, kd_value)[i]);
        break;
      default:
        break;
    }
  }
  if (tuple && l->size == 1) kd__fmt_putn(f, ",", 1);
  kd__fmt_putn(f, tuple ? ")" : "]", 1);
}

static void fmt_value(kd__fmt *f, const kd_value *v) {
  switch (v->tag) {
    case KD_VALUE_NONE:
      kd__fmt_puts(f, "None");
      return;
    case KD_VALUE_BOOL:
      kd__fmt_puts(f, v->u.b ? "True" : "False");
      return;
    case KD_VALUE_INT:
      kd__fmt_printf(f, "%" PRId64, v->u.i);
      return;
    case KD_VALUE_DOUBLE:
      fmt_scalar(f, kd_scalar_double(v->u.d));
      return;
    case KD_VALUE_COMPLEX:
      fmt_scalar(f, kd_scalar_complex(v->u.c.re, v->u.c.im));
      return;
    case KD_VALUE_STRING:
      if (v->u.str) {
        fmt_string(f, v->u.str->data, v->u.str->len);
      } else {
        kd__fmt_puts(f, "\"\"");
      }
      return;
    case KD_VALUE_SCALAR:
      fmt_scalar(f, v->u.s);
      return;
    case KD_VALUE_DTYPE:
      kd__fmt_puts(f, kd_dtype_name(v->u.dtype));
      return;
    case KD_VALUE_LAYOUT:
      kd__fmt_puts(f, kd_layout_name(v->u.layout));
      return;
    case KD_VALUE_DEVICE: {
      char tmp[64];
      size_t n = kd_device_format(v->u.device, tmp, sizeof tmp);
      kd__fmt_putn(f, tmp, n < sizeof tmp ? n : sizeof tmp - 1);
      return;
    }
    case KD_VALUE_MEMORY_FORMAT:
      kd__fmt_puts(f, kd_memory_format_name(v->u.mf));
      return;
    case KD_VALUE_TENSOR:
      fmt_tensor(f, v->u.t);
      return;
    case KD_VALUE_INT_LIST:
    case KD_VALUE_DOUBLE_LIST:
    case KD_VALUE_BOOL_LIST:
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST:
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE:
      if (v->u.list) {
        fmt_list(f, v->u.list);
      } else {
        kd__fmt_puts(f, v->tag == KD_VALUE_TUPLE ? "()" : "[]");
      }
      return;
    case KD_VALUE_TAG_COUNT:
      break;
  }
  kd__fmt_puts(f, "<invalid value>");
}

size_t kd_value_format(const kd_value *v, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  if (!v) {
    kd__fmt_puts(&f, "None");
  } else {
    fmt_value(&f, v);
  }
  return f.len;
}
