/*
 * kdgen --backend ... --out DIR: generation for an out-of-tree backend
 * (tools/kdgen/gen_backend.c, docs/CODEGEN.md "Backends"). Runs KD_BIN_DIR/kdgen
 * on the proof backend (examples/backend_gen/fakegen.yaml against libkdops'
 * YAML) and on tests/kdgen/backend_unbound.yaml, and checks what was written:
 * the author header declares exactly what the author writes, every entry is
 * listed as generated or with the reason it is not, the output is
 * deterministic, and a key kdgen cannot generate is an error. With the shared
 * data present, also torch_musa's file against the patched PyTorch 2.6 file.
 * Skipped when kdgen was not built.
 */
#include <sys/stat.h>

#include "kdgen_test.h"

#define WORK KD_BIN_DIR "/../tests/kdgen_backend_gen"

static const char fakegen_args[] =
    "--backend examples/backend_gen/fakegen.yaml --source ops/native_functions.yaml "
    "--native ops/native_functions.yaml --name fakegen --namespace fakegen --out " WORK;

/* The proof backend: every strategy, all 19 entries generated. */
static void test_fakegen(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  char args[4096];
  snprintf(args, sizeof args, "%s/a", fakegen_args);
  kdgt_run_ok(args);

  char *entries = kd_test_read_file(WORK "/a/fakegen_entries.txt");
  ASSERT_CONTAINS(entries, "19 entries, 19 generated, 0 not");
  ASSERT_CONTAINS(entries, "add.Tensor Legacy structured generated: meta kdk_meta_add_Tensor, "
                           "impl kdk_native_add_out_cpu");
  ASSERT_CONTAINS(entries, "add.out Legacy structured generated: meta kdk_meta_add_Tensor, impl "
                           "kdk_native_add_out_cpu, stubs fakegen_add_stub\n");
  ASSERT_CONTAINS(entries, "neg_ LegacyMeta structured generated: meta kdk_meta_neg, impl "
                           "fakegen_neg_out");
  ASSERT_CONTAINS(entries, "sub.out Customized structured generated: meta "
                           "fakegen_meta_sub_Tensor, impl fakegen_sub_out");
  ASSERT_CONTAINS(entries, "resize_ Legacy unstructured generated: kernel kdk_native_resize_\n");
  ASSERT_CONTAINS(entries, "exp.out Customized unstructured generated: kernel fakegen_exp_out\n");
  ASSERT_CONTAINS(entries, "scale_add Customized unstructured generated: kernel "
                           "fakegen_scale_add (new operator)");
  free(entries);

  /* The author header: exactly the functions the author writes, each once. */
  char *h = kd_test_read_file(WORK "/a/fakegen_functions.h");
  ASSERT_CONTAINS(h, "kd_status fakegen_backend(kd_plugin *plugin, kd_backend_iface *iface);");
  ASSERT_CONTAINS(h, "void fakegen_backend_fini(void);");
  ASSERT_CONTAINS(h, "kd_status fakegen_neg_out(kdk_structured *s, kdk_iter *iter, kd_tensor "
                     "*self, kd_tensor *out);");
  ASSERT_CONTAINS(h, "kd_status fakegen_meta_sub_Tensor(kdk_structured *s, kdk_iter *iter, "
                     "kd_tensor *self, kd_tensor *other, const kd_scalar *alpha);");
  ASSERT_CONTAINS(h, "kd_status fakegen_sub_out(kdk_structured *s, kdk_iter *iter, kd_tensor "
                     "*self, kd_tensor *other, const kd_scalar *alpha, kd_tensor *out);");
  ASSERT_CONTAINS(h, "kd_status fakegen_exp_out(kd_tensor *self, kd_tensor *out);");
  ASSERT_CONTAINS(h, "/* fakegen::scale_add(Tensor self, Tensor other, float alpha) -> Tensor */\n"
                     "kd_status fakegen_scale_add(kd_tensor *self, kd_tensor *other, double "
                     "alpha, kd_tensor **out);");
  ASSERT_CONTAINS(h, "kd_status fakegen_copy_(kd_tensor *self, kd_tensor *src, bool non_blocking);");
  /* The loops of the stubs libkdops' impls of the Legacy groups call (kd_stubs:), once each. */
  ASSERT_CONTAINS(h, "kdk_stub_fn_add_stub fakegen_add_stub;\nkdk_stub_fn_mul_stub fakegen_mul_stub;\n");
  assert_int_equal(kdgt_count(h, "fakegen_add_stub"), 1);
  assert_int_equal(kdgt_count(h, "fakegen_neg_out("), 1);  /* three entries, one impl */
  assert_int_equal(kdgt_count(h, "fakegen_sub_out("), 1);
  /* Legacy entries reuse libkdops: nothing of theirs to write but stub loops. */
  ASSERT_LACKS(h, "kdk_meta_add");
  ASSERT_LACKS(h, "resize_(");
  ASSERT_LACKS(h, "kdk_native_");
  free(h);

  /* The plugin: wrappers on the right meta and impl, registration, entry point. */
  char *c = kd_test_read_file(WORK "/a/fakegen_plugin.c");
  ASSERT_CONTAINS(c, "kd_status kdg_st = kdk_meta_add_Tensor(&kdg_s, &kdg_it, self, other, alpha);\n"
                     "  if (!kdg_st) kdg_st = kdk_native_add_out_cpu(&kdg_s, &kdg_it, self, other, "
                     "alpha, kdk_structured_output(&kdg_s, 0));");
  ASSERT_CONTAINS(c, "kdk_structured_init(&kdg_s, \"aten::add_.Tensor\", KDK_STRUCTURED_INPLACE, 1, "
                     "kdg_given, kdg_dev);");
  ASSERT_CONTAINS(c, "kdg_st = fakegen_meta_sub_Tensor(&kdg_s, &kdg_it, self, other, alpha);");
  ASSERT_CONTAINS(c, "kdg_st = kdk_meta_neg(&kdg_s, &kdg_it, self);");
  ASSERT_CONTAINS(c, "    \"scale_add(Tensor self, Tensor other, float alpha) -> Tensor\",\n");
  ASSERT_CONTAINS(c, "{1, KD_KEY_PRIVATEUSE1, \"scale_add\", \"(Tensor, Tensor, float) -> Tensor\", fakegen__u18, "
                     "\"examples/backend_gen/fakegen.yaml:");
  /* Each kernel's debug name carries its strategy (docs/CODEGEN.md's names). */
  ASSERT_CONTAINS(c, "fakegen.yaml:70 (new operator)\"}");
  ASSERT_CONTAINS(c, "fakegen.yaml:37 (Legacy, structured)\"}");
  ASSERT_CONTAINS(c, "fakegen.yaml:30 (Legacy, unstructured)\"}");
  ASSERT_CONTAINS(c, "fakegen.yaml:55 (Customized, structured)\"}");
  ASSERT_CONTAINS(c, "fakegen.yaml:63 (Customized, unstructured)\"}");
  ASSERT_CONTAINS(c, "{0, KD_KEY_PRIVATEUSE1, \"resize_\", \"(Tensor(a!), SymInt[], MemoryFormat?) -> Tensor(a!)\"");
  ASSERT_CONTAINS(c, "static const char *const nss[2] = {\"aten\", \"fakegen\"};");
  /* one IMPL library per namespace and key of the column, named by its row */
  ASSERT_CONTAINS(c, "kd_plugin_library(plugin, KD_LIBRARY_IMPL, nss[x->ns], x->key, lib)");
  ASSERT_CONTAINS(c, "case 0: *fn = (kdk_stub_fn)fakegen_add_stub; return &KDK_STUB_OBJECT(add_stub);");
  ASSERT_CONTAINS(c, "case 1: *fn = (kdk_stub_fn)fakegen_mul_stub; return &KDK_STUB_OBJECT(mul_stub);");
  ASSERT_CONTAINS(c, "if (stub && (st = kdk_stub_register_device(stub, KD_DEVICE_PRIVATEUSE1, fn))) "
                     "return st;");
  /* Selective builds: every entry's code and row in its guard, in its namespace;
   * a stub loop registered when an operator of its Legacy group is kept. */
  ASSERT_CONTAINS(c, "#include \"kd/selective.h\"");
  /* 19 entries x (wrapper, direct call, row), 2 stub loops, and scale_add's
   * AutogradPrivateUse1 kernel (wrapper and row: no direct call) */
  assert_int_equal(kdgt_count(c, "#if KD_SHOULD_REGISTER("), 3 * 19 + 2 + 2);
  assert_int_equal(kdgt_count(c, "#if KD_SHOULD_REGISTER(fakegen, scale_add, AUTOGRAD_PRIVATEUSE1)\n"), 2);
  ASSERT_CONTAINS(c, "{1, KD_KEY_AUTOGRAD_PRIVATEUSE1, \"scale_add\", \"(Tensor, Tensor, float) -> Tensor\", ");
  assert_int_equal(kdgt_count(c, "#if KD_SHOULD_REGISTER(fakegen, scale_add, PRIVATEUSE1)\n"), 3);
  ASSERT_CONTAINS(c, "#if KD_SHOULD_REGISTER(aten, mul_Tensor, PRIVATEUSE1) || KD_SHOULD_REGISTER(aten, "
                     "mul__Tensor, PRIVATEUSE1) || KD_SHOULD_REGISTER(aten, mul_out, PRIVATEUSE1)\n"
                     "  case 1: ");
  ASSERT_CONTAINS(c, "    {0, KD_KEY_UNDEFINED, NULL, NULL, NULL, NULL}, /* the end");
  ASSERT_CONTAINS(c, "for (size_t i = 0; fakegen__impls[i].name; i++) {");
  /* device_check / device_guard (torchgen's RegisterDispatchKey), from the entry or upstream:
   * scale_add checks both tensors and guards on self; copy_ and resize_ (NoCheck, no guard)
   * are called as they are; add.Tensor (NoCheck: the iterator checks) only guards. */
  ASSERT_CONTAINS(c, "/* device_check: ExactSame; device_guard: self */\nstatic kd_status fakegen__c18(kd_tensor "
                     "*self, kd_tensor *other, double alpha, kd_tensor **out) {");
  ASSERT_CONTAINS(c, "  if ((kdg_st = fakegen__same_device(\"wrapper_PrivateUse1_scale_add\", 2, kdg_t, kdg_n)))");
  ASSERT_CONTAINS(c, "  if (self && (kdg_st = kd_device_guard_enter(&kdg_g, kd_tensor_device(self)))) return "
                     "kdg_st;\n  kdg_st = fakegen_scale_add(self, other, alpha, out);\n"
                     "  kd_device_guard_exit(&kdg_g);\n");
  ASSERT_CONTAINS(c, "/* device_check: NoCheck; device_guard: self */\nstatic kd_status fakegen__c5(");
  ASSERT_CONTAINS(c, "/* device_check: NoCheck; device_guard: device */\nstatic kd_status fakegen__c0(");
  ASSERT_CONTAINS(c, "  if (device && (kdg_st = kd_device_guard_enter(&kdg_g, *device))) return kdg_st;");
  ASSERT_LACKS(c, "fakegen__c3(");
  ASSERT_LACKS(c, "fakegen__c4(");
  ASSERT_CONTAINS(c, "return fakegen_copy_(self, src, non_blocking);");
  ASSERT_CONTAINS(c, "KD_PLUGIN(fakegen__desc)");
  assert_int_equal(kdgt_count(c, "kd_status kd_fakegen_"), 19); /* one direct call per entry */
  free(c);
  char *dh = kd_test_read_file(WORK "/a/fakegen_direct.h");
  assert_int_equal(kdgt_count(dh, "#if KD_SHOULD_REGISTER("), 19);
  ASSERT_CONTAINS(dh, "#if KD_SHOULD_REGISTER(aten, add_Tensor, PRIVATEUSE1)\n/* aten::add.Tensor");
  free(dh);

  /* Deterministic: a second run writes the same bytes. */
  snprintf(args, sizeof args, "%s/b", fakegen_args);
  kdgt_run_ok(args);
  const char *files[] = {"fakegen_functions.h", "fakegen_plugin.c", "fakegen_direct.h",
                         "fakegen_entries.txt"};
  for (size_t i = 0; i < 4; i++) {
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, WORK "/a/%s", files[i]);
    snprintf(pb, sizeof pb, WORK "/b/%s", files[i]);
    char *x = kd_test_read_file(pa), *y = kd_test_read_file(pb);
    if (strcmp(x, y)) fail_msg("%s differs between two runs", files[i]);
    free(x);
    free(y);
  }
}

