/*
 * plugin.c: the test plugins of test_backend_plugin, one source built several
 * ways (tests/plugins/CMakeLists.txt):
 *   PLUG_NS          the namespace of what its constructors define (plug, ...)
 *   PLUG_NAME        its backend's device name ("plugdev")
 *   PLUG_TYPE        its device type (KD_DEVICE_PRIVATEUSE1)
 *   PLUG_NO_ENTRY    no entry point
 *   PLUG_NULL_DESC   the entry point returns NULL
 *   PLUG_VERSION     the descriptor's api_version (KD_PLUGIN_API_VERSION)
 *   PLUG_FAIL_INIT   init registers everything, then fails
 *   PLUG_BAD_CTOR    a registration of its KD_LIBRARY constructor fails
 *
 * What it registers: through constructors (run inside dlopen) a DEF library
 * PLUG_NS with hello(Tensor) -> Tensor and a CPU kernel-key kernel for it;
 * through the plugin handle in init a backend, a CPU kernel (a closure with
 * plugin-allocated data) for the host's pt::work, a kernel for hello
 * under the backend's key, and a described library (kd_plugin_open_desc)
 * defining extra(Tensor) -> Tensor. It reports init, kernel-data destruction and fini
 * to the host through kd_test_plugin_event, when the host defines it.
 */
#include <stdlib.h>
#include <string.h>

#include "kd/kd.h"

#ifndef PLUG_NS
#define PLUG_NS plug
#endif
#ifndef PLUG_NAME
#define PLUG_NAME "plugdev"
#endif
#ifndef PLUG_TYPE
#define PLUG_TYPE KD_DEVICE_PRIVATEUSE1
#endif
#ifndef PLUG_VERSION
#define PLUG_VERSION KD_PLUGIN_API_VERSION
#endif
#define PLUG_STR_(x) #x
#define PLUG_STR(x) PLUG_STR_(x)

/* The host's hook (weak: a host without it works too). */
extern void kd_test_plugin_event(const char *what) __attribute__((weak));
static void event(const char *what) {
  if (kd_test_plugin_event) kd_test_plugin_event(what);
}

/* ---- Constructor registrations --------------------------------------------- */

static kd_status hello_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

#define PLUG_LIBRARY(ns, m) KD_LIBRARY(ns, m)
#define PLUG_REGISTER(ns, op, key, fn, sig, ...) \
  KD_REGISTER_KERNEL(ns, op, key, KD_ALL_LAYOUT, fn, sig, __VA_ARGS__)

PLUG_LIBRARY(PLUG_NS, m) {
  kd_library_def(m, "hello(Tensor self) -> Tensor", NULL, 0, NULL);
#ifdef PLUG_BAD_CTOR
  kd_library_def(m, "broken(Tensor self -> Tensor", NULL, 0, NULL); /* a syntax error */
#endif
}
PLUG_REGISTER(PLUG_NS, hello, CPU, hello_cpu, "(Tensor) -> Tensor", KD_FLOAT32) {}

/* ---- The backend: a device in host memory ------------------------------------ */

static int32_t dev_count(void *ctx) {
  (void)ctx;
  return 1;
}
static void *dev_alloc(void *ctx, kd_device d, size_t n) {
  (void)ctx;
  (void)d;
  return malloc(n);
}
static void dev_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)ctx;
  (void)d;
  (void)n;
  free(p);
}
static kd_status dev_copy_in(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status dev_copy_out(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status dev_copy(void *ctx, kd_device dd, void *dst, kd_device sd, const void *src,
                          size_t n) {
  (void)ctx;
  (void)dd;
  (void)sd;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status dev_sync(void *ctx, kd_device d) {
  (void)ctx;
  (void)d;
  return KD_OK;
}

/* ---- Kernels registered in init ---------------------------------------------- */

/* pt::work on CPU: checks its closure data (plugin memory) and returns self. */
static kd_status work_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  const int *magic = c->data;
  if (*magic != 42) return kd_set_error(KD_EINTERNAL, "plugin work: bad closure data %d", *magic);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static void work_data_free(void *p) {
  event("destroy_data");
  free(p);
}

static kd_status hello_dev(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* A described library opened by init through the plugin handle. */
static void extra_body(kd_library *m) {
  kd_library_def(m, "extra(Tensor self) -> Tensor", NULL, 0, NULL);
}
static const kd_library_desc extra_desc = {KD_LIBRARY_DESC_VERSION, KD_LIBRARY_FRAGMENT,
                                           PLUG_STR(PLUG_NS), KD_KEY_UNDEFINED, extra_body,
                                           __FILE__, __LINE__};

static kd_status init(kd_plugin *p) {
  kd_backend_iface iface;
  memset(&iface, 0, sizeof iface);
  iface.api_version = KD_BACKEND_API_VERSION;
  iface.name = PLUG_NAME;
  iface.device_type = PLUG_TYPE;
  iface.device_count = dev_count;
  iface.alloc = dev_alloc;
  iface.free = dev_free;
  iface.copy_from_host = dev_copy_in;
  iface.copy_to_host = dev_copy_out;
  iface.copy_device = dev_copy;
  iface.synchronize = dev_sync;
  kd_status st = kd_plugin_backend(p, &iface, NULL);
  if (st) return st;
  kd_library *lib;
  st = kd_plugin_library(p, KD_LIBRARY_IMPL, "pt", KD_KEY_CPU, &lib);
  if (st) return st;
  int *magic = malloc(sizeof *magic);
  if (!magic) return kd_set_error(KD_ENOMEM, "plugin: out of memory");
  *magic = 42;
  kd_kernel k = kd_kernel_closure(work_cpu, "(Tensor) -> Tensor", magic, work_data_free);
  st = kd_library_impl(lib, "work", &k, NULL);
  if (st) {
    free(magic);
    return st;
  }
  kd_library *dev;
  st = kd_plugin_library(p, KD_LIBRARY_IMPL, PLUG_STR(PLUG_NS), kd_backend_key(PLUG_TYPE), &dev);
  if (st) return st;
  kd_kernel h = kd_kernel_unboxed(hello_dev, "(Tensor) -> Tensor");
  st = kd_library_impl(dev, "hello", &h, NULL);
  if (st) return st;
  st = kd_plugin_open_desc(p, &extra_desc);
  if (st) return st;
  event("init");
#ifdef PLUG_FAIL_INIT
  return kd_set_error(KD_EINVAL, "the test plugin's init fails on purpose");
#else
  return KD_OK;
#endif
}

static void fini(kd_plugin *p) {
  (void)p;
  event("fini");
}

static const kd_plugin_desc desc = {PLUG_VERSION, "testplug", init, fini};

#if defined(PLUG_NULL_DESC)
KD_API const kd_plugin_desc *kd_plugin_entry(uint32_t host_version);
KD_API const kd_plugin_desc *kd_plugin_entry(uint32_t host_version) {
  (void)host_version;
  (void)desc;
  return NULL;
}
#elif !defined(PLUG_NO_ENTRY)
KD_PLUGIN(desc)
#else
/* Keeps desc used. */
KD_API const kd_plugin_desc *not_the_entry(void);
KD_API const kd_plugin_desc *not_the_entry(void) { return &desc; }
#endif
