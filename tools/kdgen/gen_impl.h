/*
 * gen_impl.h: what kdgen's writers share: a growing text buffer, files written
 * only when they change, and the C view of schema types (docs/CODEGEN.md).
 */
#ifndef KDGEN_GEN_IMPL_H
#define KDGEN_GEN_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "gen.h"

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
 * boxed value becomes it (ops/src/gen_support.h, kd__box_kind). */
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
  const char *box_kind;  /* KD__BOX_* name for the boxed adapter */
} kdg_ctype;

kdg_ckind kdg_ckind_of(const kd_type *type);
const kdg_ctype *kdg_ctype_of(kdg_ckind kind);

#endif
