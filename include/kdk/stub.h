/*
 * kdk/stub.h: dispatch stubs, the inner loops of an operator chosen by CPU
 * capability on the CPU and by device type elsewhere (docs/CODEGEN.md,
 * "Dispatch stubs"). Part of the kernel-author kit (kdk/common.h);
 * PyTorch's DispatchStub, REGISTER_DISPATCH and
 * REGISTER_PRIVATEUSE1_DISPATCH.
 *
 * A stub is one exported object of libkdops per loop family (add_stub,
 * unary_stub, ...: kdk/stubs.h lists libkdops' stubs and their loop types).
 * libkdops' impl functions (kdk_native_*) build the iterator and call the
 * stub's loop for the iterator's device:
 *
 *   - cpu: the loop of the CPU capability chosen for the process (default,
 *     avx2, avx512: libkdops' ops/cpu files compiled once per capability).
 *     After the first call this is one acquire load.
 *   - any other device type (cuda, privateuse1..3): the loop a backend
 *     registered for that type at run time, or a KD_ENOKERNEL status whose
 *     message names the operator, the stub and the device ("aten::add.out:
 *     dispatch stub add_stub has no loop for device fakedev; ...").
 *
 * So a backend whose operator reuses libkdops' meta and impl (kdgen's
 * Legacy strategy) only writes the loop and registers it, in its plugin's
 * init:
 *
 *   #include <kdk/kdk.h>
 *   static kd_status fakedev_add_loop(kdk_iter *it, const kd_scalar *alpha,
 *                                     const kd_scalar *unused);
 *   ...
 *   kd_status st = KDK_REGISTER_DEVICE_STUB(add_stub, my_type, fakedev_add_loop);
 *   ...  // in fini:
 *   KDK_UNREGISTER_DEVICE_STUB(add_stub, my_type);
 *
 * The loop type of stub `name` is the function type kdk_stub_fn_<name>, so
 * `kdk_stub_fn_add_stub fakedev_add_loop;` declares a loop, and
 * KDK_REGISTER_DEVICE_STUB refuses (at compile time) a function of another
 * type.
 *
 * Threads: registration publishes the loop with release order and calls
 * read it with acquire order, so a call on another thread that sees the
 * loop sees everything written before it was registered. A call that
 * already read the loop may still be running it when
 * kdk_stub_unregister_device returns: unregister only when no call on the
 * device can be in flight (a backend's fini runs after its last tensor is
 * gone), and keep the loop's code loaded until then.
 */
#ifndef KDK_STUB_H
#define KDK_STUB_H

#include <stdatomic.h>
#include <stddef.h>

#include "kd/device.h"
#include "kd/status.h"
#include "kdk/common.h"

KD_EXTERN_C_BEGIN

/* Any loop, stored; cast back to the stub's type (kdk_stub_fn_<name>) to
 * call it. */
typedef void (*kdk_stub_fn)(void);

/* CPU capability builds a stub may have a loop for: default, avx2, avx512. */
#define KDK_STUB_CPU_CAPS 3

/* A stub. Fields are libkdops' (read and written only through the functions
 * below); the struct is public so that the inline lookup is one load. */
typedef struct kdk_stub {
  /* The CPU loop of the chosen capability; NULL until the first CPU call. */
  _Atomic(kdk_stub_fn) cpu;
  /* Per device type, the loop a backend registered; [cpu] and [meta] stay
   * NULL. */
  _Atomic(kdk_stub_fn) device[KD_DEVICE_TYPE_COUNT];
  /* The stub's name ("add_stub"), static. */
  const char *name;
  /* Writes each built capability's CPU loop (or NULL) into
   * c[KDK_STUB_CPU_CAPS]. */
  void (*candidates)(kdk_stub_fn *c);
} kdk_stub;

/* The stub object of `name` (for kdk_stub_register_device: &KDK_STUB_OBJECT(add_stub)). */
#define KDK_STUB_OBJECT(name) kdk_stub_##name

/* Declares stub `name` with loop type fn_type (a function type): the typedef
 * kdk_stub_fn_<name> and the exported object. kdk/stubs.h declares
 * libkdops' stubs this way. */
#define KDK_DECLARE_STUB(name, fn_type)   \
  typedef fn_type kdk_stub_fn_##name;     \
  extern KDK_API kdk_stub KDK_STUB_OBJECT(name)

/* The slow path of kdk_stub_get: the CPU loop (chosen and published on the
 * first call), or the loop registered for `type`. NULL with KD_ENOKERNEL and
 * a message naming `op` (the operator, for messages: a static string, or
 * NULL), the stub and the device when there is none: a device type without a
 * registered loop, meta (no loops run on meta), a type out of range, or a
 * CPU build with no loop at or below the chosen capability. stub is
 * borrowed. */
KDK_API kdk_stub_fn kdk_stub_lookup(kdk_stub *stub, kd_device_type type, const char *op);

/* The loop of `stub` for device type `type`, or NULL with an error set (see
 * kdk_stub_lookup). On the CPU, after the first call, one acquire load. */
static inline kdk_stub_fn kdk_stub_get(kdk_stub *stub, kd_device_type type, const char *op) {
  if (__builtin_expect(type == KD_DEVICE_CPU, 1)) {
    kdk_stub_fn f = atomic_load_explicit(&stub->cpu, memory_order_acquire);
    if (__builtin_expect(f != NULL, 1)) return f;
  }
  return kdk_stub_lookup(stub, type, op);
}

/* Typed: the loop of stub `name` for `type` (kdk_stub_fn_<name> *), or NULL
 * with KD_ENOKERNEL set. */
#define KDK_STUB_FOR(name, type, op) \
  ((kdk_stub_fn_##name *)kdk_stub_get(&KDK_STUB_OBJECT(name), (type), (op)))

/* Registers `fn` as the loop of `stub` for device type `type` (a backend's
 * device: cuda or privateuse1..3). stub is borrowed (libkdops' object); fn
 * must stay callable until it is unregistered. Errors, with a message naming
 * the stub and the device:
 *   KD_EINVAL  stub or fn NULL; type cpu (its loops are chosen by CPU
 *              capability), meta (no loops run on meta) or out of range;
 *   KD_EEXIST  the stub already has a loop for that device type (another
 *              backend's, or this one registered twice): unregister first.
 * Thread-safe (compare-and-swap, release order). */
KDK_API kd_status kdk_stub_register_device(kdk_stub *stub, kd_device_type type, kdk_stub_fn fn);

/* Removes the loop registered for `type`; later calls on that device get
 * KD_ENOKERNEL. KD_EINVAL for a NULL stub or a type that cannot have one;
 * KD_ENOTFOUND when none is registered. See "Threads" above for calls in
 * flight. */
KDK_API kd_status kdk_stub_unregister_device(kdk_stub *stub, kd_device_type type);

/* One line for a plugin's init: registers `fn` (of type kdk_stub_fn_<name>;
 * another type does not compile: "pointer type mismatch") as stub `name`'s
 * loop for device type `type`. Evaluates to the kd_status of
 * kdk_stub_register_device. */
#define KDK_REGISTER_DEVICE_STUB(name, type, fn)                   \
  kdk_stub_register_device(&KDK_STUB_OBJECT(name), (type),         \
                           (kdk_stub_fn)(1 ? (fn) : (kdk_stub_fn_##name *)0))

/* The fini counterpart: kdk_stub_unregister_device's kd_status. */
#define KDK_UNREGISTER_DEVICE_STUB(name, type) \
  kdk_stub_unregister_device(&KDK_STUB_OBJECT(name), (type))

KD_EXTERN_C_END

#endif
