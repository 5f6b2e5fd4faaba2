/* libkdops on bad input, against PyTorch 1.13 (issue 15): out= dtypes of the
 * unary family, in-place abs of complex, the checked conversion of Scalars
 * (fill_, masked_fill, pow's exponent, addmm's beta and alpha), internal
 * overlap, and the layout of results that convert dtypes. The expected
 * values, messages and strides were read off libtorch 1.13.1 (a C++ probe
 * against /usr/include/torch); messages name kdispatch's dtypes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd/ops/abs.h"
#include "kd/ops/add.h"
#include "kd/ops/addmm.h"
#include "kd/ops/all.h"
#include "kd/ops/any.h"
#include "kd/ops/bitwise_not.h"
#include "kd/ops/ceil.h"
#include "kd/ops/clamp.h"
#include "kd/ops/contiguous.h"
#include "kd/ops/div.h"
#include "kd/ops/eq.h"
#include "kd/ops/exp.h"
#include "kd/ops/expand.h"
#include "kd/ops/fill.h"
#include "kd/ops/floor.h"
#include "kd/ops/full.h"
#include "kd/ops/gelu.h"
#include "kd/ops/masked_fill.h"
#include "kd/ops/mean.h"
#include "kd/ops/mm.h"
#include "kd/ops/mul.h"
#include "kd/ops/neg.h"
#include "kd/ops/permute.h"
#include "kd/ops/pow.h"
#include "kd/ops/round.h"
#include "kd/ops/rsqrt.h"
#include "kd/ops/sign.h"
#include "kd/ops/slice.h"
#include "kd/ops/softmax.h"
#include "kd/ops/sqrt.h"
#include "kd/ops/sub.h"
#include "kd/ops/t.h"
#include "kd/ops/trunc.h"
#include "ops_check.h"

/* ---- helpers ------------------------------------------------------------------- */

/* A cpu tensor of these sizes and (element) strides holding 0, 1, 2, ... in
 * row-major order of its sizes. */
static kd_tensor *strided_iota(kd_dtype dt, int nd, const int64_t *sizes, const int64_t *strides) {
  kd_tensor *t = NULL, *v = oc_iota(dt, nd, sizes);
  KD_ASSERT_OK(kd_tensor_empty_strided(nd, sizes, strides, dt, kd_device_cpu(), &t));
  KD_ASSERT_OK(kd_tensor_copy_(t, v));
  kd_tensor_release(v);
  return t;
}

/* The 3x2 transpose of a 2x3 tensor holding 0..5 (strides [1, 3]). */
static kd_tensor *transposed(kd_dtype dt) {
  kd_tensor *a = IOTA(dt, 2, 3), *t = NULL;
  KD_ASSERT_OK(kd_t(a, &t));
  kd_tensor_release(a);
  return t;
}

static void expect_strides(const kd_tensor *t, int nd, const int64_t *strides) {
  assert_non_null(t);
  assert_int_equal(kd_tensor_ndim(t), nd);
  for (int d = 0; d < nd; d++)
    if (kd_tensor_strides(t)[d] != strides[d])
      fail_msg("%s result: stride %d is %lld, libtorch gives %lld", kd_dtype_name(kd_tensor_dtype(t)),
               d, (long long)kd_tensor_strides(t)[d], (long long)strides[d]);
}
#define EXPECT_STRIDES(t, ...) expect_strides((t), NI(__VA_ARGS__), I(__VA_ARGS__))

/* ---- out= dtype of the unary family ------------------------------------------------ */

typedef kd_status (*unary_out_fn)(kd_tensor *self, kd_tensor *out);
static kd_status gelu_out(kd_tensor *self, kd_tensor *out) { return kd_gelu_out(self, "none", out); }
static kd_status round2_out(kd_tensor *self, kd_tensor *out) {
  return kd_round_decimals_out(self, 2, out);
}
static kd_status clamp0_out(kd_tensor *self, kd_tensor *out) {
  kd_scalar lo = kd_scalar_int(0);
  return kd_clamp_out(self, &lo, NULL, out);
}
static kd_status pow0_out(kd_tensor *self, kd_tensor *out) {
  kd_scalar e = kd_scalar_int(0);
  return kd_pow_Tensor_Scalar_out(self, &e, out);
}
static kd_status pow1_out(kd_tensor *self, kd_tensor *out) {
  kd_scalar e = kd_scalar_int(1);
  return kd_pow_Tensor_Scalar_out(self, &e, out);
}
static kd_status pow2_out(kd_tensor *self, kd_tensor *out) {
  kd_scalar e = kd_scalar_int(2);
  return kd_pow_Tensor_Scalar_out(self, &e, out);
}

/* PyTorch's build_borrowing_unary_op family: out must have self's dtype
 * (libtorch: "Found dtype Double but expected Byte"). floor(uint8,
 * out=float64) used to succeed, pow(uint8, 1, out=float32) wrote garbage. */
