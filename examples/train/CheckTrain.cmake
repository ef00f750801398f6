# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DTRAIN=<ternary-counter-train> -DWORK=<folder> -P CheckTrain.cmake
# The main job's two promises, end to end: the default execution space and --exec serial print
# the same final: line, and --save after N steps + --resume for M more ends where N+M straight do.
function(final_line out)
  execute_process(COMMAND ${TRAIN} ${ARGN} --log-every 1000 OUTPUT_VARIABLE text
                  ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ternary-counter-train ${ARGN} failed (${rc}):\n${text}\n${err}")
  endif()
  string(REGEX MATCH "final: [^\n]*" line "${text}")
  if(line STREQUAL "")
    message(FATAL_ERROR "ternary-counter-train ${ARGN} printed no final: line:\n${text}")
  endif()
  set(${out} "${line}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY "${WORK}")
set(checkpoint "${WORK}/check_train.safetensors")
file(REMOVE "${checkpoint}")
final_line(straight --dataset teacher --steps 60 --batch 64 --eval 256)
final_line(serial --dataset teacher --exec serial --steps 60 --batch 64 --eval 256)
final_line(first --dataset teacher --steps 25 --batch 64 --eval 256 --save "${checkpoint}")
final_line(resumed --dataset teacher --steps 35 --eval 256 --resume "${checkpoint}")
message(STATUS "default: ${straight}\nserial:  ${serial}\nresumed: ${resumed}")
if(NOT straight STREQUAL serial)
  message(FATAL_ERROR "--exec serial differs: '${serial}' vs '${straight}'")
endif()
if(NOT straight STREQUAL resumed)
  message(FATAL_ERROR "save + resume differs from the straight run: '${resumed}' vs '${straight}'")
endif()
