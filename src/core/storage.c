/*
 * storage.c: reference-counted bytes on a device.
 */
#include "core/tensor_impl.h"

static bool device_ok(kd_device d) {
  return d.type >= 0 && d.type < KD_DEVICE_TYPE_COUNT && d.index >= 0;
}

kd_status kd_storage_new(kd_device device, size_t nbytes, kd_storage **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_storage_new: NULL out");
  *out = NULL;
  if (!device_ok(device))
    return kd_set_error(KD_EINVAL, "kd_storage_new: invalid device (type %d, index %d)",
                        (int)device.type, (int)device.index);
  kd_storage *s = calloc(1, sizeof *s);
  if (!s) return kd__oom("storage");
  kd__ref_init(&s->refs);
  s->nbytes = nbytes;
  s->device = device;
  if (device.type != KD_DEVICE_META && nbytes > 0) {
    kd_allocator a;
    if (kd_allocator_get(device.type, &a) != KD_OK) {
      free(s);
      return kd_set_error(KD_EUNSUPPORTED,
                          "cannot allocate %zu bytes on device '%s': no allocator is registered "
                          "for it",
                          nbytes, kd_device_type_name(device.type));
    }
    s->data = a.alloc(a.ctx, device, nbytes);
    if (!s->data) {
      free(s);
      return kd_set_error(KD_ENOMEM, "out of memory allocating %zu bytes on device '%s'", nbytes,
                          kd_device_type_name(device.type));
    }
    s->allocator = a;
    s->owns_via_allocator = true;
  }
  *out = s;
  return KD_OK;
}

kd_status kd_storage_wrap(kd_device device, void *data, size_t nbytes, void (*deleter)(void *ctx),
                          void *deleter_ctx, kd_storage **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_storage_wrap: NULL out");
  *out = NULL;
  if (!device_ok(device))
    return kd_set_error(KD_EINVAL, "kd_storage_wrap: invalid device (type %d, index %d)",
                        (int)device.type, (int)device.index);
  if (!data && nbytes > 0 && device.type != KD_DEVICE_META)
    return kd_set_error(KD_EINVAL, "kd_storage_wrap: NULL data for %zu bytes", nbytes);
  kd_storage *s = calloc(1, sizeof *s);
  if (!s) return kd__oom("storage");
  kd__ref_init(&s->refs);
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
  if (!storage || !kd__ref_dec(&storage->refs)) return;
  if (storage->owns_via_allocator)
    storage->allocator.free(storage->allocator.ctx, storage->device, storage->data,
                            storage->nbytes);
  else if (storage->deleter)
    storage->deleter(storage->deleter_ctx);
  free(storage);
}

void *kd_storage_data(const kd_storage *storage) { return storage->data; }
size_t kd_storage_nbytes(const kd_storage *storage) { return storage->nbytes; }
kd_device kd_storage_device(const kd_storage *storage) { return storage->device; }
int64_t kd_storage_refcount(const kd_storage *storage) { return kd__ref_get(&storage->refs); }
