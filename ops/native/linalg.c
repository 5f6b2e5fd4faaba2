/*
 * linalg.c: mm, bmm, addmm, dot, matmul (linalg.h).
 *
 * Everything reduces to gemm3: C[b] = alpha * A[b] @ B[b] (+ beta * C[b])
 * over strided 3-d views. float32/float64/complex64/complex128 call CBLAS
 * once per batch, passing transposes and leading dimensions so that
 * row-major and column-major ("transposed contiguous") matrices need no
 * copy; other layouts are copied to contiguous first. The other dtypes use
 * a loop (integers in wrapping uint64 arithmetic, float16/bfloat16 in
 * float32).
 *
 * Ownership: `kd_tensor **out` returns a new reference owned by the caller;
 * `kd_tensor *out` and addmm_'s self are the caller's tensors, written in
 * place; all other tensors are borrowed. Temporary views and copies are
 * released before returning.
 */
#include <complex.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KD_HAVE_CBLAS
#include <cblas.h>
#endif

#include "native/factories.h"
#include "native/linalg.h"
#include "kd/memory.h"
#include "kd/ops/copy.h"
#include "kd/ops/dot.h"
#include "kdk/native.h" /* the kit's (exported) declarations of these kernels */

/* ---- Checks ------------------------------------------------------------------------ */

/* The device all of `ts` (n entries, none NULL) are on, cpu or meta. */
static kd_status common_device(const char *op, kd_tensor *const *ts, int n, kd_device *out) {
  for (int i = 0; i < n; i++)
    if (!ts[i]) return kd_set_error(KD_EINVAL, "%s: NULL tensor argument", op);
  kd_device d = kd_tensor_device(ts[0]);
  for (int i = 1; i < n; i++) {
    kd_device e = kd_tensor_device(ts[i]);
    if (!kd_device_equal(d, e)) {
      char a[64], b[64];
      kd_device_format(d, a, sizeof a);
      kd_device_format(e, b, sizeof b);
      return kd_set_error(KD_EINVAL,
                          "%s: Expected all tensors to be on the same device, but found at least "
                          "two devices, %s and %s!",
                          op, a, b);
    }
  }
  if (d.type != KD_DEVICE_CPU && d.type != KD_DEVICE_META)
    return kd_set_error(KD_EUNSUPPORTED, "%s: tensors on device '%s' are not supported", op,
                        kd_device_type_name(d.type));
  *out = d;
  return KD_OK;
}

/* The inputs are on `have`, and this kernel is for `want` tensors. An out
 * tensor (NULL for none) on another device than the inputs is refused first,
 * with PyTorch's message: the dispatcher picks the kernel from every tensor
 * argument, out included, so an out on meta for cpu inputs reaches the Meta
 * kernel, which must not blame the inputs. Any other mismatch is a direct
 * call of the wrong backend's kernel. */
static kd_status want_device(const char *op, kd_device have, kd_device_type want,
                             const kd_tensor *out) {
  if (out && !kd_device_equal(kd_tensor_device(out), have)) {
    char a[64], b[64];
    kd_device_format(have, a, sizeof a);
    kd_device_format(kd_tensor_device(out), b, sizeof b);
    return kd_set_error(KD_EINVAL, "%s: Expected out tensor to have device %s, but got %s instead",
                        op, a, b);
  }
  if (have.type != want)
    return kd_set_error(KD_EINVAL, "%s: this kernel expects %s tensors, got %s tensors", op,
                        kd_device_type_name(want), kd_device_type_name(have.type));
  return KD_OK;
}

static kd_status same_dtype(const char *op, const kd_tensor *a, const kd_tensor *b) {
  kd_dtype x = kd_tensor_dtype(a), y = kd_tensor_dtype(b);
  if (x != y)
    return kd_set_error(KD_ETYPE, "%s: expected scalar type %s but found %s", op, kd_dtype_name(x),
                        kd_dtype_name(y));
  return KD_OK;
}

/* Dtypes the cpu kernels compute: every one but bool. */
static kd_status cpu_dtype(const char *op, const char *torch_kernel, kd_device dev, kd_dtype dt) {
  if (dev.type == KD_DEVICE_CPU && dt == KD_BOOL)
    return kd_set_error(KD_ENOKERNEL, "%s: \"%s\" not implemented for 'Bool'", op, torch_kernel);
  return KD_OK;
}

/* An out tensor: on `dev`, of dtype `dt`, resized to `sizes`. */
static kd_status check_out(const char *op, kd_tensor *out, kd_device dev, kd_dtype dt, int ndim,
                           const int64_t *sizes) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  if (kd_tensor_dtype(out) != dt)
    return kd_set_error(KD_ETYPE, "%s: Expected out tensor to have dtype %s, but got %s instead",
                        op, kd_dtype_name(dt), kd_dtype_name(kd_tensor_dtype(out)));
  kd_device od = kd_tensor_device(out);
  if (!kd_device_equal(od, dev)) {
    char a[64], b[64];
    kd_device_format(dev, a, sizeof a);
    kd_device_format(od, b, sizeof b);
    return kd_set_error(KD_EINVAL, "%s: Expected out tensor to have device %s, but got %s instead",
                        op, a, b);
  }
  return kdk__resize_output(op, out, ndim, sizes);
}

/* ---- gemm3 --------------------------------------------------------------------------- */

typedef struct mat3 {
  void *data;
  int64_t sb, s0, s1; /* strides of batch, row, column (elements) */
} mat3;

static mat3 mat3_of(const kd_tensor *t) {
  mat3 m;
  m.data = kd_tensor_data(t);
  m.sb = kd_tensor_stride(t, 0);
  m.s0 = kd_tensor_stride(t, 1);
  m.s1 = kd_tensor_stride(t, 2);
  return m;
}

