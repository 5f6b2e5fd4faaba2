/*
 * test_abi_v1.c: a plugin built against the version-1 kd_library_desc and
 * kd_allocator (tests/abi_v1/plugin.c, with the frozen kd_abi_v1.h) loads
 * and registers through this version's library, which reads only the
 * version-1 fields: the plugin puts garbage where version 2's fields would
 * be (an id string, copy functions that abort), and none of it shows.
 */
#include <dlfcn.h>

#include "kd_test.h"

typedef kd_status (*open_fn)(void);
typedef void (*close_fn)(void);
typedef int (*int_fn)(void);

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) fail_msg("%s: %s", name, dlerror());
  return p;
}

/* dlsym's object pointer into a function pointer (POSIX guarantees it works;
 * ISO C has no cast for it). */
#define LOOKUP(h, var, name)         \
  do {                               \
    void *p_ = sym(h, name);         \
    memcpy(&(var), &p_, sizeof(var)); \
  } while (0)

static void test_v1_plugin_loads(void **state) {
  (void)state;
  void *h = dlopen(KD_ABI_V1_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!h) fail_msg("dlopen %s: %s", KD_ABI_V1_PLUGIN, dlerror());
  open_fn open;
  close_fn close;
  int_fn get_allocator, allocs, frees;
  LOOKUP(h, open, "abi_v1_open");
  LOOKUP(h, close, "abi_v1_close");
  LOOKUP(h, get_allocator, "abi_v1_get_allocator");
  LOOKUP(h, allocs, "abi_v1_allocs");
  LOOKUP(h, frees, "abi_v1_frees");

  KD_ASSERT_OK(open());

  /* The version-1 descriptor registered its operator; its garbage id was
   * not read (it would be in the registration's place, "(id GARBAGE)"). */
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("abiv1::triple", "", &op));
  assert_non_null(kd_op_schema(op));
  char dump[2048];
  kd_op_dump(op, dump, sizeof dump);
  if (!strstr(dump, "def registered at plugin.c:42\n")) fail_msg("dump:\n%s", dump);
  assert_null(strstr(dump, "GARBAGE"));

  /* The version-1 allocator: its copy functions read as NULL (the garbage
   * after the struct would abort), so tensors cannot be moved there, but
   * they are allocated through it. */
  kd_allocator a;
  memset(&a, 0x5A, sizeof a);
  KD_ASSERT_OK(kd_allocator_get(KD_DEVICE_PRIVATEUSE3, &a));
  assert_int_equal(a.api_version, KD_ALLOCATOR_API_VERSION);
  assert_null(a.copy_to_host);
  assert_null(a.copy_from_host);
  assert_non_null(a.alloc);
  /* The exported kd_allocator_get, which the plugin calls as a version-1
   * caller, writes only the version-1 fields. */
  assert_int_equal(get_allocator(), 1);

  int64_t sizes[1] = {4};
  kd_tensor *t, *moved;
  kd_device dev = {KD_DEVICE_PRIVATEUSE3, 0};
  KD_ASSERT_OK(kd_tensor_empty(1, sizes, KD_FLOAT32, dev, &t));
  assert_int_equal(allocs(), 1);
  kd_tensor *c;
  KD_ASSERT_OK(kd_tensor_empty(1, sizes, KD_FLOAT32, kd_device_cpu(), &c));
  KD_ASSERT_ERR(kd_tensor_to_device(c, dev, &moved), KD_EUNSUPPORTED, "privateusethree");
  kd_tensor_release(c);
  kd_tensor_release(t);
  assert_int_equal(frees(), 1);

  close();
  assert_null(kd_op_schema(op));
  KD_ASSERT_ERR(kd_allocator_get(KD_DEVICE_PRIVATEUSE3, &a), KD_ENOTFOUND, "no allocator");
  assert_int_equal(dlclose(h), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v1_plugin_loads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
