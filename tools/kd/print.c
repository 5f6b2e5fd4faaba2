/*
 * print.c: tensors as PyTorch 1.13's repr writes them, other boxed values as
 * Python's repr writes them (see print.h).
 *
 * The tensor rules, in the order PyTorch applies them (torch/_tensor_str.py
 * with the default print options):
 * - The text is "tensor(" CONTENTS SUFFIXES ")". Suffixes, each ", NAME=...":
 *   device='...' for a device other than cpu; then for a meta tensor
 *   size=(...) and dtype=... unless the dtype is the default dtype, with
 *   "..." as the contents; for a tensor without elements size=(...) unless it
 *   has one dimension and dtype=... unless it is the default dtype, with "[]"
 *   as the contents; otherwise dtype=... unless the dtype is the default
 *   dtype, its complex counterpart, int64 or bool. A suffix that would pass
 *   column 80 goes on a new line indented by 7 (see add_suffixes).
 * - More than 1000 elements: "summarize": every dimension longer than 6
 *   shows its first 3 and last 3 entries around "..." (a vector as one more
 *   item " ...", higher dimensions as one more slice "...").
 * - One formatter (two for complex: real parts and imaginary parts) looks at
 *   every element that will be shown and picks a width and a style; every
 *   element is then right-aligned to that width.
 *   Integers and bools: their decimal / True / False text.
 *   Floating point, looking only at the finite non-zero values: when there
 *   are none, "int mode" with width 1. When all are integral, "int mode"
 *   (1., -2., nan, inf), unless max/min > 1000 or max > 1e8 (absolute
 *   values), then scientific. Otherwise fixed "%.4f", unless max/min > 1000,
 *   max > 1e8 or min < 1e-4, then scientific "%.4e". The width is the
 *   longest of those values' texts (plus the "." in int mode); zeros, nans
 *   and infinities do not count towards it.
 *   Complex: REAL then IMAG "j", REAL padded, IMAG not; a "+" between them
 *   unless IMAG starts with "-".
 * - A vector is "[" items "]" joined by ", ", with as many items per line as
 *   fit (80 - indent) / (width + 2) (for complex, width_re + width_im + 3),
 *   at least one; lines are joined by ",\n" and indent + 1 spaces. Indent
 *   starts at 7 (the length of "tensor(") and grows by one per dimension.
 * - A tensor of n >= 2 dimensions is "[" slices "]" joined by "," then n - 1
 *   newlines then indent + 1 spaces (so 3-D blocks are separated by a blank
 *   line).
 * - A 0-dim tensor is its element alone: tensor(3), tensor(1.5000).
 *
 * Floating values are read as double (float16 and bfloat16 through float),
 * which is what PyTorch's tolist() hands to Python's formatting; C's printf
 * rounds "%.4f" and "%.4e" exactly as Python's format does. nan and inf are
 * spelt by hand because C may write "-nan".
 *
 * Everything is built in a growing buffer and written to the FILE at the
 * end with one fwrite, so an error leaves the FILE untouched.
 */
#include "print.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kd/memory.h"
#include "sbuf.h"

/* PyTorch's default print options. */
#define PRINT_PRECISION 4
#define PRINT_THRESHOLD 1000
#define PRINT_EDGEITEMS 3
#define PRINT_LINEWIDTH 80
/* strlen("tensor(") */
#define PRINT_INDENT 7

/* ---- Output ---------------------------------------------------------------- */

/* Writes the buffer to `out` and frees it; 0, or -1 with the error set. */
static int flush_to(kdc_sbuf *b, FILE *out) {
  int rc = 0;
  if (b->failed) {
    kd_set_error(KD_ENOMEM, "print: out of memory while formatting");
    rc = -1;
  } else if (b->len && fwrite(b->data, 1, b->len, out) != b->len) {
    kd_set_error(KD_EINTERNAL, "print: writing the output failed");
    rc = -1;
  }
  kdc_sbuf_free(b);
  return rc;
}

/* ---- Reading elements ------------------------------------------------------ */

/* A tensor's elements in host memory. Offsets are in elements from `data`
 * (element 0); `summarize` is PyTorch's numel > threshold. */
typedef struct esrc {
  const unsigned char *data;
  kd_dtype dtype;
  size_t itemsize;
  int ndim;
  const int64_t *sizes;
  const int64_t *strides;
  bool summarize;
} esrc;

