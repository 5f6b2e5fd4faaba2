/* The boxed short path: operators whose arguments are all Tensors (their own
 * loop), Tensors mixed with int/float/bool, entries with a boxed function,
 * and the value and stack functions a boxed call's caller uses afterwards
 * (kd_stack_pop, kd_value_destroy). Each case is run through kd_call_boxed
 * (the short path) and kd_call_boxed_keys with the same keys (the general
 * adapter), which must agree on results, reference counts and errors. */
#include "kd_test.h"

/* What the last kernel saw. */
static kd_tensor *g_seen[3];
static kd_keyset g_keys;
static kd_dispatch_key g_key;
static int g_fail;
static int g_calls;

/* t3(Tensor a, Tensor b, Tensor c) -> (Tensor, Tensor): c owned, a borrowed
 * (the call makes it owned). Fails when g_fail is set, after writing its
 * first result (which the call drops). */
static kd_status k_t3(const kd_call *c, const kd_arg *a, kd_value *r) {
  g_calls++;
  for (int i = 0; i < 3; i++) g_seen[i] = a[i].t;
  g_keys = c->keys;
  g_key = c->key;
  r[0] = kd_value_tensor(a[2].t);
  if (g_fail) return kd_set_error(KD_EINVAL, "k_t3 failed as asked");
  r[1] = kd_value_tensor_borrowed(a[0].t);
  return KD_OK;
}

/* t1(Tensor self) -> (): the benchmark's shape. */
static kd_status k_t1(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)r;
  g_calls++;
  g_seen[0] = a[0].t;
  if (g_fail) return kd_set_error(KD_EINVAL, "k_t1 failed as asked");
  return KD_OK;
}

/* mix(Tensor self, float x, int n, bool b, Tensor other) -> (float, Tensor) */
static kd_status k_mix(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  g_calls++;
  g_seen[0] = a[0].t;
  g_seen[1] = a[4].t;
  if (g_fail) return kd_set_error(KD_EINVAL, "k_mix failed as asked");
  r[0] = kd_value_double(a[1].f * 2 + (double)a[2].i + (a[3].b ? 100 : 0));
  r[1] = kd_value_tensor(a[4].t);
  return KD_OK;
}

/* A kernel with both forms: a boxed call must take the boxed one. */
static int g_boxed_ran, g_unboxed_ran;
static kd_status k_both_unboxed(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  g_unboxed_ran++;
  r[0] = kd_value_tensor(a[0].t);
  return KD_OK;
}
static kd_status k_both_boxed(const kd_call *c, kd_stack *s) {
  (void)c;
  g_boxed_ran++;
  (void)s; /* the argument is its own result */
  return KD_OK;
}

typedef kd_status (*call_fn)(kd_op *op, kd_stack *s);
static kd_status call_short(kd_op *op, kd_stack *s) { return kd_call_boxed(op, s); }
static kd_status call_general(kd_op *op, kd_stack *s) {
  return kd_call_boxed_keys(op, kd_keyset_of(KD_KEY_CPU), s);
}
static const call_fn calls[2] = {call_short, call_general};

static kd_status push(kd_stack *s, kd_tensor *t, int borrowed) {
  return borrowed ? kd_stack_push_tensor_borrowed(s, t) : kd_stack_push_tensor(s, t);
}

