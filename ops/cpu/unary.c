/*
 * unary.c: the inner loops of the pointwise unary operators (ops/native/unary.h),
 * compiled once per CPU capability.
 *
 * Every loop is a 1-d function over n elements whose output and input advance
 * by byte steps (kdk__uloop). A loop has three paths: in place (out == in,
 * both contiguous), contiguous and disjoint (restrict pointers, which the
 * compiler vectorises), and a general one that loads and stores through
 * memcpy (any steps, also stride 0 and unaligned memory). float16 and
 * bfloat16 are converted to float32 in blocks, computed with the float32 loop
 * and rounded back. Integer inputs of floating operators never get here: the
 * iterator casts them to the common floating dtype first.
 *
 * The element functions are those of libm, the same in every capability
 * build, and nothing is contracted into fused multiply-adds (below), so every
 * capability gives the same results bit for bit.
 */
#include <complex.h>
#include <math.h>

/* No fused multiply-add contraction, so that the FMA builds round as the
 * baseline one does (gcc's ISO C mode is already -ffp-contract=off; clang
 * contracts within expressions unless told). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#include <stdint.h>
#include <string.h>

#include "native/unary.h"
#include "select.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

typedef float _Complex kd_c64_t;
typedef double _Complex kd_c128_t;

/* ---- float16 / bfloat16 <-> float32 --------------------------------------------- */

static inline float u_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t u_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float u_half_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return u_f32_from_bits(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    if (m == 0) return u_f32_from_bits(sign);
    float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24 */
    return sign ? -v : v;
  }
  return u_f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
#endif
}

static inline uint16_t u_float_to_half(float f) {
#if defined(__F16C__)
  return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
  uint32_t u = u_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) /* inf or nan (kept quiet) */
    return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (a < 0x38800000u) {                                   /* half subnormal or zero */
    float r = nearbyintf(u_f32_from_bits(a) * 16777216.0f); /* units of 2^-24, to even */
    return (uint16_t)(sign | (uint16_t)r);
  }
  uint32_t m = a & 0x7fffffu;
  uint32_t h = (((a >> 23) - 112) << 10) | (m >> 13);
  uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* a carry into the exponent is right */
  return (uint16_t)(sign | h);
#endif
}

static inline float u_bf16_to_float(uint16_t b) { return u_f32_from_bits((uint32_t)b << 16); }

static inline uint16_t u_float_to_bf16(float f) {
  uint32_t u = u_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet nan */
  u += 0x7fffu + ((u >> 16) & 1u);                                           /* to nearest even */
  return (uint16_t)(u >> 16);
}

/* ---- Loop generators ---------------------------------------------------------------- */

#define U_ALIGNED(p, T) (((uintptr_t)(p) & (_Alignof(T) - 1)) == 0)

/* [a, a + an) and [b, b + bn) do not overlap. */
static inline int u_disjoint(const char *a, int64_t an, const char *b, int64_t bn) {
  return a + an <= b || b + bn <= a;
}

/* name: T -> T, element x, value E(x, T); PRE runs once (reads `extra`). */
#define U_DEF_SAME(name, T, PRE, E)                                                          \
  static void name(char *out, const char *in, int64_t n, int64_t os, int64_t is,            \
                   const void *extra) {                                                      \
    PRE;                                                                                     \
    const int64_t w = (int64_t)sizeof(T);                                                    \
    if (os == w && is == w && U_ALIGNED(out, T) && U_ALIGNED(in, T)) {                       \
      if (out == in) {                                                                       \
        T *p = (T *)(void *)out;                                                             \
        for (int64_t i = 0; i < n; i++) {                                                    \
          T x = p[i];                                                                        \
          p[i] = E(x, T);                                                                    \
        }                                                                                    \
        return;                                                                              \
      }                                                                                      \
      if (u_disjoint(out, n * w, in, n * w)) {                                               \
        T *restrict o = (T *)(void *)out;                                                    \
        const T *restrict a = (const T *)(const void *)in;                                   \
        for (int64_t i = 0; i < n; i++) {                                                    \
          T x = a[i];                                                                        \
          o[i] = E(x, T);                                                                    \
        }                                                                                    \
        return;                                                                              \
      }                                                                                      \
    }                                                                                        \
    for (int64_t i = 0; i < n; i++) {                                                        \
      T x, y;                                                                                \
      memcpy(&x, in + i * is, sizeof x);                                                     \
      y = E(x, T);                                                                           \
      memcpy(out + i * os, &y, sizeof y);                                                    \
    }                                                                                        \
  }

