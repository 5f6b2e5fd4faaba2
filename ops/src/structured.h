/*
 * structured.h: libkdops' view of the structured-kernel runtime (public:
 * include/kdk/structured.h).
 */
#ifndef KD_OPS_STRUCTURED_H
#define KD_OPS_STRUCTURED_H

#include "kdk/structured.h"

#endif
