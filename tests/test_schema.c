/*
 * test_schema.c: the schema language: every type round-trips, accessors,
 * classification and signatures, default decoding, syntax errors.
 */
#include <math.h>
#include <stdlib.h>

#include "kd_test.h"

static kd_schema *parse_ok(const char *text) {
  kd_schema *s = NULL;
  kd_status st = kd_schema_parse(text, strlen(text), &s);
  if (st != KD_OK) fail_msg("parse of '%s' failed: %s", text, kd_last_error());
  assert_non_null(s);
  return s;
}

static void assert_format(const kd_schema *s, const char *expected) {
  char buf[2048];
  size_t n = kd_schema_format(s, buf, sizeof buf);
  assert_int_equal(n, strlen(expected));
  KD_ASSERT_STR_EQ(buf, expected);
}

/* Parses and prints back the same bytes. */
static void roundtrip(const char *text) {
  kd_schema *s = parse_ok(text);
  assert_format(s, text);
  kd_schema_free(s);
}

/* Parses `in` and prints `out`. */
static void normalizes(const char *in, const char *out) {
  kd_schema *s = parse_ok(in);
  assert_format(s, out);
  kd_schema_free(s);
}

static void parse_err(const char *text, const char *message) {
  kd_schema *s = (kd_schema *)(uintptr_t)1;
  print_message("parse_err: %s\n", text);
  KD_ASSERT_ERR(kd_schema_parse(text, strlen(text), &s), KD_ESYNTAX, message);
  assert_null(s);
}

static void sig_of(const char *text, char *buf, size_t cap) {
  kd_schema *s = parse_ok(text);
  size_t n = kd_schema_signature(s, buf, cap);
  assert_true(n < cap);
  kd_schema_free(s);
}

static kd_schema_kind kind_of(const char *text) {
  kd_schema *s = parse_ok(text);
  kd_schema_kind k = kd_schema_kind_of(s);
  kd_schema_free(s);
  return k;
}

/* ---- Round trips ---------------------------------------------------------- */

static void test_roundtrip_base_types(void **state) {
  (void)state;
  roundtrip("f(Tensor a, int b, SymInt c, float d, complex e, bool f, str g, Scalar h) -> Tensor");
  roundtrip("f(ScalarType a, Layout b, Device c, MemoryFormat d, Generator e, Dimname f) -> ()");
  roundtrip("f(Storage a, Stream b, QScheme c, Any d, NoneType e, number f, ConstQuantizerPtr g) -> ()");
  roundtrip("f(t x, t1 y) -> t");
  /* PyTorch 2.x: the index of a device (c10::DeviceIndex), an integer. */
  roundtrip("_cufft_set_plan_cache_max_size(DeviceIndex device_index, int max_size) -> ()");
  roundtrip("f(DeviceIndex? a=None, DeviceIndex b=-1) -> DeviceIndex");
  roundtrip("f(__torch__.torch.classes.quantized.Conv2dPackedParamsBase packed) -> Tensor");
  roundtrip("f(Tensor? a, int[] b, int[2] c, int[1]? d, Tensor?[] e, float[]? f) -> ()");
  roundtrip("f(Dict(str, Tensor) a, Future(int) b, (int, float) c, () d) -> (Tensor, int)");
  roundtrip("f(RRef(t) a, Union(int, str, NoneType) b, Dict(int, Dict(str, t[]))? c) -> Future(Tensor[])");
  roundtrip("f(Tensor[][] a, int?[]? b, (int, (str, bool))[] c) -> ((int, int))");
  roundtrip("f() -> ((int, int)[], int)");
}

