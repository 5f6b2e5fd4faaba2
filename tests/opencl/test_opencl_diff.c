/*
 * test_opencl_diff.c: the differential test of the OpenCL backend. Every
 * operator the plugin implements runs on opencl:0 and on the CPU, and the two
 * must agree.
 *
 *   test_opencl_diff PLUGIN [ENTRIES [DEVICE]]
 *
 * PLUGIN is libkd_opencl.so; ENTRIES is the opencl_entries.txt kdgen wrote
 * beside it (optional; "-" for none). DEVICE (default opencl:0) lets the same
 * harness check another generated backend (the fakegen proof backend: then
 * no OpenCL platform is needed, and every dtype counts as supported). The operators come from the registry: every operator
 * with an active kernel of the backend's key (PrivateUse1) after the plugin is
 * loaded (nothing else in this process registers one); each "generated" line
 * of ENTRIES must be among them. The CPU fallback registers nothing, so it is
 * never counted as the backend's.
 *
 * The arguments are built from each operator's schema, so that a new operator
 * in the YAML is covered without editing this file: tensors (random values,
 * the same bytes on both sides), Scalars, dims, sizes, defaults. A probe on
 * the CPU picks the shapes (pointwise [3,4], matrix chains [3,4]x[4,5],
 * batched [2,3,4]x[2,4,5], vectors [5]) and the dtype of out= tensors. Then
 * every dtype x layout runs: contiguous, transposed, sliced with a step and
 * an offset, expanded (stride 0), broadcast, 0-dim, mixed 0-dim, zero-size,
 * promoted (a second operand of another dtype), NaN/inf values, and for out=
 * operators a strided out of the right size (every out= case otherwise gets
 * an empty out that the operator resizes). In-place and out= operators are
 * compared on the tensors the caller passed.
 *
 * Agreement: both fail with the same status, or both succeed with results of
 * the same dtype, sizes and values (integers and bool exactly; floats within
 * a per-dtype tolerance, NaN in the same places), the device's results on the
 * device, and out=/in-place results being the caller's tensor. A dtype the
 * device cannot run (float16 without cl_khr_fp16, bfloat16, complex, float64
 * without cl_khr_fp64) may instead fail on the device with a message that
 * says "not supported" or run through the CPU fallback. For a dtype it runs,
 * the backend's own kernel must have run: kd_op_fallback_count of the
 * operator must not move.
 *
 * Exit status: 0 when everything agreed, 1 on any disagreement (each printed
 * as "FAIL op dtype layout: what"), 77 (skip) when there is no OpenCL
 * platform. Counts (operators x dtypes x layouts run, skipped) are printed.
 * KD_OPENCL_DIFF_OPS=add,mul restricts the operators to names containing one
 * of the substrings.
 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kd/kd.h>
#include <kd/ops.h>

#include "opencl_test_util.h"

#define MAXOPS 1024
#define MAXT 8

/* ---- Layouts ------------------------------------------------------------ */

typedef enum {
  L_CONTIG,
  L_TRANSPOSED,
  L_STEP,
  L_EXPAND,
  L_BROADCAST,
  L_ZERODIM,
  L_MIXED0,
  L_ZEROSIZE,
  L_PROMOTE,
  L_NAN,
  L_OUT_STRIDED,
  L_COUNT
} layout;
static const char *const layout_names[L_COUNT] = {
    "contiguous", "transposed", "step", "expand",  "broadcast",   "0-dim",
    "mixed-0-dim", "zero-size", "promote", "nan-inf", "out-strided"};

/* Shape sets: the shape of the i-th input tensor (of n). */
enum { SS_POINTWISE, SS_CHAIN, SS_BATCHED, SS_VECTOR, SS_COUNT };

static int shape_of(int ss, int i, int n, int64_t *sizes) {
  switch (ss) {
  case SS_POINTWISE:
    sizes[0] = 3, sizes[1] = 4;
    return 2;
  case SS_CHAIN: { /* mm: [3,4][4,5]; addmm: [3,5][3,4][4,5] */
    static const int64_t two[2][2] = {{3, 4}, {4, 5}}, three[3][2] = {{3, 5}, {3, 4}, {4, 5}};
    const int64_t *s = n >= 3 ? three[i < 3 ? i : 2] : two[i < 2 ? i : 1];
    sizes[0] = s[0], sizes[1] = s[1];
    return 2;
  }
  case SS_BATCHED: {
    static const int64_t two[2][2] = {{3, 4}, {4, 5}}, three[3][2] = {{3, 5}, {3, 4}, {4, 5}};
    const int64_t *s = n >= 3 ? three[i < 3 ? i : 2] : two[i < 2 ? i : 1];
    sizes[0] = 2, sizes[1] = s[0], sizes[2] = s[1];
    return 3;
  }
  default:
    sizes[0] = 5;
    return 1;
  }
}

