/*
 * kd's machine-readable output and option handling:
 * - the JSON writer (tools/kd/json.c): layout, escaping, misuse;
 * - the strict test parser (json_parse.h) rejects what it must, so that
 *   parsing the output below also checks it is well formed;
 * - `kd ops|dump|table|kernels ... --json` run through KD_BIN_DIR/kd, parsed
 *   back and checked field by field against the demo operators built into
 *   kd (tools/kd/demo_ops.c) and aten::add.Tensor;
 * - every subcommand listed by `kd --help` answers --help with its usage
 *   (exit 0) and rejects an unknown option with exit 2 and a usage hint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_parse.h"
#include "kd_test.h"

#define DEMO_OPS KD_SOURCE_DIR "/tools/kd/demo_ops.c"
/* kd records source places relative to the tree (-fmacro-prefix-map). */
#define DEMO_OPS_REL "tools/kd/demo_ops.c"

/* ---- Helpers ---------------------------------------------------------------- */

/* Runs `kd ARGS` (a shell fragment; stdin is /dev/null); stdout, malloc'd. */
static char *run_kd(const char *args, int *status) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s/kd' %s </dev/null", KD_BIN_DIR, args);
  return kd_test_run(cmd, status);
}

/* Runs `kd ARGS --json` (status 0 expected) and parses its output. */
static jp_value *kd_json(const char *args) {
  int status;
  char *out = run_kd(args, &status);
  if (status != 0) fail_msg("kd %s exited with %d:\n%s", args, status, out);
  char err[256];
  jp_value *v = jp_parse(out, err, sizeof err);
  if (!v) fail_msg("kd %s printed JSON that does not parse (%s):\n%s", args, err, out);
  free(out);
  return v;
}

/* Checks that `v` is "DEMO_OPS_REL:N" where N is a line of the registration in
 * demo_ops.c that starts with `prefix`: from that line to the one that opens
 * its body ('{'). (A macro call over several lines records the first or the
 * last of them, as the compiler has it.) */
static void assert_demo_where(const jp_value *v, const char *prefix) {
  const char *where = jp_str(v);
  if (!where) fail_msg("registered_at of \"%s\" is not a string", prefix);
  size_t n = strlen(DEMO_OPS_REL);
  if (strncmp(where, DEMO_OPS_REL, n) || where[n] != ':')
    fail_msg("\"%s\" is not a place in %s", where, DEMO_OPS_REL);
  int got = atoi(where + n + 1);
  FILE *f = fopen(DEMO_OPS, "r");
  if (!f) fail_msg("cannot open %s", DEMO_OPS);
  char line[1024];
  int lineno = 0, first = 0, last = 0;
  while (!last && fgets(line, sizeof line, f)) {
    lineno++;
    if (!first && !strncmp(line, prefix, strlen(prefix))) first = lineno;
    if (first && strchr(line, '{')) last = lineno;
  }
  fclose(f);
  if (!first || !last) fail_msg("no registration \"%s\" in %s", prefix, DEMO_OPS);
  if (got < first || got > last)
    fail_msg("\"%s\": expected line %d..%d of %s (\"%s\")", where, first, last, DEMO_OPS, prefix);
}

