/* The pointwise unary operators (ops/native/unary.c, ops/cpu/unary.c) and
 * fill_, zero_, copy_, _to_copy, to.dtype (ops/native/copy.c), called
 * through the generated entry points. */
#include <complex.h>
#include <float.h>
#include <math.h>

#include "kd/ops/_to_copy.h"
#include "kd/ops/abs.h"
#include "kd/ops/bitwise_not.h"
#include "kd/ops/ceil.h"
#include "kd/ops/copy.h"
#include "kd/ops/cos.h"
#include "kd/ops/erf.h"
#include "kd/ops/exp.h"
#include "kd/ops/expm1.h"
#include "kd/ops/fill.h"
#include "kd/ops/floor.h"
#include "kd/ops/gelu.h"
#include "kd/ops/log.h"
#include "kd/ops/log1p.h"
#include "kd/ops/logical_not.h"
#include "kd/ops/neg.h"
#include "kd/ops/reciprocal.h"
#include "kd/ops/relu.h"
#include "kd/ops/round.h"
#include "kd/ops/rsqrt.h"
#include "kd/ops/sigmoid.h"
#include "kd/ops/sign.h"
#include "kd/ops/sin.h"
#include "kd/ops/sqrt.h"
#include "kd/ops/tan.h"
#include "kd/ops/tanh.h"
#include "kd/ops/to.h"
#include "kd/ops/trunc.h"
#include "kd/ops/zero.h"
#include "kd_test.h"
#include "native/unary.h"

static const kd_device meta_dev = {KD_DEVICE_META, 0};

/* ---- Helpers ----------------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  return kd_ops_open() == KD_OK ? 0 : -1;
}

static int64_t numel_of(int ndim, const int64_t *sizes) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  return n;
}

/* A contiguous cpu tensor of dtype dt holding vals (converted from float64). */
static kd_tensor *mk(kd_dtype dt, int ndim, const int64_t *sizes, const double *vals) {
  kd_tensor *d = NULL, *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, KD_FLOAT64, vals, &d));
  KD_ASSERT_OK(kd_tensor_to_dtype(d, dt, &t));
  kd_tensor_release(d);
  return t;
}

static kd_tensor *mk1(kd_dtype dt, int64_t n, const double *vals) {
  return mk(dt, 1, (int64_t[]){n}, vals);
}

/* A 1-d complex tensor. */
static kd_tensor *mkc(kd_dtype dt, int64_t n, const double *re, const double *im) {
  double *v = malloc((size_t)(2 * n + 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    v[2 * i] = re[i];
    v[2 * i + 1] = im[i];
  }
  kd_tensor *d = NULL, *t = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){n}, KD_COMPLEX128, v, &d));
  KD_ASSERT_OK(kd_tensor_to_dtype(d, dt, &t));
  kd_tensor_release(d);
  free(v);
  return t;
}

/* t's values as float64 (the real part of complex values), row-major. */
static double *vals_of(const kd_tensor *t) {
  kd_tensor *d = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT64, &d));
  int64_t n = kd_tensor_numel(d);
  double *v = malloc((size_t)(n + 1) * sizeof(double));
  if (n) memcpy(v, kd_tensor_data(d), (size_t)n * sizeof(double));
  kd_tensor_release(d);
  return v;
}

static void cvals_of(const kd_tensor *t, double *re, double *im) {
  kd_tensor *d = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_COMPLEX128, &d));
  const double *p = kd_tensor_data(d);
  for (int64_t i = 0; i < kd_tensor_numel(d); i++) {
    re[i] = p[2 * i];
    im[i] = p[2 * i + 1];
  }
  kd_tensor_release(d);
}

static bool close_to(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Tolerances for values computed in dt. */
static double rtol_of(kd_dtype dt) {
  switch (dt) {
  case KD_FLOAT16: return 2e-3;
  case KD_BFLOAT16: return 1.6e-2;
  case KD_FLOAT32:
  case KD_COMPLEX64: return 2e-6;
  default: return 1e-12;
  }
}

static void assert_shape(const kd_tensor *t, int ndim, const int64_t *sizes) {
  assert_int_equal(kd_tensor_ndim(t), ndim);
  for (int d = 0; d < ndim; d++) assert_int_equal(kd_tensor_size(t, d), sizes[d]);
}

/* t has dtype dt, the shape and the values (within dt's tolerance). */
static void expect(const kd_tensor *t, kd_dtype dt, int ndim, const int64_t *sizes,
                   const double *want) {
  assert_non_null(t);
  if (kd_tensor_dtype(t) != dt)
    fail_msg("dtype %s, expected %s", kd_dtype_name(kd_tensor_dtype(t)), kd_dtype_name(dt));
  assert_shape(t, ndim, sizes);
  double *v = vals_of(t);
  double rtol = rtol_of(dt), atol = rtol * 1e-3;
  for (int64_t i = 0; i < numel_of(ndim, sizes); i++)
    if (!close_to(v[i], want[i], rtol, atol))
      fail_msg("%s element %lld: got %.17g, expected %.17g", kd_dtype_name(dt), (long long)i, v[i],
               want[i]);
  free(v);
}

static void expect1(const kd_tensor *t, kd_dtype dt, int64_t n, const double *want) {
  expect(t, dt, 1, (int64_t[]){n}, want);
}

static kd_tensor *empty(kd_dtype dt, int ndim, const int64_t *sizes) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t));
  return t;
}

static kd_tensor *meta(kd_dtype dt, int ndim, const int64_t *sizes) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, dt, meta_dev, &t));
  return t;
}

static const kd_dtype float_dtypes[] = {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64};
static const kd_dtype int_dtypes[] = {KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64};
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Rounds a double as dt stores it (so references start from the same input). */
static double as_dtype(double v, kd_dtype dt) {
  kd_tensor *t = mk1(dt, 1, &v);
  double *r = vals_of(t);
  double x = r[0];
  free(r);
  kd_tensor_release(t);
  return x;
}

static double complex cmplx(double re, double im) {
  double v[2] = {re, im};
  double complex z;
  memcpy(&z, v, sizeof z);
  return z;
}

/* ---- Floating operators: the table ---------------------------------------------- */

typedef kd_status (*fn_t)(kd_tensor *, kd_tensor **);
typedef kd_status (*fn__t)(kd_tensor *);
typedef kd_status (*fn_out_t)(kd_tensor *, kd_tensor *);

static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_reciprocal(double x) { return 1.0 / x; }

typedef struct float_op {
  const char *name;
  fn_t f;
  fn__t f_;
  fn_out_t f_out;
  double (*ref)(double);
  double lo, hi; /* the inputs' range */
  bool has_complex; /* complex dtypes supported */
} float_op;

