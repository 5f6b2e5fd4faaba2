/*
 * fuzz_boxed.c: boxed calls of every operator of libkdops (and anything else
 * registered) with hostile stacks.
 *
 * After kd_ops_open, the operators are listed once (kd_ops_foreach, name
 * order). An input picks one:
 *   0xFF NAME NUL      by qualified name ("aten::arange.start_step"): what
 *                      the committed corpus uses, so its entries keep their
 *                      meaning when operators are added;
 *   HI LO              by index (HI * 256 + LO) modulo the count.
 * Then one byte shapes the stack:
 *   < 0xF0             the first `given` arguments (min(byte, nargs) below
 *                      0x80, byte mod (nargs + 1) from 0x80) are made for
 *                      their declared types (each, one time in eight, a
 *                      value of a random kind instead), the rest are the
 *                      schema's defaults (kd_op_fill_defaults), or made for
 *                      their types where there is none;
 *   >= 0xF0            (byte - 0xF0) values of random kinds: wrong counts.
 * Values: tensors of any dtype, 0 to 4 dimensions (sometimes up to 15), sizes
 * small or at the edges (a zero-size tensor keeps huge sizes; otherwise the
 * element count is capped at 4096), contiguous, transposed, expanded (stride
 * 0) or offset views, on cpu or meta; ints and floats at the edges, Scalars,
 * bools, strings, int/float/bool/Tensor/Tensor? lists, generic lists,
 * tuples, None, dtypes, layouts, devices, memory formats (sometimes out of
 * range). Out= arguments get whatever their type gets, so they mismatch.
 *
 * Invariants: kd_call_boxed returns (the sanitizers and libFuzzer's -timeout
 * watch the rest); a status is KD_OK or a known error with a message; on
 * KD_OK the stack holds exactly the schema's returns (unless it has varret),
 * and every returned tensor is consistent (numel, reach inside storage).
 * Everything is released (leaks fail under LeakSanitizer).
 */
#include <kd/kd.h>
#include <kd/ops.h>

#include "fuzz.h"
#include "fuzz_tensor.h"

static kd_op **g_ops;
static size_t g_nops;

static int collect(kd_op *op, void *user) {
  size_t *cap = user;
  if (!kd_op_schema(op)) return 0;
  if (g_nops == *cap) {
    *cap = *cap ? 2 * *cap : 1024;
    kd_op **n = realloc(g_ops, *cap * sizeof *n);
    FUZZ_CHECK(n, "out of memory");
    g_ops = n;
  }
  g_ops[g_nops++] = op;
  return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* One thread: deterministic, and the machine's cores are the fuzzers'. */
  setenv("KD_NUM_THREADS", "1", 1);
  kd_status st = kd_ops_open();
  FUZZ_CHECK(st == KD_OK, "kd_ops_open: %s", kd_last_error());
  size_t cap = 0;
  kd_ops_foreach(collect, &cap);
  FUZZ_CHECK(g_nops > 0, "no operators");
  return 0;
}

/* ---- Values --------------------------------------------------------------- */

static int64_t small_size(fuzz_reader *r) {
  uint8_t b = fuzz_u8(r);
  if (b < 240) return b % 6; /* 0..5 */
  return fuzz_int(r);        /* edges, negative, huge */
}

static kd_dtype any_dtype(fuzz_reader *r) {
  uint8_t b = fuzz_u8(r);
  return b < 250 ? (kd_dtype)(b % KD_DTYPE_COUNT) : (kd_dtype)((int)b - 252); /* -2..3 */
}

/* A tensor, or NULL when the sizes asked for cannot be made (negative,
 * too many). The caller owns it. */
