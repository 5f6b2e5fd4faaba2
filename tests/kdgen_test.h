/*
 * kdgen_test.h: what the kdgen tests share (tests/test_kdgen_*.c): running
 * KD_BIN_DIR/kdgen in the source folder (so that paths in its messages are
 * the relative ones the test wrote), reading what it wrote, and asserting on
 * text. A test calls KDGT_SKIP_WITHOUT_KDGEN() first: kdgen is not built with
 * -DKD_BUILD_OPS=OFF.
 */
#ifndef KDGEN_TEST_H
#define KDGEN_TEST_H

#include <unistd.h>

#include "kd_test.h"

#define KDGEN KD_BIN_DIR "/kdgen"

typedef struct run_result {
  char *out; /* stdout (and stderr when merged); the caller frees it */
  int status;
} run_result;

/* Runs `kdgen ARGS` in the source folder; merge: stderr into out too. */
static inline run_result kdgt_run(const char *args, bool merge) {
  char cmd[8192];
  int status;
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s %s </dev/null", KD_SOURCE_DIR, KDGEN, args,
           merge ? "2>&1" : "2>/dev/null");
  char *out = kd_test_run(cmd, &status);
  return (run_result){out, status};
}

/* Runs `kdgen ARGS` (merged output); the test fails, showing the output,
 * unless kdgen succeeds. */
static inline void kdgt_run_ok(const char *args) {
  run_result r = kdgt_run(args, true);
  if (r.status != 0) fail_msg("kdgen %s failed:\n%.4000s", args, r.out);
  free(r.out);
}

#define KDGT_SKIP_WITHOUT_KDGEN()                                                       \
  do {                                                                                  \
    if (access(KDGEN, X_OK) != 0) {                                                     \
      print_message("kdgen not built (configure with -DKD_BUILD_OPS=ON); skipping\n"); \
      skip();                                                                           \
    }                                                                                   \
  } while (0)

/* hay must (ASSERT_CONTAINS) or must not (ASSERT_LACKS) hold needle. */
#define ASSERT_CONTAINS(hay, needle) KDGT_ASSERT_HOLDS((hay), (needle), true)
#define ASSERT_LACKS(hay, needle) KDGT_ASSERT_HOLDS((hay), (needle), false)
#define KDGT_ASSERT_HOLDS(hay, needle, want)                                          \
  do {                                                                                \
    const char *h_ = (hay), *n_ = (needle);                                           \
    if ((strstr(h_, n_) != NULL) != (want))                                           \
      fail_msg("output %s \"%s\":\n%s", (want) ? "does not contain" : "contains", n_, h_); \
  } while (0)

/* How many times needle occurs in hay (overlapping occurrences count). */
static inline size_t kdgt_count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

#endif
