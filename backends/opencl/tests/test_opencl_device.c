/*
 * test_opencl_device.c: the OpenCL backend's device core (opencl_device.c,
 * opencl_program.c, opencl_factory.c), through the loaded plugin: discovery,
 * the allocator and its cache, copies in every direction, fill, device
 * addresses, programs and launches, errors.
 *
 *   test_opencl_device PLUGIN
 *
 * Exits 77 (ctest: skipped) with one line when no OpenCL platform with a
 * device exists, or when the plugin was not built (no PLUGIN argument).
 * The plugin's private functions are reached through the record's
 * get_proc_address (opencl_device.c, "Extras").
 */
#include "kd_test.h"

#include <pthread.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "kd/backend.h"
#include "kd/dlpack.h"
#include "kd/ops.h"
#include "kdcl.h"

static const char *plugin_path;
static kd_plugin *plugin;

typedef const char *(*error_name_fn)(cl_int);
typedef int (*cache_stats_fn)(int, long long[4]);
typedef void (*cache_empty_fn)(int);
typedef kd_status (*resolve_fn)(const void *, cl_mem *, size_t *, const char *);
typedef kd_status (*tensor_buffer_fn)(const kd_tensor *, cl_mem *, size_t *, const char *);
typedef kdcl_device *(*device_get_fn)(int);
typedef const kdcl_device_info *(*info_fn)(const kdcl_device *);
typedef kd_status (*kernel_get_fn)(kdcl_device *, const char *, const char *, const char *,
                                   kdcl_kernel **, const char *);
typedef kd_status (*launch_fn)(kdcl_device *, kdcl_kernel *, int, const kdcl_arg *, cl_uint,
                               const size_t *, const size_t *, const char *);
typedef const char *(*ctype_fn)(const kdcl_device *, kd_dtype, const char *);
typedef cl_context (*context_fn)(const kdcl_device *);
typedef cl_command_queue (*queue_fn)(const kdcl_device *);

static const kd_backend_iface *iface(void) {
  const kd_backend *b = kd_backend_for_device(KD_DEVICE_PRIVATEUSE1);
  assert_non_null(b);
  return kd_backend_iface_of(b);
}

typedef void (*any_fn)(void);
static any_fn proc(const char *name) {
  void *f = iface()->get_proc_address(iface()->ctx, name);
  if (!f) fail_msg("get_proc_address(\"%s\") gave NULL", name);
  return (any_fn)(uintptr_t)f;
}

static const kd_device dev0 = {KD_DEVICE_PRIVATEUSE1, 0};

/* The number of devices of the platform the plugin picks (the first with one). */
static cl_uint platform_devices(void) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 0;
  cl_platform_id ids[16];
  if (np > 16) np = 16;
  if (clGetPlatformIDs(np, ids, NULL) != CL_SUCCESS) return 0;
  for (cl_uint i = 0; i < np; i++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS && nd) return nd;
  }
  return 0;
}

/* ---- Loading ------------------------------------------------------------------- */

static void test_platform_env(void **state) {
  (void)state;
  /* A platform that does not exist: the load fails, names the variable, leaves nothing. */
  setenv("KD_OPENCL_PLATFORM", "no-such-platform-xyz", 1);
  kd_plugin *p = NULL;
  KD_ASSERT_ERR(kd_backend_load(plugin_path, &p), KD_ENOTFOUND,
                "KD_OPENCL_PLATFORM=\"no-such-platform-xyz\"");
  assert_null(p);
  unsetenv("KD_OPENCL_PLATFORM");
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  /* A bad cache size: refused with the variable named. */
  setenv("KD_OPENCL_CACHE_MB", "lots", 1);
  KD_ASSERT_ERR(kd_backend_load(plugin_path, &p), KD_EINVAL, "KD_OPENCL_CACHE_MB=\"lots\"");
  unsetenv("KD_OPENCL_CACHE_MB");
}

