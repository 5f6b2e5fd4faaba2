# A program's exact output: runs PROG and compares its standard output with
# the file WANT byte for byte; it must exit 0. On a difference the output is
# written to GOT and shown. Run with -DPROG=... -DWANT=... -DGOT=... -P.
execute_process(COMMAND ${PROG} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROG} exited ${rc}:\n${out}\n${err}")
endif()
file(READ ${WANT} want)
if(NOT out STREQUAL want)
  file(WRITE ${GOT} "${out}")
  message(FATAL_ERROR "the output of ${PROG} differs from ${WANT}; got (also in ${GOT}):\n${out}")
endif()
