/*
 * test_schema_fuzz.c: the parser on random bytes and on mutations and
 * truncations of every schema of native_functions.yaml (PyTorch v1.13.1,
 * BSD-3-Clause licence; copyright Facebook, Inc. and contributors).
 *
 * Each input goes in an exact-size heap buffer (no NUL after it) so that
 * AddressSanitizer catches any read past `len`. Each parse must give KD_OK
 * or KD_ESYNTAX; on KD_OK, print -> parse -> print must be a fixed point, and
 * classification, signature and default decoding must not fail badly. The
 * seed is fixed, the counts bounded.
 */
#include <stdlib.h>

#include "kd_test.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

static size_t g_ok, g_err;

/* Checks one input of `len` bytes. */
static void check_input(const char *bytes, size_t len) {
  char *copy = malloc(len ? len : 1);
  assert_non_null(copy);
  if (len) memcpy(copy, bytes, len);
  kd_schema *s = NULL;
  kd_status st = kd_schema_parse(copy, len, &s);
  free(copy);
  if (st != KD_OK) {
    if (st != KD_ESYNTAX) fail_msg("status %s for input of %zu bytes: %s", kd_status_name(st), len, kd_last_error());
    assert_null(s);
    const char *m = kd_last_error();
    if (strncmp(m, "line ", 5) != 0 || !strstr(m, ": expected ") || !strstr(m, ", found "))
      fail_msg("bad message: %s", m);
    g_err++;
    return;
  }
  g_ok++;
  size_t n = kd_schema_format(s, NULL, 0);
  char *p1 = malloc(n + 1);
  assert_int_equal(kd_schema_format(s, p1, n + 1), n);
  kd_schema *s2 = NULL;
  char *exact = malloc(n ? n : 1);
  memcpy(exact, p1, n);
  st = kd_schema_parse(exact, n, &s2);
  free(exact);
  if (st != KD_OK) fail_msg("printed form does not parse: %s\n  %s", p1, kd_last_error());
  char *p2 = malloc(n + 1);
  size_t n2 = kd_schema_format(s2, p2, n + 1);
  if (n2 != n || memcmp(p1, p2, n) != 0) fail_msg("not a fixed point:\n  %s\n  %s", p1, p2);
  /* The rest of the API on whatever parsed. */
  (void)kd_schema_kind_of(s);
  char sig[64];
  (void)kd_schema_signature(s, sig, sizeof sig);
  for (size_t i = 0; i < kd_schema_num_arguments(s); i++) {
    kd_value v;
    st = kd_argument_default_value(kd_schema_argument(s, i), &v);
    if (st != KD_OK && st != KD_ETYPE && st != KD_ENOTFOUND)
      fail_msg("default of argument %zu of %s: %s", i, p1, kd_status_name(st));
    kd_value_destroy(&v);
  }
  free(p1);
  free(p2);
  kd_schema_free(s);
  kd_schema_free(s2);
}

static const char *const g_pieces[] = {
    "Tensor", "int", "(", ")", "[", "]", "?", "!", ",", " ", "->", "*", "...", "|", "=",
    "a",      "b",   "t", "x", "::", ".", "Dict", "Future", "Union", "RRef", "None", "True",
    "1",      "-",   "'s'", "\"q\"", "[0,1]", "__torch__.torch.classes.n.C", "Scalar?", "\n",
    "SymInt[2]", "(a!)", "(a -> *)", "float", "1e-05", "-inf", "\\", "'", "\0", "\xff",
};

static void test_fuzz_random(void **state) {
  (void)state;
  char buf[256];
  for (int iter = 0; iter < 100000; iter++) {
    size_t len = 0, target = rnd() % 96;
    while (len < target) {
      if (rnd() % 4 == 0) {
        buf[len++] = (char)(rnd() & 0xff);
      } else {
        const char *p = g_pieces[rnd() % (sizeof g_pieces / sizeof g_pieces[0])];
        size_t n = p[0] ? strlen(p) : 1;
        if (len + n > sizeof buf) break;
        memcpy(buf + len, p, n);
        len += n;
      }
    }
    check_input(buf, len);
  }
  /* Random well-formed-ish schemas: name, args from pieces. */
  for (int iter = 0; iter < 50000; iter++) {
    size_t len = (size_t)snprintf(buf, sizeof buf, "f(");
    int nargs = (int)(rnd() % 4);
    for (int a = 0; a < nargs && len < 200; a++) {
      const char *p = g_pieces[rnd() % (sizeof g_pieces / sizeof g_pieces[0])];
      const char *q = g_pieces[rnd() % 3];
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s%s x%d", a ? ", " : "", q, p, a);
    }
    len += (size_t)snprintf(buf + len, sizeof buf - len, ") -> %s", g_pieces[rnd() % 8]);
    check_input(buf, len < sizeof buf ? len : sizeof buf - 1);
  }
}

static void test_fuzz_native_mutations(void **state) {
  (void)state;
  FILE *f = fopen(KD_SHARED_DATA_DIR "/native_functions.yaml", "r");
  assert_non_null(f);
  char *line = NULL;
  size_t cap = 0, count = 0;
  ssize_t got;
  char buf[1024];
  while ((got = getline(&line, &cap, f)) >= 0) {
    if (strncmp(line, "- func: ", 8) != 0) continue;
    const char *text = line + 8;
    size_t len = (size_t)got - 8;
    while (len && text[len - 1] == '\n') len--;
    if (len + 64 > sizeof buf) continue;
    count++;
    check_input(text, len);
    /* Every truncation of the first few, a sample of the rest. */
    if (count <= 40) {
      for (size_t k = 0; k < len; k++) check_input(text, k);
    } else {
      for (int k = 0; k < 8; k++) check_input(text, rnd() % (len + 1));
    }
    for (int m = 0; m < 16; m++) {
      memcpy(buf, text, len);
      size_t n = len;
      int edits = 1 + (int)(rnd() % 3);
      for (int e = 0; e < edits && n > 0; e++) {
        size_t at = rnd() % n;
        switch (rnd() % 4) {
          case 0: /* replace a byte */
            buf[at] = (rnd() % 2) ? (char)(rnd() & 0xff) : "()[]?!,*|=-.:'\" ab0"[rnd() % 19];
            break;
          case 1: /* delete a byte */
            memmove(buf + at, buf + at + 1, n - at - 1);
            n--;
            break;
          case 2: /* insert a piece */ {
            const char *p = g_pieces[rnd() % (sizeof g_pieces / sizeof g_pieces[0])];
            size_t pn = p[0] ? strlen(p) : 1;
            if (n + pn <= sizeof buf) {
              memmove(buf + at + pn, buf + at, n - at);
              memcpy(buf + at, p, pn);
              n += pn;
            }
            break;
          }
          default: /* swap two bytes */ {
            size_t b = rnd() % n;
            char c = buf[at];
            buf[at] = buf[b];
            buf[b] = c;
            break;
          }
        }
      }
      check_input(buf, n);
    }
  }
  free(line);
  fclose(f);
  assert_int_equal(count, 2493);
  print_message("fuzz: %zu parsed, %zu rejected\n", g_ok, g_err);
  assert_true(g_ok > 2493);
  assert_true(g_err > 10000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuzz_random),
      cmocka_unit_test(test_fuzz_native_mutations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
