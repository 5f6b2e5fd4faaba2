/*
 * Selective builds: the macros of include/kd/selective.h,
 * KD_REGISTER_KERNEL and KD_REGISTER_KERNEL_OVERLOAD, compiled at -O0 with
 * the hand-written allow-list allow_macros.h force-included (-include). The values of the tests are
 * checked at compile time; at run time, that exactly the listed (operator,
 * key, dtype) triples are registered, and that everything else fails as a
 * missing kernel. test_selective_macros_symbols checks with nm that the
 * unlisted kernels (sm_*_dropped) are not in this program.
 */
#include "kd_test.h"

#ifndef KD_SELECTIVE_BUILD
#error "test_selective_macros.c is compiled with -include allow_macros.h"
#endif

/* ---- Compile time ---------------------------------------------------------- */

_Static_assert(KD_SHOULD_REGISTER(sm, neg, CPU), "listed");
_Static_assert(!KD_SHOULD_REGISTER(sm, neg, META), "operator listed, key not");
_Static_assert(!KD_SHOULD_REGISTER(sm, sq, CPU), "not listed");
_Static_assert(KD_SHOULD_REGISTER(sm, add_Tensor, CPU), "an overload's token");
_Static_assert(!KD_SHOULD_REGISTER(sm, add, CPU), "add.Tensor is not add");
_Static_assert(KD_SHOULD_REGISTER(sm, twice, UNDEFINED), "no-tensor calls");
/* Alias keys ask whether the operator is listed at all. */
_Static_assert(KD_SHOULD_REGISTER(sm, twice, CATCH_ALL), "alias: listed operator");
_Static_assert(KD_SHOULD_REGISTER(sm, neg, COMPOSITE_EXPLICIT_AUTOGRAD), "alias");
_Static_assert(KD_SHOULD_REGISTER(sm, neg, COMPOSITE_IMPLICIT_AUTOGRAD), "alias");
_Static_assert(!KD_SHOULD_REGISTER(sm, thrice, CATCH_ALL), "alias: unlisted operator");
/* Dtypes. */
_Static_assert(KD_KERNEL_DTYPE_SELECTED(sm, neg, CPU, KD_INT64), "listed dtype");
_Static_assert(KD_KERNEL_DTYPE_SELECTED(sm, neg, CPU, KD_FLOAT32), "listed dtype");
_Static_assert(!KD_KERNEL_DTYPE_SELECTED(sm, neg, CPU, KD_INT32), "unlisted dtype");
_Static_assert(!KD_KERNEL_DTYPE_SELECTED(sm, neg, META, KD_INT64), "unlisted key");
_Static_assert(!KD_KERNEL_DTYPE_SELECTED(sm, sq, CPU, KD_FLOAT32), "unlisted operator");
_Static_assert(KD_KERNEL_DTYPE_SELECTED(sm, twice, UNDEFINED, KD_COMPLEX128), "any dtype");
_Static_assert(KD_KERNEL_DTYPE_SELECTED(sm, neg, CATCH_ALL, KD_FLOAT32), "alias");
_Static_assert(!KD_KERNEL_DTYPE_SELECTED(sm, neg, CATCH_ALL, KD_FLOAT64), "alias");
/* KD_SHOULD_REGISTER works in #if too. */
#if !KD_SHOULD_REGISTER(sm, neg, CPU) || KD_SHOULD_REGISTER(sm, sq, CPU)
#error "KD_SHOULD_REGISTER in #if"
#endif

/* ---- Kernels ----------------------------------------------------------------- */

static int ran_int32_loop; /* set when neg's int32 branch runs: it must not exist */

/* A type-generic kernel: its int32 branch is compiled out. */
static kd_status sm_neg_int(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *x = a[0].t, *y;
  kd_status st = kd_tensor_empty(kd_tensor_ndim(x), kd_tensor_sizes(x), kd_tensor_dtype(x),
                                 kd_device_cpu(), &y);
  if (st) return st;
  int64_t n = kd_tensor_numel(x);
  bool done = false;
  switch (kd_tensor_dtype(x)) {
    case KD_INT32:
      if (KD_KERNEL_DTYPE_SELECTED(sm, neg, CPU, KD_INT32)) {
        ran_int32_loop = 1;
        for (int64_t i = 0; i < n; i++)
          ((int32_t *)kd_tensor_data(y))[i] = -((const int32_t *)kd_tensor_data(x))[i];
        done = true;
      }
      break;
    case KD_INT64:
      if (KD_KERNEL_DTYPE_SELECTED(sm, neg, CPU, KD_INT64)) {
        for (int64_t i = 0; i < n; i++)
          ((int64_t *)kd_tensor_data(y))[i] = -((const int64_t *)kd_tensor_data(x))[i];
        done = true;
      }
      break;
    default:
      break;
  }
  if (!done) {
    kd_tensor_release(y);
    return kd_set_error(KD_EINTERNAL, "sm::neg: no loop for %s", kd_dtype_name(kd_tensor_dtype(x)));
  }
  r[0] = kd_value_tensor(y);
  kd_tensor_release(y);
  return KD_OK;
}

