/*
 * The OpenCL backend's reductions (LegacyMeta: sum, mean, prod, amax, amin,
 * argmax, argmin) and softmax / log_softmax (Customized) against the CPU
 * (backends/opencl/opencl_reduce.c): dim lists, keepdim, full reductions,
 * strided and expanded inputs, strided out=, dtype= and integer promotion,
 * empty reductions, NaN and ties, a reduction long enough for two stages,
 * dtypes the device leaves to the CPU (float16, bfloat16, a bool sum);
 * errors by status and message (the meta's, the kernels').
 * Floats: rtol 1e-5 (float32; the device sums in a tree, the CPU in its own
 * order) and 1e-12 (float64); integers exact.
 *
 *   test_opencl_reduce path/to/libkd_opencl.so   (exit 77: no OpenCL platform)
 */
#include "opencl_pair.h"

#define RT32 1e-5
#define AT32 1e-5

static double rtol_of(kd_dtype dt) { return dt == KD_FLOAT32 ? RT32 : 1e-12; }
static double atol_of(kd_dtype dt) { return dt == KD_FLOAT32 ? AT32 : 1e-12; }

typedef enum { OP_SUM, OP_MEAN, OP_AMAX, OP_AMIN } dims_op;

/* op(x, dims, keepdim) on both devices; the results must agree. */
static void check_dims(const char *what, dims_op op, kdt_pair x, const int64_t *dims, int n,
                       bool keepdim, const kd_dtype *dtype) {
  kd_ints d = {dims, n};
  kd_tensor *w = NULL, *g = NULL;
  kd_status sw, sg;
  switch (op) {
  case OP_SUM:
    sw = kd_sum_dim_IntList(x.c, d, keepdim, dtype, &w);
    sg = kd_sum_dim_IntList(x.d, d, keepdim, dtype, &g);
    break;
  case OP_MEAN:
    sw = kd_mean_dim(x.c, d, keepdim, dtype, &w);
    sg = kd_mean_dim(x.d, d, keepdim, dtype, &g);
    break;
  case OP_AMAX:
    sw = kd_amax(x.c, d, keepdim, &w);
    sg = kd_amax(x.d, d, keepdim, &g);
    break;
  default:
    sw = kd_amin(x.c, d, keepdim, &w);
    sg = kd_amin(x.d, d, keepdim, &g);
    break;
  }
  if (sw) fail_msg("%s: cpu: %s", what, kd_last_error());
  if (sg) fail_msg("%s: opencl: %s: %s", what, kd_status_name(sg), kd_last_error());
  kd_dtype dt = kd_tensor_dtype(w);
  kdt_check(what, w, g, rtol_of(dt), atol_of(dt));
  kd_tensor_release(w);
  kd_tensor_release(g);
}

/* sum/mean/amax/amin over dim lists, keepdim, every dim, float dtypes. */
static void test_dims(void **state) {
  (void)state;
  kd_dtype dts[2] = {KD_FLOAT32, KD_FLOAT64};
  int64_t sz[3] = {4, 5, 6};
  for (int t = 0; t < (kdt_fp64 ? 2 : 1); t++) {
    kdt_pair x = kdt_contig(dts[t], 3, sz, 1);
    int64_t d02[2] = {0, 2}, dm1[1] = {-1}, d1[1] = {1}, d012[3] = {2, 0, 1};
    for (int op = OP_SUM; op <= OP_AMIN; op++) {
      check_dims("dims {0,2}", (dims_op)op, x, d02, 2, false, NULL);
      check_dims("dims {0,2} keepdim", (dims_op)op, x, d02, 2, true, NULL);
      check_dims("dim -1", (dims_op)op, x, dm1, 1, false, NULL);
      check_dims("dim 1 keepdim", (dims_op)op, x, d1, 1, true, NULL);
      check_dims("dims {2,0,1}", (dims_op)op, x, d012, 3, false, NULL);
      check_dims("every dim (empty list)", (dims_op)op, x, NULL, 0, false, NULL);
    }
    kdt_pair_release(x);
  }
}

/* Strided inputs: a transposed view, a sliced one with an offset, an
 * expanded one (stride 0), a 0-dim one. */
