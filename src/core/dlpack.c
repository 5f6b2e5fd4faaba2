/*
 * dlpack.c: DLPack export and import, both forms (DLManagedTensor and
 * DLPack 1.x's DLManagedTensorVersioned), compiled against the DLPack header
 * kdispatch ships (include/kd/dlpack/dlpack.h).
 */
#include "backend/backend_impl.h"
#include "core/checked.h"
#include "core/tensor_impl.h"
#include "kd/dlpack.h"

/* The library is built against its own DLPack 1.x header, never a system one
 * (which would have come first and taken its include guard). */
#if !defined(KD_DLPACK_VENDORED) || DLPACK_MAJOR_VERSION != 1
#error "src/core/dlpack.c must be compiled against include/kd/dlpack/dlpack.h (DLPack 1.x)"
#endif

static kd_status dtype_to_dl(kd_dtype dt, DLDataType *out) {
  out->lanes = 1;
  out->bits = (uint8_t)(kd_dtype_size(dt) * 8);
  switch (kd_dtype_kind_of(dt)) {
    case KD_KIND_BOOL:
      out->code = kDLBool;
      return KD_OK;
    case KD_KIND_UINT:
      out->code = kDLUInt;
      return KD_OK;
    case KD_KIND_INT:
      out->code = kDLInt;
      return KD_OK;
    case KD_KIND_FLOAT:
      out->code = dt == KD_BFLOAT16 ? kDLBfloat : kDLFloat;
      return KD_OK;
    case KD_KIND_COMPLEX:
      out->code = kDLComplex;
      return KD_OK;
  }
  return kd_set_error(KD_EUNSUPPORTED, "DLPack export: dtype %s has no DLPack type",
                      kd_dtype_name(dt));
}

static kd_status dtype_from_dl(DLDataType t, kd_dtype *out) {
  if (t.lanes != 1)
    return kd_set_error(KD_EUNSUPPORTED,
                        "DLPack import: vector types (lanes=%u) are not supported: expected 1",
                        (unsigned)t.lanes);
  kd_dtype d = KD_DTYPE_UNDEFINED;
  switch (t.code) {
    case kDLUInt:
      d = t.bits == 8 ? KD_UINT8 : KD_DTYPE_UNDEFINED;
      break;
    case kDLInt:
      d = t.bits == 8 ? KD_INT8 : t.bits == 16 ? KD_INT16 : t.bits == 32 ? KD_INT32
        : t.bits == 64 ? KD_INT64 : KD_DTYPE_UNDEFINED;
      break;
    case kDLFloat:
      d = t.bits == 16 ? KD_FLOAT16 : t.bits == 32 ? KD_FLOAT32 : t.bits == 64 ? KD_FLOAT64
        : KD_DTYPE_UNDEFINED;
      break;
    case kDLBfloat:
      d = t.bits == 16 ? KD_BFLOAT16 : KD_DTYPE_UNDEFINED;
      break;
    case kDLComplex:
      d = t.bits == 64 ? KD_COMPLEX64 : t.bits == 128 ? KD_COMPLEX128 : KD_DTYPE_UNDEFINED;
      break;
    case kDLBool:
      d = t.bits == 8 ? KD_BOOL : KD_DTYPE_UNDEFINED;
      break;
    default:
      break;
  }
  if (d == KD_DTYPE_UNDEFINED)
    return kd_set_error(KD_EUNSUPPORTED,
                        "DLPack import: data type (code %u, bits %u) has no kdispatch dtype",
                        (unsigned)t.code, (unsigned)t.bits);
  *out = d;
  return KD_OK;
}

static kd_status device_to_dl(kd_device dev, DLDevice *out) {
  int32_t code = kd_device_type_dlpack(dev.type);
  if (code == 0)
    return kd_set_error(KD_EUNSUPPORTED,
                        "DLPack export: device type '%s' has no DLPack device type",
                        kd_device_type_name(dev.type));
  out->device_type = (DLDeviceType)code;
  out->device_id = dev.index;
  return KD_OK;
}

