/*
 * opencl_pointwise.c: the pointwise loops of the OpenCL backend (kdcl.h):
 *   - the loops of libkdops' dispatch stubs (include/kdk/stubs.h) that the
 *     Legacy groups of opencl.yaml reach (opencl_<stub>, declared by the
 *     generated opencl_functions.h), and those of the stubs only Legacy
 *     unstructured kernels reach (where, logical_and/or/xor, fill, masked_fill: registered
 *     by kdcl_pointwise_register);
 *   - copy_ and fill_.Scalar (Customized, unstructured) and the backend's
 *     `cast` slot (kdcl_cast).
 *
 * One OpenCL C source (pw_source below) serves every operator: a program is
 * built per device and set of -D options (the operation, the element types,
 * which inputs are cpu scalars passed by value) and cached by
 * kdcl_kernel_get. Each program has two kernels: pw_flat (every operand
 * contiguous after the iterator coalesced its dims) and pw_strided (up to
 * KD_MAX_DIMS dims, byte strides per operand, stride 0 for broadcast; a
 * 2-d launch, dim 0 by the rest).
 * A loop is one launch, not waited for; only integer division waits (it must
 * report a zero divisor before writing, as the CPU loop does).
 *
 * Semantics follow the CPU loops (ops/cpu/binary.c, unary.c and the core's
 * conversions in src/core/tensor_convert.c): integers wrap, integer division
 * by zero is "ZeroDivisionError" and writes nothing, div floor/remainder take
 * the divisor's sign, maximum/minimum/clamp propagate NaN, abs(INT_MIN) is
 * INT_MIN, floating to integer conversion truncates (NaN and out-of-range
 * give INT64_MIN, then wrap). Floats are computed without contraction into
 * fused multiply-adds and with correctly rounded division and sqrt; the
 * transcendental functions are OpenCL's (within its ulp bounds, not libm's
 * bits).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdcl.h"
#include "opencl_functions.h"

/* ---- The OpenCL C source ---------------------------------------------------------- */

/* In pieces below 4095 bytes each (ISO C's limit on one string literal),
 * joined once into pw_source_buf (kdcl_kernel_get keys programs by the
 * source's address, which must stay put). */
