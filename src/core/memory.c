/*
 * memory.c: the host allocator (kd/memory.h). Every host allocation of the
 * library goes through kd__malloc and friends (core/internal.h), which call
 * the C library directly while the default allocator is installed (no
 * indirect call on the hot paths) and the installed allocator otherwise.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kd/memory.h"

/* The versions of kd_host_allocator (core/internal.h). */
static const size_t host_allocator_ends[] = {KD__ABI_END(kd_host_allocator, ctx)};
KD__ABI_TABLE(kd__abi_host_allocator, kd_host_allocator, KD_HOST_ALLOCATOR_API_VERSION,
              host_allocator_ends);

static void *sys_malloc(void *ctx, size_t n) {
  (void)ctx;
  return malloc(n);
}
static void *sys_calloc(void *ctx, size_t count, size_t size) {
  (void)ctx;
  return calloc(count, size);
}
static void *sys_realloc(void *ctx, void *p, size_t n) {
  (void)ctx;
  return realloc(p, n);
}
static void sys_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

static const kd_host_allocator sys_allocator = {KD_HOST_ALLOCATOR_API_VERSION, sys_malloc,
                                                sys_calloc, sys_realloc, sys_free, NULL};

/* Written only by kd_host_allocator_set, which no other thread may overlap
 * (kd/memory.h). */
kd_host_allocator kd__host = {KD_HOST_ALLOCATOR_API_VERSION, sys_malloc, sys_calloc,
                              sys_realloc, sys_free, NULL};
bool kd__host_custom;

kd_status kd_host_allocator_set(const kd_host_allocator *a) {
  if (!a) {
    kd__host = sys_allocator;
    kd__host_custom = false;
    return KD_OK;
  }
  kd_host_allocator copy;
  kd_status vst = kd__abi_copy(&kd__abi_host_allocator, a, &copy, "kd_host_allocator_set", NULL);
  if (vst) return vst;
  a = &copy;
  if (!a->malloc || !a->calloc || !a->realloc || !a->free)
    return kd_set_error(KD_EINVAL,
                        "kd_host_allocator_set: malloc, calloc, realloc and free must all be "
                        "set");
  kd__host = *a;
  kd__host_custom = true;
  return KD_OK;
}

kd_status kd_host_allocator_get(kd_host_allocator *out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_host_allocator_get: NULL out");
  *out = kd__host;
  return KD_OK;
}

void *kd__calloc(size_t count, size_t size) {
  if (size && count > (size_t)-1 / size) return NULL;
  if (count == 0 || size == 0) count = size = 1;
  return kd__host_custom ? kd__host.calloc(kd__host.ctx, count, size) : calloc(count, size);
}

void *kd__realloc(void *p, size_t n) {
  if (!p) return kd__malloc(n);
  if (n == 0) n = 1;
  return kd__host_custom ? kd__host.realloc(kd__host.ctx, p, n) : realloc(p, n);
}

char *kd__strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = kd__malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void *kd_host_malloc(size_t n) { return kd__malloc(n); }
void *kd_host_calloc(size_t count, size_t size) { return kd__calloc(count, size); }
void *kd_host_realloc(void *p, size_t n) { return kd__realloc(p, n); }
void kd_host_free(void *p) { kd__free(p); }
char *kd_host_strdup(const char *s) { return kd__strdup(s); }
