/*
 * gen_backend.h: kdgen's generation for an out-of-tree backend
 * (docs/CODEGEN.md, "Backends"): from a loaded backend YAML (backend.h) to
 * the author header, the wrappers, the registration table, the direct calls
 * and the plugin's entry point.
 */
#ifndef KDGEN_GEN_BACKEND_H
#define KDGEN_GEN_BACKEND_H

#include "backend.h"
#include "model.h"

/* Writes, under out_dir (created when missing; a file is rewritten only when
 * its bytes change):
 *   <name>_functions.h  what the author writes (C signatures, schemas as comments)
 *   <name>_direct.h     the backend's direct calls (kd_<name>_<cname>)
 *   <name>_plugin.c     wrappers, registration table, direct calls, KD_PLUGIN entry
 *   <name>_entries.txt  one line per backend entry: generated, or why not
 * `native` is libkdops' own YAML (what it implements: kdk_meta_*, kdk_native_*,
 * the kd_stubs of its structured out variants), or NULL: then no Legacy
 * entry can be bound. Entries that cannot be bound are reported as notes
 * ("FILE:LINE: note: ...", not errors) and listed; the rest is generated.
 * Returns 0, or -1 after reporting errors through d (nothing is written then). */
int kdg_generate_backend(const kdg_backend *b, const kdg_file *native, const char *out_dir,
                         kdg_diag *d);

#endif
