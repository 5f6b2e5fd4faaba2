/*
 * test_kd_stubs_annotation.c: ops/native_functions.yaml's kd_stubs (kdgen's
 * extension, docs/CODEGEN.md "kd_stubs:") names exactly the dispatch stubs
 * each structured impl reaches in the code. The build preprocesses
 * the ops/native sources (KD_STUBS_PP_DIR, tests/ops/CMakeLists.txt); this program
 * finds every function definition of each file, the stub objects
 * (kdk_stub_<name>) its body names, and the functions of the same file it
 * calls, and compares the stubs reachable from kdk_native_<kernel> (the
 * structured entry's CPU kernel) with the entry's kd_stubs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kd_test.h"

/* ---- The preprocessed sources ---------------------------------------------- */

typedef struct {
  char *name;
  char **ids; /* identifiers of the body */
  size_t nids;
} cfn;

typedef struct {
  char *path;
  cfn *fns;
  size_t nfns;
} cfile;

static cfile files[64];
static size_t nfiles;

static char *xstrndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  assert_non_null(p);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* The next token of src at *pos: an identifier (*id set) or one other
 * character; strings and character literals are skipped. 0 at the end. */
static char next_token(const char *src, size_t *pos, const char **id, size_t *idlen) {
  size_t i = *pos;
  *id = NULL;
  for (;;) {
    while (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') i++;
    if (src[i] == '"' || src[i] == '\'') {
      char q = src[i++];
      while (src[i] && src[i] != q) i += src[i] == '\\' && src[i + 1] ? 2 : 1;
      if (src[i]) i++;
      continue;
    }
    break;
  }
  if (!src[i]) {
    *pos = i;
    return 0;
  }
  if (ident_char(src[i])) {
    size_t s = i;
    while (ident_char(src[i])) i++;
    *pos = i;
    if (ident_start(src[s])) {
      *id = src + s;
      *idlen = i - s;
      return 'a';
    }
    return '0';
  }
  *pos = i + 1;
  return src[i];
}

static void parse_file(const char *path) {
  char *src = kd_test_read_file(path);
  assert_true(nfiles < sizeof files / sizeof *files);
  cfile *f = &files[nfiles++];
  f->path = xstrndup(path, strlen(path));
  f->fns = NULL;
  f->nfns = 0;
  size_t pos = 0, idlen = 0;
  const char *id, *prev = NULL;
  size_t prevlen = 0;
  char *cand = NULL;
  int paren = 0;
  char t;
  while ((t = next_token(src, &pos, &id, &idlen))) {
    if (t == '(' && paren++ == 0 && prev && !cand) cand = xstrndup(prev, prevlen);
    else if (t == ')') paren--;
    else if (t == ';' && paren == 0) {
      free(cand);
      cand = NULL;
    } else if (t == '{' && paren == 0) {
      /* a body (a function's when cand is set) or an initializer */
      cfn fn = {cand, NULL, 0};
      int depth = 1;
      while (depth && (t = next_token(src, &pos, &id, &idlen))) {
        if (t == '{') depth++;
        else if (t == '}') depth--;
        else if (id && cand) {
          fn.ids = realloc(fn.ids, (fn.nids + 1) * sizeof *fn.ids);
          assert_non_null(fn.ids);
          fn.ids[fn.nids++] = xstrndup(id, idlen);
        }
      }
      if (cand) {
        f->fns = realloc(f->fns, (f->nfns + 1) * sizeof *f->fns);
        assert_non_null(f->fns);
        f->fns[f->nfns++] = fn;
      }
      cand = NULL;
    }
    prev = id;
    prevlen = idlen;
  }
  free(cand);
  free(src);
}

static cfn *find_fn(cfile *f, const char *name) {
  for (size_t i = 0; i < f->nfns; i++)
    if (!strcmp(f->fns[i].name, name)) return &f->fns[i];
  return NULL;
}

/* Adds to out (a " a b " list) the stubs reachable from fn in file f. */
static void reach(cfile *f, cfn *fn, char *seen, size_t seencap, char *out, size_t outcap) {
  char key[300];
  snprintf(key, sizeof key, " %s ", fn->name);
  if (strstr(seen, key)) return;
  strncat(seen, key + 1, seencap - strlen(seen) - 1); /* seen stays " a b ... " */
  for (size_t i = 0; i < fn->nids; i++) {
    const char *id = fn->ids[i];
    size_t len = strlen(id);
    if (!strncmp(id, "kdk_stub_", 9) && strncmp(id, "kdk_stub_fn", 11) && len > 14 &&
        !strcmp(id + len - 5, "_stub")) {
      char w[300];
      snprintf(w, sizeof w, " %s ", id + 9);
      if (!strstr(out, w)) strncat(out, w + 1, outcap - strlen(out) - 1);
      continue;
    }
    cfn *callee = find_fn(f, id);
    if (callee && callee != fn) reach(f, callee, seen, seencap, out, outcap);
  }
}

/* The stubs reachable from function `name` (" a b "), or NULL when no file
 * defines it. */
static char *stubs_of(const char *name) {
  for (size_t k = 0; k < nfiles; k++) {
    cfn *fn = find_fn(&files[k], name);
    if (!fn) continue;
    static char out[4096], seen[1 << 16];
    strcpy(out, " ");
    strcpy(seen, " ");
    reach(&files[k], fn, seen, sizeof seen, out, sizeof out);
    return out;
  }
  return NULL;
}

/* ---- The YAML ---------------------------------------------------------------- */

static const char *scalar(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* true when the space-separated word lists a and b hold the same words. */
static bool same_words(const char *a, const char *b) {
  for (int pass = 0; pass < 2; pass++) {
    const char *x = pass ? b : a, *y = pass ? a : b;
    for (const char *p = x; *p;) {
      while (*p == ' ') p++;
      if (!*p) break;
      const char *e = strchr(p, ' ');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      char w[300];
      snprintf(w, sizeof w, " %.*s ", (int)n, p);
      if (!strstr(y, w)) return false;
      p += n;
    }
  }
  return true;
}

static void test_annotation_matches_code(void **state) {
  (void)state;
  DIR *dir = opendir(KD_STUBS_PP_DIR);
  assert_non_null(dir);
  struct dirent *de;
  char path[4096];
  while ((de = readdir(dir))) {
    size_t n = strlen(de->d_name);
    if (n < 3 || strcmp(de->d_name + n - 2, ".i")) continue;
    snprintf(path, sizeof path, "%s/%s", KD_STUBS_PP_DIR, de->d_name);
    parse_file(path);
  }
  closedir(dir);
  assert_true(nfiles >= 5);

  FILE *fp = fopen(KD_SOURCE_DIR "/ops/native_functions.yaml", "rb");
  assert_non_null(fp);
  yaml_parser_t parser;
  yaml_document_t doc;
  assert_true(yaml_parser_initialize(&parser));
  yaml_parser_set_input_file(&parser, fp);
  assert_true(yaml_parser_load(&parser, &doc));
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  assert_true(root && root->type == YAML_SEQUENCE_NODE);
  int checked = 0, annotated = 0, bad = 0;
  for (yaml_node_item_t *it = root->data.sequence.items.start; it < root->data.sequence.items.top;
       it++) {
    yaml_node_t *e = yaml_document_get_node(&doc, *it);
    if (e->type != YAML_MAPPING_NODE) continue;
    const char *func = NULL, *kernel = NULL;
    bool structured = false;
    char listed[4096] = " ";
    for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top; p++) {
      const char *k = scalar(yaml_document_get_node(&doc, p->key));
      yaml_node_t *v = yaml_document_get_node(&doc, p->value);
      if (!k) continue;
      if (!strcmp(k, "func")) func = scalar(v);
      if (!strcmp(k, "structured")) structured = scalar(v) && !strcmp(scalar(v), "True");
      if (!strcmp(k, "dispatch") && v->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
          const char *dk = scalar(yaml_document_get_node(&doc, q->key));
          if (dk && (!strcmp(dk, "CPU") || !strncmp(dk, "CPU,", 4)))
            kernel = scalar(yaml_document_get_node(&doc, q->value));
        }
      if (!strcmp(k, "kd_stubs") && v->type == YAML_SEQUENCE_NODE) {
        annotated++;
        for (yaml_node_item_t *s = v->data.sequence.items.start; s < v->data.sequence.items.top; s++) {
          strncat(listed, scalar(yaml_document_get_node(&doc, *s)), sizeof listed - strlen(listed) - 2);
          strcat(listed, " ");
        }
      }
    }
    if (!structured || !kernel || !func) continue;
    char fname[300];
    snprintf(fname, sizeof fname, "kdk_native_%s", kernel);
    const char *found = stubs_of(fname);
    if (!found) {
      print_error("%.60s: impl %s is defined in no file of ops/native\n", func, fname);
      bad++;
      continue;
    }
    checked++;
    if (!same_words(found, listed)) {
      print_error("%.60s: kd_stubs [%s] but %s reaches [%s]\n", func, listed, fname, found);
      bad++;
    }
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  fclose(fp);
  assert_int_equal(bad, 0);
  /* the file's structured groups: at least the 60 annotated in issue 17 */
  assert_true(checked >= 60);
  assert_true(annotated >= 60);
  /* sanity of the analysis itself */
  KD_ASSERT_STR_EQ(stubs_of("kdk_native_add_out_cpu"), " add_stub ");
  for (size_t k = 0; k < nfiles; k++) {
    for (size_t i = 0; i < files[k].nfns; i++) {
      for (size_t j = 0; j < files[k].fns[i].nids; j++) free(files[k].fns[i].ids[j]);
      free(files[k].fns[i].ids);
      free(files[k].fns[i].name);
    }
    free(files[k].fns);
    free(files[k].path);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_annotation_matches_code)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