/* ---- State -------------------------------------------------------------- */

static kd_device g_dev;
static kd_dispatch_key g_key;
static bool g_opencl, g_fp16, g_fp64;
static int g_failures;
static long g_run, g_skipped, g_err_agree, g_refused, g_fell_back_unsupported;
static uint32_t g_op_refused; /* supported dtypes the current operator refused */

__attribute__((format(printf, 4, 5))) static void FAIL(const char *op, kd_dtype dt, layout l,
                                                       const char *fmt, ...) {
  va_list ap;
  printf("FAIL %s %s %s: ", op, kd_dtype_name(dt), layout_names[l]);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  g_failures++;
}

static bool dtype_supported(kd_dtype dt) {
  if (!g_opencl) return true; /* another backend: refusals are judged by their message */
  if (dt == KD_FLOAT16) return g_fp16;
  if (dt == KD_FLOAT64) return g_fp64;
  return !(dt == KD_BFLOAT16 || kd_dtype_is_complex(dt));
}

/* ---- Values ------------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* A value for element k of an input of dtype dt: integers non-zero in
 * [-5, 5] ([1, 9] unsigned), floats in [-2, 2] away from 0; `special`
 * puts NaN, inf and -inf in elements 1, 2, 3 of floating tensors. */
static kd_scalar elem_value(kd_dtype dt, int64_t k, bool special) {
  uint64_t r = rnd();
  if (dt == KD_BOOL) return kd_scalar_bool(r & 1);
  if (dt == KD_UINT8) return kd_scalar_int((int64_t)(r % 9) + 1);
  if (kd_dtype_is_integral(dt, false)) {
    int64_t v = (int64_t)(r % 5) + 1;
    return kd_scalar_int((r >> 8) & 1 ? -v : v);
  }
  double d = ((double)(r % 4000) - 2000.0) / 1000.0;
  if (fabs(d) < 0.05) d = 0.75;
  if (special && k == 1) d = NAN;
  if (special && k == 2) d = INFINITY;
  if (special && k == 3) d = -INFINITY;
  if (kd_dtype_is_complex(dt)) {
    kd_scalar s;
    s.kind = KD_SCALAR_COMPLEX;
    s.v.c.re = d;
    s.v.c.im = ((double)(rnd() % 2000) - 1000.0) / 1000.0;
    return s;
  }
  return kd_scalar_double(d);
}

/* Fills a contiguous cpu tensor with elem_value. */
static kd_status fill_random(kd_tensor *t, bool special) {
  int nd = kd_tensor_ndim(t);
  const int64_t *sz = kd_tensor_sizes(t);
  int64_t idx[KD_MAX_DIMS] = {0}, n = kd_tensor_numel(t);
  for (int64_t k = 0; k < n; k++) {
    kd_scalar v = elem_value(kd_tensor_dtype(t), k, special);
    kd_status st = kd_tensor_set(t, idx, &v);
    if (st) return st;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < sz[d]) break;
      idx[d] = 0;
    }
  }
  return KD_OK;
}

/* A scalar argument's value for dtype dt. */
static kd_scalar scalar_for(kd_dtype dt, const char *name) {
  if (dt == KD_BOOL) return kd_scalar_bool(true);
  bool fl = kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt);
  if (!strcmp(name, "min")) return fl ? kd_scalar_double(-0.5) : kd_scalar_int(-1);
  if (!strcmp(name, "max")) return fl ? kd_scalar_double(0.5) : kd_scalar_int(2);
  if (!strcmp(name, "alpha") || !strcmp(name, "beta")) return kd_scalar_int(2);
  return fl ? kd_scalar_double(1.5) : kd_scalar_int(3);
}

/* ---- One case: the arguments on both sides -------------------------------- */

typedef struct side {
  kd_stack st;
  kd_tensor *written[MAXT]; /* owned: the mutated arguments, in schema order */
  int nwritten;
} side;

typedef struct plan {
  int ss;            /* shape set */
  kd_dtype out_dtype; /* of out= tensors */
  int out_ndim;      /* the out= result's geometry (from the CPU probe) */
  int64_t out_sizes[KD_MAX_DIMS];
} plan;

typedef struct opinfo {
  kd_op *op;
  const char *name; /* "aten::add.Tensor" */
  int ninputs;      /* tensor inputs (Tensor, Tensor?) that are not out= */
  int nout;         /* out= arguments (written, kwarg-only) */
  bool inplace;     /* a written positional argument (self) */
  bool factory;     /* no tensor argument at all */
  bool geometry_only; /* results have no defined values (empty*, resize_) */
  const char *cant; /* why no arguments can be made, or NULL */
} opinfo;

