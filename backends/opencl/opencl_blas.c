/*
 * opencl_blas.c: mm, bmm and addmm of the OpenCL backend through CLBlast
 * (Customized, unstructured: every variant is a kernel here).
 *
 * Everything is one gemm: C[b] = alpha * A[b] @ B[b] + beta * C[b], with
 * CLBlast's row-major Sgemm / Dgemm (mm, addmm) or SgemmStridedBatched /
 * DgemmStridedBatched (bmm). An operand that is a row-major matrix (unit
 * column stride) or a column-major one (unit row stride: a transposed
 * contiguous matrix) is passed as it is, with its leading dimension and
 * CLBlast's transpose flag; any other layout is copied to a contiguous
 * tensor first (kd_contiguous, on the device). The result is written into
 * out directly when out is contiguous, else into a contiguous temporary
 * copied into out (kd_copy_). addmm copies self, expanded to the result's
 * sizes, into C when beta != 0; when beta == 0 self is not read and C is
 * zero-filled first (so that NaN in uninitialised memory cannot leak in).
 * K == 0 gives beta * self (zeros for mm and bmm) without CLBlast, which
 * refuses zero dimensions; M, N or the batch being 0 computes nothing.
 *
 * Dtypes: float32, and float64 on a device with fp64, through CLBlast.
 * CLBlast has no integer (or bool, or float16 on a device without fp16)
 * gemm: those run the CPU's kernel inside this one (operands copied to the
 * CPU, which waits for the device; the CPU's checks, messages and results;
 * the result copied back), so every dtype gives what the CPU gives, bool's
 * error included. CLBlast's status codes become kd
 * statuses naming the CLBlast routine and code: KD_ENOMEM for its
 * allocation failures, KD_ETYPE for CLBlastNoDoublePrecision, KD_EDEVICE
 * otherwise.
 *
 * CLBlast compiles its kernels per device, precision and routine the first
 * time they are used (a few seconds on PoCL; later calls use its in-memory
 * cache). Its routines enqueue on the device's queue and do not wait (event
 * NULL). CLBlast 1.5 (Debian's) has a race in that cache when two threads
 * call it at once (CLBlast issue #486, fixed in 1.6.1), so every CLBlast call
 * here holds one process-wide mutex (clblast_lock): gemms from two threads
 * are enqueued one after the other, which the one in-order queue does
 * anyway.
 *
 * Ownership: `kd_tensor **out` returns a new reference owned by the caller
 * (NULL on error); `kd_tensor *out` and addmm_'s self are the caller's,
 * written in place; the other tensors are borrowed. Temporaries are
 * released before returning.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kdcl.h" /* before clblast_c.h: CL_TARGET_OPENCL_VERSION */
#include <clblast_c.h>
#include "opencl_functions.h"

#include <kd/ops_all.h>

/* ---- CLBlast statuses ---------------------------------------------------------------- */

/* The name of a CLBlast status code ("CLBlastUnknownStatus" for one not listed). */
static const char *clblast_name(CLBlastStatusCode c) {
  switch (c) {
#define N(x) \
  case x: return #x;
    N(CLBlastSuccess) N(CLBlastOpenCLCompilerNotAvailable) N(CLBlastTempBufferAllocFailure)
    N(CLBlastOpenCLOutOfResources) N(CLBlastOpenCLOutOfHostMemory)
    N(CLBlastOpenCLBuildProgramFailure) N(CLBlastInvalidValue) N(CLBlastInvalidCommandQueue)
    N(CLBlastInvalidMemObject) N(CLBlastInvalidBinary) N(CLBlastInvalidBuildOptions)
    N(CLBlastInvalidProgram) N(CLBlastInvalidProgramExecutable) N(CLBlastInvalidKernelName)
    N(CLBlastInvalidKernelDefinition) N(CLBlastInvalidKernel) N(CLBlastInvalidArgIndex)
    N(CLBlastInvalidArgValue) N(CLBlastInvalidArgSize) N(CLBlastInvalidKernelArgs)
    N(CLBlastInvalidLocalNumDimensions) N(CLBlastInvalidLocalThreadsTotal)
    N(CLBlastInvalidLocalThreadsDim) N(CLBlastInvalidGlobalOffset) N(CLBlastInvalidEventWaitList)
    N(CLBlastInvalidEvent) N(CLBlastInvalidOperation) N(CLBlastInvalidBufferSize)
    N(CLBlastInvalidGlobalWorkSize) N(CLBlastNotImplemented) N(CLBlastInvalidMatrixA)
    N(CLBlastInvalidMatrixB) N(CLBlastInvalidMatrixC) N(CLBlastInvalidVectorX)
    N(CLBlastInvalidVectorY) N(CLBlastInvalidDimension) N(CLBlastInvalidLeadDimA)
    N(CLBlastInvalidLeadDimB) N(CLBlastInvalidLeadDimC) N(CLBlastInvalidIncrementX)
    N(CLBlastInvalidIncrementY) N(CLBlastInsufficientMemoryA) N(CLBlastInsufficientMemoryB)
    N(CLBlastInsufficientMemoryC) N(CLBlastInsufficientMemoryX) N(CLBlastInsufficientMemoryY)
    N(CLBlastInsufficientMemoryTemp) N(CLBlastInvalidBatchCount) N(CLBlastInvalidOverrideKernel)
    N(CLBlastMissingOverrideParameter) N(CLBlastInvalidLocalMemUsage) N(CLBlastNoHalfPrecision)
    N(CLBlastNoDoublePrecision) N(CLBlastInvalidVectorScalar) N(CLBlastInsufficientMemoryScalar)
    N(CLBlastDatabaseError) N(CLBlastUnknownError) N(CLBlastUnexpectedError)
#undef N
  }
  return "CLBlastUnknownStatus";
}

