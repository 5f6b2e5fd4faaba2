/*
 * binary.c: the loops of the pointwise binary operators (native/binary.h),
 * compiled once per CPU capability.
 *
 * A loop is a 2-d loop of the iterator: `n0` elements along the inner
 * dimension, `n1` rows; strides are in bytes, the inner ones first
 * (strides[t]) and then the outer ones (strides[nt + t]). Each loop is one
 * macro instantiated per dtype from flat X-macro lists; the inner loop has
 * three unit-stride fast paths (all contiguous, first input a broadcast
 * scalar, second input a broadcast scalar) written as plain counted loops
 * over restrict pointers, which the compiler vectorises, and one strided
 * path.
 *
 * float16 and bfloat16 are computed in float32 (loaded and stored through
 * the inline conversions below, which round as kd_float_to_half does);
 * complex numbers are pairs of floats or doubles.
 *
 * Loops that can fail (integer division by zero) set a flag in the context;
 * the kernel turns it into "ZeroDivisionError" after the iteration.
 */
#include <complex.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "native/binary.h"
#include "select.h"

/* ---- Element conversions ---------------------------------------------------------- */

static inline float h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, bits;
  if (em >= 0x7c00u) {
    bits = sign | 0x7f800000u | ((em & 0x3ffu) << 13);
  } else if (em >= 0x400u) {
    bits = sign | ((em << 13) + (112u << 23));
  } else {
    float v = (float)em * 5.9604644775390625e-8f; /* 2^-24 */
    memcpy(&bits, &v, 4);
    bits |= sign;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t f2h(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u)
    return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    float a;
    memcpy(&a, &abs, 4);
    return (uint16_t)(sign | (uint16_t)nearbyintf(a * 16777216.0f));
  }
  uint32_t h = (((abs >> 23) - 112u) << 10) | ((abs & 0x7fffffu) >> 13);
  uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static inline float bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#define KDK__ID(x) (x)

typedef struct kdk__c64 {
  float re, im;
} kdk__c64;
typedef struct kdk__c128 {
  double re, im;
} kdk__c128;

/* ---- The loop context ----------------------------------------------------------- */

typedef struct bin_ctx {
  int64_t i0, i1;       /* integral parameters (alpha, min, max, exponent) */
  double f0, f1;        /* floating parameters */
  double c0re, c0im;    /* a complex parameter */
  unsigned char v[16];  /* masked_fill's value, as an element */
  atomic_int bad;       /* an integer division by zero happened */
} bin_ctx;

typedef void loop2d_fn(void *ctx, char **data, const int64_t *strides, int64_t n0, int64_t n1);

/* ---- Loop shapes ----------------------------------------------------------------- */

/* out (OT) = ST(EXPR) where a and b are the inputs (T) loaded as C. */
#define KDK__BIN_LOOP(NAME, T, C, LD, OT, ST, EXPR)                                             \
  static void NAME(void *ctx_, char **data, const int64_t *strides, int64_t n0, int64_t n1) {  \
    bin_ctx *p = ctx_;                                                                         \
    int bad = 0;                                                                               \
    (void)p;                                                                                   \
    const int64_t so = strides[0], sa = strides[1], sb = strides[2];                           \
    const int64_t to = (int64_t)sizeof(OT), ti = (int64_t)sizeof(T);                           \
    for (int64_t j = 0; j < n1; j++) {                                                         \
      char *od = data[0] + j * strides[3];                                                     \
      const char *ad = data[1] + j * strides[4];                                               \
      const char *bd = data[2] + j * strides[5];                                               \
      OT *restrict o = (OT *)(void *)od;                                                       \
      const T *restrict x = (const T *)(const void *)ad;                                       \
      const T *restrict y = (const T *)(const void *)bd;                                       \
      if (so == to && sa == ti && sb == ti) {                                                  \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(x[i]);                                                                \
          const C b = LD(y[i]);                                                                \
          o[i] = ST(EXPR);                                                                     \
        }                                                                                      \
      } else if (so == to && sa == 0 && sb == ti) {                                            \
        const C a = LD(x[0]);                                                                  \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C b = LD(y[i]);                                                                \
          o[i] = ST(EXPR);                                                                     \
        }                                                                                      \
      } else if (so == to && sa == ti && sb == 0) {                                            \
        const C b = LD(y[0]);                                                                  \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(x[i]);                                                                \
          o[i] = ST(EXPR);                                                                     \
        }                                                                                      \
      } else {                                                                                 \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(*(const T *)(const void *)(ad + i * sa));                             \
          const C b = LD(*(const T *)(const void *)(bd + i * sb));                             \
          *(OT *)(void *)(od + i * so) = ST(EXPR);                                             \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    if (bad) atomic_store(&p->bad, 1);                                                         \
  }

