/*
 * binary.c: meta functions, impls and composite kernels of the pointwise
 * binary operators (ops/native_functions.yaml, "-- binary"): add, sub, mul,
 * div, remainder, pow, maximum, minimum, atan2, the comparisons,
 * logical_and/or/xor, where, clamp and masked_fill (the bitwise and shift
 * operators are in bitwise.c). Loops: ops/cpu/binary.c, through the stubs of
 * binary.h.
 *
 * Meta builds the iterator as PyTorch's meta function does (binary_op,
 * binary_float_op, comparison_op, unary_op on the promoted input); impl
 * calls the stub. Scalar overloads wrap the scalar (kdk_iter_wrap_scalar) and
 * call the Tensor overload's entry point, as PyTorch's composites do.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "native/binary.h"

#include "kd/ops/add.h"
#include "kd/ops/copy.h"
#include "kd/ops/empty.h"
#include "kd/ops/div.h"
#include "kd/ops/fill.h"
#include "kd/ops/logical_and.h"
#include "kd/ops/logical_or.h"
#include "kd/ops/logical_xor.h"
#include "kd/ops/masked_fill.h"
#include "kd/ops/mul.h"
#include "kd/ops/pow.h"
#include "kd/ops/remainder.h"
#include "kd/ops/sub.h"
#include "kd/ops/where.h"

#include "add_native.h"
#include "atan2_native.h"
#include "clamp_native.h"
#include "div_native.h"
#include "eq_native.h"
#include "ge_native.h"
#include "gt_native.h"
#include "le_native.h"
#include "logical_and_native.h"
#include "logical_or_native.h"
#include "logical_xor_native.h"
#include "lt_native.h"
#include "masked_fill_native.h"
#include "maximum_native.h"
#include "minimum_native.h"
#include "mul_native.h"
#include "ne_native.h"
#include "pow_native.h"
#include "remainder_native.h"
#include "sub_native.h"
#include "where_native.h"

#define KDK__BINARY_DEFINE(name) KD_DEFINE_STUB(name);
KDK_BINARY_STUBS(KDK__BINARY_DEFINE)
#undef KDK__BINARY_DEFINE

/* Runs a binary stub's loop for the iterator's device (nothing on meta);
 * fn NULL (the device has no loop: KD_ITER_STUB set KD_ENOKERNEL with the
 * message) passes the status on. */
#define run_binary(fn_expr, iter, p0, p1) \
  (kdk_iter_is_meta(iter) ? KD_OK : run_binary_fn((fn_expr), (iter), (p0), (p1)))
static inline kd_status run_binary_fn(kdk_binary_fn *fn, kdk_iter *iter, const kd_scalar *p0,
                                      const kd_scalar *p1) {
  return fn ? fn(iter, p0, p1) : KD_ENOKERNEL;
}

/* ---- Helpers ------------------------------------------------------------------- */

static const char *op_of(const kdk_structured *s, const char *fallback) {
  return s && s->op ? s->op : fallback;
}

/* PyTorch's alpha_check, on the iterator's common dtype. */
static kd_status alpha_check(const char *op, kd_dtype dt, const kd_scalar *alpha) {
  if (!alpha) return KD_OK;
  if (alpha->kind == KD_SCALAR_BOOL && dt != KD_BOOL)
    return kd_set_error(KD_EINVAL, "%s: Boolean alpha only supported for Boolean results.", op);
  if (!kd_dtype_is_floating(dt) && !kd_dtype_is_complex(dt) &&
      (alpha->kind == KD_SCALAR_DOUBLE || alpha->kind == KD_SCALAR_COMPLEX))
    return kd_set_error(KD_EINVAL,
                        "%s: For integral input tensors, argument alpha must not be a floating "
                        "point number.",
                        op);
  if (!kd_dtype_is_complex(dt) && alpha->kind == KD_SCALAR_COMPLEX)
    return kd_set_error(KD_EINVAL,
                        "%s: For non-complex input tensors, argument alpha must not be a complex "
                        "number.",
                        op);
  return KD_OK;
}

static kd_status sub_check(const char *op, const kd_tensor *self, const kd_tensor *other) {
  bool a = kd_tensor_dtype(self) == KD_BOOL, b = kd_tensor_dtype(other) == KD_BOOL;
  if (a && b)
    return kd_set_error(KD_EINVAL,
                        "%s: Subtraction, the `-` operator, with two bool tensors is not "
                        "supported. Use the `^` or `logical_xor()` operator instead.",
                        op);
  if (a || b)
    return kd_set_error(KD_EINVAL,
                        "%s: Subtraction, the `-` operator, with a bool tensor is not supported. "
                        "If you are trying to invert a mask, use the `~` or `logical_not()` "
                        "operator instead.",
                        op);
  return KD_OK;
}

static kd_status null_check(const char *op, const kd_tensor *a, const kd_tensor *b) {
  if (!a || !b) return kd_set_error(KD_EINVAL, "%s: expected a tensor, got NULL", op);
  return KD_OK;
}

