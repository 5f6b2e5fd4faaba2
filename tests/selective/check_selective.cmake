# Checks of the selective-build example, run with cmake -P (see CMakeLists.txt).
#   -DMODE=run         selective-full and selective-min print the same, expected results
#   -DMODE=probe       selective-min: an unlisted operator and an unlisted dtype of a listed
#                      one fail with KD_ENOKERNEL; selective-full runs them
#   -DMODE=symbols     nm: the unlisted kernels are in selective-full, not in selective-min
#   -DMODE=allow_list  allow.h lists exactly the five operators, and kd trace writes the
#                      same bytes again
#   -DMODE=macro_symbols  nm: test_selective_macros (-O0) holds no *_dropped kernel
cmake_minimum_required(VERSION 3.16)

function(run_checked out_var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${rc}):\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# The symbols nm lists for a program (one name per line).
function(symbols_of bin out_var)
  run_checked(out ${NM} ${bin})
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_symbol syms name present what)
  string(REGEX MATCH "[ \t]${name}\n" found "${syms}")
  if(present AND NOT found)
    message(FATAL_ERROR "${what}: symbol ${name} is missing")
  elseif(NOT present AND found)
    message(FATAL_ERROR "${what}: symbol ${name} is present")
  endif()
endfunction()

set(expected_output "a = sel::add(x, y) = [0.5, 4.5, 1, -2.5] (float32)
b = sel::mul(a, y) = [1, 18, -1, -1.25] (float32)
c = sel::relu(b) = [1, 18, 0, 0] (float32)
sel::exp(z) = [1, 2.71828, 0.367879, 7.38906] (float32)
sel::sum(c) = 19 (float32)
sel::sum(n) = 10 (int64)
")

# The operators main.c calls, and those it does not.
set(used add mul relu exp sum)
set(unused neg abs square log sqrt sin cos tanh sigmoid sub div maximum minimum amax mean)

if(MODE STREQUAL "run")
  foreach(bin ${FULL} ${MIN})
    run_checked(out ${bin})
    if(NOT out STREQUAL expected_output)
      message(FATAL_ERROR "${bin} printed:\n${out}\nexpected:\n${expected_output}")
    endif()
  endforeach()
  message(STATUS "both programs print the expected results")

elseif(MODE STREQUAL "probe")
  # program|operator|dtype|expected output (pieces joined by &&)|expected exit status
  set(cases
    "${MIN}|add|float32|sel::add float32: ok|0"
    "${MIN}|sum|int64|sel::sum int64: ok|0"
    "${MIN}|cos|float32|sel::cos float32: KD_ENOKERNEL: Could not run 'sel::cos' with arguments from the 'CPU' backend|3"
    "${MIN}|maximum|int64|sel::maximum int64: KD_ENOKERNEL: Could not run 'sel::maximum'|3"
    "${MIN}|add|float64|sel::add float64: KD_ENOKERNEL: kernel 'sel::add' has no CPU kernel for dtype float64 (layout strided)&&registered: (CPU, ALL_LAYOUT, [float32])|3"
    "${MIN}|sum|float64|sel::sum float64: KD_ENOKERNEL: kernel 'sel::sum' has no CPU kernel for dtype float64 (layout strided)&&registered: (CPU, ALL_LAYOUT, [int64, float32])|3"
    "${FULL}|cos|float32|sel::cos float32: ok|0"
    "${FULL}|maximum|int64|sel::maximum int64: ok|0"
    "${FULL}|add|float64|sel::add float64: ok|0")
  foreach(case ${cases})
    # (not a list: the expected text holds brackets, which CMake lists treat specially)
    if(NOT case MATCHES "^([^|]*)\\|([^|]*)\\|([^|]*)\\|([^|]*)\\|([0-9]+)$")
      message(FATAL_ERROR "bad case ${case}")
    endif()
    set(bin "${CMAKE_MATCH_1}")
    set(op "${CMAKE_MATCH_2}")
    set(dtype "${CMAKE_MATCH_3}")
    set(want "${CMAKE_MATCH_4}")
    set(want_rc "${CMAKE_MATCH_5}")
    execute_process(COMMAND ${bin} --probe ${op} ${dtype} OUTPUT_VARIABLE out ERROR_VARIABLE err
                    RESULT_VARIABLE rc)
    string(REPLACE "&&" ";" pieces "${want}")
    set(missing FALSE)
    foreach(piece IN LISTS pieces)
      string(FIND "${out}" "${piece}" at)
      if(at EQUAL -1)
        set(missing TRUE)
      endif()
    endforeach()
    if(NOT rc EQUAL want_rc OR missing)
      message(FATAL_ERROR "${bin} --probe ${op} ${dtype}: exit ${rc}, printed:\n${out}${err}\n"
                          "expected exit ${want_rc} and:\n${want}")
    endif()
  endforeach()
  message(STATUS "probes as expected")

elseif(MODE STREQUAL "symbols")
  symbols_of(${FULL} full_syms)
  symbols_of(${MIN} min_syms)
  foreach(op ${used})
    expect_symbol("${full_syms}" sel_${op}_cpu TRUE "selective-full")
    expect_symbol("${min_syms}" sel_${op}_cpu TRUE "selective-min")
  endforeach()
  foreach(op ${unused})
    expect_symbol("${full_syms}" sel_${op}_cpu TRUE "selective-full")
    expect_symbol("${min_syms}" sel_${op}_cpu FALSE "selective-min")
    # The descriptor stays (KD_USE_LIBRARY would still link).
    expect_symbol("${min_syms}" kd_library_kernel_sel_${op}_CPU TRUE "selective-min")
  endforeach()
  message(STATUS "selective-min holds the kernels of ${used} only")

elseif(MODE STREQUAL "allow_list")
  file(READ ${ALLOW} text)
  string(REGEX MATCHALL "#define KD_ALLOW_[A-Za-z0-9_]+ KD_ALLOW_DTYPES\\(0x[0-9a-f]+u\\)" defs
         "${text}")
  set(expected_defs
    "#define KD_ALLOW_sel__add KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__add__CPU KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__exp KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__exp__CPU KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__mul KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__mul__CPU KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__relu KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__relu__CPU KD_ALLOW_DTYPES(0x00000100u)"
    "#define KD_ALLOW_sel__sum KD_ALLOW_DTYPES(0x00000120u)"
    "#define KD_ALLOW_sel__sum__CPU KD_ALLOW_DTYPES(0x00000120u)")
  if(NOT defs STREQUAL expected_defs)
    message(FATAL_ERROR "allow.h defines:\n${defs}\nexpected:\n${expected_defs}\n\n${text}")
  endif()
  foreach(needle "#define KD_SELECTIVE_BUILD 1"
                 "Generated by `kd trace` from: ${FULL}\n"
                 "/* sel::sum CPU [int64, float32] */")
    string(FIND "${text}" "${needle}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "allow.h lacks \"${needle}\":\n${text}")
    endif()
  endforeach()
  # Deterministic: the same program traced again gives the same bytes.
  set(again ${WORK_DIR}/allow-again.h)
  file(REMOVE ${again})
  run_checked(out ${KD} trace -o ${again} -- ${FULL})
  file(READ ${again} text_again)
  file(REMOVE ${again})
  if(NOT text_again STREQUAL text)
    message(FATAL_ERROR "kd trace wrote different bytes the second time:\n${text_again}")
  endif()
  message(STATUS "allow.h as expected, and reproducible")

elseif(MODE STREQUAL "macro_symbols")
  symbols_of(${BIN} syms)
  foreach(name sm_neg_meta_dropped sm_abs_int_dropped sm_sq_cpu_dropped sm_sub_cpu_dropped
               sm_thrice_dropped sm_mul_scalar_dropped sm_mul_plain_dropped)
    expect_symbol("${syms}" ${name} FALSE "test_selective_macros")
  endforeach()
  foreach(name sm_neg_int sm_add_cpu_kept sm_twice_kept sm_mul_tensor_kept
               kd_library_kernel_sm_sq_CPU kd_library_kernel_sm_neg_META
               kd_library_kernel_sm_mul_Scalar_CPU)
    expect_symbol("${syms}" ${name} TRUE "test_selective_macros")
  endforeach()
  message(STATUS "test_selective_macros holds no unlisted kernel")

else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
