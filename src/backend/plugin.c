/*
 * plugin.c: loading and unloading plugins (shared libraries that register a
 * backend and kernels), and KD_BACKENDS at start-up.
 *
 * Attribution: while kd_backend_load runs on a thread, that thread's
 * `t_loading` is the plugin; every described library opened on it (the
 * plugin's KD_LIBRARY / KD_REGISTER_KERNEL constructors during dlopen, and
 * kd_plugin_open_desc during init) is recorded with the plugin, as are the
 * libraries and backends made through the plugin handle.
 *
 * Unloading: every registration is released (newest first), backends are
 * detached, then a grace period (kd__synchronize) waits for every call that
 * could still run the plugin's code (and for the retired kernel records,
 * whose destroy callbacks may be the plugin's). Only then fini and dlclose.
 * The plugin is held (`holds`) by the unloader and by each of its backend
 * records, which live as long as storage made with their allocator: the
 * last hold dropped runs fini and dlclose.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT, dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "backend/backend_impl.h"
#include "core/internal.h"
#include "dispatch/reclaim.h"

/* The versions of kd_plugin_desc (core/internal.h). */
static const size_t plugin_desc_ends[] = {KD__ABI_END(kd_plugin_desc, fini)};
KD__ABI_TABLE(kd__abi_plugin_desc, kd_plugin_desc, KD_PLUGIN_API_VERSION, plugin_desc_ends);

struct kd_plugin {
  char *path;
  void *dl;
  const kd_plugin_desc *desc; /* &desc_copy once its version was accepted, else NULL */
  kd_plugin_desc desc_copy;   /* the plugin's descriptor, read by its version (kd/version.h) */
  bool initialized; /* init returned KD_OK: fini is due */
  atomic_size_t holds;
  kd_backend **backends;
  size_t nbackends, cap_backends;
  kd_library **libs;
  size_t nlibs, cap_libs;
  const kd_library_desc **descs;
  size_t ndescs, cap_descs;
  struct kd_plugin *next; /* the list of loaded plugins */
  /* The first failure of a described library opened while loading (a
   * constructor has no caller to tell): it fails the load. */
  kd_status desc_status;
  char desc_error[900];
};

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static kd_plugin *loaded; /* under plugin_lock */
static _Thread_local kd_plugin *t_loading;

static bool grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return true;
  size_t nc = *cap ? *cap * 2 : 8;
  void *p = kd__realloc(*arr, nc * elem);
  if (!p) return false;
  *arr = p;
  *cap = nc;
  return true;
}

const char *kd_plugin_path(const kd_plugin *p) { return p ? p->path : NULL; }

const char *kd_plugin_name(const kd_plugin *p) {
  return p && p->desc && p->desc->name ? p->desc->name : "";
}

void kd__plugin_note_failure(const kd_library_desc *desc, kd_status st, const char *msg) {
  kd_plugin *p = t_loading;
  if (!p || !st || p->desc_status) return;
  p->desc_status = st;
  snprintf(p->desc_error, sizeof p->desc_error, "the library of '%s' at %s:%d: %s", desc->ns,
           desc->file ? desc->file : "?", desc->line, msg);
}

kd_status kd__plugin_note_desc(const kd_library_desc *desc, kd_status body_status,
                               const char *body_error) {
  kd_plugin *p = t_loading;
  if (!p) return KD_OK;
  if (!grow((void **)&p->descs, &p->cap_descs, p->ndescs, sizeof *p->descs)) {
    kd_status st = kd__oom("plugin library list");
    kd__plugin_note_failure(desc, st, kd_last_error()); /* the caller closes it */
    return st;
  }
  p->descs[p->ndescs++] = desc;
  kd__plugin_note_failure(desc, body_status, body_error);
  return KD_OK;
}

/* A registration of a described library failed during the load. */
static kd_status desc_failed(kd_plugin *p) {
  return kd_set_error(p->desc_status,
                      "kd_backend_load: the plugin %s is not loaded: a registration failed: %s",
                      p->path, p->desc_error);
}

static kd_status check_handle(kd_plugin *p, const char *fn) {
  if (!p) return kd_set_error(KD_EINVAL, "%s: NULL plugin", fn);
  return KD_OK;
}

kd_status kd_plugin_backend(kd_plugin *p, const kd_backend_iface *iface, kd_backend **out) {
  if (out) *out = NULL;
  kd_status st = check_handle(p, "kd_plugin_backend");
  if (st) return st;
  if (!grow((void **)&p->backends, &p->cap_backends, p->nbackends, sizeof *p->backends))
    return kd__oom("plugin backend list");
  kd_backend *b = NULL;
  st = kd__backend_register(iface, p, &b);
  if (st) {
    /* Name the file: the message is read by whoever loads the plugin. */
    char msg[768];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "plugin %s: %s", p->path, msg);
  }
  p->backends[p->nbackends++] = b;
  if (out) *out = b;
  return KD_OK;
}

