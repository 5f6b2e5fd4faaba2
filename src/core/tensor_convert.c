/*
 * tensor_convert.c: tensors converted between dtypes (kd_tensor_to_dtype),
 * moved between devices (kd_tensor_to_device) and copied in place
 * (kd_tensor_copy_).
 *
 * Values are converted one run at a time: the strided loop hands the
 * innermost dimension to a function made for the (source, destination) dtype
 * pair, which loads each element into int64 (bool and integers), double
 * (real floating) or a pair of doubles (complex) and stores it as the
 * destination type. Integers never pass through double. Same-dtype runs copy
 * bytes.
 */
#include <stdio.h>

#include "core/tensor_impl.h"

/* ---- Loads: one element into int64 (I), double (R) or a complex pair (C) ---- */

typedef struct kd__cpair {
  double re, im;
} kd__cpair;

/* memcpy for every access: wrapped memory need only be byte-aligned. */
#define KD__LOAD_INT(name, T)                      \
  static inline int64_t ld_##name(const char *p) { \
    T v;                                           \
    memcpy(&v, p, sizeof v);                       \
    return (int64_t)v;                             \
  }
KD__LOAD_INT(uint8, uint8_t)
KD__LOAD_INT(int8, int8_t)
KD__LOAD_INT(int16, int16_t)
KD__LOAD_INT(int32, int32_t)
KD__LOAD_INT(int64, int64_t)
#undef KD__LOAD_INT

static inline int64_t ld_b8(const char *p) { return *(const unsigned char *)p != 0; }

static inline double ld_float16(const char *p) {
  uint16_t b;
  memcpy(&b, p, sizeof b);
  return (double)kd_half_to_float(b);
}

static inline double ld_bfloat16(const char *p) {
  uint16_t b;
  memcpy(&b, p, sizeof b);
  return (double)kd_bfloat16_to_float(b);
}

static inline double ld_float32(const char *p) {
  float v;
  memcpy(&v, p, sizeof v);
  return (double)v;
}

static inline double ld_float64(const char *p) {
  double v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline kd__cpair ld_complex64(const char *p) {
  float v[2];
  memcpy(v, p, sizeof v);
  kd__cpair c = {(double)v[0], (double)v[1]};
  return c;
}

static inline kd__cpair ld_complex128(const char *p) {
  double v[2];
  memcpy(v, p, sizeof v);
  kd__cpair c = {v[0], v[1]};
  return c;
}

/* ---- Stores: st_<dtype>_<I|R|C> ------------------------------------------- */

/* Floating to int64, truncating toward zero. NaN and values outside int64
 * (undefined in C and in PyTorch) give INT64_MIN, as x86's cvttsd2si does. */
static inline int64_t f2i(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return (int64_t)d;
  return INT64_MIN;
}

/* Integers wrap modulo 2^bits: the unsigned pattern is stored, which is the
 * two's complement value of the signed type of the same width. */
#define KD__STORE_INT(name, U)                                                  \
  static inline void st_##name##_I(char *p, int64_t v) {                        \
    U x = (U)(uint64_t)v;                                                       \
    memcpy(p, &x, sizeof x);                                                    \
  }                                                                             \
  static inline void st_##name##_R(char *p, double v) { st_##name##_I(p, f2i(v)); } \
  static inline void st_##name##_C(char *p, kd__cpair v) { st_##name##_I(p, f2i(v.re)); }
KD__STORE_INT(uint8, uint8_t)
KD__STORE_INT(int8, uint8_t)
KD__STORE_INT(int16, uint16_t)
KD__STORE_INT(int32, uint32_t)
KD__STORE_INT(int64, uint64_t)
#undef KD__STORE_INT

static inline void st_b8_I(char *p, int64_t v) { *(unsigned char *)p = v != 0; }
static inline void st_b8_R(char *p, double v) { *(unsigned char *)p = v != 0; } /* NaN: true */
static inline void st_b8_C(char *p, kd__cpair v) {
  *(unsigned char *)p = v.re != 0 || v.im != 0;
}

