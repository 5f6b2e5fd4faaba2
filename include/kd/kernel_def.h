/*
 * kernel_def.h: kernel definitions and kernel classes, as TensorFlow has them.
 *
 * A kernel definition says which operator a kernel class implements, on
 * which device type, under which type constraints ("T in [float32,
 * float64]"), with an optional label and a priority. A lookup by (operator,
 * device, the call's types, label) picks the matching definition of highest
 * priority. A kernel class is a factory: it makes a kernel object from a
 * construction context (schema, constant attributes, input and output
 * dtypes), which may refuse; the object's compute reads inputs and writes
 * outputs through a compute context. A prepared kernel does the lookup and
 * the construction once and then runs the object repeatedly, for graph
 * runtimes and interpreters.
 *
 * This registry is separate from the dispatch tables (dispatch.h): it is
 * looked up by graph runtimes ahead of time, not on every call.
 */
#ifndef KD_KERNEL_DEF_H
#define KD_KERNEL_DEF_H

#include "kd/common.h"
#include "kd/device.h"
#include "kd/dtype.h"
#include "kd/schema.h"
#include "kd/status.h"
#include "kd/value.h"

KD_EXTERN_C_BEGIN

/* "T in [float32, float64]". `name` is an argument of the operator's schema
 * (the constraint is on that tensor argument's dtype) or any other type name
 * the caller binds (kd_type_binding). */
typedef struct kd_type_constraint {
  const char *name;     /* copied at registration */
  kd_dtype_set allowed; /* not empty */
} kd_type_constraint;

/* A type name bound to a dtype for one lookup. */
typedef struct kd_type_binding {
  const char *name;
  kd_dtype dtype;
} kd_type_binding;

/* A named constant attribute given to construction (borrowed for the call;
 * a kernel that keeps one copies it). */
typedef struct kd_attr {
  const char *name;
  kd_value value;
} kd_attr;

typedef struct kd_kernel_construction kd_kernel_construction;
typedef struct kd_kernel_context kd_kernel_context;

#define KD_KERNEL_CLASS_API_VERSION 1

/* A kernel class: how to make, run and destroy its objects. Versioned as
 * kd/version.h says. Version 1: api_version, create, compute, destroy,
 * class_data. It is embedded by value in kd_kernel_def, so it can never
 * grow (that would move kd_kernel_def's later fields): it stays at
 * version 1, and what a kernel class needs later goes into a new versioned
 * struct that kd_kernel_def points to from an appended field. */
typedef struct kd_kernel_class {
  uint32_t api_version; /* KD_KERNEL_CLASS_API_VERSION (1 to it are accepted) */
  /* Makes an object. Returns KD_OK and sets *object, or an error (set with
   * kd_set_error) that refuses the construction; the lookup's caller gets it. */
  kd_status (*create)(void *class_data, const kd_kernel_construction *ctx, void **object);
  /* Runs the object: reads `inputs` (one borrowed value per argument),
   * writes `outputs` (one per return, None on entry; or through
   * kd_context_allocate_output / kd_context_set_output), and reports failure
   * with kd_context_fail. Called from one thread at a time per object. */
  void (*compute)(void *object, kd_kernel_context *ctx, const kd_value *inputs,
                  kd_value *outputs);
  /* Destroys an object made by create; may be NULL. */
  void (*destroy)(void *object);
  void *class_data; /* passed to create; the registrant keeps it alive */
} kd_kernel_class;

#define KD_KERNEL_DEF_API_VERSION 1

/* A kernel definition; copied by kd_kernel_def_register. Versioned as
 * kd/version.h says. Version 1: api_version, op, device, constraints,
 * nconstraints, host_memory, nhost_memory, label, priority, kernel_class
 * (a version-1 kd_kernel_class, by value), debug. */
typedef struct kd_kernel_def {
  uint32_t api_version;  /* KD_KERNEL_DEF_API_VERSION (1 to it are accepted) */
  const char *op;        /* "ns::name" or "ns::name.overload" of a defined operator */
  kd_device_type device;
  const kd_type_constraint *constraints;
  size_t nconstraints;
  const char *const *host_memory; /* names of arguments kept in host memory */
  size_t nhost_memory;
  const char *label;     /* NULL or "": unlabeled */
  int32_t priority;      /* higher wins */
  kd_kernel_class kernel_class;
  const char *debug;     /* where it was registered ("file.c:12"); may be NULL */
} kd_kernel_def;

typedef struct kd_kernel_def_reg kd_kernel_def_reg;

/* Registers a definition. KD_ENOTFOUND when the operator is not defined;
 * KD_EINVAL for a bad device, an empty constraint, a constraint or host
 * memory name that is neither an argument nor a plain identifier, a missing
 * create or compute, an api_version of the definition or of its kernel
 * class outside 1..current (the message names the struct, the version found
 * and the versions accepted). The caller owns *out (release it
 * with kd_kernel_def_release); prepared kernels made from the definition
 * keep it alive after release. */
KD_API kd_status kd_kernel_def_register(const kd_kernel_def *def, kd_kernel_def_reg **out);
KD_API void kd_kernel_def_release(kd_kernel_def_reg *reg);

