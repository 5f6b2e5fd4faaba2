/* A kernel author's program against the installed kit (kdk/): a device of
 * its own whose memory is host memory, an iterator-based loop registered as
 * that device's add_stub loop, and libkdops' own meta function and impl of
 * add (kdk_meta_add_Tensor, kdk_native_add_out_cpu: kdgen's Legacy strategy
 * by hand) reaching it. Exits 0 when all of it works. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdk/kdk.h>
#include <kdk/native.h>

#define DEV KD_DEVICE_PRIVATEUSE3

static void *host_alloc(void *ctx, kd_device d, size_t n) {
  (void)ctx, (void)d;
  return malloc(n);
}
static void host_free(void *ctx, kd_device d, void *p, size_t n) {
  (void)ctx, (void)d, (void)n;
  free(p);
}
static kd_status host_copy(void *ctx, kd_device d, void *dst, const void *src, size_t n) {
  (void)ctx, (void)d;
  memcpy(dst, src, n);
  return KD_OK;
}

static int loops;

typedef struct {
  double alpha;
} add_ctx;
static void add_rows(void *ctx, char **data, const int64_t *strides, int64_t n0, int64_t n1) {
  double alpha = ((add_ctx *)ctx)->alpha;
  for (int64_t j = 0; j < n1; j++)
    for (int64_t i = 0; i < n0; i++) {
      double a = *(const double *)(data[1] + i * strides[1] + j * strides[4]);
      double b = *(const double *)(data[2] + i * strides[2] + j * strides[5]);
      *(double *)(data[0] + i * strides[0] + j * strides[3]) = a + alpha * b;
    }
}
static kdk_stub_fn_add_stub kit_add;
static kd_status kit_add(kdk_iter *it, const kd_scalar *alpha, const kd_scalar *unused) {
  (void)unused;
  loops++;
  if (kdk_iter_common_dtype(it) != KD_FLOAT64)
    return kd_set_error(KD_ETYPE, "\"add_kitdev\" not implemented for '%s'",
                        kd_dtype_name(kdk_iter_common_dtype(it)));
  add_ctx c = {alpha ? kd_scalar_to_double(alpha) : 1.0};
  kdk_iter_for_each(it, add_rows, &c, KDK_GRAIN_SIZE);
  return KD_OK;
}

/* add.Tensor on any device, as kdgen's Legacy wrapper does it. */
static kd_status legacy_add(kd_tensor *a, kd_tensor *b, const kd_scalar *alpha, kd_tensor **out) {
  kdk_structured s;
  kdk_structured_init(&s, "kit::add.Tensor", KDK_STRUCTURED_FUNCTIONAL, 1, NULL,
                      kd_tensor_device(a));
  kdk_iter it;
  kdk_iter_init(&it, &s);
  kd_status st = kdk_meta_add_Tensor(&s, &it, a, b, alpha);
  if (!st) st = kdk_native_add_out_cpu(&s, &it, a, b, alpha, kdk_structured_output(&s, 0));
  if (!st) st = kdk_iter_finish(&it);
  if (!st) st = kdk_structured_finish(&s);
  kdk_iter_release(&it);
  kdk_structured_release(&s, st ? NULL : out);
  return st;
}

#define CHECK(x)                                                                   \
  do {                                                                             \
    kd_status st_ = (x);                                                           \
    if (st_) {                                                                     \
      fprintf(stderr, "%s: %s: %s\n", #x, kd_status_name(st_), kd_last_error());    \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

int main(void) {
  CHECK(kd_ops_open());
  kd_allocator al = {KD_ALLOCATOR_API_VERSION, host_alloc, host_free, NULL, host_copy, host_copy};
  CHECK(kd_device_type_register(DEV, "kitdev", 0));
  CHECK(kd_allocator_set(DEV, &al));
  CHECK(KDK_REGISTER_DEVICE_STUB(add_stub, DEV, kit_add));

  int64_t n = 4;
  kd_tensor *ha, *hb, *a, *b, *r = NULL, *hr;
  CHECK(kd_tensor_empty(1, &n, KD_FLOAT64, kd_device_cpu(), &ha));
  CHECK(kd_tensor_empty(1, &n, KD_FLOAT64, kd_device_cpu(), &hb));
  for (int i = 0; i < 4; i++) {
    ((double *)kd_tensor_data(ha))[i] = i;
    ((double *)kd_tensor_data(hb))[i] = 10 * i;
  }
  CHECK(kd_tensor_to_device(ha, (kd_device){DEV, 0}, &a));
  CHECK(kd_tensor_to_device(hb, (kd_device){DEV, 0}, &b));
  kd_scalar half = kd_scalar_double(0.5);
  CHECK(legacy_add(a, b, &half, &r));
  CHECK(kd_tensor_to_device(r, kd_device_cpu(), &hr));
  for (int i = 0; i < 4; i++)
    if (((double *)kd_tensor_data(hr))[i] != i + 5.0 * i || kd_tensor_device(r).type != DEV) {
      fprintf(stderr, "wrong element %d\n", i);
      return 1;
    }
  kd_tensor_release(hr);
  kd_tensor_release(r);
  r = NULL;
  if (loops != 1) return fprintf(stderr, "the device loop ran %d times\n", loops), 1;

  CHECK(KDK_UNREGISTER_DEVICE_STUB(add_stub, DEV));
  kd_status st = legacy_add(a, b, &half, &r);
  if (st != KD_ENOKERNEL || !strstr(kd_last_error(), "dispatch stub add_stub has no loop for device kitdev"))
    return fprintf(stderr, "unregistered: %s: %s\n", kd_status_name(st), kd_last_error()), 1;
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(ha);
  kd_tensor_release(hb);
  printf("kit: add on kitdev through libkdops' meta and impl, loop %d\n", loops);
  return 0;
}
