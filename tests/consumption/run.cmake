# Configures, builds and runs one consumer of tg in a scratch directory; run by the consumption
# tests in tests/CMakeLists.txt (cmake -DWAY=... -P run.cmake). Needs no network.
#
#   WAY            find_package | add_subdirectory | fetchcontent | compiler
#   TG_SOURCE_DIR  tg's source tree
#   TG_BINARY_DIR  a configured build of tg (find_package installs from it)
#   TG_VERSION     the version find_package must find
#   WORK_DIR       scratch directory, emptied first
#   GENERATOR, MAKE_PROGRAM, CXX_COMPILER: the toolchain of the enclosing build
cmake_minimum_required(VERSION 3.21)

foreach(var IN ITEMS WAY TG_SOURCE_DIR WORK_DIR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command, echoing it; stops the test on failure.
function(step)
  execute_process(COMMAND ${ARGN} COMMAND_ECHO STDOUT RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumption test '${WAY}' failed (exit ${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(here ${CMAKE_CURRENT_LIST_DIR})

if(WAY STREQUAL "compiler")
  # The plain compiler line from the README: no CMake, only the generated single header.
  # Split (implementation.cpp defines TG_IMPLEMENTATION), then header-only (every file).
  set(flags -std=c++20 -Wall -Wextra -Wpedantic -Werror -I ${TG_SOURCE_DIR}/single_include)
  set(sources ${here}/main.cpp ${here}/second.cpp)
  step(${CXX_COMPILER} ${flags} ${sources} ${here}/implementation.cpp -o ${WORK_DIR}/consumer_tg
       -pthread -ldl)
  step(${WORK_DIR}/consumer_tg)
  step(${CXX_COMPILER} ${flags} -DTG_HEADER_ONLY ${sources} -o ${WORK_DIR}/consumer_header_only
       -pthread -ldl)
  step(${WORK_DIR}/consumer_header_only)
  return()
endif()

set(configure ${CMAKE_COMMAND} -S ${here}/${WAY} -B ${WORK_DIR}/build
              -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(MAKE_PROGRAM)
  list(APPEND configure -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()

if(WAY STREQUAL "find_package")
  if(NOT TG_BINARY_DIR)
    message(FATAL_ERROR "run.cmake: find_package needs -DTG_BINARY_DIR=<a configured tg build>")
  endif()
  step(${CMAKE_COMMAND} --install ${TG_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
  list(APPEND configure -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
       -DTG_EXPECTED_PREFIX=${WORK_DIR}/prefix -DTG_EXPECTED_VERSION=${TG_VERSION})
elseif(WAY STREQUAL "add_subdirectory")
  list(APPEND configure -DTG_SOURCE_DIR=${TG_SOURCE_DIR})
elseif(WAY STREQUAL "fetchcontent")
  # What a release archive of tg holds; FetchContent unpacks it like a download.
  set(contents CMakeLists.txt cmake include src)
  foreach(extra IN ITEMS single_include LICENSE README.md)
    if(EXISTS ${TG_SOURCE_DIR}/${extra})
      list(APPEND contents ${extra})
    endif()
  endforeach()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E tar czf ${WORK_DIR}/tg-src.tar.gz ${contents}
    WORKING_DIRECTORY ${TG_SOURCE_DIR}
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not archive tg's sources")
  endif()
  list(APPEND configure -DTG_ARCHIVE=${WORK_DIR}/tg-src.tar.gz)
else()
  message(FATAL_ERROR "run.cmake: unknown WAY '${WAY}'")
endif()

step(${configure})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer_tg)
step(${WORK_DIR}/build/consumer_header_only)
