/*
 * An allow-list in the form `kd trace -o allow.h` writes (include/kd/selective.h),
 * for test_backend_gen_selective: the proof backend "fakegen" compiled with
 * `-include` of this file keeps its kernels of aten::add.Tensor and of the
 * primitives a device tensor is made from (empty.memory_format, empty_strided),
 * on PrivateUse1, and leaves out the rest (mul, neg, sub, exp.out, the new
 * operator fakegen::scale_add, ...) with their wrappers, direct calls and,
 * since no mul operator is kept, mul_stub's device loop registration.
 */
#ifndef KD_SELECTIVE_ALLOW_LIST_H
#define KD_SELECTIVE_ALLOW_LIST_H

#define KD_SELECTIVE_BUILD 1

#define KD_ALLOW_aten__add_Tensor KD_ALLOW_DTYPES(0xffffffffu) /* aten::add.Tensor, any key */
#define KD_ALLOW_aten__add_Tensor__PRIVATEUSE1 KD_ALLOW_DTYPES(0xffffffffu)

#define KD_ALLOW_aten__empty_memory_format KD_ALLOW_DTYPES(0xffffffffu) /* aten::empty.memory_format, any key */
#define KD_ALLOW_aten__empty_memory_format__PRIVATEUSE1 KD_ALLOW_DTYPES(0xffffffffu)

#define KD_ALLOW_aten__empty_strided KD_ALLOW_DTYPES(0xffffffffu) /* aten::empty_strided, any key */
#define KD_ALLOW_aten__empty_strided__PRIVATEUSE1 KD_ALLOW_DTYPES(0xffffffffu)

#endif /* KD_SELECTIVE_ALLOW_LIST_H */
