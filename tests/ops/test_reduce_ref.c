/*
 * test_reduce_ref.c: the reductions through the generated entry points
 * against a double-precision reference computed here: views (transposed,
 * permuted, sliced with steps and offsets, expanded), lists of several
 * non-adjacent dims, negative dims and keepdim, for float, int, uint8 and
 * bool inputs; out= (resize, non-contiguous out, wrong dtypes); integer
 * wrap-around; zero-size inputs and outputs; long rows split over threads
 * (sums within tolerance of a double sum, ties and NaN across pieces); the
 * columns of a matrix reduced side by side, bit for bit as each alone; and
 * the error messages not checked in test_reduce.c, by status and text,
 * including those of the functions and stubs called directly.
 */
#include "test_reduce_util.h"
#include "kdk/native.h"
#include "native/reduce.h"

/* ---- Against a reference: views, dim lists, keepdim ----------------------------------------------- */

typedef enum rkind { R_SUM, R_PROD, R_MEAN, R_AMAX, R_AMIN, R_ARGMAX, R_ARGMIN, R_ALL, R_ANY } rkind;

/* Element i (row-major) of t as a double. */
static double elem(const kd_tensor *t, int64_t i) {
  int nd = kd_tensor_ndim(t);
  int64_t idx[KD_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = i % kd_tensor_sizes(t)[d];
    i /= kd_tensor_sizes(t)[d];
  }
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(t, nd ? idx : NULL, &s));
  return kd_scalar_to_double(&s);
}

/* The reduction of t over mask, computed here in double: out[j] for output j
 * (row-major over the kept dims; argmax/argmin: the row position, in
 * row-major order of the reduced dims, of the first extreme or first NaN).
 * Returns the number of outputs. */
static int64_t ref_reduce(const kd_tensor *t, const bool *mask, rkind k, double *out) {
  int nd = kd_tensor_ndim(t);
  const int64_t *sz = kd_tensor_sizes(t);
  int64_t nout = 1, nred = 1;
  for (int d = 0; d < nd; d++) {
    if (mask[d]) nred *= sz[d];
    else nout *= sz[d];
  }
  double *best = calloc((size_t)nout + 1, sizeof *best);
  bool *seen = calloc((size_t)nout + 1, sizeof *seen);
  for (int64_t j = 0; j < nout; j++)
    out[j] = k == R_PROD || k == R_ALL ? 1 : 0;
  for (int64_t i = 0; i < kd_tensor_numel(t); i++) {
    int64_t rest = i, o = 0, r = 0, ostride = 1, rstride = 1;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t x = rest % sz[d];
      rest /= sz[d];
      if (mask[d]) r += x * rstride, rstride *= sz[d];
      else o += x * ostride, ostride *= sz[d];
    }
    double v = elem(t, i);
    switch (k) {
    case R_SUM:
    case R_MEAN: out[o] += v; break;
    case R_PROD: out[o] *= v; break;
    case R_ALL: out[o] = out[o] != 0 && v != 0; break;
    case R_ANY: out[o] = out[o] != 0 || v != 0; break;
    case R_AMAX:
    case R_AMIN:
      if (!seen[o] || (!isnan(out[o]) && (isnan(v) || (k == R_AMAX ? v > out[o] : v < out[o]))))
        out[o] = v;
      break;
    default:
      if (!seen[o] || (!isnan(best[o]) && (isnan(v) || (k == R_ARGMAX ? v > best[o] : v < best[o])))) {
        best[o] = v;
        out[o] = (double)r;
      }
    }
    seen[o] = true;
  }
  if (k == R_MEAN)
    for (int64_t j = 0; j < nout; j++) out[j] /= (double)nred;
  free(best);
  free(seen);
  return nout;
}

/* The output shape of a reduction over mask. */
static int out_shape(const kd_tensor *t, const bool *mask, bool keepdim, int64_t *sizes) {
  int n = 0;
  for (int d = 0; d < kd_tensor_ndim(t); d++) {
    if (!mask[d]) sizes[n++] = kd_tensor_sizes(t)[d];
    else if (keepdim) sizes[n++] = 1;
  }
  return n;
}

