/*
 * The kd command line: runs KD_BIN_DIR/kd through popen and checks its
 * output (ops, dump, table, version, schema --check, errors and exit
 * statuses). The demo operators built into kd (tools/kd/demo_ops.c) are the
 * subject; the line numbers in dump and table are read from that file.
 */
#include <sys/wait.h>

#include "kd_test.h"

#define DEMO_OPS KD_SOURCE_DIR "/tools/kd/demo_ops.c"
/* kd records source places relative to the tree (-fmacro-prefix-map). */
#define DEMO_OPS_REL "tools/kd/demo_ops.c"

/* Output of one command: stdout (and stderr with 2>&1 in cmd), exit status. */
typedef struct run_result {
  char *out;
  int status; /* exit status; -1 when it did not exit normally */
} run_result;

/* Runs `kd ARGS` (a shell fragment) through sh, with `input` (may be NULL)
 * on stdin (single-quoted for sh, then expanded by printf %b: write "\\n"
 * for a newline). */
static run_result run_kd(const char *args, const char *input) {
  char cmd[4096];
  if (input)
    snprintf(cmd, sizeof cmd, "printf '%%b' '%s' | '%s/kd' %s", input, KD_BIN_DIR, args);
  else
    snprintf(cmd, sizeof cmd, "'%s/kd' %s </dev/null", KD_BIN_DIR, args);
  run_result r;
  r.out = kd_test_run(cmd, &r.status);
  return r;
}

#define ASSERT_CONTAINS(hay, needle)                                                      \
  do {                                                                                    \
    const char *h_ = (hay), *n_ = (needle);                                               \
    if (!strstr(h_, n_)) fail_msg("output does not contain \"%s\":\n%s", n_, h_);         \
  } while (0)

#define ASSERT_NOT_CONTAINS(hay, needle)                                                  \
  do {                                                                                    \
    const char *h_ = (hay), *n_ = (needle);                                               \
    if (strstr(h_, n_)) fail_msg("output contains \"%s\":\n%s", n_, h_);                  \
  } while (0)

/* The 1-based number of the line of demo_ops.c that starts with `prefix`. */
static int demo_line(const char *prefix) {
  FILE *f = fopen(DEMO_OPS, "r");
  if (!f) fail_msg("cannot open %s", DEMO_OPS);
  char line[1024];
  int n = 0, found = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    if (!strncmp(line, prefix, strlen(prefix))) {
      found = n;
      break;
    }
  }
  fclose(f);
  if (!found) fail_msg("no line starting with \"%s\" in %s", prefix, DEMO_OPS);
  return found;
}

static const char SCALE_LINE[] = "demo::scale\tscale(Tensor self, float factor=2.) -> Tensor\n";
static const char DESCRIBE_LINE[] = "demo::describe\tdescribe(Tensor self) -> str\n";

static void test_ops(void **state) {
  (void)state;
  run_result r = run_kd("ops", NULL);
  assert_int_equal(r.status, 0);
  ASSERT_CONTAINS(r.out, SCALE_LINE);
  ASSERT_CONTAINS(r.out, DESCRIBE_LINE);
  /* Name order. */
  assert_true(strstr(r.out, DESCRIBE_LINE) < strstr(r.out, SCALE_LINE));
  /* Every line is NAME TAB SCHEMA. */
  for (const char *l = r.out; *l;) {
    const char *nl = strchr(l, '\n');
    assert_non_null(nl);
    const char *tab = memchr(l, '\t', (size_t)(nl - l));
    if (!tab || !memchr(l, ':', (size_t)(tab - l)))
      fail_msg("bad line in kd ops: \"%.*s\"", (int)(nl - l), l);
    l = nl + 1;
  }
  free(r.out);
}

static void test_ops_filter(void **state) {
  (void)state;
  /* A substring. */
  run_result r = run_kd("ops scale", NULL);
  assert_int_equal(r.status, 0);
  ASSERT_CONTAINS(r.out, SCALE_LINE);
  ASSERT_NOT_CONTAINS(r.out, "demo::describe");
  for (const char *l = r.out; *l;) {
    const char *nl = strchr(l, '\n');
    assert_non_null(nl);
    char name[512];
    size_t n = strcspn(l, "\t\n");
    snprintf(name, sizeof name, "%.*s", (int)n, l);
    if (!strstr(name, "scale")) fail_msg("kd ops scale listed \"%s\"", name);
    l = nl + 1;
  }
  free(r.out);
  /* A shell pattern: exactly the demo namespace, in name order. */
  r = run_kd("ops 'demo::*'", NULL);
  assert_int_equal(r.status, 0);
  char expected[512];
  snprintf(expected, sizeof expected, "%s%s%s%s", DESCRIBE_LINE,
           "demo::eq\teq(Tensor self, Tensor other) -> Tensor\n",
           "demo::neg\tneg(Tensor self) -> Tensor\n", SCALE_LINE);
  KD_ASSERT_STR_EQ(r.out, expected);
  free(r.out);
  r = run_kd("ops 'demo::s*'", NULL);
  KD_ASSERT_STR_EQ(r.out, SCALE_LINE);
  free(r.out);
  /* Nothing matches: no output, success. */
  r = run_kd("ops 'nosuch::*'", NULL);
  assert_int_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out, "");
  free(r.out);
}

