# Installs the build into WORK_DIR/prefix, builds examples/backend against it
# with find_package(kdispatch) as an out-of-tree user would, and runs the
# comparison test on the plugin it built.
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
install_and_build("-Wall -Wextra -Werror")
set(plugin ${WORK_DIR}/build/libkd_fakedev.so)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${WORK_DIR}/build/fakedev_compare ${plugin})
message(STATUS "${LAST_OUT}")