static void test_roundtrip_names_and_markers(void **state) {
  (void)state;
  roundtrip("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  roundtrip("add(Tensor self) -> Tensor");
  roundtrip("my_ns::op(Tensor self) -> Tensor");
  roundtrip("f(Tensor a, *, int b, int c=2) -> ()");
  roundtrip("f(Tensor a, ...) -> ...");
  roundtrip("f(...) -> (Tensor, ...)");
  roundtrip("prim::Print(...) -> ()");
  roundtrip("f() -> (Tensor a, Tensor b)");
  roundtrip("f() -> Tensor a");
  roundtrip("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  /* Non-canonical spellings print canonically. */
  normalizes("  f( Tensor  a ,int b = 3 ) ->Tensor  ", "f(Tensor a, int b=3) -> Tensor");
  normalizes("f(Tensor a)\n  -> (Tensor)", "f(Tensor a) -> Tensor");
  normalizes("f(Tensor a, *) -> ()", "f(Tensor a) -> ()");
  normalizes("f(Tensor(a -> a) x) -> ()", "f(Tensor(a) x) -> ()");
}

static void test_roundtrip_alias(void **state) {
  (void)state;
  roundtrip("f(Tensor(a) self) -> Tensor(a)");
  roundtrip("f(Tensor(a!) self) -> Tensor(a!)");
  roundtrip("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
  roundtrip("f(Tensor(a|b) x) -> Tensor(a|b)");
  roundtrip("f(Tensor(a! -> a|b) x) -> ()");
  roundtrip("f(Tensor(a!)[] out) -> ()");
  roundtrip("f(Tensor[](a!) out) -> ()");
  roundtrip("f(Tensor(a)[](b) out) -> ()");
  roundtrip("f(Tensor(a!)? x) -> Tensor(a!)?");
  roundtrip("f(Tensor(*) x) -> ()");
  roundtrip("f(t(a) x, Dict(str, Tensor)(b!) d) -> ()");
  roundtrip("max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)");
}

static void test_roundtrip_defaults(void **state) {
  (void)state;
  roundtrip("f(int[2] a=[0,1], int[] b=[-2,-1], int[] c=[], int[2] d=1, int e=-100) -> ()");
  roundtrip("f(float a=1e-05, float b=-inf, float c=0.3333333333333333, complex d=1j) -> ()");
  roundtrip("f(str a='\"\\'\\\\', str b=\"\\\"'\\\\\", str c='mean', str? d=None) -> ()");
  roundtrip("f(ScalarType a=long, MemoryFormat b=contiguous_format, Layout c=strided) -> ()");
  roundtrip("f(int reduction=Mean, bool b=True, bool c=False, Device d=\"cpu\") -> ()");
  roundtrip("f(int[] a=[0, 1], t[][] b=[[1], []]) -> ()");
}

/* ---- Accessors ------------------------------------------------------------ */

static void test_accessors_names(void **state) {
  (void)state;
  kd_schema *s = parse_ok("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  KD_ASSERT_STR_EQ(kd_schema_namespace(s), "aten");
  KD_ASSERT_STR_EQ(kd_schema_name(s), "add_");
  KD_ASSERT_STR_EQ(kd_schema_overload(s), "Tensor");
  assert_int_equal(kd_schema_num_arguments(s), 3);
  assert_int_equal(kd_schema_num_returns(s), 1);
  assert_false(kd_schema_is_vararg(s));
  assert_false(kd_schema_is_varret(s));
  const kd_argument *self = kd_schema_argument(s, 0);
  KD_ASSERT_STR_EQ(kd_argument_name(self), "self");
  assert_false(kd_argument_kwarg_only(self));
  assert_true(kd_argument_is_write(self));
  assert_null(kd_argument_default(self));
  const kd_alias_info *al = kd_argument_alias(self);
  assert_non_null(al);
  assert_true(kd_alias_is_write(al));
  assert_int_equal(kd_alias_num_before(al), 1);
  KD_ASSERT_STR_EQ(kd_alias_before(al, 0), "a");
  assert_int_equal(kd_alias_num_after(al), 1);
  KD_ASSERT_STR_EQ(kd_alias_after(al, 0), "a");
  assert_null(kd_alias_before(al, 1));
  const kd_argument *alpha = kd_schema_argument(s, 2);
  assert_true(kd_argument_kwarg_only(alpha));
  KD_ASSERT_STR_EQ(kd_argument_default(alpha), "1");
  assert_false(kd_argument_is_write(alpha));
  assert_null(kd_argument_alias(alpha));
  assert_int_equal(kd_type_kind_of(kd_argument_type(alpha)), KD_TYPE_SCALAR);
  KD_ASSERT_STR_EQ(kd_type_name(kd_argument_type(alpha)), "Scalar");
  KD_ASSERT_STR_EQ(kd_argument_name(kd_schema_return(s, 0)), "");
  assert_null(kd_schema_argument(s, 3));
  assert_null(kd_schema_return(s, 1));
  kd_schema_free(s);

  s = parse_ok("relu(Tensor self) -> Tensor");
  KD_ASSERT_STR_EQ(kd_schema_namespace(s), "");
  KD_ASSERT_STR_EQ(kd_schema_overload(s), "");
  kd_schema_free(s);

  s = parse_ok("f(int a, ...) -> (int, ...)");
  assert_true(kd_schema_is_vararg(s));
  assert_true(kd_schema_is_varret(s));
  assert_int_equal(kd_schema_num_arguments(s), 1);
  assert_int_equal(kd_schema_num_returns(s), 1);
  kd_schema_free(s);

  /* NULL-safe accessors. */
  assert_null(kd_schema_name(NULL));
  assert_int_equal(kd_schema_num_arguments(NULL), 0);
  assert_null(kd_type_element(NULL));
  assert_int_equal(kd_type_list_size(NULL), -1);
  kd_schema_free(NULL);
}

static void test_accessors_types(void **state) {
  (void)state;
  kd_schema *s = parse_ok(
      "f(int[2] a, Tensor?[] b, Dict(str, Tensor) c, Future(int) d, (int, float) e, "
      "__torch__.torch.classes.ns.Name f, t1 g, int[]? h, RRef(t) i, Union(int, str) j) -> ()");
  const kd_type *t = kd_argument_type(kd_schema_argument(s, 0));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_LIST);
  assert_int_equal(kd_type_list_size(t), 2);
  assert_int_equal(kd_type_kind_of(kd_type_element(t)), KD_TYPE_INT);
  assert_null(kd_type_name(t));

  t = kd_argument_type(kd_schema_argument(s, 1));
  assert_int_equal(kd_type_list_size(t), -1);
  assert_int_equal(kd_type_kind_of(kd_type_element(t)), KD_TYPE_OPTIONAL);
  assert_int_equal(kd_type_kind_of(kd_type_element(kd_type_element(t))), KD_TYPE_TENSOR);

  t = kd_argument_type(kd_schema_argument(s, 2));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_DICT);
  assert_int_equal(kd_type_kind_of(kd_type_key(t)), KD_TYPE_STR);
  assert_int_equal(kd_type_kind_of(kd_type_element(t)), KD_TYPE_TENSOR);

  t = kd_argument_type(kd_schema_argument(s, 3));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_FUTURE);
  assert_int_equal(kd_type_kind_of(kd_type_element(t)), KD_TYPE_INT);
  assert_null(kd_type_key(t));

  t = kd_argument_type(kd_schema_argument(s, 4));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_TUPLE);
  assert_int_equal(kd_type_tuple_size(t), 2);
  assert_int_equal(kd_type_kind_of(kd_type_tuple_at(t, 0)), KD_TYPE_INT);
  assert_int_equal(kd_type_kind_of(kd_type_tuple_at(t, 1)), KD_TYPE_FLOAT);
  assert_null(kd_type_tuple_at(t, 2));

  t = kd_argument_type(kd_schema_argument(s, 5));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_CLASS);
  KD_ASSERT_STR_EQ(kd_type_name(t), "__torch__.torch.classes.ns.Name");

  t = kd_argument_type(kd_schema_argument(s, 6));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_VAR);
  KD_ASSERT_STR_EQ(kd_type_name(t), "t1");

  t = kd_argument_type(kd_schema_argument(s, 7));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_OPTIONAL);
  assert_int_equal(kd_type_kind_of(kd_type_element(t)), KD_TYPE_LIST);

  t = kd_argument_type(kd_schema_argument(s, 8));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_RREF);
  assert_int_equal(kd_type_kind_of(kd_type_element(t)), KD_TYPE_VAR);

  t = kd_argument_type(kd_schema_argument(s, 9));
  assert_int_equal(kd_type_kind_of(t), KD_TYPE_UNION);
  assert_int_equal(kd_type_tuple_size(t), 2);
  assert_int_equal(kd_type_kind_of(kd_type_tuple_at(t, 1)), KD_TYPE_STR);

  char buf[64];
  size_t n = kd_type_format(kd_argument_type(kd_schema_argument(s, 2)), buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "Dict(str, Tensor)");
  assert_int_equal(n, 17);
  /* Truncation as snprintf. */
  n = kd_type_format(kd_argument_type(kd_schema_argument(s, 2)), buf, 5);
  assert_int_equal(n, 17);
  KD_ASSERT_STR_EQ(buf, "Dict");
  kd_schema_free(s);

  s = parse_ok("f(Tensor a) -> Tensor");
  char small[8];
  n = kd_schema_format(s, small, sizeof small);
  assert_int_equal(n, strlen("f(Tensor a) -> Tensor"));
  KD_ASSERT_STR_EQ(small, "f(Tenso");
  assert_int_equal(kd_schema_format(s, NULL, 0), n);
  kd_schema_free(s);
}