static void side_free(side *s) {
  kd_stack_free(&s->st);
  for (int i = 0; i < s->nwritten; i++) kd_tensor_release(s->written[i]);
  s->nwritten = 0;
}

static bool is_tensor_type(const kd_type *t, bool *optional) {
  *optional = false;
  if (kd_type_kind_of(t) == KD_TYPE_OPTIONAL) {
    *optional = true;
    t = kd_type_element(t);
  }
  return kd_type_kind_of(t) == KD_TYPE_TENSOR;
}

static bool is_out_arg(const kd_argument *a) {
  return kd_argument_is_write(a) && kd_argument_kwarg_only(a);
}

static void classify(opinfo *oi) {
  const kd_schema *s = kd_op_schema(oi->op);
  oi->name = kd_op_name(oi->op);
  oi->cant = s ? NULL : "no schema";
  if (!s) return;
  size_t n = kd_schema_num_arguments(s);
  for (size_t i = 0; i < n; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    bool opt;
    const kd_type *t = kd_argument_type(a);
    if (is_tensor_type(t, &opt)) {
      if (is_out_arg(a)) oi->nout++;
      else {
        oi->ninputs++;
        if (kd_argument_is_write(a)) oi->inplace = true;
      }
    } else if (kd_type_kind_of(t) == KD_TYPE_LIST &&
               kd_type_kind_of(kd_type_element(t)) == KD_TYPE_TENSOR) {
      oi->cant = "a Tensor[] argument";
    } else if (kd_type_kind_of(t) == KD_TYPE_LIST &&
               kd_type_kind_of(kd_type_element(t)) == KD_TYPE_OPTIONAL) {
      oi->cant = "a Tensor?[] argument";
    }
  }
  oi->factory = oi->ninputs == 0 && oi->nout == 0;
  const char *base = strstr(oi->name, "::");
  base = base ? base + 2 : oi->name;
  oi->geometry_only = !strncmp(base, "empty", 5) || !strncmp(base, "new_empty", 9) ||
                      !strncmp(base, "resize_", 7);
}

/* Makes input tensor number `ti` (of oi->ninputs) for both sides: shape from
 * the shape set and layout, values random, the device's a copy of the CPU's
 * bytes (the same view of a moved base). *c and *d are owned. */
static kd_status make_input(const opinfo *oi, const plan *p, int ti, kd_dtype dt, layout l,
                            bool written, kd_tensor **c, kd_tensor **d) {
  int64_t sizes[KD_MAX_DIMS];
  int nd = shape_of(p->ss, ti, oi->ninputs, sizes);
  if (l == L_ZERODIM || (l == L_MIXED0 && ti > 0)) nd = 0;
  if (l == L_ZEROSIZE) sizes[0] = 0;
  if (l == L_BROADCAST && ti > 0) { /* [4] for the second, [3,1] for the third */
    if (ti == 1) nd = 1, sizes[0] = 4;
    else sizes[1] = 1;
  }
  if (l == L_PROMOTE && ti == 1)
    dt = kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt) ? KD_INT64
         : dt == KD_BOOL                                       ? KD_INT32
                                                               : KD_FLOAT32;
  /* The base tensor and the view of it. */
  int64_t bsz[KD_MAX_DIMS], vst[KD_MAX_DIMS];
  int64_t off = 0;
  memcpy(bsz, sizes, sizeof(int64_t) * (size_t)nd);
  bool transposed = l == L_TRANSPOSED && nd >= 2;
  bool step = l == L_STEP && nd >= 1;
  bool expand = l == L_EXPAND && nd >= 1 && !written && sizes[0] > 1;
  if (transposed) bsz[nd - 1] = sizes[nd - 2], bsz[nd - 2] = sizes[nd - 1];
  if (step) bsz[nd - 1] = 2 * sizes[nd - 1] + 1, off = 1;
  if (expand) bsz[0] = 1;
  kd_tensor *bc = NULL, *bd = NULL;
  kd_status st = kd_tensor_empty(nd, bsz, dt, kd_device_cpu(), &bc);
  if (!st) st = fill_random(bc, l == L_NAN);
  if (!st) st = kd_tensor_to_device(bc, g_dev, &bd);
  if (st) goto done;
  const int64_t *bs = kd_tensor_strides(bc);
  for (int i = 0; i < nd; i++) vst[i] = bs[i];
  if (transposed) vst[nd - 1] = bs[nd - 2], vst[nd - 2] = bs[nd - 1];
  if (step) vst[nd - 1] = 2;
  if (expand) vst[0] = 0;
  st = kd_tensor_as_strided(bc, nd, sizes, vst, off, c);
  if (!st) st = kd_tensor_as_strided(bd, nd, sizes, vst, off, d);
  if (st) {
    if (*c) kd_tensor_release(*c);
    *c = NULL;
  }
done:
  if (bc) kd_tensor_release(bc);
  if (bd) kd_tensor_release(bd);
  return st;
}

