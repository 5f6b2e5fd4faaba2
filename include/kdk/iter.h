/*
 * kdk/iter.h: kdk_iter, PyTorch's TensorIterator in C. Part of the
 * kernel-author kit (kdk/common.h): a backend's loops and Customized meta
 * functions use it as libkdops' own do.
 *
 * An iterator takes output and input tensors, broadcasts them to one shape,
 * computes the dtype the operation runs in, casts inputs, allocates (or
 * resizes, or checks) outputs, and then runs inner loops over all elements
 * with per-tensor byte strides. It is a plain struct with fixed-size arrays:
 * put it on the stack; nothing is allocated for small tensors besides the
 * outputs themselves.
 *
 * ---- Life cycle ------------------------------------------------------------
 *
 *   kdk_iter it;
 *   kdk_iter_init(&it, s);            // s: the structured call, or NULL
 *   kdk_iter_add_output(&it, NULL);   // outputs first ...
 *   kdk_iter_add_input(&it, a);       // ... then inputs
 *   kdk_iter_add_input(&it, b);
 *   kdk_iter_promote_inputs_to_common_dtype(&it, true);   // options
 *   st = kdk_iter_build(&it);         // or one call: kdk_iter_build_binary_op(&it, NULL, a, b)
 *   ...  kdk_iter_for_each(&it, loop, ctx, KDK_GRAIN_SIZE);
 *   st = kdk_iter_finish(&it);        // copies output temporaries back
 *   kdk_iter_release(&it);            // always (also after a failed build)
 *
 * In a structured operator (docs/CODEGEN.md) the generated wrapper does
 * init, finish and release: meta only configures and builds (usually one
 * kdk_iter_build_*_op call with out = NULL), impl only runs loops.
 *
 * ---- Outputs ---------------------------------------------------------------
 *
 * kdk_iter_add_output(it, NULL) as output k means "structured output k":
 * build computes its sizes, strides and dtype and calls
 * kdk_structured_set_output(s, k, ...), which allocates it (functional),
 * checks self (inplace) or checks / resizes `out` (out variants). For the
 * inplace and out variants, s->given[k] takes part in the computation as
 * PyTorch's maybe_get_output() does (its dtype is the output dtype; its
 * strides count for the layout when it already has the broadcast shape; it
 * is read-write when it is also an input). With s == NULL a NULL output is
 * allocated by the iterator itself (kdk_iter_output gives it; retain it to
 * keep it past kdk_iter_release). A non-NULL output is written in place; it
 * is resized (kd_tensor_resize_) when its shape differs from the broadcast
 * shape, resize_outputs is on and it is not also an input.
 *
 * New outputs follow the inputs' memory layout (PyTorch's permutation: a
 * transposed input gives a transposed output; contiguous inputs give a
 * contiguous output).
 *
 * ---- Dtypes ---------------------------------------------------------------
 *
 * common_dtype: the dtype of the first input, or, with
 * promote_inputs_to_common_dtype, PyTorch's result_type of all inputs
 * (kd_result_type_*: tensors with dimensions first, then 0-dim tensors, then
 * wrapped numbers, see kdk_iter_wrap_scalar), then the default float dtype
 * when promote_integer_inputs_to_float is on and it is integral (or bool).
 * kdk_iter_set_common_dtype forces it instead.
 * Inputs: with promote_inputs_to_common_dtype, an input of another dtype is
 * replaced by a converted copy, so the loops see common_dtype in every input
 * (on meta nothing is converted). The copy is laid out as PyTorch's
 * Tensor.to(dtype) lays it out (a dense input keeps its strides, another
 * gets the dense strides of its permutation), so it leads the layout of new
 * outputs as the original would: a transposed int64 input of a float32 op
 * gives a transposed result, as in libtorch.
 * Outputs: a new output gets its own declared dtype (kdk_iter_add_output_dtype),
 * else the static dtype (kdk_iter_declare_static_dtype), else common_dtype. A
 * given output keeps its dtype; enforce_safe_casting_to_output checks that
 * common_dtype can be cast to it ("result type float32 can't be cast to the
 * desired output type int64"); cast_common_dtype_to_outputs makes the loops
 * write a temporary of common_dtype instead, which kdk_iter_finish copies into
 * the real output. So with promote + cast (binary_op) every operand the loops
 * see has common_dtype; without cast (comparison_op) the outputs may differ
 * (bool).
 *
 * ---- Loops -----------------------------------------------------------------
 *
 * loop2d(ctx, data, strides, size0, size1) processes a size0 x size1 block:
 * element (i, j) of operand k is at data[k] + i * strides[k] +
 * j * strides[ntensors + k] (byte strides; operands are outputs first, then
 * inputs, as added). A zero-size iterator calls no loop, except that rows
 * of length 0 are visited (below); an operand without bytes then gets a
 * valid dummy address that must not be read. A loop may be called from
 * several threads at once on disjoint blocks (disjoint in the outputs).
 *
 * ---- Reductions and rows ---------------------------------------------------
 *
 * kdk_iter_set_reduction(it, dims, n, keepdim) (or kdk_iter_build_reduce_op)
 * makes the outputs the reduction of the inputs' broadcast shape over `dims`
 * (n <= 0: all dims; negative dims count from the end; keepdim keeps them as
 * size 1). kdk_iter_set_row_dim(it, dim) instead keeps the outputs' shape (for
 * cumsum, softmax, sort...). Either way the iterator has a "row": the
 * reduced dims (or the row dim) in row-major order form one run of row_len
 * elements with one byte stride per operand (0 for reduced outputs). Then
 * every loop2d call of kdk_iter_for_each / kdk_iter_for_each_row has
 * size0 == row_len (a whole row: element r of the row, in row-major order
 * over the reduced dims, is at data[k] + r * strides[k]) and size1 rows one
 * after the other (strides[ntensors + k] apart). Threads split over rows,
 * never inside one, so a loop may keep its accumulator in a local and write
 * the output once per row. Rows with row_len == 0 are still visited (size0
 * == 0), so sum can write 0 and max can raise its error. An input whose
 * reduced dims do not form one run (say, a transposed input reduced over
 * both dims) is copied first.
 * kdk_iter_reduce_rows additionally splits a single huge row over threads
 * (per-thread partials, PyTorch's two-pass reduction) for loops that
 * compute "out = op over the row" with an associative op (sum, prod, max,
 * min, all, any, but not mean or argmax). kdk_iter_split_row is the general
 * form (PyTorch's per-thread accumulators): it hands out the pieces of the
 * row and leaves the partials (any type: a value and an index for argmax)
 * and their combination to the caller.
 *
 * ---- Ownership and ABI ------------------------------------------------------
 *
 * The iterator borrows every tensor added to it (they must outlive it) and
 * owns what it creates (converted inputs, temporaries, outputs it allocates
 * with s == NULL) until kdk_iter_release; structured outputs belong to s.
 * kdk_iter is on the caller's stack, so its layout is part of libkdops' ABI:
 * kdk_iter_init records KDK_API_VERSION and sizeof(kdk_iter) as the caller
 * was compiled, and kdk_iter_build refuses a mismatch (KD_EUNSUPPORTED,
 * "kdk_iter of kit ABI 1, N bytes, but libkdops has ...") before touching
 * anything else. Fields are read through the accessors below; writing them
 * other than through the functions here is not supported.
 *
 * ---- Devices ----------------------------------------------------------------
 *
 * The iterator runs on the device of its operands (kdk_iter_device, set by
 * build): the loops of a backend's device get data pointers of that device.
 * libkdops' impls pick their dispatch stub's loop for that device
 * (kdk/stub.h), so the same meta + impl serve the CPU and a backend.
 *
 * ---- Errors ----------------------------------------------------------------
 *
 * Build returns KD_EINVAL for shapes that do not broadcast ("The size of
 * tensor a (3) must match the size of tensor b (4) at non-singleton
 * dimension 1") and bad dims, KD_ETYPE for dtype errors, and the errors of
 * kdk_structured_set_output / allocation / conversion; every message starts
 * with the operator's name (s->op, or kdk_iter_set_op_name).
 */
