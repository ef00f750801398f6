# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DTRAIN=<ternary-counter-train> -DWORK=<folder> -DMPIEXEC=<mpirun> "-DMPIFLAGS=<flags>"
#       "-DRANKS=1;2;3;4" [-DDATA=<Fashion-MNIST folder>] -P CheckTrainMPI.cmake
# The main job under mpirun: for each rank count, the printed lines and the --save checkpoint's
# bytes equal those of one plain process (no mpirun). Both tasks: the teacher task (start: and
# final: lines) and, when DATA holds the Fashion-MNIST files, a small image run in fp32 and in int8
# (epoch= and final: lines without their timing fields).
set(teacher_args --dataset teacher --steps 30 --batch 60 --eval 250 --log-every 1000)
set(image_args --dataset fashion-mnist --data-dir "${DATA}" --train-limit 1500 --test-limit 700
               --epochs 2 --batch 90 --hidden 64,32)
# The image run once more on the integer path (SPEC §6).
set(image_int8_args ${image_args} --precision int8)
set(teacher_int8_args ${teacher_args} --precision int8)
set(tasks teacher teacher_int8)
if(DATA AND (EXISTS "${DATA}/train-images-idx3-ubyte.gz" OR EXISTS "${DATA}/train-images-idx3-ubyte"))
  list(APPEND tasks image image_int8)
else()
  message(STATUS "no Fashion-MNIST files in '${DATA}': the image task is not checked")
endif()

function(run_train out_lines out_file task name)
  set(file "${WORK}/${task}_${name}.safetensors")
  file(REMOVE "${file}")
  execute_process(COMMAND ${ARGN} ${${task}_args} --save "${file}"
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${task} ${name}: ${ARGN} failed (${rc}):\n${text}\n${err}")
  endif()
  string(REGEX MATCHALL "(start|final|epoch)[:=] ?[^\n]*" lines "${text}")
  list(TRANSFORM lines REPLACE " (samples/s|seconds)=[0-9.]+" "")
  if(NOT lines MATCHES "final: ")
    message(FATAL_ERROR "${task} ${name}: no final: line in:\n${text}")
  endif()
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${task} ${name}: --save wrote no ${file}")
  endif()
  file(SHA256 "${file}" hash)
  set(${out_lines} "${lines}" PARENT_SCOPE)
  set(${out_file} "${hash}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY "${WORK}")
# The batches (60 and 90, the last image batch 60) and evaluation sets (250, 700) do not divide
# evenly by 3 or 4: uneven blocks are covered.
foreach(task IN LISTS tasks)
  run_train(plain_lines plain_hash ${task} plain ${TRAIN})
  message(STATUS "${task}, one process: ${plain_lines}")
  foreach(n IN LISTS RANKS)
    run_train(lines hash ${task} np${n} ${MPIEXEC} -np ${n} ${MPIFLAGS} ${TRAIN})
    if(NOT lines STREQUAL plain_lines)
      message(FATAL_ERROR "${task}: ${n} ranks print '${lines}' but one process prints '${plain_lines}'")
    endif()
    if(NOT hash STREQUAL plain_hash)
      message(FATAL_ERROR "${task}: ${n} ranks saved a checkpoint that differs from one process's")
    endif()
    message(STATUS "${task}, ${n} ranks: same lines and checkpoint bytes")
  endforeach()
endforeach()

# The FP32 baseline has no data-parallel loop: more than one rank is refused on every rank, with
# the reason, before any data is read.
list(FIND tasks image image_index)
if(image_index GREATER -1)
  execute_process(COMMAND ${MPIEXEC} -np 2 ${MPIFLAGS} ${TRAIN} ${image_args} --fp32-baseline
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0 OR NOT err MATCHES "--fp32-baseline runs as one process \\(2 ranks given\\)")
    message(FATAL_ERROR "--fp32-baseline under 2 ranks: rc ${rc}, expected the refusal:\n${text}\n${err}")
  endif()
  message(STATUS "--fp32-baseline under 2 ranks: refused")
endif()
