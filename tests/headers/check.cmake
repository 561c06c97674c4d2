# Compiles one header of include/tg alone, as the first thing a translation unit includes, with
# -Wall -Wextra -Wpedantic -Werror (nlohmann-json's per-header check): a header that uses what it
# does not include, or declares an inline function that it uses but only another header defines
# ("used but never defined"), fails. -fsyntax-only: GCC and Clang report both without generating
# code, which saves a sixth of the time. The header is
# included twice (its include guard must hold). Run by the header_<name> tests
# (tests/CMakeLists.txt):
#   cmake -DCOMPILER=c++ -DINCLUDE=dir -DHEADER=tg/x/y.hpp -DWORK_DIR=dir [-DMAIN=file.cpp
#         -DLIBS=-pthread,-ldl] -P check.cmake
# With MAIN (a program that includes only HEADER), that program is compiled, linked and run
# instead: it must link with nothing but LIBS, and exit 0.
set(flags -std=c++20 -Wall -Wextra -Wpedantic -Werror -O0 -I${INCLUDE})
string(REGEX REPLACE "[/.]" "_" stem "${HEADER}")
file(MAKE_DIRECTORY ${WORK_DIR})
if(MAIN)
  string(REPLACE "," ";" LIBS "${LIBS}")
  set(program ${WORK_DIR}/${stem})
  execute_process(
    COMMAND ${COMPILER} ${flags} ${MAIN} -o ${program} ${LIBS}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${MAIN} (including only <${HEADER}>) does not build alone:\n${out}")
  endif()
  execute_process(
    COMMAND ${program}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} failed (${rc}):\n${out}")
  endif()
  message(STATUS "<${HEADER}> builds and runs alone:\n${out}")
else()
  set(source ${WORK_DIR}/${stem}.cpp)
  file(WRITE ${source} "#include <${HEADER}>\n#include <${HEADER}>\n")
  execute_process(
    COMMAND ${COMPILER} ${flags} -fsyntax-only ${source}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "<${HEADER}> does not compile alone:\n${out}")
  endif()
  message(STATUS "<${HEADER}> compiles alone")
endif()
