/*
 * gen_backend.c: kdgen's generation for an out-of-tree backend (docs/CODEGEN.md,
 * "Backends"). From a loaded backend YAML (backend.c) and libkdops' own YAML
 * (--native: what libkdops implements) to four files:
 *
 *   <name>_functions.h  exactly what the author writes: structured impls of
 *                       LegacyMeta groups, meta + impl of Customized groups,
 *                       unstructured kernels, the loops of the dispatch stubs
 *                       the Legacy groups' upstream impls call, and the device
 *                       record;
 *   <name>_direct.h     direct calls of the backend's kernels (kd_<name>_<cname>);
 *   <name>_plugin.c     the structured wrappers for the backend's key, the
 *                       unboxed adapters, the registration table, the direct
 *                       calls and the plugin's entry point (KD_PLUGIN);
 *   <name>_entries.txt  one line per backend entry: what was generated, or why not.
 *
 * The generated code uses only installed headers (kd/, kdk/). Output is
 * deterministic: it follows the order of the backend file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_backend.h"
#include "gen_impl.h"
#include "gen_select.h"
#include "kd/dispatch.h"
#include "kd/memory.h"

/* ---- The C view of one function: gen.c's (kdg_fill_cfunc), with what a
 * backend kernel cannot take or give as the reason in why[] ------------------ */

static bool b_build(const kdg_func *f, const char *ns, kdg_cfunc *c, char *why, size_t cap) {
  if (!f->schema) {
    memset(c, 0, sizeof *c);
    snprintf(why, cap, "its schema did not parse");
    return false;
  }
  if (!kdg_fill_cfunc(f, ns, c)) {
    snprintf(why, cap, "too many arguments or returns for kdgen");
    return false;
  }
  char t[256];
  for (int i = 0; i < c->np; i++)
    if (c->p[i].kind == KDG_C_VALUE) {
      kd_type_format(kd_argument_type(c->p[i].arg), t, sizeof t);
      snprintf(why, cap, "kdgen cannot pass a '%s' argument ('%s') to a backend kernel", t,
               kd_argument_name(c->p[i].arg));
      return false;
    }
  if (c->bad_ret >= 0) {
    kd_type_format(kd_argument_type(kd_schema_return(f->schema, (size_t)c->bad_ret)), t, sizeof t);
    snprintf(why, cap, "kdgen cannot return a '%s' from a backend kernel", t);
    return false;
  }
  c->ok = true;
  return true;
}

/* The C type of a precomputed field a backend's impl takes: gen.c's, but for
 * what it would take by pointer or as a memory format (not supported here). */
static const char *b_precomputed_ctype(const char *schema_type) {
  if (!strcmp(schema_type, "MemoryFormat") || kdg_precomputed_byref(schema_type)) return NULL;
  return kdg_precomputed_ctype(schema_type);
}

/* ---- What each entry becomes ------------------------------------------------- */

typedef enum plan_kind {
  PLAN_NONE,       /* not generated: why[] says why */
  PLAN_STRUCTURED, /* a structured wrapper: meta + impl */
  PLAN_KERNEL,     /* an unstructured kernel, called with the entry point's parameters */
} plan_kind;

typedef struct bplan {
  const kdg_bentry *e;
  const kdg_func *f; /* the operator (upstream's, or the backend's new one) */
  plan_kind kind;
  /* The key the plan registers: NULL for the backend's main key; else
   * another functionality of its column as written ("SparsePrivateUse1",
   * "AutogradPrivateUse1"), always an unstructured kernel (an "other-key
   * plan"), registered at key_enum ("KD_KEY_SPARSE_PRIVATEUSE1"). */
  const char *key;
  char key_enum[64];
  kdg_strategy strategy; /* of the plan's key (kdg_bentry_key_strategy) */
  char why[600];
  kdg_cfunc c;            /* C view of f */
  char qualified[300]; /* "aten::add.Tensor" */
  const char *ns;
  /* PLAN_KERNEL */
  char fn[300];
  bool author; /* the author writes fn */
  /* PLAN_STRUCTURED */
  const kdg_func *out;      /* the group's out function (upstream) */
  const kdg_bentry *oe;     /* the backend's entry of the out function, or NULL */
  const kdg_func *nout;     /* libkdops' out function (Legacy, LegacyMeta) */
  kdg_cfunc oc;                 /* C view of out */
  char meta[300], impl[300], pre[300];
  bool iter, author_meta, author_impl;
  const kdg_precomputed *precomputed;
  size_t nprecomputed;
  char **stubs; /* Legacy: the stubs libkdops' impl calls (native's kd_stubs) */
  size_t nstubs;
  /* device_check: ExactSame (the default) over two or more tensor parameters */
  bool check;
  /* device_guard (the default): the parameter whose device becomes current,
   * -1 for none */
  int guard;
} bplan;

typedef struct bgen {
  const kdg_backend *b;
  const kdg_file *native;
  kdg_diag *d;
  bplan *plans;
  size_t nplans;
  char key_enum[64];   /* "KD_KEY_PRIVATEUSE1" */
  char dev_enum[64];   /* "KD_DEVICE_PRIVATEUSE1" */
  const char *name, *prefix, *ns, *up_ns;
} bgen;

static const kdg_bentry *b_entry_of(const kdg_backend *b, const kdg_func *f) {
  for (size_t i = 0; i < b->nentries; i++)
    if (b->entries[i].up == f) return &b->entries[i];
  return NULL;
}

/* libkdops' kernel of `key` in fn's dispatch, or NULL. */
static const char *b_kernel_for(const kdg_func *fn, const char *key) {
  for (size_t i = 0; i < fn->ndispatch; i++)
    if (!strcmp(fn->dispatch[i].key, key)) return fn->dispatch[i].kernel;
  return NULL;
}

/* libkdops' function of the same name and schema as f, or NULL with why[] set. */
static const kdg_func *b_native_of(const bgen *g, const kdg_func *f, char *why, size_t cap) {
  if (!g->native) {
    snprintf(why, cap, "no --native file: kdgen does not know what libkdops implements");
    return NULL;
  }
  const kdg_func *n = kdg_find(g->native, f->qualified);
  if (!n) {
    snprintf(why, cap, "libkdops does not implement '%s'", f->qualified);
    return NULL;
  }
  if (strcmp(n->func, f->func)) {
    snprintf(why, cap, "libkdops' schema of '%s' differs from upstream's: '%s' (%s:%d)",
             f->qualified, n->func, g->native->path, n->line);
    return NULL;
  }
  return n;
}

/* The stubs libkdops' impl of out variant n calls (its kd_stubs: list). */
static char **b_native_stubs(const kdg_func *n, size_t *count) {
  *count = n->nkd_stubs;
  return n->kd_stubs;
}