static void test_strided(void **state) {
  (void)state;
  int64_t sz[2] = {7, 9}, tr[2] = {1, 7};
  kdt_pair t = kdt_make(KD_FLOAT32, 2, sz, tr, 0, 2); /* a transposed 9x7 */
  int64_t d0[1] = {0}, d1[1] = {1};
  for (int op = OP_SUM; op <= OP_AMIN; op++) {
    check_dims("transposed, dim 0", (dims_op)op, t, d0, 1, false, NULL);
    check_dims("transposed, dim 1", (dims_op)op, t, d1, 1, true, NULL);
    check_dims("transposed, every dim", (dims_op)op, t, NULL, 0, false, NULL);
  }
  int64_t ssz[3] = {3, 4, 5}, sst[3] = {61, 13, 2};
  kdt_pair s = kdt_make(KD_FLOAT32, 3, ssz, sst, 5, 3);
  int64_t d02[2] = {0, 2}, d12[2] = {1, 2};
  check_dims("sliced, dims {0,2}", OP_SUM, s, d02, 2, false, NULL);
  check_dims("sliced, dims {1,2}", OP_MEAN, s, d12, 2, true, NULL);
  check_dims("sliced, every dim", OP_AMAX, s, NULL, 0, false, NULL);
  int64_t esz[3] = {4, 3, 5}, est[3] = {0, 5, 1};
  kdt_pair e = kdt_make(KD_FLOAT32, 3, esz, est, 0, 4);
  check_dims("expanded, dim 0", OP_SUM, e, d0, 1, false, NULL);
  check_dims("expanded, every dim", OP_SUM, e, NULL, 0, false, NULL);
  kdt_pair z = kdt_contig(KD_FLOAT32, 0, NULL, 5);
  check_dims("0-dim, every dim", OP_SUM, z, NULL, 0, false, NULL);
  int64_t zd[1] = {0};
  check_dims("0-dim, dim 0", OP_AMAX, z, zd, 1, true, NULL);
  kdt_pair_release(t);
  kdt_pair_release(s);
  kdt_pair_release(e);
  kdt_pair_release(z);
}

/* Integer and bool inputs: sum to int64 (exact), dtype=, amax/amin keep the
 * dtype; sum(Tensor) and mean(Tensor), the composites over these kernels. */
static void test_dtypes(void **state) {
  (void)state;
  int64_t sz[2] = {6, 11}, d1[1] = {1};
  kd_dtype ints[5] = {KD_INT32, KD_INT64, KD_INT8, KD_UINT8, KD_BOOL};
  for (int i = 0; i < 5; i++) {
    kdt_pair x = kdt_contig(ints[i], 2, sz, 10 + (unsigned)i);
    check_dims("int sum, dim 1", OP_SUM, x, d1, 1, false, NULL);
    check_dims("int sum, every dim", OP_SUM, x, NULL, 0, false, NULL);
    check_dims("int amax", OP_AMAX, x, d1, 1, false, NULL);
    check_dims("int amin", OP_AMIN, x, NULL, 0, true, NULL);
    kdt_pair_release(x);
  }
  kdt_pair f = kdt_contig(KD_FLOAT32, 2, sz, 20);
  kd_dtype i32 = KD_INT32, f64 = KD_FLOAT64;
  check_dims("float32 sum, dtype=int32 (elements truncated first)", OP_SUM, f, d1, 1, false, &i32);
  if (kdt_fp64) check_dims("float32 mean, dtype=float64", OP_MEAN, f, NULL, 0, false, &f64);
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_sum(f.c, NULL, &w));
  KD_ASSERT_OK(kd_sum(f.d, NULL, &g));
  kdt_check("sum(Tensor)", w, g, RT32, AT32);
  kd_tensor_release(w);
  kd_tensor_release(g);
  KD_ASSERT_OK(kd_mean(f.c, NULL, &w));
  KD_ASSERT_OK(kd_mean(f.d, NULL, &g));
  kdt_check("mean(Tensor)", w, g, RT32, AT32);
  kd_tensor_release(w);
  kd_tensor_release(g);
  /* prod: int64 of an int32 input */
  kdt_pair p = kdt_contig(KD_INT32, 2, sz, 21);
  KD_ASSERT_OK(kd_prod_dim_int(p.c, 0, false, NULL, &w));
  KD_ASSERT_OK(kd_prod_dim_int(p.d, 0, false, NULL, &g));
  kdt_check("prod int32, dim 0", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  KD_ASSERT_OK(kd_prod_dim_int(f.c, -1, true, NULL, &w));
  KD_ASSERT_OK(kd_prod_dim_int(f.d, -1, true, NULL, &g));
  kdt_check("prod float32, dim -1 keepdim", w, g, RT32, AT32);
  kd_tensor_release(w);
  kd_tensor_release(g);
  kdt_pair_release(p);
  kdt_pair_release(f);
}

