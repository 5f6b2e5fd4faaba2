/* Kernel keys (PHI): kernels per (backend, layout, dtype) inside a dispatch
 * slot, selected by the key tensor; wildcards; errors listing what exists;
 * the one-line registration macros (KD_REGISTER_KERNEL, and
 * KD_REGISTER_KERNEL_OVERLOAD for an overload). */
#include "dispatch/reclaim.h"
#include "kd_test.h"

static char ran[256];
static void mark(const char *what) {
  size_t n = strlen(ran);
  snprintf(ran + n, sizeof ran - n, "%s%s", n ? "," : "", what);
}

/* A type-generic kernel: switches on the key tensor's dtype. */
static kd_status neg_int(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *x = a[0].t, *y;
  kd_status st = kd_tensor_empty(kd_tensor_ndim(x), kd_tensor_sizes(x), kd_tensor_dtype(x),
                                 kd_device_cpu(), &y);
  if (st) return st;
  for (int64_t i = 0; i < kd_tensor_numel(x); i++) {
    switch (kd_tensor_dtype(x)) {
      case KD_INT32:
        ((int32_t *)kd_tensor_data(y))[i] = -((int32_t *)kd_tensor_data(x))[i];
        break;
      case KD_INT64:
        ((int64_t *)kd_tensor_data(y))[i] = -((int64_t *)kd_tensor_data(x))[i];
        break;
      default:
        kd_tensor_release(y);
        return kd_set_error(KD_EINTERNAL, "neg_int: selected for %s", kd_dtype_name(kd_tensor_dtype(x)));
    }
  }
  mark("int");
  r[0] = kd_value_tensor(y);
  kd_tensor_release(y);
  return KD_OK;
}

#define MARKING(name, label)                                               \
  static kd_status name(const kd_call *c, const kd_arg *a, kd_value *r) { \
    (void)c;                                                               \
    mark(label);                                                           \
    r[0] = kd_value_tensor(a[0].t);                                        \
    return KD_OK;                                                          \
  }
MARKING(k_float, "float")
MARKING(k_exact, "exact")
MARKING(k_any, "any")
MARKING(k_wild, "wild")

static const char *SIG = "(Tensor) -> Tensor";