static const unsigned char *elem_ptr(const esrc *s, int64_t off) {
  return s->data + (ptrdiff_t)off * (ptrdiff_t)s->itemsize;
}

/* The element at p, of C type T (memcpy: p need not be aligned). */
#define ELEM_AS(T, p) (*(T *)memcpy(&(T){0}, (p), sizeof(T)))

/* A floating or complex element as double; `part` picks the real (0) or the
 * imaginary (1) part of a complex one. */
static double elem_double(const esrc *s, int64_t off, int part) {
  const unsigned char *p = elem_ptr(s, off);
  switch (s->dtype) {
    case KD_FLOAT16: return (double)kd_half_to_float(ELEM_AS(uint16_t, p));
    case KD_BFLOAT16: return (double)kd_bfloat16_to_float(ELEM_AS(uint16_t, p));
    case KD_FLOAT32: return (double)ELEM_AS(float, p);
    case KD_FLOAT64: return ELEM_AS(double, p);
    case KD_COMPLEX64: return (double)ELEM_AS(float, p + (size_t)part * sizeof(float));
    case KD_COMPLEX128: return ELEM_AS(double, p + (size_t)part * sizeof(double));
    default: return 0;
  }
}

/* An integral element as int64 (bool as 0 / 1). */
static int64_t elem_int(const esrc *s, int64_t off) {
  const unsigned char *p = elem_ptr(s, off);
  switch (s->dtype) {
    case KD_BOOL: return *p != 0;
    case KD_UINT8: return *p;
    case KD_INT8: return ELEM_AS(int8_t, p);
    case KD_INT16: return ELEM_AS(int16_t, p);
    case KD_INT32: return ELEM_AS(int32_t, p);
    case KD_INT64: return ELEM_AS(int64_t, p);
    default: return 0;
  }
}

/* Calls fn on the offset of every element that will be shown, in order
 * (with summarization, the first and last PRINT_EDGEITEMS entries of each
 * long dimension): the same elements PyTorch's get_summarized_data keeps. */
typedef void (*elem_fn)(void *ctx, const esrc *s, int64_t off);

static void visit(const esrc *s, int dim, int64_t off, elem_fn fn, void *ctx) {
  if (dim == s->ndim) {
    fn(ctx, s, off);
    return;
  }
  int64_t n = s->sizes[dim];
  bool cut = s->summarize && n > 2 * PRINT_EDGEITEMS;
  for (int64_t i = 0; i < n; i++) {
    if (cut && i == PRINT_EDGEITEMS) i = n - PRINT_EDGEITEMS;
    visit(s, dim + 1, off + i * s->strides[dim], fn, ctx);
  }
}

/* ---- The formatter --------------------------------------------------------- */

/* PyTorch's _Formatter for one tensor (or one part of a complex tensor). */
typedef struct formatter {
  bool floating; /* floating values (or a part of complex ones) */
  int part;      /* complex: 0 real, 1 imaginary; else 0 */
  bool int_mode; /* floating: every finite non-zero value is integral */
  bool sci_mode; /* floating: "%.4e" */
  size_t width;  /* every element is right-aligned to this */
} formatter;

/* Element text, unpadded; `buf` holds 400 bytes (more than "%.4f" of the
 * largest double needs). Returns the length. */
#define ELEM_BUF 400

static size_t format_floating(const formatter *f, double v, char *buf) {
  if (isnan(v)) return (size_t)snprintf(buf, ELEM_BUF, "nan");
  if (isinf(v)) return (size_t)snprintf(buf, ELEM_BUF, v < 0 ? "-inf" : "inf");
  int n;
  if (f->sci_mode) n = snprintf(buf, ELEM_BUF, "%.*e", PRINT_PRECISION, v);
  else if (f->int_mode) n = snprintf(buf, ELEM_BUF, "%.0f.", v);
  else n = snprintf(buf, ELEM_BUF, "%.*f", PRINT_PRECISION, v);
  return n < 0 ? 0 : (size_t)n;
}

static size_t format_elem(const formatter *f, const esrc *s, int64_t off, char *buf) {
  if (f->floating) return format_floating(f, elem_double(s, off, f->part), buf);
  if (s->dtype == KD_BOOL) return (size_t)snprintf(buf, ELEM_BUF, elem_int(s, off) ? "True" : "False");
  return (size_t)snprintf(buf, ELEM_BUF, "%" PRId64, elem_int(s, off));
}