/* float16 / bfloat16: through float, as c10::Half and c10::BFloat16 are made. */
#define KD__STORE_HALF(name, to_bits)                                            \
  static inline void st_##name##_I(char *p, int64_t v) {                        \
    uint16_t b = to_bits((float)v);                                             \
    memcpy(p, &b, sizeof b);                                                    \
  }                                                                             \
  static inline void st_##name##_R(char *p, double v) {                         \
    uint16_t b = to_bits((float)v);                                             \
    memcpy(p, &b, sizeof b);                                                    \
  }                                                                             \
  static inline void st_##name##_C(char *p, kd__cpair v) { st_##name##_R(p, v.re); }
KD__STORE_HALF(float16, kd_float_to_half)
KD__STORE_HALF(bfloat16, kd_float_to_bfloat16)
#undef KD__STORE_HALF

/* Real floating: int64 converts directly (one rounding, as static_cast). */
#define KD__STORE_REAL(name, T)                                                  \
  static inline void st_##name##_I(char *p, int64_t v) {                        \
    T x = (T)v;                                                                 \
    memcpy(p, &x, sizeof x);                                                    \
  }                                                                             \
  static inline void st_##name##_R(char *p, double v) {                         \
    T x = (T)v;                                                                 \
    memcpy(p, &x, sizeof x);                                                    \
  }                                                                             \
  static inline void st_##name##_C(char *p, kd__cpair v) { st_##name##_R(p, v.re); }
KD__STORE_REAL(float32, float)
KD__STORE_REAL(float64, double)
#undef KD__STORE_REAL

#define KD__STORE_COMPLEX(name, T)                                               \
  static inline void st_##name##_I(char *p, int64_t v) {                        \
    T x[2] = {(T)v, 0};                                                         \
    memcpy(p, x, sizeof x);                                                     \
  }                                                                             \
  static inline void st_##name##_R(char *p, double v) {                         \
    T x[2] = {(T)v, 0};                                                         \
    memcpy(p, x, sizeof x);                                                     \
  }                                                                             \
  static inline void st_##name##_C(char *p, kd__cpair v) {                      \
    T x[2] = {(T)v.re, (T)v.im};                                                \
    memcpy(p, x, sizeof x);                                                     \
  }
KD__STORE_COMPLEX(complex64, float)
KD__STORE_COMPLEX(complex128, double)
#undef KD__STORE_COMPLEX

/* ---- Runs: n elements, byte strides ds (destination) and ss (source) ------ */

typedef void (*kd__run_fn)(char *d, int64_t ds, const char *s, int64_t ss, int64_t n);

#define KD__RUN(S, K, D)                                                            \
  static void run_##S##_##D(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) { \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) st_##D##_##K(d, ld_##S(s));        \
  }

/* Every destination for one source dtype S whose loads give K. */
#define KD__RUNS_FROM(S, K)                                                         \
  KD__RUN(S, K, b8)                                                               \
  KD__RUN(S, K, uint8)                                                              \
  KD__RUN(S, K, int8)                                                               \
  KD__RUN(S, K, int16)                                                              \
  KD__RUN(S, K, int32)                                                              \
  KD__RUN(S, K, int64)                                                              \
  KD__RUN(S, K, float16)                                                            \
  KD__RUN(S, K, bfloat16)                                                           \
  KD__RUN(S, K, float32)                                                            \
  KD__RUN(S, K, float64)                                                            \
  KD__RUN(S, K, complex64)                                                          \
  KD__RUN(S, K, complex128)

KD__RUNS_FROM(b8, I)
KD__RUNS_FROM(uint8, I)
KD__RUNS_FROM(int8, I)
KD__RUNS_FROM(int16, I)
KD__RUNS_FROM(int32, I)
KD__RUNS_FROM(int64, I)
KD__RUNS_FROM(float16, R)
KD__RUNS_FROM(bfloat16, R)
KD__RUNS_FROM(float32, R)
KD__RUNS_FROM(float64, R)
KD__RUNS_FROM(complex64, C)
KD__RUNS_FROM(complex128, C)
#undef KD__RUNS_FROM
#undef KD__RUN

