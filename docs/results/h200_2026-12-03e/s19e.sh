#!/usr/bin/env bash
# Session 19 call 5: the row update's default refined (one unit per thread up to 512 units, 128
# threads beyond): the widths on both sides of the rule and the llm layers, then conformance and
# ctest while the budget lasts.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
$s build || exit 1; el built
$perf --repeat 7 --shape 2048x32768x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 4096x4096x16 > $OUT/perf_team.log 2>&1
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf_team.log | head -4 >> $OUT/summary.txt
$perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf_llm.log | head -2 >> $OUT/summary.txt; el perf
timeout 70 $s conformance; el conformance
timeout 100 $s test; el ctest
rm -f $OUT/runner_err.txt; $s pack