/* First pass over the shown floating values: the finite non-zero ones. */
typedef struct fstats {
  const formatter *f;
  int64_t count;
  double min, max; /* of the absolute values */
  bool integral;
} fstats;

static void stats_fn(void *ctx, const esrc *s, int64_t off) {
  fstats *st = ctx;
  double v = elem_double(s, off, st->f->part);
  if (!isfinite(v) || v == 0) return;
  double a = fabs(v);
  if (st->count == 0 || a < st->min) st->min = a;
  if (st->count == 0 || a > st->max) st->max = a;
  if (v != ceil(v)) st->integral = false;
  st->count++;
}

/* Second pass: the width. Non-floating: every shown value; floating: the
 * finite non-zero ones. */
static void width_fn(void *ctx, const esrc *s, int64_t off) {
  formatter *f = ctx;
  if (f->floating) {
    double v = elem_double(s, off, f->part);
    if (!isfinite(v) || v == 0) return;
  }
  char buf[ELEM_BUF];
  size_t n = format_elem(f, s, off, buf);
  if (n > f->width) f->width = n;
}

static void formatter_init(formatter *f, const esrc *s, bool floating, int part) {
  f->floating = floating;
  f->part = part;
  f->int_mode = true;
  f->sci_mode = false;
  f->width = 1;
  if (floating) {
    fstats st = {f, 0, 0, 0, true};
    visit(s, 0, 0, stats_fn, &st);
    if (st.count == 0) return; /* only zeros, nans and infinities */
    f->int_mode = st.integral;
    bool wide = st.max / st.min > 1000.0 || st.max > 1.0e8;
    f->sci_mode = f->int_mode ? wide : (wide || st.min < 1.0e-4);
  }
  visit(s, 0, 0, width_fn, f);
}

/* ---- Contents -------------------------------------------------------------- */

typedef struct printer {
  kdc_sbuf *b;
  const esrc *s;
  formatter f1;    /* the values, or the real parts */
  formatter f2;    /* the imaginary parts */
  bool complex;
} printer;

static void put_elem(printer *p, int64_t off) {
  char buf[ELEM_BUF];
  size_t n = format_elem(&p->f1, p->s, off, buf);
  if (n < p->f1.width) kdc_sbuf_repeat(p->b, ' ', p->f1.width - n);
  kdc_sbuf_putn(p->b, buf, n);
  if (p->complex) {
    /* The imaginary part is formatted padded, then stripped of its padding. */
    n = format_elem(&p->f2, p->s, off, buf);
    if (buf[0] != '-') kdc_sbuf_putn(p->b, "+", 1);
    kdc_sbuf_putn(p->b, buf, n);
    kdc_sbuf_putn(p->b, "j", 1);
  }
}

/* The last dimension, starting at element `off`, at column `indent`. */
static void put_vector(printer *p, int64_t off, size_t indent) {
  const esrc *s = p->s;
  int64_t n = s->sizes[s->ndim - 1];
  int64_t stride = s->strides[s->ndim - 1];
  size_t item_len = p->f1.width + 2;
  if (p->complex) item_len += p->f2.width + 1;
  size_t per_line = 1;
  if (indent < PRINT_LINEWIDTH && (PRINT_LINEWIDTH - indent) / item_len > 1)
    per_line = (PRINT_LINEWIDTH - indent) / item_len;
  bool cut = s->summarize && n > 2 * PRINT_EDGEITEMS;
  int64_t items = cut ? 2 * PRINT_EDGEITEMS + 1 : n;
  kdc_sbuf_putn(p->b, "[", 1);
  for (int64_t k = 0; k < items; k++) {
    if (k > 0) {
      if ((uint64_t)k % per_line == 0) {
        kdc_sbuf_putn(p->b, ",\n", 2);
        kdc_sbuf_repeat(p->b, ' ', indent + 1);
      } else {
        kdc_sbuf_putn(p->b, ", ", 2);
      }
    }
    if (cut && k == PRINT_EDGEITEMS) {
      kdc_sbuf_puts(p->b, " ...");
      continue;
    }
    int64_t i = (cut && k > PRINT_EDGEITEMS) ? n - (items - k) : k;
    put_elem(p, off + i * stride);
  }
  kdc_sbuf_putn(p->b, "]", 1);
}

