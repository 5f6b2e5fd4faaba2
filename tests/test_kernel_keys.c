/* Kernel keys (PHI): kernels per (backend, layout, dtype) inside a dispatch
 * slot, selected by the key tensor; wildcards; errors listing what exists;
 * the one-line registration macro. */
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
}

/* One line: int32 and int64, any layout, registered at load. */
KD_REGISTER_KERNEL(kk, neg, CPU, KD_ALL_LAYOUT, neg_int, "(Tensor) -> Tensor", KD_INT32, KD_INT64) {}

static kd_tensor *make(kd_dtype dt) {
  kd_tensor *t;
  kd_tensor_empty(1, (int64_t[]){2}, dt, kd_device_cpu(), &t);
  kd_scalar v = kd_scalar_int(7);
  kd_tensor_set(t, (int64_t[]){0}, &v);
  kd_tensor_set(t, (int64_t[]){1}, &v);
  return t;
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
  char buf[2048];
  kd_op_dump(op, buf, sizeof buf);
  assert_non_null(strstr(buf, "CPU: unboxed kernel for (strided, [float32, float64]) registered at"));
  assert_non_null(strstr(buf, "CPU: unboxed kernel for (ALL_LAYOUT, [int32, int64]) registered at"));
  kd_op_dump_table(op, buf, sizeof buf);
  assert_non_null(strstr(buf, "CPU            kernel keys [kernel]: (CPU, strided, [float32, float64]); "
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_macro_and_selection),
      cmocka_unit_test(test_precedence),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  kd__reclaim(true);
  return rc;
}
