/*
 * kdcl.h: what the OpenCL backend's files share (private to the plugin:
 * every kdcl_ symbol has hidden visibility; the plugin exports only its
 * generated init). The tier is kdcl_ (functions, types) and KDCL_ (macros).
 *
 * Files:
 *   opencl_device.c    platforms and devices, contexts, one in-order queue
 *                      per device, the allocator (device addresses, caching),
 *                      copies, synchronisation, the backend record
 *                      (opencl_backend / opencl_backend_fini), errors
 *   opencl_program.c   programs built once per device and options, cached;
 *                      kernels and launches
 *   opencl_factory.c   empty.memory_format, empty_strided
 *   opencl_pointwise.c the pointwise loops registered into libkdops' stubs
 *                      (Legacy groups), copy_, fill_
 *   opencl_reduce.c    reductions (LegacyMeta), softmax / log_softmax
 *                      (Customized)
 *   opencl_blas.c      mm, bmm, addmm through CLBlast
 *   opencl.yaml        the backend YAML (torch_musa's format) kdgen reads
 *
 * ---- Device addresses ---------------------------------------------------
 * A storage's data pointer on this backend is a device address, not a host
 * pointer: KDCL_ADDR_BASE | slot << 32 | byte offset, where slot indexes the
 * allocator's table of cl_mem buffers. It is never dereferenced (it is not a
 * canonical x86-64 address: a stray host access faults at once); pointer
 * arithmetic on it (kd_tensor_data, kdk_iter data pointers plus strides)
 * stays inside the buffer's slot, so kdcl_resolve turns any such pointer
 * back into (cl_mem, byte offset) with one table load. One allocation is at
 * most 2 GiB (below 1 << 32 bytes). CUDA or SVM devices would hand out real
 * device pointers instead and need none of this.
 */
#ifndef KDCL_H
#define KDCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kd/kd.h>
#include <kd/backend.h>
#include <kdk/kdk.h>

/* The device type the backend claims and names "opencl". */
#define KDCL_DEVICE_TYPE KD_DEVICE_PRIVATEUSE1

/* ---- Devices -------------------------------------------------------------- */

/* One OpenCL device of the platform: its context, its one in-order queue
 * and its program cache (opaque; owned by the plugin, valid from init to
 * fini). */
typedef struct kdcl_device kdcl_device;

/* What kernels need to know of a device (filled at init, read-only after). */
typedef struct kdcl_device_info {
  int index;                 /* opencl:<index> */
  char name[128];            /* CL_DEVICE_NAME */
  bool fp64;                 /* cl_khr_fp64 */
  bool fp16;                 /* cl_khr_fp16 */
  bool host_unified;         /* CL_DEVICE_HOST_UNIFIED_MEMORY */
  size_t max_alloc;          /* CL_DEVICE_MAX_MEM_ALLOC_SIZE (capped below 4 GiB) */
  size_t max_work_group;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  cl_uint compute_units;     /* CL_DEVICE_MAX_COMPUTE_UNITS */
  cl_uint mem_base_align;    /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
} kdcl_device_info;

/* Number of devices (>= 1 once the backend is registered). */
int kdcl_device_count(void);
/* Device `index`, or NULL (no error set) when out of range. Borrowed. */
kdcl_device *kdcl_device_get(int index);
/* The device a kd_device (type KDCL_DEVICE_TYPE) names, or NULL with
 * KD_ERANGE set naming `op`. */
kdcl_device *kdcl_device_of(kd_device dev, const char *op);
const kdcl_device_info *kdcl_info(const kdcl_device *d);
cl_context kdcl_context(const kdcl_device *d);
cl_device_id kdcl_device_id(const kdcl_device *d);
/* The device's one in-order queue. Every command of the backend goes to
 * it (OpenCL queues are thread-safe; commands from two threads interleave in
 * the order they were enqueued). */
cl_command_queue kdcl_queue(const kdcl_device *d);

/* ---- Device addresses and tensors ------------------------------------------ */

/* A device address: KDCL_ADDR_BASE | slot << KDCL_SLOT_SHIFT | byte offset
 * (bits 62..63 are 01: never a canonical x86-64 or AArch64 user address). */
#define KDCL_ADDR_BASE ((uintptr_t)1 << 62)
#define KDCL_SLOT_SHIFT 32
/* The largest allocation (the offset field's range, one past the end included). */
#define KDCL_MAX_ALLOC ((size_t)0xFFFFF000u)

/* The buffer and byte offset of a device address (any pointer inside an
 * allocation of this backend, or one past its end). KD_EINVAL naming `op`
 * when addr is not one (a host pointer, a freed allocation). */
kd_status kdcl_resolve(const void *addr, cl_mem *buf, size_t *offset, const char *op);
/* The buffer and the byte offset of element 0 of t (an opencl tensor; the
 * storage offset applied). A tensor without bytes (numel 0) gives KD_OK
 * with *buf NULL. Errors as kdcl_resolve, and KD_EINVAL for a tensor of
 * another device. */
kd_status kdcl_tensor_buffer(const kd_tensor *t, cl_mem *buf, size_t *offset, const char *op);
/* The device of an opencl tensor, or NULL with KD_EINVAL naming op. */
kdcl_device *kdcl_tensor_device(const kd_tensor *t, const char *op);

/* ---- Errors ------------------------------------------------------------------ */

