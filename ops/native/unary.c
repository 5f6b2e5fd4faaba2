/*
 * unary.c: the pointwise unary operators: meta functions (which build the
 * iterator, PyTorch's build_borrowing_unary_op / unary_float_op) and impls
 * (which run the unary stub, ops/cpu/unary.c). abs, logical_not and relu are
 * not structured in PyTorch 1.13; their kernels run the same iterator and
 * stub by hand. Behaviour and messages follow PyTorch 1.13.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "native/unary.h"

#include "abs_native.h"
#include "ceil_native.h"
#include "cos_native.h"
#include "erf_native.h"
#include "exp_native.h"
#include "expm1_native.h"
#include "floor_native.h"
#include "gelu_native.h"
#include "kd/ops/abs.h"
#include "kd/ops/logical_not.h"
#include "log1p_native.h"
#include "log_native.h"
#include "logical_not_native.h"
#include "neg_native.h"
#include "reciprocal_native.h"
#include "relu_native.h"
#include "round_native.h"
#include "rsqrt_native.h"
#include "sigmoid_native.h"
#include "sign_native.h"
#include "sin_native.h"
#include "sqrt_native.h"
#include "tan_native.h"
#include "tanh_native.h"
#include "trunc_native.h"

KD_DEFINE_STUB(unary_stub);

/* The kernel names, from the one list of unary loops (kdk/stubs.h). */
static const char *const kernel_names[] = {
#define KDK__UNARY_NAME(E, name, kernel, kind) [KDK_UNARY_##E] = kernel,
    KDK_UNARY_OPS(KDK__UNARY_NAME)
#undef KDK__UNARY_NAME
};
_Static_assert(sizeof kernel_names / sizeof kernel_names[0] == KDK_UNARY_OP_COUNT,
               "one kernel name per unary loop");
/* The values are the kit's ABI: rows are only appended to KDK_UNARY_OPS. */
_Static_assert(KDK_UNARY_OP_COUNT == 27 && KDK_UNARY_EXP == 11 && KDK_UNARY_LOGICAL_NOT == 26,
               "KDK_UNARY_OPS is append-only: a new row goes last");

const char *kdk__unary_kernel_name(kdk_unary_op op) {
  return (unsigned)op < KDK_UNARY_OP_COUNT ? kernel_names[op] : "unary_cpu";
}

/* Runs loop `op` (the stub checks the dtype). */
static kd_status run(kdk_iter *iter, kdk_unary_op op, const kdk_unary_extra *extra) {
  if (kdk_iter_is_meta(iter)) return KD_OK; /* no loops run on meta */
  kdk_unary_fn *fn = KD_ITER_STUB(unary_stub, iter);
  return fn ? fn(iter, op, extra) : KD_ENOKERNEL;
}

static const char *op_name(const kdk_structured *s) { return s && s->op ? s->op : "unary operator"; }

/* ---- Structured: floating operators (integers promote to the default dtype) ----- */

#define KDK__FLOAT_UNARY(name, OP)                                                        \
  kd_status kdk_meta_##name(kdk_structured *s, kdk_iter *iter, kd_tensor *self) {          \
    (void)s;                                                                             \
    return kdk_iter_build_unary_float_op(iter, NULL, self);                               \
  }                                                                                      \
  kd_status kdk_native_##name##_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self,   \
                                    kd_tensor *out) {                                    \
    (void)s, (void)self, (void)out;                                                      \
    return run(iter, OP, NULL);                                                          \
  }

/* ---- Structured: operators that keep the dtype ------------------------------------ */

/* PRE: checks on self before the iterator is built (NULL-safe: self exists). */
#define KDK__SAME_UNARY(name, OP, CHECK)                                                  \
  kd_status kdk_meta_##name(kdk_structured *s, kdk_iter *iter, kd_tensor *self) {          \
    if (self) {                                                                          \
      kd_status st_ = CHECK(s, self);                                                    \
      if (st_) return st_;                                                               \
    }                                                                                    \
    return kdk_iter_build_unary_op(iter, NULL, self);                                     \
  }                                                                                      \
  kd_status kdk_native_##name##_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self,   \
                                    kd_tensor *out) {                                    \
    (void)s, (void)self, (void)out;                                                      \
    return run(iter, OP, NULL);                                                          \
  }

/* floor, ceil, trunc, round of an integer tensor is a copy (the loops'
 * identity); bool has no loop. */
static kd_status check_round(const kdk_structured *s, const kd_tensor *self) {
  (void)s, (void)self;
  return KD_OK;
}

