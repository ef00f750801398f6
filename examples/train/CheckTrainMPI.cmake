# cmake -DTRAIN=<ternary-counter-train> -DWORK=<folder> -DMPIEXEC=<mpirun> "-DMPIFLAGS=<flags>"
#       "-DRANKS=1;2;3;4" -P CheckTrainMPI.cmake
# The main job under mpirun: for each rank count, the start: and final: lines and the --save
# checkpoint's bytes equal those of one plain process (no mpirun).
function(run_train out_lines out_file name)
  set(file "${WORK}/${name}.safetensors")
  file(REMOVE "${file}")
  execute_process(COMMAND ${ARGN} --dataset teacher --steps 30 --batch 60 --eval 250 --log-every 1000 --save
                          "${file}"
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: ${ARGN} failed (${rc}):\n${text}\n${err}")
  endif()
  string(REGEX MATCHALL "(start|final): [^\n]*" lines "${text}")
  list(LENGTH lines count)
  if(NOT count EQUAL 2)
    message(FATAL_ERROR "${name}: expected one start: and one final: line, got:\n${text}")
  endif()
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${name}: --save wrote no ${file}")
  endif()
  file(SHA256 "${file}" hash)
  set(${out_lines} "${lines}" PARENT_SCOPE)
  set(${out_file} "${hash}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY "${WORK}")
# --batch 60 and --eval 250 do not divide evenly by 3 or 4: uneven blocks are covered.
run_train(plain_lines plain_hash plain ${TRAIN})
message(STATUS "plain: ${plain_lines}")
foreach(n IN LISTS RANKS)
  run_train(lines hash np${n} ${MPIEXEC} -np ${n} ${MPIFLAGS} ${TRAIN})
  if(NOT lines STREQUAL plain_lines)
    message(FATAL_ERROR "${n} ranks print '${lines}' but one process prints '${plain_lines}'")
  endif()
  if(NOT hash STREQUAL plain_hash)
    message(FATAL_ERROR "${n} ranks saved a checkpoint that differs from one process's")
  endif()
  message(STATUS "${n} ranks: same lines and checkpoint bytes")
endforeach()
