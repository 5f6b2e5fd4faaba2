/*
 * value.h: boxed values and the stack, the currency of boxed calls.
 *
 * A kd_value is a tagged union that can hold a value of every schema type.
 * Small payloads (bool, int, double, complex, scalar, dtype, layout, device,
 * memory format) live inside the struct. Tensors, strings, lists and tuples are
 * reference-counted heap objects: a kd_value owns exactly one reference to its
 * payload.
 *
 * Ownership rules, everywhere in this header:
 * - A constructor that takes a tensor borrows it and retains it: the caller
 *   keeps its own reference. Constructors that take arrays copy them.
 * - kd_value_copy makes a second owner (retains); kd_value_move transfers.
 * - kd_value_destroy drops the reference and sets the value to None; it is
 *   safe on None and on zero-initialised memory (which is None).
 * - A *borrowed* value (kd_value_tensor_borrowed) holds no reference: whoever
 *   makes it guarantees the tensor outlives it. Destroying it drops nothing;
 *   copying it makes an owned value; kd_value_own turns it into one. Boxed
 *   calls accept borrowed arguments (an interpreter lending its frame's
 *   tensors saves two atomic operations per argument) and always give owned
 *   results. A kernel that keeps an argument beyond the call copies it.
 * - Accessors return borrowed pointers, valid while the value lives.
 */
#ifndef KD_VALUE_H
#define KD_VALUE_H

#include "kd/common.h"
#include "kd/device.h"
#include "kd/dtype.h"
#include "kd/scalar.h"
#include "kd/status.h"
#include "kd/tensor.h"

KD_EXTERN_C_BEGIN

/* X(ENUM, name). Append only. NONE is 0 so that zeroed memory is None. */
#define KD_VALUE_TAG_LIST(X)          \
  X(NONE, "None")                     \
  X(BOOL, "bool")                     \
  X(INT, "int")                       \
  X(DOUBLE, "float")                  \
  X(COMPLEX, "complex")               \
  X(STRING, "str")                    \
  X(SCALAR, "Scalar")                 \
  X(DTYPE, "ScalarType")              \
  X(LAYOUT, "Layout")                 \
  X(DEVICE, "Device")                 \
  X(MEMORY_FORMAT, "MemoryFormat")    \
  X(TENSOR, "Tensor")                 \
  X(INT_LIST, "int[]")                \
  X(DOUBLE_LIST, "float[]")           \
  X(BOOL_LIST, "bool[]")              \
  X(TENSOR_LIST, "Tensor[]")          \
  X(OPT_TENSOR_LIST, "Tensor?[]")     \
  X(LIST, "list")                     \
  X(TUPLE, "tuple")

typedef enum kd_value_tag {
#define KD_VALUE_TAG_ENUM_(E, name) KD_VALUE_##E,
  KD_VALUE_TAG_LIST(KD_VALUE_TAG_ENUM_)
#undef KD_VALUE_TAG_ENUM_
  KD_VALUE_TAG_COUNT
} kd_value_tag;

/* Opaque heap payloads. */
typedef struct kd_string kd_string;
typedef struct kd_list kd_list;

/* kd_value.flags: the value does not own its payload (see
 * kd_value_tensor_borrowed). */
#define KD_VALUE_BORROWED 1u

typedef struct kd_value {
  kd_value_tag tag; /* which member of u is set */
  uint32_t flags;   /* KD_VALUE_BORROWED or 0 */
  union {
    bool b;                  /* BOOL */
    int64_t i;               /* INT */
    double d;                /* DOUBLE */
    struct {
      double re, im;
    } c;                     /* COMPLEX */
    kd_scalar s;             /* SCALAR */
    kd_dtype dtype;          /* DTYPE */
    kd_layout layout;        /* LAYOUT */
    kd_device device;        /* DEVICE */
    kd_memory_format mf;     /* MEMORY_FORMAT */
    kd_tensor *t;            /* TENSOR: one owned reference, never NULL */
    kd_string *str;          /* STRING: one owned reference */
    kd_list *list;           /* every *_LIST, LIST and TUPLE: one owned reference */
  } u;
} kd_value;

/* The argument and result stack of boxed calls. A plain struct so that kernels
 * can read arguments in place: items[size - n + i] is argument i of n. The
 * stack owns every value on it. Zero-initialised memory is an empty stack. */