static kd_status check_neg(const kdk_structured *s, const kd_tensor *self) {
  if (kd_tensor_dtype(self) == KD_BOOL)
    return kd_set_error(KD_ETYPE,
                        "%s: Negation, the `-` operator, on a bool tensor is not supported. If you "
                        "are trying to invert a mask, use the `~` or `logical_not()` operator "
                        "instead.",
                        op_name(s));
  return KD_OK;
}

static kd_status check_sign(const kdk_structured *s, const kd_tensor *self) {
  if (kd_dtype_is_complex(kd_tensor_dtype(self)))
    return kd_set_error(KD_ETYPE,
                        "%s: Unlike NumPy, torch.sign is not intended to support complex numbers. "
                        "Please use torch.sgn instead.",
                        op_name(s));
  return KD_OK;
}

#define KDK__CHECK_NOT_COMPLEX(fn, what)                                                      \
  static kd_status fn(const kdk_structured *s, const kd_tensor *self) {                       \
    if (kd_dtype_is_complex(kd_tensor_dtype(self)))                                          \
      return kd_set_error(KD_ETYPE, "%s: " what " is not supported for complex inputs (got %s)", \
                          op_name(s), kd_dtype_name(kd_tensor_dtype(self)));                 \
    return KD_OK;                                                                            \
  }
KDK__CHECK_NOT_COMPLEX(check_floor, "floor")
KDK__CHECK_NOT_COMPLEX(check_ceil, "ceil")
KDK__CHECK_NOT_COMPLEX(check_trunc, "trunc")
#undef KDK__CHECK_NOT_COMPLEX

/* The structured kernels of the list's FLOAT and SAME rows. */
#define KDK__UNARY_FLOAT(name, E) KDK__FLOAT_UNARY(name, KDK_UNARY_##E)
#define KDK__UNARY_SAME(name, E) KDK__SAME_UNARY(name, KDK_UNARY_##E, check_##name)
#define KDK__UNARY_OWN(name, E)
#define KDK__UNARY_DEFINE(E, name, kernel, kind) KDK__UNARY_##kind(name, E)
KDK_UNARY_OPS(KDK__UNARY_DEFINE)
#undef KDK__UNARY_DEFINE
#undef KDK__UNARY_OWN
#undef KDK__UNARY_SAME
#undef KDK__UNARY_FLOAT
#undef KDK__SAME_UNARY
#undef KDK__FLOAT_UNARY


/* round.decimals: floating dtypes only, also for decimals == 0 (PyTorch's
 * round_decimals_out runs round_stub then, which has no integer loop). */
kd_status kdk_meta_round_decimals(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                  int64_t decimals) {
  (void)s, (void)decimals;
  return kdk_iter_build_unary_op(iter, NULL, self);
}

kd_status kdk_native_round_decimals_out(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                        int64_t decimals, kd_tensor *out) {
  (void)self, (void)out;
  kd_dtype dt = kdk_iter_input_dtype(iter, 0);
  if (!kd_dtype_is_floating(dt))
    return kd_set_error(KD_ETYPE, "%s: \"round_cpu\" not implemented for '%s'", op_name(s),
                        kd_dtype_name(dt));
  if (decimals == 0) return run(iter, KDK_UNARY_ROUND, NULL);
  kdk_unary_extra ex;
  memset(&ex, 0, sizeof ex);
  ex.neg_decimals = decimals < 0;
  /* 10^|decimals| (inf beyond 308, as std::pow) */
  double d = decimals < 0 ? -(double)decimals : (double)decimals;
  ex.ten_pow = pow(10.0, d);
  return run(iter, KDK_UNARY_ROUND_DECIMALS, &ex);
}

/* gelu: approximate is 'none' or 'tanh'. */
static kd_status gelu_kind(const kdk_structured *s, const char *approximate, bool *tanh_kind) {
  if (!approximate || !strcmp(approximate, "none")) {
    *tanh_kind = false;
    return KD_OK;
  }
  if (!strcmp(approximate, "tanh")) {
    *tanh_kind = true;
    return KD_OK;
  }
  return kd_set_error(KD_EINVAL,
                      "%s: approximate argument must be either none or tanh. (got '%s')",
                      op_name(s), approximate);
}

kd_status kdk_meta_gelu(kdk_structured *s, kdk_iter *iter, kd_tensor *self, const char *approximate) {
  bool t;
  kd_status st = gelu_kind(s, approximate, &t);
  if (st) return st;
  return kdk_iter_build_unary_op(iter, NULL, self);
}

