/*
 * bitwise.h: the bitwise family's hand-registered kernels (ops/native/bitwise.c).
 * Private to libkdops.
 *
 * The Tensor overloads of bitwise_and, bitwise_or, bitwise_xor,
 * bitwise_left_shift and bitwise_right_shift, and every variant of
 * bitwise_not, are `manual_kernel_registration` in
 * ops/native_functions.yaml: kdgen defines them and writes their entry
 * points, but their CPU and Meta kernels are registered by bitwise.c with
 * kernel keys (KD_REGISTER_KERNEL_OVERLOAD). bitwise.c is compiled with
 * KD_NO_AUTO_REGISTER, so nothing registers them when the library loads:
 * kd_ops_open opens every descriptor of kdk__bitwise_libraries, after the
 * generated tables, and then asks kdk__bitwise_check.
 */
#ifndef KD_OPS_NATIVE_BITWISE_H
#define KD_OPS_NATIVE_BITWISE_H

#include <stddef.h>

#include "kd/library.h"

KD_EXTERN_C_BEGIN

/* Every library descriptor of bitwise.c (static; kdk__bitwise_nlibraries
 * entries). The table refers to each one, so a static link that keeps
 * kd_ops_open keeps them all. */
extern const kd_library_desc *const kdk__bitwise_libraries[];
extern const size_t kdk__bitwise_nlibraries;

/* After the descriptors were opened: KD_OK when every operator of the
 * family has its kernel-key kernels for CPU and Meta, else KD_EINTERNAL
 * naming the first one missing (a registration inside a library body that
 * failed was only reported with kd_warn). */
kd_status kdk__bitwise_check(void);

KD_EXTERN_C_END

#endif
