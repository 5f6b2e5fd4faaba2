/*
 * main.c: the program of the selective-build example. Of the twenty
 * operators of ops.c it calls five: sel::add, sel::mul, sel::relu, sel::exp
 * (on float32) and sel::sum (on float32 and int64), and prints the results.
 *
 * The tests build it twice, both statically linked:
 *   selective-full  ops.c as written: every operator, every dtype;
 *   selective-min   ops.c compiled with -include allow.h, the allow-list that
 *                   `kd trace -o allow.h -- selective-full` wrote: only what
 *                   this program calls is registered, or even compiled.
 * docs/PERFORMANCE.md compares their sizes.
 *
 *   selective-full | selective-min         run the five operators
 *   ... --probe OP DTYPE                   call sel::OP on a DTYPE tensor and
 *                                          say whether a kernel ran (exit 0)
 *                                          or the call failed (exit 3)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kd/kd.h>

/* ops.c comes from a static archive: naming its descriptor keeps it, and
 * with it the constructors that register the operators and their kernels. */
KD_USE_LIBRARY(kd_library_def_sel);

/* A 1-D tensor of `dtype` holding n values. */
static kd_tensor *tensor_of(kd_dtype dtype, const double *values, int64_t n) {
  kd_tensor *t;
  if (kd_tensor_empty(1, &n, dtype, kd_device_cpu(), &t)) return NULL;
  for (int64_t i = 0; i < n; i++) {
    kd_scalar v = kd_scalar_double(values[i]);
    if (kd_tensor_set(t, &i, &v)) {
      kd_tensor_release(t);
      return NULL;
    }
  }
  return t;
}

/* Calls sel::NAME on one or two tensors (as its schema says); *out owned. */
static kd_status call(const char *name, kd_tensor *x, kd_tensor *y, kd_tensor **out) {
  char qualified[64];
  snprintf(qualified, sizeof qualified, "sel::%s", name);
  kd_op *op;
  kd_status st = kd_op_find(qualified, "", &op);
  if (st) return st;
  kd_arg args[2] = {{.t = x}, {.t = y}};
  kd_value r = kd_value_none();
  if ((st = kd_call_unboxed(op, args, &r))) return st;
  *out = r.u.t;
  kd_tensor_retain(*out);
  kd_value_destroy(&r);
  return KD_OK;
}

static void print(const char *label, const kd_tensor *t) {
  printf("%s = ", label);
  if (kd_tensor_ndim(t) == 0) {
    kd_scalar s;
    if (kd_tensor_item(t, &s) == KD_OK) printf("%g", kd_scalar_to_double(&s));
  } else {
    putchar('[');
    for (int64_t i = 0; i < kd_tensor_numel(t); i++) {
      kd_scalar s;
      if (kd_tensor_get(t, &i, &s) == KD_OK) printf("%s%g", i ? ", " : "", kd_scalar_to_double(&s));
    }
    putchar(']');
  }
  printf(" (%s)\n", kd_dtype_name(kd_tensor_dtype(t)));
}

static int fail(const char *what) {
  fprintf(stderr, "selective: %s: %s\n", what, kd_last_error());
  return 1;
}

static int run(void) {
  static const double xs[] = {-1.5, 0.5, 2, -3}, ys[] = {2, 4, -1, 0.5}, zs[] = {0, 1, -1, 2},
                      ns[] = {1, 2, 3, 4};
  kd_tensor *x = tensor_of(KD_FLOAT32, xs, 4), *y = tensor_of(KD_FLOAT32, ys, 4),
            *z = tensor_of(KD_FLOAT32, zs, 4), *n = tensor_of(KD_INT64, ns, 4);
  kd_tensor *a = NULL, *b = NULL, *c = NULL, *e = NULL, *s = NULL, *t = NULL;
  int rc = 0;
  if (!x || !y || !z || !n) rc = fail("making the inputs");
  else if (call("add", x, y, &a)) rc = fail("sel::add");
  else if (call("mul", a, y, &b)) rc = fail("sel::mul");
  else if (call("relu", b, NULL, &c)) rc = fail("sel::relu");
  else if (call("exp", z, NULL, &e)) rc = fail("sel::exp");
  else if (call("sum", c, NULL, &s)) rc = fail("sel::sum");
  else if (call("sum", n, NULL, &t)) rc = fail("sel::sum");
  if (rc == 0) {
    print("a = sel::add(x, y)", a);
    print("b = sel::mul(a, y)", b);
    print("c = sel::relu(b)", c);
    print("sel::exp(z)", e);
    print("sel::sum(c)", s);
    print("sel::sum(n)", t);
  }
  kd_tensor *all[] = {x, y, z, n, a, b, c, e, s, t};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) kd_tensor_release(all[i]);
  return rc;
}

/* --probe OP DTYPE: one call, and what became of it. */
static int probe(const char *name, const char *dtype_name) {
  kd_dtype dt;
  kd_op *op;
  char qualified[64];
  snprintf(qualified, sizeof qualified, "sel::%s", name);
  if (kd_dtype_from_name(dtype_name, &dt) || kd_op_find(qualified, "", &op) || !kd_op_schema(op))
    return fail("--probe");
  static const double vs[] = {1, 2, 3, 4};
  kd_tensor *x = tensor_of(dt, vs, 4), *out = NULL;
  if (!x) return fail("--probe");
  bool binary = kd_schema_num_arguments(kd_op_schema(op)) == 2;
  kd_status st = call(name, x, binary ? x : NULL, &out);
  if (st == KD_OK) printf("%s %s: ok\n", qualified, dtype_name);
  else printf("%s %s: %s: %s\n", qualified, dtype_name, kd_status_name(st), kd_last_error());
  kd_tensor_release(out);
  kd_tensor_release(x);
  return st == KD_OK ? 0 : 3;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--probe")) return probe(argv[2], argv[3]);
  if (argc != 1) {
    fprintf(stderr, "usage: %s [--probe OP DTYPE]\n", argv[0]);
    return 2;
  }
  return run();
}
