/* Tensor conversion between dtypes and devices; allocator API version 2. */
#include <math.h>

#include "kd_test.h"

/* The exported symbol that programs built against allocator version 1 call
 * (the header maps kd_allocator_get to kd_allocator_get_sized). */
kd_status(kd_allocator_get)(kd_device_type type, kd_allocator *out);

/* ---- Helpers ---------------------------------------------------------------- */

/* The keys a tensor made outside inference mode carries besides its dense
 * backend key: ADInplaceOrView and its backend's Autograd key. */
#define NORMAL_KEYS(autograd) (kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW) | kd_keyset_of(autograd))

/* A value as the oracle sees it: real and imaginary parts. */
typedef struct val {
  double re, im;
} val;

static void set_val(kd_tensor *t, const int64_t *index, val v) {
  kd_dtype dt = kd_tensor_dtype(t);
  kd_scalar s;
  if (dt == KD_BOOL)
    s = kd_scalar_bool(v.re != 0);
  else if (kd_dtype_is_integral(dt, false))
    s = kd_scalar_int((int64_t)v.re);
  else if (kd_dtype_is_complex(dt))
    s = kd_scalar_complex(v.re, v.im);
  else
    s = kd_scalar_double(v.re);
  KD_ASSERT_OK(kd_tensor_set(t, index, &s));
}

/* What PyTorch's conversion of v to `dt` gives (for the values used here). */
static kd_scalar oracle(val v, kd_dtype dt) {
  int64_t i = (int64_t)v.re; /* truncation toward zero */
  switch (dt) {
    case KD_BOOL: return kd_scalar_bool(v.re != 0 || v.im != 0);
    case KD_UINT8: return kd_scalar_int((uint8_t)(uint64_t)i);
    case KD_INT8: return kd_scalar_int((int8_t)(uint8_t)(uint64_t)i);
    case KD_INT16: return kd_scalar_int((int16_t)(uint16_t)(uint64_t)i);
    case KD_INT32: return kd_scalar_int((int32_t)(uint32_t)(uint64_t)i);
    case KD_INT64: return kd_scalar_int(i);
    case KD_FLOAT16: return kd_scalar_double(kd_half_to_float(kd_float_to_half((float)v.re)));
    case KD_BFLOAT16:
      return kd_scalar_double(kd_bfloat16_to_float(kd_float_to_bfloat16((float)v.re)));
    case KD_FLOAT32: return kd_scalar_double((float)v.re);
    case KD_FLOAT64: return kd_scalar_double(v.re);
    case KD_COMPLEX64: return kd_scalar_complex((float)v.re, (float)v.im);
    default: return kd_scalar_complex(v.re, v.im);
  }
}

static val val_of(const kd_scalar *s) {
  val v = {0, 0};
  switch (s->kind) {
    case KD_SCALAR_BOOL: v.re = s->v.b; break;
    case KD_SCALAR_INT: v.re = (double)s->v.i; break;
    case KD_SCALAR_DOUBLE: v.re = s->v.d; break;
    default: v.re = s->v.c.re; v.im = s->v.c.im; break;
  }
  return v;
}

static void assert_scalar(const kd_scalar *got, const kd_scalar *want, const char *what) {
  if (!kd_scalar_equal(got, want)) {
    char g[64], w[64];
    kd_scalar_format(got, g, sizeof g);
    kd_scalar_format(want, w, sizeof w);
    fail_msg("%s: got %s, expected %s", what, g, w);
  }
}

/* The values a dtype holds exactly, for the dtype-pair matrix. */
static int values_for(kd_dtype dt, val *out) {
  static const val common[] = {{0, 0}, {1, 0}, {7, 0}, {100, 0}};
  static const val negative[] = {{-2, 0}, {-100, 0}};
  static const val fraction[] = {{3.75, 0}, {-3.75, 0}, {0.5, 0}, {-0.5, 0}};
  static const val complex_[] = {{3.75, -2}, {0, 1.5}, {-1, 0.25}};
  int n = 0;
  if (dt == KD_BOOL) {
    out[n++] = common[0];
    out[n++] = common[1];
    return n;
  }
  for (size_t i = 0; i < 4; i++) out[n++] = common[i];
  if (dt != KD_UINT8)
    for (size_t i = 0; i < 2; i++) out[n++] = negative[i];
  if (kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt))
    for (size_t i = 0; i < 4; i++) out[n++] = fraction[i];
  if (kd_dtype_is_complex(dt))
    for (size_t i = 0; i < 3; i++) out[n++] = complex_[i];
  return n;
}

static kd_tensor *tensor_f64(int ndim, const int64_t *sizes, const double *data) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_from_data(ndim, sizes, KD_FLOAT64, data, &t));
  return t;
}

static kd_tensor *arange_i32(int ndim, const int64_t *sizes) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, KD_INT32, kd_device_cpu(), &t));
  for (int64_t i = 0; i < kd_tensor_numel(t); i++) ((int32_t *)kd_tensor_data(t))[i] = (int32_t)i;
  return t;
}

static void assert_row_major(const kd_tensor *t) {
  assert_true(kd_tensor_is_contiguous(t));
  assert_int_equal(kd_tensor_storage_offset(t), 0);
  int64_t s = 1;
  for (int i = kd_tensor_ndim(t) - 1; i >= 0; i--) {
    if (kd_tensor_size(t, i) > 1) assert_int_equal(kd_tensor_stride(t, i), s);
    s *= kd_tensor_size(t, i) > 1 ? kd_tensor_size(t, i) : 1;
  }
}

/* ---- kd_tensor_to_dtype ------------------------------------------------------- */