/* The out= tensor: empty (the operator resizes it) or, for L_OUT_STRIDED,
 * of the probed result's sizes with reversed strides. */
static kd_status make_out(const plan *p, layout l, kd_device dev, kd_tensor **out) {
  if (l != L_OUT_STRIDED || p->out_ndim < 2) {
    int64_t zero = 0;
    return kd_tensor_empty(1, &zero, p->out_dtype, dev, out);
  }
  int nd = p->out_ndim;
  int64_t st[KD_MAX_DIMS], acc = 1;
  for (int i = 0; i < nd; i++) { /* column-major: dim 0 fastest */
    st[i] = acc;
    acc *= p->out_sizes[i] > 0 ? p->out_sizes[i] : 1;
  }
  return kd_tensor_empty_strided(nd, p->out_sizes, st, p->out_dtype, dev, out);
}

/* Pushes a value on both stacks. */
static kd_status push2(side *c, side *d, kd_value vc, kd_value vd) {
  kd_status st = kd_stack_push(&c->st, &vc);
  if (!st) st = kd_stack_push(&d->st, &vd);
  kd_value_destroy(&vc);
  kd_value_destroy(&vd);
  return st;
}

/* Builds both stacks. Returns KD_OK, or KD_EUNSUPPORTED with *why set when
 * an argument cannot be made (the case is skipped), or another error. */
static kd_status build(const opinfo *oi, const plan *p, kd_dtype dt, layout l, side *c, side *d,
                       const char **why) {
  const kd_schema *s = kd_op_schema(oi->op);
  size_t n = kd_schema_num_arguments(s);
  int ti = 0;
  kd_status st = KD_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const kd_argument *a = kd_schema_argument(s, i);
    const kd_type *t = kd_argument_type(a);
    const char *name = kd_argument_name(a);
    bool opt = kd_type_kind_of(t) == KD_TYPE_OPTIONAL;
    const kd_type *e = opt ? kd_type_element(t) : t;
    kd_type_kind k = kd_type_kind_of(e);
    bool has_default = kd_argument_default(a) != NULL;
    if (k == KD_TYPE_TENSOR) {
      kd_tensor *tc = NULL, *td = NULL;
      if (is_out_arg(a)) {
        st = make_out(p, l, kd_device_cpu(), &tc);
        if (!st) st = make_out(p, l, g_dev, &td);
      } else {
        kd_dtype tdt = !strcmp(name, "condition") || !strcmp(name, "mask") ? KD_BOOL : dt;
        st = make_input(oi, p, ti++, tdt, l, kd_argument_is_write(a), &tc, &td);
      }
      if (st) {
        if (tc) kd_tensor_release(tc);
        return st;
      }
      if (kd_argument_is_write(a) && c->nwritten < MAXT) {
        kd_tensor_retain(tc);
        kd_tensor_retain(td);
        c->written[c->nwritten++] = tc;
        d->written[d->nwritten++] = td;
      }
      st = push2(c, d, kd_value_tensor(tc), kd_value_tensor(td));
      kd_tensor_release(tc);
      kd_tensor_release(td);
      continue;
    }
    if (k == KD_TYPE_SCALAR && (!opt || !strcmp(name, "min") || !strcmp(name, "max"))) {
      kd_scalar v = scalar_for(dt, name);
      st = push2(c, d, kd_value_scalar(v), kd_value_scalar(v));
      continue;
    }
    if ((k == KD_TYPE_INT || k == KD_TYPE_SYMINT) && !strcmp(name, "dim")) {
      st = push2(c, d, kd_value_int(-1), kd_value_int(-1));
      continue;
    }
    if (k == KD_TYPE_LIST) {
      kd_type_kind ek = kd_type_kind_of(kd_type_element(e));
      if ((ek == KD_TYPE_INT || ek == KD_TYPE_SYMINT) &&
          (!strcmp(name, "dim") || !strcmp(name, "size") || !strcmp(name, "stride"))) {
        static const int64_t dim[1] = {-1}, size[2] = {4, 3}, stride[2] = {1, 4};
        const int64_t *v = !strcmp(name, "dim") ? dim : !strcmp(name, "size") ? size : stride;
        size_t nv = !strcmp(name, "dim") ? 1 : 2;
        kd_value vc, vd;
        st = kd_value_int_list(v, nv, &vc);
        if (!st) {
          st = kd_value_int_list(v, nv, &vd);
          if (st) kd_value_destroy(&vc);
        }
        if (!st) st = push2(c, d, vc, vd);
        continue;
      }
    }
    if (oi->factory && k == KD_TYPE_SCALAR_TYPE) {
      st = push2(c, d, kd_value_dtype(dt), kd_value_dtype(dt));
      continue;
    }
    if (k == KD_TYPE_DEVICE && (oi->factory || !has_default)) {
      st = push2(c, d, kd_value_device(kd_device_cpu()), kd_value_device(g_dev));
      continue;
    }
    if (has_default) {
      kd_value v;
      st = kd_argument_default_value(a, &v);
      if (st) {
        *why = "an argument's default does not decode";
        return KD_EUNSUPPORTED;
      }
      kd_value v2;
      kd_value_copy(&v2, &v);
      st = push2(c, d, v, v2);
      continue;
    }
    if (opt) { /* Tensor? handled above; other optionals without a default: None */
      st = push2(c, d, kd_value_none(), kd_value_none());
      continue;
    }
    switch (k) {
    case KD_TYPE_BOOL:
      st = push2(c, d, kd_value_bool(false), kd_value_bool(false));
      break;
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
      st = push2(c, d, kd_value_int(1), kd_value_int(1));
      break;
    case KD_TYPE_FLOAT:
      st = push2(c, d, kd_value_double(0.5), kd_value_double(0.5));
      break;
    default:
      *why = "an argument of a type this test cannot make";
      return KD_EUNSUPPORTED;
    }
  }
  return st;
}

