/*
 * fallback.c: the CPU fallback of a device backend (kd/cpu_fallback.h):
 * move the tensor arguments to the CPU, redispatch to the CPU key, write the
 * mutated arguments back, return them as the schema's aliases, move new
 * results to the arguments' device. Also the counts per (operator, backend)
 * and the warning once per (operator, backend). Reached only from the slow
 * path of a call whose slot has no kernel (call.c) and from kd_cpu_fallback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "dispatch/dispatcher_impl.h"
#include "kd/cpu_fallback.h"

/* ---- Counts per (operator, backend) ----------------------------------------------- */

/* A lock-free hash set: entries are only ever added (under fb_lock) and
 * freed at exit, so readers walk the chains with acquire loads. */
typedef struct fb_stat {
  const kd_op *op;
  kd_dispatch_key key;
  _Atomic uint64_t calls;
  /* The schema's facts the fallback reads on every call, computed once
   * (written before publication, never changed). */
  uint64_t writes;      /* bit i: argument i is mutated (Tensor(a!)) */
  int8_t ret_alias[16]; /* per return: the argument it aliases, or -1 */
  struct fb_stat *next;     /* in its bucket (written before publication) */
  struct fb_stat *all_next; /* every entry, newest first */
} fb_stat;

#define FB_BUCKETS 256
static _Atomic(fb_stat *) fb_buckets[FB_BUCKETS];
static _Atomic(fb_stat *) fb_all;
static pthread_mutex_t fb_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t fb_bucket(const kd_op *op, kd_dispatch_key key) {
  return (size_t)(kd__hash_mix((uint64_t)(uintptr_t)op * 0x9e3779b97f4a7c15ull + (uint64_t)key) %
                  FB_BUCKETS);
}

static fb_stat *fb_find(const kd_op *op, kd_dispatch_key key) {
  for (fb_stat *s = atomic_load_explicit(&fb_buckets[fb_bucket(op, key)], memory_order_acquire); s;
       s = s->next)
    if (s->op == op && s->key == key) return s;
  return NULL;
}

/* Counts one fallback of (op, key), whose entry `st` the caller found
 * (NULL the first time); warns the first time. `e` and `kt` say what the
 * backend lacked (a dtype when its slot selects kernels by dtype), formatted
 * only for the warning. `writes` and `ret_alias` are stored in a new entry. */
static void fb_count(const kd_op *op, kd_dispatch_key key, fb_stat *st, const kd__entry *e,
                     const kd_tensor *kt, kd_device home, uint64_t writes,
                     const int8_t *ret_alias, uint32_t nrets) {
  if (__builtin_expect(st != NULL, 1)) {
    atomic_fetch_add_explicit(&st->calls, 1, memory_order_relaxed);
    return;
  }
  fb_stat *s;
  bool first = false;
  pthread_mutex_lock(&fb_lock);
  s = fb_find(op, key);
  if (!s && (s = kd__calloc(1, sizeof *s))) {
    size_t b = fb_bucket(op, key);
    s->op = op;
    s->key = key;
    s->writes = writes;
    memcpy(s->ret_alias, ret_alias, nrets * sizeof *ret_alias);
    s->next = atomic_load_explicit(&fb_buckets[b], memory_order_relaxed);
    s->all_next = atomic_load_explicit(&fb_all, memory_order_relaxed);
    atomic_store_explicit(&fb_buckets[b], s, memory_order_release);
    atomic_store_explicit(&fb_all, s, memory_order_release);
    first = true;
  }
  if (s) atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
  pthread_mutex_unlock(&fb_lock);
  if (first) {
    char why[80] = "";
    if (e && e->select && kt)
      snprintf(why, sizeof why, " for dtype %s (layout %s)", kd_dtype_name(kt->dtype),
               kd_layout_name(kt->layout));
    char dev[48];
    kd_device_format(home, dev, sizeof dev);
    kd_warn("'%s' has no %s kernel%s: falling back to the CPU kernel (tensor arguments moved to "
            "the CPU, mutated arguments written back, results moved to %s); warned once per "
            "operator and backend",
            op->name, kd_dispatch_key_name(key), why, dev);
  }
}

uint64_t kd_op_fallback_count(const kd_op *op, kd_dispatch_key key) {
  if (!op) return 0;
  fb_stat *s = fb_find(op, key);
  return s ? atomic_load_explicit(&s->calls, memory_order_relaxed) : 0;
}

size_t kd_fallback_counts_foreach(kd_fallback_count_fn fn, void *user) {
  size_t n = 0;
  for (fb_stat *s = atomic_load_explicit(&fb_all, memory_order_acquire); s; s = s->all_next, n++)
    if (fn) fn(s->op, s->key, atomic_load_explicit(&s->calls, memory_order_relaxed), user);
  return n;
}

