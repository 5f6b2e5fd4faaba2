/* Dispatch keys (kd/keys.h): names, functionalities x backends, alias
 * expansion, key sets and redispatch, formatting; tensors' key sets; inference
 * mode (kd/dispatch.h) and its thread-locality. The expected values are
 * written out here from the layout of docs/ARCHITECTURE.md ("Dispatch keys"),
 * not computed with the library's tables. Renaming private keys is
 * process-global: tests/test_keys_rename.c does it in its own process. */
#include <pthread.h>

#include "kd/dlpack.h"
#include "kd_test.h"

#define BIT(k) ((kd_keyset)1 << (k))
/* Bits lo..hi inclusive. */
#define BITS(lo, hi) ((((kd_keyset)2 << (hi)) - 1) & ~(BIT(lo) - 1))

/* Every runtime key, by bit. */
static const struct {
  unsigned bit;
  const char *name;
} runtime_keys[] = {
    {0, "Undefined"},
    {1, "CPU"},
    {2, "CUDA"},
    {3, "Meta"},
    {4, "PrivateUse1"},
    {5, "PrivateUse2"},
    {6, "PrivateUse3"},
    {7, "QuantizedCPU"},
    {8, "QuantizedCUDA"},
    {9, "QuantizedMeta"},
    {10, "QuantizedPrivateUse1"},
    {11, "QuantizedPrivateUse2"},
    {12, "QuantizedPrivateUse3"},
    {13, "SparseCPU"},
    {14, "SparseCUDA"},
    {15, "SparseMeta"},
    {16, "SparsePrivateUse1"},
    {17, "SparsePrivateUse2"},
    {18, "SparsePrivateUse3"},
    {19, "SparseCsrCPU"},
    {20, "SparseCsrCUDA"},
    {21, "SparseCsrMeta"},
    {22, "SparseCsrPrivateUse1"},
    {23, "SparseCsrPrivateUse2"},
    {24, "SparseCsrPrivateUse3"},
    {25, "NestedTensorCPU"},
    {26, "NestedTensorCUDA"},
    {27, "NestedTensorMeta"},
    {28, "NestedTensorPrivateUse1"},
    {29, "NestedTensorPrivateUse2"},
    {30, "NestedTensorPrivateUse3"},
    {31, "BackendSelect"},
    {36, "ADInplaceOrView"},
    {37, "AutogradOther"},
    {38, "AutogradCPU"},
    {39, "AutogradCUDA"},
    {40, "AutogradMeta"},
    {41, "AutogradPrivateUse1"},
    {42, "AutogradPrivateUse2"},
    {43, "AutogradPrivateUse3"},
    {44, "AutogradNestedTensor"},
    {45, "Tracer"},
    {46, "Profiler"},
    {47, "Mode1"},
    {48, "Mode2"},
};

/* The alias keys and their values (64..66 did not move from version 0.2). */
static const struct {
  int value;
  const char *name;
} alias_keys[] = {
    {64, "CompositeExplicitAutograd"},
    {65, "CompositeImplicitAutograd"},
    {66, "CatchAll"},
    {67, "Autograd"},
    {68, "CompositeExplicitAutogradNonFunctional"},
    {69, "CompositeImplicitAutogradNestedTensor"},
};

#define NRUNTIME (sizeof runtime_keys / sizeof *runtime_keys)
#define NALIAS (sizeof alias_keys / sizeof *alias_keys)

/* The first key of each functionality, in kd_functionality order. */
static const unsigned functionality_first[KD_FUNCTIONALITY_COUNT] = {1, 7, 13, 19, 25, 38};

/* Every runtime key as a set, from the table. */
static kd_keyset all_runtime(void) {
  kd_keyset ks = 0;
  for (size_t i = 0; i < NRUNTIME; i++) ks |= BIT(runtime_keys[i].bit);
  return ks;
}

/* ---- Names ------------------------------------------------------------------- */

static void test_names_round_trip(void **state) {
  (void)state;
  assert_int_equal(NRUNTIME, 45);
  for (size_t i = 0; i < NRUNTIME; i++) {
    kd_dispatch_key k = (kd_dispatch_key)runtime_keys[i].bit;
    KD_ASSERT_STR_EQ(kd_dispatch_key_name(k), runtime_keys[i].name);
    kd_dispatch_key back = KD_KEY_INVALID_;
    KD_ASSERT_OK(kd_dispatch_key_from_name(runtime_keys[i].name, &back));
    assert_int_equal(back, k);
    assert_true(kd_dispatch_key_is_runtime(k));
    assert_false(kd_dispatch_key_is_alias(k));
  }
  for (size_t i = 0; i < NALIAS; i++) {
    kd_dispatch_key k = (kd_dispatch_key)alias_keys[i].value;
    KD_ASSERT_STR_EQ(kd_dispatch_key_name(k), alias_keys[i].name);
    kd_dispatch_key back = KD_KEY_INVALID_;
    KD_ASSERT_OK(kd_dispatch_key_from_name(alias_keys[i].name, &back));
    assert_int_equal(back, k);
    assert_true(kd_dispatch_key_is_alias(k));
    assert_false(kd_dispatch_key_is_runtime(k));
  }
  /* The enum agrees with the table at a few points. */
  assert_int_equal(KD_KEY_BACKEND_SELECT, 31);
  assert_int_equal(KD_KEY_AUTOGRAD_CPU, 38);
  assert_int_equal(KD_KEY_MODE2, 48);
  assert_int_equal(KD_KEY_CATCH_ALL, 66);
  assert_int_equal(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR, 69);
  assert_int_equal(KD_KEY_INVALID_, 70);
}

