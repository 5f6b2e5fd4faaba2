/*
 * abi.c: the versioned interface structs (kd/version.h) and the one helper
 * that reads any accepted version of them.
 *
 * Each table lists, per version, where that version's last field ends. A new
 * version appends its end here and increments the struct's macro; the
 * static assertions check that the last entry is the current struct.
 */
#include <stdio.h>

#include "core/internal.h"
#include "kd/backend.h"
#include "kd/device.h"
#include "kd/dispatch.h"
#include "kd/kernel_def.h"
#include "kd/library.h"
#include "kd/memory.h"

#define KD__ABI_TABLE(var, type, macro_name, ends_array)                                     \
  _Static_assert(sizeof(ends_array) / sizeof(ends_array[0]) == macro_name,                  \
                 #type ": one end per version");                                            \
  _Static_assert(offsetof(type, api_version) == 0, #type ": api_version first");            \
  const kd__abi_struct var = {#type, #macro_name, macro_name, sizeof(type), ends_array}

static const size_t kernel_ends[] = {KD__ABI_END(kd_kernel, debug)};
KD__ABI_TABLE(kd__abi_kernel, kd_kernel, KD_KERNEL_API_VERSION, kernel_ends);

static const size_t keyed_kernel_ends[] = {KD__ABI_END(kd_keyed_kernel, user_data)};
KD__ABI_TABLE(kd__abi_keyed_kernel, kd_keyed_kernel, KD_KEYED_KERNEL_API_VERSION,
              keyed_kernel_ends);

static const size_t library_desc_ends[] = {KD__ABI_END(kd_library_desc, line),
                                           KD__ABI_END(kd_library_desc, id)};
KD__ABI_TABLE(kd__abi_library_desc, kd_library_desc, KD_LIBRARY_DESC_API_VERSION,
              library_desc_ends);

static const size_t kernel_def_ends[] = {KD__ABI_END(kd_kernel_def, debug)};
KD__ABI_TABLE(kd__abi_kernel_def, kd_kernel_def, KD_KERNEL_DEF_API_VERSION, kernel_def_ends);

static const size_t kernel_class_ends[] = {KD__ABI_END(kd_kernel_class, class_data)};
KD__ABI_TABLE(kd__abi_kernel_class, kd_kernel_class, KD_KERNEL_CLASS_API_VERSION,
              kernel_class_ends);

static const size_t allocator_ends[] = {KD__ABI_END(kd_allocator, ctx),
                                        KD__ABI_END(kd_allocator, copy_from_host)};
KD__ABI_TABLE(kd__abi_allocator, kd_allocator, KD_ALLOCATOR_API_VERSION, allocator_ends);

static const size_t host_allocator_ends[] = {KD__ABI_END(kd_host_allocator, ctx)};
KD__ABI_TABLE(kd__abi_host_allocator, kd_host_allocator, KD_HOST_ALLOCATOR_API_VERSION,
              host_allocator_ends);

static const size_t backend_iface_ends[] = {KD__ABI_END(kd_backend_iface, get_proc_address),
                                             KD__ABI_END(kd_backend_iface, dlpack_release)};
KD__ABI_TABLE(kd__abi_backend_iface, kd_backend_iface, KD_BACKEND_API_VERSION,
              backend_iface_ends);

static const size_t plugin_desc_ends[] = {KD__ABI_END(kd_plugin_desc, fini)};
KD__ABI_TABLE(kd__abi_plugin_desc, kd_plugin_desc, KD_PLUGIN_API_VERSION, plugin_desc_ends);

/* kd_kernel_class is embedded by value in kd_kernel_def: it may never grow. */
_Static_assert(KD_KERNEL_CLASS_API_VERSION == 1,
               "kd_kernel_class is embedded in kd_kernel_def and cannot grow");

kd_status kd__abi_copy(const kd__abi_struct *s, const void *src, void *dst, const char *where,
                       uint32_t *found) {
  memset(dst, 0, s->size);
  if (!src) return kd_set_error(KD_EINVAL, "%s: NULL %s", where, s->name);
  uint32_t version;
  memcpy(&version, src, sizeof version); /* api_version, the first field of every version */
  if (found) *found = version;
  if (version < 1 || version > s->current) {
    char accepted[64];
    if (s->current == 1)
      snprintf(accepted, sizeof accepted, "only 1");
    else
      snprintf(accepted, sizeof accepted, "1 to %u", (unsigned)s->current);
    return kd_set_error(KD_EINVAL,
                        "%s: %s api_version %u is not supported: this library accepts %s (%s)%s",
                        where, s->name, (unsigned)version, accepted, s->macro,
                        version == 0 ? "; was api_version left unset?"
                                     : "; was it built against a newer kdispatch?");
  }
  memcpy(dst, src, s->ends[version - 1]);
  uint32_t current = s->current;
  memcpy(dst, &current, sizeof current);
  return KD_OK;
}
