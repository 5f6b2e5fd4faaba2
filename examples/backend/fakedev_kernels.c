/*
 * fakedev_kernels.c: what the fake device computes itself.
 *
 * The five primitives every factory and composite of libkdops is built from
 * (empty.memory_format, empty_strided, fill_.Scalar, copy_, resize_), plus
 * four kernels, one per form a kernel can take:
 *   neg         boxed, registered with a kernel key (float32, float64, int32, int64)
 *   add.Tensor  a closure (its data: the backend's context), kernel key
 *               (float32, float64, int64)
 *   mul.Tensor  a plain unboxed function, kernel key (float32 only)
 *   sum         a functor (its state, per table slot, from a constructor argument)
 * Every other operator, and the dtypes the kernel keys do not list, run on
 * the CPU through the CPU fallback the plugin turns on (fakedev_plugin.c).
 *
 * Kernels reach their context with kd_call_device_context, synchronize the
 * device (the copies queued before them must have landed) and then read and
 * write device memory through fakedev_read / fakedev_write, which undo and
 * apply the scrambling.
 */
#include <stdlib.h>
#include <string.h>

#include "fakedev.h"

/* ---- Helpers ------------------------------------------------------------------ */

/* The backend's context, from the call (no global lookup). */
static fakedev_ctx *ctx_of(const kd_call *call) {
  kd_device_context dc;
  if (kd_call_device_context(call, &dc) != KD_OK) return NULL;
  return dc.ctx;
}

static bool on_fakedev(const kd_tensor *t) {
  return kd_tensor_device(t).type == KD_DEVICE_PRIVATEUSE1;
}

/* Element `i` of t, where `offset` is its element offset from t's data: read
 * through the mask on the device, directly on the cpu. */
static void load(const kd_tensor *t, int64_t offset, void *elem) {
  size_t isz = kd_tensor_itemsize(t);
  const unsigned char *p = (const unsigned char *)kd_tensor_data(t) + offset * (int64_t)isz;
  if (on_fakedev(t))
    fakedev_read(kd_tensor_device(t).index, elem, p, isz);
  else
    memcpy(elem, p, isz);
}

static void store(kd_tensor *t, int64_t offset, const void *elem) {
  size_t isz = kd_tensor_itemsize(t);
  unsigned char *p = (unsigned char *)kd_tensor_data(t) + offset * (int64_t)isz;
  if (on_fakedev(t))
    fakedev_write(kd_tensor_device(t).index, p, elem, isz);
  else
    memcpy(p, elem, isz);
}

static double load_double(const kd_tensor *t, int64_t offset) {
  unsigned char elem[16];
  kd_scalar s;
  load(t, offset, elem);
  kd_scalar_from_element(elem, kd_tensor_dtype(t), &s);
  return kd_scalar_to_double(&s);
}

static int64_t load_int(const kd_tensor *t, int64_t offset) {
  unsigned char elem[16];
  kd_scalar s;
  load(t, offset, elem);
  kd_scalar_from_element(elem, kd_tensor_dtype(t), &s);
  return kd_scalar_to_int64(&s);
}

/* Stores a value of a real dtype: floating values round as a C cast does,
 * integers wrap modulo 2^bits (as PyTorch's integer arithmetic). */
static void store_double(kd_tensor *t, int64_t offset, double v) {
  unsigned char elem[8];
  switch (kd_tensor_dtype(t)) {
  case KD_FLOAT64: memcpy(elem, &v, 8); break;
  case KD_FLOAT32: { float f = (float)v; memcpy(elem, &f, 4); break; }
  case KD_FLOAT16: { uint16_t h = kd_float_to_half((float)v); memcpy(elem, &h, 2); break; }
  case KD_BFLOAT16: { uint16_t h = kd_float_to_bfloat16((float)v); memcpy(elem, &h, 2); break; }
  default: return;
  }
  store(t, offset, elem);
}

static void store_int(kd_tensor *t, int64_t offset, int64_t v) {
  unsigned char elem[8];
  if (kd_tensor_dtype(t) == KD_BOOL) v = v != 0;
  memcpy(elem, &v, 8); /* little-endian: the low bytes are the narrower integer */
  store(t, offset, elem);
}