static const float_op float_ops[] = {
    {"exp", kd_exp, kd_exp_, kd_exp_out, exp, -3, 3, true},
    {"log", kd_log, kd_log_, kd_log_out, log, 0.1, 10, true},
    {"log1p", kd_log1p, kd_log1p_, kd_log1p_out, log1p, -0.9, 5, true},
    {"expm1", kd_expm1, kd_expm1_, kd_expm1_out, expm1, -2, 2, true},
    {"sqrt", kd_sqrt, kd_sqrt_, kd_sqrt_out, sqrt, 0, 9, true},
    {"rsqrt", kd_rsqrt, kd_rsqrt_, kd_rsqrt_out, ref_rsqrt, 0.25, 9, true},
    {"sin", kd_sin, kd_sin_, kd_sin_out, sin, -3, 3, true},
    {"cos", kd_cos, kd_cos_, kd_cos_out, cos, -3, 3, true},
    {"tan", kd_tan, kd_tan_, kd_tan_out, tan, -1.2, 1.2, true},
    {"tanh", kd_tanh, kd_tanh_, kd_tanh_out, tanh, -3, 3, true},
    {"sigmoid", kd_sigmoid, kd_sigmoid_, kd_sigmoid_out, ref_sigmoid, -5, 5, true},
    {"erf", kd_erf, kd_erf_, kd_erf_out, erf, -2, 2, false},
    {"reciprocal", kd_reciprocal, kd_reciprocal_, kd_reciprocal_out, ref_reciprocal, 0.5, 4, true},
};

/* Values worked out by hand, float64. */
static void test_float_values_by_hand(void **state) {
  (void)state;
  struct {
    fn_t f;
    double in[3], want[3];
  } cases[] = {
      {kd_exp, {0, 1, -1}, {1, 2.718281828459045, 0.36787944117144233}},
      {kd_log, {1, 2.718281828459045, 0.5}, {0, 1, -0.6931471805599453}},
      {kd_log1p, {0, 1, -0.5}, {0, 0.6931471805599453, -0.6931471805599453}},
      {kd_expm1, {0, 1, 1e-10}, {0, 1.718281828459045, 1.00000000005e-10}},
      {kd_sqrt, {4, 0, 2}, {2, 0, 1.4142135623730951}},
      {kd_rsqrt, {4, 0.25, 0}, {0.5, 2, INFINITY}},
      {kd_sin, {0, 1.5707963267948966, -0.5235987755982988}, {0, 1, -0.5}},
      {kd_cos, {0, 3.141592653589793, 1.0471975511965976}, {1, -1, 0.5}},
      {kd_tan, {0, 0.7853981633974483, -0.7853981633974483}, {0, 1, -1}},
      {kd_tanh, {0, INFINITY, -INFINITY}, {0, 1, -1}},
      {kd_sigmoid, {0, INFINITY, -INFINITY}, {0.5, 1, 0}},
      {kd_erf, {0, INFINITY, -INFINITY}, {0, 1, -1}},
      {kd_reciprocal, {2, -0.25, 0}, {0.5, -4, INFINITY}},
      {kd_neg, {2, -0.25, 0}, {-2, 0.25, 0}},
      {kd_abs, {-2, 0.25, -INFINITY}, {2, 0.25, INFINITY}},
      {kd_sign, {-2, 0.25, 0}, {-1, 1, 0}},
      {kd_floor, {-1.5, 1.5, 2}, {-2, 1, 2}},
      {kd_ceil, {-1.5, 1.5, 2}, {-1, 2, 2}},
      {kd_trunc, {-1.5, 1.7, -0.2}, {-1, 1, -0}},
      {kd_round, {0.5, 1.5, -2.5}, {0, 2, -2}}, /* half-way to even */
      {kd_relu, {-1, 0, 3.5}, {0, 0, 3.5}},
      {kd_sqrt, {-1, NAN, INFINITY}, {NAN, NAN, INFINITY}},
      {kd_log, {0, -1, INFINITY}, {-INFINITY, NAN, INFINITY}},
      {kd_sign, {NAN, -0.0, -INFINITY}, {0, 0, -1}},
      {kd_relu, {NAN, -INFINITY, INFINITY}, {NAN, 0, INFINITY}},
  };
  for (int k = 0; k < N_OF(cases); k++) {
    for (int di = 0; di < N_OF(float_dtypes); di++) {
      kd_dtype dt = float_dtypes[di];
      kd_tensor *x = mk1(dt, 3, cases[k].in), *y = NULL;
      KD_ASSERT_OK(cases[k].f(x, &y));
      double want[3];
      for (int i = 0; i < 3; i++) want[i] = as_dtype(cases[k].want[i], dt);
      /* references of inputs rounded to dt: widen the tolerance for 16-bit types */
      expect1(y, dt, 3, want);
      kd_tensor_release(x);
      kd_tensor_release(y);
    }
  }
}

/* Every floating op, every floating dtype, many values against libm in
 * float64; the three variants agree. */
static void test_float_ops_all_dtypes(void **state) {
  (void)state;
  enum { N = 67 }; /* not a multiple of any vector width */
  for (int k = 0; k < N_OF(float_ops); k++) {
    const float_op *op = &float_ops[k];
    for (int di = 0; di < N_OF(float_dtypes); di++) {
      kd_dtype dt = float_dtypes[di];
      double in[N], want[N];
      for (int i = 0; i < N; i++) in[i] = op->lo + (op->hi - op->lo) * i / (N - 1);
      kd_tensor *x = mk1(dt, N, in);
      double *xin = vals_of(x);
      for (int i = 0; i < N; i++) want[i] = op->ref(xin[i]);
      free(xin);
      /* functional */
      kd_tensor *y = NULL;
      KD_ASSERT_OK(op->f(x, &y));
      double rtol = rtol_of(dt);
      double *got = vals_of(y);
      assert_int_equal(kd_tensor_dtype(y), dt);
      for (int i = 0; i < N; i++)
        if (!close_to(got[i], as_dtype(want[i], dt), rtol * 2, rtol * 1e-2))
          fail_msg("%s(%s) element %d (%.17g): got %.17g, expected %.17g", op->name,
                   kd_dtype_name(dt), i, in[i], got[i], want[i]);
      /* out: an empty out is resized */
      kd_tensor *o = empty(dt, 1, (int64_t[]){0});
      KD_ASSERT_OK(op->f_out(x, o));
      double *got_out = vals_of(o);
      assert_memory_equal(got, got_out, N * sizeof(double));
      /* in place */
      KD_ASSERT_OK(op->f_(x));
      double *got_in = vals_of(x);
      assert_memory_equal(got, got_in, N * sizeof(double));
      free(got);
      free(got_out);
      free(got_in);
      kd_tensor_release(x);
      kd_tensor_release(y);
      kd_tensor_release(o);
    }
  }
}

/* Integer and bool inputs promote to the default float dtype; in-place on an
 * integer tensor cannot hold the result. */
static void test_float_ops_promote_integers(void **state) {
  (void)state;
  const double in[4] = {0, 1, 2, 4};
  const kd_dtype dts[] = {KD_BOOL, KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64};
  for (int k = 0; k < N_OF(float_ops); k++) {
    const float_op *op = &float_ops[k];
    for (int di = 0; di < N_OF(dts); di++) {
      double vin[4];
      for (int i = 0; i < 4; i++) vin[i] = dts[di] == KD_BOOL ? (i & 1) : in[i];
      kd_tensor *x = mk1(dts[di], 4, vin), *y = NULL;
      KD_ASSERT_OK(op->f(x, &y));
      double want[4];
      for (int i = 0; i < 4; i++) want[i] = as_dtype(op->ref(vin[i]), KD_FLOAT32);
      expect1(y, KD_FLOAT32, 4, want);
      kd_tensor_release(y);
      /* float64 out is fine (the result casts to it) */
      kd_tensor *o = empty(KD_FLOAT64, 1, (int64_t[]){4});
      kd_status st = op->f_out(x, o);
      if (st == KD_OK) {
        double *got = vals_of(o);
        for (int i = 0; i < 4; i++) assert_true(close_to(got[i], want[i], 1e-6, 1e-9));
        free(got);
      }
      kd_tensor_release(o);
      if (dts[di] == KD_INT64)
        KD_ASSERT_ERR(op->f_(x), KD_ETYPE, "result type float32 can't be cast to the desired output type int64");
      else
        assert_int_not_equal(op->f_(x), KD_OK);
      kd_tensor_release(x);
    }
  }
  /* A float64 default dtype gives float64. */
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  kd_tensor *x = mk1(KD_INT32, 2, (double[]){0, 1}), *y = NULL;
  KD_ASSERT_OK(kd_exp(x, &y));
  expect1(y, KD_FLOAT64, 2, (double[]){1, 2.718281828459045});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
  kd_tensor_release(x);
}