static bool scalar_is_zero(const kd_scalar *s) {
  if (!s) return true;
  if (s->kind == KD_SCALAR_COMPLEX) return s->v.c.re == 0 && s->v.c.im == 0;
  return kd_scalar_to_double(s) == 0;
}

static double scalar_im(const kd_scalar *s) { return s->kind == KD_SCALAR_COMPLEX ? s->v.c.im : 0; }

static inline float ld_half(uint16_t x) { return kd_half_to_float(x); }
static inline uint16_t st_half(float x) { return kd_float_to_half(x); }
static inline float ld_bf16(uint16_t x) { return kd_bfloat16_to_float(x); }
static inline uint16_t st_bf16(float x) { return kd_float_to_bfloat16(x); }
#define KD_LD_ID_(x) (x)
#define KD_LD_U64_(x) ((uint64_t)(x))

/* The loop of every dtype: i-k-j order with a row of accumulators. */
#define KD_GEMM_LOOP_(T, ACC, LD, ST, ALPHA, BETA)                                    \
  do {                                                                                \
    const T *a_ = A.data, *b_ = Bm.data;                                              \
    T *c_ = C.data;                                                                   \
    ACC *row_ = buf, al_ = (ALPHA), be_ = (BETA);                                     \
    for (int64_t bi = 0; bi < nb; bi++)                                               \
      for (int64_t i = 0; i < n; i++) {                                               \
        for (int64_t j = 0; j < p; j++) row_[j] = 0;                                  \
        for (int64_t k = 0; k < m; k++) {                                             \
          ACC av_ = LD(a_[bi * A.sb + i * A.s0 + k * A.s1]);                          \
          const T *brow_ = b_ + bi * Bm.sb + k * Bm.s0;                               \
          for (int64_t j = 0; j < p; j++) row_[j] += av_ * LD(brow_[j * Bm.s1]);      \
        }                                                                             \
        T *crow_ = c_ + bi * C.sb + i * C.s0;                                         \
        for (int64_t j = 0; j < p; j++) {                                             \
          ACC r_ = al_ * row_[j];                                                     \
          if (use_beta) r_ += be_ * LD(crow_[j * C.s1]);                              \
          crow_[j * C.s1] = ST(r_);                                                   \
        }                                                                             \
      }                                                                               \
  } while (0)

static kd_status gemm_loop(kd_dtype dt, int64_t nb, int64_t n, int64_t m, int64_t p, mat3 A,
                           mat3 Bm, mat3 C, const kd_scalar *alpha, const kd_scalar *beta,
                           bool use_beta) {
  void *buf = kd_host_malloc((size_t)p * 16 + 16);
  if (!buf) return kd_set_error(KD_ENOMEM, "matrix product: out of memory");
  uint64_t ia = (uint64_t)kd_scalar_to_int64(alpha), ib = (uint64_t)kd_scalar_to_int64(beta);
  float fa = (float)kd_scalar_to_double(alpha), fb = (float)kd_scalar_to_double(beta);
  double da = kd_scalar_to_double(alpha), db = kd_scalar_to_double(beta);
  float complex ca = fa + (float)scalar_im(alpha) * I, cb = fb + (float)scalar_im(beta) * I;
  double complex za = da + scalar_im(alpha) * I, zb = db + scalar_im(beta) * I;
  switch (dt) {
  case KD_UINT8: KD_GEMM_LOOP_(uint8_t, uint64_t, KD_LD_U64_, (uint8_t), ia, ib); break;
  case KD_INT8: KD_GEMM_LOOP_(int8_t, uint64_t, KD_LD_U64_, (int8_t), ia, ib); break;
  case KD_INT16: KD_GEMM_LOOP_(int16_t, uint64_t, KD_LD_U64_, (int16_t), ia, ib); break;
  case KD_INT32: KD_GEMM_LOOP_(int32_t, uint64_t, KD_LD_U64_, (int32_t), ia, ib); break;
  case KD_INT64: KD_GEMM_LOOP_(int64_t, uint64_t, KD_LD_U64_, (int64_t), ia, ib); break;
  case KD_FLOAT16: KD_GEMM_LOOP_(uint16_t, float, ld_half, st_half, fa, fb); break;
  case KD_BFLOAT16: KD_GEMM_LOOP_(uint16_t, float, ld_bf16, st_bf16, fa, fb); break;
  case KD_FLOAT32: KD_GEMM_LOOP_(float, float, KD_LD_ID_, KD_LD_ID_, fa, fb); break;
  case KD_FLOAT64: KD_GEMM_LOOP_(double, double, KD_LD_ID_, KD_LD_ID_, da, db); break;
  case KD_COMPLEX64:
    KD_GEMM_LOOP_(float complex, float complex, KD_LD_ID_, KD_LD_ID_, ca, cb);
    break;
  case KD_COMPLEX128:
    KD_GEMM_LOOP_(double complex, double complex, KD_LD_ID_, KD_LD_ID_, za, zb);
    break;
  default:
    kd_host_free(buf);
    return kd_set_error(KD_ENOKERNEL, "matrix product: not implemented for '%s'",
                        kd_dtype_name(dt));
  }
  kd_host_free(buf);
  return KD_OK;
}

#ifdef KD_HAVE_CBLAS
/* Leading dimension of a rows x cols matrix with strides (s0, s1) stored
 * row-major (colmajor false) or column-major; false when it is neither. */
