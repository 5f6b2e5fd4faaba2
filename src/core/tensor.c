/*
 * tensor.c: tensors over storage: creation, views, accessors, element access.
 */
#include <stdio.h>

#include "core/checked.h"
#include "core/tensor_impl.h"
#include "kdk/view.h"

/* ---- Layout and memory format names --------------------------------------- */

static const char *const layout_names[KD_LAYOUT_COUNT] = {
    "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn",
};

static const char *const memory_format_names[KD_MEMORY_FORMAT_COUNT] = {
    "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
};

const char *kd_layout_name(kd_layout layout) {
  return layout >= 0 && layout < KD_LAYOUT_COUNT ? layout_names[layout] : "invalid";
}

static kd_status lookup_name(const char *what, const char *name, const char *const *names,
                             int count, int *out) {
  if (!name || !out) return kd_set_error(KD_EINVAL, "%s lookup: NULL argument", what);
  const char *n = !strncmp(name, "torch.", 6) ? name + 6 : name;
  for (int i = 0; i < count; i++) {
    if (!strcmp(n, names[i])) {
      *out = i;
      return KD_OK;
    }
  }
  char list[256];
  kd__fmt f = kd__fmt_init(list, sizeof list);
  for (int i = 0; i < count; i++) kd__fmt_printf(&f, "%s%s", i ? ", " : "", names[i]);
  return kd_set_error(KD_ENOTFOUND, "unknown %s '%s': expected one of %s", what, name, list);
}

kd_status kd_layout_from_name(const char *name, kd_layout *out) {
  int v = 0;
  kd_status st = lookup_name("layout", name, layout_names, KD_LAYOUT_COUNT, &v);
  if (st == KD_OK) *out = (kd_layout)v;
  return st;
}

const char *kd_memory_format_name(kd_memory_format format) {
  return format >= 0 && format < KD_MEMORY_FORMAT_COUNT ? memory_format_names[format]
                                                         : "invalid";
}

kd_status kd_memory_format_from_name(const char *name, kd_memory_format *out) {
  int v = 0;
  kd_status st =
      lookup_name("memory format", name, memory_format_names, KD_MEMORY_FORMAT_COUNT, &v);
  if (st == KD_OK) *out = (kd_memory_format)v;
  return st;
}

/* ---- Geometry ----------------------------------------------------------------- */

/* check_dims' messages, out of the way of the common path. */
__attribute__((noinline, cold)) static kd_status dims_error(const char *fn, int ndim,
                                                            const int64_t *sizes,
                                                            kd_dtype dtype) {
  if (ndim < 0 || ndim > KD_MAX_DIMS)
    return kd_set_error(KD_EINVAL, "%s: ndim %d out of range: expected 0..%d", fn, ndim,
                        KD_MAX_DIMS);
  if (ndim > 0 && !sizes) return kd_set_error(KD_EINVAL, "%s: NULL sizes with ndim %d", fn, ndim);
  if (!kd_dtype_valid(dtype))
    return kd_set_error(KD_EINVAL, "%s: invalid dtype %d", fn, (int)dtype);
  for (int i = 0; i < ndim; i++)
    if (sizes[i] < 0)
      return kd_set_error(KD_EINVAL, "%s: size %lld of dimension %d is negative", fn,
                          (long long)sizes[i], i);
  return kd_set_error(KD_EINTERNAL, "%s: bad dimensions", fn); /* not reached */
}

static inline kd_status check_dims(const char *fn, int ndim, const int64_t *sizes,
                                   kd_dtype dtype) {
  bool bad = (unsigned)ndim > KD_MAX_DIMS || (ndim > 0 && !sizes) ||
             (unsigned)dtype >= (unsigned)KD_DTYPE_COUNT;
  for (int i = 0; !bad && i < ndim; i++) bad = sizes[i] < 0;
  return bad ? dims_error(fn, ndim, sizes, dtype) : KD_OK;
}

static kd_status numel_of(int ndim, const int64_t *sizes, int64_t *out) {
  if (kd__numel_overflow(ndim, sizes, out))
    return kd_set_error(KD_EOVERFLOW, "tensor with %d dimensions has too many elements", ndim);
  return KD_OK;
}