/* out= variants: a strided out (a transposed view of a device tensor), an
 * out of the wrong size (resized by the meta). */
static void test_out(void **state) {
  (void)state;
  int64_t sz[3] = {5, 4, 3}, osz[2] = {3, 5}, ost[2] = {1, 3};
  kdt_pair x = kdt_contig(KD_FLOAT32, 3, sz, 30);
  kdt_pair o = kdt_make(KD_FLOAT32, 2, osz, ost, 0, 31); /* out viewed as its transpose: 5x3 */
  kd_tensor *ov_c = NULL, *ov_d = NULL;
  int64_t vsz[2] = {5, 3}, vst[2] = {1, 5};
  KD_ASSERT_OK(kd_tensor_as_strided(o.c, 2, vsz, vst, 0, &ov_c));
  KD_ASSERT_OK(kd_tensor_as_strided(o.d, 2, vsz, vst, 0, &ov_d));
  int64_t d1[1] = {1};
  kd_ints dims = {d1, 1};
  KD_ASSERT_OK(kd_sum_IntList_out(x.c, dims, false, NULL, ov_c));
  KD_ASSERT_OK(kd_sum_IntList_out(x.d, dims, false, NULL, ov_d));
  kdt_check("sum.IntList_out into a strided out", ov_c, ov_d, RT32, AT32);
  KD_ASSERT_OK(kd_amax_out(x.c, dims, true, ov_c)); /* resized to 5x1x3 */
  KD_ASSERT_OK(kd_amax_out(x.d, dims, true, ov_d));
  kdt_check("amax.out resized", ov_c, ov_d, 0, 0);
  kd_tensor_release(ov_c);
  kd_tensor_release(ov_d);
  kdt_pair_release(o);
  kdt_pair_release(x);
}

/* Empty reductions: sum of nothing is 0, mean NaN, prod 1; amax / argmax of
 * nothing are the meta's errors, as on the CPU. */
static void test_empty(void **state) {
  (void)state;
  int64_t sz[2] = {3, 0}, d1[1] = {1};
  kdt_pair x = kdt_contig(KD_FLOAT32, 2, sz, 40);
  check_dims("sum over an empty dim", OP_SUM, x, d1, 1, false, NULL);
  check_dims("sum of an empty tensor", OP_SUM, x, NULL, 0, false, NULL);
  check_dims("mean over an empty dim", OP_MEAN, x, d1, 1, true, NULL);
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_prod_dim_int(x.c, 1, false, NULL, &w));
  KD_ASSERT_OK(kd_prod_dim_int(x.d, 1, false, NULL, &g));
  kdt_check("prod over an empty dim", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  check_dims("sum over a non-empty dim of an empty tensor", OP_SUM, x, (int64_t[]){0}, 1, false, NULL);
  kd_ints dims = {d1, 1};
  KD_ASSERT_ERR(kd_amax(x.d, dims, false, &g), KD_ERANGE, "Expected reduction dim 1 to have non-zero size");
  KD_ASSERT_ERR(kd_amin(x.d, (kd_ints){NULL, 0}, false, &g), KD_ERANGE, "Expected reduction dim to be specified");
  KD_ASSERT_ERR(kd_argmax(x.d, NULL, false, &g), KD_ERANGE, "Expected reduction dim to be specified");
  kdt_pair_release(x);
}

/* argmax / argmin: ties give the first index, NaN the first NaN; amax /
 * amin propagate NaN; dim None (a flat index) and a dim with keepdim. */
