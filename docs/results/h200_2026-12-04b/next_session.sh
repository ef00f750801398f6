#!/usr/bin/env bash
# Prepared for the next device session (not run): forward and backward_input with the packed
# codes kept as loaded until they are staged (patches/deferred_extraction.patch). Call 5's ncu
# at 4096x11008x4096 put 9% of backward_input's stall samples and 7% of forward's on one
# SHF.R.U64 per group, the extraction of a prefetched group from its two words, which waited
# for those loads right after they were issued, before the step's 1024 fmas. The patch moves it
# to the staging after the fmas (InsideTiles kernel only; ptxas: backward_input 128 registers,
# forward 126, no spills; the edge-tested kernels unchanged). Same values staged, so the same
# bits, but the CUDA tests and the conformance runner have not run on it: they run here.
#   bash docs/results/h200_2026-12-04b/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04b/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/deferred_extraction.patch" \
  VARIANT_ARGS="--shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096 --shape 2048x2048x4096 --shape 4096x4096x256" \
  timeout 170 $s variants >/dev/null; el variants
patch -s -p1 < $p/deferred_extraction.patch || exit 1
left 260 && { $s build || exit 1; el "built deferred_extraction"; }
left 360 && { timeout 110 $s test; el ctest; }
left 470 && { timeout 60 $s conformance; el conformance; }
left 520 && { SANITIZE_TIMEOUT=30 SANITIZE_FILTER='Linear.*' $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