typedef struct kd_stack {
  kd_value *items;  /* owned array of `capacity` values; the first `size` live */
  size_t size;
  size_t capacity;
} kd_stack;

/* The inline moves and pushes below use kd/detail/value_abi.h (ABI, not
 * API). */
#include "kd/detail/value_abi.h"

/* The tag's name ("Tensor", "int[]", ...); static storage. */
KD_API const char *kd_value_tag_name(kd_value_tag tag);

/* ---- Constructors (cannot fail: inline) --------------------------------- */

static inline kd_value kd_value_none(void) {
  kd_value v;
  v.tag = KD_VALUE_NONE;
  v.flags = 0;
  v.u.c.re = 0;
  v.u.c.im = 0;
  return v;
}
static inline kd_value kd_value_bool(bool b) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_BOOL;
  v.u.b = b;
  return v;
}
static inline kd_value kd_value_int(int64_t i) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_INT;
  v.u.i = i;
  return v;
}
static inline kd_value kd_value_double(double d) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_DOUBLE;
  v.u.d = d;
  return v;
}
static inline kd_value kd_value_complex(double re, double im) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_COMPLEX;
  v.u.c.re = re;
  v.u.c.im = im;
  return v;
}
static inline kd_value kd_value_scalar(kd_scalar s) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_SCALAR;
  v.u.s = s;
  return v;
}
static inline kd_value kd_value_dtype(kd_dtype dtype) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_DTYPE;
  v.u.dtype = dtype;
  return v;
}
static inline kd_value kd_value_layout(kd_layout layout) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_LAYOUT;
  v.u.layout = layout;
  return v;
}
static inline kd_value kd_value_device(kd_device device) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_DEVICE;
  v.u.device = device;
  return v;
}
static inline kd_value kd_value_memory_format(kd_memory_format mf) {
  kd_value v = kd_value_none();
  v.tag = KD_VALUE_MEMORY_FORMAT;
  v.u.mf = mf;
  return v;
}

/* ---- Constructors of heap values ---------------------------------------- */

/* Retains `tensor` (borrowed). A NULL tensor gives None. Cannot fail.
 * Inline, so that a kernel's `rets[0] = kd_value_tensor(t)` writes the
 * result in place (an out-of-line constructor returns through a temporary
 * whose copy the CPU cannot forward from the narrower stores that built it:
 * a store-forwarding stall per result). */
static inline kd_value kd_value_tensor(kd_tensor *tensor) {
  kd_value v = kd_value_none();
  if (tensor) {
    kd_tensor_retain(tensor);
    v.tag = KD_VALUE_TENSOR;
    v.u.t = tensor;
  }
  return v;
}

/* A borrowed tensor value: no reference is taken, none is dropped by
 * kd_value_destroy. The caller keeps `tensor` alive while the value (or any
 * value moved from it) exists. A NULL tensor gives None. */
static inline kd_value kd_value_tensor_borrowed(kd_tensor *tensor) {
  kd_value v = kd_value_none();
  if (tensor) {
    v.tag = KD_VALUE_TENSOR;
    v.flags = KD_VALUE_BORROWED;
    v.u.t = tensor;
  }
  return v;
}

/* Makes a borrowed value own its payload (takes a reference); no-op on an
 * owned value. NULL is ignored. */
KD_API void kd_value_own(kd_value *value);

/* Copies `len` bytes of `text` (need not be NUL-terminated; may hold NULs).
 * KD_ENOMEM; *out is None on error. */
KD_API kd_status kd_value_string(const char *text, size_t len, kd_value *out);

/* Copy the arrays. Tensor lists retain every tensor; a NULL entry is an error
 * (KD_EINVAL) in a TENSOR_LIST and None in an OPT_TENSOR_LIST. KD_ENOMEM.
 * `items` may be NULL when n == 0. *out is None on error. */
KD_API kd_status kd_value_int_list(const int64_t *items, size_t n, kd_value *out);
KD_API kd_status kd_value_double_list(const double *items, size_t n, kd_value *out);
KD_API kd_status kd_value_bool_list(const bool *items, size_t n, kd_value *out);
KD_API kd_status kd_value_tensor_list(kd_tensor *const *items, size_t n, kd_value *out);
KD_API kd_status kd_value_opt_tensor_list(kd_tensor *const *items, size_t n, kd_value *out);

