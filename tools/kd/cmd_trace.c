/*
 * kd trace -o FILE -- PROGRAM [ARGS...]: runs PROGRAM with KD_TRACE_KERNELS
 * set to a scratch file (the recorder in src/registry/trace.c appends one
 * line per (operator, dispatch key) with the dtypes it was called with),
 * then merges what was recorded into an allow-list header for a selective
 * build (include/kd/selective.h). The header is written only when PROGRAM
 * exits with status 0 and recorded something, through a scratch file beside
 * FILE renamed over it, so FILE is either the old one or the whole new one.
 * The output is sorted and carries no date, so one program run the same way
 * gives the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "kd/kd.h"
#include "kd/memory.h"

static void trace_usage(FILE *out) {
  fprintf(out,
          "usage: kd trace -o FILE -- PROGRAM [ARGS...]\n"
          "  runs PROGRAM with KD_TRACE_KERNELS set, records every (operator, dispatch key,\n"
          "  dtype) it calls, and writes FILE: an allow-list header for a selective build\n"
          "  (compile the operator libraries with -include FILE; see docs/GUIDE.md)\n");
}

/* One merged record. */
typedef struct trace_rec {
  char *op;  /* "ns::name" or "ns::name.overload" (owned) */
  char *key; /* the dispatch key's enum suffix: CPU, META, ... (owned) */
  uint32_t dtypes; /* kd_dtype_set; 0xffffffff: every dtype */
} trace_rec;

typedef struct trace_recs {
  trace_rec *items;
  size_t n, cap;
} trace_recs;

static void recs_free(trace_recs *r) {
  for (size_t i = 0; i < r->n; i++) {
    kd_host_free(r->items[i].op);
    kd_host_free(r->items[i].key);
  }
  kd_host_free(r->items);
}

static char *dup_n(const char *s, size_t n) {
  char *d = kd_host_malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

/* An identifier of exactly len characters. */
static bool is_ident(const char *s, size_t len) {
  if (!len || !is_ident_start(s[0])) return false;
  for (size_t i = 1; i < len; i++)
    if (!is_ident_char(s[i])) return false;
  return true;
}

/* "ns::name" or "ns::name.overload", each part an identifier. */
static bool valid_op_name(const char *s, size_t len) {
  const char *sep = NULL;
  for (size_t i = 0; i + 1 < len; i++)
    if (s[i] == ':' && s[i + 1] == ':') {
      sep = s + i;
      break;
    }
  if (!sep || !is_ident(s, (size_t)(sep - s))) return false;
  const char *name = sep + 2, *end = s + len;
  const char *dot = memchr(name, '.', (size_t)(end - name));
  if (!dot) return is_ident(name, (size_t)(end - name));
  return is_ident(name, (size_t)(dot - name)) && is_ident(dot + 1, (size_t)(end - dot - 1));
}

static bool valid_key(const char *s, size_t len) {
#define KD_TRACE_KEY_(E, name, bit) \
  if (len == sizeof #E - 1 && !memcmp(s, #E, len)) return true;
  KD_DISPATCH_KEY_LIST(KD_TRACE_KEY_)
#undef KD_TRACE_KEY_
  return false;
}

/* Parses "float32,int64" or "*" into a mask; false when a name is unknown. */
static bool parse_dtypes(const char *s, size_t len, uint32_t *out) {
  if (len == 1 && s[0] == '*') {
    *out = 0xffffffffu;
    return true;
  }
  uint32_t mask = 0;
  const char *end = s + len;
  while (s < end) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    size_t n = (size_t)((comma ? comma : end) - s);
    char name[32];
    kd_dtype d;
    if (!n || n >= sizeof name) return false;
    memcpy(name, s, n);
    name[n] = '\0';
    if (kd_dtype_from_name(name, &d) != KD_OK) return false;
    mask |= KD_DTYPE_BIT(d);
    s += n + (comma ? 1 : 0);
    if (comma && s == end) return false;
  }
  if (!mask) return false;
  *out = mask;
  return true;
}

/* Adds (op, key, dtypes); merges later. 0, or -1 when out of memory. */
static int recs_add(trace_recs *r, const char *op, size_t op_len, const char *key, size_t key_len,
                    uint32_t dtypes) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    trace_rec *items = kd_host_realloc(r->items, cap * sizeof *items);
    if (!items) return -1;
    r->items = items;
    r->cap = cap;
  }
  trace_rec *t = &r->items[r->n];
  t->op = dup_n(op, op_len);
  t->key = dup_n(key, key_len);
  t->dtypes = dtypes;
  if (!t->op || !t->key) {
    kd_host_free(t->op);
    kd_host_free(t->key);
    return -1;
  }
  r->n++;
  return 0;
}

