/*
 * opencl_reduce.cl.h: the OpenCL C of opencl_reduce.c, one program source
 * for every reduction (kd_reduce, kd_reduce_partials) and one for softmax /
 * log_softmax (kd_softmax). The operator and the types are build options,
 * so each (source, options) pair is one cached program per device:
 *
 *   reductions: -DOP=<KDCL_R_*> -DT_IN=<self's type> -DT_OUT=<out's type>
 *               -DACC=<accumulator type> -DIDENT=<the identity of OP in ACC>
 *               [-DFLT: ACC is floating, NaN is tested]
 *   softmax:    -DT=<float|double> -DLOG=<0|1>
 *
 * Included by opencl_reduce.c only (the strings are static).
 */
#ifndef OPENCL_REDUCE_CL_H
#define OPENCL_REDUCE_CL_H

/* The geometry both sources share, as a struct passed by value (the host's
 * kdcl_geom in opencl_reduce.c has the same layout: 64-bit fields only).
 * An output position o (kept dims, row-major) is at in_off + sum of its
 * coordinates times kstride in the input and out_off + ... ostride in the
 * output; a reduced position r (reduced dims, row-major) adds its
 * coordinates times rstride. Dims of size 1 are left out, adjacent reduced
 * dims that are one run of memory are merged. */
#define KDCL_GEOM_SRC                                                               \
  "#ifdef cl_khr_fp64\n"                                                           \
  "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"                                \
  "#endif\n"                                                                        \
  "typedef struct {\n"                                                              \
  "  long nr, nk, R, S, chunk, blocked, in_off, out_off, flags;\n"                  \
  "  long rsize[16], rstride[16], ksize[16], kstride[16], ostride[16];\n"           \
  "} geom;\n"                                                                       \
  "/* input and output offsets of output position o */\n"                           \
  "static void kept_off(const geom *g, long o, long *io, long *oo) {\n"             \
  "  long a = g->in_off, b = g->out_off;\n"                                        \
  "  for (long d = g->nk - 1; d >= 0; d--) {\n"                                    \
  "    long c = o % g->ksize[d];\n"                                                 \
  "    o /= g->ksize[d];\n"                                                         \
  "    a += c * g->kstride[d];\n"                                                   \
  "    b += c * g->ostride[d];\n"                                                   \
  "  }\n"                                                                           \
  "  *io = a;\n"                                                                    \
  "  *oo = b;\n"                                                                    \
  "}\n"                                                                             \
  "/* input offset of reduced position r (relative) */\n"                           \
  "static long red_off(const geom *g, long r) {\n"                                  \
  "  if (g->nr == 1) return r * g->rstride[0];\n"                                   \
  "  long a = 0;\n"                                                                 \
  "  for (long d = g->nr - 1; d >= 0; d--) {\n"                                    \
  "    long c = r % g->rsize[d];\n"                                                 \
  "    r /= g->rsize[d];\n"                                                         \
  "    a += c * g->rstride[d];\n"                                                   \
  "  }\n"                                                                           \
  "  return a;\n"                                                                   \
  "}\n"

/* The sources are longer than the 4095 characters C99 promises for a string
 * literal; gcc and clang take any length (-Woverlength-strings is only
 * -Wpedantic's portability note). */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#endif

/* Reductions. OP: 0 sum, 1 prod, 2 mean, 3 max, 4 min, 5 argmax, 6 argmin.
 * Each element is converted to T_OUT first (the CPU converts the input to
 * the output dtype before reducing), then to ACC. max/min: NaN wins. argmax/argmin: the first NaN, else the first
 * of equal extremes; a work-item without elements has index -1.
 *
 * kd_reduce: one work-group per (output o, split s) of S splits of `chunk`
 * reduced positions; a work-item takes every lsz-th position of the split
 * (blocked == 0) or a contiguous block of it (blocked == 1: CPU devices,
 * whose work-items run one after another), then a tree in local memory.
 * S == 1 writes the result into out, else the partial into pv/pi[o*S+s].
 * kd_reduce_partials: one work-group per output over its S partials, in
 * order, then the same tree and the result into out. kd_reduce_each: short
 * rows (many outputs), one work-item per output reducing its row in order. */
