/*
 * opencl_device.c: the OpenCL backend's devices (one context and one
 * in-order queue per device of the chosen platform), its allocator (device
 * addresses over a slot table of cl_mem buffers, with a per-device caching
 * allocator), copies, synchronisation and the backend record the generated
 * plugin registers (opencl_backend / opencl_backend_fini).
 *
 * Thread-safety: everything here may be called from any thread. The slot
 * table and the caches are under one mutex (alloc and free take it once);
 * kdcl_resolve reads the table without a lock. OpenCL queues are
 * thread-safe; commands two threads enqueue on one device run in the order
 * they were enqueued.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdcl.h"
#include "opencl_functions.h"

_Static_assert(sizeof(uintptr_t) == 8, "the OpenCL backend's device addresses need 64-bit pointers");

/* ---- Devices ----------------------------------------------------------------- */

/* The caching allocator's size classes: multiples of 64 bytes up to 512,
 * then four classes per power of two (at most 25% unused). */
#define KDCL_BINS 112

typedef struct cache_block {
  cl_mem buf;
  struct cache_block *next;
} cache_block;

struct kdcl_device {
  kdcl_device_info info;
  cl_device_id id;
  cl_context ctx;
  cl_command_queue queue;
  /* The cache (under alloc_lock): free buffers by size class. */
  cache_block *bins[KDCL_BINS];
  size_t cached_bytes;
  size_t cache_cap;
  /* Counters (under alloc_lock). */
  long long creates, hits, live_bytes;
};

static int dev_count;
static kdcl_device *devs; /* dev_count devices, from opencl_backend to opencl_backend_fini */

int kdcl_device_count(void) { return dev_count; }

kdcl_device *kdcl_device_get(int index) {
  return index >= 0 && index < dev_count ? &devs[index] : NULL;
}

kdcl_device *kdcl_device_of(kd_device dev, const char *op) {
  if (dev.type == KDCL_DEVICE_TYPE && dev.index >= 0 && dev.index < dev_count)
    return &devs[dev.index];
  char name[64];
  kd_device_format(dev, name, sizeof name);
  kd_set_error(KD_ERANGE, "%s: device %s is not an OpenCL device of this process (opencl:0..%d)",
               op ? op : "opencl", name, dev_count - 1);
  return NULL;
}

const kdcl_device_info *kdcl_info(const kdcl_device *d) { return &d->info; }
cl_context kdcl_context(const kdcl_device *d) { return d->ctx; }
cl_device_id kdcl_device_id(const kdcl_device *d) { return d->id; }
cl_command_queue kdcl_queue(const kdcl_device *d) { return d->queue; }

/* ---- Device addresses: the slot table ------------------------------------------- */

/* Slots live in chunks of 4096, allocated on demand and never moved, so a
 * reader needs no lock: it loads the chunk pointer and the slot's buffer
 * (both published with release stores after the rest of the slot was
 * written). Slot 0 is never used. */
#define SLOT_CHUNK_BITS 12
#define SLOT_CHUNK ((uint32_t)1 << SLOT_CHUNK_BITS)
#define SLOT_CHUNKS 4096u /* 16M live allocations */
#define SLOT_MASK (((uintptr_t)1 << 30) - 1)
#define OFFSET_MASK (((uintptr_t)1 << KDCL_SLOT_SHIFT) - 1)

typedef struct slot {
  _Atomic(cl_mem) buf; /* NULL: free */
  size_t size;         /* the buffer's bytes (its size class) */
  int32_t dev;
  uint32_t next_free;
  bool foreign; /* a DLPack import: retained, not the allocator's */
} slot;

static _Atomic(slot *) chunks[SLOT_CHUNKS];
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t free_head;     /* 0: none */
static uint32_t next_unused = 1;

static slot *slot_at(uint32_t i) {
  slot *c = atomic_load_explicit(&chunks[i >> SLOT_CHUNK_BITS], memory_order_acquire);
  return c ? &c[i & (SLOT_CHUNK - 1)] : NULL;
}

