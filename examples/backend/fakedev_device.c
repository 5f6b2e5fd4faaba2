/*
 * fakedev_device.c: the fake device's memory, queue and backend record.
 *
 * Memory is host memory (malloc), but every byte is stored XOR a mask that
 * depends on its address and on the device index (fakedev.h). The backend
 * record's copies are recorded on the device's in-order queue and run by
 * synchronize, which is what the library calls before it reads the bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fakedev.h"

/* ---- Scrambling ----------------------------------------------------------- */

/* One 64-bit key per aligned 8-byte word of the address space and device;
 * every byte of it is odd, so never 0. */
static uint64_t word_key(uintptr_t word, int32_t index) {
  uint64_t x = (uint64_t)word * 0x9E3779B97F4A7C15ull ^ ((uint64_t)(uint32_t)index + 1) * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x | 0x0101010101010101ull;
}

uint8_t fakedev_mask(uintptr_t addr, int32_t index) {
  return (uint8_t)(word_key(addr >> 3, index) >> (8 * (addr & 7)));
}

/* out[i] = in[i] ^ mask(dev_addr + i): the same operation scrambles and
 * unscrambles. Word at a time where the device address is aligned. */
static void xor_mask(int32_t index, uintptr_t dev_addr, unsigned char *out,
                     const unsigned char *in, size_t n) {
  size_t i = 0;
  for (; i < n && ((dev_addr + i) & 7); i++) out[i] = in[i] ^ fakedev_mask(dev_addr + i, index);
  for (; i + 8 <= n; i += 8) {
    uint64_t w, k = word_key((dev_addr + i) >> 3, index);
    memcpy(&w, in + i, 8);
    w ^= k; /* little-endian: byte j of the word is byte j of memory */
    memcpy(out + i, &w, 8);
  }
  for (; i < n; i++) out[i] = in[i] ^ fakedev_mask(dev_addr + i, index);
}

void fakedev_read(int32_t index, void *dst, const void *src, size_t n) {
  xor_mask(index, (uintptr_t)src, dst, src, n);
}

void fakedev_write(int32_t index, void *dst, const void *src, size_t n) {
  xor_mask(index, (uintptr_t)dst, dst, src, n);
}

/* ---- The queue ----------------------------------------------------------- */

typedef enum { OP_TO_DEVICE, OP_TO_HOST, OP_DEVICE, OP_FILL } op_kind;

struct fakedev_op {
  op_kind kind;
  void *dst;
  const void *src;     /* OP_TO_HOST, OP_DEVICE: a device address */
  int32_t src_index;   /* OP_DEVICE: the source's device */
  size_t n;            /* bytes (OP_FILL: elements) */
  size_t elem_size;    /* OP_FILL */
  fakedev_op *next;
  unsigned char staged[]; /* OP_TO_DEVICE: the host bytes; OP_FILL: one element */
};

static kd_status bad_device(const char *what, kd_device device) {
  return kd_set_error(KD_EINVAL, "fakedev %s: device index %d is out of range: expected 0..%d",
                      what, (int)device.index, FAKEDEV_DEVICE_COUNT - 1);
}

static bool valid(kd_device device) {
  return device.index >= 0 && device.index < FAKEDEV_DEVICE_COUNT;
}

/* Appends op to the device's queue; ownership passes to the queue. */
static void enqueue(fakedev_ctx *ctx, kd_device device, fakedev_op *op) {
  fakedev_device *d = &ctx->dev[device.index];
  op->next = NULL;
  pthread_mutex_lock(&d->lock);
  if (d->tail)
    d->tail->next = op;
  else
    d->head = op;
  d->tail = op;
  pthread_mutex_unlock(&d->lock);
}

static fakedev_op *new_op(op_kind kind, size_t extra) {
  fakedev_op *op = kd_host_malloc(sizeof *op + extra);
  if (op) memset(op, 0, sizeof *op);
  if (op) op->kind = kind;
  return op;
}

