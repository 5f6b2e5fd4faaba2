/*
 * The kernel recorder (src/registry/trace.c, KD_TRACE_KERNELS) and
 * `kd trace -o FILE -- PROGRAM ARGS...` (tools/kd/cmd_trace.c).
 *
 * The program traced is this test itself, run again with --child MODE: it
 * registers a namespace `tr` at run time and calls it in known ways (from
 * several threads, on CPU and meta tensors, with and without a key tensor,
 * with a call that fails), so the records and the header it leads to are
 * known exactly.
 */
#include <pthread.h>
#include <unistd.h>

#include "kd_test.h"

#define KD_PATH KD_BIN_DIR "/kd"

static char self_path[4096];

/* ---- The child ----------------------------------------------------------- */

static kd_status k_same(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static kd_status k_twice(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(2 * a[0].i);
  return KD_OK;
}

static kd_library *child_libs[4];

/* tr::neg: CPU kernels for int64, float32, float64 (kernel keys), a Meta
 * one for every dtype; tr::add.Tensor: CPU; tr::twice(int): CatchAll;
 * tr::unused: CPU, never called. */
static int child_register(void) {
  kd_library **l = child_libs;
  kd_kernel same = kd_kernel_unboxed(k_same, "(Tensor) -> Tensor");
  kd_kernel same2 = kd_kernel_unboxed(k_same, "(Tensor, Tensor) -> Tensor");
  kd_kernel twice = kd_kernel_unboxed(k_twice, "(int) -> int");
  kd_dtype_set dts = KD_DTYPE_BIT(KD_INT64) | KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_FLOAT64);
  if (kd_library_open(KD_LIBRARY_DEF, "tr", KD_KEY_UNDEFINED, __FILE__, __LINE__, &l[0]) ||
      kd_library_def(l[0], "neg(Tensor self) -> Tensor", NULL, 0, NULL) ||
      kd_library_def(l[0], "unused(Tensor self) -> Tensor", NULL, 0, NULL) ||
      kd_library_def(l[0], "add.Tensor(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL) ||
      kd_library_def(l[0], "twice(int x) -> int", NULL, 0, NULL) ||
      kd_library_open(KD_LIBRARY_IMPL, "tr", KD_KEY_CPU, __FILE__, __LINE__, &l[1]) ||
      kd_library_impl_keyed(l[1], "neg", KD_ALL_LAYOUT, dts, &same, NULL) ||
      kd_library_impl(l[1], "unused", &same, NULL) ||
      kd_library_impl(l[1], "add.Tensor", &same2, NULL) ||
      kd_library_open(KD_LIBRARY_IMPL, "tr", KD_KEY_META, __FILE__, __LINE__, &l[2]) ||
      kd_library_impl(l[2], "neg", &same, NULL) ||
      kd_library_open(KD_LIBRARY_IMPL, "tr", KD_KEY_CATCH_ALL, __FILE__, __LINE__, &l[3]) ||
      kd_library_impl(l[3], "twice", &twice, NULL)) {
    fprintf(stderr, "child: %s\n", kd_last_error());
    return 1;
  }
  return 0;
}

static void child_close(void) {
  for (int i = 3; i >= 0; i--) kd_library_close(child_libs[i]);
}

static kd_tensor *child_tensor(kd_dtype dt, kd_device_type dev) {
  kd_tensor *t = NULL;
  int64_t n = 2;
  kd_tensor_empty(1, &n, dt, (kd_device){dev, 0}, &t);
  return t;
}

static int call_op(const char *name, const char *overload, kd_tensor *x, kd_tensor *y) {
  kd_op *op;
  if (kd_op_find(name, overload, &op)) return 1;
  kd_arg a[2] = {{.t = x}, {.t = y}};
  kd_value r = kd_value_none();
  kd_status st = kd_call_unboxed(op, a, &r);
  kd_value_destroy(&r);
  return st != KD_OK;
}

static void *child_thread(void *arg) {
  kd_tensor *t = arg;
  for (int i = 0; i < 2000; i++)
    if (call_op("tr::neg", "", t, NULL)) return (void *)1;
  return NULL;
}

/* The calls; 0 on success. */
static int child_calls(void) {
  kd_tensor *i64 = child_tensor(KD_INT64, KD_DEVICE_CPU);
  kd_tensor *f32 = child_tensor(KD_FLOAT32, KD_DEVICE_CPU);
  kd_tensor *i32 = child_tensor(KD_INT32, KD_DEVICE_CPU);
  kd_tensor *meta = child_tensor(KD_FLOAT64, KD_DEVICE_META);
  int bad = 0;
  /* Four threads on two dtypes of tr::neg. */
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    if (pthread_create(&th[i], NULL, child_thread, i % 2 ? i64 : f32)) bad = 1;
  for (int i = 0; i < 4; i++) {
    void *ret = NULL;
    pthread_join(th[i], &ret);
    if (ret) bad = 1;
  }
  bad |= call_op("tr::neg", "", meta, NULL);
  bad |= call_op("tr::add", "Tensor", f32, f32);
  /* A call that fails records nothing: int32 has no kernel. */
  if (!call_op("tr::neg", "", i32, NULL)) bad = 1;
  /* Boxed, with no tensor: the Undefined key, no dtype. */
  kd_op *op;
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_int(4);
  if (kd_op_find("tr::twice", "", &op) || kd_stack_push(&s, &v) || kd_call_boxed(op, &s) ||
      s.items[0].u.i != 8)
    bad = 1;
  kd_stack_free(&s);
  kd_tensor_release(i64);
  kd_tensor_release(f32);
  kd_tensor_release(i32);
  kd_tensor_release(meta);
  return bad;
}

/* MODE: "calls" (exit 0), "fail" (the calls, then exit 3), "none" (no
 * calls), "spawn" (the calls, then the child "float64" as a second process
 * sharing the record file), "float64" (tr::neg on float64 only). */
static int child_main(const char *mode) {
  if (child_register()) return 1;
  int rc = 0;
  if (!strcmp(mode, "calls") || !strcmp(mode, "fail") || !strcmp(mode, "spawn")) {
    rc = child_calls();
    if (!rc && !strcmp(mode, "fail")) rc = 3;
    if (!rc && !strcmp(mode, "spawn")) {
      char cmd[8192];
      snprintf(cmd, sizeof cmd, "'%s' --child float64", self_path);
      rc = system(cmd) != 0;
    }
  } else if (!strcmp(mode, "float64")) {
    kd_tensor *f64 = child_tensor(KD_FLOAT64, KD_DEVICE_CPU);
    rc = call_op("tr::neg", "", f64, NULL);
    kd_tensor_release(f64);
  } else if (strcmp(mode, "none") != 0) {
    rc = 2;
  }
  child_close();
  return rc;
}

/* ---- Helpers ------------------------------------------------------------- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16;
  char *buf = malloc(cap);
  assert_non_null(buf);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void scratch_path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/kd-trace-test-%ld-%s", KD_BIN_DIR, (long)getpid(), name);
  unlink(buf);
}

#define ASSERT_CONTAINS(hay, needle)                                              \
  do {                                                                            \
    const char *h_ = (hay), *n_ = (needle);                                       \
    if (!strstr(h_, n_)) fail_msg("output does not contain \"%s\":\n%s", n_, h_); \
  } while (0)

/* ---- Tests --------------------------------------------------------------- */

/* The recorder's own file: sorted lines, key tokens, dtype names, '*'. */
static void test_recorder_file(void **state) {
  (void)state;
  char path[4096], cmd[12288];
  scratch_path(path, sizeof path, "records");
  snprintf(cmd, sizeof cmd, "KD_TRACE_KERNELS='%s' '%s' --child calls 2>&1", path, self_path);
  int status;
  char *out = kd_test_run(cmd, &status);
  if (status != 0) fail_msg("child failed (%d):\n%s", status, out);
  free(out);
  char *text = read_file(path);
  assert_non_null(text);
  KD_ASSERT_STR_EQ(text,
                   "tr::add.Tensor CPU float32\n"
                   "tr::neg CPU int64,float32\n"
                   "tr::neg META float64\n"
                   "tr::twice UNDEFINED *\n");
  free(text);
  /* A second process appends to the same file. */
  snprintf(cmd, sizeof cmd, "KD_TRACE_KERNELS='%s' '%s' --child float64 2>&1", path, self_path);
  out = kd_test_run(cmd, &status);
  assert_int_equal(status, 0);
  free(out);
  text = read_file(path);
  ASSERT_CONTAINS(text, "tr::twice UNDEFINED *\ntr::neg CPU float64\n");
  free(text);
  unlink(path);
}

/* A file that cannot be written: the program still succeeds, with a warning. */
static void test_recorder_unwritable(void **state) {
  (void)state;
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "KD_TRACE_KERNELS=/nonexistent-kd-dir/records '%s' --child calls 2>&1", self_path);
  int status;
  char *out = kd_test_run(cmd, &status);
  assert_int_equal(status, 0);
  ASSERT_CONTAINS(out, "KD_TRACE_KERNELS: cannot open '/nonexistent-kd-dir/records'");
  free(out);
}

