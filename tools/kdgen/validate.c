/*
 * validate.c: the rules torchgen applies to native_functions.yaml, checked on
 * kdgen's model, and the grouping of variants (PyTorch's NativeFunctionsGroup).
 *
 * Each problem is one "FILE:LINE: error: reason" through kdg_error, at the
 * line of the key at fault when there is one.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "kd/dispatch.h"
#include "kd/memory.h"

/* Dispatch keys an entry may name: PyTorch's (torchgen's DispatchKey: a
 * functionality prefix and a backend component, plus the keys below) and
 * every runtime and alias key of kdispatch (include/kd/keys.h: AutogradCPU,
 * AutogradOther, ADInplaceOrView, Autograd, ...). Which of them kdgen
 * generates is gen.c's business: the runtime's keys are registered, the
 * others are notes. */
static const char *const dispatch_keys[] = {
    "MkldnnCPU",
    "ZeroTensor",
    "FPGA",
    "MAIA",
    "Vulkan",
    "Metal",
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CatchAll",
    "BackendSelect",
    "Tracer",
    "Profiler",
    "Mode1",
    "Mode2",
};

/* PyTorch's backend components and the functionalities that combine with
 * them (SparseCsrPrivateUse1, QuantizedXPU, ...). */
static const char *const backend_components[] = {
    "CPU", "CUDA", "HIP", "XLA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "MTIA", "Meta",
    "PrivateUse1", "PrivateUse2", "PrivateUse3",
};
static const char *const functionalities[] = {
    "", "Quantized", "SparseCsr", "Sparse", "NestedTensor", "Autograd",
};

bool kdg_known_dispatch_key(const char *k) {
  for (size_t i = 0; i < sizeof dispatch_keys / sizeof *dispatch_keys; i++)
    if (!strcmp(dispatch_keys[i], k)) return true;
  for (size_t f = 0; f < sizeof functionalities / sizeof *functionalities; f++) {
    size_t n = strlen(functionalities[f]);
    if (strncmp(k, functionalities[f], n)) continue;
    for (size_t c = 0; c < sizeof backend_components / sizeof *backend_components; c++)
      if (!strcmp(k + n, backend_components[c])) return true;
  }
  /* and every key of kdispatch's runtime (runtime and alias keys; Undefined,
   * the slot of calls without tensors, is no kernel's key) */
  kd_dispatch_key key;
  return kd_dispatch_key_from_name(k, &key) == KD_OK && key != KD_KEY_UNDEFINED;
}

static const char *const kind_names[] = {"functional", "inplace", "out=", "mutable", "scratch"};

typedef struct vctx {
  kdg_file *f;
  kdg_diag *d;
  kdg_func **by_name; /* sorted by qualified name */
  size_t nby_name;
} vctx;

#define ERR(fn, key, ...) kdg_error(V->d, V->f->path, kdg_key_line((fn), (key)), __VA_ARGS__)

/* ---- Lookup ------------------------------------------------------------- */

static int cmp_qualified(const void *a, const void *b) {
  const kdg_func *x = *(kdg_func *const *)a, *y = *(kdg_func *const *)b;
  int c = strcmp(x->qualified, y->qualified);
  if (c) return c;
  return (x > y) - (x < y); /* file order among duplicates */
}

static kdg_func *lookup(const vctx *V, const char *qualified) {
  size_t lo = 0, hi = V->nby_name;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(V->by_name[mid]->qualified, qualified) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < V->nby_name && !strcmp(V->by_name[lo]->qualified, qualified)) return V->by_name[lo];
  return NULL;
}

static const kdg_dispatch *dispatch_of(const kdg_func *fn, const char *key) {
  for (size_t i = 0; i < fn->ndispatch; i++)
    if (!strcmp(fn->dispatch[i].key, key)) return &fn->dispatch[i];
  return NULL;
}

static const kd_argument *argument_named(const kd_schema *s, const char *name) {
  for (size_t i = 0; i < kd_schema_num_arguments(s); i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    if (!strcmp(kd_argument_name(a), name)) return a;
  }
  return NULL;
}

static bool has_tag(const kdg_func *fn, const char *tag) {
  for (size_t i = 0; i < fn->ntags; i++)
    if (!strcmp(fn->tags[i], tag)) return true;
  return false;
}

