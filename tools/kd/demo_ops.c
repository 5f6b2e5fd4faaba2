/*
 * demo_ops.c: a few operators built into `kd`, registered with the static
 * registration macros, so that `kd ops`, `kd dump`, `kd table` and the tour
 * have something to show before the operator library exists. They work on
 * float32 cpu tensors only.
 *
 *   demo::scale(Tensor self, float factor=2.) -> Tensor      CPU kernel, Meta kernel
 *   demo::describe(Tensor self) -> str                       CompositeImplicitAutograd,
 *                                                            and an AutogradCPU kernel that
 *                                                            goes on below it (CPU tensors
 *                                                            carry AutogradCPU)
 *   demo::neg(Tensor self) -> Tensor                         CPU kernel keys: int32, int64,
 *                                                            float32, float64
 *   demo::eq(Tensor self, Tensor other) -> Tensor            CPU kernel keys, a bool result
 *                                                            (argument definitions changed)
 *   Tracer fallback: prints each call (to kdc_tool_trace_out, stdout by
 *                    default), then redispatches
 */
#include <stdio.h>

#include "commands.h"
#include "kd/kd.h"
#if defined(KD_TOOL_HAVE_OPS)
#include "kd/ops.h"
#endif

static kd_status scale_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *self = a[0].t, *out;
  if (kd_tensor_dtype(self) != KD_FLOAT32 || !kd_tensor_is_contiguous(self))
    return kd_set_error(KD_ETYPE, "demo::scale: expected a contiguous float32 tensor, got %s",
                        kd_dtype_name(kd_tensor_dtype(self)));
  kd_status st = kd_tensor_empty(kd_tensor_ndim(self), kd_tensor_sizes(self), KD_FLOAT32,
                                 kd_tensor_device(self), &out);
  if (st) return st;
  const float *x = kd_tensor_data(self);
  float *y = kd_tensor_data(out);
  for (int64_t i = 0; i < kd_tensor_numel(self); i++) y[i] = x[i] * (float)a[1].f;
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

static kd_status scale_meta(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *out;
  kd_status st = kd_tensor_empty(kd_tensor_ndim(a[0].t), kd_tensor_sizes(a[0].t),
                                 kd_tensor_dtype(a[0].t), kd_tensor_device(a[0].t), &out);
  if (st) return st;
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

static kd_status describe(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  char buf[256];
  size_t n = kd_tensor_describe(a[0].t, buf, sizeof buf);
  return kd_value_string(buf, n < sizeof buf ? n : sizeof buf - 1, &r[0]);
}

/* The pattern of an autograd kernel (what PyTorch's VariableType kernels
 * do before their bookkeeping): run on below the autograd keys. Registered
 * at AutogradCPU it wins over the CompositeImplicitAutograd kernel for that
 * slot only; AutogradCUDA and the rest keep the composite ("math kernel"). */
static kd_status describe_autograd_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  return kd_redispatch_unboxed(c, a, r);
}

FILE *kdc_tool_trace_out = NULL;

static kd_status trace_fallback(const kd_call *c, kd_stack *s) {
  fprintf(kdc_tool_trace_out ? kdc_tool_trace_out : stdout, "   [Tracer] %s\n", kd_op_name(c->op));
  return kd_redispatch_boxed(c, s);
}

/* A type-generic kernel: one function, a switch on the dtype. */
static kd_status neg_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *self = a[0].t, *out;
  if (!kd_tensor_is_contiguous(self))
    return kd_set_error(KD_EINVAL, "demo::neg: expected a contiguous tensor");
  kd_status st = kd_tensor_empty(kd_tensor_ndim(self), kd_tensor_sizes(self), kd_tensor_dtype(self),
                                 kd_tensor_device(self), &out);
  if (st) return st;
  int64_t n = kd_tensor_numel(self);
  switch (kd_tensor_dtype(self)) {
#define NEG_CASE(DT, T)                                                                 \
  case DT:                                                                              \
    for (int64_t i = 0; i < n; i++) ((T *)kd_tensor_data(out))[i] = -((const T *)kd_tensor_data(self))[i]; \
    break;
    NEG_CASE(KD_INT32, int32_t)
    NEG_CASE(KD_INT64, int64_t)
    NEG_CASE(KD_FLOAT32, float)
    NEG_CASE(KD_FLOAT64, double)
#undef NEG_CASE
    default:
      kd_tensor_release(out);
      return kd_set_error(KD_EINTERNAL, "demo::neg: no loop for %s", kd_dtype_name(kd_tensor_dtype(self)));
  }
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

/* A comparison: `other` arrives with self's dtype (the default argument
 * definitions cast it), the result is bool (the registration says so). */
