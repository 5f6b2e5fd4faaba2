/*
 * test_bitwise.c: the bitwise family (bitwise_and, bitwise_or, bitwise_xor,
 * bitwise_left_shift, bitwise_right_shift, bitwise_not), whose CPU and Meta
 * kernels ops/native/bitwise.c registers with kernel keys
 * (KD_REGISTER_KERNEL_OVERLOAD), through the generated entry points: values
 * worked out by hand, the registrations and their selection by dtype,
 * promotion of mixed dtypes, broadcasting, strides, zero size, the inplace
 * and out checks, the dtype errors, the Scalar overloads and meta tensors.
 *
 * This program links libkdops statically and bitwise.c has no constructors,
 * so every call here also proves that kd_ops_open opened the descriptors.
 */
#include <string.h>

#include "kd/library.h"
#include "kd/ops_all.h"
#include "ops_check.h"

static const kd_device CPU = {KD_DEVICE_CPU, 0};
static const kd_device META = {KD_DEVICE_META, 0};

#define REL(t) kd_tensor_release(t)

/* A 1-d tensor of dtype dt from int64 values. */
static kd_tensor *Ti(kd_dtype dt, int64_t n, const int64_t *v) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, dt, CPU, &t));
  for (int64_t i = 0; i < n; i++) {
    kd_scalar s = dt == KD_BOOL ? kd_scalar_bool(v[i] != 0) : kd_scalar_int(v[i]);
    KD_ASSERT_OK(kd_tensor_set(t, &i, &s));
  }
  return t;
}
#define TI(dt, ...)                                                     \
  Ti(dt, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})




static void expect(const kd_tensor *t, kd_dtype dt, int64_t n, const int64_t *want) {
  assert_non_null(t);
  if (kd_tensor_dtype(t) != dt)
    fail_msg("dtype %s, expected %s", kd_dtype_name(kd_tensor_dtype(t)), kd_dtype_name(dt));
  assert_int_equal(kd_tensor_numel(t), n);
  for (int64_t i = 0; i < n; i++)
    if (oc_at_int(t, i) != want[i])
      fail_msg("element %lld: got %lld, expected %lld", (long long)i, (long long)oc_at_int(t, i),
               (long long)want[i]);
}
#define EXPECT(t, dt, ...)                                                          \
  expect(t, dt, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})


/* The binary operators' three variants, by name. */
typedef kd_status (*fn_t)(kd_tensor *, kd_tensor *, kd_tensor **);
typedef kd_status (*ip_t)(kd_tensor *, kd_tensor *);
typedef kd_status (*out_t)(kd_tensor *, kd_tensor *, kd_tensor *);
typedef struct binop {
  const char *name;  /* "bitwise_and" */
  const char *loop;  /* the loop's name in dtype errors */
  fn_t fn;
  ip_t ip;
  out_t out;
  bool has_bool;     /* a CPU kernel for bool */
} binop;

static const binop OPS[] = {
    {"bitwise_and", "bitwise_and_cpu", kd_bitwise_and_Tensor, kd_bitwise_and_Tensor_,
     kd_bitwise_and_Tensor_out, true},
    {"bitwise_or", "bitwise_or_cpu", kd_bitwise_or_Tensor, kd_bitwise_or_Tensor_,
     kd_bitwise_or_Tensor_out, true},
    {"bitwise_xor", "bitwise_xor_cpu", kd_bitwise_xor_Tensor, kd_bitwise_xor_Tensor_,
     kd_bitwise_xor_Tensor_out, true},
    {"bitwise_left_shift", "lshift_cpu", kd_bitwise_left_shift_Tensor,
     kd_bitwise_left_shift_Tensor_, kd_bitwise_left_shift_Tensor_out, false},
    {"bitwise_right_shift", "rshift_cpu", kd_bitwise_right_shift_Tensor,
     kd_bitwise_right_shift_Tensor_, kd_bitwise_right_shift_Tensor_out, false},
};
#define NOPS (sizeof OPS / sizeof OPS[0])

static const kd_dtype INTS[] = {KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64};

static int setup(void **state) {
  (void)state;
  return kd_ops_open() == KD_OK ? 0 : -1;
}