static void test_reserved_and_invalid(void **state) {
  (void)state;
  kd_keyset runtime = all_runtime();
  int count = 0;
  for (int k = 0; k < KD_NUM_RUNTIME_KEYS; k++) {
    bool is = (runtime & BIT(k)) != 0;
    assert_int_equal(kd_dispatch_key_is_runtime((kd_dispatch_key)k), is);
    if (is) {
      count++;
    } else {
      /* Reserved bits: 32..35 and 49..63. */
      assert_true((k >= 32 && k <= 35) || k >= 49);
      KD_ASSERT_STR_EQ(kd_dispatch_key_name((kd_dispatch_key)k), "Invalid");
      assert_false(kd_dispatch_key_is_alias((kd_dispatch_key)k));
      assert_true(kd_dispatch_key_expand((kd_dispatch_key)k) == 0);
    }
  }
  assert_int_equal(count, 45);
  kd_dispatch_key bad[] = {KD_KEY_INVALID_, (kd_dispatch_key)-1,
                           (kd_dispatch_key)1000};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    KD_ASSERT_STR_EQ(kd_dispatch_key_name(bad[i]), "Invalid");
    assert_false(kd_dispatch_key_is_runtime(bad[i]));
    assert_false(kd_dispatch_key_is_alias(bad[i]));
    assert_true(kd_dispatch_key_expand(bad[i]) == 0);
    assert_true(kd_keyset_of(bad[i]) == 0);
    assert_false(kd_keyset_has(~(kd_keyset)0, bad[i]));
  }
}

static void test_from_name_errors(void **state) {
  (void)state;
  kd_dispatch_key k = KD_KEY_MODE1;
  KD_ASSERT_ERR(kd_dispatch_key_from_name("Nope", &k), KD_ENOTFOUND,
                "unknown dispatch key 'Nope': expected one of Undefined, CPU, CUDA");
  /* The list names the new keys and ends with the aliases. */
  KD_ASSERT_ERR(kd_dispatch_key_from_name("Nope", &k), KD_ENOTFOUND,
                "AutogradOther, AutogradCPU");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("Nope", &k), KD_ENOTFOUND,
                "CompositeImplicitAutogradNestedTensor");
  /* Names are case-sensitive; "Invalid" and reserved slots are not keys. */
  KD_ASSERT_ERR(kd_dispatch_key_from_name("cpu", &k), KD_ENOTFOUND, "'cpu'");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("autogradcpu", &k), KD_ENOTFOUND, "'autogradcpu'");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("Invalid", &k), KD_ENOTFOUND, "'Invalid'");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("Key33", &k), KD_ENOTFOUND, "'Key33'");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("", &k), KD_ENOTFOUND, "''");
  assert_int_equal(k, KD_KEY_MODE1); /* untouched on error */
  KD_ASSERT_ERR(kd_dispatch_key_from_name(NULL, &k), KD_EINVAL, "NULL");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("CPU", NULL), KD_EINVAL, "NULL");
}

/* ---- Functionalities and backends ---------------------------------------------- */

