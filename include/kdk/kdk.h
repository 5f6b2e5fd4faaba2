/*
 * kdk/kdk.h: the kernel-author kit, all of it (docs/CODEGEN.md,
 * "Kernel-author kit"). Link with libkdops: pkg-config kdops, or CMake's
 * kdispatch::kdops.
 */
#ifndef KDK_KDK_H
#define KDK_KDK_H

#include "kd/kd.h"
#include "kdk/common.h"
#include "kdk/iter.h"
#include "kdk/parallel.h"
#include "kdk/structured.h"
#include "kdk/stub.h"
#include "kdk/stubs.h"
#include "kdk/view.h"

#endif