/* Dimensions dim.. of the tensor, starting at element `off`. */
static void put_nested(printer *p, int dim, int64_t off, size_t indent) {
  const esrc *s = p->s;
  int rest = s->ndim - dim;
  if (rest == 0) {
    put_elem(p, off);
    return;
  }
  if (rest == 1) {
    put_vector(p, off, indent);
    return;
  }
  int64_t n = s->sizes[dim];
  bool cut = s->summarize && n > 2 * PRINT_EDGEITEMS;
  kdc_sbuf_putn(p->b, "[", 1);
  for (int64_t i = 0; i < n; i++) {
    if (i > 0) {
      kdc_sbuf_putn(p->b, ",", 1);
      kdc_sbuf_repeat(p->b, '\n', (size_t)(rest - 1));
      kdc_sbuf_repeat(p->b, ' ', indent + 1);
    }
    if (cut && i == PRINT_EDGEITEMS) {
      kdc_sbuf_puts(p->b, "...");
      kdc_sbuf_putn(p->b, ",", 1);
      kdc_sbuf_repeat(p->b, '\n', (size_t)(rest - 1));
      kdc_sbuf_repeat(p->b, ' ', indent + 1);
      i = n - PRINT_EDGEITEMS;
    }
    put_nested(p, dim + 1, off + i * s->strides[dim], indent + 1);
  }
  kdc_sbuf_putn(p->b, "]", 1);
}

/* ---- Whole tensors --------------------------------------------------------- */

/* PyTorch's _add_suffixes: `start` is where "tensor(" begins in the buffer.
 * Its running length of the last line is two more than the line's real
 * length until a suffix has been put on a new line; that quirk is kept. */
static void add_suffixes(kdc_sbuf *b, size_t start, const char *const *suffixes, int n) {
  size_t last_nl = start; /* one past the last newline, or start */
  for (size_t i = start; i < b->len && !b->failed; i++)
    if (b->data[i] == '\n') last_nl = i + 1;
  size_t line_len = b->len - last_nl + 2;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(suffixes[i]);
    if (line_len + len + 2 > PRINT_LINEWIDTH) {
      kdc_sbuf_putn(b, ",\n", 2);
      kdc_sbuf_repeat(b, ' ', PRINT_INDENT);
      line_len = PRINT_INDENT + len;
    } else {
      kdc_sbuf_putn(b, ", ", 2);
      line_len += len + 2;
    }
    kdc_sbuf_puts(b, suffixes[i]);
  }
  kdc_sbuf_putn(b, ")", 1);
}

/* "size=(2, 3)", "size=(5,)", "size=()". */
static void format_size(char *buf, size_t cap, const kd_tensor *t) {
  int nd = kd_tensor_ndim(t);
  const int64_t *sizes = kd_tensor_sizes(t);
  size_t len = (size_t)snprintf(buf, cap, "size=(");
  for (int d = 0; d < nd && len < cap; d++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, d ? ", " : "", sizes[d]);
  if (len < cap) snprintf(buf + len, cap - len, nd == 1 ? ",)" : ")");
}

/* Appends t's repr to b; 0, or -1 with the error set (b may then hold part
 * of the text: the callers discard it). */
