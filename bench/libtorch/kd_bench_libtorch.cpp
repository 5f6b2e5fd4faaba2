// kd-bench-libtorch: the same figures as kd-bench, measured on libtorch
// (Debian's libtorch-dev), for side-by-side comparison. Same method: the
// median over repetitions of ns per operation, one "name value" line each.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One schema per line, or the func: lines of a native_functions.yaml.
std::vector<std::string> read_schemas(const char *path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("- func: ", 0) == 0) line = line.substr(8);
    else if (line.find("func:") != std::string::npos || line.empty() || line[0] == '#' ||
             line[0] == ' ')
      continue;
    out.push_back(line);
  }
  return out;
}

int bench_schema(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kd-bench-libtorch schema FILE\n");
    return 2;
  }
  std::vector<std::string> schemas = read_schemas(argv[1]);
  if (schemas.empty()) {
    std::fprintf(stderr, "no schemas in %s\n", argv[1]);
    return 1;
  }
  std::vector<double> parse_print, parse_only;
  size_t sink = 0;
  for (int rep = 0; rep < 9; rep++) {
    double t0 = now_ns();
    for (const auto &s : schemas) {
      c10::FunctionSchema fs = torch::jit::parseSchema(s);
      std::ostringstream os;
      os << fs;
      sink += os.str().size();
    }
    double t1 = now_ns();
    for (const auto &s : schemas) sink += torch::jit::parseSchema(s).arguments().size();
    double t2 = now_ns();
    parse_print.push_back((t1 - t0) / schemas.size());
    parse_only.push_back((t2 - t1) / schemas.size());
  }
  std::printf("schema_parse_ns %.1f\n", median(parse_print));
  std::printf("schema_parse_only_ns %.1f\n", median(parse_only));
  std::fprintf(stderr, "(%zu schemas, 9 repetitions, checksum %zu)\n", schemas.size(), sink);
  return 0;
}

// ---------------------------------------------------------------------------
// dispatch: the c10 dispatcher's call, lookup and registration costs.

// The no-op kernels the call paths end in: one that does nothing (the main
// figures: the cost of dispatch alone), and one that returns its input (the
// *_ret figures: a result reference taken and dropped, atomics included).
void noop(const at::Tensor &) {}
at::Tensor noop_ret(const at::Tensor &self) { return self; }

// A kernel with add.Tensor's C++ signature, for the registration figures.
at::Tensor add_kernel(const at::Tensor &self, const at::Tensor &, const at::Scalar &) {
  return self;
}

}  // namespace

// kdbench::noop, registered the way a user extension would register it. Kept
// at namespace scope: these macros define static registrars.
TORCH_LIBRARY(kdbench, m) {
  m.def("noop(Tensor self) -> ()");
  m.def("noop_ret(Tensor self) -> Tensor");
}
TORCH_LIBRARY_IMPL(kdbench, CPU, m) {
  m.impl("noop", noop);
  m.impl("noop_ret", noop_ret);
}

