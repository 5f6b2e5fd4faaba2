/*
 * test_kd_oom.c: a `kd` program survives every allocation failure. The
 * program runs through the language's entry point (kdc_lang_new,
 * kdc_lang_run, kdc_lang_free) with allocation N = 1, 2, ... failing
 * (tests/kd_oom.h, through the public host allocator, which the
 * interpreter, libkdops and libkdispatch all use), until a run makes fewer
 * than N allocations. Each run must not crash, must either succeed or
 * report the error on its error stream ("out of memory"), and must leave
 * nothing allocated (LeakSanitizer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd/ops.h"
#include "kd_oom.h"
#include "kd_test.h"
#include "lang.h"

static const char program[] =
    "a = tensor([[1.0, 2.0], [3.0, 4.0]])\n"
    "b = a + a * 2\n"
    "c = add(b, a, alpha=3)\n"
    "s = sum(c)\n"
    "m = max(c, 1)\n"
    "print(m)\n"
    "print(s)\n"
    "x = [a, b]\n"
    "t = stack(x)\n"
    "print(t)\n"
    "i = bitwise_and(tensor([1, 2, 3]), tensor([3, 2, 1]))\n"
    "print(i)\n";

static void quiet(const char *msg, void *ud) {
  (void)msg;
  (void)ud;
}

/* One run: 0 when every statement ran; the error stream's text in *err. */
static int run_once(char **err) {
  char *obuf = NULL, *ebuf = NULL;
  size_t olen = 0, elen = 0;
  FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
  assert_non_null(out);
  assert_non_null(errf);
  int rc = 1;
  kd_lang *L = kdc_lang_new(out, errf);
  if (L) {
    rc = kdc_lang_run(L, program, strlen(program), "oom.kd");
    kdc_lang_free(L);
  } else {
    fputs("kdc_lang_new: out of memory\n", errf);
  }
  fclose(out);
  fclose(errf);
  free(obuf);
  *err = ebuf;
  return rc;
}

static void test_program(void **state) {
  (void)state;
  kd_set_warning_handler(quiet, NULL);
  kd_oom_install();
  KD_ASSERT_OK(kd_ops_open());
  char *err;
  int rc = run_once(&err); /* warm, and the program is right */
  if (rc) fail_msg("the program fails without injection: %s", err);
  free(err);
  long n;
  int failures = 0;
  for (n = 1;; n++) {
    kd_oom_arm(n);
    rc = run_once(&err);
    kd_oom_disarm();
    if (rc) {
      assert_true(kd_oom_fired());
      if (!strstr(err, "out of memory")) fail_msg("N=%ld: %s", n, err);
      failures++;
    }
    free(err);
    if (!kd_oom_fired()) {
      assert_int_equal(rc, 0);
      break;
    }
  }
  print_message("kd program: %ld failure points tried, %d runs reported out of memory\n", n - 1,
                failures);
  assert_true(failures > 10);
  KD_ASSERT_OK(kd_dispatcher_check());
  kd_oom_uninstall();
  kd_set_warning_handler(NULL, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_program),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
