/*
 * enforce.c: what the dispatcher does around a kernel-key kernel whose
 * argument definitions ask for more than the call gives (library.h): moving
 * and casting tensor inputs for the call, checking tensor results, and the
 * CPU fallback's moves to the CPU and back. Only kernels with a plan, or
 * calls that fell back, come here; the plain call path never does.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"
#include "dispatch/dispatcher_impl.h"

/* "(CPU, ALL_LAYOUT, float32)" */
static void format_def(kd_arg_def d, char *buf, size_t cap) {
  snprintf(buf, cap, "(%s, %s, %s)",
           d.backend == KD_ALL_BACKEND ? "ALL_BACKEND" : kd_dispatch_key_name((kd_dispatch_key)d.backend),
           d.layout == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)d.layout),
           d.dtype == KD_ALL_DTYPE ? "ALL_DTYPE" : kd_dtype_name((kd_dtype)d.dtype));
}

static void format_kernel_key(const kd__plan *p, char *buf, size_t cap) {
  snprintf(buf, cap, "(%s, %s, %s)", kd_dispatch_key_name(p->key),
           p->layout == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)p->layout),
           kd_dtype_name(p->dtype));
}

static const char *arg_name(const kd__op_info *info, size_t i) {
  return kd_argument_name(kd_schema_argument(info->schema, i));
}

/* t as the definition wants it: *out is t itself (nothing to do) or a new
 * tensor the caller releases. A move to the key tensor's device type lands on
 * its index (kt may be NULL: index 0). */
static kd_status conform(const kd_op *op, const kd__op_info *info, const kd__plan *plan, size_t i,
                         kd_arg_def def, const kd_tensor *kt, kd_tensor *t, kd_tensor **out) {
  *out = t;
  if (def.layout != KD_ALL_LAYOUT && (int)t->layout != def.layout) {
    char want[96], key[96];
    format_def(def, want, sizeof want);
    format_kernel_key(plan, key, sizeof key);
    return kd_set_error(KD_ETYPE,
                        "kernel '%s' %s expects argument %zu '%s' as %s, but it has layout %s "
                        "(layouts are not converted)",
                        op->name, key, i, arg_name(info, i), want, kd_layout_name(t->layout));
  }
  kd_device_type want_type = KD_DEVICE_CPU;
  kd_device dev = kd_tensor_device(t);
  bool move = def.backend != KD_ALL_BACKEND &&
              (int)kd_backend_key(dev.type) != def.backend &&
              kd__device_of_backend(def.backend, &want_type);
  bool cast = def.dtype != KD_ALL_DTYPE && (int)t->dtype != def.dtype;
  if (!move && !cast) return KD_OK;
  kd_tensor *cur = t, *next = NULL;
  kd_status st = KD_OK;
  /* Cast where the values are readable: before leaving the CPU, after
   * arriving on it. */
  bool cast_first = cast && dev.type == KD_DEVICE_CPU;
  if (cast_first) {
    if ((st = kd_tensor_to_dtype(cur, (kd_dtype)def.dtype, &next))) goto fail;
    cur = next;
  }
  if (move) {
    kd_device target = {want_type, 0};
    if (kt && kd_tensor_device(kt).type == want_type) target = kd_tensor_device(kt);
    st = kd_tensor_to_device(cur, target, &next);
    if (cur != t) kd_tensor_release(cur);
    if (st) goto fail;
    cur = next;
  }
  if (cast && !cast_first) {
    st = kd_tensor_to_dtype(cur, (kd_dtype)def.dtype, &next);
    if (cur != t) kd_tensor_release(cur);
    if (st) goto fail;
    cur = next;
  }
  *out = cur;
  return KD_OK;
fail: {
  char want[96], key[96], why[512];
  format_def(def, want, sizeof want);
  format_kernel_key(plan, key, sizeof key);
  snprintf(why, sizeof why, "%s", kd_last_error());
  return kd_set_error(st, "kernel '%s' %s: could not bring argument %zu '%s' to %s: %s", op->name,
                      key, i, arg_name(info, i), want, why);
}
}

