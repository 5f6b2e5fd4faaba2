/*
 * factories.c: empty, empty_like, zeros, ones, full (and their _like and out
 * variants), arange and eye; the helpers shared by the hand-written kernels
 * (factories.h).
 *
 * Ownership: a kernel with `kd_tensor **out` gives the caller one reference
 * to a new tensor (NULL on error); a kernel with `kd_tensor *out` writes the
 * caller's tensor, which stays the caller's. Every other tensor argument is
 * borrowed.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fill.h"
#include "native/factories.h"
#include "native/views.h"

#include "kd/ops/copy.h"
#include "kd/ops/empty.h"
#include "empty_like_native.h"
#include "full_like_native.h"
#include "full_native.h"
#include "ones_like_native.h"
#include "ones_native.h"
#include "zeros_like_native.h"
#include "zeros_native.h"
#include "kdk/native.h" /* the kit's (exported) declarations of these kernels */

/* ---- Shared helpers ------------------------------------------------------------ */

/* kdk__check_size_list's messages, out of the way of the common path. */
__attribute__((noinline, cold)) static kd_status size_list_error(const char *op, kd_ints size) {
  if (size.size < 0 || (size.size > 0 && !size.data))
    return kd_set_error(KD_EINVAL, "%s: expected a list of sizes", op);
  if (size.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "%s: %lld dimensions given, at most %d are supported", op,
                        (long long)size.size, KD_MAX_DIMS);
  for (int64_t i = 0; i < size.size; i++) {
    if (size.data[i] < 0) {
      char buf[256];
      return kd_set_error(KD_EINVAL, "%s: Trying to create tensor with negative dimension %lld: %s",
                          op, (long long)size.data[i],
                          kdk__fmt_ints(buf, sizeof buf, size.data, (int)size.size));
    }
  }
  return KD_OK;
}

kd_status kdk__check_size_list(const char *op, kd_ints size) {
  bool bad = size.size < 0 || size.size > KD_MAX_DIMS || (size.size > 0 && !size.data);
  for (int64_t i = 0; !bad && i < size.size; i++) bad = size.data[i] < 0;
  return bad ? size_list_error(op, size) : KD_OK;
}

/* kdk__factory_options' messages, out of the way of the common path. */
__attribute__((noinline, cold)) static kd_status
factory_options_error(const char *op, kd_dtype dt, const kd_layout *layout, kd_device dev,
                      const bool *pin_memory) {
  if (!kd_dtype_valid(dt)) return kd_set_error(KD_EINVAL, "%s: invalid dtype %d", op, (int)dt);
  if (layout && *layout != KD_LAYOUT_STRIDED)
    return kd_set_error(KD_EUNSUPPORTED, "%s: layout %s is not supported (only strided)", op,
                        kd_layout_name(*layout));
  if (dev.type != KD_DEVICE_CPU && dev.type != KD_DEVICE_META) {
    char buf[64];
    kd_device_format(dev, buf, sizeof buf);
    return kd_set_error(KD_EUNSUPPORTED, "%s: device '%s' is not supported (cpu and meta only)", op,
                        buf);
  }
  if (dev.index != 0) return kd_set_error(KD_EINVAL, "%s: %s has only device index 0", op,
                                          kd_device_type_name(dev.type));
  if (pin_memory && *pin_memory)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: Need to provide pin_memory allocator to use pin memory.", op);
  return KD_OK;
}

kd_status kdk__factory_options(const char *op, const kd_dtype *dtype, const kd_layout *layout,
                              const kd_device *device, const bool *pin_memory,
                              kd_dtype default_dtype, kd_device default_device,
                              kd_dtype *dtype_out, kd_device *device_out) {
  kd_dtype dt = dtype ? *dtype : default_dtype;
  kd_device dev = device ? *device : default_device;
  if ((unsigned)dt >= (unsigned)KD_DTYPE_COUNT || (layout && *layout != KD_LAYOUT_STRIDED) ||
      (dev.type != KD_DEVICE_CPU && dev.type != KD_DEVICE_META) || dev.index != 0 ||
      (pin_memory && *pin_memory)) {
    kd_status st = factory_options_error(op, dt, layout, dev, pin_memory);
    if (st) return st;
  }
  *dtype_out = dt;
  *device_out = dev;
  return KD_OK;
}

