/*
 * gen.c: kdgen's writers. From a validated model to the files listed in
 * docs/CODEGEN.md: per operator name a public header (entry points), a
 * dispatch header (direct calls) and a native header (what implementers
 * write), and four C files (entry points, direct calls, boxed adapters,
 * registration with its wrappers).
 *
 * Output is deterministic: everything follows the order of the YAML file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_impl.h"
#include "gen_select.h"
#include "kd/dispatch.h"
#include "kd/memory.h"


/* ---- The C view of one function ------------------------------------------ */

static const char *const c_keywords[] = {
    "auto",     "break",   "case",     "char",   "const",    "continue", "default",
    "do",       "double",  "else",     "enum",   "extern",   "float",    "for",
    "goto",     "if",      "inline",   "int",    "long",     "register", "restrict",
    "return",   "short",   "signed",   "sizeof", "static",   "struct",   "switch",
    "typedef",  "union",   "unsigned", "void",   "volatile", "while",    "bool",
    "true",     "false",   NULL};

static void c_name(char *dst, size_t cap, const char *name) {
  bool kw = false;
  for (const char *const *k = c_keywords; *k; k++)
    if (!strcmp(*k, name)) kw = true;
  snprintf(dst, cap, "%s%s", name, kw ? "_" : "");
}

static const char *alias_set(const kd_argument *a) {
  const kd_alias_info *al = kd_argument_alias(a);
  if (!al || kd_alias_num_before(al) == 0) return NULL;
  return kd_alias_before(al, 0);
}

bool kdg_fill_cfunc(const kdg_func *f, const char *ns, kdg_cfunc *c) {
  memset(c, 0, sizeof *c);
  c->f = f;
  c->bad_alias = c->bad_ret = -1;
  kdg_entry_name(c->ename, sizeof c->ename, f->cname);
  const kd_schema *s = f->schema;
  snprintf(c->qualified, sizeof c->qualified, "%s::%s%s%s", ns, f->name, *f->overload ? "." : "",
           f->overload);
  size_t na = kd_schema_num_arguments(s), nr = kd_schema_num_returns(s);
  if (na > KDG_MAXP || nr > KDG_MAXR) return false;
  size_t pos = 0;
  pos += (size_t)snprintf(c->sig + pos, sizeof c->sig - pos, "(");
  for (size_t i = 0; i < na; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    kdg_cparam *p = &c->p[c->np++];
    c_name(p->name, sizeof p->name, kd_argument_name(a));
    p->kind = kdg_ckind_of(kd_argument_type(a));
    p->arg = a;
    p->is_out = f->kind == KDG_OUT && kd_argument_is_write(a) && kd_argument_kwarg_only(a);
    p->scalar_default = p->kind == KDG_C_SCALAR && kd_argument_default(a) != NULL;
    char t[256];
    kd_type_format(kd_argument_type(a), t, sizeof t);
    pos += (size_t)snprintf(c->sig + pos, sizeof c->sig - pos, "%s%s", i ? ", " : "", t);
  }
  pos += (size_t)snprintf(c->sig + pos, sizeof c->sig - pos, ") -> %s", nr == 1 ? "" : "(");
  for (size_t i = 0; i < nr; i++) {
    const kd_argument *r = kd_schema_return(s, i);
    kdg_cret *cr = &c->r[c->nr++];
    cr->kind = kdg_ckind_of(kd_argument_type(r));
    cr->alias_of = -1;
    const char *set = alias_set(r);
    if (set && kd_argument_is_write(r)) {
      for (int j = 0; j < c->np; j++) {
        const char *aset = alias_set(c->p[j].arg);
        if (aset && !strcmp(aset, set)) cr->alias_of = j;
      }
      if (cr->alias_of < 0 && c->bad_alias < 0) c->bad_alias = (int)i;
    }
    const char *rn = kd_argument_name(r);
    if (rn && *rn)
      c_name(cr->name, sizeof cr->name, rn);
    else if (nr == 1)
      snprintf(cr->name, sizeof cr->name, "out");
    else
      snprintf(cr->name, sizeof cr->name, "out%zu", i);
    for (int j = 0; j < c->np; j++)
      if (!strcmp(c->p[j].name, cr->name)) strncat(cr->name, "_out", sizeof cr->name - strlen(cr->name) - 1);
    if (cr->alias_of < 0) {
      c->nouts++;
      if (!kdg_ctype_of(cr->kind)->ret && c->bad_ret < 0) c->bad_ret = (int)i;
    }
    char t[256];
    kd_type_format(kd_argument_type(r), t, sizeof t);
    pos += (size_t)snprintf(c->sig + pos, sizeof c->sig - pos, "%s%s", i ? ", " : "", t);
  }
  snprintf(c->sig + pos, sizeof c->sig - pos, "%s", nr == 1 ? "" : ")");
  return true;
}

bool kdg_build_cfunc(const kdg_func *f, const char *ns, kdg_cfunc *c, kdg_diag *d, const char *path) {
  if (!kdg_fill_cfunc(f, ns, c)) {
    kdg_error(d, path, f->line, "'%s' has too many arguments or returns for kdgen", f->func);
    return false;
  }
  if (c->bad_alias >= 0 && (c->bad_ret < 0 || c->bad_alias <= c->bad_ret)) {
    const char *set = alias_set(kd_schema_return(f->schema, (size_t)c->bad_alias));
    kdg_error(d, path, f->line, "'%s': return %d aliases '%s', which no argument has", f->func,
              c->bad_alias, set);
    return false;
  }
  if (c->bad_ret >= 0) {
    char t[256];
    kd_type_format(kd_argument_type(kd_schema_return(f->schema, (size_t)c->bad_ret)), t, sizeof t);
    /* Not an error: the rest of the file generates (PyTorch's own has a few
     * such operators). */
    kdg_note(d, path, f->line, "'%s': not generated: kdgen cannot return a '%s'", f->qualified, t);
    return false;
  }
  c->ok = true;
  return true;
}

void kdg_print_param(kdg_buf *b, const char *sep, kdg_ckind kind, const char *name) {
  const char *t = kdg_ctype_of(kind)->param;
  kdg_printf(b, "%s%s%s%s", sep, t, t[strlen(t) - 1] == '*' ? "" : " ", name);
}

/* "kd_tensor *self, kd_tensor *other, const kd_scalar *alpha, kd_tensor **out" */
void kdg_print_params(kdg_buf *b, const kdg_cfunc *c, bool with_outs) {
  int n = 0;
  for (int i = 0; i < c->np; i++) kdg_print_param(b, n++ ? ", " : "", c->p[i].kind, c->p[i].name);
  if (with_outs)
    for (int i = 0; i < c->nr; i++) {
      if (c->r[i].alias_of >= 0) continue;
      kdg_printf(b, "%s%s%s", n++ ? ", " : "", kdg_ctype_of(c->r[i].kind)->ret, c->r[i].name);
    }
  if (!n) kdg_printf(b, "void");
}

/* "self, other, alpha, out" */
void kdg_print_call_args(kdg_buf *b, const kdg_cfunc *c, bool with_outs) {
  int n = 0;
  for (int i = 0; i < c->np; i++) kdg_printf(b, "%s%s", n++ ? ", " : "", c->p[i].name);
  if (with_outs)
    for (int i = 0; i < c->nr; i++)
      if (c->r[i].alias_of < 0) kdg_printf(b, "%s%s", n++ ? ", " : "", c->r[i].name);
}

/* ---- Kernels of a function: which keys, which C function ------------------ */

typedef enum target_kind {
  TARGET_NATIVE,     /* kdk_native_<kernel>(params) */
  TARGET_STRUCTURED, /* kdk__s_<KEY>_<cname>(params): the structured wrapper */
  TARGET_BACKEND_SELECT, /* no tensor arguments: pick the backend from `device` */
} target_kind;

typedef struct target {
  char key[64];      /* a dispatcher key name: "CPU", "Meta", "CompositeImplicitAutograd" */
  char backend[16];  /* "cpu" / "meta" for direct calls; "" for alias keys */
  target_kind kind;
  char fn[256];      /* the C function to call with the entry point's params */
  int line;
  int device_arg;    /* TARGET_BACKEND_SELECT: the index of the Device? argument */
} target;

typedef struct gen_ctx {
  const kdg_file *f;
  const char *path;
  const char *ns;  /* the operators' namespace: "aten" */
  const char *src; /* the YAML file's last two path components, for comments */
  kdg_diag *d;
  kdg_cfunc *cf; /* one per function, in file order */
  /* Backends with direct calls (kd_<name>_<cname>): CPU and Meta, and every
   * backend key a dispatch table of the file names, in backend_names order. */
  bool backend_used[6];
} gen_ctx;

