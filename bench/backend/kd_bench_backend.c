/*
 * kd_bench_backend.c: `kd-bench backend [FAKEDEV_PLUGIN PLUGIN500 FAKEGEN_PLUGIN]`: the cost
 * of a backend that is a loaded plugin. Medians over REPS repetitions after
 * one warm-up repetition, in ns per operation (us for load and unload):
 *   backend_typed_call_ns  typed call (kd_call_unboxed, inline) of
 *                          fakedev::noop, a no-op kernel the fakedev plugin
 *                          (examples/backend) registers for its key, on a
 *                          fakedev tensor
 *   cpu_typed_call_ns      the same operator with a fakedev tensor replaced
 *                          by a cpu one: a no-op kernel kd-bench registers for CPU
 *   fallback_add_1_ns      add.Tensor of two 1-element int32 tensors on fakedev:
 *                          the plugin has no int32 add, so the CPU fallback runs
 *   fallback_floor_1_ns    the same work by hand: both inputs copied to the
 *                          cpu (kd_tensor_to_device), the cpu add, the result
 *                          copied back
 *   fallback_add_1M_ns     fallback_add_1_ns with 1,048,576 elements
 *   load_500_us            kd_backend_load of a plugin that defines 500
 *                          operators and implements each for CPU
 *   unload_500_us          kd_backend_unload of it
 *   gen_add_out_1_ns       add.out of 1-element float32 tensors on the proof
 *                          backend generated from YAML (examples/backend_gen):
 *                          Legacy, so libkdops' meta and impl run and the impl's
 *                          add_stub reaches the plugin's loop for the device
 *   cpu_add_out_1_ns       the same call on cpu tensors (libkdops' CPU loop)
 *   gen_add_out_empty_1_ns gen_add_out_1_ns with an empty loop registered for
 *                          add_stub on the device instead of the plugin's: the
 *                          Legacy call minus its loop
 *   gen_add_out_64k_ns, cpu_add_out_64k_ns  the two with 65,536 elements
 * The plugins are found where the build put them (or given as arguments).
 * kd-bench links libkdispatch statically and exports its symbols, so that
 * the plugins, built without a libkdispatch of their own, bind to it.
 */
#include <stdio.h>
#include <string.h>

#include "bench_groups.h"
#include "bench_util.h"
#include "kd/backend.h"
#include "kd/ops.h"
#include "kdk/kdk.h"

#define REPS 15

__attribute__((aligned(64))) static kd_status cpu_noop(const kd_call *c, const kd_arg *a,
                                                       kd_value *r) {
  (void)c, (void)a, (void)r;
  return KD_OK;
}

/* One loop for both typed-call figures (the same code, only the tensor differs). */
__attribute__((aligned(64), noinline)) static double time_typed(kd_op *op, kd_tensor *t,
                                                                size_t n) {
  kd_arg args[1] = {{.t = t}};
  kd_value rets[1] = {kd_value_none()};
  uint64_t t0 = kd_bench_now_ns();
  for (size_t i = 0; i < n; i++) kd_call_unboxed(op, args, rets);
  return (double)(kd_bench_now_ns() - t0) / (double)n;
}

/* Both typed-call figures, their repetitions interleaved so that both see
 * the same machine state. */
static void median_typed(kd_op *op, kd_tensor *a, kd_tensor *b, double *ma, double *mb) {
  double sa[REPS], sb[REPS];
  time_typed(op, a, 200000);
  time_typed(op, b, 200000);
  for (int r = 0; r < REPS; r++) {
    sa[r] = time_typed(op, a, 2000000);
    sb[r] = time_typed(op, b, 2000000);
  }
  *ma = kd_bench_median(sa, REPS);
  *mb = kd_bench_median(sb, REPS);
}

/* The fallback's add, and the same work by hand. */
static kd_status add_fallback(kd_tensor *a, kd_tensor *b) {
  kd_tensor *r;
  kd_status st = kd_add_Tensor(a, b, NULL, &r);
  kd_tensor_release(r);
  return st;
}

static kd_status add_floor(kd_tensor *a, kd_tensor *b) {
  kd_tensor *ha = NULL, *hb = NULL, *hr = NULL, *r = NULL;
  kd_status st = kd_tensor_to_device(a, kd_device_cpu(), &ha);
  if (!st) st = kd_tensor_to_device(b, kd_device_cpu(), &hb);
  if (!st) st = kd_add_Tensor(ha, hb, NULL, &hr);
  if (!st) st = kd_tensor_to_device(hr, kd_tensor_device(a), &r);
  kd_tensor_release(ha);
  kd_tensor_release(hb);
  kd_tensor_release(hr);
  kd_tensor_release(r);
  return st;
}