/* out (T) = ST(EXPR) of one input a (T loaded as C). */
#define KDK__UN_LOOP(NAME, T, C, LD, ST, EXPR)                                                  \
  static void NAME(void *ctx_, char **data, const int64_t *strides, int64_t n0, int64_t n1) {  \
    bin_ctx *p = ctx_;                                                                         \
    (void)p;                                                                                   \
    const int64_t so = strides[0], sa = strides[1], t = (int64_t)sizeof(T);                    \
    for (int64_t j = 0; j < n1; j++) {                                                         \
      char *od = data[0] + j * strides[2];                                                     \
      const char *ad = data[1] + j * strides[3];                                               \
      if (so == t && sa == t) {                                                                \
        T *restrict o = (T *)(void *)od;                                                       \
        const T *restrict x = (const T *)(const void *)ad;                                     \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(x[i]);                                                                \
          o[i] = ST(EXPR);                                                                     \
        }                                                                                      \
      } else {                                                                                 \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(*(const T *)(const void *)(ad + i * sa));                             \
          *(T *)(void *)(od + i * so) = ST(EXPR);                                              \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

/* out (T) = ST(EXPR) of three inputs a, b, c (T loaded as C). */
#define KDK__TER_LOOP(NAME, T, C, LD, ST, EXPR)                                                 \
  static void NAME(void *ctx_, char **data, const int64_t *strides, int64_t n0, int64_t n1) {  \
    bin_ctx *p = ctx_;                                                                         \
    (void)p;                                                                                   \
    const int64_t t = (int64_t)sizeof(T);                                                      \
    for (int64_t j = 0; j < n1; j++) {                                                         \
      char *od = data[0] + j * strides[4];                                                     \
      const char *ad = data[1] + j * strides[5], *bd = data[2] + j * strides[6];               \
      const char *cd = data[3] + j * strides[7];                                               \
      if (strides[0] == t && strides[1] == t && strides[2] == t && strides[3] == t) {          \
        T *restrict o = (T *)(void *)od;                                                       \
        const T *restrict x = (const T *)(const void *)ad;                                     \
        const T *restrict y = (const T *)(const void *)bd;                                     \
        const T *restrict z = (const T *)(const void *)cd;                                     \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(x[i]), b = LD(y[i]), c = LD(z[i]);                                    \
          o[i] = ST(EXPR);                                                                     \
        }                                                                                      \
      } else {                                                                                 \
        for (int64_t i = 0; i < n0; i++) {                                                     \
          const C a = LD(*(const T *)(const void *)(ad + i * strides[1]));                     \
          const C b = LD(*(const T *)(const void *)(bd + i * strides[2]));                     \
          const C c = LD(*(const T *)(const void *)(cd + i * strides[3]));                     \
          *(T *)(void *)(od + i * strides[0]) = ST(EXPR);                                      \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

/* ---- Dtype lists (flat X-macros; `op` is passed through) ------------------------------ */

/* X(op, suffix, dtype, T, U): U is the unsigned type integer arithmetic wraps in. */
#define KDK__INTS(X, op)                       \
  X(op, u8, KD_UINT8, uint8_t, uint32_t)      \
  X(op, i8, KD_INT8, int8_t, uint32_t)        \
  X(op, i16, KD_INT16, int16_t, uint32_t)     \
  X(op, i32, KD_INT32, int32_t, uint32_t)     \
  X(op, i64, KD_INT64, int64_t, uint64_t)

/* The signed ones (for the Python-style division and remainder). */
/* X(op, suffix, dtype, T, C, LD, ST): C is the type computed in. */
#define KDK__FLTS(X, op)                                  \
  X(op, f32, KD_FLOAT32, float, float, KDK__ID, KDK__ID)   \
  X(op, f64, KD_FLOAT64, double, double, KDK__ID, KDK__ID) \
  X(op, f16, KD_FLOAT16, uint16_t, float, h2f, f2h)      \
  X(op, bf16, KD_BFLOAT16, uint16_t, float, bf2f, f2bf)

/* X(op, suffix, dtype, T, R): R is the part type. */
#define KDK__CPXS(X, op)                           \
  X(op, c64, KD_COMPLEX64, kdk__c64, float)        \
  X(op, c128, KD_COMPLEX128, kdk__c128, double)

/* Table entries: [dtype] = op_suffix. */
#define KDK__TBL(op, s, E, ...) [E] = op##_##s,

/* ---- Scalar helpers ---------------------------------------------------------------- */

/* GCC 12 vectorises complex products into fused multiply-add-subtract
 * instructions even with -ffp-contract=off, so the AVX2/AVX-512 builds would
 * round differently from the baseline one. The complex loops that multiply are
 * compiled without vectorisation: every capability gives the same bits. */
#if defined(__GNUC__) && !defined(__clang__)
#define KDK__CPX_EXACT_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"no-tree-vectorize\")")
#define KDK__CPX_EXACT_END _Pragma("GCC pop_options")
#else
#define KDK__CPX_EXACT_BEGIN
#define KDK__CPX_EXACT_END
#endif

#define KDK__CPX_HELPERS(op, s, E, T, R)                                                    \
  static inline T cadd_##s(T a, T b) { return (T){a.re + b.re, a.im + b.im}; }            \
  static inline T cmul_##s(T a, T b) {                                                    \
    return (T){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};                     \
  }                                                                                       \
  /* c10::complex's division (numpy's algorithm, scale in double) */                     \
  static inline T cdiv_##s(T x, T y) {                                                    \
    R a = x.re, b = x.im, c = y.re, d = y.im;                                             \
    R ac = c < 0 ? -c : c, ad = d < 0 ? -d : d;                                           \
    if (ac >= ad) {                                                                       \
      if (ac == 0 && ad == 0) return (T){a / ac, b / ad};                                 \
      R rat = d / c;                                                                      \
      R scl = (R)(1.0 / (double)(c + d * rat));                                           \
      return (T){(a + b * rat) * scl, (b - a * rat) * scl};                               \
    }                                                                                     \
    R rat = c / d;                                                                        \
    R scl = (R)(1.0 / (double)(d + c * rat));                                             \
    return (T){(a * rat + b) * scl, (b * rat - a) * scl};                                 \
  }
KDK__CPXS(KDK__CPX_HELPERS, _)

/* C's complex types are laid out as two reals, as these structs are. */
static inline kdk__c64 cpow_c64(kdk__c64 a, kdk__c64 b) {
  float _Complex x, y, r;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  r = cpowf(x, y);
  return (kdk__c64){crealf(r), cimagf(r)};
}
static inline kdk__c128 cpow_c128(kdk__c128 a, kdk__c128 b) {
  double _Complex x, y, r;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  r = cpow(x, y);
  return (kdk__c128){creal(r), cimag(r)};
}

/* x < 0 without -Wtype-limits warnings in code shared by unsigned types. */
static inline bool isneg(int64_t x) { return x < 0; }

/* Integer helpers: wrapping arithmetic through U; division guards. */
#define KDK__INT_HELPERS(op, s, E, T, U)                                                    \
  static inline T idiv_trunc_##s(T a, T b, int *bad) {                                    \
    if (b == 0) {                                                                         \
      *bad = 1;                                                                           \
      return 0;                                                                           \
    }                                                                                     \
    if (isneg((int64_t)(T)-1) && b == (T)-1) return (T)(0u - (U)a);                                   \
    return (T)(a / b);                                                                    \
  }                                                                                       \
  static inline T idiv_floor_##s(T a, T b, int *bad) {                                    \
    if (b == 0) {                                                                         \
      *bad = 1;                                                                           \
      return 0;                                                                           \
    }                                                                                     \
    if (isneg((int64_t)(T)-1) && b == (T)-1) return (T)(0u - (U)a);                                   \
    if (isneg((int64_t)a) != isneg((int64_t)b)) {                                                             \
      T q = (T)(a / b), r = (T)(a % b);                                                   \
      return r ? (T)(q - 1) : q;                                                          \
    }                                                                                     \
    return (T)(a / b);                                                                    \
  }                                                                                       \
  static inline T irem_##s(T a, T b, int *bad) {                                          \
    if (b == 0) {                                                                         \
      *bad = 1;                                                                           \
      return 0;                                                                           \
    }                                                                                     \
    if (isneg((int64_t)(T)-1) && b == (T)-1) return 0;                                                \
    T r = (T)(a % b);                                                                     \
    if (r != 0 && (isneg((int64_t)r) != isneg((int64_t)b))) r = (T)(r + b);                                   \
    return r;                                                                             \
  }                                                                                       \
  static inline T ipow_##s(T a, T b) {                                                    \
    if (isneg((int64_t)(T)-1) && isneg((int64_t)b)) {                                                             \
      if (a == 1) return 1;                                                               \
      if (a == (T)-1) return (b % 2) ? (T)-1 : (T)1;                                      \
      return 0;                                                                           \
    }                                                                                     \
    U r = 1, x = (U)a;                                                                    \
    while (b) {                                                                           \
      if (b & 1) r *= x;                                                                  \
      b = (T)(b / 2);                                                                     \
      x *= x;                                                                             \
    }                                                                                     \
    return (T)r;                                                                          \
  }                                                                                       \
  static inline T ilshift_##s(T a, T b) {                                                 \
    if (isneg((int64_t)b) || b >= (T)(sizeof(T) * 8)) return 0;                                      \
    return (T)((U)a << b);                                                                \
  }                                                                                       \
  static inline T irshift_##s(T a, T b) {                                                 \
    const T max_shift = (T)(sizeof(T) * 8 - (isneg((int64_t)(T)-1) ? 1 : 0));                        \
    if (isneg((int64_t)b) || b >= max_shift) return (T)(a >> max_shift);                              \
    return (T)(a >> b);                                                                   \
  }