static void test_of_and_split(void **state) {
  (void)state;
  for (int f = 0; f < KD_FUNCTIONALITY_COUNT; f++) {
    kd_keyset col = 0;
    for (int b = 0; b < KD_NUM_BACKENDS; b++) {
      kd_dispatch_key k = kd_dispatch_key_of((kd_functionality)f, (kd_device_type)b);
      assert_int_equal(k, functionality_first[f] + (unsigned)b);
      kd_functionality gf = KD_FUNCTIONALITY_COUNT;
      kd_device_type gb = KD_DEVICE_TYPE_COUNT;
      assert_true(kd_dispatch_key_split(k, &gf, &gb));
      assert_int_equal(gf, f);
      assert_int_equal(gb, b);
      assert_true(kd_dispatch_key_split(k, NULL, NULL));
      assert_true(kd_dispatch_key_split(k, &gf, NULL));
      assert_true(kd_dispatch_key_split(k, NULL, &gb));
      assert_int_equal(kd_dispatch_key_functionality_first(k), functionality_first[f]);
      col |= BIT(k);
    }
    assert_true(kd_keyset_functionality((kd_functionality)f) == col);
    assert_true(col == BITS(functionality_first[f], functionality_first[f] + 5));
  }
  /* Named examples. */
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_AUTOGRAD, KD_DEVICE_CPU), KD_KEY_AUTOGRAD_CPU);
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_DENSE, KD_DEVICE_META), KD_KEY_META);
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_SPARSE_CSR, KD_DEVICE_PRIVATEUSE1),
                   KD_KEY_SPARSE_CSR_PRIVATEUSE1);
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_NESTED_TENSOR, KD_DEVICE_CUDA),
                   KD_KEY_NESTED_TENSOR_CUDA);
  /* Out of range. */
  assert_int_equal(kd_dispatch_key_of((kd_functionality)-1, KD_DEVICE_CPU), KD_KEY_INVALID_);
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_COUNT, KD_DEVICE_CPU), KD_KEY_INVALID_);
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_DENSE, KD_DEVICE_TYPE_COUNT),
                   KD_KEY_INVALID_);
  assert_int_equal(kd_dispatch_key_of(KD_FUNCTIONALITY_AUTOGRAD, (kd_device_type)-1),
                   KD_KEY_INVALID_);
  assert_true(kd_keyset_functionality((kd_functionality)-1) == 0);
  assert_true(kd_keyset_functionality(KD_FUNCTIONALITY_COUNT) == 0);
  /* Keys of no backend do not split, and leave the outputs alone. */
  kd_dispatch_key none[] = {KD_KEY_UNDEFINED,
                            KD_KEY_BACKEND_SELECT,
                            KD_KEY_AD_INPLACE_OR_VIEW,
                            KD_KEY_AUTOGRAD_OTHER,
                            KD_KEY_AUTOGRAD_NESTED_TENSOR,
                            KD_KEY_TRACER,
                            KD_KEY_PROFILER,
                            KD_KEY_MODE1,
                            KD_KEY_MODE2,
                            (kd_dispatch_key)32,
                            (kd_dispatch_key)63,
                            KD_KEY_AUTOGRAD,
                            KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD,
                            KD_KEY_INVALID_,
                            (kd_dispatch_key)-1};
  for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
    kd_functionality gf = KD_FUNCTIONALITY_COUNT;
    kd_device_type gb = KD_DEVICE_TYPE_COUNT;
    assert_false(kd_dispatch_key_split(none[i], &gf, &gb));
    assert_int_equal(gf, KD_FUNCTIONALITY_COUNT);
    assert_int_equal(gb, KD_DEVICE_TYPE_COUNT);
    if ((unsigned)none[i] < KD_NUM_RUNTIME_KEYS)
      assert_int_equal(kd_dispatch_key_functionality_first(none[i]), none[i]);
  }
  /* The named sets. */
  assert_true(kd_keyset_backends() == BITS(1, 6));
  assert_true(kd_keyset_autograd() == BITS(37, 44));
  /* Backend and Autograd keys of device types. */
  for (int t = 0; t < KD_DEVICE_TYPE_COUNT; t++) {
    assert_int_equal(kd_backend_key((kd_device_type)t), 1 + t);
    assert_int_equal(kd_autograd_key((kd_device_type)t), 38 + t);
  }
  assert_int_equal(kd_autograd_key(KD_DEVICE_PRIVATEUSE1), KD_KEY_AUTOGRAD_PRIVATEUSE1);
  assert_int_equal(kd_backend_key(KD_DEVICE_TYPE_COUNT), KD_KEY_UNDEFINED);
  assert_int_equal(kd_backend_key((kd_device_type)-1), KD_KEY_UNDEFINED);
  assert_int_equal(kd_autograd_key(KD_DEVICE_TYPE_COUNT), KD_KEY_UNDEFINED);
  assert_int_equal(kd_autograd_key((kd_device_type)-1), KD_KEY_UNDEFINED);
}

/* ---- Key sets ---------------------------------------------------------------------- */

static void test_keyset_basics(void **state) {
  (void)state;
  assert_true(kd_keyset_of(KD_KEY_UNDEFINED) == 1);
  assert_true(kd_keyset_of(KD_KEY_AUTOGRAD_META) == BIT(40));
  assert_true(kd_keyset_of((kd_dispatch_key)63) == BIT(63));
  assert_true(kd_keyset_of(KD_KEY_AUTOGRAD) == 0); /* aliases have no bit */
  kd_keyset ks = BIT(KD_KEY_CPU) | BIT(KD_KEY_AUTOGRAD_CPU);
  assert_true(kd_keyset_has(ks, KD_KEY_CPU));
  assert_true(kd_keyset_has(ks, KD_KEY_AUTOGRAD_CPU));
  assert_false(kd_keyset_has(ks, KD_KEY_CUDA));
  assert_false(kd_keyset_has(ks, KD_KEY_AUTOGRAD));
  assert_int_equal(kd_keyset_highest(0), KD_KEY_UNDEFINED);
  assert_int_equal(kd_keyset_highest(1), KD_KEY_UNDEFINED);
  assert_int_equal(kd_keyset_highest(ks), KD_KEY_AUTOGRAD_CPU);
  assert_int_equal(kd_keyset_highest(ks | BIT(KD_KEY_AD_INPLACE_OR_VIEW)), KD_KEY_AUTOGRAD_CPU);
  assert_int_equal(kd_keyset_highest(BIT(KD_KEY_CPU) | BIT(KD_KEY_SPARSE_CPU)), KD_KEY_SPARSE_CPU);
  assert_int_equal(kd_keyset_highest(BIT(63)), 63);
}

