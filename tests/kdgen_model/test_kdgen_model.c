/*
 * kdgen's backend model through its C interface (tools/kdgen/backend.h), as
 * the generation reads it: tests/kdgen/backend/valid.yaml against
 * upstream.yaml (every strategy and kind, a new operator, two operators
 * upstream's autogen: generates). Checks what each entry points at and
 * carries: the upstream function, the kernel, the dispatch as written,
 * device_check / device_guard as written, the group a delegate follows, the
 * derived schemas, the strategies of the backend's other keys, the options'
 * defaults. Built when kdgen is (KD_BUILD_OPS).
 */
#include <unistd.h>

#include "backend.h"
#include "kd_test.h"

#define FIX KD_SOURCE_DIR "/tests/kdgen/backend/"

static kdg_file g_src;
static kdg_backend g_b;

static int setup(void **state) {
  (void)state;
  kdg_diag d = {0, 0, 0};
  if (kdg_load(FIX "upstream.yaml", KD_SOURCE_DIR "/ops/tags.yaml", &g_src, &d) != 0) return -1;
  if (kdg_validate(&g_src, &d) != 0) return -1;
  if (kdg_backend_load(FIX "valid.yaml", &g_src, NULL, &g_b, &d) != 0) return -1;
  return d.errors == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  kdg_backend_free(&g_b);
  kdg_file_free(&g_src);
  return 0;
}

static const kdg_bentry *entry(const char *written) {
  for (size_t i = 0; i < g_b.nentries; i++)
    if (!strcmp(g_b.entries[i].written, written)) return &g_b.entries[i];
  fail_msg("no entry '%s'", written);
  return NULL;
}

static void test_options_defaults(void **state) {
  (void)state;
  KD_ASSERT_STR_EQ(g_b.opts.key, "PrivateUse1");
  KD_ASSERT_STR_EQ(g_b.opts.name, "privateuse1");
  KD_ASSERT_STR_EQ(g_b.opts.prefix, "privateuse1_");
  KD_ASSERT_STR_EQ(g_b.opts.ns, "privateuse1");
  assert_int_equal(g_b.nentries, 15);
  KD_ASSERT_STR_EQ(kdg_strategy_name(KDG_STRATEGY_LEGACY_META), "LegacyMeta");
  KD_ASSERT_STR_EQ(kdg_strategy_name(KDG_STRATEGY_NONE), "none");
}

static void test_upstream_entries(void **state) {
  (void)state;
  const kdg_bentry *e = entry("abs.out");
  assert_ptr_equal(e->up, kdg_find(&g_src, "abs.out"));
  assert_int_equal(e->line, 7);
  assert_int_equal(e->strategy, KDG_STRATEGY_LEGACY);
  assert_true(e->structured);
  assert_null(e->kernel);
  assert_false(e->is_new);
  assert_false(e->is_autogen);
  assert_int_equal(e->device_guard, -1);
  assert_null(e->device_check);

  e = entry("abs_");
  assert_ptr_equal(e->group_out, kdg_find(&g_src, "abs.out"));
  assert_int_equal(e->strategy, KDG_STRATEGY_LEGACY);

  e = entry("sum.IntList_out");
  KD_ASSERT_STR_EQ(e->kernel, "fake_sum_out");
  assert_int_equal(e->strategy, KDG_STRATEGY_LEGACY_META);
  e = entry("sum.dim_IntList");
  assert_ptr_equal(e->group_out, kdg_find(&g_src, "sum.IntList_out"));
  assert_int_equal(e->strategy, KDG_STRATEGY_LEGACY_META);
  assert_null(e->kernel);

  e = entry("pow.Tensor_Scalar_out");
  KD_ASSERT_STR_EQ(e->structured_inherits, "TensorIteratorBase");
  assert_int_equal(e->strategy, KDG_STRATEGY_CUSTOMIZED);
  assert_true(e->structured);

  e = entry("add.out");
  assert_false(e->structured);
  assert_int_equal(e->strategy, KDG_STRATEGY_CUSTOMIZED);
  e = entry("add.Tensor");
  assert_null(e->group_out); /* its own kernel: unstructured */
  assert_false(e->structured);

  e = entry("view_as_real");
  KD_ASSERT_STR_EQ(e->device_check, "ExactSame");
  assert_int_equal(e->strategy, KDG_STRATEGY_LEGACY);

  e = entry("cumsum");
  assert_int_equal(e->device_guard, 1);
  assert_int_equal(e->ndispatch, 2); /* "PrivateUse1, AutogradPrivateUse1: fake_cumsum" */
  KD_ASSERT_STR_EQ(e->dispatch[1].key, "AutogradPrivateUse1");
  KD_ASSERT_STR_EQ(e->dispatch[1].kernel, "fake_cumsum");
  assert_int_equal(kdg_bentry_key_strategy(&g_b, e, "AutogradPrivateUse1"),
                   KDG_STRATEGY_CUSTOMIZED);
  assert_int_equal(kdg_bentry_key_strategy(&g_b, e, "SparsePrivateUse1"), KDG_STRATEGY_NONE);

  e = entry("relu");
  assert_int_equal(e->strategy, KDG_STRATEGY_NONE);
  assert_null(e->kernel);
  assert_int_equal(kdg_bentry_key_strategy(&g_b, e, "QuantizedPrivateUse1"),
                   KDG_STRATEGY_CUSTOMIZED);
}

