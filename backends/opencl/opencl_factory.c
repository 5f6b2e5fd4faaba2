/*
 * opencl_factory.c: the factories every composite of libkdops is built from
 * (Customized, unstructured in opencl.yaml): empty.memory_format and
 * empty_strided. The bytes come from the backend's allocator (the caching
 * allocator of opencl_device.c) through kd_tensor_empty*; they are not
 * initialised, as on every device.
 */
#include "kdcl.h"
#include "opencl_functions.h"

/* The device a factory runs on (its Device argument, else this thread's
 * current opencl device): KD_EINVAL naming op when it is not one. */
static kd_status factory_device(const char *op, const kd_device *device, kd_device *out) {
  kd_device d = device ? *device : kd_current_device(KDCL_DEVICE_TYPE);
  if (d.type != KDCL_DEVICE_TYPE || d.index < 0 || d.index >= kdcl_device_count()) {
    char name[64];
    kd_device_format(d, name, sizeof name);
    return kd_set_error(KD_EINVAL, "opencl %s: device %s is not an OpenCL device (opencl:0..%d)",
                        op, name, kdcl_device_count() - 1);
  }
  *out = d;
  return KD_OK;
}

/* KD_OK for a strided layout (or none), KD_EUNSUPPORTED naming op otherwise. */
static kd_status strided_layout(const char *op, const kd_layout *layout) {
  if (layout && *layout != KD_LAYOUT_STRIDED)
    return kd_set_error(KD_EUNSUPPORTED, "opencl %s: layout %s is not supported: expected strided",
                        op, kd_layout_name(*layout));
  return KD_OK;
}

/* KD_OK when size has at most KD_MAX_DIMS dimensions, none negative. */
static kd_status check_sizes(const char *op, kd_ints size) {
  if (size.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "opencl %s: %lld dimensions: at most %d", op,
                        (long long)size.size, KD_MAX_DIMS);
  for (int64_t d = 0; d < size.size; d++)
    if (size.data[d] < 0)
      return kd_set_error(KD_EINVAL,
                          "opencl %s: Trying to create tensor with negative dimension %lld", op,
                          (long long)size.data[d]);
  return KD_OK;
}

/* *out: a new contiguous tensor (one reference, the caller's); NULL on error. */
kd_status opencl_empty_memory_format(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                                     const kd_device *device, const bool *pin_memory,
                                     const kd_memory_format *memory_format, kd_tensor **out) {
  (void)pin_memory;
  const char *op = "empty.memory_format";
  *out = NULL;
  kd_device dev;
  kd_status st = factory_device(op, device, &dev);
  if (st || (st = strided_layout(op, layout)) || (st = check_sizes(op, size))) return st;
  if (memory_format && *memory_format != KD_MEMORY_FORMAT_CONTIGUOUS &&
      *memory_format != KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EUNSUPPORTED,
                        "opencl empty.memory_format: memory format %d is not supported: only "
                        "contiguous tensors",
                        (int)*memory_format);
  return kd_tensor_empty((int)size.size, size.data, dtype ? *dtype : kd_get_default_dtype(), dev,
                         out);
}

/* *out: a new tensor with the given strides (one reference, the caller's);
 * NULL on error. */
kd_status opencl_empty_strided(kd_ints size, kd_ints stride, const kd_dtype *dtype,
                               const kd_layout *layout, const kd_device *device,
                               const bool *pin_memory, kd_tensor **out) {
  (void)pin_memory;
  const char *op = "empty_strided";
  *out = NULL;
  kd_device dev;
  kd_status st = factory_device(op, device, &dev);
  if (st || (st = strided_layout(op, layout)) || (st = check_sizes(op, size))) return st;
  if (size.size != stride.size)
    return kd_set_error(KD_EINVAL,
                        "opencl empty_strided: mismatch in length of strides and shape (%lld "
                        "sizes, %lld strides)",
                        (long long)size.size, (long long)stride.size);
  return kd_tensor_empty_strided((int)size.size, size.data, stride.data,
                                 dtype ? *dtype : kd_get_default_dtype(), dev, out);
}
