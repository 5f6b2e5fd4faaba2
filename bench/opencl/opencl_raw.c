/*
 * opencl_raw.c: the plain OpenCL program and the direct CLBlast calls that
 * `kd-bench opencl` measures kdispatch's OpenCL backend against
 * (opencl_raw.h). What a careful author would write by hand: one context and
 * in-order queue, buffers made once, kernel arguments set once, launches
 * queued back to back and one clFinish at the end.
 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include "opencl_raw.h"

#include <CL/cl.h>
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

/* One program for the adds: the scalar kernel (what a first version
 * writes) and a float4 one (vector loads and stores; on PoCL's CPU device the
 * wider accesses save its work-item loop some overhead, when they help at
 * all: kd-bench prints both). */
static const char raw_source[] =
    "__kernel void raw_add(__global const float *a, __global const float *b,\n"
    "                      __global float *c) {\n"
    "  size_t i = get_global_id(0);\n"
    "  c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void raw_add4(__global const float4 *a, __global const float4 *b,\n"
    "                       __global float4 *c) {\n"
    "  size_t i = get_global_id(0);\n"
    "  c[i] = a[i] + b[i];\n"
    "}\n";

struct kdb_raw {
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx;
  cl_command_queue queue;
  cl_program program;
  cl_kernel add, add4, add1;
  cl_mem a, b, c;       /* the big add's operands */
  size_t n;             /* their element count */
  cl_mem a1, b1, c1;    /* the 1-element add's */
  cl_mem ma, mb, mc;    /* the matrices */
  size_t mn;            /* their order */
  char name[128];
  char err[512];
};

/* Records "call failed: CL error <code>" (and what) in r->err; returns -1. */
static int raw_fail(kdb_raw *r, const char *call, cl_int code) {
  snprintf(r->err, sizeof r->err, "raw OpenCL: %s failed: error %d", call, (int)code);
  return -1;
}

#define RAW_CHECK(r, err, call) \
  do { \
    if ((err) != CL_SUCCESS) return raw_fail((r), (call), (err)); \
  } while (0)

static int raw_pick(kdb_raw *r) {
  cl_uint np = 0;
  cl_int e = clGetPlatformIDs(0, NULL, &np);
  if (e != CL_SUCCESS || np == 0) {
    snprintf(r->err, sizeof r->err, "no OpenCL platform (clGetPlatformIDs: %d, %u platforms)",
             (int)e, np);
    return 77;
  }
  cl_platform_id *ps = calloc(np, sizeof *ps);
  if (!ps) return raw_fail(r, "calloc", CL_OUT_OF_HOST_MEMORY);
  e = clGetPlatformIDs(np, ps, NULL);
  const char *want = getenv("KD_OPENCL_PLATFORM");
  int rc = 77;
  snprintf(r->err, sizeof r->err, "no OpenCL device on any platform%s%s", want ? " matching " : "",
           want ? want : "");
  for (cl_uint i = 0; e == CL_SUCCESS && i < np; i++) {
    char pname[256] = "", vendor[256] = "";
    clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
    clGetPlatformInfo(ps[i], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
    if (want && *want && !strstr(pname, want) && !strstr(vendor, want)) continue;
    cl_uint nd = 0;
    if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &r->device, &nd) != CL_SUCCESS || nd == 0)
      continue;
    r->platform = ps[i];
    rc = 0;
    break;
  }
  free(ps);
  return rc;
}