/* A slot for buf (alloc_lock held); 0 when out of slots or memory. */
static uint32_t slot_new(cl_mem buf, size_t size, int32_t dev, bool foreign) {
  uint32_t i = free_head;
  slot *s;
  if (i) {
    s = slot_at(i);
    free_head = s->next_free;
  } else {
    i = next_unused;
    if ((i >> SLOT_CHUNK_BITS) >= SLOT_CHUNKS) return 0;
    if (!(i & (SLOT_CHUNK - 1)) || i == 1) {
      if (!atomic_load_explicit(&chunks[i >> SLOT_CHUNK_BITS], memory_order_relaxed)) {
        slot *c = calloc(SLOT_CHUNK, sizeof *c);
        if (!c) return 0;
        atomic_store_explicit(&chunks[i >> SLOT_CHUNK_BITS], c, memory_order_release);
      }
    }
    next_unused++;
    s = slot_at(i);
  }
  s->size = size;
  s->dev = dev;
  s->next_free = 0;
  s->foreign = foreign;
  atomic_store_explicit(&s->buf, buf, memory_order_release);
  return i;
}

/* Frees slot i (alloc_lock held). */
static void slot_free(uint32_t i) {
  slot *s = slot_at(i);
  atomic_store_explicit(&s->buf, NULL, memory_order_release);
  s->next_free = free_head;
  free_head = i;
}

static void *addr_of(uint32_t slot_index, size_t offset) {
  return (void *)(KDCL_ADDR_BASE | (uintptr_t)slot_index << KDCL_SLOT_SHIFT | (uintptr_t)offset);
}

/* The slot of a device address, or NULL (no error set). */
static slot *slot_of(const void *addr, size_t *offset) {
  uintptr_t a = (uintptr_t)addr;
  if ((a & ~(SLOT_MASK << KDCL_SLOT_SHIFT | OFFSET_MASK)) != KDCL_ADDR_BASE) return NULL;
  uint32_t i = (uint32_t)((a >> KDCL_SLOT_SHIFT) & SLOT_MASK);
  if (!i || (i >> SLOT_CHUNK_BITS) >= SLOT_CHUNKS) return NULL;
  slot *s = slot_at(i);
  if (!s) return NULL;
  *offset = (size_t)(a & OFFSET_MASK);
  return s;
}

kd_status kdcl_resolve(const void *addr, cl_mem *buf, size_t *offset, const char *op) {
  size_t off = 0;
  slot *s = slot_of(addr, &off);
  cl_mem b = s ? atomic_load_explicit(&s->buf, memory_order_acquire) : NULL;
  if (!b || off > s->size) {
    if (buf) *buf = NULL;
    if (offset) *offset = 0;
    return kd_set_error(KD_EINVAL,
                        "%s: %p is not an address of OpenCL device memory (a host pointer, or "
                        "an allocation of the opencl backend that was freed)",
                        op ? op : "opencl", addr);
  }
  if (buf) *buf = b;
  if (offset) *offset = off;
  return KD_OK;
}

kdcl_device *kdcl_tensor_device(const kd_tensor *t, const char *op) {
  if (!t) {
    kd_set_error(KD_EINVAL, "%s: NULL tensor", op ? op : "opencl");
    return NULL;
  }
  kd_device dev = kd_tensor_device(t);
  if (dev.type == KDCL_DEVICE_TYPE && dev.index >= 0 && dev.index < dev_count)
    return &devs[dev.index];
  char name[64];
  kd_device_format(dev, name, sizeof name);
  kd_set_error(KD_EINVAL, "%s: expected a tensor on an OpenCL device, got one on %s",
               op ? op : "opencl", name);
  return NULL;
}

kd_status kdcl_tensor_buffer(const kd_tensor *t, cl_mem *buf, size_t *offset, const char *op) {
  if (buf) *buf = NULL;
  if (offset) *offset = 0;
  if (!kdcl_tensor_device(t, op)) return kd_last_status();
  if (kd_tensor_numel(t) == 0) return KD_OK;
  void *p = kd_tensor_data(t);
  if (!p)
    return kd_set_error(KD_EINVAL, "%s: the tensor's storage offset lies past its storage",
                        op ? op : "opencl");
  return kdcl_resolve(p, buf, offset, op);
}

/* ---- The caching allocator ------------------------------------------------------ */

