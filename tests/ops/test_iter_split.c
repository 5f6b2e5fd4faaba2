/*
 * test_iter_split.c: kdk_iter_split_row (one long reduction row cut into
 * pieces over threads, for per-piece accumulators) and reduction rows of
 * length 0: which iterators are split, that the pieces cover the row once,
 * in order, with the right addresses and strides, and when nothing is split.
 */
#include <stdatomic.h>

#include "iter.h"
#include "kd_test.h"

#define MAXP 8

/* What the pieces saw. */
typedef struct record {
  char *in0, *out;   /* the row's first input element, the output */
  int64_t begin[MAXP], len[MAXP], in_stride[MAXP], out_stride[MAXP];
  char *in_at[MAXP], *out_at[MAXP];
  atomic_int calls[MAXP];
  atomic_int bad_part;
} record;

static void piece(void *ctx, int part, char **data, const int64_t *strides, int64_t begin,
                  int64_t len) {
  record *r = ctx;
  if (part < 0 || part >= MAXP) {
    atomic_fetch_add(&r->bad_part, 1);
    return;
  }
  atomic_fetch_add(&r->calls[part], 1);
  r->begin[part] = begin;
  r->len[part] = len;
  r->in_stride[part] = strides[1];
  r->out_stride[part] = strides[0];
  r->in_at[part] = data[1];
  r->out_at[part] = data[0];
}

static void record_init(record *r) {
  memset(r, 0, sizeof *r);
  for (int i = 0; i < MAXP; i++) atomic_init(&r->calls[i], 0);
  atomic_init(&r->bad_part, 0);
}

/* The pieces 0..n-1 cover [0, row_len) in order, once each, at the right
 * addresses (input elements `stride` bytes apart). */
static void check_pieces(const record *r, int n, int64_t row_len, const char *in, int64_t stride,
                         const char *out) {
  assert_int_equal(atomic_load(&r->bad_part), 0);
  int64_t next = 0;
  for (int i = 0; i < MAXP; i++) {
    if (i >= n) {
      assert_int_equal(atomic_load(&r->calls[i]), 0);
      continue;
    }
    assert_int_equal(atomic_load(&r->calls[i]), 1);
    assert_int_equal(r->begin[i], next);
    assert_true(r->len[i] > 0);
    assert_int_equal(r->in_stride[i], stride);
    assert_int_equal(r->out_stride[i], 0);
    assert_ptr_equal(r->in_at[i], in + r->begin[i] * stride);
    assert_ptr_equal(r->out_at[i], out);
    next += r->len[i];
  }
  assert_int_equal(next, row_len);
}

static kd_tensor *filled(int64_t n) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, &n, KD_FLOAT32, kd_device_cpu(), &t));
  float *p = kd_tensor_data(t);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(i % 5);
  return t;
}