/* Every reduction of t over dims (n of them; n == 0: all) against ref_reduce. */
static void check_all_kinds(const kd_tensor *base_view, const int64_t *dims, int n, bool keepdim) {
  kd_tensor *t = (kd_tensor *)base_view;
  int nd = kd_tensor_ndim(t);
  kd_dtype dt = kd_tensor_dtype(t);
  bool mask[KD_MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) mask[dims[i] < 0 ? dims[i] + nd : dims[i]] = true;
  if (n == 0)
    for (int d = 0; d < nd; d++) mask[d] = true;
  int64_t osz[KD_MAX_DIMS];
  int on = out_shape(t, mask, keepdim, osz);
  double want[256];
  kd_ints dl = ints(dims, n);
  kd_tensor *r = NULL;
  bool fl = kd_dtype_is_floating(dt);
  kd_dtype sum_dt = fl ? dt : KD_INT64;
  ref_reduce(t, mask, R_SUM, want);
  KD_ASSERT_OK(kd_sum_dim_IntList(t, dl, keepdim, NULL, &r));
  check(r, on, osz, sum_dt, want, 0);
  kd_tensor_release(r);
  if (n <= 1) {
    ref_reduce(t, mask, R_ALL, want);
    KD_ASSERT_OK(n == 0 ? kd_all(t, &r) : kd_all_dim(t, dims[0], keepdim, &r));
    check(r, n == 0 ? 0 : on, osz, dt == KD_UINT8 ? KD_UINT8 : KD_BOOL, want, 0);
    kd_tensor_release(r);
  }
  ref_reduce(t, mask, R_ANY, want);
  if (n == 1) {
    KD_ASSERT_OK(kd_any_dim(t, dims[0], keepdim, &r));
    check(r, on, osz, dt == KD_UINT8 ? KD_UINT8 : KD_BOOL, want, 0);
    kd_tensor_release(r);
  }
  if (dt == KD_BOOL) return;
  ref_reduce(t, mask, R_AMAX, want);
  KD_ASSERT_OK(kd_amax(t, dl, keepdim, &r));
  check(r, on, osz, dt, want, 0);
  kd_tensor_release(r);
  ref_reduce(t, mask, R_AMIN, want);
  KD_ASSERT_OK(kd_amin(t, dl, keepdim, &r));
  check(r, on, osz, dt, want, 0);
  kd_tensor_release(r);
  if (fl) {
    ref_reduce(t, mask, R_MEAN, want);
    KD_ASSERT_OK(kd_mean_dim(t, dl, keepdim, NULL, &r));
    check(r, on, osz, dt, want, dt == KD_FLOAT16 ? 1e-3 : dt == KD_FLOAT32 ? 1e-6 : 1e-12);
    kd_tensor_release(r);
  }
  if (n <= 1) {
    ref_reduce(t, mask, R_ARGMAX, want);
    KD_ASSERT_OK(kd_argmax(t, n ? dims : NULL, keepdim, &r));
    check(r, on, osz, KD_INT64, want, 0);
    kd_tensor_release(r);
    ref_reduce(t, mask, R_ARGMIN, want);
    KD_ASSERT_OK(kd_argmin(t, n ? dims : NULL, keepdim, &r));
    check(r, on, osz, KD_INT64, want, 0);
    kd_tensor_release(r);
  }
  if (n == 1) {
    kd_tensor *v = NULL, *i = NULL;
    double vals[256];
    ref_reduce(t, mask, R_AMAX, vals);
    ref_reduce(t, mask, R_ARGMAX, want);
    KD_ASSERT_OK(kd_max_dim(t, dims[0], keepdim, &v, &i));
    check(v, on, osz, dt, vals, 0);
    check(i, on, osz, KD_INT64, want, 0);
    kd_tensor_release(v);
    kd_tensor_release(i);
    ref_reduce(t, mask, R_AMIN, vals);
    ref_reduce(t, mask, R_ARGMIN, want);
    KD_ASSERT_OK(kd_min_dim(t, dims[0], keepdim, &v, &i));
    check(v, on, osz, dt, vals, 0);
    check(i, on, osz, KD_INT64, want, 0);
    kd_tensor_release(v);
    kd_tensor_release(i);
    ref_reduce(t, mask, R_PROD, want);
    KD_ASSERT_OK(kd_prod_dim_int(t, dims[0], keepdim, NULL, &r));
    check(r, on, osz, sum_dt, want, 1e-12);
    kd_tensor_release(r);
  }
}

static void test_reference_views(void **state) {
  (void)state;
  setup_ops();
  /* views of a 128-element buffer: contiguous, permuted (transposed), sliced
   * with steps and an offset, expanded (stride 0), and 4-d */
  static const struct {
    int nd;
    int64_t sizes[4], strides[4], offset;
  } views[] = {
      {3, {2, 3, 4}, {12, 4, 1}, 0},  {3, {4, 2, 3}, {1, 12, 4}, 0}, {3, {2, 3, 2}, {12, 4, 2}, 1},
      {3, {2, 3, 4}, {48, 4, 1}, 5},  {3, {2, 3, 4}, {0, 4, 1}, 3},  {2, {4, 3}, {1, 4}, 0},
      {4, {2, 3, 2, 5}, {30, 10, 5, 1}, 2}, {4, {2, 3, 2, 5}, {1, 2, 6, 12}, 0},
  };
  static const struct {
    int n;
    int64_t d[3];
  } dimsets[] = {{0, {0}},       {1, {0}},       {1, {1}},     {1, {-1}},   {2, {0, 2}},
                 {2, {-1, 0}},  {2, {1, 2}},    {3, {0, 1, 2}}, {2, {-3, -1}}, {2, {1, 3}},
                 {2, {0, -2}}};
  const kd_dtype dts[] = {KD_FLOAT64, KD_FLOAT32, KD_FLOAT16, KD_INT32, KD_UINT8, KD_BOOL};
  double v[128];
  for (int i = 0; i < 128; i++) v[i] = (double)((i * 7) % 11) - 5; /* ties and zeros */
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    double u[128];
    for (int i = 0; i < 128; i++) u[i] = dts[k] == KD_UINT8 ? fabs(v[i]) : v[i];
    kd_tensor *base = mk(1, (int64_t[]){128}, dts[k], u);
    for (size_t w = 0; w < sizeof views / sizeof views[0]; w++) {
      kd_tensor *t = NULL;
      KD_ASSERT_OK(kd_tensor_as_strided(base, views[w].nd, views[w].sizes, views[w].strides,
                                        views[w].offset, &t));
      for (size_t s = 0; s < sizeof dimsets / sizeof dimsets[0]; s++) {
        bool fits = true, used[4] = {false};
        for (int i = 0; i < dimsets[s].n; i++) {
          int64_t d = dimsets[s].d[i];
          if (d >= views[w].nd || d < -views[w].nd || used[d < 0 ? d + views[w].nd : d]) {
            fits = false; /* out of range or repeated in this view: tested elsewhere */
            break;
          }
          used[d < 0 ? d + views[w].nd : d] = true;
        }
        if (!fits) continue;
        check_all_kinds(t, dimsets[s].d, dimsets[s].n, false);
        check_all_kinds(t, dimsets[s].d, dimsets[s].n, true);
      }
      kd_tensor_release(t);
    }
    kd_tensor_release(base);
  }
}

