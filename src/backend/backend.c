/*
 * backend.c: backend records, their allocator, and the device services
 * (current device per thread, guards, a kernel's device context).
 *
 * A registered backend is found by device type and by dispatch key in two
 * arrays of atomic pointers: kd_call_device_context is one acquire load. A
 * record is freed only after a grace period (kd__synchronize), so a call in
 * flight that loaded it may keep using it until it returns.
 *
 * The allocator installed for the device type has the record as ctx; it
 * counts live allocations in `refs` (plus one for the registration), so that
 * the record (and, for a plugin, its library) outlives every storage made
 * with it.
 */
#include <pthread.h>
#include <stdio.h>

#include "backend/backend_impl.h"
#include "core/internal.h"
#include "core/tensor_impl.h"
#include "dispatch/reclaim.h"

/* The versions of kd_backend_iface (core/internal.h): 2 appends
 * dlpack_release. */
static const size_t backend_iface_ends[] = {KD__ABI_END(kd_backend_iface, get_proc_address),
                                             KD__ABI_END(kd_backend_iface, dlpack_release)};
KD__ABI_TABLE(kd__abi_backend_iface, kd_backend_iface, KD_BACKEND_API_VERSION,
              backend_iface_ends);

static pthread_mutex_t be_lock = PTHREAD_MUTEX_INITIALIZER;
static kd_backend *_Atomic by_type[KD_DEVICE_TYPE_COUNT];
static kd_backend *_Atomic by_key[KD_NUM_RUNTIME_KEYS];

static const char *const original_names[KD_DEVICE_TYPE_COUNT] = {
    "cpu", "cuda", "meta", "privateuseone", "privateusetwo", "privateusethree"};

static bool is_private(kd_device_type t) {
  return t >= KD_DEVICE_PRIVATEUSE1 && t <= KD_DEVICE_PRIVATEUSE3;
}

/* ---- The allocator made from a record ----------------------------------- */

static void *be_alloc(void *ctx, kd_device device, size_t nbytes) {
  kd_backend *b = ctx;
  void *p = b->iface.alloc(b->iface.ctx, device, nbytes);
  if (p) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return p;
}

static void be_free(void *ctx, kd_device device, void *ptr, size_t nbytes) {
  kd_backend *b = ctx;
  b->iface.free(b->iface.ctx, device, ptr, nbytes);
  kd__backend_put(b);
}

static kd_status be_to_host(void *ctx, kd_device device, void *host_dst, const void *src,
                            size_t n) {
  kd_backend *b = ctx;
  kd_status st = b->iface.copy_to_host(b->iface.ctx, device, host_dst, src, n);
  if (st == KD_OK) st = b->iface.synchronize(b->iface.ctx, device);
  return st;
}

static kd_status be_from_host(void *ctx, kd_device device, void *dst, const void *host_src,
                              size_t n) {
  kd_backend *b = ctx;
  kd_status st = b->iface.copy_from_host(b->iface.ctx, device, dst, host_src, n);
  if (st == KD_OK) st = b->iface.synchronize(b->iface.ctx, device);
  return st;
}

/* kd_tensor_to_dtype of a device tensor (core/internal.h): the backend's
 * `cast` slot, for a contiguous tensor whose storage this backend's allocator
 * made (which keeps the record alive while the storage lives). 1: not done
 * here (no cast slot, another allocator, strided): the host path runs. */
int kd__backend_device_cast(const kd_tensor *t, int dtype_, kd_tensor **out) {
  kd_dtype dtype = (kd_dtype)dtype_;
  const kd_storage *s = t->storage;
  if (!s->owns_via_allocator || s->allocator.alloc != be_alloc || !kd_tensor_is_contiguous(t))
    return 1;
  kd_backend *b = s->allocator.ctx;
  if (!b->iface.cast) return 1;
  kd_tensor *r;
  kd_status st = kd_tensor_empty(t->ndim, t->sizes, dtype, s->device, &r);
  if (st) return st;
  int64_t n = kd_tensor_numel(t);
  if (n > 0) {
    st = b->iface.cast(b->iface.ctx, s->device, kd_tensor_data(r), dtype, kd_tensor_data(t),
                       t->dtype, (size_t)n);
    if (st) {
      kd_tensor_release(r);
      return st;
    }
  }
  *out = r;
  return KD_OK;
}