__attribute__((destructor)) static void fb_free_all(void) {
  pthread_mutex_lock(&fb_lock);
  fb_stat *s = atomic_load_explicit(&fb_all, memory_order_relaxed);
  atomic_store_explicit(&fb_all, NULL, memory_order_relaxed);
  for (size_t b = 0; b < FB_BUCKETS; b++) atomic_store_explicit(&fb_buckets[b], NULL, memory_order_relaxed);
  while (s) {
    fb_stat *next = s->all_next;
    kd__free(s);
    s = next;
  }
  pthread_mutex_unlock(&fb_lock);
}

/* ---- The fallback ------------------------------------------------------------------ */

static const char *arg_name(const kd__op_info *info, size_t i) {
  return kd_argument_name(kd_schema_argument(info->schema, i));
}

static bool arg_is_write(const kd__op_info *info, size_t i) {
  return kd_argument_is_write(kd_schema_argument(info->schema, i));
}

int kd__return_alias(const kd__op_info *info, uint32_t j) {
  const kd_alias_info *ra = kd_argument_alias(kd_schema_return(info->schema, j));
  if (!ra) {
    const kd_type *t = kd_argument_type(kd_schema_return(info->schema, j));
    ra = t ? kd_type_element_alias(t) : NULL;
  }
  if (!ra || kd_alias_num_before(ra) == 0) return -1;
  const char *name = kd_alias_before(ra, 0);
  for (uint32_t i = 0; i < info->nargs; i++) {
    const kd_argument *a = kd_schema_argument(info->schema, i);
    const kd_alias_info *aa = kd_argument_alias(a);
    if (!aa) {
      const kd_type *t = kd_argument_type(a);
      aa = t ? kd_type_element_alias(t) : NULL;
    }
    if (!aa) continue;
    for (size_t k = 0; k < kd_alias_num_before(aa); k++)
      if (strcmp(kd_alias_before(aa, k), name) == 0) return (int)i;
  }
  return -1;
}

/* One tensor moved to the CPU for the call. */
typedef struct fb_moved {
  kd_tensor *orig; /* the caller's (borrowed) */
  kd_tensor *tmp;  /* its CPU copy (owned) */
  uint32_t arg;    /* the schema argument it belongs to */
} fb_moved;

typedef struct fb_state {
  kd_arg local[64];
  fb_moved inline_moved[16];
  fb_moved *moved; /* inline_moved or kd__malloc'd */
  size_t nmoved, cap;
  kd_tensor **lists[64]; /* per argument: the CPU copy of a moved tensor list, or NULL */
  int32_t first_moved[64]; /* per argument: index of its first moved tensor (-1: none) */
} fb_state;

static kd_status fb_push(fb_state *s, kd_tensor *orig, kd_tensor *tmp, uint32_t arg) {
  if (s->nmoved == s->cap) {
    size_t cap = 2 * s->cap;
    fb_moved *m = kd__malloc(cap * sizeof *m);
    if (!m) return kd_set_error(KD_ENOMEM, "CPU fallback: out of memory");
    memcpy(m, s->moved, s->nmoved * sizeof *m);
    if (s->moved != s->inline_moved) kd__free(s->moved);
    s->moved = m;
    s->cap = cap;
  }
  s->moved[s->nmoved++] = (fb_moved){orig, tmp, arg};
  return KD_OK;
}

static void fb_release(fb_state *s, uint32_t nargs) {
  for (size_t i = 0; i < s->nmoved; i++) kd_tensor_release(s->moved[i].tmp);
  if (s->moved != s->inline_moved) kd__free(s->moved);
  for (uint32_t i = 0; i < nargs; i++) kd__free(s->lists[i]);
}

/* Moves one tensor argument (or list element) to the CPU. */
static kd_status fb_move(const kd_op *op, const kd__op_info *info, fb_state *s, kd_tensor *t,
                         uint32_t arg, kd_tensor **out) {
  kd_tensor *tmp;
  kd_status st = kd_tensor_to_device(t, kd_device_cpu(), &tmp);
  if (st) {
    char why[512];
    snprintf(why, sizeof why, "%s", kd_last_error());
    return kd_set_error(st, "'%s': CPU fallback could not move argument %u '%s' to the CPU: %s",
                        op->name, arg, arg_name(info, arg), why);
  }
  if ((st = fb_push(s, t, tmp, arg))) {
    kd_tensor_release(tmp);
    return st;
  }
  if (s->first_moved[arg] < 0) s->first_moved[arg] = (int32_t)(s->nmoved - 1);
  *out = tmp;
  return KD_OK;
}

