/*
 * fuzz_tensor.h: the tensor invariants of the harnesses (fuzz.h).
 */
#ifndef KD_FUZZ_TENSOR_H
#define KD_FUZZ_TENSOR_H

#include <kd/kd.h>

#include "fuzz.h"

__extension__ typedef __int128 i128;

/* Checks t's geometry and reach. [lo, lo + len) is where its bytes may be;
 * `touch` reads elements (cpu tensors whose bytes are real). */
static inline void check_tensor(const kd_tensor *t, int ndim, const int64_t *sizes, const char *lo,
                         i128 len, int touch) {
  FUZZ_CHECK(kd_tensor_ndim(t) == ndim, "ndim %d, asked for %d", kd_tensor_ndim(t), ndim);
  const int64_t *sz = kd_tensor_sizes(t), *st = kd_tensor_strides(t);
  i128 numel = 1, big = (i128)1 << 100;
  for (int i = 0; i < ndim; i++) {
    FUZZ_CHECK(sz[i] == sizes[i], "size %d is %lld, asked for %lld", i, (long long)sz[i],
               (long long)sizes[i]);
    FUZZ_CHECK(sz[i] >= 0, "negative size %lld", (long long)sz[i]);
    /* saturates above 2^100 (no i128 overflow), and a later zero still gives 0 */
    numel = sz[i] == 0 ? 0 : numel > big / sz[i] ? big + 1 : numel * sz[i];
  }
  FUZZ_CHECK(numel == kd_tensor_numel(t), "numel %lld for a product of sizes of %lld",
             (long long)kd_tensor_numel(t), (long long)numel);
  char *data = kd_tensor_data(t); /* also for an empty tensor: must not overflow */
  if (numel == 0) return;
  FUZZ_CHECK(kd_tensor_storage_offset(t) >= 0, "negative offset");
  i128 first = 0, last = 0;
  for (int i = 0; i < ndim; i++) {
    i128 span = (i128)(sz[i] - 1) * st[i];
    if (span < 0) first += span; else last += span;
    FUZZ_CHECK(first > -big && last < big, "strides reach past 2^100 with %lld elements",
               (long long)kd_tensor_numel(t));
  }
  i128 item = (i128)kd_tensor_itemsize(t);
  if (kd_tensor_device(t).type != KD_DEVICE_META) {
    FUZZ_CHECK(data != NULL, "NULL data with %lld elements", (long long)numel);
    i128 from = (i128)(uintptr_t)data - (i128)(uintptr_t)lo + first * item;
    i128 to = (i128)(uintptr_t)data - (i128)(uintptr_t)lo + (last + 1) * item;
    FUZZ_CHECK(from >= 0 && to <= len,
               "the tensor reaches bytes [%lld, %lld) of a region of %lld bytes",
               (long long)from, (long long)to, (long long)len);
    const kd_storage *s = kd_tensor_storage(t);
    i128 sfrom = (i128)(uintptr_t)data - (i128)(uintptr_t)kd_storage_data(s) + first * item;
    i128 sto = (i128)(uintptr_t)data - (i128)(uintptr_t)kd_storage_data(s) + (last + 1) * item;
    FUZZ_CHECK(sfrom >= 0 && sto <= (i128)kd_storage_nbytes(s),
               "the tensor reaches bytes [%lld, %lld) of a storage of %zu bytes",
               (long long)sfrom, (long long)sto, kd_storage_nbytes(s));
  }
  if (!touch || kd_tensor_device(t).type != KD_DEVICE_CPU) return;
  int64_t idx[KD_MAX_DIMS] = {0};
  kd_scalar v;
  for (int n = 0; n < 4096; n++) {
    kd_status s = kd_tensor_get(t, idx, &v);
    FUZZ_CHECK(s == KD_OK, "kd_tensor_get: %s", kd_last_error());
    int d = ndim - 1;
    while (d >= 0 && ++idx[d] == sz[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  for (int i = 0; i < ndim; i++) idx[i] = sz[i] - 1;
  FUZZ_CHECK(kd_tensor_get(t, idx, &v) == KD_OK, "kd_tensor_get of the last: %s", kd_last_error());
}

#endif
