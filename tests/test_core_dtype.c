/* Dtypes: the table, names, promotion, result types, half/bfloat16. */
#include <math.h>

#include "kd_test.h"

static void test_table(void **state) {
  (void)state;
  static const struct {
    kd_dtype dt;
    const char *name;
    size_t size;
    kd_dtype_kind kind;
  } rows[] = {
      {KD_BOOL, "bool", 1, KD_KIND_BOOL},           {KD_UINT8, "uint8", 1, KD_KIND_UINT},
      {KD_INT8, "int8", 1, KD_KIND_INT},            {KD_INT16, "int16", 2, KD_KIND_INT},
      {KD_INT32, "int32", 4, KD_KIND_INT},          {KD_INT64, "int64", 8, KD_KIND_INT},
      {KD_FLOAT16, "float16", 2, KD_KIND_FLOAT},    {KD_BFLOAT16, "bfloat16", 2, KD_KIND_FLOAT},
      {KD_FLOAT32, "float32", 4, KD_KIND_FLOAT},    {KD_FLOAT64, "float64", 8, KD_KIND_FLOAT},
      {KD_COMPLEX64, "complex64", 8, KD_KIND_COMPLEX},
      {KD_COMPLEX128, "complex128", 16, KD_KIND_COMPLEX},
  };
  assert_int_equal(KD_DTYPE_COUNT, 12);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    KD_ASSERT_STR_EQ(kd_dtype_name(rows[i].dt), rows[i].name);
    assert_int_equal(kd_dtype_size(rows[i].dt), rows[i].size);
    assert_int_equal(kd_dtype_kind_of(rows[i].dt), rows[i].kind);
    kd_dtype back;
    KD_ASSERT_OK(kd_dtype_from_name(rows[i].name, &back));
    assert_int_equal(back, rows[i].dt);
  }
  KD_ASSERT_STR_EQ(kd_dtype_name(KD_DTYPE_UNDEFINED), "undefined");
  KD_ASSERT_STR_EQ(kd_dtype_name((kd_dtype)99), "invalid");
  assert_int_equal(kd_dtype_size((kd_dtype)99), 0);
  assert_false(kd_dtype_valid(KD_DTYPE_UNDEFINED));
}

static void test_names(void **state) {
  (void)state;
  kd_dtype d = KD_BOOL;
  KD_ASSERT_OK(kd_dtype_from_name("long", &d));
  assert_int_equal(d, KD_INT64);
  KD_ASSERT_OK(kd_dtype_from_name("torch.float", &d));
  assert_int_equal(d, KD_FLOAT32);
  KD_ASSERT_OK(kd_dtype_from_name("cdouble", &d));
  assert_int_equal(d, KD_COMPLEX128);
  KD_ASSERT_OK(kd_dtype_from_name("half", &d));
  assert_int_equal(d, KD_FLOAT16);
  KD_ASSERT_ERR(kd_dtype_from_name("float33", &d), KD_ENOTFOUND, "unknown dtype 'float33'");
  assert_int_equal(d, KD_FLOAT16); /* untouched on error */
  KD_ASSERT_ERR(kd_dtype_from_name(NULL, &d), KD_EINVAL, "NULL");
}

static void test_categories(void **state) {
  (void)state;
  assert_true(kd_dtype_is_integral(KD_INT8, false));
  assert_false(kd_dtype_is_integral(KD_BOOL, false));
  assert_true(kd_dtype_is_integral(KD_BOOL, true));
  assert_true(kd_dtype_is_floating(KD_BFLOAT16));
  assert_false(kd_dtype_is_floating(KD_COMPLEX64));
  assert_true(kd_dtype_is_complex(KD_COMPLEX128));
  assert_int_equal(kd_dtype_to_complex(KD_FLOAT64), KD_COMPLEX128);
  assert_int_equal(kd_dtype_to_complex(KD_FLOAT16), KD_COMPLEX64);
  assert_int_equal(kd_dtype_to_complex(KD_INT32), KD_DTYPE_UNDEFINED);
  assert_int_equal(kd_dtype_to_real(KD_COMPLEX64), KD_FLOAT32);
  assert_int_equal(kd_dtype_to_real(KD_INT32), KD_DTYPE_UNDEFINED);
}

/* PyTorch 1.13's promotion table (c10/core/ScalarType.h), written out for the
 * twelve dtypes in kdispatch's order, checked entry by entry. */
static void test_promote_table(void **state) {
  (void)state;
  enum { b1 = KD_BOOL, u1 = KD_UINT8, i1 = KD_INT8, i2 = KD_INT16, i4 = KD_INT32, i8 = KD_INT64,
         f2 = KD_FLOAT16, bf = KD_BFLOAT16, f4 = KD_FLOAT32, f8 = KD_FLOAT64, c4 = KD_COMPLEX64,
         c8 = KD_COMPLEX128 };
  static const int table[12][12] = {
      /*        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8  c4  c8 */
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8, c4, c8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8, c4, c8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8, c4, c8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, c4, c8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8},
      /* c4 */ {c4, c4, c4, c4, c4, c4, c4, c4, c4, c8, c4, c8},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
  };
  for (int a = 0; a < 12; a++)
    for (int b = 0; b < 12; b++) {
      kd_dtype got = kd_promote_types((kd_dtype)a, (kd_dtype)b);
      if ((int)got != table[a][b])
        fail_msg("promote(%s, %s) = %s, expected %s", kd_dtype_name((kd_dtype)a),
                 kd_dtype_name((kd_dtype)b), kd_dtype_name(got), kd_dtype_name((kd_dtype)table[a][b]));
    }
  assert_int_equal(kd_promote_types(KD_DTYPE_UNDEFINED, KD_INT8), KD_DTYPE_UNDEFINED);
}