static void b_plan_structured(bgen *g, bplan *p) {
  const kdg_bentry *e = p->e;
  const kdg_func *out = kdg_structured_out(p->f);
  if (!out) {
    snprintf(p->why, sizeof p->why, "'%s' is not in a structured group upstream", p->f->qualified);
    return;
  }
  p->out = out;
  p->oe = b_entry_of(g->b, out);
  if (!b_build(out, p->ns, &p->oc, p->why, sizeof p->why)) return;
  const kdg_func *ofn = out->group && out->group->functional ? out->group->functional : out;
  const kdg_bentry *ke = p->oe ? p->oe : e; /* the entry naming the group's kernel */
  kdg_strategy st = e->strategy;
  if (st == KDG_STRATEGY_LEGACY || st == KDG_STRATEGY_LEGACY_META) {
    const kdg_func *n = b_native_of(g, out, p->why, sizeof p->why);
    if (!n) return;
    if (!n->structured) {
      snprintf(p->why, sizeof p->why,
               "libkdops implements '%s' but not as a structured kernel (%s:%d): its meta cannot be "
               "reused",
               out->qualified, g->native->path, n->line);
      return;
    }
    const kdg_func *nfn = n->group && n->group->functional ? n->group->functional : n;
    p->nout = n;
    snprintf(p->meta, sizeof p->meta, "kdk_meta_%s", nfn->cname);
    if (n->nprecomputed) snprintf(p->pre, sizeof p->pre, "kdk_precompute_%s", nfn->cname);
    p->precomputed = n->precomputed;
    p->nprecomputed = n->nprecomputed;
    p->iter = n->structured_inherits && !strcmp(n->structured_inherits, "TensorIteratorBase");
    if (st == KDG_STRATEGY_LEGACY) {
      const char *k = b_kernel_for(n, "CPU");
      if (!k) {
        snprintf(p->why, sizeof p->why, "libkdops has no CPU impl of '%s' (%s:%d) to reuse",
                 out->qualified, g->native->path, n->line);
        return;
      }
      p->stubs = b_native_stubs(n, &p->nstubs);
      if (!p->nstubs) {
        /* libkdops' impl runs its loop on the host (no kd_stubs:): bound to the
         * backend's key it would read device memory as host memory */
        snprintf(p->why, sizeof p->why,
                 "libkdops' impl of '%s' (%s:%d) reaches no dispatch stub (no kd_stubs:), so its loop "
                 "cannot run on the device: name the backend's impl in dispatch: (LegacyMeta)",
                 out->qualified, g->native->path, n->line);
        return;
      }
      snprintf(p->impl, sizeof p->impl, "kdk_native_%s", k);
    } else {
      if (!ke->kernel) {
        snprintf(p->why, sizeof p->why, "no kernel for %s in the group of '%s'", g->b->opts.key,
                 out->qualified);
        return;
      }
      snprintf(p->impl, sizeof p->impl, "%s%s", g->prefix, ke->kernel);
      p->author_impl = true;
    }
  } else if (st == KDG_STRATEGY_CUSTOMIZED) {
    if (!ke->kernel) {
      snprintf(p->why, sizeof p->why, "no kernel for %s in the group of '%s'", g->b->opts.key,
               out->qualified);
      return;
    }
    snprintf(p->meta, sizeof p->meta, "%smeta_%s", g->prefix, ofn->cname);
    snprintf(p->impl, sizeof p->impl, "%s%s", g->prefix, ke->kernel);
    if (ke->nprecomputed) snprintf(p->pre, sizeof p->pre, "%sprecompute_%s", g->prefix, ofn->cname);
    p->precomputed = ke->precomputed;
    p->nprecomputed = ke->nprecomputed;
    p->iter = ke->structured_inherits && !strcmp(ke->structured_inherits, "TensorIteratorBase");
    p->author_meta = p->author_impl = true;
    for (size_t i = 0; i < p->nprecomputed; i++)
      for (size_t q = 0; q < p->precomputed[i].nfields; q++)
        if (!b_precomputed_ctype(p->precomputed[i].fields[q].type)) {
          snprintf(p->why, sizeof p->why, "precomputed type '%s' is not supported by kdgen",
                   p->precomputed[i].fields[q].type);
          return;
        }
  } else {
    snprintf(p->why, sizeof p->why, "no kernel for %s", g->b->opts.key);
    return;
  }
  /* The entry's arguments must match the out function's inputs one to one. */
  int nin = 0, cin = 0;
  for (int i = 0; i < p->oc.np; i++) nin += !p->oc.p[i].is_out;
  for (int i = 0; i < p->c.np; i++) cin += !p->c.p[i].is_out;
  if (nin != cin) {
    snprintf(p->why, sizeof p->why, "'%s' delegates to '%s', whose arguments differ",
             p->f->qualified, out->qualified);
    return;
  }
  p->kind = PLAN_STRUCTURED;
}

static void b_plan_kernel(bgen *g, bplan *p) {
  const kdg_bentry *e = p->e;
  if (!e->kernel) {
    snprintf(p->why, sizeof p->why, "no kernel for %s", g->b->opts.key);
    return;
  }
  if (e->strategy == KDG_STRATEGY_LEGACY) {
    const kdg_func *n = b_native_of(g, p->f, p->why, sizeof p->why);
    if (!n) return;
    bool found = false;
    for (size_t i = 0; i < n->ndispatch; i++)
      if (!strcmp(n->dispatch[i].kernel, e->kernel)) found = true;
    if (!found) {
      snprintf(p->why, sizeof p->why, "libkdops has no kernel '%s' for '%s' (%s:%d)", e->kernel,
               p->f->qualified, g->native->path, n->line);
      return;
    }
    snprintf(p->fn, sizeof p->fn, "kdk_native_%s", e->kernel);
  } else {
    snprintf(p->fn, sizeof p->fn, "%s%s", g->prefix, e->kernel);
    p->author = true;
  }
  p->kind = PLAN_KERNEL;
}

static bool b_is_tensor(const kdg_cparam *q) {
  return q->kind == KDG_C_TENSOR || q->kind == KDG_C_OPT_TENSOR;
}

/* torchgen's RegisterDispatchKey: device_check (the entry's, else upstream's;
 * ExactSame unless NoCheck) checks every tensor argument; device_guard (the
 * entry's, else upstream's; true unless False) makes the device of the first
 * of self, the out arguments, the other tensor arguments (else the Device
 * argument of a factory) current for the call. */
static void b_plan_device(bplan *p) {
  p->guard = -1;
  const char *dc = p->e->device_check ? p->e->device_check : p->f->device_check;
  bool guard = p->e->device_guard >= 0 ? p->e->device_guard != 0 : p->f->device_guard;
  int ntensors = 0;
  for (int i = 0; i < p->c.np; i++) ntensors += b_is_tensor(&p->c.p[i]);
  p->check = (!dc || strcmp(dc, "NoCheck")) && ntensors > 1;
  if (!guard) return;
  for (int i = 0; i < p->c.np && p->guard < 0; i++)
    if (b_is_tensor(&p->c.p[i]) && !strcmp(p->c.p[i].name, "self")) p->guard = i;
  for (int i = 0; i < p->c.np && p->guard < 0; i++)
    if (b_is_tensor(&p->c.p[i]) && p->c.p[i].is_out) p->guard = i;
  for (int i = 0; i < p->c.np && p->guard < 0; i++)
    if (b_is_tensor(&p->c.p[i])) p->guard = i;
  for (int i = 0; i < p->c.np && p->guard < 0; i++)
    if (p->c.p[i].kind == KDG_C_DEVICE || p->c.p[i].kind == KDG_C_OPT_DEVICE) p->guard = i;
}

static void b_plan(bgen *g, bplan *p) {
  const kdg_bentry *e = p->e;
  p->f = e->up;
  p->strategy = e->strategy;
  p->ns = e->is_new ? g->ns : g->up_ns;
  if (!p->f) {
    snprintf(p->why, sizeof p->why, "unresolved");
    return;
  }
  snprintf(p->qualified, sizeof p->qualified, "%s::%s", p->ns, p->f->qualified);
  if (e->strategy == KDG_STRATEGY_NONE) {
    snprintf(p->why, sizeof p->why, "no kernel for %s (the entry names only other keys)",
             g->b->opts.key);
    return;
  }
  if (!b_build(p->f, p->ns, &p->c, p->why, sizeof p->why)) return;
  if (e->structured)
    b_plan_structured(g, p);
  else
    b_plan_kernel(g, p);
  b_plan_device(p);
}

/* The enum of a key of the backend's column: "SparsePrivateUse1" ->
 * "KD_KEY_SPARSE_PRIVATEUSE1" (kd/keys.h). False when `key` is none. */
static bool b_key_enum(const char *key, char *dst, size_t cap) {
  const char *tok = kdg_sel_key_token(key); /* the enum's suffix, or NULL */
  if (!tok) return false;
  snprintf(dst, cap, "KD_KEY_%s", tok);
  return true;
}