static void test_tensor_only(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "bf", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "bf", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "t3(Tensor a, Tensor b, Tensor c) -> (Tensor, Tensor)", NULL,
                              0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "t1(Tensor self) -> ()", NULL, 0, NULL));
  kd_kernel k3 = kd_kernel_unboxed(k_t3, "(Tensor, Tensor, Tensor) -> (Tensor, Tensor)");
  kd_kernel k1 = kd_kernel_unboxed(k_t1, "(Tensor) -> ()");
  KD_ASSERT_OK(kd_library_impl(cpu, "t3", &k3, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "t1", &k1, NULL));
  kd_op *op3, *op1;
  KD_ASSERT_OK(kd_op_find("bf::t3", "", &op3));
  KD_ASSERT_OK(kd_op_find("bf::t1", "", &op1));
  kd_tensor *t[3] = {kd_test_tensor_on(KD_DEVICE_CPU), kd_test_tensor_on(KD_DEVICE_CPU), kd_test_tensor_on(KD_DEVICE_CPU)};

  for (int path = 0; path < 2; path++) {
    /* Every mix of owned and borrowed arguments. */
    for (int mask = 0; mask < 8; mask++) {
      kd_stack s;
      kd_stack_init(&s);
      /* Exactly the room the arguments need plus one value below them. */
      KD_ASSERT_OK(kd_stack_reserve(&s, 4));
      KD_ASSERT_OK(kd_stack_push_int(&s, 7));
      for (int i = 0; i < 3; i++) KD_ASSERT_OK(push(&s, t[i], mask >> i & 1));
      g_calls = 0;
      KD_ASSERT_OK(calls[path](op3, &s));
      assert_int_equal(g_calls, 1);
      for (int i = 0; i < 3; i++) assert_ptr_equal(g_seen[i], t[i]);
      assert_int_equal(g_key, KD_KEY_CPU);
      assert_true(g_keys & kd_keyset_of(KD_KEY_CPU));
      assert_int_equal(s.size, 3);
      assert_int_equal(kd_stack_peek(&s, 2)->u.i, 7); /* below the call: untouched */
      assert_ptr_equal(kd_stack_peek(&s, 1)->u.t, t[2]);
      assert_int_equal(kd_stack_peek(&s, 1)->flags, 0);
      assert_ptr_equal(kd_stack_peek(&s, 0)->u.t, t[0]);
      assert_int_equal(kd_stack_peek(&s, 0)->flags, 0); /* made owned */
      /* The argument references went; each result holds one. */
      assert_int_equal(kd_tensor_refcount(t[0]), 2);
      assert_int_equal(kd_tensor_refcount(t[1]), 1);
      assert_int_equal(kd_tensor_refcount(t[2]), 2);
      kd_stack_free(&s);
      for (int i = 0; i < 3; i++) assert_int_equal(kd_tensor_refcount(t[i]), 1);

      /* A failing kernel: its error and no results. The short path drops
       * the arguments (every reference they held), the general one leaves
       * them (kd_call_boxed allows either); the value below is untouched. */
      kd_stack_init(&s);
      KD_ASSERT_OK(kd_stack_push_int(&s, 7));
      for (int i = 0; i < 3; i++) KD_ASSERT_OK(push(&s, t[i], mask >> i & 1));
      g_fail = 1;
      KD_ASSERT_ERR(calls[path](op3, &s), KD_EINVAL, "k_t3 failed as asked");
      g_fail = 0;
      assert_int_equal(s.size, path == 0 ? 1 : 4);
      assert_int_equal(kd_stack_peek(&s, s.size - 1)->u.i, 7);
      if (path == 0)
        for (int i = 0; i < 3; i++) assert_int_equal(kd_tensor_refcount(t[i]), 1);
      kd_stack_free(&s);
      for (int i = 0; i < 3; i++) assert_int_equal(kd_tensor_refcount(t[i]), 1);
    }

    /* The one-argument operator, owned and borrowed. */
    for (int borrowed = 0; borrowed < 2; borrowed++) {
      kd_stack s;
      kd_stack_init(&s);
      KD_ASSERT_OK(push(&s, t[0], borrowed));
      KD_ASSERT_OK(calls[path](op1, &s));
      assert_int_equal(s.size, 0);
      assert_ptr_equal(g_seen[0], t[0]);
      assert_int_equal(kd_tensor_refcount(t[0]), 1);
      KD_ASSERT_OK(push(&s, t[0], borrowed));
      g_fail = 1;
      KD_ASSERT_ERR(calls[path](op1, &s), KD_EINVAL, "k_t1 failed as asked");
      g_fail = 0;
      assert_int_equal(s.size, path == 0 ? 0 : 1);
      kd_stack_free(&s);
      assert_int_equal(kd_tensor_refcount(t[0]), 1);
    }
  }

  /* The key set comes from every argument, not the first one only: a Meta
   * tensor last sends the call to the Meta slot, which has no kernel. Both
   * paths fail alike and consume nothing. */
  kd_tensor *m = kd_test_tensor_on(KD_DEVICE_META);
  for (int path = 0; path < 2; path++) {
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(push(&s, t[0], 0));
    KD_ASSERT_OK(push(&s, t[1], 1));
    KD_ASSERT_OK(push(&s, m, 0));
    kd_status st = path == 0 ? kd_call_boxed(op3, &s)
                             : kd_call_boxed_keys(op3, kd_keyset_of(KD_KEY_META), &s);
    assert_int_equal(st, KD_ENOKERNEL);
    assert_non_null(strstr(kd_last_error(), "Could not run 'bf::t3' with arguments from the 'Meta' backend"));
    assert_int_equal(s.size, 3);
    assert_int_equal(kd_tensor_refcount(m), 2);
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(m), 1);
  }

  /* A value of the wrong type in any place, or too few values: the short
   * path leaves the call to the general one, which names the argument; the
   * stack is as it was. */
  for (int bad = 0; bad < 3; bad++) {
    kd_stack s;
    kd_stack_init(&s);
    for (int i = 0; i < 3; i++) {
      if (i == bad) {
        KD_ASSERT_OK(kd_stack_push_int(&s, 5));
      } else {
        KD_ASSERT_OK(push(&s, t[i], i & 1));
      }
    }
    g_calls = 0;
    char want[128];
    snprintf(want, sizeof want, "argument %d '%c' of type Tensor expected a Tensor, found a value of type int",
             bad, "abc"[bad]);
    KD_ASSERT_ERR(kd_call_boxed(op3, &s), KD_ETYPE, want);
    assert_int_equal(g_calls, 0);
    assert_int_equal(s.size, 3);
    kd_stack_free(&s);
    for (int i = 0; i < 3; i++) assert_int_equal(kd_tensor_refcount(t[i]), 1);
  }
  {
    kd_stack s;
    kd_stack_init(&s);
    kd_value none = kd_value_none();
    KD_ASSERT_OK(kd_stack_push(&s, &none));
    /* None carries no keys: the Undefined slot, which has no kernel. */
    KD_ASSERT_ERR(kd_call_boxed(op1, &s), KD_ENOKERNEL,
                  "Could not run 'bf::t1' with arguments from the 'Undefined' backend");
    assert_int_equal(s.size, 1);
    KD_ASSERT_OK(push(&s, t[0], 0));
    KD_ASSERT_ERR(kd_call_boxed(op3, &s), KD_ESTATE,
                  "the stack holds 2 values but the operator takes 3 arguments");
    assert_int_equal(s.size, 2);
    kd_stack_free(&s);
  }
  assert_int_equal(kd_tensor_refcount(t[0]), 1);
  kd_tensor_release(m);
  for (int i = 0; i < 3; i++) kd_tensor_release(t[i]);
  kd_library_close(cpu);
  kd_library_close(def);
}

