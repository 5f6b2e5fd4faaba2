/*
 * cmd_schema.c: `kd schema [--check | --info]`, schemas from stdin, one per
 * line, printed in canonical form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kd/kd.h"
#include "kd/memory.h"

static void schema_usage(FILE *out) {
  fprintf(out,
          "usage: kd schema [--check | --info] < SCHEMAS\n"
          "\n"
          "Reads one schema per line from stdin (blank lines and lines starting with '#'\n"
          "are skipped; a leading '- func: ' is removed, so native_functions.yaml can be\n"
          "piped through grep) and prints each in canonical form. Errors go to stderr as\n"
          "'line N: MESSAGE'; the exit status is 1 if any line failed.\n"
          "\n"
          "  --check  compare each canonical form with its input line, print the lines\n"
          "           that differ and end with 'N passed, M failed'\n"
          "  --info   print canonical form, kind and signature, tab separated\n"
          "  --help   show this help\n");
}

/* Formats into *buf (grown as needed); returns the string or NULL. */
static const char *format_into(char **buf, size_t *cap, const kd_schema *s, bool signature) {
  size_t n = signature ? kd_schema_signature(s, *buf, *cap) : kd_schema_format(s, *buf, *cap);
  if (n >= *cap) {
    size_t ncap = n + 1;
    char *nb = kd_host_realloc(*buf, ncap);
    if (!nb) return NULL;
    *buf = nb;
    *cap = ncap;
    if (signature) kd_schema_signature(s, *buf, *cap);
    else kd_schema_format(s, *buf, *cap);
  }
  return *buf;
}

int kd_cmd_schema(int argc, char **argv) {
  enum { PRINT, CHECK, INFO } mode = PRINT;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--check")) {
      mode = CHECK;
    } else if (!strcmp(argv[i], "--info")) {
      mode = INFO;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      schema_usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "kd schema: unknown option '%s'\n\n", argv[i]);
      schema_usage(stderr);
      return 2;
    }
  }

  char *line = NULL, *out = NULL, *sig = NULL;
  size_t line_cap = 0, out_cap = 0, sig_cap = 0;
  unsigned long lineno = 0, passed = 0, failed = 0;
  int rc = 0;
  ssize_t got;
  while ((got = getline(&line, &line_cap, stdin)) >= 0) {
    lineno++;
    size_t len = (size_t)got;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    const char *text = line;
    while (len && (*text == ' ' || *text == '\t')) {
      text++;
      len--;
    }
    if (len == 0 || text[0] == '#') continue;
    if (len >= 8 && memcmp(text, "- func: ", 8) == 0) {
      text += 8;
      len -= 8;
    }
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t')) len--;

    kd_schema *s = NULL;
    kd_status st = kd_schema_parse(text, len, &s);
    if (st != KD_OK) {
      /* The input is one line: "line 1, column C: ..." becomes "line N: column C: ...". */
      const char *msg = kd_last_error();
      if (strncmp(msg, "line 1, column ", 15) == 0) msg += 8;
      fprintf(stderr, "line %lu: %s\n", lineno, msg);
      if (mode == CHECK) printf("input:  %.*s\nerror:  %s\n", (int)len, text, msg);
      failed++;
      rc = 1;
      continue;
    }
    const char *canon = format_into(&out, &out_cap, s, false);
    if (!canon) {
      fprintf(stderr, "line %lu: out of memory\n", lineno);
      kd_schema_free(s);
      rc = 1;
      break;
    }
    if (mode == PRINT) {
      puts(canon);
      passed++;
    } else if (mode == INFO) {
      const char *sg = format_into(&sig, &sig_cap, s, true);
      printf("%s\t%s\t%s\n", canon, kd_schema_kind_name(kd_schema_kind_of(s)), sg ? sg : "?");
      passed++;
    } else {
      if (strlen(canon) == len && memcmp(canon, text, len) == 0) {
        passed++;
      } else {
        printf("input:  %.*s\noutput: %s\n", (int)len, text, canon);
        failed++;
        rc = 1;
      }
    }
    kd_schema_free(s);
  }
  if (mode == CHECK) printf("%lu passed, %lu failed\n", passed, failed);
  free(line); /* getline's: the C library's */
  kd_host_free(out);
  kd_host_free(sig);
  return rc;
}