/* An other-key plan: entry p->e's kernel for p->key, another functionality of
 * the backend's column, as an unstructured kernel with the operator's own
 * parameters (torch_musa registers its SparsePrivateUse1, ... kernels so).
 * Legacy binds libkdops' kernel of the same functionality on CPU (kdgen
 * cannot tell whether it runs on the device: the author names it on
 * purpose); Customized is the author's prefix + kernel. The autograd key's
 * kernel runs above the device: no device check, no guard. */
static void b_plan_other(bgen *g, bplan *p) {
  const kdg_bentry *e = p->e;
  p->f = e->up;
  p->ns = e->is_new ? g->ns : g->up_ns;
  p->guard = -1;
  if (!p->f) {
    snprintf(p->why, sizeof p->why, "unresolved");
    return;
  }
  snprintf(p->qualified, sizeof p->qualified, "%s::%s", p->ns, p->f->qualified);
  if (!b_key_enum(p->key, p->key_enum, sizeof p->key_enum)) {
    snprintf(p->why, sizeof p->why, "the runtime has no key %s", p->key);
    return;
  }
  p->strategy = kdg_bentry_key_strategy(g->b, e, p->key);
  const char *kernel = NULL;
  for (size_t i = 0; i < e->ndispatch && !kernel; i++)
    if (!strcmp(e->dispatch[i].key, p->key)) kernel = e->dispatch[i].kernel;
  if (!kernel || p->strategy == KDG_STRATEGY_NONE) {
    snprintf(p->why, sizeof p->why, "no kernel for %s", p->key);
    return;
  }
  if (!b_build(p->f, p->ns, &p->c, p->why, sizeof p->why)) return;
  if (p->strategy == KDG_STRATEGY_LEGACY) {
    const kdg_func *n = b_native_of(g, p->f, p->why, sizeof p->why);
    if (!n) return;
    /* the same functionality on CPU: SparsePrivateUse1 -> SparseCPU */
    char rel[128];
    snprintf(rel, sizeof rel, "%.*sCPU", (int)(strlen(p->key) - strlen(g->b->opts.key)), p->key);
    const char *k = b_kernel_for(n, rel);
    if (!k || strcmp(k, kernel)) {
      snprintf(p->why, sizeof p->why, "libkdops has no %s kernel '%s' for '%s' (%s:%d) to reuse", rel,
               kernel, p->f->qualified, g->native->path, n->line);
      return;
    }
    snprintf(p->fn, sizeof p->fn, "kdk_native_%s", kernel);
  } else {
    snprintf(p->fn, sizeof p->fn, "%s%s", g->prefix, kernel);
    p->author = true;
  }
  p->kind = PLAN_KERNEL;
  kd_functionality fn;
  kd_dispatch_key k;
  if (kd_dispatch_key_from_name(p->key, &k) == KD_OK && kd_dispatch_key_split(k, &fn, NULL) &&
      fn == KD_FUNCTIONALITY_AUTOGRAD)
    return;
  b_plan_device(p);
}

/* The key name a plan registers ("PrivateUse1", "SparsePrivateUse1"). */
static const char *b_key_of(const bgen *g, const bplan *p) { return p->key ? p->key : g->b->opts.key; }

/* ---- Writers -------------------------------------------------------------------- */

#define B_GENERATED "/* @generated by kdgen from %s. Do not edit. */\n"

static void b_schema_comment(kdg_buf *b, const bplan *p, const kdg_func *f) {
  kdg_printf(b, "/* %s::%s */\n", p->ns, f->func);
}

/* meta's parameters after `s` (and `iter`): the inputs, then `pre`. */
static void b_meta_params(kdg_buf *b, const bplan *p) {
  kdg_printf(b, "kdk_structured *s%s", p->iter ? ", kdk_iter *iter" : "");
  for (int i = 0; i < p->oc.np; i++)
    if (!p->oc.p[i].is_out) kdg_print_param(b, ", ", p->oc.p[i].kind, p->oc.p[i].name);
  if (*p->pre) kdg_printf(b, ", %s *pre", p->pre);
}

static const kdg_precomputed *b_replaced(const bplan *p, const char *arg) {
  return kdg_replaced_in(p->precomputed, p->nprecomputed, arg);
}

/* impl's parameters: inputs (precomputed fields in place of what they
 * replace, "add" lines last), then the outputs. */
static void b_impl_params(kdg_buf *b, const bplan *p) {
  kdg_printf(b, "kdk_structured *s%s", p->iter ? ", kdk_iter *iter" : "");
  for (int i = 0; i < p->oc.np; i++) {
    if (p->oc.p[i].is_out) continue;
    const kdg_precomputed *pr = b_replaced(p, kd_argument_name(p->oc.p[i].arg));
    if (pr) {
      for (size_t q = 0; q < pr->nfields; q++)
        kdg_printf(b, ", %s %s", b_precomputed_ctype(pr->fields[q].type), pr->fields[q].name);
      continue;
    }
    kdg_print_param(b, ", ", p->oc.p[i].kind, p->oc.p[i].name);
  }
  const kdg_precomputed *add = b_replaced(p, "");
  if (add)
    for (size_t q = 0; q < add->nfields; q++)
      kdg_printf(b, ", %s %s", b_precomputed_ctype(add->fields[q].type), add->fields[q].name);
  for (int i = 0; i < p->oc.np; i++)
    if (p->oc.p[i].is_out) kdg_printf(b, ", kd_tensor *%s", p->oc.p[i].name);
}

static void b_upper(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src[i] && i + 1 < cap; i++) {
    char ch = src[i];
    dst[i] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
  }
  dst[i] = 0;
}

static bool b_seen(char **list, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(list[i], s)) return true;
  return false;
}

/* Every stub of the Legacy groups, once, in file order. */
static size_t b_stubs(const bgen *g, char **list, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind != PLAN_STRUCTURED) continue;
    for (size_t s = 0; s < p->nstubs; s++)
      if (n < cap && !b_seen(list, n, p->stubs[s])) list[n++] = p->stubs[s];
  }
  return n;
}

/* A generated header's first lines: where it comes from, then its guard
 * KDGEN_<NAME>_<WHAT>_H. */
static void b_header_open(const bgen *g, kdg_buf *b, const char *what) {
  char un[128];
  b_upper(un, sizeof un, g->name);
  kdg_printf(b, B_GENERATED "#ifndef KDGEN_%s_%s_H\n#define KDGEN_%s_%s_H\n\n", g->b->path, un, what,
             un, what);
}