/* Finds the definition for (operator, device, bindings, label): a
 * definition matches when its device is `device`, its label equals `label`
 * (NULL and "" both mean unlabeled: labeled definitions are used only when
 * asked for by name), and every constraint's name is bound to an allowed
 * dtype. The highest priority wins. KD_ENOTFOUND: "No kernel for 'ns::op'
 * on device 'opencl' with T=float16. Registered: device='cpu'; T in
 * [float32, float64]". KD_EEXIST: two matches share the highest priority
 * (both named). On success *out is borrowed (valid while registered). */
KD_API kd_status kd_kernel_def_find(const char *op, kd_device_type device,
                                    const kd_type_binding *bindings, size_t nbindings,
                                    const char *label, const kd_kernel_def **out);

/* ---- Construction context ------------------------------------------------ */

KD_API const kd_schema *kd_construction_schema(const kd_kernel_construction *ctx);
KD_API const kd_kernel_def *kd_construction_def(const kd_kernel_construction *ctx);
/* The constant attribute `name`, or NULL. Borrowed. */
KD_API const kd_value *kd_construction_attr(const kd_kernel_construction *ctx, const char *name);
/* The dtype bound to `name` (a constraint or an argument), or KD_DTYPE_UNDEFINED. */
KD_API kd_dtype kd_construction_type(const kd_kernel_construction *ctx, const char *name);
KD_API size_t kd_construction_num_inputs(const kd_kernel_construction *ctx);
KD_API kd_dtype kd_construction_input_dtype(const kd_kernel_construction *ctx, size_t i);
KD_API size_t kd_construction_num_outputs(const kd_kernel_construction *ctx);
KD_API kd_dtype kd_construction_output_dtype(const kd_kernel_construction *ctx, size_t i);

/* ---- Compute context ------------------------------------------------------ */

/* Input i (a tensor argument; NULL for a None or a non-tensor argument) and
 * its boxed form (borrowed, valid during compute). */
KD_API kd_tensor *kd_context_input(const kd_kernel_context *ctx, size_t i);
KD_API const kd_value *kd_context_input_value(const kd_kernel_context *ctx, size_t i);
KD_API size_t kd_context_num_inputs(const kd_kernel_context *ctx);
KD_API size_t kd_context_num_outputs(const kd_kernel_context *ctx);
/* Allocates output i as a new contiguous tensor of the output's dtype on the
 * definition's device (index 0) and records it; *out is borrowed (the
 * context's caller gets the reference). KD_ERANGE for a bad index; KD_ESTATE
 * when the output's dtype was left undefined; the errors of kd_tensor_empty. */
KD_API kd_status kd_context_allocate_output(kd_kernel_context *ctx, size_t i, int ndim,
                                            const int64_t *sizes, kd_tensor **out);
/* Sets output i to a copy of *value (retained). KD_ERANGE for a bad index. */
KD_API kd_status kd_context_set_output(kd_kernel_context *ctx, size_t i, const kd_value *value);
/* Records a failure: the run returns `status` with this message. */
KD_API void kd_context_fail(kd_kernel_context *ctx, kd_status status, const char *fmt, ...)
    KD_PRINTF_LIKE(3, 4);

/* ---- Prepared kernels ----------------------------------------------------- */

typedef struct kd_prepared kd_prepared;

/* Resolves and constructs once. `input_dtypes` (one per schema argument;
 * KD_DTYPE_UNDEFINED for non-tensor arguments) bind the arguments' names;
 * `bindings` bind other names; `output_dtypes` (one per return) are the
 * dtypes kd_context_allocate_output uses (KD_DTYPE_UNDEFINED: the kernel
 * sets that output with kd_context_set_output). `attrs` are lent to the
 * construction only (a kernel that keeps one copies it). KD_EINVAL
 * when ninputs or noutputs differ from the schema's counts; the errors of
 * kd_kernel_def_find and of the class's create. The caller owns *out
 * (kd_prepared_free); *out is NULL on error. */
KD_API kd_status kd_prepared_new(const char *op, kd_device_type device, const kd_dtype *input_dtypes,
                                 size_t ninputs, const kd_type_binding *bindings, size_t nbindings,
                                 const kd_dtype *output_dtypes, size_t noutputs,
                                 const kd_attr *attrs, size_t nattrs, const char *label,
                                 kd_prepared **out);

/* Runs the prepared kernel: `inputs` (one value per argument, borrowed),
 * `outputs` (one per return; the caller owns and destroys them; None on
 * error). No lookup, no allocation beyond what the kernel does. Checks that
 * tensor inputs have the dtypes the kernel was prepared for (KD_ETYPE). */
KD_API kd_status kd_prepared_run(kd_prepared *prepared, const kd_value *inputs, kd_value *outputs);

/* kd_prepared_run without the argument checks, for runtimes that checked
 * their graph once (as TensorFlow's executor does): the caller guarantees
 * non-NULL arguments and tensor inputs of the prepared dtypes; anything else
 * is undefined behaviour. Same results and ownership as kd_prepared_run. */
KD_API kd_status kd_prepared_run_unchecked(kd_prepared *prepared, const kd_value *inputs,
                                           kd_value *outputs);

/* The definition chosen. Borrowed, valid while the prepared kernel lives. */
KD_API const kd_kernel_def *kd_prepared_def(const kd_prepared *prepared);
/* Destroys the object and drops the definition. NULL is ignored. */
KD_API void kd_prepared_free(kd_prepared *prepared);

KD_EXTERN_C_END

#endif /* KD_KERNEL_DEF_H */
