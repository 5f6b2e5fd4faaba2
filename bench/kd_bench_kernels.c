/*
 * kd_bench_kernels.c: `kd-bench kernels`. Medians over 15 repetitions of
 * 1,000,000 calls, after a warm-up:
 *   direct_call_ns    the kernel class's compute function called directly
 *                     through a volatile function pointer (object, inputs)
 *   prepared_call_ns  kd_prepared_run of a kernel class doing the same work
 *                     (one float32 tensor input, checked against the
 *                     prepared dtype; no outputs)
 *   dispatch_unboxed_ns  a typed call of a one-tensor no-op with one kernel
 *   kernel_select_ns     the same operator shape with kernel keys: one
 *                        kernel per dtype (all twelve), selected by the
 *                        tensor's dtype
 *   kernel_enforce_ns    a two-tensor no-op with kernel keys, both tensors
 *                        float32: the second tensor's argument definition
 *                        is checked on every call (nothing to cast), the
 *                        path every kernel with definitions to enforce takes
 */
#include <stdio.h>

#include "bench_groups.h"
#include "bench_util.h"
#include "kd/kd.h"

#define REPS 15
#define CALLS 1000000

static uintptr_t sink;
static int state;

static kd_status noop_create(void *data, const kd_kernel_construction *ctx, void **object) {
  (void)data;
  (void)ctx;
  *object = &state;
  return KD_OK;
}

static void noop_compute(void *object, kd_kernel_context *ctx, const kd_value *in, kd_value *out) {
  (void)ctx;
  (void)out;
  sink += (uintptr_t)object ^ (uintptr_t)in[0].u.t;
}

static kd_status noop_kernel(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)r;
  sink += (uintptr_t)a[0].t;
  return KD_OK;
}

/* Median ns of a typed call of op on t. */
static double time_typed(kd_op *op, kd_tensor *t) {
  kd_arg args[1] = {{.t = t}};
  double s[REPS];
  for (int r = -1; r < REPS; r++) {
    uint64_t t0 = kd_bench_now_ns();
    for (int i = 0; i < CALLS; i++) kd_call_unboxed(op, args, NULL);
    uint64_t t1 = kd_bench_now_ns();
    if (r >= 0) s[r] = (double)(t1 - t0) / CALLS;
  }
  return kd_bench_median(s, REPS);
}

