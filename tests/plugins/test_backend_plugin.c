/* Plugins (kd_backend_load / kd_backend_unload) in a static host: loading
 * and unloading, every refusal with its message, no registration left by a
 * refused or failing plugin, KD_EBUSY while its storage lives, load after
 * unload, and unloading while other threads call the plugin's kernel. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "kd_test.h"
#include "kd_oom.h"

/* The plugins report init, destroy_data and fini here. */
static char events[512];
KD_API void kd_test_plugin_event(const char *what);
void kd_test_plugin_event(const char *what) {
  size_t n = strlen(events);
  snprintf(events + n, sizeof events - n, "%s%s", n ? "," : "", what);
}

KD_LIBRARY(pt, m) {
  kd_library_def(m, "work(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "unloader(Tensor self) -> Tensor", NULL, 0, NULL);
}

/* Every operator's registrations and table, and the dispatcher's check. */
static int dump_one(kd_op *op, void *ud) {
  char *buf = ud;
  size_t n = strlen(buf);
  n += (size_t)snprintf(buf + n, 65536 - n, "== %s\n", kd_op_name(op));
  if (n < 65536) n += kd_op_dump(op, buf + n, 65536 - n);
  if (n < 65536) kd_op_dump_table(op, buf + n, 65536 - n);
  return 0;
}
static char *snapshot(void) {
  char *buf = calloc(1, 65536);
  assert_non_null(buf);
  assert_int_equal(kd_ops_foreach(dump_one, buf), 0);
  KD_ASSERT_OK(kd_dispatcher_check());
  return buf;
}

static kd_tensor *cpu_tensor(void) { return kd_test_tensor_on(KD_DEVICE_CPU); }

static kd_status call1(const char *name, kd_tensor *t) {
  kd_op *op;
  kd_status st = kd_op_find(name, "", &op);
  if (st) return st;
  kd_arg a[1] = {{.t = t}};
  kd_value r = kd_value_none();
  st = (kd_call_unboxed)(op, a, &r);
  kd_value_destroy(&r);
  return st;
}

static void test_load_unload(void **state) {
  (void)state;
  char *before = snapshot();
  kd_tensor *t = cpu_tensor();
  KD_ASSERT_ERR(call1("pt::work", t), KD_ENOKERNEL, "pt::work");
  for (int round = 0; round < 2; round++) { /* load -> unload -> load again */
    events[0] = '\0';
    kd_plugin *p = NULL;
    KD_ASSERT_OK(kd_backend_load(KD_PLUGIN_GOOD, &p));
    assert_non_null(p);
    KD_ASSERT_STR_EQ(kd_plugin_path(p), KD_PLUGIN_GOOD);
    KD_ASSERT_STR_EQ(kd_plugin_name(p), "testplug");
    KD_ASSERT_STR_EQ(events, "init");
    const kd_backend *b = kd_backend_for_device(KD_DEVICE_PRIVATEUSE1);
    assert_non_null(b);
    assert_ptr_equal(kd_backend_plugin(b), p);
    KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "plugdev");
    /* Its kernel for the host's operator, its constructors' operator. */
    KD_ASSERT_OK(call1("pt::work", t));
    KD_ASSERT_OK(call1("plug::hello", t));
    kd_op *extra;
    KD_ASSERT_OK(kd_op_find("plug::extra", "", &extra));
    kd_tensor *d;
    KD_ASSERT_OK(kd_tensor_to_device(t, (kd_device){KD_DEVICE_PRIVATEUSE1, 0}, &d));
    KD_ASSERT_OK(call1("plug::hello", d));
    kd_tensor_release(d);
    KD_ASSERT_OK(kd_dispatcher_check());

    KD_ASSERT_OK(kd_backend_unload(p));
    /* The kernel's data was destroyed before fini. */
    KD_ASSERT_STR_EQ(events, "init,destroy_data,fini");
    assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
    KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "privateuseone");
    kd_op *op;
    KD_ASSERT_ERR(kd_op_find("plug::hello", "", &op), KD_ENOTFOUND, "plug::hello");
    KD_ASSERT_ERR(kd_op_find("plug::extra", "", &op), KD_ENOTFOUND, "plug::extra");
    KD_ASSERT_ERR(call1("pt::work", t), KD_ENOKERNEL, "pt::work");
    char *after = snapshot();
    KD_ASSERT_STR_EQ(after, before);
    free(after);
  }
  kd_tensor_release(t);
  free(before);
}

