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

/* Device-side dtype casts (backend/backend.c): kd_tensor_to_dtype of a
 * tensor on a device other than cpu and meta calls it first. It returns 1
 * when it does not handle the tensor (its storage was not made by a
 * registered backend's allocator, the backend has no `cast` slot, or the
 * tensor is not contiguous: the conversion then goes through the host), else
 * a kd_status with *out set as kd_tensor_to_dtype's. */
struct kd_tensor;
int kd__backend_device_cast(const struct kd_tensor *t, int dtype, struct kd_tensor **out);

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

/* ---- Versioned interface structs (the rule of kd/version.h) ----
 * Every struct the caller passes in starts with uint32_t api_version;
 * version v holds the fields up to ends[v - 1] bytes (the end of its last
 * field, not sizeof, which may count padding the caller's struct lacks).
 * One table per struct, KD__ABI_TABLE, static in the file of the layer that
 * owns the struct and copies it (kd_allocator in core/device.c, kd_kernel
 * in registry/registry.c, kd_backend_iface in backend/backend.c, ...); the
 * static assertions check that the last end is the current struct's. A new
 * version appends its end to the table and increments the struct's macro. */
typedef struct kd__abi_struct {
  const char *name;     /* "kd_library_desc" */
  const char *macro;    /* "KD_LIBRARY_DESC_API_VERSION" */
  uint32_t current;     /* the headers' version */
  size_t size;          /* sizeof the current struct */
  const size_t *ends;   /* ends[v - 1]: the bytes version v has */
} kd__abi_struct;
#define KD__ABI_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
/* static const kd__abi_struct var: the table of `type`, whose current
 * version is the macro macro_name, from ends_array (one KD__ABI_END per
 * version). */
#define KD__ABI_TABLE(var, type, macro_name, ends_array)                                     \
  _Static_assert(sizeof(ends_array) / sizeof(ends_array[0]) == macro_name,                  \
                 #type ": one end per version");                                            \
  _Static_assert(offsetof(type, api_version) == 0, #type ": api_version first");            \
  static const kd__abi_struct var = {#type, #macro_name, macro_name, sizeof(type), ends_array}

/* Copies *src, of any version from 1 to s->current, into dst (s->size bytes):
 * dst is zeroed first, then only the bytes of src's version are read, so a
 * field the caller's version lacks reads 0 (NULL). dst's api_version becomes
 * s->current; *found (may be NULL) gets src's version. KD_EINVAL for a NULL
 * src or another version, with a message naming `where` (the function and
 * what it registers), the struct, the version found and the versions
 * accepted; dst is zeroed then. */
kd_status kd__abi_copy(const kd__abi_struct *s, const void *src, void *dst, const char *where,
                       uint32_t *found);

#endif /* KD_CORE_INTERNAL_H */