static bool valid_op_name(const char *s) {
  /* name[.overload], both identifiers (the overload may be empty only without the dot) */
  const char *p = s;
  if (!(isalpha((unsigned char)*p) || *p == '_')) return false;
  while (isalnum((unsigned char)*p) || *p == '_') p++;
  if (!*p) return true;
  if (*p != '.') return false;
  p++;
  if (!*p) return false;
  while (isalnum((unsigned char)*p) || *p == '_') p++;
  return *p == '\0';
}

/* ---- One entry ---------------------------------------------------------- */

static void check_variants(vctx *V, kdg_func *fn) {
  if (!fn->variants_text) return;
  const char *s = fn->variants_text;
  for (;;) {
    const char *c = strchr(s, ',');
    size_t n = c ? (size_t)(c - s) : strlen(s);
    const char *w = s;
    while (n && isspace((unsigned char)*w)) w++, n--;
    while (n && isspace((unsigned char)w[n - 1])) n--;
    if (!((n == 8 && !memcmp(w, "function", 8)) || (n == 6 && !memcmp(w, "method", 6)))) {
      ERR(fn, "variants", "bad variant '%.*s' in 'variants' of '%s' (expected function, method)",
          (int)n, w, fn->qualified);
    }
    if (!c) break;
    s = c + 1;
  }
}

static void check_dispatch(vctx *V, kdg_func *fn) {
  const char *composites[] = {"CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
                              "CompositeImplicitAutograd"};
  for (size_t i = 0; i < fn->ndispatch; i++) {
    const kdg_dispatch *e = &fn->dispatch[i];
    if (!*e->key) {
      kdg_error(V->d, V->f->path, e->line, "empty dispatch key in 'dispatch' of '%s'",
                fn->qualified);
      continue;
    }
    if (!kdg_known_dispatch_key(e->key)) {
      kdg_error(V->d, V->f->path, e->line, "unknown dispatch key '%s' in 'dispatch' of '%s'",
                e->key, fn->qualified);
      continue;
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(fn->dispatch[j].key, e->key)) {
        kdg_error(V->d, V->f->path, e->line, "dispatch key '%s' is given twice in '%s'", e->key,
                  fn->qualified);
        break;
      }
  }
  if (fn->has_dispatch && fn->manual_kernel_registration)
    ERR(fn, "dispatch",
        "'%s' has both manual_kernel_registration and a dispatch table; with manual "
        "registration the table would be ignored",
        fn->qualified);

  size_t ncomp = 0;
  for (size_t i = 0; i < 3; i++) ncomp += dispatch_of(fn, composites[i]) != NULL;
  if (ncomp > 1)
    ERR(fn, "dispatch",
        "'%s' names more than one of CompositeExplicitAutograd, "
        "CompositeExplicitAutogradNonFunctional and CompositeImplicitAutograd; each one "
        "covers the others",
        fn->qualified);

  /* A table holding only the kernel kdgen would assume anyway. */
  if (fn->ndispatch == 1 && !strcmp(fn->dispatch[0].key, "CompositeImplicitAutograd")) {
    size_t n = strlen(fn->name);
    const char *k = fn->dispatch[0].kernel;
    bool same = fn->kind == KDG_OUT
                    ? strlen(k) == n + 4 && !strncmp(k, fn->name, n) && !strcmp(k + n, "_out")
                    : !strcmp(k, fn->name);
    if (same)
      ERR(fn, "dispatch",
          "the dispatch table of '%s' only names the default CompositeImplicitAutograd kernel "
          "'%s'; delete the table",
          fn->qualified, k);
  }

  if (fn->structured_delegate && !fn->structured && fn->kind != KDG_OUT) {
    for (size_t i = 0; i < fn->ndispatch; i++)
      if (!strcmp(fn->dispatch[i].key, "CPU") || !strcmp(fn->dispatch[i].key, "CUDA"))
        kdg_error(V->d, V->f->path, fn->dispatch[i].line,
                  "'%s' has structured_delegate, so its %s kernel comes from '%s'; remove %s "
                  "from its dispatch table",
                  fn->qualified, fn->dispatch[i].key, fn->structured_delegate,
                  fn->dispatch[i].key);
  }
  if (fn->has_ufunc_inner_loop) {
    if (!fn->structured)
      ERR(fn, "ufunc_inner_loop", "ufunc_inner_loop of '%s' needs structured: True",
          fn->qualified);
    for (size_t i = 0; i < fn->ndispatch; i++)
      if (!strcmp(fn->dispatch[i].key, "CPU") || !strcmp(fn->dispatch[i].key, "CUDA"))
        kdg_error(V->d, V->f->path, fn->dispatch[i].line,
                  "'%s' has ufunc_inner_loop, which provides its %s kernel; remove %s from its "
                  "dispatch table",
                  fn->qualified, fn->dispatch[i].key, fn->dispatch[i].key);
  }
}

