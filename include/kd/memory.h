/*
 * memory.h: the host allocator, through which every host allocation of
 * kdispatch goes (SQLite's SQLITE_CONFIG_MALLOC).
 *
 * libkdispatch, libkdops, kdgen and the kd tool allocate all their host
 * memory (operators, tables, schemas, values, tensor headers, the bytes of
 * cpu tensors made by the default cpu allocator, strings) through one set of
 * functions. A program can replace it: to account for memory, to use its own
 * heap, or to make the N-th allocation fail in a test (how the test suite
 * checks that every allocation failure is survived).
 *
 * Ownership: memory the library hands to the caller and documents as "free
 * with kd_host_free" comes from this allocator; everything else stays owned
 * by the library. A block is always freed by the allocator installed when it
 * is freed, not the one that made it, so an allocator must be installed
 * before the first call into kdispatch (and before libraries with load-time
 * registrations are loaded), or be a wrapper that can free the blocks of the
 * allocator it replaces (a test's failing allocator that delegates to the
 * default one). Replacing it is not thread-safe: no other thread may be
 * inside kdispatch meanwhile.
 */
#ifndef KD_MEMORY_H
#define KD_MEMORY_H

#include "kd/common.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

/* Versioned as kd/version.h says. Version 1: api_version, malloc, calloc,
 * realloc, free, ctx. */
#define KD_HOST_ALLOCATOR_API_VERSION 1

typedef struct kd_host_allocator {
  uint32_t api_version; /* KD_HOST_ALLOCATOR_API_VERSION */
  /* As the C functions of the same names, with the allocator's ctx first:
   * NULL when out of memory (realloc then leaves the block as it was).
   * Blocks are aligned for any standard type (alignof(max_align_t)). The
   * library never asks for 0 bytes, never reallocates NULL and never frees
   * NULL. May be called from any thread at once. */
  void *(*malloc)(void *ctx, size_t nbytes);
  void *(*calloc)(void *ctx, size_t count, size_t size);
  void *(*realloc)(void *ctx, void *ptr, size_t nbytes);
  void (*free)(void *ctx, void *ptr);
  void *ctx; /* passed to every function; must outlive the allocator's use */
} kd_host_allocator;

/* Installs the host allocator (copied; the caller keeps `allocator`), or
 * restores the default (the C library's malloc family) with NULL. Read the
 * rules at the top of this header: install it before anything is allocated,
 * or make sure it can free what the previous one allocated. KD_EINVAL for an
 * api_version outside 1..KD_HOST_ALLOCATOR_API_VERSION (the message names
 * the struct and the versions) or a NULL function; the allocator in use is
 * then unchanged. Not thread-safe: no other thread may be inside kdispatch
 * (or libkdops) while it runs. */
KD_API kd_status kd_host_allocator_set(const kd_host_allocator *allocator);

/* A copy of the host allocator in use (the default one's functions are the
 * library's wrappers of the C library's). KD_EINVAL for a NULL out, which is
 * then untouched. */
KD_API kd_status kd_host_allocator_get(kd_host_allocator *out);

/* Allocation through the host allocator in use, for libraries and tools
 * built on kdispatch that want their allocations to follow it (libkdops,
 * kdgen and kd do). They behave as malloc, calloc, realloc, free and strdup,
 * with these differences: a request of 0 bytes is served as 1 byte;
 * kd_host_calloc returns NULL when count * size overflows; kd_host_realloc
 * of NULL allocates; kd_host_free(NULL) does nothing; kd_host_strdup(NULL)
 * returns NULL. They do not set the error message. The caller owns the
 * result and frees it with kd_host_free. */
KD_API void *kd_host_malloc(size_t nbytes);
KD_API void *kd_host_calloc(size_t count, size_t size);
KD_API void *kd_host_realloc(void *ptr, size_t nbytes);
KD_API void kd_host_free(void *ptr);
KD_API char *kd_host_strdup(const char *s);

KD_EXTERN_C_END

#endif /* KD_MEMORY_H */