static bool same_sizes(const kd_tensor *t, int ndim, const int64_t *sizes) {
  if (kd_tensor_ndim(t) != ndim) return false;
  const int64_t *s = kd_tensor_sizes(t);
  for (int i = 0; i < ndim; i++)
    if (s[i] != sizes[i]) return false;
  return true;
}

kd_status kdk__resize_if_needed(kd_tensor *out, int ndim, const int64_t *sizes) {
  if (same_sizes(out, ndim, sizes)) return KD_OK;
  return kd_tensor_resize_(out, ndim, sizes, NULL);
}

kd_status kdk__resize_output(const char *op, kd_tensor *out, int ndim, const int64_t *sizes) {
  if (same_sizes(out, ndim, sizes)) return KD_OK;
  if (kd_tensor_numel(out) != 0) {
    char have[256], want[256];
    kd_warn("%s: An output with one or more elements was resized since it had shape %s, which "
            "does not match the required output shape %s. This behavior is deprecated; resize "
            "the output to 0 elements first to reuse it.",
            op, kdk__fmt_ints(have, sizeof have, kd_tensor_sizes(out), kd_tensor_ndim(out)),
            kdk__fmt_ints(want, sizeof want, sizes, ndim));
  }
  return kd_tensor_resize_(out, ndim, sizes, NULL);
}

kd_status kdk__fill(const char *op, kd_tensor *t, const kd_scalar *value) {
  kd_device_type type = kd_tensor_device(t).type;
  if (type == KD_DEVICE_META) return KD_OK; /* nothing to write */
  kdk_fill_fn *fn = KDK_STUB_FOR(fill_stub, type, op);
  if (!fn) return KD_ENOKERNEL;
  kd_status st = fn(t, value);
  if (st) return kd_set_error(st, "%s: %s", op, kd_last_error());
  return KD_OK;
}

kd_status kdk__write_contiguous(kd_tensor *out, kd_status (*write)(kd_tensor *dst, void *ctx),
                               void *ctx) {
  kd_device dev = kd_tensor_device(out);
  if (dev.type == KD_DEVICE_META || kd_tensor_numel(out) == 0) return KD_OK;
  if (dev.type != KD_DEVICE_CPU)
    return kd_set_error(KD_EUNSUPPORTED, "cannot write a tensor on device '%s'",
                        kd_device_type_name(dev.type));
  if (kd_tensor_is_contiguous(out)) return write(out, ctx);
  /* The values go to a temporary, then into out: an out whose elements
   * share memory (an expanded view) cannot take distinct values. Refused
   * here with PyTorch's message, which names the operator's out rather than
   * the copy's destination. */
  kd_status st = kdk__vw_check_internal_overlap(out);
  if (st) return st;
  kd_tensor *tmp;
  st = kd_tensor_empty(kd_tensor_ndim(out), kd_tensor_sizes(out), kd_tensor_dtype(out),
                       kd_device_cpu(), &tmp);
  if (st) return st;
  st = write(tmp, ctx);
  if (!st) st = kd_tensor_copy_(out, tmp);
  kd_tensor_release(tmp);
  return st;
}

/* ---- empty ----------------------------------------------------------------------- */

/* Strides of `format` for these sizes (PyTorch's, with size-0 dims counted as 1). */
static kd_status format_strides(const char *op, int ndim, const int64_t *sizes,
                                kd_memory_format format, int64_t *strides) {
  static const int cl4[] = {1, 3, 2, 0};    /* channels_last: C, W, H, N (fastest first) */
  static const int cl5[] = {1, 4, 3, 2, 0}; /* channels_last_3d: C, W, H, D, N */
  const int *order = NULL;
  switch (format) {
  case KD_MEMORY_FORMAT_CONTIGUOUS:
    break;
  case KD_MEMORY_FORMAT_CHANNELS_LAST:
    if (ndim != 4)
      return kd_set_error(KD_EINVAL, "%s: required rank 4 tensor to use channels_last format", op);
    order = cl4;
    break;
  case KD_MEMORY_FORMAT_CHANNELS_LAST_3D:
    if (ndim != 5)
      return kd_set_error(KD_EINVAL, "%s: required rank 5 tensor to use channels_last_3d format",
                          op);
    order = cl5;
    break;
  default:
    return kd_set_error(KD_EINVAL, "%s: memory format %s is not supported here", op,
                        kd_memory_format_name(format));
  }
  int64_t s = 1;
  for (int k = 0; k < ndim; k++) {
    int d = order ? order[k] : ndim - 1 - k;
    strides[d] = s;
    int64_t m = sizes[d] > 1 ? sizes[d] : 1;
    if (__builtin_mul_overflow(s, m, &s))
      return kd_set_error(KD_EOVERFLOW, "%s: tensor too large", op);
  }
  return KD_OK;
}

