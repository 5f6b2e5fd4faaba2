/*
 * reduce.c: the reduction loops (ops/native/reduce.h), compiled once per CPU
 * capability, run over the rows of a reduction iterator (ops/src/iter.h).
 *
 * Every (kind, dtype) pair is a few small functions over an accumulator
 * (red_acc): init, step (a strided run of elements), write (the result
 * into the outputs) and, for the kinds whose single long row is split over
 * threads with per-piece accumulators, combine (two partials, in order).
 * A row of the iterator is one step: its elements are one strided run, in
 * row-major order of the reduced dims (ops/native/reduce.c reduces in
 * stages, or the iterator copies the input, when the reduced dims are not
 * one run), so the position in the row is the index argmax reports.
 *
 * Rows that lie side by side in memory (the columns of a matrix reduced
 * over its first dim) are reduced RED_COLS at a time along memory rather
 * than one by one down their strides, with the same operations per row
 * (rows_loop), so a result never depends on the path.
 *
 * Threads: rows are split over threads by kdk_iter_for_each. One long row is
 * cut into pieces: sum, prod, mean, max and min through kdk_iter_reduce_rows
 * (each piece reduced into a partial of the output's dtype, the partials
 * reduced by the same loop), all, any, argmax, argmin and the float16 /
 * bfloat16 sums through kdk_iter_split_row (one accumulator per piece,
 * combined in order).
 *
 * Accumulation: integers and bool in 64 bits (wrapping); float16, bfloat16
 * and float32 sums in float32, float64 in float64, both pairwise over
 * blocks summed with 16 accumulators when contiguous (the loop vectorises),
 * else 4 (nothing is reassociated or contracted, so every capability rounds
 * alike);
 * complex in its component type. max/min/argmax/argmin compare floating
 * values as double (exact) and integers as int64. NaN propagates through
 * max/min; argmax/argmin choose the first NaN, else the first of equal
 * values.
 */
#include <math.h>
#include <string.h>

#include "native/reduce.h"

/* ---- Accumulators -------------------------------------------------------------- */

/* A partial result over part of a row. */
typedef struct red_acc {
  union {
    double d;
    float f;
    int64_t i;
    double c[2];
    float cf[2];
  } v;
  int64_t index; /* index kinds: the row position of the chosen element */
  bool any;      /* max/min kinds: false while no element was seen */
} red_acc;

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
#define RED_COLS 64 /* rows reduced side by side (below) */

/* Pairwise sum of n elements `s` apart, in ACC: blocks of KD_SUM_BLOCK,
 * each summed with 16 accumulators when contiguous (the loop vectorises),
 * else with 4; name##_cols sums nc rows side by side (element i of row c at
 * p[i * s + c], s != 1: the columns of a row-major matrix) with exactly the
 * operations name does on each of them, so that the result of a row does
 * not depend on which of the two summed it. */