/* kd_keyset_below drops the key's whole functionality (PyTorch's
 * FULL_AFTER): what a kernel at that key redispatches to. */
static void test_keyset_below(void **state) {
  (void)state;
  kd_keyset all = ~(kd_keyset)0;
  /* Mixed backends: a kernel at AutogradCUDA called with a CPU and a CUDA
   * tensor goes on to ADInplaceOrView, then CUDA, not to AutogradCPU. */
  kd_keyset ks = BIT(KD_KEY_CPU) | BIT(KD_KEY_CUDA) | BIT(KD_KEY_AD_INPLACE_OR_VIEW) |
                 BIT(KD_KEY_AUTOGRAD_CPU) | BIT(KD_KEY_AUTOGRAD_CUDA);
  kd_keyset next = kd_keyset_below(ks, KD_KEY_AUTOGRAD_CUDA);
  assert_true(next == (BIT(KD_KEY_CPU) | BIT(KD_KEY_CUDA) | BIT(KD_KEY_AD_INPLACE_OR_VIEW)));
  assert_int_equal(kd_keyset_highest(next), KD_KEY_AD_INPLACE_OR_VIEW);
  assert_true(kd_keyset_below(ks, KD_KEY_AUTOGRAD_CPU) == next);
  next = kd_keyset_below(next, KD_KEY_AD_INPLACE_OR_VIEW);
  assert_true(next == (BIT(KD_KEY_CPU) | BIT(KD_KEY_CUDA)));
  assert_int_equal(kd_keyset_highest(next), KD_KEY_CUDA);
  /* Below CUDA: the dense functionality is done, CPU included. */
  assert_true(kd_keyset_below(next, KD_KEY_CUDA) == 0);
  assert_true(kd_keyset_below(next, KD_KEY_CPU) == 0);
  /* Every functionality: below any of its keys is below its first key. */
  for (int f = 0; f < KD_FUNCTIONALITY_COUNT; f++)
    for (int b = 0; b < KD_NUM_BACKENDS; b++) {
      kd_dispatch_key k = kd_dispatch_key_of((kd_functionality)f, (kd_device_type)b);
      assert_true(kd_keyset_below(all, k) == BIT(functionality_first[f]) - 1);
    }
  /* Sparse with quantized and dense keys of other backends. */
  ks = BIT(KD_KEY_SPARSE_CPU) | BIT(KD_KEY_SPARSE_META) | BIT(KD_KEY_QUANTIZED_CUDA) |
       BIT(KD_KEY_CPU);
  assert_true(kd_keyset_below(ks, KD_KEY_SPARSE_META) ==
              (BIT(KD_KEY_QUANTIZED_CUDA) | BIT(KD_KEY_CPU)));
  assert_true(kd_keyset_below(ks, KD_KEY_QUANTIZED_CUDA) == BIT(KD_KEY_CPU));
  /* Keys of no backend drop only themselves and what is above. */
  assert_true(kd_keyset_below(all, KD_KEY_BACKEND_SELECT) == BITS(0, 30));
  assert_true(kd_keyset_below(all, KD_KEY_AD_INPLACE_OR_VIEW) == BITS(0, 35));
  assert_true(kd_keyset_below(all, KD_KEY_AUTOGRAD_OTHER) == BITS(0, 36));
  assert_true(kd_keyset_below(all, KD_KEY_AUTOGRAD_NESTED_TENSOR) == BITS(0, 43));
  assert_true(kd_keyset_below(all, KD_KEY_TRACER) == BITS(0, 44));
  assert_true(kd_keyset_below(all, KD_KEY_MODE2) == BITS(0, 47));
  assert_true(kd_keyset_below(all, KD_KEY_UNDEFINED) == 0);
  /* An alias or invalid key leaves the set as it is. */
  assert_true(kd_keyset_below(ks, KD_KEY_AUTOGRAD) == ks);
  assert_true(kd_keyset_below(ks, KD_KEY_INVALID_) == ks);
  assert_true(kd_keyset_below(ks, (kd_dispatch_key)-1) == ks);
}

