/*
 * test_opencl_pointwise.c: the OpenCL backend's pointwise loops, copy_, fill_
 * and cast (backends/opencl/opencl_pointwise.c), each checked against the
 * CPU on a few shapes: contiguous, strided (transposed and sliced views),
 * broadcast, type-promoted, 0-dim and zero-size operands, out= (another dtype,
 * another shape) and in-place variants; errors checked by status and message.
 * (test_opencl_diff runs every operator of the plugin over every dtype.)
 *
 * Usage: test_opencl_pointwise PLUGIN. Exits 77 (skip, one line) when this
 * machine has no OpenCL platform with a device.
 *
 * Programs are built once per (operation, dtypes) and cached (and in PoCL's
 * disk cache): the cases are chosen to need few of them.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>

#include "kd_test.h"
#include "kd/backend.h"
#include "kd/cpu_fallback.h"
#include "kd/ops/abs.h"
#include "kd/ops/add.h"
#include "kd/ops/clamp.h"
#include "kd/ops/copy.h"
#include "kd/ops/div.h"
#include "kd/ops/eq.h"
#include "kd/ops/exp.h"
#include "kd/ops/fill.h"
#include "kd/ops/ge.h"
#include "kd/ops/gelu.h"
#include "kd/ops/logical_and.h"
#include "kd/ops/logical_not.h"
#include "kd/ops/logical_xor.h"
#include "kd/ops/masked_fill.h"
#include "kd/ops/lt.h"
#include "kd/ops/maximum.h"
#include "kd/ops/minimum.h"
#include "kd/ops/mul.h"
#include "kd/ops/neg.h"
#include "kd/ops/pow.h"
#include "kd/ops/relu.h"
#include "kd/ops/remainder.h"
#include "kd/ops/round.h"
#include "kd/ops/sigmoid.h"
#include "kd/ops/sign.h"
#include "kd/ops/sin.h"
#include "kd/ops/sqrt.h"
#include "kd/ops/sub.h"
#include "kd/ops/tanh.h"
#include "kd/ops/where.h"
#include "kd/ops/zero.h"

static const char *plugin_path;
static kd_plugin *plugin;
static bool have_fp64;

static kd_device dev0(void) { return (kd_device){KD_DEVICE_PRIVATEUSE1, 0}; }

/* ---- Tensors on both devices ------------------------------------------------------------ */

/* The same values on the cpu (c) and on opencl:0 (d); views of both alike. */
typedef struct pair {
  kd_tensor *c, *d;
} pair;

static void drop(pair p) {
  kd_tensor_release(p.c);
  kd_tensor_release(p.d);
}

/* A value for element i: small integers (nonzero when asked), fractions for
 * floating dtypes, a third true for bool. */
static double value_at(kd_dtype dt, int64_t i, int seed, bool nonzero) {
  int64_t v = (i * 7 + seed * 13) % 11 - 5;
  if (nonzero && v == 0) v = 3;
  if (dt == KD_BOOL) return (i + seed) % 3 == 0;
  if (dt == KD_UINT8) return (double)(v < 0 ? -v : v) + (nonzero ? 1 : 0);
  if (dt == KD_FLOAT32 || dt == KD_FLOAT64) return (double)v * 0.37 + (nonzero ? 0.1 : 0.0);
  return (double)v;
}

static kd_tensor *cpu_tensor(kd_dtype dt, int nd, const int64_t *sz, int seed, bool nonzero) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(nd, sz, dt, kd_device_cpu(), &t));
  int64_t n = kd_tensor_numel(t), idx[KD_MAX_DIMS] = {0};
  for (int64_t e = 0; e < n; e++) {
    double v = value_at(dt, e, seed, nonzero);
    kd_scalar s = dt == KD_BOOL ? kd_scalar_bool(v != 0)
                  : (dt == KD_FLOAT32 || dt == KD_FLOAT64) ? kd_scalar_double(v)
                                                           : kd_scalar_int((int64_t)v);
    KD_ASSERT_OK(kd_tensor_set(t, idx, &s));
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < sz[d]) break;
      idx[d] = 0;
    }
  }
  return t;
}

static pair mk(kd_dtype dt, int nd, const int64_t *sz, int seed) {
  pair p = {cpu_tensor(dt, nd, sz, seed, false), NULL};
  KD_ASSERT_OK(kd_tensor_to_device(p.c, dev0(), &p.d));
  return p;
}

static pair mk_nonzero(kd_dtype dt, int nd, const int64_t *sz, int seed) {
  pair p = {cpu_tensor(dt, nd, sz, seed, true), NULL};
  KD_ASSERT_OK(kd_tensor_to_device(p.c, dev0(), &p.d));
  return p;
}

/* A view of both: sizes, strides, offset (elements). Consumes p. */
static pair view(pair p, int nd, const int64_t *sz, const int64_t *st, int64_t off) {
  pair v;
  KD_ASSERT_OK(kd_tensor_as_strided(p.c, nd, sz, st, off, &v.c));
  KD_ASSERT_OK(kd_tensor_as_strided(p.d, nd, sz, st, off, &v.d));
  drop(p);
  return v;
}

/* The 2-d transpose of a contiguous [r, c] pair: a [c, r] view. */
static pair transposed(kd_dtype dt, int64_t r, int64_t c, int seed) {
  return view(mk(dt, 2, (int64_t[]){r, c}, seed), 2, (int64_t[]){c, r}, (int64_t[]){1, c}, 0);
}

/* Every other element of a [2, 2n+1] pair, from element 1: a [2, n] view. */
static pair sliced(kd_dtype dt, int64_t n, int seed) {
  return view(mk(dt, 2, (int64_t[]){2, 2 * n + 1}, seed), 2, (int64_t[]){2, n},
              (int64_t[]){2 * n + 1, 2}, 1);
}

/* ---- Comparison ------------------------------------------------------------------------------ */

static bool is_float(kd_dtype dt) { return dt == KD_FLOAT32 || dt == KD_FLOAT64; }

