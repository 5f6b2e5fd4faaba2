/*
 * select.h: selective builds reaching the inner loops of libkdops
 * (include/kd/selective.h; docs/GUIDE.md, "Selective builds"). Private to
 * libkdops.
 *
 * kdgen writes BUILD/gen/ops/kdgen_select.h: per operator name a macro
 * KDK__SEL_DTYPES_<name>(KEY), the dtypes the allow-list keeps for any
 * overload of that name with KEY (every dtype outside a selective build).
 * A dtype table of an ops/cpu file names its entries through
 * KDK__SEL_LOOP with the union of the names that reach the table:
 *
 *   #define ADD_SEL (KDK__SEL_DTYPES_add(CPU) | KDK__SEL_DTYPES_sub(CPU))
 *   static loop2d_fn *const add_loops[KD_DTYPE_COUNT] = {
 *       [KD_FLOAT32] = KDK__SEL_LOOP(ADD_SEL, KD_FLOAT32, add_f32), ...};
 *
 * A dtype the allow-list lacks gets NULL, which the kernel already reports
 * as "not implemented for <dtype>" (KD_EUNSUPPORTED); the loop function is
 * then referenced by no code and the compiler drops it. The union must name
 * every operator whose impl reaches the table: a name left out loses its
 * loops in a selective build (the impl then fails with that status, it
 * never crashes).
 *
 * The dtype is the one the dispatcher saw: the dtype of the call's key
 * tensor. A loop that runs on another dtype needs that dtype traced as
 * well (type promotion: add of an int64 and a float32 tensor runs the
 * float32 loop while the key tensor may be the int64 one), except for the
 * floating unary operators, whose masks add float32 to integral dtypes
 * (KDK__SEL_INT_TO_FLOAT).
 */
#ifndef KD_OPS_SELECT_H
#define KD_OPS_SELECT_H

#include <stddef.h>

#include "kd/selective.h"
#include "kdgen_select.h"

/* fn when dtype E (a kd_dtype constant) is in mask, else NULL: a constant
 * for a static table's initializer. */
#define KDK__SEL_LOOP(mask, E, fn) ((((unsigned)(mask)) & KD__SEL_DT_BIT(E)) != 0u ? (fn) : NULL)

/* The integral dtypes (bool included) as a kd_dtype_set. */
#define KDK__SEL_INTEGRAL                                                          \
  (KD__SEL_DT_BIT(KD_BOOL) | KD__SEL_DT_BIT(KD_UINT8) | KD__SEL_DT_BIT(KD_INT8) |   \
   KD__SEL_DT_BIT(KD_INT16) | KD__SEL_DT_BIT(KD_INT32) | KD__SEL_DT_BIT(KD_INT64))

/* mask, plus float32 when it has an integral dtype: for the loops of an
 * operator that computes integral inputs in the default float dtype (exp of
 * an int64 tensor runs the float32 loop). */
#define KDK__SEL_INT_TO_FLOAT(mask) \
  ((unsigned)(mask) | (((unsigned)(mask) & KDK__SEL_INTEGRAL) ? KD__SEL_DT_BIT(KD_FLOAT32) : 0u))

/* 1 when this is a selective build (for messages). */
#define KDK__SEL_BUILD KD__SEL_ON

#endif
