/*
 * backend_impl.h: what backend.c and plugin.c share. Not installed.
 */
#ifndef KD_BACKEND_IMPL_H
#define KD_BACKEND_IMPL_H

#include <stdatomic.h>

#include "kd/backend.h"

struct kd_backend {
  kd_backend_iface iface; /* this version's layout; name points at `name` */
  char name[32];
  kd_dispatch_key key;
  kd_plugin *plugin;       /* the owner, or NULL */
  /* 1 for the registration + 1 per live block of its allocator. */
  atomic_size_t refs;
  bool was_named;          /* the device type had this name before */
  bool had_prev;           /* an allocator was installed before */
  kd_allocator prev_allocator;
};

/* Registers a backend owned by `plugin` (NULL: none). */
kd_status kd__backend_register(const kd_backend_iface *iface, kd_plugin *plugin,
                               kd_backend **out);
/* Removes the backend from the tables, uninstalls its allocator and name,
 * turns its CPU fallback off. The record stays (kd__backend_put frees it). */
void kd__backend_detach(kd_backend *b);
/* Drops one reference; the last frees the record and, for a plugin's
 * backend, drops the plugin's hold. */
void kd__backend_put(kd_backend *b);
/* Blocks of its allocator still alive. */
size_t kd__backend_live_storages(const kd_backend *b);

/* DLPack for a backend with handles (kd_backend_iface.dlpack_*; core/dlpack.c).
 * handles: whether type's backend has them (no lock, as kd_backend_for_device).
 * data: the (handle, byte offset) of a pointer of its allocator.
 * import: a data pointer for a foreign handle; *held is the backend, with a
 * reference taken for the storage (it counts as a live storage: the plugin
 * cannot be unloaded under it), NULL on error. release: gives the pointer back
 * to the backend and drops that reference. Errors: the backend's, or
 * KD_EUNSUPPORTED when the type has no backend with handles. */
bool kd__backend_dlpack_handles(kd_device_type type);
kd_status kd__backend_dlpack_data(kd_device dev, const void *ptr, void **handle,
                                  uint64_t *byte_offset);
kd_status kd__backend_dlpack_import(kd_device dev, void *handle, uint64_t byte_offset,
                                    size_t nbytes, void **ptr, kd_backend **held);
void kd__backend_dlpack_release(kd_backend *b, kd_device dev, void *ptr);

/* Drops a hold on a plugin; the last calls fini, dlcloses and frees it. */
void kd__plugin_put(kd_plugin *p);

/* Called by kd_library_open_desc after it opened a described library: when
 * this thread is loading a plugin, the library becomes the plugin's (closed
 * at unload), and a registration of its body that failed (body_status,
 * body_error) fails the load. KD_ENOMEM when it cannot be recorded (the
 * caller closes the library). */
kd_status kd__plugin_note_desc(const kd_library_desc *desc, kd_status body_status,
                               const char *body_error);
/* Called by kd_library_open_desc when it could not open a described library
 * (or undid it): while a plugin loads, that fails the load. */
void kd__plugin_note_failure(const kd_library_desc *desc, kd_status st, const char *msg);

/* Start-up (startup.c): the second-copy check (1 when another copy of the
 * library was found in this process, which it warns about) and
 * KD_BACKENDS. kd__startup is the library's constructor. */
int kd__instance_check(void);
void kd__startup(void);

#endif