static const char kdcl_reduce_src[] =
    KDCL_GEOM_SRC
    "#ifdef FLT\n"
    "#define ISNAN(x) isnan(x)\n"
    "#else\n"
    "#define ISNAN(x) 0\n"
    "#endif\n"
    "#define IS_ARG (OP == 5 || OP == 6)\n"
    "#if IS_ARG\n"
    "#define LOAD(x) ((ACC)(x))\n"
    "#else\n"
    "#define LOAD(x) ((ACC)(T_OUT)(x))\n"
    "#endif\n"
    "#if OP == 3 || OP == 5\n"
    "#define BETTER(x, y) ((x) > (y))\n"
    "#else\n"
    "#define BETTER(x, y) ((x) < (y))\n"
    "#endif\n"
    "/* combine b into a (b covers later positions when ordered) */\n"
    "static ACC comb(ACC a, ACC b) {\n"
    "#if OP == 0 || OP == 2\n"
    "  return a + b;\n"
    "#elif OP == 1\n"
    "  return a * b;\n"
    "#else\n"
    "  return (ISNAN(a) || (!ISNAN(b) && !BETTER(b, a))) ? a : b;\n"
    "#endif\n"
    "}\n"
    "/* argmax/argmin: does (vb, ib) beat (va, ia)? */\n"
    "static int arg_wins(ACC va, long ia, ACC vb, long ib) {\n"
    "  if (ib < 0) return 0;\n"
    "  if (ia < 0) return 1;\n"
    "  if (ISNAN(va)) return ISNAN(vb) && ib < ia;\n"
    "  if (ISNAN(vb)) return 1;\n"
    "  if (BETTER(vb, va)) return 1;\n"
    "  return vb == va && ib < ia;\n"
    "}\n"
    "static void tree(__local ACC *lv, __local long *li, ACC v, long ix) {\n"
    "  size_t lid = get_local_id(0), lsz = get_local_size(0);\n"
    "  lv[lid] = v;\n"
    "#if IS_ARG\n"
    "  li[lid] = ix;\n"
    "#endif\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (size_t h = lsz / 2; h > 0; h /= 2) {\n"
    "    if (lid < h) {\n"
    "#if IS_ARG\n"
    "      if (arg_wins(lv[lid], li[lid], lv[lid + h], li[lid + h])) {\n"
    "        lv[lid] = lv[lid + h];\n"
    "        li[lid] = li[lid + h];\n"
    "      }\n"
    "#else\n"
    "      lv[lid] = comb(lv[lid], lv[lid + h]);\n"
    "#endif\n"
    "    }\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "}\n"
    "static void finish(__global T_OUT *out, long oo, ACC v, long ix, long R) {\n"
    "#if IS_ARG\n"
    "  out[oo] = (T_OUT)ix;\n"
    "#elif OP == 2\n"
    "  out[oo] = (T_OUT)(v / (ACC)R);\n"
    "#else\n"
    "  out[oo] = (T_OUT)v;\n"
    "#endif\n"
    "}\n"
    "__kernel void kd_reduce(__global const T_IN *in, __global T_OUT *out, __global ACC *pv,\n"
    "                        __global long *pi, const geom g, __local ACC *lv, __local long *li) {\n"
    "  long grp = get_group_id(0), o = grp / g.S, s = grp % g.S;\n"
    "  long lid = get_local_id(0), lsz = get_local_size(0);\n"
    "  long io, oo;\n"
    "  kept_off(&g, o, &io, &oo);\n"
    "  long begin = s * g.chunk, end = min(begin + g.chunk, g.R), step = lsz;\n"
    "  if (g.blocked) {\n"
    "    long per = (g.chunk + lsz - 1) / lsz;\n"
    "    begin += lid * per;\n"
    "    end = min(begin + per, end);\n"
    "    step = 1;\n"
    "  } else {\n"
    "    begin += lid;\n"
    "  }\n"
    "  ACC v = IDENT;\n"
    "  long ix = -1;\n"
    "  if (g.nr <= 1) {\n"
    "    long rs = g.nr == 1 ? g.rstride[0] : 0;\n"
    "#if !IS_ARG\n"
    "    if (step == 1 && rs == 1) { /* a contiguous block: 8 chains (vectorisable) */\n"
    "      __global const T_IN *q = in + io;\n"
    "      ACC a0 = IDENT, a1 = IDENT, a2 = IDENT, a3 = IDENT;\n"
    "      ACC a4 = IDENT, a5 = IDENT, a6 = IDENT, a7 = IDENT;\n"
    "      long r = begin;\n"
    "      for (; r + 8 <= end; r += 8) {\n"
    "        a0 = comb(a0, LOAD(q[r])); a1 = comb(a1, LOAD(q[r + 1]));\n"
    "        a2 = comb(a2, LOAD(q[r + 2])); a3 = comb(a3, LOAD(q[r + 3]));\n"
    "        a4 = comb(a4, LOAD(q[r + 4])); a5 = comb(a5, LOAD(q[r + 5]));\n"
    "        a6 = comb(a6, LOAD(q[r + 6])); a7 = comb(a7, LOAD(q[r + 7]));\n"
    "      }\n"
    "      for (; r < end; r++) a0 = comb(a0, LOAD(q[r]));\n"
    "      v = comb(comb(comb(a0, a1), comb(a2, a3)), comb(comb(a4, a5), comb(a6, a7)));\n"
    "    } else\n"
    "#endif\n"
    "    for (long r = begin; r < end; r += step) {\n"
    "      ACC x = LOAD(in[io + r * rs]);\n"
    "#if IS_ARG\n"
    "      if (arg_wins(v, ix, x, r)) { v = x; ix = r; }\n"
    "#else\n"
    "      v = comb(v, x);\n"
    "#endif\n"
    "    }\n"
    "  } else {\n"
    "    for (long r = begin; r < end; r += step) {\n"
    "      ACC x = LOAD(in[io + red_off(&g, r)]);\n"
    "#if IS_ARG\n"
    "      if (arg_wins(v, ix, x, r)) { v = x; ix = r; }\n"
    "#else\n"
    "      v = comb(v, x);\n"
    "#endif\n"
    "    }\n"
    "  }\n"
    "  tree(lv, li, v, ix);\n"
    "  if (lid == 0) {\n"
    "    if (g.S == 1) {\n"
    "      finish(out, oo, lv[0], IS_ARG ? li[0] : 0, g.R);\n"
    "    } else {\n"
    "      pv[grp] = lv[0];\n"
    "#if IS_ARG\n"
    "      pi[grp] = li[0];\n"
    "#endif\n"
    "    }\n"
    "  }\n"
    "}\n"
    "/* short rows: one work-item per output, in order */\n"
    "__kernel void kd_reduce_each(__global const T_IN *in, __global T_OUT *out, const geom g,\n"
    "                             long nout) {\n"
    "  long o = get_global_id(0);\n"
    "  if (o >= nout) return;\n"
    "  long io, oo;\n"
    "  kept_off(&g, o, &io, &oo);\n"
    "  ACC v = IDENT;\n"
    "  long ix = -1;\n"
    "  for (long r = 0; r < g.R; r++) {\n"
    "    ACC x = LOAD(in[io + red_off(&g, r)]);\n"
    "#if IS_ARG\n"
    "    if (arg_wins(v, ix, x, r)) { v = x; ix = r; }\n"
    "#else\n"
    "    v = comb(v, x);\n"
    "#endif\n"
    "  }\n"
    "  finish(out, oo, v, ix, g.R);\n"
    "}\n"
    "__kernel void kd_reduce_partials(__global const ACC *pv, __global const long *pi,\n"
    "                                 __global T_OUT *out, const geom g, __local ACC *lv,\n"
    "                                 __local long *li) {\n"
    "  long o = get_group_id(0), lid = get_local_id(0), lsz = get_local_size(0);\n"
    "  long io, oo;\n"
    "  kept_off(&g, o, &io, &oo);\n"
    "  ACC v = IDENT;\n"
    "  long ix = -1;\n"
    "  long per = (g.S + lsz - 1) / lsz, begin = lid * per, end = min(begin + per, g.S);\n"
    "  for (long k = begin; k < end; k++) {\n"
    "#if IS_ARG\n"
    "    if (arg_wins(v, ix, pv[o * g.S + k], pi[o * g.S + k])) {\n"
    "      v = pv[o * g.S + k];\n"
    "      ix = pi[o * g.S + k];\n"
    "    }\n"
    "#else\n"
    "    v = comb(v, pv[o * g.S + k]);\n"
    "#endif\n"
    "  }\n"
    "  tree(lv, li, v, ix);\n"
    "  if (lid == 0) finish(out, oo, lv[0], IS_ARG ? li[0] : 0, g.R);\n"
    "}\n";