static void test_refusals(void **state) {
  (void)state;
  char *before = snapshot();
  kd_plugin *p = (kd_plugin *)&p;
  KD_ASSERT_ERR(kd_backend_load(NULL, &p), KD_EINVAL, "NULL path");
  assert_null(p);
  KD_ASSERT_ERR(kd_backend_load("/nonexistent/kd_plugin.so", &p), KD_ENOTFOUND,
                "cannot open the plugin /nonexistent/kd_plugin.so: /nonexistent/kd_plugin.so: "
                "cannot open shared object file");
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_NOENTRY, &p), KD_ENOTFOUND,
                "plugin_noentry.so is not a kdispatch plugin: it has no entry point "
                "'kd_plugin_entry'");
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_NULLDESC, &p), KD_EUNSUPPORTED,
                "plugin_nulldesc.so refused to load into this host (its entry point returned "
                "NULL for host plugin API version 1)");
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_BADVER, &p), KD_EUNSUPPORTED,
                "plugin_badver.so was built for plugin API version 99; this host accepts 1..1");
  assert_null(p);
  kd_op *op;
  KD_ASSERT_ERR(kd_op_find("plugn::hello", "", &op), KD_ENOTFOUND, "plugn::hello");
  KD_ASSERT_ERR(kd_op_find("plugv::hello", "", &op), KD_ENOTFOUND, "plugv::hello");
  char *after = snapshot();
  KD_ASSERT_STR_EQ(after, before);
  free(after);

  /* A device type taken: the second plugin is refused, names the file and
   * both backends, and leaves nothing. */
  kd_plugin *good;
  KD_ASSERT_OK(kd_backend_load(KD_PLUGIN_GOOD, &good));
  char *with_good = snapshot();
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_TAKEN, &p), KD_EEXIST,
                "the init of the plugin 'testplug' failed: plugin " KD_PLUGIN_TAKEN
                ": kd_backend_register: backend 'plugdev' for device type privateuseone: the "
                "type already has the backend 'plugdev'");
  assert_null(p);
  KD_ASSERT_ERR(kd_op_find("plugt::hello", "", &op), KD_ENOTFOUND, "plugt::hello");
  after = snapshot();
  KD_ASSERT_STR_EQ(after, with_good);
  free(after);
  free(with_good);
  KD_ASSERT_OK(kd_backend_unload(good));

  /* An init that fails after registering a backend, kernels and (through
   * its constructors) a library: none of it stays, fini is not called. */
  events[0] = '\0';
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_FAILINIT, &p), KD_EINVAL,
                "the init of the plugin " KD_PLUGIN_FAILINIT
                " ('testplug') failed: the test plugin's init fails on purpose");
  KD_ASSERT_STR_EQ(events, "init,destroy_data");
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE2));
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE2), "privateusetwo");
  KD_ASSERT_ERR(kd_op_find("plugf::hello", "", &op), KD_ENOTFOUND, "plugf::hello");
  after = snapshot();
  KD_ASSERT_STR_EQ(after, before);
  free(after);

  /* A registration of its constructors fails: the load fails (a constructor
   * cannot), naming the library, before init; nothing stays. */
  events[0] = '\0';
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_BADCTOR, &p), KD_ESYNTAX,
                "kd_backend_load: the plugin " KD_PLUGIN_BADCTOR
                " is not loaded: a registration failed: the library of 'plugb' at ");
  assert_non_null(strstr(kd_last_error(), "plugin.c:"));
  assert_null(p);
  KD_ASSERT_STR_EQ(events, "");
  KD_ASSERT_ERR(kd_op_find("plugb::hello", "", &op), KD_ENOTFOUND, "plugb::hello");
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE2));
  after = snapshot();
  KD_ASSERT_STR_EQ(after, before);
  free(after);

  free(before);
  KD_ASSERT_ERR(kd_backend_unload(NULL), KD_EINVAL, "NULL plugin");
  /* A handle already unloaded (or never loaded) is not touched. */
  KD_ASSERT_ERR(kd_backend_unload(good), KD_EINVAL, "is not a loaded plugin");
}