/* One row per source dtype, one column per destination, both in the enum's
 * order (bool is spelt b8 here: `bool` is a macro). */
#define KD__RUN_ROW(S)                                                              \
  {run_##S##_b8,      run_##S##_uint8,    run_##S##_int8,      run_##S##_int16,     \
   run_##S##_int32,   run_##S##_int64,    run_##S##_float16,   run_##S##_bfloat16,  \
   run_##S##_float32, run_##S##_float64,  run_##S##_complex64, run_##S##_complex128}
static const kd__run_fn run_table[KD_DTYPE_COUNT][KD_DTYPE_COUNT] = {
    KD__RUN_ROW(b8),      KD__RUN_ROW(uint8),     KD__RUN_ROW(int8),      KD__RUN_ROW(int16),
    KD__RUN_ROW(int32),   KD__RUN_ROW(int64),     KD__RUN_ROW(float16),   KD__RUN_ROW(bfloat16),
    KD__RUN_ROW(float32), KD__RUN_ROW(float64),   KD__RUN_ROW(complex64), KD__RUN_ROW(complex128)};
#undef KD__RUN_ROW

/* Same dtype: the bytes, so NaN payloads, -0.0 and every integer stay. */
#define KD__COPY_RUN(N)                                                              \
  static void copy_run_##N(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) { \
    if (ds == N && ss == N) {                                                        \
      memcpy(d, s, (size_t)n * N);                                                   \
      return;                                                                        \
    }                                                                                \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) memcpy(d, s, N);               \
  }
KD__COPY_RUN(1)
KD__COPY_RUN(2)
KD__COPY_RUN(4)
KD__COPY_RUN(8)
KD__COPY_RUN(16)
#undef KD__COPY_RUN

static kd__run_fn pick_run(kd_dtype dst, kd_dtype src) {
  if (dst != src) return run_table[src][dst];
  switch (kd_dtype_size(dst)) {
    case 1: return copy_run_1;
    case 2: return copy_run_2;
    case 4: return copy_run_4;
    case 8: return copy_run_8;
    default: return copy_run_16;
  }
}

/* ---- The strided loop ------------------------------------------------------ */

/* Writes every element of the `ndim`/`sizes` index space from `src` (element
 * strides `sstrides`, dtype `sdt`) to `dst` (element strides `dstrides`, dtype
 * `ddt`), in row-major order. Both pointers are element 0; host memory. Size-1
 * dimensions are dropped and dimensions that are contiguous in both are
 * merged, so a contiguous tensor is one run. */
