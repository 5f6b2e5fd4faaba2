// kd-difftest: a differential test of libkdops against libtorch 1.13.
//
// For every aten operator that kd_ops_open registers, the program finds the
// libtorch operator of the same name and overload, generates argument sets
// from the schema (deterministically: dtypes, shapes, layouts, scalars,
// optional arguments, out= tensors), calls both boxed with identical inputs
// (the same bytes), and compares success or failure, the results (dtype,
// shape, strides, storage offset and aliasing of views, values) and every
// tensor argument after the call. Differences listed in the known-differences
// file are counted apart; any other is a failure. docs/DIFFTEST.md.
//
// This file does not include libtorch's headers (torch_side.cpp does).
#include "difftest.h"

#include "kd/kd.h"
#include "kd/ops.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace difftest;

namespace {

// ---- Options -----------------------------------------------------------

struct Options {
  std::string known_path;
  std::vector<std::string> op_globs;
  bool verbose = false;   // print known differences and agreeing cases too
  bool list = false;      // print the cases, run nothing
  bool dump = false;      // print the tensors of every case that differs
  bool self_check = false;  // perturb kd's results: every perturbation must be caught
  int max_print = 10;     // unexplained differences printed per operator
};

// ---- Deterministic random numbers ----------------------------------------

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1)); }
};

