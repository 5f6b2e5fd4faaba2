/*
 * kd.h: the public API of kdispatch in one include, but for DLPack
 * interchange, which is opt-in: include kd/dlpack.h for it.
 *
 * Threads. Every function may be called from any thread; what is shared
 * between threads, and how, is this:
 * - Operator calls (kd_call_unboxed, kd_call_boxed, the redispatches, the
 *   generated kd_<op> entries of libkdops) take no lock and run on any
 *   number of threads at once, also while other threads register, release,
 *   load or unload: a call sees a dispatch table as it was before or after
 *   a change, never half of one, and a kernel record, its closure data and
 *   its functor state are freed only once no call can still be running
 *   them (docs/ARCHITECTURE.md, "Registration and concurrency").
 * - Registration (libraries and KD_LIBRARY blocks, def, impl, fallbacks,
 *   kernel definitions, releases, listeners) is serialized by one lock:
 *   thread-safe, one change at a time. Callbacks run under that lock
 *   (listeners, kd_op_kernels_foreach) must not register.
 * - Thread-local state: the include and exclude key sets (kd_tls_include,
 *   kd_tls_exclude), inference mode, the current device of each type, and
 *   the last error (kd_last_error, kd_last_status) belong to the calling
 *   thread; a new thread starts with empty key sets, inference mode off,
 *   device index 0 and no error. Setting them never affects another thread.
 * - Process-wide settings say on their setter whether it is thread-safe and
 *   what a caller must do: the host allocator (kd_host_allocator_set: not
 *   thread-safe, install it first), device-type allocators and names, key
 *   renames, backends and plugins (kd_backend_register, kd_backend_load,
 *   kd_backend_unload: thread-safe, and calls on other threads go on), the
 *   default dtype, the warning handler, the CPU fallback switches and, in
 *   libkdops, the thread count and dispatch stubs. Names of device types
 *   and keys are read without a lock: set them before other threads use them.
 * - Tensors are not synchronised. Their reference counts are atomic
 *   (kd_tensor_retain and kd_tensor_release may run on any threads at
 *   once), and any number of threads may read a tensor, but writing its
 *   data or changing its metadata (an in-place or out= operator,
 *   kd_tensor_resize_, the set_ and as_strided_ operators) while another
 *   thread uses it needs the caller's own synchronisation. A kd_value or a
 *   kd_stack is likewise used by one thread at a time.
 * - Plugins: kd_backend_load and kd_backend_unload may run while other
 *   threads call operators; a call in flight finishes on the old kernel,
 *   and the plugin's code is unmapped only once no call can still run it.
 *   Neither may be called from inside an operator call (KD_ESTATE).
 */
#ifndef KD_KD_H
#define KD_KD_H

#include "kd/common.h"
#include "kd/version.h"
#include "kd/status.h"
#include "kd/memory.h"
#include "kd/dtype.h"
#include "kd/scalar.h"
#include "kd/device.h"
#include "kd/tensor.h"
#include "kd/tensor_head.h"
#include "kd/value.h"
#include "kd/schema.h"
#include "kd/dispatch.h"
#include "kd/library.h"
#include "kd/selective.h"
#include "kd/kernel_def.h"
#include "kd/backend.h"
#include "kd/cpu_fallback.h"

#endif /* KD_KD_H */
