# The tour program's exact output: `kd run examples/tour.kd` must print
# examples/tour.out byte for byte (the README shows it) and exit 0.
# Run with -DKD=path/to/kd -DSRC=source dir.
execute_process(COMMAND ${KD} run ${SRC}/examples/tour.kd
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kd run examples/tour.kd exited ${rc}:\n${err}")
endif()
file(READ ${SRC}/examples/tour.out want)
if(NOT out STREQUAL want)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/tour.got "${out}")
  message(FATAL_ERROR "the tour's output differs from examples/tour.out; got (also in tour.got):\n${out}")
endif()