/* The geometry rule's error (src/core/checked.h), out of the common path. */
__attribute__((noinline, cold)) static kd_status geometry_overflow(const char *fn, int ndim,
                                                                   const int64_t *sizes,
                                                                   const int64_t *strides,
                                                                   int64_t offset,
                                                                   kd_dtype dtype) {
  char buf[2 * KD_MAX_DIMS * 24 + 32];
  kd__fmt f = kd__fmt_init(buf, sizeof buf);
  kd__fmt_puts(&f, "sizes=[");
  for (int i = 0; i < ndim; i++) kd__fmt_printf(&f, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  kd__fmt_puts(&f, "], strides=[");
  for (int i = 0; i < ndim; i++)
    kd__fmt_printf(&f, "%s%lld", i ? ", " : "", (long long)strides[i]);
  kd__fmt_puts(&f, "]");
  return kd_set_error(KD_EOVERFLOW,
                      "%s: storage size calculation overflows with %s, storage offset %lld and "
                      "%s elements of %zu bytes: every byte offset must fit in int64",
                      fn, buf, (long long)offset, kd_dtype_name(dtype), kd_dtype_size(dtype));
}

kd_status kd__geometry_extent(const char *fn, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset, kd_dtype dtype,
                              int64_t *numel, int64_t *need) {
  if (offset < 0)
    return kd_set_error(KD_EINVAL, "%s: storage offset %lld is negative", fn, (long long)offset);
  for (int i = 0; i < ndim; i++)
    if (strides[i] < 0)
      return kd_set_error(KD_EINVAL, "%s: stride %lld of dimension %d is negative", fn,
                          (long long)strides[i], i);
  int64_t n = 0, extent = 0;
  if (kd__numel_overflow(ndim, sizes, &n))
    return kd_set_error(KD_EOVERFLOW, "%s: tensor with %d dimensions has too many elements", fn,
                        ndim);
  if (kd__extent_overflow(ndim, sizes, strides, offset, (int64_t)kd__dtype_size(dtype), &extent))
    return geometry_overflow(fn, ndim, sizes, strides, offset, dtype);
  *numel = n;
  *need = n > 0 ? extent : 0;
  return KD_OK;
}

kd_status kd__check_geometry(const char *fn, int ndim, const int64_t *sizes,
                             const int64_t *strides, int64_t offset, kd_dtype dtype,
                             size_t nbytes) {
  int64_t numel = 0, need = 0;
  kd_status st = kd__geometry_extent(fn, ndim, sizes, strides, offset, dtype, &numel, &need);
  if (st) return st;
  if ((uint64_t)need > (uint64_t)nbytes)
    return kd_set_error(KD_ERANGE,
                        "%s: view out of bounds: the last element needs %lld bytes of storage "
                        "(offset %lld, %s), but the storage has %zu bytes",
                        fn, (long long)need, (long long)offset, kd_dtype_name(dtype), nbytes);
  return KD_OK;
}

static bool compute_contiguous(const kd_tensor *t) {
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->sizes[i] == 0) return true;
    if (t->sizes[i] != 1 && t->strides[i] != expected) return false;
    expected *= t->sizes[i];
  }
  return true;
}

/* Fills the fields of t (memory the caller provides) over `storage`, whose
 * reference t takes over. sizes/strides are filled up to ndim only. */
static void tensor_init(kd_tensor *t, kd_storage *storage, int64_t offset, int ndim,
                        const int64_t *sizes, const int64_t *strides, kd_dtype dtype,
                        int itemsize, bool embedded) {
  kd__ref_init(&t->refs);
  t->storage = storage;
  t->offset = offset;
  t->ndim = ndim;
  t->dtype = dtype;
  t->itemsize = itemsize;
  t->layout = KD_LAYOUT_STRIDED;
  t->keys = kd__tensor_keyset(storage->device.type);
  t->wrapped_number = false;
  t->embedded = embedded;
  /* Unsigned: the product may wrap before a later size 0 makes it 0; the
   * callers checked that a product without a 0 fits in int64. */
  uint64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    t->sizes[i] = sizes[i];
    t->strides[i] = strides[i];
    numel *= (uint64_t)sizes[i];
  }
  t->numel = (int64_t)numel;
  t->contiguous = ndim <= 1 ? (ndim == 0 || sizes[0] <= 1 || strides[0] == 1)
                            : compute_contiguous(t);
}

