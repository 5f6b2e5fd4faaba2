/*
 * fakedev.h: the example backend's device, shared by its three files.
 *
 * "fakedev" is a device whose memory is host memory with every byte
 * scrambled: byte p of a block holds (value ^ mask(p, index)), where the mask
 * depends on the byte's address and on the device index, and is never 0. A
 * CPU kernel that reads device memory by mistake sees garbage, and one that
 * writes it by mistake leaves garbage behind, so the comparison test catches
 * both. Copies to and from the host unscramble and scramble; a copy between
 * the two devices re-scrambles.
 *
 * Each device has an in-order queue: copies are recorded and run, in order,
 * when the device is synchronized (a copy to the host reads nothing until
 * then; a copy from the host takes its bytes at once, as a staging buffer
 * would). Kernels synchronize their device first and then work directly.
 */
#ifndef FAKEDEV_H
#define FAKEDEV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <kd/kd.h>
#include <kd/backend.h>

#define FAKEDEV_NAME "fakedev"
#define FAKEDEV_DEVICE_COUNT 2

typedef struct fakedev_op fakedev_op; /* a recorded copy (fakedev_device.c) */

/* One device: its queue and what it holds. */
typedef struct fakedev_device {
  pthread_mutex_t lock; /* guards the queue */
  fakedev_op *head, *tail;
  atomic_llong live_bytes;  /* allocated and not freed */
  atomic_llong allocations; /* alloc calls, ever */
} fakedev_device;

/* Per-kernel call counters, so that a test can see which calls ran on the
 * device and which went to the CPU fallback (fakedev_kernel_calls). */
enum {
  FAKEDEV_K_EMPTY,
  FAKEDEV_K_EMPTY_STRIDED,
  FAKEDEV_K_FILL,
  FAKEDEV_K_COPY,
  FAKEDEV_K_RESIZE,
  FAKEDEV_K_NEG,
  FAKEDEV_K_ADD,
  FAKEDEV_K_MUL,
  FAKEDEV_K_SUM,
  FAKEDEV_K_NOOP,
  FAKEDEV_K_COUNT
};

/* The backend's context: the iface's ctx, reached by kernels through
 * kd_call_device_context. */
typedef struct fakedev_ctx {
  fakedev_device dev[FAKEDEV_DEVICE_COUNT];
  atomic_llong calls[FAKEDEV_K_COUNT];
} fakedev_ctx;

/* ---- fakedev_device.c ---- */
/* Sets up (init) and tears down (fini: frees queued work) the context. */
kd_status fakedev_ctx_init(fakedev_ctx *ctx);
void fakedev_ctx_fini(fakedev_ctx *ctx);
/* The backend record, with `ctx` as its context. */
kd_backend_iface fakedev_iface(fakedev_ctx *ctx);
/* The mask of the byte at device address `addr` of device `index`. */
uint8_t fakedev_mask(uintptr_t addr, int32_t index);
/* Unscrambles n bytes at device address `src` into host memory `dst`, and
 * the other way (synchronously: kernels call them after a synchronize). */
void fakedev_read(int32_t index, void *dst, const void *src, size_t n);
void fakedev_write(int32_t index, void *dst, const void *src, size_t n);
/* Runs every recorded copy of the device (the iface's synchronize). */
kd_status fakedev_sync(fakedev_ctx *ctx, kd_device device);

/* ---- fakedev_kernels.c ---- */
/* Registers the five primitives and the example kernels for the backend's
 * key through the plugin (libraries closed when it is unloaded). */
kd_status fakedev_register_kernels(kd_plugin *plugin, fakedev_ctx *ctx);

/* Extras, reached through get_proc_address (names as the functions):
 *   long long fakedev_live_bytes(int32_t index): bytes allocated on a device;
 *   long long fakedev_kernel_calls(const char *kernel): calls of one of the
 *     plugin's kernels ("neg", "add", "mul", "sum", "empty", "fill_", ...). */
typedef long long (*fakedev_live_bytes_fn)(int32_t index);
typedef long long (*fakedev_kernel_calls_fn)(const char *kernel);

#endif /* FAKEDEV_H */
