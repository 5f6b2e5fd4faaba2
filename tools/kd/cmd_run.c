/*
 * kd run FILE, kd run -e CODE, kd call OP ARG... [NAME=VALUE...]: the little
 * language of lang.h from the command line. Values print to stdout, errors
 * to stderr; the exit status is 0, 1 after an error, 2 for bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "lang.h"
#include "kd/memory.h"

static const char run_help[] =
    "usage: kd run FILE      run a program ('-' reads standard input)\n"
    "       kd run -e CODE   run CODE (-e may be repeated; the pieces share variables)\n"
    "\n"
    "The language: just enough to call any registered operator, as an interpreter would.\n"
    "  x = [[1, 2], [3, 4]]        a statement per line (or separated by ';'); # comments\n"
    "  add(x, 10, alpha=2)         a bare expression prints its value (None prints nothing)\n"
    "  m = max(x, 1); m[0]; m[-1]  tuples index (negative from the end); v, i = m unpacks\n"
    "  add.Tensor(x, x)            one overload; demo::neg(x) another namespace (default aten)\n"
    "  x + 1, x - y, x * 2, x / 2, x @ y, -x, x[0]   call add, sub, mul, div, matmul, neg, select\n"
    "Literals: 1, -2, 0x10, 1.5, 1e-3, 2j, 'str' or \"str\", True, False, None, (1, 2),\n"
    "[1, 2] lists (a tensor where a Tensor is expected: int64 for ints, float32 when any\n"
    "float, bool when all bools), dtypes (float32, int8, float, long...), devices (cpu,\n"
    "meta...), layouts (strided), memory formats (contiguous_format...), inf, nan.\n"
    "Overloads are tried in PyTorch's order (Tensor before Scalar); the first that accepts\n"
    "the arguments runs; when none does, the error lists each overload and why it refused.\n"
    "\n"
    "Builtins:\n"
    "  print(a, ...)              print the values separated by spaces (strings unquoted)\n"
    "  tensor(data, dtype=None)   a tensor from a list or a number (torch.tensor)\n"
    "  table(add.Tensor)          the operator's dispatch table, as `kd table` prints it\n"
    "                             (also table(demo::scale), table(\"aten::add.Tensor\"))\n"
    "  overloads(add)             the overloads of a name, in the order calls try them\n"
    "  trace(True), trace(False)  route every operator call through the Tracer mode key,\n"
    "                             whose fallback prints a line per call\n"
    "\n"
    "Errors print as FILE:LINE:COL: error: MESSAGE (FILE is <string> for -e); the\n"
    "statements before the error have run. Exit status: 0, or 1 after an error.\n";

static const char call_help[] =
    "usage: kd call OP ARG... [NAME=VALUE...]\n"
    "  one boxed call of operator OP (add, add.Tensor, aten::add, demo::neg) with the\n"
    "  arguments given, each an expression of kd run's language (kd run --help):\n"
    "    kd call add.Tensor '[[1,2],[3,4]]' '[10,20]' alpha=2\n"
    "    kd call sum '[[1,2],[3,4]]' '[1]' keepdim=True\n"
    "    kd call div '[7,8]' 2 'rounding_mode=\"floor\"'\n"
    "  NAME=VALUE is a keyword argument. Without an overload name, PyTorch's overload\n"
    "  resolution picks one. Prints the result; exit status 0, or 1 with the error on\n"
    "  stderr (when no overload accepts the arguments, each overload and why).\n";

/* Reads all of `f`; the caller frees *out. 0 or -1 (errno set). */
static int read_all(FILE *f, char **out, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = kd_host_malloc(cap);
  if (!buf) return -1;
  for (;;) {
    if (cap - n < 1024) {
      char *p = kd_host_realloc(buf, cap * 2);
      if (!p) {
        kd_host_free(buf);
        errno = ENOMEM;
        return -1;
      }
      buf = p;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    kd_host_free(buf);
    errno = EIO;
    return -1;
  }
  *out = buf;
  *len = n;
  return 0;
}

int kd_cmd_run(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "kd run: a FILE or -e CODE is needed\n%s", run_help);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(run_help, stdout);
    return 0;
  }
  bool code = !strcmp(argv[1], "-e");
  if (code) {
    for (int i = 1; i < argc; i += 2) {
      if (strcmp(argv[i], "-e") || i + 1 >= argc) {
        fprintf(stderr, "kd run: %s\nusage: kd run FILE | kd run -e CODE [-e CODE...]\n",
                strcmp(argv[i], "-e") ? "expected -e CODE" : "-e needs CODE");
        return 2;
      }
    }
  } else if (argc != 2 || (argv[1][0] == '-' && argv[1][1])) {
    fprintf(stderr, "kd run: %s '%s'\nusage: kd run FILE | kd run -e CODE [-e CODE...]\n",
            argv[1][0] == '-' && argv[1][1] ? "unknown option" : "unexpected argument",
            argc != 2 && !(argv[1][0] == '-' && argv[1][1]) ? argv[2] : argv[1]);
    return 2;
  }
  kd_lang *L = kdc_lang_new(stdout, stderr);
  if (!L) {
    fprintf(stderr, "kd run: out of memory\n");
    return 1;
  }
  int rc = 0;
  if (code) {
    for (int i = 2; i < argc && !rc; i += 2) rc = kdc_lang_run(L, argv[i], strlen(argv[i]), "<string>");
  } else {
    const char *path = argv[1];
    bool std_in = !strcmp(path, "-");
    FILE *f = std_in ? stdin : fopen(path, "rb");
    char *src = NULL;
    size_t len = 0;
    if (!f || read_all(f, &src, &len)) {
      fprintf(stderr, "kd run: cannot read %s: %s\n", path, strerror(errno));
      rc = 1;
    } else {
      rc = kdc_lang_run(L, src, len, std_in ? "<stdin>" : path);
    }
    if (f && !std_in) fclose(f);
    kd_host_free(src);
  }
  kdc_lang_free(L);
  return rc;
}

int kd_cmd_call(int argc, char **argv) {
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(call_help, stdout);
    return 0;
  }
  if (argc < 2 || argv[1][0] == '-') {
    if (argc >= 2) fprintf(stderr, "kd call: unknown option '%s'\n", argv[1]);
    fprintf(stderr, "usage: kd call OP ARG... [NAME=VALUE...] (kd call --help for more)\n");
    return 2;
  }
  kd_lang *L = kdc_lang_new(stdout, stderr);
  if (!L) {
    fprintf(stderr, "kd call: out of memory\n");
    return 1;
  }
  int rc = kdc_lang_call_argv(L, argv[1], argc - 2, argv + 2);
  kdc_lang_free(L);
  return rc;
}
