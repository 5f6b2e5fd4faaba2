/*
 * test_kd_fallback_table.c: `kd table` (and the language's table()) shows how
 * often the CPU fallback ran an operator for a device backend (issue 16).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"
#include "commands.h"
#include "kd/kd.h"
#include "kd/ops.h"
#include "kd/ops_all.h"

static char *table_of(const kd_op *op) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  assert_int_equal(kdc_print_op_table(f, op), 0);
  fclose(f);
  return text;
}

static void test_table_shows_fallback_calls(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_ops_open());
  kd_allocator a = kd_test_host_allocator();
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, &a));
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true));
  kd_op *neg;
  KD_ASSERT_OK(kd_op_find("aten::neg", NULL, &neg));
  char *text = table_of(neg);
  assert_null(strstr(text, "cpu fallback"));
  free(text);
  kd_tensor *x, *xd, *r;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &x));
  memset(kd_tensor_data(x), 0, 12);
  KD_ASSERT_OK(kd_tensor_to_device(x, (kd_device){KD_DEVICE_PRIVATEUSE1, 0}, &xd));
  for (int i = 0; i < 2; i++) {
    KD_ASSERT_OK(kd_neg(xd, &r));
    kd_tensor_release(r);
    text = table_of(neg);
    assert_non_null(strstr(text, i == 0 ? "  cpu fallback: PrivateUse1 1 call\n"
                                        : "  cpu fallback: PrivateUse1 2 calls\n"));
    assert_non_null(strstr(text, "dispatch table of aten::neg:\n"));
    free(text);
  }
  kd_tensor_release(xd);
  kd_tensor_release(x);
  KD_ASSERT_OK(kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, false));
  KD_ASSERT_OK(kd_allocator_set(KD_DEVICE_PRIVATEUSE1, NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_table_shows_fallback_calls)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
