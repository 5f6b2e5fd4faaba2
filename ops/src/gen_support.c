/*
 * gen_support.c: the runtime of generated code (gen_support.h).
 */
#include "gen_support.h"

#include <stdio.h>
#include <string.h>
#include "kd/memory.h"
#include "kd/tensor_head.h"

/* ---- Boxed arguments --------------------------------------------------------- */

static kd_status type_error(const kd_call *call, int index, const char *name, const char *want,
                            const kd_value *v) {
  return kd_set_error(KD_ETYPE, "%s: argument %d ('%s') expected %s but got %s",
                      kd_op_name(call->op), index, name, want, kd_value_tag_name(v->tag));
}

static bool is_none(const kd_value *v) { return v->tag == KD_VALUE_NONE; }

kd_status kdk__box_arg(const kd_value *v, kdk__box_kind kind, kd_arg *a, kdk__box_scratch *x,
                      const kd_call *call, int index, const char *name) {
  switch (kind) {
  case KDK__BOX_OPT_TENSOR:
    if (is_none(v)) {
      a->t = NULL;
      return KD_OK;
    }
    /* fall through */
  case KDK__BOX_TENSOR:
    if (v->tag != KD_VALUE_TENSOR) return type_error(call, index, name, "Tensor", v);
    a->t = v->u.t;
    return KD_OK;
  case KDK__BOX_TENSOR_LIST:
  case KDK__BOX_OPT_TENSOR_LIST:
    if (v->tag != KD_VALUE_TENSOR_LIST && v->tag != KD_VALUE_OPT_TENSOR_LIST)
      return type_error(call, index, name, "Tensor[]", v);
    a->tensors.data = kd_value_tensor_list_data(v);
    a->tensors.size = (int64_t)kd_value_list_size(v);
    return KD_OK;
  case KDK__BOX_OPT_INT:
  case KDK__BOX_OPT_FLOAT:
  case KDK__BOX_OPT_BOOL:
  case KDK__BOX_OPT_DTYPE:
  case KDK__BOX_OPT_LAYOUT:
  case KDK__BOX_OPT_DEVICE:
  case KDK__BOX_OPT_MF: {
    a->opt.has = !is_none(v);
    if (!a->opt.has) return KD_OK;
    kd_arg inner;
    kd_status st = kdk__box_arg(v, (kdk__box_kind)(kind - 1), &inner, x, call, index, name);
    if (st) return st;
    switch (kind) {
    case KDK__BOX_OPT_INT: a->opt.v.i = inner.i; break;
    case KDK__BOX_OPT_FLOAT: a->opt.v.f = inner.f; break;
    case KDK__BOX_OPT_BOOL: a->opt.v.b = inner.b; break;
    case KDK__BOX_OPT_DTYPE: a->opt.v.dtype = inner.dtype; break;
    case KDK__BOX_OPT_LAYOUT: a->opt.v.layout = inner.layout; break;
    case KDK__BOX_OPT_DEVICE: a->opt.v.device = inner.device; break;
    default: a->opt.v.mf = inner.mf; break;
    }
    return KD_OK;
  }
  case KDK__BOX_INT:
    if (v->tag != KD_VALUE_INT) return type_error(call, index, name, "int", v);
    a->i = v->u.i;
    return KD_OK;
  case KDK__BOX_FLOAT:
    if (v->tag == KD_VALUE_DOUBLE)
      a->f = v->u.d;
    else if (v->tag == KD_VALUE_INT)
      a->f = (double)v->u.i;
    else
      return type_error(call, index, name, "float", v);
    return KD_OK;
  case KDK__BOX_BOOL:
    if (v->tag != KD_VALUE_BOOL) return type_error(call, index, name, "bool", v);
    a->b = v->u.b;
    return KD_OK;
  case KDK__BOX_OPT_SCALAR:
    if (is_none(v)) {
      a->s = NULL;
      return KD_OK;
    }
    /* fall through */
  case KDK__BOX_SCALAR:
    if (kd_value_get_scalar(v, &x->s) != KD_OK) return type_error(call, index, name, "Scalar", v);
    a->s = &x->s;
    return KD_OK;
  case KDK__BOX_DTYPE:
    if (v->tag == KD_VALUE_DTYPE)
      a->dtype = v->u.dtype;
    else if (v->tag == KD_VALUE_INT && kd_dtype_valid((kd_dtype)v->u.i))
      a->dtype = (kd_dtype)v->u.i;
    else
      return type_error(call, index, name, "ScalarType", v);
    return KD_OK;
  case KDK__BOX_LAYOUT:
    if (v->tag != KD_VALUE_LAYOUT) return type_error(call, index, name, "Layout", v);
    a->layout = v->u.layout;
    return KD_OK;
  case KDK__BOX_DEVICE:
    if (v->tag != KD_VALUE_DEVICE) return type_error(call, index, name, "Device", v);
    a->device = v->u.device;
    return KD_OK;
  case KDK__BOX_MF:
    if (v->tag != KD_VALUE_MEMORY_FORMAT) return type_error(call, index, name, "MemoryFormat", v);
    a->mf = v->u.mf;
    return KD_OK;
  case KDK__BOX_INTS:
    if (is_none(v)) {
      a->ints.data = NULL;
      a->ints.size = -1;
    } else if (v->tag == KD_VALUE_INT_LIST) {
      a->ints.data = kd_value_int_list_data(v);
      a->ints.size = (int64_t)kd_value_list_size(v);
    } else if (v->tag == KD_VALUE_INT) { /* int[N] given one int */
      x->i = v->u.i;
      a->ints.data = &x->i;
      a->ints.size = 1;
    } else {
      return type_error(call, index, name, "int[]", v);
    }
    return KD_OK;
  case KDK__BOX_FLOATS:
    if (is_none(v)) {
      a->floats.data = NULL;
      a->floats.size = -1;
    } else if (v->tag == KD_VALUE_DOUBLE_LIST) {
      a->floats.data = kd_value_double_list_data(v);
      a->floats.size = (int64_t)kd_value_list_size(v);
    } else {
      return type_error(call, index, name, "float[]", v);
    }
    return KD_OK;
  case KDK__BOX_BOOLS:
    if (is_none(v)) {
      a->bools.data = NULL;
      a->bools.size = -1;
    } else if (v->tag == KD_VALUE_BOOL_LIST) {
      a->bools.data = kd_value_bool_list_data(v);
      a->bools.size = (int64_t)kd_value_list_size(v);
    } else {
      return type_error(call, index, name, "bool[]", v);
    }
    return KD_OK;
  case KDK__BOX_OPT_STR:
    if (is_none(v)) {
      a->str.data = NULL;
      a->str.size = 0;
      return KD_OK;
    }
    /* fall through */
  case KDK__BOX_STR: {
    if (v->tag != KD_VALUE_STRING) return type_error(call, index, name, "str", v);
    size_t len = 0;
    a->str.data = kd_value_string_data(v, &len);
    a->str.size = (int64_t)len;
    return KD_OK;
  }
  case KDK__BOX_VALUE: a->value = is_none(v) ? NULL : v; return KD_OK;
  }
  return kd_set_error(KD_EINTERNAL, "%s: bad boxing kind %d", kd_op_name(call->op), (int)kind);
}

