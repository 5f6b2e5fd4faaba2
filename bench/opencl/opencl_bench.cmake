# kd-bench-opencl (`kd-bench opencl`): the OpenCL backend against a plain
# OpenCL program and CLBlast called directly, and against kdispatch's CPU
# kernels (docs/PERFORMANCE.md, "OpenCL on PoCL"). bench/CMakeLists.txt includes
# this file at the end of the top-level folder (the OpenCL backend's folder is
# added after bench/). Built when the plugin is (target kd_opencl); it links
# the SHARED libkdispatch and libkdops, as the plugin does, so that the plugin
# registers into its registry (kd-bench's static copy would be a second one).
set(KD_BENCH_OPENCL_DIR ${PROJECT_SOURCE_DIR}/bench/opencl)
if(TARGET kd_opencl)
  add_executable(kd-bench-opencl ${KD_BENCH_OPENCL_DIR}/opencl_bench.c
                 ${KD_BENCH_OPENCL_DIR}/opencl_raw.c)
  target_include_directories(kd-bench-opencl PRIVATE ${KD_BENCH_OPENCL_DIR}
                             ${PROJECT_SOURCE_DIR}/bench)
  target_compile_definitions(kd-bench-opencl PRIVATE CL_TARGET_OPENCL_VERSION=120
    "KD_BENCH_OPENCL_PLUGIN=\"$<TARGET_FILE:kd_opencl>\"")
  target_link_libraries(kd-bench-opencl PRIVATE kdops kdispatch ${KD_CLBLAST_TARGET}
                        OpenCL::OpenCL m)
  add_dependencies(kd-bench-opencl kd_opencl)
  add_dependencies(kd-bench kd-bench-opencl)
endif()

# The smoke test: `kd-bench opencl --quick` prints every figure (no timing is
# asserted); it skips (77) without an OpenCL platform or without the plugin.
if(KD_BUILD_TESTS)
  add_test(NAME bench_opencl_quick
           COMMAND sh ${KD_BENCH_OPENCL_DIR}/quick_test.sh $<TARGET_FILE:kd-bench> opencl --quick)
  # Label opencl and, under the sanitizers, the environment of the backend's
  # own tests (tests/opencl/CMakeLists.txt: PoCL's first-launch compilation
  # suppressed in tests/opencl/lsan.supp, found with the slow unwinder).
  set_tests_properties(bench_opencl_quick PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    LABELS opencl
    ENVIRONMENT "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/opencl/lsan.supp:print_suppressions=0;ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1")
endif()
