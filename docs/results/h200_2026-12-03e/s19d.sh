#!/usr/bin/env bash
# Session 19 call 4: the row update's new default (one unit per thread up to 512) against the old
# 128 at row widths the earlier calls did not cover, then racecheck on the tile tests that did not
# finish inside call 3's time limit.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf ternary-counter-test-Cuda" $s build || exit 1; el built
shapes="--shape 4096x6144x16 --shape 4096x8192x16 --shape 8192x16384x16 --shape 2048x32768x16 --shape 4096x11008x16"
for run in 1 2; do
  for ts in default 128; do
    arg=; [ $ts = default ] || arg="--team-size $ts"
    $perf --repeat 7 $arg $shapes > $OUT/team_${ts}_$run.log 2>&1
    echo "team size $ts run $run:" >> $OUT/summary.txt
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/team_${ts}_$run.log | head -5 >> $OUT/summary.txt
  done
done; el team sizes
timeout 300 compute-sanitizer --tool racecheck --error-exitcode 99 build/cuda/unit_tests/ternary-counter-test-Cuda \
  --gtest_filter='Linear.FullSizeTiles*:Linear.WholeTiles*' > $OUT/sanitizer_racecheck.log 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/sanitizer_racecheck.log | tail -1)" >> $OUT/summary.txt
el racecheck
$s pack