/* A new tensor of `size` on `device` with `format`'s strides. */
static kd_status make_empty(const char *op, int ndim, const int64_t *sizes, kd_dtype dtype,
                            kd_device device, kd_memory_format format, kd_tensor **out) {
  if (format == KD_MEMORY_FORMAT_CONTIGUOUS) {
    /* The common case: row-major strides, which kd_tensor_empty makes without
     * checking caller-given ones. Sizes were checked (kdk__check_size_list),
     * so the only failures left are overflow and memory. */
    kd_status st = kd_tensor_empty(ndim, sizes, dtype, device, out);
    if (st == KD_EOVERFLOW) return kd_set_error(KD_EOVERFLOW, "%s: tensor too large", op);
    return st;
  }
  int64_t strides[KD_MAX_DIMS];
  kd_status st = format_strides(op, ndim, sizes, format, strides);
  if (st) return st;
  return kd_tensor_empty_strided(ndim, sizes, strides, dtype, device, out);
}

static kd_status empty_common(const char *op, kd_device_type want, kd_ints size,
                              const kd_dtype *dtype, const kd_layout *layout,
                              const kd_device *device, const bool *pin_memory,
                              const kd_memory_format *memory_format, kd_tensor **out) {
  *out = NULL;
  kd_dtype dt = KD_FLOAT32;
  kd_device dev;
  kd_device def = {want, 0};
  kd_status st = kdk__check_size_list(op, size);
  if (!st) st = kdk__factory_options(op, dtype, layout, device, pin_memory, kd_get_default_dtype(),
                                    def, &dt, &dev);
  if (st) return st;
  if (dev.type != want)
    return kd_set_error(KD_EINVAL, "%s: expected a %s device, got %s", op,
                        kd_device_type_name(want), kd_device_type_name(dev.type));
  kd_memory_format mf = memory_format ? *memory_format : KD_MEMORY_FORMAT_CONTIGUOUS;
  if (mf == KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EINVAL, "%s: Unsupported memory format. Preserve", op);
  return make_empty(op, (int)size.size, size.data, dt, dev, mf, out);
}

kd_status kdk_native_empty_cpu(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                               const kd_device *device, const bool *pin_memory,
                               const kd_memory_format *memory_format, kd_tensor **out) {
  /* The common case in one piece: valid sizes, strided, cpu:0, not pinned,
   * contiguous. Everything else (errors included) goes the general way. */
  kd_dtype dt = dtype ? *dtype : kd_get_default_dtype();
  bool plain = size.size >= 0 && size.size <= KD_MAX_DIMS && (size.size == 0 || size.data) &&
               (unsigned)dt < (unsigned)KD_DTYPE_COUNT &&
               (!layout || *layout == KD_LAYOUT_STRIDED) &&
               (!device || (device->type == KD_DEVICE_CPU && device->index == 0)) &&
               !(pin_memory && *pin_memory) &&
               (!memory_format || *memory_format == KD_MEMORY_FORMAT_CONTIGUOUS);
  for (int64_t i = 0; plain && i < size.size; i++) plain = size.data[i] >= 0;
  if (plain) {
    kd_status st = kd_tensor_empty((int)size.size, size.data, dt, kd_device_cpu(), out);
    if (st == KD_EOVERFLOW) return kd_set_error(KD_EOVERFLOW, "empty: tensor too large");
    return st;
  }
  return empty_common("empty", KD_DEVICE_CPU, size, dtype, layout, device, pin_memory,
                      memory_format, out);
}

kd_status kdk_native_empty_meta(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                                const kd_device *device, const bool *pin_memory,
                                const kd_memory_format *memory_format, kd_tensor **out) {
  return empty_common("empty", KD_DEVICE_META, size, dtype, layout, device, pin_memory,
                      memory_format, out);
}

