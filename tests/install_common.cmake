# Shared by the install tests (cmake -P): run() and the first steps of each,
# installing the build into WORK_DIR/prefix and configuring the project at
# SRC_DIR against it, as a user outside the tree would.

# Runs a command; a failure stops the script with its output. LAST_OUT: stdout.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(LAST_OUT "${out}" PARENT_SCOPE)
endfunction()

# Installs into ${prefix} (set here), configures SRC_DIR into WORK_DIR/build with
# C flags `cflags` (plus -fsanitize=SANITIZE when set, also in ${flags}), builds it.
macro(install_and_build cflags)
  set(prefix ${WORK_DIR}/prefix)
  file(REMOVE_RECURSE ${WORK_DIR})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  set(flags "")
  if(SANITIZE)
    set(flags "-fsanitize=${SANITIZE}")
  endif()
  run(${CMAKE_COMMAND} -S ${SRC_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_C_COMPILER=${C_COMPILER} "-DCMAKE_C_FLAGS=${cflags} ${flags}"
      "-DCMAKE_EXE_LINKER_FLAGS=${flags}" "-DCMAKE_MODULE_LINKER_FLAGS=${flags}")
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
endmacro()