/* ---- out= ------------------------------------------------------------------------------------------ */

static void test_out_variants(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[3] = {2, 3, 4};
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = (double)((i * 5) % 7);
  kd_tensor *a = mk(3, sz, KD_FLOAT32, v), *o = NULL, *oi = NULL;
  int64_t d02[2] = {0, 2};
  double want[3];
  bool mask[3] = {true, false, true};
  ref_reduce(a, mask, R_SUM, want);
  /* resized from a wrong shape (no warning: it was empty), keepdim */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_sum_IntList_out(a, ints(d02, 2), true, NULL, o));
  check(o, 3, (int64_t[]){1, 3, 1}, KD_FLOAT32, want, 0);
  kd_tensor_release(o);
  /* out's dtype is the result's (float64 from float32, converted first) */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT64, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_sum_IntList_out(a, ints(d02, 2), false, NULL, o));
  check(o, 1, (int64_t[]){3}, KD_FLOAT64, want, 0);
  kd_tensor_release(o);
  /* a non-contiguous out of the right shape is written in place */
  kd_tensor *buf = NULL;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){4, 3}, KD_FLOAT32, kd_device_cpu(), &buf));
  KD_ASSERT_OK(kd_tensor_as_strided(buf, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3}, 0, &o));
  double w2[12];
  bool m0[3] = {true, false, false};
  ref_reduce(a, m0, R_AMAX, w2);
  KD_ASSERT_OK(kd_amax_out(a, ints((int64_t[]){0}, 1), false, o));
  check(o, 2, (int64_t[]){3, 4}, KD_FLOAT32, w2, 0);
  assert_int_equal(kd_tensor_stride(o, 0), 1);
  kd_tensor_release(o);
  kd_tensor_release(buf);
  /* prod out of int16 for an int32 input: computed in int16 */
  kd_tensor *i32 = mk(1, (int64_t[]){3}, KD_INT32, (double[]){300, 300, 1});
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT16, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_prod_int_out(i32, 0, false, NULL, o));
  check(o, 0, NULL, KD_INT16, (double[]){(double)(int16_t)(uint16_t)(90000 % 65536)}, 0);
  kd_tensor_release(o);
  kd_tensor_release(i32);
  /* wrong dtypes */
  kd_dtype f64 = KD_FLOAT64;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &o));
  KD_ASSERT_ERR(kd_sum_IntList_out(a, ints(d02, 2), false, &f64, o), KD_ETYPE,
                "Expected out tensor to have dtype float64, but got float32 instead");
  KD_ASSERT_ERR(kd_mean_out(a, ints(d02, 2), false, &f64, o), KD_ETYPE,
                "Expected out tensor to have dtype float64, but got float32 instead");
  KD_ASSERT_ERR(kd_argmin_out(a, (int64_t[]){1}, false, o), KD_ETYPE,
                "Expected out tensor to have dtype int64, but got float32 instead");
  KD_ASSERT_ERR(kd_all_out(a, 1, false, o), KD_ETYPE,
                "all only supports bool tensor for result, got: float32");
  kd_tensor_release(o);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_INT64, kd_device_cpu(), &o));
  KD_ASSERT_ERR(kd_mean_out(a, ints(d02, 2), false, NULL, o), KD_ETYPE,
                "mean: result type float32 can't be cast to the desired output type int64");
  KD_ASSERT_ERR(kd_amin_out(a, ints(d02, 2), false, o), KD_ETYPE,
                "amin(): Expected the dtype for input and out to match, but got float32 for "
                "input's dtype and int64 for out's dtype.");
  /* max.dim out: values of another dtype, then indices of another dtype */
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_FLOAT32, kd_device_cpu(), &oi));
  KD_ASSERT_ERR(kd_max_dim_max(a, 1, false, o, oi), KD_ETYPE,
                "Expected out tensor to have dtype float32, but got int64 instead");
  KD_ASSERT_ERR(kd_min_dim_min(a, 1, false, oi, oi), KD_ETYPE,
                "Expected out tensor to have dtype int64, but got float32 instead");
  /* and right: both resized */
  KD_ASSERT_OK(kd_min_dim_min(a, 1, true, oi, o));
  bool m1[3] = {false, true, false};
  double vals[8], idx[8];
  ref_reduce(a, m1, R_AMIN, vals);
  ref_reduce(a, m1, R_ARGMIN, idx);
  check(oi, 3, (int64_t[]){2, 1, 4}, KD_FLOAT32, vals, 0);
  check(o, 3, (int64_t[]){2, 1, 4}, KD_INT64, idx, 0);
  kd_tensor_release(oi);
  kd_tensor_release(o);
  /* any.all_out into an empty out: resized to 0-dim */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_BOOL, kd_device_cpu(), &o));
  KD_ASSERT_OK(kd_any_all_out(a, o));
  check(o, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(o);
  kd_tensor_release(a);
}

