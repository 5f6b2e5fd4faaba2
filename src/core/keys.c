/*
 * keys.c: dispatch key names, functionalities and backends, alias keys, key
 * sets. (The thread-local key sets and inference mode are in
 * src/dispatch/tls.c.)
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/keys_impl.h"
#include "kd/keys.h"

_Static_assert(KD_KEY_CPU + KD_DEVICE_CPU == KD_KEY_CPU, "backend keys follow device types");
_Static_assert(KD_KEY_CPU + KD_DEVICE_CUDA == KD_KEY_CUDA, "backend keys follow device types");
_Static_assert(KD_KEY_CPU + KD_DEVICE_META == KD_KEY_META, "backend keys follow device types");
_Static_assert(KD_KEY_CPU + KD_DEVICE_PRIVATEUSE1 == KD_KEY_PRIVATEUSE1, "backend keys");
_Static_assert(KD_KEY_CPU + KD_DEVICE_PRIVATEUSE3 == KD_KEY_PRIVATEUSE3, "backend keys");
_Static_assert(KD_NUM_BACKENDS == 6, "six keys per functionality");
_Static_assert(KD_KEY_QUANTIZED_CPU == KD_KEY_CPU + KD_NUM_BACKENDS, "functionalities stack");
_Static_assert(KD_KEY_SPARSE_CPU == KD_KEY_QUANTIZED_CPU + KD_NUM_BACKENDS, "functionalities");
_Static_assert(KD_KEY_SPARSE_CSR_CPU == KD_KEY_SPARSE_CPU + KD_NUM_BACKENDS, "functionalities");
_Static_assert(KD_KEY_NESTED_TENSOR_CPU == KD_KEY_SPARSE_CSR_CPU + KD_NUM_BACKENDS, "stack");
_Static_assert(KD_KEY_NESTED_TENSOR_PRIVATEUSE3 < KD_KEY_BACKEND_SELECT, "BackendSelect above");
_Static_assert(KD_KEY_AUTOGRAD_PRIVATEUSE3 == KD_KEY_AUTOGRAD_CPU + KD_NUM_BACKENDS - 1, "col");
_Static_assert(KD_KEY_AD_INPLACE_OR_VIEW < KD_KEY_AUTOGRAD_OTHER, "PyTorch's order");
_Static_assert(KD_KEY_AUTOGRAD_OTHER < KD_KEY_AUTOGRAD_CPU, "PyTorch's order");
_Static_assert(KD_KEY_AUTOGRAD_PRIVATEUSE3 < KD_KEY_AUTOGRAD_NESTED_TENSOR, "PyTorch's order");
_Static_assert(KD_KEY_MODE2 < KD_NUM_RUNTIME_KEYS, "runtime keys fit the set");
_Static_assert(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR < KD_KEY_INVALID_, "aliases");

#define KD__KEY_NAME_CAP 64
#define KD__PRIVATE_NAME_CAP 32

/* Names of the private columns, by functionality and private backend: they
 * change when a private key is renamed, so they live in writable buffers,
 * written once under key_lock before the rename is published. */
static char private_names[KD_FUNCTIONALITY_COUNT][3][KD__KEY_NAME_CAP];
static char private_base[3][KD__PRIVATE_NAME_CAP] = {"PrivateUse1", "PrivateUse2",
                                                      "PrivateUse3"};
static bool private_renamed[3];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const functionality_prefix[] = {
#define KD__ROW(E, prefix, first) prefix,
    KD_FUNCTIONALITY_LIST(KD__ROW)
#undef KD__ROW
};
static const unsigned functionality_first[] = {
#define KD__ROW(E, prefix, first) first,
    KD_FUNCTIONALITY_LIST(KD__ROW)
#undef KD__ROW
};

static void fill_private_names(void) {
  for (int f = 0; f < KD_FUNCTIONALITY_COUNT; f++)
    for (int p = 0; p < 3; p++)
      snprintf(private_names[f][p], KD__KEY_NAME_CAP, "%.16s%.31s", functionality_prefix[f],
               private_base[p]);
}

static void names_init(void) { pthread_once(&names_once, fill_private_names); }

bool kd_dispatch_key_split(kd_dispatch_key key, kd_functionality *f, kd_device_type *backend) {
  for (int i = 0; i < KD_FUNCTIONALITY_COUNT; i++) {
    unsigned first = functionality_first[i];
    if ((unsigned)key >= first && (unsigned)key < first + KD_NUM_BACKENDS) {
      if (f) *f = (kd_functionality)i;
      if (backend) *backend = (kd_device_type)((unsigned)key - first);
      return true;
    }
  }
  return false;
}

kd_dispatch_key kd_dispatch_key_of(kd_functionality f, kd_device_type backend) {
  if ((unsigned)f >= KD_FUNCTIONALITY_COUNT || (unsigned)backend >= KD_NUM_BACKENDS)
    return KD_KEY_INVALID_;
  return (kd_dispatch_key)(functionality_first[f] + (unsigned)backend);
}

