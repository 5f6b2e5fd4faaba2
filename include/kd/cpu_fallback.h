/*
 * kd/cpu_fallback.h: the CPU fallback of a device backend (PyTorch's
 * at::native::cpu_fallback, made complete) and its per-operator counts.
 *
 * kd_backend_set_cpu_fallback(key, true) (kd/library.h) turns it on for a
 * backend key. A call that reaches the key's slot and finds no kernel there
 * (an empty slot, or a kernel-key slot with no kernel for the key tensor's
 * layout and dtype) then runs the CPU kernel instead:
 *   1. every tensor argument (Tensor, Tensor?, Tensor[], Tensor?[]) on the
 *      backend's device type is moved to the CPU (kd_tensor_to_device, so the
 *      device's allocator copies); a Device argument naming that device type
 *      becomes the CPU;
 *   2. the operator is redispatched to the CPU key: whatever form its CPU
 *      kernel has (plain, boxed, functor, kernel-key, composite) runs;
 *   3. every mutated argument (`Tensor(a!)`, `Tensor(a!)[]`: out= and
 *      in-place) that was moved is written back into the caller's tensor
 *      (resized first when the CPU kernel resized its copy), and a return
 *      that the schema says aliases it is that same tensor object;
 *   4. every other tensor result is moved to the device the call asked for
 *      with its first Device argument (results asked for on the CPU stay
 *      there), else to the device (type and index) of the first tensor
 *      argument on the backend's device type.
 * It works for typed and boxed calls alike.
 *
 * Precedence: the fallback is the last resort of a slot. The key's own
 * kernels, CompositeExplicitAutograd, CompositeImplicitAutograd, CatchAll and
 * a fallback registered for the key with kd_library_fallback all fill the
 * slot, so the CPU fallback never replaces them; it is consulted only on the
 * slow path where the call would otherwise fail with KD_ENOKERNEL, so calls
 * that have a kernel pay nothing, and no dispatch table changes when it is
 * turned on or off.
 *
 * It does not apply (the call fails with KD_ENOKERNEL, and the message says
 * the fallback was tried and why it did not apply) when: the CPU has no
 * kernel for the operator, or none for the dtype and layout; an argument is
 * on a third device type (neither the CPU nor the backend's); the operator
 * returns a view of a moved argument (`Tensor(a)`: a copy cannot be a view).
 * When it is off, the KD_ENOKERNEL message of a device backend key says so.
 *
 * Warnings and counts: the first fallback of each (operator, backend) warns
 * (kd_warn); every call that ran the CPU kernel through the fallback (also
 * through kd_cpu_fallback) is counted per (operator, backend).
 */
#ifndef KD_CPU_FALLBACK_H
#define KD_CPU_FALLBACK_H

#include "kd/common.h"
#include "kd/dispatch.h"
#include "kd/status.h"
#include "kd/value.h"

KD_EXTERN_C_BEGIN

/* The CPU fallback as a boxed kernel, for a backend's own boxed fallback or
 * kernel (for example one registered with kd_library_fallback that handles
 * some operators itself and passes the rest on). `call` is the call the
 * kernel received (its key is the backend key: a backend key other than CPU
 * and Meta); the operator's arguments are the top values of `stack`, as for
 * any boxed kernel. Works whether or not kd_backend_set_cpu_fallback is on.
 * On success the arguments are replaced by the results (owned), as a boxed
 * kernel leaves them. On error the stack is unchanged and the status is
 * returned with a message naming the operator: KD_EINVAL (NULL argument, a
 * key that is not such a backend), KD_ENOKERNEL (the fallback does not apply:
 * the message says why), a move's or the CPU kernel's own error. When moving
 * an argument to the CPU fails nothing was written; when writing a mutated
 * argument back fails, the mutated arguments before it in the schema hold
 * their new values and the failing one what the device copy left. */
KD_API kd_status kd_cpu_fallback(const kd_call *call, kd_stack *stack);

/* How many calls of `op` for backend `key` ran the CPU kernel through the
 * CPU fallback since the process started (0 for a NULL op or a key that never
 * fell back). Thread-safe; relaxed counts. */
KD_API uint64_t kd_op_fallback_count(const kd_op *op, kd_dispatch_key key);

/* Calls fn(op, key, count, user) for every (operator, backend) that fell back
 * at least once, in no particular order, and returns how many there were. fn
 * may call other kd functions but must not turn fallbacks on (a pair added
 * meanwhile may or may not be seen). NULL fn just counts. */
typedef void (*kd_fallback_count_fn)(const kd_op *op, kd_dispatch_key key, uint64_t count,
                                     void *user);
KD_API size_t kd_fallback_counts_foreach(kd_fallback_count_fn fn, void *user);

KD_EXTERN_C_END

#endif /* KD_CPU_FALLBACK_H */