/* PyTorch's is_non_overlapping_and_dense: some permutation of t's dims is
 * row-major contiguous (size-1 dims ignored). */
static bool non_overlapping_and_dense(const kd_tensor *t) {
  int ndim = kd_tensor_ndim(t);
  const int64_t *sizes = kd_tensor_sizes(t), *strides = kd_tensor_strides(t);
  int perm[KD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1) perm[n++] = i;
  }
  /* insertion sort by stride, ascending; ties: the later dim first */
  for (int i = 1; i < n; i++) {
    int d = perm[i], j = i;
    while (j > 0 && (strides[perm[j - 1]] > strides[d] ||
                     (strides[perm[j - 1]] == strides[d] && perm[j - 1] < d))) {
      perm[j] = perm[j - 1];
      j--;
    }
    perm[j] = d;
  }
  int64_t expect = 1;
  for (int i = 0; i < n; i++) {
    if (strides[perm[i]] != expect) return false;
    expect *= sizes[perm[i]];
  }
  return true;
}

/* empty_like with defaults from self; the result is on the resolved device. */
static kd_status like_common(const char *op, kd_tensor *self, const kd_dtype *dtype,
                             const kd_layout *layout, const kd_device *device,
                             const bool *pin_memory, const kd_memory_format *memory_format,
                             kd_tensor **out) {
  *out = NULL;
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL", op);
  kd_dtype dt = KD_FLOAT32;
  kd_device dev;
  kd_status st = kdk__factory_options(op, dtype, layout, device, pin_memory, kd_tensor_dtype(self),
                                     kd_tensor_device(self), &dt, &dev);
  if (st) return st;
  kd_memory_format mf = memory_format ? *memory_format : KD_MEMORY_FORMAT_PRESERVE;
  int ndim = kd_tensor_ndim(self);
  const int64_t *sizes = kd_tensor_sizes(self);
  if (mf == KD_MEMORY_FORMAT_PRESERVE) {
    if (non_overlapping_and_dense(self))
      return kd_tensor_empty_strided(ndim, sizes, kd_tensor_strides(self), dt, dev, out);
    mf = KD_MEMORY_FORMAT_CONTIGUOUS;
  }
  return make_empty(op, ndim, sizes, dt, dev, mf, out);
}

kd_status kdk_native_empty_like(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                                const kd_device *device, const bool *pin_memory,
                                const kd_memory_format *memory_format, kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_empty_like_composite(self, dtype, layout, device, pin_memory, memory_format,
                                           out);
  return like_common("empty_like", self, dtype, layout, device, pin_memory, memory_format, out);
}

/* ---- zeros / ones / full ----------------------------------------------------------- */

/* A new tensor of `size` filled with `value`. */
static kd_status full_common(const char *op, kd_ints size, const kd_scalar *value,
                             const kd_dtype *dtype, kd_dtype default_dtype,
                             const kd_layout *layout, const kd_device *device,
                             const bool *pin_memory, kd_tensor **out) {
  *out = NULL;
  kd_dtype dt = KD_FLOAT32;
  kd_device dev;
  kd_status st = kdk__check_size_list(op, size);
  if (!st) st = kdk__factory_options(op, dtype, layout, device, pin_memory, default_dtype,
                                    kd_device_cpu(), &dt, &dev);
  if (st) return st;
  kd_tensor *t;
  if ((st = kd_tensor_empty((int)size.size, size.data, dt, dev, &t))) return st;
  if ((st = kdk__fill(op, t, value))) {
    kd_tensor_release(t);
    return st;
  }
  *out = t;
  return KD_OK;
}

static kd_status full_out_common(const char *op, kd_ints size, const kd_scalar *value,
                                 kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  kd_device od = kd_tensor_device(out);
  if (kdk__off_host(&od)) return kdk__full_out_composite(op, size, value, out);
  kd_status st = kdk__check_size_list(op, size);
  if (st) return st;
  /* Check the conversion before resizing, so that an error leaves out alone. */
  unsigned char elem[16];
  if ((st = kd_scalar_to_element(value, kd_tensor_dtype(out), elem)))
    return kd_set_error(st, "%s: %s", op, kd_last_error());
  if ((st = kdk__resize_if_needed(out, (int)size.size, size.data))) return st;
  return kdk__fill(op, out, value);
}

