cmake_minimum_required(VERSION 3.16)
# Compiles every ```c block of the Markdown files in DOCS (paths relative to
# SRC_DIR), so that the code the docs show compiles as shown (the test
# doc_snippets). The rule, by the line right before the opening ```c:
#
#   (no marker)                 the block must be a whole program (it has
#                               `main(`): compiled, linked against
#                               libkdispatch (and libkdops when it includes
#                               kd/ops.h or kdk/) and run; it must exit 0.
#   <!-- c: file [DECLS] -->    a fragment at file scope (declarations,
#                               functions, KD_LIBRARY blocks): compiled after
#                               the includes below and DECLS (declarations of
#                               what it uses).
#   <!-- c: body DECLS -->      a fragment of statements: compiled as the
#                               body of a function, after the includes below
#                               and DECLS (declarations of what it uses; its
#                               #include lines, and the block's, go to file
#                               scope).
#   <!-- c: skip REASON -->     not compiled; REASON says why (an excerpt of
#                               a type, a sketch with "..." in it).
#   <!-- snippet: PATH -->      quoted from PATH, which the build compiles
#                               (the test guide_snippets checks the quote).
#
# The includes of fragments: <stdio.h>, <stdlib.h>, <string.h>, <kd/kd.h>,
# and with libkdops <kd/ops.h> and <kdk/kdk.h> (a block that names kd/ops.h
# or kdk is not compiled when libkdops is not built). Fragments are compiled with
# the warnings of the build (-Werror) except unused variables and functions.
#
# Arguments: SRC_DIR, DOCS ("README.md|docs/GUIDE.md"), WORK_DIR, CC,
# INCLUDES ("dir|dir"), KD_LIB (libkdispatch's shared library), KDOPS_LIB
# (libkdops', empty without it), SANITIZE (KD_SANITIZE).
string(REPLACE "|" ";" docs "${DOCS}")
string(REPLACE "|" ";" includes "${INCLUDES}")
set(iflags)
foreach(d IN LISTS includes)
  if(d)
    list(APPEND iflags "-I${d}")
  endif()
endforeach()
set(cflags -std=c11 -Wall -Wextra -Wpedantic -Werror)
if(SANITIZE)
  list(APPEND cflags -fsanitize=${SANITIZE} -fno-omit-frame-pointer)
endif()
set(fragment_flags -Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-function
    -Wno-unused-parameter)
set(prelude "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n#include <kd/kd.h>\n")
if(KDOPS_LIB)
  string(APPEND prelude "#include <kd/ops.h>\n#include <kdk/kdk.h>\n")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(failures "")