static double median_add(kd_status (*fn)(kd_tensor *, kd_tensor *), kd_tensor *a, kd_tensor *b,
                         size_t n, kd_status *st) {
  double s[REPS];
  for (int r = -1; r < REPS; r++) {
    uint64_t t0 = kd_bench_now_ns();
    for (size_t i = 0; i < n && !*st; i++) *st = fn(a, b);
    if (r >= 0) s[r] = (double)(kd_bench_now_ns() - t0) / (double)n;
  }
  return kd_bench_median(s, REPS);
}

/* Two int32 tensors of n elements on fakedev:0. */
static kd_status device_pair(int64_t n, kd_tensor **a, kd_tensor **b) {
  kd_tensor *h;
  kd_device dev = {KD_DEVICE_PRIVATEUSE1, 0};
  *a = *b = NULL;
  kd_status st = kd_tensor_empty(1, &n, KD_INT32, kd_device_cpu(), &h);
  if (st) return st;
  int32_t *p = kd_tensor_data(h);
  for (int64_t i = 0; i < n; i++) p[i] = (int32_t)(i % 1000);
  st = kd_tensor_to_device(h, dev, a);
  if (!st) st = kd_tensor_to_device(h, dev, b);
  kd_tensor_release(h);
  return st;
}

static int fail(const char *what) {
  fprintf(stderr, "kd-bench backend: %s: %s\n", what, kd_last_error());
  return 1;
}

static void quiet(const char *message, void *user_data) { (void)message, (void)user_data; }

/* ---- The generated backend ---------------------------------------------------- */

