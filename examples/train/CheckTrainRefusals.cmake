# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DTRAIN=<ternary-counter-train> -DWORK=<folder> -P CheckTrainRefusals.cmake
# Bad input to the main job, one process: each ends promptly (a timeout turns a hang into a
# failure) with a clear error and an exit status in [1, 127]: no hang, no signal, no rc 0.
set(base --dataset teacher --steps 2 --batch 8 --eval 16 --in 8 --hidden 8 --log-every 1000)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
include(${CMAKE_CURRENT_LIST_DIR}/RequireRefusal.cmake)

function(expect_refused name expected)
  execute_process(COMMAND ${TRAIN} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc TIMEOUT 30)
  require_refusal("${name}" "${expected}" "${rc}" "${out}" "${err}")
endfunction()

expect_refused("--batch 2^63-1" "--batch needs an integer in \\[1, 2147483647\\]"
               ${base} --batch 9223372036854775807)
expect_refused("--seed past 32 bits" "--seed needs an integer in \\[0, 4294967295\\]"
               ${base} --seed 4294967297)
# (Empty values, which CMake cannot pass, are in fuzz/corpus/train_options.)
expect_refused("arrays past 2^40 values" "more than 2\\^40"
               ${base} --batch 2000000000 --in 2000000000)
# Kokkos aborts on these (a signal); the job refuses them first. Above 512 with OpenMP too.
expect_refused("--kokkos-num-threads=0" "--kokkos-num-threads needs an integer in \\[1, "
               ${base} --kokkos-num-threads=0)
expect_refused("--kokkos-num-threads=x" "--kokkos-num-threads needs an integer"
               ${base} --kokkos-num-threads=x)
if(DEFINED ENV{OPENMP_LIMIT})
  expect_refused("--kokkos-num-threads=513" "needs an integer in \\[1, 512\\]"
                 ${base} --kokkos-num-threads=513)
endif()
# Special files: never read (a FIFO would block), never replaced.
execute_process(COMMAND mkfifo "${WORK}/fifo" RESULT_VARIABLE fifo_rc)
if(fifo_rc EQUAL 0)
  expect_refused("--resume FIFO" "not a regular file" ${base} --resume "${WORK}/fifo")
  expect_refused("--save FIFO" "not a regular file" ${base} --save "${WORK}/fifo")
endif()
expect_refused("--resume folder" "not a regular file" ${base} --resume "${WORK}")
file(CREATE_LINK "${WORK}/target" "${WORK}/link" SYMBOLIC)
expect_refused("--save symbolic link" "not a regular file" ${base} --save "${WORK}/link")
if(EXISTS "${WORK}/target")
  message(FATAL_ERROR "--save wrote through a symbolic link")
endif()

# A checkpoint that was saved, then damaged: a byte appended (single-bit flips are the unit
# tests'), and one read through a name the ranks' agreement would compare.
execute_process(COMMAND ${TRAIN} ${base} --save "${WORK}/good.safetensors"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "saving a checkpoint failed (${rc}):\n${out}\n${err}")
endif()
file(COPY_FILE "${WORK}/good.safetensors" "${WORK}/long.safetensors")
file(APPEND "${WORK}/long.safetensors" "x")
expect_refused("--resume with a trailing byte" "header describes"
               ${base} --resume "${WORK}/long.safetensors")
expect_refused("--resume with other sizes" "--batch 16 differs from the 8"
               ${base} --resume "${WORK}/good.safetensors" --batch 16)