static kd_status eq_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  kd_tensor *self = a[0].t, *other = a[1].t, *out;
  int64_t n = kd_tensor_numel(self);
  if (!kd_tensor_is_contiguous(self) || !kd_tensor_is_contiguous(other) ||
      kd_tensor_numel(other) != n)
    return kd_set_error(KD_EINVAL, "demo::eq: expected contiguous tensors of the same size");
  kd_status st = kd_tensor_empty(kd_tensor_ndim(self), kd_tensor_sizes(self), KD_BOOL,
                                 kd_tensor_device(self), &out);
  if (st) return st;
  bool *y = kd_tensor_data(out);
  switch (kd_tensor_dtype(self)) {
#define EQ_CASE(DT, T)                                                                       \
  case DT:                                                                                   \
    for (int64_t i = 0; i < n; i++)                                                          \
      y[i] = ((const T *)kd_tensor_data(self))[i] == ((const T *)kd_tensor_data(other))[i]; \
    break;
    EQ_CASE(KD_INT32, int32_t)
    EQ_CASE(KD_INT64, int64_t)
    EQ_CASE(KD_FLOAT32, float)
    EQ_CASE(KD_FLOAT64, double)
#undef EQ_CASE
    default:
      kd_tensor_release(out);
      return kd_set_error(KD_EINTERNAL, "demo::eq: no loop for %s", kd_dtype_name(kd_tensor_dtype(self)));
  }
  r[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

KD_LIBRARY(demo, m) {
  kd_library_def(m, "scale(Tensor self, float factor=2.) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "describe(Tensor self) -> str", NULL, 0, NULL);
  kd_library_def(m, "neg(Tensor self) -> Tensor", NULL, 0, NULL);
  kd_library_def(m, "eq(Tensor self, Tensor other) -> Tensor", NULL, 0, NULL);
}

KD_REGISTER_KERNEL(demo, neg, CPU, KD_ALL_LAYOUT, neg_cpu, "(Tensor) -> Tensor", KD_INT32, KD_INT64,
                   KD_FLOAT32, KD_FLOAT64) {}

KD_REGISTER_KERNEL(demo, eq, CPU, KD_ALL_LAYOUT, eq_cpu, "(Tensor, Tensor) -> Tensor", KD_INT32,
                   KD_INT64, KD_FLOAT32, KD_FLOAT64) {
  kd_kernel_args_output(kernel, 0, KD_ARGDEF_DTYPE, KD_BOOL);
}

KD_LIBRARY_IMPL(demo, CPU, m) {
  kd_kernel k = kd_kernel_unboxed(scale_cpu, "(Tensor, float) -> Tensor");
  kd_library_impl(m, "scale", &k, NULL);
}

KD_LIBRARY_IMPL(demo, META, m) {
  kd_kernel k = kd_kernel_unboxed(scale_meta, "(Tensor, float) -> Tensor");
  kd_library_impl(m, "scale", &k, NULL);
}

KD_LIBRARY_IMPL(demo, COMPOSITE_IMPLICIT_AUTOGRAD, m) {
  kd_kernel k = kd_kernel_unboxed(describe, "(Tensor) -> str");
  kd_library_impl(m, "describe", &k, NULL);
}

KD_LIBRARY_IMPL(demo, AUTOGRAD_CPU, m) {
  kd_kernel k = kd_kernel_unboxed(describe_autograd_cpu, "(Tensor) -> str");
  kd_library_impl(m, "describe", &k, NULL);
}

KD_LIBRARY_IMPL(_, TRACER, m) {
  kd_kernel k = kd_kernel_boxed(trace_fallback);
  kd_library_fallback(m, &k, NULL);
}

/* Opens what kd registers: the demo libraries above (explicitly, so that a
 * static link keeps them even where the constructors were dropped) and,
 * when kd was built with libkdops, the aten operators. Returns 0, or 1 after
 * printing why to stderr. */
int kdc_tool_open(void) {
  static const kd_library_desc *const descs[] = {
      &kd_library_def_demo,         &kd_library_kernel_demo_neg_CPU,
      &kd_library_kernel_demo_eq_CPU, &kd_library_impl_demo_CPU,
      &kd_library_impl_demo_META,   &kd_library_impl_demo_COMPOSITE_IMPLICIT_AUTOGRAD,
      &kd_library_impl_demo_AUTOGRAD_CPU, &kd_library_impl___TRACER,
  };
  for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++) {
    if (kd_library_open_desc(descs[i])) {
      fprintf(stderr, "kd: cannot open a built-in library: %s\n", kd_last_error());
      return 1;
    }
  }
#if defined(KD_TOOL_HAVE_OPS)
  if (kd_ops_open()) {
    fprintf(stderr, "kd: cannot open the operator library: %s\n", kd_last_error());
    return 1;
  }
#endif
  return 0;
}
