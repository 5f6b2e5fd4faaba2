/*
 * kernel_keys.c: PHI's kernel keys on the registry side. A slot (operator,
 * runtime key) with kernel-key registrations gets a selector: one cell per
 * (layout, dtype) naming the kernel that serves it, resolved once at
 * registration (exact key, then layout wildcard, then dtype wildcard, then a
 * plain kernel), with the plan of what the call must enforce (argument
 * definitions). Also: staged custom kernels and their merge, the CPU
 * fallback switch (the fallback itself: src/dispatch/fallback.c), and
 * kd_op_select_kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "dispatch/dispatcher_impl.h"

kd_registration *kd__staged;
_Atomic kd_keyset kd__cpu_fallback_keys;

/* ---- Argument definitions ----------------------------------------------------------- */

struct kd_kernel_args {
  kd_dtype dtype;
  kd__argdef_override *items;
  size_t n, cap;
  int key_arg; /* -2: not set by the callback */
  kd_status error;
  char message[256];
};

static void args_fail(kd_kernel_args *a, const char *what, size_t index, int field, int value) {
  if (a->error) return;
  a->error = KD_EINVAL;
  snprintf(a->message, sizeof a->message,
           "argument definition for dtype %s: invalid %s %zu, field %d, value %d",
           kd_dtype_name(a->dtype), what, index, field, value);
}

static bool field_value_ok(int field, int value) {
  switch (field) {
    case KD_ARGDEF_BACKEND:
      return value == KD_ALL_BACKEND ||
             (value >= 0 && value < 64 && (KD__BACKEND_KEYS & ((kd_keyset)1 << value)));
    case KD_ARGDEF_LAYOUT:
      return value == KD_ALL_LAYOUT || (value >= 0 && value < KD_LAYOUT_COUNT);
    case KD_ARGDEF_DTYPE:
      return value == KD_ALL_DTYPE || (value >= 0 && value < KD_DTYPE_COUNT);
    default:
      return false;
  }
}

static void args_set(kd_kernel_args *a, bool output, size_t index, kd_argdef_field field,
                     int value) {
  if (!a) return;
  const char *what = output ? "output" : "input";
  if (index >= (output ? 16u : 64u) || !field_value_ok((int)field, value)) {
    args_fail(a, what, index, (int)field, value);
    return;
  }
  if (a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 4;
    kd__argdef_override *items = kd__realloc(a->items, cap * sizeof *items);
    if (!items) {
      if (!a->error) {
        a->error = KD_ENOMEM;
        snprintf(a->message, sizeof a->message, "out of memory recording argument definitions");
      }
      return;
    }
    a->items = items;
    a->cap = cap;
  }
  a->items[a->n++] = (kd__argdef_override){(uint8_t)a->dtype, output, (uint8_t)field,
                                           (uint16_t)index, value};
}

void kd_kernel_args_input(kd_kernel_args *args, size_t arg, kd_argdef_field field, int value) {
  args_set(args, false, arg, field, value);
}

void kd_kernel_args_output(kd_kernel_args *args, size_t ret, kd_argdef_field field, int value) {
  args_set(args, true, ret, field, value);
}

void kd_kernel_args_key(kd_kernel_args *args, size_t arg) {
  if (!args) return;
  if (arg >= 64 || (args->key_arg != -2 && args->key_arg != (int)arg)) {
    if (!args->error) {
      args->error = KD_EINVAL;
      snprintf(args->message, sizeof args->message,
               "key argument %zu (dtype %s): out of range, or not the same for every dtype", arg,
               kd_dtype_name(args->dtype));
    }
    return;
  }
  args->key_arg = (int)arg;
}

/* Runs the spec's callback once per dtype, collecting the overrides. */
kd_status kd__collect_overrides(const char *name, const kd_keyed_kernel *spec,
                                 kd__argdef_override **items, size_t *n, int *key_arg) {
  *items = NULL;
  *n = 0;
  *key_arg = spec->key_arg;
  if (!spec->args) return KD_OK;
  kd_kernel_args a = {0};
  a.key_arg = -2;
  for (int d = 0; d < KD_DTYPE_COUNT && !a.error; d++) {
    if (!(spec->dtypes & KD_DTYPE_BIT(d))) continue;
    a.dtype = (kd_dtype)d;
    spec->args(&a, (kd_dtype)d, spec->user_data);
  }
  if (a.error) {
    kd__free(a.items);
    return kd_set_error(a.error, "kd_library_impl_keyed_ex(%s): %s", name, a.message);
  }
  *items = a.items;
  *n = a.n;
  if (a.key_arg != -2) *key_arg = a.key_arg;
  return KD_OK;
}

