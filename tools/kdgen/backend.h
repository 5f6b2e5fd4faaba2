/*
 * backend.h: kdgen's model of an out-of-tree backend's YAML file (torch_musa's
 * format, docs/CODEGEN.md "Backend YAML").
 *
 * A backend file lists the upstream operators a backend implements, mostly
 * by bare name ("- func: add.out"); every property not written comes from the
 * upstream entry of the same name in the source file (PyTorch's or libkdops'
 * native_functions.yaml). kdg_backend_load resolves each entry against the
 * source, checks what the backend may say, and classifies it (strategy and
 * kind) as torch_musa's generator does. Everything is owned by the
 * kdg_backend and freed by kdg_backend_free, except the upstream functions
 * entries point at, which the source kdg_file owns (keep it alive).
 */
#ifndef KDGEN_BACKEND_H
#define KDGEN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "model.h"

/* How much of upstream's implementation the backend reuses (the seed's
 * table): meta / impl from upstream (Legacy), upstream meta + backend impl
 * (LegacyMeta), backend meta + impl or a backend unstructured kernel
 * (Customized), or no kernel for the backend's main key (none). */
typedef enum kdg_strategy {
  KDG_STRATEGY_NONE,
  KDG_STRATEGY_LEGACY,
  KDG_STRATEGY_LEGACY_META,
  KDG_STRATEGY_CUSTOMIZED
} kdg_strategy;

typedef struct kdg_backend_opts {
  const char *key;    /* the backend's key as written in dispatch: ("PrivateUse1", default) */
  const char *name;   /* plugin/device name ("fakedev"); default: lower-case key */
  const char *prefix; /* C prefix of the backend's functions ("musa_"); default name + "_" */
  const char *ns;     /* namespace of operators the backend defines; default name */
} kdg_backend_opts;

typedef struct kdg_bentry {
  int line;              /* of "- func:" in the backend file */
  char *written;         /* "add.out" as written (or the full schema's name.overload) */
  kdg_func *up;          /* the upstream function (owned by the source kdg_file), or the new
                            operator's kdg_func (owned by the backend) */
  bool is_new;           /* a full schema upstream lacks: a new operator in opts.ns */
  bool is_autogen;       /* an operator upstream generates (autogen: of up_autogen_of); up is
                            its derived kdg_func, owned by the backend (in own) */
  kdg_func *autogen_of;  /* for is_autogen: the upstream entry whose autogen: names it */
  kdg_strategy strategy; /* for the backend's main key */
  bool structured;       /* KIND: the backend runs it structured */
  char *kernel;          /* the backend's kernel name for its main key, or NULL */
  char *structured_inherits; /* Customized meta: as written, or NULL */
  kdg_precomputed *precomputed;
  size_t nprecomputed;
  kdg_dispatch *dispatch; /* the entry's dispatch: as written (flattened: one per key) */
  size_t ndispatch;
  /* device_check / device_guard as written (NULL / -1 when absent: upstream's apply) */
  char *device_check;
  int device_guard;
  kdg_func *group_out;   /* for a delegate (functional/inplace) that follows its structured
                            group: the group's out= function upstream; else NULL */
} kdg_bentry;

typedef struct kdg_backend {
  char *path;
  kdg_backend_opts opts; /* strings copied */
  kdg_bentry *entries;   /* in file order */
  size_t nentries;
  kdg_file own; /* the backend file's new operators (and derived autogen operators) as
                   kdg_funcs (validated like upstream) */
} kdg_backend;

/* Reads the backend file `path` and resolves it against `source` (loaded and
 * validated by the caller; it must outlive *out). `o` may be NULL (all
 * defaults); its strings are copied. Every problem is reported through `d` as
 * "FILE:LINE: error: ..."; returns 0 when there was none, -1 otherwise. *out
 * is filled in either case (entries that failed to resolve keep up == NULL and
 * strategy none) and must be freed with kdg_backend_free. */
int kdg_backend_load(const char *path, kdg_file *source, const kdg_backend_opts *o,
                     kdg_backend *out, kdg_diag *d);

/* Frees what *b owns and zeroes it; NULL or a zeroed backend is fine. */
void kdg_backend_free(kdg_backend *b);

/* The strategy of the entry's kernel for `key`, one of the backend's keys
 * (its main key gives e->strategy). For the other keys (SparsePrivateUse1,
 * QuantizedPrivateUse1, ...) torch_musa's rule: Legacy when upstream's kernel
 * for the same functionality on CPU or CUDA (SparseCPU, SparseCUDA, ...) has
 * the same name, else Customized; always Customized for new and generated
 * operators; none when the entry names no kernel for `key`. */
kdg_strategy kdg_bentry_key_strategy(const kdg_backend *b, const kdg_bentry *e, const char *key);

/* "Legacy", "LegacyMeta", "Customized", "none" (static strings). */
const char *kdg_strategy_name(kdg_strategy s);

/* Writes the classification (one "NAME STRATEGY KIND" line per entry, in file
 * order, then "STRATEGY: COUNT" lines) to `to`. */
void kdg_backend_print_classification(const kdg_backend *b, FILE *to);

#endif
