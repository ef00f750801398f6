# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DSOURCE=<repo> -DBINARY=<empty folder> -DARGS=<-D...;...> -P CheckConfigure.cmake
# Configures the project in a fresh folder with ARGS and fails with CMake's output when the
# configure or generate step fails (the unit tests check their own build settings this way).
file(REMOVE_RECURSE "${BINARY}")
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" ${ARGS}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring with ${ARGS} failed (${rc}):\n${err}\n${out}")
endif()
message(STATUS "configured with ${ARGS}")
file(REMOVE_RECURSE "${BINARY}")