void kd__backend_put(kd_backend *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  kd_plugin *p = b->plugin;
  kd__free(b);
  if (p) kd__plugin_put(p);
}

size_t kd__backend_live_storages(const kd_backend *b) {
  size_t r = atomic_load_explicit(&b->refs, memory_order_acquire);
  return r > 0 ? r - 1 : 0;
}

/* ---- DLPack handles (core/dlpack.c) -------------------------------------- */

bool kd__backend_dlpack_handles(kd_device_type type) {
  const kd_backend *b = kd_backend_for_device(type);
  return b && b->iface.dlpack_data;
}

kd_status kd__backend_dlpack_data(kd_device dev, const void *ptr, void **handle,
                                  uint64_t *byte_offset) {
  kd_backend *b = (kd_backend *)kd_backend_for_device(dev.type);
  if (!b || !b->iface.dlpack_data)
    return kd_set_error(KD_EUNSUPPORTED, "DLPack export: device type '%s' has no DLPack handles",
                        kd_device_type_name(dev.type));
  return b->iface.dlpack_data(b->iface.ctx, dev, ptr, handle, byte_offset);
}

kd_status kd__backend_dlpack_import(kd_device dev, void *handle, uint64_t byte_offset,
                                    size_t nbytes, void **ptr, kd_backend **held) {
  *held = NULL;
  kd_backend *b = (kd_backend *)kd_backend_for_device(dev.type);
  if (!b || !b->iface.dlpack_import)
    return kd_set_error(KD_EUNSUPPORTED, "DLPack import: device type '%s' has no DLPack handles",
                        kd_device_type_name(dev.type));
  /* The storage holds the record (and so the plugin) as an allocation does. */
  atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  kd_status st = b->iface.dlpack_import(b->iface.ctx, dev, handle, byte_offset, nbytes, ptr);
  if (st) {
    kd__backend_put(b);
    return st;
  }
  *held = b;
  return KD_OK;
}

void kd__backend_dlpack_release(kd_backend *b, kd_device dev, void *ptr) {
  b->iface.dlpack_release(b->iface.ctx, dev, ptr);
  kd__backend_put(b);
}

/* ---- Register / unregister ---------------------------------------------- */

#define KD__REQUIRE(field)                                                                    \
  if (!copy.field)                                                                          \
    return kd_set_error(KD_EINVAL,                                                          \
                        "kd_backend_register: backend '%s' for device type %s: the required " \
                        "function '" #field "' is NULL",                                    \
                        name, tname);