/* KD_OK for CLBlastSuccess, else the kd status of code c with the message
 * "<op>: <routine> failed on opencl:<i>: <CLBlastName> (<code>)". */
static kd_status clblast_check(CLBlastStatusCode c, const char *routine, const char *op,
                               const kdcl_device *d) {
  if (c == CLBlastSuccess) return KD_OK;
  kd_status st = KD_EDEVICE;
  if (c == CLBlastTempBufferAllocFailure || c == CLBlastOpenCLOutOfResources ||
      c == CLBlastOpenCLOutOfHostMemory)
    st = KD_ENOMEM;
  else if (c == CLBlastNoDoublePrecision || c == CLBlastNoHalfPrecision)
    st = KD_ETYPE;
  return kd_set_error(st, "%s: %s failed on opencl:%d: %s (%d)", op, routine,
                      d ? kdcl_info(d)->index : -1, clblast_name(c), (int)c);
}

/* ---- Checks (the CPU's messages, ops/native/linalg.c) ------------------------------------ */

static kd_status same_device(const char *op, kd_tensor *const *ts, int n) {
  for (int i = 0; i < n; i++)
    if (!ts[i]) return kd_set_error(KD_EINVAL, "%s: NULL tensor argument", op);
  for (int i = 1; i < n; i++) {
    kd_device a = kd_tensor_device(ts[0]), b = kd_tensor_device(ts[i]);
    if (!kd_device_equal(a, b)) {
      char x[64], y[64];
      kd_device_format(a, x, sizeof x);
      kd_device_format(b, y, sizeof y);
      return kd_set_error(KD_EINVAL,
                          "%s: Expected all tensors to be on the same device, but found at least "
                          "two devices, %s and %s!",
                          op, x, y);
    }
  }
  return KD_OK;
}

static kd_status same_dtype(const char *op, const kd_tensor *a, const kd_tensor *b) {
  kd_dtype x = kd_tensor_dtype(a), y = kd_tensor_dtype(b);
  if (x != y)
    return kd_set_error(KD_ETYPE, "%s: expected scalar type %s but found %s", op, kd_dtype_name(x),
                        kd_dtype_name(y));
  return KD_OK;
}

/* float32, or float64 where the device has fp64. */
static kd_status gemm_dtype(const char *op, const kdcl_device *d, kd_dtype dt) {
  if (dt != KD_FLOAT32 && dt != KD_FLOAT64)
    return kd_set_error(KD_ETYPE,
                        "%s: dtype %s is not supported on opencl:%d (CLBlast's gemm takes float32 "
                        "and float64; compute other dtypes on the cpu)",
                        op, kd_dtype_name(dt), kdcl_info(d)->index);
  return kdcl_ctype(d, dt, op) ? KD_OK : kd_last_status();
}

