/*
 * opencl_test_util.h: what the OpenCL backend's tests share: the skip when
 * this machine has no OpenCL platform (or the build is one PoCL cannot run
 * under), and the device's fp16 / fp64 support as the plugin will see it.
 */
#ifndef KD_OPENCL_TEST_UTIL_H
#define KD_OPENCL_TEST_UTIL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The skip status CTest is told about (SKIP_RETURN_CODE). */
#define KDCL_TEST_SKIP 77

/* Returns 0 when an OpenCL platform with a device exists (the first one, or
 * the one whose name contains $KD_OPENCL_PLATFORM, as the plugin picks), and
 * sets *fp16 / *fp64 (may be NULL) from its first device's extensions.
 * Otherwise prints one line saying why and returns KDCL_TEST_SKIP. Takes and
 * keeps nothing (the ICD loader's own state stays loaded). */
static inline int kdcl_test_skip_without_platform(bool *fp16, bool *fp64) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(16, plats, &np);
  if (err != CL_SUCCESS || np == 0) {
    printf("SKIP: no OpenCL platform on this machine (clGetPlatformIDs: %d, %u platforms)\n",
           (int)err, (unsigned)np);
    return KDCL_TEST_SKIP;
  }
  const char *want = getenv("KD_OPENCL_PLATFORM");
  for (cl_uint i = 0; i < np && i < 16; i++) {
    char name[256] = "";
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (want && *want && !strstr(name, want)) continue;
    cl_device_id dev;
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, &nd) != CL_SUCCESS || nd == 0)
      continue;
    char ext[8192] = "";
    clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
    if (fp16) *fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    if (fp64) *fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    return 0;
  }
  printf("SKIP: no OpenCL platform%s%s has a device\n", want && *want ? " named like " : "",
         want && *want ? want : "");
  return KDCL_TEST_SKIP;
}

/* The start of a test's main that takes the plugin's path (argv[1]): sets
 * *plugin to it and returns -1 to go on; otherwise returns the exit status,
 * 2 (after a usage line) without the path or KDCL_TEST_SKIP without a
 * platform. fp16 / fp64 as kdcl_test_skip_without_platform. */
static inline int kdcl_test_main_start(int argc, char **argv, const char **plugin, bool *fp16,
                                       bool *fp64) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/libkd_opencl.so\n", argv[0]);
    return 2;
  }
  int skip = kdcl_test_skip_without_platform(fp16, fp64);
  if (skip) return skip;
  *plugin = argv[1];
  return -1;
}

#endif
