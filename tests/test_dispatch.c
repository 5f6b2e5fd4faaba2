/* The dispatcher: registration, tables, keys, kernels of every form, errors. */
#include "kd_test.h"
#include "dispatch/reclaim.h"

/* ---- Helpers ------------------------------------------------------------------ */

/* Which kernels ran, in order: "cpu,tracer,...". */
static char ran[512];
static void mark(const char *what) {
  size_t n = strlen(ran);
  snprintf(ran + n, sizeof ran - n, "%s%s", n ? "," : "", what);
}

static char warnings[2048];
static void on_warning(const char *msg, void *ud) {
  (void)ud;
  snprintf(warnings, sizeof warnings, "%s", msg);
}

static kd_tensor *tensor_on(kd_device_type type) {
  kd_tensor *t;
  if (type == KD_DEVICE_CPU || type == KD_DEVICE_META) {
    kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){type, 0}, &t);
  } else {
    /* A device without an allocator: wrap bytes we own, as a backend would. */
    static float fake[4];
    kd_storage *s;
    kd_storage_wrap((kd_device){type, 0}, fake, sizeof fake, NULL, NULL, &s);
    kd_tensor_from_storage(s, 0, 1, (int64_t[]){2}, (int64_t[]){1}, KD_FLOAT32, &t);
    kd_storage_release(s);
  }
  return t;
}

/* Unboxed kernels of "(Tensor) -> Tensor": return the input, mark. */
#define ID_KERNEL(name, label)                                             \
  static kd_status name(const kd_call *c, const kd_arg *a, kd_value *r) { \
    (void)c;                                                               \
    mark(label);                                                           \
    r[0] = kd_value_tensor(a[0].t);                                        \
    return KD_OK;                                                          \
  }
ID_KERNEL(k_cpu, "cpu")
ID_KERNEL(k_cpu2, "cpu2")
ID_KERNEL(k_explicit, "explicit")
ID_KERNEL(k_implicit, "implicit")

/* A mode kernel: mark, then redispatch below its key. */
static kd_status k_tracer(const kd_call *c, const kd_arg *a, kd_value *r) {
  mark("tracer");
  return kd_redispatch_unboxed(c, a, r);
}
static kd_status k_profiler(const kd_call *c, const kd_arg *a, kd_value *r) {
  mark("profiler");
  return kd_redispatch_unboxed(c, a, r);
}
/* A boxed fallback for a mode key: works on any operator. */
static kd_status fb_tracer(const kd_call *c, kd_stack *s) {
  char m[128];
  snprintf(m, sizeof m, "fb_tracer(%s)", kd_op_name(c->op));
  mark(m);
  return kd_redispatch_boxed(c, s);
}

static const char *SIG1 = "(Tensor) -> Tensor";

/* Calls op on t typed; returns the status; checks the identity result. */
static kd_status call1(kd_op *op, kd_tensor *t) {
  kd_arg a[1] = {{.t = t}};
  kd_value r[1] = {kd_value_none()};
  kd_status st = kd_call_unboxed(op, a, r);
  if (st == KD_OK) {
    assert_int_equal(r[0].tag, KD_VALUE_TENSOR);
    assert_ptr_equal(r[0].u.t, t);
  }
  kd_value_destroy(&r[0]);
  return st;
}

/* The same call, boxed. */
static kd_status call1_boxed(kd_op *op, kd_tensor *t) {
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(t);
  kd_stack_push(&s, &v);
  kd_status st = kd_call_boxed(op, &s);
  if (st == KD_OK) {
    assert_int_equal(s.size, 1);
    assert_ptr_equal(s.items[0].u.t, t);
  }
  kd_stack_free(&s);
  return st;
}

/* ---- Tests ---------------------------------------------------------------------- */

static void test_keys(void **state) {
  (void)state;
  KD_ASSERT_STR_EQ(kd_dispatch_key_name(KD_KEY_CPU), "CPU");
  KD_ASSERT_STR_EQ(kd_dispatch_key_name(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD),
                   "CompositeImplicitAutograd");
  KD_ASSERT_STR_EQ(kd_dispatch_key_name((kd_dispatch_key)33), "Invalid"); /* reserved bit */
  kd_dispatch_key k;
  KD_ASSERT_OK(kd_dispatch_key_from_name("Tracer", &k));
  assert_int_equal(k, KD_KEY_TRACER);
  KD_ASSERT_OK(kd_dispatch_key_from_name("CatchAll", &k));
  assert_int_equal(k, KD_KEY_CATCH_ALL);
  KD_ASSERT_ERR(kd_dispatch_key_from_name("GPU", &k), KD_ENOTFOUND,
                "unknown dispatch key 'GPU': expected one of Undefined, CPU");
  assert_true(kd_dispatch_key_is_runtime(KD_KEY_META));
  assert_false(kd_dispatch_key_is_runtime(KD_KEY_CATCH_ALL));
  assert_true(kd_dispatch_key_is_alias(KD_KEY_CATCH_ALL));
  assert_true(kd_keyset_highest(0) == KD_KEY_UNDEFINED);
  assert_true(kd_keyset_highest(kd_keyset_of(KD_KEY_CPU) | kd_keyset_of(KD_KEY_TRACER)) ==
              KD_KEY_TRACER);
  assert_true(kd_keyset_below(kd_keyset_of(KD_KEY_CPU) | kd_keyset_of(KD_KEY_TRACER),
                              KD_KEY_TRACER) == kd_keyset_of(KD_KEY_CPU));
  char buf[128];
  kd_keyset_format(kd_keyset_of(KD_KEY_TRACER) | kd_keyset_of(KD_KEY_CPU), buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "[CPU, Tracer]");
  /* The composite keys stand for every backend functionality (PyTorch's
   * backend_dispatch_keyset) and Undefined; the implicit one adds the
   * NestedTensor and autograd keys (math_dispatch_keyset). */
  kd_keyset backend_like = kd_keyset_backends() | kd_keyset_functionality(KD_FUNCTIONALITY_QUANTIZED) |
                           kd_keyset_functionality(KD_FUNCTIONALITY_SPARSE) |
                           kd_keyset_functionality(KD_FUNCTIONALITY_SPARSE_CSR);
  assert_true(kd_dispatch_key_expand(KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD) ==
              (backend_like | kd_keyset_of(KD_KEY_UNDEFINED)));
  assert_true(kd_dispatch_key_expand(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD) ==
              (backend_like | kd_keyset_functionality(KD_FUNCTIONALITY_NESTED_TENSOR) |
               kd_keyset_autograd() | 1));
  assert_int_equal(kd_backend_key(KD_DEVICE_META), KD_KEY_META);
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  /* A tensor carries its backend's Autograd key and ADInplaceOrView. */
  assert_true(kd_tensor_key_set(t) == (kd_keyset_of(KD_KEY_CPU) | kd_keyset_of(KD_KEY_AUTOGRAD_CPU) |
                                       kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW)));
  kd_tensor_release(t);
  /* Renaming a private key. */
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_CPU, "X"), KD_EINVAL, "not a private backend key");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "Tracer"), KD_EEXIST, "taken");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "9x"), KD_EINVAL, "bad key name");
  KD_ASSERT_OK(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "OpenCL"));
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "Vulkan"), KD_EEXIST,
                "already named 'OpenCL'");
  KD_ASSERT_STR_EQ(kd_dispatch_key_name(KD_KEY_PRIVATEUSE2), "OpenCL");
  KD_ASSERT_OK(kd_dispatch_key_from_name("OpenCL", &k));
  assert_int_equal(k, KD_KEY_PRIVATEUSE2);
}

static void test_tls_guards(void **state) {
  (void)state;
  kd_tls_keys g0 = kd_tls_keys_get();
  assert_true(g0.include == 0 && g0.exclude == 0);
  kd_tls_keys g1 = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  kd_tls_keys g2 = kd_tls_include(kd_keyset_of(KD_KEY_PROFILER));
  kd_tls_keys g3 = kd_tls_exclude(kd_keyset_of(KD_KEY_TRACER));
  kd_tls_keys now = kd_tls_keys_get();
  assert_true(now.include == (kd_keyset_of(KD_KEY_TRACER) | kd_keyset_of(KD_KEY_PROFILER)));
  assert_true(now.exclude == kd_keyset_of(KD_KEY_TRACER));
  kd_tls_restore(g3);
  assert_true(kd_tls_keys_get().exclude == 0);
  kd_tls_restore(g2);
  assert_true(kd_tls_keys_get().include == kd_keyset_of(KD_KEY_TRACER));
  kd_tls_restore(g1);
  assert_true(kd_tls_keys_get().include == 0);
}

/* kd_library_def decodes every default: a list default on Any or a type
 * variable used to crash it (a wild pointer in the default decoder). */
static void test_def_generic_list_defaults(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "gdefaults", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Any x=[], t y=[1], Any z=[[2.5], 'a']) -> ()", NULL, 0,
                              NULL));
  KD_ASSERT_ERR(kd_library_def(def, "g(Any x=[1, nope]) -> ()", NULL, 0, NULL), KD_ETYPE,
                "default '[1, nope]' does not fit the type");
  kd_library_close(def);
}

static void test_basic_call_and_missing(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "basic", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "basic", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "ident(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_OK(kd_library_impl(cpu, "ident", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find_typed("basic::ident", "", SIG1, &op));
  KD_ASSERT_STR_EQ(kd_op_name(op), "basic::ident");
  kd_op *same;
  KD_ASSERT_OK(kd_op_find("basic::ident", NULL, &same));
  assert_ptr_equal(op, same);
  kd_tensor *t = tensor_on(KD_DEVICE_CPU), *m = tensor_on(KD_DEVICE_META);
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_OK(call1_boxed(op, t)); /* unboxed kernel called boxed */
  KD_ASSERT_STR_EQ(ran, "cpu,cpu");
  KD_ASSERT_ERR(call1(op, m), KD_ENOKERNEL,
                "Could not run 'basic::ident' with arguments from the 'Meta' backend");
  /* A NULL where a Tensor belongs carries no keys: an error, not a crash. */
  {
    kd_arg na[1] = {{.t = NULL}};
    kd_value nr[1] = {kd_value_none()};
    KD_ASSERT_ERR(kd_call_unboxed(op, na, nr), KD_ENOKERNEL, "from the 'Undefined' backend");
  }
  KD_ASSERT_ERR(call1(op, m), KD_ENOKERNEL, "is only available for these backends: [CPU].");
  KD_ASSERT_ERR(call1_boxed(op, m), KD_ENOKERNEL, "'Meta' backend");
  /* Typed lookup checks the caller's signature. */
  KD_ASSERT_ERR(kd_op_find_typed("basic::ident", "", "(int) -> Tensor", &same), KD_ETYPE,
                "argument 0 'self' is Tensor in the schema but int in the kernel");
  KD_ASSERT_ERR(kd_op_find_typed("basic::ident", "", "(Tensor, Tensor) -> Tensor", &same),
                KD_ETYPE, "the schema has 1 arguments, the kernel 2");
  KD_ASSERT_ERR(kd_op_find("basic::nope", "", &same), KD_ENOTFOUND,
                "operator 'basic::nope' not found");
  /* A boxed call with too few values. */
  kd_stack s;
  kd_stack_init(&s);
  KD_ASSERT_ERR(kd_call_boxed(op, &s), KD_ESTATE, "the stack holds 0 values but the operator takes 1");
  /* ... or a value of the wrong type, for an unboxed kernel. */
  kd_value v = kd_value_int(3);
  kd_stack_push(&s, &v);
  KD_ASSERT_ERR(kd_call_boxed_keys(op, kd_keyset_of(KD_KEY_CPU), &s), KD_ETYPE,
                "argument 0 'self' of type Tensor expected a Tensor, found a value of type int");
  kd_stack_free(&s);
  kd_library_close(cpu);
  kd_library_close(def);
  /* Gone: the handle stays, lookups fail. */
  KD_ASSERT_ERR(kd_op_find("basic::ident", "", &same), KD_ENOTFOUND, "not found");
  KD_ASSERT_ERR(call1(op, t), KD_ESTATE, "operator 'basic::ident' is not defined");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(t);
  kd_tensor_release(m);
}