/* at::native::result_type of tensors (wrapped numbers count as scalars). */
static void rt_add(kd_result_type_state *st, const kd_tensor *t) {
  if (kd_tensor_is_wrapped_number(t))
    kd_result_type_add_scalar(st, kd_tensor_dtype(t));
  else
    kd_result_type_add_tensor(st, kd_tensor_dtype(t), kd_tensor_ndim(t));
}

/* A 0-dim tensor holding v as dtype on device (meta: no value). */
static kd_status scalar_tensor(const kd_scalar *v, kd_dtype dtype, kd_device device,
                               kd_tensor **out) {
  if (device.type == KD_DEVICE_META) return kd_tensor_empty(0, NULL, dtype, device, out);
  return kd_tensor_from_scalar(v, dtype, out);
}

static kd_scalar negate(const kd_scalar *a) {
  switch (a->kind) {
  case KD_SCALAR_INT: return kd_scalar_int((int64_t)(0u - (uint64_t)a->v.i));
  case KD_SCALAR_DOUBLE: return kd_scalar_double(-a->v.d);
  case KD_SCALAR_COMPLEX: return kd_scalar_complex(-a->v.c.re, -a->v.c.im);
  default: return kd_scalar_int(a->v.b ? -1 : 0);
  }
}

/* ---- Structured: meta and impl --------------------------------------------------- */

kd_status kdk_meta_add_Tensor(kdk_structured *s, kdk_iter *iter, kd_tensor *self, kd_tensor *other,
                              const kd_scalar *alpha) {
  kd_status st = kdk_iter_build_binary_op(iter, NULL, self, other);
  if (st) return st;
  /* an int alpha (the default 1) passes every check of alpha_check */
  if (!alpha || alpha->kind == KD_SCALAR_INT) return KD_OK;
  return alpha_check(op_of(s, "add"), kdk_iter_common_dtype(iter), alpha);
}

kd_status kdk_native_add_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                 kd_tensor *other, const kd_scalar *alpha, kd_tensor *out) {
  (void)s, (void)self, (void)other, (void)out;
  return run_binary(KD_ITER_STUB(add_stub, iter), iter, alpha, NULL);
}

kd_status kdk_meta_sub_Tensor(kdk_structured *s, kdk_iter *iter, kd_tensor *self, kd_tensor *other,
                              const kd_scalar *alpha) {
  const char *op = op_of(s, "sub");
  kd_status st = null_check(op, self, other);
  if (st || (st = sub_check(op, self, other))) return st;
  st = kdk_iter_build_binary_op(iter, NULL, self, other);
  if (st) return st;
  return alpha_check(op, kdk_iter_common_dtype(iter), alpha);
}

kd_status kdk_native_sub_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                 kd_tensor *other, const kd_scalar *alpha, kd_tensor *out) {
  (void)s, (void)self, (void)other, (void)out;
  kd_scalar one = kd_scalar_int(1);
  kd_scalar neg = negate(alpha ? alpha : &one);
  return run_binary(KD_ITER_STUB(add_stub, iter), iter, &neg, NULL);
}

/* Operators whose meta is one builder call and whose impl is one stub. */
#define KDK__BINARY_SIMPLE(meta, impl, builder, stub)                                          \
  kd_status kdk_meta_##meta(kdk_structured *s, kdk_iter *iter, kd_tensor *self,                 \
                            kd_tensor *other) {                                               \
    (void)s;                                                                                  \
    return builder(iter, NULL, self, other);                                                  \
  }                                                                                           \
  kd_status kdk_native_##impl(kdk_structured *s, kdk_iter *iter, kd_tensor *self,               \
                              kd_tensor *other, kd_tensor *out) {                             \
    (void)s, (void)self, (void)other, (void)out;                                              \
    return run_binary(KD_ITER_STUB(stub, iter), iter, NULL, NULL);                                 \
  }
KDK__BINARY_SIMPLE(mul_Tensor, mul_out_cpu, kdk_iter_build_binary_op, mul_stub)
KDK__BINARY_SIMPLE(div_Tensor, div_out_cpu, kdk_iter_build_binary_float_op, div_true_stub)
KDK__BINARY_SIMPLE(remainder_Tensor, remainder_out_cpu, kdk_iter_build_binary_op, remainder_stub)
KDK__BINARY_SIMPLE(atan2, atan2_out_cpu, kdk_iter_build_binary_float_op, atan2_stub)
KDK__BINARY_SIMPLE(pow_Tensor_Tensor, pow_Tensor_Tensor_out_cpu, kdk_iter_build_binary_op,
                  pow_tensor_tensor_stub)