/* ---- integer and bool dtypes ------------------------------------------------------------------------- */

static void test_int_bool(void **state) {
  (void)state;
  setup_ops();
  kd_tensor *r = NULL;
  /* sum with dtype=int8 wraps in int8; without dtype it is int64 */
  kd_tensor *b = mk(1, (int64_t[]){3}, KD_INT8, (double[]){100, 100, 100});
  kd_dtype i8 = KD_INT8, b8 = KD_BOOL;
  KD_ASSERT_OK(kd_sum(b, &i8, &r));
  check(r, 0, NULL, KD_INT8, (double[]){44}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(b, NULL, &r));
  check(r, 0, NULL, KD_INT64, (double[]){300}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_prod(b, NULL, &r));
  check(r, 0, NULL, KD_INT64, (double[]){1000000}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(b, &b8, &r)); /* converted to bool first */
  check(r, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(r);
  kd_tensor_release(b);
  /* int64 extremes: amax/amin/argmax exact beyond 2^53 */
  kd_tensor *l = NULL;
  int64_t big[3] = {INT64_MAX - 1, INT64_MAX, INT64_MIN};
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){3}, KD_INT64, big, &l));
  KD_ASSERT_OK(kd_amax(l, NONE, false, &r));
  assert_true(*(int64_t *)kd_tensor_data(r) == INT64_MAX);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amin(l, NONE, false, &r));
  assert_true(*(int64_t *)kd_tensor_data(r) == INT64_MIN);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_argmax(l, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(l, NULL, &r)); /* wraps modulo 2^64 */
  assert_true(*(int64_t *)kd_tensor_data(r) == INT64_MAX - 2);
  kd_tensor_release(r);
  kd_tensor_release(l);
  /* bool: sum counts, prod is all, amax is any, all/any of uint8 give uint8 */
  const int64_t sz[2] = {2, 3};
  kd_tensor *t = mk(2, sz, KD_BOOL, (double[]){1, 0, 1, 1, 1, 1});
  KD_ASSERT_OK(kd_sum_dim_IntList(t, ints((int64_t[]){1}, 1), false, NULL, &r));
  check(r, 1, (int64_t[]){2}, KD_INT64, (double[]){2, 3}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_prod_dim_int(t, 1, true, NULL, &r));
  check(r, 2, (int64_t[]){2, 1}, KD_INT64, (double[]){0, 1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amax(t, ints((int64_t[]){0}, 1), false, &r));
  check(r, 1, (int64_t[]){3}, KD_BOOL, (double[]){1, 1, 1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amin(t, ints((int64_t[]){0}, 1), false, &r));
  check(r, 1, (int64_t[]){3}, KD_BOOL, (double[]){1, 0, 1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_argmin(t, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){1}, 0);
  kd_tensor_release(r);
  KD_ASSERT_ERR(kd_mean(t, NULL, &r), KD_ETYPE,
                "mean(): could not infer output dtype. Input dtype must be either a floating point "
                "or complex dtype. Got: bool");
  kd_tensor_release(t);
  kd_tensor *u = mk(2, sz, KD_UINT8, (double[]){0, 200, 3, 255, 1, 0});
  KD_ASSERT_OK(kd_all_dim(u, 0, false, &r));
  check(r, 1, (int64_t[]){3}, KD_UINT8, (double[]){0, 1, 0}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_sum(u, NULL, &r));
  check(r, 0, NULL, KD_INT64, (double[]){459}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_cumsum(u, 1, NULL, &r));
  check(r, 2, sz, KD_INT64, (double[]){0, 200, 203, 255, 256, 256}, 0);
  kd_tensor_release(r);
  kd_tensor_release(u);
}

/* ---- zero-size ---------------------------------------------------------------------------------------- */

static void test_zero_size_more(void **state) {
  (void)state;
  setup_ops();
  const int64_t sz[3] = {2, 0, 3};
  kd_tensor *z = mk(3, sz, KD_FLOAT64, NULL), *r = NULL, *i = NULL;
  int64_t d1 = 1, d02[2] = {0, 2}, d12[2] = {1, 2};
  double zeros[6] = {0}, ones[6] = {1, 1, 1, 1, 1, 1};
  KD_ASSERT_OK(kd_sum_dim_IntList(z, ints(d12, 2), true, NULL, &r));
  check(r, 3, (int64_t[]){2, 1, 1}, KD_FLOAT64, zeros, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_prod_dim_int(z, 1, false, NULL, &r));
  check(r, 2, (int64_t[]){2, 3}, KD_FLOAT64, ones, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_mean_dim(z, ints(&d1, 1), false, NULL, &r));
  check(r, 2, (int64_t[]){2, 3}, KD_FLOAT64, (double[]){NAN, NAN, NAN, NAN, NAN, NAN}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_all_dim(z, 1, false, &r));
  check(r, 2, (int64_t[]){2, 3}, KD_BOOL, ones, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_any_dim(z, -2, true, &r));
  check(r, 3, (int64_t[]){2, 1, 3}, KD_BOOL, zeros, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_any(z, &r));
  check(r, 0, NULL, KD_BOOL, zeros, 0);
  kd_tensor_release(r);
  /* the output is empty: nothing to reduce, no error */
  KD_ASSERT_OK(kd_sum_dim_IntList(z, ints(d02, 2), false, NULL, &r));
  check_shape(r, 1, (int64_t[]){0}, KD_FLOAT64);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amax(z, ints(d02, 2), true, &r));
  check_shape(r, 3, (int64_t[]){1, 0, 1}, KD_FLOAT64);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_max_dim(z, 2, false, &r, &i));
  check_shape(r, 2, (int64_t[]){2, 0}, KD_FLOAT64);
  check_shape(i, 2, (int64_t[]){2, 0}, KD_INT64);
  kd_tensor_release(r);
  kd_tensor_release(i);
  KD_ASSERT_OK(kd_argmin(z, (int64_t[]){-1}, true, &r));
  check_shape(r, 3, (int64_t[]){2, 0, 1}, KD_INT64);
  kd_tensor_release(r);
  /* a reduced dim of size 0 */
  KD_ASSERT_ERR(kd_amax(z, ints(d12, 2), false, &r), KD_ERANGE,
                "amax(): Expected reduction dim 1 to have non-zero size.");
  KD_ASSERT_ERR(kd_amin(z, ints((int64_t[]){-2}, 1), false, &r), KD_ERANGE,
                "amin(): Expected reduction dim -2 to have non-zero size.");
  KD_ASSERT_ERR(kd_min_dim(z, 1, false, &r, &i), KD_ERANGE,
                "min(): Expected reduction dim 1 to have non-zero size.");
  KD_ASSERT_ERR(kd_argmax(z, (int64_t[]){1}, true, &r), KD_ERANGE,
                "argmax(): Expected reduction dim 1 to have non-zero size.");
  KD_ASSERT_ERR(kd_argmin(z, NULL, false, &r), KD_ERANGE,
                "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  KD_ASSERT_ERR(kd_amin(z, NONE, false, &r), KD_ERANGE,
                "amin(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                "the reduction dim with the 'dim' argument.");
  KD_ASSERT_ERR(kd_min(z, &r), KD_ERANGE,
                "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument.");
  KD_ASSERT_OK(kd_cumsum(z, 1, NULL, &r));
  check_shape(r, 3, sz, KD_FLOAT64);
  kd_tensor_release(r);
  kd_tensor_release(z);
}

/* ---- threads: long rows cut into pieces, many rows split ----------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;
static double rnd(void) { /* [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

static kd_tensor *big_tensor(kd_dtype dt, int64_t n, double scale) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, dt, kd_device_cpu(), &t));
  for (int64_t i = 0; i < n; i++) {
    double x = rnd() * scale;
    switch (dt) {
    case KD_FLOAT32: ((float *)kd_tensor_data(t))[i] = (float)x; break;
    case KD_FLOAT64: ((double *)kd_tensor_data(t))[i] = x; break;
    case KD_FLOAT16: ((uint16_t *)kd_tensor_data(t))[i] = kd_float_to_half((float)x); break;
    case KD_INT32: ((int32_t *)kd_tensor_data(t))[i] = (int32_t)floor(x); break;
    default: fail_msg("big_tensor: dtype");
    }
  }
  return t;
}

/* Sum and mean of t's elements in double, and the sum of their magnitudes. */
static double dsum(const kd_tensor *t, double *abs_sum) {
  kd_tensor *w = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT64, &w));
  const double *p = kd_tensor_data(w);
  double s = 0, a = 0;
  for (int64_t i = 0; i < kd_tensor_numel(w); i++) s += p[i], a += fabs(p[i]);
  kd_tensor_release(w);
  if (abs_sum) *abs_sum = a;
  return s;
}

