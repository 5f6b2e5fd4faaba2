/*
 * test_kd_lang.c: the little language of the kd command line (tools/kd/lang*.c):
 * every literal form, tensor literals (dtypes, shapes, ragged lists), variables
 * and unpacking, overload resolution as PyTorch's argument parser does it
 * (including the full report when no overload fits), tuple results and
 * indexing, operators, builtins (print, tensor, table, overloads, trace),
 * errors with line and column, kdc_lang_complete, and `kd run` / `kd call`
 * through the built binary with their exit codes.
 *
 * Expected tensor texts are what tools/kd/print.c writes (PyTorch's repr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "kd_test.h"
#include "lang.h"

/* ---- An interpreter writing to memory streams ------------------------------ */

typedef struct interp {
  FILE *out, *err;
  char *obuf, *ebuf;
  size_t olen, elen;
  size_t omark, emark; /* what earlier runs wrote */
  kd_lang *L;
} interp;

static void interp_open(interp *t) {
  memset(t, 0, sizeof *t);
  t->out = open_memstream(&t->obuf, &t->olen);
  t->err = open_memstream(&t->ebuf, &t->elen);
  assert_non_null(t->out);
  assert_non_null(t->err);
  t->L = kdc_lang_new(t->out, t->err);
  assert_non_null(t->L);
}

static void interp_close(interp *t) {
  kdc_lang_free(t->L);
  fclose(t->out);
  fclose(t->err);
  free(t->obuf);
  free(t->ebuf);
}

static char *take(FILE *f, char **buf, size_t *len, size_t *mark) {
  fflush(f);
  size_t n = *len - *mark;
  char *s = malloc(n + 1);
  assert_non_null(s);
  memcpy(s, *buf + *mark, n);
  s[n] = '\0';
  *mark = *len;
  return s;
}

/* Runs src; returns kdc_lang_run's result, and what it wrote (malloc'd). */
static int run(interp *t, const char *src, char **out, char **err) {
  int rc = kdc_lang_run(t->L, src, strlen(src), NULL);
  *out = take(t->out, &t->obuf, &t->olen, &t->omark);
  *err = take(t->err, &t->ebuf, &t->elen, &t->emark);
  return rc;
}

/* src must run without error and print exactly `want`. */
#define OK(t, src, want)                                                             \
  do {                                                                               \
    char *o_, *e_;                                                                   \
    int rc_ = run((t), (src), &o_, &e_);                                             \
    if (rc_ != 0 || e_[0]) fail_msg("%s: rc %d, error: %s", (src), rc_, e_);         \
    KD_ASSERT_STR_EQ(o_, (want));                                                    \
    free(o_);                                                                        \
    free(e_);                                                                        \
  } while (0)

/* src must fail with exactly the error text `want` (and print `want_out`). */
#define FAILS_OUT(t, src, want_out, want)                                            \
  do {                                                                               \
    char *o_, *e_;                                                                   \
    int rc_ = run((t), (src), &o_, &e_);                                             \
    if (rc_ != 1) fail_msg("%s: rc %d (expected 1), output: %s", (src), rc_, o_);   \
    KD_ASSERT_STR_EQ(e_, (want));                                                    \
    KD_ASSERT_STR_EQ(o_, (want_out));                                                \
    free(o_);                                                                        \
    free(e_);                                                                        \
  } while (0)

#define FAILS(t, src, want) FAILS_OUT(t, src, "", want)

/* ---- Literals -------------------------------------------------------------- */

static void test_literals(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "1", "1\n");
  OK(&t, "-42", "-42\n");
  OK(&t, "0x1f; 0o17; 0b101; 1_000", "31\n15\n5\n1000\n");
  OK(&t, "9223372036854775807", "9223372036854775807\n");
  OK(&t, "1.5; 1.; .25; 1e3; 2.5E-2; 1e20", "1.5\n1.0\n0.25\n1000.0\n0.025\n1e+20\n");
  OK(&t, "2j; 1.5j; -2j", "2j\n1.5j\n(-0-2j)\n");
  OK(&t, "True; False; None", "True\nFalse\n");
  OK(&t, "'abc'; \"it's\"; 'a\\tb\\n'; '\\x41\\'\\\"'", "'abc'\n\"it's\"\n'a\\tb\\n'\n'A\\'\"'\n");
  OK(&t, "'con\\\ntinued'", "'continued'\n");
  OK(&t, "[1, 2.5, True, None, 'x']; []; [[1], []]", "[1, 2.5, True, None, 'x']\n[]\n[[1], []]\n");
  OK(&t, "(1, 2); (1,); (); (1)", "(1, 2)\n(1,)\n()\n1\n");
  OK(&t, "[1, 2,]; (3, 4,)", "[1, 2]\n(3, 4)\n");
  OK(&t, "float32; int8; float; long; half; bool", "float32\nint8\nfloat32\nint64\nfloat16\nbool\n");
  OK(&t, "cpu; meta", "cpu\nmeta\n");
  OK(&t, "strided; contiguous_format; channels_last", "strided\ncontiguous_format\nchannels_last\n");
  OK(&t, "inf; -inf; nan", "inf\n-inf\nnan\n");
  /* Lexical errors, with line and column. */
  FAILS(&t, "99999999999999999999",
        "<string>:1:1: error: integer literal 99999999999999999999 is too large (int64 holds at "
        "most 9223372036854775807)\n");
  FAILS(&t, "x = 'abc", "<string>:1:5: error: unterminated string literal\n");
  FAILS(&t, "'a\\qb'", "<string>:1:3: error: unknown escape sequence '\\q'\n");
  FAILS(&t, "1 $ 2", "<string>:1:3: error: invalid character '$'\n");
  FAILS(&t, "12abc", "<string>:1:1: error: invalid number literal\n");
  FAILS(&t, "1 \\ 2", "<string>:1:3: error: unexpected character after line continuation character\n");
  interp_close(&t);
}

