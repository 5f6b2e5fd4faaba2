/*
 * test_kd_print.c: the printer of the kd command line (tools/kd/print.c).
 * Every expected string was worked out from PyTorch 1.13's printing rules
 * (torch/_tensor_str.py, default options) and Python's repr: widths and
 * float modes, nan/inf, line wrapping and suffix wrapping, summarization of
 * long tensors, nesting, views, empty / 0-dim / meta tensors, the dtype and
 * device suffixes, values of every tag, and the failure paths (which must
 * leave the stream untouched).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"
#include "print.h"

/* ---- Helpers ---------------------------------------------------------- */

/* Runs the printer into a memory stream; returns what it wrote (the caller
 * frees it) and its return code in *rc. */
static char *render_tensor(const kd_tensor *t, int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  *rc = kdc_print_tensor(f, t);
  assert_int_equal(fclose(f), 0);
  return buf;
}

static char *render_value(const kd_value *v, int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  *rc = kdc_print_value(f, v);
  assert_int_equal(fclose(f), 0);
  return buf;
}

#define EXPECT_TENSOR(t, want)                                                   \
  do {                                                                           \
    int rc_;                                                                     \
    char *got_ = render_tensor((t), &rc_);                                       \
    if (rc_ != 0) fail_msg("kdc_print_tensor returned %d: %s", rc_, kd_last_error()); \
    KD_ASSERT_STR_EQ(got_, (want));                                              \
    free(got_);                                                                  \
  } while (0)

#define EXPECT_VALUE(v, want)                                                    \
  do {                                                                           \
    int rc_;                                                                     \
    char *got_ = render_value((v), &rc_);                                        \
    if (rc_ != 0) fail_msg("kdc_print_value returned %d: %s", rc_, kd_last_error()); \
    KD_ASSERT_STR_EQ(got_, (want));                                              \
    free(got_);                                                                  \
  } while (0)

/* Writes v as one element of dt (complex: real part v, imaginary 0). */
static void put_elem(kd_dtype dt, unsigned char *dst, double v) {
  switch (dt) {
    case KD_BOOL: *dst = v != 0; break;
    case KD_UINT8: *dst = (uint8_t)v; break;
    case KD_INT8: { int8_t x = (int8_t)v; memcpy(dst, &x, 1); break; }
    case KD_INT16: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
    case KD_INT32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    case KD_INT64: { int64_t x = (int64_t)v; memcpy(dst, &x, 8); break; }
    case KD_FLOAT16: { uint16_t x = kd_float_to_half((float)v); memcpy(dst, &x, 2); break; }
    case KD_BFLOAT16: { uint16_t x = kd_float_to_bfloat16((float)v); memcpy(dst, &x, 2); break; }
    case KD_FLOAT32: { float x = (float)v; memcpy(dst, &x, 4); break; }
    case KD_FLOAT64: memcpy(dst, &v, 8); break;
    case KD_COMPLEX64: { float x[2] = {(float)v, 0}; memcpy(dst, x, 8); break; }
    case KD_COMPLEX128: { double x[2] = {v, 0}; memcpy(dst, x, 16); break; }
    default: fail_msg("bad dtype");
  }
}

static int64_t numel_of(int ndim, const int64_t *sizes) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  return n;
}

/* A cpu tensor of dtype dt holding `vals` (row-major), or 0, 1, 2, ... when
 * vals is NULL. */
static kd_tensor *mk(kd_dtype dt, int ndim, const int64_t *sizes, const double *vals) {
  int64_t n = numel_of(ndim, sizes);
  size_t isz = kd_dtype_size(dt);
  unsigned char *buf = calloc((size_t)(n ? n : 1), isz);
  assert_non_null(buf);
  for (int64_t i = 0; i < n; i++) put_elem(dt, buf + (size_t)i * isz, vals ? vals[i] : (double)i);
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, dt, buf, &t));
  free(buf);
  return t;
}

static kd_tensor *mk1(kd_dtype dt, int64_t n, const double *vals) { return mk(dt, 1, &n, vals); }

static kd_tensor *mk0(kd_dtype dt, double v) { return mk(dt, 0, NULL, &v); }

/* A complex tensor from (re, im) pairs. */
static kd_tensor *mkc(kd_dtype dt, int ndim, const int64_t *sizes, const double *pairs) {
  int64_t n = numel_of(ndim, sizes);
  size_t isz = kd_dtype_size(dt);
  unsigned char *buf = calloc((size_t)(n ? n : 1), isz);
  assert_non_null(buf);
  for (int64_t i = 0; i < n; i++) {
    if (dt == KD_COMPLEX64) {
      float x[2] = {(float)pairs[2 * i], (float)pairs[2 * i + 1]};
      memcpy(buf + (size_t)i * isz, x, sizeof x);
    } else {
      memcpy(buf + (size_t)i * isz, pairs + 2 * i, 2 * sizeof(double));
    }
  }
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, dt, buf, &t));
  free(buf);
  return t;
}

static kd_tensor *view(const kd_tensor *base, int ndim, const int64_t *sizes,
                       const int64_t *strides, int64_t offset) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(base, ndim, sizes, strides, offset, &t));
  return t;
}

/* ---- Integers and bools ------------------------------------------------ */

static void test_int_widths(void **state) {
  (void)state;
  kd_tensor *t = mk1(KD_INT64, 3, (const double[]){1, -20, 300});
  EXPECT_TENSOR(t, "tensor([  1, -20, 300])");
  kd_tensor_release(t);

  int64_t s22[2] = {2, 2};
  t = mk(KD_INT32, 2, s22, (const double[]){1, -2, 3, 4});
  EXPECT_TENSOR(t, "tensor([[ 1, -2],\n"
                   "        [ 3,  4]], dtype=int32)");
  kd_tensor_release(t);

  t = mk1(KD_INT64, 2, (const double[]){-9, 7});
  EXPECT_TENSOR(t, "tensor([-9,  7])");
  kd_tensor_release(t);

  /* The widest int64 values. */
  int64_t big[2] = {INT64_MIN, INT64_MAX};
  int64_t n2 = 2;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n2, KD_INT64, big, &t));
  EXPECT_TENSOR(t, "tensor([-9223372036854775808,  9223372036854775807])");
  kd_tensor_release(t);

  t = mk1(KD_BOOL, 2, (const double[]){1, 0});
  EXPECT_TENSOR(t, "tensor([ True, False])");
  kd_tensor_release(t);
  t = mk1(KD_BOOL, 2, (const double[]){1, 1});
  EXPECT_TENSOR(t, "tensor([True, True])");
  kd_tensor_release(t);
}