/* ---- The boxed short path (unboxed kernel, simple arguments) ---------------- */

static int g_short_fail;
/* "(Tensor self, int n, bool b) -> (Tensor, int, float, Tensor)": more
 * results than arguments; the last result is borrowed (made owned by the
 * call). Fails when g_short_fail is set. */
static kd_status k_short(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  if (g_short_fail) return kd_set_error(KD_EINVAL, "k_short failed as asked"); /* r[0] dropped */
  r[1] = kd_value_int(a[2].b ? a[1].i * 2 : a[1].i);
  r[2] = kd_value_double((double)a[1].i + 0.5);
  r[3] = kd_value_tensor_borrowed(a[0].t);
  return KD_OK;
}

/* "(Tensor self, str tag) -> Tensor" / "(Tensor self) -> Tensor": returns
 * its argument borrowed (the call makes it owned). */
static kd_status k_alias(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor_borrowed(a[0].t);
  return KD_OK;
}

static kd_status push_short_args(kd_stack *s, kd_tensor *t, int borrowed) {
  kd_status st = borrowed ? kd_stack_push_tensor_borrowed(s, t) : kd_stack_push_tensor(s, t);
  if (st == KD_OK) st = kd_stack_push_int(s, 21);
  if (st == KD_OK) st = kd_stack_push_bool(s, true);
  return st;
}

static void test_boxed_short_path(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "shortp", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "shortp", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self, int n, bool b) -> (Tensor, int, float, Tensor)",
                              NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_short, "(Tensor, int, bool) -> (Tensor, int, float, Tensor)");
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("shortp::f", "", &op));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  for (int borrowed = 0; borrowed < 2; borrowed++) {
    /* Room for one value below the call and the arguments, none to spare:
     * the results need the stack to grow. */
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(kd_stack_reserve(&s, 4));
    KD_ASSERT_OK(kd_stack_push_int(&s, 99));
    KD_ASSERT_OK(push_short_args(&s, t, borrowed));
    assert_int_equal(s.size, s.capacity);
    assert_int_equal(kd_tensor_refcount(t), borrowed ? 1 : 2);
    KD_ASSERT_OK(kd_call_boxed(op, &s));
    assert_int_equal(s.size, 5);
    assert_int_equal(kd_stack_peek(&s, 4)->u.i, 99); /* below the call: untouched */
    assert_ptr_equal(kd_stack_peek(&s, 3)->u.t, t);
    assert_int_equal(kd_stack_peek(&s, 3)->flags, 0);
    assert_int_equal(kd_stack_peek(&s, 2)->u.i, 42);
    assert_true(kd_stack_peek(&s, 1)->u.d == 21.5);
    assert_ptr_equal(kd_stack_peek(&s, 0)->u.t, t);
    assert_int_equal(kd_stack_peek(&s, 0)->flags, 0); /* borrowed result made owned */
    /* The argument's reference (if owned) went; two results hold one each. */
    assert_int_equal(kd_tensor_refcount(t), 3);
    KD_ASSERT_OK(kd_stack_drop(&s, 4));
    assert_int_equal(kd_tensor_refcount(t), 1);

    /* A failing kernel: its status and message, no results, the arguments
     * gone, every reference dropped (a state between the two, as
     * kd_call_boxed allows). */
    g_short_fail = 1;
    KD_ASSERT_OK(push_short_args(&s, t, borrowed));
    KD_ASSERT_ERR(kd_call_boxed(op, &s), KD_EINVAL, "k_short failed as asked");
    g_short_fail = 0;
    assert_int_equal(s.size, 1);
    assert_int_equal(kd_stack_peek(&s, 0)->u.i, 99);
    assert_int_equal(kd_tensor_refcount(t), 1);

    /* A value of the wrong kind leaves the short path for the general one,
     * which names the argument; nothing is consumed. */
    KD_ASSERT_OK(kd_stack_push_tensor(&s, t));
    KD_ASSERT_OK(kd_stack_push_double(&s, 1.0)); /* int expected */
    KD_ASSERT_OK(kd_stack_push_bool(&s, false));
    KD_ASSERT_ERR(kd_call_boxed(op, &s), KD_ETYPE, "argument 1 'n' of type int");
    assert_int_equal(s.size, 4);
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(t), 1);
  }
  /* A borrowed result that is an argument held by nothing but the stack:
   * made owned before the argument's reference goes (the short path, and
   * the general one for a schema outside it: a str argument). Under
   * AddressSanitizer the wrong order is a use after free. */
  KD_ASSERT_OK(kd_library_def(def, "alias(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "alias2(Tensor self, str tag) -> Tensor", NULL, 0, NULL));
  kd_kernel ka = kd_kernel_unboxed(k_alias, "(Tensor) -> Tensor");
  kd_kernel ka2 = kd_kernel_unboxed(k_alias, "(Tensor, str) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "alias", &ka, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "alias2", &ka2, NULL));
  const char *names[2] = {"shortp::alias", "shortp::alias2"};
  for (int general = 0; general < 2; general++) {
    kd_op *aop;
    KD_ASSERT_OK(kd_op_find(names[general], "", &aop));
    kd_tensor *u = tensor_on(KD_DEVICE_CPU);
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(kd_stack_push_tensor(&s, u));
    if (general) {
      kd_value tag;
      KD_ASSERT_OK(kd_value_string("x", 1, &tag));
      KD_ASSERT_OK(kd_stack_push(&s, &tag));
    }
    kd_tensor_release(u); /* the stack holds the only reference */
    KD_ASSERT_OK(kd_call_boxed(aop, &s));
    assert_int_equal(s.size, 1);
    assert_ptr_equal(kd_stack_peek(&s, 0)->u.t, u);
    assert_int_equal(kd_stack_peek(&s, 0)->flags, 0);
    assert_int_equal(kd_tensor_refcount(u), 1);
    kd_stack_free(&s); /* frees u */
  }
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(t);
}

static void test_stacking_and_release(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "stack", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "stack", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel k1 = kd_kernel_unboxed(k_cpu, SIG1), k2 = kd_kernel_unboxed(k_cpu2, SIG1);
  k1.debug = "first.c:1";
  k2.debug = "second.c:2";
  kd_registration *r1, *r2;
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &k1, &r1));
  kd_set_warning_handler(on_warning, NULL);
  warnings[0] = 0;
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &k2, &r2));
  kd_set_warning_handler(NULL, NULL);
  assert_non_null(strstr(warnings, "overriding a previously registered kernel"));
  assert_non_null(strstr(warnings, "previous kernel: registered at first.c:1"));
  assert_non_null(strstr(warnings, "new kernel: registered at second.c:2"));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("stack::f", "", &op));
  char dump[2048];
  kd_op_dump(op, dump, sizeof dump);
  assert_non_null(strstr(dump, "CPU: unboxed kernel registered at second.c:2\n"));
  assert_non_null(strstr(dump, "CPU: unboxed kernel registered at first.c:1 [inactive: overridden]"));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  kd_registration_release(r2);
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_STR_EQ(ran, "cpu2,cpu");
  /* Releasing the older one while a newer is active leaves the newer. */
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &k2, &r2));
  kd_registration_release(r1);
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_STR_EQ(ran, "cpu2");
  kd_registration_release(r2);
  KD_ASSERT_ERR(call1(op, t), KD_ENOKERNEL, "available for these backends: [].");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(t);
}

static void test_alias_precedence(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "alias", KD_KEY_UNDEFINED);
  kd_library *imp = kd_test_open_lib(KD_LIBRARY_IMPL, "alias", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD);
  kd_library *exp = kd_test_open_lib(KD_LIBRARY_IMPL, "alias", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "alias", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "g(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "make() -> int", NULL, 0, NULL));
  kd_kernel ki = kd_kernel_unboxed(k_implicit, SIG1), ke = kd_kernel_unboxed(k_explicit, SIG1),
            kc = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_OK(kd_library_impl(imp, "g", &ki, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("alias::g", "", &op));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU), *m = tensor_on(KD_DEVICE_META);
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_OK(call1(op, m));
  KD_ASSERT_STR_EQ(ran, "implicit,implicit");
  kd_registration *re;
  KD_ASSERT_OK(kd_library_impl(exp, "g", &ke, &re));
  KD_ASSERT_OK(kd_library_impl(cpu, "g", &kc, NULL));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t)); /* exact key */
  KD_ASSERT_OK(call1(op, m)); /* composite explicit over implicit */
  KD_ASSERT_STR_EQ(ran, "cpu,explicit");
  char table[4096];
  kd_op_dump_table(op, table, sizeof table);
  assert_non_null(strstr(table, "\n  CPU: unboxed [kernel]"));
  assert_non_null(strstr(table, "\n  Meta: unboxed [default backend kernel]"));
  /* Undefined too: explicit before implicit (PyTorch's Undefined entry). */
  assert_non_null(strstr(table, "\n  Undefined: unboxed [default backend kernel]"));
  /* A CompositeExplicitAutograd kernel keeps the implicit one out of the
   * autograd keys: they fall through to it. */
  assert_non_null(strstr(table, "\n  AutogradMeta: fallthrough [backend fallback] from kdispatch "
                                "(built-in autograd fallthrough)\n"));
  /* The NestedTensor keys are not CompositeExplicitAutograd's, and its
   * kernel keeps the implicit one out of them (PyTorch 1.13). */
  assert_non_null(strstr(table, "missing: [NestedTensorCPU, NestedTensorCUDA, NestedTensorMeta, "
                                "NestedTensorPrivateUse1, NestedTensorOpenCL, "
                                "NestedTensorPrivateUse3, BackendSelect, Tracer, Profiler, Mode1, "
                                "Mode2]"));
  {
    kd_arg na[1] = {{.t = NULL}}; /* no keys at all: the Undefined slot */
    kd_value nr[1] = {kd_value_none()};
    ran[0] = 0;
    KD_ASSERT_OK(kd_call_unboxed(op, na, nr));
    KD_ASSERT_STR_EQ(ran, "explicit");
  }
  kd_registration_release(re);
  kd_op_dump_table(op, table, sizeof table);
  assert_non_null(strstr(table, "\n  Undefined: unboxed [math kernel]"));
  /* Without it, Meta's autograd key takes the math kernel; CPU's does not
   * (CPU has a kernel of its own). */
  assert_non_null(strstr(table, "\n  AutogradMeta: unboxed [math kernel]"));
  assert_non_null(strstr(table, "\n  AutogradCPU: fallthrough [backend fallback]"));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, m));
  KD_ASSERT_STR_EQ(ran, "implicit");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cpu);
  kd_library_close(exp);
  kd_library_close(imp);
  kd_library_close(def);
  kd_tensor_release(t);
  kd_tensor_release(m);
}

