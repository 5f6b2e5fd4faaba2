/*
 * fill.c: the fill stub's kernel (fill.h), compiled once per CPU capability.
 *
 * The value is converted once into the element's bytes; the loops then copy
 * that bit pattern by element width (1, 2, 4, 8 or 16 bytes), so every dtype
 * of a width shares one loop. Stores go through memcpy of a constant size
 * (wrapped memory need only be byte-aligned); compilers turn them into plain
 * stores and vectorise the unit-stride loop.
 */
#include <string.h>

#include "fill.h"

/* n elements of `width` bytes from p, `step` bytes apart. */
#define KDK__FILL_LOOP(width, T)                                                       \
  static void fill_##width(char *p, int64_t n, int64_t step, const unsigned char *v) { \
    T x;                                                                              \
    memcpy(&x, v, sizeof x);                                                          \
    if (step == (int64_t)sizeof x) {                                                  \
      for (int64_t i = 0; i < n; i++) memcpy(p + i * (int64_t)sizeof x, &x, sizeof x); \
    } else {                                                                          \
      for (int64_t i = 0; i < n; i++) memcpy(p + i * step, &x, sizeof x);             \
    }                                                                                 \
  }
KDK__FILL_LOOP(1, uint8_t)
KDK__FILL_LOOP(2, uint16_t)
KDK__FILL_LOOP(4, uint32_t)
KDK__FILL_LOOP(8, uint64_t)
#undef KDK__FILL_LOOP

static void fill_16(char *p, int64_t n, int64_t step, const unsigned char *v) {
  uint64_t lo, hi;
  memcpy(&lo, v, 8);
  memcpy(&hi, v + 8, 8);
  if (step == 16) {
    for (int64_t i = 0; i < n; i++) {
      memcpy(p + i * 16, &lo, 8);
      memcpy(p + i * 16 + 8, &hi, 8);
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      memcpy(p + i * step, &lo, 8);
      memcpy(p + i * step + 8, &hi, 8);
    }
  }
}

typedef void fill_loop(char *p, int64_t n, int64_t step, const unsigned char *v);

static kd_status fill_kernel(kd_tensor *self, const kd_scalar *value) {
  if (!self || !value) return kd_set_error(KD_EINVAL, "fill_: NULL argument");
  kd_dtype dtype = kd_tensor_dtype(self);
  unsigned char v[16];
  kd_status st = kd_scalar_to_element(value, dtype, v);
  if (st) return st;
  kd_device dev = kd_tensor_device(self);
  if (dev.type == KD_DEVICE_META) return KD_OK;
  if (dev.type != KD_DEVICE_CPU)
    return kd_set_error(KD_EUNSUPPORTED, "fill_: the cpu kernel got a tensor on device '%s'",
                        kd_device_type_name(dev.type));
  if (kd_tensor_numel(self) == 0) return KD_OK;

  int64_t width = (int64_t)kd_dtype_size(dtype);
  fill_loop *loop;
  switch (width) {
  case 1: loop = fill_1; break;
  case 2: loop = fill_2; break;
  case 4: loop = fill_4; break;
  case 8: loop = fill_8; break;
  case 16: loop = fill_16; break;
  default:
    return kd_set_error(KD_EINTERNAL, "fill_: unexpected element size %lld of dtype %s",
                        (long long)width, kd_dtype_name(dtype));
  }

  /* Dimensions innermost first, size-1 ones dropped, neighbours that step
   * evenly merged: a contiguous tensor becomes one run. Byte steps. */
  int ndim = kd_tensor_ndim(self);
  const int64_t *sizes = kd_tensor_sizes(self), *strides = kd_tensor_strides(self);
  int64_t size[KD_MAX_DIMS], step[KD_MAX_DIMS];
  int nd = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    if (sizes[d] == 1) continue;
    int64_t s = strides[d] * width;
    if (nd > 0 && step[nd - 1] * size[nd - 1] == s) {
      size[nd - 1] *= sizes[d];
    } else {
      size[nd] = sizes[d];
      step[nd] = s;
      nd++;
    }
  }
  char *base = kd_tensor_data(self);
  if (nd == 0) {
    loop(base, 1, width, v);
    return KD_OK;
  }
  int64_t index[KD_MAX_DIMS] = {0};
  for (;;) {
    loop(base, size[0], step[0], v);
    /* Next position of the outer dimensions, like an odometer. */
    int d = 1;
    for (; d < nd; d++) {
      base += step[d];
      if (++index[d] < size[d]) break;
      base -= step[d] * size[d];
      index[d] = 0;
    }
    if (d == nd) return KD_OK;
  }
}

KD_REGISTER_STUB(fill_stub, fill_kernel);
