// difftest.h: the neutral description of one call, shared by the two sides
// of the differential test (kd in difftest.cpp, libtorch in torch_side.cpp).
// Only the standard library here: difftest.cpp compiles without libtorch's
// headers, so that editing the case generator recompiles in seconds.
#ifndef KD_DIFFTEST_H
#define KD_DIFFTEST_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace difftest {

// Dtypes are kd's enum values (kd_dtype): bool, uint8, int8, int16, int32,
// int64, float16, bfloat16, float32, float64, complex64, complex128.
enum Dtype { B = 0, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128, NDTYPES };
inline size_t dtype_size(int dtype) {
  static const size_t sz[NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
  return sz[dtype];
}
inline const char *dtype_short(int dtype) {
  static const char *const nm[NDTYPES] = {"b8",  "u8",  "i8",  "i16", "i32", "i64",
                                          "f16", "bf16", "f32", "f64", "c64", "c128"};
  return nm[dtype];
}

// Bytes of one storage; tensors refer to it by index. Two tensors of a case
// share storage only when they name the same buffer (the aliasing cases).
struct Buffer {
  std::vector<uint8_t> bytes;
};

// The value kinds of boxed arguments. A Scalar argument is given as Bool,
// Int, Double or Complex; the side converts by the schema's type.
enum class VK { None, Bool, Int, Double, Complex, Str, Dtype, Layout, Device, MemFmt, Tensor,
                IntList, TensorList };

struct Val {
  VK kind = VK::None;
  bool b = false;
  int64_t i = 0;     // Int; Dtype, Layout, MemFmt (kd's enum value)
  double d = 0, im = 0;
  std::string s;
  std::vector<int64_t> ints;
  // Tensor: a view of buffers[buf]
  int buf = -1, dtype = F32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  std::vector<Val> elems;  // TensorList
};

struct Case {
  std::string desc;
  std::vector<Buffer> bufs;
  std::vector<Val> args;
};

// What a tensor looked like: geometry, relations to the case's inputs, and
// its elements in row-major (logical) order.
struct TSnap {
  int dtype = -1;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int alias_buf = -1;  // the case buffer whose storage it shares, or -1
  int same_arg = -1;   // the flattened tensor argument it is, or -1
  std::vector<uint8_t> data;
};

struct RSnap {
  VK kind = VK::None;  // Tensor, TensorList, Int, Double, Bool, or None
  TSnap t;
  std::vector<TSnap> list;  // TensorList
  int64_t i = 0;
  double d = 0;
  bool b = false;
};

struct Outcome {
  bool ok = false;
  std::string err;
  std::vector<RSnap> rets;
  std::vector<TSnap> after;  // every tensor argument (lists flattened) after the call
};

// Gathers the elements of a strided view into row-major order. `first` is
// the address of element 0 (data + offset).
inline void gather_elems(const uint8_t *first, size_t isz, const std::vector<int64_t> &sizes,
                         const std::vector<int64_t> &strides, std::vector<uint8_t> &out) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  out.clear();
  if (n <= 0 || !first) return;
  out.resize((size_t)n * isz);
  size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (size_t d = 0; d < nd; d++) off += idx[d] * strides[d];
    std::memcpy(&out[(size_t)k * isz], first + off * (int64_t)isz, isz);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// The libtorch side (torch_side.cpp).
// The schema of aten::name.overload as libtorch prints it; false when
// libtorch has no such operator.
bool torch_schema(const std::string &name, const std::string &overload, std::string *out);
// Calls the operator boxed with the case's arguments (built from the same
// bytes). Exceptions become ok == false with the message.
Outcome torch_run(const std::string &name, const std::string &overload, const Case &c);
void torch_init();

}  // namespace difftest

#endif
