/*
 * value_impl.h: the heap payloads of boxed values. Not installed.
 *
 * A kd_string is one allocation: a header and the bytes (NUL-terminated).
 * A kd_list is one allocation: a header and an inline element array whose
 * element type depends on `kind` (the kd_value tag of the list):
 *   INT_LIST int64_t, DOUBLE_LIST double, BOOL_LIST bool,
 *   TENSOR_LIST / OPT_TENSOR_LIST kd_tensor * (owned references; NULL only in
 *   an OPT_TENSOR_LIST), LIST / TUPLE kd_value (owned values).
 * Payloads are immutable after construction, so they are shared freely by
 * reference counting and can never form cycles.
 */
#ifndef KD_VALUE_IMPL_H
#define KD_VALUE_IMPL_H

#include "core/internal.h"
#include "kd/value.h"

struct kd_string {
  kd__refcount refcount;
  size_t len;   /* bytes, not counting the NUL */
  char data[];  /* len bytes and a NUL */
};

struct kd_list {
  kd__refcount refcount;
  kd_value_tag kind; /* the tag of the value that holds it */
  size_t size;       /* number of elements */
  max_align_t data[]; /* `size` elements of the kind's element type */
};

/* The element array, typed: of a mutable list, and of a const list. */
#define KD__LIST_ITEMS(list, type) ((type *)(void *)(list)->data)
#define KD__LIST_CITEMS(list, type) ((type const *)(const void *)(list)->data)

#endif /* KD_VALUE_IMPL_H */
