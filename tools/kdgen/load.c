/*
 * load.c: reads a native_functions.yaml file (PyTorch's format) and a
 * tags.yaml file into kdgen's model (model.h), with libyaml's document API.
 *
 * The loader checks the shape of the file: every entry is a mapping with a
 * func: key whose schema parses, every key is one torchgen knows, every value
 * has the kind the key needs (a string, a list, a mapping, True/False).
 * What the values mean is checked by kdg_validate (validate.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "kd/status.h"
#include "model.h"
#include "kd/memory.h"

/* ---- Small helpers ------------------------------------------------------ */

typedef struct loader {
  const char *path;
  yaml_document_t *doc;
  kdg_diag *d;
  bool oom;
  bool bare; /* a backend file: func may be a bare name (kdg_load_backend_entries) */
} loader;

static char *dup_n(loader *L, const char *s, size_t n) {
  char *r = kd_host_malloc(n + 1);
  if (!r) {
    L->oom = true;
    return NULL;
  }
  memcpy(r, s, n);
  r[n] = '\0';
  return r;
}

static char *dup_s(loader *L, const char *s) { return dup_n(L, s, strlen(s)); }

/* Copies s[0..n) without surrounding blanks. */
static char *dup_trim(loader *L, const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  return dup_n(L, s, n);
}

/* Appends a string to a growing array; takes ownership of s (NULL: no-op). */
static void push_string(loader *L, char ***v, size_t *n, char *s) {
  if (!s) return;
  char **p = kd_host_realloc(*v, (*n + 1) * sizeof **v);
  if (!p) {
    L->oom = true;
    kd_host_free(s);
    return;
  }
  *v = p;
  p[(*n)++] = s;
}