static void test_split(void **state) {
  (void)state;
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(4));
  const int64_t n = 200000;
  kd_tensor *a = filled(2 * n);
  kdk_iter it;
  record r;
  /* all of a: one row of 2n elements, 4 pieces */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, a, NULL, 0, false, KD_DTYPE_UNDEFINED));
  record_init(&r);
  int parts = kdk_iter_split_row(&it, piece, &r, MAXP, 0);
  assert_int_equal(parts, 4);
  check_pieces(&r, parts, 2 * n, kd_tensor_data(a), 4, kdk_iter_data(&it, 0));
  /* at most max_parts */
  record_init(&r);
  parts = kdk_iter_split_row(&it, piece, &r, 2, 0);
  assert_int_equal(parts, 2);
  check_pieces(&r, parts, 2 * n, kd_tensor_data(a), 4, kdk_iter_data(&it, 0));
  /* no more pieces than grains: 2n / 150000 elements need 3 */
  record_init(&r);
  parts = kdk_iter_split_row(&it, piece, &r, MAXP, 150000);
  assert_int_equal(parts, 3);
  check_pieces(&r, parts, 2 * n, kd_tensor_data(a), 4, kdk_iter_data(&it, 0));
  /* not split: a row shorter than grain, max_parts < 2, one thread */
  record_init(&r);
  assert_int_equal(kdk_iter_split_row(&it, piece, &r, MAXP, 2 * n + 1), 0);
  assert_int_equal(kdk_iter_split_row(&it, piece, &r, 1, 0), 0);
  KD_ASSERT_OK(kd_set_num_threads(1));
  assert_int_equal(kdk_iter_split_row(&it, piece, &r, MAXP, 0), 0);
  KD_ASSERT_OK(kd_set_num_threads(4));
  check_pieces(&r, 0, 0, NULL, 0, NULL);
  kdk_iter_release(&it);

  /* a strided row: every other element (8 bytes apart), from element 1 */
  kd_tensor *v = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 1, &n, (int64_t[]){2}, 1, &v));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, v, NULL, 0, true, KD_DTYPE_UNDEFINED));
  record_init(&r);
  parts = kdk_iter_split_row(&it, piece, &r, MAXP, 0);
  assert_int_equal(parts, 4);
  check_pieces(&r, parts, n, (char *)kd_tensor_data(a) + 4, 8, kdk_iter_data(&it, 0));
  kdk_iter_release(&it);
  kd_tensor_release(v);

  /* several rows (threads split over rows instead), no row, meta */
  record_init(&r);
  kd_tensor *m = NULL;
  KD_ASSERT_OK(kd_tensor_as_strided(a, 2, (int64_t[]){2, n}, (int64_t[]){n, 1}, 0, &m));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, m, (int64_t[]){1}, 1, false, KD_DTYPE_UNDEFINED));
  assert_int_equal(kdk_iter_num_rows(&it), 2);
  assert_int_equal(kdk_iter_split_row(&it, piece, &r, MAXP, 0), 0);
  kdk_iter_release(&it);
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_unary_op(&it, NULL, a));
  assert_int_equal(kdk_iter_split_row(&it, piece, &r, MAXP, 0), 0);
  kdk_iter_release(&it);
  kd_tensor *mt = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){2 * n}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &mt));
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, mt, NULL, 0, false, KD_DTYPE_UNDEFINED));
  assert_int_equal(kdk_iter_split_row(&it, piece, &r, MAXP, 0), 0);
  kdk_iter_release(&it);
  check_pieces(&r, 0, 0, NULL, 0, NULL);
  kd_tensor_release(mt);
  kd_tensor_release(m);
  kd_tensor_release(a);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

/* Writes the row length into the float output of each row. */
static void row_len_loop(void *ctx, char **data, const int64_t *strides, int64_t size0,
                         int64_t size1) {
  (void)ctx;
  for (int64_t j = 0; j < size1; j++) *(float *)(data[0] + j * strides[2]) = (float)size0;
}

static void test_empty_rows(void **state) {
  (void)state;
  /* every dim reduced, one of them of size 0 (its stride breaks the run the
   * others form): one row of length 0, no copy needed */
  kd_tensor *z = NULL;
  KD_ASSERT_OK(kd_tensor_empty(3, (int64_t[]){2, 0, 3}, KD_FLOAT32, kd_device_cpu(), &z));
  kdk_iter it;
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, z, NULL, 0, true, KD_DTYPE_UNDEFINED));
  assert_int_equal(kdk_iter_row_len(&it), 0);
  assert_int_equal(kdk_iter_num_rows(&it), 1);
  kd_tensor *out = kdk_iter_output(&it, 0);
  *(float *)kd_tensor_data(out) = -1.0f;
  kdk_iter_for_each(&it, row_len_loop, NULL, 0);
  assert_true(*(float *)kd_tensor_data(out) == 0.0f);
  kdk_iter_release(&it);
  /* dims 0 and 1 of it: rows of length 0 for each of the 3 outputs */
  kdk_iter_init(&it, NULL);
  KD_ASSERT_OK(kdk_iter_build_reduce_op(&it, NULL, z, (int64_t[]){0, 1}, 2, false, KD_DTYPE_UNDEFINED));
  assert_int_equal(kdk_iter_row_len(&it), 0);
  assert_int_equal(kdk_iter_num_rows(&it), 3);
  out = kdk_iter_output(&it, 0);
  for (int i = 0; i < 3; i++) ((float *)kd_tensor_data(out))[i] = -1.0f;
  kdk_iter_for_each(&it, row_len_loop, NULL, 0);
  for (int i = 0; i < 3; i++) assert_true(((float *)kd_tensor_data(out))[i] == 0.0f);
  kdk_iter_release(&it);
  kd_tensor_release(z);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_empty_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