static int append_tensor(kdc_sbuf *b, const kd_tensor *t) {
  if (!t) {
    kd_set_error(KD_EINVAL, "print: NULL tensor");
    return -1;
  }
  size_t start = b->len;
  kd_dtype dtype = kd_tensor_dtype(t);
  kd_device device = kd_tensor_device(t);
  int64_t numel = kd_tensor_numel(t);
  kd_dtype def = kd_get_default_dtype();
  const char *dtype_name = kd_dtype_name(dtype);

  char device_sfx[96], size_sfx[KD_MAX_DIMS * 24 + 16], dtype_sfx[48];
  const char *suffixes[3];
  int nsuffixes = 0;
  snprintf(dtype_sfx, sizeof dtype_sfx, "dtype=%s", dtype_name);
  format_size(size_sfx, sizeof size_sfx, t);
  if (device.type != KD_DEVICE_CPU) {
    char name[64];
    kd_device_format(device, name, sizeof name);
    snprintf(device_sfx, sizeof device_sfx, "device='%s'", name);
    suffixes[nsuffixes++] = device_sfx;
  }

  kdc_sbuf_puts(b, "tensor(");
  if (device.type == KD_DEVICE_META) {
    /* No data: the size stands in for it. */
    suffixes[nsuffixes++] = size_sfx;
    if (dtype != def) suffixes[nsuffixes++] = dtype_sfx;
    kdc_sbuf_puts(b, "...");
    add_suffixes(b, start, suffixes, nsuffixes);
    return 0;
  }
  if (numel == 0) {
    /* No element tells the dtype, so anything but the default is named. */
    if (kd_tensor_ndim(t) != 1) suffixes[nsuffixes++] = size_sfx;
    if (dtype != def) suffixes[nsuffixes++] = dtype_sfx;
    kdc_sbuf_puts(b, "[]");
    add_suffixes(b, start, suffixes, nsuffixes);
    return 0;
  }
  if (!kd_dtype_valid(dtype)) {
    kd_set_error(KD_EINVAL, "print: tensor has an invalid dtype (%d)", (int)dtype);
    return -1;
  }

  /* Bytes elsewhere than in host memory are copied to the host first. */
  kd_tensor *host = NULL;
  const kd_tensor *src_t = t;
  if (device.type != KD_DEVICE_CPU) {
    kd_status st = kd_tensor_to_device(t, kd_device_cpu(), &host);
    if (st != KD_OK) {
      char why[512], name[64];
      snprintf(why, sizeof why, "%s", kd_last_error());
      kd_device_format(device, name, sizeof name);
      kd_set_error(KD_EUNSUPPORTED,
                   "print: cannot print a tensor on device '%s': its data cannot be read "
                   "from the host (%s)",
                   name, why);
      return -1;
    }
    src_t = host;
  }
  const void *data = kd_tensor_data(src_t);
  if (!data) {
    kd_tensor_release(host);
    kd_set_error(KD_EINTERNAL, "print: tensor of %" PRId64 " elements has no data", numel);
    return -1;
  }

  esrc s;
  s.data = data;
  s.dtype = dtype;
  s.itemsize = kd_dtype_size(dtype);
  s.ndim = kd_tensor_ndim(src_t);
  s.sizes = kd_tensor_sizes(src_t);
  s.strides = kd_tensor_strides(src_t);
  s.summarize = numel > PRINT_THRESHOLD;

  printer p;
  p.b = b;
  p.s = &s;
  p.complex = kd_dtype_is_complex(dtype);
  bool floating = p.complex || kd_dtype_is_floating(dtype);
  formatter_init(&p.f1, &s, floating, 0);
  if (p.complex) formatter_init(&p.f2, &s, true, 1);
  else p.f2 = p.f1;
  put_nested(&p, 0, 0, PRINT_INDENT);
  kd_tensor_release(host);

  bool is_default = dtype == def || dtype == kd_dtype_to_complex(def) || dtype == KD_INT64 ||
                    dtype == KD_BOOL;
  if (!is_default) suffixes[nsuffixes++] = dtype_sfx;
  add_suffixes(b, start, suffixes, nsuffixes);
  return 0;
}

int kdc_print_tensor(FILE *out, const kd_tensor *t) {
  if (!out) {
    kd_set_error(KD_EINVAL, "print: NULL output stream");
    return -1;
  }
  kdc_sbuf b = {NULL, 0, 0, false};
  if (append_tensor(&b, t) != 0) {
    kdc_sbuf_free(&b);
    return -1;
  }
  return flush_to(&b, out);
}

/* ---- Python reprs of other values ----------------------------------------- */

/* A double as Python's repr writes it: the shortest digits that read back to
 * the same double; positional when the decimal exponent is in -4..15, else
 * "1e+20" / "1.5e-07" (C's %e spells exponents as Python does: a sign and at
 * least two digits). "nan" whatever its sign bit, "inf", "-inf". `dot0` adds
 * ".0" to integral positional values (floats; not the parts of a complex).
 * `sign` writes "+" before values that do not start with "-" (the imaginary
 * part of a complex). */
