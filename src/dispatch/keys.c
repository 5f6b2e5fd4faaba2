/*
 * keys.c: dispatch key names, alias keys, key sets, thread-local key state.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>

#include "core/tensor_impl.h"
#include "dispatch/dispatcher_impl.h"
#include "kd/dispatch.h"

_Static_assert(KD_KEY_CPU + KD_DEVICE_CPU == KD_KEY_CPU, "backend keys follow device types");
_Static_assert(KD_KEY_CPU + KD_DEVICE_CUDA == KD_KEY_CUDA, "backend keys follow device types");
_Static_assert(KD_KEY_CPU + KD_DEVICE_META == KD_KEY_META, "backend keys follow device types");
_Static_assert(KD_KEY_CPU + KD_DEVICE_PRIVATEUSE1 == KD_KEY_PRIVATEUSE1, "backend keys");
_Static_assert(KD_KEY_CPU + KD_DEVICE_PRIVATEUSE3 == KD_KEY_PRIVATEUSE3, "backend keys");
_Static_assert(KD_KEY_CATCH_ALL < KD_KEY_INVALID_, "alias keys after runtime keys");

#define KD__KEY_NAME_CAP 32

/* Names of runtime keys by bit; NULL for reserved bits. Private keys may be
 * renamed once, so their names live in writable buffers. */
static char private_names[3][KD__KEY_NAME_CAP] = {"PrivateUse1", "PrivateUse2", "PrivateUse3"};
static bool private_renamed[3];
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *runtime_name(unsigned bit) {
  if (bit >= KD_KEY_PRIVATEUSE1 && bit <= KD_KEY_PRIVATEUSE3)
    return private_names[bit - KD_KEY_PRIVATEUSE1];
  switch (bit) {
#define KD__CASE(E, name, b) \
  case b:                    \
    return name;
    KD_DISPATCH_KEY_LIST(KD__CASE)
#undef KD__CASE
    default:
      return NULL;
  }
}

static const char *const alias_names[] = {
#define KD__ROW(E, name) name,
    KD_ALIAS_KEY_LIST(KD__ROW)
#undef KD__ROW
};

bool kd_dispatch_key_is_runtime(kd_dispatch_key key) {
  return (unsigned)key < KD_NUM_RUNTIME_KEYS && (KD__RUNTIME_KEYS >> (unsigned)key & 1);
}

bool kd_dispatch_key_is_alias(kd_dispatch_key key) {
  return key > KD_KEY_ALIAS_FIRST_ && key < KD_KEY_INVALID_;
}

kd_keyset kd_keyset_backends(void) { return KD__BACKEND_KEYS; }

static kd_keyset all_runtime_keys(void) { return KD__RUNTIME_KEYS; }

kd_keyset kd_dispatch_key_expand(kd_dispatch_key key) {
  switch (key) {
    case KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD: /* both also fill Undefined, as in PyTorch */
    case KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD:
      return kd_keyset_backends() | kd_keyset_of(KD_KEY_UNDEFINED);
    case KD_KEY_CATCH_ALL:
      return all_runtime_keys();
    default:
      return kd_dispatch_key_is_runtime(key) ? kd_keyset_of(key) : 0;
  }
}

const char *kd_dispatch_key_name(kd_dispatch_key key) {
  if (kd_dispatch_key_is_alias(key)) return alias_names[key - KD_KEY_ALIAS_FIRST_ - 1];
  const char *n = (unsigned)key < KD_NUM_RUNTIME_KEYS ? runtime_name((unsigned)key) : NULL;
  return n ? n : "Invalid";
}

static void append_known_names(kd__fmt *f) {
  bool first = true;
  for (unsigned k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    const char *n = runtime_name(k);
    if (!n) continue;
    kd__fmt_printf(f, "%s%s", first ? "" : ", ", n);
    first = false;
  }
  for (size_t i = 0; i < KD__ARRAY_SIZE(alias_names); i++) kd__fmt_printf(f, ", %s", alias_names[i]);
}

/* The key with this name, or -1. */
static int find_key(const char *name) {
  for (unsigned k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    const char *n = runtime_name(k);
    if (n && !strcmp(n, name)) return (int)k;
  }
  for (size_t i = 0; i < KD__ARRAY_SIZE(alias_names); i++)
    if (!strcmp(alias_names[i], name)) return KD_KEY_ALIAS_FIRST_ + 1 + (int)i;
  return -1;
}

