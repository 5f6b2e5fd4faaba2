/*
 * kdk/common.h: the kernel-author kit's export macro and ABI version
 * (docs/CODEGEN.md, "Kernel-author kit").
 *
 * The kit is the public part of libkdops (the operator library): the tensor
 * iterator (kdk/iter.h), the structured-kernel runtime (kdk/structured.h),
 * dispatch stubs keyed by CPU capability and by device (kdk/stub.h, and
 * libkdops' own stubs in kdk/stubs.h), the thread pool (kdk/parallel.h),
 * the borrowed tensor view (kdk/view.h) and the generated declarations of
 * libkdops' meta functions and native kernels (kdk/native.h). Its names
 * start with kdk_ / KDK_; kdk__ is libkdops-internal and never exported.
 *
 * Link with libkdops (pkg-config kdops, CMake kdispatch::kdops).
 */
#ifndef KDK_COMMON_H
#define KDK_COMMON_H

#include "kd/common.h"

/* libkdops' export macro: libkdops is built with hidden visibility; every
 * kit function and object is marked KDK_API. */
#if defined(_WIN32)
#  if defined(KDK_BUILDING_KDOPS)
#    define KDK_API __declspec(dllexport)
#  elif defined(KDK_STATIC)
#    define KDK_API
#  else
#    define KDK_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define KDK_API __attribute__((visibility("default")))
#else
#  define KDK_API
#endif

/* The kit's ABI version. Structs that kernel code puts on its stack
 * (kdk_iter, kdk_structured) are part of libkdops' ABI: their init
 * functions (inline, compiled into the caller) record this version and the
 * struct's size as the caller's headers define them, and libkdops' entry
 * points that take the struct (kdk_iter_build, kdk_structured_set_output)
 * refuse a struct whose version or size differs from their own with
 * KD_EUNSUPPORTED and a message naming both, instead of reading memory the
 * caller never allocated. A release that changes either struct bumps this
 * number (and libkdops' soname). */
#define KDK_API_VERSION 1

#endif