/* Complex inputs of the operators that take them. */
static void test_complex(void **state) {
  (void)state;
  const kd_dtype cdts[] = {KD_COMPLEX64, KD_COMPLEX128};
  const double re[4] = {0.5, 1, -0.5, 2}, im[4] = {0.3, 0, 0.25, -1};
  for (int di = 0; di < 2; di++) {
    kd_dtype dt = cdts[di];
    double rt = dt == KD_COMPLEX64 ? 1e-5 : 1e-12;
    kd_tensor *x = mkc(dt, 4, re, im);
    for (int k = 0; k < N_OF(float_ops); k++) {
      const float_op *op = &float_ops[k];
      kd_tensor *y = NULL;
      if (!op->has_complex) {
        char msg[128];
        snprintf(msg, sizeof msg, "\"%s_cpu\" not implemented for '%s'", op->name, kd_dtype_name(dt));
        KD_ASSERT_ERR(op->f(x, &y), KD_ETYPE, msg);
        assert_null(y);
        continue;
      }
      KD_ASSERT_OK(op->f(x, &y));
      assert_int_equal(kd_tensor_dtype(y), dt);
      double gr[4], gi[4];
      cvals_of(y, gr, gi);
      for (int i = 0; i < 4; i++) {
        double complex z = cmplx(re[i], im[i]), w;
        if (!strcmp(op->name, "exp")) w = cexp(z);
        else if (!strcmp(op->name, "log")) w = clog(z);
        else if (!strcmp(op->name, "log1p")) w = clog(1.0 + z);
        else if (!strcmp(op->name, "expm1")) w = cexp(z) - 1.0;
        else if (!strcmp(op->name, "sqrt")) w = csqrt(z);
        else if (!strcmp(op->name, "rsqrt")) w = 1.0 / csqrt(z);
        else if (!strcmp(op->name, "sin")) w = csin(z);
        else if (!strcmp(op->name, "cos")) w = ccos(z);
        else if (!strcmp(op->name, "tan")) w = ctan(z);
        else if (!strcmp(op->name, "tanh")) w = ctanh(z);
        else if (!strcmp(op->name, "sigmoid")) w = 1.0 / (1.0 + cexp(-z));
        else w = 1.0 / z;
        double scale = cabs(w) > 1 ? cabs(w) : 1;
        if (fabs(gr[i] - creal(w)) > rt * scale || fabs(gi[i] - cimag(w)) > rt * scale)
          fail_msg("%s(%s) element %d: got %g%+gi, expected %g%+gi", op->name, kd_dtype_name(dt),
                   i, gr[i], gi[i], creal(w), cimag(w));
      }
      kd_tensor_release(y);
    }
    /* exp(i pi) = -1 */
    kd_tensor *y = NULL, *ipi = mkc(dt, 1, (double[]){0}, (double[]){3.141592653589793});
    KD_ASSERT_OK(kd_exp(ipi, &y));
    double gr[4], gi[4];
    cvals_of(y, gr, gi);
    assert_true(close_to(gr[0], -1, rt, rt));
    assert_true(fabs(gi[0]) < rt);
    kd_tensor_release(y);
    kd_tensor_release(ipi);
    /* neg */
    KD_ASSERT_OK(kd_neg(x, &y));
    cvals_of(y, gr, gi);
    for (int i = 0; i < 4; i++) {
      assert_true(gr[i] == -re[i] || (re[i] == 0 && gr[i] == 0));
      assert_true(close_to(gi[i], -im[i], rt, 0));
    }
    kd_tensor_release(y);
    /* abs: the real dtype */
    kd_tensor *z = mkc(dt, 2, (double[]){3, -1}, (double[]){4, 0});
    KD_ASSERT_OK(kd_abs(z, &y));
    expect1(y, dt == KD_COMPLEX64 ? KD_FLOAT32 : KD_FLOAT64, 2, (double[]){5, 1});
    kd_tensor_release(y);
    kd_tensor *o = empty(dt == KD_COMPLEX64 ? KD_FLOAT32 : KD_FLOAT64, 1, (int64_t[]){2});
    KD_ASSERT_OK(kd_abs_out(z, o));
    expect1(o, kd_tensor_dtype(o), 2, (double[]){5, 1});
    kd_tensor_release(o);
    /* abs_ of complex: refused, as PyTorch 1.13 refuses it; z untouched */
    KD_ASSERT_ERR(kd_abs_(z), KD_ETYPE, "In-place abs is not supported for complex tensors.");
    cvals_of(z, gr, gi);
    assert_true(gr[0] == 3 && gi[0] == 4 && gr[1] == -1 && gi[1] == 0);
    kd_tensor_release(z);
    /* Not for complex: sign, floor, ceil, trunc, round, gelu, relu, erf, bitwise_not. */
    KD_ASSERT_ERR(kd_sign(x, &y), KD_ETYPE,
                  "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                  "use torch.sgn instead.");
    KD_ASSERT_ERR(kd_floor(x, &y), KD_ETYPE, "floor is not supported for complex inputs");
    KD_ASSERT_ERR(kd_ceil(x, &y), KD_ETYPE, "ceil is not supported for complex inputs");
    KD_ASSERT_ERR(kd_trunc(x, &y), KD_ETYPE, "trunc is not supported for complex inputs");
    KD_ASSERT_ERR(kd_relu(x, &y), KD_ETYPE, "clamp is not supported for complex types");
    char msg[128];
    snprintf(msg, sizeof msg, "\"round_cpu\" not implemented for '%s'", kd_dtype_name(dt));
    KD_ASSERT_ERR(kd_round(x, &y), KD_ETYPE, msg);
    snprintf(msg, sizeof msg, "\"GeluKernelImpl\" not implemented for '%s'", kd_dtype_name(dt));
    KD_ASSERT_ERR(kd_gelu(x, "none", &y), KD_ETYPE, msg);
    snprintf(msg, sizeof msg, "\"bitwise_not_cpu\" not implemented for '%s'", kd_dtype_name(dt));
    KD_ASSERT_ERR(kd_bitwise_not(x, &y), KD_ETYPE, msg);
    assert_null(y);
    kd_tensor_release(x);
  }
}

/* ---- Integer and bool operators ----------------------------------------------------- */

static void test_integer_ops(void **state) {
  (void)state;
  for (int di = 0; di < N_OF(int_dtypes); di++) {
    kd_dtype dt = int_dtypes[di];
    bool u = dt == KD_UINT8;
    /* -5 is 251 in uint8 */
    double in[5] = {u ? 251 : -5, 0, 1, 7, u ? 200 : -100};
    kd_tensor *x = mk1(dt, 5, in), *y = NULL;
    /* neg wraps */
    KD_ASSERT_OK(kd_neg(x, &y));
    expect1(y, dt, 5, u ? (double[]){5, 0, 255, 249, 56} : (double[]){5, 0, -1, -7, 100});
    kd_tensor_release(y);
    KD_ASSERT_OK(kd_abs(x, &y));
    expect1(y, dt, 5, u ? in : (double[]){5, 0, 1, 7, 100});
    kd_tensor_release(y);
    KD_ASSERT_OK(kd_sign(x, &y));
    expect1(y, dt, 5, u ? (double[]){1, 0, 1, 1, 1} : (double[]){-1, 0, 1, 1, -1});
    kd_tensor_release(y);
    KD_ASSERT_OK(kd_bitwise_not(x, &y));
    expect1(y, dt, 5, u ? (double[]){4, 255, 254, 248, 55} : (double[]){4, -1, -2, -8, 99});
    kd_tensor_release(y);
    KD_ASSERT_OK(kd_relu(x, &y));
    expect1(y, dt, 5, u ? in : (double[]){0, 0, 1, 7, 0});
    kd_tensor_release(y);
    /* floor, ceil, trunc, round: the identity on integers, dtype kept */
    fn_t idops[] = {kd_floor, kd_ceil, kd_trunc, kd_round};
    for (int k = 0; k < 4; k++) {
      KD_ASSERT_OK(idops[k](x, &y));
      expect1(y, dt, 5, in);
      kd_tensor_release(y);
    }
    /* in place and out */
    kd_tensor *o = empty(dt, 1, (int64_t[]){5});
    KD_ASSERT_OK(kd_neg_out(x, o));
    KD_ASSERT_OK(kd_neg_(o));
    expect1(o, dt, 5, in);
    KD_ASSERT_OK(kd_floor_(o));
    expect1(o, dt, 5, in);
    kd_tensor_release(o);
    /* gelu and the float-only ops have no integer loop */
    char msg[128];
    snprintf(msg, sizeof msg, "\"GeluKernelImpl\" not implemented for '%s'", kd_dtype_name(dt));
    KD_ASSERT_ERR(kd_gelu(x, "none", &y), KD_ETYPE, msg);
    snprintf(msg, sizeof msg, "\"round_cpu\" not implemented for '%s'", kd_dtype_name(dt));
    KD_ASSERT_ERR(kd_round_decimals(x, 2, &y), KD_ETYPE, msg);
    kd_tensor_release(x);
  }
  /* The most negative value stays itself under neg and abs (two's complement). */
  kd_tensor *m = mk1(KD_INT64, 1, (double[]){-9223372036854775808.0}), *y = NULL;
  KD_ASSERT_OK(kd_neg(m, &y));
  assert_true(*(int64_t *)kd_tensor_data(y) == INT64_MIN);
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_abs(m, &y));
  assert_true(*(int64_t *)kd_tensor_data(y) == INT64_MIN);
  kd_tensor_release(y);
  kd_tensor_release(m);
  m = mk1(KD_INT8, 1, (double[]){-128});
  KD_ASSERT_OK(kd_neg(m, &y));
  expect1(y, KD_INT8, 1, (double[]){-128});
  kd_tensor_release(y);
  kd_tensor_release(m);
}