KDK__BINARY_SIMPLE(eq_Tensor, eq_Tensor_out_cpu, kdk_iter_build_comparison_op, eq_stub)
KDK__BINARY_SIMPLE(ne_Tensor, ne_Tensor_out_cpu, kdk_iter_build_comparison_op, ne_stub)
KDK__BINARY_SIMPLE(lt_Tensor, lt_Tensor_out_cpu, kdk_iter_build_comparison_op, lt_stub)
KDK__BINARY_SIMPLE(le_Tensor, le_Tensor_out_cpu, kdk_iter_build_comparison_op, le_stub)
KDK__BINARY_SIMPLE(gt_Tensor, gt_Tensor_out_cpu, kdk_iter_build_comparison_op, gt_stub)
KDK__BINARY_SIMPLE(ge_Tensor, ge_Tensor_out_cpu, kdk_iter_build_comparison_op, ge_stub)

/* maximum / minimum refuse complex inputs before building. */
#define KDK__MINMAX(name, stub)                                                                 \
  kd_status kdk_meta_##name(kdk_structured *s, kdk_iter *iter, kd_tensor *self,                  \
                            kd_tensor *other) {                                                \
    kd_status st = null_check(op_of(s, #name), self, other);                                   \
    if (st) return st;                                                                         \
    if (kd_dtype_is_complex(kd_tensor_dtype(self)) || kd_dtype_is_complex(kd_tensor_dtype(other))) \
      return kd_set_error(KD_EUNSUPPORTED, "%s: " #name " not implemented for complex tensors.", \
                          op_of(s, #name));                                                    \
    return kdk_iter_build_binary_op(iter, NULL, self, other);                                   \
  }                                                                                            \
  kd_status kdk_native_##name##_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,      \
                                        kd_tensor *other, kd_tensor *out) {                    \
    (void)s, (void)self, (void)other, (void)out;                                               \
    return run_binary(KD_ITER_STUB(stub, iter), iter, NULL, NULL);                                 \
  }
KDK__MINMAX(maximum, maximum_stub)
KDK__MINMAX(minimum, minimum_stub)

/* div with rounding_mode: None is true division, "trunc" and "floor" keep
 * integer dtypes. */
static int rounding_mode_of(const char *mode) {
  if (!mode) return 0;
  if (!strcmp(mode, "trunc")) return 1;
  if (!strcmp(mode, "floor")) return 2;
  return -1;
}

kd_status kdk_meta_div_Tensor_mode(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                   kd_tensor *other, const char *rounding_mode) {
  int m = rounding_mode_of(rounding_mode);
  if (m < 0)
    return kd_set_error(KD_EINVAL,
                        "%s: div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                        "but found '%s'",
                        op_of(s, "div"), rounding_mode);
  if (m == 0) return kdk_iter_build_binary_float_op(iter, NULL, self, other);
  return kdk_iter_build_binary_op(iter, NULL, self, other);
}

kd_status kdk_native_div_out_mode_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                      kd_tensor *other, const char *rounding_mode,
                                      kd_tensor *out) {
  (void)s, (void)self, (void)other, (void)out;
  switch (rounding_mode_of(rounding_mode)) {
  case 0: return run_binary(KD_ITER_STUB(div_true_stub, iter), iter, NULL, NULL);
  case 1: return run_binary(KD_ITER_STUB(div_trunc_stub, iter), iter, NULL, NULL);
  default: return run_binary(KD_ITER_STUB(div_floor_stub, iter), iter, NULL, NULL);
  }
}

/* Comparisons with a Scalar: the comparison builder with a wrapped scalar
 * the iterator owns (PyTorch's build_borrowing_except_last_argument_comparison_op). */
static kd_status build_comparison_scalar(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                         const kd_scalar *other) {
  const char *op = op_of(s, "comparison");
  if (!self || !other) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  kd_tensor *w = NULL;
  kd_status st = kdk_iter_wrap_scalar(other, &w);
  if (st) return st;
  kdk_iter_add_output(iter, NULL);
  kdk_iter_add_input(iter, self);
  kdk_iter_add_owned_input(iter, w);
  kdk_iter_promote_inputs_to_common_dtype(iter, true);
  kd_tensor *given = s && (s->mode == KDK_STRUCTURED_OUT || s->mode == KDK_STRUCTURED_INPLACE)
                         ? s->given[0]
                         : NULL;
  if (!given)
    kdk_iter_declare_static_dtype(iter, KD_BOOL);
  else if (kd_tensor_dtype(given) != KD_BOOL)
    kdk_iter_cast_common_dtype_to_outputs(iter, true);
  return kdk_iter_build(iter);
}

#define KDK__CMP_SCALAR(name, stub)                                                             \
  kd_status kdk_meta_##name##_Scalar(kdk_structured *s, kdk_iter *iter, kd_tensor *self,         \
                                     const kd_scalar *other) {                                 \
    return build_comparison_scalar(s, iter, self, other);                                      \
  }                                                                                            \
  kd_status kdk_native_##name##_Scalar_out_cpu(kdk_structured *s, kdk_iter *iter,                \
                                               kd_tensor *self, const kd_scalar *other,        \
                                               kd_tensor *out) {                               \
    (void)s, (void)self, (void)other, (void)out;                                               \
    return run_binary(KD_ITER_STUB(stub, iter), iter, NULL, NULL);                                 \
  }
