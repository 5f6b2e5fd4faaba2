/*
 * kd_bench_schema.c: `kd-bench schema FILE [--reps N]`. FILE holds one schema
 * per line, or is a native_functions.yaml (its `- func: ` lines are taken).
 * Each repetition parses and prints every schema several times; the figures
 * are medians over the repetitions of nanoseconds per schema:
 *   schema_parse_ns        parse + print + free
 *   schema_parse_only_ns   parse + free
 *   schema_print_only_ns   print of an already parsed schema
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_groups.h"
#include "bench_util.h"
#include "kd/kd.h"

typedef struct line_set {
  char **text;
  size_t *len;
  size_t n, cap;
} line_set;

static int add_line(line_set *ls, const char *s, size_t n) {
  if (ls->n == ls->cap) {
    size_t cap = ls->cap ? ls->cap * 2 : 1024;
    char **t = realloc(ls->text, cap * sizeof *t);
    if (!t) return -1;
    ls->text = t;
    size_t *l = realloc(ls->len, cap * sizeof *l);
    if (!l) return -1;
    ls->len = l;
    ls->cap = cap;
  }
  char *copy = malloc(n + 1);
  if (!copy) return -1;
  memcpy(copy, s, n);
  copy[n] = '\0';
  ls->text[ls->n] = copy;
  ls->len[ls->n] = n;
  ls->n++;
  return 0;
}

static int load(const char *path, line_set *ls) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  line_set all = {0}, funcs = {0};
  while ((got = getline(&line, &cap, f)) >= 0) {
    size_t n = (size_t)got;
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
    if (n == 0 || line[0] == '#') continue;
    if (n > 8 && memcmp(line, "- func: ", 8) == 0) {
      if (add_line(&funcs, line + 8, n - 8)) return -1;
    } else if (add_line(&all, line, n)) {
      return -1;
    }
  }
  free(line);
  fclose(f);
  line_set *keep = funcs.n ? &funcs : &all, *drop = funcs.n ? &all : &funcs;
  for (size_t i = 0; i < drop->n; i++) free(drop->text[i]);
  free(drop->text);
  free(drop->len);
  *ls = *keep;
  return 0;
}

int kd_bench_schema(int argc, char **argv) {
  const char *path = NULL;
  int reps = 9;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else path = argv[i];
  }
  if (!path || reps < 1) {
    fprintf(stderr, "usage: kd-bench schema FILE [--reps N]\n");
    return 2;
  }
  if (reps < 7) reps = 7;
  line_set ls = {0};
  if (load(path, &ls) || ls.n == 0) {
    fprintf(stderr, "kd-bench schema: no schemas in %s\n", path);
    return 1;
  }
  kd_schema **parsed = calloc(ls.n, sizeof *parsed);
  size_t total_bytes = 0;
  int rc = 0;
  for (size_t i = 0; i < ls.n; i++) {
    if (kd_schema_parse(ls.text[i], ls.len[i], &parsed[i]) != KD_OK) {
      fprintf(stderr, "kd-bench schema: %s: %s\n", ls.text[i], kd_last_error());
      rc = 1;
      goto done;
    }
    total_bytes += ls.len[i];
  }
  char buf[4096];
  /* Inner iterations: about 100,000 parses per repetition, whatever the
   * file's size, so that a repetition is long against the clock's
   * resolution. */
  size_t inner = 100000 / ls.n + 1;
  double *full = malloc((size_t)reps * sizeof(double));
  double *parse_only = malloc((size_t)reps * sizeof(double));
  double *print_only = malloc((size_t)reps * sizeof(double));
  size_t count = inner * ls.n;
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = kd_bench_now_ns();
    for (size_t k = 0; k < inner; k++) {
      for (size_t i = 0; i < ls.n; i++) {
        kd_schema *s;
        kd_schema_parse(ls.text[i], ls.len[i], &s);
        kd_schema_format(s, buf, sizeof buf);
        kd_bench_escape(buf);
        kd_schema_free(s);
      }
    }
    uint64_t t1 = kd_bench_now_ns();
    for (size_t k = 0; k < inner; k++) {
      for (size_t i = 0; i < ls.n; i++) {
        kd_schema *s;
        kd_schema_parse(ls.text[i], ls.len[i], &s);
        kd_bench_escape(s);
        kd_schema_free(s);
      }
    }
    uint64_t t2 = kd_bench_now_ns();
    for (size_t k = 0; k < inner; k++) {
      for (size_t i = 0; i < ls.n; i++) {
        kd_schema_format(parsed[i], buf, sizeof buf);
        kd_bench_escape(buf);
      }
    }
    uint64_t t3 = kd_bench_now_ns();
    full[r] = (double)(t1 - t0) / (double)count;
    parse_only[r] = (double)(t2 - t1) / (double)count;
    print_only[r] = (double)(t3 - t2) / (double)count;
  }
  printf("schema_parse_ns %.1f\n", kd_bench_median(full, (size_t)reps));
  printf("schema_parse_only_ns %.1f\n", kd_bench_median(parse_only, (size_t)reps));
  printf("schema_print_only_ns %.1f\n", kd_bench_median(print_only, (size_t)reps));
  fprintf(stderr, "(%zu schemas, %.1f bytes on average, %d repetitions of %zu passes)\n", ls.n,
          (double)total_bytes / (double)ls.n, reps, inner);
  free(full);
  free(parse_only);
  free(print_only);
done:
  for (size_t i = 0; i < ls.n; i++) {
    kd_schema_free(parsed[i]);
    free(ls.text[i]);
  }
  free(parsed);
  free(ls.text);
  free(ls.len);
  return rc;
}