KDK__INTS(KDK__INT_HELPERS, _)

static inline double div_floor_f64(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
  double fl;
  if (div != 0) {
    fl = floor(div);
    if (div - fl > 0.5) fl += 1.0;
  } else {
    fl = copysign(0.0, a / b);
  }
  return fl;
}
static inline float div_floor_f32(float a, float b) {
  if (b == 0) return a / b;
  float mod = fmodf(a, b);
  float div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0f;
  float fl;
  if (div != 0) {
    fl = floorf(div);
    if (div - fl > 0.5f) fl += 1.0f;
  } else {
    fl = copysignf(0.0f, a / b);
  }
  return fl;
}
static inline double frem_f64(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
}
static inline float frem_f32(float a, float b) {
  float m = fmodf(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
}

/* Type-generic picks of the float helpers by compute type C. */
#define KDK__FSEL(C, f32fn, f64fn) _Generic((C)0, float: f32fn, double: f64fn)

/* pow with PyTorch's special exponents (Tensor_Scalar). */
static inline double pow_scalar_f64(double a, double e) {
  if (e == 2.0) return a * a;
  if (e == 3.0) return a * a * a;
  if (e == 0.5) return sqrt(a);
  if (e == -0.5) return 1.0 / sqrt(a);
  if (e == -1.0) return 1.0 / a;
  if (e == -2.0) return 1.0 / (a * a);
  return pow(a, e);
}
static inline float pow_scalar_f32(float a, float e) {
  if (e == 2.0f) return a * a;
  if (e == 3.0f) return a * a * a;
  if (e == 0.5f) return sqrtf(a);
  if (e == -0.5f) return 1.0f / sqrtf(a);
  if (e == -1.0f) return 1.0f / a;
  if (e == -2.0f) return 1.0f / (a * a);
  return powf(a, e);
}

/* ---- The loops ------------------------------------------------------------------- */

/* Arithmetic */
#define L_ADD_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, (T)((U)a + (U)b * (U)p->i0))
#define L_ADD_F(op, s, E, T, C, LD, ST) KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, (C)(a + (C)p->f0 * b))
#define L_ADD_C(op, s, E, T, R) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, cadd_##s(a, cmul_##s((T){(R)p->c0re, (R)p->c0im}, b)))
KDK__INTS(L_ADD_I, add)
KDK__FLTS(L_ADD_F, add)
KDK__CPX_EXACT_BEGIN
KDK__CPXS(L_ADD_C, add)
KDK__CPX_EXACT_END
KDK__BIN_LOOP(add_b, bool, bool, KDK__ID, bool, KDK__ID, a || (b && p->i0))
/* alpha == 1, the common call: a + b, no parameter to convert. The same
 * values as the loops above with alpha 1 (1 * b is b exactly for integers and
 * reals; complex numbers keep the loops above, where (1+0j) * b is not b
 * when b has an infinite part). */
#define L_ADD1_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, (T)((U)a + (U)b))
#define L_ADD1_F(op, s, E, T, C, LD, ST) KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, (C)(a + b))
KDK__INTS(L_ADD1_I, add1)
KDK__FLTS(L_ADD1_F, add1)
KDK__BIN_LOOP(add1_b, bool, bool, KDK__ID, bool, KDK__ID, a || b)

#define L_MUL_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, (T)((U)a * (U)b))
#define L_MUL_F(op, s, E, T, C, LD, ST) KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, (C)(a * b))
#define L_MUL_C(op, s, E, T, R) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, cmul_##s(a, b))
KDK__INTS(L_MUL_I, mul)
KDK__FLTS(L_MUL_F, mul)
KDK__CPX_EXACT_BEGIN
KDK__CPXS(L_MUL_C, mul)
KDK__CPX_EXACT_END
KDK__BIN_LOOP(mul_b, bool, bool, KDK__ID, bool, KDK__ID, a && b)

#define L_DIV_F(op, s, E, T, C, LD, ST) KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, (C)(a / b))
#define L_DIV_C(op, s, E, T, R) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, cdiv_##s(a, b))
KDK__FLTS(L_DIV_F, divt)
KDK__CPX_EXACT_BEGIN
KDK__CPXS(L_DIV_C, divt)
KDK__CPX_EXACT_END

#define L_TRUNC_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, idiv_trunc_##s(a, b, &bad))
#define L_TRUNC_F(op, s, E, T, C, LD, ST) \
  KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, KDK__FSEL(C, truncf, trunc)(a / b))
KDK__INTS(L_TRUNC_I, divtr)
KDK__FLTS(L_TRUNC_F, divtr)

#define L_FLOOR_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, idiv_floor_##s(a, b, &bad))
#define L_FLOOR_F(op, s, E, T, C, LD, ST) \
  KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, KDK__FSEL(C, div_floor_f32, div_floor_f64)(a, b))
KDK__INTS(L_FLOOR_I, divfl)
KDK__FLTS(L_FLOOR_F, divfl)

#define L_REM_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, irem_##s(a, b, &bad))
#define L_REM_F(op, s, E, T, C, LD, ST) \
  KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, KDK__FSEL(C, frem_f32, frem_f64)(a, b))
KDK__INTS(L_REM_I, rem)
KDK__FLTS(L_REM_F, rem)

/* Integer division guard: sets the context's flag when the divisor (input
 * 1, operand 2) has a zero, without writing anything. Run before the
 * division loops so that a failing call leaves its output (self for the
 * in-place forms) as it was, as PyTorch does (it checks an element before
 * storing it). */