static void test_unary_out_dtype_must_match(void **state) {
  (void)state;
  oc_open();
  static const struct {
    const char *name;
    unary_out_fn fn;
    kd_dtype self;   /* a dtype the op supports */
    double want[4];  /* op(0, 1, 2, 3) in that dtype */
  } ops[] = {
      {"abs", kd_abs_out, KD_INT64, {0, 1, 2, 3}},
      {"neg", kd_neg_out, KD_FLOAT32, {0, -1, -2, -3}},
      {"sign", kd_sign_out, KD_UINT8, {0, 1, 1, 1}},
      {"floor", kd_floor_out, KD_UINT8, {0, 1, 2, 3}},
      {"ceil", kd_ceil_out, KD_INT32, {0, 1, 2, 3}},
      {"round", kd_round_out, KD_FLOAT64, {0, 1, 2, 3}},
      {"round.decimals", round2_out, KD_FLOAT32, {0, 1, 2, 3}},
      {"trunc", kd_trunc_out, KD_INT8, {0, 1, 2, 3}},
      {"bitwise_not", kd_bitwise_not_out, KD_UINT8, {255, 254, 253, 252}},
      {"gelu", gelu_out, KD_FLOAT64, {0, 0.8413447460685429, 1.9544997361036416, 2.9959502851663256}},
      {"clamp", clamp0_out, KD_UINT8, {0, 1, 2, 3}},
      {"pow 0", pow0_out, KD_UINT8, {1, 1, 1, 1}},
      {"pow 1", pow1_out, KD_UINT8, {0, 1, 2, 3}},
      {"pow 2", pow2_out, KD_UINT8, {0, 1, 4, 9}},
  };
  const kd_dtype others[] = {KD_BOOL, KD_UINT8, KD_INT64, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    kd_tensor *x = FROM(ops[i].self, (4), 0, 1, 2, 3);
    for (size_t j = 0; j < sizeof others / sizeof others[0]; j++) {
      kd_dtype od = others[j];
      kd_tensor *o = EMPTY(od, 4);
      if (od == ops[i].self) {
        KD_ASSERT_OK(ops[i].fn(x, o));
        oc_expect_vals_tol(o, ops[i].want, 4, 1e-6);
      } else {
        char want[128];
        snprintf(want, sizeof want, "Found dtype %s but expected %s", kd_dtype_name(od),
                 kd_dtype_name(ops[i].self));
        kd_clear_error();
        kd_status st = ops[i].fn(x, o);
        if (st != KD_ETYPE || !strstr(kd_last_error(), want))
          fail_msg("%s(%s, out=%s): %s (%s), libtorch: %s", ops[i].name,
                   kd_dtype_name(ops[i].self), kd_dtype_name(od), kd_status_name(st),
                   kd_last_error(), want);
      }
      kd_tensor_release(o);
    }
    kd_tensor_release(x);
  }
}

/* The float family (exp, sqrt...) and clamp.Tensor do cast to a given out
 * after the safe-casting check; pow with a float exponent computes in the
 * promoted dtype, which out must then have. */
static void test_unary_float_out_casts(void **state) {
  (void)state;
  oc_open();
  kd_tensor *x = FROM(KD_UINT8, (3), 0, 1, 4);
  kd_tensor *o64 = EMPTY(KD_FLOAT64, 3), *o32 = EMPTY(KD_FLOAT32, 3), *oi = EMPTY(KD_INT64, 3);
  KD_ASSERT_OK(kd_sqrt_out(x, o64));
  EXPECT_VALS(o64, 0, 1, 2);
  KD_ASSERT_ERR(kd_sqrt_out(x, oi), KD_ETYPE,
                "result type float32 can't be cast to the desired output type int64");
  kd_scalar e = kd_scalar_double(0.5);
  KD_ASSERT_OK(kd_pow_Tensor_Scalar_out(x, &e, o32));
  EXPECT_VALS(o32, 0, 1, 2);
  KD_ASSERT_ERR(kd_pow_Tensor_Scalar_out(x, &e, o64), KD_ETYPE,
                "Found dtype float64 but expected float32");
  KD_ASSERT_ERR(kd_pow_Scalar_(x, &e), KD_ETYPE, "Found dtype uint8 but expected float32");
  EXPECT_VALS(x, 0, 1, 4);
  /* clamp(bool, min=0) promotes to int64 (result_type with the Scalar) */
  kd_tensor *b = FROM(KD_BOOL, (2), 0, 1);
  kd_tensor *ol = EMPTY(KD_INT64, 2), *ob = EMPTY(KD_BOOL, 2);
  kd_scalar zero = kd_scalar_int(0);
  KD_ASSERT_OK(kd_clamp_out(b, &zero, NULL, ol));
  EXPECT_VALS(ol, 0, 1);
  KD_ASSERT_ERR(kd_clamp_out(b, &zero, NULL, ob), KD_ETYPE, "Found dtype bool but expected int64");
  /* clamp.Tensor: promotion, then a cast to out */
  kd_tensor *lo = FROM(KD_UINT8, (1), 1);
  KD_ASSERT_OK(kd_clamp_Tensor_out(x, lo, NULL, o64));
  EXPECT_VALS(o64, 1, 1, 4);
  RELEASE(x, o64, o32, oi, b, ol, ob, lo);
}

