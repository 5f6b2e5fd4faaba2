/*
 * device.c: device type names, private device registration, allocators.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include <stdatomic.h>

#include "core/internal.h"
#include "core/tensor_impl.h"
#include "kd/device.h"

/* The versions of kd_allocator (core/internal.h, "Versioned interface
 * structs"): 2 appends the copy functions. */
static const size_t allocator_ends[] = {KD__ABI_END(kd_allocator, ctx),
                                        KD__ABI_END(kd_allocator, copy_from_host)};
KD__ABI_TABLE(kd__abi_allocator, kd_allocator, KD_ALLOCATOR_API_VERSION, allocator_ends);

#define KD__DEVICE_NAME_CAP 32

typedef struct kd__device_slot {
  char name[KD__DEVICE_NAME_CAP];
  int32_t dlpack;       /* DLDeviceType, 0 for none */
  bool renamed;         /* a backend gave this private type a name */
  bool has_allocator;
  kd_allocator allocator;
} kd__device_slot;

/* cpu=kDLCPU(1), cuda=kDLCUDA(2); meta has no DLPack form. */
static kd__device_slot slots[KD_DEVICE_TYPE_COUNT] = {
    {"cpu", 1, false, false, {0, NULL, NULL, NULL, NULL, NULL}},
    {"cuda", 2, false, false, {0, NULL, NULL, NULL, NULL, NULL}},
    {"meta", 0, false, false, {0, NULL, NULL, NULL, NULL, NULL}},
    {"privateuseone", 0, false, false, {0, NULL, NULL, NULL, NULL, NULL}},
    {"privateusetwo", 0, false, false, {0, NULL, NULL, NULL, NULL, NULL}},
    {"privateusethree", 0, false, false, {0, NULL, NULL, NULL, NULL, NULL}},
};

/* Registration is rare and serialized; readers of names read bytes that are
 * written once before the type is used. */
static pthread_mutex_t device_lock = PTHREAD_MUTEX_INITIALIZER;

static bool valid_type(kd_device_type t) { return t >= 0 && t < KD_DEVICE_TYPE_COUNT; }

static bool is_private(kd_device_type t) {
  return t >= KD_DEVICE_PRIVATEUSE1 && t <= KD_DEVICE_PRIVATEUSE3;
}

const char *kd_device_type_name(kd_device_type type) {
  return valid_type(type) ? slots[type].name : "invalid";
}

int32_t kd_device_type_dlpack(kd_device_type type) {
  return valid_type(type) ? slots[type].dlpack : 0;
}

static bool valid_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n >= KD__DEVICE_NAME_CAP || !islower((unsigned char)name[0])) return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!(islower(c) || isdigit(c) || c == '_')) return false;
  }
  return true;
}

kd_status kd_device_type_register(kd_device_type type, const char *name,
                                  int32_t dlpack_device_type) {
  if (!valid_type(type) || !is_private(type))
    return kd_set_error(KD_EINVAL,
                        "kd_device_type_register: device type %d is not a private device type "
                        "(expected KD_DEVICE_PRIVATEUSE1..3)",
                        (int)type);
  if (!name || !valid_name(name))
    return kd_set_error(KD_EINVAL,
                        "kd_device_type_register: bad device name '%s': expected lower-case "
                        "letters, digits and '_', starting with a letter, at most %d bytes",
                        name ? name : "(null)", KD__DEVICE_NAME_CAP - 1);
  kd_status st = KD_OK;
  pthread_mutex_lock(&device_lock);
  for (int t = 0; t < KD_DEVICE_TYPE_COUNT; t++) {
    if (t != (int)type && !strcmp(slots[t].name, name)) {
      st = kd_set_error(KD_EEXIST, "kd_device_type_register: the name '%s' is taken by device type %d",
                        name, t);
      goto done;
    }
  }
  if (slots[type].renamed) {
    if (strcmp(slots[type].name, name) != 0 || slots[type].dlpack != dlpack_device_type)
      st = kd_set_error(KD_EEXIST,
                        "kd_device_type_register: device type %d is already registered as '%s'",
                        (int)type, slots[type].name);
    goto done;
  }
  snprintf(slots[type].name, sizeof slots[type].name, "%s", name);
  slots[type].dlpack = dlpack_device_type;
  slots[type].renamed = true;
done:
  pthread_mutex_unlock(&device_lock);
  return st;
}

