/*
 * version.h: the ABI policy of kdispatch, and the one versioning rule of its
 * interface structs. (The version macros and kd_version() are in common.h.)
 *
 * ---- What a release may change ----------------------------------------------
 *
 * The shared library is libkdispatch.so.MAJOR (the soname carries
 * KD_VERSION_MAJOR). A program or plugin built against the headers of
 * MAJOR.m runs with any library MAJOR.n where n >= m.
 *
 * A new MAJOR (a new soname) is needed for any of these:
 *   - removing or renaming an exported function, or changing its parameters,
 *     return type or semantics (what it does with the same input, who owns
 *     what it takes or returns, what it reports as an error);
 *   - removing, reordering, retyping or resizing a field of a public struct,
 *     or changing what a field means;
 *   - changing the value of an enum constant, a flag bit, a status code or a
 *     macro constant that ends up in compiled code (KD_MAX_DIMS, dispatch
 *     keys, dtypes, ...), or inserting an enum value anywhere but the end;
 *   - changing the three exported kd__ symbols the inline typed call uses
 *     (kd__tls_reader, kd__global_epoch, kd__call_unboxed_in_section) or
 *     their protocol, or anything else in the detail headers (kd/detail/,
 *     "ABI, not API": what the public headers' inline functions read);
 *   - moving, retyping or changing the meaning of a field of the public
 *     tensor and storage heads (kd_tensor_head, kd_storage_head in
 *     kd/tensor_head.h: the first bytes of every kd_tensor and kd_storage,
 *     read inline by libkdops and kernel authors);
 *   - dropping a version of an interface struct from the accepted range.
 *
 * A new MINOR (same soname) may only add:
 *   - new functions;
 *   - new fields at the end of a versioned interface struct, with its
 *     api_version macro incremented (below);
 *   - new fields at the end of the tensor or storage head, with
 *     KD_TENSOR_HEAD_VERSION incremented;
 *   - new enum values, flags and status codes at the end of their lists;
 *   - new behaviour for input that was an error before.
 * A PATCH changes no interface at all.
 *
 * ---- Major versions -----------------------------------------------------------
 *
 *   1.0.0  libkdispatch.so.1. Dispatch keys per functionality and backend
 *          (kd/keys.h, issue 19): the runtime keys above the dense backends
 *          moved (BackendSelect 16 -> 31, Tracer 32 -> 45, Profiler,
 *          Mode1, Mode2 after it), the Quantized, Sparse, SparseCsr,
 *          NestedTensor, ADInplaceOrView and Autograd keys are new, and tensors
 *          carry ADInplaceOrView and their Autograd key (kd_tensor_key_set
 *          returns more than the backend key). Undefined, the dense backend
 *          keys CPU .. PrivateUse3 (1..6) and the alias values 64..66 did not
 *          move; Autograd and the other aliases are appended after CatchAll.
 *          The interface structs keep their versions (a plugin built against
 *          0.2 that names only dense keys works once rebuilt; it must be
 *          rebuilt, as the soname changed).
 *   0.x    libkdispatch.so.0 (0.2.0 the last).
 *
 * ---- Versioned interface structs --------------------------------------------
 *
 * Every struct that a caller fills and passes in for the library to keep or
 * call back through starts with `uint32_t api_version`, which the caller sets
 * to the struct's macro of the headers it was compiled against:
 *
 *   kd_kernel          KD_KERNEL_API_VERSION          (kd/dispatch.h)
 *   kd_keyed_kernel    KD_KEYED_KERNEL_API_VERSION    (kd/library.h)
 *   kd_library_desc    KD_LIBRARY_DESC_API_VERSION    (kd/library.h)
 *   kd_kernel_def      KD_KERNEL_DEF_API_VERSION      (kd/kernel_def.h)
 *   kd_kernel_class    KD_KERNEL_CLASS_API_VERSION    (kd/kernel_def.h)
 *   kd_allocator       KD_ALLOCATOR_API_VERSION       (kd/device.h)
 *   kd_host_allocator  KD_HOST_ALLOCATOR_API_VERSION  (kd/memory.h)
 *   kd_backend_iface   KD_BACKEND_API_VERSION         (kd/backend.h)
 *   kd_plugin_desc     KD_PLUGIN_API_VERSION          (kd/backend.h)
 *
 * The rules, the same for all of them:
 *   - Fields are only appended. Version N+1 is version N plus fields at the
 *     end; nothing before them moves or changes meaning. Each struct's
 *     comment lists the fields of every version.
 *   - The library accepts every version from 1 to the current one and reads
 *     only the bytes of the version it is given (a struct from an older
 *     plugin is shorter, and whatever follows it in memory is never read); a
 *     field the caller's version lacks counts as 0 / NULL, and every appended
 *     field is optional with that meaning. Where the library writes a
 *     struct back to the caller, it writes only the caller's version's
 *     fields (kd_allocator_get_sized).
 *   - api_version 0 (a struct left zeroed) and a version newer than the
 *     library's are refused with KD_EINVAL and a message that names the
 *     function, the struct, the version found and the versions accepted, as
 *     "kd_library_open_desc: kd_library_desc api_version 3 is not supported:
 *     this library accepts 1 to 2 (KD_LIBRARY_DESC_API_VERSION); was it built
 *     against a newer kdispatch?".
 *   - A struct embedded by value in another (kd_kernel_class in
 *     kd_kernel_def) cannot grow: it stays at its version, and new fields go
 *     into a new struct the outer one points to.
 *   - Use the constructors where they exist (kd_kernel_unboxed, ...) or a
 *     designated initializer, so that a rebuild against newer headers zeroes
 *     the new fields.
 * Structs that the library allocates and hands out by pointer
 * (kd_kernel_info, kd_registry_event, ...) are not versioned: a minor version
 * may append fields to them, so a caller reads them through the pointer and
 * never allocates or copies one by value.
 */
#ifndef KD_VERSION_H
#define KD_VERSION_H

#include "kd/common.h"

#endif /* KD_VERSION_H */