kd_status kd__tensor_make(kd_storage *storage, int64_t offset, int ndim, const int64_t *sizes,
                          const int64_t *strides, kd_dtype dtype, kd_tensor **out) {
  kd_tensor *t = kd__malloc(sizeof *t);
  if (!t) return kd__oom("tensor");
  kd_storage_retain(storage);
  tensor_init(t, storage, offset, ndim, sizes, strides, dtype, (int)kd__dtype_size(dtype), false);
  *out = t;
  return KD_OK;
}

kd_status kd__tensor_new(kd_device device, size_t nbytes, int ndim, const int64_t *sizes,
                         const int64_t *strides, kd_dtype dtype, kd_tensor **out) {
  if (!kd__device_ok(device))
    return kd_set_error(KD_EINVAL, "kd_storage_new: invalid device (type %d, index %d)",
                        (int)device.type, (int)device.index);
  /* One block: the tensor, its storage, and small bytes. */
  bool inl = kd__inline_bytes(device, nbytes);
  char *block = kd__malloc(KD__TENSOR_HEAD + KD__STORAGE_HEAD + (inl ? nbytes : 0));
  if (!block) return kd__oom("tensor");
  kd_tensor *t = (kd_tensor *)(void *)block;
  kd_storage *s = (kd_storage *)(void *)(block + KD__TENSOR_HEAD);
  kd_status st = kd__storage_setup(s, block, device, nbytes,
                                   inl ? block + KD__TENSOR_HEAD + KD__STORAGE_HEAD : NULL);
  if (st) {
    kd__free(block);
    return st;
  }
  tensor_init(t, s, 0, ndim, sizes, strides, dtype, (int)kd__dtype_size(dtype), true);
  *out = t;
  return KD_OK;
}

/* Row-major strides; KD_EOVERFLOW when they do not fit int64 (possible even
 * for zero elements, as size-0 dimensions count as 1 here). */
static kd_status contiguous_strides(const char *fn, int ndim, const int64_t *sizes,
                                    int64_t *strides) {
  if (kd__contiguous_strides_overflow(ndim, sizes, strides)) {
    char buf[KD_MAX_DIMS * 24 + 8];
    kd__fmt f = kd__fmt_init(buf, sizeof buf);
    for (int i = 0; i < ndim; i++)
      kd__fmt_printf(&f, "%s%lld", i ? ", " : "", (long long)sizes[i]);
    return kd_set_error(KD_EOVERFLOW,
                        "%s: the row-major strides of sizes [%s] overflow int64", fn, buf);
  }
  return KD_OK;
}

/* ---- Creation ------------------------------------------------------------------ */

kd_status kd_tensor_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides,
                                  kd_dtype dtype, kd_device device, kd_tensor **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_tensor_empty_strided: NULL out");
  *out = NULL;
  kd_status st = check_dims("kd_tensor_empty_strided", ndim, sizes, dtype);
  if (st) return st;
  if (ndim > 0 && !strides)
    return kd_set_error(KD_EINVAL, "kd_tensor_empty_strided: NULL strides with ndim %d", ndim);
  /* Storage just large enough for the last element. */
  int64_t numel = 0, nbytes = 0;
  if ((st = kd__geometry_extent("kd_tensor_empty_strided", ndim, sizes, strides, 0, dtype, &numel,
                                &nbytes)))
    return st;
  return kd__tensor_new(device, (size_t)nbytes, ndim, sizes, strides, dtype, out);
}

