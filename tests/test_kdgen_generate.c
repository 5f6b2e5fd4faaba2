/*
 * kdgen --out: in-tree generation (tools/kdgen/gen.c) for every runtime
 * key (backends, their other functionalities, Autograd, alias keys), the
 * notes for keys kdispatch has no runtime key for,
 * Tensor[] returns and --namespace. Runs KD_BIN_DIR/kdgen on the fixtures of
 * tests/kdgen/gen/ into a temporary folder and reads what it wrote; the
 * exact "FILE:LINE: note: ..." and "FILE:LINE: error: ..." lines are
 * checked. That the generated C compiles is proven by the build: the
 * Tensor[] fixture's files are an object library of tests/CMakeLists.txt,
 * pu1.yaml is linked and run by tests/ops/kdgen_pu1/, keys_runtime.yaml (a
 * kernel per kind of runtime key, checked in the computed tables) by
 * tests/ops/kdgen_keys/. Skipped when kdgen was
 * not built (-DKD_BUILD_OPS=OFF).
 */
#include <ctype.h>

#include "kdgen_test.h"

static char tmp[256]; /* the output folder of the current test */

static int setup(void **state) {
  (void)state;
  if (access(KDGEN, X_OK) != 0) return 0;
  snprintf(tmp, sizeof tmp, "/tmp/kdgen_generate_XXXXXX");
  if (!mkdtemp(tmp)) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  return system(cmd) == 0 ? 0 : -1;
}

/* Runs `kdgen ARGS` in the source folder; stdout and stderr together. */
static char *run_kdgen(const char *args, int *status) {
  run_result r = kdgt_run(args, true);
  *status = r.status;
  return r.out;
}

/* The bytes of tmp/REL, NUL-terminated (the test fails when it is absent). */
static char *slurp(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", tmp, rel);
  return kd_test_read_file(path);
}

#define ASSERT_FILE_CONTAINS(rel, needle) \
  do {                                    \
    char *s_ = slurp(rel);                \
    ASSERT_CONTAINS(s_, needle);          \
    free(s_);                             \
  } while (0)

/* ---- Names ---------------------------------------------------------------- */

/* Fails when text holds "kd__" or a kd_/kdk_ identifier with a doubled
 * underscore: nothing generated takes libkdispatch's internal tier, and the
 * mangling doubles no underscore (docs/CODEGEN.md, "Names"). */
static void assert_no_doubled(const char *rel, const char *text) {
  for (const char *p = text; *p; p++) {
    bool start = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    if (!start || (strncmp(p, "kd_", 3) && strncmp(p, "kdk_", 4))) continue;
    const char *e = p;
    while (isalnum((unsigned char)*e) || *e == '_') e++;
    for (const char *q = p; q + 1 < e; q++)
      if (q[0] == '_' && q[1] == '_' && strncmp(p, "kdk__", 5))
        fail_msg("%s: '%.*s' has a doubled underscore", rel, (int)(e - p), p);
    p = e - 1;
  }
}

