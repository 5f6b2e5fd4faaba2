/*
 * allow_macros.h: a hand-written allow-list in the form `kd trace` writes,
 * the input of test_selective_macros.c (force-included with -include).
 *
 *   sm::neg        CPU: int64, float32
 *   sm::abs        CPU: float32 (its kernel serves only int32 and int64)
 *   sm::add.Tensor CPU: float32 (an overload: the token is add_Tensor)
 *   sm::mul.Tensor CPU: float32 (registered with KD_REGISTER_KERNEL_OVERLOAD)
 *   sm::twice      no tensor (Undefined key): any dtype
 *
 * Not listed: sm::neg on META, sm::sq, sm::sub, sm::thrice, sm::mul and
 * sm::mul.Scalar.
 */
#ifndef KD_TEST_ALLOW_MACROS_H
#define KD_TEST_ALLOW_MACROS_H

#define KD_SELECTIVE_BUILD 1

#define KD_ALLOW_sm__abs KD_ALLOW_DTYPES(0x00000100u) /* sm::abs, any key: [float32] */
#define KD_ALLOW_sm__abs__CPU KD_ALLOW_DTYPES(0x00000100u) /* sm::abs CPU [float32] */

#define KD_ALLOW_sm__add_Tensor KD_ALLOW_DTYPES(0x00000100u) /* sm::add.Tensor, any key: [float32] */
#define KD_ALLOW_sm__add_Tensor__CPU KD_ALLOW_DTYPES(0x00000100u) /* sm::add.Tensor CPU [float32] */

#define KD_ALLOW_sm__mul_Tensor KD_ALLOW_DTYPES(0x00000100u) /* sm::mul.Tensor, any key: [float32] */
#define KD_ALLOW_sm__mul_Tensor__CPU KD_ALLOW_DTYPES(0x00000100u) /* sm::mul.Tensor CPU [float32] */

#define KD_ALLOW_sm__neg KD_ALLOW_DTYPES(0x00000120u) /* sm::neg, any key: [int64, float32] */
#define KD_ALLOW_sm__neg__CPU KD_ALLOW_DTYPES(0x00000120u) /* sm::neg CPU [int64, float32] */

#define KD_ALLOW_sm__twice KD_ALLOW_DTYPES(0xffffffffu) /* sm::twice, any key: [any dtype] */
#define KD_ALLOW_sm__twice__UNDEFINED KD_ALLOW_DTYPES(0xffffffffu) /* sm::twice UNDEFINED [any dtype] */

#endif
