/*
 * softmax.c: softmax and log_softmax (the .int overloads and their out
 * variants, composites as in PyTorch) over the structured _softmax and
 * _log_softmax.
 *
 * Rows along `dim` are computed in float64 whatever the dtype (max, then the
 * sum of exp(x - max), then the output), and rounded once to the output
 * dtype. Floating dtypes only (float16 too, which PyTorch 1.13 refuses on
 * cpu); half_to_float is refused on cpu as in PyTorch. A 0-dim input is a
 * row of one element.
 */
#include <math.h>
#include <string.h>

#include "native/reduce.h"
#include "native/views.h"

#include "kdgen_all_native.h"
#include "kd/ops_all.h"

static kd_status softmax_meta(const char *op, kdk_structured *s, kd_tensor *self, int64_t dim,
                              bool half_to_float) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL", op);
  int ndim = kd_tensor_ndim(self);
  int64_t wrapped = 0;
  kd_status st = kdk__wrap_dim(op, KD_ERANGE, dim, ndim, &wrapped);
  if (st) return st;
  kd_dtype dt = half_to_float ? KD_FLOAT32 : kd_tensor_dtype(self);
  return kdk_structured_set_output(s, 0, ndim, kd_tensor_sizes(self), NULL, dt);
}

kd_status kdk_meta_internal_softmax(kdk_structured *s, kd_tensor *self, int64_t dim, bool half_to_float) {
  return softmax_meta("_softmax", s, self, dim, half_to_float);
}
kd_status kdk_meta_internal_log_softmax(kdk_structured *s, kd_tensor *self, int64_t dim,
                                bool half_to_float) {
  return softmax_meta("_log_softmax", s, self, dim, half_to_float);
}

static double ld(const char *p, kd_dtype dt) {
  switch (dt) {
  case KD_FLOAT32: return *(const float *)p;
  case KD_FLOAT64: return *(const double *)p;
  case KD_FLOAT16: return kd_half_to_float(*(const uint16_t *)p);
  case KD_BFLOAT16: return kd_bfloat16_to_float(*(const uint16_t *)p);
  default: return 0;
  }
}

static void st(char *p, kd_dtype dt, double v) {
  switch (dt) {
  case KD_FLOAT32: *(float *)p = (float)v; break;
  case KD_FLOAT64: *(double *)p = v; break;
  case KD_FLOAT16: *(uint16_t *)p = kd_float_to_half((float)v); break;
  case KD_BFLOAT16: *(uint16_t *)p = kd_float_to_bfloat16((float)v); break;
  default: break;
  }
}

static kd_status softmax_impl(const char *op, kd_tensor *self, int64_t dim, bool half_to_float,
                              bool is_log, kd_tensor *out) {
  if (kd_tensor_device(out).type == KD_DEVICE_META) return KD_OK;
  if (half_to_float)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: softmax with half to float conversion is not supported on CPU", op);
  kd_dtype dt = kd_tensor_dtype(self);
  if (!kd_dtype_is_floating(dt))
    return kd_set_error(KD_ETYPE,
                        "%s: \"%s\" not implemented for '%s' (expected a floating point dtype; "
                        "softmax and log_softmax take dtype= to convert the input)",
                        op, is_log ? "log_softmax" : "softmax", kd_dtype_name(dt));
  if (kd_tensor_device(self).type != KD_DEVICE_CPU)
    return kd_set_error(KD_EUNSUPPORTED, "%s: the cpu kernel got a tensor on device '%s'", op,
                        kd_device_type_name(kd_tensor_device(self).type));
  if (kd_tensor_numel(self) == 0) return KD_OK;
  int ndim = kd_tensor_ndim(self);
  const char *in = kd_tensor_data(self);
  char *o = kd_tensor_data(out);
  int64_t es = (int64_t)kd_dtype_size(dt);
  if (ndim == 0) {
    st(o, dt, is_log ? 0.0 : (isnan(ld(in, dt)) ? NAN : 1.0));
    return KD_OK;
  }
  int d = (int)(dim < 0 ? dim + ndim : dim);
  int64_t len = kd_tensor_sizes(self)[d];
  int64_t is = kd_tensor_strides(self)[d] * es, os = kd_tensor_strides(out)[d] * es;
  /* The positions of every row: the other dimensions, innermost first. */
  int64_t osz[KD_MAX_DIMS], ois[KD_MAX_DIMS], oos[KD_MAX_DIMS];
  int no = 0;
  int64_t rows = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    if (k == d || kd_tensor_sizes(self)[k] == 1) continue;
    osz[no] = kd_tensor_sizes(self)[k];
    ois[no] = kd_tensor_strides(self)[k] * es;
    oos[no] = kd_tensor_strides(out)[k] * es;
    rows *= osz[no];
    no++;
  }
  int64_t idx[KD_MAX_DIMS] = {0};
  int64_t a = 0, b = 0;
  for (int64_t r = 0; r < rows; r++) {
    const char *p = in + a;
    char *q = o + b;
    double m = -INFINITY;
    for (int64_t i = 0; i < len; i++) {
      double v = ld(p + i * is, dt);
      if (v > m || isnan(v)) m = v;
      if (isnan(v)) break;
    }
    if (isinf(m) && m < 0) m = 0; /* every element -inf: exp(-inf - 0) = 0 */
    double sum = 0;
    for (int64_t i = 0; i < len; i++) sum += exp(ld(p + i * is, dt) - m);
    double lsum = log(sum);
    for (int64_t i = 0; i < len; i++) {
      double v = ld(p + i * is, dt) - m;
      st(q + i * os, dt, is_log ? v - lsum : exp(v) / sum);
    }
    for (int k = 0; k < no; k++) {
      a += ois[k];
      b += oos[k];
      if (++idx[k] < osz[k]) break;
      a -= ois[k] * osz[k];
      b -= oos[k] * osz[k];
      idx[k] = 0;
    }
  }
  return KD_OK;
}