/* Where the fallback applies: the home device of the results (the first
 * Device argument given, which says where the caller wants them, even the
 * CPU; else the first tensor on the backend's device type; else its index
 * 0), or a reason in `why` when a tensor argument is on a third device type. */
static bool fb_home(const kd__op_info *info, const kd_arg *args, kd_device_type devtype,
                    kd_device *home, char *why, size_t cap) {
  bool found = false, asked = false;
  kd_device wanted = {devtype, 0};
  *home = (kd_device){devtype, 0};
  for (uint32_t i = 0; i < info->nargs; i++) {
    uint8_t k = info->kinds[i];
    kd_tensor *const *items = NULL;
    int64_t n = 0;
    kd_tensor *one;
    if (kd__is_tensor_kind(k)) {
      one = args[i].t;
      items = &one;
      n = 1;
    } else if (k == KD__ARG_TENSORS || k == KD__ARG_OPT_TENSORS) {
      items = args[i].tensors.data;
      n = args[i].tensors.size;
    } else if (k == KD__ARG_DEVICE || (k == KD__ARG_OPT_DEVICE && args[i].opt.has)) {
      if (!asked) wanted = k == KD__ARG_DEVICE ? args[i].device : args[i].opt.v.device;
      asked = true;
      continue;
    }
    for (int64_t e = 0; e < n; e++) {
      const kd_tensor *t = items[e];
      if (!t) continue;
      kd_device d = kd_tensor_device(t);
      if (d.type == KD_DEVICE_CPU) continue;
      if (d.type != devtype) {
        char dev[48];
        kd_device_format(d, dev, sizeof dev);
        snprintf(why, cap, "argument %u '%s' is on '%s', neither the CPU nor '%s'", i,
                 kd_argument_name(kd_schema_argument(info->schema, i)), dev,
                 kd_device_type_name(devtype));
        return false;
      }
      if (!found) {
        *home = d;
        found = true;
      }
    }
  }
  if (asked) *home = wanted;
  return true;
}

/* A return that is a view of an argument on the device (`Tensor(a)`, not
 * written) cannot come from a CPU copy: a reason in `why` then. */
static bool fb_no_device_view(const kd__op_info *info, const kd_arg *args, const int8_t *ret_alias,
                              uint64_t writes, char *why, size_t cap) {
  for (uint32_t j = 0; j < info->nrets; j++) {
    int a = ret_alias[j];
    if (a < 0 || (writes >> a & 1)) continue;
    bool on_device = false;
    if (kd__is_tensor_kind(info->kinds[a])) {
      on_device = args[a].t && kd_tensor_device(args[a].t).type != KD_DEVICE_CPU;
    } else if (info->kinds[a] == KD__ARG_TENSORS || info->kinds[a] == KD__ARG_OPT_TENSORS) {
      for (int64_t e = 0; e < args[a].tensors.size && !on_device; e++)
        on_device = args[a].tensors.data[e] &&
                    kd_tensor_device(args[a].tensors.data[e]).type != KD_DEVICE_CPU;
    }
    if (!on_device) continue;
    snprintf(why, cap,
             "return %u is a view of argument %d '%s' (Tensor(a)), and a copy on the CPU cannot "
             "be a view of a device tensor",
             j, a, arg_name(info, (size_t)a));
    return false;
  }
  return true;
}

/* Can the CPU slot run this call? A reason in `why` when not. */
static bool fb_cpu_has_kernel(const kd_op *op, const kd__op_info *info, const kd_arg *args,
                              char *why, size_t cap) {
  const kd__entry *e = atomic_load_explicit(&op->table[KD_KEY_CPU], memory_order_acquire);
  if (!e || e->reason == KD__REASON_MISSING || e->kernel->k.kind == KD_KERNEL_FALLTHROUGH ||
      e->kernel->k.kind == KD_KERNEL_NOT_SUPPORTED) {
    snprintf(why, cap, "'%s' has no CPU kernel either", op->name);
    return false;
  }
  if (e->select && e->key_arg >= 0 && (uint32_t)e->key_arg < info->nargs) {
    const kd_tensor *kt = args[e->key_arg].t;
    if (kt && !e->select[(int)kt->layout * KD_DTYPE_COUNT + (int)kt->dtype].kernel) {
      snprintf(why, cap, "no CPU kernel for dtype %s (layout %s); registered: %s",
               kd_dtype_name(kt->dtype), kd_layout_name(kt->layout), e->select_text);
      return false;
    }
  }
  return true;
}

