/*
 * scalar.c: kd_scalar conversions and formatting.
 */
#include <math.h>
#include <stdio.h>

#include "core/internal.h"
#include "kd/scalar.h"

kd_dtype kd_scalar_dtype(const kd_scalar *s) {
  switch (s->kind) {
    case KD_SCALAR_BOOL:
      return KD_BOOL;
    case KD_SCALAR_INT:
      return KD_INT64;
    case KD_SCALAR_DOUBLE:
      return KD_FLOAT64;
    case KD_SCALAR_COMPLEX:
      return KD_COMPLEX128;
  }
  return KD_DTYPE_UNDEFINED;
}

double kd_scalar_to_double(const kd_scalar *s) {
  switch (s->kind) {
    case KD_SCALAR_BOOL:
      return s->v.b ? 1.0 : 0.0;
    case KD_SCALAR_INT:
      return (double)s->v.i;
    case KD_SCALAR_DOUBLE:
      return s->v.d;
    case KD_SCALAR_COMPLEX:
      return s->v.c.re;
  }
  return 0;
}

static int64_t double_to_int64_sat(double d) {
  if (isnan(d)) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}

int64_t kd_scalar_to_int64(const kd_scalar *s) {
  switch (s->kind) {
    case KD_SCALAR_BOOL:
      return s->v.b;
    case KD_SCALAR_INT:
      return s->v.i;
    case KD_SCALAR_DOUBLE:
      return double_to_int64_sat(s->v.d);
    case KD_SCALAR_COMPLEX:
      return double_to_int64_sat(s->v.c.re);
  }
  return 0;
}

static kd_status overflow(const kd_scalar *s, kd_dtype dtype) {
  char text[64];
  kd_scalar_format(s, text, sizeof text);
  return kd_set_error(KD_EOVERFLOW, "value %s cannot be converted to type %s without overflow",
                      text, kd_dtype_name(dtype));
}

/* c10's overflows<To, From> (c10/util/TypeCast.h), which Scalar::to<T>()
 * (checked_convert) applies:
 * - an integral source fits a signed target in [lowest, max]; an unsigned
 *   target (uint8) also takes negative values down to -max, which wrap
 *   modulo 2^8 as two's complement (-6 is 250), so that `a - b` can be
 *   computed as `a + 255 * b`;
 * - a floating source: infinities fit a target with infinities, NaN fits a
 *   target with NaN, anything else must lie within [lowest, max] (so -0.27
 *   does not fit uint8, 255.5 does not, 3.7 fits any integer type and is
 *   truncated toward zero);
 * - a complex source does not fit a real target when its imaginary part is
 *   non-zero; otherwise both parts are checked as floating values.
 * bool is not checked at all (Scalar::to<bool> is `!= 0`). */
static bool int_overflows(int64_t v, kd_dtype dt) {
  switch (dt) {
    case KD_UINT8:
      return v > UINT8_MAX || (v < 0 && 0u - (uint64_t)v > UINT8_MAX);
    case KD_INT8: return v < INT8_MIN || v > INT8_MAX;
    case KD_INT16: return v < INT16_MIN || v > INT16_MAX;
    case KD_INT32: return v < INT32_MIN || v > INT32_MAX;
    case KD_FLOAT16: return v < -65504 || v > 65504;
    default: return false; /* int64, bfloat16, float32, float64, complex: any int64 */
  }
}

static bool double_overflows(double d, kd_dtype dt) {
  bool fl = kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt);
  if (fl && (isinf(d) || isnan(d))) return false;
  if (isnan(d)) return true;
  switch (dt) {
    case KD_UINT8: return d < 0 || d > UINT8_MAX;
    case KD_INT8: return d < INT8_MIN || d > INT8_MAX;
    case KD_INT16: return d < INT16_MIN || d > INT16_MAX;
    case KD_INT32: return d < INT32_MIN || d > INT32_MAX;
    /* 2^63 itself is refused: c10 lets it through into an undefined cast */
    case KD_INT64: return d < -9223372036854775808.0 || d >= 9223372036854775808.0;
    case KD_FLOAT16: return fabs(d) > 65504.0;
    case KD_BFLOAT16: return fabs(d) > 3.3895313892515355e38;
    case KD_FLOAT32:
    case KD_COMPLEX64: return fabs(d) > 3.4028234663852886e38;
    default: return false; /* float64, complex128 */
  }
}

