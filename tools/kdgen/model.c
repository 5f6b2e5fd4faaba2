/*
 * model.c: diagnostics, lookup and freeing of kdgen's model (model.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "kd/memory.h"

__attribute__((format(printf, 4, 0))) static void report(const char *file, int line, const char *what,
                                                         const char *fmt, va_list ap) {
  if (!file) file = "kdgen";
  if (line > 0)
    fprintf(stderr, "%s:%d: %s: ", file, line, what);
  else
    fprintf(stderr, "%s: %s: ", file, what);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void kdg_error(kdg_diag *d, const char *file, int line, const char *fmt, ...) {
  bool print = d == NULL || d->max_print == 0 || d->errors < d->max_print;
  if (d) d->errors++;
  if (!print) return;
  va_list ap;
  va_start(ap, fmt);
  report(file, line, "error", fmt, ap);
  va_end(ap);
}

void kdg_note(kdg_diag *d, const char *file, int line, const char *fmt, ...) {
  if (d) d->notes++;
  va_list ap;
  va_start(ap, fmt);
  report(file, line, "note", fmt, ap);
  va_end(ap);
}

char *kdg_cname(const char *name, const char *overload) {
  size_t nl = strlen(name), ol = strlen(overload);
  const char *pre = "", *core = name, *tail = "";
  size_t cl = nl;
  if (nl > 4 && !strncmp(name, "__", 2) && !strcmp(name + nl - 2, "__")) {
    pre = "dunder_"; /* __and__, __iand__: the underscores are Python's, not ours */
    core = name + 2;
    cl = nl - 4;
  } else {
    if (cl > 1 && core[cl - 1] == '_') { /* in place: the '_' ends the stem */
      cl--;
      tail = "_";
    }
    if (cl > 1 && core[0] == '_') { /* private: _softmax */
      pre = "internal_";
      core++;
      cl--;
    }
  }
  size_t cap = strlen(pre) + cl + 1 + ol + strlen(tail) + 1;
  char *s = kd_host_malloc(cap);
  if (s) snprintf(s, cap, "%s%.*s%s%s%s", pre, (int)cl, core, ol ? "_" : "", overload, tail);
  return s;
}

/* Operator names whose entry point would be a name of the core API
 * (kd_stack is the boxed stack): their entry points get "_op" appended
 * (docs/CODEGEN.md). */
static const char *const core_names[] = {
    "allocator", "arg",    "argument", "call",   "device", "dtype",  "kernel",
    "keyset",    "layout", "library",  "list",   "op",     "registration", "scalar",
    "schema",    "stack",  "status",   "storage", "string", "tensor", "type",
    "value",     NULL};

void kdg_entry_name(char *dst, size_t cap, const char *cname) {
  bool clash = false;
  for (const char *const *n = core_names; *n; n++)
    if (!strcmp(*n, cname)) clash = true;
  snprintf(dst, cap, "%s%s", cname, clash ? "_op" : "");
}

const char *const kdg_direct_prefixes[] = {"cpu",         "cuda",        "meta",
                                           "privateuse1", "privateuse2", "privateuse3",
                                           NULL};

static void free_strings(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) kd_host_free(v[i]);
  kd_host_free(v);
}

static void free_func(kdg_func *fn) {
  kd_host_free(fn->func);
  kd_schema_free(fn->schema);
  kd_host_free(fn->name);
  kd_host_free(fn->overload);
  kd_host_free(fn->cname);
  kd_host_free(fn->base);
  for (size_t i = 0; i < fn->ndispatch; i++) {
    kd_host_free(fn->dispatch[i].key);
    kd_host_free(fn->dispatch[i].kernel);
  }
  kd_host_free(fn->dispatch);
  kd_host_free(fn->structured_delegate);
  kd_host_free(fn->structured_inherits);
  for (size_t i = 0; i < fn->nprecomputed; i++) {
    kdg_precomputed *p = &fn->precomputed[i];
    kd_host_free(p->replaces);
    for (size_t j = 0; j < p->nfields; j++) {
      kd_host_free(p->fields[j].type);
      kd_host_free(p->fields[j].name);
    }
    kd_host_free(p->fields);
  }
  kd_host_free(fn->precomputed);
  kd_host_free(fn->device_check);
  free_strings(fn->tags, fn->ntags);
  free_strings(fn->kd_stubs, fn->nkd_stubs);
  free_strings(fn->autogen, fn->nautogen);
  free_strings(fn->cpp_no_default_args, fn->ncpp_no_default_args);
  kd_host_free(fn->python_module);
  kd_host_free(fn->category_override);
  kd_host_free(fn->variants_text);
  for (size_t i = 0; i < fn->nkeys; i++) kd_host_free(fn->keys[i].name);
  kd_host_free(fn->keys);
  kd_host_free(fn->qualified);
}

void kdg_file_free(kdg_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->nfuncs; i++) free_func(&f->funcs[i]);
  kd_host_free(f->funcs);
  for (size_t i = 0; i < f->ngroups; i++) kd_host_free(f->groups[i].signature);
  kd_host_free(f->groups);
  free_strings(f->known_tags, f->nknown_tags);
  kd_host_free(f->path);
  memset(f, 0, sizeof *f);
}

kdg_func *kdg_find(const kdg_file *f, const char *qualified) {
  if (!f || !qualified) return NULL;
  const char *dot = strchr(qualified, '.');
  size_t nlen = dot ? (size_t)(dot - qualified) : strlen(qualified);
  const char *ovl = dot ? dot + 1 : "";
  for (size_t i = 0; i < f->nfuncs; i++) {
    kdg_func *fn = &f->funcs[i];
    if (!fn->name || !fn->overload) continue;
    if (strlen(fn->name) == nlen && !memcmp(fn->name, qualified, nlen) &&
        !strcmp(fn->overload, ovl))
      return fn;
  }
  return NULL;
}

int kdg_key_line(const kdg_func *fn, const char *key) {
  for (size_t i = 0; i < fn->nkeys; i++)
    if (!strcmp(fn->keys[i].name, key)) return fn->keys[i].line;
  return fn->line;
}
