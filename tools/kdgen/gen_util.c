/*
 * gen_util.c: kdgen's output buffer and write-if-changed files.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_impl.h"
#include "kd/memory.h"

void kdg_buf_init(kdg_buf *b) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->failed = false;
}

void kdg_buf_free(kdg_buf *b) {
  kd_host_free(b->data);
  kdg_buf_init(b);
}

void kdg_printf(kdg_buf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *p = kd_host_realloc(b->data, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->data = p;
    b->cap = cap;
  }
}

/* mkdir -p for the folders of `path` (not the last component). */
static int make_parents(const char *path) {
  char tmp[4096];
  size_t n = strlen(path);
  if (n >= sizeof tmp) return -1;
  memcpy(tmp, path, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return 0;
}

int kdg_write_file(const char *path, const kdg_buf *b, kdg_diag *d) {
  if (b->failed) {
    kdg_error(d, path, 0, "out of memory generating this file");
    return -1;
  }
  /* Unchanged bytes: leave the file (and its time) alone. */
  FILE *in = fopen(path, "rb");
  if (in) {
    bool same = true;
    size_t i = 0;
    char chunk[8192];
    size_t got;
    while (same && (got = fread(chunk, 1, sizeof chunk, in)) > 0) {
      if (i + got > b->len || memcmp(chunk, b->data + i, got) != 0) same = false;
      i += got;
    }
    fclose(in);
    if (same && i == b->len) return 0;
  }
  if (make_parents(path) != 0) {
    kdg_error(d, path, 0, "cannot create its folder: %s", strerror(errno));
    return -1;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *out = fopen(tmp, "wb");
  if (!out) {
    kdg_error(d, path, 0, "cannot write: %s", strerror(errno));
    return -1;
  }
  size_t put = b->len ? fwrite(b->data, 1, b->len, out) : 0;
  int bad = fclose(out) != 0 || put != b->len;
  if (bad || rename(tmp, path) != 0) {
    kdg_error(d, path, 0, "cannot write: %s", strerror(errno));
    remove(tmp);
    return -1;
  }
  return 0;
}