/* Expects the opencl tensor d to hold the cpu tensor c's values (same dtype
 * and sizes): integers and bool exactly, floats within a few ulp of their
 * dtype (OpenCL's functions are not libm's), NaN where NaN, infinities alike. */
static void expect_same(const kd_tensor *c, const kd_tensor *d, const char *what) {
  if (kd_tensor_device(d).type != KD_DEVICE_PRIVATEUSE1)
    fail_msg("%s: the result is not on opencl", what);
  assert_int_equal(kd_tensor_dtype(c), kd_tensor_dtype(d));
  assert_int_equal(kd_tensor_ndim(c), kd_tensor_ndim(d));
  for (int i = 0; i < kd_tensor_ndim(c); i++) assert_int_equal(kd_tensor_sizes(c)[i], kd_tensor_sizes(d)[i]);
  kd_tensor *h, *a, *b;
  KD_ASSERT_OK(kd_tensor_to_device(d, kd_device_cpu(), &h));
  kd_dtype dt = kd_tensor_dtype(c);
  kd_dtype wide = is_float(dt) ? KD_FLOAT64 : KD_INT64;
  KD_ASSERT_OK(kd_tensor_to_dtype(c, wide, &a));
  KD_ASSERT_OK(kd_tensor_to_dtype(h, wide, &b));
  int64_t n = kd_tensor_numel(c);
  double tol = dt == KD_FLOAT32 ? 2e-6 : 1e-13;
  for (int64_t i = 0; i < n; i++) {
    if (wide == KD_INT64) {
      int64_t x = ((const int64_t *)kd_tensor_data(a))[i], y = ((const int64_t *)kd_tensor_data(b))[i];
      if (x != y) fail_msg("%s: element %lld: cpu %lld, opencl %lld", what, (long long)i, (long long)x, (long long)y);
    } else {
      double x = ((const double *)kd_tensor_data(a))[i], y = ((const double *)kd_tensor_data(b))[i];
      bool ok = (isnan(x) && isnan(y)) || x == y ||
                (isfinite(x) && isfinite(y) && fabs(x - y) <= tol * fmax(1.0, fmax(fabs(x), fabs(y))));
      if (!ok) fail_msg("%s: element %lld: cpu %.17g, opencl %.17g", what, (long long)i, x, y);
    }
  }
  kd_tensor_release(h);
  kd_tensor_release(a);
  kd_tensor_release(b);
}

typedef kd_status (*un_fn)(kd_tensor *, kd_tensor **);
typedef kd_status (*bin_fn)(kd_tensor *, kd_tensor *, kd_tensor **);

/* Runs f on both; expects both to succeed with the same values. Consumes a. */
static void un(un_fn f, pair a, const char *what) {
  kd_tensor *rc = NULL, *rd = NULL;
  KD_ASSERT_OK(f(a.c, &rc));
  KD_ASSERT_OK(f(a.d, &rd));
  expect_same(rc, rd, what);
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  drop(a);
}

static void bin(bin_fn f, pair a, pair b, const char *what) {
  kd_tensor *rc = NULL, *rd = NULL;
  KD_ASSERT_OK(f(a.c, b.c, &rc));
  KD_ASSERT_OK(f(a.d, b.d, &rd));
  expect_same(rc, rd, what);
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  drop(a);
  drop(b);
}

/* Expects a and b (same values) to hold the same values now. Consumes p. */
static void same_now(pair p, const char *what) {
  expect_same(p.c, p.d, what);
  drop(p);
}

/* ---- Binary operators -------------------------------------------------------------------------- */

static kd_status add2(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  kd_scalar al = kd_scalar_int(2);
  return kd_add_Tensor(a, b, kd_tensor_dtype(a) == KD_BOOL ? NULL : &al, o);
}
static kd_status add_plain(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_add_Tensor(a, b, NULL, o); }
static kd_status sub_half(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  kd_scalar al = kd_scalar_double(0.5);
  return kd_sub_Tensor(a, b, &al, o);
}
static kd_status mul(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_mul_Tensor(a, b, o); }
static kd_status div_true(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_div_Tensor(a, b, o); }
static kd_status div_trunc(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_div_Tensor_mode(a, b, "trunc", o); }
static kd_status div_floor(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_div_Tensor_mode(a, b, "floor", o); }
static kd_status rem(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_remainder_Tensor(a, b, o); }
static kd_status maxi(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_maximum(a, b, o); }
static kd_status mini(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_minimum(a, b, o); }
static kd_status powt(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_pow_Tensor_Tensor(a, b, o); }
static kd_status eqt(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_eq_Tensor(a, b, o); }
static kd_status get(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_ge_Tensor(a, b, o); }
static kd_status land(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_logical_and(a, b, o); }
static kd_status lxor(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_logical_xor(a, b, o); }

static const kd_dtype every_dtype[] = {KD_BOOL,  KD_UINT8, KD_INT8,    KD_INT16,
                                       KD_INT32, KD_INT64, KD_FLOAT32, KD_FLOAT64};
#define N_DTYPES (sizeof every_dtype / sizeof every_dtype[0])

static bool runs(kd_dtype dt) { return dt != KD_FLOAT64 || have_fp64; }

/* add over every dtype: contiguous, broadcast, transposed, sliced, 0-dim
 * with a tensor, zero-size. */
static void test_add_every_dtype(void **state) {
  (void)state;
  for (size_t i = 0; i < N_DTYPES; i++) {
    kd_dtype dt = every_dtype[i];
    if (!runs(dt)) continue;
    char what[64];
    snprintf(what, sizeof what, "add %s", kd_dtype_name(dt));
    bin(add2, mk(dt, 2, (int64_t[]){3, 5}, 1), mk(dt, 2, (int64_t[]){3, 5}, 2), what);
    bin(add2, mk(dt, 2, (int64_t[]){3, 5}, 1), mk(dt, 1, (int64_t[]){5}, 2), what);
    bin(add2, transposed(dt, 4, 3, 1), mk(dt, 2, (int64_t[]){3, 4}, 3), what);
    bin(add2, sliced(dt, 4, 1), transposed(dt, 4, 2, 2), what);
    bin(add2, mk(dt, 0, NULL, 4), mk(dt, 2, (int64_t[]){2, 3}, 5), what);
    bin(add2, mk(dt, 2, (int64_t[]){0, 3}, 1), mk(dt, 1, (int64_t[]){3}, 2), what);
    /* Three dims the iterator cannot merge (dims 0 and 1 swapped). */
    bin(add2, view(mk(dt, 3, (int64_t[]){3, 2, 4}, 8), 3, (int64_t[]){2, 3, 4}, (int64_t[]){4, 8, 1}, 0),
        mk(dt, 3, (int64_t[]){2, 3, 4}, 9), what);
    /* 1000 elements: two launches of the flat kernel (768, then 232). */
    bin(add2, mk(dt, 1, (int64_t[]){1000}, 6), mk(dt, 1, (int64_t[]){1000}, 7), what);
  }
}

