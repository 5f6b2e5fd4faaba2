// kd-bench-libtorch: the same figures as kd-bench, measured on libtorch
// (Debian's libtorch-dev), for side-by-side comparison. Same method: the
// median over repetitions of ns per operation, one "name value" line each.
#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
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

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "schema")) return bench_schema(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: kd-bench-libtorch schema FILE\n");
  return 2;
}
