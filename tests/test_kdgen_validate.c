/*
 * kdgen --validate: the loader and the validator (tools/kdgen/load.c,
 * validate.c). Runs KD_BIN_DIR/kdgen through popen on PyTorch's
 * native_functions.yaml (shared test data), on the project's own
 * ops/native_functions.yaml, and on the small files of tests/kdgen/, each
 * written to break exactly one rule; the exact "FILE:LINE: error: ..." line is
 * checked. Skipped when kdgen was not built (-DKD_BUILD_OPS=OFF).
 */
#include "kdgen_test.h"

/* ---- Whole files that must validate ------------------------------------- */

static void test_pytorch_native_functions(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  const char *nf = KD_SHARED_DATA_DIR "/native_functions.yaml";
  const char *tags = KD_SHARED_DATA_DIR "/tags.yaml";
  if (access(nf, R_OK) != 0 || access(tags, R_OK) != 0) {
    print_message("%s or %s is absent; skipping\n", nf, tags);
    skip();
  }
  char args[2048];
  snprintf(args, sizeof args, "--validate --tags '%s' '%s'", tags, nf);
  run_result r = kdgt_run(args, true);
  char want[2048];
  snprintf(want, sizeof want, "%s: 2493 entries, ", nf);
  ASSERT_CONTAINS(r.out, want);
  ASSERT_CONTAINS(r.out, " groups, no errors\n");
  if (strstr(r.out, "error:")) fail_msg("errors in PyTorch's native_functions.yaml:\n%s", r.out);
  assert_int_equal(r.status, 0);
  free(r.out);

  /* The project's tags file holds the same tags. */
  snprintf(args, sizeof args, "--validate --tags ops/tags.yaml '%s'", nf);
  r = kdgt_run(args, true);
  ASSERT_CONTAINS(r.out, " groups, no errors\n");
  assert_int_equal(r.status, 0);
  free(r.out);
}

/* PyTorch 2.6: DeviceIndex, set_'s inplace_view, a group's functional and
 * in-place entries both naming the generated out= variant; and the file
 * torch_musa patches (test_kdgen_backend's fixture makes it). */
static void test_pytorch26_native_functions(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  const char *nf = KD_SHARED_DATA_DIR "/pytorch-2.6/native_functions.yaml";
  const char *tags = KD_SHARED_DATA_DIR "/pytorch-2.6/tags.yaml";
  if (access(nf, R_OK) != 0 || access(tags, R_OK) != 0) {
    print_message("%s or %s is absent; skipping\n", nf, tags);
    skip();
  }
  char args[2048], want[2048];
  snprintf(args, sizeof args, "--validate --tags '%s' '%s'", tags, nf);
  run_result r = kdgt_run(args, true);
  snprintf(want, sizeof want, "%s: 2633 entries, 619 groups, no errors\n", nf);
  if (strcmp(r.out, want)) fail_msg("expected\n%s\ngot:\n%s", want, r.out);
  assert_int_equal(r.status, 0);
  free(r.out);

  if (access(KD_MUSA_UPSTREAM, R_OK) != 0) return;
  snprintf(args, sizeof args, "--validate --tags '%s' '%s'", tags, KD_MUSA_UPSTREAM);
  r = kdgt_run(args, true);
  snprintf(want, sizeof want, "%s: 2649 entries, 619 groups, no errors\n", KD_MUSA_UPSTREAM);
  if (strcmp(r.out, want)) fail_msg("expected\n%s\ngot:\n%s", want, r.out);
  assert_int_equal(r.status, 0);
  free(r.out);
}

static void test_ops_native_functions(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--validate --tags ops/tags.yaml ops/native_functions.yaml", true);
  ASSERT_CONTAINS(r.out, "ops/native_functions.yaml: ");
  ASSERT_CONTAINS(r.out, " no errors\n");
  assert_int_equal(r.status, 0);
  free(r.out);
}

static void test_valid_fixture(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--validate --tags ops/tags.yaml tests/kdgen/valid.yaml", true);
  ASSERT_CONTAINS(r.out, "tests/kdgen/valid.yaml: 9 entries, 2 groups, no errors\n");
  assert_int_equal(r.status, 0);
  free(r.out);
}

/* ---- One fixture per error ---------------------------------------------- */

typedef struct bad_case {
  const char *file; /* under tests/kdgen/ */
  const char *line; /* the one error expected, after "tests/kdgen/" */
} bad_case;

