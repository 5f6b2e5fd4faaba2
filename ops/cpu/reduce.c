/*
 * reduce.c: the reduction loops (ops/native/reduce.h), compiled once per CPU
 * capability.
 *
 * Every (kind, dtype) pair is four small functions over an accumulator
 * (kd__red_acc): init, step (one strided run of the innermost reduced
 * dimension), combine (two partials, in order) and write. Rows walk the
 * reduced dimensions with an odometer and call step once per run.
 *
 * Accumulation: integers and bool in 64 bits (wrapping); float16, bfloat16
 * and float32 sums in float32, float64 in float64, both pairwise over
 * blocks summed with 16 accumulators (the contiguous loop vectorises);
 * complex in its component type. max/min/argmax/argmin compare floating
 * values as double (exact) and integers as int64. NaN propagates through
 * max/min; argmax/argmin choose the first NaN, else the first of equal
 * values.
 */
#include <math.h>
#include <string.h>

#include "native/reduce.h"

/* ---- Element loads -------------------------------------------------------- */

static inline float ld_half(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0) {
    float f = (float)man * 5.9604644775390625e-8f; /* man * 2^-24 */
    return sign ? -f : f;
  }
  if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
  else bits = sign | ((exp + 112u) << 23) | (man << 13);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline float ld_bf16(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

#define LD_ID(x) (x)
#define LD_HALF(x) ld_half(x)
#define LD_BF16(x) ld_bf16(x)

/* ---- Sums ------------------------------------------------------------------- */

#define KD_SUM_BLOCK 2048

/* Pairwise sum of n elements `s` apart, in ACC. */
#define DEF_FSUM(name, T, ACC, LOAD)                                          \
  static ACC name##_block(const T *p, int64_t n, int64_t s) {                \
    ACC a[16];                                                               \
    for (int k = 0; k < 16; k++) a[k] = 0;                                   \
    int64_t i = 0;                                                           \
    if (s == 1) {                                                            \
      for (; i + 16 <= n; i += 16)                                           \
        for (int k = 0; k < 16; k++) a[k] += (ACC)LOAD(p[i + k]);            \
    } else {                                                                 \
      for (; i + 4 <= n; i += 4)                                             \
        for (int k = 0; k < 4; k++) a[k] += (ACC)LOAD(p[(i + k) * s]);       \
    }                                                                        \
    ACC r = 0;                                                               \
    for (; i < n; i++) r += (ACC)LOAD(p[i * s]);                             \
    for (int w = 8; w > 0; w /= 2)                                           \
      for (int k = 0; k < w; k++) a[k] += a[k + w];                          \
    return a[0] + r;                                                         \
  }                                                                          \
  static ACC name(const T *p, int64_t n, int64_t s) {                        \
    if (n <= KD_SUM_BLOCK) return name##_block(p, n, s);                     \
    int64_t h = (n / 2 + KD_SUM_BLOCK - 1) / KD_SUM_BLOCK * KD_SUM_BLOCK;    \
    return name(p, h, s) + name(p + h * s, n - h, s);                        \
  }
DEF_FSUM(fsum_f32, float, float, LD_ID)
DEF_FSUM(fsum_f64, double, double, LD_ID)
DEF_FSUM(fsum_half, uint16_t, float, LD_HALF)
DEF_FSUM(fsum_bf16, uint16_t, float, LD_BF16)
#undef DEF_FSUM

/* Integer sums wrap modulo 2^64 (then to the output type). */
#define DEF_ISUM(name, T)                                              \
  static uint64_t name(const T *p, int64_t n, int64_t s) {            \
    uint64_t a = 0;                                                   \
    if (s == 1)                                                       \
      for (int64_t i = 0; i < n; i++) a += (uint64_t)(int64_t)p[i];   \
    else                                                              \
      for (int64_t i = 0; i < n; i++) a += (uint64_t)(int64_t)p[i * s]; \
    return a;                                                         \
  }
DEF_ISUM(isum_u8, uint8_t)
DEF_ISUM(isum_i8, int8_t)
DEF_ISUM(isum_i16, int16_t)
DEF_ISUM(isum_i32, int32_t)
DEF_ISUM(isum_i64, int64_t)
#undef DEF_ISUM

/* ---- Type tables -------------------------------------------------------------- */

typedef struct red_vt {
  void (*init)(kd__red_acc *a);
  void (*step)(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t base);
  void (*combine)(kd__red_acc *a, const kd__red_acc *b);
  void (*write)(const kd__red_acc *a, char *o0, char *o1, kd_dtype out_dtype);
} red_vt;