/* name: TI -> TO (different types; never in place). */
#define U_DEF_CONV(name, TI, TO, PRE, E)                                                     \
  static void name(char *out, const char *in, int64_t n, int64_t os, int64_t is,            \
                   const void *extra) {                                                      \
    PRE;                                                                                     \
    if (os == (int64_t)sizeof(TO) && is == (int64_t)sizeof(TI) && U_ALIGNED(out, TO) &&      \
        U_ALIGNED(in, TI) && u_disjoint(out, n * os, in, n * is)) {                          \
      TO *restrict o = (TO *)(void *)out;                                                    \
      const TI *restrict a = (const TI *)(const void *)in;                                   \
      for (int64_t i = 0; i < n; i++) {                                                      \
        TI x = a[i];                                                                         \
        o[i] = E(x, TI);                                                                     \
      }                                                                                      \
      return;                                                                                \
    }                                                                                        \
    for (int64_t i = 0; i < n; i++) {                                                        \
      TI x;                                                                                  \
      TO y;                                                                                  \
      memcpy(&x, in + i * is, sizeof x);                                                     \
      y = E(x, TI);                                                                          \
      memcpy(out + i * os, &y, sizeof y);                                                    \
    }                                                                                        \
  }

/* name: a 16-bit float type through float32: blocks converted into a buffer,
 * f32loop run on it in place, rounded back. Reading a whole block before
 * writing it keeps in-place calls right. */
#define U_BLOCK 256
#define U_DEF_H16(name, f32loop, LOAD, STORE)                                                \
  static void name(char *out, const char *in, int64_t n, int64_t os, int64_t is,            \
                   const void *extra) {                                                      \
    float buf[U_BLOCK];                                                                      \
    for (int64_t i0 = 0; i0 < n; i0 += U_BLOCK) {                                            \
      int64_t m = n - i0 < U_BLOCK ? n - i0 : U_BLOCK;                                       \
      const char *ip = in + i0 * is;                                                         \
      char *op = out + i0 * os;                                                              \
      for (int64_t k = 0; k < m; k++) {                                                      \
        uint16_t h;                                                                          \
        memcpy(&h, ip + k * is, sizeof h);                                                   \
        buf[k] = LOAD(h);                                                                    \
      }                                                                                      \
      f32loop((char *)buf, (const char *)buf, m, (int64_t)sizeof(float),                     \
              (int64_t)sizeof(float), extra);                                                \
      for (int64_t k = 0; k < m; k++) {                                                      \
        uint16_t h = STORE(buf[k]);                                                          \
        memcpy(op + k * os, &h, sizeof h);                                                   \
      }                                                                                      \
    }                                                                                        \
  }

#define U_NOEXTRA (void)extra

