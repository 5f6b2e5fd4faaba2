/*
 * test_ops_capabilities.c: every CPU capability gives identical results.
 *
 * Run with --dump, the program computes a fixed set of operators (pointwise,
 * reductions, fills, on every dtype, at a ragged length and at a length that
 * runs on threads) and prints one line per result: its name and a hash of its
 * elements. The test runs itself with --dump under each KD_CPU_CAPABILITY
 * and requires the same lines. NaNs hash alike whatever their payload and
 * sign (a SIMD kernel may produce another NaN); every other bit counts.
 */
#include <math.h>

#include "kd_test.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static const char *self_path;

/* ---- --dump ---------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* A hash of t's values and sizes (contiguous float64 / complex128 / int64 copy). */
static void emit(const char *name, kd_status st, kd_tensor *t) {
  if (st != KD_OK) {
    printf("%s error %s\n", name, kd_status_name(st));
    return;
  }
  kd_dtype dt = kd_tensor_dtype(t);
  kd_dtype wide = kd_dtype_is_complex(dt) ? KD_COMPLEX128
                  : kd_dtype_is_floating(dt) ? KD_FLOAT64 : KD_INT64;
  kd_tensor *w = NULL, *c = NULL;
  if (kd_tensor_to_dtype(t, wide, &w) || kd_contiguous(w, KD_MEMORY_FORMAT_CONTIGUOUS, &c)) {
    printf("%s convert-error\n", name);
    kd_tensor_release(w);
    kd_tensor_release(t);
    return;
  }
  uint64_t h = 14695981039346656037ull;
  h = fnv(h, kd_tensor_sizes(c), (size_t)kd_tensor_ndim(c) * sizeof(int64_t));
  int64_t n = kd_tensor_numel(c) * (wide == KD_COMPLEX128 ? 2 : 1);
  if (wide == KD_INT64) {
    h = fnv(h, kd_tensor_data(c), (size_t)n * sizeof(int64_t));
  } else {
    const double *d = kd_tensor_data(c);
    for (int64_t i = 0; i < n; i++) {
      double v = isnan(d[i]) ? NAN : d[i];
      if (isnan(v)) v = fabs(v);
      h = fnv(h, &v, sizeof v);
    }
  }
  printf("%s %s %016llx\n", name, kd_dtype_name(dt), (unsigned long long)h);
  kd_tensor_release(c);
  kd_tensor_release(w);
  kd_tensor_release(t);
}

/* (the call runs before r is read: argument order is unspecified in C) */
#define EMIT(name, call)            \
  do {                              \
    kd_status emit_st_ = (call);    \
    emit(name, emit_st_, r);        \
  } while (0)

static uint64_t lcg_state;
static double lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(lcg_state >> 11) / 9007199254740992.0; /* [0, 1) */
}

/* n values of dtype dt: uniform in [lo, hi) (rounded for integers), with a few
 * specials (0, -0, inf, nan) sprinkled into floating dtypes. */
static kd_tensor *make(kd_dtype dt, int64_t n, double lo, double hi, bool specials) {
  bool cplx = kd_dtype_is_complex(dt);
  double *v = malloc((size_t)n * (cplx ? 2 : 1) * sizeof *v);
  for (int64_t i = 0; i < n * (cplx ? 2 : 1); i++) {
    double x = lo + (hi - lo) * lcg();
    if (!kd_dtype_is_floating(dt) && !cplx) x = floor(x);
    if (!specials && !kd_dtype_is_floating(dt) && !cplx && x == 0) x = 1; /* divisors */
    v[i] = x;
  }
  if (specials && kd_dtype_is_floating(dt) && n > 8) {
    v[1] = 0, v[3] = -0.0, v[5] = INFINITY, v[6] = -INFINITY, v[7] = NAN;
  }
  kd_tensor *t = NULL, *c = NULL;
  kd_status st = kd_tensor_from_data(1, &n, cplx ? KD_COMPLEX128 : KD_FLOAT64, v, &t);
  if (!st) st = kd_tensor_to_dtype(t, dt, &c);
  if (st) {
    fprintf(stderr, "make %s: %s\n", kd_dtype_name(dt), kd_last_error());
    exit(2);
  }
  kd_tensor_release(t);
  free(v);
  return c;
}

