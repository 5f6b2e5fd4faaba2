/*
 * kdops_five.c: a static program that uses five of libkdops' operators (add,
 * mul, relu, sum, mm on float32), for the selective build of libkdops
 * (docs/GUIDE.md section 8, kd_add_selective_kdops in ops/CMakeLists.txt).
 *
 * tests/selective/CMakeLists.txt links it twice, statically:
 *   kdops-five-whole      against libkdops as it is (kdops_static);
 *   kdops-five-selective  against the libkdops that kd_add_selective_kdops
 *                         builds from the allow-list `kd trace` writes from a
 *                         run of kdops-five-whole.
 *
 *   kdops-five-*               runs the five operators and checks every
 *                              result against the same arithmetic done here
 *                              in C; exit 0 when all agree, 1 otherwise
 *   kdops-five-* --absent      calls what the run above does not: neg (an
 *                              operator) and add on float64 (a dtype); exit 0
 *                              when both fail as a selective build must
 *                              (KD_ENOKERNEL naming neg and CPU; KD_EUNSUPPORTED
 *                              naming float64), 1 when either runs (as it
 *                              does against the whole libkdops) or fails
 *                              otherwise
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kd/kd.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

#define N 6

static int failures;

static void check(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "kdops-five: %s\n", what);
    failures++;
  }
}

static bool ok_or_report(kd_status st, const char *what) {
  if (st == KD_OK) return true;
  fprintf(stderr, "kdops-five: %s failed: %s: %s\n", what, kd_status_name(st), kd_last_error());
  failures++;
  return false;
}

/* A cpu tensor of dtype dt, sizes (n0) or (n0, n1), holding v (row-major). */
static kd_tensor *make(kd_dtype dt, int ndim, int64_t n0, int64_t n1, const double *v) {
  int64_t sizes[2] = {n0, n1};
  kd_tensor *t = NULL;
  if (!ok_or_report(kd_tensor_empty(ndim, sizes, dt, kd_device_cpu(), &t), "kd_tensor_empty"))
    return NULL;
  for (int64_t k = 0; k < n0 * (ndim == 2 ? n1 : 1); k++) {
    int64_t idx[2] = {ndim == 2 ? k / n1 : k, k % (n1 ? n1 : 1)};
    kd_scalar s = kd_scalar_double(v[k]);
    if (!ok_or_report(kd_tensor_set(t, idx, &s), "kd_tensor_set")) {
      kd_tensor_release(t);
      return NULL;
    }
  }
  return t;
}

/* Element k (row-major) of t as a double. */
static double at(const kd_tensor *t, int64_t k) {
  int64_t idx[2] = {k, 0};
  if (kd_tensor_ndim(t) == 2) {
    idx[0] = k / kd_tensor_size(t, 1);
    idx[1] = k % kd_tensor_size(t, 1);
  }
  kd_scalar s;
  if (kd_tensor_get(t, kd_tensor_ndim(t) ? idx : NULL, &s) != KD_OK) return NAN;
  return kd_scalar_to_double(&s);
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-5 * (1 + fabs(b)); }

static int run(void) {
  const double xs[N] = {-1.5, 0.5, 2, -3, 4.25, 0}, ys[N] = {2, 4, -1, 0.5, -2, 7};
  kd_tensor *x = make(KD_FLOAT32, 1, N, 0, xs), *y = make(KD_FLOAT32, 1, N, 0, ys);
  /* x as 2x3 and y as 3x2 for mm */
  kd_tensor *a = make(KD_FLOAT32, 2, 2, 3, xs), *b = make(KD_FLOAT32, 2, 3, 2, ys);
  kd_tensor *sum_xy = NULL, *prod = NULL, *r = NULL, *s = NULL, *m = NULL;
  if (!x || !y || !a || !b) goto done;

  if (ok_or_report(kd_add_Tensor(x, y, NULL, &sum_xy), "add"))
    for (int k = 0; k < N; k++) check(near(at(sum_xy, k), (float)xs[k] + (float)ys[k]), "add: wrong value");
  if (ok_or_report(kd_mul_Tensor(x, y, &prod), "mul"))
    for (int k = 0; k < N; k++) check(near(at(prod, k), (float)xs[k] * (float)ys[k]), "mul: wrong value");
  if (ok_or_report(kd_relu(x, &r), "relu"))
    for (int k = 0; k < N; k++) check(near(at(r, k), xs[k] > 0 ? xs[k] : 0), "relu: wrong value");
  if (ok_or_report(kd_sum(x, NULL, &s), "sum")) {
    double want = 0;
    for (int k = 0; k < N; k++) want += xs[k];
    check(kd_tensor_ndim(s) == 0 && near(at(s, 0), want), "sum: wrong value");
  }
  if (ok_or_report(kd_mm(a, b, &m), "mm")) {
    check(kd_tensor_ndim(m) == 2 && kd_tensor_size(m, 0) == 2 && kd_tensor_size(m, 1) == 2,
          "mm: wrong sizes");
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        double want = 0;
        for (int k = 0; k < 3; k++) want += xs[i * 3 + k] * ys[k * 2 + j];
        check(near(at(m, i * 2 + j), want), "mm: wrong value");
      }
  }
done:
  kd_tensor_release(x);
  kd_tensor_release(y);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(sum_xy);
  kd_tensor_release(prod);
  kd_tensor_release(r);
  kd_tensor_release(s);
  kd_tensor_release(m);
  if (!failures) printf("kdops-five: add, mul, relu, sum, mm agree\n");
  return failures ? 1 : 0;
}

/* `st` must be `want` with a message holding both needles. */
static void expect_failure(kd_status st, kd_status want, const char *n1, const char *n2,
                           const char *what) {
  const char *msg = kd_last_error();
  if (st == want && strstr(msg, n1) && strstr(msg, n2)) {
    printf("kdops-five: %s: %s: %s\n", what, kd_status_name(st), msg);
    return;
  }
  fprintf(stderr, "kdops-five: %s: got %s (%s), expected %s naming '%s' and '%s'\n", what,
          kd_status_name(st), st ? msg : "it ran", kd_status_name(want), n1, n2);
  failures++;
}

static int absent(void) {
  const double v[3] = {1, -2, 3};
  kd_tensor *x = make(KD_FLOAT32, 1, 3, 0, v), *d = make(KD_FLOAT64, 1, 3, 0, v), *out = NULL;
  if (!x || !d) goto done;
  kd_clear_error();
  kd_status st = kd_neg(x, &out);
  expect_failure(st, KD_ENOKERNEL, "neg", "CPU", "neg (an operator the trace did not see)");
  kd_tensor_release(out);
  out = NULL;
  kd_clear_error();
  st = kd_add_Tensor(d, d, NULL, &out);
  expect_failure(st, KD_EUNSUPPORTED, "add", "float64", "add on float64 (a dtype it did not see)");
  kd_tensor_release(out);
done:
  kd_tensor_release(x);
  kd_tensor_release(d);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  kd_status st = kd_ops_open();
  if (st) {
    fprintf(stderr, "kdops-five: kd_ops_open: %s: %s\n", kd_status_name(st), kd_last_error());
    return 1;
  }
  if (argc > 1 && !strcmp(argv[1], "--absent")) return absent();
  return run();
}
