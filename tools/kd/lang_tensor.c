/*
 * lang_tensor.c: tensor literals of the little language. A list literal
 * stays a list (kd_value LIST) until it meets a parameter whose schema type
 * is Tensor (or an element of Tensor[]); then it becomes a tensor here, as
 * torch.tensor(data) makes one:
 * - the shape is read from the first element at each depth; every list at
 *   a depth must have that length and every leaf must be at the same depth
 *   ("ragged" lists are errors, naming the dimension);
 * - leaves are numbers: bool, int, float, complex (a string, None, a tensor
 *   is an error); lists and tuples nest alike;
 * - the dtype: bool when every leaf is a bool, int64 when they are ints (and
 *   bools), the default float dtype (float32) when any is a float, the
 *   default complex dtype when any is complex; a literal with no elements
 *   ([] or [[], []]) is the default float dtype;
 * - at most KD_MAX_DIMS dimensions.
 * Tensors are made with the public tensor API (kd_tensor_from_data), on cpu.
 */
#include <stdlib.h>
#include <string.h>

#include "lang_impl.h"
#include "kd/memory.h"

static bool is_seq(const kd_value *v) {
  return v->tag == KD_VALUE_LIST || v->tag == KD_VALUE_TUPLE;
}

static bool is_number(const kd_value *v) {
  return v->tag == KD_VALUE_BOOL || v->tag == KD_VALUE_INT || v->tag == KD_VALUE_DOUBLE ||
         v->tag == KD_VALUE_COMPLEX;
}

static bool leaves_are_numbers(const kd_value *v, int depth) {
  if (depth > KD_MAX_DIMS) return false;
  size_t n = kd_value_list_size(v);
  for (size_t i = 0; i < n; i++) {
    const kd_value *e = kd_value_list_at(v, i);
    if (is_seq(e)) {
      if (!leaves_are_numbers(e, depth + 1)) return false;
    } else if (!is_number(e)) {
      return false;
    }
  }
  return true;
}

bool kdc_is_tensor_literal(const kd_value *v) { return is_seq(v) && leaves_are_numbers(v, 1); }

typedef struct literal {
  kdc_lerr *err;
  kdc_lpos pos;
  int ndim;
  int64_t sizes[KD_MAX_DIMS];
  bool any_float, any_complex, any_int;
  int64_t numel;
  /* Filling: */
  kd_dtype dtype;
  unsigned char *data;
  size_t itemsize;
  int64_t next;
} literal;

/* Checks the structure below `v` (at dimension `dim`) against the shape;
 * notes the kinds of leaves. */
static int check(literal *L, const kd_value *v, int dim) {
  if (dim == L->ndim) {
    if (is_seq(v))
      return kdc_lerr_set(L->err, L->pos,
                          "ragged nested list: expected a number at dim %d, found a %s", dim,
                          kdc_value_type_name(v));
    if (!is_number(v))
      return kdc_lerr_set(L->err, L->pos, "a tensor literal holds numbers, found %s",
                          kdc_value_type_name(v));
    if (v->tag == KD_VALUE_DOUBLE) L->any_float = true;
    if (v->tag == KD_VALUE_COMPLEX) L->any_complex = true;
    if (v->tag == KD_VALUE_INT) L->any_int = true;
    return 0;
  }
  if (!is_seq(v))
    return kdc_lerr_set(L->err, L->pos,
                        "ragged nested list: expected a list of length %lld at dim %d, found %s",
                        (long long)L->sizes[dim], dim, kdc_value_type_name(v));
  size_t n = kd_value_list_size(v);
  if ((int64_t)n != L->sizes[dim])
    return kdc_lerr_set(L->err, L->pos,
                        "ragged nested list: expected a list of length %lld at dim %d, found one "
                        "of length %zu",
                        (long long)L->sizes[dim], dim, n);
  for (size_t i = 0; i < n; i++)
    if (check(L, kd_value_list_at(v, i), dim + 1)) return -1;
  return 0;
}

