/*
 * tape.c: an "autograd-like" mode that records the operations a program runs
 * on a tape (docs/GUIDE.md, "Autograd keys and the tape example").
 *
 * Not an autograd engine: no gradients are computed. It shows the pattern one
 * would build on, with the keys PyTorch's autograd uses:
 *
 *   - every tensor carries its backend's Autograd key (AutogradCPU for a cpu
 *     tensor, AutogradMeta for a meta one) and ADInplaceOrView, unless it was
 *     made in inference mode. Both keys fall through by default, so a call
 *     goes straight to the backend's kernel;
 *   - this program registers one boxed kernel, `record`, at the Autograd
 *     alias key for the operators it wants on the tape. The alias fills the
 *     Autograd slot of every backend (AutogradCPU, AutogradMeta, ...) with
 *     "[autograd kernel]", so the same registration records cpu and meta
 *     calls. Autograd keys sit above every backend key, so the kernel runs
 *     first; it writes "KEY: op(inputs) -> outputs" to the tape and
 *     redispatches below itself (kd_redispatch_boxed), which drops the whole
 *     Autograd functionality and reaches the CPU (or Meta) kernel;
 *   - while it redispatches it excludes the autograd keys on its thread, as
 *     PyTorch's AutoDispatchBelowADInplaceOrView does: what the kernels below
 *     call through the dispatcher (a composite's parts) is not recorded again;
 *   - a tensor made in inference mode has no Autograd key, and a call made in
 *     inference mode excludes the key: neither is recorded;
 *   - closing the library releases the registrations: the Autograd slots
 *     fall through again and dispatch is plain.
 *
 * Why impls at the Autograd alias rather than a boxed fallback at AutogradCPU:
 * the alias covers every backend with one registration and shows where an
 * autograd kernel sits among the composites (a CompositeImplicitAutograd
 * kernel would take an Autograd slot before it when the backend has no kernel
 * of its own), and it records only the operators named, as a generated
 * VariableType does. A fallback records every operator but for one key (one
 * backend) only. The boxed kernel works on any schema, reading the arguments
 * from the stack.
 *
 * The program prints the tape of a linear layer with relu and sum on cpu and
 * on meta tensors, what a failing call, inference mode and the release
 * leave. CTest
 * compares its output with tape.out (example_autograd_tape).
 */
#include <stdio.h>
#include <string.h>

#include <kd/kd.h>
#include <kd/ops.h>

/* ---- The tape --------------------------------------------------------------- */

#define TAPE_LINES 32
#define LINE_CAP 200

/* The recorded calls, in order. Owned by main; the kernel gets it as closure
 * data (the registration does not own it: no destroy_data). */
typedef struct tape {
  char lines[TAPE_LINES][LINE_CAP];
  int n;
} tape;

/* Appends the text of one value to line[*len..LINE_CAP): a tensor as its
 * dtype and sizes ("float32[4, 2]"), anything else as kd_value_format. */
static void put_value(char *line, size_t *len, const kd_value *v) {
  size_t cap = LINE_CAP - *len;
  int w;
  if (v->tag == KD_VALUE_TENSOR && v->u.t) {
    const kd_tensor *t = v->u.t;
    w = snprintf(line + *len, cap, "%s[", kd_dtype_name(kd_tensor_dtype(t)));
    for (int d = 0; w >= 0 && (size_t)w < cap && d < kd_tensor_ndim(t); d++)
      w += snprintf(line + *len + w, cap - (size_t)w, d ? ", %lld" : "%lld",
                    (long long)kd_tensor_size(t, d));
    if (w >= 0 && (size_t)w < cap) w += snprintf(line + *len + w, cap - (size_t)w, "]");
  } else {
    w = (int)kd_value_format(v, line + *len, cap);
  }
  *len += w < 0 ? 0 : ((size_t)w < cap ? (size_t)w : cap - 1);
}

/* The autograd-like kernel: records the call and redispatches below the
 * Autograd keys. The arguments are the top nargs values of the stack; the
 * redispatch replaces them with the results, which it records too. Errors of
 * the kernels below come back unchanged (and nothing is recorded); a full
 * tape is an error naming the operator. */