/* The backend a kernel-key kernel's tensors default to in the slot of
 * `key`: the key itself for a dense backend key (kernel keys are PHI's,
 * made for those slots); the dense key of the key's column for the other
 * per-backend keys (AutogradCPU and SparseCPU: CPU), where tensors live on
 * that backend; KD_ALL_BACKEND (anywhere) for a key of no backend (a mode,
 * AutogradOther), where nothing says where they live. */
static int default_backend(kd_dispatch_key key) {
  kd_device_type b;
  if (kd_dispatch_key_split(key, NULL, &b)) return (int)kd_backend_key(b);
  return KD_ALL_BACKEND;
}

kd_arg_def kd__argdef_of(const kd_registration *r, kd_dispatch_key key, kd_dtype dtype,
                         bool output, size_t index) {
  kd_arg_def def = {default_backend(key), r->keyed ? r->layout : KD_ALL_LAYOUT, (int)dtype};
  for (size_t i = 0; i < r->noverrides; i++) {
    const kd__argdef_override *o = &r->overrides[i];
    if (o->dtype != (uint8_t)dtype || o->output != output || o->index != index) continue;
    if (o->field == KD_ARGDEF_BACKEND) def.backend = o->value;
    else if (o->field == KD_ARGDEF_LAYOUT) def.layout = o->value;
    else def.dtype = o->value;
  }
  return def;
}

static bool is_tensor_type(const kd_type *t) {
  if (kd_type_kind_of(t) == KD_TYPE_OPTIONAL) t = kd_type_element(t);
  return kd_type_kind_of(t) == KD_TYPE_TENSOR;
}

kd_status kd__argdefs_check(const char *opname, const kd_schema *schema, const kd_registration *r) {
  size_t nargs = kd_schema_num_arguments(schema), nrets = kd_schema_num_returns(schema);
  if (r->key_arg >= 0 &&
      ((size_t)r->key_arg >= nargs ||
       !is_tensor_type(kd_argument_type(kd_schema_argument(schema, (size_t)r->key_arg)))))
    return kd_set_error(KD_EINVAL,
                        "kernel for '%s' registered at %s: key argument %d is not a Tensor "
                        "argument of the schema",
                        opname, r->debug ? r->debug : "?", r->key_arg);
  for (size_t i = 0; i < r->noverrides; i++) {
    const kd__argdef_override *o = &r->overrides[i];
    if (o->output) {
      if (o->index >= nrets ||
          kd_type_kind_of(kd_argument_type(kd_schema_return(schema, o->index))) != KD_TYPE_TENSOR)
        return kd_set_error(KD_EINVAL,
                            "kernel for '%s' registered at %s defines output %u (dtype %s), but "
                            "return %u of the schema is not a Tensor",
                            opname, r->debug ? r->debug : "?", o->index,
                            kd_dtype_name((kd_dtype)o->dtype), o->index);
    } else if (o->index >= nargs ||
               !is_tensor_type(kd_argument_type(kd_schema_argument(schema, o->index)))) {
      return kd_set_error(KD_EINVAL,
                          "kernel for '%s' registered at %s defines input %u (dtype %s), but "
                          "argument %u of the schema is not a Tensor or Tensor?",
                          opname, r->debug ? r->debug : "?", o->index,
                          kd_dtype_name((kd_dtype)o->dtype), o->index);
    }
  }
  return KD_OK;
}

/* ---- Selectors ---------------------------------------------------------------------- */

bool kd__slot_is_keyed(const kd_op *op, kd_dispatch_key key) {
  for (const kd_registration *r = op->impls; r; r = r->op_next)
    if (r->key == key && r->keyed) return true;
  return false;
}

/* How specific a registration is for one (layout, dtype) cell: 0 (does not
 * serve it), 1 any layout and dtype (a plain impl, or a keyed one with both
 * wildcards), 2 dtype wildcard, 3 layout wildcard, 4 exact. */
