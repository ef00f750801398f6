# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DGENERATOR=... -DOUT=... -DCASES=<unit_tests/data/conformance> -P CheckIntCases.cmake
# Runs the int_* case generator into OUT and compares each file it writes with the committed one.
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${GENERATOR}" "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the generator failed (${rc})")
endif()
file(GLOB_RECURSE made RELATIVE "${OUT}" "${OUT}/*")
list(LENGTH made count)
if(count EQUAL 0)
  message(FATAL_ERROR "the generator wrote nothing into ${OUT}")
endif()
foreach(f ${made})
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}/${f}" "${CASES}/${f}"
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${CASES}/${f} differs from the generator's ${OUT}/${f}: regenerate the "
                        "cases (ternary-counter-make-int-cases unit_tests/data/conformance)")
  endif()
endforeach()
message(STATUS "${count} files of the int_* cases equal the generator's")
