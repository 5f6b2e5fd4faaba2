/*
 * kd.h: the whole public API of kdispatch in one include.
 */
#ifndef KD_KD_H
#define KD_KD_H

#include "kd/common.h"
#include "kd/version.h"
#include "kd/status.h"
#include "kd/memory.h"
#include "kd/dtype.h"
#include "kd/scalar.h"
#include "kd/device.h"
#include "kd/tensor.h"
#include "kd/tensor_head.h"
#include "kd/value.h"
#include "kd/schema.h"
#include "kd/dispatch.h"
#include "kd/library.h"
#include "kd/selective.h"
#include "kd/kernel_def.h"
#include "kd/backend.h"
#include "kd/cpu_fallback.h"

#endif /* KD_KD_H */
