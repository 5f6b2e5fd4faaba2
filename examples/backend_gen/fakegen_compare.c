/*
 * fakegen_compare.c: runs every operator the generated plugin "fakegen"
 * covers on the fake device and on the CPU, and compares the results.
 *
 *   fakegen_compare path/to/libfakegen.so
 *
 * Loads the plugin with kd_backend_load, then for each case and each of the
 * two devices (fakedev:0, fakedev:1): makes the inputs on the CPU, moves
 * copies to the device, runs the case on both, and checks that the device's
 * result lives on that device and has the CPU result's dtype, sizes and values.
 * In-place and out= cases check the tensor the caller passed. The plugin turns
 * on no CPU fallback, so an operator the plugin did not register fails with
 * ENOKERNEL instead of passing unnoticed. Last: no device memory is left, the
 * plugin unloads. Exit status 0 when everything matched; every mismatch is
 * printed as "FAIL case (device): what".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <kd/kd.h>
#include <kd/ops.h>

typedef long long (*live_bytes_fn)(int32_t index);

#define NIN 7
typedef kd_status (*case_fn)(kd_tensor **x, kd_device dev, kd_tensor **out);

static int failures;

__attribute__((format(printf, 3, 4))) static void FAIL(const char *name, kd_device dev,
                                                       const char *fmt, ...) {
  char d[32];
  va_list ap;
  kd_device_format(dev, d, sizeof d);
  printf("FAIL %s (%s): ", name, d);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  failures++;
}

#define I(...) ((kd_ints){(const int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / 8})
#define UNUSED __attribute__((unused))
#define CASE(name) static kd_status name(kd_tensor **x UNUSED, kd_device dev UNUSED, kd_tensor **out)

/* A copy of x on its own device (what an in-place case mutates). */
static kd_status dup(kd_tensor *x, kd_tensor **out) {
  return kd_tensor_to_device(x, kd_tensor_device(x), out);
}

/* An out= argument with no elements, which the operator must resize. */
static kd_status empty_out(kd_dtype dtype, kd_device dev, kd_tensor **out) {
  return kd_empty_memory_format(I(0), &dtype, NULL, &dev, NULL, NULL, out);
}

static const kd_scalar two_and_half = {.kind = KD_SCALAR_DOUBLE, .v.d = 2.5};
static const kd_scalar three = {.kind = KD_SCALAR_INT, .v.i = 3};

/* Inputs: x[0] A f32 [3,4], x[1] B f32 [3,4], x[2] C f32 [4], x[3] I i64 [3,4],
 * x[4] D f64 [3,4], x[5] P f32 [3,4] (small, for exp), x[6] J i32 [3,4]. */

/* Legacy structured: add and mul (libkdops' meta and impl, the device loop
 * through add_stub / mul_stub). */
