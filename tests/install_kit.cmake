# Installs the build into WORK_DIR/prefix, then builds and runs the kit
# consumer (tests/kit_consumer: an iterator loop registered as a device stub,
# reached by libkdops' meta and impl) with find_package (kdops shared and
# static) and with pkg-config (kdops, shared and --static).
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
install_and_build("-Wall -Wextra -Wpedantic -Werror")
run(${WORK_DIR}/build/kit_static)
message(STATUS "static: ${LAST_OUT}")
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${WORK_DIR}/build/kit_shared)
message(STATUS "shared: ${LAST_OUT}")

# The YAML files backends generate from.
foreach(f native_functions.yaml tags.yaml)
  file(GLOB_RECURSE found ${prefix}/share/kdispatch/${f})
  if(NOT found)
    message(FATAL_ERROR "${f} is not installed in share/kdispatch")
  endif()
endforeach()

file(GLOB_RECURSE pcs ${prefix}/*/kdops.pc)
list(GET pcs 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
get_filename_component(libdir ${pcdir} DIRECTORY)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} pkg-config --variable=native_functions kdops)
string(STRIP "${LAST_OUT}" yaml)
if(NOT EXISTS "${yaml}")
  message(FATAL_ERROR "kdops.pc's native_functions (${yaml}) does not exist")
endif()
foreach(mode shared static)
  set(pcargs --cflags --libs kdops)
  set(ldflags "")
  if(mode STREQUAL "static")
    set(pcargs --static --cflags --libs kdops)
    # the archives instead of -lkdops -lkdispatch (which would also load the
    # shared libraries); the rest of --static's flags are the private ones
    set(ldflags ${libdir}/libkdops.a ${libdir}/libkdispatch.a)
  endif()
  run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} pkg-config ${pcargs})
  string(STRIP "${LAST_OUT}" pkgflags)
  separate_arguments(pkgflags UNIX_COMMAND "${pkgflags}")
  if(mode STREQUAL "static")
    list(REMOVE_ITEM pkgflags -lkdops -lkdispatch)
  endif()
  run(${C_COMPILER} ${flags} -std=c11 -Wall -Wextra -Wpedantic -Werror -o ${WORK_DIR}/kit_pc_${mode}
      ${SRC_DIR}/main.c ${ldflags} ${pkgflags})
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/kit_pc_${mode})
  message(STATUS "pkg-config ${mode}: ${LAST_OUT}")
endforeach()