#define L_ZCHK_I(op, s, E, T, U)                                                               \
  static void op##_##s(void *ctx_, char **data, const int64_t *strides, int64_t n0, int64_t n1) { \
    bin_ctx *p = ctx_;                                                                         \
    for (int64_t j = 0; j < n1; j++) {                                                         \
      const char *bd = data[2] + j * strides[5];                                               \
      for (int64_t i = 0; i < n0; i++)                                                         \
        if (*(const T *)(const void *)(bd + i * strides[2]) == 0) {                            \
          atomic_store(&p->bad, 1);                                                            \
          return;                                                                              \
        }                                                                                      \
    }                                                                                          \
  }
KDK__INTS(L_ZCHK_I, zchk)

#define L_ATAN2_F(op, s, E, T, C, LD, ST) \
  KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, KDK__FSEL(C, atan2f, atan2)(a, b))
KDK__FLTS(L_ATAN2_F, atan2)

/* maximum / minimum: std::max / std::min, NaN when either is NaN */
#define L_MAX_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, (a < b) ? b : a)
#define L_MAX_F(op, s, E, T, C, LD, ST) \
  KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, (a != a || b != b) ? (C)NAN : ((a < b) ? b : a))
KDK__INTS(L_MAX_I, max)
KDK__FLTS(L_MAX_F, max)
KDK__BIN_LOOP(max_b, bool, bool, KDK__ID, bool, KDK__ID, a || b)
#define L_MIN_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, (b < a) ? b : a)
#define L_MIN_F(op, s, E, T, C, LD, ST) \
  KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, (a != a || b != b) ? (C)NAN : ((b < a) ? b : a))
KDK__INTS(L_MIN_I, min)
KDK__FLTS(L_MIN_F, min)
KDK__BIN_LOOP(min_b, bool, bool, KDK__ID, bool, KDK__ID, a && b)

/* pow */
#define L_POW_I(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, ipow_##s(a, b))
#define L_POW_F(op, s, E, T, C, LD, ST) KDK__BIN_LOOP(op##_##s, T, C, LD, T, ST, KDK__FSEL(C, powf, pow)(a, b))
#define L_POW_C(op, s, E, T, R) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, cpow_##s(a, b))
KDK__INTS(L_POW_I, pow)
KDK__FLTS(L_POW_F, pow)
KDK__CPX_EXACT_BEGIN
KDK__CPXS(L_POW_C, pow)
KDK__CPX_EXACT_END

