/*
 * print.h: the printer of the kd command line. Tensors are written as
 * PyTorch 1.13's repr writes them with the default print options (precision
 * 4, threshold 1000, edge items 3, line width 80, scientific notation chosen
 * automatically), with the project's dtype names in the suffix
 * ("dtype=int32", not "dtype=torch.int32"). Other boxed values are written as
 * Python's repr writes the matching Python values.
 *
 * Both functions build the whole text in memory first and write it with one
 * call, so on error nothing has been written to `out`.
 */
#ifndef KD_TOOL_PRINT_H
#define KD_TOOL_PRINT_H

#include <stdio.h>

#include "kd/kd.h"

/* Writes `t` as PyTorch's repr does (no trailing newline). `t` is borrowed.
 * Returns 0, or -1 with kd_last_error() set (e.g. data that cannot be read);
 * nothing is half-written on error where avoidable.
 * Errors: KD_EINVAL for a NULL argument; KD_EUNSUPPORTED for a tensor on a
 * device other than cpu and meta whose bytes cannot be copied to the host
 * (the message names the device); KD_ENOMEM; KD_EINTERNAL when writing to
 * `out` fails. A meta tensor has no data and prints as
 * "tensor(..., device='meta', size=(2, 3))". */
int kdc_print_tensor(FILE *out, const kd_tensor *t);

/* Writes any boxed value: tensors as above; ints; floats as Python's repr
 * (shortest round trip: 1.0, 0.1, 1e+20, inf, nan); True/False/None; strings
 * as Python repr ('abc'); int[]/float[]/bool[]/Tensor[]/list as [a, b];
 * tuples as (a, b); a dtype as its kd name (int32); a device as its name
 * (cpu, meta, cuda:1 ...); Scalar/complex/layout/memory format sensibly.
 * Returns 0 or -1 as above. `v` is borrowed.
 * More precisely: a complex is written as Python's repr of a complex
 * ((1+2j), 2j, (1.5-0j)); a Scalar as the Python number it holds; a layout
 * and a memory format by their kd names (strided, channels_last); None
 * entries of a Tensor?[] as None; a one-element tuple as (x,). Errors: those
 * of kdc_print_tensor for any tensor inside the value, KD_EINVAL for a NULL
 * argument or an unknown tag. */
int kdc_print_value(FILE *out, const kd_value *v);

#endif /* KD_TOOL_PRINT_H */