static void test_mixed_arguments(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "bfm", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "bfm", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(
      def, "mix(Tensor self, float x, int n, bool b, Tensor other) -> (float, Tensor)", NULL, 0,
      NULL));
  kd_kernel k = kd_kernel_unboxed(k_mix, "(Tensor, float, int, bool, Tensor) -> (float, Tensor)");
  KD_ASSERT_OK(kd_library_impl(cpu, "mix", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("bfm::mix", "", &op));
  kd_tensor *a = kd_test_tensor_on(KD_DEVICE_CPU), *b = kd_test_tensor_on(KD_DEVICE_CPU);
  for (int path = 0; path < 2; path++) {
    /* x given as an int: the short path leaves it to the general one, which
     * converts; the results are the same. */
    for (int int_x = 0; int_x < 2; int_x++) {
      for (int borrowed = 0; borrowed < 2; borrowed++) {
        kd_stack s;
        kd_stack_init(&s);
        KD_ASSERT_OK(push(&s, a, borrowed));
        KD_ASSERT_OK(int_x ? kd_stack_push_int(&s, 3) : kd_stack_push_double(&s, 3.0));
        KD_ASSERT_OK(kd_stack_push_int(&s, 4));
        KD_ASSERT_OK(kd_stack_push_bool(&s, true));
        KD_ASSERT_OK(push(&s, b, !borrowed));
        KD_ASSERT_OK(calls[path](op, &s));
        assert_ptr_equal(g_seen[0], a);
        assert_ptr_equal(g_seen[1], b);
        assert_int_equal(s.size, 2);
        assert_int_equal(kd_stack_peek(&s, 1)->tag, KD_VALUE_DOUBLE);
        assert_true(kd_stack_peek(&s, 1)->u.d == 110.0);
        assert_ptr_equal(kd_stack_peek(&s, 0)->u.t, b);
        assert_int_equal(kd_tensor_refcount(a), 1);
        assert_int_equal(kd_tensor_refcount(b), 2);
        kd_stack_free(&s);
        assert_int_equal(kd_tensor_refcount(b), 1);
      }
    }
    /* A failing kernel. */
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(push(&s, a, 0));
    KD_ASSERT_OK(kd_stack_push_double(&s, 1.5));
    KD_ASSERT_OK(kd_stack_push_int(&s, 4));
    KD_ASSERT_OK(kd_stack_push_bool(&s, false));
    KD_ASSERT_OK(push(&s, b, 0));
    g_fail = 1;
    KD_ASSERT_ERR(calls[path](op, &s), KD_EINVAL, "k_mix failed as asked");
    g_fail = 0;
    assert_int_equal(s.size, path == 0 ? 0 : 5); /* as above */
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(a), 1);
    assert_int_equal(kd_tensor_refcount(b), 1);
  }
  /* A bool where the int goes, a Tensor where the bool goes: the general
   * path's messages, nothing consumed. */
  kd_stack s;
  kd_stack_init(&s);
  KD_ASSERT_OK(push(&s, a, 0));
  KD_ASSERT_OK(kd_stack_push_double(&s, 1.5));
  KD_ASSERT_OK(kd_stack_push_bool(&s, true));
  KD_ASSERT_OK(kd_stack_push_bool(&s, false));
  KD_ASSERT_OK(push(&s, b, 0));
  KD_ASSERT_ERR(kd_call_boxed(op, &s), KD_ETYPE, "argument 2 'n' of type int expected an int");
  assert_int_equal(s.size, 5);
  kd_stack_free(&s);
  kd_stack_init(&s);
  KD_ASSERT_OK(push(&s, a, 0));
  KD_ASSERT_OK(kd_stack_push_double(&s, 1.5));
  KD_ASSERT_OK(kd_stack_push_int(&s, 1));
  KD_ASSERT_OK(push(&s, b, 1));
  KD_ASSERT_OK(push(&s, b, 0));
  KD_ASSERT_ERR(kd_call_boxed(op, &s), KD_ETYPE, "argument 3 'b' of type bool expected a bool");
  assert_int_equal(s.size, 5);
  kd_stack_free(&s);
  assert_int_equal(kd_tensor_refcount(a), 1);
  assert_int_equal(kd_tensor_refcount(b), 1);
  kd_tensor_release(a);
  kd_tensor_release(b);
  kd_library_close(cpu);
  kd_library_close(def);
}

