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
 * tensor the caller releases. */
static kd_status conform(const kd_op *op, const kd__op_info *info, const kd__plan *plan, size_t i,
                         kd_arg_def def, kd_tensor *t, kd_tensor **out) {
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
                             bool to_cpu, kd_arg *args, kd_tensor **temps, uint32_t *ntemps) {
  *ntemps = 0;
  if (to_cpu) {
    for (uint32_t i = 0; i < info->nargs; i++) {
      kd_tensor *t = kd__is_tensor_kind(info->kinds[i]) ? args[i].t : NULL;
      if (!t || kd_tensor_device(t).type == KD_DEVICE_CPU) continue;
      kd_tensor *moved;
      kd_status st = kd_tensor_to_device(t, kd_device_cpu(), &moved);
      if (st) {
        char why[512];
        snprintf(why, sizeof why, "%s", kd_last_error());
        return kd_set_error(st, "'%s': CPU fallback could not move argument %u '%s' to the CPU: %s",
                            op->name, i, arg_name(info, i), why);
      }
      temps[(*ntemps)++] = moved;
      args[i].t = moved;
    }
  }
  for (uint32_t j = 0; plan && j < plan->nin; j++) {
    const kd__plan_item *it = &plan->items[j];
    kd_tensor *t = args[it->index].t, *got;
    if (!t) continue; /* None for a Tensor? argument */
    kd_status st = conform(op, info, plan, it->index, it->def, t, &got);
    if (st) return st;
    if (got != t) {
      temps[(*ntemps)++] = got;
      args[it->index].t = got;
    }
  }
  return KD_OK;
}

kd_status kd__enforce_outputs(const kd_op *op, const kd__plan *plan, const kd_device *home,
                              kd_value *rets, uint32_t nrets) {
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
  if (home && home->type != KD_DEVICE_CPU) {
    for (uint32_t j = 0; j < nrets; j++) {
      kd_value *v = &rets[j];
      if (v->tag != KD_VALUE_TENSOR || kd_tensor_device(v->u.t).type == home->type) continue;
      kd_tensor *moved;
      kd_status st = kd_tensor_to_device(v->u.t, *home, &moved);
      if (st) {
        char why[512];
        snprintf(why, sizeof why, "%s", kd_last_error());
        return kd_set_error(st, "'%s': CPU fallback could not move result %u back to %s: %s",
                            op->name, j, kd_device_type_name(home->type), why);
      }
      kd_value_destroy(v);
      *v = kd_value_tensor(moved);
      kd_tensor_release(moved);
    }
  }
  return KD_OK;
}

/* ---- Warn once per (operator, backend, dtype) ---- */

typedef struct warned {
  const kd_op *op;
  kd_dispatch_key key;
  int dtype;
  struct warned *next;
} warned;
static warned *warned_list;
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;

void kd__warn_fallback_once(const kd_op *op, kd_dispatch_key backend, kd_dtype dtype) {
  pthread_mutex_lock(&warned_lock);
  for (const warned *w = warned_list; w; w = w->next)
    if (w->op == op && w->key == backend && w->dtype == (int)dtype) {
      pthread_mutex_unlock(&warned_lock);
      return;
    }
  warned *w = kd__malloc(sizeof *w);
  if (w) {
    *w = (warned){op, backend, (int)dtype, warned_list};
    warned_list = w;
  }
  pthread_mutex_unlock(&warned_lock);
  kd_warn("'%s' has no %s kernel for dtype %s: falling back to the CPU kernel (inputs moved to "
          "the CPU, results moved back); warned once per operator, backend and dtype",
          op->name, kd_dispatch_key_name(backend), kd_dtype_name(dtype));
}

__attribute__((destructor)) static void free_warned(void) {
  pthread_mutex_lock(&warned_lock);
  while (warned_list) {
    warned *w = warned_list;
    warned_list = w->next;
    kd__free(w);
  }
  pthread_mutex_unlock(&warned_lock);
}