/* ---- Registration and selection --------------------------------------------------- */

typedef struct listing {
  int keyed_cpu, plain_cpu, keyed_meta, other;
  kd_dtype_set cpu_dtypes, meta_dtypes;
} listing;

static int list_kernel(const kd_kernel_info *k, void *ud) {
  listing *l = ud;
  if (k->key == KD_KEY_CPU && k->keyed) {
    l->keyed_cpu++;
    l->cpu_dtypes = k->dtypes;
  } else if (k->key == KD_KEY_CPU) {
    l->plain_cpu++;
  } else if (k->key == KD_KEY_META && k->keyed) {
    l->keyed_meta++;
    l->meta_dtypes = k->dtypes;
  } else {
    l->other++;
  }
  return 0;
}

static const kd_dtype_set LOGICAL_SET = KD_DTYPE_BIT(KD_BOOL) | KD_DTYPE_BIT(KD_UINT8) |
                                        KD_DTYPE_BIT(KD_INT8) | KD_DTYPE_BIT(KD_INT16) |
                                        KD_DTYPE_BIT(KD_INT32) | KD_DTYPE_BIT(KD_INT64);

/* Every Tensor overload and bitwise_not variant: one keyed CPU kernel for
 * its dtypes, one plain CPU kernel for the others, one keyed Meta kernel
 * for every dtype, nothing else (no generated kernel left). */
static void check_registrations(const char *name, const char *overload, kd_dtype_set cpu) {
  kd_op *op;
  KD_ASSERT_OK(kd_op_find(name, overload, &op));
  listing l = {0, 0, 0, 0, 0, 0};
  kd_op_kernels_foreach(op, list_kernel, &l);
  if (l.keyed_cpu != 1 || l.plain_cpu != 1 || l.keyed_meta != 1 || l.other != 0)
    fail_msg("%s.%s: %d keyed CPU, %d plain CPU, %d keyed Meta, %d other registrations", name,
             overload, l.keyed_cpu, l.plain_cpu, l.keyed_meta, l.other);
  assert_int_equal(l.cpu_dtypes, cpu);
  assert_int_equal(l.meta_dtypes, KD_ALL_DTYPES);
  /* Selection: the keyed kernel for its dtypes, the plain one for the others. */
  for (int d = 0; d < KD_DTYPE_COUNT; d++) {
    kd_kernel_selection sel;
    KD_ASSERT_OK(kd_op_select_kernel(op, KD_KEY_CPU, KD_LAYOUT_STRIDED, (kd_dtype)d, &sel));
    assert_int_equal(sel.keyed, (cpu & KD_DTYPE_BIT(d)) != 0);
    KD_ASSERT_OK(kd_op_select_kernel(op, KD_KEY_META, KD_LAYOUT_STRIDED, (kd_dtype)d, &sel));
    assert_true(sel.keyed);
  }
}

static void test_registrations(void **state) {
  (void)state;
  const kd_dtype_set shift_set = LOGICAL_SET & ~KD_DTYPE_BIT(KD_BOOL);
  for (size_t i = 0; i < NOPS; i++) {
    char name[64], inplace[64];
    snprintf(name, sizeof name, "aten::%s", OPS[i].name);
    snprintf(inplace, sizeof inplace, "aten::%s_", OPS[i].name);
    kd_dtype_set set = OPS[i].has_bool ? LOGICAL_SET : shift_set;
    check_registrations(name, "Tensor", set);
    check_registrations(inplace, "Tensor", set);
    check_registrations(name, "Tensor_out", set);
  }
  check_registrations("aten::bitwise_not", "", LOGICAL_SET);
  check_registrations("aten::bitwise_not_", "", LOGICAL_SET);
  check_registrations("aten::bitwise_not", "out", LOGICAL_SET);
  /* The descriptors kd_ops_open opened: opening one again registers nothing more. */
  extern const kd_library_desc kd_library_kernel_aten_bitwise_and_Tensor_CPU;
  assert_int_equal(kd_library_kernel_aten_bitwise_and_Tensor_CPU.key, KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_open_desc(&kd_library_kernel_aten_bitwise_and_Tensor_CPU));
  check_registrations("aten::bitwise_and", "Tensor", LOGICAL_SET);
  /* The Scalar overloads keep their composite kernels. */
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("aten::bitwise_and", "Scalar", &op));
  kd_kernel_selection sel;
  KD_ASSERT_OK(kd_op_select_kernel(op, KD_KEY_CPU, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel));
  assert_false(sel.keyed);
  KD_ASSERT_OK(kd_dispatcher_check());
}