static void put_float_repr(kdc_sbuf *b, double d, bool dot0, bool sign) {
  if (isnan(d)) {
    kdc_sbuf_puts(b, sign ? "+nan" : "nan");
    return;
  }
  if (sign && !signbit(d)) kdc_sbuf_putn(b, "+", 1);
  if (isinf(d)) {
    kdc_sbuf_puts(b, d < 0 ? "-inf" : "inf");
    return;
  }
  char sci[64];
  int digits = 1;
  for (; digits < 17; digits++) {
    snprintf(sci, sizeof sci, "%.*e", digits - 1, d);
    if (strtod(sci, NULL) == d) break;
  }
  if (digits == 17) snprintf(sci, sizeof sci, "%.16e", d);
  const char *e = strchr(sci, 'e');
  int exp = e ? atoi(e + 1) : 0;
  if (exp < -4 || exp >= 16) {
    kdc_sbuf_puts(b, sci);
    return;
  }
  int decimals = digits - 1 - exp;
  kdc_sbuf_printf(b, "%.*f", decimals > 0 ? decimals : 0, d);
  if (decimals <= 0 && dot0) kdc_sbuf_puts(b, ".0");
}

/* Python's repr of complex(re, im): "2j" when the real part is +0, else
 * "(1+2j)", "(1.5-0j)", "(nan+infj)". */
static void put_complex_repr(kdc_sbuf *b, double re, double im) {
  if (re == 0 && !signbit(re)) {
    put_float_repr(b, im, false, false);
    kdc_sbuf_putn(b, "j", 1);
    return;
  }
  kdc_sbuf_putn(b, "(", 1);
  put_float_repr(b, re, false, false);
  put_float_repr(b, im, false, true);
  kdc_sbuf_puts(b, "j)");
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len;
  uint32_t cp;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) {
    len = 2;
    cp = s[0] & 0x1fu;
  } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
    len = 3;
    cp = s[0] & 0x0fu;
  } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    len = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0;
  }
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

/* Python's repr of a str: single quotes unless the text holds a single quote
 * and no double quote; backslash, the quote, \t \n \r escaped; other control
 * characters (also U+0080..U+009F) as \xNN. Valid UTF-8 text is written as
 * it is; a byte that is not part of valid UTF-8 is written as \xNN. */
static void put_string_repr(kdc_sbuf *b, const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  bool has_single = memchr(text, '\'', len) != NULL;
  bool has_double = memchr(text, '"', len) != NULL;
  char quote = has_single && !has_double ? '"' : '\'';
  kdc_sbuf_putn(b, &quote, 1);
  for (size_t i = 0; i < len;) {
    unsigned char c = s[i];
    if (c == (unsigned char)quote || c == '\\') {
      kdc_sbuf_putn(b, "\\", 1);
      kdc_sbuf_putn(b, (const char *)&s[i], 1);
      i++;
    } else if (c == '\n') {
      kdc_sbuf_puts(b, "\\n");
      i++;
    } else if (c == '\r') {
      kdc_sbuf_puts(b, "\\r");
      i++;
    } else if (c == '\t') {
      kdc_sbuf_puts(b, "\\t");
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      kdc_sbuf_printf(b, "\\x%02x", c);
      i++;
    } else if (c < 0x80) {
      kdc_sbuf_putn(b, (const char *)&s[i], 1);
      i++;
    } else {
      size_t n = utf8_len(s + i, len - i);
      if (n == 2 && c == 0xc2 && s[i + 1] < 0xa0) {
        kdc_sbuf_printf(b, "\\x%02x", s[i + 1]); /* a C1 control character */
        i += 2;
      } else if (n) {
        kdc_sbuf_putn(b, (const char *)&s[i], n);
        i += n;
      } else {
        kdc_sbuf_printf(b, "\\x%02x", c);
        i++;
      }
    }
  }
  kdc_sbuf_putn(b, &quote, 1);
}

static void put_scalar_repr(kdc_sbuf *b, const kd_scalar *s) {
  switch (s->kind) {
    case KD_SCALAR_BOOL:
      kdc_sbuf_puts(b, s->v.b ? "True" : "False");
      return;
    case KD_SCALAR_INT:
      kdc_sbuf_printf(b, "%" PRId64, s->v.i);
      return;
    case KD_SCALAR_DOUBLE:
      put_float_repr(b, s->v.d, true, false);
      return;
    case KD_SCALAR_COMPLEX:
      put_complex_repr(b, s->v.c.re, s->v.c.im);
      return;
  }
  kdc_sbuf_puts(b, "<invalid scalar>");
}

static int append_value(kdc_sbuf *b, const kd_value *v);