static bool key_known(const char *key) {
  kd_dispatch_key k;
  return kd_dispatch_key_from_name(key, &k) == KD_OK;
}

/* The direct-call name of a runtime backend key ("CPU" -> "cpu",
 * "PrivateUse1" -> "privateuse1"); "" for any other key (alias keys, keys the
 * runtime lacks). */
static const char *const backend_names[][2] = {{"CPU", "cpu"},
                                               {"CUDA", "cuda"},
                                               {"Meta", "meta"},
                                               {"PrivateUse1", "privateuse1"},
                                               {"PrivateUse2", "privateuse2"},
                                               {"PrivateUse3", "privateuse3"}};
#define NBACKENDS (sizeof backend_names / sizeof backend_names[0])

static const char *backend_of(const char *key) {
  kd_dispatch_key k;
  if (kd_dispatch_key_from_name(key, &k) != KD_OK || !(kd_keyset_of(k) & kd_keyset_backends()))
    return "";
  for (size_t i = 0; i < NBACKENDS; i++)
    if (!strcmp(backend_names[i][0], key)) return backend_names[i][1];
  return "";
}

/* Why a key of torchgen's that kdispatch lacks is not generated: "XPU device
 * type" in "SparseXPU has no XPU device type in kdispatch". Every
 * functionality of kdispatch's backends (SparseCPU, QuantizedMeta,
 * NestedTensorCUDA, AutogradPrivateUse1, ...) is a runtime key and generated;
 * what is left is PyTorch's other backend components (MPS, XLA, HIP, XPU,
 * ..., alone or with a functionality prefix) and PyTorch's keys of no
 * backend (MkldnnCPU, ZeroTensor, FPGA, ...). */
static const char *missing_reason(const char *key, char *buf, size_t cap) {
  if (!strncmp(key, "Mkldnn", 6)) return "MKL-DNN layout";
  if (!strcmp(key, "ZeroTensor")) return "ZeroTensor key";
  static const char *const prefixes[] = {"Quantized", "SparseCsr", "Sparse", "NestedTensor",
                                         "Autograd", ""};
  static const char *const components[] = {"HIP", "XLA", "MPS", "IPU", "XPU", "HPU",
                                           "VE",  "Lazy", "MTIA"};
  for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
    size_t n = strlen(prefixes[p]);
    if (strncmp(key, prefixes[p], n)) continue;
    for (size_t c = 0; c < sizeof components / sizeof *components; c++)
      if (!strcmp(key + n, components[c])) {
        snprintf(buf, cap, "%s device type", components[c]);
        return buf;
      }
  }
  return "dispatch key of that name";
}

/* The structured group's out function when f is structured or delegates. */
const kdg_func *kdg_structured_out(const kdg_func *f) {
  if (f->structured) return f;
  if (f->structured_delegate && f->delegate && f->delegate->structured) return f->delegate;
  return NULL;
}

/* A function without tensor arguments (a factory) dispatches on nothing: its
 * calls reach the Undefined slot. As PyTorch's BackendSelect kernels do, a
 * generated kernel registered for Undefined (where a registration beats the
 * composite kernels that would otherwise fill the slot) reads the Device?
 * argument and calls again with that device's backend key, so the call
 * reaches the backend's slot: its own kernel, else the composite, else its
 * fallback or ENOKERNEL. */
static int add_backend_select(const kdg_func *f, target *t, int n, int cap) {
  int device_arg = -1;
  size_t na = kd_schema_num_arguments(f->schema);
  for (size_t i = 0; i < na; i++) {
    const kd_type *ty = kd_argument_type(kd_schema_argument(f->schema, i));
    kdg_ckind k = kdg_ckind_of(ty);
    if (k == KDG_C_TENSOR || k == KDG_C_OPT_TENSOR || k == KDG_C_TENSOR_LIST ||
        k == KDG_C_OPT_TENSOR_LIST)
      return n;
    if (k == KDG_C_OPT_DEVICE && device_arg < 0) device_arg = (int)i;
  }
  if (device_arg < 0 || n >= cap) return n;
  for (int j = 0; j < n; j++)
    if (!strcmp(t[j].key, "Undefined")) return n;
  target *x = &t[n++];
  snprintf(x->key, sizeof x->key, "Undefined");
  x->backend[0] = 0;
  x->kind = TARGET_BACKEND_SELECT;
  snprintf(x->fn, sizeof x->fn, "kdk__ops_backend_select");
  x->line = f->line;
  x->device_arg = device_arg;
  return n;
}

/* Whether dispatch entry i of structured out function `out`, for a key that
 * is no dense backend, names the kernel of one of the group's structured
 * impls (a dense backend's entry): C has no overloads, so the unstructured
 * kernel cannot have the same name. */
static bool structured_kernel_clash(const kdg_func *out, size_t i) {
  for (size_t j = 0; j < out->ndispatch; j++)
    if (*backend_of(out->dispatch[j].key) &&
        !strcmp(out->dispatch[j].kernel, out->dispatch[i].kernel))
      return true;
  return false;
}

static int targets_of(const gen_ctx *g, const kdg_func *f, target *t, int cap) {
  int n = 0;
  if (f->manual_kernel_registration) return 0;
  const kdg_func *out = kdg_structured_out(f);
  if (out) {
    bool meta = false;
    for (size_t i = 0; i < out->ndispatch && n < cap; i++) {
      const char *key = out->dispatch[i].key;
      if (!*backend_of(key)) {
        /* Another runtime key of the out function (SparseCPU, QuantizedCPU,
         * ...): an unstructured kernel with the out function's parameters,
         * as torchgen's non-structured dispatch keys. A kernel that is also
         * one of the group's structured impls has other parameters: a note
         * (structured_kernel_clash). A key the runtime lacks: a note. */
        if (f == out && key_known(key) && !structured_kernel_clash(out, i)) {
          target *x = &t[n++];
          snprintf(x->key, sizeof x->key, "%s", key);
          x->backend[0] = 0;
          x->kind = TARGET_NATIVE;
          snprintf(x->fn, sizeof x->fn, "kdk_native_%s", out->dispatch[i].kernel);
          x->line = out->dispatch[i].line;
        }
        continue;
      }
      if (!strcmp(key, "Meta")) meta = true;
      target *x = &t[n++];
      snprintf(x->key, sizeof x->key, "%s", key);
      snprintf(x->backend, sizeof x->backend, "%s", backend_of(key));
      x->kind = TARGET_STRUCTURED;
      snprintf(x->fn, sizeof x->fn, "kdk__s_%s_%s", key, f->cname);
      x->line = out->dispatch[i].line;
    }
    if (!meta && n < cap) {
      target *x = &t[n++];
      snprintf(x->key, sizeof x->key, "Meta");
      snprintf(x->backend, sizeof x->backend, "meta");
      x->kind = TARGET_STRUCTURED;
      snprintf(x->fn, sizeof x->fn, "kdk__s_Meta_%s", f->cname);
      x->line = out->line;
    }
    /* Extra dispatch entries of a delegating function (sparse kernels...). */
    if (f == out) return n;
  }
  if (!out && !f->has_dispatch) {
    target *x = &t[n++];
    snprintf(x->key, sizeof x->key, "CompositeImplicitAutograd");
    x->backend[0] = 0;
    x->kind = TARGET_NATIVE;
    snprintf(x->fn, sizeof x->fn, "kdk_native_%s", f->cname);
    x->line = f->line;
    return add_backend_select(f, t, n, cap);
  }
  for (size_t i = 0; i < f->ndispatch && n < cap; i++) {
    const char *key = f->dispatch[i].key;
    if (!key_known(key)) continue; /* a key without a runtime layout: a note */
    bool dup = false;
    for (int j = 0; j < n; j++)
      if (!strcmp(t[j].key, key)) dup = true;
    if (dup) continue;
    target *x = &t[n++];
    snprintf(x->key, sizeof x->key, "%s", key);
    snprintf(x->backend, sizeof x->backend, "%s", backend_of(key));
    x->kind = TARGET_NATIVE;
    snprintf(x->fn, sizeof x->fn, "kdk_native_%s", f->dispatch[i].kernel);
    x->line = f->dispatch[i].line;
  }
  (void)g;
  return add_backend_select(f, t, n, cap);
}

/* The C function a direct call for `backend` uses: the backend's own kernel,
 * else a composite one in the dispatcher's precedence (NonFunctional,
 * Explicit, Implicit). NULL when there is none. */