/* Entries kdgen cannot bind are notes with file:line and lines of the list;
 * the rest is generated and the exit status is 0. */
static void test_unbound(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--backend tests/kdgen/backend_unbound.yaml --source "
                           "ops/native_functions.yaml --native tests/kdgen/backend_native_small.yaml "
                           "--name ub --out " WORK "/ub", true);
  if (r.status != 0) fail_msg("kdgen failed:\n%s", r.out);
  ASSERT_CONTAINS(r.out, "tests/kdgen/backend_unbound.yaml:7: note: 'mul.out' (Legacy) is not "
                         "generated: libkdops does not implement 'mul.out'\n");
  /* a Legacy impl that reaches no stub would loop over device memory on the host */
  ASSERT_CONTAINS(r.out, "tests/kdgen/backend_unbound.yaml:20: note: 'exp.out' (Legacy) is not "
                         "generated: libkdops' impl of 'exp.out' (tests/kdgen/backend_native_small.yaml:36) "
                         "reaches no dispatch stub (no kd_stubs:), so its loop cannot run on the "
                         "device: name the backend's impl in dispatch: (LegacyMeta)\n");
  ASSERT_CONTAINS(r.out, "kdgen: 2 notes: entries not generated (not an error)");
  ASSERT_LACKS(r.out, "SparsePrivateUse1");
  free(r.out);
  char *entries = kd_test_read_file(WORK "/ub/ub_entries.txt");
  ASSERT_CONTAINS(entries, "6 entries, 4 generated, 2 not; 2 kernels for other keys of the column, 2 "
                           "generated, 0 not\n");
  ASSERT_CONTAINS(entries, "mul.out Legacy structured not generated: libkdops does not implement "
                           "'mul.out'\n");
  /* another key of the column: the author's unstructured kernel, at its own key */
  ASSERT_CONTAINS(entries, "neg.out LegacyMeta structured generated: meta kdk_meta_neg, impl ub_neg_out\n"
                           "neg.out Customized structured generated: key SparsePrivateUse1: kernel "
                           "ub_neg_out_sparse\n");
  ASSERT_CONTAINS(entries, "exp.out Customized structured generated: key SparsePrivateUse1: kernel "
                           "ub_exp_out_sparse\n");
  ASSERT_CONTAINS(entries, "resize_ Legacy unstructured generated: kernel kdk_native_resize_\n");
  free(entries);
  char *c = kd_test_read_file(WORK "/ub/ub_plugin.c");
  ASSERT_LACKS(c, "mul");
  ASSERT_CONTAINS(c, "{0, KD_KEY_SPARSE_PRIVATEUSE1, \"neg.out\", \"(Tensor, Tensor(a!)) -> Tensor(a!)\", ");
  ASSERT_CONTAINS(c, "#if KD_SHOULD_REGISTER(aten, exp_out, SPARSE_PRIVATEUSE1)\n");
  ASSERT_LACKS(c, "kd_ub_neg_out_sparse"); /* no direct call of another key's kernel */
  free(c);
  char *h = kd_test_read_file(WORK "/ub/ub_functions.h");
  ASSERT_CONTAINS(h, "/* Customized, unstructured, for SparsePrivateUse1 */\n"
                     "/* aten::neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!) */\n"
                     "kd_status ub_neg_out_sparse(kd_tensor *self, kd_tensor *out);\n");
  free(h);

  /* Without --native nothing of libkdops can be reused: every Legacy entry is listed. */
  r = kdgt_run("--backend tests/kdgen/backend_unbound.yaml --source ops/native_functions.yaml "
                "--name ub --out " WORK "/nonative", true);
  if (r.status != 0) fail_msg("kdgen failed:\n%s", r.out);
  ASSERT_CONTAINS(r.out, "tests/kdgen/backend_unbound.yaml:4: note: 'add.Tensor' (Legacy) is not "
                         "generated: no --native file: kdgen does not know what libkdops implements\n");
  free(r.out);
  entries = kd_test_read_file(WORK "/nonative/ub_entries.txt");
  ASSERT_CONTAINS(entries, "6 entries, 0 generated, 6 not; 2 kernels"); /* LegacyMeta reuses a meta too */
  free(entries);
}

