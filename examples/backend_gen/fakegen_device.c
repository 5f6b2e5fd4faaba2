/*
 * fakegen_device.c: the device record the generated plugin registers
 * (fakegen_functions.h declares fakegen_backend and fakegen_backend_fini).
 */
#include <stdint.h>
#include <string.h>

#include "fakegen.h"
#include "fakegen_direct.h"

static fakedev_ctx the_ctx;

/* The generated direct calls (fakegen_direct.h), one of each kind, handed out
 * by get_proc_address so that fakegen_compare can call them. A selective
 * build compiles only those of the operators it keeps: the same guards. */
typedef struct direct_sym {
  const char *name;
  void (*fn)(void);
} direct_sym;
#define DIRECT(f) {#f, (void (*)(void))f}
static const direct_sym directs[] = {
#if KD_SHOULD_REGISTER(aten, add_Tensor, PRIVATEUSE1)
    DIRECT(kd_fakegen_add_Tensor), /* Legacy structured, functional */
#endif
#if KD_SHOULD_REGISTER(aten, add__Tensor, PRIVATEUSE1)
    DIRECT(kd_fakegen_add_Tensor_), /* Legacy structured, inplace */
#endif
#if KD_SHOULD_REGISTER(aten, neg_out, PRIVATEUSE1)
    DIRECT(kd_fakegen_neg_out), /* LegacyMeta structured, out */
#endif
#if KD_SHOULD_REGISTER(aten, sub_Tensor, PRIVATEUSE1)
    DIRECT(kd_fakegen_sub_Tensor), /* Customized structured, functional */
#endif
#if KD_SHOULD_REGISTER(aten, exp_out, PRIVATEUSE1)
    DIRECT(kd_fakegen_exp_out), /* unstructured (structured: False) */
#endif
#if KD_SHOULD_REGISTER(fakegen, scale_add, PRIVATEUSE1)
    DIRECT(kd_fakegen_scale_add), /* a new operator */
#endif
    {NULL, NULL}};

static void *(*fakedev_proc)(void *ctx, const char *name);

static void *fakegen_proc(void *ctx, const char *name) {
  for (size_t i = 0; name && directs[i].name; i++)
    if (!strcmp(directs[i].name, name)) return (void *)(uintptr_t)directs[i].fn;
  return fakedev_proc ? fakedev_proc(ctx, name) : NULL;
}

fakedev_ctx *fakegen_ctx(void) { return &the_ctx; }

kd_status fakegen_backend(kd_plugin *plugin, kd_backend_iface *iface) {
  (void)plugin;
  kd_status st = fakedev_ctx_init(&the_ctx);
  if (st) return st;
  *iface = fakedev_iface(&the_ctx); /* claims PrivateUse1 as "fakedev" */
  fakedev_proc = iface->get_proc_address;
  iface->get_proc_address = fakegen_proc;
  return KD_OK;
}

void fakegen_backend_fini(void) { fakedev_ctx_fini(&the_ctx); }
