/*
 * schema.h: PyTorch's function-schema language, parsed and printed exactly.
 *
 *   add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
 *   aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
 *
 * A parsed schema is one immutable object; every pointer read from it (names,
 * types, arguments, alias sets) is borrowed and lives until kd_schema_free.
 * A schema may be read from several threads at once.
 */
#ifndef KD_SCHEMA_H
#define KD_SCHEMA_H

#include "kd/common.h"
#include "kd/status.h"
#include "kd/value.h"

KD_EXTERN_C_BEGIN

/* ---- Types -------------------------------------------------------------- */

/* X(ENUM, spelling). Base types spelled by one word. Append only. */
#define KD_TYPE_BASE_LIST(X)             \
  X(TENSOR, "Tensor")                    \
  X(INT, "int")                          \
  X(SYMINT, "SymInt")                    \
  X(FLOAT, "float")                      \
  X(COMPLEX, "complex")                  \
  X(BOOL, "bool")                        \
  X(STR, "str")                          \
  X(SCALAR, "Scalar")                    \
  X(SCALAR_TYPE, "ScalarType")           \
  X(LAYOUT, "Layout")                    \
  X(DEVICE, "Device")                    \
  X(MEMORY_FORMAT, "MemoryFormat")       \
  X(GENERATOR, "Generator")              \
  X(DIMNAME, "Dimname")                  \
  X(STORAGE, "Storage")                  \
  X(STREAM, "Stream")                    \
  X(QSCHEME, "QScheme")                  \
  X(ANY, "Any")                          \
  X(NONE, "NoneType")                    \
  X(NUMBER, "number")                    \
  X(CONST_QUANTIZER, "ConstQuantizerPtr") \
  X(DEVICE_INDEX, "DeviceIndex")

typedef enum kd_type_kind {
#define KD_TYPE_KIND_ENUM_(E, spelling) KD_TYPE_##E,
  KD_TYPE_BASE_LIST(KD_TYPE_KIND_ENUM_)
#undef KD_TYPE_KIND_ENUM_
  KD_TYPE_VAR,      /* a type variable: t, t1, ... (kd_type_name) */
  KD_TYPE_CLASS,    /* a custom class: __torch__.torch.classes.ns.Name (kd_type_name) */
  KD_TYPE_OPTIONAL, /* T? (kd_type_element) */
  KD_TYPE_LIST,     /* T[] or T[N] (kd_type_element, kd_type_list_size) */
  KD_TYPE_DICT,     /* Dict(K, V) (kd_type_key, kd_type_element) */
  KD_TYPE_FUTURE,   /* Future(T) (kd_type_element) */
  KD_TYPE_TUPLE,    /* (T1, T2, ...) (kd_type_tuple_size, kd_type_tuple_at) */
  KD_TYPE_RREF,     /* RRef(T) (kd_type_element) */
  KD_TYPE_UNION,    /* Union(T1, T2, ...) (kd_type_tuple_size, kd_type_tuple_at) */
  KD_TYPE_KIND_COUNT
} kd_type_kind;

typedef struct kd_type kd_type;
typedef struct kd_alias_info kd_alias_info;

KD_API kd_type_kind kd_type_kind_of(const kd_type *type);
/* Element of OPTIONAL, LIST, FUTURE and RREF, value type of DICT; NULL otherwise. */
KD_API const kd_type *kd_type_element(const kd_type *type);
/* Key type of DICT; NULL otherwise. */
KD_API const kd_type *kd_type_key(const kd_type *type);
/* N of T[N]; -1 for T[] and non-lists. */
KD_API int64_t kd_type_list_size(const kd_type *type);
/* Members of TUPLE and UNION: count (0 for other kinds) and member i (NULL
 * when out of range). */
KD_API size_t kd_type_tuple_size(const kd_type *type);
KD_API const kd_type *kd_type_tuple_at(const kd_type *type, size_t i);
/* Name of VAR and CLASS; the spelling of a base type; NULL otherwise. */
KD_API const char *kd_type_name(const kd_type *type);
/* Alias annotation written on the element of a list (`Tensor(a!)[]`), or NULL. */
KD_API const kd_alias_info *kd_type_element_alias(const kd_type *type);
/* Formats as written in schemas. Returns the needed length as snprintf. */
KD_API size_t kd_type_format(const kd_type *type, char *buf, size_t cap);

/* ---- Alias annotations -------------------------------------------------- */

/* `(a)`: before = {a}; `(a!)`: before = {a}, write; `(a -> *)`: before = {a},
 * after = {*}; `(a|b)`: before = {a, b}; `(a! -> a|b)`: before = {a}, write,
 * after = {a, b}. Without "->" the after set equals the before set. */
KD_API bool kd_alias_is_write(const kd_alias_info *alias);
KD_API size_t kd_alias_num_before(const kd_alias_info *alias);
KD_API const char *kd_alias_before(const kd_alias_info *alias, size_t i);
KD_API size_t kd_alias_num_after(const kd_alias_info *alias);
KD_API const char *kd_alias_after(const kd_alias_info *alias, size_t i);