/* ---- abs ------------------------------------------------------------------------ */

static void test_abs_complex(void **state) {
  (void)state;
  oc_open();
  kd_tensor *z = EMPTY(KD_COMPLEX64, 2);
  kd_scalar c0 = kd_scalar_complex(3, 4), c1 = kd_scalar_complex(-1, 0);
  KD_ASSERT_OK(kd_tensor_set(z, I(0), &c0));
  KD_ASSERT_OK(kd_tensor_set(z, I(1), &c1));
  KD_ASSERT_ERR(kd_abs_(z), KD_ETYPE, "In-place abs is not supported for complex tensors.");
  kd_scalar back = oc_get(z, 0); /* untouched */
  assert_true(back.kind == KD_SCALAR_COMPLEX && back.v.c.re == 3 && back.v.c.im == 4);
  kd_tensor *z0 = EMPTY(KD_COMPLEX128, 0);
  KD_ASSERT_ERR(kd_abs_(z0), KD_ETYPE, "In-place abs is not supported for complex tensors.");
  /* out of another floating dtype: libtorch casts (complex64 into float64 / float16) */
  kd_tensor *o64 = EMPTY(KD_FLOAT64, 0), *o16 = EMPTY(KD_FLOAT16, 2), *oi = EMPTY(KD_INT64, 2);
  KD_ASSERT_OK(kd_abs_out(z, o64)); /* resized from no elements */
  EXPECT_SHAPE(o64, KD_FLOAT64, KD_DEVICE_CPU, 2);
  EXPECT_VALS(o64, 5, 1);
  KD_ASSERT_OK(kd_abs_out(z, o16));
  EXPECT_VALS(o16, 5, 1);
  KD_ASSERT_ERR(kd_abs_out(z, oi), KD_ETYPE,
                "result type float32 can't be cast to the desired output type int64");
  kd_tensor *oc = EMPTY(KD_COMPLEX128, 2);
  KD_ASSERT_ERR(kd_abs_out(z, oc), KD_ETYPE, "Found dtype complex128 but expected complex64");
  RELEASE(z, z0, o64, o16, oi, oc);
}

/* ---- Scalar to element: c10's checked_convert ------------------------------------ */

static void test_fill_checked_convert(void **state) {
  (void)state;
  oc_open();
  kd_tensor *u = EMPTY(KD_UINT8, 2), *i8 = EMPTY(KD_INT8, 2), *h = EMPTY(KD_FLOAT16, 2);
  kd_scalar v = kd_scalar_int(-6);
  KD_ASSERT_OK(kd_fill_Scalar_(u, &v)); /* libtorch: 250 (two's complement) */
  EXPECT_VALS(u, 250, 250);
  v = kd_scalar_int(-256);
  KD_ASSERT_ERR(kd_fill_Scalar_(u, &v), KD_EOVERFLOW,
                "value -256 cannot be converted to type uint8 without overflow");
  v = kd_scalar_double(-0.27);
  KD_ASSERT_ERR(kd_fill_Scalar_(u, &v), KD_EOVERFLOW,
                "value -0.27 cannot be converted to type uint8 without overflow");
  EXPECT_VALS(u, 250, 250);
  v = kd_scalar_double(3.7);
  KD_ASSERT_OK(kd_fill_Scalar_(u, &v));
  EXPECT_VALS(u, 3, 3);
  v = kd_scalar_double(-0.27);
  KD_ASSERT_OK(kd_fill_Scalar_(i8, &v));
  EXPECT_VALS(i8, 0, 0);
  v = kd_scalar_double(127.5);
  KD_ASSERT_ERR(kd_fill_Scalar_(i8, &v), KD_EOVERFLOW,
                "value 127.5 cannot be converted to type int8 without overflow");
  v = kd_scalar_int((int64_t)1 << 40);
  KD_ASSERT_ERR(kd_fill_Scalar_(h, &v), KD_EOVERFLOW, "float16 without overflow");
  /* full goes through fill_ */
  kd_tensor *f = NULL;
  kd_dtype u8 = KD_UINT8;
  v = kd_scalar_int(-1);
  KD_ASSERT_OK(kd_full(INTS(2), &v, &u8, NULL, NULL, NULL, &f));
  EXPECT_VALS(f, 255, 255);
  RELEASE(u, i8, h, f);
}