/* out: on dev, of dtype dt, resized to sizes (kd_resize_ when they differ). */
static kd_status check_out(const char *op, kd_tensor *out, kd_device dev, kd_dtype dt, int ndim,
                           const int64_t *sizes) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  if (kd_tensor_dtype(out) != dt)
    return kd_set_error(KD_ETYPE, "%s: Expected out tensor to have dtype %s, but got %s instead",
                        op, kd_dtype_name(dt), kd_dtype_name(kd_tensor_dtype(out)));
  if (!kd_device_equal(kd_tensor_device(out), dev)) {
    char a[64], b[64];
    kd_device_format(dev, a, sizeof a);
    kd_device_format(kd_tensor_device(out), b, sizeof b);
    return kd_set_error(KD_EINVAL, "%s: Expected out tensor to have device %s, but got %s instead",
                        op, a, b);
  }
  if (kd_tensor_ndim(out) == ndim && !memcmp(kd_tensor_sizes(out), sizes, sizeof(int64_t) * (size_t)ndim))
    return KD_OK;
  kd_ints sz = {sizes, ndim};
  return kd_resize_(out, sz, NULL);
}

static kd_status internal_overlap_check(const char *op, const kd_tensor *t) {
  if (kd_tensor_numel(t) == 0) return KD_OK;
  for (int d = 0; d < kd_tensor_ndim(t); d++)
    if (kd_tensor_size(t, d) > 1 && kd_tensor_stride(t, d) == 0)
      return kd_set_error(KD_EINVAL,
                          "%s: unsupported operation: more than one element of the written-to "
                          "tensor refers to a single memory location. Please clone() the tensor "
                          "before performing the operation.",
                          op);
  return KD_OK;
}

/* Held around every CLBlast call (see the top: CLBlast 1.5's cache race).
 * Statically initialised; never destroyed (nothing to release at unload). */
static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- gemm ------------------------------------------------------------------------------ */

/* An operand as CLBlast takes it: buffer, element offset, leading dim, batch
 * stride, transpose; hold: a contiguous copy owned here (or NULL). */
typedef struct opnd {
  cl_mem buf;
  size_t off, ld, bstride;
  CLBlastTranspose tr;
  kd_tensor *hold;
} opnd;

/* Fills o for t (2-d, or 3-d with a batch dim first): as it is when it is
 * row- or column-major, else a contiguous copy. Errors: kd_contiguous's,
 * kdcl_tensor_buffer's. */
static kd_status operand(const char *op, kd_tensor *t, opnd *o) {
  memset(o, 0, sizeof *o);
  int nd = kd_tensor_ndim(t);
  int64_t r = kd_tensor_size(t, nd - 2), c = kd_tensor_size(t, nd - 1);
  int64_t s0 = kd_tensor_stride(t, nd - 2), s1 = kd_tensor_stride(t, nd - 1);
  int64_t rr = r > 1 ? r : 1, cc = c > 1 ? c : 1;
  kd_tensor *use = t;
  /* row-major: unit column stride, ld >= cols (size-1 dims take any stride) */
  int64_t rs1 = c <= 1 ? 1 : s1, rs0 = r <= 1 ? cc : s0;
  /* column-major: unit row stride, ld >= rows */
  int64_t cs0 = r <= 1 ? 1 : s0, cs1 = c <= 1 ? rr : s1;
  if (rs1 == 1 && rs0 >= cc) {
    o->tr = CLBlastTransposeNo;
    o->ld = (size_t)rs0;
  } else if (cs0 == 1 && cs1 >= rr) {
    o->tr = CLBlastTransposeYes;
    o->ld = (size_t)cs1;
  } else {
    kd_status st = kd_contiguous(t, KD_MEMORY_FORMAT_CONTIGUOUS, &o->hold);
    if (st) return st;
    use = o->hold;
    o->tr = CLBlastTransposeNo;
    o->ld = (size_t)cc;
  }
  o->bstride = nd == 3 ? (size_t)kd_tensor_stride(use, 0) : 0;
  size_t bytes = 0;
  kd_status st = kdcl_tensor_buffer(use, &o->buf, &bytes, op);
  if (st) {
    kd_tensor_release(o->hold);
    o->hold = NULL;
    return st;
  }
  o->off = bytes / kd_tensor_itemsize(use);
  return KD_OK;
}

static bool scalar_zero(const kd_scalar *s) { return kd_scalar_to_double(s) == 0.0; }
static bool scalar_one(const kd_scalar *s) { return kd_scalar_to_double(s) == 1.0; }