KDK__CMP_SCALAR(eq, eq_stub)
KDK__CMP_SCALAR(ne, ne_stub)
KDK__CMP_SCALAR(lt, lt_stub)
KDK__CMP_SCALAR(le, le_stub)
KDK__CMP_SCALAR(gt, gt_stub)
KDK__CMP_SCALAR(ge, ge_stub)

/* A unary iterator over self converted to `dtype` (PyTorch's
 * build_unary_op(out, self.to(dtype))): the iterator converts the input; a
 * given output (out=, or self in place) must have `dtype` already, as
 * build_unary_op's check_all_same_dtype demands: nothing is cast to it. */
static kd_status build_unary_as(kdk_iter *iter, kd_tensor *self, kd_dtype dtype) {
  kdk_structured *s = iter->s;
  if (s && (s->mode == KDK_STRUCTURED_OUT || s->mode == KDK_STRUCTURED_INPLACE) && s->given[0] &&
      kd_tensor_dtype(s->given[0]) != dtype)
    return kd_set_error(KD_ETYPE, "%s: Found dtype %s but expected %s", op_of(s, "unary operator"),
                        kd_dtype_name(kd_tensor_dtype(s->given[0])), kd_dtype_name(dtype));
  kdk_iter_add_output(iter, NULL);
  kdk_iter_add_input(iter, self);
  kdk_iter_set_common_dtype(iter, dtype);
  kdk_iter_promote_inputs_to_common_dtype(iter, true);
  return kdk_iter_build(iter);
}

static bool scalar_is_integral(const kd_scalar *v) {
  return v->kind == KD_SCALAR_INT || v->kind == KD_SCALAR_BOOL;
}

kd_status kdk_meta_pow_Tensor_Scalar(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                     const kd_scalar *exponent) {
  const char *op = op_of(s, "pow");
  if (!self || !exponent) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  if (kd_dtype_is_integral(kd_tensor_dtype(self), true) && scalar_is_integral(exponent) &&
      kd_scalar_to_int64(exponent) < 0)
    return kd_set_error(KD_EINVAL, "%s: Integers to negative integer powers are not allowed.", op);
  kd_result_type_state rt;
  kd_result_type_init(&rt);
  rt_add(&rt, self);
  kd_result_type_add_scalar(&rt, kd_scalar_dtype(exponent));
  return build_unary_as(iter, self, kd_result_type_finish(&rt));
}

static bool scalar_equals(const kd_scalar *v, double x) {
  switch (v->kind) {
  case KD_SCALAR_INT: return (double)v->v.i == x;
  case KD_SCALAR_DOUBLE: return v->v.d == x;
  case KD_SCALAR_COMPLEX: return v->v.c.re == x && v->v.c.im == 0;
  default: return false;
  }
}

kd_status kdk_native_pow_Tensor_Scalar_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                               const kd_scalar *exponent, kd_tensor *out) {
  (void)s;
  if (scalar_equals(exponent, 0.0) || (exponent->kind == KD_SCALAR_BOOL && !exponent->v.b)) {
    kd_scalar one = kd_scalar_int(1);
    return kd_fill_Scalar_(out, &one);
  }
  if (scalar_equals(exponent, 1.0) || (exponent->kind == KD_SCALAR_BOOL && exponent->v.b))
    return kd_tensor_copy_(out, self);
  return run_binary(KD_ITER_STUB(pow_tensor_scalar_stub, iter), iter, exponent, NULL);
}

kd_status kdk_meta_pow_Scalar(kdk_structured *s, const kd_scalar *self, kd_tensor *exponent) {
  if (!self || !exponent) return kd_set_error(KD_EINVAL, "%s: NULL argument", op_of(s, "pow"));
  kd_dtype dt;
  if (s->mode == KDK_STRUCTURED_OUT && s->given[0]) {
    dt = kd_tensor_dtype(s->given[0]);
  } else {
    kd_result_type_state rt;
    kd_result_type_init(&rt);
    rt_add(&rt, exponent);
    kd_result_type_add_scalar(&rt, kd_scalar_dtype(self));
    dt = kd_result_type_finish(&rt);
  }
  return kdk_structured_set_output(s, 0, kd_tensor_ndim(exponent), kd_tensor_sizes(exponent), NULL,
                                  dt);
}

kd_status kdk_native_pow_Scalar_out_cpu(kdk_structured *s, const kd_scalar *self,
                                        kd_tensor *exponent, kd_tensor *out) {
  (void)s;
  if (scalar_equals(self, 1.0)) {
    kd_scalar one = kd_scalar_int(1);
    return kd_fill_Scalar_(out, &one);
  }
  kd_tensor *w = NULL;
  kd_status st = kdk_iter_wrap_scalar(self, &w);
  if (st) return st;
  st = kd_pow_Tensor_Tensor_out(w, exponent, out);
  kd_tensor_release(w);
  return st;
}

