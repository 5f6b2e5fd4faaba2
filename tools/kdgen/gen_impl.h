/*
 * gen_impl.h: what kdgen's writers share: a growing text buffer, files written
 * only when they change, and the C view of schema types (docs/CODEGEN.md).
 */
#ifndef KDGEN_GEN_IMPL_H
#define KDGEN_GEN_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "gen.h"
#include "model.h"

typedef struct kdg_buf {
  char *data;
  size_t len, cap;
  bool failed; /* out of memory: every later printf is ignored */
} kdg_buf;

void kdg_buf_init(kdg_buf *b);
void kdg_buf_free(kdg_buf *b);
void kdg_printf(kdg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes b to path unless the file already holds exactly these bytes. */
int kdg_write_file(const char *path, const kdg_buf *b, kdg_diag *d);

/* How one schema type travels: its C parameter, its kd_arg member, and how a
 * boxed value becomes it (ops/src/gen_support.h, kdk__box_kind). */
typedef enum kdg_ckind {
  KDG_C_TENSOR,
  KDG_C_OPT_TENSOR,
  KDG_C_TENSOR_LIST,
  KDG_C_OPT_TENSOR_LIST,
  KDG_C_INT,
  KDG_C_OPT_INT,
  KDG_C_FLOAT,
  KDG_C_OPT_FLOAT,
  KDG_C_BOOL,
  KDG_C_OPT_BOOL,
  KDG_C_SCALAR,
  KDG_C_OPT_SCALAR,
  KDG_C_DTYPE,
  KDG_C_OPT_DTYPE,
  KDG_C_LAYOUT,
  KDG_C_OPT_LAYOUT,
  KDG_C_DEVICE,
  KDG_C_OPT_DEVICE,
  KDG_C_MF,
  KDG_C_OPT_MF,
  KDG_C_INTS,
  KDG_C_FLOATS,
  KDG_C_BOOLS,
  KDG_C_STR,
  KDG_C_OPT_STR,
  KDG_C_VALUE,
  KDG_C_COUNT
} kdg_ckind;

typedef struct kdg_ctype {
  const char *param;     /* C parameter type: "kd_tensor *", "const int64_t *" */
  const char *ret;       /* C output parameter type for a return, or NULL if unsupported */
  const char *box_kind;  /* KDK__BOX_* name for the boxed adapter */
} kdg_ctype;

kdg_ckind kdg_ckind_of(const kd_type *type);
const kdg_ctype *kdg_ctype_of(kdg_ckind kind);

/* ---- The C view of one function (gen.c) ------------------------------------ */

#define KDG_MAXP 64
#define KDG_MAXR 8

typedef struct kdg_cparam {
  char name[80]; /* the C name (keywords get a trailing '_') */
  kdg_ckind kind;
  const kd_argument *arg;
  bool is_out;         /* an out argument (Tensor(a!) of an out= function) */
  bool scalar_default; /* Scalar with a default: NULL means the default */
} kdg_cparam;

typedef struct kdg_cret {
  char name[80];
  kdg_ckind kind;
  int alias_of; /* index of the argument it aliases, or -1 */
} kdg_cret;

typedef struct kdg_cfunc {
  const kdg_func *f;
  kdg_cparam p[KDG_MAXP];
  int np;
  kdg_cret r[KDG_MAXR];
  int nr;
  int nouts;           /* output parameters: returns with alias_of < 0 */
  char sig[2048];      /* "(Tensor, Scalar) -> Tensor" */
  char qualified[256]; /* "aten::add.Tensor": ns::name[.overload] */
  char ename[200];     /* the entry point's name without "kd_" */
  int bad_alias;       /* the first return aliasing what no argument has, or -1 */
  int bad_ret;         /* the first output kdgen cannot return, or -1 */
  bool ok;
} kdg_cfunc;

/* Fills *c, the C view of f in namespace ns, reporting nothing: false only
 * when f has more arguments or returns than KDG_MAXP / KDG_MAXR. What the
 * writers cannot generate is left in bad_alias and bad_ret for the caller to
 * judge (c->ok stays false). */
bool kdg_fill_cfunc(const kdg_func *f, const char *ns, kdg_cfunc *c);

/* Fills *c, the C view of f in namespace ns ("aten"). An unsupported type or
 * an alias no argument has is reported through d (at path:f->line); returns
 * c->ok. */
bool kdg_build_cfunc(const kdg_func *f, const char *ns, kdg_cfunc *c, kdg_diag *d, const char *path);

/* SEP, then "kd_tensor *NAME": one parameter of kind's C type. */
void kdg_print_param(kdg_buf *b, const char *sep, kdg_ckind kind, const char *name);
/* "kd_tensor *self, const kd_scalar *alpha, kd_tensor **out" (with_outs: the
 * output parameters of the returns that alias no argument); "void" when none. */
void kdg_print_params(kdg_buf *b, const kdg_cfunc *c, bool with_outs);
/* "self, alpha, out" */
void kdg_print_call_args(kdg_buf *b, const kdg_cfunc *c, bool with_outs);
/* Statements filling kd_arg kdg_a[i] from the typed parameters. */
void kdg_emit_pack_args(kdg_buf *b, const kdg_cfunc *c);
/* The expression reading kd_arg a[i] as p's C type. */
void kdg_emit_unpack_arg(kdg_buf *b, const kdg_cparam *p, int i, const char *a);
/* A C expression for a Scalar argument's default; false when it has none. */
bool kdg_scalar_default_expr(const kd_argument *a, char *buf, size_t cap);
/* Statements replacing NULL Scalars that have defaults by their defaults. */
void kdg_emit_scalar_defaults(kdg_buf *b, const kdg_cfunc *c);
/* Statements rejecting NULL output pointers (KD_EINVAL naming fname, or the
 * generated local `kdg_fn` when fname is NULL) and setting tensor outputs to
 * NULL. */
void kdg_emit_check_outs(kdg_buf *b, const kdg_cfunc *c, const char *fname);
/* The entry point kd_<ename> and kd_redispatch_<cname> around one packer:
 * look the operator up by c->qualified and call it unboxed. */
void kdg_emit_entry(kdg_buf *b, const kdg_cfunc *c);
/* kd_status kdk__boxed_<cname>(call, stack, fn): the boxed adapter. */
void kdg_emit_boxed_adapter(kdg_buf *b, const kdg_cfunc *c);
/* "static kd_status UNAME(call, a, r)": the kd_unboxed_fn around `fn`, a C
 * function with c's parameters. device_arg >= 0: a BackendSelect kernel
 * instead (fn unused). */
void kdg_emit_unboxed_wrapper(kdg_buf *b, const kdg_cfunc *c, const char *fn, int device_arg,
                              const char *uname);
/* "/" "* NS::SCHEMA *" "/" */
void kdg_schema_comment(kdg_buf *b, const kdg_cfunc *c, const char *ns);

/* The structured group's out function when f is structured or delegates to
 * a structured out function; NULL otherwise. */
const kdg_func *kdg_structured_out(const kdg_func *f);
/* The C type of a precomputed field's schema type, NULL when unsupported. */
const char *kdg_precomputed_ctype(const char *schema_type);
/* True when such a field reaches the impl by const pointer (DimVector). */
bool kdg_precomputed_byref(const char *schema_type);
/* The precomputed line of `out` replacing argument `arg`, or NULL. */
const kdg_precomputed *kdg_replaced_by(const kdg_func *out, const char *arg);
/* The same in the n lines of v ("" for arg: the line that adds fields). */
const kdg_precomputed *kdg_replaced_in(const kdg_precomputed *v, size_t n, const char *arg);

/* One structured wrapper: function c of the group whose out function is oc,
 * built on meta `meta` (and its precompute struct `pre`, "" when none), then
 * `impl` (NULL: meta only, as the Meta key does). */
typedef struct kdg_swrap {
  const kdg_cfunc *c;  /* the function wrapped: functional, inplace or out */
  const kdg_cfunc *oc; /* the group's structured out function */
  const char *fn;      /* the wrapper's name */
  const char *meta;    /* "kdk_meta_add_Tensor" */
  const char *pre;     /* "kdk_precompute_..." or "" */
  bool iter;           /* structured_inherits: TensorIteratorBase */
  const char *impl;    /* "kdk_native_add_out", or NULL */
  bool meta_device;    /* functional outputs on the Meta device */
} kdg_swrap;
/* The end of a structured wrapper of c, after its impl call: finish the
 * iterator (iter) and the structured run, release them, hand a functional
 * variant's nout outputs over, return the status and close the function. */
void kdg_emit_structured_finish(kdg_buf *b, const kdg_cfunc *c, int nout, bool iter);
/* Emits "kd_status FN(params) {...}"; a delegate whose arguments differ from
 * the out function's is reported through d at path. Returns 0 or -1. */
int kdg_emit_structured_wrapper(kdg_buf *b, const kdg_swrap *w, kdg_diag *d, const char *path);

#endif
