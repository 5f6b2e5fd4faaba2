/*
 * structured.c: the runtime of structured kernels (structured.h).
 *
 * The functional path is kept to kd_tensor_empty / kd_tensor_empty_strided;
 * messages are only formatted on errors and warnings.
 */
#include "structured.h"

#include <stdio.h>
#include <string.h>

#include "iter.h" /* kdk__structured_adopt_given */
#include "kd/tensor_head.h"

static const char *format_device(char *buf, size_t cap, kd_device d) {
  kd_device_format(d, buf, cap);
  return buf;
}

static bool same_sizes(const kd_tensor *t, int ndim, const int64_t *sizes) {
  if (kd_tensor_head_of(t)->ndim != ndim) return false;
  const int64_t *ts = kd_tensor_head_of(t)->sizes;
  for (int d = 0; d < ndim; d++)
    if (ts[d] != sizes[d]) return false;
  return true;
}

static bool same_strides(const kd_tensor *t, int ndim, const int64_t *strides) {
  const int64_t *ts = kd_tensor_head_of(t)->strides;
  for (int d = 0; d < ndim; d++)
    if (ts[d] != strides[d]) return false;
  return true;
}

/* Output i of an INPLACE or OUT call becomes a fresh tensor with these
 * strides, copied into the given one by finish (PyTorch's
 * maybe_create_proxy). */
static kd_status make_proxy(kdk_structured *s, int i, int ndim, const int64_t *sizes,
                            const int64_t *strides, kd_dtype dtype, kd_device device) {
  kd_tensor *p = NULL;
  kd_status st = kd_tensor_empty_strided(ndim, sizes, strides, dtype, device, &p);
  if (st) return kdk__error_with_op(s->op, st);
  s->outputs[i] = p;
  s->proxies |= 1u << i;
  return KD_OK;
}

static kd_status set_inplace(kdk_structured *s, int i, kd_tensor *t, int ndim,
                             const int64_t *sizes, const int64_t *strides, kd_dtype dtype) {
  if (!same_sizes(t, ndim, sizes)) {
    char have[256], want[256];
    return kd_set_error(
        KD_EINVAL, "%s: output with shape %s doesn't match the broadcast shape %s", s->op,
        kdk__fmt_ints(have, sizeof have, kd_tensor_head_of(t)->sizes, kd_tensor_head_of(t)->ndim),
        kdk__fmt_ints(want, sizeof want, sizes, ndim));
  }
  if (kd_tensor_head_of(t)->dtype != dtype)
    return kd_set_error(KD_ETYPE,
                        "%s: bad in-place call: input tensor dtype %s and output tensor dtype %s "
                        "should match",
                        s->op, kd_dtype_name(kd_tensor_head_of(t)->dtype), kd_dtype_name(dtype));
  kd_device dev = kd_tensor_head_of(t)->storage->device;
  if (!kd_device_equal(dev, s->device)) {
    char have[64], want[64];
    return kd_set_error(KD_EINVAL,
                        "%s: bad in-place call: input tensor device %s and output tensor device "
                        "%s should match",
                        s->op, format_device(have, sizeof have, dev),
                        format_device(want, sizeof want, s->device));
  }
  /* As PyTorch: asked-for strides that self lacks mean a proxy. */
  if (strides && !same_strides(t, ndim, strides))
    return make_proxy(s, i, ndim, sizes, strides, dtype, dev);
  s->outputs[i] = t;
  return KD_OK;
}

static kd_status set_out(kdk_structured *s, int i, kd_tensor *t, int ndim, const int64_t *sizes,
                         const int64_t *strides, kd_dtype dtype) {
  if (kd_tensor_head_of(t)->dtype != dtype)
    return kd_set_error(KD_ETYPE, "%s: Expected out tensor to have dtype %s, but got %s instead",
                        s->op, kd_dtype_name(dtype), kd_dtype_name(kd_tensor_head_of(t)->dtype));
  kd_device dev = kd_tensor_head_of(t)->storage->device;
  if (!kd_device_equal(dev, s->device)) {
    char have[64], want[64];
    return kd_set_error(KD_EINVAL, "%s: Expected out tensor to have device %s, but got %s instead",
                        s->op, format_device(want, sizeof want, s->device),
                        format_device(have, sizeof have, dev));
  }
  if (!same_sizes(t, ndim, sizes)) {
    /* PyTorch's resize_output: resizing an out that has elements is
     * deprecated and warned about. The asked-for strides are used for the
     * new geometry, so a resized out never needs a proxy. */
    bool warn = kd_tensor_head_of(t)->numel != 0;
    char have[256];
    if (warn)
      kdk__fmt_ints(have, sizeof have, kd_tensor_head_of(t)->sizes, kd_tensor_head_of(t)->ndim);
    kd_status st = kd_tensor_resize_(t, ndim, sizes, strides);
    if (st) return kdk__error_with_op(s->op, st);
    if (warn) {
      char want[256];
      kd_warn("%s: an out tensor with elements was resized from shape %s to the required output "
              "shape %s. Resizing an out tensor that has elements is deprecated (PyTorch will "
              "stop doing it); to reuse an out tensor, resize it to zero elements first "
              "(t.resize_(0))",
              s->op, have, kdk__fmt_ints(want, sizeof want, sizes, ndim));
    }
  } else if (strides && !same_strides(t, ndim, strides)) {
    return make_proxy(s, i, ndim, sizes, strides, dtype, dev);
  }
  s->outputs[i] = t;
  return KD_OK;
}