static kd_status device_from_dl(DLDevice d, kd_device *out) {
  if (d.device_id < 0)
    return kd_set_error(KD_EINVAL, "DLPack import: negative device id %d", (int)d.device_id);
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost) {
    out->type = KD_DEVICE_CPU;
    out->index = 0;
    return KD_OK;
  }
  for (int t = 0; t < KD_DEVICE_TYPE_COUNT; t++) {
    if (t != KD_DEVICE_META && kd_device_type_dlpack((kd_device_type)t) == (int32_t)d.device_type) {
      out->type = (kd_device_type)t;
      out->index = d.device_id;
      return KD_OK;
    }
  }
  return kd_set_error(KD_EUNSUPPORTED,
                      "DLPack import: DLPack device type %d has no kdispatch device type "
                      "(register one with kd_device_type_register)",
                      (int)d.device_type);
}

/* Fills a DLTensor viewing `t`; shape and strides point into the caller's
 * arrays, which live as long as the managed tensor. */
static kd_status fill_dl_tensor(kd_tensor *t, DLTensor *dl, int64_t *shape, int64_t *strides) {
  kd_status st;
  if ((st = dtype_to_dl(t->dtype, &dl->dtype))) return st;
  if ((st = device_to_dl(t->storage->device, &dl->device))) return st;
  for (int i = 0; i < t->ndim; i++) {
    shape[i] = t->sizes[i];
    strides[i] = t->strides[i];
  }
  dl->data = kd_tensor_data(t);
  dl->ndim = t->ndim;
  dl->shape = shape;
  dl->strides = strides;
  dl->byte_offset = 0;
  /* A device with memory handles (OpenCL): data is the handle, byte_offset
   * the offset of element 0 in it (kd_backend_iface.dlpack_data). */
  if (dl->data && kd__backend_dlpack_handles(t->storage->device.type)) {
    void *handle = NULL;
    uint64_t off = 0;
    if ((st = kd__backend_dlpack_data(t->storage->device, dl->data, &handle, &off))) return st;
    dl->data = handle;
    dl->byte_offset = off;
  }
  return KD_OK;
}

/* One export, either form: the managed tensor, the reference it holds and
 * the shape and strides its DLTensor points to. */
typedef struct kd__dl_export {
  union {
    DLManagedTensor plain;
    DLManagedTensorVersioned versioned;
  } managed;
  kd_tensor *tensor;
  int64_t shape[KD_MAX_DIMS];
  int64_t strides[KD_MAX_DIMS];
} kd__dl_export;

static void dl_export_free(kd__dl_export *e) {
  kd_tensor_release(e->tensor);
  kd__free(e);
}

static void dl_export_deleter(DLManagedTensor *self) {
  dl_export_free(self->manager_ctx);
}

static void dl_export_deleter_versioned(DLManagedTensorVersioned *self) {
  dl_export_free(self->manager_ctx);
}

/* The export of both forms: allocates the record, fills the DLTensor of the
 * form asked for and takes a reference to `tensor`; the caller sets the
 * form's other fields. */
static kd_status dl_export(kd_tensor *tensor, bool versioned, kd__dl_export **rec) {
  kd__dl_export *e = kd__calloc(1, sizeof *e);
  if (!e) return kd__oom("DLPack managed tensor");
  DLTensor *dl = versioned ? &e->managed.versioned.dl_tensor : &e->managed.plain.dl_tensor;
  kd_status st = fill_dl_tensor(tensor, dl, e->shape, e->strides);
  if (st) {
    kd__free(e);
    return st;
  }
  kd_tensor_retain(tensor);
  e->tensor = tensor;
  *rec = e;
  return KD_OK;
}

kd_status kd_tensor_to_dlpack(kd_tensor *tensor, DLManagedTensor **out) {
  if (!tensor || !out) return kd_set_error(KD_EINVAL, "kd_tensor_to_dlpack: NULL argument");
  *out = NULL;
  kd__dl_export *e;
  kd_status st = dl_export(tensor, false, &e);
  if (st) return st;
  e->managed.plain.manager_ctx = e;
  e->managed.plain.deleter = dl_export_deleter;
  *out = &e->managed.plain;
  return KD_OK;
}