/* The size class of n bytes (> 0) and its bin. */
static size_t size_class(size_t n, int *bin) {
  if (n <= 512) {
    size_t c = (n + 63) & ~(size_t)63;
    *bin = (int)(c / 64) - 1; /* 0..7 */
    return c;
  }
  int lg = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^lg < n <= 2^(lg+1), lg >= 9 */
  size_t step = (size_t)1 << (lg - 2);
  size_t k = (n + step - 1) / step; /* 5..8 */
  *bin = 8 + (lg - 9) * 4 + (int)(k - 5);
  return k * step;
}

/* Releases every cached buffer of d (alloc_lock held). */
static void cache_empty(kdcl_device *d) {
  for (int b = 0; b < KDCL_BINS; b++) {
    while (d->bins[b]) {
      cache_block *blk = d->bins[b];
      d->bins[b] = blk->next;
      clReleaseMemObject(blk->buf);
      free(blk);
    }
  }
  d->cached_bytes = 0;
}

/* Plain device buffers, also on a device that shares host memory: on PoCL
 * CL_MEM_ALLOC_HOST_PTR with clEnqueueMapBuffer copies no faster than
 * clEnqueueRead/WriteBuffer for large buffers, and a small map is slower
 * than a small read, so the copies do not map (docs/GUIDE.md, "The OpenCL
 * backend"). */
static cl_mem_flags buffer_flags(const kdcl_device *d) {
  (void)d;
  return CL_MEM_READ_WRITE;
}

static void *cl_alloc(void *ctx, kd_device device, size_t nbytes) {
  (void)ctx;
  kdcl_device *d = kdcl_device_of(device, "opencl alloc");
  if (!d) return NULL;
  if (nbytes == 0) nbytes = 1;
  if (nbytes > d->info.max_alloc) {
    kd_set_error(KD_ENOMEM,
                 "opencl alloc: %zu bytes on opencl:%d exceed the device's largest allocation "
                 "(%zu bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                 nbytes, d->info.index, d->info.max_alloc);
    return NULL;
  }
  int bin;
  size_t cls = size_class(nbytes, &bin);
  if (cls > d->info.max_alloc || bin >= KDCL_BINS) {
    cls = nbytes;
    bin = -1;
  }
  /* A hit takes the lock once: the buffer out of its bin and a slot for it. */
  pthread_mutex_lock(&alloc_lock);
  cl_mem buf = NULL;
  uint32_t i = 0;
  if (bin >= 0 && d->bins[bin]) {
    cache_block *blk = d->bins[bin];
    if ((i = slot_new(blk->buf, cls, d->info.index, false))) {
      d->bins[bin] = blk->next;
      buf = blk->buf;
      free(blk);
      d->cached_bytes -= cls;
      d->hits++;
      d->live_bytes += (long long)cls;
    }
  }
  pthread_mutex_unlock(&alloc_lock);
  if (i) return addr_of(i, 0);
  cl_int err;
  buf = clCreateBuffer(d->ctx, buffer_flags(d), cls, NULL, &err);
  if (err != CL_SUCCESS) {
    /* Out of memory: give the cache back and try once more. */
    pthread_mutex_lock(&alloc_lock);
    cache_empty(d);
    pthread_mutex_unlock(&alloc_lock);
    buf = clCreateBuffer(d->ctx, buffer_flags(d), cls, NULL, &err);
  }
  if (err != CL_SUCCESS) {
    kdcl_fail(err, "clCreateBuffer", "opencl alloc", d);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    kd_set_error(kd_last_status(), "%s (%zu bytes)", msg, cls);
    return NULL;
  }
  pthread_mutex_lock(&alloc_lock);
  i = slot_new(buf, cls, d->info.index, false);
  if (i) {
    d->creates++;
    d->live_bytes += (long long)cls;
  }
  pthread_mutex_unlock(&alloc_lock);
  if (!i) {
    clReleaseMemObject(buf);
    kd_set_error(KD_ENOMEM, "opencl alloc: out of device address slots or host memory");
    return NULL;
  }
  return addr_of(i, 0);
}

/* Back to the cache (later allocations on the same in-order queue run after
 * every command that used it), or released when the cache is full. */
static void cl_free(void *ctx, kd_device device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)nbytes;
  size_t off = 0;
  slot *s = slot_of(ptr, &off);
  cl_mem buf = s ? atomic_load_explicit(&s->buf, memory_order_acquire) : NULL;
  if (!buf || off != 0 || s->foreign || device.index < 0 || device.index >= dev_count) return;
  kdcl_device *d = &devs[device.index];
  size_t size = s->size;
  int bin = -1;
  if (size == size_class(size, &bin) && bin < KDCL_BINS) {
    /* cached below */
  } else {
    bin = -1;
  }
  cache_block *blk = bin >= 0 ? malloc(sizeof *blk) : NULL;
  pthread_mutex_lock(&alloc_lock);
  uint32_t i = (uint32_t)(((uintptr_t)ptr >> KDCL_SLOT_SHIFT) & SLOT_MASK);
  slot_free(i);
  d->live_bytes -= (long long)size;
  if (blk && d->cached_bytes + size <= d->cache_cap) {
    blk->buf = buf;
    blk->next = d->bins[bin];
    d->bins[bin] = blk;
    d->cached_bytes += size;
    buf = NULL;
    blk = NULL;
  }
  pthread_mutex_unlock(&alloc_lock);
  free(blk);
  if (buf) clReleaseMemObject(buf); /* OpenCL keeps it until queued commands are done */
}

