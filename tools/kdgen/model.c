/*
 * model.c: diagnostics, lookup and freeing of kdgen's model (model.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "kd/memory.h"

void kdg_error(kdg_diag *d, const char *file, int line, const char *fmt, ...) {
  bool print = d == NULL || d->max_print == 0 || d->errors < d->max_print;
  if (d) d->errors++;
  if (!print) return;
  if (!file) file = "kdgen";
  if (line > 0)
    fprintf(stderr, "%s:%d: error: ", file, line);
  else
    fprintf(stderr, "%s: error: ", file);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void kdg_note(kdg_diag *d, const char *file, int line, const char *fmt, ...) {
  if (d) d->notes++;
  if (!file) file = "kdgen";
  if (line > 0)
    fprintf(stderr, "%s:%d: note: ", file, line);
  else
    fprintf(stderr, "%s: note: ", file);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

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
