/*
 * kdgen --backend: an out-of-tree backend's YAML file resolved against its
 * upstream native_functions.yaml and classified (tools/kdgen/backend.c,
 * docs/CODEGEN.md "Backend YAML"). Runs KD_BIN_DIR/kdgen through popen on the
 * fixtures of tests/kdgen/backend/ (upstream.yaml, valid.yaml using every
 * strategy and kind, and one file per error, whose exact "FILE:LINE: error:"
 * line is checked), and on torch_musa's musa_functions.yaml against the
 * torch_musa-patched PyTorch 2.6 file (shared test data, BSD-3-Clause, see
 * ../shared/data/README.md; the patched copy is made in the build tree by the
 * CTest fixture kdgen_musa_upstream). Skipped when kdgen was not built.
 */
#include "kdgen_test.h"

#define FIX "tests/kdgen/backend/"
#define SOURCE_ARGS "--source " FIX "upstream.yaml --tags ops/tags.yaml"

/* ---- Every strategy and kind -------------------------------------------- */

static void test_valid_classify(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--backend " FIX "valid.yaml " SOURCE_ARGS " --classify", false);
  KD_ASSERT_STR_EQ(r.out,
                   "abs Legacy structured\n"
                   "abs_ Legacy structured\n"
                   "abs.out Legacy structured\n"
                   "sum.dim_IntList LegacyMeta structured\n"
                   "sum.IntList_out LegacyMeta structured\n"
                   "pow.Tensor_Scalar Customized structured\n"
                   "pow.Tensor_Scalar_out Customized structured\n"
                   "add.Tensor Customized unstructured\n"
                   "add.out Customized unstructured\n"
                   "view_as_real Legacy unstructured\n"
                   "cumsum Customized unstructured\n"
                   "relu none unstructured\n"
                   "relu.out Customized unstructured\n"
                   "_fill_stats_functional Customized unstructured\n"
                   "fake_fill Customized unstructured\n"
                   "Legacy: 4 (3 structured, 1 unstructured)\n"
                   "LegacyMeta: 2 (2 structured, 0 unstructured)\n"
                   "Customized: 8 (2 structured, 6 unstructured)\n"
                   "none: 1 (0 structured, 1 unstructured)\n"
                   "total: 15\n");
  assert_int_equal(r.status, 0);
  free(r.out);

  r = kdgt_run("--backend " FIX "valid.yaml " SOURCE_ARGS " --validate", true);
  KD_ASSERT_STR_EQ(r.out, FIX "valid.yaml: 15 entries against " FIX "upstream.yaml, no errors\n");
  assert_int_equal(r.status, 0);
  free(r.out);
}

/* ---- One fixture per error ---------------------------------------------- */

typedef struct bad_case {
  const char *file; /* under tests/kdgen/backend/ */
  const char *line; /* the one error expected, after "tests/kdgen/backend/" */
} bad_case;

#define UP FIX "upstream.yaml"