/* ---- Copies ---------------------------------------------------------------------- */

static kd_status cl_copy_from_host(void *ctx, kd_device device, void *dst, const void *host_src,
                                   size_t n) {
  (void)ctx;
  kdcl_device *d = kdcl_device_of(device, "opencl copy_from_host");
  if (!d) return kd_last_status();
  cl_mem buf;
  size_t off;
  kd_status st = kdcl_resolve(dst, &buf, &off, "opencl copy_from_host");
  if (st) return st;
  /* Blocking: the host bytes are not referenced after the call. */
  cl_int err = clEnqueueWriteBuffer(d->queue, buf, CL_TRUE, off, n, host_src, 0, NULL, NULL);
  return KDCL_CHECK(err, "clEnqueueWriteBuffer", "opencl copy_from_host", d);
}

static kd_status cl_copy_to_host(void *ctx, kd_device device, void *host_dst, const void *src,
                                 size_t n) {
  (void)ctx;
  kdcl_device *d = kdcl_device_of(device, "opencl copy_to_host");
  if (!d) return kd_last_status();
  cl_mem buf;
  size_t off;
  kd_status st = kdcl_resolve(src, &buf, &off, "opencl copy_to_host");
  if (st) return st;
  /* Blocking: waits for everything queued before it on the device. */
  cl_int err = clEnqueueReadBuffer(d->queue, buf, CL_TRUE, off, n, host_dst, 0, NULL, NULL);
  return KDCL_CHECK(err, "clEnqueueReadBuffer", "opencl copy_to_host", d);
}

static kd_status cl_copy_device(void *ctx, kd_device dst_device, void *dst, kd_device src_device,
                                const void *src, size_t n) {
  (void)ctx;
  const char *op = "opencl copy_device";
  kdcl_device *dd = kdcl_device_of(dst_device, op);
  if (!dd) return kd_last_status();
  kdcl_device *sd = kdcl_device_of(src_device, op);
  if (!sd) return kd_last_status();
  cl_mem dbuf, sbuf;
  size_t doff, soff;
  kd_status st = kdcl_resolve(dst, &dbuf, &doff, op);
  if (st || (st = kdcl_resolve(src, &sbuf, &soff, op))) return st;
  bool overlap = dbuf == sbuf && doff < soff + n && soff < doff + n;
  if (dd == sd && !overlap) {
    cl_int err = clEnqueueCopyBuffer(dd->queue, sbuf, dbuf, soff, doff, n, 0, NULL, NULL);
    return KDCL_CHECK(err, "clEnqueueCopyBuffer", op, dd);
  }
  /* Another device (another context), or overlapping bytes: through the host. */
  void *tmp = malloc(n);
  if (!tmp) return kd_set_error(KD_ENOMEM, "%s: out of host memory staging %zu bytes", op, n);
  cl_int err = clEnqueueReadBuffer(sd->queue, sbuf, CL_TRUE, soff, n, tmp, 0, NULL, NULL);
  if (err != CL_SUCCESS) st = kdcl_fail(err, "clEnqueueReadBuffer", op, sd);
  if (!st) {
    err = clEnqueueWriteBuffer(dd->queue, dbuf, CL_TRUE, doff, n, tmp, 0, NULL, NULL);
    if (err != CL_SUCCESS) st = kdcl_fail(err, "clEnqueueWriteBuffer", op, dd);
  }
  free(tmp);
  return st;
}

