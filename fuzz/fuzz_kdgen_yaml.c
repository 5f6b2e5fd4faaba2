/*
 * fuzz_kdgen_yaml.c: kdgen's loading (libyaml) and validation
 * (tools/kdgen/load.c, validate.c) of native_functions.yaml text, and the
 * backend loader (tools/kdgen/backend.c) of a backend's YAML against it.
 *
 * Input: the YAML of a native_functions.yaml, optionally followed by a NUL
 * byte and the YAML of a tags file (tags.yaml format), optionally followed by
 * a second NUL byte and the YAML of a backend file (torch_musa's format; with
 * it, an empty tags part means no tags file). kdgen reads files, so each part
 * is written to a temporary file made once (under $TMPDIR or /tmp) and
 * removed at exit. Then, as `kdgen --validate [--tags]` does: kdg_load,
 * kdg_validate when loading found nothing wrong; with a backend part and a
 * clean upstream, kdg_backend_load as `kdgen --backend ... --validate` does;
 * kdg_backend_free, kdg_file_free. Invariants: each returns 0 exactly when it
 * reported no error, every backend entry of a clean load is resolved, and
 * nothing leaks (LeakSanitizer). Diagnostics go to stderr (run.sh closes it:
 * -close_fd_mask=2).
 */
#include <unistd.h>

#include "fuzz.h"
#include "backend.h"
#include "model.h"

static char g_yaml[256], g_tags[256], g_backend[256];

static void remove_files(void) {
  if (g_yaml[0]) unlink(g_yaml);
  if (g_tags[0]) unlink(g_tags);
  if (g_backend[0]) unlink(g_backend);
}

static void make_temp(char *path, size_t cap, const char *what) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, cap, "%s/kd-fuzz-%s-XXXXXX", dir && *dir ? dir : "/tmp", what);
  int fd = mkstemp(path);
  FUZZ_CHECK(fd >= 0, "cannot make a temporary file %s", path);
  close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  make_temp(g_yaml, sizeof g_yaml, "yaml");
  make_temp(g_tags, sizeof g_tags, "tags");
  make_temp(g_backend, sizeof g_backend, "backend");
  atexit(remove_files);
  return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t n) {
  FILE *f = fopen(path, "wb");
  FUZZ_CHECK(f, "cannot write %s", path);
  FUZZ_CHECK(fwrite(data, 1, n, f) == n || n == 0, "cannot write %s", path);
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t main_len = nul ? (size_t)(nul - data) : size;
  const uint8_t *nul2 = nul ? memchr(nul + 1, 0, size - main_len - 1) : NULL;
  size_t tags_len = nul ? (nul2 ? (size_t)(nul2 - nul - 1) : size - main_len - 1) : 0;
  bool use_tags = nul && (!nul2 || tags_len > 0);
  write_file(g_yaml, data, main_len);
  if (nul) write_file(g_tags, nul + 1, tags_len);
  if (nul2) write_file(g_backend, nul2 + 1, size - (size_t)(nul2 + 1 - data));

  kdg_diag diag = {0, 0, 0};
  kdg_file f;
  int rc = kdg_load(g_yaml, use_tags ? g_tags : NULL, &f, &diag);
  FUZZ_CHECK((rc == 0) == (diag.errors == 0), "kdg_load returned %d with %zu errors", rc,
             diag.errors);
  if (rc == 0) {
    rc = kdg_validate(&f, &diag);
    FUZZ_CHECK((rc == 0) == (diag.errors == 0), "kdg_validate returned %d with %zu errors", rc,
               diag.errors);
  }
  if (rc == 0 && nul2) {
    kdg_backend b;
    rc = kdg_backend_load(g_backend, &f, NULL, &b, &diag);
    FUZZ_CHECK((rc == 0) == (diag.errors == 0), "kdg_backend_load returned %d with %zu errors",
               rc, diag.errors);
    for (size_t i = 0; rc == 0 && i < b.nentries; i++)
      FUZZ_CHECK(b.entries[i].up != NULL, "entry %zu (line %d) unresolved without an error", i,
                 b.entries[i].line);
    kdg_backend_free(&b);
  }
  kdg_file_free(&f);
  return 0;
}
