/*
 * opencl_bench.c: kd-bench-opencl, the program `kd-bench opencl [--quick]
 * [PLUGIN]` runs: kdispatch's OpenCL backend
 * against a plain OpenCL program and CLBlast called directly (opencl_raw.c),
 * and against kdispatch's own CPU kernels, in one run, on one device
 * (opencl:0 and the peer's device 0 of the same platform). One "name value"
 * line per figure, each a median of REPS repetitions after a warm-up one,
 * the repetitions of the figures compared interleaved (so that both see the
 * same machine state); the ratios are taken between those medians.
 *
 * Against the peers (the targets):
 *   raw_opencl_add_16M_f32_GBps   c = a + b over 16M floats, the plain OpenCL
 *                                 program: the better of its scalar and float4
 *                                 kernels (both printed, _scalar and _vec4); K
 *                                 launches queued, then clFinish; 12 bytes
 *                                 moved per element
 *   opencl_add_16M_f32_GBps       x + y through the dispatcher (kd_add_Tensor,
 *                                 the output allocated by the backend's
 *                                 caching allocator and released), K calls then
 *                                 one synchronisation: THE figure
 *   opencl_add_out_16M_f32_GBps   the same with add.out into a preallocated
 *                                 output
 *   opencl_add_16M_ratio          opencl_add_16M_f32_GBps / raw (target >= 0.90)
 *   raw_opencl_add_1_us           a 1-element add queued CALLS times into
 *                                 preallocated buffers, clFinish at the end
 *   opencl_add_1_us               1-element x + y (kd_add_Tensor, result
 *                                 released) CALLS times, synchronised at the end
 *   opencl_add_out_1_us           the same through add.out
 *   opencl_add_1_over_raw_us      opencl_add_1_us - raw (target <= 2)
 *   clblast_mm_1024_gflops        CLBlastSgemm 1024^3 on the peer's queue,
 *                                 after a warm-up call; 2 n^3 flops
 *   opencl_mm_1024_gflops         kd_mm of two 1024x1024 float32 opencl tensors
 *   opencl_mm_1024_ratio          opencl / clblast (target >= 0.95)
 * Against kdispatch's CPU kernels (all threads), speedup = cpu time / opencl time:
 *   cpu_add_16M_f32_GBps, opencl_speedup_add_16M      (kd_add_out on both)
 *   cpu_sum_16M_f32_GBps, opencl_sum_16M_f32_GBps, opencl_speedup_sum_16M
 *                                 (kd_sum of 16M floats, 4 bytes per element)
 *   cpu_mm_1024_gflops, opencl_speedup_mm_1024        (kd_mm)
 *   cpu_softmax_4096x1024_us, opencl_softmax_4096x1024_us,
 *   opencl_speedup_softmax_4096x1024  (kd_internal_softmax over dim 1, float32)
 * The CPU fallback (an operator the backend does not implement):
 *   cpu_tril_64_us                kd_tril of a 64x64 float32 cpu tensor
 *   opencl_fallback_tril_64_us    the same on an opencl tensor: the CPU fallback
 *                                 (the input copied to the host, the CPU kernel,
 *                                 the result copied back); kd-bench checks that
 *                                 the fallback count of tril grew
 *   opencl_fallback_tril_64_ratio fallback / cpu
 * Every result is compared with the CPU's before anything is timed: a wrong
 * kernel would otherwise be timed as a fast one.
 *
 * --quick: one repetition of one call each (the smoke test: every figure is
 * printed, none is meaningful). Exit codes: 0, 1 (an error, on stderr), 77
 * (no OpenCL platform or device: one line says so), 2 (usage).
 *
 * The plugin: the opencl backend already registered (KD_BACKENDS), else
 * PLUGIN, else the build's libkd_opencl.so. This program links the shared
 * libkdispatch and libkdops, so that the plugin registers into its registry.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench_util.h"
#include "kd/backend.h"
#include "kd/cpu_fallback.h"
#include "kd/ops.h"
#include "opencl_raw.h"

#define BIG ((int64_t)16 * 1024 * 1024)
#define MM_N 1024
#define SM_ROWS 4096
#define SM_COLS 1024
#define TRIL_N 64
#define MAX_REPS 15

typedef struct config {
  int reps;       /* timed repetitions (after one warm-up) */
  int big_k;      /* 16M-element calls per repetition */
  int small_k;    /* 1-element calls per repetition */
  int mm_k;       /* mm calls per repetition */
  int mid_k;      /* softmax calls per repetition */
  int tril_k;     /* tril calls per repetition */
} config;