static bool blas_ld(int64_t rows, int64_t cols, int64_t s0, int64_t s1, bool colmajor, int *ld) {
  int64_t l;
  if (!colmajor) {
    if (cols > 1 && s1 != 1) return false;
    l = rows > 1 ? s0 : (cols > 1 ? cols : 1);
    if (l < (cols > 1 ? cols : 1)) return false;
  } else {
    if (rows > 1 && s0 != 1) return false;
    l = cols > 1 ? s1 : (rows > 1 ? rows : 1);
    if (l < (rows > 1 ? rows : 1)) return false;
  }
  if (l > INT_MAX) return false;
  *ld = (int)l;
  return true;
}

/* How operand X (rows x cols) is passed for `colmajor` order: NoTrans when
 * stored in that order, Trans when stored in the other. */
static bool blas_operand(int64_t rows, int64_t cols, mat3 X, bool colmajor,
                         enum CBLAS_TRANSPOSE *tr, int *ld) {
  if (blas_ld(rows, cols, X.s0, X.s1, colmajor, ld)) {
    *tr = CblasNoTrans;
    return true;
  }
  if (blas_ld(rows, cols, X.s0, X.s1, !colmajor, ld)) {
    *tr = CblasTrans;
    return true;
  }
  return false;
}

/* A contiguous copy of t (a new reference) and its mat3. */
static kd_status contiguous_copy(kd_tensor *t, kd_tensor **copy, mat3 *mv) {
  kd_status st = kd_tensor_to_dtype(t, kd_tensor_dtype(t), copy);
  if (st) return st;
  *mv = mat3_of(*copy);
  return KD_OK;
}
#endif

/* c = alpha * a @ b + beta * c over 3-d cpu tensors a (B, n, m), b (B, m, p),
 * c (B, n, p) of one dtype; beta NULL or zero: c is not read. c's elements
 * must not overlap a's or b's. */
static kd_status gemm3(kd_tensor *a, kd_tensor *b, kd_tensor *c, const kd_scalar *alpha,
                       const kd_scalar *beta) {
  kd_scalar one = kd_scalar_int(1), zero = kd_scalar_int(0);
  if (!alpha) alpha = &one;
  bool use_beta = !scalar_is_zero(beta);
  if (!use_beta) beta = &zero;
  int64_t nb = kd_tensor_size(c, 0), n = kd_tensor_size(c, 1), p = kd_tensor_size(c, 2);
  int64_t m = kd_tensor_size(a, 2);
  if (nb == 0 || n == 0 || p == 0) return KD_OK;
  kd_dtype dt = kd_tensor_dtype(c);
  mat3 A = mat3_of(a), Bm = mat3_of(b), C = mat3_of(c);
#ifdef KD_HAVE_CBLAS
  bool blas = (dt == KD_FLOAT32 || dt == KD_FLOAT64 || dt == KD_COMPLEX64 || dt == KD_COMPLEX128) &&
              m > 0 && n <= INT_MAX && m <= INT_MAX && p <= INT_MAX;
  if (blas) {
    kd_status st = KD_OK;
    kd_tensor *ac = NULL, *bc = NULL, *cc = NULL;
    int lda = 0, ldb = 0, ldc = 0;
    enum CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
    bool colmajor = false;
    /* C decides the order: row-major, column-major, or a contiguous proxy. */
    if (blas_ld(n, p, C.s0, C.s1, false, &ldc)) {
      colmajor = false;
    } else if (blas_ld(n, p, C.s0, C.s1, true, &ldc)) {
      colmajor = true;
    } else {
      if (use_beta) st = contiguous_copy(c, &cc, &C);
      else if (!(st = kd_tensor_empty(3, kd_tensor_sizes(c), dt, kd_device_cpu(), &cc)))
        C = mat3_of(cc);
      if (st) return st;
      blas_ld(n, p, C.s0, C.s1, false, &ldc);
    }
    if (!blas_operand(n, m, A, colmajor, &ta, &lda)) {
      if ((st = contiguous_copy(a, &ac, &A))) goto done;
      blas_operand(n, m, A, colmajor, &ta, &lda);
    }
    if (!blas_operand(m, p, Bm, colmajor, &tb, &ldb)) {
      if ((st = contiguous_copy(b, &bc, &Bm))) goto done;
      blas_operand(m, p, Bm, colmajor, &tb, &ldb);
    }
    if (!use_beta) { /* BLAS with beta 0 should not read C, but make sure NaNs cannot leak */
      kd_scalar z = kd_scalar_int(0);
      if ((st = kdk__fill("matrix product", cc ? cc : c, &z))) goto done;
    }
    {
      enum CBLAS_ORDER order = colmajor ? CblasColMajor : CblasRowMajor;
      size_t isz = kd_dtype_size(dt);
      for (int64_t bi = 0; bi < nb; bi++) {
        const char *pa = (const char *)A.data + (size_t)(bi * A.sb) * isz;
        const char *pb = (const char *)Bm.data + (size_t)(bi * Bm.sb) * isz;
        char *pc = (char *)C.data + (size_t)(bi * C.sb) * isz;
        switch (dt) {
        case KD_FLOAT32:
          cblas_sgemm(order, ta, tb, (int)n, (int)p, (int)m, (float)kd_scalar_to_double(alpha),
                      (const float *)pa, lda, (const float *)pb, ldb,
                      (float)kd_scalar_to_double(beta), (float *)pc, ldc);
          break;
        case KD_FLOAT64:
          cblas_dgemm(order, ta, tb, (int)n, (int)p, (int)m, kd_scalar_to_double(alpha),
                      (const double *)pa, lda, (const double *)pb, ldb, kd_scalar_to_double(beta),
                      (double *)pc, ldc);
          break;
        case KD_COMPLEX64: {
          float al[2] = {(float)kd_scalar_to_double(alpha), (float)scalar_im(alpha)};
          float be[2] = {(float)kd_scalar_to_double(beta), (float)scalar_im(beta)};
          cblas_cgemm(order, ta, tb, (int)n, (int)p, (int)m, al, (const float *)pa, lda,
                      (const float *)pb, ldb, be, (float *)pc, ldc);
          break;
        }
        default: {
          double al[2] = {kd_scalar_to_double(alpha), scalar_im(alpha)};
          double be[2] = {kd_scalar_to_double(beta), scalar_im(beta)};
          cblas_zgemm(order, ta, tb, (int)n, (int)p, (int)m, al, (const double *)pa, lda,
                      (const double *)pb, ldb, be, (double *)pc, ldc);
          break;
        }
        }
      }
    }
    if (cc) st = kd_tensor_copy_(c, cc);
  done:
    kd_tensor_release(ac);
    kd_tensor_release(bc);
    kd_tensor_release(cc);
    return st;
  }
#endif
  return gemm_loop(dt, nb, n, m, p, A, Bm, C, alpha, beta, use_beta);
}

