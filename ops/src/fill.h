/*
 * fill.h: the fill stub (ops/cpu/fill.c), behind fill_, zero_, zeros, ones
 * and full. Private to libkdops.
 */
#ifndef KD_OPS_FILL_H
#define KD_OPS_FILL_H

#include "stub.h"

KD_EXTERN_C_BEGIN

/* Writes `value`, converted to self's dtype as kd_scalar_to_element converts
 * (with its errors: KD_EOVERFLOW, KD_ETYPE; nothing is written then), into
 * every element of self: any sizes, strides and storage offset. Elements that
 * share memory (expanded tensors) are simply written more than once. A meta
 * tensor is KD_OK with nothing written; a tensor on another device is
 * KD_EUNSUPPORTED. */
typedef kd_status kd__fill_fn(kd_tensor *self, const kd_scalar *value);
KD_DECLARE_STUB(fill_stub, kd__fill_fn);

KD_EXTERN_C_END

#endif