static kd_status cl_synchronize(void *ctx, kd_device device) {
  (void)ctx;
  kdcl_device *d = kdcl_device_of(device, "opencl synchronize");
  if (!d) return kd_last_status();
  return KDCL_CHECK(clFinish(d->queue), "clFinish", "opencl synchronize", d);
}

static kd_status cl_fill(void *ctx, kd_device device, void *dst, const void *elem,
                         size_t elem_size, size_t count) {
  (void)ctx;
  const char *op = "opencl fill";
  kdcl_device *d = kdcl_device_of(device, op);
  if (!d) return kd_last_status();
  if (count == 0) return KD_OK;
  cl_mem buf;
  size_t off;
  kd_status st = kdcl_resolve(dst, &buf, &off, op);
  if (st) return st;
  bool pattern_ok = elem_size && elem_size <= 128 && !(elem_size & (elem_size - 1)) &&
                    off % elem_size == 0;
  if (pattern_ok) {
    cl_int err = clEnqueueFillBuffer(d->queue, buf, elem, elem_size, off, elem_size * count, 0,
                                     NULL, NULL);
    return KDCL_CHECK(err, "clEnqueueFillBuffer", op, d);
  }
  /* A pattern OpenCL cannot fill with: written from the host. */
  unsigned char *tmp = malloc(elem_size * count);
  if (!tmp) return kd_set_error(KD_ENOMEM, "%s: out of host memory (%zu bytes)", op, elem_size * count);
  for (size_t i = 0; i < count; i++) memcpy(tmp + i * elem_size, elem, elem_size);
  cl_int err = clEnqueueWriteBuffer(d->queue, buf, CL_TRUE, off, elem_size * count, tmp, 0, NULL, NULL);
  free(tmp);
  return KDCL_CHECK(err, "clEnqueueWriteBuffer", op, d);
}

static void *cl_queue(void *ctx, kd_device device) {
  (void)ctx;
  return device.index >= 0 && device.index < dev_count ? (void *)devs[device.index].queue : NULL;
}

static int32_t cl_device_count(void *ctx) {
  (void)ctx;
  return dev_count;
}

/* ---- DLPack (kDLOpenCL: data is the cl_mem, byte_offset the offset in it) ---------- */

static kd_status cl_dlpack_data(void *ctx, kd_device device, const void *ptr, void **handle,
                                uint64_t *byte_offset) {
  (void)ctx;
  if (!kdcl_device_of(device, "DLPack export")) return kd_last_status();
  cl_mem buf;
  size_t off;
  kd_status st = kdcl_resolve(ptr, &buf, &off, "DLPack export");
  if (st) return st;
  *handle = buf;
  *byte_offset = off;
  return KD_OK;
}

/* Wraps a foreign cl_mem of the device's context: retained here, released
 * by cl_dlpack_release. A buffer of another context cannot be used by this
 * device's queue: refused. */
static kd_status cl_dlpack_import(void *ctx, kd_device device, void *handle, uint64_t byte_offset,
                                  size_t nbytes, void **ptr) {
  (void)ctx;
  const char *op = "DLPack import";
  kdcl_device *d = kdcl_device_of(device, op);
  if (!d) return kd_last_status();
  cl_mem buf = handle;
  if (!buf) return kd_set_error(KD_EINVAL, "%s: NULL cl_mem for opencl:%d", op, d->info.index);
  cl_context c = NULL;
  size_t size = 0;
  cl_mem_object_type type = 0;
  cl_int err = clGetMemObjectInfo(buf, CL_MEM_TYPE, sizeof type, &type, NULL);
  if (err == CL_SUCCESS) err = clGetMemObjectInfo(buf, CL_MEM_CONTEXT, sizeof c, &c, NULL);
  if (err == CL_SUCCESS) err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof size, &size, NULL);
  if (err != CL_SUCCESS) return kdcl_fail(err, "clGetMemObjectInfo (of the DLPack data)", op, d);
  if (type != CL_MEM_OBJECT_BUFFER)
    return kd_set_error(KD_EUNSUPPORTED, "%s: the cl_mem is not a buffer (an image or pipe)", op);
  if (c != d->ctx)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: the cl_mem belongs to another OpenCL context than opencl:%d's (the "
                        "plugin's queue cannot use it; copy it through the host)",
                        op, d->info.index);
  if (size > KDCL_MAX_ALLOC || byte_offset > size || nbytes > size - byte_offset)
    return kd_set_error(KD_EINVAL,
                        "%s: byte_offset %llu plus %zu bytes exceed the cl_mem's %zu bytes (or "
                        "the buffer exceeds %zu bytes)",
                        op, (unsigned long long)byte_offset, nbytes, size, KDCL_MAX_ALLOC);
  if ((err = clRetainMemObject(buf)) != CL_SUCCESS)
    return kdcl_fail(err, "clRetainMemObject", op, d);
  pthread_mutex_lock(&alloc_lock);
  uint32_t i = slot_new(buf, size, d->info.index, true);
  pthread_mutex_unlock(&alloc_lock);
  if (!i) {
    clReleaseMemObject(buf);
    return kd_set_error(KD_ENOMEM, "%s: out of device address slots or host memory", op);
  }
  *ptr = addr_of(i, (size_t)byte_offset);
  return KD_OK;
}