/* kd_stubs (kdgen's extension, docs/CODEGEN.md): on a structured out=
 * variant only; each item a C identifier ("add_stub"), none twice. */
static void check_kd_stubs(vctx *V, kdg_func *fn) {
  if (!fn->nkd_stubs) return;
  if (!fn->structured) {
    ERR(fn, "kd_stubs",
        "kd_stubs of '%s' needs structured: True (it names the stubs a structured impl calls)",
        fn->qualified);
    return;
  }
  for (size_t i = 0; i < fn->nkd_stubs; i++) {
    const char *n = fn->kd_stubs[i];
    bool ok = (*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || *n == '_';
    for (const char *c = n; ok && *c; c++)
      ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
           *c == '_';
    if (!ok)
      ERR(fn, "kd_stubs", "kd_stubs of '%s': '%s' is not a stub name (a C identifier)",
          fn->qualified, n);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(fn->kd_stubs[j], n))
        ERR(fn, "kd_stubs", "kd_stubs of '%s' names '%s' twice", fn->qualified, n);
  }
}

static void check_structured(vctx *V, kdg_func *fn) {
  if (fn->structured && fn->kind != KDG_OUT)
    ERR(fn, "structured",
        "'%s' is structured but is not an out= variant; put structured on the out= variant "
        "(did you mean structured_delegate?)",
        fn->qualified);
  if (fn->structured && fn->structured_delegate)
    ERR(fn, "structured_delegate", "'%s' has both structured and structured_delegate",
        fn->qualified);
  if (fn->structured_delegate && fn->kind == KDG_OUT && !fn->structured)
    ERR(fn, "structured_delegate",
        "'%s' is an out= variant and cannot have structured_delegate (did you mean "
        "structured?)",
        fn->qualified);
  if ((fn->structured || fn->structured_delegate) && !fn->device_guard)
    ERR(fn, "device_guard", "structured kernels always guard the device: '%s' cannot have "
        "device_guard: False", fn->qualified);
  if (fn->structured_inherits && !fn->structured)
    ERR(fn, "structured_inherits", "structured_inherits of '%s' needs structured: True",
        fn->qualified);
  check_kd_stubs(V, fn);
  /* kdgen neither generates nor registers kernels of a manual entry, so a
   * structured flag would promise wrappers that never exist. */
  if (fn->manual_kernel_registration && (fn->structured || fn->structured_delegate))
    ERR(fn, fn->structured ? "structured" : "structured_delegate",
        "'%s' has both manual_kernel_registration and %s; its kernels are registered by "
        "hand, so remove %s",
        fn->qualified, fn->structured ? "structured" : "structured_delegate",
        fn->structured ? "structured" : "structured_delegate");
  if (fn->structured && fn->kind == KDG_OUT && !fn->has_dispatch && !fn->has_ufunc_inner_loop)
    ERR(fn, "structured",
        "structured out= variant '%s' has no dispatch table naming its impl kernels",
        fn->qualified);
  if (fn->structured && dispatch_of(fn, "CompositeImplicitAutograd"))
    ERR(fn, "dispatch",
        "structured out= variant '%s' cannot have a CompositeImplicitAutograd kernel",
        fn->qualified);

  if (fn->nprecomputed) {
    if (!fn->structured)
      ERR(fn, "precomputed", "precomputed of '%s' needs structured: True", fn->qualified);
    for (size_t i = 0; i < fn->nprecomputed; i++) {
      const kdg_precomputed *p = &fn->precomputed[i];
      if (!*p->replaces) {
        if (i + 1 != fn->nprecomputed)
          kdg_error(V->d, V->f->path, p->line,
                    "precomputed of '%s': only the last line may add fields without 'arg ->'",
                    fn->qualified);
      } else {
        if (!argument_named(fn->schema, p->replaces))
          kdg_error(V->d, V->f->path, p->line,
                    "precomputed of '%s' replaces '%s', which is not one of its arguments",
                    fn->qualified, p->replaces);
        for (size_t j = 0; j < i; j++)
          if (!strcmp(fn->precomputed[j].replaces, p->replaces))
            kdg_error(V->d, V->f->path, p->line,
                      "precomputed of '%s' replaces '%s' twice", fn->qualified, p->replaces);
      }
      for (size_t j = 0; j < p->nfields; j++) {
        const char *nm = p->fields[j].name;
        if (!nm) continue;
        bool lower = false;
        for (const char *c = nm; *c; c++) lower |= islower((unsigned char)*c) != 0;
        if (!lower)
          kdg_error(V->d, V->f->path, p->line,
                    "precomputed field '%s' of '%s' must not be all upper case", nm,
                    fn->qualified);
      }
    }
  }
}