static const bad_case bad_cases[] = {
    /* resolving names */
    {"unknown_name.yaml",
     "unknown_name.yaml:2: error: 'absolute.out' is not an operator of " UP
     "; a new operator needs its full schema in 'func'"},
    {"bad_func.yaml",
     "bad_func.yaml:1: error: 'func' must be an operator name (name or name.overload) or a full "
     "schema, found 'abs out'"},
    {"schema_differs.yaml",
     "schema_differs.yaml:1: error: the schema of 'abs' differs from upstream's (" UP
     ":4): the backend has 'abs(Tensor self, int n) -> Tensor', upstream has 'abs(Tensor self) "
     "-> Tensor'; write the bare name 'abs' or upstream's schema"},
    {"listed_twice.yaml", "listed_twice.yaml:3: error: 'abs.out' is listed twice (first at line 1)"},
    {"autogen_schema_differs.yaml",
     "autogen_schema_differs.yaml:1: error: the schema of 'relu.out' differs from the one "
     "upstream generates from 'relu' (" UP
     ":64): the backend has 'relu.out(Tensor self, *, Tensor(b!) out) -> Tensor(b!)', upstream "
     "generates 'relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)'"},
    /* keys */
    {"unknown_key.yaml", "unknown_key.yaml:2: error: unknown key 'foo' in the entry for 'abs'"},
    {"upstream_key.yaml",
     "upstream_key.yaml:2: error: 'variants' of 'cumsum' cannot be set by a backend: it comes "
     "from upstream (" UP
     ":57); a backend entry may write dispatch, structured, structured_inherits, precomputed, "
     "device_check and device_guard"},
    {"tags_differ.yaml",
     "tags_differ.yaml:2: error: tags of 'relu' (nondeterministic_seeded) differ from upstream's "
     "at " UP ":64 (view_copy, generated); a backend cannot change an upstream operator's tags"},
    {"autogen_differs.yaml",
     "autogen_differs.yaml:2: error: autogen of 'relu_' (relu.out) differs from upstream's at " UP
     ":72 (none); a backend cannot generate operators from an upstream one"},
    {"new_structured.yaml",
     "new_structured.yaml:2: error: 'structured' of 'fake_op.out' is not supported on a new "
     "operator (its kernels are the backend's own, unstructured)"},
    {"autogen_bare_meta.yaml",
     "autogen_bare_meta.yaml:2: error: 'structured_inherits' of 'relu.out' is not supported on an "
     "operator upstream generates (its kernels are the backend's own, unstructured)"},
    {"autogen_unknown_tag.yaml",
     "autogen_unknown_tag.yaml:2: error: unknown tag 'shiny' in 'relu.out' (the tags file does not "
     "define it)"},
    {"new_bad_variants.yaml",
     "new_bad_variants.yaml:2: error: bad variant 'methods' in 'variants' of 'fake_fill' "
     "(expected function, method)"},
    {"bad_device_check.yaml",
     "bad_device_check.yaml:2: error: device_check of 'cumsum' must be NoCheck or ExactSame, "
     "found 'Sometimes'"},
    /* dispatch */
    {"unknown_key_name.yaml",
     "unknown_key_name.yaml:3: error: unknown dispatch key 'TPU' in 'dispatch' of 'cumsum'"},
    {"other_backend_key.yaml",
     "other_backend_key.yaml:4: error: dispatch key 'CPU' in 'cumsum' is not one of this "
     "backend's keys (PrivateUse1, or SparsePrivateUse1, SparseCsrPrivateUse1, "
     "QuantizedPrivateUse1, NestedTensorPrivateUse1, AutogradPrivateUse1)"},
    {"key_twice.yaml", "key_twice.yaml:4: error: dispatch key 'PrivateUse1' is given twice in 'cumsum'"},
    {"empty_dispatch.yaml", "empty_dispatch.yaml:2: error: 'dispatch' of 'cumsum' names no kernel"},
    /* classification */
    {"no_kernel.yaml",
     "no_kernel.yaml:1: error: 'cumsum' names no kernel: upstream's 'cumsum' (" UP
     ":57) is not structured, so there is nothing to reuse without a PrivateUse1 kernel; add "
     "'dispatch: PrivateUse1: NAME'"},
    {"new_no_kernel.yaml",
     "new_no_kernel.yaml:1: error: the new operator 'fake_fill' names no kernel; add 'dispatch: "
     "PrivateUse1: NAME'"},
    {"structured_true_unstructured.yaml",
     "structured_true_unstructured.yaml:2: error: 'cumsum' says structured: True, but upstream "
     "does not structure it (" UP
     ":57); only an out= variant upstream marks structured can run structured"},
    {"structured_true_kernel.yaml",
     "structured_true_kernel.yaml:2: error: 'relu' says structured: True, but upstream does not "
     "structure it (" UP ":64); only an out= variant upstream marks structured can run structured"},
    {"structured_false_no_kernel.yaml",
     "structured_false_no_kernel.yaml:2: error: 'abs.out' says structured: False but names no "
     "PrivateUse1 kernel; an unstructured backend kernel is the backend's own function: name it "
     "in 'dispatch'"},
    {"structured_false_meta.yaml",
     "structured_false_meta.yaml:3: error: structured_inherits of 'pow.Tensor_Scalar_out' "
     "customizes a structured meta, but the entry says structured: False"},
    {"meta_no_kernel.yaml",
     "meta_no_kernel.yaml:2: error: 'pow.Tensor_Scalar_out' customizes its meta (precomputed) "
     "but names no PrivateUse1 kernel for its impl; add 'dispatch: PrivateUse1: NAME'"},
    {"inherits_unstructured.yaml",
     "inherits_unstructured.yaml:2: error: structured_inherits of 'view_as_real' needs an "
     "upstream structured out= variant; upstream's 'view_as_real' (" UP ":52) is not structured"},
    {"ufunc_no_kernel.yaml",
     "ufunc_no_kernel.yaml:1: error: 'add.out' has ufunc_inner_loop upstream (" UP
     ":25), so upstream has no impl kernel for the backend to reuse; name its PrivateUse1 kernel "
     "in 'dispatch'"},
    {"delegate_unstructured_group.yaml",
     "delegate_unstructured_group.yaml:1: error: 'add.Tensor' names no PrivateUse1 kernel, so it "
     "follows its structured group, but the group's 'add.out' (line 2) runs unstructured here; "
     "give 'add.Tensor' its own kernel"},
    {"legacy_device_check.yaml",
     "legacy_device_check.yaml:2: error: 'view_as_real' binds upstream's kernel 'view_as_real' "
     "(Legacy), which checks devices as upstream says (device_check: ExactSame at " UP
     ":52); remove device_check: NoCheck"},
    {"legacy_device_guard.yaml",
     "legacy_device_guard.yaml:2: error: 'view_as_real' binds upstream's kernel 'view_as_real' "
     "(Legacy), which guards devices as upstream says (device_guard: True at " UP
     ":52); remove device_guard: False"},
};