static void test_boxed_function_wins(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "bfb", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "bfb", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "f(Tensor self) -> Tensor", NULL, 0, NULL));
  kd_kernel k = kd_kernel_unboxed(k_both_unboxed, "(Tensor) -> Tensor");
  k.boxed = k_both_boxed;
  KD_ASSERT_OK(kd_library_impl(cpu, "f", &k, NULL));
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("bfb::f", "", &op));
  kd_tensor *t = kd_test_tensor_on(KD_DEVICE_CPU);
  kd_stack s;
  kd_stack_init(&s);
  KD_ASSERT_OK(kd_stack_push_tensor(&s, t));
  KD_ASSERT_OK(kd_call_boxed(op, &s));
  assert_int_equal(g_boxed_ran, 1);
  assert_int_equal(g_unboxed_ran, 0);
  assert_int_equal(s.size, 1);
  kd_arg args[1] = {{.t = t}};
  kd_value rets[1] = {kd_value_none()};
  KD_ASSERT_OK(kd_call_unboxed(op, args, rets));
  assert_int_equal(g_unboxed_ran, 1);
  kd_value_destroy(&rets[0]);
  kd_stack_free(&s);
  assert_int_equal(kd_tensor_refcount(t), 1);
  kd_tensor_release(t);
  kd_library_close(cpu);
  kd_library_close(def);
}