kd_status kd_tensor_empty(int ndim, const int64_t *sizes, kd_dtype dtype, kd_device device,
                          kd_tensor **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_tensor_empty: NULL out");
  *out = NULL;
  kd_status st = check_dims("kd_tensor_empty", ndim, sizes, dtype);
  if (st) return st;
  int64_t strides[KD_MAX_DIMS];
  strides[0] = 1; /* 0-dim reads none, but gcc -O3 cannot see that */
  int64_t numel = 0, nbytes = 0;
  if (ndim == 1) { /* the common case: nothing can overflow but the bytes */
    numel = sizes[0];
  } else if ((st = contiguous_strides("kd_tensor_empty", ndim, sizes, strides)) ||
             (st = numel_of(ndim, sizes, &numel))) {
    return st;
  } else if (numel == 0 && (st = kd__geometry_extent("kd_tensor_empty", ndim, sizes, strides, 0,
                                                     dtype, &numel, &nbytes))) {
    /* Without elements the spans of the other dimensions are not bounded
     * by the byte size. */
    return st;
  }
  /* Row-major strides make the last element's offset numel - 1, so the
   * storage holds numel elements. */
  if (__builtin_mul_overflow(numel, (int64_t)kd__dtype_size(dtype), &nbytes))
    return kd_set_error(KD_EOVERFLOW,
                        "kd_tensor_empty: %lld elements of %s overflow the byte size",
                        (long long)numel, kd_dtype_name(dtype));
  return kd__tensor_new(device, (size_t)nbytes, ndim, sizes, strides, dtype, out);
}

kd_status kd_tensor_from_data(int ndim, const int64_t *sizes, kd_dtype dtype, const void *data,
                              kd_tensor **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_tensor_from_data: NULL out");
  kd_tensor *t;
  kd_status st = kd_tensor_empty(ndim, sizes, dtype, kd_device_cpu(), &t);
  if (st) return st;
  if (t->numel > 0) {
    if (!data) {
      long long numel = (long long)t->numel;
      kd_tensor_release(t);
      return kd_set_error(KD_EINVAL, "kd_tensor_from_data: NULL data for %lld elements", numel);
    }
    memcpy(t->storage->data, data, (size_t)t->numel * kd_dtype_size(dtype));
  }
  *out = t;
  return KD_OK;
}

kd_status kd_tensor_from_scalar(const kd_scalar *value, kd_dtype dtype, kd_tensor **out) {
  if (!out || !value) return kd_set_error(KD_EINVAL, "kd_tensor_from_scalar: NULL argument");
  *out = NULL;
  unsigned char elem[16];
  if (!kd_dtype_valid(dtype))
    return kd_set_error(KD_EINVAL, "kd_tensor_from_scalar: invalid dtype %d", (int)dtype);
  kd_status st = kd_scalar_to_element(value, dtype, elem);
  if (st) return st;
  return kd_tensor_from_data(0, NULL, dtype, elem, out);
}

/* A tensor over `storage` (retained) after the checks of
 * kd_tensor_from_storage. With a `base` (borrowed) the tensor is a view of it
 * and takes its key set (a view of a normal tensor is normal even in inference
 * mode, as PyTorch's); without one it is a new tensor, whose keys follow the
 * thread's inference mode. */
static kd_status from_storage(const char *fn, kd_storage *storage, const kd_tensor *base,
                              int64_t offset, int ndim, const int64_t *sizes,
                              const int64_t *strides, kd_dtype dtype, kd_tensor **out) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: NULL out", fn);
  *out = NULL;
  if (!storage) return kd_set_error(KD_EINVAL, "%s: NULL storage", fn);
  kd_status st = check_dims(fn, ndim, sizes, dtype);
  if (st) return st;
  if (ndim > 0 && !strides)
    return kd_set_error(KD_EINVAL, "%s: NULL strides with ndim %d", fn, ndim);
  if ((st = kd__check_geometry(fn, ndim, sizes, strides, offset, dtype, storage->nbytes)))
    return st;
  if ((st = kd__tensor_make(storage, offset, ndim, sizes, strides, dtype, out))) return st;
  if (base) (*out)->keys = base->keys;
  return KD_OK;
}

kd_status kd_tensor_from_storage(kd_storage *storage, int64_t offset, int ndim,
                                 const int64_t *sizes, const int64_t *strides, kd_dtype dtype,
                                 kd_tensor **out) {
  return from_storage("kd_tensor_from_storage", storage, NULL, offset, ndim, sizes, strides, dtype,
                      out);
}