static void test_load(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_load(plugin_path, &plugin));
  assert_int_equal(kd_device_count(KD_DEVICE_PRIVATEUSE1), (int)platform_devices());
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "opencl");
  assert_int_equal(iface()->dlpack_device_type, 4); /* kDLOpenCL */
  /* A second load of the same backend is refused: the type is taken. */
  kd_plugin *again = NULL;
  KD_ASSERT_ERR(kd_backend_load(plugin_path, &again), KD_EEXIST, "opencl");
  assert_null(again);
  device_get_fn get = (device_get_fn)proc("kdcl_device_get");
  info_fn info = (info_fn)proc("kdcl_info");
  assert_non_null(get(0));
  assert_null(get(kd_device_count(KD_DEVICE_PRIVATEUSE1)));
  assert_null(get(-1));
  const kdcl_device_info *in = info(get(0));
  assert_int_equal(in->index, 0);
  assert_true(in->name[0] != 0);
  assert_true(in->max_alloc > 0 && in->max_alloc <= KDCL_MAX_ALLOC);
  assert_true(in->max_work_group > 0);
  assert_non_null(iface()->queue(iface()->ctx, dev0));
}

/* ---- Memory and copies --------------------------------------------------------- */

static void test_round_trip(void **state) {
  (void)state;
  for (int64_t n = 1; n <= 100000; n = n * 7 + 3) {
    float *src = malloc((size_t)n * sizeof *src);
    assert_non_null(src);
    for (int64_t i = 0; i < n; i++) src[i] = (float)i * 0.5f - 3.0f;
    kd_tensor *h, *d, *d2, *back;
    KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, src, &h));
    KD_ASSERT_OK(kd_tensor_to_device(h, dev0, &d));
    assert_int_equal(kd_tensor_device(d).type, KD_DEVICE_PRIVATEUSE1);
    /* device -> device (clEnqueueCopyBuffer), then back to the host */
    KD_ASSERT_OK(kd_tensor_to_device(d, dev0, &d2));
    assert_ptr_not_equal(kd_tensor_data(d), kd_tensor_data(d2));
    KD_ASSERT_OK(kd_tensor_to_device(d2, (kd_device){KD_DEVICE_CPU, 0}, &back));
    assert_memory_equal(kd_tensor_data(back), src, (size_t)n * sizeof *src);
    kd_tensor_release(h);
    kd_tensor_release(d);
    kd_tensor_release(d2);
    kd_tensor_release(back);
    free(src);
  }
}

/* Copies at offsets inside one buffer, overlapping ones included (those go
 * through the host: OpenCL refuses overlapping clEnqueueCopyBuffer). */
static void test_copy_device_offsets(void **state) {
  (void)state;
  int64_t n = 64;
  int32_t v[64], got[64];
  for (int i = 0; i < 64; i++) v[i] = i;
  kd_tensor *h, *d;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_INT32, v, &h));
  KD_ASSERT_OK(kd_tensor_to_device(h, dev0, &d));
  char *base = kd_tensor_data(d);
  const kd_backend_iface *b = iface();
  /* [0, 32) -> [32, 64): no overlap */
  KD_ASSERT_OK(b->copy_device(b->ctx, dev0, base + 128, dev0, base, 128));
  /* [0, 32) -> [8, 40): overlaps */
  KD_ASSERT_OK(b->copy_device(b->ctx, dev0, base + 32, dev0, base, 128));
  KD_ASSERT_OK(b->copy_to_host(b->ctx, dev0, got, base, sizeof got));
  KD_ASSERT_OK(b->synchronize(b->ctx, dev0));
  for (int i = 0; i < 64; i++) {
    int want = i < 8 ? i : i < 40 ? i - 8 : i - 32;
    assert_int_equal(got[i], want);
  }
  kd_tensor_release(h);
  kd_tensor_release(d);
}

static void test_zero_size(void **state) {
  (void)state;
  int64_t zero = 0;
  kd_tensor *d, *back;
  KD_ASSERT_OK(kd_tensor_empty(1, &zero, KD_FLOAT32, dev0, &d));
  assert_int_equal(kd_tensor_numel(d), 0);
  tensor_buffer_fn tb = (tensor_buffer_fn)proc("kdcl_tensor_buffer");
  cl_mem buf = (cl_mem)1;
  size_t off = 7;
  KD_ASSERT_OK(tb(d, &buf, &off, "test"));
  assert_null(buf);
  assert_int_equal(off, 0);
  KD_ASSERT_OK(kd_tensor_to_device(d, (kd_device){KD_DEVICE_CPU, 0}, &back));
  assert_int_equal(kd_tensor_numel(back), 0);
  /* A cpu tensor is not an opencl one. */
  KD_ASSERT_ERR(tb(back, &buf, &off, "mytest"), KD_EINVAL, "mytest: expected a tensor on an OpenCL device, got one on cpu");
  kd_tensor_release(d);
  kd_tensor_release(back);
}

