/*
 * kd/dlpack/dlpack.h: DLPack 1.1, the copy kdispatch ships (vendored).
 *
 * Written for kdispatch from the DLPack 1.x specification (the structs'
 * field layout, the enum values and the flag bits of upstream's
 * include/dlpack/dlpack.h, release 1.1); it is not upstream's file. It
 * declares the data types of the exchange only: the Python capsule names and
 * the C exchange API of later releases are left out.
 *
 * The include guard is upstream's (DLPACK_DLPACK_H_), so that exactly one
 * DLPack header takes effect in a translation unit: a program that includes
 * its own DLPack header (0.6, 0.8 or 1.x) before kd/dlpack.h keeps its copy
 * and this one is skipped; one that includes this one first gets DLPack 1.1,
 * and its own later include is skipped. DLPack's layouts of DLTensor and
 * DLManagedTensor are the same in every version from 0.6 on, so either way
 * the structs agree with the library's (docs/GUIDE.md "DLPack").
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif

/* The version of this header. A different major version means a different
 * layout of DLManagedTensorVersioned; a newer minor version only adds
 * enumerators. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

/* Defined only by this copy: tells a program which DLPack header took effect
 * (kdispatch's own, or one it included first). */
#define KD_DLPACK_VENDORED 1

/* Upstream's export decoration for its own (Windows) DLLs: empty here. */
#define DLPACK_DLL

#ifdef __cplusplus
extern "C" {
#endif

/* The version a DLManagedTensorVersioned was made with. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* Where the memory of a tensor lives (an int32_t in C++ too). */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,          /* host memory */
  kDLCUDA = 2,         /* CUDA device memory */
  kDLCUDAHost = 3,     /* host memory pinned by cudaMallocHost */
  kDLOpenCL = 4,       /* OpenCL: data is a cl_mem */
  kDLVulkan = 7,       /* Vulkan buffer */
  kDLMetal = 8,        /* Metal (Apple GPUs) */
  kDLVPI = 9,          /* Verilog simulator buffer */
  kDLROCM = 10,        /* ROCm (AMD GPUs) */
  kDLROCMHost = 11,    /* host memory pinned by hipMallocHost */
  kDLExtDev = 12,      /* reserved for extension devices */
  kDLCUDAManaged = 13, /* CUDA managed (unified) memory */
  kDLOneAPI = 14,      /* oneAPI unified shared memory */
  kDLWebGPU = 15,      /* WebGPU */
  kDLHexagon = 16,     /* Qualcomm Hexagon DSP */
  kDLMAIA = 17,        /* Microsoft MAIA */
} DLDeviceType;

/* A device: its type and its index among the devices of that type (0 for
 * host, pinned and managed memory). */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* The kind of an element (DLDataType.code). */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U, /* two floats of bits/2 each, real first */
  kDLBool = 6U,    /* 8 bits per element */
  /* 8-, 6- and 4-bit floats (DLPack 1.1); sub-byte ones are packed unless the
   * DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED flag says otherwise. */
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
} DLDataTypeCode;

/* An element type: a DLDataTypeCode in `code`, the bits of one lane and the
 * number of lanes (1 for a scalar element). Native byte order. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* A tensor that owns nothing: `data` (a device pointer, or a handle such as a
 * cl_mem) plus `byte_offset` is element 0; `shape` and `strides` (in
 * elements; NULL means row-major) have `ndim` entries. */
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

/* The unversioned managed tensor (DLPack before 1.0, still accepted): the
 * consumer calls deleter(self) once when done; the deleter may be NULL. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* DLManagedTensorVersioned.flags: the consumer must not write the data. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/* The data is a copy the consumer owns alone until it calls the deleter. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
/* Sub-byte elements are padded to a byte each, not packed (DLPack 1.1). */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/* The versioned managed tensor (DLPack 1.0 on). A consumer that finds a
 * major version other than its own may only call the deleter: the fields
 * after it can have moved. */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */
