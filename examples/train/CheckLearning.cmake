# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DTRAIN=<ternary-counter-train> [-DARGS=<args>] -P CheckLearning.cmake
# The main job learns: from its start: line to its final: line the loss at least halves and the
# held-out accuracy reaches 80% (the default task is learnable to about 91%; chance is 25%).
execute_process(COMMAND ${TRAIN} ${ARGS} OUTPUT_VARIABLE text ERROR_VARIABLE err
                RESULT_VARIABLE rc)
message(STATUS "${text}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ternary-counter-train ${ARGS} failed (${rc}):\n${err}")
endif()

# "loss=1.519064 acc=0.3345" -> millionths of the loss and ten-thousandths of the accuracy, so
# that the comparisons below are integer arithmetic.
function(read_line prefix loss_out acc_out)
  if(NOT text MATCHES "${prefix}[^\n]*loss=([0-9]+)\\.([0-9]+) acc=([0-9])\\.([0-9]+)")
    message(FATAL_ERROR "ternary-counter-train printed no '${prefix}... loss=... acc=...' line")
  endif()
  set(loss "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")  # (the next REGEX calls reset CMAKE_MATCH_n)
  set(acc "${CMAKE_MATCH_3}${CMAKE_MATCH_4}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" loss "${loss}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" acc "${acc}")
  set(${loss_out} ${loss} PARENT_SCOPE)
  set(${acc_out} ${acc} PARENT_SCOPE)
endfunction()
read_line("start: " start_loss start_acc)
read_line("final: " final_loss final_acc)
math(EXPR twice_final "2 * ${final_loss}")
if(twice_final GREATER start_loss)
  message(FATAL_ERROR "the loss did not halve: ${start_loss} -> ${final_loss} (millionths)")
endif()
if(final_acc LESS 8000)
  message(FATAL_ERROR "final accuracy ${final_acc} (ten-thousandths) is below 0.8")
endif()
message(STATUS "learned: loss ${start_loss} -> ${final_loss} (millionths), "
               "accuracy ${start_acc} -> ${final_acc} (ten-thousandths)")