static const target *direct_target(const target *t, int n, const char *key) {
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].key, key)) return &t[i];
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].key, "CompositeExplicitAutogradNonFunctional")) return &t[i];
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].key, "CompositeExplicitAutograd")) return &t[i];
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].key, "CompositeImplicitAutograd") && t[i].kind != TARGET_BACKEND_SELECT)
      return &t[i];
  return NULL;
}

/* ---- Pieces of code shared by several files -------------------------------- */

/* How a kind travels in a kd_arg: its member, and the shape of the member
 * (a plain value, an optional {has, v}, a {data, size} list, a string). */
typedef enum arg_shape { ARG_PLAIN, ARG_OPT, ARG_LIST, ARG_STR } arg_shape;

static const struct {
  const char *member;
  arg_shape shape;
} arg_members[KDG_C_COUNT] = {
    [KDG_C_TENSOR] = {"t", ARG_PLAIN},           [KDG_C_OPT_TENSOR] = {"t", ARG_PLAIN},
    [KDG_C_TENSOR_LIST] = {"tensors", ARG_LIST}, [KDG_C_OPT_TENSOR_LIST] = {"tensors", ARG_LIST},
    [KDG_C_INT] = {"i", ARG_PLAIN},              [KDG_C_OPT_INT] = {"i", ARG_OPT},
    [KDG_C_FLOAT] = {"f", ARG_PLAIN},            [KDG_C_OPT_FLOAT] = {"f", ARG_OPT},
    [KDG_C_BOOL] = {"b", ARG_PLAIN},             [KDG_C_OPT_BOOL] = {"b", ARG_OPT},
    [KDG_C_SCALAR] = {"s", ARG_PLAIN},           [KDG_C_OPT_SCALAR] = {"s", ARG_PLAIN},
    [KDG_C_DTYPE] = {"dtype", ARG_PLAIN},        [KDG_C_OPT_DTYPE] = {"dtype", ARG_OPT},
    [KDG_C_LAYOUT] = {"layout", ARG_PLAIN},      [KDG_C_OPT_LAYOUT] = {"layout", ARG_OPT},
    [KDG_C_DEVICE] = {"device", ARG_PLAIN},      [KDG_C_OPT_DEVICE] = {"device", ARG_OPT},
    [KDG_C_MF] = {"mf", ARG_PLAIN},              [KDG_C_OPT_MF] = {"mf", ARG_OPT},
    [KDG_C_INTS] = {"ints", ARG_LIST},           [KDG_C_FLOATS] = {"floats", ARG_LIST},
    [KDG_C_BOOLS] = {"bools", ARG_LIST},         [KDG_C_STR] = {"str", ARG_STR},
    [KDG_C_OPT_STR] = {"str", ARG_STR},          [KDG_C_VALUE] = {"value", ARG_PLAIN},
};

static const char *arg_member(kdg_ckind k, arg_shape *shape) {
  if ((unsigned)k >= KDG_C_COUNT) k = KDG_C_VALUE;
  *shape = arg_members[k].shape;
  return arg_members[k].member;
}

/* Fills kdg_a[i] from the typed parameters. */
void kdg_emit_pack_args(kdg_buf *b, const kdg_cfunc *c) {
  for (int i = 0; i < c->np; i++) {
    const char *n = c->p[i].name;
    arg_shape sh;
    const char *m = arg_member(c->p[i].kind, &sh);
    switch (sh) {
    case ARG_PLAIN: kdg_printf(b, "  kdg_a[%d].%s = %s;\n", i, m, n); break;
    case ARG_OPT:
      kdg_printf(b, "  kdg_a[%d].opt.has = %s != NULL;\n  if (%s) kdg_a[%d].opt.v.%s = *%s;\n", i, n,
                 n, i, m, n);
      break;
    case ARG_LIST:
      kdg_printf(b, "  kdg_a[%d].%s.data = %s.data;\n  kdg_a[%d].%s.size = %s.size;\n", i, m, n, i, m,
                 n);
      break;
    case ARG_STR:
      kdg_printf(b, "  kdg_a[%d].str.data = %s;\n  kdg_a[%d].str.size = %s ? (int64_t)strlen(%s) : 0;\n",
                 i, n, i, n, n);
      break;
    }
  }
}

/* The expression reading argument i of kd_arg array `a` as its C type. */
void kdg_emit_unpack_arg(kdg_buf *b, const kdg_cparam *p, int i, const char *a) {
  arg_shape sh;
  const char *m = arg_member(p->kind, &sh);
  switch (sh) {
  case ARG_PLAIN: kdg_printf(b, "%s[%d].%s", a, i, m); break;
  case ARG_OPT: kdg_printf(b, "(%s[%d].opt.has ? &%s[%d].opt.v.%s : NULL)", a, i, a, i, m); break;
  case ARG_LIST:
    kdg_printf(b, "(%s){%s[%d].%s.data, %s[%d].%s.size}", kdg_ctype_of(p->kind)->param, a, i, m, a, i,
               m);
    break;
  case ARG_STR: kdg_printf(b, "%s[%d].str.data", a, i); break;
  }
}

/* A C expression for a Scalar default ("1", "1.0", "True"...). */
bool kdg_scalar_default_expr(const kd_argument *a, char *buf, size_t cap) {
  kd_value v;
  if (kd_argument_default_value(a, &v) != KD_OK) return false;
  bool ok = true;
  switch (v.tag) {
  case KD_VALUE_INT: snprintf(buf, cap, "kd_scalar_int(%lldLL)", (long long)v.u.i); break;
  case KD_VALUE_DOUBLE: snprintf(buf, cap, "kd_scalar_double(%.17g)", v.u.d); break;
  case KD_VALUE_BOOL: snprintf(buf, cap, "kd_scalar_bool(%s)", v.u.b ? "true" : "false"); break;
  case KD_VALUE_SCALAR: {
    const kd_scalar *s = &v.u.s;
    kd_dtype dt = kd_scalar_dtype(s);
    if (dt == KD_BOOL)
      snprintf(buf, cap, "kd_scalar_bool(%s)", kd_scalar_to_int64(s) ? "true" : "false");
    else if (kd_dtype_is_integral(dt, false))
      snprintf(buf, cap, "kd_scalar_int(%lldLL)", (long long)kd_scalar_to_int64(s));
    else
      snprintf(buf, cap, "kd_scalar_double(%.17g)", kd_scalar_to_double(s));
    break;
  }
  default: ok = false;
  }
  kd_value_destroy(&v);
  return ok;
}

/* Replaces NULL Scalars that have defaults by their defaults. */
void kdg_emit_scalar_defaults(kdg_buf *b, const kdg_cfunc *c) {
  for (int i = 0; i < c->np; i++) {
    if (!c->p[i].scalar_default) continue;
    char expr[128];
    if (!kdg_scalar_default_expr(c->p[i].arg, expr, sizeof expr)) continue;
    kdg_printf(b, "  kd_scalar kdg_d%d;\n  if (!%s) {\n    kdg_d%d = %s;\n    %s = &kdg_d%d;\n  }\n", i,
               c->p[i].name, i, expr, c->p[i].name, i);
  }
}

void kdg_emit_check_outs(kdg_buf *b, const kdg_cfunc *c, const char *fname) {
  for (int i = 0; i < c->nr; i++) {
    if (c->r[i].alias_of >= 0) continue;
    if (fname)
      kdg_printf(b, "  if (!%s) return kd_set_error(KD_EINVAL, \"%s: NULL output '%s'\");\n",
                 c->r[i].name, fname, c->r[i].name);
    else
      kdg_printf(b, "  if (!%s) return kd_set_error(KD_EINVAL, \"%%s: NULL output '%s'\", kdg_fn);\n",
                 c->r[i].name, c->r[i].name);
    if (c->r[i].kind == KDG_C_TENSOR || c->r[i].kind == KDG_C_OPT_TENSOR)
      kdg_printf(b, "  *%s = NULL;\n", c->r[i].name);
    if (c->r[i].kind == KDG_C_TENSOR_LIST) kdg_printf(b, "  *%s = (kd_tensor_list){NULL, 0};\n", c->r[i].name);
  }
}

static const char *kdg_ret_fn(kdg_ckind k) {
  switch (k) {
  case KDG_C_TENSOR:
  case KDG_C_OPT_TENSOR: return "kdk__ret_tensor";
  case KDG_C_TENSOR_LIST: return "kdk__ret_tensor_list";
  case KDG_C_INT: return "kdk__ret_int";
  case KDG_C_FLOAT: return "kdk__ret_float";
  case KDG_C_BOOL: return "kdk__ret_bool";
  default: return "kdk__ret_scalar";
  }
}

/* ---- File writers ----------------------------------------------------------- */

