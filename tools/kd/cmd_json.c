/*
 * cmd_json.c: the --json output of kd's listing subcommands (ops, dump,
 * table, kernels), written with the writer of json.h. The commands parse
 * their options (cmd_ops.c, cmd_kernels.c) and call these.
 *
 * The documents, field by field (strings unless said otherwise; "where" is
 * the place a registration was made, "FILE:LINE" as the library records it,
 * or null when unknown):
 *
 * kd ops [PATTERN] --json: an array, in name order, of
 *   {"op": "aten::add.Tensor",      the name kd dump/table/kernels take
 *    "name": "aten::add",           without the overload
 *    "overload": "Tensor",          only when the operator has one
 *    "schema": "add.Tensor(...) -> Tensor"}   canonical; null when the
 *                                   operator is implemented but not defined
 *
 * kd kernels OP --json: an array of kernel registrations, by dispatch key,
 * newest first within a key:
 *   {"key": "CPU", "keyed": bool (registered with a kernel key),
 *    "layout": "Strided" or "ALL_LAYOUT", "dtypes": ["float32", ...],
 *    "form": "unboxed" | "boxed" | "unboxed+boxed" | "closure" | "functor" | ...,
 *    "signature": C signature or null, "registered_at": where,
 *    "active": bool (false: overridden by a newer kernel for the key),
 *    "custom": bool, "staged": bool (custom and not merged yet),
 *    "key_arg": int (the argument that selects the kernel; -1: the first tensor),
 *    "rejected": why       only for a kernel set aside because it does not fit
 *                          the schema (it takes no part in dispatch),
 *    "args": [...]}                 only for kernel-key registrations of a
 *                                   defined operator: one entry per dtype,
 *   {"dtypes": ["int32"], "inputs": [DEF...], "outputs": [DEF...]}, where a
 *   DEF is {"name": ..., "backend": ..., "layout": ..., "dtype": ...} for a
 *   tensor ("ALL_BACKEND", "ALL_LAYOUT", "ALL_DTYPE": any) and
 *   {"name": ..., "attribute": TYPE} for anything else.
 *
 * kd dump OP --json: an object
 *   {"op": ..., "schema": ... or null,
 *    "defs": [where...]             where the schema was registered,
 *    "tags": [...],
 *    "registrations": {"CPU": [REG...], "CompositeImplicitAutograd": [...]}}
 *   keyed by dispatch key (runtime keys, then alias keys, in key order); a
 *   REG is a kernels record without "key" and "args".
 *
 * kd table OP --json: the computed dispatch table, an object
 *   {"op": ...,
 *    "table": [ENTRY...]            one per runtime key that has an entry,
 *                                   in key order (lowest priority first)
 *    "missing": ["Undefined", ...]} runtime keys with no entry
 *   where an ENTRY is
 *   {"key": "CPU", "reason": "kernel" | "default backend kernel" |
 *      "nested kernel" | "math kernel" | "autograd kernel" |
 *      "ambiguous autogradother" | "catch-all" | "backend fallback"
 *      (PyTorch 1.13's words, docs/ARCHITECTURE.md "How a slot is filled"),
 *    "form": as above, or "fallthrough", or "kernel keys" when the key
 *      selects among kernel-key registrations,
 *    "registered_at": where          for a single kernel (the built-in
 *      autograd fallthrough's: "kdispatch (built-in autograd fallthrough)"), or
 *    "kernel_keys": [{"layout": ..., "dtypes": [...], "form": ...,
 *                     "registered_at": where}...]   for "kernel keys"}
 *   The library has no structured view of the table, so the entries are
 *   read from kd_op_dump_table's lines (library.h documents them): "KEY:
 *   FORM [REASON] from WHERE" and "KEY: kernel keys [REASON]: ...". A line
 *   that does not read that way makes the command fail rather than guess.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "kd/kd.h"
#include "kd/memory.h"

/* ---- Helpers --------------------------------------------------------------- */

/* A malloc'd copy of what fmt(op, buf, cap) writes; NULL when out of memory. */
static char *dump_text(const kd_op *op, size_t (*fmt)(const kd_op *, char *, size_t)) {
  size_t n = fmt(op, NULL, 0);
  char *buf = kd_host_malloc(n + 1);
  if (buf) fmt(op, buf, n + 1);
  return buf;
}