CASE(add_f32) { return kd_add_Tensor(x[0], x[1], NULL, out); }
CASE(add_alpha_broadcast) { return kd_add_Tensor(x[0], x[2], &two_and_half, out); }
CASE(add_i64_alpha) { return kd_add_Tensor(x[3], x[3], &three, out); }
CASE(add_f64) { return kd_add_Tensor(x[4], x[4], NULL, out); }
CASE(add_inplace) {
  kd_status st = dup(x[0], out);
  return st ? st : kd_add_Tensor_(*out, x[2], &three);
}
CASE(add_out) {
  kd_status st = empty_out(KD_FLOAT32, dev, out);
  return st ? st : kd_add_out(x[0], x[1], &two_and_half, *out);
}
CASE(mul_f32) { return kd_mul_Tensor(x[0], x[1], out); }
CASE(mul_i32) { return kd_mul_Tensor(x[6], x[6], out); }
CASE(mul_inplace) {
  kd_status st = dup(x[4], out);
  return st ? st : kd_mul_Tensor_(*out, x[4]);
}
CASE(mul_out) {
  kd_status st = empty_out(KD_INT64, dev, out);
  return st ? st : kd_mul_out(x[3], x[3], *out);
}
/* LegacyMeta: libkdops' meta, the backend's impl. */
CASE(neg_f32) { return kd_neg(x[0], out); }
CASE(neg_i64) { return kd_neg(x[3], out); }
CASE(neg_strided) {
  kd_tensor *t;
  kd_status st = kd_transpose_int(x[0], 0, 1, &t);
  if (!st) st = kd_neg(t, out);
  kd_tensor_release(t);
  return st;
}
CASE(neg_inplace) {
  kd_status st = dup(x[4], out);
  return st ? st : kd_neg_(*out);
}
CASE(neg_out) {
  kd_status st = empty_out(KD_FLOAT32, dev, out);
  return st ? st : kd_neg_out(x[1], *out);
}
/* Customized structured: the backend's meta and impl. */
CASE(sub_alpha) { return kd_sub_Tensor(x[0], x[1], &three, out); }
CASE(sub_broadcast_i64) { return kd_sub_Tensor(x[3], x[3], NULL, out); }
CASE(sub_inplace) {
  kd_status st = dup(x[0], out);
  return st ? st : kd_sub_Tensor_(*out, x[2], &two_and_half);
}
CASE(sub_out) {
  kd_status st = empty_out(KD_FLOAT64, dev, out);
  return st ? st : kd_sub_out(x[4], x[4], &three, *out);
}
/* structured: False: the backend's unstructured exp.out. */
CASE(exp_out_f32) {
  kd_status st = empty_out(KD_FLOAT32, dev, out);
  return st ? st : kd_exp_out(x[5], *out);
}
CASE(exp_out_f64) {
  kd_status st = empty_out(KD_FLOAT64, dev, out);
  return st ? st : kd_exp_out(x[4], *out);
}
/* Customized unstructured primitives, and Legacy resize_ (libkdops' kernel). */
CASE(fill) {
  kd_status st = dup(x[0], out);
  return st ? st : kd_fill_Scalar_(*out, &two_and_half);
}
CASE(copy) {
  kd_status st = dup(x[0], out);
  return st ? st : kd_copy_(*out, x[1], false);
}
CASE(resize_shrink) {
  kd_status st = dup(x[3], out);
  return st ? st : kd_resize_(*out, I(2, 3), NULL);
}
/* The new operator fakegen::scale_add, boxed by name; on the CPU (which has
 * no kernel for it) the same values from add with alpha. */
/* fakegen::scale_add boxed, on the tensors given (x[0], x[1]). */
static kd_status call_scale_add(kd_tensor **x, kd_tensor **out) {
  kd_op *op;
  kd_status st = kd_op_find("fakegen::scale_add", "", &op);
  if (st) return st;
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(x[0]);
  if (!(st = kd_stack_push(&s, &v))) {
    v = kd_value_tensor(x[1]);
    if (!(st = kd_stack_push(&s, &v))) {
      v = kd_value_double(0.25);
      if (!(st = kd_stack_push(&s, &v))) st = kd_call_boxed(op, &s);
    }
  }
  if (!st) st = kd_value_get_tensor(&s.items[0], out);
  if (!st) kd_tensor_retain(*out);
  kd_stack_free(&s);
  return st;
}
CASE(scale_add) {
  if (dev.type == KD_DEVICE_CPU) {
    kd_scalar a = {.kind = KD_SCALAR_DOUBLE, .v.d = 0.25};
    return kd_add_Tensor(x[0], x[1], &a, out);
  }
  return call_scale_add(x, out);
}

/* The generated direct calls (fakegen_direct.h), without the dispatcher:
 * the plugin hands them out through get_proc_address. On the CPU the same
 * values from libkdops' operators. */
