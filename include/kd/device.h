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
 * name and DLPack type again is a no-op). Thread-safe (serialized with the
 * other device-type calls), but kd_device_type_name reads the name without
 * a lock: register before other threads name or parse the type. */
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

/* Versioned as kd/version.h says:
 *   version 1: api_version, alloc, free, ctx;
 *   version 2 appends copy_to_host and copy_from_host.
 * The struct only grows at the end: a version-1 caller's struct (compiled
 * against an older header) is shorter, and the library reads and writes only
 * the fields of the version it is given. */
#define KD_ALLOCATOR_API_VERSION 2

/* How storage of one device type gets its bytes and moves them to and from
 * the host. The registry copies the struct; `ctx` must stay valid while any
 * storage made with it lives. */
typedef struct kd_allocator {
  uint32_t api_version; /* KD_ALLOCATOR_API_VERSION (1 is still accepted) */
  /* Returns `nbytes` bytes on `device`, or NULL when out of memory, aligned
   * to at least 64 bytes (blocks under 64 bytes: to at least 16, which every
   * element type needs). Never called with nbytes == 0. */
  void *(*alloc)(void *ctx, kd_device device, size_t nbytes);
  /* Frees what alloc returned for the same device and size. */
  void (*free)(void *ctx, kd_device device, void *ptr, size_t nbytes);
  void *ctx; /* passed to every function of the struct */
  /* ---- Version 2 (optional: both NULL, or both set) ---- */
  /* Copies `nbytes` bytes from device memory to host memory, as DLPack's
   * producers do for a consumer on the host. `device_src` is an address on
   * `device`: inside a block alloc returned, possibly not at its start, or in
   * memory of this device type the allocator did not allocate (storage made by
   * kd_storage_wrap or a DLPack import), so it must accept any valid address of
   * the type. `host_dst` is ordinary cpu memory. The ranges never overlap and
   * need no alignment beyond the element size. Synchronous: the bytes are in
   * `host_dst` when it returns (a backend with streams synchronises first).
   * Never called with nbytes == 0. Returns KD_OK, or a negative kd_status
   * after kd_set_error on failure, when the destination's contents are
   * unspecified. May be called from any thread. */
  kd_status (*copy_to_host)(void *ctx, kd_device device, void *host_dst, const void *device_src,
                            size_t nbytes);
  /* The other way, with the same rules: `host_src` is cpu memory, `device_dst`
   * an address on `device` (the library only writes into storage it made with
   * this allocator). */
  kd_status (*copy_from_host)(void *ctx, kd_device device, void *device_dst, const void *host_src,
                              size_t nbytes);
} kd_allocator;

/* Installs the allocator of a device type; storages made before keep the
 * allocator they were made with. NULL restores the default (cpu: aligned
 * malloc, copies are memcpy; meta: none needed; other types: none, so
 * allocation fails). `allocator->api_version` is read first: with 1 only the
 * version-1 fields are read and the copy functions count as NULL; with 2 the
 * whole struct. A device type whose allocator has no copy functions holds
 * tensors that cannot be moved to or from it (kd_tensor_to_device gives
 * KD_EUNSUPPORTED); cpu is host memory and never needs them.
 * KD_EINVAL for a bad type, an api_version outside 1..KD_ALLOCATOR_API_VERSION
 * (the message names the struct and the versions found and accepted), a NULL alloc or
 * free, only one of the two copy functions, or a meta allocator. The caller
 * keeps `allocator` (it is copied). Thread-safe (serialized; an allocation
 * on another thread uses the old or the new allocator). */
KD_API kd_status kd_allocator_set(kd_device_type type, const kd_allocator *allocator);

/* A copy of the allocator in use for a type, written into the first
 * `out_size` bytes of `*out`: out_size must be at least the size of a
 * version-1 struct; at most sizeof(kd_allocator) bytes are written.
 * out->api_version says which fields were written (2 when out_size covers
 * the copy functions, else 1); copy functions of an allocator installed as
 * version 1 read NULL. KD_ENOTFOUND when the type has none; KD_EINVAL for a
 * bad type, a NULL out or a short out_size. *out is untouched on error.
 * Call it through kd_allocator_get, which passes sizeof(kd_allocator). */
KD_API kd_status kd_allocator_get_sized(kd_device_type type, kd_allocator *out, size_t out_size);

/* kd_status kd_allocator_get(kd_device_type type, kd_allocator *out);
 * A copy of the allocator in use for a type (the whole struct of this
 * header's version); errors as kd_allocator_get_sized. A macro, so that
 * programs compiled against this header get the copy functions while the
 * library's exported kd_allocator_get symbol, which programs built against
 * version 1 call, keeps writing only the version-1 fields. */
#define kd_allocator_get(type, out) kd_allocator_get_sized((type), (out), sizeof(kd_allocator))

KD_EXTERN_C_END

#endif /* KD_DEVICE_H */
