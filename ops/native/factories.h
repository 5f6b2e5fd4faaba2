/*
 * factories.h: the factory kernels (ops/native/factories.c, random.c) and
 * the helpers they share with the other hand-written kernels. Private to
 * libkdops.
 *
 * The kernels are declared by kdgen only (kdk/native.h, included here); what
 * each does is below. Every kernel returns a new tensor through `kd_tensor **out` (the
 * caller owns the reference; *out is NULL on error) or writes the caller's
 * `out` tensor in place (borrowed; resized as PyTorch's resize_output does).
 * Tensor arguments are borrowed.
 */
#ifndef KD_OPS_NATIVE_FACTORIES_H
#define KD_OPS_NATIVE_FACTORIES_H

#include "iter.h" /* kdk__fmt_ints */
#include "kd/ops.h"
#include "kdk/native.h"

/* ---- Shared helpers ------------------------------------------------------ */

/* Checks a size list: at most KD_MAX_DIMS entries, none negative ("Trying to
 * create tensor with negative dimension -1: [-1, 2]"). KD_EINVAL. */
kd_status kdk__check_size_list(const char *op, kd_ints size);

/* Resolves TensorOptions (NULL = None): dtype (default `default_dtype`),
 * layout (only strided), device (default `default_device`; cpu and meta
 * only), pin_memory (only false). */
kd_status kdk__factory_options(const char *op, const kd_dtype *dtype, const kd_layout *layout,
                              const kd_device *device, const bool *pin_memory,
                              kd_dtype default_dtype, kd_device default_device,
                              kd_dtype *dtype_out, kd_device *device_out);

/* PyTorch's resize_ for out tensors of factories: resizes `out` (borrowed) to
 * contiguous `sizes` only when its sizes differ (same sizes keep its
 * strides). Errors of kd_tensor_resize_. */
kd_status kdk__resize_if_needed(kd_tensor *out, int ndim, const int64_t *sizes);

/* PyTorch's resize_output: resizes `out` (borrowed) to `sizes` when its sizes
 * differ, warning through kd_warn when it had elements. Errors of
 * kd_tensor_resize_. */
kd_status kdk__resize_output(const char *op, kd_tensor *out, int ndim, const int64_t *sizes);

/* Writes `value` (converted as kd_scalar_to_element, with its overflow
 * errors) into every element of t (any strides; borrowed) through the fill
 * stub (ops/src/fill.h), the message prefixed with `op`. Meta tensors:
 * nothing is written, but the conversion is still checked. */
kd_status kdk__fill(const char *op, kd_tensor *t, const kd_scalar *value);

/* Runs `write(dst, ctx)` on a contiguous tensor that stands for `out`: out
 * itself when it is contiguous, else a fresh contiguous cpu tensor that is
 * copied into out afterwards. Meta `out`: nothing is run. */
kd_status kdk__write_contiguous(kd_tensor *out, kd_status (*write)(kd_tensor *dst, void *ctx),
                               void *ctx);

/* True when `device` is given and is neither cpu nor meta: the CPU and Meta
 * kernels of the factories hand such calls to their device-neutral kernels
 * (ops/native/composite.c). */
static inline bool kdk__off_host(const kd_device *device) {
  return device && device->type != KD_DEVICE_CPU && device->type != KD_DEVICE_META;
}

/* PyTorch's infer_full_options: the dtype a fill value gives when none is named. */
kd_dtype kdk__full_dtype_of(const kd_scalar *value);

/* zeros.out, ones.out, full.out on any device: the dispatched resize_ (when
 * out's sizes differ) and fill_. `out` is borrowed and written. */
kd_status kdk__full_out_composite(const char *op, kd_ints size, const kd_scalar *value,
                                 kd_tensor *out);

/* ---- empty --------------------------------------------------------------- */

/* empty.memory_format: CPU: empty_cpu, Meta: empty_meta. New tensor, values
 * not initialised (meta: no data). */
/* empty_like: CompositeExplicitAutograd: empty_like. */

/* ---- zeros / ones / full ---------------------------------------------------- */

/* full infers its dtype from fill_value when dtype is None: bool, int64,
 * the default complex dtype, or the default dtype. */

/* ---- arange ------------------------------------------------------------------ */

/* dtype None: int64 when every argument is integral (or bool), else the
 * default dtype. */
/* arange.out: CompositeExplicitAutograd: arange_out; arange.start_out:
 * CPU, Meta: arange_start_out. out keeps its dtype. */

/* ---- eye ---------------------------------------------------------------------- */

/* eye.out / eye.m_out: CPU, Meta: eye_out_cpu / eye_m_out_cpu. */

/* ---- rand / randn (ops/native/random.c) ------------------------------------------ */

/* The process-wide generator (kd_manual_seed) draws the values; `generator`
 * must be None (NULL or a None value) in this version. Floating and complex
 * dtypes only. rand: uniform on [0, 1); randn: standard normal (complex:
 * real and imaginary parts each of variance 1/2). */

#endif /* KD_OPS_NATIVE_FACTORIES_H */