/* softmax / log_softmax of each row along dim: one work-group per row (the
 * kept positions), R = the row's length, rstride[0] / flags: the row's
 * stride in the input (rstride[0]) and the output (rstride[1]). The maximum
 * (NaN wins; every element -inf: 0), then the sum of exp(x - max) in T, then
 * the outputs. flags 1: a 0-dim input, whose log_softmax is 0 (as the CPU).
 * kd_softmax_each: short rows, one work-item per row. */
static const char kdcl_softmax_src[] =
    KDCL_GEOM_SRC
    "static T tree_op(__local T *lv, T v, int is_max) {\n"
    "  size_t lid = get_local_id(0), lsz = get_local_size(0);\n"
    "  lv[lid] = v;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (size_t h = lsz / 2; h > 0; h /= 2) {\n"
    "    if (lid < h) {\n"
    "      T a = lv[lid], b = lv[lid + h];\n"
    "      lv[lid] = is_max ? ((a != a || (b == b && !(b > a))) ? a : b) : a + b;\n"
    "    }\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  T r = lv[0];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  return r;\n"
    "}\n"
    "__kernel void kd_softmax(__global const T *in, __global T *out, const geom g, __local T *lv) {\n"
    "  long o = get_group_id(0), lid = get_local_id(0), lsz = get_local_size(0);\n"
    "  long io, oo;\n"
    "  kept_off(&g, o, &io, &oo);\n"
    "  long is = g.rstride[0], os = g.rstride[1], n = g.R;\n"
    "  long per = g.blocked ? (n + lsz - 1) / lsz : 1;\n"
    "  long begin = g.blocked ? lid * per : lid, end = g.blocked ? min(begin + per, n) : n;\n"
    "  long step = g.blocked ? 1 : lsz;\n"
    "  T m = -INFINITY;\n"
    "  for (long i = begin; i < end; i += step) {\n"
    "    T x = in[io + i * is];\n"
    "    m = (m != m || (x == x && !(x > m))) ? m : x;\n"
    "  }\n"
    "  m = tree_op(lv, m, 1);\n"
    "  if (isinf(m) && m < 0) m = 0;\n"
    "  T sum = 0;\n"
    "  for (long i = begin; i < end; i += step) sum += exp(in[io + i * is] - m);\n"
    "  sum = tree_op(lv, sum, 0);\n"
    "#if LOG\n"
    "  T lsum = log(sum);\n"
    "  for (long i = begin; i < end; i += step)\n"
    "    out[oo + i * os] = g.flags ? (T)0 : in[io + i * is] - m - lsum;\n"
    "#else\n"
    "  for (long i = begin; i < end; i += step) out[oo + i * os] = exp(in[io + i * is] - m) / sum;\n"
    "#endif\n"
    "}\n"
    "/* short rows: one work-item per row */\n"
    "__kernel void kd_softmax_each(__global const T *in, __global T *out, const geom g, long rows) {\n"
    "  long o = get_global_id(0);\n"
    "  if (o >= rows) return;\n"
    "  long io, oo;\n"
    "  kept_off(&g, o, &io, &oo);\n"
    "  long is = g.rstride[0], os = g.rstride[1], n = g.R;\n"
    "  T m = -INFINITY;\n"
    "  for (long i = 0; i < n; i++) {\n"
    "    T x = in[io + i * is];\n"
    "    m = (m != m || (x == x && !(x > m))) ? m : x;\n"
    "  }\n"
    "  if (isinf(m) && m < 0) m = 0;\n"
    "  T sum = 0;\n"
    "  for (long i = 0; i < n; i++) sum += exp(in[io + i * is] - m);\n"
    "#if LOG\n"
    "  T lsum = log(sum);\n"
    "  for (long i = 0; i < n; i++) out[oo + i * os] = g.flags ? (T)0 : in[io + i * is] - m - lsum;\n"
    "#else\n"
    "  for (long i = 0; i < n; i++) out[oo + i * os] = exp(in[io + i * is] - m) / sum;\n"
    "#endif\n"
    "}\n";

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif /* OPENCL_REDUCE_CL_H */