/* ---- Arguments and returns ---------------------------------------------- */

typedef struct kd_argument kd_argument;

/* The name; "" for an unnamed return. */
KD_API const char *kd_argument_name(const kd_argument *arg);
KD_API const kd_type *kd_argument_type(const kd_argument *arg);
/* The default exactly as written ("1", "[0,1]", "'mean'", "None"), or NULL. */
KD_API const char *kd_argument_default(const kd_argument *arg);
/* True for arguments after `*`. */
KD_API bool kd_argument_kwarg_only(const kd_argument *arg);
/* The annotation on the argument's type (`Tensor(a!)`), or NULL. */
KD_API const kd_alias_info *kd_argument_alias(const kd_argument *arg);
/* True when the argument (or, for a list, its elements) is written to. */
KD_API bool kd_argument_is_write(const kd_argument *arg);

/* Decodes the default into a boxed value of the argument's type: `None`,
 * `True`, numbers (`1`, `-1`, `1e-05`, `inf`), strings with escapes, lists
 * (`[0, 1]`, `[]`), `int[2] stride=1` meaning [1, 1], ScalarType names
 * (`long`), `contiguous_format`, `strided`, `Mean`/`Sum`/`None` reductions for
 * int. On `Any` and type variables a list default is a generic list whose
 * elements are decoded the same way (`Any x=[1, 'a']`). The caller owns *out. KD_ENOTFOUND (with the argument's name) when
 * there is no default; KD_ETYPE when the text does not fit the type; *out is
 * None on error. */
KD_API kd_status kd_argument_default_value(const kd_argument *arg, kd_value *out);

/* ---- Schemas ------------------------------------------------------------ */

typedef struct kd_schema kd_schema;

/* Parses one schema from `len` bytes of `text` (NUL not needed; any bytes
 * allowed). The name is required; `ns::`, `.overload`, arguments and returns
 * are as in the JIT's schema language; a missing `-> ...` is an error.
 * Surrounding whitespace is ignored. On success the caller owns *out (free
 * with kd_schema_free). On error *out is NULL and the status is KD_ESYNTAX (or
 * KD_ENOMEM), with a message "line L, column C: expected X, found Y". */
KD_API kd_status kd_schema_parse(const char *text, size_t len, kd_schema **out);

/* NULL is ignored. */
KD_API void kd_schema_free(kd_schema *schema);

/* "" when absent. */
KD_API const char *kd_schema_namespace(const kd_schema *schema);
/* The operator's base name, e.g. "add_" (without namespace or overload). */
KD_API const char *kd_schema_name(const kd_schema *schema);
KD_API const char *kd_schema_overload(const kd_schema *schema);

KD_API size_t kd_schema_num_arguments(const kd_schema *schema);
KD_API const kd_argument *kd_schema_argument(const kd_schema *schema, size_t i);
KD_API size_t kd_schema_num_returns(const kd_schema *schema);
KD_API const kd_argument *kd_schema_return(const kd_schema *schema, size_t i);
/* `...` at the end of the arguments / as the returns. */
KD_API bool kd_schema_is_vararg(const kd_schema *schema);
KD_API bool kd_schema_is_varret(const kd_schema *schema);

/* Prints the canonical form. For a schema written canonically, the output is
 * byte for byte the input. Returns the needed length as snprintf. */
KD_API size_t kd_schema_format(const kd_schema *schema, char *buf, size_t cap);

/* PyTorch's classification of a schema (torchgen's SchemaKind). */
typedef enum kd_schema_kind {
  KD_SCHEMA_FUNCTIONAL = 0, /* writes nothing */
  KD_SCHEMA_INPLACE = 1,    /* name ends in '_' (or is an in-place dunder): writes self */
  KD_SCHEMA_OUT = 2,        /* writes keyword-only out arguments */
  KD_SCHEMA_MUTABLE = 3,    /* writes a positional argument other than self */
  KD_SCHEMA_SCRATCH = 4,    /* an out schema with _scratch_ arguments */
} kd_schema_kind;

KD_API kd_schema_kind kd_schema_kind_of(const kd_schema *schema);
/* "functional", "inplace", "out", "mutable", "scratch". */
KD_API const char *kd_schema_kind_name(kd_schema_kind kind);

/* The signature that groups the functional, inplace and out variants of one
 * operator (torchgen's FunctionSchema.signature()): no namespace or overload,
 * the in-place '_' dropped, out arguments and alias annotations removed, return
 * names removed, and a return added for each mutated input that no return
 * aliases. The variants of one group give the same text. Returns the needed
 * length as snprintf. */
KD_API size_t kd_schema_signature(const kd_schema *schema, char *buf, size_t cap);

KD_EXTERN_C_END

#endif /* KD_SCHEMA_H */