static kd_dtype rt(kd_dtype tensor, int ndim, kd_dtype scalar) {
  kd_result_type_state s;
  kd_result_type_init(&s);
  kd_result_type_add_tensor(&s, tensor, ndim);
  kd_result_type_add_scalar(&s, scalar);
  return kd_result_type_finish(&s);
}

static void test_result_type(void **state) {
  (void)state;
  /* A scalar of the same or a lower category keeps the tensor's dtype. */
  assert_int_equal(rt(KD_INT8, 1, KD_INT64), KD_INT8);
  assert_int_equal(rt(KD_UINT8, 2, KD_BOOL), KD_UINT8);
  assert_int_equal(rt(KD_FLOAT16, 1, KD_FLOAT64), KD_FLOAT16);
  /* A higher category goes to its default dtype. */
  assert_int_equal(rt(KD_INT32, 1, KD_FLOAT64), KD_FLOAT32);
  assert_int_equal(rt(KD_BOOL, 1, KD_INT64), KD_INT64);
  assert_int_equal(rt(KD_FLOAT64, 1, KD_COMPLEX128), KD_COMPLEX128);
  assert_int_equal(rt(KD_FLOAT32, 1, KD_COMPLEX128), KD_COMPLEX64);
  assert_int_equal(rt(KD_INT64, 1, KD_COMPLEX128), KD_COMPLEX64);
  /* A 0-dim tensor is like a scalar to a dimensioned one... */
  kd_result_type_state s;
  kd_result_type_init(&s);
  kd_result_type_add_tensor(&s, KD_INT32, 1);
  kd_result_type_add_tensor(&s, KD_INT64, 0);
  assert_int_equal(kd_result_type_finish(&s), KD_INT32);
  kd_result_type_add_tensor(&s, KD_FLOAT64, 0);
  assert_int_equal(kd_result_type_finish(&s), KD_FLOAT64); /* zero-dim keeps its own float */
  /* ...and two 0-dim tensors promote normally. */
  kd_result_type_init(&s);
  kd_result_type_add_tensor(&s, KD_INT8, 0);
  kd_result_type_add_tensor(&s, KD_UINT8, 0);
  assert_int_equal(kd_result_type_finish(&s), KD_INT16);
  /* Scalars alone. */
  kd_result_type_init(&s);
  assert_int_equal(kd_result_type_finish(&s), KD_DTYPE_UNDEFINED);
  kd_result_type_add_scalar(&s, KD_INT32);
  assert_int_equal(kd_result_type_finish(&s), KD_INT64);
  kd_result_type_add_scalar(&s, KD_FLOAT64);
  assert_int_equal(kd_result_type_finish(&s), KD_FLOAT32);
  /* The default dtype decides for float scalars. */
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT64));
  assert_int_equal(rt(KD_INT32, 1, KD_FLOAT64), KD_FLOAT64);
  assert_int_equal(rt(KD_INT32, 1, KD_COMPLEX64), KD_COMPLEX128);
  KD_ASSERT_OK(kd_set_default_dtype(KD_FLOAT32));
  KD_ASSERT_ERR(kd_set_default_dtype(KD_INT32), KD_EINVAL, "expected a floating dtype");
  assert_int_equal(kd_get_default_dtype(), KD_FLOAT32);
}

static void test_half(void **state) {
  (void)state;
  assert_int_equal(kd_float_to_half(1.0f), 0x3c00);
  assert_int_equal(kd_float_to_half(-2.0f), 0xc000);
  assert_int_equal(kd_float_to_half(65504.0f), 0x7bff);
  assert_int_equal(kd_float_to_half(65520.0f), 0x7c00); /* rounds to inf */
  assert_int_equal(kd_float_to_half(5.9604644775390625e-8f), 0x0001); /* smallest subnormal */
  assert_int_equal(kd_float_to_half(0.0f), 0);
  assert_true(isnan(kd_half_to_float(kd_float_to_half(NAN))));
  assert_true(kd_half_to_float(0x7c00) == INFINITY);
  assert_true(kd_half_to_float(0x0001) == 5.9604644775390625e-8f);
  /* Ties round to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10. */
  assert_int_equal(kd_float_to_half(1.0f + 0.00048828125f), 0x3c00);
  assert_int_equal(kd_float_to_half(1.0f + 3 * 0.00048828125f), 0x3c02);
  /* Every half value survives a round trip through float. */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* nan payloads */
    uint16_t back = kd_float_to_half(kd_half_to_float((uint16_t)h));
    if (back != h) fail_msg("half 0x%04x -> %g -> 0x%04x", h, kd_half_to_float((uint16_t)h), back);
  }
  assert_int_equal(kd_float_to_bfloat16(1.0f), 0x3f80);
  assert_true(kd_bfloat16_to_float(0x4049) == 3.140625f);
  assert_int_equal(kd_float_to_bfloat16(3.14159f), 0x4049);
  assert_true(isnan(kd_bfloat16_to_float(kd_float_to_bfloat16(NAN))));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),         cmocka_unit_test(test_names),
      cmocka_unit_test(test_categories),    cmocka_unit_test(test_promote_table),
      cmocka_unit_test(test_result_type),   cmocka_unit_test(test_half),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