#define DEF_FSUM(name, T, ACC, LOAD)                                                 \
  static ACC name##_block(const T *p, int64_t n, int64_t s) {                       \
    int64_t i = 0;                                                                  \
    ACC r = 0;                                                                      \
    if (s == 1) {                                                                   \
      ACC a[16];                                                                    \
      for (int k = 0; k < 16; k++) a[k] = 0;                                        \
      for (; i + 16 <= n; i += 16)                                                  \
        for (int k = 0; k < 16; k++) a[k] += (ACC)LOAD(p[i + k]);                   \
      for (; i < n; i++) r += (ACC)LOAD(p[i]);                                      \
      for (int w = 8; w > 0; w /= 2)                                                \
        for (int k = 0; k < w; k++) a[k] += a[k + w];                               \
      return a[0] + r;                                                              \
    }                                                                               \
    ACC a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                             \
    for (; i + 4 <= n; i += 4) {                                                    \
      a0 += (ACC)LOAD(p[i * s]);                                                    \
      a1 += (ACC)LOAD(p[(i + 1) * s]);                                              \
      a2 += (ACC)LOAD(p[(i + 2) * s]);                                              \
      a3 += (ACC)LOAD(p[(i + 3) * s]);                                              \
    }                                                                               \
    for (; i < n; i++) r += (ACC)LOAD(p[i * s]);                                    \
    return ((a0 + a2) + (a1 + a3)) + r;                                             \
  }                                                                                 \
  static ACC name(const T *p, int64_t n, int64_t s) {                               \
    if (n <= KD_SUM_BLOCK) return name##_block(p, n, s);                            \
    int64_t h = (n / 2 + KD_SUM_BLOCK - 1) / KD_SUM_BLOCK * KD_SUM_BLOCK;           \
    return name(p, h, s) + name(p + h * s, n - h, s);                               \
  }                                                                                 \
  static void name##_cols_block(const T *p, int64_t n, int64_t s, int nc, ACC *out) { \
    ACC a0[RED_COLS], a1[RED_COLS], a2[RED_COLS], a3[RED_COLS], r[RED_COLS];        \
    for (int c = 0; c < nc; c++) a0[c] = a1[c] = a2[c] = a3[c] = r[c] = 0;          \
    int64_t i = 0;                                                                  \
    for (; i + 4 <= n; i += 4) {                                                    \
      const T *q = p + i * s;                                                       \
      for (int c = 0; c < nc; c++) a0[c] += (ACC)LOAD(q[c]);                        \
      for (int c = 0; c < nc; c++) a1[c] += (ACC)LOAD(q[s + c]);                    \
      for (int c = 0; c < nc; c++) a2[c] += (ACC)LOAD(q[2 * s + c]);                \
      for (int c = 0; c < nc; c++) a3[c] += (ACC)LOAD(q[3 * s + c]);                \
    }                                                                               \
    for (; i < n; i++)                                                              \
      for (int c = 0; c < nc; c++) r[c] += (ACC)LOAD(p[i * s + c]);                 \
    for (int c = 0; c < nc; c++) out[c] = ((a0[c] + a2[c]) + (a1[c] + a3[c])) + r[c]; \
  }                                                                                 \
  static void name##_cols(const T *p, int64_t n, int64_t s, int nc, ACC *out) {     \
    if (n <= KD_SUM_BLOCK) {                                                        \
      name##_cols_block(p, n, s, nc, out);                                          \
      return;                                                                       \
    }                                                                               \
    int64_t h = (n / 2 + KD_SUM_BLOCK - 1) / KD_SUM_BLOCK * KD_SUM_BLOCK;           \
    ACC right[RED_COLS];                                                            \
    name##_cols(p, h, s, nc, out);                                                  \
    name##_cols(p + h * s, n - h, s, nc, right);                                    \
    for (int c = 0; c < nc; c++) out[c] = out[c] + right[c];                        \
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
  void (*init)(red_acc *a);
  /* n elements s apart (element strides), the first at row position base */
  void (*step)(red_acc *a, const char *p, int64_t n, int64_t s, int64_t base);
  void (*combine)(red_acc *a, const red_acc *b);
  void (*write)(const red_acc *a, char *o0, char *o1, kd_dtype out_dtype);
  /* float sums: nc adjacent strided rows side by side (the columns of a
   * matrix), as one step each would do */
  void (*cols)(red_acc *acc, const char *p, int64_t n, int64_t s, int nc);
  /* step over a row in consecutive parts gives what one step gives (every
   * kind but the float and complex sums, whose blocks would move) */
  bool split_steps;
} red_vt;

static void init_zero(red_acc *a) { memset(a, 0, sizeof *a); }

/* float family accumulators: v.f (float16/bfloat16/float32), v.d (float64) */
static void init_one_f(red_acc *a) { init_zero(a); a->v.f = 1.0f; }
static void init_one_d(red_acc *a) { init_zero(a); a->v.d = 1.0; }
static void init_one_i(red_acc *a) { init_zero(a); a->v.i = 1; }
static void init_one_cf(red_acc *a) { init_zero(a); a->v.cf[0] = 1.0f; }
static void init_one_c(red_acc *a) { init_zero(a); a->v.c[0] = 1.0; }
static void init_true(red_acc *a) { init_zero(a); a->v.i = 1; }
/* float16 / bfloat16 sums: partials of a split row stay in float32 */
static void comb_add_f(red_acc *a, const red_acc *b) { a->v.f += b->v.f; }