int kdb_raw_open(kdb_raw **out, char *err, size_t n) {
  *out = NULL;
  kdb_raw *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, n, "raw OpenCL: out of memory");
    return -1;
  }
  int rc = raw_pick(r);
  cl_int e = CL_SUCCESS;
  if (!rc) {
    clGetDeviceInfo(r->device, CL_DEVICE_NAME, sizeof r->name - 1, r->name, NULL);
    r->ctx = clCreateContext(NULL, 1, &r->device, NULL, NULL, &e);
    if (e != CL_SUCCESS) rc = raw_fail(r, "clCreateContext", e);
  }
  if (!rc) {
    r->queue = clCreateCommandQueue(r->ctx, r->device, 0, &e);
    if (e != CL_SUCCESS) rc = raw_fail(r, "clCreateCommandQueue", e);
  }
  if (!rc) {
    const char *src = raw_source;
    r->program = clCreateProgramWithSource(r->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS) rc = raw_fail(r, "clCreateProgramWithSource", e);
  }
  if (!rc && (e = clBuildProgram(r->program, 1, &r->device, "", NULL, NULL)) != CL_SUCCESS)
    rc = raw_fail(r, "clBuildProgram", e);
  if (!rc) {
    r->add = clCreateKernel(r->program, "raw_add", &e);
    if (e == CL_SUCCESS) r->add4 = clCreateKernel(r->program, "raw_add4", &e);
    if (e == CL_SUCCESS) r->add1 = clCreateKernel(r->program, "raw_add", &e);
    if (e != CL_SUCCESS) rc = raw_fail(r, "clCreateKernel", e);
  }
  if (rc) {
    snprintf(err, n, "%s", r->err);
    kdb_raw_close(r);
    return rc;
  }
  *out = r;
  return 0;
}

static void release_mem(cl_mem *m) {
  if (*m) clReleaseMemObject(*m);
  *m = NULL;
}

void kdb_raw_close(kdb_raw *r) {
  if (!r) return;
  if (r->queue) clFinish(r->queue);
  cl_mem *mems[] = {&r->a, &r->b, &r->c, &r->a1, &r->b1, &r->c1, &r->ma, &r->mb, &r->mc};
  for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) release_mem(mems[i]);
  if (r->add) clReleaseKernel(r->add);
  if (r->add4) clReleaseKernel(r->add4);
  if (r->add1) clReleaseKernel(r->add1);
  if (r->program) clReleaseProgram(r->program);
  if (r->queue) clReleaseCommandQueue(r->queue);
  if (r->ctx) clReleaseContext(r->ctx);
  free(r);
}

const char *kdb_raw_error(const kdb_raw *r) { return r->err; }
const char *kdb_raw_device_name(const kdb_raw *r) { return r->name; }

/* A buffer of n floats, value + (i % 7) each, written (and waited for). */
static int raw_buffer(kdb_raw *r, size_t n, float value, cl_mem *out) {
  cl_int e;
  *out = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, n * sizeof(float), NULL, &e);
  RAW_CHECK(r, e, "clCreateBuffer");
  float *h = malloc(n * sizeof *h);
  if (!h) return raw_fail(r, "malloc", CL_OUT_OF_HOST_MEMORY);
  for (size_t i = 0; i < n; i++) h[i] = value + (float)(i % 7);
  e = clEnqueueWriteBuffer(r->queue, *out, CL_TRUE, 0, n * sizeof(float), h, 0, NULL, NULL);
  free(h);
  RAW_CHECK(r, e, "clEnqueueWriteBuffer");
  return 0;
}

static int raw_args3(kdb_raw *r, cl_kernel k, cl_mem a, cl_mem b, cl_mem c) {
  cl_int e = clSetKernelArg(k, 0, sizeof a, &a);
  if (e == CL_SUCCESS) e = clSetKernelArg(k, 1, sizeof b, &b);
  if (e == CL_SUCCESS) e = clSetKernelArg(k, 2, sizeof c, &c);
  RAW_CHECK(r, e, "clSetKernelArg");
  return 0;
}

int kdb_raw_add_setup(kdb_raw *r, size_t n) {
  release_mem(&r->a), release_mem(&r->b), release_mem(&r->c);
  r->n = n;
  if (n % 4) {
    snprintf(r->err, sizeof r->err, "raw OpenCL: add of %zu floats: not a multiple of 4", n);
    return -1;
  }
  if (raw_buffer(r, n, 1, &r->a) || raw_buffer(r, n, 2, &r->b) || raw_buffer(r, n, 0, &r->c))
    return -1;
  if (raw_args3(r, r->add, r->a, r->b, r->c) || raw_args3(r, r->add4, r->a, r->b, r->c))
    return -1;
  /* One of each, checked: a wrong kernel would be timed as a fast one. */
  double s;
  if (kdb_raw_add_run(r, 0, 1, &s) || kdb_raw_add_run(r, 1, 1, &s)) return -1;
  float got[3];
  cl_int e = clEnqueueReadBuffer(r->queue, r->c, CL_TRUE, (n - 3) * sizeof(float), sizeof got, got,
                                 0, NULL, NULL);
  RAW_CHECK(r, e, "clEnqueueReadBuffer");
  for (size_t i = 0; i < 3; i++) {
    float want = 3 + 2 * (float)((n - 3 + i) % 7);
    if (got[i] != want) {
      snprintf(r->err, sizeof r->err, "raw OpenCL: add: c[%zu] = %g, expected %g", n - 3 + i,
               (double)got[i], (double)want);
      return -1;
    }
  }
  return 0;
}