static const char *const pw_source_parts[] = {
    /* options: OP_<NAME>; TO, T0, T1, T2 (storage types; uchar for absent
     * inputs), NIN; S0..S2 (input k is a value argument); K_BOOL, K_INT,
     * K_FLT, K_SIGNED (the computing dtype's class); O_BOOL, O_INT, O_FLT,
     * I_FLT (copy); HAS_LO, HAS_HI (clamp); KD_FP64. */
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "#ifdef KD_FP64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef double PT;\n"
    "#else\n"
    "typedef float PT;\n"
    "#endif\n"
    "#ifdef S0\n#define LD0(off) v0\n#else\n#define LD0(off) (*(__global const T0 *)(x0 + (off)))\n#endif\n"
    "#ifdef S1\n#define LD1(off) v1\n#else\n#define LD1(off) (*(__global const T1 *)(x1 + (off)))\n#endif\n"
    "#ifdef S2\n#define LD2(off) v2\n#else\n#define LD2(off) (*(__global const T2 *)(x2 + (off)))\n#endif\n"
    "#define U(x) ((ulong)(long)(x))\n"
    "inline long pw_f2i(PT d) {\n"
    "  return (d >= (PT)-9223372036854775808.0 && d < (PT)9223372036854775808.0) ? (long)d\n"
    "                                                                            : (long)0x8000000000000000UL;\n"
    "}\n"
    "#if defined(OP_DIV_TRUNC) || defined(OP_DIV_FLOOR) || defined(OP_REM) || defined(OP_POW_TT) || defined(OP_POW_TS)\n"
    "#ifdef K_INT\n"
    "inline TO pw_idiv_trunc(TO a, TO b) {\n"
    "  if (b == 0) return 0;\n"
    "#ifdef K_SIGNED\n"
    "  if (b == (TO)-1) return (TO)(0UL - U(a));\n"
    "#endif\n"
    "  return (TO)(a / b);\n"
    "}\n"
    "inline TO pw_idiv_floor(TO a, TO b) {\n"
    "  if (b == 0) return 0;\n"
    "#ifdef K_SIGNED\n"
    "  if (b == (TO)-1) return (TO)(0UL - U(a));\n"
    "  if ((a < 0) != (b < 0)) {\n"
    "    TO q = (TO)(a / b), r = (TO)(a % b);\n"
    "    return r ? (TO)(q - 1) : q;\n"
    "  }\n"
    "#endif\n"
    "  return (TO)(a / b);\n"
    "}\n"
    "inline TO pw_irem(TO a, TO b) {\n"
    "  if (b == 0) return 0;\n"
    "#ifdef K_SIGNED\n"
    "  if (b == (TO)-1) return 0;\n"
    "  TO r = (TO)(a % b);\n"
    "  if (r != 0 && ((r < 0) != (b < 0))) r = (TO)(r + b);\n"
    "  return r;\n"
    "#else\n"
    "  return (TO)(a % b);\n"
    "#endif\n"
    "}\n"
    "inline TO pw_ipow(TO a, TO b) {\n"
    "#ifdef K_SIGNED\n"
    "  if (b < 0) {\n"
    "    if (a == 1) return 1;\n"
    "    if (a == (TO)-1) return (b % 2) ? (TO)-1 : (TO)1;\n"
    "    return 0;\n"
    "  }\n"
    "#endif\n"
    "  ulong r = 1, x = U(a);\n"
    "  while (b) {\n"
    "    if (b & 1) r *= x;\n"
    "    b = (TO)(b / 2);\n"
    "    x *= x;\n"
    "  }\n"
    "  return (TO)r;\n"
    "}\n",
    "#else\n"
    "inline TO pw_div_floor(TO a, TO b) {\n"
    "  if (b == 0) return a / b;\n"
    "  TO m = fmod(a, b);\n"
    "  TO q = (a - m) / b;\n"
    "  if (m != 0 && (b < 0) != (m < 0)) q -= (TO)1;\n"
    "  TO fl;\n"
    "  if (q != 0) {\n"
    "    fl = floor(q);\n"
    "    if (q - fl > (TO)0.5) fl += (TO)1;\n"
    "  } else {\n"
    "    fl = copysign((TO)0, a / b);\n"
    "  }\n"
    "  return fl;\n"
    "}\n"
    "inline TO pw_frem(TO a, TO b) {\n"
    "  TO m = fmod(a, b);\n"
    "  if (m != 0 && (b < 0) != (m < 0)) m += b;\n"
    "  return m;\n"
    "}\n"
    "inline TO pw_pow_scalar(TO a, TO e) {\n"
    "  if (e == (TO)2) return a * a;\n"
    "  if (e == (TO)3) return a * a * a;\n"
    "  if (e == (TO)0.5) return sqrt(a);\n"
    "  if (e == (TO)-0.5) return (TO)1 / sqrt(a);\n"
    "  if (e == (TO)-1) return (TO)1 / a;\n"
    "  if (e == (TO)-2) return (TO)1 / (a * a);\n"
    "  return pow(a, e);\n"
    "}\n"
    "#endif\n"
    "#endif\n"
    /* EXPR(a, b, c): the output element from the loaded inputs */
    "#if defined(OP_COPY)\n"
    "#if defined(O_BOOL)\n#define EXPR(a, b, c) ((TO)((a) != 0))\n"
    "#elif defined(O_INT) && defined(I_FLT)\n#define EXPR(a, b, c) ((TO)(ulong)pw_f2i((PT)(a)))\n"
    "#elif defined(O_INT)\n#define EXPR(a, b, c) ((TO)U(a))\n"
    "#else\n#define EXPR(a, b, c) ((TO)(a))\n#endif\n"
    "#elif defined(OP_ADD)\n"
    "#if defined(K_BOOL)\n#define EXPR(a, b, c) ((TO)((a) || ((b) && i0)))\n"
    "#elif defined(K_FLT)\n#define EXPR(a, b, c) ((TO)((a) + (TO)f0 * (b)))\n"
    "#else\n#define EXPR(a, b, c) ((TO)(U(a) + U(b) * (ulong)i0))\n#endif\n"
    "#elif defined(OP_MUL)\n"
    "#if defined(K_BOOL)\n#define EXPR(a, b, c) ((TO)((a) && (b)))\n"
    "#elif defined(K_FLT)\n#define EXPR(a, b, c) ((TO)((a) * (b)))\n"
    "#else\n#define EXPR(a, b, c) ((TO)(U(a) * U(b)))\n#endif\n"
    "#elif defined(OP_DIV_TRUE)\n#define EXPR(a, b, c) ((TO)((a) / (b)))\n"
    "#elif defined(OP_DIV_TRUNC)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) ((TO)trunc((a) / (b)))\n"
    "#else\n#define EXPR(a, b, c) pw_idiv_trunc(a, b)\n#endif\n"
    "#elif defined(OP_DIV_FLOOR)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) pw_div_floor(a, b)\n"
    "#else\n#define EXPR(a, b, c) pw_idiv_floor(a, b)\n#endif\n"
    "#elif defined(OP_REM)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) pw_frem(a, b)\n"
    "#else\n#define EXPR(a, b, c) pw_irem(a, b)\n#endif\n"
    "#elif defined(OP_ATAN2)\n#define EXPR(a, b, c) atan2(a, b)\n",
    "#elif defined(OP_MAX) || defined(OP_MIN)\n"
    "#ifdef OP_MAX\n#define PW_PICK(a, b) (((a) < (b)) ? (b) : (a))\n"
    "#else\n#define PW_PICK(a, b) (((b) < (a)) ? (b) : (a))\n#endif\n"
    "#if defined(K_BOOL) && defined(OP_MAX)\n#define EXPR(a, b, c) ((TO)((a) || (b)))\n"
    "#elif defined(K_BOOL)\n#define EXPR(a, b, c) ((TO)((a) && (b)))\n"
    "#elif defined(K_FLT)\n#define EXPR(a, b, c) (((a) != (a) || (b) != (b)) ? (TO)NAN : PW_PICK(a, b))\n"
    "#else\n#define EXPR(a, b, c) PW_PICK(a, b)\n#endif\n"
    "#elif defined(OP_POW_TT)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) pow(a, b)\n"
    "#else\n#define EXPR(a, b, c) pw_ipow(a, b)\n#endif\n"
    "#elif defined(OP_POW_TS)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) pw_pow_scalar(a, (TO)f0)\n"
    "#else\n#define EXPR(a, b, c) pw_ipow(a, (TO)i0)\n#endif\n"
    "#elif defined(OP_EQ)\n#define EXPR(a, b, c) ((TO)((a) == (b)))\n"
    "#elif defined(OP_NE)\n#define EXPR(a, b, c) ((TO)((a) != (b)))\n"
    "#elif defined(OP_LT)\n#define EXPR(a, b, c) ((TO)((a) < (b)))\n"
    "#elif defined(OP_LE)\n#define EXPR(a, b, c) ((TO)((a) <= (b)))\n"
    "#elif defined(OP_GT)\n#define EXPR(a, b, c) ((TO)((a) > (b)))\n"
    "#elif defined(OP_GE)\n#define EXPR(a, b, c) ((TO)((a) >= (b)))\n"
    "#elif defined(OP_LAND)\n#define EXPR(a, b, c) ((TO)((a) != 0 && (b) != 0))\n"
    "#elif defined(OP_LOR)\n#define EXPR(a, b, c) ((TO)((a) != 0 || (b) != 0))\n"
    "#elif defined(OP_LXOR)\n#define EXPR(a, b, c) ((TO)(((a) != 0) != ((b) != 0)))\n"
    "#elif defined(OP_WHERE)\n#define EXPR(a, b, c) ((a) ? (b) : (c))\n"
    "#elif defined(OP_CLAMP)\n"
    "#if defined(K_FLT)\n#define PW_LO ((TO)f0)\n#define PW_HI ((TO)f1)\n"
    "#else\n#define PW_LO ((TO)i0)\n#define PW_HI ((TO)i1)\n#endif\n"
    "#define PW_UP(a) (((a) < PW_LO) ? PW_LO : (a))\n"
    "#if defined(HAS_LO) && defined(HAS_HI)\n#define EXPR(a, b, c) ((PW_HI < PW_UP(a)) ? PW_HI : PW_UP(a))\n"
    "#elif defined(HAS_LO)\n#define EXPR(a, b, c) PW_UP(a)\n"
    "#else\n#define EXPR(a, b, c) ((PW_HI < (a)) ? PW_HI : (a))\n#endif\n"
    "#elif defined(OP_CLAMP3)\n"
    "#define PW_UP3(a, b) (((a) < (b)) ? (b) : (a))\n"
    "#if defined(K_FLT)\n"
    "#define EXPR(a, b, c) (((b) != (b) || (c) != (c)) ? (TO)NAN : (((c) < PW_UP3(a, b)) ? (c) : PW_UP3(a, b)))\n"
    "#else\n#define EXPR(a, b, c) (((c) < PW_UP3(a, b)) ? (c) : PW_UP3(a, b))\n#endif\n"
    "#elif defined(OP_NEG)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) (-(a))\n"
    "#else\n#define EXPR(a, b, c) ((TO)(0UL - U(a)))\n#endif\n"
    "#elif defined(OP_ABS)\n"
    "#if defined(K_FLT)\n#define EXPR(a, b, c) fabs(a)\n"
    "#elif defined(K_SIGNED)\n#define EXPR(a, b, c) (((a) < 0) ? (TO)(0UL - U(a)) : (a))\n"
    "#else\n#define EXPR(a, b, c) (a)\n#endif\n"
    "#elif defined(OP_SIGN)\n"
    "#if defined(K_BOOL)\n#define EXPR(a, b, c) (a)\n"
    "#elif defined(K_SIGNED) || defined(K_FLT)\n#define EXPR(a, b, c) ((TO)((0 < (a)) - ((a) < 0)))\n"
    "#else\n#define EXPR(a, b, c) ((TO)(0 < (a)))\n#endif\n"
    "#elif defined(OP_BITWISE_NOT)\n"
    "#if defined(K_BOOL)\n#define EXPR(a, b, c) ((TO)!(a))\n"
    "#else\n#define EXPR(a, b, c) ((TO)~(a))\n#endif\n",
    "#elif defined(OP_RELU)\n"
    "#if defined(K_SIGNED) || defined(K_FLT)\n#define EXPR(a, b, c) (((a) < 0) ? (TO)0 : (a))\n"
    "#else\n#define EXPR(a, b, c) (a)\n#endif\n"
    "#elif defined(OP_FLOOR) || defined(OP_CEIL) || defined(OP_TRUNC) || defined(OP_ROUND)\n"
    "#if !defined(K_FLT)\n#define EXPR(a, b, c) (a)\n"
    "#elif defined(OP_FLOOR)\n#define EXPR(a, b, c) floor(a)\n"
    "#elif defined(OP_CEIL)\n#define EXPR(a, b, c) ceil(a)\n"
    "#elif defined(OP_TRUNC)\n#define EXPR(a, b, c) trunc(a)\n"
    "#else\n#define EXPR(a, b, c) rint(a)\n#endif\n"
    "#elif defined(OP_ROUND_DEC)\n"
    "#define EXPR(a, b, c) (i0 ? rint((a) / (TO)f0) * (TO)f0 : rint((a) * (TO)f0) / (TO)f0)\n"
    "#elif defined(OP_EXP)\n#define EXPR(a, b, c) exp(a)\n"
    "#elif defined(OP_LOG)\n#define EXPR(a, b, c) log(a)\n"
    "#elif defined(OP_LOG1P)\n#define EXPR(a, b, c) log1p(a)\n"
    "#elif defined(OP_EXPM1)\n#define EXPR(a, b, c) expm1(a)\n"
    "#elif defined(OP_SQRT)\n#define EXPR(a, b, c) sqrt(a)\n"
    "#elif defined(OP_RSQRT)\n#define EXPR(a, b, c) ((TO)1 / sqrt(a))\n"
    "#elif defined(OP_SIN)\n#define EXPR(a, b, c) sin(a)\n"
    "#elif defined(OP_COS)\n#define EXPR(a, b, c) cos(a)\n"
    "#elif defined(OP_TAN)\n#define EXPR(a, b, c) tan(a)\n"
    "#elif defined(OP_TANH)\n#define EXPR(a, b, c) tanh(a)\n"
    "#elif defined(OP_SIGMOID)\n#define EXPR(a, b, c) ((TO)1 / ((TO)1 + exp(-(a))))\n"
    "#elif defined(OP_RECIPROCAL)\n#define EXPR(a, b, c) ((TO)1 / (a))\n"
    "#elif defined(OP_ERF)\n#define EXPR(a, b, c) erf(a)\n"
    "#elif defined(OP_GELU)\n#define EXPR(a, b, c) ((a) * (TO)0.5 * erfc(-(a) * (TO)0.70710678118654752440))\n"
    "#elif defined(OP_GELU_TANH)\n"
    "#define EXPR(a, b, c) ((a) / ((TO)1 + exp((TO)-2 * (TO)0.79788456080286535588 * ((a) + (TO)0.044715 * (a) * (a) * (a)))))\n"
    "#elif defined(OP_LOGICAL_NOT)\n#define EXPR(a, b, c) ((TO)((a) == 0))\n"
    "#elif defined(OP_MFILL)\n#define EXPR(a, b, c) (b)\n"
    "#else\n#error \"pw: no OP_ given\"\n#endif\n"
    /* masked_fill writes only where the mask (input 0) is true */
    "#ifdef OP_MFILL\n#define PW_STORE(dst, a, b, c) if (a) dst = EXPR(a, b, c)\n"
    "#else\n#define PW_STORE(dst, a, b, c) dst = EXPR(a, b, c)\n#endif\n"
    "#define PW_ARGS long n, __global char *o, __global const char *x0, T0 v0, __global const char *x1, \\\n"
    "    T1 v1, __global const char *x2, T2 v2, long i0, long i1, PT f0, PT f1, long oo, long o0, long o1, long o2\n"
    "#define PW_BODY(OO, A0, A1, A2) \\\n"
    "  T0 a = LD0(A0); \\\n"
    "  T1 b = (T1)0; \\\n"
    "  T2 c = (T2)0; \\\n"
    "  if (NIN > 1) b = LD1(A1); \\\n"
    "  if (NIN > 2) c = LD2(A2); \\\n"
    "  PW_STORE(*(__global TO *)(o + (OO)), a, b, c);\n"
    /* typed pointers indexed by the work-item id: loads and stores the
     * work-group vectoriser sees as consecutive */
    "#ifdef S0\n#define LF0(i) v0\n#else\n#define LF0(i) p0[i]\n#endif\n"
    "#ifdef S1\n#define LF1(i) v1\n#else\n#define LF1(i) p1[i]\n#endif\n"
    "#ifdef S2\n#define LF2(i) v2\n#else\n#define LF2(i) p2[i]\n#endif\n",
    /* pw_flat's arguments are only those its options use (PoCL copies
     * each argument of a launch into an allocation of its own): the output, then per input its buffer and byte
     * offset or its value, then the parameters when PW_PK is 0; PW_PK 1
     * and 2 make them constants: 0 everywhere, or i0 = f0 = 1 (add's
     * alpha of 1). */
    "#ifdef S0\n#define PW_F0 , T0 v0\n#define PW_D0\n"
    "#else\n#define PW_F0 , __global const char *x0, long o0\n"
    "#define PW_D0 __global const T0 *p0 = (__global const T0 *)(x0 + o0);\n#endif\n"
    "#if NIN < 2\n#define PW_F1\n#define PW_D1\n#define PW_L1(i) (T1)0\n"
    "#elif defined(S1)\n#define PW_F1 , T1 v1\n#define PW_D1\n#define PW_L1(i) LF1(i)\n"
    "#else\n#define PW_F1 , __global const char *x1, long o1\n"
    "#define PW_D1 __global const T1 *p1 = (__global const T1 *)(x1 + o1);\n#define PW_L1(i) LF1(i)\n#endif\n"
    "#if NIN < 3\n#define PW_F2\n#define PW_D2\n#define PW_L2(i) (T2)0\n"
    "#elif defined(S2)\n#define PW_F2 , T2 v2\n#define PW_D2\n#define PW_L2(i) LF2(i)\n"
    "#else\n#define PW_F2 , __global const char *x2, long o2\n"
    "#define PW_D2 __global const T2 *p2 = (__global const T2 *)(x2 + o2);\n#define PW_L2(i) LF2(i)\n#endif\n"
    "#if PW_PK == 0\n#define PW_FP , long i0, long i1, PT f0, PT f1\n#define PW_DP\n"
    "#elif PW_PK == 1\n#define PW_FP\n#define PW_DP const long i0 = 0, i1 = 0; const PT f0 = 0, f1 = 0;\n"
    "#else\n#define PW_FP\n#define PW_DP const long i0 = 1, i1 = 0; const PT f0 = 1, f1 = 0;\n#endif\n"
    /* no bounds check: the host launches exactly the elements (a check
     * costs PoCL's vectoriser half the bandwidth) */
    "__kernel void pw_flat(__global char *o, long oo PW_F0 PW_F1 PW_F2 PW_FP) {\n"
    "  size_t i = get_global_id(0);\n"
    "  PW_DP\n"
    "  __global TO *po = (__global TO *)(o + oo);\n"
    "  PW_D0\n"
    "  PW_D1\n"
    "  PW_D2\n"
    "  T0 a = LF0(i);\n"
    "  T1 b = PW_L1(i);\n"
    "  T2 c = PW_L2(i);\n"
    "  PW_STORE(po[i], a, b, c);\n"
    "}\n",
    /* 2-d launch: dim 0 of the shape along work dim 0, the other dims
     * (decomposed once per row, the same for the whole row) along work dim 1 */
    "__kernel void pw_strided(PW_ARGS, long ndim, long16 size, long16 st_o, long16 st_0, long16 st_1,\n"
    "                         long16 st_2) {\n"
    "  long i = get_global_id(0), r = get_global_id(1);\n"
    "  oo += i * st_o.s0;\n"
    "  o0 += i * st_0.s0;\n"
    "  o1 += i * st_1.s0;\n"
    "  o2 += i * st_2.s0;\n"
    "  if (ndim == 2) {\n"
    "    oo += r * st_o.s1;\n"
    "    o0 += r * st_0.s1;\n"
    "    o1 += r * st_1.s1;\n"
    "    o2 += r * st_2.s1;\n"
    "  } else if (ndim > 2) {\n"
    "    long sz[16], so[16], s0[16], s1[16], s2[16];\n"
    "    vstore16(size, 0, sz);\n"
    "    vstore16(st_o, 0, so);\n"
    "    vstore16(st_0, 0, s0);\n"
    "    vstore16(st_1, 0, s1);\n"
    "    vstore16(st_2, 0, s2);\n"
    "    for (int d = 1; d < ndim; d++) {\n"
    "      long k = r % sz[d];\n"
    "      r /= sz[d];\n"
    "      oo += k * so[d];\n"
    "      o0 += k * s0[d];\n"
    "      o1 += k * s1[d];\n"
    "      o2 += k * s2[d];\n"
    "    }\n"
    "  }\n"
    "  PW_BODY(oo, o0, o1, o2)\n"
    "}\n"
    "#if (defined(OP_DIV_TRUNC) || defined(OP_DIV_FLOOR) || defined(OP_REM)) && defined(K_INT)\n"
    "__kernel void pw_zchk(long n, __global const char *x1, long o1, long ndim, long16 size, long16 st_1,\n"
    "                      __global int *flag) {\n"
    "  long i = get_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  long sz[16], s1[16];\n"
    "  vstore16(size, 0, sz);\n"
    "  vstore16(st_1, 0, s1);\n"
    "  long r = i;\n"
    "  for (int d = 0; d < ndim; d++) {\n"
    "    long k = r % sz[d];\n"
    "    r /= sz[d];\n"
    "    o1 += k * s1[d];\n"
    "  }\n"
    "  if (*(__global const T1 *)(x1 + o1) == 0) *flag = 1;\n"
    "}\n"
    "#endif\n",
};

