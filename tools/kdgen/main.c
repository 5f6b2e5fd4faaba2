/*
 * kdgen: reads a native_functions.yaml file, checks it, and writes the C of
 * the operator library (docs/CODEGEN.md). With --backend, reads an
 * out-of-tree backend's YAML file against its upstream file (--source) and
 * classifies its entries (docs/CODEGEN.md "Backend YAML").
 *
 *   kdgen --validate [--tags TAGS.yaml] FILE.yaml
 *   kdgen [--tags TAGS.yaml] [--namespace NS] --out DIR FILE.yaml
 *   kdgen --backend B.yaml --source UPSTREAM.yaml [--tags TAGS.yaml]
 *         [--key KEY] [--name NAME] [--prefix PREFIX] [--namespace NS]
 *         --validate | --classify
 *   kdgen --backend B.yaml --source UPSTREAM.yaml [--native KDOPS.yaml] [...] --out DIR
 *
 * Errors go to stderr as "FILE:LINE: error: reason"; the exit status is 0
 * when there were none, 1 otherwise, 2 for bad usage. Notes ("FILE:LINE:
 * note: 'add.out': not generated: ...") say what the file asks for that
 * kdgen does not generate (docs/CODEGEN.md, "Notes and errors"); they leave
 * the exit status 0.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "gen.h"
#include "gen_backend.h"
#include "model.h"

static int usage(FILE *to) {
  fprintf(to,
          "usage: kdgen --validate [--tags TAGS.yaml] FILE.yaml\n"
          "       kdgen [--tags TAGS.yaml] [--namespace NS] --out DIR FILE.yaml\n"
          "       kdgen --backend B.yaml --source UPSTREAM.yaml [--tags TAGS.yaml]\n"
          "             [--key KEY] [--name NAME] [--prefix PREFIX] [--namespace NS]\n"
          "             (--validate | --classify | [--native KDOPS.yaml] --out DIR)\n"
          "Reads operator declarations in PyTorch's native_functions.yaml format.\n"
          "  --validate      check the file (keys, schemas, groups, tags) and write nothing\n"
          "  --tags FILE     the tags an entry may use (tags.yaml format)\n"
          "  --out DIR       write the generated C under DIR\n"
          "  --namespace NS  the operators' namespace (default: aten)\n"
          "Out-of-tree backends (docs/CODEGEN.md, \"Backend YAML\"):\n"
          "  --backend FILE  a backend's YAML (torch_musa's format): entries name upstream\n"
          "                  operators (\"- func: add.out\") with the backend's kernels\n"
          "  --source FILE   the upstream native_functions.yaml the backend extends\n"
          "  --classify      print \"NAME STRATEGY KIND\" per backend entry, in file order\n"
          "                  (STRATEGY: Legacy, LegacyMeta, Customized or none; KIND:\n"
          "                  structured or unstructured), then a count per strategy\n"
          "  --key KEY       the backend's dispatch key in the file (default PrivateUse1)\n"
          "  --name NAME     the backend's device/plugin name (default: the key, lower case)\n"
          "  --prefix P      C prefix of the backend's functions (default: NAME_)\n"
          "  --namespace NS  namespace of operators the backend defines (default: NAME)\n"
          "  --native FILE   libkdops' own native_functions.yaml (what Legacy entries reuse)\n"
          "  --out DIR       generate the backend's plugin under DIR: NAME_functions.h (what\n"
          "                  the author writes), NAME_plugin.c, NAME_direct.h, NAME_entries.txt\n");
  return to == stdout ? 0 : 2;
}

static int run_backend(const char *backend, const char *source, const char *tags,
                       const kdg_backend_opts *opts, int classify, const char *native,
                       const char *out) {
  kdg_diag diag = {0, 0, 0};
  kdg_file src, nat;
  kdg_backend b;
  memset(&b, 0, sizeof b);
  memset(&nat, 0, sizeof nat);
  int rc = kdg_load(source, tags, &src, &diag);
  if (rc == 0) rc = kdg_validate(&src, &diag);
  if (rc == 0) rc = kdg_backend_load(backend, &src, opts, &b, &diag);
  if (rc == 0 && native) {
    rc = kdg_load(native, NULL, &nat, &diag);
    if (rc == 0) rc = kdg_validate(&nat, &diag);
  }
  if (rc == 0 && out) rc = kdg_generate_backend(&b, native ? &nat : NULL, out, &diag);
  if (rc == 0 && classify) kdg_backend_print_classification(&b, stdout);
  if (rc == 0 && !classify && !out)
    printf("%s: %zu entries against %s, no errors\n", backend, b.nentries, source);
  if (diag.notes)
    fprintf(stderr, "kdgen: %zu note%s: entries not generated (not an error)\n", diag.notes,
            diag.notes == 1 ? "" : "s");
  if (diag.errors) fprintf(stderr, "kdgen: %zu error%s\n", diag.errors, diag.errors == 1 ? "" : "s");
  kdg_backend_free(&b);
  kdg_file_free(&nat);
  kdg_file_free(&src);
  return diag.errors ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *tags = NULL, *out = NULL, *file = NULL, *backend = NULL, *source = NULL,
             *native = NULL, *ns = "aten";
  kdg_backend_opts opts = {NULL, NULL, NULL, NULL};
  int validate = 0, classify = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
    if (!strcmp(a, "--validate")) {
      validate = 1;
    } else if (!strcmp(a, "--classify")) {
      classify = 1;
    } else if (!strcmp(a, "--tags") && has_value) {
      tags = argv[++i];
    } else if (!strcmp(a, "--out") && has_value) {
      out = argv[++i];
    } else if (!strcmp(a, "--backend") && has_value) {
      backend = argv[++i];
    } else if (!strcmp(a, "--native") && has_value) {
      native = argv[++i];
    } else if (!strcmp(a, "--source") && has_value) {
      source = argv[++i];
    } else if (!strcmp(a, "--key") && has_value) {
      opts.key = argv[++i];
    } else if (!strcmp(a, "--name") && has_value) {
      opts.name = argv[++i];
    } else if (!strcmp(a, "--prefix") && has_value) {
      opts.prefix = argv[++i];
    } else if (!strcmp(a, "--namespace") && has_value) {
      opts.ns = ns = argv[++i]; /* the backend's new operators', or the in-tree file's */
    } else if (a[0] == '-' || file) {
      fprintf(stderr, "kdgen: unexpected argument '%s'\n", a);
      return usage(stderr);
    } else {
      file = a;
    }
  }
  if (backend || source || classify) {
    if (!backend || !source || file || (!validate && !classify && !out)) return usage(stderr);
    return run_backend(backend, source, tags, &opts, classify, native, out);
  }
  if (!file || (!validate && !out)) return usage(stderr);
  bool ns_ok = (*ns >= 'a' && *ns <= 'z') || (*ns >= 'A' && *ns <= 'Z') || *ns == '_';
  for (const char *p = ns; *p; p++)
    ns_ok = ns_ok && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                      (*p >= '0' && *p <= '9'));
  if (!ns_ok) {
    fprintf(stderr, "kdgen: --namespace '%s' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)\n", ns);
    return 2;
  }

  kdg_diag diag = {0, 0, 0};
  kdg_file f;
  int rc = kdg_load(file, tags, &f, &diag);
  if (rc == 0) rc = kdg_validate(&f, &diag);
  if (rc == 0 && !validate) rc = kdg_generate(&f, ns, out, &diag);
  if (validate && diag.errors == 0)
    printf("%s: %zu entries, %zu groups, no errors\n", file, f.nfuncs, f.ngroups);
  if (diag.notes)
    fprintf(stderr, "kdgen: %zu note%s: entries not generated (not an error)\n", diag.notes,
            diag.notes == 1 ? "" : "s");
  if (diag.errors) fprintf(stderr, "kdgen: %zu error%s\n", diag.errors, diag.errors == 1 ? "" : "s");
  kdg_file_free(&f);
  return diag.errors ? 1 : 0;
}
