/*
 * fakegen_device.c: the device record the generated plugin registers
 * (fakegen_functions.h declares fakegen_backend and fakegen_backend_fini).
 */
#include "fakegen.h"

static fakedev_ctx the_ctx;

fakedev_ctx *fakegen_ctx(void) { return &the_ctx; }

kd_status fakegen_backend(kd_plugin *plugin, kd_backend_iface *iface) {
  (void)plugin;
  kd_status st = fakedev_ctx_init(&the_ctx);
  if (st) return st;
  *iface = fakedev_iface(&the_ctx); /* claims PrivateUse1 as "fakedev" */
  return KD_OK;
}

void fakegen_backend_fini(void) { fakedev_ctx_fini(&the_ctx); }