/* The sets of the contract (issue 19), written out. */
static void test_expand_aliases(void **state) {
  (void)state;
  kd_keyset undefined = BIT(0), dense = BITS(1, 6), quantized = BITS(7, 12),
            sparse = BITS(13, 18), csr = BITS(19, 24), nested = BITS(25, 30),
            autograd_b = BITS(38, 43), other = BIT(37), agnt = BIT(44);
  kd_keyset cea = undefined | dense | quantized | sparse | csr;
  assert_true(kd_dispatch_key_expand(KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD) == cea);
  assert_true(kd_dispatch_key_expand(KD_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL) ==
              (undefined | dense | quantized | csr));
  assert_true(kd_dispatch_key_expand(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD) ==
              (cea | nested | autograd_b | other | agnt));
  assert_true(kd_dispatch_key_expand(KD_KEY_COMPOSITE_IMPLICIT_AUTOGRAD_NESTED_TENSOR) ==
              (nested | agnt));
  assert_true(kd_dispatch_key_expand(KD_KEY_AUTOGRAD) == (autograd_b | other | agnt));
  assert_true(kd_dispatch_key_expand(KD_KEY_CATCH_ALL) == all_runtime());
  /* None of the aliases reaches BackendSelect, ADInplaceOrView or a mode
   * key but CatchAll. */
  kd_keyset not_composite = BIT(31) | BIT(36) | BITS(45, 48);
  for (size_t i = 0; i < NALIAS; i++) {
    kd_keyset e = kd_dispatch_key_expand((kd_dispatch_key)alias_keys[i].value);
    assert_true(e != 0);
    if (alias_keys[i].value != KD_KEY_CATCH_ALL) assert_true((e & not_composite) == 0);
  }
  /* A runtime key stands for itself. */
  for (size_t i = 0; i < NRUNTIME; i++)
    assert_true(kd_dispatch_key_expand((kd_dispatch_key)runtime_keys[i].bit) ==
                BIT(runtime_keys[i].bit));
}

static void test_keyset_format(void **state) {
  (void)state;
  char buf[256];
  assert_int_equal(kd_keyset_format(0, buf, sizeof buf), 2);
  KD_ASSERT_STR_EQ(buf, "[]");
  kd_keyset ks = BIT(KD_KEY_CPU) | BIT(KD_KEY_AD_INPLACE_OR_VIEW) | BIT(KD_KEY_AUTOGRAD_CPU);
  const char *want = "[CPU, ADInplaceOrView, AutogradCPU]";
  assert_int_equal(kd_keyset_format(ks, buf, sizeof buf), strlen(want));
  KD_ASSERT_STR_EQ(buf, want);
  /* Ascending, with the new keys' names, reserved bits by number. */
  ks = BIT(0) | BIT(KD_KEY_NESTED_TENSOR_PRIVATEUSE3) | BIT(33) | BIT(KD_KEY_AUTOGRAD_NESTED_TENSOR) |
       BIT(KD_KEY_MODE2) | BIT(63);
  kd_keyset_format(ks, buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "[Undefined, NestedTensorPrivateUse3, Key33, AutogradNestedTensor, Mode2, Key63]");
  /* Every runtime key, in the table's order. */
  char all[2048], expect[2048] = "[";
  for (size_t i = 0; i < NRUNTIME; i++) {
    strcat(expect, runtime_keys[i].name);
    strcat(expect, i + 1 < NRUNTIME ? ", " : "]");
  }
  assert_int_equal(kd_keyset_format(all_runtime(), all, sizeof all), strlen(expect));
  KD_ASSERT_STR_EQ(all, expect);
  /* Truncation: snprintf's contract. */
  memset(buf, 'x', sizeof buf);
  assert_int_equal(kd_keyset_format(BIT(KD_KEY_AUTOGRAD_CPU), buf, 5), strlen("[AutogradCPU]"));
  KD_ASSERT_STR_EQ(buf, "[Aut");
  assert_int_equal(kd_keyset_format(BIT(KD_KEY_CPU), NULL, 0), 5);
  buf[0] = 'x';
  assert_int_equal(kd_keyset_format(BIT(KD_KEY_CPU), buf, 1), 5);
  assert_int_equal(buf[0], '\0');
}

/* ---- Tensors and inference mode ---------------------------------------------------- */

/* The key set of a tensor made outside inference mode on device type t. */
static kd_keyset normal_keys(int t) { return BIT(1 + t) | BIT(36) | BIT(38 + t); }

static kd_tensor *empty_on(kd_device_type type) {
  kd_tensor *t;
  KD_ASSERT_OK(kd_tensor_empty(2, (int64_t[]){2, 3}, KD_FLOAT32, (kd_device){type, 0}, &t));
  return t;
}

/* Views of `base` (as_strided, as_strided with a dtype) must carry `want`. */
static void assert_views_carry(kd_tensor *base, kd_keyset want) {
  kd_tensor *v, *w;
  KD_ASSERT_OK(kd_tensor_as_strided(base, 1, (int64_t[]){3}, (int64_t[]){2}, 0, &v));
  assert_true(kd_tensor_key_set(v) == want);
  KD_ASSERT_OK(kd_tensor_as_strided_dtype(v, KD_INT32, 1, (int64_t[]){2}, (int64_t[]){1}, 1, &w));
  assert_int_equal(kd_tensor_dtype(w), KD_INT32);
  assert_true(kd_tensor_key_set(w) == want);
  kd_tensor_release(w);
  kd_tensor_release(v);
}