/* ---- Values ------------------------------------------------------------------------- */

static void test_values(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof INTS / sizeof INTS[0]; k++) {
    kd_dtype dt = INTS[k];
    bool u = dt == KD_UINT8;
    kd_tensor *a = TI(dt, 12, 10, 0, 7), *b = TI(dt, 10, 6, 5, 1), *r = NULL;
    KD_ASSERT_OK(kd_bitwise_and_Tensor(a, b, &r));
    EXPECT(r, dt, 8, 2, 0, 1);
    REL(r);
    KD_ASSERT_OK(kd_bitwise_or_Tensor(a, b, &r));
    EXPECT(r, dt, 14, 14, 5, 7);
    REL(r);
    KD_ASSERT_OK(kd_bitwise_xor_Tensor(a, b, &r));
    EXPECT(r, dt, 6, 12, 5, 6);
    REL(r);
    kd_tensor *s = TI(dt, 1, 2, 0, 3);
    KD_ASSERT_OK(kd_bitwise_left_shift_Tensor(a, s, &r));
    EXPECT(r, dt, 24, 40, 0, 56);
    REL(r);
    KD_ASSERT_OK(kd_bitwise_right_shift_Tensor(a, s, &r));
    EXPECT(r, dt, 6, 2, 0, 0);
    REL(r);
    KD_ASSERT_OK(kd_bitwise_not(a, &r));
    if (u)
      EXPECT(r, dt, 243, 245, 255, 248);
    else
      EXPECT(r, dt, -13, -11, -1, -8);
    REL(r);
    if (!u) { /* arithmetic right shift of a negative value */
      kd_tensor *n = TI(dt, -8, -1), *c = TI(dt, 1, 3);
      KD_ASSERT_OK(kd_bitwise_right_shift_Tensor(n, c, &r));
      EXPECT(r, dt, -4, -1);
      REL(r), REL(n), REL(c);
    }
    REL(a), REL(b), REL(s);
  }
  /* bool: logical results, bool dtype. */
  kd_tensor *p = TI(KD_BOOL, 1, 1, 0, 0), *q = TI(KD_BOOL, 1, 0, 1, 0), *r = NULL;
  KD_ASSERT_OK(kd_bitwise_and_Tensor(p, q, &r));
  EXPECT(r, KD_BOOL, 1, 0, 0, 0);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_or_Tensor(p, q, &r));
  EXPECT(r, KD_BOOL, 1, 1, 1, 0);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_xor_Tensor(p, q, &r));
  EXPECT(r, KD_BOOL, 0, 1, 1, 0);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_not(p, &r));
  EXPECT(r, KD_BOOL, 0, 0, 1, 1);
  REL(r), REL(p), REL(q);
}

/* ---- Promotion: the kernel is selected by the first tensor, the flow promotes ---- */