/* An operator with no tensor arguments goes to the Undefined slot. */
static kd_status k_make(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)a;
  r[0] = kd_value_int(42);
  return KD_OK;
}

static void test_no_tensor_arguments(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "notensor", KD_KEY_UNDEFINED);
  kd_library *imp = kd_test_open_lib(KD_LIBRARY_IMPL, "notensor", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD);
  KD_ASSERT_OK(kd_library_def(def, "make() -> int", NULL, 0, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("notensor::make", "", &op));
  kd_value r = kd_value_none();
  KD_ASSERT_ERR(kd_call_unboxed(op, NULL, &r), KD_ENOKERNEL, "from the 'Undefined' backend");
  kd_kernel k = kd_kernel_unboxed(k_make, "() -> int");
  KD_ASSERT_OK(kd_library_impl(imp, "make", &k, NULL));
  KD_ASSERT_OK(kd_call_unboxed(op, NULL, &r));
  assert_int_equal(r.u.i, 42);
  kd_library_close(imp);
  kd_library_close(def);
}

static void test_fallback_fallthrough_redispatch(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "modes", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "modes", KD_KEY_CPU);
  kd_library *tr = kd_test_open_lib(KD_LIBRARY_IMPL, "modes", KD_KEY_TRACER);
  kd_library *pr = kd_test_open_lib(KD_LIBRARY_IMPL, "modes", KD_KEY_PROFILER);
  KD_ASSERT_OK(kd_library_def(def, "h(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel kc = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_OK(kd_library_impl(cpu, "h", &kc, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("modes::h", "", &op));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);

  /* A boxed fallback for Tracer, reached through the thread's include set. */
  kd_kernel fb = kd_kernel_boxed(fb_tracer);
  kd_registration *rfb;
  KD_ASSERT_OK(kd_library_fallback(tr, &fb, &rfb));
  kd_tls_keys g = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_OK(call1_boxed(op, t));
  KD_ASSERT_STR_EQ(ran, "fb_tracer(modes::h),cpu,fb_tracer(modes::h),cpu");
  /* An operator kernel for the key beats the fallback. */
  kd_kernel kt = kd_kernel_unboxed(k_tracer, SIG1);
  kd_registration *rkt;
  KD_ASSERT_OK(kd_library_impl(tr, "h", &kt, &rkt));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_STR_EQ(ran, "tracer,cpu");
  /* Two modes chain: Profiler -> Tracer -> CPU, typed and boxed. */
  kd_kernel kp = kd_kernel_unboxed(k_profiler, SIG1);
  KD_ASSERT_OK(kd_library_impl(pr, "h", &kp, NULL));
  kd_tls_keys g2 = kd_tls_include(kd_keyset_of(KD_KEY_PROFILER));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_OK(call1_boxed(op, t));
  KD_ASSERT_STR_EQ(ran, "profiler,tracer,cpu,profiler,tracer,cpu");
  /* Excluding a key skips it. */
  kd_tls_keys g3 = kd_tls_exclude(kd_keyset_of(KD_KEY_PROFILER));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_STR_EQ(ran, "tracer,cpu");
  kd_tls_restore(g3);
  kd_tls_restore(g2);
  /* An operator-level fallthrough for Tracer: straight to CPU, with Tracer
   * in the fallthrough mask. */
  kd_registration_release(rkt);
  kd_kernel ft = kd_kernel_fallthrough();
  kd_registration *rft;
  KD_ASSERT_OK(kd_library_impl(tr, "h", &ft, &rft));
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  KD_ASSERT_STR_EQ(ran, "cpu");
  char table[4096];
  kd_op_dump_table(op, table, sizeof table);
  assert_non_null(strstr(table, "\n  Tracer: fallthrough [kernel]"));
  kd_registration_release(rft);
  /* A key-wide fallthrough replaces the boxed fallback. */
  kd_registration_release(rfb);
  KD_ASSERT_OK(kd_library_fallback(tr, &ft, &rfb));
  ran[0] = 0;
  KD_ASSERT_OK(call1_boxed(op, t));
  KD_ASSERT_STR_EQ(ran, "cpu");
  /* A second fallback for a key is refused, naming the first. */
  KD_ASSERT_ERR(kd_library_fallback(tr, &fb, NULL), KD_EEXIST,
                "a fallback for dispatch key Tracer is already registered (at");
  /* Fallbacks must work for any schema. */
  kd_kernel bad = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_ERR(kd_library_fallback(pr, &bad, NULL), KD_EINVAL, "must be a boxed function");
  KD_ASSERT_ERR(kd_library_fallback(def, &fb, NULL), KD_EINVAL, "must be an IMPL library");
  kd_tls_restore(g);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(pr);
  kd_library_close(tr);
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(t);
}

/* Operators made after a fallback was registered get its slot: defined
 * first, implemented first, and defined again after they disappeared. */
static void test_fallback_then_new_operators(void **state) {
  (void)state;
  kd_library *tr = kd_test_open_lib(KD_LIBRARY_IMPL, "later", KD_KEY_TRACER);
  kd_kernel fb = kd_kernel_boxed(fb_tracer);
  KD_ASSERT_OK(kd_library_fallback(tr, &fb, NULL));
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "later", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "later", KD_KEY_CPU);
  kd_kernel kc = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_OK(kd_library_def(def, "d(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_OK(kd_library_impl(cpu, "d", &kc, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "i", &kc, NULL)); /* implemented before defined */
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_OK(kd_library_def(def, "i(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  kd_tls_keys g = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  const char *names[] = {"later::d", "later::i"};
  for (int i = 0; i < 2; i++) {
    kd_op *op;
    KD_ASSERT_OK(kd_op_find(names[i], "", &op));
    ran[0] = 0;
    KD_ASSERT_OK(call1(op, t));
    char want[128];
    snprintf(want, sizeof want, "fb_tracer(%s),cpu", names[i]);
    KD_ASSERT_STR_EQ(ran, want);
  }
  kd_tls_restore(g);
  /* The fallback gone, the slots are empty again. */
  kd_library_close(tr);
  KD_ASSERT_OK(kd_dispatcher_check());
  char table[4096];
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("later::d", "", &op));
  kd_op_dump_table(op, table, sizeof table);
  assert_null(strstr(table, "Tracer "));
  kd_library_close(cpu);
  kd_library_close(def);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(t);
}

/* (Tensor a, Tensor[] b, Tensor? c) -> Tensor: the key set is the union. */
static kd_status k_union(const kd_call *c, const kd_arg *a, kd_value *r) {
  char m[64];
  snprintf(m, sizeof m, "union@%s", kd_dispatch_key_name(c->key));
  mark(m);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static void test_key_union(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "keys", KD_KEY_UNDEFINED);
  kd_library *all = kd_test_open_lib(KD_LIBRARY_IMPL, "keys", KD_KEY_CATCH_ALL);
  KD_ASSERT_OK(kd_library_def(def, "u(Tensor a, Tensor[] b, Tensor? c) -> Tensor", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_union, "(Tensor, Tensor[], Tensor?) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(all, "u", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("keys::u", "", &op));
  kd_tensor *cpu = tensor_on(KD_DEVICE_CPU), *meta = tensor_on(KD_DEVICE_META),
            *p1 = tensor_on(KD_DEVICE_PRIVATEUSE1);
  kd_tensor *list[2] = {cpu, meta};
  kd_arg a[3];
  kd_value r = kd_value_none();
  ran[0] = 0;
  a[0].t = cpu;
  a[1].tensors.data = list;
  a[1].tensors.size = 1;
  a[2].t = NULL;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  a[1].tensors.size = 2; /* meta in the list */
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  a[2].t = p1; /* PrivateUse1 beats Meta */
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "union@CPU,union@Meta,union@PrivateUse1");
  /* Boxed: the same union from the stack. */
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(cpu);
  kd_stack_push(&s, &v);
  KD_ASSERT_OK(kd_value_tensor_list(list, 2, &v));
  kd_stack_push(&s, &v);
  v = kd_value_none();
  kd_stack_push(&s, &v);
  ran[0] = 0;
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  KD_ASSERT_STR_EQ(ran, "union@Meta");
  kd_stack_free(&s);
  /* Tensor?[]: None entries are skipped, the others count. */
  KD_ASSERT_OK(kd_library_def(def, "v(Tensor a, Tensor?[] b) -> Tensor", NULL, 0, NULL));
  kd_kernel kv = kd_kernel_unboxed(k_union, "(Tensor, Tensor?[]) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(all, "v", &kv, NULL));
  kd_op *opv;
  KD_ASSERT_OK(kd_op_find("keys::v", "", &opv));
  kd_tensor *opt[3] = {NULL, p1, NULL};
  kd_arg av[2];
  av[0].t = cpu;
  av[1].tensors.data = opt;
  av[1].tensors.size = 3;
  ran[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(opv, av, &r));
  kd_value_destroy(&r);
  av[1].tensors.size = 1; /* only None */
  KD_ASSERT_OK(kd_call_unboxed(opv, av, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "union@PrivateUse1,union@CPU");
  kd_library_close(all);
  kd_library_close(def);
  kd_tensor_release(cpu);
  kd_tensor_release(meta);
  kd_tensor_release(p1);
}

/* ---- Kernel forms ------------------------------------------------------------------ */

/* (Tensor self, int n) -> (Tensor, int): several returns. */
static kd_status k_pair(const kd_call *c, const kd_arg *a, kd_value *r) {
  int *calls = c->data;
  if (calls) (*calls)++;
  r[0] = kd_value_tensor(a[0].t);
  r[1] = kd_value_int(a[1].i * 2);
  return KD_OK;
}
static kd_status kb_pair(const kd_call *c, kd_stack *s) {
  (void)c;
  kd_value n, t;
  kd_stack_pop(s, &n);
  kd_stack_pop(s, &t);
  kd_stack_push(s, &t);
  n.u.i *= 3;
  kd_stack_push(s, &n);
  return KD_OK;
}
/* (Tensor(a!) self) -> (): no return. */
static kd_status k_none(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)a;
  (void)r;
  mark("none");
  return KD_OK;
}

static kd_status kb_none(const kd_call *c, kd_stack *s) {
  (void)c;
  mark("boxed_none");
  return kd_stack_drop(s, 1);
}

static int destroyed_data;
static void destroy_counter(void *p) {
  (void)p;
  destroyed_data++;
}

/* A functor: its state counts calls; made per slot. */
typedef struct counter_state {
  int64_t calls;
  int64_t start;
} counter_state;
static int states_made, states_destroyed;
static kd_status counter_create(void *data, const kd_value *ctor, size_t n, void **state) {
  (void)data;
  if (n != 1 || ctor[0].tag != KD_VALUE_INT)
    return kd_set_error(KD_EINVAL, "counter: expected one int constructor argument");
  if (ctor[0].u.i < 0) return kd_set_error(KD_EINVAL, "counter: negative start %lld", (long long)ctor[0].u.i);
  counter_state *s = malloc(sizeof *s);
  s->calls = 0;
  s->start = ctor[0].u.i;
  states_made++;
  *state = s;
  return KD_OK;
}
static void counter_destroy(void *state) {
  states_destroyed++;
  free(state);
}
static kd_status k_counter(const kd_call *c, const kd_arg *a, kd_value *r) {
  counter_state *s = c->data;
  s->calls++;
  r[0] = kd_value_tensor(a[0].t);
  r[1] = kd_value_int(s->start + s->calls);
  return KD_OK;
}

static void pair_typed(kd_op *op, kd_tensor *t, int64_t n, int64_t expect) {
  kd_arg a[2] = {{.t = t}, {.i = n}};
  kd_value r[2] = {kd_value_none(), kd_value_none()};
  KD_ASSERT_OK(kd_call_unboxed(op, a, r));
  assert_ptr_equal(r[0].u.t, t);
  assert_int_equal(r[1].u.i, expect);
  kd_value_destroy(&r[0]);
}

static void pair_boxed(kd_op *op, kd_tensor *t, int64_t n, int64_t expect) {
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(t);
  kd_stack_push(&s, &v);
  v = kd_value_int(n);
  kd_stack_push(&s, &v);
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  assert_int_equal(s.size, 2);
  assert_ptr_equal(s.items[0].u.t, t);
  assert_int_equal(s.items[1].u.i, expect);
  kd_stack_free(&s);
}

static void test_kernel_forms(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "forms", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "forms", KD_KEY_CPU);
  kd_library *meta = kd_test_open_lib(KD_LIBRARY_IMPL, "forms", KD_KEY_META);
  KD_ASSERT_OK(kd_library_def(def, "pair(Tensor self, int n) -> (Tensor, int)", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "touch(Tensor(a!) self) -> ()", NULL, 0, NULL));
  kd_op *pair, *touch;
  KD_ASSERT_OK(kd_op_find("forms::pair", "", &pair));
  KD_ASSERT_OK(kd_op_find("forms::touch", "", &touch));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU), *m = tensor_on(KD_DEVICE_META);
  const char *sig = "(Tensor, int) -> (Tensor, int)";

  /* A plain function, typed and boxed (through the adapter). */
  kd_kernel k = kd_kernel_unboxed(k_pair, sig);
  kd_registration *r;
  KD_ASSERT_OK(kd_library_impl(cpu, "pair", &k, &r));
  pair_typed(pair, t, 5, 10);
  pair_boxed(pair, t, 5, 10);
  kd_registration_release(r);
  /* A boxed function, boxed and typed (through the adapter). */
  k = kd_kernel_boxed(kb_pair);
  KD_ASSERT_OK(kd_library_impl(cpu, "pair", &k, &r));
  pair_boxed(pair, t, 5, 15);
  pair_typed(pair, t, 5, 15);
  kd_registration_release(r);
  /* Borrowed arguments: no reference is taken for them, and a result that
   * passes one through comes back owned. */
  KD_ASSERT_OK(kd_library_impl(cpu, "pair", &k, &r)); /* the boxed kernel, again */
  {
    kd_stack s;
    kd_stack_init(&s);
    int64_t before = kd_tensor_refcount(t);
    kd_value v = kd_value_tensor_borrowed(t);
    kd_stack_push(&s, &v);
    v = kd_value_int(2);
    kd_stack_push(&s, &v);
    KD_ASSERT_OK(kd_call_boxed(pair, &s));
    assert_int_equal(s.items[0].flags, 0);
    assert_int_equal(kd_tensor_refcount(t), before + 1);
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(t), before);
    pair_typed(pair, t, 1, 3); /* typed call of the boxed kernel: args lent */
    assert_int_equal(kd_tensor_refcount(t), before);
  }
  kd_registration_release(r);
  k = kd_kernel_unboxed(k_pair, sig);
  KD_ASSERT_OK(kd_library_impl(cpu, "pair", &k, &r));
  {
    kd_stack s;
    kd_stack_init(&s);
    int64_t before = kd_tensor_refcount(t);
    kd_value v = kd_value_tensor_borrowed(t);
    kd_stack_push(&s, &v);
    v = kd_value_int(2);
    kd_stack_push(&s, &v);
    KD_ASSERT_OK(kd_call_boxed(pair, &s)); /* unboxed kernel through the adapter */
    assert_int_equal(s.items[0].flags, 0);
    assert_int_equal(s.items[1].u.i, 4);
    assert_int_equal(kd_tensor_refcount(t), before + 1);
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(t), before);
  }
  kd_registration_release(r);
  /* A closure: its data reaches the kernel and is destroyed after release. */
  int calls = 0;
  k = kd_kernel_closure(k_pair, sig, &calls, destroy_counter);
  KD_ASSERT_OK(kd_library_impl(cpu, "pair", &k, &r));
  pair_typed(pair, t, 1, 2);
  pair_boxed(pair, t, 1, 2);
  assert_int_equal(calls, 2);
  kd_registration_release(r);
  kd__reclaim(true);
  assert_int_equal(destroyed_data, 1);
  /* A functor: state made lazily per slot, kept between calls, separate per
   * key, destroyed on release. */
  kd_value ctor = kd_value_int(100);
  k = kd_kernel_unboxed(k_counter, sig);
  k.kind = KD_KERNEL_FUNCTOR;
  k.create = counter_create;
  k.destroy = counter_destroy;
  k.ctor_args = &ctor;
  k.nctor_args = 1;
  kd_library *expl = kd_test_open_lib(KD_LIBRARY_IMPL, "forms", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD);
  KD_ASSERT_OK(kd_library_impl(expl, "pair", &k, &r));
  assert_int_equal(states_made, 0);
  pair_typed(pair, t, 0, 101);
  pair_typed(pair, t, 0, 102);
  pair_boxed(pair, t, 0, 103);
  pair_typed(pair, m, 0, 101); /* Meta's slot has its own state */
  assert_int_equal(states_made, 2);
  kd_registration_release(r);
  kd__reclaim(true);
  assert_int_equal(states_destroyed, 2);
  /* A functor whose construction fails reports it from the call. */
  ctor = kd_value_int(-1);
  KD_ASSERT_OK(kd_library_impl(expl, "pair", &k, &r));
  kd_arg a[2] = {{.t = t}, {.i = 0}};
  kd_value rv[2] = {kd_value_none(), kd_value_none()};
  KD_ASSERT_ERR(kd_call_unboxed(pair, a, rv), KD_EINVAL, "counter: negative start -1");
  kd_registration_release(r);
  kd_library_close(expl);
  /* Not supported. */
  k = kd_kernel_not_supported();
  KD_ASSERT_OK(kd_library_impl(meta, "pair", &k, &r));
  a[0].t = m;
  KD_ASSERT_ERR(kd_call_unboxed(pair, a, rv), KD_EUNSUPPORTED,
                "'forms::pair' is not supported for dispatch key 'Meta'");
  kd_registration_release(r);
  /* No returns, typed and boxed. */
  k = kd_kernel_unboxed(k_none, "(Tensor) -> ()");
  KD_ASSERT_OK(kd_library_impl(cpu, "touch", &k, NULL));
  ran[0] = 0;
  kd_arg ta[1] = {{.t = t}};
  KD_ASSERT_OK(kd_call_unboxed(touch, ta, NULL));
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(t);
  kd_stack_push(&s, &v);
  KD_ASSERT_OK(kd_call_boxed(touch, &s));
  assert_int_equal(s.size, 0);
  kd_stack_free(&s);
  KD_ASSERT_STR_EQ(ran, "none,none");
  /* No returns from a boxed kernel, typed (adapter) and boxed. */
  kd_library *meta_touch = kd_test_open_lib(KD_LIBRARY_IMPL, "forms", KD_KEY_META);
  k = kd_kernel_boxed(kb_none);
  KD_ASSERT_OK(kd_library_impl(meta_touch, "touch", &k, NULL));
  ran[0] = 0;
  ta[0].t = m;
  KD_ASSERT_OK(kd_call_unboxed(touch, ta, NULL));
  kd_stack_init(&s);
  v = kd_value_tensor(m);
  kd_stack_push(&s, &v);
  KD_ASSERT_OK(kd_call_boxed(touch, &s));
  assert_int_equal(s.size, 0);
  kd_stack_free(&s);
  KD_ASSERT_STR_EQ(ran, "boxed_none,boxed_none");
  kd_library_close(meta_touch);
  /* Bad kernel descriptions. */
  k = kd_kernel_zero_();
  KD_ASSERT_ERR(kd_library_impl(cpu, "pair", &k, NULL), KD_EINVAL, "neither an unboxed nor a boxed");
  k = kd_kernel_unboxed(k_pair, NULL);
  KD_ASSERT_ERR(kd_library_impl(cpu, "pair", &k, NULL), KD_EINVAL, "needs its signature");
  k = kd_kernel_unboxed(k_pair, sig);
  k.api_version = 7;
  KD_ASSERT_ERR(kd_library_impl(cpu, "pair", &k, NULL), KD_EINVAL,
                "kd_kernel api_version 7 is not supported: this library accepts only 1 "
                "(KD_KERNEL_API_VERSION); was it built against a newer kdispatch?");
  k.api_version = 0;
  KD_ASSERT_ERR(kd_library_impl(cpu, "pair", &k, NULL), KD_EINVAL,
                "kd_kernel api_version 0 is not supported: this library accepts only 1 "
                "(KD_KERNEL_API_VERSION); was api_version left unset?");
  kd_library_close(meta);
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(t);
  kd_tensor_release(m);
}

/* ---- Registration errors ---------------------------------------------------------- */

static void test_registration_errors(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "errs", KD_KEY_UNDEFINED);
  kd_library *other = NULL;
  KD_ASSERT_ERR(kd_library_open(KD_LIBRARY_DEF, "errs", KD_KEY_UNDEFINED, "x.c", 9, &other),
                KD_EEXIST, "only one DEF library is allowed per namespace: 'errs'");
  assert_null(other);
  KD_ASSERT_ERR(kd_library_open(KD_LIBRARY_DEF, "9bad", KD_KEY_UNDEFINED, NULL, 0, &other),
                KD_EINVAL, "illegal namespace '9bad'");
  KD_ASSERT_ERR(kd_library_open(KD_LIBRARY_IMPL, "errs", (kd_dispatch_key)33, NULL, 0, &other),
                KD_EINVAL, "invalid key 33");
  const char *tags[2] = {"pointwise", "core"};
  KD_ASSERT_OK(kd_library_def(def, "a.x(Tensor self) -> Tensor", tags, 2, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("errs::a", "x", &op));
  {
    char d[1024];
    kd_op_dump(op, d, sizeof d);
    assert_non_null(strstr(d, "  tag pointwise\n  tag core\n"));
  }
  char before[4096], after[4096];
  kd_op_dump(op, before, sizeof before);
  KD_ASSERT_ERR(kd_library_def(def, "other::a(Tensor self) -> Tensor", NULL, 0, NULL), KD_EINVAL,
                "operator 'other::a' is outside the namespace 'errs'");
  KD_ASSERT_ERR(kd_library_def(def, "a.x(Tensor self, int n) -> Tensor", NULL, 0, NULL),
                KD_EEXIST,
                "operator 'errs::a.x' is already defined with schema 'a.x(Tensor self) -> Tensor'");
  KD_ASSERT_ERR(kd_library_def(def, "a.x(Tensor self -> Tensor", NULL, 0, NULL), KD_ESYNTAX,
                "column");
  /* The same schema again is another reference. */
  kd_registration *again;
  KD_ASSERT_OK(kd_library_def(def, "errs::a.x(Tensor self) -> Tensor", NULL, 0, &again));
  kd_registration_release(again);
  KD_ASSERT_OK(kd_op_find("errs::a", "x", &op));
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "errs", KD_KEY_CPU);
  KD_ASSERT_ERR(kd_library_def(cpu, "b(Tensor self) -> Tensor", NULL, 0, NULL), KD_ESTATE,
                "is an IMPL library");
  kd_kernel k = kd_kernel_unboxed(k_cpu, "(Tensor, float) -> Tensor");
  KD_ASSERT_ERR(kd_library_impl(cpu, "a.x", &k, NULL), KD_ETYPE,
                "kernel for 'errs::a.x' (CPU) registered at "); /* the library's file:line */
  KD_ASSERT_ERR(kd_library_impl(cpu, "a.x", &k, NULL), KD_ETYPE,
                "has signature (Tensor, float) -> Tensor, which does not match the schema of "
                "'errs::a.x' (1 difference): the schema has 1 arguments, the kernel 2");
  k.signature = "(int) -> Tensor";
  KD_ASSERT_ERR(kd_library_impl(cpu, "a.x", &k, NULL), KD_ETYPE,
                "argument 0 'self' is Tensor in the schema but int in the kernel");
  k.signature = "(Tensor) -> int";
  KD_ASSERT_ERR(kd_library_impl(cpu, "a.x", &k, NULL), KD_ETYPE,
                "return 0 is Tensor in the schema but int in the kernel");
  k.signature = "(Tensor(a!) x) -> Tensor";
  KD_ASSERT_OK(kd_library_impl(cpu, "a.x", &k, NULL)); /* names and annotations don't matter */
  KD_ASSERT_ERR(kd_library_impl(cpu, "bad-name", &k, NULL), KD_EINVAL, "illegal operator name 'bad-name'");
  KD_ASSERT_ERR(kd_library_impl(cpu, "a.b-c", &k, NULL), KD_EINVAL, "illegal overload name 'b-c'");
  KD_ASSERT_ERR(kd_library_impl(cpu, "nope::a.x", &k, NULL), KD_EINVAL, "outside the namespace");
  /* An impl that came first is checked when the def arrives, which sets it
   * aside (test_signature_mismatch has the details). */
  k.signature = "(int) -> int";
  KD_ASSERT_OK(kd_library_impl(cpu, "later", &k, NULL));
  kd_registration *later_def;
  KD_ASSERT_OK(kd_library_def(def, "later(Tensor self) -> Tensor", NULL, 0, &later_def));
  kd_op *later;
  KD_ASSERT_OK(kd_op_find("errs::later", "", &later));
  assert_non_null(kd_op_schema(later));
  kd_op_dump(later, after, sizeof after);
  assert_non_null(strstr(after, "[rejected: kernel for 'errs::later' (CPU) registered at "));
  kd_registration_release(later_def);
  /* Nothing changed through the failures. */
  kd_library_close(cpu);
  kd_op_dump(op, after, sizeof after);
  KD_ASSERT_STR_EQ(before, after);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(def);
}

