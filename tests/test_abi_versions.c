/*
 * test_abi_versions.c: the one versioning rule of the interface structs
 * (kd/version.h), and KD_LIBRARY_IMPL_ID.
 *
 * A plugin built against the version-1 structs, loaded with dlopen, is in
 * tests/abi_v1/.
 */
#include "kd_test.h"

/* ---- Several KD_LIBRARY_IMPL blocks for one (namespace, key) ---------------- */

static kd_status k_one(const kd_call *call, const kd_arg *args, kd_value *rets) {
  (void)call;
  rets[0] = kd_value_int(args[0].i + 1);
  return KD_OK;
}
static kd_status k_two(const kd_call *call, const kd_arg *args, kd_value *rets) {
  (void)call;
  rets[0] = kd_value_int(args[0].i + 2);
  return KD_OK;
}
static kd_status k_three(const kd_call *call, const kd_arg *args, kd_value *rets) {
  (void)call;
  rets[0] = kd_value_int(args[0].i + 3);
  return KD_OK;
}

KD_LIBRARY(abiid, m) {
  kd_library_def(m, "one(int x) -> int", NULL, 0, NULL);
  kd_library_def(m, "two(int x) -> int", NULL, 0, NULL);
  kd_library_def(m, "three(int x) -> int", NULL, 0, NULL);
}
/* The three-argument form and two blocks with ids, all for (abiid, CatchAll). */
KD_LIBRARY_IMPL(abiid, CATCH_ALL, m) {
  kd_kernel k = kd_kernel_unboxed(k_one, "(int) -> int");
  kd_library_impl(m, "one", &k, NULL);
}
KD_LIBRARY_IMPL_ID(abiid, CATCH_ALL, second, m) {
  kd_kernel k = kd_kernel_unboxed(k_two, "(int) -> int");
  kd_library_impl(m, "two", &k, NULL);
}
KD_LIBRARY_IMPL_ID(abiid, CATCH_ALL, third, m) {
  kd_kernel k = kd_kernel_unboxed(k_three, "(int) -> int");
  kd_library_impl(m, "three", &k, NULL);
}

static int64_t call_int(const char *name, int64_t x) {
  kd_op *op;
  KD_ASSERT_OK(kd_op_find(name, "", &op));
  kd_arg a[1] = {{.i = x}};
  kd_value r = kd_value_none();
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  return r.u.i;
}

typedef struct where_ud {
  char debug[3][256];
  int n;
} where_ud;
static int note_where(const kd_kernel_info *info, void *ud) {
  where_ud *w = ud;
  if (w->n < 3) snprintf(w->debug[w->n++], sizeof w->debug[0], "%s", info->debug);
  return 0;
}

static void test_impl_blocks_with_ids(void **state) {
  (void)state;
  /* Every block registered: each operator runs its own block's kernel. */
  assert_int_equal(call_int("abiid::one", 10), 11);
  assert_int_equal(call_int("abiid::two", 10), 12);
  assert_int_equal(call_int("abiid::three", 10), 13);
  /* The descriptors: one symbol per block, the id in version 2's field. */
  assert_int_equal(kd_library_impl_abiid_CATCH_ALL.api_version, KD_LIBRARY_DESC_API_VERSION);
  assert_null(kd_library_impl_abiid_CATCH_ALL.id);
  KD_ASSERT_STR_EQ(kd_library_impl_abiid_CATCH_ALL_second.id, "second");
  KD_ASSERT_STR_EQ(kd_library_impl_abiid_CATCH_ALL_third.id, "third");
  assert_int_equal(kd_library_impl_abiid_CATCH_ALL_third.key, KD_KEY_CATCH_ALL);
  KD_ASSERT_STR_EQ(kd_library_impl_abiid_CATCH_ALL_third.ns, "abiid");
  /* The id is in where the kernel was registered. */
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("abiid::three", "", &op));
  where_ud w = {.n = 0};
  kd_op_kernels_foreach(op, note_where, &w);
  assert_int_equal(w.n, 1);
  char expect[256];
  snprintf(expect, sizeof expect, "%s:%d (id third)", kd_library_impl_abiid_CATCH_ALL_third.file,
           kd_library_impl_abiid_CATCH_ALL_third.line);
  KD_ASSERT_STR_EQ(w.debug[0], expect);
  KD_ASSERT_OK(kd_op_find("abiid::one", "", &op));
  w.n = 0;
  kd_op_kernels_foreach(op, note_where, &w);
  assert_null(strstr(w.debug[0], "(id"));
  /* Closing one block releases its kernels only. */
  kd_library_close_desc(&kd_library_impl_abiid_CATCH_ALL_second);
  KD_ASSERT_OK(kd_op_find("abiid::two", "", &op));
  kd_arg a[1] = {{.i = 1}};
  kd_value r = kd_value_none();
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL, "abiid::two");
  assert_int_equal(call_int("abiid::three", 1), 4);
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_impl_abiid_CATCH_ALL_second));
  assert_int_equal(call_int("abiid::two", 1), 3);
}

/* ---- Versions: 1 to current accepted, 0 and current + 1 refused ------------- */

static void noop_body(kd_library *lib) { (void)lib; }
static int body_runs;
static void counting_body(kd_library *lib) {
  body_runs++;
  KD_ASSERT_OK(kd_library_def(lib, "ping(int x) -> int", NULL, 0, NULL));
}