static void test_accessors_alias(void **state) {
  (void)state;
  kd_schema *s = parse_ok(
      "f(Tensor(a!)[] out, Tensor[](b) l, Tensor(a -> *) v, Tensor(a|b) u, Tensor(c! -> c|d) w, "
      "Tensor(e!)? o) -> ()");
  const kd_argument *a = kd_schema_argument(s, 0);
  assert_null(kd_argument_alias(a));
  assert_true(kd_argument_is_write(a));
  const kd_alias_info *el = kd_type_element_alias(kd_argument_type(a));
  assert_non_null(el);
  assert_true(kd_alias_is_write(el));
  KD_ASSERT_STR_EQ(kd_alias_before(el, 0), "a");

  a = kd_schema_argument(s, 1);
  assert_null(kd_type_element_alias(kd_argument_type(a)));
  assert_non_null(kd_argument_alias(a));
  KD_ASSERT_STR_EQ(kd_alias_before(kd_argument_alias(a), 0), "b");
  assert_false(kd_argument_is_write(a));

  const kd_alias_info *al = kd_argument_alias(kd_schema_argument(s, 2));
  assert_int_equal(kd_alias_num_before(al), 1);
  assert_int_equal(kd_alias_num_after(al), 1);
  KD_ASSERT_STR_EQ(kd_alias_after(al, 0), "*");
  assert_false(kd_alias_is_write(al));

  al = kd_argument_alias(kd_schema_argument(s, 3));
  assert_int_equal(kd_alias_num_before(al), 2);
  KD_ASSERT_STR_EQ(kd_alias_before(al, 1), "b");
  assert_int_equal(kd_alias_num_after(al), 2);

  al = kd_argument_alias(kd_schema_argument(s, 4));
  assert_true(kd_alias_is_write(al));
  assert_int_equal(kd_alias_num_before(al), 1);
  assert_int_equal(kd_alias_num_after(al), 2);
  KD_ASSERT_STR_EQ(kd_alias_after(al, 1), "d");

  a = kd_schema_argument(s, 5);
  assert_int_equal(kd_type_kind_of(kd_argument_type(a)), KD_TYPE_OPTIONAL);
  assert_true(kd_argument_is_write(a));
  KD_ASSERT_STR_EQ(kd_alias_before(kd_argument_alias(a), 0), "e");
  assert_int_equal(kd_alias_num_before(NULL), 0);
  assert_false(kd_alias_is_write(NULL));
  kd_schema_free(s);
}

/* ---- Classification and signatures ------------------------------------------ */