/* ---- Tensor literals ---------------------------------------------------------- */

static void test_tensor_literals(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  /* A list stays a list until a Tensor parameter takes it. */
  OK(&t, "x = [[1, 2], [3, 4]]; x", "[[1, 2], [3, 4]]\n");
  OK(&t, "clone(x)", "tensor([[1, 2],\n        [3, 4]])\n");   /* int64: no dtype suffix */
  OK(&t, "clone([1.5, 2])", "tensor([1.5000, 2.0000])\n");     /* float32 */
  OK(&t, "clone([True, False])", "tensor([ True, False])\n");  /* bool */
  OK(&t, "clone([True, 2])", "tensor([1, 2])\n");              /* bools and ints: int64 */
  OK(&t, "clone([1, 2j])", "tensor([1.+0.j, 0.+2.j])\n");      /* complex64 */
  OK(&t, "clone([])", "tensor([])\n");
  OK(&t, "clone([[], []])", "tensor([], size=(2, 0))\n");
  OK(&t, "clone([[[1], [2]], [[3], [4]]])", "tensor([[[1],\n         [2]],\n\n        [[3],\n         [4]]])\n");
  OK(&t, "clone(((1, 2), [3, 4]))", "tensor([[1, 2],\n        [3, 4]])\n");
  /* The builtin tensor() makes one explicitly; numbers as torch.tensor does. */
  OK(&t, "tensor([1, 2], dtype=int32)", "tensor([1, 2], dtype=int32)\n");
  OK(&t, "tensor(2.5); tensor(3); tensor(True)", "tensor(2.5000)\ntensor(3)\ntensor(True)\n");
  OK(&t, "tensor([1, 2], float64)", "tensor([1., 2.], dtype=float64)\n");
  /* Ragged and non-numeric lists, at the list argument's position. */
  FAILS(&t, "clone([[1, 2], [3]])",
        "<string>:1:7: error: ragged nested list: expected a list of length 2 at dim 1, found one "
        "of length 1\n");
  FAILS(&t, "y = 1\nclone([[1, 2], 3])",
        "<string>:2:7: error: ragged nested list: expected a list of length 2 at dim 1, found int\n");
  FAILS(&t, "tensor([1, [2]])",
        "<string>:1:8: error: ragged nested list: expected a number at dim 1, found a list\n");
  FAILS(&t, "tensor(['a'])", "<string>:1:8: error: a tensor literal holds numbers, found str\n");
  FAILS(&t, "tensor('a')",
        "<string>:1:8: error: tensor() takes a list of numbers, a number or a tensor, not str\n");
  FAILS(&t, "clone(['a'])",
        "<string>:1:1: error: aten::clone(): argument 'self' (position 1) must be Tensor, not list\n");
  interp_close(&t);
}

/* ---- Variables, statements, comments ------------------------------------------ */

static void test_variables(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "a = 1", "");
  OK(&t, "a", "1\n"); /* variables persist across runs */
  OK(&t, "a = a + 1; a", "2\n");
  OK(&t, "b, c = (10, 'x'); b; c", "10\n'x'\n");
  OK(&t, "float32 = 3; float32", "3\n"); /* a variable shadows a dtype name */
  FAILS(&t, "b, c = 1", "<string>:1:8: error: cannot unpack non-iterable int object\n");
  FAILS(&t, "b, c = [1, 2, 3]",
        "<string>:1:8: error: too many values to unpack (expected 2, got 3)\n");
  FAILS(&t, "b, c = (1,)", "<string>:1:8: error: not enough values to unpack (expected 2, got 1)\n");
  /* Earlier statements ran; the error names the line and column. */
  FAILS_OUT(&t, "x = 5\nx\nz = x + y\nx = 6",
            "5\n", "<string>:3:9: error: name 'y' is not defined\n");
  OK(&t, "x", "5\n");
  FAILS(&t, "add", "<string>:1:1: error: 'add' is an operator, not a value: call it, as add(...)\n");
  FAILS(&t, "add.Tensor",
        "<string>:1:1: error: 'add.Tensor' is an operator, not a value: call it, as add.Tensor(...)\n");
  FAILS(&t, "demo::nothing", "<string>:1:1: error: unknown operator 'demo::nothing'\n");
  interp_close(&t);
}