static kd_tensor *make_tensor(fuzz_reader *r) {
  uint8_t nb = fuzz_u8(r);
  int ndim = nb < 240 ? nb % 5 : (int)(nb - 240); /* 0..4, sometimes up to 15 */
  int64_t sizes[KD_MAX_DIMS + 1];
  i128 numel = 1;
  int zero = 0;
  for (int i = 0; i < ndim && i <= KD_MAX_DIMS; i++) {
    sizes[i] = small_size(r);
    if (sizes[i] == 0) zero = 1;
    if (sizes[i] > 0 && numel <= 4096) numel = sizes[i] > 4096 ? 4097 : numel * sizes[i];
  }
  /* Memory stays bounded: a tensor with elements has at most 4096. */
  if (!zero && numel > 4096)
    for (int i = 0; i < ndim; i++)
      if (sizes[i] > 0) sizes[i] = 1 + sizes[i] % 4;
  kd_dtype dtype = any_dtype(r);
  uint8_t how = fuzz_u8(r);
  kd_device dev = kd_device_cpu();
  if ((how & 0x30) == 0x30) dev.type = KD_DEVICE_META;
  kd_tensor *t = NULL;
  if (kd_tensor_empty(ndim, sizes, dtype, dev, &t) != KD_OK) return NULL;
  if (dev.type == KD_DEVICE_CPU) {
    /* Small integers, and a few chosen values at the front. */
    kd_storage *s = kd_tensor_storage(t);
    if (kd_storage_data(s)) memset(kd_storage_data(s), 0, kd_storage_nbytes(s));
    int64_t n = kd_tensor_numel(t);
    int64_t idx[KD_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n && k < 8; k++) {
      int64_t rest = k;
      for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = rest % sizes[d];
        rest /= sizes[d];
      }
      uint8_t vb = fuzz_u8(r);
      kd_scalar v = vb & 1 ? kd_scalar_double(fuzz_double(r)) : kd_scalar_int(fuzz_int(r));
      (void)kd_tensor_set(t, idx, &v); /* may not fit the dtype: fine */
    }
  }
  kd_tensor *v = NULL;
  int64_t vs[KD_MAX_DIMS], vst[KD_MAX_DIMS];
  switch (how & 3) {
  case 1: /* transposed: the dimensions reversed */
    for (int i = 0; i < ndim; i++) {
      vs[i] = kd_tensor_size(t, ndim - 1 - i);
      vst[i] = kd_tensor_stride(t, ndim - 1 - i);
    }
    (void)kd_tensor_as_strided(t, ndim, vs, vst, 0, &v);
    break;
  case 2: /* expanded: a new leading dimension of stride 0 */
    if (ndim < KD_MAX_DIMS) {
      vs[0] = 1 + fuzz_u8(r) % 3;
      vst[0] = 0;
      for (int i = 0; i < ndim; i++) {
        vs[i + 1] = kd_tensor_size(t, i);
        vst[i + 1] = kd_tensor_stride(t, i);
      }
      (void)kd_tensor_as_strided(t, ndim + 1, vs, vst, 0, &v);
    }
    break;
  case 3: /* a view from element 1 of the first dimension on */
    if (ndim > 0 && sizes[0] > 1) {
      vs[0] = sizes[0] - 1;
      for (int i = 0; i < ndim; i++) {
        if (i) vs[i] = sizes[i];
        vst[i] = kd_tensor_stride(t, i);
      }
      (void)kd_tensor_as_strided(t, ndim, vs, vst, vst[0], &v);
    }
    break;
  default:
    break;
  }
  if (v) {
    kd_tensor_release(t);
    t = v;
  }
  if (how & 0x40) kd_tensor_set_wrapped_number(t, kd_tensor_ndim(t) == 0);
  return t;
}

static kd_value make_tensor_value(fuzz_reader *r) {
  kd_tensor *t = make_tensor(r);
  kd_value v = kd_value_tensor(t); /* None for NULL */
  kd_tensor_release(t);
  return v;
}

static kd_scalar make_scalar(fuzz_reader *r) {
  switch (fuzz_u8(r) % 4) {
  case 0: return kd_scalar_int(fuzz_int(r));
  case 1: return kd_scalar_double(fuzz_double(r));
  case 2: return kd_scalar_bool(fuzz_u8(r) & 1);
  default: {
    double re = fuzz_double(r);
    return kd_scalar_complex(re, fuzz_double(r));
  }
  }
}