/* A view of t with these sizes and strides at t's offset (a new reference). */
static kd_status view_of(kd_tensor *t, int ndim, const int64_t *sizes, const int64_t *strides,
                         kd_tensor **out) {
  return kd_tensor_as_strided(t, ndim, sizes, strides, kd_tensor_storage_offset(t), out);
}

/* A 2-d tensor as a 3-d view with one batch. */
static kd_status as_batch1(kd_tensor *t, kd_tensor **out) {
  int64_t sizes[3] = {1, kd_tensor_size(t, 0), kd_tensor_size(t, 1)};
  int64_t strides[3] = {0, kd_tensor_stride(t, 0), kd_tensor_stride(t, 1)};
  return view_of(t, 3, sizes, strides, out);
}

/* True when c's elements may share memory with a's or b's. */
static bool overlaps(const kd_tensor *c, const kd_tensor *a, const kd_tensor *b) {
  return (a && kd_tensor_shares_storage(c, a)) || (b && kd_tensor_shares_storage(c, b));
}

/* gemm3 into `c` (a 3-d view of the result), through a fresh tensor when c
 * overlaps an input. a, b, c are 3-d views (borrowed). */
static kd_status gemm3_safe(kd_tensor *a, kd_tensor *b, kd_tensor *c, const kd_scalar *alpha,
                            const kd_scalar *beta) {
  if (!overlaps(c, a, b)) return gemm3(a, b, c, alpha, beta);
  kd_tensor *tmp;
  kd_status st = scalar_is_zero(beta)
                     ? kd_tensor_empty(3, kd_tensor_sizes(c), kd_tensor_dtype(c), kd_device_cpu(),
                                       &tmp)
                     : kd_tensor_to_dtype(c, kd_tensor_dtype(c), &tmp);
  if (st) return st;
  st = gemm3(a, b, tmp, alpha, beta);
  if (!st) st = kd_tensor_copy_(c, tmp);
  kd_tensor_release(tmp);
  return st;
}

/* 2-d product into 2-d c. */
static kd_status gemm2(kd_tensor *a, kd_tensor *b, kd_tensor *c, const kd_scalar *alpha,
                       const kd_scalar *beta) {
  kd_tensor *a3 = NULL, *b3 = NULL, *c3 = NULL;
  kd_status st = as_batch1(a, &a3);
  if (!st) st = as_batch1(b, &b3);
  if (!st) st = as_batch1(c, &c3);
  if (!st) st = gemm3_safe(a3, b3, c3, alpha, beta);
  kd_tensor_release(a3);
  kd_tensor_release(b3);
  kd_tensor_release(c3);
  return st;
}

/* ---- mm --------------------------------------------------------------------------------- */

static kd_status mm_check(const char *op, kd_tensor *a, kd_tensor *b, const char *aname) {
  if (kd_tensor_ndim(a) != 2)
    return kd_set_error(KD_EINVAL, "%s: %s must be a matrix", op, aname);
  if (kd_tensor_ndim(b) != 2) return kd_set_error(KD_EINVAL, "%s: mat2 must be a matrix", op);
  if (kd_tensor_size(a, 1) != kd_tensor_size(b, 0))
    return kd_set_error(KD_EINVAL, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                        op, (long long)kd_tensor_size(a, 0), (long long)kd_tensor_size(a, 1),
                        (long long)kd_tensor_size(b, 0), (long long)kd_tensor_size(b, 1));
  return same_dtype(op, a, b);
}

/* mm for every variant: `given` is out (NULL: allocate into *ret). */
static kd_status mm_impl(kd_tensor *self, kd_tensor *mat2, kd_tensor *given,
                         kd_device_type want, kd_tensor **ret) {
  const char *op = "mm";
  if (ret) *ret = NULL;
  kd_tensor *ins[2] = {self, mat2};
  kd_device dev;
  kd_status st = common_device(op, ins, 2, &dev);
  if (!st) st = want_device(op, dev, want, given);
  if (!st) st = mm_check(op, self, mat2, "self");
  kd_dtype dt = st ? KD_FLOAT32 : kd_tensor_dtype(self);
  if (!st) st = cpu_dtype(op, "addmm_impl_cpu_", dev, dt);
  if (st) return st;
  int64_t sizes[2] = {kd_tensor_size(self, 0), kd_tensor_size(mat2, 1)};
  kd_tensor *res = given;
  if (given) st = check_out(op, given, dev, dt, 2, sizes);
  else st = kd_tensor_empty(2, sizes, dt, dev, &res);
  if (st) return st;
  if (dev.type == KD_DEVICE_CPU) st = gemm2(self, mat2, res, NULL, NULL);
  if (st) {
    if (!given) kd_tensor_release(res);
    return st;
  }
  if (!given) *ret = res;
  return KD_OK;
}

