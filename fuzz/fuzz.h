/*
 * fuzz.h: what the libFuzzer harnesses of fuzz/ share (docs/FUZZING.md).
 *
 * Each harness defines LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize) and
 * is linked two ways: with -fsanitize=fuzzer into a fuzzer (KD_FUZZ=ON,
 * clang), and with replay.c into a program that runs the committed corpus
 * through the same body (every build: the CTest tests fuzz_*_corpus).
 *
 * A harness turns the fuzzer's bytes into structured input with the reader
 * below, calls the library, and checks invariants with FUZZ_CHECK, which
 * prints what failed and aborts (a finding for libFuzzer, a failed test for
 * the replay).
 */
#ifndef KD_FUZZ_H
#define KD_FUZZ_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: invariant failed: %s\n  ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                 \
      fputc('\n', stderr);                                                          \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* The fuzzer's bytes, consumed front to back; past the end every read
 * gives zero, so any input decodes to something. */
typedef struct fuzz_reader {
  const uint8_t *p;
  size_t left;
} fuzz_reader;

static inline uint8_t fuzz_u8(fuzz_reader *r) {
  if (!r->left) return 0;
  r->left--;
  return *r->p++;
}

static inline uint64_t fuzz_u64(fuzz_reader *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)fuzz_u8(r) << (8 * i);
  return v;
}

/* An integer as the fuzzer best finds them: one byte below 200 is a small
 * value (-16..183); 200..231 pick a boundary (powers of two, the int64
 * limits, their neighbours); 232 and above read 8 raw bytes. */
static inline int64_t fuzz_int(fuzz_reader *r) {
  uint8_t b = fuzz_u8(r);
  if (b < 200) return (int64_t)b - 16;
  if (b >= 232) return (int64_t)fuzz_u64(r);
  static const int64_t edges[32] = {
      INT64_MAX,           INT64_MIN,          INT64_MAX - 1,       INT64_MIN + 1,
      (int64_t)1 << 62,    -((int64_t)1 << 62), ((int64_t)1 << 62) - 1, ((int64_t)1 << 62) + 1,
      (int64_t)1 << 31,    -((int64_t)1 << 31), ((int64_t)1 << 31) - 1, (int64_t)1 << 32,
      ((int64_t)1 << 32) - 1, (int64_t)1 << 40, (int64_t)1 << 48,   (int64_t)1 << 53,
      ((int64_t)1 << 53) + 1, (int64_t)1 << 20, 255,                256,
      65535,               65536,              1000,                4096,
      -1000,               -65536,             INT32_MAX,           INT32_MIN,
      (int64_t)1 << 61,    (int64_t)1 << 60,   INT64_MAX / 2 + 1,   INT64_MAX / 3,
  };
  return edges[b - 200];
}

/* A size_t-like count in [0, max]. */
static inline size_t fuzz_count(fuzz_reader *r, size_t max) {
  return max ? (size_t)(fuzz_u8(r) % (max + 1)) : 0;
}

/* A double: small integers and fractions, the special values, or 8 raw bytes. */
static inline double fuzz_double(fuzz_reader *r) {
  uint8_t b = fuzz_u8(r);
  if (b < 200) return ((double)b - 16) / ((b & 1) ? 4.0 : 1.0);
  switch (b) {
  case 200: return INFINITY;
  case 201: return -INFINITY;
  case 202: return NAN;
  case 203: return -0.0;
  case 204: return 1e308;
  case 205: return -1e308;
  case 206: return 5e-324;
  case 207: return 9.2233720368547758e18;
  case 208: return -9.2233720368547758e18;
  case 209: return 1.8446744073709552e19;
  default: {
    uint64_t u = fuzz_u64(r);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
  }
  }
}

#endif
