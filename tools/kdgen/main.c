/*
 * kdgen: reads a native_functions.yaml file, checks it, and writes the C of
 * the operator library (docs/CODEGEN.md).
 *
 *   kdgen --validate [--tags TAGS.yaml] FILE.yaml
 *   kdgen [--tags TAGS.yaml] [--namespace NS] --out DIR FILE.yaml
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

#include "gen.h"
#include "model.h"

static int usage(FILE *to) {
  fprintf(to,
          "usage: kdgen --validate [--tags TAGS.yaml] FILE.yaml\n"
          "       kdgen [--tags TAGS.yaml] [--namespace NS] --out DIR FILE.yaml\n"
          "Reads operator declarations in PyTorch's native_functions.yaml format.\n"
          "  --validate   check the file (keys, schemas, groups, tags) and write nothing\n"
          "  --tags FILE  the tags an entry may use (tags.yaml format)\n"
          "  --out DIR    write the generated C under DIR\n"
          "  --namespace NS  the operators' namespace (default: aten)\n");
  return to == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
  const char *tags = NULL, *out = NULL, *file = NULL, *ns = "aten";
  int validate = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout);
    if (!strcmp(argv[i], "--validate")) {
      validate = 1;
    } else if (!strcmp(argv[i], "--tags") && i + 1 < argc) {
      tags = argv[++i];
    } else if (!strcmp(argv[i], "--namespace") && i + 1 < argc) {
      ns = argv[++i];
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-' || file) {
      fprintf(stderr, "kdgen: unexpected argument '%s'\n", argv[i]);
      return usage(stderr);
    } else {
      file = argv[i];
    }
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