#ifndef KDK_ITER_H
#define KDK_ITER_H

#include <stdbool.h>
#include <stdint.h>

#include "kd/ops.h"
#include "kdk/common.h"
#include "kdk/parallel.h"
#include "kdk/structured.h"

KD_EXTERN_C_BEGIN

/* Most operands (outputs + inputs) of one iterator. */
#define KDK_ITER_MAX_TENSORS 8

/* The inner loop: see "Loops" above. strides has 2 * ntensors entries. */
typedef void (*kdk_iter_loop2d)(void *ctx, char **data, const int64_t *strides, int64_t size0,
                               int64_t size1);

/* Option bits (it->flags); set them through the functions below. */
enum {
  KDK_ITER_F_CHECK_SAME_DTYPE = 1u << 0, /* default on */
  KDK_ITER_F_RESIZE_OUTPUTS = 1u << 1,   /* default on */
  KDK_ITER_F_CHECK_OVERLAP = 1u << 2,    /* default on */
  KDK_ITER_F_CHECK_SAME_DEVICE = 1u << 3, /* default on */
  KDK_ITER_F_PROMOTE_INPUTS = 1u << 4,
  KDK_ITER_F_INT_TO_FLOAT = 1u << 5,
  KDK_ITER_F_CAST_OUTPUTS = 1u << 6,
  KDK_ITER_F_SAFE_CAST = 1u << 7,
  KDK_ITER_F_LINEAR = 1u << 8, /* enforce_linear_iteration: row-major order, no reordering */
  KDK_ITER_F_REDUCTION = 1u << 9,
  KDK_ITER_F_KEEPDIM = 1u << 10,
  KDK_ITER_F_ROW_DIM = 1u << 11,
};