static kd_value make_value(fuzz_reader *r, int depth);

static kd_value make_int_list(fuzz_reader *r) {
  int64_t items[20];
  size_t n = fuzz_count(r, 6);
  if (fuzz_u8(r) == 0xFF) n = 17 + fuzz_count(r, 3);
  for (size_t i = 0; i < n; i++) {
    int64_t x = small_size(r);
    /* -3..-1: negative dims (x - 3 saturates: the harness itself must not overflow) */
    items[i] = fuzz_u8(r) >= 0xF0 && x > INT64_MIN + 3 ? x - 3 : x;
  }
  kd_value v;
  FUZZ_CHECK(kd_value_int_list(items, n, &v) == KD_OK, "int list");
  return v;
}

static kd_value make_tensor_list(fuzz_reader *r, int optional) {
  kd_tensor *items[6] = {NULL};
  size_t n = fuzz_count(r, 4);
  for (size_t i = 0; i < n; i++)
    items[i] = optional && (fuzz_u8(r) & 3) == 0 ? NULL : make_tensor(r);
  kd_value v = kd_value_none();
  kd_status st = optional ? kd_value_opt_tensor_list(items, n, &v)
                          : kd_value_tensor_list(items, n, &v);
  if (st != KD_OK) v = kd_value_none(); /* a NULL in a Tensor[]: refused */
  for (size_t i = 0; i < n; i++) kd_tensor_release(items[i]);
  return v;
}

static kd_value make_enum(fuzz_reader *r, kd_value_tag tag) {
  uint8_t b = fuzz_u8(r);
  int raw = (int)b - 0xF8; /* 0xF8.. : out of range (a few) */
  switch (tag) {
  case KD_VALUE_DTYPE: return kd_value_dtype(b < 0xF8 ? (kd_dtype)(b % KD_DTYPE_COUNT) : (kd_dtype)(raw + 12));
  case KD_VALUE_LAYOUT: return kd_value_layout(b < 0xF8 ? (kd_layout)(b % 2) : (kd_layout)(raw + 5));
  case KD_VALUE_MEMORY_FORMAT:
    return kd_value_memory_format(b < 0xF8 ? (kd_memory_format)(b % 4) : (kd_memory_format)(raw + 3));
  default: {
    kd_device d = kd_device_cpu();
    if (b >= 0xF8) {
      d.type = (kd_device_type)(raw % 7);
      d.index = (int32_t)fuzz_int(r);
    } else if (b & 1) {
      d.type = KD_DEVICE_META;
    }
    return kd_value_device(d);
  }
  }
}

/* A value of a random kind. */
static kd_value make_value(fuzz_reader *r, int depth) {
  kd_value v = kd_value_none();
  uint8_t k = fuzz_u8(r) % 19;
  switch (k) {
  case 0: return kd_value_none();
  case 1: return kd_value_bool(fuzz_u8(r) & 1);
  case 2: return kd_value_int(fuzz_int(r));
  case 3: return kd_value_double(fuzz_double(r));
  case 4: {
    double re = fuzz_double(r);
    return kd_value_complex(re, fuzz_double(r));
  }
  case 5: return kd_value_scalar(make_scalar(r));
  case 6: {
    char text[8];
    size_t n = fuzz_count(r, 7);
    for (size_t i = 0; i < n; i++) text[i] = (char)fuzz_u8(r);
    FUZZ_CHECK(kd_value_string(text, n, &v) == KD_OK, "string");
    return v;
  }
  case 7: return make_int_list(r);
  case 8: {
    double items[6];
    size_t n = fuzz_count(r, 5);
    for (size_t i = 0; i < n; i++) items[i] = fuzz_double(r);
    FUZZ_CHECK(kd_value_double_list(items, n, &v) == KD_OK, "float list");
    return v;
  }
  case 9: {
    bool items[6];
    size_t n = fuzz_count(r, 5);
    for (size_t i = 0; i < n; i++) items[i] = fuzz_u8(r) & 1;
    FUZZ_CHECK(kd_value_bool_list(items, n, &v) == KD_OK, "bool list");
    return v;
  }
  case 10:
  case 11: return make_tensor_value(r);
  case 12: return make_tensor_list(r, 0);
  case 13: return make_tensor_list(r, 1);
  case 14: return make_enum(r, KD_VALUE_DTYPE);
  case 15: return make_enum(r, KD_VALUE_LAYOUT);
  case 16: return make_enum(r, KD_VALUE_DEVICE);
  case 17: return make_enum(r, KD_VALUE_MEMORY_FORMAT);
  default: {
    kd_value items[4];
    size_t n = depth < 2 ? fuzz_count(r, 3) : 0;
    for (size_t i = 0; i < n; i++) items[i] = make_value(r, depth + 1);
    kd_status st = fuzz_u8(r) & 1 ? kd_value_tuple(items, n, &v) : kd_value_list(items, n, &v);
    FUZZ_CHECK(st == KD_OK || st == KD_ETYPE || st == KD_EINVAL, "list: %s", kd_last_error());
    for (size_t i = 0; i < n; i++) kd_value_destroy(&items[i]);
    return v;
  }
  }
}

