/*
 * kd_bench_dispatch.c: `kd-bench dispatch`. The same figures as
 * `kd-bench-libtorch dispatch`, by the same method: medians of ns per
 * operation over repetitions, after one warm-up repetition (15 for the
 * lookup, the pair and registration; the call figures, direct_* and
 * dispatch_*, are each the median over eight call-site placements of a
 * median over 7, followed by NAME_min and NAME_max over the placements:
 * see report_calls):
 *   direct_call_ns       the no-op kernel through a plain function pointer
 *   dispatch_unboxed_ns  typed call of a one-tensor no-op operator (kd_call_unboxed,
 *                        inline: the macro of kd/dispatch.h)
 *   dispatch_boxed_ns    boxed call: push the tensor, call
 *   dispatch_boxed_borrowed_ns  the same with the tensor pushed borrowed
 *                        (kd_value_tensor_borrowed: no reference taken), as
 *                        an interpreter lending its frame's values would
 *   *_ret_ns             the same three with a kernel that returns its input
 *                        (a result reference taken and dropped per call)
 *   direct_call_owned_ns the direct call between kd_tensor_retain and
 *                        kd_tensor_release: the least a boxed call with the
 *                        tensor pushed owned can cost (the push takes a
 *                        reference, the call drops it, a kernel is called;
 *                        here the two are calls into the library, in
 *                        libtorch they are inline)
 *   dispatch_*_inference_ns  the typed, boxed and boxed borrowed calls of
 *                        the first three with a tensor made in inference
 *                        mode (key set {CPU}), called outside it: the same
 *                        loops, op and kernel as the normal tensor's
 *                        {CPU, ADInplaceOrView, AutogradCPU}, whose autograd
 *                        keys fall through (issue 19: the figures must not
 *                        move with them)
 *   refcount_pair_ns     one atomic increment and decrement of a counter,
 *                        as those two reference operations do (the same code
 *                        as kd-bench-libtorch's figure of that name)
 *   op_lookup_ns         kd_op_find by name and overload
 *   def_impl_1000_us     define 1,000 operators (add.Tensor's schema, new
 *                        names) and implement each for CPU
 *   release_1000_us      release those 2,000 registrations
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench_groups.h"
#include "bench_util.h"
#include "kd/kd.h"

#define REPS 15

/* The kernels and the timed loop start on a cache line: the linker puts the
 * library's cold code ahead of them, so otherwise their placement (and the
 * typed call's figure with it) moves with unrelated changes to the
 * library. */
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

/* The call site's placement. Where the timed loop's call instruction sits
 * moves the figure of a call this short measurably (and a whole binary's
 * layout more), with the same instructions.
 * So each call figure is measured at KD_BENCH_PLACES placements, 1 to 15
 * bytes of no-ops ahead of the call, and reported as the median over them,
 * with the fastest and slowest (kd-bench-libtorch does the same). */
#define KD_BENCH_PLACES 8
#define KD_BENCH_PLACE_REPS 7

/* mode: 0 direct, 1 typed, 2 boxed, 3 boxed borrowed, 4 direct between a
 * retain and a release; ret: the kernel returns its input; pad: no-op bytes
 * ahead of the call (1, 3, ..., 15). One copy of the loop per mode, kernel
 * and placement (time_calls), as kd-bench-libtorch's loops are one template
 * instance per figure: no branch on the mode in the loop. */
