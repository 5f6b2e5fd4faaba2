/*
 * fakegen_kernels.c: everything fakegen_functions.h asks the author for,
 * except the device record: the primitives (Customized, unstructured), the
 * loops of the stubs the Legacy groups' upstream impls call (add_stub,
 * mul_stub), the impl of the LegacyMeta group (neg), the meta and impl of the
 * Customized group (sub), the unstructured exp.out (structured: False) and
 * the new operator fakegen::scale_add, and its AutogradPrivateUse1 kernel.
 *
 * Every kernel synchronizes the devices of its operands first (copies queued
 * before it must have landed) and reads and writes device memory through
 * fakedev_read / fakedev_write, which undo and apply the scrambling.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fakegen.h"
#include "fakegen_direct.h"

/* ---- Elements ------------------------------------------------------------------- */

static bool on_dev(const kd_tensor *t) { return kd_tensor_device(t).type == KD_DEVICE_PRIVATEUSE1; }

static kd_status sync_dev(const kd_tensor *t) {
  return t && on_dev(t) ? fakedev_sync(fakegen_ctx(), kd_tensor_device(t)) : KD_OK;
}

/* The generated wrapper's device_guard made the operand's device current
 * (docs/CODEGEN.md, "Device check and guard"). */
static kd_status current_is(const kd_tensor *t, const char *who) {
  kd_device cur = kd_current_device(KD_DEVICE_PRIVATEUSE1);
  if (t && on_dev(t) && cur.index != kd_tensor_device(t).index)
    return kd_set_error(KD_ESTATE, "%s (fakegen): the current device is fakedev:%d, not the operand's fakedev:%d",
                        who, (int)cur.index, (int)kd_tensor_device(t).index);
  return KD_OK;
}

static bool supported(kd_dtype dt) {
  return dt == KD_FLOAT32 || dt == KD_FLOAT64 || dt == KD_INT32 || dt == KD_INT64;
}

static bool is_int(kd_dtype dt) { return dt == KD_INT32 || dt == KD_INT64; }

/* One element: exact for integers, a double otherwise. */
typedef struct num {
  int64_t i;
  double d;
} num;

static num get(int32_t index, kd_dtype dt, const char *p) {
  unsigned char b[8];
  fakedev_read(index, b, p, kd_dtype_size(dt));
  num v = {0, 0};
  switch (dt) {
  case KD_FLOAT32: { float f; memcpy(&f, b, 4); v.d = f; break; }
  case KD_FLOAT64: memcpy(&v.d, b, 8); break;
  case KD_INT32: { int32_t x; memcpy(&x, b, 4); v.i = x; v.d = (double)x; break; }
  default: memcpy(&v.i, b, 8); v.d = (double)v.i; break;
  }
  return v;
}

static void put(int32_t index, kd_dtype dt, char *p, num v) {
  unsigned char b[8];
  switch (dt) {
  case KD_FLOAT32: { float f = (float)v.d; memcpy(b, &f, 4); break; }
  case KD_FLOAT64: memcpy(b, &v.d, 8); break;
  case KD_INT32: { int32_t x = (int32_t)v.i; memcpy(b, &x, 4); break; }
  default: memcpy(b, &v.i, 8); break;
  }
  fakedev_write(index, p, b, kd_dtype_size(dt));
}

static kd_status not_implemented(const char *op, kd_dtype dt) {
  return kd_set_error(KD_ETYPE, "\"%s_fakegen\" not implemented for '%s'", op, kd_dtype_name(dt));
}

/* ---- Loops over an iterator (outputs first, then inputs) ------------------------ */

typedef enum { L_ADD, L_MUL, L_NEG } loop_op;

typedef struct loop_ctx {
  loop_op op;
  int nt;
  int32_t index;
  kd_dtype dt; /* every operand's (the builders promote to the common dtype) */
  num alpha;
} loop_ctx;

