# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DTRAIN=<ternary-counter-train> -DDATA=<dir> -DWORK=<folder> -DMODE=short|full
#         -DMIN_ACC=<ten-thousandths> ["-DEXTRA=<options>"] -P CheckFashionMnist.cmake
# The main job on Fashion-MNIST. full: the default run, whose final test accuracy must reach
# MIN_ACC. short: a small run (a subset, 2 epochs) that must reach MIN_ACC too, and print the
# same epoch= and final: lines (up to samples/s and seconds) with --exec serial, with one
# OpenMP thread, and when stopped after epoch 1 with --save and continued with --resume.
# EXTRA: options every run gets (e.g. --precision;int8).
# Without the data set the test prints SKIPPED (the test's SKIP_REGULAR_EXPRESSION).
set(files train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte
          t10k-labels-idx1-ubyte)
foreach(file IN LISTS files)
  if(NOT EXISTS "${DATA}/${file}" AND NOT EXISTS "${DATA}/${file}.gz")
    message("SKIPPED: no ${file}[.gz] in ${DATA} (install dataset-fashion-mnist)")
    return()
  endif()
endforeach()

# Runs the job; sets <out> to its epoch= and final: lines without the timing fields.
function(run_lines out)
  execute_process(COMMAND ${TRAIN} --dataset fashion-mnist --data-dir ${DATA} ${EXTRA} ${ARGN}
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "ternary-counter-train ${ARGN}:\n${text}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ternary-counter-train ${ARGN} failed (${rc}):\n${text}\n${err}")
  endif()
  string(REGEX MATCHALL "(epoch|final: epoch)=[^\n]*" lines "${text}")
  list(TRANSFORM lines REPLACE " (samples/s|seconds)=[0-9.]+" "")
  if(NOT lines MATCHES "final: ")
    message(FATAL_ERROR "ternary-counter-train ${ARGN} printed no final: line")
  endif()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# The final test accuracy in ten-thousandths (integer comparisons).
function(check_accuracy lines)
  if(NOT lines MATCHES "final: [^;]*test_acc=([0-9])\\.([0-9][0-9][0-9][0-9])")
    message(FATAL_ERROR "no test_acc in the final: line")
  endif()
  math(EXPR acc "${CMAKE_MATCH_1} * 10000 + 1${CMAKE_MATCH_2} - 10000")
  if(acc LESS MIN_ACC)
    message(FATAL_ERROR "final test accuracy ${acc} (ten-thousandths) is below ${MIN_ACC}")
  endif()
  message(STATUS "final test accuracy ${acc} (ten-thousandths) >= ${MIN_ACC}")
endfunction()

if(MODE STREQUAL "full")
  run_lines(lines)
  check_accuracy("${lines}")
  return()
endif()

set(small --train-limit 4000 --test-limit 1000 --epochs 2)
file(MAKE_DIRECTORY "${WORK}")
set(checkpoint "${WORK}/fashion_mnist.safetensors")
file(REMOVE "${checkpoint}")
run_lines(straight ${small})
check_accuracy("${straight}")
run_lines(serial ${small} --exec serial)
run_lines(one_thread ${small} --kokkos-num-threads=1)
run_lines(first ${small} --stop-after 1 --save "${checkpoint}")
run_lines(resumed --resume "${checkpoint}" --test-limit 1000)
# The resumed run prints epoch 2 and the final line: the straight run's last two lines.
list(SUBLIST straight 1 2 straight_tail)
foreach(name serial one_thread)
  if(NOT straight STREQUAL ${name})
    message(FATAL_ERROR "${name} differs:\n  ${${name}}\nvs\n  ${straight}")
  endif()
endforeach()
list(GET first 0 first_epoch)
list(GET straight 0 straight_epoch)
if(NOT first_epoch STREQUAL straight_epoch)
  message(FATAL_ERROR "--stop-after 1 differs in epoch 1: '${first_epoch}' vs '${straight_epoch}'")
endif()
if(NOT resumed STREQUAL straight_tail)
  message(FATAL_ERROR "save + resume differs:\n  ${resumed}\nvs\n  ${straight_tail}")
endif()
message(STATUS "serial, 1 thread and save + resume print the same lines")