typedef kd_status (*un_fn)(kd_tensor *, kd_tensor **);
static kd_status u_gelu(kd_tensor *a, kd_tensor **o) { return kd_gelu(a, "none", o); }
static kd_status u_gelu_tanh(kd_tensor *a, kd_tensor **o) { return kd_gelu(a, "tanh", o); }
static kd_status u_sum(kd_tensor *a, kd_tensor **o) { return kd_sum(a, NULL, o); }
static kd_status u_mean(kd_tensor *a, kd_tensor **o) { return kd_mean(a, NULL, o); }
static kd_status u_prod(kd_tensor *a, kd_tensor **o) { return kd_prod(a, NULL, o); }
static kd_status u_max(kd_tensor *a, kd_tensor **o) { return kd_max(a, o); }
static kd_status u_argmax(kd_tensor *a, kd_tensor **o) { return kd_argmax(a, NULL, false, o); }
static kd_status u_cumsum(kd_tensor *a, kd_tensor **o) { return kd_cumsum(a, 0, NULL, o); }
static kd_status u_softmax(kd_tensor *a, kd_tensor **o) { return kd_softmax_int(a, 0, NULL, o); }
static kd_status u_log_softmax(kd_tensor *a, kd_tensor **o) { return kd_log_softmax_int(a, 0, NULL, o); }
static const struct {
  const char *name;
  un_fn fn;
} UNARY[] = {
    {"abs", kd_abs},         {"neg", kd_neg},         {"exp", kd_exp},
    {"log", kd_log},         {"sqrt", kd_sqrt},       {"rsqrt", kd_rsqrt},
    {"tanh", kd_tanh},       {"sigmoid", kd_sigmoid}, {"sin", kd_sin},
    {"cos", kd_cos},         {"erf", kd_erf},         {"expm1", kd_expm1},
    {"log1p", kd_log1p},     {"reciprocal", kd_reciprocal}, {"relu", kd_relu},
    {"floor", kd_floor},     {"ceil", kd_ceil},       {"round", kd_round},
    {"sign", kd_sign},       {"gelu", u_gelu},        {"gelu_tanh", u_gelu_tanh},
    {"bitwise_not", kd_bitwise_not}, {"logical_not", kd_logical_not},
    {"sum", u_sum},          {"mean", u_mean},        {"prod", u_prod},
    {"max", u_max},          {"argmax", u_argmax},    {"cumsum", u_cumsum},
    {"softmax", u_softmax},  {"log_softmax", u_log_softmax},
};

typedef kd_status (*bin_fn)(kd_tensor *, kd_tensor *, kd_tensor **);
static kd_status b_add(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  kd_scalar alpha = kd_scalar_int(3);
  return kd_add_Tensor(a, b, &alpha, o);
}
static kd_status b_sub(kd_tensor *a, kd_tensor *b, kd_tensor **o) { return kd_sub_Tensor(a, b, NULL, o); }
static kd_status b_floor(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  return kd_div_Tensor_mode(a, b, "floor", o);
}
static kd_status b_trunc(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  return kd_div_Tensor_mode(a, b, "trunc", o);
}
static kd_status b_clamp(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  return kd_clamp_Tensor(a, b, NULL, o);
}
static kd_status b_adds(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  (void)b;
  kd_scalar s = kd_scalar_double(0.3);
  return kd_add_Scalar(a, &s, NULL, o);
}
static kd_status b_muls(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  (void)b;
  kd_scalar s = kd_scalar_int(-7);
  return kd_mul_Scalar(a, &s, o);
}
static kd_status b_clamps(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  (void)b;
  kd_scalar lo = kd_scalar_int(-2), hi = kd_scalar_int(5);
  return kd_clamp(a, &lo, &hi, o);
}
static kd_status b_pows(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  (void)b;
  kd_scalar e = kd_scalar_int(2);
  return kd_pow_Tensor_Scalar(a, &e, o);
}
static kd_status b_where(kd_tensor *a, kd_tensor *b, kd_tensor **o) {
  kd_tensor *m = NULL;
  kd_status st = kd_lt_Tensor(a, b, &m);
  if (!st) st = kd_where_self(m, a, b, o);
  kd_tensor_release(m);
  return st;
}
static const struct {
  const char *name;
  bin_fn fn;
} BINARY[] = {
    {"add", b_add},          {"sub", b_sub},           {"mul", kd_mul_Tensor},
    {"div", kd_div_Tensor},  {"div_floor", b_floor},   {"div_trunc", b_trunc},
    {"remainder", kd_remainder_Tensor},                {"pow", kd_pow_Tensor_Tensor},
    {"maximum", kd_maximum}, {"minimum", kd_minimum},  {"atan2", kd_atan2},
    {"bitwise_and", kd_bitwise_and_Tensor},            {"bitwise_xor", kd_bitwise_xor_Tensor},
    {"lshift", kd_bitwise_left_shift_Tensor},          {"rshift", kd_bitwise_right_shift_Tensor},
    {"eq", kd_eq_Tensor},    {"lt", kd_lt_Tensor},     {"ge", kd_ge_Tensor},
    {"logical_and", kd_logical_and},                   {"clamp_min", b_clamp},
    {"add_scalar", b_adds},  {"mul_scalar", b_muls},   {"clamp_scalar", b_clamps},
    {"pow_scalar", b_pows},  {"where", b_where},
};