static double scalar_of(const kd_tensor *t) {
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(t, NULL, &s));
  return kd_scalar_to_double(&s);
}

static void set_f32(kd_tensor *t, int64_t i, float v) { ((float *)kd_tensor_data(t))[i] = v; }

static void test_threads_large(void **state) {
  (void)state;
  setup_ops();
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(4));
  const int64_t n = (3 << 20) + 17;
  kd_tensor *r = NULL, *r2 = NULL;
  /* sums of one long row, against double references */
  const struct {
    kd_dtype dt;
    int64_t n;
    double scale, tol;
  } sums[] = {{KD_FLOAT32, n, 1, 1e-7}, {KD_FLOAT64, n, 1, 1e-15}, {KD_FLOAT16, 200003, 1, 1e-5},
              {KD_INT32, n, 1000, 0}};
  for (size_t k = 0; k < sizeof sums / sizeof sums[0]; k++) {
    kd_tensor *a = big_tensor(sums[k].dt, sums[k].n, sums[k].scale);
    double abs_sum, want = dsum(a, &abs_sum);
    KD_ASSERT_OK(kd_sum(a, NULL, &r));
    double got = scalar_of(r);
    if (!(fabs(got - want) <= sums[k].tol * abs_sum))
      fail_msg("sum %s: %.17g, expected %.17g", kd_dtype_name(sums[k].dt), got, want);
    kd_tensor_release(r);
    if (kd_dtype_is_floating(sums[k].dt)) {
      KD_ASSERT_OK(kd_mean(a, NULL, &r));
      got = scalar_of(r);
      /* float16: the float32 mean is rounded once more (2^-11 relative) */
      double slack = sums[k].dt == KD_FLOAT16 ? 1e-3 * fabs(want) : 0;
      if (!(fabs(got * (double)sums[k].n - want) <= sums[k].tol * abs_sum + slack))
        fail_msg("mean %s: %.17g, expected %.17g", kd_dtype_name(sums[k].dt), got,
                 want / (double)sums[k].n);
      kd_tensor_release(r);
    }
    kd_tensor_release(a);
  }
  /* many rows, and a few long strided ones (the columns of [n/3, 3]) */
  kd_tensor *a = big_tensor(KD_FLOAT32, 3 * 400000, 1), *m = NULL;
  for (int shape = 0; shape < 2; shape++) {
    int64_t rows = shape == 0 ? 400000 : 3, cols = shape == 0 ? 3 : 400000;
    KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){rows, cols}, (int64_t[]){cols, 1}, 0, &m));
    for (int dim = 0; dim < 2; dim++) {
      int64_t d = dim;
      KD_ASSERT_OK(kd_sum_dim_IntList(m, ints(&d, 1), false, NULL, &r));
      const float *p = kd_tensor_data(a), *q = kd_tensor_data(r);
      int64_t nout = dim == 0 ? cols : rows, len = dim == 0 ? rows : cols;
      for (int64_t j = 0; j < nout; j += nout > 1000 ? 997 : 1) {
        double e = 0, ea = 0;
        for (int64_t i = 0; i < len; i++) {
          float x = dim == 0 ? p[i * cols + j] : p[j * cols + i];
          e += x, ea += fabs(x);
        }
        if (!(fabs(q[j] - e) <= 1e-6 * ea + 1e-6))
          fail_msg("[%lld, %lld] dim %d output %lld: %.9g vs %.9g", (long long)rows, (long long)cols,
                   dim, (long long)j, q[j], e);
      }
      kd_tensor_release(r);
    }
    kd_tensor_release(m);
  }
  kd_tensor_release(a);
  /* max / argmax of one long row: the extreme in the last piece, ties across pieces, NaN */
  a = big_tensor(KD_FLOAT32, n, 1);
  set_f32(a, 10, 5.0f);
  set_f32(a, n - 10, 5.0f); /* a tie: the first index wins */
  set_f32(a, n / 2 + 3, -7.0f);
  set_f32(a, n - 1, -7.0f);
  KD_ASSERT_OK(kd_argmax(a, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){10}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_argmin(a, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){(double)(n / 2 + 3)}, 0);
  kd_tensor_release(r);
  set_f32(a, n - 2, 9.0f); /* only in the last piece */
  KD_ASSERT_OK(kd_max_dim(a, 0, false, &r, &r2));
  check(r, 0, NULL, KD_FLOAT32, (double[]){9}, 0);
  check(r2, 0, NULL, KD_INT64, (double[]){(double)(n - 2)}, 0);
  kd_tensor_release(r);
  kd_tensor_release(r2);
  KD_ASSERT_OK(kd_amax(a, NONE, false, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){9}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_min(a, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){-7}, 0);
  kd_tensor_release(r);
  set_f32(a, n / 2, NAN);
  set_f32(a, n - 5, NAN);
  KD_ASSERT_OK(kd_argmin(a, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){(double)(n / 2)}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_max(a, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){NAN}, 0);
  kd_tensor_release(r);
  KD_ASSERT_OK(kd_amin(a, NONE, true, &r));
  check(r, 1, (int64_t[]){1}, KD_FLOAT32, (double[]){NAN}, 0);
  kd_tensor_release(r);
  /* all / any: one exception at the end of the row */
  for (int64_t i = 0; i < n; i++) set_f32(a, i, 0.5f);
  KD_ASSERT_OK(kd_all(a, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(r);
  set_f32(a, n - 1, 0.0f);
  KD_ASSERT_OK(kd_all(a, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){0}, 0);
  kd_tensor_release(r);
  /* prod: ones, with -1 and 2 in different pieces */
  for (int64_t i = 0; i < n; i++) set_f32(a, i, 1.0f);
  set_f32(a, 3, -1.0f);
  set_f32(a, n - 3, 2.0f);
  KD_ASSERT_OK(kd_prod(a, NULL, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){-2}, 0);
  kd_tensor_release(r);
  for (int64_t i = 0; i < n; i++) set_f32(a, i, 0.0f);
  KD_ASSERT_OK(kd_any(a, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){0}, 0);
  kd_tensor_release(r);
  set_f32(a, n - 1, -0.5f);
  KD_ASSERT_OK(kd_any(a, &r));
  check(r, 0, NULL, KD_BOOL, (double[]){1}, 0);
  kd_tensor_release(r);
  kd_tensor_release(a);
  /* int64 argmax over a long row */
  kd_tensor *li = big_tensor(KD_INT32, n, 1000), *l = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(li, KD_INT64, &l));
  ((int64_t *)kd_tensor_data(l))[n - 7] = 5000;
  ((int64_t *)kd_tensor_data(l))[n - 3] = 5000;
  KD_ASSERT_OK(kd_argmax(l, NULL, false, &r));
  check(r, 0, NULL, KD_INT64, (double[]){(double)(n - 7)}, 0);
  kd_tensor_release(r);
  kd_tensor_release(l);
  kd_tensor_release(li);
  /* cumsum of long rows (rows over threads), exact in float64 for integers */
  kd_tensor *c = NULL;
  const int64_t csz[2] = {4, 100000};
  KD_ASSERT_OK(kd_tensor_empty(2, csz, KD_FLOAT64, kd_device_cpu(), &c));
  double *cp = kd_tensor_data(c);
  for (int64_t i = 0; i < 400000; i++) cp[i] = (double)(i % 13) - 6;
  KD_ASSERT_OK(kd_cumsum(c, 1, NULL, &r));
  const double *rp = kd_tensor_data(r);
  for (int64_t row = 0; row < 4; row++) {
    double acc = 0;
    for (int64_t i = 0; i < 100000; i++) {
      acc += cp[row * 100000 + i];
      if (rp[row * 100000 + i] != acc) fail_msg("cumsum row %lld at %lld", (long long)row, (long long)i);
    }
  }
  kd_tensor_release(r);
  kd_tensor_release(c);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

/* ---- columns: rows side by side give what each row gives alone ------------------------------------------ */

/* Reducing a [rows, cols] matrix over dim 0 reads its columns side by side;
 * each result must equal, bit for bit, the reduction of that column alone
 * (a strided 1-d view). cols > 64 and rows > 2048 cover the blocks of
 * columns and the pairwise halves. */
static void test_columns_match_rows(void **state) {
  (void)state;
  setup_ops();
  const int64_t rows = 3001, cols = 70;
  const kd_dtype dts[] = {KD_FLOAT32, KD_FLOAT64, KD_FLOAT16, KD_BFLOAT16, KD_INT16};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    kd_dtype dt = dts[k];
    kd_tensor *flat = big_tensor(KD_FLOAT64, rows * cols, 100), *f = NULL, *a = NULL;
    ((double *)kd_tensor_data(flat))[5 * cols + 3] = NAN;
    KD_ASSERT_OK(kd_tensor_to_dtype(flat, dt, &f));
    KD_ASSERT_OK(kd_tensor_as_strided(f, 2, (int64_t[]){rows, cols}, (int64_t[]){cols, 1}, 0, &a));
    kd_tensor *sum = NULL, *mx = NULL, *arg = NULL, *prod = NULL, *col = NULL, *r = NULL;
    KD_ASSERT_OK(kd_sum_dim_IntList(a, ints((int64_t[]){0}, 1), false, NULL, &sum));
    KD_ASSERT_OK(kd_max_dim(a, 0, false, &mx, &arg));
    KD_ASSERT_OK(kd_prod_dim_int(a, 0, false, NULL, &prod));
    for (int64_t j = 0; j < cols; j++) {
      KD_ASSERT_OK(kd_tensor_as_strided(f, 1, &rows, &cols, j, &col));
      const struct {
        kd_tensor *all;
        int which; /* 0 sum, 1 max, 2 argmax, 3 prod */
      } cases[] = {{sum, 0}, {mx, 1}, {arg, 2}, {prod, 3}};
      for (int c = 0; c < 4; c++) {
        kd_status st = cases[c].which == 0   ? kd_sum(col, NULL, &r)
                       : cases[c].which == 1 ? kd_amax(col, NONE, false, &r)
                       : cases[c].which == 2 ? kd_argmax(col, NULL, false, &r)
                                             : kd_prod(col, NULL, &r);
        KD_ASSERT_OK(st);
        size_t es = kd_dtype_size(kd_tensor_dtype(r));
        assert_int_equal(kd_tensor_dtype(r), kd_tensor_dtype(cases[c].all));
        const char *whole = (const char *)kd_tensor_data(cases[c].all) + (size_t)j * es;
        if (memcmp(whole, kd_tensor_data(r), es) != 0)
          fail_msg("%s column %lld, case %d: the columns together differ from the column alone",
                   kd_dtype_name(dt), (long long)j, c);
        kd_tensor_release(r);
      }
      kd_tensor_release(col);
    }
    kd_tensor_release(sum);
    kd_tensor_release(mx);
    kd_tensor_release(arg);
    kd_tensor_release(prod);
    kd_tensor_release(a);
    kd_tensor_release(f);
    kd_tensor_release(flat);
  }
}

