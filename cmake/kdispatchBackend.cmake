# kd_add_backend(): builds a backend plugin from its backend YAML (docs/CODEGEN.md,
# "Backends"; docs/GUIDE.md, "Generating a backend from YAML").
#
#   kd_add_backend(NAME fakegen YAML fakegen.yaml SOURCES device.c kernels.c
#                  [PREFIX fakegen_] [KEY PrivateUse1] [NAMESPACE fakegen]
#                  [SOURCE upstream.yaml] [NATIVE kdops.yaml] [TAGS tags.yaml]
#                  [TARGET target])
#
# runs kdgen --backend YAML --source SOURCE --native NATIVE into
# ${CMAKE_CURRENT_BINARY_DIR}/NAME_gen (NAME_functions.h: what the SOURCES must
# define; NAME_plugin.c: wrappers, registration, KD_PLUGIN; NAME_entries.txt:
# every entry and why it was or was not generated) and builds the MODULE
# library TARGET (default NAME; its file is libTARGET.so) from the SOURCES and
# NAME_plugin.c, linked to kdispatch::kdops and kdispatch::kdispatch, with hidden visibility (only kd_plugin_entry is
# exported). SOURCE and NATIVE default to libkdops' own native_functions.yaml
# (installed in share/kdispatch), so a backend of libkdops names only its YAML.
# The generated folder is on NAME's include path.
#
# The variables it reads: KD_KDGEN (the kdgen to run: the kdgen target in
# kdispatch's own build, kdispatch::kdgen from the package) and
# KD_NATIVE_FUNCTIONS_YAML (libkdops' YAML).
function(kd_add_backend)
  cmake_parse_arguments(KB "" "NAME;YAML;PREFIX;KEY;NAMESPACE;SOURCE;NATIVE;TAGS;TARGET"
                        "SOURCES" ${ARGN})
  if(NOT KB_NAME OR NOT KB_YAML)
    message(FATAL_ERROR "kd_add_backend: NAME and YAML are required")
  endif()
  if(KB_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kd_add_backend(${KB_NAME}): unexpected arguments: ${KB_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT KB_SOURCE)
    set(KB_SOURCE ${KD_NATIVE_FUNCTIONS_YAML})
  endif()
  if(NOT KB_NATIVE)
    set(KB_NATIVE ${KD_NATIVE_FUNCTIONS_YAML})
  endif()
  # kdgen runs in the source folder (below): the upstream YAMLs as absolute paths.
  get_filename_component(KB_SOURCE ${KB_SOURCE} ABSOLUTE)
  get_filename_component(KB_NATIVE ${KB_NATIVE} ABSOLUTE)
  if(NOT KB_PREFIX)
    set(KB_PREFIX ${KB_NAME}_)
  endif()
  if(NOT KB_TARGET)
    set(KB_TARGET ${KB_NAME})
  endif()
  get_filename_component(yaml ${KB_YAML} ABSOLUTE)
  # kdgen runs in the backend's source folder and is given the YAML relative
  # to it: the generated files (their header comments, each kernel's
  # "opencl.yaml:45 (Legacy, structured)" debug name) name no path of the
  # build machine.
  file(RELATIVE_PATH yaml_rel ${CMAKE_CURRENT_SOURCE_DIR} ${yaml})
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${KB_NAME}_gen)
  set(args --backend ${yaml_rel} --source ${KB_SOURCE} --native ${KB_NATIVE} --name ${KB_NAME}
           --prefix ${KB_PREFIX})
  if(KB_KEY)
    list(APPEND args --key ${KB_KEY})
  endif()
  if(KB_NAMESPACE)
    list(APPEND args --namespace ${KB_NAMESPACE})
  endif()
  if(KB_TAGS)
    list(APPEND args --tags ${KB_TAGS})
  endif()
  if(TARGET kdgen) # kdispatch's own build
    set(kdgen kdgen)
    set(kdgen_dep kdgen)
  else()
    if(NOT KD_KDGEN)
      set(KD_KDGEN kdispatch::kdgen)
    endif()
    set(kdgen ${KD_KDGEN})
    set(kdgen_dep $<TARGET_FILE:${KD_KDGEN}>)
  endif()
  # kdgen rewrites a file only when its bytes change; the stamp is what make compares.
  set(outs ${dir}/${KB_NAME}_plugin.c ${dir}/${KB_NAME}_functions.h ${dir}/${KB_NAME}_direct.h
           ${dir}/${KB_NAME}_entries.txt)
  add_custom_command(
    OUTPUT ${dir}/kdgen.stamp
    BYPRODUCTS ${outs}
    COMMAND ${kdgen} ${args} --out ${dir}
    COMMAND ${CMAKE_COMMAND} -E touch ${dir}/kdgen.stamp
    DEPENDS ${yaml} ${KB_SOURCE} ${KB_NATIVE} ${kdgen_dep}
    COMMENT "kdgen: generating the backend ${KB_NAME} from ${KB_YAML}"
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
    VERBATIM)
  add_custom_target(${KB_NAME}_gen DEPENDS ${dir}/kdgen.stamp)
  set_source_files_properties(${outs} PROPERTIES GENERATED TRUE)
  add_library(${KB_TARGET} MODULE ${KB_SOURCES} ${dir}/${KB_NAME}_plugin.c)
  add_dependencies(${KB_TARGET} ${KB_NAME}_gen)
  target_include_directories(${KB_TARGET} PRIVATE ${dir})
  set_target_properties(${KB_TARGET} PROPERTIES C_VISIBILITY_PRESET hidden PREFIX "lib")
  if(TARGET kdispatch::kdops)
    target_link_libraries(${KB_TARGET} PRIVATE kdispatch::kdops)
  endif()
  target_link_libraries(${KB_TARGET} PRIVATE kdispatch::kdispatch)
  # A linker that drops "unused" libraries must keep them: the plugin needs their symbols.
  target_link_options(${KB_TARGET} PRIVATE "LINKER:--no-as-needed")
endfunction()
