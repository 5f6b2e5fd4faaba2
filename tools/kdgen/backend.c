/*
 * backend.c: an out-of-tree backend's YAML file (backend.h), resolved against
 * the upstream native_functions.yaml and classified as torch_musa's generator
 * classifies it (docs/CODEGEN.md "Backend YAML" gives the rules and where
 * torch_musa's tools/codegen/gen_torch_musa.py applies each).
 *
 * Steps: load the entries (load.c, bare names allowed); resolve each against
 * the upstream index (binary search by name) — an upstream operator, an
 * operator upstream's autogen: generates, or a new operator; check the keys a
 * backend may write; classify the out= variants and unstructured entries; then
 * the delegates (functional / in-place), which follow their group's out=
 * variant. Every entry that cannot be honoured gets one error at its line.
 */
#include "backend.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd/memory.h"

/* ---- Small helpers ------------------------------------------------------ */

typedef struct bctx {
  kdg_backend *b;
  kdg_file *src;
  kdg_diag *d;
  const char *path;
  kdg_func **up_sorted; /* upstream functions by qualified name */
  size_t nup;
  struct agen {
    char *name;       /* "bucketize.Scalar_out" */
    kdg_func *from;   /* the upstream entry whose autogen: names it */
  } *agen;            /* sorted by name */
  size_t nagen;
  bool oom;
} bctx;

#define BERR(line, ...) kdg_error(C->d, C->path, (line), __VA_ARGS__)

static char *xdup(bctx *C, const char *s) {
  if (!s) return NULL;
  char *r = kd_host_strdup(s);
  if (!r) C->oom = true;
  return r;
}

const char *kdg_strategy_name(kdg_strategy s) {
  switch (s) {
    case KDG_STRATEGY_LEGACY: return "Legacy";
    case KDG_STRATEGY_LEGACY_META: return "LegacyMeta";
    case KDG_STRATEGY_CUSTOMIZED: return "Customized";
    default: return "none";
  }
}

static int cmp_func_qualified(const void *a, const void *b) {
  const kdg_func *x = *(kdg_func *const *)a, *y = *(kdg_func *const *)b;
  int c = strcmp(x->qualified, y->qualified);
  if (c) return c;
  return (x > y) - (x < y);
}

static kdg_func *find_up(const bctx *C, const char *qualified) {
  size_t lo = 0, hi = C->nup;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(C->up_sorted[mid]->qualified, qualified) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < C->nup && !strcmp(C->up_sorted[lo]->qualified, qualified) ? C->up_sorted[lo]
                                                                         : NULL;
}

static int cmp_agen(const void *a, const void *b) {
  const struct agen *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  return (x->from < y->from) - (x->from > y->from); /* the later entry first */
}

static kdg_func *find_agen(const bctx *C, const char *qualified) {
  size_t lo = 0, hi = C->nagen;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(C->agen[mid].name, qualified) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < C->nagen && !strcmp(C->agen[lo].name, qualified) ? C->agen[lo].from : NULL;
}

static bool written(const kdg_func *fn, const char *key) {
  for (size_t i = 0; i < fn->nkeys; i++)
    if (!strcmp(fn->keys[i].name, key)) return true;
  return false;
}

static const kdg_dispatch *dispatch_of(const kdg_dispatch *v, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].key, key)) return &v[i];
  return NULL;
}

/* Whether `key` is one of the backend's keys: its main key, or a
 * functionality of it (SparsePrivateUse1, ...). */
static bool backend_key(const kdg_backend *b, const char *key) {
  static const char *const pre[] = {"", "Quantized", "SparseCsr", "Sparse", "NestedTensor",
                                    "Autograd"};
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) {
    size_t n = strlen(pre[i]);
    if (!strncmp(key, pre[i], n) && !strcmp(key + n, b->opts.key)) return true;
  }
  return false;
}

/* Same strings, any order (tags, autogen). */
static bool same_set(char **a, size_t na, char **b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++) {
    bool found = false;
    for (size_t j = 0; j < nb && !found; j++) found = !strcmp(a[i], b[j]);
    if (!found) return false;
  }
  return true;
}

static void join(char **v, size_t n, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  if (!n) {
    snprintf(buf, cap, "none");
    return;
  }
  for (size_t i = 0; i < n && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", v[i]);
}

static bool in_list(const char *k, const char *const *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i], k)) return true;
  return false;
}

/* ---- Options ------------------------------------------------------------ */

static int set_opts(bctx *C, const kdg_backend_opts *o) {
  kdg_backend_opts *to = &C->b->opts;
  const char *key = o && o->key ? o->key : "PrivateUse1";
  to->key = xdup(C, key);
  char *name = NULL;
  if (o && o->name) {
    name = xdup(C, o->name);
  } else {
    name = xdup(C, key);
    for (char *p = name; p && *p; p++) *p = (char)tolower((unsigned char)*p);
  }
  to->name = name;
  if (o && o->prefix) {
    to->prefix = xdup(C, o->prefix);
  } else if (name) {
    size_t n = strlen(name);
    char *p = kd_host_malloc(n + 2);
    if (p) snprintf(p, n + 2, "%s_", name);
    else C->oom = true;
    to->prefix = p;
  }
  to->ns = xdup(C, o && o->ns ? o->ns : name);
  if (C->oom) return -1;
  static const char *const runtime_backends[] = {"CUDA", "PrivateUse1", "PrivateUse2",
                                                 "PrivateUse3"};
  if (!in_list(key, runtime_backends, 4)) {
    kdg_error(C->d, C->path, 0,
              "the backend's key '%s' is not a backend key of the runtime (CUDA or "
              "PrivateUse1..3)",
              key);
    return -1;
  }
  return 0;
}