/* Type promotion (int32 + float32, bool * int64, uint8 / int8), scalars
 * (a cpu wrapped number with an opencl tensor), and add's variants. */
static void test_binary_promotion_and_variants(void **state) {
  (void)state;
  bin(add_plain, mk(KD_INT32, 2, (int64_t[]){2, 3}, 1), mk(KD_FLOAT32, 1, (int64_t[]){3}, 2), "int32 + float32");
  bin(mul, mk(KD_BOOL, 1, (int64_t[]){7}, 1), transposed(KD_INT64, 1, 7, 2), "bool * int64");
  bin(div_true, mk_nonzero(KD_UINT8, 1, (int64_t[]){6}, 1), mk_nonzero(KD_INT8, 1, (int64_t[]){6}, 2), "uint8 / int8");
  bin(sub_half, mk(KD_FLOAT32, 2, (int64_t[]){2, 2}, 3), mk(KD_FLOAT32, 0, NULL, 4), "sub alpha 0.5");

  /* Scalar overloads: the scalar is a cpu 0-dim tensor passed by value. */
  pair a = mk(KD_FLOAT32, 1, (int64_t[]){5}, 1);
  kd_scalar two = kd_scalar_double(2.5), one = kd_scalar_int(1);
  kd_tensor *rc, *rd;
  KD_ASSERT_OK(kd_add_Scalar(a.c, &two, &one, &rc));
  KD_ASSERT_OK(kd_add_Scalar(a.d, &two, &one, &rd));
  expect_same(rc, rd, "add.Scalar");
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  KD_ASSERT_OK(kd_lt_Scalar(a.c, &one, &rc));
  KD_ASSERT_OK(kd_lt_Scalar(a.d, &one, &rd));
  expect_same(rc, rd, "lt.Scalar");
  kd_tensor_release(rc);
  kd_tensor_release(rd);

  /* In place, through a transposed self. */
  pair s = transposed(KD_FLOAT32, 3, 2, 5), o = mk(KD_FLOAT32, 1, (int64_t[]){3}, 6);
  KD_ASSERT_OK(kd_add_Tensor_(s.c, o.c, &two));
  KD_ASSERT_OK(kd_add_Tensor_(s.d, o.d, &two));
  same_now(s, "add_ in place");
  drop(o);

  /* out= of another dtype and shape: resized, then written through a temporary. */
  pair x = mk(KD_FLOAT32, 2, (int64_t[]){2, 3}, 7), y = mk(KD_FLOAT32, 2, (int64_t[]){2, 3}, 8);
  pair out = mk(KD_FLOAT64, 1, (int64_t[]){0}, 9);
  if (have_fp64) {
    KD_ASSERT_OK(kd_add_out(x.c, y.c, NULL, out.c));
    KD_ASSERT_OK(kd_add_out(x.d, y.d, NULL, out.d));
    expect_same(out.c, out.d, "add.out float64");
  }
  /* out= a strided view. */
  pair ov = transposed(KD_FLOAT32, 3, 2, 10);
  KD_ASSERT_OK(kd_mul_out(x.c, y.c, ov.c));
  KD_ASSERT_OK(kd_mul_out(x.d, y.d, ov.d));
  same_now(ov, "mul.out strided");
  drop(x);
  drop(y);
  drop(out);
  drop(a);
}

/* Integer division, remainder and pow as the CPU: signs, -1 divisors, and
 * ZeroDivisionError that writes nothing. */
static void test_division_and_remainder(void **state) {
  (void)state;
  int32_t av[] = {7, -7, 7, -7, INT32_MIN, 0, 5, -9};
  int32_t bv[] = {2, 2, -2, -2, -1, 3, 5, 4};
  int64_t n = 8;
  pair a = {NULL, NULL}, b = {NULL, NULL};
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_INT32, av, &a.c));
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_INT32, bv, &b.c));
  KD_ASSERT_OK(kd_tensor_to_device(a.c, dev0(), &a.d));
  KD_ASSERT_OK(kd_tensor_to_device(b.c, dev0(), &b.d));
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(div_trunc, a, b, "div trunc int32");
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(div_floor, a, b, "div floor int32");
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(rem, a, b, "remainder int32");
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(div_true, a, b, "div true int32 (promoted)");

  /* A zero divisor: the CPU's error, and self (in place) unchanged. */
  kd_scalar zero = kd_scalar_int(0);
  KD_ASSERT_OK(kd_tensor_set(b.c, (int64_t[]){5}, &zero));
  kd_tensor *bz;
  KD_ASSERT_OK(kd_tensor_to_device(b.c, dev0(), &bz));
  KD_ASSERT_ERR(kd_div_Tensor_mode_(a.d, bz, "floor"), KD_EINVAL, "ZeroDivisionError");
  KD_ASSERT_ERR(kd_div_Tensor_mode_(a.c, b.c, "floor"), KD_EINVAL, "ZeroDivisionError");
  expect_same(a.c, a.d, "div_ floor by zero leaves self");
  KD_ASSERT_ERR(kd_remainder_Tensor_(a.d, bz), KD_EINVAL, "ZeroDivisionError");
  kd_scalar zs = kd_scalar_int(0);
  kd_tensor *r = NULL;
  KD_ASSERT_ERR(kd_div_Scalar_mode(a.d, &zs, "trunc", &r), KD_EINVAL, "ZeroDivisionError");
  assert_null(r);
  kd_tensor_release(bz);

  /* Floats: signs of zero, infinities, NaN. */
  bin(div_floor, mk(KD_FLOAT32, 1, (int64_t[]){11}, 1), mk(KD_FLOAT32, 1, (int64_t[]){11}, 3), "div floor float32");
  bin(rem, mk(KD_FLOAT32, 1, (int64_t[]){11}, 1), mk_nonzero(KD_FLOAT32, 1, (int64_t[]){11}, 3), "remainder float32");
  bin(powt, mk(KD_INT64, 1, (int64_t[]){11}, 1), mk(KD_INT64, 1, (int64_t[]){11}, 2), "pow int64");
  bin(powt, mk(KD_FLOAT32, 1, (int64_t[]){11}, 1), mk(KD_FLOAT32, 1, (int64_t[]){11}, 2), "pow float32");
  pair p = mk(KD_FLOAT32, 1, (int64_t[]){11}, 4);
  kd_scalar e = kd_scalar_double(0.5);
  kd_tensor *pc, *pd;
  KD_ASSERT_OK(kd_pow_Tensor_Scalar(p.c, &e, &pc));
  KD_ASSERT_OK(kd_pow_Tensor_Scalar(p.d, &e, &pd));
  expect_same(pc, pd, "pow.Tensor_Scalar 0.5");
  kd_tensor_release(pc);
  kd_tensor_release(pd);
  drop(p);
  drop(a);
  drop(b);
}

