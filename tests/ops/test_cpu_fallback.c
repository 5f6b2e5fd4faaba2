/*
 * test_cpu_fallback.c: the complete CPU fallback of a device backend (issue
 * 16) and argument definitions that never lose data, on a test-only private
 * device whose memory is host memory with every byte scrambled (XOR 0xA5):
 * a CPU kernel that reads device memory by mistake computes garbage. Every
 * result is compared with the same call on the CPU.
 */
#include <string.h>

#include "kd_test.h"
#include "kd/cpu_fallback.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

/* ---- The scrambled device (PrivateUse1, and PrivateUse2 for the helper) ---- */

typedef struct scrambled {
  int allocs, frees;
  int fail_to_host, fail_from_host; /* fail the n-th next copy (1: the next), 0: never */
} scrambled;
static scrambled dev;

static void *s_alloc(void *ctx, kd_device d, size_t n) {
  (void)d;
  ((scrambled *)ctx)->allocs++;
  return malloc(n);
}
static void s_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)d;
  (void)n;
  ((scrambled *)ctx)->frees++;
  free(p);
}
static kd_status s_to_host(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)d;
  scrambled *s = ctx;
  if (s->fail_to_host && --s->fail_to_host == 0)
    return kd_set_error(KD_EINTERNAL, "scrambled device: copy to host lost");
  for (size_t i = 0; i < n; i++) ((unsigned char *)dst)[i] = ((const unsigned char *)src)[i] ^ 0xA5;
  return KD_OK;
}
static kd_status s_from_host(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)d;
  scrambled *s = ctx;
  if (s->fail_from_host && --s->fail_from_host == 0)
    return kd_set_error(KD_EINTERNAL, "scrambled device: copy from host lost");
  for (size_t i = 0; i < n; i++) ((unsigned char *)dst)[i] = ((const unsigned char *)src)[i] ^ 0xA5;
  return KD_OK;
}

static const kd_device D1 = {KD_DEVICE_PRIVATEUSE1, 1};

static int setup(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, s_alloc, s_free, &dev, s_to_host, s_from_host};
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a));
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE2, &a));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, false));
  return 0;
}

/* ---- Helpers ---- */

static kd_tensor *cpu_f32(int ndim, const int64_t *sizes, float start, float step) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(ndim, sizes, KD_FLOAT32, kd_device_cpu(), &t));
  float *p = kd_tensor_data(t);
  for (int64_t i = 0; i < kd_tensor_numel(t); i++) p[i] = start + step * (float)i;
  return t;
}

static kd_tensor *cpu_i64(int64_t n, int64_t start) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_INT64, kd_device_cpu(), &t));
  int64_t *p = kd_tensor_data(t);
  for (int64_t i = 0; i < n; i++) p[i] = start + 3 * i;
  return t;
}

static kd_tensor *on(const kd_tensor *t, kd_device d) {
  kd_tensor *r;
  KD_ASSERT_OK(kd_tensor_to_device(t, d, &r));
  return r;
}

/* got (any device) has want's (cpu) device type `type`, dtype, sizes and values. */
static void same(const kd_tensor *got, kd_device where, const kd_tensor *want) {
  assert_non_null(got);
  kd_device gd = kd_tensor_device(got);
  if (!kd_device_equal(gd, where)) {
    char a[48], b[48];
    kd_device_format(gd, a, sizeof a);
    kd_device_format(where, b, sizeof b);
    fail_msg("result on %s, expected %s", a, b);
  }
  assert_int_equal(kd_tensor_dtype(got), kd_tensor_dtype(want));
  assert_int_equal(kd_tensor_ndim(got), kd_tensor_ndim(want));
  for (int d = 0; d < kd_tensor_ndim(want); d++)
    assert_int_equal(kd_tensor_sizes(got)[d], kd_tensor_sizes(want)[d]);
  kd_tensor *h = on(got, kd_device_cpu()), *w = on(want, kd_device_cpu());
  size_t n = (size_t)kd_tensor_numel(w) * kd_dtype_size(kd_tensor_dtype(w));
  assert_memory_equal(kd_tensor_data(h), kd_tensor_data(w), n);
  kd_tensor_release(h);
  kd_tensor_release(w);
}

static kd_op *op_named(const char *name, const char *overload) {
  kd_op *op;
  KD_ASSERT_OK(kd_op_find(name, overload, &op));
  return op;
}

static int warnings;
static char last_warning[1024];
static void on_warning(const char *msg, void *user) {
  (void)user;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", msg);
}