static void test_masked_fill_checked_convert(void **state) {
  (void)state;
  oc_open();
  kd_tensor *x = FROM(KD_UINT8, (3), 7, 7, 7), *m = FROM(KD_BOOL, (3), 1, 0, 1), *r = NULL;
  kd_scalar v = kd_scalar_double(-0.27);
  KD_ASSERT_ERR(kd_masked_fill_Scalar(x, m, &v, &r), KD_EOVERFLOW,
                "value -0.27 cannot be converted to type uint8 without overflow");
  assert_null(r);
  KD_ASSERT_ERR(kd_masked_fill_Scalar_(x, m, &v), KD_EOVERFLOW, "uint8 without overflow");
  EXPECT_VALS(x, 7, 7, 7);
  v = kd_scalar_int(-6);
  KD_ASSERT_OK(kd_masked_fill_Scalar(x, m, &v, &r));
  EXPECT_VALS(r, 250, 7, 250);
  kd_tensor_release(r);
  v = kd_scalar_double(3.7);
  KD_ASSERT_OK(kd_masked_fill_Scalar_(x, m, &v));
  EXPECT_VALS(x, 3, 7, 3);
  /* the Tensor overload reads the 0-dim value as a Scalar */
  kd_tensor *val = oc_scalar(300);
  KD_ASSERT_ERR(kd_masked_fill_Tensor_(x, m, val), KD_EOVERFLOW,
                "cannot be converted to type uint8 without overflow");
  RELEASE(x, m, val);
}

static void test_pow_exponent_checked(void **state) {
  (void)state;
  oc_open();
  kd_tensor *x = FROM(KD_INT8, (2), 2, 3), *u = FROM(KD_UINT8, (2), 2, 3), *r = NULL;
  kd_scalar e = kd_scalar_int(1000);
  /* used to compute x^(1000 mod 256 as int8 = -24) */
  KD_ASSERT_ERR(kd_pow_Scalar_(x, &e), KD_EOVERFLOW,
                "value 1000 cannot be converted to type int8 without overflow");
  EXPECT_VALS(x, 2, 3);
  e = kd_scalar_int(256);
  KD_ASSERT_ERR(kd_pow_Scalar_(u, &e), KD_EOVERFLOW,
                "value 256 cannot be converted to type uint8 without overflow");
  KD_ASSERT_ERR(kd_pow_Tensor_Scalar(u, &e, &r), KD_EOVERFLOW, "uint8 without overflow");
  assert_null(r);
  e = kd_scalar_int(-1);
  KD_ASSERT_ERR(kd_pow_Scalar_(u, &e), KD_EINVAL,
                "Integers to negative integer powers are not allowed.");
  e = kd_scalar_int(3);
  KD_ASSERT_OK(kd_pow_Scalar_(x, &e));
  EXPECT_VALS(x, 8, 27);
  /* float16 and bfloat16 read the exponent as their own type */
  kd_tensor *h = FROM(KD_FLOAT16, (2), 2, 2);
  e = kd_scalar_double(70000.0);
  KD_ASSERT_ERR(kd_pow_Scalar_(h, &e), KD_EOVERFLOW,
                "cannot be converted to type float16 without overflow");
  kd_tensor *bf = FROM(KD_BFLOAT16, (2), 2, 2), *f = FROM(KD_FLOAT32, (1), 2);
  KD_ASSERT_OK(kd_pow_Scalar_(bf, &e)); /* libtorch: inf */
  assert_true(isinf(oc_at(bf, 0)));
  e = kd_scalar_double(1e300);
  KD_ASSERT_OK(kd_pow_Scalar_(f, &e)); /* float32 reads a double: inf */
  assert_true(isinf(oc_at(f, 0)));
  RELEASE(x, u, h, bf, f);
}

/* ---- addmm ------------------------------------------------------------------------- */

static void test_addmm_scalars(void **state) {
  (void)state;
  oc_open();
  kd_tensor *s = FROM(KD_UINT8, (2, 2), 1, 1, 1, 1), *a = FROM(KD_UINT8, (2, 2), 1, 1, 1, 1);
  kd_tensor *r = NULL;
  kd_scalar beta = kd_scalar_double(-0.5), one = kd_scalar_int(1);
  KD_ASSERT_ERR(kd_addmm(s, a, a, &beta, &one, &r), KD_EOVERFLOW,
                "addmm: beta: value -0.5 cannot be converted to type uint8 without overflow");
  assert_null(r);
  KD_ASSERT_ERR(kd_addmm_(s, a, a, &one, &beta), KD_EOVERFLOW, "addmm_: alpha: value -0.5");
  EXPECT_VALS(s, 1, 1, 1, 1);
  /* libtorch: beta 0.5 reads as 0, alpha 3.7 as 3, beta -1 wraps to 255 */
  beta = kd_scalar_double(0.5);
  KD_ASSERT_OK(kd_addmm(s, a, a, &beta, &one, &r));
  EXPECT_VALS(r, 2, 2, 2, 2);
  kd_tensor_release(r);
  kd_scalar alpha = kd_scalar_double(3.7);
  KD_ASSERT_OK(kd_addmm(s, a, a, &one, &alpha, &r));
  EXPECT_VALS(r, 7, 7, 7, 7);
  kd_tensor_release(r);
  kd_scalar m1 = kd_scalar_int(-1);
  KD_ASSERT_OK(kd_addmm(s, a, a, &m1, &one, &r));
  EXPECT_VALS(r, 1, 1, 1, 1);
  kd_tensor_release(r);
  /* a complex beta on int64: only without an imaginary part */
  kd_tensor *l = FROM(KD_INT64, (2, 2), 1, 1, 1, 1), *o = EMPTY(KD_INT64, 2, 2);
  kd_scalar cb = kd_scalar_complex(1, 1);
  KD_ASSERT_ERR(kd_addmm_out(l, l, l, &cb, &one, o), KD_ETYPE,
                "addmm: beta: value (1+1j) cannot be converted to type int64");
  cb = kd_scalar_complex(2, 0);
  KD_ASSERT_OK(kd_addmm_out(l, l, l, &cb, &one, o));
  EXPECT_VALS(o, 4, 4, 4, 4);
  /* float32 with a beta beyond float32's range */
  kd_tensor *fm = FROM(KD_FLOAT32, (1, 1), 1);
  beta = kd_scalar_double(1e300);
  KD_ASSERT_ERR(kd_addmm(fm, fm, fm, &beta, &one, &r), KD_EOVERFLOW, "float32 without overflow");
  RELEASE(s, a, l, o, fm);
}