static void test_bool_ops(void **state) {
  (void)state;
  kd_tensor *b = mk1(KD_BOOL, 3, (double[]){1, 0, 1}), *y = NULL;
  KD_ASSERT_OK(kd_bitwise_not(b, &y));
  expect1(y, KD_BOOL, 3, (double[]){0, 1, 0});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_sign(b, &y));
  expect1(y, KD_BOOL, 3, (double[]){1, 0, 1});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_bitwise_not_(b));
  expect1(b, KD_BOOL, 3, (double[]){0, 1, 0});
  KD_ASSERT_ERR(kd_neg(b, &y), KD_ETYPE,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead.");
  assert_null(y);
  KD_ASSERT_ERR(kd_neg_(b), KD_ETYPE, "Negation, the `-` operator, on a bool tensor");
  KD_ASSERT_ERR(kd_abs(b, &y), KD_ETYPE, "\"abs_cpu\" not implemented for 'bool'");
  KD_ASSERT_ERR(kd_relu(b, &y), KD_ETYPE, "Boolean inputs not supported for relu");
  KD_ASSERT_ERR(kd_floor(b, &y), KD_ETYPE, "\"floor_cpu\" not implemented for 'bool'");
  assert_null(y);
  /* floats have no bitwise_not */
  kd_tensor *f = mk1(KD_FLOAT32, 1, (double[]){1});
  KD_ASSERT_ERR(kd_bitwise_not(f, &y), KD_ETYPE, "\"bitwise_not_cpu\" not implemented for 'float32'");
  KD_ASSERT_ERR(kd_bitwise_not_(f), KD_ETYPE, "\"bitwise_not_cpu\" not implemented for 'float32'");
  kd_tensor_release(f);
  kd_tensor_release(b);
}

static void test_logical_not(void **state) {
  (void)state;
  const kd_dtype all[] = {KD_BOOL,    KD_UINT8,    KD_INT8,    KD_INT16,     KD_INT32,     KD_INT64,
                          KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};
  for (int i = 0; i < N_OF(all); i++) {
    kd_dtype dt = all[i];
    bool fl = kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt);
    double in[4] = {0, 1, dt == KD_BOOL ? 1 : 3, fl ? NAN : 0};
    kd_tensor *x = mk1(dt, 4, in), *y = NULL;
    KD_ASSERT_OK(kd_logical_not(x, &y));
    expect1(y, KD_BOOL, 4, (double[]){1, 0, 0, fl ? 0 : 1});
    kd_tensor_release(y);
    /* out of any dtype */
    for (int j = 0; j < N_OF(all); j++) {
      kd_tensor *o = empty(all[j], 1, (int64_t[]){4});
      KD_ASSERT_OK(kd_logical_not_out(x, o));
      expect1(o, all[j], 4, (double[]){1, 0, 0, fl ? 0 : 1});
      kd_tensor_release(o);
    }
    /* in place keeps the dtype */
    KD_ASSERT_OK(kd_logical_not_(x));
    expect1(x, dt, 4, (double[]){1, 0, 0, fl ? 0 : 1});
    kd_tensor_release(x);
  }
  /* complex: zero only when both parts are */
  kd_tensor *z = mkc(KD_COMPLEX64, 3, (double[]){0, 0, 1}, (double[]){0, 1, 0}), *y = NULL;
  KD_ASSERT_OK(kd_logical_not(z, &y));
  expect1(y, KD_BOOL, 3, (double[]){1, 0, 0});
  kd_tensor_release(y);
  kd_tensor_release(z);
}

/* ---- gelu, round.decimals ----------------------------------------------------------- */