int kdb_raw_add_run(kdb_raw *r, int vec4, int k, double *secs) {
  size_t global = vec4 ? r->n / 4 : r->n;
  cl_kernel kern = vec4 ? r->add4 : r->add;
  uint64_t t0 = kd_bench_now_ns();
  for (int i = 0; i < k; i++) {
    cl_int e = clEnqueueNDRangeKernel(r->queue, kern, 1, NULL, &global, NULL, 0, NULL, NULL);
    RAW_CHECK(r, e, "clEnqueueNDRangeKernel");
  }
  cl_int e = clFinish(r->queue);
  RAW_CHECK(r, e, "clFinish");
  *secs = (double)(kd_bench_now_ns() - t0) * 1e-9 / k;
  return 0;
}

int kdb_raw_add1_run(kdb_raw *r, int calls, double *secs) {
  if (!r->a1) {
    if (raw_buffer(r, 1, 1, &r->a1) || raw_buffer(r, 1, 2, &r->b1) || raw_buffer(r, 1, 0, &r->c1) ||
        raw_args3(r, r->add1, r->a1, r->b1, r->c1))
      return -1;
  }
  const size_t global = 1;
  uint64_t t0 = kd_bench_now_ns();
  for (int i = 0; i < calls; i++) {
    cl_int e = clEnqueueNDRangeKernel(r->queue, r->add1, 1, NULL, &global, NULL, 0, NULL, NULL);
    RAW_CHECK(r, e, "clEnqueueNDRangeKernel");
  }
  cl_int e = clFinish(r->queue);
  RAW_CHECK(r, e, "clFinish");
  *secs = (double)(kd_bench_now_ns() - t0) * 1e-9 / calls;
  return 0;
}

static int raw_sgemm(kdb_raw *r) {
  size_t n = r->mn;
  CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo,
                                     n, n, n, 1.0f, r->ma, 0, n, r->mb, 0, n, 0.0f, r->mc, 0, n,
                                     &r->queue, NULL);
  if (s != CLBlastSuccess) {
    snprintf(r->err, sizeof r->err, "CLBlast: CLBlastSgemm(%zu) failed: status %d", n, (int)s);
    return -1;
  }
  return 0;
}

int kdb_raw_mm_setup(kdb_raw *r, size_t n) {
  release_mem(&r->ma), release_mem(&r->mb), release_mem(&r->mc);
  r->mn = n;
  if (raw_buffer(r, n * n, 1, &r->ma) || raw_buffer(r, n * n, 2, &r->mb) ||
      raw_buffer(r, n * n, 0, &r->mc))
    return -1;
  /* The warm-up builds CLBlast's kernels; check one element of it. */
  if (raw_sgemm(r)) return -1;
  float got;
  cl_int e = clEnqueueReadBuffer(r->queue, r->mc, CL_TRUE, 0, sizeof got, &got, 0, NULL, NULL);
  RAW_CHECK(r, e, "clEnqueueReadBuffer");
  double want = 0; /* row 0 of A times column 0 of B */
  for (size_t k = 0; k < n; k++) want += (1.0 + (double)(k % 7)) * (2.0 + (double)((k * n) % 7));
  if (got < want * (1 - 1e-4) || got > want * (1 + 1e-4)) {
    snprintf(r->err, sizeof r->err, "CLBlast: sgemm: C[0][0] = %g, expected %g", (double)got, want);
    return -1;
  }
  return 0;
}

int kdb_raw_mm_run(kdb_raw *r, int k, double *secs) {
  uint64_t t0 = kd_bench_now_ns();
  for (int i = 0; i < k; i++)
    if (raw_sgemm(r)) return -1;
  cl_int e = clFinish(r->queue);
  RAW_CHECK(r, e, "clFinish");
  *secs = (double)(kd_bench_now_ns() - t0) * 1e-9 / k;
  return 0;
}