static void test_arg_nan(void **state) {
  (void)state;
  int64_t sz[2] = {4, 8};
  kdt_pair x = kdt_contig(KD_FLOAT32, 2, sz, 50);
  kdt_set(&x, 3, 9.0); /* ties on row 0: 3 and 6 */
  kdt_set(&x, 6, 9.0);
  kdt_set(&x, 12, NAN); /* row 1: NaN at 4 and 6 */
  kdt_set(&x, 14, NAN);
  kdt_set(&x, 17, -9.0); /* row 2: min ties at 1 and 7 */
  kdt_set(&x, 23, -9.0);
  int64_t d1 = 1, d0 = 0;
  const int64_t *dims[3] = {NULL, &d1, &d0};
  for (int k = 0; k < 3; k++)
    for (int keep = 0; keep < 2; keep++) {
      kd_tensor *w = NULL, *g = NULL;
      KD_ASSERT_OK(kd_argmax(x.c, dims[k], keep, &w));
      KD_ASSERT_OK(kd_argmax(x.d, dims[k], keep, &g));
      kdt_check("argmax with ties and NaN", w, g, 0, 0);
      kd_tensor_release(w);
      kd_tensor_release(g);
      KD_ASSERT_OK(kd_argmin(x.c, dims[k], keep, &w));
      KD_ASSERT_OK(kd_argmin(x.d, dims[k], keep, &g));
      kdt_check("argmin with ties and NaN", w, g, 0, 0);
      kd_tensor_release(w);
      kd_tensor_release(g);
    }
  /* rows longer than 32: one work-group per row (shorter ones: a work-item) */
  int64_t lsz[2] = {3, 100};
  kdt_pair l = kdt_contig(KD_FLOAT64, 2, lsz, 52);
  kdt_set(&l, 10, 9.0);
  kdt_set(&l, 90, 9.0);
  kdt_set(&l, 133, -9.0);
  kdt_set(&l, 177, -9.0);
  kdt_set(&l, 250, NAN);
  kdt_set(&l, 260, NAN);
  for (int k = 0; k < 2; k++) {
    kd_tensor *w = NULL, *g = NULL;
    KD_ASSERT_OK(kd_argmax(l.c, k ? &d1 : NULL, false, &w));
    KD_ASSERT_OK(kd_argmax(l.d, k ? &d1 : NULL, false, &g));
    kdt_check("argmax, long rows", w, g, 0, 0);
    kd_tensor_release(w);
    kd_tensor_release(g);
    KD_ASSERT_OK(kd_argmin(l.c, k ? &d1 : NULL, true, &w));
    KD_ASSERT_OK(kd_argmin(l.d, k ? &d1 : NULL, true, &g));
    kdt_check("argmin, long rows", w, g, 0, 0);
    kd_tensor_release(w);
    kd_tensor_release(g);
  }
  int64_t dl[1] = {1};
  check_dims("amax with NaN, long rows", OP_AMAX, l, dl, 1, false, NULL);
  check_dims("amin with NaN, long rows", OP_AMIN, l, dl, 1, true, NULL);
  kdt_pair_release(l);
  check_dims("amax with NaN", OP_AMAX, x, dl, 1, false, NULL);
  check_dims("amin with NaN", OP_AMIN, x, NULL, 0, false, NULL);
  /* int argmax with ties */
  kdt_pair y = kdt_contig(KD_INT16, 2, sz, 51);
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_argmax(y.c, &d1, false, &w));
  KD_ASSERT_OK(kd_argmax(y.d, &d1, false, &g));
  kdt_check("argmax int16", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  kdt_pair_release(y);
  kdt_pair_release(x);
}

/* One output and a long row: the two-stage reduction (partials, then their
 * combination), for sum, mean, amax, argmax (the index crosses parts). */
static void test_two_stage(void **state) {
  (void)state;
  int64_t n = (int64_t)1 << 20, sz2[2] = {2, (int64_t)1 << 19};
  kdt_pair x = kdt_contig(KD_FLOAT32, 1, &n, 60);
  check_dims("sum of 1M float32", OP_SUM, x, NULL, 0, false, NULL);
  check_dims("mean of 1M float32", OP_MEAN, x, NULL, 0, false, NULL);
  kdt_set(&x, 700001, 100.0); /* one maximum, late, and a tie later */
  kdt_set(&x, 900001, 100.0);
  check_dims("amax of 1M float32", OP_AMAX, x, NULL, 0, false, NULL);
  kd_tensor *w = NULL, *g = NULL;
  KD_ASSERT_OK(kd_argmax(x.c, NULL, false, &w));
  KD_ASSERT_OK(kd_argmax(x.d, NULL, false, &g));
  kdt_check("argmax of 1M float32", w, g, 0, 0);
  kd_tensor_release(w);
  kd_tensor_release(g);
  kdt_pair_release(x);
  kdt_pair y = kdt_contig(KD_INT64, 2, sz2, 61);
  int64_t d1[1] = {1};
  check_dims("sum of 2 rows of 512K int64", OP_SUM, y, d1, 1, false, NULL);
  kdt_pair_release(y);
}

