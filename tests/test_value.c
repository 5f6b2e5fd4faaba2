/*
 * test_value.c: boxed values (kd_value) and the stack (kd_stack).
 */
#include <math.h>

#include "kd_test.h"

/* ---- Helpers --------------------------------------------------------------- */

static kd_tensor *new_tensor(void) {
  kd_tensor *t = NULL;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &t));
  assert_non_null(t);
  assert_int_equal(kd_tensor_refcount(t), 1);
  return t;
}

/* Formats into a static buffer and checks that the returned length matches. */
static const char *fmt(const kd_value *v) {
  static char buf[4096];
  size_t n = kd_value_format(v, buf, sizeof buf);
  assert_true(n < sizeof buf);
  assert_int_equal(n, strlen(buf));
  return buf;
}

static const char *describe(const kd_tensor *t) {
  static char buf[1024];
  size_t n = kd_tensor_describe(t, buf, sizeof buf);
  assert_true(n < sizeof buf);
  return buf;
}

/* ---- Tags ------------------------------------------------------------------ */

static void test_tag_names(void **state) {
  (void)state;
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_NONE), "None");
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_DOUBLE), "float");
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_STRING), "str");
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_TENSOR), "Tensor");
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_OPT_TENSOR_LIST), "Tensor?[]");
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_TUPLE), "tuple");
  KD_ASSERT_STR_EQ(kd_value_tag_name(KD_VALUE_TAG_COUNT), "invalid");
  KD_ASSERT_STR_EQ(kd_value_tag_name((kd_value_tag)-1), "invalid");
}

/* ---- Small values and checked getters --------------------------------------- */

static void test_zeroed_is_none(void **state) {
  (void)state;
  kd_value v;
  memset(&v, 0, sizeof v);
  assert_true(kd_value_is_none(&v));
  kd_value_destroy(&v);
  assert_true(kd_value_is_none(&v));
  kd_value_destroy(&v); /* twice is fine */
  kd_value_destroy(NULL);
  kd_value none = kd_value_none();
  assert_true(kd_value_equal(&v, &none));
}

static void test_bool(void **state) {
  (void)state;
  kd_value v = kd_value_bool(true);
  assert_int_equal(v.tag, KD_VALUE_BOOL);
  bool b = false;
  KD_ASSERT_OK(kd_value_get_bool(&v, &b));
  assert_true(b);
  kd_scalar s;
  KD_ASSERT_OK(kd_value_get_scalar(&v, &s));
  assert_int_equal(s.kind, KD_SCALAR_BOOL);
  assert_true(s.v.b);

  int64_t i = 77;
  KD_ASSERT_ERR(kd_value_get_int(&v, &i), KD_ETYPE, "expected a value of type int, found bool");
  assert_int_equal(i, 77); /* untouched */
  double d = 1.5;
  KD_ASSERT_ERR(kd_value_get_double(&v, &d), KD_ETYPE,
                "expected a value of type float, found bool");
  assert_true(d == 1.5);

  kd_value i1 = kd_value_int(1);
  KD_ASSERT_ERR(kd_value_get_bool(&i1, &b), KD_ETYPE, "expected a value of type bool, found int");
  assert_true(b);
}

static void test_int(void **state) {
  (void)state;
  kd_value v = kd_value_int(-42);
  int64_t i = 0;
  KD_ASSERT_OK(kd_value_get_int(&v, &i));
  assert_int_equal(i, -42);
  double d = 0;
  KD_ASSERT_OK(kd_value_get_double(&v, &d)); /* int -> double */
  assert_true(d == -42.0);
  kd_scalar s;
  KD_ASSERT_OK(kd_value_get_scalar(&v, &s));
  assert_int_equal(s.kind, KD_SCALAR_INT);
  assert_int_equal(s.v.i, -42);

  kd_value big = kd_value_int(INT64_MIN);
  KD_ASSERT_OK(kd_value_get_int(&big, &i));
  assert_true(i == INT64_MIN);

  kd_tensor *t = NULL;
  KD_ASSERT_ERR(kd_value_get_tensor(&v, &t), KD_ETYPE,
                "expected a value of type Tensor, found int");
  assert_null(t);
}

static void test_double(void **state) {
  (void)state;
  kd_value v = kd_value_double(2.5);
  double d = 0;
  KD_ASSERT_OK(kd_value_get_double(&v, &d));
  assert_true(d == 2.5);
  kd_scalar s;
  KD_ASSERT_OK(kd_value_get_scalar(&v, &s));
  assert_int_equal(s.kind, KD_SCALAR_DOUBLE);
  assert_true(s.v.d == 2.5);
  int64_t i = 5;
  KD_ASSERT_ERR(kd_value_get_int(&v, &i), KD_ETYPE, "expected a value of type int, found float");
  assert_int_equal(i, 5);
}

static void test_complex(void **state) {
  (void)state;
  kd_value v = kd_value_complex(1, -2);
  assert_int_equal(v.tag, KD_VALUE_COMPLEX);
  kd_scalar s;
  KD_ASSERT_OK(kd_value_get_scalar(&v, &s));
  assert_int_equal(s.kind, KD_SCALAR_COMPLEX);
  assert_true(s.v.c.re == 1 && s.v.c.im == -2);
  double d = 0;
  KD_ASSERT_ERR(kd_value_get_double(&v, &d), KD_ETYPE,
                "expected a value of type float, found complex");
}

static void test_scalar(void **state) {
  (void)state;
  kd_value vi = kd_value_scalar(kd_scalar_int(7));
  kd_value vd = kd_value_scalar(kd_scalar_double(0.5));
  kd_value vb = kd_value_scalar(kd_scalar_bool(true));
  kd_value vc = kd_value_scalar(kd_scalar_complex(0, 1));
  int64_t i = 0;
  double d = 0;
  bool b = false;
  kd_scalar s;

  KD_ASSERT_OK(kd_value_get_int(&vi, &i));
  assert_int_equal(i, 7);
  KD_ASSERT_OK(kd_value_get_double(&vi, &d)); /* int scalar -> double, as int -> double */
  assert_true(d == 7.0);
  KD_ASSERT_OK(kd_value_get_double(&vd, &d));
  assert_true(d == 0.5);
  KD_ASSERT_OK(kd_value_get_bool(&vb, &b));
  assert_true(b);
  KD_ASSERT_OK(kd_value_get_scalar(&vc, &s));
  assert_int_equal(s.kind, KD_SCALAR_COMPLEX);
  assert_true(s.v.c.im == 1);

  i = 99;
  KD_ASSERT_ERR(kd_value_get_int(&vd, &i), KD_ETYPE,
                "expected a value of type int, found Scalar holding a float");
  assert_int_equal(i, 99);
  KD_ASSERT_ERR(kd_value_get_bool(&vi, &b), KD_ETYPE,
                "expected a value of type bool, found Scalar holding a int");
  KD_ASSERT_ERR(kd_value_get_double(&vc, &d), KD_ETYPE,
                "expected a value of type float, found Scalar holding a complex");
  KD_ASSERT_ERR(kd_value_get_int(&vb, &i), KD_ETYPE, "found Scalar holding a bool");
}

