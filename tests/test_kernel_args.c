/* Kernel argument definitions and their enforcement (casts, moves, output
 * checks), the key argument, the CPU fallback with its warning, staged
 * custom kernels and their merge, kd_op_select_kernel, and the argument
 * definitions listed by kd_op_kernels_foreach. */
#include <stdlib.h>

#include "kd_test.h"

/* ---- A private device with host memory behind copy functions ---- */

static void *dev_alloc(void *ctx, kd_device d, size_t n) {
  (void)ctx;
  (void)d;
  return aligned_alloc(64, (n + 63) / 64 * 64);
}
static void dev_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)ctx;
  (void)d;
  (void)n;
  free(p);
}
static kd_status dev_to_host(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}
static kd_status dev_from_host(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}

static int setup_device(void **state) {
  (void)state;
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, dev_alloc, dev_free, NULL, dev_to_host, dev_from_host};
  return kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a) == KD_OK ? 0 : -1;
}
static int teardown_device(void **state) {
  (void)state;
  kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL);
  return 0;
}

/* ---- What kernels saw ---- */

static char seen[512];
static void note(const char *fmt, const kd_tensor *t) {
  size_t n = strlen(seen);
  snprintf(seen + n, sizeof seen - n, fmt, kd_dtype_name(kd_tensor_dtype(t)),
           kd_device_type_name(kd_tensor_device(t).type));
}

static kd_tensor *filled(kd_dtype dt, kd_device_type where, double value) {
  kd_tensor *t, *moved;
  kd_tensor_empty(1, (int64_t[]){3}, dt, kd_device_cpu(), &t);
  kd_scalar v = kd_scalar_double(value);
  for (int64_t i = 0; i < 3; i++) kd_tensor_set(t, &i, &v);
  if (where == KD_DEVICE_CPU) return t;
  kd_device d = {where, 0};
  kd_tensor_to_device(t, d, &moved);
  kd_tensor_release(t);
  return moved;
}

/* Two tensors in, notes what it got, returns a copy of the first (CPU). */
static kd_status k_binary(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  note("a=%s@%s ", a[0].t);
  note("b=%s@%s;", a[1].t);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* Returns a new bool or float32 tensor (by the closure data). */
static kd_status k_compare(const kd_call *c, const kd_arg *a, kd_value *r) {
  kd_dtype dt = c->data ? *(const kd_dtype *)c->data : KD_BOOL;
  kd_tensor *t;
  kd_status st = kd_tensor_empty(1, kd_tensor_sizes(a[0].t), dt, kd_device_cpu(), &t);
  if (st) return st;
  r[0] = kd_value_tensor(t);
  kd_tensor_release(t);
  return KD_OK;
}

/* neg on the CPU: values negated, notes where it ran. */
static kd_status k_neg_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  note("neg %s@%s;", a[0].t);
  kd_tensor *y;
  kd_status st = kd_tensor_to_dtype(a[0].t, kd_tensor_dtype(a[0].t), &y);
  if (st) return st;
  for (int64_t i = 0; i < kd_tensor_numel(y); i++) {
    kd_scalar v;
    kd_tensor_get(y, &i, &v);
    kd_scalar n = kd_scalar_double(-kd_scalar_to_double(&v));
    kd_tensor_set(y, &i, &n);
  }
  r[0] = kd_value_tensor(y);
  kd_tensor_release(y);
  return KD_OK;
}

