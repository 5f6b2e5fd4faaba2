/*
 * kernel_def.c: TensorFlow-style kernel definitions, kernel classes and
 * prepared kernels. Definitions live in one list under a mutex: lookups are
 * rare (prepared kernels do them once), so the list is simple on purpose.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>

#include "core/tensor_impl.h"
#include "kd/dispatch.h"
#include "kd/kernel_def.h"

/* The versions of kd_kernel_def and kd_kernel_class (core/internal.h). */
static const size_t kernel_def_ends[] = {KD__ABI_END(kd_kernel_def, debug)};
KD__ABI_TABLE(kd__abi_kernel_def, kd_kernel_def, KD_KERNEL_DEF_API_VERSION, kernel_def_ends);

static const size_t kernel_class_ends[] = {KD__ABI_END(kd_kernel_class, class_data)};
KD__ABI_TABLE(kd__abi_kernel_class, kd_kernel_class, KD_KERNEL_CLASS_API_VERSION,
              kernel_class_ends);

/* kd_kernel_class is embedded by value in kd_kernel_def: it may never grow. */
_Static_assert(KD_KERNEL_CLASS_API_VERSION == 1,
               "kd_kernel_class is embedded in kd_kernel_def and cannot grow");

struct kd_kernel_def_reg {
  _Atomic int64_t refs; /* the registration and every prepared kernel made from it */
  bool registered;      /* under def_lock */
  kd_kernel_def def;    /* strings and arrays point at the copies below */
  kd_op *op;
  char *op_name, *label, *debug;
  kd_type_constraint *constraints;
  char **host_memory;
  struct kd_kernel_def_reg *next; /* under def_lock */
};

static pthread_mutex_t def_lock = PTHREAD_MUTEX_INITIALIZER;
static kd_kernel_def_reg *defs;

static void reg_free(kd_kernel_def_reg *r) {
  for (size_t i = 0; r->constraints && i < r->def.nconstraints; i++)
    kd__free((char *)r->constraints[i].name);
  kd__free(r->constraints);
  for (size_t i = 0; r->host_memory && i < r->def.nhost_memory; i++) kd__free(r->host_memory[i]);
  kd__free(r->host_memory);
  kd__free(r->op_name);
  kd__free(r->label);
  kd__free(r->debug);
  kd__free(r);
}

static void reg_unref(kd_kernel_def_reg *r) {
  if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) reg_free(r);
}