static void test_enums(void **state) {
  (void)state;
  kd_value dt = kd_value_dtype(KD_INT64);
  kd_value lay = kd_value_layout(KD_LAYOUT_SPARSE_CSR);
  kd_device cuda1 = {KD_DEVICE_CUDA, 1};
  kd_value dev = kd_value_device(cuda1);
  kd_value mf = kd_value_memory_format(KD_MEMORY_FORMAT_CHANNELS_LAST);
  assert_int_equal(dt.tag, KD_VALUE_DTYPE);
  assert_int_equal(dt.u.dtype, KD_INT64);
  assert_int_equal(lay.u.layout, KD_LAYOUT_SPARSE_CSR);
  assert_true(kd_device_equal(dev.u.device, cuda1));
  assert_int_equal(mf.u.mf, KD_MEMORY_FORMAT_CHANNELS_LAST);

  kd_scalar s;
  KD_ASSERT_ERR(kd_value_get_scalar(&dt, &s), KD_ETYPE,
                "expected a value of type Scalar, found ScalarType");
  KD_ASSERT_ERR(kd_value_get_scalar(&lay, &s), KD_ETYPE, "found Layout");
  KD_ASSERT_ERR(kd_value_get_scalar(&dev, &s), KD_ETYPE, "found Device");
  KD_ASSERT_ERR(kd_value_get_scalar(&mf, &s), KD_ETYPE, "found MemoryFormat");
  kd_value none = kd_value_none();
  KD_ASSERT_ERR(kd_value_get_scalar(&none, &s), KD_ETYPE,
                "expected a value of type Scalar, found None");
  /* Nothing to free, but destroy is fine on them. */
  kd_value_destroy(&dt);
  assert_true(kd_value_is_none(&dt));
}

static void test_null_arguments(void **state) {
  (void)state;
  kd_value v = kd_value_int(1);
  int64_t i;
  double d;
  kd_scalar s;
  KD_ASSERT_ERR(kd_value_get_int(NULL, &i), KD_EINVAL, "kd_value_get_int");
  KD_ASSERT_ERR(kd_value_get_int(&v, NULL), KD_EINVAL, "out is NULL");
  KD_ASSERT_ERR(kd_value_get_double(NULL, &d), KD_EINVAL, "value is NULL");
  KD_ASSERT_ERR(kd_value_get_bool(&v, NULL), KD_EINVAL, "kd_value_get_bool");
  KD_ASSERT_ERR(kd_value_get_scalar(NULL, &s), KD_EINVAL, "kd_value_get_scalar");
  KD_ASSERT_ERR(kd_value_get_tensor(&v, NULL), KD_EINVAL, "kd_value_get_tensor");

  KD_ASSERT_ERR(kd_value_string("x", 1, NULL), KD_EINVAL, "out is NULL");
  kd_value out = kd_value_int(3);
  KD_ASSERT_ERR(kd_value_string(NULL, 4, &out), KD_EINVAL, "text is NULL");
  assert_true(kd_value_is_none(&out));
  out = kd_value_int(3);
  KD_ASSERT_ERR(kd_value_int_list(NULL, 2, &out), KD_EINVAL, "items is NULL");
  assert_true(kd_value_is_none(&out));
  KD_ASSERT_ERR(kd_value_double_list(NULL, 1, &out), KD_EINVAL, "kd_value_double_list");
  KD_ASSERT_ERR(kd_value_bool_list(NULL, 1, &out), KD_EINVAL, "kd_value_bool_list");
  KD_ASSERT_ERR(kd_value_tensor_list(NULL, 1, &out), KD_EINVAL, "kd_value_tensor_list");
  KD_ASSERT_ERR(kd_value_opt_tensor_list(NULL, 1, &out), KD_EINVAL, "kd_value_opt_tensor_list");
  KD_ASSERT_ERR(kd_value_list(NULL, 1, &out), KD_EINVAL, "kd_value_list");
  KD_ASSERT_ERR(kd_value_tuple(NULL, 1, &out), KD_EINVAL, "kd_value_tuple");
  KD_ASSERT_ERR(kd_value_int_list((int64_t[]){1}, 1, NULL), KD_EINVAL, "out is NULL");

  /* Functions without a status tolerate NULL. */
  size_t len = 9;
  assert_null(kd_value_string_data(NULL, &len));
  assert_int_equal(len, 0);
  assert_int_equal(kd_value_list_size(NULL), 0);
  assert_null(kd_value_int_list_data(NULL));
  assert_null(kd_value_list_at(NULL, 0));
  assert_true(kd_value_equal(NULL, NULL));
  assert_false(kd_value_equal(&v, NULL));
  kd_value_copy(NULL, &v);
  kd_value c = kd_value_int(5);
  kd_value_copy(&c, NULL);
  assert_true(kd_value_is_none(&c));
}

/* ---- Strings --------------------------------------------------------------- */