static void mul_cf(red_acc *a, const red_acc *b) {
  float re = a->v.cf[0] * b->v.cf[0] - a->v.cf[1] * b->v.cf[1];
  float im = a->v.cf[0] * b->v.cf[1] + a->v.cf[1] * b->v.cf[0];
  a->v.cf[0] = re;
  a->v.cf[1] = im;
}
static void mul_c(red_acc *a, const red_acc *b) {
  double re = a->v.c[0] * b->v.c[0] - a->v.c[1] * b->v.c[1];
  double im = a->v.c[0] * b->v.c[1] + a->v.c[1] * b->v.c[0];
  a->v.c[0] = re;
  a->v.c[1] = im;
}

/* ---- sum / prod steps and writes ------------------------------------------------- */

static void step_sum_f32(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.f += fsum_f32((const float *)p, n, s);
}
static void step_sum_f64(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.d += fsum_f64((const double *)p, n, s);
}
static void step_sum_half(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.f += fsum_half((const uint16_t *)p, n, s);
}
static void step_sum_bf16(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  a->v.f += fsum_bf16((const uint16_t *)p, n, s);
}
/* The same over nc rows side by side (see DEF_FSUM): acc[c] as init_zero
 * and one step over row c would leave it. */
#define DEF_COLS_SUM(tn, T, ACC, FIELD)                                                     \
  static void cols_sum_##tn(red_acc *acc, const char *p, int64_t n, int64_t s, int nc) {    \
    ACC v[RED_COLS];                                                                       \
    fsum_##tn##_cols((const T *)p, n, s, nc, v);                                           \
    for (int c = 0; c < nc; c++) {                                                         \
      init_zero(&acc[c]);                                                                  \
      acc[c].v.FIELD += v[c];                                                              \
    }                                                                                      \
  }
DEF_COLS_SUM(f32, float, float, f)
DEF_COLS_SUM(f64, double, double, d)
DEF_COLS_SUM(half, uint16_t, float, f)
DEF_COLS_SUM(bf16, uint16_t, float, f)
#undef DEF_COLS_SUM
#define DEF_STEP_ISUM(tn, T)                                                                   \
  static void step_sum_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                   \
    a->v.i = (int64_t)((uint64_t)a->v.i + isum_##tn((const T *)p, n, s));                     \
  }
DEF_STEP_ISUM(u8, uint8_t)
DEF_STEP_ISUM(i8, int8_t)
DEF_STEP_ISUM(i16, int16_t)
DEF_STEP_ISUM(i32, int32_t)
DEF_STEP_ISUM(i64, int64_t)
#undef DEF_STEP_ISUM

static void step_sum_c64(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const float *q = (const float *)p;
  a->v.cf[0] += fsum_f32(q, n, 2 * s);
  a->v.cf[1] += fsum_f32(q + 1, n, 2 * s);
}
static void step_sum_c128(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const double *q = (const double *)p;
  a->v.c[0] += fsum_f64(q, n, 2 * s);
  a->v.c[1] += fsum_f64(q + 1, n, 2 * s);
}

#define DEF_STEP_PROD(tn, T, ACC, FIELD, LOAD)                                                  \
  static void step_prod_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
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
  static void step_prod_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
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
static void step_prod_c64(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const float *q = (const float *)p;
  for (int64_t i = 0; i < n; i++) {
    red_acc x;
    x.v.cf[0] = q[2 * i * s];
    x.v.cf[1] = q[2 * i * s + 1];
    mul_cf(a, &x);
  }
}
static void step_prod_c128(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) {
  (void)b;
  const double *q = (const double *)p;
  for (int64_t i = 0; i < n; i++) {
    red_acc x;
    x.v.c[0] = q[2 * i * s];
    x.v.c[1] = q[2 * i * s + 1];
    mul_c(a, &x);
  }
}