/* ---- Functional operators: empty slots ---- */

static void test_functional(void **state) {
  (void)state;
  int64_t sz[2] = {2, 3};
  kd_tensor *x = cpu_f32(2, sz, -2.5f, 1.25f), *y = cpu_f32(2, sz, 4.0f, -0.5f);
  kd_tensor *xd = on(x, D1), *yd = on(y, D1);
  kd_tensor *want, *got;

  /* Off: ENOKERNEL says so. */
  KD_ASSERT_ERR(kd_mul_Tensor(xd, yd, &got), KD_ENOKERNEL,
                "Could not run 'aten::mul.Tensor' with arguments from the 'PrivateUse1' backend");
  KD_ASSERT_ERR(kd_mul_Tensor(xd, yd, &got), KD_ENOKERNEL,
                "The CPU fallback is off for PrivateUse1 (kd_backend_set_cpu_fallback turns it on).");

  kd_op *mul = op_named("aten::mul", "Tensor");
  char table_off[8192], table_on[8192];
  kd_op_dump_table(mul, table_off, sizeof table_off);
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  kd_op_dump_table(mul, table_on, sizeof table_on);
  KD_ASSERT_STR_EQ(table_on, table_off); /* no table changes: off restores exactly */
  uint64_t before = kd_op_fallback_count(mul, KD_KEY_PRIVATEUSE1);
  warnings = 0;
  kd_set_warning_handler(on_warning, NULL);
  KD_ASSERT_OK(kd_mul_Tensor(x, y, &want));
  for (int i = 0; i < 3; i++) {
    KD_ASSERT_OK(kd_mul_Tensor(xd, yd, &got));
    same(got, D1, want); /* on the arguments' device index, values the CPU's */
    kd_tensor_release(got);
  }
  kd_tensor_release(want);
  assert_int_equal(kd_op_fallback_count(mul, KD_KEY_PRIVATEUSE1), before + 3);
  assert_int_equal(warnings, before ? 0 : 1); /* once per operator and backend */
  if (!before)
    assert_non_null(strstr(last_warning, "'aten::mul.Tensor' has no PrivateUse1 kernel: falling "
                                         "back to the CPU kernel"));

  /* neg, and an int64 add with alpha. */
  KD_ASSERT_OK(kd_neg(x, &want));
  KD_ASSERT_OK(kd_neg(xd, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  kd_tensor_release(want);
  kd_tensor *i = cpu_i64(5, -7), *j = cpu_i64(5, 100);
  kd_tensor *id = on(i, D1), *jd = on(j, D1);
  kd_scalar two = kd_scalar_int(2);
  KD_ASSERT_OK(kd_add_Tensor(i, j, &two, &want));
  KD_ASSERT_OK(kd_add_Tensor(id, jd, &two, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  kd_tensor_release(want);
  /* A CPU argument beside device ones (a 0-dim one, as a wrapped number). */
  KD_ASSERT_OK(kd_add_Tensor(i, j, &two, &want));
  KD_ASSERT_OK(kd_add_Tensor(id, j, &two, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  kd_tensor_release(want);

  /* The foreach sees the counts. */
  assert_true(kd_fallback_counts_foreach(NULL, NULL) >= 3);
  assert_true(kd_op_fallback_count(op_named("aten::neg", ""), KD_KEY_PRIVATEUSE1) >= 1);
  assert_int_equal(kd_op_fallback_count(mul, KD_KEY_PRIVATEUSE2), 0);
  assert_int_equal(kd_op_fallback_count(NULL, KD_KEY_PRIVATEUSE1), 0);

  /* kd_op_select_kernel says where an empty slot falls back to. */
  kd_kernel_selection sel;
  KD_ASSERT_OK(kd_op_select_kernel(mul, KD_KEY_PRIVATEUSE1, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel));
  assert_true(sel.fell_back);
  assert_int_equal(sel.key, KD_KEY_CPU);

  kd_set_warning_handler(NULL, NULL);
  kd_tensor_release(id);
  kd_tensor_release(jd);
  kd_tensor_release(i);
  kd_tensor_release(j);
  kd_tensor_release(xd);
  kd_tensor_release(yd);
  kd_tensor_release(x);
  kd_tensor_release(y);
}

/* ---- In-place and out=: written back, the same tensor returned ---- */

static void test_inplace_and_out(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  int64_t sz[1] = {6};
  kd_tensor *x = cpu_f32(1, sz, 1.0f, 0.5f), *y = cpu_f32(1, sz, -3.0f, 2.0f);
  kd_tensor *xd = on(x, D1), *yd = on(y, D1), *want;
  kd_scalar alpha = kd_scalar_double(1.5);

  /* add_: typed through the operator handle, so the returned alias shows. */
  KD_ASSERT_OK(kd_add_Tensor(x, y, &alpha, &want));
  kd_op *add_ = op_named("aten::add_", "Tensor");
  kd_arg a[3] = {{.t = xd}, {.t = yd}, {.s = &alpha}};
  kd_value r = kd_value_none();
  KD_ASSERT_OK(kd_call_unboxed(add_, a, &r));
  assert_int_equal(r.tag, KD_VALUE_TENSOR);
  assert_ptr_equal(r.u.t, xd); /* the caller's tensor, as Tensor(a!) promises */
  kd_value_destroy(&r);
  same(xd, D1, want);
  /* Through the generated entry point too. */
  KD_ASSERT_OK(kd_add_Tensor_(xd, yd, &alpha));
  kd_tensor *want2;
  KD_ASSERT_OK(kd_add_Tensor(want, y, &alpha, &want2));
  same(xd, D1, want2);
  kd_tensor_release(want2);
  kd_tensor_release(want);

  /* add.out / mul.out with out on the device, of the wrong size: resized
   * (device storage grows) and written. */
  kd_tensor *out0, *outd;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &out0));
  outd = on(out0, D1);
  KD_ASSERT_OK(kd_add_Tensor(x, y, &alpha, &want));
  kd_tensor *xd2 = on(x, D1);
  KD_ASSERT_OK(kd_add_out(xd2, yd, &alpha, outd));
  same(outd, D1, want);
  kd_tensor_release(want);
  KD_ASSERT_OK(kd_mul_Tensor(x, y, &want));
  KD_ASSERT_OK(kd_mul_out(xd2, yd, outd));
  same(outd, D1, want);
  kd_tensor_release(want);
  /* The typed call returns out itself. */
  kd_op *mul_out = op_named("aten::mul", "out");
  kd_arg m[3] = {{.t = xd2}, {.t = yd}, {.t = outd}};
  KD_ASSERT_OK(kd_call_unboxed(mul_out, m, &r));
  assert_ptr_equal(r.u.t, outd);
  kd_value_destroy(&r);

  /* Boxed: the result on the stack is the caller's tensor. */
  kd_stack s;
  kd_stack_init(&s);
  kd_value v0 = kd_value_tensor(xd), v1 = kd_value_tensor(yd), v2 = kd_value_scalar(alpha);
  KD_ASSERT_OK(kd_stack_push(&s, &v0));
  KD_ASSERT_OK(kd_stack_push(&s, &v1));
  KD_ASSERT_OK(kd_stack_push(&s, &v2));
  KD_ASSERT_OK(kd_call_boxed(add_, &s));
  assert_int_equal(s.size, 1);
  assert_ptr_equal(s.items[0].u.t, xd);
  kd_stack_free(&s);

  kd_tensor_release(xd2);
  kd_tensor_release(outd);
  kd_tensor_release(out0);
  kd_tensor_release(xd);
  kd_tensor_release(yd);
  kd_tensor_release(x);
  kd_tensor_release(y);
}

/* ---- Tensor[], Tensor?, several results; boxed ---- */

static void test_lists_optional_multi(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  int64_t sz[2] = {2, 3};
  kd_tensor *x = cpu_f32(2, sz, -1.0f, 0.75f), *y = cpu_f32(2, sz, 9.0f, -1.5f);
  kd_tensor *xd = on(x, D1), *yd = on(y, D1), *want, *got;

  kd_tensor *cl[2] = {x, y}, *dl[2] = {xd, yd};
  KD_ASSERT_OK(kd_cat((kd_tensors){cl, 2}, 1, &want));
  KD_ASSERT_OK(kd_cat((kd_tensors){dl, 2}, 1, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  kd_tensor_release(want);
  /* cat.out: a Tensor[] with an out= on the device. */
  kd_tensor *o0, *od;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &o0));
  od = on(o0, D1);
  KD_ASSERT_OK(kd_cat((kd_tensors){cl, 2}, 0, &want));
  KD_ASSERT_OK(kd_cat_out((kd_tensors){dl, 2}, 0, od));
  same(od, D1, want);
  kd_tensor_release(want);
  kd_tensor_release(od);
  kd_tensor_release(o0);

  /* clamp.Tensor with a None min and a device max. */
  KD_ASSERT_OK(kd_clamp_Tensor(x, NULL, y, &want));
  KD_ASSERT_OK(kd_clamp_Tensor(xd, NULL, yd, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  kd_tensor_release(want);

  /* max.dim: two new results, both on the device. */
  kd_tensor *wv, *wi, *gv, *gi;
  KD_ASSERT_OK(kd_max_dim(y, 1, false, &wv, &wi));
  KD_ASSERT_OK(kd_max_dim(yd, 1, false, &gv, &gi));
  same(gv, D1, wv);
  same(gi, D1, wi);
  kd_tensor_release(wv);
  kd_tensor_release(wi);
  kd_tensor_release(gv);
  kd_tensor_release(gi);

  /* max.dim_max: two out= arguments, both written back and returned as the
   * caller's tensors; the second and later calls read the schema's facts
   * (which argument each return aliases) from the fallback's cache, so the
   * call is made three times, on fresh outs each time. */
  kd_op *max_out = op_named("aten::max", "dim_max");
  KD_ASSERT_OK(kd_max_dim(y, 1, false, &wv, &wi));
  for (int rep = 0; rep < 3; rep++) {
    kd_tensor *ov, *oi, *ovd, *oid;
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_FLOAT32, kd_device_cpu(), &ov));
    KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){0}, KD_INT64, kd_device_cpu(), &oi));
    ovd = on(ov, D1);
    oid = on(oi, D1);
    kd_arg ma[5] = {{.t = yd}, {.i = 1}, {.b = false}, {.t = ovd}, {.t = oid}};
    kd_value mr[2] = {kd_value_none(), kd_value_none()};
    KD_ASSERT_OK(kd_call_unboxed(max_out, ma, mr));
    assert_int_equal(mr[0].tag, KD_VALUE_TENSOR);
    assert_int_equal(mr[1].tag, KD_VALUE_TENSOR);
    assert_ptr_equal(mr[0].u.t, ovd);
    assert_ptr_equal(mr[1].u.t, oid);
    same(ovd, D1, wv);
    same(oid, D1, wi);
    kd_value_destroy(&mr[0]);
    kd_value_destroy(&mr[1]);
    kd_tensor_release(ovd);
    kd_tensor_release(oid);
    kd_tensor_release(ov);
    kd_tensor_release(oi);
  }
  kd_tensor_release(wv);
  kd_tensor_release(wi);

  /* Boxed: cat of a Tensor[] value. */
  kd_op *cat = op_named("aten::cat", "");
  kd_stack s;
  kd_stack_init(&s);
  kd_value l, d = kd_value_int(0);
  KD_ASSERT_OK(kd_value_tensor_list(dl, 2, &l));
  KD_ASSERT_OK(kd_stack_push(&s, &l));
  KD_ASSERT_OK(kd_stack_push(&s, &d));
  KD_ASSERT_OK(kd_call_boxed(cat, &s));
  KD_ASSERT_OK(kd_cat((kd_tensors){cl, 2}, 0, &want));
  assert_int_equal(s.size, 1);
  same(s.items[0].u.t, D1, want);
  kd_tensor_release(want);
  kd_stack_free(&s);

  kd_tensor_release(xd);
  kd_tensor_release(yd);
  kd_tensor_release(x);
  kd_tensor_release(y);
}

/* ---- Why the fallback did not apply; failures ---- */

static kd_status k_only_f32(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *t;
  kd_status st = kd_tensor_to_dtype(a[0].t, KD_FLOAT32, &t);
  if (st == KD_OK) r[0] = kd_value_tensor(t), kd_tensor_release(t);
  return st;
}

static void test_messages_and_failures(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  int64_t sz[1] = {4};
  kd_tensor *x = cpu_f32(1, sz, 1.0f, 1.0f), *xd = on(x, D1), *m, *got;
  KD_ASSERT_OK(kd_tensor_empty(1, sz, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &m));
  /* An argument on a third device type. */
  KD_ASSERT_ERR(kd_mul_Tensor(xd, m, &got), KD_ENOKERNEL,
                "The CPU fallback for PrivateUse1 was tried and did not apply: argument 1 'other' "
                "is on 'meta', neither the CPU nor 'privateuseone'.");
  /* No CPU kernel for the dtype, and none at all. */
  kd_library *def, *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "fbt", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  KD_ASSERT_OK(kd_library_def(def, "only_f32(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "nowhere(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "view_of(Tensor(a) self) -> Tensor(a)", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "fbt", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel k = kd_kernel_unboxed(k_only_f32, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl_keyed(cpu, "only_f32", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k,
                                     NULL));
  kd_kernel kv = kd_kernel_unboxed(k_only_f32, "(Tensor) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "view_of", &kv, NULL));
  kd_op *only = op_named("fbt::only_f32", ""), *nowhere = op_named("fbt::nowhere", "");
  kd_tensor *h;
  KD_ASSERT_OK(kd_tensor_to_dtype(xd, KD_FLOAT64, &h)); /* a device cast, through the host */
  assert_true(kd_device_equal(kd_tensor_device(h), D1));
  kd_arg a[1] = {{.t = h}};
  kd_value r = kd_value_none();
  KD_ASSERT_ERR(kd_call_unboxed(only, a, &r), KD_ENOKERNEL,
                "CPU fallback for PrivateUse1 was tried and did not apply: no CPU kernel for "
                "dtype float64 (layout strided); registered: (CPU, ALL_LAYOUT, [float32])");
  a[0].t = xd;
  KD_ASSERT_ERR(kd_call_unboxed(nowhere, a, &r), KD_ENOKERNEL,
                "did not apply: 'fbt::nowhere' has no CPU kernel either");
  /* A view of a device tensor cannot come from the CPU. */
  KD_ASSERT_ERR(kd_call_unboxed(op_named("fbt::view_of", ""), a, &r), KD_ENOKERNEL,
                "did not apply: return 0 is a view of argument 0 'self' (Tensor(a)), and a copy on "
                "the CPU cannot be a view of a device tensor");
  /* The keyed CPU kernel itself runs for float32. */
  KD_ASSERT_OK(kd_call_unboxed(only, a, &r));
  same(r.u.t, D1, x);
  kd_value_destroy(&r);

  /* A failing move to the CPU: its error, the caller's tensors unchanged. */
  kd_tensor *y = cpu_f32(1, sz, 5.0f, -1.0f), *yd = on(y, D1);
  kd_scalar one = kd_scalar_int(1);
  kd_op *add_ = op_named("aten::add_", "Tensor");
  uint64_t ran = kd_op_fallback_count(add_, KD_KEY_PRIVATEUSE1);
  dev.fail_to_host = 2; /* self moves, other does not */
  KD_ASSERT_ERR(kd_add_Tensor_(xd, yd, &one), KD_EINTERNAL,
                "'aten::add_.Tensor': CPU fallback could not move argument 1 'other' to the CPU");
  dev.fail_to_host = 0;
  same(xd, D1, x);
  assert_int_equal(kd_op_fallback_count(add_, KD_KEY_PRIVATEUSE1), ran); /* the kernel never ran */
  /* A failing write-back: its error; the caller's tensor holds what the
   * device copy left (here: nothing written). */
  dev.fail_from_host = 1;
  KD_ASSERT_ERR(kd_add_Tensor_(xd, yd, &one), KD_EINTERNAL,
                "CPU fallback could not write mutated argument 0 'self' back to its device");
  dev.fail_from_host = 0;
  same(xd, D1, x);
  /* A failing move of a new result. */
  dev.fail_from_host = 1;
  KD_ASSERT_ERR(kd_mul_Tensor(xd, yd, &got), KD_EINTERNAL,
                "'aten::mul.Tensor': CPU fallback could not move result 0 to 'privateuseone:1'");
  dev.fail_from_host = 0;

  /* The boxed helper refuses keys that are not device backends. */
  kd_stack s;
  kd_stack_init(&s);
  kd_call c = {only, kd_keyset_of(KD_KEY_CPU), KD_KEY_CPU, NULL};
  KD_ASSERT_ERR(kd_cpu_fallback(&c, &s), KD_EINVAL, "the call's key CPU is not a device backend key");
  KD_ASSERT_ERR(kd_cpu_fallback(NULL, &s), KD_EINVAL, "NULL argument");
  kd_stack_free(&s);

  /* Off again: the old message, no fallback. */
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, false));
  KD_ASSERT_ERR(kd_call_unboxed(only, a, &r), KD_ENOKERNEL,
                "'fbt::only_f32' with arguments from the 'PrivateUse1' backend");
  kd_library_close(cpu);
  kd_library_close(def);
  kd_tensor_release(h);
  kd_tensor_release(m);
  kd_tensor_release(y);
  kd_tensor_release(yd);
  kd_tensor_release(xd);
  kd_tensor_release(x);
}

/* ---- Precedence, and the boxed helper from a backend's own fallback ---- */

static int own_calls;
static kd_status own_fallback(const kd_call *c, kd_stack *s) {
  own_calls++;
  return kd_cpu_fallback(c, s); /* the backend passes everything on */
}

static void test_precedence_and_helper(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  int64_t sz[1] = {3};
  kd_tensor *x = cpu_f32(1, sz, 2.0f, 1.0f), *want, *got;
  kd_tensor *xd = on(x, D1), *x2 = on(x, (kd_device){KD_DEVICE_PRIVATEUSE2, 0});
  KD_ASSERT_OK(kd_neg(x, &want));
  kd_library *lib1, *lib2;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "_", KD_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib1));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "_", KD_KEY_PRIVATEUSE2, __FILE__, __LINE__, &lib2));
  kd_kernel k = kd_kernel_boxed(own_fallback);
  KD_ASSERT_OK(kd_library_fallback(lib1, &k, NULL));
  KD_ASSERT_OK(kd_library_fallback(lib2, &k, NULL));
  /* The backend's own fallback wins over the CPU fallback. */
  own_calls = 0;
  kd_op *neg = op_named("aten::neg", "");
  uint64_t n1 = kd_op_fallback_count(neg, KD_KEY_PRIVATEUSE1);
  KD_ASSERT_OK(kd_neg(xd, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  assert_int_equal(own_calls, 1);
  /* PrivateUse2 has no CPU fallback switched on: the helper does it all. */
  KD_ASSERT_OK(kd_neg(x2, &got));
  same(got, (kd_device){KD_DEVICE_PRIVATEUSE2, 0}, want);
  kd_tensor_release(got);
  assert_int_equal(own_calls, 2);
  assert_int_equal(kd_op_fallback_count(neg, KD_KEY_PRIVATEUSE1), n1 + 1);
  assert_true(kd_op_fallback_count(neg, KD_KEY_PRIVATEUSE2) >= 1);
  kd_library_close(lib1);
  kd_library_close(lib2);
  /* Released: the CPU fallback again. */
  KD_ASSERT_OK(kd_neg(xd, &got));
  same(got, D1, want);
  kd_tensor_release(got);
  assert_int_equal(own_calls, 2);
  kd_tensor_release(want);
  kd_tensor_release(x2);
  kd_tensor_release(xd);
  kd_tensor_release(x);
}

/* ---- Argument definitions never lose data ---- */

static char seen_other[64];

/* A PrivateUse1 kernel-key kernel of fbt::mulout for float32: computes on
 * the host properly (the device is scrambled) and writes into out. */
static kd_status k_mulout_dev(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_device_format(kd_tensor_device(a[1].t), seen_other, sizeof seen_other);
  kd_tensor *s, *o;
  kd_status st = kd_tensor_to_device(a[0].t, kd_device_cpu(), &s);
  if (st) return st;
  if ((st = kd_tensor_to_device(a[1].t, kd_device_cpu(), &o))) {
    kd_tensor_release(s);
    return st;
  }
  float *ps = kd_tensor_data(s);
  const float *po = kd_tensor_data(o);
  for (int64_t i = 0; i < kd_tensor_numel(s); i++) ps[i] *= po[i];
  st = kd_tensor_resize_(a[2].t, kd_tensor_ndim(s), kd_tensor_sizes(s), NULL);
  if (st == KD_OK) st = kd_tensor_copy_(a[2].t, s);
  kd_tensor_release(s);
  kd_tensor_release(o);
  if (st == KD_OK) r[0] = kd_value_tensor_borrowed(a[2].t);
  return st;
}

static void test_argdefs_write_back(void **state) {
  (void)state;
  kd_library *def, *dl;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "fbu", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  KD_ASSERT_OK(kd_library_def(def, "mulout(Tensor self, Tensor other, *, Tensor(a!) out) -> "
                                   "Tensor(a!)",
                              NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "fbu", KD_KEY_PRIVATEUSE1, __FILE__, __LINE__, &dl));
  kd_kernel k = kd_kernel_unboxed(k_mulout_dev, "(Tensor, Tensor, Tensor) -> Tensor");
  KD_ASSERT_OK(
      kd_library_impl_keyed(dl, "mulout", KD_ALL_LAYOUT, KD_DTYPE_BIT(KD_FLOAT32), &k, NULL));
  kd_op *op = op_named("fbu::mulout", "");
  int64_t sz[1] = {4};
  kd_tensor *x = cpu_f32(1, sz, 1.0f, 1.0f), *y = cpu_f32(1, sz, -2.0f, 0.5f), *want;
  KD_ASSERT_OK(kd_mul_Tensor(x, y, &want));
  kd_tensor *xd = on(x, D1);

  /* The device case: out on the CPU is moved for the call (to the key
   * tensor's index, as other is) and written back; the result is out. */
  kd_tensor *out;
  KD_ASSERT_OK(kd_tensor_empty(1, sz, KD_FLOAT32, kd_device_cpu(), &out));
  memset(kd_tensor_data(out), 0, 16);
  kd_arg a[3] = {{.t = xd}, {.t = y}, {.t = out}};
  kd_value r = kd_value_none();
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  KD_ASSERT_STR_EQ(seen_other, "privateuseone:1");
  assert_ptr_equal(r.u.t, out);
  kd_value_destroy(&r);
  same(out, kd_device_cpu(), want);

  /* The dtype case: a float64 out on the device is cast for the call and
   * cast back. */
  kd_tensor *want64, *out64;
  KD_ASSERT_OK(kd_tensor_to_dtype(want, KD_FLOAT64, &want64));
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT64, D1, &out64));
  a[2].t = out64;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  assert_ptr_equal(r.u.t, out64);
  kd_value_destroy(&r);
  same(out64, D1, want64); /* resized too: the kernel resized the copy */

  /* A failing write-back is an error, never a silent KD_OK: the fourth copy
   * to the device (other moved, out cast, the kernel's write, the write-back). */
  dev.fail_from_host = 4;
  KD_ASSERT_ERR(kd_call_unboxed(op, a, &r), KD_EINTERNAL,
                "kernel 'fbu::mulout' (PrivateUse1, ALL_LAYOUT, float32): could not write mutated "
                "argument 2 'out' back");
  dev.fail_from_host = 0;

  kd_tensor_release(out64);
  kd_tensor_release(want64);
  kd_tensor_release(out);
  kd_tensor_release(xd);
  kd_tensor_release(want);
  kd_tensor_release(y);
  kd_tensor_release(x);
  kd_library_close(dl);
  kd_library_close(def);
}

