/*
 * fuzz_dlpack.c: DLPack import, and tensor construction from foreign sizes,
 * strides and offsets (src/core/dlpack.c, src/core/tensor.c).
 *
 * The first byte picks what is built; the rest decodes (fuzz.h's reader)
 * into ndim, sizes, strides, offsets, dtype and device:
 *   0  kd_tensor_from_dlpack (or, when bit 1 of the strides byte is set,
 *      kd_tensor_from_dlpack_versioned with a fuzzed major version and
 *      flags, read after the buffer mode): a managed tensor with a fuzzed
 *      dtype code, bits and lanes, device, byte_offset, shape and strides (or
 *      NULL), over a real buffer exactly as large as the description says
 *      when that is at most 64 KiB (the pointer optionally misaligned by one
 *      byte), else a NULL or a 16-byte buffer that the description overstates;
 *   1  kd_tensor_from_storage over a storage of 0..1020 bytes;
 *   2  kd_tensor_as_strided of a tensor over such a storage;
 *   3  kd_tensor_empty_strided (cpu or meta);
 *   4  kd_tensor_resize_ of a small tensor (strides or row-major).
 * Invariants on success: the sizes are the ones asked for, numel is their
 * product, and every byte the tensor can reach lies inside its storage and,
 * for an import, inside the region the producer described (checked in
 * 128-bit arithmetic); on a real cpu buffer every element (the first 4096
 * and the last) is read through kd_tensor_get, so AddressSanitizer sees any
 * stray access. An import's deleter runs exactly once, when the last tensor
 * goes, and never on failure; a versioned import with another major version
 * or the read-only flag fails; an export of the result, in both forms,
 * re-imports with the same sizes.
 */
#include <kd/dlpack.h>
#include <kd/kd.h>

#include "fuzz.h"
#include "fuzz_tensor.h"

#define BUF_CAP (64 * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static int decode_ndim(fuzz_reader *r) {
  uint8_t v = fuzz_u8(r);
  return v < 224 ? v % 6 : (int)(v - 224) - 4; /* mostly 0..5, sometimes -4..27 */
}

static kd_dtype decode_dtype(fuzz_reader *r) {
  uint8_t v = fuzz_u8(r);
  return v < 240 ? (kd_dtype)(v % KD_DTYPE_COUNT) : (kd_dtype)((int)v - 250); /* -10..5 */
}

/* ---- DLPack ------------------------------------------------------------- */

/* A foreign producer, in the unversioned or the versioned form (one of m
 * and mv is used). */
typedef struct producer {
  DLManagedTensor m;
  DLManagedTensorVersioned mv;
  int versioned;
  int64_t shape[32];
  int64_t strides[32];
  void *buffer;
  int deleted;
} producer;

static void producer_done(producer *p) {
  p->deleted++;
  free(p->buffer);
  p->buffer = NULL;
}

static void producer_deleter(DLManagedTensor *self) {
  producer_done(self->manager_ctx);
}

static void producer_deleter_v(DLManagedTensorVersioned *self) {
  producer_done(self->manager_ctx);
}

/* The producer's deleter, as its consumer calls it. */
static void producer_delete(producer *p) {
  if (p->versioned)
    p->mv.deleter(&p->mv);
  else
    p->m.deleter(&p->m);
}

/* Exports `t` in both forms and imports each back: the same sizes. */
static void round_trip(kd_tensor *t) {
  for (int form = 0; form < 2; form++) {
    kd_tensor *t2 = NULL;
    DLManagedTensor *e = NULL;
    DLManagedTensorVersioned *ev = NULL;
    if (form == 0) {
      if (kd_tensor_to_dlpack(t, &e) != KD_OK) continue;
      if (kd_tensor_from_dlpack(e, &t2) != KD_OK) e->deleter(e);
    } else {
      if (kd_tensor_to_dlpack_versioned(t, &ev) != KD_OK) continue;
      FUZZ_CHECK(ev->version.major == DLPACK_MAJOR_VERSION && ev->flags == 0,
                 "a versioned export is version %u with flags %llu", (unsigned)ev->version.major,
                 (unsigned long long)ev->flags);
      if (kd_tensor_from_dlpack_versioned(ev, &t2) != KD_OK) ev->deleter(ev);
    }
    if (!t2) continue;
    FUZZ_CHECK(kd_tensor_ndim(t2) == kd_tensor_ndim(t), "round trip changed ndim");
    for (int i = 0; i < kd_tensor_ndim(t); i++)
      FUZZ_CHECK(kd_tensor_size(t2, i) == kd_tensor_size(t, i), "round trip changed size %d", i);
    kd_tensor_release(t2);
  }
}

/* The region the description covers, from data + byte_offset: -1 when it
 * has no elements or a negative size or stride, -2 when it overflows 2^80. */
