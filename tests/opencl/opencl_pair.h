/*
 * opencl_pair.h: what test_opencl_reduce.c and test_opencl_blas.c share:
 * the same tensor on the CPU and on opencl:0 (any strides, built with
 * kd_tensor_as_strided over one base, so no view operator of the device is
 * involved), and the comparison of a device result with the CPU's (sizes,
 * dtype, values: exact for integers and bool, rtol/atol for floats, NaN
 * equal to NaN). Failures are cmocka failures naming the case.
 */
#ifndef KD_OPENCL_PAIR_H
#define KD_OPENCL_PAIR_H

#include <math.h>

#include "kd_test.h"
#include "opencl_test_util.h"

#include <kd/backend.h>
#include <kd/ops.h>
#include <kd/ops_all.h>

static const kd_device kdt_dev0 = {KD_DEVICE_PRIVATEUSE1, 0};

/* A tensor and its copy on opencl:0, views of base (cpu); all owned by the pair. */
typedef struct kdt_pair {
  kd_tensor *c, *d, *base;
} kdt_pair;

static inline void kdt_pair_release(kdt_pair p) {
  kd_tensor_release(p.c);
  kd_tensor_release(p.d);
  kd_tensor_release(p.base);
}

/* (Re)makes p->d: base uploaded, viewed as p->c. */
static inline void kdt_upload(kdt_pair *p) {
  kd_tensor *dbase = NULL;
  kd_tensor_release(p->d);
  p->d = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(p->base, kdt_dev0, &dbase));
  KD_ASSERT_OK(kd_tensor_as_strided(dbase, kd_tensor_ndim(p->c), kd_tensor_sizes(p->c),
                                    kd_tensor_strides(p->c), kd_tensor_storage_offset(p->c), &p->d));
  kd_tensor_release(dbase);
}

/* Deterministic values: floats on a grid of quarters in [-4, 4) (sums of
 * few of them are exact), integers in [-50, 50), uint8 in [0, 200), bool. */
static inline double kdt_value(kd_dtype dt, uint64_t i, unsigned seed) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  switch (dt) {
  case KD_BOOL: return (double)(x & 1);
  case KD_UINT8: return (double)(x % 200);
  case KD_FLOAT32:
  case KD_FLOAT64:
  case KD_FLOAT16: return ((double)(x % 32) - 16.0) / 4.0;
  default: return (double)(x % 100) - 50.0;
  }
}

/* A pair of dtype dt with sizes/strides (strides NULL: contiguous) at
 * element offset `off` of a base holding every element they reach, filled
 * with kdt_value(seed). */
static inline kdt_pair kdt_make(kd_dtype dt, int nd, const int64_t *sizes, const int64_t *strides,
                                int64_t off, unsigned seed) {
  int64_t st[KD_MAX_DIMS], extent = off + 1, step = 1;
  for (int k = nd - 1; k >= 0; k--) {
    st[k] = strides ? strides[k] : step;
    step *= sizes[k] > 0 ? sizes[k] : 1;
  }
  bool empty = false;
  for (int k = 0; k < nd; k++) {
    if (sizes[k] == 0) empty = true;
    else extent += (sizes[k] - 1) * st[k];
  }
  if (empty) extent = off + 1;
  kd_tensor *base = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &extent, dt, kd_device_cpu(), &base));
  for (int64_t i = 0; i < extent; i++) {
    kd_scalar v = kd_dtype_is_floating(dt) ? kd_scalar_double(kdt_value(dt, (uint64_t)i, seed))
                                           : kd_scalar_int((int64_t)kdt_value(dt, (uint64_t)i, seed));
    if (dt == KD_BOOL) v = kd_scalar_bool(kdt_value(dt, (uint64_t)i, seed) != 0);
    KD_ASSERT_OK(kd_tensor_set(base, &i, &v));
  }
  kdt_pair p = {NULL, NULL, base};
  KD_ASSERT_OK(kd_tensor_as_strided(base, nd, sizes, st, off, &p.c));
  kdt_upload(&p);
  return p;
}