/* Families: the same expression for every type of a kind. */
#define U_DEF_INTS2(op, E, EU)                       \
  U_DEF_SAME(op##_u8, uint8_t, U_NOEXTRA, EU)        \
  U_DEF_SAME(op##_i8, int8_t, U_NOEXTRA, E)          \
  U_DEF_SAME(op##_i16, int16_t, U_NOEXTRA, E)        \
  U_DEF_SAME(op##_i32, int32_t, U_NOEXTRA, E)        \
  U_DEF_SAME(op##_i64, int64_t, U_NOEXTRA, E)
#define U_DEF_INTS(op, E) U_DEF_INTS2(op, E, E)

#define U_DEF_FLOATS_PRE(op, PRE, EF, ED)                      \
  U_DEF_SAME(op##_f32, float, PRE, EF)                         \
  U_DEF_SAME(op##_f64, double, PRE, ED)                        \
  U_DEF_H16(op##_f16, op##_f32, u_half_to_float, u_float_to_half) \
  U_DEF_H16(op##_bf16, op##_f32, u_bf16_to_float, u_float_to_bf16)
#define U_DEF_FLOATS(op, EF, ED) U_DEF_FLOATS_PRE(op, U_NOEXTRA, EF, ED)

#define U_DEF_COMPLEX(op, EC, EZ)                   \
  U_DEF_SAME(op##_c64, kd_c64_t, U_NOEXTRA, EC)     \
  U_DEF_SAME(op##_c128, kd_c128_t, U_NOEXTRA, EZ)

/* Tables by dtype. */
/* Entries go through U_E, which keeps only the dtypes in U_MASK: every
 * dtype, except for the operator tables below, each of which sets U_MASK
 * to its operator's allowed dtypes in a selective build (ops/src/select.h). */
#define U_MASK 0xffffffffu
#define U_E(E, fn) [E] = KDK__SEL_LOOP(U_MASK, E, fn)
#define U_TBL_INTS(op) \
  U_E(KD_UINT8, op##_u8), U_E(KD_INT8, op##_i8), U_E(KD_INT16, op##_i16), U_E(KD_INT32, op##_i32), \
  U_E(KD_INT64, op##_i64)
#define U_TBL_FLOATS(op) \
  U_E(KD_FLOAT16, op##_f16), U_E(KD_BFLOAT16, op##_bf16), U_E(KD_FLOAT32, op##_f32), \
  U_E(KD_FLOAT64, op##_f64)
#define U_TBL_COMPLEX(op) U_E(KD_COMPLEX64, op##_c64), U_E(KD_COMPLEX128, op##_c128)

/* ---- Element expressions: E(x, T) ---------------------------------------------------- */

/* Integers wrap as PyTorch's do (two's complement), without signed overflow. */
#define E_NEG_INT(x, T) ((T)(0u - (uint64_t)(x)))
#define E_ABS_INT(x, T) ((x) < 0 ? E_NEG_INT(x, T) : (x))
#define E_SIGN(x, T) ((T)((0 < (x)) - ((x) < 0)))
#define E_SIGN_U(x, T) ((T)(0 < (x)))
#define E_NOT_INT(x, T) ((T)~(x))
#define E_ID(x, T) (x)
#define E_RELU(x, T) ((x) < 0 ? (T)0 : (x))
#define E_NEG(x, T) (-(x))

#define E_ABS_F(x, T) fabsf(x)
#define E_ABS_D(x, T) fabs(x)
#define E_EXP_F(x, T) expf(x)
#define E_EXP_D(x, T) exp(x)
#define E_LOG_F(x, T) logf(x)
#define E_LOG_D(x, T) log(x)
#define E_LOG1P_F(x, T) log1pf(x)
#define E_LOG1P_D(x, T) log1p(x)
#define E_EXPM1_F(x, T) expm1f(x)
#define E_EXPM1_D(x, T) expm1(x)
#define E_SQRT_F(x, T) sqrtf(x)
#define E_SQRT_D(x, T) sqrt(x)
#define E_RSQRT_F(x, T) (1.0f / sqrtf(x))
#define E_RSQRT_D(x, T) (1.0 / sqrt(x))
#define E_SIN_F(x, T) sinf(x)
#define E_SIN_D(x, T) sin(x)
#define E_COS_F(x, T) cosf(x)
#define E_COS_D(x, T) cos(x)
#define E_TAN_F(x, T) tanf(x)
#define E_TAN_D(x, T) tan(x)
#define E_TANH_F(x, T) tanhf(x)
#define E_TANH_D(x, T) tanh(x)
#define E_SIGMOID_F(x, T) (1.0f / (1.0f + expf(-(x))))
#define E_SIGMOID_D(x, T) (1.0 / (1.0 + exp(-(x))))
#define E_ERF_F(x, T) erff(x)
#define E_ERF_D(x, T) erf(x)
#define E_RECIP_F(x, T) (1.0f / (x))
#define E_RECIP_D(x, T) (1.0 / (x))
#define E_FLOOR_F(x, T) floorf(x)
#define E_FLOOR_D(x, T) floor(x)
#define E_CEIL_F(x, T) ceilf(x)
#define E_CEIL_D(x, T) ceil(x)
#define E_TRUNC_F(x, T) truncf(x)
#define E_TRUNC_D(x, T) trunc(x)
/* Half-way cases to even, as PyTorch (std::nearbyint). */
#define E_ROUND_F(x, T) nearbyintf(x)
#define E_ROUND_D(x, T) nearbyint(x)

/* gelu: x * Phi(x), exactly or with PyTorch's tanh approximation. Phi(x) =
 * erfc(-x / sqrt 2) / 2 is (1 + erf(x / sqrt 2)) / 2 without its
 * cancellation for negative x. */
#define U_SQRT1_2 0.70710678118654752440
#define U_GELU_BETA 0.79788456080286535588 /* sqrt(2 / pi) */
#define U_GELU_KAPPA 0.044715
#define E_GELU_F(x, T) ((x) * 0.5f * erfcf(-(x) * (float)U_SQRT1_2))
#define E_GELU_D(x, T) ((x) * 0.5 * erfc(-(x) * U_SQRT1_2))
/* The tanh form 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), is
 * computed as x / (1 + exp(-2u)) (the same value, without cancellation). */
#define E_GELU_TANH_F(x, T) \
  ((x) / (1.0f + expf(-2.0f * (float)U_GELU_BETA * ((x) + (float)U_GELU_KAPPA * (x) * (x) * (x)))))
#define E_GELU_TANH_D(x, T) \
  ((x) / (1.0 + exp(-2.0 * U_GELU_BETA * ((x) + U_GELU_KAPPA * (x) * (x) * (x)))))

/* round(x, decimals): the scale is 10^|decimals| in the computing type; for
 * negative decimals divide first (PyTorch's round_decimals_kernel). */
#define U_PRE_ROUND_DEC                                                  \
  const kdk_unary_extra *ex_ = extra;                                    \
  const double tpd = ex_->ten_pow;                                       \
  const float tpf = (float)ex_->ten_pow;                                 \
  const int negd = ex_->neg_decimals;                                    \
  (void)tpd;                                                             \
  (void)tpf
#define E_ROUND_DEC_F(x, T) (negd ? nearbyintf((x) / tpf) * tpf : nearbyintf((x) * tpf) / tpf)
#define E_ROUND_DEC_D(x, T) (negd ? nearbyint((x) / tpd) * tpd : nearbyint((x) * tpd) / tpd)

/* Complex: C's complex functions. A complex value is an array of its two
 * parts (C11 6.2.5): built through memcpy (CMPLXF is missing in some
 * compilers' C11 modes; x + y * I is wrong for infinite y). */
static inline kd_c64_t u_cmplxf(float re, float im) {
  float v[2] = {re, im};
  kd_c64_t z;
  memcpy(&z, v, sizeof z);
  return z;
}
static inline kd_c128_t u_cmplx(double re, double im) {
  double v[2] = {re, im};
  kd_c128_t z;
  memcpy(&z, v, sizeof z);
  return z;
}

static inline kd_c64_t u_cexpm1f(kd_c64_t z) {
  /* exp(x + iy) - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i exp(x) sin y: no
   * cancellation near 0. */
  float x = crealf(z), y = cimagf(z), s = sinf(0.5f * y);
  return u_cmplxf(expm1f(x) * cosf(y) - 2.0f * s * s, expf(x) * sinf(y));
}
static inline kd_c128_t u_cexpm1(kd_c128_t z) {
  double x = creal(z), y = cimag(z), s = sin(0.5 * y);
  return u_cmplx(expm1(x) * cos(y) - 2.0 * s * s, exp(x) * sin(y));
}
static inline kd_c64_t u_clog1pf(kd_c64_t z) {
  /* log(1 + z) = log|1 + z| + i arg(1 + z); |1 + z|^2 - 1 = x (2 + x) + y^2. */
  float x = crealf(z), y = cimagf(z);
  return u_cmplxf(0.5f * log1pf(x * (2.0f + x) + y * y), atan2f(y, 1.0f + x));
}
static inline kd_c128_t u_clog1p(kd_c128_t z) {
  double x = creal(z), y = cimag(z);
  return u_cmplx(0.5 * log1p(x * (2.0 + x) + y * y), atan2(y, 1.0 + x));
}

#define E_EXP_C(x, T) cexpf(x)
#define E_EXP_Z(x, T) cexp(x)
#define E_LOG_C(x, T) clogf(x)
#define E_LOG_Z(x, T) clog(x)
#define E_LOG1P_C(x, T) u_clog1pf(x)
#define E_LOG1P_Z(x, T) u_clog1p(x)
#define E_EXPM1_C(x, T) u_cexpm1f(x)
#define E_EXPM1_Z(x, T) u_cexpm1(x)
#define E_SQRT_C(x, T) csqrtf(x)
#define E_SQRT_Z(x, T) csqrt(x)
#define E_RSQRT_C(x, T) (1.0f / csqrtf(x))
#define E_RSQRT_Z(x, T) (1.0 / csqrt(x))
#define E_SIN_C(x, T) csinf(x)
#define E_SIN_Z(x, T) csin(x)
#define E_COS_C(x, T) ccosf(x)
#define E_COS_Z(x, T) ccos(x)
#define E_TAN_C(x, T) ctanf(x)
#define E_TAN_Z(x, T) ctan(x)
#define E_TANH_C(x, T) ctanhf(x)
#define E_TANH_Z(x, T) ctanh(x)
#define E_SIGMOID_C(x, T) (1.0f / (1.0f + cexpf(-(x))))
#define E_SIGMOID_Z(x, T) (1.0 / (1.0 + cexp(-(x))))
#define E_RECIP_C(x, T) (1.0f / (x))
#define E_RECIP_Z(x, T) (1.0 / (x))
#define E_CABS_C(x, T) cabsf(x)
#define E_CABS_Z(x, T) cabs(x)

/* ---- The loops ------------------------------------------------------------------------ */

/* neg: every dtype but bool. */
U_DEF_INTS(neg, E_NEG_INT)
U_DEF_FLOATS(neg, E_NEG, E_NEG)
U_DEF_COMPLEX(neg, E_NEG, E_NEG)

/* abs: every dtype but bool; complex to its real dtype (or in place, as complex). */
U_DEF_INTS2(abs, E_ABS_INT, E_ID)
U_DEF_FLOATS(abs, E_ABS_F, E_ABS_D)
U_DEF_CONV(abs_c64, kd_c64_t, float, U_NOEXTRA, E_CABS_C)
U_DEF_CONV(abs_c128, kd_c128_t, double, U_NOEXTRA, E_CABS_Z)
U_DEF_SAME(abs_c64c, kd_c64_t, U_NOEXTRA, E_CABS_C)
U_DEF_SAME(abs_c128c, kd_c128_t, U_NOEXTRA, E_CABS_Z)

/* sign: bool is the identity; NaN gives 0. */
U_DEF_SAME(sign_b, uint8_t, U_NOEXTRA, E_ID)
U_DEF_INTS2(sign, E_SIGN, E_SIGN_U)
U_DEF_FLOATS(sign, E_SIGN, E_SIGN)

/* bitwise_not: bool and integers. */
#define E_NOT_BOOL(x, T) ((T)!(x))
U_DEF_SAME(bitwise_not_b, uint8_t, U_NOEXTRA, E_NOT_BOOL)
U_DEF_INTS(bitwise_not, E_NOT_INT)

/* relu: integers and floats (NaN stays NaN). */
U_DEF_INTS2(relu, E_RELU, E_ID)
U_DEF_FLOATS(relu, E_RELU, E_RELU)

/* floor, ceil, trunc, round: the identity on integers (PyTorch copies them). */
U_DEF_INTS(ident, E_ID)
U_DEF_FLOATS(floor, E_FLOOR_F, E_FLOOR_D)
U_DEF_FLOATS(ceil, E_CEIL_F, E_CEIL_D)
U_DEF_FLOATS(trunc, E_TRUNC_F, E_TRUNC_D)
U_DEF_FLOATS(round, E_ROUND_F, E_ROUND_D)
U_DEF_FLOATS_PRE(round_dec, U_PRE_ROUND_DEC, E_ROUND_DEC_F, E_ROUND_DEC_D)

/* Floating operators: float16, bfloat16, float32, float64 and complex. */
U_DEF_FLOATS(exp, E_EXP_F, E_EXP_D)
U_DEF_COMPLEX(exp, E_EXP_C, E_EXP_Z)
U_DEF_FLOATS(log, E_LOG_F, E_LOG_D)
U_DEF_COMPLEX(log, E_LOG_C, E_LOG_Z)
U_DEF_FLOATS(log1p, E_LOG1P_F, E_LOG1P_D)
U_DEF_COMPLEX(log1p, E_LOG1P_C, E_LOG1P_Z)
U_DEF_FLOATS(expm1, E_EXPM1_F, E_EXPM1_D)
U_DEF_COMPLEX(expm1, E_EXPM1_C, E_EXPM1_Z)
U_DEF_FLOATS(sqrt, E_SQRT_F, E_SQRT_D)
U_DEF_COMPLEX(sqrt, E_SQRT_C, E_SQRT_Z)
U_DEF_FLOATS(rsqrt, E_RSQRT_F, E_RSQRT_D)
U_DEF_COMPLEX(rsqrt, E_RSQRT_C, E_RSQRT_Z)
U_DEF_FLOATS(sin, E_SIN_F, E_SIN_D)
U_DEF_COMPLEX(sin, E_SIN_C, E_SIN_Z)
U_DEF_FLOATS(cos, E_COS_F, E_COS_D)
U_DEF_COMPLEX(cos, E_COS_C, E_COS_Z)
U_DEF_FLOATS(tan, E_TAN_F, E_TAN_D)
U_DEF_COMPLEX(tan, E_TAN_C, E_TAN_Z)
U_DEF_FLOATS(tanh, E_TANH_F, E_TANH_D)
U_DEF_COMPLEX(tanh, E_TANH_C, E_TANH_Z)
U_DEF_FLOATS(sigmoid, E_SIGMOID_F, E_SIGMOID_D)
U_DEF_COMPLEX(sigmoid, E_SIGMOID_C, E_SIGMOID_Z)
U_DEF_FLOATS(reciprocal, E_RECIP_F, E_RECIP_D)
U_DEF_COMPLEX(reciprocal, E_RECIP_C, E_RECIP_Z)
/* Real only. */
U_DEF_FLOATS(erf, E_ERF_F, E_ERF_D)
U_DEF_FLOATS(gelu, E_GELU_F, E_GELU_D)
U_DEF_FLOATS(gelu_tanh, E_GELU_TANH_F, E_GELU_TANH_D)

/* logical_not, any dtype to any dtype, in two steps through a byte buffer:
 * the input's "is zero" (NaN is not zero; a complex is zero when both parts
 * are), then 0/1 written as the output's dtype. */
#define E_ISZERO(x, T) ((uint8_t)((x) == 0))
#define E_ISZERO_H16(x, T) ((uint8_t)(((x) & 0x7fffu) == 0))
U_DEF_CONV(lnot_b, uint8_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_u8, uint8_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_i8, int8_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_i16, int16_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_i32, int32_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_i64, int64_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_f16, uint16_t, uint8_t, U_NOEXTRA, E_ISZERO_H16)
U_DEF_CONV(lnot_bf16, uint16_t, uint8_t, U_NOEXTRA, E_ISZERO_H16)
U_DEF_CONV(lnot_f32, float, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_f64, double, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_c64, kd_c64_t, uint8_t, U_NOEXTRA, E_ISZERO)
U_DEF_CONV(lnot_c128, kd_c128_t, uint8_t, U_NOEXTRA, E_ISZERO)

#define E_FROM01(x, T) ((T)(x))
#define E_FROM01_HALF(x, T) ((uint16_t)((x) ? 0x3c00u : 0u))
#define E_FROM01_BF16(x, T) ((uint16_t)((x) ? 0x3f80u : 0u))
U_DEF_CONV(from01_b, uint8_t, uint8_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_u8, uint8_t, uint8_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_i8, uint8_t, int8_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_i16, uint8_t, int16_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_i32, uint8_t, int32_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_i64, uint8_t, int64_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_f16, uint8_t, uint16_t, U_NOEXTRA, E_FROM01_HALF)
U_DEF_CONV(from01_bf16, uint8_t, uint16_t, U_NOEXTRA, E_FROM01_BF16)
U_DEF_CONV(from01_f32, uint8_t, float, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_f64, uint8_t, double, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_c64, uint8_t, kd_c64_t, U_NOEXTRA, E_FROM01)
U_DEF_CONV(from01_c128, uint8_t, kd_c128_t, U_NOEXTRA, E_FROM01)

#define U_TBL_ALL(op)                                                                    \
  [KD_BOOL] = op##_b, U_TBL_INTS(op), U_TBL_FLOATS(op), U_TBL_COMPLEX(op)

static kdk__uloop *const lnot_in_tbl[KD_DTYPE_COUNT] = {U_TBL_ALL(lnot)};
static kdk__uloop *const lnot_out_tbl[KD_DTYPE_COUNT] = {U_TBL_ALL(from01)};

static void logical_not_loop(char *out, const char *in, int64_t n, int64_t os, int64_t is,
                             const void *extra) {
  const kdk_unary_extra *ex = extra;
  kdk__uloop *to01 = lnot_in_tbl[ex->in_dtype], *from01 = lnot_out_tbl[ex->out_dtype];
  uint8_t buf[U_BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += U_BLOCK) {
    int64_t m = n - i0 < U_BLOCK ? n - i0 : U_BLOCK;
    to01((char *)buf, in + i0 * is, m, 1, is, NULL);
    from01(out + i0 * os, (const char *)buf, m, os, 1, NULL);
  }
}

/* logical_not: one loop for every input dtype (any output dtype). */
#define U_LNOT(E, ...) [KD_##E] = logical_not_loop,
static kdk__uloop *const logical_not_tbl[KD_DTYPE_COUNT] = {KD_DTYPE_LIST(U_LNOT)};
#undef U_LNOT

/* ---- Tables ----------------------------------------------------------------------------- */

/* Each table keeps the dtypes U_SEL_MASK allows: those of its operator
 * (and float32 for the floating operators when an integral dtype is
 * allowed: an integral input computes in float32). */
#define U_TABLE(name, ...) static kdk__uloop *const name##_tbl[KD_DTYPE_COUNT] = {__VA_ARGS__}
#undef U_MASK
#define U_MASK U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_neg(CPU)
U_TABLE(neg, U_TBL_INTS(neg), U_TBL_FLOATS(neg), U_TBL_COMPLEX(neg));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_abs(CPU)
U_TABLE(abs, U_TBL_INTS(abs), U_TBL_FLOATS(abs), U_E(KD_COMPLEX64, abs_c64c),
        U_E(KD_COMPLEX128, abs_c128c));
U_TABLE(abs_to_real, U_E(KD_COMPLEX64, abs_c64), U_E(KD_COMPLEX128, abs_c128));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_sign(CPU)
U_TABLE(sign, U_E(KD_BOOL, sign_b), U_TBL_INTS(sign), U_TBL_FLOATS(sign));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_bitwise_not(CPU)
U_TABLE(bitwise_not, U_E(KD_BOOL, bitwise_not_b), U_TBL_INTS(bitwise_not));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_relu(CPU)
U_TABLE(relu, U_TBL_INTS(relu), U_TBL_FLOATS(relu));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_floor(CPU)
U_TABLE(floor, U_TBL_INTS(ident), U_TBL_FLOATS(floor));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_ceil(CPU)
U_TABLE(ceil, U_TBL_INTS(ident), U_TBL_FLOATS(ceil));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_trunc(CPU)
U_TABLE(trunc, U_TBL_INTS(ident), U_TBL_FLOATS(trunc));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_DTYPES_round(CPU)
U_TABLE(round, U_TBL_INTS(ident), U_TBL_FLOATS(round));
U_TABLE(round_decimals, U_TBL_FLOATS(round_dec));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_exp(CPU))
U_TABLE(exp, U_TBL_FLOATS(exp), U_TBL_COMPLEX(exp));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_log(CPU))
U_TABLE(log, U_TBL_FLOATS(log), U_TBL_COMPLEX(log));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_log1p(CPU))
U_TABLE(log1p, U_TBL_FLOATS(log1p), U_TBL_COMPLEX(log1p));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_expm1(CPU))
U_TABLE(expm1, U_TBL_FLOATS(expm1), U_TBL_COMPLEX(expm1));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_sqrt(CPU))
U_TABLE(sqrt, U_TBL_FLOATS(sqrt), U_TBL_COMPLEX(sqrt));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_rsqrt(CPU))
U_TABLE(rsqrt, U_TBL_FLOATS(rsqrt), U_TBL_COMPLEX(rsqrt));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_sin(CPU))
U_TABLE(sin, U_TBL_FLOATS(sin), U_TBL_COMPLEX(sin));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_cos(CPU))
U_TABLE(cos, U_TBL_FLOATS(cos), U_TBL_COMPLEX(cos));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_tan(CPU))
U_TABLE(tan, U_TBL_FLOATS(tan), U_TBL_COMPLEX(tan));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_tanh(CPU))
U_TABLE(tanh, U_TBL_FLOATS(tanh), U_TBL_COMPLEX(tanh));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_sigmoid(CPU))
U_TABLE(sigmoid, U_TBL_FLOATS(sigmoid), U_TBL_COMPLEX(sigmoid));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_reciprocal(CPU))
U_TABLE(reciprocal, U_TBL_FLOATS(reciprocal), U_TBL_COMPLEX(reciprocal));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_erf(CPU))
U_TABLE(erf, U_TBL_FLOATS(erf));
#undef U_SEL_MASK
#define U_SEL_MASK KDK__SEL_INT_TO_FLOAT(KDK__SEL_DTYPES_gelu(CPU))
U_TABLE(gelu, U_TBL_FLOATS(gelu));
U_TABLE(gelu_tanh, U_TBL_FLOATS(gelu_tanh));
#undef U_SEL_MASK
#undef U_MASK
#define U_MASK 0xffffffffu

/* Every operator's table, from the one list of unary loops (kdk/stubs.h). */
static kdk__uloop *const *const unary_tables[] = {
#define U_ROW(E, name, kernel, kind) [KDK_UNARY_##E] = name##_tbl,
    KDK_UNARY_OPS(U_ROW)
#undef U_ROW
};
_Static_assert(sizeof unary_tables / sizeof unary_tables[0] == KDK_UNARY_OP_COUNT,
               "one loop table per unary loop");

/* The loop of `op` for elements of `dtype` (the input's; for logical_not any
 * pair, checked by the caller); NULL when the operator has none. */
static kdk__uloop *unary_loop_lookup(kdk_unary_op op, kd_dtype dtype) {
  if ((int)dtype < 0 || dtype >= KD_DTYPE_COUNT) return NULL;
  if ((unsigned)op >= KDK_UNARY_OP_COUNT) return NULL;
  return unary_tables[op][dtype];
}

/* ---- The stub's kernel ------------------------------------------------------------------ */

typedef struct u_ctx {
  kdk__uloop *loop;
  const kdk_unary_extra *extra;
} u_ctx;

/* Operand 0 is the output, operand 1 the input. */
static void u_loop2d(void *ctx, char **data, const int64_t *strides, int64_t size0,
                     int64_t size1) {
  const u_ctx *c = ctx;
  char *out = data[0];
  const char *in = data[1];
  for (int64_t j = 0; j < size1; j++) {
    c->loop(out, in, size0, strides[0], strides[1], c->extra);
    out += strides[2];
    in += strides[3];
  }
}

static kd_status unary_kernel(kdk_iter *iter, kdk_unary_op op, const kdk_unary_extra *extra) {
  if (kdk_iter_ntensors(iter) != 2 || kdk_iter_noutputs(iter) != 1)
    return kd_set_error(KD_EINTERNAL, "%s: the unary kernel needs one output and one input, got %d operands",
                        kdk__unary_kernel_name(op), kdk_iter_ntensors(iter));
  kd_dtype in = kdk_iter_input_dtype(iter, 0), out = kdk_iter_dtype(iter, 0);
  kdk_unary_extra ex;
  if (extra)
    ex = *extra;
  else
    memset(&ex, 0, sizeof ex);
  ex.in_dtype = in;
  ex.out_dtype = out;
  kdk__uloop *loop = NULL;
  if (op == KDK_UNARY_LOGICAL_NOT) {
    if (kd_dtype_valid(in) && kd_dtype_valid(out)) loop = unary_loop_lookup(op, in);
  } else {
    loop = unary_loop_lookup(op, in);
    /* The loops write the input's dtype, except abs of complex to real. */
    kd_dtype want = op == KDK_UNARY_ABS_TO_REAL ? kd_dtype_to_real(in) : in;
    if (loop && out != want)
      return kd_set_error(KD_EINTERNAL, "%s: the loop for %s writes %s, the output is %s",
                          kdk__unary_kernel_name(op), kd_dtype_name(in), kd_dtype_name(want),
                          kd_dtype_name(out));
  }
  if (!loop) {
    const char *name = iter->op ? iter->op : "unary operator";
    return kd_set_error(KD_ETYPE, "%s: \"%s\" not implemented for '%s'%s", name,
                        kdk__unary_kernel_name(op), kd_dtype_name(in),
                        KDK__SEL_BUILD ? " (or left out of this selective build: not in its allow-list)"
                                       : "");
  }
  if (kdk_iter_is_meta(iter) || kdk_iter_numel(iter) == 0) return KD_OK;
  u_ctx c = {loop, &ex};
  kdk_iter_for_each(iter, u_loop2d, &c, 0);
  return KD_OK;
}

KD_REGISTER_STUB(unary_stub, unary_kernel);