typedef struct kdk_iter {
  uint32_t api_version;    /* KDK_API_VERSION of the caller's headers (set by init) */
  uint32_t struct_size;    /* sizeof(kdk_iter) as the caller sees it (set by init) */
  /* ---- configuration (set by kdk_iter_init and the option functions) ---- */
  kdk_structured *s;
  const char *op;
  unsigned flags;
  int ntensors, noutputs;
  kd_status cfg_status;    /* a configuration error, reported by build */
  const char *cfg_msg;     /* its message (static) */
  kd_dtype static_dtype;   /* KD_DTYPE_UNDEFINED: none */
  kd_dtype forced_common;  /* KD_DTYPE_UNDEFINED: computed */
  int static_ndim;         /* -1: none */
  int nreduce;             /* reduction dims given (0: all) / the row dim */
  int64_t static_shape[KD_MAX_DIMS];
  int64_t reduce_dims[KD_MAX_DIMS];
  /* ---- operands ---- */
  kd_tensor *tensors[KDK_ITER_MAX_TENSORS];   /* what the loops read / write */
  kd_tensor *originals[KDK_ITER_MAX_TENSORS]; /* outputs with a temporary: the real output */
  kd_dtype out_dtype[KDK_ITER_MAX_TENSORS];   /* declared dtype of a new output */
  unsigned owned;                            /* bit k: the iterator holds a reference to tensors[k] */
  unsigned temps;                            /* bit k: output k is a temporary for originals[k] */
  /* ---- after build ---- */
  bool built, is_meta, has_row;
  kd_device device;                /* where the operands are (see "Devices") */
  kd_dtype common_dtype;
  kd_dtype dtypes[KDK_ITER_MAX_TENSORS];
  char *data[KDK_ITER_MAX_TENSORS];
  int ndim;                        /* iteration dims (after reordering and coalescing) */
  int64_t numel;                   /* all elements (rows included) */
  int64_t outer_numel;             /* elements of the iteration shape (rows excluded) */
  int64_t shape[KD_MAX_DIMS];      /* iteration shape, dim 0 fastest */
  int64_t strides[KD_MAX_DIMS][KDK_ITER_MAX_TENSORS]; /* bytes; strides[d][k] */
  int64_t row_len;                 /* has_row: elements per row */
  int64_t row_strides[KDK_ITER_MAX_TENSORS];
  /* built by the fast path (one dimension, every data pointer set): the
   * strides a loop over the whole range gets, dim 0 then dim 1 (zeros) */
  bool loop_ready;
  int64_t loop_strides[2 * KDK_ITER_MAX_TENSORS];
  int full_ndim;                   /* the broadcast (input) shape, in dim order */
  int64_t full_shape[KD_MAX_DIMS];
} kdk_iter;

