/*
 * gen_support.h: what the code kdgen generates calls into (docs/CODEGEN.md):
 * the operator-handle cache of entry points, the reading of boxed values into
 * kd_arg for the per-schema boxed adapters, and the moving of results
 * between kd_value and C output parameters. Private to libkdops.
 */
#ifndef KD_OPS_GEN_SUPPORT_H
#define KD_OPS_GEN_SUPPORT_H

#include "kd/dispatch.h"
#include "kd/library.h"
#include "kd/ops.h"
#include "kd/value.h"

/* How a boxed value becomes a kd_arg (one per C kind of kdgen). */
typedef enum kdk__box_kind {
  KDK__BOX_TENSOR,
  KDK__BOX_OPT_TENSOR,
  KDK__BOX_TENSOR_LIST,
  KDK__BOX_OPT_TENSOR_LIST,
  KDK__BOX_INT,
  KDK__BOX_OPT_INT,
  KDK__BOX_FLOAT,
  KDK__BOX_OPT_FLOAT,
  KDK__BOX_BOOL,
  KDK__BOX_OPT_BOOL,
  KDK__BOX_SCALAR,
  KDK__BOX_OPT_SCALAR,
  KDK__BOX_DTYPE,
  KDK__BOX_OPT_DTYPE,
  KDK__BOX_LAYOUT,
  KDK__BOX_OPT_LAYOUT,
  KDK__BOX_DEVICE,
  KDK__BOX_OPT_DEVICE,
  KDK__BOX_MF,
  KDK__BOX_OPT_MF,
  KDK__BOX_INTS,
  KDK__BOX_FLOATS,
  KDK__BOX_BOOLS,
  KDK__BOX_STR,
  KDK__BOX_OPT_STR,
  KDK__BOX_VALUE,
} kdk__box_kind;

/* Storage a boxed argument may need besides the stack value (a Scalar read
 * from an int, a one-element int list). */
typedef union kdk__box_scratch {
  kd_scalar s;
  int64_t i;
  double f;
  bool b;
} kdk__box_scratch;

/* Reads stack value v (borrowed; it stays on the stack during the call) as
 * argument `index` (`name`) of `op`. KD_ETYPE naming operator, argument and
 * both types when it does not fit. */
kd_status kdk__box_arg(const kd_value *v, kdk__box_kind kind, kd_arg *a, kdk__box_scratch *scratch,
                      const kd_call *call, int index, const char *name);

/* The boxed adapters' frame: checks the stack holds nargs values. */
kd_status kdk__box_check_depth(const kd_call *call, const kd_stack *stack, size_t nargs);

/* After a successful unboxed call: drops the nargs arguments and pushes the
 * nrets results (moved from rets). On error rets are destroyed. */
kd_status kdk__box_finish(kd_stack *stack, size_t nargs, kd_value *rets, size_t nrets);

/* Entry points: the operator's handle, looked up once (opening the library
 * first) and checked against the C signature the entry point was generated
 * with. *cache is written with release order; later calls read it. */
kd_status kdk__ops_lookup(const char *qualified, const char *signature, kd_op **cache,
                         kd_op **out);

static inline kd_op *kdk__ops_cached(kd_op **cache) {
  return __atomic_load_n(cache, __ATOMIC_ACQUIRE);
}

/* A Tensor result: moves v's tensor into *out (retaining a borrowed one).
 * KD_EINTERNAL when v is not a tensor. v is None afterwards. */