static void test_programs(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t,
     "# a comment line\n"
     "\n"
     "x = [1, 2,   # comments and newlines inside brackets\n"
     "     3]\n"
     "y = add(x,\n"
     "        x)  # trailing comment\n"
     "   y        # leading spaces are fine\n"
     "z = 1 + \\\n"
     "    2\n"
     "z; z * 2\n",
     "tensor([2, 4, 6])\n3\n6\n");
  /* A line ending in an operator, ',' or '=' goes on on the next line, as
   * kdc_lang_complete tells the prompt (regression: it used to be a syntax
   * error after the prompt had waited for the next line). */
  OK(&t, "w = 1 +\n 2\nw\nv =\n  5\nv * \n 2\nu = 1,\n 2\nu\n", "3\n10\n(1, 2)\n");
  OK(&t, "\n\n;;\n", "");
  OK(&t, "", "");
  /* An error after output: the output stays, the error names line 3. */
  FAILS_OUT(&t, "print('one')\nprint('two')\nprint(nope)\nprint('never')", "one\ntwo\n",
            "<string>:3:7: error: name 'nope' is not defined\n");
  /* The interpreter goes on after an error (the prompt relies on it). */
  OK(&t, "print('again')", "again\n");
  /* A name for the source. */
  char *o, *e;
  assert_int_equal(kdc_lang_run(t.L, "q", 1, "prog.kd"), 1);
  o = take(t.out, &t.obuf, &t.olen, &t.omark);
  e = take(t.err, &t.ebuf, &t.elen, &t.emark);
  KD_ASSERT_STR_EQ(e, "prog.kd:1:1: error: name 'q' is not defined\n");
  free(o);
  free(e);
  interp_close(&t);
}

/* ---- Syntax errors ------------------------------------------------------------------ */

static void test_syntax_errors(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  FAILS(&t, "x = 1 +", "<string>:1:8: error: expected an expression, found end of input\n");
  FAILS(&t, "add(1, 2", "<string>:1:4: error: '(' was never closed\n");
  FAILS(&t, "x = [1,\n 2", "<string>:1:5: error: '[' was never closed\n");
  FAILS(&t, "x = [1\ny = 2", "<string>:2:1: error: expected ',' or ']', found name 'y'\n");
  FAILS(&t, "1 2", "<string>:1:3: error: expected the end of the statement, found integer 2\n");
  FAILS(&t, "f(1; 2)", "<string>:1:4: error: expected ',' or ')', found ';'\n");
  FAILS(&t, "x = )", "<string>:1:5: error: expected an expression, found ')'\n");
  FAILS(&t, "a = b = 1", "<string>:1:7: error: expected the end of the statement, found '='\n");
  FAILS(&t, "f(x) = 1",
        "<string>:1:1: error: cannot assign to this expression: the target of '=' must be a name\n");
  FAILS(&t, "x =", "<string>:1:4: error: expected an expression after '=', found end of input\n");
  FAILS(&t, "add(alpha=1, 2)", "<string>:1:14: error: positional argument follows keyword argument\n");
  FAILS(&t, "add(1, alpha=1, alpha=2)", "<string>:1:17: error: keyword argument repeated: 'alpha'\n");
  FAILS(&t, "x.1", "<string>:1:2: error: expected the end of the statement, found number 0.1\n");
  FAILS(&t, "add.(1)", "<string>:1:5: error: expected an overload name after '.', found '('\n");
  FAILS(&t, "2 ** 3", "<string>:1:4: error: expected an expression, found '*'\n");
  /* Deep nesting is an error, not a crash. */
  char deep[1300];
  memset(deep, '(', 600);
  deep[600] = '1';
  memset(deep + 601, ')', 600);
  deep[1201] = '\0';
  char *o, *e;
  assert_int_equal(run(&t, deep, &o, &e), 1);
  assert_non_null(strstr(e, "error: expression nested too deeply"));
  free(o);
  free(e);
  interp_close(&t);
}

/* ---- Operators and indexing ------------------------------------------------------------------------ */

static void test_operators(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "1 + 2 * 3; (1 + 2) * 3; 7 / 2; 7 - 10; 2 * 1.5; -(-3); +4",
     "7\n9\n3.5\n-3\n3.0\n3\n4\n");
  OK(&t, "True + 1; 2j * 2j; 1 / 4j", "2\n(-4+0j)\n-0.25j\n");
  FAILS(&t, "1 / 0", "<string>:1:3: error: division by zero\n");
  FAILS(&t, "9223372036854775807 + 1", "<string>:1:21: error: integer overflow in + (int64)\n");
  FAILS(&t, "'a' + 1", "<string>:1:5: error: unsupported operand type(s) for +: 'str' and 'int'\n");
  FAILS(&t, "-'a'", "<string>:1:1: error: bad operand type for unary -: 'str'\n");
  FAILS(&t, "2 @ 3", "<string>:1:3: error: unsupported operand type(s) for @: 'int' and 'int'\n");
  /* With a tensor or list on either side: aten operators. */
  OK(&t, "x = tensor([[1, 2], [3, 4]])", "");
  OK(&t, "x + 1; 10 - x; x * x; x / 2", "tensor([[2, 3],\n        [4, 5]])\n"
     "tensor([[9, 8],\n        [7, 6]])\n"
     "tensor([[ 1,  4],\n        [ 9, 16]])\n"
     "tensor([[0.5000, 1.0000],\n        [1.5000, 2.0000]])\n");
  OK(&t, "[1, 2] + [3, 4]; -x; x @ x", "tensor([4, 6])\ntensor([[-1, -2],\n        [-3, -4]])\n"
     "tensor([[ 7, 10],\n        [15, 22]])\n");
  /* Indexing: tuples, lists, strings, and tensors (select along dim 0). */
  OK(&t, "(1, 2, 3)[0]; [1, 2, 3][-1]; 'abc'[1]; x[1]; x[-1][0]", "1\n3\n'b'\ntensor([3, 4])\ntensor(3)\n");
  FAILS(&t, "(1, 2)[2]", "<string>:1:8: error: tuple index 2 out of range (length 2)\n");
  FAILS(&t, "[1][-2]", "<string>:1:5: error: list index -2 out of range (length 1)\n");
  FAILS(&t, "(1, 2)['a']", "<string>:1:8: error: tuple indices must be integers, not str\n");
  FAILS(&t, "5[0]", "<string>:1:2: error: 'int' object is not subscriptable\n");
  interp_close(&t);
}

