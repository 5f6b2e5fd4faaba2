/*
 * dtype.c: the dtype table, names, promotion and result types.
 */
#include <math.h>
#include <stdio.h>

#include "core/internal.h"
#include "kd/dtype.h"

typedef struct kd__dtype_info {
  const char *name;
  size_t size;
  kd_dtype_kind kind;
} kd__dtype_info;

static const kd__dtype_info dtype_table[KD_DTYPE_COUNT] = {
#define KD__ROW(E, name, size, kind) {#name, size, kind},
    KD_DTYPE_LIST(KD__ROW)
#undef KD__ROW
};

bool kd_dtype_valid(kd_dtype dtype) { return dtype >= 0 && dtype < KD_DTYPE_COUNT; }

const char *kd_dtype_name(kd_dtype dtype) {
  if (dtype == KD_DTYPE_UNDEFINED) return "undefined";
  return kd_dtype_valid(dtype) ? dtype_table[dtype].name : "invalid";
}

const uint8_t kd__dtype_size_table[KD_DTYPE_COUNT] = {
#define KD__SIZE(E, name, size, kind) size,
    KD_DTYPE_LIST(KD__SIZE)
#undef KD__SIZE
};

size_t kd_dtype_size(kd_dtype dtype) {
  return kd_dtype_valid(dtype) ? dtype_table[dtype].size : 0;
}

kd_dtype_kind kd_dtype_kind_of(kd_dtype dtype) {
  return kd_dtype_valid(dtype) ? dtype_table[dtype].kind : KD_KIND_BOOL;
}

/* PyTorch's other spellings (torch.float, ScalarType names in schemas). */
static const struct {
  const char *name;
  kd_dtype dtype;
} dtype_aliases[] = {
    {"byte", KD_UINT8},         {"Byte", KD_UINT8},          {"char", KD_INT8},
    {"Char", KD_INT8},          {"short", KD_INT16},         {"Short", KD_INT16},
    {"int", KD_INT32},          {"Int", KD_INT32},           {"long", KD_INT64},
    {"Long", KD_INT64},         {"half", KD_FLOAT16},        {"Half", KD_FLOAT16},
    {"BFloat16", KD_BFLOAT16},  {"float", KD_FLOAT32},       {"Float", KD_FLOAT32},
    {"double", KD_FLOAT64},     {"Double", KD_FLOAT64},      {"cfloat", KD_COMPLEX64},
    {"ComplexFloat", KD_COMPLEX64}, {"cdouble", KD_COMPLEX128}, {"ComplexDouble", KD_COMPLEX128},
    {"Bool", KD_BOOL},
};

kd_status kd_dtype_from_name(const char *name, kd_dtype *out) {
  if (!name || !out) return kd_set_error(KD_EINVAL, "kd_dtype_from_name: NULL argument");
  const char *n = name;
  if (!strncmp(n, "torch.", 6)) n += 6;
  for (int i = 0; i < KD_DTYPE_COUNT; i++) {
    if (!strcmp(n, dtype_table[i].name)) {
      *out = (kd_dtype)i;
      return KD_OK;
    }
  }
  for (size_t i = 0; i < KD__ARRAY_SIZE(dtype_aliases); i++) {
    if (!strcmp(n, dtype_aliases[i].name)) {
      *out = dtype_aliases[i].dtype;
      return KD_OK;
    }
  }
  return kd_set_error(KD_ENOTFOUND,
                      "unknown dtype '%s': expected one of bool, uint8, int8, int16, int32, "
                      "int64, float16, bfloat16, float32, float64, complex64, complex128 "
                      "(or a PyTorch name such as float, double, long, half)",
                      name);
}

bool kd_dtype_is_integral(kd_dtype dtype, bool include_bool) {
  if (!kd_dtype_valid(dtype)) return false;
  kd_dtype_kind k = dtype_table[dtype].kind;
  return k == KD_KIND_INT || k == KD_KIND_UINT || (include_bool && k == KD_KIND_BOOL);
}