/* Every (source, destination) pair, the source a strided view with an offset. */
static void test_to_dtype_all_pairs(void **state) {
  (void)state;
  for (int s = 0; s < KD_DTYPE_COUNT; s++) {
    val vals[16];
    int n = values_for((kd_dtype)s, vals);
    /* Storage of 2n + 1 elements; the view takes every other one from 1. */
    kd_tensor *base, *src;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2 * n + 1}, (kd_dtype)s, kd_device_cpu(), &base));
    memset(kd_tensor_data(base), 0x5a, (size_t)(2 * n + 1) * kd_dtype_size((kd_dtype)s));
    KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){n}, (int64_t[]){2}, 1, &src));
    for (int i = 0; i < n; i++) set_val(src, (int64_t[]){i}, vals[i]);
    for (int d = 0; d < KD_DTYPE_COUNT; d++) {
      kd_tensor *r, *back;
      KD_ASSERT_OK(kd_tensor_to_dtype(src, (kd_dtype)d, &r));
      assert_int_equal(kd_tensor_dtype(r), d);
      assert_int_equal(kd_tensor_ndim(r), 1);
      assert_int_equal(kd_tensor_size(r, 0), n);
      assert_row_major(r);
      assert_false(kd_tensor_shares_storage(r, src));
      /* Round trip: back to the source dtype. */
      KD_ASSERT_OK(kd_tensor_to_dtype(r, (kd_dtype)s, &back));
      for (int i = 0; i < n; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s -> %s, value %d", kd_dtype_name((kd_dtype)s),
                 kd_dtype_name((kd_dtype)d), i);
        kd_scalar got, want = oracle(vals[i], (kd_dtype)d);
        KD_ASSERT_OK(kd_tensor_get(r, (int64_t[]){i}, &got));
        assert_scalar(&got, &want, what);
        snprintf(what, sizeof what, "%s -> %s -> %s, value %d", kd_dtype_name((kd_dtype)s),
                 kd_dtype_name((kd_dtype)d), kd_dtype_name((kd_dtype)s), i);
        kd_scalar twice = oracle(val_of(&want), (kd_dtype)s);
        KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){i}, &got));
        assert_scalar(&got, &twice, what);
      }
      kd_tensor_release(back);
      kd_tensor_release(r);
    }
    kd_tensor_release(src);
    kd_tensor_release(base);
  }
}

/* int64 beyond 2^53 stays exact between integers; narrower ones wrap. */
static void test_to_dtype_int64_exact(void **state) {
  (void)state;
  const int64_t v[] = {(INT64_C(1) << 53) + 1, INT64_MAX, INT64_MIN, -((INT64_C(1) << 53) + 3),
                       INT64_C(0x123456789ABCDEF0), (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1};
  enum { N = sizeof v / sizeof v[0] };
  kd_tensor *t, *r;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){N}, KD_INT64, v, &t));

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_INT64, &r));
  assert_memory_equal(kd_tensor_data(r), v, sizeof v);
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_INT32, &r));
  const int32_t *i32 = kd_tensor_data(r);
  assert_int_equal(i32[0], 1);
  assert_int_equal(i32[1], -1);
  assert_int_equal(i32[2], 0);
  assert_int_equal(i32[3], -3);
  assert_int_equal(i32[4], (int32_t)(uint32_t)0x9ABCDEF0u);
  assert_int_equal(i32[5], 1);
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_UINT8, &r));
  const uint8_t *u8 = kd_tensor_data(r);
  assert_int_equal(u8[1], 255);
  assert_int_equal(u8[3], 253);
  assert_int_equal(u8[4], 0xF0);
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT64, &r));
  for (int i = 0; i < N; i++) assert_true(((double *)kd_tensor_data(r))[i] == (double)v[i]);
  kd_tensor_release(r);

  /* float32 from int64 rounds once (as static_cast), not through double. */
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT32, &r));
  for (int i = 0; i < N; i++) assert_true(((float *)kd_tensor_data(r))[i] == (float)v[i]);
  assert_true((float)v[5] != (float)(double)v[5]); /* the case that tells them apart */
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_BOOL, &r));
  for (int i = 0; i < N; i++) assert_int_equal(((uint8_t *)kd_tensor_data(r))[i], 1);
  kd_tensor_release(r);
  kd_tensor_release(t);

  /* Sign extension from narrower integers. */
  const uint8_t bytes[] = {255, 128, 0};
  kd_tensor *u, *s8, *w;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){3}, KD_UINT8, bytes, &u));
  KD_ASSERT_OK(kd_tensor_to_dtype(u, KD_INT8, &s8));
  KD_ASSERT_OK(kd_tensor_to_dtype(s8, KD_INT64, &w));
  assert_int_equal(((int64_t *)kd_tensor_data(w))[0], -1);
  assert_int_equal(((int64_t *)kd_tensor_data(w))[1], -128);
  kd_tensor_release(w);
  KD_ASSERT_OK(kd_tensor_to_dtype(u, KD_INT64, &w));
  assert_int_equal(((int64_t *)kd_tensor_data(w))[0], 255);
  kd_tensor_release(w);
  kd_tensor_release(s8);
  kd_tensor_release(u);
}