namespace {

constexpr int kDispatchReps = 15;  // >= 9, as for the other groups

// Runs body(i) for i in [0, n) once as a warm-up and then kDispatchReps times,
// timing each batch; returns the median in ns per iteration.
template <class Body>
double ns_per_op(size_t n, Body &&body) {
  for (size_t i = 0; i < n; i++) body(i);
  std::vector<double> samples;
  for (int rep = 0; rep < kDispatchReps; rep++) {
    double t0 = now_ns();
    for (size_t i = 0; i < n; i++) body(i);
    samples.push_back((now_ns() - t0) / n);
  }
  return median(samples);
}

// The call figures at eight call-site placements, as kd-bench does (see
// report_calls in kd_bench_dispatch.c): Pad bytes of no-ops (1, 3, ..., 15)
// ahead of the body in the timed loop, 7 batches each after a warm-up.
constexpr int kPlaceReps = 7;

template <int Pad, class Body>
__attribute__((noinline, aligned(64))) double ns_per_op_at(size_t n, Body &body) {
  std::vector<double> samples;
  for (int rep = -1; rep < kPlaceReps; rep++) {
    double t0 = now_ns();
    for (size_t i = 0; i < n; i++) {
      if (Pad == 1) __asm__ volatile(".nops 1");
      if (Pad == 3) __asm__ volatile(".nops 3");
      if (Pad == 5) __asm__ volatile(".nops 5");
      if (Pad == 7) __asm__ volatile(".nops 7");
      if (Pad == 9) __asm__ volatile(".nops 9");
      if (Pad == 11) __asm__ volatile(".nops 11");
      if (Pad == 13) __asm__ volatile(".nops 13");
      if (Pad == 15) __asm__ volatile(".nops 15");
      body(i);
    }
    if (rep >= 0) samples.push_back((now_ns() - t0) / n);
  }
  return median(samples);
}

struct Placed {
  double median, min, max;
};

template <class Body>
Placed ns_per_call(size_t n, Body &&body) {
  std::vector<double> p = {ns_per_op_at<1>(n, body),  ns_per_op_at<3>(n, body),
                           ns_per_op_at<5>(n, body),  ns_per_op_at<7>(n, body),
                           ns_per_op_at<9>(n, body),  ns_per_op_at<11>(n, body),
                           ns_per_op_at<13>(n, body), ns_per_op_at<15>(n, body)};
  std::sort(p.begin(), p.end());
  return {median(p), p.front(), p.back()};
}

void print_placed(const char *name, const Placed &p) {
  std::printf("%s %.2f\n%s_min %.2f\n%s_max %.2f\n", name, p.median, name, p.min, name, p.max);
}

// Folds a returned tensor into the sink, so no call can be discarded. Reads
// only the TensorImpl address: no atomics, nearly free next to a call.
inline void fold(uintptr_t &sink, const at::Tensor &r) {
  sink = sink * 31 + reinterpret_cast<uintptr_t>(r.unsafeGetTensorImpl());
}

// Defines 1,000 operators with add.Tensor's schema under fresh names and
// implements each for CPU, as run-time torch::Library objects; then destroys
// the libraries, which deregisters all of it. Adds one sample (us) to each.
void def_impl_release_1000(int rep, std::vector<double> &def_impl_us,
                           std::vector<double> &release_us) {
  constexpr int kOps = 1000;
  // Names and schemas are built before timing: what is timed is what the
  // dispatcher does with them (schema parsing included, as def() parses).
  std::vector<std::string> schemas, names;
  for (int i = 0; i < kOps; i++) {
    std::string name = "add_" + std::to_string(rep) + "_" + std::to_string(i);
    schemas.push_back("kdbench::" + name +
                      ".Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    names.push_back(name + ".Tensor");
  }
  double t0 = now_ns();
  // FRAGMENT: TORCH_LIBRARY(kdbench) above already owns the namespace's DEF.
  auto def_lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "kdbench",
                                                  c10::nullopt, __FILE__, __LINE__);
  auto impl_lib = std::make_unique<torch::Library>(torch::Library::IMPL, "kdbench",
                                                   c10::DispatchKey::CPU, __FILE__, __LINE__);
  for (int i = 0; i < kOps; i++) {
    def_lib->def(schemas[i].c_str());
    impl_lib->impl(names[i].c_str(), add_kernel);
  }
  double t1 = now_ns();
  impl_lib.reset();  // the impls go first, then the defs (reverse order)
  def_lib.reset();
  double t2 = now_ns();
  def_impl_us.push_back((t1 - t0) / 1e3);
  release_us.push_back((t2 - t1) / 1e3);
}

int bench_dispatch(int argc, char ** /*argv*/) {
  if (argc != 1) {
    std::fprintf(stderr, "usage: kd-bench-libtorch dispatch\n");
    return 2;
  }
  constexpr size_t kCalls = 1000000, kLookups = 200000;
  uintptr_t sink = 0;

  // A plain CPU tensor, as a user would hold it (requires_grad false).
  at::Tensor t = at::empty({1});

  // Baseline: the kernel through a function pointer the compiler cannot see
  // through (volatile), so the call is neither inlined nor hoisted.
  void (*volatile direct)(const at::Tensor &) = noop;
  Placed direct_ns = ns_per_call(kCalls, [&](size_t) { direct(t); });
  at::Tensor (*volatile direct_ret)(const at::Tensor &) = noop_ret;
  Placed direct_ret_ns = ns_per_call(kCalls, [&](size_t) { fold(sink, direct_ret(t)); });
  // The least a boxed call with an owned push can cost: a reference taken
  // (the push's copy), the kernel called, the reference dropped (the pop).
  Placed direct_owned_ns = ns_per_call(kCalls, [&](size_t) {
    at::Tensor c = t;
    direct(c);
  });
  // That reference pair alone, in the same code as kd-bench's figure.
  static std::atomic<int64_t> pair_refs{1};
  double pair_ns = ns_per_op(kCalls, [&](size_t) {
    pair_refs.fetch_add(1, std::memory_order_relaxed);
    if (pair_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) sink++;
  });

  // The typed handles are looked up once, as generated code and extensions do.
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("kdbench::noop", "")
                .typed<void(const at::Tensor &)>();
  auto op_ret = c10::Dispatcher::singleton()
                    .findSchemaOrThrow("kdbench::noop_ret", "")
                    .typed<at::Tensor(const at::Tensor &)>();
  Placed unboxed_ns = ns_per_call(kCalls, [&](size_t) { op.call(t); });
  Placed unboxed_ret_ns = ns_per_call(kCalls, [&](size_t) { fold(sink, op_ret.call(t)); });

  // Same call under InferenceMode: the autograd keys go into the thread's
  // excluded set (the tensor itself still carries them).
  Placed unboxed_inference_ns;
  {
    c10::InferenceMode guard;
    unboxed_inference_ns = ns_per_call(kCalls, [&](size_t) { op.call(t); });
  }

  // Boxed, as an interpreter calls: push the argument, call, pop the result.
  torch::jit::Stack stack;
  stack.reserve(4);
  Placed boxed_ns = ns_per_call(kCalls, [&](size_t) {
    torch::jit::push(stack, t);
    op.callBoxed(stack);
  });
  Placed boxed_ret_ns = ns_per_call(kCalls, [&](size_t) {
    torch::jit::push(stack, t);
    op_ret.callBoxed(stack);
    fold(sink, torch::jit::pop(stack).toTensor());
  });

  // Lookup by name of an existing operator (OperatorName built per lookup,
  // as a caller holding only the strings would).
  double lookup_ns = ns_per_op(kLookups, [&](size_t) {
    auto h = c10::Dispatcher::singleton().findSchema({"kdbench::noop", ""});
    sink = sink * 31 + (h.has_value() ? 1 : 2);
  });

  // Registration and release: fresh names per repetition, since an operator
  // cannot be defined again while its def is alive.
  std::vector<double> def_impl_us, release_us;
  for (int rep = 0; rep < kDispatchReps; rep++) def_impl_release_1000(rep, def_impl_us, release_us);

  print_placed("direct_call_ns", direct_ns);
  print_placed("dispatch_unboxed_ns", unboxed_ns);
  print_placed("dispatch_boxed_ns", boxed_ns);
  print_placed("direct_call_ret_ns", direct_ret_ns);
  print_placed("dispatch_unboxed_ret_ns", unboxed_ret_ns);
  print_placed("dispatch_boxed_ret_ns", boxed_ret_ns);
  print_placed("dispatch_unboxed_inference_mode_ns", unboxed_inference_ns);
  print_placed("direct_call_owned_ns", direct_owned_ns);
  std::printf("refcount_pair_ns %.2f\n", pair_ns);
  std::printf("op_lookup_ns %.1f\n", lookup_ns);
  std::printf("def_impl_1000_us %.1f\n", median(def_impl_us));
  std::printf("release_1000_us %.1f\n", median(release_us));

  // Context for reading the figures: the keys the tensor carries and the
  // thread-local sets that the dispatcher merges with them.
  auto tls = c10::impl::tls_local_dispatch_key_set();
  std::ostringstream os;
  os << "(tensor keys " << t.key_set() << "; TLS included " << tls.included_ << ", excluded "
     << tls.excluded_ << "; " << kDispatchReps << " repetitions, checksum " << sink << ")";
  std::fprintf(stderr, "%s\n", os.str().c_str());
  return 0;
}

// ---- ops: the operator library's figures (kd-bench ops) -------------------
constexpr int kOpsReps = 15;
constexpr int kSmallCalls = 200000;

template <class F>
double median_of(int reps, F &&f) {
  std::vector<double> s;
  f();  // warm-up
  for (int r = 0; r < reps; r++) s.push_back(f());
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

int bench_ops(int, char **) {
  at::InferenceMode guard;
  at::Tensor a = at::full({1}, 1.0f), b = at::full({1}, 2.0f), o = at::empty({1});
  auto small = [&](int variant) {
    return median_of(kOpsReps, [&] {
      double t0 = now_ns();
      for (int i = 0; i < kSmallCalls; i++) {
        if (variant == 0) {
          at::Tensor r = at::add(a, b);
        } else if (variant == 1) {
          at::add_out(o, a, b);
        } else {
          at::Tensor r = at::empty({1});
        }
      }
      return (now_ns() - t0) / kSmallCalls;
    });
  };
  std::printf("add_1_ns %.1f\n", small(0));
  std::printf("add_out_1_ns %.1f\n", small(1));
  std::printf("empty_1_ns %.1f\n", small(2));
  const int64_t n = 16 * 1024 * 1024;
  at::Tensor A = at::rand({n}), B = at::rand({n}), O = at::empty({n});
  auto secs = [&](auto &&fn) {
    return median_of(kOpsReps, [&] {
      double t0 = now_ns();
      fn();
      return (now_ns() - t0) * 1e-9;
    });
  };
  double bytes = double(n) * 12;
  int threads = at::get_num_threads();
  at::set_num_threads(1);
  std::printf("add_16M_f32_GBps_1t %.2f\n", bytes / secs([&] { at::add_out(O, A, B); }) * 1e-9);
  at::set_num_threads(threads);
  std::printf("add_16M_f32_GBps %.2f\n", bytes / secs([&] { at::add_out(O, A, B); }) * 1e-9);
  std::printf("sum_16M_f32_GBps %.2f\n", double(n) * 4 / secs([&] { at::Tensor r = at::sum(A); }) * 1e-9);
  at::Tensor M1 = at::rand({512, 512}), M2 = at::rand({512, 512}), MO = at::empty({512, 512});
  std::printf("mm_512_f32_gflops %.2f\n",
              2.0 * 512 * 512 * 512 / secs([&] { at::mm_out(MO, M1, M2); }) * 1e-9);
  std::printf("threads %d\n", threads);
  return 0;
}

}  // namespace


int main(int argc, char **argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "schema")) return bench_schema(argc - 1, argv + 1);
  if (argc >= 2 && !std::strcmp(argv[1], "dispatch")) return bench_dispatch(argc - 1, argv + 1);
  if (argc >= 2 && !std::strcmp(argv[1], "ops")) return bench_ops(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: kd-bench-libtorch schema FILE\n"
                       "       kd-bench-libtorch dispatch\n"
                       "       kd-bench-libtorch ops\n");
  return 2;
}
