/*
 * ops.c: an operator library of twenty operators in the namespace `sel`, the
 * subject of the selective-build example (examples/selective/main.c). Every
 * kernel is type-generic, registered with KD_REGISTER_KERNEL for several
 * dtypes, and guards each dtype's loop with KD_KERNEL_DTYPE_SELECTED, so
 * that a selective build (this file compiled with -include allow.h, the
 * allow-list `kd trace` writes) keeps only the operators and dtypes that
 * were listed: the others register nothing and their code is left out.
 *
 *   elementwise, any of int32 int64 float32 float64:   neg abs square relu
 *   elementwise, float32 float64:   exp log sqrt sin cos tanh sigmoid
 *   binary, same shape and dtype, int32 int64 float32 float64:
 *                                   add sub mul div maximum minimum
 *   reductions to a 0-dim tensor:   sum amax (int32 int64 float32 float64)
 *                                   mean (float32 float64)
 *
 * Kernels take contiguous CPU tensors (a non-contiguous one is KD_EINVAL).
 * The program links this file from a static archive, so it names the DEF
 * library's descriptor with KD_USE_LIBRARY (see main.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "kd/kd.h"

/* ---- Shared helpers -------------------------------------------------------- */

/* A new tensor shaped as `like` (contiguous, on its device). */
static kd_status new_like(const char *op, const kd_tensor *like, int ndim, kd_tensor **out) {
  if (!kd_tensor_is_contiguous(like))
    return kd_set_error(KD_EINVAL, "sel::%s: expected a contiguous tensor", op);
  return kd_tensor_empty(ndim, ndim ? kd_tensor_sizes(like) : NULL, kd_tensor_dtype(like),
                         kd_tensor_device(like), out);
}

/* The result, or the error of a dtype this build has no loop for. */
static kd_status finish(const char *op, kd_tensor *out, bool done, kd_value *rets) {
  if (!done) {
    kd_dtype dt = kd_tensor_dtype(out);
    kd_tensor_release(out);
    return kd_set_error(KD_ENOKERNEL, "sel::%s: no loop for dtype %s in this build", op,
                        kd_dtype_name(dt));
  }
  rets[0] = kd_value_tensor(out);
  kd_tensor_release(out);
  return KD_OK;
}

static kd_status same_shape(const char *op, const kd_tensor *a, const kd_tensor *b) {
  if (kd_tensor_dtype(a) != kd_tensor_dtype(b))
    return kd_set_error(KD_ETYPE, "sel::%s: dtypes differ (%s and %s)", op,
                        kd_dtype_name(kd_tensor_dtype(a)), kd_dtype_name(kd_tensor_dtype(b)));
  if (kd_tensor_ndim(a) != kd_tensor_ndim(b) || kd_tensor_numel(a) != kd_tensor_numel(b) ||
      !kd_tensor_is_contiguous(b))
    return kd_set_error(KD_EINVAL, "sel::%s: expected contiguous tensors of one shape", op);
  for (int d = 0; d < kd_tensor_ndim(a); d++)
    if (kd_tensor_size(a, d) != kd_tensor_size(b, d))
      return kd_set_error(KD_EINVAL, "sel::%s: sizes differ in dimension %d", op, d);
  return KD_OK;
}

/* One dtype's case of a kernel's switch: the loop runs only when the build
 * keeps that dtype of the operator (a constant, so the compiler drops it). */
#define SEL_CASE(op, DT, LOOP)                                    \
  case DT:                                                        \
    if (KD_KERNEL_DTYPE_SELECTED(sel, op, CPU, DT)) {             \
      LOOP;                                                       \
      done = true;                                                \
    }                                                             \
    break;

/* ---- Elementwise ----------------------------------------------------------- */

#define SEL_MAP(T, EXPR)                                           \
  do {                                                             \
    const T *x_ = kd_tensor_data(self);                            \
    T *y_ = kd_tensor_data(out);                                   \
    for (int64_t i_ = 0; i_ < n; i_++) {                           \
      T v = x_[i_];                                                \
      y_[i_] = (T)(EXPR);                                          \
    }                                                              \
  } while (0)