static void test_addmm_internal_overlap(void **state) {
  (void)state;
  oc_open();
  kd_tensor *row = FROM(KD_FLOAT32, (1, 2), 0, 0), *self = NULL, *m = FROM(KD_FLOAT32, (2, 2), 1, 1, 1, 1);
  KD_ASSERT_OK(kd_expand(row, INTS(2, 2), false, &self));
  KD_ASSERT_ERR(kd_addmm_(self, m, m, NULL, NULL), KD_EINVAL,
                "addmm_: unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before performing "
                "the operation.");
  EXPECT_VALS(row, 0, 0);
  KD_ASSERT_ERR(kd_addmm_out(m, m, m, NULL, NULL, self), KD_EINVAL,
                "addmm: unsupported operation: more than one element");
  EXPECT_VALS(row, 0, 0);
  /* as self of the functional form it is only read: fine */
  kd_tensor *r = NULL;
  KD_ASSERT_OK(kd_addmm(self, m, m, NULL, NULL, &r));
  EXPECT_VALS(r, 2, 2, 2, 2);
  /* an expanded tensor without elements does not overlap (libtorch: OK) */
  kd_tensor *e0 = EMPTY(KD_FLOAT32, 1, 0), *z = NULL, *a = EMPTY(KD_FLOAT32, 2, 3),
            *b = EMPTY(KD_FLOAT32, 3, 0);
  KD_ASSERT_OK(kd_expand(e0, INTS(2, 0), false, &z));
  KD_ASSERT_OK(kd_addmm_(z, a, b, NULL, NULL));
  RELEASE(row, self, m, r, e0, z, a, b);
}

/* ---- internal overlap of empty tensors ------------------------------------------- */

static void test_zero_size_expanded_outputs(void **state) {
  (void)state;
  oc_open();
  kd_tensor *e0 = EMPTY(KD_FLOAT32, 1, 0), *z = NULL;
  KD_ASSERT_OK(kd_expand(e0, INTS(3, 0), false, &z));
  kd_scalar one = kd_scalar_int(1);
  KD_ASSERT_OK(kd_add_Scalar_(z, &one, NULL));
  KD_ASSERT_OK(kd_neg_(z));
  EXPECT_SHAPE(z, KD_FLOAT32, KD_DEVICE_CPU, 3, 0);
  /* with elements it is the overlap error */
  kd_tensor *e1 = EMPTY(KD_FLOAT32, 1, 2), *x = NULL;
  KD_ASSERT_OK(kd_expand(e1, INTS(3, 2), false, &x));
  KD_ASSERT_ERR(kd_add_Scalar_(x, &one, NULL), KD_EINVAL,
                "more than one element of the written-to tensor refers to a single memory location");
  RELEASE(e0, z, e1, x);
}

/* ---- the layout of results that convert dtypes -------------------------------------- */

/* libtorch's TensorIterator converts inputs preserving their strides (or
 * the dense layout of their permutation) before it orders the dimensions,
 * so a permuted input gives a permuted result whatever dtype it computes in. */