static double ref_gelu(double x) { return x * 0.5 * (1 + erf(x / sqrt(2.0))); }
static double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(sqrt(2 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
}

static void test_gelu(void **state) {
  (void)state;
  enum { N = 41 };
  double in[N];
  for (int i = 0; i < N; i++) in[i] = -5 + 10.0 * i / (N - 1);
  for (int di = 0; di < N_OF(float_dtypes); di++) {
    kd_dtype dt = float_dtypes[di];
    kd_tensor *x = mk1(dt, N, in), *y = NULL, *yt = NULL;
    double *xv = vals_of(x), want[N], want_t[N];
    for (int i = 0; i < N; i++) {
      want[i] = as_dtype(ref_gelu(xv[i]), dt);
      want_t[i] = as_dtype(ref_gelu_tanh(xv[i]), dt);
    }
    free(xv);
    KD_ASSERT_OK(kd_gelu(x, "none", &y));
    expect1(y, dt, N, want);
    KD_ASSERT_OK(kd_gelu(x, "tanh", &yt));
    expect1(yt, dt, N, want_t);
    kd_tensor *o = empty(dt, 1, (int64_t[]){N});
    KD_ASSERT_OK(kd_gelu_out(x, "tanh", o));
    expect1(o, dt, N, want_t);
    KD_ASSERT_OK(kd_gelu_(x, "none"));
    expect1(x, dt, N, want);
    kd_tensor *bad = NULL;
    KD_ASSERT_ERR(kd_gelu(x, "fast", &bad), KD_EINVAL, "approximate argument must be either none or tanh.");
    assert_null(bad);
    kd_tensor_release(o);
    kd_tensor_release(x);
    kd_tensor_release(y);
    kd_tensor_release(yt);
  }
  /* By hand: gelu(0) = 0, gelu(1) = Phi(1) = 0.8413447460685429. */
  kd_tensor *x = mk1(KD_FLOAT64, 2, (double[]){0, 1}), *y = NULL;
  KD_ASSERT_OK(kd_gelu(x, "none", &y));
  expect1(y, KD_FLOAT64, 2, (double[]){0, 0.8413447460685429});
  kd_tensor_release(y);
  kd_tensor_release(x);
}

static void test_round_decimals(void **state) {
  (void)state;
  kd_tensor *x = mk1(KD_FLOAT64, 4, (double[]){1.2345, -2.5, 1234.5, 0.125}), *y = NULL;
  KD_ASSERT_OK(kd_round_decimals(x, 2, &y));
  expect1(y, KD_FLOAT64, 4, (double[]){1.23, -2.5, 1234.5, 0.12});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_round_decimals(x, -1, &y));
  expect1(y, KD_FLOAT64, 4, (double[]){0, -0.0, 1230, 0});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_round_decimals(x, 0, &y));
  expect1(y, KD_FLOAT64, 4, (double[]){1, -2, 1234, 0});
  kd_tensor_release(y);
  kd_tensor *o = empty(KD_FLOAT64, 1, (int64_t[]){4});
  KD_ASSERT_OK(kd_round_decimals_out(x, 1, o));
  expect1(o, KD_FLOAT64, 4, (double[]){1.2, -2.5, 1234.5, 0.1});
  KD_ASSERT_OK(kd_round_decimals_(x, 1));
  expect1(x, KD_FLOAT64, 4, (double[]){1.2, -2.5, 1234.5, 0.1});
  kd_tensor_release(o);
  kd_tensor_release(x);
  for (int di = 0; di < N_OF(float_dtypes); di++) {
    x = mk1(float_dtypes[di], 2, (double[]){2.75, -1.25});
    KD_ASSERT_OK(kd_round_decimals(x, 1, &y));
    expect1(y, float_dtypes[di], 2, (double[]){2.8, -1.2});
    kd_tensor_release(y);
    kd_tensor_release(x);
  }
}

/* ---- Layouts: non-contiguous, zero-size, 0-dim, meta --------------------------------- */

static void test_non_contiguous(void **state) {
  (void)state;
  /* base [4, 6]; x = base[:, ::2] transposed: sizes [3, 4], strides [2, 6] */
  double b[24];
  for (int i = 0; i < 24; i++) b[i] = 0.25 * i - 3;
  const kd_dtype dts[] = {KD_FLOAT32, KD_FLOAT64, KD_FLOAT16, KD_BFLOAT16, KD_INT32, KD_COMPLEX64};
  for (int di = 0; di < N_OF(dts); di++) {
    kd_dtype dt = dts[di];
    kd_tensor *base = mk(dt, 2, (int64_t[]){4, 6}, b), *x = NULL, *y = NULL;
    KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){3, 4}, (int64_t[]){2, 6}, 1, &x));
    double want[15];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) {
        double v = as_dtype(b[1 + 2 * i + 6 * j], dt);
        want[i * 4 + j] = -v;
      }
    KD_ASSERT_OK(kd_neg(x, &y));
    expect(y, dt, 2, (int64_t[]){3, 4}, want);
    kd_tensor_release(y);
    /* a non-contiguous out: every other element of a [3, 8] buffer */
    kd_tensor *ob = empty(dt, 2, (int64_t[]){3, 8}), *o = NULL;
    KD_ASSERT_OK(kd_tensor_as_strided(ob, 2, (int64_t[]){3, 4}, (int64_t[]){8, 2}, 0, &o));
    KD_ASSERT_OK(kd_neg_out(x, o));
    expect(o, dt, 2, (int64_t[]){3, 4}, want);
    /* in place on the strided view leaves the other elements alone */
    KD_ASSERT_OK(kd_neg_(x));
    expect(x, dt, 2, (int64_t[]){3, 4}, want);
    double *bv = vals_of(base);
    assert_true(bv[0] == as_dtype(b[0], dt) && bv[2] == as_dtype(b[2], dt));
    free(bv);
    if (kd_dtype_is_floating(dt)) {
      KD_ASSERT_OK(kd_exp(x, &y));
      for (int k = 0; k < 12; k++) want[k] = as_dtype(exp(want[k]), dt);
      expect(y, dt, 2, (int64_t[]){3, 4}, want);
      kd_tensor_release(y);
    }
    /* an expanded (stride 0) input */
    kd_tensor *e = NULL;
    KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){3, 5}, (int64_t[]){0, 1}, 0, &e));
    KD_ASSERT_OK(kd_abs(e, &y));
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 5; j++) want[i * 5 + j] = fabs(as_dtype(b[j], dt));
    expect(y, kd_dtype_is_complex(dt) ? kd_dtype_to_real(dt) : dt, 2, (int64_t[]){3, 5}, want);
    kd_tensor_release(y);
    kd_tensor_release(e);
    kd_tensor_release(o);
    kd_tensor_release(ob);
    kd_tensor_release(x);
    kd_tensor_release(base);
  }
}

static void test_zero_size_and_scalars(void **state) {
  (void)state;
  kd_tensor *x = empty(KD_FLOAT32, 2, (int64_t[]){0, 3}), *y = NULL;
  KD_ASSERT_OK(kd_exp(x, &y));
  assert_shape(y, 2, (int64_t[]){0, 3});
  assert_int_equal(kd_tensor_dtype(y), KD_FLOAT32);
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_exp_(x));
  kd_tensor *o = empty(KD_FLOAT32, 1, (int64_t[]){5});
  KD_ASSERT_OK(kd_exp_out(x, o));
  assert_shape(o, 2, (int64_t[]){0, 3});
  kd_tensor_release(o);
  KD_ASSERT_OK(kd_logical_not(x, &y));
  assert_shape(y, 2, (int64_t[]){0, 3});
  kd_tensor_release(y);
  kd_tensor_release(x);
  x = empty(KD_INT64, 1, (int64_t[]){0});
  KD_ASSERT_OK(kd_sin(x, &y));
  assert_int_equal(kd_tensor_dtype(y), KD_FLOAT32);
  assert_int_equal(kd_tensor_numel(y), 0);
  kd_tensor_release(y);
  kd_tensor_release(x);
  /* 0-dim */
  kd_scalar v = kd_scalar_double(4);
  KD_ASSERT_OK(kd_tensor_from_scalar(&v, KD_FLOAT64, &x));
  KD_ASSERT_OK(kd_sqrt(x, &y));
  expect(y, KD_FLOAT64, 0, NULL, (double[]){2});
  kd_tensor_release(y);
  kd_tensor_release(x);
}

