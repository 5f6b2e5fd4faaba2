/*
 * opencl_program.c: OpenCL programs built once per device and (source,
 * options) and cached, their kernels, launches, OpenCL error names and the
 * dtype -> OpenCL C type map (kdcl.h).
 *
 * The cache is one table for every device, under one mutex: a lookup is a
 * hash and a short chain walk. A miss builds the program with the mutex held
 * (a program is built once even when two threads ask for it together; a
 * thread that wants another, already cached kernel waits for that build,
 * which happens once per program and device). PoCL keeps its own disk cache
 * of the built binaries (~/.cache/pocl), so a later process pays less.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdcl.h"

/* ---- Errors ------------------------------------------------------------------- */

const char *kdcl_error_name(cl_int err) {
  switch (err) {
#define N(c) \
  case c:    \
    return #c
    N(CL_SUCCESS);
    N(CL_DEVICE_NOT_FOUND);
    N(CL_DEVICE_NOT_AVAILABLE);
    N(CL_COMPILER_NOT_AVAILABLE);
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    N(CL_OUT_OF_RESOURCES);
    N(CL_OUT_OF_HOST_MEMORY);
    N(CL_PROFILING_INFO_NOT_AVAILABLE);
    N(CL_MEM_COPY_OVERLAP);
    N(CL_IMAGE_FORMAT_MISMATCH);
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    N(CL_BUILD_PROGRAM_FAILURE);
    N(CL_MAP_FAILURE);
    N(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    N(CL_COMPILE_PROGRAM_FAILURE);
    N(CL_LINKER_NOT_AVAILABLE);
    N(CL_LINK_PROGRAM_FAILURE);
    N(CL_DEVICE_PARTITION_FAILED);
    N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    N(CL_INVALID_VALUE);
    N(CL_INVALID_DEVICE_TYPE);
    N(CL_INVALID_PLATFORM);
    N(CL_INVALID_DEVICE);
    N(CL_INVALID_CONTEXT);
    N(CL_INVALID_QUEUE_PROPERTIES);
    N(CL_INVALID_COMMAND_QUEUE);
    N(CL_INVALID_HOST_PTR);
    N(CL_INVALID_MEM_OBJECT);
    N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    N(CL_INVALID_IMAGE_SIZE);
    N(CL_INVALID_SAMPLER);
    N(CL_INVALID_BINARY);
    N(CL_INVALID_BUILD_OPTIONS);
    N(CL_INVALID_PROGRAM);
    N(CL_INVALID_PROGRAM_EXECUTABLE);
    N(CL_INVALID_KERNEL_NAME);
    N(CL_INVALID_KERNEL_DEFINITION);
    N(CL_INVALID_KERNEL);
    N(CL_INVALID_ARG_INDEX);
    N(CL_INVALID_ARG_VALUE);
    N(CL_INVALID_ARG_SIZE);
    N(CL_INVALID_KERNEL_ARGS);
    N(CL_INVALID_WORK_DIMENSION);
    N(CL_INVALID_WORK_GROUP_SIZE);
    N(CL_INVALID_WORK_ITEM_SIZE);
    N(CL_INVALID_GLOBAL_OFFSET);
    N(CL_INVALID_EVENT_WAIT_LIST);
    N(CL_INVALID_EVENT);
    N(CL_INVALID_OPERATION);
    N(CL_INVALID_GL_OBJECT);
    N(CL_INVALID_BUFFER_SIZE);
    N(CL_INVALID_MIP_LEVEL);
    N(CL_INVALID_GLOBAL_WORK_SIZE);
    N(CL_INVALID_PROPERTY);
    N(CL_INVALID_IMAGE_DESCRIPTOR);
    N(CL_INVALID_COMPILER_OPTIONS);
    N(CL_INVALID_LINKER_OPTIONS);
    N(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef N
  /* OpenCL 2.0 .. 3.0 (the 1.2 headers this plugin is built with do not name them). */
  case -69:
    return "CL_INVALID_PIPE_SIZE";
  case -70:
    return "CL_INVALID_DEVICE_QUEUE";
  case -71:
    return "CL_INVALID_SPEC_ID";
  case -72:
    return "CL_MAX_SIZE_RESTRICTION_EXCEEDED";
  /* The ICD loader's (cl_khr_icd). */
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "CL_UNKNOWN_ERROR";
  }
}

/* KD_ENOMEM for the out-of-memory codes, KD_EDEVICE for the rest. */
static kd_status status_of(cl_int err) {
  return (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
          err == CL_OUT_OF_HOST_MEMORY)
             ? KD_ENOMEM
             : KD_EDEVICE;
}

kd_status kdcl_fail(cl_int err, const char *call, const char *op, const kdcl_device *d) {
  kd_status st = status_of(err);
  if (d)
    return kd_set_error(st, "%s: %s failed on opencl:%d: %s (%d)", op ? op : "opencl",
                        call ? call : "an OpenCL call", kdcl_info(d)->index, kdcl_error_name(err),
                        (int)err);
  return kd_set_error(st, "%s: %s failed: %s (%d)", op ? op : "opencl",
                      call ? call : "an OpenCL call", kdcl_error_name(err), (int)err);
}

/* ---- Dtypes ------------------------------------------------------------------- */

const char *kdcl_ctype(const kdcl_device *d, kd_dtype dtype, const char *op) {
  const kdcl_device_info *info = kdcl_info(d);
  const char *why = NULL;
  switch (dtype) {
  case KD_BOOL:
  case KD_UINT8:
    return "uchar";
  case KD_INT8:
    return "char";
  case KD_INT16:
    return "short";
  case KD_INT32:
    return "int";
  case KD_INT64:
    return "long";
  case KD_FLOAT32:
    return "float";
  case KD_FLOAT64:
    if (info->fp64) return "double";
    why = "no cl_khr_fp64";
    break;
  case KD_FLOAT16:
    if (info->fp16) return "half";
    why = "no cl_khr_fp16";
    break;
  case KD_BFLOAT16:
    why = "OpenCL C has no bfloat16";
    break;
  case KD_COMPLEX64:
  case KD_COMPLEX128:
    why = "the OpenCL kernels have no complex types";
    break;
  default:
    why = "not a dtype";
    break;
  }
  kd_set_error(KD_ETYPE, "%s: dtype %s is not supported on opencl:%d (%s)", op ? op : "opencl",
               kd_dtype_name(dtype), info->index, why);
  return NULL;
}

/* Appends " (kernel \"name\"[, argument i])" to the thread's error message
 * (set by kdcl_fail); returns st. */
static kd_status about_kernel(kd_status st, const char *name, int arg) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", kd_last_error());
  if (arg >= 0) return kd_set_error(st, "%s (kernel \"%s\", argument %d)", msg, name, arg);
  return kd_set_error(st, "%s (kernel \"%s\")", msg, name);
}

/* ---- The program cache --------------------------------------------------------- */

typedef struct kdcl_program {
  kdcl_device *dev;
  const char *source; /* static: compared by address */
  char *options;      /* owned copy ("" for none) */
  cl_program program;
  struct kdcl_program *next;
} kdcl_program;

#define KDCL_ARGS_KEPT 24
#define KDCL_ARG_KEEP 16

struct kdcl_kernel {
  kdcl_program *program;
  char *name; /* owned copy */
  cl_kernel kernel;
  pthread_mutex_t lock; /* held from the first clSetKernelArg to the enqueue */
  /* The arguments last set (under lock), so that kdcl_launch skips
   * clSetKernelArg for one that did not change (PoCL copies each into a
   * fresh allocation): set[i] says whether last[i] holds argument i's
   * value (only values of at most KDCL_ARG_KEEP bytes are kept). */
  bool set[KDCL_ARGS_KEPT];
  unsigned char size[KDCL_ARGS_KEPT];
  unsigned char last[KDCL_ARGS_KEPT][KDCL_ARG_KEEP];
  uint64_t hash;
  kdcl_kernel *next; /* the bucket's chain */
};

#define KDCL_BUCKETS 256
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static kdcl_kernel *buckets[KDCL_BUCKETS];
static kdcl_program *programs;

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

static uint64_t key_hash(const kdcl_device *d, const char *source, const char *options,
                         const char *name) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, &d, sizeof d);
  h = mix(h, &source, sizeof source);
  h = mix(h, options, strlen(options) + 1);
  return mix(h, name, strlen(name) + 1);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