static void test_promotion(void **state) {
  (void)state;
  kd_tensor *i8 = TI(KD_INT8, 3, -2, 100), *i32 = TI(KD_INT32, 1000, 7, 256);
  kd_tensor *u8 = TI(KD_UINT8, 255, 1, 4), *b = TI(KD_BOOL, 1, 0, 1), *r = NULL;
  /* int8 & int32 -> int32 (the int8 kernel), and the other way round. */
  KD_ASSERT_OK(kd_bitwise_and_Tensor(i8, i32, &r));
  EXPECT(r, KD_INT32, 3 & 1000, -2 & 7, 100 & 256);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_or_Tensor(i32, i8, &r));
  EXPECT(r, KD_INT32, 1000 | 3, 7 | -2, 256 | 100);
  REL(r);
  /* uint8 ^ int8 -> int16; bool & uint8 -> uint8. */
  KD_ASSERT_OK(kd_bitwise_xor_Tensor(u8, i8, &r));
  EXPECT(r, KD_INT16, 255 ^ 3, 1 ^ -2, 4 ^ 100);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_and_Tensor(b, u8, &r));
  EXPECT(r, KD_UINT8, 1, 0, 0);
  REL(r);
  /* bool << int32: no bool shift kernel; the plain CPU kernel promotes to
   * int32, as PyTorch does. */
  kd_tensor *three = TI(KD_INT32, 3, 3, 3);
  KD_ASSERT_OK(kd_bitwise_left_shift_Tensor(b, three, &r));
  EXPECT(r, KD_INT32, 8, 0, 8);
  REL(r), REL(three);
  /* A 0-dim int64 tensor does not widen an int8 one (same category). */
  kd_tensor *z = NULL;
  kd_scalar five = kd_scalar_int(5);
  KD_ASSERT_OK(kd_tensor_from_scalar(&five, KD_INT64, &z));
  KD_ASSERT_OK(kd_bitwise_and_Tensor(i8, z, &r));
  EXPECT(r, KD_INT8, 1, 4, 4);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_and_Tensor(z, i8, &r)); /* selected by the int64 tensor */
  EXPECT(r, KD_INT8, 1, 4, 4);
  REL(r), REL(z), REL(i8), REL(i32), REL(u8), REL(b);
}

/* ---- Broadcasting, strides, zero size -------------------------------------------- */

/* OPS[op] of two int64 values, by hand (small non-negative shift counts). */
static int64_t ref(size_t op, int64_t a, int64_t b) {
  switch (op) {
  case 0: return a & b;
  case 1: return a | b;
  case 2: return a ^ b;
  case 3: return a << b;
  default: return a >> b;
  }
}

static void test_shapes(void **state) {
  (void)state;
  for (size_t i = 0; i < NOPS; i++) {
    /* [3,1] op [4] -> [3,4] */
    kd_tensor *col = oc_reshaped(TI(KD_INT32, 1, 2, 3), 2, (int64_t[]){3, 1});
    kd_tensor *row = TI(KD_INT32, 0, 1, 2, 3), *r = NULL;
    KD_ASSERT_OK(OPS[i].fn(col, row, &r));
    oc_expect_sizes(r, 2, (int64_t[]){3, 4});
    for (int64_t y = 0; y < 3; y++)
      for (int64_t x = 0; x < 4; x++)
        if (oc_at_int(r, y * 4 + x) != ref(i, y + 1, x))
          fail_msg("%s [%lld,%lld]", OPS[i].name, (long long)y, (long long)x);
    REL(r);
    /* a transposed view and a strided one */
    kd_tensor *base = TI(KD_INT64, 1, 2, 3, 4, 5, 6), *t = NULL, *st = NULL;
    KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0, &t));
    KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){3}, (int64_t[]){2}, 1, &st));
    KD_ASSERT_OK(OPS[i].fn(t, st, &r)); /* t = [[1,3,5],[2,4,6]], st = [2,4,6] */
    const int64_t tv[6] = {1, 3, 5, 2, 4, 6}, sv[3] = {2, 4, 6};
    for (int64_t k = 0; k < 6; k++)
      if (oc_at_int(r, k) != ref(i, tv[k], sv[k % 3]))
        fail_msg("%s strided element %lld", OPS[i].name, (long long)k);
    REL(r), REL(t), REL(st), REL(base);
    /* zero size, broadcast against [4] */
    kd_tensor *e = oc_empty_on(2, (int64_t[]){0, 4}, KD_INT32, CPU);
    KD_ASSERT_OK(OPS[i].fn(e, row, &r));
    oc_expect_sizes(r, 2, (int64_t[]){0, 4});
    assert_int_equal(kd_tensor_dtype(r), KD_INT32);
    REL(r), REL(e);
    /* shapes that do not broadcast */
    kd_tensor *three = TI(KD_INT32, 1, 2, 3);
    KD_ASSERT_ERR(OPS[i].fn(row, three, &r), KD_EINVAL,
                  "The size of tensor a (4) must match the size of tensor b (3) at non-singleton "
                  "dimension 0");
    assert_null(r);
    REL(three), REL(col), REL(row);
  }
  /* bitwise_not of a transposed view and of zero size */
  kd_tensor *base = TI(KD_INT16, 1, 2, 3, 4), *t = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 0, &t));
  KD_ASSERT_OK(kd_bitwise_not(t, &r));
  EXPECT(r, KD_INT16, ~1, ~3, ~2, ~4);
  REL(r), REL(t), REL(base);
  kd_tensor *e = oc_empty_on(1, (int64_t[]){0}, KD_BOOL, CPU);
  KD_ASSERT_OK(kd_bitwise_not(e, &r));
  assert_int_equal(kd_tensor_numel(r), 0);
  assert_int_equal(kd_tensor_dtype(r), KD_BOOL);
  REL(r), REL(e);
}