static kd_status record(const kd_call *call, kd_stack *stack) {
  tape *t = call->data;
  const kd_schema *schema = kd_op_schema(call->op);
  size_t nargs = kd_schema_num_arguments(schema), nrets = kd_schema_num_returns(schema);
  if (t->n == TAPE_LINES)
    return kd_set_error(KD_ENOMEM, "tape: no room to record %s", kd_op_name(call->op));
  char *line = t->lines[t->n];
  size_t len = (size_t)snprintf(line, LINE_CAP, "%s: %s(", kd_dispatch_key_name(call->key),
                                kd_op_name(call->op));
  for (size_t i = 0; i < nargs && len < LINE_CAP - 1; i++) {
    if (i) len += (size_t)snprintf(line + len, LINE_CAP - len, ", ");
    put_value(line, &len, kd_stack_peek(stack, nargs - 1 - i));
  }
  /* Below autograd: the keys of this layer are off for everything the
   * kernels below call (call->keys already says what the redispatch uses). */
  kd_tls_keys prev = kd_tls_exclude(kd_keyset_autograd() | kd_keyset_of(KD_KEY_AD_INPLACE_OR_VIEW));
  kd_status st = kd_redispatch_boxed(call, stack);
  kd_tls_restore(prev);
  if (st) return st;
  if (len < LINE_CAP - 1) len += (size_t)snprintf(line + len, LINE_CAP - len, ") ->");
  for (size_t i = 0; i < nrets && len < LINE_CAP - 1; i++) {
    len += (size_t)snprintf(line + len, LINE_CAP - len, " ");
    put_value(line, &len, kd_stack_peek(stack, nrets - 1 - i));
  }
  t->n++;
  return KD_OK;
}

/* Prints the tape's lines from `from` on (borrowed; cannot fail). */
static void print_tape(const tape *t, int from) {
  for (int i = from; i < t->n; i++) printf("  %s\n", t->lines[i]);
  if (from == t->n) printf("  (nothing recorded)\n");
}

/* Prints the lines of aten::relu's computed dispatch table (kd_op_dump_table)
 * for the key names `keys` (borrowed), "(missing)" for a key without one;
 * nothing when aten::relu is not defined. */
static void print_slots(const char *const *keys, size_t nkeys) {
  kd_op *op;
  char dump[8192];
  if (kd_op_find("aten::relu", "", &op)) return;
  kd_op_dump_table(op, dump, sizeof dump);
  for (size_t i = 0; i < nkeys; i++) {
    char head[64];
    snprintf(head, sizeof head, "\n  %s: ", keys[i]);
    const char *line = strstr(dump, head);
    if (!line) {
      printf("  %s: (missing)\n", keys[i]);
      continue;
    }
    const char *end = strchr(line + 1, '\n');
    printf("%.*s\n", (int)(end - line - 1), line + 1);
  }
}

/* Prints "what: [KEYS]", the tensor's key set (borrowed). */
static void print_keys(const char *what, const kd_tensor *t) {
  char buf[256];
  kd_keyset_format(kd_tensor_key_set(t), buf, sizeof buf);
  printf("%s: %s\n", what, buf);
}

/* ---- The program ------------------------------------------------------------ */

/* A linear layer, relu, and a sum: s = sum(relu(x @ w + b)). Borrows the
 * inputs; on success the caller owns *s_out; on error it is NULL and the
 * status is the failing operator's. */
static kd_status layer(kd_tensor *x, kd_tensor *w, kd_tensor *b, kd_tensor **s_out) {
  kd_tensor *xw = NULL, *z = NULL, *h = NULL;
  *s_out = NULL;
  kd_status st = kd_mm(x, w, &xw);
  if (!st) st = kd_add_Tensor(xw, b, NULL, &z);
  if (!st) st = kd_relu(z, &h);
  if (!st) st = kd_sum(h, NULL, s_out);
  kd_tensor *tmp[] = {xw, z, h};
  for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
    if (tmp[i]) kd_tensor_release(tmp[i]);
  return st;
}

/* Reports the thread's last error after `what` on stderr; returns main's 1. */
static int fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, kd_last_error());
  return 1;
}

