/*
 * schema_impl.h: the in-memory layout of a parsed schema. Not installed.
 *
 * A schema is ONE malloc'd block: the kd_schema header first, then a copy of
 * the source text (names and defaults point into it, each cut by a NUL that
 * replaced the byte after it), then the type, argument and alias nodes. Every
 * link inside the block is a 32-bit offset relative to the address of the
 * field that holds it (0 = NULL), so the parser builds the block in a scratch
 * buffer and moves it into its final allocation with one memcpy, no fix-ups.
 * Lists of children are arrays of such offsets.
 */
#ifndef KD_SCHEMA_IMPL_H
#define KD_SCHEMA_IMPL_H

#include "core/internal.h"
#include "kd/schema.h"

typedef int32_t kd__rel;

static inline const void *kd__rel_get(const kd__rel *r) {
  return *r ? (const void *)((const char *)r + *r) : NULL;
}
static inline void kd__rel_set(kd__rel *r, const void *p) {
  *r = p ? (kd__rel)((const char *)p - (const char *)r) : 0;
}
/* Element i of an array of offsets. */
static inline const void *kd__rel_at(const kd__rel *array, size_t i) {
  return kd__rel_get(array + i);
}

struct kd_alias_info {
  uint8_t is_write;
  uint8_t has_arrow; /* "->" was written (after set given explicitly) */
  uint8_t pad_[2];
  uint32_t nbefore;
  uint32_t nafter;
  kd__rel before; /* array of nbefore offsets to strings ("*" for wildcard) */
  kd__rel after;  /* array of nafter offsets; equals `before` without "->" */
};

struct kd_type {
  uint8_t kind;    /* kd_type_kind */
  uint8_t pad_[3];
  kd__rel alias;   /* annotation written right after this type, or 0 */
  kd__rel a;       /* element (OPTIONAL, LIST, FUTURE, RREF, DICT value);
                      name (VAR, CLASS); items array (TUPLE, UNION) */
  kd__rel b;       /* key type (DICT); name length (VAR, CLASS) */
  int64_t n;       /* LIST: N or -1; TUPLE, UNION: item count */
};

struct kd_argument {
  kd__rel name;    /* 0 for an unnamed return */
  kd__rel type;
  kd__rel def;     /* default text, or 0 */
  uint16_t name_len;
  uint16_t def_len;
  uint8_t kwarg_only;
  uint8_t pad_[3];
};

struct kd_schema {
  kd__rel ns;       /* 0 when absent */
  kd__rel name;
  kd__rel overload; /* 0 when absent */
  uint32_t nargs;
  uint32_t nrets;
  kd__rel args;     /* array of nargs offsets to kd_argument */
  kd__rel rets;
  uint16_t ns_len;
  uint16_t name_len;
  uint16_t overload_len;
  uint8_t vararg;
  uint8_t varret;
};

/* Spelling of base kind k (k < KD_TYPE_VAR) and its length; each row is
 * padded so that 16 bytes can be read from it (kd__out_put16). */
extern const char kd__type_base_names[][24];
extern const uint8_t kd__type_base_lens[];

/* The annotation torchgen sees on an argument: the alias on its type (under
 * any `?`), or else, for a list, the alias on the list's elements. */
const kd_alias_info *kd__argument_annotation(const kd_argument *arg);

/* Equality of annotations as torchgen compares them (before set, write flag,
 * explicit after set). */
bool kd__alias_equal(const kd_alias_info *a, const kd_alias_info *b);

/* The output helper of the printers: like kd__fmt, inline. */
typedef struct kd__out {
  char *buf;
  size_t cap;
  size_t len;
} kd__out;

static inline void kd__out_putn(kd__out *o, const char *s, size_t n) {
  if (o->len + n < o->cap) {
    memcpy(o->buf + o->len, s, n);
  } else if (o->len + 1 < o->cap) {
    memcpy(o->buf + o->len, s, o->cap - 1 - o->len); /* truncated, as snprintf */
  }
  o->len += n;
}
static inline void kd__out_putc(kd__out *o, char c) {
  if (o->len + 1 < o->cap) o->buf[o->len] = c;
  o->len++;
}
static inline void kd__out_puts(kd__out *o, const char *s) { kd__out_putn(o, s, strlen(s)); }
/* As kd__out_putn for a source with at least 16 readable bytes (the text
 * copy inside a schema block is padded for this): short strings are copied
 * with one 16-byte move, bytes past n being overwritten later or cut by the
 * final NUL. */
static inline void kd__out_put16(kd__out *o, const char *s, size_t n) {
  if (n <= 16 && o->len + 16 < o->cap) {
    memcpy(o->buf + o->len, s, 16);
    o->len += n;
  } else {
    kd__out_putn(o, s, n);
  }
}
/* NUL-terminates (truncating as snprintf) and returns the needed length. */
static inline size_t kd__out_finish(kd__out *o) {
  if (o->cap) o->buf[o->len < o->cap ? o->len : o->cap - 1] = '\0';
  return o->len;
}

/* Printing flags. */
#define KD__PRINT_ALIAS 1u /* print alias annotations */

void kd__type_print(kd__out *o, const kd_type *type, unsigned flags);
void kd__alias_print(kd__out *o, const kd_alias_info *alias);
/* `type name=default` (flags as above; `with_default` prints the default). */
void kd__argument_print(kd__out *o, const kd_argument *arg, unsigned flags, bool with_name,
                        bool with_default);

#endif /* KD_SCHEMA_IMPL_H */