/* ---- Set-up ------------------------------------------------------------------ */

/* Starts an empty iterator for structured call s (NULL outside structured
 * kernels; borrowed, must outlive the iterator). Cheap: it writes a few
 * fields; cannot fail. Default options as PyTorch's
 * TensorIteratorConfig: check_all_same_dtype, resize_outputs,
 * check_mem_overlap and check_all_same_device on, the rest off. */
#define KDK_ITER_F_DEFAULT                                                               \
  (KDK_ITER_F_CHECK_SAME_DTYPE | KDK_ITER_F_RESIZE_OUTPUTS | KDK_ITER_F_CHECK_OVERLAP |            \
   KDK_ITER_F_CHECK_SAME_DEVICE)
static inline void kdk_iter_init(kdk_iter *it, kdk_structured *s) {
  it->api_version = KDK_API_VERSION;
  it->struct_size = (uint32_t)sizeof(kdk_iter);
  it->s = s;
  it->op = s ? s->op : "kdk_iter";
  it->flags = KDK_ITER_F_DEFAULT;
  it->ntensors = 0;
  it->noutputs = 0;
  it->cfg_status = KD_OK;
  it->static_dtype = KD_DTYPE_UNDEFINED;
  it->forced_common = KD_DTYPE_UNDEFINED;
  it->static_ndim = -1;
  it->nreduce = 0;
  it->owned = 0;
  it->temps = 0;
  it->built = false;
  it->loop_ready = false;
  it->is_meta = false;
  it->has_row = false;
  it->device = kd_device_cpu();
  it->common_dtype = KD_DTYPE_UNDEFINED;
  it->ndim = 0;
  it->numel = 0;
  it->outer_numel = 0;
  it->full_ndim = 0;
}

/* Drops every reference the iterator holds (temporaries, casts, owned
 * inputs, outputs it allocated). Safe after a failed or missing build and
 * twice. Structured outputs belong to s, not to the iterator. Never fails.
 * kdk_iter_release_owned is its out-of-line part: call kdk_iter_release. */
KDK_API void kdk_iter_release_owned(kdk_iter *it);
static inline void kdk_iter_release(kdk_iter *it) {
  if (it->owned) kdk_iter_release_owned(it);
  it->temps = 0;
  it->loop_ready = false;
  it->ntensors = 0;
  it->noutputs = 0;
  it->built = false;
}

/* After the loops: copies every output temporary (cast_common_dtype_to_outputs
 * with an output of another dtype) into its real output. KD_OK when there is
 * none (or on meta); the copy's error (with its message) otherwise. Call
 * before kdk_iter_release (generated wrappers do). kdk_iter_copy_temps is
 * its out-of-line part: call kdk_iter_finish. */
KDK_API kd_status kdk_iter_copy_temps(kdk_iter *it);
static inline kd_status kdk_iter_finish(kdk_iter *it) {
  return it->temps && it->built && !it->is_meta ? kdk_iter_copy_temps(it) : KD_OK;
}