static void test_meta(void **state) {
  (void)state;
  struct {
    fn_t f;
    kd_dtype in, want;
  } cases[] = {
      {kd_exp, KD_INT64, KD_FLOAT32},      {kd_exp, KD_FLOAT16, KD_FLOAT16},
      {kd_sqrt, KD_COMPLEX64, KD_COMPLEX64}, {kd_neg, KD_INT8, KD_INT8},
      {kd_abs, KD_COMPLEX128, KD_FLOAT64}, {kd_logical_not, KD_FLOAT32, KD_BOOL},
      {kd_floor, KD_INT32, KD_INT32},       {kd_sigmoid, KD_BOOL, KD_FLOAT32},
      {kd_relu, KD_FLOAT64, KD_FLOAT64},    {kd_bitwise_not, KD_INT16, KD_INT16},
  };
  for (int k = 0; k < N_OF(cases); k++) {
    kd_tensor *x = meta(cases[k].in, 2, (int64_t[]){2, 3}), *y = NULL;
    KD_ASSERT_OK(cases[k].f(x, &y));
    assert_int_equal(kd_tensor_device(y).type, KD_DEVICE_META);
    assert_int_equal(kd_tensor_dtype(y), cases[k].want);
    assert_shape(y, 2, (int64_t[]){2, 3});
    kd_tensor_release(y);
    kd_tensor_release(x);
  }
  kd_tensor *x = meta(KD_FLOAT32, 1, (int64_t[]){7}), *y = NULL;
  KD_ASSERT_OK(kd_gelu(x, "tanh", &y));
  assert_shape(y, 1, (int64_t[]){7});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_round_decimals(x, 3, &y));
  assert_shape(y, 1, (int64_t[]){7});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_exp_(x));
  kd_tensor *o = meta(KD_FLOAT32, 1, (int64_t[]){0});
  KD_ASSERT_OK(kd_tanh_out(x, o));
  assert_shape(o, 1, (int64_t[]){7});
  KD_ASSERT_OK(kd_zero_(o));
  kd_scalar one = kd_scalar_int(1);
  KD_ASSERT_OK(kd_fill_Scalar_(o, &one));
  kd_tensor_release(o);
  /* meta checks still run */
  kd_tensor *b = meta(KD_BOOL, 1, (int64_t[]){2});
  KD_ASSERT_ERR(kd_neg(b, &y), KD_ETYPE, "Negation, the `-` operator, on a bool tensor");
  kd_tensor_release(b);
  kd_tensor *i = meta(KD_INT64, 1, (int64_t[]){7});
  KD_ASSERT_ERR(kd_exp_(i), KD_ETYPE, "result type float32 can't be cast to the desired output type int64");
  kd_tensor_release(i);
  kd_tensor_release(x);
}

static void test_out_errors(void **state) {
  (void)state;
  kd_tensor *x = mk1(KD_FLOAT32, 2, (double[]){1, 2});
  /* an int out cannot hold a float result */
  kd_tensor *o = empty(KD_INT64, 1, (int64_t[]){2});
  KD_ASSERT_ERR(kd_exp_out(x, o), KD_ETYPE, "result type float32 can't be cast to the desired output type int64");
  kd_tensor_release(o);
  /* neg into an out of another shape is resized */
  o = empty(KD_FLOAT32, 2, (int64_t[]){2, 2});
  KD_ASSERT_OK(kd_neg_out(x, o));
  assert_shape(o, 1, (int64_t[]){2});
  expect1(o, KD_FLOAT32, 2, (double[]){-1, -2});
  kd_tensor_release(o);
  /* in place into a tensor that would need broadcasting */
  kd_tensor_release(x);
}

/* Large enough to run on several threads; transposed too. Exactly libm's
 * float results. */
static void test_large(void **state) {
  (void)state;
  enum { R = 301, C = 257 };
  float *v = malloc(R * C * sizeof(float));
  for (int i = 0; i < R * C; i++) v[i] = -8.0f + 16.0f * (float)i / (R * C);
  kd_tensor *x = NULL, *xt = NULL, *y = NULL;
  KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){R, C}, KD_FLOAT32, v, &x));
  KD_ASSERT_OK(kd_exp(x, &y));
  const float *p = kd_tensor_data(y);
  for (int i = 0; i < R * C; i++)
    if (p[i] != expf(v[i])) fail_msg("exp element %d: %.9g vs %.9g", i, p[i], expf(v[i]));
  kd_tensor_release(y);
  /* the transpose: sizes [C, R], strides [1, C] */
  KD_ASSERT_OK(kd_tensor_as_strided(x, 2, (int64_t[]){C, R}, (int64_t[]){1, C}, 0, &xt));
  KD_ASSERT_OK(kd_tanh(xt, &y));
  for (int i = 0; i < C; i++)
    for (int j = 0; j < R; j++) {
      kd_scalar got;
      if (i % 17 || j % 13) continue;
      KD_ASSERT_OK(kd_tensor_get(y, (int64_t[]){i, j}, &got));
      assert_true((float)got.v.d == tanhf(v[j * C + i]));
    }
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_sigmoid_(xt));
  p = kd_tensor_data(x);
  for (int i = 0; i < R * C; i += 7) assert_true(p[i] == 1.0f / (1.0f + expf(-v[i])));
  kd_tensor_release(xt);
  kd_tensor_release(x);
  free(v);
}

/* ---- Each CPU capability gives the same results ------------------------------------ */

/* Runs capability `cap`'s kernel of the unary stub on x; NULL when the
 * processor lacks it. The caller owns the result. */
