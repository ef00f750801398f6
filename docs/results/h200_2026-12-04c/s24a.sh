#!/usr/bin/env bash
# Twenty-fourth session, call 1: the twenty-third session's deferred extraction measured faster
# for backward_input (-3 to -9%) and slower for forward (+2 to +3%) (its call 1, whose logs were
# lost with that machine; figures in PERFORMANCE.md). The working tree defers backward_input's
# only (TernaryOperand::defers_extraction); here it is A/B'd against the tree without it
# (patches/bwd_deferred.patch reverted), then built whole: ctest and the conformance runner.
#   bash docs/results/h200_2026-12-04c/s24a.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04c/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
AB_PATCHES="$p/bwd_deferred.patch" AB_REPEAT=7 \
  AB_ARGS="--shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096 --shape 2048x2048x4096 --shape 4096x4096x256" \
  timeout 200 $s ab >/dev/null; el ab
left 330 && { $s build || exit 1; el "built all"; }
left 420 && { timeout 110 $s test; el ctest; }
left 490 && { timeout 60 $s conformance; el conformance; }
rm -f $OUT/runner_err.txt; $s pack