/* The name used in messages (default: s->op, else "kdk_iter"). Static string. */
static inline void kdk_iter_set_op_name(kdk_iter *it, const char *op) { it->op = op; }

/* Operands: all outputs, then all inputs; at most KDK_ITER_MAX_TENSORS. The
 * tensors are borrowed and must outlive the iterator. add_owned_input takes
 * over the caller's reference (for a temporary such as a wrapped scalar).
 * add_output_dtype: a new (NULL) output of a fixed dtype, whatever the common
 * dtype (argmax's int64 indices next to max's values). */
/* Errors (too many operands, an output after an input, a NULL input) are
 * recorded and returned by kdk_iter_build. The _slow functions are the
 * out-of-line part of the inline ones: call those. */
KDK_API void kdk_iter_add_output_slow(kdk_iter *it, kd_tensor *out, kd_dtype dtype);
KDK_API void kdk_iter_add_input_slow(kdk_iter *it, const kd_tensor *in);
static inline void kdk_iter_add_output_dtype(kdk_iter *it, kd_tensor *out, kd_dtype dtype) {
  int k = it->ntensors;
  if (k != it->noutputs || k >= KDK_ITER_MAX_TENSORS) { /* errors: recorded for build */
    kdk_iter_add_output_slow(it, out, dtype);
    return;
  }
  it->ntensors = k + 1;
  it->noutputs = k + 1;
  it->tensors[k] = out;
  it->originals[k] = NULL;
  it->out_dtype[k] = dtype;
}
static inline void kdk_iter_add_output(kdk_iter *it, kd_tensor *out) {
  kdk_iter_add_output_dtype(it, out, KD_DTYPE_UNDEFINED);
}
static inline void kdk_iter_add_input(kdk_iter *it, const kd_tensor *in) {
  int k = it->ntensors;
  if (!in || k >= KDK_ITER_MAX_TENSORS) { /* errors: recorded for build */
    kdk_iter_add_input_slow(it, in);
    return;
  }
  it->ntensors = k + 1;
  it->tensors[k] = (kd_tensor *)in;
  it->originals[k] = NULL;
  it->out_dtype[k] = KD_DTYPE_UNDEFINED;
}
KDK_API void kdk_iter_add_owned_input(kdk_iter *it, kd_tensor *in);

static inline void kdk_iter_set_flag(kdk_iter *it, unsigned bit, bool on) {
  if (on)
    it->flags |= bit;
  else
    it->flags &= ~bit;
}
/* PyTorch's TensorIteratorConfig options. Turning promotion on turns
 * check_all_same_dtype off, as in PyTorch. */
static inline void kdk_iter_promote_inputs_to_common_dtype(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_PROMOTE_INPUTS, on);
  if (on) it->flags &= ~(unsigned)KDK_ITER_F_CHECK_SAME_DTYPE;
}
static inline void kdk_iter_promote_integer_inputs_to_float(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_INT_TO_FLOAT, on);
}
static inline void kdk_iter_cast_common_dtype_to_outputs(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_CAST_OUTPUTS, on);
  if (on) it->flags &= ~(unsigned)KDK_ITER_F_CHECK_SAME_DTYPE;
}
static inline void kdk_iter_enforce_safe_casting_to_output(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_SAFE_CAST, on);
}
/* Every input and given output must have the same dtype ("Found dtype int64
 * but expected float32"). */
static inline void kdk_iter_check_all_same_dtype(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_CHECK_SAME_DTYPE, on);
}
static inline void kdk_iter_check_all_same_device(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_CHECK_SAME_DEVICE, on);
}
static inline void kdk_iter_resize_outputs(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_RESIZE_OUTPUTS, on);
}
/* Outputs may not overlap themselves (a stride 0 over more than one element)
 * or partly overlap an input (PyTorch's "unsupported operation" errors). */