/* clamp with Scalar bounds: manual promotion (the bounds take part as
 * scalars) for non-floating self, then a unary iterator. */
kd_status kdk_meta_clamp(kdk_structured *s, kdk_iter *iter, kd_tensor *self, const kd_scalar *min,
                         const kd_scalar *max) {
  const char *op = op_of(s, "clamp");
  if (!self) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  if (!min && !max)
    return kd_set_error(KD_EINVAL, "%s: torch.clamp: At least one of 'min' or 'max' must not be None",
                        op);
  kd_dtype dt = kd_tensor_dtype(self);
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_EUNSUPPORTED, "%s: clamp is not supported for complex types", op);
  if (!kd_dtype_is_floating(dt)) {
    kd_result_type_state rt;
    kd_result_type_init(&rt);
    rt_add(&rt, self);
    if (min) kd_result_type_add_scalar(&rt, kd_scalar_dtype(min));
    if (max) kd_result_type_add_scalar(&rt, kd_scalar_dtype(max));
    kd_dtype r = kd_result_type_finish(&rt);
    if (r != dt && s && s->mode == KDK_STRUCTURED_INPLACE)
      return kd_set_error(KD_ETYPE, "%s: result type %s can't be cast to the desired output type %s",
                          op, kd_dtype_name(r), kd_dtype_name(dt));
    dt = r;
  }
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_EUNSUPPORTED, "%s: clamp is not supported for complex types", op);
  return build_unary_as(iter, self, dt);
}

kd_status kdk_native_clamp_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                   const kd_scalar *min, const kd_scalar *max, kd_tensor *out) {
  (void)s, (void)self;
  if (min && max) {
    double lo = kd_scalar_to_double(min), hi = kd_scalar_to_double(max);
    if (lo != lo || hi != hi) {
      kd_scalar nan = kd_scalar_double(NAN);
      return kd_fill_Scalar_(out, &nan);
    }
  }
  return run_binary(KD_ITER_STUB(clamp_scalar_stub, iter), iter, min, max);
}

kd_status kdk_meta_clamp_Tensor(kdk_structured *s, kdk_iter *iter, kd_tensor *self, kd_tensor *min,
                                kd_tensor *max) {
  const char *op = op_of(s, "clamp");
  if (!self) return kd_set_error(KD_EINVAL, "%s: NULL argument", op);
  if (!min && !max)
    return kd_set_error(KD_EINVAL, "%s: torch.clamp: At least one of 'min' or 'max' must not be None",
                        op);
  if (kd_dtype_is_complex(kd_tensor_dtype(self)))
    return kd_set_error(KD_EUNSUPPORTED, "%s: clamp is not supported for complex types", op);
  kdk_iter_add_output(iter, NULL);
  kdk_iter_add_input(iter, self);
  if (min) kdk_iter_add_input(iter, min);
  if (max) kdk_iter_add_input(iter, max);
  kdk_iter_promote_inputs_to_common_dtype(iter, true);
  kdk_iter_cast_common_dtype_to_outputs(iter, true);
  kdk_iter_enforce_safe_casting_to_output(iter, true);
  return kdk_iter_build(iter);
}

kd_status kdk_native_clamp_Tensor_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                          kd_tensor *min, kd_tensor *max, kd_tensor *out) {
  (void)s, (void)self, (void)out;
  if (min && max) return run_binary(KD_ITER_STUB(clamp_tensor_stub, iter), iter, NULL, NULL);
  if (min) return run_binary(KD_ITER_STUB(maximum_stub, iter), iter, NULL, NULL);
  return run_binary(KD_ITER_STUB(minimum_stub, iter), iter, NULL, NULL);
}

/* ---- Composite Scalar overloads ---------------------------------------------------- */