static void test_string(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_value_string("hello world", 5, &v));
  assert_int_equal(v.tag, KD_VALUE_STRING);
  size_t len = 0;
  const char *p = kd_value_string_data(&v, &len);
  assert_int_equal(len, 5);
  KD_ASSERT_STR_EQ(p, "hello"); /* NUL-terminated */
  assert_ptr_equal(kd_value_string_data(&v, NULL), p);

  /* A copy shares the payload; destroying one leaves the other. */
  kd_value c;
  kd_value_copy(&c, &v);
  assert_ptr_equal(kd_value_string_data(&c, NULL), p);
  assert_true(kd_value_equal(&v, &c));
  kd_value_destroy(&v);
  assert_true(kd_value_is_none(&v));
  KD_ASSERT_STR_EQ(kd_value_string_data(&c, NULL), "hello");

  kd_value other;
  KD_ASSERT_OK(kd_value_string("hellp", 5, &other));
  assert_false(kd_value_equal(&c, &other));
  kd_value_destroy(&other);
  KD_ASSERT_OK(kd_value_string("hell", 4, &other));
  assert_false(kd_value_equal(&c, &other));
  kd_value_destroy(&other);
  kd_value_destroy(&c);

  /* Embedded NULs and the empty string (NULL text with len 0). */
  KD_ASSERT_OK(kd_value_string("a\0b", 3, &v));
  p = kd_value_string_data(&v, &len);
  assert_int_equal(len, 3);
  assert_memory_equal(p, "a\0b", 4);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_string(NULL, 0, &v));
  KD_ASSERT_STR_EQ(kd_value_string_data(&v, &len), "");
  assert_int_equal(len, 0);
  kd_value_destroy(&v);

  /* Not a string. */
  kd_value i = kd_value_int(1);
  len = 4;
  assert_null(kd_value_string_data(&i, &len));
  assert_int_equal(len, 0);
}

/* ---- Typed lists ------------------------------------------------------------ */

static void test_typed_lists(void **state) {
  (void)state;
  kd_value il, dl, bl;
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1, -2, 3}, 3, &il));
  KD_ASSERT_OK(kd_value_double_list((double[]){0.5, 1.5}, 2, &dl));
  KD_ASSERT_OK(kd_value_bool_list((bool[]){true, false, true, true}, 4, &bl));
  assert_int_equal(il.tag, KD_VALUE_INT_LIST);
  assert_int_equal(dl.tag, KD_VALUE_DOUBLE_LIST);
  assert_int_equal(bl.tag, KD_VALUE_BOOL_LIST);
  assert_int_equal(kd_value_list_size(&il), 3);
  assert_int_equal(kd_value_list_size(&dl), 2);
  assert_int_equal(kd_value_list_size(&bl), 4);

  const int64_t *ip = kd_value_int_list_data(&il);
  assert_non_null(ip);
  assert_int_equal(ip[0], 1);
  assert_int_equal(ip[1], -2);
  assert_int_equal(ip[2], 3);
  const double *dp = kd_value_double_list_data(&dl);
  assert_true(dp[0] == 0.5 && dp[1] == 1.5);
  const bool *bp = kd_value_bool_list_data(&bl);
  assert_true(bp[0] && !bp[1] && bp[2] && bp[3]);

  /* The wrong accessor gives NULL; list_at is for generic lists only. */
  assert_null(kd_value_double_list_data(&il));
  assert_null(kd_value_bool_list_data(&il));
  assert_null(kd_value_tensor_list_data(&il));
  assert_null(kd_value_int_list_data(&dl));
  assert_null(kd_value_list_at(&il, 0));
  kd_value i = kd_value_int(3);
  assert_int_equal(kd_value_list_size(&i), 0);
  assert_null(kd_value_int_list_data(&i));

  /* A list is not a Scalar or an int. */
  int64_t x;
  KD_ASSERT_ERR(kd_value_get_int(&il, &x), KD_ETYPE, "expected a value of type int, found int[]");

  /* Copies share; the source array was copied. */
  int64_t src[2] = {10, 20};
  kd_value c1;
  KD_ASSERT_OK(kd_value_int_list(src, 2, &c1));
  src[0] = 99;
  assert_int_equal(kd_value_int_list_data(&c1)[0], 10);
  kd_value c2;
  kd_value_copy(&c2, &c1);
  assert_ptr_equal(kd_value_int_list_data(&c1), kd_value_int_list_data(&c2));
  kd_value_destroy(&c1);
  assert_int_equal(kd_value_int_list_data(&c2)[1], 20);
  kd_value_destroy(&c2);

  /* Empty lists, with NULL items. */
  kd_value e;
  KD_ASSERT_OK(kd_value_int_list(NULL, 0, &e));
  assert_int_equal(e.tag, KD_VALUE_INT_LIST);
  assert_int_equal(kd_value_list_size(&e), 0);
  kd_value_destroy(&e);
  KD_ASSERT_OK(kd_value_bool_list(NULL, 0, &e));
  kd_value_destroy(&e);

  kd_value_destroy(&il);
  kd_value_destroy(&dl);
  kd_value_destroy(&bl);
  assert_true(kd_value_is_none(&il));
}

/* ---- Tensors and reference counts ------------------------------------------- */

static void test_tensor_value(void **state) {
  (void)state;
  kd_tensor *t = new_tensor();
  kd_value v = kd_value_tensor(t);
  assert_int_equal(v.tag, KD_VALUE_TENSOR);
  assert_int_equal(kd_tensor_refcount(t), 2);

  kd_tensor *got = NULL;
  KD_ASSERT_OK(kd_value_get_tensor(&v, &got));
  assert_ptr_equal(got, t);
  assert_int_equal(kd_tensor_refcount(t), 2); /* borrowed */

  int64_t i;
  KD_ASSERT_ERR(kd_value_get_int(&v, &i), KD_ETYPE, "expected a value of type int, found Tensor");
  kd_scalar s;
  KD_ASSERT_ERR(kd_value_get_scalar(&v, &s), KD_ETYPE,
                "expected a value of type Scalar, found Tensor");

  kd_value c;
  kd_value_copy(&c, &v);
  assert_int_equal(kd_tensor_refcount(t), 3);
  assert_true(kd_value_equal(&v, &c));

  kd_value m;
  kd_value_move(&m, &c);
  assert_true(kd_value_is_none(&c));
  assert_int_equal(kd_tensor_refcount(t), 3);

  kd_value_destroy(&m);
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_value_destroy(&v);
  assert_int_equal(kd_tensor_refcount(t), 1);
  assert_true(kd_value_is_none(&v));

  /* Identity, not contents. */
  kd_tensor *u = new_tensor();
  kd_value a = kd_value_tensor(t), b = kd_value_tensor(u);
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  kd_value_destroy(&b);

  /* NULL gives None. */
  kd_value n = kd_value_tensor(NULL);
  assert_true(kd_value_is_none(&n));

  kd_tensor_release(u);
  kd_tensor_release(t);
}