/* ---- Comparison ---------------------------------------------------------- */

static double tol_of(kd_dtype dt) {
  switch (dt) {
  case KD_FLOAT16: return 2e-3;
  case KD_BFLOAT16: return 1e-2;
  case KD_FLOAT32:
  case KD_COMPLEX64: return 2e-5;
  default: return 1e-12;
  }
}

static bool close_enough(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs(a - b) <= tol + tol * fabs(b);
}

static double as_double(kd_scalar s) {
  switch (s.kind) {
  case KD_SCALAR_BOOL: return s.v.b;
  case KD_SCALAR_INT: return (double)s.v.i;
  case KD_SCALAR_DOUBLE: return s.v.d;
  default: return s.v.c.re;
  }
}

/* Compares the CPU's tensor c with the device's d (moved to the CPU).
 * Returns false after FAIL. */
static bool compare_tensor(const opinfo *oi, kd_dtype dt, layout l, const char *what,
                           const kd_tensor *c, const kd_tensor *d) {
  if (kd_tensor_device(d).type != kd_tensor_device(c).type &&
      !(kd_tensor_device(c).type == KD_DEVICE_CPU && kd_tensor_device(d).type == g_dev.type)) {
    FAIL(oi->name, dt, l, "%s: on the wrong device type %s", what,
         kd_device_type_name(kd_tensor_device(d).type));
    return false;
  }
  if (kd_tensor_device(c).type == KD_DEVICE_CPU && kd_tensor_device(d).type != g_dev.type &&
      !oi->factory) {
    FAIL(oi->name, dt, l, "%s: the device's result is on %s, not on opencl", what,
         kd_device_type_name(kd_tensor_device(d).type));
    return false;
  }
  if (kd_tensor_dtype(c) != kd_tensor_dtype(d)) {
    FAIL(oi->name, dt, l, "%s: dtype %s on the device, %s on the cpu", what,
         kd_dtype_name(kd_tensor_dtype(d)), kd_dtype_name(kd_tensor_dtype(c)));
    return false;
  }
  char gc[256], gd[256];
  kd_tensor_describe(c, gc, sizeof gc);
  kd_tensor_describe(d, gd, sizeof gd);
  int nd = kd_tensor_ndim(c);
  if (kd_tensor_ndim(d) != nd ||
      memcmp(kd_tensor_sizes(c), kd_tensor_sizes(d), sizeof(int64_t) * (size_t)nd)) {
    FAIL(oi->name, dt, l, "%s: sizes differ: device %s, cpu %s", what, gd, gc);
    return false;
  }
  if (oi->geometry_only) return true;
  kd_tensor *h = NULL;
  kd_status st = kd_tensor_to_device(d, kd_device_cpu(), &h);
  if (st) {
    FAIL(oi->name, dt, l, "%s: moving the device's result to the cpu: %s: %s", what,
         kd_status_name(st), kd_last_error());
    return false;
  }
  const int64_t *sz = kd_tensor_sizes(c);
  int64_t idx[KD_MAX_DIMS] = {0}, n = kd_tensor_numel(c);
  kd_dtype rdt = kd_tensor_dtype(c);
  double tol = tol_of(rdt);
  bool ok = true;
  for (int64_t k = 0; k < n && ok; k++) {
    kd_scalar a, b;
    if (kd_tensor_get(c, idx, &a) || kd_tensor_get(h, idx, &b)) {
      FAIL(oi->name, dt, l, "%s: reading element %lld: %s", what, (long long)k, kd_last_error());
      ok = false;
      break;
    }
    bool same;
    if (kd_dtype_is_floating(rdt)) same = close_enough(as_double(a), as_double(b), tol);
    else if (kd_dtype_is_complex(rdt))
      same = close_enough(a.v.c.re, b.v.c.re, tol) && close_enough(a.v.c.im, b.v.c.im, tol);
    else if (rdt == KD_BOOL) same = a.v.b == b.v.b;
    else same = a.v.i == b.v.i;
    if (!same) {
      char ia[64] = "", pos[128] = "";
      for (int i = 0; i < nd; i++) {
        snprintf(ia, sizeof ia, "%s%lld", i ? "," : "", (long long)idx[i]);
        strncat(pos, ia, sizeof pos - strlen(pos) - 1);
      }
      FAIL(oi->name, dt, l, "%s: element [%s] is %.9g on the device, %.9g on the cpu (device %s)",
           what, pos, as_double(b), as_double(a), gd);
      ok = false;
    }
    for (int i = nd - 1; i >= 0; i--) {
      if (++idx[i] < sz[i]) break;
      idx[i] = 0;
    }
  }
  kd_tensor_release(h);
  return ok;
}