KD_LIBRARY(kk, m) {
  kd_library_def(m, "neg(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "sel(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "add(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "add.Tensor(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "add.none(Tensor self) -> Tensor", NULL, 0, NULL);
}

/* One line: int32 and int64, any layout, registered at load. */
KD_REGISTER_KERNEL(kk, neg, CPU, KD_ALL_LAYOUT, neg_int, "(Tensor) -> Tensor", KD_INT32, KD_INT64) {}

/* An overload, kk::add.Tensor: records the dtypes it was called with. */
static char add_seen[64];
static kd_status add_tensor(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  snprintf(add_seen, sizeof add_seen, "%s,%s", kd_dtype_name(kd_tensor_dtype(a[0].t)),
           kd_dtype_name(kd_tensor_dtype(a[1].t)));
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
/* The dtype list may be a macro; the body keeps `other` as it comes (never
 * cast to the key tensor's dtype). */
#define KK_ADD_DTYPES KD_INT32, KD_INT64
KD_REGISTER_KERNEL_OVERLOAD(kk, add, Tensor, CPU, KD_ALL_LAYOUT, add_tensor,
                            "(Tensor, Tensor) -> Tensor", KK_ADD_DTYPES) {
  kd_kernel_args_input(kernel, 1, KD_ARGDEF_DTYPE, KD_ALL_DTYPE);
}

/* A registration that fails at load (no valid dtype): reported with
 * kd_warn, which a handler installed before the registrations run (a
 * constructor of higher priority) records. */
static char load_warnings[2048];
static void record_warning(const char *message, void *user_data) {
  (void)user_data;
  size_t n = strlen(load_warnings);
  snprintf(load_warnings + n, sizeof load_warnings - n, "%s\n", message);
  fprintf(stderr, "kdispatch warning: %s\n", message); /* still shown */
}
__attribute__((constructor(101))) static void install_warning_handler(void) {
  kd_set_warning_handler(record_warning, NULL);
}
static kd_status add_none(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
KD_REGISTER_KERNEL_OVERLOAD(kk, add, none, CPU, KD_ALL_LAYOUT, add_none, "(Tensor) -> Tensor",
                            KD_DTYPE_UNDEFINED) {}

static kd_tensor *make(kd_dtype dt) {
  kd_tensor *t;
  kd_tensor_empty(1, (int64_t[]){2}, dt, kd_device_cpu(), &t);
  kd_scalar v = kd_scalar_int(7);
  kd_tensor_set(t, (int64_t[]){0}, &v);
  kd_tensor_set(t, (int64_t[]){1}, &v);
  return t;
}

static int count_kernels(const kd_kernel_info *k, void *ud) {
  (void)k;
  (*(int *)ud)++;
  return 0;
}

static kd_status call(kd_op *op, kd_tensor *t, kd_value *r) {
  kd_arg a[1] = {{.t = t}};
  *r = kd_value_none();
  return kd_call_unboxed(op, a, r);
}

static void test_macro_and_selection(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("kk::neg", "", &op));
  kd_tensor *i32 = make(KD_INT32), *i64 = make(KD_INT64), *f32 = make(KD_FLOAT32),
            *f16 = make(KD_FLOAT16);
  kd_value r;
  ran[0] = 0;
  KD_ASSERT_OK(call(op, i32, &r));
  kd_scalar v;
  KD_ASSERT_OK(kd_tensor_get(r.u.t, (int64_t[]){1}, &v));
  assert_int_equal(v.v.i, -7);
  kd_value_destroy(&r);
  KD_ASSERT_OK(call(op, i64, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "int,int");
  /* No kernel for float32 yet: the error lists what exists. */
  KD_ASSERT_ERR(call(op, f32, &r), KD_ENOKERNEL,
                "kernel 'kk::neg' has no CPU kernel for dtype float32 (layout strided); "
                "registered: (CPU, ALL_LAYOUT, [int32, int64])");
  /* Add floating kernels at run time. */
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "kk", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel kf = kd_kernel_unboxed(k_float, SIG);
  kd_registration *rf;
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "neg", KD_LAYOUT_STRIDED,
                                     KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_FLOAT64), &kf, &rf));
  ran[0] = 0;
  KD_ASSERT_OK(call(op, f32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_OK(call(op, i32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "float,int");
  KD_ASSERT_ERR(call(op, f16, &r), KD_ENOKERNEL,
                "no CPU kernel for dtype float16 (layout strided); registered: (CPU, strided, "
                "[float32, float64]); (CPU, ALL_LAYOUT, [int32, int64])");
  /* Boxed calls select the same way. */
  kd_stack s;
  kd_stack_init(&s);
  kd_value arg = kd_value_tensor_borrowed(f32);
  kd_stack_push(&s, &arg);
  ran[0] = 0;
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  KD_ASSERT_STR_EQ(ran, "float");
  kd_stack_clear(&s);
  arg = kd_value_tensor_borrowed(f16);
  kd_stack_push(&s, &arg);
  KD_ASSERT_ERR(kd_call_boxed(op, &s), KD_ENOKERNEL, "no CPU kernel for dtype float16");
  kd_stack_free(&s);
  /* dump and table show the keys. */
  char buf[8192];
  kd_op_dump(op, buf, sizeof buf);
  assert_non_null(strstr(buf, "CPU: unboxed kernel for (strided, [float32, float64]) registered at"));
  assert_non_null(strstr(buf, "CPU: unboxed kernel for (ALL_LAYOUT, [int32, int64]) registered at"));
  kd_op_dump_table(op, buf, sizeof buf);
  assert_non_null(strstr(buf, "\n  CPU: kernel keys [kernel]: (CPU, strided, [float32, float64]); "
                              "(CPU, ALL_LAYOUT, [int32, int64])"));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_registration_release(rf);
  KD_ASSERT_ERR(call(op, f32, &r), KD_ENOKERNEL, "no CPU kernel for dtype float32");
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(cpu);
  kd_tensor_release(i32);
  kd_tensor_release(i64);
  kd_tensor_release(f32);
  kd_tensor_release(f16);
}

static void test_precedence(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("kk::sel", "", &op));
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "kk", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel ka = kd_kernel_unboxed(k_any, SIG), kw = kd_kernel_unboxed(k_wild, SIG),
            ke = kd_kernel_unboxed(k_exact, SIG);
  kd_registration *r_any, *r_wild, *r_exact;
  /* A plain kernel serves every dtype nothing more specific serves. */
  KD_ASSERT_OK(kd_library_impl(cpu, "sel", &ka, &r_any));
  /* The layout wildcard for float32 beats it... */
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "sel", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &kw, &r_wild));
  /* ...and the exact key beats the layout wildcard, whatever the order. */
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "sel", KD_LAYOUT_STRIDED, KD_DTYPE_BIT(KD_FLOAT32), &ke,
                                     &r_exact));
  kd_tensor *f32 = make(KD_FLOAT32), *i8 = make(KD_INT8);
  kd_value r;
  ran[0] = 0;
  KD_ASSERT_OK(call(op, f32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_OK(call(op, i8, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "exact,any");
  kd_registration_release(r_exact);
  ran[0] = 0;
  KD_ASSERT_OK(call(op, f32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "wild");
  kd_registration_release(r_any);
  KD_ASSERT_ERR(call(op, i8, &r), KD_ENOKERNEL,
                "no CPU kernel for dtype int8 (layout strided); registered: (CPU, ALL_LAYOUT, [float32])");
  /* A dtype wildcard for one layout. */
  kd_registration *r_lay;
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "sel", KD_LAYOUT_STRIDED, KD_ALL_DTYPES, &ka, &r_lay));
  ran[0] = 0;
  KD_ASSERT_OK(call(op, i8, &r));
  kd_value_destroy(&r);
  KD_ASSERT_OK(call(op, f32, &r)); /* the layout wildcard for float32 is more specific */
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "any,wild");
  KD_ASSERT_OK(kd_dispatcher_check());
  /* Errors. */
  kd_library *alias;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "kk", KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD, __FILE__,
                               __LINE__, &alias));
  KD_ASSERT_ERR(kd_library_impl_keyed(alias, "sel", KD_ALL_LAYOUT, KD_ALL_DTYPES, &ka, NULL), KD_EINVAL,
                "kernel keys need a library for a runtime key, not CompositeExplicitAutograd");
  KD_ASSERT_ERR(kd_library_impl_keyed(cpu, "sel", KD_ALL_LAYOUT, 0, &ka, NULL), KD_EINVAL,
                "serves no dtype");
  KD_ASSERT_ERR(kd_library_impl_keyed(cpu, "sel", 42, KD_ALL_DTYPES, &ka, NULL), KD_EINVAL,
                "invalid layout 42");
  kd_kernel kft = kd_kernel_fallthrough();
  KD_ASSERT_ERR(kd_library_impl_keyed(cpu, "sel", KD_ALL_LAYOUT, KD_ALL_DTYPES, &kft, NULL), KD_EINVAL,
                "must be a function");
  kd_kernel kbad = kd_kernel_unboxed(k_any, "(int) -> Tensor");
  KD_ASSERT_ERR(kd_library_impl_keyed(cpu, "sel", KD_ALL_LAYOUT, KD_ALL_DTYPES, &kbad, NULL), KD_ETYPE,
                "argument 0 'self' is Tensor in the schema but int in the kernel");
  kd_library_close(alias);
  kd_library_close(cpu);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(f32);
  kd_tensor_release(i8);
}

