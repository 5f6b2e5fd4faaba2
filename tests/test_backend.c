/* Backends (kd/backend.h): the record's validation and refusals, what
 * registering installs (device name, allocator) and unregistering restores,
 * storage that outlives its backend, and the device services (device count,
 * current device, guard, a kernel's device context). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "kd_test.h"

/* A fake device in host memory, with counters. */
typedef struct fake {
  int32_t ndev;
  int allocs, frees, to_host, from_host, syncs;
  int fail_to_host; /* 1: copies to the host fail with a message, 2: without one */
  char queue[4];
} fake;

static int32_t f_count(void *ctx) { return ((fake *)ctx)->ndev; }
static void *f_alloc(void *ctx, kd_device d, size_t n) {
  (void)d;
  ((fake *)ctx)->allocs++;
  return malloc(n);
}
static void f_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)d;
  (void)n;
  ((fake *)ctx)->frees++;
  free(p);
}
static kd_status f_from_host(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)d;
  ((fake *)ctx)->from_host++;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status f_to_host(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)d;
  ((fake *)ctx)->to_host++;
  if (((fake *)ctx)->fail_to_host == 2) return KD_EDEVICE; /* no message */
  if (((fake *)ctx)->fail_to_host) return kd_set_error(KD_EDEVICE, "f_to_host: the device is lost");
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status f_copy(void *ctx, kd_device dd, void *dst, kd_device sd, const void *src,
                        size_t n) {
  (void)ctx;
  (void)dd;
  (void)sd;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status f_sync(void *ctx, kd_device d) {
  (void)d;
  ((fake *)ctx)->syncs++;
  return KD_OK;
}
static void *f_queue(void *ctx, kd_device d) { return &((fake *)ctx)->queue[d.index]; }

static fake F;

/* A device-side cast for float32 -> int64 only (else an error), counting calls. */
static int casts;
static kd_status f_cast(void *ctx, kd_device d, void *dst, kd_dtype dt, const void *src,
                        kd_dtype st, size_t n) {
  (void)ctx;
  (void)d;
  casts++;
  if (st != KD_FLOAT32 || dt != KD_INT64)
    return kd_set_error(KD_EUNSUPPORTED, "f_cast: only float32 to int64, not %s to %s",
                        kd_dtype_name(st), kd_dtype_name(dt));
  for (size_t k = 0; k < n; k++) ((int64_t *)dst)[k] = (int64_t)((const float *)src)[k];
  return KD_OK;
}

static kd_backend_iface iface_for(const char *name, kd_device_type type) {
  kd_backend_iface i;
  memset(&i, 0, sizeof i);
  i.api_version = KD_BACKEND_API_VERSION;
  i.name = name;
  i.device_type = type;
  i.ctx = &F;
  i.device_count = f_count;
  i.alloc = f_alloc;
  i.free = f_free;
  i.copy_from_host = f_from_host;
  i.copy_to_host = f_to_host;
  i.copy_device = f_copy;
  i.synchronize = f_sync;
  i.queue = f_queue;
  return i;
}

static void test_refusals(void **state) {
  (void)state;
  kd_backend *b = (kd_backend *)&b;
  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE1);
  KD_ASSERT_ERR(kd_backend_register(NULL, &b), KD_EINVAL, "NULL iface");
  assert_null(b);
  i.api_version = 0;
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL,
                "kd_backend_register: kd_backend_iface api_version 0 is not supported: this "
                "library accepts 1 to 2 (KD_BACKEND_API_VERSION)");
  i.api_version = KD_BACKEND_API_VERSION + 1;
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL,
                "kd_backend_iface api_version 3 is not supported: this library accepts 1 to 2 "
                "(KD_BACKEND_API_VERSION); was it built against a newer kdispatch?");
  i = iface_for("fakedev", KD_DEVICE_CUDA);
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL,
                "backend 'fakedev': device type 1 is not a private device type");
  i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE2);
  i.copy_device = NULL;
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL,
                "backend 'fakedev' for device type privateusetwo: the required function "
                "'copy_device' is NULL");
  i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE2);
  i.synchronize = NULL;
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL, "'synchronize' is NULL");
  i = iface_for("Fake-Dev", KD_DEVICE_PRIVATEUSE2);
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL, "bad device name 'Fake-Dev'");
  i = iface_for("cuda", KD_DEVICE_PRIVATEUSE2);
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EEXIST,
                "backend 'cuda' for device type privateusetwo: the name 'cuda' is taken by device "
                "type cuda");
  /* Nothing was left behind. */
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE2));
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE2), "privateusetwo");
  kd_allocator a;
  KD_ASSERT_ERR(kd_allocator_get(KD_DEVICE_PRIVATEUSE2, &a), KD_ENOTFOUND, "privateusetwo");
}