/* Dtypes the device does not compute (float16, bfloat16, a bool sum) run
 * the CPU's operator: the same results. */
static void test_cpu_dtypes(void **state) {
  (void)state;
  int64_t sz[2] = {5, 7}, d1[1] = {1};
  kd_dtype dts[2] = {KD_FLOAT16, KD_BFLOAT16};
  for (int t = 0; t < 2; t++) {
    kdt_pair h = kdt_contig(dts[t], 2, sz, 72 + (unsigned)t);
    check_dims("half sum, dim 1", OP_SUM, h, d1, 1, false, NULL);
    check_dims("half mean, every dim", OP_MEAN, h, NULL, 0, true, NULL);
    check_dims("half amax", OP_AMAX, h, d1, 1, true, NULL);
    kd_tensor *w = NULL, *g = NULL;
    KD_ASSERT_OK(kd_argmin(h.c, NULL, false, &w));
    KD_ASSERT_OK(kd_argmin(h.d, NULL, false, &g));
    kdt_check("half argmin", w, g, 0, 0);
    kd_tensor_release(w);
    kd_tensor_release(g);
    KD_ASSERT_OK(kd_internal_softmax(h.c, 1, false, &w));
    KD_ASSERT_OK(kd_internal_softmax(h.d, 1, false, &g));
    kdt_check("half softmax", w, g, 0, 0);
    kd_tensor_release(w);
    kd_tensor_release(g);
    kdt_pair_release(h);
  }
  kdt_pair x = kdt_contig(KD_INT32, 2, sz, 74);
  kd_dtype b = KD_BOOL;
  check_dims("sum with dtype=bool", OP_SUM, x, d1, 1, false, &b);
  kdt_pair_release(x);
}

/* What the device refuses, and the meta's errors, by status and message. */
static void test_errors(void **state) {
  (void)state;
  int64_t sz[2] = {3, 4};
  kd_tensor *g = NULL;
  kdt_pair x = kdt_contig(KD_INT32, 2, sz, 71);
  KD_ASSERT_ERR(kd_mean_dim(x.d, (kd_ints){NULL, 0}, false, NULL, &g), KD_ETYPE,
                "mean(): could not infer output dtype");
  int64_t bad[1] = {2}, twice[2] = {1, -1};
  KD_ASSERT_ERR(kd_sum_dim_IntList(x.d, (kd_ints){bad, 1}, false, NULL, &g), KD_ERANGE,
                "Dimension out of range");
  KD_ASSERT_ERR(kd_sum_dim_IntList(x.d, (kd_ints){twice, 2}, false, NULL, &g), KD_EINVAL,
                "appears multiple times");
  /* out on another device than self */
  kd_tensor *cpu_out = NULL;
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_INT64, kd_device_cpu(), &cpu_out));
  KD_ASSERT_ERR(kd_sum_IntList_out(x.d, (kd_ints){NULL, 0}, false, NULL, cpu_out), KD_EINVAL,
                "Expected out tensor to have device opencl:0, but got cpu");
  kd_tensor_release(cpu_out);
  kdt_pair_release(x);
}

/* softmax / log_softmax: every dim (last, inner, outer), strided, 0-dim,
 * rows with NaN and with -inf; float64; the composites softmax.int with
 * dtype=. */