static void test_tensor_keys(void **state) {
  (void)state;
  assert_false(kd_inference_mode_is_enabled());
  assert_true(kd_tensor_key_set(NULL) == 0);
  kd_tensor *c = empty_on(KD_DEVICE_CPU), *m = empty_on(KD_DEVICE_META);
  assert_true(kd_tensor_key_set(c) == normal_keys(KD_DEVICE_CPU));
  assert_true(kd_tensor_key_set(c) ==
              (BIT(KD_KEY_CPU) | BIT(KD_KEY_AD_INPLACE_OR_VIEW) | BIT(KD_KEY_AUTOGRAD_CPU)));
  assert_true(kd_tensor_key_set(m) == normal_keys(KD_DEVICE_META));
  assert_views_carry(c, normal_keys(KD_DEVICE_CPU));
  assert_views_carry(m, normal_keys(KD_DEVICE_META));
  /* In-place resizing keeps the tensor's keys. */
  KD_ASSERT_OK(kd_tensor_resize_(c, 1, (int64_t[]){4}, NULL));
  assert_true(kd_tensor_key_set(c) == normal_keys(KD_DEVICE_CPU));
  /* Other makers: from data, from a scalar, over storage, conversions. */
  kd_tensor *d, *s, *fs, *conv;
  KD_ASSERT_OK(kd_tensor_from_data(1, (int64_t[]){2}, KD_INT64, (int64_t[]){1, 2}, &d));
  assert_true(kd_tensor_key_set(d) == normal_keys(KD_DEVICE_CPU));
  kd_scalar one = kd_scalar_int(1);
  KD_ASSERT_OK(kd_tensor_from_scalar(&one, KD_INT32, &s));
  assert_true(kd_tensor_key_set(s) == normal_keys(KD_DEVICE_CPU));
  KD_ASSERT_OK(kd_tensor_from_storage(kd_tensor_storage(d), 0, 1, (int64_t[]){2}, (int64_t[]){1},
                                      KD_INT64, &fs));
  assert_true(kd_tensor_key_set(fs) == normal_keys(KD_DEVICE_CPU));
  KD_ASSERT_OK(kd_tensor_to_dtype(d, KD_FLOAT64, &conv));
  assert_true(kd_tensor_key_set(conv) == normal_keys(KD_DEVICE_CPU));
  kd_tensor_release(conv);
  KD_ASSERT_OK(kd_tensor_to_device(d, (kd_device){KD_DEVICE_META, 0}, &conv));
  assert_true(kd_tensor_key_set(conv) == normal_keys(KD_DEVICE_META));
  kd_tensor_release(conv);
  /* Views: errors leave *out NULL. */
  kd_tensor *v = c;
  KD_ASSERT_ERR(kd_tensor_as_strided(NULL, 1, (int64_t[]){1}, (int64_t[]){1}, 0, &v), KD_EINVAL,
                "kd_tensor_as_strided: NULL base");
  assert_null(v);
  v = c;
  KD_ASSERT_ERR(kd_tensor_as_strided_dtype(NULL, KD_INT32, 1, (int64_t[]){1}, (int64_t[]){1}, 0, &v),
                KD_EINVAL, "kd_tensor_as_strided_dtype: NULL base");
  assert_null(v);
  KD_ASSERT_ERR(kd_tensor_as_strided_dtype(c, (kd_dtype)999, 1, (int64_t[]){1}, (int64_t[]){1}, 0, &v),
                KD_EINVAL, "kd_tensor_as_strided_dtype: invalid dtype 999");
  /* The storage holds 2 x 3 float32 = 24 bytes: 4 float64 do not fit. */
  KD_ASSERT_ERR(kd_tensor_as_strided_dtype(c, KD_FLOAT64, 1, (int64_t[]){4}, (int64_t[]){1}, 0, &v),
                KD_ERANGE, "kd_tensor_as_strided_dtype: view out of bounds");
  KD_ASSERT_OK(kd_tensor_as_strided_dtype(c, KD_FLOAT64, 1, (int64_t[]){3}, (int64_t[]){1}, 0, &v));
  assert_true(kd_tensor_shares_storage(v, c));
  kd_tensor_release(v);
  kd_tensor_release(fs);
  kd_tensor_release(s);
  kd_tensor_release(d);
  kd_tensor_release(c);
  kd_tensor_release(m);
}

/* What inference mode excludes: every autograd key and ADInplaceOrView. */
#define INFERENCE_EXCLUDED (BITS(37, 44) | BIT(36))