kd_status kdk_native_mm_cpu(kd_tensor *self, kd_tensor *mat2, kd_tensor **out) {
  return mm_impl(self, mat2, NULL, KD_DEVICE_CPU, out);
}
kd_status kdk_native_mm_meta(kd_tensor *self, kd_tensor *mat2, kd_tensor **out) {
  return mm_impl(self, mat2, NULL, KD_DEVICE_META, out);
}
kd_status kdk_native_mm_out_cpu(kd_tensor *self, kd_tensor *mat2, kd_tensor *out) {
  return mm_impl(self, mat2, out, KD_DEVICE_CPU, NULL);
}
kd_status kdk_native_mm_out_meta(kd_tensor *self, kd_tensor *mat2, kd_tensor *out) {
  return mm_impl(self, mat2, out, KD_DEVICE_META, NULL);
}

/* ---- bmm --------------------------------------------------------------------------------- */

static kd_status bmm_impl(kd_tensor *self, kd_tensor *mat2, kd_tensor *given, kd_device_type want,
                          kd_tensor **ret) {
  const char *op = "bmm";
  if (ret) *ret = NULL;
  kd_tensor *ins[2] = {self, mat2};
  kd_device dev;
  kd_status st = common_device(op, ins, 2, &dev);
  if (!st) st = want_device(op, dev, want, given);
  if (st) return st;
  if (kd_tensor_ndim(self) != 3) return kd_set_error(KD_EINVAL, "%s: batch1 must be a 3D tensor", op);
  if (kd_tensor_ndim(mat2) != 3) return kd_set_error(KD_EINVAL, "%s: batch2 must be a 3D tensor", op);
  int64_t bs = kd_tensor_size(self, 0), n = kd_tensor_size(self, 1), m = kd_tensor_size(self, 2);
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
  if ((st = same_dtype(op, self, mat2))) return st;
  kd_dtype dt = kd_tensor_dtype(self);
  if ((st = cpu_dtype(op, "bmm", dev, dt))) return st;
  int64_t sizes[3] = {bs, n, kd_tensor_size(mat2, 2)};
  kd_tensor *res = given;
  if (given) st = check_out(op, given, dev, dt, 3, sizes);
  else st = kd_tensor_empty(3, sizes, dt, dev, &res);
  if (st) return st;
  if (dev.type == KD_DEVICE_CPU) st = gemm3_safe(self, mat2, res, NULL, NULL);
  if (st) {
    if (!given) kd_tensor_release(res);
    return st;
  }
  if (!given) *ret = res;
  return KD_OK;
}

kd_status kdk_native_bmm_cpu(kd_tensor *self, kd_tensor *mat2, kd_tensor **out) {
  return bmm_impl(self, mat2, NULL, KD_DEVICE_CPU, out);
}
kd_status kdk_native_bmm_meta(kd_tensor *self, kd_tensor *mat2, kd_tensor **out) {
  return bmm_impl(self, mat2, NULL, KD_DEVICE_META, out);
}
kd_status kdk_native_bmm_out_cpu(kd_tensor *self, kd_tensor *mat2, kd_tensor *out) {
  return bmm_impl(self, mat2, out, KD_DEVICE_CPU, NULL);
}
kd_status kdk_native_bmm_out_meta(kd_tensor *self, kd_tensor *mat2, kd_tensor *out) {
  return bmm_impl(self, mat2, out, KD_DEVICE_META, NULL);
}

/* ---- addmm -------------------------------------------------------------------------------- */

/* PyTorch's expand check of self against the product's sizes. */
static kd_status expand_check(const char *op, const kd_tensor *self, const int64_t *target) {
  int nd = kd_tensor_ndim(self);
  char ts[128], ss[256];
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
                          "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                          "sizes: %s",
                          op, (long long)want, (long long)have, 2 - nd + i,
                          kdk__fmt_ints(ts, sizeof ts, target, 2),
                          kdk__fmt_ints(ss, sizeof ss, kd_tensor_sizes(self), nd));
  }
  return KD_OK;
}

typedef enum addmm_mode { ADDMM_FUNCTIONAL, ADDMM_OUT, ADDMM_INPLACE } addmm_mode;

/* PyTorch's assert_no_internal_overlap: no dimension of more than one
 * element with stride 0 (a tensor without elements never overlaps). */
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

/* Scalar::to<opmath_t>() of a gemm parameter (kd_scalar_to_element's rule). */
static kd_status scalar_param_check(const char *op, const char *name, const kd_scalar *v,
                                    kd_dtype dt) {
  unsigned char buf[16];
  if (dt == KD_FLOAT16 || dt == KD_BFLOAT16) dt = KD_FLOAT32;
  kd_status st = kd_scalar_to_element(v, dt, buf);
  if (!st) return KD_OK;
  char msg[512];
  snprintf(msg, sizeof msg, "%s", kd_last_error());
  return kd_set_error(st, "%s: %s: %s", op, name, msg);
}

static kd_status addmm_fail(addmm_mode mode, kd_tensor *res, kd_status st) {
  if (mode == ADDMM_FUNCTIONAL) kd_tensor_release(res);
  return st;
}