static kd_tensor *run_cap(int cap, kdk_unary_op op, const kdk_unary_extra *ex, kd_tensor *x,
                          bool is_float) {
  kdk_unary_fn *fn = NULL;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (cap == 0) fn = kdk__stub_unary_stub_DEFAULT;
  if (cap == 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    fn = kdk__stub_unary_stub_AVX2;
  if (cap == 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    fn = kdk__stub_unary_stub_AVX512;
#else
  if (cap == 0) fn = kdk__stub_unary_stub_DEFAULT;
#endif
  if (!fn) return NULL;
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(is_float ? kdk_iter_build_unary_float_op(&it, NULL, x)
                        : kdk_iter_build_unary_op(&it, NULL, x));
  KD_ASSERT_OK(fn(&it, op, ex));
  KD_ASSERT_OK(kdk_iter_finish(&it));
  kd_tensor *r = kdk_iter_output(&it, 0);
  kd_tensor_retain(r);
  kdk_iter_release(&it);
  return r;
}

/* a and b hold the same values (NaN where the other has NaN). */
static void assert_same_values(const char *what, const kd_tensor *a, const kd_tensor *b) {
  assert_int_equal(kd_tensor_dtype(a), kd_tensor_dtype(b));
  assert_int_equal(kd_tensor_numel(a), kd_tensor_numel(b));
  kd_dtype dt = kd_tensor_dtype(a);
  int64_t n = kd_tensor_numel(a);
  if (kd_dtype_is_complex(dt)) n *= 2;
  double *va = malloc((size_t)n * sizeof(double)), *vb = malloc((size_t)n * sizeof(double));
  if (kd_dtype_is_complex(dt)) {
    double *ia = malloc((size_t)n * sizeof(double)), *ib = malloc((size_t)n * sizeof(double));
    cvals_of(a, va, ia);
    cvals_of(b, vb, ib);
    memcpy(va + n / 2, ia, (size_t)(n / 2) * sizeof(double));
    memcpy(vb + n / 2, ib, (size_t)(n / 2) * sizeof(double));
    free(ia);
    free(ib);
  } else {
    double *x = vals_of(a), *y = vals_of(b);
    memcpy(va, x, (size_t)n * sizeof(double));
    memcpy(vb, y, (size_t)n * sizeof(double));
    free(x);
    free(y);
  }
  for (int64_t i = 0; i < n; i++) {
    bool same = (isnan(va[i]) && isnan(vb[i])) || va[i] == vb[i] ||
                close_to(vb[i], va[i], 4 * DBL_EPSILON, 0);
    if (!same)
      fail_msg("%s (%s) element %lld: %.17g vs %.17g", what, kd_dtype_name(dt), (long long)i,
               va[i], vb[i]);
  }
  free(va);
  free(vb);
}

static void test_capabilities_agree(void **state) {
  (void)state;
  enum { N = 1037 };
  double *v = malloc(N * sizeof(double)), *im = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) {
    v[i] = -6 + 12.0 * i / (N - 1) + (i % 7) * 1e-3;
    im[i] = 0.5 - (i % 13) * 0.1;
  }
  v[3] = NAN;
  v[5] = INFINITY;
  v[8] = -INFINITY;
  v[10] = 0.5;
  v[11] = -2.5;
  const kd_dtype fdts[] = {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128,
                           KD_INT8, KD_INT32, KD_INT64, KD_UINT8, KD_BOOL};
  int compared[3] = {0, 0, 0};
  kdk_unary_extra rd;
  memset(&rd, 0, sizeof rd);
  rd.ten_pow = 100;
  for (int di = 0; di < N_OF(fdts); di++) {
    kd_dtype dt = fdts[di];
    kd_tensor *x = kd_dtype_is_complex(dt) ? mkc(dt, N, v, im) : NULL;
    if (!x) {
      double *w = malloc(N * sizeof(double));
      for (int i = 0; i < N; i++)
        w[i] = kd_dtype_is_floating(dt) ? v[i] : dt == KD_BOOL ? (i % 3 == 0) : (double)(i % 200) - 100 * (dt != KD_UINT8);
      x = mk1(dt, N, w);
      free(w);
    }
    for (int op = 0; op < KDK_UNARY_OP_COUNT; op++) {
      bool is_float = op >= KDK_UNARY_EXP && op <= KDK_UNARY_ERF;
      kd_tensor *ref = NULL;
      for (int cap = 0; cap < 3; cap++) {
        /* a loop missing for this dtype fails the same way in every capability */
        if (op == KDK_UNARY_ABS_TO_REAL || op == KDK_UNARY_LOGICAL_NOT) continue;
        kdk_iter it;
        kdk_iter_init(&it, NULL);
        KD_ASSERT_OK(is_float ? kdk_iter_build_unary_float_op(&it, NULL, x)
                              : kdk_iter_build_unary_op(&it, NULL, x));
        kd_status st = kdk__stub_unary_stub_DEFAULT(&it, (kdk_unary_op)op, &rd);
        kdk_iter_release(&it);
        if (st) {
          kd_clear_error();
          break;
        }
        kd_tensor *r = run_cap(cap, (kdk_unary_op)op, &rd, x, is_float);
        if (!r) continue;
        compared[cap]++;
        if (!ref) {
          ref = r;
          continue;
        }
        char what[96];
        snprintf(what, sizeof what, "%s, capability %d", kdk__unary_kernel_name((kdk_unary_op)op), cap);
        assert_same_values(what, ref, r);
        kd_tensor_release(r);
      }
      kd_tensor_release(ref);
    }
    kd_tensor_release(x);
  }
  free(v);
  free(im);
  assert_true(compared[0] > 100);
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    assert_int_equal(compared[1], compared[0]);
#endif
}

/* ---- fill_, zero_, copy_, to ---------------------------------------------------------- */

static void test_fill_zero(void **state) {
  (void)state;
  const kd_dtype all[] = {KD_BOOL,    KD_UINT8,    KD_INT8,    KD_INT16,     KD_INT32,     KD_INT64,
                          KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};
  for (int i = 0; i < N_OF(all); i++) {
    kd_tensor *t = empty(all[i], 2, (int64_t[]){3, 5});
    kd_scalar v = kd_scalar_int(1);
    KD_ASSERT_OK(kd_fill_Scalar_(t, &v));
    double ones[15], zeros[15] = {0};
    for (int k = 0; k < 15; k++) ones[k] = 1;
    expect(t, all[i], 2, (int64_t[]){3, 5}, ones);
    KD_ASSERT_OK(kd_zero_(t));
    expect(t, all[i], 2, (int64_t[]){3, 5}, zeros);
    /* a 0-dim tensor value */
    kd_tensor *val = NULL;
    kd_scalar s = kd_scalar_double(1);
    KD_ASSERT_OK(kd_tensor_from_scalar(&s, KD_FLOAT64, &val));
    KD_ASSERT_OK(kd_fill_Tensor_(t, val));
    expect(t, all[i], 2, (int64_t[]){3, 5}, ones);
    kd_tensor_release(val);
    kd_tensor_release(t);
  }
  /* a strided view: only its elements */
  kd_tensor *base = empty(KD_FLOAT32, 1, (int64_t[]){6}), *v = NULL;
  KD_ASSERT_OK(kd_zero_(base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){3}, (int64_t[]){2}, 1, &v));
  kd_scalar x = kd_scalar_double(2.5);
  KD_ASSERT_OK(kd_fill_Scalar_(v, &x));
  expect1(base, KD_FLOAT32, 6, (double[]){0, 2.5, 0, 2.5, 0, 2.5});
  kd_tensor_release(v);
  /* errors */
  kd_tensor *i8 = empty(KD_INT8, 1, (int64_t[]){2});
  kd_scalar big = kd_scalar_int(300);
  KD_ASSERT_ERR(kd_fill_Scalar_(i8, &big), KD_EOVERFLOW, "300");
  kd_tensor *val = mk1(KD_FLOAT32, 1, (double[]){1});
  KD_ASSERT_ERR(kd_fill_Tensor_(i8, val), KD_EINVAL,
                "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions.");
  kd_tensor_release(val);
  kd_tensor_release(i8);
  kd_tensor_release(base);
}

static int warnings;
static char last_warning[512];
static void on_warning(const char *m, void *u) {
  (void)u;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", m);
}