static void test_inference_mode(void **state) {
  (void)state;
  kd_tensor *outside = empty_on(KD_DEVICE_CPU);
  /* A user's exclusion before the guard survives it. */
  kd_tls_keys user = kd_tls_exclude(BIT(KD_KEY_TRACER));
  assert_true(kd_tls_keys_get().exclude == BIT(KD_KEY_TRACER));
  assert_false(kd_inference_mode_is_enabled());

  kd_inference_mode_guard g1 = kd_inference_mode_enter(true);
  assert_true(kd_inference_mode_is_enabled());
  assert_false(g1.previous);
  assert_true(kd_tls_keys_get().exclude == (INFERENCE_EXCLUDED | BIT(KD_KEY_TRACER)));
  assert_true(kd_tls_keys_get().include == 0);
  /* New tensors: the dense key only, on every device and from every maker. */
  kd_tensor *inner = empty_on(KD_DEVICE_CPU), *inner_meta = empty_on(KD_DEVICE_META), *conv;
  assert_true(kd_tensor_key_set(inner) == BIT(KD_KEY_CPU));
  assert_true(kd_tensor_key_set(inner_meta) == BIT(KD_KEY_META));
  KD_ASSERT_OK(kd_tensor_to_device(outside, (kd_device){KD_DEVICE_META, 0}, &conv));
  assert_true(kd_tensor_key_set(conv) == BIT(KD_KEY_META));
  kd_tensor_release(conv);
  KD_ASSERT_OK(kd_tensor_to_dtype(outside, KD_INT8, &conv));
  assert_true(kd_tensor_key_set(conv) == BIT(KD_KEY_CPU));
  kd_tensor_release(conv);
  KD_ASSERT_OK(kd_tensor_from_storage(kd_tensor_storage(outside), 0, 1, (int64_t[]){2},
                                      (int64_t[]){1}, KD_FLOAT32, &conv));
  assert_true(kd_tensor_key_set(conv) == BIT(KD_KEY_CPU)); /* a new tensor, not a view */
  kd_tensor_release(conv);
  /* DLPack import makes a new tensor. */
  DLManagedTensor *dl;
  KD_ASSERT_OK(kd_tensor_to_dlpack(outside, &dl));
  KD_ASSERT_OK(kd_tensor_from_dlpack(dl, &conv));
  assert_true(kd_tensor_key_set(conv) == BIT(KD_KEY_CPU));
  kd_tensor_release(conv);
  /* A view of a normal tensor made inside is normal; of an inference tensor,
   * an inference tensor. */
  assert_views_carry(outside, normal_keys(KD_DEVICE_CPU));
  assert_views_carry(inner, BIT(KD_KEY_CPU));
  /* Tensors keep their keys. */
  assert_true(kd_tensor_key_set(outside) == normal_keys(KD_DEVICE_CPU));

  /* Nested: enter(true) again, then enter(false) turns it off inside. */
  kd_inference_mode_guard g2 = kd_inference_mode_enter(true);
  assert_true(g2.previous);
  assert_true(kd_inference_mode_is_enabled());
  kd_inference_mode_guard g3 = kd_inference_mode_enter(false);
  assert_true(g3.previous);
  assert_false(kd_inference_mode_is_enabled());
  assert_true((kd_tls_keys_get().exclude & INFERENCE_EXCLUDED) == 0);
  assert_true(kd_tls_keys_get().exclude == BIT(KD_KEY_TRACER));
  kd_tensor *normal_inside = empty_on(KD_DEVICE_META);
  assert_true(kd_tensor_key_set(normal_inside) == normal_keys(KD_DEVICE_META));
  kd_inference_mode_exit(g3);
  assert_true(kd_inference_mode_is_enabled());
  assert_true(kd_tls_keys_get().exclude == (INFERENCE_EXCLUDED | BIT(KD_KEY_TRACER)));
  kd_inference_mode_exit(g2);
  assert_true(kd_inference_mode_is_enabled());
  kd_inference_mode_exit(g1);
  assert_false(kd_inference_mode_is_enabled());
  assert_true(kd_tls_keys_get().exclude == BIT(KD_KEY_TRACER));

  /* After the guard: inference tensors stay so, and their views too. */
  kd_tensor *after = empty_on(KD_DEVICE_CPU);
  assert_true(kd_tensor_key_set(after) == normal_keys(KD_DEVICE_CPU));
  assert_true(kd_tensor_key_set(inner) == BIT(KD_KEY_CPU));
  assert_views_carry(inner, BIT(KD_KEY_CPU));
  /* enter(false) outside inference mode changes nothing. */
  kd_inference_mode_guard g4 = kd_inference_mode_enter(false);
  assert_false(g4.previous);
  assert_false(kd_inference_mode_is_enabled());
  assert_true(kd_tls_keys_get().exclude == BIT(KD_KEY_TRACER));
  kd_inference_mode_exit(g4);
  kd_tls_restore(user);
  assert_true(kd_tls_keys_get().exclude == 0);

  kd_tensor_release(after);
  kd_tensor_release(normal_inside);
  kd_tensor_release(inner_meta);
  kd_tensor_release(inner);
  kd_tensor_release(outside);
}