bool kd_dtype_is_floating(kd_dtype dtype) {
  return kd_dtype_valid(dtype) && dtype_table[dtype].kind == KD_KIND_FLOAT;
}

bool kd_dtype_is_complex(kd_dtype dtype) {
  return kd_dtype_valid(dtype) && dtype_table[dtype].kind == KD_KIND_COMPLEX;
}

kd_dtype kd_dtype_to_complex(kd_dtype dtype) {
  switch (dtype) {
    case KD_FLOAT16:
    case KD_BFLOAT16:
    case KD_FLOAT32:
    case KD_COMPLEX64:
      return KD_COMPLEX64;
    case KD_FLOAT64:
    case KD_COMPLEX128:
      return KD_COMPLEX128;
    default:
      return KD_DTYPE_UNDEFINED;
  }
}

kd_dtype kd_dtype_to_real(kd_dtype dtype) {
  switch (dtype) {
    case KD_COMPLEX64:
      return KD_FLOAT32;
    case KD_COMPLEX128:
      return KD_FLOAT64;
    default:
      return kd_dtype_is_floating(dtype) ? dtype : KD_DTYPE_UNDEFINED;
  }
}

/* Rank of a floating type by precision, for float-with-float promotion;
 * float16 and bfloat16 share a rank (neither holds the other). */
static int float_rank(kd_dtype d) {
  switch (d) {
    case KD_FLOAT16:
    case KD_BFLOAT16:
      return 0;
    case KD_FLOAT32:
    case KD_COMPLEX64:
      return 1;
    default:
      return 2; /* float64, complex128 */
  }
}

/* Integers: the smallest type holding both ranges. */
static kd_dtype promote_integers(kd_dtype a, kd_dtype b) {
  bool ua = kd_dtype_kind_of(a) == KD_KIND_UINT, ub = kd_dtype_kind_of(b) == KD_KIND_UINT;
  if (ua == ub) return a > b ? a : b;
  kd_dtype u = ua ? a : b, s = ua ? b : a;
  /* uint8 with a signed type: the signed type must be wider than 8 bits. */
  (void)u;
  return s == KD_INT8 ? KD_INT16 : s;
}

kd_dtype kd_promote_types(kd_dtype a, kd_dtype b) {
  if (!kd_dtype_valid(a) || !kd_dtype_valid(b)) return KD_DTYPE_UNDEFINED;
  if (a == b) return a;
  kd_dtype_kind ka = dtype_table[a].kind, kb = dtype_table[b].kind;
  if (ka == KD_KIND_BOOL) return b;
  if (kb == KD_KIND_BOOL) return a;
  bool ia = ka == KD_KIND_INT || ka == KD_KIND_UINT;
  bool ib = kb == KD_KIND_INT || kb == KD_KIND_UINT;
  if (ia && ib) return promote_integers(a, b);
  if (ia) return b; /* integer with floating or complex */
  if (ib) return a;
  /* Both floating or complex. */
  int r = float_rank(a) > float_rank(b) ? float_rank(a) : float_rank(b);
  bool complex = ka == KD_KIND_COMPLEX || kb == KD_KIND_COMPLEX;
  if (r == 0) return complex ? KD_COMPLEX64 : KD_FLOAT32; /* float16 with bfloat16 */
  if (complex) return r == 1 ? KD_COMPLEX64 : KD_COMPLEX128;
  return r == 1 ? KD_FLOAT32 : KD_FLOAT64;
}

/* ---- Default dtype ---------------------------------------------------------- */

static atomic_int default_dtype = KD_FLOAT32;

kd_dtype kd_get_default_dtype(void) { return (kd_dtype)atomic_load(&default_dtype); }

kd_status kd_set_default_dtype(kd_dtype dtype) {
  if (!kd_dtype_is_floating(dtype))
    return kd_set_error(KD_EINVAL,
                        "kd_set_default_dtype: expected a floating dtype (float16, bfloat16, "
                        "float32, float64), got %s",
                        kd_dtype_name(dtype));
  atomic_store(&default_dtype, (int)dtype);
  return KD_OK;
}