void kd__device_type_unregister(kd_device_type type) {
  static const char *const original[KD_DEVICE_TYPE_COUNT] = {
      "cpu", "cuda", "meta", "privateuseone", "privateusetwo", "privateusethree"};
  if (!valid_type(type) || !is_private(type)) return;
  pthread_mutex_lock(&device_lock);
  snprintf(slots[type].name, sizeof slots[type].name, "%s", original[type]);
  slots[type].dlpack = 0;
  slots[type].renamed = false;
  pthread_mutex_unlock(&device_lock);
}

kd_status kd_device_type_from_name(const char *name, kd_device_type *out) {
  if (!name || !out) return kd_set_error(KD_EINVAL, "kd_device_type_from_name: NULL argument");
  for (int t = 0; t < KD_DEVICE_TYPE_COUNT; t++) {
    if (!strcmp(slots[t].name, name)) {
      *out = (kd_device_type)t;
      return KD_OK;
    }
  }
  return kd_set_error(KD_ENOTFOUND, "unknown device type '%s': expected cpu, cuda, meta or a "
                      "registered private device type",
                      name);
}

kd_status kd_device_parse(const char *text, kd_device *out) {
  if (!text || !out) return kd_set_error(KD_EINVAL, "kd_device_parse: NULL argument");
  const char *colon = strchr(text, ':');
  size_t n = colon ? (size_t)(colon - text) : strlen(text);
  if (n == 0 || n >= KD__DEVICE_NAME_CAP)
    return kd_set_error(KD_EINVAL, "bad device string '%s', column 1: expected a device type",
                        text);
  char type_name[KD__DEVICE_NAME_CAP];
  memcpy(type_name, text, n);
  type_name[n] = '\0';
  kd_device_type type = KD_DEVICE_CPU; /* set on success; gcc -O3 cannot see that */
  kd_status st = kd_device_type_from_name(type_name, &type);
  if (st) return st;
  int32_t index = 0;
  if (colon) {
    const char *p = colon + 1;
    if (!isdigit((unsigned char)*p))
      return kd_set_error(KD_EINVAL, "bad device string '%s', column %zu: expected a device index",
                          text, (size_t)(p - text) + 1);
    long v = 0;
    while (isdigit((unsigned char)*p)) {
      v = v * 10 + (*p - '0');
      if (v > INT32_MAX)
        return kd_set_error(KD_EINVAL, "bad device string '%s': device index too large", text);
      p++;
    }
    if (*p)
      return kd_set_error(KD_EINVAL, "bad device string '%s', column %zu: unexpected '%c'",
                          text, (size_t)(p - text) + 1, *p);
    if ((type == KD_DEVICE_CPU || type == KD_DEVICE_META) && v != 0)
      return kd_set_error(KD_EINVAL, "bad device string '%s': %s has only device index 0", text,
                          slots[type].name);
    index = (int32_t)v;
  }
  out->type = type;
  out->index = index;
  return KD_OK;
}

size_t kd_device_format(kd_device device, char *buf, size_t cap) {
  kd__fmt f = kd__fmt_init(buf, cap);
  kd__fmt_puts(&f, kd_device_type_name(device.type));
  if (device.type != KD_DEVICE_CPU && device.type != KD_DEVICE_META)
    kd__fmt_printf(&f, ":%d", (int)device.index);
  return f.len;
}

/* ---- Allocators ----------------------------------------------------------- */

/* Blocks come from the host allocator (kd/memory.h), so that they follow a
 * program's allocator and its failures. Small blocks as they are (16-byte
 * aligned, which every element type needs; a block under 64 bytes gains
 * nothing from more); larger ones over-allocated by 64 bytes and aligned to
 * 64, with the distance back to the start of the block in the byte before
 * the aligned address (1 to 64). */
static void *cpu_alloc(void *ctx, kd_device device, size_t nbytes) {
  (void)ctx;
  (void)device;
  if (nbytes < 64) return kd__malloc(nbytes);
  if (nbytes > (size_t)-1 - 64) return NULL;
  unsigned char *raw = kd__malloc(nbytes + 64);
  if (!raw) return NULL;
  unsigned char *p = (unsigned char *)(((uintptr_t)raw + 64) & ~(uintptr_t)63);
  p[-1] = (unsigned char)(p - raw);
  return p;
}

static void cpu_free(void *ctx, kd_device device, void *ptr, size_t nbytes) {
  (void)ctx;
  (void)device;
  if (nbytes < 64 || !ptr) {
    kd__free(ptr);
    return;
  }
  unsigned char *p = ptr;
  kd__free(p - p[-1]);
}

static kd_status cpu_copy(void *ctx, kd_device device, void *dst, const void *src, size_t nbytes) {
  (void)ctx;
  (void)device;
  memcpy(dst, src, nbytes);
  return KD_OK;
}

