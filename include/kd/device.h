/*
 * device.h: device types and indices, and the allocator of each device type.
 *
 * cpu, cuda and meta are built in. Three private device types exist for
 * out-of-tree backends (PyTorch's PrivateUse1 idea); a backend claims one and
 * may give it a name, e.g. "opencl".
 */
#ifndef KD_DEVICE_H
#define KD_DEVICE_H

#include "kd/common.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

typedef enum kd_device_type {
  KD_DEVICE_CPU = 0,
  KD_DEVICE_CUDA = 1,
  KD_DEVICE_META = 2, /* shapes and dtypes only: storage has no bytes */
  KD_DEVICE_PRIVATEUSE1 = 3,
  KD_DEVICE_PRIVATEUSE2 = 4,
  KD_DEVICE_PRIVATEUSE3 = 5,
  KD_DEVICE_TYPE_COUNT
} kd_device_type;

typedef struct kd_device {
  kd_device_type type;
  int32_t index; /* >= 0; cpu and meta always use 0 */
} kd_device;

static inline kd_device kd_device_cpu(void) {
  kd_device d;
  d.type = KD_DEVICE_CPU;
  d.index = 0;
  return d;
}

static inline bool kd_device_equal(kd_device a, kd_device b) {
  return a.type == b.type && a.index == b.index;
}

/* The type's name: "cpu", "cuda", "meta", "privateuseone".."privateusethree"
 * or the name a backend gave. Static or registry storage, valid for the life
 * of the process; "invalid" for a bad value. */
KD_API const char *kd_device_type_name(kd_device_type type);

/* Names a private device type (KD_DEVICE_PRIVATEUSE1..3) for the life of the
 * process. `name`: lower-case letters, digits and '_', starting with a letter,
 * at most 31 bytes; copied. `dlpack_device_type` is the DLPack device type
 * (DLDeviceType value) tensors of this type export as, or 0 for none.
 * KD_EINVAL: not a private type, or a bad name. KD_EEXIST: the name is taken by
 * another type, or this type already has another name (registering the same
 * name and DLPack type again is a no-op). */
KD_API kd_status kd_device_type_register(kd_device_type type, const char *name,
                                         int32_t dlpack_device_type);

/* The DLPack device type of a device type, 0 when it has none. */
KD_API int32_t kd_device_type_dlpack(kd_device_type type);

/* Looks a type up by name (built-in names and registered names).
 * KD_ENOTFOUND when there is none. */
KD_API kd_status kd_device_type_from_name(const char *name, kd_device_type *out);

/* Parses "cpu", "cuda:1", "opencl:0" (as torch.device). KD_EINVAL with the
 * column of the problem on a malformed string; KD_ENOTFOUND for an unknown
 * type. *out is untouched on error. */
KD_API kd_status kd_device_parse(const char *text, kd_device *out);

/* Formats "cpu", "cuda:1" (the index is printed for every type but cpu and
 * meta). Returns the needed length as snprintf; NUL-terminated when cap > 0. */
KD_API size_t kd_device_format(kd_device device, char *buf, size_t cap);

/* ---- Allocators --------------------------------------------------------- */

#define KD_ALLOCATOR_API_VERSION 1

/* How storage of one device type gets its bytes. The registry copies the
 * struct; `ctx` must stay valid while any storage made with it lives. */
typedef struct kd_allocator {
  uint32_t api_version; /* KD_ALLOCATOR_API_VERSION */
  /* Returns `nbytes` bytes aligned to at least 64 bytes on `device`, or NULL
   * when out of memory. Never called with nbytes == 0. */
  void *(*alloc)(void *ctx, kd_device device, size_t nbytes);
  /* Frees what alloc returned for the same device and size. */
  void (*free)(void *ctx, kd_device device, void *ptr, size_t nbytes);
  void *ctx; /* passed to both */
} kd_allocator;

/* Installs the allocator of a device type; storages made before keep the
 * allocator they were made with. NULL restores the default (cpu: aligned
 * malloc; meta: none needed; other types: none, so allocation fails).
 * KD_EINVAL for a bad type, a wrong api_version, or a meta allocator. */
KD_API kd_status kd_allocator_set(kd_device_type type, const kd_allocator *allocator);

/* A copy of the allocator in use for a type. KD_ENOTFOUND when the type has
 * none; KD_EINVAL for a bad type. */
KD_API kd_status kd_allocator_get(kd_device_type type, kd_allocator *out);

KD_EXTERN_C_END

#endif /* KD_DEVICE_H */