static int specificity(const kd_registration *r, int layout, int dtype) {
  if (!r->keyed) return 1;
  if (!(r->dtypes & KD_DTYPE_BIT(dtype))) return 0;
  if (r->layout != KD_ALL_LAYOUT && r->layout != layout) return 0;
  bool all_dtypes = (r->dtypes & KD_ALL_DTYPES) == KD_ALL_DTYPES;
  if (r->layout == KD_ALL_LAYOUT) return all_dtypes ? 1 : 3;
  return all_dtypes ? 2 : 4;
}

static bool def_is_any(kd_arg_def d) {
  return d.backend == KD_ALL_BACKEND && d.layout == KD_ALL_LAYOUT && d.dtype == KD_ALL_DTYPE;
}

/* The plan of registration r for the cell (layout, dtype), or NULL when
 * there is nothing to enforce (*oom set when allocation failed). */
static kd__plan *make_plan(const kd_registration *r, kd_dispatch_key key, int layout, int dtype,
                           const kd__op_info *info, int32_t key_arg, bool *oom) {
  kd__plan_item items[80];
  uint32_t nin = 0, nout = 0;
  for (uint32_t i = 0; i < info->nargs; i++) {
    if (!kd__is_tensor_kind(info->kinds[i])) continue;
    kd_arg_def d = kd__argdef_of(r, key, (kd_dtype)dtype, false, i);
    /* The key tensor was selected by its layout and dtype: the default
     * definition holds by construction. */
    bool selected = (int32_t)i == key_arg && d.backend == default_backend(key) &&
                    (d.layout == KD_ALL_LAYOUT || d.layout == layout) && d.dtype == dtype;
    if (selected || def_is_any(d)) continue;
    items[nin++] = (kd__plan_item){(uint16_t)i, d};
  }
  for (uint32_t j = 0; j < info->nrets; j++) {
    if (info->ret_kinds[j] != KD__ARG_TENSOR) continue;
    kd_arg_def d = kd__argdef_of(r, key, (kd_dtype)dtype, true, j);
    if (def_is_any(d)) continue;
    items[nin + nout++] = (kd__plan_item){(uint16_t)j, d};
  }
  if (nin + nout == 0) return NULL;
  kd__plan *p = kd__malloc(sizeof *p + (nin + nout) * sizeof p->items[0]);
  if (!p) {
    *oom = true;
    return NULL;
  }
  p->key = key;
  p->layout = r->layout;
  p->dtype = (kd_dtype)dtype;
  p->nin = nin;
  p->nout = nout;
  memcpy(p->items, items, (nin + nout) * sizeof items[0]);
  return p;
}

void kd__select_free(kd__cell *sel) {
  if (!sel) return;
  for (int i = 0; i < KD__SELECT_CELLS; i++) {
    if (sel[i].kernel) kd__kernel_free((void *)sel[i].kernel);
    kd__free((void *)sel[i].plan);
  }
  kd__free(sel);
}

/* "(CPU, ALL_LAYOUT, [bool, uint8]); (CPU, strided, [float32])", newest first. */
static char *describe_keyed(const kd_op *op, kd_dispatch_key key) {
  char buf[2048];
  kd__fmt f = kd__fmt_init(buf, sizeof buf);
  bool first = true;
  for (const kd_registration *r = op->impls; r; r = r->op_next) {
    if (r->key != key) continue;
    kd__fmt_printf(&f, "%s(%s, %s, ", first ? "" : "; ", kd_dispatch_key_name(key),
                   !r->keyed || r->layout == KD_ALL_LAYOUT ? "ALL_LAYOUT"
                                                           : kd_layout_name((kd_layout)r->layout));
    kd_dtype_set set = r->keyed ? r->dtypes : KD_ALL_DTYPES;
    if ((set & KD_ALL_DTYPES) == KD_ALL_DTYPES) {
      kd__fmt_puts(&f, "ALL_DTYPE)");
    } else {
      kd__fmt_dtype_set(&f, set);
      kd__fmt_puts(&f, ")");
    }
    first = false;
  }
  return kd__strdup(buf);
}