static const char EXPECTED_DEFINES[] =
    "#define KD_SELECTIVE_BUILD 1\n"
    "\n"
    "#define KD_ALLOW_tr__add_Tensor KD_ALLOW_DTYPES(0x00000100u) /* tr::add.Tensor, any key: "
    "[float32] */\n"
    "#define KD_ALLOW_tr__add_Tensor__CPU KD_ALLOW_DTYPES(0x00000100u) /* tr::add.Tensor CPU "
    "[float32] */\n"
    "\n"
    "#define KD_ALLOW_tr__neg KD_ALLOW_DTYPES(0x00000320u) /* tr::neg, any key: [int64, float32, "
    "float64] */\n"
    "#define KD_ALLOW_tr__neg__CPU KD_ALLOW_DTYPES(0x00000120u) /* tr::neg CPU [int64, float32] */\n"
    "#define KD_ALLOW_tr__neg__META KD_ALLOW_DTYPES(0x00000200u) /* tr::neg META [float64] */\n"
    "\n"
    "#define KD_ALLOW_tr__twice KD_ALLOW_DTYPES(0xffffffffu) /* tr::twice, any key: [any dtype] */\n"
    "#define KD_ALLOW_tr__twice__UNDEFINED KD_ALLOW_DTYPES(0xffffffffu) /* tr::twice UNDEFINED "
    "[any dtype] */\n"
    "\n"
    "#endif /* KD_SELECTIVE_ALLOW_LIST_H */\n";

