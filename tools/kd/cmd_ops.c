/*
 * kd ops [PATTERN], kd dump OP, kd table OP: the registry from the command
 * line. PATTERN is a shell pattern (fnmatch) or a substring of the name.
 * With --json each writes JSON instead (cmd_json.c).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kd/kd.h"
#include "kd/memory.h"

typedef struct ops_query {
  const char *pattern;
  int count;
} ops_query;

bool kdc_ops_match(const char *pattern, const char *name) {
  return fnmatch(pattern, name, 0) == 0 || strstr(name, pattern) != NULL;
}

static int print_op(kd_op *op, void *ud) {
  ops_query *q = ud;
  const char *name = kd_op_name(op);
  if (q->pattern && !kdc_ops_match(q->pattern, name)) return 0;
  const kd_schema *s = kd_op_schema(op);
  char schema[1024] = "(not defined: implemented only)";
  if (s) kd_schema_format(s, schema, sizeof schema);
  printf("%s\t%s\n", name, schema);
  q->count++;
  return 0;
}

int kd_cmd_ops(int argc, char **argv) {
  const char *pattern = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: kd ops [PATTERN] [--json]\n  list the registered operators (name, tab, schema);\n"
             "  PATTERN is a shell pattern or a substring of the qualified name\n"
             "  --json  a JSON array of {\"op\", \"name\", \"overload\" (when there is one),\n"
             "          \"schema\" (null when only implemented)}\n");
      return 0;
    } else if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (argv[i][0] == '-' || pattern) {
      fprintf(stderr, "kd ops: %s '%s'\nusage: kd ops [PATTERN] [--json] (kd ops --help for more)\n",
              argv[i][0] == '-' ? "unknown option" : "unexpected argument", argv[i]);
      return 2;
    } else {
      pattern = argv[i];
    }
  }
  if (json) return kdc_json_ops(stdout, pattern);
  ops_query q = {pattern, 0};
  kd_ops_foreach(print_op, &q);
  return 0;
}

/* Writes fn's text for op to out; 0, or -1 when out of memory. */
static int print_dump(FILE *out, size_t (*fn)(const kd_op *, char *, size_t), const kd_op *op) {
  size_t n = fn(op, NULL, 0);
  char *buf = kd_host_malloc(n + 1);
  if (!buf) return -1;
  fn(op, buf, n + 1);
  fputs(buf, out);
  kd_host_free(buf);
  return 0;
}

static int with_op(int argc, char **argv, size_t (*fn)(const kd_op *, char *, size_t),
                   const char *what, int (*json_fn)(FILE *, const kd_op *), const char *json_what) {
  const char *name = NULL;
  bool json = false, usage = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage = true;
    } else if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "kd %s: unknown option '%s'\nusage: kd %s OP [--json] (kd %s --help for more)\n",
              argv[0], argv[i], argv[0], argv[0]);
      return 2;
    } else if (name) {
      fprintf(stderr, "kd %s: unexpected argument '%s'\nusage: kd %s OP [--json] (kd %s --help for more)\n",
              argv[0], argv[i], argv[0], argv[0]);
      return 2;
    } else {
      name = argv[i];
    }
  }
  if (usage || !name) {
    /* To stdout when asked for, to stderr for a missing or extra operand. */
    fprintf(usage ? stdout : stderr,
            "usage: kd %s OP [--json]\n  OP is the qualified name, e.g. demo::scale or aten::add.Tensor;\n"
            "  prints the operator's %s\n  --json  %s\n",
            argv[0], what, json_what);
    return usage ? 0 : 2;
  }
  kd_op *op;
  if (kd_op_find(name, NULL, &op) != KD_OK) {
    fprintf(stderr, "kd %s: %s\n", argv[0], kd_last_error());
    return 1;
  }
  if (json) return json_fn(stdout, op);
  return print_dump(stdout, fn, op) ? 1 : 0;
}

/* kd_op_dump_table, then a line per device backend whose CPU fallback ran
 * the operator in this process ("  cpu fallback: PrivateUse1 3 calls"). */
static size_t dump_table(const kd_op *op, char *buf, size_t cap) {
  size_t n = kd_op_dump_table(op, buf, cap);
  static const kd_dispatch_key keys[] = {KD_KEY_CUDA, KD_KEY_PRIVATEUSE1, KD_KEY_PRIVATEUSE2,
                                         KD_KEY_PRIVATEUSE3};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    uint64_t calls = kd_op_fallback_count(op, keys[i]);
    if (!calls) continue;
    char line[128];
    int m = snprintf(line, sizeof line, "  cpu fallback: %s %llu call%s\n",
                     kd_dispatch_key_name(keys[i]), (unsigned long long)calls,
                     calls == 1 ? "" : "s");
    if (m < 0) continue;
    if (buf && n + (size_t)m < cap) memcpy(buf + n, line, (size_t)m + 1);
    n += (size_t)m;
  }
  return n;
}

int kdc_print_op_table(FILE *out, const kd_op *op) { return print_dump(out, dump_table, op); }

int kd_cmd_dump(int argc, char **argv) {
  return with_op(argc, argv, kd_op_dump, "registrations per dispatch key", kdc_json_dump,
                 "a JSON object {\"op\", \"schema\", \"defs\", \"tags\", \"registrations\": {KEY: [...]}}");
}

int kd_cmd_table(int argc, char **argv) {
  return with_op(argc, argv, dump_table,
                 "computed dispatch table, with the reason per key (and the CPU fallback's calls)",
                 kdc_json_table,
                 "a JSON object {\"op\", \"table\": [{\"key\", \"reason\", \"form\", ...}], \"missing\"}");
}
