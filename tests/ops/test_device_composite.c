/*
 * test_device_composite.c: libkdops' factories and composites on a device
 * whose backend implements only the five primitives (issue 16,
 * "Device-neutral composites and factories"; docs/OPS.md).
 *
 * The device ("scrambled", PrivateUse1) keeps its bytes in host memory with
 * every byte XOR 0xA5, through a version-2 kd_allocator whose copies
 * unscramble and scramble: a CPU kernel that reads or writes device memory
 * by mistake gives garbage, never the right values. Its backend registers
 * exactly five kernels for PrivateUse1: empty.memory_format, empty_strided,
 * fill_.Scalar, copy_ and resize_ (each works on a host image of the device
 * bytes). Every factory and composite must then work on it: results are
 * read back with kd_tensor_to_device and compared with the same call on the
 * cpu. Also: BackendSelect with device index 1, views on the device, and
 * the failure paths (a backend without fill_, a device without allocator).
 */
#include <stdlib.h>
#include <string.h>

#include "ops_check.h"

#define SCRAMBLE 0xA5

static const kd_device DEV = {KD_DEVICE_PRIVATEUSE1, 0};
static const kd_device DEV1 = {KD_DEVICE_PRIVATEUSE1, 1};
static const kd_device NOFILL = {KD_DEVICE_PRIVATEUSE2, 0}; /* empty only */
static const kd_device NOALLOC = {KD_DEVICE_PRIVATEUSE3, 0}; /* five kernels, no allocator */

/* ---- The device's memory: host memory, scrambled --------------------------- */

static int allocs_on_index[4]; /* allocations per device index */

static void *sc_alloc(void *ctx, kd_device device, size_t nbytes) {
  (void)ctx;
  if (device.index >= 0 && device.index < 4) allocs_on_index[device.index]++;
  return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}

static void sc_free(void *ctx, kd_device device, void *ptr, size_t nbytes) {
  (void)ctx, (void)device, (void)nbytes;
  free(ptr);
}

static kd_status sc_copy(void *ctx, kd_device device, void *dst, const void *src, size_t nbytes) {
  (void)ctx, (void)device;
  unsigned char *d = dst;
  const unsigned char *s = src;
  for (size_t i = 0; i < nbytes; i++) d[i] = (unsigned char)(s[i] ^ SCRAMBLE);
  return KD_OK;
}

/* ---- Its five kernels -------------------------------------------------------- */

static int calls_empty, calls_empty_strided, calls_fill, calls_copy, calls_resize;

/* A cpu tensor with t's geometry over a host copy of t's whole storage
 * (unscrambled). *buf receives the host bytes (owned by the view's storage). */
static kd_status host_image(const kd_tensor *t, kd_tensor **view, unsigned char **buf) {
  kd_storage *s = kd_tensor_storage(t);
  size_t n = kd_storage_nbytes(s);
  unsigned char *b = malloc(n ? n : 1);
  if (!b) return kd_set_error(KD_ENOMEM, "scrambled: out of memory");
  if (n) sc_copy(NULL, kd_tensor_device(t), b, kd_storage_data(s), n);
  kd_storage *hs;
  kd_status st = kd_storage_wrap(kd_device_cpu(), b, n, free, b, &hs);
  if (st) {
    free(b);
    return st;
  }
  st = kd_tensor_from_storage(hs, kd_tensor_storage_offset(t), kd_tensor_ndim(t),
                              kd_tensor_sizes(t), kd_tensor_strides(t), kd_tensor_dtype(t), view);
  kd_storage_release(hs);
  *buf = b;
  return st;
}

/* Writes a host image back over t's storage (scrambled). */
static void write_back(kd_tensor *t, const unsigned char *buf) {
  kd_storage *s = kd_tensor_storage(t);
  size_t n = kd_storage_nbytes(s);
  if (n) sc_copy(NULL, kd_tensor_device(t), kd_storage_data(s), buf, n);
}

static bool on_device(const kd_tensor *t) {
  kd_device_type ty = kd_tensor_device(t).type;
  return ty != KD_DEVICE_CPU && ty != KD_DEVICE_META;
}

static kd_status k_empty(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  calls_empty++;
  if (!a[3].opt.has) return kd_set_error(KD_EINVAL, "scrambled empty: no device");
  if (a[5].opt.has && a[5].opt.v.mf != KD_MEMORY_FORMAT_CONTIGUOUS &&
      a[5].opt.v.mf != KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EUNSUPPORTED, "scrambled empty: contiguous only");
  kd_dtype dt = a[1].opt.has ? a[1].opt.v.dtype : kd_get_default_dtype();
  kd_tensor *t;
  kd_status st = kd_tensor_empty((int)a[0].ints.size, a[0].ints.data, dt, a[3].opt.v.device, &t);
  if (st) return st;
  r[0] = kd_value_tensor(t);
  kd_tensor_release(t);
  return KD_OK;
}