static int node_line(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static const char *kind_word(const yaml_node_t *n) {
  switch (n->type) {
    case YAML_SCALAR_NODE: return "a string";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
  }
}

static bool is_scalar(const yaml_node_t *n) { return n && n->type == YAML_SCALAR_NODE; }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* A plain empty scalar (`key:` with no value) or ~ / null is YAML's null. */
static bool is_null(const yaml_node_t *n) {
  if (!is_scalar(n) || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const char *s = scalar(n);
  return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
         !strcmp(s, "NULL");
}

/* ---- Keys --------------------------------------------------------------- */

/* Every key torchgen's NativeFunction.from_yaml accepts. */
static const char *const known_keys[] = {
    "func",
    "variants",
    "dispatch",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "precomputed",
    "device_check",
    "device_guard",
    "tags",
    "autogen",
    "manual_kernel_registration",
    "manual_cpp_binding",
    "cpp_no_default_args",
    "use_const_ref_for_mutable_tensors",
    "python_module",
    "category_override",
    "ufunc_inner_loop",
    "kd_stubs", /* kdgen's extension: the dispatch stubs a structured impl calls */
};

static bool known_key(const char *k) {
  for (size_t i = 0; i < sizeof known_keys / sizeof *known_keys; i++)
    if (!strcmp(known_keys[i], k)) return true;
  return false;
}

/* torchgen's UfuncKey names. */
static const char *const ufunc_keys[] = {
    "CUDAFunctor", "CUDAFunctorOnOther", "CUDAFunctorOnSelf", "CPUScalar",
    "CPUVector",   "ScalarOnly",         "Generic",
};

static bool known_ufunc_key(const char *k) {
  for (size_t i = 0; i < sizeof ufunc_keys / sizeof *ufunc_keys; i++)
    if (!strcmp(ufunc_keys[i], k)) return true;
  return false;
}

/* ---- Values ------------------------------------------------------------- */

/* A string value. Reports and returns NULL when the node is not a scalar. */
static char *get_string(loader *L, const kdg_func *fn, const char *key, const yaml_node_t *v) {
  if (!is_scalar(v) || is_null(v)) {
    kdg_error(L->d, L->path, node_line(v), "'%s' of '%s' must be a string, found %s", key,
              fn->qualified, is_null(v) ? "nothing" : kind_word(v));
    return NULL;
  }
  return dup_s(L, scalar(v));
}

/* True / False as PyYAML reads them. */
static void get_bool(loader *L, const kdg_func *fn, const char *key, const yaml_node_t *v,
                     bool *out) {
  if (is_scalar(v) && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
    const char *s = scalar(v);
    if (!strcmp(s, "True") || !strcmp(s, "true") || !strcmp(s, "TRUE")) {
      *out = true;
      return;
    }
    if (!strcmp(s, "False") || !strcmp(s, "false") || !strcmp(s, "FALSE")) {
      *out = false;
      return;
    }
  }
  if (is_scalar(v) && !is_null(v))
    kdg_error(L->d, L->path, node_line(v), "'%s' of '%s' must be True or False, found '%s'", key,
              fn->qualified, scalar(v));
  else
    kdg_error(L->d, L->path, node_line(v), "'%s' of '%s' must be True or False, found %s", key,
              fn->qualified, is_null(v) ? "nothing" : kind_word(v));
}

/* A string or a list of strings (tags). */
static void get_string_list(loader *L, const kdg_func *fn, const char *key, const yaml_node_t *v,
                            bool allow_scalar, char ***out, size_t *n) {
  if (allow_scalar && is_scalar(v) && !is_null(v)) {
    push_string(L, out, n, dup_s(L, scalar(v)));
    return;
  }
  if (v->type != YAML_SEQUENCE_NODE) {
    kdg_error(L->d, L->path, node_line(v), "'%s' of '%s' must be a list%s, found %s", key,
              fn->qualified, allow_scalar ? " or a string" : "",
              is_null(v) ? "nothing" : kind_word(v));
    return;
  }
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
       it++) {
    yaml_node_t *e = yaml_document_get_node(L->doc, *it);
    if (!is_scalar(e) || is_null(e)) {
      kdg_error(L->d, L->path, node_line(e), "the items of '%s' of '%s' must be strings", key,
                fn->qualified);
      continue;
    }
    push_string(L, out, n, dup_s(L, scalar(e)));
  }
}

/* "a.out, b.out" → {"a.out", "b.out"}; empty pieces are kept as "" (validate
 * reports them). */
static void split_commas(loader *L, const char *s, char ***out, size_t *n) {
  for (;;) {
    const char *c = strchr(s, ',');
    size_t len = c ? (size_t)(c - s) : strlen(s);
    push_string(L, out, n, dup_trim(L, s, len));
    if (!c) break;
    s = c + 1;
  }
}

static void get_dispatch(loader *L, kdg_func *fn, const yaml_node_t *v) {
  fn->has_dispatch = true;
  if (is_null(v)) return; /* `dispatch:` with nothing: an empty table */
  if (v->type != YAML_MAPPING_NODE) {
    kdg_error(L->d, L->path, node_line(v),
              "'dispatch' of '%s' must be a mapping of dispatch keys to kernels, found %s",
              fn->qualified, kind_word(v));
    return;
  }
  for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *val = yaml_document_get_node(L->doc, p->value);
    if (!is_scalar(k) || is_null(k)) {
      kdg_error(L->d, L->path, node_line(k), "a key of 'dispatch' of '%s' is not a string",
                fn->qualified);
      continue;
    }
    if (!is_scalar(val) || is_null(val)) {
      kdg_error(L->d, L->path, node_line(k), "dispatch key '%s' of '%s' names no kernel",
                scalar(k), fn->qualified);
      continue;
    }
    char **keys = NULL;
    size_t nkeys = 0;
    split_commas(L, scalar(k), &keys, &nkeys);
    kdg_dispatch *grown = kd_host_realloc(fn->dispatch, (fn->ndispatch + nkeys) * sizeof *grown);
    if (!grown) {
      L->oom = true;
      for (size_t i = 0; i < nkeys; i++) kd_host_free(keys[i]);
      kd_host_free(keys);
      return;
    }
    fn->dispatch = grown;
    for (size_t i = 0; i < nkeys; i++) {
      char *kernel = dup_s(L, scalar(val));
      if (!kernel) {
        kd_host_free(keys[i]);
        continue;
      }
      kdg_dispatch *e = &fn->dispatch[fn->ndispatch++];
      e->key = keys[i];
      e->kernel = kernel;
      e->line = node_line(k);
    }
    kd_host_free(keys);
  }
}

/* "int kH" → type "int", name "kH" (split at the last blank). */
static bool parse_field(loader *L, const char *s, size_t n, kdg_precomputed_field *out) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  size_t sp = n;
  while (sp > 0 && !isspace((unsigned char)s[sp - 1])) sp--;
  if (sp == 0 || sp == n) return false;
  out->type = dup_trim(L, s, sp);
  out->name = dup_n(L, s + sp, n - sp);
  return out->type && out->name;
}