static void test_alloc_too_big(void **state) {
  (void)state;
  info_fn info = (info_fn)proc("kdcl_info");
  const kdcl_device_info *in = info(((device_get_fn)proc("kdcl_device_get"))(0));
  int64_t n = (int64_t)in->max_alloc + 1;
  kd_tensor *t = NULL;
  KD_ASSERT_ERR(kd_tensor_empty(1, &n, KD_UINT8, dev0, &t), KD_ENOMEM,
                "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  assert_null(t);
  /* The device still works afterwards. */
  int64_t four = 4;
  KD_ASSERT_OK(kd_tensor_empty(1, &four, KD_UINT8, dev0, &t));
  kd_tensor_release(t);
}

static void test_resolve(void **state) {
  (void)state;
  resolve_fn resolve = (resolve_fn)proc("kdcl_resolve");
  int host = 0;
  cl_mem buf;
  size_t off;
  KD_ASSERT_ERR(resolve(&host, &buf, &off, "myop"), KD_EINVAL,
                "myop: ");
  KD_ASSERT_ERR(resolve(&host, &buf, &off, "myop"), KD_EINVAL,
                "is not an address of OpenCL device memory");
  assert_null(buf);
  KD_ASSERT_ERR(resolve(NULL, &buf, &off, "myop"), KD_EINVAL, "not an address");
  /* Inside an allocation, one past its end, past it, after it is freed. */
  int64_t n = 100;
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT64, dev0, &t));
  char *p = kd_tensor_data(t);
  KD_ASSERT_OK(resolve(p + 8 * 10, &buf, &off, "myop"));
  assert_non_null(buf);
  assert_int_equal(off, 80);
  KD_ASSERT_OK(resolve(p + 800, &buf, &off, "myop"));
  assert_int_equal(off, 800);
  size_t size = 0;
  assert_int_equal(clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof size, &size, NULL), CL_SUCCESS);
  assert_true(size >= 800);
  KD_ASSERT_ERR(resolve(p + size + 1, &buf, &off, "myop"), KD_EINVAL, "not an address");
  kd_tensor_release(t);
  KD_ASSERT_ERR(resolve(p, &buf, &off, "myop"), KD_EINVAL, "freed");
  /* The record's copies refuse a host pointer as the device side. */
  const kd_backend_iface *b = iface();
  char bytes[8] = {0};
  KD_ASSERT_ERR(b->copy_from_host(b->ctx, dev0, bytes, bytes, 8), KD_EINVAL,
                "opencl copy_from_host: ");
  KD_ASSERT_ERR(b->copy_to_host(b->ctx, dev0, bytes, bytes, 8), KD_EINVAL,
                "opencl copy_to_host: ");
  /* A device index out of range. */
  KD_ASSERT_ERR(b->synchronize(b->ctx, (kd_device){KD_DEVICE_PRIVATEUSE1, 99}), KD_ERANGE,
                "opencl:99 is not an OpenCL device");
}

static void test_cache(void **state) {
  (void)state;
  cache_stats_fn stats = (cache_stats_fn)proc("kdcl_cache_stats");
  cache_empty_fn empty = (cache_empty_fn)proc("kdcl_cache_empty");
  long long s0[4], s1[4], s2[4], s3[4];
  assert_int_equal(stats(99, s0), -1);
  empty(0);
  assert_int_equal(stats(0, s0), 0);
  assert_int_equal(s0[2], 0); /* nothing cached */
  int64_t n = 1000;
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, dev0, &t));
  stats(0, s1);
  assert_int_equal(s1[0], s0[0] + 1); /* created */
  assert_true(s1[3] >= s0[3] + 4000);
  kd_tensor_release(t);
  stats(0, s2);
  assert_true(s2[2] >= 4000); /* cached */
  assert_int_equal(s2[3], s0[3]);
  /* The same size class again (990 floats): a hit, no new buffer. */
  n = 990;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, dev0, &t));
  stats(0, s3);
  assert_int_equal(s3[0], s2[0]);
  assert_int_equal(s3[1], s2[1] + 1);
  assert_int_equal(s3[2], s2[2] - (s3[3] - s2[3]));
  kd_tensor_release(t);
  empty(0);
  stats(0, s3);
  assert_int_equal(s3[2], 0);
}