/* C = alpha * A @ B + beta * C over the batch (batched: a, b, c 3-d), c
 * holding beta's operand (ignored when beta is 0). Writes c (any layout);
 * borrows a, b. Errors: kd statuses of the helpers, CLBlast's. */
static kd_status gemm(const char *op, kdcl_device *d, kd_tensor *a, kd_tensor *b, kd_tensor *c,
                      const kd_scalar *alpha, const kd_scalar *beta, bool batched) {
  int nd = batched ? 3 : 2;
  int64_t bs = batched ? kd_tensor_size(c, 0) : 1;
  int64_t m = kd_tensor_size(c, nd - 2), n = kd_tensor_size(c, nd - 1), k = kd_tensor_size(a, nd - 1);
  if (bs == 0 || m == 0 || n == 0) return KD_OK;
  bool beta0 = scalar_zero(beta);
  kd_status st = KD_OK;
  /* C: c itself when contiguous, else a contiguous copy (of c's values when beta reads them) */
  kd_tensor *cc = c;
  if (!kd_tensor_is_contiguous(c)) {
    st = beta0 ? kd_tensor_empty(nd, kd_tensor_sizes(c), kd_tensor_dtype(c), kd_tensor_device(c), &cc)
               : kd_contiguous(c, KD_MEMORY_FORMAT_CONTIGUOUS, &cc);
    if (st) return st;
  }
  cl_mem cbuf = NULL;
  size_t cbytes = 0;
  st = kdcl_tensor_buffer(cc, &cbuf, &cbytes, op);
  cl_command_queue q = kdcl_queue(d);
  if (!st && beta0) { /* C = 0 first: beta * NaN must not stay NaN */
    size_t isz = kd_tensor_itemsize(cc);
    double zd = 0.0;
    float zf = 0.0f;
    cl_int err = clEnqueueFillBuffer(q, cbuf, isz == 8 ? (const void *)&zd : (const void *)&zf, isz,
                                     cbytes, (size_t)(bs * m * n) * isz, 0, NULL, NULL);
    st = KDCL_CHECK(err, "clEnqueueFillBuffer", op, d);
  }
  if (!st && k == 0 && !beta0 && !scalar_one(beta)) st = kd_mul_Scalar_(cc, beta);
  if (!st && k > 0) {
    opnd A, B;
    st = operand(op, a, &A);
    if (!st && (st = operand(op, b, &B))) kd_tensor_release(A.hold);
    if (!st) {
      size_t coff = cbytes / kd_tensor_itemsize(cc), ldc = (size_t)n, cstride = (size_t)(m * n);
      bool f64 = kd_tensor_dtype(cc) == KD_FLOAT64;
      double al = kd_scalar_to_double(alpha), be = beta0 ? 0.0 : kd_scalar_to_double(beta);
      CLBlastStatusCode r;
      const char *routine;
      pthread_mutex_lock(&clblast_lock);
      if (!batched && f64) {
        routine = "CLBlastDgemm";
        r = CLBlastDgemm(CLBlastLayoutRowMajor, A.tr, B.tr, (size_t)m, (size_t)n, (size_t)k, al,
                         A.buf, A.off, A.ld, B.buf, B.off, B.ld, be, cbuf, coff, ldc, &q, NULL);
      } else if (!batched) {
        routine = "CLBlastSgemm";
        r = CLBlastSgemm(CLBlastLayoutRowMajor, A.tr, B.tr, (size_t)m, (size_t)n, (size_t)k,
                         (float)al, A.buf, A.off, A.ld, B.buf, B.off, B.ld, (float)be, cbuf, coff,
                         ldc, &q, NULL);
      } else if (f64) {
        routine = "CLBlastDgemmStridedBatched";
        r = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, A.tr, B.tr, (size_t)m, (size_t)n,
                                       (size_t)k, al, A.buf, A.off, A.ld, A.bstride, B.buf, B.off,
                                       B.ld, B.bstride, be, cbuf, coff, ldc, cstride, (size_t)bs,
                                       &q, NULL);
      } else {
        routine = "CLBlastSgemmStridedBatched";
        r = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, A.tr, B.tr, (size_t)m, (size_t)n,
                                       (size_t)k, (float)al, A.buf, A.off, A.ld, A.bstride, B.buf,
                                       B.off, B.ld, B.bstride, (float)be, cbuf, coff, ldc, cstride,
                                       (size_t)bs, &q, NULL);
      }
      pthread_mutex_unlock(&clblast_lock);
      st = clblast_check(r, routine, op, d);
      kd_tensor_release(A.hold);
      kd_tensor_release(B.hold);
    }
  }
  if (!st && cc != c) st = kd_copy_(c, cc, false);
  if (cc != c) kd_tensor_release(cc);
  return st;
}

