# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DBUILD=<build dir> -DTARGET=<target> -DEXPECT=<text;text;...> -P CheckCompileFails.cmake
# Builds a target that must not compile and requires each EXPECT text in the compiler's output:
# how the tests check the library's compile-time messages to users.
execute_process(COMMAND ${CMAKE_COMMAND} --build "${BUILD}" --target "${TARGET}"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(APPEND out "${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but it must not")
endif()
foreach(text IN LISTS EXPECT)
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the compiler's output lacks '${text}':\n${out}")
  endif()
endforeach()
message(STATUS "${TARGET} fails to compile with the expected messages")