static int b_write_functions(bgen *g, const char *out_dir) {
  kdg_buf b;
  kdg_buf_init(&b);
  b_header_open(g, &b, "FUNCTIONS");
  kdg_printf(&b,
             "/* What the author of the backend \"%s\" writes (docs/CODEGEN.md, \"Backends\").\n"
             " * Kernels receive borrowed arguments; a `kd_tensor **` output receives one\n"
             " * reference the caller owns. Every function returns KD_OK, or a status after\n"
             " * kd_set_error naming the operator. */\n\n"
             "#include <kd/kd.h>\n#include <kd/backend.h>\n#include <kdk/kdk.h>\n\n"
             "KD_EXTERN_C_BEGIN\n\n",
             g->name);
  kdg_printf(&b,
             "/* The device: fills *iface, the record the plugin registers for %s (its\n"
             " * device_type must be %s). Called first by the plugin's init; whatever else\n"
             " * it registers through `plugin` is released at unload. */\n"
             "kd_status %sbackend(kd_plugin *plugin, kd_backend_iface *iface);\n"
             "/* Called by the plugin's fini (after every registration was released), or\n"
             " * when the plugin's init fails after %sbackend succeeded. */\n"
             "void %sbackend_fini(void);\n\n",
             g->b->opts.key, g->dev_enum, g->prefix, g->prefix, g->prefix);
  char *stubs[512];
  size_t nstubs = b_stubs(g, stubs, 512);
  if (nstubs) {
    kdg_printf(&b, "/* Loops of the dispatch stubs that libkdops' impls of the Legacy groups call,\n"
                   " * registered for the device by the plugin's init (kdk/stub.h). */\n");
    for (size_t i = 0; i < nstubs; i++)
      kdg_printf(&b, "kdk_stub_fn_%s %s%s;\n", stubs[i], g->prefix, stubs[i]);
    kdg_printf(&b, "\n");
  }
  char *done[4096];
  size_t ndone = 0;
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind == PLAN_KERNEL && p->author) {
      if (b_seen(done, ndone, p->fn)) continue;
      if (ndone < 4096) done[ndone++] = (char *)p->fn;
      if (p->key)
        kdg_printf(&b, "/* %s, unstructured, for %s */\n", kdg_strategy_name(p->strategy), p->key);
      else
        kdg_printf(&b, "/* %s, %s */\n", kdg_strategy_name(p->e->strategy),
                   p->e->is_new ? "a new operator" : "unstructured");
      b_schema_comment(&b, p, p->f);
      kdg_printf(&b, "kd_status %s(", p->fn);
      kdg_print_params(&b, &p->c, true);
      kdg_printf(&b, ");\n\n");
    } else if (p->kind == PLAN_STRUCTURED && (p->author_meta || p->author_impl)) {
      if (b_seen(done, ndone, p->impl)) continue;
      if (ndone < 4096) done[ndone++] = (char *)p->impl;
      kdg_printf(&b, "/* %s: %s */\n", kdg_strategy_name(p->e->strategy),
                 p->author_meta ? "the backend's meta and impl" : "upstream meta, the backend's impl");
      b_schema_comment(&b, p, p->out);
      if (p->author_meta) {
        if (*p->pre) {
          kdg_printf(&b, "typedef struct %s {\n", p->pre);
          for (size_t k = 0; k < p->nprecomputed; k++)
            for (size_t q = 0; q < p->precomputed[k].nfields; q++)
              kdg_printf(&b, "  %s %s;\n", b_precomputed_ctype(p->precomputed[k].fields[q].type),
                         p->precomputed[k].fields[q].name);
          kdg_printf(&b, "} %s;\n", p->pre);
        }
        kdg_printf(&b, "kd_status %s(", p->meta);
        b_meta_params(&b, p);
        kdg_printf(&b, ");\n");
      }
      kdg_printf(&b, "kd_status %s(", p->impl);
      b_impl_params(&b, p);
      kdg_printf(&b, ");\n\n");
    }
  }
  kdg_printf(&b, "KD_EXTERN_C_END\n\n#endif\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s_functions.h", out_dir, g->name);
  int rc = kdg_write_file(path, &b, g->d);
  kdg_buf_free(&b);
  return rc;
}

/* The function that runs the entry: its structured wrapper or its kernel. */
static void b_raw_target(const bgen *g, const bplan *p, char *dst, size_t cap) {
  if (p->kind == PLAN_STRUCTURED)
    snprintf(dst, cap, "%s__s_%s", g->name, p->f->cname);
  else
    snprintf(dst, cap, "%s", p->fn);
}

/* The C function the adapter and the direct call use: the raw target, behind
 * its device check and guard when it has them. */
static void b_target(const bgen *g, const bplan *p, char *dst, size_t cap) {
  if (p->check || p->guard >= 0)
    snprintf(dst, cap, "%s__c%zu", g->name, (size_t)(p - g->plans));
  else
    b_raw_target(g, p, dst, cap);
}

/* The helper of device_check: ExactSame (PyTorch's
 * check_and_update_common_device and its message), once per plugin. */
static void b_emit_same_device(const bgen *g, kdg_buf *b) {
  kdg_printf(b,
             "/* device_check: ExactSame. KD_EINVAL naming the method and the argument\n"
             " * when two defined tensors are on different devices. (A selective build\n"
             " * may leave out every caller.) */\n"
             "#if defined(__GNUC__)\n__attribute__((unused))\n#endif\n"
             "static kd_status %s__same_device(const char *method, size_t n, kd_tensor *const *t,\n"
             "                                 const char *const *names) {\n"
             "  size_t first = n;\n"
             "  for (size_t i = 0; i < n; i++) {\n"
             "    if (!t[i]) continue;\n"
             "    if (first == n) {\n"
             "      first = i;\n"
             "    } else if (!kd_device_equal(kd_tensor_device(t[i]), kd_tensor_device(t[first]))) {\n"
             "      char a[64], c[64];\n"
             "      kd_device_format(kd_tensor_device(t[first]), a, sizeof a);\n"
             "      kd_device_format(kd_tensor_device(t[i]), c, sizeof c);\n"
             "      return kd_set_error(KD_EINVAL,\n"
             "                          \"Expected all tensors to be on the same device, but found at least \"\n"
             "                          \"two devices, %%s and %%s! (when checking argument for argument %%s in \"\n"
             "                          \"method %%s)\",\n"
             "                          a, c, names[i], method);\n"
             "    }\n"
             "  }\n"
             "  return KD_OK;\n"
             "}\n\n",
             g->name);
}

/* The device check and guard in front of the raw target. */
static void b_emit_checked(const bgen *g, kdg_buf *b, const bplan *p) {
  const kdg_cfunc *c = &p->c;
  char fn[400], raw[400];
  b_target(g, p, fn, sizeof fn);
  b_raw_target(g, p, raw, sizeof raw);
  kdg_printf(b, "/* device_check: %s; device_guard: %s */\nstatic kd_status %s(",
             p->check ? "ExactSame" : "NoCheck", p->guard >= 0 ? c->p[p->guard].name : "none", fn);
  kdg_print_params(b, c, true);
  kdg_printf(b, ") {\n  kd_status kdg_st;\n");
  if (p->check) {
    /* As torchgen: the out arguments, then the others. */
    int n = 0;
    kdg_printf(b, "  kd_tensor *const kdg_t[] = {");
    for (int pass = 0; pass < 2; pass++)
      for (int i = 0; i < c->np; i++)
        if (b_is_tensor(&c->p[i]) && c->p[i].is_out == (pass == 0))
          kdg_printf(b, "%s%s", n++ ? ", " : "", c->p[i].name);
    kdg_printf(b, "};\n  static const char *const kdg_n[] = {");
    n = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int i = 0; i < c->np; i++)
        if (b_is_tensor(&c->p[i]) && c->p[i].is_out == (pass == 0))
          kdg_printf(b, "%s\"%s\"", n++ ? ", " : "", kd_argument_name(c->p[i].arg));
    kdg_printf(b, "};\n  if ((kdg_st = %s__same_device(\"wrapper_%s_%s\", %d, kdg_t, kdg_n)))\n"
                  "    return kdg_st;\n",
               g->name, b_key_of(g, p), p->f->cname, n);
  }
  if (p->guard >= 0) {
    const kdg_cparam *q = &c->p[p->guard];
    kdg_printf(b, "  kd_device_guard kdg_g;\n  kdg_g.active = false;\n");
    if (q->kind == KDG_C_DEVICE)
      kdg_printf(b, "  if ((kdg_st = kd_device_guard_enter(&kdg_g, %s))) return kdg_st;\n", q->name);
    else if (q->kind == KDG_C_OPT_DEVICE)
      kdg_printf(b, "  if (%s && (kdg_st = kd_device_guard_enter(&kdg_g, *%s))) return kdg_st;\n",
                 q->name, q->name);
    else
      kdg_printf(b,
                 "  if (%s && (kdg_st = kd_device_guard_enter(&kdg_g, kd_tensor_device(%s)))) return kdg_st;\n",
                 q->name, q->name);
  }
  kdg_printf(b, "  kdg_st = %s(", raw);
  kdg_print_call_args(b, c, true);
  kdg_printf(b, ");\n");
  if (p->guard >= 0) kdg_printf(b, "  kd_device_guard_exit(&kdg_g);\n");
  kdg_printf(b, "  return kdg_st;\n}\n\n");
}