/* ---- Dtypes CLBlast has no gemm for: the CPU's kernel ----------------------------------- */

/* float32, and float64 on a device with fp64: CLBlast's. */
static bool clblast_dtype(const kdcl_device *d, kd_dtype dt) {
  return dt == KD_FLOAT32 || (dt == KD_FLOAT64 && kdcl_info(d)->fp64);
}

typedef enum cpu_op { CPU_MM, CPU_BMM, CPU_ADDMM } cpu_op;

/* Runs op on the CPU for another dtype: the operands copied to the CPU (this
 * waits for the device), the CPU's kernel (its checks, messages and
 * results), the result copied back: into *ret (a new device tensor), into
 * given (out=, resized), or into inplace (addmm_'s self). Borrows the
 * operands; temporaries are released. */
static kd_status on_cpu(cpu_op op, kd_tensor *self, kd_tensor *m1, kd_tensor *m2,
                        const kd_scalar *beta, const kd_scalar *alpha, kd_tensor *given,
                        kd_tensor *inplace, kd_tensor **ret) {
  kd_device dev = kd_tensor_device(m1), cpu = kd_device_cpu();
  kd_tensor *cs = NULL, *c1 = NULL, *c2 = NULL, *r = NULL, *back = NULL;
  kd_status st = kd_tensor_to_device(m1, cpu, &c1);
  if (!st) st = kd_tensor_to_device(m2, cpu, &c2);
  if (!st && self) st = kd_tensor_to_device(self, cpu, &cs);
  if (!st) {
    if (op == CPU_MM) st = kd_mm(c1, c2, &r);
    else if (op == CPU_BMM) st = kd_bmm(c1, c2, &r);
    else if (inplace) st = kd_addmm_(cs, c1, c2, beta, alpha);
    else st = kd_addmm(cs, c1, c2, beta, alpha, &r);
  }
  kd_tensor *res = inplace ? cs : r;
  if (!st && (given || inplace)) {
    kd_tensor *dst = given ? given : inplace;
    if (given) {
      kd_ints sz = {kd_tensor_sizes(res), kd_tensor_ndim(res)};
      if (kd_tensor_ndim(given) != sz.size ||
          memcmp(kd_tensor_sizes(given), sz.data, sizeof(int64_t) * (size_t)sz.size))
        st = kd_resize_(given, sz, NULL);
    }
    if (!st) st = kdcl_write_from_cpu(dst, res, op == CPU_MM ? "mm" : op == CPU_BMM ? "bmm" : "addmm");
  } else if (!st) {
    st = kd_tensor_to_device(res, dev, &back);
    if (!st) {
      *ret = back;
      back = NULL;
    }
  }
  kd_tensor *ts[] = {cs, c1, c2, r, back};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) kd_tensor_release(ts[i]);
  return st;
}

/* ---- mm / bmm ---------------------------------------------------------------------------- */

/* mm (batched false) or bmm for every variant: `given` is out (NULL:
 * allocate into *ret). */