static inline void kdk_iter_check_mem_overlap(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_CHECK_OVERLAP, on);
}
/* Iterate in row-major order of the broadcast shape (no reordering by
 * strides); new outputs are then contiguous. */
static inline void kdk_iter_enforce_linear_iteration(kdk_iter *it, bool on) {
  kdk_iter_set_flag(it, KDK_ITER_F_LINEAR, on);
}
/* New outputs get this dtype (unless declared per output). */
static inline void kdk_iter_declare_static_dtype(kdk_iter *it, kd_dtype dtype) {
  it->static_dtype = dtype;
}
/* The computation dtype, instead of computing it from the inputs; with
 * promote_inputs_to_common_dtype the inputs are converted to it (a sum of
 * int32 running in int64). */
static inline void kdk_iter_set_common_dtype(kdk_iter *it, kd_dtype dtype) {
  it->forced_common = dtype;
}
/* The iteration shape, instead of broadcasting (inputs and outputs must
 * broadcast to it; outputs are not resized). */
KDK_API void kdk_iter_declare_static_shape(kdk_iter *it, int ndim, const int64_t *shape);
/* A reduction over `dims` of the inputs' broadcast shape (n <= 0 or dims
 * NULL: all dims). See "Reductions and rows". Resize of outputs is implied
 * (outputs get the reduced shape, contiguous). */
KDK_API void kdk_iter_set_reduction(kdk_iter *it, const int64_t *dims, int n, bool keepdim);
/* Dimension `dim` (negative from the end) is iterated as a whole row (see
 * "Reductions and rows"); outputs keep the broadcast shape. */
KDK_API void kdk_iter_set_row_dim(kdk_iter *it, int64_t dim);

/* Builds the iterator: shapes, dtypes, casts, outputs, layout. Elementwise
 * iterators whose operands all have one shape, dtype and device and are
 * contiguous take a short path with the same result. Errors: see "Errors"
 * above; KD_EUNSUPPORTED for an iterator (or its s) initialised by headers
 * of another kit ABI. After an error, call kdk_iter_release. */
KDK_API kd_status kdk_iter_build(kdk_iter *it);

/* ---- Convenience builders (configure + build), as PyTorch's ---------------------
 * `out` is the output (NULL: structured output 0, or allocated when s is NULL). */

/* Elementwise a op b: promote inputs, cast to outputs, safe casting to a given
 * output. add, sub, mul, maximum, bitwise ops... */
KDK_API kd_status kdk_iter_build_binary_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                  const kd_tensor *b);
/* As binary_op, with integer (and bool) inputs promoted to the default float
 * dtype: div, atan2, pow with float results... */
KDK_API kd_status kdk_iter_build_binary_float_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                        const kd_tensor *b);
/* eq, lt, ...: inputs promoted to common_dtype; a new output is bool; a given
 * output keeps its dtype (cast from common_dtype unless it is bool, in which
 * case the loop writes bool directly: loops must handle a bool output). */
KDK_API kd_status kdk_iter_build_comparison_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                      const kd_tensor *b);
/* Elementwise f(a), PyTorch's build_borrowing_unary_op: output of a's dtype;
 * a given output must have a's dtype too (check_all_same_dtype: "Found dtype
 * float64 but expected uint8"), nothing is cast. neg, floor, sign, gelu... */
KDK_API kd_status kdk_iter_build_unary_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a);
/* PyTorch's build_borrowing_unary_float_op (sin, exp): integral inputs
 * converted to the default float dtype; a given output of another dtype gets
 * a temporary (cast_common_dtype_to_outputs) after the safe-casting check
 * ("result type float32 can't be cast to the desired output type int64"). */
KDK_API kd_status kdk_iter_build_unary_float_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a);
/* No inputs (fill, random): `out` must be given, or declare a static dtype /
 * shape before (s == NULL), or use a structured out/inplace output. */