/* maximum / minimum propagate NaN; comparisons and logical operators give
 * bool, or the inputs' dtype for an out= of that dtype. */
static void test_compare_and_logical(void **state) {
  (void)state;
  float av[] = {1.0f, NAN, -2.0f, 3.0f}, bv[] = {NAN, 1.0f, -3.0f, 3.0f};
  int64_t n = 4;
  pair a, b;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, av, &a.c));
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, bv, &b.c));
  KD_ASSERT_OK(kd_tensor_to_device(a.c, dev0(), &a.d));
  KD_ASSERT_OK(kd_tensor_to_device(b.c, dev0(), &b.d));
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(maxi, a, b, "maximum NaN");
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(mini, a, b, "minimum NaN");
  kd_tensor_retain(a.c), kd_tensor_retain(a.d), kd_tensor_retain(b.c), kd_tensor_retain(b.d);
  bin(eqt, a, b, "eq NaN");
  bin(get, a, b, "ge NaN");
  bin(maxi, mk(KD_INT8, 2, (int64_t[]){2, 3}, 1), mk(KD_INT8, 1, (int64_t[]){3}, 2), "maximum int8");
  bin(eqt, transposed(KD_INT16, 3, 2, 1), mk(KD_INT16, 2, (int64_t[]){2, 3}, 2), "eq int16");
  bin(land, mk(KD_INT32, 1, (int64_t[]){7}, 1), mk(KD_BOOL, 1, (int64_t[]){7}, 2), "logical_and");
  bin(lxor, mk(KD_FLOAT32, 1, (int64_t[]){7}, 1), mk(KD_FLOAT32, 0, NULL, 2), "logical_xor");

  /* out= of the inputs' dtype: 0/1 written as float32. */
  pair x = mk(KD_FLOAT32, 1, (int64_t[]){7}, 1), y = mk(KD_FLOAT32, 1, (int64_t[]){7}, 2);
  pair o = mk(KD_FLOAT32, 1, (int64_t[]){7}, 3);
  KD_ASSERT_OK(kd_ge_Tensor_out(x.c, y.c, o.c));
  KD_ASSERT_OK(kd_ge_Tensor_out(x.d, y.d, o.d));
  same_now(o, "ge.Tensor_out float32");
  drop(x);
  drop(y);
}

/* where (broadcast condition), clamp with scalar and tensor bounds. */
static void test_where_and_clamp(void **state) {
  (void)state;
  pair c = mk(KD_BOOL, 1, (int64_t[]){4}, 1), a = transposed(KD_FLOAT32, 4, 3, 2), b = mk(KD_FLOAT32, 0, NULL, 3);
  kd_tensor *rc, *rd;
  KD_ASSERT_OK(kd_where_self(c.c, a.c, b.c, &rc));
  KD_ASSERT_OK(kd_where_self(c.d, a.d, b.d, &rd));
  expect_same(rc, rd, "where");
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  /* A condition that is not bool: the CPU's error. */
  pair ci = mk(KD_INT32, 1, (int64_t[]){4}, 1);
  KD_ASSERT_ERR(kd_where_self(ci.d, a.d, a.d, &rd), KD_ETYPE, "where expected condition to be a boolean");
  drop(ci);

  kd_scalar lo = kd_scalar_double(-0.5), hi = kd_scalar_double(0.8), ilo = kd_scalar_int(-2);
  KD_ASSERT_OK(kd_clamp(a.c, &lo, &hi, &rc));
  KD_ASSERT_OK(kd_clamp(a.d, &lo, &hi, &rd));
  expect_same(rc, rd, "clamp float32");
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  pair s = mk(KD_INT16, 2, (int64_t[]){2, 5}, 4);
  KD_ASSERT_OK(kd_clamp_(s.c, &ilo, NULL));
  KD_ASSERT_OK(kd_clamp_(s.d, &ilo, NULL));
  same_now(s, "clamp_ int16 min only");
  /* A bound that does not fit the dtype: the CPU's overflow error. */
  pair s8 = mk(KD_INT8, 1, (int64_t[]){3}, 4);
  kd_scalar big = kd_scalar_int(1000);
  KD_ASSERT_ERR(kd_clamp(s8.d, NULL, &big, &rd), KD_EOVERFLOW, "clamp: max");
  drop(s8);

  /* masked_fill_ through a broadcast mask: unmasked elements stay. */
  pair mf = mk(KD_INT64, 2, (int64_t[]){3, 4}, 7), mask = mk(KD_BOOL, 1, (int64_t[]){4}, 8);
  kd_scalar mv = kd_scalar_int(-42);
  KD_ASSERT_OK(kd_masked_fill_Scalar_(mf.c, mask.c, &mv));
  KD_ASSERT_OK(kd_masked_fill_Scalar_(mf.d, mask.d, &mv));
  same_now(mf, "masked_fill_");
  pair mi = mk(KD_INT8, 1, (int64_t[]){4}, 9);
  KD_ASSERT_ERR(kd_masked_fill_Scalar_(mi.d, mask.d, &big), KD_EOVERFLOW, "masked_fill_");
  drop(mi);
  drop(mask);

  pair mn = mk(KD_FLOAT32, 1, (int64_t[]){4}, 5), mx = mk(KD_FLOAT32, 2, (int64_t[]){3, 4}, 6);
  KD_ASSERT_OK(kd_clamp_Tensor(a.c, mn.c, mx.c, &rc));
  KD_ASSERT_OK(kd_clamp_Tensor(a.d, mn.d, mx.d, &rd));
  expect_same(rc, rd, "clamp.Tensor");
  kd_tensor_release(rc);
  kd_tensor_release(rd);
  drop(mn);
  drop(mx);
  drop(a);
  drop(b);
  drop(c);
}