static void test_softmax(void **state) {
  (void)state;
  int64_t sz[3] = {3, 5, 33};
  kd_dtype dts[2] = {KD_FLOAT32, KD_FLOAT64};
  for (int t = 0; t < (kdt_fp64 ? 2 : 1); t++) {
    kdt_pair x = kdt_contig(dts[t], 3, sz, 80);
    kdt_set(&x, 33, NAN);           /* row (0,1,:) has a NaN */
    for (int i = 66; i < 99; i++) kdt_set(&x, i, -INFINITY); /* row (0,2,:) all -inf */
    for (int64_t dim = -1; dim < 3; dim++)
      for (int lg = 0; lg < 2; lg++) {
        kd_tensor *w = NULL, *g = NULL;
        kd_status sw = lg ? kd_internal_log_softmax(x.c, dim, false, &w) : kd_internal_softmax(x.c, dim, false, &w);
        kd_status sg = lg ? kd_internal_log_softmax(x.d, dim, false, &g) : kd_internal_softmax(x.d, dim, false, &g);
        if (sw || sg) fail_msg("softmax dim %lld: %s", (long long)dim, kd_last_error());
        kdt_check(lg ? "log_softmax" : "softmax", w, g, 1e-5, 1e-6);
        kd_tensor_release(w);
        kd_tensor_release(g);
      }
    kdt_pair_release(x);
  }
  int64_t tsz[2] = {6, 10}, tst[2] = {1, 6};
  kdt_pair y = kdt_make(KD_FLOAT32, 2, tsz, tst, 0, 81);
  kdt_pair z = kdt_contig(KD_FLOAT32, 0, NULL, 82);
  for (int lg = 0; lg < 2; lg++) {
    kd_tensor *w = NULL, *g = NULL;
    KD_ASSERT_OK(lg ? kd_internal_log_softmax(y.c, 1, false, &w) : kd_internal_softmax(y.c, 1, false, &w));
    KD_ASSERT_OK(lg ? kd_internal_log_softmax(y.d, 1, false, &g) : kd_internal_softmax(y.d, 1, false, &g));
    kdt_check("softmax of a transposed input", w, g, 1e-5, 1e-6);
    kd_tensor_release(w);
    kd_tensor_release(g);
    KD_ASSERT_OK(lg ? kd_internal_log_softmax(z.c, -1, false, &w) : kd_internal_softmax(z.c, 0, false, &w));
    KD_ASSERT_OK(lg ? kd_internal_log_softmax(z.d, -1, false, &g) : kd_internal_softmax(z.d, 0, false, &g));
    kdt_check("softmax of a 0-dim input", w, g, 1e-6, 1e-7);
    kd_tensor_release(w);
    kd_tensor_release(g);
  }
  /* _softmax.out into a strided out */
  kdt_pair o = kdt_make(KD_FLOAT32, 2, tsz, tst, 0, 83);
  KD_ASSERT_OK(kd_internal_softmax_out(y.c, 0, false, o.c));
  KD_ASSERT_OK(kd_internal_softmax_out(y.d, 0, false, o.d));
  kdt_check("_softmax.out into a strided out", o.c, o.d, 1e-5, 1e-6);
  kdt_pair_release(o);
  kdt_pair_release(z);
  kdt_pair_release(y);
}

static void test_softmax_errors(void **state) {
  (void)state;
  int64_t sz[2] = {3, 4};
  kdt_pair x = kdt_contig(KD_INT64, 2, sz, 90);
  kd_tensor *g = NULL;
  KD_ASSERT_ERR(kd_internal_softmax(x.d, 1, false, &g), KD_ETYPE, "\"softmax\" not implemented for 'int64'");
  KD_ASSERT_ERR(kd_internal_log_softmax(x.d, 1, false, &g), KD_ETYPE, "\"log_softmax\" not implemented");
  KD_ASSERT_ERR(kd_internal_softmax(x.d, 2, false, &g), KD_ERANGE, "Dimension out of range");
  kdt_pair f = kdt_contig(KD_FLOAT32, 2, sz, 91);
  KD_ASSERT_ERR(kd_internal_softmax(f.d, 0, true, &g), KD_EUNSUPPORTED, "half to float");
  assert_null(g);
  kdt_pair_release(f);
  kdt_pair_release(x);
}

int main(int argc, char **argv) {
  int r = kdt_main_start(argc, argv);
  if (r >= 0) return r;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dims),      cmocka_unit_test(test_strided),
      cmocka_unit_test(test_dtypes),    cmocka_unit_test(test_out),
      cmocka_unit_test(test_empty),     cmocka_unit_test(test_arg_nan),
      cmocka_unit_test(test_two_stage), cmocka_unit_test(test_cpu_dtypes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_softmax),   cmocka_unit_test(test_softmax_errors),
  };
  return cmocka_run_group_tests(tests, kdt_setup, kdt_teardown);
}