/* ---- Upstream indexes --------------------------------------------------- */

static int build_index(bctx *C) {
  kdg_file *s = C->src;
  C->up_sorted = kd_host_malloc((s->nfuncs ? s->nfuncs : 1) * sizeof *C->up_sorted);
  if (!C->up_sorted) return -1;
  size_t nag = 0;
  for (size_t i = 0; i < s->nfuncs; i++) {
    kdg_func *fn = &s->funcs[i];
    if (!fn->schema || !fn->qualified) continue;
    C->up_sorted[C->nup++] = fn;
    nag += fn->nautogen;
  }
  qsort(C->up_sorted, C->nup, sizeof *C->up_sorted, cmp_func_qualified);
  C->agen = kd_host_calloc(nag ? nag : 1, sizeof *C->agen);
  if (!C->agen) return -1;
  for (size_t i = 0; i < s->nfuncs; i++) {
    kdg_func *fn = &s->funcs[i];
    if (!fn->schema) continue;
    for (size_t j = 0; j < fn->nautogen; j++) {
      C->agen[C->nagen].name = fn->autogen[j];
      C->agen[C->nagen].from = fn;
      C->nagen++;
    }
  }
  /* A group names its out= variant from two entries (functional and
   * in-place): keep the later one, as torch_musa's dict of autogen schemas
   * does (both give the same schema). */
  qsort(C->agen, C->nagen, sizeof *C->agen, cmp_agen);
  size_t kept = 0;
  for (size_t i = 0; i < C->nagen; i++)
    if (!kept || strcmp(C->agen[kept - 1].name, C->agen[i].name)) C->agen[kept++] = C->agen[i];
  C->nagen = kept;
  return 0;
}

/* ---- Keys a backend may write ------------------------------------------- */

/* Keys of an upstream operator's entry (its other properties come from
 * upstream). tags / autogen are accepted when they restate upstream's. */
static const char *const upstream_keys[] = {
    "func",         "dispatch",    "structured", "structured_inherits", "precomputed",
    "device_check", "device_guard", "tags",      "autogen",
};

static void check_keys_upstream(bctx *C, const kdg_func *e, const kdg_func *up) {
  for (size_t i = 0; i < e->nkeys; i++) {
    const char *k = e->keys[i].name;
    if (in_list(k, upstream_keys, sizeof upstream_keys / sizeof *upstream_keys)) continue;
    BERR(e->keys[i].line,
         "'%s' of '%s' cannot be set by a backend: it comes from upstream (%s:%d); a backend "
         "entry may write dispatch, structured, structured_inherits, precomputed, device_check "
         "and device_guard",
         k, e->qualified, C->src->path, up->line);
  }
  if (written(e, "tags") && !same_set(e->tags, e->ntags, up->tags, up->ntags)) {
    char a[512], b[512];
    join(e->tags, e->ntags, a, sizeof a);
    join(up->tags, up->ntags, b, sizeof b);
    BERR(kdg_key_line(e, "tags"),
         "tags of '%s' (%s) differ from upstream's at %s:%d (%s); a backend cannot change an "
         "upstream operator's tags",
         e->qualified, a, C->src->path, up->line, b);
  }
  if (written(e, "autogen") && !same_set(e->autogen, e->nautogen, up->autogen, up->nautogen)) {
    char a[512], b[512];
    join(e->autogen, e->nautogen, a, sizeof a);
    join(up->autogen, up->nautogen, b, sizeof b);
    BERR(kdg_key_line(e, "autogen"),
         "autogen of '%s' (%s) differs from upstream's at %s:%d (%s); a backend cannot "
         "generate operators from an upstream one",
         e->qualified, a, C->src->path, up->line, b);
  }
}

/* Keys that make no sense on an operator the backend defines or on one
 * upstream generates: its kernels are the backend's own, unstructured. */
static void check_keys_own(bctx *C, kdg_func *e, const char *what) {
  static const char *const no[] = {"structured",  "structured_delegate", "structured_inherits",
                                   "precomputed", "autogen",             "ufunc_inner_loop",
                                   "manual_kernel_registration"};
  for (size_t i = 0; i < e->nkeys; i++)
    if (in_list(e->keys[i].name, no, sizeof no / sizeof *no))
      BERR(e->keys[i].line, "'%s' of '%s' is not supported on %s (its kernels are the backend's "
           "own, unstructured)", e->keys[i].name, e->qualified, what);
  /* Reported once here, not again by the validation of the backend's own
   * operators. */
  e->structured = false;
  kd_host_free(e->structured_delegate);
  e->structured_delegate = NULL;
  e->has_ufunc_inner_loop = false;
  e->manual_kernel_registration = false;
  for (size_t i = 0; i < e->nautogen; i++) kd_host_free(e->autogen[i]);
  kd_host_free(e->autogen);
  e->autogen = NULL;
  e->nautogen = 0;
}