/* ---- Unary operators ------------------------------------------------------------------------- */

static kd_status u_exp(kd_tensor *a, kd_tensor **o) { return kd_exp(a, o); }
static kd_status u_sqrt(kd_tensor *a, kd_tensor **o) { return kd_sqrt(a, o); }
static kd_status u_sin(kd_tensor *a, kd_tensor **o) { return kd_sin(a, o); }
static kd_status u_tanh(kd_tensor *a, kd_tensor **o) { return kd_tanh(a, o); }
static kd_status u_sigmoid(kd_tensor *a, kd_tensor **o) { return kd_sigmoid(a, o); }
static kd_status u_gelu(kd_tensor *a, kd_tensor **o) { return kd_gelu(a, "tanh", o); }
static kd_status u_neg(kd_tensor *a, kd_tensor **o) { return kd_neg(a, o); }
static kd_status u_abs(kd_tensor *a, kd_tensor **o) { return kd_abs(a, o); }
static kd_status u_sign(kd_tensor *a, kd_tensor **o) { return kd_sign(a, o); }
static kd_status u_relu(kd_tensor *a, kd_tensor **o) { return kd_relu(a, o); }
static kd_status u_lnot(kd_tensor *a, kd_tensor **o) { return kd_logical_not(a, o); }
static kd_status u_round2(kd_tensor *a, kd_tensor **o) { return kd_round_decimals(a, 2, o); }

static void test_unary(void **state) {
  (void)state;
  un(u_exp, mk(KD_FLOAT32, 2, (int64_t[]){3, 4}, 1), "exp float32");
  un(u_exp, transposed(KD_INT32, 3, 4, 1), "exp int32 (promoted)");
  un(u_sqrt, sliced(KD_FLOAT32, 5, 2), "sqrt (NaN of negatives)");
  un(u_sin, mk(KD_FLOAT32, 0, NULL, 3), "sin 0-dim");
  un(u_tanh, mk(KD_FLOAT32, 1, (int64_t[]){0}, 3), "tanh zero-size");
  un(u_sigmoid, mk(KD_FLOAT32, 1, (int64_t[]){9}, 4), "sigmoid");
  un(u_gelu, mk(KD_FLOAT32, 1, (int64_t[]){9}, 5), "gelu tanh");
  un(u_sign, mk(KD_FLOAT32, 1, (int64_t[]){9}, 6), "sign float32");
  un(u_relu, mk(KD_INT32, 1, (int64_t[]){9}, 7), "relu int32");
  un(u_lnot, mk(KD_FLOAT32, 1, (int64_t[]){9}, 8), "logical_not float32");
  if (have_fp64) un(u_round2, mk(KD_FLOAT64, 1, (int64_t[]){9}, 9), "round decimals=2");

  /* Integer wrap-around: -INT64_MIN and |INT32_MIN| are themselves. */
  int64_t lv[] = {INT64_MIN, -1, 0, 5, INT64_MAX};
  int32_t iv[] = {INT32_MIN, -7, 0, 7, INT32_MAX};
  int64_t n = 5;
  pair l, i;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_INT64, lv, &l.c));
  KD_ASSERT_OK(kd_tensor_to_device(l.c, dev0(), &l.d));
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_INT32, iv, &i.c));
  KD_ASSERT_OK(kd_tensor_to_device(i.c, dev0(), &i.d));
  un(u_neg, l, "neg int64");
  un(u_abs, i, "abs int32");

  /* In place: exp_ of a transposed float32 view. */
  pair t = transposed(KD_FLOAT32, 2, 3, 3);
  KD_ASSERT_OK(kd_exp_(t.c));
  KD_ASSERT_OK(kd_exp_(t.d));
  same_now(t, "exp_ in place");
  /* The CPU's refusals hold on opencl: neg of bool. */
  pair bo = mk(KD_BOOL, 1, (int64_t[]){3}, 1);
  kd_tensor *r = NULL;
  KD_ASSERT_ERR(kd_neg(bo.d, &r), KD_ETYPE, "Negation");
  drop(bo);
}

/* float16 and complex: the device does not run them; the message says so. */
static void test_unsupported_dtypes(void **state) {
  (void)state;
  kd_tensor *h, *r = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT16, dev0(), &h));
  KD_ASSERT_ERR(kd_add_Tensor(h, h, NULL, &r), KD_ETYPE, "float16");
  assert_null(r);
  KD_ASSERT_ERR(kd_add_Tensor(h, h, NULL, &r), KD_ETYPE, "opencl:0");
  kd_tensor_release(h);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_COMPLEX64, dev0(), &h));
  KD_ASSERT_ERR(kd_exp(h, &r), KD_ETYPE, "complex64");
  kd_scalar one = kd_scalar_int(1);
  KD_ASSERT_ERR(kd_fill_Scalar_(h, &one), KD_ETYPE, "complex64");
  kd_tensor_release(h);
}