/* A backend key that is not a plugin's (PrivateUse1..3) is an error; nothing is written. */
static void test_bad_key(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  run_result r = kdgt_run("--backend tests/kdgen/backend_cuda.yaml --source "
                           "ops/native_functions.yaml --key CUDA --name ub --out " WORK "/cuda", true);
  assert_int_equal(r.status, 1);
  ASSERT_CONTAINS(r.out, "tests/kdgen/backend_cuda.yaml: error: the backend's key 'CUDA' "
                         "cannot be generated: a plugin backend claims PrivateUse1, PrivateUse2 or "
                         "PrivateUse3\n");
  free(r.out);
  struct stat st;
  assert_int_not_equal(stat(WORK "/cuda/ub_plugin.c", &st), 0);
}

/* torch_musa's file against the patched PyTorch 2.6 file and libkdops' YAML:
 * it completes, most entries are listed as not generated, each with a reason. */
static void test_torch_musa(void **state) {
  (void)state;
  KDGT_SKIP_WITHOUT_KDGEN();
  if (access(KD_MUSA_UPSTREAM, R_OK) != 0) {
    print_message("%s not made (the kdgen_musa_upstream fixture); skipping\n", KD_MUSA_UPSTREAM);
    skip();
  }
  char args[4096];
  snprintf(args, sizeof args,
           "--backend '%s/musa_functions.yaml' --source '%s' --tags "
           "'%s/pytorch-2.6/tags.yaml' --native ops/native_functions.yaml --name musa --out '" WORK
           "/musa'",
           KD_SHARED_DATA_DIR, KD_MUSA_UPSTREAM, KD_SHARED_DATA_DIR);
  kdgt_run_ok(args);
  char *entries = kd_test_read_file(WORK "/musa/musa_entries.txt");
  ASSERT_CONTAINS(entries, "1212 entries, ");
  /* Every entry has its line: one per entry, plus one per other key. */
  size_t lines = kdgt_count(entries, "\n") - 1;
  assert_true(lines >= 1212);
  assert_int_equal(kdgt_count(entries, " generated: "), lines); /* "not generated: " included */
  /* C has no overloads: a kernel name shared by two signatures binds the first only. */
  ASSERT_CONTAINS(entries, "bucketize.Scalar Customized unstructured not generated: its kernel "
                           "musa_Bucketize is already 'bucketize.Tensor''s (line ");
  /* Every key of the file is accepted (Quantized, Sparse, SparseCsr and
   * NestedTensor of PrivateUse1: the column's functionalities): the other
   * keys are planned too, generated as the author's kernels at their own key
   * or listed with why not. */
  ASSERT_CONTAINS(entries, "; 61 kernels for other keys of the column, 19 generated, 42 not\n");
  ASSERT_CONTAINS(entries, "\nfill_.Scalar Customized unstructured generated: key QuantizedPrivateUse1: "
                           "kernel musa_FillQuantizedScalar\n");
  ASSERT_CONTAINS(entries, "\n_to_sparse.sparse_dim Legacy unstructured not generated: key "
                           "SparseCsrPrivateUse1: libkdops does not implement '_to_sparse.sparse_dim'\n");
  ASSERT_CONTAINS(entries, " not generated: key NestedTensorPrivateUse1: ");
  free(entries);
  char *c = kd_test_read_file(WORK "/musa/musa_plugin.c");
  ASSERT_CONTAINS(c, "{0, KD_KEY_QUANTIZED_PRIVATEUSE1, \"fill_.Scalar\", ");
  free(c);
  /* What was generated compiles against the installed headers' sources, warning-free. */
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I'%s/include' "
           "-I'%s/../gen/include' -I'" WORK "/musa' '" WORK "/musa/musa_plugin.c' 2>&1",
           KD_SOURCE_DIR, KD_BIN_DIR);
  int status;
  char *out = kd_test_run(cmd, &status);
  if (status != 0) fail_msg("the generated musa_plugin.c does not compile:\n%.4000s", out);
  free(out);
}

int main(void) {
  mkdir(WORK, 0755);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fakegen),
      cmocka_unit_test(test_unbound),
      cmocka_unit_test(test_bad_key),
      cmocka_unit_test(test_torch_musa),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