static void test_to_dtype_float_rules(void **state) {
  (void)state;
  const double d[] = {2.9, -2.9, -0.5, 0.5, -0.0, NAN, 1e300, -1e300, 1.0 / 3, 65520.0};
  enum { N = sizeof d / sizeof d[0] };
  kd_tensor *t = tensor_f64(1, (int64_t[]){N}, d), *r;

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_INT64, &r));
  const int64_t *i64 = kd_tensor_data(r);
  assert_int_equal(i64[0], 2);
  assert_int_equal(i64[1], -2);
  assert_int_equal(i64[2], 0);
  assert_int_equal(i64[3], 0);
  assert_int_equal(i64[4], 0);
  assert_true(i64[5] == INT64_MIN); /* NaN and out of range: INT64_MIN (undefined in PyTorch) */
  assert_true(i64[6] == INT64_MIN);
  assert_true(i64[7] == INT64_MIN);
  assert_int_equal(i64[9], 65520);
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_UINT8, &r));
  assert_int_equal(((uint8_t *)kd_tensor_data(r))[1], 254); /* -2.9 -> -2 -> 254 */
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_BOOL, &r));
  const uint8_t want_bool[N] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
  assert_memory_equal(kd_tensor_data(r), want_bool, N);
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT16, &r));
  const uint16_t *h = kd_tensor_data(r);
  assert_int_equal(h[8], kd_float_to_half((float)(1.0 / 3)));
  assert_int_equal(h[9], 0x7c00); /* 65520 rounds to inf in half */
  assert_int_equal(h[4], 0x8000); /* -0.0 */
  assert_true((h[5] & 0x7c00) == 0x7c00 && (h[5] & 0x3ff) != 0); /* NaN */
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_BFLOAT16, &r));
  assert_int_equal(((uint16_t *)kd_tensor_data(r))[8], kd_float_to_bfloat16((float)(1.0 / 3)));
  kd_tensor_release(r);

  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_COMPLEX64, &r));
  const float *c = kd_tensor_data(r);
  assert_true(c[0] == 2.9f && c[1] == 0.0f);
  assert_true(c[2] == -2.9f && c[3] == 0.0f);
  kd_tensor_release(r);

  /* Same dtype: a new copy of the bytes (NaN payload, -0.0). */
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT64, &r));
  assert_memory_equal(kd_tensor_data(r), d, sizeof d);
  assert_false(kd_tensor_shares_storage(r, t));
  kd_tensor_release(r);
  kd_tensor_release(t);

  /* Complex to real keeps the real part; to bool looks at both parts. */
  const double cz[] = {3.5, -1, 0, 1.5, 0, 0, -7.25, 2};
  kd_tensor *z;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){4}, KD_COMPLEX128, cz, &z));
  KD_ASSERT_OK(kd_tensor_to_dtype(z, KD_FLOAT32, &r));
  const float want_f[] = {3.5f, 0.0f, 0.0f, -7.25f};
  assert_memory_equal(kd_tensor_data(r), want_f, sizeof want_f);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tensor_to_dtype(z, KD_INT16, &r));
  const int16_t want_i[] = {3, 0, 0, -7};
  assert_memory_equal(kd_tensor_data(r), want_i, sizeof want_i);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tensor_to_dtype(z, KD_BOOL, &r));
  const uint8_t want_b[] = {1, 1, 0, 1};
  assert_memory_equal(kd_tensor_data(r), want_b, sizeof want_b);
  kd_tensor_release(r);
  kd_tensor_release(z);

  /* float16 bits come back through the project's helpers. */
  const uint16_t hb[] = {0x3555, 0xc500, 0x0001};
  kd_tensor *ht;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){3}, KD_FLOAT16, hb, &ht));
  KD_ASSERT_OK(kd_tensor_to_dtype(ht, KD_FLOAT32, &r));
  for (int i = 0; i < 3; i++)
    assert_true(((float *)kd_tensor_data(r))[i] == kd_half_to_float(hb[i]));
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tensor_to_dtype(ht, KD_INT32, &r));
  assert_int_equal(((int32_t *)kd_tensor_data(r))[1], -5); /* 0xc500 is -5.0 */
  kd_tensor_release(r);
  kd_tensor_release(ht);
}

static void test_to_dtype_views(void **state) {
  (void)state;
  kd_tensor *base = arange_i32(2, (int64_t[]){3, 4}), *v, *r;
  /* Transposed: [4, 3], strides [1, 4]. */
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 0, &v));
  KD_ASSERT_OK(kd_tensor_to_dtype(v, KD_FLOAT64, &r));
  assert_row_major(r);
  const double want_t[] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
  assert_memory_equal(kd_tensor_data(r), want_t, sizeof want_t);
  kd_tensor_release(r);
  /* The same dtype gives a contiguous copy. */
  KD_ASSERT_OK(kd_tensor_to_dtype(v, KD_INT32, &r));
  assert_row_major(r);
  assert_false(kd_tensor_shares_storage(r, base));
  for (int i = 0; i < 12; i++) assert_int_equal(((int32_t *)kd_tensor_data(r))[i], (int)want_t[i]);
  kd_tensor_release(r);
  kd_tensor_release(v);

  /* Offset and steps: elements 1, 3, 5, 7. */
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 2}, (int64_t[]){4, 2}, 1, &v));
  KD_ASSERT_OK(kd_tensor_to_dtype(v, KD_INT16, &r));
  const int16_t want_s[] = {1, 3, 5, 7};
  assert_memory_equal(kd_tensor_data(r), want_s, sizeof want_s);
  kd_tensor_release(r);
  kd_tensor_release(v);

  /* Broadcast (stride 0) and a size-1 dimension with an odd stride. */
  KD_ASSERT_OK(kd_tensor_as_strided(base, 3, (int64_t[]){3, 1, 2}, (int64_t[]){0, 99, 1}, 5, &v));
  KD_ASSERT_OK(kd_tensor_to_dtype(v, KD_COMPLEX64, &r));
  const float want_c[] = {5, 0, 6, 0, 5, 0, 6, 0, 5, 0, 6, 0};
  assert_memory_equal(kd_tensor_data(r), want_c, sizeof want_c);
  kd_tensor_release(r);
  kd_tensor_release(v);

  /* Partly mergeable: [2, 3, 2] over a [3, 4] base read as (col pair, row, col). */
  KD_ASSERT_OK(kd_tensor_as_strided(base, 3, (int64_t[]){2, 3, 2}, (int64_t[]){2, 4, 1}, 0, &v));
  KD_ASSERT_OK(kd_tensor_to_dtype(v, KD_INT64, &r));
  const int64_t want_m[] = {0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11};
  assert_memory_equal(kd_tensor_data(r), want_m, sizeof want_m);
  kd_tensor_release(r);
  kd_tensor_release(v);

  /* The source is left alone. */
  for (int i = 0; i < 12; i++) assert_int_equal(((int32_t *)kd_tensor_data(base))[i], i);
  kd_tensor_release(base);
}