static void wr_f32(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(float *)o = a->v.f;
}
static void wr_half(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint16_t *)o = kd_float_to_half(a->v.f);
}
static void wr_bf16(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint16_t *)o = kd_float_to_bfloat16(a->v.f);
}
static void wr_f64(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(double *)o = a->v.d;
}
static void wr_c64(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  memcpy(o, a->v.cf, 2 * sizeof(float));
}
static void wr_c128(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  memcpy(o, a->v.c, 2 * sizeof(double));
}
static void wr_bool(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint8_t *)o = a->v.i != 0;
}
#define DEF_WR_INT(tn, T)                                                  \
  static void wr_##tn(const red_acc *a, char *o, char *o1, kd_dtype od) { \
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
  static void step_##name##_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
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
  static void step_##name##_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
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
  static void step_##name##_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                     \
    const T *q = (const T *)p;                                                                   \
    if (n <= 0) return;                                                                          \
    int64_t m = a->any ? a->v.i : (int64_t)q[0];                                                 \
    for (int64_t i = 0; i < n; i++) m = (int64_t)q[i * s] CMP m ? (int64_t)q[i * s] : m;        \
    a->v.i = m;                                                                                  \
    a->any = true;                                                                               \
  }
#define DEF_IARGSTEP(name, tn, T, CMP)                                                           \
  static void step_##name##_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
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
static void comb_max_d(red_acc *a, const red_acc *b) {
  if (!b->any) return;
  if (!a->any || (!isnan(a->v.d) && (isnan(b->v.d) || b->v.d > a->v.d))) *a = *b;
}
static void comb_min_d(red_acc *a, const red_acc *b) {
  if (!b->any) return;
  if (!a->any || (!isnan(a->v.d) && (isnan(b->v.d) || b->v.d < a->v.d))) *a = *b;
}
static void comb_max_i(red_acc *a, const red_acc *b) {
  if (!b->any) return;
  if (!a->any || b->v.i > a->v.i) *a = *b;
}
static void comb_min_i(red_acc *a, const red_acc *b) {
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
static void wr_val_d(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1;
  put_d(o, od, a->v.d);
}
static void wr_val_i(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1;
  put_i(o, od, a->v.i);
}
static void wr_idx_d(const red_acc *a, char *o, char *o1, kd_dtype od) {
  if (o) put_d(o, od, a->v.d);
  *(int64_t *)o1 = a->index;
}
static void wr_idx_i(const red_acc *a, char *o, char *o1, kd_dtype od) {
  if (o) put_i(o, od, a->v.i);
  *(int64_t *)o1 = a->index;
}

/* ---- all / any ---------------------------------------------------------------------- */

#define DEF_ALLANY(tn, T, NZ)                                                                 \
  static void step_all_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
    (void)b;                                                                                  \
    const T *q = (const T *)p;                                                                \
    if (!a->v.i) return;                                                                      \
    for (int64_t i = 0; i < n; i++)                                                           \
      if (!(NZ(q, i * s))) {                                                                  \
        a->v.i = 0;                                                                           \
        return;                                                                               \
      }                                                                                       \
  }                                                                                           \
  static void step_any_##tn(red_acc *a, const char *p, int64_t n, int64_t s, int64_t b) { \
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

static void comb_and(red_acc *a, const red_acc *b) { a->v.i = a->v.i && b->v.i; }
static void comb_or(red_acc *a, const red_acc *b) { a->v.i = a->v.i || b->v.i; }
/* bool or uint8: 1 or 0 */
static void wr_allany(const red_acc *a, char *o, char *o1, kd_dtype od) {
  (void)o1, (void)od;
  *(uint8_t *)o = a->v.i != 0;
}

/* ---- The table ---------------------------------------------------------------------- */

/* The functions of `kind` (MEAN counts as SUM) over elements of dtype dt;
 * false when there are none. combine is set only for what kdk_iter_split_row
 * runs: ALL, ANY, ARGMAX, ARGMIN, and float16 / bfloat16 sums (whose
 * partials would otherwise be rounded to 16 bits, as kdk_iter_reduce_rows
 * keeps them in the output's dtype). */