/* kd_tensor_to_dtype of a device tensor: the backend's cast slot for a
 * contiguous tensor (its error returned as is), the host for a strided one. */
static void test_device_cast(void **state) {
  (void)state;
  kd_backend_iface i = iface_for("castdev", KD_DEVICE_PRIVATEUSE3);
  i.cast = f_cast;
  kd_backend *b = NULL;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  const float v[6] = {1.5f, -2.5f, 3.0f, 4.25f, 5.0f, -6.75f};
  const int64_t sizes[2] = {2, 3};
  kd_tensor *h, *d, *c, *back;
  KD_ASSERT_OK(kd_tensor_from_data(2, sizes, KD_FLOAT32, v, &h));
  kd_device dev = {KD_DEVICE_PRIVATEUSE3, 1};
  KD_ASSERT_OK(kd_tensor_to_device(h, dev, &d));
  casts = 0;
  KD_ASSERT_OK(kd_tensor_to_dtype(d, KD_INT64, &c));
  assert_int_equal(casts, 1);
  assert_true(kd_device_equal(kd_tensor_device(c), dev));
  KD_ASSERT_OK(kd_tensor_to_device(c, kd_device_cpu(), &back));
  const int64_t *r = kd_tensor_data(back);
  for (int k = 0; k < 6; k++) assert_int_equal(r[k], (int64_t)v[k]);
  kd_tensor_release(back);
  kd_tensor_release(c);
  /* The slot's error comes back unchanged. */
  KD_ASSERT_ERR(kd_tensor_to_dtype(d, KD_FLOAT64, &c), KD_EUNSUPPORTED,
                "f_cast: only float32 to int64, not float32 to float64");
  assert_null(c);
  /* A strided view goes through the host: the slot is not called. */
  const int64_t tsz[2] = {3, 2}, tst[2] = {1, 3};
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_as_strided(d, 2, tsz, tst, 0, &t));
  casts = 0;
  KD_ASSERT_OK(kd_tensor_to_dtype(t, KD_FLOAT64, &c));
  assert_int_equal(casts, 0);
  KD_ASSERT_OK(kd_tensor_to_device(c, kd_device_cpu(), &back));
  const double *rd = kd_tensor_data(back);
  for (int k = 0; k < 6; k++) assert_true(rd[k] == (double)v[(k % 2) * 3 + k / 2]);
  kd_tensor_release(back);
  kd_tensor_release(c);
  kd_tensor_release(t);
  kd_tensor_release(d);
  kd_tensor_release(h);
  kd_backend_unregister(b);
}

/* Version 2 added the DLPack handle functions: a version-1 record (its
 * fields end at get_proc_address) still registers, and what lies after its
 * end is not read; a version-2 record gives all three or none. */
static kd_status f_dl_data(void *ctx, kd_device d, const void *p, void **h, uint64_t *off) {
  (void)ctx, (void)d, (void)p, (void)h, (void)off;
  return KD_OK;
}

