/*
 * fakedev_plugin.c: the plugin's entry point.
 *
 * kd_backend_load() opens the shared library, finds kd_plugin_entry (which
 * KD_PLUGIN defines), checks the API version the plugin was built with, and
 * calls init with a plugin handle. Everything init registers goes through
 * that handle, so that a failing init, and later kd_backend_unload(), leave
 * nothing behind; fini runs after every registration was released.
 */
#include "fakedev.h"

static fakedev_ctx the_ctx; /* the backend's context: one per loaded plugin */

static kd_status fakedev_init(kd_plugin *plugin) {
  kd_status st = fakedev_ctx_init(&the_ctx);
  if (st) return st;
  /* The device: claims PrivateUse1 as "fakedev", and installs an allocator
   * made from the record, so tensors can live on fakedev:0 and fakedev:1. */
  kd_backend_iface iface = fakedev_iface(&the_ctx);
  kd_backend *backend;
  if ((st = kd_plugin_backend(plugin, &iface, &backend))) return st;
  /* Its kernels, and the CPU fallback for everything else. */
  return fakedev_register_kernels(plugin, &the_ctx);
}

static void fakedev_fini(kd_plugin *plugin) {
  (void)plugin;
  fakedev_ctx_fini(&the_ctx);
}

static const kd_plugin_desc fakedev_desc = {
    KD_PLUGIN_API_VERSION, /* the version this plugin was built against */
    FAKEDEV_NAME,
    fakedev_init,
    fakedev_fini,
};

KD_PLUGIN(fakedev_desc)