/* A plugin linked with libkdispatch.so in this static host: a second copy of
 * the library, refused, naming both copies; nothing is left. */
static void test_second_copy(void **state) {
  (void)state;
  char *before = snapshot();
  kd_plugin *p;
  KD_ASSERT_ERR(kd_backend_load(KD_PLUGIN_LINKED, &p), KD_EUNSUPPORTED,
                "kd_backend_load: the plugin " KD_PLUGIN_LINKED
                " brings a second copy of libkdispatch (");
  assert_non_null(strstr(kd_last_error(), "libkdispatch.so"));
  assert_non_null(strstr(kd_last_error(), "test_backend_plugin: its registrations would go"));
  assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE3));
  kd_op *op;
  KD_ASSERT_ERR(kd_op_find("plugl::hello", "", &op), KD_ENOTFOUND, "plugl::hello");
  char *after = snapshot();
  KD_ASSERT_STR_EQ(after, before);
  free(after);
  free(before);
}

static void test_busy(void **state) {
  (void)state;
  kd_plugin *p;
  KD_ASSERT_OK(kd_backend_load(KD_PLUGIN_GOOD, &p));
  kd_tensor *d;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){4}, KD_FLOAT32, (kd_device){KD_DEVICE_PRIVATEUSE1, 0}, &d));
  KD_ASSERT_ERR(kd_backend_unload(p), KD_EBUSY,
                "plugin_good.so ('testplug') is in use: 1 storage made with the allocator of its "
                "backend 'plugdev' is alive; free them first");
  /* Nothing changed. */
  KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "plugdev");
  KD_ASSERT_OK(call1("plug::hello", d));
  kd_tensor_release(d);
  KD_ASSERT_OK(kd_backend_unload(p));
}

/* kd_backend_unload from inside a kernel is refused. */
static kd_plugin *inner_plugin;
static kd_status inner_status;
static kd_status unloader(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  inner_status = kd_backend_unload(inner_plugin);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static void test_unload_inside_call(void **state) {
  (void)state;
  kd_library *impl = kd_test_open_lib(KD_LIBRARY_IMPL, "pt", KD_KEY_CPU);
  kd_kernel k = kd_kernel_unboxed(unloader, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(impl, "unloader", &k, NULL));
  KD_ASSERT_OK(kd_backend_load(KD_PLUGIN_GOOD, &inner_plugin));
  kd_tensor *t = cpu_tensor();
  KD_ASSERT_OK(call1("pt::unloader", t));
  assert_int_equal(inner_status, KD_ESTATE);
  assert_non_null(strstr(kd_last_error(), "cannot unload a plugin from inside an operator call"));
  KD_ASSERT_OK(call1("pt::work", t));
  KD_ASSERT_OK(kd_backend_unload(inner_plugin));
  kd_tensor_release(t);
  kd_library_close(impl);
}

/* Threads call the plugin's kernel while the main thread loads and unloads
 * it: every call returns KD_OK (the plugin's kernel ran, on its live data)
 * or KD_ENOKERNEL; nothing crashes (ThreadSanitizer runs this too). */
static atomic_bool stop;
static atomic_long ok_calls, missing_calls;
static void *caller(void *arg) {
  (void)arg;
  kd_tensor *t = cpu_tensor();
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("pt::work", "", &op));
  while (!atomic_load(&stop)) {
    kd_arg a[1] = {{.t = t}};
    kd_value r = kd_value_none();
    kd_status st = (kd_call_unboxed)(op, a, &r);
    if (st == KD_OK) {
      kd_tensor *got = NULL;
      KD_ASSERT_OK(kd_value_get_tensor(&r, &got));
      assert_ptr_equal(got, t);
      atomic_fetch_add(&ok_calls, 1);
    } else if (st == KD_ENOKERNEL) {
      atomic_fetch_add(&missing_calls, 1);
    } else {
      fail_msg("pt::work returned %s: %s", kd_status_name(st), kd_last_error());
    }
    kd_value_destroy(&r);
  }
  kd_tensor_release(t);
  return NULL;
}