/* def by name, with the schema inferred from the kernel's signature. */
static void test_def_kernel(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "infer", KD_KEY_UNDEFINED);
  kd_kernel k = kd_kernel_unboxed(k_pair, "(Tensor, int) -> (Tensor, int)");
  kd_registration *r;
  KD_ASSERT_OK(kd_library_def_kernel(def, "pair", &k, &r));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("infer::pair", "", &op));
  char text[256];
  kd_schema_format(kd_op_schema(op), text, sizeof text);
  KD_ASSERT_STR_EQ(text, "pair(Tensor _0, int _1) -> (Tensor, int)");
  kd_tensor *t = tensor_on(KD_DEVICE_META);
  pair_typed(op, t, 4, 8); /* CatchAll serves every key */
  kd_registration_release(r); /* undoes both the def and the impl */
  KD_ASSERT_ERR(kd_op_find("infer::pair", "", &op), KD_ENOTFOUND, "not found");
  k.signature = NULL;
  KD_ASSERT_ERR(kd_library_def_kernel(def, "q", &k, NULL), KD_EINVAL, "no signature");
  /* Regression: closing the library while it still holds a def_kernel pair
   * released the impl, then freed it again through the def (use after free). */
  k.signature = "(Tensor, int) -> (Tensor, int)";
  KD_ASSERT_OK(kd_library_def_kernel(def, "pair2", &k, NULL));
  kd_library_close(def);
  KD_ASSERT_ERR(kd_op_find("infer::pair2", "", &op), KD_ENOTFOUND, "not found");
  kd_tensor_release(t);
}

