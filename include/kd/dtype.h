/*
 * dtype.h: element types, from one table, and PyTorch's type-promotion rules.
 */
#ifndef KD_DTYPE_H
#define KD_DTYPE_H

#include "kd/common.h"
#include "kd/status.h"

KD_EXTERN_C_BEGIN

/* The kinds of element type, in PyTorch's category order for promotion. */
typedef enum kd_dtype_kind {
  KD_KIND_BOOL = 0,
  KD_KIND_UINT = 1,    /* unsigned integer */
  KD_KIND_INT = 2,     /* signed integer */
  KD_KIND_FLOAT = 3,   /* floating point, real */
  KD_KIND_COMPLEX = 4, /* complex, two floats */
} kd_dtype_kind;

/* X(ENUM, name, size in bytes, kind). The order is the ABI: append only.
 * float16 and bfloat16 are stored as uint16_t bit patterns; complex64 as two
 * floats, complex128 as two doubles. */
#define KD_DTYPE_LIST(X)                   \
  X(BOOL, bool, 1, KD_KIND_BOOL)           \
  X(UINT8, uint8, 1, KD_KIND_UINT)         \
  X(INT8, int8, 1, KD_KIND_INT)            \
  X(INT16, int16, 2, KD_KIND_INT)          \
  X(INT32, int32, 4, KD_KIND_INT)          \
  X(INT64, int64, 8, KD_KIND_INT)          \
  X(FLOAT16, float16, 2, KD_KIND_FLOAT)    \
  X(BFLOAT16, bfloat16, 2, KD_KIND_FLOAT)  \
  X(FLOAT32, float32, 4, KD_KIND_FLOAT)    \
  X(FLOAT64, float64, 8, KD_KIND_FLOAT)    \
  X(COMPLEX64, complex64, 8, KD_KIND_COMPLEX) \
  X(COMPLEX128, complex128, 16, KD_KIND_COMPLEX)

typedef enum kd_dtype {
  KD_DTYPE_UNDEFINED = -1, /* "no dtype": the start of a promotion, an unset option */
#define KD_DTYPE_ENUM_(E, name, size, kind) KD_##E,
  KD_DTYPE_LIST(KD_DTYPE_ENUM_)
#undef KD_DTYPE_ENUM_
  KD_DTYPE_COUNT
} kd_dtype;

/* A set of dtypes: bit d is dtype d. */
typedef uint32_t kd_dtype_set;
#define KD_DTYPE_BIT(dt) ((kd_dtype_set)1 << (unsigned)(dt))
#define KD_ALL_DTYPES (((kd_dtype_set)1 << KD_DTYPE_COUNT) - 1)

/* The set of n dtypes (invalid ones are left out). */
static inline kd_dtype_set kd_dtype_set_of(const kd_dtype *dtypes, size_t n) {
  kd_dtype_set set = 0;
  for (size_t i = 0; i < n; i++)
    if ((int)dtypes[i] >= 0 && (int)dtypes[i] < (int)KD_DTYPE_COUNT) set |= KD_DTYPE_BIT(dtypes[i]);
  return set;
}

/* True for KD_BOOL .. KD_COMPLEX128. */
KD_API bool kd_dtype_valid(kd_dtype dtype);

/* "float32" etc.; "undefined" for KD_DTYPE_UNDEFINED, "invalid" otherwise. Static storage. */
KD_API const char *kd_dtype_name(kd_dtype dtype);

/* Element size in bytes; 0 for an invalid dtype. */
KD_API size_t kd_dtype_size(kd_dtype dtype);

/* The kind; KD_KIND_BOOL for an invalid dtype (check kd_dtype_valid first). */
KD_API kd_dtype_kind kd_dtype_kind_of(kd_dtype dtype);

/* Looks a dtype up by name: the project's names ("float32", "int64", ...) and
 * PyTorch's ("float", "double", "half", "long", "int", "short", "char", "byte",
 * "cfloat", "cdouble", "Float", "Long", ...). KD_ENOTFOUND with a message listing
 * the names when there is no such dtype; *out is untouched on error. */
KD_API kd_status kd_dtype_from_name(const char *name, kd_dtype *out);

KD_API bool kd_dtype_is_integral(kd_dtype dtype, bool include_bool);
KD_API bool kd_dtype_is_floating(kd_dtype dtype); /* real floating point */
KD_API bool kd_dtype_is_complex(kd_dtype dtype);

/* complex64 <-> float32, complex128 <-> float64, float16/bfloat16 -> complex64.
 * KD_DTYPE_UNDEFINED where there is no such type. */
KD_API kd_dtype kd_dtype_to_complex(kd_dtype dtype);
KD_API kd_dtype kd_dtype_to_real(kd_dtype dtype);

/* PyTorch's promote_types: the smallest dtype both can be converted to without
 * losing their category (bool < integral < floating < complex). uint8 with int8
 * gives int16; float16 with bfloat16 gives float32. KD_DTYPE_UNDEFINED with an
 * undefined or invalid operand. Symmetric. */
KD_API kd_dtype kd_promote_types(kd_dtype a, kd_dtype b);

/* The default floating dtype (float32 unless changed), used for float scalars
 * and factories. Process-wide. Setting it accepts float16, bfloat16, float32 and
 * float64; anything else is KD_EINVAL and leaves it unchanged. The default
 * complex dtype follows it (complex128 for float64, else complex64).
 * Thread-safe (an atomic store): a factory running on another thread
 * meanwhile uses the old or the new default. */
KD_API kd_dtype kd_get_default_dtype(void);
KD_API kd_status kd_set_default_dtype(kd_dtype dtype);

/* PyTorch's result_type for an operation mixing tensors and scalars. Feed every
 * operand, then read the result. Tensors with dimensions decide first; 0-dim
 * tensors next; Python-style scalars ("wrapped numbers") last, and the later
 * groups only count when they are of a higher category (so int8 tensor + 1000
 * stays int8, int8 tensor + 2.5 is the default float dtype). */
typedef struct kd_result_type_state {
  kd_dtype dim_result;     /* promotion of tensors with ndim > 0 */
  kd_dtype zero_result;    /* promotion of 0-dim tensors */
  kd_dtype wrapped_result; /* promotion of scalars */
} kd_result_type_state;

KD_API void kd_result_type_init(kd_result_type_state *state);
/* A tensor operand of this dtype and number of dimensions. */
KD_API void kd_result_type_add_tensor(kd_result_type_state *state, kd_dtype dtype, int ndim);
/* A scalar operand of this dtype: bool, int64 (any integral), a floating dtype
 * (counted as the default dtype), or a complex dtype (the default complex). */
KD_API void kd_result_type_add_scalar(kd_result_type_state *state, kd_dtype scalar_dtype);
/* The result; KD_DTYPE_UNDEFINED when nothing was added. */
KD_API kd_dtype kd_result_type_finish(const kd_result_type_state *state);

/* IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN). */
KD_API float kd_half_to_float(uint16_t bits);
KD_API uint16_t kd_float_to_half(float value);
KD_API float kd_bfloat16_to_float(uint16_t bits);
KD_API uint16_t kd_float_to_bfloat16(float value);

KD_EXTERN_C_END

#endif /* KD_DTYPE_H */