static bool is_identifier(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

static bool same_label(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

kd_status kd_kernel_def_register(const kd_kernel_def *def, kd_kernel_def_reg **out) {
  if (out) *out = NULL;
  if (!def || !out) return kd_set_error(KD_EINVAL, "kd_kernel_def_register: NULL argument");
  /* Any accepted version, read into this version's layout; then its kernel
   * class the same way (embedded, so it is as long as the definition's
   * version says). */
  kd_kernel_def copy;
  char where[300];
  snprintf(where, sizeof where, "kd_kernel_def_register(%.200s)",
           def->api_version >= 1 && def->op ? def->op : "?");
  kd_status vst = kd__abi_copy(&kd__abi_kernel_def, def, &copy, where, NULL);
  if (vst == KD_OK) {
    kd_kernel_class cls = copy.kernel_class;
    vst = kd__abi_copy(&kd__abi_kernel_class, &cls, &copy.kernel_class, where, NULL);
  }
  if (vst) return vst;
  def = &copy;
  if (!def->op) return kd_set_error(KD_EINVAL, "kd_kernel_def_register: NULL operator name");
  if (!def->kernel_class.create || !def->kernel_class.compute)
    return kd_set_error(KD_EINVAL, "kernel definition for '%s': the kernel class needs create and compute",
                        def->op);
  if (def->device < 0 || def->device >= KD_DEVICE_TYPE_COUNT)
    return kd_set_error(KD_EINVAL, "kernel definition for '%s': invalid device type %d", def->op,
                        (int)def->device);
  kd_op *op;
  kd_status st = kd_op_find(def->op, NULL, &op);
  if (st) return st;
  const kd_schema *schema = kd_op_schema(op);
  if (!schema)
    return kd_set_error(KD_ENOTFOUND, "kernel definition for '%s': the operator is not defined",
                        def->op);
  for (size_t i = 0; i < def->nconstraints; i++) {
    const kd_type_constraint *c = &def->constraints[i];
    if (!is_identifier(c->name))
      return kd_set_error(KD_EINVAL, "kernel definition for '%s': bad constraint name '%s'",
                          def->op, c->name ? c->name : "(null)");
    if (!(c->allowed & KD_ALL_DTYPES))
      return kd_set_error(KD_EINVAL, "kernel definition for '%s': constraint '%s' allows no dtype",
                          def->op, c->name);
  }
  for (size_t i = 0; i < def->nhost_memory; i++) {
    bool found = false;
    for (size_t a = 0; a < kd_schema_num_arguments(schema); a++)
      if (def->host_memory[i] && !strcmp(def->host_memory[i], kd_argument_name(kd_schema_argument(schema, a))))
        found = true;
    if (!found)
      return kd_set_error(KD_EINVAL,
                          "kernel definition for '%s': host memory argument '%s' is not an "
                          "argument of the schema",
                          def->op, def->host_memory[i] ? def->host_memory[i] : "(null)");
  }
  kd_kernel_def_reg *r = kd__calloc(1, sizeof *r);
  if (!r) return kd__oom("kernel definition");
  r->def = *def;
  r->op = op;
  atomic_init(&r->refs, 1);
  bool oom = !(r->op_name = kd__strdup(kd_op_name(op))) || (def->label && !(r->label = kd__strdup(def->label))) ||
             (def->debug && !(r->debug = kd__strdup(def->debug)));
  if (!oom && def->nconstraints) {
    r->constraints = kd__calloc(def->nconstraints, sizeof *r->constraints);
    oom = !r->constraints;
    for (size_t i = 0; !oom && i < def->nconstraints; i++) {
      r->constraints[i].allowed = def->constraints[i].allowed & KD_ALL_DTYPES;
      oom = !(r->constraints[i].name = kd__strdup(def->constraints[i].name));
    }
  }
  if (!oom && def->nhost_memory) {
    r->host_memory = kd__calloc(def->nhost_memory, sizeof *r->host_memory);
    oom = !r->host_memory;
    for (size_t i = 0; !oom && i < def->nhost_memory; i++)
      oom = !(r->host_memory[i] = kd__strdup(def->host_memory[i]));
  }
  if (oom) {
    reg_free(r);
    return kd__oom("kernel definition");
  }
  r->def.op = r->op_name;
  r->def.label = r->label;
  r->def.debug = r->debug;
  r->def.constraints = r->constraints;
  r->def.host_memory = (const char *const *)r->host_memory;
  pthread_mutex_lock(&def_lock);
  r->registered = true;
  r->next = defs;
  defs = r;
  pthread_mutex_unlock(&def_lock);
  *out = r;
  return KD_OK;
}

void kd_kernel_def_release(kd_kernel_def_reg *reg) {
  if (!reg) return;
  pthread_mutex_lock(&def_lock);
  for (kd_kernel_def_reg **p = &defs; *p; p = &(*p)->next)
    if (*p == reg) {
      *p = reg->next;
      break;
    }
  reg->registered = false;
  pthread_mutex_unlock(&def_lock);
  reg_unref(reg);
}

/* The dtype bound to `name`, or KD_DTYPE_UNDEFINED. */
static kd_dtype bound(const kd_type_binding *b, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (b[i].name && !strcmp(b[i].name, name)) return b[i].dtype;
  return KD_DTYPE_UNDEFINED;
}

static bool matches(const kd_kernel_def_reg *r, const kd_op *op, kd_device_type device,
                    const kd_type_binding *b, size_t nb, const char *label) {
  if (r->op != op || r->def.device != device || !same_label(r->def.label, label)) return false;
  for (size_t i = 0; i < r->def.nconstraints; i++) {
    kd_dtype d = bound(b, nb, r->constraints[i].name);
    if (!kd_dtype_valid(d) || !(r->constraints[i].allowed & KD_DTYPE_BIT(d))) return false;
  }
  return true;
}

static void describe_def(kd__fmt *f, const kd_kernel_def_reg *r) {
  kd__fmt_printf(f, "device='%s'", kd_device_type_name(r->def.device));
  for (size_t i = 0; i < r->def.nconstraints; i++) {
    kd__fmt_printf(f, "; %s in ", r->constraints[i].name);
    kd__fmt_dtype_set(f, r->constraints[i].allowed);
  }
  if (r->def.label && *r->def.label) kd__fmt_printf(f, "; label='%s'", r->def.label);
  if (r->def.priority) kd__fmt_printf(f, "; priority %d", (int)r->def.priority);
}

/* Under def_lock. Takes a reference on the result when `ref`. */
static kd_status find_locked(const kd_op *op, kd_device_type device, const kd_type_binding *b,
                             size_t nb, const char *label, kd_kernel_def_reg **out) {
  kd_kernel_def_reg *best = NULL, *tie = NULL;
  for (kd_kernel_def_reg *r = defs; r; r = r->next) {
    if (!matches(r, op, device, b, nb, label)) continue;
    if (!best || r->def.priority > best->def.priority) {
      best = r;
      tie = NULL;
    } else if (r->def.priority == best->def.priority) {
      tie = r;
    }
  }
  if (best && tie)
    return kd_set_error(KD_EEXIST,
                        "two kernels for '%s' on device '%s' match at priority %d: the one "
                        "registered at %s and the one registered at %s",
                        kd_op_name(op), kd_device_type_name(device), (int)best->def.priority,
                        tie->def.debug ? tie->def.debug : "?", best->def.debug ? best->def.debug : "?");
  if (best) {
    *out = best;
    return KD_OK;
  }
  char text[1024];
  kd__fmt f = kd__fmt_init(text, sizeof text);
  kd__fmt_printf(&f, "No kernel for '%s' on device '%s'", kd_op_name(op), kd_device_type_name(device));
  for (size_t i = 0; i < nb; i++)
    kd__fmt_printf(&f, "%s%s=%s", i ? ", " : " with ", b[i].name ? b[i].name : "?",
                   kd_dtype_name(b[i].dtype));
  if (label && *label) kd__fmt_printf(&f, " and label '%s'", label);
  kd__fmt_puts(&f, ". Registered:");
  bool any = false;
  for (kd_kernel_def_reg *r = defs; r; r = r->next)
    if (r->op == op) {
      kd__fmt_puts(&f, any ? " | " : " ");
      describe_def(&f, r);
      any = true;
    }
  if (!any) kd__fmt_puts(&f, " (none)");
  return kd_set_error(KD_ENOTFOUND, "%s", text);
}

kd_status kd_kernel_def_find(const char *op_name, kd_device_type device,
                             const kd_type_binding *bindings, size_t nbindings, const char *label,
                             const kd_kernel_def **out) {
  if (!op_name || !out) return kd_set_error(KD_EINVAL, "kd_kernel_def_find: NULL argument");
  *out = NULL;
  kd_op *op;
  kd_status st = kd_op_find(op_name, NULL, &op);
  if (st) return st;
  kd_kernel_def_reg *r;
  pthread_mutex_lock(&def_lock);
  st = find_locked(op, device, bindings, nbindings, label, &r);
  pthread_mutex_unlock(&def_lock);
  if (st == KD_OK) *out = &r->def;
  return st;
}

/* ---- Contexts ----------------------------------------------------------------- */

struct kd_kernel_construction {
  const kd_kernel_def_reg *reg;
  const kd_schema *schema;
  const kd_type_binding *bindings;
  size_t nbindings;
  const kd_attr *attrs;
  size_t nattrs;
  const kd_dtype *inputs, *outputs;
  size_t ninputs, noutputs;
};

const kd_schema *kd_construction_schema(const kd_kernel_construction *c) { return c->schema; }
const kd_kernel_def *kd_construction_def(const kd_kernel_construction *c) { return &c->reg->def; }

const kd_value *kd_construction_attr(const kd_kernel_construction *c, const char *name) {
  for (size_t i = 0; name && i < c->nattrs; i++)
    if (c->attrs[i].name && !strcmp(c->attrs[i].name, name)) return &c->attrs[i].value;
  return NULL;
}

kd_dtype kd_construction_type(const kd_kernel_construction *c, const char *name) {
  return name ? bound(c->bindings, c->nbindings, name) : KD_DTYPE_UNDEFINED;
}

size_t kd_construction_num_inputs(const kd_kernel_construction *c) { return c->ninputs; }
size_t kd_construction_num_outputs(const kd_kernel_construction *c) { return c->noutputs; }
kd_dtype kd_construction_input_dtype(const kd_kernel_construction *c, size_t i) {
  return i < c->ninputs ? c->inputs[i] : KD_DTYPE_UNDEFINED;
}
kd_dtype kd_construction_output_dtype(const kd_kernel_construction *c, size_t i) {
  return i < c->noutputs ? c->outputs[i] : KD_DTYPE_UNDEFINED;
}

struct kd_kernel_context {
  const kd_prepared *prepared;
  const kd_value *inputs;
  kd_value *outputs;
  kd_status status;
};

struct kd_prepared {
  void (*compute)(void *object, kd_kernel_context *ctx, const kd_value *in, kd_value *out);
  void *object;
  kd_kernel_def_reg *reg; /* one reference */
  size_t ninputs, noutputs;
  kd_dtype dtypes[]; /* ninputs input dtypes, then noutputs output dtypes */
};

kd_tensor *kd_context_input(const kd_kernel_context *ctx, size_t i) {
  if (i >= ctx->prepared->ninputs || ctx->inputs[i].tag != KD_VALUE_TENSOR) return NULL;
  return ctx->inputs[i].u.t;
}

const kd_value *kd_context_input_value(const kd_kernel_context *ctx, size_t i) {
  return i < ctx->prepared->ninputs ? &ctx->inputs[i] : NULL;
}

size_t kd_context_num_inputs(const kd_kernel_context *ctx) { return ctx->prepared->ninputs; }
size_t kd_context_num_outputs(const kd_kernel_context *ctx) { return ctx->prepared->noutputs; }

kd_status kd_context_allocate_output(kd_kernel_context *ctx, size_t i, int ndim,
                                     const int64_t *sizes, kd_tensor **out) {
  const kd_prepared *p = ctx->prepared;
  if (out) *out = NULL;
  if (i >= p->noutputs)
    return kd_set_error(KD_ERANGE, "%s: output %zu out of range: the operator has %zu outputs",
                        p->reg->def.op, i, p->noutputs);
  kd_dtype dt = p->dtypes[p->ninputs + i];
  if (!kd_dtype_valid(dt))
    return kd_set_error(KD_ESTATE,
                        "%s: output %zu has no dtype (it was prepared as undefined): set it with "
                        "kd_context_set_output",
                        p->reg->def.op, i);
  kd_tensor *t;
  kd_device dev = {p->reg->def.device, 0};
  kd_status st = kd_tensor_empty(ndim, sizes, dt, dev, &t);
  if (st) return st;
  kd_value_destroy(&ctx->outputs[i]);
  ctx->outputs[i] = kd_value_tensor(t);
  kd_tensor_release(t);
  if (out) *out = t;
  return KD_OK;
}

kd_status kd_context_set_output(kd_kernel_context *ctx, size_t i, const kd_value *value) {
  const kd_prepared *p = ctx->prepared;
  if (i >= p->noutputs || !value)
    return kd_set_error(KD_ERANGE, "%s: output %zu out of range: the operator has %zu outputs",
                        p->reg->def.op, i, p->noutputs);
  kd_value_destroy(&ctx->outputs[i]);
  kd_value_copy(&ctx->outputs[i], value);
  return KD_OK;
}

void kd_context_fail(kd_kernel_context *ctx, kd_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kd_set_errorv(status, fmt, ap);
  va_end(ap);
  ctx->status = status == KD_OK ? KD_EINTERNAL : status;
}

/* ---- Prepared kernels ----------------------------------------------------------- */

kd_status kd_prepared_new(const char *op_name, kd_device_type device, const kd_dtype *input_dtypes,
                          size_t ninputs, const kd_type_binding *bindings, size_t nbindings,
                          const kd_dtype *output_dtypes, size_t noutputs, const kd_attr *attrs,
                          size_t nattrs, const char *label, kd_prepared **out) {
  if (!out) return kd_set_error(KD_EINVAL, "kd_prepared_new: NULL out");
  *out = NULL;
  if (!op_name) return kd_set_error(KD_EINVAL, "kd_prepared_new: NULL operator name");
  kd_op *op;
  kd_status st = kd_op_find(op_name, NULL, &op);
  if (st) return st;
  const kd_schema *schema = kd_op_schema(op);
  if (!schema) return kd_set_error(KD_ENOTFOUND, "'%s' is not defined", op_name);
  size_t nargs = kd_schema_num_arguments(schema), nrets = kd_schema_num_returns(schema);
  if (ninputs != nargs || noutputs != nrets || (ninputs && !input_dtypes) ||
      (noutputs && !output_dtypes))
    return kd_set_error(KD_EINVAL,
                        "kd_prepared_new(%s): expected %zu input and %zu output dtypes, got %zu "
                        "and %zu",
                        kd_op_name(op), nargs, nrets, ninputs, noutputs);
  /* Bindings: the tensor arguments' names, then the caller's. */
  kd_type_binding all[64 + 16];
  size_t nall = 0;
  for (size_t i = 0; i < nargs && nall < 64; i++)
    if (kd_dtype_valid(input_dtypes[i]))
      all[nall++] = (kd_type_binding){kd_argument_name(kd_schema_argument(schema, i)), input_dtypes[i]};
  for (size_t i = 0; i < nbindings && nall < KD__ARRAY_SIZE(all); i++) all[nall++] = bindings[i];

  kd_prepared *p = kd__calloc(1, sizeof *p + (ninputs + noutputs) * sizeof(kd_dtype));
  if (!p) return kd__oom("prepared kernel");
  p->ninputs = ninputs;
  p->noutputs = noutputs;
  for (size_t i = 0; i < ninputs; i++) p->dtypes[i] = input_dtypes[i];
  for (size_t i = 0; i < noutputs; i++) p->dtypes[ninputs + i] = output_dtypes[i];
  pthread_mutex_lock(&def_lock);
  st = find_locked(op, device, all, nall, label, &p->reg);
  if (st == KD_OK) atomic_fetch_add_explicit(&p->reg->refs, 1, memory_order_relaxed);
  pthread_mutex_unlock(&def_lock);
  if (st == KD_OK) {
    kd_kernel_construction c = {p->reg, schema, all, nall, attrs, nattrs,
                                p->dtypes, p->dtypes + ninputs, ninputs, noutputs};
    const kd_kernel_class *k = &p->reg->def.kernel_class;
    p->compute = k->compute;
    st = k->create(k->class_data, &c, &p->object);
  }
  if (st) {
    p->object = NULL;
    kd_prepared_free(p);
    return st;
  }
  *out = p;
  return KD_OK;
}

/* The error paths of kd_prepared_run, out of the way of the hot path. */
static kd_status __attribute__((noinline, cold))
prepared_bad_input(const kd_prepared *p, const kd_value *inputs) {
  for (size_t i = 0; i < p->ninputs; i++) {
    kd_dtype want = p->dtypes[i];
    if (want == KD_DTYPE_UNDEFINED ||
        (inputs[i].tag == KD_VALUE_TENSOR && inputs[i].u.t->dtype == want))
      continue;
    return kd_set_error(KD_ETYPE, "%s: input %zu was prepared as a %s tensor, got %s",
                        p->reg->def.op, i, kd_dtype_name(want),
                        inputs[i].tag == KD_VALUE_TENSOR
                            ? kd_dtype_name(kd_tensor_dtype(inputs[i].u.t))
                            : kd_value_tag_name(inputs[i].tag));
  }
  return KD_OK;
}

static kd_status __attribute__((noinline, cold))
prepared_failed(const kd_prepared *p, kd_value *outputs, kd_status st) {
  for (size_t i = 0; i < p->noutputs; i++) kd_value_destroy(&outputs[i]);
  return st;
}

kd_status kd_prepared_run(kd_prepared *p, const kd_value *inputs, kd_value *outputs) {
  if (__builtin_expect(!p || (p->ninputs && !inputs) || (p->noutputs && !outputs), 0))
    return kd_set_error(KD_EINVAL, "kd_prepared_run: NULL argument");
  /* The dtype checks, as a flag: one branch for all of them. */
  bool bad = false;
  for (size_t i = 0; i < p->ninputs; i++) {
    kd_dtype want = p->dtypes[i];
    bad |= want != KD_DTYPE_UNDEFINED &&
           (inputs[i].tag != KD_VALUE_TENSOR || inputs[i].u.t->dtype != want);
  }
  if (__builtin_expect(bad, 0)) return prepared_bad_input(p, inputs);
  for (size_t i = 0; i < p->noutputs; i++) outputs[i] = kd_value_none();
  kd_kernel_context ctx = {p, inputs, outputs, KD_OK};
  p->compute(p->object, &ctx, inputs, outputs);
  if (__builtin_expect(ctx.status != KD_OK, 0)) return prepared_failed(p, outputs, ctx.status);
  return KD_OK;
}

kd_status kd_prepared_run_unchecked(kd_prepared *p, const kd_value *inputs, kd_value *outputs) {
  for (size_t i = 0; i < p->noutputs; i++) outputs[i] = kd_value_none();
  kd_kernel_context ctx = {p, inputs, outputs, KD_OK};
  p->compute(p->object, &ctx, inputs, outputs);
  if (__builtin_expect(ctx.status != KD_OK, 0)) return prepared_failed(p, outputs, ctx.status);
  return KD_OK;
}

const kd_kernel_def *kd_prepared_def(const kd_prepared *p) { return &p->reg->def; }

void kd_prepared_free(kd_prepared *p) {
  if (!p) return;
  if (p->object && p->reg->def.kernel_class.destroy) p->reg->def.kernel_class.destroy(p->object);
  if (p->reg) reg_unref(p->reg);
  kd__free(p);
}