static void test_ops_help(void **state) {
  (void)state;
  run_result r = run_kd("ops --help", NULL);
  assert_int_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out,
                   "usage: kd ops [PATTERN] [--json]\n"
                   "  list the registered operators (name, tab, schema);\n"
                   "  PATTERN is a shell pattern or a substring of the qualified name\n"
                   "  --json  a JSON array of {\"op\", \"name\", \"overload\" (when there is one),\n"
                   "          \"schema\" (null when only implemented)}\n");
  free(r.out);
}

static void test_dump(void **state) {
  (void)state;
  run_result r = run_kd("dump demo::scale", NULL);
  assert_int_equal(r.status, 0);
  char expected[2048];
  snprintf(expected, sizeof expected,
           "operator: demo::scale\n"
           "schema: scale(Tensor self, float factor=2.) -> Tensor\n"
           "  def registered at %s:%d\n"
           "  CPU: unboxed kernel registered at %s:%d\n"
           "  Meta: unboxed kernel registered at %s:%d\n",
           DEMO_OPS_REL, demo_line("KD_LIBRARY(demo, m)"), DEMO_OPS_REL,
           demo_line("KD_LIBRARY_IMPL(demo, CPU, m)"), DEMO_OPS_REL,
           demo_line("KD_LIBRARY_IMPL(demo, META, m)"));
  KD_ASSERT_STR_EQ(r.out, expected);
  free(r.out);
}

static void test_table(void **state) {
  (void)state;
  run_result r = run_kd("table demo::scale", NULL);
  assert_int_equal(r.status, 0);
  char expected[4096];
  /* The autograd keys and ADInplaceOrView fall through (the built-in
   * fallthrough); the Quantized, Sparse, SparseCsr and NestedTensor keys have
   * nothing (no composite kernel). */
  static const char fallthrough[] =
      "fallthrough [backend fallback] from kdispatch (built-in autograd fallthrough)\n";
  snprintf(expected, sizeof expected,
           "dispatch table of demo::scale:\n"
           "  CPU: unboxed [kernel] from %s:%d\n"
           "  Meta: unboxed [kernel] from %s:%d\n"
           "  ADInplaceOrView: %s"
           "  AutogradOther: %s"
           "  AutogradCPU: %s"
           "  AutogradCUDA: %s"
           "  AutogradMeta: %s"
           "  AutogradPrivateUse1: %s"
           "  AutogradPrivateUse2: %s"
           "  AutogradPrivateUse3: %s"
           "  AutogradNestedTensor: %s"
           "  Tracer: boxed [backend fallback] from %s:%d\n"
           "  missing: [Undefined, CUDA, PrivateUse1, PrivateUse2, PrivateUse3, QuantizedCPU, "
           "QuantizedCUDA, QuantizedMeta, QuantizedPrivateUse1, QuantizedPrivateUse2, "
           "QuantizedPrivateUse3, SparseCPU, SparseCUDA, SparseMeta, SparsePrivateUse1, "
           "SparsePrivateUse2, SparsePrivateUse3, SparseCsrCPU, SparseCsrCUDA, SparseCsrMeta, "
           "SparseCsrPrivateUse1, SparseCsrPrivateUse2, SparseCsrPrivateUse3, NestedTensorCPU, "
           "NestedTensorCUDA, NestedTensorMeta, NestedTensorPrivateUse1, NestedTensorPrivateUse2, "
           "NestedTensorPrivateUse3, BackendSelect, Profiler, Mode1, Mode2]\n",
           DEMO_OPS_REL, demo_line("KD_LIBRARY_IMPL(demo, CPU, m)"), DEMO_OPS_REL,
           demo_line("KD_LIBRARY_IMPL(demo, META, m)"), fallthrough, fallthrough, fallthrough,
           fallthrough, fallthrough, fallthrough, fallthrough, fallthrough, fallthrough,
           DEMO_OPS_REL, demo_line("KD_LIBRARY_IMPL(_, TRACER, m)"));
  KD_ASSERT_STR_EQ(r.out, expected);
  free(r.out);
  /* The composite operator: CompositeImplicitAutograd fills Undefined, every
   * backend key (NestedTensor's too) and the autograd keys ("math kernel":
   * no backend has a kernel of its own), not ADInplaceOrView; the kernel the
   * demo registers at AutogradCPU wins over it for that slot only. */
  r = run_kd("table demo::describe", NULL);
  assert_int_equal(r.status, 0);
  ASSERT_CONTAINS(r.out, "dispatch table of demo::describe:\n");
  ASSERT_CONTAINS(r.out, "  Undefined: unboxed [math kernel] from ");
  ASSERT_CONTAINS(r.out, "  CPU: unboxed [math kernel] from ");
  ASSERT_CONTAINS(r.out, "  SparseCsrMeta: unboxed [math kernel] from ");
  ASSERT_CONTAINS(r.out, "  NestedTensorCPU: unboxed [math kernel] from ");
  char want[256];
  snprintf(want, sizeof want, "  AutogradCPU: unboxed [kernel] from %s:%d\n", DEMO_OPS_REL,
           demo_line("KD_LIBRARY_IMPL(demo, AUTOGRAD_CPU, m)"));
  ASSERT_CONTAINS(r.out, want);
  snprintf(want, sizeof want, "  AutogradCUDA: unboxed [math kernel] from %s:%d\n", DEMO_OPS_REL,
           demo_line("KD_LIBRARY_IMPL(demo, COMPOSITE_IMPLICIT_AUTOGRAD, m)"));
  ASSERT_CONTAINS(r.out, want);
  ASSERT_CONTAINS(r.out, "  AutogradOther: unboxed [math kernel] from ");
  ASSERT_CONTAINS(r.out, "  ADInplaceOrView: fallthrough [backend fallback] from kdispatch "
                         "(built-in autograd fallthrough)\n");
  ASSERT_CONTAINS(r.out, "  Tracer: boxed [backend fallback] from ");
  ASSERT_CONTAINS(r.out, "  missing: [BackendSelect, Profiler, Mode1, Mode2]\n");
  free(r.out);
  /* a CPU call goes through the AutogradCPU kernel, which runs on below */
  r = run_kd("call demo::describe '[1.5]'", NULL);
  assert_int_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out, "'tensor(float32[1], cpu)'\n");
  free(r.out);
  /* kd dump: the runtime key's registration, then the alias key's, marked */
  r = run_kd("dump demo::describe", NULL);
  assert_int_equal(r.status, 0);
  snprintf(want, sizeof want,
           "  AutogradCPU: unboxed kernel registered at %s:%d\n"
           "  CompositeImplicitAutograd[alias]: unboxed kernel registered at %s:%d\n",
           DEMO_OPS_REL, demo_line("KD_LIBRARY_IMPL(demo, AUTOGRAD_CPU, m)"), DEMO_OPS_REL,
           demo_line("KD_LIBRARY_IMPL(demo, COMPOSITE_IMPLICIT_AUTOGRAD, m)"));
  ASSERT_CONTAINS(r.out, want);
  free(r.out);
}