/* ---- copy_, fill_, cast ---------------------------------------------------------------------- */

/* Every direction, conversions, strides, broadcast, overlap. */
static void test_copy(void **state) {
  (void)state;
  /* cpu -> opencl: contiguous (one write), into a transposed dst, with a
   * conversion, broadcast. */
  kd_tensor *src = cpu_tensor(KD_FLOAT32, 2, (int64_t[]){3, 4}, 1, false);
  pair d = mk(KD_FLOAT32, 2, (int64_t[]){3, 4}, 2);
  KD_ASSERT_OK(kd_copy_(d.c, src, false));
  KD_ASSERT_OK(kd_copy_(d.d, src, false));
  same_now(d, "copy_ cpu -> opencl");
  pair t = transposed(KD_INT32, 4, 3, 2);
  KD_ASSERT_OK(kd_copy_(t.c, src, false));
  KD_ASSERT_OK(kd_copy_(t.d, src, true));
  same_now(t, "copy_ cpu float32 -> opencl int32 transposed");
  kd_tensor *row = cpu_tensor(KD_INT64, 1, (int64_t[]){4}, 3, false);
  pair bc = mk(KD_FLOAT32, 2, (int64_t[]){3, 4}, 4);
  KD_ASSERT_OK(kd_copy_(bc.c, row, false));
  KD_ASSERT_OK(kd_copy_(bc.d, row, false));
  same_now(bc, "copy_ cpu broadcast");
  /* A dtype the device lacks, from the host: converted there first. */
  kd_tensor *half;
  KD_ASSERT_OK(kd_tensor_to_dtype(src, KD_FLOAT16, &half));
  pair fh = mk(KD_FLOAT32, 2, (int64_t[]){3, 4}, 5);
  KD_ASSERT_OK(kd_copy_(fh.c, half, false));
  KD_ASSERT_OK(kd_copy_(fh.d, half, false));
  same_now(fh, "copy_ cpu float16 -> opencl float32");
  kd_tensor_release(half);

  /* opencl -> cpu: contiguous (one read), from a sliced view, converted,
   * into a transposed cpu dst. */
  pair s = sliced(KD_INT16, 3, 6);
  kd_tensor *h1, *h2;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 3}, KD_FLOAT64, kd_device_cpu(), &h1));
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 3}, KD_FLOAT64, kd_device_cpu(), &h2));
  KD_ASSERT_OK(kd_copy_(h1, s.c, false));
  KD_ASSERT_OK(kd_copy_(h2, s.d, false));
  kd_tensor *h2d;
  KD_ASSERT_OK(kd_tensor_to_device(h2, dev0(), &h2d));
  expect_same(h1, h2d, "copy_ opencl sliced int16 -> cpu float64");
  kd_tensor_release(h2d);
  kd_tensor *ht1, *ht2;
  KD_ASSERT_OK(kd_tensor_as_strided(h1, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &ht1));
  KD_ASSERT_OK(kd_tensor_as_strided(h2, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &ht2));
  pair q = mk(KD_FLOAT64, 2, (int64_t[]){3, 2}, 7);
  KD_ASSERT_OK(kd_copy_(ht1, q.c, false));
  KD_ASSERT_OK(kd_copy_(ht2, q.d, false));
  for (int64_t k = 0; k < 6; k++) {
    kd_scalar x, y;
    KD_ASSERT_OK(kd_tensor_get(h1, (int64_t[]){k / 3, k % 3}, &x));
    KD_ASSERT_OK(kd_tensor_get(h2, (int64_t[]){k / 3, k % 3}, &y));
    assert_true(kd_scalar_equal(&x, &y));
  }
  drop(q);
  kd_tensor_release(ht1);
  kd_tensor_release(ht2);
  kd_tensor_release(h1);
  kd_tensor_release(h2);
  drop(s);

  /* opencl -> opencl: same dtype strided, float -> int conversions with
   * NaN, infinities and out-of-range values (INT64_MIN, wrapped), -> bool. */
  float fv[] = {1.9f, -1.9f, NAN, INFINITY, -INFINITY, 3e9f, -0.0f, 255.5f};
  int64_t n = 8;
  pair f;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, fv, &f.c));
  KD_ASSERT_OK(kd_tensor_to_device(f.c, dev0(), &f.d));
  static const kd_dtype to[] = {KD_BOOL, KD_UINT8, KD_INT8, KD_INT32, KD_INT64, KD_FLOAT64};
  for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
    if (!runs(to[k])) continue;
    pair o = mk(to[k], 1, (int64_t[]){8}, 1);
    KD_ASSERT_OK(kd_copy_(o.c, f.c, false));
    KD_ASSERT_OK(kd_copy_(o.d, f.d, false));
    char what[64];
    snprintf(what, sizeof what, "copy_ opencl float32 -> %s", kd_dtype_name(to[k]));
    same_now(o, what);
  }
  drop(f);
  pair a = transposed(KD_INT64, 3, 5, 1), b = mk(KD_INT64, 2, (int64_t[]){5, 3}, 2);
  KD_ASSERT_OK(kd_copy_(b.c, a.c, false));
  KD_ASSERT_OK(kd_copy_(b.d, a.d, false));
  same_now(b, "copy_ opencl transposed -> opencl");
  pair b3 = mk(KD_INT16, 3, (int64_t[]){2, 3, 4}, 4);
  pair a3 = view(mk(KD_FLOAT32, 3, (int64_t[]){3, 2, 4}, 5), 3, (int64_t[]){2, 3, 4}, (int64_t[]){4, 8, 1}, 0);
  KD_ASSERT_OK(kd_copy_(b3.c, a3.c, false));
  KD_ASSERT_OK(kd_copy_(b3.d, a3.d, false));
  same_now(b3, "copy_ opencl 3 strided dims -> opencl");
  drop(a3);
  drop(a);
  /* Overlap: a square tensor copied from its own transpose. */
  pair sq = mk(KD_FLOAT32, 2, (int64_t[]){4, 4}, 3);
  kd_tensor *sqt_c, *sqt_d;
  KD_ASSERT_OK(kd_tensor_as_strided(sq.c, 2, (int64_t[]){4, 4}, (int64_t[]){1, 4}, 0, &sqt_c));
  KD_ASSERT_OK(kd_tensor_as_strided(sq.d, 2, (int64_t[]){4, 4}, (int64_t[]){1, 4}, 0, &sqt_d));
  KD_ASSERT_OK(kd_copy_(sq.c, sqt_c, false));
  KD_ASSERT_OK(kd_copy_(sq.d, sqt_d, false));
  kd_tensor_release(sqt_c);
  kd_tensor_release(sqt_d);
  same_now(sq, "copy_ from its own transpose");

  /* Errors: sizes that do not broadcast, an overlapping dst. */
  pair e = mk(KD_FLOAT32, 1, (int64_t[]){3}, 1);
  KD_ASSERT_ERR(kd_copy_(e.d, src, false), KD_EINVAL, "broadcast");
  kd_tensor *exp_d;
  KD_ASSERT_OK(kd_tensor_as_strided(e.d, 1, (int64_t[]){3}, (int64_t[]){0}, 0, &exp_d));
  KD_ASSERT_ERR(kd_copy_(exp_d, row, false), KD_EINVAL, "overlap");
  kd_tensor_release(exp_d);
  drop(e);
  kd_tensor_release(row);
  kd_tensor_release(src);
}