/* o1(Tensor self) -> Tensor, by g_mode: 0 a new reference to self, 1 self
 * borrowed, 2 another tensor, 3 self then fail, 4 fail with no result, 5
 * self borrowed then fail. */
static int g_mode;
static kd_tensor *g_other;
static kd_status k_o1(const kd_call *c, const kd_arg *a, kd_value *r) {
  g_calls++;
  g_seen[0] = a[0].t;
  g_keys = c->keys;
  g_key = c->key;
  switch (g_mode) {
    case 0: r[0] = kd_value_tensor(a[0].t); return KD_OK;
    case 1: r[0] = kd_value_tensor_borrowed(a[0].t); return KD_OK;
    case 2: r[0] = kd_value_tensor(g_other); return KD_OK;
    case 3: r[0] = kd_value_tensor(a[0].t); break;
    case 5: r[0] = kd_value_tensor_borrowed(a[0].t); break;
    default: break;
  }
  return kd_set_error(KD_EINVAL, "k_o1 failed as asked");
}

/* b0(Tensor self) -> (), with both forms: the boxed one takes its argument. */
static kd_status k_b0_boxed(const kd_call *c, kd_stack *s) {
  (void)c;
  g_boxed_ran++;
  return kd_stack_drop(s, 1);
}

/* nest(Tensor self) -> (): a boxed call of o1 from inside a boxed call (a
 * read section already entered), self lent to it. */
static kd_op *g_o1;
static kd_status k_nest(const kd_call *c, const kd_arg *a, kd_value *r) {
  (void)c;
  (void)r;
  kd_stack s;
  kd_stack_init(&s);
  kd_status st = kd_stack_push_tensor_borrowed(&s, a[0].t);
  if (st == KD_OK) st = kd_call_boxed(g_o1, &s);
  if (st == KD_OK && (s.size != 1 || s.items[0].u.t != a[0].t || s.items[0].flags != 0))
    st = kd_set_error(KD_EINTERNAL, "nested call: unexpected stack");
  kd_stack_free(&s);
  return st;
}

/* Operators of one Tensor argument and no or one result (their own entry
 * in kd_call_boxed): each result, failure and ownership against the general
 * adapter; the cases the entry leaves to the general path. */