kd_status kd__enforce_inputs(const kd_op *op, const kd__op_info *info, const kd__plan *plan,
                             const kd_tensor *kt, kd_arg *args, kd_tensor **temps,
                             int32_t *written, uint32_t *ntemps) {
  *ntemps = 0;
  for (uint32_t j = 0; plan && j < plan->nin; j++) {
    const kd__plan_item *it = &plan->items[j];
    kd_tensor *t = args[it->index].t, *got;
    if (!t) continue; /* None for a Tensor? argument */
    kd_status st = conform(op, info, plan, it->index, it->def, kt, t, &got);
    if (st) return st;
    if (got != t) {
      written[*ntemps] =
          kd_argument_is_write(kd_schema_argument(info->schema, it->index)) ? (int32_t)it->index : -1;
      temps[(*ntemps)++] = got;
      args[it->index].t = got;
    }
  }
  return KD_OK;
}

kd_status kd__enforce_write_back(const kd_op *op, const kd__op_info *info, const kd__plan *plan,
                                 const kd_arg *orig, const kd_arg *local, kd_tensor *const *temps,
                                 const int32_t *written, uint32_t ntemps, kd_value *rets) {
  for (uint32_t k = 0; k < ntemps; k++) {
    int32_t i = written[k];
    if (i < 0) continue;
    kd_tensor *o = orig[i].t;
    const kd_tensor *t = local[i].t;
    (void)temps;
    bool same = o->ndim == t->ndim;
    for (int d = 0; same && d < o->ndim; d++) same = o->sizes[d] == t->sizes[d];
    kd_status st = same ? KD_OK : kd_tensor_resize_(o, t->ndim, t->sizes, NULL);
    if (st == KD_OK) st = kd_tensor_copy_(o, t);
    if (st) {
      char why[512], key[96];
      snprintf(why, sizeof why, "%s", kd_last_error());
      format_kernel_key(plan, key, sizeof key);
      return kd_set_error(st,
                          "kernel '%s' %s: could not write mutated argument %d '%s' back from "
                          "the copy its argument definition asked for: %s",
                          op->name, key, i, arg_name(info, (size_t)i), why);
    }
    /* A return the schema says aliases it is the caller's tensor. */
    for (uint32_t j = 0; j < info->nrets; j++) {
      if (rets[j].tag != KD_VALUE_TENSOR || kd__return_alias(info, j) != i) continue;
      kd_value_destroy(&rets[j]);
      rets[j] = kd_value_tensor(o);
    }
  }
  return KD_OK;
}

kd_status kd__enforce_outputs(const kd_op *op, const kd__plan *plan, kd_value *rets,
                              uint32_t nrets) {
  (void)nrets;
  for (uint32_t j = 0; plan && j < plan->nout; j++) {
    const kd__plan_item *it = &plan->items[plan->nin + j];
    const kd_value *v = &rets[it->index];
    if (v->tag != KD_VALUE_TENSOR) continue;
    const kd_tensor *t = v->u.t;
    kd_arg_def d = it->def;
    kd_device_type dt = kd_tensor_device(t).type;
    if ((d.backend == KD_ALL_BACKEND || (int)kd_backend_key(dt) == d.backend) &&
        (d.layout == KD_ALL_LAYOUT || (int)t->layout == d.layout) &&
        (d.dtype == KD_ALL_DTYPE || (int)t->dtype == d.dtype))
      continue;
    char want[96], got[96], key[96];
    format_def(d, want, sizeof want);
    format_def((kd_arg_def){(int)kd_backend_key(dt), (int)t->layout, (int)t->dtype}, got,
               sizeof got);
    format_kernel_key(plan, key, sizeof key);
    return kd_set_error(KD_EINTERNAL,
                        "kernel '%s' %s returned output %u as %s, but its argument definition "
                        "says %s",
                        op->name, key, it->index, got, want);
  }
  return KD_OK;
}
