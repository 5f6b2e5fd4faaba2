# Installs the build into WORK_DIR/prefix, then builds and runs the consumer
# with find_package (shared and static) and with pkg-config.
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
install_and_build("")
run(${WORK_DIR}/build/consumer_static)
message(STATUS "static: ${LAST_OUT}")
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${WORK_DIR}/build/consumer_shared)
message(STATUS "shared: ${LAST_OUT}")

# pkg-config, from wherever the .pc file was installed.
file(GLOB_RECURSE pcs ${prefix}/*/kdispatch.pc)
list(GET pcs 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} pkg-config --cflags --libs kdispatch)
string(STRIP "${LAST_OUT}" pkgflags)
separate_arguments(pkgflags UNIX_COMMAND "${pkgflags}")
run(${C_COMPILER} ${flags} -o ${WORK_DIR}/consumer_pc ${SRC_DIR}/main.c ${pkgflags})
get_filename_component(libdir ${pcdir} DIRECTORY)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/consumer_pc)
message(STATUS "pkg-config: ${LAST_OUT}")