#define L_POWS_I(op, s, E, T, U) KDK__UN_LOOP(op##_##s, T, T, KDK__ID, KDK__ID, ipow_##s(a, (T)p->i0))
#define L_POWS_F(op, s, E, T, C, LD, ST) \
  KDK__UN_LOOP(op##_##s, T, C, LD, ST, KDK__FSEL(C, pow_scalar_f32, pow_scalar_f64)(a, (C)p->f0))
#define L_POWS_C(op, s, E, T, R) KDK__UN_LOOP(op##_##s, T, T, KDK__ID, KDK__ID, cpow_##s(a, (T){(R)p->c0re, (R)p->c0im}))
KDK__INTS(L_POWS_I, pows)
KDK__FLTS(L_POWS_F, pows)
KDK__CPX_EXACT_BEGIN
KDK__CPXS(L_POWS_C, pows)
KDK__CPX_EXACT_END

/* Bitwise (integers and bool) */
#define L_BIT(op, s, E, T, U, OPER) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, (T)(a OPER b))
#define L_AND(op, s, E, T, U) L_BIT(op, s, E, T, U, &)
#define L_OR(op, s, E, T, U) L_BIT(op, s, E, T, U, |)
#define L_XOR(op, s, E, T, U) L_BIT(op, s, E, T, U, ^)
KDK__INTS(L_AND, band)
KDK__INTS(L_OR, bor)
KDK__INTS(L_XOR, bxor)
KDK__BIN_LOOP(band_b, bool, bool, KDK__ID, bool, KDK__ID, a && b)
KDK__BIN_LOOP(bor_b, bool, bool, KDK__ID, bool, KDK__ID, a || b)
KDK__BIN_LOOP(bxor_b, bool, bool, KDK__ID, bool, KDK__ID, a != b)
#define L_LSH(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, ilshift_##s(a, b))
#define L_RSH(op, s, E, T, U) KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, T, KDK__ID, irshift_##s(a, b))
KDK__INTS(L_LSH, lsh)
KDK__INTS(L_RSH, rsh)

/* Comparisons: two loops per dtype, one writing bool (op_s) and one writing
 * the inputs' dtype (op_s_same: in-place and out= of that dtype). */
#define KDK__CMP_LOOPS(op, OPER)                                                                   \
  KDK__BIN_LOOP(op##_b, bool, bool, KDK__ID, bool, KDK__ID, a OPER b)                               \
  KDK__BIN_LOOP(op##_b_same, bool, bool, KDK__ID, bool, KDK__ID, a OPER b)                          \
  KDK__INTS(KDK__CMP_I, op)                                                                       \
  KDK__FLTS(KDK__CMP_F, op)
#define KDK__CMP_I(op, s, E, T, U)                                          \
  KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, bool, KDK__ID, KDK__OPER_##op(a, b)) \
  KDK__BIN_LOOP(op##_##s##_same, T, T, KDK__ID, T, KDK__ID, (T)KDK__OPER_##op(a, b))
#define KDK__CMP_F(op, s, E, T, C, LD, ST)                                  \
  KDK__BIN_LOOP(op##_##s, T, C, LD, bool, KDK__ID, KDK__OPER_##op(a, b))     \
  KDK__BIN_LOOP(op##_##s##_same, T, C, LD, T, ST, (C)KDK__OPER_##op(a, b))
#define KDK__OPER_eq(a, b) ((a) == (b))
#define KDK__OPER_ne(a, b) ((a) != (b))
#define KDK__OPER_lt(a, b) ((a) < (b))
#define KDK__OPER_le(a, b) ((a) <= (b))
#define KDK__OPER_gt(a, b) ((a) > (b))
#define KDK__OPER_ge(a, b) ((a) >= (b))
KDK__CMP_LOOPS(eq, ==)
KDK__CMP_LOOPS(ne, !=)
KDK__CMP_LOOPS(lt, <)
KDK__CMP_LOOPS(le, <=)
KDK__CMP_LOOPS(gt, >)
KDK__CMP_LOOPS(ge, >=)
#define L_CEQ(op, s, E, T, R)                                                                  \
  KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, bool, KDK__ID, a.re == b.re && a.im == b.im)             \
  KDK__BIN_LOOP(op##_##s##_same, T, T, KDK__ID, T, KDK__ID, ((T){(R)(a.re == b.re && a.im == b.im), 0}))
#define L_CNE(op, s, E, T, R)                                                                  \
  KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, bool, KDK__ID, a.re != b.re || a.im != b.im)             \
  KDK__BIN_LOOP(op##_##s##_same, T, T, KDK__ID, T, KDK__ID, ((T){(R)(a.re != b.re || a.im != b.im), 0}))
KDK__CPXS(L_CEQ, eq)
KDK__CPXS(L_CNE, ne)

/* Logical: non-zero is true; complex numbers are true when either part is. */
#define KDK__LOGIC_LOOPS(op, EXPR_OF)                                                  \
  KDK__BIN_LOOP(op##_b, bool, bool, KDK__ID, bool, KDK__ID, EXPR_OF(a, b))               \
  KDK__BIN_LOOP(op##_b_same, bool, bool, KDK__ID, bool, KDK__ID, EXPR_OF(a, b))          \
  KDK__INTS(KDK__LOG_I, op)                                                             \
  KDK__FLTS(KDK__LOG_F, op)                                                             \
  KDK__CPXS(KDK__LOG_C, op)
#define KDK__LOG_I(op, s, E, T, U)                                             \
  KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, bool, KDK__ID, KDK__LOGIC_##op(a != 0, b != 0)) \
  KDK__BIN_LOOP(op##_##s##_same, T, T, KDK__ID, T, KDK__ID, (T)KDK__LOGIC_##op(a != 0, b != 0))
#define KDK__LOG_F(op, s, E, T, C, LD, ST)                                     \
  KDK__BIN_LOOP(op##_##s, T, C, LD, bool, KDK__ID, KDK__LOGIC_##op(a != 0, b != 0)) \
  KDK__BIN_LOOP(op##_##s##_same, T, C, LD, T, ST, (C)KDK__LOGIC_##op(a != 0, b != 0))
#define KDK__CNZ(x) ((x).re != 0 || (x).im != 0)
#define KDK__LOG_C(op, s, E, T, R)                                                        \
  KDK__BIN_LOOP(op##_##s, T, T, KDK__ID, bool, KDK__ID, KDK__LOGIC_##op(KDK__CNZ(a), KDK__CNZ(b))) \
  KDK__BIN_LOOP(op##_##s##_same, T, T, KDK__ID, T, KDK__ID,                                \
               ((T){(R)KDK__LOGIC_##op(KDK__CNZ(a), KDK__CNZ(b)), 0}))
#define KDK__LOGIC_land(x, y) ((x) && (y))
#define KDK__LOGIC_lor(x, y) ((x) || (y))
#define KDK__LOGIC_lxor(x, y) ((bool)(x) != (bool)(y))
KDK__LOGIC_LOOPS(land, KDK__LOGIC_land)
KDK__LOGIC_LOOPS(lor, KDK__LOGIC_lor)
KDK__LOGIC_LOOPS(lxor, KDK__LOGIC_lxor)

/* clamp: std::min(std::max(a, lo), hi); one bound: maximum / minimum. */
#define L_CLAMP_I(op, s, E, T, U)                                                          \
  KDK__UN_LOOP(op##_##s, T, T, KDK__ID, KDK__ID,                                              \
              ((T)p->i1 < ((a < (T)p->i0) ? (T)p->i0 : a)) ? (T)p->i1                      \
                                                            : ((a < (T)p->i0) ? (T)p->i0 : a))
#define L_CLAMP_F(op, s, E, T, C, LD, ST)                                                  \
  KDK__UN_LOOP(op##_##s, T, C, LD, ST,                                                      \
              ((C)p->f1 < ((a < (C)p->f0) ? (C)p->f0 : a)) ? (C)p->f1                      \
                                                            : ((a < (C)p->f0) ? (C)p->f0 : a))
#define L_CMIN_I(op, s, E, T, U) KDK__UN_LOOP(op##_##s, T, T, KDK__ID, KDK__ID, (a < (T)p->i0) ? (T)p->i0 : a)
#define L_CMIN_F(op, s, E, T, C, LD, ST) KDK__UN_LOOP(op##_##s, T, C, LD, ST, (a < (C)p->f0) ? (C)p->f0 : a)
#define L_CMAX_I(op, s, E, T, U) KDK__UN_LOOP(op##_##s, T, T, KDK__ID, KDK__ID, ((T)p->i1 < a) ? (T)p->i1 : a)
#define L_CMAX_F(op, s, E, T, C, LD, ST) KDK__UN_LOOP(op##_##s, T, C, LD, ST, ((C)p->f1 < a) ? (C)p->f1 : a)
KDK__INTS(L_CLAMP_I, clamp)
KDK__FLTS(L_CLAMP_F, clamp)
KDK__INTS(L_CMIN_I, clampmin)
KDK__FLTS(L_CMIN_F, clampmin)
KDK__INTS(L_CMAX_I, clampmax)
KDK__FLTS(L_CMAX_F, clampmax)

#define L_CLAMP3_I(op, s, E, T, U) \
  KDK__TER_LOOP(op##_##s, T, T, KDK__ID, KDK__ID, (c < ((a < b) ? b : a)) ? c : ((a < b) ? b : a))
#define L_CLAMP3_F(op, s, E, T, C, LD, ST)                                    \
  KDK__TER_LOOP(op##_##s, T, C, LD, ST,                                        \
               (b != b || c != c) ? (C)NAN                                    \
                                  : ((c < ((a < b) ? b : a)) ? c : ((a < b) ? b : a)))
KDK__INTS(L_CLAMP3_I, clamp3)
KDK__FLTS(L_CLAMP3_F, clamp3)

/* where and masked_fill move elements by width. */
#define KDK__WIDTHS(X) X(1, uint8_t) X(2, uint16_t) X(4, uint32_t) X(8, uint64_t) X(16, kdk__c128)
#define L_WHERE(w, T)                                                                         \
  static void where_##w(void *ctx_, char **data, const int64_t *strides, int64_t n0, int64_t n1) { \
    (void)ctx_;                                                                               \
    for (int64_t j = 0; j < n1; j++) {                                                        \
      char *od = data[0] + j * strides[4];                                                    \
      const char *cd = data[1] + j * strides[5], *ad = data[2] + j * strides[6];              \
      const char *bd = data[3] + j * strides[7];                                              \
      if (strides[0] == w && strides[1] == 1 && strides[2] == w && strides[3] == w) {         \
        T *restrict o = (T *)(void *)od;                                                      \
        const bool *restrict c = (const bool *)(const void *)cd;                              \
        const T *restrict x = (const T *)(const void *)ad, *restrict y = (const T *)(const void *)bd; \
        for (int64_t i = 0; i < n0; i++) o[i] = c[i] ? x[i] : y[i];                           \
      } else {                                                                                \
        for (int64_t i = 0; i < n0; i++) {                                                    \
          bool c = *(const bool *)(const void *)(cd + i * strides[1]);                        \
          *(T *)(void *)(od + i * strides[0]) =                                               \
              c ? *(const T *)(const void *)(ad + i * strides[2])                             \
                : *(const T *)(const void *)(bd + i * strides[3]);                            \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }
KDK__WIDTHS(L_WHERE)

#define L_MFILL(w, T)                                                                         \
  static void mfill_##w(void *ctx_, char **data, const int64_t *strides, int64_t n0, int64_t n1) { \
    bin_ctx *p = ctx_;                                                                        \
    T v;                                                                                      \
    memcpy(&v, p->v, sizeof v);                                                               \
    for (int64_t j = 0; j < n1; j++) {                                                        \
      char *od = data[0] + j * strides[2];                                                    \
      const char *md = data[1] + j * strides[3];                                              \
      if (strides[0] == w && strides[1] == 1) {                                               \
        T *restrict o = (T *)(void *)od;                                                      \
        const bool *restrict m = (const bool *)(const void *)md;                              \
        for (int64_t i = 0; i < n0; i++) o[i] = m[i] ? v : o[i];                              \
      } else {                                                                                \
        for (int64_t i = 0; i < n0; i++)                                                      \
          if (*(const bool *)(const void *)(md + i * strides[1]))                             \
            *(T *)(void *)(od + i * strides[0]) = v;                                          \
      }                                                                                       \
    }                                                                                         \
  }
KDK__WIDTHS(L_MFILL)

/* ---- Tables ------------------------------------------------------------------------ */

#define KDK__TBL_B(op) [KD_BOOL] = op##_b,
#define KDK__TBL_SAME(op, s, E, ...) [E] = op##_##s##_same,

/* Selective builds (ops/src/select.h): the operators whose impls reach a
 * table, by name; a table with a mask keeps only the allowed dtypes. */
#define KDK__SEL_OPS_add (KDK__SEL_DTYPES_add(CPU) | KDK__SEL_DTYPES_sub(CPU))
#define KDK__SEL_OPS_add1 KDK__SEL_OPS_add
#define KDK__SEL_OPS_mul KDK__SEL_DTYPES_mul(CPU)
#define KDK__TBLS_B(op) [KD_BOOL] = KDK__SEL_LOOP(KDK__SEL_OPS_##op, KD_BOOL, op##_b),
#define KDK__TBLS(op, s, E, ...) [E] = KDK__SEL_LOOP(KDK__SEL_OPS_##op, E, op##_##s),

static loop2d_fn *const add_loops[KD_DTYPE_COUNT] = {
    KDK__TBLS_B(add) KDK__INTS(KDK__TBLS, add) KDK__FLTS(KDK__TBLS, add) KDK__CPXS(KDK__TBLS, add)};
static loop2d_fn *const add1_loops[KD_DTYPE_COUNT] = {
    KDK__TBLS_B(add1) KDK__INTS(KDK__TBLS, add1) KDK__FLTS(KDK__TBLS, add1)};
static loop2d_fn *const mul_loops[KD_DTYPE_COUNT] = {
    KDK__TBLS_B(mul) KDK__INTS(KDK__TBLS, mul) KDK__FLTS(KDK__TBLS, mul) KDK__CPXS(KDK__TBLS, mul)};
static loop2d_fn *const divt_loops[KD_DTYPE_COUNT] = {KDK__FLTS(KDK__TBL, divt) KDK__CPXS(KDK__TBL, divt)};
static loop2d_fn *const divtr_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, divtr) KDK__FLTS(KDK__TBL, divtr)};
static loop2d_fn *const divfl_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, divfl) KDK__FLTS(KDK__TBL, divfl)};
static loop2d_fn *const rem_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, rem) KDK__FLTS(KDK__TBL, rem)};
static loop2d_fn *const zchk_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, zchk)};
static loop2d_fn *const atan2_loops[KD_DTYPE_COUNT] = {KDK__FLTS(KDK__TBL, atan2)};
static loop2d_fn *const max_loops[KD_DTYPE_COUNT] = {
    KDK__TBL_B(max) KDK__INTS(KDK__TBL, max) KDK__FLTS(KDK__TBL, max)};
static loop2d_fn *const min_loops[KD_DTYPE_COUNT] = {
    KDK__TBL_B(min) KDK__INTS(KDK__TBL, min) KDK__FLTS(KDK__TBL, min)};
static loop2d_fn *const pow_loops[KD_DTYPE_COUNT] = {
    KDK__INTS(KDK__TBL, pow) KDK__FLTS(KDK__TBL, pow) KDK__CPXS(KDK__TBL, pow)};
static loop2d_fn *const pows_loops[KD_DTYPE_COUNT] = {
    KDK__INTS(KDK__TBL, pows) KDK__FLTS(KDK__TBL, pows) KDK__CPXS(KDK__TBL, pows)};
static loop2d_fn *const band_loops[KD_DTYPE_COUNT] = {KDK__TBL_B(band) KDK__INTS(KDK__TBL, band)};
static loop2d_fn *const bor_loops[KD_DTYPE_COUNT] = {KDK__TBL_B(bor) KDK__INTS(KDK__TBL, bor)};
static loop2d_fn *const bxor_loops[KD_DTYPE_COUNT] = {KDK__TBL_B(bxor) KDK__INTS(KDK__TBL, bxor)};
static loop2d_fn *const lsh_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, lsh)};
static loop2d_fn *const rsh_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, rsh)};
#define KDK__CMP_TABLES(op)                                                                   \
  static loop2d_fn *const op##_loops[KD_DTYPE_COUNT] = {                                     \
      KDK__TBL_B(op) KDK__INTS(KDK__TBL, op) KDK__FLTS(KDK__TBL, op)};                            \
  static loop2d_fn *const op##_same_loops[KD_DTYPE_COUNT] = {                                \
      [KD_BOOL] = op##_b_same, KDK__INTS(KDK__TBL_SAME, op) KDK__FLTS(KDK__TBL_SAME, op)};
KDK__CMP_TABLES(lt)
KDK__CMP_TABLES(le)
KDK__CMP_TABLES(gt)
KDK__CMP_TABLES(ge)
#define KDK__CMPC_TABLES(op)                                                                  \
  static loop2d_fn *const op##_loops[KD_DTYPE_COUNT] = {                                     \
      KDK__TBL_B(op) KDK__INTS(KDK__TBL, op) KDK__FLTS(KDK__TBL, op) KDK__CPXS(KDK__TBL, op)};      \
  static loop2d_fn *const op##_same_loops[KD_DTYPE_COUNT] = {                                \
      [KD_BOOL] = op##_b_same, KDK__INTS(KDK__TBL_SAME, op) KDK__FLTS(KDK__TBL_SAME, op)         \
          KDK__CPXS(KDK__TBL_SAME, op)};
KDK__CMPC_TABLES(eq)
KDK__CMPC_TABLES(ne)
KDK__CMPC_TABLES(land)
KDK__CMPC_TABLES(lor)
KDK__CMPC_TABLES(lxor)
static loop2d_fn *const clamp_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, clamp) KDK__FLTS(KDK__TBL, clamp)};
static loop2d_fn *const clampmin_loops[KD_DTYPE_COUNT] = {
    KDK__INTS(KDK__TBL, clampmin) KDK__FLTS(KDK__TBL, clampmin)};
