/*
 * plugin.c: a plugin built against the version-1 structs (kd_abi_v1.h), as
 * one compiled before kd_library_desc and kd_allocator had a version 2.
 * test_abi_v1 dlopen()s it. Every struct it passes is followed in memory by
 * fields of the newer version filled with garbage, which the library must
 * not read.
 */
#include <stdlib.h>
#include <string.h>

#include "kd_abi_v1.h"

#define EXPORT __attribute__((visibility("default")))

/* What test_abi_v1 looks up with dlsym. */
EXPORT kd_status abi_v1_open(void);
EXPORT void abi_v1_close(void);
EXPORT int abi_v1_get_allocator(void);
EXPORT int abi_v1_allocs(void);
EXPORT int abi_v1_frees(void);

static int allocs, frees;

static void *v1_alloc(void *ctx, kd_device device, size_t nbytes) {
  (void)ctx;
  (void)device;
  allocs++;
  return aligned_alloc(64, (nbytes + 63) / 64 * 64);
}
static void v1_free(void *ctx, kd_device device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  (void)nbytes;
  frees++;
  free(ptr);
}

/* What version 2 appended, as garbage: a library that read it would install
 * these as copy functions, or print this id. */
static kd_status never_called(void *ctx, kd_device device, void *dst, const void *src, size_t n) {
  (void)ctx;
  (void)device;
  (void)dst;
  (void)src;
  (void)n;
  abort();
}

static const struct {
  kd_allocator v1;
  kd_status (*garbage[2])(void *, kd_device, void *, const void *, size_t);
} allocator = {{KD_ALLOCATOR_API_VERSION, v1_alloc, v1_free, NULL}, {never_called, never_called}};

static void body(kd_library *lib) {
  kd_library_def(lib, "triple(int x) -> int", NULL, 0, NULL);
}

static const struct {
  kd_library_desc v1;
  const char *garbage_id;
} desc = {{KD_LIBRARY_DESC_VERSION, KD_LIBRARY_DEF, "abiv1", KD_KEY_UNDEFINED, body, "plugin.c",
           42},
          "GARBAGE"};

/* Registers through the version-1 structs; returns the first failure. */
EXPORT kd_status abi_v1_open(void) {
  kd_status st = kd_allocator_set(KD_DEVICE_PRIVATEUSE3, &allocator.v1);
  if (st == KD_OK) st = kd_library_open_desc(&desc.v1);
  return st;
}

EXPORT void abi_v1_close(void) {
  kd_library_close_desc(&desc.v1);
  kd_allocator_set(KD_DEVICE_PRIVATEUSE3, NULL);
}

/* kd_allocator_get as a version-1 caller: it must write the version-1
 * fields only, leaving what follows the struct alone. 1 when it did. */
EXPORT int abi_v1_get_allocator(void) {
  struct {
    kd_allocator v1;
    unsigned char after[32];
  } got;
  memset(&got, 0xA5, sizeof got);
  if (kd_allocator_get(KD_DEVICE_PRIVATEUSE3, &got.v1) != KD_OK) return 0;
  for (size_t i = 0; i < sizeof got.after; i++)
    if (got.after[i] != 0xA5) return 0;
  return got.v1.api_version == 1 && got.v1.alloc == v1_alloc && got.v1.free == v1_free;
}

EXPORT int abi_v1_allocs(void) { return allocs; }
EXPORT int abi_v1_frees(void) { return frees; }