static void init_zero(kd__red_acc *a) { memset(a, 0, sizeof *a); }

/* float family accumulators: v.f (float16/bfloat16/float32), v.d (float64) */
static void init_one_f(kd__red_acc *a) { init_zero(a); a->v.f = 1.0f; }
static void init_one_d(kd__red_acc *a) { init_zero(a); a->v.d = 1.0; }
static void init_one_i(kd__red_acc *a) { init_zero(a); a->v.i = 1; }
static void init_one_cf(kd__red_acc *a) { init_zero(a); a->v.cf[0] = 1.0f; }
static void init_one_c(kd__red_acc *a) { init_zero(a); a->v.c[0] = 1.0; }
static void init_true(kd__red_acc *a) { init_zero(a); a->v.i = 1; }

static void comb_add_f(kd__red_acc *a, const kd__red_acc *b) { a->v.f += b->v.f; }
static void comb_add_d(kd__red_acc *a, const kd__red_acc *b) { a->v.d += b->v.d; }
static void comb_add_i(kd__red_acc *a, const kd__red_acc *b) {
  a->v.i = (int64_t)((uint64_t)a->v.i + (uint64_t)b->v.i);
}
static void comb_add_cf(kd__red_acc *a, const kd__red_acc *b) {
  a->v.cf[0] += b->v.cf[0];
  a->v.cf[1] += b->v.cf[1];
}
static void comb_add_c(kd__red_acc *a, const kd__red_acc *b) {
  a->v.c[0] += b->v.c[0];
  a->v.c[1] += b->v.c[1];
}
static void comb_mul_f(kd__red_acc *a, const kd__red_acc *b) { a->v.f *= b->v.f; }
static void comb_mul_d(kd__red_acc *a, const kd__red_acc *b) { a->v.d *= b->v.d; }
static void comb_mul_i(kd__red_acc *a, const kd__red_acc *b) {
  a->v.i = (int64_t)((uint64_t)a->v.i * (uint64_t)b->v.i);
}
static void comb_mul_cf(kd__red_acc *a, const kd__red_acc *b) {
  float re = a->v.cf[0] * b->v.cf[0] - a->v.cf[1] * b->v.cf[1];
  float im = a->v.cf[0] * b->v.cf[1] + a->v.cf[1] * b->v.cf[0];
  a->v.cf[0] = re;
  a->v.cf[1] = im;
}
static void comb_mul_c(kd__red_acc *a, const kd__red_acc *b) {
  double re = a->v.c[0] * b->v.c[0] - a->v.c[1] * b->v.c[1];
  double im = a->v.c[0] * b->v.c[1] + a->v.c[1] * b->v.c[0];
  a->v.c[0] = re;
  a->v.c[1] = im;
}
static void comb_and(kd__red_acc *a, const kd__red_acc *b) { a->v.i = a->v.i && b->v.i; }
static void comb_or(kd__red_acc *a, const kd__red_acc *b) { a->v.i = a->v.i || b->v.i; }

/* ---- sum / prod steps and writes ------------------------------------------------- */

static void step_sum_f32(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.f += fsum_f32((const float *)p, n, s);
}
static void step_sum_f64(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.d += fsum_f64((const double *)p, n, s);
}
static void step_sum_half(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.f += fsum_half((const uint16_t *)p, n, s);
}
static void step_sum_bf16(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.f += fsum_bf16((const uint16_t *)p, n, s);
}
#define DEF_STEP_ISUM(tn, T)                                                                   \
  static void step_sum_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                   \
    a->v.i = (int64_t)((uint64_t)a->v.i + isum_##tn((const T *)p, n, s));                     \
  }
DEF_STEP_ISUM(u8, uint8_t)
DEF_STEP_ISUM(i8, int8_t)
DEF_STEP_ISUM(i16, int16_t)
DEF_STEP_ISUM(i32, int32_t)
DEF_STEP_ISUM(i64, int64_t)
#undef DEF_STEP_ISUM

static void step_sum_c64(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const float *q = (const float *)p;
  a->v.cf[0] += fsum_f32(q, n, 2 * s);
  a->v.cf[1] += fsum_f32(q + 1, n, 2 * s);
}
static void step_sum_c128(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const double *q = (const double *)p;
  a->v.c[0] += fsum_f64(q, n, 2 * s);
  a->v.c[1] += fsum_f64(q + 1, n, 2 * s);
}

