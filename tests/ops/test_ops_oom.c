/*
 * test_ops_oom.c: every allocation failure of libkdops is survived
 * (tests/kd_oom.h injects them through the public host allocator).
 *
 * kd_ops_open is all or nothing: with allocation N failing it returns
 * KD_ENOMEM with a message and leaves nothing registered (no operator of
 * aten alive, the dispatcher consistent), and the next call tries again.
 * Every N is tried, up to the first the open does not reach (about 4,600
 * allocations; a run that succeeded although allocation N failed, because
 * what failed was optional such as a cache entry, is checked and undone with
 * kd_ops_close). Then operators are called through their generated
 * typed entry points and boxed, N = 1, 2, ... until a run succeeds: every
 * failure KD_ENOMEM with a message, no leak (LeakSanitizer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_support.h"

#include "kd_oom.h"
#include "kd_test.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static void quiet(const char *msg, void *ud) {
  (void)msg;
  (void)ud;
}

static int count_live(kd_op *op, void *ud) {
  (void)op;
  (*(size_t *)ud)++;
  return 0;
}

static size_t live_ops(void) {
  long saved = atomic_exchange(&kd_oom_countdown_, 0);
  size_t n = 0;
  kd_ops_foreach(count_live, &n);
  atomic_store(&kd_oom_countdown_, saved);
  return n;
}

static void test_open(void **state) {
  (void)state;
  size_t before = live_ops();
  long tried = 0, n, last = 0;
  int failures = 0;
  int swallowed = 0;
  for (n = 1;; n++) {
    kd_oom_arm(n);
    kd_status st = kd_ops_open();
    kd_oom_disarm();
    tried++;
    if (st) {
      if (st != KD_ENOMEM) fail_msg("N=%ld: %s: %s", n, kd_status_name(st), kd_last_error());
      assert_true(kd_oom_fired());
      assert_non_null(strstr(kd_last_error(), "out of memory"));
      assert_int_equal(live_ops(), before);
      KD_ASSERT_OK(kd_dispatcher_check());
      failures++;
      continue;
    }
    /* Opened: everything is there and consistent. */
    if (live_ops() < before + 300)
      fail_msg("N=%ld: opened with %zu operators alive", n, live_ops() - before);
    KD_ASSERT_OK(kd_dispatcher_check());
    if (!kd_oom_fired()) { /* fewer than n allocations: every point reached */
      last = n;
      break;
    }
    /* What failed was optional (a cache entry): close and go on. */
    swallowed++;
    kd_ops_close();
    assert_int_equal(live_ops(), before);
  }
  print_message("kd_ops_open: %ld failure points tried (every N up to %ld), "
                "%d failed with KD_ENOMEM and left nothing registered, %d succeeded without "
                "what failed\n",
                tried, last, failures, swallowed);
  assert_true(failures > 400);
  assert_false(kd_oom_fired()); /* the successful run made fewer than `last` allocations */
  KD_ASSERT_OK(kd_dispatcher_check());
}

static kd_status calls(void) {
  int64_t sizes[2] = {3, 4};
  float a_data[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int64_t i_data[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  kd_tensor *a = NULL, *b = NULL, *r = NULL, *ia = NULL;
  kd_scalar one = kd_scalar_int(1);
  kd_status st = kd_tensor_from_data(2, sizes, KD_FLOAT32, a_data, &a);
  if (!st) st = kd_tensor_from_data(2, sizes, KD_INT64, i_data, &ia);
  int64_t bs[2] = {4, 3};
  if (!st) st = kd_tensor_from_data(2, bs, KD_FLOAT32, a_data, &b);
  /* Typed: a structured binary operator, a reduction, a matrix product, a
   * kernel-key operator, a list operator. */
  if (!st) st = kd_add_Tensor(a, a, &one, &r);
  kd_tensor_release(r);
  r = NULL;
  if (!st) st = kd_sum(a, NULL, &r);
  kd_tensor_release(r);
  r = NULL;
  if (!st) st = kd_matmul(a, b, &r);
  kd_tensor_release(r);
  r = NULL;
  if (!st) st = kd_bitwise_and_Tensor(ia, ia, &r);
  kd_tensor_release(r);
  r = NULL;
  kd_tensor *parts[2] = {a, a};
  kd_tensors list = {parts, 2};
  if (!st) st = kd_stack_op(list, 0, &r);
  kd_tensor_release(r);
  r = NULL;
  /* Boxed. */
  kd_op *mul;
  if (!st) st = kd_op_find("aten::mul", "Tensor", &mul);
  if (!st) {
    kd_stack s;
    kd_stack_init(&s);
    st = kd_stack_push_tensor(&s, a);
    if (!st) st = kd_stack_push_tensor(&s, a);
    if (!st) st = kd_call_boxed(mul, &s);
    kd_stack_free(&s);
  }
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(ia);
  return st;
}

static void test_calls(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  KD_ASSERT_OK(calls()); /* warm: entry points cache their operators */
  long n;
  int failures = 0;
  for (n = 1;; n++) {
    kd_oom_arm(n);
    kd_status st = calls();
    kd_oom_disarm();
    if (st) {
      if (st != KD_ENOMEM) fail_msg("N=%ld: %s: %s", n, kd_status_name(st), kd_last_error());
      assert_true(kd_oom_fired());
      assert_true(strlen(kd_last_error()) > 0);
      failures++;
    }
    if (!kd_oom_fired()) {
      KD_ASSERT_OK(st);
      break;
    }
  }
  print_message("operator calls: %ld failure points tried, %d failed with KD_ENOMEM\n", n - 1,
                failures);
  assert_true(failures > 10);
}

static int setup(void **state) {
  (void)state;
  kd_set_warning_handler(quiet, NULL);
  kd_oom_install();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_oom_uninstall();
  kd_set_warning_handler(NULL, NULL);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open),
      cmocka_unit_test(test_calls),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