kd_status kd_dispatch_key_from_name(const char *name, kd_dispatch_key *out) {
  if (!name || !out) return kd_set_error(KD_EINVAL, "kd_dispatch_key_from_name: NULL argument");
  int k = find_key(name);
  if (k >= 0) {
    *out = (kd_dispatch_key)k;
    return KD_OK;
  }
  char known[512];
  kd__fmt f = kd__fmt_init(known, sizeof known);
  append_known_names(&f);
  return kd_set_error(KD_ENOTFOUND, "unknown dispatch key '%s': expected one of %s", name, known);
}

kd_status kd_dispatch_key_rename(kd_dispatch_key key, const char *name) {
  if (key < KD_KEY_PRIVATEUSE1 || key > KD_KEY_PRIVATEUSE3)
    return kd_set_error(KD_EINVAL,
                        "kd_dispatch_key_rename: %s is not a private backend key (expected "
                        "PrivateUse1..3)",
                        kd_dispatch_key_name(key));
  size_t n = name ? strlen(name) : 0;
  bool ok = n > 0 && n < KD__KEY_NAME_CAP && isalpha((unsigned char)name[0]);
  for (size_t i = 0; ok && i < n; i++)
    ok = isalnum((unsigned char)name[i]) || name[i] == '_';
  if (!ok)
    return kd_set_error(KD_EINVAL,
                        "kd_dispatch_key_rename: bad key name '%s': expected letters, digits "
                        "and '_', starting with a letter, at most %d bytes",
                        name ? name : "(null)", KD__KEY_NAME_CAP - 1);
  kd_status st = KD_OK;
  pthread_mutex_lock(&key_lock);
  int slot = key - KD_KEY_PRIVATEUSE1;
  int existing = find_key(name);
  if (existing >= 0 && existing != (int)key) {
    st = kd_set_error(KD_EEXIST, "kd_dispatch_key_rename: the name '%s' is taken by key %s",
                      name, kd_dispatch_key_name((kd_dispatch_key)existing));
  } else if (private_renamed[slot]) {
    if (strcmp(private_names[slot], name) != 0)
      st = kd_set_error(KD_EEXIST, "kd_dispatch_key_rename: key PrivateUse%d is already named '%s'",
                        slot + 1, private_names[slot]);
  } else {
    snprintf(private_names[slot], KD__KEY_NAME_CAP, "%s", name);
    private_renamed[slot] = true;
  }
  pthread_mutex_unlock(&key_lock);
  return st;
}

kd_dispatch_key kd_backend_key(kd_device_type type) {
  if (type < 0 || type >= KD_DEVICE_TYPE_COUNT) return KD_KEY_UNDEFINED;
  return (kd_dispatch_key)(KD_KEY_CPU + (int)type);
}

size_t kd_keyset_format(kd_keyset ks, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  kd__fmt_puts(&f, "[");
  bool first = true;
  for (unsigned k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    if (!(ks & ((kd_keyset)1 << k))) continue;
    const char *n = runtime_name(k);
    if (n)
      kd__fmt_printf(&f, "%s%s", first ? "" : ", ", n);
    else
      kd__fmt_printf(&f, "%sKey%u", first ? "" : ", ", k);
    first = false;
  }
  kd__fmt_puts(&f, "]");
  return f.len;
}

kd_keyset kd_tensor_key_set(const kd_tensor *tensor) { return tensor ? tensor->keys : 0; }

/* ---- Thread-local include/exclude ------------------------------------------- */

_Thread_local kd__tls_mask kd__tls_keys
    __attribute__((tls_model("initial-exec"))) = {0, ~(kd_keyset)0};

kd_tls_keys kd_tls_keys_get(void) {
  kd_tls_keys k = {kd__tls_keys.include, ~kd__tls_keys.keep};
  return k;
}

kd_tls_keys kd_tls_include(kd_keyset keys) {
  kd_tls_keys prev = kd_tls_keys_get();
  kd__tls_keys.include |= keys;
  return prev;
}

kd_tls_keys kd_tls_exclude(kd_keyset keys) {
  kd_tls_keys prev = kd_tls_keys_get();
  kd__tls_keys.keep &= ~keys;
  return prev;
}

void kd_tls_restore(kd_tls_keys previous) {
  kd__tls_keys.include = previous.include;
  kd__tls_keys.keep = ~previous.exclude;
}