bool kd__select_build(const kd_op *op, kd_dispatch_key key, const kd__op_info *info,
                      kd__cell **out, char **text, int32_t *key_arg) {
  *out = NULL;
  *text = NULL;
  *key_arg = info ? info->key_tensor : -1;
  for (const kd_registration *r = op->impls; r; r = r->op_next)
    if (r->key == key && r->keyed && r->key_arg >= 0) {
      *key_arg = r->key_arg;
      break;
    }
  kd__cell *sel = kd__calloc(KD__SELECT_CELLS, sizeof *sel);
  if (!sel) return false;
  const kd_registration *chosen[KD__SELECT_CELLS] = {0};
  int rank[KD__SELECT_CELLS] = {0};
  for (const kd_registration *r = op->impls; r; r = r->op_next) {
    if (r->key != key) continue;
    for (int l = 0; l < KD_LAYOUT_COUNT; l++)
      for (int d = 0; d < KD_DTYPE_COUNT; d++) {
        int cell = l * KD_DTYPE_COUNT + d, spec = specificity(r, l, d);
        if (spec > rank[cell]) {
          rank[cell] = spec;
          chosen[cell] = r;
        }
      }
  }
  bool oom = false;
  for (int cell = 0; cell < KD__SELECT_CELLS; cell++) {
    const kd_registration *r = chosen[cell];
    if (!r) continue;
    kd__cell *c = &sel[cell];
    c->kernel = r->kernel;
    atomic_fetch_add_explicit(&r->kernel->refs, 1, memory_order_relaxed);
    c->data = r->kernel->k.data;
    c->keyed = r->keyed;
    c->layout = r->keyed ? r->layout : KD_ALL_LAYOUT;
    c->dtypes = r->keyed ? r->dtypes : KD_ALL_DTYPES;
    if (r->keyed && info)
      c->plan = make_plan(r, key, cell / KD_DTYPE_COUNT, cell % KD_DTYPE_COUNT, info, *key_arg, &oom);
    /* A functor's cell has no fast entry: its state is the slot's, made on
     * first call (call.c, prepare). */
    c->fast = c->plan || r->kernel->k.kind == KD_KERNEL_FUNCTOR ? NULL : r->kernel->k.unboxed;
  }
  char *t = describe_keyed(op, key);
  if (oom || !t) {
    kd__select_free(sel);
    kd__free(t);
    return false;
  }
  *out = sel;
  *text = t;
  return true;
}

bool kd__select_same(const kd__cell *a, const kd__cell *b) {
  for (int i = 0; i < KD__SELECT_CELLS; i++)
    if (a[i].kernel != b[i].kernel) return false;
  return true;
}

/* ---- Custom kernels ------------------------------------------------------------------- */

/* The built-in registration a staged one would replace, or NULL. */
static const kd_registration *conflict_of(const kd_registration *s) {
  for (const kd_registration *r = s->op->impls; r; r = r->op_next)
    if (r->keyed && !(r->flags & KD_KERNEL_CUSTOM) && r->key == s->key && r->layout == s->layout &&
        (r->dtypes & s->dtypes))
      return r;
  return NULL;
}

kd_status kd_custom_kernels_merge(size_t *merged) {
  if (merged) *merged = 0;
  pthread_mutex_lock(&kd__registry_lock);
  const kd_registration *first = NULL, *first_builtin = NULL;
  size_t refused = 0;
  for (const kd_registration *s = kd__staged; s; s = s->op_next) {
    if (s->flags & KD_KERNEL_OVERRIDE) continue;
    const kd_registration *b = conflict_of(s);
    if (!b) continue;
    if (!first) {
      first = s;
      first_builtin = b;
    }
    refused++;
  }
  kd_status st;
  if (first) {
    char dtypes[256];
    kd__fmt f = kd__fmt_init(dtypes, sizeof dtypes);
    kd__fmt_dtype_set(&f, first->dtypes & first_builtin->dtypes);
    st = kd_set_error(KD_EEXIST,
                      "custom kernel for '%s' (%s, %s, %s) registered at %s would replace the "
                      "built-in kernel registered at %s; register it with KD_KERNEL_OVERRIDE to "
                      "allow that (%zu other refusal%s); nothing was merged",
                      first->op->name, kd_dispatch_key_name(first->key),
                      first->layout == KD_ALL_LAYOUT ? "ALL_LAYOUT"
                                                     : kd_layout_name((kd_layout)first->layout),
                      dtypes, first->debug ? first->debug : "?",
                      first_builtin->debug ? first_builtin->debug : "?", refused - 1,
                      refused - 1 == 1 ? "" : "s");
  } else {
    st = kd__merge_staged_locked(merged);
  }
  pthread_mutex_unlock(&kd__registry_lock);
  return st;
}