/* The value as an integer of a (checked) integral target: int sources wrap
 * modulo 2^64 (then the store truncates to the width), floating ones are
 * truncated toward zero. */
static int64_t integral_value(const kd_scalar *s) {
  if (s->kind == KD_SCALAR_INT || s->kind == KD_SCALAR_BOOL) return kd_scalar_to_int64(s);
  return (int64_t)kd_scalar_to_double(s);
}

kd_status kd_scalar_to_element(const kd_scalar *s, kd_dtype dtype, void *dst) {
  if (!s || !dst) return kd_set_error(KD_EINVAL, "kd_scalar_to_element: NULL argument");
  if (!kd_dtype_valid(dtype))
    return kd_set_error(KD_EINVAL, "kd_scalar_to_element: invalid dtype %d", (int)dtype);
  if (dtype == KD_BOOL) {
    bool b = s->kind == KD_SCALAR_COMPLEX ? (s->v.c.re != 0 || s->v.c.im != 0)
             : s->kind == KD_SCALAR_INT   ? s->v.i != 0
             : s->kind == KD_SCALAR_BOOL  ? s->v.b
                                          : s->v.d != 0;
    *(uint8_t *)dst = b;
    return KD_OK;
  }
  if (s->kind == KD_SCALAR_COMPLEX && s->v.c.im != 0 && !kd_dtype_is_complex(dtype)) {
    char text[64];
    kd_scalar_format(s, text, sizeof text);
    return kd_set_error(KD_ETYPE,
                        "value %s cannot be converted to type %s: it has an imaginary part",
                        text, kd_dtype_name(dtype));
  }
  double d = kd_scalar_to_double(s);
  double im = s->kind == KD_SCALAR_COMPLEX ? s->v.c.im : 0;
  bool bad = s->kind == KD_SCALAR_INT    ? int_overflows(s->v.i, dtype)
             : s->kind == KD_SCALAR_BOOL ? false
                                         : double_overflows(d, dtype) || double_overflows(im, dtype);
  if (bad) return overflow(s, dtype);
  switch (dtype) {
    case KD_UINT8: *(uint8_t *)dst = (uint8_t)(uint64_t)integral_value(s); return KD_OK;
    case KD_INT8: *(int8_t *)dst = (int8_t)integral_value(s); return KD_OK;
    case KD_INT16: *(int16_t *)dst = (int16_t)integral_value(s); return KD_OK;
    case KD_INT32: *(int32_t *)dst = (int32_t)integral_value(s); return KD_OK;
    case KD_INT64: *(int64_t *)dst = integral_value(s); return KD_OK;
    case KD_FLOAT16: *(uint16_t *)dst = kd_float_to_half((float)d); return KD_OK;
    case KD_BFLOAT16: *(uint16_t *)dst = kd_float_to_bfloat16((float)d); return KD_OK;
    case KD_FLOAT32: *(float *)dst = (float)d; return KD_OK;
    case KD_FLOAT64: *(double *)dst = d; return KD_OK;
    case KD_COMPLEX64: {
      float *f = dst;
      f[0] = (float)d;
      f[1] = (float)im;
      return KD_OK;
    }
    case KD_COMPLEX128: {
      double *p = dst;
      p[0] = d;
      p[1] = im;
      return KD_OK;
    }
    default: break;
  }
  return kd_set_error(KD_EINVAL, "kd_scalar_to_element: invalid dtype %d", (int)dtype);
}