static void check_dispatch(bctx *C, const kdg_func *e) {
  for (size_t i = 0; i < e->ndispatch; i++) {
    const kdg_dispatch *x = &e->dispatch[i];
    if (!*x->key) {
      BERR(x->line, "empty dispatch key in 'dispatch' of '%s'", e->qualified);
      continue;
    }
    if (!kdg_known_dispatch_key(x->key)) {
      BERR(x->line, "unknown dispatch key '%s' in 'dispatch' of '%s'", x->key, e->qualified);
      continue;
    }
    if (!backend_key(C->b, x->key)) {
      BERR(x->line,
           "dispatch key '%s' in '%s' is not one of this backend's keys (%s, or Sparse%s, "
           "SparseCsr%s, Quantized%s, NestedTensor%s, Autograd%s)",
           x->key, e->qualified, C->b->opts.key, C->b->opts.key, C->b->opts.key, C->b->opts.key,
           C->b->opts.key, C->b->opts.key);
      continue;
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(e->dispatch[j].key, x->key)) {
        BERR(x->line, "dispatch key '%s' is given twice in '%s'", x->key, e->qualified);
        break;
      }
  }
  if (written(e, "dispatch") && e->ndispatch == 0)
    BERR(kdg_key_line(e, "dispatch"), "'dispatch' of '%s' names no kernel", e->qualified);
  if (e->device_check && strcmp(e->device_check, "NoCheck") && strcmp(e->device_check, "ExactSame"))
    BERR(kdg_key_line(e, "device_check"),
         "device_check of '%s' must be NoCheck or ExactSame, found '%s'", e->qualified,
         e->device_check);
}

/* ---- Copying what the entry wrote --------------------------------------- */

static void take_written(bctx *C, kdg_bentry *be, kdg_func *e) {
  /* Moved, not copied: the loaded file is freed afterwards. */
  be->dispatch = e->dispatch;
  be->ndispatch = e->ndispatch;
  e->dispatch = NULL;
  e->ndispatch = 0;
  be->structured_inherits = e->structured_inherits;
  e->structured_inherits = NULL;
  be->precomputed = e->precomputed;
  be->nprecomputed = e->nprecomputed;
  e->precomputed = NULL;
  e->nprecomputed = 0;
  be->device_check = xdup(C, e->device_check);
  be->device_guard = written(e, "device_guard") ? (e->device_guard ? 1 : 0) : -1;
  const kdg_dispatch *k = dispatch_of(be->dispatch, be->ndispatch, C->b->opts.key);
  be->kernel = k ? xdup(C, k->kernel) : NULL;
}

/* ---- Classification ----------------------------------------------------- */

/* Upstream's CPU or CUDA kernel is named `kernel` (torch_musa's
 * share_unstructured_native_kernel with related_torch_dispatch_keys). */
static bool shares_upstream_kernel(const kdg_func *up, const char *kernel) {
  for (size_t i = 0; i < up->ndispatch; i++)
    if ((!strcmp(up->dispatch[i].key, "CPU") || !strcmp(up->dispatch[i].key, "CUDA")) &&
        !strcmp(up->dispatch[i].kernel, kernel))
      return true;
  return false;
}

/* An upstream operator's entry, except delegates without a kernel (those
 * follow their group: classify_delegates). */
/* An entry customizes a structured meta (structured_inherits or precomputed)
 * of an operator upstream does not structure. */
static void custom_meta_unstructured(bctx *C, const kdg_bentry *be, const kdg_func *e,
                                     const kdg_func *up) {
  const char *key = be->structured_inherits ? "structured_inherits" : "precomputed";
  BERR(kdg_key_line(e, key),
       "%s of '%s' needs an upstream structured out= variant; upstream's '%s' (%s:%d) is not "
       "structured",
       key, e->qualified, up->qualified, C->src->path, up->line);
}

static void classify_upstream(bctx *C, kdg_bentry *be, const kdg_func *e) {
  const kdg_func *up = be->up;
  bool custom_meta = be->structured_inherits || be->nprecomputed;
  int line_s = kdg_key_line(e, "structured");
  bool ms_written = written(e, "structured");
  bool ms = e->structured;
  const char *key = C->b->opts.key;

  if (!be->kernel) {
    if (ms_written && ms != up->structured) {
      if (ms)
        BERR(line_s,
             "'%s' says structured: True, but upstream does not structure it (%s:%d); only an "
             "out= variant upstream marks structured can run structured",
             e->qualified, C->src->path, up->line);
      else
        BERR(line_s,
             "'%s' says structured: False but names no %s kernel; an unstructured backend "
             "kernel is the backend's own function: name it in 'dispatch'",
             e->qualified, key);
      return;
    }
    if (up->structured) {
      if (custom_meta) {
        BERR(kdg_key_line(e, be->structured_inherits ? "structured_inherits" : "precomputed"),
             "'%s' customizes its meta (%s) but names no %s kernel for its impl; add "
             "'dispatch: %s: NAME'",
             e->qualified, be->structured_inherits ? "structured_inherits" : "precomputed", key,
             key);
        return;
      }
      if (up->has_ufunc_inner_loop) {
        BERR(e->line,
             "'%s' has ufunc_inner_loop upstream (%s:%d), so upstream has no impl kernel for "
             "the backend to reuse; name its %s kernel in 'dispatch'",
             e->qualified, C->src->path, up->line, key);
        return;
      }
      be->strategy = KDG_STRATEGY_LEGACY;
      be->structured = true;
      return;
    }
    if (custom_meta) {
      custom_meta_unstructured(C, be, e, up);
      return;
    }
    if (up->structured_delegate) return; /* classify_delegates */
    if (be->ndispatch == 0) {
      if (written(e, "dispatch")) return; /* an empty dispatch: reported */
      BERR(e->line,
           "'%s' names no kernel: upstream's '%s' (%s:%d) is not structured, so there is "
           "nothing to reuse without a %s kernel; add 'dispatch: %s: NAME'",
           e->qualified, up->qualified, C->src->path, up->line, key, key);
      return;
    }
    be->strategy = KDG_STRATEGY_NONE; /* only other keys of the backend */
    return;
  }

  if (up->structured) {
    if (!ms_written || ms) {
      be->strategy = custom_meta ? KDG_STRATEGY_CUSTOMIZED : KDG_STRATEGY_LEGACY_META;
      be->structured = true;
    } else {
      if (custom_meta) {
        BERR(kdg_key_line(e, be->structured_inherits ? "structured_inherits" : "precomputed"),
             "%s of '%s' customizes a structured meta, but the entry says structured: False",
             be->structured_inherits ? "structured_inherits" : "precomputed", e->qualified);
        return;
      }
      be->strategy = KDG_STRATEGY_CUSTOMIZED;
      be->structured = false;
    }
    return;
  }
  if (ms_written && ms) {
    BERR(line_s,
         "'%s' says structured: True, but upstream does not structure it (%s:%d); only an out= "
         "variant upstream marks structured can run structured",
         e->qualified, C->src->path, up->line);
    return;
  }
  if (custom_meta) {
    custom_meta_unstructured(C, be, e, up);
    return;
  }
  be->structured = false;
  be->strategy =
      shares_upstream_kernel(up, be->kernel) ? KDG_STRATEGY_LEGACY : KDG_STRATEGY_CUSTOMIZED;
}