static void test_version1_record(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.ndev = 1;
  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE1);
  i.dlpack_data = f_dl_data; /* only one of three */
  kd_backend *b = (kd_backend *)&b;
  KD_ASSERT_ERR(kd_backend_register(&i, &b), KD_EINVAL,
                "dlpack_data, dlpack_import and dlpack_release go together (1 of the 3 are set)");
  assert_null(b);
  /* The same bytes as a version-1 record: the DLPack fields are past its end. */
  i.api_version = 1;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  const kd_backend_iface *got = kd_backend_iface_of(b);
  assert_int_equal(got->api_version, KD_BACKEND_API_VERSION);
  assert_null(got->dlpack_data);
  assert_null(got->dlpack_import);
  assert_null(got->dlpack_release);
  assert_ptr_equal(got->queue, f_queue);
  kd_backend_unregister(b);
}

/* kd_tensor_item / kd_tensor_get on a device tensor: the element comes to the
 * host through the allocator's copy_to_host (one element, synchronising),
 * honouring strides and the storage offset; a failed copy keeps the
 * backend's message; meta tensors have no bytes. */
static void test_item_on_device(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.ndev = 1;
  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE1);
  kd_backend *b = NULL;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  const double v[6] = {1.5, -2.5, 3.0, 4.25, 5.0, -6.75};
  kd_tensor *h, *d;
  KD_ASSERT_OK(kd_tensor_from_data(2, (int64_t[]){2, 3}, KD_FLOAT64, v, &h));
  KD_ASSERT_OK(kd_tensor_to_device(h, (kd_device){KD_DEVICE_PRIVATEUSE1, 0}, &d));
  kd_scalar x;
  /* Every element through kd_tensor_get, negative indices included. */
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 3; c++) {
      int before = F.to_host, syncs = F.syncs;
      KD_ASSERT_OK(kd_tensor_get(d, (int64_t[]){r - 2, c}, &x));
      assert_int_equal(F.to_host, before + 1);
      assert_true(F.syncs > syncs);
      assert_true(x.v.d == v[r * 3 + c]);
    }
  KD_ASSERT_ERR(kd_tensor_get(d, (int64_t[]){0, 3}, &x), KD_ERANGE,
                "index 3 is out of bounds for dimension 1 with size 3");
  /* A transposed view with a storage offset, reduced to one element. */
  kd_tensor *t, *one;
  KD_ASSERT_OK(kd_tensor_as_strided(d, 2, (int64_t[]){2, 2}, (int64_t[]){1, 3}, 1, &t));
  KD_ASSERT_OK(kd_tensor_get(t, (int64_t[]){1, 1}, &x));
  assert_true(x.v.d == v[1 + 1 + 3]); /* offset 1, index (1,1): 1 + 1*1 + 1*3 */
  KD_ASSERT_OK(kd_tensor_as_strided(d, 0, NULL, NULL, 4, &one));
  KD_ASSERT_OK(kd_tensor_item(one, &x));
  assert_int_equal(x.kind, KD_SCALAR_DOUBLE);
  assert_true(x.v.d == v[4]);
  KD_ASSERT_ERR(kd_tensor_item(d, &x), KD_EINVAL, "a tensor with 6 elements");
  /* The backend's failure comes back with its message. */
  F.fail_to_host = 1;
  KD_ASSERT_ERR(kd_tensor_item(one, &x), KD_EDEVICE, "f_to_host: the device is lost");
  /* ... and one that leaves no message gets the library's. */
  F.fail_to_host = 2;
  KD_ASSERT_ERR(kd_tensor_item(one, &x), KD_EDEVICE,
                "kd_tensor_item: copying a float64 element from 'fakedev:0' to the host failed");
  F.fail_to_host = 0;
  /* A successful read leaves the thread's last error as it was. */
  KD_ASSERT_OK(kd_tensor_item(one, &x));
  assert_int_equal(kd_last_status(), KD_EDEVICE);
  /* Writing stays cpu-only. */
  kd_scalar w = kd_scalar_double(1.0);
  KD_ASSERT_ERR(kd_tensor_set(one, NULL, &w), KD_EUNSUPPORTED,
                "kd_tensor_set: element access needs a cpu tensor, but the tensor is on "
                "'fakedev:0'");
  kd_tensor_release(one);
  kd_tensor_release(t);
  kd_tensor_release(d);
  kd_tensor_release(h);
  /* A meta tensor has no bytes to read. */
  kd_tensor *m;
  KD_ASSERT_OK(kd_tensor_empty(0, NULL, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &m));
  KD_ASSERT_ERR(kd_tensor_item(m, &x), KD_EUNSUPPORTED,
                "kd_tensor_item: element access needs a cpu tensor, but the tensor is on 'meta'");
  kd_tensor_release(m);
  kd_backend_unregister(b);
}