/* The name of runtime key `bit`, or NULL for a reserved bit. */
static const char *runtime_name(unsigned bit) {
  kd_functionality f;
  kd_device_type b;
  if (kd_dispatch_key_split((kd_dispatch_key)bit, &f, &b) && b >= KD_DEVICE_PRIVATEUSE1) {
    names_init();
    return private_names[f][b - KD_DEVICE_PRIVATEUSE1];
  }
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

kd_keyset kd_keyset_functionality(kd_functionality f) {
  return (unsigned)f < KD_FUNCTIONALITY_COUNT ? KD__FUNCTIONALITY_KEYS(functionality_first[f]) : 0;
}

kd_keyset kd_keyset_autograd(void) { return KD__AUTOGRAD_KEYS; }

/* PyTorch's backend_dispatch_keyset: the backend keys of the functionalities
 * that are not autograd (dense, Quantized, Sparse, SparseCsr), NestedTensor
 * excluded (c10's Note [NestedTensor Not Included in Backend Keys]). */
static kd_keyset backend_functionality_keys(void) {
  return KD__BACKEND_KEYS | KD__AUTOGRAD_OTHER_BACKENDS;
}

kd_keyset kd_dispatch_key_expand(kd_dispatch_key key) {
  kd_keyset undefined = kd_keyset_of(KD_KEY_UNDEFINED);
  kd_keyset nested = KD__NESTED_KEYS;
  switch (key) {
    /* The composite keys also fill Undefined, as PyTorch does. */
    case KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD:
      return backend_functionality_keys() | undefined;
    case KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL:
      return (backend_functionality_keys() & ~KD__FUNCTIONALITY_KEYS(KD_KEY_SPARSE_CPU)) |
             undefined;
    case KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD:
      return backend_functionality_keys() | nested | KD__AUTOGRAD_KEYS | undefined;
    case KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR:
      return nested | kd_keyset_of(KD_KEY_AUTOGRAD_NESTED_TENSOR); /* not Undefined (2.x) */
    case KD_KEY_AUTOGRAD:
      return KD__AUTOGRAD_KEYS;
    case KD_KEY_CATCH_ALL:
      return KD__RUNTIME_KEYS;
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
  pthread_mutex_lock(&key_lock);
  int k = find_key(name);
  pthread_mutex_unlock(&key_lock);
  if (k >= 0) {
    *out = (kd_dispatch_key)k;
    return KD_OK;
  }
  char known[2048];
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
  bool ok = n > 0 && n < KD__PRIVATE_NAME_CAP && isalpha((unsigned char)name[0]);
  for (size_t i = 0; ok && i < n; i++)
    ok = isalnum((unsigned char)name[i]) || name[i] == '_';
  if (!ok)
    return kd_set_error(KD_EINVAL,
                        "kd_dispatch_key_rename: bad key name '%s': expected letters, digits "
                        "and '_', starting with a letter, at most %d bytes",
                        name ? name : "(null)", KD__PRIVATE_NAME_CAP - 1);
  names_init();
  kd_status st = KD_OK;
  pthread_mutex_lock(&key_lock);
  int slot = key - KD_KEY_PRIVATEUSE1;
  if (private_renamed[slot]) {
    if (strcmp(private_base[slot], name) != 0)
      st = kd_set_error(KD_EEXIST, "kd_dispatch_key_rename: key PrivateUse%d is already named '%s'",
                        slot + 1, private_base[slot]);
    pthread_mutex_unlock(&key_lock);
    return st;
  }
  /* Every name of the column must be free (or the column's own). */
  char col[KD_FUNCTIONALITY_COUNT][KD__KEY_NAME_CAP];
  for (int f = 0; f < KD_FUNCTIONALITY_COUNT && st == KD_OK; f++) {
    snprintf(col[f], KD__KEY_NAME_CAP, "%.16s%.31s", functionality_prefix[f], name);
    int existing = find_key(col[f]);
    if (existing >= 0 && existing != (int)kd_dispatch_key_of((kd_functionality)f,
                                                              (kd_device_type)(KD_DEVICE_PRIVATEUSE1 + slot)))
      st = kd_set_error(KD_EEXIST, "kd_dispatch_key_rename: the name '%s' is taken by key %s",
                        col[f], kd_dispatch_key_name((kd_dispatch_key)existing));
  }
  if (st == KD_OK) {
    snprintf(private_base[slot], KD__PRIVATE_NAME_CAP, "%s", name);
    for (int f = 0; f < KD_FUNCTIONALITY_COUNT; f++)
      memcpy(private_names[f][slot], col[f], KD__KEY_NAME_CAP);
    private_renamed[slot] = true;
  }
  pthread_mutex_unlock(&key_lock);
  return st;
}

kd_dispatch_key kd_backend_key(kd_device_type type) {
  if ((unsigned)type >= KD_NUM_BACKENDS) return KD_KEY_UNDEFINED;
  return (kd_dispatch_key)(KD_KEY_CPU + (int)type);
}

kd_dispatch_key kd_autograd_key(kd_device_type type) {
  if ((unsigned)type >= KD_NUM_BACKENDS) return KD_KEY_UNDEFINED;
  return (kd_dispatch_key)(KD_KEY_AUTOGRAD_CPU + (int)type);
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
