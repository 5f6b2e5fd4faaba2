/*
 * kd-bench: benchmarks. `kd-bench GROUP [ARGS]` prints one "name value" line
 * per figure, each a median.
 */
#include <stdio.h>
#include <string.h>

#include "bench_groups.h"

typedef struct group {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *usage;
} group;

static const group groups[] = {
    {"dispatch", kd_bench_dispatch, "dispatch      calls, lookup, registration (see docs/PERFORMANCE.md)"},
#ifdef KD_BENCH_HAVE_OPS
    {"ops", kd_bench_ops, "ops           the operator library: small-op latency, bandwidth, mm (docs/PERFORMANCE.md)"},
    {"backend", kd_bench_backend, "backend       a plugin backend: typed calls, the CPU fallback, load/unload (docs/PERFORMANCE.md)"},
#endif
    {"opencl", kd_bench_opencl, "opencl        the OpenCL backend against plain OpenCL, CLBlast and the CPU (docs/PERFORMANCE.md)"},
    {"kernels", kd_bench_kernels, "kernels       prepared kernels (kernel definitions) against a direct call"},
    {"schema", kd_bench_schema, "schema FILE   parse+print every schema of FILE (one per line, or native_functions.yaml)"},
};

int main(int argc, char **argv) {
  if (argc >= 2) {
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
      if (!strcmp(argv[1], groups[i].name)) return groups[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "usage: kd-bench GROUP [ARGS]\n");
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
    fprintf(stderr, "  kd-bench %s\n", groups[i].usage);
  return 2;
}