static void test_tensor_lists(void **state) {
  (void)state;
  kd_tensor *a = new_tensor(), *b = new_tensor();
  kd_value tl;
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *[]){a, b, a}, 3, &tl));
  assert_int_equal(tl.tag, KD_VALUE_TENSOR_LIST);
  assert_int_equal(kd_tensor_refcount(a), 3);
  assert_int_equal(kd_tensor_refcount(b), 2);
  assert_int_equal(kd_value_list_size(&tl), 3);
  kd_tensor *const *items = kd_value_tensor_list_data(&tl);
  assert_ptr_equal(items[0], a);
  assert_ptr_equal(items[1], b);
  assert_ptr_equal(items[2], a);
  assert_null(kd_value_int_list_data(&tl));

  /* A copy shares the list: no tensor retains. */
  kd_value c;
  kd_value_copy(&c, &tl);
  assert_int_equal(kd_tensor_refcount(a), 3);
  kd_value_destroy(&tl);
  assert_int_equal(kd_tensor_refcount(a), 3);
  kd_value_destroy(&c);
  assert_int_equal(kd_tensor_refcount(a), 1);
  assert_int_equal(kd_tensor_refcount(b), 1);

  /* NULL in a Tensor[] is an error and retains nothing. */
  kd_value bad = kd_value_int(1);
  KD_ASSERT_ERR(kd_value_tensor_list((kd_tensor *[]){a, NULL}, 2, &bad), KD_EINVAL,
                "element 1 is NULL");
  assert_true(kd_value_is_none(&bad));
  assert_int_equal(kd_tensor_refcount(a), 1);

  /* ...and None in a Tensor?[]. */
  kd_value ol;
  KD_ASSERT_OK(kd_value_opt_tensor_list((kd_tensor *[]){NULL, b}, 2, &ol));
  assert_int_equal(ol.tag, KD_VALUE_OPT_TENSOR_LIST);
  assert_int_equal(kd_tensor_refcount(b), 2);
  items = kd_value_tensor_list_data(&ol);
  assert_null(items[0]);
  assert_ptr_equal(items[1], b);
  kd_value_destroy(&ol);
  assert_int_equal(kd_tensor_refcount(b), 1);

  /* Empty. */
  kd_value e;
  KD_ASSERT_OK(kd_value_tensor_list(NULL, 0, &e));
  assert_int_equal(kd_value_list_size(&e), 0);
  kd_value_destroy(&e);

  kd_tensor_release(a);
  kd_tensor_release(b);
}

static void test_generic_lists_and_tuples(void **state) {
  (void)state;
  kd_tensor *t = new_tensor();
  kd_value tv = kd_value_tensor(t); /* refcount 2 */
  kd_value str;
  KD_ASSERT_OK(kd_value_string("s", 1, &str));

  kd_value items[3] = {kd_value_int(1), tv, str};
  kd_value list;
  KD_ASSERT_OK(kd_value_list(items, 3, &list));
  assert_int_equal(list.tag, KD_VALUE_LIST);
  assert_int_equal(kd_tensor_refcount(t), 3); /* items were copied */
  assert_int_equal(kd_value_list_size(&list), 3);
  const kd_value *e0 = kd_value_list_at(&list, 0);
  assert_non_null(e0);
  assert_int_equal(e0->tag, KD_VALUE_INT);
  assert_int_equal(e0->u.i, 1);
  assert_ptr_equal(kd_value_list_at(&list, 1)->u.t, t);
  /* Strings are shared, not copied. */
  assert_ptr_equal(kd_value_string_data(kd_value_list_at(&list, 2), NULL),
                   kd_value_string_data(&str, NULL));
  assert_null(kd_value_list_at(&list, 3));
  assert_null(kd_value_int_list_data(&list));

  kd_value tup;
  KD_ASSERT_OK(kd_value_tuple(items, 2, &tup));
  assert_int_equal(tup.tag, KD_VALUE_TUPLE);
  assert_int_equal(kd_tensor_refcount(t), 4);
  assert_ptr_equal(kd_value_list_at(&tup, 1)->u.t, t);
  assert_false(kd_value_equal(&list, &tup));

  kd_value_destroy(&list);
  assert_int_equal(kd_tensor_refcount(t), 3);
  kd_value_destroy(&tup);
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_value_destroy(&tv);
  kd_value_destroy(&str);
  assert_int_equal(kd_tensor_refcount(t), 1);

  /* The empty tuple. */
  kd_value empty;
  KD_ASSERT_OK(kd_value_tuple(NULL, 0, &empty));
  assert_int_equal(kd_value_list_size(&empty), 0);
  assert_null(kd_value_list_at(&empty, 0));
  kd_value_destroy(&empty);

  kd_tensor_release(t);
}

/* A tuple holding a tensor list, a tensor and a list holding another tuple. */
static void test_nested(void **state) {
  (void)state;
  kd_tensor *a = new_tensor(), *b = new_tensor();

  kd_value tl;
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *[]){a, b}, 2, &tl));
  kd_value ta = kd_value_tensor(a);
  kd_value inner;
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){ta, kd_value_double(0.5)}, 2, &inner));
  kd_value list;
  KD_ASSERT_OK(kd_value_list(&inner, 1, &list));
  kd_value outer;
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){tl, ta, list}, 3, &outer));
  /* a: our own + tl + ta + inner's copy of ta + outer's copy of ta. Lists and
   * tuples copied into others are shared, not re-retained element-wise. */
  assert_int_equal(kd_tensor_refcount(a), 5);
  assert_int_equal(kd_tensor_refcount(b), 2);

  /* Drop everything but `outer`: the tensors stay alive through it. */
  kd_value_destroy(&tl);
  kd_value_destroy(&ta);
  kd_value_destroy(&inner);
  kd_value_destroy(&list);
  assert_int_equal(kd_tensor_refcount(a), 4);
  assert_int_equal(kd_tensor_refcount(b), 2);

  const kd_value *l = kd_value_list_at(&outer, 2);
  assert_int_equal(l->tag, KD_VALUE_LIST);
  const kd_value *in = kd_value_list_at(l, 0);
  assert_int_equal(in->tag, KD_VALUE_TUPLE);
  assert_ptr_equal(kd_value_list_at(in, 0)->u.t, a);

  /* A deep copy equal to it, built separately. */
  kd_value tl2, ta2, inner2, list2, outer2;
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *[]){a, b}, 2, &tl2));
  ta2 = kd_value_tensor(a);
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){ta2, kd_value_double(0.5)}, 2, &inner2));
  KD_ASSERT_OK(kd_value_list(&inner2, 1, &list2));
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){tl2, ta2, list2}, 3, &outer2));
  assert_true(kd_value_equal(&outer, &outer2));
  kd_value_destroy(&outer2);
  kd_value_destroy(&list2);
  kd_value_destroy(&inner2);
  kd_value_destroy(&ta2);
  kd_value_destroy(&tl2);
  assert_int_equal(kd_tensor_refcount(a), 4);

  kd_value_destroy(&outer);
  assert_int_equal(kd_tensor_refcount(a), 1);
  assert_int_equal(kd_tensor_refcount(b), 1);
  kd_tensor_release(a);
  kd_tensor_release(b);
}

