/*
 * scalar.h: kd_scalar, a number that is a bool, an int64, a double or a complex.
 * A plain value type: copy it freely, nothing to free.
 */
#ifndef KD_SCALAR_H
#define KD_SCALAR_H

#include "kd/common.h"
#include "kd/dtype.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

typedef enum kd_scalar_kind {
  KD_SCALAR_BOOL = 0,
  KD_SCALAR_INT = 1,     /* int64_t */
  KD_SCALAR_DOUBLE = 2,  /* double */
  KD_SCALAR_COMPLEX = 3, /* two doubles */
} kd_scalar_kind;

typedef struct kd_scalar {
  kd_scalar_kind kind; /* which member of v is set */
  union {
    bool b;
    int64_t i;
    double d;
    struct {
      double re, im;
    } c;
  } v;
} kd_scalar;

static inline kd_scalar kd_scalar_bool(bool b) {
  kd_scalar s;
  s.kind = KD_SCALAR_BOOL;
  s.v.c.re = 0;
  s.v.c.im = 0;
  s.v.b = b;
  return s;
}
static inline kd_scalar kd_scalar_int(int64_t i) {
  kd_scalar s;
  s.kind = KD_SCALAR_INT;
  s.v.c.im = 0;
  s.v.i = i;
  return s;
}
static inline kd_scalar kd_scalar_double(double d) {
  kd_scalar s;
  s.kind = KD_SCALAR_DOUBLE;
  s.v.c.im = 0;
  s.v.d = d;
  return s;
}
static inline kd_scalar kd_scalar_complex(double re, double im) {
  kd_scalar s;
  s.kind = KD_SCALAR_COMPLEX;
  s.v.c.re = re;
  s.v.c.im = im;
  return s;
}

/* The scalar's own dtype: bool, int64, float64 or complex128. */
KD_API kd_dtype kd_scalar_dtype(const kd_scalar *s);

/* The value as a double / int64 (bool as 0 or 1; the real part of a complex;
 * a double truncated toward zero). */
KD_API double kd_scalar_to_double(const kd_scalar *s);
KD_API int64_t kd_scalar_to_int64(const kd_scalar *s);

/* Writes the value as one element of `dtype` at `dst` (which must hold
 * kd_dtype_size(dtype) bytes), as PyTorch 1.13's checked conversion
 * (Scalar::to<T>, c10's checked_convert) does: an integer must lie within
 * the type's range, except that uint8 also takes -255..-1, which wrap (-6 is
 * 250); a floating value must lie within [lowest, max] of the type (-0.27 or
 * 255.5 do not fit uint8; 3.7 fits and is truncated toward zero), NaN and
 * infinities fit only floating and complex types; a float64 beyond float32's
 * range does not fit float32 (nor float16 / bfloat16 beyond theirs).
 * KD_EOVERFLOW when the value does not fit ("value 300 cannot be converted to
 * type int8 without overflow"); KD_ETYPE for a complex value with a non-zero
 * imaginary part into a real type; KD_EINVAL for an invalid dtype. Any value
 * converts to bool (non-zero is true, NaN too). On error `dst` is untouched. */
KD_API kd_status kd_scalar_to_element(const kd_scalar *s, kd_dtype dtype, void *dst);

/* Reads one element of `dtype` at `src` into a scalar of the matching kind. */
KD_API kd_status kd_scalar_from_element(const void *src, kd_dtype dtype, kd_scalar *out);

/* Formats as PyTorch prints a Python number: "True", "3", "2.5", "1e-05",
 * "(1+2j)". Returns the length it needs (not counting the NUL), as snprintf;
 * writes at most `cap` bytes, always NUL-terminated when cap > 0. */
KD_API size_t kd_scalar_format(const kd_scalar *s, char *buf, size_t cap);

/* True when both hold the same kind and value (NaN is never equal). */
KD_API bool kd_scalar_equal(const kd_scalar *a, const kd_scalar *b);

KD_EXTERN_C_END

#endif /* KD_SCALAR_H */
