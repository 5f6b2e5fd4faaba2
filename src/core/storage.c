/*
 * storage.c: reference-counted bytes on a device.
 */
#include <stdio.h>

#include "core/tensor_impl.h"

/* Sets up the fields of storage s, whose memory the caller provides, and
 * gets its bytes: `inline_data` (bytes inside the caller's block, from the
 * default cpu allocator's point of view) or the device type's allocator.
 * On error nothing is left to free but s's own memory. */
kd_status kd__storage_setup(kd_storage *s, void *block, kd_device device, size_t nbytes,
                            void *inline_data) {
  kd__ref_init(&s->refs);
  s->data = NULL;
  s->nbytes = nbytes;
  s->device = device;
  s->owns_via_allocator = false;
  s->deleter = NULL;
  s->deleter_ctx = NULL;
  s->block = block;
  s->data_inline = false;
  if (device.type == KD_DEVICE_META || nbytes == 0) {
    memset(&s->allocator, 0, sizeof s->allocator);
    return KD_OK;
  }
  if (inline_data) {
    s->allocator = *kd__cpu_builtin_allocator();
    s->data = inline_data;
    s->data_inline = true;
    s->owns_via_allocator = true;
    return KD_OK;
  }
  const kd_allocator *def = device.type == KD_DEVICE_CPU ? kd__cpu_default_allocator() : NULL;
  kd_allocator a;
  if (def) {
    a = *def;
  } else if (kd_allocator_get(device.type, &a) != KD_OK) {
    return kd_set_error(KD_EUNSUPPORTED,
                        "cannot allocate %zu bytes on device '%s': no allocator is registered "
                        "for it",
                        nbytes, kd_device_type_name(device.type));
  }
  kd_clear_error();
  s->data = a.alloc(a.ctx, device, nbytes);
  if (!s->data) {
    /* An allocator that said why (kd_set_error) keeps its reason in the message. */
    char why[384] = "";
    if (kd_last_status() != KD_OK) snprintf(why, sizeof why, ": %s", kd_last_error());
    return kd_set_error(KD_ENOMEM, "out of memory allocating %zu bytes on device '%s'%s", nbytes,
                        kd_device_type_name(device.type), why);
  }
  s->allocator = a;
  s->owns_via_allocator = true;
  return KD_OK;
}

kd_status kd_storage_new(kd_device device, size_t nbytes, kd_storage **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_storage_new: NULL out");
  *out = NULL;
  if (!kd__device_ok(device))
    return kd_set_error(KD_EINVAL, "kd_storage_new: invalid device (type %d, index %d)",
                        (int)device.type, (int)device.index);
  /* Small cpu storage with the default allocator: the bytes follow the
   * struct in one block. */
  bool inl = kd__inline_bytes(device, nbytes);
  kd_storage *s = kd__malloc(KD__STORAGE_HEAD + (inl ? nbytes : 0));
  if (!s) return kd__oom("storage");
  kd_status st = kd__storage_setup(s, NULL, device, nbytes,
                                   inl ? (char *)s + KD__STORAGE_HEAD : NULL);
  if (st) {
    kd__free(s);
    return st;
  }
  *out = s;
  return KD_OK;
}

kd_status kd_storage_wrap(kd_device device, void *data, size_t nbytes, void (*deleter)(void *ctx),
                          void *deleter_ctx, kd_storage **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_storage_wrap: NULL out");
  *out = NULL;
  if (!kd__device_ok(device))
    return kd_set_error(KD_EINVAL, "kd_storage_wrap: invalid device (type %d, index %d)",
                        (int)device.type, (int)device.index);
  if (!data && nbytes > 0 && device.type != KD_DEVICE_META)
    return kd_set_error(KD_EINVAL, "kd_storage_wrap: NULL data for %zu bytes", nbytes);
  kd_storage *s = kd__calloc(1, sizeof *s);
  if (!s) return kd__oom("storage");
  kd__ref_init(&s->refs);
  s->block = NULL;
  s->data_inline = false;
  s->data = data;
  s->nbytes = nbytes;
  s->device = device;
  s->deleter = deleter;
  s->deleter_ctx = deleter_ctx;
  *out = s;
  return KD_OK;
}

void kd_storage_retain(kd_storage *storage) {
  if (storage) kd__ref_inc(&storage->refs);
}

void kd_storage_release(kd_storage *storage) {
  if (!storage || !kd__ref_dec_last(&storage->refs)) return;
  if (storage->data_inline) {
    /* the bytes go with the block */
  } else if (storage->owns_via_allocator) {
    storage->allocator.free(storage->allocator.ctx, storage->device, storage->data,
                            storage->nbytes);
  } else if (storage->deleter) {
    storage->deleter(storage->deleter_ctx);
  }
  /* A one-block storage: the block also holds the tensor made with it,
   * which is gone (it held a reference). */
  kd__free(storage->block ? storage->block : storage);
}

void *kd_storage_data(const kd_storage *storage) { return storage->data; }
size_t kd_storage_nbytes(const kd_storage *storage) { return storage->nbytes; }
kd_device kd_storage_device(const kd_storage *storage) { return storage->device; }
int64_t kd_storage_refcount(const kd_storage *storage) { return kd__ref_get(&storage->refs); }