/* The first line of every file: names the YAML file by its last two path
 * components ("ops/native_functions.yaml"), so output does not depend on
 * where the tree is. */
static void generated(kdg_buf *b, const gen_ctx *g) {
  kdg_printf(b, "/* @generated by kdgen from %s. Do not edit. */\n", g->src);
}

static void header_open(kdg_buf *b, const gen_ctx *g, const char *guard) {
  generated(b, g);
  kdg_printf(b, "#ifndef %s\n#define %s\n\n", guard, guard);
}

static void kdg_upper(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src[i] && i + 1 < cap; i++) {
    char ch = src[i];
    dst[i] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
  }
  dst[i] = 0;
}

void kdg_schema_comment(kdg_buf *b, const kdg_cfunc *c, const char *ns) {
  kdg_printf(b, "/* %s::%s */\n", ns, c->f->func);
}

/* include/kd/ops/<base>.h and <base>_dispatch.h */
static int write_public_headers(gen_ctx *g, const char *out_dir, const char *base) {
  kdg_buf b, dsp;
  kdg_buf_init(&b);
  kdg_buf_init(&dsp);
  char guard[256], ub[200];
  kdg_upper(ub, sizeof ub, base);
  snprintf(guard, sizeof guard, "KD_GEN_OPS_%s_H", ub);
  header_open(&b, g, guard);
  static const char ownership[] =
      "/* Ownership (docs/CODEGEN.md): arguments are borrowed for the call. Each\n"
      " * `kd_tensor **` output receives one reference the caller owns\n"
      " * (kd_tensor_release); a result that aliases an argument (inplace and out\n"
      " * variants) has no output parameter. A NULL `const kd_scalar *` for a Scalar\n"
      " * with a default means the default. On error the status says why, with\n"
      " * the operator's name in kd_last_error(), and tensor outputs are NULL;\n"
      " * a NULL output pointer is KD_EINVAL. */\n\n";
  kdg_printf(&b, "#include \"kd/ops.h\"\n\n%sKD_EXTERN_C_BEGIN\n\n", ownership);
  snprintf(guard, sizeof guard, "KD_GEN_OPS_%s_DISPATCH_H", ub);
  header_open(&dsp, g, guard);
  kdg_printf(&dsp,
             "#include \"kd/ops.h\"\n\n/* Direct calls of one backend's kernel, without the dispatcher.\n"
             " */\n%sKD_EXTERN_C_BEGIN\n\n",
             ownership);
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_cfunc *c = &g->cf[i];
    if (!c->ok || strcmp(c->f->base, base)) continue;
    kdg_schema_comment(&b, c, g->ns);
    kdg_printf(&b, "KDK_API kd_status kd_%s(", c->ename);
    kdg_print_params(&b, c, true);
    kdg_printf(&b, ");\nKDK_API kd_status kd_redispatch_%s(kd_keyset keys%s", c->f->cname,
               c->np || c->nouts ? ", " : "");
    if (c->np || c->nouts) kdg_print_params(&b, c, true);
    kdg_printf(&b, ");\n\n");
    target t[16];
    int nt = targets_of(g, c->f, t, 16);
    bool any = false;
    for (size_t k = 0; k < NBACKENDS; k++) {
      if (!g->backend_used[k] || !direct_target(t, nt, backend_names[k][0])) continue;
      if (!any) kdg_schema_comment(&dsp, c, g->ns);
      any = true;
      kdg_printf(&dsp, "KDK_API kd_status kd_%s_%s(", backend_names[k][1], c->f->cname);
      kdg_print_params(&dsp, c, true);
      kdg_printf(&dsp, ");\n");
    }
    if (nt) kdg_printf(&dsp, "\n");
  }
  kdg_printf(&b, "KD_EXTERN_C_END\n\n#endif\n");
  kdg_printf(&dsp, "KD_EXTERN_C_END\n\n#endif\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/include/kd/ops/%s.h", out_dir, base);
  int rc = kdg_write_file(path, &b, g->d);
  snprintf(path, sizeof path, "%s/include/kd/ops/%s_dispatch.h", out_dir, base);
  if (kdg_write_file(path, &dsp, g->d)) rc = -1;
  kdg_buf_free(&b);
  kdg_buf_free(&dsp);
  return rc;
}

/* The parameters of a structured meta / impl function. */
typedef struct sinfo {
  const kdg_func *out;     /* the structured out function */
  const kdg_cfunc *oc;         /* its C view */
  char meta[256];          /* kdk_meta_<cname> */
  char pre[256];           /* kdk_precompute_<cname>, "" when none */
  bool iter;               /* structured_inherits: TensorIteratorBase */
} sinfo;

static bool structured_info(const gen_ctx *g, const kdg_func *f, sinfo *si) {
  const kdg_func *out = kdg_structured_out(f);
  if (!out) return false;
  memset(si, 0, sizeof *si);
  si->out = out;
  for (size_t i = 0; i < g->f->nfuncs; i++)
    if (&g->f->funcs[i] == out) si->oc = &g->cf[i];
  const kdg_func *fn = out->group && out->group->functional ? out->group->functional : out;
  snprintf(si->meta, sizeof si->meta, "kdk_meta_%s", fn->cname);
  if (out->nprecomputed) snprintf(si->pre, sizeof si->pre, "kdk_precompute_%s", fn->cname);
  si->iter = out->structured_inherits && !strcmp(out->structured_inherits, "TensorIteratorBase");
  return si->oc != NULL && si->oc->ok;
}

const char *kdg_precomputed_ctype(const char *schema_type) {
  if (!strcmp(schema_type, "int") || !strcmp(schema_type, "SymInt")) return "int64_t";
  if (!strcmp(schema_type, "bool")) return "bool";
  if (!strcmp(schema_type, "float")) return "double";
  if (!strcmp(schema_type, "ScalarType")) return "kd_dtype";
  if (!strcmp(schema_type, "int[]")) return "kd_ints";
  if (!strcmp(schema_type, "MemoryFormat")) return "kd_memory_format";
  /* PyTorch's small vector of sizes: held in the precompute struct, passed
   * to the impl by pointer (kdg_precomputed_byref). */
  if (!strcmp(schema_type, "DimVector")) return "kdk_dimvector";
  return NULL;
}

bool kdg_precomputed_byref(const char *schema_type) { return !strcmp(schema_type, "DimVector"); }

const kdg_precomputed *kdg_replaced_in(const kdg_precomputed *v, size_t n, const char *arg) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].replaces, arg)) return &v[i];
  return NULL;
}

const kdg_precomputed *kdg_replaced_by(const kdg_func *out, const char *arg) {
  return kdg_replaced_in(out->precomputed, out->nprecomputed, arg);
}

/* include/kdk/native/<base>.h (public, installed: the kit's declarations of
 * libkdops' meta functions, precomputed structs and native kernels, all
 * KDK_API) and ops/<base>_native.h (libkdops-private: the public one plus
 * the generated wrappers and boxed functions). */
