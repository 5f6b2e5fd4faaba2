# Checks of libkdops' selective build (tests/selective/CMakeLists.txt), run
# with cmake -P:
#   -DMODE=run      both programs run add, mul, relu, sum, mm and agree with C
#   -DMODE=absent   kdops-five-selective --absent: neg gives KD_ENOKERNEL and
#                   add on float64 KD_EUNSUPPORTED; kdops-five-whole --absent
#                   runs both (so exits 1)
#   -DMODE=symbols  nm: kernels of unlisted operators and the loops of unlisted
#                   dtypes are in the whole program, not in the selective one;
#                   the five operators' kernels and float32 loops are in both
#   -DMODE=size     the selective program's text and file are smaller
cmake_minimum_required(VERSION 3.16)

function(run_rc out_var rc_var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  set(${out_var} "${out}${err}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

# 1 when nm lists `name` (a whole word) in the symbols of bin.
function(has_symbol syms name out_var)
  string(REGEX MATCH "[ \t]${name}(\\.[a-z0-9.]+)?\n" found "${syms}")
  if(found)
    set(${out_var} 1 PARENT_SCOPE)
  else()
    set(${out_var} 0 PARENT_SCOPE)
  endif()
endfunction()

if(MODE STREQUAL "run")
  foreach(bin ${WHOLE} ${SEL})
    run_rc(out rc ${bin})
    if(NOT rc EQUAL 0 OR NOT out MATCHES "add, mul, relu, sum, mm agree")
      message(FATAL_ERROR "${bin} failed (${rc}):\n${out}")
    endif()
  endforeach()
  file(READ ${ALLOW} allow)
  foreach(op add_Tensor mul_Tensor relu sum mm)
    if(NOT allow MATCHES "#define KD_ALLOW_aten__${op}__CPU KD_ALLOW_DTYPES")
      message(FATAL_ERROR "${ALLOW} does not list aten::${op} on CPU:\n${allow}")
    endif()
  endforeach()
  message(STATUS "both programs agree with C; the allow-list has the five operators")

elseif(MODE STREQUAL "absent")
  run_rc(out rc ${SEL} --absent)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "selective --absent (${rc}):\n${out}")
  endif()
  run_rc(wout wrc ${WHOLE} --absent)
  if(NOT wrc EQUAL 1 OR NOT wout MATCHES "neg .*got KD_OK")
    message(FATAL_ERROR "whole --absent should run neg and add on float64 (${wrc}):\n${wout}")
  endif()
  message(STATUS "selective:\n${out}")

elseif(MODE STREQUAL "symbols")
  execute_process(COMMAND ${NM} ${WHOLE} OUTPUT_VARIABLE whole RESULT_VARIABLE rc1)
  execute_process(COMMAND ${NM} ${SEL} OUTPUT_VARIABLE sel RESULT_VARIABLE rc2)
  if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
    message(FATAL_ERROR "nm failed")
  endif()
  # in both: the five operators' kernels and their float32 loops
  set(kept kdk_native_add_out_cpu kdk_native_relu kdk_native_mm_cpu kdk__s_CPU_mul_Tensor
      add_f32 mul_f32 relu_f32)
  # only in the whole program: other operators' kernels and loops, other
  # dtypes' loops of the five
  set(gone kdk_native_neg_out kdk_native_exp_out kdk_native_div_out_cpu kdk_native_addmm_cpu
      kdk_native_softmax_out kdk_native_bitwise_and_Scalar kdk_native_cat
      divt_f32 atan2_f32 exp_f32 add_f64 add_i64 add_c64 mul_f64 mul_i32 relu_f64 relu_i64)
  foreach(s ${kept})
    has_symbol("${whole}" ${s} w)
    has_symbol("${sel}" ${s} v)
    if(NOT w OR NOT v)
      message(FATAL_ERROR "${s} should be in both programs (whole: ${w}, selective: ${v})")
    endif()
  endforeach()
  foreach(s ${gone})
    has_symbol("${whole}" ${s} w)
    has_symbol("${sel}" ${s} v)
    if(NOT w OR v)
      message(FATAL_ERROR "${s} should be in the whole program only (whole: ${w}, selective: ${v})")
    endif()
  endforeach()
  message(STATUS "unlisted kernels and dtype loops are left out")

elseif(MODE STREQUAL "size")
  foreach(v WHOLE SEL)
    execute_process(COMMAND ${SIZE} ${${v}} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "\n[ \t]*([0-9]+)[ \t]+([0-9]+)[ \t]+([0-9]+)")
      message(FATAL_ERROR "size ${${v}} failed:\n${out}")
    endif()
    set(text_${v} ${CMAKE_MATCH_1})
    file(SIZE ${${v}} file_${v})
  endforeach()
  message(STATUS "text: whole ${text_WHOLE}, selective ${text_SEL}; file: whole ${file_WHOLE}, selective ${file_SEL}")
  if(NOT text_SEL LESS text_WHOLE OR NOT file_SEL LESS file_WHOLE)
    message(FATAL_ERROR "the selective program is not smaller")
  endif()
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