/* A generic list or a tuple of `n` values; each item is copied (retained), the
 * caller keeps its own. KD_ENOMEM; *out is None on error. */
KD_API kd_status kd_value_list(const kd_value *items, size_t n, kd_value *out);
KD_API kd_status kd_value_tuple(const kd_value *items, size_t n, kd_value *out);

/* ---- Lifetime ----------------------------------------------------------- */

/* Drops the value's reference (if any) and sets it to None. NULL is ignored. */
KD_API void kd_value_destroy(kd_value *value);
/* *dst = a new owner of src's payload (retains; the copy of a borrowed value
 * is owned). dst must not hold a value (it is overwritten without being
 * destroyed). Cannot fail. */
KD_API void kd_value_copy(kd_value *dst, const kd_value *src);

/* Moves: *dst = *src, *src = None. dst must not hold a value. Cannot fail. */
static inline void kd_value_move(kd_value *dst, kd_value *src) {
  kd__value_read(dst, src);
  *src = kd_value_none();
}

/* ---- Accessors ---------------------------------------------------------- */

static inline bool kd_value_is_none(const kd_value *v) { return v->tag == KD_VALUE_NONE; }

/* Checked reads: KD_ETYPE, with a message naming both tags, when the value
 * holds another type. Conversions done: int -> double; bool, int, double,
 * complex -> scalar; scalar -> int/double/bool when its kind matches. The out
 * parameter is untouched on error. */
KD_API kd_status kd_value_get_bool(const kd_value *v, bool *out);
KD_API kd_status kd_value_get_int(const kd_value *v, int64_t *out);
KD_API kd_status kd_value_get_double(const kd_value *v, double *out);
KD_API kd_status kd_value_get_scalar(const kd_value *v, kd_scalar *out);
/* Borrowed: no reference is added. */
KD_API kd_status kd_value_get_tensor(const kd_value *v, kd_tensor **out);

/* The bytes and length of a STRING (borrowed; NUL-terminated for
 * convenience). NULL (and *len = 0) when v is not a string. */
KD_API const char *kd_value_string_data(const kd_value *v, size_t *len);

/* Number of elements of any list or tuple; 0 for other tags. */
KD_API size_t kd_value_list_size(const kd_value *v);
/* The element arrays of the typed lists (borrowed); NULL when the tag differs.
 * Entries of an OPT_TENSOR_LIST may be NULL (None). */
KD_API const int64_t *kd_value_int_list_data(const kd_value *v);
KD_API const double *kd_value_double_list_data(const kd_value *v);
KD_API const bool *kd_value_bool_list_data(const kd_value *v);
KD_API kd_tensor *const *kd_value_tensor_list_data(const kd_value *v);
/* Element i of a LIST or TUPLE (borrowed); NULL when out of range or not a
 * generic list/tuple. */
KD_API const kd_value *kd_value_list_at(const kd_value *v, size_t i);

/* Deep equality: same tag and equal contents; tensors compare by identity. */
KD_API bool kd_value_equal(const kd_value *a, const kd_value *b);

/* Formats the value as the schema language writes defaults and as Python
 * prints: None, True, 3, 2.5, "text", [1, 2], (1, 2.5), float32, strided,
 * cpu, contiguous_format; tensors as kd_tensor_describe. Returns the needed
 * length as snprintf; NUL-terminated when cap > 0. */
KD_API size_t kd_value_format(const kd_value *v, char *buf, size_t cap);

/* ---- The stack ---------------------------------------------------------- */

static inline void kd_stack_init(kd_stack *s) {
  s->items = NULL;
  s->size = 0;
  s->capacity = 0;
}
/* Destroys every value and frees the array; the stack is empty after. */
KD_API void kd_stack_free(kd_stack *s);
/* Makes room for at least `capacity` values. KD_ENOMEM (stack unchanged). */
KD_API kd_status kd_stack_reserve(kd_stack *s, size_t capacity);
/* Pushes *v by moving it: the stack takes the reference, *v becomes None.
 * On KD_ENOMEM the value stays with the caller (unchanged); KD_EINVAL for a
 * NULL stack or value. Inline while there is room; kd_stack_push_grow is its
 * out-of-line part (grows the array, then pushes). */
