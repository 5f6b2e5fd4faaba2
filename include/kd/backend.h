/*
 * backend.h: device backends as versioned records, device services, and
 * plugins (shared libraries that register a backend and its kernels) with a
 * loader and an unloader.
 *
 * A backend claims one private device type (KD_DEVICE_PRIVATEUSE1..3) and so
 * its dispatch key (PrivateUse1..3). Registering it names the device type and
 * installs a version-2 kd_allocator made from the record, so that everything
 * written against kd_allocator (storage, kd_tensor_to_device, DLPack) works
 * on it.
 *
 * Versioning (ggml's and ONNX Runtime's rule): a struct passed in starts with
 * `api_version`; the library accepts every version from 1 to the current one
 * and reads only the fields that version has; fields are only appended.
 */
#ifndef KD_BACKEND_H
#define KD_BACKEND_H

#include "kd/common.h"
#include "kd/device.h"
#include "kd/dispatch.h"
#include "kd/dtype.h"
#include "kd/library.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

#define KD_BACKEND_API_VERSION 2

typedef struct kd_backend kd_backend; /* opaque: a registered backend */
typedef struct kd_plugin kd_plugin;   /* opaque: a loaded (or loading) plugin */

/* A backend record. The library copies it at registration; `ctx` and the
 * functions must stay valid until the backend is unregistered and every
 * storage made with its allocator is freed. Every function may be called
 * from any thread. */
typedef struct kd_backend_iface {
  uint32_t api_version; /* KD_BACKEND_API_VERSION (1..current accepted) */
  /* The name the device type gets ("fakedev"): lower-case letters, digits
   * and '_', starting with a letter, at most 31 bytes; copied. */
  const char *name;
  kd_device_type device_type; /* KD_DEVICE_PRIVATEUSE1..3 (its dispatch key: PrivateUse1..3) */
  int32_t dlpack_device_type; /* the DLPack device type its tensors export as, or 0 */
  void *ctx;                  /* passed to every function */
  /* Required: the number of devices (indices 0..count-1); >= 1. */
  int32_t (*device_count)(void *ctx);
  /* Required: as kd_allocator's alloc and free (never called with 0 bytes). */
  void *(*alloc)(void *ctx, kd_device device, size_t nbytes);
  void (*free)(void *ctx, kd_device device, void *ptr, size_t nbytes);
  /* Required: copies of `n` bytes (n > 0), asynchronous on `device`'s queue
   * and executed in order on it; synchronize waits until everything queued
   * on `device` is done. Each returns KD_OK or a negative status after
   * kd_set_error. copy_device copies between two devices of this type. */
  kd_status (*copy_from_host)(void *ctx, kd_device device, void *dst, const void *host_src,
                              size_t n);
  kd_status (*copy_to_host)(void *ctx, kd_device device, void *host_dst, const void *src,
                            size_t n);
  kd_status (*copy_device)(void *ctx, kd_device dst_device, void *dst, kd_device src_device,
                           const void *src, size_t n);
  kd_status (*synchronize)(void *ctx, kd_device device);
  /* Optional: writes `count` copies of the `elem_size` bytes at `elem`
   * (host memory) to `dst`, asynchronously on `device`'s queue. A service for
   * the backend's own kernels (its fill_ kernel reaches it through
   * kd_backend_iface_of(kd_device_context.backend), as examples/backend does);
   * the library does not call it itself. NULL: the backend has none. */
  kd_status (*fill)(void *ctx, kd_device device, void *dst, const void *elem, size_t elem_size,
                    size_t count);
  /* Optional (NULL: through the host): converts `count` elements of
   * src_dtype at `src` to dst_dtype at `dst`, both on `device`.
   * kd_tensor_to_dtype calls it for a contiguous tensor whose storage this
   * backend's allocator made (a strided one goes through the host), and
   * returns its error as is. */
  kd_status (*cast)(void *ctx, kd_device device, void *dst, kd_dtype dst_dtype, const void *src,
                    kd_dtype src_dtype, size_t count);
  /* Optional: the device's queue (stream) handed to kernels through
   * kd_call_device_context. NULL function: the backend has no queues (the
   * context's queue is NULL). */
  void *(*queue)(void *ctx, kd_device device);
  /* Optional: extra functions by name (ggml's get_proc_address); NULL
   * function, or NULL returned: none. */
  void *(*get_proc_address)(void *ctx, const char *name);
  /* ---- Version 2 ---- */
  /* Optional, together (all three or none): DLPack for a device whose
   * memory is not addressed by plain pointers. DLPack's rule for such
   * devices (kDLOpenCL, kDLVulkan, kDLMetal) is that DLTensor.data is the
   * memory object's handle (an OpenCL cl_mem) and byte_offset the offset of
   * element 0 in it. NULL: the device's data pointers are DLPack's data as
   * they are (CUDA, or a host-addressed device).
   * dlpack_data: the (handle, byte offset) of `ptr`, a pointer into an
   * allocation this backend's allocator made (its start plus any offset up
   * to its end). The handle is borrowed: it lives as long as the allocation.
   * dlpack_import: a data pointer of this backend for the foreign handle
   * plus byte_offset, whose next `nbytes` bytes must lie in the handle's
   * memory (KD_EINVAL otherwise, KD_EUNSUPPORTED for a handle this backend
   * cannot use, e.g. of another OpenCL context); the backend holds the
   * handle (e.g. clRetainMemObject) without owning its memory, until
   * dlpack_release(ptr) (the storage's end). Each returns KD_OK or a
   * negative status after kd_set_error. */
  kd_status (*dlpack_data)(void *ctx, kd_device device, const void *ptr, void **handle,
                           uint64_t *byte_offset);
  kd_status (*dlpack_import)(void *ctx, kd_device device, void *handle, uint64_t byte_offset,
                             size_t nbytes, void **ptr);
  void (*dlpack_release)(void *ctx, kd_device device, void *ptr);
} kd_backend_iface;