kd_status kdk_native_gelu_out_cpu(kdk_structured *s, kdk_iter *iter, kd_tensor *self,
                                  const char *approximate, kd_tensor *out) {
  (void)self, (void)out;
  bool t;
  kd_status st = gelu_kind(s, approximate, &t);
  if (st) return st;
  return run(iter, t ? KDK_UNARY_GELU_TANH : KDK_UNARY_GELU, NULL);
}

/* ---- Not structured: abs, logical_not, relu --------------------------------------- */

/* Runs one hand-made structured call: mode, output (given or NULL), a builder
 * for the iterator, the loop. Meta tensors: build only. `take` receives a
 * functional call's output. */
typedef kd_status (*builder)(kdk_iter *it, kd_tensor *self);

static kd_status run_call(const char *op, kdk_structured_mode mode, kd_tensor *given,
                          kd_tensor *self, builder build, kdk_unary_op loop, kd_tensor **take) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL: expected a tensor", op);
  if (mode != KDK_STRUCTURED_FUNCTIONAL && !given)
    return kd_set_error(KD_EINVAL, "%s: out is NULL: expected a tensor", op);
  kd_device dev = kd_tensor_device(self);
  bool meta = dev.type == KD_DEVICE_META;
  if (meta && mode == KDK_STRUCTURED_FUNCTIONAL) mode = KDK_STRUCTURED_META;
  kdk_structured s;
  kd_tensor *g[1] = {given};
  kdk_structured_init(&s, op, mode, 1, mode == KDK_STRUCTURED_FUNCTIONAL || mode == KDK_STRUCTURED_META ? NULL : g, dev);
  kdk_iter it;
  kdk_iter_init(&it, &s);
  kd_status st = build(&it, self);
  if (!st && !kdk_iter_is_meta(&it)) st = run(&it, loop, NULL);
  if (!st) st = kdk_iter_finish(&it);
  if (!st) st = kdk_structured_finish(&s);
  kdk_iter_release(&it);
  kd_tensor *t[1] = {NULL};
  bool functional = mode == KDK_STRUCTURED_FUNCTIONAL || mode == KDK_STRUCTURED_META;
  kdk_structured_release(&s, functional && !st ? t : NULL);
  if (take) *take = t[0];
  return st;
}

static kd_status build_unary(kdk_iter *it, kd_tensor *self) {
  return kdk_iter_build_unary_op(it, NULL, self);
}

/* complex in, its real dtype out: no dtype check, no promotion. */
static kd_status build_to_real(kdk_iter *it, kd_tensor *self) {
  kdk_iter_add_output(it, NULL);
  kdk_iter_add_input(it, self);
  kdk_iter_check_all_same_dtype(it, false);
  return kdk_iter_build(it);
}

/* logical_not: any dtype in, the output's own dtype out. */
static kd_status build_any(kdk_iter *it, kd_tensor *self) {
  kdk_iter_add_output(it, NULL);
  kdk_iter_add_input(it, self);
  kdk_iter_check_all_same_dtype(it, false);
  return kdk_iter_build(it);
}

/* |self| of a complex self in its real dtype, then resized into `out` (of
 * another floating dtype) and converted, as PyTorch's
 * resize_output(result) + result.copy_(real(complex_result)). */
static kd_status abs_to_real_cast(const char *op, kd_tensor *self, kd_tensor *out) {
  kd_tensor *r = NULL;
  kd_status st = kd_tensor_empty(1, (int64_t[]){0}, kd_dtype_to_real(kd_tensor_dtype(self)),
                                 kd_tensor_device(self), &r);
  if (st) return st;
  st = run_call(op, KDK_STRUCTURED_OUT, r, self, build_to_real, KDK_UNARY_ABS_TO_REAL, NULL);
  if (!st) {
    kdk_structured s;
    kdk_structured_init(&s, op, KDK_STRUCTURED_OUT, 1, (kd_tensor *[]){out}, kd_tensor_device(out));
    st = kdk_structured_set_output(&s, 0, kd_tensor_ndim(r), kd_tensor_sizes(r), NULL,
                                  kd_tensor_dtype(out));
    if (!st) st = kd_tensor_copy_(kdk_structured_output(&s, 0), r);
    if (!st) st = kdk_structured_finish(&s);
    kdk_structured_release(&s, NULL);
  }
  kd_tensor_release(r);
  return st;
}

