/*
 * gen_types.c: the C view of schema types (the table of docs/CODEGEN.md).
 */
#include "gen_impl.h"

static const kdg_ctype ctypes[KDG_C_COUNT] = {
    [KDG_C_TENSOR] = {"kd_tensor *", "kd_tensor **", "KDK__BOX_TENSOR"},
    [KDG_C_OPT_TENSOR] = {"kd_tensor *", "kd_tensor **", "KDK__BOX_OPT_TENSOR"},
    [KDG_C_TENSOR_LIST] = {"kd_tensors", "kd_tensor_list *", "KDK__BOX_TENSOR_LIST"},
    [KDG_C_OPT_TENSOR_LIST] = {"kd_tensors", NULL, "KDK__BOX_OPT_TENSOR_LIST"},
    [KDG_C_INT] = {"int64_t", "int64_t *", "KDK__BOX_INT"},
    [KDG_C_OPT_INT] = {"const int64_t *", NULL, "KDK__BOX_OPT_INT"},
    [KDG_C_FLOAT] = {"double", "double *", "KDK__BOX_FLOAT"},
    [KDG_C_OPT_FLOAT] = {"const double *", NULL, "KDK__BOX_OPT_FLOAT"},
    [KDG_C_BOOL] = {"bool", "bool *", "KDK__BOX_BOOL"},
    [KDG_C_OPT_BOOL] = {"const bool *", NULL, "KDK__BOX_OPT_BOOL"},
    [KDG_C_SCALAR] = {"const kd_scalar *", "kd_scalar *", "KDK__BOX_SCALAR"},
    [KDG_C_OPT_SCALAR] = {"const kd_scalar *", NULL, "KDK__BOX_OPT_SCALAR"},
    [KDG_C_DTYPE] = {"kd_dtype", NULL, "KDK__BOX_DTYPE"},
    [KDG_C_OPT_DTYPE] = {"const kd_dtype *", NULL, "KDK__BOX_OPT_DTYPE"},
    [KDG_C_LAYOUT] = {"kd_layout", NULL, "KDK__BOX_LAYOUT"},
    [KDG_C_OPT_LAYOUT] = {"const kd_layout *", NULL, "KDK__BOX_OPT_LAYOUT"},
    [KDG_C_DEVICE] = {"kd_device", NULL, "KDK__BOX_DEVICE"},
    [KDG_C_OPT_DEVICE] = {"const kd_device *", NULL, "KDK__BOX_OPT_DEVICE"},
    [KDG_C_MF] = {"kd_memory_format", NULL, "KDK__BOX_MF"},
    [KDG_C_OPT_MF] = {"const kd_memory_format *", NULL, "KDK__BOX_OPT_MF"},
    [KDG_C_INTS] = {"kd_ints", NULL, "KDK__BOX_INTS"},
    [KDG_C_FLOATS] = {"kd_floats", NULL, "KDK__BOX_FLOATS"},
    [KDG_C_BOOLS] = {"kd_bools", NULL, "KDK__BOX_BOOLS"},
    [KDG_C_STR] = {"const char *", NULL, "KDK__BOX_STR"},
    [KDG_C_OPT_STR] = {"const char *", NULL, "KDK__BOX_OPT_STR"},
    [KDG_C_VALUE] = {"const kd_value *", NULL, "KDK__BOX_VALUE"},
};

const kdg_ctype *kdg_ctype_of(kdg_ckind kind) { return &ctypes[kind]; }

static kdg_ckind plain(kd_type_kind k, bool opt) {
  switch (k) {
  case KD_TYPE_TENSOR: return opt ? KDG_C_OPT_TENSOR : KDG_C_TENSOR;
  case KD_TYPE_INT:
  case KD_TYPE_SYMINT:
  case KD_TYPE_DEVICE_INDEX: return opt ? KDG_C_OPT_INT : KDG_C_INT;
  case KD_TYPE_FLOAT: return opt ? KDG_C_OPT_FLOAT : KDG_C_FLOAT;
  case KD_TYPE_BOOL: return opt ? KDG_C_OPT_BOOL : KDG_C_BOOL;
  case KD_TYPE_SCALAR: return opt ? KDG_C_OPT_SCALAR : KDG_C_SCALAR;
  case KD_TYPE_SCALAR_TYPE: return opt ? KDG_C_OPT_DTYPE : KDG_C_DTYPE;
  case KD_TYPE_LAYOUT: return opt ? KDG_C_OPT_LAYOUT : KDG_C_LAYOUT;
  case KD_TYPE_DEVICE: return opt ? KDG_C_OPT_DEVICE : KDG_C_DEVICE;
  case KD_TYPE_MEMORY_FORMAT: return opt ? KDG_C_OPT_MF : KDG_C_MF;
  case KD_TYPE_STR: return opt ? KDG_C_OPT_STR : KDG_C_STR;
  default: return KDG_C_VALUE;
  }
}

kdg_ckind kdg_ckind_of(const kd_type *type) {
  bool opt = false;
  if (kd_type_kind_of(type) == KD_TYPE_OPTIONAL) {
    opt = true;
    type = kd_type_element(type);
  }
  if (kd_type_kind_of(type) == KD_TYPE_LIST) {
    const kd_type *e = kd_type_element(type);
    kd_type_kind ek = kd_type_kind_of(e);
    if (ek == KD_TYPE_OPTIONAL && kd_type_kind_of(kd_type_element(e)) == KD_TYPE_TENSOR)
      return opt ? KDG_C_VALUE : KDG_C_OPT_TENSOR_LIST;
    switch (ek) {
    case KD_TYPE_TENSOR: return opt ? KDG_C_VALUE : KDG_C_TENSOR_LIST;
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT: return KDG_C_INTS;
    case KD_TYPE_FLOAT: return KDG_C_FLOATS;
    case KD_TYPE_BOOL: return KDG_C_BOOLS;
    default: return KDG_C_VALUE;
    }
  }
  return plain(kd_type_kind_of(type), opt);
}
