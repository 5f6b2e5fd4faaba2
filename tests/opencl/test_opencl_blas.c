/*
 * The OpenCL backend's mm, bmm and addmm through CLBlast
 * (backends/opencl/opencl_blas.c) against the CPU: row-major, transposed
 * (CLBlast's transpose flags) and other strided operands (a contiguous
 * copy), an expanded batch, out= (contiguous and strided), addmm's beta /
 * alpha, broadcast self, beta = 0 with NaN in self, addmm_ in place, zero
 * sizes (K == 0: beta * self, zeros), float64, integer dtypes (CLBlast has
 * no integer gemm: the CPU's kernel runs); errors by status and message
 * (shapes, dtypes, bool as on the CPU); two threads at once.
 * float32: rtol 1e-4 (the sums of K products in another order).
 *
 *   test_opencl_blas path/to/libkd_opencl.so   (exit 77: no OpenCL platform)
 */
#include <pthread.h>

#include "opencl_pair.h"

#define RT 1e-4
#define AT 1e-4

static void check_mm(const char *what, kdt_pair a, kdt_pair b) {
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_mm(a.c, b.c, &w));
  kd_status st = kd_mm(a.d, b.d, &g);
  if (st) fail_msg("%s: opencl: %s: %s", what, kd_status_name(st), kd_last_error());
  kdt_check(what, w, g, RT, AT);
  kd_tensor_release(w);
  kd_tensor_release(g);
}

/* mm over every layout pair: row-major, transposed, strided (copied). */
static void test_mm_layouts(void **state) {
  (void)state;
  int64_t m = 37, k = 29, n = 23;
  int64_t asz[2] = {m, k}, bsz[2] = {k, n};
  int64_t at[2] = {1, m}, bt[2] = {1, k};                /* column-major */
  int64_t as[2] = {2 * k + 3, 2}, bs[2] = {3 * n, 3};    /* neither */
  kdt_pair A[3] = {kdt_contig(KD_FLOAT32, 2, asz, 1), kdt_make(KD_FLOAT32, 2, asz, at, 0, 2),
                   kdt_make(KD_FLOAT32, 2, asz, as, 7, 3)};
  kdt_pair B[3] = {kdt_contig(KD_FLOAT32, 2, bsz, 4), kdt_make(KD_FLOAT32, 2, bsz, bt, 0, 5),
                   kdt_make(KD_FLOAT32, 2, bsz, bs, 2, 6)};
  const char *names[3] = {"row-major", "transposed", "strided"};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      char what[96];
      snprintf(what, sizeof what, "mm %s @ %s", names[i], names[j]);
      check_mm(what, A[i], B[j]);
    }
  for (int i = 0; i < 3; i++) {
    kdt_pair_release(A[i]);
    kdt_pair_release(B[i]);
  }
  /* vectors as matrices: 1 x k @ k x 1, and an outer product (k == 1) */
  int64_t r1[2] = {1, 40}, c1[2] = {40, 1}, o1[2] = {9, 1}, o2[2] = {1, 8};
  kdt_pair r = kdt_contig(KD_FLOAT32, 2, r1, 7), c = kdt_contig(KD_FLOAT32, 2, c1, 8);
  check_mm("mm 1xk @ kx1", r, c);
  check_mm("mm kx1 @ 1xk", c, r);
  kdt_pair p = kdt_contig(KD_FLOAT32, 2, o1, 9), q = kdt_contig(KD_FLOAT32, 2, o2, 10);
  check_mm("mm outer product", p, q);
  kdt_pair_release(r);
  kdt_pair_release(c);
  kdt_pair_release(p);
  kdt_pair_release(q);
}

static void test_mm_f64_and_out(void **state) {
  (void)state;
  int64_t asz[2] = {16, 24}, bsz[2] = {24, 20};
  if (kdt_fp64) {
    kdt_pair a = kdt_contig(KD_FLOAT64, 2, asz, 11), b = kdt_contig(KD_FLOAT64, 2, bsz, 12);
    check_mm("mm float64", a, b);
    kdt_pair_release(a);
    kdt_pair_release(b);
  }
  kdt_pair a = kdt_contig(KD_FLOAT32, 2, asz, 13), b = kdt_contig(KD_FLOAT32, 2, bsz, 14);
  /* out= contiguous of the wrong size (resized), and a transposed out */
  int64_t osz[1] = {3}, tsz[2] = {16, 20}, tst[2] = {1, 16};
  kdt_pair o1 = kdt_contig(KD_FLOAT32, 1, osz, 15);
  KD_ASSERT_OK(kd_mm_out(a.c, b.c, o1.c));
  KD_ASSERT_OK(kd_mm_out(a.d, b.d, o1.d));
  kdt_check("mm.out resized", o1.c, o1.d, RT, AT);
  kdt_pair o2 = kdt_make(KD_FLOAT32, 2, tsz, tst, 0, 16);
  KD_ASSERT_OK(kd_mm_out(a.c, b.c, o2.c));
  KD_ASSERT_OK(kd_mm_out(a.d, b.d, o2.d));
  kdt_check("mm.out into a transposed out", o2.c, o2.d, RT, AT);
  kdt_pair_release(o1);
  kdt_pair_release(o2);
  kdt_pair_release(a);
  kdt_pair_release(b);
}