KDK_API kd_status kdk_iter_build_nullary_op(kdk_iter *it, kd_tensor *out);
/* out = reduce(a) over dims (n <= 0: all), keepdim. out_dtype: the output's
 * dtype (KD_DTYPE_UNDEFINED: a's dtype; a given out keeps its own). The input
 * is not converted (use kdk_iter_set_common_dtype + promotion for that). */
KDK_API kd_status kdk_iter_build_reduce_op(kdk_iter *it, kd_tensor *out, const kd_tensor *a,
                                  const int64_t *dims, int n, bool keepdim, kd_dtype out_dtype);

/* A 0-dim wrapped-number tensor holding v (PyTorch's wrapped_scalar_tensor):
 * int -> int64, float -> float64, bool -> bool, complex -> complex128, marked
 * with kd_tensor_set_wrapped_number so that promotion treats it as a Python
 * scalar (int8 tensor + wrapped 1000 stays int8). The caller owns *out
 * (kdk_iter_add_owned_input hands it to an iterator). */
KDK_API kd_status kdk_iter_wrap_scalar(const kd_scalar *v, kd_tensor **out);


/* ---- Loops ------------------------------------------------------------------- */

/* Runs loop2d over every element; over threads (kdk_parallel_for) when
 * there are at least `grain` elements (<= 0: KDK_GRAIN_SIZE), else serially
 * on the calling thread. With a row (reduction / row dim) every call covers
 * whole rows (see "Reductions and rows"). Nothing on meta. */
KDK_API void kdk_iter_for_each(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t grain);
/* Always on the calling thread. */
KDK_API void kdk_iter_serial_for_each(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx);
/* The elements [begin, end) of the iteration order (rows: row indices), on
 * the calling thread: what one thread of kdk_iter_for_each runs. */
KDK_API void kdk_iter_serial_for_each_range(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx,
                                   int64_t begin, int64_t end);
/* Rows: the same as kdk_iter_for_each on an iterator with a row. */
KDK_API void kdk_iter_for_each_row(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t grain);
/* A reduction with one output and one input of the same dtype whose loop
 * writes out = op(row) for an associative op: like kdk_iter_for_each_row,
 * but when there is one row of at least `grain` elements, the row is cut
 * into one piece per thread, each reduced into a partial of the output's
 * dtype (loop called with data[0] = the partial), and the partials are
 * reduced into the output by one more loop call (data[1] = the partials,
 * size0 = their number). Otherwise (or for another layout) as
 * kdk_iter_for_each_row. At most 64 partials (no allocation). Returns KD_OK
 * (a status for future layouts that need memory). */
KDK_API kd_status kdk_iter_reduce_rows(const kdk_iter *it, kdk_iter_loop2d loop, void *ctx, int64_t grain);
/* One piece of a split row: elements [begin, begin + len) of the row;
 * data[k] is operand k's element `begin` of the row, strides[k] operand k's
 * byte stride along the row (0 for the outputs of a reduction: data[k] is
 * then their only element). `part` numbers the pieces from 0 in row order. */
typedef void (*kdk_iter_row_piece)(void *ctx, int part, char **data, const int64_t *strides,
                                  int64_t begin, int64_t len);
/* When the iterator has exactly one row, at least `grain` elements long
 * (<= 0: KDK_GRAIN_SIZE), and more than one thread is available outside a
 * parallel region: cuts the row into n consecutive pieces of about equal
 * length (2 <= n <= max_parts and at most one per thread, as
 * kdk_parallel_chunks counts them), runs piece(ctx, i, ...) once for each i
 * in [0, n) over threads and returns n when all have run. Otherwise calls
 * nothing and returns 0 (the caller then runs kdk_iter_for_each). The caller
 * keeps one partial per piece and combines them in the order of i. Nothing
 * on meta (returns 0). */
