/*
 * startup.c: what every copy of libkdispatch does when it is loaded.
 *
 * 1. Second-copy detection. Two copies of the library in one process (a
 *    program linked with the static archive that dlopens a plugin linked
 *    with libkdispatch.so, or a shared and a static copy) are two registries:
 *    what one registers, the other never sees. The first copy to start puts
 *    "pid:address:file" into the environment variable KDISPATCH_INSTANCE
 *    (the address of a static object of that copy, the file it lives in);
 *    a later copy in the same process finds another address there and warns
 *    with kd_warn, naming both files. The environment is the one rendezvous
 *    a static copy, whose symbols may not be exported, shares with a shared
 *    one. A child process (another pid) overwrites the inherited value.
 * 2. KD_BACKENDS=path1:path2 loads those plugins (kd_backend_load_list);
 *    each failure is warned, and the host keeps running. Only the first
 *    copy does.
 *
 * status.c refers to kd__startup, so that a static link keeps this file.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend/backend_impl.h"
#include "core/internal.h"

#define KD__INSTANCE_ENV "KDISPATCH_INSTANCE"

static const char instance_marker = 1;

static const char *this_copy(void) {
  Dl_info info;
  if (dladdr(&instance_marker, &info) && info.dli_fname && info.dli_fname[0])
    return info.dli_fname;
  return "(this program)";
}

int kd__instance_check(void) {
  char mine[64];
  snprintf(mine, sizeof mine, "%ld:%p:", (long)getpid(), (const void *)&instance_marker);
  const char *prev = getenv(KD__INSTANCE_ENV);
  if (prev && !strncmp(prev, mine, strchr(mine, ':') - mine + 1)) {
    /* This process already has a copy: the same one (a second check) or
     * another. */
    if (!strncmp(prev, mine, strlen(mine))) return 0;
    const char *file = strchr(strchr(prev, ':') + 1, ':');
    kd_warn("two copies of libkdispatch are loaded in this process: %s and %s; each has its "
            "own registry, so what is registered through one is not seen by the other (link "
            "the program and its plugins against the shared libkdispatch)",
            file ? file + 1 : "?", this_copy());
    return 1;
  }
  char value[4200];
  snprintf(value, sizeof value, "%s%s", mine, this_copy());
  setenv(KD__INSTANCE_ENV, value, 1);
  return 0;
}

__attribute__((constructor)) void kd__startup(void) {
  /* A second copy leaves KD_BACKENDS to the first. */
  if (kd__instance_check()) return;
  const char *list = getenv("KD_BACKENDS");
  if (list && *list) kd_backend_load_list(list);
}