static loop2d_fn *const clampmax_loops[KD_DTYPE_COUNT] = {
    KDK__INTS(KDK__TBL, clampmax) KDK__FLTS(KDK__TBL, clampmax)};
static loop2d_fn *const clamp3_loops[KD_DTYPE_COUNT] = {KDK__INTS(KDK__TBL, clamp3) KDK__FLTS(KDK__TBL, clamp3)};

/* ---- Kernels ----------------------------------------------------------------------- */

/* PyTorch's names of dtypes are not used: messages name the project's. */
static kd_status not_implemented(const char *name, kd_dtype dt) {
  return kd_set_error(KD_EUNSUPPORTED, "\"%s\" not implemented for '%s'%s", name, kd_dtype_name(dt),
                      KDK__SEL_BUILD ? " (or left out of this selective build: not in its allow-list)"
                                     : "");
}

/* Reads parameter s for computing in dtype dt into c (index 0 or 1):
 * checked as kd_scalar_to_element checks (a value that does not fit dt is
 * KD_EOVERFLOW), then kept wide (float16 and bfloat16 compute in float). */
static kd_status set_param(bin_ctx *c, int k, const kd_scalar *s, kd_dtype dt, const char *what) {
  unsigned char buf[16];
  /* c10's checked conversion: negative ints down to -255 wrap into uint8
   * (sub's -alpha), the rest must fit. */
  kd_status st = kd_scalar_to_element(s, dt, buf);
  if (st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "%s: %s", what, msg);
  }
  int64_t i = kd_scalar_to_int64(s);
  double f = kd_scalar_to_double(s);
  if (dt == KD_BOOL) i = kd_scalar_to_double(s) != 0 || (s->kind == KD_SCALAR_COMPLEX && s->v.c.im != 0);
  if (k == 0) {
    c->i0 = i;
    c->f0 = f;
    c->c0re = f;
    c->c0im = s->kind == KD_SCALAR_COMPLEX ? s->v.c.im : 0.0;
  } else {
    c->i1 = i;
    c->f1 = f;
  }
  return KD_OK;
}