/* ---- Inplace and out -------------------------------------------------------------- */

static char warnings[1024];
static void record_warning(const char *message, void *user_data) {
  (void)user_data;
  size_t n = strlen(warnings);
  snprintf(warnings + n, sizeof warnings - n, "%s\n", message);
}

static void test_inplace(void **state) {
  (void)state;
  kd_tensor *a = TI(KD_INT32, 12, 10, 0), *b = TI(KD_INT32, 10, 6, 5);
  KD_ASSERT_OK(kd_bitwise_and_Tensor_(a, b));
  EXPECT(a, KD_INT32, 8, 2, 0);
  kd_tensor *ones = TI(KD_INT8, 1, 1, 1);
  KD_ASSERT_OK(kd_bitwise_left_shift_Tensor_(a, ones));
  REL(ones);
  EXPECT(a, KD_INT32, 16, 4, 0);
  KD_ASSERT_OK(kd_bitwise_not_(a));
  EXPECT(a, KD_INT32, ~16, ~4, ~0);
  /* self must already have the broadcast shape */
  kd_tensor *one = TI(KD_INT32, 1), *r3 = TI(KD_INT32, 1, 2, 3);
  KD_ASSERT_ERR(kd_bitwise_or_Tensor_(one, r3), KD_EINVAL,
                "aten::bitwise_or_.Tensor: output with shape [1] doesn't match the broadcast "
                "shape [3]");
  EXPECT(one, KD_INT32, 1);
  /* int8 ^= int32: computed in int32, cast back to int8 (257 ^ 1 = 256 wraps to 0) */
  kd_tensor *i8 = TI(KD_INT8, 1, 2, 3), *w = TI(KD_INT32, 257, 3, 3);
  KD_ASSERT_OK(kd_bitwise_xor_Tensor_(i8, w));
  EXPECT(i8, KD_INT8, 0, 1, 0);
  /* the result type must cast to self's dtype: not to bool, not float to int */
  kd_tensor *bo = TI(KD_BOOL, 1, 0, 1);
  KD_ASSERT_ERR(kd_bitwise_and_Tensor_(bo, r3), KD_ETYPE,
                "result type int32 can't be cast to the desired output type bool");
  EXPECT(bo, KD_BOOL, 1, 0, 1);
  kd_tensor *f = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(r3, KD_FLOAT32, &f));
  KD_ASSERT_ERR(kd_bitwise_and_Tensor_(r3, f), KD_ETYPE,
                "result type float32 can't be cast to the desired output type int32");
  /* int32 &= int8 */
  KD_ASSERT_OK(kd_bitwise_or_Tensor_(r3, i8));
  EXPECT(r3, KD_INT32, 1, 3, 3);
  REL(a), REL(b), REL(one), REL(r3), REL(i8), REL(w), REL(bo), REL(f);
}

