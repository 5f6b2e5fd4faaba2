/*
 * bitwise.c: the bitwise family: bitwise_and, bitwise_or, bitwise_xor,
 * bitwise_left_shift, bitwise_right_shift and bitwise_not. Loops:
 * ops/cpu/binary.c (bitwise_and_stub ... rshift_stub of binary.h) and
 * ops/cpu/unary.c (the unary stub's KDK_UNARY_BITWISE_NOT).
 *
 * Registration. The Tensor overloads (functional, in-place, out) and
 * bitwise_not's three variants are `manual_kernel_registration` in
 * ops/native_functions.yaml: kdgen defines them and writes their entry
 * points; this file registers their kernels with kernel keys, the
 * multi-dtype macros of kd/library.h:
 *
 *   CPU   the dtypes PyTorch's CPU kernels have loops for: bool and the
 *         integers for and, or, xor and not; the integers for the shifts.
 *   Meta  every dtype. Meta computes sizes and dtypes only and, as PyTorch's
 *         meta functions, never asks whether a CPU loop exists: on meta,
 *         float32 & float32 is a float32 tensor.
 *
 * The dispatcher selects the kernel by the key tensor (the first tensor
 * argument), while PyTorch picks the loop by the dtype the operands promote
 * to: bool << int32 is an int32 shift, int32 & float32 fails in the float32
 * loop lookup. So a plain CPU kernel (kd_library_impl, which serves every
 * dtype no keyed kernel serves) runs the same code for the other dtypes:
 * meta's checks and promotion, then the stub, which refuses a promoted dtype
 * it has no loop for with PyTorch's message ("\"bitwise_and_cpu\" not
 * implemented for 'float32'"), after the broadcast and out checks as in
 * PyTorch.
 *
 * Every kernel runs the flow of a generated structured wrapper on the
 * kdk_structured runtime (ops/src/structured.h): kdk_structured_init, the
 * iterator built as PyTorch's meta function builds it (binary_op, or
 * unary_op for bitwise_not: inputs promoted to the common dtype, the output
 * allocated, checked or resized through kdk_structured_set_output), the loop
 * (CPU only), kdk_iter_finish, kdk_structured_finish, kdk_structured_release.
 * One function, run(), does it for every operator and variant,
 * parameterised by a descriptor (bw_op); the registered kernels are
 * one-line trampolines.
 *
 * Every registration defines all its tensor arguments and its result as
 * "any dtype, any backend": the dispatcher must neither cast `other` or
 * `out` to the key tensor's dtype (promotion and the out checks are meta's)
 * nor move the wrapped CPU scalar of a Scalar overload to the meta device.
 *
 * No constructors: this file is compiled with KD_NO_AUTO_REGISTER
 * (ops/CMakeLists.txt), and kd_ops_open (ops/src/ops.c) opens every
 * descriptor of kdk__bitwise_libraries after the generated tables.
 *
 * The Scalar overloads are composites (CompositeExplicitAutograd, or
 * CompositeImplicitAutograd where PyTorch has no dispatch entry) that wrap
 * the scalar (kdk_iter_wrap_scalar) and call the Tensor overload's entry
 * point, as PyTorch's do.
 */
#include <stdio.h>
#include <string.h>

#include "native/binary.h"
#include "native/bitwise.h"
#include "native/unary.h"

#include "gen_support.h"
#include "kd/ops/bitwise_and.h"
#include "kd/ops/bitwise_left_shift.h"
#include "kd/ops/bitwise_or.h"
#include "kd/ops/bitwise_right_shift.h"
#include "kd/ops/bitwise_xor.h"

#include "bitwise_and_native.h"
#include "bitwise_left_shift_native.h"
#include "bitwise_or_native.h"
#include "bitwise_right_shift_native.h"
#include "bitwise_xor_native.h"

#ifndef KD_NO_AUTO_REGISTER
#error "bitwise.c is opened by kd_ops_open: compile it with KD_NO_AUTO_REGISTER"
#endif

/* ---- The flow --------------------------------------------------------------------- */

