#!/usr/bin/env bash
# Session 20 call 3: the row update's register caps now that no unit lives in local memory
# (ptxas sm_90: 64 registers, no spills; at 40 registers 48 bytes of spills): 12 capped teams of
# up to 128 threads per multiprocessor instead of 8 (cap12), and wide teams of up to 512 threads
# three per multiprocessor instead of one of up to 1024 (wide512x3); then both applied: full
# build, conformance runner and the row update's unit tests.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03f/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=5 VARIANTS="$p/cap12.patch $p/wide512x3.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16 --shape 4096x4096x4096" \
  timeout 300 $s variants >/dev/null; el variants
patch -s -p1 < $p/cap12.patch && patch -s -p1 < $p/wide512x3.patch && el patched
left 400 && { timeout 110 $s build; el full_build; }
left 460 && { timeout 70 $s conformance; el conformance; }
left 540 && { timeout 40 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='TeamSizes.*:*RowSplits*:*FromIoWorkspace*:*ConformanceCase*:NonFinite.*' > $OUT/unit_update.log 2>&1; tail -3 $OUT/unit_update.log >> $OUT/summary.txt; el unit; }
rm -f $OUT/runner_err.txt; $s pack
