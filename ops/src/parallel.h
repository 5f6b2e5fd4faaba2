/*
 * parallel.h: libkdops' view of its thread pool (public: include/kdk/parallel.h).
 */
#ifndef KD_OPS_PARALLEL_H
#define KD_OPS_PARALLEL_H

#include "kdk/parallel.h"

#endif
