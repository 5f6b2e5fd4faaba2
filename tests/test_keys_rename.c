/* kd_dispatch_key_rename: a private backend's new name renames its whole
 * column (AutogradMyDev, SparseMyDev, ...). Renames are process-global and
 * permanent, so they have this test process to themselves, and use
 * PrivateUse2 and PrivateUse3 (plugins use PrivateUse1). The tests run in
 * order: the failures first, while every name is the default. */
#include "kd_test.h"

/* The column of a private backend under its default name, by functionality. */
static const char *const prefixes[] = {"", "Quantized", "Sparse", "SparseCsr", "NestedTensor",
                                       "Autograd"};
/* Its keys, by functionality: PrivateUse2's column. */
static const kd_dispatch_key column2[] = {
    KD_KEY_PRIVATEUSE2,        KD_KEY_QUANTIZED_PRIVATEUSE2,     KD_KEY_SPARSE_PRIVATEUSE2,
    KD_KEY_SPARSE_CSR_PRIVATEUSE2, KD_KEY_NESTED_TENSOR_PRIVATEUSE2, KD_KEY_AUTOGRAD_PRIVATEUSE2};
static const kd_dispatch_key column3[] = {
    KD_KEY_PRIVATEUSE3,        KD_KEY_QUANTIZED_PRIVATEUSE3,     KD_KEY_SPARSE_PRIVATEUSE3,
    KD_KEY_SPARSE_CSR_PRIVATEUSE3, KD_KEY_NESTED_TENSOR_PRIVATEUSE3, KD_KEY_AUTOGRAD_PRIVATEUSE3};

/* Every key of `column` is named prefix + base, and is found by that name. */
static void assert_column(const kd_dispatch_key *column, const char *base) {
  for (size_t f = 0; f < sizeof prefixes / sizeof *prefixes; f++) {
    char want[96];
    snprintf(want, sizeof want, "%s%s", prefixes[f], base);
    KD_ASSERT_STR_EQ(kd_dispatch_key_name(column[f]), want);
    kd_dispatch_key k = KD_KEY_INVALID_;
    KD_ASSERT_OK(kd_dispatch_key_from_name(want, &k));
    assert_int_equal(k, column[f]);
  }
}

static void test_rename_refused(void **state) {
  (void)state;
  /* Not a private dense key. */
  kd_dispatch_key not_private[] = {KD_KEY_CPU,
                                   KD_KEY_META,
                                   KD_KEY_UNDEFINED,
                                   KD_KEY_AUTOGRAD_PRIVATEUSE2,
                                   KD_KEY_SPARSE_PRIVATEUSE3,
                                   KD_KEY_AUTOGRAD,
                                   KD_KEY_INVALID_,
                                   (kd_dispatch_key)-1};
  for (size_t i = 0; i < sizeof not_private / sizeof *not_private; i++)
    KD_ASSERT_ERR(kd_dispatch_key_rename(not_private[i], "MyDev"), KD_EINVAL,
                  "is not a private backend key (expected PrivateUse1..3)");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_AUTOGRAD_PRIVATEUSE2, "MyDev"), KD_EINVAL,
                "kd_dispatch_key_rename: AutogradPrivateUse2 is not a private backend key");
  /* Bad names. */
  const char *bad[] = {"", "1dev", "my-dev", "my dev", "_dev", "d\xc3\xa9v",
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef" /* 32 bytes */};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, bad[i]), KD_EINVAL,
                  "kd_dispatch_key_rename: bad key name");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, NULL), KD_EINVAL, "bad key name '(null)'");
  /* Names of the column that are taken: the dense name itself, or only one
   * of the derived names. */
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "CPU"), KD_EEXIST,
                "the name 'CPU' is taken by key CPU");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "PrivateUse1"), KD_EEXIST,
                "the name 'PrivateUse1' is taken by key PrivateUse1");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "Other"), KD_EEXIST,
                "the name 'AutogradOther' is taken by key AutogradOther");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "NestedTensor"), KD_EEXIST,
                "the name 'AutogradNestedTensor' is taken by key AutogradNestedTensor");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE3, "Autograd"), KD_EEXIST,
                "the name 'Autograd' is taken by key Autograd");
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE3, "Mode1"), KD_EEXIST,
                "the name 'Mode1' is taken by key Mode1");
  /* Nothing changed: no column is half renamed. */
  assert_column(column2, "PrivateUse2");
  assert_column(column3, "PrivateUse3");
  kd_dispatch_key k;
  KD_ASSERT_ERR(kd_dispatch_key_from_name("QuantizedOther", &k), KD_ENOTFOUND,
                "unknown dispatch key 'QuantizedOther'");
}

static void test_rename_column(void **state) {
  (void)state;
  KD_ASSERT_OK(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "MyDev"));
  assert_column(column2, "MyDev");
  /* The old names are gone. */
  kd_dispatch_key k;
  KD_ASSERT_ERR(kd_dispatch_key_from_name("PrivateUse2", &k), KD_ENOTFOUND,
                "unknown dispatch key 'PrivateUse2'");
  KD_ASSERT_ERR(kd_dispatch_key_from_name("AutogradPrivateUse2", &k), KD_ENOTFOUND,
                "AutogradMyDev"); /* the list has the new names */
  /* Other private columns keep theirs. */
  assert_column(column3, "PrivateUse3");
  KD_ASSERT_STR_EQ(kd_dispatch_key_name(KD_KEY_AUTOGRAD_PRIVATEUSE1), "AutogradPrivateUse1");
  /* Key sets print the new names. */
  char buf[128];
  kd_keyset_format(kd_keyset_of(KD_KEY_PRIVATEUSE2) | kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW) |
                       kd_keyset_of(KD_KEY_AUTOGRAD_PRIVATEUSE2),
                   buf, sizeof buf);
  KD_ASSERT_STR_EQ(buf, "[MyDev, ADInplaceOrView, AutogradMyDev]");
  /* Renaming again: the same name is accepted, another refused. */
  KD_ASSERT_OK(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "MyDev"));
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE2, "Other2"), KD_EEXIST,
                "key PrivateUse2 is already named 'MyDev'");
  assert_column(column2, "MyDev");
  /* Another private key cannot take the name, nor a name of its column. */
  KD_ASSERT_ERR(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE3, "MyDev"), KD_EEXIST,
                "the name 'MyDev' is taken by key MyDev");
  assert_column(column3, "PrivateUse3");
  /* Letters of either case; the longest name (31 bytes). */
  KD_ASSERT_OK(kd_dispatch_key_rename(KD_KEY_PRIVATEUSE3, "my_dev2_ABCDEFGHIJKLMNOPQRSTUVW"));
  assert_column(column3, "my_dev2_ABCDEFGHIJKLMNOPQRSTUVW");
  /* Now that PrivateUse3's column is named, the old default is free again
   * only as a name nobody has: looking it up fails. */
  KD_ASSERT_ERR(kd_dispatch_key_from_name("NestedTensorPrivateUse3", &k), KD_ENOTFOUND,
                "'NestedTensorPrivateUse3'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rename_refused),
      cmocka_unit_test(test_rename_column),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