static kd_status k_neg_dev(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  note("neg-dev %s@%s;", a[0].t);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static const char *BIN = "(Tensor, Tensor) -> Tensor";

static kd_library *defs;

static int setup_ops(void **state) {
  if (setup_device(state)) return -1;
  seen[0] = 0;
  kd_status st = kd_library_open(KD_LIBRARY_DEF, "ka", KD_KEY_UNDEFINED, __FILE__, __LINE__, &defs);
  const char *schemas[] = {"bin(Tensor a, Tensor b) -> Tensor", "idx(Tensor self, Tensor index) -> Tensor",
                           "eq(Tensor a, Tensor b) -> Tensor", "neg(Tensor self) -> Tensor",
                           "mixed(Tensor self, int n) -> Tensor"};
  for (size_t i = 0; st == KD_OK && i < sizeof schemas / sizeof *schemas; i++)
    st = kd_library_def(defs, schemas[i], NULL, 0, NULL);
  return st == KD_OK ? 0 : -1;
}

static int teardown_ops(void **state) {
  kd_library_close(defs);
  return teardown_device(state);
}

static kd_op *op_named(const char *name) {
  kd_op *op = NULL;
  kd_op_find(name, "", &op);
  return op;
}

static kd_status call2(kd_op *op, kd_tensor *a, kd_tensor *b, kd_value *r) {
  kd_arg args[2] = {{.t = a}, {.t = b}};
  *r = kd_value_none();
  return kd_call_unboxed(op, args, r);
}

/* ---- Argument definitions ---- */

static void test_default_definitions_cast_other_inputs(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_binary, BIN);
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "bin", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k, NULL));
  kd_op *op = op_named("ka::bin");
  kd_tensor *f = filled(KD_FLOAT32, KD_DEVICE_CPU, 1.5), *i = filled(KD_INT64, KD_DEVICE_CPU, 2);
  kd_value r;
  seen[0] = 0;
  /* b is int64; the kernel's definition says float32: cast for the call. */
  KD_ASSERT_OK(call2(op, f, i, &r));
  KD_ASSERT_STR_EQ(seen, "a=float32@cpu b=float32@cpu;");
  assert_ptr_equal(r.u.t, f);
  kd_value_destroy(&r);
  assert_int_equal(kd_tensor_dtype(i), KD_INT64); /* the caller's tensor is untouched */
  assert_int_equal(kd_tensor_refcount(i), 1);     /* the cast copy is gone */
  /* Boxed calls are enforced the same way. */
  kd_stack s;
  kd_stack_init(&s);
  kd_value va = kd_value_tensor(f), vb = kd_value_tensor(i);
  kd_stack_push(&s, &va);
  kd_stack_push(&s, &vb);
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  KD_ASSERT_STR_EQ(seen, "a=float32@cpu b=float32@cpu;");
  assert_int_equal(s.size, 1);
  assert_ptr_equal(s.items[0].u.t, f);
  kd_stack_free(&s);
  assert_int_equal(kd_tensor_refcount(f), 1);
  kd_tensor_release(f);
  kd_tensor_release(i);
  kd_library_close(cpu);
}

static void idx_args(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  kd_kernel_args_input(args, 1, KD_ARGDEF_DTYPE, user ? KD_ALL_DTYPE : KD_INT64);
}

static void test_changed_input_definitions(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_binary, BIN);
  /* The index must be int64, whatever the data's dtype. */
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT,
                          KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_FLOAT64), &k, 0, -1, idx_args,
                          NULL};
  kd_registration *reg;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "idx", &spec, &reg));
  kd_op *op = op_named("ka::idx");
  kd_tensor *f = filled(KD_FLOAT64, KD_DEVICE_CPU, 1), *i32 = filled(KD_INT32, KD_DEVICE_CPU, 2);
  kd_value r;
  seen[0] = 0;
  KD_ASSERT_OK(call2(op, f, i32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "a=float64@cpu b=int64@cpu;");
  kd_registration_release(reg);
  /* KD_ALL_DTYPE: never cast. */
  spec.user_data = &spec;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "idx", &spec, &reg));
  seen[0] = 0;
  KD_ASSERT_OK(call2(op, f, i32, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "a=float64@cpu b=int32@cpu;");
  kd_tensor_release(f);
  kd_tensor_release(i32);
  kd_library_close(cpu);
}

static void all_backend(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  (void)user;
  kd_kernel_args_input(args, 1, KD_ARGDEF_BACKEND, KD_ALL_BACKEND);
}