#define PW_SOURCE_MAX 32768
static char pw_source_buf[PW_SOURCE_MAX];
static pthread_once_t pw_source_once = PTHREAD_ONCE_INIT;

static void pw_source_join(void) {
  size_t n = 0;
  for (size_t i = 0; i < sizeof pw_source_parts / sizeof pw_source_parts[0]; i++) {
    size_t len = strlen(pw_source_parts[i]);
    if (n + len >= PW_SOURCE_MAX) break; /* cannot happen: the parts are fixed (test_opencl_pointwise builds them) */
    memcpy(pw_source_buf + n, pw_source_parts[i], len);
    n += len;
  }
  pw_source_buf[n] = '\0';
}

/* The joined source (static; built on the first call, thread-safe). */
static const char *pw_source(void) {
  pthread_once(&pw_source_once, pw_source_join);
  return pw_source_buf;
}

/* ---- Dtypes --------------------------------------------------------------------------- */

enum { M_BOOL = 1, M_INT = 2, M_FLT = 4, M_ALL = 7 };

static unsigned pw_class(kd_dtype dt) {
  switch (dt) {
  case KD_BOOL: return M_BOOL;
  case KD_UINT8:
  case KD_INT8:
  case KD_INT16:
  case KD_INT32:
  case KD_INT64: return M_INT;
  case KD_FLOAT32:
  case KD_FLOAT64: return M_FLT;
  default: return 0;
  }
}

static bool pw_signed(kd_dtype dt) {
  return dt == KD_INT8 || dt == KD_INT16 || dt == KD_INT32 || dt == KD_INT64;
}

/* The unsigned OpenCL C type of an element width (copies and where move bits). */
static const char *pw_width_type(size_t size) {
  switch (size) {
  case 1: return "uchar";
  case 2: return "ushort";
  case 4: return "uint";
  default: return "ulong";
  }
}

/* Whether device d runs dtype dt (no error set). */
static bool pw_supported(const kdcl_device *d, kd_dtype dt) {
  unsigned c = pw_class(dt);
  if (!c) return false;
  return dt != KD_FLOAT64 || kdcl_info(d)->fp64;
}

/* ---- Launches ---------------------------------------------------------------------------- */

/* One operand of a launch: a buffer range with byte strides, or (inputs) a
 * value passed as a kernel argument. */
typedef struct pw_operand {
  kd_dtype dtype;
  bool value;              /* a cpu scalar: `bytes` is its element */
  unsigned char bytes[8];
  cl_mem buf;              /* NULL for a value or an absent input */
  size_t off;              /* byte offset of element 0 */
  int64_t strides[KD_MAX_DIMS]; /* bytes, dim 0 fastest */
} pw_operand;

typedef struct pw_launch {
  const char *op;    /* the operator, for messages */
  kdcl_device *d;
  const char *def;   /* "OP_ADD" */
  char extra[96];    /* more -D options (classes, clamp's bounds) */
  bool by_width;     /* element types by width (copies, where) */
  int nin;
  pw_operand out, in[3];
  int ndim;          /* dim 0 fastest */
  int64_t shape[KD_MAX_DIMS];
  int64_t numel;
  int64_t i0, i1;
  double f0, f1;
} pw_launch;

/* Work items per launch of pw_flat but the last (a multiple of any work-group
 * size PoCL picks). */
#define PW_GROUP 256

static const char *pw_type(const pw_launch *L, const pw_operand *x) {
  if (L->by_width) return pw_width_type(kd_dtype_size(x->dtype));
  return kdcl_ctype(L->d, x->dtype, L->op);
}

/* Appends the class defines of the computing dtype dt. */
static void pw_add_class(pw_launch *L, kd_dtype dt) {
  size_t n = strlen(L->extra);
  unsigned c = pw_class(dt);
  snprintf(L->extra + n, sizeof L->extra - n, "%s%s",
           c == M_BOOL ? " -DK_BOOL" : c == M_INT ? " -DK_INT" : " -DK_FLT",
           pw_signed(dt) ? " -DK_SIGNED" : "");
}

/* Whether every buffer operand is contiguous over the launch's shape. */
static bool pw_flat(const pw_launch *L) {
  if (L->ndim > 1) return false;
  if (L->ndim == 0 || L->shape[0] <= 1) return true;
  if (L->out.strides[0] != (int64_t)kd_dtype_size(L->out.dtype)) return false;
  for (int k = 0; k < L->nin; k++)
    if (!L->in[k].value && L->in[k].strides[0] != (int64_t)kd_dtype_size(L->in[k].dtype)) return false;
  return true;
}

static void pw_long16(cl_long16 *v, const int64_t *x, int n, int64_t fill) {
  for (int i = 0; i < 16; i++) v->s[i] = i < n ? (cl_long)x[i] : (cl_long)fill;
}

/* Whether f is +0.0 exactly (not -0.0, not NaN). */
static bool pw_pos_zero(double f) { return f == 0.0 && !signbit(f); }

/* How pw_flat gets L's parameters (PW_PK): 1 when i0, i1, f0, f1 are all 0
 * (+0.0), 2 when i0 = 1, f0 = 1.0 and i1, f1 are 0 (add's alpha of 1), both
 * compiled in as constants; 0 passed as arguments. */
static int pw_pk(const pw_launch *L) {
  if (L->i1 != 0 || !pw_pos_zero(L->f1)) return 0;
  if (L->i0 == 0 && pw_pos_zero(L->f0)) return 1;
  if (L->i0 == 1 && L->f0 == 1.0) return 2;
  return 0;
}

