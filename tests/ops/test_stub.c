/* Dispatch stubs and the CPU capability (ops/src/stub.h), and the fill stub.
 * CTest runs this program also with KD_CPU_CAPABILITY=default, avx2, avx512
 * and bogus. */
#include <stdlib.h>
#include <strings.h>

#include "fill.h"
#include "kd_test.h"
#include "stub.h"

static int warning_count;
static char warning_last[1024];

static void on_warning(const char *message, void *user) {
  (void)user;
  warning_count++;
  snprintf(warning_last, sizeof warning_last, "%s", message);
}

/* What the processor supports, asked independently of the library. */
static bool cpu_has(kdk__cpu_cap cap) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (cap == KDK__CPU_CAP_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (cap == KDK__CPU_CAP_AVX512)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return cap == KDK__CPU_CAP_DEFAULT;
#else
  return cap == KDK__CPU_CAP_DEFAULT; /* only DEFAULT is built elsewhere */
#endif
}

static kdk__cpu_cap best_cap(void) {
  for (int c = KDK__CPU_CAP_COUNT - 1; c > 0; c--)
    if (cpu_has((kdk__cpu_cap)c)) return (kdk__cpu_cap)c;
  return KDK__CPU_CAP_DEFAULT;
}

static void test_capability(void **state) {
  (void)state;
  const char *env = getenv("KD_CPU_CAPABILITY");
  kdk__cpu_cap best = best_cap();
  kdk__cpu_cap expect = best;
  bool should_warn = false;
  if (env && *env) {
    int want = -1;
    for (int c = 0; c < KDK__CPU_CAP_COUNT; c++)
      if (!strcasecmp(env, kdk__cpu_capability_name((kdk__cpu_cap)c))) want = c;
    if (want >= 0 && cpu_has((kdk__cpu_cap)want))
      expect = (kdk__cpu_cap)want;
    else
      should_warn = true;
  }
  assert_int_equal(kdk__cpu_capability_best(), best);
  KD_ASSERT_STR_EQ(kd_cpu_capability(), kdk__cpu_capability_name(expect));
  assert_int_equal(kdk__cpu_capability_get(), expect);
#if defined(__x86_64__)
  /* This project's build machines have AVX-512. */
  if (!env || !*env) {
    if (cpu_has(KDK__CPU_CAP_AVX512)) KD_ASSERT_STR_EQ(kd_cpu_capability(), "avx512");
  }
#endif
  /* The choice is made once: asking again (or using stubs) warns no more. */
  for (int i = 0; i < 3; i++) kd_cpu_capability();
  assert_non_null(KD_STUB(fill_stub));
  assert_int_equal(warning_count, should_warn ? 1 : 0);
  if (should_warn) {
    char expected[256];
    if (!strcasecmp(env, "default") || !strcasecmp(env, "avx2") || !strcasecmp(env, "avx512"))
      snprintf(expected, sizeof expected,
               "KD_CPU_CAPABILITY=%s: this processor does not support %s; using %s", env, env,
               kdk__cpu_capability_name(best));
    else
      snprintf(expected, sizeof expected,
               "KD_CPU_CAPABILITY='%s' is not one of default, avx2, avx512; using %s", env,
               kdk__cpu_capability_name(best));
    KD_ASSERT_STR_EQ(warning_last, expected);
  }
}

static void test_pick(void **state) {
  (void)state;
  kdk_stub_fn a = (kdk_stub_fn)test_pick, b = (kdk_stub_fn)test_capability;
  kdk_stub_fn only_default[3] = {a, NULL, NULL};
  kdk_stub_fn all[3] = {a, b, a};
  kdk_stub_fn no_default[3] = {NULL, b, NULL};
  assert_ptr_equal(kdk__stub_pick(only_default, KDK__CPU_CAP_AVX512), a);
  assert_ptr_equal(kdk__stub_pick(only_default, KDK__CPU_CAP_DEFAULT), a);
  assert_ptr_equal(kdk__stub_pick(all, KDK__CPU_CAP_AVX2), b);
  assert_ptr_equal(kdk__stub_pick(no_default, KDK__CPU_CAP_AVX512), b);
  assert_null(kdk__stub_pick(no_default, KDK__CPU_CAP_DEFAULT)); /* never a higher one */
  assert_null(kdk__stub_pick(all, (kdk__cpu_cap)7));
  KD_ASSERT_STR_EQ(kdk__cpu_capability_name((kdk__cpu_cap)7), "invalid");
}

/* A stub of this test, with kernels for DEFAULT and AVX2 only. */
typedef int test_fn(int x);
static int k_default(int x) { return x + 1; }
static int k_avx2(int x) { return x + 2; }
static void test_candidates(kdk_stub_fn *c) {
  c[KDK__CPU_CAP_DEFAULT] = (kdk_stub_fn)k_default;
  c[KDK__CPU_CAP_AVX2] = (kdk_stub_fn)k_avx2;
}
static kdk_stub test_stub = {.name = "test_stub", .candidates = test_candidates};

