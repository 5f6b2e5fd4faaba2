# Tests that are not one cmocka file each.

# DLPack: kd/dlpack.h after the system's own <dlpack/dlpack.h> (libdlpack-dev,
# DLPack 0.6 on Debian), linked against the shared library; skipped (exit 77)
# where that header is not installed. test_core_dlpack covers the shipped
# header alone.
find_path(KD_SYSTEM_DLPACK_INCLUDE_DIR dlpack/dlpack.h)
add_executable(test_dlpack_system ${CMAKE_CURRENT_SOURCE_DIR}/dlpack_system/test_dlpack_system.c)
target_include_directories(test_dlpack_system PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
if(KD_SYSTEM_DLPACK_INCLUDE_DIR)
  target_include_directories(test_dlpack_system BEFORE PRIVATE ${KD_SYSTEM_DLPACK_INCLUDE_DIR})
else()
  target_compile_definitions(test_dlpack_system PRIVATE KD_TEST_NO_SYSTEM_DLPACK)
endif()
target_link_libraries(test_dlpack_system PRIVATE kdispatch PkgConfig::CMOCKA)
set_target_properties(test_dlpack_system PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME test_dlpack_system COMMAND test_dlpack_system)
set_tests_properties(test_dlpack_system PROPERTIES SKIP_RETURN_CODE 77)

# The shared library exports only kd_ functions: hidden visibility works.
add_test(NAME test_exports
  COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:kdispatch> -P ${CMAKE_CURRENT_SOURCE_DIR}/check_exports.cmake)

# Install to a scratch prefix, then build and run a consumer with
# find_package(kdispatch) (shared and static) and with pkg-config.
add_test(NAME test_install_consumer
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSRC_DIR=${CMAKE_CURRENT_SOURCE_DIR}/consumer
          -DWORK_DIR=${CMAKE_BINARY_DIR}/install-test -DC_COMPILER=${CMAKE_C_COMPILER}
          -DSANITIZE=${KD_SANITIZE}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/install_consumer.cmake)
set_tests_properties(test_install_consumer PROPERTIES TIMEOUT 300)
# The kernel-author kit installed: a device loop registered as a stub and
# reached by libkdops' meta and impl, built with find_package and pkg-config.
if(TARGET kdops)
  add_test(NAME test_install_kit
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSRC_DIR=${CMAKE_CURRENT_SOURCE_DIR}/kit_consumer
            -DWORK_DIR=${CMAKE_BINARY_DIR}/install-kit-test -DC_COMPILER=${CMAKE_C_COMPILER}
            -DSANITIZE=${KD_SANITIZE}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/install_kit.cmake)
  set_tests_properties(test_install_kit PROPERTIES TIMEOUT 600)
  add_test(NAME test_exports_kdops
    COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:kdops> -DKIND=kdops
            -P ${CMAKE_CURRENT_SOURCE_DIR}/check_exports.cmake)
endif()
# The check's failure paths: libraries exporting what it must reject, each
# failing with its message.
set(kd_bad_INTERNAL kdops "not public API: kdk__leak")
set(kd_bad_DOUBLED kdops "kd_add__Tensor, a name with a doubled underscore")
set(kd_bad_PLUGIN plugin "only kd_plugin_entry may be exported")
foreach(what INTERNAL DOUBLED PLUGIN)
  list(GET kd_bad_${what} 0 kind)
  list(GET kd_bad_${what} 1 msg)
  string(TOLOWER "${what}" lower)
  add_library(exports_bad_${lower} SHARED ${CMAKE_CURRENT_SOURCE_DIR}/exports_bad/exports_bad.c)
  target_compile_definitions(exports_bad_${lower} PRIVATE EXPORTS_BAD_${what})
  set_target_properties(exports_bad_${lower} PROPERTIES C_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/exports_bad)
  add_test(NAME test_exports_rejects_${lower}
    COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:exports_bad_${lower}> -DKIND=${kind}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/check_exports.cmake)
  set_tests_properties(test_exports_rejects_${lower} PROPERTIES PASS_REGULAR_EXPRESSION "${msg}")
endforeach()
# The OpenCL plugin exports its entry point only (kd_plugin_entry).
if(TARGET kd_opencl)
  add_test(NAME test_exports_opencl
    COMMAND ${CMAKE_COMMAND} -DLIB=$<TARGET_FILE:kd_opencl> -DKIND=plugin
            -P ${CMAKE_CURRENT_SOURCE_DIR}/check_exports.cmake)
endif()
add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/static_link ${CMAKE_CURRENT_BINARY_DIR}/static_link)

# The README's example program, built against the static library and run.
add_executable(example_twice ${PROJECT_SOURCE_DIR}/examples/twice.c)
target_link_libraries(example_twice PRIVATE kdispatch_static)
set_target_properties(example_twice PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME test_example_twice COMMAND example_twice)
set_tests_properties(test_example_twice PROPERTIES PASS_REGULAR_EXPRESSION "myops::twice\\(21\\) = 42")

# kdgen writes the same bytes every time and leaves unchanged files alone.
if(TARGET kdgen)
  add_test(NAME test_kdgen_determinism
    COMMAND ${CMAKE_COMMAND} -DKDGEN=$<TARGET_FILE:kdgen> -DYAML=${PROJECT_SOURCE_DIR}/ops/native_functions.yaml
            -DTAGS=${PROJECT_SOURCE_DIR}/ops/tags.yaml -DWORK=${CMAKE_BINARY_DIR}/kdgen-determinism
            -P ${CMAKE_CURRENT_SOURCE_DIR}/kdgen_determinism.cmake)
endif()

# The README's operator-library example, linked statically and run.
if(TARGET kdops_static)
  add_executable(example_ops ${PROJECT_SOURCE_DIR}/examples/ops.c)
  target_link_libraries(example_ops PRIVATE kdops_static)
  set_target_properties(example_ops PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME test_example_ops COMMAND example_ops)
  set_tests_properties(test_example_ops PROPERTIES PASS_REGULAR_EXPRESSION
    "add: float32 \\[2, 3\\], sum: 39, rows: \\[15, 24\\]\nmeta mm: \\[2, 2\\] on meta\nerror: .*mat1 and mat2 shapes cannot be multiplied \\(2x3 and 2x3\\)")
endif()

# The tour `make run` shows: its exact output (examples/tour.out).
if(TARGET kd AND TARGET kdops_static)
  add_test(NAME test_tour_output
    COMMAND ${CMAKE_COMMAND} -DKD=$<TARGET_FILE:kd> -DSRC=${PROJECT_SOURCE_DIR}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/tour_output.cmake)
endif()