static void loop2d(void *vctx, char **data, const int64_t *strides, int64_t size0, int64_t size1) {
  const loop_ctx *c = vctx;
  bool ints = is_int(c->dt);
  for (int64_t j = 0; j < size1; j++)
    for (int64_t i = 0; i < size0; i++) {
      char *p[3] = {data[0], data[0], data[0]}; /* run() checks nt: 2 (neg) or 3 */
      for (int k = 0; k < c->nt && k < 3; k++) p[k] = data[k] + i * strides[k] + j * strides[c->nt + k];
      num a = get(c->index, c->dt, p[1]), r = {0, 0};
      num b = c->op == L_NEG ? a : get(c->index, c->dt, p[2]);
      switch (c->op) {
      case L_ADD:
        if (ints) r.i = (int64_t)((uint64_t)a.i + (uint64_t)c->alpha.i * (uint64_t)b.i);
        else r.d = a.d + c->alpha.d * b.d;
        break;
      case L_MUL:
        if (ints) r.i = (int64_t)((uint64_t)a.i * (uint64_t)b.i);
        else r.d = a.d * b.d;
        break;
      case L_NEG:
        if (ints) r.i = (int64_t)(0u - (uint64_t)a.i);
        else r.d = -a.d;
        break;
      }
      put(c->index, c->dt, p[0], r);
    }
}

/* Runs op over the iterator on the device of its first output. */
static kd_status run(const char *name, kdk_iter *iter, loop_op op, const kd_scalar *alpha) {
  loop_ctx c = {op, kdk_iter_ntensors(iter), 0, kdk_iter_dtype(iter, 0), {1, 1.0}};
  for (int k = 0; k < c.nt; k++) {
    kd_dtype dt = kdk_iter_dtype(iter, k);
    if (dt != c.dt || !supported(dt)) return not_implemented(name, dt);
  }
  if (c.nt != (op == L_NEG ? 2 : 3) || kdk_iter_noutputs(iter) != 1)
    return kd_set_error(KD_EINTERNAL, "%s_fakegen: expected one output and %d inputs, got %d operands",
                        name, op == L_NEG ? 1 : 2, c.nt);
  const kd_tensor *out = kdk_iter_output(iter, 0);
  c.index = kd_tensor_device(out).index;
  for (int k = 0; k < kdk_iter_noutputs(iter); k++) {
    kd_status st = sync_dev(kdk_iter_output(iter, k));
    if (st) return st;
  }
  for (int k = 0; k < kdk_iter_ninputs(iter); k++) {
    const kd_tensor *in = kdk_iter_input(iter, k);
    if (!on_dev(in) || kd_tensor_device(in).index != c.index)
      return kd_set_error(KD_EINVAL, "%s_fakegen: input %d is not on the output's device", name, k);
    kd_status st = sync_dev(in);
    if (st) return st;
  }
  if (alpha) {
    c.alpha.i = kd_scalar_to_int64(alpha);
    c.alpha.d = kd_scalar_to_double(alpha);
  }
  kdk_iter_serial_for_each(iter, loop2d, &c);
  return KD_OK;
}

/* The stub loops of the Legacy groups: libkdops' kdk_native_add_out_cpu and
 * kdk_native_mul_out_cpu call them for fakedev tensors. */
kd_status fakegen_add_stub(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p1;
  return run("add", iter, L_ADD, p0);
}

kd_status fakegen_mul_stub(kdk_iter *iter, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return run("mul", iter, L_MUL, NULL);
}

/* LegacyMeta: libkdops' meta built the unary iterator. */
kd_status fakegen_neg_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self, kd_tensor *out) {
  (void)s, (void)out;
  kd_status st = current_is(self, "neg.out");
  return st ? st : run("neg", iter, L_NEG, NULL);
}

/* Customized: the backend's own meta (the same checks as libkdops' sub) ... */
kd_status fakegen_meta_sub_Tensor(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                  kd_tensor *other, const kd_scalar *alpha) {
  (void)s, (void)alpha;
  if (kd_tensor_dtype(self) == KD_BOOL || kd_tensor_dtype(other) == KD_BOOL)
    return kd_set_error(KD_EINVAL,
                        "fakegen sub: Subtraction, the `-` operator, with a bool tensor is not "
                        "supported. If you are trying to invert a mask, use the `~` or "
                        "`logical_not()` operator instead.");
  return kdk_iter_build_binary_op(iter, NULL, self, other);
}