/* Reads the recorder's file: "OP KEY DTYPES" per line; blank lines and
 * lines starting with '#' are skipped. 0, or 1 after printing why not. */
static int read_records(const char *path, trace_recs *r) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "kd trace: cannot read the records in '%s': %s\n", path, strerror(errno));
    return 1;
  }
  char line[4096];
  int lineno = 0, rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n') line[--len] = '\0';
    else if (!feof(f)) {
      fprintf(stderr, "kd trace: %s:%d: record too long\n", path, lineno);
      rc = 1;
      break;
    }
    if (!len || line[0] == '#') continue;
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    uint32_t dtypes = 0;
    if (!sp1 || !sp2 || strchr(sp2 + 1, ' ') || !valid_op_name(line, (size_t)(sp1 - line)) ||
        !valid_key(sp1 + 1, (size_t)(sp2 - sp1 - 1)) ||
        !parse_dtypes(sp2 + 1, strlen(sp2 + 1), &dtypes)) {
      fprintf(stderr, "kd trace: %s:%d: malformed record '%s'\n", path, lineno, line);
      rc = 1;
      break;
    }
    if (recs_add(r, line, (size_t)(sp1 - line), sp1 + 1, (size_t)(sp2 - sp1 - 1), dtypes)) {
      fprintf(stderr, "kd trace: out of memory\n");
      rc = 1;
    }
  }
  if (rc == 0 && ferror(f)) {
    fprintf(stderr, "kd trace: cannot read the records in '%s': %s\n", path, strerror(errno));
    rc = 1;
  }
  fclose(f);
  return rc;
}

static int compare_recs(const void *a, const void *b) {
  const trace_rec *x = a, *y = b;
  int c = strcmp(x->op, y->op);
  return c ? c : strcmp(x->key, y->key);
}

/* Sorts by (operator, key) and merges equal pairs (union of dtypes). */
static void recs_merge(trace_recs *r) {
  if (!r->n) return;
  qsort(r->items, r->n, sizeof *r->items, compare_recs);
  size_t out = 0;
  for (size_t i = 1; i < r->n; i++) {
    trace_rec *last = &r->items[out], *cur = &r->items[i];
    if (!strcmp(last->op, cur->op) && !strcmp(last->key, cur->key)) {
      last->dtypes |= cur->dtypes;
      kd_host_free(cur->op);
      kd_host_free(cur->key);
    } else {
      r->items[++out] = *cur;
    }
  }
  r->n = out + 1;
}

/* The token of an operator name: "::" -> "__", "." -> "_". */
static void put_token(FILE *out, const char *op) {
  for (const char *p = op; *p; p++) {
    if (p[0] == ':' && p[1] == ':') {
      fputs("__", out);
      p++;
    } else {
      fputc(*p == '.' ? '_' : *p, out);
    }
  }
}

