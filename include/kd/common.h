/*
 * kdispatch - operator registration and dispatch for C.
 *
 * common.h: the export macro, version macros and the runtime version call.
 * Every public header includes this one first.
 */
#ifndef KD_COMMON_H
#define KD_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libkdispatch's export macro (libkdops has its own, KDK_API in kdk/common.h).
 * The library is built with hidden visibility by default; every public
 * function is marked KD_API. On Windows the build defines
 * KD_BUILDING_KDISPATCH for the DLL and KD_STATIC for the static archive,
 * whose users define KD_STATIC too (the CMake target does). */
#if defined(_WIN32)
#  if defined(KD_BUILDING_KDISPATCH)
#    define KD_API __declspec(dllexport)
#  elif defined(KD_STATIC)
#    define KD_API
#  else
#    define KD_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define KD_API __attribute__((visibility("default")))
#else
#  define KD_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define KD_PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define KD_PRINTF_LIKE(fmt, args)
#endif

#ifdef __cplusplus
#  define KD_EXTERN_C_BEGIN extern "C" {
#  define KD_EXTERN_C_END }
#else
#  define KD_EXTERN_C_BEGIN
#  define KD_EXTERN_C_END
#endif

/* Version of the headers. kd_version() gives the version of the library that
 * is linked; they differ when a program runs against a newer shared library. */
#define KD_VERSION_MAJOR 1
#define KD_VERSION_MINOR 0
#define KD_VERSION_PATCH 0
#define KD_VERSION_HEX \
  ((KD_VERSION_MAJOR << 16) | (KD_VERSION_MINOR << 8) | (KD_VERSION_PATCH))
#define KD_STRINGIFY_(x) #x
#define KD_STRINGIFY(x) KD_STRINGIFY_(x)
#define KD_VERSION_STRING            \
  KD_STRINGIFY(KD_VERSION_MAJOR)     \
  "." KD_STRINGIFY(KD_VERSION_MINOR) \
  "." KD_STRINGIFY(KD_VERSION_PATCH)

KD_EXTERN_C_BEGIN

/* The linked library's version as KD_VERSION_HEX computes it. */
KD_API unsigned kd_version(void);

/* The linked library's version as "MAJOR.MINOR.PATCH". Static storage; never NULL. */
KD_API const char *kd_version_string(void);

KD_EXTERN_C_END

#endif /* KD_COMMON_H */