static void test_to_dtype_zero_dim_and_empty(void **state) {
  (void)state;
  kd_scalar x = kd_scalar_double(-7.5), got;
  kd_tensor *t, *r;
  KD_ASSERT_OK(kd_tensor_from_scalar(&x, KD_FLOAT64, &t));
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_INT16, &r));
  assert_int_equal(kd_tensor_ndim(r), 0);
  assert_int_equal(kd_tensor_numel(r), 1);
  KD_ASSERT_OK(kd_tensor_item(r, &got));
  assert_int_equal(got.v.i, -7);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT64, &r));
  assert_false(kd_tensor_shares_storage(r, t));
  KD_ASSERT_OK(kd_tensor_item(r, &got));
  assert_true(got.v.d == -7.5);
  kd_tensor_release(r);
  kd_tensor_release(t);

  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){3, 0, 2}, KD_FLOAT32, kd_device_cpu(), &t));
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_COMPLEX128, &r));
  assert_int_equal(kd_tensor_numel(r), 0);
  assert_int_equal(kd_tensor_ndim(r), 3);
  assert_int_equal(kd_tensor_size(r, 0), 3);
  assert_int_equal(kd_tensor_size(r, 1), 0);
  assert_int_equal(kd_tensor_size(r, 2), 2);
  assert_int_equal(kd_tensor_dtype(r), KD_COMPLEX128);
  kd_tensor_release(r);
  /* An empty view with odd strides. */
  kd_tensor *v;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 2, (int64_t[]){0, 5}, (int64_t[]){1000, 7}, 0, &v));
  KD_ASSERT_OK(kd_tensor_to_dtype(v, KD_INT8, &r));
  assert_int_equal(kd_tensor_numel(r), 0);
  assert_int_equal(kd_tensor_size(r, 1), 5);
  kd_tensor_release(r);
  kd_tensor_release(v);
  kd_tensor_release(t);
}

static void test_to_dtype_meta(void **state) {
  (void)state;
  kd_device meta = {KD_DEVICE_META, 0};
  kd_tensor *t, *r;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 3}, KD_FLOAT32, meta, &t));
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_INT8, &r));
  assert_true(kd_device_equal(kd_tensor_device(r), meta));
  assert_int_equal(kd_tensor_dtype(r), KD_INT8);
  assert_int_equal(kd_tensor_size(r, 0), 2);
  assert_int_equal(kd_tensor_size(r, 1), 3);
  assert_null(kd_tensor_data(r));
  assert_true(kd_tensor_key_set(r) == (kd_keyset_of(KD_KEY_META) | NORMAL_KEYS(KD_KEY_AUTOGRAD_META)));
  kd_tensor_release(r);
  kd_tensor_release(t);
}

static void test_to_dtype_errors(void **state) {
  (void)state;
  kd_tensor *t = arange_i32(1, (int64_t[]){3}), *r = t;
  KD_ASSERT_ERR(kd_tensor_to_dtype(NULL, KD_INT8, &r), KD_EINVAL, "NULL tensor");
  assert_null(r);
  KD_ASSERT_ERR(kd_tensor_to_dtype(t, KD_INT8, NULL), KD_EINVAL, "NULL out");
  r = t;
  KD_ASSERT_ERR(kd_tensor_to_dtype(t, KD_DTYPE_UNDEFINED, &r), KD_EINVAL, "invalid dtype -1");
  assert_null(r);
  KD_ASSERT_ERR(kd_tensor_to_dtype(t, (kd_dtype)99, &r), KD_EINVAL,
                "invalid dtype 99: expected bool, uint8");
  kd_tensor_release(t);
}

/* ---- A private device: malloc'd "device" memory, counted copies ------------------ */

typedef struct test_dev {
  int allocs, frees, to_host, from_host;
  size_t bytes_to_host, bytes_from_host;
  kd_device last_device;
  kd_status fail; /* returned by the copy functions when not KD_OK */
} test_dev;

static void *dev_alloc(void *ctx, kd_device device, size_t n) {
  test_dev *c = ctx;
  c->allocs++;
  c->last_device = device;
  return malloc(n);
}

static void dev_free(void *ctx, kd_device device, void *p, size_t n) {
  (void)device;
  (void)n;
  test_dev *c = ctx;
  c->frees++;
  free(p);
}

static kd_status dev_to_host(void *ctx, kd_device device, void *host_dst, const void *device_src,
                             size_t n) {
  test_dev *c = ctx;
  c->to_host++;
  c->bytes_to_host += n;
  c->last_device = device;
  if (c->fail) return kd_set_error(c->fail, "test device lost");
  memcpy(host_dst, device_src, n);
  return KD_OK;
}

static kd_status dev_from_host(void *ctx, kd_device device, void *device_dst, const void *host_src,
                               size_t n) {
  test_dev *c = ctx;
  c->from_host++;
  c->bytes_from_host += n;
  c->last_device = device;
  if (c->fail) return kd_set_error(c->fail, "test device lost");
  memcpy(device_dst, host_src, n);
  return KD_OK;
}