static void put_dtype_names(FILE *out, uint32_t mask) {
  if (mask == 0xffffffffu) {
    fputs("[any dtype]", out);
    return;
  }
  fputc('[', out);
  bool first = true;
  for (int d = 0; d < KD_DTYPE_COUNT; d++)
    if (mask & KD_DTYPE_BIT(d)) {
      fprintf(out, "%s%s", first ? "" : ", ", kd_dtype_name((kd_dtype)d));
      first = false;
    }
  fputc(']', out);
}

/* Text for inside a C comment: no control characters, no comment end. */
static void put_comment_text(FILE *out, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f) fputc('?', out);
    else if (c == '*' && s[1] == '/') fputs("*?", out);
    else fputc(c, out);
  }
}

static void write_header(FILE *out, const trace_recs *r, char **argv) {
  fputs("/*\n * Generated by `kd trace` from:", out);
  for (char **a = argv; *a; a++) {
    fputc(' ', out);
    put_comment_text(out, *a);
  }
  fputs("\n"
        " * The operators, dispatch keys and dtypes the program called: the allow-list of a\n"
        " * selective build (include/kd/selective.h). Compile the operator libraries with\n"
        " * -include of this file. Do not edit; generate it again.\n"
        " */\n"
        "#ifndef KD_SELECTIVE_ALLOW_LIST_H\n"
        "#define KD_SELECTIVE_ALLOW_LIST_H\n\n"
        "#define KD_SELECTIVE_BUILD 1\n",
        out);
  for (size_t i = 0; i < r->n;) {
    /* One operator: its union over keys, then each key. */
    size_t j = i;
    uint32_t all = 0;
    for (; j < r->n && !strcmp(r->items[j].op, r->items[i].op); j++) all |= r->items[j].dtypes;
    fputs("\n#define KD_ALLOW_", out);
    put_token(out, r->items[i].op);
    fprintf(out, " KD_ALLOW_DTYPES(0x%08xu) /* %s, any key: ", (unsigned)all, r->items[i].op);
    put_dtype_names(out, all);
    fputs(" */\n", out);
    for (size_t k = i; k < j; k++) {
      fputs("#define KD_ALLOW_", out);
      put_token(out, r->items[k].op);
      fprintf(out, "__%s KD_ALLOW_DTYPES(0x%08xu) /* %s %s ", r->items[k].key,
              (unsigned)r->items[k].dtypes, r->items[k].op, r->items[k].key);
      put_dtype_names(out, r->items[k].dtypes);
      fputs(" */\n", out);
    }
    i = j;
  }
  fputs("\n#endif /* KD_SELECTIVE_ALLOW_LIST_H */\n", out);
}

/* Writes the header to a scratch file beside `path`, then renames it over
 * `path`. 0, or 1 after printing why not (nothing left behind). */
static int write_output(const char *path, const trace_recs *r, char **argv) {
  size_t len = strlen(path);
  char *tmp = kd_host_malloc(len + sizeof ".kdtrace-XXXXXX");
  if (!tmp) {
    fprintf(stderr, "kd trace: out of memory\n");
    return 1;
  }
  memcpy(tmp, path, len);
  memcpy(tmp + len, ".kdtrace-XXXXXX", sizeof ".kdtrace-XXXXXX");
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "kd trace: cannot write '%s': %s\n", path, strerror(errno));
    kd_host_free(tmp);
    return 1;
  }
  FILE *out = fdopen(fd, "w");
  if (!out) {
    fprintf(stderr, "kd trace: cannot write '%s': %s\n", path, strerror(errno));
    close(fd);
    unlink(tmp);
    kd_host_free(tmp);
    return 1;
  }
  /* mkstemp makes the file 0600; a header is as readable as any new file. */
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask);
  write_header(out, r, argv);
  bool ok = !ferror(out);
  int err = errno;
  if (fclose(out) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    fprintf(stderr, "kd trace: cannot write '%s': %s\n", path, strerror(err));
    unlink(tmp);
    kd_host_free(tmp);
    return 1;
  }
  kd_host_free(tmp);
  return 0;
}