static int fill(literal *L, const kd_value *v, int dim) {
  if (dim == L->ndim) {
    kd_scalar s;
    switch (v->tag) {
      case KD_VALUE_BOOL: s = kd_scalar_bool(v->u.b); break;
      case KD_VALUE_INT: s = kd_scalar_int(v->u.i); break;
      case KD_VALUE_DOUBLE: s = kd_scalar_double(v->u.d); break;
      default: s = kd_scalar_complex(v->u.c.re, v->u.c.im); break;
    }
    if (kd_scalar_to_element(&s, L->dtype, L->data + (size_t)L->next * L->itemsize))
      return kdc_lerr_set(L->err, L->pos, "%s", kd_last_error());
    L->next++;
    return 0;
  }
  size_t n = kd_value_list_size(v);
  for (size_t i = 0; i < n; i++)
    if (fill(L, kd_value_list_at(v, i), dim + 1)) return -1;
  return 0;
}

int kdc_tensor_from_literal(kdc_lerr *err, kdc_lpos pos, const kd_value *v, kd_tensor **out) {
  *out = NULL;
  literal L;
  memset(&L, 0, sizeof L);
  L.err = err;
  L.pos = pos;
  /* The shape, from the first element at each depth. */
  const kd_value *e = v;
  while (is_seq(e)) {
    if (L.ndim == KD_MAX_DIMS)
      return kdc_lerr_set(err, pos, "a tensor literal has at most %d dimensions", KD_MAX_DIMS);
    size_t n = kd_value_list_size(e);
    L.sizes[L.ndim++] = (int64_t)n;
    if (n == 0) break;
    e = kd_value_list_at(e, 0);
  }
  if (check(&L, v, 0)) return -1;
  L.numel = 1;
  for (int d = 0; d < L.ndim; d++) L.numel *= L.sizes[d];
  kd_dtype dflt = kd_get_default_dtype();
  if (L.any_complex) L.dtype = kd_dtype_to_complex(dflt);
  else if (L.any_float) L.dtype = dflt;
  else if (L.any_int) L.dtype = KD_INT64;
  else if (L.numel > 0) L.dtype = KD_BOOL;
  else L.dtype = dflt;
  L.itemsize = kd_dtype_size(L.dtype);
  L.data = kd_host_malloc(L.numel > 0 ? (size_t)L.numel * L.itemsize : 1);
  if (!L.data) return kdc_lerr_oom(err, pos);
  if (fill(&L, v, 0)) {
    kd_host_free(L.data);
    return -1;
  }
  kd_status st = kd_tensor_from_data(L.ndim, L.sizes, L.dtype, L.data, out);
  kd_host_free(L.data);
  if (st) return kdc_lerr_set(err, pos, "%s", kd_last_error());
  return 0;
}

int kdc_tensor_from_number(kdc_lerr *err, kdc_lpos pos, const kd_value *v, bool wrapped,
                           kd_tensor **out) {
  *out = NULL;
  kd_scalar s;
  kd_dtype dt;
  kd_dtype dflt = wrapped ? KD_FLOAT64 : kd_get_default_dtype();
  switch (v->tag) {
    case KD_VALUE_BOOL: s = kd_scalar_bool(v->u.b); dt = KD_BOOL; break;
    case KD_VALUE_INT: s = kd_scalar_int(v->u.i); dt = KD_INT64; break;
    case KD_VALUE_DOUBLE: s = kd_scalar_double(v->u.d); dt = dflt; break;
    case KD_VALUE_COMPLEX:
      s = kd_scalar_complex(v->u.c.re, v->u.c.im);
      dt = kd_dtype_to_complex(dflt);
      break;
    case KD_VALUE_SCALAR:
      s = v->u.s;
      dt = kd_scalar_dtype(&s);
      if (!wrapped && dt == KD_FLOAT64) dt = dflt;
      if (!wrapped && dt == KD_COMPLEX128) dt = kd_dtype_to_complex(dflt);
      break;
    default:
      return kdc_lerr_set(err, pos, "expected a number, found %s", kdc_value_type_name(v));
  }
  if (kd_tensor_from_scalar(&s, dt, out)) return kdc_lerr_set(err, pos, "%s", kd_last_error());
  if (wrapped) kd_tensor_set_wrapped_number(*out, true);
  return 0;
}