static kd_status mm_impl(bool batched, kd_tensor *self, kd_tensor *mat2, kd_tensor *given,
                         kd_tensor **ret) {
  const char *op = batched ? "bmm" : "mm";
  if (ret) *ret = NULL;
  kd_tensor *ins[2] = {self, mat2};
  kd_status st = same_device(op, ins, 2);
  if (st) return st;
  kdcl_device *d = kdcl_tensor_device(self, op);
  if (!d) return kd_last_status();
  if (!clblast_dtype(d, kd_tensor_dtype(self)) && kd_tensor_dtype(self) == kd_tensor_dtype(mat2))
    return on_cpu(batched ? CPU_BMM : CPU_MM, NULL, self, mat2, NULL, NULL, given, NULL, ret);
  int nd = batched ? 3 : 2;
  if (!batched) {
    if (kd_tensor_ndim(self) != 2) return kd_set_error(KD_EINVAL, "%s: self must be a matrix", op);
    if (kd_tensor_ndim(mat2) != 2) return kd_set_error(KD_EINVAL, "%s: mat2 must be a matrix", op);
    if (kd_tensor_size(self, 1) != kd_tensor_size(mat2, 0))
      return kd_set_error(KD_EINVAL,
                          "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                          (long long)kd_tensor_size(self, 0), (long long)kd_tensor_size(self, 1),
                          (long long)kd_tensor_size(mat2, 0), (long long)kd_tensor_size(mat2, 1));
  } else {
    if (kd_tensor_ndim(self) != 3) return kd_set_error(KD_EINVAL, "%s: batch1 must be a 3D tensor", op);
    if (kd_tensor_ndim(mat2) != 3) return kd_set_error(KD_EINVAL, "%s: batch2 must be a 3D tensor", op);
    int64_t bs = kd_tensor_size(self, 0), m = kd_tensor_size(self, 2);
    if (kd_tensor_size(mat2, 0) != bs)
      return kd_set_error(KD_EINVAL,
                          "%s: batch1 and batch2 must have same number of batches, got %lld and %lld",
                          op, (long long)bs, (long long)kd_tensor_size(mat2, 0));
    if (kd_tensor_size(mat2, 1) != m)
      return kd_set_error(KD_EINVAL,
                          "%s: Expected size for first two dimensions of batch2 tensor to be: [%lld, "
                          "%lld] but got: [%lld, %lld].",
                          op, (long long)bs, (long long)m, (long long)kd_tensor_size(mat2, 0),
                          (long long)kd_tensor_size(mat2, 1));
  }
  if ((st = same_dtype(op, self, mat2))) return st;
  kd_dtype dt = kd_tensor_dtype(self);
  if ((st = gemm_dtype(op, d, dt))) return st;
  int64_t sizes[3];
  if (batched) {
    sizes[0] = kd_tensor_size(self, 0);
    sizes[1] = kd_tensor_size(self, 1);
    sizes[2] = kd_tensor_size(mat2, 2);
  } else {
    sizes[0] = kd_tensor_size(self, 0);
    sizes[1] = kd_tensor_size(mat2, 1);
  }
  kd_tensor *res = given;
  if (given) st = check_out(op, given, kd_tensor_device(self), dt, nd, sizes);
  else st = kd_tensor_empty(nd, sizes, dt, kd_tensor_device(self), &res);
  if (st) return st;
  kd_scalar one = kd_scalar_int(1), zero = kd_scalar_int(0);
  st = gemm(op, d, self, mat2, res, &one, &zero, batched);
  if (st) {
    if (!given) kd_tensor_release(res);
    return st;
  }
  if (!given) *ret = res;
  return KD_OK;
}

kd_status opencl_mm(kd_tensor *self, kd_tensor *mat2, kd_tensor **out) {
  return mm_impl(false, self, mat2, NULL, out);
}
kd_status opencl_mm_out(kd_tensor *self, kd_tensor *mat2, kd_tensor *out) {
  return mm_impl(false, self, mat2, out, NULL);
}
kd_status opencl_bmm(kd_tensor *self, kd_tensor *mat2, kd_tensor **out) {
  return mm_impl(true, self, mat2, NULL, out);
}
kd_status opencl_bmm_out(kd_tensor *self, kd_tensor *mat2, kd_tensor *out) {
  return mm_impl(true, self, mat2, out, NULL);
}

/* ---- addmm ------------------------------------------------------------------------------- */

static kd_status expand_check(const char *op, const kd_tensor *self, const int64_t *target) {
  int nd = kd_tensor_ndim(self);
  if (nd > 2)
    return kd_set_error(KD_EINVAL,
                        "%s: expand: the number of sizes provided (2) must be greater or equal to "
                        "the number of dimensions in the tensor (%d)",
                        op, nd);
  for (int i = 0; i < nd; i++) {
    int64_t have = kd_tensor_size(self, i), want = target[2 - nd + i];
    if (have != 1 && have != want)
      return kd_set_error(KD_EINVAL,
                          "%s: The expanded size of the tensor (%lld) must match the existing size "
                          "(%lld) at non-singleton dimension %d.",
                          op, (long long)want, (long long)have, 2 - nd + i);
  }
  return KD_OK;
}

typedef enum addmm_mode { ADDMM_FUNCTIONAL, ADDMM_OUT, ADDMM_INPLACE } addmm_mode;