uint64_t hash_str(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool is_float(int d) { return d == F16 || d == BF16 || d == F32 || d == F64; }
bool is_complex(int d) { return d == C64 || d == C128; }
bool is_int(int d) { return d >= U8 && d <= I64; }

// ---- Tensor specifications -------------------------------------------------

// How a tensor argument of a case is made.
enum class Fill { Normal, Special, Index, Mask };

struct TSpec {
  bool none = false;  // None for Tensor? arguments
  int dtype = F32;
  std::vector<int64_t> sizes;
  char layout = 'c';  // c contiguous, T transposed, s stepped, x expanded, o offset
  Fill fill = Fill::Normal;
  int64_t hi = 3;     // Index: values in [0, hi), or hi itself and -1 for 'oob'
  bool oob = false;
  int alias = -1;     // share the buffer and geometry of this argument's tensor
};

std::string shape_str(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string tspec_desc(const TSpec &t, const std::vector<std::string> &argnames) {
  if (t.none) return "None";
  if (t.alias >= 0) return "=" + argnames[(size_t)t.alias];
  std::string r = std::string(dtype_short(t.dtype)) + shape_str(t.sizes);
  if (t.layout != 'c') r += std::string(":") + t.layout;
  if (t.fill == Fill::Special) r += ":special";
  if (t.fill == Fill::Index && t.oob) r += ":oob";
  return r;
}

// One argument of a case: a tensor, a list of tensors, or a plain value.
struct ASpec {
  enum { Plain, Tens, List } what = Plain;
  Val v;  // Plain
  TSpec t;
  std::vector<TSpec> list;
};

std::string val_desc(const Val &v) {
  char buf[64];
  switch (v.kind) {
    case VK::None: return "None";
    case VK::Bool: return v.b ? "True" : "False";
    case VK::Int: return std::to_string(v.i);
    case VK::Double:
      std::snprintf(buf, sizeof buf, "%.17g", v.d);
      if (!std::strpbrk(buf, ".eni")) std::strcat(buf, ".");
      return buf;
    case VK::Complex: std::snprintf(buf, sizeof buf, "(%g%+gj)", v.d, v.im); return buf;
    case VK::Str: return "'" + v.s + "'";
    case VK::Dtype: return dtype_short((int)v.i);
    case VK::Layout: return v.i == 0 ? "strided" : "sparse";
    case VK::Device: return "cpu";
    case VK::MemFmt: {
      static const char *const n[] = {"contiguous_format", "preserve_format", "channels_last",
                                      "channels_last_3d"};
      return n[v.i];
    }
    case VK::IntList: return shape_str(v.ints);
    default: return "?";
  }
}

Val vnone() { return Val(); }
Val vbool(bool b) { Val v; v.kind = VK::Bool; v.b = b; return v; }
Val vint(int64_t i) { Val v; v.kind = VK::Int; v.i = i; return v; }
Val vdbl(double d) { Val v; v.kind = VK::Double; v.d = d; return v; }
Val vcpx(double re, double im) { Val v; v.kind = VK::Complex; v.d = re; v.im = im; return v; }
Val vstr(const char *s) { Val v; v.kind = VK::Str; v.s = s; return v; }
Val vdtype(int d) { Val v; v.kind = VK::Dtype; v.i = d; return v; }
Val vints(std::vector<int64_t> x) { Val v; v.kind = VK::IntList; v.ints = std::move(x); return v; }

ASpec plain(Val v) { ASpec a; a.v = std::move(v); return a; }
ASpec tens(TSpec t) { ASpec a; a.what = ASpec::Tens; a.t = std::move(t); return a; }

// ---- The operator's arguments -----------------------------------------------

enum class Role { Data, Out, Index, Mask, Other };

struct ArgInfo {
  std::string name, type;  // type as kd prints it ("Tensor(a!)", "Scalar?", "int[1]", ...)
  const kd_type *ktype = nullptr;
  kd_type_kind base = KD_TYPE_ANY;  // the kind under an optional
  bool optional = false, is_list = false, write = false, kwarg = false;
  bool has_default = false;
  Val def;              // the default, when there is one
  Role role = Role::Other;
  std::vector<ASpec> cands;  // cands[0] is the base case's value
};

struct OpInfo {
  kd_op *op = nullptr;
  std::string full;      // "add.Tensor"
  std::string name, overload;
  std::vector<ArgInfo> args;
  bool nondet = false;   // values are not compared (empty, rand)
  bool inplace = false;
};

Val from_kd_value(const kd_value &v) {
  switch (v.tag) {
    case KD_VALUE_BOOL: return vbool(v.u.b);
    case KD_VALUE_INT: return vint(v.u.i);
    case KD_VALUE_DOUBLE: return vdbl(v.u.d);
    case KD_VALUE_COMPLEX: return vcpx(v.u.c.re, v.u.c.im);
    case KD_VALUE_SCALAR:
      switch (v.u.s.kind) {
        case KD_SCALAR_BOOL: return vbool(v.u.s.v.b);
        case KD_SCALAR_INT: return vint(v.u.s.v.i);
        case KD_SCALAR_DOUBLE: return vdbl(v.u.s.v.d);
        case KD_SCALAR_COMPLEX: return vcpx(v.u.s.v.c.re, v.u.s.v.c.im);
      }
      break;
    case KD_VALUE_STRING: {
      size_t n = 0;
      const char *p = kd_value_string_data(&v, &n);
      Val r;
      r.kind = VK::Str;
      r.s.assign(p, n);
      return r;
    }
    case KD_VALUE_DTYPE: return vdtype((int)v.u.dtype);
    case KD_VALUE_LAYOUT: { Val r; r.kind = VK::Layout; r.i = v.u.layout; return r; }
    case KD_VALUE_DEVICE: { Val r; r.kind = VK::Device; return r; }
    case KD_VALUE_MEMORY_FORMAT: { Val r; r.kind = VK::MemFmt; r.i = v.u.mf; return r; }
    case KD_VALUE_INT_LIST: {
      const int64_t *p = kd_value_int_list_data(&v);
      return vints(std::vector<int64_t>(p, p + kd_value_list_size(&v)));
    }
    default: break;
  }
  return vnone();
}

// Base shapes of tensor arguments, per operator name (default [2,3]).
std::vector<int64_t> base_shape(const std::string &op, const std::string &arg) {
  static const std::map<std::string, std::vector<int64_t>> m = {
      {"mm/self", {2, 3}},           {"mm/mat2", {3, 4}},
      {"bmm/self", {2, 2, 3}},       {"bmm/mat2", {2, 3, 4}},
      {"addmm/self", {2, 4}},        {"addmm_/self", {2, 4}},
      {"addmm/mat1", {2, 3}},        {"addmm_/mat1", {2, 3}},
      {"addmm/mat2", {3, 4}},        {"addmm_/mat2", {3, 4}},
      {"dot/self", {3}},             {"dot/tensor", {3}},
      {"matmul/self", {2, 3}},       {"matmul/other", {3, 4}},
      {"index_select/self", {3, 4}}, {"index_select/index", {2}},
      {"gather/self", {3, 4}},       {"gather/index", {3, 2}},
      {"view_as/other", {3, 2}},     {"reshape_as/other", {3, 2}},
      {"expand_as/self", {1, 3}},    {"expand/self", {1, 3}},
      {"squeeze/self", {2, 1, 3}},   {"squeeze_/self", {2, 1, 3}},
      {"fill_/value", {}},           {"masked_fill/value", {}},
      {"masked_fill_/value", {}},    {"narrow/start", {}},
  };
  auto it = m.find(op + "/" + arg);
  if (it != m.end()) return it->second;
  return {2, 3};
}

const std::vector<int> kAllDtypes = {B, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128};

// Candidate values of a non-tensor argument, by kind and name; the first is
// the base case's (the default when there is one).
void plain_candidates(const OpInfo &op, ArgInfo &a) {
  std::vector<Val> c;
  const std::string &n = a.name;
  switch (a.base) {
    case KD_TYPE_INT:
    case KD_TYPE_SYMINT:
      if (a.is_list) {
        if (n == "size" && (op.name == "view"))
          c = {vints({3, 2}), vints({6}), vints({-1}), vints({-1, 2}), vints({2, -1, 1}),
               vints({4, 2}), vints({-1, -1}), vints({0, -1})};
        else if (n == "shape")
          c = {vints({3, 2}), vints({6}), vints({-1}), vints({-1, 2}), vints({4, 2}),
               vints({-1, -1}), vints({1, 6, 1})};
        else if (n == "size" && op.name == "expand")
          c = {vints({2, 3}), vints({4, 2, 3}), vints({-1, 3}), vints({2, -1}), vints({1, 4}),
               vints({3}), vints({-2, 3})};
        else if (n == "size")
          c = {vints({2, 3}), vints({}), vints({0}), vints({5}), vints({2, 0, 3}), vints({-1}),
               vints({1, 1, 1})};
        else if (n == "dims")
          c = {vints({1, 0}), vints({0, 1}), vints({-1, 0}), vints({0, 0}), vints({0}),
               vints({1, 0, 2}), vints({2, 0})};
        else  // reduction dims
          c = {vints({1}), vints({0}), vints({-1}), vints({0, 1}), vints({1, 1}), vints({2}),
               vints({})};
      } else if (n == "dim0") {
        c = {vint(0), vint(1), vint(-1), vint(2)};
      } else if (n == "dim1") {
        c = {vint(1), vint(0), vint(-2), vint(2)};
      } else if (n == "dim") {
        c = {vint(1), vint(0), vint(-1), vint(2), vint(-3)};
      } else if (n == "index") {
        c = {vint(1), vint(-1), vint(2), vint(3), vint(-4)};
      } else if (n == "start" && op.name == "slice") {
        c = {vnone(), vint(0), vint(1), vint(-1), vint(-5), vint(10)};
      } else if (n == "end" && op.name == "slice") {
        c = {vnone(), vint(2), vint(-1), vint(0), vint(10), vint(-5)};
      } else if (n == "step") {
        c = {vint(1), vint(2), vint(3), vint(0), vint(-1)};
      } else if (n == "start") {
        c = {vint(1), vint(0), vint(-1), vint(3), vint(-4)};
      } else if (n == "length") {
        c = {vint(1), vint(2), vint(0), vint(3), vint(-1)};
      } else if (n == "start_dim") {
        c = {vint(0), vint(1), vint(-1), vint(2)};
      } else if (n == "end_dim") {
        c = {vint(-1), vint(0), vint(1), vint(2)};
      } else if (n == "diagonal") {
        c = {vint(0), vint(1), vint(-1), vint(3), vint(-3)};
      } else if (n == "decimals") {
        c = {vint(1), vint(0), vint(2), vint(-1)};
      } else if (n == "n") {
        c = {vint(3), vint(0), vint(1), vint(-1)};
      } else if (n == "m") {
        c = {vint(4), vint(0), vint(1), vint(-1)};
      } else {
        c = {vint(1), vint(0), vint(-1)};
      }
      if (a.optional && !(c[0].kind == VK::None)) c.insert(c.begin(), vnone());
      if (a.optional && a.name == "dim" && !a.is_list) {
        // argmax(dim=None) is the base; then the dims
      }
      break;
    case KD_TYPE_FLOAT: c = {vdbl(1.5), vdbl(0), vdbl(-1)}; break;
    case KD_TYPE_BOOL:
      if (a.optional) c = {vnone(), vbool(false), vbool(true)};
      else c = {vbool(false), vbool(true)};
      break;
    case KD_TYPE_SCALAR:
      if (n == "alpha" || n == "beta")
        c = {vint(1), vint(2), vint(0), vdbl(1.5), vbool(true), vcpx(1, -1), vdbl(0.0), vint(-1)};
      else if (n == "end")
        c = {vint(5), vdbl(2.5), vint(0), vint(-3), vdbl(NAN), vdbl(INFINITY), vbool(true),
             vcpx(2, 0)};
      else if (n == "start")
        c = {vint(1), vint(0), vdbl(0.5), vint(7), vbool(false)};
      else if (n == "step")
        c = {vint(1), vint(2), vdbl(0.5), vint(0), vint(-1), vdbl(-0.25)};
      else if (n == "exponent")
        c = {vint(2), vdbl(0.5), vint(0), vint(-1), vint(3), vdbl(-1.5), vbool(true), vcpx(1, 1),
             vint(64), vint(-2)};
      else if (n == "min" && a.optional)
        c = {vint(-1), vnone(), vdbl(-0.5), vdbl(NAN), vint(2), vbool(true), vcpx(1, 0)};
      else if (n == "max" && a.optional)
        c = {vnone(), vint(1), vdbl(0.5), vint(-2), vdbl(NAN)};
      else
        c = {vint(2), vdbl(1.5), vbool(true), vcpx(1, -1), vint(-3), vdbl(-0.5), vdbl(NAN),
             vint(300), vdbl(1e10), vint(0), vdbl(0.0), vdbl(-INFINITY), vint(-129)};
      if (a.optional && n != "min" && n != "max") c.push_back(vnone());
      break;
    case KD_TYPE_SCALAR_TYPE:
      if (a.optional)
        c = {vnone(), vdtype(F32), vdtype(F64), vdtype(I64), vdtype(B), vdtype(F16),
             vdtype(C64), vdtype(I32), vdtype(U8), vdtype(BF16)};
      else
        c = {vdtype(F32), vdtype(I32), vdtype(I64), vdtype(F64), vdtype(U8), vdtype(B),
             vdtype(I16), vdtype(C64), vdtype(F16)};
      break;
    case KD_TYPE_LAYOUT: {
      Val l;
      l.kind = VK::Layout;
      c = {vnone(), l};
      break;
    }
    case KD_TYPE_DEVICE: {
      Val d;
      d.kind = VK::Device;
      c = {vnone(), d};
      break;
    }
    case KD_TYPE_MEMORY_FORMAT: {
      Val m;
      m.kind = VK::MemFmt;
      for (int i = 0; i < 3; i++) {
        m.i = i;
        c.push_back(m);
      }
      if (a.optional) c.insert(c.begin(), vnone());
      break;
    }
    case KD_TYPE_STR:
      if (n == "rounding_mode") c = {vnone(), vstr("trunc"), vstr("floor"), vstr("bad")};
      else if (n == "approximate") c = {vstr("none"), vstr("tanh"), vstr("bad")};
      else c = {vstr("")};
      break;
    default: c = {vnone()}; break;
  }
  // The default comes first, when the schema has one.
  if (a.has_default) {
    std::string dd = val_desc(a.def);
    auto it = std::find_if(c.begin(), c.end(), [&](const Val &v) { return val_desc(v) == dd; });
    if (it != c.end()) c.erase(it);
    c.insert(c.begin(), a.def);
  }
  for (Val &v : c) a.cands.push_back(plain(v));
}

void tensor_candidates(const OpInfo &op, ArgInfo &a) {
  TSpec base;
  base.sizes = base_shape(op.name, a.name);
  if (a.role == Role::Out) {
    base.sizes = {0};  // resized by the operator
  } else if (a.role == Role::Index) {
    base.dtype = I64;
    base.fill = Fill::Index;
  } else if (a.role == Role::Mask) {
    base.dtype = B;
    base.fill = Fill::Mask;
  } else if (op.name == "narrow" && a.name == "start") {
    base.dtype = I64;
    base.fill = Fill::Index;
    base.hi = 2;
  }
  if (a.is_list) {
    ASpec l;
    l.what = ASpec::List;
    TSpec t0 = base, t1 = base;
    if (op.name == "cat") t1.sizes = {1, 3};
    l.list = {t0, t1};
    a.cands.push_back(l);
    ASpec one = l;
    one.list = {t0};
    a.cands.push_back(one);
    ASpec empty = l;
    empty.list = {};
    a.cands.push_back(empty);
    ASpec bad = l;
    bad.list[1].sizes = {2, 4};
    a.cands.push_back(bad);
    ASpec legacy = l;
    legacy.list[1].sizes = {0};
    a.cands.push_back(legacy);
    ASpec mixed = l;
    mixed.list[1].dtype = I64;
    a.cands.push_back(mixed);
    ASpec tr = l;
    tr.list[0].layout = 'T';
    tr.list[1].layout = 's';
    a.cands.push_back(tr);
    ASpec zd = l;
    zd.list[0].sizes = {};
    zd.list[1].sizes = {};
    a.cands.push_back(zd);
    ASpec three = l;
    three.list.push_back(t0);
    three.list[2].dtype = F64;
    a.cands.push_back(three);
    return;
  }
  if (a.optional) {
    // clamp.Tensor: min given, max None in the base case
    if (a.name == "max") {
      TSpec n;
      n.none = true;
      a.cands.push_back(tens(n));
      a.cands.push_back(tens(base));
    } else {
      a.cands.push_back(tens(base));
      TSpec n;
      n.none = true;
      a.cands.push_back(tens(n));
    }
  } else {
    a.cands.push_back(tens(base));
  }
}

bool is_out_arg(const ArgInfo &a, size_t i) {
  return a.write && a.kwarg && i > 0;
}

OpInfo make_opinfo(kd_op *op) {
  OpInfo oi;
  oi.op = op;
  const kd_schema *s = kd_op_schema(op);
  oi.full = kd_op_name(op) + 6;  // after "aten::"
  size_t dot = oi.full.find('.');
  oi.name = oi.full.substr(0, dot);
  oi.overload = dot == std::string::npos ? "" : oi.full.substr(dot + 1);
  oi.nondet = oi.name == "empty" || oi.name == "empty_like" || oi.name == "rand" ||
              oi.name == "randn" || oi.name == "empty_strided" || oi.name == "new_empty" ||
              oi.name == "new_empty_strided" || oi.name == "resize_";
  size_t n = kd_schema_num_arguments(s);
  for (size_t i = 0; i < n; i++) {
    const kd_argument *arg = kd_schema_argument(s, i);
    ArgInfo a;
    a.name = kd_argument_name(arg);
    char buf[256];
    kd_type_format(kd_argument_type(arg), buf, sizeof buf);
    a.type = buf;
    a.ktype = kd_argument_type(arg);
    const kd_type *t = a.ktype;
    if (kd_type_kind_of(t) == KD_TYPE_OPTIONAL) {
      a.optional = true;
      t = kd_type_element(t);
    }
    if (kd_type_kind_of(t) == KD_TYPE_LIST) {
      a.is_list = true;
      t = kd_type_element(t);
    }
    a.base = kd_type_kind_of(t);
    a.write = kd_argument_is_write(arg);
    a.kwarg = kd_argument_kwarg_only(arg);
    if (kd_argument_default(arg)) {
      kd_value dv = kd_value_none();
      if (kd_argument_default_value(arg, &dv) == KD_OK) {
        a.has_default = true;
        a.def = from_kd_value(dv);
      }
      kd_value_destroy(&dv);
    }
    if (a.base == KD_TYPE_TENSOR) {
      if (is_out_arg(a, i)) a.role = Role::Out;
      else if (a.name == "index") a.role = Role::Index;
      else if (a.name == "mask" || a.name == "condition") a.role = Role::Mask;
      else if (oi.name == "narrow" && a.name == "start") a.role = Role::Other;
      else a.role = Role::Data;
      if (i == 0 && a.write) oi.inplace = true;
    }
    oi.args.push_back(a);
  }
  for (ArgInfo &a : oi.args) {
    if (a.base == KD_TYPE_TENSOR) tensor_candidates(oi, a);
    else plain_candidates(oi, a);
  }
  return oi;
}

// ---- Case generation ---------------------------------------------------------

using Spec = std::vector<ASpec>;

std::string spec_desc(const OpInfo &oi, const Spec &sp) {
  std::vector<std::string> names;
  for (const ArgInfo &a : oi.args) names.push_back(a.name);
  std::string r;
  for (size_t i = 0; i < sp.size(); i++) {
    const ASpec &a = sp[i];
    std::string v;
    if (a.what == ASpec::Plain) {
      if (a.v.kind == VK::None) continue;
      v = val_desc(a.v);
    } else if (a.what == ASpec::Tens) {
      if (a.t.none) continue;
      v = tspec_desc(a.t, names);
    } else {
      v = "(";
      for (size_t k = 0; k < a.list.size(); k++) v += (k ? "," : "") + tspec_desc(a.list[k], names);
      v += ")";
    }
    if (!r.empty()) r += " ";
    r += names[i] + "=" + v;
  }
  return r;
}

// Applies f to every tensor spec of the given roles in the case.
template <class F>
void each_tensor(const OpInfo &oi, Spec &sp, std::initializer_list<Role> roles, F f) {
  for (size_t i = 0; i < sp.size(); i++) {
    if (oi.args[i].base != KD_TYPE_TENSOR) continue;
    if (std::find(roles.begin(), roles.end(), oi.args[i].role) == roles.end()) continue;
    if (sp[i].what == ASpec::Tens && !sp[i].t.none) f(sp[i].t);
    if (sp[i].what == ASpec::List)
      for (TSpec &t : sp[i].list) f(t);
  }
}

std::vector<Spec> generate(const OpInfo &oi) {
  std::vector<Spec> out;
  std::set<std::string> seen;
  auto add = [&](const Spec &s) {
    std::string d = spec_desc(oi, s);
    if (seen.insert(d).second) out.push_back(s);
  };
  Spec base;
  for (const ArgInfo &a : oi.args) base.push_back(a.cands[0]);
  auto with_dtype = [&](Spec s, int d) {
    each_tensor(oi, s, {Role::Data, Role::Out}, [&](TSpec &t) { t.dtype = d; });
    return s;
  };
  // 1. every dtype, all data tensors (and out=) alike
  for (int d : kAllDtypes) add(with_dtype(base, d));
  // 2. dtype pairs for the first two data tensors
  std::vector<size_t> data;
  for (size_t i = 0; i < oi.args.size(); i++)
    if (oi.args[i].base == KD_TYPE_TENSOR && oi.args[i].role == Role::Data && !oi.args[i].is_list)
      data.push_back(i);
  if (data.size() >= 2) {
    Spec s2 = base;
    // an optional second tensor (clamp.Tensor max) takes a value here
    for (size_t k = 0; k < 2; k++)
      if (s2[data[k]].t.none) s2[data[k]] = oi.args[data[k]].cands[1];
    static const int pair_types[] = {B, U8, I8, I32, I64, F16, BF16, F32, F64, C64, C128};
    for (int d1 : pair_types)
      for (int d2 : pair_types) {
        Spec s = s2;
        s[data[0]].t.dtype = d1;
        s[data[1]].t.dtype = d2;
        each_tensor(oi, s, {Role::Out}, [&](TSpec &t) { t.dtype = kd_promote_types((kd_dtype)d1, (kd_dtype)d2); });
        add(s);
      }
  }
  // 3. every candidate of every argument, over a few dtypes
  for (size_t i = 0; i < oi.args.size(); i++) {
    const ArgInfo &a = oi.args[i];
    std::vector<int> dts = {F32, I64};
    if (a.base == KD_TYPE_SCALAR || a.base == KD_TYPE_SCALAR_TYPE) dts = {F32, I64, U8, B, C64, F16};
    for (size_t k = 1; k < a.cands.size(); k++)
      for (int d : dts) {
        Spec s = with_dtype(base, d);
        s[i] = a.cands[k];
        if (a.base == KD_TYPE_TENSOR)
          each_tensor(oi, s, {Role::Data, Role::Out}, [&](TSpec &t) { t.dtype = d; });
        add(s);
      }
  }
  // 4. shapes and layouts of each tensor argument
  for (size_t i = 0; i < oi.args.size(); i++) {
    const ArgInfo &a = oi.args[i];
    if (a.base != KD_TYPE_TENSOR || a.is_list) continue;
    const TSpec &bt = oi.args[i].cands[0].t.none && a.cands.size() > 1 ? a.cands[1].t : a.cands[0].t;
    std::vector<TSpec> vs;
    if (a.role == Role::Data || a.role == Role::Other) {
      for (auto sz : std::vector<std::vector<int64_t>>{{}, {0, 3}, {3}, {2, 1}, {1, 3}, {1}, {4}, {3, 2, 3}, {0}}) {
        TSpec t = bt;
        t.sizes = sz;
        vs.push_back(t);
      }
      for (char l : {'T', 's', 'x', 'o'}) {
        TSpec t = bt;
        t.layout = l;
        vs.push_back(t);
      }
      // large enough for the vectorised loops, with odd tails
      if (bt.sizes.size() == 2 && a.role == Role::Data) {
        for (char l : {'c', 'T'}) {
          TSpec t = bt;
          t.sizes = {17, 33};
          t.layout = l;
          vs.push_back(t);
          t.sizes = {1, 33};
          vs.push_back(t);
        }
      }
      TSpec sp = bt;
      if (sp.fill == Fill::Normal) {
        sp.fill = Fill::Special;
        vs.push_back(sp);
      }
    } else if (a.role == Role::Out) {
      std::vector<int64_t> self_shape = base_shape(oi.name, "self");
      for (auto sz : std::vector<std::vector<int64_t>>{self_shape, {}, {5}, {2, 3, 1}}) {
        TSpec t = bt;
        t.sizes = sz;
        vs.push_back(t);
      }
      for (char l : {'T', 's', 'x', 'o'}) {
        TSpec t = bt;
        t.sizes = self_shape;
        t.layout = l;
        vs.push_back(t);
      }
      for (int d : kAllDtypes) {
        TSpec t = bt;
        t.dtype = d;
        t.sizes = self_shape;
        vs.push_back(t);
      }
      for (size_t j = 0; j < oi.args.size(); j++)
        if (oi.args[j].role == Role::Data && !oi.args[j].is_list) {
          TSpec t = bt;
          t.alias = (int)j;
          vs.push_back(t);
        }
    } else if (a.role == Role::Index) {
      TSpec t = bt;
      t.oob = true;
      vs.push_back(t);
      t = bt;
      t.dtype = I32;
      vs.push_back(t);
      t.dtype = F32;
      vs.push_back(t);
      t = bt;
      t.sizes = {};
      vs.push_back(t);
      t.sizes = {0};
      vs.push_back(t);
      t = bt;
      t.layout = 'T';
      vs.push_back(t);
    } else if (a.role == Role::Mask) {
      TSpec t = bt;
      t.dtype = U8;
      vs.push_back(t);
      t.dtype = F32;
      vs.push_back(t);
      t = bt;
      t.sizes = {3};
      vs.push_back(t);
      t.sizes = {};
      vs.push_back(t);
      t.sizes = {2, 3, 1};
      vs.push_back(t);
      t = bt;
      t.layout = 'x';
      vs.push_back(t);
    }
    for (const TSpec &t : vs)
      for (int d : {F32, I64}) {
        Spec s = with_dtype(base, d);
        TSpec tt = t;
        if (a.role == Role::Data || (a.role == Role::Out && t.dtype == bt.dtype)) tt.dtype = d;
        s[i] = tens(tt);
        add(s);
      }
  }
  // 5. all data tensors large enough for the vectorised loops (odd tails),
  // also transposed and broadcast, in a few dtypes
  for (int d : {F32, I64, F16, C64, B, U8, F64, BF16}) {
    for (int variant = 0; variant < 3; variant++) {
      Spec s = with_dtype(base, d);
      bool all2d = true;
      int k = 0;
      each_tensor(oi, s, {Role::Data}, [&](TSpec &t) {
        if (t.sizes.size() != 2) all2d = false;
        t.sizes = {17, 33};
        if (variant == 1 && k == 0) t.layout = 'T';
        if (variant == 2 && k == 1) t.sizes = {1, 33};
        k++;
      });
      if (all2d && k > 0) add(s);
    }
  }
  // 6. special values in every dtype
  for (int d : kAllDtypes) {
    Spec s = with_dtype(base, d);
    each_tensor(oi, s, {Role::Data}, [&](TSpec &t) { t.fill = Fill::Special; });
    add(s);
  }
  return out;
}

// ---- Building the neutral case ---------------------------------------------------

void put_elem(uint8_t *p, int dtype, double re, double im) {
  switch (dtype) {
    case B: { bool v = re != 0; std::memcpy(p, &v, 1); break; }
    case U8: { uint8_t v = (uint8_t)(int64_t)re; *p = v; break; }
    case I8: { int8_t v = (int8_t)(int64_t)re; std::memcpy(p, &v, 1); break; }
    case I16: { int16_t v = (int16_t)(int64_t)re; std::memcpy(p, &v, 2); break; }
    case I32: { int32_t v = (int32_t)(int64_t)re; std::memcpy(p, &v, 4); break; }
    case I64: { int64_t v = (int64_t)re; std::memcpy(p, &v, 8); break; }
    case F16: { uint16_t v = kd_float_to_half((float)re); std::memcpy(p, &v, 2); break; }
    case BF16: { uint16_t v = kd_float_to_bfloat16((float)re); std::memcpy(p, &v, 2); break; }
    case F32: { float v = (float)re; std::memcpy(p, &v, 4); break; }
    case F64: std::memcpy(p, &re, 8); break;
    case C64: { float v[2] = {(float)re, (float)im}; std::memcpy(p, v, 8); break; }
    case C128: { double v[2] = {re, im}; std::memcpy(p, v, 16); break; }
  }
}

void put_int_exact(uint8_t *p, int dtype, int64_t v) {
  size_t n = dtype_size(dtype);
  std::memcpy(p, &v, n);  // little-endian truncation: the low bytes
}

double normal_value(Rng &r, int dtype) {
  if (dtype == B) return (double)(r.next() & 1);
  if (dtype == U8) return (double)r.range(1, 9);
  if (is_int(dtype)) {
    int64_t v = r.range(1, 5);
    return (r.next() & 1) ? (double)v : -(double)v;
  }
  int64_t k = r.range(1, 24);
  return ((r.next() & 1) ? 1.0 : -1.0) * (double)k / 8.0;
}

void fill_buffer(Buffer &b, const TSpec &t, int64_t nelem, Rng &r) {
  size_t isz = dtype_size(t.dtype);
  b.bytes.assign((size_t)nelem * isz, 0);
  static const double fspecial[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e30, -1e-30, 65504.0,
                                    3.5, -2.5, 1.0, -1.0, 0.5, 1e-45, -7.0};
  static const int64_t ispecial[] = {0, -1, 1, INT64_MIN, INT64_MAX, 2, 100, -100, 127, -128,
                                     255, 32767, INT32_MIN, 64};
  for (int64_t k = 0; k < nelem; k++) {
    uint8_t *p = &b.bytes[(size_t)k * isz];
    switch (t.fill) {
      case Fill::Normal: put_elem(p, t.dtype, normal_value(r, t.dtype), normal_value(r, t.dtype)); break;
      case Fill::Special:
        if (t.dtype == B) {
          put_elem(p, t.dtype, (double)(k & 1), 0);
        } else if (is_int(t.dtype)) {
          put_int_exact(p, t.dtype, ispecial[(size_t)k % (sizeof ispecial / sizeof *ispecial)]);
        } else {
          size_t nf = sizeof fspecial / sizeof *fspecial;
          put_elem(p, t.dtype, fspecial[(size_t)k % nf], fspecial[(size_t)(k + 3) % nf]);
        }
        break;
      case Fill::Index: {
        int64_t v = t.oob ? ((k & 1) ? t.hi : -1) : r.range(0, t.hi - 1);
        if (t.oob && k == 0) v = 0;
        put_elem(p, t.dtype, (double)v, 0);
        break;
      }
      case Fill::Mask: put_elem(p, t.dtype, (double)(r.next() & 1), 0); break;
    }
  }
}

// Makes the tensor of spec t as buffer + view.
Val build_tensor(const TSpec &t, Case &c, Rng &r) {
  Val v;
  v.kind = VK::Tensor;
  v.dtype = t.dtype;
  v.sizes = t.sizes;
  size_t nd = t.sizes.size();
  std::vector<int64_t> phys = t.sizes;  // the sizes as laid out in memory
  std::vector<size_t> perm(nd);
  for (size_t i = 0; i < nd; i++) perm[i] = i;
  if (t.layout == 'T' && nd >= 2) std::swap(perm[nd - 1], perm[nd - 2]);
  // row-major strides over the permuted order
  std::vector<int64_t> st(nd, 0);
  int64_t acc = 1;
  for (size_t k = nd; k-- > 0;) {
    size_t d = perm[k];
    st[d] = acc;
    acc *= std::max<int64_t>(t.sizes[d], 1);
  }
  v.offset = 0;
  if (t.layout == 's') {
    for (auto &x : st) x *= 2;
    v.offset = 1;
  } else if (t.layout == 'x') {
    for (size_t d = 0; d < nd; d++)
      if (t.sizes[d] > 1) {
        st[d] = 0;
        break;
      }
  } else if (t.layout == 'o') {
    v.offset = 3;
  }
  v.strides = st;
  int64_t numel = 1, maxoff = 0;
  for (size_t d = 0; d < nd; d++) {
    numel *= t.sizes[d];
    if (t.sizes[d] > 0) maxoff += (t.sizes[d] - 1) * st[d];
  }
  int64_t nelem = numel > 0 ? v.offset + maxoff + 1 : v.offset;
  if (t.layout == 's') nelem += 1;  // a tail element beyond the view
  Buffer b;
  fill_buffer(b, t, nelem, r);
  v.buf = (int)c.bufs.size();
  c.bufs.push_back(std::move(b));
  return v;
}

Case materialize(const OpInfo &oi, const Spec &sp, uint64_t seed) {
  Case c;
  c.desc = spec_desc(oi, sp);
  Rng r(seed);
  std::vector<Val> made(sp.size());
  for (size_t i = 0; i < sp.size(); i++) {
    const ASpec &a = sp[i];
    Val v;
    if (a.what == ASpec::Plain) {
      v = a.v;
    } else if (a.what == ASpec::Tens) {
      if (a.t.none) v = vnone();
      else if (a.t.alias >= 0 && made[(size_t)a.t.alias].kind == VK::Tensor) v = made[(size_t)a.t.alias];
      else v = build_tensor(a.t, c, r);
    } else {
      v.kind = VK::TensorList;
      for (const TSpec &t : a.list) v.elems.push_back(build_tensor(t, c, r));
    }
    made[i] = v;
    c.args.push_back(v);
  }
  // out= aliasing an argument that comes later (none in aten's schemas, but be safe)
  return c;
}

// ---- The kd side -------------------------------------------------------------------

struct KdBuilt {
  std::vector<kd_storage *> storages;
  std::vector<kd_tensor *> flat;
  ~KdBuilt() {
    for (kd_tensor *t : flat) kd_tensor_release(t);
    for (kd_storage *s : storages) kd_storage_release(s);
  }
};

kd_tensor *kd_make_tensor(const Val &v, KdBuilt &b) {
  kd_tensor *t = nullptr;
  kd_status st = kd_tensor_from_storage(b.storages[(size_t)v.buf], v.offset, (int)v.sizes.size(),
                                        v.sizes.data(), v.strides.data(), (kd_dtype)v.dtype, &t);
  if (st != KD_OK) {
    std::fprintf(stderr, "kd-difftest: cannot build a tensor: %s\n", kd_last_error());
    std::exit(2);
  }
  b.flat.push_back(t);
  return t;
}

TSnap kd_snap(const kd_tensor *t, const KdBuilt &b) {
  TSnap s;
  s.dtype = (int)kd_tensor_dtype(t);
  int nd = kd_tensor_ndim(t);
  s.sizes.assign(kd_tensor_sizes(t), kd_tensor_sizes(t) + nd);
  s.strides.assign(kd_tensor_strides(t), kd_tensor_strides(t) + nd);
  s.offset = kd_tensor_storage_offset(t);
  for (size_t i = 0; i < b.storages.size(); i++)
    if (kd_tensor_storage(t) == b.storages[i]) s.alias_buf = (int)i;
  for (size_t i = 0; i < b.flat.size(); i++)
    if (t == b.flat[i]) s.same_arg = (int)i;
  gather_elems(static_cast<const uint8_t *>(kd_tensor_data(t)), kd_tensor_itemsize(t), s.sizes,
               s.strides, s.data);
  return s;
}

Outcome kd_run(const OpInfo &oi, const Case &c) {
  Outcome o;
  KdBuilt b;
  for (const Buffer &buf : c.bufs) {
    kd_storage *s = nullptr;
    if (kd_storage_new(kd_device_cpu(), buf.bytes.size(), &s) != KD_OK) {
      std::fprintf(stderr, "kd-difftest: kd_storage_new: %s\n", kd_last_error());
      std::exit(2);
    }
    if (!buf.bytes.empty()) std::memcpy(kd_storage_data(s), buf.bytes.data(), buf.bytes.size());
    b.storages.push_back(s);
  }
  kd_stack st;
  kd_stack_init(&st);
  for (size_t i = 0; i < c.args.size(); i++) {
    const Val &v = c.args[i];
    const ArgInfo &a = oi.args[i];
    kd_value kv = kd_value_none();
    bool scalar = a.base == KD_TYPE_SCALAR;
    switch (v.kind) {
      case VK::None: break;
      case VK::Bool: kv = scalar ? kd_value_scalar(kd_scalar_bool(v.b)) : kd_value_bool(v.b); break;
      case VK::Int: kv = scalar ? kd_value_scalar(kd_scalar_int(v.i)) : kd_value_int(v.i); break;
      case VK::Double: kv = scalar ? kd_value_scalar(kd_scalar_double(v.d)) : kd_value_double(v.d); break;
      case VK::Complex:
        kv = scalar ? kd_value_scalar(kd_scalar_complex(v.d, v.im)) : kd_value_complex(v.d, v.im);
        break;
      case VK::Str: kd_value_string(v.s.data(), v.s.size(), &kv); break;
      case VK::Dtype: kv = kd_value_dtype((kd_dtype)v.i); break;
      case VK::Layout: kv = kd_value_layout((kd_layout)v.i); break;
      case VK::Device: kv = kd_value_device(kd_device_cpu()); break;
      case VK::MemFmt: kv = kd_value_memory_format((kd_memory_format)v.i); break;
      case VK::Tensor: kv = kd_value_tensor(kd_make_tensor(v, b)); break;
      case VK::IntList: kd_value_int_list(v.ints.data(), v.ints.size(), &kv); break;
      case VK::TensorList: {
        std::vector<kd_tensor *> ts;
        for (const Val &e : v.elems) ts.push_back(kd_make_tensor(e, b));
        kd_value_tensor_list(ts.data(), ts.size(), &kv);
        break;
      }
    }
    kd_stack_push(&st, &kv);
    kd_value_destroy(&kv);
  }
  kd_status status = kd_call_boxed(oi.op, &st);
  if (status != KD_OK) {
    o.ok = false;
    o.err = std::string(kd_status_name(status)) + ": " + kd_last_error();
  } else {
    o.ok = true;
    for (size_t i = 0; i < st.size; i++) {
      const kd_value &r = st.items[i];
      RSnap rs;
      switch (r.tag) {
        case KD_VALUE_TENSOR: rs.kind = VK::Tensor; rs.t = kd_snap(r.u.t, b); break;
        case KD_VALUE_TENSOR_LIST: {
          rs.kind = VK::TensorList;
          kd_tensor *const *items = kd_value_tensor_list_data(&r);
          for (size_t j = 0; j < kd_value_list_size(&r); j++) rs.list.push_back(kd_snap(items[j], b));
          break;
        }
        case KD_VALUE_INT: rs.kind = VK::Int; rs.i = r.u.i; break;
        case KD_VALUE_DOUBLE: rs.kind = VK::Double; rs.d = r.u.d; break;
        case KD_VALUE_BOOL: rs.kind = VK::Bool; rs.b = r.u.b; break;
        default: break;
      }
      o.rets.push_back(rs);
    }
  }
  kd_stack_free(&st);
  for (kd_tensor *t : b.flat) o.after.push_back(kd_snap(t, b));
  return o;
}

// ---- Comparison ---------------------------------------------------------------------

struct Elem {
  double re = 0, im = 0;
  int64_t i = 0;
};

Elem get_elem(const uint8_t *p, int dtype) {
  Elem e;
  switch (dtype) {
    case B: e.i = *p != 0; break;
    case U8: e.i = *p; break;
    case I8: { int8_t v; std::memcpy(&v, p, 1); e.i = v; break; }
    case I16: { int16_t v; std::memcpy(&v, p, 2); e.i = v; break; }
    case I32: { int32_t v; std::memcpy(&v, p, 4); e.i = v; break; }
    case I64: std::memcpy(&e.i, p, 8); break;
    case F16: { uint16_t v; std::memcpy(&v, p, 2); e.re = kd_half_to_float(v); break; }
    case BF16: { uint16_t v; std::memcpy(&v, p, 2); e.re = kd_bfloat16_to_float(v); break; }
    case F32: { float v; std::memcpy(&v, p, 4); e.re = v; break; }
    case F64: std::memcpy(&e.re, p, 8); break;
    case C64: { float v[2]; std::memcpy(v, p, 8); e.re = v[0]; e.im = v[1]; break; }
    case C128: { double v[2]; std::memcpy(v, p, 16); e.re = v[0]; e.im = v[1]; break; }
  }
  return e;
}

bool close(double a, double b, int dtype) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  double rtol = 1.3e-6, atol = 1e-5;
  if (dtype == F16) rtol = 1e-3, atol = 1e-3;
  if (dtype == BF16) rtol = 1.6e-2, atol = 1e-3;
  if (dtype == F64 || dtype == C128) rtol = 1e-7, atol = 1e-7;
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

// Complex numbers: finite ones within the tolerance of the modulus (a
// component much smaller than the other carries no relative precision of
// its own); infinities and NaN part by part.
bool close_complex(const Elem &a, const Elem &b, int dtype) {
  bool fin = std::isfinite(a.re) && std::isfinite(a.im) && std::isfinite(b.re) && std::isfinite(b.im);
  if (!fin) return close(a.re, b.re, dtype) && close(a.im, b.im, dtype);
  double d = std::hypot(a.re - b.re, a.im - b.im), m = std::hypot(b.re, b.im);
  double rtol = dtype == C128 ? 1e-7 : 1.3e-6, atol = dtype == C128 ? 1e-7 : 1e-5;
  return d <= atol + rtol * m;
}

std::string elem_str(const Elem &e, int dtype) {
  char buf[80];
  if (is_float(dtype)) std::snprintf(buf, sizeof buf, "%.9g", e.re);
  else if (is_complex(dtype)) std::snprintf(buf, sizeof buf, "(%.9g%+.9gj)", e.re, e.im);
  else std::snprintf(buf, sizeof buf, "%lld", (long long)e.i);
  return buf;
}

// Strides only where they decide where elements are: dimensions of size > 1
// of a non-empty tensor.
bool strides_equal(const TSnap &a, const TSnap &b) {
  int64_t n = 1;
  for (int64_t s : a.sizes) n *= s;
  if (n == 0) return true;
  for (size_t d = 0; d < a.sizes.size(); d++)
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

void compare_tensor(const std::string &what, const TSnap &k, const TSnap &t, bool values,
                    bool view_info, std::vector<std::string> &diffs,
                    const std::vector<int64_t> *pre = nullptr) {
  if (k.dtype != t.dtype) {
    diffs.push_back(what + " dtype: kd " + dtype_short(k.dtype) + ", torch " +
                    (t.dtype >= 0 ? dtype_short(t.dtype) : "?"));
    return;
  }
  if (k.sizes != t.sizes) {
    diffs.push_back(what + " shape: kd " + shape_str(k.sizes) +
                    (pre && *pre == k.sizes ? " (unchanged)" : "") + ", torch " + shape_str(t.sizes));
    return;
  }
  if (!strides_equal(k, t))
    diffs.push_back(what + " strides: kd " + shape_str(k.strides) + ", torch " + shape_str(t.strides));
  if (view_info) {
    if (k.alias_buf != t.alias_buf)
      diffs.push_back(what + " aliasing: kd " + (k.alias_buf >= 0 ? "shares input storage" : "fresh storage") +
                      ", torch " + (t.alias_buf >= 0 ? "shares input storage" : "fresh storage"));
    else if (k.alias_buf >= 0 && k.offset != t.offset)
      diffs.push_back(what + " storage offset: kd " + std::to_string(k.offset) + ", torch " +
                      std::to_string(t.offset));
    if (k.same_arg != t.same_arg)
      diffs.push_back(what + " identity: kd " + (k.same_arg >= 0 ? "is argument tensor #" + std::to_string(k.same_arg) : "new tensor") +
                      ", torch " + (t.same_arg >= 0 ? "is argument tensor #" + std::to_string(t.same_arg) : "new tensor"));
  }
  if (!values || k.data.size() != t.data.size()) return;
  size_t isz = dtype_size(k.dtype);
  size_t n = k.data.size() / isz, bad = 0, first = 0;
  Elem fk, ft;
  for (size_t j = 0; j < n; j++) {
    Elem a = get_elem(&k.data[j * isz], k.dtype), b = get_elem(&t.data[j * isz], t.dtype);
    bool ok = is_float(k.dtype) ? close(a.re, b.re, k.dtype)
              : is_complex(k.dtype) ? close_complex(a, b, k.dtype)
                                    : a.i == b.i;
    if (!ok && bad++ == 0) first = j, fk = a, ft = b;
  }
  if (bad)
    diffs.push_back(what + " values: " + std::to_string(bad) + " of " + std::to_string(n) +
                    " differ, first [" + std::to_string(first) + "] kd " + elem_str(fk, k.dtype) +
                    ", torch " + elem_str(ft, t.dtype));
}

std::string first_line(const std::string &s) {
  std::string r = s.substr(0, s.find('\n'));
  if (r.size() > 160) r = r.substr(0, 157) + "...";
  return r;
}

// `pre` holds the sizes of the case's tensor arguments (lists flattened).
std::vector<std::string> compare(const OpInfo &oi, const Outcome &k, const Outcome &t,
                                 const std::vector<std::vector<int64_t>> &pre) {
  std::vector<std::string> diffs;
  if (k.ok != t.ok) {
    if (k.ok) diffs.push_back("status: kd succeeded, torch failed: " + first_line(t.err));
    else diffs.push_back("status: kd failed (" + first_line(k.err) + "), torch succeeded");
  }
  bool values = !oi.nondet;
  if (k.ok && t.ok) {
    if (k.rets.size() != t.rets.size()) {
      diffs.push_back("returns: kd " + std::to_string(k.rets.size()) + ", torch " +
                      std::to_string(t.rets.size()));
    } else {
      for (size_t i = 0; i < k.rets.size(); i++) {
        const RSnap &a = k.rets[i], &b = t.rets[i];
        std::string what = "result " + std::to_string(i);
        if (a.kind != b.kind) diffs.push_back(what + " kind differs");
        else if (a.kind == VK::Tensor) compare_tensor(what, a.t, b.t, values, true, diffs);
        else if (a.kind == VK::TensorList && a.list.size() != b.list.size())
          diffs.push_back(what + " list length: kd " + std::to_string(a.list.size()) + ", torch " +
                          std::to_string(b.list.size()));
        else if (a.kind == VK::TensorList)
          for (size_t j = 0; j < a.list.size(); j++)
            compare_tensor(what + "[" + std::to_string(j) + "]", a.list[j], b.list[j], values, true, diffs);
        else if (a.kind == VK::Int && a.i != b.i) diffs.push_back(what + " value differs");
      }
    }
  }
  // The arguments after the call: mutated in place or resized. After a
  // call that failed on both sides, the text says so (libtorch resizes some
  // out= tensors before its checks fail), and values are compared only for
  // tensors that kept their shape (a grown out= holds uninitialised bytes).
  // After a call that failed on one side only, the status says it all.
  if (k.ok == t.ok && k.after.size() == t.after.size() && k.after.size() == pre.size()) {
    for (size_t i = 0; i < k.after.size(); i++) {
      std::string what = (k.ok ? "" : "after a failed call: ") + std::string("argument tensor #") +
                         std::to_string(i) + (k.ok ? " after the call" : "");
      bool kept = k.after[i].sizes == pre[i] && t.after[i].sizes == pre[i];
      compare_tensor(what, k.after[i], t.after[i], values && (k.ok || kept), false, diffs, &pre[i]);
    }
  }
  return diffs;
}

std::string values_str(const std::vector<uint8_t> &data, int dtype) {
  std::string r = "[";
  size_t isz = dtype_size(dtype);
  for (size_t j = 0; j * isz < data.size(); j++)
    r += (j ? ", " : "") + elem_str(get_elem(&data[j * isz], dtype), dtype);
  return r + "]";
}

void dump_tensor(const char *label, const TSnap &t) {
  std::printf("       %s %s%s strides %s offset %lld: %s\n", label, t.dtype >= 0 ? dtype_short(t.dtype) : "?",
              shape_str(t.sizes).c_str(), shape_str(t.strides).c_str(), (long long)t.offset,
              t.dtype >= 0 ? values_str(t.data, t.dtype).c_str() : "");
}

void dump_case(const Case &c, const Outcome &k, const Outcome &t) {
  int n = 0;
  auto in = [&](const Val &v) {
    TSnap s;
    s.dtype = v.dtype;
    s.sizes = v.sizes;
    s.strides = v.strides;
    s.offset = v.offset;
    const Buffer &b = c.bufs[(size_t)v.buf];
    gather_elems(b.bytes.empty() ? nullptr : b.bytes.data() + v.offset * (int64_t)dtype_size(v.dtype),
                 dtype_size(v.dtype), v.sizes, v.strides, s.data);
    std::string l = "input #" + std::to_string(n++);
    dump_tensor(l.c_str(), s);
  };
  for (const Val &v : c.args) {
    if (v.kind == VK::Tensor) in(v);
    for (const Val &e : v.elems) in(e);
  }
  for (size_t i = 0; i < k.rets.size(); i++)
    if (k.rets[i].kind == VK::Tensor) dump_tensor(("kd result " + std::to_string(i)).c_str(), k.rets[i].t);
  for (size_t i = 0; i < t.rets.size(); i++)
    if (t.rets[i].kind == VK::Tensor) dump_tensor(("torch result " + std::to_string(i)).c_str(), t.rets[i].t);
  if (!k.ok) std::printf("       kd error: %s\n", k.err.c_str());
  if (!t.ok) std::printf("       torch error: %s\n", first_line(t.err).c_str());
}

// The self-check: copies of kd's outcome, each changed in one respect the
// comparison must notice (a value, the shape, the dtype, the status, the
// aliasing of a view). Returns how many of them compare equal (misses).
int self_check_case(const OpInfo &oi, const Outcome &k, const Outcome &t,
                    const std::vector<std::vector<int64_t>> &pre, int *tried) {
  if (!k.ok || !t.ok || k.rets.empty() || k.rets[0].kind != VK::Tensor || oi.nondet) return 0;
  const TSnap &r = k.rets[0].t;
  std::vector<Outcome> muts;
  if (!r.data.empty()) {
    Outcome m = k;
    size_t isz = dtype_size(r.dtype);
    uint8_t &byte = m.rets[0].t.data[r.dtype == B ? 0 : isz - 1 - (is_complex(r.dtype) ? isz / 2 : 0)];
    byte ^= r.dtype == B ? 0x01 : 0x40;
    muts.push_back(m);
  }
  Outcome shape = k;
  shape.rets[0].t.sizes.push_back(1);
  shape.rets[0].t.strides.push_back(1);
  muts.push_back(shape);
  Outcome dt = k;
  dt.rets[0].t.dtype = r.dtype == F32 ? F64 : F32;
  muts.push_back(dt);
  Outcome st = k;
  st.ok = false;
  st.err = "perturbed";
  muts.push_back(st);
  if (r.alias_buf >= 0) {
    Outcome al = k;
    al.rets[0].t.alias_buf = -1;
    muts.push_back(al);
  }
  int misses = 0;
  for (const Outcome &m : muts) {
    (*tried)++;
    if (compare(oi, m, t, pre).empty()) misses++;
  }
  return misses;
}

// ---- Known differences ---------------------------------------------------------------

struct Known {
  std::string op, pattern, reason;
  int line = 0;
  int hits = 0;
};

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool load_known(const std::string &path, std::vector<Known> &out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "kd-difftest: cannot read %s\n", path.c_str());
    return false;
  }
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    no++;
    std::string s = trim(line);
    if (s.empty() || s[0] == '#') continue;
    size_t p1 = s.find(" | "), p2 = p1 == std::string::npos ? p1 : s.find(" | ", p1 + 3);
    if (p2 == std::string::npos) {
      std::fprintf(stderr, "%s:%d: expected 'op | case pattern | reason'\n", path.c_str(), no);
      return false;
    }
    Known k;
    k.op = trim(s.substr(0, p1));
    k.pattern = trim(s.substr(p1 + 3, p2 - p1 - 3));
    k.reason = trim(s.substr(p2 + 3));
    k.line = no;
    out.push_back(k);
  }
  return true;
}