static kd_status addmm_impl(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                            const kd_scalar *beta, const kd_scalar *alpha, addmm_mode mode,
                            kd_tensor *given, kd_device_type want, kd_tensor **ret) {
  const char *op = mode == ADDMM_INPLACE ? "addmm_" : "addmm";
  if (ret) *ret = NULL;
  kd_scalar one = kd_scalar_int(1);
  if (!beta) beta = &one;
  if (!alpha) alpha = &one;
  kd_tensor *ins[3] = {self, mat1, mat2};
  kd_device dev;
  kd_status st = common_device(op, ins, 3, &dev);
  if (!st) st = want_device(op, dev, want, given);
  if (st) return st;
  if (kd_tensor_ndim(mat1) != 2)
    return kd_set_error(KD_EINVAL, "%s: mat1 must be a matrix, got %d-D tensor", op,
                        kd_tensor_ndim(mat1));
  if (kd_tensor_ndim(mat2) != 2)
    return kd_set_error(KD_EINVAL, "%s: mat2 must be a matrix, got %d-D tensor", op,
                        kd_tensor_ndim(mat2));
  if ((st = mm_check(op, mat1, mat2, "mat1"))) return st;
  if ((st = same_dtype(op, mat1, self))) return st;
  kd_dtype dt = kd_tensor_dtype(mat1);
  if ((st = cpu_dtype(op, "addmm_impl_cpu_", dev, dt))) return st;
  int64_t sizes[2] = {kd_tensor_size(mat1, 0), kd_tensor_size(mat2, 1)};
  kd_tensor *res = NULL;
  if (mode == ADDMM_INPLACE) {
    if (kd_tensor_ndim(self) != 2 || kd_tensor_size(self, 0) != sizes[0] ||
        kd_tensor_size(self, 1) != sizes[1]) {
      char a[256], b[128];
      return kd_set_error(KD_EINVAL,
                          "%s: Bad in-place call: input tensor size %s and output tensor size %s "
                          "should match",
                          op, kdk__fmt_ints(a, sizeof a, kd_tensor_sizes(self), kd_tensor_ndim(self)),
                          kdk__fmt_ints(b, sizeof b, sizes, 2));
    }
    res = self;
  } else {
    if ((st = expand_check(op, self, sizes))) return st;
    if (mode == ADDMM_OUT) {
      res = given;
      if ((st = check_out(op, given, dev, dt, 2, sizes))) return st;
    } else if ((st = kd_tensor_empty(2, sizes, dt, dev, &res))) {
      return st;
    }
  }
  /* As addmm.out and addmm_ in PyTorch: the written tensor must not have
   * elements that share memory (an expanded self); empty tensors never do. */
  if (mode != ADDMM_FUNCTIONAL && (st = internal_overlap_check(op, res))) return st;
  if (dev.type == KD_DEVICE_CPU && kd_tensor_numel(res) > 0) {
    /* beta and alpha as the kernel reads them: checked-converted to the
     * result's dtype (float32 for float16 / bfloat16, PyTorch's opmath type),
     * so a float beta of -0.5 on uint8 or a complex beta with an imaginary
     * part on int64 is an error, not a silently truncated value */
    if ((st = scalar_param_check(op, "beta", beta, dt)) ||
        (st = scalar_param_check(op, "alpha", alpha, dt)))
      return addmm_fail(mode, res, st);
    bool use_beta = !scalar_is_zero(beta);
    /* res = expand(self) (copy_ broadcasts and allows overlap); not needed
     * when res is self, or when beta == 0 and self is not read. */
    if (use_beta && res != self) st = kd_tensor_copy_(res, self);
    if (!st) st = gemm2(mat1, mat2, res, alpha, use_beta ? beta : NULL);
  }
  if (st) {
    if (mode == ADDMM_FUNCTIONAL) kd_tensor_release(res);
    return st;
  }
  if (mode == ADDMM_FUNCTIONAL) *ret = res;
  return KD_OK;
}

kd_status kdk_native_addmm_cpu(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                               const kd_scalar *beta, const kd_scalar *alpha, kd_tensor **out) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_FUNCTIONAL, NULL, KD_DEVICE_CPU, out);
}
kd_status kdk_native_addmm_meta(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                                const kd_scalar *beta, const kd_scalar *alpha, kd_tensor **out) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_FUNCTIONAL, NULL, KD_DEVICE_META, out);
}
kd_status kdk_native_addmm_out_cpu(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                                   const kd_scalar *beta, const kd_scalar *alpha, kd_tensor *out) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_OUT, out, KD_DEVICE_CPU, NULL);
}
kd_status kdk_native_addmm_out_meta(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                                    const kd_scalar *beta, const kd_scalar *alpha, kd_tensor *out) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_OUT, out, KD_DEVICE_META, NULL);
}
kd_status kdk_native_addmm_inplace_cpu(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                                       const kd_scalar *beta, const kd_scalar *alpha) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_INPLACE, NULL, KD_DEVICE_CPU, NULL);
}
kd_status kdk_native_addmm_inplace_meta(kd_tensor *self, kd_tensor *mat1, kd_tensor *mat2,
                                        const kd_scalar *beta, const kd_scalar *alpha) {
  return addmm_impl(self, mat1, mat2, beta, alpha, ADDMM_INPLACE, NULL, KD_DEVICE_META, NULL);
}

/* ---- dot ------------------------------------------------------------------------------------- */