#define SEL_UNARY_HEAD(op)                                                         \
  static kd_status sel_##op##_cpu(const kd_call *c, const kd_arg *a, kd_value *r) { \
    (void)c;                                                                       \
    kd_tensor *self = a[0].t, *out;                                                \
    kd_status st = new_like(#op, self, kd_tensor_ndim(self), &out);                \
    if (st) return st;                                                             \
    int64_t n = kd_tensor_numel(self);                                             \
    bool done = false;                                                             \
    switch (kd_tensor_dtype(self)) {

#define SEL_TAIL(op)              \
      default:                    \
        break;                    \
    }                             \
    return finish(#op, out, done, r); \
  }

/* An elementwise operator of int32, int64, float32, float64: EXPR of v. */
#define SEL_UNARY_ANY(op, EXPR)                                                    \
  SEL_UNARY_HEAD(op)                                                               \
  SEL_CASE(op, KD_INT32, SEL_MAP(int32_t, EXPR))                                   \
  SEL_CASE(op, KD_INT64, SEL_MAP(int64_t, EXPR))                                   \
  SEL_CASE(op, KD_FLOAT32, SEL_MAP(float, EXPR))                                   \
  SEL_CASE(op, KD_FLOAT64, SEL_MAP(double, EXPR))                                  \
  SEL_TAIL(op)                                                                     \
  KD_REGISTER_KERNEL(sel, op, CPU, KD_ALL_LAYOUT, sel_##op##_cpu, "(Tensor) -> Tensor", \
                     KD_INT32, KD_INT64, KD_FLOAT32, KD_FLOAT64) {}

/* An elementwise operator of float32 and float64: FEXPR (float) or DEXPR. */
#define SEL_UNARY_FLOAT(op, FEXPR, DEXPR)                                          \
  SEL_UNARY_HEAD(op)                                                               \
  SEL_CASE(op, KD_FLOAT32, SEL_MAP(float, FEXPR))                                  \
  SEL_CASE(op, KD_FLOAT64, SEL_MAP(double, DEXPR))                                 \
  SEL_TAIL(op)                                                                     \
  KD_REGISTER_KERNEL(sel, op, CPU, KD_ALL_LAYOUT, sel_##op##_cpu, "(Tensor) -> Tensor", \
                     KD_FLOAT32, KD_FLOAT64) {}

SEL_UNARY_ANY(neg, -v)
SEL_UNARY_ANY(abs, v < 0 ? -v : v)
SEL_UNARY_ANY(square, v * v)
SEL_UNARY_ANY(relu, v > 0 ? v : 0)

SEL_UNARY_FLOAT(exp, expf(v), exp(v))
SEL_UNARY_FLOAT(log, logf(v), log(v))
SEL_UNARY_FLOAT(sqrt, sqrtf(v), sqrt(v))
SEL_UNARY_FLOAT(sin, sinf(v), sin(v))
SEL_UNARY_FLOAT(cos, cosf(v), cos(v))
SEL_UNARY_FLOAT(tanh, tanhf(v), tanh(v))
SEL_UNARY_FLOAT(sigmoid, 1.0f / (1.0f + expf(-v)), 1.0 / (1.0 + exp(-v)))

/* ---- Binary ---------------------------------------------------------------- */

#define SEL_ZIP(T, EXPR)                                           \
  do {                                                             \
    const T *x_ = kd_tensor_data(self), *w_ = kd_tensor_data(other); \
    T *y_ = kd_tensor_data(out);                                   \
    for (int64_t i_ = 0; i_ < n; i_++) {                           \
      T u = x_[i_], v = w_[i_];                                    \
      y_[i_] = (T)(EXPR);                                          \
    }                                                              \
  } while (0)

/* Integer division by zero is an error, not undefined behaviour. */
#define SEL_INT_DIV(T)                                                                  \
  do {                                                                                  \
    const T *d_ = kd_tensor_data(other);                                                \
    for (int64_t i_ = 0; i_ < n; i_++)                                                  \
      if (d_[i_] == 0) {                                                                \
        kd_tensor_release(out);                                                         \
        return kd_set_error(KD_EINVAL, "sel::div: integer division by zero at %lld",   \
                            (long long)i_);                                             \
      }                                                                                 \
    SEL_ZIP(T, u / v);                                                                  \
  } while (0)

#define SEL_BINARY_HEAD(op)                                                        \
  static kd_status sel_##op##_cpu(const kd_call *c, const kd_arg *a, kd_value *r) { \
    (void)c;                                                                       \
    kd_tensor *self = a[0].t, *other = a[1].t, *out;                               \
    kd_status st = same_shape(#op, self, other);                                   \
    if (st) return st;                                                             \
    if ((st = new_like(#op, self, kd_tensor_ndim(self), &out))) return st;         \
    int64_t n = kd_tensor_numel(self);                                             \
    bool done = false;                                                             \
    switch (kd_tensor_dtype(self)) {

#define SEL_BINARY_REGISTER(op)                                                         \
  KD_REGISTER_KERNEL(sel, op, CPU, KD_ALL_LAYOUT, sel_##op##_cpu,                       \
                     "(Tensor, Tensor) -> Tensor", KD_INT32, KD_INT64, KD_FLOAT32,      \
                     KD_FLOAT64) {}

/* A binary operator of int32, int64, float32, float64: EXPR of u and v. */
#define SEL_BINARY(op, EXPR)                        \
  SEL_BINARY_HEAD(op)                               \
  SEL_CASE(op, KD_INT32, SEL_ZIP(int32_t, EXPR))    \
  SEL_CASE(op, KD_INT64, SEL_ZIP(int64_t, EXPR))    \
  SEL_CASE(op, KD_FLOAT32, SEL_ZIP(float, EXPR))    \
  SEL_CASE(op, KD_FLOAT64, SEL_ZIP(double, EXPR))   \
  SEL_TAIL(op)                                      \
  SEL_BINARY_REGISTER(op)

SEL_BINARY(add, u + v)
SEL_BINARY(sub, u - v)
SEL_BINARY(mul, u * v)
SEL_BINARY(maximum, u > v ? u : v)
SEL_BINARY(minimum, u < v ? u : v)

SEL_BINARY_HEAD(div)
SEL_CASE(div, KD_INT32, SEL_INT_DIV(int32_t))
SEL_CASE(div, KD_INT64, SEL_INT_DIV(int64_t))
SEL_CASE(div, KD_FLOAT32, SEL_ZIP(float, u / v))
SEL_CASE(div, KD_FLOAT64, SEL_ZIP(double, u / v))
SEL_TAIL(div)
SEL_BINARY_REGISTER(div)

/* ---- Reductions to a 0-dim tensor ------------------------------------------ */

/* ACC starts at INIT (an expression of x_[0] is allowed: n > 0 there) and
 * takes STEP for each v; RESULT is stored. */
#define SEL_REDUCE(T, ACC_T, INIT, STEP, RESULT)                   \
  do {                                                             \
    const T *x_ = kd_tensor_data(self);                            \
    ACC_T acc = (ACC_T)(INIT);                                     \
    for (int64_t i_ = 0; i_ < n; i_++) {                           \
      T v = x_[i_];                                                \
      acc = (ACC_T)(STEP);                                         \
    }                                                              \
    *(T *)kd_tensor_data(out) = (T)(RESULT);                       \
  } while (0)

#define SEL_REDUCE_HEAD(op, NONEMPTY)                                              \
  static kd_status sel_##op##_cpu(const kd_call *c, const kd_arg *a, kd_value *r) { \
    (void)c;                                                                       \
    kd_tensor *self = a[0].t, *out;                                                \
    int64_t n = kd_tensor_numel(self);                                             \
    if ((NONEMPTY) && n == 0)                                                      \
      return kd_set_error(KD_EINVAL, "sel::%s: the tensor is empty", #op);         \
    kd_status st = new_like(#op, self, 0, &out);                                   \
    if (st) return st;                                                             \
    bool done = false;                                                             \
    switch (kd_tensor_dtype(self)) {

#define SEL_REDUCE_ANY(op, NONEMPTY, INIT, STEP)                                   \
  SEL_REDUCE_HEAD(op, NONEMPTY)                                                    \
  SEL_CASE(op, KD_INT32, SEL_REDUCE(int32_t, int64_t, INIT, STEP, acc))            \
  SEL_CASE(op, KD_INT64, SEL_REDUCE(int64_t, int64_t, INIT, STEP, acc))            \
  SEL_CASE(op, KD_FLOAT32, SEL_REDUCE(float, double, INIT, STEP, acc))             \
  SEL_CASE(op, KD_FLOAT64, SEL_REDUCE(double, double, INIT, STEP, acc))            \
  SEL_TAIL(op)                                                                     \
  KD_REGISTER_KERNEL(sel, op, CPU, KD_ALL_LAYOUT, sel_##op##_cpu, "(Tensor) -> Tensor", \
                     KD_INT32, KD_INT64, KD_FLOAT32, KD_FLOAT64) {}

SEL_REDUCE_ANY(sum, 0, 0, acc + v)
SEL_REDUCE_ANY(amax, 1, x_[0], v > acc ? v : acc)

SEL_REDUCE_HEAD(mean, 1)
SEL_CASE(mean, KD_FLOAT32, SEL_REDUCE(float, double, 0, acc + v, acc / (double)n))
SEL_CASE(mean, KD_FLOAT64, SEL_REDUCE(double, double, 0, acc + v, acc / (double)n))
SEL_TAIL(mean)
KD_REGISTER_KERNEL(sel, mean, CPU, KD_ALL_LAYOUT, sel_mean_cpu, "(Tensor) -> Tensor", KD_FLOAT32,
                   KD_FLOAT64) {}

/* ---- The schemas ----------------------------------------------------------- */

KD_LIBRARY(sel, m) {
  static const char *const unary[] = {"neg", "abs",  "square", "relu", "exp",  "log",
                                      "sqrt", "sin", "cos",    "tanh", "sigmoid",
                                      "sum", "amax", "mean"};
  static const char *const binary[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  char schema[128];
  for (size_t i = 0; i < sizeof unary / sizeof *unary; i++) {
    snprintf(schema, sizeof schema, "%s(Tensor self) -> Tensor", unary[i]);
    if (kd_library_def(m, schema, NULL, 0, NULL)) kd_warn("sel: %s", kd_last_error());
  }
  for (size_t i = 0; i < sizeof binary / sizeof *binary; i++) {
    snprintf(schema, sizeof schema, "%s(Tensor self, Tensor other) -> Tensor", binary[i]);
    if (kd_library_def(m, schema, NULL, 0, NULL)) kd_warn("sel: %s", kd_last_error());
  }
}