typedef enum bw_variant { BW_FUNCTIONAL = 0, BW_INPLACE = 1, BW_OUT = 2 } bw_variant;

/* One operator of the family. */
typedef struct bw_op {
  const char *names[3]; /* per bw_variant: "aten::bitwise_and.Tensor", ... (messages) */
  kdk_stub *stub;       /* the binary loop's stub; NULL for bitwise_not (the unary stub) */
} bw_op;

static kd_status run_loop(const bw_op *op, kdk_iter *it) {
  if (kdk_iter_is_meta(it)) return KD_OK; /* no loops run on meta */
  if (!op->stub) {
    kdk_unary_fn *fn = KD_ITER_STUB(unary_stub, it);
    return fn ? fn(it, KDK_UNARY_BITWISE_NOT, NULL) : KD_ENOKERNEL;
  }
  kdk_binary_fn *fn = (kdk_binary_fn *)kdk_stub_get(op->stub, kdk_iter_device(it).type, it->op);
  return fn ? fn(it, NULL, NULL) : KD_ENOKERNEL;
}

/* Variant v of op, on the CPU or (meta) on the meta device: a[] holds the
 * schema's arguments (self[, other][, out]); r[0] gets the result, a new
 * tensor (functional) or self / out. */
static kd_status run(const bw_op *op, bw_variant v, bool meta, const kd_arg *a, kd_value *r) {
  bool binary = op->stub != NULL;
  int nin = binary ? 2 : 1;
  kd_tensor *self = a[0].t, *other = binary ? a[1].t : NULL;
  kd_tensor *given[1] = {v == BW_INPLACE ? self : v == BW_OUT ? a[nin].t : NULL};
  kdk_structured_mode mode = v == BW_INPLACE ? KDK_STRUCTURED_INPLACE
                            : v == BW_OUT   ? KDK_STRUCTURED_OUT
                            : meta          ? KDK_STRUCTURED_META
                                            : KDK_STRUCTURED_FUNCTIONAL;
  kd_device dev = meta ? (kd_device){KD_DEVICE_META, 0}
                       : kdk__device_of_first((kd_tensor *const[]){self, other}, nin);
  kdk_structured s;
  kdk_structured_init(&s, op->names[v], mode, 1, v == BW_FUNCTIONAL ? NULL : given, dev);
  kdk_iter it;
  kdk_iter_init(&it, &s);
  kd_status st = binary ? kdk_iter_build_binary_op(&it, NULL, self, other)
                        : kdk_iter_build_unary_op(&it, NULL, self);
  if (!st && !meta) st = run_loop(op, &it);
  if (!st) st = kdk_iter_finish(&it);
  if (!st) st = kdk_structured_finish(&s);
  kdk_iter_release(&it);
  kd_tensor *take[1] = {NULL};
  kdk_structured_release(&s, v == BW_FUNCTIONAL && !st ? take : NULL);
  if (st) return st;
  r[0] = v == BW_FUNCTIONAL ? kdk__value_take_tensor(take[0]) : kd_value_tensor(given[0]);
  return KD_OK;
}

/* ---- The operators and their kernels ------------------------------------------------- */

#define KDK__BW_BINARY_OP(op, stub)                                                            \
  static const bw_op op##_desc = {                                                            \
      {"aten::" #op ".Tensor", "aten::" #op "_.Tensor", "aten::" #op ".Tensor_out"},          \
      &KDK_STUB_OBJECT(stub)};
KDK__BW_BINARY_OP(bitwise_and, bitwise_and_stub)
KDK__BW_BINARY_OP(bitwise_or, bitwise_or_stub)
KDK__BW_BINARY_OP(bitwise_xor, bitwise_xor_stub)
KDK__BW_BINARY_OP(bitwise_left_shift, lshift_stub)
KDK__BW_BINARY_OP(bitwise_right_shift, rshift_stub)
static const bw_op bitwise_not_desc = {
    {"aten::bitwise_not", "aten::bitwise_not_", "aten::bitwise_not.out"}, NULL};