/* ---- Overload resolution ---------------------------------------------------------------------------- */

static void test_overloads(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "x = tensor([[1, 2], [3, 4]]); y = tensor([10, 20])", "");
  /* add: Tensor before Scalar; a number stands for a tensor (wrapped). */
  OK(&t, "add(x, y)", "tensor([[11, 22],\n        [13, 24]])\n");
  OK(&t, "add(x, 2)", "tensor([[3, 4],\n        [5, 6]])\n");
  OK(&t, "add(x, 2.5)", "tensor([[3.5000, 4.5000],\n        [5.5000, 6.5000]])\n");
  OK(&t, "add(x, y, alpha=2)", "tensor([[21, 42],\n        [23, 44]])\n");
  OK(&t, "add(x, 1, 3)", "tensor([[4, 5],\n        [6, 7]])\n"); /* only add.Scalar takes 3 */
  OK(&t, "add.Scalar(x, 2)", "tensor([[3, 4],\n        [5, 6]])\n");
  OK(&t, "aten::add.Tensor([1.5], [1])", "tensor([2.5000])\n");
  /* out= picks the out overload, which writes z. */
  OK(&t, "z = zeros([2, 2], dtype=int64); add(x, y, out=z); z",
     "tensor([[11, 22],\n        [13, 24]])\ntensor([[11, 22],\n        [13, 24]])\n");
  /* Reductions: int[1] from a list or a bare int; defaults. */
  OK(&t, "sum(x, [1], keepdim=True)", "tensor([[3],\n        [7]])\n");
  OK(&t, "sum(x, 0)", "tensor([4, 6])\n");
  OK(&t, "sum(x); sum(x, dtype=float64)", "tensor(10)\ntensor(10., dtype=float64)\n");
  /* Tuples from operators with named returns. */
  OK(&t, "max(x, 1)", "return_types.max(\nvalues=tensor([2, 4]),\nindices=tensor([1, 1]))\n");
  OK(&t, "m = max(x, 1); m[0]; m[1]; m[-1]", "tensor([2, 4])\ntensor([1, 1])\ntensor([1, 1])\n");
  OK(&t, "v, i = max(x, dim=0, keepdim=True); v; i", "tensor([[3, 4]])\ntensor([[1, 1]])\n");
  OK(&t, "[m[0], 1]; (m,)[0][1]", "[tensor([2, 4]), 1]\ntensor([1, 1])\n");
  FAILS(&t, "m[2]", "<string>:1:3: error: tuple index 2 out of range (length 2)\n");
  OK(&t, "max(x); max.default(x)", "tensor(4)\ntensor(4)\n");
  /* str, dtype, device, varargs int lists, tensor lists. */
  OK(&t, "div([7, -7], 2, rounding_mode='floor'); div([7, -7], [2, 2], rounding_mode=\"trunc\")",
     "tensor([ 3, -4])\ntensor([ 3, -3])\n");
  OK(&t, "div([7, -7], 2, rounding_mode=None)", "tensor([ 3.5000, -3.5000])\n");
  OK(&t, "zeros([2, 3], dtype=float64, device=meta)",
     "tensor(..., device='meta', size=(2, 3), dtype=float64)\n");
  OK(&t, "zeros([1, 2], device='cpu'); zeros(2, 3, dtype=int8)",
     "tensor([[0., 0.]])\ntensor([[0, 0, 0],\n        [0, 0, 0]], dtype=int8)\n");
  OK(&t, "cat([x, [[5, 6]]]); cat((x, x), 1)",
     "tensor([[1, 2],\n        [3, 4],\n        [5, 6]])\n"
     "tensor([[1, 2, 1, 2],\n        [3, 4, 3, 4]])\n");
  OK(&t, "stack([y, y])", "tensor([[10, 20],\n        [10, 20]])\n");
  OK(&t, "to(x, float16)", "tensor([[1., 2.],\n        [3., 4.]], dtype=float16)\n");
  /* A positional device (a string or a bare name) converts the device, keeping the dtype. */
  OK(&t, "to(x, 'meta'); to(x, meta); to(x, \"cpu:0\")",
     "tensor(..., device='meta', size=(2, 2), dtype=int64)\n"
     "tensor(..., device='meta', size=(2, 2), dtype=int64)\n"
     "tensor([[1, 2],\n        [3, 4]])\n");
  OK(&t, "to(to(x, float16), 'meta')", "tensor(..., device='meta', size=(2, 2), dtype=float16)\n");
  OK(&t, "to(x, 'meta', float64)", "tensor(..., device='meta', size=(2, 2), dtype=float64)\n");
  /* A string that names no device is refused as before (it is neither a dtype nor a Tensor). */
  {
    char *o_, *e_;
    assert_int_equal(run(&t, "to(x, 'nodevice')", &o_, &e_), 1);
    if (!strstr(e_, "error: no overload of aten::to accepts the arguments (Tensor, str)") ||
        !strstr(e_, "argument 'device' (position 2) must be Device, not str"))
      fail_msg("to(x, 'nodevice'): %s", e_);
    free(o_);
    free(e_);
  }
  OK(&t, "demo::neg([1, 2]); demo::scale([1.5])", "tensor([-1, -2])\ntensor([3.])\n");
  /* A 0-dim tensor is accepted as an int and as a Scalar (its value). */
  OK(&t, "d = tensor(1); max(x, d)[0]; add(x, 1, d)",
     "tensor([2, 4])\ntensor([[2, 3],\n        [4, 5]])\n");
  /* ... but not as a bare int for int[1] (PyTorch takes only a Python int there). */
  FAILS(&t, "sum.dim_IntList(x, d)",
        "<string>:1:1: error: aten::sum.dim_IntList(): argument 'dim' (position 2) must be "
        "int[1], not Tensor\n");
  /* The order calls try, as PyTorch's sort_overloads gives it. */
  OK(&t, "overloads(add)",
     "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
     "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)\n"
     "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n");
  OK(&t, "overloads('demo::neg')", "demo::neg(Tensor self) -> Tensor\n");
  /* An out overload goes after the functional one with its positional arguments. */
  OK(&t, "overloads(zeros)",
     "aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
     "device=None, bool? pin_memory=None) -> Tensor\n"
     "aten::zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)\n");
  /* eq takes no number for a Tensor: eq.Tensor refuses 1, eq.Scalar takes it. */
  OK(&t, "eq(x, 1)", "tensor([[ True, False],\n        [False, False]])\n");
  FAILS(&t, "overloads(nothing)", "<string>:1:11: error: overloads(): no operator named 'nothing'\n");
  /* Errors of the call itself (a kernel's message) at the call. */
  char *o, *e;
  assert_int_equal(run(&t, "\n  add([1, 2], [1, 2, 3])", &o, &e), 1);
  if (strncmp(e, "<string>:2:3: error: ", 21) != 0) fail_msg("got: %s", e);
  free(o);
  free(e);
  interp_close(&t);
}

