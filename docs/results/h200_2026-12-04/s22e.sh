#!/usr/bin/env bash
# Session 22 call 5 (the last device minutes): the twenty-first session's division through the
# row's reciprocal (803b5d3, reverted then as neutral: patches/reciprocal.patch) again, now
# that the row sums' loads no longer hide the code update (call 4: half the stall samples).
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/reciprocal.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16" \
  timeout 150 $s variants >/dev/null; el variants
$s pack
