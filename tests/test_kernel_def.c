/* Kernel definitions (TensorFlow style): constraints, labels, priorities,
 * ambiguity, kernel classes with construction and compute contexts, prepared
 * kernels. */
#include <math.h>

#include "kd_test.h"

/* ---- A kernel class: out = |self| * scale --------------------------------------- */

typedef struct abs_object {
  double scale;
  kd_dtype dtype;
  int runs;
} abs_object;

static int objects_alive;

static kd_status abs_create(void *class_data, const kd_kernel_construction *ctx, void **object) {
  const char *tag = class_data;
  const kd_value *reject = kd_construction_attr(ctx, "reject");
  if (reject && reject->tag == KD_VALUE_BOOL && reject->u.b)
    return kd_set_error(KD_EINVAL, "%s: construction refused (reject=True) for %s", tag,
                        kd_dtype_name(kd_construction_input_dtype(ctx, 0)));
  abs_object *o = calloc(1, sizeof *o);
  const kd_value *scale = kd_construction_attr(ctx, "scale");
  o->scale = 1.0;
  if (scale) kd_value_get_double(scale, &o->scale);
  o->dtype = kd_construction_type(ctx, "self");
  assert_int_equal(kd_construction_num_inputs(ctx), 1);
  assert_int_equal(kd_construction_num_outputs(ctx), 1);
  assert_non_null(kd_construction_schema(ctx));
  KD_ASSERT_STR_EQ(kd_construction_def(ctx)->op, "kdef::abs");
  objects_alive++;
  *object = o;
  return KD_OK;
}

static void abs_compute(void *object, kd_kernel_context *ctx, const kd_value *in, kd_value *out) {
  abs_object *o = object;
  o->runs++;
  (void)out; /* written through the context */
  assert_ptr_equal(kd_context_input_value(ctx, 0), &in[0]);
  assert_int_equal(kd_context_num_inputs(ctx), 1);
  assert_int_equal(kd_context_num_outputs(ctx), 1);
  kd_tensor *x = kd_context_input(ctx, 0), *y;
  if (kd_context_allocate_output(ctx, 0, kd_tensor_ndim(x), kd_tensor_sizes(x), &y) != KD_OK) {
    kd_context_fail(ctx, kd_last_status(), "%s", kd_last_error());
    return;
  }
  for (int64_t i = 0; i < kd_tensor_numel(x); i++) {
    if (o->dtype == KD_FLOAT32)
      ((float *)kd_tensor_data(y))[i] = fabsf(((float *)kd_tensor_data(x))[i]) * (float)o->scale;
    else
      ((double *)kd_tensor_data(y))[i] = fabs(((double *)kd_tensor_data(x))[i]) * o->scale;
  }
  if (o->scale < 0) kd_context_fail(ctx, KD_ERANGE, "abs: negative scale %g", o->scale);
}

static void abs_destroy(void *object) {
  objects_alive--;
  free(object);
}

/* A definition with one constraint on `self`, stored together so that each
 * definition has its own constraint array. */
typedef struct def_box {
  kd_kernel_def d;
  kd_type_constraint c[1];
} def_box;

static void make_def(def_box *b, const char *debug, kd_device_type device, kd_dtype_set allowed,
                     const char *label, int priority, void *class_data) {
  memset(b, 0, sizeof *b);
  b->c[0].name = "self";
  b->c[0].allowed = allowed;
  kd_kernel_def *d = &b->d;
  d->api_version = KD_KERNEL_DEF_API_VERSION;
  d->op = "kdef::abs";
  d->device = device;
  d->constraints = b->c;
  d->nconstraints = 1;
  d->label = label;
  d->priority = priority;
  d->kernel_class.api_version = KD_KERNEL_CLASS_API_VERSION;
  d->kernel_class.create = abs_create;
  d->kernel_class.compute = abs_compute;
  d->kernel_class.destroy = abs_destroy;
  d->kernel_class.class_data = class_data;
  d->debug = debug;
}

static kd_library *def_lib;

static int setup(void **state) {
  (void)state;
  if (kd_library_open(KD_LIBRARY_DEF, "kdef", KD_KEY_UNDEFINED, __FILE__, __LINE__, &def_lib) ||
      kd_library_def(def_lib, "abs(Tensor self) -> Tensor", NULL, 0, NULL) ||
      kd_library_def(def_lib, "scaled(Tensor self, float factor) -> Tensor", NULL, 0, NULL))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kd_library_close(def_lib);
  return 0;
}