static void b_emit_structured(const bgen *g, kdg_buf *b, const bplan *p) {
  const kdg_cfunc *c = &p->c;
  const kdg_func *f = p->f;
  int nout = 0;
  for (int i = 0; i < p->oc.np; i++) nout += p->oc.p[i].is_out;
  const char *mode = f->kind == KDG_INPLACE ? "KDK_STRUCTURED_INPLACE"
                     : f->kind == KDG_OUT   ? "KDK_STRUCTURED_OUT"
                                            : "KDK_STRUCTURED_FUNCTIONAL";
  char fn[400];
  b_raw_target(g, p, fn, sizeof fn);
  kdg_printf(b, "/* %s: %s + %s */\nstatic kd_status %s(", kdg_strategy_name(p->e->strategy), p->meta,
             p->impl, fn);
  kdg_print_params(b, c, true);
  kdg_printf(b, ") {\n");
  if (f->kind == KDG_INPLACE) {
    kdg_printf(b, "  kd_tensor *kdg_given[1] = {%s};\n", c->p[0].name);
  } else if (f->kind == KDG_OUT) {
    kdg_printf(b, "  kd_tensor *kdg_given[%d] = {", nout);
    int n = 0;
    for (int i = 0; i < c->np; i++)
      if (c->p[i].is_out) kdg_printf(b, "%s%s", n++ ? ", " : "", c->p[i].name);
    kdg_printf(b, "};\n");
  }
  /* The device of functional outputs: the first tensor input's. */
  int first = -1;
  for (int i = 0; i < c->np && first < 0; i++)
    if (!c->p[i].is_out && c->p[i].kind == KDG_C_TENSOR) first = i;
  if (first >= 0)
    kdg_printf(b, "  kd_device kdg_dev = kd_tensor_device(%s);\n", c->p[first].name);
  else
    kdg_printf(b, "  kd_device kdg_dev = kd_current_device(%s);\n", g->dev_enum);
  kdg_printf(b, "  kdk_structured kdg_s;\n  kdk_structured_init(&kdg_s, \"%s\", %s, %d, %s, kdg_dev);\n",
             p->qualified, mode, nout, f->kind == KDG_FUNCTIONAL ? "NULL" : "kdg_given");
  if (p->iter) kdg_printf(b, "  kdk_iter kdg_it;\n  kdk_iter_init(&kdg_it, &kdg_s);\n");
  if (*p->pre) kdg_printf(b, "  %s kdg_pre;\n", p->pre);
  kdg_printf(b, "  kd_status kdg_st = %s(&kdg_s%s", p->meta, p->iter ? ", &kdg_it" : "");
  for (int i = 0; i < c->np; i++)
    if (!c->p[i].is_out) kdg_printf(b, ", %s", c->p[i].name);
  if (*p->pre) kdg_printf(b, ", &kdg_pre");
  kdg_printf(b, ");\n");
  kdg_printf(b, "  if (!kdg_st) kdg_st = %s(&kdg_s%s", p->impl, p->iter ? ", &kdg_it" : "");
  int q = 0;
  for (int i = 0; i < p->oc.np; i++) {
    if (p->oc.p[i].is_out) continue;
    int cp = -1, seen = 0;
    for (int j = 0; j < c->np; j++)
      if (!c->p[j].is_out && seen++ == q) cp = j;
    q++;
    const kdg_precomputed *pr = b_replaced(p, kd_argument_name(p->oc.p[i].arg));
    if (pr) {
      for (size_t k = 0; k < pr->nfields; k++) kdg_printf(b, ", kdg_pre.%s", pr->fields[k].name);
      continue;
    }
    kdg_printf(b, ", %s", c->p[cp].name);
  }
  const kdg_precomputed *add = b_replaced(p, "");
  if (add)
    for (size_t k = 0; k < add->nfields; k++) kdg_printf(b, ", kdg_pre.%s", add->fields[k].name);
  for (int o = 0; o < nout; o++) kdg_printf(b, ", kdk_structured_output(&kdg_s, %d)", o);
  kdg_printf(b, ");\n");
  kdg_emit_structured_finish(b, c, nout, p->iter);
}

/* The kd_unboxed_fn adapter of a plan. */
static void b_emit_adapter(const bgen *g, kdg_buf *b, const bplan *p, size_t idx) {
  const kdg_cfunc *c = &p->c;
  char fn[400];
  b_target(g, p, fn, sizeof fn);
  kdg_printf(b, "static kd_status %s__u%zu(const kd_call *call, const kd_arg *a, kd_value *r) {\n",
             g->name, idx);
  kdg_printf(b, "  (void)call;\n");
  if (!c->np) kdg_printf(b, "  (void)a;\n");
  if (!c->nr) kdg_printf(b, "  (void)r;\n");
  for (int i = 0; i < c->np; i++) {
    char expr[128];
    if (c->p[i].scalar_default && kdg_scalar_default_expr(c->p[i].arg, expr, sizeof expr))
      kdg_printf(b, "  kd_scalar kdg_d%d = %s;\n", i, expr);
  }
  for (int i = 0; i < c->nr; i++) {
    if (c->r[i].alias_of >= 0) continue;
    switch (c->r[i].kind) {
    case KDG_C_TENSOR:
    case KDG_C_OPT_TENSOR: kdg_printf(b, "  kd_tensor *kdg_o%d = NULL;\n", i); break;
    case KDG_C_INT: kdg_printf(b, "  int64_t kdg_o%d = 0;\n", i); break;
    case KDG_C_FLOAT: kdg_printf(b, "  double kdg_o%d = 0;\n", i); break;
    case KDG_C_BOOL: kdg_printf(b, "  bool kdg_o%d = false;\n", i); break;
    default: kdg_printf(b, "  kd_scalar kdg_o%d = kd_scalar_int(0);\n", i); break;
    }
  }
  kdg_printf(b, "  kd_status kdg_st = %s(", fn);
  int n = 0;
  for (int i = 0; i < c->np; i++) {
    kdg_printf(b, "%s", n++ ? ", " : "");
    char expr[128];
    if (c->p[i].scalar_default && kdg_scalar_default_expr(c->p[i].arg, expr, sizeof expr))
      kdg_printf(b, "a[%d].s ? a[%d].s : &kdg_d%d", i, i, i);
    else
      kdg_emit_unpack_arg(b, &c->p[i], i, "a");
  }
  for (int i = 0; i < c->nr; i++)
    if (c->r[i].alias_of < 0) kdg_printf(b, "%s&kdg_o%d", n++ ? ", " : "", i);
  kdg_printf(b, ");\n  if (kdg_st) return kdg_st;\n");
  for (int i = 0; i < c->nr; i++) {
    const kdg_cret *cr = &c->r[i];
    if (cr->alias_of >= 0) {
      kdg_printf(b, "  r[%d] = kd_value_tensor_borrowed(a[%d].t);\n", i, cr->alias_of);
      continue;
    }
    switch (cr->kind) {
    case KDG_C_TENSOR:
    case KDG_C_OPT_TENSOR:
      kdg_printf(b, "  r[%d] = kd_value_tensor(kdg_o%d); /* takes its own reference */\n", i, i);
      kdg_printf(b, "  kd_tensor_release(kdg_o%d);\n", i);
      break;
    case KDG_C_INT: kdg_printf(b, "  r[%d] = kd_value_int(kdg_o%d);\n", i, i); break;
    case KDG_C_FLOAT: kdg_printf(b, "  r[%d] = kd_value_double(kdg_o%d);\n", i, i); break;
    case KDG_C_BOOL: kdg_printf(b, "  r[%d] = kd_value_bool(kdg_o%d);\n", i, i); break;
    default: kdg_printf(b, "  r[%d] = kd_value_scalar(kdg_o%d);\n", i, i); break;
    }
  }
  kdg_printf(b, "  return KD_OK;\n}\n\n");
}