static void test_unload_under_load(void **state) {
  (void)state;
  enum { THREADS = 3, CYCLES = 40 };
  pthread_t th[THREADS];
  atomic_store(&stop, false);
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, caller, NULL), 0);
  for (int c = 0; c < CYCLES; c++) {
    kd_plugin *p;
    KD_ASSERT_OK(kd_backend_load(KD_PLUGIN_GOOD, &p));
    long seen = atomic_load(&ok_calls);
    /* Let the callers reach the plugin's kernel (bounded wait). */
    for (int spin = 0; spin < 100000 && atomic_load(&ok_calls) == seen; spin++) sched_yield();
    KD_ASSERT_OK(kd_backend_unload(p));
    long gone = atomic_load(&missing_calls);
    for (int spin = 0; spin < 100000 && atomic_load(&missing_calls) == gone; spin++) sched_yield();
  }
  atomic_store(&stop, true);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  assert_true(atomic_load(&ok_calls) > 0);
  assert_true(atomic_load(&missing_calls) > 0);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* Every allocation of a load fails in turn: each failure is KD_ENOMEM with
 * a message and leaves the registry, the device type and its allocator as
 * they were; the first run that fires nothing loads the plugin. */
static void test_load_out_of_memory(void **state) {
  (void)state;
  char *before = snapshot();
  kd_oom_install();
  long n;
  for (n = 1;; n++) {
    kd_oom_arm(n);
    kd_plugin *p = NULL;
    kd_status st = kd_backend_load(KD_PLUGIN_GOOD, &p);
    bool fired = kd_oom_fired();
    kd_oom_disarm();
    if (st == KD_OK) {
      /* Loaded means whole: what its constructors and init register. */
      kd_op *op;
      KD_ASSERT_OK(kd_op_find("plug::hello", "", &op));
      KD_ASSERT_OK(kd_op_find("plug::extra", "", &op));
      kd_tensor *t = cpu_tensor();
      KD_ASSERT_OK(call1("plug::hello", t));
      KD_ASSERT_OK(call1("pt::work", t));
      kd_tensor_release(t);
      assert_non_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
      KD_ASSERT_OK(kd_backend_unload(p));
      if (!fired) break;
      continue;
    }
    if (st != KD_ENOMEM || !kd_last_error()[0])
      fail_msg("allocation %ld: kd_backend_load returned %s: %s", n, kd_status_name(st),
               kd_last_error());
    assert_null(p);
    assert_null(kd_backend_for_device(KD_DEVICE_PRIVATEUSE1));
    KD_ASSERT_STR_EQ(kd_device_type_name(KD_DEVICE_PRIVATEUSE1), "privateuseone");
    char *after = snapshot();
    if (strcmp(after, before) != 0)
      fail_msg("allocation %ld failed (%s) and changed the registry:\n%s\n---\n%s", n,
               kd_last_error(), before, after);
    free(after);
  }
  kd_oom_uninstall();
  print_message("kd_backend_load: %ld allocation failure points, each refused cleanly\n", n - 1);
  assert_true(n > 10);
  free(before);
}

/* "second-copy" runs test_second_copy alone (its own CTest test: two copies
 * of the library's globals in one process are an ODR violation that
 * AddressSanitizer reports, which that test turns off); else the rest. */
int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "second-copy")) {
    const struct CMUnitTest one[] = {cmocka_unit_test(test_second_copy)};
    return cmocka_run_group_tests(one, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_unload),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_busy),
      cmocka_unit_test(test_unload_inside_call),
      cmocka_unit_test(test_load_out_of_memory),
      cmocka_unit_test(test_unload_under_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