/* A value for an argument of type `type`. */
static kd_value make_typed(fuzz_reader *r, const kd_type *type, int depth) {
  if (depth > 3 || (fuzz_u8(r) & 7) == 7) return make_value(r, depth);
  switch (kd_type_kind_of(type)) {
  case KD_TYPE_TENSOR: return make_tensor_value(r);
  case KD_TYPE_INT:
  case KD_TYPE_SYMINT:
  case KD_TYPE_DEVICE_INDEX: /* -2..3, or any edge value (the harness itself must not overflow) */
    return kd_value_int(fuzz_u8(r) & 1 ? fuzz_int(r) : (int64_t)(fuzz_u8(r) % 6) - 2);
  case KD_TYPE_FLOAT: return kd_value_double(fuzz_double(r));
  case KD_TYPE_COMPLEX: {
    double re = fuzz_double(r);
    return kd_value_complex(re, fuzz_double(r));
  }
  case KD_TYPE_BOOL: return kd_value_bool(fuzz_u8(r) & 1);
  case KD_TYPE_SCALAR:
  case KD_TYPE_NUMBER: return kd_value_scalar(make_scalar(r));
  case KD_TYPE_SCALAR_TYPE: return make_enum(r, KD_VALUE_DTYPE);
  case KD_TYPE_LAYOUT: return make_enum(r, KD_VALUE_LAYOUT);
  case KD_TYPE_DEVICE: return make_enum(r, KD_VALUE_DEVICE);
  case KD_TYPE_MEMORY_FORMAT: return make_enum(r, KD_VALUE_MEMORY_FORMAT);
  case KD_TYPE_STR: {
    static const char *const words[] = {"mean", "sum", "none", "floor", "trunc", "reflect", "", "x"};
    const char *w = words[fuzz_u8(r) % 8];
    kd_value v;
    FUZZ_CHECK(kd_value_string(w, strlen(w), &v) == KD_OK, "string");
    return v;
  }
  case KD_TYPE_OPTIONAL:
    if (fuzz_u8(r) & 1) return kd_value_none();
    return make_typed(r, kd_type_element(type), depth + 1);
  case KD_TYPE_LIST: {
    const kd_type *e = kd_type_element(type);
    kd_type_kind ek = kd_type_kind_of(e);
    if (ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT) return make_int_list(r);
    if (ek == KD_TYPE_TENSOR) return make_tensor_list(r, 0);
    if (ek == KD_TYPE_OPTIONAL && kd_type_kind_of(kd_type_element(e)) == KD_TYPE_TENSOR)
      return make_tensor_list(r, 1);
    kd_value items[4], v = kd_value_none();
    size_t n = fuzz_count(r, 3);
    for (size_t i = 0; i < n; i++) items[i] = make_typed(r, e, depth + 1);
    if (ek == KD_TYPE_FLOAT || ek == KD_TYPE_BOOL) {
      double d[4];
      bool b[4];
      for (size_t i = 0; i < n; i++) {
        d[i] = items[i].tag == KD_VALUE_DOUBLE ? items[i].u.d : 0.5;
        b[i] = items[i].tag == KD_VALUE_BOOL ? items[i].u.b : true;
      }
      kd_status st = ek == KD_TYPE_FLOAT ? kd_value_double_list(d, n, &v) : kd_value_bool_list(b, n, &v);
      FUZZ_CHECK(st == KD_OK, "list");
    } else {
      kd_status st = kd_value_list(items, n, &v);
      if (st != KD_OK) v = kd_value_none();
    }
    for (size_t i = 0; i < n; i++) kd_value_destroy(&items[i]);
    return v;
  }
  default: return make_value(r, depth);
  }
}