/* Builds (source, options) on d into *out (a new program, owned by the
 * caller). A build failure: KD_EDEVICE with the build log's start. */
static kd_status build(kdcl_device *d, const char *source, const char *options, cl_program *out,
                       const char *op) {
  cl_int err;
  cl_program prog = clCreateProgramWithSource(kdcl_context(d), 1, &source, NULL, &err);
  if (err != CL_SUCCESS) return kdcl_fail(err, "clCreateProgramWithSource", op, d);
  cl_device_id id = kdcl_device_id(d);
  err = clBuildProgram(prog, 1, &id, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[1536] = "";
    size_t n = 0;
    clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
    if (n >= sizeof log) n = sizeof log - 1;
    log[n] = 0;
    /* A log larger than the buffer gives CL_INVALID_VALUE and nothing: then
     * read it whole and keep its start. */
    if (!log[0] && clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) ==
                       CL_SUCCESS && n > 0) {
      char *all = malloc(n);
      if (all && clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, n, all, NULL) ==
                     CL_SUCCESS) {
        snprintf(log, sizeof log, "%s", all);
      }
      free(all);
    }
    clReleaseProgram(prog);
    for (char *e = log + strlen(log); e > log && (e[-1] == '\n' || e[-1] == ' '); e--) e[-1] = 0;
    return kd_set_error(status_of(err),
                        "%s: clBuildProgram failed on opencl:%d: %s (%d) with options \"%s\"; "
                        "build log:\n%s",
                        op ? op : "opencl", kdcl_info(d)->index, kdcl_error_name(err), (int)err,
                        options, log[0] ? log : "(empty)");
  }
  *out = prog;
  return KD_OK;
}