/* The direct call kd_<name>_<cname>: outputs checked, Scalar defaults filled. */
static void b_emit_direct(const bgen *g, kdg_buf *b, kdg_buf *h, const bplan *p) {
  const kdg_cfunc *c = &p->c;
  char fn[400], dname[400];
  b_target(g, p, fn, sizeof fn);
  snprintf(dname, sizeof dname, "kd_%s_%s", g->name, p->f->cname);
  b_schema_comment(h, p, p->f);
  kdg_printf(h, "kd_status %s(", dname);
  kdg_print_params(h, c, true);
  kdg_printf(h, ");\n");
  kdg_printf(b, "kd_status %s(", dname);
  kdg_print_params(b, c, true);
  kdg_printf(b, ") {\n");
  for (int i = 0; i < c->nr; i++) {
    if (c->r[i].alias_of >= 0) continue;
    kdg_printf(b, "  if (!%s) return kd_set_error(KD_EINVAL, \"%s: NULL output '%s'\");\n",
               c->r[i].name, dname, c->r[i].name);
    if (c->r[i].kind == KDG_C_TENSOR || c->r[i].kind == KDG_C_OPT_TENSOR)
      kdg_printf(b, "  *%s = NULL;\n", c->r[i].name);
  }
  for (int i = 0; i < c->np; i++) {
    char expr[128];
    if (!c->p[i].scalar_default || !kdg_scalar_default_expr(c->p[i].arg, expr, sizeof expr)) continue;
    kdg_printf(b, "  kd_scalar kdg_d%d;\n  if (!%s) {\n    kdg_d%d = %s;\n    %s = &kdg_d%d;\n  }\n",
               i, c->p[i].name, i, expr, c->p[i].name, i);
  }
  kdg_printf(b, "  return %s(", fn);
  kdg_print_call_args(b, c, true);
  kdg_printf(b, ");\n}\n\n");
}

/* Opens the selective-build guard of a stub's device loop: registered when
 * any Legacy operator whose impl calls it is. False (no guard) when one of
 * them has no key token. */
static bool b_stub_guard_open(const bgen *g, kdg_buf *b, const char *stub) {
  const char *k = kdg_sel_key_token(g->b->opts.key);
  if (!k) return false;
  size_t n = 0;
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind != PLAN_STRUCTURED || !b_seen(p->stubs, p->nstubs, stub)) continue;
    char tok[512];
    kdg_sel_op_token(p->f, tok, sizeof tok);
    kdg_printf(b, "%s KD_SHOULD_REGISTER(%s, %s, %s)", n++ ? " ||" : "#if", p->ns, tok, k);
  }
  if (n) kdg_printf(b, "\n");
  return n > 0;
}

/* The strategy of a generated entry as docs/CODEGEN.md names it, for the
 * kernel's debug name (`kd table`): "new operator", "LegacyMeta", or the
 * strategy of the backend's main key with the kind ("Legacy, structured",
 * "Customized, unstructured", ...). A static string; never NULL. */
