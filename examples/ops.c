/*
 * ops.c: the operator library from C (README). Broadcasting, type
 * promotion, an out variant, a reduction, and a meta call.
 */
#include <stdio.h>

#include <kd/ops.h>

static int fail(void) {
  fprintf(stderr, "%s\n", kd_last_error());
  return 1;
}

int main(void) {
  const int64_t ab[2] = {2, 3}, c3[1] = {3};
  const int32_t a_data[6] = {1, 2, 3, 4, 5, 6};
  const float b_data[3] = {0.5f, 1.5f, 2.5f};
  kd_tensor *a = NULL, *b = NULL, *sum = NULL, *total = NULL;
  if (kd_tensor_from_data(2, ab, KD_INT32, a_data, &a) || kd_tensor_from_data(1, c3, KD_FLOAT32, b_data, &b))
    return fail();

  /* int32 [2, 3] + float32 [3] * 2: broadcast, promoted to float32 */
  kd_scalar two = kd_scalar_int(2);
  if (kd_add_Tensor(a, b, &two, &sum)) return fail();
  /* sum over dim 1 into a preallocated out tensor (resized to [2]) */
  const int64_t dim[1] = {1};
  if (kd_sum(sum, NULL, &total)) return fail();
  kd_tensor *rows = NULL;
  const int64_t zero[1] = {0};
  if (kd_empty_memory_format((kd_ints){zero, 1}, NULL, NULL, NULL, NULL, NULL, &rows)) return fail();
  if (kd_sum_IntList_out(sum, (kd_ints){dim, 1}, false, NULL, rows)) return fail();

  kd_scalar t, r0, r1;
  kd_tensor_item(total, &t);
  kd_tensor_get(rows, (const int64_t[]){0}, &r0);
  kd_tensor_get(rows, (const int64_t[]){1}, &r1);
  printf("add: %s %s, sum: %g, rows: [%g, %g]\n", kd_dtype_name(kd_tensor_dtype(sum)),
         kd_tensor_ndim(sum) == 2 ? "[2, 3]" : "?", kd_scalar_to_double(&t),
         kd_scalar_to_double(&r0), kd_scalar_to_double(&r1));

  /* The same on the meta device: shapes and dtypes, no data. */
  kd_device meta = {KD_DEVICE_META, 0};
  kd_tensor *m = NULL, *mt = NULL, *mm = NULL;
  if (kd_empty_memory_format((kd_ints){ab, 2}, NULL, NULL, &meta, NULL, NULL, &m)) return fail();
  if (kd_t(m, &mt) || kd_mm(m, mt, &mm)) return fail();
  printf("meta mm: [%lld, %lld] on %s\n", (long long)kd_tensor_size(mm, 0),
         (long long)kd_tensor_size(mm, 1), kd_device_type_name(kd_tensor_device(mm).type));
  /* Errors are statuses with PyTorch's messages. */
  kd_tensor *bad = NULL;
  if (kd_mm(m, m, &bad) != KD_OK) printf("error: %s\n", kd_last_error());
  kd_tensor_release(bad);

  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_tensor_release(sum);
  kd_tensor_release(total);
  kd_tensor_release(rows);
  kd_tensor_release(m);
  kd_tensor_release(mt);
  kd_tensor_release(mm);
  return 0;
}