static void test_own_operators(void **state) {
  (void)state;
  assert_int_equal(g_b.own.nfuncs, 3);
  const kdg_bentry *e = entry("fake_fill");
  assert_true(e->is_new);
  assert_ptr_equal(e->up, &g_b.own.funcs[2]);
  KD_ASSERT_STR_EQ(e->up->func, "fake_fill(Tensor self, Scalar value) -> Tensor");
  KD_ASSERT_STR_EQ(e->kernel, "fake_fill");

  e = entry("relu.out");
  assert_true(e->is_autogen);
  assert_ptr_equal(e->autogen_of, kdg_find(&g_src, "relu"));
  char buf[512];
  kd_schema_format(e->up->schema, buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  assert_int_equal(e->up->kind, KDG_OUT);

  e = entry("_fill_stats_functional");
  assert_ptr_equal(e->autogen_of, kdg_find(&g_src, "_fill_stats"));
  kd_schema_format(e->up->schema, buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "_fill_stats_functional(Tensor input, Tensor running) -> (Tensor, "
                        "Tensor running_out)");
  assert_int_equal(e->up->kind, KDG_FUNCTIONAL);
  assert_int_equal(kdg_bentry_key_strategy(&g_b, e, "PrivateUse1"), KDG_STRATEGY_CUSTOMIZED);
}

/* The out= variant _fill_stats.out (from a mutable operator) and options. */
static void test_mutable_out_and_options(void **state) {
  (void)state;
  char path[] = "/tmp/kd-kdgen-model-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] = "- func: _fill_stats.out\n  dispatch:\n    PrivateUse2: fake_fill_stats_out\n";
  assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
  close(fd);
  kdg_backend b;
  kdg_diag d = {0, 0, 0};
  kdg_backend_opts o = {"PrivateUse2", "fakedev", NULL, NULL};
  int rc = kdg_backend_load(path, &g_src, &o, &b, &d);
  unlink(path);
  assert_int_equal(rc, 0);
  KD_ASSERT_STR_EQ(b.opts.prefix, "fakedev_");
  KD_ASSERT_STR_EQ(b.opts.ns, "fakedev");
  assert_int_equal(b.nentries, 1);
  char buf[512];
  kd_schema_format(b.entries[0].up->schema, buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "_fill_stats.out(Tensor input, Tensor(a!) running, *, Tensor(b!) out) -> "
                        "Tensor(b!)");
  assert_int_equal(b.entries[0].strategy, KDG_STRATEGY_CUSTOMIZED);
  kdg_backend_free(&b);
  kdg_backend_free(&b); /* a freed backend is zeroed: freeing again is fine */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_defaults),
      cmocka_unit_test(test_upstream_entries),
      cmocka_unit_test(test_own_operators),
      cmocka_unit_test(test_mutable_out_and_options),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