// A difference line is "case: what"; an entry's pattern matches the case
// description and the difference text together ("<case> :: <what>").
Known *find_known(std::vector<Known> &known, const std::string &op, const std::string &text) {
  for (Known &k : known)
    if (fnmatch(k.op.c_str(), op.c_str(), 0) == 0 && fnmatch(k.pattern.c_str(), text.c_str(), 0) == 0)
      return &k;
  return nullptr;
}

// Cases not given to libtorch because 1.13 corrupts memory on them (found
// under AddressSanitizer): they count as skipped, with the reason printed.
struct Unsafe {
  const char *op, *pattern, *reason;
};
const Unsafe kTorchUnsafe[] = {
    {"_*softmax.out", "*out=*:x*",
     "libtorch bug: 1.13's _softmax.out/_log_softmax.out write row-major into an expanded out= "
     "(zero stride), past the end of its storage (heap-buffer-overflow under ASan)"},
};

const char *torch_unsafe(const std::string &op, const std::string &desc) {
  for (const Unsafe &u : kTorchUnsafe)
    if (fnmatch(u.op, op.c_str(), 0) == 0 && fnmatch(u.pattern, desc.c_str(), 0) == 0) return u.reason;
  return nullptr;
}

int collect(kd_op *op, void *user) {
  auto *ops = static_cast<std::vector<kd_op *> *>(user);
  if (kd_op_schema(op) && std::strncmp(kd_op_name(op), "aten::", 6) == 0) ops->push_back(op);
  return 0;
}