static void test_register_unregister(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.ndev = 2;
  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE1);
  kd_backend *b = NULL;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  assert_ptr_equal(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1), b);
  assert_null(kd_backend_plugin(b));
  const kd_backend_iface *got = kd_backend_iface_of(b);
  KD_ASSERT_STR_EQ(got->name, "fakedev");
  assert_ptr_equal(got->ctx, &F);
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "fakedev");
  kd_device dev;
  KD_ASSERT_OK(kd_device_parse("fakedev:1", &dev));
  assert_int_equal(dev.type, KD_DEVICE_PRIVATEUSE1);
  assert_int_equal(kd_device_count(KD_DEVICE_PRIVATEUSE1), 2);
  assert_int_equal(kd_device_count(KD_DEVICE_PRIVATEUSE2), 0);
  assert_int_equal(kd_device_count(KD_DEVICE_CPU), 1);

  /* A second backend for the type, or the name elsewhere: both named. */
  kd_backend *b2 = (kd_backend *)&b2;
  kd_backend_iface j = iface_for("otherdev", KD_DEVICE_PRIVATEUSE1);
  KD_ASSERT_ERR(kd_backend_register(&j, &b2), KD_EEXIST,
                "backend 'otherdev' for device type privateuseone: the type already has the "
                "backend 'fakedev'");
  assert_null(b2);
  j = iface_for("fakedev", KD_DEVICE_PRIVATEUSE3);
  KD_ASSERT_ERR(kd_backend_register(&j, &b2), KD_EEXIST,
                "backend 'fakedev' for device type privateusethree: the name 'fakedev' is taken "
                "by device type privateuseone");

  /* The installed allocator: version 2, its copies go through the record's
   * asynchronous copies and synchronize. */
  kd_allocator a;
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_PRIVATEUSE1, &a));
  assert_int_equal(a.api_version, 2);
  assert_non_null(a.copy_to_host);
  float host[3] = {1.5f, -2.0f, 7.25f};
  kd_tensor *c, *d, *back;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){3}, KD_FLOAT32, host, &c));
  KD_ASSERT_OK(kd_tensor_to_device(c, dev, &d));
  assert_int_equal(F.allocs, 1);
  assert_int_equal(F.from_host, 1);
  assert_true(F.syncs >= 1);
  assert_int_equal(kd_tensor_device(d).index, 1);
  KD_ASSERT_OK(kd_tensor_to_device(d, kd_device_cpu(), &back));
  assert_int_equal(F.to_host, 1);
  assert_memory_equal(kd_tensor_data(back), host, sizeof host);
  kd_tensor_release(back);
  kd_tensor_release(c);

  /* Unregister restores the name and the allocator; the live tensor keeps
   * the record's free. */
  kd_backend_unregister(b);
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "privateuseone");
  KD_ASSERT_ERR(kd_allocator_get(KD_DEVICE_PRIVATEUSE1, &a), KD_ENOTFOUND, "privateuseone");
  KD_ASSERT_ERR(kd_device_parse("fakedev:0", &dev), KD_ENOTFOUND, "unknown device type 'fakedev'");
  assert_int_equal(F.frees, 0);
  kd_tensor_release(d);
  assert_int_equal(F.frees, 1);

  /* Registering again works; an allocator installed before comes back. */
  kd_allocator mine = {1, f_alloc, f_free, &F, NULL, NULL};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &mine));
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_PRIVATEUSE1, &a));
  assert_non_null(a.copy_to_host);
  kd_backend_unregister(b);
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_PRIVATEUSE1, &a));
  assert_ptr_equal(a.alloc, f_alloc);
  assert_null(a.copy_to_host);
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL));
}