static const bad_case bad_cases[] = {
    /* loading */
    {"unknown_key.yaml", "unknown_key.yaml:3: error: unknown key 'foo' in the entry for 'add.Tensor'"},
    {"bad_schema.yaml",
     "bad_schema.yaml:3: error: bad schema 'add.Tensor(Tensor self, Tensor other -> Tensor': "
     "line 1, column 38: expected ',' or ')', found '->'"},
    {"no_func.yaml", "no_func.yaml:1: error: this entry has no 'func:' key"},
    {"bad_bool.yaml",
     "bad_bool.yaml:2: error: 'device_guard' of 'relu' must be True or False, found 'maybe'"},
    {"duplicate_key.yaml",
     "duplicate_key.yaml:3: error: key 'variants' is written twice in the entry for 'relu' "
     "(first at line 2)"},
    {"yaml_syntax.yaml",
     "yaml_syntax.yaml:4: error: YAML: did not find expected ',' or ']' while parsing a flow "
     "sequence started at line 3"},
    {"not_a_list.yaml", "not_a_list.yaml:1: error: the file must be a list of '- func: ...' entries"},
    /* values of one entry */
    {"unknown_tag.yaml",
     "unknown_tag.yaml:2: error: unknown tag 'shiny' in 'relu' (the tags file does not define it)"},
    {"bad_variants.yaml",
     "bad_variants.yaml:2: error: bad variant 'methods' in 'variants' of 'relu' (expected "
     "function, method)"},
    {"bad_device_check.yaml",
     "bad_device_check.yaml:2: error: device_check of 'relu' must be NoCheck or ExactSame, found "
     "'Sometimes'"},
    {"unknown_dispatch_key.yaml",
     "unknown_dispatch_key.yaml:4: error: unknown dispatch key 'TPU' in 'dispatch' of 'relu'"},
    {"out_method.yaml",
     "out_method.yaml:2: error: 'relu.out' has out= arguments, so its variants must be "
     "'function' only"},
    {"cpp_no_default_args.yaml",
     "cpp_no_default_args.yaml:2: error: cpp_no_default_args of 'arange' names 'end', which is "
     "not an argument with a default"},
    {"foreach_device_check.yaml",
     "foreach_device_check.yaml:1: error: '_foreach_exp' is a _foreach operator and needs "
     "device_check: NoCheck (its kernels take tensors on several devices)"},
    {"python_module_method.yaml",
     "python_module_method.yaml:2: error: 'relu' is in python_module 'nn' and cannot be a method"},
    {"manual_and_dispatch.yaml",
     "manual_and_dispatch.yaml:3: error: 'relu' has both manual_kernel_registration and a "
     "dispatch table; with manual registration the table would be ignored"},
    {"manual_and_structured.yaml",
     "manual_and_structured.yaml:3: error: 'relu' has both manual_kernel_registration and "
     "structured_delegate; its kernels are registered by hand, so remove structured_delegate"},
    {"two_composites.yaml",
     "two_composites.yaml:2: error: 'relu' names more than one of CompositeExplicitAutograd, "
     "CompositeExplicitAutogradNonFunctional and CompositeImplicitAutograd; each one covers the "
     "others"},
    {"redundant_dispatch.yaml",
     "redundant_dispatch.yaml:2: error: the dispatch table of 'relu' only names the default "
     "CompositeImplicitAutograd kernel 'relu'; delete the table"},
    {"inplace_view_name.yaml",
     "inplace_view_name.yaml:2: error: 'squeeze' has the tag inplace_view, so its name must end "
     "in '_' like every in-place operator"},
    {"inplace_view_missing.yaml",
     "inplace_view_missing.yaml:2: error: 'unsqueeze_' has the tag inplace_view, but there is no "
     "out-of-place view operator 'unsqueeze'"},
    /* structured kernels */
    {"structured_not_out.yaml",
     "structured_not_out.yaml:2: error: 'relu' is structured but is not an out= variant; put "
     "structured on the out= variant (did you mean structured_delegate?)"},
    {"structured_and_delegate.yaml",
     "structured_and_delegate.yaml:6: error: 'relu.out' has both structured and "
     "structured_delegate"},
    {"delegate_on_out.yaml",
     "delegate_on_out.yaml:4: error: 'relu.out' is an out= variant and cannot have "
     "structured_delegate (did you mean structured?)"},
    {"delegate_missing.yaml",
     "delegate_missing.yaml:2: error: 'relu' delegates to 'relu.out', which is not declared"},
    {"delegate_not_structured.yaml",
     "delegate_not_structured.yaml:2: error: 'relu' delegates to 'relu.out' (line 4), which is "
     "not structured; add 'structured: True' to 'relu.out'"},
    {"delegate_with_cpu.yaml",
     "delegate_with_cpu.yaml:4: error: 'relu' has structured_delegate, so its CPU kernel comes "
     "from 'relu.out'; remove CPU from its dispatch table"},
    {"structured_no_dispatch.yaml",
     "structured_no_dispatch.yaml:5: error: structured out= variant 'relu.out' has no dispatch "
     "table naming its impl kernels"},
    {"structured_alone.yaml",
     "structured_alone.yaml:2: error: 'relu.out' is structured, but no functional or in-place "
     "variant has its signature"},
    {"structured_device_guard.yaml",
     "structured_device_guard.yaml:6: error: structured kernels always guard the device: "
     "'relu.out' cannot have device_guard: False"},
    {"kd_stubs_not_structured.yaml",
     "kd_stubs_not_structured.yaml:2: error: kd_stubs of 'relu.out' needs structured: True (it "
     "names the stubs a structured impl calls)"},
    {"kd_stubs_bad.yaml",
     "kd_stubs_bad.yaml:7: error: kd_stubs of 'neg.out': '2bad' is not a stub name (a C "
     "identifier)"},
    {"kd_stubs_twice.yaml",
     "kd_stubs_twice.yaml:7: error: kd_stubs of 'neg.out' names 'unary_stub' twice"},
    {"kd_stubs_not_list.yaml",
     "kd_stubs_not_list.yaml:3: error: 'kd_stubs' of 'neg.out' must be a list, found a string"},
    {"inherits_not_structured.yaml",
     "inherits_not_structured.yaml:2: error: structured_inherits of 'relu.out' needs "
     "structured: True"},
    {"precomputed_not_structured.yaml",
     "precomputed_not_structured.yaml:2: error: precomputed of 'sum.out' needs structured: True"},
    {"precomputed_bad_arg.yaml",
     "precomputed_bad_arg.yaml:7: error: precomputed of 'sum.out' replaces 'axis', which is not "
     "one of its arguments"},
    {"precomputed_add_not_last.yaml",
     "precomputed_add_not_last.yaml:7: error: precomputed of 'sum.out': only the last line may "
     "add fields without 'arg ->'"},
    {"ufunc_not_structured.yaml",
     "ufunc_not_structured.yaml:2: error: ufunc_inner_loop of 'relu.out' needs structured: True"},
    /* across entries */
    {"duplicate.yaml", "duplicate.yaml:3: error: 'relu' is declared twice (first at line 1)"},
    {"same_cname.yaml",
     "same_cname.yaml:3: error: 'foo.bar' and 'foo_bar' (line 1) both have the C name "
     "'kd_foo_bar'; rename one"},
    /* the mangling meets itself: docs/CODEGEN.md, "Names" */
    {"same_cname_inplace.yaml",
     "same_cname_inplace.yaml:3: error: 'add.Tensor_' and 'add_.Tensor' (line 1) both have the "
     "C name 'kd_add_Tensor_'; rename one"},
    {"same_cname_internal.yaml",
     "same_cname_internal.yaml:3: error: '_scale' and 'internal_scale' (line 1) both have the C "
     "name 'kd_internal_scale'; rename one"},
    {"same_cname_redispatch.yaml",
     "same_cname_redispatch.yaml:3: error: 'redispatch_scale' and 'scale' (line 1) both have the "
     "C name 'kd_redispatch_scale'; rename one"},
    {"same_cname_direct.yaml",
     "same_cname_direct.yaml:3: error: 'scale' and 'cpu_scale' (line 1) both have the C name "
     "'kd_cpu_scale'; rename one"},
    {"same_cname_core.yaml",
     "same_cname_core.yaml:3: error: 'stack.op' and 'stack' (line 1) both have the C name "
     "'kd_stack_op'; rename one"},
    {"local_prefix.yaml",
     "local_prefix.yaml:1: error: argument 'kdg_st' of 'scale' begins with 'kdg_', the prefix of "
     "the generated code's locals; rename it"},
    {"two_outs.yaml",
     "two_outs.yaml:5: error: 'relu.result' and 'relu.out' (line 3) have the same signature "
     "'relu(Tensor self) -> Tensor' and are both out= variants"},
    {"wrong_delegate.yaml",
     "wrong_delegate.yaml:10: error: 'relu' delegates to 'sub.out', but the out= variant with "
     "its signature is 'relu.out' (line 12)"},
    {"group_no_delegate.yaml",
     "group_no_delegate.yaml:1: error: 'relu' has the signature of the structured out= variant "
     "'relu.out' (line 5) but no 'structured_delegate: relu.out'"},
    {"autogen_declared.yaml",
     "autogen_declared.yaml:2: error: autogen of 'relu' names 'relu.out', which is already "
     "declared at line 4"},
    {"autogen_wrong_name.yaml",
     "autogen_wrong_name.yaml:2: error: autogen of 'relu_.Tensor' names 'gelu.Tensor_out'; the "
     "variants that can be generated from it are 'relu.Tensor_out' and 'relu.Tensor'"},
    {"autogen_twice.yaml",
     "autogen_twice.yaml:5: error: autogen of 'relu' names 'relu.out', which 'relu_' (line 1) "
     "already generates"},
    {"ufunc_with_cpu.yaml",
     "ufunc_with_cpu.yaml:8: error: 'relu.out' has ufunc_inner_loop, which provides its CPU "
     "kernel; remove CPU from its dispatch table"},
    {"structured_composite.yaml",
     "structured_composite.yaml:6: error: structured out= variant 'relu.out' cannot have a "
     "CompositeImplicitAutograd kernel"},
    {"dispatch_key_twice.yaml",
     "dispatch_key_twice.yaml:4: error: dispatch key 'CPU' is given twice in 'relu'"},
    {"delegate_other_group.yaml",
     "delegate_other_group.yaml:10: error: 'relu' delegates to 'sub.out' (line 4), but its own "
     "out= variant is 'relu.out' (line 12), which is not structured"},
    {"delegate_other_signature.yaml",
     "delegate_other_signature.yaml:10: error: 'relu' delegates to 'sub.out' (line 4), whose "
     "signature differs; the delegate must be the out= variant of the same operator"},
    {"precomputed_upper.yaml",
     "precomputed_upper.yaml:7: error: precomputed field 'DIM' of 'sum.out' must not be all "
     "upper case"},
};