/* Writes the CPU copy back into the caller's tensor (resized first when the
 * kernel resized the copy). */
static kd_status fb_write_back(const kd_op *op, const kd__op_info *info, const fb_moved *m) {
  kd_tensor *o = m->orig;
  const kd_tensor *t = m->tmp;
  bool same = o->ndim == t->ndim;
  for (int d = 0; same && d < o->ndim; d++) same = o->sizes[d] == t->sizes[d];
  kd_status st = same ? KD_OK : kd_tensor_resize_(o, t->ndim, t->sizes, NULL);
  if (st == KD_OK) st = kd_tensor_copy_(o, t);
  if (st == KD_OK) return KD_OK;
  char why[512];
  snprintf(why, sizeof why, "%s", kd_last_error());
  return kd_set_error(st,
                      "'%s': CPU fallback could not write mutated argument %u '%s' back to its "
                      "device: %s",
                      op->name, m->arg, arg_name(info, m->arg), why);
}

/* A result tensor of the CPU kernel on the home device (owned in *v). */
static kd_status fb_result_home(const kd_op *op, uint32_t j, kd_device home, kd_tensor *t,
                                kd_tensor **out) {
  kd_status st = kd_tensor_to_device(t, home, out);
  if (st == KD_OK) return KD_OK;
  char why[512], dev[48];
  snprintf(why, sizeof why, "%s", kd_last_error());
  kd_device_format(home, dev, sizeof dev);
  return kd_set_error(st, "'%s': CPU fallback could not move result %u to '%s': %s", op->name, j,
                      dev, why);
}

/* The results as the schema promises them (rets owned on entry). */
static kd_status fb_results(const kd_op *op, const kd__op_info *info, const fb_state *s,
                            const kd_arg *args, const int8_t *ret_alias, uint64_t writes,
                            kd_device home, kd_value *rets) {
  for (uint32_t j = 0; j < info->nrets; j++) {
    kd_value *v = &rets[j];
    if (v->tag != KD_VALUE_TENSOR && v->tag != KD_VALUE_TENSOR_LIST) continue;
    int a = ret_alias[j];
    if (a >= 0 && s->first_moved[a] >= 0 && (writes >> a & 1)) {
      /* The caller's own tensor (or list), as the schema says. */
      kd_value nv;
      kd_status st = v->tag == KD_VALUE_TENSOR
                         ? (nv = kd_value_tensor(args[a].t), KD_OK)
                         : kd_value_tensor_list(args[a].tensors.data, (size_t)args[a].tensors.size, &nv);
      if (st) return st;
      kd_value_destroy(v);
      *v = nv;
      continue;
    }
    if (a >= 0 || home.type == KD_DEVICE_CPU) continue; /* stays where it is */
    if (v->tag == KD_VALUE_TENSOR) {
      if (kd_tensor_device(v->u.t).type != KD_DEVICE_CPU) continue;
      kd_tensor *moved;
      kd_status st = fb_result_home(op, j, home, v->u.t, &moved);
      if (st) return st;
      kd_value_destroy(v);
      *v = kd_value_tensor(moved);
      kd_tensor_release(moved);
      continue;
    }
    size_t n = kd_value_list_size(v);
    kd_tensor *const *items = kd_value_tensor_list_data(v);
    kd_tensor **moved = kd__calloc(n ? n : 1, sizeof *moved);
    if (!moved) return kd_set_error(KD_ENOMEM, "CPU fallback: out of memory");
    kd_status st = KD_OK;
    for (size_t e = 0; st == KD_OK && e < n; e++) {
      if (kd_tensor_device(items[e]).type != KD_DEVICE_CPU) {
        kd_tensor_retain(items[e]);
        moved[e] = items[e];
        continue;
      }
      st = fb_result_home(op, j, home, items[e], &moved[e]);
    }
    kd_value nv;
    if (st == KD_OK) st = kd_value_tensor_list(moved, n, &nv);
    for (size_t e = 0; e < n; e++) kd_tensor_release(moved[e]);
    kd__free(moved);
    if (st) return st;
    kd_value_destroy(v);
    *v = nv;
  }
  return KD_OK;
}