static void test_copy(void **state) {
  (void)state;
  /* dtype conversion and broadcasting */
  kd_tensor *dst = empty(KD_INT32, 2, (int64_t[]){2, 3});
  kd_tensor *src = mk1(KD_FLOAT64, 3, (double[]){1.7, -2.2, 3});
  KD_ASSERT_OK(kd_copy_(dst, src, false));
  expect(dst, KD_INT32, 2, (int64_t[]){2, 3}, (double[]){1, -2, 3, 1, -2, 3});
  kd_tensor_release(src);
  /* into a transposed view */
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(dst, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &t));
  src = mk(KD_FLOAT32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, 6});
  KD_ASSERT_OK(kd_copy_(t, src, false));
  expect(dst, KD_INT32, 2, (int64_t[]){2, 3}, (double[]){1, 3, 5, 2, 4, 6});
  /* copying a tensor into itself */
  KD_ASSERT_OK(kd_copy_(t, t, false));
  expect(dst, KD_INT32, 2, (int64_t[]){2, 3}, (double[]){1, 3, 5, 2, 4, 6});
  kd_tensor_release(src);
  kd_tensor_release(t);
  /* sizes that do not broadcast */
  src = mk1(KD_FLOAT32, 2, (double[]){1, 2});
  KD_ASSERT_ERR(kd_copy_(dst, src, false), KD_EINVAL, "copy_");
  kd_tensor_release(src);
  /* complex to real warns */
  kd_set_warning_handler(on_warning, NULL);
  warnings = 0;
  kd_tensor *z = mkc(KD_COMPLEX64, 1, (double[]){2}, (double[]){1}), *r = empty(KD_FLOAT32, 1, (int64_t[]){1});
  KD_ASSERT_OK(kd_copy_(r, z, false));
  expect1(r, KD_FLOAT32, 1, (double[]){2});
  assert_int_equal(warnings, 1);
  assert_non_null(strstr(last_warning, "Casting complex values to real discards the imaginary part"));
  kd_set_warning_handler(NULL, NULL);
  kd_tensor_release(z);
  kd_tensor_release(r);
  /* meta destination: nothing written, no error */
  kd_tensor *m = meta(KD_FLOAT32, 2, (int64_t[]){2, 3});
  KD_ASSERT_OK(kd_copy_(m, dst, false));
  KD_ASSERT_ERR(kd_copy_(dst, m, false), KD_EUNSUPPORTED, "meta");
  kd_tensor_release(m);
  kd_tensor_release(dst);
}

/* A zero-size tensor whose row-major strides do not fit in int64 (an
 * expanded [4, 2^62, 4, 0]): to() refuses it instead of overflowing
 * (found by fuzz_boxed; UBSan saw the overflow before the fix). */
static void test_to_huge_empty(void **state) {
  (void)state;
  kd_tensor *base = NULL, *t = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 4, (int64_t[]){4, (int64_t)1 << 62, 4, 0},
                                    (int64_t[]){0, 0, 0, 0}, 0, &t));
  KD_ASSERT_ERR(kd_to_dtype(t, KD_FLOAT64, false, false, NULL, &r), KD_EOVERFLOW,
                "with a size of 4611686018427387904 do not fit in int64");
  assert_null(r);
  kd_tensor_release(t);
  kd_tensor_release(base);
}

static void test_to(void **state) {
  (void)state;
  kd_tensor *x = mk(KD_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){1.5, -2.5, 3, 4}), *y = NULL;
  /* same dtype, no copy: self itself */
  KD_ASSERT_OK(kd_to_dtype(x, KD_FLOAT32, false, false, NULL, &y));
  assert_ptr_equal(y, x);
  kd_tensor_release(y);
  /* copy=True: a new tensor */
  KD_ASSERT_OK(kd_to_dtype(x, KD_FLOAT32, false, true, NULL, &y));
  assert_ptr_not_equal(y, x);
  assert_false(kd_tensor_shares_storage(x, y));
  expect(y, KD_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){1.5, -2.5, 3, 4});
  kd_tensor_release(y);
  /* another dtype */
  KD_ASSERT_OK(kd_to_dtype(x, KD_INT64, false, false, NULL, &y));
  expect(y, KD_INT64, 2, (int64_t[]){2, 2}, (double[]){1, -2, 3, 4});
  kd_tensor_release(y);
  /* preserve keeps a transposed layout; contiguous_format does not */
  kd_tensor *tr = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(x, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 0, &tr));
  KD_ASSERT_OK(kd_to_dtype(tr, KD_FLOAT64, false, false, NULL, &y));
  assert_int_equal(kd_tensor_stride(y, 0), 1);
  assert_int_equal(kd_tensor_stride(y, 1), 2);
  expect(y, KD_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){1.5, 3, -2.5, 4});
  kd_tensor_release(y);
  kd_memory_format cf = KD_MEMORY_FORMAT_CONTIGUOUS;
  KD_ASSERT_OK(kd_to_dtype(tr, KD_FLOAT32, false, false, &cf, &y));
  assert_ptr_not_equal(y, tr);
  assert_true(kd_tensor_is_contiguous(y));
  expect(y, KD_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){1.5, 3, -2.5, 4});
  kd_tensor_release(y);
  kd_tensor_release(tr);
  /* _to_copy: dtype, device meta, layout errors */
  kd_dtype f16 = KD_FLOAT16;
  KD_ASSERT_OK(kd_internal_to_copy(x, &f16, NULL, NULL, NULL, false, NULL, &y));
  expect(y, KD_FLOAT16, 2, (int64_t[]){2, 2}, (double[]){1.5, -2.5, 3, 4});
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_internal_to_copy(x, NULL, NULL, &meta_dev, NULL, false, NULL, &y));
  assert_int_equal(kd_tensor_device(y).type, KD_DEVICE_META);
  assert_int_equal(kd_tensor_dtype(y), KD_FLOAT32);
  kd_tensor_release(y);
  kd_layout sparse = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_internal_to_copy(x, NULL, &sparse, NULL, NULL, false, NULL, &y), KD_EUNSUPPORTED,
                "layout");
  assert_null(y);
  kd_memory_format cl = KD_MEMORY_FORMAT_CHANNELS_LAST;
  KD_ASSERT_ERR(kd_internal_to_copy(x, NULL, NULL, NULL, NULL, false, &cl, &y), KD_EINVAL,
                "required rank 4 tensor to use channels_last format");
  /* channels_last on a 4-d tensor */
  kd_tensor *x4 = empty(KD_FLOAT32, 4, (int64_t[]){2, 3, 4, 5});
  KD_ASSERT_OK(kd_zero_(x4));
  KD_ASSERT_OK(kd_internal_to_copy(x4, NULL, NULL, NULL, NULL, false, &cl, &y));
  assert_int_equal(kd_tensor_stride(y, 1), 1);
  assert_int_equal(kd_tensor_stride(y, 3), 3);
  assert_int_equal(kd_tensor_stride(y, 2), 15);
  assert_int_equal(kd_tensor_stride(y, 0), 60);
  kd_tensor_release(y);
  kd_tensor_release(x4);
  kd_tensor_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_float_values_by_hand),
      cmocka_unit_test(test_float_ops_all_dtypes),
      cmocka_unit_test(test_float_ops_promote_integers),
      cmocka_unit_test(test_complex),
      cmocka_unit_test(test_integer_ops),
      cmocka_unit_test(test_bool_ops),
      cmocka_unit_test(test_logical_not),
      cmocka_unit_test(test_gelu),
      cmocka_unit_test(test_round_decimals),
      cmocka_unit_test(test_non_contiguous),
      cmocka_unit_test(test_zero_size_and_scalars),
      cmocka_unit_test(test_meta),
      cmocka_unit_test(test_out_errors),
      cmocka_unit_test(test_capabilities_agree),
      cmocka_unit_test(test_large),
      cmocka_unit_test(test_fill_zero),
      cmocka_unit_test(test_copy),
      cmocka_unit_test(test_to), cmocka_unit_test(test_to_huge_empty),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