static void test_trace_header(void **state) {
  (void)state;
  char out_path[4096], cmd[12288];
  scratch_path(out_path, sizeof out_path, "allow.h");
  snprintf(cmd, sizeof cmd, "'%s' trace -o '%s' -- '%s' --child calls 2>&1", KD_PATH, out_path,
           self_path);
  int status;
  char *out = kd_test_run(cmd, &status);
  if (status != 0) fail_msg("kd trace failed (%d):\n%s", status, out);
  free(out);
  char *text = read_file(out_path);
  assert_non_null(text);
  char first[8192];
  snprintf(first, sizeof first, "/*\n * Generated by `kd trace` from: %s --child calls\n",
           self_path);
  assert_int_equal(strncmp(text, first, strlen(first)), 0);
  ASSERT_CONTAINS(text, "#ifndef KD_SELECTIVE_ALLOW_LIST_H\n#define KD_SELECTIVE_ALLOW_LIST_H\n\n");
  const char *defs = strstr(text, "#define KD_SELECTIVE_BUILD");
  assert_non_null(defs);
  KD_ASSERT_STR_EQ(defs, EXPECTED_DEFINES);
  /* Deterministic: again, the same bytes. */
  out = kd_test_run(cmd, &status);
  assert_int_equal(status, 0);
  free(out);
  char *again = read_file(out_path);
  KD_ASSERT_STR_EQ(again, text);
  free(again);
  free(text);
  unlink(out_path);
}

/* Records of a process and of the process it starts are merged. */
static void test_trace_merges_processes(void **state) {
  (void)state;
  char out_path[4096], cmd[12288];
  scratch_path(out_path, sizeof out_path, "spawn.h");
  snprintf(cmd, sizeof cmd, "'%s' trace -o '%s' -- '%s' --child spawn 2>&1", KD_PATH, out_path,
           self_path);
  int status;
  char *out = kd_test_run(cmd, &status);
  if (status != 0) fail_msg("kd trace failed (%d):\n%s", status, out);
  free(out);
  char *text = read_file(out_path);
  assert_non_null(text);
  ASSERT_CONTAINS(text, "#define KD_ALLOW_tr__neg__CPU KD_ALLOW_DTYPES(0x00000320u) /* tr::neg "
                        "CPU [int64, float32, float64] */\n");
  free(text);
  unlink(out_path);
}