static i128 described_bytes(const DLTensor *dl, size_t item) {
  i128 numel = 1, last = 0, stride = 1;
  int ndim = dl->ndim < 0 ? 0 : dl->ndim;
  for (int i = ndim - 1; i >= 0; i--) {
    int64_t n = dl->shape[i];
    int64_t s = dl->strides ? dl->strides[i] : 0;
    if (n < 0 || s < 0) return -1;
    if (n == 0) return -1;
    if (numel > ((i128)1 << 80) / n) return -2;
    numel *= n;
  }
  for (int i = ndim - 1; i >= 0; i--) {
    int64_t n = dl->shape[i];
    i128 s = dl->strides ? dl->strides[i] : stride;
    last += (n - 1) * s;
    stride *= n;
    if (last > ((i128)1 << 80)) return -2;
  }
  return (last + 1) * (i128)item;
}

static void fuzz_dlpack(fuzz_reader *r) {
  producer *p = calloc(1, sizeof *p);
  FUZZ_CHECK(p, "out of memory");
  p->m.manager_ctx = p;
  p->m.deleter = producer_deleter;
  p->mv.manager_ctx = p;
  p->mv.deleter = producer_deleter_v;
  int ndim = decode_ndim(r);
  uint8_t sb = fuzz_u8(r);
  int has_strides = sb & 1;
  p->versioned = (sb >> 1) & 1;
  DLTensor *dl = p->versioned ? &p->mv.dl_tensor : &p->m.dl_tensor;
  dl->ndim = ndim;
  for (int i = 0; i < dl->ndim && i < 32; i++) {
    p->shape[i] = fuzz_int(r);
    p->strides[i] = has_strides ? fuzz_int(r) : 0;
  }
  dl->shape = p->shape;
  dl->strides = has_strides ? p->strides : NULL;
  uint8_t c = fuzz_u8(r), b = fuzz_u8(r), l = fuzz_u8(r);
  dl->dtype.code = c < 240 ? (uint8_t)(c % 7) : c; /* kDLInt .. kDLBool, or raw */
  dl->dtype.bits = b < 240 ? (uint8_t)(8u << (b % 5)) : b;
  dl->dtype.lanes = l < 240 ? 1 : (uint16_t)(l - 240);
  uint8_t d = fuzz_u8(r);
  static const int devs[] = {kDLCUDA, kDLCUDAHost, kDLOpenCL, kDLVulkan, kDLMetal, kDLVPI,
                             kDLROCM, kDLExtDev, 0, 14, 255, kDLCPU};
  dl->device.device_type = d < 200 ? kDLCPU : (DLDeviceType)devs[d % 12];
  dl->device.device_id = d < 200 ? 0 : (int32_t)fuzz_int(r);
  dl->byte_offset = (uint64_t)fuzz_int(r);
  uint8_t mode = fuzz_u8(r) % 4; /* 0 real, 1 real misaligned, 2 NULL, 3 overstated */
  if (p->versioned) {
    uint8_t vb = fuzz_u8(r), fb = fuzz_u8(r);
    p->mv.version.major = vb < 240 ? DLPACK_MAJOR_VERSION : (uint32_t)(vb - 240);
    p->mv.version.minor = vb < 240 ? vb % 4 : 0;
    p->mv.flags = fb < 128 ? 0 : (uint64_t)(fb & 7);
  }

  size_t item = dl->dtype.bits / 8u;
  i128 need = described_bytes(dl, item);
  i128 region = need > 0 ? need : 0;
  int real = 0;
  char *base = NULL;
  if (mode <= 1 && (i128)dl->byte_offset + region <= BUF_CAP) {
    size_t n = (size_t)dl->byte_offset + (size_t)region + mode;
    p->buffer = malloc(n ? n : 1);
    FUZZ_CHECK(p->buffer, "out of memory");
    memset(p->buffer, 1, n); /* 1: a valid value of every dtype */
    base = (char *)p->buffer + mode;
    real = 1;
  } else if (mode == 2) {
    base = NULL;
  } else {
    p->buffer = malloc(16);
    FUZZ_CHECK(p->buffer, "out of memory");
    memset(p->buffer, 1, 16);
    base = p->buffer;
  }
  dl->data = base;

  kd_tensor *t = NULL;
  kd_status st = p->versioned ? kd_tensor_from_dlpack_versioned(&p->mv, &t)
                               : kd_tensor_from_dlpack(&p->m, &t);
  if (p->versioned && (p->mv.version.major != DLPACK_MAJOR_VERSION ||
                       (p->mv.flags & DLPACK_FLAG_BITMASK_READ_ONLY)))
    FUZZ_CHECK(st == KD_EUNSUPPORTED, "a versioned import of major %u, flags %llu gave %d",
               (unsigned)p->mv.version.major, (unsigned long long)p->mv.flags, (int)st);
  if (st != KD_OK) {
    FUZZ_CHECK(t == NULL, "a failed import gave a tensor");
    FUZZ_CHECK(p->deleted == 0, "a failed import called the deleter");
    producer_delete(p);
    free(p);
    return;
  }
  FUZZ_CHECK(p->deleted == 0, "the deleter ran before the import returned");
  /* What the producer described: from data + byte_offset, `region` bytes. */
  FUZZ_CHECK(kd_tensor_numel(t) == 0 || need > 0,
             "imported %lld elements from a description that has none or overflows",
             (long long)kd_tensor_numel(t));
  const char *lo = base ? base + (real ? dl->byte_offset : 0) : NULL;
  if (!real && base && kd_tensor_numel(t) > 0) {
    /* Overstated: only arithmetic on the description, nothing read. */
    i128 off = (i128)(uintptr_t)kd_tensor_data(t) - (i128)(uintptr_t)base;
    FUZZ_CHECK(off == (i128)dl->byte_offset,
               "the data starts %lld bytes after the producer's pointer, byte_offset is %llu",
               (long long)off, (unsigned long long)dl->byte_offset);
    lo = base + 0;
    region += (i128)dl->byte_offset;
  }
  if (lo && kd_tensor_numel(t) > 0)
    check_tensor(t, dl->ndim, dl->shape, lo, region, real);
  else
    check_tensor(t, dl->ndim, dl->shape, (const char *)kd_tensor_data(t), 0, 0);

  /* Round trip, both forms; the exports hold a reference. */
  round_trip(t);
  kd_tensor_release(t);
  FUZZ_CHECK(p->deleted == 1, "the deleter ran %d times after the last release", p->deleted);
  free(p);
}