/* Registers a backend: copies the record (the fields of its api_version),
 * names its device type (kd_device_type_register) and installs the
 * allocator made from it (kd_allocator_set, version 2: copy_to_host and
 * copy_from_host are the asynchronous copy followed by synchronize).
 * *out (owned by the library; pass it to kd_backend_unregister) is set on
 * success, NULL on error. Errors change nothing:
 *   KD_EINVAL  NULL iface or out, api_version outside 1..KD_BACKEND_API_VERSION,
 *              a device type that is not private, a bad name, a NULL required
 *              function (each named);
 *   KD_EEXIST  the device type already has a backend, or its name is taken
 *              (by another device type, or this type already has another
 *              name): the message names both.
 * Thread-safe (serialized with other registrations); operator calls on
 * other threads go on meanwhile. Register before other threads name or
 * parse the device type or its keys (names are read without a lock). */
KD_API kd_status kd_backend_register(const kd_backend_iface *iface, kd_backend **out);

/* Unregisters a backend: uninstalls its allocator, gives its device type its
 * original name back, turns off the CPU fallback of its key, and waits until
 * no operator call that could see the backend is still running. Storage made
 * with its allocator keeps the record's functions (they must stay callable
 * until that storage is freed). Must not be called from inside an operator
 * call (it would wait for itself): then it only warns and does nothing.
 * NULL is ignored. Thread-safe; once per backend (the handle is invalid
 * after). */
KD_API void kd_backend_unregister(kd_backend *backend);

/* The backend registered for a device type, or NULL. No lock. */
KD_API const kd_backend *kd_backend_for_device(kd_device_type type);

/* The backend's record as stored (api_version set to KD_BACKEND_API_VERSION,
 * fields a shorter version lacks are NULL/0). Valid while the backend is
 * registered. NULL for NULL. */
