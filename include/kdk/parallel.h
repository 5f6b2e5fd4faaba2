/*
 * kdk/parallel.h: libkdops' thread pool, for kernels that split work
 * themselves (kdk_iter_for_each already does). Part of the kernel-author
 * kit (kdk/common.h); kd_get_num_threads / kd_set_num_threads are in
 * kd/ops.h.
 *
 * One lazily started pool of kd_get_num_threads() - 1 worker threads; the
 * calling thread works as the last one. The thread count comes from the
 * KD_NUM_THREADS environment variable (a positive integer), else the number
 * of online processors; kd_set_num_threads changes it (workers are added
 * when needed, never removed: a lower count just leaves some idle).
 */
#ifndef KDK_PARALLEL_H
#define KDK_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

#include "kd/ops.h"
#include "kdk/common.h"

KD_EXTERN_C_BEGIN

/* PyTorch's at::internal::GRAIN_SIZE: ranges below it run serially. */
#define KDK_GRAIN_SIZE 32768

/* Runs fn(ctx, b, e) over disjoint chunks [b, e) that together cover
 * [begin, end), and returns when every chunk has run. Serial (one call
 * fn(ctx, begin, end)) when end - begin < grain, when the thread count is 1,
 * when called from inside a parallel region (no nested parallelism: a chunk
 * that calls kdk_parallel_for runs its range itself), or when the pool is
 * busy with another thread's region. Nothing is called when begin >= end.
 * Chunks are at least `grain` long (grain <= 0 counts as 1) and there are
 * at most kd_get_num_threads() of them. fn and ctx are the caller's
 * (borrowed for the call). fn must not fail: it has no way to report an
 * error other than through ctx (e.g. an atomic status the caller reads
 * after the call). Never fails: when the pool cannot start a thread the
 * range runs on fewer threads. */
KDK_API void kdk_parallel_for(int64_t begin, int64_t end, int64_t grain,
                              void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx);

/* True inside a chunk of a parallel region (in a worker, or in the caller
 * while it runs its own chunks). */
KDK_API bool kdk_in_parallel_region(void);

/* The number of chunks kdk_parallel_for would use for this range and grain
 * right now (1 when it would run serially). For callers that keep one
 * partial result per chunk. */
KDK_API int kdk_parallel_chunks(int64_t begin, int64_t end, int64_t grain);

KD_EXTERN_C_END

#endif
