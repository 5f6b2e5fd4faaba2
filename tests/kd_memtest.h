/* kd_memtest.h: counting live heap bytes in the memory-flatness tests
 * (test_lifetime, ops_test_ops_lifetime), never by time.
 *
 * kd_memtest_live_bytes() frees what released registrations retired
 * (kd__reclaim: the tests link the static library, which has it), then
 * returns glibc's mallinfo2() bytes in use (every arena plus mmap'd chunks),
 * or the sanitizer allocator's count under ASan/TSan, which replace malloc.
 * kd_memtest_without_tcache(argv), first thing in main, runs the test again
 * with glibc's per-thread cache off: its freed chunks count as in use in
 * mallinfo2 (tens of KiB of noise). */
#ifndef KD_MEMTEST_H
#define KD_MEMTEST_H

#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KD_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KD_TEST_SANITIZED 1
#endif
#endif
#ifndef KD_TEST_SANITIZED
#define KD_TEST_SANITIZED 0
#endif

#if KD_TEST_SANITIZED
/* The sanitizer runtime's count of live heap bytes (declared here: gcc does
 * not install the sanitizer headers). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif
/* libkdispatch's reclamation (src/dispatch/reclaim.h). */
size_t kd__reclaim(bool wait);

static inline size_t kd_memtest_live_bytes(void) {
  kd__reclaim(true);
#if KD_TEST_SANITIZED
  return __sanitizer_get_current_allocated_bytes();
#else
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#endif
}

static inline void kd_memtest_without_tcache(char **argv) {
#if !KD_TEST_SANITIZED
  if (getenv("GLIBC_TUNABLES")) return;
  setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
  execv("/proc/self/exe", argv);
  /* exec failed: go on with the cache, within the tolerance or not */
#else
  (void)argv;
#endif
}

#endif
