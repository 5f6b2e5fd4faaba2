include(CMakePackageConfigHelpers)

install(TARGETS kdispatch kdispatch_static EXPORT kdispatchTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# kd/ (libkdispatch, with kd/detail/: the ABI-only parts its inline
# functions need) and kdk/ (the kernel-author kit: libkdops', but for
# kdk/view.h, which is libkdispatch's).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kd ${PROJECT_SOURCE_DIR}/include/kdk
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The operator library and its generated public headers (kd/ops_all.h, kd/ops/).
if(TARGET kdops)
  install(TARGETS kdops kdops_static EXPORT kdispatchTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${CMAKE_BINARY_DIR}/gen/include/kd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  # The kit's generated kdk/native.h and kdk/native/ headers.
  install(DIRECTORY ${CMAKE_BINARY_DIR}/gen/include/kdk DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  # libkdops' operators, for backends' code generation (kdgen --native, --tags).
  install(FILES ${PROJECT_SOURCE_DIR}/ops/native_functions.yaml ${PROJECT_SOURCE_DIR}/ops/tags.yaml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/kdispatch)
endif()
if(KD_BUILD_TOOLS)
  install(TARGETS kd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# kdgen and kd_add_backend() (cmake/kdispatchBackend.cmake), for backends built
# out of tree from their YAML: kdispatch::kdgen in the package.
if(TARGET kdgen)
  install(TARGETS kdgen EXPORT kdispatchTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/cmake/kdispatchBackend.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kdispatch)

install(EXPORT kdispatchTargets NAMESPACE kdispatch::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kdispatch)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kdispatchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kdispatchConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kdispatch
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kdispatchConfigVersion.cmake
  COMPATIBILITY SameMajorVersion) # kd/version.h: a newer minor only appends
install(FILES ${PROJECT_BINARY_DIR}/kdispatchConfig.cmake
              ${PROJECT_BINARY_DIR}/kdispatchConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kdispatch)

# The .pc file finds its prefix relative to itself, so an install can move.
file(RELATIVE_PATH KD_PC_TO_PREFIX
  ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" KD_PC_TO_PREFIX "${KD_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kdispatch.pc.in
  ${PROJECT_BINARY_DIR}/kdispatch.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kdispatch.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET kdops)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/kdops.pc.in ${PROJECT_BINARY_DIR}/kdops.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/kdops.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