static void test_lookup_rules(void **state) {
  (void)state;
  def_box d1_box;
  make_def(&d1_box, "generic.c:1", KD_DEVICE_CPU, KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_FLOAT64),
                              NULL, 0, "generic");
  kd_kernel_def *d1p = &d1_box.d;
  def_box d2_box;
  make_def(&d2_box, "special.c:2", KD_DEVICE_CPU, KD_DTYPE_BIT(KD_FLOAT32), NULL, 5, "special");
  kd_kernel_def *d2p = &d2_box.d;
  def_box d3_box;
  make_def(&d3_box, "fast.c:3", KD_DEVICE_CPU, KD_ALL_DTYPES, "fast", 0, "fast");
  kd_kernel_def *d3p = &d3_box.d;
  kd_kernel_def_reg *r1, *r2, *r3;
  KD_ASSERT_OK(kd_kernel_def_register(d1p, &r1));
  KD_ASSERT_OK(kd_kernel_def_register(d2p, &r2));
  KD_ASSERT_OK(kd_kernel_def_register(d3p, &r3));
  const kd_kernel_def *found;
  kd_type_binding f32 = {"self", KD_FLOAT32}, f64 = {"self", KD_FLOAT64}, f16 = {"self", KD_FLOAT16};
  /* The highest priority of the matches. */
  KD_ASSERT_OK(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f32, 1, NULL, &found));
  KD_ASSERT_STR_EQ(found->debug, "special.c:2");
  KD_ASSERT_OK(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f64, 1, "", &found));
  KD_ASSERT_STR_EQ(found->debug, "generic.c:1");
  /* Labeled definitions only when asked for. */
  KD_ASSERT_OK(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f16, 1, "fast", &found));
  KD_ASSERT_STR_EQ(found->debug, "fast.c:3");
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f16, 1, NULL, &found), KD_ENOTFOUND,
                "No kernel for 'kdef::abs' on device 'cpu' with self=float16. Registered:");
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f16, 1, NULL, &found), KD_ENOTFOUND,
                "device='cpu'; self in [float32, float64]");
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f16, 1, NULL, &found), KD_ENOTFOUND,
                "device='cpu'; self in [float32]; priority 5");
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f32, 1, "slow", &found), KD_ENOTFOUND,
                "and label 'slow'");
  /* Another device, and an unbound constraint. */
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CUDA, &f32, 1, NULL, &found), KD_ENOTFOUND,
                "on device 'cuda' with self=float32");
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, NULL, 0, NULL, &found), KD_ENOTFOUND,
                "No kernel for 'kdef::abs' on device 'cpu'. Registered:");
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::nope", KD_DEVICE_CPU, &f32, 1, NULL, &found), KD_ENOTFOUND,
                "operator 'kdef::nope' not found");
  /* Two matches at the same priority: an error naming both. */
  def_box d4_box;
  make_def(&d4_box, "other.c:4", KD_DEVICE_CPU, KD_DTYPE_BIT(KD_FLOAT64), NULL, 0, "other");
  kd_kernel_def *d4p = &d4_box.d;
  kd_kernel_def_reg *r4;
  KD_ASSERT_OK(kd_kernel_def_register(d4p, &r4));
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f64, 1, NULL, &found), KD_EEXIST,
                "match at priority 0: the one registered at generic.c:1 and the one registered at "
                "other.c:4");
  kd_kernel_def_release(r4);
  KD_ASSERT_OK(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f64, 1, NULL, &found));
  /* Released definitions are gone. */
  kd_kernel_def_release(r2);
  KD_ASSERT_OK(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f32, 1, NULL, &found));
  KD_ASSERT_STR_EQ(found->debug, "generic.c:1");
  kd_kernel_def_release(r1);
  kd_kernel_def_release(r3);
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::abs", KD_DEVICE_CPU, &f32, 1, NULL, &found), KD_ENOTFOUND,
                "Registered: (none)");
}