kd_status kdk__box_check_depth(const kd_call *call, const kd_stack *stack, size_t nargs) {
  if (stack->size < nargs)
    return kd_set_error(KD_ESTATE, "%s: the stack holds %zu values, but the operator takes %zu",
                        kd_op_name(call->op), stack->size, nargs);
  return KD_OK;
}

kd_status kdk__box_finish(kd_stack *stack, size_t nargs, kd_value *rets, size_t nrets) {
  /* An alias result comes back borrowed (it is one of the arguments, which
   * only the stack may hold): own it before the arguments are dropped. */
  for (size_t i = 0; i < nrets; i++)
    if (rets[i].flags & KD_VALUE_BORROWED) kd_value_own(&rets[i]);
  kd_status st = kd_stack_drop(stack, nargs);
  for (size_t i = 0; i < nrets; i++) {
    if (!st) st = kd_stack_push(stack, &rets[i]);
    if (st) kd_value_destroy(&rets[i]);
  }
  return st;
}

/* ---- Entry points ------------------------------------------------------------ */

kd_status kdk__ops_lookup(const char *qualified, const char *signature, kd_op **cache,
                         kd_op **out) {
  kd_status st = kd_ops_open();
  if (st) return st;
  kd_op *op;
  if ((st = kd_op_find_typed(qualified, NULL, signature, &op))) return st;
  __atomic_store_n(cache, op, __ATOMIC_RELEASE);
  *out = op;
  return KD_OK;
}

kd_status kdk__ret_tensor_slow(kd_value *v, kd_tensor **out, const char *op) {
  if (v->tag == KD_VALUE_NONE) {
    *out = NULL;
    return KD_OK;
  }
  if (v->tag != KD_VALUE_TENSOR) {
    kd_value_tag tag = v->tag;
    kd_value_destroy(v);
    return kd_set_error(KD_EINTERNAL, "%s: the kernel returned %s where a Tensor was expected", op,
                        kd_value_tag_name(tag));
  }
  if (v->flags & KD_VALUE_BORROWED) kd_tensor_retain(v->u.t);
  *out = v->u.t;
  *v = kd_value_none();
  return KD_OK;
}

#define RET_SIMPLE(fn, ctype, getter, what)                                                  \
  kd_status fn(kd_value *v, ctype *out, const char *op) {                                   \
    kd_status st = getter(v, out);                                                          \
    kd_value_tag tag = v->tag;                                                              \
    kd_value_destroy(v);                                                                    \
    if (st)                                                                                 \
      return kd_set_error(KD_EINTERNAL, "%s: the kernel returned %s where %s was expected", \
                          op, kd_value_tag_name(tag), what);                                \
    return KD_OK;                                                                           \
  }
RET_SIMPLE(kdk__ret_int, int64_t, kd_value_get_int, "an int")
RET_SIMPLE(kdk__ret_float, double, kd_value_get_double, "a float")
RET_SIMPLE(kdk__ret_bool, bool, kd_value_get_bool, "a bool")
RET_SIMPLE(kdk__ret_scalar, kd_scalar, kd_value_get_scalar, "a Scalar")