static void test_fill(void **state) {
  (void)state;
  for (size_t i = 0; i < N_DTYPES; i++) {
    kd_dtype dt = every_dtype[i];
    if (!runs(dt)) continue;
    kd_scalar v = dt == KD_BOOL ? kd_scalar_bool(true) : is_float(dt) ? kd_scalar_double(-2.75) : kd_scalar_int(-3);
    if (dt == KD_UINT8) v = kd_scalar_int(200);
    pair p = mk(dt, 2, (int64_t[]){3, 5}, 1);
    KD_ASSERT_OK(kd_fill_Scalar_(p.c, &v));
    KD_ASSERT_OK(kd_fill_Scalar_(p.d, &v));
    char what[64];
    snprintf(what, sizeof what, "fill_ %s", kd_dtype_name(dt));
    same_now(p, what);
  }
  /* A strided self: only its elements change. */
  pair base = mk(KD_INT32, 2, (int64_t[]){2, 7}, 2);
  kd_tensor *vc, *vd;
  KD_ASSERT_OK(kd_tensor_as_strided(base.c, 2, (int64_t[]){2, 3}, (int64_t[]){7, 2}, 1, &vc));
  KD_ASSERT_OK(kd_tensor_as_strided(base.d, 2, (int64_t[]){2, 3}, (int64_t[]){7, 2}, 1, &vd));
  kd_scalar nine = kd_scalar_int(9);
  KD_ASSERT_OK(kd_fill_Scalar_(vc, &nine));
  KD_ASSERT_OK(kd_fill_Scalar_(vd, &nine));
  kd_tensor_release(vc);
  kd_tensor_release(vd);
  pair z = {base.c, base.d};
  kd_tensor_retain(z.c);
  kd_tensor_retain(z.d);
  same_now(base, "fill_ strided");
  /* zero_ (libkdops' kernel through the fill stub's opencl loop). */
  KD_ASSERT_OK(kd_zero_(z.c));
  KD_ASSERT_OK(kd_zero_(z.d));
  same_now(z, "zero_");
  /* A value that does not fit: the CPU's overflow error, nothing written. */
  pair s = mk(KD_INT8, 1, (int64_t[]){4}, 3);
  kd_scalar big = kd_scalar_int(1000);
  KD_ASSERT_ERR(kd_fill_Scalar_(s.d, &big), KD_EOVERFLOW, "fill_");
  same_now(s, "fill_ overflow writes nothing");
}

/* kd_tensor_to_dtype of a contiguous opencl tensor: the backend's cast. */
static void test_to_dtype(void **state) {
  (void)state;
  float fv[] = {1.9f, -1.9f, NAN, INFINITY, 0.0f, 3e9f, -0.5f};
  int64_t n = 7;
  pair f;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, fv, &f.c));
  KD_ASSERT_OK(kd_tensor_to_device(f.c, dev0(), &f.d));
  static const kd_dtype to[] = {KD_BOOL, KD_INT16, KD_INT64, KD_FLOAT64};
  for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
    if (!runs(to[k])) continue;
    kd_tensor *c, *d;
    KD_ASSERT_OK(kd_tensor_to_dtype(f.c, to[k], &c));
    KD_ASSERT_OK(kd_tensor_to_dtype(f.d, to[k], &d));
    expect_same(c, d, "kd_tensor_to_dtype");
    kd_tensor_release(c);
    kd_tensor_release(d);
  }
  drop(f);
}

/* Every operator the tests above ran on opencl ran there: none went through
 * the CPU fallback (which would compute the right values too). */
static void fell_back(const kd_op *op, kd_dispatch_key key, uint64_t count, void *user) {
  (void)key;
  int *n = user;
  printf("fell back to the cpu: %s (%llu calls)\n", kd_op_name(op), (unsigned long long)count);
  (*n)++;
}

static void test_no_cpu_fallback(void **state) {
  (void)state;
  int n = 0;
  kd_fallback_counts_foreach(fell_back, &n);
  assert_int_equal(n, 0);
}

/* ---- Reading elements on the host ------------------------------------------------------------ */

/* kd_tensor_get / kd_tensor_item on opencl tensors: each read waits for the
 * queued work (the add before it) and copies one element; views' strides and
 * offsets are honoured; every dtype the device runs. */