/* "CL_OUT_OF_RESOURCES", ... ("CL_UNKNOWN_ERROR" for an unknown code). */
const char *kdcl_error_name(cl_int err);
/* Turns an OpenCL error into a kd status with the message
 * "<op>: <call> failed on opencl:<i>: <CL_NAME> (<code>)": KD_ENOMEM for
 * CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES and
 * CL_OUT_OF_HOST_MEMORY, KD_EDEVICE otherwise. d may be NULL. */
kd_status kdcl_fail(cl_int err, const char *call, const char *op, const kdcl_device *d);
/* KD_OK for CL_SUCCESS, else kdcl_fail. */
#define KDCL_CHECK(err, call, op, d) ((err) == CL_SUCCESS ? KD_OK : kdcl_fail((err), (call), (op), (d)))

/* ---- Programs and launches --------------------------------------------------- */

/* A kernel of a cached program on one device (opaque; owned by the cache,
 * valid until fini). */
typedef struct kdcl_kernel kdcl_kernel;

/* The kernel `kernel_name` of the program built from `source` with build
 * `options` ("-DT=float -DOP=1 ..."; may be NULL) on device d. The program
 * is built the first time a (source, options) pair is asked for on d and
 * cached in memory (and in PoCL's own disk cache); later calls are one
 * locked hash lookup. source must be static (its address is part of the
 * key). A build failure gives KD_EDEVICE with the build log's first lines
 * and names `op`. Thread-safe. */
kd_status kdcl_kernel_get(kdcl_device *d, const char *source, const char *options,
                          const char *kernel_name, kdcl_kernel **out, const char *op);

/* One kernel argument, as clSetKernelArg takes it (a cl_mem is passed as
 * {sizeof(cl_mem), &buf}; a local buffer as {bytes, NULL}). */
typedef struct kdcl_arg {
  size_t size;
  const void *value;
} kdcl_arg;
#define KDCL_ARG(v) ((kdcl_arg){sizeof(v), &(v)})

/* Sets the arguments and enqueues the kernel on d's queue (global[i] work
 * items in dims 0..work_dim-1; local NULL lets the driver choose), without
 * waiting. The kernel's lock is held from the first clSetKernelArg to the
 * enqueue, so two threads may launch the same kernel at once. A global size
 * of 0 in any dim enqueues nothing. Errors: kdcl_fail naming `op`. */
kd_status kdcl_launch(kdcl_device *d, kdcl_kernel *k, int nargs, const kdcl_arg *args,
                      cl_uint work_dim, const size_t *global, const size_t *local,
                      const char *op);

/* ---- Dtypes -------------------------------------------------------------------- */

/* The OpenCL C type of a dtype ("float", "int", "uchar" for bool, ...), or
 * NULL for one the device cannot run (float64 without fp64, float16 without
 * fp16, complex, bfloat16) with KD_ETYPE set:
 *   "<op>: dtype float16 is not supported on opencl:0 (no cl_khr_fp16)". */
const char *kdcl_ctype(const kdcl_device *d, kd_dtype dtype, const char *op);

/* ---- opencl_device.c <-> opencl_program.c ---------------------------------------- */

/* Releases the cached programs and kernels of device d (every device for
 * NULL); called by opencl_backend_fini before the device's context goes. */
void kdcl_programs_release(kdcl_device *d);

/* ---- opencl_pointwise.c ------------------------------------------------------------ */

/* The backend's `cast` slot (kd_backend_iface.cast): converts `count`
 * contiguous elements of src_dtype at device address src to dst_dtype at
 * dst, both on `device`, with one kernel launch (not waited for), as the
 * core converts on the host (floating to integer truncates; NaN and
 * out-of-range give INT64_MIN, wrapped). ctx unused. Errors: KD_ETYPE for a
 * dtype the device lacks (kdcl_ctype's message), kdcl_resolve's for an
 * address that is not the backend's, kdcl_fail's. */
kd_status kdcl_cast(void *ctx, kd_device device, void *dst, kd_dtype dst_dtype, const void *src,
                    kd_dtype src_dtype, size_t count);

/* Registers the loops of the stubs that only libkdops' unstructured kernels
 * bound as Legacy in opencl.yaml reach (where_stub, logical_and/or/xor_stub,
 * fill_stub, masked_fill_stub), for KDCL_DEVICE_TYPE; the generated init
 * registers the others.
 * Called by opencl_backend; on error nothing stays registered (KD_EEXIST
 * when another backend holds a stub). kdcl_pointwise_unregister (from
 * opencl_backend_fini) removes what was registered; safe to call twice. */
kd_status kdcl_pointwise_register(void);
void kdcl_pointwise_unregister(void);

/* ---- opencl_reduce.c -------------------------------------------------------------- */

/* Writes r (a cpu tensor of out's sizes and dtype: a result the CPU
 * computed for a dtype the device does not) into out (an opencl tensor):
 * one blocking clEnqueueWriteBuffer when both are contiguous (any dtype, no
 * kernel involved), else r copied to the device and kd_copy_. Borrows both.
 * Errors: kdcl_fail naming op, the copies'. */
kd_status kdcl_write_from_cpu(kd_tensor *out, kd_tensor *r, const char *op);

/* ---- opencl_pointwise.c: the kernel table (w-perf) ------------------------------- */

/* Empties pointwise's table of kernels found by kdcl_kernel_get (their
 * entries freed); called by kdcl_programs_release before it frees the
 * kernels. Not safe while a pointwise loop runs (fini happens idle). */
void kdcl_pointwise_forget(void);

#endif /* KDCL_H */
