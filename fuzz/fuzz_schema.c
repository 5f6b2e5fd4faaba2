/*
 * fuzz_schema.c: the schema language (src/schema/) on any bytes.
 *
 * The input is schema text (no NUL needed, any bytes). Invariants:
 * - a parse gives KD_OK, or KD_ESYNTAX / KD_ENOMEM with no schema;
 * - on KD_OK, print(parse(s)) parses, and prints identically (a fixed point);
 * - classification, signature, type printing and every argument's default
 *   decoding return (KD_ETYPE / KD_ENOTFOUND are fine);
 * - defining the printed schema in a DEF library of namespace `fuzz`
 *   returns a status; when it succeeds, the operator's decoded defaults can
 *   be pushed (kd_op_fill_defaults) and everything is released.
 * Leaks are found by LeakSanitizer (libFuzzer's -detect_leaks).
 */
#include <kd/kd.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

/* kd_schema_format into a new NUL-terminated buffer; its length in *n. */
static char *format(const kd_schema *s, size_t *n) {
  *n = kd_schema_format(s, NULL, 0);
  char *p = malloc(*n + 1);
  FUZZ_CHECK(p, "out of memory");
  size_t m = kd_schema_format(s, p, *n + 1);
  FUZZ_CHECK(m == *n, "kd_schema_format gave %zu then %zu", *n, m);
  return p;
}

static void check_def(const char *text) {
  kd_library *lib = NULL;
  kd_status st = kd_library_open(KD_LIBRARY_DEF, "fuzz", KD_KEY_CATCH_ALL, __FILE__, __LINE__, &lib);
  FUZZ_CHECK(st == KD_OK, "kd_library_open: %s", kd_last_error());
  kd_registration *reg = NULL;
  st = kd_library_def(lib, text, NULL, 0, &reg);
  if (st == KD_OK) {
    kd_schema *s = NULL;
    FUZZ_CHECK(kd_schema_parse(text, strlen(text), &s) == KD_OK, "%s", text);
    const char *ov = kd_schema_overload(s);
    size_t qn = strlen(kd_schema_name(s)) + strlen(ov) + 8;
    char *qualified = malloc(qn);
    FUZZ_CHECK(qualified, "out of memory");
    snprintf(qualified, qn, "fuzz::%s%s%s", kd_schema_name(s), *ov ? "." : "", ov);
    kd_schema_free(s);
    kd_op *op = NULL;
    FUZZ_CHECK(kd_op_find(qualified, NULL, &op) == KD_OK, "defined '%s' not found: %s", qualified,
               kd_last_error());
    free(qualified);
    kd_stack stack;
    kd_stack_init(&stack);
    /* Fails at the first argument without a default; what was pushed stays. */
    (void)kd_op_fill_defaults(op, &stack, 0);
    kd_stack_free(&stack);
  } else {
    FUZZ_CHECK(reg == NULL, "a failed kd_library_def left a registration");
  }
  kd_library_close(lib);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kd_schema *s = NULL;
  kd_status st = kd_schema_parse((const char *)data, size, &s);
  if (st != KD_OK) {
    FUZZ_CHECK(st == KD_ESYNTAX || st == KD_ENOMEM, "parse status %s: %s", kd_status_name(st),
               kd_last_error());
    FUZZ_CHECK(s == NULL, "a failed parse gave a schema");
    return 0;
  }
  size_t n1, n2;
  char *p1 = format(s, &n1);
  /* The printed form in an exact-size buffer (no NUL after it). */
  char *exact = malloc(n1 ? n1 : 1);
  FUZZ_CHECK(exact, "out of memory");
  memcpy(exact, p1, n1);
  kd_schema *s2 = NULL;
  st = kd_schema_parse(exact, n1, &s2);
  free(exact);
  FUZZ_CHECK(st == KD_OK, "the printed form does not parse: %s\n  %s", p1, kd_last_error());
  char *p2 = format(s2, &n2);
  FUZZ_CHECK(n1 == n2 && memcmp(p1, p2, n1) == 0, "not a fixed point:\n  %s\n  %s", p1, p2);

  (void)kd_schema_kind_name(kd_schema_kind_of(s));
  char buf[256];
  (void)kd_schema_signature(s, buf, sizeof buf);
  for (size_t i = 0; i < kd_schema_num_arguments(s); i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    (void)kd_type_format(kd_argument_type(a), buf, sizeof buf);
    kd_value v;
    st = kd_argument_default_value(a, &v);
    FUZZ_CHECK(st == KD_OK || st == KD_ETYPE || st == KD_ENOTFOUND || st == KD_ENOMEM,
               "default of argument %zu of %s: %s: %s", i, p1, kd_status_name(st), kd_last_error());
    if (st != KD_OK) FUZZ_CHECK(v.tag == KD_VALUE_NONE, "a failed default decoding left a value");
    (void)kd_value_format(&v, buf, sizeof buf);
    kd_value_destroy(&v);
  }
  for (size_t i = 0; i < kd_schema_num_returns(s); i++)
    (void)kd_type_format(kd_argument_type(kd_schema_return(s, i)), buf, sizeof buf);

  check_def(p1);

  free(p1);
  free(p2);
  kd_schema_free(s);
  kd_schema_free(s2);
  return 0;
}
