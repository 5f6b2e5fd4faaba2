/*
 * fuzz_kd_lang.c: the little language of the `kd` command line
 * (tools/kd/lang_*.c, docs/CLI.md) on any source text.
 *
 * The libraries kd opens at start (its demo operators and libkdops) are
 * opened once; each input runs in a new interpreter whose output goes to
 * /dev/null. Invariants: kdc_lang_run returns 0 or 1 and kdc_lang_complete
 * returns 0 or 1, on any bytes (the sanitizers watch the rest); the
 * interpreter frees everything (LeakSanitizer).
 */
#include <kd/kd.h>

#include "commands.h"
#include "fuzz.h"
#include "lang.h"

static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  setenv("KD_NUM_THREADS", "1", 1);
  FUZZ_CHECK(kdc_tool_open() == 0, "kdc_tool_open failed");
  g_null = fopen("/dev/null", "w");
  FUZZ_CHECK(g_null, "cannot open /dev/null");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *src = (const char *)data;
  int c = kdc_lang_complete(src, size);
  FUZZ_CHECK(c == 0 || c == 1, "kdc_lang_complete returned %d", c);
  kd_lang *L = kdc_lang_new(g_null, g_null);
  FUZZ_CHECK(L, "kdc_lang_new: out of memory");
  int rc = kdc_lang_run(L, src, size, "fuzz");
  FUZZ_CHECK(rc == 0 || rc == 1, "kdc_lang_run returned %d", rc);
  kdc_lang_free(L);
  return 0;
}