static kd_allocator test_allocator(test_dev *c) {
  kd_allocator a;
  memset(&a, 0, sizeof a);
  a.api_version = KD_ALLOCATOR_API_VERSION;
  a.alloc = dev_alloc;
  a.free = dev_free;
  a.ctx = c;
  a.copy_to_host = dev_to_host;
  a.copy_from_host = dev_from_host;
  return a;
}

static void test_to_device_private(void **state) {
  (void)state;
  test_dev c;
  memset(&c, 0, sizeof c);
  kd_allocator a = test_allocator(&c);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a));
  kd_device p1 = {KD_DEVICE_PRIVATEUSE1, 1}, p0 = {KD_DEVICE_PRIVATEUSE1, 0};

  /* cpu (a transposed float32 view) -> private:1. */
  float data[12];
  for (int i = 0; i < 12; i++) data[i] = (float)i - 5.5f;
  const float want_t[] = {-5.5f, -1.5f, 2.5f, -4.5f, -0.5f, 3.5f,
                          -3.5f, 0.5f,  4.5f, -2.5f, 1.5f,  5.5f};
  kd_tensor *base, *v, *d, *back;
  KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){3, 4}, KD_FLOAT32, data, &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 0, &v));
  KD_ASSERT_OK(kd_tensor_to_device(v, p1, &d));
  assert_true(kd_device_equal(kd_tensor_device(d), p1));
  assert_true(kd_tensor_key_set(d) ==
              (kd_keyset_of(KD_KEY_PRIVATEUSE1) | NORMAL_KEYS(KD_KEY_AUTOGRAD_PRIVATEUSE1)));
  assert_int_equal(kd_tensor_dtype(d), KD_FLOAT32);
  assert_row_major(d);
  assert_int_equal(c.from_host, 1);
  assert_int_equal(c.bytes_from_host, sizeof want_t);
  assert_true(kd_device_equal(c.last_device, p1));
  /* The test device's memory is malloc'd, so the bytes can be read here. */
  assert_memory_equal(kd_tensor_data(d), want_t, sizeof want_t);

  /* private:1 -> cpu. */
  KD_ASSERT_OK(kd_tensor_to_device(d, kd_device_cpu(), &back));
  assert_true(kd_device_equal(kd_tensor_device(back), kd_device_cpu()));
  assert_true(kd_tensor_key_set(back) == (kd_keyset_of(KD_KEY_CPU) | NORMAL_KEYS(KD_KEY_AUTOGRAD_CPU)));
  assert_row_major(back);
  assert_int_equal(c.to_host, 1);
  assert_memory_equal(kd_tensor_data(back), want_t, sizeof want_t);
  kd_tensor_release(back);

  /* A strided view with an offset on the device: only its span is copied. */
  kd_tensor *dv;
  KD_ASSERT_OK(kd_tensor_as_strided(d, 2, (int64_t[]){2, 2}, (int64_t[]){3, 2}, 4, &dv));
  c.bytes_to_host = 0;
  KD_ASSERT_OK(kd_tensor_to_device(dv, kd_device_cpu(), &back));
  assert_int_equal(c.bytes_to_host, (3 + 2 + 1) * sizeof(float));
  const float want_v[] = {want_t[4], want_t[6], want_t[7], want_t[9]};
  assert_row_major(back);
  assert_memory_equal(kd_tensor_data(back), want_v, sizeof want_v);
  kd_tensor_release(back);

  /* private:1 view -> private:0 (through the host), and private:1 -> private:1. */
  kd_tensor *d0, *d1;
  KD_ASSERT_OK(kd_tensor_to_device(dv, p0, &d0));
  assert_true(kd_device_equal(kd_tensor_device(d0), p0));
  assert_memory_equal(kd_tensor_data(d0), want_v, sizeof want_v);
  KD_ASSERT_OK(kd_tensor_to_device(d, p1, &d1));
  assert_false(kd_tensor_shares_storage(d1, d));
  assert_memory_equal(kd_tensor_data(d1), want_t, sizeof want_t);
  kd_tensor_release(d1);
  kd_tensor_release(d0);

  /* A contiguous cpu tensor goes straight from its bytes. */
  int before = c.from_host;
  KD_ASSERT_OK(kd_tensor_to_device(base, p0, &d0));
  assert_int_equal(c.from_host, before + 1);
  assert_memory_equal(kd_tensor_data(d0), data, sizeof data);
  kd_tensor_release(d0);

  /* Zero elements and 0-dim. */
  kd_tensor *e, *er;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){0, 3}, KD_INT64, kd_device_cpu(), &e));
  KD_ASSERT_OK(kd_tensor_to_device(e, p1, &er));
  assert_int_equal(kd_tensor_numel(er), 0);
  assert_true(kd_device_equal(kd_tensor_device(er), p1));
  kd_tensor_release(e);
  KD_ASSERT_OK(kd_tensor_to_device(er, kd_device_cpu(), &e));
  assert_int_equal(kd_tensor_size(e, 1), 3);
  kd_tensor_release(e);
  kd_tensor_release(er);
  kd_scalar s = kd_scalar_int(-42), got;
  KD_ASSERT_OK(kd_tensor_from_scalar(&s, KD_INT64, &e));
  KD_ASSERT_OK(kd_tensor_to_device(e, p1, &er));
  kd_tensor_release(e);
  KD_ASSERT_OK(kd_tensor_to_device(er, kd_device_cpu(), &e));
  KD_ASSERT_OK(kd_tensor_item(e, &got));
  assert_int_equal(got.v.i, -42);
  kd_tensor_release(e);
  kd_tensor_release(er);

  /* dtype conversion of a device tensor goes through the host and stays on
   * the tensor's device and index (issue 16). */
  KD_ASSERT_OK(kd_tensor_to_dtype(dv, KD_FLOAT64, &e));
  assert_true(kd_device_equal(kd_tensor_device(e), p1));
  assert_int_equal(kd_tensor_dtype(e), KD_FLOAT64);
  assert_row_major(e);
  for (int i = 0; i < 4; i++) assert_true(((double *)kd_tensor_data(e))[i] == want_v[i]);
  kd_tensor_release(e);

  /* copy_ into a device dst with gaps between its elements: converted on
   * the host, the gaps keep their bytes (issue 16). */
  kd_tensor *dgap, *src3;
  KD_ASSERT_OK(kd_tensor_to_device(d, p1, &d1));
  KD_ASSERT_OK(kd_tensor_as_strided(d1, 2, (int64_t[]){2, 2}, (int64_t[]){3, 2}, 4, &dgap));
  const int64_t vals[] = {10, 20, 30, 40};
  KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){2, 2}, KD_INT64, vals, &src3));
  KD_ASSERT_OK(kd_tensor_copy_(dgap, src3));
  float want_gap[12];
  memcpy(want_gap, want_t, sizeof want_gap);
  want_gap[4] = 10, want_gap[6] = 20, want_gap[7] = 30, want_gap[9] = 40;
  assert_memory_equal(kd_tensor_data(d1), want_gap, sizeof want_gap);
  /* A failing copy function: its status and message. */
  c.fail = KD_EINTERNAL;
  KD_ASSERT_ERR(kd_tensor_copy_(dgap, src3), KD_EINTERNAL, "test device lost");
  c.fail = KD_OK;
  kd_tensor_release(src3);
  kd_tensor_release(dgap);
  kd_tensor_release(d1);

  /* resize_ grows device storage through the device's allocator, carrying
   * the old bytes over through the host (issue 16). */
  KD_ASSERT_OK(kd_tensor_to_device(base, p1, &d1));
  int allocs = c.allocs, frees = c.frees;
  KD_ASSERT_OK(kd_tensor_resize_(d1, 1, (int64_t[]){20}, NULL));
  assert_int_equal(c.allocs, allocs + 1);
  assert_int_equal(c.frees, frees + 1);
  assert_true(kd_device_equal(kd_tensor_device(d1), p1));
  assert_int_equal(kd_tensor_numel(d1), 20);
  assert_memory_equal(kd_tensor_data(d1), data, sizeof data);
  c.fail = KD_EINTERNAL;
  KD_ASSERT_ERR(kd_tensor_resize_(d1, 1, (int64_t[]){40}, NULL), KD_EINTERNAL,
                "resize_: growing storage on device 'privateuseone' to 160 bytes: copying the old "
                "80 bytes failed: test device lost");
  c.fail = KD_OK;
  assert_int_equal(kd_tensor_numel(d1), 20);
  assert_memory_equal(kd_tensor_data(d1), data, sizeof data);
  kd_tensor_release(d1);

  /* copy_ takes a device source. */
  kd_tensor *dst;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){4, 3}, KD_FLOAT64, kd_device_cpu(), &dst));
  KD_ASSERT_OK(kd_tensor_copy_(dst, d));
  for (int i = 0; i < 12; i++) assert_true(((double *)kd_tensor_data(dst))[i] == want_t[i]);
  kd_tensor_release(dst);

  /* A copy function that fails: its status and message come back, nothing leaks. */
  c.fail = KD_EINTERNAL;
  back = v;
  KD_ASSERT_ERR(kd_tensor_to_device(d, kd_device_cpu(), &back), KD_EINTERNAL,
                "copy_to_host of device 'privateuseone:1' failed copying 48 bytes: test device "
                "lost");
  assert_null(back);
  KD_ASSERT_ERR(kd_tensor_to_device(v, p1, &back), KD_EINTERNAL,
                "copy_from_host of device 'privateuseone:1' failed");
  assert_null(back);
  c.fail = KD_OK;

  kd_tensor_release(dv);
  kd_tensor_release(d);
  kd_tensor_release(v);
  kd_tensor_release(base);
  assert_int_equal(c.allocs, c.frees);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL));
}