kd_status kd__cpu_fallback(const kd_op *op, const kd__op_info *info, const kd_call *call,
                           const kd__entry *e, const kd_tensor *kt, bool helper,
                           const kd_arg *args, kd_value *rets) {
  kd_dispatch_key key = call->key;
  kd_device_type devtype;
  char why[768];
  kd_device home;
  /* The schema's mutated arguments and the argument each return aliases,
   * read once. */
  fb_stat *stat = fb_find(op, key); /* NULL the first time */
  uint64_t writes = 0;
  int8_t ret_alias[16];
  if (__builtin_expect(stat != NULL, 1)) {
    writes = stat->writes;
    memcpy(ret_alias, stat->ret_alias, info->nrets * sizeof *ret_alias);
  } else {
    for (uint32_t i = 0; i < info->nargs; i++)
      if (arg_is_write(info, i)) writes |= (uint64_t)1 << i;
    for (uint32_t j = 0; j < info->nrets; j++) ret_alias[j] = (int8_t)kd__return_alias(info, j);
  }
  bool ok = kd__device_of_backend((int)key, &devtype) &&
            fb_home(info, args, devtype, &home, why, sizeof why) &&
            fb_no_device_view(info, args, ret_alias, writes, why, sizeof why) &&
            fb_cpu_has_kernel(op, info, args, why, sizeof why);
  if (!ok) {
    if (helper)
      return kd_set_error(KD_ENOKERNEL, "'%s': kd_cpu_fallback for %s did not apply: %s", op->name,
                          kd_dispatch_key_name(key), why);
    return kd__no_kernel(op, e, key, kt, why);
  }

  fb_state state;
  fb_state *s = &state;
  memcpy(s->local, args, info->nargs * sizeof *args);
  s->moved = s->inline_moved;
  s->nmoved = 0;
  s->cap = sizeof s->inline_moved / sizeof s->inline_moved[0];
  kd_status st = KD_OK;
  for (uint32_t i = 0; i < info->nargs; i++) {
    s->lists[i] = NULL;
    s->first_moved[i] = -1;
  }
  for (uint32_t i = 0; st == KD_OK && i < info->nargs; i++) {
    uint8_t k = info->kinds[i];
    kd_arg *a = &s->local[i];
    if (kd__is_tensor_kind(k)) {
      if (a->t && kd_tensor_device(a->t).type != KD_DEVICE_CPU)
        st = fb_move(op, info, s, a->t, i, &a->t);
    } else if (k == KD__ARG_TENSORS || k == KD__ARG_OPT_TENSORS) {
      int64_t n = a->tensors.size;
      bool any = false;
      for (int64_t j = 0; j < n && !any; j++)
        any = a->tensors.data[j] && kd_tensor_device(a->tensors.data[j]).type != KD_DEVICE_CPU;
      if (!any) continue;
      kd_tensor **copy = kd__malloc((size_t)n * sizeof *copy);
      if (!copy) {
        st = kd_set_error(KD_ENOMEM, "'%s': CPU fallback: out of memory", op->name);
        break;
      }
      memcpy(copy, a->tensors.data, (size_t)n * sizeof *copy);
      s->lists[i] = copy;
      for (int64_t j = 0; st == KD_OK && j < n; j++)
        if (copy[j] && kd_tensor_device(copy[j]).type != KD_DEVICE_CPU)
          st = fb_move(op, info, s, copy[j], i, &copy[j]);
      a->tensors.data = copy;
    } else if (k == KD__ARG_DEVICE && a->device.type == devtype) {
      a->device = kd_device_cpu();
    } else if (k == KD__ARG_OPT_DEVICE && a->opt.has && a->opt.v.device.type == devtype) {
      a->opt.v.device = kd_device_cpu();
    }
  }
  if (st == KD_OK) {
    /* Counted (and warned about) as it runs the CPU kernel. */
    fb_count(op, key, stat, e, kt, home, writes, ret_alias, info->nrets);
    kd_keyset ks = (kd_keyset_below(call->keys, key) & ~KD__BACKEND_KEYS) | kd_keyset_of(KD_KEY_CPU);
    for (uint32_t j = 0; j < info->nrets; j++) rets[j] = kd_value_none();
    st = kd_call_unboxed_keys((kd_op *)op, ks, s->local, rets);
    if (st == KD_OK) {
      /* A borrowed result may be one of the CPU copies, released below. */
      for (uint32_t j = 0; j < info->nrets; j++)
        if (rets[j].flags & KD_VALUE_BORROWED) kd_value_own(&rets[j]);
      for (size_t m = 0; st == KD_OK && m < s->nmoved; m++)
        if (writes >> s->moved[m].arg & 1) st = fb_write_back(op, info, &s->moved[m]);
      if (st == KD_OK) st = fb_results(op, info, s, args, ret_alias, writes, home, rets);
      if (st)
        for (uint32_t j = 0; j < info->nrets; j++) kd_value_destroy(&rets[j]);
    }
  }
  fb_release(s, info->nargs);
  return st;
}