kd_status kdk__ret_tensor_list(kd_value *v, kd_tensor_list *out, const char *op) {
  *out = (kd_tensor_list){NULL, 0};
  if (v->tag != KD_VALUE_TENSOR_LIST) {
    kd_value_tag tag = v->tag;
    kd_value_destroy(v);
    return kd_set_error(KD_EINTERNAL, "%s: the kernel returned %s where a Tensor[] was expected", op,
                        kd_value_tag_name(tag));
  }
  size_t n = kd_value_list_size(v);
  kd_tensor *const *items = kd_value_tensor_list_data(v);
  kd_tensor **data = n ? kd_host_malloc(n * sizeof *data) : NULL;
  if (n && !data) {
    kd_value_destroy(v);
    return kd_set_error(KD_ENOMEM, "%s: out of memory for a list of %zu tensors", op, n);
  }
  for (size_t i = 0; i < n; i++) {
    data[i] = items[i];
    kd_tensor_retain(data[i]);
  }
  kd_value_destroy(v);
  *out = (kd_tensor_list){data, (int64_t)n};
  return KD_OK;
}

kd_status kdk__value_take_tensor_list(kd_tensor_list *l, kd_value *out, const char *op) {
  *out = kd_value_none();
  kd_status st = kd_value_tensor_list(l->data, l->size > 0 ? (size_t)l->size : 0, out);
  kd_tensor_list_free(l);
  if (st) {
    char why[256];
    snprintf(why, sizeof why, "%s", kd_last_error());
    return kd_set_error(st, "%s: %s", op, why);
  }
  return KD_OK;
}

void kd_tensor_list_free(kd_tensor_list *list) {
  if (!list) return;
  for (int64_t i = 0; i < list->size; i++) kd_tensor_release(list->data[i]);
  kd_host_free(list->data);
  *list = (kd_tensor_list){NULL, 0};
}

/* ---- Structured calls, registration ------------------------------------------ */

kd_device kdk__device_of_first(kd_tensor *const *tensors, int n) {
  for (int i = 0; i < n; i++)
    if (tensors[i]) return kd_tensor_head_of(tensors[i])->storage->device;
  return kd_device_cpu();
}

kd_status kdk__ops_backend_select(const kd_call *call, const kd_arg *args, kd_value *rets,
                                 int device_arg) {
  kd_device dev = args[device_arg].opt.has ? args[device_arg].opt.v.device : kd_device_cpu();
  kd_dispatch_key key = kd_backend_key(dev.type);
  if (key == KD_KEY_UNDEFINED)
    return kd_set_error(KD_EINVAL, "%s: invalid device type %d", kd_op_name(call->op), (int)dev.type);
  /* Registered for Undefined, so reached only by calls whose key set names
   * no backend; a backend key already in the set would loop. */
  if (call->keys & kd_keyset_of(key))
    return kd_set_error(KD_EINTERNAL,
                        "%s: BackendSelect reached again with the '%s' key in the call's key set",
                        kd_op_name(call->op), kd_dispatch_key_name(key));
  return kd_call_unboxed_keys(call->op, call->keys | kd_keyset_of(key), args, rets);
}

static kd_library *aten_lib;

kd_status kdk__ops_register_tables(const char *ns, const char *source, const kdk__gen_def *defs,
                                  size_t ndefs, const kdk__gen_impl *impls, size_t nimpls) {
  kd_library *lib;
  kd_status st = kdk__ops_register_lib(ns, source, defs, ndefs, impls, nimpls, &lib);
  if (st) return st;
  aten_lib = lib; /* open until kdk__ops_unregister (kd_ops_close) */
  return KD_OK;
}

kd_status kdk__ops_register_lib(const char *ns, const char *source, const kdk__gen_def *defs,
                               size_t ndefs, const kdk__gen_impl *impls, size_t nimpls,
                               kd_library **out) {
  *out = NULL;
  kd_library *lib;
  kd_status st = kd_library_open(KD_LIBRARY_DEF, ns, KD_KEY_CATCH_ALL, source, 1, &lib);
  if (st) return st;
  for (size_t i = 0; i < ndefs && !st; i++)
    st = kd_library_def(lib, defs[i].schema, defs[i].ntags ? defs[i].tags : NULL, defs[i].ntags, NULL);
  for (size_t i = 0; i < nimpls && !st; i++) {
    kd_dispatch_key key;
    if ((st = kd_dispatch_key_from_name(impls[i].key, &key))) break;
    kd_kernel k = kd_kernel_unboxed(impls[i].unboxed, impls[i].signature);
    k.boxed = impls[i].boxed;
    k.debug = impls[i].debug;
    st = kd_library_impl_key(lib, impls[i].op, key, &k, NULL);
  }
  if (st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    kd_library_close(lib);
    return kd_set_error(st, "kd_ops_open: %s", msg);
  }
  *out = lib;
  return KD_OK;
}

void kdk__ops_unregister(void) {
  kd_library_close(aten_lib);
  aten_lib = NULL;
}