static void test_bad_fixtures(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
    const bad_case *c = &bad_cases[i];
    char args[1024], want[2048];
    snprintf(args, sizeof args, "--backend " FIX "%s " SOURCE_ARGS " --validate", c->file);
    run_result r = kdgt_run(args, true);
    snprintf(want, sizeof want, FIX "%s\n", c->line);
    if (!strstr(r.out, want)) fail_msg("%s: expected the line\n  %s\ngot:\n%s", c->file, want, r.out);
    if (!strstr(r.out, "kdgen: 1 error\n"))
      fail_msg("%s: expected exactly one error, got:\n%s", c->file, r.out);
    if (r.status != 1) fail_msg("%s: exit status %d, expected 1", c->file, r.status);
    free(r.out);
  }
}

static void test_options(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  /* the backend's key must be a runtime backend key */
  run_result r = kdgt_run("--backend " FIX "valid.yaml " SOURCE_ARGS " --key CPU --classify", true);
  KD_ASSERT_STR_EQ(r.out, FIX "valid.yaml: error: the backend's key 'CPU' is not a backend key "
                          "of the runtime (CUDA or PrivateUse1..3)\nkdgen: 1 error\n");
  assert_int_equal(r.status, 1);
  free(r.out);
  /* another key: the file's PrivateUse1 entries are not this backend's */
  r = kdgt_run("--backend " FIX "valid.yaml " SOURCE_ARGS " --key PrivateUse2 --classify", true);
  ASSERT_CONTAINS(r.out, FIX "valid.yaml:13: error: dispatch key 'PrivateUse1' in "
                         "'sum.IntList_out' is not one of this backend's keys (PrivateUse2, ");
  assert_int_equal(r.status, 1);
  free(r.out);
  /* --backend without --source, or with a file argument */
  r = kdgt_run("--backend " FIX "valid.yaml --classify", true);
  ASSERT_CONTAINS(r.out, "usage: kdgen");
  assert_int_equal(r.status, 2);
  free(r.out);
  /* the upstream file's own errors stop before the backend is read */
  r = kdgt_run("--backend " FIX "valid.yaml --source tests/kdgen/duplicate.yaml --classify", true);
  ASSERT_CONTAINS(r.out, "tests/kdgen/duplicate.yaml:3: error: 'relu' is declared twice");
  assert_int_equal(r.status, 1);
  free(r.out);
}