static kd_status full_like_common(const char *op, kd_tensor *self, const kd_scalar *value,
                                  const kd_dtype *dtype, const kd_layout *layout,
                                  const kd_device *device, const bool *pin_memory,
                                  const kd_memory_format *memory_format, kd_tensor **out) {
  kd_tensor *t;
  kd_status st = like_common(op, self, dtype, layout, device, pin_memory, memory_format, &t);
  if (st) return st;
  if ((st = kdk__fill(op, t, value))) {
    kd_tensor_release(t);
    return st;
  }
  *out = t;
  return KD_OK;
}

kd_status kdk_native_zeros(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                           const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_zeros_composite(size, dtype, layout, device, pin_memory, out);
  kd_scalar zero = kd_scalar_int(0);
  return full_common("zeros", size, &zero, dtype, kd_get_default_dtype(), layout, device,
                     pin_memory, out);
}

kd_status kdk_native_zeros_out(kd_ints size, kd_tensor *out) {
  kd_scalar zero = kd_scalar_int(0);
  return full_out_common("zeros", size, &zero, out);
}

kd_status kdk_native_zeros_like(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                                const kd_device *device, const bool *pin_memory,
                                const kd_memory_format *memory_format, kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_zeros_like_composite(self, dtype, layout, device, pin_memory, memory_format,
                                          out);
  kd_scalar zero = kd_scalar_int(0);
  return full_like_common("zeros_like", self, &zero, dtype, layout, device, pin_memory,
                          memory_format, out);
}

kd_status kdk_native_ones(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                          const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_ones_composite(size, dtype, layout, device, pin_memory, out);
  kd_scalar one = kd_scalar_int(1);
  return full_common("ones", size, &one, dtype, kd_get_default_dtype(), layout, device,
                     pin_memory, out);
}

kd_status kdk_native_ones_out(kd_ints size, kd_tensor *out) {
  kd_scalar one = kd_scalar_int(1);
  return full_out_common("ones", size, &one, out);
}

kd_status kdk_native_ones_like(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                               const kd_device *device, const bool *pin_memory,
                               const kd_memory_format *memory_format, kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_ones_like_composite(self, dtype, layout, device, pin_memory, memory_format,
                                         out);
  kd_scalar one = kd_scalar_int(1);
  return full_like_common("ones_like", self, &one, dtype, layout, device, pin_memory,
                          memory_format, out);
}

kd_dtype kdk__full_dtype_of(const kd_scalar *value) {
  switch (value->kind) {
  case KD_SCALAR_BOOL:
    return KD_BOOL;
  case KD_SCALAR_INT:
    return KD_INT64;
  case KD_SCALAR_COMPLEX:
    return kd_get_default_dtype() == KD_FLOAT64 ? KD_COMPLEX128 : KD_COMPLEX64;
  default:
    return kd_get_default_dtype();
  }
}

kd_status kdk_native_full(kd_ints size, const kd_scalar *fill_value, const kd_dtype *dtype,
                          const kd_layout *layout, const kd_device *device,
                          const bool *pin_memory, kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_full_composite(size, fill_value, dtype, layout, device, pin_memory, out);
  if (!fill_value) {
    *out = NULL;
    return kd_set_error(KD_EINVAL, "full: fill_value is NULL");
  }
  return full_common("full", size, fill_value, dtype, kdk__full_dtype_of(fill_value), layout, device,
                     pin_memory, out);
}

kd_status kdk_native_full_out(kd_ints size, const kd_scalar *fill_value, kd_tensor *out) {
  if (!fill_value) return kd_set_error(KD_EINVAL, "full: fill_value is NULL");
  return full_out_common("full", size, fill_value, out);
}

kd_status kdk_native_full_like(kd_tensor *self, const kd_scalar *fill_value, const kd_dtype *dtype,
                               const kd_layout *layout, const kd_device *device,
                               const bool *pin_memory, const kd_memory_format *memory_format,
                               kd_tensor **out) {
  if (kdk__off_host(device))
    return kdk_native_full_like_composite(self, fill_value, dtype, layout, device, pin_memory,
                                          memory_format, out);
  if (!fill_value) {
    *out = NULL;
    return kd_set_error(KD_EINVAL, "full_like: fill_value is NULL");
  }
  return full_like_common("full_like", self, fill_value, dtype, layout, device, pin_memory,
                          memory_format, out);
}