void quiet_kd(const char *, void *) {}

int usage() {
  std::fprintf(stderr,
               "usage: kd-difftest [--known FILE] [--op GLOB]... [--verbose] [--list] [--max-print N]\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  Options opt;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--known" && i + 1 < argc) opt.known_path = argv[++i];
    else if (a == "--op" && i + 1 < argc) opt.op_globs.push_back(argv[++i]);
    else if (a == "--verbose") opt.verbose = true;
    else if (a == "--list") opt.list = true;
    else if (a == "--dump") opt.dump = true;
    else if (a == "--self-check") opt.self_check = true;
    else if (a == "--max-print" && i + 1 < argc) opt.max_print = std::atoi(argv[++i]);
    else return usage();
  }
  std::vector<Known> known;
  if (!opt.known_path.empty() && !load_known(opt.known_path, known)) return 2;
  if (kd_ops_open() != KD_OK) {
    std::fprintf(stderr, "kd-difftest: kd_ops_open: %s\n", kd_last_error());
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // whole lines, also when a crash follows
  kd_set_num_threads(1);
  kd_set_warning_handler(quiet_kd, nullptr);
  torch_init();

  std::vector<kd_op *> ops;
  kd_ops_foreach(collect, &ops);
  long total_cases = 0, total_agree = 0, total_known = 0, total_unexpl = 0, total_skipped = 0;
  int ops_run = 0, ops_failed = 0, sc_tried = 0, sc_missed = 0;
  for (kd_op *op : ops) {
    OpInfo oi = make_opinfo(op);
    if (!opt.op_globs.empty()) {
      bool m = false;
      for (const std::string &g : opt.op_globs) m |= fnmatch(g.c_str(), oi.full.c_str(), 0) == 0;
      if (!m) continue;
    }
    ops_run++;
    long cases = 0, agree = 0, nknown = 0, unexpl = 0, skipped = 0;
    int printed = 0;
    auto report = [&](const std::string &cdesc, const std::vector<std::string> &diffs) {
      bool all_known = true;
      for (const std::string &d : diffs) {
        std::string text = cdesc + " :: " + d;
        Known *k = find_known(known, oi.full, text);
        if (k) {
          k->hits++;
          if (opt.verbose) std::printf("KNOWN  %s: %s (%s)\n", oi.full.c_str(), text.c_str(), k->reason.c_str());
        } else {
          all_known = false;
          if (printed++ < opt.max_print || opt.verbose)
            std::printf("DIFF   %s: %s\n", oi.full.c_str(), text.c_str());
        }
      }
      if (diffs.empty()) agree++;
      else if (all_known) nknown++;
      else unexpl++;
    };
    // The schemas first.
    char kbuf[1024];
    kd_schema_format(kd_op_schema(op), kbuf, sizeof kbuf);
    std::string ks = kbuf, ts;
    cases++;
    if (!torch_schema(oi.name, oi.overload, &ts)) {
      report("schema", {"libtorch has no aten::" + oi.full});
      total_cases += cases, total_unexpl += unexpl, ops_failed++;
      std::printf("OP     %-40s cases %5ld  agreed %5ld  known %4ld  unexplained %4ld\n",
                  oi.full.c_str(), cases, agree, nknown, unexpl);
      continue;
    }
    if (ks.rfind("aten::", 0) == 0) ks = ks.substr(6);
    if (ts.rfind("aten::", 0) == 0) ts = ts.substr(6);
    report("schema", ks == ts ? std::vector<std::string>{}
                              : std::vector<std::string>{"schema: kd '" + ks + "', torch '" + ts + "'"});
    std::vector<Spec> specs = generate(oi);
    uint64_t seed = hash_str(oi.full);
    for (size_t ci = 0; ci < specs.size(); ci++) {
      Case c = materialize(oi, specs[ci], seed + ci);
      cases++;
      if (opt.list) {
        std::printf("CASE   %s: %s\n", oi.full.c_str(), c.desc.c_str());
        agree++;
        continue;
      }
      if (const char *why = torch_unsafe(oi.full, c.desc)) {
        std::printf("SKIP   %s: %s :: %s\n", oi.full.c_str(), c.desc.c_str(), why);
        skipped++;
        continue;
      }
      Outcome ko = kd_run(oi, c);
      Outcome to = torch_run(oi.name, oi.overload, c);
      std::vector<std::vector<int64_t>> pre;
      for (const Val &v : c.args) {
        if (v.kind == VK::Tensor) pre.push_back(v.sizes);
        for (const Val &e : v.elems) pre.push_back(e.sizes);
      }
      std::vector<std::string> diffs = compare(oi, ko, to, pre);
      if (opt.self_check) {
        report(c.desc, diffs);
        if (diffs.empty()) {
          int m = self_check_case(oi, ko, to, pre, &sc_tried);
          if (m) std::printf("MISSED %s: %s :: %d perturbations of kd's result compared equal\n",
                             oi.full.c_str(), c.desc.c_str(), m);
          sc_missed += m;
        }
        continue;
      }
      if (opt.verbose && diffs.empty())
        std::printf("SAME   %s: %s :: %s\n", oi.full.c_str(), c.desc.c_str(),
                    ko.ok ? "both succeeded" : ("both failed: torch " + first_line(to.err)).c_str());
      report(c.desc, diffs);
      if (opt.dump && !diffs.empty()) dump_case(c, ko, to);
    }
    cases -= skipped;
    std::printf("OP     %-40s cases %5ld  agreed %5ld  known %4ld  unexplained %4ld%s\n", oi.full.c_str(),
                cases, agree, nknown, unexpl,
                skipped ? ("  (skipped " + std::to_string(skipped) + ")").c_str() : "");
    total_cases += cases, total_agree += agree, total_known += nknown, total_unexpl += unexpl;
    total_skipped += skipped;
    if (unexpl) ops_failed++;
  }
  if (opt.self_check) {
    std::printf("SELF-CHECK %d perturbations of kd's results, %d not caught\n", sc_tried, sc_missed);
    return sc_missed || sc_tried == 0 ? 1 : 0;
  }
  int stale = 0;
  for (const Known &k : known)
    if (k.hits > 0)
      std::printf("ENTRY  %s:%d: %d differences: %s | %s\n", opt.known_path.c_str(), k.line, k.hits,
                  k.op.c_str(), k.pattern.c_str());
  if (opt.op_globs.empty() && !opt.list)
    for (const Known &k : known)
      if (k.hits == 0) {
        stale++;
        std::printf("STALE  %s:%d: %s | %s matches no difference\n", opt.known_path.c_str(), k.line,
                    k.op.c_str(), k.pattern.c_str());
      }
  std::printf("TOTAL  %d operators, %ld cases: %ld agreed, %ld known differences, %ld unexplained; "
              "%d operators with unexplained differences; %d stale known entries; %ld cases "
              "skipped (unsafe in libtorch)\n",
              ops_run, total_cases, total_agree, total_known, total_unexpl, ops_failed, stale,
              total_skipped);
  std::printf("%ld passed, %ld failed\n", total_agree + total_known, total_unexpl);
  return (total_unexpl || stale) ? 1 : 0;
}
