// torch_side.cpp: the libtorch half of the differential test. Builds the
// case's tensors over storages holding the same bytes as kd's, calls the
// operator boxed through c10::Dispatcher, and describes what came back.
// The only translation unit that includes libtorch's headers (slow to
// compile): keep it small and stable.
#include "difftest.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>

#include <sstream>

namespace difftest {

namespace {

const at::ScalarType kTypes[NDTYPES] = {
    at::kBool,  at::kByte,     at::kChar,  at::kShort,  at::kInt,          at::kLong,
    at::kHalf,  at::kBFloat16, at::kFloat, at::kDouble, at::kComplexFloat, at::kComplexDouble};

int to_kd_dtype(at::ScalarType t) {
  for (int i = 0; i < NDTYPES; i++)
    if (kTypes[i] == t) return i;
  return -1;
}

// Warnings (resized outputs, deprecations) are not compared: drop them.
struct QuietWarnings : c10::WarningHandler {
  void process(const c10::SourceLocation &, const std::string &, const bool) override {}
};

struct Built {
  std::vector<at::Storage> storages;
  std::vector<at::Tensor> flat;  // tensor arguments in order, lists flattened
};

at::Tensor make_tensor(const Val &v, Built &b) {
  at::Tensor t = at::empty({0}, at::TensorOptions().dtype(kTypes[v.dtype]));
  t.set_(b.storages[(size_t)v.buf], v.offset, v.sizes, v.strides);
  b.flat.push_back(t);
  return t;
}

c10::IValue to_ivalue(const Val &v, Built &b) {
  switch (v.kind) {
    case VK::None: return c10::IValue();
    case VK::Bool: return c10::IValue(v.b);
    case VK::Int: return c10::IValue(v.i);
    case VK::Double: return c10::IValue(v.d);
    case VK::Complex: return c10::IValue(c10::complex<double>(v.d, v.im));
    case VK::Str: return c10::IValue(v.s);
    case VK::Dtype: return c10::IValue(kTypes[v.i]);
    case VK::Layout: return c10::IValue(v.i == 0 ? at::kStrided : at::kSparse);
    case VK::Device: return c10::IValue(c10::Device(c10::kCPU));
    case VK::MemFmt: {
      static const at::MemoryFormat mf[] = {at::MemoryFormat::Contiguous, at::MemoryFormat::Preserve,
                                            at::MemoryFormat::ChannelsLast,
                                            at::MemoryFormat::ChannelsLast3d};
      return c10::IValue(mf[v.i]);
    }
    case VK::Tensor: return c10::IValue(make_tensor(v, b));
    case VK::IntList: return c10::IValue(v.ints);
    case VK::TensorList: {
      std::vector<at::Tensor> ts;
      for (const Val &e : v.elems) ts.push_back(make_tensor(e, b));
      return c10::IValue(ts);
    }
  }
  return c10::IValue();
}

TSnap snap(const at::Tensor &t, const Built &b) {
  TSnap s;
  s.dtype = to_kd_dtype(t.scalar_type());
  s.sizes = t.sizes().vec();
  s.strides = t.strides().vec();
  s.offset = t.storage_offset();
  for (size_t i = 0; i < b.storages.size(); i++)
    if (t.storage().is_alias_of(b.storages[i])) s.alias_buf = (int)i;
  for (size_t i = 0; i < b.flat.size(); i++)
    if (t.unsafeGetTensorImpl() == b.flat[i].unsafeGetTensorImpl()) s.same_arg = (int)i;
  if (s.dtype >= 0 && t.numel() > 0)
    gather_elems(static_cast<const uint8_t *>(t.data_ptr()), t.element_size(), s.sizes, s.strides,
                 s.data);
  return s;
}

}  // namespace

void torch_init() {
  static QuietWarnings quiet;
  c10::Warning::set_warning_handler(&quiet);
  at::set_num_threads(1);
}

bool torch_schema(const std::string &name, const std::string &overload, std::string *out) {
  auto op = c10::Dispatcher::singleton().findSchema({"aten::" + name, overload});
  if (!op) return false;
  std::ostringstream os;
  os << op->schema();
  *out = os.str();
  return true;
}

Outcome torch_run(const std::string &name, const std::string &overload, const Case &c) {
  Outcome o;
  auto op = c10::Dispatcher::singleton().findSchema({"aten::" + name, overload});
  if (!op) {
    o.err = "no such operator in libtorch";
    return o;
  }
  Built b;
  try {
    for (const Buffer &buf : c.bufs) {
      // A byte tensor's storage: any dtype's view can be set over it.
      at::Tensor base = at::empty({(int64_t)buf.bytes.size()}, at::TensorOptions().dtype(at::kByte));
      if (!buf.bytes.empty()) std::memcpy(base.data_ptr(), buf.bytes.data(), buf.bytes.size());
      b.storages.push_back(base.storage());
    }
    torch::jit::Stack stack;
    for (const Val &v : c.args) stack.push_back(to_ivalue(v, b));
    op->callBoxed(&stack);
    o.ok = true;
    for (const c10::IValue &r : stack) {
      RSnap rs;
      if (r.isTensor()) {
        rs.kind = VK::Tensor;
        rs.t = snap(r.toTensor(), b);
      } else if (r.isTensorList()) {
        rs.kind = VK::TensorList;
        for (const at::Tensor &x : r.toTensorVector()) rs.list.push_back(snap(x, b));
      } else if (r.isInt()) {
        rs.kind = VK::Int;
        rs.i = r.toInt();
      } else if (r.isDouble()) {
        rs.kind = VK::Double;
        rs.d = r.toDouble();
      } else if (r.isBool()) {
        rs.kind = VK::Bool;
        rs.b = r.toBool();
      }
      o.rets.push_back(rs);
    }
  } catch (const c10::Error &e) {
    o.ok = false;
    o.err = e.what_without_backtrace();
    o.rets.clear();
  } catch (const std::exception &e) {
    o.ok = false;
    o.err = e.what();
    o.rets.clear();
  }
  for (const at::Tensor &t : b.flat) o.after.push_back(snap(t, b));
  return o;
}

}  // namespace difftest