static const char *b_strategy_label(const bplan *p) {
  if (p->e->is_new) return "new operator";
  bool st = p->kind == PLAN_STRUCTURED;
  switch (p->strategy) {
    case KDG_STRATEGY_LEGACY: return st ? "Legacy, structured" : "Legacy, unstructured";
    case KDG_STRATEGY_LEGACY_META: return st ? "LegacyMeta" : "LegacyMeta, unstructured";
    case KDG_STRATEGY_CUSTOMIZED: return st ? "Customized, structured" : "Customized, unstructured";
    default: break;
  }
  return st ? "structured" : "unstructured";
}
static int b_write_plugin(bgen *g, const char *out_dir) {
  kdg_buf b, h;
  kdg_buf_init(&b);
  kdg_buf_init(&h);
  b_header_open(g, &h, "DIRECT");
  kdg_printf(&h,
             "/* Direct calls of the backend \"%s\"'s kernels, without the dispatcher, for\n"
             " * the plugin's own code (not exported). Arguments are borrowed; a\n"
             " * `kd_tensor **` output receives one reference the caller owns; a NULL\n"
             " * `const kd_scalar *` for a Scalar with a default means the default. On error\n"
             " * the status says why and tensor outputs are NULL. */\n\n"
             "#include <kd/kd.h>\n#include <kdk/kdk.h>\n",
             g->name);
  kdg_sel_include(&h);
  kdg_printf(&h, "\nKD_EXTERN_C_BEGIN\n\n");
  kdg_printf(&b, B_GENERATED, g->b->path);
  kdg_printf(&b,
             "/* The backend \"%s\" for %s: wrappers, registration, plugin entry point\n"
             " * (docs/CODEGEN.md, \"Backends\"). */\n"
             "#include <string.h>\n\n#include <kd/kd.h>\n#include <kd/backend.h>\n#include <kdk/kdk.h>\n"
             "#include <kdk/native.h> /* libkdops' kdk_meta_* and kdk_native_*, reused by Legacy */\n\n"
             "#include \"%s_direct.h\"\n#include \"%s_functions.h\"\n\n",
             g->name, g->b->opts.key, g->name, g->name);
  kdg_sel_include(&b);
  kdg_printf(&b, "\n");
  for (size_t i = 0; i < g->nplans; i++)
    if (g->plans[i].kind != PLAN_NONE && g->plans[i].check) {
      b_emit_same_device(g, &b);
      break;
    }
  /* Wrappers and adapters, each inside its selective-build guard (with its
   * direct call and its row: nothing else names them). */
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind == PLAN_NONE) continue;
    bool sel = kdg_sel_guard_open(&b, p->ns, p->f, b_key_of(g, p));
    b_schema_comment(&b, p, p->f);
    if (p->kind == PLAN_STRUCTURED) b_emit_structured(g, &b, p);
    if (p->check || p->guard >= 0) b_emit_checked(g, &b, p);
    b_emit_adapter(g, &b, p, i);
    kdg_sel_guard_close(&b, sel);
  }
  /* Direct calls: of the main key's kernels only (the other keys' kernels are
   * for layouts and autograd, which a direct call of the device skips). */
  kdg_printf(&b, "/* ---- Direct calls (%s_direct.h) ---- */\n\n", g->name);
  const char *key = g->b->opts.key;
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind == PLAN_NONE || p->key) continue;
    bool sel = kdg_sel_guard_open(&b, p->ns, p->f, key);
    kdg_sel_guard_open(&h, p->ns, p->f, key);
    b_emit_direct(g, &b, &h, p);
    kdg_sel_guard_close(&b, sel);
    kdg_sel_guard_close(&h, sel);
  }
  /* Registration tables. */
  kdg_printf(&b, "/* ---- Registration ---- */\n\n");
  kdg_printf(&b, "typedef struct %s__impl {\n  int ns; /* 0: %s, 1: %s */\n"
                 "  kd_dispatch_key key; /* %s or another functionality of its column */\n"
                 "  const char *name;\n"
                 "  const char *signature;\n  kd_unboxed_fn fn;\n  const char *where;\n} %s__impl;\n\n",
             g->name, g->up_ns, g->ns, g->b->opts.key, g->name);
  size_t ndefs = 0, nimpls = 0;
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind == PLAN_NONE || !p->e->is_new) continue;
    if (!ndefs++) kdg_printf(&b, "static const char *const %s__defs[] = {\n", g->name);
    kdg_printf(&b, "    \"%s\",\n", p->f->func);
  }
  if (ndefs) kdg_printf(&b, "};\n\n");
  kdg_printf(&b, "static const %s__impl %s__impls[] = {\n", g->name, g->name);
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    if (p->kind == PLAN_NONE) continue;
    bool sel = kdg_sel_guard_open(&b, p->ns, p->f, b_key_of(g, p));
    kdg_printf(&b, "    {%d, %s, \"%s\", \"%s\", %s__u%zu, \"%s:%d (%s)\"},\n", p->e->is_new ? 1 : 0,
               p->key ? p->key_enum : g->key_enum, p->f->qualified, p->c.sig, g->name, i, g->b->path,
               p->e->line, b_strategy_label(p));
    kdg_sel_guard_close(&b, sel);
    nimpls++;
  }
  /* A selective build may leave out every row: the table ends at its sentinel. */
  kdg_printf(&b, "    {0, KD_KEY_UNDEFINED, NULL, NULL, NULL, NULL}, /* the end (a selective build may leave no row) */\n};\n\n");
  char *stubs[512];
  size_t nstubs = b_stubs(g, stubs, 512);
  kdg_printf(&b, "static size_t %s__nstubs_registered;\nstatic bool %s__author_up; /* %sbackend succeeded */\n",
             g->name, g->name, g->prefix);
  /* kd_backend_load of a file already loaded gets the same image (dlopen
   * counts): its init must refuse before touching the first load's state
   * (the stubs' device loops, the author's devices). */
  kdg_printf(&b, "static bool %s__loaded; /* an init succeeded and its fini has not run */\n\n",
             g->name);
  kdg_printf(&b, "/* The device loops of the stubs, in registration order. */\n");
  kdg_printf(&b, "static kdk_stub *%s__stub(size_t i, kdk_stub_fn *fn) {\n  (void)i;\n  switch (i) {\n",
             g->name);
  for (size_t i = 0; i < nstubs; i++) {
    bool sel = b_stub_guard_open(g, &b, stubs[i]);
    kdg_printf(&b, "  case %zu: *fn = (kdk_stub_fn)%s%s; return &KDK_STUB_OBJECT(%s);\n", i, g->prefix,
               stubs[i], stubs[i]);
    kdg_sel_guard_close(&b, sel);
  }
  kdg_printf(&b, "  default: (void)fn; return NULL; /* also a stub a selective build left out */\n"
                 "  }\n}\n\n");
  kdg_printf(&b,
             "static void %s__unregister_stubs(void) {\n"
             "  while (%s__nstubs_registered) {\n"
             "    kdk_stub_fn fn;\n"
             "    kdk_stub *stub = %s__stub(--%s__nstubs_registered, &fn);\n"
             "    if (stub) kdk_stub_unregister_device(stub, %s);\n"
             "  }\n}\n\n",
             g->name, g->name, g->name, g->name, g->dev_enum);
  kdg_printf(
      &b,
      "static kd_status %s__register(kd_plugin *plugin) {\n"
      "  kd_backend_iface iface;\n"
      "  memset(&iface, 0, sizeof iface);\n"
      "  kd_status st = %sbackend(plugin, &iface);\n"
      "  if (st) return st;\n"
      "  %s__author_up = true;\n"
      "  if (iface.device_type != %s)\n"
      "    return kd_set_error(KD_EINVAL, \"%s: %sbackend gave device type %%d: expected %s (%%d)\",\n"
      "                        (int)iface.device_type, (int)%s);\n"
      "  if ((st = kd_plugin_backend(plugin, &iface, NULL))) return st;\n",
      g->name, g->prefix, g->name, g->dev_enum, g->name, g->prefix, g->dev_enum, g->dev_enum);
  if (ndefs) {
    kdg_printf(&b,
               "  kd_library *def;\n"
               "  if ((st = kd_plugin_library(plugin, KD_LIBRARY_DEF, \"%s\", KD_KEY_UNDEFINED, &def)))\n"
               "    return st;\n"
               "  for (size_t i = 0; i < %zu; i++)\n"
               "    if ((st = kd_library_def(def, %s__defs[i], NULL, 0, NULL))) return st;\n",
               g->ns, ndefs, g->name);
  }
  if (nimpls)
    kdg_printf(&b,
             "  /* one IMPL library per namespace and functionality of the column */\n"
             "  kd_library *libs[2][KD_FUNCTIONALITY_COUNT];\n"
             "  memset(libs, 0, sizeof libs);\n"
             "  static const char *const nss[2] = {\"%s\", \"%s\"};\n"
             "  for (size_t i = 0; %s__impls[i].name; i++) {\n"
             "    const %s__impl *x = &%s__impls[i];\n"
             "    kd_functionality f;\n"
             "    if (!kd_dispatch_key_split(x->key, &f, NULL))\n"
             "      return kd_set_error(KD_EINTERNAL, \"%s: key %%s of '%%s' is not a backend's\",\n"
             "                          kd_dispatch_key_name(x->key), x->name);\n"
             "    kd_library **lib = &libs[x->ns][f];\n"
             "    if (!*lib && (st = kd_plugin_library(plugin, KD_LIBRARY_IMPL, nss[x->ns], x->key, lib)))\n"
             "      return st;\n"
             "    kd_kernel k;\n"
             "    memset(&k, 0, sizeof k);\n"
             "    k.api_version = KD_KERNEL_API_VERSION;\n"
             "    k.kind = KD_KERNEL_FUNCTION;\n"
             "    k.unboxed = x->fn;\n"
             "    k.signature = x->signature;\n"
             "    k.debug = x->where;\n"
             "    if ((st = kd_library_impl(*lib, x->name, &k, NULL))) return st;\n"
             "  }\n",
             g->up_ns, g->ns, g->name, g->name, g->name, g->name);
  if (nstubs)
    kdg_printf(&b,
             "  for (size_t i = 0; i < %zu; i++) {\n"
             "    kdk_stub_fn fn;\n"
             "    kdk_stub *stub = %s__stub(i, &fn);\n"
             "    if (stub && (st = kdk_stub_register_device(stub, %s, fn))) return st;\n"
             "    %s__nstubs_registered = i + 1;\n"
             "  }\n",
             nstubs, g->name, g->dev_enum, g->name);
  kdg_printf(&b, "  return KD_OK;\n}\n\n");
  kdg_printf(&b,
             "static kd_status %s__init(kd_plugin *plugin) {\n"
             "  if (%s__loaded)\n"
             "    return kd_set_error(KD_EEXIST, \"%s: the plugin is already loaded in this process (a \"\n"
             "                        \"second load of one file would share its state): unload it first\");\n"
             "  %s__author_up = false;\n"
             "  kd_status st = %s__register(plugin);\n"
             "  if (st) {\n"
             "    %s__unregister_stubs();\n"
             "    if (%s__author_up) %sbackend_fini();\n"
             "  } else {\n"
             "    %s__loaded = true;\n"
             "  }\n"
             "  return st;\n}\n\n"
             "static void %s__fini(kd_plugin *plugin) {\n"
             "  (void)plugin;\n"
             "  %s__unregister_stubs();\n"
             "  %sbackend_fini();\n"
             "  %s__loaded = false;\n}\n\n"
             "static const kd_plugin_desc %s__desc = {KD_PLUGIN_API_VERSION, \"%s\", %s__init, %s__fini};\n\n"
             "KD_PLUGIN(%s__desc)\n",
             g->name, g->name, g->name, g->name, g->name, g->name, g->name, g->prefix, g->name,
             g->name, g->name, g->prefix, g->name, g->name, g->name, g->name, g->name, g->name);
  kdg_printf(&h, "\nKD_EXTERN_C_END\n\n#endif\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s_plugin.c", out_dir, g->name);
  int rc = kdg_write_file(path, &b, g->d);
  snprintf(path, sizeof path, "%s/%s_direct.h", out_dir, g->name);
  if (kdg_write_file(path, &h, g->d)) rc = -1;
  kdg_buf_free(&b);
  kdg_buf_free(&h);
  return rc;
}

/* The other-key plans of an entry (one per other key it names, in its
 * dispatch order): a line each, what was generated or why not. */
static void b_other_keys(const bgen *g, const bplan *p, kdg_buf *list) {
  const kdg_bentry *e = p->e;
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *q = &g->plans[i];
    if (q->e != e || !q->key) continue;
    const char *kind = e->structured ? "structured" : "unstructured";
    if (q->kind == PLAN_NONE)
      kdg_printf(list, "%s %s %s not generated: key %s: %s\n", e->written,
                 kdg_strategy_name(q->strategy), kind, q->key, q->why);
    else
      kdg_printf(list, "%s %s %s generated: key %s: kernel %s%s\n", e->written,
                 kdg_strategy_name(q->strategy), kind, q->key, q->fn,
                 e->is_new ? " (new operator)" : "");
  }
}

