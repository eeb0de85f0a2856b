# Install rules and the CMake package config, so that a runtime can
#   find_package(memplan REQUIRED)  and  target_link_libraries(app PRIVATE memplan::memplan)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY include/memplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
get_property(MEMPLAN_LAYER_TARGETS GLOBAL PROPERTY MEMPLAN_LAYER_TARGETS)
install(TARGETS memplan ${MEMPLAN_LAYER_TARGETS}
        EXPORT memplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT memplanTargets NAMESPACE memplan:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memplan)

configure_package_config_file(cmake/memplanConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/memplanConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memplan)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/memplanConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/memplanConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/memplanConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memplan)