/* ---- Running --------------------------------------------------------------- */

typedef struct outcome {
  kd_status st;
  char msg[512];
} outcome;

static void call(kd_op *op, side *s, outcome *o) {
  kd_clear_error();
  o->st = kd_call_boxed(op, &s->st);
  snprintf(o->msg, sizeof o->msg, "%s", o->st ? kd_last_error() : "");
}

/* Runs one case on the CPU only (the probe). Fills p->out_* from the out=
 * argument. */
static bool probe_cpu(const opinfo *oi, plan *p, kd_dtype dt) {
  side c = {0}, d = {0};
  const char *why = NULL;
  bool ok = false;
  if (!build(oi, p, dt, L_CONTIG, &c, &d, &why)) {
    outcome o;
    call(oi->op, &c, &o);
    ok = o.st == KD_OK;
    if (ok && oi->nout && c.nwritten) {
      const kd_tensor *t = c.written[c.nwritten - 1];
      p->out_ndim = kd_tensor_ndim(t);
      memcpy(p->out_sizes, kd_tensor_sizes(t), sizeof(int64_t) * (size_t)p->out_ndim);
    }
  }
  side_free(&c);
  side_free(&d);
  return ok;
}

/* The plan of an operator for dtype dt: the first shape set (and out dtype)
 * the CPU accepts; SS_POINTWISE with dt when none does (then the errors are
 * compared). */
static plan plan_for(const opinfo *oi, kd_dtype dt, bool *cpu_ok) {
  static const kd_dtype outs[] = {KD_DTYPE_UNDEFINED, KD_BOOL, KD_FLOAT32, KD_INT64, KD_FLOAT64,
                                  KD_COMPLEX64};
  plan p = {SS_POINTWISE, dt, 0, {0}};
  for (int ss = 0; ss < SS_COUNT; ss++) {
    if (oi->factory && ss) break;
    for (size_t o = 0; o < (oi->nout ? sizeof outs / sizeof *outs : 1); o++) {
      plan q = {ss, outs[o] == KD_DTYPE_UNDEFINED ? dt : outs[o], 0, {0}};
      if (probe_cpu(oi, &q, dt)) {
        *cpu_ok = true;
        return q;
      }
    }
  }
  *cpu_ok = false;
  return p;
}

static bool layout_applies(const opinfo *oi, const plan *p, kd_dtype dt, layout l) {
  switch (l) {
  case L_CONTIG: return true;
  case L_TRANSPOSED: return !oi->factory && p->ss != SS_VECTOR;
  case L_STEP: return !oi->factory;
  case L_EXPAND: return oi->ninputs > (oi->inplace ? 1 : 0);
  case L_BROADCAST:
  case L_MIXED0:
  case L_PROMOTE: return p->ss == SS_POINTWISE && oi->ninputs >= 2;
  case L_ZERODIM: return p->ss == SS_POINTWISE && !oi->factory;
  case L_ZEROSIZE: return !oi->factory;
  case L_NAN: return !oi->factory && (kd_dtype_is_floating(dt) || kd_dtype_is_complex(dt));
  case L_OUT_STRIDED: return oi->nout > 0 && p->out_ndim >= 2;
  default: return false;
  }
}

/* Does the return i alias a written argument (`Tensor(a!)`)? */
static bool return_is_written_alias(const kd_schema *s, size_t i) {
  const kd_alias_info *al = kd_argument_alias(kd_schema_return(s, i));
  return al && kd_alias_is_write(al);
}