static const config full_config = {9, 8, 20000, 1, 4, 2000};
static const config quick_config = {1, 1, 2, 1, 1, 2};

static const kd_device cl_dev = {KD_DEVICE_PRIVATEUSE1, 0};
static const kd_backend_iface *cl_iface;

static void quiet(const char *message, void *user_data) { (void)message, (void)user_data; }

static int fail(const char *what) {
  fprintf(stderr, "kd-bench opencl: %s: %s\n", what, kd_last_error());
  return 1;
}

/* ---- Samplers: one repetition of one figure -------------------------------- */

/* A figure's repetition: *secs is the time per operation. 0 or -1 (the
 * message is printed by the sampler). */
typedef struct sampler {
  int (*run)(void *ctx, int iters, double *secs);
  void *ctx;
  int iters;
} sampler;

/* The medians of n samplers, their repetitions interleaved, after one
 * warm-up repetition of each. Returns -1 when one fails. */
static int medians(int reps, int n, const sampler *s, double *out) {
  double samples[4][MAX_REPS];
  for (int r = -1; r < reps; r++)
    for (int i = 0; i < n; i++) {
      double secs;
      if (s[i].run(s[i].ctx, s[i].iters, &secs)) return -1;
      if (r >= 0) samples[i][r] = secs;
    }
  for (int i = 0; i < n; i++) out[i] = kd_bench_median(samples[i], (size_t)reps);
  return 0;
}

/* What a kdispatch sampler calls. */
enum kd_work { W_ADD, W_ADD_OUT, W_SUM, W_MM, W_SOFTMAX, W_TRIL };

typedef struct kd_job {
  enum kd_work work;
  kd_tensor *a, *b, *o; /* operands (borrowed); o only for W_ADD_OUT */
  bool device;          /* on opencl: synchronise at the end */
} kd_job;

static kd_status job_once(const kd_job *j) {
  kd_tensor *r = NULL;
  kd_status st;
  switch (j->work) {
  case W_ADD: st = kd_add_Tensor(j->a, j->b, NULL, &r); break;
  case W_ADD_OUT: st = kd_add_out(j->a, j->b, NULL, j->o); break;
  case W_SUM: st = kd_sum(j->a, NULL, &r); break;
  case W_MM: st = kd_mm(j->a, j->b, &r); break;
  case W_SOFTMAX: st = kd_internal_softmax(j->a, 1, false, &r); break;
  default: st = kd_tril(j->a, 0, &r); break;
  }
  kd_tensor_release(r);
  return st;
}

static kd_status cl_sync(void) { return cl_iface->synchronize(cl_iface->ctx, cl_dev); }

static int kd_sample(void *ctx, int iters, double *secs) {
  const kd_job *j = ctx;
  uint64_t t0 = kd_bench_now_ns();
  kd_status st = KD_OK;
  for (int i = 0; i < iters && !st; i++) st = job_once(j);
  if (!st && j->device) st = cl_sync();
  *secs = (double)(kd_bench_now_ns() - t0) * 1e-9 / iters;
  return st ? fail("timed call") : 0;
}

/* The peer's samplers. */
typedef struct raw_job {
  kdb_raw *raw;
  int what; /* 0 scalar add, 1 float4 add, 2 1-element add, 3 sgemm */
} raw_job;