/* ---- Tensors from foreign geometry --------------------------------------- */

static void decode_geometry(fuzz_reader *r, int *ndim, int64_t *sizes, int64_t *strides,
                            int *has_strides) {
  *ndim = decode_ndim(r);
  *has_strides = fuzz_u8(r) & 1;
  for (int i = 0; i < *ndim && i < 32; i++) {
    sizes[i] = fuzz_int(r);
    strides[i] = fuzz_int(r);
  }
}

static void fuzz_geometry(fuzz_reader *r, int what) {
  int ndim, has_strides;
  int64_t sizes[32] = {0}, strides[32] = {0};
  size_t nbytes = (size_t)fuzz_u8(r) * 4;
  kd_dtype dtype = decode_dtype(r);
  int64_t offset = fuzz_int(r);
  decode_geometry(r, &ndim, sizes, strides, &has_strides);
  const int64_t *sp = has_strides ? strides : NULL;
  kd_tensor *t = NULL;
  kd_status st;
  kd_storage *s = NULL;
  switch (what) {
  case 1:
    FUZZ_CHECK(kd_storage_new(kd_device_cpu(), nbytes, &s) == KD_OK, "%s", kd_last_error());
    st = kd_tensor_from_storage(s, offset, ndim, sizes, sp, dtype, &t);
    kd_storage_release(s);
    break;
  case 2: {
    FUZZ_CHECK(kd_storage_new(kd_device_cpu(), nbytes, &s) == KD_OK, "%s", kd_last_error());
    kd_tensor *base = NULL;
    int64_t n = (int64_t)nbytes, one = 1;
    st = kd_tensor_from_storage(s, 0, 1, &n, &one, KD_UINT8, &base);
    kd_storage_release(s);
    FUZZ_CHECK(st == KD_OK, "a byte tensor over the whole storage: %s", kd_last_error());
    st = kd_tensor_as_strided(base, ndim, sizes, sp, offset, &t);
    kd_tensor_release(base);
    break;
  }
  case 3: {
    kd_device dev = kd_device_cpu();
    if (fuzz_u8(r) & 1) dev.type = KD_DEVICE_META;
    if (!sp) {
      st = kd_tensor_empty(ndim, sizes, dtype, dev, &t);
    } else {
      st = kd_tensor_empty_strided(ndim, sizes, sp, dtype, dev, &t);
    }
    break;
  }
  default: {
    int64_t n0 = (int64_t)(nbytes % 64);
    FUZZ_CHECK(kd_tensor_empty(1, &n0, KD_FLOAT32, kd_device_cpu(), &t) == KD_OK, "%s",
               kd_last_error());
    st = kd_tensor_resize_(t, ndim, sizes, sp);
    if (st != KD_OK) {
      FUZZ_CHECK(kd_tensor_ndim(t) == 1 && kd_tensor_size(t, 0) == n0,
                 "a failed resize_ changed the tensor");
      kd_tensor_release(t);
      return;
    }
    break;
  }
  }
  if (st != KD_OK) {
    FUZZ_CHECK(t == NULL, "a failed construction gave a tensor");
    return;
  }
  kd_storage *ts = kd_tensor_storage(t);
  /* Fresh memory holds anything; 1 is a valid value of every dtype (bool). */
  int touch = kd_storage_nbytes(ts) <= BUF_CAP * 16;
  if (touch && kd_storage_data(ts)) memset(kd_storage_data(ts), 1, kd_storage_nbytes(ts));
  check_tensor(t, ndim, sizes, (const char *)kd_storage_data(ts), (i128)kd_storage_nbytes(ts),
               touch);
  kd_tensor_release(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader r = {data, size};
  int what = fuzz_u8(&r) % 5;
  if (what == 0)
    fuzz_dlpack(&r);
  else
    fuzz_geometry(&r, what);
  return 0;
}
