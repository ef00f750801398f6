#!/usr/bin/env bash
# 2 x H200 (device kind nvidia-h200-x2): the distributed tests, the main job's bit-identity for
# 1 and 2 ranks (lines and checkpoint bytes; the teacher task, and Fashion-MNIST when $FMNIST
# holds its files, default .deps/fmnist), ternary-counter-perf-mpi. Runs CUDA binaries built
# elsewhere (e.g. on the team's machine: the cuda preset's ternary-counter-test-distributed,
# ternary-counter-train and ternary-counter-perf-mpi copied into $BIN, default .deps/bin).
#   OUT=folder perf_tests/scripts/mpi_gpu_session.sh
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export OMP_PROC_BIND=false
b=${BIN:-$PWD/.deps/bin}
M="mpirun --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH -x OMP_PROC_BIND"
nvidia-smi -L; which mpirun; ldd $b/ternary-counter-test-distributed | grep -E "not found|mpi|nccl"
for n in 1 2; do timeout 120 $M -np $n $b/ternary-counter-test-distributed --kokkos-map-device-id-by=mpi_rank > $OUT/dist_np$n.log 2>&1; echo "distributed np$n rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/dist_np$n.log | tr '\n' ' ')"; done
for n in 1 2; do timeout 60 $M -np $n $b/ternary-counter-train --dataset teacher --steps 40 --save /tmp/ck_$n.safetensors --kokkos-map-device-id-by=mpi_rank > $OUT/teacher_np$n.log 2>&1; echo "teacher np$n rc=$?"; done
diff <(grep -E "^(start|final)" $OUT/teacher_np1.log) <(grep -E "^(start|final)" $OUT/teacher_np2.log) && cmp /tmp/ck_1.safetensors /tmp/ck_2.safetensors && echo "teacher: np1 == np2 (lines and checkpoint bytes)"
grep -E "^final" $OUT/teacher_np*.log
fm=${FMNIST:-$PWD/.deps/fmnist}
if [ -d "$fm" ]; then
  for n in 1 2; do timeout 120 $M -np $n $b/ternary-counter-train --dataset fashion-mnist --data-dir $fm --save /tmp/fm_$n.safetensors --kokkos-map-device-id-by=mpi_rank > $OUT/fmnist_np$n.log 2>&1; echo "fashion-mnist np$n rc=$?"; done
  lines() { grep -E "^(epoch|final)" "$1" | sed -E 's/ (samples\/s|seconds)=[0-9.]+//'; }
  diff <(lines $OUT/fmnist_np1.log) <(lines $OUT/fmnist_np2.log) && cmp /tmp/fm_1.safetensors /tmp/fm_2.safetensors && echo "fashion-mnist: np1 == np2 (lines and checkpoint bytes)"
  grep -E "^final" $OUT/fmnist_np*.log
fi
for n in 1 2; do timeout 90 $M -np $n $b/ternary-counter-perf-mpi --shape 4096x4096x2048 --shape 4096x4096x512 --repeat 7 --json $OUT/perf_mpi_np$n.json --kokkos-map-device-id-by=mpi_rank > $OUT/perf_mpi_np$n.log 2>&1; echo "perf-mpi np$n rc=$?"; tail -8 $OUT/perf_mpi_np$n.log; done
