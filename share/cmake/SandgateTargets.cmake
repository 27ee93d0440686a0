# Per-target build settings shared by every part: warnings, sanitizers.
# Nothing here changes directory-scope flags.

function(sandgate_target_defaults target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wold-style-cast -Woverloaded-virtual -Wimplicit-fallthrough)
  target_compile_features(${target} PUBLIC cxx_std_20)
  if(SANDGATE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# A test executable: GoogleTest main, discovered by CTest.
function(sandgate_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  sandgate_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBRARIES} GTest::gtest GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()

# Everything a running gateway needs, without tests: share/dev/start builds
# this. Product executables and data targets join it.
if(NOT TARGET sandgate-runtime)
  add_custom_target(sandgate-runtime)
endif()

# A product executable. Build-tree layout mirrors the install layout:
# bin/ for programs, share/ for kernelspecs and policies, so that a program
# finds its siblings at <exe dir>/ and its data at <exe dir>/../share.
function(sandgate_add_executable name)
  add_executable(${name} ${ARGN})
  sandgate_target_defaults(${name})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  add_dependencies(sandgate-runtime ${name})
endfunction()

# Where data files go in the build tree (mirrors ${CMAKE_INSTALL_DATADIR}).
set(SANDGATE_BUILD_DATADIR "${CMAKE_BINARY_DIR}/share")