static bool is_float(kd_dtype dt) { return kd_dtype_is_floating(dt); }

/* Row-major multi-index stepping over `sizes`; false after the last. */
static bool next_index(int nd, const int64_t *sizes, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    if (++idx[d] < sizes[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* t's strides as seen from an output of `nd` dimensions it broadcasts to
 * (right-aligned; 0 where t has size 1 or no dimension). */
static void broadcast_strides(const kd_tensor *t, int nd, int64_t *strides) {
  int tn = kd_tensor_ndim(t);
  for (int d = 0; d < nd; d++) {
    int td = d - (nd - tn);
    strides[d] = td < 0 || kd_tensor_sizes(t)[td] == 1 ? 0 : kd_tensor_strides(t)[td];
  }
}

static int64_t dot(int nd, const int64_t *idx, const int64_t *strides) {
  int64_t off = 0;
  for (int d = 0; d < nd; d++) off += idx[d] * strides[d];
  return off;
}

/* The broadcast sizes of a and b, as PyTorch's infer_size. */
static kd_status broadcast_sizes(const char *op, const kd_tensor *a, const kd_tensor *b, int *nd,
                                 int64_t *sizes) {
  int na = kd_tensor_ndim(a), nb = kd_tensor_ndim(b);
  *nd = na > nb ? na : nb;
  for (int d = 0; d < *nd; d++) {
    int da = d - (*nd - na), db = d - (*nd - nb);
    int64_t sa = da < 0 ? 1 : kd_tensor_sizes(a)[da], sb = db < 0 ? 1 : kd_tensor_sizes(b)[db];
    if (sa != sb && sa != 1 && sb != 1)
      return kd_set_error(KD_EINVAL,
                          "fakedev %s: The size of tensor a (%lld) must match the size of tensor "
                          "b (%lld) at non-singleton dimension %d",
                          op, (long long)sa, (long long)sb, d);
    sizes[d] = sa == 1 ? sb : sa;
  }
  return KD_OK;
}

/* Synchronizes the devices of the tensor arguments that are on fakedev. */
static kd_status sync_tensors(fakedev_ctx *ctx, kd_tensor *const *ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i] && on_fakedev(ts[i])) {
      kd_status st = fakedev_sync(ctx, kd_tensor_device(ts[i]));
      if (st) return st;
    }
  return KD_OK;
}

/* Row-major strides, or those of a channels-last format for 4 (5) dims. */
static kd_status format_strides(const char *op, int nd, const int64_t *sizes, kd_memory_format mf,
                                int64_t *strides) {
  int64_t step = 1;
  if (mf == KD_MEMORY_FORMAT_CHANNELS_LAST || mf == KD_MEMORY_FORMAT_CHANNELS_LAST_3D) {
    int want = mf == KD_MEMORY_FORMAT_CHANNELS_LAST ? 4 : 5;
    if (nd != want)
      return kd_set_error(KD_EINVAL, "fakedev %s: required rank %d tensor to use %s format", op,
                          want, kd_memory_format_name(mf));
    strides[1] = 1; /* channels innermost, then the spatial dims, then the batch */
    step = sizes[1] > 1 ? sizes[1] : 1;
    for (int d = nd - 1; d >= 2; d--) {
      strides[d] = step;
      step *= sizes[d] > 1 ? sizes[d] : 1;
    }
    strides[0] = step;
    return KD_OK;
  }
  for (int d = nd - 1; d >= 0; d--) {
    strides[d] = step;
    step *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return KD_OK;
}

/* The device a factory's `device` argument names, checked. */
static kd_status factory_device(const char *op, const kd_arg *device, kd_device *out) {
  kd_device d = device->opt.has ? device->opt.v.device : kd_current_device(KD_DEVICE_PRIVATEUSE1);
  if (d.type != KD_DEVICE_PRIVATEUSE1 || d.index < 0 || d.index >= FAKEDEV_DEVICE_COUNT) {
    char name[64];
    kd_device_format(d, name, sizeof name);
    return kd_set_error(KD_EINVAL, "fakedev %s: device %s is not a fakedev device (fakedev:0..%d)",
                        op, name, FAKEDEV_DEVICE_COUNT - 1);
  }
  *out = d;
  return KD_OK;
}

static kd_status factory_layout(const char *op, const kd_arg *layout) {
  if (layout->opt.has && layout->opt.v.layout != KD_LAYOUT_STRIDED)
    return kd_set_error(KD_EUNSUPPORTED, "fakedev %s: layout %s is not supported: expected strided",
                        op, kd_layout_name(layout->opt.v.layout));
  return KD_OK;
}

/* ---- The five primitives ---------------------------------------------------- */

/* empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None,
 *                     Device? device=None, bool? pin_memory=None,
 *                     MemoryFormat? memory_format=None) -> Tensor */
static kd_status k_empty(const kd_call *call, const kd_arg *a, kd_value *r) {
  fakedev_ctx *ctx = ctx_of(call);
  kd_device dev;
  kd_status st = factory_device("empty.memory_format", &a[3], &dev);
  if (st || (st = factory_layout("empty.memory_format", &a[2]))) return st;
  if (a[0].ints.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "fakedev empty.memory_format: %lld dimensions: at most %d",
                        (long long)a[0].ints.size, KD_MAX_DIMS);
  int nd = (int)a[0].ints.size;
  kd_dtype dt = a[1].opt.has ? a[1].opt.v.dtype : kd_get_default_dtype();
  kd_memory_format mf = a[5].opt.has ? a[5].opt.v.mf : KD_MEMORY_FORMAT_CONTIGUOUS;
  int64_t strides[KD_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    if (a[0].ints.data[d] < 0)
      return kd_set_error(KD_EINVAL,
                          "fakedev empty.memory_format: Trying to create tensor with negative "
                          "dimension %lld: [%lld]",
                          (long long)a[0].ints.data[d], (long long)a[0].ints.data[d]);
  if ((st = format_strides("empty.memory_format", nd, a[0].ints.data, mf, strides))) return st;
  kd_tensor *t;
  st = kd_tensor_empty_strided(nd, a[0].ints.data, strides, dt, dev, &t);
  if (st) return st;
  atomic_fetch_add(&ctx->calls[FAKEDEV_K_EMPTY], 1);
  r[0] = kd_value_tensor(t); /* the value takes its own reference */
  kd_tensor_release(t);
  return KD_OK;
}

/* empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None,
 *               Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor */
static kd_status k_empty_strided(const kd_call *call, const kd_arg *a, kd_value *r) {
  fakedev_ctx *ctx = ctx_of(call);
  kd_device dev;
  kd_status st = factory_device("empty_strided", &a[4], &dev);
  if (st || (st = factory_layout("empty_strided", &a[3]))) return st;
  if (a[0].ints.size != a[1].ints.size)
    return kd_set_error(KD_EINVAL,
                        "fakedev empty_strided: mismatch in length of strides and shape (%lld "
                        "sizes, %lld strides)",
                        (long long)a[0].ints.size, (long long)a[1].ints.size);
  if (a[0].ints.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "fakedev empty_strided: %lld dimensions: at most %d",
                        (long long)a[0].ints.size, KD_MAX_DIMS);
  kd_dtype dt = a[2].opt.has ? a[2].opt.v.dtype : kd_get_default_dtype();
  kd_tensor *t;
  st = kd_tensor_empty_strided((int)a[0].ints.size, a[0].ints.data, a[1].ints.data, dt, dev, &t);
  if (st) return st;
  atomic_fetch_add(&ctx->calls[FAKEDEV_K_EMPTY_STRIDED], 1);
  r[0] = kd_value_tensor(t);
  kd_tensor_release(t);
  return KD_OK;
}

/* Writes the values of cpu tensor `src` (broadcast to dst's sizes, converted
 * to dst's dtype) into dst, a fakedev tensor with any strides: the bytes dst
 * spans come to a host buffer (unless dst covers them all), the core's
 * kd_tensor_copy_ writes the values there, and the span goes back. */
static kd_status write_from_host(kd_tensor *dst, const kd_tensor *src) {
  int nd = kd_tensor_ndim(dst);
  int64_t numel = kd_tensor_numel(dst), extent = 1;
  if (numel == 0) return KD_OK;
  for (int d = 0; d < nd; d++) extent += (kd_tensor_sizes(dst)[d] - 1) * kd_tensor_strides(dst)[d];
  size_t isz = kd_tensor_itemsize(dst), nbytes = (size_t)extent * isz;
  int32_t index = kd_tensor_device(dst).index;
  void *buf = malloc(nbytes);
  if (!buf) return kd_set_error(KD_ENOMEM, "fakedev copy_: out of memory (%zu bytes)", nbytes);
  if (extent != numel) fakedev_read(index, buf, kd_tensor_data(dst), nbytes); /* the gaps */
  kd_storage *s = NULL;
  kd_tensor *view = NULL;
  kd_status st = kd_storage_wrap(kd_device_cpu(), buf, nbytes, free, buf, &s);
  if (st) {
    free(buf);
    return st;
  }
  st = kd_tensor_from_storage(s, 0, nd, kd_tensor_sizes(dst), kd_tensor_strides(dst),
                              kd_tensor_dtype(dst), &view);
  if (!st) st = kd_tensor_copy_(view, src);
  if (!st) fakedev_write(index, kd_tensor_data(dst), buf, nbytes);
  kd_tensor_release(view);
  kd_storage_release(s);
  return st;
}

/* A cpu tensor with t's values: t itself (a new reference) when on the cpu. */
static kd_status to_host(const char *op, kd_tensor *t, kd_tensor **out) {
  kd_device_type type = kd_tensor_device(t).type;
  if (type == KD_DEVICE_CPU) {
    kd_tensor_retain(t);
    *out = t;
    return KD_OK;
  }
  if (type == KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED, "fakedev %s: a meta tensor has no values to copy", op);
  return kd_tensor_to_device(t, kd_device_cpu(), out);
}

/* copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
 * Every copy that involves a fakedev tensor comes here: fakedev <- cpu,
 * fakedev <- fakedev (either index), cpu <- fakedev. */
static kd_status k_copy_(const kd_call *call, const kd_arg *a, kd_value *r) {
  fakedev_ctx *ctx = ctx_of(call);
  kd_tensor *self = a[0].t, *src = a[1].t, *host = NULL;
  if (kd_tensor_device(self).type == KD_DEVICE_META) { /* nothing to write */
    r[0] = kd_value_tensor_borrowed(self);
    return KD_OK;
  }
  kd_status st = sync_tensors(ctx, (kd_tensor *[]){self, src}, 2);
  if (!st) st = to_host("copy_", src, &host);
  if (st) return st;
  if (!on_fakedev(self))
    st = kd_tensor_copy_(self, host);
  else if (kd_tensor_is_contiguous(self) && kd_tensor_is_contiguous(host) &&
           kd_tensor_dtype(self) == kd_tensor_dtype(host) &&
           kd_tensor_ndim(self) == kd_tensor_ndim(host) &&
           !memcmp(kd_tensor_sizes(self), kd_tensor_sizes(host),
                   sizeof(int64_t) * (size_t)kd_tensor_ndim(self)))
    /* The common case, one copy of the bytes. */
    fakedev_write(kd_tensor_device(self).index, kd_tensor_data(self), kd_tensor_data(host),
                  (size_t)kd_tensor_numel(self) * kd_tensor_itemsize(self));
  else
    st = write_from_host(self, host);
  kd_tensor_release(host);
  if (st) return st;
  atomic_fetch_add(&ctx->calls[FAKEDEV_K_COPY], 1);
  r[0] = kd_value_tensor_borrowed(self); /* the (a!) return is the argument */
  return KD_OK;
}

/* fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!): a contiguous
 * tensor is filled on the device's queue (the record's fill); any other
 * goes through write_from_host with a 0-dim source. */
static kd_status k_fill_(const kd_call *call, const kd_arg *a, kd_value *r) {
  fakedev_ctx *ctx = ctx_of(call);
  kd_tensor *self = a[0].t;
  kd_dtype dt = kd_tensor_dtype(self);
  kd_status st;
  if (kd_tensor_is_contiguous(self)) {
    unsigned char elem[16];
    if ((st = kd_scalar_to_element(a[1].s, dt, elem))) return st;
    if (kd_tensor_numel(self) > 0) {
      kd_backend_iface b = fakedev_iface(ctx);
      st = b.fill(ctx, kd_tensor_device(self), kd_tensor_data(self), elem, kd_dtype_size(dt),
                  (size_t)kd_tensor_numel(self));
      if (st) return st;
    }
  } else {
    kd_tensor *value;
    if ((st = kd_tensor_from_scalar(a[1].s, dt, &value))) return st;
    if (!(st = fakedev_sync(ctx, kd_tensor_device(self)))) st = write_from_host(self, value);
    kd_tensor_release(value);
    if (st) return st;
  }
  atomic_fetch_add(&ctx->calls[FAKEDEV_K_FILL], 1);
  r[0] = kd_value_tensor_borrowed(self);
  return KD_OK;
}

/* resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)
 * The core grows the storage through the device's allocator and copies the
 * old bytes with the record's copy_device. */
static kd_status k_resize_(const kd_call *call, const kd_arg *a, kd_value *r) {
  fakedev_ctx *ctx = ctx_of(call);
  kd_tensor *self = a[0].t;
  if (a[1].ints.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "fakedev resize_: %lld dimensions: at most %d",
                        (long long)a[1].ints.size, KD_MAX_DIMS);
  int nd = (int)a[1].ints.size;
  int64_t strides[KD_MAX_DIMS];
  kd_memory_format mf = a[2].opt.has ? a[2].opt.v.mf : KD_MEMORY_FORMAT_CONTIGUOUS;
  if (mf == KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EINVAL, "fakedev resize_: unsupported memory format preserve_format");
  for (int d = 0; d < nd; d++)
    if (a[1].ints.data[d] < 0)
      return kd_set_error(KD_EINVAL,
                          "fakedev resize_: Trying to create tensor with negative dimension %lld",
                          (long long)a[1].ints.data[d]);
  kd_status st = format_strides("resize_", nd, a[1].ints.data, mf, strides);
  if (!st) st = fakedev_sync(ctx, kd_tensor_device(self));
  if (!st) st = kd_tensor_resize_(self, nd, a[1].ints.data, strides);
  if (st) return st;
  atomic_fetch_add(&ctx->calls[FAKEDEV_K_RESIZE], 1);
  r[0] = kd_value_tensor_borrowed(self);
  return KD_OK;
}

/* ---- Kernels in four forms ------------------------------------------------------ */

/* neg(Tensor self) -> Tensor, boxed: the argument is the top of the stack,
 * replaced by the result. A kernel key sends only the dtypes it lists here. */
static kd_status k_neg_boxed(const kd_call *call, kd_stack *stack) {
  fakedev_ctx *ctx = ctx_of(call);
  kd_tensor *self, *out;
  kd_status st = kd_value_get_tensor(kd_stack_peek(stack, 0), &self);
  if (!st) st = sync_tensors(ctx, &self, 1);
  if (!st) st = kd_tensor_empty(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_dtype(self),
                                kd_tensor_device(self), &out);
  if (st) return st;
  int nd = kd_tensor_ndim(self);
  int64_t idx[KD_MAX_DIMS] = {0};
  if (kd_tensor_numel(self) > 0) {
    int64_t i = 0;
    do {
      int64_t off = dot(nd, idx, kd_tensor_strides(self));
      if (is_float(kd_tensor_dtype(self)))
        store_double(out, i, -load_double(self, off));
      else
        store_int(out, i, (int64_t)(0 - (uint64_t)load_int(self, off)));
      i++;
    } while (next_index(nd, kd_tensor_sizes(self), idx));
  }
  kd_stack_drop(stack, 1);
  st = kd_stack_push_tensor(stack, out); /* the stack takes its own reference */
  kd_tensor_release(out);
  if (st) return st;
  atomic_fetch_add(&ctx->calls[FAKEDEV_K_NEG], 1);
  return KD_OK;
}

/* add.Tensor and mul.Tensor: out = self + alpha * other, or self * other,
 * broadcast, with PyTorch's result type. `other` may be of any dtype and on
 * the cpu (a 0-dim tensor, or a wrapped number): its argument definition
 * says so (args_other_anywhere). */
typedef enum { BIN_ADD, BIN_MUL } bin_op;

static kd_status binary(fakedev_ctx *ctx, const char *name, bin_op op, kd_tensor *self,
                        kd_tensor *other, const kd_scalar *alpha, kd_value *r) {
  kd_result_type_state rt;
  kd_result_type_init(&rt);
  kd_tensor *ops[2] = {self, other};
  for (int i = 0; i < 2; i++) {
    if (kd_tensor_is_wrapped_number(ops[i]))
      kd_result_type_add_scalar(&rt, kd_tensor_dtype(ops[i]));
    else
      kd_result_type_add_tensor(&rt, kd_tensor_dtype(ops[i]), kd_tensor_ndim(ops[i]));
  }
  kd_dtype dt = kd_result_type_finish(&rt);
  if (kd_dtype_is_complex(dt) || dt == KD_BOOL)
    return kd_set_error(KD_EUNSUPPORTED, "fakedev %s: result dtype %s is not supported here", name,
                        kd_dtype_name(dt));
  bool fl = is_float(dt);
  if (!fl && alpha && alpha->kind != KD_SCALAR_INT && alpha->kind != KD_SCALAR_BOOL)
    return kd_set_error(KD_EINVAL,
                        "fakedev %s: For integral input tensors, argument alpha must not be a "
                        "floating point number.",
                        name);
  int nd;
  int64_t sizes[KD_MAX_DIMS], sa[KD_MAX_DIMS], sb[KD_MAX_DIMS], idx[KD_MAX_DIMS] = {0};
  kd_tensor *out;
  kd_status st = broadcast_sizes(name, self, other, &nd, sizes);
  if (!st) st = sync_tensors(ctx, ops, 2);
  if (!st) st = kd_tensor_empty(nd, sizes, dt, kd_tensor_device(self), &out);
  if (st) return st;
  broadcast_strides(self, nd, sa);
  broadcast_strides(other, nd, sb);
  double af = alpha ? kd_scalar_to_double(alpha) : 1;
  int64_t ai = alpha ? kd_scalar_to_int64(alpha) : 1;
  if (kd_tensor_numel(out) > 0) {
    int64_t i = 0;
    do {
      int64_t oa = dot(nd, idx, sa), ob = dot(nd, idx, sb);
      if (fl) {
        double x = load_double(self, oa), y = load_double(other, ob);
        store_double(out, i, op == BIN_ADD ? x + af * y : x * y);
      } else {
        uint64_t x = (uint64_t)load_int(self, oa), y = (uint64_t)load_int(other, ob);
        store_int(out, i, (int64_t)(op == BIN_ADD ? x + (uint64_t)ai * y : x * y));
      }
      i++;
    } while (next_index(nd, sizes, idx));
  }
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  atomic_fetch_add(&ctx->calls[op == BIN_ADD ? FAKEDEV_K_ADD : FAKEDEV_K_MUL], 1);
  return KD_OK;
}

/* add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor, a
 * closure: call->data is what the registration gave (the context). */
static kd_status k_add_closure(const kd_call *call, const kd_arg *a, kd_value *r) {
  fakedev_ctx *ctx = call->data;
  return binary(ctx, "add.Tensor", BIN_ADD, a[0].t, a[1].t, a[2].s, r);
}

/* mul.Tensor(Tensor self, Tensor other) -> Tensor, a plain function. */
static kd_status k_mul(const kd_call *call, const kd_arg *a, kd_value *r) {
  return binary(ctx_of(call), "mul.Tensor", BIN_MUL, a[0].t, a[1].t, NULL, r);
}

/* sum(Tensor self, *, ScalarType? dtype=None) -> Tensor, a functor: each
 * table slot gets a state made from the constructor argument, the number of
 * partial sums ("lanes") the reduction keeps, as a device would. */
typedef struct sum_state {
  fakedev_ctx *ctx;
  int64_t lanes;
} sum_state;

static kd_status sum_create(void *data, const kd_value *ctor_args, size_t n, void **state) {
  int64_t lanes = 8;
  if (n >= 1 && kd_value_get_int(&ctor_args[0], &lanes)) return kd_last_status();
  if (lanes < 1 || lanes > 64)
    return kd_set_error(KD_EINVAL, "fakedev sum: %lld lanes: expected 1..64", (long long)lanes);
  sum_state *s = malloc(sizeof *s);
  if (!s) return kd_set_error(KD_ENOMEM, "fakedev sum: out of memory");
  s->ctx = data;
  s->lanes = lanes;
  *state = s;
  return KD_OK;
}

static void sum_destroy(void *state) { free(state); }

static kd_status k_sum_functor(const kd_call *call, const kd_arg *a, kd_value *r) {
  const sum_state *s = call->data; /* a functor's call->data is its slot's state */
  kd_tensor *self = a[0].t, *out;
  kd_dtype in = kd_tensor_dtype(self);
  kd_dtype dt = a[1].opt.has ? a[1].opt.v.dtype
                             : (kd_dtype_is_integral(in, true) ? KD_INT64 : in);
  if (kd_dtype_is_complex(dt) || kd_dtype_is_complex(in) || dt == KD_BOOL)
    return kd_set_error(KD_EUNSUPPORTED, "fakedev sum: dtype %s is not supported here (input %s)",
                        kd_dtype_name(dt), kd_dtype_name(in));
  kd_status st = sync_tensors(s->ctx, &self, 1);
  if (!st) st = kd_tensor_empty(0, NULL, dt, kd_tensor_device(self), &out);
  if (st) return st;
  double fsum[64] = {0};
  uint64_t isum[64] = {0};
  bool fl = is_float(dt);
  int nd = kd_tensor_ndim(self);
  int64_t idx[KD_MAX_DIMS] = {0}, i = 0;
  if (kd_tensor_numel(self) > 0) do {
      int64_t off = dot(nd, idx, kd_tensor_strides(self));
      if (fl)
        fsum[i % s->lanes] += load_double(self, off);
      else
        isum[i % s->lanes] += (uint64_t)load_int(self, off);
      i++;
    } while (next_index(nd, kd_tensor_sizes(self), idx));
  double ft = 0;
  uint64_t it = 0;
  for (int64_t l = 0; l < s->lanes; l++) {
    ft += fsum[l];
    it += isum[l];
  }
  if (fl)
    store_double(out, 0, ft);
  else
    store_int(out, 0, (int64_t)it);
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  atomic_fetch_add(&s->ctx->calls[FAKEDEV_K_SUM], 1);
  return KD_OK;
}

/* fakedev::noop(Tensor self) -> (): does nothing (kd-bench's typed call;
 * aligned as kd-bench's CPU no-op is, so that the two compare). */
__attribute__((aligned(64))) static kd_status k_noop(const kd_call *call, const kd_arg *a, kd_value *r) {
  (void)call, (void)a, (void)r;
  return KD_OK;
}

/* ---- Registration ------------------------------------------------------------ */

/* The argument definitions of add and mul: `other` (argument 1) is used
 * wherever it lives and whatever its dtype (the kernel reads both). */
static void args_other_anywhere(kd_kernel_args *args, kd_dtype dtype, void *user_data) {
  (void)dtype, (void)user_data;
  kd_kernel_args_input(args, 1, KD_ARGDEF_BACKEND, KD_ALL_BACKEND);
  kd_kernel_args_input(args, 1, KD_ARGDEF_DTYPE, KD_ALL_DTYPE);
  kd_kernel_args_output(args, 0, KD_ARGDEF_DTYPE, KD_ALL_DTYPE); /* promotion decides */
}

static kd_status keyed(kd_library *lib, const char *op, const kd_kernel *k, const kd_dtype *dts,
                       size_t n) {
  kd_keyed_kernel spec = {KD_KEYED_KERNEL_VERSION, KD_ALL_LAYOUT, kd_dtype_set_of(dts, n), k, 0,
                          -1, args_other_anywhere, NULL};
  if (!strcmp(op, "neg")) spec.args = NULL; /* one argument: the defaults */
  return kd_library_impl_keyed_ex(lib, op, &spec, NULL);
}

kd_status fakedev_register_kernels(kd_plugin *plugin, fakedev_ctx *ctx) {
  kd_library *aten, *def, *impl;
  kd_status st = kd_plugin_library(plugin, KD_LIBRARY_IMPL, "aten", KD_KEY_PRIVATEUSE1, &aten);
  if (st) return st;
  /* The primitives: plain unboxed functions with their C signatures. */
  const struct {
    const char *op, *sig;
    kd_unboxed_fn fn;
  } prims[] = {
      {"empty.memory_format", "(int[], ScalarType?, Layout?, Device?, bool?, MemoryFormat?) -> Tensor",
       k_empty},
      {"empty_strided", "(int[], int[], ScalarType?, Layout?, Device?, bool?) -> Tensor",
       k_empty_strided},
      {"fill_.Scalar", "(Tensor, Scalar) -> Tensor", k_fill_},
      {"copy_", "(Tensor, Tensor, bool) -> Tensor", k_copy_},
      {"resize_", "(Tensor, int[], MemoryFormat?) -> Tensor", k_resize_},
  };
  for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++) {
    kd_kernel k = kd_kernel_unboxed(prims[i].fn, prims[i].sig);
    if ((st = kd_library_impl(aten, prims[i].op, &k, NULL))) return st;
  }
  /* Boxed, with a kernel key: neg for four dtypes. */
  kd_kernel neg = kd_kernel_boxed(k_neg_boxed);
  if ((st = keyed(aten, "neg", &neg, (const kd_dtype[]){KD_FLOAT32, KD_FLOAT64, KD_INT32, KD_INT64},
                  4)))
    return st;
  /* A closure with a kernel key: add.Tensor; its data is the context (owned
   * by the plugin, so no destroy_data). */
  kd_kernel add = kd_kernel_closure(k_add_closure, "(Tensor, Tensor, Scalar) -> Tensor", ctx, NULL);
  if ((st = keyed(aten, "add.Tensor", &add, (const kd_dtype[]){KD_FLOAT32, KD_FLOAT64, KD_INT64},
                  3)))
    return st;
  /* A plain function with a kernel key: mul.Tensor, float32 only. */
  kd_kernel mul = kd_kernel_unboxed(k_mul, "(Tensor, Tensor) -> Tensor");
  if ((st = keyed(aten, "mul.Tensor", &mul, (const kd_dtype[]){KD_FLOAT32}, 1))) return st;
  /* A functor: sum, with 8 lanes. */
  kd_value lanes = kd_value_int(8);
  kd_kernel sum = kd_kernel_unboxed(k_sum_functor, "(Tensor, ScalarType?) -> Tensor");
  sum.kind = KD_KERNEL_FUNCTOR;
  sum.data = ctx;
  sum.create = sum_create;
  sum.destroy = sum_destroy;
  sum.ctor_args = &lanes;
  sum.nctor_args = 1;
  if ((st = kd_library_impl(aten, "sum", &sum, NULL))) return st;
  /* Everything else: the CPU fallback, for every operator of this key
   * (unregistering the backend at unload turns it off again). */
  if ((st = kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true))) return st;
  /* An operator of the plugin's own, for kd-bench's typed call: defined
   * here, implemented for the device here and for the CPU by kd-bench. */
  kd_kernel noop = kd_kernel_unboxed(k_noop, "(Tensor) -> ()");
  if ((st = kd_plugin_library(plugin, KD_LIBRARY_DEF, "fakedev", KD_KEY_UNDEFINED, &def)) ||
      (st = kd_library_def(def, "noop(Tensor self) -> ()", NULL, 0, NULL)) ||
      (st = kd_plugin_library(plugin, KD_LIBRARY_IMPL, "fakedev", KD_KEY_PRIVATEUSE1, &impl)))
    return st;
  return kd_library_impl(impl, "noop", &noop, NULL);
}