static void test_inputs_moved_unless_all_backend(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_binary, BIN);
  kd_registration *reg;
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "bin", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k, &reg));
  kd_op *op = op_named("ka::bin");
  kd_tensor *c = filled(KD_FLOAT32, KD_DEVICE_CPU, 1), *d = filled(KD_FLOAT32, KD_DEVICE_PRIVATEUSE1, 2);
  kd_arg args[2] = {{.t = c}, {.t = d}};
  kd_value r = kd_value_none();
  seen[0] = 0;
  /* Dispatched to CPU explicitly: b lives on the private device and is moved. */
  KD_ASSERT_OK(kd_call_unboxed_keys(op, kd_keyset_of(KD_KEY_CPU), args, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "a=float32@cpu b=float32@cpu;");
  kd_registration_release(reg);
  /* An input on KD_ALL_BACKEND is used where it is. */
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k, 0,
                          -1, all_backend, NULL};
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "bin", &spec, NULL));
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed_keys(op, kd_keyset_of(KD_KEY_CPU), args, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "a=float32@cpu b=float32@privateuseone;");
  kd_tensor_release(c);
  kd_tensor_release(d);
  kd_library_close(cpu);
}

static void bool_output(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  (void)user;
  kd_kernel_args_output(args, 0, KD_ARGDEF_DTYPE, KD_BOOL);
}

static void test_outputs_checked(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  static const kd_dtype as_bool = KD_BOOL, as_float = KD_FLOAT32;
  kd_kernel good = kd_kernel_closure(k_compare, BIN, (void *)&as_bool, NULL);
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT,
                          KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_INT64), &good, 0, -1,
                          bool_output, NULL};
  kd_registration *reg;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "eq", &spec, &reg));
  kd_op *op = op_named("ka::eq");
  kd_tensor *a = filled(KD_FLOAT32, KD_DEVICE_CPU, 1), *b = filled(KD_FLOAT32, KD_DEVICE_CPU, 1);
  kd_value r;
  KD_ASSERT_OK(call2(op, a, b, &r));
  assert_int_equal(kd_tensor_dtype(r.u.t), KD_BOOL);
  kd_value_destroy(&r);
  kd_registration_release(reg);
  /* A kernel that breaks its definition fails the call, naming it. */
  kd_kernel bad = kd_kernel_closure(k_compare, BIN, (void *)&as_float, NULL);
  spec.kernel = &bad;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "eq", &spec, &reg));
  KD_ASSERT_ERR(call2(op, a, b, &r), KD_EINTERNAL,
                "kernel 'ka::eq' (CPU, ALL_LAYOUT, float32) returned output 0 as (CPU, strided, "
                "float32), but its argument definition says (CPU, ALL_LAYOUT, bool)");
  assert_int_equal(r.tag, KD_VALUE_NONE);
  kd_registration_release(reg);
  /* Default definitions: the output has the key's dtype. */
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "eq", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_INT64), &good, &reg));
  kd_tensor *ia = filled(KD_INT64, KD_DEVICE_CPU, 1), *ib = filled(KD_INT64, KD_DEVICE_CPU, 1);
  KD_ASSERT_ERR(call2(op, ia, ib, &r), KD_EINTERNAL,
                "returned output 0 as (CPU, strided, bool), but its argument definition says "
                "(CPU, ALL_LAYOUT, int64)");
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(ia);
  kd_tensor_release(ib);
  kd_library_close(cpu);
}

static void bad_field(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  (void)user;
  kd_kernel_args_input(args, 0, KD_ARGDEF_DTYPE, 99);
}
static void not_a_tensor(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  (void)user;
  kd_kernel_args_input(args, 1, KD_ARGDEF_DTYPE, KD_INT64);
}
static void no_such_output(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  (void)user;
  kd_kernel_args_output(args, 3, KD_ARGDEF_DTYPE, KD_BOOL);
}

