/*
 * composite.c: the device-neutral kernels of the factories and composites
 * (CompositeExplicitAutograd), and two of the five primitives a device
 * backend implements (empty_strided, resize_; the others are
 * empty.memory_format in factories.c, fill_.Scalar and copy_ in copy.c).
 *
 * Every kernel here is written only with dispatched calls of the five
 * primitives (empty.memory_format, empty_strided, fill_.Scalar, copy_,
 * resize_) and of other operators built on them, plus views (metadata only):
 * it never reads or writes a tensor's bytes itself, so it runs on any device
 * whose backend registers those five kernels for its key. A factory call
 * without tensor arguments reaches the device's slot through the generated
 * BackendSelect kernel (ops/src/gen_support.c). Where the direct CPU code is
 * faster, the operator keeps a CPU (and Meta) kernel in factories.c, copy.c
 * or shape.c, and the kernel here serves every other backend
 * (docs/OPS.md, "Device-neutral composites").
 *
 * Ownership: a kernel with `kd_tensor **out` gives the caller one reference
 * to a new tensor (NULL on error); an in-place kernel writes the caller's
 * tensor, which stays the caller's. Every other tensor argument is
 * borrowed. Errors are those of the dispatched calls, whose messages name
 * the operator that failed (an ENOKERNEL names the missing primitive).
 */
#include <stdio.h>
#include <string.h>

#include "native/factories.h"
#include "native/views.h"

#include "kd/ops/copy.h"
#include "kd/ops/empty.h"
#include "kd/ops/empty_like.h"
#include "kd/ops/empty_strided.h"
#include "kd/ops/fill.h"
#include "kd/ops/full.h"
#include "kd/ops/ones.h"
#include "kd/ops/resize.h"
#include "kd/ops/zeros.h"

#include "clone_native.h"
#include "empty_like_native.h"
#include "empty_strided_native.h"
#include "full_like_native.h"
#include "full_native.h"
#include "new_empty_native.h"
#include "new_empty_strided_native.h"
#include "new_full_native.h"
#include "new_ones_native.h"
#include "new_zeros_native.h"
#include "ones_like_native.h"
#include "ones_native.h"
#include "resize_native.h"
#include "zero_native.h"
#include "zeros_like_native.h"
#include "zeros_native.h"

/* ---- empty_strided (CPU, Meta) ------------------------------------------------ */

static kd_status empty_strided_common(kd_device_type want, kd_ints size, kd_ints stride,
                                      const kd_dtype *dtype, const kd_layout *layout,
                                      const kd_device *device, const bool *pin_memory,
                                      kd_tensor **out) {
  *out = NULL;
  kd_status st = kdk__check_size_list("empty_strided", size);
  if (st) return st;
  if (stride.size != size.size || (stride.size > 0 && !stride.data))
    return kd_set_error(KD_EINVAL,
                        "empty_strided: mismatch in length of strides and shape (%lld sizes, "
                        "%lld strides)",
                        (long long)size.size, (long long)stride.size);
  for (int64_t i = 0; i < stride.size; i++)
    if (stride.data[i] < 0)
      return kd_set_error(KD_EINVAL, "empty_strided: stride %lld of dimension %lld is negative",
                          (long long)stride.data[i], (long long)i);
  kd_dtype dt = KD_FLOAT32;
  kd_device dev;
  kd_device def = {want, 0};
  if ((st = kdk__factory_options("empty_strided", dtype, layout, device, pin_memory,
                                kd_get_default_dtype(), def, &dt, &dev)))
    return st;
  if (dev.type != want)
    return kd_set_error(KD_EINVAL, "empty_strided: expected a %s device, got %s",
                        kd_device_type_name(want), kd_device_type_name(dev.type));
  return kd_tensor_empty_strided((int)size.size, size.data, stride.data, dt, dev, out);
}

kd_status kdk_native_empty_strided_cpu(kd_ints size, kd_ints stride, const kd_dtype *dtype,
                                       const kd_layout *layout, const kd_device *device,
                                       const bool *pin_memory, kd_tensor **out) {
  return empty_strided_common(KD_DEVICE_CPU, size, stride, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_empty_strided_meta(kd_ints size, kd_ints stride, const kd_dtype *dtype,
                                        const kd_layout *layout, const kd_device *device,
                                        const bool *pin_memory, kd_tensor **out) {
  return empty_strided_common(KD_DEVICE_META, size, stride, dtype, layout, device, pin_memory,
                              out);
}

/* ---- resize_ (CPU, Meta) ------------------------------------------------------- */

kd_status kdk_native_resize_(kd_tensor *self, kd_ints size, const kd_memory_format *memory_format) {
  if (!self) return kd_set_error(KD_EINVAL, "resize_: self is NULL: expected a tensor");
  kd_status st = kdk__check_size_list("resize_", size);
  if (st) return st;
  /* As PyTorch's resize_impl_cpu_: the same sizes and no format keep the
   * strides (an expanded or transposed self stays as it is). */
  if (!memory_format && kd_tensor_ndim(self) == size.size &&
      (size.size == 0 ||
       !memcmp(kd_tensor_sizes(self), size.data, (size_t)size.size * sizeof(int64_t))))
    return KD_OK;
  kd_memory_format mf = memory_format ? *memory_format : KD_MEMORY_FORMAT_CONTIGUOUS;
  if (mf == KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EINVAL, "resize_: Unsupported memory format. Preserve");
  int64_t strides[KD_MAX_DIMS];
  if ((st = kdk__vw_format_strides((int)size.size, size.data, mf, strides))) return st;
  if ((st = kd_tensor_resize_(self, (int)size.size, size.data, strides))) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "resize_: %s", msg);
  }
  return KD_OK;
}

