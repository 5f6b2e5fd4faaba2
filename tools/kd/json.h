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
 * kd__json_begin_flat_array, and everything inside them). With line_depth 1 a top-level array of
 * records prints one record per line:
 *
 *   [
 *     {"key": "CPU", "dtypes": ["int32", "int64"]},
 *     {"key": "Meta", "dtypes": []}
 *   ]
 *
 * Misuse (a value where a key is due, a key outside an object, closing the
 * wrong kind of container, nesting deeper than KD__JSON_MAX_DEPTH, a second
 * top-level value) is recorded rather than written, and makes
 * kd__json_finish fail; nothing aborts.
 */
#ifndef KD_TOOL_JSON_H
#define KD_TOOL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KD__JSON_MAX_DEPTH 32

typedef struct kd__json {
  FILE *out;                               /* borrowed */
  int line_depth;                          /* see the layout rule above */
  int depth;                               /* containers open now */
  char kind[KD__JSON_MAX_DEPTH];           /* '[' or '{' per open container */
  bool flat[KD__JSON_MAX_DEPTH];           /* written on one line whatever its depth */
  size_t count[KD__JSON_MAX_DEPTH];        /* items (values, or keys) written in it */
  bool key_pending;                        /* a key was written; its value is due */
  bool done;                               /* a whole top-level value was written */
  bool misused;                            /* a call broke the rules (see above) */
} kd__json;

/* Starts a document on `out` (borrowed; it must outlive the writer). */
void kd__json_init(kd__json *j, FILE *out, int line_depth);

void kd__json_begin_array(kd__json *j);
/* An array written on one line whatever its depth (a short list of names). */
void kd__json_begin_flat_array(kd__json *j);
void kd__json_end_array(kd__json *j);
void kd__json_begin_object(kd__json *j);
void kd__json_end_object(kd__json *j);

/* An object's key; the next call must write its value. */
void kd__json_key(kd__json *j, const char *key);

/* Values. A NULL string is written as null. */
void kd__json_string(kd__json *j, const char *s);
void kd__json_string_n(kd__json *j, const char *s, size_t len);
void kd__json_int(kd__json *j, long long v);
void kd__json_bool(kd__json *j, bool v);
void kd__json_null(kd__json *j);

/* Key and value in one call. */
void kd__json_field_string(kd__json *j, const char *key, const char *s);
void kd__json_field_int(kd__json *j, const char *key, long long v);
void kd__json_field_bool(kd__json *j, const char *key, bool v);

/* Ends the document with a newline. Returns 0, or -1 when the calls broke
 * the rules, a container is still open, nothing was written, or writing to
 * the stream failed (ferror). */
int kd__json_finish(kd__json *j);

/* Writes `len` bytes of `s` as a quoted JSON string (the escaping above). */
void kd__json_put_string(FILE *out, const char *s, size_t len);

#endif /* KD_TOOL_JSON_H */