/* ---- Equality ---------------------------------------------------------------- */

static void test_equal(void **state) {
  (void)state;
  kd_value a, b;
  a = kd_value_int(3);
  b = kd_value_int(3);
  assert_true(kd_value_equal(&a, &b));
  b = kd_value_double(3.0);
  assert_false(kd_value_equal(&a, &b)); /* different tags */
  a = kd_value_double(3.0);
  assert_true(kd_value_equal(&a, &b));
  a = kd_value_double(NAN);
  assert_false(kd_value_equal(&a, &a)); /* NaN */
  a = kd_value_bool(true);
  b = kd_value_bool(false);
  assert_false(kd_value_equal(&a, &b));
  a = kd_value_complex(1, 2);
  b = kd_value_complex(1, 2);
  assert_true(kd_value_equal(&a, &b));
  b = kd_value_complex(1, 3);
  assert_false(kd_value_equal(&a, &b));
  a = kd_value_scalar(kd_scalar_int(1));
  b = kd_value_scalar(kd_scalar_int(1));
  assert_true(kd_value_equal(&a, &b));
  b = kd_value_scalar(kd_scalar_double(1));
  assert_false(kd_value_equal(&a, &b));
  a = kd_value_dtype(KD_FLOAT32);
  b = kd_value_dtype(KD_FLOAT64);
  assert_false(kd_value_equal(&a, &b));
  a = kd_value_layout(KD_LAYOUT_STRIDED);
  b = kd_value_layout(KD_LAYOUT_STRIDED);
  assert_true(kd_value_equal(&a, &b));
  kd_device c0 = {KD_DEVICE_CUDA, 0}, c1 = {KD_DEVICE_CUDA, 1};
  a = kd_value_device(c0);
  b = kd_value_device(c1);
  assert_false(kd_value_equal(&a, &b));
  b = kd_value_device(c0);
  assert_true(kd_value_equal(&a, &b));
  a = kd_value_memory_format(KD_MEMORY_FORMAT_PRESERVE);
  b = kd_value_memory_format(KD_MEMORY_FORMAT_CONTIGUOUS);
  assert_false(kd_value_equal(&a, &b));
  a = kd_value_none();
  b = kd_value_none();
  assert_true(kd_value_equal(&a, &b));

  /* Lists: kind, length and elements. */
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1, 2}, 2, &a));
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1, 2}, 2, &b));
  assert_true(kd_value_equal(&a, &b));
  kd_value_destroy(&b);
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1, 3}, 2, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&b);
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1}, 1, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&b);
  KD_ASSERT_OK(kd_value_double_list((double[]){1, 2}, 2, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&b);
  /* A generic list of ints is not an int[]. */
  KD_ASSERT_OK(kd_value_list((kd_value[]){kd_value_int(1), kd_value_int(2)}, 2, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  KD_ASSERT_OK(kd_value_list((kd_value[]){kd_value_int(1), kd_value_int(2)}, 2, &a));
  assert_true(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){kd_value_int(1), kd_value_int(2)}, 2, &a));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  kd_value_destroy(&b);

  KD_ASSERT_OK(kd_value_double_list((double[]){0.5}, 1, &a));
  KD_ASSERT_OK(kd_value_double_list((double[]){0.5}, 1, &b));
  assert_true(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  kd_value_destroy(&b);
  KD_ASSERT_OK(kd_value_bool_list((bool[]){true, false}, 2, &a));
  KD_ASSERT_OK(kd_value_bool_list((bool[]){true, true}, 2, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  kd_value_destroy(&b);

  kd_tensor *t = new_tensor();
  KD_ASSERT_OK(kd_value_opt_tensor_list((kd_tensor *[]){t, NULL}, 2, &a));
  KD_ASSERT_OK(kd_value_opt_tensor_list((kd_tensor *[]){t, NULL}, 2, &b));
  assert_true(kd_value_equal(&a, &b));
  kd_value_destroy(&b);
  KD_ASSERT_OK(kd_value_opt_tensor_list((kd_tensor *[]){NULL, t}, 2, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&b);
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *[]){t}, 1, &b));
  assert_false(kd_value_equal(&a, &b));
  kd_value_destroy(&a);
  kd_value_destroy(&b);
  kd_tensor_release(t);
}

/* ---- Formatting --------------------------------------------------------------- */

static void test_format_scalars(void **state) {
  (void)state;
  kd_value v = kd_value_none();
  KD_ASSERT_STR_EQ(fmt(&v), "None");
  KD_ASSERT_STR_EQ(fmt(NULL), "None");
  v = kd_value_bool(true);
  KD_ASSERT_STR_EQ(fmt(&v), "True");
  v = kd_value_bool(false);
  KD_ASSERT_STR_EQ(fmt(&v), "False");
  v = kd_value_int(3);
  KD_ASSERT_STR_EQ(fmt(&v), "3");
  v = kd_value_int(INT64_MIN);
  KD_ASSERT_STR_EQ(fmt(&v), "-9223372036854775808");
  v = kd_value_double(2.5);
  KD_ASSERT_STR_EQ(fmt(&v), "2.5");
  v = kd_value_double(1e-5);
  KD_ASSERT_STR_EQ(fmt(&v), "1e-05");
  v = kd_value_complex(1, 2);
  KD_ASSERT_STR_EQ(fmt(&v), "(1+2j)");
  v = kd_value_scalar(kd_scalar_int(-7));
  KD_ASSERT_STR_EQ(fmt(&v), "-7");
  v = kd_value_scalar(kd_scalar_double(0.25));
  KD_ASSERT_STR_EQ(fmt(&v), "0.25");
  v = kd_value_scalar(kd_scalar_bool(false));
  KD_ASSERT_STR_EQ(fmt(&v), "False");
  v = kd_value_dtype(KD_FLOAT32);
  KD_ASSERT_STR_EQ(fmt(&v), "float32");
  v = kd_value_dtype(KD_COMPLEX128);
  KD_ASSERT_STR_EQ(fmt(&v), "complex128");
  v = kd_value_layout(KD_LAYOUT_STRIDED);
  KD_ASSERT_STR_EQ(fmt(&v), "strided");
  v = kd_value_device(kd_device_cpu());
  KD_ASSERT_STR_EQ(fmt(&v), "cpu");
  kd_device cuda1 = {KD_DEVICE_CUDA, 1};
  v = kd_value_device(cuda1);
  KD_ASSERT_STR_EQ(fmt(&v), "cuda:1");
  v = kd_value_memory_format(KD_MEMORY_FORMAT_CONTIGUOUS);
  KD_ASSERT_STR_EQ(fmt(&v), "contiguous_format");
  v = kd_value_memory_format(KD_MEMORY_FORMAT_CHANNELS_LAST);
  KD_ASSERT_STR_EQ(fmt(&v), "channels_last");
}

static void test_format_strings(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_value_string("hi", 2, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "\"hi\"");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_string("", 0, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "\"\"");
  kd_value_destroy(&v);
  static const char text[] = "a\"b\\c\nd\te\rf\0g\x01";
  KD_ASSERT_OK(kd_value_string(text, sizeof text - 1, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "\"a\\\"b\\\\c\\nd\\te\\rf\\x00g\\x01\"");
  kd_value_destroy(&v);
  /* UTF-8 passes through. */
  KD_ASSERT_OK(kd_value_string("\xc3\xa9", 2, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "\"\xc3\xa9\"");
  kd_value_destroy(&v);
}

static void test_format_lists(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1, 2}, 2, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "[1, 2]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_int_list(NULL, 0, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "[]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_double_list((double[]){1.5, 1e-05}, 2, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "[1.5, 1e-05]");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_bool_list((bool[]){true, false}, 2, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "[True, False]");
  kd_value_destroy(&v);

  KD_ASSERT_OK(kd_value_tuple((kd_value[]){kd_value_int(1), kd_value_double(2.5)}, 2, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "(1, 2.5)");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){kd_value_int(1)}, 1, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "(1,)");
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_value_tuple(NULL, 0, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "()");
  kd_value_destroy(&v);

  kd_value s, inner;
  KD_ASSERT_OK(kd_value_string("x", 1, &s));
  KD_ASSERT_OK(kd_value_tuple((kd_value[]){kd_value_none(), s}, 2, &inner));
  KD_ASSERT_OK(kd_value_list((kd_value[]){kd_value_bool(true), inner, kd_value_dtype(KD_INT8)},
                             3, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "[True, (None, \"x\"), int8]");
  kd_value_destroy(&v);
  kd_value_destroy(&inner);
  kd_value_destroy(&s);
  KD_ASSERT_OK(kd_value_list(NULL, 0, &v));
  KD_ASSERT_STR_EQ(fmt(&v), "[]");
  kd_value_destroy(&v);
}

static void test_format_tensors(void **state) {
  (void)state;
  kd_tensor *t = new_tensor();
  char expect[1024];
  snprintf(expect, sizeof expect, "%s", describe(t));
  assert_true(strlen(expect) > 0);

  kd_value v = kd_value_tensor(t);
  KD_ASSERT_STR_EQ(fmt(&v), expect);
  kd_value_destroy(&v);

  char want[3000];
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *[]){t, t}, 2, &v));
  snprintf(want, sizeof want, "[%s, %s]", expect, expect);
  KD_ASSERT_STR_EQ(fmt(&v), want);
  kd_value_destroy(&v);

  KD_ASSERT_OK(kd_value_opt_tensor_list((kd_tensor *[]){NULL, t}, 2, &v));
  snprintf(want, sizeof want, "[None, %s]", expect);
  KD_ASSERT_STR_EQ(fmt(&v), want);
  kd_value_destroy(&v);

  kd_value tv = kd_value_tensor(t);
  KD_ASSERT_OK(kd_value_tuple(&tv, 1, &v));
  snprintf(want, sizeof want, "(%s,)", expect);
  KD_ASSERT_STR_EQ(fmt(&v), want);
  kd_value_destroy(&v);
  kd_value_destroy(&tv);

  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_tensor_release(t);
}