static void test_lower_capability(void **state) {
  (void)state;
  assert_null(atomic_load(&test_stub.cpu));
  test_fn *f = (test_fn *)kdk_stub_get(&test_stub, KD_DEVICE_CPU, NULL);
  int expect = kdk__cpu_capability_get() >= KDK__CPU_CAP_AVX2 ? 2 : 1;
  assert_int_equal(f(10), 10 + expect);
  assert_ptr_equal((kdk_stub_fn)f, atomic_load(&test_stub.cpu)); /* published */
  assert_ptr_equal((test_fn *)kdk_stub_get(&test_stub, KD_DEVICE_CPU, NULL), f);
  /* The fill stub runs the chosen capability's own kernel. */
  kdk_fill_fn *const kernels[3] = {kdk__stub_fill_stub_DEFAULT, kdk__stub_fill_stub_AVX2,
                                   kdk__stub_fill_stub_AVX512};
  assert_ptr_equal(KD_STUB(fill_stub), kernels[kdk__cpu_capability_get()]);
}

/* ---- fill ------------------------------------------------------------------------ */

static const kd_dtype all_dtypes[] = {KD_BOOL,    KD_UINT8,   KD_INT8,    KD_INT16,
                                      KD_INT32,   KD_INT64,   KD_FLOAT16, KD_BFLOAT16,
                                      KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};

/* Fills a view of a sentinel-filled base with `kernel`; checks that exactly
 * the view's elements hold the value's bytes. Returns base's bytes (malloc'd). */