/* ---- Listeners ------------------------------------------------------------------------- */

static char events[2048];
static void on_event(const kd_registry_event *ev, void *ud) {
  (void)ud;
  static const char *names[] = {"def", "undef", "impl", "impl-", "fallback", "fallback-"};
  size_t n = strlen(events);
  if (strncmp(ev->op ? kd_op_name(ev->op) : "listen", "listen", 6) != 0 && ev->op) return;
  snprintf(events + n, sizeof events - n, "%s%s %s@%s", n ? ";" : "", names[ev->kind],
           ev->op ? kd_op_name(ev->op) : "-", kd_dispatch_key_name(ev->key));
}

static void test_listeners(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "listen", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "listen", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "x(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_OK(kd_library_impl(cpu, "x", &k, NULL));
  events[0] = 0;
  kd_listener *l;
  KD_ASSERT_OK(kd_listener_add(on_event, NULL, &l)); /* hears the existing ones */
  KD_ASSERT_STR_EQ(events, "def listen::x@Undefined;impl listen::x@CPU");
  events[0] = 0;
  kd_registration *r;
  KD_ASSERT_OK(kd_library_def(def, "y(Tensor self) -> Tensor", NULL, 0, &r));
  kd_registration_release(r);
  kd_library_close(cpu);
  KD_ASSERT_STR_EQ(events, "def listen::y@Undefined;undef listen::y@Undefined;impl- listen::x@CPU");
  kd_listener_remove(l);
  events[0] = 0;
  kd_library_close(def);
  KD_ASSERT_STR_EQ(events, "");
}

/* ---- Every order gives the same table --------------------------------------------- */

static int permute_check_op(const char *opname, kd_library **libs, const char **names,
                            const kd_kernel *ks, int n, const char *expected_table,
                            const char *expected_dump) {
  int idx[6] = {0, 1, 2, 3, 4, 5};
  int count = 0;
  assert_true(n <= 6);
  /* Heap's algorithm over the registration order; releases in reverse of a
   * rotated order. The table is checked against the computation after
   * every single step. */
  int c[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0;;) {
    kd_registration *regs[6];
    for (int j = 0; j < n; j++) {
      KD_ASSERT_OK(kd_library_impl(libs[idx[j]], names[idx[j]], &ks[idx[j]], &regs[idx[j]]));
      KD_ASSERT_OK(kd_dispatcher_check());
    }
    kd_op *op;
    KD_ASSERT_OK(kd_op_find(opname, "", &op));
    char table[8192], dump[4096];
    kd_op_dump_table(op, table, sizeof table);
    KD_ASSERT_STR_EQ(table, expected_table);
    kd_op_dump(op, dump, sizeof dump);
    KD_ASSERT_STR_EQ(dump, expected_dump);
    for (int j = 0; j < n; j++) {
      kd_registration_release(regs[(j + count) % n]);
      KD_ASSERT_OK(kd_dispatcher_check());
    }
    count++;
    while (i < n && c[i] >= i) c[i++] = 0;
    if (i >= n) break;
    int sw = (i % 2) ? c[i] : 0;
    int tmp = idx[sw];
    idx[sw] = idx[i];
    idx[i] = tmp;
    c[i]++;
    i = 0;
  }
  return count;
}

static void permute_check(kd_library **libs, const char **names, const kd_kernel *ks, int n,
                          const char *expected_table, const char *expected_dump) {
  assert_int_equal(permute_check_op("order::f", libs, names, ks, n, expected_table, expected_dump),
                   24);
}

static void test_every_order(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "order", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *libs[4] = {kd_test_open_lib(KD_LIBRARY_IMPL, "order", KD_KEY_CPU),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "order", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "order", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "order", KD_KEY_TRACER)};
  const char *names[4] = {"f", "f", "f", "f"};
  kd_kernel ks[4] = {kd_kernel_unboxed(k_cpu, SIG1), kd_kernel_unboxed(k_explicit, SIG1),
                     kd_kernel_unboxed(k_implicit, SIG1), kd_kernel_unboxed(k_tracer, SIG1)};
  ks[0].debug = "cpu";
  ks[1].debug = "explicit";
  ks[2].debug = "implicit";
  ks[3].debug = "tracer";
  /* The reference: registered in one order. */
  kd_registration *regs[4];
  for (int j = 0; j < 4; j++) KD_ASSERT_OK(kd_library_impl(libs[j], "f", &ks[j], &regs[j]));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("order::f", "", &op));
  char expected[4096], expected_dump[4096];
  kd_op_dump_table(op, expected, sizeof expected);
  kd_op_dump(op, expected_dump, sizeof expected_dump);
  assert_non_null(strstr(expected, "\n  Tracer: unboxed [kernel] from tracer\n"));
  assert_non_null(strstr(expected, "\n  CUDA: unboxed [default backend kernel] from explicit\n"));
  /* Undefined (no keys): composite explicit before implicit, as PyTorch. */
  assert_non_null(strstr(expected, "\n  Undefined: unboxed [default backend kernel] from explicit\n"));
  /* NestedTensor is not CompositeExplicitAutograd's, and the explicit kernel
   * counts as a backend kernel there: no math kernel (PyTorch 1.13). */
  assert_null(strstr(expected, "\n  NestedTensorCPU:"));
  assert_non_null(strstr(expected, "NestedTensorCPU, NestedTensorCUDA, NestedTensorMeta, "));
  for (int j = 0; j < 4; j++) kd_registration_release(regs[j]);
  permute_check(libs, names, ks, 4, expected, expected_dump);
  /* After every release the operator is back to its definition alone. */
  char empty[4096];
  kd_op_dump_table(op, empty, sizeof empty);
  assert_non_null(strstr(empty, "missing: [Undefined, CPU, CUDA, Meta,"));
  for (int j = 0; j < 4; j++) kd_library_close(libs[j]);
  kd_library_close(def);
}

