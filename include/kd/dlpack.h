/*
 * dlpack.h: tensor interchange through DLPack (Debian's libdlpack-dev).
 *
 * Ownership follows DLPack: the producer hands over a managed tensor; the
 * consumer owns it and calls its deleter exactly once when done.
 *
 * Dtypes: bool exports as DLPack's bool type when the header has one (DLPack
 * 0.8 and later); DLPack 0.6 has none, so exporting a bool tensor is
 * KD_EUNSUPPORTED there. On import, kDLUInt/kDLInt/kDLFloat/kDLBfloat/
 * kDLComplex with lanes == 1 map to the matching kdispatch dtype.
 *
 * Devices: kDLCPU (and kDLCUDAHost) is cpu, kDLCUDA is cuda; a private device
 * type exchanges the DLPack type given to kd_device_type_register.
 */
#ifndef KD_DLPACK_H
#define KD_DLPACK_H

#include <dlpack/dlpack.h>

#include "kd/common.h"
#include "kd/tensor.h"

KD_EXTERN_C_BEGIN

/* Exports `tensor` (borrowed) as a DLManagedTensor that holds its own
 * reference to the tensor: the tensor's storage lives until the consumer calls
 * (*out)->deleter(*out). Strides are always filled in. KD_EUNSUPPORTED for a
 * dtype or device DLPack cannot express (naming it); KD_ENOMEM. A tensor
 * without elements whose storage offset lies past its storage's end exports
 * a NULL data pointer (kd_tensor_data). */
KD_API kd_status kd_tensor_to_dlpack(kd_tensor *tensor, DLManagedTensor **out);

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
KD_API kd_status kd_tensor_from_dlpack(DLManagedTensor *src, kd_tensor **out);

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
#define KD_HAVE_DLPACK_VERSIONED 1
/* The versioned DLPack 1.x forms; same rules as above. Export sets
 * version to the header's DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION and flags
 * to 0. Import rejects (KD_EUNSUPPORTED) a major version other than the
 * header's, and honours DLPACK_FLAG_BITMASK_READ_ONLY by failing with
 * KD_EUNSUPPORTED (kdispatch tensors are writable). */
KD_API kd_status kd_tensor_to_dlpack_versioned(kd_tensor *tensor,
                                               DLManagedTensorVersioned **out);
KD_API kd_status kd_tensor_from_dlpack_versioned(DLManagedTensorVersioned *src,
                                                 kd_tensor **out);
#endif

KD_EXTERN_C_END

#endif /* KD_DLPACK_H */
