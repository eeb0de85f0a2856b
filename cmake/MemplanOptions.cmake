# Compiler settings shared by every memplan target: warnings, kept assertions, sanitizers.
include(GNUInstallDirs)

if(MEMPLAN_KEEP_ASSERTS)
  # Release keeps its optimisation level but not -DNDEBUG: our invariants stay checked.
  foreach(lang CXX CUDA)
    foreach(config RELEASE RELWITHDEBINFO MINSIZEREL)
      if(DEFINED CMAKE_${lang}_FLAGS_${config})
        string(REPLACE "-DNDEBUG" "" CMAKE_${lang}_FLAGS_${config} "${CMAKE_${lang}_FLAGS_${config}}")
      endif()
    endforeach()
  endforeach()
endif()

if(MEMPLAN_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
endif()

if(MEMPLAN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMPLAN_FUZZ needs Clang's libFuzzer (CMAKE_CXX_COMPILER=clang++), "
                        "not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Coverage feedback for the fuzzer in every target; the fuzz targets link libFuzzer's main.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
if(MEMPLAN_TSAN)
  # ThreadSanitizer cannot share a build with ASan, and does not see into CUDA kernels.
  if(MEMPLAN_SANITIZE)
    message(FATAL_ERROR "MEMPLAN_TSAN and MEMPLAN_SANITIZE cannot be combined: build them apart")
  endif()
  if(NOT MEMPLAN_CUDA STREQUAL "OFF")
    message(FATAL_ERROR "MEMPLAN_TSAN builds the CPU parts only: configure with -DMEMPLAN_CUDA=OFF")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
endif()

# memplan_defaults(target): warnings as the project wants them on its own code.
function(memplan_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wno-missing-field-initializers>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall --expt-relaxed-constexpr>)
endfunction()

# memplan_add_layer(NAME sources...): one static library per layer, memplan_NAME, known as
# memplan::NAME both in-tree (an alias) and installed (its export name), one find_package
# component each, and linked by the umbrella target. Dependencies between layers are declared by
# each layer's own CMakeLists.txt with target_link_libraries, so they are easy to audit.
# Every layer logs and formats through spdlog and fmt privately (src/core/log.hpp): they stay out
# of the users' compile flags, though a static library still hands its link dependencies on.
function(memplan_add_layer name)
  set(target memplan_${name})
  add_library(${target} STATIC ${ARGN})
  add_library(memplan::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PRIVATE fmt::fmt spdlog::spdlog)
  target_compile_features(${target} PUBLIC cxx_std_20)
  memplan_defaults(${target})
  set_property(GLOBAL APPEND PROPERTY MEMPLAN_LAYER_TARGETS ${target})
endfunction()
