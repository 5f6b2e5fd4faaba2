/*
 * fill.h: the fill stub (ops/cpu/fill.c), behind fill_, zero_, zeros, ones
 * and full. Private to libkdops.
 */
#ifndef KD_OPS_FILL_H
#define KD_OPS_FILL_H

#include "kdk/stubs.h"
#include "stub.h"

KD_EXTERN_C_BEGIN

/* The loop type and the stub are public: include/kdk/stubs.h. */
KD_DECLARE_STUB_CAPS(fill_stub);

KD_EXTERN_C_END

#endif