static bool is_ident(const char *s) {
  if (!*s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

/* One line: "arg -> type name, type name" or "type name, type name". */
static void parse_precomputed_line(loader *L, kdg_func *fn, const char *text, int line) {
  kdg_precomputed *grown = kd_host_realloc(fn->precomputed, (fn->nprecomputed + 1) * sizeof *grown);
  if (!grown) {
    L->oom = true;
    return;
  }
  fn->precomputed = grown;
  kdg_precomputed *p = &fn->precomputed[fn->nprecomputed++];
  memset(p, 0, sizeof *p);
  p->line = line;
  const char *arrow = strstr(text, "->");
  const char *fields = text;
  if (arrow) {
    p->replaces = dup_trim(L, text, (size_t)(arrow - text));
    fields = arrow + 2;
    if (p->replaces && !is_ident(p->replaces)) {
      kdg_error(L->d, L->path, line,
                "precomputed of '%s': '%s' before '->' is not an argument name", fn->qualified,
                p->replaces);
      return;
    }
  } else {
    p->replaces = dup_s(L, "");
  }
  for (;;) {
    const char *c = strchr(fields, ',');
    size_t len = c ? (size_t)(c - fields) : strlen(fields);
    kdg_precomputed_field *fg = kd_host_realloc(p->fields, (p->nfields + 1) * sizeof *fg);
    if (!fg) {
      L->oom = true;
      return;
    }
    p->fields = fg;
    kdg_precomputed_field *f = &p->fields[p->nfields];
    memset(f, 0, sizeof *f);
    bool ok = parse_field(L, fields, len, f);
    p->nfields++;
    if (!ok || !is_ident(f->name)) {
      kdg_error(L->d, L->path, line,
                "precomputed of '%s': expected 'type name' in '%s'", fn->qualified, text);
      return;
    }
    if (!c) break;
    fields = c + 1;
  }
}

static void get_precomputed(loader *L, kdg_func *fn, const yaml_node_t *v) {
  if (v->type != YAML_SEQUENCE_NODE) {
    kdg_error(L->d, L->path, node_line(v),
              "'precomputed' of '%s' must be a list of 'arg -> type name, ...' lines, found %s",
              fn->qualified, is_null(v) ? "nothing" : kind_word(v));
    return;
  }
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
       it++) {
    yaml_node_t *e = yaml_document_get_node(L->doc, *it);
    if (!is_scalar(e) || is_null(e)) {
      kdg_error(L->d, L->path, node_line(e), "the items of 'precomputed' of '%s' must be strings",
                fn->qualified);
      continue;
    }
    parse_precomputed_line(L, fn, scalar(e), node_line(e));
  }
}

static void get_ufunc_inner_loop(loader *L, kdg_func *fn, const yaml_node_t *v) {
  fn->has_ufunc_inner_loop = true;
  if (is_scalar(v) && !is_null(v)) return; /* one loop for the Generic key */
  if (v->type != YAML_MAPPING_NODE) {
    kdg_error(L->d, L->path, node_line(v),
              "'ufunc_inner_loop' of '%s' must be a string or a mapping, found %s", fn->qualified,
              is_null(v) ? "nothing" : kind_word(v));
    return;
  }
  for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *val = yaml_document_get_node(L->doc, p->value);
    if (!is_scalar(k) || !known_ufunc_key(scalar(k))) {
      kdg_error(L->d, L->path, node_line(k), "unknown ufunc_inner_loop key '%s' in '%s'",
                is_scalar(k) ? scalar(k) : "?", fn->qualified);
      continue;
    }
    if (!is_scalar(val) || is_null(val))
      kdg_error(L->d, L->path, node_line(k), "ufunc_inner_loop key '%s' of '%s' names no loop",
                scalar(k), fn->qualified);
  }
}

/* ---- Entries ------------------------------------------------------------ */

static void set_names(loader *L, kdg_func *fn) {
  const char *name = kd_schema_name(fn->schema);
  const char *ovl = kd_schema_overload(fn->schema);
  size_t nl = strlen(name), ol = strlen(ovl);
  fn->name = dup_s(L, name);
  fn->overload = dup_s(L, ovl);
  fn->cname = kdg_cname(name, ovl);
  fn->qualified = kd_host_malloc(nl + ol + 2);
  if (!fn->cname || !fn->qualified) {
    L->oom = true;
    return;
  }
  snprintf(fn->qualified, nl + ol + 2, "%s%s%s", name, ol ? "." : "", ovl);
  /* base: without the in-place '_'. Dunder names keep their underscores; an
   * in-place dunder (__iadd__) has the out-of-place one as base (__add__). */
  size_t bl = nl;
  bool dunder = nl > 4 && !strncmp(name, "__", 2) && !strcmp(name + nl - 2, "__");
  if (dunder && fn->schema && kd_schema_kind_of(fn->schema) == KD_SCHEMA_INPLACE &&
      name[2] == 'i') {
    fn->base = kd_host_malloc(nl);
    if (fn->base) snprintf(fn->base, nl, "__%s", name + 3);
  } else {
    if (!dunder && bl > 1 && name[bl - 1] == '_') bl--;
    fn->base = dup_n(L, name, bl);
  }
  if (!fn->base) L->oom = true;
  fn->kind = (kdg_kind)kd_schema_kind_of(fn->schema);
}