kd_status kdk_native_abs_out(kd_tensor *self, kd_tensor *out) {
  static const char op[] = "aten::abs.out";
  if (!self || !out)
    return kd_set_error(KD_EINVAL, "%s: %s is NULL: expected a tensor", op, self ? "out" : "self");
  kd_dtype dt = kd_tensor_dtype(self), odt = kd_tensor_dtype(out);
  if (kd_dtype_is_complex(dt) && !kd_dtype_is_complex(odt)) {
    /* PyTorch's unary_op_impl_with_complex_to_float_out: the real dtype,
     * cast to any out it can be cast to (complex64 into float64 or float16
     * too); an integral or bool out is refused. */
    kd_dtype real = kd_dtype_to_real(dt);
    if (odt == real)
      return run_call(op, KDK_STRUCTURED_OUT, out, self, build_to_real, KDK_UNARY_ABS_TO_REAL,
                      NULL);
    if (!kdk__can_cast(real, odt))
      return kd_set_error(KD_ETYPE, "%s: result type %s can't be cast to the desired output type %s",
                          op, kd_dtype_name(real), kd_dtype_name(odt));
    return abs_to_real_cast(op, self, out);
  }
  return run_call(op, KDK_STRUCTURED_OUT, out, self, build_unary, KDK_UNARY_ABS, NULL);
}

/* out = empty of dtype dt (0 elements, so the out kernel just sizes it), then
 * the out variant through the dispatcher. */
static kd_status functional_via_out(const char *op, kd_tensor *self, kd_dtype dt,
                                    kd_status (*out_fn)(kd_tensor *, kd_tensor *),
                                    kd_tensor **out) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  *out = NULL;
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL: expected a tensor", op);
  kd_tensor *r = NULL;
  kd_status st = kd_tensor_empty(1, (int64_t[]){0}, dt, kd_tensor_device(self), &r);
  if (st) return st;
  st = out_fn(self, r);
  if (st) {
    kd_tensor_release(r);
    return st;
  }
  *out = r;
  return KD_OK;
}

#define KDK__ABS_OUT kd_abs_out
#define KDK__LOGICAL_NOT_OUT kd_logical_not_out

kd_status kdk_native_abs(kd_tensor *self, kd_tensor **out) {
  kd_dtype dt = self ? kd_tensor_dtype(self) : KD_FLOAT32;
  if (kd_dtype_is_complex(dt)) dt = kd_dtype_to_real(dt);
  return functional_via_out("aten::abs", self, dt, KDK__ABS_OUT, out);
}

kd_status kdk_native_abs_(kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "aten::abs_: self is NULL: expected a tensor");
  if (kd_dtype_is_complex(kd_tensor_dtype(self)))
    return kd_set_error(KD_ETYPE, "aten::abs_: In-place abs is not supported for complex tensors.");
  return KDK__ABS_OUT(self, self);
}

kd_status kdk_native_logical_not_out(kd_tensor *self, kd_tensor *out) {
  return run_call("aten::logical_not.out", KDK_STRUCTURED_OUT, out, self, build_any,
                  KDK_UNARY_LOGICAL_NOT, NULL);
}

kd_status kdk_native_logical_not(kd_tensor *self, kd_tensor **out) {
  return functional_via_out("aten::logical_not", self, KD_BOOL, KDK__LOGICAL_NOT_OUT, out);
}

kd_status kdk_native_logical_not_(kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "aten::logical_not_: self is NULL: expected a tensor");
  return KDK__LOGICAL_NOT_OUT(self, self);
}

/* relu = clamp_min(self, 0): every real dtype but bool. */
static kd_status check_relu(const char *op, const kd_tensor *self) {
  if (!self) return kd_set_error(KD_EINVAL, "%s: self is NULL: expected a tensor", op);
  kd_dtype dt = kd_tensor_dtype(self);
  if (dt == KD_BOOL) return kd_set_error(KD_ETYPE, "%s: Boolean inputs not supported for relu", op);
  if (kd_dtype_is_complex(dt))
    return kd_set_error(KD_ETYPE, "%s: clamp is not supported for complex types (got %s)", op,
                        kd_dtype_name(dt));
  return KD_OK;
}

kd_status kdk_native_relu(kd_tensor *self, kd_tensor **out) {
  static const char op[] = "aten::relu";
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  *out = NULL;
  kd_status st = check_relu(op, self);
  if (st) return st;
  return run_call(op, KDK_STRUCTURED_FUNCTIONAL, NULL, self, build_unary, KDK_UNARY_RELU, out);
}

kd_status kdk_native_relu_(kd_tensor *self) {
  static const char op[] = "aten::relu_";
  kd_status st = check_relu(op, self);
  if (st) return st;
  return run_call(op, KDK_STRUCTURED_INPLACE, self, self, build_unary, KDK_UNARY_RELU, NULL);
}