static void test_fill(void **state) {
  (void)state;
  const kd_backend_iface *b = iface();
  int64_t n = 33;
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_INT32, dev0, &t));
  char *p = kd_tensor_data(t);
  int32_t v = -123456;
  KD_ASSERT_OK(b->fill(b->ctx, dev0, p, &v, 4, 33));
  unsigned char three[3] = {1, 2, 3}; /* a pattern OpenCL cannot fill with */
  KD_ASSERT_OK(b->fill(b->ctx, dev0, p + 4, three, 3, 5));
  int32_t got[33];
  KD_ASSERT_OK(b->copy_to_host(b->ctx, dev0, got, p, sizeof got));
  assert_int_equal(got[0], -123456);
  const unsigned char *g = (const unsigned char *)got;
  for (int i = 0; i < 15; i++) assert_int_equal(g[4 + i], three[i % 3]);
  for (int i = 5; i < 33; i++) assert_int_equal(got[i], -123456);
  KD_ASSERT_OK(b->fill(b->ctx, dev0, p, &v, 4, 0)); /* nothing */
  kd_tensor_release(t);
}

/* Four threads allocate (through the cache), write, copy on the device,
 * read back and free at once: every thread sees its own values. */
static void *alloc_worker(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int it = 0; it < 200; it++) {
    int64_t n = 1 + (it * 37 + id * 101) % 3000;
    int32_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return (void *)1;
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(id * 1000003 + it * 7919 + i);
    kd_tensor *h = NULL, *d = NULL, *d2 = NULL, *back = NULL;
    bool ok = kd_tensor_from_data(1, &n, KD_INT32, v, &h) == KD_OK &&
              kd_tensor_to_device(h, dev0, &d) == KD_OK &&
              kd_tensor_to_device(d, dev0, &d2) == KD_OK &&
              kd_tensor_to_device(d2, (kd_device){KD_DEVICE_CPU, 0}, &back) == KD_OK &&
              !memcmp(kd_tensor_data(back), v, (size_t)n * sizeof *v);
    kd_tensor_release(h);
    kd_tensor_release(d);
    kd_tensor_release(d2);
    kd_tensor_release(back);
    free(v);
    if (!ok) return (void *)1;
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&t[i], NULL, alloc_worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < 4; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    assert_null(r);
  }
  long long st[4];
  ((cache_stats_fn)proc("kdcl_cache_stats"))(0, st);
  assert_true(st[1] > 0); /* the cache served some of them */
}

/* ---- Programs and launches --------------------------------------------------------- */

static const char bad_source[] = "__kernel void k(__global float *x) { x[0] = undeclared_name; }\n";
static const char good_source[] =
    "__kernel void iota(__global T *x, T scale) { size_t i = get_global_id(0); x[i] = (T)i * scale; }\n";