static int b_write_entries(bgen *g, const char *out_dir) {
  kdg_buf b;
  kdg_buf_init(&b);
  size_t ok = 0, n = 0, okeys = 0, okeys_ok = 0;
  for (size_t i = 0; i < g->nplans; i++) {
    bool gen = g->plans[i].kind != PLAN_NONE;
    if (g->plans[i].key) {
      okeys++;
      okeys_ok += gen;
    } else {
      n++;
      ok += gen;
    }
  }
  kdg_printf(&b, "# @generated by kdgen from %s: %zu entries, %zu generated, %zu not", g->b->path, n,
             ok, n - ok);
  if (okeys)
    kdg_printf(&b, "; %zu kernels for other keys of the column, %zu generated, %zu not", okeys,
               okeys_ok, okeys - okeys_ok);
  kdg_printf(&b, "\n");
  for (size_t i = 0; i < g->nplans; i++) {
    const bplan *p = &g->plans[i];
    const kdg_bentry *e = p->e;
    const char *kind = e->structured ? "structured" : "unstructured";
    if (p->key) continue; /* with its entry's line, below */
    if (p->kind == PLAN_NONE) {
      kdg_printf(&b, "%s %s %s not generated: %s\n", e->written, kdg_strategy_name(e->strategy), kind,
                 p->why);
    } else if (p->kind == PLAN_STRUCTURED) {
      kdg_printf(&b, "%s %s %s generated: meta %s, impl %s", e->written,
                 kdg_strategy_name(e->strategy), kind, p->meta, p->impl);
      for (size_t s = 0; s < p->nstubs; s++)
        kdg_printf(&b, "%s%s%s", s ? ", " : ", stubs ", g->prefix, p->stubs[s]);
      kdg_printf(&b, "\n");
    } else {
      kdg_printf(&b, "%s %s %s generated: kernel %s%s\n", e->written, kdg_strategy_name(e->strategy),
                 kind, p->fn, e->is_new ? " (new operator)" : "");
    }
    b_other_keys(g, p, &b);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s_entries.txt", out_dir, g->name);
  int rc = kdg_write_file(path, &b, g->d);
  kdg_buf_free(&b);
  return rc;
}

/* C has no overloads: an author function that an earlier entry already
 * declared with other parameters (torch_musa's musa_Bucketize serves
 * bucketize.Tensor and bucketize.Scalar) cannot be bound a second time. */
static void b_check_same_name(const bgen *g, bplan *p, size_t n) {
  const char *name = p->kind == PLAN_KERNEL && p->author         ? p->fn
                     : p->kind == PLAN_STRUCTURED && p->author_impl ? p->impl
                                                                    : NULL;
  if (!name) return;
  const char *sig = p->kind == PLAN_KERNEL ? p->c.sig : p->oc.sig;
  for (size_t i = 0; i < n; i++) {
    const bplan *q = &g->plans[i];
    const char *qname = q->kind == PLAN_KERNEL && q->author         ? q->fn
                        : q->kind == PLAN_STRUCTURED && q->author_impl ? q->impl
                                                                       : NULL;
    if (!qname || strcmp(qname, name) || q->kind != p->kind) continue;
    const char *qsig = q->kind == PLAN_KERNEL ? q->c.sig : q->oc.sig;
    if (!strcmp(qsig, sig)) return;
    snprintf(p->why, sizeof p->why,
             "its kernel %.100s is already '%.100s''s (line %d) with other parameters %.250s, and C has no "
             "overloads: give this entry a kernel of its own",
             name, q->e->written, q->e->line, qsig);
    p->kind = PLAN_NONE;
    return;
  }
}

/* The number of distinct keys other than the main one in e's dispatch; with
 * nth > 0, *key is set to the nth of them. */
static size_t b_count_other_keys(const kdg_backend *b, const kdg_bentry *e, const char **key,
                                 size_t nth) {
  size_t n = 0;
  for (size_t i = 0; i < e->ndispatch; i++) {
    const char *k = e->dispatch[i].key;
    if (!strcmp(k, b->opts.key)) continue;
    bool dup = false;
    for (size_t j = 0; j < i; j++)
      if (!strcmp(e->dispatch[j].key, k)) dup = true;
    if (dup) continue;
    if (++n == nth && key) *key = k;
  }
  return n;
}

int kdg_generate_backend(const kdg_backend *b, const kdg_file *native, const char *out_dir,
                         kdg_diag *d) {
  size_t before = d->errors;
  bgen g;
  memset(&g, 0, sizeof g);
  g.b = b;
  g.native = native;
  g.d = d;
  g.name = b->opts.name;
  g.prefix = b->opts.prefix;
  g.ns = b->opts.ns;
  g.up_ns = "aten";
  const char *key = b->opts.key;
  if (strcmp(key, "PrivateUse1") && strcmp(key, "PrivateUse2") && strcmp(key, "PrivateUse3")) {
    kdg_error(d, b->path, 0,
              "the backend's key '%s' cannot be generated: a plugin backend claims PrivateUse1, "
              "PrivateUse2 or PrivateUse3",
              key);
    return -1;
  }
  char uk[32];
  b_upper(uk, sizeof uk, key);
  snprintf(g.key_enum, sizeof g.key_enum, "KD_KEY_%s", uk);
  snprintf(g.dev_enum, sizeof g.dev_enum, "KD_DEVICE_%s", uk);
  /* A plan per entry for the main key, then one per other key an entry names
   * (SparsePrivateUse1, AutogradPrivateUse1, ...: the loader allows only the
   * column's keys), in file order. */
  size_t nother = 0;
  for (size_t i = 0; i < b->nentries; i++)
    nother += b_count_other_keys(b, &b->entries[i], NULL, 0);
  g.nplans = b->nentries + nother;
  g.plans = kd_host_calloc(g.nplans ? g.nplans : 1, sizeof(bplan));
  if (!g.plans) {
    kdg_error(d, b->path, 0, "out of memory");
    return -1;
  }
  size_t at = b->nentries;
  for (size_t i = 0; i < b->nentries; i++) {
    bplan *p = &g.plans[i];
    p->e = &b->entries[i];
    b_plan(&g, p);
    b_check_same_name(&g, p, i);
    if (p->kind == PLAN_NONE)
      kdg_note(g.d, b->path, p->e->line, "'%s' (%s) is not generated: %s", p->e->written,
             kdg_strategy_name(p->e->strategy), p->why);
  }
  for (size_t i = 0; i < b->nentries; i++) {
    const kdg_bentry *e = &b->entries[i];
    for (size_t k = 0; k < b_count_other_keys(b, e, NULL, 0); k++) {
      bplan *p = &g.plans[at];
      p->e = e;
      int line = 0;
      b_count_other_keys(b, e, &p->key, k + 1);
      for (size_t j = 0; j < e->ndispatch && !line; j++)
        if (!strcmp(e->dispatch[j].key, p->key)) line = e->dispatch[j].line;
      b_plan_other(&g, p);
      b_check_same_name(&g, p, at);
      if (p->kind == PLAN_NONE)
        kdg_note(g.d, b->path, line, "'%s': key '%s' is not generated: %s", e->written, p->key,
                 p->why);
      at++;
    }
  }
  /* Two entries whose author functions share a name must agree on the signature:
   * kdgen declares it once (a C compiler would catch a conflict anyway). */
  if (d->errors == before) {
    b_write_functions(&g, out_dir);
    b_write_plugin(&g, out_dir);
    b_write_entries(&g, out_dir);
  }
  kd_host_free(g.plans);
  return d->errors == before ? 0 : -1;
}