static void test_format_truncation(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){100, 200, 300}, 3, &v));
  /* "[100, 200, 300]" is 15 bytes. */
  assert_int_equal(kd_value_format(&v, NULL, 0), 15);
  char buf[8];
  memset(buf, 'z', sizeof buf);
  assert_int_equal(kd_value_format(&v, buf, sizeof buf), 15);
  KD_ASSERT_STR_EQ(buf, "[100, 2");
  assert_int_equal(kd_value_format(&v, buf, 1), 15);
  KD_ASSERT_STR_EQ(buf, "");
  kd_value_destroy(&v);

  kd_value d = kd_value_double(2.5);
  assert_int_equal(kd_value_format(&d, buf, 2), 3);
  KD_ASSERT_STR_EQ(buf, "2");
  kd_device cuda1 = {KD_DEVICE_CUDA, 1};
  d = kd_value_device(cuda1);
  assert_int_equal(kd_value_format(&d, buf, 3), 6);
  KD_ASSERT_STR_EQ(buf, "cu");

  kd_tensor *t = new_tensor();
  size_t want = kd_tensor_describe(t, NULL, 0);
  d = kd_value_tensor(t);
  assert_int_equal(kd_value_format(&d, buf, sizeof buf), want);
  assert_int_equal(strlen(buf), sizeof buf - 1);
  kd_value_destroy(&d);
  kd_tensor_release(t);
}

/* ---- The stack ------------------------------------------------------------------ */