kd_status kd_plugin_library(kd_plugin *p, kd_library_kind kind, const char *ns,
                            kd_dispatch_key key, kd_library **out) {
  if (out) *out = NULL;
  kd_status st = check_handle(p, "kd_plugin_library");
  if (st) return st;
  if (!grow((void **)&p->libs, &p->cap_libs, p->nlibs, sizeof *p->libs))
    return kd__oom("plugin library list");
  kd_library *lib = NULL;
  st = kd_library_open(kind, ns, key, p->path, 0, &lib);
  if (st) return st;
  p->libs[p->nlibs++] = lib;
  if (out) *out = lib;
  return KD_OK;
}

kd_status kd_plugin_open_desc(kd_plugin *p, const kd_library_desc *desc) {
  kd_status st = check_handle(p, "kd_plugin_open_desc");
  if (st) return st;
  /* Attributed through t_loading when this thread loads p; otherwise (a
   * plugin opening a descriptor later, from another thread) here. */
  kd_plugin *saved = t_loading;
  kd_status before = p->desc_status;
  t_loading = p;
  st = kd_library_open_desc(desc);
  t_loading = saved;
  if (st == KD_OK && p->desc_status && !before) st = desc_failed(p);
  return st;
}

/* Releases everything the plugin registered, newest first; detaches its
 * backends (their records stay, held by the plugin's list). */
static void release_all(kd_plugin *p) {
  while (p->ndescs > 0) kd_library_close_desc(p->descs[--p->ndescs]);
  while (p->nlibs > 0) kd_library_close(p->libs[--p->nlibs]);
  for (size_t i = p->nbackends; i-- > 0;) kd__backend_detach(p->backends[i]);
}

/* After release_all and a grace period: hands each backend record's
 * registration reference back; each record holds the plugin until freed. */
static void drop_backends(kd_plugin *p) {
  size_t n = p->nbackends;
  p->nbackends = 0;
  atomic_fetch_add_explicit(&p->holds, n, memory_order_relaxed);
  for (size_t i = 0; i < n; i++) kd__backend_put(p->backends[i]);
}

static void plugin_free(kd_plugin *p) {
  kd__free(p->backends);
  kd__free(p->libs);
  kd__free(p->descs);
  kd__free(p->path);
  kd__free(p);
}

void kd__plugin_put(kd_plugin *p) {
  if (atomic_fetch_sub_explicit(&p->holds, 1, memory_order_acq_rel) != 1) return;
  if (p->initialized && p->desc && p->desc->fini) p->desc->fini(p);
  if (p->dl) dlclose(p->dl);
  plugin_free(p);
}

static bool in_call(void) { return __atomic_load_n(&kd__tls_reader.epoch, __ATOMIC_RELAXED) != 0; }

kd_status kd_backend_load(const char *path, kd_plugin **out) {
  if (out) *out = NULL;
  if (!path || !out) return kd_set_error(KD_EINVAL, "kd_backend_load: NULL path or out");
  if (in_call() || t_loading)
    return kd_set_error(KD_ESTATE,
                        "kd_backend_load(%s): cannot load a plugin from inside an operator call "
                        "or a plugin's init",
                        path);
  kd_plugin *p = kd__calloc(1, sizeof *p);
  if (!p || !(p->path = kd__strdup(path))) {
    kd__free(p);
    return kd__oom("plugin");
  }
  atomic_init(&p->holds, 1);
  kd_status st = KD_OK;

  /* Constructors run inside dlopen: what they open is the plugin's. */
  t_loading = p;
  dlerror();
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    const char *e = dlerror();
    st = kd_set_error(KD_ENOTFOUND, "kd_backend_load: cannot open the plugin %s: %s", path,
                      e ? e : "dlopen failed");
    goto fail;
  }
  {
    /* A plugin linked with libkdispatch.so, loaded into a host that has
     * another copy (the static archive): its registrations would go to the
     * other copy's registry. */
    void *theirs = dlsym(p->dl, "kd_backend_load");
    kd_status (*ours_fn)(const char *, kd_plugin **) = kd_backend_load;
    void *ours;
    memcpy(&ours, &ours_fn, sizeof ours);
    if (theirs && theirs != ours) {
      Dl_info a, b;
      const char *their_file = dladdr(theirs, &a) && a.dli_fname ? a.dli_fname : "?";
      const char *our_file = dladdr(ours, &b) && b.dli_fname ? b.dli_fname : "?";
      st = kd_set_error(KD_EUNSUPPORTED,
                        "kd_backend_load: the plugin %s brings a second copy of libkdispatch "
                        "(%s) into this process, whose copy is %s: its registrations would go "
                        "to a registry this host never reads; link the host with the shared "
                        "libkdispatch",
                        path, their_file, our_file);
      goto fail;
    }
  }
  if (p->desc_status) {
    st = desc_failed(p);
    goto fail;
  }
  kd_plugin_entry_fn entry;
  {
    void *sym = dlsym(p->dl, KD_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
      st = kd_set_error(KD_ENOTFOUND,
                        "kd_backend_load: %s is not a kdispatch plugin: it has no entry point "
                        "'%s' (define one with KD_PLUGIN(desc))",
                        path, KD_PLUGIN_ENTRY_SYMBOL);
      goto fail;
    }
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer (POSIX) */
  }
  const kd_plugin_desc *given = entry(KD_PLUGIN_API_VERSION);
  if (!given) {
    st = kd_set_error(KD_EUNSUPPORTED,
                      "kd_backend_load: the plugin %s refused to load into this host (its entry "
                      "point returned NULL for host plugin API version %d)",
                      path, KD_PLUGIN_API_VERSION);
    goto fail;
  }
  if (given->api_version < 1 || given->api_version > KD_PLUGIN_API_VERSION) {
    st = kd_set_error(KD_EUNSUPPORTED,
                      "kd_backend_load: the plugin %s was built for plugin API version %u; this "
                      "host accepts 1..%d (KD_PLUGIN_API_VERSION)",
                      path, given->api_version, KD_PLUGIN_API_VERSION);
    goto fail;
  }
  /* Only the fields of the plugin's version are read (cannot fail now). */
  st = kd__abi_copy(&kd__abi_plugin_desc, given, &p->desc_copy, "kd_backend_load", NULL);
  if (st) goto fail;
  p->desc = &p->desc_copy;
  if (!p->desc->init) {
    st = kd_set_error(KD_EINVAL, "kd_backend_load: the plugin %s ('%s') has no init function",
                      path, kd_plugin_name(p));
    goto fail;
  }
  st = p->desc->init(p);
  if (st) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    if (strstr(msg, path))
      kd_set_error(st, "kd_backend_load: the init of the plugin '%s' failed: %s",
                   kd_plugin_name(p), msg);
    else
      kd_set_error(st, "kd_backend_load: the init of the plugin %s ('%s') failed: %s", path,
                   kd_plugin_name(p), msg);
    goto fail;
  }
  p->initialized = true; /* fini is due from here on, even if the load fails */
  if (p->desc_status) {
    st = desc_failed(p);
    goto fail;
  }
  t_loading = NULL;
  pthread_mutex_lock(&plugin_lock);
  p->next = loaded;
  loaded = p;
  pthread_mutex_unlock(&plugin_lock);
  *out = p;
  return KD_OK;

