/*
 * test_ops_lifetime.c: the operator library can be closed and opened again.
 * kd_ops_close releases every aten registration; the handles stay (the
 * entry points keep theirs), calls through them fail naming the operator,
 * kd_ops_open makes the same handles work again, and open/close cycles keep
 * the live heap bytes flat (mallinfo2, or the sanitizer allocator's count).
 */

#include "kd_memtest.h"
#include "kd_test.h"
#include "kd/library.h"
#include "kd/ops.h"
#include "kd/ops_all.h"


static kd_tensor *ints(void) {
  int64_t n = 3;
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_INT64, kd_device_cpu(), &t));
  for (int64_t i = 0; i < n; i++) {
    kd_scalar s = kd_scalar_int(i + 1);
    KD_ASSERT_OK(kd_tensor_set(t, &i, &s));
  }
  return t;
}

static int64_t at(const kd_tensor *t, int64_t i) {
  kd_scalar s;
  KD_ASSERT_OK(kd_tensor_get(t, &i, &s));
  return s.v.i;
}

/* neg (generated, structured) and bitwise_not (kernel keys, registered by
 * hand from a library descriptor) work. */
static void check_calls(kd_tensor *x) {
  kd_tensor *y = NULL;
  KD_ASSERT_OK(kd_neg(x, &y));
  assert_int_equal(at(y, 2), -3);
  kd_tensor_release(y);
  KD_ASSERT_OK(kd_bitwise_not(x, &y));
  assert_int_equal(at(y, 0), -2);
  kd_tensor_release(y);
}

static void test_close_and_reopen(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_tensor *x = ints();
  check_calls(x);
  kd_op *neg, *bnot, *again;
  KD_ASSERT_OK(kd_op_find("aten::neg", "", &neg));
  KD_ASSERT_OK(kd_op_find("aten::bitwise_not", "", &bnot));

  kd_ops_close();
  kd_tensor *y = x;
  KD_ASSERT_ERR(kd_neg(x, &y), KD_ESTATE, "operator 'aten::neg' is not defined");
  assert_null(y);
  KD_ASSERT_ERR(kd_bitwise_not(x, &y), KD_ESTATE, "operator 'aten::bitwise_not' is not defined");
  KD_ASSERT_ERR(kd_op_find("aten::neg", "", &again), KD_ENOTFOUND, "operator 'aten::neg' not found");
  assert_null(kd_op_schema(neg));
  kd_ops_close(); /* closed already: nothing */
  KD_ASSERT_OK(kd_dispatcher_check());

  KD_ASSERT_OK(kd_ops_open());
  KD_ASSERT_OK(kd_op_find("aten::neg", "", &again));
  assert_ptr_equal(again, neg);
  KD_ASSERT_OK(kd_op_find("aten::bitwise_not", "", &again));
  assert_ptr_equal(again, bnot);
  check_calls(x);
  KD_ASSERT_OK(kd_ops_open()); /* open already: nothing */
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_tensor_release(x);
}

static void test_cycles_keep_memory_flat(void **state) {
  (void)state;
  const int cycles = KD_TEST_SANITIZED ? 20 : 200, warmup = 10;
  const size_t tolerance = 4096;
  kd_tensor *x = ints();
  size_t after_warmup = 0;
  for (int i = 1; i <= cycles; i++) {
    KD_ASSERT_OK(kd_ops_open());
    check_calls(x);
    kd_ops_close();
    if (i == warmup) after_warmup = kd_memtest_live_bytes();
  }
  size_t after = kd_memtest_live_bytes();
  print_message("live heap bytes after cycle %d: %zu, after cycle %d: %zu\n", warmup, after_warmup,
                cycles, after);
  if (after > after_warmup + tolerance)
    fail_msg("memory grew by %zu bytes over %d kd_ops_open/kd_ops_close cycles",
             after - after_warmup, cycles - warmup);
  KD_ASSERT_OK(kd_ops_open());
  check_calls(x);
  kd_tensor_release(x);
}


int main(int argc, char **argv) {
  (void)argc;
  kd_memtest_without_tcache(argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_close_and_reopen),
      cmocka_unit_test(test_cycles_keep_memory_flat),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
