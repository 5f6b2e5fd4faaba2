/*
 * opencl_raw.h: the peers of `kd-bench opencl`: the same work as kdispatch's
 * OpenCL backend, written as a plain OpenCL C program (its own context, queue,
 * buffers and kernels on the same device) and CLBlast called directly. Nothing
 * of kdispatch is used here.
 *
 * Every function returns 0 on success, or -1 with a message (the OpenCL call
 * and error code) that kdb_raw_error gives; a failed setup leaves the peer
 * usable for the other figures and for kdb_raw_close.
 */
#ifndef KD_BENCH_OPENCL_RAW_H
#define KD_BENCH_OPENCL_RAW_H

#include <stddef.h>

typedef struct kdb_raw kdb_raw;

/* Opens the device kdispatch's backend calls opencl:0: device 0 of the first
 * platform that has a device, or of the first whose name or vendor contains
 * $KD_OPENCL_PLATFORM (as the backend picks it). *out (owned by the caller: kdb_raw_close) is NULL on
 * error, and then the message is in err (n bytes). Returns 77 when the
 * machine has no OpenCL platform or device (the caller skips), -1 for
 * another error, 0 on success. */
int kdb_raw_open(kdb_raw **out, char *err, size_t n);
/* Releases everything of the peer (NULL is ignored). */
void kdb_raw_close(kdb_raw *r);
/* The message of the last failure (owned by r). */
const char *kdb_raw_error(const kdb_raw *r);
/* The device's name (owned by r). */
const char *kdb_raw_device_name(const kdb_raw *r);

/* c = a + b over n floats (n a multiple of 4), three buffers of the peer's
 * own, filled once here; the kernels are built here too (once). */
int kdb_raw_add_setup(kdb_raw *r, size_t n);
/* Queues `k` adds of the n floats (vec4: the float4 kernel, else the scalar
 * one; driver-chosen work-group size) and waits for the queue (clFinish).
 * *secs: seconds per add. */
int kdb_raw_add_run(kdb_raw *r, int vec4, int k, double *secs);
/* A 1-element add into preallocated 1-element buffers, its arguments set
 * once: queues it `calls` times, then clFinish. *secs: seconds per add. */
int kdb_raw_add1_run(kdb_raw *r, int calls, double *secs);

/* C = A * B, n x n float32 row-major, through CLBlastSgemm on the peer's
 * queue, after one warm-up call (CLBlast builds its kernels then). */
int kdb_raw_mm_setup(kdb_raw *r, size_t n);
/* `k` CLBlastSgemm calls queued, then clFinish. *secs: seconds per call. */
int kdb_raw_mm_run(kdb_raw *r, int k, double *secs);

#endif