static int raw_sample(void *ctx, int iters, double *secs) {
  const raw_job *j = ctx;
  int rc = j->what == 2   ? kdb_raw_add1_run(j->raw, iters, secs)
           : j->what == 3 ? kdb_raw_mm_run(j->raw, iters, secs)
                          : kdb_raw_add_run(j->raw, j->what, iters, secs);
  if (rc) fprintf(stderr, "kd-bench opencl: %s\n", kdb_raw_error(j->raw));
  return rc;
}

/* ---- Operands and checks --------------------------------------------------- */

/* A float32 cpu tensor of the given sizes, value + (i % 7) / 8 each, and, when
 * dev is not NULL, its copy on opencl:0 (both owned by the caller). */
static kd_status operand(int ndim, const int64_t *sizes, float value, kd_tensor **cpu,
                         kd_tensor **dev) {
  *cpu = NULL;
  if (dev) *dev = NULL;
  kd_status st = kd_tensor_empty(ndim, sizes, KD_FLOAT32, kd_device_cpu(), cpu);
  if (st) return st;
  float *p = kd_tensor_data(*cpu);
  for (int64_t i = 0; i < kd_tensor_numel(*cpu); i++) p[i] = value + (float)(i % 7) / 8;
  if (dev) st = kd_tensor_to_device(*cpu, cl_dev, dev);
  return st;
}

/* Runs the job once on both devices and compares the results element by
 * element (|x - y| <= rtol * |y| + rtol). 0, or 1 with a message. */
static int check(const kd_job *dev_job, const kd_job *cpu_job, double rtol, const char *what) {
  kd_tensor *rd = NULL, *rc = NULL, *rh = NULL;
  kd_status st;
  int bad = 1;
  const kd_job *js[2] = {dev_job, cpu_job};
  kd_tensor **rs[2] = {&rd, &rc};
  for (int k = 0; k < 2; k++) {
    const kd_job *j = js[k];
    switch (j->work) {
    case W_ADD: st = kd_add_Tensor(j->a, j->b, NULL, rs[k]); break;
    case W_ADD_OUT:
      st = kd_add_out(j->a, j->b, NULL, j->o);
      if (!st) {
        kd_tensor_retain(j->o);
        *rs[k] = j->o;
      }
      break;
    case W_SUM: st = kd_sum(j->a, NULL, rs[k]); break;
    case W_MM: st = kd_mm(j->a, j->b, rs[k]); break;
    case W_SOFTMAX: st = kd_internal_softmax(j->a, 1, false, rs[k]); break;
    default: st = kd_tril(j->a, 0, rs[k]); break;
    }
    if (st) {
      fprintf(stderr, "kd-bench opencl: %s on %s: %s\n", what, k ? "cpu" : "opencl",
              kd_last_error());
      goto done;
    }
  }
  if ((st = kd_tensor_to_device(rd, kd_device_cpu(), &rh))) {
    fprintf(stderr, "kd-bench opencl: %s: the result to the cpu: %s\n", what, kd_last_error());
    goto done;
  }
  if (kd_tensor_numel(rh) != kd_tensor_numel(rc) || kd_tensor_dtype(rh) != KD_FLOAT32) {
    fprintf(stderr, "kd-bench opencl: %s: the opencl result has %lld elements of dtype %d, the cpu's %lld\n",
            what, (long long)kd_tensor_numel(rh), (int)kd_tensor_dtype(rh),
            (long long)kd_tensor_numel(rc));
    goto done;
  }
  const float *x = kd_tensor_data(rh), *y = kd_tensor_data(rc);
  for (int64_t i = 0; i < kd_tensor_numel(rh); i++) {
    if (!(fabs((double)x[i] - (double)y[i]) <= rtol * fabs((double)y[i]) + rtol)) {
      fprintf(stderr, "kd-bench opencl: %s: element %lld is %.9g on opencl, %.9g on the cpu\n",
              what, (long long)i, (double)x[i], (double)y[i]);
      goto done;
    }
  }
  bad = 0;
done:
  kd_tensor_release(rd);
  kd_tensor_release(rc);
  kd_tensor_release(rh);
  return bad;
}

