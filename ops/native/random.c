/*
 * random.c: the process-wide generator (kd_manual_seed) and rand, randn.
 *
 * The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC'11): a counter-based generator whose key is the
 * 64-bit seed and whose counter is a 64-bit block index. Each call reserves
 * the blocks it needs under a lock (seed, first block) and computes them
 * outside it, so concurrent calls never share numbers and a seeded sequence
 * of calls is reproducible.
 *
 * Ownership: as factories.h (kd_tensor **out is the caller's new reference;
 * kd_tensor *out is the caller's tensor, written in place).
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "native/factories.h"
#include "native/views.h"
#include "kdk/native.h" /* the kit's (exported) declarations of these kernels */

#define KD_TWO_PI 6.283185307179586476925286766559

/* PyTorch's default seed. */
#define KD_DEFAULT_SEED UINT64_C(67280421310721)

static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gen_seed = KD_DEFAULT_SEED;
static uint64_t gen_offset; /* next unused block */

void kd_manual_seed(uint64_t seed) {
  pthread_mutex_lock(&gen_lock);
  gen_seed = seed;
  gen_offset = 0;
  pthread_mutex_unlock(&gen_lock);
}

/* Reserves n blocks: returns the seed and the first block index. */
static void gen_reserve(uint64_t nblocks, uint64_t *seed, uint64_t *first) {
  pthread_mutex_lock(&gen_lock);
  *seed = gen_seed;
  *first = gen_offset;
  gen_offset += nblocks;
  pthread_mutex_unlock(&gen_lock);
}

/* One Philox4x32-10 block: four 32-bit words for counter `block` under `key`. */
static void philox(uint64_t key, uint64_t block, uint32_t r[4]) {
  uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)UINT32_C(0xD2511F53) * c0;
    uint64_t p1 = (uint64_t)UINT32_C(0xCD9E8D57) * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += UINT32_C(0x9E3779B9);
    k1 += UINT32_C(0xBB67AE85);
  }
  r[0] = c0;
  r[1] = c1;
  r[2] = c2;
  r[3] = c3;
}

/* A double in [0, 1) from 53 bits of two words. */
static double u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1.0p-53;
}

typedef struct rand_job {
  bool normal;
  kd_dtype real; /* the dtype of one real number written */
  int64_t nreal; /* real numbers to write */
  uint64_t seed, first;
} rand_job;

/* Reals per block: uniform floats of <= 32 bits use one word each, doubles
 * and normals two. */
static int64_t reals_per_block(bool normal, kd_dtype real) {
  if (normal || real == KD_FLOAT64) return 2;
  return 4;
}

static void store_real(kd_dtype real, void *data, int64_t i, double v) {
  switch (real) {
  case KD_FLOAT32:
    ((float *)data)[i] = (float)v;
    break;
  case KD_FLOAT64:
    ((double *)data)[i] = v;
    break;
  case KD_FLOAT16:
    ((uint16_t *)data)[i] = kd_float_to_half((float)v);
    break;
  default: /* KD_BFLOAT16 */
    ((uint16_t *)data)[i] = kd_float_to_bfloat16((float)v);
    break;
  }
}

static kd_status rand_write(kd_tensor *dst, void *ctx) {
  const rand_job *job = ctx;
  void *data = kd_tensor_data(dst);
  int64_t per = reals_per_block(job->normal, job->real);
  /* complex normals: each part has variance 1/2, as PyTorch's normal_ */
  double scale = kd_dtype_is_complex(kd_tensor_dtype(dst)) ? sqrt(0.5) : 1.0;
  for (int64_t b = 0; b * per < job->nreal; b++) {
    uint32_t r[4];
    philox(job->seed, job->first + (uint64_t)b, r);
    double v[4];
    if (job->normal) {
      /* Box-Muller: u1 in (0, 1] so that the log is finite */
      double u1 = 1.0 - u53(r[0], r[1]), u2 = u53(r[2], r[3]);
      double rad = sqrt(-2.0 * log(u1)) * scale;
      v[0] = rad * cos(KD_TWO_PI * u2);
      v[1] = rad * sin(KD_TWO_PI * u2);
    } else if (job->real == KD_FLOAT64) {
      v[0] = u53(r[0], r[1]);
      v[1] = u53(r[2], r[3]);
    } else {
      /* as many bits as the type's significand, so rounding never gives 1 */
      int bits = job->real == KD_FLOAT32 ? 24 : job->real == KD_FLOAT16 ? 11 : 8;
      for (int k = 0; k < 4; k++) v[k] = ldexp((double)(r[k] >> (32 - bits)), -bits);
    }
    for (int64_t k = 0; k < per && b * per + k < job->nreal; k++)
      store_real(job->real, data, b * per + k, v[k]);
  }
  return KD_OK;
}