kd_status kd_tensor_as_strided(const kd_tensor *base, int ndim, const int64_t *sizes,
                               const int64_t *strides, int64_t offset, kd_tensor **out) {
  if (!base) {
    if (out) *out = NULL;
    return kd_set_error(KD_EINVAL, "kd_tensor_as_strided: NULL base");
  }
  return from_storage("kd_tensor_as_strided", base->storage, base, offset, ndim, sizes, strides,
                      base->dtype, out);
}

kd_status kd_tensor_as_strided_dtype(const kd_tensor *base, kd_dtype dtype, int ndim,
                                     const int64_t *sizes, const int64_t *strides,
                                     int64_t offset, kd_tensor **out) {
  if (!base) {
    if (out) *out = NULL;
    return kd_set_error(KD_EINVAL, "kd_tensor_as_strided_dtype: NULL base");
  }
  return from_storage("kd_tensor_as_strided_dtype", base->storage, base, offset, ndim, sizes,
                      strides, dtype, out);
}

void kd_tensor_retain(kd_tensor *tensor) {
  if (tensor) kd__ref_inc(&tensor->refs);
}

void kd_tensor_release(kd_tensor *tensor) {
  if (tensor) kd__tensor_release(tensor);
}

void kd__tensor_free_last(kd_tensor *tensor) {
  if (tensor->embedded) {
    /* the tensor's memory goes with its storage's block */
    kd_storage_release(tensor->storage);
    return;
  }
  kd_storage_release(tensor->storage);
  kd__free(tensor);
}

int64_t kd_tensor_refcount(const kd_tensor *tensor) { return kd__ref_get(&tensor->refs); }

/* ---- Accessors --------------------------------------------------------------------- */

int kd_tensor_ndim(const kd_tensor *t) { return t->ndim; }
const int64_t *kd_tensor_sizes(const kd_tensor *t) { return t->sizes; }
const int64_t *kd_tensor_strides(const kd_tensor *t) { return t->strides; }

static int wrap_dim(const kd_tensor *t, int dim) {
  if (dim < 0) dim += t->ndim;
  return dim >= 0 && dim < t->ndim ? dim : -1;
}

int64_t kd_tensor_size(const kd_tensor *t, int dim) {
  int d = wrap_dim(t, dim);
  return d < 0 ? -1 : t->sizes[d];
}

int64_t kd_tensor_stride(const kd_tensor *t, int dim) {
  int d = wrap_dim(t, dim);
  return d < 0 ? -1 : t->strides[d];
}

kd_dtype kd_tensor_dtype(const kd_tensor *t) { return t->dtype; }
kd_device kd_tensor_device(const kd_tensor *t) { return t->storage->device; }
kd_layout kd_tensor_layout(const kd_tensor *t) { return t->layout; }
int64_t kd_tensor_storage_offset(const kd_tensor *t) { return t->offset; }
kd_storage *kd_tensor_storage(const kd_tensor *t) { return t->storage; }

void *kd_tensor_data(const kd_tensor *t) {
  char *data = t->storage->data;
  /* offset * itemsize fits in int64 (the geometry rule); only a tensor
   * without elements can start past the end of its storage. */
  size_t off = (size_t)t->offset * (size_t)t->itemsize;
  if (!data || off > t->storage->nbytes) return NULL;
  return data + off;
}

int64_t kd_tensor_numel(const kd_tensor *t) { return t->numel; }
size_t kd_tensor_itemsize(const kd_tensor *t) { return (size_t)t->itemsize; }
bool kd_tensor_is_contiguous(const kd_tensor *t) { return t->contiguous; }

