/*
 * kd_bench_opencl.c: `kd-bench opencl [--quick] [PLUGIN]` runs the program
 * kd-bench-opencl (bench/opencl/opencl_bench.c: the OpenCL backend against a
 * plain OpenCL program, CLBlast and kdispatch's CPU kernels). It is a program
 * of its own because the plugin binds to the shared libkdispatch, while
 * kd-bench links a static copy (the figures of `kd-bench dispatch` are taken
 * on it). Without the plugin (OpenCL or CLBlast not found at build time), one
 * line says so and the exit code is 77 (a test skips).
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_groups.h"

int kd_bench_opencl(int argc, char **argv) {
  (void)argc;
#ifdef KD_BENCH_OPENCL_EXE
  /* kd-bench's static copy of libkdispatch recorded itself in the
   * environment for this process id, which exec keeps: the program's shared
   * copy would take that for a second copy in the same process. */
  unsetenv("KDISPATCH_INSTANCE");
  argv[0] = KD_BENCH_OPENCL_EXE;
  execv(KD_BENCH_OPENCL_EXE, argv);
  fprintf(stderr, "kd-bench opencl: cannot run %s: %s\n", KD_BENCH_OPENCL_EXE, strerror(errno));
  return 1;
#else
  (void)argv;
  printf("kd-bench opencl: skipped: the OpenCL backend was not built (OpenCL or CLBlast not "
         "found: apt-get install ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd)\n");
  return 77;
#endif
}