static int dump(void) {
  if (kd_ops_open()) return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("capability %s\n", kd_cpu_capability());
  const kd_dtype dts[] = {KD_BOOL, KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64, KD_FLOAT16,
                          KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128};
  const int64_t lens[] = {1037, 70001};
  char name[128];
  for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
      kd_dtype dt = dts[d];
      lcg_state = 12345 + d * 77 + l;
      double lo = dt == KD_BOOL ? 0 : dt == KD_UINT8 ? 0 : -40;
      double hi = dt == KD_BOOL ? 2 : 40;
      kd_tensor *a = make(dt, lens[l], lo, hi, true), *b = make(dt, lens[l], lo, hi, false);
      kd_tensor *sa = make(dt, lens[l], -1.5, 1.5, false); /* small: prod, exp stay finite */
      for (size_t k = 0; k < sizeof UNARY / sizeof *UNARY; k++) {
        kd_tensor *r = NULL;
        snprintf(name, sizeof name, "%s/%s/%lld", UNARY[k].name, kd_dtype_name(dt), (long long)lens[l]);
        EMIT(name, UNARY[k].fn(a, &r));
        r = NULL;
        snprintf(name, sizeof name, "%s-small/%s/%lld", UNARY[k].name, kd_dtype_name(dt),
                 (long long)lens[l]);
        EMIT(name, UNARY[k].fn(sa, &r));
      }
      for (size_t k = 0; k < sizeof BINARY / sizeof *BINARY; k++) {
        kd_tensor *r = NULL;
        snprintf(name, sizeof name, "%s/%s/%lld", BINARY[k].name, kd_dtype_name(dt), (long long)lens[l]);
        EMIT(name, BINARY[k].fn(a, b, &r));
      }
      /* a strided operand and a broadcast one */
      int64_t half = lens[l] / 2;
      kd_tensor *sv = NULL, *b1 = NULL, *r = NULL;
      if (!kd_tensor_as_strided(a, 1, &half, (int64_t[]){2}, 1, &sv) &&
          !kd_tensor_as_strided(b, 1, &half, (int64_t[]){0}, 3, &b1)) {
        snprintf(name, sizeof name, "strided-mul/%s/%lld", kd_dtype_name(dt), (long long)lens[l]);
        EMIT(name, kd_mul_Tensor(sv, b1, &r));
        r = NULL;
        snprintf(name, sizeof name, "strided-sum/%s/%lld", kd_dtype_name(dt), (long long)lens[l]);
        EMIT(name, kd_sum(sv, NULL, &r));
      }
      kd_tensor_release(sv), kd_tensor_release(b1);
      /* fills */
      kd_scalar fv = kd_scalar_double(1.25);
      r = NULL;
      snprintf(name, sizeof name, "full/%s/%lld", kd_dtype_name(dt), (long long)lens[l]);
      EMIT(name, kd_full((kd_ints){&lens[l], 1}, &fv, &dt, NULL, NULL, NULL, &r));
      kd_tensor_release(a), kd_tensor_release(b), kd_tensor_release(sa);
    }
  return 0;
}

/* ---- The test ---------------------------------------------------------------------- */

static char *run_dump(const char *cap) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "KD_CPU_CAPABILITY=%s '%s' --dump 2>/dev/null", cap, self_path);
  int status = 0;
  char *out = kd_test_run(cmd, &status);
  if (status != 0) fail_msg("%s exited with %d", cmd, status);
  return out;
}

static void test_capabilities_identical(void **state) {
  (void)state;
  char *ref = run_dump("default");
  assert_non_null(strstr(ref, "capability default\n"));
  const char *caps[] = {"avx2", "avx512"};
  int bad = 0;
  for (size_t c = 0; c < 2; c++) {
    char *got = run_dump(caps[c]);
    /* line by line, skipping the first (the capability's name) */
    char *rs = NULL, *gs = NULL;
    char *rl = strtok_r(ref, "\n", &rs), *gl = strtok_r(got, "\n", &gs);
    print_message("%s: %s\n", caps[c], gl ? gl : "(nothing)");
    int lines = 0;
    for (rl = strtok_r(NULL, "\n", &rs), gl = strtok_r(NULL, "\n", &gs); rl || gl;
         rl = strtok_r(NULL, "\n", &rs), gl = strtok_r(NULL, "\n", &gs)) {
      lines++;
      if (!rl || !gl || strcmp(rl, gl) != 0) {
        if (bad++ < 40) print_message("  default: %s\n  %-7s: %s\n", rl ? rl : "-", caps[c], gl ? gl : "-");
      }
    }
    assert_true(lines > 500);
    free(got);
    free(ref);
    ref = run_dump("default"); /* strtok_r consumed it */
  }
  free(ref);
  assert_int_equal(bad, 0);
}

int main(int argc, char **argv) {
  self_path = argv[0];
  if (argc > 1 && strcmp(argv[1], "--dump") == 0) return dump();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_capabilities_identical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
