/*
 * gen.h: kdgen's writers (gen_*.c): from a validated model to C files.
 */
#ifndef KDGEN_GEN_H
#define KDGEN_GEN_H

#include "model.h"

/* Writes everything under out_dir (include/kd/ops/NAME.h, ops/NAME_native.h, ops/gen_FILE.c),
 * for operators of namespace ns (NULL: "aten").
 * A file is rewritten only when its bytes change. Problems (an unsupported
 * type, a name clash) are reported through d. Returns 0 or -1. */
int kdg_generate(const kdg_file *f, const char *ns, const char *out_dir, kdg_diag *d);

#endif