static void test_mangling(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  char args[1024];
  snprintf(args, sizeof args, "--out '%s' tests/kdgen/gen/mangle.yaml", tmp);
  kdgt_run_ok(args);
  static const struct {
    const char *file, *want;
  } names[] = {
      /* private: the leading '_' becomes internal_ */
      {"include/kd/ops/_softmax.h",
       "KDK_API kd_status kd_internal_softmax(kd_tensor *self, int64_t dim, bool half_to_float, "
       "kd_tensor **out);"},
      {"include/kd/ops/_softmax.h", "KDK_API kd_status kd_redispatch_internal_softmax(kd_keyset keys, "},
      {"include/kd/ops/_softmax_dispatch.h", "KDK_API kd_status kd_cpu_internal_softmax("},
      {"include/kd/ops/_to_copy.h", "KDK_API kd_status kd_internal_to_copy_out(kd_tensor *self, "
                                    "kd_tensor *out);"},
      /* in place: the '_' ends the stem */
      {"include/kd/ops/add.h", "KDK_API kd_status kd_add_Tensor_(kd_tensor *self, kd_tensor *other, "
                               "const kd_scalar *alpha);"},
      {"include/kd/ops/add.h", "KDK_API kd_status kd_redispatch_add_Tensor_(kd_keyset keys, "},
      {"include/kd/ops/add_dispatch.h", "KDK_API kd_status kd_cpu_add_Tensor_("},
      {"include/kd/ops/add.h", "KDK_API kd_status kd_add_Scalar_out("},
      {"include/kd/ops/_foo.h", "KDK_API kd_status kd_internal_foo_(kd_tensor *self);"},
      {"include/kdk/native/_foo.h", "KDK_API kd_status kdk_native_internal_foo_(kd_tensor *self);"},
      /* dunders */
      {"include/kd/ops/__and__.h", "KDK_API kd_status kd_dunder_and_Tensor(kd_tensor *self, "},
      {"include/kd/ops/__and__.h", "KDK_API kd_status kd_dunder_iand_Tensor(kd_tensor *self, "},
      {"include/kd/ops/__and__.h", "KDK_API kd_status kd_redispatch_dunder_iand_Tensor("},
      /* a type name of the core API: _op on the entry point only */
      {"include/kd/ops/stack.h", "KDK_API kd_status kd_stack_op(kd_tensors tensors, "},
      {"include/kd/ops/stack.h", "KDK_API kd_status kd_redispatch_stack(kd_keyset keys, "},
      {"include/kd/ops/stack_dispatch.h", "KDK_API kd_status kd_cpu_stack("},
      /* libkdops-private names and the generated locals */
      {"ops/gen_register.c", "kd_status kdk__s_CPU_add_Tensor_(kd_tensor *self, "},
      {"ops/gen_register.c", "kdk_meta_add_Tensor(&kdg_s, &kdg_it, self, other, alpha)"},
      {"ops/gen_boxed.c", "kd_status kdk__boxed_internal_softmax(const kd_call *call, "},
      {"ops/gen_entry.c", "kd_status kd_add_Tensor_(kd_tensor *self, kd_tensor *other, "
                          "const kd_scalar *alpha) {\n"
                          "  return kdg_call_add_Tensor_(\"kd_add_Tensor_\", NULL, self, other, alpha);\n}"},
      {"ops/gen_entry.c", "  return kdg_call_add_Tensor_(\"kd_redispatch_add_Tensor_\", &keys, self, other, "
                          "alpha);\n}"},
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) ASSERT_FILE_CONTAINS(names[i].file, names[i].want);
  /* the packing is written once per function: one kd_call_unboxed */
  char *e = slurp("ops/gen_entry.c");
  assert_int_equal(kdgt_count(e, "kd_call_unboxed("), 10);
  assert_int_equal(kdgt_count(e, "kd_call_unboxed_keys("), 10);
  free(e);
  static const char *const files[] = {
      "ops/gen_entry.c", "ops/gen_register.c", "ops/gen_boxed.c", "ops/gen_direct.c",
      "ops/add_native.h", "ops/_softmax_native.h", "include/kd/ops/add.h",
      "include/kd/ops/add_dispatch.h", "include/kd/ops/__and__.h", "include/kdk/native/add.h"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *s = slurp(files[i]);
    if (strstr(s, "kd__")) fail_msg("%s names kd__:\n%s", files[i], strstr(s, "kd__"));
    assert_no_doubled(files[i], s);
    free(s);
  }
}

/* ---- Keys ----------------------------------------------------------------- */