kd_status kd_tensor_get_view(const kd_tensor *t, kd_tensor_view *out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_tensor_get_view: out is NULL");
  if (!t) return kd_set_error(KD_EINVAL, "kd_tensor_get_view: tensor is NULL");
  if (out->api_version == 0 || out->api_version > KD_TENSOR_VIEW_API_VERSION)
    return kd_set_error(KD_EUNSUPPORTED, "kd_tensor_get_view: api_version %u, this library fills %d",
                        (unsigned)out->api_version, KD_TENSOR_VIEW_API_VERSION);
  /* version 1 */
  out->dtype = t->dtype;
  out->ndim = t->ndim;
  out->sizes = t->sizes;
  out->strides = t->strides;
  char *d = (char *)t->storage->data;
  size_t off = (size_t)t->offset * (size_t)t->itemsize; /* as kd_tensor_data */
  out->data = d && off <= t->storage->nbytes ? d + off : NULL;
  out->numel = t->numel;
  out->storage_offset = t->offset;
  out->itemsize = (size_t)t->itemsize;
  out->device = t->storage->device;
  out->is_contiguous = t->contiguous;
  out->is_wrapped_number = t->wrapped_number;
  out->storage = t->storage;
  return KD_OK;
}

bool kd_tensor_shares_storage(const kd_tensor *a, const kd_tensor *b) {
  return a && b && a->storage == b->storage;
}

/* ---- Element access ------------------------------------------------------------------ */

/* The address of the element at `index` (ndim entries, negative ones count
 * from the end) in *out: a host pointer for a cpu tensor; with `any_device`,
 * for a tensor on another device its address on that device (computed, never
 * dereferenced). Borrows t; KD_EINVAL / KD_ERANGE / KD_EUNSUPPORTED (another
 * device without `any_device`, or meta, which has no bytes) after
 * kd_set_error, *out untouched. */
static kd_status element_ptr(const kd_tensor *t, const int64_t *index, const char *fn,
                             bool any_device, char **out) {
  if (!t) return kd_set_error(KD_EINVAL, "%s: NULL tensor", fn);
  kd_device_type dt = t->storage->device.type;
  if (dt == KD_DEVICE_META || (dt != KD_DEVICE_CPU && !any_device)) {
    char dev[48];
    kd_device_format(t->storage->device, dev, sizeof dev);
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: element access needs a cpu tensor, but the tensor is on '%s'", fn,
                        dev);
  }
  if (t->ndim > 0 && !index) return kd_set_error(KD_EINVAL, "%s: NULL index for %d dimensions", fn, t->ndim);
  int64_t off = t->offset;
  for (int i = 0; i < t->ndim; i++) {
    int64_t ix = index[i];
    if (ix < -t->sizes[i] || ix >= t->sizes[i])
      return kd_set_error(KD_ERANGE,
                          "%s: index %lld is out of bounds for dimension %d with size %lld", fn,
                          (long long)ix, i, (long long)t->sizes[i]);
    if (ix < 0) ix += t->sizes[i];
    off += ix * t->strides[i];
  }
  /* Integer arithmetic: a device address need not point into host memory. */
  *out = (char *)((uintptr_t)t->storage->data +
                  (uintptr_t)(off * (int64_t)kd_dtype_size(t->dtype)));
  return KD_OK;
}

/* Copies the `nbytes`-byte element at device address `src` of t's storage into
 * `host` through the copy_to_host of the storage's allocator (or, for storage
 * the library did not allocate, the device type's installed one), which
 * synchronises with the device. Borrows everything; KD_EUNSUPPORTED when no
 * copy function exists, else the backend's status and message (kept when it
 * set one, prefixed by `fn` otherwise). */
static kd_status element_to_host(const kd_tensor *t, const char *src, size_t nbytes, void *host,
                                 const char *fn) {
  const kd_storage *s = t->storage;
  kd_allocator a;
  bool found = false;
  if (s->owns_via_allocator && s->allocator.copy_to_host) {
    a = s->allocator;
    found = true;
  } else if (kd_allocator_get(s->device.type, &a) == KD_OK && a.copy_to_host) {
    found = true;
  }
  char dev[48];
  kd_device_format(s->device, dev, sizeof dev);
  if (!found)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: cannot read an element of a %s tensor on '%s': the device's "
                        "allocator has no copy_to_host (kd_allocator v2)",
                        fn, kd_dtype_name(t->dtype), dev);
  /* The message before the call, to tell a fresh one from it (the thread's
   * error is left as it was on success). */
  char before[512];
  kd_status before_st = kd_last_status();
  snprintf(before, sizeof before, "%s", kd_last_error());
  kd_status st = a.copy_to_host(a.ctx, s->device, host, src, nbytes);
  if (st == KD_OK) return KD_OK;
  if (kd_last_status() == before_st && strncmp(kd_last_error(), before, sizeof before - 1) == 0)
    return kd_set_error(st < 0 ? st : KD_EDEVICE,
                        "%s: copying a %s element from '%s' to the host failed", fn,
                        kd_dtype_name(t->dtype), dev);
  return st < 0 ? st : KD_EDEVICE;
}