static unsigned char *fill_view(kdk_fill_fn *kernel, kd_dtype dt, const kd_scalar *value,
                                int64_t base_numel, int64_t offset, int ndim,
                                const int64_t *sizes, const int64_t *strides) {
  size_t w = kd_dtype_size(dt);
  kd_tensor *base, *view;
  KD_ASSERT_OK(kd_tensor_empty(1, &base_numel, dt, kd_device_cpu(), &base));
  memset(kd_tensor_data(base), 0xA5, (size_t)base_numel * w);
  KD_ASSERT_OK(kd_tensor_as_strided(base, ndim, sizes, strides, offset, &view));
  KD_ASSERT_OK(kernel(view, value));
  unsigned char elem[16];
  KD_ASSERT_OK(kd_scalar_to_element(value, dt, elem));
  /* Which elements the view covers. */
  bool *hit = calloc((size_t)base_numel, 1);
  int64_t index[KD_MAX_DIMS] = {0};
  int64_t numel = kd_tensor_numel(view);
  for (int64_t n = 0; n < numel; n++) {
    int64_t off = offset;
    for (int d = 0; d < ndim; d++) off += index[d] * strides[d];
    hit[off] = true;
    for (int d = ndim - 1; d >= 0; d--) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  const unsigned char *bytes = kd_tensor_data(base);
  for (int64_t e = 0; e < base_numel; e++) {
    for (size_t k = 0; k < w; k++) {
      unsigned char want = hit[e] ? elem[k] : 0xA5;
      if (bytes[(size_t)e * w + k] != want)
        fail_msg("%s: element %lld byte %zu is %#x, expected %#x", kd_dtype_name(dt),
                 (long long)e, k, bytes[(size_t)e * w + k], want);
    }
  }
  unsigned char *copy = malloc((size_t)base_numel * w);
  memcpy(copy, bytes, (size_t)base_numel * w);
  free(hit);
  kd_tensor_release(view);
  kd_tensor_release(base);
  return copy;
}

typedef struct fill_case {
  int64_t base_numel, offset;
  int ndim;
  int64_t sizes[4], strides[4];
} fill_case;

static const fill_case fill_cases[] = {
    {37, 0, 1, {37}, {1}},                     /* contiguous, odd length */
    {1000, 3, 2, {7, 11}, {11, 1}},            /* contiguous with an offset */
    {24, 0, 3, {2, 3, 4}, {1, 2, 6}},          /* fully transposed */
    {50, 1, 2, {4, 5}, {12, 2}},               /* every other element, gaps between rows */
    {10, 2, 3, {3, 1, 4}, {0, 9, 1}},          /* expanded (stride 0), a size-1 dim */
    {5, 4, 0, {0}, {0}},                       /* 0-dim */
    {5, 0, 2, {3, 0}, {1, 1}},                 /* no elements */
    {300, 0, 4, {2, 3, 2, 5}, {150, 50, 25, 5}}, /* outer dims merge, inner stride 5 */
};

static kd_scalar value_for(kd_dtype dt, int n) {
  switch (kd_dtype_kind_of(dt)) {
  case KD_KIND_BOOL:
    return kd_scalar_bool(true);
  case KD_KIND_UINT:
  case KD_KIND_INT:
    return kd_scalar_int(n % 2 ? -3 + 100 * (dt != KD_INT8) : 77);
  case KD_KIND_FLOAT:
    return kd_scalar_double(n % 2 ? -2.75 : 1.0 / 3.0);
  default:
    return kd_scalar_complex(1.5, n % 2 ? -0.25 : 3.0);
  }
}

static void test_fill(void **state) {
  (void)state;
  kdk_fill_fn *const kernels[3] = {kdk__stub_fill_stub_DEFAULT, kdk__stub_fill_stub_AVX2,
                                   kdk__stub_fill_stub_AVX512};
  kdk_fill_fn *chosen = KD_STUB(fill_stub);
  for (size_t d = 0; d < sizeof all_dtypes / sizeof *all_dtypes; d++) {
    kd_dtype dt = all_dtypes[d];
    for (size_t c = 0; c < sizeof fill_cases / sizeof *fill_cases; c++) {
      const fill_case *fc = &fill_cases[c];
      kd_scalar v = value_for(dt, (int)c);
      size_t nbytes = (size_t)fc->base_numel * kd_dtype_size(dt);
      unsigned char *want =
          fill_view(chosen, dt, &v, fc->base_numel, fc->offset, fc->ndim, fc->sizes, fc->strides);
      /* Every capability this processor can run gives the same bytes. */
      for (int k = 0; k < KDK__CPU_CAP_COUNT; k++) {
        if (!cpu_has((kdk__cpu_cap)k)) continue;
        unsigned char *got = fill_view(kernels[k], dt, &v, fc->base_numel, fc->offset, fc->ndim,
                                       fc->sizes, fc->strides);
        if (memcmp(got, want, nbytes) != 0)
          fail_msg("fill %s case %zu: %s differs from %s", kd_dtype_name(dt), c,
                   kdk__cpu_capability_name((kdk__cpu_cap)k), kd_cpu_capability());
        free(got);
      }
      free(want);
    }
  }
}

static void test_fill_values(void **state) {
  (void)state;
  kdk_fill_fn *fill = KD_STUB(fill_stub);
  kd_tensor *t;
  kd_scalar got;
  /* float16 / bfloat16 round to nearest even. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){9}, KD_FLOAT16, kd_device_cpu(), &t));
  KD_ASSERT_OK(fill(t, &(kd_scalar){KD_SCALAR_DOUBLE, {.d = 0.1}}));
  assert_int_equal(((uint16_t *)kd_tensor_data(t))[8], kd_float_to_half(0.1f));
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){9}, KD_BFLOAT16, kd_device_cpu(), &t));
  KD_ASSERT_OK(fill(t, &(kd_scalar){KD_SCALAR_INT, {.i = 3}}));
  assert_int_equal(((uint16_t *)kd_tensor_data(t))[4], kd_float_to_bfloat16(3.0f));
  kd_tensor_release(t);
  /* Complex: both parts; bool: non-zero is true. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_COMPLEX64, kd_device_cpu(), &t));
  kd_scalar z = kd_scalar_complex(1.5, -2.0);
  KD_ASSERT_OK(fill(t, &z));
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){2}, &got));
  assert_true(got.kind == KD_SCALAR_COMPLEX && got.v.c.re == 1.5 && got.v.c.im == -2.0);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_BOOL, kd_device_cpu(), &t));
  kd_scalar half = kd_scalar_double(0.5);
  KD_ASSERT_OK(fill(t, &half));
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){1}, &got));
  assert_true(got.kind == KD_SCALAR_BOOL && got.v.b);
  kd_tensor_release(t);

  /* Values that do not fit: an error, nothing written. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_INT8, kd_device_cpu(), &t));
  memset(kd_tensor_data(t), 7, 4);
  kd_scalar big = kd_scalar_int(300);
  KD_ASSERT_ERR(fill(t, &big), KD_EOVERFLOW, "300 cannot be converted to type int8");
  assert_int_equal(((int8_t *)kd_tensor_data(t))[3], 7);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, kd_device_cpu(), &t));
  KD_ASSERT_ERR(fill(t, &z), KD_ETYPE, "");
  kd_tensor_release(t);

  /* Meta: nothing to write. NULL arguments. */
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &t));
  KD_ASSERT_OK(fill(t, &half));
  KD_ASSERT_ERR(fill(t, NULL), KD_EINVAL, "fill_: NULL argument");
  kd_tensor_release(t);
}

int main(void) {
  /* Before anything picks the capability: its warning must be seen. */
  kd_set_warning_handler(on_warning, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capability), cmocka_unit_test(test_pick),
      cmocka_unit_test(test_lower_capability), cmocka_unit_test(test_fill),
      cmocka_unit_test(test_fill_values),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  kd_set_warning_handler(NULL, NULL);
  return rc;
}
