#!/usr/bin/env bash
# Call 2 of the twenty-seventh session: forward of 9-16 samples on wide layers by a lane per
# column (ColumnChainForward, the working tree: teams of four warps, expand_run's decode) against
# the previous kernel (previous_kernel.patch), teams of one warp (column_team1.patch) and a
# decode by a per-bank table in scratch (column_table.patch); Linear.* on the tree and on the
# table variant; ncu's source counters of the tree's kernel at 16384^2 x 16.
#   bash docs/results/h200_2026-12-07/s27b.sh   (carry .deps)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-07/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
linear() {
  timeout 60 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_$1.log 2>&1
  echo "$1 Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)|Failure|mismatch' $OUT/linear_$1.log | head -5 | tr '\n' ' ')" >> $OUT/summary.txt
}
BUILD_TARGETS="ternary-counter-perf ternary-counter-test-Cuda" $s build || exit 1; el built
linear base; el "tests base"
VARIANT_REPEAT=5 VARIANTS="$p/previous_kernel.patch $p/column_team1.patch $p/column_table.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x12 --shape 16384x16384x9 --shape 16384x4096x16 --shape 14336x4096x16 --shape 32768x8192x16" \
  timeout 240 $s variants >/dev/null; el variants
NCU_KERNEL="ColumnChainForward" NCU_SHAPE=16384x16384x16 timeout 60 $s ncu_source >> $OUT/summary.txt; el "ncu base"
v=column_table
patch -s -p1 < $p/$v.patch; touch src/impl/TernaryCounter_ColumnChainForward.hpp
cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build_$v.log 2>&1 && linear $v
patch -s -R -p1 < $p/$v.patch; el "tests $v"
rm -f $OUT/runner_err.txt; $s pack