static kd_status k_mixed(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static void test_definition_errors(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_mixed, "(Tensor, int) -> Tensor");
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k, 0,
                          -1, bad_field, NULL};
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "mixed", &spec, NULL), KD_EINVAL,
                "kd_library_impl_keyed_ex(ka::mixed): argument definition for dtype float32: "
                "invalid input 0, field 2, value 99");
  spec.args = not_a_tensor;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "mixed", &spec, NULL), KD_EINVAL,
                "defines input 1 (dtype float32), but argument 1 of the schema is not a Tensor or "
                "Tensor?");
  spec.args = no_such_output;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "mixed", &spec, NULL), KD_EINVAL,
                "defines output 3 (dtype float32), but return 3 of the schema is not a Tensor");
  spec.args = NULL;
  spec.key_arg = 1;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "mixed", &spec, NULL), KD_EINVAL,
                "key argument 1 is not a Tensor argument of the schema");
  spec.key_arg = -1;
  spec.api_version = 7;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "mixed", &spec, NULL), KD_EINVAL,
                "kd_library_impl_keyed(mixed, CPU): kd_keyed_kernel api_version 7 is not "
                "supported: this library accepts only 1 (KD_KEYED_KERNEL_API_VERSION)");
  spec.api_version = KD_KEYED_KERNEL_API_VERSION;
  spec.flags = 0x80;
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "mixed", &spec, NULL), KD_EINVAL, "unknown flags 0x80");
  spec.flags = 0;
  /* Registered before the operator is defined: checked at def, which sets the
   * kernel aside and succeeds (test_signature_mismatch has the details). */
  spec.args = not_a_tensor;
  kd_kernel k2 = kd_kernel_unboxed(k_mixed, "(Tensor, int) -> Tensor");
  spec.kernel = &k2;
  kd_library *lib2;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "kb", KD_KEY_CPU, __FILE__, __LINE__, &lib2));
  KD_ASSERT_OK(kd_library_impl_keyed_ex(lib2, "later", &spec, NULL));
  kd_library *def2;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "kb", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def2));
  KD_ASSERT_OK(kd_library_def(def2, "later(Tensor self, int n) -> Tensor", NULL, 0, NULL));
  assert_non_null(strstr(kd_last_error(), "kernel for 'kb::later' (CPU) registered at "));
  assert_non_null(strstr(kd_last_error(), "defines input 1 (dtype float32), but argument 1 of "
                                          "the schema is not a Tensor or Tensor?"));
  kd_op *later;
  KD_ASSERT_OK(kd_op_find("kb::later", "", &later));
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, kd_device_cpu(), &t));
  kd_arg la[2] = {{.t = t}, {.i = 1}};
  kd_value lr = kd_value_none();
  KD_ASSERT_ERR(kd_call_unboxed(later, la, &lr), KD_ENOKERNEL,
                "A kernel registered for it was rejected: kernel for 'kb::later' (CPU)");
  kd_tensor_release(t);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_library_close(def2);
  kd_library_close(lib2);
  kd_library_close(cpu);
}

static kd_status k_second(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  note("second %s@%s;", a[1].t);
  r[0] = kd_value_tensor(a[1].t);
  return KD_OK;
}

static void key_is_index(kd_kernel_args *args, kd_dtype dtype, void *user) {
  (void)dtype;
  (void)user;
  kd_kernel_args_key(args, 1);
  kd_kernel_args_input(args, 0, KD_ARGDEF_DTYPE, KD_ALL_DTYPE);
}

