# Fails when a shared library exports a symbol outside its public tiers
# (docs/ARCHITECTURE.md, names), so that hidden visibility and the export
# macros are checked on every build. KIND selects the library:
#   (none)  libkdispatch: public kd_ names, and the inline typed call's three
#           ABI symbols (kd/dispatch.h, kd__call_unboxed_inline), which code
#           built against the headers uses; nothing else of kd__.
#   kdops   libkdops: public kd_ names (kd_ops_open, the operators' entry
#           points and direct calls) and kdk_ names (the kernel-author kit);
#           nothing of kd__ or kdk__, and no doubled underscore in a
#           generated name (docs/CODEGEN.md, "Names": kd_internal_softmax,
#           kd_add_Tensor_).
#   plugin  a backend plugin (libkd_opencl.so): its entry point
#           kd_plugin_entry, nothing else.

# The defined dynamic symbols of ${LIB} that are code or data, in `out`.
function(kd_exported_symbols out)
  execute_process(COMMAND nm -D --defined-only ${LIB} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${LIB}")
  endif()
  string(REPLACE "\n" ";" lines "${syms}")
  set(result "")
  foreach(line ${lines})
    string(REGEX MATCH "[^ ]+$" sym "${line}")
    string(REGEX MATCH " [TDBR] " kind "${line}")
    if(kind STREQUAL "" OR sym STREQUAL "")
      continue()
    endif()
    if(sym MATCHES "^(_init|_fini|_edata|_end|__bss_start)$" OR sym MATCHES "^__odr_asan[.]")
      continue() # the linker's, and AddressSanitizer's one-definition markers of exported data
    endif()
    list(APPEND result ${sym})
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

kd_exported_symbols(syms)

if(KIND STREQUAL "plugin")
  if(NOT syms STREQUAL "kd_plugin_entry")
    message(FATAL_ERROR "the plugin ${LIB} exports '${syms}'; only kd_plugin_entry may be exported")
  endif()
  message(STATUS "plugin: kd_plugin_entry exported, nothing else")
  return()
endif()

set(nkd 0)
set(nkdk 0)
set(abi "")
foreach(sym ${syms})
  if(KIND STREQUAL "kdops")
    if(sym MATCHES "^kdk_" AND NOT sym MATCHES "^kdk__")
      math(EXPR nkdk "${nkdk} + 1")
    elseif(sym MATCHES "^kd_" AND NOT sym MATCHES "^kd__")
      math(EXPR nkd "${nkd} + 1")
    else()
      message(FATAL_ERROR "libkdops exports a symbol that is not public API: ${sym}")
    endif()
    if(sym MATCHES "^kdk?_.*__")
      message(FATAL_ERROR "libkdops exports ${sym}, a name with a doubled underscore "
                          "(docs/CODEGEN.md, \"Names\")")
    endif()
  elseif(sym MATCHES "^(kd__tls_reader|kd__global_epoch|kd__call_unboxed_in_section)$")
    list(APPEND abi ${sym})
  elseif(sym MATCHES "^kd_" AND NOT sym MATCHES "^kd__")
    math(EXPR nkd "${nkd} + 1")
  else()
    message(FATAL_ERROR "exported symbol that is not public API: ${sym}")
  endif()
endforeach()

if(KIND STREQUAL "kdops")
  foreach(need kdk_iter_build kdk_structured_set_output kdk_stub_register_device
               kdk_stub_add_stub kdk_meta_add_Tensor kdk_native_add_out_cpu kdk_parallel_for
               kd_ops_open kd_add_Tensor kd_add_Tensor_ kd_redispatch_add_Tensor_
               kd_internal_softmax kd_cpu_internal_softmax)
    list(FIND syms ${need} at)
    if(at LESS 0)
      message(FATAL_ERROR "libkdops does not export ${need}")
    endif()
  endforeach()
  message(STATUS "libkdops: ${nkd} kd_ and ${nkdk} kdk_ symbols exported, nothing else")
  return()
endif()

list(LENGTH abi nabi)
if(NOT nabi EQUAL 3)
  message(FATAL_ERROR "the inline call's three ABI symbols are not all exported: ${abi}")
endif()
if(nkd LESS 50)
  message(FATAL_ERROR "only ${nkd} kd_ symbols exported: is KD_API missing?")
endif()
message(STATUS "${nkd} public symbols exported, all kd_")