KD_API const kd_backend_iface *kd_backend_iface_of(const kd_backend *b);

/* The plugin that registered the backend, NULL for one registered directly. */
KD_API kd_plugin *kd_backend_plugin(const kd_backend *b);

/* ---- Device services ------------------------------------------------------ */

/* The number of devices of a type: 1 for cpu and meta, the backend's
 * device_count for a registered backend, 0 otherwise (and for a bad type). */
KD_API int32_t kd_device_count(kd_device_type type);

/* This thread's current device of a type (index 0 until set). */
KD_API kd_device kd_current_device(kd_device_type type);

/* Sets this thread's current device of device.type. KD_EINVAL for a bad
 * type or a negative index; KD_ERANGE for an index >= kd_device_count of a
 * type that has a backend (cpu and meta: index 0 only). Per thread: other
 * threads keep their own current devices. */
KD_API kd_status kd_set_current_device(kd_device device);

/* A scoped current device: enter saves the current device of device.type
 * and sets `device`; exit restores the saved one. On error (as
 * kd_set_current_device) g->active is false and exit does nothing. */
typedef struct kd_device_guard {
  kd_device prev;
  bool active;
} kd_device_guard;
KD_API kd_status kd_device_guard_enter(kd_device_guard *g, kd_device device);
KD_API void kd_device_guard_exit(kd_device_guard *g);

/* What a kernel needs of its device (PHI's DeviceContext). */
typedef struct kd_device_context {
  const kd_backend *backend; /* NULL for cpu and meta */
  kd_device device;          /* this thread's current device of the key's type */
  void *queue;               /* the backend's queue for it, or NULL */
  void *ctx;                 /* the backend's ctx, or NULL */
} kd_device_context;

/* Fills *out for the call's key (a backend key; for another key the
 * highest backend key of call->keys): an array lookup, no lock.
 * KD_EINVAL for NULL arguments; KD_ENOTFOUND when the key is a private
 * key without a registered backend (also for a call still in flight while
 * its backend is being unregistered), or the call has no backend key (*out
 * untouched on error). */
KD_API kd_status kd_call_device_context(const kd_call *call, kd_device_context *out);

/* ---- Plugins --------------------------------------------------------------- */

/* A plugin is a shared library exporting
 *   const kd_plugin_desc *kd_plugin_entry(uint32_t host_version);
 * (KD_PLUGIN(desc) defines it). The loader passes KD_PLUGIN_API_VERSION of
 * the host; the plugin returns its descriptor (or NULL to refuse). */
#define KD_PLUGIN_API_VERSION 1
#define KD_PLUGIN_ENTRY_SYMBOL "kd_plugin_entry"

typedef struct kd_plugin_desc {
  uint32_t api_version; /* KD_PLUGIN_API_VERSION the plugin was built with */
  const char *name;
  /* Registers everything through the plugin handle (kd_plugin_backend,
   * kd_plugin_library, kd_plugin_open_desc). KD_OK, or a status after
   * kd_set_error: then everything it registered is released. */
  kd_status (*init)(kd_plugin *plugin);
  /* Optional: called at unload after every registration was released and no
   * call can still run the plugin's code, before dlclose. */
  void (*fini)(kd_plugin *plugin);
} kd_plugin_desc;

typedef const kd_plugin_desc *(*kd_plugin_entry_fn)(uint32_t host_version);

#ifdef __cplusplus
#define KD__PLUGIN_LINKAGE extern "C"
#else
#define KD__PLUGIN_LINKAGE
#endif
/* Defines the exported entry point returning &desc (C linkage in C++ too). */
#define KD_PLUGIN(desc)                                                                   \
  KD__PLUGIN_LINKAGE KD_API const kd_plugin_desc *kd_plugin_entry(uint32_t host_version); \
  KD__PLUGIN_LINKAGE KD_API const kd_plugin_desc *kd_plugin_entry(uint32_t host_version) { \
    (void)host_version;                                                                   \
    return &(desc);                                                                       \
  }