static void test_no_overload(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "x = tensor([1, 2])", "");
  FAILS(&t, "y = 1\ny = add(x, 'a', alpha=2)",
        "<string>:2:5: error: no overload of aten::add accepts the arguments (Tensor, str, "
        "alpha=int); tried in this order:\n"
        "  aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
        "      argument 'other' (position 2) must be Tensor, not str\n"
        "  aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
        "Tensor(a!)\n"
        "      argument 'other' (position 2) must be Tensor, not str\n"
        "  aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n"
        "      argument 'other' (position 2) must be Scalar, not str\n");
  FAILS(&t, "sum(x, foo=1)",
        "<string>:1:1: error: no overload of aten::sum accepts the arguments (Tensor, foo=int); "
        "tried in this order:\n"
        "  aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor\n"
        "      got an unexpected keyword argument 'foo'\n"
        "  aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
        "dtype=None) -> Tensor\n"
        "      missing required argument 'dim'\n"
        "  aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
        "dtype=None, Tensor(a!) out) -> Tensor(a!)\n"
        "      missing required argument 'dim'\n");
  FAILS(&t, "max(x, 1, True, 3)",
        "<string>:1:1: error: no overload of aten::max accepts the arguments (Tensor, int, bool, "
        "int); tried in this order:\n"
        "  aten::max(Tensor self) -> Tensor\n"
        "      takes 1 positional argument but 4 were given\n"
        "  aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor "
        "indices)\n"
        "      takes from 2 to 3 positional arguments but 4 were given\n"
        "  aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
        "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)\n"
        "      takes from 2 to 3 positional arguments but 4 were given\n");
  /* One candidate: just its reason. */
  FAILS(&t, "demo::neg(1)",
        "<string>:1:1: error: demo::neg(): argument 'self' (position 1) must be Tensor, not int\n");
  FAILS(&t, "add.Tensor(x, x, self=x)",
        "<string>:1:1: error: aten::add.Tensor(): got multiple values for argument 'self'\n");
  FAILS(&t, "add.Tensor(x, x, 1)",
        "<string>:1:1: error: aten::add.Tensor(): takes 2 positional arguments but 3 were given\n");
  FAILS(&t, "max.dim(x, 0, keepdim=1)",
        "<string>:1:1: error: aten::max.dim(): argument 'keepdim' must be bool, not int\n");
  FAILS(&t, "max.dim(x, 1.5)",
        "<string>:1:1: error: aten::max.dim(): argument 'dim' (position 2) must be int, not float\n");
  FAILS(&t, "sum.dim_IntList(x, [0, 1.5])",
        "<string>:1:1: error: aten::sum.dim_IntList(): argument 'dim' (position 2) must be "
        "int[1], but found element of type float at pos 1\n");
  FAILS(&t, "max(x, dim=None)",
        "<string>:1:1: error: no overload of aten::max accepts the arguments (Tensor, "
        "dim=NoneType); tried in this order:\n"
        "  aten::max(Tensor self) -> Tensor\n"
        "      got an unexpected keyword argument 'dim'\n"
        "  aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor "
        "indices)\n"
        "      argument 'dim' must be int, not NoneType\n"
        "  aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
        "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)\n"
        "      argument 'dim' must be int, not NoneType\n");
  /* Numbers are tensors only for add, sub, mul, div and the like. */
  FAILS(&t, "maximum(x, 1)",
        "<string>:1:1: error: no overload of aten::maximum accepts the arguments (Tensor, int); "
        "tried in this order:\n"
        "  aten::maximum(Tensor self, Tensor other) -> Tensor\n"
        "      argument 'other' (position 2) must be Tensor, not int\n"
        "  aten::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
        "      argument 'other' (position 2) must be Tensor, not int\n");
  /* Varargs int lists report the element that is not an int. */
  FAILS(&t, "zeros(2, 3.5)",
        "<string>:1:1: error: no overload of aten::zeros accepts the arguments (int, float); "
        "tried in this order:\n"
        "  aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
        "device=None, bool? pin_memory=None) -> Tensor\n"
        "      argument 'size' (position 1) must be int[], but found element of type float at pos 1\n"
        "  aten::zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)\n"
        "      argument 'size' (position 1) must be int[], but found element of type float at pos 1\n");
  /* A list whose element at position >= 2 is not an int: the element's
   * index is not an argument's (it used to be read as one, past the end of
   * the arguments: heap-buffer-overflow). */
  FAILS(&t, "zeros([1, 3, [4]])",
        "<string>:1:1: error: no overload of aten::zeros accepts the arguments (list); "
        "tried in this order:\n"
        "  aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
        "device=None, bool? pin_memory=None) -> Tensor\n"
        "      argument 'size' (position 1) must be int[], but found element of type list at pos 2\n"
        "  aten::zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)\n"
        "      argument 'size' (position 1) must be int[], but found element of type list at pos 2\n");
  /* Unknown operators and overloads. */
  FAILS(&t, "nothing(1)", "<string>:1:1: error: unknown operator 'aten::nothing'\n");
  FAILS(&t, "add.Foo(x)",
        "<string>:1:1: error: operator 'aten::add' has no overload 'Foo' (its overloads: Scalar, "
        "Tensor, out)\n");
  FAILS(&t, "x(1)", "<string>:1:1: error: unknown operator 'aten::x'\n");
  FAILS(&t, "(x)[0](1)",
        "<string>:1:4: error: only operators and builtins can be called (add(x, y), add.Tensor(x, y))\n");
  interp_close(&t);
}

