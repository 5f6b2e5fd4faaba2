/* Scalars: conversions with overflow checks, formatting, status/version basics. */
#include <math.h>

#include "kd_test.h"

static void test_status_and_version(void **state) {
  (void)state;
  assert_int_equal(kd_version(), KD_VERSION_HEX);
  KD_ASSERT_STR_EQ(kd_version_string(), KD_VERSION_STRING);
  KD_ASSERT_STR_EQ(kd_status_name(KD_EINVAL), "KD_EINVAL");
  KD_ASSERT_STR_EQ(kd_status_str(KD_ENOMEM), "out of memory");
  KD_ASSERT_STR_EQ(kd_status_str(KD_OK), "success");
  KD_ASSERT_STR_EQ(kd_status_str(KD_EDEVICE), "device or driver error");
  KD_ASSERT_STR_EQ(kd_status_name(KD_EDEVICE), "KD_EDEVICE");
  KD_ASSERT_STR_EQ(kd_status_str((kd_status)-999), "unknown status");
  KD_ASSERT_STR_EQ(kd_status_name((kd_status)-999), "KD_UNKNOWN");
  kd_clear_error();
  KD_ASSERT_STR_EQ(kd_last_error(), "");
  assert_int_equal(kd_set_error(KD_ERANGE, "dim %d of %s", 3, "x"), KD_ERANGE);
  KD_ASSERT_STR_EQ(kd_last_error(), "dim 3 of x");
  assert_int_equal(kd_last_status(), KD_ERANGE);
  /* A message that wraps the previous one. */
  kd_set_error(KD_EINVAL, "outer: %s", kd_last_error());
  KD_ASSERT_STR_EQ(kd_last_error(), "outer: dim 3 of x");
  /* Long messages are cut, not overflowed. */
  char big[3000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  kd_set_error(KD_EINVAL, "%s", big);
  assert_int_equal(strlen(kd_last_error()), 1023);
}

static char warned[256];
static int warn_count;
static void on_warning(const char *msg, void *ud) {
  snprintf(warned, sizeof warned, "%s", msg);
  warn_count += *(int *)ud;
}

static void test_warnings(void **state) {
  (void)state;
  int inc = 1;
  kd_set_warning_handler(on_warning, &inc);
  kd_warn("resized %s from %d", "out", 3);
  KD_ASSERT_STR_EQ(warned, "resized out from 3");
  assert_int_equal(warn_count, 1);
  kd_set_warning_handler(NULL, NULL);
  kd_warn("to stderr (expected in test output)");
  assert_int_equal(warn_count, 1);
}

static void test_convert(void **state) {
  (void)state;
  kd_scalar s = kd_scalar_int(300);
  uint8_t u8 = 7;
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_UINT8, &u8), KD_EOVERFLOW,
                "value 300 cannot be converted to type uint8 without overflow");
  assert_int_equal(u8, 7);
  int16_t i16;
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_INT16, &i16));
  assert_int_equal(i16, 300);
  /* PyTorch's checked_convert (values from libtorch 1.13's fill_): uint8
   * takes -255..-1 as two's complement, refuses -256 */
  s = kd_scalar_int(-1);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_UINT8, &u8));
  assert_int_equal(u8, 255);
  s = kd_scalar_int(-6);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_UINT8, &u8));
  assert_int_equal(u8, 250);
  s = kd_scalar_int(-255);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_UINT8, &u8));
  assert_int_equal(u8, 1);
  s = kd_scalar_int(-256);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_UINT8, &u8), KD_EOVERFLOW,
                "value -256 cannot be converted to type uint8 without overflow");
  /* ... but no negative floating value, nor one above the maximum */
  s = kd_scalar_double(-0.27);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_UINT8, &u8), KD_EOVERFLOW,
                "value -0.27 cannot be converted to type uint8 without overflow");
  s = kd_scalar_double(255.5);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_UINT8, &u8), KD_EOVERFLOW, "uint8");
  s = kd_scalar_complex(-1, 0);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_UINT8, &u8), KD_EOVERFLOW, "uint8");
  assert_int_equal(u8, 1);
  s = kd_scalar_double(3.7);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_UINT8, &u8));
  assert_int_equal(u8, 3);
  /* signed targets: the exact range, floating values truncated inside it */
  int8_t i8 = 0;
  s = kd_scalar_int(-255);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_INT8, &i8), KD_EOVERFLOW, "int8");
  s = kd_scalar_double(127.5);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_INT8, &i8), KD_EOVERFLOW, "int8");
  s = kd_scalar_double(-0.27);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_INT8, &i8));
  assert_int_equal(i8, 0);
  s = kd_scalar_double(INFINITY);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_INT64, &(int64_t){0}), KD_EOVERFLOW, "int64");
  s = kd_scalar_int((int64_t)1 << 40);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_FLOAT16, &(uint16_t){0}), KD_EOVERFLOW, "float16");
  s = kd_scalar_double(1e300);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_COMPLEX64, (float[2]){0}), KD_EOVERFLOW, "complex64");
  /* bool: anything non-zero (NaN too) is true, nothing overflows */
  uint8_t bv = 0;
  s = kd_scalar_double(NAN);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_BOOL, &bv));
  assert_int_equal(bv, 1);
  s = kd_scalar_int(-300);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_BOOL, &bv));
  assert_int_equal(bv, 1);
  s = kd_scalar_double(2.75);
  int32_t i32;
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_INT32, &i32));
  assert_int_equal(i32, 2);
  s = kd_scalar_double(1e10);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_INT32, &i32), KD_EOVERFLOW, "int32");
  s = kd_scalar_double(NAN);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_INT64, &(int64_t){0}), KD_EOVERFLOW, "nan");
  float f;
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_FLOAT32, &f)); /* nan fits a float */
  assert_true(isnan(f));
  s = kd_scalar_double(1e39);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_FLOAT32, &f), KD_EOVERFLOW, "float32");
  s = kd_scalar_double(70000);
  uint16_t h;
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_FLOAT16, &h), KD_EOVERFLOW, "float16");
  s = kd_scalar_double(INFINITY);
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_FLOAT16, &h));
  assert_int_equal(h, 0x7c00);
  s = kd_scalar_complex(1, 2);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, KD_FLOAT64, &(double){0}), KD_ETYPE, "imaginary part");
  double c[2];
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_COMPLEX128, c));
  assert_true(c[0] == 1 && c[1] == 2);
  uint8_t b;
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_BOOL, &b));
  assert_int_equal(b, 1);
  s = kd_scalar_complex(3, 0);
  double d;
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_FLOAT64, &d));
  assert_true(d == 3);
  s = kd_scalar_int(INT64_MIN);
  int64_t i64;
  KD_ASSERT_OK(kd_scalar_to_element(&s, KD_INT64, &i64));
  assert_true(i64 == INT64_MIN);
  KD_ASSERT_ERR(kd_scalar_to_element(&s, (kd_dtype)42, &i64), KD_EINVAL, "invalid dtype");

  /* Every dtype round-trips a small value. */
  for (int dt = 0; dt < KD_DTYPE_COUNT; dt++) {
    unsigned char buf[16];
    kd_scalar in = kd_scalar_int(1), back;
    KD_ASSERT_OK(kd_scalar_to_element(&in, (kd_dtype)dt, buf));
    KD_ASSERT_OK(kd_scalar_from_element(buf, (kd_dtype)dt, &back));
    assert_true(kd_scalar_to_double(&back) == 1.0);
  }
  assert_int_equal(kd_scalar_dtype(&(kd_scalar){KD_SCALAR_DOUBLE, {.d = 1}}), KD_FLOAT64);
  s = kd_scalar_double(-2.9);
  assert_int_equal(kd_scalar_to_int64(&s), -2);
  s = kd_scalar_bool(true);
  assert_true(kd_scalar_to_double(&s) == 1.0);
}