/* ---- Floating point modes ---------------------------------------------- */

static void test_float_int_mode(void **state) {
  (void)state;
  kd_tensor *t = mk1(KD_FLOAT32, 3, (const double[]){1, 2, -3});
  EXPECT_TENSOR(t, "tensor([ 1.,  2., -3.])");
  kd_tensor_release(t);
  /* max / min == 1000 is not above 1000. */
  t = mk1(KD_FLOAT32, 2, (const double[]){1, 1000});
  EXPECT_TENSOR(t, "tensor([   1., 1000.])");
  kd_tensor_release(t);
  /* Zeros do not count towards the width but are padded to it. */
  t = mk1(KD_FLOAT32, 2, (const double[]){100, 0});
  EXPECT_TENSOR(t, "tensor([100.,   0.])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 2, (const double[]){0, 0});
  EXPECT_TENSOR(t, "tensor([0., 0.])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 2, (const double[]){-0.0, 1});
  EXPECT_TENSOR(t, "tensor([-0., 1.])");
  kd_tensor_release(t);
}

static void test_float_fixed(void **state) {
  (void)state;
  kd_tensor *t = mk1(KD_FLOAT32, 3, (const double[]){1.5, -0.25, 3.125});
  EXPECT_TENSOR(t, "tensor([ 1.5000, -0.2500,  3.1250])");
  kd_tensor_release(t);
  /* Rounded to 4 decimals from the exact binary value: 1.03125 is a tie
   * (to even), 2.00005 lies just below 2.00005 in binary. */
  t = mk1(KD_FLOAT64, 3, (const double[]){1.03125, 0.1, 2.00005});
  EXPECT_TENSOR(t, "tensor([1.0312, 0.1000, 2.0000], dtype=float64)");
  kd_tensor_release(t);
}

static void test_float_sci(void **state) {
  (void)state;
  /* Not integral, max / min > 1000. */
  kd_tensor *t = mk1(KD_FLOAT32, 2, (const double[]){1e5, 1.5});
  EXPECT_TENSOR(t, "tensor([1.0000e+05, 1.5000e+00])");
  kd_tensor_release(t);
  /* min < 1e-4 alone. */
  t = mk1(KD_FLOAT32, 2, (const double[]){1e-5, 2e-5});
  EXPECT_TENSOR(t, "tensor([1.0000e-05, 2.0000e-05])");
  kd_tensor_release(t);
  /* Integral, max / min > 1000. */
  t = mk1(KD_FLOAT32, 2, (const double[]){1, 1e4});
  EXPECT_TENSOR(t, "tensor([1.0000e+00, 1.0000e+04])");
  kd_tensor_release(t);
  /* Integral, max > 1e8. */
  t = mk1(KD_FLOAT64, 1, (const double[]){2e8});
  EXPECT_TENSOR(t, "tensor([2.0000e+08], dtype=float64)");
  kd_tensor_release(t);
  /* Negative values and three-digit exponents. */
  t = mk1(KD_FLOAT64, 2, (const double[]){-1.5e100, 2e-3});
  EXPECT_TENSOR(t, "tensor([-1.5000e+100,   2.0000e-03], dtype=float64)");
  kd_tensor_release(t);
}

static void test_nan_inf(void **state) {
  (void)state;
  /* A nan with its sign bit set still prints as nan. */
  kd_tensor *t = mk1(KD_FLOAT32, 4, (const double[]){1.5, copysign(NAN, -1.0), INFINITY, -INFINITY});
  EXPECT_TENSOR(t, "tensor([1.5000,    nan,    inf,   -inf])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 2, (const double[]){1, NAN});
  EXPECT_TENSOR(t, "tensor([1., nan])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 2, (const double[]){NAN, INFINITY});
  EXPECT_TENSOR(t, "tensor([nan, inf])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 2, (const double[]){1e-5, NAN});
  EXPECT_TENSOR(t, "tensor([1.0000e-05,        nan])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 2, (const double[]){10, -INFINITY});
  EXPECT_TENSOR(t, "tensor([10., -inf])");
  kd_tensor_release(t);
}

/* ---- Line wrapping ---------------------------------------------------- */

static void test_wrapping(void **state) {
  (void)state;
  /* Width 3 + 2 per item: (80 - 7) / 5 = 14 items per line. */
  kd_tensor *t = mk1(KD_FLOAT32, 30, NULL);
  EXPECT_TENSOR(t, "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
                   "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
                   "        28., 29.])");
  kd_tensor_release(t);

  t = mk1(KD_INT64, 30, NULL);
  EXPECT_TENSOR(t, "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
                   "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
  kd_tensor_release(t);

  /* Rows of a matrix sit at indent 8 and continue at 9. */
  double v[40];
  for (int i = 0; i < 40; i++) v[i] = i + 0.5;
  int64_t s[2] = {2, 20};
  t = mk(KD_FLOAT32, 2, s, v);
  EXPECT_TENSOR(t,
                "tensor([[ 0.5000,  1.5000,  2.5000,  3.5000,  4.5000,  5.5000,  6.5000,  7.5000,\n"
                "          8.5000,  9.5000, 10.5000, 11.5000, 12.5000, 13.5000, 14.5000, 15.5000,\n"
                "         16.5000, 17.5000, 18.5000, 19.5000],\n"
                "        [20.5000, 21.5000, 22.5000, 23.5000, 24.5000, 25.5000, 26.5000, 27.5000,\n"
                "         28.5000, 29.5000, 30.5000, 31.5000, 32.5000, 33.5000, 34.5000, 35.5000,\n"
                "         36.5000, 37.5000, 38.5000, 39.5000]])");
  kd_tensor_release(t);

  /* A suffix that would pass column 80 goes on its own line. */
  double w[18];
  for (int i = 0; i < 18; i++) w[i] = 10 + i;
  t = mk1(KD_INT32, 18, w);
  EXPECT_TENSOR(t, "tensor([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27],\n"
                   "       dtype=int32)");
  kd_tensor_release(t);
  /* 16 items: the line is 72 long, counted as 74, + 2 + 11 = 87 > 80. */
  t = mk1(KD_INT32, 16, w);
  EXPECT_TENSOR(t, "tensor([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25],\n"
                   "       dtype=int32)");
  kd_tensor_release(t);
  /* 14 items: 64 long, counted as 66, + 2 + 11 = 79 fits. */
  t = mk1(KD_INT32, 14, w);
  EXPECT_TENSOR(t, "tensor([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23], dtype=int32)");
  kd_tensor_release(t);
  /* PyTorch counts the line as two longer than it is: this 68-column line
   * plus ", dtype=int8" would end at column 80, yet the suffix wraps. */
  double h[12];
  for (int i = 0; i < 12; i++) h[i] = 100 + i;
  t = mk1(KD_INT8, 12, h);
  EXPECT_TENSOR(t, "tensor([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111],\n"
                   "       dtype=int8)");
  kd_tensor_release(t);
  t = mk1(KD_INT8, 11, h);
  EXPECT_TENSOR(t, "tensor([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110], dtype=int8)");
  kd_tensor_release(t);
  /* The last line of a multi-line tensor decides. */
  t = mk1(KD_INT32, 36, NULL);
  EXPECT_TENSOR(t, "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
                   "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35],\n"
                   "       dtype=int32)");
  kd_tensor_release(t);
}

/* ---- Summarization ---------------------------------------------------- */

static void test_summarize_1d(void **state) {
  (void)state;
  kd_tensor *t = mk1(KD_INT64, 2000, NULL);
  EXPECT_TENSOR(t, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  /* A value that is not shown does not count towards the width. */
  int64_t idx = 1000;
  kd_scalar big = kd_scalar_int(1000000);
  KD_ASSERT_OK(kd_tensor_set(t, &idx, &big));
  EXPECT_TENSOR(t, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  kd_tensor_release(t);

  /* 1000 elements are not summarized, 1001 are. */
  t = mk1(KD_INT64, 1000, NULL);
  int rc;
  char *s = render_tensor(t, &rc);
  assert_int_equal(rc, 0);
  assert_null(strstr(s, "..."));
  assert_non_null(strstr(s, "500, 501"));
  free(s);
  kd_tensor_release(t);
  t = mk1(KD_INT64, 1001, NULL);
  EXPECT_TENSOR(t, "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
  kd_tensor_release(t);
}

static void test_summarize_2d(void **state) {
  (void)state;
  int64_t s[2] = {40, 40};
  kd_tensor *t = mk(KD_INT64, 2, s, NULL);
  EXPECT_TENSOR(t, "tensor([[   0,    1,    2,  ...,   37,   38,   39],\n"
                   "        [  40,   41,   42,  ...,   77,   78,   79],\n"
                   "        [  80,   81,   82,  ...,  117,  118,  119],\n"
                   "        ...,\n"
                   "        [1480, 1481, 1482,  ..., 1517, 1518, 1519],\n"
                   "        [1520, 1521, 1522,  ..., 1557, 1558, 1559],\n"
                   "        [1560, 1561, 1562,  ..., 1597, 1598, 1599]])");
  /* Its transpose, a view with strides (1, 40). */
  kd_tensor *tt = view(t, 2, s, (const int64_t[]){1, 40}, 0);
  assert_false(kd_tensor_is_contiguous(tt));
  EXPECT_TENSOR(tt, "tensor([[   0,   40,   80,  ..., 1480, 1520, 1560],\n"
                    "        [   1,   41,   81,  ..., 1481, 1521, 1561],\n"
                    "        [   2,   42,   82,  ..., 1482, 1522, 1562],\n"
                    "        ...,\n"
                    "        [  37,   77,  117,  ..., 1517, 1557, 1597],\n"
                    "        [  38,   78,  118,  ..., 1518, 1558, 1598],\n"
                    "        [  39,   79,  119,  ..., 1519, 1559, 1599]])");
  kd_tensor_release(tt);
  kd_tensor_release(t);

  /* Floats 0, 0.5, ... 799.5: the shown non-zero values span more than
   * 1000x, so scientific; 6 items of width 10 per row line. */
  double v[1600];
  for (int i = 0; i < 1600; i++) v[i] = i * 0.5;
  t = mk(KD_FLOAT32, 2, s, v);
  EXPECT_TENSOR(t, "tensor([[0.0000e+00, 5.0000e-01, 1.0000e+00,  ..., 1.8500e+01, 1.9000e+01,\n"
                   "         1.9500e+01],\n"
                   "        [2.0000e+01, 2.0500e+01, 2.1000e+01,  ..., 3.8500e+01, 3.9000e+01,\n"
                   "         3.9500e+01],\n"
                   "        [4.0000e+01, 4.0500e+01, 4.1000e+01,  ..., 5.8500e+01, 5.9000e+01,\n"
                   "         5.9500e+01],\n"
                   "        ...,\n"
                   "        [7.4000e+02, 7.4050e+02, 7.4100e+02,  ..., 7.5850e+02, 7.5900e+02,\n"
                   "         7.5950e+02],\n"
                   "        [7.6000e+02, 7.6050e+02, 7.6100e+02,  ..., 7.7850e+02, 7.7900e+02,\n"
                   "         7.7950e+02],\n"
                   "        [7.8000e+02, 7.8050e+02, 7.8100e+02,  ..., 7.9850e+02, 7.9900e+02,\n"
                   "         7.9950e+02]])");
  kd_tensor_release(t);
}

static void test_summarize_3d(void **state) {
  (void)state;
  /* The first dimension (2) is short and kept whole. */
  int64_t s[3] = {2, 30, 30};
  kd_tensor *t = mk(KD_INT64, 3, s, NULL);
  EXPECT_TENSOR(t, "tensor([[[   0,    1,    2,  ...,   27,   28,   29],\n"
                   "         [  30,   31,   32,  ...,   57,   58,   59],\n"
                   "         [  60,   61,   62,  ...,   87,   88,   89],\n"
                   "         ...,\n"
                   "         [ 810,  811,  812,  ...,  837,  838,  839],\n"
                   "         [ 840,  841,  842,  ...,  867,  868,  869],\n"
                   "         [ 870,  871,  872,  ...,  897,  898,  899]],\n"
                   "\n"
                   "        [[ 900,  901,  902,  ...,  927,  928,  929],\n"
                   "         [ 930,  931,  932,  ...,  957,  958,  959],\n"
                   "         [ 960,  961,  962,  ...,  987,  988,  989],\n"
                   "         ...,\n"
                   "         [1710, 1711, 1712,  ..., 1737, 1738, 1739],\n"
                   "         [1740, 1741, 1742,  ..., 1767, 1768, 1769],\n"
                   "         [1770, 1771, 1772,  ..., 1797, 1798, 1799]]])");
  kd_tensor_release(t);

  /* Every dimension is cut; the "..." block between 3-D blocks has blank
   * lines on both sides. */
  int64_t s2[3] = {10, 10, 11};
  t = mk(KD_INT32, 3, s2, NULL);
  EXPECT_TENSOR(t, "tensor([[[   0,    1,    2,  ...,    8,    9,   10],\n"
                   "         [  11,   12,   13,  ...,   19,   20,   21],\n"
                   "         [  22,   23,   24,  ...,   30,   31,   32],\n"
                   "         ...,\n"
                   "         [  77,   78,   79,  ...,   85,   86,   87],\n"
                   "         [  88,   89,   90,  ...,   96,   97,   98],\n"
                   "         [  99,  100,  101,  ...,  107,  108,  109]],\n"
                   "\n"
                   "        [[ 110,  111,  112,  ...,  118,  119,  120],\n"
                   "         [ 121,  122,  123,  ...,  129,  130,  131],\n"
                   "         [ 132,  133,  134,  ...,  140,  141,  142],\n"
                   "         ...,\n"
                   "         [ 187,  188,  189,  ...,  195,  196,  197],\n"
                   "         [ 198,  199,  200,  ...,  206,  207,  208],\n"
                   "         [ 209,  210,  211,  ...,  217,  218,  219]],\n"
                   "\n"
                   "        [[ 220,  221,  222,  ...,  228,  229,  230],\n"
                   "         [ 231,  232,  233,  ...,  239,  240,  241],\n"
                   "         [ 242,  243,  244,  ...,  250,  251,  252],\n"
                   "         ...,\n"
                   "         [ 297,  298,  299,  ...,  305,  306,  307],\n"
                   "         [ 308,  309,  310,  ...,  316,  317,  318],\n"
                   "         [ 319,  320,  321,  ...,  327,  328,  329]],\n"
                   "\n"
                   "        ...,\n"
                   "\n"
                   "        [[ 770,  771,  772,  ...,  778,  779,  780],\n"
                   "         [ 781,  782,  783,  ...,  789,  790,  791],\n"
                   "         [ 792,  793,  794,  ...,  800,  801,  802],\n"
                   "         ...,\n"
                   "         [ 847,  848,  849,  ...,  855,  856,  857],\n"
                   "         [ 858,  859,  860,  ...,  866,  867,  868],\n"
                   "         [ 869,  870,  871,  ...,  877,  878,  879]],\n"
                   "\n"
                   "        [[ 880,  881,  882,  ...,  888,  889,  890],\n"
                   "         [ 891,  892,  893,  ...,  899,  900,  901],\n"
                   "         [ 902,  903,  904,  ...,  910,  911,  912],\n"
                   "         ...,\n"
                   "         [ 957,  958,  959,  ...,  965,  966,  967],\n"
                   "         [ 968,  969,  970,  ...,  976,  977,  978],\n"
                   "         [ 979,  980,  981,  ...,  987,  988,  989]],\n"
                   "\n"
                   "        [[ 990,  991,  992,  ...,  998,  999, 1000],\n"
                   "         [1001, 1002, 1003,  ..., 1009, 1010, 1011],\n"
                   "         [1012, 1013, 1014,  ..., 1020, 1021, 1022],\n"
                   "         ...,\n"
                   "         [1067, 1068, 1069,  ..., 1075, 1076, 1077],\n"
                   "         [1078, 1079, 1080,  ..., 1086, 1087, 1088],\n"
                   "         [1089, 1090, 1091,  ..., 1097, 1098, 1099]]], dtype=int32)");
  kd_tensor_release(t);
}

/* ---- Nesting and views ------------------------------------------------ */

static void test_nesting(void **state) {
  (void)state;
  int64_t s3[3] = {2, 2, 2};
  kd_tensor *t = mk(KD_INT64, 3, s3, NULL);
  EXPECT_TENSOR(t, "tensor([[[0, 1],\n"
                   "         [2, 3]],\n"
                   "\n"
                   "        [[4, 5],\n"
                   "         [6, 7]]])");
  kd_tensor_release(t);
  int64_t s4[4] = {2, 1, 1, 2};
  t = mk(KD_INT64, 4, s4, NULL);
  EXPECT_TENSOR(t, "tensor([[[[0, 1]]],\n"
                   "\n"
                   "\n"
                   "        [[[2, 3]]]])");
  kd_tensor_release(t);
}

static void test_non_contiguous(void **state) {
  (void)state;
  int64_t s23[2] = {2, 3};
  kd_tensor *base = mk(KD_INT64, 2, s23, NULL); /* [[0, 1, 2], [3, 4, 5]] */
  kd_tensor *t = view(base, 2, (const int64_t[]){3, 2}, (const int64_t[]){1, 3}, 0);
  EXPECT_TENSOR(t, "tensor([[0, 3],\n"
                   "        [1, 4],\n"
                   "        [2, 5]])");
  kd_tensor_release(t);
  /* A row broadcast with stride 0, starting at element 3. */
  t = view(base, 2, (const int64_t[]){2, 3}, (const int64_t[]){0, 1}, 3);
  EXPECT_TENSOR(t, "tensor([[3, 4, 5],\n"
                   "        [3, 4, 5]])");
  kd_tensor_release(t);
  kd_tensor_release(base);

  /* x[1::3] of arange(10): offset 1, stride 3. */
  base = mk1(KD_INT64, 10, NULL);
  t = view(base, 1, (const int64_t[]){3}, (const int64_t[]){3}, 1);
  EXPECT_TENSOR(t, "tensor([1, 4, 7])");
  kd_tensor_release(t);
  /* A 0-dim view of element 9. */
  t = view(base, 0, NULL, NULL, 9);
  EXPECT_TENSOR(t, "tensor(9)");
  kd_tensor_release(t);
  kd_tensor_release(base);

  /* The formatter looks at the view's values, not the whole storage. */
  base = mk1(KD_FLOAT32, 4, (const double[]){1.5, 1000000, 2.25, 1000000});
  t = view(base, 1, (const int64_t[]){2}, (const int64_t[]){2}, 0);
  EXPECT_TENSOR(t, "tensor([1.5000, 2.2500])");
  kd_tensor_release(t);
  kd_tensor_release(base);
}

/* ---- Empty, 0-dim, meta ------------------------------------------------ */

static kd_tensor *empty(kd_dtype dt, int ndim, const int64_t *sizes, kd_device device) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, device, &t));
  return t;
}

static void test_empty(void **state) {
  (void)state;
  kd_device cpu = kd_device_cpu();
  kd_tensor *t = empty(KD_FLOAT32, 1, (const int64_t[]){0}, cpu);
  EXPECT_TENSOR(t, "tensor([])");
  kd_tensor_release(t);
  t = empty(KD_FLOAT32, 2, (const int64_t[]){0, 3}, cpu);
  EXPECT_TENSOR(t, "tensor([], size=(0, 3))");
  kd_tensor_release(t);
  t = empty(KD_INT32, 1, (const int64_t[]){0}, cpu);
  EXPECT_TENSOR(t, "tensor([], dtype=int32)");
  kd_tensor_release(t);
  /* Without elements even int64 and bool are named. */
  t = empty(KD_INT64, 1, (const int64_t[]){0}, cpu);
  EXPECT_TENSOR(t, "tensor([], dtype=int64)");
  kd_tensor_release(t);
  t = empty(KD_BOOL, 2, (const int64_t[]){2, 0}, cpu);
  EXPECT_TENSOR(t, "tensor([], size=(2, 0), dtype=bool)");
  kd_tensor_release(t);
}

static void test_zero_dim(void **state) {
  (void)state;
  kd_tensor *t = mk0(KD_INT64, 3);
  EXPECT_TENSOR(t, "tensor(3)");
  kd_tensor_release(t);
  t = mk0(KD_FLOAT32, 1.5);
  EXPECT_TENSOR(t, "tensor(1.5000)");
  kd_tensor_release(t);
  t = mk0(KD_FLOAT32, 3);
  EXPECT_TENSOR(t, "tensor(3.)");
  kd_tensor_release(t);
  t = mk0(KD_FLOAT32, 0);
  EXPECT_TENSOR(t, "tensor(0.)");
  kd_tensor_release(t);
  t = mk0(KD_FLOAT32, NAN);
  EXPECT_TENSOR(t, "tensor(nan)");
  kd_tensor_release(t);
  t = mk0(KD_FLOAT32, -INFINITY);
  EXPECT_TENSOR(t, "tensor(-inf)");
  kd_tensor_release(t);
  t = mk0(KD_INT32, -7);
  EXPECT_TENSOR(t, "tensor(-7, dtype=int32)");
  kd_tensor_release(t);
  t = mk0(KD_BOOL, 1);
  EXPECT_TENSOR(t, "tensor(True)");
  kd_tensor_release(t);
  t = mk0(KD_FLOAT64, 1e-5);
  EXPECT_TENSOR(t, "tensor(1.0000e-05, dtype=float64)");
  kd_tensor_release(t);
  t = mkc(KD_COMPLEX64, 0, NULL, (const double[]){1, 2});
  EXPECT_TENSOR(t, "tensor(1.+2.j)");
  kd_tensor_release(t);
}

static void test_meta(void **state) {
  (void)state;
  kd_device meta = {KD_DEVICE_META, 0};
  kd_tensor *t = empty(KD_FLOAT32, 2, (const int64_t[]){2, 3}, meta);
  EXPECT_TENSOR(t, "tensor(..., device='meta', size=(2, 3))");
  kd_tensor_release(t);
  t = empty(KD_FLOAT32, 0, NULL, meta);
  EXPECT_TENSOR(t, "tensor(..., device='meta', size=())");
  kd_tensor_release(t);
  /* Only the default dtype goes unnamed on meta. */
  t = empty(KD_INT64, 1, (const int64_t[]){5}, meta);
  EXPECT_TENSOR(t, "tensor(..., device='meta', size=(5,), dtype=int64)");
  kd_tensor_release(t);
  t = empty(KD_BFLOAT16, 1, (const int64_t[]){0}, meta);
  EXPECT_TENSOR(t, "tensor(..., device='meta', size=(0,), dtype=bfloat16)");
  kd_tensor_release(t);
  /* Large meta tensors cost nothing. */
  t = empty(KD_FLOAT32, 3, (const int64_t[]){100000, 100000, 100000}, meta);
  EXPECT_TENSOR(t, "tensor(..., device='meta', size=(100000, 100000, 100000))");
  kd_tensor_release(t);
}

/* ---- Dtypes ------------------------------------------------------------ */

static void test_dtype_suffixes(void **state) {
  (void)state;
  static const struct {
    kd_dtype dt;
    const char *want;
  } ints[] = {
      {KD_UINT8, "tensor([1, 2], dtype=uint8)"},
      {KD_INT8, "tensor([1, 2], dtype=int8)"},
      {KD_INT16, "tensor([1, 2], dtype=int16)"},
      {KD_INT32, "tensor([1, 2], dtype=int32)"},
      {KD_INT64, "tensor([1, 2])"},
      {KD_FLOAT16, "tensor([1.5000, 2.0000], dtype=float16)"},
      {KD_BFLOAT16, "tensor([1.5000, 2.0000], dtype=bfloat16)"},
      {KD_FLOAT32, "tensor([1.5000, 2.0000])"},
      {KD_FLOAT64, "tensor([1.5000, 2.0000], dtype=float64)"},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    bool fl = kd_dtype_is_floating(ints[i].dt);
    kd_tensor *t = mk1(ints[i].dt, 2, fl ? (const double[]){1.5, 2} : (const double[]){1, 2});
    EXPECT_TENSOR(t, ints[i].want);
    kd_tensor_release(t);
  }
  kd_tensor *t = mk1(KD_BOOL, 1, (const double[]){0});
  EXPECT_TENSOR(t, "tensor([False])");
  kd_tensor_release(t);
  /* uint8 values above 127 and int8 negatives. */
  t = mk1(KD_UINT8, 2, (const double[]){255, 0});
  EXPECT_TENSOR(t, "tensor([255,   0], dtype=uint8)");
  kd_tensor_release(t);
  t = mk1(KD_INT8, 2, (const double[]){-128, 5});
  EXPECT_TENSOR(t, "tensor([-128,    5], dtype=int8)");
  kd_tensor_release(t);
  /* float16 values are read through float: 0.1 is 0.0999755859375. */
  t = mk1(KD_FLOAT16, 2, (const double[]){0.1, 65504});
  EXPECT_TENSOR(t, "tensor([9.9976e-02, 6.5504e+04], dtype=float16)");
  kd_tensor_release(t);
}

static void test_complex(void **state) {
  (void)state;
  const double v[4] = {1, 2, 3, -4.5};
  kd_tensor *t = mkc(KD_COMPLEX64, 1, (const int64_t[]){2}, v);
  EXPECT_TENSOR(t, "tensor([1.+2.0000j, 3.-4.5000j])");
  kd_tensor_release(t);
  t = mkc(KD_COMPLEX128, 1, (const int64_t[]){2}, v);
  EXPECT_TENSOR(t, "tensor([1.+2.0000j, 3.-4.5000j], dtype=complex128)");
  kd_tensor_release(t);
  /* The imaginary part is not padded; nan gets a "+", -0 keeps its sign. */
  t = mkc(KD_COMPLEX64, 1, (const int64_t[]){2}, (const double[]){1, NAN, -2, -0.0});
  EXPECT_TENSOR(t, "tensor([ 1.+nanj, -2.-0.j])");
  kd_tensor_release(t);
  /* Items of width 6 + 3 + 3 = 12: six per line. */
  double w[16];
  for (int i = 0; i < 8; i++) {
    w[2 * i] = i + 0.5;
    w[2 * i + 1] = -i;
  }
  t = mkc(KD_COMPLEX128, 1, (const int64_t[]){8}, w);
  EXPECT_TENSOR(t, "tensor([0.5000+0.j, 1.5000-1.j, 2.5000-2.j, 3.5000-3.j, 4.5000-4.j, 5.5000-5.j,\n"
                   "        6.5000-6.j, 7.5000-7.j], dtype=complex128)");
  kd_tensor_release(t);
  /* Each part picks its own mode. */
  t = mkc(KD_COMPLEX64, 1, (const int64_t[]){2}, (const double[]){1e-5, 1, 2e-5, 2});
  EXPECT_TENSOR(t, "tensor([1.0000e-05+1.j, 2.0000e-05+2.j])");
  kd_tensor_release(t);
}

/* The dtype that goes unnamed follows kd_set_default_dtype. */
static void test_default_dtype(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  kd_tensor *t = mk1(KD_FLOAT64, 1, (const double[]){1.5});
  EXPECT_TENSOR(t, "tensor([1.5000])");
  kd_tensor_release(t);
  t = mk1(KD_FLOAT32, 1, (const double[]){1.5});
  EXPECT_TENSOR(t, "tensor([1.5000], dtype=float32)");
  kd_tensor_release(t);
  t = mkc(KD_COMPLEX128, 1, (const int64_t[]){1}, (const double[]){1, 1});
  EXPECT_TENSOR(t, "tensor([1.+1.j])");
  kd_tensor_release(t);
  t = mkc(KD_COMPLEX64, 1, (const int64_t[]){1}, (const double[]){1, 1});
  EXPECT_TENSOR(t, "tensor([1.+1.j], dtype=complex64)");
  kd_tensor_release(t);
  t = empty(KD_FLOAT32, 1, (const int64_t[]){0}, kd_device_cpu());
  EXPECT_TENSOR(t, "tensor([], dtype=float32)");
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
}

/* ---- Devices ------------------------------------------------------------ */

static void *host_alloc(void *ctx, kd_device device, size_t nbytes) {
  (void)ctx;
  (void)device;
  return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}
static void host_free(void *ctx, kd_device device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  (void)nbytes;
  free(ptr);
}
static kd_status host_copy(void *ctx, kd_device device, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)device;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status host_copy_in(void *ctx, kd_device device, void *dst, const void *src, size_t n) {
  return host_copy(ctx, device, dst, src, n);
}

/* A device whose bytes can be copied to the host prints like cpu, with the
 * device named. */
static void test_device_readable(void **state) {
  (void)state;
  kd_allocator a = {.api_version = 2, .alloc = host_alloc, .free = host_free, .ctx = NULL,
                    .copy_to_host = host_copy, .copy_from_host = host_copy_in};
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE2, "testdev", 0));
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a));
  kd_device dev = {KD_DEVICE_PRIVATEUSE2, 0};
  kd_tensor *c = mk1(KD_INT32, 2, (const double[]){1, 2});
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(c, dev, &t));
  EXPECT_TENSOR(t, "tensor([1, 2], device='testdev:0', dtype=int32)");
  kd_tensor_release(t);
  kd_tensor_release(c);
  /* The device suffix fits on the line, the dtype suffix does not. */
  double w[10];
  for (int i = 0; i < 10; i++) w[i] = 10 + i;
  c = mk1(KD_INT32, 10, w);
  KD_ASSERT_OK(kd_tensor_to_device(c, dev, &t));
  EXPECT_TENSOR(t, "tensor([10, 11, 12, 13, 14, 15, 16, 17, 18, 19], device='testdev:0',\n"
                   "       dtype=int32)");
  kd_tensor_release(t);
  kd_tensor_release(c);
  /* A transposed view on the device. */
  int64_t s[2] = {2, 2};
  c = mk(KD_FLOAT32, 2, s, (const double[]){1, 2, 3, 4});
  KD_ASSERT_OK(kd_tensor_to_device(c, dev, &t));
  kd_tensor *v = view(t, 2, s, (const int64_t[]){1, 2}, 0);
  EXPECT_TENSOR(v, "tensor([[1., 3.],\n"
                   "        [2., 4.]], device='testdev:0')");
  kd_tensor_release(v);
  kd_tensor_release(t);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, NULL));
}