static void test_device_services(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.ndev = 2;
  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE2);
  kd_backend *b;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  assert_int_equal(kd_current_device(KD_DEVICE_PRIVATEUSE2).index, 0);
  KD_ASSERT_ERR(kd_set_current_device((kd_device){KD_DEVICE_PRIVATEUSE2, 2}), KD_ERANGE,
                "device fakedev:2 does not exist (the type has 2 devices)");
  KD_ASSERT_ERR(kd_set_current_device((kd_device){KD_DEVICE_CPU, 1}), KD_ERANGE,
                "device cpu:1 does not exist (the type has 1 device)");
  KD_ASSERT_ERR(kd_set_current_device((kd_device){KD_DEVICE_PRIVATEUSE2, -1}), KD_EINVAL,
                "invalid device");
  kd_device_guard g, h;
  KD_ASSERT_OK(kd_device_guard_enter(&g, (kd_device){KD_DEVICE_PRIVATEUSE2, 1}));
  assert_int_equal(kd_current_device(KD_DEVICE_PRIVATEUSE2).index, 1);
  KD_ASSERT_ERR(kd_device_guard_enter(&h, (kd_device){KD_DEVICE_PRIVATEUSE2, 5}), KD_ERANGE,
                "fakedev:5");
  assert_false(h.active);
  kd_device_guard_exit(&h); /* nothing */
  assert_int_equal(kd_current_device(KD_DEVICE_PRIVATEUSE2).index, 1);
  KD_ASSERT_OK(kd_device_guard_enter(&h, (kd_device){KD_DEVICE_PRIVATEUSE2, 0}));
  assert_int_equal(kd_current_device(KD_DEVICE_PRIVATEUSE2).index, 0);
  kd_device_guard_exit(&h);
  assert_int_equal(kd_current_device(KD_DEVICE_PRIVATEUSE2).index, 1);
  kd_device_guard_exit(&g);
  assert_int_equal(kd_current_device(KD_DEVICE_PRIVATEUSE2).index, 0);
  kd_backend_unregister(b);
}