/* An allocator installed as version 1: the struct a program built against the
 * old header passes, exactly its size on the heap so that ASan sees any read
 * or write past it. */
typedef struct v1_allocator {
  uint32_t api_version;
  void *(*alloc)(void *ctx, kd_device device, size_t nbytes);
  void (*free)(void *ctx, kd_device device, void *ptr, size_t nbytes);
  void *ctx;
} v1_allocator;

static void test_to_device_v1_allocator(void **state) {
  (void)state;
  test_dev c;
  memset(&c, 0, sizeof c);
  v1_allocator *v1 = malloc(sizeof *v1);
  assert_non_null(v1);
  v1->api_version = 1;
  v1->alloc = dev_alloc;
  v1->free = dev_free;
  v1->ctx = &c;
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, (const kd_allocator *)(void *)v1));

  kd_allocator got;
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_PRIVATEUSE1, &got));
  assert_int_equal(got.api_version, KD_ALLOCATOR_API_VERSION);
  assert_true(got.alloc == dev_alloc);
  assert_null(got.copy_to_host);
  assert_null(got.copy_from_host);
  /* The old symbol writes a version-1 struct only. */
  memset(v1, 0, sizeof *v1);
  KD_ASSERT_OK((kd_allocator_get)(KD_DEVICE_PRIVATEUSE1, (kd_allocator *)(void *)v1));
  assert_int_equal(v1->api_version, 1);
  assert_true(v1->alloc == dev_alloc && v1->free == dev_free && v1->ctx == &c);

  kd_tensor *t, *r = NULL, *cpu_t;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, (kd_device){KD_DEVICE_PRIVATEUSE1, 0},
                               &t));
  r = t;
  KD_ASSERT_ERR(kd_tensor_to_device(t, kd_device_cpu(), &r), KD_EUNSUPPORTED,
                "device type 'privateuseone' has no copy functions in its allocator (kd_allocator "
                "v2 copy_to_host/copy_from_host); cannot move a tensor to cpu");
  assert_null(r);
  cpu_t = arange_i32(1, (int64_t[]){4});
  KD_ASSERT_ERR(kd_tensor_to_device(cpu_t, (kd_device){KD_DEVICE_PRIVATEUSE1, 2}, &r),
                KD_EUNSUPPORTED,
                "device type 'privateuseone' has no copy functions in its allocator (kd_allocator "
                "v2 copy_to_host/copy_from_host); cannot move a tensor to privateuseone:2");
  assert_null(r);
  assert_int_equal(c.allocs, 1); /* nothing allocated for the failed move */
  /* Meta needs no bytes. */
  KD_ASSERT_OK(kd_tensor_to_device(t, (kd_device){KD_DEVICE_META, 0}, &r));
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  kd_tensor_release(r);
  kd_tensor_release(cpu_t);
  kd_tensor_release(t);
  assert_int_equal(c.frees, 1);
  free(v1);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL));
}