static void test_key_argument(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_second, BIN);
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_INT32), &k, 0, -1,
                          key_is_index, NULL};
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "idx", &spec, NULL));
  kd_op *op = op_named("ka::idx");
  kd_tensor *f = filled(KD_FLOAT32, KD_DEVICE_CPU, 1), *i = filled(KD_INT32, KD_DEVICE_CPU, 1);
  kd_value r;
  seen[0] = 0;
  /* Selected by the index's dtype (int32), not by self's (float32). */
  KD_ASSERT_OK(call2(op, f, i, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "second int32@cpu;");
  KD_ASSERT_ERR(call2(op, i, f, &r), KD_ENOKERNEL, "no CPU kernel for dtype float32");
  /* Another registration for the slot must select by the same argument. */
  spec.args = NULL;
  spec.dtypes = KD_DTYPE_BIT(KD_INT64);
  KD_ASSERT_ERR(kd_library_impl_keyed_ex(cpu, "idx", &spec, NULL), KD_EEXIST,
                "selects by argument -1, but the one registered at");
  kd_tensor_release(f);
  kd_tensor_release(i);
  kd_library_close(cpu);
}

/* ---- CPU fallback ---- */

static int warnings;
static char last_warning[512];
static void count_warning(const char *msg, void *user) {
  (void)user;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static void test_cpu_fallback(void **state) {
  (void)state;
  kd_library *cpu, *dev;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_PRIVATEUSE1, __FILE__, __LINE__, &dev));
  kd_kernel kc = kd_kernel_unboxed(k_neg_cpu, "(Tensor) -> Tensor");
  kd_kernel kdv = kd_kernel_unboxed(k_neg_dev, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "neg", KD_ALL_LAYOUT,
                                     KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_INT64), &kc, NULL));
  KD_ASSERT_OK(kd_library_impl_keyed(dev, "neg", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_INT64), &kdv, NULL));
  kd_op *op = op_named("ka::neg");
  kd_tensor *x = filled(KD_FLOAT32, KD_DEVICE_PRIVATEUSE1, 2.5);
  kd_arg a[1] = {{.t = x}};
  kd_value r = kd_value_none();
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL,
                "kernel 'ka::neg' has no PrivateUse1 kernel for dtype float32 (layout strided); "
                "registered: (PrivateUse1, ALL_LAYOUT, [int64])");
  kd_kernel_selection sel;
  KD_ASSERT_ERR(kd_op_select_kernel(op, KD_KEY_PRIVATEUSE1, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel),
                KD_ENOKERNEL, "no PrivateUse1 kernel for dtype float32");
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  KD_ASSERT_OK(kd_op_select_kernel(op, KD_KEY_PRIVATEUSE1, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel));
  assert_true(sel.fell_back);
  assert_int_equal(sel.key, KD_KEY_CPU);
  assert_true(sel.keyed);
  assert_int_equal(sel.dtypes, KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_INT64));
  KD_ASSERT_OK(kd_op_select_kernel(op, KD_KEY_PRIVATEUSE1, KD_LAYOUT_STRIDED, KD_INT64, &sel));
  assert_false(sel.fell_back);
  assert_int_equal(sel.key, KD_KEY_PRIVATEUSE1);
  warnings = 0;
  kd_set_warning_handler(count_warning, NULL);
  seen[0] = 0;
  for (int i = 0; i < 3; i++) {
    KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
    /* The CPU kernel ran on a CPU copy; the result came back to the device. */
    assert_int_equal(kd_tensor_device(r.u.t).type, KD_DEVICE_PRIVATEUSE1);
    kd_tensor *back;
    KD_ASSERT_OK(kd_tensor_to_device(r.u.t, kd_device_cpu(), &back));
    kd_scalar v;
    KD_ASSERT_OK(kd_tensor_get(back, (int64_t[]){2}, &v));
    assert_true(kd_scalar_to_double(&v) == -2.5);
    kd_tensor_release(back);
    kd_value_destroy(&r);
  }
  KD_ASSERT_STR_EQ(seen, "neg float32@cpu;neg float32@cpu;neg float32@cpu;");
  assert_int_equal(warnings, 1); /* once per (operator, backend) */
  assert_non_null(strstr(last_warning, "'ka::neg' has no PrivateUse1 kernel for dtype float32 "
                                       "(layout strided): falling back to the CPU kernel"));
  /* Boxed too. */
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_tensor(x);
  kd_stack_push(&s, &v);
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  assert_int_equal(kd_tensor_device(s.items[0].u.t).type, KD_DEVICE_PRIVATEUSE1);
  kd_stack_free(&s);
  kd_set_warning_handler(NULL, NULL);
  /* No CPU kernel for the dtype either. */
  kd_tensor *h = filled(KD_FLOAT16, KD_DEVICE_PRIVATEUSE1, 1);
  a[0].t = h;
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL,
                "registered: (PrivateUse1, ALL_LAYOUT, [int64]); the CPU fallback for PrivateUse1 "
                "was tried and did not apply: no CPU kernel for dtype float16");
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, false));
  a[0].t = x;
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL, "no PrivateUse1 kernel for dtype float32");
  KD_ASSERT_ERR(kd_backend_set_cpu_fallback(KD_KEY_CPU, true), KD_EINVAL,
                "CPU is not a backend other than CPU");
  KD_ASSERT_ERR(kd_backend_set_cpu_fallback(KD_KEY_TRACER, true), KD_EINVAL, "not a backend");
  KD_ASSERT_ERR(kd_op_select_kernel(op, KD_KEY_CPU, KD_LAYOUT_STRIDED, (kd_dtype)40, &sel), KD_EINVAL,
                "bad key");
  kd_tensor_release(h);
  kd_tensor_release(x);
  kd_library_close(dev);
  kd_library_close(cpu);
}