fail:
  t_loading = NULL;
  {
    /* Keep the message: releasing may set others. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    release_all(p);
    kd__synchronize();
    drop_backends(p);
    kd__plugin_put(p);
    kd_set_error(st, "%s", msg);
  }
  return st;
}

kd_status kd_backend_unload(kd_plugin *plugin) {
  if (!plugin) return kd_set_error(KD_EINVAL, "kd_backend_unload: NULL plugin");
  pthread_mutex_lock(&plugin_lock);
  kd_plugin **pp = &loaded;
  while (*pp && *pp != plugin) pp = &(*pp)->next;
  if (!*pp) {
    pthread_mutex_unlock(&plugin_lock);
    return kd_set_error(KD_EINVAL, "kd_backend_unload: %p is not a loaded plugin",
                        (void *)plugin);
  }
  if (in_call() || t_loading) {
    pthread_mutex_unlock(&plugin_lock);
    return kd_set_error(KD_ESTATE,
                        "kd_backend_unload(%s): cannot unload a plugin from inside an operator "
                        "call or a plugin's init",
                        plugin->path);
  }
  size_t live = 0;
  const char *which = NULL;
  for (size_t i = 0; i < plugin->nbackends; i++) {
    size_t n = kd__backend_live_storages(plugin->backends[i]);
    if (n && !which) which = plugin->backends[i]->name;
    live += n;
  }
  if (live) {
    pthread_mutex_unlock(&plugin_lock);
    return kd_set_error(KD_EBUSY,
                        "kd_backend_unload: the plugin %s ('%s') is in use: %zu storage%s made "
                        "with the allocator of its backend '%s' %s alive; free them first",
                        plugin->path, kd_plugin_name(plugin), live, live == 1 ? "" : "s", which,
                        live == 1 ? "is" : "are");
  }
  *pp = plugin->next;
  pthread_mutex_unlock(&plugin_lock);
  release_all(plugin);
  kd__synchronize();
  drop_backends(plugin);
  kd__plugin_put(plugin);
  return KD_OK;
}

/* ---- KD_BACKENDS ------------------------------------------------------------ */

int kd_backend_load_list(const char *paths) {
  if (!paths) return 0;
  int loaded_n = 0;
  const char *s = paths;
  while (*s) {
    const char *e = strchr(s, ':');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n > 0) {
      char *one = kd__malloc(n + 1);
      if (!one) {
        kd_warn("KD_BACKENDS: out of memory");
        return loaded_n;
      }
      memcpy(one, s, n);
      one[n] = '\0';
      kd_plugin *p = NULL;
      if (kd_backend_load(one, &p) == KD_OK)
        loaded_n++;
      else
        kd_warn("KD_BACKENDS: %s", kd_last_error());
      kd__free(one);
    }
    if (!e) break;
    s = e + 1;
  }
  return loaded_n;
}
