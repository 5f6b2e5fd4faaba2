/*
 * kd_test.h: cmocka plus assertions that print both sides and the library's
 * last error message.
 */
#ifndef KD_TEST_H
#define KD_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kd/kd.h"

/* expr must return KD_OK; on failure print the status and message. */
#define KD_ASSERT_OK(expr)                                                          \
  do {                                                                              \
    kd_status kd_t_st_ = (expr);                                                    \
    if (kd_t_st_ != KD_OK) {                                                        \
      fail_msg("%s returned %s: %s", #expr, kd_status_name(kd_t_st_), kd_last_error()); \
    }                                                                               \
  } while (0)

/* expr must fail with `status`, and the message must contain `needle`. */
#define KD_ASSERT_ERR(expr, status, needle)                                           \
  do {                                                                                \
    kd_clear_error();                                                                 \
    kd_status kd_t_st_ = (expr);                                                      \
    if (kd_t_st_ != (status)) {                                                       \
      fail_msg("%s returned %s, expected %s (message: %s)", #expr,                    \
               kd_status_name(kd_t_st_), kd_status_name(status), kd_last_error());     \
    }                                                                                 \
    if (strstr(kd_last_error(), (needle)) == NULL) {                                  \
      fail_msg("%s: message \"%s\" does not contain \"%s\"", #expr, kd_last_error(),  \
               (needle));                                                             \
    }                                                                                 \
  } while (0)

#define KD_ASSERT_STR_EQ(a, b)                                        \
  do {                                                                \
    const char *kd_t_a_ = (a), *kd_t_b_ = (b);                        \
    if (strcmp(kd_t_a_, kd_t_b_) != 0)                                \
      fail_msg("%s != %s:\n  \"%s\"\n  \"%s\"", #a, #b, kd_t_a_, kd_t_b_); \
  } while (0)

/* Opens a library (its debug string names this header's line, not the
 * test's); fails the test on error. */
static inline kd_library *kd_test_open_lib(kd_library_kind kind, const char *ns,
                                           kd_dispatch_key key) {
  kd_library *lib;
  KD_ASSERT_OK(kd_library_open(kind, ns, key, __FILE__, __LINE__, &lib));
  return lib;
}

/* A 2-element float32 tensor on a device with an allocator (cpu, meta). */
static inline kd_tensor *kd_test_tensor_on(kd_device_type type) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, (kd_device){type, 0}, &t));
  return t;
}

/* Runs a shell command; returns its standard output (malloc'd, NUL-terminated;
 * the caller frees it) and sets *status to its exit status (-1 when it did not
 * exit normally). */
#include <sys/wait.h>
static inline char *kd_test_run(const char *cmd, int *status) {
  FILE *p = popen(cmd, "r");
  if (!p) fail_msg("popen(%s) failed", cmd);
  size_t cap = 4096, len = 0, got;
  char *buf = malloc(cap);
  assert_non_null(buf);
  while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += got;
    if (cap - len < 2) {
      cap *= 2;
      buf = realloc(buf, cap);
      assert_non_null(buf);
    }
  }
  buf[len] = '\0';
  int ws = pclose(p);
  *status = (ws != -1 && WIFEXITED(ws)) ? WEXITSTATUS(ws) : -1;
  return buf;
}

/* The bytes of the file at path, NUL-terminated (malloc'd; the caller frees
 * it); fails the test when it cannot be read. */
static inline char *kd_test_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* A private device whose memory is plain host memory (malloc, memcpy): a
 * version-2 allocator for tests that only need tensors to live on another
 * device type (tests that must catch host reads of device memory scramble
 * the bytes instead: tests/ops/test_cpu_fallback.c, examples/backend). */
static inline void *kd_test_host_alloc_(void *ctx, kd_device d, size_t n) {
  (void)ctx;
  (void)d;
  return malloc(n);
}
static inline void kd_test_host_free_(void *ctx, kd_device d, void *p, size_t n) {
  (void)ctx;
  (void)d;
  (void)n;
  free(p);
}
static inline kd_status kd_test_host_copy_(void *ctx, kd_device d, void *dst, const void *src,
                                           size_t n) {
  (void)ctx;
  (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}
static inline kd_allocator kd_test_host_allocator(void) {
  kd_allocator a = {KD_ALLOCATOR_API_VERSION, kd_test_host_alloc_, kd_test_host_free_, NULL,
                    kd_test_host_copy_, kd_test_host_copy_};
  return a;
}

#endif /* KD_TEST_H */