#define ASSERT_JSTR(v, expected)                                                          \
  do {                                                                                    \
    const char *s_ = jp_str(v);                                                           \
    if (!s_) fail_msg("%s is not a string", #v);                                          \
    KD_ASSERT_STR_EQ(s_, (expected));                                                     \
  } while (0)

#define ASSERT_JTYPE(v, t)                                                                \
  do {                                                                                    \
    const jp_value *v_ = (v);                                                             \
    if (!v_ || v_->type != (t)) fail_msg("%s is missing or not of type %s", #v, #t);     \
  } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                      \
  do {                                                                                    \
    const char *h_ = (hay), *n_ = (needle);                                               \
    if (!strstr(h_, n_)) fail_msg("output does not contain \"%s\":\n%s", n_, h_);         \
  } while (0)

/* The strings of a JSON array joined by ",". */
static void join_strings(const jp_value *arr, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!arr || arr->type != JP_ARRAY) fail_msg("not an array");
  size_t len = 0;
  for (size_t i = 0; i < arr->n; i++) {
    const char *s = jp_str(arr->items[i]);
    if (!s) fail_msg("item %zu is not a string", i);
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", s);
    if (len >= cap) fail_msg("join_strings: buffer too small");
  }
}

/* ---- The writer ---------------------------------------------------------------- */

typedef struct mem_out {
  char *text;
  size_t len;
  FILE *f;
} mem_out;

static void mem_open(mem_out *m) {
  m->text = NULL;
  m->len = 0;
  m->f = open_memstream(&m->text, &m->len);
  assert_non_null(m->f);
}

static void mem_close(mem_out *m) { assert_int_equal(fclose(m->f), 0); }

static void test_writer_layout(void **state) {
  (void)state;
  mem_out m;
  kdc_json j;
  /* line_depth 1: one record per line, deeper containers inline. */
  mem_open(&m);
  kdc_json_init(&j, m.f, 1);
  kdc_json_begin_array(&j);
  kdc_json_begin_object(&j);
  kdc_json_field_string(&j, "key", "CPU");
  kdc_json_field_int(&j, "n", -3);
  kdc_json_key(&j, "dtypes");
  kdc_json_begin_array(&j);
  kdc_json_string(&j, "int32");
  kdc_json_string(&j, "int64");
  kdc_json_end_array(&j);
  kdc_json_key(&j, "empty");
  kdc_json_begin_object(&j);
  kdc_json_end_object(&j);
  kdc_json_end_object(&j);
  kdc_json_begin_object(&j);
  kdc_json_field_bool(&j, "t", true);
  kdc_json_field_bool(&j, "f", false);
  kdc_json_field_string(&j, "none", NULL);
  kdc_json_end_object(&j);
  kdc_json_end_array(&j);
  assert_int_equal(kdc_json_finish(&j), 0);
  mem_close(&m);
  KD_ASSERT_STR_EQ(m.text, "[\n"
                           "  {\"key\": \"CPU\", \"n\": -3, \"dtypes\": [\"int32\", \"int64\"], \"empty\": {}},\n"
                           "  {\"t\": true, \"f\": false, \"none\": null}\n"
                           "]\n");
  free(m.text);

  /* line_depth 2 with a flat array; empty containers stay "[]". */
  mem_open(&m);
  kdc_json_init(&j, m.f, 2);
  kdc_json_begin_object(&j);
  kdc_json_key(&j, "list");
  kdc_json_begin_array(&j);
  kdc_json_int(&j, 1);
  kdc_json_begin_array(&j);
  kdc_json_int(&j, 2);
  kdc_json_end_array(&j);
  kdc_json_end_array(&j);
  kdc_json_key(&j, "flat");
  kdc_json_begin_flat_array(&j);
  kdc_json_string(&j, "a");
  kdc_json_begin_array(&j); /* inside a flat array: flat too */
  kdc_json_string(&j, "b");
  kdc_json_end_array(&j);
  kdc_json_end_array(&j);
  kdc_json_key(&j, "none");
  kdc_json_begin_array(&j);
  kdc_json_end_array(&j);
  kdc_json_end_object(&j);
  assert_int_equal(kdc_json_finish(&j), 0);
  mem_close(&m);
  KD_ASSERT_STR_EQ(m.text, "{\n"
                           "  \"list\": [\n"
                           "    1,\n"
                           "    [2]\n"
                           "  ],\n"
                           "  \"flat\": [\"a\", [\"b\"]],\n"
                           "  \"none\": []\n"
                           "}\n");
  free(m.text);

  /* An empty top-level array, and a bare scalar document. */
  mem_open(&m);
  kdc_json_init(&j, m.f, 1);
  kdc_json_begin_array(&j);
  kdc_json_end_array(&j);
  assert_int_equal(kdc_json_finish(&j), 0);
  mem_close(&m);
  KD_ASSERT_STR_EQ(m.text, "[]\n");
  free(m.text);
  mem_open(&m);
  kdc_json_init(&j, m.f, 1);
  kdc_json_int(&j, 42);
  assert_int_equal(kdc_json_finish(&j), 0);
  mem_close(&m);
  KD_ASSERT_STR_EQ(m.text, "42\n");
  free(m.text);
}

static void test_writer_escaping(void **state) {
  (void)state;
  /* Quote, backslash, the short escapes, another control character, DEL
   * (allowed as is), valid UTF-8 (2, 3 and 4 bytes), then bytes that are not
   * UTF-8: a lone continuation byte, a truncated sequence, an overlong '/',
   * a UTF-16 surrogate encoded in UTF-8, and 0xff. */
  static const char input[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f"
                              "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                              "|\x80|\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xff";
  mem_out m;
  mem_open(&m);
  kdc_json_put_string(m.f, input, sizeof input - 1);
  mem_close(&m);
  KD_ASSERT_STR_EQ(m.text, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f"
                           "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                           "|\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\"");
  /* Parsed back: the valid part round-trips exactly. */
  char err[128];
  jp_value *v = jp_parse(m.text, err, sizeof err);
  if (!v) fail_msg("escaped string does not parse: %s", err);
  assert_int_equal(v->type, JP_STRING);
  static const char valid[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|";
  assert_true(v->len > sizeof valid - 1);
  assert_memory_equal(v->str, valid, sizeof valid - 1);
  jp_free(v);
  free(m.text);
  /* An embedded NUL (string_n) is escaped, not a terminator. */
  mem_open(&m);
  kdc_json j;
  kdc_json_init(&j, m.f, 0);
  kdc_json_string_n(&j, "a\0b", 3);
  assert_int_equal(kdc_json_finish(&j), 0);
  mem_close(&m);
  KD_ASSERT_STR_EQ(m.text, "\"a\\u0000b\"\n");
  free(m.text);
}

/* Each misuse makes finish fail. */
static void test_writer_misuse(void **state) {
  (void)state;
  for (int c = 0; c < 9; c++) {
    mem_out m;
    mem_open(&m);
    kdc_json j;
    kdc_json_init(&j, m.f, 1);
    switch (c) {
      case 0: /* a value in an object without a key */
        kdc_json_begin_object(&j);
        kdc_json_int(&j, 1);
        kdc_json_end_object(&j);
        break;
      case 1: /* a key in an array */
        kdc_json_begin_array(&j);
        kdc_json_key(&j, "k");
        kdc_json_int(&j, 1);
        kdc_json_end_array(&j);
        break;
      case 2: /* closing the wrong kind */
        kdc_json_begin_object(&j);
        kdc_json_end_array(&j);
        break;
      case 3: /* a container left open */
        kdc_json_begin_array(&j);
        break;
      case 4: /* two top-level values */
        kdc_json_int(&j, 1);
        kdc_json_int(&j, 2);
        break;
      case 5: /* nothing written */
        break;
      case 6: /* a key with no value */
        kdc_json_begin_object(&j);
        kdc_json_key(&j, "k");
        kdc_json_end_object(&j);
        break;
      case 7: /* too deep */
        for (int d = 0; d <= KDC_JSON_MAX_DEPTH; d++) kdc_json_begin_array(&j);
        for (int d = 0; d <= KDC_JSON_MAX_DEPTH; d++) kdc_json_end_array(&j);
        break;
      case 8: /* closing what was never opened */
        kdc_json_end_object(&j);
        break;
    }
    if (kdc_json_finish(&j) != -1) fail_msg("misuse case %d was not reported", c);
    mem_close(&m);
    free(m.text);
  }
  /* The exact limit is fine. */
  mem_out m;
  mem_open(&m);
  kdc_json j;
  kdc_json_init(&j, m.f, 0);
  for (int d = 0; d < KDC_JSON_MAX_DEPTH; d++) kdc_json_begin_array(&j);
  for (int d = 0; d < KDC_JSON_MAX_DEPTH; d++) kdc_json_end_array(&j);
  assert_int_equal(kdc_json_finish(&j), 0);
  mem_close(&m);
  free(m.text);
}

/* ---- The parser ------------------------------------------------------------------ */

static void test_parser_strict(void **state) {
  (void)state;
  static const char *const bad[] = {
      "[1,]", "{\"a\": 1,}", "[1 2]", "{\"a\" 1}", "{\"a\": 1 \"b\": 2}", "[01]", "[1.]", "[-]",
      "[\"a\x01\"]", "[\"\\x\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\xff\"]",
      "{\"a\": 1, \"a\": 2}", "[1] x", "", "[", "{\"a\": }", "tru", "[nul]", "'a'", "{1: 2}",
  };
  char err[128];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    jp_value *v = jp_parse(bad[i], err, sizeof err);
    if (v) fail_msg("the parser accepted \"%s\"", bad[i]);
    assert_true(strstr(err, "line 1, column ") == err);
  }
  jp_value *v = jp_parse(" {\"a\": [1, -2.5e3, true, false, null, \"\\u00e9\\ud83d\\ude00\"], \"b\": {}} ",
                         err, sizeof err);
  if (!v) fail_msg("the parser rejected a good document: %s", err);
  const jp_value *a = jp_get(v, "a");
  ASSERT_JTYPE(a, JP_ARRAY);
  assert_int_equal(a->n, 6);
  assert_true(jp_at(a, 1)->num == -2500.0);
  assert_true(jp_at(a, 2)->b);
  assert_false(jp_at(a, 3)->b);
  assert_int_equal(jp_at(a, 4)->type, JP_NULL);
  ASSERT_JSTR(jp_at(a, 5), "\xc3\xa9\xf0\x9f\x98\x80");
  ASSERT_JTYPE(jp_get(v, "b"), JP_OBJECT);
  assert_null(jp_get(v, "c"));
  jp_free(v);
}

/* ---- kd ops --json ------------------------------------------------------------------- */

static void test_ops_json(void **state) {
  (void)state;
  jp_value *v = kd_json("ops --json");
  ASSERT_JTYPE(v, JP_ARRAY);
  assert_true(v->n > 10);
  const jp_value *add = NULL, *neg = NULL;
  for (size_t i = 0; i < v->n; i++) {
    const jp_value *o = v->items[i];
    ASSERT_JTYPE(o, JP_OBJECT);
    const char *op = jp_str(jp_get(o, "op")), *name = jp_str(jp_get(o, "name"));
    if (!op || !name) {
      fail_msg("operator %zu has no op or name", i);
      return; /* fail_msg does not return; the compiler does not know it */
    }
    /* op is name, then ".overload" when there is one. */
    const char *ovl = jp_str(jp_get(o, "overload"));
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", name, ovl ? "." : "", ovl ? ovl : "");
    KD_ASSERT_STR_EQ(op, full);
    if (jp_get(o, "overload")) assert_non_null(ovl);
    /* A string, or null for an operator implemented but not defined. */
    const jp_value *schema = jp_get(o, "schema");
    if (!schema || (schema->type != JP_STRING && schema->type != JP_NULL))
      fail_msg("operator %s: schema is missing or neither a string nor null", op);
    /* Name order. */
    if (i) assert_true(strcmp(jp_str(jp_get(v->items[i - 1], "op")), op) < 0);
    if (!strcmp(op, "aten::add.Tensor")) add = o;
    if (!strcmp(op, "demo::neg")) neg = o;
  }
  if (!add || !neg) fail_msg("aten::add.Tensor or demo::neg is not listed");
  ASSERT_JSTR(jp_get(add, "name"), "aten::add");
  ASSERT_JSTR(jp_get(add, "overload"), "Tensor");
  ASSERT_JSTR(jp_get(add, "schema"),
              "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  ASSERT_JSTR(jp_get(neg, "name"), "demo::neg");
  assert_null(jp_get(neg, "overload"));
  ASSERT_JSTR(jp_get(neg, "schema"), "neg(Tensor self) -> Tensor");

  /* As many as the text listing has lines. */
  int status;
  char *text = run_kd("ops", &status);
  size_t lines = 0;
  for (const char *p = text; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, v->n);
  free(text);
  jp_free(v);

  /* A pattern, before or after --json. */
  v = kd_json("ops --json 'demo::*'");
  ASSERT_JTYPE(v, JP_ARRAY);
  assert_int_equal(v->n, 4);
  const char *expect[] = {"demo::describe", "demo::eq", "demo::neg", "demo::scale"};
  for (size_t i = 0; i < 4; i++) ASSERT_JSTR(jp_get(v->items[i], "op"), expect[i]);
  jp_free(v);
  v = kd_json("ops add.T --json");
  assert_int_equal(v->n, 1);
  ASSERT_JSTR(jp_get(v->items[0], "op"), "aten::add.Tensor");
  jp_free(v);
  /* Nothing matches: an empty array. */
  char *out = run_kd("ops 'nosuch::*' --json", &status);
  assert_int_equal(status, 0);
  KD_ASSERT_STR_EQ(out, "[]\n");
  free(out);
}

/* ---- kd kernels --json ------------------------------------------------------------------ */

static void test_kernels_json(void **state) {
  (void)state;
  char list[512];
  jp_value *v = kd_json("kernels demo::neg --json");
  ASSERT_JTYPE(v, JP_ARRAY);
  assert_int_equal(v->n, 1);
  const jp_value *k = v->items[0];
  ASSERT_JSTR(jp_get(k, "key"), "CPU");
  assert_true(jp_get(k, "keyed")->b);
  ASSERT_JSTR(jp_get(k, "layout"), "ALL_LAYOUT");
  join_strings(jp_get(k, "dtypes"), list, sizeof list);
  KD_ASSERT_STR_EQ(list, "int32,int64,float32,float64");
  ASSERT_JSTR(jp_get(k, "form"), "unboxed");
  ASSERT_JSTR(jp_get(k, "signature"), "(Tensor) -> Tensor");
  assert_demo_where(jp_get(k, "registered_at"), "KD_REGISTER_KERNEL(demo, neg,");
  assert_true(jp_get(k, "active")->b);
  assert_false(jp_get(k, "custom")->b);
  assert_false(jp_get(k, "staged")->b);
  assert_true(jp_get(k, "key_arg")->num == -1);
  /* One argument-definition entry per dtype, each for that dtype. */
  const jp_value *args = jp_get(k, "args");
  ASSERT_JTYPE(args, JP_ARRAY);
  assert_int_equal(args->n, 4);
  const char *dts[] = {"int32", "int64", "float32", "float64"};
  for (size_t i = 0; i < 4; i++) {
    const jp_value *a = args->items[i];
    join_strings(jp_get(a, "dtypes"), list, sizeof list);
    KD_ASSERT_STR_EQ(list, dts[i]);
    const jp_value *in = jp_at(jp_get(a, "inputs"), 0), *out = jp_at(jp_get(a, "outputs"), 0);
    ASSERT_JSTR(jp_get(in, "name"), "self");
    ASSERT_JSTR(jp_get(in, "backend"), "CPU");
    ASSERT_JSTR(jp_get(in, "dtype"), dts[i]);
    ASSERT_JSTR(jp_get(out, "name"), "result0");
    ASSERT_JSTR(jp_get(out, "dtype"), dts[i]);
  }
  jp_free(v);

  /* demo::eq: a bool result whatever the inputs. */
  v = kd_json("kernels demo::eq --json");
  args = jp_get(jp_at(v, 0), "args");
  ASSERT_JTYPE(args, JP_ARRAY);
  for (size_t i = 0; i < args->n; i++) {
    ASSERT_JSTR(jp_get(jp_at(jp_get(args->items[i], "outputs"), 0), "dtype"), "bool");
    assert_int_equal(jp_get(args->items[i], "inputs")->n, 2);
  }
  jp_free(v);

  /* A plain kernel: no args; a kernel per key, in key order. */
  v = kd_json("kernels demo::scale --json");
  assert_int_equal(v->n, 2);
  ASSERT_JSTR(jp_get(v->items[0], "key"), "CPU");
  ASSERT_JSTR(jp_get(v->items[1], "key"), "Meta");
  assert_false(jp_get(v->items[0], "keyed")->b);
  assert_null(jp_get(v->items[0], "args"));
  assert_demo_where(jp_get(v->items[1], "registered_at"), "KD_LIBRARY_IMPL(demo, META, m)");
  jp_free(v);
}

/* ---- kd dump --json ------------------------------------------------------------------------ */

static void test_dump_json(void **state) {
  (void)state;
  jp_value *v = kd_json("dump demo::scale --json");
  ASSERT_JTYPE(v, JP_OBJECT);
  ASSERT_JSTR(jp_get(v, "op"), "demo::scale");
  ASSERT_JSTR(jp_get(v, "schema"), "scale(Tensor self, float factor=2.) -> Tensor");
  const jp_value *defs = jp_get(v, "defs");
  ASSERT_JTYPE(defs, JP_ARRAY);
  assert_int_equal(defs->n, 1);
  assert_demo_where(defs->items[0], "KD_LIBRARY(demo, m)");
  ASSERT_JTYPE(jp_get(v, "tags"), JP_ARRAY);
  assert_int_equal(jp_get(v, "tags")->n, 0);
  const jp_value *regs = jp_get(v, "registrations");
  ASSERT_JTYPE(regs, JP_OBJECT);
  assert_int_equal(regs->n, 2);
  KD_ASSERT_STR_EQ(regs->keys[0], "CPU");
  KD_ASSERT_STR_EQ(regs->keys[1], "Meta");
  const jp_value *cpu = jp_get(regs, "CPU");
  ASSERT_JTYPE(cpu, JP_ARRAY);
  assert_int_equal(cpu->n, 1);
  ASSERT_JSTR(jp_get(cpu->items[0], "form"), "unboxed");
  assert_demo_where(jp_get(cpu->items[0], "registered_at"), "KD_LIBRARY_IMPL(demo, CPU, m)");
  assert_true(jp_get(cpu->items[0], "active")->b);
  assert_null(jp_get(cpu->items[0], "key")); /* the object's key says it */
  jp_free(v);

  /* A runtime key (AutogradCPU), then an alias key. */
  v = kd_json("dump demo::describe --json");
  regs = jp_get(v, "registrations");
  assert_int_equal(regs->n, 2);
  KD_ASSERT_STR_EQ(regs->keys[0], "AutogradCPU");
  KD_ASSERT_STR_EQ(regs->keys[1], "CompositeImplicitAutograd");
  jp_free(v);

  v = kd_json("dump aten::add.Tensor --json");
  ASSERT_JSTR(jp_get(v, "schema"),
              "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  ASSERT_JTYPE(jp_get(jp_get(v, "registrations"), "CPU"), JP_ARRAY);
  jp_free(v);

  /* The same bytes every time. */
  int s1, s2;
  char *a = run_kd("dump aten::add.Tensor --json", &s1), *b = run_kd("dump aten::add.Tensor --json", &s2);
  KD_ASSERT_STR_EQ(a, b);
  free(a);
  free(b);
}

/* ---- kd table --json ------------------------------------------------------------------------ */

/* The entry for `key` in a table document, or NULL. */
static const jp_value *table_entry(const jp_value *doc, const char *key) {
  const jp_value *t = jp_get(doc, "table");
  ASSERT_JTYPE(t, JP_ARRAY);
  for (size_t i = 0; i < t->n; i++)
    if (jp_str(jp_get(t->items[i], "key")) && !strcmp(jp_str(jp_get(t->items[i], "key")), key))
      return t->items[i];
  return NULL;
}

static void test_table_json(void **state) {
  (void)state;
  char list[512];
  jp_value *v = kd_json("table demo::scale --json");
  ASSERT_JSTR(jp_get(v, "op"), "demo::scale");
  const jp_value *t = jp_get(v, "table");
  ASSERT_JTYPE(t, JP_ARRAY);
  /* CPU, Meta, ADInplaceOrView, the 8 autograd keys (falling through), Tracer */
  assert_int_equal(t->n, 12);
  const jp_value *cpu = t->items[0];
  ASSERT_JSTR(jp_get(cpu, "key"), "CPU");
  ASSERT_JSTR(jp_get(cpu, "reason"), "kernel");
  ASSERT_JSTR(jp_get(cpu, "form"), "unboxed");
  assert_demo_where(jp_get(cpu, "registered_at"), "KD_LIBRARY_IMPL(demo, CPU, m)");
  ASSERT_JSTR(jp_get(t->items[1], "key"), "Meta");
  const jp_value *ag = table_entry(v, "AutogradCPU");
  assert_non_null(ag);
  ASSERT_JSTR(jp_get(ag, "reason"), "backend fallback");
  ASSERT_JSTR(jp_get(ag, "form"), "fallthrough");
  ASSERT_JSTR(jp_get(ag, "registered_at"), "kdispatch (built-in autograd fallthrough)");
  ASSERT_JSTR(jp_get(t->items[2], "key"), "ADInplaceOrView");
  ASSERT_JSTR(jp_get(t->items[11], "key"), "Tracer");
  ASSERT_JSTR(jp_get(t->items[11], "reason"), "backend fallback");
  ASSERT_JSTR(jp_get(t->items[11], "form"), "boxed");
  assert_demo_where(jp_get(t->items[11], "registered_at"), "KD_LIBRARY_IMPL(_, TRACER, m)");
  char wide[2048];
  join_strings(jp_get(v, "missing"), wide, sizeof wide);
  KD_ASSERT_STR_EQ(wide, "Undefined,CUDA,PrivateUse1,PrivateUse2,PrivateUse3,QuantizedCPU,"
                         "QuantizedCUDA,QuantizedMeta,QuantizedPrivateUse1,QuantizedPrivateUse2,"
                         "QuantizedPrivateUse3,SparseCPU,SparseCUDA,SparseMeta,SparsePrivateUse1,"
                         "SparsePrivateUse2,SparsePrivateUse3,SparseCsrCPU,SparseCsrCUDA,"
                         "SparseCsrMeta,SparseCsrPrivateUse1,SparseCsrPrivateUse2,"
                         "SparseCsrPrivateUse3,NestedTensorCPU,NestedTensorCUDA,NestedTensorMeta,"
                         "NestedTensorPrivateUse1,NestedTensorPrivateUse2,NestedTensorPrivateUse3,"
                         "BackendSelect,Profiler,Mode1,Mode2");
  jp_free(v);

  /* Kernel keys: the entry lists what it selects among. */
  v = kd_json("table demo::neg --json");
  cpu = table_entry(v, "CPU");
  assert_non_null(cpu);
  ASSERT_JSTR(jp_get(cpu, "form"), "kernel keys");
  ASSERT_JSTR(jp_get(cpu, "reason"), "kernel");
  assert_null(jp_get(cpu, "registered_at"));
  const jp_value *kk = jp_get(cpu, "kernel_keys");
  ASSERT_JTYPE(kk, JP_ARRAY);
  assert_int_equal(kk->n, 1);
  ASSERT_JSTR(jp_get(kk->items[0], "layout"), "ALL_LAYOUT");
  join_strings(jp_get(kk->items[0], "dtypes"), list, sizeof list);
  KD_ASSERT_STR_EQ(list, "int32,int64,float32,float64");
  assert_demo_where(jp_get(kk->items[0], "registered_at"), "KD_REGISTER_KERNEL(demo, neg,");
  jp_free(v);

  /* A composite: Undefined and every backend. */
  v = kd_json("table demo::describe --json");
  ASSERT_JSTR(jp_get(table_entry(v, "Undefined"), "reason"), "math kernel");
  ASSERT_JSTR(jp_get(table_entry(v, "CUDA"), "reason"), "math kernel");
  ASSERT_JSTR(jp_get(table_entry(v, "AutogradCUDA"), "reason"), "math kernel");
  ASSERT_JSTR(jp_get(table_entry(v, "AutogradCPU"), "reason"), "kernel");
  ASSERT_JSTR(jp_get(table_entry(v, "AutogradCPU"), "form"), "unboxed");
  assert_demo_where(jp_get(table_entry(v, "AutogradCPU"), "registered_at"),
                    "KD_LIBRARY_IMPL(demo, AUTOGRAD_CPU, m)");
  jp_free(v);

  /* An aten operator: CPU and Meta kernels; every runtime key is either in
   * the table or missing, never both. */
  v = kd_json("table aten::add.Tensor --json");
  cpu = table_entry(v, "CPU");
  assert_non_null(cpu);
  ASSERT_JSTR(jp_get(cpu, "reason"), "kernel");
  ASSERT_JTYPE(jp_get(cpu, "registered_at"), JP_STRING);
  assert_non_null(table_entry(v, "Meta"));
  const jp_value *missing = jp_get(v, "missing");
  size_t entries = jp_get(v, "table")->n;
  for (size_t i = 0; i < missing->n; i++)
    if (table_entry(v, jp_str(missing->items[i])))
      fail_msg("%s is both in the table and missing", jp_str(missing->items[i]));
  size_t runtime_keys = 0;
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++)
    runtime_keys += kd_dispatch_key_is_runtime((kd_dispatch_key)k);
  assert_int_equal(entries + missing->n, runtime_keys);
  jp_free(v);
}

/* ---- Errors ---------------------------------------------------------------------------------- */

static void test_json_errors(void **state) {
  (void)state;
  static const char *const cmds[] = {"dump", "table", "kernels"};
  for (size_t i = 0; i < 3; i++) {
    char args[256];
    int status;
    /* Not found: exit 1, nothing on stdout, the reason on stderr. */
    snprintf(args, sizeof args, "%s nosuch::op --json", cmds[i]);
    char *out = run_kd(args, &status);
    assert_int_equal(status, 1);
    KD_ASSERT_STR_EQ(out, "");
    free(out);
    snprintf(args, sizeof args, "%s nosuch::op --json 2>&1", cmds[i]);
    out = run_kd(args, &status);
    ASSERT_CONTAINS(out, "operator 'nosuch::op' not found");
    free(out);
    /* No operand, or two: usage errors. */
    snprintf(args, sizeof args, "%s --json 2>&1", cmds[i]);
    out = run_kd(args, &status);
    assert_int_equal(status, 2);
    ASSERT_CONTAINS(out, "usage: kd ");
    free(out);
    snprintf(args, sizeof args, "%s demo::neg demo::eq --json 2>&1", cmds[i]);
    out = run_kd(args, &status);
    assert_int_equal(status, 2);
    ASSERT_CONTAINS(out, "unexpected argument 'demo::eq'");
    free(out);
  }
  /* kd ops takes one pattern. */
  int status;
  char *out = run_kd("ops a b 2>&1", &status);
  assert_int_equal(status, 2);
  ASSERT_CONTAINS(out, "kd ops: unexpected argument 'b'");
  free(out);
}

/* ---- --help and unknown options for every subcommand ------------------------------------------ */

/* The subcommands `kd --help` lists ("  NAME  summary" lines after
 * "commands:"), into names (at most max); returns how many. */
static size_t list_commands(char names[][32], size_t max) {
  int status;
  char *out = run_kd("--help", &status);
  assert_int_equal(status, 0);
  const char *p = strstr(out, "commands:\n");
  if (!p) fail_msg("kd --help lists no commands:\n%s", out);
  p += strlen("commands:\n");
  size_t n = 0;
  while (!strncmp(p, "  ", 2) && p[2] != ' ') {
    size_t len = strcspn(p + 2, " \n");
    if (n < max && len < 32) {
      memcpy(names[n], p + 2, len);
      names[n][len] = '\0';
      n++;
    }
    const char *nl = strchr(p, '\n');
    if (!nl) break;
    p = nl + 1;
  }
  free(out);
  return n;
}

static void test_help_and_unknown_options(void **state) {
  (void)state;
  char names[64][32];
  size_t n = list_commands(names, 64);
  assert_true(n >= 8);
  bool seen_schema = false, seen_trace = false, seen_version = false;
  for (size_t i = 0; i < n; i++) {
    char args[256], prefix[64];
    int status;
    seen_schema |= !strcmp(names[i], "schema");
    seen_trace |= !strcmp(names[i], "trace");
    seen_version |= !strcmp(names[i], "version");
    snprintf(prefix, sizeof prefix, "usage: kd %s", names[i]);
    /* --help: usage on stdout, exit 0 (also -h). */
    snprintf(args, sizeof args, "%s --help", names[i]);
    char *out = run_kd(args, &status);
    if (status != 0 || strncmp(out, prefix, strlen(prefix)))
      fail_msg("kd %s exited with %d and printed:\n%s", args, status, out);
    free(out);
    snprintf(args, sizeof args, "%s -h", names[i]);
    out = run_kd(args, &status);
    if (status != 0 || strncmp(out, prefix, strlen(prefix)))
      fail_msg("kd %s exited with %d and printed:\n%s", args, status, out);
    free(out);
    /* An unknown option: exit 2, the option named and a usage hint on
     * stderr, nothing on stdout. */
    snprintf(args, sizeof args, "%s --no-such-option 2>/dev/null", names[i]);
    out = run_kd(args, &status);
    if (status != 2 || out[0])
      fail_msg("kd %s exited with %d and printed:\n%s", args, status, out);
    free(out);
    snprintf(args, sizeof args, "%s --no-such-option 2>&1 >/dev/null", names[i]);
    out = run_kd(args, &status);
    if (!strstr(out, "--no-such-option") || !strstr(out, prefix))
      fail_msg("kd %s: stderr names no option or usage:\n%s", args, out);
    free(out);
  }
  assert_true(seen_schema && seen_trace && seen_version);
  /* kd --help says what kd alone does. */
  int status;
  char *out = run_kd("--help", &status);
  ASSERT_CONTAINS(out, "interactive prompt");
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writer_layout),   cmocka_unit_test(test_writer_escaping),
      cmocka_unit_test(test_writer_misuse),   cmocka_unit_test(test_parser_strict),
      cmocka_unit_test(test_ops_json),        cmocka_unit_test(test_kernels_json),
      cmocka_unit_test(test_dump_json),       cmocka_unit_test(test_table_json),
      cmocka_unit_test(test_json_errors),     cmocka_unit_test(test_help_and_unknown_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