/* Generated functions name their locals kdg_* (docs/CODEGEN.md, "Names"): no
 * argument or return may take that prefix. */
static void check_local_names(vctx *V, kdg_func *fn) {
  size_t na = kd_schema_num_arguments(fn->schema), nr = kd_schema_num_returns(fn->schema);
  for (size_t i = 0; i < na + nr; i++) {
    const kd_argument *a =
        i < na ? kd_schema_argument(fn->schema, i) : kd_schema_return(fn->schema, i - na);
    const char *n = kd_argument_name(a);
    if (n && !strncmp(n, "kdg_", 4))
      ERR(fn, "func",
          "%s '%s' of '%s' begins with 'kdg_', the prefix of the generated code's locals; "
          "rename it",
          i < na ? "argument" : "return", n, fn->qualified);
  }
}

static void check_entry(vctx *V, kdg_func *fn) {
  check_variants(V, fn);
  check_local_names(V, fn);
  if (fn->device_check && strcmp(fn->device_check, "NoCheck") &&
      strcmp(fn->device_check, "ExactSame"))
    ERR(fn, "device_check", "device_check of '%s' must be NoCheck or ExactSame, found '%s'",
        fn->qualified, fn->device_check);
  if (!strncmp(fn->name, "_foreach", 8) &&
      !(fn->device_check && !strcmp(fn->device_check, "NoCheck")))
    ERR(fn, "device_check",
        "'%s' is a _foreach operator and needs device_check: NoCheck (its kernels take "
        "tensors on several devices)",
        fn->qualified);
  if (fn->kind == KDG_OUT && fn->variants != KDG_VARIANT_FUNCTION)
    ERR(fn, "variants", "'%s' has out= arguments, so its variants must be 'function' only",
        fn->qualified);
  if (fn->python_module && (fn->variants & KDG_VARIANT_METHOD))
    ERR(fn, "python_module", "'%s' is in python_module '%s' and cannot be a method",
        fn->qualified, fn->python_module);
  for (size_t i = 0; i < fn->ncpp_no_default_args; i++) {
    const kd_argument *a = argument_named(fn->schema, fn->cpp_no_default_args[i]);
    if (!a || !kd_argument_default(a))
      ERR(fn, "cpp_no_default_args",
          "cpp_no_default_args of '%s' names '%s', which is not an argument with a default",
          fn->qualified, fn->cpp_no_default_args[i]);
  }
  if (fn->structured_delegate && strstr(fn->structured_delegate, "::"))
    ERR(fn, "structured_delegate",
        "structured_delegate of '%s' cannot name a namespace ('%s'); the delegate is in the "
        "same namespace",
        fn->qualified, fn->structured_delegate);
  if (fn->structured_inherits && strstr(fn->structured_inherits, "::"))
    ERR(fn, "structured_inherits", "structured_inherits of '%s' cannot name a namespace ('%s')",
        fn->qualified, fn->structured_inherits);

  if (V->f->known_tags) {
    for (size_t i = 0; i < fn->ntags; i++) {
      bool ok = false;
      for (size_t j = 0; j < V->f->nknown_tags && !ok; j++)
        ok = !strcmp(fn->tags[i], V->f->known_tags[j]);
      if (!ok)
        ERR(fn, "tags", "unknown tag '%s' in '%s' (the tags file does not define it)",
            fn->tags[i], fn->qualified);
    }
  }

  check_dispatch(V, fn);
  check_structured(V, fn);
}

