#!/usr/bin/env bash
# Session 19 call 3: the committed change (paired tile warps for the code products, the row
# update's default of one unit per thread up to 512): full build, ctest, conformance, the perf
# driver's default and llm shapes, sanitizers on Linear.* and the row update's team sizes.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 150 $s test; el ctest
timeout 110 $s conformance; el conformance
left 380 && { timeout 120 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
left 440 && { timeout 110 $perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1; tail -8 $OUT/perf_llm.log >> $OUT/summary.txt; el llm; }
left 520 && { SANITIZE_FILTER='Linear.*:TeamSizes.*' SANITIZE_TIMEOUT=35 $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