/* A factory's cpu result `t` (owned, released) moved to `device` with the
 * dispatched empty.memory_format and copy_: how arange and eye (whose values
 * are computed on the host) reach any device whose backend implements the
 * primitives. */
static kd_status move_result(kd_tensor *t, const kd_device *device, kd_tensor **out) {
  kd_ints sizes = {kd_tensor_sizes(t), kd_tensor_ndim(t)};
  kd_dtype dt = kd_tensor_dtype(t);
  kd_tensor *r = NULL;
  kd_status st = kd_empty_memory_format(sizes, &dt, NULL, device, NULL, NULL, &r);
  if (!st && (st = kd_copy_(r, t, false))) {
    kd_tensor_release(r);
    r = NULL;
  }
  kd_tensor_release(t);
  *out = r;
  return st;
}

/* ---- arange ------------------------------------------------------------------------- */

typedef struct arange_plan {
  kd_dtype dtype;
  int64_t size;
  int64_t istart, istep; /* integral dtypes */
  double dstart, dstep;  /* float32 / float64 */
  float fstart, fstep;   /* float16 / bfloat16 (float is their accumulate type) */
} arange_plan;

static bool scalar_is_integral(const kd_scalar *s) {
  return s->kind == KD_SCALAR_BOOL || s->kind == KD_SCALAR_INT;
}

/* Checks the arguments and computes the length, as PyTorch's arange_out. */
static kd_status arange_plan_make(const char *op, const kd_scalar *start, const kd_scalar *end,
                                  const kd_scalar *step, kd_dtype dtype, arange_plan *p) {
  const kd_scalar *args[3] = {start, end, step};
  for (int i = 0; i < 3; i++) {
    if (!args[i]) return kd_set_error(KD_EINVAL, "%s: NULL scalar argument", op);
    if (args[i]->kind == KD_SCALAR_COMPLEX && args[i]->v.c.im != 0)
      return kd_set_error(KD_EINVAL, "%s: expected real numbers, got a complex value", op);
  }
  if (!kd_dtype_valid(dtype) || dtype == KD_BOOL || kd_dtype_is_complex(dtype))
    return kd_set_error(KD_ENOKERNEL, "%s: \"arange_cpu\" not implemented for '%s'", op,
                        kd_dtype_name(dtype));
  memset(p, 0, sizeof *p);
  p->dtype = dtype;
  double ds = kd_scalar_to_double(start), de = kd_scalar_to_double(end),
         dst = kd_scalar_to_double(step);
  double size_d;
  if (kd_dtype_is_integral(dtype, false)) {
    /* PyTorch converts the three to int64 (the accumulate type of every
     * integral dtype) with a checked conversion: nan, inf and values out of
     * range fail instead of becoming some integer. */
    for (int i = 0; i < 3; i++) {
      if (scalar_is_integral(args[i])) continue;
      double v = kd_scalar_to_double(args[i]);
      if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        return kd_set_error(KD_EOVERFLOW,
                            "%s: value cannot be converted to type int64_t without overflow", op);
    }
    int64_t xs = kd_scalar_to_int64(start), xe = kd_scalar_to_int64(end),
            xst = kd_scalar_to_int64(step);
    if (xst == 0) return kd_set_error(KD_EINVAL, "%s: step must be nonzero", op);
    if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
      return kd_set_error(KD_EINVAL, "%s: upper bound and larger bound inconsistent with step sign",
                          op);
    if (dtype == KD_INT64) {
      int64_t sgn = xst > 0 ? 1 : -1, num;
      if (__builtin_sub_overflow(xe, xs, &num) || __builtin_add_overflow(num, xst, &num) ||
          __builtin_sub_overflow(num, sgn, &num))
        return kd_set_error(KD_EINVAL, "%s: invalid size, possible overflow?", op);
      size_d = (double)(num / xst);
      p->size = num / xst;
    } else {
      size_d = ceil((de - ds) / dst);
      p->size = -1;
    }
    p->istart = xs;
    p->istep = xst;
  } else {
    if (!(dst > 0 || dst < 0)) return kd_set_error(KD_EINVAL, "%s: step must be nonzero", op);
    if (!isfinite(ds) || !isfinite(de)) {
      char a[64], b[64];
      kd_scalar_format(start, a, sizeof a);
      kd_scalar_format(end, b, sizeof b);
      return kd_set_error(KD_EINVAL, "%s: unsupported range: %s -> %s", op, a, b);
    }
    if (!((dst > 0 && de >= ds) || (dst < 0 && de <= ds)))
      return kd_set_error(KD_EINVAL, "%s: upper bound and larger bound inconsistent with step sign",
                          op);
    size_d = ceil((de - ds) / dst);
    p->size = -1;
    p->dstart = ds;
    p->dstep = dst;
    p->fstart = (float)ds;
    p->fstep = (float)dst;
  }
  /* 2^63 itself does not fit in int64 (INT64_MAX as a double rounds up to it). */
  if (!(size_d >= 0 && size_d < 9223372036854775808.0))
    return kd_set_error(KD_EINVAL, "%s: invalid size, possible overflow?", op);
  if (p->size < 0) p->size = (int64_t)size_d;
  return KD_OK;
}