static void test_one_tensor(void **state) {
  (void)state;
  kd_library *def = kd_test_open_lib(KD_LIBRARY_DEF, "bf1", KD_KEY_UNDEFINED);
  kd_library *cpu = kd_test_open_lib(KD_LIBRARY_IMPL, "bf1", KD_KEY_CPU);
  KD_ASSERT_OK(kd_library_def(def, "o1(Tensor self) -> Tensor", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "b0(Tensor self) -> ()", NULL, 0, NULL));
  KD_ASSERT_OK(kd_library_def(def, "nest(Tensor self) -> ()", NULL, 0, NULL));
  kd_kernel k1 = kd_kernel_unboxed(k_o1, "(Tensor) -> Tensor");
  kd_kernel kb = kd_kernel_unboxed(k_t1, "(Tensor) -> ()");
  kb.boxed = k_b0_boxed;
  kd_kernel kn = kd_kernel_unboxed(k_nest, "(Tensor) -> ()");
  KD_ASSERT_OK(kd_library_impl(cpu, "o1", &k1, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "b0", &kb, NULL));
  KD_ASSERT_OK(kd_library_impl(cpu, "nest", &kn, NULL));
  kd_op *o1, *b0, *nest;
  KD_ASSERT_OK(kd_op_find("bf1::o1", "", &o1));
  KD_ASSERT_OK(kd_op_find("bf1::b0", "", &b0));
  KD_ASSERT_OK(kd_op_find("bf1::nest", "", &nest));
  g_o1 = o1;
  kd_tensor *t = kd_test_tensor_on(KD_DEVICE_CPU);
  g_other = kd_test_tensor_on(KD_DEVICE_CPU);

  for (int path = 0; path < 2; path++) {
    for (int mode = 0; mode < 6; mode++) {
      for (int borrowed = 0; borrowed < 2; borrowed++) {
        kd_stack s;
        kd_stack_init(&s);
        KD_ASSERT_OK(kd_stack_push_int(&s, 7));
        KD_ASSERT_OK(push(&s, t, borrowed));
        g_mode = mode;
        g_calls = 0;
        kd_status st = calls[path](o1, &s);
        assert_int_equal(g_calls, 1);
        assert_ptr_equal(g_seen[0], t);
        assert_int_equal(g_key, KD_KEY_CPU);
        assert_int_equal(kd_stack_peek(&s, s.size - 1)->u.i, 7); /* below: untouched */
        if (mode < 3) {
          KD_ASSERT_OK(st);
          assert_int_equal(s.size, 2);
          const kd_value *res = kd_stack_peek(&s, 0);
          assert_int_equal(res->tag, KD_VALUE_TENSOR);
          assert_int_equal(res->flags, 0); /* owned, even when the kernel lent it */
          assert_ptr_equal(res->u.t, mode == 2 ? g_other : t);
          /* The argument's reference went; the result holds one. */
          assert_int_equal(kd_tensor_refcount(t), mode == 2 ? 1 : 2);
          assert_int_equal(kd_tensor_refcount(g_other), mode == 2 ? 2 : 1);
        } else {
          assert_int_equal(st, KD_EINVAL);
          assert_non_null(strstr(kd_last_error(), "k_o1 failed as asked"));
          /* The short path: the argument gone and no result; the general
           * one leaves the argument (either is allowed). */
          assert_int_equal(s.size, path == 0 ? 1 : 2);
          if (path == 0) assert_int_equal(kd_tensor_refcount(t), 1);
        }
        kd_stack_free(&s);
        assert_int_equal(kd_tensor_refcount(t), 1);
        assert_int_equal(kd_tensor_refcount(g_other), 1);
      }
    }
  }
  g_mode = 0;

  /* The stack holds the last reference to the argument: the call frees it
   * (ASan checks), after a result that is another tensor, after a failure,
   * and with no result. */
  for (int c = 0; c < 3; c++) {
    kd_tensor *last = kd_test_tensor_on(KD_DEVICE_CPU);
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(push(&s, last, 0));
    kd_tensor_release(last);
    g_mode = c == 0 ? 2 : c == 1 ? 4 : 0;
    g_calls = 0;
    if (c == 0) {
      KD_ASSERT_OK(kd_call_boxed(o1, &s));
      assert_ptr_equal(kd_stack_peek(&s, 0)->u.t, g_other);
    } else if (c == 1) {
      KD_ASSERT_ERR(kd_call_boxed(o1, &s), KD_EINVAL, "k_o1 failed as asked");
      assert_int_equal(s.size, 0);
    } else {
      KD_ASSERT_OK(kd_call_boxed(nest, &s)); /* no result; o1 inside lent it */
      assert_int_equal(s.size, 0);
    }
    assert_int_equal(g_calls, 1);
    kd_stack_free(&s);
  }
  assert_int_equal(kd_tensor_refcount(t), 1);
  assert_int_equal(kd_tensor_refcount(g_other), 1);
  g_mode = 0;

  /* A nested boxed call (o1 from nest's kernel), owned and borrowed. */
  for (int borrowed = 0; borrowed < 2; borrowed++) {
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(push(&s, t, borrowed));
    g_calls = 0;
    KD_ASSERT_OK(kd_call_boxed(nest, &s));
    assert_int_equal(g_calls, 1);
    assert_int_equal(s.size, 0);
    assert_int_equal(kd_tensor_refcount(t), 1);
    kd_stack_free(&s);
  }

  /* A kernel with a boxed form: the boxed one runs. */
  {
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(push(&s, t, 0));
    g_boxed_ran = 0;
    g_calls = 0;
    KD_ASSERT_OK(kd_call_boxed(b0, &s));
    assert_int_equal(g_boxed_ran, 1);
    assert_int_equal(g_calls, 0);
    assert_int_equal(s.size, 0);
    assert_int_equal(kd_tensor_refcount(t), 1);
    kd_stack_free(&s);
  }

  /* What the entry leaves to the general path: the same messages, nothing
   * consumed. */
  {
    kd_stack s;
    kd_stack_init(&s);
    g_calls = 0;
    KD_ASSERT_ERR(kd_call_boxed(o1, &s), KD_ESTATE,
                  "the stack holds 0 values but the operator takes 1 arguments");
    /* An int carries no keys either: the Undefined slot, before any
     * conversion (as the general path has it). */
    KD_ASSERT_OK(kd_stack_push_int(&s, 5));
    KD_ASSERT_ERR(kd_call_boxed(o1, &s), KD_ENOKERNEL,
                  "Could not run 'bf1::o1' with arguments from the 'Undefined' backend");
    assert_int_equal(s.size, 1);
    kd_value none = kd_value_none();
    KD_ASSERT_OK(kd_stack_push(&s, &none));
    KD_ASSERT_ERR(kd_call_boxed(o1, &s), KD_ENOKERNEL,
                  "Could not run 'bf1::o1' with arguments from the 'Undefined' backend");
    assert_int_equal(s.size, 2);
    kd_tensor *m = kd_test_tensor_on(KD_DEVICE_META);
    KD_ASSERT_OK(push(&s, m, 0));
    KD_ASSERT_ERR(kd_call_boxed(o1, &s), KD_ENOKERNEL,
                  "Could not run 'bf1::o1' with arguments from the 'Meta' backend");
    assert_int_equal(s.size, 3);
    assert_int_equal(kd_tensor_refcount(m), 2);
    assert_int_equal(g_calls, 0);
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(m), 1);
    kd_tensor_release(m);
  }

  /* The thread's keys and the operator's fallthroughs count: a Mode1
   * kernel when Mode1 is included, CPU again when it is also excluded; a
   * fallthrough at Mode2 goes on to CPU. */
  {
    kd_library *mode1 = kd_test_open_lib(KD_LIBRARY_IMPL, "bf1", KD_KEY_MODE1);
    kd_library *mode2 = kd_test_open_lib(KD_LIBRARY_IMPL, "bf1", KD_KEY_MODE2);
    KD_ASSERT_OK(kd_library_impl(mode1, "o1", &k1, NULL));
    kd_kernel ft = kd_kernel_fallthrough();
    KD_ASSERT_OK(kd_library_impl(mode2, "o1", &ft, NULL));
    for (int step = 0; step < 3; step++) {
      kd_tls_keys prev = kd_tls_include(kd_keyset_of(KD_KEY_MODE1));
      kd_tls_keys prev2 = prev;
      if (step == 1) prev2 = kd_tls_exclude(kd_keyset_of(KD_KEY_MODE1));
      if (step == 2) prev2 = kd_tls_include(kd_keyset_of(KD_KEY_MODE2));
      kd_stack s;
      kd_stack_init(&s);
      KD_ASSERT_OK(push(&s, t, 1));
      KD_ASSERT_OK(kd_call_boxed(o1, &s));
      assert_int_equal(g_key, step == 1 ? KD_KEY_CPU : KD_KEY_MODE1);
      assert_false(g_keys & kd_keyset_of(KD_KEY_MODE2)); /* fell through */
      assert_true(g_keys & kd_keyset_of(KD_KEY_CPU));
      assert_int_equal(s.size, 1);
      assert_int_equal(kd_stack_peek(&s, 0)->flags, 0);
      kd_stack_free(&s);
      assert_int_equal(kd_tensor_refcount(t), 1);
      if (step != 0) kd_tls_restore(prev2);
      kd_tls_restore(prev);
    }
    kd_library_close(mode2);
    kd_library_close(mode1);
  }

  /* Undefined, then defined again: the entry follows the schema. */
  kd_library_close(def);
  {
    kd_stack s;
    kd_stack_init(&s);
    KD_ASSERT_OK(push(&s, t, 0));
    KD_ASSERT_ERR(kd_call_boxed(o1, &s), KD_ESTATE, "operator 'bf1::o1' is not defined");
    assert_int_equal(s.size, 1);
    def = kd_test_open_lib(KD_LIBRARY_DEF, "bf1", KD_KEY_UNDEFINED);
    KD_ASSERT_OK(kd_library_def(def, "o1(Tensor self) -> Tensor", NULL, 0, NULL));
    KD_ASSERT_OK(kd_call_boxed(o1, &s));
    assert_int_equal(s.size, 1);
    assert_ptr_equal(kd_stack_peek(&s, 0)->u.t, t);
    kd_stack_free(&s);
    assert_int_equal(kd_tensor_refcount(t), 1);
  }
  kd_tensor_release(g_other);
  g_other = NULL;
  kd_tensor_release(t);
  kd_library_close(cpu);
  kd_library_close(def);
}