static void ctx_init(bin_ctx *c) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->bad, 0);
}

static kd_status run(kdk_iter *iter, loop2d_fn *loop, bin_ctx *c) {
  kdk_iter_for_each(iter, loop, c, KDK_GRAIN_SIZE);
  if (atomic_load(&c->bad)) return kd_set_error(KD_EINVAL, "ZeroDivisionError");
  return KD_OK;
}

/* A kernel over one table, on the common dtype, no parameters. */
static kd_status run_table(kdk_iter *iter, loop2d_fn *const *table, const char *name) {
  kd_dtype dt = kdk_iter_common_dtype(iter);
  loop2d_fn *loop = kd_dtype_valid(dt) ? table[dt] : NULL;
  if (!loop) return not_implemented(name, dt);
  bin_ctx c;
  ctx_init(&c);
  return run(iter, loop, &c);
}

/* Comparisons and logical operators: the output is bool or the common dtype. */
static kd_status run_cmp(kdk_iter *iter, loop2d_fn *const *to_bool, loop2d_fn *const *same,
                         const char *name) {
  kd_dtype dt = kdk_iter_common_dtype(iter), odt = kdk_iter_dtype(iter, 0);
  if (!kd_dtype_valid(dt)) return not_implemented(name, dt);
  loop2d_fn *loop = odt == KD_BOOL ? to_bool[dt] : odt == dt ? same[dt] : NULL;
  if (!loop) {
    if (!to_bool[dt]) return not_implemented(name, dt);
    return kd_set_error(KD_EINTERNAL, "%s: output of dtype %s for inputs of dtype %s", name,
                        kd_dtype_name(odt), kd_dtype_name(dt));
  }
  bin_ctx c;
  ctx_init(&c);
  return run(iter, loop, &c);
}

static kd_status add_stub_kernel(kdk_iter *iter, const kd_scalar *alpha,
                                 const kd_scalar *unused) {
  (void)unused;
  kd_dtype dt = kdk_iter_common_dtype(iter);
  loop2d_fn *loop = kd_dtype_valid(dt) ? add_loops[dt] : NULL;
  if (!loop) return not_implemented("add_cpu", dt);
  bin_ctx c;
  if ((!alpha || (alpha->kind == KD_SCALAR_INT && alpha->v.i == 1)) && add1_loops[dt]) {
    atomic_init(&c.bad, 0);
    return run(iter, add1_loops[dt], &c);
  }
  ctx_init(&c);
  kd_scalar one = kd_scalar_int(1);
  kd_status st = set_param(&c, 0, alpha ? alpha : &one, dt, "add: alpha");
  if (st) return st;
  return run(iter, loop, &c);
}