static void test_stack_basics(void **state) {
  (void)state;
  kd_stack s;
  memset(&s, 0, sizeof s); /* zeroed memory is an empty stack */
  assert_null(kd_stack_peek(&s, 0));

  kd_value v = kd_value_int(1);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  assert_true(kd_value_is_none(&v)); /* moved */
  v = kd_value_double(2.5);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  v = kd_value_bool(true);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  assert_int_equal(s.size, 3);
  assert_true(s.capacity >= 3);

  /* items[size - n + i] is argument i of n. */
  assert_int_equal(s.items[0].tag, KD_VALUE_INT);
  assert_int_equal(s.items[1].tag, KD_VALUE_DOUBLE);
  assert_int_equal(kd_stack_peek(&s, 0)->tag, KD_VALUE_BOOL);
  assert_int_equal(kd_stack_peek(&s, 1)->tag, KD_VALUE_DOUBLE);
  assert_int_equal(kd_stack_peek(&s, 2)->tag, KD_VALUE_INT);
  assert_null(kd_stack_peek(&s, 3));
  assert_null(kd_stack_peek(NULL, 0));

  kd_value out;
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_int_equal(out.tag, KD_VALUE_BOOL);
  assert_int_equal(s.size, 2);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_true(out.u.d == 2.5);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_int_equal(out.u.i, 1);
  assert_int_equal(s.size, 0);

  out = kd_value_int(9);
  KD_ASSERT_ERR(kd_stack_pop(&s, &out), KD_ESTATE, "the stack is empty");
  assert_true(kd_value_is_none(&out));

  kd_stack_free(&s);
  assert_null(s.items);
  assert_int_equal(s.size, 0);
  assert_int_equal(s.capacity, 0);
  kd_stack_free(&s); /* twice is fine */
}

static void test_stack_ownership(void **state) {
  (void)state;
  kd_tensor *t = new_tensor();
  kd_stack s;
  kd_stack_init(&s);

  kd_value v = kd_value_tensor(t);
  assert_int_equal(kd_tensor_refcount(t), 2);
  KD_ASSERT_OK(kd_stack_push_copy(&s, &v));
  assert_int_equal(kd_tensor_refcount(t), 3);
  assert_int_equal(v.tag, KD_VALUE_TENSOR); /* the caller keeps it */
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  assert_true(kd_value_is_none(&v));
  assert_int_equal(kd_tensor_refcount(t), 3); /* moved, not retained */

  kd_value list;
  KD_ASSERT_OK(kd_value_tensor_list((kd_tensor *[]){t}, 1, &list));
  KD_ASSERT_OK(kd_stack_push(&s, &list));
  assert_int_equal(kd_tensor_refcount(t), 4);

  kd_value out;
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_int_equal(out.tag, KD_VALUE_TENSOR_LIST);
  assert_int_equal(kd_tensor_refcount(t), 4); /* the caller owns it now */
  kd_value_destroy(&out);
  assert_int_equal(kd_tensor_refcount(t), 3);

  KD_ASSERT_OK(kd_stack_drop(&s, 1));
  assert_int_equal(kd_tensor_refcount(t), 2);
  assert_int_equal(s.size, 1);

  KD_ASSERT_ERR(kd_stack_drop(&s, 2), KD_ESTATE, "cannot drop 2 values from a stack of 1");
  assert_int_equal(s.size, 1); /* nothing dropped */
  assert_int_equal(kd_tensor_refcount(t), 2);
  KD_ASSERT_OK(kd_stack_drop(&s, 0));

  size_t cap = s.capacity;
  kd_stack_clear(&s);
  assert_int_equal(s.size, 0);
  assert_int_equal(s.capacity, cap); /* the array stays */
  assert_non_null(s.items);
  assert_int_equal(kd_tensor_refcount(t), 1);

  /* Free destroys what is left. */
  v = kd_value_tensor(t);
  KD_ASSERT_OK(kd_stack_push(&s, &v));
  KD_ASSERT_OK(kd_stack_push_copy(&s, kd_stack_peek(&s, 0)));
  assert_int_equal(kd_tensor_refcount(t), 3);
  kd_stack_free(&s);
  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_tensor_release(t);
}

static void test_stack_growth_and_reserve(void **state) {
  (void)state;
  kd_stack s;
  kd_stack_init(&s);
  KD_ASSERT_OK(kd_stack_reserve(&s, 0));
  KD_ASSERT_OK(kd_stack_reserve(&s, 5));
  assert_true(s.capacity >= 5);
  size_t cap = s.capacity;
  KD_ASSERT_OK(kd_stack_reserve(&s, 2)); /* never shrinks */
  assert_int_equal(s.capacity, cap);

  size_t grows = 0, last = s.capacity;
  for (int64_t i = 0; i < 1000; i++) {
    kd_value v = kd_value_int(i);
    KD_ASSERT_OK(kd_stack_push(&s, &v));
    if (s.capacity != last) {
      grows++;
      last = s.capacity;
    }
  }
  assert_int_equal(s.size, 1000);
  assert_true(grows <= 10); /* geometric */
  for (size_t d = 0; d < 1000; d++) assert_int_equal(kd_stack_peek(&s, d)->u.i, 999 - (int64_t)d);

  /* Strings on the stack, to let the sanitizers see they are freed. */
  kd_value str;
  KD_ASSERT_OK(kd_value_string("abc", 3, &str));
  KD_ASSERT_OK(kd_stack_push(&s, &str));
  KD_ASSERT_OK(kd_stack_reserve(&s, 5000));
  assert_true(s.capacity >= 5000);
  KD_ASSERT_STR_EQ(kd_value_string_data(kd_stack_peek(&s, 0), NULL), "abc");
  assert_int_equal(kd_stack_peek(&s, 1000)->u.i, 0);

  KD_ASSERT_OK(kd_stack_drop(&s, 1001));
  assert_int_equal(s.size, 0);
  kd_stack_free(&s);
}

/* The in-place push helpers: both the inline path (room) and the growing
 * one (an empty stack), references, flags, None for a NULL tensor, errors. */