/* The canonical schema, malloc'd; NULL when out of memory. */
static char *schema_text(const kd_schema *s) {
  size_t n = kd_schema_format(s, NULL, 0);
  char *buf = kd_host_malloc(n + 1);
  if (buf) kd_schema_format(s, buf, n + 1);
  return buf;
}

/* Writes the schema field: the canonical text, or null when not defined.
 * False when out of memory. */
static bool put_schema(kdc_json *j, const kd_op *op) {
  const kd_schema *s = kd_op_schema(op);
  kdc_json_key(j, "schema");
  if (!s) {
    kdc_json_null(j);
    return true;
  }
  char *text = schema_text(s);
  if (!text) return false;
  kdc_json_string(j, text);
  kd_host_free(text);
  return true;
}

static void put_dtypes(kdc_json *j, kd_dtype_set set) {
  kdc_json_begin_array(j);
  for (int d = 0; d < KD_DTYPE_COUNT; d++)
    if (set & KD_DTYPE_BIT(d)) kdc_json_string(j, kd_dtype_name((kd_dtype)d));
  kdc_json_end_array(j);
}

static const char *layout_name(int layout) {
  return layout == KD_ALL_LAYOUT ? "ALL_LAYOUT" : kd_layout_name((kd_layout)layout);
}

/* The name of an argument definition's field (kind 0 backend, 1 layout,
 * 2 dtype). */
static const char *field_name(int v, int kind) {
  if (kind == 0) return v == KD_ALL_BACKEND ? "ALL_BACKEND" : kd_dispatch_key_name((kd_dispatch_key)v);
  if (kind == 1) return layout_name(v);
  return v == KD_ALL_DTYPE ? "ALL_DTYPE" : kd_dtype_name((kd_dtype)v);
}

/* Ends a document: 0, or 1 after printing why not. */
static int finish(kdc_json *j, const char *cmd) {
  if (kdc_json_finish(j) != 0) {
    fprintf(stderr, "kd %s: writing the JSON output failed\n", cmd);
    return 1;
  }
  return 0;
}

static int out_of_memory(const char *cmd) {
  fprintf(stderr, "kd %s: out of memory\n", cmd);
  return 1;
}

/* ---- kd ops --json ----------------------------------------------------------- */

typedef struct ops_state {
  kdc_json *j;
  const char *pattern;
  bool oom;
} ops_state;

static int put_op(kd_op *op, void *ud) {
  ops_state *st = ud;
  const char *full = kd_op_name(op);
  if (st->pattern && !kdc_ops_match(st->pattern, full)) return 0;
  /* "ns::name.overload": the overload follows the first '.' after "::". */
  const char *sep = strstr(full, "::");
  const char *dot = strchr(sep ? sep + 2 : full, '.');
  kdc_json *j = st->j;
  kdc_json_begin_object(j);
  kdc_json_field_string(j, "op", full);
  kdc_json_key(j, "name");
  kdc_json_string_n(j, full, dot ? (size_t)(dot - full) : strlen(full));
  if (dot) kdc_json_field_string(j, "overload", dot + 1);
  if (!put_schema(j, op)) {
    st->oom = true;
    return 1;
  }
  kdc_json_end_object(j);
  return 0;
}

int kdc_json_ops(FILE *out, const char *pattern) {
  kdc_json j;
  kdc_json_init(&j, out, 1);
  ops_state st = {&j, pattern, false};
  kdc_json_begin_array(&j);
  int rc = kd_ops_foreach(put_op, &st);
  if (st.oom || rc < 0) return out_of_memory("ops");
  kdc_json_end_array(&j);
  return finish(&j, "ops");
}

/* ---- kd kernels --json -------------------------------------------------------- */

/* The name of argument i (i < nargs) or result i - nargs. */
static void arg_label(const kd_schema *s, const kd_kernel_info *k, uint32_t i, char *buf,
                      size_t cap) {
  if (i < k->nargs) {
    snprintf(buf, cap, "%s", kd_argument_name(kd_schema_argument(s, i)));
  } else {
    const char *n = kd_argument_name(kd_schema_return(s, i - k->nargs));
    if (n && *n) snprintf(buf, cap, "%s", n);
    else snprintf(buf, cap, "result%u", i - k->nargs);
  }
}