kd_status kdcl_kernel_get(kdcl_device *d, const char *source, const char *options,
                          const char *kernel_name, kdcl_kernel **out, const char *op) {
  if (out) *out = NULL;
  if (!d || !source || !kernel_name || !out)
    return kd_set_error(KD_EINVAL, "%s: kdcl_kernel_get: NULL device, source, kernel name or out",
                        op ? op : "opencl");
  if (!options) options = "";
  uint64_t h = key_hash(d, source, options, kernel_name);
  pthread_mutex_lock(&cache_lock);
  for (kdcl_kernel *k = buckets[h % KDCL_BUCKETS]; k; k = k->next)
    if (k->hash == h && k->program->dev == d && k->program->source == source &&
        !strcmp(k->program->options, options) && !strcmp(k->name, kernel_name)) {
      *out = k;
      pthread_mutex_unlock(&cache_lock);
      return KD_OK;
    }
  /* A miss: the program (built now if no kernel of it was asked for yet), then the kernel. */
  kd_status st = KD_OK;
  kdcl_program *p = programs;
  for (; p; p = p->next)
    if (p->dev == d && p->source == source && !strcmp(p->options, options)) break;
  if (!p) {
    p = calloc(1, sizeof *p);
    char *opts = dup_str(options);
    if (!p || !opts) {
      free(p);
      free(opts);
      pthread_mutex_unlock(&cache_lock);
      return kd_set_error(KD_ENOMEM, "%s: out of memory caching an OpenCL program", op);
    }
    if ((st = build(d, source, options, &p->program, op))) {
      free(p);
      free(opts);
      pthread_mutex_unlock(&cache_lock);
      return st;
    }
    p->dev = d;
    p->source = source;
    p->options = opts;
    p->next = programs;
    programs = p;
  }
  kdcl_kernel *k = calloc(1, sizeof *k);
  char *name = dup_str(kernel_name);
  if (!k || !name || pthread_mutex_init(&k->lock, NULL)) {
    free(k);
    free(name);
    pthread_mutex_unlock(&cache_lock);
    return kd_set_error(KD_ENOMEM, "%s: out of memory caching an OpenCL kernel", op);
  }
  cl_int err;
  k->kernel = clCreateKernel(p->program, kernel_name, &err);
  if (err != CL_SUCCESS) {
    pthread_mutex_destroy(&k->lock);
    free(k);
    free(name);
    pthread_mutex_unlock(&cache_lock);
    return about_kernel(kdcl_fail(err, "clCreateKernel", op, d), kernel_name, -1);
  }
  k->program = p;
  k->name = name;
  k->hash = h;
  k->next = buckets[h % KDCL_BUCKETS];
  buckets[h % KDCL_BUCKETS] = k;
  *out = k;
  pthread_mutex_unlock(&cache_lock);
  return KD_OK;
}