static kd_status arange_write(kd_tensor *dst, void *ctx) {
  const arange_plan *p = ctx;
  void *data = kd_tensor_data(dst);
  int64_t n = p->size;
  switch (p->dtype) {
#define KD_ARANGE_INT_(E, T)                                                        \
  case E:                                                                           \
    for (int64_t i = 0; i < n; i++)                                                 \
      ((T *)data)[i] = (T)((uint64_t)p->istart + (uint64_t)p->istep * (uint64_t)i); \
    break;
    KD_ARANGE_INT_(KD_UINT8, uint8_t)
    KD_ARANGE_INT_(KD_INT8, int8_t)
    KD_ARANGE_INT_(KD_INT16, int16_t)
    KD_ARANGE_INT_(KD_INT32, int32_t)
    KD_ARANGE_INT_(KD_INT64, int64_t)
#undef KD_ARANGE_INT_
  case KD_FLOAT32:
    for (int64_t i = 0; i < n; i++) ((float *)data)[i] = (float)(p->dstart + p->dstep * (double)i);
    break;
  case KD_FLOAT64:
    for (int64_t i = 0; i < n; i++) ((double *)data)[i] = p->dstart + p->dstep * (double)i;
    break;
  case KD_FLOAT16:
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)data)[i] = kd_float_to_half(p->fstart + p->fstep * (float)i);
    break;
  case KD_BFLOAT16:
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)data)[i] = kd_float_to_bfloat16(p->fstart + p->fstep * (float)i);
    break;
  default:
    return kd_set_error(KD_EINTERNAL, "arange: unexpected dtype %s", kd_dtype_name(p->dtype));
  }
  return KD_OK;
}

static kd_status arange_common(const kd_scalar *start, const kd_scalar *end, const kd_scalar *step,
                               const kd_dtype *dtype, const kd_layout *layout,
                               const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  *out = NULL;
  const kd_device *target = kdk__off_host(device) ? device : NULL;
  if (target) device = NULL; /* computed on the cpu, then moved */
  kd_dtype def = KD_INT64;
  if (start && end && step &&
      !(scalar_is_integral(start) && scalar_is_integral(end) && scalar_is_integral(step)))
    def = kd_get_default_dtype();
  kd_dtype dt = KD_FLOAT32;
  kd_device dev;
  kd_status st = kdk__factory_options("arange", dtype, layout, device, pin_memory, def,
                                     kd_device_cpu(), &dt, &dev);
  if (st) return st;
  arange_plan p;
  if ((st = arange_plan_make("arange", start, end, step, dt, &p))) return st;
  kd_tensor *t;
  if ((st = kd_tensor_empty(1, &p.size, dt, dev, &t))) return st;
  if ((st = kdk__write_contiguous(t, arange_write, &p))) {
    kd_tensor_release(t);
    return st;
  }
  if (target) return move_result(t, target, out);
  *out = t;
  return KD_OK;
}