static void test_kinds(void **state) {
  (void)state;
  assert_int_equal(kind_of("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
                   KD_SCHEMA_FUNCTIONAL);
  assert_int_equal(kind_of("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"),
                   KD_SCHEMA_INPLACE);
  assert_int_equal(kind_of("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"),
                   KD_SCHEMA_OUT);
  assert_int_equal(kind_of("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
                   KD_SCHEMA_INPLACE);
  assert_int_equal(kind_of("__and__.Tensor(Tensor self, Tensor other) -> Tensor"), KD_SCHEMA_FUNCTIONAL);
  assert_int_equal(
      kind_of("_fused_moving_avg_obs_fq_helper(Tensor self, Tensor observer_on, Tensor fake_quant_on, "
              "Tensor(a!) running_min, Tensor(b!) running_max, Tensor(c!) scale, Tensor(d!) zero_point, "
              "float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, "
              "bool symmetric_quant=False) -> (Tensor output, Tensor mask)"),
      KD_SCHEMA_MUTABLE);
  assert_int_equal(
      kind_of("_foo.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_buf) -> Tensor(a!)"),
      KD_SCHEMA_SCRATCH);
  assert_int_equal(kind_of("split_copy.Tensor_out(Tensor self, int split_size, int dim=0, *, Tensor(a!)[] out) -> ()"),
                   KD_SCHEMA_OUT);
  KD_ASSERT_STR_EQ(kd_schema_kind_name(KD_SCHEMA_FUNCTIONAL), "functional");
  KD_ASSERT_STR_EQ(kd_schema_kind_name(KD_SCHEMA_INPLACE), "inplace");
  KD_ASSERT_STR_EQ(kd_schema_kind_name(KD_SCHEMA_OUT), "out");
  KD_ASSERT_STR_EQ(kd_schema_kind_name(KD_SCHEMA_MUTABLE), "mutable");
  KD_ASSERT_STR_EQ(kd_schema_kind_name(KD_SCHEMA_SCRATCH), "scratch");
  KD_ASSERT_STR_EQ(kd_schema_kind_name((kd_schema_kind)99), "invalid");
}

static void test_signatures(void **state) {
  (void)state;
  char f[512], i[512], o[512];
  sig_of("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", f, sizeof f);
  sig_of("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", i, sizeof i);
  sig_of("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", o, sizeof o);
  KD_ASSERT_STR_EQ(f, "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  KD_ASSERT_STR_EQ(i, f);
  KD_ASSERT_STR_EQ(o, f);

  sig_of("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", i, sizeof i);
  KD_ASSERT_STR_EQ(i, "__and__(Tensor self, Tensor other) -> Tensor");

  /* Mutated inputs no return aliases become returns. */
  sig_of("_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min, float c) -> (Tensor output, Tensor mask)",
         f, sizeof f);
  KD_ASSERT_STR_EQ(f, "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor running_min, float c) -> (Tensor, Tensor, Tensor)");
  sig_of("_fused_moving_avg_obs_fq_helper.functional(Tensor self, Tensor running_min, float c) -> (Tensor output, Tensor mask, Tensor running_min_out)",
         o, sizeof o);
  KD_ASSERT_STR_EQ(o, f);

  /* Out with no return: the out arguments become the returns. */
  sig_of("split_copy.Tensor_out(Tensor self, int split_size, int dim=0, *, Tensor(a!)[] out) -> ()", o, sizeof o);
  KD_ASSERT_STR_EQ(o, "split_copy(Tensor self, int split_size, int dim=0) -> Tensor[]");
  sig_of("max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
         o, sizeof o);
  KD_ASSERT_STR_EQ(o, "max(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)");

  /* Namespaces and overloads go; tensor options stay. */
  sig_of("aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
         f, sizeof f);
  KD_ASSERT_STR_EQ(f, "arange(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");

  /* bernoulli.p gets p=0.5 as bernoulli_.float has. */
  sig_of("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor", f, sizeof f);
  sig_of("bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)", i, sizeof i);
  KD_ASSERT_STR_EQ(f, "bernoulli(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor");
  KD_ASSERT_STR_EQ(i, f);

  /* Truncation as snprintf. */
  kd_schema *s = parse_ok("relu_(Tensor(a!) self) -> Tensor(a!)");
  char tiny[6];
  size_t n = kd_schema_signature(s, tiny, sizeof tiny);
  assert_int_equal(n, strlen("relu(Tensor self) -> Tensor"));
  KD_ASSERT_STR_EQ(tiny, "relu(");
  kd_schema_free(s);
}

/* ---- Defaults ---------------------------------------------------------------- */

static kd_schema *g_schema;

static const kd_argument *arg_of(const char *text) {
  kd_schema_free(g_schema);
  g_schema = parse_ok(text);
  return kd_schema_argument(g_schema, 0);
}

static int teardown_schema(void **state) {
  (void)state;
  kd_schema_free(g_schema);
  g_schema = NULL;
  return 0;
}

static void test_default_scalars(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int? x=None) -> ()"), &v));
  assert_true(kd_value_is_none(&v));
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(bool x=True) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_BOOL);
  assert_true(v.u.b);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(bool x=False) -> ()"), &v));
  assert_false(v.u.b);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=-100) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_INT);
  assert_int_equal(v.u.i, -100);
  assert_int_equal(kd_type_kind_of(kd_argument_type(arg_of("f(DeviceIndex x=3) -> ()"))),
                   KD_TYPE_DEVICE_INDEX);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(DeviceIndex x=3) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_INT);
  assert_int_equal(v.u.i, 3);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(SymInt x=7) -> ()"), &v));
  assert_int_equal(v.u.i, 7);
  /* Up to 18 digits are read directly, longer ones by strtoll. */
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=999999999999999999) -> ()"), &v));
  assert_true(v.u.i == INT64_C(999999999999999999));
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=-999999999999999999) -> ()"), &v));
  assert_true(v.u.i == -INT64_C(999999999999999999));
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=9223372036854775807) -> ()"), &v));
  assert_true(v.u.i == INT64_MAX);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=-9223372036854775808) -> ()"), &v));
  assert_true(v.u.i == INT64_MIN);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=000000000000000000042) -> ()"), &v));
  assert_int_equal(v.u.i, 42);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int x=-0) -> ()"), &v));
  assert_int_equal(v.u.i, 0);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float x=-0) -> ()"), &v));
  assert_true(v.u.d == 0.0 && !signbit(v.u.d));
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Scalar x=12345678901234567890) -> ()"), &v),
                KD_ETYPE, "default '12345678901234567890' does not fit the type");
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int reduction=Mean) -> ()"), &v));
  assert_int_equal(v.u.i, 1);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int reduction=Sum) -> ()"), &v));
  assert_int_equal(v.u.i, 2);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int reduction=None) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_INT);
  assert_int_equal(v.u.i, 0);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float x=1e-05) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_DOUBLE);
  assert_true(v.u.d == 1e-05);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float x=-inf) -> ()"), &v));
  assert_true(isinf(v.u.d) && v.u.d < 0);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float x=inf) -> ()"), &v));
  assert_true(isinf(v.u.d) && v.u.d > 0);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float x=nan) -> ()"), &v));
  assert_true(isnan(v.u.d));
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float x=2) -> ()"), &v));
  assert_true(v.u.d == 2.0);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(complex x=2j) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_COMPLEX);
  assert_true(v.u.c.re == 0 && v.u.c.im == 2);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(complex x=1.5) -> ()"), &v));
  assert_true(v.u.c.re == 1.5 && v.u.c.im == 0);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Scalar x=1) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_SCALAR);
  assert_int_equal(v.u.s.kind, KD_SCALAR_INT);
  assert_int_equal(v.u.s.v.i, 1);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Scalar x=0.5) -> ()"), &v));
  assert_int_equal(v.u.s.kind, KD_SCALAR_DOUBLE);
  assert_true(v.u.s.v.d == 0.5);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Scalar? x=-2) -> ()"), &v));
  assert_int_equal(v.u.s.kind, KD_SCALAR_INT);
  assert_int_equal(v.u.s.v.i, -2);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(ScalarType x=long) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_DTYPE);
  kd_dtype long_dt;
  KD_ASSERT_OK(kd_dtype_from_name("int64", &long_dt));
  assert_int_equal(v.u.dtype, long_dt);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(ScalarType? x=None) -> ()"), &v));
  assert_true(kd_value_is_none(&v));
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(MemoryFormat x=contiguous_format) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_MEMORY_FORMAT);
  assert_int_equal(v.u.mf, KD_MEMORY_FORMAT_CONTIGUOUS);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Layout x=strided) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_LAYOUT);
  assert_int_equal(v.u.layout, KD_LAYOUT_STRIDED);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Device x=\"cpu\") -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_DEVICE);
  assert_int_equal(v.u.device.type, KD_DEVICE_CPU);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Device x='cuda:1') -> ()"), &v));
  assert_int_equal(v.u.device.type, KD_DEVICE_CUDA);
  assert_int_equal(v.u.device.index, 1);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(t x=3) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_INT);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Any x=None) -> ()"), &v));
  assert_true(kd_value_is_none(&v));
}