/* ---- CPU fallback ------------------------------------------------------------------- */

kd_status kd_backend_set_cpu_fallback(kd_dispatch_key backend, bool enabled) {
  if ((unsigned)backend >= 64 || backend == KD_KEY_CPU ||
      !(KD__BACKEND_KEYS & ((kd_keyset)1 << backend)))
    return kd_set_error(KD_EINVAL,
                        "kd_backend_set_cpu_fallback: %s is not a backend other than CPU",
                        kd_dispatch_key_name(backend));
  kd_keyset bit = (kd_keyset)1 << backend;
  if (enabled) atomic_fetch_or(&kd__cpu_fallback_keys, bit);
  else atomic_fetch_and(&kd__cpu_fallback_keys, ~bit);
  return KD_OK;
}

/* Backend keys follow device types in order (kd_backend_key; checked in keys.c). */
bool kd__device_of_backend(int backend, kd_device_type *out) {
  int type = backend - (int)KD_KEY_CPU;
  if (type < 0 || type >= KD_DEVICE_TYPE_COUNT) return false;
  *out = (kd_device_type)type;
  return true;
}

/* ---- Selection without a call --------------------------------------------------------- */

kd_status kd_op_select_kernel(const kd_op *op, kd_dispatch_key key, kd_layout layout,
                              kd_dtype dtype, kd_kernel_selection *out) {
  if (!op || !out) return kd_set_error(KD_EINVAL, "kd_op_select_kernel: NULL argument");
  if (!kd_dispatch_key_is_runtime(key) || (unsigned)layout >= KD_LAYOUT_COUNT ||
      (unsigned)dtype >= KD_DTYPE_COUNT)
    return kd_set_error(KD_EINVAL, "kd_op_select_kernel(%s): bad key %d, layout %d or dtype %d",
                        op->name, (int)key, (int)layout, (int)dtype);
  memset(out, 0, sizeof *out);
  uint64_t rd = kd__read_enter();
  kd_status st = KD_OK;
  const kd__entry *e = atomic_load_explicit(&op->table[key], memory_order_acquire);
  int cell = (int)layout * KD_DTYPE_COUNT + (int)dtype;
  bool none = !e || e->reason == KD__REASON_MISSING || e->kernel->k.kind == KD_KERNEL_FALLTHROUGH;
  if (!none && !e->select) {
    out->key = key;
    out->layout = KD_ALL_LAYOUT;
    out->dtypes = KD_ALL_DTYPES;
  } else if (!none && e->select[cell].kernel) {
    out->key = key;
    out->keyed = e->select[cell].keyed;
    out->layout = e->select[cell].layout;
    out->dtypes = e->select[cell].dtypes;
  } else if (key != KD_KEY_CPU && kd__fallback_on(key)) {
    /* The CPU fallback: what the CPU slot would run. */
    st = kd_op_select_kernel(op, KD_KEY_CPU, layout, dtype, out);
    if (st == KD_OK) {
      out->fell_back = true;
    } else {
      char why[1024];
      snprintf(why, sizeof why, "%s", kd_last_error());
      st = none ? kd_set_error(KD_ENOKERNEL,
                               "operator '%s' has no kernel for dispatch key %s; the CPU fallback "
                               "for it was tried and did not apply: %s",
                               op->name, kd_dispatch_key_name(key), why)
                : kd_set_error(KD_ENOKERNEL,
                               "kernel '%s' has no %s kernel for dtype %s (layout %s); registered: "
                               "%s; the CPU fallback for it was tried and did not apply: %s",
                               op->name, kd_dispatch_key_name(key), kd_dtype_name(dtype),
                               kd_layout_name(layout), e->select_text, why);
    }
  } else if (none) {
    st = kd_set_error(KD_ENOKERNEL, "operator '%s' has no kernel for dispatch key %s", op->name,
                      kd_dispatch_key_name(key));
  } else {
    st = kd_set_error(KD_ENOKERNEL,
                      "kernel '%s' has no %s kernel for dtype %s (layout %s); registered: %s",
                      op->name, kd_dispatch_key_name(key), kd_dtype_name(dtype),
                      kd_layout_name(layout), e->select_text);
  }
  kd__read_exit(rd);
  return st;
}