/* ... and impl: out = self - alpha * other. */
kd_status fakegen_sub_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self, kd_tensor *other,
                          const kd_scalar *alpha, kd_tensor *out) {
  (void)s, (void)self, (void)other, (void)out;
  kd_scalar neg = alpha ? *alpha : kd_scalar_int(1);
  if (neg.kind == KD_SCALAR_DOUBLE) neg.v.d = -neg.v.d;
  else if (neg.kind == KD_SCALAR_INT) neg.v.i = (int64_t)(0u - (uint64_t)neg.v.i);
  else return kd_set_error(KD_EINVAL, "sub_fakegen: alpha must be a real number");
  return run("sub", iter, L_ADD, &neg);
}

/* ---- Unstructured kernels: element by element over sizes and strides ------------ */

/* Calls fn(i, offset_a, offset_b) for every element of sizes (row-major
 * order), offsets in elements of two strided layouts. */
static void walk(int nd, const int64_t *sizes, const int64_t *sa, const int64_t *sb,
                 void (*fn)(void *, int64_t, int64_t), void *ctx) {
  int64_t n = 1, idx[KD_MAX_DIMS] = {0};
  for (int d = 0; d < nd; d++) n *= sizes[d];
  for (int64_t e = 0; e < n; e++) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < nd; d++) {
      oa += idx[d] * sa[d];
      ob += idx[d] * (sb ? sb[d] : 0);
    }
    fn(ctx, oa, ob);
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

typedef struct ew_ctx {
  int32_t index;
  const kd_tensor *dst, *a;
} ew_ctx;

static char *at(const kd_tensor *t, int64_t off) {
  return (char *)kd_tensor_data(t) + off * (int64_t)kd_tensor_itemsize(t);
}

static bool same_sizes(const kd_tensor *a, const kd_tensor *b) {
  return kd_tensor_ndim(a) == kd_tensor_ndim(b) &&
         !memcmp(kd_tensor_sizes(a), kd_tensor_sizes(b), sizeof(int64_t) * (size_t)kd_tensor_ndim(a));
}

static void exp_elem(void *vctx, int64_t od, int64_t oa) {
  const ew_ctx *c = vctx;
  num v = get(c->index, kd_tensor_dtype(c->a), at(c->a, oa));
  num r = {0, exp(v.d)};
  put(c->index, kd_tensor_dtype(c->dst), at(c->dst, od), r);
}

/* exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!), unstructured here:
 * resizes out to self's sizes, as a structured out variant would. */
kd_status fakegen_exp_out(kd_tensor *self, kd_tensor *out) {
  kd_dtype dt = kd_tensor_dtype(out);
  kd_status cst = current_is(self, "exp.out");
  if (cst) return cst;
  if (!on_dev(self) || !on_dev(out) || kd_tensor_device(self).index != kd_tensor_device(out).index)
    return kd_set_error(KD_EINVAL, "exp.out (fakegen): self and out must be on one fakedev device");
  if (!supported(kd_tensor_dtype(self))) return not_implemented("exp", kd_tensor_dtype(self));
  if (dt != KD_FLOAT32 && dt != KD_FLOAT64)
    return kd_set_error(KD_ETYPE, "exp.out (fakegen): result type %s can't be cast to the desired "
                        "output type %s", "float32", kd_dtype_name(dt));
  kd_status st;
  if ((st = sync_dev(self)) || (st = sync_dev(out))) return st;
  if (!same_sizes(self, out)) {
    int nd = kd_tensor_ndim(self);
    int64_t strides[KD_MAX_DIMS], step = 1;
    for (int d = nd - 1; d >= 0; d--) {
      strides[d] = step;
      step *= kd_tensor_sizes(self)[d] > 1 ? kd_tensor_sizes(self)[d] : 1;
    }
    if ((st = kd_tensor_resize_(out, nd, kd_tensor_sizes(self), strides))) return st;
    if ((st = sync_dev(out))) return st;
  }
  ew_ctx c = {kd_tensor_device(out).index, out, self};
  walk(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_strides(out), kd_tensor_strides(self),
       exp_elem, &c);
  return KD_OK;
}

/* fakegen::scale_add(Tensor self, Tensor other, float alpha) -> Tensor: a new
 * operator; self and other of one float dtype and one shape. */