static void assert_string_default(const char *schema, const char *expected, size_t n) {
  kd_value v;
  size_t len = 0;
  KD_ASSERT_OK(kd_argument_default_value(arg_of(schema), &v));
  assert_int_equal(v.tag, KD_VALUE_STRING);
  const char *data = kd_value_string_data(&v, &len);
  assert_int_equal(len, n);
  assert_memory_equal(data, expected, n);
  kd_value_destroy(&v);
}

static void test_default_strings(void **state) {
  (void)state;
  assert_string_default("f(str x='mean') -> ()", "mean", 4);
  assert_string_default("f(str x=\"valid\") -> ()", "valid", 5);
  assert_string_default("f(str x='\"\\'\\\\') -> ()", "\"'\\", 3);
  assert_string_default("f(str x=\"\\\"'\\\\\") -> ()", "\"'\\", 3);
  assert_string_default("f(str x='a\\nb\\t\\x41\\101\\0') -> ()", "a\nb\tAA\0", 7);
  assert_string_default("f(str? x='') -> ()", "", 0);
}

static void test_default_lists(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int[2] x=[0,1]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_INT_LIST);
  assert_int_equal(kd_value_list_size(&v), 2);
  assert_int_equal(kd_value_int_list_data(&v)[1], 1);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int[] x=[-2,-1]) -> ()"), &v));
  assert_int_equal(kd_value_int_list_data(&v)[0], -2);
  assert_int_equal(kd_value_int_list_data(&v)[1], -1);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int[] x=[]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_INT_LIST);
  assert_int_equal(kd_value_list_size(&v), 0);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int[3] x=1) -> ()"), &v));
  assert_int_equal(kd_value_list_size(&v), 3);
  assert_int_equal(kd_value_int_list_data(&v)[2], 1);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(SymInt[1]? x=None) -> ()"), &v));
  assert_true(kd_value_is_none(&v));
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(float[] x=[1.5, 2]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_DOUBLE_LIST);
  assert_true(kd_value_double_list_data(&v)[1] == 2.0);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(bool[3] x=[True, False, True]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_BOOL_LIST);
  assert_false(kd_value_bool_list_data(&v)[1]);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Tensor[] x=[]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_TENSOR_LIST);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Tensor?[] x=[]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_OPT_TENSOR_LIST);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(str[] x=['a', \"b\"]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_LIST);
  assert_int_equal(kd_value_list_size(&v), 2);
  assert_int_equal(kd_value_list_at(&v, 1)->tag, KD_VALUE_STRING);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(int[][] x=[[1, 2], []]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_LIST);
  assert_int_equal(kd_value_list_at(&v, 0)->tag, KD_VALUE_INT_LIST);
  kd_value_destroy(&v);
}

/* A list default on Any or a type variable is a generic list whose elements
 * are decoded as Any (it used to be decoded through a list node on the stack
 * whose 32-bit self-relative link could not reach its element type: SIGSEGV). */
static void test_default_generic_lists(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(Any x=[]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_LIST);
  assert_int_equal(kd_value_list_size(&v), 0);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(t x=[1]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_LIST);
  assert_int_equal(kd_value_list_size(&v), 1);
  assert_int_equal(kd_value_list_at(&v, 0)->tag, KD_VALUE_INT);
  assert_int_equal(kd_value_list_at(&v, 0)->u.i, 1);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(
      arg_of("f(Any x=[[-2, 'a'], None, 2.5, True, []]) -> ()"), &v));
  assert_int_equal(v.tag, KD_VALUE_LIST);
  assert_int_equal(kd_value_list_size(&v), 5);
  const kd_value *inner = kd_value_list_at(&v, 0);
  assert_int_equal(inner->tag, KD_VALUE_LIST);
  assert_int_equal(kd_value_list_size(inner), 2);
  assert_int_equal(kd_value_list_at(inner, 0)->u.i, -2);
  assert_int_equal(kd_value_list_at(inner, 1)->tag, KD_VALUE_STRING);
  assert_true(kd_value_is_none(kd_value_list_at(&v, 1)));
  assert_true(kd_value_list_at(&v, 2)->u.d == 2.5);
  assert_int_equal(kd_value_list_at(&v, 3)->tag, KD_VALUE_BOOL);
  assert_int_equal(kd_value_list_size(kd_value_list_at(&v, 4)), 0);
  kd_value_destroy(&v);
  KD_ASSERT_OK(kd_argument_default_value(arg_of("f(t? x=[[1]]) -> ()"), &v));
  assert_int_equal(kd_value_list_at(&v, 0)->tag, KD_VALUE_LIST);
  kd_value_destroy(&v);
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Any x=[1, foo]) -> ()"), &v), KD_ETYPE,
                "argument 'x' of type Any: default '[1, foo]' does not fit the type");
  assert_true(kd_value_is_none(&v));
}