kd_status kd_scalar_from_element(const void *src, kd_dtype dtype, kd_scalar *out) {
  if (!src || !out) return kd_set_error(KD_EINVAL, "kd_scalar_from_element: NULL argument");
  switch (dtype) {
    case KD_BOOL:
      *out = kd_scalar_bool(*(const uint8_t *)src != 0);
      return KD_OK;
    case KD_UINT8:
      *out = kd_scalar_int(*(const uint8_t *)src);
      return KD_OK;
    case KD_INT8:
      *out = kd_scalar_int(*(const int8_t *)src);
      return KD_OK;
    case KD_INT16:
      *out = kd_scalar_int(*(const int16_t *)src);
      return KD_OK;
    case KD_INT32:
      *out = kd_scalar_int(*(const int32_t *)src);
      return KD_OK;
    case KD_INT64:
      *out = kd_scalar_int(*(const int64_t *)src);
      return KD_OK;
    case KD_FLOAT16:
      *out = kd_scalar_double(kd_half_to_float(*(const uint16_t *)src));
      return KD_OK;
    case KD_BFLOAT16:
      *out = kd_scalar_double(kd_bfloat16_to_float(*(const uint16_t *)src));
      return KD_OK;
    case KD_FLOAT32:
      *out = kd_scalar_double(*(const float *)src);
      return KD_OK;
    case KD_FLOAT64:
      *out = kd_scalar_double(*(const double *)src);
      return KD_OK;
    case KD_COMPLEX64: {
      const float *f = src;
      *out = kd_scalar_complex(f[0], f[1]);
      return KD_OK;
    }
    case KD_COMPLEX128: {
      const double *p = src;
      *out = kd_scalar_complex(p[0], p[1]);
      return KD_OK;
    }
    default:
      break;
  }
  return kd_set_error(KD_EINVAL, "kd_scalar_from_element: invalid dtype %d", (int)dtype);
}

/* A double as Python's repr prints it: the shortest digits that read back
 * the same, positional for exponents -4..15 and scientific otherwise,
 * "inf"/"nan", and ".0" on integral values unless `bare` (complex parts). */
static void format_double(kd__fmt *f, double d, bool bare) {
  if (isnan(d)) {
    kd__fmt_puts(f, "nan");
    return;
  }
  if (isinf(d)) {
    kd__fmt_puts(f, d < 0 ? "-inf" : "inf");
    return;
  }
  char sci[48];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(sci, sizeof sci, "%.*e", prec - 1, d);
    if (strtod(sci, NULL) == d) break;
  }
  const char *e = strchr(sci, 'e');
  int exp = e ? atoi(e + 1) : 0;
  char tmp[400];
  if (exp >= -4 && exp < 16) {
    int decimals = prec - 1 - exp;
    snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, d);
    kd__fmt_puts(f, tmp);
    if (decimals <= 0 && !bare) kd__fmt_puts(f, ".0");
    return;
  }
  kd__fmt_puts(f, sci); /* C writes e-05 / e+16, as Python does */
}

size_t kd_scalar_format(const kd_scalar *s, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  switch (s->kind) {
    case KD_SCALAR_BOOL:
      kd__fmt_puts(&f, s->v.b ? "True" : "False");
      break;
    case KD_SCALAR_INT:
      kd__fmt_printf(&f, "%lld", (long long)s->v.i);
      break;
    case KD_SCALAR_DOUBLE:
      format_double(&f, s->v.d, false);
      break;
    case KD_SCALAR_COMPLEX:
      /* Python: (1+2j), 2j when the real part is zero. */
      if (s->v.c.re == 0 && !signbit(s->v.c.re)) {
        format_double(&f, s->v.c.im, true);
        kd__fmt_puts(&f, "j");
      } else {
        kd__fmt_puts(&f, "(");
        format_double(&f, s->v.c.re, true);
        /* format_double writes the minus sign (of -0.0 too) and none for
         * nan, whose sign Python ignores. */
        if (isnan(s->v.c.im) || !signbit(s->v.c.im)) kd__fmt_puts(&f, "+");
        format_double(&f, s->v.c.im, true);
        kd__fmt_puts(&f, "j)");
      }
      break;
  }
  return f.len;
}

bool kd_scalar_equal(const kd_scalar *a, const kd_scalar *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case KD_SCALAR_BOOL:
      return a->v.b == b->v.b;
    case KD_SCALAR_INT:
      return a->v.i == b->v.i;
    case KD_SCALAR_DOUBLE:
      return a->v.d == b->v.d;
    case KD_SCALAR_COMPLEX:
      return a->v.c.re == b->v.c.re && a->v.c.im == b->v.c.im;
  }
  return false;
}