/* ---- Tensor?[] and a mutated Tensor(a!)[] (custom operators) ---- */

/* self + every list item that is not None (float32, same sizes, on the CPU). */
static kd_status k_pick(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *out;
  kd_status st = kd_tensor_to_device(a[0].t, kd_device_cpu(), &out); /* a copy */
  if (st) return st;
  float *po = kd_tensor_data(out);
  for (int64_t j = 0; j < a[1].tensors.size; j++) {
    const kd_tensor *t = a[1].tensors.data[j];
    if (!t) continue;
    if (kd_tensor_device(t).type != KD_DEVICE_CPU) {
      kd_tensor_release(out);
      return kd_set_error(KD_EINVAL, "k_pick: item %lld not on the cpu", (long long)j);
    }
    const float *pt = kd_tensor_data(t);
    for (int64_t i = 0; i < kd_tensor_numel(out); i++) po[i] += pt[i];
  }
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

/* Adds 1 to every tensor of the list, in place (float32, on the CPU). */
static kd_status k_bump(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)r;
  for (int64_t j = 0; j < a[0].tensors.size; j++) {
    kd_tensor *t = a[0].tensors.data[j];
    if (kd_tensor_device(t).type != KD_DEVICE_CPU)
      return kd_set_error(KD_EINVAL, "k_bump: item %lld not on the cpu", (long long)j);
    float *p = kd_tensor_data(t);
    for (int64_t i = 0; i < kd_tensor_numel(t); i++) p[i] += 1.0f;
  }
  return KD_OK;
}