/* ---- Builtins ------------------------------------------------------------------------- */

static void test_print_and_tensor(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "print(1, 'two', [3], None, float32)", "1 two [3] None float32\n");
  OK(&t, "print()", "\n");
  OK(&t, "print(max(tensor([[1, 2]]), 1))",
     "return_types.max(\nvalues=tensor([2]),\nindices=tensor([1]))\n");
  FAILS(&t, "print(1, sep='')", "<string>:1:10: error: print() got an unexpected keyword argument 'sep'\n");
  FAILS(&t, "tensor()", "<string>:1:1: error: tensor() takes from 1 to 2 arguments (0 given)\n");
  FAILS(&t, "tensor([1], dtype=2)", "<string>:1:19: error: tensor(): argument 'dtype' must be a dtype, not int\n");
  FAILS(&t, "tensor([1], device=cpu)",
        "<string>:1:13: error: tensor() got an unexpected keyword argument 'device'\n");
  interp_close(&t);
}

static char *op_table(const char *name) {
  kd_op *op;
  KD_ASSERT_OK(kd_op_find(name, NULL, &op));
  size_t n = kd_op_dump_table(op, NULL, 0);
  char *buf = malloc(n + 1);
  assert_non_null(buf);
  kd_op_dump_table(op, buf, n + 1);
  return buf;
}