static int write_native_header(gen_ctx *g, const char *out_dir, const char *base) {
  kdg_buf b, pv;
  kdg_buf_init(&b);
  kdg_buf_init(&pv);
  char guard[256], ub[200];
  kdg_upper(ub, sizeof ub, base);
  snprintf(guard, sizeof guard, "KDK_NATIVE_%s_H", ub);
  header_open(&b, g, guard);
  kdg_printf(&b, "#include \"kd/ops.h\"\n#include \"kdk/iter.h\"\n#include \"kdk/structured.h\"\n\n"
                 "KD_EXTERN_C_BEGIN\n\n");
  snprintf(guard, sizeof guard, "KD_GEN_OPS_%s_NATIVE_H", ub);
  header_open(&pv, g, guard);
  kdg_printf(&pv, "#include \"kdk/native/%s.h\"\n\n", base);
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_cfunc *c = &g->cf[i];
    const kdg_func *f = c->f;
    if (!c->ok || strcmp(f->base, base)) continue;
    kdg_schema_comment(&b, c, g->ns);
    target t[16];
    int nt = targets_of(g, f, t, 16);
    for (int k = 0; k < nt; k++) {
      bool dup = t[k].kind == TARGET_BACKEND_SELECT;
      for (int j = 0; j < k; j++)
        if (!strcmp(t[j].fn, t[k].fn)) dup = true;
      if (dup) continue;
      bool pub = !strncmp(t[k].fn, "kdk_", 4) && strncmp(t[k].fn, "kdk__", 5); /* not kdk__s_ */
      kdg_printf(pub ? &b : &pv, "%skd_status %s(", pub ? "KDK_API " : "", t[k].fn);
      kdg_print_params(pub ? &b : &pv, c, true);
      kdg_printf(pub ? &b : &pv, ");\n");
    }
    kdg_printf(&pv, "kd_status kdk__boxed_%s(const kd_call *call, kd_stack *stack, kd_unboxed_fn fn);\n",
               f->cname);
    if (f->structured) {
      sinfo si;
      if (!structured_info(g, f, &si)) continue;
      const kdg_cfunc *oc = si.oc;
      bool dimvector = false;
      for (size_t p = 0; p < f->nprecomputed; p++)
        for (size_t q = 0; q < f->precomputed[p].nfields; q++)
          dimvector |= kdg_precomputed_byref(f->precomputed[p].fields[q].type);
      if (dimvector)
        kdg_printf(&b, "#ifndef KDK_DIMVECTOR_DEFINED\n#define KDK_DIMVECTOR_DEFINED\n"
                       "/* A precomputed DimVector: size entries of data. */\n"
                       "typedef struct kdk_dimvector {\n  int64_t size;\n  int64_t data[KD_MAX_DIMS];\n"
                       "} kdk_dimvector;\n#endif\n");
      if (*si.pre) {
        kdg_printf(&b, "typedef struct %s {\n", si.pre);
        for (size_t p = 0; p < f->nprecomputed; p++)
          for (size_t q = 0; q < f->precomputed[p].nfields; q++) {
            const kdg_precomputed_field *fl = &f->precomputed[p].fields[q];
            const char *ct = kdg_precomputed_ctype(fl->type);
            if (!ct) {
              kdg_error(g->d, g->path, f->precomputed[p].line,
                        "precomputed type '%s' is not supported by kdgen", fl->type);
              ct = "int64_t";
            }
            kdg_printf(&b, "  %s %s;\n", ct, fl->name);
          }
        kdg_printf(&b, "} %s;\n", si.pre);
      }
      /* meta */
      kdg_printf(&b, "KDK_API kd_status %s(kdk_structured *s%s", si.meta,
                 si.iter ? ", kdk_iter *iter" : "");
      for (int p = 0; p < oc->np; p++) {
        if (oc->p[p].is_out) continue;
        const char *ct = kdg_ctype_of(oc->p[p].kind)->param;
        kdg_printf(&b, ", %s%s%s", ct, ct[strlen(ct) - 1] == '*' ? "" : " ", oc->p[p].name);
      }
      if (*si.pre) kdg_printf(&b, ", %s *pre", si.pre);
      kdg_printf(&b, ");\n");
      /* impl per backend kernel */
      for (size_t k = 0; k < f->ndispatch; k++) {
        bool dup = false;
        for (size_t j = 0; j < k; j++)
          if (!strcmp(f->dispatch[j].kernel, f->dispatch[k].kernel)) dup = true;
        if (dup || !strcmp(backend_of(f->dispatch[k].key), "")) continue;
        kdg_printf(&b, "KDK_API kd_status kdk_native_%s(kdk_structured *s%s", f->dispatch[k].kernel,
                   si.iter ? ", kdk_iter *iter" : "");
        for (int p = 0; p < oc->np; p++) {
          if (oc->p[p].is_out) continue;
          const kdg_precomputed *pr = kdg_replaced_by(f, kd_argument_name(oc->p[p].arg));
          if (pr) {
            for (size_t q = 0; q < pr->nfields; q++) {
              const char *ct = kdg_precomputed_ctype(pr->fields[q].type);
              if (kdg_precomputed_byref(pr->fields[q].type))
                kdg_printf(&b, ", const %s *%s", ct, pr->fields[q].name);
              else
                kdg_printf(&b, ", %s %s", ct ? ct : "int64_t", pr->fields[q].name);
            }
            continue;
          }
          const char *ct = kdg_ctype_of(oc->p[p].kind)->param;
          kdg_printf(&b, ", %s%s%s", ct, ct[strlen(ct) - 1] == '*' ? "" : " ", oc->p[p].name);
        }
        for (int p = 0; p < oc->np; p++)
          if (oc->p[p].is_out) kdg_printf(&b, ", kd_tensor *%s", oc->p[p].name);
        kdg_printf(&b, ");\n");
      }
    }
    kdg_printf(&b, "\n");
  }
  kdg_printf(&b, "KD_EXTERN_C_END\n\n#endif\n");
  kdg_printf(&pv, "\n#endif\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/include/kdk/native/%s.h", out_dir, base);
  int rc = kdg_write_file(path, &b, g->d);
  snprintf(path, sizeof path, "%s/ops/%s_native.h", out_dir, base);
  if (kdg_write_file(path, &pv, g->d)) rc = -1;
  kdg_buf_free(&b);
  kdg_buf_free(&pv);
  return rc;
}

/* The entry point kd_<ename> and the redispatch entry point
 * kd_redispatch_<cname>, around one static packer kdg_call_<cname> that both
 * inline (keys NULL: the dispatcher computes them; the branch folds away). */
void kdg_emit_entry(kdg_buf *b, const kdg_cfunc *c) {
  const char *cn = c->f->cname, *sep = c->np || c->nouts ? ", " : "";
  kdg_printf(b, "static inline __attribute__((always_inline)) kd_status kdg_call_%s(const char *kdg_fn, "
                "const kd_keyset *kdg_keys%s", cn, sep);
  if (c->np || c->nouts) kdg_print_params(b, c, true);
  kdg_printf(b, ") {\n");
  kdg_emit_check_outs(b, c, NULL);
  kdg_printf(b, "  static kd_op *kdg_cache;\n  kd_op *kdg_op = kdk__ops_cached(&kdg_cache);\n");
  kdg_printf(b, "  kd_status kdg_st;\n");
  kdg_printf(b, "  if (!kdg_op && (kdg_st = kdk__ops_lookup(\"%s\", \"%s\", &kdg_cache, &kdg_op)))\n"
                "    return kdg_st;\n",
             c->qualified, c->sig);
  kdg_emit_scalar_defaults(b, c);
  kdg_printf(b, "  kd_arg kdg_a[%d];\n", c->np ? c->np : 1);
  kdg_emit_pack_args(b, c);
  kdg_printf(b, "  kd_value kdg_r[%d];\n", c->nr ? c->nr : 1);
  for (int i = 0; i < c->nr; i++) kdg_printf(b, "  kdg_r[%d] = kd_value_none();\n", i);
  kdg_printf(b, "  if ((kdg_st = kdg_keys ? kd_call_unboxed_keys(kdg_op, *kdg_keys, kdg_a, kdg_r)\n"
                "                        : kd_call_unboxed(kdg_op, kdg_a, kdg_r)))\n"
                "    return kdg_st;\n");
  if (c->nr == 0) kdg_printf(b, "  (void)kdg_r;\n");
  if (!c->nouts) kdg_printf(b, "  (void)kdg_fn;\n");
  for (int i = 0; i < c->nr; i++) {
    if (c->r[i].alias_of >= 0) {
      kdg_printf(b, "  kdk__value_drop_alias(&kdg_r[%d]);\n", i);
      continue;
    }
    kdg_printf(b, "  if (!kdg_st) kdg_st = %s(&kdg_r[%d], %s, \"%s\");\n  else kd_value_destroy(&kdg_r[%d]);\n",
               kdg_ret_fn(c->r[i].kind), i, c->r[i].name, c->qualified, i);
  }
  kdg_printf(b, "  return kdg_st;\n}\n\n");
  for (int rd = 0; rd < 2; rd++) {
    char fname[300];
    snprintf(fname, sizeof fname, rd ? "kd_redispatch_%s" : "kd_%s", rd ? cn : c->ename);
    kdg_printf(b, "kd_status %s(%s", fname, rd ? "kd_keyset keys" : "");
    if (rd && (c->np || c->nouts)) kdg_printf(b, ", ");
    if (!rd || c->np || c->nouts) kdg_print_params(b, c, true);
    kdg_printf(b, ") {\n  return kdg_call_%s(\"%s\", %s%s", cn, fname, rd ? "&keys" : "NULL", sep);
    kdg_print_call_args(b, c, true);
    kdg_printf(b, ");\n}\n\n");
  }
}

static int write_entry(gen_ctx *g, const char *out_dir) {
  kdg_buf b;
  kdg_buf_init(&b);
  generated(&b, g);
  kdg_printf(&b, "#include <string.h>\n\n#include \"gen_support.h\"\n#include \"kd/ops_all.h\"\n\n");
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_cfunc *c = &g->cf[i];
    if (!c->ok) continue;
    kdg_emit_entry(&b, c);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/ops/gen_entry.c", out_dir);
  int rc = kdg_write_file(path, &b, g->d);
  kdg_buf_free(&b);
  return rc;
}

