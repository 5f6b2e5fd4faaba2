/*
 * lang.h: the little language of the kd command line (`kd run`, `kd call`
 * and the interactive prompt). It is just enough to drive any registered
 * operator through the boxed API, as an interpreter would:
 *
 *   x = [[1, 2], [3, 4]]          # a list literal: a tensor where a Tensor is expected
 *   y = add(x, 10, alpha=2)       # overloads resolved as PyTorch's argument parser does
 *   m = max(y, 1)                 # a tuple result; m[0], m[1], m[-1]
 *   v, i = m                      # unpacking
 *   sum(y, [1], keepdim=True)     # a bare expression is printed
 *   demo::neg(x)                  # another namespace; add.Tensor(...) names an overload
 *
 * The rules (literals, names, operators, overload resolution, builtins) are
 * documented at the top of lang_eval.c and lang_call.c and in `kd run --help`.
 */
#ifndef KD_TOOL_LANG_H
#define KD_TOOL_LANG_H

#include <stddef.h>
#include <stdio.h>

typedef struct kd_lang kd_lang;

/* A new interpreter: printed values and trace lines go to `out`, error
 * messages to `err` (both borrowed; they must outlive the interpreter). NULL
 * when out of memory. */
kd_lang *kdc_lang_new(FILE *out, FILE *err);

/* Frees the interpreter and its variables; turns tracing off if a program
 * turned it on. NULL is fine. */
void kdc_lang_free(kd_lang *L);

/* Runs source text (one line or a whole program). `name` names the source in
 * error messages, printed to err as "NAME:LINE:COL: error: MESSAGE" (NULL
 * means "<string>"). Returns 0 when every statement ran, 1 after the first
 * error (earlier statements took effect; variables persist across calls,
 * which is what the interactive prompt relies on). Never aborts on bad
 * input. */
int kdc_lang_run(kd_lang *L, const char *src, size_t len, const char *name);

/* For the interactive prompt: 1 when `src` is complete (all brackets closed,
 * no open string, not ending in a binary operator, `=`, comma or
 * backslash), 0 when more lines are needed. Comments are ignored. A source
 * with more closing than opening brackets is complete (running it reports
 * the error). */
int kdc_lang_complete(const char *src, size_t len);

/* `kd call`: calls operator `op` (as the language names it: add, add.Tensor,
 * aten::add, demo::neg) with arguments given as separate texts: each
 * argv[i] is an expression of the language, or NAME=EXPRESSION for a
 * keyword argument. Prints the result to out as a bare expression would.
 * Returns 0, or 1 after printing the error to err (argument errors as
 * "<arg N>:LINE:COL: error: ...", call errors as "kd call: error: ..."). */
int kdc_lang_call_argv(kd_lang *L, const char *op, int argc, char **argv);

#endif