static void run_op(int32_t index, fakedev_op *op) {
  switch (op->kind) {
  case OP_TO_DEVICE:
    fakedev_write(index, op->dst, op->staged, op->n);
    break;
  case OP_TO_HOST:
    fakedev_read(index, op->dst, op->src, op->n);
    break;
  case OP_DEVICE: {
    /* Through a bounce buffer: the source's mask is not the destination's. */
    unsigned char buf[4096];
    for (size_t off = 0; off < op->n; off += sizeof buf) {
      size_t k = op->n - off < sizeof buf ? op->n - off : sizeof buf;
      fakedev_read(op->src_index, buf, (const unsigned char *)op->src + off, k);
      fakedev_write(index, (unsigned char *)op->dst + off, buf, k);
    }
    break;
  }
  case OP_FILL:
    for (size_t i = 0; i < op->n; i++)
      fakedev_write(index, (unsigned char *)op->dst + i * op->elem_size, op->staged,
                    op->elem_size);
    break;
  }
}

kd_status fakedev_sync(fakedev_ctx *ctx, kd_device device) {
  if (!valid(device)) return bad_device("synchronize", device);
  fakedev_device *d = &ctx->dev[device.index];
  pthread_mutex_lock(&d->lock);
  fakedev_op *op = d->head;
  d->head = d->tail = NULL;
  while (op) {
    fakedev_op *next = op->next;
    run_op(device.index, op);
    kd_host_free(op);
    op = next;
  }
  pthread_mutex_unlock(&d->lock);
  return KD_OK;
}

static fakedev_ctx *extras_ctx;

kd_status fakedev_ctx_init(fakedev_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  extras_ctx = ctx;
  for (int i = 0; i < FAKEDEV_DEVICE_COUNT; i++)
    if (pthread_mutex_init(&ctx->dev[i].lock, NULL))
      return kd_set_error(KD_ENOMEM, "fakedev: cannot create the queue lock of device %d", i);
  return KD_OK;
}

void fakedev_ctx_fini(fakedev_ctx *ctx) {
  for (int i = 0; i < FAKEDEV_DEVICE_COUNT; i++) {
    kd_device d = {KD_DEVICE_PRIVATEUSE1, i};
    fakedev_sync(ctx, d); /* runs and frees what is still queued */
    pthread_mutex_destroy(&ctx->dev[i].lock);
  }
  extras_ctx = NULL;
}

/* ---- The backend record ----------------------------------------------------- */

static int32_t fd_device_count(void *ctx) {
  (void)ctx;
  return FAKEDEV_DEVICE_COUNT;
}

/* 64-byte aligned host memory, filled with scrambled zeros' garbage. */
static void *fd_alloc(void *vctx, kd_device device, size_t nbytes) {
  fakedev_ctx *ctx = vctx;
  if (!valid(device)) return NULL;
  size_t rounded = (nbytes + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, rounded);
  if (!p) return NULL;
  memset(p, 0xA5, rounded); /* fresh memory is not zero when read through a mask */
  atomic_fetch_add(&ctx->dev[device.index].live_bytes, (long long)nbytes);
  atomic_fetch_add(&ctx->dev[device.index].allocations, 1);
  return p;
}

static void fd_free(void *vctx, kd_device device, void *ptr, size_t nbytes) {
  fakedev_ctx *ctx = vctx;
  if (!ptr || !valid(device)) return;
  /* Work still queued may write into the block: finish it first. */
  fakedev_sync(ctx, device);
  atomic_fetch_sub(&ctx->dev[device.index].live_bytes, (long long)nbytes);
  free(ptr);
}

static kd_status fd_copy_from_host(void *vctx, kd_device device, void *dst, const void *host_src,
                                   size_t n) {
  if (!valid(device)) return bad_device("copy_from_host", device);
  fakedev_op *op = new_op(OP_TO_DEVICE, n);
  if (!op) return kd_set_error(KD_ENOMEM, "fakedev copy_from_host: out of memory (%zu bytes)", n);
  op->dst = dst;
  op->n = n;
  memcpy(op->staged, host_src, n);
  enqueue(vctx, device, op);
  return KD_OK;
}