static void test_default_errors(void **state) {
  (void)state;
  kd_value v;
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(int x) -> ()"), &v), KD_ENOTFOUND,
                "argument 'x' has no default");
  assert_true(kd_value_is_none(&v));
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(int x=1.5) -> ()"), &v), KD_ETYPE,
                "argument 'x' of type int: default '1.5' does not fit the type");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(int x=True) -> ()"), &v), KD_ETYPE,
                "default 'True'");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(int x=99999999999999999999) -> ()"), &v),
                KD_ETYPE, "of type int");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(bool flag=1) -> ()"), &v), KD_ETYPE,
                "argument 'flag' of type bool");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Tensor self=None) -> ()"), &v), KD_ETYPE,
                "argument 'self' of type Tensor: default 'None'");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(str s=mean) -> ()"), &v), KD_ETYPE,
                "of type str: default 'mean'");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(ScalarType d=blah) -> ()"), &v), KD_ETYPE,
                "of type ScalarType: default 'blah'");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Layout l=nope) -> ()"), &v), KD_ETYPE,
                "of type Layout");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(MemoryFormat m=1) -> ()"), &v), KD_ETYPE,
                "of type MemoryFormat");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(int[2] x=[0,'a']) -> ()"), &v), KD_ETYPE,
                "argument 'x' of type int[2]: default '[0,'a']'");
  assert_true(kd_value_is_none(&v));
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(int[] x=1) -> ()"), &v), KD_ETYPE,
                "of type int[]: default '1'");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Tensor[] x=[1]) -> ()"), &v), KD_ETYPE,
                "of type Tensor[]");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(float x=-nope) -> ()"), &v), KD_ETYPE,
                "of type float");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Generator? g=1) -> ()"), &v), KD_ETYPE,
                "of type Generator?");
  KD_ASSERT_ERR(kd_argument_default_value(arg_of("f(Device d='gpu:x') -> ()"), &v), KD_ETYPE,
                "of type Device");
  KD_ASSERT_ERR(kd_argument_default_value(NULL, &v), KD_EINVAL, "arg is NULL");
}

/* ---- Syntax errors ------------------------------------------------------------- */

static void test_syntax_errors(void **state) {
  (void)state;
  parse_err("", "line 1, column 1: expected operator name, found end of input");
  parse_err("   \n  ", "line 2, column 3: expected operator name, found end of input");
  parse_err("f(Tensor a)", "line 1, column 12: expected '->', found end of input");
  parse_err("f(Tensor a) Tensor", "line 1, column 13: expected '->', found 'Tensor'");
  parse_err("f(Foo a) -> ()", "line 1, column 3: expected type, found 'Foo'");
  parse_err("f(Tensor a -> ()", "line 1, column 12: expected ',' or ')', found '->'");
  parse_err("f(Tensor a, int b", "line 1, column 18: expected ',' or ')', found end of input");
  parse_err("f(Tensor(a) -> ()", "line 1, column 13: expected argument name, found '->'");
  parse_err("f(Tensor(a x) -> ()", "line 1, column 12: expected '|', '!', '->' or ')', found 'x'");
  parse_err("f(Tensor(!) x) -> ()", "line 1, column 10: expected alias set name, found '!'");
  parse_err("f(Tensor(a! -> ) x) -> ()", "line 1, column 16: expected alias set name, found ')'");
  parse_err("f(Tensor(a!x) x) -> ()", "line 1, column 12: expected '->' or ')', found 'x'");
  parse_err("f(Tensor[ a) -> ()", "line 1, column 11: expected ']' or list size, found 'a'");
  parse_err("f(Tensor[", "line 1, column 10: expected ']' or list size, found end of input");
  parse_err("f(int[2.5] a) -> ()", "line 1, column 7: expected integer list size, found '2.5'");
  parse_err("f(Tensor a) -> Tensor b junk", "line 1, column 25: expected end of input, found 'junk'");
  parse_err("f(Tensor a) -> Tensor)", "line 1, column 22: expected end of input, found ')'");
  parse_err("f(Tensor) -> ()", "line 1, column 9: expected argument name, found ')'");
  parse_err("f(int a=) -> ()", "line 1, column 9: expected default value, found ')'");
  parse_err("f(int[] a=[1,) -> ()", "line 1, column 14: expected default value, found ')'");
  parse_err("f(int[] a=[1 2]) -> ()", "line 1, column 14: expected ',' or ']', found '2'");
  parse_err("f(str a='abc) -> ()", "line 1, column 9: expected default value, found unterminated string");
  parse_err("f(int a=-x y) -> ()", "line 1, column 12: expected ',' or ')', found 'y'");
  parse_err("f(int a=- ) -> ()", "line 1, column 11: expected number, found ')'");
  parse_err("aten::(Tensor a) -> ()", "line 1, column 7: expected operator name, found '('");
  parse_err("add.(Tensor a) -> ()", "line 1, column 5: expected overload name, found '('");
  parse_err("add Tensor", "line 1, column 5: expected '.', '::' or '(', found 'Tensor'");
  parse_err("f(Tensor a) -> (Tensor", "line 1, column 23: expected ',' or ')', found end of input");
  parse_err("f(..., int a) -> ()", "line 1, column 6: expected ')' after '...', found ','");
  parse_err("f() -> (..., int)", "line 1, column 12: expected ')' after '...', found ','");
  parse_err("f(int a=1, ...) -> ()", "line 1, column 12: expected no defaults in a schema with '...', found a default for 'a'");
  parse_err("f(*, *, int a) -> ()", "line 1, column 6: expected type, found '*'");
  parse_err("f(Dict(str Tensor) a) -> ()", "line 1, column 12: expected ',', found 'Tensor'");
  parse_err("f(Future int) -> ()", "line 1, column 10: expected '(', found 'int'");
  parse_err("f(Union() a) -> ()", "line 1, column 9: expected type, found ')'");
  parse_err("f(Tensor?(a) x) -> ()", "line 1, column 10: expected argument name, found '('");
  parse_err("f(Tensor a) -> () @", "line 1, column 19: expected end of input, found '@'");
  parse_err("f(Tensor a)\n-> (Tensor,\n  Tensor b c)", "line 3, column 12: expected ',' or ')', found 'c'");
  parse_err("f(Tensor _x) -> _t", "line 1, column 17: expected type, found '_t'");
  /* Embedded NUL and other bytes. */
  kd_schema *s = NULL;
  KD_ASSERT_ERR(kd_schema_parse("f(Tensor a)\0 -> ()", 18, &s), KD_ESYNTAX,
                "line 1, column 12: expected '->', found byte 0x00");
  assert_null(s);
  KD_ASSERT_ERR(kd_schema_parse("f(\xff)", 4, &s), KD_ESYNTAX,
                "line 1, column 3: expected type, found byte 0xff");
  /* A length shorter than the string: the rest is not read. */
  KD_ASSERT_OK(kd_schema_parse("f() -> ()trailing", 9, &s));
  kd_schema_free(s);
  KD_ASSERT_ERR(kd_schema_parse(NULL, 3, &s), KD_EINVAL, "text is NULL");
  KD_ASSERT_ERR(kd_schema_parse("f() -> ()", 9, NULL), KD_EINVAL, "out is NULL");
}