/* The argument definitions for each dtype the registration serves. */
static void put_argdefs(kdc_json *j, const kd_schema *s, const kd_kernel_info *k) {
  uint32_t n = k->nargs + k->nrets;
  char label[128], type[128];
  kdc_json_key(j, "args");
  kdc_json_begin_array(j);
  for (int d = 0; d < KD_DTYPE_COUNT; d++) {
    if (!(k->dtypes & KD_DTYPE_BIT(d))) continue;
    const kd_arg_def *defs = &k->argdefs[d * n];
    kdc_json_begin_object(j);
    kdc_json_key(j, "dtypes");
    put_dtypes(j, KD_DTYPE_BIT(d));
    kdc_json_key(j, "inputs");
    kdc_json_begin_array(j);
    for (uint32_t i = 0; i < n; i++) {
      if (i == k->nargs) {
        kdc_json_end_array(j);
        kdc_json_key(j, "outputs");
        kdc_json_begin_array(j);
      }
      arg_label(s, k, i, label, sizeof label);
      kdc_json_begin_object(j);
      kdc_json_field_string(j, "name", label);
      if (defs[i].backend == KD_ARGDEF_NOT_TENSOR) {
        const kd_argument *a = i < k->nargs ? kd_schema_argument(s, i)
                                            : kd_schema_return(s, i - k->nargs);
        kd_type_format(kd_argument_type(a), type, sizeof type);
        kdc_json_field_string(j, "attribute", type);
      } else {
        kdc_json_field_string(j, "backend", field_name(defs[i].backend, 0));
        kdc_json_field_string(j, "layout", field_name(defs[i].layout, 1));
        kdc_json_field_string(j, "dtype", field_name(defs[i].dtype, 2));
      }
      kdc_json_end_object(j);
    }
    if (k->nrets == 0) {
      kdc_json_end_array(j);
      kdc_json_key(j, "outputs");
      kdc_json_begin_array(j);
    }
    kdc_json_end_array(j);
    kdc_json_end_object(j);
  }
  kdc_json_end_array(j);
}

/* One kernel registration; `with_key` adds "key" first and "args" last
 * (kd kernels), without them it is a kd dump record. */
static void put_kernel(kdc_json *j, const kd_schema *s, const kd_kernel_info *k, bool with_key) {
  kdc_json_begin_object(j);
  if (with_key) kdc_json_field_string(j, "key", kd_dispatch_key_name(k->key));
  kdc_json_field_bool(j, "keyed", k->keyed);
  kdc_json_field_string(j, "layout", layout_name(k->layout));
  kdc_json_key(j, "dtypes");
  put_dtypes(j, k->dtypes);
  kdc_json_field_string(j, "form", k->form);
  kdc_json_field_string(j, "signature", k->signature);
  kdc_json_field_string(j, "registered_at", k->debug);
  kdc_json_field_bool(j, "active", k->active);
  kdc_json_field_bool(j, "custom", k->custom);
  kdc_json_field_bool(j, "staged", k->staged);
  kdc_json_field_int(j, "key_arg", k->keyed ? k->key_arg : -1);
  if (k->rejected) kdc_json_field_string(j, "rejected", k->rejected);
  if (with_key && k->argdefs && s) put_argdefs(j, s, k);
  kdc_json_end_object(j);
}

typedef struct kernels_state {
  kdc_json *j;
  const kd_schema *schema;
  int key;         /* kd dump: only this key's registrations; -1: all */
  bool key_opened; /* kd dump: the key's array is open */
} kernels_state;

static int put_kernel_cb(const kd_kernel_info *k, void *ud) {
  kernels_state *st = ud;
  put_kernel(st->j, st->schema, k, true);
  return 0;
}

int kdc_json_kernels(FILE *out, const kd_op *op) {
  kdc_json j;
  kdc_json_init(&j, out, 1);
  kernels_state st = {&j, kd_op_schema(op), -1, false};
  kdc_json_begin_array(&j);
  kd_op_kernels_foreach(op, put_kernel_cb, &st);
  kdc_json_end_array(&j);
  return finish(&j, "kernels");
}