static void run_case(const opinfo *oi, const plan *p, kd_dtype dt, layout l) {
  side c = {0}, d = {0};
  const char *why = "?";
  kd_status bst = build(oi, p, dt, l, &c, &d, &why);
  if (bst) {
    if (bst != KD_EUNSUPPORTED)
      FAIL(oi->name, dt, l, "making the arguments: %s: %s", kd_status_name(bst), kd_last_error());
    else g_skipped++;
    side_free(&c);
    side_free(&d);
    return;
  }
  g_run++;
  outcome oc, od;
  call(oi->op, &c, &oc);
  uint64_t fb0 = kd_op_fallback_count(oi->op, g_key);
  call(oi->op, &d, &od);
  uint64_t fb1 = kd_op_fallback_count(oi->op, g_key);
  bool supported = dtype_supported(dt);
  if (fb1 != fb0) {
    if (supported && od.st == KD_OK)
      FAIL(oi->name, dt, l, "the CPU fallback ran, not the backend's kernel");
    else g_fell_back_unsupported++;
  }
  if (oc.st != od.st) {
    /* A dtype the device cannot run may be refused, with a message that
     * says so. So may a dtype an operator's device kernel lacks (CLBlast has
     * no integer gemm), except float32, which every operator must run; the
     * refused dtypes are listed per operator. Another backend (fakegen) may
     * refuse any dtype it lacks ("not implemented for"). */
    bool refusal = od.st != KD_OK && (strstr(od.msg, "not supported") ||
                                      (!g_opencl && strstr(od.msg, "not implemented for")));
    if (refusal && (!supported || !g_opencl || dt != KD_FLOAT32)) {
      g_refused++;
      if (supported) g_op_refused |= (uint32_t)1 << dt;
    }
    else
      FAIL(oi->name, dt, l, "the cpu gives %s%s%s, the device %s%s%s", kd_status_name(oc.st),
           oc.st ? ": " : "", oc.msg, kd_status_name(od.st), od.st ? ": " : "", od.msg);
    goto done;
  }
  if (oc.st) {
    g_err_agree++;
    goto done;
  }
  const kd_schema *s = kd_op_schema(oi->op);
  size_t nr = kd_schema_num_returns(s);
  if (c.st.size != nr || d.st.size != nr) {
    FAIL(oi->name, dt, l, "%zu results on the cpu, %zu on the device, %zu in the schema",
         c.st.size, d.st.size, nr);
    goto done;
  }
  for (size_t i = 0; i < nr; i++) {
    const kd_value *vc = &c.st.items[i], *vd = &d.st.items[i];
    char what[32];
    snprintf(what, sizeof what, "result %zu", i);
    if (vc->tag != vd->tag) {
      FAIL(oi->name, dt, l, "%s: a %s on the cpu, a %s on the device", what,
           kd_value_tag_name(vc->tag), kd_value_tag_name(vd->tag));
      continue;
    }
    if (vc->tag == KD_VALUE_TENSOR) {
      if (!compare_tensor(oi, dt, l, what, vc->u.t, vd->u.t)) continue;
      if (return_is_written_alias(s, i)) {
        bool found = false;
        for (int w = 0; w < d.nwritten; w++) found |= d.written[w] == vd->u.t;
        if (!found)
          FAIL(oi->name, dt, l, "%s: not the caller's tensor though the schema says it aliases it",
               what);
      }
    } else if (!kd_value_equal(vc, vd)) {
      char a[128], b[128];
      kd_value_format(vc, a, sizeof a);
      kd_value_format(vd, b, sizeof b);
      FAIL(oi->name, dt, l, "%s: %s on the cpu, %s on the device", what, a, b);
    }
  }
  for (int w = 0; w < c.nwritten; w++) {
    char what[48];
    snprintf(what, sizeof what, "written argument %d", w);
    compare_tensor(oi, dt, l, what, c.written[w], d.written[w]);
  }
done:
  side_free(&c);
  side_free(&d);
}

/* ---- The operator list ----------------------------------------------------- */

static opinfo g_ops[MAXOPS];
static int g_nops;

static int is_backend_kernel(const kd_kernel_info *k, void *user) {
  (void)user;
  return k->key == g_key && k->active && !k->staged && !k->rejected;
}

static int collect(kd_op *op, void *user) {
  (void)user;
  if (g_nops < MAXOPS && kd_op_kernels_foreach(op, is_backend_kernel, NULL))
    g_ops[g_nops++].op = op;
  return 0;
}

static bool selected(const char *name) {
  const char *f = getenv("KD_OPENCL_DIFF_OPS");
  if (!f || !*f) return true;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", f);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
    if (strstr(name, t)) return true;
  return false;
}