/* The build options of L's program (output type `to`, input types tin). */
static void pw_options(const pw_launch *L, const char *to, const char *const *tin, char *opts,
                       size_t cap) {
  snprintf(opts, cap,
           "-D%s -DNIN=%d -DPW_PK=%d -DTO=%s -DT0=%s -DT1=%s -DT2=%s%s%s%s%s %s "
           "-cl-fp32-correctly-rounded-divide-sqrt",
           L->def, L->nin > 0 ? L->nin : 1, pw_pk(L), to, tin[0], tin[1], tin[2],
           L->nin > 0 && L->in[0].value ? " -DS0" : "", L->nin > 1 && L->in[1].value ? " -DS1" : "",
           L->nin > 2 && L->in[2].value ? " -DS2" : "", L->extra,
           kdcl_info(L->d)->fp64 ? "-DKD_FP64" : "-cl-single-precision-constant");
}

/* ---- The kernel table -------------------------------------------------------------------- */

/* pw_go's kernel per (device, operation, dtypes, value inputs, extra options,
 * flat): a hit skips formatting the build options and kdcl_kernel_get's
 * locked lookup (a 1-element add spends its host time per launch here). The
 * key holds everything pw_options and the kernel name are made of. */
typedef struct pw_key {
  const kdcl_device *d;
  const char *def;         /* a string literal: compared by address (a twin
                              literal only makes a second entry) */
  int32_t dt[4];           /* out, in 0..2 (0 for absent inputs) */
  unsigned char nin, by_width, flat, values; /* values: bit k = input k by value */
  unsigned char pk;        /* pw_pk */
  char extra[96];          /* zero-padded */
  char pad[8];             /* zero: pw_key_slot reads up to 7 bytes past the extra string */
} pw_key;

/* An entry: immutable once published; owned by pw_entries, freed by
 * kdcl_pointwise_forget. */
typedef struct pw_entry {
  pw_key key;
  kdcl_kernel *k;
  struct pw_entry *next; /* pw_entries' list */
} pw_entry;

#define PW_SLOTS 512 /* direct-mapped by the key's hash; a collision only costs a slow lookup */
static _Atomic(pw_entry *) pw_slots[PW_SLOTS];
static pthread_mutex_t pw_entries_lock = PTHREAD_MUTEX_INITIALIZER;
static pw_entry *pw_entries; /* every entry, one per distinct key */

static void pw_make_key(const pw_launch *L, bool flat, pw_key *key) {
  memset(key, 0, sizeof *key);
  key->d = L->d;
  key->def = L->def;
  key->dt[0] = (int32_t)L->out.dtype;
  for (int j = 0; j < L->nin; j++) {
    key->dt[j + 1] = (int32_t)L->in[j].dtype;
    if (L->in[j].value) key->values |= (unsigned char)(1u << j);
  }
  key->nin = (unsigned char)L->nin;
  key->by_width = L->by_width;
  key->flat = flat;
  key->pk = (unsigned char)pw_pk(L);
  memcpy(key->extra, L->extra, strnlen(L->extra, sizeof key->extra - 1)); /* the rest stays 0 */
}

/* The key's slot: a hash of its bytes, eight at a time (the key is
 * zero-padded, so its bytes are a function of its fields). */
static size_t pw_key_slot(const pw_key *key) {
  uint64_t h = 1469598103934665603u, w;
  size_t n = offsetof(pw_key, extra) + strlen(key->extra);
  for (size_t i = 0; i < n; i += sizeof w) {
    memcpy(&w, (const unsigned char *)key + i, sizeof w);
    h = (h ^ w) * 1099511628211u;
  }
  return (size_t)(h ^ (h >> 29) ^ (h >> 47)) % PW_SLOTS;
}

/* The table's kernel for key, or NULL (lock-free: one atomic load and a
 * compare). */
static kdcl_kernel *pw_table_find(const pw_key *key, size_t slot) {
  pw_entry *e = atomic_load_explicit(&pw_slots[slot], memory_order_acquire);
  return e && !memcmp(&e->key, key, sizeof *key) ? e->k : NULL;
}

/* Records k for key (an existing entry of the same key is reused, so the
 * entries stay one per key whatever the collisions). Out of memory only
 * leaves the table without it. */
static void pw_table_put(const pw_key *key, size_t slot, kdcl_kernel *k) {
  pthread_mutex_lock(&pw_entries_lock);
  pw_entry *e = pw_entries;
  while (e && memcmp(&e->key, key, sizeof *key)) e = e->next;
  if (!e && (e = malloc(sizeof *e))) {
    memcpy(&e->key, key, sizeof *key);
    e->k = k;
    e->next = pw_entries;
    pw_entries = e;
  }
  if (e) atomic_store_explicit(&pw_slots[slot], e, memory_order_release);
  pthread_mutex_unlock(&pw_entries_lock);
}

void kdcl_pointwise_forget(void) {
  pthread_mutex_lock(&pw_entries_lock);
  for (size_t i = 0; i < PW_SLOTS; i++) atomic_store_explicit(&pw_slots[i], NULL, memory_order_relaxed);
  while (pw_entries) {
    pw_entry *e = pw_entries;
    pw_entries = e->next;
    free(e);
  }
  pthread_mutex_unlock(&pw_entries_lock);
}

/* L's kernel (pw_flat or pw_strided): from the table, else built or found by
 * kdcl_kernel_get and recorded. Errors: KD_ETYPE for a dtype the device
 * lacks, kdcl_kernel_get's (named L->op). */
static kd_status pw_kernel(pw_launch *L, bool flat, kdcl_kernel **out) {
  pw_key key;
  pw_make_key(L, flat, &key);
  size_t slot = pw_key_slot(&key);
  if ((*out = pw_table_find(&key, slot))) return KD_OK;
  const char *to = pw_type(L, &L->out);
  if (!to) return KD_ETYPE;
  const char *tin[3] = {"uchar", "uchar", "uchar"};
  for (int k = 0; k < L->nin; k++)
    if (!(tin[k] = pw_type(L, &L->in[k]))) return KD_ETYPE;
  char opts[512];
  pw_options(L, to, tin, opts, sizeof opts);
  kd_status st = kdcl_kernel_get(L->d, pw_source(), opts, flat ? "pw_flat" : "pw_strided", out, L->op);
  if (!st) pw_table_put(&key, slot, *out);
  return st;
}

/* Finds the kernel (pw_kernel) and enqueues one launch over L (numel > 0).
 * Errors: pw_kernel's and kdcl_launch's (named L->op). Nothing is waited
 * for. */
static kd_status pw_go(pw_launch *L) {
  const kdcl_device_info *info = kdcl_info(L->d);
  bool flat = pw_flat(L);
  kdcl_kernel *k;
  kd_status st = pw_kernel(L, flat, &k);
  if (st) return st;

  cl_long n = (cl_long)L->numel;
  cl_mem bufs[4] = {L->out.buf, NULL, NULL, NULL};
  cl_long offs[4] = {(cl_long)L->out.off, 0, 0, 0};
  unsigned char zero[8] = {0};
  kdcl_arg vals[3];
  for (int j = 0; j < 3; j++) {
    if (j < L->nin) {
      bufs[j + 1] = L->in[j].buf;
      offs[j + 1] = (cl_long)L->in[j].off;
      vals[j] = (kdcl_arg){kd_dtype_size(L->in[j].dtype), L->in[j].value ? L->in[j].bytes : zero};
    } else {
      vals[j] = (kdcl_arg){1, zero};
    }
  }
  cl_long i0 = (cl_long)L->i0, i1 = (cl_long)L->i1;
  double f0 = L->f0, f1 = L->f1;
  float g0 = (float)L->f0, g1 = (float)L->f1;
  kdcl_arg args[22] = {
      KDCL_ARG(n),       KDCL_ARG(bufs[0]), KDCL_ARG(bufs[1]), vals[0], KDCL_ARG(bufs[2]), vals[1],
      KDCL_ARG(bufs[3]), vals[2],           KDCL_ARG(i0),      KDCL_ARG(i1),
      info->fp64 ? KDCL_ARG(f0) : KDCL_ARG(g0), info->fp64 ? KDCL_ARG(f1) : KDCL_ARG(g1),
      KDCL_ARG(offs[0]), KDCL_ARG(offs[1]), KDCL_ARG(offs[2]), KDCL_ARG(offs[3])};
  int nargs = 16;
  if (flat) {
    /* pw_flat's own list (its source says which arguments it has). */
    nargs = 0;
    args[nargs++] = KDCL_ARG(bufs[0]);
    args[nargs++] = KDCL_ARG(offs[0]);
    for (int j = 0; j < L->nin; j++) {
      if (L->in[j].value) {
        args[nargs++] = vals[j];
      } else {
        args[nargs++] = KDCL_ARG(bufs[j + 1]);
        args[nargs++] = KDCL_ARG(offs[j + 1]);
      }
    }
    if (!pw_pk(L)) {
      args[nargs++] = KDCL_ARG(i0);
      args[nargs++] = KDCL_ARG(i1);
      args[nargs++] = info->fp64 ? KDCL_ARG(f0) : KDCL_ARG(g0);
      args[nargs++] = info->fp64 ? KDCL_ARG(f1) : KDCL_ARG(g1);
    }
  }
  cl_long ndim = L->ndim;
  cl_long16 size, so, s0, s1, s2;
  if (!flat) {
    int64_t none[KD_MAX_DIMS] = {0};
    pw_long16(&size, L->shape, L->ndim, 1);
    pw_long16(&so, L->out.strides, L->ndim, 0);
    pw_long16(&s0, L->nin > 0 && !L->in[0].value ? L->in[0].strides : none, L->ndim, 0);
    pw_long16(&s1, L->nin > 1 && !L->in[1].value ? L->in[1].strides : none, L->ndim, 0);
    pw_long16(&s2, L->nin > 2 && !L->in[2].value ? L->in[2].strides : none, L->ndim, 0);
    args[nargs++] = KDCL_ARG(ndim);
    args[nargs++] = KDCL_ARG(size);
    args[nargs++] = KDCL_ARG(so);
    args[nargs++] = KDCL_ARG(s0);
    args[nargs++] = KDCL_ARG(s1);
    args[nargs++] = KDCL_ARG(s2);
  }
  size_t global = (size_t)L->numel;
  if (!flat) {
    /* Dim 0 of the shape by the rest (pw_strided: no bounds check). */
    size_t g2[2] = {(size_t)L->shape[0], (size_t)(L->numel / L->shape[0])};
    return kdcl_launch(L->d, k, nargs, args, 2, g2, NULL, L->op);
  }
  /* pw_flat has no bounds check: a launch of a multiple of PW_GROUP items,
   * then one for the rest with every operand's offset moved past the first
   * part (so the driver is never left with a prime global size). */
  size_t head = global > PW_GROUP ? global / PW_GROUP * PW_GROUP : global;
  kd_status st2 = kdcl_launch(L->d, k, nargs, args, 1, &head, NULL, L->op);
  if (st2 || head == global) return st2;
  size_t tail = global - head;
  offs[0] += (cl_long)(head * kd_dtype_size(L->out.dtype));
  for (int j = 0; j < L->nin; j++)
    if (!L->in[j].value) offs[j + 1] += (cl_long)(head * kd_dtype_size(L->in[j].dtype));
  return kdcl_launch(L->d, k, nargs, args, 1, &tail, NULL, L->op);
}