kd_status kdk_native_arange(const kd_scalar *end, const kd_dtype *dtype, const kd_layout *layout,
                            const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  kd_scalar zero = kd_scalar_int(0), one = kd_scalar_int(1);
  return arange_common(&zero, end, &one, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_arange_start(const kd_scalar *start, const kd_scalar *end,
                                  const kd_dtype *dtype, const kd_layout *layout,
                                  const kd_device *device, const bool *pin_memory,
                                  kd_tensor **out) {
  kd_scalar one = kd_scalar_int(1);
  return arange_common(start, end, &one, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_arange_start_step(const kd_scalar *start, const kd_scalar *end,
                                       const kd_scalar *step, const kd_dtype *dtype,
                                       const kd_layout *layout, const kd_device *device,
                                       const bool *pin_memory, kd_tensor **out) {
  kd_scalar one = kd_scalar_int(1);
  return arange_common(start, end, step ? step : &one, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_arange_start_out(const kd_scalar *start, const kd_scalar *end,
                                      const kd_scalar *step, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "arange: out is NULL");
  kd_scalar one = kd_scalar_int(1);
  arange_plan p;
  kd_status st = arange_plan_make("arange", start, end, step ? step : &one, kd_tensor_dtype(out), &p);
  if (st) return st;
  /* As PyTorch: out is resized (to 1-d) only when its number of elements differs. */
  if (kd_tensor_numel(out) != p.size && (st = kd_tensor_resize_(out, 1, &p.size, NULL))) return st;
  return kdk__write_contiguous(out, arange_write, &p);
}

kd_status kdk_native_arange_out(const kd_scalar *end, kd_tensor *out) {
  kd_scalar zero = kd_scalar_int(0), one = kd_scalar_int(1);
  return kdk_native_arange_start_out(&zero, end, &one, out);
}

/* ---- eye ------------------------------------------------------------------------------- */

static kd_status eye_write(kd_tensor *dst, void *ctx) {
  (void)ctx;
  int64_t n = kd_tensor_size(dst, 0), m = kd_tensor_size(dst, 1);
  size_t isz = kd_tensor_itemsize(dst);
  char *data = kd_tensor_data(dst);
  unsigned char one[16];
  kd_scalar s1 = kd_scalar_int(1);
  kd_status st = kd_scalar_to_element(&s1, kd_tensor_dtype(dst), one);
  if (st) return st;
  memset(data, 0, (size_t)(n * m) * isz);
  int64_t k = n < m ? n : m;
  for (int64_t i = 0; i < k; i++) memcpy(data + (size_t)(i * m + i) * isz, one, isz);
  return KD_OK;
}

static kd_status eye_check(int64_t n, int64_t m) {
  if (n < 0) return kd_set_error(KD_EINVAL, "eye: n must be greater or equal to 0, got %lld",
                                 (long long)n);
  if (m < 0) return kd_set_error(KD_EINVAL, "eye: m must be greater or equal to 0, got %lld",
                                 (long long)m);
  return KD_OK;
}

kd_status kdk_native_eye_m(int64_t n, int64_t m, const kd_dtype *dtype, const kd_layout *layout,
                           const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  *out = NULL;
  const kd_device *target = kdk__off_host(device) ? device : NULL;
  if (target) device = NULL; /* computed on the cpu, then moved */
  kd_dtype dt = KD_FLOAT32;
  kd_device dev;
  kd_status st = eye_check(n, m);
  if (!st) st = kdk__factory_options("eye", dtype, layout, device, pin_memory,
                                    kd_get_default_dtype(), kd_device_cpu(), &dt, &dev);
  if (st) return st;
  kd_tensor *t;
  int64_t sizes[2] = {n, m};
  if ((st = kd_tensor_empty(2, sizes, dt, dev, &t))) return st;
  if ((st = kdk__write_contiguous(t, eye_write, NULL))) {
    kd_tensor_release(t);
    return st;
  }
  if (target) return move_result(t, target, out);
  *out = t;
  return KD_OK;
}

kd_status kdk_native_eye(int64_t n, const kd_dtype *dtype, const kd_layout *layout,
                         const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  return kdk_native_eye_m(n, n, dtype, layout, device, pin_memory, out);
}

kd_status kdk_native_eye_m_out_cpu(int64_t n, int64_t m, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "eye: out is NULL");
  kd_status st = eye_check(n, m);
  if (st) return st;
  int64_t sizes[2] = {n, m};
  if ((st = kdk__resize_if_needed(out, 2, sizes))) return st;
  return kdk__write_contiguous(out, eye_write, NULL);
}

kd_status kdk_native_eye_out_cpu(int64_t n, kd_tensor *out) {
  return kdk_native_eye_m_out_cpu(n, n, out);
}