static void parse_variants(kdg_func *fn) {
  unsigned v = 0;
  const char *s = fn->variants_text;
  while (*s) {
    while (*s == ' ' || *s == ',') s++;
    const char *e = s;
    while (*e && *e != ',' && *e != ' ') e++;
    size_t n = (size_t)(e - s);
    if (n == 8 && !memcmp(s, "function", 8)) v |= KDG_VARIANT_FUNCTION;
    if (n == 6 && !memcmp(s, "method", 6)) v |= KDG_VARIANT_METHOD;
    s = e;
  }
  fn->variants = v;
}

static bool set_bare_names(loader *L, kdg_func *fn, int line);
static bool parse_schema(loader *L, kdg_func *fn, int line);
static void read_keys(loader *L, kdg_func *fn, const yaml_node_t *m);

static void load_entry(loader *L, kdg_func *fn, const yaml_node_t *m) {
  fn->line = node_line(m);
  fn->variants = KDG_VARIANT_FUNCTION;
  fn->device_guard = true;

  /* The schema first: every other message names the entry. */
  const yaml_node_t *funcv = NULL;
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
    if (is_scalar(k) && !strcmp(scalar(k), "func")) {
      funcv = yaml_document_get_node(L->doc, p->value);
      break;
    }
  }
  if (!funcv) {
    kdg_error(L->d, L->path, fn->line, "this entry has no 'func:' key");
    return;
  }
  if (!is_scalar(funcv) || is_null(funcv)) {
    kdg_error(L->d, L->path, node_line(funcv), "'func' must be a schema string, found %s",
              is_null(funcv) ? "nothing" : kind_word(funcv));
    return;
  }
  fn->func = dup_s(L, scalar(funcv));
  if (!fn->func) return;
  if (L->bare && !strchr(fn->func, '(')) {
    if (!set_bare_names(L, fn, node_line(funcv))) return;
  } else if (!parse_schema(L, fn, node_line(funcv))) {
    return;
  }
  read_keys(L, fn, m);
}

/* A backend file's "- func: add.out": the name is all there is. */
static bool set_bare_names(loader *L, kdg_func *fn, int line) {
  const char *s = fn->func;
  const char *p = s;
  bool ok = isalpha((unsigned char)*p) || *p == '_';
  while (ok && (isalnum((unsigned char)*p) || *p == '_')) p++;
  const char *dot = NULL;
  if (ok && *p == '.') {
    dot = p++;
    ok = isalnum((unsigned char)*p) || *p == '_';
    while (ok && (isalnum((unsigned char)*p) || *p == '_')) p++;
  }
  if (!ok || *p) {
    kdg_error(L->d, L->path, line,
              "'func' must be an operator name (name or name.overload) or a full schema, found "
              "'%s'",
              s);
    return false;
  }
  size_t nl = dot ? (size_t)(dot - s) : strlen(s);
  fn->name = dup_n(L, s, nl);
  fn->overload = dup_s(L, dot ? dot + 1 : "");
  fn->qualified = dup_s(L, s);
  fn->base = dup_n(L, s, nl);
  fn->cname = fn->name && fn->overload ? kdg_cname(fn->name, fn->overload) : NULL;
  if (!fn->cname) L->oom = true;
  return !L->oom;
}

static bool parse_schema(loader *L, kdg_func *fn, int line) {
  kd_clear_error();
  kd_status st = kd_schema_parse(fn->func, strlen(fn->func), &fn->schema);
  if (st != KD_OK) {
    kdg_error(L->d, L->path, line, "bad schema '%s': %s", fn->func, kd_last_error());
    fn->schema = NULL;
    return false;
  }
  set_names(L, fn);
  return !L->oom;
}

