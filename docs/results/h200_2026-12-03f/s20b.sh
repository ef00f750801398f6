#!/usr/bin/env bash
# Session 20 call 2: the committed row update that reads each unit a group at a time from memory
# (no unit in local memory): full build, the default against fixed team sizes (the default's
# reason, one read of the gradient, is gone), ctest, conformance, sanitizers on the row update's
# tests, the perf driver's default and llm shapes, then ncu's source counters of the row update.
# (The register caps cap12 / wide512x3 in patches/ are for the next call.)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
shapes="--shape 4096x4096x16 --shape 4096x6144x16 --shape 4096x8192x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16"
for run in 1; do
  for ts in 0 128 256 512; do
    arg=; [ $ts = 0 ] || arg="--team-size $ts"
    timeout 40 $perf --repeat 5 $arg $shapes > $OUT/team_${ts}_$run.log 2>&1
    echo "team size $ts run $run:" >> $OUT/summary.txt
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/team_${ts}_$run.log | head -6 >> $OUT/summary.txt
  done
done
el teams
timeout 120 $s test; el ctest
timeout 70 $s conformance; el conformance
left 330 && { timeout 60 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
left 360 && { timeout 60 $perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1; tail -8 $OUT/perf_llm.log >> $OUT/summary.txt; el llm; }
left 430 && { SANITIZE_FILTER='TeamSizes.*:RowSplits.*' SANITIZE_TIMEOUT=40 $s sanitize; el sanitize; }
left 500 && { NCU_KERNEL=RowUpdateKernel NCU_SHAPE=4096x4096x256 timeout 80 $s ncu_source >> $OUT/summary.txt; el ncu; }
rm -f $OUT/runner_err.txt $OUT/ncu_source_*.csv; $s pack
