# Install rules and the CMake package config. Each layer is a component with its own targets file,
# so a user loads only what it links, and finds only the packages those layers need:
#   find_package(memplan REQUIRED)                              # everything, and memplan::memplan
#   find_package(memplan REQUIRED COMPONENTS plan runtime)      # no CUDA toolkit needed
# The targets are memplan::<layer> and memplan::memplan, the same names as in-tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(memplan_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/memplan)
install(DIRECTORY include/memplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/memplan/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/memplan)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/memplan)

# The component table for memplanConfig.cmake, read from the layers' link interfaces: the layers
# each one needs, and the packages to find for it (a CUDA:: target means the CUDA toolkit).
# Layers are listed lowest first, the order in which they must be loaded.
get_property(memplan_layers GLOBAL PROPERTY MEMPLAN_LAYER_TARGETS)
set(MEMPLAN_COMPONENT_TABLE "")
set(memplan_components "")
foreach(target IN LISTS memplan_layers)
  get_target_property(component ${target} EXPORT_NAME)
  list(APPEND memplan_components ${component})
  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  set(requires "")
  set(packages "")
  foreach(link IN LISTS links)
    if(link MATCHES "^(\\$<LINK_ONLY:)?memplan_([a-z0-9_]+)>?$")
      list(APPEND requires ${CMAKE_MATCH_2})
    elseif(link MATCHES "^(\\$<LINK_ONLY:)?([A-Za-z0-9_]+)::")
      set(package ${CMAKE_MATCH_2})
      if(package STREQUAL "CUDA")
        set(package CUDAToolkit)
      endif()
      list(APPEND packages ${package})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES requires)
  list(REMOVE_DUPLICATES packages)
  string(APPEND MEMPLAN_COMPONENT_TABLE
    "set(_memplan_${component}_requires ${requires})\n"
    "set(_memplan_${component}_packages ${packages})\n")

  install(TARGETS ${target} EXPORT memplan_${component}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT memplan_${component} NAMESPACE memplan:: FILE memplan-${component}-targets.cmake
          DESTINATION ${memplan_cmake_dir})
endforeach()
string(PREPEND MEMPLAN_COMPONENT_TABLE "set(_memplan_components ${memplan_components})\n")

install(TARGETS memplan EXPORT memplan_umbrella)
install(EXPORT memplan_umbrella NAMESPACE memplan:: FILE memplan-targets.cmake
        DESTINATION ${memplan_cmake_dir})

configure_package_config_file(cmake/memplanConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/memplanConfig.cmake
  INSTALL_DESTINATION ${memplan_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/memplanConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/memplanConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/memplanConfigVersion.cmake
        DESTINATION ${memplan_cmake_dir})