static bool get_vt(kdk_reduce_kind kind, kd_dtype dt, red_vt *vt) {
  memset(vt, 0, sizeof *vt);
  bool flt = dt == KD_FLOAT16 || dt == KD_BFLOAT16 || dt == KD_FLOAT32;
#define PICK(pfx)                                 \
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
  case KDK_REDUCE_SUM:
  case KDK_REDUCE_MEAN:
  case KDK_REDUCE_PROD: {
    bool sum = kind != KDK_REDUCE_PROD;
    switch (dt) {
    case KD_COMPLEX64:
      vt->step = sum ? step_sum_c64 : step_prod_c64;
      vt->init = sum ? init_zero : init_one_cf;
      vt->write = wr_c64;
      return true;
    case KD_COMPLEX128:
      vt->step = sum ? step_sum_c128 : step_prod_c128;
      vt->init = sum ? init_zero : init_one_c;
      vt->write = wr_c128;
      return true;
    default: break;
    }
    if (sum) {
      PICK(step_sum_)
      vt->cols = dt == KD_FLOAT32   ? cols_sum_f32
                 : dt == KD_FLOAT64 ? cols_sum_f64
                 : dt == KD_FLOAT16 ? cols_sum_half
                 : dt == KD_BFLOAT16 ? cols_sum_bf16
                                     : NULL;
    } else {
      PICK(step_prod_)
    }
    if (!vt->step) return false;
    vt->split_steps = !vt->cols;
    if (flt) {
      vt->init = sum ? init_zero : init_one_f;
      if (sum && dt != KD_FLOAT32) vt->combine = comb_add_f;
      vt->write = dt == KD_FLOAT32 ? wr_f32 : dt == KD_FLOAT16 ? wr_half : wr_bf16;
    } else if (dt == KD_FLOAT64) {
      vt->init = sum ? init_zero : init_one_d;
      vt->write = wr_f64;
    } else {
      vt->init = sum ? init_zero : init_one_i;
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
  case KDK_REDUCE_MAX:
  case KDK_REDUCE_MIN:
  case KDK_REDUCE_ARGMAX:
  case KDK_REDUCE_ARGMIN: {
    bool fl = flt || dt == KD_FLOAT64;
    vt->init = init_zero;
    vt->split_steps = true;
    if (kind == KDK_REDUCE_MAX) {
      PICK(step_max_)
      vt->write = fl ? wr_val_d : wr_val_i;
    } else if (kind == KDK_REDUCE_MIN) {
      PICK(step_min_)
      vt->write = fl ? wr_val_d : wr_val_i;
    } else if (kind == KDK_REDUCE_ARGMAX) {
      PICK(step_argmax_)
      vt->combine = fl ? comb_max_d : comb_max_i;
      vt->write = fl ? wr_idx_d : wr_idx_i;
    } else {
      PICK(step_argmin_)
      vt->combine = fl ? comb_min_d : comb_min_i;
      vt->write = fl ? wr_idx_d : wr_idx_i;
    }
    return vt->step != NULL;
  }
  case KDK_REDUCE_ALL:
  case KDK_REDUCE_ANY: {
    bool all = kind == KDK_REDUCE_ALL;
    vt->init = all ? init_true : init_zero;
    vt->combine = all ? comb_and : comb_or;
    vt->write = wr_allany;
    vt->split_steps = true;
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
#undef PICK
  return false;
}

/* ---- Running a reduction over the iterator ------------------------------------------- */

#define MAX_PIECES 64

/* What the loops of one reduction read. */
typedef struct red_run {
  red_vt vt;
  int nt;            /* operands: the outputs, then the input (operand nt - 1) */
  bool index_only;   /* ARGMAX / ARGMIN with one output: it takes the indices */
  kd_dtype dtype;    /* the input's dtype (and the values') */
  int64_t in_size;   /* its element size */
  red_acc *pieces;   /* kdk_iter_split_row: one accumulator per piece */
} red_run;

/* Writes acc into the outputs at o0 (and o1). */
static void emit(const red_run *r, const red_acc *acc, char *o0, char *o1) {
  if (r->nt == 3)
    r->vt.write(acc, o0, o1, r->dtype);
  else if (r->index_only)
    r->vt.write(acc, NULL, o0, r->dtype);
  else
    r->vt.write(acc, o0, NULL, r->dtype);
}

#define RED_TILE 32 /* elements of a row per step when rows go side by side */

/* size1 rows of size0 elements: each reduced into its outputs. Rows that lie
 * side by side in memory (row j + 1 starts one element after row j) and
 * step by more than one element (the columns of a matrix reduced over its
 * first dim) go RED_COLS at a time, reading along memory: float sums
 * through vt.cols, the other kinds in tiles of RED_TILE elements per row
 * and step. Either way each row gets the very result it gets alone. */
static void rows_loop(void *ctx, char **data, const int64_t *strides, int64_t size0,
                      int64_t size1) {
  const red_run *r = ctx;
  int nt = r->nt, in = nt - 1;
  int64_t s = strides[in] / r->in_size;
  bool side = size1 > 1 && s != 1 && strides[nt + in] == r->in_size;
  if (side && (r->vt.cols || r->vt.split_steps)) {
    red_acc acc[RED_COLS];
    for (int64_t j0 = 0; j0 < size1; j0 += RED_COLS) {
      int nc = size1 - j0 < RED_COLS ? (int)(size1 - j0) : RED_COLS;
      const char *p = data[in] + j0 * r->in_size;
      if (r->vt.cols) {
        r->vt.cols(acc, p, size0, s, nc);
      } else {
        for (int c = 0; c < nc; c++) r->vt.init(&acc[c]);
        for (int64_t i = 0; i < size0; i += RED_TILE) {
          int64_t len = size0 - i < RED_TILE ? size0 - i : RED_TILE;
          for (int c = 0; c < nc; c++)
            r->vt.step(&acc[c], p + (i * s + c) * r->in_size, len, s, i);
        }
      }
      for (int c = 0; c < nc; c++) {
        int64_t j = j0 + c;
        emit(r, &acc[c], data[0] + j * strides[nt], nt == 3 ? data[1] + j * strides[nt + 1] : NULL);
      }
    }
    return;
  }
  for (int64_t j = 0; j < size1; j++) {
    red_acc acc;
    r->vt.init(&acc);
    r->vt.step(&acc, data[in] + j * strides[nt + in], size0, s, 0);
    emit(r, &acc, data[0] + j * strides[nt], nt == 3 ? data[1] + j * strides[nt + 1] : NULL);
  }
}

/* kdk_iter_split_row: piece `part` of the one row into its accumulator
 * (`begin` makes the indices count from the row's start). */
static void piece_loop(void *ctx, int part, char **data, const int64_t *strides, int64_t begin,
                       int64_t len) {
  const red_run *r = ctx;
  int in = r->nt - 1;
  r->vt.init(&r->pieces[part]);
  r->vt.step(&r->pieces[part], data[in], len, strides[in] / r->in_size, begin);
}

/* mean: every output divided by its row's length (in double, rounded once). */
static void divide_loop(void *ctx, char **data, const int64_t *strides, int64_t size0,
                        int64_t size1) {
  const red_run *r = ctx;
  double n = (double)size0;
  for (int64_t j = 0; j < size1; j++) {
    char *q = data[0] + j * strides[r->nt];
    switch (r->dtype) {
    case KD_FLOAT32: *(float *)q = (float)(*(float *)q / n); break;
    case KD_FLOAT64: *(double *)q /= n; break;
    case KD_COMPLEX64:
      ((float *)q)[0] = (float)(((float *)q)[0] / n);
      ((float *)q)[1] = (float)(((float *)q)[1] / n);
      break;
    case KD_COMPLEX128:
      ((double *)q)[0] /= n;
      ((double *)q)[1] /= n;
      break;
    default: break;
    }
  }
}

/* The kernel names, from the one list of reductions (kdk/stubs.h). */
static const char *const kind_kernels[] = {
#define R_KERNEL(E, kernel) [KDK_REDUCE_##E] = kernel,
    KDK_REDUCE_KINDS(R_KERNEL)
#undef R_KERNEL
};
_Static_assert(sizeof kind_kernels / sizeof kind_kernels[0] == KDK_REDUCE_KIND_COUNT,
               "one kernel name per reduction");

static const char *kind_kernel(kdk_reduce_kind kind) {
  return (unsigned)kind < KDK_REDUCE_KIND_COUNT ? kind_kernels[kind] : "argmin_cpu";
}

static kd_status reduce_kernel(const kdk_iter *it, kdk_reduce_kind kind) {
  if (kdk_iter_is_meta(it)) return KD_OK;
  red_run r;
  r.nt = kdk_iter_ntensors(it);
  r.dtype = kdk_iter_input_dtype(it, 0);
  r.in_size = (int64_t)kd_dtype_size(r.dtype);
  r.index_only = (kind == KDK_REDUCE_ARGMAX || kind == KDK_REDUCE_ARGMIN) && r.nt == 2;
  r.pieces = NULL;
  bool mean_ok = kind != KDK_REDUCE_MEAN || r.dtype == KD_FLOAT32 || r.dtype == KD_FLOAT64 ||
                 kd_dtype_is_complex(r.dtype);
  if (r.nt < 2 || r.nt > 3 || !mean_ok || !get_vt(kind, r.dtype, &r.vt))
    return kd_set_error(KD_ETYPE, "\"%s\" not implemented for '%s'", kind_kernel(kind),
                        kd_dtype_name(r.dtype));
  if (!r.vt.combine) {
    /* sum, prod, mean, max, min: output and input of one dtype, partials in it */
    kd_status st = kdk_iter_reduce_rows(it, rows_loop, &r, KDK_GRAIN_SIZE);
    if (st) return st;
    if (kind != KDK_REDUCE_MEAN) return KD_OK;
    /* one division per row: threads only for many rows */
    if (kdk_iter_num_rows(it) < KDK_GRAIN_SIZE)
      kdk_iter_serial_for_each(it, divide_loop, &r);
    else
      kdk_iter_for_each(it, divide_loop, &r, KDK_GRAIN_SIZE);
    return KD_OK;
  }
  red_acc pieces[MAX_PIECES];
  r.pieces = pieces;
  int n = kdk_iter_split_row(it, piece_loop, &r, MAX_PIECES, KDK_GRAIN_SIZE);
  if (n == 0) {
    kdk_iter_for_each(it, rows_loop, &r, KDK_GRAIN_SIZE);
    return KD_OK;
  }
  red_acc acc = pieces[0];
  for (int i = 1; i < n; i++) r.vt.combine(&acc, &pieces[i]);
  emit(&r, &acc, kdk_iter_data(it, 0), r.nt == 3 ? kdk_iter_data(it, 1) : NULL);
  return KD_OK;
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

typedef void cumsum_fn(const char *in, char *out, int64_t n, int64_t is, int64_t os);

typedef struct cumsum_run {
  cumsum_fn *fn;
  int64_t size; /* element size */
} cumsum_run;

/* size1 rows: output 0, input 1 */
static void cumsum_rows(void *ctx, char **data, const int64_t *strides, int64_t size0,
                        int64_t size1) {
  const cumsum_run *c = ctx;
  for (int64_t j = 0; j < size1; j++)
    c->fn(data[1] + j * strides[3], data[0] + j * strides[2], size0, strides[1] / c->size,
          strides[0] / c->size);
}

static kd_status cumsum_kernel(const kdk_iter *it) {
  if (kdk_iter_is_meta(it)) return KD_OK;
  kd_dtype dt = kdk_iter_dtype(it, 0);
  cumsum_run c = {NULL, (int64_t)kd_dtype_size(dt)};
  switch (dt) {
  case KD_BOOL: c.fn = cumsum_b8; break;
  case KD_UINT8: c.fn = cumsum_u8; break;
  case KD_INT8: c.fn = cumsum_i8; break;
  case KD_INT16: c.fn = cumsum_i16; break;
  case KD_INT32: c.fn = cumsum_i32; break;
  case KD_INT64: c.fn = cumsum_i64; break;
  case KD_FLOAT16: c.fn = cumsum_half; break;
  case KD_BFLOAT16: c.fn = cumsum_bf16; break;
  case KD_FLOAT32: c.fn = cumsum_f32; break;
  case KD_FLOAT64: c.fn = cumsum_f64; break;
  case KD_COMPLEX64: c.fn = cumsum_c64; break;
  case KD_COMPLEX128: c.fn = cumsum_c128; break;
  default: break;
  }
  if (!c.fn) return kd_set_error(KD_ETYPE, "\"cumsum_cpu\" not implemented for '%s'", kd_dtype_name(dt));
  if (kdk_iter_ntensors(it) != 2 || kdk_iter_input_dtype(it, 0) != dt)
    return kd_set_error(KD_ETYPE, "cumsum_cpu: the output (%s) and the input (%s) differ in dtype",
                        kd_dtype_name(dt), kd_dtype_name(kdk_iter_input_dtype(it, 0)));
  kdk_iter_for_each(it, cumsum_rows, &c, KDK_GRAIN_SIZE);
  return KD_OK;
}

KD_REGISTER_STUB(reduce_stub, reduce_kernel);
KD_REGISTER_STUB(cumsum_stub, cumsum_kernel);
