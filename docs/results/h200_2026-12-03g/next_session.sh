#!/usr/bin/env bash
# Prepared for the next device session (not run): (1) the final tree of session 21 (source of
# f67e9d2) through ctest and the CUDA conformance runner, which it has not yet met as a whole;
# (2) the row sums reading a whole unit's groups a batch at a time (patches/phase1_batch{2,4,8}:
# call 2's SASS shows lane_chains loading, using and branching group by group, so each thread
# waits 8 memory latencies in a row; its stall samples are 34% of the kernel's, 26% long
# scoreboard). All three compile for sm_90 with 64 registers and no spills.
#   bash docs/results/h200_2026-12-03g/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03g/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 $s test; el ctest
left 280 && { timeout 70 $s conformance; el conformance; }
left 330 && VARIANT_REPEAT=7 VARIANTS="$p/phase1_batch2.patch $p/phase1_batch4.patch $p/phase1_batch8.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 200 $s variants >/dev/null; el variants
rm -f $OUT/runner_err.txt; $s pack