kd_status kdk_native_add_Scalar(kd_tensor *self, const kd_scalar *other, const kd_scalar *alpha,
                                kd_tensor **out) {
  KDK__WITH_WRAPPED(other, kd_add_Tensor(self, w, alpha, out));
}
kd_status kdk_native_add_Scalar_(kd_tensor *self, const kd_scalar *other, const kd_scalar *alpha) {
  KDK__WITH_WRAPPED(other, kd_add_Tensor_(self, w, alpha));
}
kd_status kdk_native_sub_Scalar(kd_tensor *self, const kd_scalar *other, const kd_scalar *alpha,
                                kd_tensor **out) {
  KDK__WITH_WRAPPED(other, kd_sub_Tensor(self, w, alpha, out));
}
kd_status kdk_native_sub_Scalar_(kd_tensor *self, const kd_scalar *other, const kd_scalar *alpha) {
  KDK__WITH_WRAPPED(other, kd_sub_Tensor_(self, w, alpha));
}
kd_status kdk_native_mul_Scalar(kd_tensor *self, const kd_scalar *other, kd_tensor **out) {
  KDK__WITH_WRAPPED(other, kd_mul_Tensor(self, w, out));
}
kd_status kdk_native_mul_Scalar_(kd_tensor *self, const kd_scalar *other) {
  KDK__WITH_WRAPPED(other, kd_mul_Tensor_(self, w));
}
kd_status kdk_native_div_Scalar(kd_tensor *self, const kd_scalar *other, kd_tensor **out) {
  KDK__WITH_WRAPPED(other, kd_div_Tensor(self, w, out));
}
kd_status kdk_native_div_Scalar_(kd_tensor *self, const kd_scalar *other) {
  KDK__WITH_WRAPPED(other, kd_div_Tensor_(self, w));
}
kd_status kdk_native_div_Scalar_mode(kd_tensor *self, const kd_scalar *other,
                                     const char *rounding_mode, kd_tensor **out) {
  KDK__WITH_WRAPPED(other, kd_div_Tensor_mode(self, w, rounding_mode, out));
}
kd_status kdk_native_div_Scalar_mode_(kd_tensor *self, const kd_scalar *other,
                                      const char *rounding_mode) {
  KDK__WITH_WRAPPED(other, kd_div_Tensor_mode_(self, w, rounding_mode));
}
kd_status kdk_native_remainder_Scalar_out(kd_tensor *self, const kd_scalar *other, kd_tensor *out) {
  KDK__WITH_WRAPPED(other, kd_remainder_Tensor_out(self, w, out));
}
kd_status kdk_native_remainder_Scalar(kd_tensor *self, const kd_scalar *other, kd_tensor **out) {
  KDK__WITH_WRAPPED(other, kd_remainder_Tensor(self, w, out));
}
kd_status kdk_native_remainder_Scalar_(kd_tensor *self, const kd_scalar *other) {
  KDK__WITH_WRAPPED(other, kd_remainder_Tensor_(self, w));
}
kd_status kdk_native_remainder_Scalar_Tensor(const kd_scalar *self, kd_tensor *other,
                                             kd_tensor **out) {
  KDK__WITH_WRAPPED(self, kd_remainder_Tensor(w, other, out));
}

/* ---- logical_and / or / xor (not structured, as in PyTorch) ------------------------- */