static void test_bad_fixtures(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
    const bad_case *c = &bad_cases[i];
    char args[1024], want[2048];
    snprintf(args, sizeof args, "--validate --tags ops/tags.yaml tests/kdgen/%s", c->file);
    run_result r = kdgt_run(args, true);
    snprintf(want, sizeof want, "tests/kdgen/%s\n", c->line);
    if (!strstr(r.out, want))
      fail_msg("%s: expected the line\n  %s\ngot:\n%s", c->file, want, r.out);
    if (!strstr(r.out, "kdgen: 1 error\n"))
      fail_msg("%s: expected exactly one error, got:\n%s", c->file, r.out);
    if (r.status != 1) fail_msg("%s: exit status %d, expected 1", c->file, r.status);
    free(r.out);
  }
}

static void test_bad_tags_file(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--validate --tags tests/kdgen/tags_bad.yaml tests/kdgen/valid.yaml", true);
  ASSERT_CONTAINS(r.out, "tests/kdgen/tags_bad.yaml:1: error: tag 'core' has no 'desc:'\n");
  ASSERT_CONTAINS(r.out, "tests/kdgen/tags_bad.yaml:2: error: tag 'core' is defined twice\n");
  ASSERT_CONTAINS(r.out, "kdgen: 2 errors\n");
  assert_int_equal(r.status, 1);
  free(r.out);
}

static void test_missing_file(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--validate tests/kdgen/no_such_file.yaml", true);
  ASSERT_CONTAINS(r.out, "tests/kdgen/no_such_file.yaml: error: cannot open: ");
  assert_int_equal(r.status, 1);
  free(r.out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pytorch_native_functions),
      cmocka_unit_test(test_pytorch26_native_functions),
      cmocka_unit_test(test_ops_native_functions),
      cmocka_unit_test(test_valid_fixture),
      cmocka_unit_test(test_bad_fixtures),
      cmocka_unit_test(test_bad_tags_file),
      cmocka_unit_test(test_missing_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