static void test_bmm(void **state) {
  (void)state;
  int64_t asz[3] = {5, 12, 9}, bsz[3] = {5, 9, 7}, tst[3] = {12 * 9, 1, 12}, est[3] = {0, 7, 1};
  kdt_pair a = kdt_contig(KD_FLOAT32, 3, asz, 20), b = kdt_contig(KD_FLOAT32, 3, bsz, 21);
  kdt_pair at = kdt_make(KD_FLOAT32, 3, asz, tst, 0, 22); /* each matrix column-major */
  kdt_pair be = kdt_make(KD_FLOAT32, 3, bsz, est, 0, 23); /* one matrix for every batch */
  kdt_pair as[2] = {a, at}, bs[2] = {b, be};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      kd_tensor *w = NULL, *g = NULL;
      KD_ASSERT_OK(kd_bmm(as[i].c, bs[j].c, &w));
      kd_status st = kd_bmm(as[i].d, bs[j].d, &g);
      if (st) fail_msg("bmm %d %d: %s", i, j, kd_last_error());
      kdt_check("bmm", w, g, RT, AT);
      kd_tensor_release(w);
      kd_tensor_release(g);
    }
  int64_t osz[3] = {5, 12, 7};
  kdt_pair o = kdt_contig(KD_FLOAT32, 3, osz, 24);
  KD_ASSERT_OK(kd_bmm_out(at.c, be.c, o.c));
  KD_ASSERT_OK(kd_bmm_out(at.d, be.d, o.d));
  kdt_check("bmm.out", o.c, o.d, RT, AT);
  kdt_pair_release(o);
  kdt_pair_release(a);
  kdt_pair_release(b);
  kdt_pair_release(at);
  kdt_pair_release(be);
}

static void check_addmm(const char *what, kdt_pair self, kdt_pair m1, kdt_pair m2, kd_scalar beta,
                        kd_scalar alpha) {
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_addmm(self.c, m1.c, m2.c, &beta, &alpha, &w));
  kd_status st = kd_addmm(self.d, m1.d, m2.d, &beta, &alpha, &g);
  if (st) fail_msg("%s: opencl: %s: %s", what, kd_status_name(st), kd_last_error());
  kdt_check(what, w, g, RT, AT);
  kd_tensor_release(w);
  kd_tensor_release(g);
}

/* addmm: beta / alpha, broadcast self (a row, a column, a 0-dim), beta = 0
 * ignoring a NaN self, addmm_ in place, addmm.out. */