#define KDK__LOGICAL(n, stub)                                                                   \
  kd_status kdk_native_##n##_out(kd_tensor *self, kd_tensor *other, kd_tensor *out) {          \
    kd_status st = null_check(#n ".out", self, other);                                         \
    if (st || (st = null_check(#n ".out", out, out))) return st;                               \
    kdk_iter it;                                                                                \
    kdk_iter_init(&it, NULL);                                                                   \
    kdk_iter_set_op_name(&it, "aten::" #n ".out");                                              \
    st = kdk_iter_build_comparison_op(&it, out, self, other);                                   \
    if (!st && !kdk_iter_is_meta(&it))                                                          \
      st = run_binary(KD_ITER_STUB(stub, &it), &it, NULL, NULL);                                \
    if (!st) st = kdk_iter_finish(&it);                                                         \
    kdk_iter_release(&it);                                                                      \
    return st;                                                                                 \
  }                                                                                            \
  kd_status kdk_native_##n(kd_tensor *self, kd_tensor *other, kd_tensor **out) {               \
    kd_status st = null_check(#n, self, other);                                                \
    if (st) return st;                                                                         \
    kd_tensor *r = NULL;                                                                       \
    int64_t zero = 0;                                                                          \
    st = kd_tensor_empty(1, &zero, KD_BOOL, kd_tensor_device(self), &r);                       \
    if (!st) st = kd_##n##_out(self, other, r);                                                \
    if (st) {                                                                                  \
      kd_tensor_release(r);                                                                    \
      return st;                                                                               \
    }                                                                                          \
    *out = r;                                                                                  \
    return KD_OK;                                                                              \
  }                                                                                            \
  kd_status kdk_native_##n##_(kd_tensor *self, kd_tensor *other) {                             \
    kd_status st = null_check(#n "_", self, other);                                            \
    if (st) return st;                                                                         \
    return kd_##n##_out(self, other, self);                                                    \
  }
KDK__LOGICAL(logical_and, logical_and_stub)
KDK__LOGICAL(logical_or, logical_or_stub)
KDK__LOGICAL(logical_xor, logical_xor_stub)

/* ---- where ---------------------------------------------------------------------------- */

kd_status kdk_native_where_self_out(kd_tensor *condition, kd_tensor *self, kd_tensor *other,
                                    kd_tensor *out) {
  const char *op = "aten::where.self_out";
  kd_status st = null_check(op, condition, self);
  if (st || (st = null_check(op, other, out))) return st;
  kd_result_type_state rt;
  kd_result_type_init(&rt);
  rt_add(&rt, self);
  rt_add(&rt, other);
  kd_dtype dt = kd_result_type_finish(&rt);
  if (kd_tensor_dtype(out) != dt)
    return kd_set_error(KD_ETYPE, "%s: Expected out type to be %s but got %s", op,
                        kd_dtype_name(dt), kd_dtype_name(kd_tensor_dtype(out)));
  kd_dtype cdt = kd_tensor_dtype(condition);
  if (cdt == KD_UINT8) {
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&warned))
      kd_warn("where received a uint8 condition tensor. This behavior is deprecated and will be "
              "removed in a future version of PyTorch. Use a boolean condition instead.");
  } else if (cdt != KD_BOOL) {
    return kd_set_error(KD_ETYPE,
                        "%s: where expected condition to be a boolean tensor, but got a tensor "
                        "with dtype %s",
                        op, kd_dtype_name(cdt));
  }
  kd_tensor *conv[3] = {NULL, NULL, NULL};
  kd_tensor *src[3] = {condition, self, other};
  kd_dtype want[3] = {KD_BOOL, dt, dt};
  for (int i = 0; i < 3 && !st; i++)
    if (kd_tensor_dtype(src[i]) != want[i]) st = kd_tensor_to_dtype(src[i], want[i], &conv[i]);
  if (st) {
    for (int i = 0; i < 3; i++) kd_tensor_release(conv[i]);
    return st;
  }
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  kdk_iter_set_op_name(&it, op);
  kdk_iter_check_all_same_dtype(&it, false);
  kdk_iter_add_output(&it, out);
  for (int i = 0; i < 3; i++) {
    if (conv[i])
      kdk_iter_add_owned_input(&it, conv[i]);
    else
      kdk_iter_add_input(&it, src[i]);
  }
  st = kdk_iter_build(&it);
  if (!st && !kdk_iter_is_meta(&it))
    st = run_binary(KD_ITER_STUB(where_stub, &it), &it, NULL, NULL);
  if (!st) st = kdk_iter_finish(&it);
  kdk_iter_release(&it);
  return st;
}

kd_status kdk_native_where_self(kd_tensor *condition, kd_tensor *self, kd_tensor *other,
                                kd_tensor **out) {
  kd_status st = null_check("aten::where.self", condition, self);
  if (st || (st = null_check("aten::where.self", other, other))) return st;
  kd_result_type_state rt;
  kd_result_type_init(&rt);
  rt_add(&rt, self);
  rt_add(&rt, other);
  kd_tensor *r = NULL;
  int64_t zero = 0;
  st = kd_tensor_empty(1, &zero, kd_result_type_finish(&rt), kd_tensor_device(self), &r);
  if (!st) st = kd_where_self_out(condition, self, other, r);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

/* where with scalars: the scalars become 0-dim tensors of the result type
 * (not wrapped numbers), as in PyTorch. */
static kd_status where_scalars(kd_tensor *condition, const kd_scalar *a, kd_tensor *ta,
                               const kd_scalar *b, kd_tensor *tb, kd_tensor **out) {
  if (!condition || (!a && !ta) || (!b && !tb))
    return kd_set_error(KD_EINVAL, "aten::where: NULL argument");
  kd_result_type_state rt;
  kd_result_type_init(&rt);
  if (ta) rt_add(&rt, ta); else kd_result_type_add_scalar(&rt, kd_scalar_dtype(a));
  if (tb) rt_add(&rt, tb); else kd_result_type_add_scalar(&rt, kd_scalar_dtype(b));
  kd_dtype dt = kd_result_type_finish(&rt);
  kd_device dev = kd_tensor_device(ta ? ta : tb ? tb : condition);
  kd_tensor *x = NULL, *y = NULL;
  kd_status st = ta ? kd_tensor_to_dtype(ta, dt, &x) : scalar_tensor(a, dt, dev, &x);
  if (!st) st = tb ? kd_tensor_to_dtype(tb, dt, &y) : scalar_tensor(b, dt, dev, &y);
  if (!st) st = kd_where_self(condition, x, y, out);
  kd_tensor_release(x);
  kd_tensor_release(y);
  return st;
}

kd_status kdk_native_where_ScalarSelf(kd_tensor *condition, const kd_scalar *self,
                                      kd_tensor *other, kd_tensor **out) {
  return where_scalars(condition, self, NULL, NULL, other, out);
}
kd_status kdk_native_where_ScalarOther(kd_tensor *condition, kd_tensor *self,
                                       const kd_scalar *other, kd_tensor **out) {
  return where_scalars(condition, NULL, self, other, NULL, out);
}
kd_status kdk_native_where_Scalar(kd_tensor *condition, const kd_scalar *self,
                                  const kd_scalar *other, kd_tensor **out) {
  return where_scalars(condition, self, NULL, other, NULL, out);
}

/* ---- masked_fill ------------------------------------------------------------------------ */

static kd_status masked_fill_impl(kd_tensor *self, kd_tensor *mask, const kd_scalar *value) {
  const char *op = "aten::masked_fill_";
  kd_dtype mdt = kd_tensor_dtype(mask);
  kd_tensor *bmask = NULL;
  if (mdt == KD_UINT8) {
    /* PyTorch 1.13 still takes a uint8 mask (non-zero is true), with this
     * deprecation warning; the loops read a bool mask, so convert it. */
    kd_warn("%s: masked_fill_ received a mask with dtype uint8, this behavior is now deprecated, "
            "please use a mask with dtype bool instead.",
            op);
    kd_status cs = kd_tensor_to_dtype(mask, KD_BOOL, &bmask);
    if (cs) return cs;
    mask = bmask;
  } else if (mdt != KD_BOOL) {
    return kd_set_error(KD_ETYPE,
                        "%s: masked_fill_ only supports boolean masks, but got mask with dtype %s",
                        op, kd_dtype_name(mdt));
  }
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  kdk_iter_set_op_name(&it, op);
  kdk_iter_check_mem_overlap(&it, false);
  kdk_iter_check_all_same_dtype(&it, false);
  kdk_iter_resize_outputs(&it, false);
  kdk_iter_add_output(&it, self);
  kdk_iter_add_input(&it, mask);
  kd_status st = kdk_iter_build(&it);
  if (!st && !kdk_iter_is_meta(&it))
    st = run_binary(KD_ITER_STUB(masked_fill_stub, &it), &it, value, NULL);
  if (!st) st = kdk_iter_finish(&it);
  kdk_iter_release(&it);
  kd_tensor_release(bmask);
  return st;
}

kd_status kdk_native_masked_fill_Scalar_cpu_(kd_tensor *self, kd_tensor *mask,
                                             const kd_scalar *value) {
  kd_status st = null_check("aten::masked_fill_.Scalar", self, mask);
  if (st) return st;
  if (!value) return kd_set_error(KD_EINVAL, "aten::masked_fill_.Scalar: NULL value");
  return masked_fill_impl(self, mask, value);
}

kd_status kdk_native_masked_fill_Tensor_cpu_(kd_tensor *self, kd_tensor *mask, kd_tensor *value) {
  kd_status st = null_check("aten::masked_fill_.Tensor", self, mask);
  if (st || (st = null_check("aten::masked_fill_.Tensor", value, value))) return st;
  if (kd_tensor_ndim(value) != 0)
    return kd_set_error(KD_EINVAL,
                        "aten::masked_fill_.Tensor: masked_fill_ only supports a 0-dimensional "
                        "value tensor, but got tensor with %d dimension(s).",
                        kd_tensor_ndim(value));
  kd_scalar v = kd_scalar_int(0);
  if (kd_tensor_device(value).type != KD_DEVICE_META &&
      kd_tensor_device(self).type != KD_DEVICE_META) {
    st = kd_tensor_item(value, &v);
    if (st) return st;
  }
  return masked_fill_impl(self, mask, &v);
}

/* masked_fill: self expanded to the broadcast shape of (mask, self), copied,
 * then filled in place. */
static kd_status masked_fill_functional(kd_tensor *self, kd_tensor *mask, const kd_scalar *sv,
                                        kd_tensor *tv, kd_tensor **out) {
  const char *op = "aten::masked_fill";
  kd_status st = null_check(op, self, mask);
  if (st) return st;
  int na = kd_tensor_ndim(mask), nb = kd_tensor_ndim(self);
  int n = na > nb ? na : nb;
  int64_t shape[KD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t a = ia >= 0 ? kd_tensor_sizes(mask)[ia] : 1, b = ib >= 0 ? kd_tensor_sizes(self)[ib] : 1;
    if (a != b && a != 1 && b != 1)
      return kd_set_error(KD_EINVAL,
                          "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) "
                          "at non-singleton dimension %d",
                          op, (long long)a, (long long)b, i);
    shape[i] = a == 1 ? b : a;
  }
  kd_tensor *r = NULL;
  kd_device dev = kd_tensor_device(self);
  if (dev.type == KD_DEVICE_CPU || dev.type == KD_DEVICE_META) {
    st = kd_tensor_empty(n, shape, kd_tensor_dtype(self), dev, &r);
    if (!st) st = kd_tensor_copy_(r, self);
  } else { /* another device: the dispatched primitives (docs/OPS.md) */
    kd_dtype dt = kd_tensor_dtype(self);
    st = kd_empty_memory_format((kd_ints){shape, n}, &dt, NULL, &dev, NULL, NULL, &r);
    if (!st) st = kd_copy_(r, self, false);
  }
  if (!st) st = sv ? kd_masked_fill_Scalar_(r, mask, sv) : kd_masked_fill_Tensor_(r, mask, tv);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

kd_status kdk_native_masked_fill_Scalar(kd_tensor *self, kd_tensor *mask, const kd_scalar *value,
                                        kd_tensor **out) {
  if (!value) return kd_set_error(KD_EINVAL, "aten::masked_fill.Scalar: NULL value");
  return masked_fill_functional(self, mask, value, NULL, out);
}

kd_status kdk_native_masked_fill_Tensor(kd_tensor *self, kd_tensor *mask, kd_tensor *value,
                                        kd_tensor **out) {
  if (!value) return kd_set_error(KD_EINVAL, "aten::masked_fill.Tensor: NULL value");
  return masked_fill_functional(self, mask, NULL, value, out);
}