/* ---- Across entries ----------------------------------------------------- */

static void check_names(vctx *V) {
  size_t first = 0;
  for (size_t i = 1; i < V->nby_name; i++) {
    kdg_func *a = V->by_name[first], *b = V->by_name[i];
    if (strcmp(a->qualified, b->qualified)) {
      first = i;
      continue;
    }
    kdg_error(V->d, V->f->path, b->line, "'%s' is declared twice (first at line %d)",
              b->qualified, a->line);
  }
}

/* Two operators that would give one C name: "a_b" and "a.b", "add_.Tensor"
 * and "add.Tensor_", "_x" and "internal_x", "x" and "redispatch_x" (whose
 * entry point is the redispatch form of x's), "add" and "cpu_add" (x's
 * direct call). Every name a function can give is listed, whether or not it
 * is generated for this file, so that adding a backend key never breaks a
 * file that was accepted. */
typedef struct cname_use {
  char name[320]; /* without "kd_" */
  const kdg_func *f;
  bool entry; /* f's entry point (a clash of others implies one of these) */
} cname_use;

static int cmp_cname_use(const void *a, const void *b) {
  const cname_use *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  return x->f->line - y->f->line;
}

static void check_cnames(vctx *V) {
  size_t n = V->nby_name, per = 2;
  if (n < 2) return;
  for (const char *const *p = kdg_direct_prefixes; *p; p++) per++;
  cname_use *v = kd_host_malloc(n * per * sizeof *v);
  if (!v) {
    kdg_error(V->d, V->f->path, 0, "out of memory");
    return;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const kdg_func *f = V->by_name[i];
    kdg_entry_name(v[m].name, sizeof v[m].name, f->cname);
    v[m].entry = true;
    v[m++].f = f;
    snprintf(v[m].name, sizeof v[m].name, "redispatch_%s", f->cname);
    v[m].entry = false;
    v[m++].f = f;
    for (const char *const *p = kdg_direct_prefixes; *p; p++) {
      snprintf(v[m].name, sizeof v[m].name, "%s_%s", *p, f->cname);
      v[m].entry = false;
      v[m++].f = f;
    }
  }
  qsort(v, m, sizeof *v, cmp_cname_use);
  for (size_t i = 1; i < m; i++) {
    const kdg_func *a = v[i - 1].f, *b = v[i].f;
    /* Two stems that meet under the same prefix meet as entry points too:
     * one message per pair, at the entry point or where a prefix meets. */
    bool same_stem = !strcmp(a->cname, b->cname) && !v[i - 1].entry && !v[i].entry;
    if (!strcmp(v[i - 1].name, v[i].name) && strcmp(a->qualified, b->qualified) && !same_stem)
      kdg_error(V->d, V->f->path, b->line,
                "'%s' and '%s' (line %d) both have the C name 'kd_%s'; rename one", b->qualified,
                a->qualified, a->line, v[i].name);
  }
  kd_host_free(v);
}

static void check_delegates(vctx *V) {
  for (size_t i = 0; i < V->f->nfuncs; i++) {
    kdg_func *fn = &V->f->funcs[i];
    if (!fn->schema || !fn->structured_delegate || strstr(fn->structured_delegate, "::") ||
        fn->structured || fn->kind == KDG_OUT)
      continue; /* those are reported by check_structured */
    kdg_func *to = lookup(V, fn->structured_delegate);
    if (!to) {
      ERR(fn, "structured_delegate", "'%s' delegates to '%s', which is not declared",
          fn->qualified, fn->structured_delegate);
      continue;
    }
    fn->delegate = to;
    if (!to->structured)
      ERR(fn, "structured_delegate",
          "'%s' delegates to '%s' (line %d), which is not structured; add 'structured: True' "
          "to '%s'",
          fn->qualified, to->qualified, to->line, to->qualified);
  }
}