kd_status kdk__structured_check_abi(const kdk_structured *s) {
  if (s->api_version == KDK_API_VERSION && s->struct_size == sizeof(kdk_structured)) return KD_OK;
  /* s->op may lie anywhere in a struct of another layout: not read */
  return kd_set_error(KD_EUNSUPPORTED,
                      "kdk_structured of kit ABI %u, %u bytes, but libkdops has kit ABI %d, %zu "
                      "bytes: rebuild the kernel against this libkdops' headers",
                      (unsigned)s->api_version, (unsigned)s->struct_size, KDK_API_VERSION,
                      sizeof(kdk_structured));
}

kd_status kdk_structured_set_output(kdk_structured *s, int i, int ndim, const int64_t *sizes,
                                   const int64_t *strides, kd_dtype dtype) {
  if (__builtin_expect(s->struct_size != sizeof(kdk_structured) ||
                           s->api_version != KDK_API_VERSION, 0))
    return kdk__structured_check_abi(s);
  if (i < 0 || i >= s->nout || s->nout > KDK_STRUCTURED_MAX_OUT)
    return kd_set_error(KD_EINVAL, "%s: output index %d out of range: the call has %d outputs",
                        s->op, i, s->nout);
  if (s->outputs[i])
    return kd_set_error(KD_ESTATE, "%s: output %d was set twice", s->op, i);
  if (s->mode == KDK_STRUCTURED_FUNCTIONAL || s->mode == KDK_STRUCTURED_META) {
    kd_device dev = s->device;
    if (s->mode == KDK_STRUCTURED_META) {
      dev.type = KD_DEVICE_META;
      dev.index = 0;
    }
    kd_status st = strides
                       ? kd_tensor_empty_strided(ndim, sizes, strides, dtype, dev, &s->outputs[i])
                       : kd_tensor_empty(ndim, sizes, dtype, dev, &s->outputs[i]);
    return st ? kdk__error_with_op(s->op, st) : KD_OK;
  }
  if (s->mode != KDK_STRUCTURED_INPLACE && s->mode != KDK_STRUCTURED_OUT)
    return kd_set_error(KD_EINVAL, "%s: invalid structured mode %d", s->op, (int)s->mode);
  if (ndim < 0 || ndim > KD_MAX_DIMS || (ndim > 0 && !sizes))
    return kd_set_error(KD_EINVAL, "%s: output %d: bad shape (ndim %d%s)", s->op, i, ndim,
                        ndim > 0 && !sizes ? ", NULL sizes" : "");
  if (!kd_dtype_valid(dtype))
    return kd_set_error(KD_EINVAL, "%s: output %d: invalid dtype %d", s->op, i, (int)dtype);
  kd_tensor *t = s->given[i];
  if (!t)
    return kd_set_error(KD_EINVAL, "%s: output %d: no tensor was given for the %s variant", s->op,
                        i, s->mode == KDK_STRUCTURED_INPLACE ? "in-place" : "out");
  return s->mode == KDK_STRUCTURED_INPLACE ? set_inplace(s, i, t, ndim, sizes, strides, dtype)
                                          : set_out(s, i, t, ndim, sizes, strides, dtype);
}

kd_status kdk__structured_adopt_given(kdk_structured *s, int i) {
  if (i < 0 || i >= s->nout || s->nout > KDK_STRUCTURED_MAX_OUT)
    return kd_set_error(KD_EINVAL, "%s: output index %d out of range: the call has %d outputs",
                        s->op, i, s->nout);
  if (s->outputs[i]) return kd_set_error(KD_ESTATE, "%s: output %d was set twice", s->op, i);
  s->outputs[i] = s->given[i];
  return KD_OK;
}

kd_status kdk_structured_copy_proxies(kdk_structured *s) {
  for (unsigned p = s->proxies; p; p &= p - 1) {
    int i = __builtin_ctz(p);
    kd_status st = kd_tensor_copy_(s->given[i], s->outputs[i]);
    if (st) return kdk__error_with_op(s->op, st);
  }
  return KD_OK;
}

void kdk_structured_release_outputs(kdk_structured *s, kd_tensor **take) {
  int n = s->nout < 0 ? 0 : s->nout < KDK_STRUCTURED_MAX_OUT ? s->nout : KDK_STRUCTURED_MAX_OUT;
  bool owned = s->mode == KDK_STRUCTURED_FUNCTIONAL || s->mode == KDK_STRUCTURED_META;
  if (owned) {
    for (int i = 0; i < n; i++) {
      if (take)
        take[i] = s->outputs[i];
      else
        kd_tensor_release(s->outputs[i]);
      s->outputs[i] = NULL;
    }
    return;
  }
  /* INPLACE / OUT: outputs are the caller's tensors but for proxies */
  for (unsigned p = s->proxies; p; p &= p - 1) {
    int i = __builtin_ctz(p);
    kd_tensor_release(s->outputs[i]);
    s->outputs[i] = NULL;
  }
  s->proxies = 0;
}