static int write_direct(gen_ctx *g, const char *out_dir) {
  kdg_buf b;
  kdg_buf_init(&b);
  generated(&b, g);
  kdg_printf(&b, "#include \"gen_support.h\"\n#include \"kd/ops_all.h\"\n"
                           "#include \"kdgen_all_native.h\"\n\n");
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_cfunc *c = &g->cf[i];
    if (!c->ok) continue;
    target t[16];
    int nt = targets_of(g, c->f, t, 16);
    for (size_t k = 0; k < NBACKENDS; k++) {
      const target *x = g->backend_used[k] ? direct_target(t, nt, backend_names[k][0]) : NULL;
      if (!x) continue;
      char fname[300];
      snprintf(fname, sizeof fname, "kd_%s_%s", backend_names[k][1], c->f->cname);
      kdg_printf(&b, "kd_status %s(", fname);
      kdg_print_params(&b, c, true);
      kdg_printf(&b, ") {\n");
      kdg_emit_check_outs(&b, c, fname);
      kdg_emit_scalar_defaults(&b, c);
      kdg_printf(&b, "  return %s(", x->fn);
      kdg_print_call_args(&b, c, true);
      kdg_printf(&b, ");\n}\n\n");
    }
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/ops/gen_direct.c", out_dir);
  int rc = kdg_write_file(path, &b, g->d);
  kdg_buf_free(&b);
  return rc;
}

void kdg_emit_boxed_adapter(kdg_buf *b, const kdg_cfunc *c) {
  kdg_printf(b, "kd_status kdk__boxed_%s(const kd_call *call, kd_stack *stack, kd_unboxed_fn fn) {\n",
             c->f->cname);
  kdg_printf(b, "  kd_status kdg_st = kdk__box_check_depth(call, stack, %d);\n  if (kdg_st) return kdg_st;\n",
             c->np);
  if (c->np) {
    kdg_printf(b, "  const kd_value *kdg_v = stack->items + stack->size - %d;\n", c->np);
    kdg_printf(b, "  kd_arg kdg_a[%d];\n  kdk__box_scratch kdg_x[%d];\n", c->np, c->np);
    for (int p = 0; p < c->np; p++)
      kdg_printf(b,
                 "  if ((kdg_st = kdk__box_arg(&kdg_v[%d], %s, &kdg_a[%d], &kdg_x[%d], call, %d, \"%s\")))\n"
                 "    return kdg_st;\n",
                 p, kdg_ctype_of(c->p[p].kind)->box_kind, p, p, p, kd_argument_name(c->p[p].arg));
  } else {
    kdg_printf(b, "  kd_arg kdg_a[1];\n");
  }
  kdg_printf(b, "  kd_value kdg_r[%d];\n", c->nr ? c->nr : 1);
  for (int r = 0; r < c->nr; r++) kdg_printf(b, "  kdg_r[%d] = kd_value_none();\n", r);
  kdg_printf(b, "  if ((kdg_st = fn(call, kdg_a, kdg_r))) return kdg_st;\n");
  kdg_printf(b, "  return kdk__box_finish(stack, %d, kdg_r, %d);\n}\n\n", c->np, c->nr);
}

static int write_boxed(gen_ctx *g, const char *out_dir) {
  kdg_buf b;
  kdg_buf_init(&b);
  generated(&b, g);
  kdg_printf(&b, "#include \"gen_support.h\"\n#include \"kdgen_all_native.h\"\n");
  kdg_sel_include(&b);
  kdg_printf(&b, "\n");
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_cfunc *c = &g->cf[i];
    if (!c->ok) continue;
    kdg_schema_comment(&b, c, g->ns);
    kdg_emit_boxed_adapter(&b, c);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/ops/gen_boxed.c", out_dir);
  int rc = kdg_write_file(path, &b, g->d);
  kdg_buf_free(&b);
  return rc;
}

/* The structured wrapper of function c (docs/CODEGEN.md). */
int kdg_emit_structured_wrapper(kdg_buf *b, const kdg_swrap *w, kdg_diag *d, const char *path) {
  const kdg_cfunc *c = w->c, *oc = w->oc;
  const kdg_func *f = c->f;
  bool meta_key = w->meta_device;
  /* Inputs of meta: c's arguments that are not out arguments, matched by position
   * to the out function's inputs. */
  int nin = 0;
  for (int p = 0; p < oc->np; p++) nin += !oc->p[p].is_out;
  int cin = 0;
  for (int p = 0; p < c->np; p++) cin += !c->p[p].is_out;
  if (nin != cin) {
    kdg_error(d, path, f->line, "'%s' delegates to '%s', whose arguments differ", f->func,
              oc->f->func);
    return -1;
  }
  int nout = 0;
  for (int p = 0; p < oc->np; p++) nout += oc->p[p].is_out;
  const char *mode = f->kind == KDG_INPLACE ? "KDK_STRUCTURED_INPLACE"
                     : f->kind == KDG_OUT   ? "KDK_STRUCTURED_OUT"
                     : meta_key             ? "KDK_STRUCTURED_META"
                                            : "KDK_STRUCTURED_FUNCTIONAL";
  kdg_printf(b, "kd_status %s(", w->fn);
  kdg_print_params(b, c, true);
  kdg_printf(b, ") {\n");
  /* given tensors */
  if (f->kind == KDG_INPLACE) {
    kdg_printf(b, "  kd_tensor *kdg_given[1] = {%s};\n", c->p[0].name);
  } else if (f->kind == KDG_OUT) {
    kdg_printf(b, "  kd_tensor *kdg_given[%d] = {", nout);
    int n = 0;
    for (int p = 0; p < c->np; p++)
      if (c->p[p].is_out) kdg_printf(b, "%s%s", n++ ? ", " : "", c->p[p].name);
    kdg_printf(b, "};\n");
  }
  /* device: the first tensor input, for functional outputs */
  kdg_printf(b, "  kd_device kdg_dev = ");
  if (meta_key) {
    kdg_printf(b, "(kd_device){KD_DEVICE_META, 0};\n");
  } else {
    int nt = 0;
    for (int p = 0; p < c->np; p++)
      if (!c->p[p].is_out && (c->p[p].kind == KDG_C_TENSOR || c->p[p].kind == KDG_C_OPT_TENSOR)) nt++;
    if (!nt) {
      kdg_printf(b, "kd_device_cpu();\n");
    } else {
      kdg_printf(b, "kdk__device_of_first((kd_tensor *const[]){");
      int n = 0;
      for (int p = 0; p < c->np; p++)
        if (!c->p[p].is_out && (c->p[p].kind == KDG_C_TENSOR || c->p[p].kind == KDG_C_OPT_TENSOR))
          kdg_printf(b, "%s%s", n++ ? ", " : "", c->p[p].name);
      kdg_printf(b, "}, %d);\n", nt);
    }
  }
  kdg_printf(b, "  kdk_structured kdg_s;\n  kdk_structured_init(&kdg_s, \"%s\", %s, %d, %s, kdg_dev);\n",
             c->qualified, mode, nout, f->kind == KDG_FUNCTIONAL ? "NULL" : "kdg_given");
  if (w->iter) kdg_printf(b, "  kdk_iter kdg_it;\n  kdk_iter_init(&kdg_it, &kdg_s);\n");
  if (*w->pre) kdg_printf(b, "  %s kdg_pre;\n", w->pre);
  kdg_printf(b, "  kd_status kdg_st = %s(&kdg_s%s", w->meta, w->iter ? ", &kdg_it" : "");
  for (int p = 0; p < c->np; p++)
    if (!c->p[p].is_out) kdg_printf(b, ", %s", c->p[p].name);
  if (*w->pre) kdg_printf(b, ", &kdg_pre");
  kdg_printf(b, ");\n");
  if (w->impl) {
    kdg_printf(b, "  if (!kdg_st) kdg_st = %s(&kdg_s%s", w->impl, w->iter ? ", &kdg_it" : "");
    int q = 0;
    for (int p = 0; p < oc->np; p++) {
      if (oc->p[p].is_out) continue;
      /* the q-th input of c */
      int cp = -1, seen = 0;
      for (int j = 0; j < c->np; j++)
        if (!c->p[j].is_out && seen++ == q) cp = j;
      q++;
      const kdg_precomputed *pr = kdg_replaced_by(oc->f, kd_argument_name(oc->p[p].arg));
      if (pr) {
        for (size_t k = 0; k < pr->nfields; k++)
          kdg_printf(b, ", %skdg_pre.%s", kdg_precomputed_byref(pr->fields[k].type) ? "&" : "",
                     pr->fields[k].name);
        continue;
      }
      kdg_printf(b, ", %s", c->p[cp].name);
    }
    for (int o = 0; o < nout; o++) kdg_printf(b, ", kdk_structured_output(&kdg_s, %d)", o);
    kdg_printf(b, ");\n");
  }
  kdg_emit_structured_finish(b, c, nout, w->iter);
  return 0;
}