kd_status kd__backend_register(const kd_backend_iface *iface, kd_plugin *plugin,
                               kd_backend **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_backend_register: NULL out");
  *out = NULL;
  if (!iface) return kd_set_error(KD_EINVAL, "kd_backend_register: NULL iface");
  /* Any accepted version, read into this version's layout (kd/version.h). */
  kd_backend_iface copy;
  kd_status vst = kd__abi_copy(&kd__abi_backend_iface, iface, &copy, "kd_backend_register", NULL);
  if (vst) return vst;
  const char *name = copy.name ? copy.name : "(null)";
  kd_device_type type = copy.device_type;
  if (!is_private(type))
    return kd_set_error(KD_EINVAL,
                        "kd_backend_register: backend '%s': device type %d is not a private "
                        "device type (expected KD_DEVICE_PRIVATEUSE1..3)",
                        name, (int)type);
  const char *tname = original_names[type];
  KD__REQUIRE(name)
  KD__REQUIRE(device_count)
  KD__REQUIRE(alloc)
  KD__REQUIRE(free)
  KD__REQUIRE(copy_from_host)
  KD__REQUIRE(copy_to_host)
  KD__REQUIRE(copy_device)
  KD__REQUIRE(synchronize)
  int ndl = !!copy.dlpack_data + !!copy.dlpack_import + !!copy.dlpack_release;
  if (ndl != 0 && ndl != 3)
    return kd_set_error(KD_EINVAL,
                        "kd_backend_register: backend '%s' for device type %s: dlpack_data, "
                        "dlpack_import and dlpack_release go together (%d of the 3 are set)",
                        name, tname, ndl);

  kd_backend *b = kd__calloc(1, sizeof *b);
  if (!b) return kd__oom("backend record");
  size_t n = strlen(copy.name);
  if (n >= sizeof b->name) {
    kd__free(b);
    return kd_set_error(KD_EINVAL,
                        "kd_backend_register: bad device name '%s': expected lower-case letters, "
                        "digits and '_', starting with a letter, at most %d bytes",
                        copy.name, (int)sizeof b->name - 1);
  }
  memcpy(b->name, copy.name, n + 1);
  copy.name = b->name;
  b->iface = copy;
  b->key = kd_backend_key(type);
  b->plugin = plugin;
  atomic_init(&b->refs, 1);

  kd_status st = KD_OK;
  pthread_mutex_lock(&be_lock);
  kd_backend *existing = atomic_load_explicit(&by_type[type], memory_order_relaxed);
  kd_device_type other = KD_DEVICE_CPU;
  const char *cur = kd_device_type_name(type);
  b->was_named = strcmp(cur, original_names[type]) != 0;
  if (existing) {
    st = kd_set_error(KD_EEXIST,
                      "kd_backend_register: backend '%s' for device type %s: the type already "
                      "has the backend '%s'",
                      b->name, tname, existing->name);
  } else if (kd_device_type_from_name(b->name, &other) == KD_OK && other != type) {
    st = kd_set_error(KD_EEXIST,
                      "kd_backend_register: backend '%s' for device type %s: the name '%s' is "
                      "taken by device type %s",
                      b->name, tname, b->name, original_names[other]);
  } else if (b->was_named && strcmp(cur, b->name) != 0) {
    st = kd_set_error(KD_EEXIST,
                      "kd_backend_register: backend '%s' for device type %s: the type is "
                      "already named '%s'",
                      b->name, tname, cur);
  } else {
    st = kd_device_type_register(type, b->name, copy.dlpack_device_type);
  }
  if (st == KD_OK) {
    /* The allocator in use before, restored at unregister. */
    b->had_prev = kd_allocator_get(type, &b->prev_allocator) == KD_OK;
    kd_allocator a;
    memset(&a, 0, sizeof a);
    a.api_version = KD_ALLOCATOR_API_VERSION;
    a.alloc = be_alloc;
    a.free = be_free;
    a.ctx = b;
    a.copy_to_host = be_to_host;
    a.copy_from_host = be_from_host;
    st = kd_allocator_set(type, &a);
    if (st) {
      if (!b->was_named) kd__device_type_unregister(type);
    }
  }
  if (st == KD_OK) {
    atomic_store_explicit(&by_type[type], b, memory_order_release);
    atomic_store_explicit(&by_key[b->key], b, memory_order_release);
  }
  pthread_mutex_unlock(&be_lock);
  if (st) {
    kd__free(b);
    return st;
  }
  *out = b;
  return KD_OK;
}

kd_status kd_backend_register(const kd_backend_iface *iface, kd_backend **out) {
  return kd__backend_register(iface, NULL, out);
}

void kd__backend_detach(kd_backend *b) {
  kd_device_type type = b->iface.device_type;
  pthread_mutex_lock(&be_lock);
  if (atomic_load_explicit(&by_type[type], memory_order_relaxed) == b) {
    atomic_store_explicit(&by_type[type], NULL, memory_order_release);
    atomic_store_explicit(&by_key[b->key], NULL, memory_order_release);
    kd_allocator_set(type, b->had_prev ? &b->prev_allocator : NULL);
    if (!b->was_named) kd__device_type_unregister(type);
    kd_backend_set_cpu_fallback(b->key, false);
  }
  pthread_mutex_unlock(&be_lock);
}

void kd_backend_unregister(kd_backend *backend) {
  if (!backend) return;
  if (backend->plugin) {
    kd_warn("kd_backend_unregister: backend '%s' belongs to the plugin '%s': it is unregistered "
            "by kd_backend_unload",
            backend->name, kd_plugin_path(backend->plugin));
    return;
  }
  if (__atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_RELAXED) != 0) {
    kd_warn("kd_backend_unregister: backend '%s' cannot be unregistered from inside an operator "
            "call",
            backend->name);
    return;
  }
  kd__backend_detach(backend);
  kd__synchronize();
  kd__backend_put(backend);
}

const kd_backend *kd_backend_for_device(kd_device_type type) {
  if ((unsigned)type >= KD_DEVICE_TYPE_COUNT) return NULL;
  return atomic_load_explicit(&by_type[type], memory_order_acquire);
}