/* A kernel reads its device context from the call. */
static kd_device_context seen;
static kd_status seen_status;
static kd_status ctx_kernel(const kd_call *call, const kd_arg *a, kd_value *r) {
  seen_status = kd_call_device_context(call, &seen);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static void test_call_device_context(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.ndev = 2;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "bedc", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "ident(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *impl = kd_test_open_lib(KD_LIBRARY_IMPL, "bedc", KD_KEY_CATCH_ALL);
  kd_kernel k = kd_kernel_unboxed(ctx_kernel, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(impl, "ident", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("bedc::ident", "", &op));

  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE3);
  kd_backend *b;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){KD_DEVICE_PRIVATEUSE3, 0}, &t));
  kd_device_guard g;
  KD_ASSERT_OK(kd_device_guard_enter(&g, (kd_device){KD_DEVICE_PRIVATEUSE3, 1}));
  kd_arg a[1] = {{.t = t}};
  kd_value r = kd_value_none();
  KD_ASSERT_OK((kd_call_unboxed)(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_OK(seen_status);
  assert_ptr_equal(seen.backend, b);
  assert_int_equal(seen.device.type, KD_DEVICE_PRIVATEUSE3);
  assert_int_equal(seen.device.index, 1);
  assert_ptr_equal(seen.queue, &F.queue[1]);
  assert_ptr_equal(seen.ctx, &F);
  kd_device_guard_exit(&g);

  /* On cpu: no backend, the cpu device. */
  kd_tensor *c = kd_test_tensor_on(KD_DEVICE_CPU);
  a[0].t = c;
  KD_ASSERT_OK((kd_call_unboxed)(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_OK(seen_status);
  assert_null(seen.backend);
  assert_int_equal(seen.device.type, KD_DEVICE_CPU);
  assert_null(seen.queue);
  kd_tensor_release(c);

  /* After unregister, the private key has no backend. */
  kd_backend_unregister(b);
  a[0].t = t;
  KD_ASSERT_OK((kd_call_unboxed)(op, a, &r));
  kd_value_destroy(&r);
  assert_int_equal(seen_status, KD_ENOTFOUND);
  kd_tensor_release(t);
  kd_library_close(impl);
  kd_library_close(def);
}

/* kd_backend_unregister waits for a call in flight (the grace period): a
 * kernel of the backend's key blocks until released; the unregistering
 * thread must not return before. */
static atomic_int entered, release_kernel, unregistered;
static kd_status blocking_kernel(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call;
  atomic_store(&entered, 1);
  while (!atomic_load(&release_kernel)) sched_yield();
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static kd_op *block_op;
static kd_tensor *block_t;
static void *block_caller(void *arg) {
  (void)arg;
  kd_arg a[1] = {{.t = block_t}};
  kd_value r = kd_value_none();
  KD_ASSERT_OK((kd_call_unboxed)(block_op, a, &r));
  kd_value_destroy(&r);
  return NULL;
}
static void *unregisterer(void *b) {
  kd_backend_unregister(b);
  atomic_store(&unregistered, 1);
  return NULL;
}

static void test_unregister_waits_for_calls(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.ndev = 1;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "bewait", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "block(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *impl = kd_test_open_lib(KD_LIBRARY_IMPL, "bewait", KD_KEY_PRIVATEUSE1);
  kd_kernel k = kd_kernel_unboxed(blocking_kernel, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(impl, "block", &k, NULL));
  KD_ASSERT_OK(kd_op_find("bewait::block", "", &block_op));
  kd_backend_iface i = iface_for("fakedev", KD_DEVICE_PRIVATEUSE1);
  kd_backend *b;
  KD_ASSERT_OK(kd_backend_register(&i, &b));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){KD_DEVICE_PRIVATEUSE1, 0},
                               &block_t));
  atomic_store(&entered, 0);
  atomic_store(&release_kernel, 0);
  atomic_store(&unregistered, 0);
  pthread_t caller, unreg;
  assert_int_equal(pthread_create(&caller, NULL, block_caller, NULL), 0);
  while (!atomic_load(&entered)) sched_yield();
  assert_int_equal(pthread_create(&unreg, NULL, unregisterer, b), 0);
  /* The backend is detached at once; unregister itself waits. The
   * unregistering thread may be slow to run on a loaded machine (the caller
   * spins beside it): wait for the detach by time (up to 10 s), not by a
   * count of yields. */
  struct timespec ms = {0, 1000 * 1000};
  for (int n = 0; n < 10000 && kd_backend_for_device(KD_DEVICE_PRIVATEUSE1); n++) nanosleep(&ms, NULL);
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  assert_int_equal(atomic_load(&unregistered), 0);
  atomic_store(&release_kernel, 1);
  pthread_join(caller, NULL);
  pthread_join(unreg, NULL);
  assert_int_equal(atomic_load(&unregistered), 1);
  kd_tensor_release(block_t);
  assert_int_equal(F.frees, 1);
  kd_library_close(impl);
  kd_library_close(def);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_version1_record),
      cmocka_unit_test(test_register_unregister),
      cmocka_unit_test(test_item_on_device),
      cmocka_unit_test(test_device_cast),
      cmocka_unit_test(test_device_services),
      cmocka_unit_test(test_call_device_context),
      cmocka_unit_test(test_unregister_waits_for_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
