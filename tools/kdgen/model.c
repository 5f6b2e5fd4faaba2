/*
 * model.c: diagnostics, lookup and freeing of kdgen's model (model.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

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

static void free_strings(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void free_func(kdg_func *fn) {
  free(fn->func);
  kd_schema_free(fn->schema);
  free(fn->name);
  free(fn->overload);
  free(fn->cname);
  free(fn->base);
  for (size_t i = 0; i < fn->ndispatch; i++) {
    free(fn->dispatch[i].key);
    free(fn->dispatch[i].kernel);
  }
  free(fn->dispatch);
  free(fn->structured_delegate);
  free(fn->structured_inherits);
  for (size_t i = 0; i < fn->nprecomputed; i++) {
    kdg_precomputed *p = &fn->precomputed[i];
    free(p->replaces);
    for (size_t j = 0; j < p->nfields; j++) {
      free(p->fields[j].type);
      free(p->fields[j].name);
    }
    free(p->fields);
  }
  free(fn->precomputed);
  free(fn->device_check);
  free_strings(fn->tags, fn->ntags);
  free_strings(fn->autogen, fn->nautogen);
  free_strings(fn->cpp_no_default_args, fn->ncpp_no_default_args);
  free(fn->python_module);
  free(fn->category_override);
  free(fn->variants_text);
  for (size_t i = 0; i < fn->nkeys; i++) free(fn->keys[i].name);
  free(fn->keys);
  free(fn->qualified);
}

void kdg_file_free(kdg_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->nfuncs; i++) free_func(&f->funcs[i]);
  free(f->funcs);
  for (size_t i = 0; i < f->ngroups; i++) free(f->groups[i].signature);
  free(f->groups);
  free_strings(f->known_tags, f->nknown_tags);
  free(f->path);
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