static void test_program(void **state) {
  (void)state;
  kernel_get_fn get = (kernel_get_fn)proc("kdcl_kernel_get");
  launch_fn launch = (launch_fn)proc("kdcl_launch");
  kdcl_device *d = ((device_get_fn)proc("kdcl_device_get"))(0);
  kdcl_kernel *k = NULL, *k2 = NULL;
  /* A build error: KD_EDEVICE with the build log (which names the identifier). */
  KD_ASSERT_ERR(get(d, bad_source, "", "k", &k, "myop"), KD_EDEVICE,
                "myop: clBuildProgram failed on opencl:0: CL_BUILD_PROGRAM_FAILURE");
  assert_non_null(strstr(kd_last_error(), "undeclared_name"));
  assert_null(k);
  /* A missing kernel in a good program. */
  KD_ASSERT_ERR(get(d, good_source, "-DT=int", "nope", &k, "myop"), KD_EDEVICE,
                "CL_INVALID_KERNEL_NAME");
  KD_ASSERT_ERR(get(NULL, good_source, "", "iota", &k, "myop"), KD_EINVAL, "NULL device");
  /* Built once, then cached: the same kernel object. */
  KD_ASSERT_OK(get(d, good_source, "-DT=int", "iota", &k, "myop"));
  KD_ASSERT_OK(get(d, good_source, "-DT=int", "iota", &k2, "myop"));
  assert_ptr_equal(k, k2);
  /* Other options: another program. */
  KD_ASSERT_OK(get(d, good_source, "-DT=float", "iota", &k2, "myop"));
  assert_ptr_not_equal(k, k2);
  int64_t n = 50;
  kd_tensor *t, *back;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_INT32, dev0, &t));
  cl_mem buf;
  size_t off;
  KD_ASSERT_OK(((tensor_buffer_fn)proc("kdcl_tensor_buffer"))(t, &buf, &off, "myop"));
  assert_int_equal(off, 0);
  cl_int scale = 3;
  kdcl_arg args[2] = {KDCL_ARG(buf), KDCL_ARG(scale)};
  size_t global = 50;
  KD_ASSERT_OK(launch(d, k, 2, args, 1, &global, NULL, "myop"));
  KD_ASSERT_OK(kd_tensor_to_device(t, (kd_device){KD_DEVICE_CPU, 0}, &back));
  const int32_t *v = kd_tensor_data(back);
  for (int i = 0; i < 50; i++) assert_int_equal(v[i], 3 * i);
  kd_tensor_release(back);
  /* Nothing to do: no enqueue. */
  size_t none = 0;
  KD_ASSERT_OK(launch(d, k, 2, args, 1, &none, NULL, "myop"));
  /* A wrong argument: the OpenCL error, the kernel and the argument named. */
  char small = 0;
  kdcl_arg bad[2] = {KDCL_ARG(buf), KDCL_ARG(small)};
  KD_ASSERT_ERR(launch(d, k, 2, bad, 1, &global, NULL, "myop"), KD_EDEVICE,
                "myop: clSetKernelArg failed on opencl:0: CL_INVALID_ARG_SIZE (-51) (kernel "
                "\"iota\", argument 1)");
  KD_ASSERT_ERR(launch(d, k, 2, args, 4, &global, NULL, "myop"), KD_EINVAL, "work_dim 4");
  kd_tensor_release(t);
}