/* ---- kd dump --json ------------------------------------------------------------- */

/* A registration of key st->key: opens the key's array at the first one. */
static int put_registration_cb(const kd_kernel_info *k, void *ud) {
  kernels_state *st = ud;
  if ((int)k->key != st->key) return 0;
  if (!st->key_opened) {
    kdc_json_key(st->j, kd_dispatch_key_name(k->key));
    kdc_json_begin_array(st->j);
    st->key_opened = true;
  }
  put_kernel(st->j, st->schema, k, false);
  return 0;
}

/* The lines of `text` that start with `prefix`, the rest of each as a string. */
static void put_prefixed_lines(kdc_json *j, const char *text, const char *prefix) {
  size_t plen = strlen(prefix);
  kdc_json_begin_flat_array(j);
  for (const char *line = text; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len >= plen && !memcmp(line, prefix, plen))
      kdc_json_string_n(j, line + plen, len - plen);
    line += len + (nl ? 1 : 0);
  }
  kdc_json_end_array(j);
}

int kdc_json_dump(FILE *out, const kd_op *op) {
  /* Definitions and tags have no listing function: they are read from the
   * dump's "  def registered at WHERE" and "  tag NAME" lines. */
  char *text = dump_text(op, kd_op_dump);
  if (!text) return out_of_memory("dump");
  kdc_json j;
  kdc_json_init(&j, out, 2);
  kdc_json_begin_object(&j);
  kdc_json_field_string(&j, "op", kd_op_name(op));
  if (!put_schema(&j, op)) {
    kd_host_free(text);
    return out_of_memory("dump");
  }
  kdc_json_key(&j, "defs");
  put_prefixed_lines(&j, text, "  def registered at ");
  kdc_json_key(&j, "tags");
  put_prefixed_lines(&j, text, "  tag ");
  kd_host_free(text);
  kdc_json_key(&j, "registrations");
  kdc_json_begin_object(&j);
  /* Key order: runtime keys by priority, then alias keys, as kd dump. */
  for (int k = 0; k < (int)KD_KEY_INVALID_; k++) {
    if (!kd_dispatch_key_is_runtime((kd_dispatch_key)k) &&
        !kd_dispatch_key_is_alias((kd_dispatch_key)k))
      continue;
    kernels_state st = {&j, kd_op_schema(op), k, false};
    kd_op_kernels_foreach(op, put_registration_cb, &st);
    if (st.key_opened) kdc_json_end_array(&j);
  }
  kdc_json_end_object(&j);
  kdc_json_end_object(&j);
  return finish(&j, "dump");
}

/* ---- kd table --json ------------------------------------------------------------- */

/* The runtime key whose name starts `s` and is followed by ": " (the longest
 * such name), or -1. */
static int key_at(const char *s) {
  int best = -1;
  size_t best_len = 0;
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    if (!kd_dispatch_key_is_runtime((kd_dispatch_key)k)) continue;
    const char *name = kd_dispatch_key_name((kd_dispatch_key)k);
    size_t n = strlen(name);
    if (n > best_len && !strncmp(s, name, n) && s[n] == ':' && s[n + 1] == ' ') {
      best = k;
      best_len = n;
    }
  }
  return best;
}

typedef struct select_state {
  kdc_json *j;
  kd_dispatch_key key;
} select_state;

/* The kernel-key registrations a "kernel keys" entry selects among. */
static int put_select_cb(const kd_kernel_info *k, void *ud) {
  select_state *st = ud;
  if (k->key != st->key || !k->keyed || k->staged) return 0;
  kdc_json_begin_object(st->j);
  kdc_json_field_string(st->j, "layout", layout_name(k->layout));
  kdc_json_key(st->j, "dtypes");
  put_dtypes(st->j, k->dtypes);
  kdc_json_field_string(st->j, "form", k->form);
  kdc_json_field_string(st->j, "registered_at", k->debug);
  kdc_json_end_object(st->j);
  return 0;
}

/* One line of the table ("  KEY ..." without the newline): an entry, or
 * false when the line does not read as one. */