static void read_keys(loader *L, kdg_func *fn, const yaml_node_t *m) {
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
    yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
    if (!is_scalar(k)) {
      kdg_error(L->d, L->path, node_line(k), "a key of the entry for '%s' is not a string",
                fn->qualified);
      continue;
    }
    const char *key = scalar(k);
    int kl = node_line(k);
    if (!known_key(key)) {
      kdg_error(L->d, L->path, kl, "unknown key '%s' in the entry for '%s'", key, fn->qualified);
      continue;
    }
    bool dup = false;
    for (size_t i = 0; i < fn->nkeys; i++)
      if (!strcmp(fn->keys[i].name, key)) {
        kdg_error(L->d, L->path, kl, "key '%s' is written twice in the entry for '%s' (first at line %d)",
                  key, fn->qualified, fn->keys[i].line);
        dup = true;
        break;
      }
    if (dup) continue;
    kdg_key *ks = kd_host_realloc(fn->keys, (fn->nkeys + 1) * sizeof *ks);
    if (!ks) {
      L->oom = true;
      return;
    }
    fn->keys = ks;
    ks[fn->nkeys].name = dup_s(L, key);
    ks[fn->nkeys].line = kl;
    if (!ks[fn->nkeys].name) return;
    fn->nkeys++;

    if (!strcmp(key, "func")) {
      /* read above */
    } else if (!strcmp(key, "variants")) {
      fn->variants_text = get_string(L, fn, key, v);
      if (fn->variants_text) parse_variants(fn);
    } else if (!strcmp(key, "dispatch")) {
      get_dispatch(L, fn, v);
    } else if (!strcmp(key, "structured")) {
      get_bool(L, fn, key, v, &fn->structured);
    } else if (!strcmp(key, "structured_delegate")) {
      fn->structured_delegate = get_string(L, fn, key, v);
    } else if (!strcmp(key, "structured_inherits")) {
      fn->structured_inherits = get_string(L, fn, key, v);
    } else if (!strcmp(key, "precomputed")) {
      get_precomputed(L, fn, v);
    } else if (!strcmp(key, "device_check")) {
      fn->device_check = get_string(L, fn, key, v);
    } else if (!strcmp(key, "device_guard")) {
      get_bool(L, fn, key, v, &fn->device_guard);
    } else if (!strcmp(key, "tags")) {
      get_string_list(L, fn, key, v, true, &fn->tags, &fn->ntags);
    } else if (!strcmp(key, "autogen")) {
      char *s = get_string(L, fn, key, v);
      if (s) split_commas(L, s, &fn->autogen, &fn->nautogen);
      kd_host_free(s);
    } else if (!strcmp(key, "manual_kernel_registration")) {
      get_bool(L, fn, key, v, &fn->manual_kernel_registration);
    } else if (!strcmp(key, "manual_cpp_binding")) {
      get_bool(L, fn, key, v, &fn->manual_cpp_binding);
    } else if (!strcmp(key, "cpp_no_default_args")) {
      get_string_list(L, fn, key, v, false, &fn->cpp_no_default_args,
                      &fn->ncpp_no_default_args);
    } else if (!strcmp(key, "use_const_ref_for_mutable_tensors")) {
      get_bool(L, fn, key, v, &fn->use_const_ref_for_mutable_tensors);
    } else if (!strcmp(key, "python_module")) {
      fn->python_module = get_string(L, fn, key, v);
    } else if (!strcmp(key, "category_override")) {
      fn->category_override = get_string(L, fn, key, v);
    } else if (!strcmp(key, "ufunc_inner_loop")) {
      get_ufunc_inner_loop(L, fn, v);
    } else if (!strcmp(key, "kd_stubs")) {
      get_string_list(L, fn, key, v, false, &fn->kd_stubs, &fn->nkd_stubs);
    }
    if (L->oom) return;
  }
}

/* ---- Files -------------------------------------------------------------- */

/* Opens and parses `path` into *doc; reports and returns -1 on failure. */
static int read_doc(const char *path, yaml_document_t *doc, kdg_diag *d) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    kdg_error(d, path, 0, "cannot open: %s", strerror(errno));
    return -1;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    fclose(fp);
    kdg_error(d, path, 0, "out of memory");
    return -1;
  }
  yaml_parser_set_input_file(&parser, fp);
  int rc = 0;
  if (!yaml_parser_load(&parser, doc)) {
    if (parser.context)
      kdg_error(d, path, (int)parser.problem_mark.line + 1, "YAML: %s %s started at line %d",
                parser.problem ? parser.problem : "cannot parse", parser.context,
                (int)parser.context_mark.line + 1);
    else
      kdg_error(d, path, (int)parser.problem_mark.line + 1, "YAML: %s",
                parser.problem ? parser.problem : "cannot parse");
    rc = -1;
  }
  yaml_parser_delete(&parser);
  fclose(fp);
  return rc;
}