static void cl_dlpack_release(void *ctx, kd_device device, void *ptr) {
  (void)ctx;
  (void)device;
  size_t off;
  slot *s = slot_of(ptr, &off);
  cl_mem buf = s ? atomic_load_explicit(&s->buf, memory_order_acquire) : NULL;
  if (!buf || !s->foreign) return;
  pthread_mutex_lock(&alloc_lock);
  slot_free((uint32_t)(((uintptr_t)ptr >> KDCL_SLOT_SHIFT) & SLOT_MASK));
  pthread_mutex_unlock(&alloc_lock);
  clReleaseMemObject(buf);
}

/* ---- Extras (get_proc_address) ------------------------------------------------------ */

/* kdcl_cache_stats(index, out[4]): {buffers created, cache hits, bytes cached,
 * bytes live} of opencl:index; -1 for a bad index, 0 otherwise. */
static int cache_stats(int index, long long out[4]) {
  if (index < 0 || index >= dev_count || !out) return -1;
  kdcl_device *d = &devs[index];
  pthread_mutex_lock(&alloc_lock);
  out[0] = d->creates;
  out[1] = d->hits;
  out[2] = (long long)d->cached_bytes;
  out[3] = d->live_bytes;
  pthread_mutex_unlock(&alloc_lock);
  return 0;
}

/* kdcl_cache_empty(index): releases opencl:index's cached buffers. */
static void cache_empty_index(int index) {
  if (index < 0 || index >= dev_count) return;
  pthread_mutex_lock(&alloc_lock);
  cache_empty(&devs[index]);
  pthread_mutex_unlock(&alloc_lock);
}

typedef struct proc {
  const char *name;
  void (*fn)(void);
} proc;
#define PROC(name, f) {name, (void (*)(void))(f)}

static void *cl_get_proc_address(void *ctx, const char *name) {
  (void)ctx;
  static const proc procs[] = {
      PROC("kdcl_error_name", kdcl_error_name),
      PROC("kdcl_cache_stats", cache_stats),
      PROC("kdcl_cache_empty", cache_empty_index),
      PROC("kdcl_device_get", kdcl_device_get),
      PROC("kdcl_info", kdcl_info),
      PROC("kdcl_queue", kdcl_queue),
      PROC("kdcl_context", kdcl_context),
      PROC("kdcl_resolve", kdcl_resolve),
      PROC("kdcl_tensor_buffer", kdcl_tensor_buffer),
      PROC("kdcl_kernel_get", kdcl_kernel_get),
      PROC("kdcl_launch", kdcl_launch),
      PROC("kdcl_ctype", kdcl_ctype),
      {NULL, NULL},
  };
  for (int i = 0; name && procs[i].name; i++)
    if (!strcmp(procs[i].name, name)) return (void *)(uintptr_t)procs[i].fn;
  return NULL;
}

/* ---- Discovery, the record, fini -------------------------------------------------- */

static bool has_ext(const char *exts, const char *name) {
  size_t n = strlen(name);
  for (const char *p = exts; (p = strstr(p, name)); p += n)
    if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
  return false;
}