/* A copy of self made on `device` (the CPU kernel sees the CPU there). */
static kd_status k_make(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  if (a[1].device.type != KD_DEVICE_CPU)
    return kd_set_error(KD_EINVAL, "k_make: device argument not the cpu");
  kd_tensor *t;
  kd_status st = kd_tensor_to_device(a[0].t, a[1].device, &t);
  if (st == KD_OK) r[0] = kd_value_tensor(t), kd_tensor_release(t);
  return st;
}

static void test_optional_list_and_mutated_list(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  kd_library *def, *cpu;
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_DEF, "fbl", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  KD_ASSERT_OK(kd_library_def(def, "pick(Tensor self, Tensor?[] items) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "bump_(Tensor(a!)[] self) -> ()", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "make(Tensor self, Device device) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_open(KD_LIBRARY_IMPL, "fbl", KD_KEY_CPU, __FILE__, __LINE__, &cpu));
  kd_kernel kp = kd_kernel_unboxed(k_pick, "(Tensor, Tensor?[]) -> Tensor");
  kd_kernel kb = kd_kernel_unboxed(k_bump, "(Tensor[]) -> ()");
  KD_ASSERT_OK(kd_library_impl(cpu, "pick", &kp, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "bump_", &kb, NULL));
  kd_kernel km = kd_kernel_unboxed(k_make, "(Tensor, Device) -> Tensor");
  KD_ASSERT_OK(kd_library_impl(cpu, "make", &km, NULL));
  kd_op *pick = op_named("fbl::pick", ""), *bump = op_named("fbl::bump_", "");
  int64_t sz[1] = {5};
  kd_tensor *x = cpu_f32(1, sz, 1.0f, 1.0f), *y = cpu_f32(1, sz, 10.0f, 0.5f),
            *z = cpu_f32(1, sz, -4.0f, 2.0f);
  kd_tensor *xd = on(x, D1), *yd = on(y, D1), *zd = on(z, D1);

  /* Tensor?[] with a None, typed and boxed. */
  kd_tensor *citems[3] = {y, NULL, z}, *ditems[3] = {yd, NULL, zd};
  kd_arg a[2] = {{.t = x}, {.tensors = {citems, 3}}};
  kd_value want = kd_value_none(), got = kd_value_none();
  KD_ASSERT_OK(kd_call_unboxed(pick, a, &want));
  a[0].t = xd;
  a[1].tensors.data = ditems;
  KD_ASSERT_OK(kd_call_unboxed(pick, a, &got));
  same(got.u.t, D1, want.u.t);
  kd_value_destroy(&got);
  kd_stack s;
  kd_stack_init(&s);
  kd_value v0 = kd_value_tensor(xd), v1;
  KD_ASSERT_OK(kd_value_opt_tensor_list(ditems, 3, &v1));
  KD_ASSERT_OK(kd_stack_push(&s, &v0));
  KD_ASSERT_OK(kd_stack_push(&s, &v1));
  KD_ASSERT_OK(kd_call_boxed(pick, &s));
  assert_int_equal(s.size, 1);
  same(s.items[0].u.t, D1, want.u.t);
  kd_stack_free(&s);
  kd_value_destroy(&want);

  /* A Device argument says where the results go: another index of the
   * device, or the CPU. */
  kd_op *make = op_named("fbl::make", "");
  kd_device p0 = {KD_DEVICE_PRIVATEUSE1, 0};
  kd_arg mk[2] = {{.t = xd}, {.device = p0}};
  KD_ASSERT_OK(kd_call_unboxed(make, mk, &got));
  same(got.u.t, p0, x);
  kd_value_destroy(&got);
  mk[1].device = kd_device_cpu();
  KD_ASSERT_OK(kd_call_unboxed(make, mk, &got));
  same(got.u.t, kd_device_cpu(), x);
  kd_value_destroy(&got);

  /* Tensor(a!)[]: every device item written back; a CPU item written in place. */
  kd_tensor *mixed[2] = {xd, y};
  kd_arg b[1] = {{.tensors = {mixed, 2}}};
  KD_ASSERT_OK(kd_call_unboxed(bump, b, NULL));
  kd_tensor *x1 = cpu_f32(1, sz, 2.0f, 1.0f), *y1 = cpu_f32(1, sz, 11.0f, 0.5f);
  same(xd, D1, x1);
  same(y, kd_device_cpu(), y1);

  kd_tensor_release(x1);
  kd_tensor_release(y1);
  kd_tensor_release(xd);
  kd_tensor_release(yd);
  kd_tensor_release(zd);
  kd_tensor_release(x);
  kd_tensor_release(y);
  kd_tensor_release(z);
  kd_library_close(cpu);
  kd_library_close(def);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_functional, teardown),
      cmocka_unit_test_teardown(test_inplace_and_out, teardown),
      cmocka_unit_test_teardown(test_lists_optional_multi, teardown),
      cmocka_unit_test_teardown(test_messages_and_failures, teardown),
      cmocka_unit_test_teardown(test_precedence_and_helper, teardown),
      cmocka_unit_test_teardown(test_argdefs_write_back, teardown),
      cmocka_unit_test_teardown(test_optional_list_and_mutated_list, teardown),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
