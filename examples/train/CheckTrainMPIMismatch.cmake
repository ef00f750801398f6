# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cmake -DTRAIN=<ternary-counter-train> -DWORK=<folder> -DMPIEXEC=<mpirun> "-DMPIFLAGS=<flags>"
#       -P CheckTrainMPIMismatch.cmake
# Two ranks started with different command lines (an MPMD `:` line) or failing in one rank only:
# the job ends promptly (a timeout turns a hang into a failure) with a non-zero exit below 128
# and an error that names the differing option and the ranks. Nothing may finish with rc 0.
set(base --dataset teacher --steps 4 --batch 8 --eval 16 --in 8 --hidden 8 --log-every 1000)
file(MAKE_DIRECTORY "${WORK}")
include(${CMAKE_CURRENT_LIST_DIR}/RequireRefusal.cmake)

function(expect_refused name expected)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "RANK0;RANK1")
  execute_process(COMMAND ${MPIEXEC} ${MPIFLAGS} -np 1 ${TRAIN} ${arg_RANK0} : -np 1 ${TRAIN}
                          ${arg_RANK1}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 90)
  require_refusal("${name}" "${expected}" "${rc}" "${out}" "${err}")
endfunction()

expect_refused("different --steps" "the ranks disagree on --steps: rank 0 has '4' but rank 1 has '3'"
               RANK0 ${base} RANK1 ${base} --steps 3)
expect_refused("different --batch" "the ranks disagree on --batch: rank 0 has '8' but rank 1 has '12'"
               RANK0 ${base} RANK1 ${base} --batch 12)
expect_refused("--log-every on one rank" "the ranks disagree on --log-every"
               RANK0 ${base} RANK1 ${base} --log-every 1)
expect_refused("--save on one rank" "the ranks disagree on --save: rank 0 has '' but rank 1 has"
               RANK0 ${base} RANK1 ${base} --save "${WORK}/one_rank.safetensors")
expect_refused("unknown option on one rank" "rank 1: unknown option --bogus"
               RANK0 ${base} RANK1 ${base} --bogus 1)
expect_refused("the other task on one rank, its data missing" "rank 1: .*no-data"
               RANK0 ${base} RANK1 --dataset fashion-mnist --data-dir "${WORK}/no-data" --epochs 1)
expect_refused("--help on one rank" "the ranks disagree on --help: rank 0 has '' but rank 1 has 'given'"
               RANK0 ${base} RANK1 ${base} --help)
# --resume of a file only one rank can read: refused before any collective work.
expect_refused("--resume readable on one rank only" "rank 1: .*cannot open"
               RANK0 ${base} RANK1 ${base} --resume "${WORK}/missing.safetensors")
# A failure after the agreement (the save, by rank 0) still ends every rank.
expect_refused("--save into a missing folder" "save_checkpoint"
               RANK0 ${base} --save "${WORK}/missing/x.safetensors"
               RANK1 ${base} --save "${WORK}/missing/x.safetensors")
