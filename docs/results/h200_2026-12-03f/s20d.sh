#!/usr/bin/env bash
# Session 20 call 4: the committed code (row update default at most 256 threads per row, one
# unit per thread up to there): full build, ctest (TeamSizes' GPU branch), the perf driver's
# default and llm shapes, the conformance runner, within the session's last device minutes.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 $s test; el ctest
left 230 && { timeout 30 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
left 250 && { timeout 30 $perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1; tail -8 $OUT/perf_llm.log >> $OUT/summary.txt; el llm; }
left 270 && { timeout 60 $s conformance; el conformance; }
rm -f $OUT/runner_err.txt; $s pack