/* Every "generated" entry of ENTRIES must have a backend kernel. */
static void check_entries(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    printf("FAIL entries: cannot open %s\n", path);
    g_failures++;
    return;
  }
  char line[1024];
  int listed = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || !strstr(line, " generated:") || strstr(line, "not generated")) continue;
    char written[256], strategy[64];
    if (sscanf(line, "%255s %63s", written, strategy) != 2) continue;
    /* aten::WRITTEN, or NS::WRITTEN for a new operator of the backend's namespace */
    char full[300];
    snprintf(full, sizeof full, "aten::%s", written);
    bool found = false;
    for (int i = 0; i < g_nops && !found; i++) {
      const char *n = kd_op_name(g_ops[i].op), *sep = strstr(n, "::");
      found = strstr(line, "(new operator)") ? sep && !strcmp(sep + 2, written) : !strcmp(n, full);
    }
    if (!found) {
      printf("FAIL entries: %s (%s) is listed as generated but has no active %s kernel\n", full,
             strategy, kd_dispatch_key_name(g_key));
      g_failures++;
    }
    listed++;
  }
  fclose(f);
  printf("entries: %d generated entries of %s checked against the registry\n", listed, path);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN [ENTRIES [DEVICE]]\n", argv[0]);
    return 2;
  }
  const char *devname = argc > 3 ? argv[3] : "opencl:0";
  g_opencl = !strncmp(devname, "opencl", 6);
  if (g_opencl) {
    int skip = kdcl_test_skip_without_platform(&g_fp16, &g_fp64);
    if (skip) return skip;
  }
  kd_plugin *plugin = NULL;
  kd_status st = kd_ops_open(); /* libkdops' definitions and CPU kernels */
  if (st) {
    printf("FAIL kd_ops_open: %s\n", kd_last_error());
    return 1;
  }
  st = kd_backend_load(argv[1], &plugin);
  if (st) {
    printf("FAIL loading %s: %s: %s\n", argv[1], kd_status_name(st), kd_last_error());
    return 1;
  }
  st = kd_device_parse(devname, &g_dev);
  if (st) {
    printf("FAIL: no device %s after loading: %s\n", devname, kd_last_error());
    return 1;
  }
  g_key = kd_backend_key(g_dev.type);
  kd_ops_foreach(collect, NULL);
  if (g_nops == 0) {
    printf("FAIL: the plugin registers no %s kernel\n", kd_dispatch_key_name(g_key));
    return 1;
  }
  if (argc > 2 && strcmp(argv[2], "-")) check_entries(argv[2]);

  long ops_run = 0, ops_cant = 0;
  for (int i = 0; i < g_nops; i++) {
    opinfo *oi = &g_ops[i];
    classify(oi);
    if (!selected(oi->name)) continue;
    kd_kernel_selection sel;
    if (!oi->cant && !oi->factory &&
        kd_op_select_kernel(oi->op, KD_KEY_CPU, KD_LAYOUT_STRIDED, KD_FLOAT32, &sel))
      oi->cant = "no CPU kernel to compare with";
    if (oi->cant) {
      printf("op %-36s skipped: %s\n", oi->name, oi->cant);
      ops_cant++;
      continue;
    }
    long run0 = g_run, skip0 = g_skipped, err0 = g_err_agree;
    g_op_refused = 0;
    int f0 = g_failures;
    for (int dt = 0; dt < KD_DTYPE_COUNT; dt++) {
      bool cpu_ok = false;
      plan p = plan_for(oi, (kd_dtype)dt, &cpu_ok);
      for (int l = 0; l < L_COUNT; l++) {
        if (!layout_applies(oi, &p, (kd_dtype)dt, (layout)l)) continue;
        run_case(oi, &p, (kd_dtype)dt, (layout)l);
      }
    }
    ops_run++;
    char refused[256] = "";
    for (int dt = 0; dt < KD_DTYPE_COUNT; dt++)
      if (g_op_refused & ((uint32_t)1 << dt)) {
        strncat(refused, refused[0] ? " " : ", refused: ", sizeof refused - strlen(refused) - 1);
        strncat(refused, kd_dtype_name((kd_dtype)dt), sizeof refused - strlen(refused) - 1);
      }
    printf("op %-36s %ld cases (%ld errors agreed), %ld skipped%s%s\n", oi->name, g_run - run0,
           g_err_agree - err0, g_skipped - skip0, refused, g_failures > f0 ? ", FAILED" : "");
    fflush(stdout);
  }
  printf("opencl diff: %ld operators x %d dtypes x up to %d layouts: %ld cases run (%ld where both "
         "failed alike), %ld skipped, %ld operators skipped; unsupported dtypes: %ld refused, %ld "
         "through the CPU fallback; %d failures\n",
         ops_run, (int)KD_DTYPE_COUNT, (int)L_COUNT, g_run, g_err_agree, g_skipped, ops_cant,
         g_refused, g_fell_back_unsupported, g_failures);
  st = kd_backend_unload(plugin);
  if (st) {
    printf("FAIL unloading: %s: %s\n", kd_status_name(st), kd_last_error());
    g_failures++;
  }
  return g_failures ? 1 : 0;
}