static void test_register_errors(void **state) {
  (void)state;
  kd_kernel_def_reg *r = NULL;
  def_box d_box;
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_DTYPE_BIT(KD_FLOAT32), NULL, 0, "x");
  kd_kernel_def *dp = &d_box.d;
  dp->op = "kdef::missing";
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_ENOTFOUND, "operator 'kdef::missing' not found");
  assert_null(r);
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, 0, NULL, 0, "x");
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL, "constraint 'self' allows no dtype");
  kd_type_constraint bad = {"9x", KD_ALL_DTYPES};
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "x");
  dp->constraints = &bad;
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL, "bad constraint name '9x'");
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "x");
  const char *hm[1] = {"other"};
  dp->host_memory = hm;
  dp->nhost_memory = 1;
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL,
                "host memory argument 'other' is not an argument of the schema");
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "x");
  dp->kernel_class.compute = NULL;
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL, "needs create and compute");
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "x");
  dp->api_version = 9;
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL,
                "kd_kernel_def api_version 9 is not supported: this library accepts only 1 "
                "(KD_KERNEL_DEF_API_VERSION)");
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "x");
  dp->kernel_class.api_version = 0;
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL,
                "kd_kernel_class api_version 0 is not supported: this library accepts only 1 "
                "(KD_KERNEL_CLASS_API_VERSION)");
  make_def(&d_box, "x.c:1", (kd_device_type)42, KD_ALL_DTYPES, NULL, 0, "x");
  KD_ASSERT_ERR(kd_kernel_def_register(dp, &r), KD_EINVAL, "invalid device type 42");
  /* Host memory naming a real argument is fine. */
  make_def(&d_box, "x.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "x");
  const char *hm2[1] = {"self"};
  dp->host_memory = hm2;
  dp->nhost_memory = 1;
  KD_ASSERT_OK(kd_kernel_def_register(dp, &r));
  kd_kernel_def_release(r);
}

static kd_tensor *vec(kd_dtype dt, double a, double b) {
  kd_tensor *t;
  kd_tensor_empty(1, (int64_t[]){2}, dt, kd_device_cpu(), &t);
  kd_scalar s = kd_scalar_double(a);
  kd_tensor_set(t, (int64_t[]){0}, &s);
  s = kd_scalar_double(b);
  kd_tensor_set(t, (int64_t[]){1}, &s);
  return t;
}

static void test_prepared(void **state) {
  (void)state;
  def_box d_box;
  make_def(&d_box, "generic.c:1", KD_DEVICE_CPU,
                             KD_DTYPE_BIT(KD_FLOAT32) | KD_DTYPE_BIT(KD_FLOAT64), NULL, 0, "generic");
  kd_kernel_def *dp = &d_box.d;
  kd_kernel_def_reg *r;
  KD_ASSERT_OK(kd_kernel_def_register(dp, &r));
  kd_dtype in[1] = {KD_FLOAT64}, outd[1] = {KD_FLOAT64};
  kd_attr attrs[1] = {{"scale", kd_value_double(3.0)}};
  kd_prepared *p;
  KD_ASSERT_OK(kd_prepared_new("kdef::abs", KD_DEVICE_CPU, in, 1, NULL, 0, outd, 1, attrs, 1, NULL, &p));
  assert_int_equal(objects_alive, 1);
  KD_ASSERT_STR_EQ(kd_prepared_def(p)->debug, "generic.c:1");
  kd_tensor *x = vec(KD_FLOAT64, -1.5, 2.0);
  kd_value inputs[1] = {kd_value_tensor_borrowed(x)};
  kd_value outputs[1];
  for (int rep = 0; rep < 3; rep++) {
    KD_ASSERT_OK(kd_prepared_run(p, inputs, outputs));
    kd_scalar v;
    KD_ASSERT_OK(kd_tensor_get(outputs[0].u.t, (int64_t[]){0}, &v));
    assert_true(v.v.d == 4.5);
    KD_ASSERT_OK(kd_tensor_get(outputs[0].u.t, (int64_t[]){1}, &v));
    assert_true(v.v.d == 6.0);
    kd_value_destroy(&outputs[0]);
  }
  /* A run with inputs of another dtype than prepared. */
  kd_tensor *y = vec(KD_FLOAT32, 1, 2);
  kd_value bad[1] = {kd_value_tensor_borrowed(y)};
  KD_ASSERT_ERR(kd_prepared_run(p, bad, outputs), KD_ETYPE,
                "kdef::abs: input 0 was prepared as a float64 tensor, got float32");
  kd_value notensor[1] = {kd_value_int(3)};
  KD_ASSERT_ERR(kd_prepared_run(p, notensor, outputs), KD_ETYPE, "got int");
  /* The unchecked entry computes the same for inputs that match. */
  KD_ASSERT_OK(kd_prepared_run_unchecked(p, inputs, outputs));
  kd_scalar u;
  KD_ASSERT_OK(kd_tensor_get(outputs[0].u.t, (int64_t[]){0}, &u));
  assert_true(u.v.d == 4.5);
  kd_value_destroy(&outputs[0]);
  /* The definition can be released while a prepared kernel uses it. */
  kd_kernel_def_release(r);
  KD_ASSERT_OK(kd_prepared_run(p, inputs, outputs));
  kd_value_destroy(&outputs[0]);
  kd_prepared_free(p);
  assert_int_equal(objects_alive, 0);
  kd_tensor_release(x);
  kd_tensor_release(y);
}