static void test_stack_push_helpers(void **state) {
  (void)state;
  kd_tensor *t = new_tensor();
  for (int room = 0; room < 2; room++) {
    kd_stack s;
    kd_stack_init(&s);
    if (room) KD_ASSERT_OK(kd_stack_reserve(&s, 16));
    KD_ASSERT_OK(kd_stack_push_tensor(&s, t));
    assert_int_equal(kd_tensor_refcount(t), 2);
    KD_ASSERT_OK(kd_stack_push_tensor_borrowed(&s, t));
    assert_int_equal(kd_tensor_refcount(t), 2); /* no reference taken */
    KD_ASSERT_OK(kd_stack_push_int(&s, -7));
    KD_ASSERT_OK(kd_stack_push_double(&s, 2.5));
    KD_ASSERT_OK(kd_stack_push_bool(&s, true));
    KD_ASSERT_OK(kd_stack_push_tensor(&s, NULL));
    KD_ASSERT_OK(kd_stack_push_tensor_borrowed(&s, NULL));
    assert_int_equal(s.size, 7);
    assert_true(kd_value_is_none(kd_stack_peek(&s, 0)));
    assert_true(kd_value_is_none(kd_stack_peek(&s, 1)));
    assert_int_equal(kd_stack_peek(&s, 2)->tag, KD_VALUE_BOOL);
    assert_true(kd_stack_peek(&s, 2)->u.b);
    assert_int_equal(kd_stack_peek(&s, 3)->tag, KD_VALUE_DOUBLE);
    assert_true(kd_stack_peek(&s, 3)->u.d == 2.5);
    assert_int_equal(kd_stack_peek(&s, 4)->tag, KD_VALUE_INT);
    assert_int_equal(kd_stack_peek(&s, 4)->u.i, -7);
    const kd_value *b = kd_stack_peek(&s, 5), *o = kd_stack_peek(&s, 6);
    assert_int_equal(b->tag, KD_VALUE_TENSOR);
    assert_true(b->flags & KD_VALUE_BORROWED);
    assert_ptr_equal(b->u.t, t);
    assert_int_equal(o->tag, KD_VALUE_TENSOR);
    assert_int_equal(o->flags, 0);
    assert_ptr_equal(o->u.t, t);
    kd_stack_free(&s); /* drops the owned reference only */
    assert_int_equal(kd_tensor_refcount(t), 1);
  }
  KD_ASSERT_ERR(kd_stack_push_tensor(NULL, t), KD_EINVAL, "kd_stack_push: stack is NULL");
  KD_ASSERT_ERR(kd_stack_push_tensor_borrowed(NULL, t), KD_EINVAL, "stack is NULL");
  KD_ASSERT_ERR(kd_stack_push_int(NULL, 1), KD_EINVAL, "stack is NULL");
  KD_ASSERT_ERR(kd_stack_push_double(NULL, 1), KD_EINVAL, "stack is NULL");
  KD_ASSERT_ERR(kd_stack_push_bool(NULL, 1), KD_EINVAL, "stack is NULL");
  assert_int_equal(kd_tensor_refcount(t), 1); /* a failed push takes nothing */
  kd_tensor_release(t);
}

static void test_stack_null_arguments(void **state) {
  (void)state;
  kd_stack s;
  kd_stack_init(&s);
  kd_value v = kd_value_int(1), out;
  KD_ASSERT_ERR(kd_stack_push(NULL, &v), KD_EINVAL, "kd_stack_push");
  KD_ASSERT_ERR(kd_stack_push(&s, NULL), KD_EINVAL, "kd_stack_push");
  KD_ASSERT_ERR(kd_stack_push_copy(NULL, &v), KD_EINVAL, "kd_stack_push_copy");
  KD_ASSERT_ERR(kd_stack_push_copy(&s, NULL), KD_EINVAL, "kd_stack_push_copy");
  KD_ASSERT_ERR(kd_stack_pop(NULL, &out), KD_EINVAL, "kd_stack_pop");
  KD_ASSERT_ERR(kd_stack_pop(&s, NULL), KD_EINVAL, "kd_stack_pop");
  KD_ASSERT_ERR(kd_stack_drop(NULL, 0), KD_EINVAL, "kd_stack_drop");
  KD_ASSERT_ERR(kd_stack_reserve(NULL, 1), KD_EINVAL, "kd_stack_reserve");
  KD_ASSERT_ERR(kd_stack_drop(&s, 1), KD_ESTATE, "cannot drop 1 values from a stack of 0");
  kd_stack_clear(NULL);
  kd_stack_free(NULL);
  assert_int_equal(v.tag, KD_VALUE_INT);
  kd_stack_free(&s);
}

/* Borrowed values hold no reference; copies and kd_value_own make owned ones. */
static void test_borrowed_values(void **state) {
  (void)state;
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(1, (int64_t[]){3}, KD_FLOAT32, kd_device_cpu(), &t));
  kd_value b = kd_value_tensor_borrowed(t);
  assert_int_equal(b.tag, KD_VALUE_TENSOR);
  assert_true(b.flags & KD_VALUE_BORROWED);
  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_value c;
  kd_value_copy(&c, &b);
  assert_int_equal(c.flags, 0);
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_value_destroy(&b); /* drops nothing */
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_value_destroy(&c);
  assert_int_equal(kd_tensor_refcount(t), 1);
  /* On a stack: pushing, dropping and clearing leave the count alone. */
  kd_stack s;
  kd_stack_init(&s);
  b = kd_value_tensor_borrowed(t);
  KD_ASSERT_OK(kd_stack_push(&s, &b));
  assert_int_equal(kd_tensor_refcount(t), 1);
  KD_ASSERT_OK(kd_stack_push_copy(&s, kd_stack_peek(&s, 0))); /* the copy owns */
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_stack_clear(&s);
  assert_int_equal(kd_tensor_refcount(t), 1);
  /* kd_value_own takes the reference the value lacked. */
  b = kd_value_tensor_borrowed(t);
  kd_value_own(&b);
  assert_int_equal(b.flags, 0);
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_value_own(&b); /* no-op on an owned value */
  assert_int_equal(kd_tensor_refcount(t), 2);
  kd_value_destroy(&b);
  kd_value_own(NULL);
  assert_true(kd_value_is_none(&(kd_value){KD_VALUE_NONE, 0, {0}}));
  b = kd_value_tensor_borrowed(NULL);
  assert_true(kd_value_is_none(&b));
  kd_stack_free(&s);
  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tag_names),
      cmocka_unit_test(test_zeroed_is_none),
      cmocka_unit_test(test_bool),
      cmocka_unit_test(test_int),
      cmocka_unit_test(test_double),
      cmocka_unit_test(test_complex),
      cmocka_unit_test(test_scalar),
      cmocka_unit_test(test_enums),
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_string),
      cmocka_unit_test(test_typed_lists),
      cmocka_unit_test(test_tensor_value),
      cmocka_unit_test(test_tensor_lists),
      cmocka_unit_test(test_generic_lists_and_tuples),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_equal),
      cmocka_unit_test(test_format_scalars),
      cmocka_unit_test(test_format_strings),
      cmocka_unit_test(test_format_lists),
      cmocka_unit_test(test_format_tensors),
      cmocka_unit_test(test_format_truncation),
      cmocka_unit_test(test_stack_basics),
      cmocka_unit_test(test_stack_ownership),
      cmocka_unit_test(test_stack_growth_and_reserve),
      cmocka_unit_test(test_stack_null_arguments),
      cmocka_unit_test(test_stack_push_helpers),
      cmocka_unit_test(test_borrowed_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
