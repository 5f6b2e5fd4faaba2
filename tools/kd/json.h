/*
 * json.h: a small streaming JSON writer for the `--json` output of kd's
 * listing subcommands.
 *
 * The caller opens and closes containers and writes keys and values in
 * order; the writer puts the commas, colons and line breaks, so there are
 * never trailing commas, and the output is exactly the sequence of calls
 * (no sorting, no hashing: deterministic). Strings are escaped as RFC 8259
 * asks: '"' and '\' are escaped, control characters are written as \n, \t,
 * ... or \u00XX, and bytes that are not valid UTF-8 become \ufffd, so the
 * output is always valid UTF-8 JSON whatever the input bytes.
 *
 * Layout: the children of containers opened at a depth below `line_depth`
 * (the top-level container is at depth 0) go on lines of their own, indented
 * by two spaces per level; deeper containers are written on one line with
 * ", " and ": " between their parts (as are arrays opened with
 * kdc_json_begin_flat_array, and everything inside them). With line_depth 1 a top-level array of
 * records prints one record per line:
 *
 *   [
 *     {"key": "CPU", "dtypes": ["int32", "int64"]},
 *     {"key": "Meta", "dtypes": []}
 *   ]
 *
 * Misuse (a value where a key is due, a key outside an object, closing the
 * wrong kind of container, nesting deeper than KDC_JSON_MAX_DEPTH, a second
 * top-level value) is recorded rather than written, and makes
 * kdc_json_finish fail; nothing aborts.
 */
#ifndef KD_TOOL_JSON_H
#define KD_TOOL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KDC_JSON_MAX_DEPTH 32

typedef struct kdc_json {
  FILE *out;                               /* borrowed */
  int line_depth;                          /* see the layout rule above */
  int depth;                               /* containers open now */
  char kind[KDC_JSON_MAX_DEPTH];           /* '[' or '{' per open container */
  bool flat[KDC_JSON_MAX_DEPTH];           /* written on one line whatever its depth */
  size_t count[KDC_JSON_MAX_DEPTH];        /* items (values, or keys) written in it */
  bool key_pending;                        /* a key was written; its value is due */
  bool done;                               /* a whole top-level value was written */
  bool misused;                            /* a call broke the rules (see above) */
} kdc_json;

/* Starts a document on `out` (borrowed; it must outlive the writer). */
void kdc_json_init(kdc_json *j, FILE *out, int line_depth);

void kdc_json_begin_array(kdc_json *j);
/* An array written on one line whatever its depth (a short list of names). */
void kdc_json_begin_flat_array(kdc_json *j);
void kdc_json_end_array(kdc_json *j);
void kdc_json_begin_object(kdc_json *j);
void kdc_json_end_object(kdc_json *j);

/* An object's key; the next call must write its value. */
void kdc_json_key(kdc_json *j, const char *key);

/* Values. A NULL string is written as null. */
void kdc_json_string(kdc_json *j, const char *s);
void kdc_json_string_n(kdc_json *j, const char *s, size_t len);
void kdc_json_int(kdc_json *j, long long v);
void kdc_json_bool(kdc_json *j, bool v);
void kdc_json_null(kdc_json *j);

/* Key and value in one call. */
void kdc_json_field_string(kdc_json *j, const char *key, const char *s);
void kdc_json_field_int(kdc_json *j, const char *key, long long v);
void kdc_json_field_bool(kdc_json *j, const char *key, bool v);

/* Ends the document with a newline. Returns 0, or -1 when the calls broke
 * the rules, a container is still open, nothing was written, or writing to
 * the stream failed (ferror). */
int kdc_json_finish(kdc_json *j);

/* Writes `len` bytes of `s` as a quoted JSON string (the escaping above). */
void kdc_json_put_string(FILE *out, const char *s, size_t len);

#endif /* KD_TOOL_JSON_H */