KD_API kd_status kd_stack_push_grow(kd_stack *s, kd_value *v);
static inline kd_status kd_stack_push(kd_stack *s, kd_value *v) {
  if (s && v && s->size < s->capacity) {
    s->items[s->size++] = *v;
    *v = kd_value_none();
    return KD_OK;
  }
  return kd_stack_push_grow(s, v);
}
/* Push helpers that write the new top in place (no intermediate kd_value:
 * the fastest way to push, as PyTorch's torch::jit::push). Each returns
 * KD_OK, KD_EINVAL for a NULL stack, or KD_ENOMEM when the array cannot grow
 * (nothing pushed, no reference taken).
 * - kd_stack_push_tensor: takes a new reference to `t` (NULL pushes None).
 * - kd_stack_push_tensor_borrowed: no reference; the caller keeps `t` alive
 *   while the value is on the stack (see kd_value_tensor_borrowed).
 * - kd_stack_push_int / _double / _bool: the scalar kinds of boxed calls. */
static inline kd_status kd_stack_push_tensor_borrowed(kd_stack *s, kd_tensor *t) {
  kd_value *d = t ? kd__stack_claim(s, KD_VALUE_TENSOR, KD_VALUE_BORROWED) : NULL;
  if (!d) {
    kd_value v = kd_value_tensor_borrowed(t);
    return kd_stack_push_grow(s, &v);
  }
  d->u.t = t;
  return KD_OK;
}
/* Written owned from the start and retained after: the top is not looked
 * up again after the retain (an out-of-line call, after which the compiler
 * reloads the stack's fields). */
static inline kd_status kd_stack_push_tensor(kd_stack *s, kd_tensor *t) {
  kd_value *d = t ? kd__stack_claim(s, KD_VALUE_TENSOR, 0) : NULL;
  if (!d) {
    kd_status st = kd_stack_push_tensor_borrowed(s, t);
    if (st == KD_OK && t) {
      kd_tensor_retain(t); /* the value on top now owns a reference */
      s->items[s->size - 1].flags = 0;
    }
    return st;
  }
  d->u.t = t;
  kd_tensor_retain(t);
  return KD_OK;
}
static inline kd_status kd_stack_push_int(kd_stack *s, int64_t i) {
  kd_value *d = kd__stack_claim(s, KD_VALUE_INT, 0);
  if (!d) {
    kd_value v = kd_value_int(i);
    return kd_stack_push_grow(s, &v);
  }
  d->u.i = i;
  return KD_OK;
}
static inline kd_status kd_stack_push_double(kd_stack *s, double x) {
  kd_value *d = kd__stack_claim(s, KD_VALUE_DOUBLE, 0);
  if (!d) {
    kd_value v = kd_value_double(x);
    return kd_stack_push_grow(s, &v);
  }
  d->u.d = x;
  return KD_OK;
}
static inline kd_status kd_stack_push_bool(kd_stack *s, bool b) {
  kd_value *d = kd__stack_claim(s, KD_VALUE_BOOL, 0);
  if (!d) {
    kd_value v = kd_value_bool(b);
    return kd_stack_push_grow(s, &v);
  }
  d->u.i = 0;
  d->u.b = b;
  return KD_OK;
}
/* Pushes a copy of *v (retains); the caller keeps *v. KD_ENOMEM. */
KD_API kd_status kd_stack_push_copy(kd_stack *s, const kd_value *v);
/* Pops the top into *out, which the caller then owns. KD_ESTATE when empty
 * (*out is then None). */
KD_API kd_status kd_stack_pop(kd_stack *s, kd_value *out);
/* Destroys the top n values. KD_ESTATE (nothing dropped) when fewer than n. */
KD_API kd_status kd_stack_drop(kd_stack *s, size_t n);
/* The value `depth` places below the top (0 = top), borrowed; NULL when the
 * stack is not that deep. */
KD_API kd_value *kd_stack_peek(const kd_stack *s, size_t depth);
/* Destroys every value, keeps the array. */
KD_API void kd_stack_clear(kd_stack *s);

KD_EXTERN_C_END

#endif /* KD_VALUE_H */