/* kd_tensor_get with `fn` naming the caller in messages. */
static kd_status get_element(const kd_tensor *tensor, const int64_t *index, const char *fn,
                             kd_scalar *out) {
  char *p = NULL;
  kd_status st = element_ptr(tensor, index, fn, true, &p);
  if (st) return st;
  if (tensor->storage->device.type == KD_DEVICE_CPU)
    return kd_scalar_from_element(p, tensor->dtype, out);
  /* Another device: the element's bytes come to the host first (the widest
   * element, complex128, is 16 bytes). */
  _Alignas(16) unsigned char buf[16];
  size_t n = kd_dtype_size(tensor->dtype);
  if (n == 0 || n > sizeof buf)
    return kd_set_error(KD_EUNSUPPORTED, "%s: dtype %s has no readable element", fn,
                        kd_dtype_name(tensor->dtype));
  st = element_to_host(tensor, p, n, buf, fn);
  if (st) return st;
  return kd_scalar_from_element(buf, tensor->dtype, out);
}

kd_status kd_tensor_get(const kd_tensor *tensor, const int64_t *index, kd_scalar *out) {
  return get_element(tensor, index, "kd_tensor_get", out);
}

kd_status kd_tensor_set(kd_tensor *tensor, const int64_t *index, const kd_scalar *value) {
  char *p = NULL;
  kd_status st = element_ptr(tensor, index, "kd_tensor_set", false, &p);
  if (st) return st;
  return kd_scalar_to_element(value, tensor->dtype, p);
}

kd_status kd_tensor_item(const kd_tensor *tensor, kd_scalar *out) {
  if (!tensor) return kd_set_error(KD_EINVAL, "kd_tensor_item: NULL tensor");
  if (tensor->numel != 1)
    return kd_set_error(KD_EINVAL,
                        "kd_tensor_item: a tensor with %lld elements cannot be converted to a "
                        "scalar: expected exactly one element",
                        (long long)tensor->numel);
  int64_t zeros[KD_MAX_DIMS] = {0};
  return get_element(tensor, zeros, "kd_tensor_item", out);
}

size_t kd_tensor_describe(const kd_tensor *t, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  char dev[48];
  kd_device_format(t->storage->device, dev, sizeof dev);
  kd__fmt_printf(&f, "tensor(%s[", kd_dtype_name(t->dtype));
  for (int i = 0; i < t->ndim; i++) kd__fmt_printf(&f, "%s%lld", i ? ", " : "", (long long)t->sizes[i]);
  kd__fmt_printf(&f, "], %s", dev);
  if (!t->contiguous) {
    kd__fmt_puts(&f, ", strides=[");
    for (int i = 0; i < t->ndim; i++)
      kd__fmt_printf(&f, "%s%lld", i ? ", " : "", (long long)t->strides[i]);
    kd__fmt_puts(&f, "]");
  }
  kd__fmt_puts(&f, ")");
  return f.len;
}

/* ---- Resizing, wrapped numbers --------------------------------------------------- */

