/*
 * kd ops [PATTERN], kd dump OP, kd table OP: the registry from the command
 * line. PATTERN is a shell pattern (fnmatch) or a substring of the name.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kd/kd.h"

typedef struct ops_query {
  const char *pattern;
  int count;
} ops_query;

static int print_op(kd_op *op, void *ud) {
  ops_query *q = ud;
  const char *name = kd_op_name(op);
  if (q->pattern && fnmatch(q->pattern, name, 0) != 0 && !strstr(name, q->pattern)) return 0;
  const kd_schema *s = kd_op_schema(op);
  char schema[1024] = "(not defined: implemented only)";
  if (s) kd_schema_format(s, schema, sizeof schema);
  printf("%s\t%s\n", name, schema);
  q->count++;
  return 0;
}

int kd_cmd_ops(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: kd ops [PATTERN]\n  list the registered operators (name, tab, schema);\n"
           "  PATTERN is a shell pattern or a substring of the qualified name\n");
    return 0;
  }
  ops_query q = {argc > 1 ? argv[1] : NULL, 0};
  kd_ops_foreach(print_op, &q);
  return 0;
}

static int with_op(int argc, char **argv, size_t (*fn)(const kd_op *, char *, size_t),
                   const char *what) {
  if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    printf("usage: kd %s OP\n  OP is the qualified name, e.g. demo::scale or aten::add.Tensor;\n"
           "  prints the operator's %s\n",
           argv[0], what);
    return argc == 2 ? 0 : 2;
  }
  kd_op *op;
  if (kd_op_find(argv[1], NULL, &op) != KD_OK) {
    fprintf(stderr, "kd %s: %s\n", argv[0], kd_last_error());
    return 1;
  }
  size_t n = fn(op, NULL, 0);
  char *buf = malloc(n + 1);
  if (!buf) return 1;
  fn(op, buf, n + 1);
  fputs(buf, stdout);
  free(buf);
  return 0;
}

int kd_cmd_dump(int argc, char **argv) {
  return with_op(argc, argv, kd_op_dump, "registrations per dispatch key");
}

int kd_cmd_table(int argc, char **argv) {
  return with_op(argc, argv, kd_op_dump_table, "computed dispatch table, with the reason per key");
}
