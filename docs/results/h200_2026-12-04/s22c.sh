#!/usr/bin/env bash
# Session 22 call 3: teams that take several rows (patches/rows_per_team_w{1,2}: the league
# capped at one or two waves of resident teams, each filling the code table once for its rows)
# against the tree of e34dd20; then the w1 tree through the CUDA conformance runner (its
# --team-size 128 and 1024 runs give teams several rows of the 2048-row case), the row update's
# unit tests and the default shapes.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/rows_per_team_w1.patch $p/rows_per_team_w2.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 200 $s variants >/dev/null; el variants
patch -s -p1 < $p/rows_per_team_w1.patch || exit 1
cmake --build build/cuda --target ternary-counter-conformance ternary-counter-test-Cuda ternary-counter-perf > $OUT/build_w1.log 2>&1 || { tail -20 $OUT/build_w1.log; exit 1; }
el "built w1"
left 420 && { timeout 70 $s conformance; el conformance; }
left 480 && { timeout 60 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='*RowUpdate*:*TeamSizes*:*Reference*:*RowSplits*:*FromIoWorkspace*:*NonFinite*:*ConformanceCase*' > $OUT/unit_w1.log 2>&1; echo "unit w1 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/unit_w1.log | tr '\n' ' ')" >> $OUT/summary.txt; el unit; }
left 520 && { timeout 30 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
rm -f $OUT/runner_err.txt; $s pack