static void test_nesting_limit(void **state) {
  (void)state;
  char buf[1024];
  /* 63 nested tuples parse, 64 do not; the same for `?` chains. */
  for (int depth = 62; depth <= 66; depth++) {
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "f(");
    for (int i = 0; i < depth; i++) buf[n++] = '(';
    n += (size_t)snprintf(buf + n, sizeof buf - n, "int");
    for (int i = 0; i < depth; i++) buf[n++] = ')';
    n += (size_t)snprintf(buf + n, sizeof buf - n, " a) -> ()");
    kd_schema *s = NULL;
    kd_status st = kd_schema_parse(buf, n, &s);
    if (depth < 64) {
      KD_ASSERT_OK(st);
      assert_format(s, buf);
      kd_schema_free(s);
    } else {
      assert_int_equal(st, KD_ESYNTAX);
      assert_non_null(strstr(kd_last_error(), "expected at most 64 nested types"));
    }
  }
  size_t n = (size_t)snprintf(buf, sizeof buf, "f(int");
  for (int i = 0; i < 70; i++) buf[n++] = '?';
  n += (size_t)snprintf(buf + n, sizeof buf - n, " a) -> ()");
  kd_schema *s = NULL;
  KD_ASSERT_ERR(kd_schema_parse(buf, n, &s), KD_ESYNTAX, "line 1, column 69: expected at most 64 nested types, found '?'");
  n = (size_t)snprintf(buf, sizeof buf, "f(int[] a=");
  for (int i = 0; i < 70; i++) buf[n++] = '[';
  KD_ASSERT_ERR(kd_schema_parse(buf, n, &s), KD_ESYNTAX, "expected at most 64 nested lists, found '['");
}

/* ---- Repeated rests: schemas made from a remembered one ------------------------- */

static void assert_same_args(const kd_argument *a, const kd_argument *b) {
  char ta[512], tb[512];
  const char *na = kd_argument_name(a), *nb = kd_argument_name(b);
  assert_int_equal(na == NULL, nb == NULL);
  if (na) KD_ASSERT_STR_EQ(na, nb);
  const char *da = kd_argument_default(a), *db = kd_argument_default(b);
  assert_int_equal(da == NULL, db == NULL);
  if (da) KD_ASSERT_STR_EQ(da, db);
  assert_int_equal(kd_argument_kwarg_only(a), kd_argument_kwarg_only(b));
  assert_int_equal(kd_argument_is_write(a), kd_argument_is_write(b));
  kd_type_format(kd_argument_type(a), ta, sizeof ta);
  kd_type_format(kd_argument_type(b), tb, sizeof tb);
  KD_ASSERT_STR_EQ(ta, tb);
  if (da) {
    kd_value va, vb;
    kd_status sa = kd_argument_default_value(a, &va), sb = kd_argument_default_value(b, &vb);
    assert_int_equal(sa, sb);
    if (sa == KD_OK) {
      assert_int_equal(va.tag, vb.tag);
      kd_value_destroy(&va);
      kd_value_destroy(&vb);
    }
  }
}

/* Everything observable of two schemas is equal. */
static void assert_same_schema(const kd_schema *a, const kd_schema *b) {
  char fa[2048], fb[2048];
  kd_schema_format(a, fa, sizeof fa);
  kd_schema_format(b, fb, sizeof fb);
  KD_ASSERT_STR_EQ(fa, fb);
  kd_schema_signature(a, fa, sizeof fa);
  kd_schema_signature(b, fb, sizeof fb);
  KD_ASSERT_STR_EQ(fa, fb);
  KD_ASSERT_STR_EQ(kd_schema_namespace(a), kd_schema_namespace(b));
  KD_ASSERT_STR_EQ(kd_schema_name(a), kd_schema_name(b));
  KD_ASSERT_STR_EQ(kd_schema_overload(a), kd_schema_overload(b));
  assert_int_equal(kd_schema_kind_of(a), kd_schema_kind_of(b));
  assert_int_equal(kd_schema_is_vararg(a), kd_schema_is_vararg(b));
  assert_int_equal(kd_schema_is_varret(a), kd_schema_is_varret(b));
  assert_int_equal(kd_schema_num_arguments(a), kd_schema_num_arguments(b));
  assert_int_equal(kd_schema_num_returns(a), kd_schema_num_returns(b));
  for (size_t i = 0; i < kd_schema_num_arguments(a); i++)
    assert_same_args(kd_schema_argument(a, i), kd_schema_argument(b, i));
  for (size_t i = 0; i < kd_schema_num_returns(a); i++)
    assert_same_args(kd_schema_return(a, i), kd_schema_return(b, i));
}

