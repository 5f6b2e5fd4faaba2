/*
 * status.c: status names, the thread-local error message, warnings.
 */
#include <stdio.h>

#include "core/internal.h"
#include "kd/status.h"

/* A static link keeps the start-up checks (src/backend/startup.c: the
 * second-copy check and KD_BACKENDS) through this reference. */
void kd__startup(void);
__attribute__((used)) static void (*const kd__startup_ref)(void) = kd__startup;

#define KD__ERROR_CAP 1024

static _Thread_local char tls_message[KD__ERROR_CAP];
static _Thread_local kd_status tls_status = KD_OK;

const char *kd_status_str(kd_status status) {
  switch (status) {
#define KD__CASE(name, value, desc) \
  case KD_##name:                   \
    return desc;
    KD_STATUS_LIST(KD__CASE)
#undef KD__CASE
  }
  return "unknown status";
}

const char *kd_status_name(kd_status status) {
  switch (status) {
#define KD__CASE(name, value, desc) \
  case KD_##name:                   \
    return "KD_" #name;
    KD_STATUS_LIST(KD__CASE)
#undef KD__CASE
  }
  return "KD_UNKNOWN";
}

const char *kd_last_error(void) { return tls_message; }

kd_status kd_last_status(void) { return tls_status; }

void kd_clear_error(void) {
  tls_message[0] = '\0';
  tls_status = KD_OK;
}

kd_status kd_set_errorv(kd_status status, const char *fmt, va_list ap) {
  /* Format into a scratch buffer first: the arguments may point into
   * tls_message itself (a message that wraps the previous one). */
  char scratch[KD__ERROR_CAP];
  vsnprintf(scratch, sizeof scratch, fmt ? fmt : "", ap);
  memcpy(tls_message, scratch, sizeof scratch);
  tls_status = status;
  return status;
}

kd_status kd_set_error(kd_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kd_set_errorv(status, fmt, ap);
  va_end(ap);
  return status;
}

kd_status kd__oom(const char *what) {
  return kd_set_error(KD_ENOMEM, "out of memory allocating %s", what);
}

/* ---- Warnings ------------------------------------------------------------ */

typedef struct kd__warning_handler {
  kd_warning_fn fn;
  void *user_data;
} kd__warning_handler;

static _Atomic(kd__warning_handler *) warning_handler;
static kd__warning_handler warning_slots[2];
static atomic_int warning_slot;

void kd_set_warning_handler(kd_warning_fn fn, void *user_data) {
  if (!fn) {
    atomic_store(&warning_handler, NULL);
    return;
  }
  /* Two slots flip so that a concurrent kd_warn reads a complete pair. */
  int slot = atomic_fetch_add(&warning_slot, 1) & 1;
  warning_slots[slot].fn = fn;
  warning_slots[slot].user_data = user_data;
  atomic_store(&warning_handler, &warning_slots[slot]);
}

void kd_warn(const char *fmt, ...) {
  char msg[KD__ERROR_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kd__warning_handler *h = atomic_load(&warning_handler);
  if (h) {
    h->fn(msg, h->user_data);
  } else {
    fprintf(stderr, "kdispatch warning: %s\n", msg);
  }
}

/* ---- Formatting helpers --------------------------------------------------- */

void kd__fmt_putn(kd__fmt *f, const char *s, size_t n) {
  if (f->buf && f->len + 1 < f->cap) {
    size_t room = f->cap - 1 - f->len;
    size_t k = n < room ? n : room;
    memcpy(f->buf + f->len, s, k);
    f->buf[f->len + k] = '\0';
  }
  f->len += n;
}

void kd__fmt_puts(kd__fmt *f, const char *s) { kd__fmt_putn(f, s, strlen(s)); }

void kd__fmt_printf(kd__fmt *f, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    kd__fmt_putn(f, tmp, (size_t)n);
    return;
  }
  char *big = kd__malloc((size_t)n + 1);
  if (!big) return;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  kd__fmt_putn(f, big, (size_t)n);
  kd__free(big);
}

