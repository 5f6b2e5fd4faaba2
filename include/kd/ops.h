/*
 * ops.h: the operator library (libkdops): PyTorch's operators on CPU and
 * Meta, registered in the `aten` namespace of the dispatcher.
 *
 * Call kd_ops_open once before using the operators (explicit, so that
 * static linking keeps every registration). Entry points are generated
 * from ops/native_functions.yaml into kd/ops/<name>.h; docs/CODEGEN.md says
 * how their names and parameters are formed.
 */
#ifndef KD_OPS_H
#define KD_OPS_H

#include "kd/common.h"
#include "kd/dispatch.h"
#include "kd/scalar.h"
#include "kd/status.h"
#include "kd/tensor.h"
#include "kd/value.h"
#include "kdk/common.h" /* KDK_API: libkdops exports what this header and kd/ops_all.h declare */

KD_EXTERN_C_BEGIN

/* Borrowed lists passed to operators. size == -1 means None for optional
 * list arguments; data may be NULL when size <= 0. */
typedef struct kd_ints {
  const int64_t *data;
  int64_t size;
} kd_ints;
typedef struct kd_floats {
  const double *data;
  int64_t size;
} kd_floats;
typedef struct kd_bools {
  const bool *data;
  int64_t size;
} kd_bools;
typedef struct kd_tensors {
  kd_tensor *const *data;
  int64_t size;
} kd_tensors;

/* A list of tensors an operator returns (a `Tensor[]` return: unbind, split,
 * chunk...). The caller owns it: one reference per tensor and the array
 * (from kd_host_malloc), both given back by kd_tensor_list_free. An operator
 * that fails leaves {NULL, 0}. */
typedef struct kd_tensor_list {
  kd_tensor **data;
  int64_t size;
} kd_tensor_list;

/* Releases every tensor of *list and its array, and sets it to {NULL, 0}.
 * NULL, and an empty list, do nothing. */
KDK_API void kd_tensor_list_free(kd_tensor_list *list);

/* Registers the aten operators and their CPU, Meta and composite kernels.
 * Thread-safe; once it succeeded, later calls return KD_OK at once until
 * kd_ops_close. All or nothing: on any failure (KD_ENOMEM when an allocation
 * failed, KD_ESTATE for a libkdispatch of another build) nothing stays
 * registered, the error is returned with its message, and the next call tries
 * again. The registrations (owned by libkdops) stay until kd_ops_close. */
KDK_API kd_status kd_ops_open(void);

/* Releases every registration a successful kd_ops_open made, so that the
 * next kd_ops_open registers everything again; does nothing when not open
 * (a failed kd_ops_open leaves nothing to close).
 * Thread-safe, and safe while other threads call operators: a call already
 * running finishes, later ones fail. The operator handles stay valid (entry
 * points keep theirs): while closed, a call through one fails with
 * KD_ESTATE ("operator 'aten::...' is not defined"), and after the next
 * kd_ops_open the same handles work again. Memory stays flat over any
 * number of open/close cycles. */
KDK_API void kd_ops_close(void);

/* Threads used by operators above their grain size (setting it is
 * thread-safe: a parallel region already running keeps its count): the
 * KD_NUM_THREADS environment variable, else the number of processors. Setting n <= 0 is
 * KD_EINVAL. */
KDK_API int kd_get_num_threads(void);
KDK_API kd_status kd_set_num_threads(int n);

/* The CPU capability whose kernels run: "default", "avx2" or "avx512"
 * (chosen at first use; KD_CPU_CAPABILITY overrides). Static storage. */
KDK_API const char *kd_cpu_capability(void);

/* Seeds the default generator used by rand and randn. */
KDK_API void kd_manual_seed(uint64_t seed);

KD_EXTERN_C_END

/* The generated entry points of every operator (kd/ops/<name>.h, and the
 * per-backend direct calls of kd/ops/<name>_dispatch.h). */
#include "kd/ops_all.h"

#endif /* KD_OPS_H */
