/*
 * dlpack.h: tensor interchange through DLPack. Opt-in: kd/kd.h does not
 * include it; include it yourself where you exchange tensors.
 *
 * DLPack's types come from kd/dlpack/dlpack.h, DLPack 1.1 shipped with
 * kdispatch, unless the translation unit included a DLPack header of its
 * own first (any version from 0.6 on): both use DLPack's include guard, so
 * the first one wins (KD_DLPACK_VENDORED is defined when kdispatch's copy
 * did). The prototypes below name the structs by their tags,
 * so they read the same whichever header came first, and all four functions
 * are always in the library. With a DLPack 0.x header,
 * struct DLManagedTensorVersioned is incomplete: its pointers can still be
 * passed around (exported, then imported), not dereferenced.
 *
 * Ownership follows DLPack: the producer hands over a managed tensor; the
 * consumer owns it and calls its deleter exactly once when done.
 *
 * Dtypes: bool exports as kDLBool (code 6, 8 bits; DLPack 0.8 and later
 * name it, 0.6 does not). On import, kDLUInt/kDLInt/kDLFloat/kDLBfloat/
 * kDLComplex/kDLBool with lanes == 1 map to the matching kdispatch dtype.
 *
 * Devices: kDLCPU (and kDLCUDAHost) is cpu, kDLCUDA is cuda; a private device
 * type exchanges the DLPack type given to kd_device_type_register.
 */
#ifndef KD_DLPACK_H
#define KD_DLPACK_H

#include "kd/dlpack/dlpack.h"

#include "kd/common.h"
#include "kd/tensor.h"

KD_EXTERN_C_BEGIN

struct DLManagedTensor;
struct DLManagedTensorVersioned;

/* Exports `tensor` (borrowed) as a DLManagedTensor that holds its own
 * reference to the tensor: the tensor's storage lives until the consumer calls
 * (*out)->deleter(*out). Strides are always filled in. KD_EUNSUPPORTED for a
 * dtype or device DLPack cannot express (naming it); KD_ENOMEM. A tensor
 * without elements whose storage offset lies past its storage's end exports
 * a NULL data pointer (kd_tensor_data). */
KD_API kd_status kd_tensor_to_dlpack(kd_tensor *tensor, struct DLManagedTensor **out);

/* Imports a DLManagedTensor. On success the new tensor owns `src`: its deleter
 * is called when the last tensor viewing that memory is released (never
 * before kd_tensor_from_dlpack returns). On error the caller still owns `src`
 * and must call its deleter. A NULL `strides` means row-major contiguous.
 * KD_EUNSUPPORTED for lanes != 1, an unknown dtype code/bits, or a device type
 * with no kdispatch device or a negative stride; KD_EINVAL for a negative
 * size, ndim out of range, a NULL data pointer with elements, a byte_offset
 * that is not a multiple of the element size, or (cpu) a data address not
 * aligned for the dtype; KD_EOVERFLOW when the geometry breaks the rule of
 * docs/ARCHITECTURE.md "Foreign geometry" (row-major strides, a stride, the
 * storage extent or data + byte_offset overflow), even with no elements. */
KD_API kd_status kd_tensor_from_dlpack(struct DLManagedTensor *src, kd_tensor **out);

/* The versioned forms (DLPack 1.x's DLManagedTensorVersioned); same rules as
 * above. Export sets version to 1.1 (the shipped header's
 * DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION, whatever header the caller
 * compiled with) and flags to 0. Import rejects (KD_EUNSUPPORTED) a major
 * version other than 1 (the caller keeps `src` and only its deleter may be
 * used), and honours DLPACK_FLAG_BITMASK_READ_ONLY by failing with
 * KD_EUNSUPPORTED (kdispatch tensors are writable). */
KD_API kd_status kd_tensor_to_dlpack_versioned(kd_tensor *tensor,
                                               struct DLManagedTensorVersioned **out);
KD_API kd_status kd_tensor_from_dlpack_versioned(struct DLManagedTensorVersioned *src,
                                                 kd_tensor **out);

KD_EXTERN_C_END

#endif /* KD_DLPACK_H */