static kd_status k_empty_strided(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  calls_empty_strided++;
  if (!a[4].opt.has) return kd_set_error(KD_EINVAL, "scrambled empty_strided: no device");
  if (a[0].ints.size != a[1].ints.size)
    return kd_set_error(KD_EINVAL, "scrambled empty_strided: sizes and strides differ in length");
  kd_dtype dt = a[2].opt.has ? a[2].opt.v.dtype : kd_get_default_dtype();
  kd_tensor *t;
  kd_status st = kd_tensor_empty_strided((int)a[0].ints.size, a[0].ints.data, a[1].ints.data, dt,
                                         a[4].opt.v.device, &t);
  if (st) return st;
  r[0] = kd_value_tensor(t);
  kd_tensor_release(t);
  return KD_OK;
}

static kd_status k_fill(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  calls_fill++;
  kd_tensor *self = a[0].t, *v;
  unsigned char *buf;
  kd_status st = host_image(self, &v, &buf);
  if (st) return st;
  if (!(st = kd_fill_Scalar_(v, a[1].s))) write_back(self, buf);
  kd_tensor_release(v);
  if (!st) r[0] = kd_value_tensor_borrowed(self);
  return st;
}

static kd_status k_copy(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  calls_copy++;
  kd_tensor *self = a[0].t, *src = a[1].t, *hsrc = src, *hself = self;
  unsigned char *bsrc = NULL, *bself = NULL;
  kd_status st = KD_OK;
  if (on_device(src)) st = host_image(src, &hsrc, &bsrc);
  if (!st && on_device(self)) st = host_image(self, &hself, &bself);
  if (!st) st = kd_copy_(hself, hsrc, false);
  if (!st && hself != self) write_back(self, bself);
  if (hsrc != src) kd_tensor_release(hsrc);
  if (hself != self) kd_tensor_release(hself);
  if (!st) r[0] = kd_value_tensor_borrowed(self);
  return st;
}

static kd_status k_resize(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  calls_resize++;
  kd_status st = kd_tensor_resize_(a[0].t, (int)a[1].ints.size, a[1].ints.data, NULL);
  if (!st) r[0] = kd_value_tensor_borrowed(a[0].t);
  return st;
}

static kd_library *lib_dev, *lib_nofill, *lib_noalloc;

static void reg(kd_library *lib, const char *op, kd_unboxed_fn fn, const char *sig) {
  kd_kernel k = kd_kernel_unboxed(fn, sig);
  KD_ASSERT_OK(kd_library_impl(lib, op, &k, NULL));
}

#define SIG_EMPTY "(int[], ScalarType?, Layout?, Device?, bool?, MemoryFormat?) -> Tensor"
#define SIG_EMPTY_STRIDED "(int[], int[], ScalarType?, Layout?, Device?, bool?) -> Tensor"
#define SIG_FILL "(Tensor, Scalar) -> Tensor"
#define SIG_COPY "(Tensor, Tensor, bool) -> Tensor"
#define SIG_RESIZE "(Tensor, int[], MemoryFormat?) -> Tensor"

static void reg_five(kd_library *lib) {
  reg(lib, "aten::empty.memory_format", k_empty, SIG_EMPTY);
  reg(lib, "aten::empty_strided", k_empty_strided, SIG_EMPTY_STRIDED);
  reg(lib, "aten::fill_.Scalar", k_fill, SIG_FILL);
  reg(lib, "aten::copy_", k_copy, SIG_COPY);
  reg(lib, "aten::resize_", k_resize, SIG_RESIZE);
}

static int setup(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "scrambled", 0));
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE2, "nofill", 0));
  KD_ASSERT_OK(kd_device_type_register(KD_DEVICE_PRIVATEUSE3, "noalloc", 0));
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, sc_alloc, sc_free, NULL, sc_copy, sc_copy};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a));
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE1, __FILE__, __LINE__,
                               &lib_dev));
  reg_five(lib_dev);
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE2, __FILE__, __LINE__,
                               &lib_nofill));
  reg(lib_nofill, "aten::empty.memory_format", k_empty, SIG_EMPTY);
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE3, __FILE__, __LINE__,
                               &lib_noalloc));
  reg_five(lib_noalloc);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_library_close(lib_dev);
  kd_library_close(lib_nofill);
  kd_library_close(lib_noalloc);
  kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL);
  kd_allocator_set(KD_DEVICE_PRIVATEUSE2, NULL);
  kd_ops_close();
  return 0;
}

/* ---- Helpers --------------------------------------------------------------- */