/* ---- Autograd keys and PyTorch 1.13's fill rules ------------------------------------ */

ID_KERNEL(k_cuda, "cuda")
ID_KERNEL(k_quantized, "quantized")
ID_KERNEL(k_nested, "nested")
ID_KERNEL(k_nonfunctional, "nonfunctional")
ID_KERNEL(k_agother, "agother")

/* Autograd-like kernels: mark, then redispatch below their key. */
static kd_status k_autograd(const kd_call *c, const kd_arg *a, kd_value *r) {
  mark("autograd");
  return kd_redispatch_unboxed(c, a, r);
}
static kd_status k_agcpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  mark("agcpu");
  return kd_redispatch_unboxed(c, a, r);
}
static kd_status k_agcuda(const kd_call *c, const kd_arg *a, kd_value *r) {
  mark("agcuda");
  return kd_redispatch_unboxed(c, a, r);
}
static kd_status kb_agcpu(const kd_call *c, kd_stack *s) {
  mark("agcpu_boxed");
  return kd_redispatch_boxed(c, s);
}
/* A boxed fallback for an autograd key. */
static kd_status fb_autograd(const kd_call *c, kd_stack *s) {
  char m[96];
  snprintf(m, sizeof m, "fb_autograd(%s@%s)", kd_op_name(c->op), kd_dispatch_key_name(c->key));
  mark(m);
  return kd_redispatch_boxed(c, s);
}
/* Marks the key whose slot chose it: "all@CPU". */
static kd_status k_all(const kd_call *c, const kd_arg *a, kd_value *r) {
  char m[64];
  snprintf(m, sizeof m, "all@%s", kd_dispatch_key_name(c->key));
  mark(m);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* The computed table's line of `key` without its indent ("AutogradCPU:
 * unboxed [math kernel] from implicit"), or "missing". Static storage. */
static const char *slot(kd_op *op, kd_dispatch_key key) {
  static char line[512];
  char table[8192], want[64];
  assert_true(kd_op_dump_table(op, table, sizeof table) < sizeof table);
  snprintf(want, sizeof want, "\n  %s: ", kd_dispatch_key_name(key));
  const char *p = strstr(table, want);
  if (!p) return "missing";
  p += 3;
  snprintf(line, sizeof line, "%.*s", (int)strcspn(p, "\n"), p);
  return line;
}

#define BUILTIN_FT "fallthrough [backend fallback] from kdispatch (built-in autograd fallthrough)"

/* A kernel with a debug string (what the table lines name). */
static kd_kernel named(kd_kernel k, const char *debug) {
  k.debug = debug;
  return k;
}

/* A call with an explicit key set, one tensor argument, identity result. */
static kd_status call1_keys(kd_op *op, kd_keyset keys, kd_tensor *t) {
  kd_arg a[1] = {{.t = t}};
  kd_value r[1] = {kd_value_none()};
  kd_status st = kd_call_unboxed_keys(op, keys, a, r);
  if (st == KD_OK) assert_ptr_equal(r[0].u.t, t);
  kd_value_destroy(&r[0]);
  return st;
}
static kd_status call1_boxed_keys(kd_op *op, kd_keyset keys, kd_tensor *t) {
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(t);
  kd_stack_push(&s, &v);
  kd_status st = kd_call_boxed_keys(op, keys, &s);
  if (st == KD_OK) assert_ptr_equal(s.items[0].u.t, t);
  kd_stack_free(&s);
  return st;
}

/* Runs op on t and returns what ran. */
static const char *run1(kd_op *op, kd_tensor *t) {
  ran[0] = 0;
  KD_ASSERT_OK(call1(op, t));
  return ran;
}

/* CompositeExplicitAutograd, CompositeImplicitAutograd, Autograd and
 * AutogradCPU, registered one by one: which fills the autograd slots
 * (OperatorEntry.cpp 1.13: math kernel before autograd kernel, and not for
 * a key whose backend, or CompositeExplicitAutograd, has a kernel). */
static void test_autograd_alias_precedence(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "agp", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *libs[5] = {kd_test_open_lib(KD_LIBRARY_IMPL, "agp", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "agp", KD_KEY_AUTOGRAD),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "agp", KD_KEY_CPU),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "agp", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD),
                         kd_test_open_lib(KD_LIBRARY_IMPL, "agp", KD_KEY_AUTOGRAD_CPU)};
  kd_kernel ks[5] = {named(kd_kernel_unboxed(k_implicit, SIG1), "implicit"),
                     named(kd_kernel_unboxed(k_autograd, SIG1), "autograd"),
                     named(kd_kernel_unboxed(k_cpu, SIG1), "cpu"),
                     named(kd_kernel_unboxed(k_explicit, SIG1), "explicit"),
                     named(kd_kernel_unboxed(k_agcpu, SIG1), "agcpu")};
  const char *names[5] = {"f", "f", "f", "f", "f"};
  kd_registration *r[5];
  kd_tensor *t = tensor_on(KD_DEVICE_CPU), *cu = tensor_on(KD_DEVICE_CUDA);

  KD_ASSERT_OK(kd_library_impl(libs[0], "f", &ks[0], &r[0]));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("agp::f", "", &op));
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_UNDEFINED), "Undefined: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_CPU), "CPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AD_INPLACE_OR_VIEW), "ADInplaceOrView: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(run1(op, t), "implicit"); /* at AutogradCPU: nothing below runs */

  /* Autograd: CompositeImplicitAutograd still wins at the autograd keys. */
  KD_ASSERT_OK(kd_library_impl(libs[1], "f", &ks[1], &r[1]));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(run1(op, t), "implicit");

  /* A CPU kernel takes the math kernel away from AutogradCPU only. */
  KD_ASSERT_OK(kd_library_impl(libs[2], "f", &ks[2], &r[2]));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [autograd kernel] from autograd");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CUDA), "AutogradCUDA: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_CPU), "CPU: unboxed [kernel] from cpu");
  KD_ASSERT_STR_EQ(run1(op, t), "autograd,cpu");
  KD_ASSERT_STR_EQ(run1(op, cu), "implicit");

  /* CompositeExplicitAutograd counts as a backend kernel for every
   * autograd key, AutogradOther too. */
  KD_ASSERT_OK(kd_library_impl(libs[3], "f", &ks[3], &r[3]));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CUDA), "AutogradCUDA: unboxed [autograd kernel] from autograd");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: unboxed [autograd kernel] from autograd");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_CUDA), "CUDA: unboxed [default backend kernel] from explicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_UNDEFINED), "Undefined: unboxed [default backend kernel] from explicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_NESTED_TENSOR_CPU), "missing");
  KD_ASSERT_STR_EQ(run1(op, cu), "autograd,explicit");

  /* AutogradCPU's own kernel beats every alias. */
  KD_ASSERT_OK(kd_library_impl(libs[4], "f", &ks[4], &r[4]));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [kernel] from agcpu");
  KD_ASSERT_STR_EQ(run1(op, t), "agcpu,cpu");
  char expected[8192], expected_dump[4096];
  kd_op_dump_table(op, expected, sizeof expected);
  kd_op_dump(op, expected_dump, sizeof expected_dump);
  assert_non_null(strstr(expected_dump, "\n  Autograd[alias]: unboxed kernel registered at autograd\n"));
  assert_non_null(strstr(expected_dump, "\n  AutogradCPU: unboxed kernel registered at agcpu\n"));

  /* Releases, each undoing what it did. */
  kd_registration_release(r[1]); /* Autograd */
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CUDA), "AutogradCUDA: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(run1(op, cu), "explicit");
  kd_registration_release(r[3]); /* CompositeExplicitAutograd */
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CUDA), "AutogradCUDA: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_NESTED_TENSOR_CPU), "NestedTensorCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(run1(op, cu), "implicit");
  kd_registration_release(r[4]); /* AutogradCPU */
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(run1(op, t), "cpu");
  kd_registration_release(r[2]); /* CPU */
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  kd_registration_release(r[0]);
  KD_ASSERT_OK(kd_dispatcher_check());

  /* Every order of registration and release gives the same table. */
  assert_int_equal(permute_check_op("agp::f", libs, names, ks, 5, expected, expected_dump), 120);
  for (int j = 0; j < 5; j++) kd_library_close(libs[j]);
  kd_library_close(def);
  kd_tensor_release(t);
  kd_tensor_release(cu);
}

/* has_backend_kernel: a CPU kernel keeps CompositeImplicitAutograd out of
 * AutogradCPU (which falls through to CPU) but not out of AutogradCUDA;
 * a NonFunctional kernel does not count; the nested keys. */
static void test_has_backend_kernel(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "hbk", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "g(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *cia = kd_test_open_lib(KD_LIBRARY_IMPL, "hbk", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "hbk", KD_KEY_CPU);
  kd_library *nf = kd_test_open_lib(KD_LIBRARY_IMPL, "hbk",
                                    KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL);
  kd_library *nt = kd_test_open_lib(KD_LIBRARY_IMPL, "hbk", KD_KEY_NESTED_TENSOR_CUDA);
  kd_library *ciant = kd_test_open_lib(KD_LIBRARY_IMPL, "hbk",
                                       KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR);
  kd_kernel ki = named(kd_kernel_unboxed(k_implicit, SIG1), "implicit"),
            kc = named(kd_kernel_unboxed(k_cpu, SIG1), "cpu"),
            kn = named(kd_kernel_unboxed(k_nonfunctional, SIG1), "nonfunctional"),
            knt = named(kd_kernel_unboxed(k_nested, SIG1), "nested");
  kd_tensor *t = tensor_on(KD_DEVICE_CPU), *cu = tensor_on(KD_DEVICE_CUDA);
  kd_op *f, *g;
  kd_registration *rc, *rnt, *rciant;
  KD_ASSERT_OK(kd_library_impl(cia, "f", &ki, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &kc, &rc));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_OK(kd_op_find("hbk::f", "", &f));
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_CUDA), "AutogradCUDA: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_CUDA), "CUDA: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(run1(f, t), "cpu");
  KD_ASSERT_STR_EQ(run1(f, cu), "implicit");
  /* The missing-kernel message lists the keys with kernels, not the
   * built-in fallthroughs. */
  kd_registration_release(rc);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(run1(f, t), "implicit");

  /* CompositeExplicitAutogradNonFunctional fills the dense, Quantized and
   * SparseCsr keys but not Sparse, and does not keep the math kernel out of
   * the autograd keys. */
  KD_ASSERT_OK(kd_library_impl(cia, "g", &ki, NULL));
  KD_ASSERT_OK(kd_library_impl(nf, "g", &kn, NULL));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_OK(kd_op_find("hbk::g", "", &g));
  KD_ASSERT_STR_EQ(slot(g, KD_KEY_CPU), "CPU: unboxed [default backend kernel] from nonfunctional");
  KD_ASSERT_STR_EQ(slot(g, KD_KEY_QUANTIZED_CPU),
                   "QuantizedCPU: unboxed [default backend kernel] from nonfunctional");
  KD_ASSERT_STR_EQ(slot(g, KD_KEY_SPARSE_CPU), "SparseCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(g, KD_KEY_UNDEFINED),
                   "Undefined: unboxed [default backend kernel] from nonfunctional");
  KD_ASSERT_STR_EQ(slot(g, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(run1(g, t), "implicit");
  {
    kd_inference_mode_guard im = kd_inference_mode_enter(true);
    KD_ASSERT_STR_EQ(run1(g, t), "nonfunctional");
    kd_inference_mode_exit(im);
  }

  /* The nested keys: a NestedTensor kernel is AutogradNestedTensor's backend;
   * CompositeImplicitAutogradNestedTensor fills the NestedTensor keys and
   * AutogradNestedTensor (not Undefined) before CompositeImplicitAutograd. */
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_NESTED_TENSOR),
                   "AutogradNestedTensor: unboxed [math kernel] from implicit");
  KD_ASSERT_OK(kd_library_impl(nt, "f", &knt, &rnt));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_NESTED_TENSOR), "AutogradNestedTensor: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_NESTED_TENSOR_CUDA), "NestedTensorCUDA: unboxed [kernel] from nested");
  kd_registration_release(rnt);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_NESTED_TENSOR),
                   "AutogradNestedTensor: unboxed [math kernel] from implicit");
  KD_ASSERT_OK(kd_library_impl(ciant, "f", &knt, &rciant));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_NESTED_TENSOR_META), "NestedTensorMeta: unboxed [nested kernel] from nested");
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_NESTED_TENSOR),
                   "AutogradNestedTensor: unboxed [nested kernel] from nested");
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_UNDEFINED), "Undefined: unboxed [math kernel] from implicit");
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  kd_registration_release(rciant);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(f, KD_KEY_NESTED_TENSOR_META), "NestedTensorMeta: unboxed [math kernel] from implicit");
  kd_library_close(ciant);
  kd_library_close(nt);
  kd_library_close(nf);
  kd_library_close(cpu);
  kd_library_close(cia);
  kd_library_close(def);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(t);
  kd_tensor_release(cu);
}