#define DEF_STEP_PROD(tn, T, ACC, FIELD, LOAD)                                                  \
  static void step_prod_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                    \
    const T *q = (const T *)p;                                                                  \
    ACC r = a->v.FIELD;                                                                         \
    for (int64_t i = 0; i < n; i++) r *= (ACC)LOAD(q[i * s]);                                   \
    a->v.FIELD = r;                                                                             \
  }
DEF_STEP_PROD(f32, float, float, f, LD_ID)
DEF_STEP_PROD(f64, double, double, d, LD_ID)
DEF_STEP_PROD(half, uint16_t, float, f, LD_HALF)
DEF_STEP_PROD(bf16, uint16_t, float, f, LD_BF16)
#undef DEF_STEP_PROD
#define DEF_STEP_IPROD(tn, T)                                                                   \
  static void step_prod_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                    \
    const T *q = (const T *)p;                                                                  \
    uint64_t r = (uint64_t)a->v.i;                                                              \
    for (int64_t i = 0; i < n; i++) r *= (uint64_t)(int64_t)q[i * s];                          \
    a->v.i = (int64_t)r;                                                                        \
  }
DEF_STEP_IPROD(u8, uint8_t)
DEF_STEP_IPROD(i8, int8_t)
DEF_STEP_IPROD(i16, int16_t)
DEF_STEP_IPROD(i32, int32_t)
DEF_STEP_IPROD(i64, int64_t)
#undef DEF_STEP_IPROD
static void step_prod_c64(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const float *q = (const float *)p;
  for (int64_t i = 0; i < n; i++) {
    kd__red_acc x;
    x.v.cf[0] = q[2 * i * s];
    x.v.cf[1] = q[2 * i * s + 1];
    comb_mul_cf(a, &x);
  }
}
static void step_prod_c128(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const double *q = (const double *)p;
  for (int64_t i = 0; i < n; i++) {
    kd__red_acc x;
    x.v.c[0] = q[2 * i * s];
    x.v.c[1] = q[2 * i * s + 1];
    comb_mul_c(a, &x);
  }
}

static void wr_f32(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(float *)o = a->v.f;
}
static void wr_half(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint16_t *)o = kd_float_to_half(a->v.f);
}
static void wr_bf16(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint16_t *)o = kd_float_to_bfloat16(a->v.f);
}
static void wr_f64(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(double *)o = a->v.d;
}
static void wr_c64(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  memcpy(o, a->v.cf, 2 * sizeof(float));
}
static void wr_c128(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  memcpy(o, a->v.c, 2 * sizeof(double));
}
static void wr_bool(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint8_t *)o = a->v.i != 0;
}
#define DEF_WR_INT(tn, T)                                                  \
  static void wr_##tn(const kd__red_acc *a, char *o, char *o1, kd_dtype od) { \
    (void)o1, (void)od;                                                    \
    *(T *)o = (T)(uint64_t)a->v.i;                                         \
  }
DEF_WR_INT(u8, uint8_t)
DEF_WR_INT(i8, int8_t)
DEF_WR_INT(i16, int16_t)
DEF_WR_INT(i32, int32_t)
DEF_WR_INT(i64, int64_t)
#undef DEF_WR_INT

/* ---- max / min (values), argmax / argmin -------------------------------------------- */

/* Floating values: acc.v.d, acc.any. NaN wins and stays. CMP is > for max, < for min. */
#define DEF_FSTEP(name, tn, T, LOAD, CMP)                                                        \
  static void step_##name##_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                     \
    const T *q = (const T *)p;                                                                   \
    if (n <= 0 || (a->any && isnan(a->v.d))) return;                                             \
    double m = a->any ? a->v.d : (double)LOAD(q[0]);                                             \
    for (int64_t i = 0; i < n; i++) {                                                            \
      double v = (double)LOAD(q[i * s]);                                                         \
      if (isnan(v)) { m = v; break; }                                                            \
      m = v CMP m ? v : m;                                                                       \
    }                                                                                            \
    a->v.d = m;                                                                                  \
    a->any = true;                                                                               \
  }