/* The header is a valid allow-list: the macros read it. */
static void test_header_compiles_to_masks(void **state) {
  (void)state;
#define KD_ALLOW_tr__neg__CPU KD_ALLOW_DTYPES(0x00000120u)
  assert_int_equal(KD__SEL_GET(KD_ALLOW_tr__neg__CPU, 0u), 0x120u);
  assert_int_equal(KD__SEL_GET(KD_ALLOW_tr__nothing__CPU, 0u), 0u);
#undef KD_ALLOW_tr__neg__CPU
  /* Not a selective build here: everything is allowed. */
  assert_true(KD_SHOULD_REGISTER(tr, nothing, CPU));
  assert_true(KD_KERNEL_DTYPE_SELECTED(tr, nothing, CPU, KD_FLOAT32));
}

typedef struct error_case {
  const char *args;   /* after `kd trace` */
  int status;
  const char *message;
} error_case;

static void test_trace_errors(void **state) {
  (void)state;
  char out_path[4096], cmd[16384];
  scratch_path(out_path, sizeof out_path, "never.h");
  char args[5][10240];
  snprintf(args[0], sizeof args[0], "-o '%s'", out_path);
  snprintf(args[1], sizeof args[1], "-- '%s' --child calls", self_path);
  snprintf(args[2], sizeof args[2], "-o '%s' -- '%s' --child fail", out_path, self_path);
  snprintf(args[3], sizeof args[3], "-o '%s' -- '%s' --child none", out_path, self_path);
  snprintf(args[4], sizeof args[4], "-o '%s' -- /nonexistent-kd-program", out_path);
  const error_case cases[] = {
      {args[0], 2, "kd trace: missing the program to run (after --)"},
      {args[1], 2, "kd trace: missing -o FILE"},
      {args[2], 1, "' failed (exit status 3); nothing written"},
      {args[3], 1, "' recorded no kernel calls (does it call operators through kdispatch?); "
                   "nothing written"},
      {args[4], 1, "kd trace: cannot run '/nonexistent-kd-program': No such file or directory"},
      {"-o", 2, "kd trace: -o needs a file name"},
      {"--bogus", 2, "kd trace: unknown option '--bogus'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(cmd, sizeof cmd, "'%s' trace %s 2>&1", KD_PATH, cases[i].args);
    int status;
    char *out = kd_test_run(cmd, &status);
    if (status != cases[i].status || !strstr(out, cases[i].message))
      fail_msg("kd trace %s: exit %d, expected %d with \"%s\":\n%s", cases[i].args, status,
               cases[i].status, cases[i].message, out);
    free(out);
    assert_int_equal(access(out_path, F_OK), -1); /* nothing written */
  }
  /* A failure leaves an existing file as it was. */
  FILE *f = fopen(out_path, "w");
  assert_non_null(f);
  fputs("old\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' trace %s 2>&1", KD_PATH, args[2]);
  int status;
  char *out = kd_test_run(cmd, &status);
  assert_int_equal(status, 1);
  free(out);
  char *text = read_file(out_path);
  KD_ASSERT_STR_EQ(text, "old\n");
  free(text);
  unlink(out_path);
  /* --help and the command list. */
  snprintf(cmd, sizeof cmd, "'%s' trace --help", KD_PATH);
  out = kd_test_run(cmd, &status);
  assert_int_equal(status, 0);
  ASSERT_CONTAINS(out, "usage: kd trace -o FILE -- PROGRAM [ARGS...]");
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' --help", KD_PATH);
  out = kd_test_run(cmd, &status);
  ASSERT_CONTAINS(out, "  trace      run a program, record the kernels it calls");
  free(out);
}

int main(int argc, char **argv) {
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (n <= 0) {
    fprintf(stderr, "cannot read /proc/self/exe\n");
    return 1;
  }
  self_path[n] = '\0';
  if (argc == 3 && !strcmp(argv[1], "--child")) return child_main(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recorder_file),
      cmocka_unit_test(test_recorder_unwritable),
      cmocka_unit_test(test_trace_header),
      cmocka_unit_test(test_trace_merges_processes),
      cmocka_unit_test(test_header_compiles_to_masks),
      cmocka_unit_test(test_trace_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
