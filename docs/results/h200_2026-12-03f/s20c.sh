#!/usr/bin/env bash
# Session 20 call 3: the row update without local-memory units (HEAD), against: each group's
# loads issued one group ahead (prefetch1; ptxas 64 registers, no spills), 12 capped teams of up
# to 128 threads per multiprocessor instead of 8 (cap12; 40 registers, 48 bytes of spills), wide
# teams of up to 512 threads three per multiprocessor instead of one of up to 1024 (wide512x3),
# and all three (80 bytes of spills); then the team sizes 128 / 256 with three of the drivers;
# then all three applied: full build, conformance runner (wide512x3 refuses --team-size 1024:
# those runs fail by design) and the row update's unit tests.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03f/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=5 VARIANTS="$p/prefetch1.patch $p/cap12.patch $p/wide512x3.patch $p/all_three.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16 --shape 4096x4096x4096" \
  timeout 280 $s variants >/dev/null; el variants
shapes="--shape 4096x8192x16 --shape 4096x11008x16 --shape 8192x16384x16 --shape 16384x16384x16 --shape 2048x32768x16"
for name in base prefetch1 all_three; do
  for ts in 128 256; do
    left 330 || break
    timeout 30 /tmp/ternary-counter-perf-$name --repeat 5 --team-size $ts $shapes > $OUT/team_${name}_$ts.log 2>&1
    echo "$name team size $ts:" >> $OUT/summary.txt
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/team_${name}_$ts.log | head -5 >> $OUT/summary.txt
  done
done
el teams
patch -s -p1 < $p/all_three.patch && el patched
left 400 && { timeout 110 $s build; el full_build; }
left 470 && { timeout 70 $s conformance | tail -3; el conformance; }
left 540 && { timeout 40 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='TeamSizes.*:*RowSplits*:*FromIoWorkspace*:*ConformanceCase*:NonFinite.*' > $OUT/unit_update.log 2>&1; tail -3 $OUT/unit_update.log >> $OUT/summary.txt; el unit; }
rm -f $OUT/runner_err.txt; $s pack