static void test_addmm(void **state) {
  (void)state;
  int64_t m1s[2] = {13, 10}, m2s[2] = {10, 11}, full[2] = {13, 11}, row[1] = {11}, col[2] = {13, 1};
  kdt_pair m1 = kdt_contig(KD_FLOAT32, 2, m1s, 30), m2 = kdt_contig(KD_FLOAT32, 2, m2s, 31);
  kdt_pair sf = kdt_contig(KD_FLOAT32, 2, full, 32), sr = kdt_contig(KD_FLOAT32, 1, row, 33);
  kdt_pair sc = kdt_contig(KD_FLOAT32, 2, col, 34), s0 = kdt_contig(KD_FLOAT32, 0, NULL, 35);
  check_addmm("addmm", sf, m1, m2, kd_scalar_int(1), kd_scalar_int(1));
  check_addmm("addmm beta 0.5 alpha 2", sf, m1, m2, kd_scalar_double(0.5), kd_scalar_double(2.0));
  check_addmm("addmm broadcast row", sr, m1, m2, kd_scalar_double(-1.5), kd_scalar_int(1));
  check_addmm("addmm broadcast column", sc, m1, m2, kd_scalar_int(3), kd_scalar_double(0.25));
  check_addmm("addmm 0-dim self", s0, m1, m2, kd_scalar_int(1), kd_scalar_int(-1));
  kdt_set(&sf, 5, NAN);
  check_addmm("addmm beta 0 ignores a NaN self", sf, m1, m2, kd_scalar_int(0), kd_scalar_int(1));
  check_addmm("addmm beta 1 keeps a NaN self", sf, m1, m2, kd_scalar_int(1), kd_scalar_int(1));
  /* in place */
  kdt_pair ip = kdt_contig(KD_FLOAT32, 2, full, 36);
  kd_scalar beta = kd_scalar_double(0.75), alpha = kd_scalar_double(-2.0);
  KD_ASSERT_OK(kd_addmm_(ip.c, m1.c, m2.c, &beta, &alpha));
  KD_ASSERT_OK(kd_addmm_(ip.d, m1.d, m2.d, &beta, &alpha));
  kdt_check("addmm_", ip.c, ip.d, RT, AT);
  /* out= */
  kdt_pair o = kdt_contig(KD_FLOAT32, 2, full, 37);
  KD_ASSERT_OK(kd_addmm_out(sr.c, m1.c, m2.c, &beta, &alpha, o.c));
  KD_ASSERT_OK(kd_addmm_out(sr.d, m1.d, m2.d, &beta, &alpha, o.d));
  kdt_check("addmm.out", o.c, o.d, RT, AT);
  kdt_pair ps[] = {m1, m2, sf, sr, sc, s0, ip, o};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) kdt_pair_release(ps[i]);
}

/* Zero sizes: K == 0 (beta * self; zeros for mm and bmm), M == 0, N == 0,
 * an empty batch. */
static void test_zero_sizes(void **state) {
  (void)state;
  int64_t a0[2] = {4, 0}, b0[2] = {0, 5}, s[2] = {4, 5}, am[2] = {0, 3}, bm[2] = {3, 5};
  kdt_pair a = kdt_contig(KD_FLOAT32, 2, a0, 40), b = kdt_contig(KD_FLOAT32, 2, b0, 41);
  kdt_pair self = kdt_contig(KD_FLOAT32, 2, s, 42);
  check_mm("mm K == 0", a, b);
  check_addmm("addmm K == 0, beta 2", self, a, b, kd_scalar_int(2), kd_scalar_int(1));
  check_addmm("addmm K == 0, beta 1", self, a, b, kd_scalar_int(1), kd_scalar_int(1));
  check_addmm("addmm K == 0, beta 0", self, a, b, kd_scalar_int(0), kd_scalar_int(1));
  kdt_pair c = kdt_contig(KD_FLOAT32, 2, am, 43), d = kdt_contig(KD_FLOAT32, 2, bm, 44);
  check_mm("mm M == 0", c, d);
  int64_t e1[3] = {0, 3, 4}, e2[3] = {0, 4, 2}, k1[3] = {2, 3, 0}, k2[3] = {2, 0, 6};
  kdt_pair ea = kdt_contig(KD_FLOAT32, 3, e1, 45), eb = kdt_contig(KD_FLOAT32, 3, e2, 46);
  kdt_pair ka = kdt_contig(KD_FLOAT32, 3, k1, 47), kb = kdt_contig(KD_FLOAT32, 3, k2, 48);
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_bmm(ea.c, eb.c, &w));
  KD_ASSERT_OK(kd_bmm(ea.d, eb.d, &g));
  kdt_check("bmm of an empty batch", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  KD_ASSERT_OK(kd_bmm(ka.c, kb.c, &w));
  KD_ASSERT_OK(kd_bmm(ka.d, kb.d, &g));
  kdt_check("bmm K == 0", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  kdt_pair ps[] = {a, b, self, c, d, ea, eb, ka, kb};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) kdt_pair_release(ps[i]);
}