static void convert_strided(void *dst, kd_dtype ddt, const int64_t *dstrides, const void *src,
                            kd_dtype sdt, const int64_t *sstrides, int ndim,
                            const int64_t *sizes) {
  int64_t dsz = (int64_t)kd_dtype_size(ddt), ssz = (int64_t)kd_dtype_size(sdt);
  int64_t sz[KD_MAX_DIMS], ds[KD_MAX_DIMS], ss[KD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < ndim; i++) {
    if (sizes[i] == 0) return; /* no elements */
    if (sizes[i] == 1) continue;
    int64_t dstep = dstrides[i] * dsz, sstep = sstrides[i] * ssz;
    if (n > 0 && ds[n - 1] == dstep * sizes[i] && ss[n - 1] == sstep * sizes[i]) {
      sz[n - 1] *= sizes[i];
      ds[n - 1] = dstep;
      ss[n - 1] = sstep;
    } else {
      sz[n] = sizes[i];
      ds[n] = dstep;
      ss[n] = sstep;
      n++;
    }
  }
  kd__run_fn run = pick_run(ddt, sdt);
  char *d = dst;
  const char *s = src;
  if (n == 0) {
    run(d, dsz, s, ssz, 1);
    return;
  }
  /* Offsets, not pointers, move through the outer dimensions, so that no
   * pointer is ever formed outside the data. */
  int64_t idx[KD_MAX_DIMS] = {0};
  int64_t doff = 0, soff = 0;
  for (;;) {
    run(d + doff, ds[n - 1], s + soff, ss[n - 1], sz[n - 1]);
    int k = n - 2;
    for (; k >= 0; k--) {
      doff += ds[k];
      soff += ss[k];
      if (++idx[k] < sz[k]) break;
      doff -= ds[k] * sz[k];
      soff -= ss[k] * sz[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

/* A new contiguous cpu tensor of t's sizes holding t's values as `dtype`;
 * t's bytes are in host memory. */
static kd_status host_contiguous(const kd_tensor *t, kd_dtype dtype, kd_tensor **out) {
  kd_tensor *r;
  kd_status st = kd_tensor_empty(t->ndim, t->sizes, dtype, kd_device_cpu(), &r);
  if (st) return st;
  if (r->numel > 0)
    convert_strided(r->storage->data, dtype, r->strides, kd_tensor_data(t), t->dtype, t->strides,
                    t->ndim, t->sizes);
  *out = r;
  return KD_OK;
}

/* ---- kd_tensor_to_dtype ----------------------------------------------------- */

static kd_status invalid_dtype(const char *fn, kd_dtype dtype) {
  return kd_set_error(KD_EINVAL,
                      "%s: invalid dtype %d: expected bool, uint8, int8, int16, int32, int64, "
                      "float16, bfloat16, float32, float64, complex64 or complex128",
                      fn, (int)dtype);
}

kd_status kd_tensor_to_dtype(const kd_tensor *t, kd_dtype dtype, kd_tensor **out) {
  static const char fn[] = "kd_tensor_to_dtype";
  if (!out) return kd_set_error(KD_EINVAL, "%s: NULL out", fn);
  *out = NULL;
  if (!t) return kd_set_error(KD_EINVAL, "%s: NULL tensor", fn);
  if (!kd_dtype_valid(dtype)) return invalid_dtype(fn, dtype);
  kd_device dev = t->storage->device;
  if (dev.type == KD_DEVICE_META) return kd_tensor_empty(t->ndim, t->sizes, dtype, dev, out);
  if (dev.type == KD_DEVICE_CPU) return host_contiguous(t, dtype, out);
  /* A device tensor: the device's own cast when its backend has one (the
   * kd__backend_device_cast: 1 means "not done here"), else through the host:
   * to the cpu with the device allocator's copies, converted there, back to
   * the same device and index. */
  int hk = kd__backend_device_cast(t, (int)dtype, out);
  if (hk != 1) return (kd_status)hk;
  kd_tensor *host, *conv;
  kd_status st = kd_tensor_to_device(t, kd_device_cpu(), &host);
  if (st) return st;
  st = host_contiguous(host, dtype, &conv);
  kd_tensor_release(host);
  if (st) return st;
  st = kd_tensor_to_device(conv, dev, out);
  kd_tensor_release(conv);
  return st;
}

/* ---- kd_tensor_to_device ------------------------------------------------------ */

static kd_status check_device(const char *fn, kd_device device) {
  if ((int)device.type < 0 || (int)device.type >= (int)KD_DEVICE_TYPE_COUNT)
    return kd_set_error(KD_EINVAL,
                        "%s: invalid device type %d: expected cpu, cuda, meta or a private "
                        "device type",
                        fn, (int)device.type);
  if (device.index < 0)
    return kd_set_error(KD_EINVAL, "%s: device index %d of '%s' is negative: expected >= 0", fn,
                        (int)device.index, kd_device_type_name(device.type));
  if ((device.type == KD_DEVICE_CPU || device.type == KD_DEVICE_META) && device.index != 0)
    return kd_set_error(KD_EINVAL, "%s: %s has only device index 0, got %d", fn,
                        kd_device_type_name(device.type), (int)device.index);
  return KD_OK;
}

static bool has_copy_fns(const kd_allocator *a) { return a->copy_to_host && a->copy_from_host; }

/* The allocator whose copy functions move bytes of `type`: the one `storage`
 * (may be NULL) was allocated with when it has them, else the type's
 * installed one. `to` names the destination in the message. */
static kd_status copy_allocator(const kd_storage *storage, kd_device_type type, kd_device to,
                                kd_allocator *out) {
  if (storage && storage->owns_via_allocator && has_copy_fns(&storage->allocator)) {
    *out = storage->allocator;
    return KD_OK;
  }
  /* The destination's name is formatted only for a message (this runs on
   * every move from the cpu). */
  char dest[48];
  kd_allocator a;
  bool found = kd_allocator_get(type, &a) == KD_OK;
  if (found && has_copy_fns(&a)) {
    *out = a;
    return KD_OK;
  }
  kd_device_format(to, dest, sizeof dest);
  if (!found)
    return kd_set_error(KD_EUNSUPPORTED,
                        "kd_tensor_to_device: device type '%s' has no allocator (kd_allocator_set "
                        "with kd_allocator v2 copy_to_host/copy_from_host); cannot move a tensor "
                        "to %s",
                        kd_device_type_name(type), dest);
  return kd_set_error(KD_EUNSUPPORTED,
                      "kd_tensor_to_device: device type '%s' has no copy functions in its "
                      "allocator (kd_allocator v2 copy_to_host/copy_from_host); cannot move a "
                      "tensor to %s",
                      kd_device_type_name(type), dest);
}

/* Calls a copy function; a failure keeps the backend's message when it left a
 * new one. */
static kd_status device_copy(const kd_allocator *a, bool to_host, kd_device device, void *dst,
                             const void *src, size_t nbytes) {
  if (nbytes == 0) return KD_OK;
  /* The message before the call, to tell a fresh one from it (a plain copy:
   * this runs for every device copy, snprintf costs about 900 instructions). */
  char before[1024];
  kd_status before_st = kd_last_status();
  const char *cur = kd_last_error();
  size_t blen = strlen(cur);
  if (blen >= sizeof before) blen = sizeof before - 1;
  memcpy(before, cur, blen);
  before[blen] = '\0';
  kd_status st = to_host ? a->copy_to_host(a->ctx, device, dst, src, nbytes)
                         : a->copy_from_host(a->ctx, device, dst, src, nbytes);
  if (st == KD_OK) return KD_OK;
  if ((int)st > 0) st = KD_EINTERNAL; /* not a kd_status error */
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", kd_last_error());
  bool fresh = kd_last_status() != before_st || strcmp(msg, before) != 0;
  char name[48];
  kd_device_format(device, name, sizeof name);
  return kd_set_error(st, "kd_tensor_to_device: %s of device '%s' failed copying %zu bytes%s%s",
                      to_host ? "copy_to_host" : "copy_from_host", name, nbytes,
                      fresh && msg[0] ? ": " : "", fresh ? msg : "");
}

/* t's values, contiguous, in a new cpu tensor: the bytes t's view spans are
 * copied to the host, then made contiguous there when they are not already. */
static kd_status device_to_host(const kd_tensor *t, const kd_allocator *a, kd_tensor **out) {
  if (t->numel == 0) return kd_tensor_empty(t->ndim, t->sizes, t->dtype, kd_device_cpu(), out);
  int64_t isz = (int64_t)kd_dtype_size(t->dtype);
  int64_t last = 0; /* element offset of the last element, from element 0 */
  for (int i = 0; i < t->ndim; i++) last += (t->sizes[i] - 1) * t->strides[i];
  size_t span = (size_t)((last + 1) * isz);
  kd_storage *hs;
  kd_status st = kd_storage_new(kd_device_cpu(), span, &hs);
  if (st) return st;
  const char *first = (const char *)t->storage->data + t->offset * isz;
  if ((st = device_copy(a, true, t->storage->device, hs->data, first, span))) {
    kd_storage_release(hs);
    return st;
  }
  kd_tensor *view;
  st = kd__tensor_make(hs, 0, t->ndim, t->sizes, t->strides, t->dtype, &view);
  kd_storage_release(hs);
  if (st) return st;
  if (view->contiguous) { /* the span is exactly the values */
    *out = view;
    return KD_OK;
  }
  st = host_contiguous(view, t->dtype, out);
  kd_tensor_release(view);
  return st;
}

kd_status kd_tensor_to_device(const kd_tensor *t, kd_device device, kd_tensor **out) {
  static const char fn[] = "kd_tensor_to_device";
  if (!out) return kd_set_error(KD_EINVAL, "%s: NULL out", fn);
  *out = NULL;
  if (!t) return kd_set_error(KD_EINVAL, "%s: NULL tensor", fn);
  kd_status st = check_device(fn, device);
  if (st) return st;
  kd_device from = t->storage->device;
  if (device.type == KD_DEVICE_META)
    return kd_tensor_empty(t->ndim, t->sizes, t->dtype, device, out);
  if (from.type == KD_DEVICE_META) {
    char dest[48];
    kd_device_format(device, dest, sizeof dest);
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: cannot move a meta tensor to %s: meta tensors have no data", fn,
                        dest);
  }
  bool from_host = from.type == KD_DEVICE_CPU, to_host = device.type == KD_DEVICE_CPU;
  kd_allocator src_a, dst_a;
  if (!from_host && (st = copy_allocator(t->storage, from.type, device, &src_a))) return st;
  if (!to_host && (st = copy_allocator(NULL, device.type, device, &dst_a))) return st;

  /* The values, contiguous, in host memory. */
  kd_tensor *host = NULL;
  const void *host_bytes;
  if (from_host && !to_host && t->contiguous) {
    host_bytes = kd_tensor_data(t); /* straight from t */
  } else {
    st = from_host ? host_contiguous(t, t->dtype, &host) : device_to_host(t, &src_a, &host);
    if (st) return st;
    if (to_host) {
      *out = host;
      return KD_OK;
    }
    host_bytes = kd_tensor_data(host);
  }

  kd_tensor *r;
  if ((st = kd_tensor_empty(t->ndim, t->sizes, t->dtype, device, &r))) {
    kd_tensor_release(host);
    return st;
  }
  /* The allocator that made r's bytes copies into them. */
  if (r->storage->owns_via_allocator && has_copy_fns(&r->storage->allocator))
    dst_a = r->storage->allocator;
  st = device_copy(&dst_a, false, device, r->storage->data, host_bytes, r->storage->nbytes);
  kd_tensor_release(host);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

/* ---- kd_tensor_copy_ ------------------------------------------------------------ */

static void fmt_sizes(kd__fmt *f, int ndim, const int64_t *sizes) {
  kd__fmt_puts(f, "[");
  for (int i = 0; i < ndim; i++) kd__fmt_printf(f, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  kd__fmt_puts(f, "]");
}

/* src's element strides broadcast to dst's sizes (0 along broadcast
 * dimensions); KD_EINVAL when the sizes do not broadcast. */
static kd_status broadcast_strides(const kd_tensor *dst, const kd_tensor *src, int64_t *strides) {
  int lead = dst->ndim - src->ndim;
  bool ok = lead >= 0;
  for (int i = 0; ok && i < dst->ndim; i++) {
    int j = i - lead;
    if (j < 0 || src->sizes[j] == 1)
      strides[i] = 0;
    else if (src->sizes[j] == dst->sizes[i])
      strides[i] = src->strides[j];
    else
      ok = false;
  }
  if (ok) return KD_OK;
  char a[256], b[256];
  kd__fmt fa = kd__fmt_init(a, sizeof a), fb = kd__fmt_init(b, sizeof b);
  fmt_sizes(&fa, src->ndim, src->sizes);
  fmt_sizes(&fb, dst->ndim, dst->sizes);
  return kd_set_error(KD_EINVAL,
                      "kd_tensor_copy_: src sizes %s cannot be broadcast to dst sizes %s: "
                      "expected each src size to be 1 or equal to dst's, aligned from the last "
                      "dimension",
                      a, b);
}

/* kd_tensor_copy_ into a dst on a device (not cpu or meta): src's values
 * come to the host; the bytes dst's view spans are written through the
 * device allocator's copy_from_host, after reading them with copy_to_host
 * when dst does not cover its span (strides with gaps), so that the bytes
 * between its elements keep their values. On error dst is unchanged, unless
 * the final copy_from_host itself failed (its contents are then what the
 * allocator left). `sstrides`: src's strides broadcast to dst's sizes. */
static kd_status copy_to_device_dst(kd_tensor *dst, const kd_tensor *src, int64_t *sstrides) {
  if (dst->numel == 0) return KD_OK;
  kd_device dev = dst->storage->device;
  kd_allocator a;
  kd_status st = copy_allocator(dst->storage, dev.type, dev, &a);
  if (st) return st;
  const kd_tensor *from = src;
  kd_tensor *tmp = NULL;
  if (src->storage->device.type != KD_DEVICE_CPU) {
    if ((st = kd_tensor_to_device(src, kd_device_cpu(), &tmp))) return st;
    from = tmp;
    broadcast_strides(dst, from, sstrides); /* same sizes: cannot fail */
  }
  int64_t isz = (int64_t)kd_dtype_size(dst->dtype);
  int64_t last = 0;
  for (int i = 0; i < dst->ndim; i++) last += (dst->sizes[i] - 1) * dst->strides[i];
  size_t span = (size_t)((last + 1) * isz);
  char *buf = kd__malloc(span);
  if (!buf) {
    kd_tensor_release(tmp);
    return kd_set_error(KD_ENOMEM, "kd_tensor_copy_: out of memory (%zu bytes of host memory)",
                        span);
  }
  char *first = (char *)dst->storage->data + dst->offset * isz;
  /* Gaps between dst's elements keep their bytes. */
  if ((int64_t)span != dst->numel * isz) st = device_copy(&a, true, dev, buf, first, span);
  if (st == KD_OK) {
    convert_strided(buf, dst->dtype, dst->strides, kd_tensor_data(from), from->dtype, sstrides,
                    dst->ndim, dst->sizes);
    st = device_copy(&a, false, dev, first, buf, span);
  }
  kd__free(buf);
  kd_tensor_release(tmp);
  return st;
}

kd_status kd_tensor_copy_(kd_tensor *dst, const kd_tensor *src) {
  static const char fn[] = "kd_tensor_copy_";
  if (!dst || !src) return kd_set_error(KD_EINVAL, "%s: NULL %s", fn, dst ? "src" : "dst");
  int64_t sstrides[KD_MAX_DIMS];
  kd_status st = broadcast_strides(dst, src, sstrides);
  if (st) return st;
  for (int i = 0; i < dst->ndim; i++)
    if (dst->sizes[i] > 1 && dst->strides[i] == 0)
      return kd_set_error(KD_EINVAL,
                          "%s: dst's elements overlap (dimension %d has size %lld and stride 0): "
                          "expected a dst whose elements do not share memory",
                          fn, i, (long long)dst->sizes[i]);
  kd_device_type dt = dst->storage->device.type, stype = src->storage->device.type;
  if (dt == KD_DEVICE_META) return KD_OK; /* nothing to write */
  if (stype == KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: src is a meta tensor: it has no data to copy into a %s tensor", fn,
                        kd_device_type_name(dt));
  if (dt != KD_DEVICE_CPU) return copy_to_device_dst(dst, src, sstrides);
  /* src on another device comes to the host first; src sharing dst's storage
   * is read completely before dst is written. */
  const kd_tensor *from = src;
  kd_tensor *tmp = NULL;
  if (stype != KD_DEVICE_CPU)
    st = kd_tensor_to_device(src, kd_device_cpu(), &tmp);
  else if (src->storage == dst->storage && dst->numel > 0)
    st = host_contiguous(src, src->dtype, &tmp);
  if (st) return st;
  if (tmp) {
    from = tmp;
    broadcast_strides(dst, from, sstrides); /* same sizes: cannot fail */
  }
  if (dst->numel > 0)
    convert_strided(kd_tensor_data(dst), dst->dtype, dst->strides, kd_tensor_data(from),
                    from->dtype, sstrides, dst->ndim, dst->sizes);
  kd_tensor_release(tmp);
  return KD_OK;
}