void kdg_emit_structured_finish(kdg_buf *b, const kdg_cfunc *c, int nout, bool iter) {
  if (iter) kdg_printf(b, "  if (!kdg_st) kdg_st = kdk_iter_finish(&kdg_it);\n");
  kdg_printf(b, "  if (!kdg_st) kdg_st = kdk_structured_finish(&kdg_s);\n");
  if (iter) kdg_printf(b, "  kdk_iter_release(&kdg_it);\n");
  if (c->f->kind == KDG_FUNCTIONAL) {
    kdg_printf(b, "  kd_tensor *kdg_take[%d];\n", nout);
    kdg_printf(b, "  kdk_structured_release(&kdg_s, kdg_st ? NULL : kdg_take);\n");
    kdg_printf(b, "  if (kdg_st) return kdg_st;\n");
    int o = 0;
    for (int r = 0; r < c->nr; r++)
      if (c->r[r].alias_of < 0) kdg_printf(b, "  *%s = kdg_take[%d];\n", c->r[r].name, o++);
    kdg_printf(b, "  return KD_OK;\n}\n\n");
  } else {
    kdg_printf(b, "  kdk_structured_release(&kdg_s, NULL);\n  return kdg_st;\n}\n\n");
  }
}

/* The structured wrapper of function c for one key. */
static void emit_structured_wrapper(gen_ctx *g, kdg_buf *b, const kdg_cfunc *c, const target *t) {
  sinfo si;
  if (!structured_info(g, c->f, &si)) return;
  bool meta_key = !strcmp(t->key, "Meta");
  const char *kernel = NULL;
  for (size_t k = 0; k < si.out->ndispatch; k++)
    if (!strcmp(si.out->dispatch[k].key, t->key)) kernel = si.out->dispatch[k].kernel;
  char impl[300];
  if (kernel) snprintf(impl, sizeof impl, "kdk_native_%s", kernel);
  kdg_swrap w = {c, si.oc, t->fn, si.meta, si.pre, si.iter, !meta_key && kernel ? impl : NULL, meta_key};
  kdg_emit_structured_wrapper(b, &w, g->d, g->path);
}

/* The unboxed wrapper (kd_unboxed_fn) around a target, and its boxed thunk. */
void kdg_emit_unboxed_wrapper(kdg_buf *b, const kdg_cfunc *c, const char *fn, int device_arg,
                              const char *uname) {
  kdg_printf(b, "static kd_status %s(const kd_call *call, const kd_arg *a, kd_value *r) {\n", uname);
  if (device_arg >= 0) {
    kdg_printf(b, "  return kdk__ops_backend_select(call, a, r, %d);\n}\n", device_arg);
    return;
  }
  kdg_printf(b, "  (void)call;\n");
  for (int i = 0; i < c->np; i++) {
    if (!c->p[i].scalar_default) continue;
    char expr[128];
    if (!kdg_scalar_default_expr(c->p[i].arg, expr, sizeof expr)) continue;
    kdg_printf(b, "  kd_scalar kdg_d%d = %s;\n", i, expr);
  }
  for (int i = 0; i < c->nr; i++) {
    if (c->r[i].alias_of >= 0) continue;
    const char *rt = kdg_ctype_of(c->r[i].kind)->ret;
    char base_t[64];
    snprintf(base_t, sizeof base_t, "%.*s", (int)(strlen(rt) - 1), rt); /* drop the last '*' */
    while (base_t[0] && base_t[strlen(base_t) - 1] == ' ') base_t[strlen(base_t) - 1] = 0;
    if (c->r[i].kind == KDG_C_SCALAR)
      kdg_printf(b, "  kd_scalar kdg_o%d;\n", i);
    else if (c->r[i].kind == KDG_C_TENSOR_LIST)
      kdg_printf(b, "  kd_tensor_list kdg_o%d = {NULL, 0};\n", i);
    else
      kdg_printf(b, "  %s%skdg_o%d = 0;\n", base_t, base_t[strlen(base_t) - 1] == '*' ? "" : " ", i);
  }
  kdg_printf(b, "  kd_status kdg_st = %s(", fn);
  int n = 0;
  for (int i = 0; i < c->np; i++) {
    kdg_printf(b, "%s", n++ ? ", " : "");
    if (c->p[i].scalar_default) {
      kdg_printf(b, "a[%d].s ? a[%d].s : &kdg_d%d", i, i, i);
      continue;
    }
    kdg_emit_unpack_arg(b, &c->p[i], i, "a");
  }
  for (int i = 0; i < c->nr; i++)
    if (c->r[i].alias_of < 0) kdg_printf(b, "%s&kdg_o%d", n++ ? ", " : "", i);
  kdg_printf(b, ");\n  if (kdg_st) return kdg_st;\n");
  /* Tensor[] results first: when a list cannot become a value, every
   * other result is still the wrapper's to release. */
  for (int i = 0; i < c->nr; i++) {
    if (c->r[i].alias_of >= 0 || c->r[i].kind != KDG_C_TENSOR_LIST) continue;
    kdg_printf(b, "  if ((kdg_st = kdk__value_take_tensor_list(&kdg_o%d, &r[%d], \"%s\"))) {\n", i, i,
               c->qualified);
    for (int j = 0; j < c->nr; j++) {
      if (j == i || c->r[j].alias_of >= 0) continue;
      if (c->r[j].kind == KDG_C_TENSOR_LIST && j < i)
        kdg_printf(b, "    kd_value_destroy(&r[%d]);\n", j);
      else if (c->r[j].kind == KDG_C_TENSOR_LIST)
        kdg_printf(b, "    kd_tensor_list_free(&kdg_o%d);\n", j);
      else if (c->r[j].kind == KDG_C_TENSOR || c->r[j].kind == KDG_C_OPT_TENSOR)
        kdg_printf(b, "    kd_tensor_release(kdg_o%d);\n", j);
    }
    kdg_printf(b, "    return kdg_st;\n  }\n");
  }
  for (int i = 0; i < c->nr; i++) {
    const kdg_cret *cr = &c->r[i];
    if (cr->alias_of >= 0) {
      /* the caller's own tensor: returned borrowed, as PyTorch returns
       * Tensor& (the boxed paths take a reference before the arguments go) */
      kdg_printf(b, "  r[%d] = kd_value_tensor_borrowed(a[%d].t);\n", i, cr->alias_of);
      continue;
    }
    switch (cr->kind) {
    case KDG_C_TENSOR:
    case KDG_C_OPT_TENSOR: kdg_printf(b, "  r[%d] = kdk__value_take_tensor(kdg_o%d);\n", i, i); break;
    case KDG_C_TENSOR_LIST: break; /* above */
    case KDG_C_INT: kdg_printf(b, "  r[%d] = kd_value_int(kdg_o%d);\n", i, i); break;
    case KDG_C_FLOAT: kdg_printf(b, "  r[%d] = kd_value_double(kdg_o%d);\n", i, i); break;
    case KDG_C_BOOL: kdg_printf(b, "  r[%d] = kd_value_bool(kdg_o%d);\n", i, i); break;
    default: kdg_printf(b, "  r[%d] = kd_value_scalar(kdg_o%d);\n", i, i); break;
    }
  }
  kdg_printf(b, "  return KD_OK;\n}\n");
}