/* The same with the index of the first extreme (b: the index of p[0]). */
#define DEF_FARGSTEP(name, tn, T, LOAD, CMP)                                                     \
  static void step_##name##_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    const T *q = (const T *)p;                                                                   \
    if (n <= 0 || (a->any && isnan(a->v.d))) return;                                             \
    int64_t i = 0;                                                                               \
    if (!a->any) {                                                                               \
      a->v.d = (double)LOAD(q[0]);                                                               \
      a->index = b;                                                                              \
      a->any = true;                                                                             \
      i = 1;                                                                                     \
    }                                                                                            \
    double m = a->v.d;                                                                           \
    int64_t mi = a->index;                                                                       \
    if (!isnan(m))                                                                               \
      for (; i < n; i++) {                                                                       \
        double v = (double)LOAD(q[i * s]);                                                       \
        if (isnan(v)) { m = v; mi = b + i; break; }                                              \
        if (v CMP m) { m = v; mi = b + i; }                                                      \
      }                                                                                          \
    a->v.d = m;                                                                                  \
    a->index = mi;                                                                               \
  }
#define DEF_FMAXMIN(tn, T, LOAD)          \
  DEF_FSTEP(max, tn, T, LOAD, >)          \
  DEF_FSTEP(min, tn, T, LOAD, <)          \
  DEF_FARGSTEP(argmax, tn, T, LOAD, >)    \
  DEF_FARGSTEP(argmin, tn, T, LOAD, <)
DEF_FMAXMIN(f32, float, LD_ID)
DEF_FMAXMIN(f64, double, LD_ID)
DEF_FMAXMIN(half, uint16_t, LD_HALF)
DEF_FMAXMIN(bf16, uint16_t, LD_BF16)
#undef DEF_FMAXMIN
#undef DEF_FARGSTEP
#undef DEF_FSTEP

/* Integer values: acc.v.i. */
#define DEF_ISTEP(name, tn, T, CMP)                                                              \
  static void step_##name##_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                     \
    const T *q = (const T *)p;                                                                   \
    if (n <= 0) return;                                                                          \
    int64_t m = a->any ? a->v.i : (int64_t)q[0];                                                 \
    for (int64_t i = 0; i < n; i++) m = (int64_t)q[i * s] CMP m ? (int64_t)q[i * s] : m;        \
    a->v.i = m;                                                                                  \
    a->any = true;                                                                               \
  }
#define DEF_IARGSTEP(name, tn, T, CMP)                                                           \
  static void step_##name##_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    const T *q = (const T *)p;                                                                   \
    if (n <= 0) return;                                                                          \
    int64_t i = 0;                                                                               \
    if (!a->any) {                                                                               \
      a->v.i = (int64_t)q[0];                                                                    \
      a->index = b;                                                                              \
      a->any = true;                                                                             \
      i = 1;                                                                                     \
    }                                                                                            \
    int64_t m = a->v.i, mi = a->index;                                                           \
    for (; i < n; i++)                                                                           \
      if ((int64_t)q[i * s] CMP m) { m = (int64_t)q[i * s]; mi = b + i; }                        \
    a->v.i = m;                                                                                  \
    a->index = mi;                                                                               \
  }
#define DEF_IMAXMIN(tn, T)          \
  DEF_ISTEP(max, tn, T, >)          \
  DEF_ISTEP(min, tn, T, <)          \
  DEF_IARGSTEP(argmax, tn, T, >)    \
  DEF_IARGSTEP(argmin, tn, T, <)
DEF_IMAXMIN(u8, uint8_t)
DEF_IMAXMIN(i8, int8_t)
DEF_IMAXMIN(i16, int16_t)
DEF_IMAXMIN(i32, int32_t)
DEF_IMAXMIN(i64, int64_t)
#undef DEF_IMAXMIN
#undef DEF_IARGSTEP
#undef DEF_ISTEP

/* Combining partials of index reductions: b covers later indices than a, so
 * a wins ties. */
static void comb_max_d(kd__red_acc *a, const kd__red_acc *b) {
  if (!b->any) return;
  if (!a->any || (!isnan(a->v.d) && (isnan(b->v.d) || b->v.d > a->v.d))) *a = *b;
}
static void comb_min_d(kd__red_acc *a, const kd__red_acc *b) {
  if (!b->any) return;
  if (!a->any || (!isnan(a->v.d) && (isnan(b->v.d) || b->v.d < a->v.d))) *a = *b;
}
static void comb_max_i(kd__red_acc *a, const kd__red_acc *b) {
  if (!b->any) return;
  if (!a->any || b->v.i > a->v.i) *a = *b;
}
static void comb_min_i(kd__red_acc *a, const kd__red_acc *b) {
  if (!b->any) return;
  if (!a->any || b->v.i < a->v.i) *a = *b;
}

/* Writes of max/min values (v.d or v.i back to the element type) and of
 * argmax/argmin (index into o1; the value into o0 when o0 is not NULL). */
