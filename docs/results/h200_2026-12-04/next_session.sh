#!/usr/bin/env bash
# Prepared for the next device session (not run): the row update's units addressed from one
# place per unit (patches/unit_place: a unit's first group's gradient and code pointers and
# element index formed once, every group a constant offset from them; call 4's SASS recomputed
# about 13 instructions of 64-bit View indexing per group) and, on top of it, unit_place_unsigned
# (a unit's first group and group count by unsigned divisions, which are shifts). Both: sm_90,
# 64 registers, no spills; OpenMP conformance runner 80 runs / 0 mismatches and ctest 39/39 here.
# Then the second one through the CUDA conformance runner and ncu's per-instruction counters, so
# that a win can land in the same session.
#   bash docs/results/h200_2026-12-04/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf ternary-counter-conformance" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/unit_place.patch $p/unit_place_unsigned.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 200 $s variants >/dev/null; el variants
patch -s -p1 < $p/unit_place_unsigned.patch || exit 1
BUILD_TARGETS="ternary-counter-perf ternary-counter-conformance" $s build || exit 1; el "built unit_place_unsigned"
left 420 && { timeout 70 $s conformance; el conformance; }
left 480 && { NCU_KERNEL=RowUpdateKernel NCU_SHAPE=4096x4096x256 timeout 60 $s ncu_source >> $OUT/summary.txt; el ncu
  sed -n '/between barriers/,/most sampled/p' $OUT/ncu_summary_RowUpdateKernel.txt >> $OUT/summary.txt
  gzip -f $OUT/ncu_source_RowUpdateKernel.csv; }
rm -f $OUT/runner_err.txt; $s pack