static void check_format(kd_scalar s, const char *expected) {
  char buf[64];
  size_t n = kd_scalar_format(&s, buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, expected);
  assert_int_equal(n, strlen(expected));
}

static void test_format(void **state) {
  (void)state;
  check_format(kd_scalar_bool(true), "True");
  check_format(kd_scalar_bool(false), "False");
  check_format(kd_scalar_int(-42), "-42");
  check_format(kd_scalar_double(2.5), "2.5");
  check_format(kd_scalar_double(1.0), "1.0");
  check_format(kd_scalar_double(1e-05), "1e-05");
  check_format(kd_scalar_double(0.0001), "0.0001");
  check_format(kd_scalar_double(1e16), "1e+16");
  check_format(kd_scalar_double(1e15), "1000000000000000.0");
  check_format(kd_scalar_double(0.1), "0.1");
  check_format(kd_scalar_double(1.0 / 3.0), "0.3333333333333333");
  check_format(kd_scalar_double(-INFINITY), "-inf");
  check_format(kd_scalar_double(NAN), "nan");
  check_format(kd_scalar_complex(1, 2), "(1+2j)");
  check_format(kd_scalar_complex(1.5, -2), "(1.5-2j)");
  check_format(kd_scalar_complex(0, 2), "2j");
  /* Python's complex repr: a nan part has no sign, a negative zero keeps it
   * (regression: "(1nanj)" and "(1+-0j)"). */
  check_format(kd_scalar_complex(1, NAN), "(1+nanj)");
  check_format(kd_scalar_complex(1, -NAN), "(1+nanj)");
  check_format(kd_scalar_complex(1, -0.0), "(1-0j)");
  check_format(kd_scalar_complex(NAN, 1), "(nan+1j)");
  check_format(kd_scalar_complex(1, INFINITY), "(1+infj)");
  check_format(kd_scalar_complex(1, -INFINITY), "(1-infj)");
  check_format(kd_scalar_complex(0, NAN), "nanj");
  check_format(kd_scalar_complex(0, -0.0), "-0j");
  check_format(kd_scalar_complex(-0.0, 1), "(-0+1j)");
  /* Truncation reports the full length. */
  char small[4];
  kd_scalar s = kd_scalar_int(123456);
  assert_int_equal(kd_scalar_format(&s, small, sizeof small), 6);
  KD_ASSERT_STR_EQ(small, "123");
  assert_true(kd_scalar_equal(&(kd_scalar){KD_SCALAR_INT, {.i = 3}}, &(kd_scalar){KD_SCALAR_INT, {.i = 3}}));
  s = kd_scalar_double(3);
  kd_scalar t = kd_scalar_int(3);
  assert_false(kd_scalar_equal(&s, &t));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_and_version),
      cmocka_unit_test(test_warnings),
      cmocka_unit_test(test_convert),
      cmocka_unit_test(test_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