/* A Legacy unstructured kernel is upstream's own function, which checks and
 * guards devices as upstream says: the entry may only restate that. */
static void check_device_behaviour(bctx *C, const kdg_bentry *be, const kdg_func *e) {
  if (be->strategy != KDG_STRATEGY_LEGACY || be->structured || !be->up) return;
  const kdg_func *up = be->up;
  const char *uc = up->device_check ? up->device_check : "ExactSame";
  if (be->device_check && strcmp(be->device_check, uc))
    BERR(kdg_key_line(e, "device_check"),
         "'%s' binds upstream's kernel '%s' (Legacy), which checks devices as upstream says "
         "(device_check: %s at %s:%d); remove device_check: %s",
         e->qualified, be->kernel, uc, C->src->path, up->line, be->device_check);
  if (be->device_guard >= 0 && (be->device_guard != 0) != up->device_guard)
    BERR(kdg_key_line(e, "device_guard"),
         "'%s' binds upstream's kernel '%s' (Legacy), which guards devices as upstream says "
         "(device_guard: %s at %s:%d); remove device_guard: %s",
         e->qualified, be->kernel, up->device_guard ? "True" : "False", C->src->path, up->line,
         be->device_guard ? "True" : "False");
}

/* ---- Operators upstream generates (autogen:) ----------------------------- */