/* ---- The figures -------------------------------------------------------------- */

typedef struct state {
  config cfg;
  kdb_raw *raw;
  kd_tensor *ca, *cb, *co, *da, *db, *dout; /* the current operands: cpu, opencl */
} state;

static void release_operands(state *s) {
  kd_tensor **ts[] = {&s->ca, &s->cb, &s->co, &s->da, &s->db, &s->dout};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
    kd_tensor_release(*ts[i]);
    *ts[i] = NULL;
  }
}

static int add_figures(state *s) {
  const int64_t big = BIG, one = 1;
  if (kdb_raw_add_setup(s->raw, (size_t)BIG)) {
    fprintf(stderr, "kd-bench opencl: %s\n", kdb_raw_error(s->raw));
    return 1;
  }
  if (operand(1, &big, 1, &s->ca, &s->da) || operand(1, &big, 2, &s->cb, &s->db) ||
      operand(1, &big, 0, &s->co, &s->dout))
    return fail("16M operands");
  kd_job dadd = {W_ADD, s->da, s->db, NULL, true}, dout = {W_ADD_OUT, s->da, s->db, s->dout, true};
  kd_job cadd = {W_ADD, s->ca, s->cb, NULL, false}, cout = {W_ADD_OUT, s->ca, s->cb, s->co, false};
  if (check(&dadd, &cadd, 0, "add 16M") || check(&dout, &cout, 0, "add.out 16M")) return 1;
  raw_job rs = {s->raw, 0}, rv = {s->raw, 1};
  const int k = s->cfg.big_k;
  sampler sm[4] = {{raw_sample, &rs, k}, {raw_sample, &rv, k}, {kd_sample, &dadd, k},
                   {kd_sample, &dout, k}};
  double m[4];
  if (medians(s->cfg.reps, 4, sm, m)) return 1;
  double bytes = (double)BIG * 12;
  double raw_s = bytes / m[0] * 1e-9, raw_v = bytes / m[1] * 1e-9;
  double raw = raw_s > raw_v ? raw_s : raw_v, kd = bytes / m[2] * 1e-9;
  printf("raw_opencl_add_16M_f32_GBps_scalar %.2f\n", raw_s);
  printf("raw_opencl_add_16M_f32_GBps_vec4 %.2f\n", raw_v);
  printf("raw_opencl_add_16M_f32_GBps %.2f\n", raw);
  printf("opencl_add_16M_f32_GBps %.2f\n", kd);
  printf("opencl_add_out_16M_f32_GBps %.2f\n", bytes / m[3] * 1e-9);
  printf("opencl_add_16M_ratio %.3f\n", kd / raw);
  /* The CPU's add against the device's, both add.out: kernel against kernel
   * (a functional add on the cpu allocates 64 MiB per call, which the
   * allocator hands back to the system: its page faults would be timed). */
  sampler sc[2] = {{kd_sample, &cout, k}, {kd_sample, &dout, k}};
  if (medians(s->cfg.reps, 2, sc, m)) return 1;
  printf("cpu_add_16M_f32_GBps %.2f\n", bytes / m[0] * 1e-9);
  printf("opencl_speedup_add_16M %.3f\n", m[0] / m[1]);
  /* The sum, on both. */
  kd_job dsum = {W_SUM, s->da, NULL, NULL, true}, csum = {W_SUM, s->ca, NULL, NULL, false};
  if (check(&dsum, &csum, 1e-4, "sum 16M")) return 1;
  sampler ss[2] = {{kd_sample, &csum, k}, {kd_sample, &dsum, k}};
  if (medians(s->cfg.reps, 2, ss, m)) return 1;
  printf("cpu_sum_16M_f32_GBps %.2f\n", (double)BIG * 4 / m[0] * 1e-9);
  printf("opencl_sum_16M_f32_GBps %.2f\n", (double)BIG * 4 / m[1] * 1e-9);
  printf("opencl_speedup_sum_16M %.3f\n", m[0] / m[1]);
  release_operands(s);

  /* One element. */
  if (operand(1, &one, 1, &s->ca, &s->da) || operand(1, &one, 2, &s->cb, &s->db) ||
      operand(1, &one, 0, &s->co, &s->dout))
    return fail("1-element operands");
  kd_job d1 = {W_ADD, s->da, s->db, NULL, true}, d1o = {W_ADD_OUT, s->da, s->db, s->dout, true};
  kd_job c1 = {W_ADD, s->ca, s->cb, NULL, false}, c1o = {W_ADD_OUT, s->ca, s->cb, s->co, false};
  if (check(&d1, &c1, 0, "add 1") || check(&d1o, &c1o, 0, "add.out 1")) return 1;
  raw_job r1 = {s->raw, 2};
  const int n = s->cfg.small_k;
  sampler s1[3] = {{raw_sample, &r1, n}, {kd_sample, &d1, n}, {kd_sample, &d1o, n}};
  if (medians(s->cfg.reps, 3, s1, m)) return 1;
  printf("raw_opencl_add_1_us %.3f\n", m[0] * 1e6);
  printf("opencl_add_1_us %.3f\n", m[1] * 1e6);
  printf("opencl_add_out_1_us %.3f\n", m[2] * 1e6);
  printf("opencl_add_1_over_raw_us %.3f\n", (m[1] - m[0]) * 1e6);
  release_operands(s);
  return 0;
}

