/*
 * status.h: status codes, the thread-local error message, warnings.
 *
 * Every fallible kdispatch function returns a kd_status. KD_OK is zero; errors
 * are negative. On error the function also records a message in thread-local
 * storage that names what failed (operator, argument, dtype) and what was
 * expected; kd_last_error() reads it. A successful call does not clear the
 * message: read it right after a failing call.
 */
#ifndef KD_STATUS_H
#define KD_STATUS_H

#include <stdarg.h>

#include "kd/common.h"

KD_EXTERN_C_BEGIN

/* X(NAME, value, description). Append only: values are part of the ABI. */
#define KD_STATUS_LIST(X)                                        \
  X(OK, 0, "success")                                            \
  X(EINVAL, -1, "invalid argument")                              \
  X(ENOMEM, -2, "out of memory")                                 \
  X(ESYNTAX, -3, "syntax error")                                 \
  X(ETYPE, -4, "type mismatch")                                  \
  X(ERANGE, -5, "value or index out of range")                   \
  X(ENOTFOUND, -6, "not found")                                  \
  X(EEXIST, -7, "already exists")                                \
  X(EUNSUPPORTED, -8, "not supported")                           \
  X(ESTATE, -9, "operation not valid in the current state")      \
  X(EOVERFLOW, -10, "value does not fit the destination type")   \
  X(ENOKERNEL, -11, "no kernel for this dispatch key or dtype")  \
  X(EINTERNAL, -12, "internal error")                            \
  X(EBUSY, -13, "resource in use")                              \
  X(EDEVICE, -14, "device or driver error")

typedef enum kd_status {
#define KD_STATUS_ENUM_(name, value, desc) KD_##name = value,
  KD_STATUS_LIST(KD_STATUS_ENUM_)
#undef KD_STATUS_ENUM_
} kd_status;

/* A short English description of a status ("invalid argument"); static storage,
 * never NULL ("unknown status" for a value outside the list). */
KD_API const char *kd_status_str(kd_status status);

/* The status's name ("KD_EINVAL"); static storage, never NULL. */
KD_API const char *kd_status_name(kd_status status);

/* The message of the last error recorded on this thread, or "" when there is
 * none. The string is owned by the thread and valid until the next kdispatch
 * call on this thread that records an error; copy it to keep it. */
KD_API const char *kd_last_error(void);

/* The status of the last error recorded on this thread (KD_OK when none). */
KD_API kd_status kd_last_status(void);

/* Forget the last error of this thread. */
KD_API void kd_clear_error(void);

/* Record an error for this thread and return `status` unchanged, so that code
 * can `return kd_set_error(KD_EINVAL, "...", ...)`. Kernels and backends use it
 * too. The message is formatted as printf does and cut at 1023 bytes. */
KD_API kd_status kd_set_error(kd_status status, const char *fmt, ...) KD_PRINTF_LIKE(2, 3);
KD_API kd_status kd_set_errorv(kd_status status, const char *fmt, va_list ap);

/* Warnings (an override, a resize of a non-empty out tensor, ...). By default
 * they go to stderr as "kdispatch warning: MESSAGE". A handler replaces that for
 * the whole process; NULL restores the default. The message is only valid
 * during the call. The handler is called on the warning thread, possibly on
 * several threads at once. Not thread-safe against itself: set the handler
 * from one thread at a time (a kd_warn on another thread meanwhile is safe
 * and uses the old or the new handler). */
typedef void (*kd_warning_fn)(const char *message, void *user_data);
KD_API void kd_set_warning_handler(kd_warning_fn fn, void *user_data);
KD_API void kd_warn(const char *fmt, ...) KD_PRINTF_LIKE(1, 2);

KD_EXTERN_C_END

#endif /* KD_STATUS_H */