/* Runs the integer-division guard over input 1 of L: KD_EINVAL
 * "ZeroDivisionError" when any divisor is zero (then nothing is written: the
 * caller does not launch). Waits for the check (the host needs the flag). */
static kd_status pw_zero_check(pw_launch *L) {
  const pw_operand *b = &L->in[1];
  if (b->value) {
    static const unsigned char zero[8] = {0};
    return memcmp(b->bytes, zero, kd_dtype_size(b->dtype)) ? KD_OK
                                                              : kd_set_error(KD_EINVAL, "ZeroDivisionError");
  }
  /* The division's own program (same options), kernel pw_zchk. */
  const char *to = pw_type(L, &L->out), *tin[3] = {"uchar", "uchar", "uchar"};
  if (!to) return KD_ETYPE;
  for (int k = 0; k < L->nin; k++)
    if (!(tin[k] = pw_type(L, &L->in[k]))) return KD_ETYPE;
  char opts[512];
  pw_options(L, to, tin, opts, sizeof opts);
  kdcl_kernel *k;
  kd_status st = kdcl_kernel_get(L->d, pw_source(), opts, "pw_zchk", &k, L->op);
  if (st) return st;
  cl_int err, flag = 0;
  cl_mem fb = clCreateBuffer(kdcl_context(L->d), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             sizeof flag, &flag, &err);
  if (err != CL_SUCCESS) return kdcl_fail(err, "clCreateBuffer", L->op, L->d);
  cl_long n = (cl_long)L->numel, off = (cl_long)b->off, ndim = L->ndim;
  cl_long16 size, s1;
  pw_long16(&size, L->shape, L->ndim, 1);
  pw_long16(&s1, b->strides, L->ndim, 0);
  cl_mem xb = b->buf;
  kdcl_arg args[7] = {KDCL_ARG(n),    KDCL_ARG(xb), KDCL_ARG(off), KDCL_ARG(ndim),
                      KDCL_ARG(size), KDCL_ARG(s1), KDCL_ARG(fb)};
  size_t global = (size_t)L->numel;
  if (global > 64) global = (global + 63) / 64 * 64;
  st = kdcl_launch(L->d, k, 7, args, 1, &global, NULL, L->op);
  if (!st) {
    err = clEnqueueReadBuffer(kdcl_queue(L->d), fb, CL_TRUE, 0, sizeof flag, &flag, 0, NULL, NULL);
    st = KDCL_CHECK(err, "clEnqueueReadBuffer", L->op, L->d);
  }
  clReleaseMemObject(fb);
  if (st) return st;
  return flag ? kd_set_error(KD_EINVAL, "ZeroDivisionError") : KD_OK;
}

/* ---- Loops over an iterator -------------------------------------------------------------- */

static const char *iter_op(const kdk_iter *it) { return it->op ? it->op : "opencl pointwise"; }

/* Fills L's device, operands and shape from a built iterator (one output,
 * nin inputs; a cpu input is a 0-dim scalar passed by value). Checks every
 * dtype against the device (KD_ETYPE: kdcl_ctype's message). */
static kd_status pw_from_iter(pw_launch *L, kdk_iter *it, const char *def, bool by_width) {
  memset(L, 0, sizeof *L);
  if (kdk_iter_is_meta(it))
    return kd_set_error(KD_EINTERNAL, "%s (opencl): a pointwise loop got a meta iterator", iter_op(it));
  L->op = iter_op(it);
  L->def = def;
  L->by_width = by_width;
  int nt = kdk_iter_ntensors(it);
  if (kdk_iter_noutputs(it) != 1 || nt < 2 || nt > 4)
    return kd_set_error(KD_EINTERNAL, "%s (opencl): expected one output and 1 to 3 inputs, got %d operands",
                        L->op, nt);
  L->nin = nt - 1;
  if (!(L->d = kdcl_device_of(kdk_iter_device(it), L->op))) return kd_last_status();
  for (int k = 0; k < nt; k++) {
    kd_dtype dt = kdk_iter_dtype(it, k);
    if (pw_supported(L->d, dt)) continue;
    if (!kdcl_ctype(L->d, dt, L->op)) return KD_ETYPE; /* its message says why */
    return kd_set_error(KD_ETYPE, "%s: dtype %s is not supported by the pointwise loops of opencl:%d",
                        L->op, kd_dtype_name(dt), kdcl_info(L->d)->index);
  }
  L->ndim = kdk_iter_ndim(it);
  L->numel = kdk_iter_numel(it);
  for (int d = 0; d < L->ndim; d++) L->shape[d] = kdk_iter_shape(it)[d];
  L->out.dtype = kdk_iter_dtype(it, 0);
  for (int j = 0; j < L->nin; j++) L->in[j].dtype = kdk_iter_dtype(it, 1 + j);
  return KD_OK;
}

/* Resolves the operands' data pointers (numel > 0). */
static kd_status pw_resolve(pw_launch *L, kdk_iter *it) {
  kd_status st = kdcl_resolve(kdk_iter_data(it, 0), &L->out.buf, &L->out.off, L->op);
  if (st) return st;
  for (int d = 0; d < L->ndim; d++) L->out.strides[d] = kdk_iter_stride(it, 0, d);
  for (int j = 0; j < L->nin; j++) {
    pw_operand *x = &L->in[j];
    const kd_tensor *t = kdk_iter_input(it, j);
    if (kd_tensor_device(t).type == KD_DEVICE_CPU) {
      /* A wrapped number (0-dim cpu tensor: the iterator lets it go with
       * device tensors); its element is read on the host. */
      for (int d = 0; d < L->ndim; d++)
        if (kdk_iter_stride(it, 1 + j, d) != 0)
          return kd_set_error(KD_EINVAL, "%s (opencl): input %d is a cpu tensor that is not a scalar",
                              L->op, j);
      x->value = true;
      memcpy(x->bytes, kdk_iter_data(it, 1 + j), kd_dtype_size(x->dtype));
      continue;
    }
    if ((st = kdcl_resolve(kdk_iter_data(it, 1 + j), &x->buf, &x->off, L->op))) return st;
    for (int d = 0; d < L->ndim; d++) x->strides[d] = kdk_iter_stride(it, 1 + j, d);
  }
  return KD_OK;
}

static kd_status pw_not_implemented(kd_status code, const char *op, const char *kernel, kd_dtype dt) {
  return kd_set_error(code, "%s: \"%s_opencl\" not implemented for '%s'", op, kernel, kd_dtype_name(dt));
}

/* A binary-stub loop: checks the computing dtype (`cdt`) against `mask`
 * (KD_EUNSUPPORTED as the CPU loops), then launches. zchk: integer division
 * (zero divisors checked first). */
static kd_status pw_iter_run(kdk_iter *it, const char *def, const char *kernel, unsigned mask,
                             kd_status code, pw_launch *L, bool zchk) {
  if (kdk_iter_is_meta(it)) return KD_OK;
  kd_dtype cdt = L->in[0].dtype;
  if (!strcmp(def, "OP_WHERE")) cdt = L->in[1].dtype;
  if (!(pw_class(cdt) & mask)) return pw_not_implemented(code, L->op, kernel, cdt);
  if (L->numel == 0) return KD_OK;
  kd_status st = pw_resolve(L, it);
  if (st) return st;
  if (zchk && pw_class(cdt) == M_INT && (st = pw_zero_check(L))) return st;
  return pw_go(L);
}

/* Reads scalar parameter s for computing in dt (checked as the CPU loops'
 * set_param: a value that does not fit dt is KD_EOVERFLOW naming `what`). */
static kd_status pw_param(const kd_scalar *s, kd_dtype dt, const char *what, int64_t *i, double *f) {
  unsigned char buf[16];
  kd_status st = kd_scalar_to_element(s, dt, buf);
  if (st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "%s: %s", what, msg);
  }
  *i = kd_scalar_to_int64(s);
  *f = kd_scalar_to_double(s);
  if (dt == KD_BOOL) *i = *f != 0 || (s->kind == KD_SCALAR_COMPLEX && s->v.c.im != 0);
  return KD_OK;
}

/* Binary stubs with no parameter. */
static kd_status pw_binary(kdk_iter *it, const char *def, const char *kernel, unsigned mask, bool zchk) {
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, def, false);
  if (st) return st;
  pw_add_class(&L, L.in[0].dtype);
  return pw_iter_run(it, def, kernel, mask, KD_EUNSUPPORTED, &L, zchk);
}

kd_status opencl_add_stub(kdk_iter *it, const kd_scalar *alpha, const kd_scalar *unused) {
  (void)unused;
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, "OP_ADD", false);
  if (st) return st;
  kd_dtype dt = L.in[0].dtype;
  pw_add_class(&L, dt);
  L.i0 = 1;
  L.f0 = 1.0;
  if (alpha && pw_class(dt) && (st = pw_param(alpha, dt, "add: alpha", &L.i0, &L.f0))) return st;
  return pw_iter_run(it, "OP_ADD", "add", M_ALL, KD_EUNSUPPORTED, &L, false);
}