static kd_status check_generator(const char *op, const kd_value *generator) {
  if (generator && generator->tag != KD_VALUE_NONE)
    return kd_set_error(KD_EUNSUPPORTED,
                        "%s: explicit generators are not supported in this version (pass None "
                        "and seed the default generator with kd_manual_seed)",
                        op);
  return KD_OK;
}

/* Fills t (cpu or meta, any strides) with uniform or normal values. */
static kd_status random_fill(const char *op, bool normal, kd_tensor *t) {
  kd_dtype dt = kd_tensor_dtype(t);
  kd_dtype real = kd_dtype_is_complex(dt) ? kd_dtype_to_real(dt) : dt;
  if (!kd_dtype_is_floating(real)) {
    static const char *const torch_names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long"};
    const char *name = (int)dt >= 0 && (int)dt < 6 ? torch_names[dt] : kd_dtype_name(dt);
    return kd_set_error(KD_ENOKERNEL, "%s: \"%s\" not implemented for '%s' (dtype %s)", op,
                        normal ? "normal_kernel_cpu" : "check_uniform_bounds", name,
                        kd_dtype_name(dt));
  }
  kd_device dev = kd_tensor_device(t);
  if (dev.type == KD_DEVICE_META || kd_tensor_numel(t) == 0) return KD_OK;
  if (dev.type != KD_DEVICE_CPU)
    return kd_set_error(KD_EUNSUPPORTED, "%s: device '%s' is not supported", op,
                        kd_device_type_name(dev.type));
  /* An out whose elements share memory is refused before any number is
   * drawn, so that the failed call leaves the generator where it was. */
  kd_status st = kdk__vw_check_internal_overlap(t);
  if (st) return st;
  rand_job job;
  job.normal = normal;
  job.real = real;
  job.nreal = kd_tensor_numel(t) * (kd_dtype_is_complex(dt) ? 2 : 1);
  int64_t per = reals_per_block(normal, real);
  gen_reserve((uint64_t)((job.nreal + per - 1) / per), &job.seed, &job.first);
  return kdk__write_contiguous(t, rand_write, &job);
}

static kd_status random_new(const char *op, bool normal, kd_ints size, const kd_value *generator,
                            const kd_dtype *dtype, const kd_layout *layout,
                            const kd_device *device, const bool *pin_memory, kd_tensor **out) {
  *out = NULL;
  kd_dtype dt;
  kd_device dev;
  kd_status st = check_generator(op, generator);
  if (!st) st = kdk__check_size_list(op, size);
  if (!st) st = kdk__factory_options(op, dtype, layout, device, pin_memory,
                                    kd_get_default_dtype(), kd_device_cpu(), &dt, &dev);
  if (st) return st;
  kd_tensor *t;
  if ((st = kd_tensor_empty((int)size.size, size.data, dt, dev, &t))) return st;
  if ((st = random_fill(op, normal, t))) {
    kd_tensor_release(t);
    return st;
  }
  *out = t;
  return KD_OK;
}

static kd_status random_out(const char *op, bool normal, kd_ints size, const kd_value *generator,
                            kd_tensor *out) {
  if (!out) return kd_set_error(KD_EINVAL, "%s: out is NULL", op);
  kd_status st = check_generator(op, generator);
  if (!st) st = kdk__check_size_list(op, size);
  if (st) return st;
  kd_dtype dt = kd_tensor_dtype(out);
  if (!kd_dtype_is_floating(dt) && !kd_dtype_is_complex(dt))
    return random_fill(op, normal, out); /* the dtype error, before resizing */
  if ((st = kdk__resize_if_needed(out, (int)size.size, size.data))) return st;
  return random_fill(op, normal, out);
}

/* The four kernels of rand (normal false) and randn (normal true). */
#define KDK__RANDOM_KERNELS(name, normal)                                                       \
  kd_status kdk_native_##name(kd_ints size, const kd_dtype *dtype, const kd_layout *layout,     \
                              const kd_device *device, const bool *pin_memory, kd_tensor **out) { \
    return random_new(#name, normal, size, NULL, dtype, layout, device, pin_memory, out);       \
  }                                                                                            \
  kd_status kdk_native_##name##_generator(kd_ints size, const kd_value *generator,              \
                                          const kd_dtype *dtype, const kd_layout *layout,       \
                                          const kd_device *device, const bool *pin_memory,      \
                                          kd_tensor **out) {                                    \
    return random_new(#name, normal, size, generator, dtype, layout, device, pin_memory, out);  \
  }                                                                                            \
  kd_status kdk_native_##name##_out(kd_ints size, kd_tensor *out) {                             \
    return random_out(#name, normal, size, NULL, out);                                         \
  }                                                                                            \
  kd_status kdk_native_##name##_generator_out(kd_ints size, const kd_value *generator,          \
                                              kd_tensor *out) {                                 \
    return random_out(#name, normal, size, generator, out);                                    \
  }
KDK__RANDOM_KERNELS(rand, false)
KDK__RANDOM_KERNELS(randn, true)
#undef KDK__RANDOM_KERNELS