static int mm_figures(state *s) {
  const int64_t mat[2] = {MM_N, MM_N};
  if (kdb_raw_mm_setup(s->raw, MM_N)) {
    fprintf(stderr, "kd-bench opencl: %s\n", kdb_raw_error(s->raw));
    return 1;
  }
  if (operand(2, mat, 1, &s->ca, &s->da) || operand(2, mat, 2, &s->cb, &s->db))
    return fail("mm operands");
  kd_job dmm = {W_MM, s->da, s->db, NULL, true}, cmm = {W_MM, s->ca, s->cb, NULL, false};
  if (check(&dmm, &cmm, 1e-4, "mm 1024")) return 1;
  raw_job rm = {s->raw, 3};
  const int k = s->cfg.mm_k;
  sampler sm[3] = {{raw_sample, &rm, k}, {kd_sample, &dmm, k}, {kd_sample, &cmm, k}};
  double m[3];
  if (medians(s->cfg.reps, 3, sm, m)) return 1;
  double flops = 2.0 * MM_N * MM_N * MM_N;
  printf("clblast_mm_1024_gflops %.2f\n", flops / m[0] * 1e-9);
  printf("opencl_mm_1024_gflops %.2f\n", flops / m[1] * 1e-9);
  printf("opencl_mm_1024_ratio %.3f\n", m[0] / m[1]);
  printf("cpu_mm_1024_gflops %.2f\n", flops / m[2] * 1e-9);
  printf("opencl_speedup_mm_1024 %.3f\n", m[2] / m[1]);
  release_operands(s);
  return 0;
}