static inline __attribute__((always_inline)) double
time_loop(kd_op *op, kd_tensor *t, const int mode, const bool ret, const int pad, size_t n) {
  kd_arg args[1] = {{.t = t}};
  kd_value rets[1] = {kd_value_none()};
  kd_call call = {op, kd_tensor_key_set(t), KD_KEY_CPU, NULL};
  kd_unboxed_fn volatile fp = ret ? noop_ret : noop;
  kd_stack stack;
  kd_stack_init(&stack);
  kd_stack_reserve(&stack, 4);
  uint64_t t0 = kd_bench_now_ns();
  for (size_t i = 0; i < n; i++) {
    /* constants after inlining: one of these stays */
    if (pad == 1) __asm__ volatile(".nops 1");
    if (pad == 3) __asm__ volatile(".nops 3");
    if (pad == 5) __asm__ volatile(".nops 5");
    if (pad == 7) __asm__ volatile(".nops 7");
    if (pad == 9) __asm__ volatile(".nops 9");
    if (pad == 11) __asm__ volatile(".nops 11");
    if (pad == 13) __asm__ volatile(".nops 13");
    if (pad == 15) __asm__ volatile(".nops 15");
    if (mode == 0) {
      fp(&call, args, rets);
    } else if (mode == 1) {
      kd_call_unboxed(op, args, rets);
    } else if (mode == 4) {
      kd_tensor_retain(t);
      fp(&call, args, rets);
      kd_tensor_release(t);
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

typedef double (*time_calls_fn)(kd_op *op, kd_tensor *t, size_t n);

#define KD_BENCH_LOOP(m, r, p)                                                                   \
  __attribute__((aligned(64), noinline)) static double time_calls_##m##_##r##_##p(              \
      kd_op *op, kd_tensor *t, size_t n) {                                                       \
    return time_loop(op, t, m, r, p, n);                                                         \
  }
/* The eight placements of one loop, and their table. */
#define KD_BENCH_LOOPS(m, r)                                                                     \
  KD_BENCH_LOOP(m, r, 1)                                                                         \
  KD_BENCH_LOOP(m, r, 3)                                                                         \
  KD_BENCH_LOOP(m, r, 5)                                                                         \
  KD_BENCH_LOOP(m, r, 7)                                                                         \
  KD_BENCH_LOOP(m, r, 9)                                                                         \
  KD_BENCH_LOOP(m, r, 11)                                                                        \
  KD_BENCH_LOOP(m, r, 13)                                                                        \
  KD_BENCH_LOOP(m, r, 15)                                                                        \
  static const time_calls_fn time_calls_##m##_##r[KD_BENCH_PLACES] = {                          \
      time_calls_##m##_##r##_1,  time_calls_##m##_##r##_3,  time_calls_##m##_##r##_5,          \
      time_calls_##m##_##r##_7,  time_calls_##m##_##r##_9,  time_calls_##m##_##r##_11,         \
      time_calls_##m##_##r##_13, time_calls_##m##_##r##_15};
KD_BENCH_LOOPS(0, 0)
KD_BENCH_LOOPS(1, 0)
KD_BENCH_LOOPS(2, 0)
KD_BENCH_LOOPS(3, 0)
KD_BENCH_LOOPS(4, 0)
KD_BENCH_LOOPS(0, 1)
KD_BENCH_LOOPS(1, 1)
KD_BENCH_LOOPS(2, 1)
KD_BENCH_LOOPS(3, 1)
#undef KD_BENCH_LOOPS
#undef KD_BENCH_LOOP

static const time_calls_fn *const time_calls[2][5] = {
    {time_calls_0_0, time_calls_1_0, time_calls_2_0, time_calls_3_0, time_calls_4_0},
    {time_calls_0_1, time_calls_1_1, time_calls_2_1, time_calls_3_1, NULL}};

/* One call figure: per placement the median of KD_BENCH_PLACE_REPS batches
 * of a million calls (after a warm-up batch); printed as the median over
 * the placements, then `NAME_min` and `NAME_max` over them. */
static void report_calls(const char *name, const time_calls_fn *fns, kd_op *op, kd_tensor *t) {
  double place[KD_BENCH_PLACES];
  for (int p = 0; p < KD_BENCH_PLACES; p++) {
    double s[KD_BENCH_PLACE_REPS];
    fns[p](op, t, 100000);
    for (int r = 0; r < KD_BENCH_PLACE_REPS; r++) s[r] = fns[p](op, t, 1000000);
    place[p] = kd_bench_median(s, KD_BENCH_PLACE_REPS);
  }
  double med = kd_bench_median(place, KD_BENCH_PLACES); /* sorts place[] */
  printf("%s %.2f\n%s_min %.2f\n%s_max %.2f\n", name, med, name, place[0], name,
         place[KD_BENCH_PLACES - 1]);
}

/* The reference pair of an owned push on its own: a relaxed increment, an
 * acquire-release decrement that tests for the last reference. */
static _Atomic int64_t pair_refs = 1;
__attribute__((aligned(64))) static double time_refcount_pair(size_t n) {
  uint64_t t0 = kd_bench_now_ns();
  for (size_t i = 0; i < n; i++) {
    atomic_fetch_add_explicit(&pair_refs, 1, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&pair_refs, 1, memory_order_acq_rel) == 1) sink++;
  }
  return (double)(kd_bench_now_ns() - t0) / (double)n;
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
    for (int mode = 0; mode < 4; mode++) report_calls(names[ret][mode], time_calls[ret][mode], ops[ret], t);
  report_calls("direct_call_owned_ns", time_calls[0][4], ops[0], t);
  /* The same calls with a tensor without autograd keys. */
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  kd_tensor *ti;
  kd_status st = kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &ti);
  kd_inference_mode_exit(g);
  if (st) {
    fprintf(stderr, "kd-bench dispatch: %s\n", kd_last_error());
    return 1;
  }
  static const char *inference_names[4] = {NULL, "dispatch_unboxed_inference_ns",
                                           "dispatch_boxed_inference_ns",
                                           "dispatch_boxed_borrowed_inference_ns"};
  for (int mode = 1; mode < 4; mode++)
    report_calls(inference_names[mode], time_calls[0][mode], ops[0], ti);
  kd_tensor_release(ti);
  double s[REPS];
  time_refcount_pair(100000);
  for (int r = 0; r < REPS; r++) s[r] = time_refcount_pair(1000000);
  printf("refcount_pair_ns %.2f\n", kd_bench_median(s, REPS));
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