static void test_library_desc_versions(void **state) {
  (void)state;
  kd_library_desc d = {KD_LIBRARY_DESC_API_VERSION, KD_LIBRARY_FRAGMENT, "abivd",
                       KD_KEY_UNDEFINED, noop_body, "x.c", 1, NULL};
  d.api_version = 0;
  KD_ASSERT_ERR(kd_library_open_desc(&d), KD_EINVAL,
                "kd_library_open_desc: kd_library_desc api_version 0 is not supported: this "
                "library accepts 1 to 2 (KD_LIBRARY_DESC_API_VERSION); was api_version left "
                "unset?");
  d.api_version = KD_LIBRARY_DESC_API_VERSION + 1;
  char msg[200];
  snprintf(msg, sizeof msg,
           "kd_library_desc api_version %d is not supported: this library accepts 1 to %d "
           "(KD_LIBRARY_DESC_API_VERSION); was it built against a newer kdispatch?",
           KD_LIBRARY_DESC_API_VERSION + 1, KD_LIBRARY_DESC_API_VERSION);
  KD_ASSERT_ERR(kd_library_open_desc(&d), KD_EINVAL, msg);
  d.api_version = KD_LIBRARY_DESC_API_VERSION;
  d.body = NULL;
  KD_ASSERT_ERR(kd_library_open_desc(&d), KD_EINVAL,
                "the descriptor of 'abivd' at x.c:1 has no body");

  /* A version-1 descriptor in a block of exactly its own size: reading
   * version 2's id would read past it (AddressSanitizer reports it). */
  size_t v1 = offsetof(kd_library_desc, id);
  kd_library_desc full = {1, KD_LIBRARY_DEF, "abivone", KD_KEY_UNDEFINED, counting_body,
                          "v1.c", 7, NULL};
  kd_library_desc *p = malloc(v1);
  assert_non_null(p);
  memcpy(p, &full, v1);
  body_runs = 0;
  KD_ASSERT_OK(kd_library_open_desc(p));
  assert_int_equal(body_runs, 1);
  KD_ASSERT_OK(kd_library_open_desc(p)); /* opened already: nothing */
  assert_int_equal(body_runs, 1);
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("abivone::ping", "", &op));
  assert_non_null(kd_op_schema(op));
  kd_library_close_desc(p);
  assert_null(kd_op_schema(op));
  free(p);
}

static kd_status k_boxed(const kd_call *call, kd_stack *stack) {
  (void)call;
  (void)stack;
  return KD_OK;
}

static void test_kernel_and_keyed_versions(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "abivk", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "abivk", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor x) -> Tensor", NULL, 0, NULL));
  kd_kernel k = kd_kernel_boxed(k_boxed);
  k.api_version = KD_KERNEL_API_VERSION + 1;
  KD_ASSERT_ERR(kd_library_impl(cpu, "f", &k, NULL), KD_EINVAL,
                "kd_kernel api_version 2 is not supported: this library accepts only 1 "
                "(KD_KERNEL_API_VERSION)");
  KD_ASSERT_ERR(kd_library_fallback(cpu, &k, NULL), KD_EINVAL,
                "kd_kernel api_version 2 is not supported");
  k.api_version = KD_KERNEL_API_VERSION;
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_API_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32),
                          &k, 0, -1, NULL, NULL};
  spec.api_version = 0;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "f", &spec, NULL), KD_EINVAL,
                "kd_library_impl_keyed(f, CPU): kd_keyed_kernel api_version 0 is not supported: "
                "this library accepts only 1 (KD_KEYED_KERNEL_API_VERSION); was api_version "
                "left unset?");
  spec.api_version = KD_KEYED_KERNEL_API_VERSION + 1;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "f", &spec, NULL), KD_EINVAL,
                "kd_keyed_kernel api_version 2 is not supported");
  /* Version 1 (the current one) of both is accepted. */
  spec.api_version = 1;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "f", &spec, NULL));
  kd_library_close(cpu);
  kd_library_close(def);
}

static void test_allocator_versions_refused(void **state) {
  (void)state;
  kd_allocator a;
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_CPU, &a));
  a.api_version = 0;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_PRIVATEUSE3, &a), KD_EINVAL,
                "kd_allocator_set(privateusethree): kd_allocator api_version 0 is not supported: "
                "this library accepts 1 to 2 (KD_ALLOCATOR_API_VERSION)");
  a.api_version = KD_ALLOCATOR_API_VERSION + 1;
  KD_ASSERT_ERR(kd_allocator_set(KD_DEVICE_PRIVATEUSE3, &a), KD_EINVAL,
                "kd_allocator api_version 3 is not supported");
  kd_host_allocator h;
  KD_ASSERT_OK(kd_host_allocator_get(&h));
  h.api_version = 0;
  KD_ASSERT_ERR(kd_host_allocator_set(&h), KD_EINVAL,
                "kd_host_allocator_set: kd_host_allocator api_version 0 is not supported: this "
                "library accepts only 1 (KD_HOST_ALLOCATOR_API_VERSION)");
  h.api_version = KD_HOST_ALLOCATOR_API_VERSION + 1;
  KD_ASSERT_ERR(kd_host_allocator_set(&h), KD_EINVAL,
                "kd_host_allocator api_version 2 is not supported");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_impl_blocks_with_ids),
      cmocka_unit_test(test_library_desc_versions),
      cmocka_unit_test(test_kernel_and_keyed_versions),
      cmocka_unit_test(test_allocator_versions_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
