/*
 * kd_bench_dispatch.c: `kd-bench dispatch`. The same figures as
 * `kd-bench-libtorch dispatch`, by the same method (medians over 15
 * repetitions of ns per operation, after one warm-up repetition):
 *   direct_call_ns       the no-op kernel through a plain function pointer
 *   dispatch_unboxed_ns  typed call of a one-tensor no-op operator
 *   dispatch_boxed_ns    boxed call: push the tensor, call
 *   dispatch_boxed_borrowed_ns  the same with the tensor pushed borrowed
 *                        (kd_value_tensor_borrowed: no reference taken), as
 *                        an interpreter lending its frame's values would
 *   *_ret_ns             the same three with a kernel that returns its input
 *                        (a result reference taken and dropped per call)
 *   op_lookup_ns         kd_op_find by name and overload
 *   def_impl_1000_us     define 1,000 operators (add.Tensor's schema, new
 *                        names) and implement each for CPU
 *   release_1000_us      release those 2,000 registrations
 */
#include <stdio.h>
#include <string.h>

#include "bench_groups.h"
#include "bench_util.h"
#include "kd/kd.h"

#define REPS 15

/* The kernels and the timed loop start on a cache line: the linker puts the
 * library's cold code ahead of them, so otherwise their placement (and the
 * typed call's figure with it, by 0.2 ns) moves with unrelated changes to
 * the library. */
__attribute__((aligned(64))) static kd_status noop(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)a;
  (void)r;
  return KD_OK;
}