/* ---- Result type ------------------------------------------------------------ */

static kd_dtype promote_skip_undefined(kd_dtype a, kd_dtype b) {
  if (a == KD_DTYPE_UNDEFINED) return b;
  if (b == KD_DTYPE_UNDEFINED) return a;
  return kd_promote_types(a, b);
}

/* How a lower-priority group may change the result of a higher one: only by
 * a higher category (PyTorch's combine_categories). */
static kd_dtype combine_categories(kd_dtype higher, kd_dtype lower) {
  if (kd_dtype_is_complex(higher)) return higher;
  if (kd_dtype_is_complex(lower)) {
    if (kd_dtype_is_floating(higher)) return kd_dtype_to_complex(higher);
    return lower;
  }
  if (kd_dtype_is_floating(higher)) return higher;
  if (higher == KD_BOOL || kd_dtype_is_floating(lower)) return promote_skip_undefined(higher, lower);
  if (higher != KD_DTYPE_UNDEFINED) return higher;
  return lower;
}

void kd_result_type_init(kd_result_type_state *state) {
  state->dim_result = KD_DTYPE_UNDEFINED;
  state->zero_result = KD_DTYPE_UNDEFINED;
  state->wrapped_result = KD_DTYPE_UNDEFINED;
}

void kd_result_type_add_tensor(kd_result_type_state *state, kd_dtype dtype, int ndim) {
  if (!kd_dtype_valid(dtype)) return;
  if (ndim > 0)
    state->dim_result = promote_skip_undefined(state->dim_result, dtype);
  else
    state->zero_result = promote_skip_undefined(state->zero_result, dtype);
}

void kd_result_type_add_scalar(kd_result_type_state *state, kd_dtype scalar_dtype) {
  if (!kd_dtype_valid(scalar_dtype)) return;
  kd_dtype d = scalar_dtype;
  if (kd_dtype_is_floating(d))
    d = kd_get_default_dtype();
  else if (kd_dtype_is_complex(d))
    d = kd_dtype_to_complex(kd_get_default_dtype());
  else if (kd_dtype_is_integral(d, false))
    d = KD_INT64;
  state->wrapped_result = promote_skip_undefined(state->wrapped_result, d);
}

kd_dtype kd_result_type_finish(const kd_result_type_state *state) {
  return combine_categories(state->dim_result,
                            combine_categories(state->zero_result, state->wrapped_result));
}

/* ---- float16 / bfloat16 ------------------------------------------------------ */

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float kd_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13)); /* inf, nan */
  if (exp == 0) {
    if (man == 0) return f32_from_bits(sign); /* zero */
    /* Subnormal: value = man * 2^-24. */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t kd_float_to_half(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) { /* inf or nan */
    return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
  }
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (abs < 0x38800000u) {                                   /* subnormal or zero in half */
    /* Scale so that the half subnormal unit is 1, then round to nearest even. */
    float a = f32_from_bits(abs) * 16777216.0f; /* 2^24 */
    float r = nearbyintf(a);                     /* default rounding: to nearest even */
    return (uint16_t)(sign | (uint16_t)r);
  }
  uint32_t man = abs & 0x7fffffu;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* may carry into exp: fine */
  return (uint16_t)(sign | h);
}

float kd_bfloat16_to_float(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

uint16_t kd_float_to_bfloat16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet nan */
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return (uint16_t)(u >> 16);
}

void kd__fmt_dtype_set(kd__fmt *f, uint32_t set) {
  kd__fmt_puts(f, "[");
  bool first = true;
  for (int d = 0; d < KD_DTYPE_COUNT; d++)
    if (set & KD_DTYPE_BIT(d)) {
      kd__fmt_printf(f, "%s%s", first ? "" : ", ", dtype_table[d].name);
      first = false;
    }
  kd__fmt_puts(f, "]");
}
