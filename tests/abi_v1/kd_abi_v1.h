/*
 * kd_abi_v1.h: a frozen copy of the version-1 definitions of the interface
 * structs that have a version 2 now (kd_library_desc, kd_allocator), and of
 * the few declarations the test plugin needs, as kdispatch 0.1.0's headers
 * had them. The plugin includes this instead of kd/kd.h, so it is built as a
 * plugin compiled against the older headers would be. Never update it: it is
 * what an old plugin has.
 */
#ifndef KD_ABI_V1_H
#define KD_ABI_V1_H

#include "kd/common.h" /* KD_API, KD_EXTERN_C_BEGIN */
#include "kd/status.h" /* kd_status: not versioned */

KD_EXTERN_C_BEGIN

typedef enum kd_device_type {
  KD_DEVICE_CPU = 0,
  KD_DEVICE_CUDA = 1,
  KD_DEVICE_META = 2,
  KD_DEVICE_PRIVATEUSE1 = 3,
  KD_DEVICE_PRIVATEUSE2 = 4,
  KD_DEVICE_PRIVATEUSE3 = 5,
  KD_DEVICE_TYPE_COUNT
} kd_device_type;

typedef struct kd_device {
  kd_device_type type;
  int32_t index;
} kd_device;

/* kd_dispatch_key: only the values used. */
typedef enum kd_dispatch_key { KD_KEY_UNDEFINED = 0, KD_KEY_CPU = 1 } kd_dispatch_key;

typedef enum kd_library_kind {
  KD_LIBRARY_DEF = 0,
  KD_LIBRARY_FRAGMENT = 1,
  KD_LIBRARY_IMPL = 2,
} kd_library_kind;

typedef struct kd_library kd_library;
typedef struct kd_registration kd_registration;

/* kd_allocator, version 1. */
#define KD_ALLOCATOR_API_VERSION 1
typedef struct kd_allocator {
  uint32_t api_version;
  void *(*alloc)(void *ctx, kd_device device, size_t nbytes);
  void (*free)(void *ctx, kd_device device, void *ptr, size_t nbytes);
  void *ctx;
} kd_allocator;

/* kd_library_desc, version 1 (its first field was called `version` then). */
#define KD_LIBRARY_DESC_VERSION 1
typedef struct kd_library_desc {
  uint32_t version;
  kd_library_kind kind;
  const char *ns;
  kd_dispatch_key key;
  void (*body)(kd_library *lib);
  const char *file;
  int line;
} kd_library_desc;

KD_API kd_status kd_allocator_set(kd_device_type type, const kd_allocator *allocator);
KD_API kd_status kd_allocator_get(kd_device_type type, kd_allocator *out);
KD_API kd_status kd_library_def(kd_library *lib, const char *schema, const char *const *tags,
                                size_t ntags, kd_registration **out);
KD_API kd_status kd_library_open_desc(const kd_library_desc *desc);
KD_API void kd_library_close_desc(const kd_library_desc *desc);

KD_EXTERN_C_END

#endif /* KD_ABI_V1_H */