int main(void) {
  static tape t; /* static: 6 KiB */
  const char *const slot_keys[] = {"AutogradCPU", "AutogradMeta"};
  const size_t nslot_keys = sizeof slot_keys / sizeof *slot_keys;

  /* The mode: one boxed kernel at the Autograd alias for each operator to
   * record. The library owns the registrations; closing it releases them. */
  static const char *const recorded[] = {"mm", "add.Tensor", "relu", "sum"};
  kd_library *lib;
  if (kd_library_open(KD_LIBRARY_IMPL, "aten", KD_KEY_AUTOGRAD, "tape.c", __LINE__, &lib))
    return fail("kd_library_open");
  for (size_t i = 0; i < sizeof recorded / sizeof *recorded; i++) {
    kd_kernel k = kd_kernel_boxed(record);
    k.data = &t;
    k.debug = "autograd_tape";
    if (kd_library_impl(lib, recorded[i], &k, NULL)) return fail(recorded[i]);
  }
  printf("aten::relu with the tape registered at Autograd:\n");
  print_slots(slot_keys, nslot_keys);

  /* x [4, 3] @ w [3, 2] + b [2] */
  const float xd[12] = {1, -2, 3, 0, 1, 1, -1, -1, 2, 2, 0, -3};
  const float wd[6] = {1, 0, 0, 1, 1, -1};
  const float bd[2] = {0.5f, -0.5f};
  kd_tensor *x = NULL, *w = NULL, *b = NULL, *s = NULL;
  if (kd_tensor_from_data(2, (int64_t[]){4, 3}, KD_FLOAT32, xd, &x) ||
      kd_tensor_from_data(2, (int64_t[]){3, 2}, KD_FLOAT32, wd, &w) ||
      kd_tensor_from_data(1, (int64_t[]){2}, KD_FLOAT32, bd, &b))
    return fail("inputs");
  print_keys("\nx's keys", x);

  printf("\nsum(relu(x @ w + b)) on cpu:\n");
  if (layer(x, w, b, &s)) return fail("layer on cpu");
  print_tape(&t, 0);
  kd_scalar v;
  kd_tensor_item(s, &v);
  printf("  = %g\n", kd_scalar_to_double(&v));
  kd_tensor_release(s);

  /* An error below comes back through the tape's kernel, which records
   * nothing for the failed call. */
  int mark = t.n;
  kd_tensor *bad = NULL;
  if (kd_mm(x, x, &bad) == KD_OK) return fail("mm(x, x) succeeded");
  printf("\nmm(x, x): %s\n", kd_last_error());
  print_tape(&t, mark);

  /* The same on meta tensors: shapes only; the alias filled AutogradMeta too. */
  kd_device meta = {KD_DEVICE_META, 0};
  kd_tensor *xm = NULL, *wm = NULL, *bm = NULL;
  if (kd_tensor_empty(2, (int64_t[]){4, 3}, KD_FLOAT32, meta, &xm) ||
      kd_tensor_empty(2, (int64_t[]){3, 2}, KD_FLOAT32, meta, &wm) ||
      kd_tensor_empty(1, (int64_t[]){2}, KD_FLOAT32, meta, &bm))
    return fail("meta inputs");
  printf("\nthe same on meta:\n");
  mark = t.n;
  if (layer(xm, wm, bm, &s)) return fail("layer on meta");
  print_tape(&t, mark);
  kd_tensor_release(s);

  /* Inference mode: a tensor made in it has no Autograd key, and a call made
   * in it excludes the key; neither is recorded. */
  kd_inference_mode_guard g = kd_inference_mode_enter(true);
  kd_tensor *xi = NULL, *r = NULL;
  kd_status st = kd_tensor_from_data(2, (int64_t[]){4, 3}, KD_FLOAT32, xd, &xi);
  kd_inference_mode_exit(g);
  if (st) return fail("inference input");
  print_keys("\nxi (made in inference mode)'s keys", xi);
  printf("relu(xi):\n");
  mark = t.n;
  if (kd_relu(xi, &r)) return fail("relu(xi)");
  kd_tensor_release(r);
  print_tape(&t, mark);
  printf("relu(x) in inference mode:\n");
  g = kd_inference_mode_enter(true);
  st = kd_relu(x, &r);
  kd_inference_mode_exit(g);
  if (st) return fail("relu(x) in inference mode");
  kd_tensor_release(r);
  print_tape(&t, mark);

  /* Releasing the library restores plain dispatch. */
  kd_library_close(lib);
  printf("\nafter kd_library_close, aten::relu:\n");
  print_slots(slot_keys, nslot_keys);
  printf("relu(x):\n");
  if (kd_relu(x, &r)) return fail("relu(x) after the release");
  kd_tensor_release(r);
  print_tape(&t, mark);

  kd_tensor *all[] = {x, w, b, xm, wm, bm, xi};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) kd_tensor_release(all[i]);
  return 0;
}