kd_status fakegen_scale_add(kd_tensor *self, kd_tensor *other, double alpha, kd_tensor **out) {
  kd_dtype dt = kd_tensor_dtype(self);
  kd_status cst = current_is(self, "fakegen::scale_add");
  if (cst) return cst;
  if (dt != kd_tensor_dtype(other) || (dt != KD_FLOAT32 && dt != KD_FLOAT64))
    return kd_set_error(KD_ETYPE, "fakegen::scale_add: expected self and other of one floating "
                        "dtype, got %s and %s", kd_dtype_name(dt), kd_dtype_name(kd_tensor_dtype(other)));
  if (!same_sizes(self, other))
    return kd_set_error(KD_EINVAL, "fakegen::scale_add: self and other must have the same sizes");
  if (!on_dev(self) || !on_dev(other) || kd_tensor_device(self).index != kd_tensor_device(other).index)
    return kd_set_error(KD_EINVAL, "fakegen::scale_add: self and other must be on one fakedev device");
  kd_status st;
  if ((st = sync_dev(self)) || (st = sync_dev(other))) return st;
  kd_tensor *r;
  if ((st = kd_tensor_empty(kd_tensor_ndim(self), kd_tensor_sizes(self), dt, kd_tensor_device(self), &r)))
    return st;
  int32_t index = kd_tensor_device(self).index;
  int nd = kd_tensor_ndim(self);
  int64_t n = kd_tensor_numel(self), idx[KD_MAX_DIMS] = {0};
  for (int64_t e = 0; e < n; e++) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < nd; d++) {
      oa += idx[d] * kd_tensor_strides(self)[d];
      ob += idx[d] * kd_tensor_strides(other)[d];
    }
    num a = get(index, dt, at(self, oa)), b = get(index, dt, at(other, ob));
    num v = {0, a.d + alpha * b.d};
    put(index, dt, at(r, e), v);
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < kd_tensor_sizes(self)[d]) break;
      idx[d] = 0;
    }
  }
  *out = r;
  return KD_OK;
}

/* ---- The primitives (Customized, unstructured) ---------------------------------- */

static kd_status factory_device(const char *op, const kd_device *device, kd_device *out) {
  kd_device d = device ? *device : kd_current_device(KD_DEVICE_PRIVATEUSE1);
  if (d.type != KD_DEVICE_PRIVATEUSE1 || d.index < 0 || d.index >= FAKEDEV_DEVICE_COUNT) {
    char name[64];
    kd_device_format(d, name, sizeof name);
    return kd_set_error(KD_EINVAL, "fakegen %s: device %s is not a fakedev device (fakedev:0..%d)",
                        op, name, FAKEDEV_DEVICE_COUNT - 1);
  }
  *out = d;
  return KD_OK;
}

static kd_status strided_layout(const char *op, const kd_layout *layout) {
  if (layout && *layout != KD_LAYOUT_STRIDED)
    return kd_set_error(KD_EUNSUPPORTED, "fakegen %s: layout %s is not supported: expected strided",
                        op, kd_layout_name(*layout));
  return KD_OK;
}

kd_status fakegen_empty_memory_format(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                                      const kd_device *device, const bool *pin_memory,
                                      const kd_memory_format *memory_format, kd_tensor **out) {
  (void)pin_memory;
  kd_device dev;
  kd_status st = factory_device("empty.memory_format", device, &dev);
  if (st || (st = strided_layout("empty.memory_format", layout))) return st;
  if (memory_format && *memory_format != KD_MEMORY_FORMAT_CONTIGUOUS &&
      *memory_format != KD_MEMORY_FORMAT_PRESERVE)
    return kd_set_error(KD_EUNSUPPORTED, "fakegen empty.memory_format: only contiguous tensors");
  if (size.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "fakegen empty.memory_format: %lld dimensions: at most %d",
                        (long long)size.size, KD_MAX_DIMS);
  for (int64_t d = 0; d < size.size; d++)
    if (size.data[d] < 0)
      return kd_set_error(KD_EINVAL,
                          "fakegen empty.memory_format: Trying to create tensor with negative "
                          "dimension %lld",
                          (long long)size.data[d]);
  return kd_tensor_empty((int)size.size, size.data, dtype ? *dtype : kd_get_default_dtype(), dev, out);
}