static void check_tag_rules(vctx *V) {
  for (size_t i = 0; i < V->f->nfuncs; i++) {
    kdg_func *fn = &V->f->funcs[i];
    if (!fn->schema) continue;
    /* resize_ / resize_as_ (PyTorch's own exceptions) and set_ (PyTorch 2.x: it
     * swaps self's storage in place and has no out-of-place view). */
    if (has_tag(fn, "inplace_view") && strcmp(fn->qualified, "resize_") &&
        strcmp(fn->qualified, "resize_as_") && strcmp(fn->name, "set_")) {
      size_t n = strlen(fn->name);
      if (n < 2 || fn->name[n - 1] != '_') {
        ERR(fn, "tags",
            "'%s' has the tag inplace_view, so its name must end in '_' like every in-place "
            "operator",
            fn->qualified);
      } else {
        bool found = false;
        for (size_t j = 0; j < V->f->nfuncs && !found; j++)
          found = V->f->funcs[j].schema && !strcmp(V->f->funcs[j].name, fn->base);
        if (!found)
          ERR(fn, "tags",
              "'%s' has the tag inplace_view, but there is no out-of-place view operator "
              "'%s'",
              fn->qualified, fn->base);
      }
    }
  }
}

/* ---- autogen ------------------------------------------------------------ */

/* The names kdgen may generate from fn: its out= variant and its functional
 * variant. Written into out (2 slots); returns how many. */
static size_t autogen_candidates(const kdg_func *fn, char out[2][512]) {
  size_t n = 0;
  const char *base = fn->base;
  const char *ovl = fn->overload;
  if (fn->kind == KDG_INPLACE || fn->kind == KDG_FUNCTIONAL || fn->kind == KDG_MUTABLE) {
    /* out= */
    if (*ovl)
      snprintf(out[n++], 512, "%s.%s_out", base, ovl);
    else
      snprintf(out[n++], 512, "%s.out", base);
  }
  if (fn->kind == KDG_INPLACE || fn->kind == KDG_OUT) {
    if (*ovl && strcmp(ovl, "out"))
      snprintf(out[n++], 512, "%s.%.*s", base,
               (int)(strlen(ovl) >= 4 && !strcmp(ovl + strlen(ovl) - 4, "_out")
                         ? strlen(ovl) - 4
                         : strlen(ovl)),
               ovl);
    else
      snprintf(out[n++], 512, "%s", base);
  } else if (fn->kind == KDG_MUTABLE) {
    if (*ovl)
      snprintf(out[n++], 512, "%s.%s_functional", base, ovl);
    else
      snprintf(out[n++], 512, "%s_functional", base);
  }
  return n;
}

/* Whether a and b have the same signature (one group: PyTorch generates one
 * out= variant for a group whose functional and in-place entries both name it). */
static bool same_signature(const kdg_func *a, const kdg_func *b) {
  char x[2048], y[2048];
  size_t nx = kd_schema_signature(a->schema, x, sizeof x);
  size_t ny = kd_schema_signature(b->schema, y, sizeof y);
  return nx < sizeof x && ny < sizeof y && !strcmp(x, y);
}

static void check_autogen(vctx *V) {
  for (size_t i = 0; i < V->f->nfuncs; i++) {
    kdg_func *fn = &V->f->funcs[i];
    if (!fn->schema) continue;
    for (size_t j = 0; j < fn->nautogen; j++) {
      const char *a = fn->autogen[j];
      if (!valid_op_name(a)) {
        ERR(fn, "autogen", "autogen of '%s': '%s' is not an operator name (name or name.overload)",
            fn->qualified, a);
        continue;
      }
      kdg_func *there = lookup(V, a);
      if (there) {
        ERR(fn, "autogen",
            "autogen of '%s' names '%s', which is already declared at line %d",
            fn->qualified, a, there->line);
        continue;
      }
      char cand[2][512];
      size_t nc = autogen_candidates(fn, cand);
      bool ok = false;
      for (size_t c = 0; c < nc && !ok; c++) ok = !strcmp(cand[c], a);
      if (!ok) {
        if (nc == 2)
          ERR(fn, "autogen", "autogen of '%s' names '%s'; the variants that can be generated "
              "from it are '%s' and '%s'", fn->qualified, a, cand[0], cand[1]);
        else if (nc == 1)
          ERR(fn, "autogen", "autogen of '%s' names '%s'; the variant that can be generated "
              "from it is '%s'", fn->qualified, a, cand[0]);
        else
          ERR(fn, "autogen", "autogen of '%s' names '%s', but no variant can be generated from "
              "a %s operator", fn->qualified, a, kind_names[fn->kind]);
        continue;
      }
      for (size_t k = 0; k < j; k++)
        if (!strcmp(fn->autogen[k], a)) {
          ERR(fn, "autogen", "autogen of '%s' names '%s' twice", fn->qualified, a);
          break;
        }
    }
  }
  /* The same generated name from two entries. */
  for (size_t i = 0; i < V->f->nfuncs; i++) {
    kdg_func *fn = &V->f->funcs[i];
    for (size_t j = 0; j < fn->nautogen; j++)
      for (size_t k = 0; k < i; k++) {
        kdg_func *g = &V->f->funcs[k];
        for (size_t m = 0; m < g->nautogen; m++)
          if (*fn->autogen[j] && !strcmp(fn->autogen[j], g->autogen[m]) &&
              !same_signature(fn, g))
            ERR(fn, "autogen", "autogen of '%s' names '%s', which '%s' (line %d) already "
                "generates", fn->qualified, fn->autogen[j], g->qualified, g->line);
      }
  }
}

