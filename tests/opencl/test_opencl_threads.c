/*
 * test_opencl_threads.c: threads running operators on one OpenCL device at
 * once (issue 18, "Threads").
 *
 *   test_opencl_threads PLUGIN
 *
 * Four threads share opencl:0 (its one in-order queue, its allocator and its
 * program cache) and, each with inputs of its own plus two device tensors all
 * of them read, run allocations, copies both ways, add, mul, sum, mm and
 * softmax, each result checked against the same operator on the CPU. Another
 * pair of threads makes errors at the same time as correct calls: the error
 * messages are thread-local, so each thread must see its own. Skipped (77)
 * without an OpenCL platform. Under ThreadSanitizer PoCL's own threads are
 * suppressed by tests/opencl/tsan.supp (nothing of ours).
 *
 * cmocka's assertions are not thread-safe: the threads record what went wrong
 * in their own buffer and the test asserts after joining them.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include <kd/ops.h>

#include "kd_test.h"
#include "opencl_test_util.h"

#define NTHREADS 4
#define ITERS 12
#define N 48

static const char *g_plugin_path;
static kd_plugin *g_plugin;
static kd_device g_dev;
static kd_tensor *g_shared_cpu[2], *g_shared_dev[2]; /* read by every thread */

typedef struct worker {
  int id;
  int failures;
  char first[512]; /* the first failure */
} worker;

__attribute__((format(printf, 2, 3))) static void wfail(worker *w, const char *fmt, ...) {
  if (w->failures++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first, sizeof w->first, fmt, ap);
    va_end(ap);
  }
}

/* A cpu float32 tensor [r, c] of values in [-1, 1] from seed. Owned. */
static kd_tensor *rand_cpu(int64_t r, int64_t c, unsigned seed) {
  int64_t sz[2] = {r, c};
  float *v = malloc(sizeof(float) * (size_t)(r * c));
  if (!v) return NULL;
  for (int64_t i = 0; i < r * c; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
  }
  kd_tensor *t = NULL;
  if (kd_tensor_from_data(2, sz, KD_FLOAT32, v, &t)) t = NULL;
  free(v);
  return t;
}

/* Compares the device tensor d with the cpu tensor c (float32), moving d to
 * the cpu. Returns the failure text in w. */
static void check_close(worker *w, const char *what, kd_tensor *c, kd_tensor *d) {
  if (!c || !d) {
    wfail(w, "%s: missing result", what);
    return;
  }
  if (kd_tensor_device(d).type != g_dev.type) {
    wfail(w, "%s: result not on opencl", what);
    return;
  }
  kd_tensor *h = NULL, *hc = NULL, *cc = NULL;
  if (kd_tensor_to_device(d, kd_device_cpu(), &h) || kd_tensor_to_dtype(h, KD_FLOAT64, &hc) ||
      kd_tensor_to_dtype(c, KD_FLOAT64, &cc)) {
    wfail(w, "%s: moving to the cpu: %s", what, kd_last_error());
  } else if (kd_tensor_numel(hc) != kd_tensor_numel(cc)) {
    wfail(w, "%s: %lld elements on the device, %lld on the cpu", what,
          (long long)kd_tensor_numel(hc), (long long)kd_tensor_numel(cc));
  } else {
    const double *a = kd_tensor_data(hc), *b = kd_tensor_data(cc);
    for (int64_t i = 0; i < kd_tensor_numel(cc); i++)
      if (!(fabs(a[i] - b[i]) <= 1e-4 + 1e-4 * fabs(b[i]))) {
        wfail(w, "%s: element %lld is %g on the device, %g on the cpu", what, (long long)i, a[i],
              b[i]);
        break;
      }
  }
  if (h) kd_tensor_release(h);
  if (hc) kd_tensor_release(hc);
  if (cc) kd_tensor_release(cc);
}

#define REL(t)                  \
  do {                          \
    if (t) kd_tensor_release(t); \
    (t) = NULL;                 \
  } while (0)