static void test_allocator_versions(void **state) {
  (void)state;
  test_dev c;
  memset(&c, 0, sizeof c);
  kd_allocator a = test_allocator(&c), got;
  a.api_version = 3;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a), KD_EINVAL,
                "kd_allocator api_version 3 is not supported: this library accepts 1 to 2 "
                "(KD_ALLOCATOR_API_VERSION)");
  a.api_version = 0;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a), KD_EINVAL,
                "kd_allocator api_version 0 is not supported");
  a.api_version = 2;
  a.copy_from_host = NULL;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a), KD_EINVAL,
                "expected copy_to_host and copy_from_host both set or both NULL, got only "
                "copy_to_host");
  a.copy_from_host = dev_from_host;
  a.copy_to_host = NULL;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a), KD_EINVAL, "got only copy_from_host");
  KD_ASSERT_ERR(kd_allocator_get(KD_DEVICE_PRIVATEUSE2, &got), KD_ENOTFOUND, "no allocator");
  /* A version-2 allocator without copy functions is valid (and cannot transfer). */
  a.copy_from_host = NULL;
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a));
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, NULL));

  /* cpu's default copies with memcpy. */
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_CPU, &got));
  assert_int_equal(got.api_version, 2);
  assert_non_null(got.copy_to_host);
  assert_non_null(got.copy_from_host);

  /* kd_allocator_get_sized: a version-1 size writes only those fields. */
  a = test_allocator(&c);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a));
  memset(&got, 0, sizeof got);
  got.copy_to_host = dev_from_host; /* a sentinel that must stay */
  KD_ASSERT_OK(kd_allocator_get_sized(KD_DEVICE_PRIVATEUSE2, &got, sizeof(v1_allocator)));
  assert_int_equal(got.api_version, 1);
  assert_true(got.alloc == dev_alloc);
  assert_true(got.copy_to_host == dev_from_host);
  KD_ASSERT_OK(kd_allocator_get_sized(KD_DEVICE_PRIVATEUSE2, &got, sizeof got + 32));
  assert_int_equal(got.api_version, 2);
  assert_true(got.copy_to_host == dev_to_host);
  assert_true(got.copy_from_host == dev_from_host);
  KD_ASSERT_ERR(kd_allocator_get_sized(KD_DEVICE_PRIVATEUSE2, &got, 4), KD_EINVAL,
                "out_size 4 is too small");
  KD_ASSERT_ERR(kd_allocator_get_sized(KD_DEVICE_PRIVATEUSE2, NULL, sizeof got), KD_EINVAL,
                "NULL out");
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, NULL));
}

static void test_to_device_meta(void **state) {
  (void)state;
  kd_device meta = {KD_DEVICE_META, 0};
  kd_tensor *t = arange_i32(2, (int64_t[]){2, 5}), *v, *m, *m2, *r = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 2, (int64_t[]){5, 2}, (int64_t[]){1, 5}, 0, &v));
  KD_ASSERT_OK(kd_tensor_to_device(v, meta, &m));
  assert_true(kd_device_equal(kd_tensor_device(m), meta));
  assert_true(kd_tensor_key_set(m) == (kd_keyset_of(KD_KEY_META) | NORMAL_KEYS(KD_KEY_AUTOGRAD_META)));
  assert_int_equal(kd_tensor_dtype(m), KD_INT32);
  assert_int_equal(kd_tensor_size(m, 0), 5);
  assert_int_equal(kd_tensor_size(m, 1), 2);
  assert_row_major(m);
  assert_null(kd_tensor_data(m));
  KD_ASSERT_OK(kd_tensor_to_device(m, meta, &m2));
  assert_false(kd_tensor_shares_storage(m, m2));
  kd_tensor_release(m2);
  r = t;
  KD_ASSERT_ERR(kd_tensor_to_device(m, kd_device_cpu(), &r), KD_EUNSUPPORTED,
                "cannot move a meta tensor to cpu: meta tensors have no data");
  assert_null(r);
  kd_tensor_release(m);
  kd_tensor_release(v);
  kd_tensor_release(t);
}