static void test_converted_inputs_keep_layout(void **state) {
  (void)state;
  oc_open();
  kd_tensor *ti = transposed(KD_INT64), *tf = transposed(KD_FLOAT32);
  kd_tensor *cf = IOTA(KD_FLOAT32, 3, 2), *r = NULL;
  kd_scalar h = kd_scalar_double(1.5);

  KD_ASSERT_OK(kd_exp(ti, &r)); /* int64 -> float32 */
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 3, 2);
  EXPECT_STRIDES(r, 1, 3);
  oc_expect_vals_tol(r, D(1, exp(3), exp(1), exp(4), exp(2), exp(5)), 6, 1e-6);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_add_Scalar(ti, &h, NULL, &r));
  EXPECT_STRIDES(r, 1, 3);
  EXPECT_VALS(r, 1.5, 4.5, 2.5, 5.5, 3.5, 6.5);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_add_Tensor(ti, tf, NULL, &r));
  EXPECT_STRIDES(r, 1, 3);
  EXPECT_VALS(r, 0, 6, 2, 8, 4, 10);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_add_Tensor(ti, cf, NULL, &r)); /* the first input decides */
  EXPECT_STRIDES(r, 1, 3);
  EXPECT_VALS(r, 0, 4, 3, 7, 6, 10);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_add_Tensor(cf, ti, NULL, &r));
  EXPECT_STRIDES(r, 2, 1);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_clamp(ti, &h, NULL, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 3, 2);
  EXPECT_STRIDES(r, 1, 3);
  EXPECT_VALS(r, 1.5, 3, 1.5, 4, 2, 5);
  kd_tensor_release(r);
  kd_scalar e = kd_scalar_double(2.5);
  KD_ASSERT_OK(kd_pow_Tensor_Scalar(ti, &e, &r));
  EXPECT_STRIDES(r, 1, 3);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_eq_Tensor(ti, cf, &r)); /* bool result, inputs promoted to float32 */
  EXPECT_SHAPE(r, KD_BOOL, KD_DEVICE_CPU, 3, 2);
  EXPECT_STRIDES(r, 1, 3);
  EXPECT_VALS(r, 1, 0, 0, 0, 0, 1);
  kd_tensor_release(r);

  /* channels-last int64 (2, 3, 4, 5) */
  kd_tensor *cl = strided_iota(KD_INT64, 4, I(2, 3, 4, 5), I(60, 1, 15, 3));
  kd_tensor *cont = IOTA(KD_FLOAT32, 2, 3, 4, 5);
  KD_ASSERT_OK(kd_sqrt(cl, &r));
  EXPECT_STRIDES(r, 60, 1, 15, 3);
  assert_true(oc_at(r, 4) == 2);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_add_Tensor(cl, cont, NULL, &r));
  EXPECT_STRIDES(r, 60, 1, 15, 3);
  assert_true(oc_at(r, 7) == 14);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_add_Tensor(cont, cl, NULL, &r));
  EXPECT_STRIDES(r, 60, 20, 5, 1);
  kd_tensor_release(r);

  /* permuted int32 (4, 2, 3) */
  kd_tensor *p3 = IOTA(KD_INT32, 2, 3, 4), *pe = NULL;
  KD_ASSERT_OK(kd_permute(p3, INTS(2, 0, 1), &pe));
  KD_ASSERT_OK(kd_exp(pe, &r));
  EXPECT_STRIDES(r, 1, 12, 4);
  assert_true(fabs(oc_at(r, 1) - exp(4)) < 1e-4 && fabs(oc_at(r, 2) - exp(8)) < 1e-2);
  kd_tensor_release(r);

  /* not dense: a strided slice of a transpose keeps its permutation */
  kd_tensor *a46 = IOTA(KD_INT64, 4, 6), *at = NULL, *nd = NULL;
  KD_ASSERT_OK(kd_t(a46, &at));
  KD_ASSERT_OK(kd_slice_Tensor(at, 0, I(0), I(6), 2, &nd));
  KD_ASSERT_OK(kd_exp(nd, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 3, 4);
  EXPECT_STRIDES(r, 1, 3);
  assert_true(fabs(oc_at(r, 1) - exp(6)) < 1e-3 && fabs(oc_at(r, 4) - exp(2)) < 1e-5);
  kd_tensor_release(r);

  /* an expanded input converts to a row-major copy, which comes first */
  kd_tensor *one = FROM(KD_INT64, (1, 1), 1), *ex = NULL;
  KD_ASSERT_OK(kd_expand(one, INTS(3, 2), false, &ex));
  KD_ASSERT_OK(kd_add_Tensor(ex, tf, NULL, &r));
  EXPECT_STRIDES(r, 2, 1);
  EXPECT_VALS(r, 1, 4, 2, 5, 3, 6);
  kd_tensor_release(r);

  RELEASE(ti, tf, cf, cl, cont, p3, pe, a46, at, nd, one, ex);
}

/* ---- the decisions of docs/GUIDE.md "Behaviour on bad input" ------------------------- */

/* Followed: a uint8 mask works, with PyTorch 1.13's deprecation warning;
 * other non-bool masks stay refused (1.13 reads them as bytes). */