static void test_table(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  char *want = op_table("aten::add.Tensor");
  assert_non_null(strstr(want, "dispatch table of aten::add.Tensor:\n"));
  OK(&t, "table(add.Tensor)", want);
  OK(&t, "table('aten::add.Tensor')", want);
  OK(&t, "table(aten::add.Tensor)", want);
  free(want);
  want = op_table("demo::scale");
  OK(&t, "table(demo::scale)", want);
  free(want);
  want = op_table("aten::max");
  char *twice = malloc(2 * strlen(want) + 1);
  assert_non_null(twice);
  sprintf(twice, "%s%s", want, want);
  OK(&t, "table(max); table(max.default)", twice);
  free(twice);
  free(want);
  /* The refactored `kd table` prints the same through kdc_print_op_table. */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  kd_op *op;
  KD_ASSERT_OK(kd_op_find("aten::add.Tensor", NULL, &op));
  assert_int_equal(kdc_print_op_table(f, op), 0);
  fclose(f);
  want = op_table("aten::add.Tensor");
  KD_ASSERT_STR_EQ(buf, want);
  free(want);
  free(buf);
  FAILS(&t, "table(add)",
        "<string>:1:7: error: table(): 'aten::add' has overloads; name one: aten::add.Tensor, "
        "aten::add.out, aten::add.Scalar\n");
  FAILS(&t, "table(add.Nope)", "<string>:1:7: error: table(): no operator 'aten::add.Nope'\n");
  FAILS(&t, "table(1)",
        "<string>:1:7: error: table() takes an operator: add.Tensor, demo::scale or "
        "\"aten::add.Tensor\"\n");
  FAILS(&t, "table()", "<string>:1:1: error: table() takes 1 argument (0 given)\n");
  interp_close(&t);
}

static void test_trace(void **state) {
  (void)state;
  interp t;
  interp_open(&t);
  OK(&t, "x = tensor([1.5, 2])", "");
  OK(&t, "trace(True)\nadd(x, 1)\ndemo::neg(x)\n",
     "   [Tracer] aten::add.Tensor\ntensor([2.5000, 3.0000])\n   [Tracer] demo::neg\n"
     "tensor([-1.5000, -2.0000])\n");
  assert_true(kd_tls_keys_get().include & kd_keyset_of(KD_KEY_TRACER));
  OK(&t, "trace(True); y = demo::scale(x)", "   [Tracer] demo::scale\n"); /* on twice: still one line */
  OK(&t, "trace(False); add(x, 1)", "tensor([2.5000, 3.0000])\n");
  assert_false(kd_tls_keys_get().include & kd_keyset_of(KD_KEY_TRACER));
  OK(&t, "trace(False)", "");
  FAILS(&t, "trace(1)", "<string>:1:7: error: trace() takes True or False, not int\n");
  FAILS(&t, "trace()", "<string>:1:1: error: trace() takes 1 argument (0 given)\n");
  /* Freeing an interpreter that traces takes the key out again. */
  OK(&t, "trace(True)", "");
  interp_close(&t);
  assert_false(kd_tls_keys_get().include & kd_keyset_of(KD_KEY_TRACER));
}

/* ---- kdc_lang_complete ------------------------------------------------------------------------ */

static int complete(const char *s) { return kdc_lang_complete(s, strlen(s)); }

static void test_complete(void **state) {
  (void)state;
  assert_int_equal(complete(""), 1);
  assert_int_equal(complete("x = 1"), 1);
  assert_int_equal(complete("add(x,"), 0);
  assert_int_equal(complete("add(x, [1,\n 2]"), 0);
  assert_int_equal(complete("add(x, [1,\n 2])"), 1);
  assert_int_equal(complete("x = 1 +"), 0);
  assert_int_equal(complete("x = 1 + # more to come"), 0);
  assert_int_equal(complete("x ="), 0);
  assert_int_equal(complete("x = 1, "), 0);
  assert_int_equal(complete("x = 1 \\"), 0);
  assert_int_equal(complete("x = 1 \\\n"), 0);
  assert_int_equal(complete("x = 'abc\\"), 0);     /* a string continued on the next line */
  assert_int_equal(complete("x = 'a(b' # (\n"), 1); /* brackets in strings and comments */
  assert_int_equal(complete("x = 1.)"), 1);         /* too many closing: run it, see the error */
  assert_int_equal(complete("x = 'abc\ny'"), 1);    /* an unterminated string is an error */
  assert_int_equal(complete("x = 1.\n"), 1);
  assert_int_equal(complete("x = -"), 0);
}

/* ---- kd run and kd call through the binary ----------------------------------------------------- */

#define KD KD_BIN_DIR "/kd"

static void expect_cmd(const char *cmd, int want_status, const char *want_out) {
  int status;
  char *out = kd_test_run(cmd, &status);
  if (status != want_status) fail_msg("%s: status %d (expected %d), output:\n%s", cmd, status, want_status, out);
  KD_ASSERT_STR_EQ(out, want_out);
  free(out);
}