static void test_to_device_errors(void **state) {
  (void)state;
  kd_tensor *t = arange_i32(1, (int64_t[]){3}), *r = t;
  KD_ASSERT_ERR(kd_tensor_to_device(NULL, kd_device_cpu(), &r), KD_EINVAL, "NULL tensor");
  assert_null(r);
  KD_ASSERT_ERR(kd_tensor_to_device(t, kd_device_cpu(), NULL), KD_EINVAL, "NULL out");
  KD_ASSERT_ERR(kd_tensor_to_device(t, (kd_device){(kd_device_type)42, 0}, &r), KD_EINVAL,
                "invalid device type 42");
  KD_ASSERT_ERR(kd_tensor_to_device(t, (kd_device){KD_DEVICE_CUDA, -1}, &r), KD_EINVAL,
                "device index -1 of 'cuda' is negative");
  KD_ASSERT_ERR(kd_tensor_to_device(t, (kd_device){KD_DEVICE_CPU, 1}, &r), KD_EINVAL,
                "cpu has only device index 0, got 1");
  KD_ASSERT_ERR(kd_tensor_to_device(t, (kd_device){KD_DEVICE_CUDA, 0}, &r), KD_EUNSUPPORTED,
                "device type 'cuda' has no allocator");
  assert_null(r);
  /* cpu -> cpu is a contiguous copy. */
  KD_ASSERT_OK(kd_tensor_to_device(t, kd_device_cpu(), &r));
  assert_false(kd_tensor_shares_storage(r, t));
  assert_memory_equal(kd_tensor_data(r), kd_tensor_data(t), 3 * sizeof(int32_t));
  kd_tensor_release(r);
  kd_tensor_release(t);
}

/* ---- kd_tensor_copy_ ---------------------------------------------------------------- */

static void test_copy_inplace(void **state) {
  (void)state;
  /* Broadcast an int64 row into a transposed float32 view. */
  kd_tensor *base, *dst, *src;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){3, 2}, KD_FLOAT32, kd_device_cpu(), &base));
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &dst));
  const int64_t row[] = {1, -2, 3};
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){3}, KD_INT64, row, &src));
  KD_ASSERT_OK(kd_tensor_copy_(dst, src));
  const float want[] = {1, 1, -2, -2, 3, 3}; /* base[i][j] = dst[j][i] = row[i] */
  assert_memory_equal(kd_tensor_data(base), want, sizeof want);

  /* Errors. */
  kd_tensor *bad, *meta;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_INT64, kd_device_cpu(), &bad));
  KD_ASSERT_ERR(kd_tensor_copy_(dst, bad), KD_EINVAL,
                "src sizes [4] cannot be broadcast to dst sizes [2, 3]");
  KD_ASSERT_ERR(kd_tensor_copy_(NULL, src), KD_EINVAL, "NULL dst");
  KD_ASSERT_ERR(kd_tensor_copy_(dst, NULL), KD_EINVAL, "NULL src");
  kd_tensor *overlap;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){3}, (int64_t[]){0}, 0, &overlap));
  KD_ASSERT_ERR(kd_tensor_copy_(overlap, src), KD_EINVAL, "dst's elements overlap");
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_INT64, (kd_device){KD_DEVICE_META, 0}, &meta));
  KD_ASSERT_ERR(kd_tensor_copy_(overlap, meta), KD_EINVAL, "overlap");
  KD_ASSERT_ERR(kd_tensor_copy_(dst, meta), KD_EUNSUPPORTED, "src is a meta tensor");
  KD_ASSERT_OK(kd_tensor_copy_(meta, src)); /* a meta dst: nothing to write */
  assert_memory_equal(kd_tensor_data(base), want, sizeof want);
  kd_tensor_release(overlap);
  kd_tensor_release(meta);
  kd_tensor_release(bad);
  kd_tensor_release(src);
  kd_tensor_release(dst);
  kd_tensor_release(base);

  /* Overlapping src and dst: src is read completely first. */
  kd_tensor *t = arange_i32(1, (int64_t[]){6}), *a, *b;
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){5}, (int64_t[]){1}, 1, &a));
  KD_ASSERT_OK(kd_tensor_as_strided(t, 1, (int64_t[]){5}, (int64_t[]){1}, 0, &b));
  KD_ASSERT_OK(kd_tensor_copy_(a, b));
  const int32_t shifted[] = {0, 0, 1, 2, 3, 4};
  assert_memory_equal(kd_tensor_data(t), shifted, sizeof shifted);
  kd_tensor_release(b);
  kd_tensor_release(a);
  /* A 0-dim src fills everything. */
  kd_scalar x = kd_scalar_double(2.75);
  KD_ASSERT_OK(kd_tensor_from_scalar(&x, KD_FLOAT64, &a));
  KD_ASSERT_OK(kd_tensor_copy_(t, a));
  for (int i = 0; i < 6; i++) assert_int_equal(((int32_t *)kd_tensor_data(t))[i], 2);
  kd_tensor_release(a);
  kd_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_to_dtype_all_pairs),
      cmocka_unit_test(test_to_dtype_int64_exact),
      cmocka_unit_test(test_to_dtype_float_rules),
      cmocka_unit_test(test_to_dtype_views),
      cmocka_unit_test(test_to_dtype_zero_dim_and_empty),
      cmocka_unit_test(test_to_dtype_meta),
      cmocka_unit_test(test_to_dtype_errors),
      cmocka_unit_test(test_to_device_private),
      cmocka_unit_test(test_to_device_v1_allocator),
      cmocka_unit_test(test_allocator_versions),
      cmocka_unit_test(test_to_device_meta),
      cmocka_unit_test(test_to_device_errors),
      cmocka_unit_test(test_copy_inplace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