/* A second thread does not see this thread's inference mode, and its own
 * does not leak back. */
typedef struct thread_seen {
  bool enabled;
  kd_keyset exclude, tensor_keys, tensor_keys_inside;
  bool enabled_inside;
} thread_seen;

static void *other_thread(void *arg) {
  thread_seen *seen = arg;
  seen->enabled = kd_inference_mode_is_enabled();
  seen->exclude = kd_tls_keys_get().exclude;
  kd_tensor *t = NULL;
  if (kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &t) == KD_OK)
    seen->tensor_keys = kd_tensor_key_set(t);
  kd_tensor_release(t);
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  seen->enabled_inside = kd_inference_mode_is_enabled();
  t = NULL;
  if (kd_tensor_empty(1, (int64_t[]){1}, KD_FLOAT32, kd_device_cpu(), &t) == KD_OK)
    seen->tensor_keys_inside = kd_tensor_key_set(t);
  kd_tensor_release(t);
  kd_inference_mode_exit(g);
  return NULL;
}

static void test_inference_mode_thread_local(void **state) {
  (void)state;
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  thread_seen seen = {true, ~(kd_keyset)0, 0, 0, false};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, other_thread, &seen), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_false(seen.enabled);
  assert_true(seen.exclude == 0);
  assert_true(seen.tensor_keys == normal_keys(KD_DEVICE_CPU));
  assert_true(seen.enabled_inside);
  assert_true(seen.tensor_keys_inside == BIT(KD_KEY_CPU));
  /* Still on here. */
  assert_true(kd_inference_mode_is_enabled());
  kd_inference_mode_exit(g);
  /* The other way round: the thread's guard did not turn this one's off or on. */
  assert_false(kd_inference_mode_is_enabled());
  memset(&seen, 0, sizeof seen);
  assert_int_equal(pthread_create(&th, NULL, other_thread, &seen), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_false(seen.enabled);
  assert_false(kd_inference_mode_is_enabled());
}

/* ---- Calls: the autograd slot is reached with normal tensors only --------------- */

static char ran[64];
static kd_status k_autograd(const kd_call *c, const kd_arg *a, kd_value *r) {
  strcat(ran, "autograd,");
  return kd_redispatch_unboxed(c, a, r);
}
static kd_status k_cpu(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  strcat(ran, "cpu,");
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}

KD_LIBRARY(kt, m) { kd_library_def(m, "f(Tensor self) -> Tensor", NULL, 0, NULL); }

static void call_f(kd_op *op, kd_tensor *t, const char *want) {
  kd_arg a[1] = {{.t = t}};
  kd_value r = kd_value_none();
  ran[0] = 0;
  KD_ASSERT_OK(kd_call_unboxed(op, a, &r));
  kd_value_destroy(&r);
  KD_ASSERT_STR_EQ(ran, want);
}

static void test_inference_mode_calls(void **state) {
  (void)state;
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("kt::f", "", &op));
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "kt", KD_KEY_CPU);
  kd_library *ag = kd_test_open_lib(KD_LIBRARY_IMPL, "kt", KD_KEY_AUTOGRAD_CPU);
  const char *sig = "(Tensor) -> Tensor";
  kd_kernel kc = kd_kernel_unboxed(k_cpu, sig), ka = kd_kernel_unboxed(k_autograd, sig);
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &kc, NULL));
  kd_tensor *normal = empty_on(KD_DEVICE_CPU);
  /* Without an autograd kernel the autograd keys fall through. */
  call_f(op, normal, "cpu,");
  KD_ASSERT_OK(kd_library_impl(ag, "f", &ka, NULL));
  call_f(op, normal, "autograd,cpu,");
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  kd_tensor *inference = empty_on(KD_DEVICE_CPU);
  /* Inside: excluded even for a normal tensor. */
  call_f(op, normal, "cpu,");
  call_f(op, inference, "cpu,");
  kd_inference_mode_exit(g);
  /* Outside: an inference tensor has no autograd key. */
  call_f(op, inference, "cpu,");
  call_f(op, normal, "autograd,cpu,");
  kd_tensor_release(inference);
  kd_tensor_release(normal);
  kd_library_close(ag);
  kd_library_close(cpu);
  KD_ASSERT_OK(kd_dispatcher_check());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_reserved_and_invalid),
      cmocka_unit_test(test_from_name_errors),
      cmocka_unit_test(test_of_and_split),
      cmocka_unit_test(test_keyset_basics),
      cmocka_unit_test(test_keyset_below),
      cmocka_unit_test(test_expand_aliases),
      cmocka_unit_test(test_keyset_format),
      cmocka_unit_test(test_tensor_keys),
      cmocka_unit_test(test_inference_mode),
      cmocka_unit_test(test_inference_mode_thread_local),
      cmocka_unit_test(test_inference_mode_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