static void test_not_found(void **state) {
  (void)state;
  run_result r = run_kd("table nosuch::op 2>&1", NULL);
  assert_int_not_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out, "kd table: operator 'nosuch::op' not found\n");
  free(r.out);
  r = run_kd("dump nosuch::op 2>&1", NULL);
  assert_int_not_equal(r.status, 0);
  ASSERT_CONTAINS(r.out, "operator 'nosuch::op' not found");
  free(r.out);
  /* Nothing on stdout. */
  r = run_kd("table nosuch::op 2>/dev/null", NULL);
  assert_int_not_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out, "");
  free(r.out);
  /* A missing operand is a usage error. */
  r = run_kd("table 2>&1", NULL);
  assert_int_equal(r.status, 2);
  ASSERT_CONTAINS(r.out, "usage: kd table OP");
  free(r.out);
}

static void test_version(void **state) {
  (void)state;
  char expected[256];
  snprintf(expected, sizeof expected, "kd %s (headers %s)\n", kd_version_string(),
           KD_VERSION_STRING);
  run_result r = run_kd("version", NULL);
  assert_int_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out, expected);
  free(r.out);
  r = run_kd("--version", NULL);
  assert_int_equal(r.status, 0);
  KD_ASSERT_STR_EQ(r.out, expected);
  free(r.out);
}

static void test_usage_errors(void **state) {
  (void)state;
  run_result r = run_kd("nosuchcommand 2>&1", NULL);
  assert_int_equal(r.status, 2);
  ASSERT_CONTAINS(r.out, "kd: unknown command 'nosuchcommand'\n");
  ASSERT_CONTAINS(r.out, "usage: kd COMMAND [ARGS...]\n");
  free(r.out);
  /* Usage goes to stderr for an error ... */
  r = run_kd("nosuchcommand 2>/dev/null", NULL);
  assert_int_equal(r.status, 2);
  KD_ASSERT_STR_EQ(r.out, "");
  free(r.out);
  /* ... and for no command at all ... */
  r = run_kd("2>/dev/null", NULL);
  assert_int_equal(r.status, 2);
  KD_ASSERT_STR_EQ(r.out, "");
  free(r.out);
  /* ... and to stdout when asked for. */
  r = run_kd("--help", NULL);
  assert_int_equal(r.status, 0);
  ASSERT_CONTAINS(r.out, "usage: kd COMMAND [ARGS...]\n");
  ASSERT_CONTAINS(r.out, "  ops        list the registered operators\n");
  free(r.out);
}