/* Integer dtypes through the CPU's kernel: every variant, results exact. */
static void test_int_dtypes(void **state) {
  (void)state;
  int64_t m1s[2] = {6, 5}, m2s[2] = {5, 4}, row[1] = {4}, full[2] = {6, 4};
  kdt_pair m1 = kdt_contig(KD_INT64, 2, m1s, 100), m2 = kdt_contig(KD_INT64, 2, m2s, 101);
  kdt_pair sr = kdt_contig(KD_INT64, 1, row, 102), ip = kdt_contig(KD_INT64, 2, full, 103);
  kdt_pair o = kdt_contig(KD_INT64, 2, full, 104);
  check_addmm("addmm int64, broadcast row", sr, m1, m2, kd_scalar_int(3), kd_scalar_int(-2));
  kd_scalar beta = kd_scalar_int(2), alpha = kd_scalar_int(5);
  KD_ASSERT_OK(kd_addmm_(ip.c, m1.c, m2.c, &beta, &alpha));
  KD_ASSERT_OK(kd_addmm_(ip.d, m1.d, m2.d, &beta, &alpha));
  kdt_check("addmm_ int64", ip.c, ip.d, 0, 0);
  KD_ASSERT_OK(kd_mm_out(m1.c, m2.c, o.c));
  KD_ASSERT_OK(kd_mm_out(m1.d, m2.d, o.d));
  kdt_check("mm.out int64", o.c, o.d, 0, 0);
  int64_t b1[3] = {3, 4, 5}, b2[3] = {3, 5, 2};
  kdt_pair x = kdt_contig(KD_INT16, 3, b1, 105), y = kdt_contig(KD_INT16, 3, b2, 106);
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_bmm(x.c, y.c, &w));
  KD_ASSERT_OK(kd_bmm(x.d, y.d, &g));
  kdt_check("bmm int16", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  /* float16 (no cl_khr_fp16 on PoCL; CLBlast's Hgemm needs it): the CPU's too */
  kdt_pair h1 = kdt_contig(KD_FLOAT16, 2, m1s, 107), h2 = kdt_contig(KD_FLOAT16, 2, m2s, 108);
  kdt_pair ho = kdt_contig(KD_FLOAT16, 2, full, 109);
  KD_ASSERT_OK(kd_mm_out(h1.c, h2.c, ho.c));
  KD_ASSERT_OK(kd_mm_out(h1.d, h2.d, ho.d));
  kdt_check("mm.out float16", ho.c, ho.d, 0, 0);
  kdt_pair_release(h1);
  kdt_pair_release(h2);
  kdt_pair_release(ho);
  kdt_pair ps[] = {m1, m2, sr, ip, o, x, y};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) kdt_pair_release(ps[i]);
}

static void test_errors(void **state) {
  (void)state;
  int64_t asz[2] = {3, 4}, bsz[2] = {5, 2}, v[1] = {4}, b3[3] = {2, 3, 4}, c3[3] = {3, 4, 2};
  kdt_pair a = kdt_contig(KD_FLOAT32, 2, asz, 50), b = kdt_contig(KD_FLOAT32, 2, bsz, 51);
  kdt_pair vec = kdt_contig(KD_FLOAT32, 1, v, 52);
  kdt_pair i = kdt_contig(KD_INT64, 2, asz, 53);
  kdt_pair x = kdt_contig(KD_FLOAT32, 3, b3, 54), y = kdt_contig(KD_FLOAT32, 3, c3, 55);
  kd_tensor *g = NULL;
  KD_ASSERT_ERR(kd_mm(a.d, b.d, &g), KD_EINVAL, "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x2)");
  KD_ASSERT_ERR(kd_mm(a.d, vec.d, &g), KD_EINVAL, "mat2 must be a matrix");
  int64_t isz[2] = {4, 2};
  kdt_pair i2 = kdt_contig(KD_INT64, 2, isz, 59);
  KD_ASSERT_ERR(kd_mm(a.d, i2.d, &g), KD_ETYPE, "expected scalar type float32 but found int64");
  kdt_pair_release(i2);
  KD_ASSERT_ERR(kd_mm(i.d, i.d, &g), KD_EINVAL, "shapes cannot be multiplied");
  int64_t sq[2] = {4, 4};
  kdt_pair is = kdt_contig(KD_INT32, 2, sq, 56);
  kd_tensor *w = NULL;
  /* no integer gemm in CLBlast: the CPU's kernel, its results and errors */
  KD_ASSERT_OK(kd_mm(is.c, is.c, &w));
  KD_ASSERT_OK(kd_mm(is.d, is.d, &g));
  kdt_check("mm int32 (on the cpu)", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  g = NULL;
  kdt_pair bl = kdt_contig(KD_BOOL, 2, sq, 60);
  KD_ASSERT_ERR(kd_mm(bl.d, bl.d, &g), KD_ENOKERNEL, "not implemented for 'Bool'");
  kdt_pair_release(bl);
  KD_ASSERT_ERR(kd_bmm(x.d, y.d, &g), KD_EINVAL, "batch1 and batch2 must have same number of batches");
  KD_ASSERT_ERR(kd_bmm(a.d, a.d, &g), KD_EINVAL, "batch1 must be a 3D tensor");
  KD_ASSERT_ERR(kd_mm(a.d, a.c, &g), KD_EINVAL, "same device");
  kd_scalar one = kd_scalar_int(1);
  int64_t bad[2] = {2, 5};
  kdt_pair sb = kdt_contig(KD_FLOAT32, 2, bad, 57);
  int64_t b4[2] = {4, 5};
  kdt_pair m2 = kdt_contig(KD_FLOAT32, 2, b4, 58);
  KD_ASSERT_ERR(kd_addmm(sb.d, a.d, m2.d, &one, &one, &g), KD_EINVAL, "The expanded size of the tensor");
  KD_ASSERT_ERR(kd_addmm_(sb.d, a.d, m2.d, &one, &one), KD_EINVAL, "Bad in-place call");
  assert_null(g);
  kdt_pair ps[] = {a, b, vec, i, x, y, is, sb, m2};
  for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) kdt_pair_release(ps[k]);
}