static void test_pop_and_destroy(void **state) {
  (void)state;
  kd_tensor *t = kd_test_tensor_on(KD_DEVICE_CPU);
  kd_stack s;
  kd_stack_init(&s);
  kd_value out = kd_value_int(9);
  /* Failures: *out is None after them (when there is one). */
  KD_ASSERT_ERR(kd_stack_pop(&s, NULL), KD_EINVAL, "kd_stack_pop: out is NULL");
  KD_ASSERT_ERR(kd_stack_pop(NULL, &out), KD_EINVAL, "kd_stack_pop: stack is NULL");
  assert_int_equal(out.tag, KD_VALUE_NONE);
  out = kd_value_int(9);
  KD_ASSERT_ERR(kd_stack_pop(&s, &out), KD_ESTATE, "kd_stack_pop: the stack is empty");
  assert_int_equal(out.tag, KD_VALUE_NONE);
  /* Every kind of value comes back as pushed. */
  KD_ASSERT_OK(kd_stack_push_tensor(&s, t));
  KD_ASSERT_OK(kd_stack_push_tensor_borrowed(&s, t));
  KD_ASSERT_OK(kd_stack_push_double(&s, -2.5));
  kd_value str, list, tup;
  KD_ASSERT_OK(kd_value_string("abc", 3, &str));
  KD_ASSERT_OK(kd_stack_push(&s, &str));
  KD_ASSERT_OK(kd_value_int_list((int64_t[]){1, 2}, 2, &list));
  KD_ASSERT_OK(kd_stack_push(&s, &list));
  kd_value items[2] = {kd_value_tensor(t), kd_value_complex(1, 2)};
  KD_ASSERT_OK(kd_value_tuple(items, 2, &tup));
  kd_value_destroy(&items[0]);
  KD_ASSERT_OK(kd_stack_push(&s, &tup));
  assert_int_equal(kd_tensor_refcount(t), 3); /* owned push, tuple */

  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_int_equal(out.tag, KD_VALUE_TUPLE);
  assert_int_equal(kd_value_list_size(&out), 2);
  kd_value_destroy(&out);
  assert_int_equal(out.tag, KD_VALUE_NONE);
  assert_int_equal(kd_tensor_refcount(t), 2);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_int_equal(out.tag, KD_VALUE_INT_LIST);
  assert_int_equal(kd_value_int_list_data(&out)[1], 2);
  kd_value_destroy(&out);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  size_t len;
  KD_ASSERT_STR_EQ(kd_value_string_data(&out, &len), "abc");
  kd_value_destroy(&out);
  assert_int_equal(out.tag, KD_VALUE_NONE);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_true(out.tag == KD_VALUE_DOUBLE && out.u.d == -2.5);
  kd_value_destroy(&out);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_true(out.tag == KD_VALUE_TENSOR && out.u.t == t && out.flags == KD_VALUE_BORROWED);
  kd_value_destroy(&out); /* borrowed: drops nothing */
  assert_int_equal(out.tag, KD_VALUE_NONE);
  assert_int_equal(out.flags, 0);
  assert_int_equal(kd_tensor_refcount(t), 2);
  KD_ASSERT_OK(kd_stack_pop(&s, &out));
  assert_true(out.tag == KD_VALUE_TENSOR && out.u.t == t && out.flags == 0);
  assert_int_equal(s.size, 0);
  kd_value_destroy(&out);
  assert_int_equal(kd_tensor_refcount(t), 1);
  /* Destroying None, zeroed memory and NULL does nothing. */
  kd_value_destroy(&out);
  kd_value zero;
  memset(&zero, 0, sizeof zero);
  kd_value_destroy(&zero);
  kd_value_destroy(NULL);
  kd_stack_free(&s);
  kd_tensor_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tensor_only),
      cmocka_unit_test(test_mixed_arguments),
      cmocka_unit_test(test_boxed_function_wins),
      cmocka_unit_test(test_one_tensor),
      cmocka_unit_test(test_pop_and_destroy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