/* t (owned, released) on the cpu. */
static kd_tensor *to_cpu(kd_tensor *t) {
  assert_non_null(t);
  kd_tensor *c = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(t, kd_device_cpu(), &c));
  kd_tensor_release(t);
  return c;
}

/* got (on the device; owned, released) has want's (cpu; owned, released)
 * sizes, dtype and values, read back through the allocator. */
static void expect_same(kd_tensor *got, kd_tensor *want) {
  assert_non_null(got);
  assert_non_null(want);
  if (kd_tensor_device(got).type != KD_DEVICE_PRIVATEUSE1)
    fail_msg("result on %s, expected the scrambled device",
             kd_device_type_name(kd_tensor_device(got).type));
  assert_int_equal(kd_tensor_dtype(got), kd_tensor_dtype(want));
  assert_int_equal(kd_tensor_ndim(got), kd_tensor_ndim(want));
  for (int i = 0; i < kd_tensor_ndim(want); i++)
    assert_int_equal(kd_tensor_sizes(got)[i], kd_tensor_sizes(want)[i]);
  kd_tensor *g = to_cpu(got), *w = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(want, kd_device_cpu(), &w)); /* contiguous */
  kd_tensor_release(want);
  size_t n = (size_t)kd_tensor_numel(w) * kd_tensor_itemsize(w);
  if (n && memcmp(kd_tensor_data(g), kd_tensor_data(w), n)) {
    char a[256], b[256];
    kd_tensor_describe(g, a, sizeof a);
    kd_tensor_describe(w, b, sizeof b);
    fail_msg("device result %s differs from the cpu's %s", a, b);
  }
  kd_tensor_release(g);
  kd_tensor_release(w);
}

/* A device copy of a cpu tensor (borrowed). */
static kd_tensor *on_dev(const kd_tensor *t) {
  kd_tensor *d = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(t, DEV, &d));
  return d;
}

static const kd_dtype DTYPES[] = {KD_BOOL,    KD_UINT8,   KD_INT32,    KD_INT64,
                                  KD_FLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64};
#define NDTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

/* ---- BackendSelect ------------------------------------------------------------ */

static void test_backend_select_reaches_the_device_slot(void **state) {
  (void)state;
  kd_tensor *t = NULL;
  int before = calls_empty, on1 = allocs_on_index[1];
  KD_ASSERT_OK(kd_empty_memory_format(INTS(2, 3), NULL, NULL, &DEV1, NULL, NULL, &t));
  assert_int_equal(calls_empty, before + 1); /* the device's own kernel ran */
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_PRIVATEUSE1);
  assert_int_equal(kd_tensor_device(t).index, 1);
  assert_int_equal(allocs_on_index[1], on1 + 1);
  kd_tensor_release(t);
  /* A composite factory with device="scrambled:1" lands on index 1 too. */
  kd_device d1;
  KD_ASSERT_OK(kd_device_parse("scrambled:1", &d1));
  KD_ASSERT_OK(kd_zeros(INTS(4), NULL, NULL, &d1, NULL, &t));
  assert_int_equal(kd_tensor_device(t).index, 1);
  kd_tensor *w = NULL;
  KD_ASSERT_OK(kd_zeros(INTS(4), NULL, NULL, NULL, NULL, &w));
  expect_same(t, w);
  /* empty_strided through the boxed path as well. */
  kd_dtype i64 = KD_INT64;
  KD_ASSERT_OK(kd_empty_strided(INTS(2, 3), INTS(1, 2), &i64, NULL, &DEV1, NULL, &t));
  EXPECT_GEOM(t, (2, 3), (1, 2), 0);
  assert_int_equal(kd_tensor_device(t).index, 1);
  kd_tensor_release(t);
  /* None and cpu still give cpu tensors; meta gives meta. */
  KD_ASSERT_OK(kd_empty_memory_format(INTS(2), NULL, NULL, NULL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_CPU);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_ones(INTS(2), NULL, NULL, &OC_META, NULL, &t));
  EXPECT_SHAPE(t, KD_FLOAT32, KD_DEVICE_META, 2);
  kd_tensor_release(t);
}

static int calls_own_ones;

/* A backend's own kernel for a composite factory (ones): it must win in the
 * backend's slot, which the factory call reaches through BackendSelect. */
static kd_status k_own_ones(const kd_call *call, const kd_arg *a, kd_value *r) {
  calls_own_ones++;
  assert_int_equal(call->key, KD_KEY_PRIVATEUSE1);
  kd_tensor *t;
  kd_status st = kd_empty_memory_format((kd_ints){a[0].ints.data, a[0].ints.size},
                                        a[1].opt.has ? &a[1].opt.v.dtype : NULL, NULL,
                                        &a[3].opt.v.device, NULL, NULL, &t);
  if (st) return st;
  kd_scalar one = kd_scalar_int(1);
  if ((st = kd_fill_Scalar_(t, &one))) {
    kd_tensor_release(t);
    return st;
  }
  r[0] = kd_value_tensor(t);
  kd_tensor_release(t);
  return KD_OK;
}