kd_status fakegen_empty_strided(kd_ints size, kd_ints stride, const kd_dtype *dtype,
                                const kd_layout *layout, const kd_device *device,
                                const bool *pin_memory, kd_tensor **out) {
  (void)pin_memory;
  kd_device dev;
  kd_status st = factory_device("empty_strided", device, &dev);
  if (st || (st = strided_layout("empty_strided", layout))) return st;
  if (size.size != stride.size)
    return kd_set_error(KD_EINVAL,
                        "fakegen empty_strided: mismatch in length of strides and shape (%lld "
                        "sizes, %lld strides)",
                        (long long)size.size, (long long)stride.size);
  if (size.size > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "fakegen empty_strided: %lld dimensions: at most %d",
                        (long long)size.size, KD_MAX_DIMS);
  return kd_tensor_empty_strided((int)size.size, size.data, stride.data,
                                 dtype ? *dtype : kd_get_default_dtype(), dev, out);
}

/* Writes the values of cpu tensor src (broadcast to dst's sizes, converted to
 * dst's dtype) into dst, a fakedev tensor of any strides, through a host
 * buffer spanning dst's bytes. */
static kd_status write_from_host(kd_tensor *dst, const kd_tensor *src) {
  int nd = kd_tensor_ndim(dst);
  int64_t numel = kd_tensor_numel(dst), extent = 1;
  if (numel == 0) return KD_OK;
  for (int d = 0; d < nd; d++) extent += (kd_tensor_sizes(dst)[d] - 1) * kd_tensor_strides(dst)[d];
  size_t nbytes = (size_t)extent * kd_tensor_itemsize(dst);
  int32_t index = kd_tensor_device(dst).index;
  void *buf = malloc(nbytes);
  if (!buf) return kd_set_error(KD_ENOMEM, "fakegen copy_: out of memory (%zu bytes)", nbytes);
  fakedev_read(index, buf, kd_tensor_data(dst), nbytes); /* the gaps keep their values */
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

kd_status fakegen_fill_scalar(kd_tensor *self, const kd_scalar *value) {
  kd_tensor *v;
  kd_status st = kd_tensor_from_scalar(value, kd_tensor_dtype(self), &v);
  if (st) return st;
  if (!(st = sync_dev(self))) st = write_from_host(self, v);
  kd_tensor_release(v);
  return st;
}

/* Every copy that involves a fakedev tensor: fakedev <- cpu, fakedev <-
 * fakedev (either index), cpu <- fakedev. */
kd_status fakegen_copy_(kd_tensor *self, kd_tensor *src, bool non_blocking) {
  (void)non_blocking;
  if (kd_tensor_device(self).type == KD_DEVICE_META) return KD_OK;
  kd_status st;
  if ((st = sync_dev(self)) || (st = sync_dev(src))) return st;
  kd_tensor *host;
  if (kd_tensor_device(src).type == KD_DEVICE_CPU) {
    kd_tensor_retain(src);
    host = src;
  } else if ((st = kd_tensor_to_device(src, kd_device_cpu(), &host))) {
    return st;
  }
  st = on_dev(self) ? write_from_host(self, host) : kd_tensor_copy_(self, host);
  kd_tensor_release(host);
  return st;
}

/* fakegen::scale_add at AutogradPrivateUse1 (every fakedev tensor carries
 * that key): where an autograd layer would record the operation for its
 * backward pass before running the backend's kernel below it; here it only
 * runs it, through the generated direct call (which checks the devices and
 * makes the operand's device current, as the dispatcher's path does). The
 * generated wrapper of this kernel has no device guard: it runs above the
 * device. */
kd_status fakegen_scale_add_autograd(kd_tensor *self, kd_tensor *other, double alpha, kd_tensor **out) {
#if KD_SHOULD_REGISTER(fakegen, scale_add, PRIVATEUSE1)
  return kd_fakegen_scale_add(self, other, alpha, out);
#else
  (void)self;
  (void)other;
  (void)alpha;
  *out = NULL;
  return kd_set_error(KD_ENOKERNEL, "fakegen::scale_add: this selective build has no PrivateUse1 "
                      "kernel to run below AutogradPrivateUse1");
#endif
}
