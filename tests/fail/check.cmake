# Compiles SOURCE with COMPILER (-std=c++20, include dirs INCLUDE) and passes only if it does not
# compile, with exactly one error, and the diagnostics contain every "// expect: TEXT" line of
# SOURCE. Run by the fail_<name> tests (tests/CMakeLists.txt).
set(args -std=c++20 -fsyntax-only)
foreach(dir IN LISTS INCLUDE)
  list(APPEND args -I${dir})
endforeach()
execute_process(
  COMMAND ${COMPILER} ${args} ${SOURCE}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
set(text "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must not")
endif()
string(REGEX MATCHALL "error:" errors "${text}")
list(LENGTH errors nerrors)
if(NOT nerrors EQUAL 1)
  message(FATAL_ERROR "expected exactly one error, got ${nerrors}:\n${text}")
endif()
file(STRINGS ${SOURCE} expects REGEX "^// expect: ")
if(NOT expects)
  message(FATAL_ERROR "${SOURCE} has no '// expect:' line")
endif()
foreach(line IN LISTS expects)
  string(REGEX REPLACE "^// expect: " "" want "${line}")
  string(FIND "${text}" "${want}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "the diagnostics do not contain '${want}':\n${text}")
  endif()
endforeach()
message(STATUS "failed to compile as expected: ${expects}")