/* ---- Groups ------------------------------------------------------------- */

typedef struct sigent {
  char *sig;
  kdg_func *fn;
  size_t index;
} sigent;

static int cmp_sig(const void *a, const void *b) {
  const sigent *x = a, *y = b;
  int c = strcmp(x->sig, y->sig);
  if (c) return c;
  return (x->index > y->index) - (x->index < y->index);
}

static int cmp_group_order(const void *a, const void *b) {
  const kdg_group *x = a, *y = b;
  const kdg_func *fx = x->functional ? x->functional : x->out;
  const kdg_func *fy = y->functional ? y->functional : y->out;
  /* the first member in file order */
  const kdg_func *mx[4] = {x->functional, x->inplace, x->mutable_, x->out};
  const kdg_func *my[4] = {y->functional, y->inplace, y->mutable_, y->out};
  for (int i = 0; i < 4; i++) {
    if (mx[i] && mx[i] < fx) fx = mx[i];
    if (my[i] && my[i] < fy) fy = my[i];
  }
  return (fx > fy) - (fx < fy);
}

static void check_group(vctx *V, kdg_group *g) {
  kdg_func *members[3] = {g->functional, g->inplace, g->mutable_};
  kdg_func *out = g->out;
  for (int i = 0; i < 3; i++) {
    kdg_func *m = members[i];
    if (!m) continue;
    if (g->structured) {
      if (!m->structured_delegate)
        ERR(m, "func",
            "'%s' has the signature of the structured out= variant '%s' (line %d) but no "
            "'structured_delegate: %s'",
            m->qualified, out->qualified, out->line, out->qualified);
      else if (strcmp(m->structured_delegate, out->qualified))
        ERR(m, "structured_delegate",
            "'%s' delegates to '%s', but the out= variant with its signature is '%s' (line %d)",
            m->qualified, m->structured_delegate, out->qualified, out->line);
    } else if (m->structured_delegate && m->delegate && m->delegate->structured) {
      ERR(m, "structured_delegate",
          "'%s' delegates to '%s' (line %d), but its own out= variant is '%s' (line %d), which "
          "is not structured",
          m->qualified, m->structured_delegate, m->delegate->line, out->qualified, out->line);
    }
  }
}