/* ---- errors not seen above -------------------------------------------------------------------------------- */

static void *plain_alloc(void *ctx, kd_device device, size_t n) {
  (void)ctx, (void)device;
  return aligned_alloc(64, (n + 63) / 64 * 64);
}
static void plain_free(void *ctx, kd_device device, void *p, size_t n) {
  (void)ctx, (void)device, (void)n;
  free(p);
}

static void test_reduce_errors(void **state) {
  (void)state;
  setup_ops();
  kd_tensor *a = mk(2, (int64_t[]){2, 3}, KD_FLOAT32, (double[]){1, 2, 3, 4, 5, 6}), *r = NULL, *i = NULL;
  kd_tensor *c = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_COMPLEX64, kd_device_cpu(), &c));
  /* dims */
  KD_ASSERT_ERR(kd_sum_dim_IntList(a, ints((int64_t[]){-3}, 1), false, NULL, &r), KD_ERANGE,
                "sum: Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  KD_ASSERT_ERR(kd_amax(a, ints((int64_t[]){1, 0, -1}, 3), false, &r), KD_EINVAL,
                "amax(): dim 1 appears multiple times in the list of dims");
  KD_ASSERT_ERR(kd_mean_dim(a, ints((int64_t[]){-1, 1}, 2), false, NULL, &r), KD_EINVAL,
                "mean: dim 1 appears multiple times in the list of dims");
  KD_ASSERT_ERR(kd_max_dim(a, 2, false, &r, &i), KD_ERANGE,
                "max(): Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  KD_ASSERT_ERR(kd_any_dim(a, -3, false, &r), KD_ERANGE,
                "any: Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  KD_ASSERT_ERR(kd_cumsum(a, -3, NULL, &r), KD_ERANGE,
                "cumsum: Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  kd_tensor *s = mk(0, NULL, KD_FLOAT32, (double[]){2});
  KD_ASSERT_ERR(kd_sum_dim_IntList(s, ints((int64_t[]){0, -1}, 2), false, NULL, &r), KD_EINVAL,
                "sum: dim 0 appears multiple times in the list of dims");
  KD_ASSERT_ERR(kd_argmax(s, (int64_t[]){1}, false, &r), KD_ERANGE,
                "argmax(): Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  KD_ASSERT_OK(kd_amax(s, ints((int64_t[]){-1}, 1), true, &r));
  check(r, 0, NULL, KD_FLOAT32, (double[]){2}, 0);
  kd_tensor_release(r);
  kd_tensor_release(s);
  /* complex */
  KD_ASSERT_ERR(kd_amin(c, NONE, false, &r), KD_ETYPE,
                "amin(): does not support complex input (got complex64)");
  KD_ASSERT_ERR(kd_argmin(c, NULL, false, &r), KD_ETYPE,
                "argmin(): does not support complex input (got complex64)");
  KD_ASSERT_ERR(kd_min_dim(c, 0, false, &r, &i), KD_ETYPE,
                "min(): does not support complex input (got complex64)");
  KD_ASSERT_ERR(kd_max(c, &r), KD_ETYPE, "max(): does not support complex input (got complex64)");
  kd_dtype i32 = KD_INT32;
  KD_ASSERT_ERR(kd_mean(a, &i32, &r), KD_ETYPE,
                "mean(): could not infer output dtype. Optional dtype must be either a floating "
                "point or complex dtype. Got: int32");
  /* the functions themselves (the entry points check NULL and dtypes first) */
  kdk_structured st;
  kdk_structured_init(&st, "aten::sum.dim_IntList", KDK_STRUCTURED_FUNCTIONAL, 1, NULL, kd_device_cpu());
  kd_dtype bad = (kd_dtype)99;
  KD_ASSERT_ERR(kdk_meta_sum_dim_IntList(&st, NULL, NONE, false, NULL), KD_EINVAL, "sum: self is NULL");
  KD_ASSERT_ERR(kdk_meta_sum_dim_IntList(&st, a, NONE, false, &bad), KD_EINVAL, "sum: invalid dtype 99");
  KD_ASSERT_ERR(kdk_meta_sum_dim_IntList(&st, a, ints(NULL, 2), false, NULL), KD_EINVAL,
                "sum: NULL list of dims");
  KD_ASSERT_ERR(kdk_native_prod_all(NULL, NULL, &r), KD_EINVAL, "prod: self is NULL");
  KD_ASSERT_ERR(kdk_native_max_all(NULL, &r), KD_EINVAL, "max(): self is NULL");
  kdk_structured_release(&st, NULL);
  /* a tensor on a device the cpu kernels do not serve */
  kd_allocator al = {KD_ALLOCATOR_API_VERSION, plain_alloc, plain_free, NULL, NULL, NULL};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE3, &al));
  kd_tensor *p = NULL, *o = NULL;
  kd_device pd = {KD_DEVICE_PRIVATEUSE3, 0};
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, pd, &p));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, kd_device_cpu(), &o));
  char want[128];
  snprintf(want, sizeof want, "prod: the cpu kernel got a tensor on device '%s'",
           kd_device_type_name(KD_DEVICE_PRIVATEUSE3));
  KD_ASSERT_ERR(kdk_native_prod_all(p, NULL, &r), KD_EUNSUPPORTED, want);
  snprintf(want, sizeof want, "cumsum: the cpu kernel got a tensor on device '%s'",
           kd_device_type_name(KD_DEVICE_PRIVATEUSE3));
  KD_ASSERT_ERR(kdk_native_cumsum_out_cpu(NULL, p, 0, NULL, o), KD_EUNSUPPORTED, want);
  kd_tensor_release(p);
  kd_tensor_release(o);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE3, NULL));
  /* the stubs refuse dtypes without a loop (the metas never let them through) */
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, c, NULL, 0, false, KD_DTYPE_UNDEFINED));
  KD_ASSERT_ERR(KD_STUB(reduce_stub)(&it, KDK_REDUCE_MAX), KD_ETYPE,
                "\"max_values_cpu\" not implemented for 'complex64'");
  kdk_iter_release(&it);
  kd_tensor *l = mk(1, (int64_t[]){2}, KD_INT64, (double[]){1, 2});
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, l, NULL, 0, false, KD_DTYPE_UNDEFINED));
  KD_ASSERT_ERR(KD_STUB(reduce_stub)(&it, KDK_REDUCE_MEAN), KD_ETYPE,
                "\"mean_cpu\" not implemented for 'int64'");
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  kdk_iter_add_output(&it, NULL);
  kdk_iter_add_input(&it, l);
  kdk_iter_declare_static_dtype(&it, KD_FLOAT32);
  kdk_iter_check_all_same_dtype(&it, false);
  kdk_iter_set_row_dim(&it, 0);
  KD_ASSERT_OK(kdk_iter_build(&it));
  KD_ASSERT_ERR(KD_STUB(cumsum_stub)(&it), KD_ETYPE,
                "cumsum_cpu: the output (float32) and the input (int64) differ in dtype");
  kdk_iter_release(&it);
  kd_tensor_release(l);
  kd_tensor_release(c);
  kd_tensor_release(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_views), cmocka_unit_test(test_out_variants),
      cmocka_unit_test(test_int_bool),         cmocka_unit_test(test_zero_size_more),
      cmocka_unit_test(test_threads_large),    cmocka_unit_test(test_columns_match_rows),
      cmocka_unit_test(test_reduce_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