/* A device without copy functions: its tensors cannot be printed, and
 * nothing is written. */
static void test_device_unreadable(void **state) {
  (void)state;
  kd_allocator a = {.api_version = 1, .alloc = host_alloc, .free = host_free, .ctx = NULL};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a));
  kd_device dev = {KD_DEVICE_PRIVATEUSE1, 0};
  kd_tensor *t = empty(KD_INT32, 1, (const int64_t[]){3}, dev);
  int rc;
  kd_clear_error();
  char *s = render_tensor(t, &rc);
  assert_int_equal(rc, -1);
  assert_int_equal(kd_last_status(), KD_EUNSUPPORTED);
  assert_non_null(strstr(kd_last_error(), "device 'privateuseone:0'"));
  assert_non_null(strstr(kd_last_error(), "cannot be read from the host"));
  KD_ASSERT_STR_EQ(s, "");
  free(s);

  /* Inside a value: the whole value fails, nothing is written. */
  kd_value items[2] = {kd_value_int(1), kd_value_tensor_borrowed(t)};
  kd_value tup;
  KD_ASSERT_OK(kd_value_tuple(items, 2, &tup));
  kd_clear_error();
  s = render_value(&tup, &rc);
  assert_int_equal(rc, -1);
  assert_non_null(strstr(kd_last_error(), "privateuseone:0"));
  KD_ASSERT_STR_EQ(s, "");
  free(s);
  kd_value_destroy(&tup);
  kd_tensor_release(t);

  /* Without elements no data is needed. */
  t = empty(KD_INT32, 1, (const int64_t[]){0}, dev);
  EXPECT_TENSOR(t, "tensor([], device='privateuseone:0', dtype=int32)");
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL));
}