static void test_decision_masked_fill_uint8_mask(void **state) {
  (void)state;
  oc_open();
  kd_tensor *x = FROM(KD_FLOAT32, (3), 0, 0, 0), *m = FROM(KD_UINT8, (3), 1, 0, 2), *r = NULL;
  kd_scalar v = kd_scalar_double(2);
  oc_watch_warnings();
  KD_ASSERT_OK(kd_masked_fill_Scalar(x, m, &v, &r));
  EXPECT_VALS(r, 2, 0, 2);
  assert_int_equal(oc_warnings, 1);
  assert_non_null(strstr(oc_last_warning, "masked_fill_ received a mask with dtype uint8, this "
                                          "behavior is now deprecated"));
  KD_ASSERT_OK(kd_masked_fill_Scalar_(x, m, &v));
  EXPECT_VALS(x, 2, 0, 2);
  assert_int_equal(oc_warnings, 2);
  oc_unwatch_warnings();
  kd_tensor *ml = FROM(KD_INT64, (3), 1, 0, 1);
  KD_ASSERT_ERR(kd_masked_fill_Scalar_(x, ml, &v), KD_ETYPE,
                "masked_fill_ only supports boolean masks, but got mask with dtype int64");
  RELEASE(x, m, r, ml);
}

/* Stricter: a dtype without a kernel is refused whatever the size (libtorch
 * returns early for empty operands before its dtype dispatch). */