/* A growing string. */
typedef struct sbuf {
  char *s;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *t) {
  size_t k = strlen(t);
  if (b->oom) return;
  if (b->n + k + 1 > b->cap) {
    size_t cap = (b->n + k + 1) * 2;
    char *p = kd_host_realloc(b->s, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->n, t, k + 1);
  b->n += k;
}

/* The type of `a` as written, with (keep) or without its alias annotation
 * ("Tensor(a!)[]" / "Tensor[]"). */
static void type_text(const kd_type *t, bool keep, char *buf, size_t cap) {
  kd_type_format(t, buf, cap);
  if (keep) return;
  /* drop "(...)" groups made of alias-set characters: a, b|c, a!, a -> * */
  char *w = buf;
  for (const char *r = buf; *r;) {
    if (*r == '(') {
      const char *e = r + 1;
      while (*e && (islower((unsigned char)*e) || isdigit((unsigned char)*e) || strchr("|!* ->", *e)))
        e++;
      if (*e == ')' && e > r + 1) {
        r = e + 1;
        continue;
      }
    }
    *w++ = *r++;
  }
  *w = '\0';
}

static bool tensor_like(const kd_type *t) {
  kd_type_kind k = kd_type_kind_of(t);
  if (k == KD_TYPE_OPTIONAL || k == KD_TYPE_LIST) return tensor_like(kd_type_element(t));
  return k == KD_TYPE_TENSOR;
}

/* torchgen's TensorOptions: dtype, layout, device, pin_memory keyword-only,
 * dropped from a signature. */
static bool tensor_options(const kd_schema *s, const kd_argument *a) {
  static const char *const names[] = {"dtype", "layout", "device", "pin_memory"};
  const char *n = kd_argument_name(a);
  if (!kd_argument_kwarg_only(a) || !in_list(n, names, 4)) return false;
  size_t found = 0;
  for (size_t i = 0; i < kd_schema_num_arguments(s); i++) {
    const kd_argument *x = kd_schema_argument(s, i);
    if (kd_argument_kwarg_only(x) && in_list(kd_argument_name(x), names, 4)) found++;
  }
  return found == 4;
}

static bool is_out_arg(const kd_argument *a) {
  return kd_argument_kwarg_only(a) && kd_argument_is_write(a);
}

static void put_arg(sbuf *b, const kd_argument *a, bool keep_alias, bool *first, bool *kw) {
  char t[512];
  if (!*first) sb_put(b, ", ");
  *first = false;
  if (kd_argument_kwarg_only(a) && !*kw) {
    sb_put(b, "*, ");
    *kw = true;
  }
  type_text(kd_argument_type(a), keep_alias, t, sizeof t);
  sb_put(b, t);
  sb_put(b, " ");
  sb_put(b, kd_argument_name(a));
  if (kd_argument_default(a)) {
    sb_put(b, "=");
    sb_put(b, kd_argument_default(a));
  }
}

/* The letters used in alias sets of the arguments (torchgen's
 * used_annotations), as a bitmask of a..z. */
static unsigned used_letters(const kd_schema *s) {
  unsigned m = 0;
  for (size_t i = 0; i < kd_schema_num_arguments(s); i++) {
    char t[512];
    kd_type_format(kd_argument_type(kd_schema_argument(s, i)), t, sizeof t);
    for (const char *p = strchr(t, '('); p; p = strchr(p + 1, '(')) {
      const char *q = p + 1;
      if (islower((unsigned char)*q) && !islower((unsigned char)q[1])) m |= 1u << (*q - 'a');
    }
  }
  return m;
}

/* Appends "Tensor(x!) out" style out= arguments for the returns of s and
 * writes the new returns into rets (torchgen's
 * generate_out_args_from_schema). */
static void out_args(const kd_schema *s, sbuf *b, sbuf *rets, bool *first, bool *kw) {
  unsigned used = used_letters(s);
  char valid[27];
  size_t nv = 0;
  for (int c = 0; c < 26; c++)
    if (!(used & (1u << c))) valid[nv++] = (char)('a' + c);
  size_t nr = kd_schema_num_returns(s);
  bool all_tensors = true;
  for (size_t i = 0; i < nr; i++)
    all_tensors &= kd_type_kind_of(kd_argument_type(kd_schema_return(s, i))) == KD_TYPE_TENSOR;
  size_t nret = 0;
  for (size_t i = 0; i < nr; i++) {
    const kd_argument *r = kd_schema_return(s, i);
    char t[512], ann[512];
    type_text(kd_argument_type(r), false, t, sizeof t);
    if (!tensor_like(kd_argument_type(r)) || i >= nv) {
      if (nret++) sb_put(rets, ", ");
      sb_put(rets, t);
      if (kd_argument_name(r) && *kd_argument_name(r)) {
        sb_put(rets, " ");
        sb_put(rets, kd_argument_name(r));
      }
      continue;
    }
    /* "Tensor" -> "Tensor(x!)" in the type */
    const char *tp = strstr(t, "Tensor");
    snprintf(ann, sizeof ann, "%.*sTensor(%c!)%s", (int)(tp - t), t, valid[i], tp + 6);
    if (!*first) sb_put(b, ", ");
    *first = false;
    if (!*kw) {
      sb_put(b, "*, ");
      *kw = true;
    }
    sb_put(b, ann);
    char nm[32];
    if (nr == 1)
      snprintf(nm, sizeof nm, " out");
    else
      snprintf(nm, sizeof nm, " out%zu", i);
    sb_put(b, nm);
    if (all_tensors) {
      if (nret++) sb_put(rets, ", ");
      sb_put(rets, ann);
    }
  }
}

/* The schema upstream generates under the name `want` (name.overload) from
 * the entry `from` (torch_musa's autogen_signature over torchgen's
 * self_to_out_signature / mutable_to_out_signature /
 * functional_to_out_signature, or the functional signature). Returns a heap
 * string, or NULL (out of memory or a kind it cannot generate from). */
static char *autogen_schema(const kdg_func *from, const char *want) {
  const kd_schema *s = from->schema;
  sbuf b = {0}, rets = {0};
  bool first = true, kw = false;
  size_t na = kd_schema_num_arguments(s);
  sb_put(&b, want);
  sb_put(&b, "(");
  sb_put(&rets, "");
  if (strstr(want, "out")) {
    if (from->kind == KDG_INPLACE) {
      const kd_argument *self = NULL;
      for (size_t i = 0; i < na; i++) {
        const kd_argument *a = kd_schema_argument(s, i);
        bool is_self = !kd_argument_kwarg_only(a) && !strcmp(kd_argument_name(a), "self");
        if (is_self) self = a;
        put_arg(&b, a, !is_self, &first, &kw);
      }
      if (!self) goto fail;
      char t[512];
      type_text(kd_argument_type(self), true, t, sizeof t);
      if (!first) sb_put(&b, ", ");
      if (!kw) sb_put(&b, "*, ");
      sb_put(&b, t);
      sb_put(&b, " out");
      for (size_t i = 0; i < kd_schema_num_returns(s); i++) {
        type_text(kd_argument_type(kd_schema_return(s, i)), true, t, sizeof t);
        if (i) sb_put(&rets, ", ");
        sb_put(&rets, t);
      }
    } else if (from->kind == KDG_MUTABLE || from->kind == KDG_FUNCTIONAL) {
      bool functional = from->kind == KDG_FUNCTIONAL;
      for (size_t i = 0; i < na; i++) {
        const kd_argument *a = kd_schema_argument(s, i);
        if (functional && (tensor_options(s, a) || is_out_arg(a))) continue;
        put_arg(&b, a, !functional, &first, &kw);
      }
      out_args(s, &b, &rets, &first, &kw);
    } else {
      goto fail;
    }
  } else {
    /* the functional signature, return names kept, mutated inputs returned */
    size_t nret = 0;
    char t[512];
    for (size_t i = 0; i < kd_schema_num_returns(s); i++) {
      const kd_argument *r = kd_schema_return(s, i);
      type_text(kd_argument_type(r), false, t, sizeof t);
      if (nret++) sb_put(&rets, ", ");
      sb_put(&rets, t);
      if (kd_argument_name(r) && *kd_argument_name(r)) {
        sb_put(&rets, " ");
        sb_put(&rets, kd_argument_name(r));
      }
    }
    bool seen_self = false;
    for (size_t i = 0; i < na; i++) {
      const kd_argument *a = kd_schema_argument(s, i);
      if (!kd_argument_kwarg_only(a) && !strcmp(kd_argument_name(a), "self")) seen_self = true;
    }
    /* self, then out=, then positional after self (torchgen's order; without
     * a self argument every positional one counts as after self) */
    for (int pass = 0; pass < 3; pass++) {
      bool after_self = !seen_self;
      for (size_t i = 0; i < na; i++) {
        const kd_argument *a = kd_schema_argument(s, i);
        bool is_self = !kd_argument_kwarg_only(a) && !strcmp(kd_argument_name(a), "self");
        bool pick = pass == 0   ? is_self
                    : pass == 1 ? is_out_arg(a)
                                : !kd_argument_kwarg_only(a) && !is_self && after_self;
        if (is_self) after_self = true;
        if (!pick || !kd_argument_is_write(a)) continue;
        /* returned already (same alias as a return)? */
        char ta[512], tr[512];
        kd_type_format(kd_argument_type(a), ta, sizeof ta);
        bool returned = false;
        for (size_t k = 0; k < kd_schema_num_returns(s) && !returned; k++) {
          kd_type_format(kd_argument_type(kd_schema_return(s, k)), tr, sizeof tr);
          const char *pa = strchr(ta, '('), *pr = strchr(tr, '(');
          returned = pa && pr && !strncmp(pa, pr, (size_t)(strchr(pa, ')') - pa));
        }
        if (returned) continue;
        type_text(kd_argument_type(a), false, t, sizeof t);
        if (nret++) sb_put(&rets, ", ");
        sb_put(&rets, t);
        sb_put(&rets, " ");
        sb_put(&rets, kd_argument_name(a));
        sb_put(&rets, "_out");
      }
    }
    for (size_t i = 0; i < na; i++) {
      const kd_argument *a = kd_schema_argument(s, i);
      if (tensor_options(s, a) || is_out_arg(a)) continue;
      put_arg(&b, a, false, &first, &kw);
    }
  }
  sb_put(&b, ") -> (");
  sb_put(&b, rets.s ? rets.s : "");
  sb_put(&b, ")");
  if (b.oom || rets.oom) goto fail;
  kd_host_free(rets.s);
  return b.s;
fail:
  kd_host_free(b.s);
  kd_host_free(rets.s);
  return NULL;
}

/* Gives e (a backend entry naming an operator upstream generates) its
 * derived schema; reports a written schema that differs. */
static bool derive_autogen(bctx *C, kdg_func *e, const kdg_func *from) {
  char *text = autogen_schema(from, e->qualified);
  kd_schema *sch = NULL;
  if (!text || kd_schema_parse(text, strlen(text), &sch) != KD_OK) {
    BERR(e->line, "cannot derive the schema of '%s' from '%s' (%s:%d), whose autogen: names it",
         e->qualified, from->qualified, C->src->path, from->line);
    kd_host_free(text);
    return false;
  }
  if (e->schema) {
    char a[4096], b[4096];
    size_t na = kd_schema_format(e->schema, a, sizeof a);
    size_t nb = kd_schema_format(sch, b, sizeof b);
    if (na >= sizeof a || nb >= sizeof b || strcmp(a, b)) {
      BERR(e->line,
           "the schema of '%s' differs from the one upstream generates from '%s' (%s:%d): the "
           "backend has '%s', upstream generates '%s'",
           e->qualified, from->qualified, C->src->path, from->line, a, b);
      kd_schema_free(sch);
      kd_host_free(text);
      return false;
    }
    kd_schema_free(sch);
    kd_host_free(text);
    return true;
  }
  kd_host_free(e->func);
  e->func = text;
  e->schema = sch;
  e->kind = (kdg_kind)kd_schema_kind_of(sch);
  return true;
}

/* ---- Entries ------------------------------------------------------------ */

typedef struct eref {
  const char *name;
  size_t index;
} eref;

static int cmp_eref(const void *a, const void *b) {
  const eref *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  return (x->index > y->index) - (x->index < y->index);
}

static const kdg_bentry *entry_named(const bctx *C, const eref *v, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(v[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && !strcmp(v[lo].name, name) ? &C->b->entries[v[lo].index] : NULL;
}

/* Moves e into b->own (the backend's operators); returns its new place. */
static kdg_func *adopt(bctx *C, kdg_func *e) {
  kdg_file *own = &C->b->own;
  kdg_func *to = &own->funcs[own->nfuncs++];
  *to = *e;
  memset(e, 0, sizeof *e);
  return to;
}

static void resolve(bctx *C, kdg_bentry *be, kdg_func *e) {
  const char *src = C->src->path;
  kdg_func *up = find_up(C, e->qualified);
  kdg_func *agen_from = up ? NULL : find_agen(C, e->qualified);
  if (up) {
    if (e->schema) {
      char a[4096], b[4096];
      size_t na = kd_schema_format(e->schema, a, sizeof a);
      size_t nb = kd_schema_format(up->schema, b, sizeof b);
      if (na >= sizeof a || nb >= sizeof b || strcmp(a, b)) {
        BERR(e->line,
             "the schema of '%s' differs from upstream's (%s:%d): the backend has '%s', "
             "upstream has '%s'; write the bare name '%s' or upstream's schema",
             e->qualified, src, up->line, a, b, e->qualified);
        return;
      }
    }
    be->up = up;
    check_keys_upstream(C, e, up);
    return;
  }
  if (agen_from) {
    /* torch_musa's musa_handle_autogen_native_function_info. */
    if (!derive_autogen(C, e, agen_from)) return;
    be->is_autogen = true;
    be->autogen_of = agen_from;
    check_keys_own(C, e, "an operator upstream generates");
    be->up = adopt(C, e);
    return;
  }
  if (!e->schema) {
    BERR(e->line,
         "'%s' is not an operator of %s; a new operator needs its full schema in 'func'",
         e->qualified, src);
    return;
  }
  be->is_new = true;
  check_keys_own(C, e, "a new operator");
  be->up = adopt(C, e);
}

/* Delegates (functional / in-place of an upstream structured group) without
 * a kernel of their own follow their group's out= variant. */
static void classify_delegates(bctx *C, const eref *byname, size_t n) {
  for (size_t i = 0; i < C->b->nentries; i++) {
    kdg_bentry *be = &C->b->entries[i];
    if (!be->up || be->is_new || be->is_autogen || be->kernel || !be->up->structured_delegate)
      continue;
    if (be->structured_inherits || be->nprecomputed) continue; /* reported */
    kdg_func *out = be->up->delegate;
    if (!out || !out->structured) {
      /* upstream delegates to an unstructured out= variant: not a group */
      BERR(be->line, "'%s' names no %s kernel and upstream's delegate '%s' is not structured",
           be->written, C->b->opts.key, be->up->structured_delegate);
      continue;
    }
    be->group_out = out;
    const kdg_bentry *oe = entry_named(C, byname, n, out->qualified);
    if (!oe || !oe->up) {
      /* the out= variant is not listed: the group's upstream meta and impl */
      be->strategy = KDG_STRATEGY_LEGACY;
      be->structured = true;
      continue;
    }
    if (!oe->structured) {
      if (oe->strategy != KDG_STRATEGY_NONE || oe->kernel)
        BERR(be->line,
             "'%s' names no %s kernel, so it follows its structured group, but the group's "
             "'%s' (line %d) runs unstructured here; give '%s' its own kernel",
             be->written, C->b->opts.key, oe->written, oe->line, be->written);
      continue;
    }
    be->strategy = oe->strategy;
    be->structured = true;
  }
}

int kdg_backend_load(const char *path, kdg_file *source, const kdg_backend_opts *o,
                     kdg_backend *out, kdg_diag *d) {
  memset(out, 0, sizeof *out);
  size_t before = d->errors;
  bctx C0 = {0}, *C = &C0;
  C->b = out;
  C->src = source;
  C->d = d;
  C->path = path;
  out->path = xdup(C, path);
  kdg_file bf;
  memset(&bf, 0, sizeof bf);
  eref *byname = NULL;
  size_t nby = 0;
  size_t *from = NULL; /* entry -> index in bf */
  if (set_opts(C, o) != 0) goto done;
  if (build_index(C) != 0) {
    C->oom = true;
    goto done;
  }
  kdg_load_backend_entries(path, &bf, d);
  out->own.path = xdup(C, path);
  out->own.funcs = kd_host_calloc(bf.nfuncs ? bf.nfuncs : 1, sizeof *out->own.funcs);
  out->entries = kd_host_calloc(bf.nfuncs ? bf.nfuncs : 1, sizeof *out->entries);
  byname = kd_host_calloc(bf.nfuncs ? bf.nfuncs : 1, sizeof *byname);
  from = kd_host_calloc(bf.nfuncs ? bf.nfuncs : 1, sizeof *from);
  if (!out->own.funcs || !out->entries || !byname || !from) {
    C->oom = true;
    goto done;
  }
  if (source->known_tags) {
    out->own.known_tags = kd_host_calloc(source->nknown_tags + 1, sizeof *out->own.known_tags);
    if (!out->own.known_tags) C->oom = true;
    for (size_t i = 0; i < source->nknown_tags && !C->oom; i++) {
      out->own.known_tags[i] = xdup(C, source->known_tags[i]);
      out->own.nknown_tags++;
    }
  }

  /* Resolve, in file order. */
  for (size_t i = 0; i < bf.nfuncs && !C->oom; i++) {
    kdg_func *e = &bf.funcs[i];
    if (!e->qualified) continue; /* reported by the loader */
    kdg_bentry *be = &out->entries[out->nentries++];
    be->line = e->line;
    be->device_guard = -1;
    be->written = xdup(C, e->qualified);
    check_dispatch(C, e);
    take_written(C, be, e);
    resolve(C, be, e);
    from[out->nentries - 1] = i;
    if (be->up) byname[nby++] = (eref){be->written, (size_t)(be - out->entries)};
  }
  qsort(byname, nby, sizeof *byname, cmp_eref);
  for (size_t i = 1; i < nby; i++)
    if (!strcmp(byname[i].name, byname[i - 1].name)) {
      kdg_bentry *a = &out->entries[byname[i - 1].index], *b = &out->entries[byname[i].index];
      if (a > b) {
        kdg_bentry *t = a;
        a = b;
        b = t;
      }
      kdg_error(d, path, b->line, "'%s' is listed twice (first at line %d)", b->written, a->line);
    }

  /* Classify: out= variants and unstructured entries, then delegates. */
  for (size_t j = 0; j < out->nentries; j++) {
    kdg_bentry *be = &out->entries[j];
    if (!be->up) continue;
    if (be->is_new || be->is_autogen) {
      /* torch_musa: every kernel of such an operator is Customized. */
      if (be->kernel)
        be->strategy = KDG_STRATEGY_CUSTOMIZED;
      else if (be->ndispatch == 0)
        BERR(be->line, "%s '%s' names no kernel; add 'dispatch: %s: NAME'",
             be->is_new ? "the new operator" : "the operator", be->written, C->b->opts.key);
      continue;
    }
    kdg_func *e = &bf.funcs[from[j]];
    classify_upstream(C, be, e);
    check_device_behaviour(C, be, e);
  }
  classify_delegates(C, byname, nby);

  /* The backend's own operators are checked like upstream's. */
  if (out->own.nfuncs) kdg_validate(&out->own, d);

done:
  if (C->oom) kdg_error(d, path, 0, "out of memory");
  kdg_file_free(&bf);
  kd_host_free(byname);
  kd_host_free(from);
  kd_host_free(C->up_sorted);
  kd_host_free(C->agen);
  return d->errors == before ? 0 : -1;
}

void kdg_backend_free(kdg_backend *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nentries; i++) {
    kdg_bentry *e = &b->entries[i];
    kd_host_free(e->written);
    kd_host_free(e->kernel);
    kd_host_free(e->structured_inherits);
    for (size_t k = 0; k < e->nprecomputed; k++) {
      kdg_precomputed *p = &e->precomputed[k];
      kd_host_free(p->replaces);
      for (size_t j = 0; j < p->nfields; j++) {
        kd_host_free(p->fields[j].type);
        kd_host_free(p->fields[j].name);
      }
      kd_host_free(p->fields);
    }
    kd_host_free(e->precomputed);
    for (size_t k = 0; k < e->ndispatch; k++) {
      kd_host_free(e->dispatch[k].key);
      kd_host_free(e->dispatch[k].kernel);
    }
    kd_host_free(e->dispatch);
    kd_host_free(e->device_check);
  }
  kd_host_free(b->entries);
  kdg_file_free(&b->own);
  kd_host_free((char *)b->opts.key);
  kd_host_free((char *)b->opts.name);
  kd_host_free((char *)b->opts.prefix);
  kd_host_free((char *)b->opts.ns);
  kd_host_free(b->path);
  memset(b, 0, sizeof *b);
}

void kdg_backend_print_classification(const kdg_backend *b, FILE *to) {
  size_t count[4][2] = {{0}};
  for (size_t i = 0; i < b->nentries; i++) {
    const kdg_bentry *e = &b->entries[i];
    fprintf(to, "%s %s %s\n", e->written, kdg_strategy_name(e->strategy),
            e->structured ? "structured" : "unstructured");
    count[e->strategy][e->structured ? 0 : 1]++;
  }
  static const kdg_strategy order[] = {KDG_STRATEGY_LEGACY, KDG_STRATEGY_LEGACY_META,
                                       KDG_STRATEGY_CUSTOMIZED, KDG_STRATEGY_NONE};
  for (size_t i = 0; i < 4; i++) {
    kdg_strategy s = order[i];
    fprintf(to, "%s: %zu (%zu structured, %zu unstructured)\n", kdg_strategy_name(s),
            count[s][0] + count[s][1], count[s][0], count[s][1]);
  }
  fprintf(to, "total: %zu\n", b->nentries);
}

kdg_strategy kdg_bentry_key_strategy(const kdg_backend *b, const kdg_bentry *e, const char *key) {
  if (!strcmp(key, b->opts.key)) return e->strategy;
  const kdg_dispatch *k = dispatch_of(e->dispatch, e->ndispatch, key);
  if (!k || !e->up) return KDG_STRATEGY_NONE;
  if (e->is_new || e->is_autogen) return KDG_STRATEGY_CUSTOMIZED;
  size_t kl = strlen(key), ml = strlen(b->opts.key);
  if (kl < ml || strcmp(key + kl - ml, b->opts.key)) return KDG_STRATEGY_CUSTOMIZED;
  /* torch_musa's related_torch_dispatch_keys: the same functionality on CPU, CUDA */
  static const char *const comps[] = {"CPU", "CUDA"};
  for (size_t c = 0; c < 2; c++) {
    char rel[128];
    snprintf(rel, sizeof rel, "%.*s%s", (int)(kl - ml), key, comps[c]);
    const kdg_dispatch *u = dispatch_of(e->up->dispatch, e->up->ndispatch, rel);
    if (u && !strcmp(u->kernel, k->kernel)) return KDG_STRATEGY_LEGACY;
  }
  return KDG_STRATEGY_CUSTOMIZED;
}
