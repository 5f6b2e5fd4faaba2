/* The thread pool (ops/src/parallel.h). */
#include <pthread.h>
#include <stdatomic.h>

#include "kd_test.h"
#include "parallel.h"

#define N 100000

typedef struct cover {
  atomic_int hits[N];
  atomic_int calls;
  atomic_int nested_serial; /* nested regions that ran as one call */
  atomic_int in_region;     /* chunks that saw kdk_in_parallel_region() */
} cover;

static void mark(void *p, int64_t b, int64_t e) {
  cover *c = p;
  atomic_fetch_add(&c->calls, 1);
  if (kdk_in_parallel_region()) atomic_fetch_add(&c->in_region, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static cover *new_cover(void) {
  cover *c = calloc(1, sizeof *c);
  assert_non_null(c);
  return c;
}

static void assert_once(cover *c, int64_t begin, int64_t end) {
  for (int64_t i = 0; i < N; i++) assert_int_equal(atomic_load(&c->hits[i]), i >= begin && i < end);
}

static void test_threads_setting(void **state) {
  (void)state;
  int n = kd_get_num_threads();
  assert_true(n >= 1);
  KD_ASSERT_ERR(kd_set_num_threads(0), KD_EINVAL, "kd_set_num_threads");
  KD_ASSERT_ERR(kd_set_num_threads(-3), KD_EINVAL, "positive");
  assert_int_equal(kd_get_num_threads(), n);
  KD_ASSERT_OK(kd_set_num_threads(3));
  assert_int_equal(kd_get_num_threads(), 3);
  KD_ASSERT_OK(kd_set_num_threads(n));
}

static void test_cover(void **state) {
  (void)state;
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(4));
  cover *c = new_cover();
  kdk_parallel_for(5, N - 3, 1000, mark, c);
  assert_once(c, 5, N - 3);
  assert_true(atomic_load(&c->calls) > 1);
  assert_true(atomic_load(&c->calls) <= 4);
  assert_int_equal(atomic_load(&c->in_region), atomic_load(&c->calls));
  assert_int_equal(kdk_parallel_chunks(0, N, 1000), 4);
  assert_int_equal(kdk_parallel_chunks(0, 2500, 1000), 3);
  assert_false(kdk_in_parallel_region());
  free(c);
  /* below the grain: one call, on this thread, not a region */
  c = new_cover();
  kdk_parallel_for(0, 999, 1000, mark, c);
  assert_once(c, 0, 999);
  assert_int_equal(atomic_load(&c->calls), 1);
  assert_int_equal(atomic_load(&c->in_region), 0);
  assert_int_equal(kdk_parallel_chunks(0, 999, 1000), 1);
  free(c);
  /* empty range: nothing */
  c = new_cover();
  kdk_parallel_for(10, 10, 1, mark, c);
  kdk_parallel_for(10, 3, 1, mark, c);
  assert_int_equal(atomic_load(&c->calls), 0);
  assert_int_equal(kdk_parallel_chunks(10, 10, 1), 0);
  free(c);
  /* one thread: serial */
  KD_ASSERT_OK(kd_set_num_threads(1));
  c = new_cover();
  kdk_parallel_for(0, N, 1, mark, c);
  assert_int_equal(atomic_load(&c->calls), 1);
  assert_once(c, 0, N);
  free(c);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

typedef struct nest {
  cover *c;
  atomic_int outer_calls;
} nest;

static void inner_count(void *p, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  cover *c = p;
  atomic_fetch_add(&c->nested_serial, 1);
}

static void outer(void *p, int64_t b, int64_t e) {
  nest *n = p;
  atomic_fetch_add(&n->outer_calls, 1);
  /* nested: runs serially as one call per outer chunk */
  kdk_parallel_for(0, 1000000, 1, inner_count, n->c);
  mark(n->c, b, e);
}

static void test_nested(void **state) {
  (void)state;
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(4));
  nest n = {.c = new_cover()};
  kdk_parallel_for(0, N, 100, outer, &n);
  assert_once(n.c, 0, N);
  assert_int_equal(atomic_load(&n.c->nested_serial), atomic_load(&n.outer_calls));
  free(n.c);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

/* Two user threads use the pool at once: one gets it, the other runs its
 * range itself; both complete. */
static void *user(void *p) {
  for (int r = 0; r < 50; r++) {
    cover *c = new_cover();
    kdk_parallel_for(0, N, 5000, mark, c);
    for (int64_t i = 0; i < N; i++)
      if (atomic_load(&c->hits[i]) != 1) {
        free(c);
        return (void *)1;
      }
    free(c);
  }
  (void)p;
  return NULL;
}

static void test_concurrent_callers(void **state) {
  (void)state;
  int saved = kd_get_num_threads();
  KD_ASSERT_OK(kd_set_num_threads(3));
  pthread_t t[3];
  for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&t[i], NULL, user, NULL), 0);
  for (int i = 0; i < 3; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    assert_null(r);
  }
  /* more threads than before: the pool grows */
  KD_ASSERT_OK(kd_set_num_threads(6));
  cover *c = new_cover();
  kdk_parallel_for(0, N, 1, mark, c);
  assert_once(c, 0, N);
  assert_true(atomic_load(&c->calls) <= 6);
  free(c);
  KD_ASSERT_OK(kd_set_num_threads(saved));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_setting),
      cmocka_unit_test(test_cover),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_concurrent_callers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