static kd_status same(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

/* The unlisted kernels: each must be absent from the program. */
static kd_status sm_neg_meta_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_abs_int_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_sq_cpu_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_sub_cpu_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_thrice_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(3 * a[0].i);
  return KD_OK;
}

static kd_status sm_mul_scalar_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_mul_plain_dropped(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}

/* The listed ones. */
static kd_status sm_add_cpu_kept(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_mul_tensor_kept(const kd_call *c, const kd_arg *a, kd_value *r) {
  return same(c, a, r);
}
static kd_status sm_twice_kept(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_int(2 * a[0].i);
  return KD_OK;
}

KD_LIBRARY(sm, m) {
  kd_library_def(m, "neg(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "abs(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "sq(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "add.Tensor(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "sub(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "twice(int x) -> int", NULL, 0, NULL);
  kd_library_def(m, "thrice(int x) -> int", NULL, 0, NULL);
  kd_library_def(m, "mul(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "mul.Tensor(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "mul.Scalar(Tensor self, Scalar other) -> Tensor", NULL, 0, NULL);
}

/* Listed for int64 (and float32, which this kernel does not serve): int64. */
KD_REGISTER_KERNEL(sm, neg, CPU, KD_ALL_LAYOUT, sm_neg_int, "(Tensor) -> Tensor", KD_INT32,
                   KD_INT64) {}
/* The key is not listed: nothing. The body would run per registered dtype. */
KD_REGISTER_KERNEL(sm, neg, META, KD_ALL_LAYOUT, sm_neg_meta_dropped, "(Tensor) -> Tensor",
                   KD_FLOAT32, KD_FLOAT64) {
  kd_kernel_args_output(kernel, 0, KD_ARGDEF_DTYPE, dtype);
}
/* Listed for float32 only, which this kernel does not serve: nothing. */
KD_REGISTER_KERNEL(sm, abs, CPU, KD_ALL_LAYOUT, sm_abs_int_dropped, "(Tensor) -> Tensor",
                   KD_INT32, KD_INT64) {}
/* Not listed at all: nothing. */
KD_REGISTER_KERNEL(sm, sq, CPU, KD_ALL_LAYOUT, sm_sq_cpu_dropped, "(Tensor) -> Tensor",
                   KD_FLOAT32) {}

/* Overloads are asked for by the token `kd trace` writes (mul_Tensor):
 * listed for float32, which this kernel serves with float64: float32. */
KD_REGISTER_KERNEL_OVERLOAD(sm, mul, Tensor, CPU, KD_ALL_LAYOUT, sm_mul_tensor_kept,
                            "(Tensor, Tensor) -> Tensor", KD_FLOAT32, KD_FLOAT64) {}
/* Another overload of a listed name, and the name without overload: nothing. */
KD_REGISTER_KERNEL_OVERLOAD(sm, mul, Scalar, CPU, KD_ALL_LAYOUT, sm_mul_scalar_dropped,
                            "(Tensor, Scalar) -> Tensor", KD_FLOAT32) {}
KD_REGISTER_KERNEL(sm, mul, CPU, KD_ALL_LAYOUT, sm_mul_plain_dropped, "(Tensor) -> Tensor",
                   KD_FLOAT32) {}

/* Hand-written registrations. */
KD_LIBRARY_IMPL(sm, CPU, m) {
  if (KD_SHOULD_REGISTER(sm, add_Tensor, CPU)) {
    kd_kernel k = kd_kernel_unboxed(sm_add_cpu_kept, "(Tensor, Tensor) -> Tensor");
    kd_library_impl(m, "add.Tensor", &k, NULL);
  }
  if (KD_SHOULD_REGISTER(sm, sub, CPU)) {
    kd_kernel k = kd_kernel_unboxed(sm_sub_cpu_dropped, "(Tensor, Tensor) -> Tensor");
    kd_library_impl(m, "sub", &k, NULL);
  }
}

KD_LIBRARY_IMPL(sm, CATCH_ALL, m) {
  if (KD_SHOULD_REGISTER(sm, twice, CATCH_ALL)) {
    kd_kernel k = kd_kernel_unboxed(sm_twice_kept, "(int) -> int");
    kd_library_impl(m, "twice", &k, NULL);
  }
  if (KD_SHOULD_REGISTER(sm, thrice, CATCH_ALL)) {
    kd_kernel k = kd_kernel_unboxed(sm_thrice_dropped, "(int) -> int");
    kd_library_impl(m, "thrice", &k, NULL);
  }
}

/* The descriptors of registrations that register nothing still exist. */
extern const kd_library_desc kd_library_kernel_sm_sq_CPU;
extern const kd_library_desc kd_library_kernel_sm_neg_META;
extern const kd_library_desc kd_library_kernel_sm_mul_Scalar_CPU;

/* ---- Run time ---------------------------------------------------------------- */

static kd_tensor *make(kd_dtype dt, kd_device dev) {
  kd_tensor *t;
  int64_t n = 3;
  if (kd_tensor_empty(1, &n, dt, dev, &t)) fail_msg("kd_tensor_empty: %s", kd_last_error());
  if (dev.type == KD_DEVICE_CPU)
    for (int64_t i = 0; i < n; i++) {
      kd_scalar v = kd_scalar_int(i + 1);
      KD_ASSERT_OK(kd_tensor_set(t, &i, &v));
    }
  return t;
}

static kd_status call1(const char *name, const char *overload, kd_tensor *x, kd_value *r) {
  kd_op *op;
  kd_status st = kd_op_find(name, overload, &op);
  if (st) return st;
  kd_arg a[2] = {{.t = x}, {.t = x}};
  *r = kd_value_none();
  return kd_call_unboxed(op, a, r);
}

static kd_status call_int(const char *name, int64_t x, int64_t *out) {
  kd_op *op;
  kd_status st = kd_op_find(name, "", &op);
  if (st) return st;
  kd_arg a[1] = {{.i = x}};
  kd_value r = kd_value_none();
  if ((st = kd_call_unboxed(op, a, &r))) return st;
  *out = r.u.i;
  kd_value_destroy(&r);
  return KD_OK;
}

typedef struct listing {
  int count;
  kd_dispatch_key key;
  bool keyed;
  kd_dtype_set dtypes;
} listing;

static int list_kernel(const kd_kernel_info *k, void *ud) {
  listing *l = ud;
  l->count++;
  l->key = k->key;
  l->keyed = k->keyed;
  l->dtypes = k->dtypes;
  return 0;
}

static listing kernels_of(const char *name, const char *overload) {
  kd_op *op;
  KD_ASSERT_OK(kd_op_find(name, overload, &op));
  listing l = {0, KD_KEY_UNDEFINED, false, 0};
  kd_op_kernels_foreach(op, list_kernel, &l);
  return l;
}

static void test_registered_dtypes(void **state) {
  (void)state;
  /* sm::neg: one registration, CPU, the intersection {int64}. */
  listing l = kernels_of("sm::neg", "");
  assert_int_equal(l.count, 1);
  assert_int_equal(l.key, KD_KEY_CPU);
  assert_true(l.keyed);
  assert_int_equal(l.dtypes, KD_DTYPE_BIT(KD_INT64));
  /* Nothing for the unlisted ones. */
  assert_int_equal(kernels_of("sm::abs", "").count, 0);
  assert_int_equal(kernels_of("sm::sq", "").count, 0);
  assert_int_equal(kernels_of("sm::sub", "").count, 0);
  assert_int_equal(kernels_of("sm::thrice", "").count, 0);
  assert_int_equal(kernels_of("sm::add", "Tensor").count, 1);
  assert_int_equal(kernels_of("sm::twice", "").count, 1);
  /* The overload macro: mul.Tensor for {float32}, nothing for mul.Scalar and mul. */
  l = kernels_of("sm::mul", "Tensor");
  assert_int_equal(l.count, 1);
  assert_true(l.keyed);
  assert_int_equal(l.dtypes, KD_DTYPE_BIT(KD_FLOAT32));
  assert_int_equal(kernels_of("sm::mul", "Scalar").count, 0);
  assert_int_equal(kernels_of("sm::mul", "").count, 0);
  KD_ASSERT_OK(kd_dispatcher_check());
}

static void test_listed_kernels_run(void **state) {
  (void)state;
  kd_tensor *x = make(KD_INT64, kd_device_cpu());
  kd_value r;
  KD_ASSERT_OK(call1("sm::neg", "", x, &r));
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(r.u.t, (int64_t[]){2}, &s));
  assert_int_equal(kd_scalar_to_int64(&s), -3);
  kd_value_destroy(&r);
  kd_tensor *f = make(KD_FLOAT32, kd_device_cpu());
  KD_ASSERT_OK(call1("sm::add", "Tensor", f, &r));
  assert_ptr_equal(r.u.t, f);
  kd_value_destroy(&r);
  KD_ASSERT_OK(call1("sm::mul", "Tensor", f, &r));
  assert_ptr_equal(r.u.t, f);
  kd_value_destroy(&r);
  int64_t i = 0;
  KD_ASSERT_OK(call_int("sm::twice", 21, &i));
  assert_int_equal(i, 42);
  kd_tensor_release(x);
  kd_tensor_release(f);
}

static void test_unlisted_fail(void **state) {
  (void)state;
  kd_tensor *i32 = make(KD_INT32, kd_device_cpu()), *f32 = make(KD_FLOAT32, kd_device_cpu());
  kd_tensor *meta = make(KD_FLOAT32, (kd_device){KD_DEVICE_META, 0});
  kd_value r;
  /* An unlisted dtype of a listed overload. */
  kd_tensor *f64 = make(KD_FLOAT64, kd_device_cpu());
  KD_ASSERT_ERR(call1("sm::mul", "Tensor", f64, &r), KD_ENOKERNEL,
                "kernel 'sm::mul.Tensor' has no CPU kernel for dtype float64 (layout strided); "
                "registered: (CPU, ALL_LAYOUT, [float32])");
  kd_tensor_release(f64);
  /* An unlisted dtype of a listed operator. */
  KD_ASSERT_ERR(call1("sm::neg", "", i32, &r), KD_ENOKERNEL,
                "kernel 'sm::neg' has no CPU kernel for dtype int32");
  /* A listed dtype the kernel does not serve. */
  KD_ASSERT_ERR(call1("sm::neg", "", f32, &r), KD_ENOKERNEL,
                "has no CPU kernel for dtype float32 (layout strided); registered: (CPU, "
                "ALL_LAYOUT, [int64])");
  /* An unlisted key, unlisted operators. */
  KD_ASSERT_ERR(call1("sm::neg", "", meta, &r), KD_ENOKERNEL,
                "Could not run 'sm::neg' with arguments from the 'Meta' backend");
  KD_ASSERT_ERR(call1("sm::abs", "", i32, &r), KD_ENOKERNEL, "Could not run 'sm::abs'");
  KD_ASSERT_ERR(call1("sm::sq", "", f32, &r), KD_ENOKERNEL, "Could not run 'sm::sq'");
  KD_ASSERT_ERR(call1("sm::sub", "", f32, &r), KD_ENOKERNEL, "Could not run 'sm::sub'");
  int64_t i;
  KD_ASSERT_ERR(call_int("sm::thrice", 1, &i), KD_ENOKERNEL, "Could not run 'sm::thrice'");
  assert_int_equal(ran_int32_loop, 0);
  kd_tensor_release(i32);
  kd_tensor_release(f32);
  kd_tensor_release(meta);
}

static void test_descriptors_exist(void **state) {
  (void)state;
  /* Opening them (again) is fine and registers nothing. */
  KD_ASSERT_STR_EQ(kd_library_kernel_sm_sq_CPU.ns, "sm");
  assert_int_equal(kd_library_kernel_sm_neg_META.key, KD_KEY_META);
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_kernel_sm_sq_CPU));
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_kernel_sm_neg_META));
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_kernel_sm_mul_Scalar_CPU));
  assert_int_equal(kernels_of("sm::mul", "Scalar").count, 0);
  assert_int_equal(kernels_of("sm::sq", "").count, 0);
  assert_int_equal(kernels_of("sm::neg", "").count, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registered_dtypes),
      cmocka_unit_test(test_listed_kernels_run),
      cmocka_unit_test(test_unlisted_fail),
      cmocka_unit_test(test_descriptors_exist),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