/* ---- torch_musa --------------------------------------------------------- */

static void test_musa_functions(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  const char *musa = KD_SHARED_DATA_DIR "/musa_functions.yaml";
  const char *tags = KD_SHARED_DATA_DIR "/pytorch-2.6/tags.yaml";
  if (access(musa, R_OK) != 0 || access(KD_MUSA_UPSTREAM, R_OK) != 0) {
    print_message("%s or %s is absent; skipping\n", musa, KD_MUSA_UPSTREAM);
    skip();
  }
  char args[2048];
  snprintf(args, sizeof args, "--backend '%s' --source '%s' --tags '%s' --classify", musa,
           KD_MUSA_UPSTREAM, tags);
  run_result r = kdgt_run(args, true);
  if (strstr(r.out, "error")) fail_msg("errors in torch_musa's file:\n%s", r.out);
  /* Counts derived from torch_musa's rules (docs/CODEGEN.md, "Backend YAML"). */
  ASSERT_CONTAINS(r.out, "\nLegacy: 589 (268 structured, 321 unstructured)\n"
                         "LegacyMeta: 80 (80 structured, 0 unstructured)\n"
                         "Customized: 510 (0 structured, 510 unstructured)\n"
                         "none: 33 (0 structured, 33 unstructured)\n"
                         "total: 1212\n");
  static const char *const sample[] = {
      /* structured group without dispatch: Legacy, all three (the first
       * line is checked below) */
      "bitwise_right_shift.Tensor_out Legacy structured",
      "hypot_ Legacy structured",
      /* the out= variant names a kernel: LegacyMeta; the functional follows */
      "amax LegacyMeta structured",
      "amax.out LegacyMeta structured",
      /* structured: False on an upstream structured out= variant */
      "mean.out Customized unstructured",
      /* a delegate with its own kernel is unstructured */
      "add.Tensor Customized unstructured",
      "softplus Customized unstructured",
      /* unstructured upstream: upstream's CPU/CUDA kernel name is Legacy */
      "view_as_real Legacy unstructured",
      "unfold_backward Legacy unstructured",
      "_foreach_log Legacy unstructured",
      "convolution_overrideable Customized unstructured",
      /* only other keys of the backend (QuantizedPrivateUse1, SparseCsr...) */
      "q_scale none unstructured",
      "col_indices none unstructured",
      /* operators upstream's autogen: generates */
      "relu.out Customized unstructured",
      "rrelu_with_noise_functional Customized unstructured",
      /* one of the 16 the patch adds */
      "_fused_rmsnorm_forward Customized unstructured",
  };
  for (size_t i = 0; i < sizeof sample / sizeof *sample; i++) {
    char want[256];
    snprintf(want, sizeof want, "\n%s\n", sample[i]);
    ASSERT_CONTAINS(r.out, want);
  }
  /* the first line, and file order */
  const char *start = "bitwise_right_shift.Tensor Legacy structured\n"
                      "bitwise_right_shift_.Tensor Legacy structured\n";
  if (strncmp(r.out, start, strlen(start)))
    fail_msg("unexpected start:\n%.300s", r.out);
  assert_int_equal(r.status, 0);
  free(r.out);
}

/* Without the patch, the 16 operators torch_musa adds are unknown. */
static void test_musa_unpatched(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  const char *musa = KD_SHARED_DATA_DIR "/musa_functions.yaml";
  const char *nf = KD_SHARED_DATA_DIR "/pytorch-2.6/native_functions.yaml";
  if (access(musa, R_OK) != 0 || access(nf, R_OK) != 0) skip();
  char args[2048];
  snprintf(args, sizeof args, "--backend '%s' --source '%s' --validate", musa, nf);
  run_result r = kdgt_run(args, true);
  ASSERT_CONTAINS(r.out, "error: '_fused_rmsnorm_forward' is not an operator of ");
  assert_int_equal(r.status, 1);
  free(r.out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_classify),
      cmocka_unit_test(test_bad_fixtures),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_musa_functions),
      cmocka_unit_test(test_musa_unpatched),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