static const kd_allocator cpu_default = {KD_ALLOCATOR_API_VERSION, cpu_alloc, cpu_free, NULL,
                                         cpu_copy, cpu_copy};

/* True while a cpu allocator is installed (written under device_lock, read
 * without it by kd__cpu_default_allocator). */
static atomic_bool cpu_custom;

const kd_allocator *kd__cpu_builtin_allocator(void) { return &cpu_default; }

const kd_allocator *kd__cpu_default_allocator(void) {
  return atomic_load_explicit(&cpu_custom, memory_order_acquire) ? NULL : &cpu_default;
}

/* The bytes of a version-1 struct: the fields before copy_to_host. */
#define KD__ALLOCATOR_V1_SIZE (kd__abi_allocator.ends[0])

kd_status kd_allocator_set(kd_device_type type, const kd_allocator *allocator) {
  if (!valid_type(type))
    return kd_set_error(KD_EINVAL, "kd_allocator_set: invalid device type %d", (int)type);
  if (type == KD_DEVICE_META)
    return kd_set_error(KD_EINVAL, "kd_allocator_set: meta tensors have no bytes to allocate");
  kd_allocator copy;
  memset(&copy, 0, sizeof copy);
  if (allocator) {
    /* Any accepted version, reading only its own bytes (a version-1 struct
     * ends before the copy functions, which then read NULL). */
    char where[96];
    snprintf(where, sizeof where, "kd_allocator_set(%s)", slots[type].name);
    kd_status vst = kd__abi_copy(&kd__abi_allocator, allocator, &copy, where, NULL);
    if (vst) return vst;
    if (!copy.alloc || !copy.free)
      return kd_set_error(KD_EINVAL, "kd_allocator_set(%s): expected non-NULL alloc and free",
                          slots[type].name);
    if (!copy.copy_to_host != !copy.copy_from_host)
      return kd_set_error(KD_EINVAL,
                          "kd_allocator_set(%s): expected copy_to_host and copy_from_host both "
                          "set or both NULL, got only %s",
                          slots[type].name, copy.copy_to_host ? "copy_to_host" : "copy_from_host");
    copy.api_version = KD_ALLOCATOR_API_VERSION; /* stored in this version's layout */
  }
  pthread_mutex_lock(&device_lock);
  if (allocator) {
    slots[type].allocator = copy;
    slots[type].has_allocator = true;
  } else {
    slots[type].has_allocator = false;
  }
  if (type == KD_DEVICE_CPU)
    atomic_store_explicit(&cpu_custom, allocator != NULL, memory_order_release);
  pthread_mutex_unlock(&device_lock);
  return KD_OK;
}

kd_status kd_allocator_get_sized(kd_device_type type, kd_allocator *out, size_t out_size) {
  if (!valid_type(type) || !out)
    return kd_set_error(KD_EINVAL, "kd_allocator_get: invalid device type %d or NULL out",
                        (int)type);
  if (out_size < KD__ALLOCATOR_V1_SIZE)
    return kd_set_error(KD_EINVAL,
                        "kd_allocator_get_sized: out_size %zu is too small: expected at least "
                        "%zu (a version-1 kd_allocator)",
                        out_size, (size_t)KD__ALLOCATOR_V1_SIZE);
  kd_allocator got;
  kd_status st = KD_OK;
  pthread_mutex_lock(&device_lock);
  if (slots[type].has_allocator)
    got = slots[type].allocator;
  else if (type == KD_DEVICE_CPU)
    got = cpu_default;
  else
    st = kd_set_error(KD_ENOTFOUND, "no allocator for device type '%s'", slots[type].name);
  pthread_mutex_unlock(&device_lock);
  if (st) return st;
  /* The newest version whose fields fit, and only its bytes. */
  uint32_t v = kd__abi_allocator.current;
  while (v > 1 && kd__abi_allocator.ends[v - 1] > out_size) v--;
  got.api_version = v;
  memcpy(out, &got, kd__abi_allocator.ends[v - 1]);
  return KD_OK;
}

/* The symbol programs built against allocator version 1 call: their struct
 * holds the version-1 fields only. Newer headers map kd_allocator_get to
 * kd_allocator_get_sized. */
#undef kd_allocator_get
KD_API kd_status kd_allocator_get(kd_device_type type, kd_allocator *out);
kd_status kd_allocator_get(kd_device_type type, kd_allocator *out) {
  return kd_allocator_get_sized(type, out, KD__ALLOCATOR_V1_SIZE);
}