static kd_status empty_add_loop(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {
  (void)iter, (void)p0, (void)p1;
  return KD_OK;
}

/* add.out(a, b, out) n times; the median of REPS repetitions, ns per call. */
static double median_add_out(kd_tensor *a, kd_tensor *b, kd_tensor *out, size_t n, kd_status *st) {
  double s[REPS];
  for (int r = -1; r < REPS; r++) {
    uint64_t t0 = kd_bench_now_ns();
    for (size_t i = 0; i < n && !*st; i++) *st = kd_add_out(a, b, NULL, out);
    if (r >= 0) s[r] = (double)(kd_bench_now_ns() - t0) / (double)n;
  }
  return kd_bench_median(s, REPS);
}

/* a, b and out: float32 [n] on dev (out already of that size). */
static kd_status float_triple(int64_t n, kd_device dev, kd_tensor **t) {
  kd_tensor *h;
  t[0] = t[1] = t[2] = NULL;
  kd_status st = kd_tensor_empty(1, &n, KD_FLOAT32, kd_device_cpu(), &h);
  if (st) return st;
  float *p = kd_tensor_data(h);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(i % 100) * 0.5f;
  for (int k = 0; k < 3 && !st; k++) st = kd_tensor_to_device(h, dev, &t[k]);
  kd_tensor_release(h);
  return st;
}

static void release3(kd_tensor **t) {
  for (int k = 0; k < 3; k++) kd_tensor_release(t[k]);
}

static int bench_generated(const char *path) {
  kd_plugin *plugin;
  if (kd_backend_load(path, &plugin)) return fail(path);
  kd_device dev = {KD_DEVICE_PRIVATEUSE1, 0};
  kd_tensor *g[3], *c[3];
  kd_status st = float_triple(1, dev, g);
  if (!st) st = float_triple(1, kd_device_cpu(), c);
  if (st) return fail("generated backend: inputs");
  /* The three 1-element figures, their repetitions interleaved so that all see the
   * same machine state; for the second, an empty loop replaces the plugin's in the
   * device's add_stub slot (the Legacy call minus its loop). */
  kdk_stub *add = &KDK_STUB_OBJECT(add_stub);
  kdk_stub_fn plugin_loop = kdk_stub_lookup(add, KD_DEVICE_PRIVATEUSE1, "add.out");
  if (!plugin_loop) return fail("add_stub's device slot");
  double gs[REPS], es[REPS], cs[REPS];
  for (int r = 0; r < REPS && !st; r++) {
    gs[r] = median_add_out(g[0], g[1], g[2], 2000, &st);
    if (kdk_stub_unregister_device(add, KD_DEVICE_PRIVATEUSE1) ||
        KDK_REGISTER_DEVICE_STUB(add_stub, KD_DEVICE_PRIVATEUSE1, empty_add_loop))
      return fail("add_stub's device slot");
    if (!st) es[r] = median_add_out(g[0], g[1], g[2], 2000, &st);
    if (kdk_stub_unregister_device(add, KD_DEVICE_PRIVATEUSE1) ||
        kdk_stub_register_device(add, KD_DEVICE_PRIVATEUSE1, plugin_loop))
      return fail("add_stub's device slot");
    if (!st) cs[r] = median_add_out(c[0], c[1], c[2], 2000, &st);
  }
  if (st) return fail("add.out on the generated backend");
  double gen1 = kd_bench_median(gs, REPS), empty1 = kd_bench_median(es, REPS),
         cpu1 = kd_bench_median(cs, REPS);
  release3(g);
  release3(c);
  printf("gen_add_out_1_ns %.0f\n", gen1);
  printf("cpu_add_out_1_ns %.0f\n", cpu1);
  printf("gen_add_out_empty_1_ns %.0f\n", empty1);
  if ((st = float_triple(65536, dev, g)) || (st = float_triple(65536, kd_device_cpu(), c)))
    return fail("generated backend: inputs");
  double gen64 = median_add_out(g[0], g[1], g[2], 20, &st);
  double cpu64 = median_add_out(c[0], c[1], c[2], 20, &st);
  release3(g);
  release3(c);
  if (st) return fail("add.out on the generated backend");
  printf("gen_add_out_64k_ns %.0f\n", gen64);
  printf("cpu_add_out_64k_ns %.0f\n", cpu64);
  if (kd_backend_unload(plugin)) return fail("unload the generated backend");
  return 0;
}

int kd_bench_backend(int argc, char **argv) {
  const char *fakedev = argc > 1 ? argv[1] : KD_BENCH_FAKEDEV_PLUGIN;
  const char *p500 = argc > 2 ? argv[2] : KD_BENCH_PLUGIN500;
  kd_plugin *plugin;
  if (kd_ops_open()) return fail("kd_ops_open");
  if (kd_backend_load(fakedev, &plugin)) return fail(fakedev);
  kd_set_warning_handler(quiet, NULL); /* the fallback's warning */

  /* The typed calls. */
  kd_library *impl;
  kd_kernel k = kd_kernel_unboxed(cpu_noop, "(Tensor) -> ()");
  kd_op *op;
  kd_tensor *tc, *td;
  kd_device dev = {KD_DEVICE_PRIVATEUSE1, 0};
  int64_t one = 1;
  if (kd_library_open(KD_LIBRARY_IMPL, "fakedev", KD_KEY_CPU, __FILE__, __LINE__, &impl) ||
      kd_library_impl(impl, "noop", &k, NULL) ||
      kd_op_find_typed("fakedev::noop", "", "(Tensor) -> ()", &op) ||
      kd_tensor_empty(1, &one, KD_FLOAT32, kd_device_cpu(), &tc) ||
      kd_tensor_empty(1, &one, KD_FLOAT32, dev, &td))
    return fail("fakedev::noop");
  double backend_ns, cpu_ns;
  median_typed(op, td, tc, &backend_ns, &cpu_ns);
  printf("backend_typed_call_ns %.2f\n", backend_ns);
  printf("cpu_typed_call_ns %.2f\n", cpu_ns);
  kd_tensor_release(tc);
  kd_tensor_release(td);
  kd_library_close(impl);

  /* The fallback. */
  kd_tensor *a, *b;
  kd_status st = device_pair(1, &a, &b);
  if (st) return fail("inputs");
  double fb = median_add(add_fallback, a, b, 20000, &st);
  double floor = median_add(add_floor, a, b, 20000, &st);
  kd_tensor_release(a);
  kd_tensor_release(b);
  if (st) return fail("add on fakedev");
  printf("fallback_add_1_ns %.0f\n", fb);
  printf("fallback_floor_1_ns %.0f\n", floor);
  if ((st = device_pair(1 << 20, &a, &b))) return fail("inputs");
  double big = median_add(add_fallback, a, b, 5, &st);
  kd_tensor_release(a);
  kd_tensor_release(b);
  if (st) return fail("add on fakedev");
  printf("fallback_add_1M_ns %.0f\n", big);
  if (kd_backend_unload(plugin)) return fail("unload fakedev");

  /* Loading and unloading 500 kernels. */
  double load[REPS], unload[REPS];
  for (int r = -1; r < REPS; r++) {
    kd_plugin *p;
    uint64_t t0 = kd_bench_now_ns();
    if (kd_backend_load(p500, &p)) return fail(p500);
    uint64_t t1 = kd_bench_now_ns();
    if (kd_backend_unload(p)) return fail("unload");
    uint64_t t2 = kd_bench_now_ns();
    if (r >= 0) {
      load[r] = (double)(t1 - t0) / 1e3;
      unload[r] = (double)(t2 - t1) / 1e3;
    }
  }
  printf("load_500_us %.0f\n", kd_bench_median(load, REPS));
  printf("unload_500_us %.0f\n", kd_bench_median(unload, REPS));
  int rc = bench_generated(argc > 3 ? argv[3] : KD_BENCH_FAKEGEN_PLUGIN);
  kd_ops_close();
  return rc;
}
