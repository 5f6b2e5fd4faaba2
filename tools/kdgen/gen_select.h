/*
 * gen_select.h: selective builds in generated code (include/kd/selective.h;
 * docs/CODEGEN.md, "Selective builds").
 *
 * Every writer that emits a registration (a row of a registration table and
 * the wrappers only that row refers to) wraps it in a guard, so that a
 * library compiled with `-include allow.h` (the header `kd trace -o allow.h`
 * writes) compiles neither the row nor the wrappers of an operator the
 * allow-list lacks; nothing then refers to its kernel, and a static link with
 * -ffunction-sections -fdata-sections -Wl,--gc-sections drops it:
 *
 *   bool g = kdg_sel_guard_open(&b, "aten", f, "CPU");
 *   ... the unboxed and boxed wrappers of (aten::add.Tensor, CPU) ...
 *   kdg_sel_guard_close(&b, g);
 *
 * emits
 *
 *   #if KD_SHOULD_REGISTER(aten, add_Tensor, CPU)
 *   ...
 *   #endif
 *
 * Code that other generated files name (a structured wrapper the direct
 * calls call) stays outside the guard, so that every object links; a static
 * link drops it with the direct call unless the program calls that.
 *
 * The condition is 1 outside a selective build, so the generated file is the same
 * for every build. Guard the table row with a second open/close pair in the
 * table's own buffer. A table whose rows may all be left out must still
 * compile: end it with a sentinel row that is not counted (size it with
 * sizeof minus one), never rely on it having a row.
 *
 * The generated C must include "kd/selective.h" (kdg_sel_include emits it).
 */
#ifndef KDGEN_GEN_SELECT_H
#define KDGEN_GEN_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "gen_impl.h"

/* The allow-list token of f's operator, as `kd trace` writes it: the name,
 * then "_" and the overload when there is one ("add_Tensor" for add.Tensor,
 * "add__Tensor" for add_.Tensor, "relu" for relu). Writes at most n bytes
 * (always terminated; n > 0). */
void kdg_sel_op_token(const kdg_func *f, char *buf, size_t n);

/* The enum suffix of kd_dispatch_key for a key name as written in a YAML
 * `dispatch:` ("CPU" -> "CPU", "Meta" -> "META", "PrivateUse1" ->
 * "PRIVATEUSE1", "CompositeExplicitAutograd" -> "COMPOSITE_EXPLICIT_AUTOGRAD");
 * NULL for a name that is neither a runtime nor an alias key. Static
 * storage. */
const char *kdg_sel_key_token(const char *key);

/* Emits `#if KD_SHOULD_REGISTER(ns, TOKEN, KEY)` for the registration of
 * (ns::f, key) and returns true; emits nothing and returns false when `key`
 * has no token (the code is then unconditional). `ns` is the operator's
 * namespace ("aten" for libkdops and for a backend's kernels of upstream
 * operators; the backend's namespace for its new operators). */
bool kdg_sel_guard_open(kdg_buf *b, const char *ns, const kdg_func *f, const char *key);

/* Closes what kdg_sel_guard_open opened (nothing when `opened` is false). */
void kdg_sel_guard_close(kdg_buf *b, bool opened);

/* Emits the #include of kd/selective.h (once per generated file). */
void kdg_sel_include(kdg_buf *b);

/* Writes OUT_DIR/ops/kdgen_select.h: per operator name (the base: "add" for
 * add.Tensor, add_.Tensor, add.out, add.Scalar), the dtypes a selective
 * build keeps for its inner loops,
 *
 *   #define KDK__SEL_DTYPES_add(KEY) (0u | KD__SEL_DTYPES(aten, add_Tensor, KEY) | ...)
 *
 * a kd_dtype_set constant (0xffffffffu outside a selective build) that the
 * dtype tables of ops/cpu test (ops/src/select.h). 0, or -1 with the error
 * reported. */
int kdg_sel_write_dtypes(const kdg_file *f, const char *ns, const char *out_dir, kdg_diag *d);

#endif