/* The CPU fallback runs the CPU slot alone: not once per autograd key. A
 * call from a device tensor goes through AutogradPrivateUse1, then the
 * fallback runs CPU's kernel on CPU copies (which carry AutogradCPU) without
 * going through AutogradCPU again. */
static kd_status k_ag_note(const kd_call *c, const kd_arg *a, kd_value *r) {
  size_t n = strlen(seen);
  snprintf(seen + n, sizeof seen - n, "%s;", kd_dispatch_key_name(c->key));
  return kd_redispatch_unboxed(c, a, r);
}

static void test_cpu_fallback_not_per_autograd_key(void **state) {
  (void)state;
  kd_library *cpu, *agcpu, *agdev;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_AUTOGRAD_CPU, __FILE__, __LINE__, &agcpu));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_AUTOGRAD_PRIVATEUSE1, __FILE__, __LINE__,
                               &agdev));
  kd_kernel kc = kd_kernel_unboxed(k_neg_cpu, "(Tensor) -> Tensor");
  kd_kernel ka = kd_kernel_unboxed(k_ag_note, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "neg", &kc, NULL));
  KD_ASSERT_OK(kd_library_impl(agcpu, "neg", &ka, NULL));
  KD_ASSERT_OK(kd_library_impl(agdev, "neg", &ka, NULL));
  kd_op *op = op_named("ka::neg");
  kd_tensor *x = filled(KD_FLOAT32, KD_DEVICE_PRIVATEUSE1, 2.5);
  kd_arg a[1] = {{.t = x}};
  kd_value r = kd_value_none();
  /* Off: the device slot has no kernel, whatever the autograd slot does. */
  seen[0] = 0;
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL,
                "Could not run 'ka::neg' with arguments from the 'PrivateUse1' backend");
  KD_ASSERT_STR_EQ(seen, "AutogradPrivateUse1;");
  /* Only a dense backend key has a CPU fallback. */
  KD_ASSERT_ERR(kd_backend_set_cpu_fallback(KD_KEY_AUTOGRAD_PRIVATEUSE1, true), KD_EINVAL,
                "AutogradPrivateUse1 is not a backend other than CPU");
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  kd_set_warning_handler(count_warning, NULL);
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  KD_ASSERT_STR_EQ(seen, "AutogradPrivateUse1;neg float32@cpu;");
  assert_int_equal(kd_tensor_device(r.u.t).type, KD_DEVICE_PRIVATEUSE1);
  kd_value_destroy(&r);
  /* A CPU tensor still goes through AutogradCPU. */
  kd_tensor *c = filled(KD_FLOAT32, KD_DEVICE_CPU, 1);
  a[0].t = c;
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  KD_ASSERT_STR_EQ(seen, "AutogradCPU;neg float32@cpu;");
  kd_value_destroy(&r);
  kd_set_warning_handler(NULL, NULL);
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, false));
  kd_tensor_release(c);
  kd_tensor_release(x);
  kd_library_close(agdev);
  kd_library_close(agcpu);
  kd_library_close(cpu);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* ---- Custom kernels ---- */