const kd_backend_iface *kd_backend_iface_of(const kd_backend *b) { return b ? &b->iface : NULL; }

kd_plugin *kd_backend_plugin(const kd_backend *b) { return b ? b->plugin : NULL; }

/* ---- Device services ----------------------------------------------------- */

static _Thread_local int32_t t_current[KD_DEVICE_TYPE_COUNT];

int32_t kd_device_count(kd_device_type type) {
  if ((unsigned)type >= KD_DEVICE_TYPE_COUNT) return 0;
  if (type == KD_DEVICE_CPU || type == KD_DEVICE_META) return 1;
  /* Inside a read section, so that an unregister waits for it. */
  uint64_t saved = kd__read_enter();
  const kd_backend *b = atomic_load_explicit(&by_type[type], memory_order_acquire);
  int32_t n = b ? b->iface.device_count(b->iface.ctx) : 0;
  kd__read_exit(saved);
  return n;
}

kd_device kd_current_device(kd_device_type type) {
  kd_device d;
  d.type = type;
  d.index = (unsigned)type < KD_DEVICE_TYPE_COUNT ? t_current[type] : 0;
  return d;
}

kd_status kd_set_current_device(kd_device device) {
  if ((unsigned)device.type >= KD_DEVICE_TYPE_COUNT || device.index < 0)
    return kd_set_error(KD_EINVAL, "kd_set_current_device: invalid device (type %d, index %d)",
                        (int)device.type, (int)device.index);
  bool has_count = device.type == KD_DEVICE_CPU || device.type == KD_DEVICE_META ||
                   kd_backend_for_device(device.type) != NULL;
  if (has_count) {
    int32_t n = kd_device_count(device.type);
    if (device.index >= n)
      return kd_set_error(KD_ERANGE,
                          "kd_set_current_device: device %s:%d does not exist (the type has %d "
                          "device%s)",
                          kd_device_type_name(device.type), (int)device.index, (int)n,
                          n == 1 ? "" : "s");
  }
  t_current[device.type] = device.index;
  return KD_OK;
}

kd_status kd_device_guard_enter(kd_device_guard *g, kd_device device) {
  if (!g) return kd_set_error(KD_EINVAL, "kd_device_guard_enter: NULL guard");
  g->active = false;
  g->prev = kd_current_device(device.type);
  kd_status st = kd_set_current_device(device);
  if (st) return st;
  g->active = true;
  return KD_OK;
}

void kd_device_guard_exit(kd_device_guard *g) {
  if (!g || !g->active) return;
  t_current[g->prev.type] = g->prev.index;
  g->active = false;
}

kd_status kd_call_device_context(const kd_call *call, kd_device_context *out) {
  if (!call || !out) return kd_set_error(KD_EINVAL, "kd_call_device_context: NULL argument");
  kd_dispatch_key key = call->key;
  kd_keyset backends = kd_keyset_backends();
  if (!(kd_keyset_of(key) & backends)) {
    kd_keyset ks = call->keys & backends;
    if (!ks)
      return kd_set_error(KD_ENOTFOUND,
                          "kd_call_device_context: the call of %s under key %s has no backend key",
                          kd_op_name(call->op), kd_dispatch_key_name(call->key));
    key = kd_keyset_highest(ks);
  }
  const kd_backend *b = atomic_load_explicit(&by_key[key], memory_order_acquire);
  if (b) {
    kd_device d = {b->iface.device_type, t_current[b->iface.device_type]};
    out->backend = b;
    out->device = d;
    out->queue = b->iface.queue ? b->iface.queue(b->iface.ctx, d) : NULL;
    out->ctx = b->iface.ctx;
    return KD_OK;
  }
  kd_device_type type;
  switch (key) {
    case KD_KEY_CPU:
      type = KD_DEVICE_CPU;
      break;
    case KD_KEY_META:
      type = KD_DEVICE_META;
      break;
    case KD_KEY_CUDA:
      type = KD_DEVICE_CUDA;
      break;
    default:
      return kd_set_error(KD_ENOTFOUND,
                          "kd_call_device_context: the call of %s under key %s: no backend is "
                          "registered for the key",
                          kd_op_name(call->op), kd_dispatch_key_name(key));
  }
  out->backend = NULL;
  out->device.type = type;
  out->device.index = t_current[type];
  out->queue = NULL;
  out->ctx = NULL;
  return KD_OK;
}