kd_status kd_tensor_to_dlpack_versioned(kd_tensor *tensor, DLManagedTensorVersioned **out) {
  if (!tensor || !out)
    return kd_set_error(KD_EINVAL, "kd_tensor_to_dlpack_versioned: NULL argument");
  *out = NULL;
  kd__dl_export *e;
  kd_status st = dl_export(tensor, true, &e);
  if (st) return st;
  DLManagedTensorVersioned *m = &e->managed.versioned;
  m->version.major = DLPACK_MAJOR_VERSION;
  m->version.minor = DLPACK_MINOR_VERSION;
  m->flags = 0;
  m->manager_ctx = e;
  m->deleter = dl_export_deleter_versioned;
  *out = m;
  return KD_OK;
}

/* The deleter of a storage over a backend's handle (kd_backend_iface
 * dlpack_import): gives the pointer back to the backend, then calls the
 * producer's deleter (when still set). */
typedef struct dl_handle_ctx {
  kd_backend *backend;
  kd_device device;
  void *ptr;
  void (*deleter)(void *);
  void *ctx;
} dl_handle_ctx;

static void dl_handle_deleter(void *vctx) {
  dl_handle_ctx *h = vctx;
  kd__backend_dlpack_release(h->backend, h->device, h->ptr);
  if (h->deleter) h->deleter(h->ctx);
  kd__free(h);
}

/* Builds a tensor over a DLTensor's memory. The storage's deleter is
 * `deleter(ctx)`; on error nothing is called and nothing is kept. */
static kd_status import_dl_tensor(const DLTensor *dl, void (*deleter)(void *), void *ctx,
                                  kd_tensor **out) {
  if (dl->ndim < 0 || dl->ndim > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "DLPack import: ndim %d out of range: expected 0..%d",
                        (int)dl->ndim, KD_MAX_DIMS);
  if (dl->ndim > 0 && !dl->shape)
    return kd_set_error(KD_EINVAL, "DLPack import: NULL shape with ndim %d", (int)dl->ndim);
  kd_dtype dtype = KD_DTYPE_UNDEFINED;
  kd_device dev = kd_device_cpu();
  kd_status st;
  if ((st = dtype_from_dl(dl->dtype, &dtype))) return st;
  if ((st = device_from_dl(dl->device, &dev))) return st;
  int ndim = dl->ndim;
  int64_t strides[KD_MAX_DIMS];
  for (int i = 0; i < ndim; i++)
    if (dl->shape[i] < 0)
      return kd_set_error(KD_EINVAL, "DLPack import: size %lld of dimension %d is negative",
                          (long long)dl->shape[i], i);
  if (dl->strides) {
    for (int i = 0; i < ndim; i++) {
      strides[i] = dl->strides[i];
      if (strides[i] < 0)
        return kd_set_error(KD_EUNSUPPORTED,
                            "DLPack import: negative stride %lld in dimension %d is not supported",
                            (long long)strides[i], i);
    }
  } else if (kd__contiguous_strides_overflow(ndim, dl->shape, strides)) {
    /* NULL strides mean row-major; even with a size-0 dimension they must
     * fit in int64. */
    return kd_set_error(KD_EOVERFLOW,
                        "DLPack import: the row-major strides of the shape overflow int64 (%d "
                        "dimensions)",
                        ndim);
  }
  size_t itemsize = kd_dtype_size(dtype);
  /* byte_offset: a whole number of elements (no misaligned element), and
   * the producer's pointer plus it must not wrap. */
  if (dl->byte_offset % itemsize != 0)
    return kd_set_error(KD_EINVAL,
                        "DLPack import: byte_offset %llu is not a multiple of the element size "
                        "%zu (%s)",
                        (unsigned long long)dl->byte_offset, itemsize, kd_dtype_name(dtype));
  if (dl->byte_offset > (uint64_t)INT64_MAX ||
      (dl->data && (uint64_t)dl->byte_offset > UINTPTR_MAX - (uintptr_t)dl->data))
    return kd_set_error(KD_EOVERFLOW,
                        "DLPack import: byte_offset %llu overflows the address of the data",
                        (unsigned long long)dl->byte_offset);
  int64_t numel = 0, need = 0;
  if ((st = kd__geometry_extent("DLPack import", ndim, dl->shape, strides, 0, dtype, &numel,
                                &need)))
    return st;
  /* The storage starts at data + byte_offset; every byte of the tensor
   * lies within byte_offset + need of the producer's pointer. */
  if (need > 0 && ((uint64_t)need > (uint64_t)INT64_MAX - dl->byte_offset ||
                   (uint64_t)need > UINTPTR_MAX - (uintptr_t)dl->data - dl->byte_offset))
    return kd_set_error(KD_EOVERFLOW,
                        "DLPack import: byte_offset %llu plus the tensor's %lld bytes overflow "
                        "the address space",
                        (unsigned long long)dl->byte_offset, (long long)need);
  size_t nbytes = (size_t)need;
  if (numel > 0 && !dl->data)
    return kd_set_error(KD_EINVAL, "DLPack import: NULL data pointer for %lld elements",
                        (long long)numel);
  char *data = dl->data ? (char *)dl->data + dl->byte_offset : NULL;
  /* A cpu element read through a misaligned pointer is undefined behaviour. */
  size_t align = kd_dtype_is_complex(dtype) ? itemsize / 2 : itemsize;
  if (data && numel > 0 && dev.type == KD_DEVICE_CPU && (uintptr_t)data % align != 0)
    return kd_set_error(KD_EINVAL,
                        "DLPack import: data pointer %p + byte_offset %llu is not aligned to "
                        "%zu bytes, as %s elements need",
                        dl->data, (unsigned long long)dl->byte_offset, align,
                        kd_dtype_name(dtype));
  /* A device with memory handles: data is the handle and byte_offset the
   * offset in it; the backend gives a data pointer for them. */
  dl_handle_ctx *hctx = NULL;
  if (dev.type != KD_DEVICE_CPU && kd__backend_dlpack_handles(dev.type)) {
    data = NULL;
    if (nbytes > 0) {
      hctx = kd__calloc(1, sizeof *hctx);
      if (!hctx) return kd__oom("DLPack import");
      if ((st = kd__backend_dlpack_import(dev, dl->data, dl->byte_offset, nbytes, (void **)&data,
                                          &hctx->backend))) {
        kd__free(hctx);
        return st;
      }
      hctx->device = dev;
      hctx->ptr = data;
      hctx->deleter = deleter;
      hctx->ctx = ctx;
    }
  }
  kd_storage *storage;
  if ((st = kd_storage_wrap(dev, data, nbytes, hctx ? dl_handle_deleter : deleter,
                            hctx ? (void *)hctx : ctx, &storage))) {
    if (hctx) {
      hctx->deleter = NULL; /* the caller keeps the managed tensor */
      dl_handle_deleter(hctx);
    }
    return st;
  }
  st = kd__tensor_make(storage, 0, ndim, dl->shape, strides, dtype, out);
  if (st) {
    /* the caller keeps the managed tensor */
    if (hctx) hctx->deleter = NULL;
    else storage->deleter = NULL;
  }
  kd_storage_release(storage);
  return st;
}