static kd_status dot_check(const char *op, kd_tensor *a, kd_tensor *b) {
  if (kd_tensor_ndim(a) != 1 || kd_tensor_ndim(b) != 1)
    return kd_set_error(KD_EINVAL, "%s: 1D tensors expected, but got %dD and %dD tensors", op,
                        kd_tensor_ndim(a), kd_tensor_ndim(b));
  if (kd_tensor_dtype(a) != kd_tensor_dtype(b))
    return kd_set_error(KD_ETYPE,
                        "%s: expected both vectors to have same dtype, but found %s and %s", op,
                        kd_dtype_name(kd_tensor_dtype(a)), kd_dtype_name(kd_tensor_dtype(b)));
  int64_t x = kd_tensor_numel(a), y = kd_tensor_numel(b);
  if (x != y)
    return kd_set_error(KD_EINVAL,
                        "%s: inconsistent tensor size, expected tensor [%lld] and src [%lld] to "
                        "have the same number of elements, but got %lld and %lld elements "
                        "respectively",
                        op, (long long)x, (long long)y, (long long)x, (long long)y);
  return KD_OK;
}

/* a . b into the 0-dim cpu tensor r. */
static kd_status dot_compute(kd_tensor *a, kd_tensor *b, kd_tensor *r) {
  int64_t m = kd_tensor_size(a, 0);
  kd_tensor *a3 = NULL, *b3 = NULL, *r3 = NULL;
  int64_t one3[3] = {1, 1, 1}, zero3[3] = {0, 0, 0};
  kd_status st = view_of(a, 3, (int64_t[]){1, 1, m}, (int64_t[]){0, 0, kd_tensor_stride(a, 0)}, &a3);
  if (!st) st = view_of(b, 3, (int64_t[]){1, m, 1}, (int64_t[]){0, kd_tensor_stride(b, 0), 0}, &b3);
  if (!st) st = view_of(r, 3, one3, zero3, &r3);
  if (!st) st = gemm3_safe(a3, b3, r3, NULL, NULL);
  kd_tensor_release(a3);
  kd_tensor_release(b3);
  kd_tensor_release(r3);
  return st;
}

/* dot on cpu or meta tensors (want: KD_DEVICE_TYPE_COUNT for either). */
static kd_status dot_impl(kd_tensor *self, kd_tensor *other, kd_device_type want,
                          kd_tensor **ret) {
  const char *op = "dot";
  *ret = NULL;
  kd_tensor *ins[2] = {self, other};
  kd_device dev;
  kd_status st = common_device(op, ins, 2, &dev);
  if (!st && want != KD_DEVICE_TYPE_COUNT) st = want_device(op, dev, want, NULL);
  if (!st) st = dot_check(op, self, other);
  if (!st) st = cpu_dtype(op, "dot", dev, kd_tensor_dtype(self));
  if (st) return st;
  kd_tensor *r;
  if ((st = kd_tensor_empty(0, NULL, kd_tensor_dtype(self), dev, &r))) return st;
  if (dev.type == KD_DEVICE_CPU && (st = dot_compute(self, other, r))) {
    kd_tensor_release(r);
    return st;
  }
  *ret = r;
  return KD_OK;
}

kd_status kdk_native_dot_cpu(kd_tensor *self, kd_tensor *tensor, kd_tensor **out) {
  return dot_impl(self, tensor, KD_DEVICE_CPU, out);
}
kd_status kdk_native_dot_meta(kd_tensor *self, kd_tensor *tensor, kd_tensor **out) {
  return dot_impl(self, tensor, KD_DEVICE_META, out);
}

/* Composite out variants: the functional result copied into out (checked
 * for dtype and device, resized). */
static kd_status copy_to_out(const char *op, kd_tensor *res, kd_tensor *out) {
  kd_status st = check_out(op, out, kd_tensor_device(res), kd_tensor_dtype(res),
                           kd_tensor_ndim(res), kd_tensor_sizes(res));
  if (!st && kd_tensor_device(res).type == KD_DEVICE_CPU) st = kd_tensor_copy_(out, res);
  return st;
}

kd_status kdk_native_dot_out(kd_tensor *self, kd_tensor *tensor, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "dot: out is NULL");
  kd_tensor *r;
  kd_device sd = self ? kd_tensor_device(self) : kd_device_cpu();
  if (kdk__off_host(&sd)) {
    /* This composite fills a device backend's slot: the dispatched dot
     * (the backend's kernel or its fallback), then resize and copy_. */
    kd_status st = kd_dot(self, tensor, &r);
    if (st) return st;
    st = check_out("dot", out, kd_tensor_device(r), kd_tensor_dtype(r), kd_tensor_ndim(r),
                   kd_tensor_sizes(r));
    if (!st) st = kd_copy_(out, r, false);
    kd_tensor_release(r);
    return st;
  }
  kd_status st = dot_impl(self, tensor, KD_DEVICE_TYPE_COUNT, &r);
  if (st) return st;
  st = copy_to_out("dot", r, out);
  kd_tensor_release(r);
  return st;
}

/* ---- matmul ------------------------------------------------------------------------------------ */

/* t (ndim >= 1) as a 3-d (B, rows, cols) view, its batch dims expanded to
 * `batch` (nb entries, total bt) and its matrix dims as given by
 * (rows, cols, srow, scol). Copies to contiguous when the expanded batch
 * dims do not fold into one stride. */