kd_status opencl_mul_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_MUL", "mul", M_ALL, false);
}
kd_status opencl_div_true_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_DIV_TRUE", "div_true", M_FLT, false);
}
kd_status opencl_div_trunc_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_DIV_TRUNC", "div_trunc", M_INT | M_FLT, true);
}
kd_status opencl_div_floor_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_DIV_FLOOR", "div_floor", M_INT | M_FLT, true);
}
kd_status opencl_remainder_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_REM", "remainder", M_INT | M_FLT, true);
}
kd_status opencl_atan2_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_ATAN2", "atan2", M_FLT, false);
}
kd_status opencl_maximum_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_MAX", "maximum", M_ALL, false);
}
kd_status opencl_minimum_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_MIN", "minimum", M_ALL, false);
}
kd_status opencl_pow_tensor_tensor_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_POW_TT", "pow", M_INT | M_FLT, false);
}

kd_status opencl_pow_tensor_scalar_stub(kdk_iter *it, const kd_scalar *exponent, const kd_scalar *unused) {
  (void)unused;
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, "OP_POW_TS", false);
  if (st) return st;
  kd_dtype dt = L.in[0].dtype;
  pw_add_class(&L, dt);
  if (!exponent) return kd_set_error(KD_EINVAL, "%s (opencl): no exponent", L.op);
  /* As the CPU loop: an integer base reads the exponent converted (checked)
   * to its dtype, a floating one as a double. */
  if (pw_class(dt) == M_INT) {
    unsigned char buf[16];
    kd_scalar e;
    st = kd_scalar_to_element(exponent, dt, buf);
    if (!st) st = kd_scalar_from_element(buf, dt, &e);
    if (st) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", kd_last_error());
      return kd_set_error(st, "%s: exponent: %s", L.op, msg);
    }
    L.i0 = kd_scalar_to_int64(&e);
  }
  L.f0 = kd_scalar_to_double(exponent);
  return pw_iter_run(it, "OP_POW_TS", "pow", M_INT | M_FLT, KD_EUNSUPPORTED, &L, false);
}

/* Comparisons and logical operators: bool output, or the inputs' dtype. */
#define PW_CMP_BODY(def, kernel)                   \
  {                                                \
    (void)p0, (void)p1;                            \
    return pw_binary(it, def, kernel, M_ALL, false); \
  }
kd_status opencl_eq_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) PW_CMP_BODY("OP_EQ", "eq")
kd_status opencl_ne_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) PW_CMP_BODY("OP_NE", "ne")
kd_status opencl_lt_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) PW_CMP_BODY("OP_LT", "lt")
kd_status opencl_le_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) PW_CMP_BODY("OP_LE", "le")
kd_status opencl_gt_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) PW_CMP_BODY("OP_GT", "gt")
kd_status opencl_ge_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) PW_CMP_BODY("OP_GE", "ge")
/* Not in the generated header (no structured group reaches them): registered
 * by kdcl_pointwise_register. */
static kd_status pw_logical_and(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1)
    PW_CMP_BODY("OP_LAND", "logical_and")
static kd_status pw_logical_or(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1)
    PW_CMP_BODY("OP_LOR", "logical_or")
static kd_status pw_logical_xor(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1)
    PW_CMP_BODY("OP_LXOR", "logical_xor")

/* where: out, condition (bool), a, b; elements moved by width. */
static kd_status pw_where(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, "OP_WHERE", true);
  if (st) return st;
  if (L.nin != 3) return kd_set_error(KD_EINTERNAL, "%s (opencl): where needs 3 inputs", L.op);
  return pw_iter_run(it, "OP_WHERE", "where", M_ALL, KD_EUNSUPPORTED, &L, false);
}

/* masked_fill: self (the output, also read: unmasked elements stay), mask
 * (bool); the value, converted to self's dtype as the CPU loop does, is a
 * second input passed by value. Elements moved by width. */
static kd_status pw_masked_fill(kdk_iter *it, const kd_scalar *value, const kd_scalar *unused) {
  (void)unused;
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, "OP_MFILL", true);
  if (st) return st;
  if (L.nin != 1) return kd_set_error(KD_EINTERNAL, "%s (opencl): masked_fill needs 1 input", L.op);
  if (!value) return kd_set_error(KD_EINVAL, "%s (opencl): no value", L.op);
  unsigned char elem[16];
  if ((st = kd_scalar_to_element(value, L.out.dtype, elem))) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "masked_fill_: %s", msg);
  }
  if (L.numel == 0) return KD_OK;
  if ((st = pw_resolve(&L, it))) return st;
  L.nin = 2;
  L.in[1].dtype = L.out.dtype;
  L.in[1].value = true;
  memcpy(L.in[1].bytes, elem, kd_dtype_size(L.out.dtype));
  return pw_go(&L);
}

kd_status opencl_clamp_scalar_stub(kdk_iter *it, const kd_scalar *lo, const kd_scalar *hi) {
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, "OP_CLAMP", false);
  if (st) return st;
  kd_dtype dt = L.in[0].dtype;
  pw_add_class(&L, dt);
  const char *kernel = lo && hi ? "clamp_scalar" : lo ? "clamp_min_scalar" : "clamp_max_scalar";
  if (!(pw_class(dt) & (M_INT | M_FLT))) return pw_not_implemented(KD_EUNSUPPORTED, L.op, kernel, dt);
  if (lo && (st = pw_param(lo, dt, "clamp: min", &L.i0, &L.f0))) return st;
  if (hi && (st = pw_param(hi, dt, "clamp: max", &L.i1, &L.f1))) return st;
  size_t n = strlen(L.extra);
  snprintf(L.extra + n, sizeof L.extra - n, "%s%s", lo ? " -DHAS_LO" : "", hi ? " -DHAS_HI" : "");
  return pw_iter_run(it, "OP_CLAMP", kernel, M_INT | M_FLT, KD_EUNSUPPORTED, &L, false);
}

kd_status opencl_clamp_tensor_stub(kdk_iter *it, const kd_scalar *p0, const kd_scalar *p1) {
  (void)p0, (void)p1;
  return pw_binary(it, "OP_CLAMP3", "clamp", M_INT | M_FLT, false);
}

/* ---- The unary stub ------------------------------------------------------------------ */

typedef struct pw_unary_desc {
  const char *def, *kernel;
  unsigned mask;
} pw_unary_desc;

static const pw_unary_desc pw_unary_ops[KDK_UNARY_OP_COUNT] = {
    [KDK_UNARY_NEG] = {"OP_NEG", "neg", M_INT | M_FLT},
    [KDK_UNARY_ABS] = {"OP_ABS", "abs", M_INT | M_FLT},
    [KDK_UNARY_ABS_TO_REAL] = {"OP_ABS", "abs", 0}, /* complex only */
    [KDK_UNARY_SIGN] = {"OP_SIGN", "sign", M_ALL},
    [KDK_UNARY_BITWISE_NOT] = {"OP_BITWISE_NOT", "bitwise_not", M_BOOL | M_INT},
    [KDK_UNARY_RELU] = {"OP_RELU", "relu", M_INT | M_FLT},
    [KDK_UNARY_FLOOR] = {"OP_FLOOR", "floor", M_INT | M_FLT},
    [KDK_UNARY_CEIL] = {"OP_CEIL", "ceil", M_INT | M_FLT},
    [KDK_UNARY_TRUNC] = {"OP_TRUNC", "trunc", M_INT | M_FLT},
    [KDK_UNARY_ROUND] = {"OP_ROUND", "round", M_INT | M_FLT},
    [KDK_UNARY_ROUND_DECIMALS] = {"OP_ROUND_DEC", "round", M_FLT},
    [KDK_UNARY_EXP] = {"OP_EXP", "exp", M_FLT},
    [KDK_UNARY_LOG] = {"OP_LOG", "log", M_FLT},
    [KDK_UNARY_LOG1P] = {"OP_LOG1P", "log1p", M_FLT},
    [KDK_UNARY_EXPM1] = {"OP_EXPM1", "expm1", M_FLT},
    [KDK_UNARY_SQRT] = {"OP_SQRT", "sqrt", M_FLT},
    [KDK_UNARY_RSQRT] = {"OP_RSQRT", "rsqrt", M_FLT},
    [KDK_UNARY_SIN] = {"OP_SIN", "sin", M_FLT},
    [KDK_UNARY_COS] = {"OP_COS", "cos", M_FLT},
    [KDK_UNARY_TAN] = {"OP_TAN", "tan", M_FLT},
    [KDK_UNARY_TANH] = {"OP_TANH", "tanh", M_FLT},
    [KDK_UNARY_SIGMOID] = {"OP_SIGMOID", "sigmoid", M_FLT},
    [KDK_UNARY_RECIPROCAL] = {"OP_RECIPROCAL", "reciprocal", M_FLT},
    [KDK_UNARY_ERF] = {"OP_ERF", "erf", M_FLT},
    [KDK_UNARY_GELU] = {"OP_GELU", "gelu", M_FLT},
    [KDK_UNARY_GELU_TANH] = {"OP_GELU_TANH", "gelu", M_FLT},
    [KDK_UNARY_LOGICAL_NOT] = {"OP_LOGICAL_NOT", "logical_not", M_ALL},
};