static void test_out(void **state) {
  (void)state;
  kd_tensor *a = TI(KD_INT32, 12, 10, 0), *b = TI(KD_INT32, 10, 6, 5);
  /* resized from [0] without a warning */
  kd_tensor *out = oc_empty_on(1, (int64_t[]){0}, KD_INT32, CPU);
  warnings[0] = 0;
  kd_set_warning_handler(record_warning, NULL);
  KD_ASSERT_OK(kd_bitwise_xor_Tensor_out(a, b, out));
  EXPECT(out, KD_INT32, 6, 12, 5);
  KD_ASSERT_STR_EQ(warnings, "");
  /* resized from a shape with elements: warned */
  kd_tensor *big = oc_empty_on(2, (int64_t[]){2, 2}, KD_INT32, CPU);
  KD_ASSERT_OK(kd_bitwise_or_Tensor_out(a, b, big));
  oc_expect_sizes(big, 1, (int64_t[]){3});
  EXPECT(big, KD_INT32, 14, 14, 5);
  kd_set_warning_handler(NULL, NULL);
  if (!strstr(warnings, "aten::bitwise_or.Tensor_out: an out tensor with elements was resized"))
    fail_msg("expected the resize warning, got \"%s\"", warnings);
  /* bitwise_not.out */
  KD_ASSERT_OK(kd_bitwise_not_out(a, out));
  EXPECT(out, KD_INT32, ~12, ~10, ~0);
  /* a wider out takes the cast result; int64 out of int32 inputs */
  kd_tensor *o64 = oc_empty_on(1, (int64_t[]){3}, KD_INT64, CPU);
  kd_tensor *counts = TI(KD_INT32, 2, 1, 0);
  KD_ASSERT_OK(kd_bitwise_right_shift_Tensor_out(a, counts, o64));
  REL(counts);
  EXPECT(o64, KD_INT64, 3, 5, 0);
  /* out of a dtype the result cannot be cast to */
  kd_tensor *ob = oc_empty_on(1, (int64_t[]){3}, KD_BOOL, CPU);
  KD_ASSERT_ERR(kd_bitwise_and_Tensor_out(a, b, ob), KD_ETYPE,
                "result type int32 can't be cast to the desired output type bool");
  KD_ASSERT_ERR(kd_bitwise_not_out(a, ob), KD_ETYPE, "");
  /* out on another device */
  kd_tensor *om = oc_empty_on(1, (int64_t[]){3}, KD_INT32, META);
  kd_clear_error();
  assert_int_not_equal(kd_bitwise_and_Tensor_out(a, b, om), KD_OK);
  /* out aliasing an input */
  KD_ASSERT_OK(kd_bitwise_and_Tensor_out(a, b, a));
  EXPECT(a, KD_INT32, 8, 2, 0);
  REL(a), REL(b), REL(out), REL(big), REL(o64), REL(ob), REL(om);
}

/* ---- Dtype errors ----------------------------------------------------------------- */

static void test_dtype_errors(void **state) {
  (void)state;
  const kd_dtype floats[] = {KD_FLOAT16, KD_BFLOAT16, KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64,
                             KD_COMPLEX128};
  kd_tensor *i = TI(KD_INT32, 1, 2), *bo = TI(KD_BOOL, 1, 0);
  char msg[128];
  for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++) {
    kd_dtype dt = floats[k];
    kd_tensor *f = NULL, *r = NULL;
    KD_ASSERT_OK(kd_tensor_to_dtype(i, dt, &f));
    for (size_t o = 0; o < NOPS; o++) {
      snprintf(msg, sizeof msg, "\"%s\" not implemented for '%s'", OPS[o].loop, kd_dtype_name(dt));
      /* a floating first tensor (the plain CPU kernel) */
      KD_ASSERT_ERR(OPS[o].fn(f, f, &r), KD_EUNSUPPORTED, msg);
      assert_null(r);
      KD_ASSERT_ERR(OPS[o].fn(f, i, &r), KD_EUNSUPPORTED, msg);
      /* an integer or bool first tensor promoted to a floating dtype */
      KD_ASSERT_ERR(OPS[o].fn(i, f, &r), KD_EUNSUPPORTED, msg);
      KD_ASSERT_ERR(OPS[o].fn(bo, f, &r), KD_EUNSUPPORTED, msg);
      assert_null(r);
      KD_ASSERT_ERR(OPS[o].ip(f, i), KD_EUNSUPPORTED, msg);
      kd_tensor *of = oc_empty_on(1, (int64_t[]){2}, dt, CPU);
      KD_ASSERT_ERR(OPS[o].out(i, f, of), KD_EUNSUPPORTED, msg);
      REL(of);
    }
    snprintf(msg, sizeof msg, "aten::bitwise_not: \"bitwise_not_cpu\" not implemented for '%s'",
             kd_dtype_name(dt));
    KD_ASSERT_ERR(kd_bitwise_not(f, &r), KD_ETYPE, msg);
    assert_null(r);
    KD_ASSERT_ERR(kd_bitwise_not_(f), KD_ETYPE, "\"bitwise_not_cpu\" not implemented");
    REL(f);
  }
  /* meta's checks come first, as in PyTorch: a broadcast error of float tensors */
  kd_tensor *f2 = NULL, *f3 = NULL, *r = NULL;
  KD_ASSERT_OK(kd_tensor_to_dtype(i, KD_FLOAT32, &f2));
  kd_tensor *i3 = TI(KD_INT32, 1, 2, 3);
  KD_ASSERT_OK(kd_tensor_to_dtype(i3, KD_FLOAT32, &f3));
  REL(i3);
  KD_ASSERT_ERR(kd_bitwise_and_Tensor(f2, f3, &r), KD_EINVAL,
                "The size of tensor a (2) must match the size of tensor b (3)");
  REL(f2), REL(f3), REL(i), REL(bo);
}