__attribute__((aligned(64))) static kd_status noop_ret(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static kd_status add_kernel(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static uintptr_t sink;

/* mode: 0 direct, 1 typed, 2 boxed, 3 boxed borrowed; ret: the kernel
 * returns its input. */
__attribute__((aligned(64))) static double time_calls(kd_op *op, kd_tensor *t, int mode, bool ret, size_t n) {
  kd_arg args[1] = {{.t = t}};
  kd_value rets[1] = {kd_value_none()};
  kd_call call = {op, kd_tensor_key_set(t), KD_KEY_CPU, NULL};
  kd_unboxed_fn volatile fp = ret ? noop_ret : noop;
  kd_stack stack;
  kd_stack_init(&stack);
  kd_stack_reserve(&stack, 4);
  uint64_t t0 = kd_bench_now_ns();
  for (size_t i = 0; i < n; i++) {
    if (mode == 0) {
      fp(&call, args, rets);
    } else if (mode == 1) {
      kd_call_unboxed(op, args, rets);
    } else {
      if (mode == 2)
        kd_stack_push_tensor(&stack, t);
      else
        kd_stack_push_tensor_borrowed(&stack, t);
      kd_call_boxed(op, &stack);
      if (ret) {
        kd_stack_pop(&stack, &rets[0]);
      }
    }
    if (ret) {
      sink += (uintptr_t)rets[0].u.t;
      kd_value_destroy(&rets[0]);
    }
  }
  uint64_t t1 = kd_bench_now_ns();
  kd_stack_free(&stack);
  return (double)(t1 - t0) / (double)n;
}

static double time_lookup(size_t n) {
  uint64_t t0 = kd_bench_now_ns();
  for (size_t i = 0; i < n; i++) {
    kd_op *op;
    kd_op_find("kdbench::noop", "", &op);
    sink += (uintptr_t)op;
  }
  return (double)(kd_bench_now_ns() - t0) / (double)n;
}

int kd_bench_dispatch(int argc, char **argv) {
  (void)argc;
  (void)argv;
  kd_library *def, *cpu;
  if (kd_library_open(KD_LIBRARY_DEF, "kdbench", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def) ||
      kd_library_open(KD_LIBRARY_IMPL, "kdbench", KD_KEY_CPU, __FILE__, __LINE__, &cpu) ||
      kd_library_def(def, "noop(Tensor self) -> ()", NULL, 0, NULL) ||
      kd_library_def(def, "noop_ret(Tensor self) -> Tensor", NULL, 0, NULL)) {
    fprintf(stderr, "kd-bench dispatch: %s\n", kd_last_error());
    return 1;
  }
  kd_kernel k = kd_kernel_unboxed(noop, "(Tensor) -> ()");
  kd_kernel kr = kd_kernel_unboxed(noop_ret, "(Tensor) -> Tensor");
  kd_op *ops[2];
  kd_tensor *t;
  if (kd_library_impl(cpu, "noop", &k, NULL) || kd_library_impl(cpu, "noop_ret", &kr, NULL) ||
      kd_op_find_typed("kdbench::noop", "", "(Tensor) -> ()", &ops[0]) ||
      kd_op_find_typed("kdbench::noop_ret", "", "(Tensor) -> Tensor", &ops[1]) ||
      kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &t)) {
    fprintf(stderr, "kd-bench dispatch: %s\n", kd_last_error());
    return 1;
  }
  static const char *names[2][4] = {
      {"direct_call_ns", "dispatch_unboxed_ns", "dispatch_boxed_ns", "dispatch_boxed_borrowed_ns"},
      {"direct_call_ret_ns", "dispatch_unboxed_ret_ns", "dispatch_boxed_ret_ns",
       "dispatch_boxed_borrowed_ret_ns"}};
  for (int ret = 0; ret < 2; ret++)
    for (int mode = 0; mode < 4; mode++) {
      double s[REPS];
      time_calls(ops[ret], t, mode, ret, 100000);
      for (int r = 0; r < REPS; r++) s[r] = time_calls(ops[ret], t, mode, ret, 1000000);
      printf("%s %.2f\n", names[ret][mode], kd_bench_median(s, REPS));
    }
  double s[REPS];
  time_lookup(10000);
  for (int r = 0; r < REPS; r++) s[r] = time_lookup(200000);
  printf("op_lookup_ns %.2f\n", kd_bench_median(s, REPS));

  /* Registration: 1,000 new operators per repetition. */
  enum { N = 1000 };
  static char schemas[N][128], opnames[N][64];
  double def_us[REPS], rel_us[REPS];
  kd_kernel ka = kd_kernel_unboxed(add_kernel, "(Tensor, Tensor, Scalar) -> Tensor");
  for (int r = -1; r < REPS; r++) {
    for (int i = 0; i < N; i++) {
      snprintf(opnames[i], sizeof opnames[i], "add_%d_%d.Tensor", r + 1, i);
      snprintf(schemas[i], sizeof schemas[i],
               "add_%d_%d.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", r + 1, i);
    }
    uint64_t t0 = kd_bench_now_ns();
    kd_library *frag, *impl;
    kd_library_open(KD_LIBRARY_FRAGMENT, "kdbench", KD_KEY_UNDEFINED, __FILE__, __LINE__, &frag);
    kd_library_open(KD_LIBRARY_IMPL, "kdbench", KD_KEY_CPU, __FILE__, __LINE__, &impl);
    for (int i = 0; i < N; i++) {
      if (kd_library_def(frag, schemas[i], NULL, 0, NULL) ||
          kd_library_impl(impl, opnames[i], &ka, NULL)) {
        fprintf(stderr, "kd-bench dispatch: %s\n", kd_last_error());
        return 1;
      }
    }
    uint64_t t1 = kd_bench_now_ns();
    kd_library_close(impl);
    kd_library_close(frag);
    uint64_t t2 = kd_bench_now_ns();
    if (r >= 0) {
      def_us[r] = (double)(t1 - t0) / 1e3;
      rel_us[r] = (double)(t2 - t1) / 1e3;
    }
  }
  printf("def_impl_1000_us %.1f\n", kd_bench_median(def_us, REPS));
  printf("release_1000_us %.1f\n", kd_bench_median(rel_us, REPS));
  fprintf(stderr, "(sink %lu)\n", (unsigned long)(sink & 0xff));
  kd_tensor_release(t);
  kd_library_close(cpu);
  kd_library_close(def);
  return 0;
}