static void put_d(char *o, kd_dtype dt, double v) {
  switch (dt) {
  case KD_FLOAT32: *(float *)o = (float)v; break;
  case KD_FLOAT64: *(double *)o = v; break;
  case KD_FLOAT16: *(uint16_t *)o = kd_float_to_half((float)v); break;
  case KD_BFLOAT16: *(uint16_t *)o = kd_float_to_bfloat16((float)v); break;
  default: break;
  }
}
static void put_i(char *o, kd_dtype dt, int64_t v) {
  switch (dt) {
  case KD_BOOL: *(uint8_t *)o = v != 0; break;
  case KD_UINT8: *(uint8_t *)o = (uint8_t)v; break;
  case KD_INT8: *(int8_t *)o = (int8_t)v; break;
  case KD_INT16: *(int16_t *)o = (int16_t)v; break;
  case KD_INT32: *(int32_t *)o = (int32_t)v; break;
  case KD_INT64: *(int64_t *)o = v; break;
  default: break;
  }
}
static void wr_val_d(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1;
  put_d(o, od, a->v.d);
}
static void wr_val_i(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1;
  put_i(o, od, a->v.i);
}
static void wr_idx_d(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  if (o) put_d(o, od, a->v.d);
  *(int64_t *)o1 = a->index;
}
static void wr_idx_i(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  if (o) put_i(o, od, a->v.i);
  *(int64_t *)o1 = a->index;
}

/* ---- all / any ---------------------------------------------------------------------- */

#define DEF_ALLANY(tn, T, NZ)                                                                 \
  static void step_all_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                  \
    const T *q = (const T *)p;                                                                \
    if (!a->v.i) return;                                                                      \
    for (int64_t i = 0; i < n; i++)                                                           \
      if (!(NZ(q, i * s))) {                                                                  \
        a->v.i = 0;                                                                           \
        return;                                                                               \
      }                                                                                       \
  }                                                                                           \
  static void step_any_##tn(kd__red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                  \
    const T *q = (const T *)p;                                                                \
    if (a->v.i) return;                                                                       \
    for (int64_t i = 0; i < n; i++)                                                           \
      if (NZ(q, i * s)) {                                                                     \
        a->v.i = 1;                                                                           \
        return;                                                                               \
      }                                                                                       \
  }
#define NZ_PLAIN(q, k) ((q)[k] != 0)
#define NZ_HALF(q, k) (((q)[k] & 0x7fffu) != 0)
#define NZ_CPX(q, k) ((q)[2 * (k)] != 0 || (q)[2 * (k) + 1] != 0)
DEF_ALLANY(b8, uint8_t, NZ_PLAIN)
DEF_ALLANY(b16, uint16_t, NZ_PLAIN)
DEF_ALLANY(b32, uint32_t, NZ_PLAIN)
DEF_ALLANY(b64, uint64_t, NZ_PLAIN)
DEF_ALLANY(h16, uint16_t, NZ_HALF)
DEF_ALLANY(f32, float, NZ_PLAIN)
DEF_ALLANY(f64, double, NZ_PLAIN)
DEF_ALLANY(c64, float, NZ_CPX)
DEF_ALLANY(c128, double, NZ_CPX)
#undef DEF_ALLANY

static void wr_allany(const kd__red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint8_t *)o = a->v.i != 0;
}

/* ---- The table ---------------------------------------------------------------------- */