static void test_repeated_rests(void **state) {
  (void)state;
  static const char *rests[] = {
      "(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      "(Tensor(a!) self, Tensor other) -> Tensor(a!)",
      "(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)",
      "(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      ("(Tensor(a -> *) self, str equation=\"ab,c\", float eps=1e-05, int[2] k=[1, -2]) -> "
       "(Tensor a, Tensor(b|c) b)"),
      "(Dict(str, Tensor) d, Future(Tensor) f, (int, float) t, t x, Union(int, str) u) -> ()",
      "(...) -> ...",
      "() -> Tensor[]",
      "(Tensor self, __torch__.torch.classes.ns.Foo obj, Device? device='cpu') -> Tensor",
  };
  /* Name parts of different lengths (the nodes move by other than multiples
   * of 8), with and without namespace and overload. */
  static const char *heads[] = {"a", "ns::x.y", "opname", "a.b", "ns::longer_operator_name.Tensor_out",
                                "q", "ns::q", "ns::q.r", "abcdefg", "abcdefgh", "abcdefghi"};
  for (size_t r = 0; r < sizeof rests / sizeof *rests; r++) {
    for (size_t h = 0; h < sizeof heads / sizeof *heads; h++) {
      char plain[512], spaced[512];
      snprintf(plain, sizeof plain, "%s%s", heads[h], rests[r]);
      /* A space in front: not a plain name part, so always parsed. */
      snprintf(spaced, sizeof spaced, " %s%s", heads[h], rests[r]);
      kd_schema *a = parse_ok(plain), *b = parse_ok(spaced);
      assert_same_schema(a, b);
      kd_schema_free(b);
      /* The same text again, after the rest was remembered. */
      kd_schema *c = parse_ok(plain);
      assert_same_schema(a, c);
      kd_schema_free(a);
      kd_schema_free(c);
    }
  }
}

/* A rest that does not parse is never remembered: every error comes from the
 * parser, with its own line and column; name parts that are not plain go to
 * the parser too. */
static void test_repeated_rests_errors(void **state) {
  (void)state;
  for (int i = 0; i < 3; i++) {
    parse_err("f(Tensor self) ->", "line 1, column 18: expected type, found end of input");
    parse_err("ff(Tensor self) ->", "line 1, column 19: expected type, found end of input");
    parse_err("ns::f.o(Tensor self) ->", "line 1, column 24: expected type, found end of input");
  }
  kd_schema *s = parse_ok("g(Tensor self) -> Tensor");
  kd_schema_free(s);
  s = parse_ok("h(Tensor self) -> Tensor");
  kd_schema_free(s);
  /* The rest is remembered now; these name parts are errors still. */
  parse_err("1g(Tensor self) -> Tensor", "line 1, column 1: expected operator name, found '1'");
  parse_err("a::b::c(Tensor self) -> Tensor", "line 1, column 5: expected '.', '::' or '(', found '::'");
  parse_err("a.(Tensor self) -> Tensor", "line 1, column 3: expected overload name, found '('");
  parse_err("a.b.c(Tensor self) -> Tensor", "line 1, column 4: expected '(', found '.'");
  parse_err("::a(Tensor self) -> Tensor", "line 1, column 1: expected operator name, found '::'");
  /* And these are fine, through the parser. */
  s = parse_ok("a ( Tensor self) -> Tensor");
  assert_format(s, "a(Tensor self) -> Tensor");
  kd_schema_free(s);
  s = parse_ok("ns :: a . b(Tensor self) -> Tensor");
  assert_format(s, "ns::a.b(Tensor self) -> Tensor");
  kd_schema_free(s);
}

static void test_long_schema(void **state) {
  (void)state;
  /* Long enough to need the heap scratch buffer. */
  size_t cap = 200000, n = 0;
  char *buf = malloc(cap);
  assert_non_null(buf);
  n += (size_t)snprintf(buf + n, cap - n, "ns::op.overload(");
  for (int i = 0; i < 3000; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%sTensor(a%d!)[] argument_number_%d=[]", i ? ", " : "", i, i);
  n += (size_t)snprintf(buf + n, cap - n, ") -> (Tensor, int[], Dict(str, t))");
  kd_schema *s = NULL;
  KD_ASSERT_OK(kd_schema_parse(buf, n, &s));
  assert_int_equal(kd_schema_num_arguments(s), 3000);
  KD_ASSERT_STR_EQ(kd_argument_name(kd_schema_argument(s, 2999)), "argument_number_2999");
  char *out = malloc(n + 1);
  assert_int_equal(kd_schema_format(s, out, n + 1), n);
  assert_memory_equal(out, buf, n);
  free(out);
  kd_schema_free(s);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_base_types),
      cmocka_unit_test(test_roundtrip_names_and_markers),
      cmocka_unit_test(test_roundtrip_alias),
      cmocka_unit_test(test_roundtrip_defaults),
      cmocka_unit_test(test_accessors_names),
      cmocka_unit_test(test_accessors_types),
      cmocka_unit_test(test_accessors_alias),
      cmocka_unit_test(test_kinds),
      cmocka_unit_test(test_signatures),
      cmocka_unit_test_teardown(test_default_scalars, teardown_schema),
      cmocka_unit_test_teardown(test_default_strings, teardown_schema),
      cmocka_unit_test_teardown(test_default_lists, teardown_schema),
      cmocka_unit_test_teardown(test_default_generic_lists, teardown_schema),
      cmocka_unit_test_teardown(test_default_errors, teardown_schema),
      cmocka_unit_test(test_syntax_errors),
      cmocka_unit_test(test_nesting_limit),
      cmocka_unit_test(test_long_schema),
      cmocka_unit_test(test_repeated_rests),
      cmocka_unit_test(test_repeated_rests_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