static kd_status k_builtin(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  note("builtin %s@%s;", a[0].t);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static kd_status k_custom(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  note("custom %s@%s;", a[0].t);
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static void test_custom_kernels_staged_and_merged(void **state) {
  (void)state;
  kd_library *builtin, *plugin;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, "builtin.c", 10, &builtin));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, "plugin.c", 20, &plugin));
  kd_kernel kb = kd_kernel_unboxed(k_builtin, "(Tensor) -> Tensor");
  kd_kernel kc = kd_kernel_unboxed(k_custom, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl_keyed(builtin, "neg", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &kb, NULL));
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT,
                          KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_INT8), &kc, KD_KERNEL_CUSTOM, -1,
                          NULL, NULL};
  kd_registration *custom;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(plugin, "neg", &spec, &custom));
  kd_op *op = op_named("ka::neg");
  kd_tensor *f = filled(KD_FLOAT32, KD_DEVICE_CPU, 1), *i8 = filled(KD_INT8, KD_DEVICE_CPU, 1);
  kd_arg a[1] = {{.t = f}};
  kd_value r = kd_value_none();
  /* Staged: not in dispatch yet. */
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "builtin float32@cpu;");
  a[0].t = i8;
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL, "dtype int8");
  /* It would replace a built-in kernel without saying so: refused, nothing merged. */
  size_t merged = 99;
  KD_ASSERT_ERR(kd_custom_kernels_merge(&merged), KD_EEXIST,
                "custom kernel for 'ka::neg' (CPU, ALL_LAYOUT, [float32]) registered at plugin.c:20 "
                "would replace the built-in kernel registered at builtin.c:10; register it with "
                "KD_KERNEL_OVERRIDE to allow that (0 other refusals); nothing was merged");
  assert_int_equal(merged, 0);
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_ENOKERNEL, "dtype int8");
  kd_registration_release(custom);
  /* With KD_KERNEL_OVERRIDE it merges (and warns as any override). */
  spec.flags = KD_KERNEL_CUSTOM | KD_KERNEL_OVERRIDE;
  KD_ASSERT_OK(kd_library_impl_keyed_ex(plugin, "neg", &spec, &custom));
  warnings = 0;
  kd_set_warning_handler(count_warning, NULL);
  KD_ASSERT_OK(kd_custom_kernels_merge(&merged));
  kd_set_warning_handler(NULL, NULL);
  assert_int_equal(merged, 1);
  assert_int_equal(warnings, 1);
  assert_non_null(strstr(last_warning, "previous kernel: registered at builtin.c:10"));
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  a[0].t = f;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "custom int8@cpu;custom float32@cpu;");
  /* Releasing the custom kernel brings the built-in one back. */
  kd_registration_release(custom);
  seen[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(seen, "builtin float32@cpu;");
  /* A custom kernel for a dtype nobody serves needs no override; closing
   * the library drops a kernel still staged. */
  spec.flags = KD_KERNEL_CUSTOM;
  spec.dtypes = KD_DTYPE_BIT(KD_INT16);
  KD_ASSERT_OK(kd_library_impl_keyed_ex(plugin, "neg", &spec, NULL));
  KD_ASSERT_OK(kd_custom_kernels_merge(&merged));
  assert_int_equal(merged, 1);
  KD_ASSERT_OK(kd_custom_kernels_merge(&merged));
  assert_int_equal(merged, 0);
  spec.dtypes = KD_DTYPE_BIT(KD_INT32);
  KD_ASSERT_OK(kd_library_impl_keyed_ex(plugin, "neg", &spec, NULL));
  kd_library_close(plugin);
  KD_ASSERT_OK(kd_custom_kernels_merge(&merged));
  assert_int_equal(merged, 0);
  kd_tensor_release(f);
  kd_tensor_release(i8);
  kd_library_close(builtin);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* ---- Listing ---- */

typedef struct listing {
  int keyed;
  kd_arg_def out0_float32, in1_float32, in0_float32;
  uint32_t nargs, nrets;
  bool staged;
} listing;

static int collect(const kd_kernel_info *ki, void *user) {
  listing *l = user;
  if (!ki->keyed || !ki->argdefs) return 0;
  l->keyed++;
  uint32_t n = ki->nargs + ki->nrets;
  l->nargs = ki->nargs;
  l->nrets = ki->nrets;
  l->in0_float32 = ki->argdefs[KD_FLOAT32 * n + 0];
  l->in1_float32 = ki->argdefs[KD_FLOAT32 * n + 1];
  l->out0_float32 = ki->argdefs[KD_FLOAT32 * n + ki->nargs];
  l->staged = ki->staged;
  return 0;
}

static void test_listing_argument_definitions(void **state) {
  (void)state;
  kd_library *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "ka", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  static const kd_dtype as_bool = KD_BOOL;
  kd_kernel k = kd_kernel_closure(k_compare, BIN, (void *)&as_bool, NULL);
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_LAYOUT_STRIDED, KD_DTYPE_BIT(KD_FLOAT32), &k, 0,
                          -1, bool_output, NULL};
  KD_ASSERT_OK(kd_library_impl_keyed_ex(cpu, "eq", &spec, NULL));
  listing l = {0};
  kd_op_kernels_foreach(op_named("ka::eq"), collect, &l);
  assert_int_equal(l.keyed, 1);
  assert_int_equal(l.nargs, 2);
  assert_int_equal(l.nrets, 1);
  assert_int_equal(l.in0_float32.backend, KD_KEY_CPU);
  assert_int_equal(l.in0_float32.layout, KD_LAYOUT_STRIDED);
  assert_int_equal(l.in0_float32.dtype, KD_FLOAT32);
  assert_int_equal(l.in1_float32.dtype, KD_FLOAT32);
  assert_int_equal(l.out0_float32.dtype, KD_BOOL);
  assert_false(l.staged);
  /* A non-tensor argument is marked. */
  kd_kernel km = kd_kernel_unboxed(k_mixed, "(Tensor, int) -> Tensor");
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "mixed", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &km, NULL));
  memset(&l, 0, sizeof l);
  kd_op_kernels_foreach(op_named("ka::mixed"), collect, &l);
  assert_int_equal(l.in1_float32.dtype, KD_ARGDEF_NOT_TENSOR);
  assert_int_equal(l.in0_float32.layout, KD_ALL_LAYOUT);
  kd_library_close(cpu);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_definitions_cast_other_inputs),
      cmocka_unit_test(test_changed_input_definitions),
      cmocka_unit_test(test_inputs_moved_unless_all_backend),
      cmocka_unit_test(test_outputs_checked),
      cmocka_unit_test(test_definition_errors),
      cmocka_unit_test(test_key_argument),
      cmocka_unit_test(test_cpu_fallback),
      cmocka_unit_test(test_cpu_fallback_not_per_autograd_key),
      cmocka_unit_test(test_custom_kernels_staged_and_merged),
      cmocka_unit_test(test_listing_argument_definitions),
  };
  return cmocka_run_group_tests(tests, setup_ops, teardown_ops);
}