kd_status kdk_native_softmax_cpu_out(kdk_structured *s, kd_tensor *self, int64_t dim,
                                     bool half_to_float, kd_tensor *out) {
  (void)s;
  return softmax_impl("_softmax", self, dim, half_to_float, false, out);
}
kd_status kdk_native_log_softmax_cpu_out(kdk_structured *s, kd_tensor *self, int64_t dim,
                                         bool half_to_float, kd_tensor *out) {
  (void)s;
  return softmax_impl("_log_softmax", self, dim, half_to_float, true, out);
}

/* self converted to dtype when given (a new reference either way). */
static kd_status converted(kd_tensor *self, const kd_dtype *dtype, kd_tensor **out) {
  if (!self) return kd_set_error(KD_EINVAL, "softmax: self is NULL");
  if (!dtype || *dtype == kd_tensor_dtype(self)) {
    kd_tensor_retain(self);
    *out = self;
    return KD_OK;
  }
  if (!kd_dtype_valid(*dtype)) return kd_set_error(KD_EINVAL, "softmax: invalid dtype %d", (int)*dtype);
  kd_device_type ty = kd_tensor_device(self).type;
  if (ty != KD_DEVICE_CPU && ty != KD_DEVICE_META) /* the dispatched _to_copy: any device */
    return kd_to_dtype(self, *dtype, false, false, NULL, out);
  return kd_tensor_to_dtype(self, *dtype, out);
}

/* The .int_out composites, as PyTorch 1.13's softmax_out/log_softmax_out: an
 * out= that is not contiguous gets the result through copy_, which refuses
 * an out= with internal overlap (an expanded one) whose sizes are already
 * the result's (other sizes are resized to a fresh contiguous tensor). The
 * result is computed first so that argument errors come before that one. */
static kd_status int_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype, kd_tensor *out,
                         bool is_log) {
  kd_tensor *c = NULL;
  kd_status r = converted(self, dtype, &c);
  if (r) return r;
  if (out && kd_tensor_ndim(out) == kd_tensor_ndim(c) &&
      !memcmp(kd_tensor_sizes(out), kd_tensor_sizes(c),
              (size_t)kd_tensor_ndim(c) * sizeof(int64_t)) &&
      kdk__vw_check_internal_overlap(out)) {
    kd_tensor *tmp = NULL;
    r = is_log ? kd_internal_log_softmax(c, dim, false, &tmp) : kd_internal_softmax(c, dim, false, &tmp);
    kd_tensor_release(tmp);
    kd_tensor_release(c);
    return r ? r : kdk__vw_check_internal_overlap(out);
  }
  r = is_log ? kd_internal_log_softmax_out(c, dim, false, out) : kd_internal_softmax_out(c, dim, false, out);
  kd_tensor_release(c);
  return r;
}

kd_status kdk_native_softmax_int(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                 kd_tensor **out) {
  kd_tensor *c = NULL;
  kd_status r = converted(self, dtype, &c);
  if (r) return r;
  r = kd_internal_softmax(c, dim, false, out);
  kd_tensor_release(c);
  return r;
}
kd_status kdk_native_softmax_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                 kd_tensor *out) {
  return int_out(self, dim, dtype, out, false);
}
kd_status kdk_native_log_softmax_int(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                     kd_tensor **out) {
  kd_tensor *c = NULL;
  kd_status r = converted(self, dtype, &c);
  if (r) return r;
  r = kd_internal_log_softmax(c, dim, false, out);
  kd_tensor_release(c);
  return r;
}
kd_status kdk_native_log_softmax_out(kd_tensor *self, int64_t dim, const kd_dtype *dtype,
                                     kd_tensor *out) {
  return int_out(self, dim, dtype, out, true);
}