static kd_status fd_copy_to_host(void *vctx, kd_device device, void *host_dst, const void *src,
                                 size_t n) {
  if (!valid(device)) return bad_device("copy_to_host", device);
  fakedev_op *op = new_op(OP_TO_HOST, 0);
  if (!op) return kd_set_error(KD_ENOMEM, "fakedev copy_to_host: out of memory");
  op->dst = host_dst;
  op->src = src;
  op->n = n;
  enqueue(vctx, device, op);
  return KD_OK;
}

/* Recorded on the destination's queue, after the source's queue is drained
 * (what a real backend does with an event). */
static kd_status fd_copy_device(void *vctx, kd_device dst_device, void *dst, kd_device src_device,
                                const void *src, size_t n) {
  if (!valid(dst_device)) return bad_device("copy_device", dst_device);
  if (!valid(src_device)) return bad_device("copy_device", src_device);
  kd_status st = fakedev_sync(vctx, src_device);
  if (st) return st;
  fakedev_op *op = new_op(OP_DEVICE, 0);
  if (!op) return kd_set_error(KD_ENOMEM, "fakedev copy_device: out of memory");
  op->dst = dst;
  op->src = src;
  op->src_index = src_device.index;
  op->n = n;
  enqueue(vctx, dst_device, op);
  return KD_OK;
}

static kd_status fd_synchronize(void *vctx, kd_device device) { return fakedev_sync(vctx, device); }

static kd_status fd_fill(void *vctx, kd_device device, void *dst, const void *elem,
                         size_t elem_size, size_t count) {
  if (!valid(device)) return bad_device("fill", device);
  fakedev_op *op = new_op(OP_FILL, elem_size);
  if (!op) return kd_set_error(KD_ENOMEM, "fakedev fill: out of memory");
  op->dst = dst;
  op->n = count;
  op->elem_size = elem_size;
  memcpy(op->staged, elem, elem_size);
  enqueue(vctx, device, op);
  return KD_OK;
}

static void *fd_queue(void *vctx, kd_device device) {
  fakedev_ctx *ctx = vctx;
  return valid(device) ? &ctx->dev[device.index] : NULL;
}

/* The extras (fakedev.h); they read the plugin's one context (extras_ctx). */
static long long fd_live_bytes(int32_t index) {
  if (!extras_ctx || index < 0 || index >= FAKEDEV_DEVICE_COUNT) return -1;
  return atomic_load(&extras_ctx->dev[index].live_bytes);
}

static long long fd_kernel_calls(const char *kernel) {
  static const char *const names[FAKEDEV_K_COUNT] = {
      "empty", "empty_strided", "fill_", "copy_", "resize_", "neg", "add", "mul", "sum", "noop"};
  for (int i = 0; extras_ctx && kernel && i < FAKEDEV_K_COUNT; i++)
    if (!strcmp(names[i], kernel)) return atomic_load(&extras_ctx->calls[i]);
  return -1;
}

static void *fd_get_proc_address(void *vctx, const char *name) {
  (void)vctx;
  if (!strcmp(name, "fakedev_live_bytes")) return (void *)(uintptr_t)fd_live_bytes;
  if (!strcmp(name, "fakedev_kernel_calls")) return (void *)(uintptr_t)fd_kernel_calls;
  return NULL;
}

kd_backend_iface fakedev_iface(fakedev_ctx *ctx) {
  kd_backend_iface b;
  memset(&b, 0, sizeof b);
  b.api_version = KD_BACKEND_API_VERSION;
  b.name = FAKEDEV_NAME;
  b.device_type = KD_DEVICE_PRIVATEUSE1;
  b.dlpack_device_type = 0;
  b.ctx = ctx;
  b.device_count = fd_device_count;
  b.alloc = fd_alloc;
  b.free = fd_free;
  b.copy_from_host = fd_copy_from_host;
  b.copy_to_host = fd_copy_to_host;
  b.copy_device = fd_copy_device;
  b.synchronize = fd_synchronize;
  b.fill = fd_fill;
  b.cast = NULL; /* the library casts through the host */
  b.queue = fd_queue;
  b.get_proc_address = fd_get_proc_address;
  return b;
}