/* Runs argv with KD_TRACE_KERNELS=records; 0 when it exited with status 0,
 * else 1 after printing why. */
static int run_program(char **argv, const char *records) {
  int pipefd[2]; /* the child reports a failed exec through it */
  if (pipe(pipefd) != 0) {
    fprintf(stderr, "kd trace: cannot start '%s': %s\n", argv[0], strerror(errno));
    return 1;
  }
  fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "kd trace: cannot start '%s': %s\n", argv[0], strerror(errno));
    close(pipefd[0]);
    close(pipefd[1]);
    return 1;
  }
  if (pid == 0) {
    close(pipefd[0]);
    int err = 0;
    if (setenv("KD_TRACE_KERNELS", records, 1) != 0) err = errno;
    else {
      execvp(argv[0], argv);
      err = errno;
    }
    ssize_t w = write(pipefd[1], &err, sizeof err);
    (void)w;
    _exit(127);
  }
  close(pipefd[1]);
  int exec_err = 0;
  ssize_t got;
  do got = read(pipefd[0], &exec_err, sizeof exec_err);
  while (got < 0 && errno == EINTR);
  close(pipefd[0]);
  int ws;
  pid_t w;
  do w = waitpid(pid, &ws, 0);
  while (w < 0 && errno == EINTR);
  if (got == (ssize_t)sizeof exec_err) {
    fprintf(stderr, "kd trace: cannot run '%s': %s\n", argv[0], strerror(exec_err));
    return 1;
  }
  if (w < 0) {
    fprintf(stderr, "kd trace: cannot wait for '%s': %s\n", argv[0], strerror(errno));
    return 1;
  }
  if (WIFSIGNALED(ws)) {
    fprintf(stderr, "kd trace: '%s' was killed by signal %d (%s); nothing written\n", argv[0],
            WTERMSIG(ws), strsignal(WTERMSIG(ws)));
    return 1;
  }
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
    fprintf(stderr, "kd trace: '%s' failed (exit status %d); nothing written\n", argv[0],
            WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    return 1;
  }
  return 0;
}

int kd_cmd_trace(int argc, char **argv) {
  const char *output = NULL;
  int i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      trace_usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "kd trace: %s needs a file name\n", argv[i]);
        trace_usage(stderr);
        return 2;
      }
      output = argv[++i];
    } else if (!strncmp(argv[i], "-o", 2)) {
      output = argv[i] + 2;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "kd trace: unknown option '%s'\n", argv[i]);
      trace_usage(stderr);
      return 2;
    } else {
      break; /* the program, without "--" */
    }
  }
  if (!output || !*output) {
    fprintf(stderr, "kd trace: missing -o FILE (where to write the allow-list header)\n");
    trace_usage(stderr);
    return 2;
  }
  if (i >= argc) {
    fprintf(stderr, "kd trace: missing the program to run (after --)\n");
    trace_usage(stderr);
    return 2;
  }
  char **prog = argv + i;

  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char records[4096];
  if (snprintf(records, sizeof records, "%s/kd-trace-XXXXXX", dir) >= (int)sizeof records) {
    fprintf(stderr, "kd trace: TMPDIR is too long\n");
    return 1;
  }
  int fd = mkstemp(records);
  if (fd < 0) {
    fprintf(stderr, "kd trace: cannot make a scratch file in '%s': %s\n", dir, strerror(errno));
    return 1;
  }
  close(fd);

  trace_recs r = {NULL, 0, 0};
  int rc = run_program(prog, records);
  if (rc == 0) rc = read_records(records, &r);
  unlink(records);
  if (rc == 0 && r.n == 0) {
    fprintf(stderr,
            "kd trace: '%s' recorded no kernel calls (does it call operators through "
            "kdispatch?); nothing written\n",
            prog[0]);
    rc = 1;
  }
  if (rc == 0) {
    recs_merge(&r);
    rc = write_output(output, &r, prog);
  }
  recs_free(&r);
  return rc;
}