static int build_groups(vctx *V) {
  kdg_file *f = V->f;
  /* A second validation starts over. */
  for (size_t i = 0; i < f->ngroups; i++) kd_host_free(f->groups[i].signature);
  kd_host_free(f->groups);
  f->groups = NULL;
  f->ngroups = 0;
  for (size_t i = 0; i < f->nfuncs; i++) f->funcs[i].group = NULL;
  size_t n = 0;
  sigent *e = kd_host_calloc(f->nfuncs ? f->nfuncs : 1, sizeof *e);
  if (!e) return -1;
  int rc = 0;
  for (size_t i = 0; i < f->nfuncs; i++) {
    kdg_func *fn = &f->funcs[i];
    if (!fn->schema) continue;
    size_t len = kd_schema_signature(fn->schema, NULL, 0);
    char *s = kd_host_malloc(len + 1);
    if (!s) {
      rc = -1;
      goto done;
    }
    kd_schema_signature(fn->schema, s, len + 1);
    e[n].sig = s;
    e[n].fn = fn;
    e[n].index = i;
    n++;
  }
  qsort(e, n, sizeof *e, cmp_sig);

  size_t ngroups = 0;
  f->groups = kd_host_calloc(n ? n : 1, sizeof *f->groups);
  if (!f->groups) {
    rc = -1;
    goto done;
  }
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && !strcmp(e[j].sig, e[i].sig)) j++;
    kdg_func *slot[5] = {NULL, NULL, NULL, NULL, NULL};
    for (size_t k = i; k < j; k++) {
      kdg_func *fn = e[k].fn;
      unsigned kind = (unsigned)fn->kind;
      if (kind > 4) continue;
      if (slot[kind] && !strcmp(slot[kind]->qualified, fn->qualified)) continue; /* reported */
      if (slot[kind]) {
        kdg_error(V->d, f->path, fn->line,
                  "'%s' and '%s' (line %d) have the same signature '%s' and are both %s "
                  "variants",
                  fn->qualified, slot[kind]->qualified, slot[kind]->line, e[k].sig,
                  kind_names[kind]);
        continue;
      }
      slot[kind] = fn;
    }
    kdg_func *out = slot[KDG_OUT];
    if (out && (slot[KDG_FUNCTIONAL] || slot[KDG_INPLACE] || slot[KDG_MUTABLE])) {
      kdg_group *g = &f->groups[ngroups++];
      g->signature = e[i].sig;
      e[i].sig = NULL;
      g->functional = slot[KDG_FUNCTIONAL];
      g->inplace = slot[KDG_INPLACE];
      g->mutable_ = slot[KDG_MUTABLE];
      g->out = out;
      g->structured = out->structured;
    }
    i = j;
  }
  f->ngroups = ngroups;
  qsort(f->groups, ngroups, sizeof *f->groups, cmp_group_order);
  for (size_t i = 0; i < ngroups; i++) {
    kdg_group *g = &f->groups[i];
    kdg_func *m[4] = {g->functional, g->inplace, g->mutable_, g->out};
    for (int k = 0; k < 4; k++)
      if (m[k]) m[k]->group = g;
  }
  for (size_t i = 0; i < ngroups; i++) check_group(V, &f->groups[i]);

  /* Structured functions outside any group. */
  for (size_t i = 0; i < f->nfuncs; i++) {
    kdg_func *fn = &f->funcs[i];
    if (!fn->schema || fn->group) continue;
    if (fn->structured && fn->kind == KDG_OUT)
      ERR(fn, "structured",
          "'%s' is structured, but no functional or in-place variant has its signature",
          fn->qualified);
    if (fn->structured_delegate && fn->delegate && fn->delegate->structured &&
        fn->kind != KDG_OUT)
      ERR(fn, "structured_delegate",
          "'%s' delegates to '%s' (line %d), whose signature differs; the delegate must be "
          "the out= variant of the same operator",
          fn->qualified, fn->delegate->qualified, fn->delegate->line);
  }
done:
  for (size_t i = 0; i < n; i++) kd_host_free(e[i].sig);
  kd_host_free(e);
  return rc;
}

int kdg_validate(kdg_file *f, kdg_diag *d) {
  size_t before = d->errors;
  vctx V0 = {f, d, NULL, 0}, *V = &V0;
  V->by_name = kd_host_malloc((f->nfuncs ? f->nfuncs : 1) * sizeof *V->by_name);
  if (!V->by_name) {
    kdg_error(d, f->path, 0, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < f->nfuncs; i++)
    if (f->funcs[i].schema && f->funcs[i].qualified) V->by_name[V->nby_name++] = &f->funcs[i];
  qsort(V->by_name, V->nby_name, sizeof *V->by_name, cmp_qualified);

  check_names(V);
  check_cnames(V);
  for (size_t i = 0; i < f->nfuncs; i++)
    if (f->funcs[i].schema) check_entry(V, &f->funcs[i]);
  check_delegates(V);
  check_tag_rules(V);
  check_autogen(V);
  if (build_groups(V) != 0) kdg_error(d, f->path, 0, "out of memory");

  kd_host_free(V->by_name);
  return d->errors == before ? 0 : -1;
}