/* The missing-kernel message names the keys that have kernels, without the
 * built-in autograd fallthroughs, and a call goes through the autograd keys
 * to the backend's slot. */
static void test_missing_lists_real_kernels(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "avl", KD_KEY_UNDEFINED);
  kd_library *meta = kd_test_open_lib(KD_LIBRARY_IMPL, "avl", KD_KEY_META);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_cpu, SIG1);
  KD_ASSERT_OK(kd_library_impl(meta, "f", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("avl::f", "", &op));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  KD_ASSERT_ERR(call1(op, t), KD_ENOKERNEL,
                "Could not run 'avl::f' with arguments from the 'CPU' backend.");
  KD_ASSERT_ERR(call1(op, t), KD_ENOKERNEL, "'avl::f' is only available for these backends: [Meta].");
  KD_ASSERT_ERR(call1_boxed(op, t), KD_ENOKERNEL, "available for these backends: [Meta].");
  kd_library_close(meta);
  kd_library_close(def);
  kd_tensor_release(t);
}

/* AutogradOther with a CompositeImplicitAutograd kernel and a kernel at a
 * backend mapped to it (Quantized, Sparse, SparseCsr): the ambiguous kernel,
 * which fails naming the operator. */
static void test_autograd_other_ambiguity(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "amb", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *cia = kd_test_open_lib(KD_LIBRARY_IMPL, "amb", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD);
  kd_library *q = kd_test_open_lib(KD_LIBRARY_IMPL, "amb", KD_KEY_QUANTIZED_CPU);
  kd_library *csr = kd_test_open_lib(KD_LIBRARY_IMPL, "amb", KD_KEY_SPARSE_CSR_META);
  kd_library *ago = kd_test_open_lib(KD_LIBRARY_IMPL, "amb", KD_KEY_AUTOGRAD_OTHER);
  kd_library *cea = kd_test_open_lib(KD_LIBRARY_IMPL, "amb", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD);
  kd_kernel ki = named(kd_kernel_unboxed(k_implicit, SIG1), "implicit"),
            kq = named(kd_kernel_unboxed(k_quantized, SIG1), "quantized"),
            ka = named(kd_kernel_unboxed(k_agother, SIG1), "agother"),
            ke = named(kd_kernel_unboxed(k_explicit, SIG1), "explicit");
  kd_registration *rq, *rcsr, *ra, *re, *ri;
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  kd_keyset keys = kd_keyset_of(KD_KEY_AUTOGRAD_OTHER) | kd_keyset_of(KD_KEY_QUANTIZED_CPU);
  /* The backend kernel first, then the composite. */
  KD_ASSERT_OK(kd_library_impl(q, "f", &kq, &rq));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("amb::f", "", &op));
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: " BUILTIN_FT);
  ran[0] = 0;
  KD_ASSERT_OK(call1_keys(op, keys, t));
  KD_ASSERT_STR_EQ(ran, "quantized");
  KD_ASSERT_OK(kd_library_impl(cia, "f", &ki, &ri));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER),
                   "AutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch "
                   "(ambiguous autogradother)");
  /* AutogradOther's backends only: AutogradCPU takes the math kernel. */
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  ran[0] = 0;
  KD_ASSERT_ERR(call1_keys(op, keys, t), KD_EUNSUPPORTED,
                "'amb::f' has kernels for both CompositeImplicitAutograd and a backend mapped to "
                "AutogradOther");
  KD_ASSERT_ERR(call1_boxed_keys(op, keys, t), KD_EUNSUPPORTED,
                "register a dedicated Autograd<backend> kernel");
  KD_ASSERT_STR_EQ(ran, ""); /* nothing ran */
  /* Without AutogradOther in the key set (inference mode's exclusion) the
   * backend kernel runs. */
  ran[0] = 0;
  KD_ASSERT_OK(call1_keys(op, kd_keyset_of(KD_KEY_QUANTIZED_CPU), t));
  KD_ASSERT_STR_EQ(ran, "quantized");
  /* A kernel at AutogradOther settles it; its release brings the ambiguity
   * back. */
  KD_ASSERT_OK(kd_library_impl(ago, "f", &ka, &ra));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: unboxed [kernel] from agother");
  ran[0] = 0;
  KD_ASSERT_OK(call1_keys(op, keys, t));
  KD_ASSERT_STR_EQ(ran, "agother");
  kd_registration_release(ra);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER),
                   "AutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch "
                   "(ambiguous autogradother)");
  /* The quantized kernel gone: the math kernel; a SparseCsr kernel (another
   * functionality, another backend) makes it ambiguous again. */
  kd_registration_release(rq);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: unboxed [math kernel] from implicit");
  ran[0] = 0;
  KD_ASSERT_OK(call1_keys(op, keys, t));
  KD_ASSERT_STR_EQ(ran, "implicit");
  KD_ASSERT_OK(kd_library_impl(csr, "f", &kq, &rcsr));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER),
                   "AutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch "
                   "(ambiguous autogradother)");
  /* CompositeExplicitAutograd does not settle it (the ambiguity rule comes
   * first), but without a backend kernel it keeps the math kernel out. */
  KD_ASSERT_OK(kd_library_impl(cea, "f", &ke, &re));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER),
                   "AutogradOther: unboxed+boxed [ambiguous autogradother] from kdispatch "
                   "(ambiguous autogradother)");
  kd_registration_release(rcsr);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: " BUILTIN_FT);
  kd_registration_release(re);
  kd_registration_release(ri);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cea);
  kd_library_close(ago);
  kd_library_close(csr);
  kd_library_close(q);
  kd_library_close(cia);
  kd_library_close(def);
  kd_tensor_release(t);
}

/* A kernel at an Autograd<B> key redispatches to the backend: below its
 * whole functionality (AutogradCUDA with CPU and CUDA keys goes to CUDA,
 * not to AutogradCPU). */
static void test_autograd_redispatch(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "agr", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "g(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "agr", KD_KEY_CPU);
  kd_library *cuda = kd_test_open_lib(KD_LIBRARY_IMPL, "agr", KD_KEY_CUDA);
  kd_library *agcpu = kd_test_open_lib(KD_LIBRARY_IMPL, "agr", KD_KEY_AUTOGRAD_CPU);
  kd_library *agcuda = kd_test_open_lib(KD_LIBRARY_IMPL, "agr", KD_KEY_AUTOGRAD_CUDA);
  kd_kernel kc = kd_kernel_unboxed(k_cpu, SIG1), kcu = kd_kernel_unboxed(k_cuda, SIG1),
            ka = kd_kernel_unboxed(k_agcpu, SIG1), kacu = kd_kernel_unboxed(k_agcuda, SIG1),
            kb = kd_kernel_boxed(kb_agcpu);
  const char *fg[2] = {"f", "g"};
  for (int i = 0; i < 2; i++) {
    KD_ASSERT_OK(kd_library_impl(cpu, fg[i], &kc, NULL));
    KD_ASSERT_OK(kd_library_impl(cuda, fg[i], &kcu, NULL));
  }
  KD_ASSERT_OK(kd_library_impl(agcpu, "f", &ka, NULL));
  KD_ASSERT_OK(kd_library_impl(agcuda, "f", &kacu, NULL));
  KD_ASSERT_OK(kd_library_impl(agcpu, "g", &kb, NULL));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_op *f, *g;
  KD_ASSERT_OK(kd_op_find("agr::f", "", &f));
  KD_ASSERT_OK(kd_op_find("agr::g", "", &g));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU), *cu = tensor_on(KD_DEVICE_CUDA);
  KD_ASSERT_STR_EQ(run1(f, t), "agcpu,cpu");
  KD_ASSERT_STR_EQ(run1(f, cu), "agcuda,cuda");
  ran[0] = 0;
  KD_ASSERT_OK(call1_boxed(f, t));
  KD_ASSERT_STR_EQ(ran, "agcpu,cpu");
  /* A boxed kernel at AutogradCPU, called typed and boxed. */
  KD_ASSERT_STR_EQ(run1(g, t), "agcpu_boxed,cpu");
  ran[0] = 0;
  KD_ASSERT_OK(call1_boxed(g, t));
  KD_ASSERT_STR_EQ(ran, "agcpu_boxed,cpu");
  /* Both backends' keys: AutogradCUDA wins, and its redispatch skips
   * AutogradCPU. */
  kd_keyset both = kd_tensor_key_set(t) | kd_tensor_key_set(cu);
  ran[0] = 0;
  KD_ASSERT_OK(call1_keys(f, both, t));
  KD_ASSERT_STR_EQ(ran, "agcuda,cuda");
  ran[0] = 0;
  KD_ASSERT_OK(call1_boxed_keys(f, both, t));
  KD_ASSERT_STR_EQ(ran, "agcuda,cuda");
  kd_library_close(agcuda);
  kd_library_close(agcpu);
  kd_library_close(cuda);
  kd_library_close(cpu);
  kd_library_close(def);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(t);
  kd_tensor_release(cu);
}

/* A fallback registered at AutogradCPU replaces the built-in fallthrough
 * there (only there) while it lasts. */
