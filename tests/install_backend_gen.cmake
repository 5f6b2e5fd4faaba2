# Installs the build into WORK_DIR/prefix, builds the proof backend of
# examples/backend_gen against it with find_package(kdispatch) and
# kd_add_backend() (kdgen and libkdops' YAML from the package) as an
# out-of-tree user would, loads the plugin and compares every operator it
# covers with the CPU.
include(${CMAKE_CURRENT_LIST_DIR}/install_common.cmake)
install_and_build("-Wall -Wextra -Werror")
set(plugin ${WORK_DIR}/build/libfakegen.so)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${WORK_DIR}/build/fakegen_compare ${plugin})
message(STATUS "${LAST_OUT}")