static void call_dl_deleter(void *ctx) {
  DLManagedTensor *m = ctx;
  if (m->deleter) m->deleter(m);
}

kd_status kd_tensor_from_dlpack(DLManagedTensor *src, kd_tensor **out) {
  if (!src || !out) return kd_set_error(KD_EINVAL, "kd_tensor_from_dlpack: NULL argument");
  *out = NULL;
  return import_dl_tensor(&src->dl_tensor, call_dl_deleter, src, out);
}

static void call_dl_v_deleter(void *ctx) {
  DLManagedTensorVersioned *m = ctx;
  if (m->deleter) m->deleter(m);
}

kd_status kd_tensor_from_dlpack_versioned(DLManagedTensorVersioned *src, kd_tensor **out) {
  if (!src || !out)
    return kd_set_error(KD_EINVAL, "kd_tensor_from_dlpack_versioned: NULL argument");
  *out = NULL;
  if (src->version.major != DLPACK_MAJOR_VERSION)
    return kd_set_error(KD_EUNSUPPORTED,
                        "DLPack import: major version %u is not supported: expected %d",
                        (unsigned)src->version.major, DLPACK_MAJOR_VERSION);
  if (src->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    return kd_set_error(KD_EUNSUPPORTED,
                        "DLPack import: the tensor is read-only and kdispatch tensors are "
                        "writable");
  return import_dl_tensor(&src->dl_tensor, call_dl_v_deleter, src, out);
}