static bool get_vt(kd__red_kind kind, kd_dtype dt, red_vt *vt) {
  memset(vt, 0, sizeof *vt);
  bool flt = dt == KD_FLOAT16 || dt == KD_BFLOAT16 || dt == KD_FLOAT32;
#define PICK_INT(pfx)                             \
  switch (dt) {                                   \
  case KD_BOOL:                                   \
  case KD_UINT8: vt->step = pfx##u8; break;       \
  case KD_INT8: vt->step = pfx##i8; break;        \
  case KD_INT16: vt->step = pfx##i16; break;      \
  case KD_INT32: vt->step = pfx##i32; break;      \
  case KD_INT64: vt->step = pfx##i64; break;      \
  case KD_FLOAT16: vt->step = pfx##half; break;   \
  case KD_BFLOAT16: vt->step = pfx##bf16; break;  \
  case KD_FLOAT32: vt->step = pfx##f32; break;    \
  case KD_FLOAT64: vt->step = pfx##f64; break;    \
  default: break;                                 \
  }
  switch (kind) {
  case KD__RED_SUM:
  case KD__RED_PROD: {
    bool sum = kind == KD__RED_SUM;
    switch (dt) {
    case KD_COMPLEX64:
      vt->step = sum ? step_sum_c64 : step_prod_c64;
      vt->init = sum ? init_zero : init_one_cf;
      vt->combine = sum ? comb_add_cf : comb_mul_cf;
      vt->write = wr_c64;
      return true;
    case KD_COMPLEX128:
      vt->step = sum ? step_sum_c128 : step_prod_c128;
      vt->init = sum ? init_zero : init_one_c;
      vt->combine = sum ? comb_add_c : comb_mul_c;
      vt->write = wr_c128;
      return true;
    default: break;
    }
    if (sum) {
      PICK_INT(step_sum_)
    } else {
      PICK_INT(step_prod_)
    }
    if (!vt->step) return false;
    if (flt) {
      vt->init = sum ? init_zero : init_one_f;
      vt->combine = sum ? comb_add_f : comb_mul_f;
      vt->write = dt == KD_FLOAT32 ? wr_f32 : dt == KD_FLOAT16 ? wr_half : wr_bf16;
    } else if (dt == KD_FLOAT64) {
      vt->init = sum ? init_zero : init_one_d;
      vt->combine = sum ? comb_add_d : comb_mul_d;
      vt->write = wr_f64;
    } else {
      vt->init = sum ? init_zero : init_one_i;
      vt->combine = sum ? comb_add_i : comb_mul_i;
      switch (dt) {
      case KD_BOOL: vt->write = wr_bool; break;
      case KD_UINT8: vt->write = wr_u8; break;
      case KD_INT8: vt->write = wr_i8; break;
      case KD_INT16: vt->write = wr_i16; break;
      case KD_INT32: vt->write = wr_i32; break;
      default: vt->write = wr_i64; break;
      }
    }
    return true;
  }
  case KD__RED_MAX:
  case KD__RED_MIN:
  case KD__RED_ARGMAX:
  case KD__RED_ARGMIN: {
    bool fl = flt || dt == KD_FLOAT64;
    vt->init = init_zero;
    if (kind == KD__RED_MAX) {
      PICK_INT(step_max_)
      vt->combine = fl ? comb_max_d : comb_max_i;
      vt->write = fl ? wr_val_d : wr_val_i;
    } else if (kind == KD__RED_MIN) {
      PICK_INT(step_min_)
      vt->combine = fl ? comb_min_d : comb_min_i;
      vt->write = fl ? wr_val_d : wr_val_i;
    } else if (kind == KD__RED_ARGMAX) {
      PICK_INT(step_argmax_)
      vt->combine = fl ? comb_max_d : comb_max_i;
      vt->write = fl ? wr_idx_d : wr_idx_i;
    } else {
      PICK_INT(step_argmin_)
      vt->combine = fl ? comb_min_d : comb_min_i;
      vt->write = fl ? wr_idx_d : wr_idx_i;
    }
    return vt->step != NULL;
  }
  case KD__RED_ALL:
  case KD__RED_ANY: {
    bool all = kind == KD__RED_ALL;
    vt->init = all ? init_true : init_zero;
    vt->combine = all ? comb_and : comb_or;
    vt->write = wr_allany;
    switch (dt) {
    case KD_BOOL:
    case KD_UINT8:
    case KD_INT8: vt->step = all ? step_all_b8 : step_any_b8; break;
    case KD_INT16: vt->step = all ? step_all_b16 : step_any_b16; break;
    case KD_INT32: vt->step = all ? step_all_b32 : step_any_b32; break;
    case KD_INT64: vt->step = all ? step_all_b64 : step_any_b64; break;
    case KD_FLOAT16:
    case KD_BFLOAT16: vt->step = all ? step_all_h16 : step_any_h16; break;
    case KD_FLOAT32: vt->step = all ? step_all_f32 : step_any_f32; break;
    case KD_FLOAT64: vt->step = all ? step_all_f64 : step_any_f64; break;
    case KD_COMPLEX64: vt->step = all ? step_all_c64 : step_any_c64; break;
    case KD_COMPLEX128: vt->step = all ? step_all_c128 : step_any_c128; break;
    default: break;
    }
    return vt->step != NULL;
  }
  }
#undef PICK_INT
  return false;
}

/* ---- Rows, partials ------------------------------------------------------------------- */