/* ---- Scalar overloads ------------------------------------------------------------- */

static void test_scalar_overloads(void **state) {
  (void)state;
  kd_tensor *i8 = TI(KD_INT8, 12, 10, -1), *r = NULL;
  kd_scalar six = kd_scalar_int(6), two = kd_scalar_int(2), t = kd_scalar_bool(true);
  /* a wrapped int scalar keeps the tensor's dtype */
  KD_ASSERT_OK(kd_bitwise_and_Scalar(i8, &six, &r));
  EXPECT(r, KD_INT8, 4, 2, 6);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_or_Scalar(i8, &six, &r));
  EXPECT(r, KD_INT8, 14, 14, -1);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_xor_Scalar_Tensor(&six, i8, &r));
  EXPECT(r, KD_INT8, 10, 12, ~6);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_left_shift_Tensor_Scalar(i8, &two, &r));
  EXPECT(r, KD_INT8, 48, 40, -4);
  REL(r);
  kd_tensor *counts = TI(KD_INT8, 0, 1, 2);
  KD_ASSERT_OK(kd_bitwise_right_shift_Scalar_Tensor(&six, counts, &r));
  EXPECT(r, KD_INT8, 6, 3, 1);
  REL(r), REL(counts);
  /* a bool tensor with a bool scalar stays bool; with an int scalar, int64 */
  kd_tensor *b = TI(KD_BOOL, 1, 0);
  KD_ASSERT_OK(kd_bitwise_xor_Scalar(b, &t, &r));
  EXPECT(r, KD_BOOL, 0, 1);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_or_Scalar(b, &two, &r));
  EXPECT(r, KD_INT64, 3, 2);
  REL(r);
  /* inplace and out */
  KD_ASSERT_OK(kd_bitwise_and_Scalar_(i8, &six));
  EXPECT(i8, KD_INT8, 4, 2, 6);
  KD_ASSERT_OK(kd_bitwise_left_shift_Tensor_Scalar_(i8, &two));
  EXPECT(i8, KD_INT8, 16, 8, 24);
  kd_tensor *out = oc_empty_on(1, (int64_t[]){0}, KD_INT8, CPU);
  KD_ASSERT_OK(kd_bitwise_xor_Scalar_out(i8, &six, out));
  EXPECT(out, KD_INT8, 22, 14, 30);
  KD_ASSERT_OK(kd_bitwise_right_shift_Tensor_Scalar_out(i8, &two, out));
  EXPECT(out, KD_INT8, 4, 2, 6);
  /* a float scalar promotes to float: refused */
  kd_scalar half = kd_scalar_double(0.5);
  KD_ASSERT_ERR(kd_bitwise_and_Scalar(i8, &half, &r), KD_EUNSUPPORTED,
                "\"bitwise_and_cpu\" not implemented for 'float32'");
  REL(i8), REL(b), REL(out);
}

/* ---- Boxed calls --------------------------------------------------------------------- */