static void test_decision_dtype_checks_on_empty(void **state) {
  (void)state;
  oc_open();
  kd_tensor *e = EMPTY(KD_INT64, 0), *r = NULL;
  KD_ASSERT_ERR(kd_softmax_int(e, 0, NULL, &r), KD_ETYPE,
                "\"softmax\" not implemented for 'int64'");
  assert_null(r);
  kd_dtype f32 = KD_FLOAT32; /* with dtype= it converts first: fine */
  KD_ASSERT_OK(kd_softmax_int(e, 0, &f32, &r));
  EXPECT_SHAPE(r, KD_FLOAT32, KD_DEVICE_CPU, 0);
  kd_tensor_release(r);
  r = NULL;
  kd_tensor *a = EMPTY(KD_BOOL, 0, 2), *b = EMPTY(KD_BOOL, 2, 3), *c = EMPTY(KD_BOOL, 2, 0),
            *d = EMPTY(KD_BOOL, 0, 3);
  KD_ASSERT_ERR(kd_mm(a, b, &r), KD_ENOKERNEL, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  KD_ASSERT_ERR(kd_mm(c, d, &r), KD_ENOKERNEL, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  assert_null(r);
  RELEASE(e, a, b, c, d);
}

/* Stricter (as libtorch without CUDA): pinned memory is refused. */
static void test_decision_pin_memory(void **state) {
  (void)state;
  oc_open();
  kd_tensor *r = NULL;
  kd_scalar v = kd_scalar_int(1);
  bool pin = true;
  KD_ASSERT_ERR(kd_full(INTS(2), &v, NULL, NULL, NULL, &pin, &r), KD_EUNSUPPORTED,
                "Need to provide pin_memory allocator to use pin memory.");
  assert_null(r);
  pin = false;
  KD_ASSERT_OK(kd_full(INTS(2), &v, NULL, NULL, NULL, &pin, &r));
  EXPECT_VALS(r, 1, 1);
  kd_tensor_release(r);
}

/* Followed: all / any write a uint8 out (1.13's legacy), no other non-bool. */
static void test_decision_all_any_uint8_out(void **state) {
  (void)state;
  oc_open();
  kd_tensor *x = FROM(KD_FLOAT32, (3, 2), 1, 1, 0, 1, 2, 3);
  kd_tensor *o0 = EMPTY(KD_UINT8, 0), *o1 = EMPTY(KD_UINT8, 3), *ol = EMPTY(KD_INT64, 0);
  KD_ASSERT_OK(kd_all_all_out(x, o0));
  EXPECT_SHAPE0(o0, KD_UINT8, KD_DEVICE_CPU);
  EXPECT_VALS(o0, 0);
  KD_ASSERT_OK(kd_any_all_out(x, o0));
  EXPECT_VALS(o0, 1);
  KD_ASSERT_OK(kd_all_out(x, 1, false, o1));
  EXPECT_VALS(o1, 1, 0, 1);
  KD_ASSERT_ERR(kd_all_all_out(x, ol), KD_ETYPE,
                "only supports bool tensor for result, got: int64");
  RELEASE(x, o0, o1, ol);
}

/* Followed: a tensor without elements is contiguous, so contiguous() returns
 * it itself whatever its strides. */
static void test_decision_contiguous_of_empty(void **state) {
  (void)state;
  oc_open();
  kd_tensor *e = EMPTY(KD_FLOAT32, 0, 2, 3), *p = NULL, *r = NULL;
  KD_ASSERT_OK(kd_permute(e, INTS(0, 2, 1), &p)); /* strides [6, 1, 3] */
  KD_ASSERT_OK(kd_contiguous(p, KD_MEMORY_FORMAT_CONTIGUOUS, &r));
  assert_ptr_equal(r, p);
  kd_tensor_release(r);
  /* with elements it is a copy */
  kd_tensor *x = IOTA(KD_FLOAT32, 2, 3), *t = NULL;
  KD_ASSERT_OK(kd_t(x, &t));
  KD_ASSERT_OK(kd_contiguous(t, KD_MEMORY_FORMAT_CONTIGUOUS, &r));
  assert_ptr_not_equal(r, t);
  EXPECT_GEOM(r, (3, 2), (2, 1), 0);
  RELEASE(e, p, r, x, t);
}

/* Kept: complex division and rsqrt follow c10::complex's scalar algorithm
 * and C99 (a non-zero value over zero is infinite); libtorch's AVX2 loops
 * return NaN in both parts instead, its default-capability loops do not. */
static void test_decision_complex_inf_nan(void **state) {
  (void)state;
  oc_open();
  kd_tensor *z = EMPTY(KD_COMPLEX64, 2), *zero = EMPTY(KD_COMPLEX64, 2), *r = NULL;
  kd_scalar one = kd_scalar_complex(1, 0), nil = kd_scalar_complex(0, 0);
  KD_ASSERT_OK(kd_tensor_set(z, I(0), &one));
  KD_ASSERT_OK(kd_tensor_set(z, I(1), &nil));
  KD_ASSERT_OK(kd_fill_Scalar_(zero, &nil));
  KD_ASSERT_OK(kd_div_Tensor(z, zero, &r));
  kd_scalar q0 = oc_get(r, 0), q1 = oc_get(r, 1);
  assert_true(isinf(q0.v.c.re) && q0.v.c.re > 0); /* (1 + 0i) / 0: (inf, nan) */
  assert_true(isnan(q0.v.c.im));
  assert_true(isnan(q1.v.c.re) && isnan(q1.v.c.im)); /* 0 / 0 */
  KD_ASSERT_OK(kd_div_Tensor_(z, zero)); /* in place: the same */
  q0 = oc_get(z, 0);
  assert_true(isinf(q0.v.c.re));
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_rsqrt(zero, &r));
  kd_scalar rs = oc_get(r, 0);
  assert_true(isinf(rs.v.c.re) || isinf(rs.v.c.im)); /* C99: 1 / (0 + 0i) is infinite */
  RELEASE(z, zero, r);
}

/* float16 / bfloat16. Followed: a Scalar operand is rounded to the tensor's
 * dtype before the operation (it is a wrapped number of that dtype): half
 * 3 * 3.3 is 3 * 3.30078125 = 9.90625, as libtorch. Kept: kd computes
 * a + alpha * b and mean in float32 and rounds once; libtorch 1.13 rounds
 * alpha and alpha * b to the dtype (x - 1.0001 * x is 0 there) and rounds
 * the sum before mean's division (bfloat16 mean of 1, 2, 3, 1000, 0.1 is
 * 202 there, 201 here; PyTorch 2 also computes it in float32). */
static void test_decision_reduced_float_rounding(void **state) {
  (void)state;
  oc_open();
  kd_tensor *h = FROM(KD_FLOAT16, (2), 3, 1000), *r = NULL;
  kd_scalar s = kd_scalar_double(3.3);
  KD_ASSERT_OK(kd_mul_Scalar(h, &s, &r));
  EXPECT_VALS(r, 9.90625, 3300); /* libtorch: 9.90625 3300 */
  kd_tensor_release(r);
  kd_scalar a = kd_scalar_double(1.0001);
  KD_ASSERT_OK(kd_sub_Tensor(h, h, &a, &r));
  assert_true(oc_at(r, 0) != 0); /* 3 - 3.0003 rounded once: not 0 */
  kd_tensor_release(r);
  kd_tensor *b = FROM(KD_BFLOAT16, (5), 1, 2, 3, 1000, 0.1);
  KD_ASSERT_OK(kd_mean(b, NULL, &r));
  EXPECT_VALS(r, 201);
  RELEASE(h, b, r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary_out_dtype_must_match),
      cmocka_unit_test(test_unary_float_out_casts),
      cmocka_unit_test(test_abs_complex),
      cmocka_unit_test(test_fill_checked_convert),
      cmocka_unit_test(test_masked_fill_checked_convert),
      cmocka_unit_test(test_pow_exponent_checked),
      cmocka_unit_test(test_addmm_scalars),
      cmocka_unit_test(test_addmm_internal_overlap),
      cmocka_unit_test(test_zero_size_expanded_outputs),
      cmocka_unit_test(test_converted_inputs_keep_layout),
      cmocka_unit_test(test_decision_masked_fill_uint8_mask),
      cmocka_unit_test(test_decision_dtype_checks_on_empty),
      cmocka_unit_test(test_decision_pin_memory),
      cmocka_unit_test(test_decision_all_any_uint8_out),
      cmocka_unit_test(test_decision_contiguous_of_empty),
      cmocka_unit_test(test_decision_complex_inf_nan),
      cmocka_unit_test(test_decision_reduced_float_rounding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
