/*
 * model.h: kdgen's in-memory model of a native_functions.yaml file.
 *
 * load.c fills it from YAML (libyaml), validate.c checks it and links groups,
 * gen_*.c write C from it. Everything is owned by the kdg_file and freed by
 * kdg_file_free. Strings are NUL-terminated heap copies.
 */
#ifndef KDGEN_MODEL_H
#define KDGEN_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "kd/schema.h"

/* PyTorch's SchemaKind, from the schema alone. */
typedef enum kdg_kind {
  KDG_FUNCTIONAL = 0, /* no mutable argument */
  KDG_INPLACE = 1,    /* name ends in '_' and self is Tensor(a!) */
  KDG_OUT = 2,        /* keyword-only Tensor(a!) arguments returned */
  KDG_MUTABLE = 3,    /* other mutable arguments */
  KDG_SCRATCH = 4,    /* out arguments named scratch_* */
} kdg_kind;

#define KDG_VARIANT_FUNCTION 1u
#define KDG_VARIANT_METHOD 2u

/* One "KEY: kernel" pair of a dispatch table ("CPU, CUDA: add_out" gives two). */
typedef struct kdg_dispatch {
  char *key;    /* as written: "CPU", "CompositeImplicitAutograd", ... */
  char *kernel; /* the kernel's name as written */
  int line;
} kdg_dispatch;

/* One "arg -> type name, type name" line of precomputed. */
typedef struct kdg_precomputed_field {
  char *type; /* "int", "bool", ... (a schema type) */
  char *name;
} kdg_precomputed_field;

typedef struct kdg_precomputed {
  char *replaces; /* the argument replaced, or "" for "add ..." lines */
  kdg_precomputed_field *fields;
  size_t nfields;
  int line;
} kdg_precomputed;

typedef struct kdg_group kdg_group;

/* One key of an entry as written, with its line (for messages). */
typedef struct kdg_key {
  char *name;
  int line;
} kdg_key;

typedef struct kdg_func {
  int line;          /* of "- func:" */
  char *func;        /* the schema text */
  kd_schema *schema; /* parsed; owned */
  char *name;        /* "add_" (without namespace) */
  char *overload;    /* "Tensor", or "" */
  char *cname;       /* "add_Tensor_": the C stem, kdg_cname (docs/CODEGEN.md) */
  char *base;        /* "add": name without a trailing '_' (the header it lives in) */
  kdg_kind kind;

  unsigned variants; /* KDG_VARIANT_* (default: function) */
  kdg_dispatch *dispatch;
  size_t ndispatch;
  bool has_dispatch; /* a dispatch: key was written (even if empty) */
  bool structured;
  char *structured_delegate; /* "add.out" or NULL */
  char *structured_inherits; /* "TensorIteratorBase" or NULL */
  kdg_precomputed *precomputed;
  size_t nprecomputed;
  char *device_check; /* "NoCheck", "ExactSame" or NULL */
  bool device_guard;  /* default true */
  bool manual_kernel_registration;
  bool manual_cpp_binding;
  bool use_const_ref_for_mutable_tensors;
  char **tags;
  size_t ntags;
  char **autogen; /* names of operators to generate ("add.out") */
  size_t nautogen;
  char **cpp_no_default_args;
  size_t ncpp_no_default_args;
  char *python_module;
  char *category_override;
  bool has_ufunc_inner_loop; /* ufunc_inner_loop: accepted, not generated */
  /* kdgen extension (docs/CODEGEN.md): the dispatch stubs a structured out
   * entry's impl calls ("add_stub"), so that a backend reusing the impl
   * (Legacy) knows which loops to register. */
  char **kd_stubs;
  size_t nkd_stubs;

  /* Added by the loader: what was written, for validation messages. */
  char *variants_text; /* the variants: value as written, or NULL */
  kdg_key *keys;       /* every key of the entry, in order */
  size_t nkeys;
  char *qualified;     /* "add.Tensor" or "relu": name[.overload], for messages */

  /* Set by validation. */
  struct kdg_func *delegate; /* the out variant named by structured_delegate */
  kdg_group *group;          /* NULL when the function is in no group */
} kdg_func;

/* Functions sharing a signature (PyTorch's NativeFunctionsGroup): any of
 * functional / inplace / mutable, and an out variant. */
struct kdg_group {
  char *signature; /* a key: the functional schema's name + args, for messages */
  kdg_func *functional;
  kdg_func *inplace;
  kdg_func *mutable_;
  kdg_func *out;
  bool structured; /* out->structured */
};

typedef struct kdg_file {
  char *path;
  kdg_func *funcs; /* in file order */
  size_t nfuncs;
  kdg_group *groups;
  size_t ngroups;
  char **known_tags; /* from the tags file; NULL when none was given */
  size_t nknown_tags;
} kdg_file;

/* Diagnostics: "FILE:LINE: error: reason" lines, counted. */
typedef struct kdg_diag {
  size_t errors;
  size_t max_print; /* 0: print all */
  size_t notes;     /* "note:" lines: what was written but is not generated */
} kdg_diag;

void kdg_error(kdg_diag *d, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "FILE:LINE: note: reason" on stderr, counted in d->notes: something the
 * file asks for that kdgen does not generate, which is not an error (the
 * exit status stays 0). */
void kdg_note(kdg_diag *d, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reads `path` (and `tags_path` when not NULL) into *out. Every problem is
 * reported through `d`; returns 0 when none was found, -1 otherwise (out is
 * still filled with what could be read and must be freed). */
int kdg_load(const char *path, const char *tags_path, kdg_file *out, kdg_diag *d);

/* Reads a backend file (backend.h) as kdg_funcs: like kdg_load, but an entry's
 * func may be a bare "name[.overload]"; such a function has name, overload,
 * qualified, cname and base set and schema == NULL. Keys are read as in
 * kdg_load (backend.c checks which ones a backend may write). */
int kdg_load_backend_entries(const char *path, kdg_file *out, kdg_diag *d);

/* Whether `key` is a dispatch key an entry may name: the runtime's keys and
 * PyTorch's (PrivateUse1, SparsePrivateUse1, XPU, ...). */
bool kdg_known_dispatch_key(const char *key);

/* Checks keys' values, groups, delegates, tags, names; links groups. */
int kdg_validate(kdg_file *f, kdg_diag *d);

void kdg_file_free(kdg_file *f);

/* Looks up a function by "name.overload" or "name". */
kdg_func *kdg_find(const kdg_file *f, const char *qualified);

/* The line of `key` in fn's entry, or fn->line when the key was not written. */
int kdg_key_line(const kdg_func *fn, const char *key);

/* The C stem of operator name.overload (docs/CODEGEN.md, "Names"), in a
 * kd_host_malloc'd string the caller frees (NULL when out of memory):
 * a private name's leading '_' becomes "internal_" (_softmax ->
 * internal_softmax), a dunder __and__ becomes dunder_and, and the in-place
 * trailing '_' moves to the end (add_.Tensor -> add_Tensor_). Different
 * operators can still meet on one stem (add_.Tensor, add.Tensor_): the
 * validator rejects that. */
char *kdg_cname(const char *name, const char *overload);

/* The entry point's name without "kd_": cname, or cname + "_op" when cname
 * is a type name of the core API ("stack": kd_stack is the boxed stack). */
void kdg_entry_name(char *dst, size_t cap, const char *cname);
/* The lower-case backend names of direct calls (kd_<prefix>_<cname>),
 * NULL-terminated. */
extern const char *const kdg_direct_prefixes[];

#endif