/* One thread: ITERS rounds of fresh inputs, five operators, checks. */
static void *work(void *arg) {
  worker *w = arg;
  for (int it = 0; it < ITERS; it++) {
    unsigned seed = (unsigned)(w->id * 1000 + it);
    kd_tensor *a = rand_cpu(N, N, seed), *b = rand_cpu(N, N, seed + 7);
    kd_tensor *ad = NULL, *bd = NULL, *rc = NULL, *rd = NULL, *t1 = NULL, *t2 = NULL;
    if (!a || !b || kd_tensor_to_device(a, g_dev, &ad) || kd_tensor_to_device(b, g_dev, &bd)) {
      wfail(w, "round %d: inputs: %s", it, kd_last_error());
      goto next;
    }
    /* add with the shared tensor, alpha 2 */
    kd_scalar two = kd_scalar_int(2);
    if (kd_add_Tensor(a, g_shared_cpu[0], &two, &rc) ||
        kd_add_Tensor(ad, g_shared_dev[0], &two, &rd))
      wfail(w, "round %d: add: %s", it, kd_last_error());
    else check_close(w, "add", rc, rd);
    REL(rc);
    REL(rd);
    /* mul */
    if (kd_mul_Tensor(a, b, &rc) || kd_mul_Tensor(ad, bd, &rd))
      wfail(w, "round %d: mul: %s", it, kd_last_error());
    else check_close(w, "mul", rc, rd);
    REL(rc);
    REL(rd);
    /* sum of everything */
    if (kd_sum(a, NULL, &rc) || kd_sum(ad, NULL, &rd))
      wfail(w, "round %d: sum: %s", it, kd_last_error());
    else check_close(w, "sum", rc, rd);
    REL(rc);
    REL(rd);
    /* mm with the other shared tensor, then softmax over the last dim */
    if (kd_mm(a, g_shared_cpu[1], &t1) || kd_mm(ad, g_shared_dev[1], &t2))
      wfail(w, "round %d: mm: %s", it, kd_last_error());
    else {
      check_close(w, "mm", t1, t2);
      if (kd_softmax_int(t1, 1, NULL, &rc) || kd_softmax_int(t2, 1, NULL, &rd))
        wfail(w, "round %d: softmax: %s", it, kd_last_error());
      else check_close(w, "softmax", rc, rd);
    }
    REL(rc);
    REL(rd);
    REL(t1);
    REL(t2);
    /* in place on the device: a copy of a, then add_ b */
    if (kd_tensor_to_device(ad, g_dev, &t2) || kd_add_Tensor_(t2, bd, NULL) ||
        kd_add_Tensor(a, b, NULL, &rc))
      wfail(w, "round %d: add_: %s", it, kd_last_error());
    else check_close(w, "add_", rc, t2);
    REL(rc);
    REL(t2);
  next:
    REL(a);
    REL(b);
    REL(ad);
    REL(bd);
  }
  return NULL;
}

/* A thread whose calls fail (mm of [3,4] by [3,4]): its message must stay
 * its own while the others succeed. */
static void *work_errors(void *arg) {
  worker *w = arg;
  int64_t sz[2] = {3, 4};
  kd_tensor *x = NULL;
  if (kd_tensor_empty(2, sz, KD_FLOAT32, g_dev, &x)) {
    wfail(w, "empty: %s", kd_last_error());
    return NULL;
  }
  for (int it = 0; it < ITERS * 4; it++) {
    kd_tensor *r = NULL;
    kd_clear_error();
    kd_status st = kd_mm(x, x, &r);
    if (st == KD_OK) {
      wfail(w, "mm of [3,4] by [3,4] succeeded");
      kd_tensor_release(r);
    } else if (!strstr(kd_last_error(), "mm")) {
      wfail(w, "the error message is not this thread's: \"%s\"", kd_last_error());
    }
  }
  kd_tensor_release(x);
  return NULL;
}

static int setup(void **state) {
  (void)state;
  kd_status st = kd_backend_load(g_plugin_path, &g_plugin);
  if (st) {
    fprintf(stderr, "loading %s: %s\n", g_plugin_path, kd_last_error());
    return -1;
  }
  if (kd_device_parse("opencl:0", &g_dev)) return -1;
  g_shared_cpu[0] = rand_cpu(N, N, 99);
  g_shared_cpu[1] = rand_cpu(N, N, 199);
  for (int i = 0; i < 2; i++)
    if (!g_shared_cpu[i] || kd_tensor_to_device(g_shared_cpu[i], g_dev, &g_shared_dev[i]))
      return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int i = 0; i < 2; i++) {
    REL(g_shared_cpu[i]);
    REL(g_shared_dev[i]);
  }
  return g_plugin && kd_backend_unload(g_plugin) ? -1 : 0;
}

static void threads_agree_with_cpu(void **state) {
  (void)state;
  pthread_t th[NTHREADS + 1];
  worker w[NTHREADS + 1];
  memset(w, 0, sizeof w);
  for (int i = 0; i <= NTHREADS; i++) {
    w[i].id = i;
    assert_int_equal(pthread_create(&th[i], NULL, i < NTHREADS ? work : work_errors, &w[i]), 0);
  }
  for (int i = 0; i <= NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i <= NTHREADS; i++)
    if (w[i].failures) fail_msg("thread %d: %d failures, first: %s", i, w[i].failures, w[i].first);
}

/* The checks can fail: a wrong device result is caught (the harness itself is
 * tested: a corrupted copy of a correct result must be reported). */
static void check_catches_a_wrong_result(void **state) {
  (void)state;
  worker w = {0};
  kd_tensor *a = rand_cpu(4, 4, 5), *b = rand_cpu(4, 4, 6), *bd = NULL;
  assert_non_null(a);
  assert_non_null(b);
  KD_ASSERT_OK(kd_tensor_to_device(b, g_dev, &bd));
  check_close(&w, "a differs from b", a, bd);
  assert_int_equal(w.failures, 1);
  assert_non_null(strstr(w.first, "element 0"));
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(bd);
}

int main(int argc, char **argv) {
  int r = kdcl_test_main_start(argc, argv, &g_plugin_path, NULL, NULL);
  if (r >= 0) return r;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(check_catches_a_wrong_result),
      cmocka_unit_test(threads_agree_with_cpu),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
