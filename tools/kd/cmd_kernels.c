/*
 * kd kernels OP [--json]: the kernel registrations of an operator: per
 * dispatch key, the kernel key (layout, dtypes) when it has one, the form,
 * the signature and where it was registered; for kernel-key kernels the
 * argument definitions per dtype (dtypes with the same definitions are
 * grouped), and the attributes' types from the schema. --json writes the
 * same as JSON (cmd_json.c).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kd/kd.h"

typedef struct listing {
  int count;
  const kd_schema *schema;
} listing;

static void put_dtypes(kd_dtype_set set) {
  if ((set & KD_ALL_DTYPES) == KD_ALL_DTYPES) {
    fputs("ALL_DTYPE", stdout);
    return;
  }
  putchar('[');
  bool first = true;
  for (int d = 0; d < KD_DTYPE_COUNT; d++)
    if (set & KD_DTYPE_BIT(d)) {
      if (!first) fputs(", ", stdout);
      fputs(kd_dtype_name((kd_dtype)d), stdout);
      first = false;
    }
  putchar(']');
}

static const char *field_name(int v, int kind) {
  if (v == KD_ARGDEF_NOT_TENSOR) return "-";
  if (kind == 0) return v == KD_ALL_BACKEND ? "ALL_BACKEND" : kd_dispatch_key_name((kd_dispatch_key)v);
  if (kind == 1) return v == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)v);
  return v == KD_ALL_DTYPE ? "ALL_DTYPE" : kd_dtype_name((kd_dtype)v);
}

/* Dtypes a and b have the same definitions, reading a dtype field equal to
 * the dtype itself as "T" (text listings group them). */
static bool same_defs(const kd_kernel_info *k, int a, int b) {
  uint32_t n = k->nargs + k->nrets;
  for (uint32_t i = 0; i < n; i++) {
    kd_arg_def x = k->argdefs[a * n + i], y = k->argdefs[b * n + i];
    bool tx = x.dtype == a, ty = y.dtype == b;
    if (x.backend != y.backend || x.layout != y.layout || tx != ty || (!tx && x.dtype != y.dtype))
      return false;
  }
  return true;
}

/* The name of argument i (i < nargs) or result i - nargs. */
static void arg_label(const listing *l, const kd_kernel_info *k, uint32_t i, char *buf, size_t cap) {
  if (i < k->nargs) {
    snprintf(buf, cap, "%s", kd_argument_name(kd_schema_argument(l->schema, i)));
  } else {
    const char *n = kd_argument_name(kd_schema_return(l->schema, i - k->nargs));
    if (n && *n) snprintf(buf, cap, "%s", n);
    else snprintf(buf, cap, "result%u", i - k->nargs);
  }
}

/* One group of dtypes whose definitions are the same. */
static void print_defs(const listing *l, const kd_kernel_info *k, kd_dtype_set group, int d) {
  uint32_t n = k->nargs + k->nrets;
  const kd_arg_def *defs = &k->argdefs[d * n];
  char label[128], type[128];
  fputs("    T in ", stdout);
  put_dtypes(group);
  fputs(":\n      inputs: ", stdout);
  for (uint32_t i = 0; i < n; i++) {
    if (i == k->nargs) fputs("\n      outputs: ", stdout);
    arg_label(l, k, i, label, sizeof label);
    const kd_argument *a = i < k->nargs ? kd_schema_argument(l->schema, i)
                                        : kd_schema_return(l->schema, i - k->nargs);
    kd_type_format(kd_argument_type(a), type, sizeof type);
    bool first = i == 0 || i == k->nargs;
    if (defs[i].backend == KD_ARGDEF_NOT_TENSOR) {
      printf("%s%s: %s", first ? "" : ", ", label, type);
    } else {
      printf("%s%s (%s, %s, %s)", first ? "" : ", ", label, field_name(defs[i].backend, 0),
             field_name(defs[i].layout, 1), defs[i].dtype == d ? "T" : field_name(defs[i].dtype, 2));
    }
  }
  if (k->nrets == 0) fputs("\n      outputs: (none)", stdout);
  fputs("\n", stdout);
}

/* The definitions, dtypes with equal definitions grouped, in dtype order. */
static void print_all_defs(const listing *l, const kd_kernel_info *k) {
  kd_dtype_set done = 0;
  for (int d = 0; d < KD_DTYPE_COUNT; d++) {
    if (!(k->dtypes & KD_DTYPE_BIT(d)) || (done & KD_DTYPE_BIT(d))) continue;
    kd_dtype_set group = 0;
    for (int e = d; e < KD_DTYPE_COUNT; e++)
      if ((k->dtypes & KD_DTYPE_BIT(e)) && (e == d || same_defs(k, d, e))) group |= KD_DTYPE_BIT(e);
    done |= group;
    print_defs(l, k, group, d);
  }
}

static int print_kernel(const kd_kernel_info *k, void *ud) {
  listing *l = ud;
  const char *layout = k->layout == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)k->layout);
  printf("%-26s %-10s ", kd_dispatch_key_name(k->key), layout);
  put_dtypes(k->dtypes);
  printf("  %s  %s%s%s\n", k->form, k->debug ? k->debug : "?",
         k->staged ? "  [custom, staged: not merged]" : k->custom ? "  [custom]" : "",
         k->active ? "" : k->staged || k->rejected ? "" : "  [inactive: overridden]");
  if (k->rejected) printf("    rejected (takes no part in dispatch): %s\n", k->rejected);
  if (k->keyed && k->key_arg >= 0 && l->schema)
    printf("    selected by argument %d '%s'\n", k->key_arg,
           kd_argument_name(kd_schema_argument(l->schema, (size_t)k->key_arg)));
  if (k->argdefs && l->schema) print_all_defs(l, k);
  l->count++;
  return 0;
}

int kd_cmd_kernels(int argc, char **argv) {
  const char *name = NULL;
  bool json = false;
  listing l = {0, NULL};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: kd kernels OP [--json]\n  the kernel registrations of OP per dispatch key: "
             "kernel key (layout, dtypes), form, where registered, and for kernel-key\n  kernels the "
             "argument definitions (backend, layout, dtype) per dtype\n"
             "  --json  a JSON array of {\"key\", \"keyed\", \"layout\", \"dtypes\", \"form\", "
             "\"signature\",\n          \"registered_at\", \"active\", \"custom\", \"staged\", "
             "\"key_arg\", \"args\" (kernel keys only)}\n");
      return 0;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "kd kernels: unknown option '%s'\nusage: kd kernels OP [--json] "
                      "(kd kernels --help for more)\n", argv[i]);
      return 2;
    } else if (!name) {
      name = argv[i];
    } else {
      fprintf(stderr, "kd kernels: unexpected argument '%s'\nusage: kd kernels OP [--json] "
                      "(kd kernels --help for more)\n", argv[i]);
      return 2;
    }
  }
  if (!name) {
    fprintf(stderr, "usage: kd kernels OP [--json]\n");
    return 2;
  }
  kd_op *op;
  if (kd_op_find(name, NULL, &op) != KD_OK) {
    fprintf(stderr, "kd kernels: %s\n", kd_last_error());
    return 1;
  }
  if (json) return kdc_json_kernels(stdout, op);
  l.schema = kd_op_schema(op);
  kd_op_kernels_foreach(op, print_kernel, &l);
  return 0;
}