/* The platform to use: the first with a device, or the first whose name or
 * vendor contains $KD_OPENCL_PLATFORM. */
static kd_status pick_platform(cl_platform_id *out, cl_uint *ndev) {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &np);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && np == 0))
    return kd_set_error(KD_ENOTFOUND, "opencl: no OpenCL platform is installed (the ICD loader "
                                      "found none: install pocl-opencl-icd or a vendor's ICD)");
  if (err != CL_SUCCESS) return kdcl_fail(err, "clGetPlatformIDs", "opencl", NULL);
  cl_platform_id ids[16];
  if (np > 16) np = 16;
  if ((err = clGetPlatformIDs(np, ids, NULL)) != CL_SUCCESS)
    return kdcl_fail(err, "clGetPlatformIDs", "opencl", NULL);
  const char *want = getenv("KD_OPENCL_PLATFORM");
  if (want && !*want) want = NULL;
  char seen[512] = "";
  for (cl_uint i = 0; i < np; i++) {
    char name[128] = "", vendor[128] = "";
    clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    clGetPlatformInfo(ids[i], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
    size_t used = strlen(seen);
    snprintf(seen + used, sizeof seen - used, "%s\"%s\"", used ? ", " : "", name);
    if (want && !strstr(name, want) && !strstr(vendor, want)) continue;
    cl_uint nd = 0;
    if (clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
    *out = ids[i];
    *ndev = nd;
    return KD_OK;
  }
  if (want)
    return kd_set_error(KD_ENOTFOUND,
                        "opencl: no OpenCL platform with a device matches KD_OPENCL_PLATFORM=\"%s\" "
                        "(platforms: %s)",
                        want, seen);
  return kd_set_error(KD_ENOTFOUND, "opencl: no OpenCL platform has a device (platforms: %s)", seen);
}

static void device_release(kdcl_device *d) {
  if (d->queue) {
    clFinish(d->queue);
    clReleaseCommandQueue(d->queue);
  }
  pthread_mutex_lock(&alloc_lock);
  cache_empty(d);
  pthread_mutex_unlock(&alloc_lock);
  if (d->ctx) clReleaseContext(d->ctx);
  memset(d, 0, sizeof *d);
}

static kd_status device_init(kdcl_device *d, int index, cl_platform_id platform, cl_device_id id) {
  memset(d, 0, sizeof *d);
  d->id = id;
  kdcl_device_info *in = &d->info;
  in->index = index;
  clGetDeviceInfo(id, CL_DEVICE_NAME, sizeof in->name - 1, in->name, NULL);
  size_t n = 0;
  char *exts = NULL;
  if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n) == CL_SUCCESS && n &&
      (exts = calloc(1, n + 1)))
    clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, exts, NULL);
  in->fp64 = exts && has_ext(exts, "cl_khr_fp64");
  in->fp16 = exts && has_ext(exts, "cl_khr_fp16");
  free(exts);
  cl_bool unified = CL_FALSE;
  clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
  in->host_unified = unified == CL_TRUE;
  cl_ulong max_alloc = 0, global = 0;
  clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
  clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
  if (max_alloc > KDCL_MAX_ALLOC) max_alloc = KDCL_MAX_ALLOC;
  in->max_alloc = (size_t)max_alloc;
  clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof in->max_work_group,
                  &in->max_work_group, NULL);
  clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof in->compute_units, &in->compute_units,
                  NULL);
  cl_uint align_bits = 0;
  clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
  in->mem_base_align = align_bits / 8;
  /* The cache's cap: $KD_OPENCL_CACHE_MB, else a quarter of the device's memory. */
  const char *mb = getenv("KD_OPENCL_CACHE_MB");
  d->cache_cap = (size_t)(global / 4);
  if (mb && *mb) {
    char *end;
    unsigned long long v = strtoull(mb, &end, 10);
    if (*end || end == mb)
      return kd_set_error(KD_EINVAL, "opencl: KD_OPENCL_CACHE_MB=\"%s\": expected a number of MiB",
                          mb);
    d->cache_cap = (size_t)v << 20;
  }
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_int err;
  d->ctx = clCreateContext(props, 1, &id, NULL, NULL, &err);
  if (err != CL_SUCCESS) return kdcl_fail(err, "clCreateContext", "opencl", d);
  d->queue = clCreateCommandQueue(d->ctx, id, 0, &err); /* in order */
  if (err != CL_SUCCESS) {
    d->queue = NULL;
    return kdcl_fail(err, "clCreateCommandQueue", "opencl", d);
  }
  return KD_OK;
}