static kd_status call2(kd_op *op, kd_tensor *a, kd_tensor *b, kd_value *r) {
  kd_arg args[2] = {{.t = a}, {.t = b}};
  *r = kd_value_none();
  return kd_call_unboxed(op, args, r);
}

extern const kd_library_desc kd_library_kernel_kk_add_Tensor_CPU;
extern const kd_library_desc kd_library_kernel_kk_add_none_CPU;

static void test_overload_macro(void **state) {
  (void)state;
  kd_op *add_t, *add;
  KD_ASSERT_OK(kd_op_find("kk::add", "Tensor", &add_t));
  KD_ASSERT_OK(kd_op_find("kk::add", "", &add));
  kd_tensor *i32 = make(KD_INT32), *i64 = make(KD_INT64), *f32 = make(KD_FLOAT32);
  kd_value r;
  /* Selected by the first tensor's dtype; the second is not cast. */
  KD_ASSERT_OK(call2(add_t, i32, f32, &r));
  assert_ptr_equal(r.u.t, i32);
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(add_seen, "int32,float32");
  KD_ASSERT_OK(call2(add_t, i64, i32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(add_seen, "int64,int32");
  /* A dtype outside the set: the kernel-keys error names operator and dtype. */
  add_seen[0] = 0;
  KD_ASSERT_ERR(call2(add_t, f32, i32, &r), KD_ENOKERNEL,
                "kernel 'kk::add.Tensor' has no CPU kernel for dtype float32 (layout strided); "
                "registered: (CPU, ALL_LAYOUT, [int32, int64])");
  KD_ASSERT_STR_EQ(add_seen, "");
  kd_kernel_selection sel;
  KD_ASSERT_OK(kd_op_select_kernel(add_t, KD_KEY_CPU, KD_LAYOUT_STRIDED, KD_INT64, &sel));
  assert_true(sel.keyed);
  assert_int_equal(sel.layout, KD_ALL_LAYOUT);
  assert_int_equal(sel.dtypes, KD_DTYPE_BIT(KD_INT32) | KD_DTYPE_BIT(KD_INT64));
  /* Only that overload: kk::add itself has no kernel. */
  KD_ASSERT_ERR(call(add, i32, &r), KD_ENOKERNEL,
                "Could not run 'kk::add' with arguments from the 'CPU' backend");
  /* The descriptor names the overload; opening it again registers nothing more. */
  KD_ASSERT_STR_EQ(kd_library_kernel_kk_add_Tensor_CPU.ns, "kk");
  assert_int_equal(kd_library_kernel_kk_add_Tensor_CPU.kind, KD_LIBRARY_IMPL);
  assert_int_equal(kd_library_kernel_kk_add_Tensor_CPU.key, KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_kernel_kk_add_Tensor_CPU));
  int count = 0;
  kd_op_kernels_foreach(add_t, count_kernels, &count);
  assert_int_equal(count, 1);
  /* The failed registration warned, naming the macro, the overload and the key, and
   * left nothing behind. */
  if (!strstr(load_warnings, "KD_REGISTER_KERNEL_OVERLOAD(kk::add.none, CPU) at ") ||
      !strstr(load_warnings, "serves no dtype"))
    fail_msg("expected the load-time warning of kk::add.none, got:\n%s", load_warnings);
  kd_op *add_none_op;
  KD_ASSERT_OK(kd_op_find("kk::add", "none", &add_none_op));
  count = 0;
  kd_op_kernels_foreach(add_none_op, count_kernels, &count);
  assert_int_equal(count, 0);
  assert_int_equal(kd_library_kernel_kk_add_none_CPU.key, KD_KEY_CPU);
  kd_tensor_release(i32);
  kd_tensor_release(i64);
  kd_tensor_release(f32);
}

/* Kernel keys at a slot that is not a dense backend's (an autograd key, a
 * mode): selection by dtype works the same, and the arguments' backend
 * defaults to the key's column (AutogradCPU: CPU) or, for a key of no
 * backend, to anywhere: the tensors the kernel returns are not refused. */
static kd_status k_ag32(const kd_call *c, const kd_arg *a, kd_value *r) {
  mark(kd_dispatch_key_name(c->key));
  return kd_redispatch_unboxed(c, a, r);
}
MARKING(k_cpu_plain, "cpu")

static void test_keyed_beyond_backends(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "kka", KD_KEY_UNDEFINED);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "kka", KD_KEY_CPU);
  kd_library *ag = kd_test_open_lib(KD_LIBRARY_IMPL, "kka", KD_KEY_AUTOGRAD_CPU);
  kd_library *tr = kd_test_open_lib(KD_LIBRARY_IMPL, "kka", KD_KEY_TRACER);
  kd_kernel kc = kd_kernel_unboxed(k_cpu_plain, SIG), ka = kd_kernel_unboxed(k_ag32, SIG);
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &kc, NULL));
  KD_ASSERT_OK(kd_library_impl_keyed(ag, "f", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &ka, NULL));
  KD_ASSERT_OK(kd_library_impl_keyed(tr, "f", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &ka, NULL));
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("kka::f", "", &op));
  char buf[8192];
  kd_op_dump_table(op, buf, sizeof buf);
  assert_non_null(strstr(buf, "\n  AutogradCPU: kernel keys [kernel]: (AutogradCPU, ALL_LAYOUT, [float32])\n"));
  kd_tensor *f32, *f64;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, kd_device_cpu(), &f32));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT64, kd_device_cpu(), &f64));
  kd_value r = kd_value_none();
  ran[0] = 0;
  KD_ASSERT_OK(call(op, f32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "AutogradCPU,cpu");
  kd_tls_keys g = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  ran[0] = 0;
  KD_ASSERT_OK(call(op, f32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "Tracer,AutogradCPU,cpu");
  kd_tls_restore(g);
  /* A dtype the slot's kernels do not serve fails at that slot. */
  KD_ASSERT_ERR(call(op, f64, &r), KD_ENOKERNEL, "no AutogradCPU kernel for dtype float64");
  /* Inference mode leaves the autograd slot out: the CPU kernel serves
   * every dtype. */
  kd_inference_mode_guard im = kd_inference_mode_enter(true);
  ran[0] = 0;
  KD_ASSERT_OK(call(op, f64, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, "cpu");
  kd_inference_mode_exit(im);
  kd_tensor_release(f32);
  kd_tensor_release(f64);
  kd_library_close(tr);
  kd_library_close(ag);
  kd_library_close(cpu);
  kd_library_close(def);
  KD_ASSERT_OK(kd_dispatcher_check());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_macro_and_selection),
      cmocka_unit_test(test_precedence),
      cmocka_unit_test(test_overload_macro),
      cmocka_unit_test(test_keyed_beyond_backends),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  kd__reclaim(true);
  return rc;
}