/* Grows t's storage to at least nbytes, keeping its bytes (see kd_tensor_resize_). */
static kd_status grow_storage(kd_storage *s, size_t nbytes) {
  if (s->device.type == KD_DEVICE_META) {
    s->nbytes = nbytes;
    return KD_OK;
  }
  /* Wrapped memory (a deleter owns it, even with no bytes: replacing it
   * would skip the deleter) cannot grow. */
  if (!s->owns_via_allocator && (s->data || s->deleter))
    return kd_set_error(KD_EUNSUPPORTED,
                        "resize_: the storage wraps memory the library does not own (%zu bytes); "
                        "it cannot grow to %zu bytes",
                        s->nbytes, nbytes);
  kd_allocator a = s->allocator;
  if (!s->owns_via_allocator && kd_allocator_get(s->device.type, &a) != KD_OK)
    return kd_set_error(KD_EUNSUPPORTED, "resize_: no allocator for device '%s'",
                        kd_device_type_name(s->device.type));
  bool host = s->device.type == KD_DEVICE_CPU;
  bool keep = s->data && s->nbytes > 0; /* old bytes to carry over */
  if (!host && keep && (!a.copy_to_host || !a.copy_from_host))
    return kd_set_error(KD_EUNSUPPORTED,
                        "resize_: cannot grow storage on device '%s' from %zu to %zu bytes: its "
                        "allocator has no copy functions (kd_allocator v2 "
                        "copy_to_host/copy_from_host) to carry the old bytes over",
                        kd_device_type_name(s->device.type), s->nbytes, nbytes);
  void *p = a.alloc(a.ctx, s->device, nbytes);
  if (!p)
    return kd_set_error(KD_ENOMEM, "resize_: out of memory growing storage to %zu bytes", nbytes);
  if (keep && !host) {
    /* Device to device through the host: the device's own copy would be
     * better; the allocator interface has none (a backend record's
     * copy_device is the place to plug it in). */
    void *buf = kd__malloc(s->nbytes);
    kd_status st = buf ? a.copy_to_host(a.ctx, s->device, buf, s->data, s->nbytes) : KD_ENOMEM;
    if (st == KD_OK) st = a.copy_from_host(a.ctx, s->device, p, buf, s->nbytes);
    kd__free(buf);
    if (st != KD_OK) {
      a.free(a.ctx, s->device, p, nbytes);
      if ((int)st > 0) st = KD_EINTERNAL;
      char why[512];
      snprintf(why, sizeof why, "%s", buf ? kd_last_error() : "out of host memory");
      return kd_set_error(st,
                          "resize_: growing storage on device '%s' to %zu bytes: copying the "
                          "old %zu bytes failed: %s",
                          kd_device_type_name(s->device.type), nbytes, s->nbytes, why);
    }
  }
  if (s->data) {
    if (host) memcpy(p, s->data, s->nbytes);
    if (!s->data_inline) s->allocator.free(s->allocator.ctx, s->device, s->data, s->nbytes);
  }
  s->data_inline = false; /* the old bytes stay in the block, unused */
  s->data = p;
  s->nbytes = nbytes;
  s->allocator = a;
  s->owns_via_allocator = true;
  return KD_OK;
}

kd_status kd_tensor_resize_(kd_tensor *t, int ndim, const int64_t *sizes, const int64_t *strides) {
  if (!t) return kd_set_error(KD_EINVAL, "resize_: NULL tensor");
  kd_status st = check_dims("resize_", ndim, sizes, t->dtype);
  if (st) return st;
  int64_t st_buf[KD_MAX_DIMS];
  if (!strides) {
    if ((st = contiguous_strides("resize_", ndim, sizes, st_buf))) return st;
    strides = st_buf;
  }
  int64_t numel = 0, need = 0;
  if ((st = kd__geometry_extent("resize_", ndim, sizes, strides, t->offset, t->dtype, &numel,
                                &need)))
    return st;
  if ((uint64_t)need > (uint64_t)t->storage->nbytes &&
      (st = grow_storage(t->storage, (size_t)need)))
    return st;
  t->ndim = ndim;
  t->numel = numel;
  for (int i = 0; i < ndim; i++) {
    t->sizes[i] = sizes[i];
    t->strides[i] = strides[i];
  }
  t->contiguous = compute_contiguous(t);
  if (ndim != 0) t->wrapped_number = false;
  return KD_OK;
}

void kd_tensor_set_wrapped_number(kd_tensor *t, bool wrapped) {
  if (t && t->ndim == 0) t->wrapped_number = wrapped;
}

bool kd_tensor_is_wrapped_number(const kd_tensor *t) { return t && t->wrapped_number; }