/* Lists and tuples: "[a, b]", "(a, b)", "(a,)". */
static int append_list(kdc_sbuf *b, const kd_value *v) {
  size_t n = kd_value_list_size(v);
  bool tuple = v->tag == KD_VALUE_TUPLE;
  kdc_sbuf_putn(b, tuple ? "(" : "[", 1);
  for (size_t i = 0; i < n; i++) {
    if (i) kdc_sbuf_putn(b, ", ", 2);
    switch (v->tag) {
      case KD_VALUE_INT_LIST:
        kdc_sbuf_printf(b, "%" PRId64, kd_value_int_list_data(v)[i]);
        break;
      case KD_VALUE_DOUBLE_LIST:
        put_float_repr(b, kd_value_double_list_data(v)[i], true, false);
        break;
      case KD_VALUE_BOOL_LIST:
        kdc_sbuf_puts(b, kd_value_bool_list_data(v)[i] ? "True" : "False");
        break;
      case KD_VALUE_TENSOR_LIST:
      case KD_VALUE_OPT_TENSOR_LIST: {
        kd_tensor *t = kd_value_tensor_list_data(v)[i];
        if (!t) kdc_sbuf_puts(b, "None");
        else if (append_tensor(b, t) != 0) return -1;
        break;
      }
      default: {
        const kd_value *item = kd_value_list_at(v, i);
        if (!item) {
          kd_set_error(KD_EINVAL, "print: missing item %zu of a %s", i, kd_value_tag_name(v->tag));
          return -1;
        }
        if (append_value(b, item) != 0) return -1;
        break;
      }
    }
  }
  if (tuple && n == 1) kdc_sbuf_putn(b, ",", 1);
  kdc_sbuf_putn(b, tuple ? ")" : "]", 1);
  return 0;
}

static int append_value(kdc_sbuf *b, const kd_value *v) {
  switch (v->tag) {
    case KD_VALUE_NONE:
      kdc_sbuf_puts(b, "None");
      return 0;
    case KD_VALUE_BOOL:
      kdc_sbuf_puts(b, v->u.b ? "True" : "False");
      return 0;
    case KD_VALUE_INT:
      kdc_sbuf_printf(b, "%" PRId64, v->u.i);
      return 0;
    case KD_VALUE_DOUBLE:
      put_float_repr(b, v->u.d, true, false);
      return 0;
    case KD_VALUE_COMPLEX:
      put_complex_repr(b, v->u.c.re, v->u.c.im);
      return 0;
    case KD_VALUE_STRING: {
      size_t len = 0;
      const char *text = kd_value_string_data(v, &len);
      put_string_repr(b, text ? text : "", text ? len : 0);
      return 0;
    }
    case KD_VALUE_SCALAR:
      put_scalar_repr(b, &v->u.s);
      return 0;
    case KD_VALUE_DTYPE:
      kdc_sbuf_puts(b, kd_dtype_name(v->u.dtype));
      return 0;
    case KD_VALUE_LAYOUT:
      kdc_sbuf_puts(b, kd_layout_name(v->u.layout));
      return 0;
    case KD_VALUE_DEVICE: {
      char name[64];
      kd_device_format(v->u.device, name, sizeof name);
      kdc_sbuf_puts(b, name);
      return 0;
    }
    case KD_VALUE_MEMORY_FORMAT:
      kdc_sbuf_puts(b, kd_memory_format_name(v->u.mf));
      return 0;
    case KD_VALUE_TENSOR:
      return append_tensor(b, v->u.t);
    case KD_VALUE_INT_LIST:
    case KD_VALUE_DOUBLE_LIST:
    case KD_VALUE_BOOL_LIST:
    case KD_VALUE_TENSOR_LIST:
    case KD_VALUE_OPT_TENSOR_LIST:
    case KD_VALUE_LIST:
    case KD_VALUE_TUPLE:
      return append_list(b, v);
    case KD_VALUE_TAG_COUNT:
      break;
  }
  kd_set_error(KD_EINVAL, "print: value with an unknown tag %d", (int)v->tag);
  return -1;
}

int kdc_print_value(FILE *out, const kd_value *v) {
  if (!out || !v) {
    kd_set_error(KD_EINVAL, "print: NULL %s", out ? "value" : "output stream");
    return -1;
  }
  kdc_sbuf b = {NULL, 0, 0, false};
  if (append_value(&b, v) != 0) {
    kdc_sbuf_free(&b);
    return -1;
  }
  return flush_to(&b, out);
}