static void test_autograd_fallback(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "agfb", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "agfb", KD_KEY_CPU);
  kd_library *ag = kd_test_open_lib(KD_LIBRARY_IMPL, "agfb", KD_KEY_AUTOGRAD_CPU);
  kd_library *cia = kd_test_open_lib(KD_LIBRARY_IMPL, "agfb", KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD);
  kd_kernel kc = kd_kernel_unboxed(k_cpu, SIG1), ki = named(kd_kernel_unboxed(k_implicit, SIG1), "implicit"),
            fb = named(kd_kernel_boxed(fb_autograd), "fb_autograd"),
            ft = named(kd_kernel_fallthrough(), "ft"), ka = named(kd_kernel_unboxed(k_agcpu, SIG1), "agcpu");
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &kc, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("agfb::f", "", &op));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  KD_ASSERT_STR_EQ(run1(op, t), "cpu");
  kd_registration *rfb, *rka, *ri;
  KD_ASSERT_OK(kd_library_fallback(ag, &fb, &rfb));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: boxed [backend fallback] from fb_autograd");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CUDA), "AutogradCUDA: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(run1(op, t), "fb_autograd(agfb::f@AutogradCPU),cpu");
  ran[0] = 0;
  KD_ASSERT_OK(call1_boxed(op, t));
  KD_ASSERT_STR_EQ(ran, "fb_autograd(agfb::f@AutogradCPU),cpu");
  /* A second fallback for the key is refused; the built-in one is not a
   * registration and is never named. */
  KD_ASSERT_ERR(kd_library_fallback(ag, &ft, NULL), KD_EEXIST,
                "a fallback for dispatch key AutogradCPU is already registered (at");
  /* The operator's own kernel, and the math kernel, beat the fallback. */
  KD_ASSERT_OK(kd_library_impl(ag, "f", &ka, &rka));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(run1(op, t), "agcpu,cpu");
  kd_registration_release(rka);
  KD_ASSERT_OK(kd_library_def(def, "g(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_impl(cia, "g", &ki, &ri));
  kd_op *g;
  KD_ASSERT_OK(kd_op_find("agfb::g", "", &g));
  KD_ASSERT_STR_EQ(slot(g, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: unboxed [math kernel] from implicit");
  KD_ASSERT_OK(kd_dispatcher_check());
  /* Released: the built-in fallthrough again. */
  kd_registration_release(rfb);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(run1(op, t), "cpu");
  /* A fallthrough fallback: the same behaviour, its own name. */
  KD_ASSERT_OK(kd_library_fallback(ag, &ft, &rfb));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: fallthrough [backend fallback] from ft");
  KD_ASSERT_STR_EQ(run1(op, t), "cpu");
  kd_registration_release(rfb);
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  /* Neither kind shows in the operator's registrations. */
  char dump[4096];
  kd_op_dump(op, dump, sizeof dump);
  assert_null(strstr(dump, "Autograd"));
  kd_registration_release(ri);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cia);
  kd_library_close(ag);
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(t);
}

/* Inference mode: the autograd keys are excluded from calls, and tensors
 * made in it carry none. */
static void test_inference_mode_skips_autograd(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "inf", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "inf", KD_KEY_CPU);
  kd_library *ag = kd_test_open_lib(KD_LIBRARY_IMPL, "inf", KD_KEY_AUTOGRAD_CPU);
  kd_kernel kc = kd_kernel_unboxed(k_cpu, SIG1), ka = kd_kernel_unboxed(k_agcpu, SIG1);
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &kc, NULL));
  KD_ASSERT_OK(kd_library_impl(ag, "f", &ka, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("inf::f", "", &op));
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  KD_ASSERT_STR_EQ(run1(op, t), "agcpu,cpu");
  assert_false(kd_inference_mode_is_enabled());
  kd_inference_mode_guard g1 = kd_inference_mode_enter(true);
  assert_true(kd_inference_mode_is_enabled());
  KD_ASSERT_STR_EQ(run1(op, t), "cpu");
  ran[0] = 0;
  KD_ASSERT_OK(call1_boxed(op, t));
  KD_ASSERT_STR_EQ(ran, "cpu");
  kd_tensor *ti = tensor_on(KD_DEVICE_CPU);
  assert_true(kd_tensor_key_set(ti) == kd_keyset_of(KD_KEY_CPU));
  {
    kd_inference_mode_guard g2 = kd_inference_mode_enter(false); /* nested: off again */
    assert_false(kd_inference_mode_is_enabled());
    KD_ASSERT_STR_EQ(run1(op, t), "agcpu,cpu");
    KD_ASSERT_STR_EQ(run1(op, ti), "cpu"); /* it carries no autograd key */
    kd_inference_mode_exit(g2);
  }
  assert_true(kd_inference_mode_is_enabled());
  kd_inference_mode_exit(g1);
  assert_false(kd_inference_mode_is_enabled());
  KD_ASSERT_STR_EQ(run1(op, t), "agcpu,cpu");
  KD_ASSERT_STR_EQ(run1(op, ti), "cpu");
  kd_library_close(ag);
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(ti);
  kd_tensor_release(t);
}

/* CatchAll: first at backend-like keys (before their fallback), last at the
 * others, after a registered fallback and the built-in autograd
 * fallthrough. */
static void test_catch_all_ordering(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "cao", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *all = kd_test_open_lib(KD_LIBRARY_IMPL, "cao", KD_KEY_CATCH_ALL);
  kd_library *tr = kd_test_open_lib(KD_LIBRARY_IMPL, "cao", KD_KEY_TRACER);
  kd_library *meta = kd_test_open_lib(KD_LIBRARY_IMPL, "cao", KD_KEY_META);
  kd_library *ag = kd_test_open_lib(KD_LIBRARY_IMPL, "cao", KD_KEY_AUTOGRAD_CPU);
  kd_kernel k = named(kd_kernel_unboxed(k_all, SIG1), "all"),
            fbt = named(kd_kernel_boxed(fb_tracer), "fb_tracer"),
            fba = named(kd_kernel_boxed(fb_autograd), "fb_autograd");
  KD_ASSERT_OK(kd_library_impl(all, "f", &k, NULL));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("cao::f", "", &op));
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_UNDEFINED), "Undefined: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_CPU), "CPU: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_SPARSE_CPU), "SparseCPU: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_NESTED_TENSOR_CPU), "NestedTensorCPU: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_BACKEND_SELECT), "BackendSelect: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_OTHER), "AutogradOther: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AD_INPLACE_OR_VIEW), "ADInplaceOrView: " BUILTIN_FT);
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_TRACER), "Tracer: unboxed [catch-all] from all");
  kd_tensor *t = tensor_on(KD_DEVICE_CPU);
  KD_ASSERT_STR_EQ(run1(op, t), "all@CPU");
  /* Fallbacks: a mode's wraps the catch-all, a backend's loses to it, an
   * autograd key's replaces the built-in fallthrough. */
  kd_registration *rt, *rm, *ra;
  kd_kernel fbm = named(kd_kernel_boxed(fb_tracer), "fb_meta");
  KD_ASSERT_OK(kd_library_fallback(tr, &fbt, &rt));
  KD_ASSERT_OK(kd_library_fallback(meta, &fbm, &rm));
  KD_ASSERT_OK(kd_library_fallback(ag, &fba, &ra));
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_TRACER), "Tracer: boxed [backend fallback] from fb_tracer");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_META), "Meta: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: boxed [backend fallback] from fb_autograd");
  kd_tls_keys g = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  KD_ASSERT_STR_EQ(run1(op, t), "fb_tracer(cao::f),fb_autograd(cao::f@AutogradCPU),all@CPU");
  kd_tls_restore(g);
  kd_registration_release(ra);
  kd_registration_release(rm);
  kd_registration_release(rt);
  KD_ASSERT_OK(kd_dispatcher_check());
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_TRACER), "Tracer: unboxed [catch-all] from all");
  KD_ASSERT_STR_EQ(slot(op, KD_KEY_AUTOGRAD_CPU), "AutogradCPU: " BUILTIN_FT);
  kd_library_close(ag);
  kd_library_close(meta);
  kd_library_close(tr);
  kd_library_close(all);
  kd_library_close(def);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(t);
}

/* ---- Static registration in this program --------------------------------------------- */

static kd_status k_static(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(a[0].i + 1);
  return KD_OK;
}

KD_LIBRARY(staticdef, m) {
  kd_library_def(m, "inc(int x) -> int", NULL, 0, NULL);
}
KD_LIBRARY_FRAGMENT(staticdef, more, m) {
  kd_library_def(m, "inc2(int x) -> int", NULL, 0, NULL);
}
KD_LIBRARY_IMPL(staticdef, CATCH_ALL, m) {
  kd_kernel k = kd_kernel_unboxed(k_static, "(int) -> int");
  kd_library_impl(m, "inc", &k, NULL);
  kd_library_impl(m, "inc2", &k, NULL);
}

static void test_static_macros(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("staticdef::inc", "", &op));
  kd_arg a[1] = {{.i = 41}};
  kd_value r = kd_value_none();
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  assert_int_equal(r.u.i, 42);
  KD_ASSERT_OK(kd_op_find("staticdef::inc2", "", &op));
  /* Opening a descriptor again does nothing. */
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_def_staticdef));
  KD_ASSERT_ERR(kd_library_open_desc(NULL), KD_EINVAL, "kd_library_open_desc: NULL kd_library_desc");
}

static int count_op(kd_op *op, void *ud) {
  if (!strncmp(kd_op_name(op), "staticdef::", 11)) (*(int *)ud)++;
  return 0;
}

static void test_foreach(void **state) {
  (void)state;
  int n = 0;
  assert_int_equal(kd_ops_foreach(count_op, &n), 0);
  assert_int_equal(n, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keys),
      cmocka_unit_test(test_tls_guards),
      cmocka_unit_test(test_def_generic_list_defaults),
      cmocka_unit_test(test_basic_call_and_missing),
      cmocka_unit_test(test_stacking_and_release),
      cmocka_unit_test(test_boxed_short_path),
      cmocka_unit_test(test_alias_precedence),
      cmocka_unit_test(test_no_tensor_arguments),
      cmocka_unit_test(test_fallback_fallthrough_redispatch),
      cmocka_unit_test(test_fallback_then_new_operators),
      cmocka_unit_test(test_key_union),
      cmocka_unit_test(test_kernel_forms),
      cmocka_unit_test(test_registration_errors),
      cmocka_unit_test(test_def_kernel),
      cmocka_unit_test(test_listeners),
      cmocka_unit_test(test_every_order),
      cmocka_unit_test(test_autograd_alias_precedence),
      cmocka_unit_test(test_has_backend_kernel),
      cmocka_unit_test(test_missing_lists_real_kernels),
      cmocka_unit_test(test_autograd_other_ambiguity),
      cmocka_unit_test(test_autograd_redispatch),
      cmocka_unit_test(test_autograd_fallback),
      cmocka_unit_test(test_inference_mode_skips_autograd),
      cmocka_unit_test(test_catch_all_ordering),
      cmocka_unit_test(test_static_macros),
      cmocka_unit_test(test_foreach),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  kd__reclaim(true);
  return rc;
}