static bool put_table_line(kdc_json *j, const kd_op *op, const char *line, size_t len,
                           kd_keyset *seen) {
  static const char select_prefix[] = "kernel keys [";
  if (len < 3 || strncmp(line, "  ", 2) != 0) return false;
  int key = key_at(line + 2);
  if (key < 0) return false;
  const char *p = line + 2 + strlen(kd_dispatch_key_name((kd_dispatch_key)key)) + 2; /* ": " */
  const char *end = line + len;
  if (p >= end) return false;
  const char *open = memchr(p, '[', (size_t)(end - p));
  const char *close = open ? memchr(open, ']', (size_t)(end - open)) : NULL;
  if (!open || !close || open == p || open[-1] != ' ') return false;
  bool select = (size_t)(end - p) >= sizeof select_prefix - 1 &&
                !memcmp(p, select_prefix, sizeof select_prefix - 1);
  static const char from[] = "] from ";
  if (!select && ((size_t)(end - close) < sizeof from - 1 || memcmp(close, from, sizeof from - 1)))
    return false;
  *seen |= kd_keyset_of((kd_dispatch_key)key);
  kdc_json_begin_object(j);
  kdc_json_field_string(j, "key", kd_dispatch_key_name((kd_dispatch_key)key));
  kdc_json_key(j, "reason");
  kdc_json_string_n(j, open + 1, (size_t)(close - open - 1));
  kdc_json_key(j, "form");
  kdc_json_string_n(j, p, (size_t)(open - 1 - p));
  if (select) {
    kdc_json_key(j, "kernel_keys");
    kdc_json_begin_array(j);
    select_state st = {j, (kd_dispatch_key)key};
    kd_op_kernels_foreach(op, put_select_cb, &st);
    kdc_json_end_array(j);
  } else {
    const char *where = close + sizeof from - 1;
    kdc_json_key(j, "registered_at");
    if ((size_t)(end - where) == 1 && *where == '?') kdc_json_null(j);
    else kdc_json_string_n(j, where, (size_t)(end - where));
  }
  kdc_json_end_object(j);
  return true;
}

int kdc_json_table(FILE *out, const kd_op *op) {
  char *text = dump_text(op, kd_op_dump_table);
  if (!text) return out_of_memory("table");
  kdc_json j;
  /* Built in memory first: a line that does not read right leaves no half
   * document on `out`. */
  char *doc = NULL;
  size_t doc_len = 0;
  FILE *mem = open_memstream(&doc, &doc_len);
  if (!mem) {
    kd_host_free(text);
    return out_of_memory("table");
  }
  kdc_json_init(&j, mem, 2);
  kdc_json_begin_object(&j);
  kdc_json_field_string(&j, "op", kd_op_name(op));
  kdc_json_key(&j, "table");
  kdc_json_begin_array(&j);
  kd_keyset seen = 0;
  int rc = 0;
  const char *line = strchr(text, '\n'); /* after "dispatch table of OP:" */
  line = line ? line + 1 : text + strlen(text);
  while (*line && rc == 0) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (!(len >= 11 && !memcmp(line, "  missing: ", 11)) &&
        !put_table_line(&j, op, line, len, &seen)) {
      fprintf(stderr, "kd table: cannot read this line of the dispatch table of %s: \"%.*s\"\n",
              kd_op_name(op), (int)len, line);
      rc = 1;
    }
    line += len + (nl ? 1 : 0);
  }
  kd_host_free(text);
  kdc_json_end_array(&j);
  kdc_json_key(&j, "missing");
  kdc_json_begin_flat_array(&j);
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++)
    if (kd_dispatch_key_is_runtime((kd_dispatch_key)k) && !(seen & kd_keyset_of((kd_dispatch_key)k)))
      kdc_json_string(&j, kd_dispatch_key_name((kd_dispatch_key)k));
  kdc_json_end_array(&j);
  kdc_json_end_object(&j);
  if (rc == 0) rc = finish(&j, "table");
  if (fclose(mem) != 0 && rc == 0) rc = out_of_memory("table");
  if (rc == 0 && fwrite(doc, 1, doc_len, out) != doc_len) {
    fprintf(stderr, "kd table: writing the JSON output failed\n");
    rc = 1;
  }
  free(doc); /* open_memstream's buffer: the C library's */
  return rc;
}