kd_status opencl_unary_stub(kdk_iter *it, kdk_unary_op op, const kdk_unary_extra *extra) {
  if ((int)op < 0 || op >= KDK_UNARY_OP_COUNT || !pw_unary_ops[op].def)
    return kd_set_error(KD_EINVAL, "%s (opencl): unknown unary loop %d", iter_op(it), (int)op);
  const pw_unary_desc *u = &pw_unary_ops[op];
  pw_launch L;
  kd_status st = pw_from_iter(&L, it, u->def, false);
  if (st) return st;
  if (L.nin != 1)
    return kd_set_error(KD_EINTERNAL, "%s (opencl): the unary kernel needs one output and one input, got %d operands",
                        L.op, L.nin + 1);
  kd_dtype in = L.in[0].dtype;
  if (!(pw_class(in) & u->mask)) return pw_not_implemented(KD_ETYPE, L.op, u->kernel, in);
  if (op != KDK_UNARY_LOGICAL_NOT && L.out.dtype != in)
    return kd_set_error(KD_EINTERNAL, "%s (opencl): the loop for %s writes %s, the output is %s", L.op,
                        kd_dtype_name(in), kd_dtype_name(in), kd_dtype_name(L.out.dtype));
  pw_add_class(&L, in);
  if (op == KDK_UNARY_ROUND_DECIMALS) {
    if (!extra) return kd_set_error(KD_EINVAL, "%s (opencl): round.decimals needs its extra", L.op);
    L.f0 = extra->ten_pow;
    L.i0 = extra->neg_decimals;
  }
  return pw_iter_run(it, u->def, u->kernel, u->mask, KD_ETYPE, &L, false);
}

/* ---- Copies ------------------------------------------------------------------------------ */

/* Element strides of src broadcast to dst's sizes (0 along broadcast dims);
 * KD_EINVAL as kd_tensor_copy_ when they do not broadcast. */
static kd_status pw_broadcast(const char *op, const kd_tensor *dst, const kd_tensor *src, int64_t *st) {
  int nd = kd_tensor_ndim(dst), ns = kd_tensor_ndim(src), lead = nd - ns;
  const int64_t *ds = kd_tensor_sizes(dst), *ss = kd_tensor_sizes(src), *sst = kd_tensor_strides(src);
  bool ok = lead >= 0;
  for (int i = 0; ok && i < nd; i++) {
    int j = i - lead;
    if (j < 0 || ss[j] == 1)
      st[i] = 0;
    else if (ss[j] == ds[i])
      st[i] = sst[j];
    else
      ok = false;
  }
  if (ok) return KD_OK;
  return kd_set_error(KD_EINVAL, "%s: src of %d dims cannot be broadcast to dst's sizes (%d dims): "
                      "expected each src size to be 1 or equal to dst's, aligned from the last dimension",
                      op, ns, nd);
}

/* The geometry of an elementwise copy over dst's sizes into L (dim 0
 * fastest, size-1 dims dropped, adjacent dims merged where every operand
 * allows). sstrides: src's element strides (broadcast), or NULL for a value. */
static void pw_geometry(pw_launch *L, const kd_tensor *dst, const int64_t *sstrides, size_t ssize) {
  int nd = kd_tensor_ndim(dst), n = 0;
  const int64_t *sz = kd_tensor_sizes(dst), *dst_st = kd_tensor_strides(dst);
  int64_t osz = (int64_t)kd_tensor_itemsize(dst);
  for (int i = nd - 1; i >= 0; i--) {
    if (sz[i] == 1) continue;
    int64_t so = dst_st[i] * osz, si = sstrides ? sstrides[i] * (int64_t)ssize : 0;
    if (n > 0 && L->out.strides[n - 1] * L->shape[n - 1] == so &&
        L->in[0].strides[n - 1] * L->shape[n - 1] == si) {
      L->shape[n - 1] *= sz[i];
      continue;
    }
    L->shape[n] = sz[i];
    L->out.strides[n] = so;
    L->in[0].strides[n] = si;
    n++;
  }
  L->ndim = n;
  L->numel = kd_tensor_numel(dst);
}

/* Sets the copy's types: by width for one dtype, else converting. */
static void pw_copy_types(pw_launch *L, kd_dtype odt, kd_dtype idt) {
  L->def = "OP_COPY";
  L->out.dtype = odt;
  L->in[0].dtype = idt;
  L->by_width = odt == idt;
  if (odt != idt) {
    unsigned oc = pw_class(odt);
    snprintf(L->extra, sizeof L->extra, "%s%s",
             oc == M_BOOL ? " -DO_BOOL" : oc == M_INT ? " -DO_INT" : " -DO_FLT",
             pw_class(idt) == M_FLT ? " -DI_FLT" : "");
  }
}

/* Whether two byte ranges of one buffer meet. */
static bool pw_meet(cl_mem a, size_t alo, size_t ahi, cl_mem b, size_t blo, size_t bhi) {
  return a == b && alo < bhi && blo < ahi;
}

/* Bytes [lo, hi) a tensor's elements span from its element 0's offset. */
static void pw_span(const kd_tensor *t, size_t off, size_t *lo, size_t *hi) {
  int64_t neg = 0, pos = 0, isz = (int64_t)kd_tensor_itemsize(t);
  for (int i = 0; i < kd_tensor_ndim(t); i++) {
    int64_t s = kd_tensor_strides(t)[i] * (kd_tensor_sizes(t)[i] - 1);
    if (s < 0) neg += s;
    else pos += s;
  }
  *lo = (size_t)((int64_t)off + neg * isz);
  *hi = (size_t)((int64_t)off + (pos + 1) * isz);
}

static kd_status pw_copy_device(const char *op, kd_tensor *dst, const kd_tensor *src);

/* dst and src on one opencl device (src broadcast to dst, any dtypes the
 * device runs): one launch. src overlapping dst other than element for
 * element is first copied to a new contiguous tensor. */
static kd_status pw_copy_device(const char *op, kd_tensor *dst, const kd_tensor *src) {
  pw_launch L;
  memset(&L, 0, sizeof L);
  L.op = op;
  if (!(L.d = kdcl_tensor_device(dst, op))) return kd_last_status();
  if (!kdcl_ctype(L.d, kd_tensor_dtype(dst), op) || !kdcl_ctype(L.d, kd_tensor_dtype(src), op)) return KD_ETYPE;
  if (kd_tensor_numel(dst) == 0) return KD_OK;
  int64_t sst[KD_MAX_DIMS];
  kd_status st = pw_broadcast(op, dst, src, sst);
  if (st) return st;
  if ((st = kdcl_tensor_buffer(dst, &L.out.buf, &L.out.off, op)) ||
      (st = kdcl_tensor_buffer(src, &L.in[0].buf, &L.in[0].off, op)))
    return st;
  size_t dlo, dhi, slo, shi;
  pw_span(dst, L.out.off, &dlo, &dhi);
  pw_span(src, L.in[0].off, &slo, &shi);
  bool same_layout = L.out.off == L.in[0].off && kd_tensor_itemsize(dst) == kd_tensor_itemsize(src) &&
                     kd_tensor_ndim(dst) == kd_tensor_ndim(src) &&
                     !memcmp(kd_tensor_strides(dst), sst, sizeof(int64_t) * (size_t)kd_tensor_ndim(dst));
  if (!same_layout && pw_meet(L.out.buf, dlo, dhi, L.in[0].buf, slo, shi)) {
    kd_tensor *tmp;
    if ((st = kd_tensor_empty(kd_tensor_ndim(src), kd_tensor_sizes(src), kd_tensor_dtype(src),
                              kd_tensor_device(src), &tmp)))
      return st;
    st = pw_copy_device(op, tmp, src);
    if (!st) st = pw_copy_device(op, dst, tmp);
    kd_tensor_release(tmp);
    return st;
  }
  L.nin = 1;
  pw_copy_types(&L, kd_tensor_dtype(dst), kd_tensor_dtype(src));
  pw_geometry(&L, dst, sst, kd_tensor_itemsize(src));
  return pw_go(&L);
}

kd_status kdcl_cast(void *ctx, kd_device device, void *dst, kd_dtype dst_dtype, const void *src,
                    kd_dtype src_dtype, size_t count) {
  (void)ctx;
  static const char op[] = "opencl cast";
  pw_launch L;
  memset(&L, 0, sizeof L);
  L.op = op;
  if (!(L.d = kdcl_device_of(device, op))) return kd_last_status();
  if (!kdcl_ctype(L.d, dst_dtype, op) || !kdcl_ctype(L.d, src_dtype, op)) return KD_ETYPE;
  if (count == 0) return KD_OK;
  kd_status st;
  if ((st = kdcl_resolve(dst, &L.out.buf, &L.out.off, op)) ||
      (st = kdcl_resolve(src, &L.in[0].buf, &L.in[0].off, op)))
    return st;
  L.nin = 1;
  pw_copy_types(&L, dst_dtype, src_dtype);
  L.ndim = 1;
  L.shape[0] = (int64_t)count;
  L.numel = (int64_t)count;
  L.out.strides[0] = (int64_t)kd_dtype_size(dst_dtype);
  L.in[0].strides[0] = (int64_t)kd_dtype_size(src_dtype);
  return pw_go(&L);
}

/* Writes value (already an element of self's dtype) into every element of
 * the opencl tensor self. */
static kd_status pw_fill_bytes(const char *op, kd_tensor *self, const unsigned char *elem) {
  pw_launch L;
  memset(&L, 0, sizeof L);
  L.op = op;
  if (!(L.d = kdcl_tensor_device(self, op))) return kd_last_status();
  kd_dtype dt = kd_tensor_dtype(self);
  if (!kdcl_ctype(L.d, dt, op)) return KD_ETYPE;
  if (kd_tensor_numel(self) == 0) return KD_OK;
  kd_status st = kdcl_tensor_buffer(self, &L.out.buf, &L.out.off, op);
  if (st) return st;
  size_t isz = kd_dtype_size(dt);
  if (kd_tensor_is_contiguous(self)) {
    cl_int err = clEnqueueFillBuffer(kdcl_queue(L.d), L.out.buf, elem, isz, L.out.off,
                                     (size_t)kd_tensor_numel(self) * isz, 0, NULL, NULL);
    return KDCL_CHECK(err, "clEnqueueFillBuffer", op, L.d);
  }
  L.nin = 1;
  pw_copy_types(&L, dt, dt);
  L.in[0].value = true;
  memcpy(L.in[0].bytes, elem, isz);
  pw_geometry(&L, self, NULL, isz);
  return pw_go(&L);
}

/* fill_stub's loop (zero_ through libkdops' kernel): errors without the
 * operator's prefix, which libkdops adds. */
static kd_status pw_fill_stub(kd_tensor *self, const kd_scalar *value) {
  unsigned char elem[16];
  kd_status st = kd_scalar_to_element(value, kd_tensor_dtype(self), elem);
  if (st) return st;
  return pw_fill_bytes("fill_", self, elem);
}