static kd_status batch_view(kd_tensor *t, int nb, const int64_t *batch, int64_t bt, int64_t rows,
                            int64_t cols, int64_t srow, int64_t scol, kd_tensor **out) {
  int tb = kd_tensor_ndim(t) - 2; /* t's own batch dims (<= 0: none) */
  int64_t es[KD_MAX_DIMS + 2], est[KD_MAX_DIMS + 2];
  for (int i = 0; i < nb; i++) {
    int j = i - (nb - tb); /* t's dim matching batch dim i */
    es[i] = batch[i];
    est[i] = (tb > 0 && j >= 0 && kd_tensor_size(t, j) != 1) ? kd_tensor_stride(t, j) : 0;
  }
  /* fold: every non-1 batch dim's stride is the next one's stride times its size */
  int64_t sb = 0, expect = -1;
  bool folds = true;
  for (int i = nb - 1; i >= 0; i--) {
    if (es[i] == 1) continue;
    if (expect < 0) sb = est[i];
    else if (est[i] != expect) folds = false;
    expect = est[i] * es[i];
  }
  if (folds) {
    int64_t s3[3] = {bt, rows, cols}, st3[3] = {sb, srow, scol};
    return view_of(t, 3, s3, st3, out);
  }
  es[nb] = rows;
  es[nb + 1] = cols;
  est[nb] = srow;
  est[nb + 1] = scol;
  kd_tensor *ev, *copy;
  kd_status st = view_of(t, nb + 2, es, est, &ev);
  if (st) return st;
  st = kd_tensor_to_dtype(ev, kd_tensor_dtype(ev), &copy);
  kd_tensor_release(ev);
  if (st) return st;
  int64_t s3[3] = {bt, rows, cols}, st3[3] = {rows * cols, cols, 1};
  st = view_of(copy, 3, s3, st3, out);
  kd_tensor_release(copy);
  return st;
}

kd_status kdk_native_matmul(kd_tensor *self, kd_tensor *other, kd_tensor **out) {
  const char *op = "matmul";
  *out = NULL;
  kd_tensor *ins[2] = {self, other};
  kd_device dev;
  kd_status st = common_device(op, ins, 2, &dev);
  if (st) return st;
  int d1 = kd_tensor_ndim(self), d2 = kd_tensor_ndim(other);
  if (d1 == 0 || d2 == 0)
    return kd_set_error(KD_EINVAL,
                        "%s: both arguments to matmul need to be at least 1D, but they are %dD "
                        "and %dD",
                        op, d1, d2);
  if (d1 == 1 && d2 == 1) return dot_impl(self, other, KD_DEVICE_TYPE_COUNT, out);
  int64_t n = d1 >= 2 ? kd_tensor_size(self, -2) : 1, m = kd_tensor_size(self, -1);
  int64_t m2 = d2 >= 2 ? kd_tensor_size(other, -2) : kd_tensor_size(other, 0);
  int64_t p = d2 >= 2 ? kd_tensor_size(other, -1) : 1;
  if (m != m2) {
    if (d1 == 2 && d2 == 1)
      return kd_set_error(KD_EINVAL, "%s: size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                          op, (long long)n, (long long)n, (long long)m, (long long)m2);
    return kd_set_error(KD_EINVAL, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                        op, (long long)n, (long long)m, (long long)m2, (long long)p);
  }
  if ((st = same_dtype(op, self, other))) return st;
  kd_dtype dt = kd_tensor_dtype(self);
  if ((st = cpu_dtype(op, "addmm_impl_cpu_", dev, dt))) return st;
  /* broadcast the batch dims */
  int b1 = d1 > 2 ? d1 - 2 : 0, b2 = d2 > 2 ? d2 - 2 : 0, nb = b1 > b2 ? b1 : b2;
  int64_t batch[KD_MAX_DIMS], bt = 1;
  for (int i = 0; i < nb; i++) {
    int i1 = i - (nb - b1), i2 = i - (nb - b2);
    int64_t x = i1 >= 0 ? kd_tensor_size(self, i1) : 1, y = i2 >= 0 ? kd_tensor_size(other, i2) : 1;
    if (x != y && x != 1 && y != 1)
      return kd_set_error(KD_EINVAL,
                          "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                          "non-singleton dimension %d",
                          op, (long long)x, (long long)y, i);
    batch[i] = x == 1 ? y : x;
    bt *= batch[i];
  }
  /* result: batch + [n] (when self is a matrix) + [p] (when other is) */
  int64_t rs[KD_MAX_DIMS];
  int rn = 0;
  for (int i = 0; i < nb; i++) rs[rn++] = batch[i];
  if (d1 >= 2) rs[rn++] = n;
  if (d2 >= 2) rs[rn++] = p;
  kd_tensor *res;
  if ((st = kd_tensor_empty(rn, rs, dt, dev, &res))) return st;
  if (dev.type == KD_DEVICE_CPU && kd_tensor_numel(res) > 0) {
    kd_tensor *a3 = NULL, *b3 = NULL, *c3 = NULL;
    int64_t sa_r = d1 >= 2 ? kd_tensor_stride(self, -2) : 0, sa_c = kd_tensor_stride(self, -1);
    int64_t sb_r = d2 >= 2 ? kd_tensor_stride(other, -2) : kd_tensor_stride(other, 0);
    int64_t sb_c = d2 >= 2 ? kd_tensor_stride(other, -1) : 0;
    st = batch_view(self, nb, batch, bt, n, m, sa_r, sa_c, &a3);
    if (!st) st = batch_view(other, nb, batch, bt, m, p, sb_r, sb_c, &b3);
    if (!st) {
      int64_t s3[3] = {bt, n, p}, st3[3] = {n * p, p, 1};
      st = view_of(res, 3, s3, st3, &c3);
    }
    if (!st) st = gemm3(a3, b3, c3, NULL, NULL);
    kd_tensor_release(a3);
    kd_tensor_release(b3);
    kd_tensor_release(c3);
    if (st) {
      kd_tensor_release(res);
      return st;
    }
  }
  *out = res;
  return KD_OK;
}

kd_status kdk_native_matmul_out(kd_tensor *self, kd_tensor *other, kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "matmul: out is NULL");
  kd_tensor *r;
  kd_status st = kdk_native_matmul(self, other, &r);
  if (st) return st;
  st = copy_to_out("matmul", r, out);
  kd_tensor_release(r);
  return st;
}