static void test_item(void **state) {
  (void)state;
  for (size_t k = 0; k < N_DTYPES; k++) {
    kd_dtype dt = every_dtype[k];
    if (!runs(dt)) continue;
    pair a = sliced(dt, 4, 1), b = sliced(dt, 4, 2);
    kd_tensor *rc = NULL, *rd = NULL;
    KD_ASSERT_OK(add_plain(a.c, b.c, &rc));
    KD_ASSERT_OK(add_plain(a.d, b.d, &rd));
    /* A transposed view of the result, read element by element. */
    kd_tensor *tc, *td;
    KD_ASSERT_OK(kd_tensor_as_strided(rc, 2, (int64_t[]){4, 2}, (int64_t[]){1, 4}, 0, &tc));
    KD_ASSERT_OK(kd_tensor_as_strided(rd, 2, (int64_t[]){4, 2}, (int64_t[]){1, 4}, 0, &td));
    for (int64_t i = 0; i < 4; i++)
      for (int64_t j = 0; j < 2; j++) {
        kd_scalar x, y;
        KD_ASSERT_OK(kd_tensor_get(tc, (int64_t[]){i, j}, &x));
        KD_ASSERT_OK(kd_tensor_get(td, (int64_t[]){i, j}, &y));
        assert_int_equal(x.kind, y.kind);
        if (x.kind == KD_SCALAR_DOUBLE) assert_true(x.v.d == y.v.d);
        else if (x.kind == KD_SCALAR_BOOL) assert_int_equal(x.v.b, y.v.b);
        else assert_int_equal(x.v.i, y.v.i);
      }
    /* One element at an offset, as a 0-dim view: kd_tensor_item. */
    kd_tensor *oc, *od;
    KD_ASSERT_OK(kd_tensor_as_strided(rc, 0, NULL, NULL, 5, &oc));
    KD_ASSERT_OK(kd_tensor_as_strided(rd, 0, NULL, NULL, 5, &od));
    kd_scalar x, y;
    KD_ASSERT_OK(kd_tensor_item(oc, &x));
    KD_ASSERT_OK(kd_tensor_item(od, &y));
    assert_int_equal(x.kind, y.kind);
    if (x.kind == KD_SCALAR_DOUBLE) assert_true(x.v.d == y.v.d);
    else if (x.kind == KD_SCALAR_BOOL) assert_int_equal(x.v.b, y.v.b);
    else assert_int_equal(x.v.i, y.v.i);
    KD_ASSERT_ERR(kd_tensor_item(rd, &y), KD_EINVAL, "a tensor with 8 elements");
    kd_tensor_release(oc);
    kd_tensor_release(od);
    kd_tensor_release(tc);
    kd_tensor_release(td);
    kd_tensor_release(rc);
    kd_tensor_release(rd);
    drop(a);
    drop(b);
  }
}

/* masked_fill_.Tensor runs on the device (no CPU fallback: test_no_cpu_fallback
 * checks), its 0-dim value read with kd_tensor_item; the CPU's errors. */
static void test_masked_fill_tensor(void **state) {
  (void)state;
  pair mf = mk(KD_FLOAT32, 2, (int64_t[]){3, 4}, 7), mask = mk(KD_BOOL, 1, (int64_t[]){4}, 8);
  pair v = mk(KD_FLOAT32, 0, NULL, 3);
  KD_ASSERT_OK(kd_masked_fill_Tensor_(mf.c, mask.c, v.c));
  KD_ASSERT_OK(kd_masked_fill_Tensor_(mf.d, mask.d, v.d));
  same_now(mf, "masked_fill_.Tensor");
  pair t = transposed(KD_INT32, 4, 3, 2), iv = mk(KD_INT64, 0, NULL, 5);
  pair m2 = mk(KD_BOOL, 2, (int64_t[]){3, 4}, 4);
  KD_ASSERT_OK(kd_masked_fill_Tensor_(t.c, m2.c, iv.c));
  KD_ASSERT_OK(kd_masked_fill_Tensor_(t.d, m2.d, iv.d));
  same_now(t, "masked_fill_.Tensor transposed int32");
  pair one = mk(KD_FLOAT32, 1, (int64_t[]){1}, 3);
  pair e = mk(KD_FLOAT32, 1, (int64_t[]){4}, 1);
  KD_ASSERT_ERR(kd_masked_fill_Tensor_(e.d, mask.d, one.d), KD_EINVAL,
                "masked_fill_ only supports a 0-dimensional value tensor");
  pair im = mk(KD_INT32, 1, (int64_t[]){4}, 1);
  KD_ASSERT_ERR(kd_masked_fill_Tensor_(e.d, im.d, v.d), KD_ETYPE,
                "masked_fill_ only supports boolean masks");
  drop(e);
  drop(im);
  drop(one);
  drop(m2);
  drop(iv);
  drop(v);
  drop(mask);
}

/* ---- Main ---------------------------------------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_load(plugin_path, &plugin));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_unload(plugin));
  return 0;
}

/* 0 with a platform that has a device (sets have_fp64), else prints why and
 * returns 77. */
static int platform_or_skip(void) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
    printf("SKIP: no OpenCL platform on this machine\n");
    return 77;
  }
  const char *want = getenv("KD_OPENCL_PLATFORM");
  for (cl_uint i = 0; i < np && i < 16; i++) {
    char name[256] = "";
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (want && *want && !strstr(name, want)) continue;
    cl_device_id d;
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &d, &nd) != CL_SUCCESS || nd == 0) continue;
    char ext[8192] = "";
    clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
    have_fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    return 0;
  }
  printf("SKIP: no OpenCL platform with a device\n");
  return 77;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN\n", argv[0]);
    return 2;
  }
  plugin_path = argv[1];
  int skip = platform_or_skip();
  if (skip) return skip;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_every_dtype),
      cmocka_unit_test(test_binary_promotion_and_variants),
      cmocka_unit_test(test_division_and_remainder),
      cmocka_unit_test(test_compare_and_logical),
      cmocka_unit_test(test_where_and_clamp),
      cmocka_unit_test(test_unary),
      cmocka_unit_test(test_unsupported_dtypes),
      cmocka_unit_test(test_copy),
      cmocka_unit_test(test_fill),
      cmocka_unit_test(test_to_dtype),
      cmocka_unit_test(test_item),
      cmocka_unit_test(test_masked_fill_tensor),
      cmocka_unit_test(test_no_cpu_fallback),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