#define KDK__SIMPLE_KERNEL(fname, table, name)                                           \
  static kd_status fname(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {    \
    (void)p0;                                                                          \
    (void)p1;                                                                          \
    return run_table(iter, table, name);                                               \
  }
KDK__SIMPLE_KERNEL(mul_stub_kernel, mul_loops, "mul_cpu")
KDK__SIMPLE_KERNEL(div_true_stub_kernel, divt_loops, "div_true_cpu")
/* Integer division and remainder: the divisor is checked for zeros first,
 * so that ZeroDivisionError leaves the output unwritten. */
#define KDK__IDIV_KERNEL(fname, table, name)                                             \
  static kd_status fname(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {    \
    (void)p0;                                                                          \
    (void)p1;                                                                          \
    kd_dtype dt = kdk_iter_common_dtype(iter);                                          \
    if (kd_dtype_valid(dt) && zchk_loops[dt]) {                                        \
      bin_ctx c;                                                                       \
      ctx_init(&c);                                                                    \
      kd_status st = run(iter, zchk_loops[dt], &c);                                    \
      if (st) return st;                                                               \
    }                                                                                  \
    return run_table(iter, table, name);                                               \
  }
KDK__IDIV_KERNEL(div_trunc_stub_kernel, divtr_loops, "div_trunc_cpu")
KDK__IDIV_KERNEL(div_floor_stub_kernel, divfl_loops, "div_floor_cpu")
KDK__IDIV_KERNEL(remainder_stub_kernel, rem_loops, "remainder_cpu")
KDK__SIMPLE_KERNEL(atan2_stub_kernel, atan2_loops, "atan2_cpu")
KDK__SIMPLE_KERNEL(maximum_stub_kernel, max_loops, "maximum_cpu")
KDK__SIMPLE_KERNEL(minimum_stub_kernel, min_loops, "minimum_cpu")
KDK__SIMPLE_KERNEL(pow_tensor_tensor_stub_kernel, pow_loops, "pow")
KDK__SIMPLE_KERNEL(bitwise_and_stub_kernel, band_loops, "bitwise_and_cpu")
KDK__SIMPLE_KERNEL(bitwise_or_stub_kernel, bor_loops, "bitwise_or_cpu")
KDK__SIMPLE_KERNEL(bitwise_xor_stub_kernel, bxor_loops, "bitwise_xor_cpu")
KDK__SIMPLE_KERNEL(lshift_stub_kernel, lsh_loops, "lshift_cpu")
KDK__SIMPLE_KERNEL(rshift_stub_kernel, rsh_loops, "rshift_cpu")
KDK__SIMPLE_KERNEL(clamp_tensor_stub_kernel, clamp3_loops, "clamp_cpu")

#define KDK__CMP_KERNEL(fname, op, name)                                                 \
  static kd_status fname(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {    \
    (void)p0;                                                                          \
    (void)p1;                                                                          \
    return run_cmp(iter, op##_loops, op##_same_loops, name);                           \
  }
KDK__CMP_KERNEL(eq_stub_kernel, eq, "eq_cpu")
KDK__CMP_KERNEL(ne_stub_kernel, ne, "ne_cpu")
KDK__CMP_KERNEL(lt_stub_kernel, lt, "lt_cpu")
KDK__CMP_KERNEL(le_stub_kernel, le, "le_cpu")
KDK__CMP_KERNEL(gt_stub_kernel, gt, "gt_cpu")
KDK__CMP_KERNEL(ge_stub_kernel, ge, "ge_cpu")
KDK__CMP_KERNEL(logical_and_stub_kernel, land, "logical_and_cpu")
KDK__CMP_KERNEL(logical_or_stub_kernel, lor, "logical_or_cpu")
KDK__CMP_KERNEL(logical_xor_stub_kernel, lxor, "logical_xor_cpu")

static kd_status pow_tensor_scalar_stub_kernel(kdk_iter *iter, const kd_scalar *exponent,
                                               const kd_scalar *unused) {
  (void)unused;
  kd_dtype dt = kdk_iter_common_dtype(iter);
  loop2d_fn *loop = kd_dtype_valid(dt) ? pows_loops[dt] : NULL;
  if (!loop) return not_implemented("pow", dt);
  bin_ctx c;
  ctx_init(&c);
  /* The exponent is read as PyTorch reads it: converted to the base's type
   * (checked: pow_(int8, 1000) is an overflow error, not x^-24) for integers,
   * float16 and bfloat16 (which round it), as a double for float32, float64
   * and complex bases. */
  kd_scalar e = *exponent;
  if (kd_dtype_is_integral(dt, false) || dt == KD_FLOAT16 || dt == KD_BFLOAT16) {
    unsigned char buf[16];
    kd_status st = kd_scalar_to_element(exponent, dt, buf);
    if (!st) st = kd_scalar_from_element(buf, dt, &e);
    if (st) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", kd_last_error());
      return kd_set_error(st, "%s: exponent: %s", iter->op, msg);
    }
  }
  c.i0 = kd_scalar_to_int64(&e);
  c.f0 = kd_scalar_to_double(&e);
  c.c0re = c.f0;
  c.c0im = e.kind == KD_SCALAR_COMPLEX ? e.v.c.im : 0.0;
  return run(iter, loop, &c);
}

static kd_status clamp_scalar_stub_kernel(kdk_iter *iter, const kd_scalar *lo,
                                          const kd_scalar *hi) {
  kd_dtype dt = kdk_iter_common_dtype(iter);
  const char *name = lo && hi ? "clamp_scalar_cpu" : lo ? "clamp_min_scalar_cpu" : "clamp_max_scalar_cpu";
  loop2d_fn *const *table = lo && hi ? clamp_loops : lo ? clampmin_loops : clampmax_loops;
  loop2d_fn *loop = kd_dtype_valid(dt) ? table[dt] : NULL;
  if (!loop) return not_implemented(name, dt);
  bin_ctx c;
  ctx_init(&c);
  kd_status st;
  if (lo && (st = set_param(&c, 0, lo, dt, "clamp: min"))) return st;
  if (hi && (st = set_param(&c, 1, hi, dt, "clamp: max"))) return st;
  return run(iter, loop, &c);
}

static kd_status where_stub_kernel(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0;
  (void)p1;
  kd_dtype dt = kdk_iter_dtype(iter, 0);
  loop2d_fn *loop;
  switch (kd_dtype_size(dt)) {
  case 1: loop = where_1; break;
  case 2: loop = where_2; break;
  case 4: loop = where_4; break;
  case 8: loop = where_8; break;
  case 16: loop = where_16; break;
  default: return not_implemented("where_cpu", dt);
  }
  bin_ctx c;
  ctx_init(&c);
  return run(iter, loop, &c);
}

static kd_status masked_fill_stub_kernel(kdk_iter *iter, const kd_scalar *value,
                                         const kd_scalar *unused) {
  (void)unused;
  kd_dtype dt = kdk_iter_dtype(iter, 0);
  bin_ctx c;
  ctx_init(&c);
  kd_status st = kd_scalar_to_element(value, dt, c.v);
  if (st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "masked_fill_: %s", msg);
  }
  loop2d_fn *loop;
  switch (kd_dtype_size(dt)) {
  case 1: loop = mfill_1; break;
  case 2: loop = mfill_2; break;
  case 4: loop = mfill_4; break;
  case 8: loop = mfill_8; break;
  case 16: loop = mfill_16; break;
  default: return not_implemented("masked_fill", dt);
  }
  return run(iter, loop, &c);
}

/* ---- Registration ------------------------------------------------------------------ */

/* Every stub of the one list (kdk/stubs.h) with its kernel <stub>_kernel. */
#define KDK__BINARY_REGISTER(name) KD_REGISTER_STUB(name, name##_kernel);
KDK_BINARY_STUBS(KDK__BINARY_REGISTER)
#undef KDK__BINARY_REGISTER