static kd_status addmm_impl(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                            const kd_scalar *beta, const kd_scalar *alpha, addmm_mode mode,
                            kd_tensor *given, kd_tensor **ret) {
  const char *op = mode == ADDMM_INPLACE ? "addmm_" : "addmm";
  if (ret) *ret = NULL;
  kd_scalar one = kd_scalar_int(1);
  if (!beta) beta = &one;
  if (!alpha) alpha = &one;
  kd_tensor *ins[3] = {self, mat1, mat2};
  kd_status st = same_device(op, ins, 3);
  if (st) return st;
  kdcl_device *d = kdcl_tensor_device(mat1, op);
  if (!d) return kd_last_status();
  kd_dtype dt0 = kd_tensor_dtype(mat1);
  if (!clblast_dtype(d, dt0) && kd_tensor_dtype(mat2) == dt0 && kd_tensor_dtype(self) == dt0)
    return on_cpu(CPU_ADDMM, self, mat1, mat2, beta, alpha, given,
                  mode == ADDMM_INPLACE ? self : NULL, ret);
  if (kd_tensor_ndim(mat1) != 2)
    return kd_set_error(KD_EINVAL, "%s: mat1 must be a matrix, got %d-D tensor", op,
                        kd_tensor_ndim(mat1));
  if (kd_tensor_ndim(mat2) != 2)
    return kd_set_error(KD_EINVAL, "%s: mat2 must be a matrix, got %d-D tensor", op,
                        kd_tensor_ndim(mat2));
  if (kd_tensor_size(mat1, 1) != kd_tensor_size(mat2, 0))
    return kd_set_error(KD_EINVAL,
                        "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                        (long long)kd_tensor_size(mat1, 0), (long long)kd_tensor_size(mat1, 1),
                        (long long)kd_tensor_size(mat2, 0), (long long)kd_tensor_size(mat2, 1));
  if ((st = same_dtype(op, mat1, mat2)) || (st = same_dtype(op, mat1, self))) return st;
  kd_dtype dt = kd_tensor_dtype(mat1);
  if ((st = gemm_dtype(op, d, dt))) return st;
  int64_t sizes[2] = {kd_tensor_size(mat1, 0), kd_tensor_size(mat2, 1)};
  kd_tensor *res = NULL;
  if (mode == ADDMM_INPLACE) {
    if (kd_tensor_ndim(self) != 2 || kd_tensor_size(self, 0) != sizes[0] ||
        kd_tensor_size(self, 1) != sizes[1])
      return kd_set_error(KD_EINVAL,
                          "%s: Bad in-place call: input tensor size and output tensor size "
                          "[%lld, %lld] should match",
                          op, (long long)sizes[0], (long long)sizes[1]);
    res = self;
  } else {
    if ((st = expand_check(op, self, sizes))) return st;
    if (mode == ADDMM_OUT) {
      res = given;
      if ((st = check_out(op, given, kd_tensor_device(mat1), dt, 2, sizes))) return st;
    } else if ((st = kd_tensor_empty(2, sizes, dt, kd_tensor_device(mat1), &res))) {
      return st;
    }
  }
  if (mode != ADDMM_FUNCTIONAL && (st = internal_overlap_check(op, res))) return st;
  /* res = expand(self) when beta reads it (not needed when res is self) */
  if (kd_tensor_numel(res) > 0 && !scalar_zero(beta) && res != self) {
    kd_tensor *ex = NULL;
    kd_ints sz = {sizes, 2};
    st = kd_expand(self, sz, false, &ex);
    if (!st) st = kd_copy_(res, ex, false);
    kd_tensor_release(ex);
  }
  if (!st) st = gemm(op, d, mat1, mat2, res, alpha, beta, false);
  if (st) {
    if (mode == ADDMM_FUNCTIONAL) kd_tensor_release(res);
    return st;
  }
  if (mode == ADDMM_FUNCTIONAL) *ret = res;
  return KD_OK;
}

kd_status opencl_addmm(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2, const kd_scalar *beta,
                       const kd_scalar *alpha, kd_tensor **out) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_FUNCTIONAL, NULL, out);
}
kd_status opencl_addmm_(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2, const kd_scalar *beta,
                        const kd_scalar *alpha) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_INPLACE, NULL, NULL);
}
kd_status opencl_addmm_out(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2, const kd_scalar *beta,
                           const kd_scalar *alpha, kd_tensor *out) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_OUT, out, NULL);
}