static void test_tensor_errors(void **state) {
  (void)state;
  int rc;
  kd_clear_error();
  char *s = render_tensor(NULL, &rc);
  assert_int_equal(rc, -1);
  assert_int_equal(kd_last_status(), KD_EINVAL);
  assert_non_null(strstr(kd_last_error(), "NULL tensor"));
  KD_ASSERT_STR_EQ(s, "");
  free(s);

  kd_tensor *t = mk0(KD_INT64, 1);
  kd_clear_error();
  assert_int_equal(kdc_print_tensor(NULL, t), -1);
  assert_non_null(strstr(kd_last_error(), "NULL output stream"));

  /* A stream that cannot be written. */
  FILE *ro = fopen("/dev/null", "r");
  assert_non_null(ro);
  kd_clear_error();
  assert_int_equal(kdc_print_tensor(ro, t), -1);
  assert_int_equal(kd_last_status(), KD_EINTERNAL);
  assert_non_null(strstr(kd_last_error(), "writing the output failed"));
  fclose(ro);
  kd_tensor_release(t);
}

/* ---- Values -------------------------------------------------------------- */

static void test_value_scalars(void **state) {
  (void)state;
  kd_value v = kd_value_none();
  EXPECT_VALUE(&v, "None");
  v = kd_value_bool(true);
  EXPECT_VALUE(&v, "True");
  v = kd_value_bool(false);
  EXPECT_VALUE(&v, "False");
  v = kd_value_int(-5);
  EXPECT_VALUE(&v, "-5");
  v = kd_value_int(INT64_MIN);
  EXPECT_VALUE(&v, "-9223372036854775808");

  static const struct {
    double d;
    const char *want;
  } floats[] = {
      {1.0, "1.0"},
      {0.1, "0.1"},
      {1e20, "1e+20"},
      {1e-5, "1e-05"},
      {1e-4, "0.0001"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {123.456, "123.456"},
      {-0.0, "-0.0"},
      {2.5, "2.5"},
      {-1.5e-7, "-1.5e-07"},
      {0.1 + 0.2, "0.30000000000000004"},
      {3e-4, "0.0003"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {9007199254740993.0, "9007199254740992.0"},
      {1e22, "1e+22"},
  };
  for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
    v = kd_value_double(floats[i].d);
    EXPECT_VALUE(&v, floats[i].want);
  }
  v = kd_value_double(INFINITY);
  EXPECT_VALUE(&v, "inf");
  v = kd_value_double(-INFINITY);
  EXPECT_VALUE(&v, "-inf");
  v = kd_value_double(copysign(NAN, -1.0));
  EXPECT_VALUE(&v, "nan");

  static const struct {
    double re, im;
    const char *want;
  } cs[] = {
      {1, 2, "(1+2j)"},       {0, 2, "2j"},          {1.5, -0.0, "(1.5-0j)"},
      {-0.0, 1, "(-0+1j)"},   {1, NAN, "(1+nanj)"},  {NAN, INFINITY, "(nan+infj)"},
      {0, -0.0, "-0j"},       {1e20, -1e-5, "(1e+20-1e-05j)"},
      {2.5, -INFINITY, "(2.5-infj)"},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    v = kd_value_complex(cs[i].re, cs[i].im);
    EXPECT_VALUE(&v, cs[i].want);
  }

  v = kd_value_scalar(kd_scalar_int(7));
  EXPECT_VALUE(&v, "7");
  v = kd_value_scalar(kd_scalar_double(2.0));
  EXPECT_VALUE(&v, "2.0");
  v = kd_value_scalar(kd_scalar_bool(false));
  EXPECT_VALUE(&v, "False");
  v = kd_value_scalar(kd_scalar_complex(0.5, -1));
  EXPECT_VALUE(&v, "(0.5-1j)");

  v = kd_value_dtype(KD_INT32);
  EXPECT_VALUE(&v, "int32");
  v = kd_value_dtype(KD_BFLOAT16);
  EXPECT_VALUE(&v, "bfloat16");
  v = kd_value_layout(KD_LAYOUT_STRIDED);
  EXPECT_VALUE(&v, "strided");
  v = kd_value_memory_format(KD_MEMORY_FORMAT_CHANNELS_LAST);
  EXPECT_VALUE(&v, "channels_last");
  v = kd_value_device(kd_device_cpu());
  EXPECT_VALUE(&v, "cpu");
  v = kd_value_device((kd_device){KD_DEVICE_META, 0});
  EXPECT_VALUE(&v, "meta");
  v = kd_value_device((kd_device){KD_DEVICE_CUDA, 1});
  EXPECT_VALUE(&v, "cuda:1");
}

static void test_value_strings(void **state) {
  (void)state;
  static const struct {
    const char *text;
    size_t len;
    const char *want;
  } cases[] = {
      {"abc", 3, "'abc'"},
      {"", 0, "''"},
      {"it's", 4, "\"it's\""},
      {"say \"hi\"", 8, "'say \"hi\"'"},
      {"both ' and \"", 12, "'both \\' and \"'"},
      {"a\nb\tc\\d\x01\x7f\r", 10, "'a\\nb\\tc\\\\d\\x01\\x7f\\r'"},
      {"nul\0x", 5, "'nul\\x00x'"},
      {"caf\xc3\xa9", 5, "'caf\xc3\xa9'"},  /* UTF-8 text as it is */
      {"\xc2\x85", 2, "'\\x85'"},          /* a C1 control character */
      {"bad\xff", 4, "'bad\\xff'"},        /* not UTF-8 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kd_value v;
    KD_ASSERT_OK(kd_value_string(cases[i].text, cases[i].len, &v));
    EXPECT_VALUE(&v, cases[i].want);
    kd_value_destroy(&v);
  }
}

static void test_value_lists(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_value_int_list((const int64_t[]){1, -2, 3}, 3, &v));
  EXPECT_VALUE(&v, "[1, -2, 3]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_int_list(NULL, 0, &v));
  EXPECT_VALUE(&v, "[]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_double_list((const double[]){1, 0.5, 1e20, NAN}, 4, &v));
  EXPECT_VALUE(&v, "[1.0, 0.5, 1e+20, nan]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_bool_list((const bool[]){true, false}, 2, &v));
  EXPECT_VALUE(&v, "[True, False]");
  kd_value_destroy(&v);

  kd_tensor *a = mk1(KD_INT64, 2, (const double[]){1, 2});
  kd_tensor *b = mk0(KD_FLOAT32, 1.5);
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *const[]){a, b}, 2, &v));
  EXPECT_VALUE(&v, "[tensor([1, 2]), tensor(1.5000)]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_opt_tensor_list((kd_tensor *const[]){NULL, b}, 2, &v));
  EXPECT_VALUE(&v, "[None, tensor(1.5000)]");
  kd_value_destroy(&v);
  v = kd_value_tensor(a);
  EXPECT_VALUE(&v, "tensor([1, 2])");
  kd_value_destroy(&v);

  /* Nested generic lists and tuples. */
  kd_value inner_items[2] = {kd_value_double(2.5), kd_value_none()};
  kd_value inner;
  KD_ASSERT_OK(kd_value_list(inner_items, 2, &inner));
  kd_value str;
  KD_ASSERT_OK(kd_value_string("a", 1, &str));
  kd_value outer_items[3] = {kd_value_int(1), str, inner};
  KD_ASSERT_OK(kd_value_list(outer_items, 3, &v));
  EXPECT_VALUE(&v, "[1, 'a', [2.5, None]]");
  kd_value_destroy(&v);
  kd_value_destroy(&str);
  kd_value_destroy(&inner);

  kd_value one = kd_value_int(1);
  KD_ASSERT_OK(kd_value_tuple(&one, 1, &v));
  EXPECT_VALUE(&v, "(1,)");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_tuple(NULL, 0, &v));
  EXPECT_VALUE(&v, "()");
  kd_value_destroy(&v);

  /* A tuple holding a multi-line tensor: its lines are not re-indented. */
  int64_t s22[2] = {2, 2};
  kd_tensor *m = mk(KD_INT32, 2, s22, NULL);
  kd_value pair[2] = {kd_value_tensor_borrowed(m), kd_value_double(0.5)};
  KD_ASSERT_OK(kd_value_tuple(pair, 2, &v));
  EXPECT_VALUE(&v, "(tensor([[0, 1],\n"
                   "        [2, 3]], dtype=int32), 0.5)");
  kd_value_destroy(&v);
  kd_tensor_release(m);
  kd_tensor_release(a);
  kd_tensor_release(b);
}

static void test_value_errors(void **state) {
  (void)state;
  int rc;
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_TAG_COUNT;
  kd_clear_error();
  char *s = render_value(&v, &rc);
  assert_int_equal(rc, -1);
  assert_int_equal(kd_last_status(), KD_EINVAL);
  assert_non_null(strstr(kd_last_error(), "unknown tag"));
  KD_ASSERT_STR_EQ(s, "");
  free(s);

  kd_clear_error();
  s = render_value(NULL, &rc);
  assert_int_equal(rc, -1);
  assert_non_null(strstr(kd_last_error(), "NULL value"));
  free(s);

  v = kd_value_int(1);
  kd_clear_error();
  assert_int_equal(kdc_print_value(NULL, &v), -1);
  assert_non_null(strstr(kd_last_error(), "NULL output stream"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_int_widths),
      cmocka_unit_test(test_float_int_mode),
      cmocka_unit_test(test_float_fixed),
      cmocka_unit_test(test_float_sci),
      cmocka_unit_test(test_nan_inf),
      cmocka_unit_test(test_wrapping),
      cmocka_unit_test(test_summarize_1d),
      cmocka_unit_test(test_summarize_2d),
      cmocka_unit_test(test_summarize_3d),
      cmocka_unit_test(test_nesting),
      cmocka_unit_test(test_non_contiguous),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_zero_dim),
      cmocka_unit_test(test_meta),
      cmocka_unit_test(test_dtype_suffixes),
      cmocka_unit_test(test_complex),
      cmocka_unit_test(test_default_dtype),
      cmocka_unit_test(test_device_readable),
      cmocka_unit_test(test_device_unreadable),
      cmocka_unit_test(test_tensor_errors),
      cmocka_unit_test(test_value_scalars),
      cmocka_unit_test(test_value_strings),
      cmocka_unit_test(test_value_lists),
      cmocka_unit_test(test_value_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
