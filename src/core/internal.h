/*
 * internal.h: helpers shared by the library's sources. Not installed.
 */
#ifndef KD_CORE_INTERNAL_H
#define KD_CORE_INTERNAL_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kd/common.h"
#include "kd/memory.h"
#include "kd/status.h"

/* Internal invariants only: never for bad input, which gets a kd_status. */
#include <assert.h>
#define KD__ASSERT(cond) assert(cond)

#define KD__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Sets KD_ENOMEM with the name of what could not be allocated. */
kd_status kd__oom(const char *what);

/* snprintf into buf/cap while tracking the total length needed; the helpers
 * every *_format function is built on. */
typedef struct kd__fmt {
  char *buf;
  size_t cap;
  size_t len; /* bytes needed so far (may exceed cap) */
} kd__fmt;

static inline kd__fmt kd__fmt_init(char *buf, size_t cap) {
  kd__fmt f;
  f.buf = buf;
  f.cap = cap;
  f.len = 0;
  if (buf && cap) buf[0] = '\0';
  return f;
}
void kd__fmt_putn(kd__fmt *f, const char *s, size_t n);
void kd__fmt_puts(kd__fmt *f, const char *s);
void kd__fmt_printf(kd__fmt *f, const char *fmt, ...) KD_PRINTF_LIKE(2, 3);

/* Every host allocation of the library goes through these (src/core/memory.c):
 * the host allocator of kd/memory.h, with its rules (0 bytes: 1 byte; calloc
 * overflow: NULL; realloc(NULL): malloc; free(NULL): nothing). Never the C
 * library's functions directly. */
/* The installed allocator (memory.c); kd__host_custom is false while it is
 * the default, when the C library is called directly (inline: the call
 * path's tensors are allocated here, so no call more than malloc's). */
extern bool kd__host_custom;
extern kd_host_allocator kd__host;
static inline void *kd__malloc(size_t n) {
  if (n == 0) n = 1;
  return kd__host_custom ? kd__host.malloc(kd__host.ctx, n) : malloc(n);
}
static inline void kd__free(void *p) {
  if (!p) return;
  if (kd__host_custom)
    kd__host.free(kd__host.ctx, p);
  else
    free(p);
}
void *kd__calloc(size_t count, size_t size);
void *kd__realloc(void *p, size_t n);
/* A kd__malloc'd copy of s (NULL for NULL, or when out of memory). */
char *kd__strdup(const char *s);

/* Gives a private device type its original name ("privateuseone", ...) and
 * no DLPack type back (src/core/device.c; kd_backend_unregister). */
#include "kd/device.h"
void kd__device_type_unregister(kd_device_type type);

/* "[float32, float64]": the dtypes of a set, in table order. */
void kd__fmt_dtype_set(kd__fmt *f, uint32_t set);

/* A hash of n bytes, eight at a time, from the seed h (for in-memory tables:
 * the operator names, the schema parser's repeated rests); kd__hash_mix
 * spreads the result's bits before it is cut to a table's size. */
static inline uint64_t kd__hash_bytes(const char *s, size_t n, uint64_t h) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  uint64_t w = 0;
  for (size_t i = 0; i < n; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
  return (h ^ w ^ ((uint64_t)n << 56)) * 0x9e3779b97f4a7c15ull;
}
static inline uint64_t kd__hash_mix(uint64_t h) {
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

/* Device-side dtype casts (tensor_convert.c): when set (by the backend
 * layer, for a backend whose record has a `cast` slot), kd_tensor_to_dtype of
 * a tensor on a device other than cpu and meta calls it first. It returns 1
 * when it does not handle the tensor (no backend, or no cast: the conversion
 * then goes through the host), else a kd_status with *out set as
 * kd_tensor_to_dtype's. NULL: every device cast goes through the host. */
struct kd_tensor;
typedef int (*kd__device_cast_fn)(const struct kd_tensor *t, int dtype,
                                  struct kd_tensor **out);
extern kd__device_cast_fn kd__device_cast;

/* Reference counts. */
typedef atomic_int_fast64_t kd__refcount;
static inline void kd__ref_init(kd__refcount *r) { atomic_init(r, 1); }
static inline void kd__ref_inc(kd__refcount *r) {
  atomic_fetch_add_explicit(r, 1, memory_order_relaxed);
}
/* True when this was the last reference. */
static inline bool kd__ref_dec(kd__refcount *r) {
  return atomic_fetch_sub_explicit(r, 1, memory_order_acq_rel) == 1;
}
static inline int64_t kd__ref_get(const kd__refcount *r) {
  return (int64_t)atomic_load_explicit((kd__refcount *)r, memory_order_relaxed);
}

#endif /* KD_CORE_INTERNAL_H */