static void test_backend_select_prefers_the_backends_own_kernel(void **state) {
  (void)state;
  kd_library *own;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE1, __FILE__, __LINE__,
                               &own));
  reg(own, "aten::ones", k_own_ones, "(int[], ScalarType?, Layout?, Device?, bool?) -> Tensor");
  kd_tensor *g = NULL, *w = NULL;
  KD_ASSERT_OK(kd_ones(INTS(3), NULL, NULL, &DEV1, NULL, &g));
  assert_int_equal(calls_own_ones, 1);
  assert_int_equal(kd_tensor_device(g).index, 1);
  KD_ASSERT_OK(kd_ones(INTS(3), NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  /* cpu calls still reach the CPU kernel */
  KD_ASSERT_OK(kd_ones(INTS(3), NULL, NULL, NULL, NULL, &w));
  assert_int_equal(calls_own_ones, 1);
  kd_tensor_release(w);
  kd_library_close(own);
  /* closed: the composite serves the device again */
  KD_ASSERT_OK(kd_ones(INTS(3), NULL, NULL, &DEV, NULL, &g));
  assert_int_equal(calls_own_ones, 1);
  KD_ASSERT_OK(kd_ones(INTS(3), NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
}

/* ---- Factories ------------------------------------------------------------------ */

static void test_factories_match_the_cpu(void **state) {
  (void)state;
  for (int i = 0; i < NDTYPES; i++) {
    kd_dtype dt = DTYPES[i];
    kd_tensor *g = NULL, *w = NULL;
    KD_ASSERT_OK(kd_zeros(INTS(3, 5), &dt, NULL, &DEV, NULL, &g));
    KD_ASSERT_OK(kd_zeros(INTS(3, 5), &dt, NULL, NULL, NULL, &w));
    expect_same(g, w);
    KD_ASSERT_OK(kd_ones(INTS(7), &dt, NULL, &DEV, NULL, &g));
    KD_ASSERT_OK(kd_ones(INTS(7), &dt, NULL, NULL, NULL, &w));
    expect_same(g, w);
    kd_scalar v = kd_scalar_double(3.0);
    KD_ASSERT_OK(kd_full(INTS(2, 2), &v, &dt, NULL, &DEV, NULL, &g));
    KD_ASSERT_OK(kd_full(INTS(2, 2), &v, &dt, NULL, NULL, NULL, &w));
    expect_same(g, w);
  }
  /* full's dtype from the value */
  kd_scalar seven = kd_scalar_int(7);
  kd_tensor *g = NULL, *w = NULL;
  KD_ASSERT_OK(kd_full(INTS(3), &seven, NULL, NULL, &DEV, NULL, &g));
  KD_ASSERT_OK(kd_full(INTS(3), &seven, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  /* arange and eye: computed on the host, moved with empty + copy_ */
  kd_scalar s0 = kd_scalar_int(2), s1 = kd_scalar_int(11), st = kd_scalar_int(3);
  KD_ASSERT_OK(kd_arange_start_step(&s0, &s1, &st, NULL, NULL, &DEV, NULL, &g));
  KD_ASSERT_OK(kd_arange_start_step(&s0, &s1, &st, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  KD_ASSERT_OK(kd_eye_m(3, 4, NULL, NULL, &DEV, NULL, &g));
  KD_ASSERT_OK(kd_eye_m(3, 4, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  /* zero-element tensors */
  KD_ASSERT_OK(kd_ones(INTS(0, 3), NULL, NULL, &DEV, NULL, &g));
  KD_ASSERT_OK(kd_ones(INTS(0, 3), NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
}

static void test_like_and_new_factories(void **state) {
  (void)state;
  kd_tensor *c = IOTA(KD_FLOAT64, 2, 3), *d = on_dev(c);
  kd_tensor *g = NULL, *w = NULL;
  KD_ASSERT_OK(kd_zeros_like(d, NULL, NULL, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_zeros_like(c, NULL, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  kd_dtype i32 = KD_INT32;
  KD_ASSERT_OK(kd_ones_like(d, &i32, NULL, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_ones_like(c, &i32, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  kd_scalar v = kd_scalar_double(-1.5);
  KD_ASSERT_OK(kd_full_like(d, &v, NULL, NULL, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_full_like(c, &v, NULL, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  /* a cpu self with device= the device: the CPU kernel hands over */
  KD_ASSERT_OK(kd_ones_like(c, NULL, NULL, &DEV, NULL, NULL, &g));
  KD_ASSERT_OK(kd_ones_like(c, NULL, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  KD_ASSERT_OK(kd_full_like(c, &v, NULL, NULL, &DEV, NULL, NULL, &g));
  KD_ASSERT_OK(kd_full_like(c, &v, NULL, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  /* empty_like keeps a transposed (dense) layout, as on the cpu */
  kd_tensor *dt = NULL, *ct = NULL;
  KD_ASSERT_OK(kd_transpose_int(d, 0, 1, &dt));
  KD_ASSERT_OK(kd_transpose_int(c, 0, 1, &ct));
  KD_ASSERT_OK(kd_empty_like(dt, NULL, NULL, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_empty_like(ct, NULL, NULL, NULL, NULL, NULL, &w));
  assert_int_equal(kd_tensor_device(g).type, KD_DEVICE_PRIVATEUSE1);
  EXPECT_GEOM(g, (3, 2), (1, 3), 0);
  EXPECT_GEOM(w, (3, 2), (1, 3), 0);
  kd_tensor_release(g);
  kd_tensor_release(w);
  KD_ASSERT_OK(kd_empty_like(c, NULL, NULL, &DEV1, NULL, NULL, &g));
  assert_int_equal(kd_tensor_device(g).index, 1);
  kd_tensor_release(g);
  /* new_* take dtype and device from self */
  KD_ASSERT_OK(kd_new_zeros(d, INTS(4), NULL, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_new_zeros(c, INTS(4), NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  KD_ASSERT_OK(kd_new_ones(d, INTS(2, 2), &i32, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_new_ones(c, INTS(2, 2), &i32, NULL, NULL, NULL, &w));
  expect_same(g, w);
  KD_ASSERT_OK(kd_new_full(d, INTS(3), &v, NULL, NULL, NULL, NULL, &g));
  KD_ASSERT_OK(kd_new_full(c, INTS(3), &v, NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  KD_ASSERT_OK(kd_new_empty(d, INTS(5), NULL, NULL, NULL, NULL, &g));
  EXPECT_SHAPE(g, KD_FLOAT64, KD_DEVICE_PRIVATEUSE1, 5);
  kd_tensor_release(g);
  KD_ASSERT_OK(kd_new_empty_strided(d, INTS(2, 2), INTS(1, 2), NULL, NULL, NULL, NULL, &g));
  EXPECT_GEOM(g, (2, 2), (1, 2), 0);
  assert_int_equal(kd_tensor_device(g).type, KD_DEVICE_PRIVATEUSE1);
  kd_tensor_release(g);
  /* new_zeros of a cpu tensor onto the device */
  KD_ASSERT_OK(kd_new_zeros(c, INTS(2), NULL, NULL, &DEV, NULL, &g));
  KD_ASSERT_OK(kd_new_zeros(c, INTS(2), NULL, NULL, NULL, NULL, &w));
  expect_same(g, w);
  kd_tensor_release(dt);
  kd_tensor_release(ct);
  kd_tensor_release(d);
  kd_tensor_release(c);
}

static void test_out_and_inplace_factories(void **state) {
  (void)state;
  kd_tensor *c = IOTA(KD_INT64, 4), *d = on_dev(c);
  KD_ASSERT_OK(kd_zero_(d));
  KD_ASSERT_OK(kd_zero_(c));
  kd_tensor *dd = NULL;
  KD_ASSERT_OK(kd_tensor_to_device(d, kd_device_cpu(), &dd));
  expect_same(on_dev(dd), c);
  kd_tensor_release(dd);
  /* ones.out with the same sizes, and with fewer elements (resize_) */
  int resizes = calls_resize;
  KD_ASSERT_OK(kd_ones_out(INTS(4), d));
  kd_tensor *w = NULL;
  KD_ASSERT_OK(kd_ones(INTS(4), &(kd_dtype){KD_INT64}, NULL, NULL, NULL, &w));
  kd_tensor_retain(d);
  expect_same(d, w);
  assert_int_equal(calls_resize, resizes);
  kd_scalar v = kd_scalar_int(9);
  KD_ASSERT_OK(kd_full_out(INTS(2), &v, d));
  assert_int_equal(calls_resize, resizes + 1);
  KD_ASSERT_OK(kd_full(INTS(2), &v, &(kd_dtype){KD_INT64}, NULL, NULL, NULL, &w));
  expect_same(d, w);
}

/* ---- Composites ------------------------------------------------------------------ */

static void test_clone_contiguous_copy(void **state) {
  (void)state;
  kd_tensor *c = IOTA(KD_FLOAT32, 3, 4), *d = on_dev(c);
  kd_tensor *g = NULL, *w = NULL;
  KD_ASSERT_OK(kd_clone(d, NULL, &g));
  KD_ASSERT_OK(kd_clone(c, NULL, &w));
  expect_same(g, w);
  /* contiguous of a transposed device tensor: a real copy */
  kd_tensor *dt = NULL, *ct = NULL;
  KD_ASSERT_OK(kd_transpose_int(d, 0, 1, &dt));
  KD_ASSERT_OK(kd_transpose_int(c, 0, 1, &ct));
  KD_ASSERT_OK(kd_contiguous(dt, KD_MEMORY_FORMAT_CONTIGUOUS, &g));
  EXPECT_GEOM(g, (4, 3), (3, 1), 0);
  KD_ASSERT_OK(kd_contiguous(ct, KD_MEMORY_FORMAT_CONTIGUOUS, &w));
  expect_same(g, w);
  /* clone preserves the transposed layout */
  KD_ASSERT_OK(kd_clone(dt, NULL, &g));
  EXPECT_GEOM(g, (4, 3), (1, 4), 0);
  KD_ASSERT_OK(kd_clone(ct, NULL, &w));
  expect_same(g, w);
  /* reshape that cannot be a view copies */
  KD_ASSERT_OK(kd_reshape(dt, INTS(12), &g));
  assert_false(kd_tensor_shares_storage(g, d));
  KD_ASSERT_OK(kd_reshape(ct, INTS(12), &w));
  expect_same(g, w);
  kd_tensor *row = FROM(KD_FLOAT64, (4), 1, 2, 3, 4), *drow = on_dev(row);
  /* expand_as, then contiguous */
  kd_tensor *e = NULL;
  KD_ASSERT_OK(kd_expand_as(drow, d, &e));
  assert_true(kd_tensor_shares_storage(e, drow));
  EXPECT_GEOM(e, (3, 4), (0, 1), 0);
  KD_ASSERT_OK(kd_contiguous(e, KD_MEMORY_FORMAT_CONTIGUOUS, &g));
  kd_tensor *ce = NULL;
  KD_ASSERT_OK(kd_expand_as(row, c, &ce));
  KD_ASSERT_OK(kd_contiguous(ce, KD_MEMORY_FORMAT_CONTIGUOUS, &w));
  expect_same(g, w);
  kd_tensor_release(ce);
  kd_tensor_release(e);
  kd_tensor_release(row);
  kd_tensor_release(drow);
  kd_tensor_release(dt);
  kd_tensor_release(ct);
  kd_tensor_release(d);
  kd_tensor_release(c);
}

static void test_to_and_to_copy(void **state) {
  (void)state;
  kd_tensor *c = FROM(KD_FLOAT64, (2, 3), 1.5, -2.25, 3, 4.75, -5, 6), *d = NULL;
  /* cpu -> device (to.device) */
  KD_ASSERT_OK(kd_to_device(c, DEV, KD_FLOAT64, false, false, NULL, &d));
  kd_tensor_retain(c);
  kd_tensor_retain(d);
  expect_same(d, c);
  /* dtype change on the device */
  kd_tensor *g = NULL, *w = NULL;
  KD_ASSERT_OK(kd_to_dtype(d, KD_INT32, false, false, NULL, &g));
  KD_ASSERT_OK(kd_to_dtype(c, KD_INT32, false, false, NULL, &w));
  expect_same(g, w);
  /* the same dtype and device, no copy: self itself */
  KD_ASSERT_OK(kd_to_dtype(d, KD_FLOAT64, false, false, NULL, &g));
  assert_ptr_equal(g, d);
  kd_tensor_release(g);
  /* device -> cpu with a dtype change */
  kd_dtype f32 = KD_FLOAT32;
  kd_device cpu = kd_device_cpu();
  KD_ASSERT_OK(kd_internal_to_copy(d, &f32, NULL, &cpu, NULL, false, NULL, &g));
  assert_int_equal(kd_tensor_device(g).type, KD_DEVICE_CPU);
  KD_ASSERT_OK(kd_internal_to_copy(c, &f32, NULL, NULL, NULL, false, NULL, &w));
  assert_memory_equal(kd_tensor_data(g), kd_tensor_data(w), 6 * sizeof(float));
  kd_tensor_release(g);
  kd_tensor_release(w);
  /* to.other: like a device tensor, from a cpu one */
  kd_tensor *o = IOTA(KD_INT16, 1), *od = on_dev(o);
  KD_ASSERT_OK(kd_to_other(c, od, false, false, NULL, &g));
  KD_ASSERT_OK(kd_to_dtype(c, KD_INT16, false, false, NULL, &w));
  expect_same(g, w);
  /* a transposed device tensor to the cpu keeps its values */
  kd_tensor *dt = NULL, *ct = NULL;
  KD_ASSERT_OK(kd_transpose_int(d, 0, 1, &dt));
  KD_ASSERT_OK(kd_transpose_int(c, 0, 1, &ct));
  KD_ASSERT_OK(kd_to_dtype_layout(dt, NULL, NULL, &DEV1, NULL, false, true, NULL, &g));
  assert_int_equal(kd_tensor_device(g).index, 1);
  kd_tensor_retain(ct);
  expect_same(g, ct);
  kd_tensor_release(dt);
  kd_tensor_release(ct);
  kd_tensor_release(o);
  kd_tensor_release(od);
  kd_tensor_release(d);
  kd_tensor_release(c);
}

/* ---- Views ------------------------------------------------------------------------- */

/* The view (on the device) and the same view of the cpu tensor agree. */
static void expect_view(kd_tensor *g, kd_tensor *w, const kd_tensor *base) {
  assert_true(kd_tensor_shares_storage(g, base));
  expect_same(g, w);
}

static void test_views_on_the_device(void **state) {
  (void)state;
  kd_tensor *c = IOTA(KD_INT32, 2, 3, 4), *d = on_dev(c);
  kd_tensor *g = NULL, *w = NULL;
  int copies = calls_copy, fills = calls_fill;
  KD_ASSERT_OK(kd_view(d, INTS(6, 4), &g));
  KD_ASSERT_OK(kd_view(c, INTS(6, 4), &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_reshape(d, INTS(4, -1), &g));
  KD_ASSERT_OK(kd_reshape(c, INTS(4, -1), &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_transpose_int(d, 0, 2, &g));
  KD_ASSERT_OK(kd_transpose_int(c, 0, 2, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_permute(d, INTS(2, 0, 1), &g));
  KD_ASSERT_OK(kd_permute(c, INTS(2, 0, 1), &w));
  expect_view(g, w, d);
  int64_t s = 1, e = 3;
  KD_ASSERT_OK(kd_slice_Tensor(d, 2, &s, &e, 1, &g));
  KD_ASSERT_OK(kd_slice_Tensor(c, 2, &s, &e, 1, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_select_int(d, 1, 2, &g));
  KD_ASSERT_OK(kd_select_int(c, 1, 2, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_narrow(d, 1, 1, 2, &g));
  KD_ASSERT_OK(kd_narrow(c, 1, 1, 2, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_unsqueeze(d, 1, &g));
  KD_ASSERT_OK(kd_unsqueeze(c, 1, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_flatten_using_ints(d, 0, -1, &g));
  KD_ASSERT_OK(kd_flatten_using_ints(c, 0, -1, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_view_dtype(d, KD_UINT8, &g));
  KD_ASSERT_OK(kd_view_dtype(c, KD_UINT8, &w));
  expect_view(g, w, d);
  kd_tensor *d1 = NULL, *c1 = NULL;
  KD_ASSERT_OK(kd_select_int(d, 0, 1, &d1));
  KD_ASSERT_OK(kd_select_int(c, 0, 1, &c1));
  KD_ASSERT_OK(kd_t(d1, &g));
  KD_ASSERT_OK(kd_t(c1, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_expand(d1, INTS(2, 3, 4), false, &g));
  KD_ASSERT_OK(kd_expand(c1, INTS(2, 3, 4), false, &w));
  expect_view(g, w, d);
  kd_tensor *u = NULL, *cu = NULL;
  KD_ASSERT_OK(kd_unsqueeze(d1, 0, &u));
  KD_ASSERT_OK(kd_unsqueeze(c1, 0, &cu));
  KD_ASSERT_OK(kd_squeeze(u, &g));
  KD_ASSERT_OK(kd_squeeze(cu, &w));
  expect_view(g, w, d);
  KD_ASSERT_OK(kd_squeeze_dim(u, 0, &g));
  KD_ASSERT_OK(kd_squeeze_dim(cu, 0, &w));
  expect_view(g, w, d);
  /* in-place views */
  KD_ASSERT_OK(kd_t_(d1));
  KD_ASSERT_OK(kd_t_(c1));
  kd_tensor_retain(d1);
  kd_tensor_retain(c1);
  expect_view(d1, c1, d);
  /* Views copied nothing (the comparisons move bytes with the allocator). */
  assert_int_equal(calls_copy, copies);
  assert_int_equal(calls_fill, fills);
  kd_tensor_release(u);
  kd_tensor_release(cu);
  kd_tensor_release(d1);
  kd_tensor_release(c1);
  kd_tensor_release(d);
  kd_tensor_release(c);
}

/* ---- Failure paths --------------------------------------------------------------- */

static void test_a_backend_without_fill_fails_naming_fill(void **state) {
  (void)state;
  kd_tensor *t = (kd_tensor *)1;
  KD_ASSERT_ERR(kd_zeros(INTS(3), NULL, NULL, &NOFILL, NULL, &t), KD_ENOKERNEL, "fill_");
  assert_null(t);
  assert_non_null(strstr(kd_last_error(), "PrivateUse2"));
  kd_scalar v = kd_scalar_int(1);
  t = (kd_tensor *)1;
  KD_ASSERT_ERR(kd_full(INTS(3), &v, NULL, NULL, &NOFILL, NULL, &t), KD_ENOKERNEL, "fill_");
  assert_null(t);
  /* empty itself works there */
  KD_ASSERT_OK(kd_empty_memory_format(INTS(3), NULL, NULL, &NOFILL, NULL, NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_PRIVATEUSE2);
  /* ... and so do views */
  kd_tensor *v2 = NULL;
  KD_ASSERT_OK(kd_unsqueeze(t, 0, &v2));
  kd_tensor_release(v2);
  /* clone needs empty_strided: not registered there */
  KD_ASSERT_ERR(kd_clone(t, NULL, &v2), KD_ENOKERNEL, "empty_strided");
  assert_null(v2);
  kd_tensor_release(t);
}

/* Composites built on computing operators reach the backend's slot of
 * those operators (where its kernels, or the CPU fallback, serve them): with
 * only the five primitives, the error names the computing operator. */
static void test_composites_reach_computing_operators_on_the_device(void **state) {
  (void)state;
  kd_tensor *c = IOTA(KD_FLOAT32, 2, 2), *d = on_dev(c), *r = (kd_tensor *)1;
  kd_tensors both = TENSORS(d, d);
  KD_ASSERT_ERR(kd_stack_op(both, 0, &r), KD_ENOKERNEL,
                "Could not run 'aten::cat' with arguments from the 'PrivateUse1' backend");
  assert_null(r);
  kd_tensor *mask = NULL, *dmask = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(c, KD_BOOL, &mask));
  dmask = on_dev(mask);
  kd_scalar v = kd_scalar_int(5);
  r = (kd_tensor *)1;
  KD_ASSERT_ERR(kd_masked_fill_Scalar(d, dmask, &v, &r), KD_ENOKERNEL,
                "Could not run 'aten::masked_fill_.Scalar' with arguments from the 'PrivateUse1' "
                "backend");
  assert_null(r);
  /* dot.out: the dispatched dot, not a refusal of device tensors */
  kd_tensor *row = IOTA(KD_FLOAT32, 3), *drow = on_dev(row), *o = NULL;
  KD_ASSERT_OK(kd_empty_memory_format(NO_INTS, NULL, NULL, &DEV, NULL, NULL, &o));
  KD_ASSERT_ERR(kd_dot_out(drow, drow, o), KD_ENOKERNEL,
                "Could not run 'aten::dot' with arguments from the 'PrivateUse1' backend");
  /* softmax with a dtype: the cast is the dispatched to.dtype, then _softmax */
  kd_dtype f64 = KD_FLOAT64;
  r = (kd_tensor *)1;
  KD_ASSERT_ERR(kd_softmax_int(drow, 0, &f64, &r), KD_ENOKERNEL,
                "Could not run 'aten::_softmax' with arguments from the 'PrivateUse1' backend");
  assert_null(r);
  kd_tensor_release(o);
  kd_tensor_release(drow);
  kd_tensor_release(row);
  kd_tensor_release(mask);
  kd_tensor_release(dmask);
  kd_tensor_release(d);
  kd_tensor_release(c);
}

static void test_a_device_without_allocator_fails_cleanly(void **state) {
  (void)state;
  kd_tensor *t = (kd_tensor *)1;
  kd_status st = kd_zeros(INTS(3), NULL, NULL, &NOALLOC, NULL, &t);
  assert_int_equal(st, KD_EUNSUPPORTED);
  assert_non_null(strstr(kd_last_error(), "noalloc"));
  assert_null(t);
  t = (kd_tensor *)1;
  kd_tensor *c = IOTA(KD_FLOAT32, 2);
  assert_int_equal(kd_to_device(c, NOALLOC, KD_FLOAT32, false, false, NULL, &t), KD_EUNSUPPORTED);
  assert_null(t);
  kd_tensor_release(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backend_select_reaches_the_device_slot),
      cmocka_unit_test(test_backend_select_prefers_the_backends_own_kernel),
      cmocka_unit_test(test_factories_match_the_cpu),
      cmocka_unit_test(test_like_and_new_factories),
      cmocka_unit_test(test_out_and_inplace_factories),
      cmocka_unit_test(test_clone_contiguous_copy),
      cmocka_unit_test(test_to_and_to_copy),
      cmocka_unit_test(test_views_on_the_device),
      cmocka_unit_test(test_a_backend_without_fill_fails_naming_fill),
      cmocka_unit_test(test_composites_reach_computing_operators_on_the_device),
      cmocka_unit_test(test_a_device_without_allocator_fails_cleanly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