/* Registers a backend as kd_backend_register, owned by the plugin: it is
 * unregistered at unload. *out (may be NULL) as kd_backend_register. */
KD_API kd_status kd_plugin_backend(kd_plugin *p, const kd_backend_iface *iface, kd_backend **out);

/* Opens a library as kd_library_open (file "<plugin path>"), owned by the
 * plugin: closed at unload (the caller must not close it). *out may be NULL. */
KD_API kd_status kd_plugin_library(kd_plugin *p, kd_library_kind kind, const char *ns,
                                   kd_dispatch_key key, kd_library **out);

/* Opens a described library as kd_library_open_desc, closed at unload.
 * Libraries that the plugin's KD_LIBRARY / KD_REGISTER_KERNEL constructors
 * open while it is being loaded are attributed to it the same way. */
KD_API kd_status kd_plugin_open_desc(kd_plugin *p, const kd_library_desc *desc);

/* The plugin's path as given to kd_backend_load and its descriptor's name
 * (static or plugin storage, valid while loaded). */
KD_API const char *kd_plugin_path(const kd_plugin *p);
KD_API const char *kd_plugin_name(const kd_plugin *p);

/* Loads a plugin: dlopen(path, RTLD_NOW | RTLD_LOCAL) (constructors run
 * then, and whatever KD_LIBRARY blocks they open belong to the plugin),
 * finds KD_PLUGIN_ENTRY_SYMBOL, calls it with KD_PLUGIN_API_VERSION, checks
 * the descriptor's api_version (1..KD_PLUGIN_API_VERSION) and calls init.
 * *out (owned by the caller: kd_backend_unload) is set on success, NULL on
 * error. Every refusal names the file; a refused or failing plugin leaves no
 * registration behind and is closed:
 *   KD_EINVAL      NULL path or out;
 *   KD_ENOTFOUND   dlopen failed (its message) or no entry point;
 *   KD_EUNSUPPORTED the entry returned NULL, a wrong api_version (found
 *                  and expected named), or the plugin brings a second copy of
 *                  libkdispatch into the process (both files named);
 *   KD_ESTATE      called from inside an operator call or a plugin's init;
 *   the status of a registration of a library its constructors (or
 *                  kd_plugin_open_desc) opened that failed, naming the
 *                  library's file:line;
 *   whatever init returned (KD_EEXIST for a device type or name taken ...).
 * Thread-safe: operator calls on other threads go on meanwhile, and its
 * registrations take the registration lock as any other. */
KD_API kd_status kd_backend_load(const char *path, kd_plugin **out);

/* Unloads a plugin: releases every registration it made (libraries and
 * their kernels and fallbacks, backends: device name, allocator, CPU
 * fallback switch) while other threads may keep calling (a call in flight
 * finishes on the old kernel, later calls see ENOKERNEL or a fallback),
 * waits until no call can still run the plugin's code, calls fini and
 * dlcloses. Storage made with a plugin backend's allocator must be freed
 * first: KD_EBUSY naming how many storages live, and nothing is changed.
 * (Storage made during the unload itself, by a call in flight, keeps the
 * library mapped until it is freed; fini and dlclose happen then.)
 * KD_ESTATE from inside an operator call. NULL: KD_EINVAL. The handle is
 * invalid after KD_OK. KD_EINVAL for a handle that is not loaded.
 * Thread-safe (the list of plugins is locked); unload each handle once. */
KD_API kd_status kd_backend_unload(kd_plugin *plugin);

/* Loads every plugin of a ':'-separated list, as KD_BACKENDS does at start-up
 * (each failure is warned with kd_warn and the next one is tried). Returns
 * the number loaded. The handles are kept by the library (unloaded at exit
 * never: the process owns them). Thread-safe as kd_backend_load. */
KD_API int kd_backend_load_list(const char *paths);

KD_EXTERN_C_END

#endif /* KD_BACKEND_H */
