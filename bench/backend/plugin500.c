/*
 * plugin500.c: kd-bench backend's plugin that registers 500 kernels: it
 * defines bench500::op0 .. op499 (Tensor self) -> Tensor and implements each
 * for CPU, all through its plugin handle (load_500_us / unload_500_us).
 */
#include <stdio.h>

#include <kd/kd.h>
#include <kd/backend.h>

static kd_status op_kernel(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

static kd_status init500(kd_plugin *plugin) {
  kd_library *def, *impl;
  kd_status st = kd_plugin_library(plugin, KD_LIBRARY_DEF, "bench500", KD_KEY_UNDEFINED, &def);
  if (!st) st = kd_plugin_library(plugin, KD_LIBRARY_IMPL, "bench500", KD_KEY_CPU, &impl);
  kd_kernel k = kd_kernel_unboxed(op_kernel, "(Tensor) -> Tensor");
  for (int i = 0; !st && i < 500; i++) {
    char schema[64], name[16];
    snprintf(schema, sizeof schema, "op%d(Tensor self) -> Tensor", i);
    snprintf(name, sizeof name, "op%d", i);
    st = kd_library_def(def, schema, NULL, 0, NULL);
    if (!st) st = kd_library_impl(impl, name, &k, NULL);
  }
  return st;
}

static const kd_plugin_desc desc500 = {KD_PLUGIN_API_VERSION, "bench500", init500, NULL};

KD_PLUGIN(desc500)