static void (*direct(const char *name))(void) {
  const kd_backend_iface *b = kd_backend_iface_of(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  void *p = b && b->get_proc_address ? b->get_proc_address(b->ctx, name) : NULL;
  return (void (*)(void))(uintptr_t)p;
}
#define DIRECT(var, type, name)                                                              \
  type var = (type)direct(name);                                                             \
  if (!var) return kd_set_error(KD_ENOTFOUND, "the plugin hands out no direct call %s", name)

typedef kd_status (*binary_fn)(kd_tensor *, kd_tensor *, const kd_scalar *, kd_tensor **);
typedef kd_status (*binary_inplace_fn)(kd_tensor *, kd_tensor *, const kd_scalar *);
typedef kd_status (*unary_out_fn)(kd_tensor *, kd_tensor *);
typedef kd_status (*scale_add_fn)(kd_tensor *, kd_tensor *, double, kd_tensor **);

CASE(direct_add) { /* Legacy structured, functional */
  if (dev.type == KD_DEVICE_CPU) return kd_add_Tensor(x[0], x[2], &two_and_half, out);
  DIRECT(fn, binary_fn, "kd_fakegen_add_Tensor");
  return fn(x[0], x[2], &two_and_half, out);
}
CASE(direct_add_inplace) { /* Legacy structured, inplace */
  kd_status st = dup(x[3], out);
  if (st || dev.type == KD_DEVICE_CPU) return st ? st : kd_add_Tensor_(*out, x[3], &three);
  DIRECT(fn, binary_inplace_fn, "kd_fakegen_add_Tensor_");
  return fn(*out, x[3], &three);
}
CASE(direct_neg_out) { /* LegacyMeta structured, out */
  kd_status st = empty_out(KD_FLOAT64, dev, out);
  if (st || dev.type == KD_DEVICE_CPU) return st ? st : kd_neg_out(x[4], *out);
  DIRECT(fn, unary_out_fn, "kd_fakegen_neg_out");
  return fn(x[4], *out);
}
CASE(direct_sub) { /* Customized structured, functional; alpha NULL: its default 1 */
  if (dev.type == KD_DEVICE_CPU) return kd_sub_Tensor(x[0], x[1], NULL, out);
  DIRECT(fn, binary_fn, "kd_fakegen_sub_Tensor");
  return fn(x[0], x[1], NULL, out);
}
CASE(direct_exp_out) { /* unstructured */
  kd_status st = empty_out(KD_FLOAT32, dev, out);
  if (st || dev.type == KD_DEVICE_CPU) return st ? st : kd_exp_out(x[5], *out);
  DIRECT(fn, unary_out_fn, "kd_fakegen_exp_out");
  return fn(x[5], *out);
}
CASE(direct_scale_add) { /* a new operator */
  if (dev.type == KD_DEVICE_CPU) {
    kd_scalar a = {.kind = KD_SCALAR_DOUBLE, .v.d = -1.5};
    return kd_add_Tensor(x[4], x[4], &a, out);
  }
  DIRECT(fn, scale_add_fn, "kd_fakegen_scale_add");
  return fn(x[4], x[4], -1.5, out);
}

typedef struct tcase {
  const char *name;
  case_fn fn;
  bool values; /* false: only dtype, sizes and device */
} tcase;

static const tcase cases[] = {
    {"add_f32", add_f32, true},         {"add_alpha_broadcast", add_alpha_broadcast, true},
    {"add_i64_alpha", add_i64_alpha, true}, {"add_f64", add_f64, true},
    {"add_inplace", add_inplace, true}, {"add_out", add_out, true},
    {"mul_f32", mul_f32, true},         {"mul_i32", mul_i32, true},
    {"mul_inplace", mul_inplace, true}, {"mul_out", mul_out, true},
    {"neg_f32", neg_f32, true},         {"neg_i64", neg_i64, true},
    {"neg_strided", neg_strided, true}, {"neg_inplace", neg_inplace, true},
    {"neg_out", neg_out, true},         {"sub_alpha", sub_alpha, true},
    {"sub_broadcast_i64", sub_broadcast_i64, true}, {"sub_inplace", sub_inplace, true},
    {"sub_out", sub_out, true},         {"exp_out_f32", exp_out_f32, true},
    {"exp_out_f64", exp_out_f64, true}, {"fill", fill, true},
    {"copy", copy, true},               {"resize_shrink", resize_shrink, true},
    {"scale_add", scale_add, true},
    {"direct_add", direct_add, true},   {"direct_add_inplace", direct_add_inplace, true},
    {"direct_neg_out", direct_neg_out, true}, {"direct_sub", direct_sub, true},
    {"direct_exp_out", direct_exp_out, true}, {"direct_scale_add", direct_scale_add, true},
};

/* ---- Inputs and comparison ---------------------------------------------------- */

static kd_status from_values(const double *v, int nd, const int64_t *sizes, kd_dtype dt,
                             kd_tensor **out) {
  kd_tensor *t;
  kd_status st = kd_tensor_empty(nd, sizes, KD_FLOAT64, kd_device_cpu(), &t);
  if (st) return st;
  memcpy(kd_tensor_data(t), v, (size_t)kd_tensor_numel(t) * sizeof(double));
  st = kd_tensor_to_dtype(t, dt, out);
  kd_tensor_release(t);
  return st;
}

static kd_status make_inputs(kd_tensor **x) {
  double a[12], b[12], c[4], ints[12], p[12];
  for (int i = 0; i < 12; i++) {
    a[i] = (i * 7 % 11) * 0.75 - 3.25;
    b[i] = (i * 5 % 13) * -0.5 + 2.0;
    ints[i] = (double)(i * 3 - 17);
    p[i] = (i % 5) * 0.3 - 0.6;
  }
  for (int i = 0; i < 4; i++) c[i] = i * 1.5 - 2.0;
  kd_status st;
  if ((st = from_values(a, 2, (int64_t[]){3, 4}, KD_FLOAT32, &x[0])) ||
      (st = from_values(b, 2, (int64_t[]){3, 4}, KD_FLOAT32, &x[1])) ||
      (st = from_values(c, 1, (int64_t[]){4}, KD_FLOAT32, &x[2])) ||
      (st = from_values(ints, 2, (int64_t[]){3, 4}, KD_INT64, &x[3])) ||
      (st = from_values(a, 2, (int64_t[]){3, 4}, KD_FLOAT64, &x[4])) ||
      (st = from_values(p, 2, (int64_t[]){3, 4}, KD_FLOAT32, &x[5])) ||
      (st = from_values(ints, 2, (int64_t[]){3, 4}, KD_INT32, &x[6])))
    return st;
  return KD_OK;
}

/* The values of a cpu tensor as float64, row-major (a new contiguous tensor). */
static kd_status values_of(kd_tensor *t, kd_tensor **out) {
  kd_tensor *d;
  kd_status st = kd_tensor_to_dtype(t, KD_FLOAT64, &d);
  if (st) return st;
  st = kd_contiguous(d, KD_MEMORY_FORMAT_CONTIGUOUS, out);
  kd_tensor_release(d);
  return st;
}

static void compare(const tcase *c, kd_device dev, kd_tensor *cpu, kd_tensor *got) {
  kd_device gd = kd_tensor_device(got);
  if (gd.type != dev.type || gd.index != dev.index) {
    char g[32];
    kd_device_format(gd, g, sizeof g);
    FAIL(c->name, dev, "result on %s", g);
    return;
  }
  if (kd_tensor_dtype(cpu) != kd_tensor_dtype(got)) {
    FAIL(c->name, dev, "dtype %s, cpu gave %s", kd_dtype_name(kd_tensor_dtype(got)),
         kd_dtype_name(kd_tensor_dtype(cpu)));
    return;
  }
  int nd = kd_tensor_ndim(cpu);
  if (nd != kd_tensor_ndim(got) ||
      memcmp(kd_tensor_sizes(cpu), kd_tensor_sizes(got), sizeof(int64_t) * (size_t)nd)) {
    FAIL(c->name, dev, "sizes differ from the cpu's (%d vs %d dims)", kd_tensor_ndim(got), nd);
    return;
  }
  if (!c->values) return;
  kd_tensor *host = NULL, *gv = NULL, *cv = NULL;
  kd_status st = kd_tensor_to_device(got, kd_device_cpu(), &host);
  if (!st) st = values_of(host, &gv);
  if (!st) st = values_of(cpu, &cv);
  if (st) {
    FAIL(c->name, dev, "reading the result: %s", kd_last_error());
  } else {
    const double *g = kd_tensor_data(gv), *e = kd_tensor_data(cv);
    for (int64_t i = 0; i < kd_tensor_numel(cv); i++)
      if (!(fabs(g[i] - e[i]) <= 1e-5 * (1 + fabs(e[i])))) {
        FAIL(c->name, dev, "element %lld is %.9g, the cpu gave %.9g", (long long)i, g[i], e[i]);
        break;
      }
  }
  kd_tensor_release(host);
  kd_tensor_release(gv);
  kd_tensor_release(cv);
}

static void run_case(const tcase *c, kd_tensor **x, kd_device dev) {
  kd_tensor *dx[NIN] = {0}, *cpu = NULL, *got = NULL;
  kd_status st = c->fn(x, kd_device_cpu(), &cpu);
  if (st) {
    FAIL(c->name, kd_device_cpu(), "the cpu failed: %s", kd_last_error());
    kd_tensor_release(cpu);
    return;
  }
  for (int i = 0; i < NIN && !st; i++) st = kd_tensor_to_device(x[i], dev, &dx[i]);
  if (!st) st = c->fn(dx, dev, &got);
  if (st)
    FAIL(c->name, dev, "%s: %s", kd_status_name(st), kd_last_error());
  else
    compare(c, dev, cpu, got);
  kd_tensor_release(got);
  kd_tensor_release(cpu);
  for (int i = 0; i < NIN; i++) kd_tensor_release(dx[i]);
}

/* device_check: ExactSame: operands on fakedev:0 and fakedev:1 are refused
 * by the generated wrapper, with PyTorch's message, before the kernel runs. */
static void check_device_mismatch(kd_tensor **x) {
  kd_device d0 = {KD_DEVICE_PRIVATEUSE1, 0}, d1 = {KD_DEVICE_PRIVATEUSE1, 1};
  kd_tensor *y[2] = {NULL, NULL}, *got = NULL;
  kd_status st = kd_tensor_to_device(x[0], d0, &y[0]);
  if (!st) st = kd_tensor_to_device(x[1], d1, &y[1]);
  if (st) {
    FAIL("device_check", d1, "inputs: %s", kd_last_error());
  } else {
    static const char want[] = "Expected all tensors to be on the same device, but found at least two "
                               "devices, fakedev:0 and fakedev:1! (when checking argument for argument "
                               "other in method wrapper_PrivateUse1_scale_add)";
    st = call_scale_add(y, &got);
    if (st != KD_EINVAL || !strstr(kd_last_error(), want))
      FAIL("device_check", d1, "got %s: %s; expected KD_EINVAL: %s", kd_status_name(st),
           st ? kd_last_error() : "", want);
  }
  kd_tensor_release(got);
  kd_tensor_release(y[0]);
  kd_tensor_release(y[1]);
}

/* The backend's YAML registers fakegen::scale_add at AutogradPrivateUse1 too
 * (its kernel runs the PrivateUse1 one below it; the scale_add cases above
 * went through it): both slots hold the generated kernels. */
static void check_autograd_key(void) {
  const kd_device d0 = {KD_DEVICE_PRIVATEUSE1, 0};
  kd_op *op;
  if (kd_op_find("fakegen::scale_add", "", &op)) {
    FAIL("autograd_key", d0, "%s", kd_last_error());
    return;
  }
  char table[8192];
  kd_op_dump_table(op, table, sizeof table);
  static const char *const want[] = {"\n  PrivateUse1: unboxed [kernel] from ",
                                     "\n  AutogradPrivateUse1: unboxed [kernel] from "};
  for (size_t i = 0; i < 2; i++)
    if (!strstr(table, want[i])) FAIL("autograd_key", d0, "no \"%s\" in:\n%s", want[i] + 1, table);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fakegen_compare path/to/libfakegen.so\n");
    return 2;
  }
  kd_plugin *plugin;
  if (kd_backend_load(argv[1], &plugin)) {
    printf("FAIL load: %s\n", kd_last_error());
    return 1;
  }
  kd_tensor *x[NIN] = {0};
  if (make_inputs(x)) {
    printf("FAIL inputs: %s\n", kd_last_error());
    return 1;
  }
  size_t n = sizeof cases / sizeof cases[0];
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < n; i++) run_case(&cases[i], x, (kd_device){KD_DEVICE_PRIVATEUSE1, d});
  check_device_mismatch(x);
  check_autograd_key();
  for (int i = 0; i < NIN; i++) kd_tensor_release(x[i]);
  /* Every device byte was freed. */
  const kd_backend_iface *b = kd_backend_iface_of(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
  live_bytes_fn live = b && b->get_proc_address
                           ? (live_bytes_fn)(uintptr_t)b->get_proc_address(b->ctx, "fakedev_live_bytes")
                           : NULL;
  for (int d = 0; live && d < 2; d++)
    if (live(d) != 0) FAIL("live_bytes", ((kd_device){KD_DEVICE_PRIVATEUSE1, d}), "%lld bytes left", live(d));
  if (!live) printf("FAIL live_bytes: the plugin has no fakedev_live_bytes\n"), failures++;
  if (kd_backend_unload(plugin)) printf("FAIL unload: %s\n", kd_last_error()), failures++;
  printf("%zu cases x 2 devices: %d failure%s\n", n, failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
