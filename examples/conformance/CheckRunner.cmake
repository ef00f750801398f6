# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# ctest helper: runs the conformance runner on one case and compares every result with the
# case's spec_ files.  cmake -DRUNNER=... -DCASE=... -DOUT=... -DARGS="..." -P CheckRunner.cmake
# EMULATOR (a list: program and its arguments), when given, runs the runner.
separate_arguments(args UNIX_COMMAND "${ARGS}")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${EMULATOR} "${RUNNER}" ${args} "${CASE}" "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "runner failed (${rc}) on ${CASE}")
endif()
set(results codes_out.u8 scale_out.f32 v_out.f32 skipped.txt)
if(EXISTS "${CASE}/spec_y_out.f32")  # an int8 case: its products too
  list(APPEND results y_out.f32 grad_x_out.f32)
endif()
foreach(f ${results})
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}/${f}" "${CASE}/spec_${f}"
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${OUT}/${f} differs from ${CASE}/spec_${f}")
  endif()
endforeach()
# OUT = the case folder (its reference files' names are the results'): refused, nothing written.
file(GLOB case_files "${CASE}/*")
set(before "")
foreach(f IN LISTS case_files)
  file(SHA256 "${f}" hash)
  string(APPEND before "${f} ${hash}\n")
endforeach()
execute_process(COMMAND ${EMULATOR} "${RUNNER}" ${args} "${CASE}" "${CASE}" RESULT_VARIABLE rc
                ERROR_VARIABLE err)
set(after "")
foreach(f IN LISTS case_files)
  file(SHA256 "${f}" hash)
  string(APPEND after "${f} ${hash}\n")
endforeach()
if(rc EQUAL 0 OR NOT err MATCHES "is a case folder" OR NOT after STREQUAL before)
  message(FATAL_ERROR "OUT_DIR = CASE_DIR: rc ${rc}, files changed: ${after} vs ${before}\n${err}")
endif()