KDK_API int kdk_iter_split_row(const kdk_iter *it, kdk_iter_row_piece piece, void *ctx, int max_parts,
                      int64_t grain);

/* ---- Accessors (after a successful build) ------------------------------------ */

static inline int kdk_iter_ntensors(const kdk_iter *it) { return it->ntensors; }
static inline int kdk_iter_noutputs(const kdk_iter *it) { return it->noutputs; }
static inline int kdk_iter_ninputs(const kdk_iter *it) { return it->ntensors - it->noutputs; }
/* The iteration dims after reordering (dim 0 fastest) and coalescing, rows
 * excluded: a contiguous add has ndim 1 whatever the tensors' dims. */
static inline int kdk_iter_ndim(const kdk_iter *it) { return it->ndim; }
static inline const int64_t *kdk_iter_shape(const kdk_iter *it) { return it->shape; }
/* Byte stride of operand k along iteration dim d. */
static inline int64_t kdk_iter_stride(const kdk_iter *it, int k, int d) {
  return it->strides[d][k];
}
/* The broadcast shape of the inputs, in dim order (the reduction's input
 * shape). */
static inline int kdk_iter_full_ndim(const kdk_iter *it) { return it->full_ndim; }
static inline const int64_t *kdk_iter_full_shape(const kdk_iter *it) { return it->full_shape; }
static inline int64_t kdk_iter_numel(const kdk_iter *it) { return it->numel; }
/* Rows: the elements per row (has_row), and the number of rows. */
static inline bool kdk_iter_has_row(const kdk_iter *it) { return it->has_row; }
static inline int64_t kdk_iter_row_len(const kdk_iter *it) { return it->row_len; }
static inline int64_t kdk_iter_num_rows(const kdk_iter *it) { return it->outer_numel; }
/* The dtype the loops see for operand k (outputs first). */
static inline kd_dtype kdk_iter_dtype(const kdk_iter *it, int k) { return it->dtypes[k]; }
static inline kd_dtype kdk_iter_input_dtype(const kdk_iter *it, int j) {
  return it->dtypes[it->noutputs + j];
}
static inline kd_dtype kdk_iter_common_dtype(const kdk_iter *it) { return it->common_dtype; }
/* Address of operand k's first element (NULL on meta). */
static inline char *kdk_iter_data(const kdk_iter *it, int k) { return it->data[k]; }
/* The tensors: output k as the caller sees it (the real output, not the
 * temporary), input j as the loops read it (converted). Borrowed. */
static inline kd_tensor *kdk_iter_output(const kdk_iter *it, int k) {
  return it->originals[k] ? it->originals[k] : it->tensors[k];
}
static inline kd_tensor *kdk_iter_input(const kdk_iter *it, int j) {
  return it->tensors[it->noutputs + j];
}
static inline bool kdk_iter_is_meta(const kdk_iter *it) { return it->is_meta; }
/* The device the operands are on (after build; cpu before). */
static inline kd_device kdk_iter_device(const kdk_iter *it) { return it->device; }
/* One element, or one dimension where every operand has its element's size
 * as stride: the loops may treat all operands as flat arrays of numel. */
KDK_API bool kdk_iter_is_contiguous(const kdk_iter *it);
/* Operand k does not move (all its strides 0, e.g. a broadcast 0-dim input). */
KDK_API bool kdk_iter_is_scalar(const kdk_iter *it, int k);
/* The value of operand k when kdk_iter_is_scalar (its first element, in the
 * dtype the loops see). KD_EINVAL otherwise or on meta. */
KDK_API kd_status kdk_iter_scalar_value(const kdk_iter *it, int k, kd_scalar *out);
/* Removes input operand k (k >= noutputs) from the iterator, e.g. after
 * reading a scalar with kdk_iter_scalar_value so that a unary loop runs. */
KDK_API void kdk_iter_remove_operand(kdk_iter *it, int k);

KD_EXTERN_C_END

#endif