static int write_register(gen_ctx *g, const char *out_dir) {
  kdg_buf b, defs, impls;
  kdg_buf_init(&b);
  kdg_buf_init(&defs);
  kdg_buf_init(&impls);
  generated(&b, g);
  kdg_printf(&b, "#include \"gen_support.h\"\n#include \"kdgen_all_native.h\"\n");
  kdg_sel_include(&b);
  kdg_printf(&b, "\n");
  size_t nimpl = 0;
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_cfunc *c = &g->cf[i];
    const kdg_func *f = c->f;
    if (!c->ok) continue;
    kdg_printf(&defs, "    {\"%s\", %zu, {", f->func, f->ntags < 8 ? f->ntags : (size_t)8);
    for (size_t k = 0; k < f->ntags && k < 8; k++) kdg_printf(&defs, "%s\"%s\"", k ? ", " : "", f->tags[k]);
    kdg_printf(&defs, "%s}},\n", f->ntags ? "" : "NULL");
    target t[16];
    int nt = targets_of(g, f, t, 16);
    for (int k = 0; k < nt; k++) {
      if (t[k].kind == TARGET_STRUCTURED) emit_structured_wrapper(g, &b, c, &t[k]);
      /* selective builds: the unboxed and boxed wrappers and the row of
       * (op, key) only when the allow-list has them (gen_select.h); the
       * structured wrapper stays for the direct calls, which a static link
       * drops with it unless the program calls them */
      bool sel = kdg_sel_guard_open(&b, g->ns, f, t[k].key);
      kdg_sel_guard_open(&impls, g->ns, f, t[k].key);
      char uname[600], bname[600];
      snprintf(uname, sizeof uname, "kdg_u_%.60s_%.400s", t[k].key, f->cname);
      snprintf(bname, sizeof bname, "kdg_b_%.60s_%.400s", t[k].key, f->cname);
      kdg_emit_unboxed_wrapper(&b, c, t[k].fn,
                               t[k].kind == TARGET_BACKEND_SELECT ? t[k].device_arg : -1, uname);
      kdg_printf(&b,
                 "static kd_status %s(const kd_call *call, kd_stack *stack) {\n"
                 "  return kdk__boxed_%s(call, stack, %s);\n}\n\n",
                 bname, f->cname, uname);
      kdg_printf(&impls, "    {\"%s%s%s\", \"%s\", %s, %s, \"%s\", \"%s:%d\"},\n",
                 f->name, *f->overload ? "." : "", f->overload, t[k].key, uname, bname, c->sig, g->src, t[k].line);
      kdg_sel_guard_close(&b, sel);
      kdg_sel_guard_close(&impls, sel);
      nimpl++;
    }
  }
  kdg_printf(&b, "static const kdk__gen_def kdg_defs[] = {\n%s};\n\n", defs.data ? defs.data : "");
  /* a selective build may leave out every row: the table ends with a
   * sentinel row that is not counted */
  kdg_printf(&b, "static const kdk__gen_impl kdg_impls[] = {\n%s    {NULL, NULL, NULL, NULL, NULL, NULL}};\n\n",
             nimpl ? impls.data : "");
  if (!strcmp(g->ns, "aten"))
    kdg_printf(&b,
               "kd_status kdk__ops_register(void) {\n"
               "  return kdk__ops_register_tables(\"%s\", \"%s\", kdg_defs, sizeof kdg_defs / sizeof kdg_defs[0],\n"
               "                                 kdg_impls, sizeof kdg_impls / sizeof kdg_impls[0] - 1);\n}\n",
               g->ns, g->src);
  else /* another library beside libkdops: its own registration function */
    kdg_printf(&b,
               "kd_status kdk__%s_register(kd_library **lib);\n"
               "kd_status kdk__%s_register(kd_library **lib) {\n"
               "  return kdk__ops_register_lib(\"%s\", \"%s\", kdg_defs, sizeof kdg_defs / sizeof kdg_defs[0],\n"
               "                              kdg_impls, sizeof kdg_impls / sizeof kdg_impls[0] - 1, lib);\n}\n",
               g->ns, g->ns, g->ns, g->src);
  char path[4096];
  snprintf(path, sizeof path, "%s/ops/gen_register.c", out_dir);
  int rc = kdg_write_file(path, &b, g->d);
  kdg_buf_free(&b);
  kdg_buf_free(&defs);
  kdg_buf_free(&impls);
  return rc;
}

/* kd/ops/all.h, all_native.h and kdk/native.h */
static int write_alls(gen_ctx *g, const char *out_dir, char **bases, size_t nbases) {
  kdg_buf a, n, k;
  kdg_buf_init(&a);
  kdg_buf_init(&n);
  kdg_buf_init(&k);
  header_open(&a, g, "KD_OPS_ALL_GEN_H");
  header_open(&n, g, "KD_KDGEN_ALL_NATIVE_H");
  header_open(&k, g, "KDK_NATIVE_H"); /* the kit's umbrella of include/kdk/native/ */
  for (size_t i = 0; i < nbases; i++) {
    kdg_printf(&k, "#include \"kdk/native/%s.h\"\n", bases[i]);
    kdg_printf(&a, "#include \"kd/ops/%s.h\"\n#include \"kd/ops/%s_dispatch.h\"\n", bases[i], bases[i]);
    kdg_printf(&n, "#include \"%s_native.h\"\n", bases[i]);
  }
  kdg_printf(&a, "\n#endif\n");
  kdg_printf(&n, "\n#endif\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/include/kd/ops_all.h", out_dir);
  int rc = kdg_write_file(path, &a, g->d);
  snprintf(path, sizeof path, "%s/ops/kdgen_all_native.h", out_dir);
  if (kdg_write_file(path, &n, g->d)) rc = -1;
  kdg_printf(&k, "\n#endif\n");
  snprintf(path, sizeof path, "%s/include/kdk/native.h", out_dir);
  if (kdg_write_file(path, &k, g->d)) rc = -1;
  kdg_buf_free(&a);
  kdg_buf_free(&n);
  kdg_buf_free(&k);
  return rc;
}

/* Marks the backends with direct calls, and reports each dispatch entry whose
 * key kdispatch has no runtime layout for (a note per entry, with its line). */
static void scan_keys(gen_ctx *g) {
  for (size_t k = 0; k < NBACKENDS; k++)
    g->backend_used[k] = !strcmp(backend_names[k][0], "CPU") || !strcmp(backend_names[k][0], "Meta");
  for (size_t i = 0; i < g->f->nfuncs; i++) {
    const kdg_func *f = &g->f->funcs[i];
    for (size_t j = 0; j < f->ndispatch; j++) {
      const kdg_dispatch *e = &f->dispatch[j];
      const char *key = e->key;
      for (size_t k = 0; k < NBACKENDS; k++)
        if (!strcmp(backend_names[k][0], key)) g->backend_used[k] = true;
      if (key_known(key)) {
        const kdg_func *out = kdg_structured_out(f);
        if (f == out && !*backend_of(key) && structured_kernel_clash(f, j))
          kdg_note(g->d, g->path, e->line,
                   "'%s': not generated: %s's kernel '%s' is also a structured impl of the group "
                   "(a kernel of %s takes the out function's parameters): give it another name",
                   f->qualified, e->key, e->kernel, e->key);
        continue;
      }
      char why[64];
      kdg_note(g->d, g->path, e->line, "'%s': not generated: %s has no %s in kdispatch (kernel '%s')",
               f->qualified, e->key, missing_reason(e->key, why, sizeof why), e->kernel);
    }
  }
}

/* "ops/native_functions.yaml" of "/src/kd/ops/native_functions.yaml". */
static const char *src_name(const char *path) {
  const char *last = NULL, *before = NULL;
  for (const char *p = path; *p; p++)
    if (*p == '/') {
      before = last;
      last = p;
    }
  return before ? before + 1 : path;
}

int kdg_generate(const kdg_file *f, const char *ns, const char *out_dir, kdg_diag *d) {
  if (!ns) ns = "aten";
  size_t before = d->errors;
  gen_ctx g = {f, f->path, ns, src_name(f->path), d, kd_host_calloc(f->nfuncs ? f->nfuncs : 1, sizeof(kdg_cfunc)), {false}};
  char **bases = kd_host_calloc(f->nfuncs ? f->nfuncs : 1, sizeof(char *));
  if (!g.cf || !bases) {
    kdg_error(d, f->path, 0, "out of memory");
    kd_host_free(g.cf);
    kd_host_free(bases);
    return -1;
  }
  size_t nbases = 0;
  for (size_t i = 0; i < f->nfuncs; i++) {
    kdg_build_cfunc(&f->funcs[i], ns, &g.cf[i], d, f->path);
    bool seen = false;
    for (size_t j = 0; j < nbases; j++)
      if (!strcmp(bases[j], f->funcs[i].base)) seen = true;
    if (!seen) bases[nbases++] = f->funcs[i].base;
  }
  if (d->errors == before) {
    scan_keys(&g);
    for (size_t i = 0; i < nbases; i++) {
      write_public_headers(&g, out_dir, bases[i]);
      write_native_header(&g, out_dir, bases[i]);
    }
    write_alls(&g, out_dir, bases, nbases);
    write_entry(&g, out_dir);
    write_direct(&g, out_dir);
    write_boxed(&g, out_dir);
    write_register(&g, out_dir);
    kdg_sel_write_dtypes(f, ns, out_dir, d);
  }
  kd_host_free(g.cf);
  kd_host_free(bases);
  return d->errors == before ? 0 : -1;
}