static void test_every_runtime_key(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  char args[1024];
  int status;
  snprintf(args, sizeof args, "--out '%s' tests/kdgen/gen/keys.yaml", tmp);
  char *out = run_kdgen(args, &status);
  assert_int_equal(status, 0);
  /* Structured impls for CPU, CUDA and PrivateUse1 (and the Meta one of
   * every structured group) for each function of the group. */
  static const char *const keys[] = {"CPU", "CUDA", "PrivateUse1", "Meta"};
  static const char *const fns[] = {"twice", "twice_", "twice.out"};
  for (int f = 0; f < 3; f++)
    for (int k = 0; k < 4; k++) {
      char want[128];
      snprintf(want, sizeof want, "    {\"%s\", \"%s\", kdg_u_%s_", fns[f], keys[k], keys[k]);
      ASSERT_FILE_CONTAINS("ops/gen_register.c", want);
    }
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "kd_status kdk__s_PrivateUse1_twice_out(kd_tensor *self, kd_tensor *out) {");
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "kdk_native_twice_out_pu1(&kdg_s, &kdg_it, self, kdk_structured_output(&kdg_s, 0));");
  ASSERT_FILE_CONTAINS("include/kdk/native/twice.h", "KDK_API kd_status kdk_native_twice_out_cuda(kdk_structured *s, kdk_iter *iter, kd_tensor *self, kd_tensor *out);");
  /* unstructured kernels of PrivateUse2 and 3 */
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "    {\"negate\", \"PrivateUse2\", kdg_u_PrivateUse2_negate,");
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "    {\"negate\", \"PrivateUse3\", kdg_u_PrivateUse3_negate,");
  ASSERT_FILE_CONTAINS("include/kdk/native/negate.h", "KDK_API kd_status kdk_native_negate_pu3(kd_tensor *self, kd_tensor **out);");
  /* direct calls per backend the file names */
  char *h = slurp("include/kd/ops/twice_dispatch.h");
  ASSERT_CONTAINS(h, "KDK_API kd_status kd_cuda_twice(kd_tensor *self, kd_tensor **out);");
  ASSERT_CONTAINS(h, "KDK_API kd_status kd_privateuse1_twice_out(kd_tensor *self, kd_tensor *out);");
  ASSERT_CONTAINS(h, "KDK_API kd_status kd_meta_twice_(kd_tensor *self);");
  assert_null(strstr(h, "kd_privateuse2_twice")); /* no kernel, no composite */
  free(h);
  ASSERT_FILE_CONTAINS("ops/gen_direct.c", "kd_status kd_privateuse2_negate(kd_tensor *self, kd_tensor **out) {");
  ASSERT_FILE_CONTAINS("ops/gen_direct.c", "  return kdk_native_negate_pu3(self, out);");
  /* every other key of the runtime is registered as written: the
   * functionalities of the backends, Autograd<B>, and the alias keys
   * (CompositeExplicitAutogradNonFunctional is not folded into
   * CompositeExplicitAutograd) */
  static const char *const rows[] = {
      "    {\"twice\", \"SparseCPU\", kdg_u_SparseCPU_twice, kdg_b_SparseCPU_twice, \"(Tensor) -> Tensor\", \"gen/keys.yaml:9\"},\n",
      "    {\"twice\", \"SparseCUDA\", kdg_u_SparseCUDA_twice, ",
      "    {\"twice.out\", \"QuantizedCPU\", kdg_u_QuantizedCPU_twice_out, kdg_b_QuantizedCPU_twice_out, \"(Tensor, Tensor(a!)) -> Tensor(a!)\", \"gen/keys.yaml:22\"},\n",
      "    {\"negate\", \"NestedTensorCPU\", kdg_u_NestedTensorCPU_negate, ",
      "    {\"negate\", \"SparseCsrCPU\", kdg_u_SparseCsrCPU_negate, ",
      "    {\"pieces\", \"CompositeImplicitAutogradNestedTensor\", kdg_u_CompositeImplicitAutogradNestedTensor_pieces, ",
      "    {\"keyed\", \"AutogradCPU\", kdg_u_AutogradCPU_keyed, kdg_b_AutogradCPU_keyed, \"(Tensor) -> Tensor\", \"gen/keys.yaml:49\"},\n",
      "    {\"keyed\", \"AutogradPrivateUse1\", kdg_u_AutogradPrivateUse1_keyed, ",
      "    {\"keyed\", \"Autograd\", kdg_u_Autograd_keyed, kdg_b_Autograd_keyed, \"(Tensor) -> Tensor\", \"gen/keys.yaml:51\"},\n",
  };
  char *r = slurp("ops/gen_register.c");
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) ASSERT_CONTAINS(r, rows[i]);
  /* an out= variant's other keys are unstructured kernels with its parameters */
  ASSERT_FILE_CONTAINS("include/kdk/native/twice.h",
                       "KDK_API kd_status kdk_native_twice_out_quantized(kd_tensor *self, kd_tensor *out);");
  ASSERT_FILE_CONTAINS("include/kdk/native/keyed.h",
                       "KDK_API kd_status kdk_native_keyed_autograd(kd_tensor *self, kd_tensor **out);");
  /* keys the runtime lacks: one note each, with the line of the key and why */
  static const char *const notes[] = {
      "tests/kdgen/gen/keys.yaml:21: note: 'twice.out': not generated: MPS has no MPS device type in kdispatch (kernel 'twice_out_mps')\n",
      "tests/kdgen/gen/keys.yaml:29: note: 'negate': not generated: MkldnnCPU has no MKL-DNN layout in kdispatch (kernel 'negate_mkldnn')\n",
      "tests/kdgen/gen/keys.yaml:31: note: 'negate': not generated: ZeroTensor has no ZeroTensor key in kdispatch (kernel 'negate_zero')\n",
      "tests/kdgen/gen/keys.yaml:42: note: 'q_scheme': not generated: kdgen cannot return a 'QScheme'\n",
      "tests/kdgen/gen/keys.yaml:46: note: 'keyed': not generated: SparseXPU has no XPU device type in kdispatch (kernel 'keyed_sparse_xpu')\n",
      "tests/kdgen/gen/keys.yaml:47: note: 'keyed': not generated: AutogradHIP has no HIP device type in kdispatch (kernel 'keyed_autograd_hip')\n",
      "tests/kdgen/gen/keys.yaml:48: note: 'keyed': not generated: FPGA has no dispatch key of that name in kdispatch (kernel 'keyed_fpga')\n",
      "kdgen: 7 notes: entries not generated (not an error)\n",
  };
  for (size_t i = 0; i < sizeof notes / sizeof *notes; i++) ASSERT_CONTAINS(out, notes[i]);
  assert_null(strstr(out, "error:"));
  assert_int_equal(kdgt_count(out, "\n"), sizeof notes / sizeof *notes);
  /* none of those kernels appears in the output */
  assert_null(strstr(r, "XPU"));
  assert_null(strstr(r, "HIP"));
  assert_null(strstr(r, "FPGA"));
  assert_null(strstr(r, "twice_out_mps"));
  assert_null(strstr(r, "q_scheme"));
  free(r);
  free(out);
}