kd_status kdk__ret_tensor_slow(kd_value *v, kd_tensor **out, const char *op);
static inline kd_status kdk__ret_tensor(kd_value *v, kd_tensor **out, const char *op) {
  if (v->tag == KD_VALUE_TENSOR && !(v->flags & KD_VALUE_BORROWED)) { /* the common case */
    *out = v->u.t;
    *v = kd_value_none();
    return KD_OK;
  }
  return kdk__ret_tensor_slow(v, out, op);
}
kd_status kdk__ret_int(kd_value *v, int64_t *out, const char *op);
kd_status kdk__ret_float(kd_value *v, double *out, const char *op);
kd_status kdk__ret_bool(kd_value *v, bool *out, const char *op);
kd_status kdk__ret_scalar(kd_value *v, kd_scalar *out, const char *op);
/* A Tensor[] result: a caller-owned copy of v's list (one reference per
 * tensor) in *out; v is None afterwards. KD_EINTERNAL when v is not a tensor
 * list, KD_ENOMEM; on error *out is {NULL, 0}. */
kd_status kdk__ret_tensor_list(kd_value *v, kd_tensor_list *out, const char *op);
/* Moves a kernel's Tensor[] result into *out (a TENSOR_LIST value), leaving
 * *l {NULL, 0}; KD_ENOMEM (naming op) frees *l and leaves *out None. */
kd_status kdk__value_take_tensor_list(kd_tensor_list *l, kd_value *out, const char *op);

/* An owned tensor result put into a value without touching the count. */
static inline kd_value kdk__value_take_tensor(kd_tensor *t) {
  kd_value v = kd_value_none();
  if (t) {
    v.tag = KD_VALUE_TENSOR;
    v.u.t = t;
  }
  return v;
}

/* Drops an alias result an entry point does not return (the caller holds
 * that tensor): nothing to do when it came back borrowed, as the generated
 * kernels return it; a kernel registered by someone else may return it
 * owned. */
static inline void kdk__value_drop_alias(kd_value *v) {
  if (!(v->flags & KD_VALUE_BORROWED)) kd_value_destroy(v);
}

/* The registration tables of gen_register.c. */
typedef struct kdk__gen_def {
  const char *schema; /* without namespace */
  size_t ntags;
  const char *tags[8];
} kdk__gen_def;

typedef struct kdk__gen_impl {
  const char *op;  /* "add.Tensor" */
  const char *key; /* a dispatch key name */
  kd_unboxed_fn unboxed;
  kd_boxed_fn boxed;
  const char *signature;
  const char *debug; /* "ops/native_functions.yaml:12" */
} kdk__gen_impl;

/* Opens the library of namespace ns ("aten", kdgen --namespace; source names
 * the YAML file), defines every operator and registers every kernel; all or
 * nothing (a failure closes what was opened). */
kd_status kdk__ops_register_tables(const char *ns, const char *source, const kdk__gen_def *defs,
                                  size_t ndefs, const kdk__gen_impl *impls, size_t nimpls);
/* The same for another namespace than libkdops' own (kdgen --namespace NS
 * generates kdk__NS_register(kd_library **lib)): *out receives the open
 * library, which the caller closes (kd_library_close) to unregister all. */
kd_status kdk__ops_register_lib(const char *ns, const char *source, const kdk__gen_def *defs,
                               size_t ndefs, const kdk__gen_impl *impls, size_t nimpls,
                               kd_library **out);

/* The kernel of factories (no tensor arguments) for the slot such calls
 * reach: calls again with the backend key of argument `device_arg` (a
 * Device?; cpu when None) added to the call's keys. */
kd_status kdk__ops_backend_select(const kd_call *call, const kd_arg *args, kd_value *rets,
                                 int device_arg);

/* gen_register.c: registers every generated operator and kernel (all or
 * nothing, as kdk__ops_register_tables). */
kd_status kdk__ops_register(void);
/* Closes the aten library kdk__ops_register opened (undoes it; nothing when
 * none is open): every operator it defined keeps only its handle and name.
 * kd_ops_close (ops.c) is the public way. */
void kdk__ops_unregister(void);

/* The device of a structured call's outputs: that of the first tensor
 * argument given (NULL ones skipped), else cpu. */
kd_device kdk__device_of_first(kd_tensor *const *tensors, int n);

#endif
