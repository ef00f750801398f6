#!/usr/bin/env bash
# Session 22 call 2: the committed tree (59eea51: the row sums load 4 groups at a time) through
# ctest and the CUDA conformance runner; the driver against patches/before.patch (a group at a
# time), code_update_batch2.patch (the code update loading 2 at a time) and batches_8_2.patch
# (8 and 2); the default and llm shapes; compute-sanitizer on the row update's tests.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04/patches
perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 $s test; el ctest
left 280 && { timeout 70 $s conformance; el conformance; }
left 300 && { timeout 30 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
left 320 && { timeout 30 $perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1; tail -8 $OUT/perf_llm.log >> $OUT/summary.txt; el llm; }
left 360 && VARIANT_REPEAT=7 VARIANTS="$p/before.patch $p/code_update_batch2.patch $p/batches_8_2.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 170 $s variants >/dev/null; el variants
left 540 && { SANITIZE_TIMEOUT=25 SANITIZE_FILTER='RowUpdateLoads.*:TeamSizes.*' $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