/* Errors stay errors, with generation too: exit status 1, nothing written. */
static void test_errors_are_not_notes(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  char args[1024];
  int status;
  snprintf(args, sizeof args, "--out '%s' tests/kdgen/unknown_dispatch_key.yaml", tmp);
  char *out = run_kdgen(args, &status);
  assert_int_equal(status, 1);
  ASSERT_CONTAINS(out, "tests/kdgen/unknown_dispatch_key.yaml:4: error: unknown dispatch key 'TPU' in 'dispatch' of 'relu'");
  ASSERT_CONTAINS(out, "kdgen: 1 error\n");
  assert_null(strstr(out, "note:"));
  free(out);
  char path[512];
  snprintf(path, sizeof path, "%s/ops/gen_register.c", tmp);
  assert_int_not_equal(access(path, F_OK), 0);
}

/* ---- Namespace -------------------------------------------------------------- */

static void test_namespace(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  char args[1024];
  int status;
  snprintf(args, sizeof args, "--namespace myns --out '%s' tests/kdgen/gen/keys.yaml", tmp);
  char *out = run_kdgen(args, &status);
  assert_int_equal(status, 0);
  free(out);
  static const char *const files[] = {"ops/gen_entry.c", "ops/gen_register.c", "ops/gen_boxed.c",
                                      "ops/gen_direct.c", "ops/twice_native.h",
                                      "include/kd/ops/twice.h", "include/kd/ops/twice_dispatch.h"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *s = slurp(files[i]);
    if (strstr(s, "aten")) fail_msg("%s names aten:\n%s", files[i], strstr(s, "aten"));
    free(s);
  }
  ASSERT_FILE_CONTAINS("ops/gen_entry.c", "kdk__ops_lookup(\"myns::twice.out\", \"(Tensor, Tensor(a!)) -> Tensor(a!)\"");
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "kdk_structured_init(&kdg_s, \"myns::twice\", ");
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "kd_status kdk__myns_register(kd_library **lib) {\n"
                                             "  return kdk__ops_register_lib(\"myns\", \"gen/keys.yaml\", ");
  ASSERT_FILE_CONTAINS("include/kd/ops/twice.h", "/* myns::twice(Tensor self) -> Tensor */");
  /* the default is aten, with libkdops' registration function */
  snprintf(args, sizeof args, "--out '%s' tests/kdgen/gen/keys.yaml", tmp);
  free(run_kdgen(args, &status));
  assert_int_equal(status, 0);
  ASSERT_FILE_CONTAINS("ops/gen_entry.c", "kdk__ops_lookup(\"aten::twice.out\", ");
  ASSERT_FILE_CONTAINS("ops/gen_register.c", "kd_status kdk__ops_register(void) {\n"
                                             "  return kdk__ops_register_tables(\"aten\", \"gen/keys.yaml\", ");
  /* a namespace must be an identifier */
  out = run_kdgen("--namespace 'my-ns' --out /nonexistent tests/kdgen/gen/keys.yaml", &status);
  assert_int_equal(status, 2);
  ASSERT_CONTAINS(out, "kdgen: --namespace 'my-ns' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)\n");
  free(out);
}