/* Only unboxed kernels are registered; a boxed call reaches them too. */
static void test_boxed_call(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("aten::bitwise_xor", "Tensor", &op));
  kd_tensor *a = TI(KD_INT16, 5, 3), *b = TI(KD_INT16, 1, 1);
  kd_stack s;
  kd_stack_init(&s);
  kd_value va = kd_value_tensor_borrowed(a), vb = kd_value_tensor_borrowed(b);
  kd_stack_push(&s, &va);
  kd_stack_push(&s, &vb);
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  assert_int_equal(s.size, 1);
  EXPECT(kd_stack_peek(&s, 0)->u.t, KD_INT16, 4, 2);
  kd_stack_free(&s);
  REL(a), REL(b);
}

/* ---- Meta ------------------------------------------------------------------------------ */

static void test_meta(void **state) {
  (void)state;
  const kd_dtype dts[] = {KD_BOOL, KD_INT8, KD_INT64, KD_FLOAT32, KD_COMPLEX64};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    kd_dtype dt = dts[k];
    for (size_t i = 0; i < NOPS; i++) {
      kd_tensor *a = oc_empty_on(2, (int64_t[]){3, 1}, dt, META);
      kd_tensor *b = oc_empty_on(1, (int64_t[]){4}, KD_INT32, META), *r = NULL;
      /* every dtype on meta, promoted as on the CPU (bool, int8 with int32: int32) */
      kd_dtype want = dt == KD_BOOL || dt == KD_INT8 ? KD_INT32 : dt;
      KD_ASSERT_OK(OPS[i].fn(a, b, &r));
      oc_expect_sizes(r, 2, (int64_t[]){3, 4});
      assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
      assert_int_equal(kd_tensor_dtype(r), want);
      assert_null(kd_tensor_data(r));
      REL(r);
      kd_tensor *out = oc_empty_on(1, (int64_t[]){0}, want, META);
      KD_ASSERT_OK(OPS[i].out(b, a, out));
      oc_expect_sizes(out, 2, (int64_t[]){3, 4});
      REL(out);
      kd_tensor *s = oc_empty_on(2, (int64_t[]){3, 4}, want, META);
      KD_ASSERT_OK(OPS[i].ip(s, a));
      KD_ASSERT_ERR(OPS[i].ip(a, b), KD_EINVAL, "doesn't match the broadcast shape");
      REL(s), REL(a), REL(b);
    }
    kd_tensor *a = oc_empty_on(2, (int64_t[]){2, 5}, dt, META), *r = NULL;
    KD_ASSERT_OK(kd_bitwise_not(a, &r));
    oc_expect_sizes(r, 2, (int64_t[]){2, 5});
    assert_int_equal(kd_tensor_dtype(r), dt);
    assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
    REL(r);
    KD_ASSERT_OK(kd_bitwise_not_(a));
    REL(a);
  }
  /* a Scalar overload on meta: the wrapped CPU scalar goes with the meta tensor */
  kd_tensor *m = oc_empty_on(1, (int64_t[]){3}, KD_INT16, META), *r = NULL;
  kd_scalar two = kd_scalar_int(2);
  KD_ASSERT_OK(kd_bitwise_and_Scalar(m, &two, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_INT16);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  REL(r);
  KD_ASSERT_OK(kd_bitwise_left_shift_Scalar_Tensor(&two, m, &r));
  assert_int_equal(kd_tensor_dtype(r), KD_INT16);
  assert_int_equal(kd_tensor_device(r).type, KD_DEVICE_META);
  REL(r);
  /* meta and a CPU tensor with elements do not mix */
  kd_tensor *c = TI(KD_INT16, 1, 2, 3);
  kd_clear_error();
  assert_int_not_equal(kd_bitwise_and_Tensor(m, c, &r), KD_OK);
  assert_null(r);
  REL(m), REL(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registrations), cmocka_unit_test(test_values),
      cmocka_unit_test(test_promotion),     cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_inplace),       cmocka_unit_test(test_out),
      cmocka_unit_test(test_dtype_errors),  cmocka_unit_test(test_scalar_overloads),
      cmocka_unit_test(test_boxed_call),    cmocka_unit_test(test_meta),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