/* The six kernels of one operator: op_functional_cpu ... op_out_meta. */
#define KDK__BW_TRAMPOLINE(op, variant, V, backend, META)                                  \
  static kd_status op##_##variant##_##backend(const kd_call *c, const kd_arg *a,           \
                                              kd_value *r) {                               \
    (void)c;                                                                               \
    return run(&op##_desc, V, META, a, r);                                                 \
  }
#define KDK__BW_KERNELS(op)                                 \
  KDK__BW_TRAMPOLINE(op, functional, BW_FUNCTIONAL, cpu, false) \
  KDK__BW_TRAMPOLINE(op, inplace, BW_INPLACE, cpu, false)       \
  KDK__BW_TRAMPOLINE(op, out, BW_OUT, cpu, false)               \
  KDK__BW_TRAMPOLINE(op, functional, BW_FUNCTIONAL, meta, true) \
  KDK__BW_TRAMPOLINE(op, inplace, BW_INPLACE, meta, true)       \
  KDK__BW_TRAMPOLINE(op, out, BW_OUT, meta, true)
KDK__BW_KERNELS(bitwise_and)
KDK__BW_KERNELS(bitwise_or)
KDK__BW_KERNELS(bitwise_xor)
KDK__BW_KERNELS(bitwise_left_shift)
KDK__BW_KERNELS(bitwise_right_shift)
KDK__BW_KERNELS(bitwise_not)

/* ---- Kernel-key registrations ---------------------------------------------------------- */

/* The dtype sets (see the top of the file). */
#define KDK__BW_CPU_LOGICAL KD_BOOL, KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64
#define KDK__BW_CPU_SHIFT KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64
#define KDK__BW_META                                                                        \
  KD_BOOL, KD_UINT8, KD_INT8, KD_INT16, KD_INT32, KD_INT64, KD_FLOAT16, KD_BFLOAT16,       \
      KD_FLOAT32, KD_FLOAT64, KD_COMPLEX64, KD_COMPLEX128

/* Argument definitions of every registration: the first `nargs` arguments
 * (all tensors) and the result, any dtype on any backend. */
static void any_args(kd_kernel_args *k, size_t nargs) {
  for (size_t i = 0; i < nargs; i++) {
    kd_kernel_args_input(k, i, KD_ARGDEF_DTYPE, KD_ALL_DTYPE);
    kd_kernel_args_input(k, i, KD_ARGDEF_BACKEND, KD_ALL_BACKEND);
  }
  kd_kernel_args_output(k, 0, KD_ARGDEF_DTYPE, KD_ALL_DTYPE);
  kd_kernel_args_output(k, 0, KD_ARGDEF_BACKEND, KD_ALL_BACKEND);
}

#define KDK__BW_SIG_BINARY "(Tensor, Tensor) -> Tensor"
#define KDK__BW_SIG_BINARY_INPLACE "(Tensor(a!), Tensor) -> Tensor(a!)"
#define KDK__BW_SIG_BINARY_OUT "(Tensor, Tensor, Tensor(a!)) -> Tensor(a!)"
#define KDK__BW_SIG_UNARY "(Tensor) -> Tensor"
#define KDK__BW_SIG_UNARY_INPLACE "(Tensor(a!)) -> Tensor(a!)"
#define KDK__BW_SIG_UNARY_OUT "(Tensor, Tensor(a!)) -> Tensor(a!)"

/* op.Tensor, op_.Tensor and op.Tensor_out for KEY (CPU or META; backend:
 * cpu or meta, the trampolines' suffix) and the dtype list `dtypes` (a
 * macro of the list). Descriptors kd_library_kernel_aten_OP_Tensor_KEY,
 * kd_library_kernel_aten_OP__Tensor_KEY, kd_library_kernel_aten_OP_Tensor_out_KEY. */
#define KDK__BW_REGISTER_BINARY(op, KEY, backend, dtypes)                                    \
  KD_REGISTER_KERNEL_OVERLOAD(aten, op, Tensor, KEY, KD_ALL_LAYOUT, op##_functional_##backend, \
                              KDK__BW_SIG_BINARY, dtypes) {                                   \
    any_args(kernel, 2);                                                                     \
  }                                                                                          \
  KD_REGISTER_KERNEL_OVERLOAD(aten, op##_, Tensor, KEY, KD_ALL_LAYOUT, op##_inplace_##backend, \
                              KDK__BW_SIG_BINARY_INPLACE, dtypes) {                           \
    any_args(kernel, 2);                                                                     \
  }                                                                                          \
  KD_REGISTER_KERNEL_OVERLOAD(aten, op, Tensor_out, KEY, KD_ALL_LAYOUT, op##_out_##backend,  \
                              KDK__BW_SIG_BINARY_OUT, dtypes) {                               \
    any_args(kernel, 3);                                                                     \
  }

/* bitwise_not, bitwise_not_ and bitwise_not.out (descriptors
 * kd_library_kernel_aten_bitwise_not_KEY, ..._bitwise_not__KEY,
 * ..._bitwise_not_out_KEY). */
#define KDK__BW_REGISTER_NOT(KEY, backend, dtypes)                                           \
  KD_REGISTER_KERNEL(aten, bitwise_not, KEY, KD_ALL_LAYOUT, bitwise_not_functional_##backend, \
                     KDK__BW_SIG_UNARY, dtypes) {                                            \
    any_args(kernel, 1);                                                                     \
  }                                                                                          \
  KD_REGISTER_KERNEL(aten, bitwise_not_, KEY, KD_ALL_LAYOUT, bitwise_not_inplace_##backend,  \
                     KDK__BW_SIG_UNARY_INPLACE, dtypes) {                                    \
    any_args(kernel, 1);                                                                     \
  }                                                                                          \
  KD_REGISTER_KERNEL_OVERLOAD(aten, bitwise_not, out, KEY, KD_ALL_LAYOUT,                    \
                              bitwise_not_out_##backend, KDK__BW_SIG_UNARY_OUT, dtypes) {     \
    any_args(kernel, 2);                                                                     \
  }

KDK__BW_REGISTER_BINARY(bitwise_and, CPU, cpu, KDK__BW_CPU_LOGICAL)
KDK__BW_REGISTER_BINARY(bitwise_or, CPU, cpu, KDK__BW_CPU_LOGICAL)
KDK__BW_REGISTER_BINARY(bitwise_xor, CPU, cpu, KDK__BW_CPU_LOGICAL)
KDK__BW_REGISTER_BINARY(bitwise_left_shift, CPU, cpu, KDK__BW_CPU_SHIFT)
KDK__BW_REGISTER_BINARY(bitwise_right_shift, CPU, cpu, KDK__BW_CPU_SHIFT)
KDK__BW_REGISTER_NOT(CPU, cpu, KDK__BW_CPU_LOGICAL)

KDK__BW_REGISTER_BINARY(bitwise_and, META, meta, KDK__BW_META)
KDK__BW_REGISTER_BINARY(bitwise_or, META, meta, KDK__BW_META)
KDK__BW_REGISTER_BINARY(bitwise_xor, META, meta, KDK__BW_META)
KDK__BW_REGISTER_BINARY(bitwise_left_shift, META, meta, KDK__BW_META)
KDK__BW_REGISTER_BINARY(bitwise_right_shift, META, meta, KDK__BW_META)
KDK__BW_REGISTER_NOT(META, meta, KDK__BW_META)

/* ---- The CPU kernel for the other dtypes ------------------------------------------------ */

/* The plain CPU registrations (see the top of the file), each asked for by
 * its allow-list token in a selective build. */
typedef struct bw_plain {
  const char *name;
  kd_unboxed_fn fn;
  const char *signature;
  bool wanted;
} bw_plain;

/* An unwanted kernel is not referenced either (NULL), so that a static link
 * of a selective build drops it. */
#define KDK__BW_PLAIN(name, tok, fn, sig)                                  \
  {name, KD_SHOULD_REGISTER(aten, tok, CPU) ? fn : NULL, sig,             \
   KD_SHOULD_REGISTER(aten, tok, CPU)}
#define KDK__BW_PLAIN_BINARY(op)                                                              \
  KDK__BW_PLAIN(#op ".Tensor", op##_Tensor, op##_functional_cpu, KDK__BW_SIG_BINARY),          \
      KDK__BW_PLAIN(#op "_.Tensor", op##__Tensor, op##_inplace_cpu, KDK__BW_SIG_BINARY_INPLACE), \
      KDK__BW_PLAIN(#op ".Tensor_out", op##_Tensor_out, op##_out_cpu, KDK__BW_SIG_BINARY_OUT),
static const bw_plain plain_kernels[] = {
    KDK__BW_PLAIN_BINARY(bitwise_and) KDK__BW_PLAIN_BINARY(bitwise_or)
    KDK__BW_PLAIN_BINARY(bitwise_xor) KDK__BW_PLAIN_BINARY(bitwise_left_shift)
    KDK__BW_PLAIN_BINARY(bitwise_right_shift)
    KDK__BW_PLAIN("bitwise_not", bitwise_not, bitwise_not_functional_cpu, KDK__BW_SIG_UNARY),
    KDK__BW_PLAIN("bitwise_not_", bitwise_not_, bitwise_not_inplace_cpu, KDK__BW_SIG_UNARY_INPLACE),
    KDK__BW_PLAIN("bitwise_not.out", bitwise_not_out, bitwise_not_out_cpu, KDK__BW_SIG_UNARY_OUT),
};

KD_LIBRARY_FRAGMENT(aten, bitwise_other_dtypes, m) {
  for (size_t i = 0; i < sizeof plain_kernels / sizeof plain_kernels[0]; i++) {
    const bw_plain *p = &plain_kernels[i];
    if (!p->wanted) continue;
    kd_kernel k = kd_kernel_unboxed(p->fn, p->signature);
    if (kd_library_impl_key(m, p->name, KD_KEY_CPU, &k, NULL))
      kd_warn("bitwise.c: the CPU kernel of aten::%s for other dtypes: %s", p->name,
              kd_last_error());
  }
}

/* ---- What kd_ops_open opens --------------------------------------------------------------- */

#define KDK__BW_DESCS_BINARY(op, KEY)                                               \
  &kd_library_kernel_aten_##op##_Tensor_##KEY, &kd_library_kernel_aten_##op##__Tensor_##KEY, \
      &kd_library_kernel_aten_##op##_Tensor_out_##KEY,
#define KDK__BW_DESCS(KEY)                                                                     \
  KDK__BW_DESCS_BINARY(bitwise_and, KEY) KDK__BW_DESCS_BINARY(bitwise_or, KEY)                  \
  KDK__BW_DESCS_BINARY(bitwise_xor, KEY) KDK__BW_DESCS_BINARY(bitwise_left_shift, KEY)          \
  KDK__BW_DESCS_BINARY(bitwise_right_shift, KEY)                                               \
  &kd_library_kernel_aten_bitwise_not_##KEY, &kd_library_kernel_aten_bitwise_not__##KEY,      \
      &kd_library_kernel_aten_bitwise_not_out_##KEY,

const kd_library_desc *const kdk__bitwise_libraries[] = {
    KDK__BW_DESCS(CPU) KDK__BW_DESCS(META) &kd_library_fragment_aten_bitwise_other_dtypes,
};
const size_t kdk__bitwise_nlibraries =
    sizeof kdk__bitwise_libraries / sizeof kdk__bitwise_libraries[0];

static const bw_op *const family[] = {&bitwise_and_desc,         &bitwise_or_desc,
                                      &bitwise_xor_desc,         &bitwise_left_shift_desc,
                                      &bitwise_right_shift_desc, &bitwise_not_desc};

/* Whether `qualified` ("aten::name" or "aten::name.overload") has a keyed
 * kernel for (key, dtype). */
static kd_status check_keyed(const char *qualified, kd_dispatch_key key, kd_dtype dtype) {
  char name[128];
  snprintf(name, sizeof name, "%s", qualified);
  char *dot = strrchr(name, '.');
  if (dot) *dot = '\0';
  kd_op *op;
  kd_kernel_selection sel;
  if (kd_op_find(name, dot ? dot + 1 : "", &op) ||
      kd_op_select_kernel(op, key, KD_LAYOUT_STRIDED, dtype, &sel) || !sel.keyed)
    return kd_set_error(KD_EINTERNAL,
                        "kd_ops_open: %s has no %s kernel for %s registered by bitwise.c (see "
                        "the warnings of its registration)",
                        qualified, kd_dispatch_key_name(key), kd_dtype_name(dtype));
  return KD_OK;
}

kd_status kdk__bitwise_check(void) {
  /* a selective build registers only what its allow-list has, so the
   * family is incomplete by design (kd_add_selective_kdops) */
  if (KD__SEL_ON) return KD_OK;
  for (size_t i = 0; i < sizeof family / sizeof family[0]; i++)
    for (int v = 0; v < 3; v++) {
      kd_status st = check_keyed(family[i]->names[v], KD_KEY_CPU, KD_INT64);
      if (!st) st = check_keyed(family[i]->names[v], KD_KEY_META, KD_FLOAT32);
      if (st) return st;
    }
  return KD_OK;
}

/* ---- Composite Scalar overloads ------------------------------------------------------------ */

#define KDK__BITWISE_SCALARS(n)                                                                 \
  kd_status kdk_native_##n##_Scalar_out(kd_tensor *self, const kd_scalar *other,               \
                                        kd_tensor *out) {                                      \
    KDK__WITH_WRAPPED(other, kd_##n##_Tensor_out(self, w, out));                                \
  }                                                                                            \
  kd_status kdk_native_##n##_Scalar(kd_tensor *self, const kd_scalar *other, kd_tensor **out) { \
    KDK__WITH_WRAPPED(other, kd_##n##_Tensor(self, w, out));                                    \
  }                                                                                            \
  kd_status kdk_native_##n##_Scalar_Tensor(const kd_scalar *self, kd_tensor *other,            \
                                           kd_tensor **out) {                                  \
    KDK__WITH_WRAPPED(self, kd_##n##_Tensor(w, other, out));                                    \
  }                                                                                            \
  kd_status kdk_native_##n##_Scalar_(kd_tensor *self, const kd_scalar *other) {                \
    KDK__WITH_WRAPPED(other, kd_##n##_Tensor_(self, w));                                       \
  }
KDK__BITWISE_SCALARS(bitwise_and)
KDK__BITWISE_SCALARS(bitwise_or)
KDK__BITWISE_SCALARS(bitwise_xor)

#define KDK__SHIFT_SCALARS(n)                                                                   \
  kd_status kdk_native_##n##_Tensor_Scalar(kd_tensor *self, const kd_scalar *other,            \
                                           kd_tensor **out) {                                  \
    KDK__WITH_WRAPPED(other, kd_##n##_Tensor(self, w, out));                                    \
  }                                                                                            \
  kd_status kdk_native_##n##_Tensor_Scalar_(kd_tensor *self, const kd_scalar *other) {         \
    KDK__WITH_WRAPPED(other, kd_##n##_Tensor_(self, w));                                       \
  }                                                                                            \
  kd_status kdk_native_##n##_Tensor_Scalar_out(kd_tensor *self, const kd_scalar *other,        \
                                               kd_tensor *out) {                               \
    KDK__WITH_WRAPPED(other, kd_##n##_Tensor_out(self, w, out));                                \
  }                                                                                            \
  kd_status kdk_native_##n##_Scalar_Tensor(const kd_scalar *self, kd_tensor *other,            \
                                           kd_tensor **out) {                                  \
    KDK__WITH_WRAPPED(self, kd_##n##_Tensor(w, other, out));                                    \
  }
KDK__SHIFT_SCALARS(bitwise_left_shift)
KDK__SHIFT_SCALARS(bitwise_right_shift)
