/*
 * factories.h: the factory kernels (ops/native/factories.c, random.c) and
 * the helpers they share with the other hand-written kernels. Private to
 * libkdops.
 *
 * The kdk_native_* prototypes follow docs/CODEGEN.md; once kdgen lands they
 * are also declared by the generated <name>_native.h headers and must match
 * them. Every kernel returns a new tensor through `kd_tensor **out` (the
 * caller owns the reference; *out is NULL on error) or writes the caller's
 * `out` tensor in place (borrowed; resized as PyTorch's resize_output does).
 * Tensor arguments are borrowed.
 */
#ifndef KD_OPS_NATIVE_FACTORIES_H
#define KD_OPS_NATIVE_FACTORIES_H

#include "kd/ops.h"

/* ---- Shared helpers ------------------------------------------------------ */

/* Formats sizes as "[2, 3]" into buf (cut at cap); returns buf. */
const char *kdk__format_sizes(char *buf, size_t cap, int ndim, const int64_t *sizes);

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
kd_status kdk_native_empty_cpu(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                               const kd_device *device, const bool *pin_memory,
                               const kd_memory_format *memory_format, kd_tensor **out);
kd_status kdk_native_empty_meta(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                                const kd_device *device, const bool *pin_memory,
                                const kd_memory_format *memory_format, kd_tensor **out);
/* empty_like: CompositeExplicitAutograd: empty_like. */
kd_status kdk_native_empty_like(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                                const kd_device *device, const bool *pin_memory,
                                const kd_memory_format *memory_format, kd_tensor **out);

/* ---- zeros / ones / full ---------------------------------------------------- */

kd_status kdk_native_zeros(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                           const kd_device *device, const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_zeros_out(kd_ints size, kd_tensor *out);
kd_status kdk_native_zeros_like(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                                const kd_device *device, const bool *pin_memory,
                                const kd_memory_format *memory_format, kd_tensor **out);
kd_status kdk_native_ones(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                          const kd_device *device, const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_ones_out(kd_ints size, kd_tensor *out);
kd_status kdk_native_ones_like(kd_tensor *self, const kd_dtype *dtype, const kd_layout *layout,
                               const kd_device *device, const bool *pin_memory,
                               const kd_memory_format *memory_format, kd_tensor **out);
/* full infers its dtype from fill_value when dtype is None: bool, int64,
 * the default complex dtype, or the default dtype. */
kd_status kdk_native_full(kd_ints size, const kd_scalar *fill_value, const kd_dtype *dtype,
                          const kd_layout *layout, const kd_device *device,
                          const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_full_out(kd_ints size, const kd_scalar *fill_value, kd_tensor *out);
kd_status kdk_native_full_like(kd_tensor *self, const kd_scalar *fill_value, const kd_dtype *dtype,
                               const kd_layout *layout, const kd_device *device,
                               const bool *pin_memory, const kd_memory_format *memory_format,
                               kd_tensor **out);

/* ---- arange ------------------------------------------------------------------ */

/* dtype None: int64 when every argument is integral (or bool), else the
 * default dtype. */
kd_status kdk_native_arange(const kd_scalar *end, const kd_dtype *dtype, const kd_layout *layout,
                            const kd_device *device, const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_arange_start(const kd_scalar *start, const kd_scalar *end,
                                  const kd_dtype *dtype, const kd_layout *layout,
                                  const kd_device *device, const bool *pin_memory,
                                  kd_tensor **out);
kd_status kdk_native_arange_start_step(const kd_scalar *start, const kd_scalar *end,
                                       const kd_scalar *step, const kd_dtype *dtype,
                                       const kd_layout *layout, const kd_device *device,
                                       const bool *pin_memory, kd_tensor **out);
/* arange.out: CompositeExplicitAutograd: arange_out; arange.start_out:
 * CPU, Meta: arange_start_out. out keeps its dtype. */
kd_status kdk_native_arange_out(const kd_scalar *end, kd_tensor *out);
kd_status kdk_native_arange_start_out(const kd_scalar *start, const kd_scalar *end,
                                      const kd_scalar *step, kd_tensor *out);

/* ---- eye ---------------------------------------------------------------------- */

kd_status kdk_native_eye(int64_t n, const kd_dtype *dtype, const kd_layout *layout,
                         const kd_device *device, const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_eye_m(int64_t n, int64_t m, const kd_dtype *dtype, const kd_layout *layout,
                           const kd_device *device, const bool *pin_memory, kd_tensor **out);
/* eye.out / eye.m_out: CPU, Meta: eye_out_cpu / eye_m_out_cpu. */
kd_status kdk_native_eye_out_cpu(int64_t n, kd_tensor *out);
kd_status kdk_native_eye_m_out_cpu(int64_t n, int64_t m, kd_tensor *out);

/* ---- rand / randn (ops/native/random.c) ------------------------------------------ */

/* The process-wide generator (kd_manual_seed) draws the values; `generator`
 * must be None (NULL or a None value) in this version. Floating and complex
 * dtypes only. rand: uniform on [0, 1); randn: standard normal (complex:
 * real and imaginary parts each of variance 1/2). */
kd_status kdk_native_rand(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                          const kd_device *device, const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_rand_generator(kd_ints size, const kd_value *generator,
                                    const kd_dtype *dtype, const kd_layout *layout,
                                    const kd_device *device, const bool *pin_memory,
                                    kd_tensor **out);
kd_status kdk_native_rand_out(kd_ints size, kd_tensor *out);
kd_status kdk_native_rand_generator_out(kd_ints size, const kd_value *generator, kd_tensor *out);
kd_status kdk_native_randn(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,
                           const kd_device *device, const bool *pin_memory, kd_tensor **out);
kd_status kdk_native_randn_generator(kd_ints size, const kd_value *generator,
                                     const kd_dtype *dtype, const kd_layout *layout,
                                     const kd_device *device, const bool *pin_memory,
                                     kd_tensor **out);
kd_status kdk_native_randn_out(kd_ints size, kd_tensor *out);
kd_status kdk_native_randn_generator_out(kd_ints size, const kd_value *generator, kd_tensor *out);

#endif /* KD_OPS_NATIVE_FACTORIES_H */
