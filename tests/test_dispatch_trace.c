/*
 * KD_SHOW_DISPATCH_TRACE: the variable is read once, when the library loads,
 * so the test runs this program again as a child with the variable set and
 * checks what the child printed on stderr. The child (KD_TRACE_CHILD set)
 * defines trace::f(Tensor self) -> Tensor with a CPU kernel and a Tracer
 * kernel that redispatches, turns Tracer on for the thread and calls f once
 * typed and once boxed. The parent is the cmocka test.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "kd_test.h"

/* ---- The child ------------------------------------------------------------------ */

static kd_status k_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static kd_status k_tracer(const kd_call *c, const kd_arg *a, kd_value *r) {
  return kd_redispatch_unboxed(c, a, r);
}

#define CHILD_CHECK(expr)                                                               \
  do {                                                                                  \
    kd_status st_ = (expr);                                                             \
    if (st_ != KD_OK) {                                                                 \
      fprintf(stderr, "child: %s returned %s: %s\n", #expr, kd_status_name(st_),        \
              kd_last_error());                                                         \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

static int child(void) {
  kd_library *def, *cpu, *tracer;
  CHILD_CHECK(kd_library_open(KD_LIBRARY_DEF, "trace", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  CHILD_CHECK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  CHILD_CHECK(kd_library_open(KD_LIBRARY_IMPL, "trace", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_cpu, "(Tensor) -> Tensor");
  CHILD_CHECK(kd_library_impl(cpu, "f", &k, NULL));
  CHILD_CHECK(
      kd_library_open(KD_LIBRARY_IMPL, "trace", KD_KEY_TRACER, __FILE__, __LINE__, &tracer));
  k = kd_kernel_unboxed(k_tracer, "(Tensor) -> Tensor");
  CHILD_CHECK(kd_library_impl(tracer, "f", &k, NULL));

  kd_op *op;
  CHILD_CHECK(kd_op_find("trace::f", "", &op));
  kd_tensor *t;
  CHILD_CHECK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){KD_DEVICE_CPU, 0}, &t));
  kd_tls_keys prev = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));

  kd_arg a[1] = {{.t = t}};
  kd_value r[1] = {kd_value_none()};
  CHILD_CHECK(kd_call_unboxed(op, a, r));
  if (r[0].tag != KD_VALUE_TENSOR || r[0].u.t != t) {
    fprintf(stderr, "child: wrong result\n");
    return 1;
  }
  kd_value_destroy(&r[0]);
  fprintf(stderr, "child: typed done\n");

  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(t);
  CHILD_CHECK(kd_stack_push(&s, &v));
  CHILD_CHECK(kd_call_boxed(op, &s));
  kd_stack_free(&s);
  fprintf(stderr, "child: boxed done\n");

  kd_tls_restore(prev);
  kd_tensor_release(t);
  kd_library_close(tracer);
  kd_library_close(cpu);
  kd_library_close(def);
  return 0;
}

/* ---- The parent ----------------------------------------------------------------- */

static const char *self_path;

/* Runs this program as the child with `env` (assignments or env(1)
 * arguments) before it; returns its stdout and stderr, sets *status. */
static char *run_child(const char *env, int *status) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "env %s KD_TRACE_CHILD=1 '%s' 2>&1", env, self_path);
  return kd_test_run(cmd, status);
}

static void test_trace_on(void **state) {
  (void)state;
  int status;
  char *out = run_child("KD_SHOW_DISPATCH_TRACE=1", &status);
  if (status != 0) fail_msg("child exited with %d:\n%s", status, out);
  /* The call picks Tracer (the include set adds it to the tensor's CPU); the
   * Tracer kernel redispatches below its key, which picks CPU one level
   * deeper (indented by two spaces). The boxed call takes the same route. */
  KD_ASSERT_STR_EQ(out,
                   "[kd dispatch] call trace::f: key Tracer of [CPU, Tracer]\n"
                   "[kd dispatch] redispatch below Tracer\n"
                   "[kd dispatch]   call trace::f: key CPU of [CPU]\n"
                   "child: typed done\n"
                   "[kd dispatch] call boxed trace::f: key Tracer of [CPU, Tracer]\n"
                   "[kd dispatch] redispatch below Tracer\n"
                   "[kd dispatch]   call trace::f: key CPU of [CPU]\n"
                   "child: boxed done\n");
  free(out);
}

static void test_trace_off(void **state) {
  (void)state;
  const char *envs[] = {"-u KD_SHOW_DISPATCH_TRACE", "KD_SHOW_DISPATCH_TRACE=0",
                        "KD_SHOW_DISPATCH_TRACE="};
  for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
    int status;
    char *out = run_child(envs[i], &status);
    if (status != 0) fail_msg("child (%s) exited with %d:\n%s", envs[i], status, out);
    KD_ASSERT_STR_EQ(out, "child: typed done\nchild: boxed done\n");
    free(out);
  }
}

int main(int argc, char **argv) {
  (void)argc;
  if (getenv("KD_TRACE_CHILD")) return child();
  /* Run again by path: argv[0] when it names one, else the running image. */
  self_path = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_on),
      cmocka_unit_test(test_trace_off),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