static void test_kd_call(void **state) {
  (void)state;
  expect_cmd(KD " call add.Tensor '[[1,2],[3,4]]' '[10,20]' alpha=2 2>&1", 0,
             "tensor([[21, 42],\n        [23, 44]])\n");
  expect_cmd(KD " call add '[1, 2]' 3 2>&1", 0, "tensor([4, 5])\n");
  expect_cmd(KD " call sum keepdim=True '[[1,2],[3,4]]' 1 2>&1", 0, "tensor([[3],\n        [7]])\n");
  expect_cmd(KD " call max '[[1,5],[3,2]]' 1 2>&1", 0,
             "return_types.max(\nvalues=tensor([5, 3]),\nindices=tensor([1, 0]))\n");
  expect_cmd(KD " call div '[7,8]' 2 'rounding_mode=\"floor\"' 2>&1", 0, "tensor([3, 4])\n");
  expect_cmd(KD " call zeros 2 dtype=int32 2>&1", 0, "tensor([0, 0], dtype=int32)\n");
  expect_cmd(KD " call demo::neg '[1]' 2>/dev/null", 0, "tensor([-1])\n");
  /* Failures: exit 1, the report on stderr. */
  expect_cmd(KD " call add '[1]' \"'a'\" 2>&1", 1,
             "kd call: error: no overload of aten::add accepts the arguments (list, str); tried in "
             "this order:\n"
             "  aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n"
             "      argument 'other' (position 2) must be Tensor, not str\n"
             "  aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
             "Tensor(a!)\n"
             "      argument 'other' (position 2) must be Tensor, not str\n"
             "  aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n"
             "      argument 'other' (position 2) must be Scalar, not str\n");
  expect_cmd(KD " call add '[1' 2 2>&1", 1, "<arg 1>:1:1: error: '[' was never closed\n");
  expect_cmd(KD " call add 1 'alpha=[1' 2>&1", 1, "<arg 2>:1:1: error: '[' was never closed\n");
  expect_cmd(KD " call add '[1]' 1 alpha=1 alpha=2 2>&1", 1,
             "kd call: error: keyword argument repeated: 'alpha'\n");
  expect_cmd(KD " call nothing 1 2>&1", 1, "kd call: error: unknown operator 'aten::nothing'\n");
  expect_cmd(KD " call 2>/dev/null", 2, "");
  int status;
  char *out = kd_test_run(KD " call --help", &status);
  assert_int_equal(status, 0);
  assert_non_null(strstr(out, "usage: kd call OP ARG... [NAME=VALUE...]"));
  free(out);
}

static void test_kd_run(void **state) {
  (void)state;
  expect_cmd(KD " run -e 'x = [1, 2]' -e 'add(x, x)' 2>&1", 0, "tensor([2, 4])\n");
  expect_cmd(KD " run -e 'print(1)' -e 'y' -e 'print(2)' 2>&1", 1,
             "1\n<string>:1:1: error: name 'y' is not defined\n");
  expect_cmd(KD " run -e 'trace(True); add([1], 2)' 2>&1", 0,
             "   [Tracer] aten::add.Tensor\ntensor([3])\n");
  /* A file, with an error on line 3: stdout keeps what ran, stderr names FILE:3:5. */
  char path[] = "/tmp/kd_lang_test_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char *prog = "# a program\nx = tensor([[1, 2], [3, 4]])\nm = max(x, 1); m[0]\nz = nope\n";
  assert_int_equal(write(fd, prog, strlen(prog)), (ssize_t)strlen(prog));
  close(fd);
  char cmd[512], want[512];
  snprintf(cmd, sizeof cmd, KD " run %s 2>/dev/null", path);
  expect_cmd(cmd, 1, "tensor([2, 4])\n");
  snprintf(cmd, sizeof cmd, KD " run %s 2>&1 >/dev/null", path);
  snprintf(want, sizeof want, "%s:4:5: error: name 'nope' is not defined\n", path);
  expect_cmd(cmd, 1, want);
  snprintf(cmd, sizeof cmd, KD " run - < %s 2>&1 >/dev/null", path);
  expect_cmd(cmd, 1, "<stdin>:4:5: error: name 'nope' is not defined\n");
  unlink(path);
  expect_cmd(KD " run /nonexistent/kd.prog 2>&1", 1,
             "kd run: cannot read /nonexistent/kd.prog: No such file or directory\n");
  expect_cmd(KD " run 2>/dev/null", 2, "");
  expect_cmd(KD " run a b 2>&1 | head -1", 0, "kd run: unexpected argument 'b'\n");
  expect_cmd(KD " run -x 2>&1 | head -1", 0, "kd run: unknown option '-x'\n");
  expect_cmd(KD " run -e 2>&1 | head -1", 0, "kd run: -e needs CODE\n");
  int status;
  char *out = kd_test_run(KD " run --help", &status);
  assert_int_equal(status, 0);
  assert_non_null(strstr(out, "Builtins:"));
  assert_non_null(strstr(out, "table(add.Tensor)"));
  assert_non_null(strstr(out, "trace(True)"));
  free(out);
}

static int setup(void **state) {
  (void)state;
  return kdc_tool_open();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_literals),      cmocka_unit_test(test_tensor_literals),
      cmocka_unit_test(test_variables),     cmocka_unit_test(test_programs),
      cmocka_unit_test(test_syntax_errors), cmocka_unit_test(test_operators),
      cmocka_unit_test(test_overloads),     cmocka_unit_test(test_no_overload),
      cmocka_unit_test(test_print_and_tensor), cmocka_unit_test(test_table),
      cmocka_unit_test(test_trace),         cmocka_unit_test(test_complete),
      cmocka_unit_test(test_kd_call),       cmocka_unit_test(test_kd_run),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