/* ---- The call ------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader r = {data, size};
  kd_op *op = NULL;
  uint8_t b = fuzz_u8(&r);
  if (b == 0xFF) {
    char name[160];
    size_t n = 0;
    while (r.left && n + 1 < sizeof name) {
      uint8_t c = fuzz_u8(&r);
      if (!c) break;
      name[n++] = (char)c;
    }
    name[n] = 0;
    if (kd_op_find(name, NULL, &op) != KD_OK || !kd_op_schema(op)) return 0;
  } else {
    op = g_ops[((size_t)b << 8 | fuzz_u8(&r)) % g_nops];
  }
  const kd_schema *schema = kd_op_schema(op);
  size_t nargs = kd_schema_num_arguments(schema);

  kd_stack stack;
  kd_stack_init(&stack);
  uint8_t shape = fuzz_u8(&r);
  if (shape >= 0xF0) {
    for (int i = 0; i < shape - 0xF0; i++) {
      kd_value v = make_value(&r, 0);
      FUZZ_CHECK(kd_stack_push(&stack, &v) == KD_OK, "push");
    }
  } else {
    size_t given = shape < 0x80 ? (shape < nargs ? shape : nargs) : shape % (nargs + 1);
    for (size_t i = 0; i < given; i++) {
      kd_value v = make_typed(&r, kd_argument_type(kd_schema_argument(schema, i)), 0);
      FUZZ_CHECK(kd_stack_push(&stack, &v) == KD_OK, "push");
    }
    for (size_t i = given; i < nargs; i++) {
      size_t before = stack.size;
      if (kd_op_fill_defaults(op, &stack, i) == KD_OK) break;
      /* Defaults were pushed up to an argument that has none: make it. */
      i += stack.size - before;
      FUZZ_CHECK(i < nargs, "kd_op_fill_defaults failed after pushing every default");
      kd_value v = make_typed(&r, kd_argument_type(kd_schema_argument(schema, i)), 0);
      FUZZ_CHECK(kd_stack_push(&stack, &v) == KD_OK, "push");
    }
  }

  size_t pushed = stack.size;
  kd_status st = kd_call_boxed(op, &stack);
  if (st == KD_OK) {
    if (!kd_schema_is_varret(schema) && pushed >= nargs)
      FUZZ_CHECK(stack.size == pushed - nargs + kd_schema_num_returns(schema),
                 "%s: %zu values on the stack after the call, expected %zu", kd_op_name(op),
                 stack.size, pushed - nargs + kd_schema_num_returns(schema));
    for (size_t i = 0; i < stack.size; i++) {
      const kd_value *v = &stack.items[i];
      if (v->tag == KD_VALUE_TENSOR) {
        const kd_tensor *t = v->u.t;
        const kd_storage *s = kd_tensor_storage(t);
        check_tensor(t, kd_tensor_ndim(t), kd_tensor_sizes(t), (const char *)kd_storage_data(s),
                     (i128)kd_storage_nbytes(s), 0);
      }
    }
  } else {
    FUZZ_CHECK(st < 0 && kd_status_name(st) != NULL, "%s: status %d", kd_op_name(op), (int)st);
    FUZZ_CHECK(kd_last_error()[0] != 0, "%s: %s with no message", kd_op_name(op), kd_status_name(st));
  }
  kd_stack_free(&stack);
  return 0;
}