int kd_bench_kernels(int argc, char **argv) {
  (void)argc;
  (void)argv;
  kd_library *def;
  if (kd_library_open(KD_LIBRARY_DEF, "kdkernels", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def) ||
      kd_library_def(def, "noop(Tensor self) -> ()", NULL, 0, NULL)) {
    fprintf(stderr, "kd-bench kernels: %s\n", kd_last_error());
    return 1;
  }
  kd_type_constraint c = {"self", KD_DTYPE_BIT(KD_FLOAT32)};
  kd_kernel_def d = {KD_KERNEL_DEF_API_VERSION, "kdkernels::noop", KD_DEVICE_CPU, &c, 1, NULL, 0, NULL, 0,
                     {KD_KERNEL_CLASS_API_VERSION, noop_create, noop_compute, NULL, NULL}, __FILE__};
  kd_kernel_def_reg *reg;
  kd_prepared *p;
  kd_dtype in[1] = {KD_FLOAT32};
  kd_tensor *t;
  if (kd_kernel_def_register(&d, &reg) ||
      kd_prepared_new("kdkernels::noop", KD_DEVICE_CPU, in, 1, NULL, 0, NULL, 0, NULL, 0, NULL, &p) ||
      kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &t)) {
    fprintf(stderr, "kd-bench kernels: %s\n", kd_last_error());
    return 1;
  }
  kd_value inputs[1] = {kd_value_tensor_borrowed(t)};
  void (*volatile direct)(void *, kd_kernel_context *, const kd_value *, kd_value *) = noop_compute;
  double direct_ns[REPS], prepared_ns[REPS], unchecked_ns[REPS];
  for (int r = -1; r < REPS; r++) {
    uint64_t t0 = kd_bench_now_ns();
    for (int i = 0; i < CALLS; i++) direct(&state, NULL, inputs, NULL);
    uint64_t t1 = kd_bench_now_ns();
    for (int i = 0; i < CALLS; i++) kd_prepared_run(p, inputs, NULL);
    uint64_t t2 = kd_bench_now_ns();
    for (int i = 0; i < CALLS; i++) kd_prepared_run_unchecked(p, inputs, NULL);
    uint64_t t3 = kd_bench_now_ns();
    if (r >= 0) {
      direct_ns[r] = (double)(t1 - t0) / CALLS;
      prepared_ns[r] = (double)(t2 - t1) / CALLS;
      unchecked_ns[r] = (double)(t3 - t2) / CALLS;
    }
  }
  printf("direct_call_ns %.2f\n", kd_bench_median(direct_ns, REPS));
  printf("prepared_call_ns %.2f\n", kd_bench_median(prepared_ns, REPS));
  printf("prepared_unchecked_ns %.2f\n", kd_bench_median(unchecked_ns, REPS));

  /* Selection inside dispatch. */
  kd_library *cpu;
  kd_kernel k = kd_kernel_unboxed(noop_kernel, "(Tensor) -> ()");
  kd_op *plain, *keyed;
  if (kd_library_def(def, "plain(Tensor self) -> ()", NULL, 0, NULL) ||
      kd_library_def(def, "keyed(Tensor self) -> ()", NULL, 0, NULL) ||
      kd_library_open(KD_LIBRARY_IMPL, "kdkernels", KD_KEY_CPU, __FILE__, __LINE__, &cpu) ||
      kd_library_impl(cpu, "plain", &k, NULL) || kd_op_find("kdkernels::plain", "", &plain) ||
      kd_op_find("kdkernels::keyed", "", &keyed)) {
    fprintf(stderr, "kd-bench kernels: %s\n", kd_last_error());
    return 1;
  }
  for (int dt = 0; dt < KD_DTYPE_COUNT; dt++)
    if (kd_library_impl_keyed(cpu, "keyed", KD_ALL_LAYOUT, KD_DTYPE_BIT(dt), &k, NULL)) {
      fprintf(stderr, "kd-bench kernels: %s\n", kd_last_error());
      return 1;
    }
  printf("dispatch_unboxed_ns %.2f\n", time_typed(plain, t));
  printf("kernel_select_ns %.2f\n", time_typed(keyed, t));
  kd_kernel k2 = kd_kernel_unboxed(noop_kernel, "(Tensor, Tensor) -> ()");
  kd_op *pair;
  if (kd_library_def(def, "pair(Tensor a, Tensor b) -> ()", NULL, 0, NULL) ||
      kd_library_impl_keyed(cpu, "pair", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k2, NULL) ||
      kd_op_find("kdkernels::pair", "", &pair)) {
    fprintf(stderr, "kd-bench kernels: %s\n", kd_last_error());
    return 1;
  }
  {
    kd_arg args[2] = {{.t = t}, {.t = t}};
    double s[REPS];
    for (int r = -1; r < REPS; r++) {
      uint64_t t0 = kd_bench_now_ns();
      for (int i = 0; i < CALLS; i++) kd_call_unboxed(pair, args, NULL);
      uint64_t t1 = kd_bench_now_ns();
      if (r >= 0) s[r] = (double)(t1 - t0) / CALLS;
    }
    printf("kernel_enforce_ns %.2f\n", kd_bench_median(s, REPS));
  }
  kd_library_close(cpu);
  fprintf(stderr, "(sink %lu)\n", (unsigned long)(sink & 0xff));
  kd_prepared_free(p);
  kd_kernel_def_release(reg);
  kd_tensor_release(t);
  kd_library_close(def);
  return 0;
}