static int load_tags(const char *path, kdg_file *out, kdg_diag *d) {
  yaml_document_t doc;
  if (read_doc(path, &doc, d) != 0) return -1;
  size_t before = d->errors;
  loader L = {path, &doc, d, false, false};
  /* An empty tags file defines no tags (known_tags stays non-NULL below). */
  out->known_tags = kd_host_calloc(1, sizeof *out->known_tags);
  if (!out->known_tags) L.oom = true;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (root && !is_null(root) && root->type != YAML_SEQUENCE_NODE) {
    kdg_error(d, path, node_line(root), "a tags file must be a list of '- tag: name' entries");
  } else if (root && root->type == YAML_SEQUENCE_NODE) {
    for (yaml_node_item_t *it = root->data.sequence.items.start;
         it < root->data.sequence.items.top && !L.oom; it++) {
      yaml_node_t *e = yaml_document_get_node(&doc, *it);
      if (e->type != YAML_MAPPING_NODE) {
        kdg_error(d, path, node_line(e), "a tags entry must be a mapping with 'tag:' and 'desc:'");
        continue;
      }
      const char *tag = NULL;
      bool has_desc = false;
      for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&doc, p->value);
        const char *ks = is_scalar(k) ? scalar(k) : "?";
        if (!strcmp(ks, "tag")) {
          if (!is_scalar(v) || is_null(v))
            kdg_error(d, path, node_line(k), "'tag' must be a name");
          else
            tag = scalar(v);
        } else if (!strcmp(ks, "desc")) {
          has_desc = true;
        } else {
          kdg_error(d, path, node_line(k), "unknown key '%s' in a tags entry", ks);
        }
      }
      if (!tag) {
        kdg_error(d, path, node_line(e), "this tags entry has no 'tag:'");
        continue;
      }
      if (!has_desc) kdg_error(d, path, node_line(e), "tag '%s' has no 'desc:'", tag);
      bool seen = false;
      for (size_t i = 0; i < out->nknown_tags; i++)
        if (!strcmp(out->known_tags[i], tag)) seen = true;
      if (seen) {
        kdg_error(d, path, node_line(e), "tag '%s' is defined twice", tag);
        continue;
      }
      push_string(&L, &out->known_tags, &out->nknown_tags, dup_s(&L, tag));
    }
  }
  if (L.oom) kdg_error(d, path, 0, "out of memory");
  yaml_document_delete(&doc);
  return d->errors == before ? 0 : -1;
}

static int load_file(const char *path, const char *tags_path, kdg_file *out, kdg_diag *d,
                     bool bare) {
  memset(out, 0, sizeof *out);
  size_t before = d->errors;
  loader L = {path, NULL, d, false, bare};
  out->path = dup_s(&L, path);

  if (tags_path) load_tags(tags_path, out, d);

  yaml_document_t doc;
  if (read_doc(path, &doc, d) != 0) return -1;
  L.doc = &doc;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (root && !is_null(root) && root->type != YAML_SEQUENCE_NODE) {
    kdg_error(d, path, node_line(root), "the file must be a list of '- func: ...' entries");
  } else if (root && root->type == YAML_SEQUENCE_NODE) {
    size_t n = (size_t)(root->data.sequence.items.top - root->data.sequence.items.start);
    out->funcs = n ? kd_host_calloc(n, sizeof *out->funcs) : NULL;
    if (n && !out->funcs) L.oom = true;
    for (size_t i = 0; i < n && !L.oom; i++) {
      yaml_node_t *e = yaml_document_get_node(&doc, root->data.sequence.items.start[i]);
      if (e->type != YAML_MAPPING_NODE) {
        kdg_error(d, path, node_line(e), "an entry must be a mapping starting with 'func:'");
        continue;
      }
      kdg_func *fn = &out->funcs[out->nfuncs++];
      load_entry(&L, fn, e);
    }
  }
  if (L.oom) kdg_error(d, path, 0, "out of memory");
  yaml_document_delete(&doc);
  return d->errors == before ? 0 : -1;
}

int kdg_load(const char *path, const char *tags_path, kdg_file *out, kdg_diag *d) {
  return load_file(path, tags_path, out, d, false);
}

int kdg_load_backend_entries(const char *path, kdg_file *out, kdg_diag *d) {
  return load_file(path, NULL, out, d, true);
}