/* Two threads at once on opencl:0, each its own operands: mm, addmm and a
 * sum of the product, repeated; every result equals the CPU's (computed
 * first). The first gemm of each thread may race in CLBlast's cache
 * (serialised by the backend). */
typedef struct thr {
  kdt_pair a, b;
  kd_tensor *want_mm, *want_sum;
  char err[256];
} thr;

static void *thr_run(void *arg) {
  thr *t = arg;
  for (int it = 0; it < 8 && !t->err[0]; it++) {
    kd_tensor *p = NULL, *s = NULL, *pc = NULL, *sc = NULL;
    kd_status st = kd_mm(t->a.d, t->b.d, &p);
    if (!st) st = kd_sum_dim_IntList(p, (kd_ints){NULL, 0}, false, NULL, &s);
    if (!st) st = kd_tensor_to_device(p, kd_device_cpu(), &pc);
    if (!st) st = kd_tensor_to_device(s, kd_device_cpu(), &sc);
    if (st) snprintf(t->err, sizeof t->err, "iteration %d: %s", it, kd_last_error());
    else {
      const float *x = kd_tensor_data(pc), *y = kd_tensor_data(t->want_mm);
      for (int64_t i = 0; i < kd_tensor_numel(pc) && !t->err[0]; i++)
        if (fabsf(x[i] - y[i]) > 1e-3f + 1e-4f * fabsf(y[i]))
          snprintf(t->err, sizeof t->err, "iteration %d: mm element %lld: %g vs %g", it, (long long)i,
                   x[i], y[i]);
      float a = *(const float *)kd_tensor_data(sc), b = *(const float *)kd_tensor_data(t->want_sum);
      if (!t->err[0] && fabsf(a - b) > 1e-2f + 1e-4f * fabsf(b))
        snprintf(t->err, sizeof t->err, "iteration %d: sum %g vs %g", it, a, b);
    }
    kd_tensor_release(p);
    kd_tensor_release(s);
    kd_tensor_release(pc);
    kd_tensor_release(sc);
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  thr t[2];
  pthread_t th[2];
  int64_t asz[2] = {40, 30}, bsz[2] = {30, 50};
  for (int i = 0; i < 2; i++) {
    memset(&t[i], 0, sizeof t[i]);
    t[i].a = kdt_contig(KD_FLOAT32, 2, asz, 200 + (unsigned)i);
    t[i].b = kdt_contig(KD_FLOAT32, 2, bsz, 210 + (unsigned)i);
    KD_ASSERT_OK(kd_mm(t[i].a.c, t[i].b.c, &t[i].want_mm));
    KD_ASSERT_OK(kd_sum_dim_IntList(t[i].want_mm, (kd_ints){NULL, 0}, false, NULL, &t[i].want_sum));
  }
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, thr_run, &t[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    if (t[i].err[0]) fail_msg("thread %d: %s", i, t[i].err);
    kdt_pair_release(t[i].a);
    kdt_pair_release(t[i].b);
    kd_tensor_release(t[i].want_mm);
    kd_tensor_release(t[i].want_sum);
  }
}

int main(int argc, char **argv) {
  int r = kdt_main_start(argc, argv);
  if (r >= 0) return r;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mm_layouts), cmocka_unit_test(test_mm_f64_and_out),
      cmocka_unit_test(test_bmm),        cmocka_unit_test(test_addmm),
      cmocka_unit_test(test_zero_sizes), cmocka_unit_test(test_int_dtypes),
      cmocka_unit_test(test_errors),     cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, kdt_setup, kdt_teardown);
}