static void test_error_names(void **state) {
  (void)state;
  error_name_fn name = (error_name_fn)proc("kdcl_error_name");
  KD_ASSERT_STR_EQ(name(CL_SUCCESS), "CL_SUCCESS");
  KD_ASSERT_STR_EQ(name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
  KD_ASSERT_STR_EQ(name(CL_INVALID_DEVICE_PARTITION_COUNT), "CL_INVALID_DEVICE_PARTITION_COUNT");
  KD_ASSERT_STR_EQ(name(-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
  KD_ASSERT_STR_EQ(name(-20), "CL_UNKNOWN_ERROR");
  KD_ASSERT_STR_EQ(name(12345), "CL_UNKNOWN_ERROR");
  /* Every code from -1 to -19 and -30 to -72 has a name. */
  for (int c = -1; c >= -72; c--) {
    if (c < -19 && c > -30) continue;
    if (!strcmp(name(c), "CL_UNKNOWN_ERROR")) fail_msg("no name for %d", c);
  }
}

static void test_ctype(void **state) {
  (void)state;
  ctype_fn ctype = (ctype_fn)proc("kdcl_ctype");
  kdcl_device *d = ((device_get_fn)proc("kdcl_device_get"))(0);
  const kdcl_device_info *in = ((info_fn)proc("kdcl_info"))(d);
  KD_ASSERT_STR_EQ(ctype(d, KD_FLOAT32, "x"), "float");
  KD_ASSERT_STR_EQ(ctype(d, KD_INT64, "x"), "long");
  KD_ASSERT_STR_EQ(ctype(d, KD_BOOL, "x"), "uchar");
  kd_clear_error();
  assert_null(ctype(d, KD_COMPLEX64, "myop"));
  assert_int_equal(kd_last_status(), KD_ETYPE);
  assert_non_null(strstr(kd_last_error(), "myop: dtype complex64 is not supported on opencl:0"));
  if (!in->fp16) {
    assert_null(ctype(d, KD_FLOAT16, "myop"));
    assert_non_null(strstr(kd_last_error(), "(no cl_khr_fp16)"));
  }
}

/* ---- Factories (the generated kernels, dispatched) ----------------------------------- */

static void test_factories(void **state) {
  (void)state;
  kd_tensor *t = NULL, *back;
  int64_t sizes[2] = {3, 4}, strides[2] = {1, 3};
  kd_dtype f32 = KD_FLOAT32;
  /* empty_strided and empty.memory_format: the plugin's own kernels (dispatched). */
  KD_ASSERT_OK(kd_empty_strided((kd_ints){sizes, 2}, (kd_ints){strides, 2}, &f32, NULL, &dev0,
                                NULL, &t));
  assert_int_equal(kd_tensor_device(t).type, KD_DEVICE_PRIVATEUSE1);
  assert_int_equal(kd_tensor_strides(t)[0], 1);
  assert_int_equal(kd_tensor_strides(t)[1], 3);
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_empty_memory_format((kd_ints){sizes, 2}, &f32, NULL, &dev0, NULL, NULL, &t));
  assert_int_equal(kd_tensor_numel(t), 12);
  assert_true(kd_tensor_is_contiguous(t));
  /* resize_: libkdops' own kernel, growing through the device's allocator and
   * keeping the old values. */
  float v[12];
  for (int i = 0; i < 12; i++) v[i] = (float)i;
  const kd_backend_iface *b = iface();
  KD_ASSERT_OK(b->copy_from_host(b->ctx, dev0, kd_tensor_data(t), v, sizeof v));
  int64_t big = 100;
  KD_ASSERT_OK(kd_resize_(t, (kd_ints){&big, 1}, NULL));
  assert_int_equal(kd_tensor_numel(t), 100);
  KD_ASSERT_OK(kd_tensor_to_device(t, (kd_device){KD_DEVICE_CPU, 0}, &back));
  assert_memory_equal(kd_tensor_data(back), v, sizeof v);
  kd_tensor_release(back);
  kd_tensor_release(t);
  /* Refusals, with the operator named. */
  int64_t neg = -2;
  t = NULL;
  KD_ASSERT_ERR(kd_empty_memory_format((kd_ints){&neg, 1}, &f32, NULL, &dev0, NULL, NULL, &t),
                KD_EINVAL, "opencl empty.memory_format: Trying to create tensor with negative dimension -2");
  assert_null(t);
  KD_ASSERT_ERR(kd_empty_strided((kd_ints){sizes, 2}, (kd_ints){strides, 1}, &f32, NULL, &dev0,
                                 NULL, &t),
                KD_EINVAL, "opencl empty_strided: mismatch in length of strides and shape");
  kd_layout sparse = KD_LAYOUT_SPARSE;
  KD_ASSERT_ERR(kd_empty_memory_format((kd_ints){sizes, 2}, &f32, &sparse, &dev0, NULL, NULL, &t),
                KD_EUNSUPPORTED, "expected strided");
}

/* ---- DLPack (kDLOpenCL: data is the cl_mem, byte_offset the offset in it) ------------- */

static int foreign_deletes;
static void foreign_deleter(DLManagedTensor *m) {
  foreign_deletes++;
  clReleaseMemObject((cl_mem)m->dl_tensor.data);
}

/* A managed tensor over `buf` (which it owns: the deleter releases it). */
static DLManagedTensor foreign_managed(cl_mem buf, int64_t *shape, uint64_t byte_offset) {
  DLManagedTensor m;
  memset(&m, 0, sizeof m);
  m.dl_tensor.data = buf;
  m.dl_tensor.device.device_type = (DLDeviceType)4; /* kDLOpenCL */
  m.dl_tensor.device.device_id = 0;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;
  m.dl_tensor.byte_offset = byte_offset;
  m.deleter = foreign_deleter;
  return m;
}

static void test_dlpack(void **state) {
  (void)state;
  tensor_buffer_fn tb = (tensor_buffer_fn)proc("kdcl_tensor_buffer");
  /* Export a view with a storage offset: the handle and the offset of element 0. */
  float v[10];
  for (int i = 0; i < 10; i++) v[i] = (float)i + 0.25f;
  int64_t n = 10, six = 6, one = 1;
  kd_tensor *h, *d, *view, *back;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, v, &h));
  KD_ASSERT_OK(kd_tensor_to_device(h, dev0, &d));
  KD_ASSERT_OK(kd_tensor_from_storage(kd_tensor_storage(d), 3, 1, &six, &one, KD_FLOAT32, &view));
  cl_mem buf;
  size_t off;
  KD_ASSERT_OK(tb(view, &buf, &off, "test"));
  assert_int_equal(off, 12);
  DLManagedTensor *m = NULL;
  KD_ASSERT_OK(kd_tensor_to_dlpack(view, &m));
  assert_int_equal(m->dl_tensor.device.device_type, 4);
  assert_int_equal(m->dl_tensor.device.device_id, 0);
  assert_ptr_equal(m->dl_tensor.data, buf);
  assert_int_equal(m->dl_tensor.byte_offset, 12);
  /* ... and back: a tensor over the same buffer and offset. */
  kd_tensor *imp;
  KD_ASSERT_OK(kd_tensor_from_dlpack(m, &imp));
  cl_mem buf2;
  size_t off2;
  KD_ASSERT_OK(tb(imp, &buf2, &off2, "test"));
  assert_ptr_equal(buf2, buf);
  assert_int_equal(off2, 12);
  KD_ASSERT_OK(kd_tensor_to_device(imp, (kd_device){KD_DEVICE_CPU, 0}, &back));
  assert_memory_equal(kd_tensor_data(back), v + 3, 6 * sizeof(float));
  kd_tensor_release(back);
  kd_tensor_release(view);
  kd_tensor_release(d);
  kd_tensor_release(h);
  /* The import holds the export (and so the storage): still readable. */
  KD_ASSERT_OK(kd_tensor_to_device(imp, (kd_device){KD_DEVICE_CPU, 0}, &back));
  assert_memory_equal(kd_tensor_data(back), v + 3, 6 * sizeof(float));
  kd_tensor_release(back);
  /* A live import counts as a live storage: the plugin cannot be unloaded. */
  KD_ASSERT_ERR(kd_backend_unload(plugin), KD_EBUSY, "");
  kd_tensor_release(imp); /* calls the export's deleter */

  /* A foreign cl_mem of the device's context: wrapped, not owned. */
  kdcl_device *dv = ((device_get_fn)proc("kdcl_device_get"))(0);
  cl_context ctx = ((context_fn)proc("kdcl_context"))(dv);
  cl_command_queue q = ((queue_fn)proc("kdcl_queue"))(dv);
  cl_int err;
  cl_mem fb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof v, NULL, &err);
  assert_int_equal(err, CL_SUCCESS);
  assert_int_equal(clEnqueueWriteBuffer(q, fb, CL_TRUE, 0, sizeof v, v, 0, NULL, NULL), CL_SUCCESS);
  int64_t four = 4;
  DLManagedTensor fm = foreign_managed(fb, &four, 8);
  foreign_deletes = 0;
  KD_ASSERT_OK(kd_tensor_from_dlpack(&fm, &imp));
  assert_int_equal(kd_tensor_device(imp).type, KD_DEVICE_PRIVATEUSE1);
  KD_ASSERT_OK(kd_tensor_to_device(imp, (kd_device){KD_DEVICE_CPU, 0}, &back));
  assert_memory_equal(kd_tensor_data(back), v + 2, 4 * sizeof(float));
  kd_tensor_release(back);
  /* Written through kdispatch, seen by the owner. */
  float nine = 9.0f;
  const kd_backend_iface *b = iface();
  KD_ASSERT_OK(b->fill(b->ctx, dev0, kd_tensor_data(imp), &nine, 4, 4));
  float got[10];
  assert_int_equal(clEnqueueReadBuffer(q, fb, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL), CL_SUCCESS);
  assert_true(got[1] == v[1] && got[2] == 9.0f && got[5] == 9.0f && got[6] == v[6]);
  assert_int_equal(foreign_deletes, 0);
  kd_tensor_release(imp);
  assert_int_equal(foreign_deletes, 1);

  /* Refusals: the caller keeps the managed tensor (its deleter is not called). */
  fb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof v, NULL, &err);
  assert_int_equal(err, CL_SUCCESS);
  int64_t nine_elems = 9;
  fm = foreign_managed(fb, &nine_elems, 8); /* 8 + 36 bytes > 40 */
  imp = NULL;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&fm, &imp), KD_EINVAL, "exceed the cl_mem's 40 bytes");
  assert_null(imp);
  assert_int_equal(foreign_deletes, 1);
  fm.deleter(&fm);
  /* A buffer of another context. */
  cl_device_id id;
  cl_platform_id pid;
  assert_int_equal(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof id, &id, NULL), CL_SUCCESS);
  assert_int_equal(clGetDeviceInfo(id, CL_DEVICE_PLATFORM, sizeof pid, &pid, NULL), CL_SUCCESS);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)pid, 0};
  cl_context other = clCreateContext(props, 1, &id, NULL, NULL, &err);
  assert_int_equal(err, CL_SUCCESS);
  fb = clCreateBuffer(other, CL_MEM_READ_WRITE, sizeof v, NULL, &err);
  assert_int_equal(err, CL_SUCCESS);
  fm = foreign_managed(fb, &four, 0);
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&fm, &imp), KD_EUNSUPPORTED,
                "DLPack import: the cl_mem belongs to another OpenCL context than opencl:0's");
  assert_null(imp);
  fm.deleter(&fm);
  clReleaseContext(other);
  /* A device index the platform does not have. */
  fb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof v, NULL, &err);
  fm = foreign_managed(fb, &four, 0);
  fm.dl_tensor.device.device_id = 77;
  KD_ASSERT_ERR(kd_tensor_from_dlpack(&fm, &imp), KD_ERANGE, "opencl:77");
  fm.deleter(&fm);
  /* Zero elements: no handle needed. */
  int64_t zero = 0;
  fm = foreign_managed(NULL, &zero, 0);
  fm.deleter = NULL;
  KD_ASSERT_OK(kd_tensor_from_dlpack(&fm, &imp));
  assert_int_equal(kd_tensor_numel(imp), 0);
  kd_tensor_release(imp);
}