static void test_prepared_errors(void **state) {
  (void)state;
  def_box d_box;
  make_def(&d_box, "generic.c:1", KD_DEVICE_CPU, KD_DTYPE_BIT(KD_FLOAT32), NULL, 0, "generic");
  kd_kernel_def *dp = &d_box.d;
  kd_kernel_def_reg *r;
  KD_ASSERT_OK(kd_kernel_def_register(dp, &r));
  kd_prepared *p = (kd_prepared *)0x1;
  kd_dtype f32[1] = {KD_FLOAT32}, f64[1] = {KD_FLOAT64};
  /* Construction refused by the class. */
  kd_attr rej[1] = {{"reject", kd_value_bool(true)}};
  KD_ASSERT_ERR(kd_prepared_new("kdef::abs", KD_DEVICE_CPU, f32, 1, NULL, 0, f32, 1, rej, 1, NULL, &p),
                KD_EINVAL, "generic: construction refused (reject=True) for float32");
  assert_null(p);
  assert_int_equal(objects_alive, 0);
  /* No matching definition. */
  KD_ASSERT_ERR(kd_prepared_new("kdef::abs", KD_DEVICE_CPU, f64, 1, NULL, 0, f64, 1, NULL, 0, NULL, &p),
                KD_ENOTFOUND, "with self=float64. Registered: device='cpu'; self in [float32]");
  /* Wrong counts. */
  KD_ASSERT_ERR(kd_prepared_new("kdef::abs", KD_DEVICE_CPU, f32, 1, NULL, 0, NULL, 0, NULL, 0, NULL, &p),
                KD_EINVAL, "expected 1 input and 1 output dtypes, got 1 and 0");
  /* A failure reported by compute; outputs come back None. */
  kd_attr neg[1] = {{"scale", kd_value_double(-1.0)}};
  KD_ASSERT_OK(kd_prepared_new("kdef::abs", KD_DEVICE_CPU, f32, 1, NULL, 0, f32, 1, neg, 1, NULL, &p));
  kd_tensor *x = vec(KD_FLOAT32, 1, 2);
  kd_value in[1] = {kd_value_tensor_borrowed(x)}, out[1];
  KD_ASSERT_ERR(kd_prepared_run(p, in, out), KD_ERANGE, "abs: negative scale -1");
  assert_true(kd_value_is_none(&out[0]));
  KD_ASSERT_ERR(kd_prepared_run_unchecked(p, in, out), KD_ERANGE, "abs: negative scale -1");
  assert_true(kd_value_is_none(&out[0]));
  kd_prepared_free(p);
  /* An output prepared without a dtype cannot be allocated. */
  kd_dtype undef[1] = {KD_DTYPE_UNDEFINED};
  KD_ASSERT_OK(kd_prepared_new("kdef::abs", KD_DEVICE_CPU, f32, 1, NULL, 0, undef, 1, NULL, 0, NULL, &p));
  KD_ASSERT_ERR(kd_prepared_run(p, in, out), KD_ESTATE, "output 0 has no dtype");
  kd_prepared_free(p);
  kd_prepared_free(NULL);
  kd_tensor_release(x);
  kd_kernel_def_release(r);
  assert_int_equal(objects_alive, 0);
}

/* A constraint on a name that is not an argument, bound by the caller. */
static void test_explicit_binding(void **state) {
  (void)state;
  kd_type_constraint c[1] = {{"T", KD_DTYPE_BIT(KD_FLOAT32)}};
  def_box d_box;
  make_def(&d_box, "t.c:1", KD_DEVICE_CPU, KD_ALL_DTYPES, NULL, 0, "T");
  kd_kernel_def *dp = &d_box.d;
  dp->op = "kdef::scaled";
  dp->constraints = c;
  kd_kernel_def_reg *r;
  KD_ASSERT_OK(kd_kernel_def_register(dp, &r));
  const kd_kernel_def *found;
  kd_type_binding t32 = {"T", KD_FLOAT32}, t64 = {"T", KD_FLOAT64};
  KD_ASSERT_OK(kd_kernel_def_find("kdef::scaled", KD_DEVICE_CPU, &t32, 1, NULL, &found));
  KD_ASSERT_ERR(kd_kernel_def_find("kdef::scaled", KD_DEVICE_CPU, &t64, 1, NULL, &found),
                KD_ENOTFOUND, "with T=float64. Registered: device='cpu'; T in [float32]");
  kd_kernel_def_release(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lookup_rules),   cmocka_unit_test(test_register_errors),
      cmocka_unit_test(test_prepared),       cmocka_unit_test(test_prepared_errors),
      cmocka_unit_test(test_explicit_binding),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