void kdcl_programs_release(kdcl_device *d) {
  kdcl_pointwise_forget(); /* its table points at the kernels freed below */
  pthread_mutex_lock(&cache_lock);
  for (int b = 0; b < KDCL_BUCKETS; b++) {
    kdcl_kernel **pk = &buckets[b];
    while (*pk) {
      kdcl_kernel *k = *pk;
      if (d && k->program->dev != d) {
        pk = &k->next;
        continue;
      }
      *pk = k->next;
      clReleaseKernel(k->kernel);
      pthread_mutex_destroy(&k->lock);
      free(k->name);
      free(k);
    }
  }
  kdcl_program **pp = &programs;
  while (*pp) {
    kdcl_program *p = *pp;
    if (d && p->dev != d) {
      pp = &p->next;
      continue;
    }
    *pp = p->next;
    clReleaseProgram(p->program);
    free(p->options);
    free(p);
  }
  pthread_mutex_unlock(&cache_lock);
}

/* ---- Launches -------------------------------------------------------------------- */

kd_status kdcl_launch(kdcl_device *d, kdcl_kernel *k, int nargs, const kdcl_arg *args,
                      cl_uint work_dim, const size_t *global, const size_t *local,
                      const char *op) {
  if (!d || !k || (nargs > 0 && !args) || !global || work_dim < 1 || work_dim > 3)
    return kd_set_error(KD_EINVAL,
                        "%s: kdcl_launch: NULL device, kernel, arguments or sizes, or work_dim %u "
                        "outside 1..3",
                        op ? op : "opencl", (unsigned)work_dim);
  for (cl_uint i = 0; i < work_dim; i++)
    if (global[i] == 0) return KD_OK;
  kd_status st = KD_OK;
  pthread_mutex_lock(&k->lock);
  for (int i = 0; i < nargs && !st; i++) {
    bool keep = i < KDCL_ARGS_KEPT && args[i].value && args[i].size <= KDCL_ARG_KEEP;
    if (keep && k->set[i] && k->size[i] == args[i].size && !memcmp(k->last[i], args[i].value, args[i].size))
      continue; /* unchanged since the last launch */
    if (i < KDCL_ARGS_KEPT) k->set[i] = false;
    cl_int err = clSetKernelArg(k->kernel, (cl_uint)i, args[i].size, args[i].value);
    if (err != CL_SUCCESS) {
      st = about_kernel(kdcl_fail(err, "clSetKernelArg", op, d), k->name, i);
    } else if (keep) {
      memcpy(k->last[i], args[i].value, args[i].size);
      k->size[i] = (unsigned char)args[i].size;
      k->set[i] = true;
    }
  }
  if (!st) {
    cl_int err = clEnqueueNDRangeKernel(kdcl_queue(d), k->kernel, work_dim, NULL, global, local, 0,
                                        NULL, NULL);
    if (err != CL_SUCCESS) {
      st = about_kernel(kdcl_fail(err, "clEnqueueNDRangeKernel", op, d), k->name, -1);
    }
  }
  pthread_mutex_unlock(&k->lock);
  return st;
}
