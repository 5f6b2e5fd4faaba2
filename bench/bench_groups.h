/* The benchmark groups of kd-bench; each returns the exit code. */
#ifndef KD_BENCH_GROUPS_H
#define KD_BENCH_GROUPS_H

int kd_bench_schema(int argc, char **argv);
int kd_bench_dispatch(int argc, char **argv);
int kd_bench_kernels(int argc, char **argv);
int kd_bench_ops(int argc, char **argv);
int kd_bench_backend(int argc, char **argv);
int kd_bench_opencl(int argc, char **argv);

#endif