static int softmax_tril_figures(state *s) {
  const int64_t sm[2] = {SM_ROWS, SM_COLS}, tr[2] = {TRIL_N, TRIL_N};
  if (operand(2, sm, -1, &s->ca, &s->da)) return fail("softmax operand");
  kd_job dsm = {W_SOFTMAX, s->da, NULL, NULL, true}, csm = {W_SOFTMAX, s->ca, NULL, NULL, false};
  if (check(&dsm, &csm, 1e-5, "softmax 4096x1024")) return 1;
  const int k = s->cfg.mid_k;
  sampler ss[2] = {{kd_sample, &csm, k}, {kd_sample, &dsm, k}};
  double m[2];
  if (medians(s->cfg.reps, 2, ss, m)) return 1;
  printf("cpu_softmax_4096x1024_us %.1f\n", m[0] * 1e6);
  printf("opencl_softmax_4096x1024_us %.1f\n", m[1] * 1e6);
  printf("opencl_speedup_softmax_4096x1024 %.3f\n", m[0] / m[1]);
  release_operands(s);

  if (operand(2, tr, 1, &s->ca, &s->da)) return fail("tril operand");
  kd_job dtr = {W_TRIL, s->da, NULL, NULL, true}, ctr = {W_TRIL, s->ca, NULL, NULL, false};
  kd_op *op;
  if (kd_op_find("aten::tril", "", &op)) return fail("aten::tril");
  uint64_t before = kd_op_fallback_count(op, KD_KEY_PRIVATEUSE1);
  if (check(&dtr, &ctr, 0, "tril 64x64")) return 1;
  if (kd_op_fallback_count(op, KD_KEY_PRIVATEUSE1) != before + 1) {
    fprintf(stderr, "kd-bench opencl: tril on opencl did not run through the CPU fallback "
                    "(its fallback count went from %llu to %llu): pick another operator\n",
            (unsigned long long)before,
            (unsigned long long)kd_op_fallback_count(op, KD_KEY_PRIVATEUSE1));
    return 1;
  }
  const int t = s->cfg.tril_k;
  sampler st[2] = {{kd_sample, &ctr, t}, {kd_sample, &dtr, t}};
  if (medians(s->cfg.reps, 2, st, m)) return 1;
  printf("cpu_tril_64_us %.3f\n", m[0] * 1e6);
  printf("opencl_fallback_tril_64_us %.3f\n", m[1] * 1e6);
  printf("opencl_fallback_tril_64_ratio %.2f\n", m[1] / m[0]);
  release_operands(s);
  return 0;
}

/* The opencl backend: already registered (KD_BACKENDS) or loaded from path.
 * *plugin is what to unload (NULL when it was registered before). */
static int find_backend(const char *path, kd_plugin **plugin) {
  *plugin = NULL;
  const kd_backend *b = kd_backend_for_device(KD_DEVICE_PRIVATEUSE1);
  if (!b) {
    if (!path) {
      fprintf(stderr, "kd-bench opencl: no plugin path (give one, or set KD_BACKENDS)\n");
      return 1;
    }
    if (kd_backend_load(path, plugin)) return fail(path);
    b = kd_backend_for_device(KD_DEVICE_PRIVATEUSE1);
  }
  cl_iface = b ? kd_backend_iface_of(b) : NULL;
  if (!cl_iface || strcmp(cl_iface->name, "opencl")) {
    fprintf(stderr, "kd-bench opencl: the PrivateUse1 backend is %s, not opencl\n",
            cl_iface ? cl_iface->name : "missing");
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  config cfg = full_config;
  const char *path = NULL;
#ifdef KD_BENCH_OPENCL_PLUGIN
  path = KD_BENCH_OPENCL_PLUGIN;
#endif
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      cfg = quick_config;
    } else if (argv[i][0] != '-') {
      path = argv[i];
    } else {
      fprintf(stderr, "usage: kd-bench opencl [--quick] [PLUGIN]\n");
      return 2;
    }
  }
  state s = {.cfg = cfg};
  char err[512];
  int rc = kdb_raw_open(&s.raw, err, sizeof err);
  if (rc == 77) {
    printf("kd-bench opencl: skipped: %s\n", err);
    return 77;
  }
  if (rc) {
    fprintf(stderr, "kd-bench opencl: %s\n", err);
    return 1;
  }
  kd_plugin *plugin = NULL;
  if (kd_ops_open()) {
    rc = fail("kd_ops_open");
    goto done;
  }
  if ((rc = find_backend(path, &plugin))) goto done;
  kd_set_warning_handler(quiet, NULL); /* the fallback's first-use warning */
  rc = add_figures(&s);
  if (!rc) rc = mm_figures(&s);
  if (!rc) rc = softmax_tril_figures(&s);
  if (!rc) printf("device %s\n", kdb_raw_device_name(s.raw));
  release_operands(&s);
done:
  kdb_raw_close(s.raw);
  if (plugin && kd_backend_unload(plugin) && !rc) rc = fail("unload");
  kd_ops_close();
  return rc;
}