/* ---- Tensor[] returns ------------------------------------------------------------ */

/* PyTorch 2.6's 121 operators that return a list of tensors (115 a single
 * Tensor[] or Tensor(a)[], 6 a tuple holding one) all generate: an entry
 * point with a kd_tensor_list output each. */
static void test_tensor_list_returns(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  char args[1024];
  int status;
  snprintf(args, sizeof args, "--out '%s' tests/kdgen/gen/tensor_lists_2_6.yaml", tmp);
  char *out = run_kdgen(args, &status);
  assert_int_equal(status, 0);
  assert_null(strstr(out, "cannot return"));
  assert_null(strstr(out, "error:"));
  free(out);
  char *e = slurp("ops/gen_entry.c");
  size_t lists = 0;
  for (const char *p = strstr(e, "\nkd_status kd_"); p; p = strstr(p + 1, "\nkd_status kd_")) {
    const char *eol = strchr(p + 1, '\n');
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)(eol - p - 1), p + 1);
    if (strncmp(line, "kd_status kd_redispatch_", 24) && strstr(line, "kd_tensor_list *")) lists++;
  }
  assert_int_equal(lists, 121);
  ASSERT_CONTAINS(e, "kdg_call_unbind_int(const char *kdg_fn, const kd_keyset *kdg_keys, kd_tensor *self, "
                     "int64_t dim, kd_tensor_list *out) {\n"
                     "  if (!out) return kd_set_error(KD_EINVAL, \"%s: NULL output 'out'\", kdg_fn);\n"
                     "  *out = (kd_tensor_list){NULL, 0};\n");
  ASSERT_CONTAINS(e, "kd_status kd_unbind_int(kd_tensor *self, int64_t dim, kd_tensor_list *out) {\n"
                     "  return kdg_call_unbind_int(\"kd_unbind_int\", NULL, self, dim, out);\n}\n");
  ASSERT_CONTAINS(e, "kdk__ret_tensor_list(&kdg_r[0], out, \"aten::unbind.int\")");
  /* a tuple with a list: histogramdd's (Tensor hist, Tensor[] bin_edges) */
  ASSERT_CONTAINS(e, "kd_status kd_histogramdd(kd_tensor *self, kd_ints bins, kd_floats range, kd_tensor *weight, "
                     "bool density, kd_tensor **hist, kd_tensor_list *bin_edges) {");
  free(e);
  ASSERT_FILE_CONTAINS("ops/gen_register.c",
                       "  if ((kdg_st = kdk__value_take_tensor_list(&kdg_o1, &r[1], \"aten::histogramdd\"))) {\n"
                       "    kd_tensor_release(kdg_o0);\n    return kdg_st;\n  }\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_mangling, setup, teardown),
      cmocka_unit_test_setup_teardown(test_every_runtime_key, setup, teardown),
      cmocka_unit_test_setup_teardown(test_errors_are_not_notes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_namespace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tensor_list_returns, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
