/*
 * kd kernels OP [--json]: the kernel registrations of an operator: per
 * dispatch key, the kernel key (layout, dtypes) when it has one, the form,
 * the signature and where it was registered.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kd/kd.h"

typedef struct listing {
  bool json;
  int count;
} listing;

static void put_json_string(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
    else putchar(*s);
  }
  putchar('"');
}

static void put_dtypes(kd_dtype_set set, bool json) {
  if (!json && (set & KD_ALL_DTYPES) == KD_ALL_DTYPES) {
    fputs("ALL_DTYPE", stdout);
    return;
  }
  putchar('[');
  bool first = true;
  for (int d = 0; d < KD_DTYPE_COUNT; d++)
    if (set & KD_DTYPE_BIT(d)) {
      if (!first) fputs(", ", stdout);
      if (json) put_json_string(kd_dtype_name((kd_dtype)d));
      else fputs(kd_dtype_name((kd_dtype)d), stdout);
      first = false;
    }
  putchar(']');
}

static int print_kernel(const kd_kernel_info *k, void *ud) {
  listing *l = ud;
  const char *layout = k->layout == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)k->layout);
  if (l->json) {
    printf("%s\n  {\"key\": ", l->count ? "," : "");
    put_json_string(kd_dispatch_key_name(k->key));
    printf(", \"keyed\": %s, \"layout\": ", k->keyed ? "true" : "false");
    put_json_string(layout);
    fputs(", \"dtypes\": ", stdout);
    put_dtypes(k->dtypes, true);
    fputs(", \"form\": ", stdout);
    put_json_string(k->form);
    fputs(", \"signature\": ", stdout);
    if (k->signature) put_json_string(k->signature);
    else fputs("null", stdout);
    fputs(", \"registered_at\": ", stdout);
    put_json_string(k->debug ? k->debug : "");
    printf(", \"active\": %s}", k->active ? "true" : "false");
  } else {
    printf("%-26s %-10s ", kd_dispatch_key_name(k->key), layout);
    put_dtypes(k->dtypes, false);
    printf("  %s  %s%s\n", k->form, k->debug ? k->debug : "?",
           k->active ? "" : "  [inactive: overridden]");
  }
  l->count++;
  return 0;
}

int kd_cmd_kernels(int argc, char **argv) {
  const char *name = NULL;
  listing l = {false, 0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      l.json = true;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: kd kernels OP [--json]\n  the kernel registrations of OP per dispatch key: "
             "kernel key (layout, dtypes), form, where registered\n");
      return 0;
    } else if (!name) {
      name = argv[i];
    } else {
      fprintf(stderr, "kd kernels: unexpected argument '%s'\n", argv[i]);
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
  if (l.json) printf("[");
  kd_op_kernels_foreach(op, print_kernel, &l);
  if (l.json) printf("%s]\n", l.count ? "\n" : "");
  return 0;
}