void opencl_backend_fini(void) {
  kdcl_pointwise_unregister();
  for (int i = 0; i < dev_count; i++) kdcl_programs_release(&devs[i]);
  for (int i = 0; i < dev_count; i++) device_release(&devs[i]);
  free(devs);
  devs = NULL;
  dev_count = 0;
  pthread_mutex_lock(&alloc_lock);
  for (uint32_t c = 0; c < SLOT_CHUNKS; c++) {
    slot *chunk = atomic_load_explicit(&chunks[c], memory_order_relaxed);
    if (!chunk) continue;
    /* Buffers still live (storage freed after an unload): released here. */
    for (uint32_t k = 0; k < SLOT_CHUNK; k++) {
      cl_mem b = atomic_load_explicit(&chunk[k].buf, memory_order_relaxed);
      if (b) clReleaseMemObject(b);
    }
    atomic_store_explicit(&chunks[c], NULL, memory_order_relaxed);
    free(chunk);
  }
  free_head = 0;
  next_unused = 1;
  pthread_mutex_unlock(&alloc_lock);
}

kd_status opencl_backend(kd_plugin *plugin, kd_backend_iface *iface) {
  (void)plugin;
  /* Loading the same file twice gives the same library (dlopen): its one set
   * of devices is in use. */
  if (devs)
    return kd_set_error(KD_EEXIST, "opencl: the backend is already loaded in this process (opencl:0..%d)",
                        dev_count - 1);
  /* The CPU fallback switch below belongs to the key: another backend's. */
  const kd_backend *other = kd_backend_for_device(KDCL_DEVICE_TYPE);
  if (other)
    return kd_set_error(KD_EEXIST, "opencl: device type %s already has the backend '%s'",
                        "PrivateUse1", kd_backend_iface_of(other)->name);
  cl_platform_id platform = NULL;
  cl_uint nd = 0;
  kd_status st = pick_platform(&platform, &nd);
  if (st) return st;
  cl_device_id ids[64];
  if (nd > 64) nd = 64;
  cl_int err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, nd, ids, NULL);
  if (err != CL_SUCCESS) return kdcl_fail(err, "clGetDeviceIDs", "opencl", NULL);
  devs = calloc(nd, sizeof *devs);
  if (!devs) return kd_set_error(KD_ENOMEM, "opencl: out of memory");
  for (cl_uint i = 0; i < nd; i++) {
    dev_count = (int)i + 1; /* so that device_release and kdcl_fail see it */
    if ((st = device_init(&devs[i], (int)i, platform, ids[i]))) {
      opencl_backend_fini();
      return st;
    }
  }
  memset(iface, 0, sizeof *iface);
  iface->api_version = KD_BACKEND_API_VERSION;
  iface->name = "opencl";
  iface->device_type = KDCL_DEVICE_TYPE;
  iface->dlpack_device_type = 4; /* kDLOpenCL */
  iface->ctx = NULL;
  iface->device_count = cl_device_count;
  iface->alloc = cl_alloc;
  iface->free = cl_free;
  iface->copy_from_host = cl_copy_from_host;
  iface->copy_to_host = cl_copy_to_host;
  iface->copy_device = cl_copy_device;
  iface->synchronize = cl_synchronize;
  iface->fill = cl_fill;
  iface->cast = kdcl_cast; /* opencl_pointwise.c */
  iface->queue = cl_queue;
  iface->get_proc_address = cl_get_proc_address;
  iface->dlpack_data = cl_dlpack_data;
  iface->dlpack_import = cl_dlpack_import;
  iface->dlpack_release = cl_dlpack_release;
  /* Every operator the YAML does not cover runs on the CPU (counted: kd table). */
  if ((st = kd_backend_set_cpu_fallback(KD_KEY_PRIVATEUSE1, true)) ||
      (st = kdcl_pointwise_register())) { /* stubs no generated group registers */
    opencl_backend_fini();
    return st;
  }
  return KD_OK;
}