set(compiled 0)
set(skipped 0)
foreach(doc IN LISTS docs)
  file(READ ${SRC_DIR}/${doc} text)
  set(n 0)
  set(line 1)
  string(MAKE_C_IDENTIFIER "${doc}" docid)
  while(TRUE)
    string(FIND "${text}" "```c\n" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR n "${n} + 1")
    # What comes before the fence: the fence's indentation and the line above.
    string(SUBSTRING "${text}" 0 ${at} before)
    string(FIND "${before}" "\n" fence_nl REVERSE)
    math(EXPR indent_at "${fence_nl} + 1")
    string(SUBSTRING "${before}" ${indent_at} -1 indent)
    if(NOT indent MATCHES "^[ ]*$")
      # "```c" inside a line (not a fence): skip past it.
      math(EXPR skip "${at} + 5")
      string(SUBSTRING "${text}" ${skip} -1 text)
      math(EXPR n "${n} - 1")
      continue()
    endif()
    set(above "")
    if(fence_nl GREATER 0)
      string(SUBSTRING "${before}" 0 ${fence_nl} upto)
      string(FIND "${upto}" "\n" above_nl REVERSE)
      math(EXPR above_at "${above_nl} + 1")
      string(SUBSTRING "${upto}" ${above_at} -1 above)
      string(STRIP "${above}" above)
    endif()
    string(REGEX MATCHALL "\n" nls "${before}")
    list(LENGTH nls nnl)
    math(EXPR line "${line} + ${nnl}")
    # The block: from the line after the fence to the closing fence.
    math(EXPR start "${at} + 5")
    string(SUBSTRING "${text}" ${start} -1 rest)
    string(FIND "${rest}" "\n${indent}```" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${doc}:${line}: a ```c block without its closing fence")
    endif()
    string(SUBSTRING "${rest}" 0 ${close} block)
    math(EXPR after "${close} + 1")
    string(SUBSTRING "${rest}" ${after} -1 text)
    string(REGEX MATCHALL "\n" nls "${block}")
    list(LENGTH nls nnl)
    math(EXPR line "${line} + ${nnl} + 2")
    math(EXPR block_line "${line} - ${nnl} - 1")
    if(indent)
      string(REPLACE "\n${indent}" "\n" block "${block}")
      string(LENGTH "${indent}" ilen)
      string(SUBSTRING "${block}" ${ilen} -1 block)
    endif()
    set(where "${doc}:${block_line}")
    set(src ${WORK_DIR}/${docid}_${n}.c)
    # The rule for this block.
    set(kind program)
    set(decls "")
    if(above MATCHES "^<!-- c: ([a-z]+)(.*) -->$")
      set(kind ${CMAKE_MATCH_1})
      string(STRIP "${CMAKE_MATCH_2}" decls)
    endif()
    if(above MATCHES "^<!-- snippet: ")
      # Quoted from a file of the tree, which the build compiles (the test
      # guide_snippets checks the quote).
      math(EXPR skipped "${skipped} + 1")
      continue()
    endif()
    if(kind STREQUAL "skip")
      if(decls STREQUAL "")
        string(APPEND failures "${where}: <!-- c: skip --> without a reason\n")
      endif()
      math(EXPR skipped "${skipped} + 1")
      continue()
    endif()
    set(needs_ops FALSE)
    if(block MATCHES "kd/ops\\.h|kdk" OR decls MATCHES "kdk")
      set(needs_ops TRUE)
    endif()
    if(needs_ops AND NOT KDOPS_LIB)
      message(STATUS "${where}: uses libkdops, which is not built: not compiled")
      math(EXPR skipped "${skipped} + 1")
      continue()
    endif()
    if(kind STREQUAL "program")
      if(NOT block MATCHES "int main\\(")
        string(APPEND failures "${where}: a fragment without a marker (<!-- c: file -->, "
               "<!-- c: body DECLS --> or <!-- c: skip REASON --> on the line before the fence)\n")
        continue()
      endif()
      file(WRITE ${src} "${block}\n")
      set(libs ${KD_LIB})
      if(needs_ops)
        set(libs ${KDOPS_LIB} ${KD_LIB})
      endif()
      set(rpaths)
      foreach(l IN LISTS libs)
        get_filename_component(d ${l} DIRECTORY)
        list(APPEND rpaths "-Wl,-rpath,${d}")
      endforeach()
      execute_process(COMMAND ${CC} ${cflags} ${iflags} ${src} -o ${src}.exe ${libs} ${rpaths}
                      -lpthread -lm
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(NOT rc EQUAL 0)
        string(APPEND failures "${where}: the program does not build:\n${out}\n")
        continue()
      endif()
      execute_process(COMMAND ${src}.exe RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(NOT rc EQUAL 0)
        string(APPEND failures "${where}: the program exits with ${rc}:\n${out}\n")
        continue()
      endif()
    elseif(kind STREQUAL "file" OR kind STREQUAL "body")
      if(kind STREQUAL "file")
        file(WRITE ${src} "${prelude}\n${decls}\n${block}\n")
      else()
        # The #include lines of the block and of DECLS go to file scope.
        string(REGEX MATCHALL "#include [<\"][^>\"]+[>\"]" incs "${decls}\n${block}")
        string(REGEX REPLACE "#include [<\"][^>\"]+[>\"]" "" block "${block}")
        string(REGEX REPLACE "#include [<\"][^>\"]+[>\"]" "" decls "${decls}")
        string(REPLACE ";" "\n" incs "${incs}")
        file(WRITE ${src} "${prelude}${incs}\n\nvoid doc_snippet(void);\nvoid doc_snippet(void) {\n${decls}\n${block}\n}\n")
      endif()
      execute_process(COMMAND ${CC} ${cflags} ${fragment_flags} ${iflags} -c ${src} -o ${src}.o
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(NOT rc EQUAL 0)
        string(APPEND failures "${where}: the fragment does not compile (${src}):\n${out}\n")
        continue()
      endif()
    else()
      string(APPEND failures "${where}: unknown marker '${above}'\n")
      continue()
    endif()
    math(EXPR compiled "${compiled} + 1")
  endwhile()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
if(compiled EQUAL 0)
  message(FATAL_ERROR "no ```c block of ${DOCS} was compiled")
endif()
message(STATUS "${compiled} C blocks of ${DOCS} compile (${skipped} skipped by their markers)")