static void test_unload(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_unload(plugin));
  plugin = NULL;
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  /* And again: everything is discovered afresh. */
  KD_ASSERT_OK(kd_backend_load(plugin_path, &plugin));
  int64_t n = 3;
  float v[3] = {1, 2, 3};
  kd_tensor *h, *d, *back;
  KD_ASSERT_OK(kd_tensor_from_data(1, &n, KD_FLOAT32, v, &h));
  KD_ASSERT_OK(kd_tensor_to_device(h, dev0, &d));
  /* A live storage blocks the unload. */
  KD_ASSERT_ERR(kd_backend_unload(plugin), KD_EBUSY, "");
  KD_ASSERT_OK(kd_tensor_to_device(d, (kd_device){KD_DEVICE_CPU, 0}, &back));
  assert_memory_equal(kd_tensor_data(back), v, sizeof v);
  kd_tensor_release(h);
  kd_tensor_release(d);
  kd_tensor_release(back);
  KD_ASSERT_OK(kd_backend_unload(plugin));
  plugin = NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || !argv[1][0]) {
    printf("SKIP: the OpenCL plugin was not built (OpenCL or CLBlast missing at configure time)\n");
    return 77;
  }
  if (platform_devices() == 0) {
    printf("SKIP: no OpenCL platform with a device (clGetPlatformIDs / clGetDeviceIDs found none)\n");
    return 77;
  }
  plugin_path = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_platform_env),
      cmocka_unit_test(test_load),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_copy_device_offsets),
      cmocka_unit_test(test_zero_size),
      cmocka_unit_test(test_alloc_too_big),
      cmocka_unit_test(test_resolve),
      cmocka_unit_test(test_cache),
      cmocka_unit_test(test_fill),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_program),
      cmocka_unit_test(test_error_names),
      cmocka_unit_test(test_ctype),
      cmocka_unit_test(test_factories),
      cmocka_unit_test(test_dlpack),
      cmocka_unit_test(test_unload),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