/* ---- Factories --------------------------------------------------------------- */

/* t (owned) filled with value by the dispatched fill_, into *out. */
static kd_status fill_into(kd_tensor *t, const kd_scalar *value, kd_tensor **out) {
  kd_status st = kd_fill_Scalar_(t, value);
  if (st) {
    kd_tensor_release(t);
    return st;
  }
  *out = t;
  return KD_OK;
}

static kd_status full_composite(kd_ints size, const kd_scalar *value, const kd_dtype *dtype,
                                const kd_layout *layout, const kd_device *device,
                                const bool *pin_memory, kd_tensor **out) {
  *out = NULL;
  kd_tensor *t;
  kd_status st = kd_empty_memory_format(size, dtype, layout, device, pin_memory, NULL, &t);
  return st ? st : fill_into(t, value, out);
}

kd_status kdk_native_zeros_composite(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                                     const kd_device *device, const bool *pin_memory,
                                     kd_tensor **out) {
  kd_scalar zero = kd_scalar_int(0);
  return full_composite(size, &zero, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_ones_composite(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                                    const kd_device *device, const bool *pin_memory,
                                    kd_tensor **out) {
  kd_scalar one = kd_scalar_int(1);
  return full_composite(size, &one, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_full_composite(kd_ints size, const kd_scalar *fill_value,
                                    const kd_dtype *dtype, const kd_layout *layout,
                                    const kd_device *device, const bool *pin_memory,
                                    kd_tensor **out) {
  *out = NULL;
  if (!fill_value) return kd_set_error(KD_EINVAL, "full: fill_value is NULL");
  kd_dtype dt = dtype ? *dtype : kdk__full_dtype_of(fill_value);
  return full_composite(size, fill_value, &dt, layout, device, pin_memory, out);
}

kd_status kdk_native_empty_like_composite(kd_tensor *self, const kd_dtype *dtype,
                                          const kd_layout *layout, const kd_device *device,
                                          const bool *pin_memory,
                                          const kd_memory_format *memory_format,
                                          kd_tensor **out) {
  *out = NULL;
  if (!self) return kd_set_error(KD_EINVAL, "empty_like: self is NULL");
  kd_dtype dt = dtype ? *dtype : kd_tensor_dtype(self);
  kd_device dev = device ? *device : kd_tensor_device(self);
  kd_memory_format mf = memory_format ? *memory_format : KD_MEMORY_FORMAT_PRESERVE;
  int ndim = kd_tensor_ndim(self);
  kd_ints sizes = {kd_tensor_sizes(self), ndim};
  if (mf == KD_MEMORY_FORMAT_PRESERVE) {
    if (kdk__vw_non_overlapping_and_dense(self)) {
      kd_ints strides = {kd_tensor_strides(self), ndim};
      return kd_empty_strided(sizes, strides, &dt, layout, &dev, pin_memory, out);
    }
    mf = KD_MEMORY_FORMAT_CONTIGUOUS;
  }
  return kd_empty_memory_format(sizes, &dt, layout, &dev, pin_memory, &mf, out);
}

static kd_status full_like_composite(kd_tensor *self, const kd_scalar *value,
                                     const kd_dtype *dtype, const kd_layout *layout,
                                     const kd_device *device, const bool *pin_memory,
                                     const kd_memory_format *memory_format, kd_tensor **out) {
  kd_tensor *t;
  kd_status st = kd_empty_like(self, dtype, layout, device, pin_memory, memory_format, &t);
  if (st) {
    *out = NULL;
    return st;
  }
  return fill_into(t, value, out);
}

kd_status kdk_native_zeros_like_composite(kd_tensor *self, const kd_dtype *dtype,
                                          const kd_layout *layout, const kd_device *device,
                                          const bool *pin_memory,
                                          const kd_memory_format *memory_format,
                                          kd_tensor **out) {
  kd_scalar zero = kd_scalar_int(0);
  return full_like_composite(self, &zero, dtype, layout, device, pin_memory, memory_format, out);
}

kd_status kdk_native_ones_like_composite(kd_tensor *self, const kd_dtype *dtype,
                                         const kd_layout *layout, const kd_device *device,
                                         const bool *pin_memory,
                                         const kd_memory_format *memory_format,
                                         kd_tensor **out) {
  kd_scalar one = kd_scalar_int(1);
  return full_like_composite(self, &one, dtype, layout, device, pin_memory, memory_format, out);
}

kd_status kdk_native_full_like_composite(kd_tensor *self, const kd_scalar *fill_value,
                                         const kd_dtype *dtype, const kd_layout *layout,
                                         const kd_device *device, const bool *pin_memory,
                                         const kd_memory_format *memory_format,
                                         kd_tensor **out) {
  if (!fill_value) {
    *out = NULL;
    return kd_set_error(KD_EINVAL, "full_like: fill_value is NULL");
  }
  return full_like_composite(self, fill_value, dtype, layout, device, pin_memory, memory_format,
                             out);
}

/* ---- new_* ----------------------------------------------------------------------- */

/* Tensor.new_*: dtype and device default to self's. */
#define KD_NEW_DEFAULTS(op)                                               \
  *out = NULL;                                                            \
  if (!self) return kd_set_error(KD_EINVAL, op ": self is NULL");          \
  kd_dtype dt = dtype ? *dtype : kd_tensor_dtype(self);                  \
  kd_device dev = device ? *device : kd_tensor_device(self)

kd_status kdk_native_new_empty(kd_tensor *self, kd_ints size, const kd_dtype *dtype,
                               const kd_layout *layout, const kd_device *device,
                               const bool *pin_memory, kd_tensor **out) {
  KD_NEW_DEFAULTS("new_empty");
  return kd_empty_memory_format(size, &dt, layout, &dev, pin_memory, NULL, out);
}

kd_status kdk_native_new_empty_strided(kd_tensor *self, kd_ints size, kd_ints stride,
                                       const kd_dtype *dtype, const kd_layout *layout,
                                       const kd_device *device, const bool *pin_memory,
                                       kd_tensor **out) {
  KD_NEW_DEFAULTS("new_empty_strided");
  return kd_empty_strided(size, stride, &dt, layout, &dev, pin_memory, out);
}

kd_status kdk_native_new_zeros(kd_tensor *self, kd_ints size, const kd_dtype *dtype,
                               const kd_layout *layout, const kd_device *device,
                               const bool *pin_memory, kd_tensor **out) {
  KD_NEW_DEFAULTS("new_zeros");
  return kd_zeros(size, &dt, layout, &dev, pin_memory, out);
}

kd_status kdk_native_new_ones(kd_tensor *self, kd_ints size, const kd_dtype *dtype,
                              const kd_layout *layout, const kd_device *device,
                              const bool *pin_memory, kd_tensor **out) {
  KD_NEW_DEFAULTS("new_ones");
  return kd_ones(size, &dt, layout, &dev, pin_memory, out);
}

kd_status kdk_native_new_full(kd_tensor *self, kd_ints size, const kd_scalar *fill_value,
                              const kd_dtype *dtype, const kd_layout *layout,
                              const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  KD_NEW_DEFAULTS("new_full");
  if (!fill_value) return kd_set_error(KD_EINVAL, "new_full: fill_value is NULL");
  return kd_full(size, fill_value, &dt, layout, &dev, pin_memory, out);
}

#undef KD_NEW_DEFAULTS

/* ---- out= factories, zero_ ------------------------------------------------------ */

kd_status kdk__full_out_composite(const char *op, kd_ints size, const kd_scalar *value,
                                 kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  kd_status st = kdk__check_size_list(op, size);
  if (st) return st;
  /* Check the conversion before resizing, so that an error leaves out alone. */
  unsigned char elem[16];
  if ((st = kd_scalar_to_element(value, kd_tensor_dtype(out), elem)))
    return kd_set_error(st, "%s: %s", op, kd_last_error());
  const int64_t *have = kd_tensor_sizes(out);
  bool same = kd_tensor_ndim(out) == size.size;
  for (int64_t i = 0; same && i < size.size; i++) same = have[i] == size.data[i];
  if (!same && (st = kd_resize_(out, size, NULL))) return st;
  return kd_fill_Scalar_(out, value);
}

kd_status kdk_native_zero_composite_(kd_tensor *self) {
  kd_scalar zero = kd_scalar_int(0);
  return kd_fill_Scalar_(self, &zero);
}

/* ---- clone ------------------------------------------------------------------ */

kd_status kdk_native_clone_composite(kd_tensor *self, const kd_memory_format *memory_format,
                                     kd_tensor **out) {
  if (out) *out = NULL;
  if (!self || !out) return kd_set_error(KD_EINVAL, "clone: NULL argument");
  kd_tensor *r;
  kd_status st = kd_empty_like(self, NULL, NULL, NULL, NULL, memory_format, &r);
  if (st) return st;
  if ((st = kd_copy_(r, self, false))) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}
