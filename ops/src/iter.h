/*
 * iter.h: libkdops' private additions to the tensor iterator (the public
 * part is include/kdk/iter.h).
 */
#ifndef KD_OPS_ITER_H
#define KD_OPS_ITER_H

#include "kdk/iter.h"
#include "parallel.h"
#include "structured.h"

/* kdk_iter_build without the short path (for tests that compare the two). */
kd_status kdk__iter_build_general(kdk_iter *it);

/* (structured.c, for the short path) Output i of an INPLACE / OUT call is
 * s->given[i] as it is: what kdk_structured_set_output does when the given
 * tensor already has the output's shape, dtype, device and strides (the
 * caller checked). */
kd_status kdk__structured_adopt_given(kdk_structured *s, int i);

/* PyTorch's canCast: no complex -> real, no floating -> integral, nothing but
 * bool -> bool. */
bool kdk__can_cast(kd_dtype from, kd_dtype to);

/* The kit's ABI check of an iterator and its structured call (kdk/common.h):
 * KD_OK, or KD_EUNSUPPORTED with a message. */
kd_status kdk__iter_check_abi(const kdk_iter *it);
kd_status kdk__structured_check_abi(const kdk_structured *s);

/* ---- Helpers shared by libkdops' sources (iter.c) ------------------------------- */

/* PyTorch's maybe_wrap_dim: dim in [-n, n - 1] where n is ndim, or 1 for a
 * 0-dim tensor; *out = dim, counted from the front. Else `code` with "<op>:
 * Dimension out of range (expected to be in range of [-2, 1], but got 2)"
 * (no "<op>: " when op is NULL); *out untouched. */
kd_status kdk__wrap_dim(const char *op, kd_status code, int64_t dim, int64_t ndim, int64_t *out);

/* "[2, 3]" ("[]" for n == 0) into buf, cut at cap; returns buf. */
const char *kdk__fmt_ints(char *buf, size_t cap, const int64_t *v, int64_t n);

/* Re-records the current error (kd_last_error) as st with "<op>: " in front,
 * unless it already starts with it; returns st. */
kd_status kdk__error_with_op(const char *op, kd_status st);

#endif