/* The whole reduction of the row starting at element `in` (bytes). */
static void reduce_row(const red_vt *vt, const kd__red_plan *p, const char *in, size_t es,
                       kd__red_acc *acc) {
  vt->init(acc);
  if (p->red_numel == 0) return;
  int64_t n0 = p->rsize[0], s0 = p->rstride[0];
  if (p->nred == 1) {
    vt->step(acc, in, n0, s0, 0);
    return;
  }
  int64_t idx[KD_MAX_DIMS] = {0};
  const char *q = in;
  int64_t base = 0;
  for (;;) {
    vt->step(acc, q, n0, s0, base);
    base += n0;
    int d = 1;
    for (; d < p->nred; d++) {
      q += p->rstride[d] * (int64_t)es;
      if (++idx[d] < p->rsize[d]) break;
      q -= p->rstride[d] * p->rsize[d] * (int64_t)es;
      idx[d] = 0;
    }
    if (d == p->nred) return;
  }
}

static size_t out_size_of(const kd__red_task *t) {
  if (t->kind == KD__RED_ALL || t->kind == KD__RED_ANY) return 1;
  return kd_dtype_size(t->dtype);
}

static void reduce_rows(const kd__red_task *t, int64_t begin, int64_t end) {
  red_vt vt;
  if (begin >= end || !get_vt(t->kind, t->dtype, &vt)) return;
  const kd__red_plan *p = t->plan;
  size_t es = kd_dtype_size(t->dtype), os = out_size_of(t);
  int64_t idx[KD_MAX_DIMS] = {0};
  int64_t rest = begin;
  for (int d = 0; d < p->nouter; d++) {
    idx[d] = rest % p->osize[d];
    rest /= p->osize[d];
  }
  int64_t ioff, o0, o1;
  kd__red_offsets(p, begin, &ioff, &o0, &o1);
  for (int64_t pos = begin; pos < end; pos++) {
    kd__red_acc acc;
    reduce_row(&vt, p, t->in + ioff * (int64_t)es, es, &acc);
    vt.write(&acc, t->out[0] ? t->out[0] + o0 * (int64_t)os : NULL,
             t->out[1] ? t->out[1] + o1 * 8 : NULL, t->out_dtype);
    for (int d = 0; d < p->nouter; d++) {
      ioff += p->ostride_in[d];
      o0 += p->ostride_out[0][d];
      o1 += p->ostride_out[1][d];
      if (++idx[d] < p->osize[d]) break;
      ioff -= p->ostride_in[d] * p->osize[d];
      o0 -= p->ostride_out[0][d] * p->osize[d];
      o1 -= p->ostride_out[1][d] * p->osize[d];
      idx[d] = 0;
    }
  }
}

static void reduce_part(const kd__red_task *t, int64_t pos, int64_t rb, int64_t re,
                        kd__red_acc *acc) {
  red_vt vt;
  if (!get_vt(t->kind, t->dtype, &vt)) return;
  const kd__red_plan *p = t->plan;
  int64_t es = (int64_t)kd_dtype_size(t->dtype);
  int64_t ioff, o0, o1;
  kd__red_offsets(p, pos, &ioff, &o0, &o1);
  vt.init(acc);
  if (re > rb) vt.step(acc, t->in + (ioff + rb * p->rstride[0]) * es, re - rb, p->rstride[0], rb);
}

static void reduce_finish(const kd__red_task *t, int64_t pos, const kd__red_acc *parts, int n) {
  red_vt vt;
  if (n <= 0 || !get_vt(t->kind, t->dtype, &vt)) return;
  kd__red_acc acc = parts[0];
  for (int i = 1; i < n; i++) vt.combine(&acc, &parts[i]);
  int64_t ioff, o0, o1;
  kd__red_offsets(t->plan, pos, &ioff, &o0, &o1);
  vt.write(&acc, t->out[0] ? t->out[0] + o0 * (int64_t)out_size_of(t) : NULL,
           t->out[1] ? t->out[1] + o1 * 8 : NULL, t->out_dtype);
}

/* ---- cumsum ------------------------------------------------------------------------------ */

#define DEF_CUMSUM(tn, T, ACC, LOAD, STORE)                                                   \
  static void cumsum_##tn(const char *in, char *out, int64_t n, int64_t is, int64_t os) { \
    const T *p = (const T *)in;                                                           \
    T *q = (T *)out;                                                                      \
    ACC a = 0;                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      a += (ACC)LOAD(p[i * is]);                                                          \
      q[i * os] = STORE(a);                                                               \
    }                                                                                     \
  }