static inline kdt_pair kdt_contig(kd_dtype dt, int nd, const int64_t *sizes, unsigned seed) {
  return kdt_make(dt, nd, sizes, NULL, 0, seed);
}

/* Sets element `flat` (row-major index over its sizes) of p->c, and
 * uploads p's base again. */
static inline void kdt_set(kdt_pair *p, int64_t flat, double v) {
  int nd = kd_tensor_ndim(p->c);
  int64_t idx[KD_MAX_DIMS];
  for (int k = nd - 1; k >= 0; k--) {
    int64_t s = kd_tensor_size(p->c, k);
    idx[k] = flat % s;
    flat /= s;
  }
  kd_scalar sv = kd_scalar_double(v);
  KD_ASSERT_OK(kd_tensor_set(p->c, idx, &sv));
  kdt_upload(p);
}

/* Compares got (on opencl:0, or NULL: a failure) with want (cpu): device,
 * dtype, sizes, values. Borrows both. */
static inline void kdt_check(const char *what, kd_tensor *want, kd_tensor *got, double rtol,
                             double atol) {
  if (!got) fail_msg("%s: no result", what);
  if (kd_tensor_device(got).type != kdt_dev0.type)
    fail_msg("%s: the result is on %s, not opencl", what, kd_device_type_name(kd_tensor_device(got).type));
  if (kd_tensor_dtype(want) != kd_tensor_dtype(got))
    fail_msg("%s: dtype %s, the cpu gives %s", what, kd_dtype_name(kd_tensor_dtype(got)),
             kd_dtype_name(kd_tensor_dtype(want)));
  int nd = kd_tensor_ndim(want);
  if (kd_tensor_ndim(got) != nd ||
      (nd && memcmp(kd_tensor_sizes(got), kd_tensor_sizes(want), sizeof(int64_t) * (size_t)nd)))
    fail_msg("%s: sizes differ from the cpu's (ndim %d vs %d)", what, kd_tensor_ndim(got), nd);
  kd_tensor *back = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(got, kd_device_cpu(), &back));
  int64_t n = kd_tensor_numel(want), idx[KD_MAX_DIMS] = {0};
  bool exact = !kd_dtype_is_floating(kd_tensor_dtype(want));
  for (int64_t e = 0; e < n; e++) {
    kd_scalar a, b;
    KD_ASSERT_OK(kd_tensor_get(want, idx, &a));
    KD_ASSERT_OK(kd_tensor_get(back, idx, &b));
    if (exact) {
      int64_t x = kd_scalar_to_int64(&a), y = kd_scalar_to_int64(&b);
      if (x != y) fail_msg("%s: element %lld: opencl %lld, cpu %lld", what, (long long)e, (long long)y, (long long)x);
    } else {
      double x = kd_scalar_to_double(&a), y = kd_scalar_to_double(&b);
      bool ok = (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= atol + rtol * fabs(x);
      if (!ok) fail_msg("%s: element %lld: opencl %.9g, cpu %.9g", what, (long long)e, y, x);
    }
    for (int k = nd - 1; k >= 0; k--) {
      if (++idx[k] < kd_tensor_size(want, k)) break;
      idx[k] = 0;
    }
  }
  kd_tensor_release(back);
}

/* The plugin (argv[1]), loaded by kdt_setup and unloaded by kdt_teardown. */
static const char *kdt_plugin_path;
static kd_plugin *kdt_plugin;
static bool kdt_fp64;

static inline int kdt_setup(void **state) {
  (void)state;
  if (kd_backend_load(kdt_plugin_path, &kdt_plugin)) {
    fprintf(stderr, "kd_backend_load(%s): %s\n", kdt_plugin_path, kd_last_error());
    return -1;
  }
  return 0;
}

static inline int kdt_teardown(void **state) {
  (void)state;
  return kd_backend_unload(kdt_plugin) ? -1 : 0;
}

/* main's start: the plugin's path, or the skip. Returns -1 to go on, else
 * the exit status. */
static inline int kdt_main_start(int argc, char **argv) {
  return kdcl_test_main_start(argc, argv, &kdt_plugin_path, NULL, &kdt_fp64);
}

#endif