kd_status opencl_fill_scalar(kd_tensor *self, const kd_scalar *value) {
  if (!self) return kd_set_error(KD_EINVAL, "fill_: self is NULL: expected a tensor");
  if (!value) return kd_set_error(KD_EINVAL, "fill_: value is NULL: expected a scalar");
  unsigned char elem[16];
  kd_status st = kd_scalar_to_element(value, kd_tensor_dtype(self), elem);
  if (st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "fill_: %s", msg);
  }
  return pw_fill_bytes("fill_", self, elem);
}

static bool pw_same_sizes(const kd_tensor *a, const kd_tensor *b) {
  return kd_tensor_ndim(a) == kd_tensor_ndim(b) &&
         !memcmp(kd_tensor_sizes(a), kd_tensor_sizes(b), sizeof(int64_t) * (size_t)kd_tensor_ndim(a));
}

static bool pw_is_opencl(const kd_tensor *t) { return kd_tensor_device(t).type == KDCL_DEVICE_TYPE; }

/* self (opencl) <- src (cpu): one blocking write when the bytes are the same,
 * else src is uploaded as it is (contiguous, converted on the host first when
 * the device lacks its dtype) and copied on the device. */
static kd_status pw_copy_from_host(const char *op, kd_tensor *self, const kd_tensor *src) {
  kdcl_device *d = kdcl_tensor_device(self, op);
  if (!d) return kd_last_status();
  if (!kdcl_ctype(d, kd_tensor_dtype(self), op)) return KD_ETYPE;
  if (kd_tensor_numel(self) == 0) return KD_OK;
  kd_status st;
  if (kd_tensor_dtype(self) == kd_tensor_dtype(src) && pw_same_sizes(self, src) &&
      kd_tensor_is_contiguous(self) && kd_tensor_is_contiguous(src)) {
    cl_mem buf;
    size_t off;
    if ((st = kdcl_tensor_buffer(self, &buf, &off, op))) return st;
    /* Blocking: the caller may free src's memory as soon as this returns. */
    cl_int err = clEnqueueWriteBuffer(kdcl_queue(d), buf, CL_TRUE, off,
                                      (size_t)kd_tensor_numel(self) * kd_tensor_itemsize(self),
                                      kd_tensor_data(src), 0, NULL, NULL);
    return KDCL_CHECK(err, "clEnqueueWriteBuffer", op, d);
  }
  kd_tensor *conv = NULL, *up = NULL;
  const kd_tensor *from = src;
  if (!pw_supported(d, kd_tensor_dtype(src))) {
    if ((st = kd_tensor_to_dtype(src, kd_tensor_dtype(self), &conv))) return st;
    from = conv;
  }
  st = kd_tensor_to_device(from, kd_tensor_device(self), &up);
  if (!st) st = pw_copy_device(op, self, up);
  kd_tensor_release(up);
  kd_tensor_release(conv);
  return st;
}

/* self (cpu) <- src (opencl): one blocking read when the bytes are the same;
 * else src is made contiguous in self's dtype on the device, read, and put
 * in place on the host (broadcast, strides) by kd_tensor_copy_. */
static kd_status pw_copy_to_host(const char *op, kd_tensor *self, const kd_tensor *src) {
  kdcl_device *d = kdcl_tensor_device(src, op);
  if (!d) return kd_last_status();
  kd_status st;
  int64_t sst[KD_MAX_DIMS];
  if ((st = pw_broadcast(op, self, src, sst))) return st;
  if (kd_tensor_numel(self) == 0) return KD_OK;
  if (!pw_supported(d, kd_tensor_dtype(src))) return kd_tensor_copy_(self, src); /* the bytes, through the host */
  if (kd_tensor_dtype(self) == kd_tensor_dtype(src) && pw_same_sizes(self, src) &&
      kd_tensor_is_contiguous(self) && kd_tensor_is_contiguous(src)) {
    cl_mem buf;
    size_t off;
    if ((st = kdcl_tensor_buffer(src, &buf, &off, op))) return st;
    cl_int err = clEnqueueReadBuffer(kdcl_queue(d), buf, CL_TRUE, off,
                                     (size_t)kd_tensor_numel(src) * kd_tensor_itemsize(src),
                                     kd_tensor_data(self), 0, NULL, NULL);
    return KDCL_CHECK(err, "clEnqueueReadBuffer", op, d);
  }
  kd_dtype dt = pw_supported(d, kd_tensor_dtype(self)) ? kd_tensor_dtype(self) : kd_tensor_dtype(src);
  kd_tensor *dev = NULL, *host = NULL;
  const kd_tensor *from = src;
  if (dt != kd_tensor_dtype(src) || !kd_tensor_is_contiguous(src)) {
    st = kd_tensor_empty(kd_tensor_ndim(src), kd_tensor_sizes(src), dt, kd_tensor_device(src), &dev);
    if (!st) st = pw_copy_device(op, dev, src);
    from = dev;
  }
  if (!st) st = kd_tensor_empty(kd_tensor_ndim(from), kd_tensor_sizes(from), dt, kd_device_cpu(), &host);
  if (!st) {
    cl_mem buf;
    size_t off;
    st = kdcl_tensor_buffer(from, &buf, &off, op);
    if (!st) {
      cl_int err = clEnqueueReadBuffer(kdcl_queue(d), buf, CL_TRUE, off,
                                       (size_t)kd_tensor_numel(from) * kd_dtype_size(dt),
                                       kd_tensor_data(host), 0, NULL, NULL);
      st = KDCL_CHECK(err, "clEnqueueReadBuffer", op, d);
    }
  }
  if (!st) st = kd_tensor_copy_(self, host);
  kd_tensor_release(host);
  kd_tensor_release(dev);
  return st;
}

kd_status opencl_copy_(kd_tensor *self, kd_tensor *src, bool non_blocking) {
  static const char op[] = "copy_";
  /* non_blocking: copies on the device never wait; copies from the host wait
   * for their write (src's memory may go right after), copies to the host
   * for their read (the host needs the bytes). */
  (void)non_blocking;
  if (!self || !src) return kd_set_error(KD_EINVAL, "copy_: %s is NULL: expected a tensor", self ? "src" : "self");
  if (self == src || kd_tensor_device(self).type == KD_DEVICE_META) return KD_OK;
  for (int i = 0; i < kd_tensor_ndim(self); i++)
    if (kd_tensor_sizes(self)[i] > 1 && kd_tensor_strides(self)[i] == 0)
      return kd_set_error(KD_EINVAL,
                          "copy_: dst's elements overlap (dimension %d has size %lld and stride 0): "
                          "expected a dst whose elements do not share memory",
                          i, (long long)kd_tensor_sizes(self)[i]);
  if (kd_tensor_device(src).type == KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED, "copy_: src is a meta tensor: it has no data to copy into a %s tensor",
                        kd_device_type_name(kd_tensor_device(self).type));
  int64_t sst[KD_MAX_DIMS];
  kd_status st = pw_broadcast(op, self, src, sst);
  if (st) return st;
  bool so = pw_is_opencl(self), ss = pw_is_opencl(src);
  if (so && ss) {
    if (kd_tensor_device(self).index == kd_tensor_device(src).index) return pw_copy_device(op, self, src);
    /* Another opencl device: through the host. */
    kd_tensor *host;
    if ((st = kd_tensor_to_device(src, kd_device_cpu(), &host))) return st;
    st = pw_copy_from_host(op, self, host);
    kd_tensor_release(host);
    return st;
  }
  if (so && kd_tensor_device(src).type == KD_DEVICE_CPU) return pw_copy_from_host(op, self, src);
  if (ss && kd_tensor_device(self).type == KD_DEVICE_CPU) return pw_copy_to_host(op, self, src);
  /* Another device type on one side: the core's copy through the host. */
  st = kd_tensor_copy_(self, src);
  if (st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kd_last_error());
    return kd_set_error(st, "copy_: %s", msg);
  }
  return KD_OK;
}

/* ---- Stubs no generated group registers ------------------------------------------------------ */

static bool pw_registered[6];

kd_status kdcl_pointwise_register(void) {
  kd_status st = KD_OK;
  kd_device_type t = KDCL_DEVICE_TYPE;
  if (!st && !(st = KDK_REGISTER_DEVICE_STUB(where_stub, t, pw_where))) pw_registered[0] = true;
  if (!st && !(st = KDK_REGISTER_DEVICE_STUB(logical_and_stub, t, pw_logical_and))) pw_registered[1] = true;
  if (!st && !(st = KDK_REGISTER_DEVICE_STUB(logical_or_stub, t, pw_logical_or))) pw_registered[2] = true;
  if (!st && !(st = KDK_REGISTER_DEVICE_STUB(logical_xor_stub, t, pw_logical_xor))) pw_registered[3] = true;
  if (!st && !(st = KDK_REGISTER_DEVICE_STUB(fill_stub, t, pw_fill_stub))) pw_registered[4] = true;
  if (!st && !(st = KDK_REGISTER_DEVICE_STUB(masked_fill_stub, t, pw_masked_fill))) pw_registered[5] = true;
  if (st) kdcl_pointwise_unregister();
  return st;
}

void kdcl_pointwise_unregister(void) {
  kd_device_type t = KDCL_DEVICE_TYPE;
  if (pw_registered[0]) KDK_UNREGISTER_DEVICE_STUB(where_stub, t);
  if (pw_registered[1]) KDK_UNREGISTER_DEVICE_STUB(logical_and_stub, t);
  if (pw_registered[2]) KDK_UNREGISTER_DEVICE_STUB(logical_or_stub, t);
  if (pw_registered[3]) KDK_UNREGISTER_DEVICE_STUB(logical_xor_stub, t);
  if (pw_registered[4]) KDK_UNREGISTER_DEVICE_STUB(fill_stub, t);
  if (pw_registered[5]) KDK_UNREGISTER_DEVICE_STUB(masked_fill_stub, t);
  memset(pw_registered, 0, sizeof pw_registered);
}