#define ST_F32(a) ((float)(a))
#define ST_F64(a) (a)
#define ST_HALF(a) kd_float_to_half(a)
#define ST_BF16(a) kd_float_to_bfloat16(a)
#define ST_U8(a) ((uint8_t)(a))
#define ST_I8(a) ((int8_t)(a))
#define ST_I16(a) ((int16_t)(a))
#define ST_I32(a) ((int32_t)(a))
#define ST_I64(a) ((int64_t)(a))
#define ST_BOOL(a) ((uint8_t)((a) != 0))
#define LD_U64(x) ((uint64_t)(int64_t)(x))
/* CPU PyTorch accumulates cumsum in acc_type<T, false>: double for float. */
DEF_CUMSUM(f32, float, double, LD_ID, ST_F32)
DEF_CUMSUM(f64, double, double, LD_ID, ST_F64)
DEF_CUMSUM(half, uint16_t, float, LD_HALF, ST_HALF)
DEF_CUMSUM(bf16, uint16_t, float, LD_BF16, ST_BF16)
DEF_CUMSUM(b8, uint8_t, uint64_t, LD_U64, ST_BOOL)
DEF_CUMSUM(u8, uint8_t, uint64_t, LD_U64, ST_U8)
DEF_CUMSUM(i8, int8_t, uint64_t, LD_U64, ST_I8)
DEF_CUMSUM(i16, int16_t, uint64_t, LD_U64, ST_I16)
DEF_CUMSUM(i32, int32_t, uint64_t, LD_U64, ST_I32)
DEF_CUMSUM(i64, int64_t, uint64_t, LD_U64, ST_I64)
#undef DEF_CUMSUM

static void cumsum_c64(const char *in, char *out, int64_t n, int64_t is, int64_t os) {
  const float *p = (const float *)in;
  float *q = (float *)out;
  double re = 0, im = 0;
  for (int64_t i = 0; i < n; i++) {
    re += p[2 * i * is];
    im += p[2 * i * is + 1];
    q[2 * i * os] = (float)re;
    q[2 * i * os + 1] = (float)im;
  }
}
static void cumsum_c128(const char *in, char *out, int64_t n, int64_t is, int64_t os) {
  const double *p = (const double *)in;
  double *q = (double *)out;
  double re = 0, im = 0;
  for (int64_t i = 0; i < n; i++) {
    re += p[2 * i * is];
    im += p[2 * i * is + 1];
    q[2 * i * os] = re;
    q[2 * i * os + 1] = im;
  }
}

typedef void cumsum_loop(const char *in, char *out, int64_t n, int64_t is, int64_t os);

static void cumsum_kernel(kd_dtype dt, const kd__red_plan *p, const char *in, char *out,
                          int64_t len, int64_t istride, int64_t ostride) {
  cumsum_loop *f = NULL;
  switch (dt) {
  case KD_BOOL: f = cumsum_b8; break;
  case KD_UINT8: f = cumsum_u8; break;
  case KD_INT8: f = cumsum_i8; break;
  case KD_INT16: f = cumsum_i16; break;
  case KD_INT32: f = cumsum_i32; break;
  case KD_INT64: f = cumsum_i64; break;
  case KD_FLOAT16: f = cumsum_half; break;
  case KD_BFLOAT16: f = cumsum_bf16; break;
  case KD_FLOAT32: f = cumsum_f32; break;
  case KD_FLOAT64: f = cumsum_f64; break;
  case KD_COMPLEX64: f = cumsum_c64; break;
  case KD_COMPLEX128: f = cumsum_c128; break;
  default: return;
  }
  int64_t es = (int64_t)kd_dtype_size(dt);
  int64_t idx[KD_MAX_DIMS] = {0};
  int64_t a = 0, b = 0;
  for (int64_t pos = 0; pos < p->out_numel; pos++) {
    f(in + a * es, out + b * es, len, istride, ostride);
    for (int d = 0; d < p->nouter; d++) {
      a += p->ostride_in[d];
      b += p->ostride_out[0][d];
      if (++idx[d] < p->osize[d]) break;
      a -= p->ostride_in[d] * p->osize[d];
      b -= p->ostride_out[0][d] * p->osize[d];
      idx[d] = 0;
    }
  }
}

KD_REGISTER_STUB(reduce_rows_stub, reduce_rows);
KD_REGISTER_STUB(reduce_part_stub, reduce_part);
KD_REGISTER_STUB(reduce_finish_stub, reduce_finish);
KD_REGISTER_STUB(cumsum_stub, cumsum_kernel);