static const char *ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix) ? s + n - m : NULL;
}

static void test_schema_check(void **state) {
  (void)state;
  run_result r = run_kd("schema --check",
                        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\\n"
                        "twice(int x) -> int\\n");
  assert_int_equal(r.status, 0);
  if (!ends_with(r.out, "2 passed, 0 failed\n")) fail_msg("kd schema --check printed:\n%s", r.out);
  free(r.out);
  /* A non-canonical line and a bad one fail, and say so. */
  r = run_kd("schema --check 2>/dev/null", "twice(int x)->int\\nf(int\\ng() -> ()\\n");
  assert_int_equal(r.status, 1);
  if (!ends_with(r.out, "1 passed, 2 failed\n")) fail_msg("kd schema --check printed:\n%s", r.out);
  ASSERT_CONTAINS(r.out, "input:  twice(int x)->int\noutput: twice(int x) -> int\n");
  free(r.out);
}

/* kd kernels: kernel keys in text and JSON. */
static void test_kernels(void **state) {
  (void)state;
  run_result r = run_kd("kernels demo::neg", NULL);
  assert_int_equal(r.status, 0);
  if (!strstr(r.out, "CPU ") || !strstr(r.out, "ALL_LAYOUT [int32, int64, float32, float64]  unboxed  ") ||
      !strstr(r.out, "demo_ops.c:"))
    fail_msg("kd kernels demo::neg printed:\n%s", r.out);
  free(r.out);
  r = run_kd("kernels demo::scale --json", NULL);
  assert_int_equal(r.status, 0);
  if (r.out[0] != '[' || !strstr(r.out, "{\"key\": \"CPU\", \"keyed\": false") ||
      !strstr(r.out, "{\"key\": \"Meta\"") ||
      !strstr(r.out, "\"signature\": \"(Tensor, float) -> Tensor\"") ||
      !strstr(r.out, "\"active\": true, \"custom\": false, \"staged\": false, \"key_arg\": -1}\n]"))
    fail_msg("kd kernels --json printed:\n%s", r.out);
  free(r.out);
  r = run_kd("kernels demo::neg --json", NULL);
  if (!strstr(r.out, "\"keyed\": true, \"layout\": \"ALL_LAYOUT\", \"dtypes\": [\"int32\", \"int64\", "
                     "\"float32\", \"float64\"]"))
    fail_msg("kd kernels demo::neg --json printed:\n%s", r.out);
  free(r.out);
  /* Argument definitions: grouped by dtype in text ("T" the dtype itself),
   * one entry per dtype in JSON. */
  r = run_kd("kernels demo::eq", NULL);
  assert_int_equal(r.status, 0);
  if (!strstr(r.out, "    T in [int32, int64, float32, float64]:\n"
                     "      inputs: self (CPU, ALL_LAYOUT, T), other (CPU, ALL_LAYOUT, T)\n"
                     "      outputs: result0 (CPU, ALL_LAYOUT, bool)\n"))
    fail_msg("kd kernels demo::eq printed:\n%s", r.out);
  free(r.out);
  r = run_kd("kernels demo::eq --json", NULL);
  if (!strstr(r.out, "{\"dtypes\": [\"int64\"], \"inputs\": [{\"name\": \"self\", \"backend\": "
                     "\"CPU\", \"layout\": \"ALL_LAYOUT\", \"dtype\": \"int64\"}, {\"name\": "
                     "\"other\", \"backend\": \"CPU\", \"layout\": \"ALL_LAYOUT\", \"dtype\": "
                     "\"int64\"}], \"outputs\": [{\"name\": \"result0\", \"backend\": \"CPU\", "
                     "\"layout\": \"ALL_LAYOUT\", \"dtype\": \"bool\"}]}"))
    fail_msg("kd kernels demo::eq --json printed:\n%s", r.out);
  free(r.out);
  r = run_kd("kernels nosuch::op 2>&1", NULL);
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.out, "operator 'nosuch::op' not found"));
  free(r.out);
  r = run_kd("kernels 2>&1", NULL);
  assert_int_equal(r.status, 2);
  free(r.out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ops),          cmocka_unit_test(test_ops_filter),
      cmocka_unit_test(test_ops_help),     cmocka_unit_test(test_dump),
      cmocka_unit_test(test_table),        cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_version),      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_schema_check),    cmocka_unit_test(test_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
