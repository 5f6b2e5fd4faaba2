/*
 * kd tour: the built-in example `make run` shows. It walks through the parts
 * of kdispatch that exist so far: schemas, dtypes and promotion, tensors and
 * views, boxed values, DLPack, and the dispatcher (with the demo operators
 * of demo_ops.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "kd/dlpack.h"
#include "kd/kd.h"
#include "kd/memory.h"

static const char *const tour_schemas[] = {
    "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
};

static int fail(const char *what) {
  fprintf(stderr, "kd tour: %s: %s\n", what, kd_last_error());
  return 1;
}

int kd_cmd_tour(int argc, char **argv) {
  if (argc > 1) {
    bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
    if (!help)
      fprintf(stderr, "kd tour: %s '%s'\n", argv[1][0] == '-' ? "unknown option" : "unexpected argument",
              argv[1]);
    fprintf(help ? stdout : stderr, "usage: kd tour\n  a short tour of kdispatch on a built-in example\n");
    return help ? 0 : 2;
  }
  printf("kdispatch %s\n\n", kd_version_string());

  printf("1. Schemas: parsed, printed back, classified, grouped by signature\n");
  char buf[512];
  for (size_t i = 0; i < sizeof tour_schemas / sizeof tour_schemas[0]; i++) {
    kd_schema *s;
    if (kd_schema_parse(tour_schemas[i], strlen(tour_schemas[i]), &s)) return fail("parse");
    kd_schema_format(s, buf, sizeof buf);
    printf("   %s\n", buf);
    kd_schema_signature(s, buf, sizeof buf);
    printf("      kind %-10s signature %s\n", kd_schema_kind_name(kd_schema_kind_of(s)), buf);
    kd_schema_free(s);
  }
  kd_schema *bad;
  const char *broken = "add.Tensor(Tensor self, Tensor other -> Tensor";
  if (kd_schema_parse(broken, strlen(broken), &bad) != KD_OK)
    printf("   a broken one: %s\n      -> %s\n", broken, kd_last_error());

  printf("\n2. Dtypes and PyTorch's promotion\n");
  const kd_dtype pairs[][2] = {{KD_UINT8, KD_INT8}, {KD_INT32, KD_FLOAT16},
                               {KD_FLOAT16, KD_BFLOAT16}, {KD_FLOAT64, KD_COMPLEX64}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    printf("   promote_types(%s, %s) = %s\n", kd_dtype_name(pairs[i][0]),
           kd_dtype_name(pairs[i][1]), kd_dtype_name(kd_promote_types(pairs[i][0], pairs[i][1])));
  kd_result_type_state rs;
  kd_result_type_init(&rs);
  kd_result_type_add_tensor(&rs, KD_INT8, 1);
  kd_result_type_add_scalar(&rs, KD_INT64);
  printf("   int8 tensor + 1000   -> %s\n", kd_dtype_name(kd_result_type_finish(&rs)));
  kd_result_type_add_scalar(&rs, KD_FLOAT64);
  printf("   int8 tensor + 2.5    -> %s\n", kd_dtype_name(kd_result_type_finish(&rs)));

  printf("\n3. Tensors and views\n");
  float data[6] = {1, 2, 3, 4, 5, 6};
  kd_tensor *t, *tt;
  if (kd_tensor_from_data(2, (int64_t[]){2, 3}, KD_FLOAT32, data, &t)) return fail("tensor");
  if (kd_tensor_as_strided(t, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0, &tt))
    return fail("view");
  kd_tensor_describe(t, buf, sizeof buf);
  printf("   t   = %s\n", buf);
  kd_tensor_describe(tt, buf, sizeof buf);
  printf("   t.T = %s (shares storage: %s)\n", buf,
         kd_tensor_shares_storage(t, tt) ? "yes" : "no");
  kd_scalar x;
  kd_tensor_get(tt, (int64_t[]){2, 1}, &x);
  kd_scalar_format(&x, buf, sizeof buf);
  printf("   t.T[2][1] = %s\n", buf);

  printf("\n4. Boxed values on a stack\n");
  kd_stack stack;
  kd_stack_init(&stack);
  kd_value v = kd_value_tensor(t);
  kd_stack_push(&stack, &v);
  v = kd_value_scalar(kd_scalar_int(2));
  kd_stack_push(&stack, &v);
  if (kd_value_int_list((int64_t[]){0, 1}, 2, &v) == KD_OK) kd_stack_push(&stack, &v);
  for (size_t i = stack.size; i-- > 0;) {
    kd_value_format(kd_stack_peek(&stack, i), buf, sizeof buf);
    printf("   [%zu] %-8s %s\n", stack.size - 1 - i, kd_value_tag_name(kd_stack_peek(&stack, i)->tag), buf);
  }
  kd_stack_free(&stack);

  printf("\n5. DLPack: export and import without a copy\n");
  DLManagedTensor *m;
  if (kd_tensor_to_dlpack(tt, &m)) return fail("to_dlpack");
  kd_tensor *back;
  if (kd_tensor_from_dlpack(m, &back)) {
    m->deleter(m);
    return fail("from_dlpack");
  }
  kd_tensor_describe(back, buf, sizeof buf);
  printf("   round trip: %s, same bytes: %s\n", buf,
         kd_tensor_data(back) == kd_tensor_data(tt) ? "yes" : "no");
  kd_tensor_release(back);
  kd_tensor_release(tt);

  printf("\n6. The dispatcher: demo::scale has CPU and Meta kernels, Tracer a fallback, and the\n"
         "   autograd keys fall through (the built-in fallthrough)\n");
  kd_op *scale;
  if (kd_op_find("demo::scale", NULL, &scale)) return fail("find demo::scale");
  size_t n = kd_op_dump_table(scale, NULL, 0);
  char *table = kd_host_malloc(n + 1);
  if (table) {
    kd_op_dump_table(scale, table, n + 1);
    /* Drop the source paths: they depend on where the tree was built. */
    for (char *line = strtok(table, "\n"); line; line = strtok(NULL, "\n")) {
      char *from = strstr(line, " from ");
      if (from) *from = '\0';
      printf("   %s\n", line);
    }
    kd_host_free(table);
  }
  kd_tensor *meta;
  if (kd_tensor_empty(2, (int64_t[]){2, 3}, KD_FLOAT32, (kd_device){KD_DEVICE_META, 0}, &meta))
    return fail("meta tensor");
  kd_tensor *inputs[2] = {t, meta};
  for (int i = 0; i < 2; i++) {
    /* A boxed call, as an interpreter makes it: the default factor=2. is
     * filled in from the schema. */
    kd_stack st;
    kd_stack_init(&st);
    kd_value arg = kd_value_tensor_borrowed(inputs[i]);
    kd_stack_push(&st, &arg);
    if (kd_op_fill_defaults(scale, &st, 1) || kd_call_boxed(scale, &st)) {
      kd_stack_free(&st);
      return fail("demo::scale");
    }
    kd_tensor_describe(st.items[0].u.t, buf, sizeof buf);
    printf("   demo::scale(%s tensor) -> %s\n", i ? "a meta" : "a cpu", buf);
    if (i == 0) {
      kd_scalar y;
      kd_tensor_get(st.items[0].u.t, (int64_t[]){1, 2}, &y);
      printf("      [1][2] = %g (6 * 2)\n", kd_scalar_to_double(&y));
    }
    kd_stack_free(&st);
  }
  /* A mode key: with Tracer in the thread's include set, the fallback runs
   * first and redispatches to the backend below it. */
  kd_tls_keys saved = kd_tls_include(kd_keyset_of(KD_KEY_TRACER));
  kd_arg args[2];
  args[0].t = t;
  args[1].f = 0.5;
  kd_value out = kd_value_none();
  printf("   with Tracer included on this thread:\n");
  kd_status cst = kd_call_unboxed(scale, args, &out);
  kd_tls_restore(saved);
  if (cst) return fail("demo::scale under Tracer");
  kd_tensor_describe(out.u.t, buf, sizeof buf);
  printf("   demo::scale(t, 0.5) -> %s\n", buf);
  kd_value_destroy(&out);
  /* A backend with no kernel: the error names what exists. */
  if (kd_device_type_register(KD_DEVICE_PRIVATEUSE1, "opencl", 4) == KD_OK &&
      kd_dispatch_key_rename(KD_KEY_PRIVATEUSE1, "OpenCL") == KD_OK) {
    kd_storage *storage;
    kd_tensor *ocl;
    static float fake[6];
    kd_storage_wrap((kd_device){KD_DEVICE_PRIVATEUSE1, 0}, fake, sizeof fake, NULL, NULL, &storage);
    kd_tensor_from_storage(storage, 0, 1, (int64_t[]){6}, (int64_t[]){1}, KD_FLOAT32, &ocl);
    kd_storage_release(storage);
    args[0].t = ocl;
    if (kd_call_unboxed(scale, args, &out) != KD_OK) {
      /* The message's first sentence, and the list of what exists. */
      const char *msg = kd_last_error(), *end = strchr(msg, '.'), *avail = strstr(msg, "available");
      printf("   on an opencl tensor: %.*s.\n      ... %s\n", end ? (int)(end - msg) : 60, msg,
             avail ? avail : "");
    }
    kd_tensor_release(ocl);
  }
  kd_tensor_release(meta);
  kd_tensor_release(t);
  return 0;
}
