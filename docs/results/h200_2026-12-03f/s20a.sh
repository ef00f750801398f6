#!/usr/bin/env bash
# Session 20 call 1: the nineteenth session's prepared variants (few16_two_chain_warps,
# units_from_memory) against HEAD, the row update's team sizes above 512 units, then both
# patches applied together: full build, ctest (incl. the TeamSizes test's GPU branch) and the
# CUDA conformance runner, so that a winner's bits are known from this one call.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03e/patches
perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/few16_two_chain_warps.patch $p/units_from_memory.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 4096x4096x16 --shape 4096x4096x4096" \
  timeout 260 $s variants >/dev/null; el variants
for run in 1 2; do
  for ts in 0 128 1024; do
    left 330 || break
    arg=; [ $ts = 0 ] || arg="--team-size $ts"
    timeout 30 $perf --repeat 7 $arg --shape 2048x32768x16 --shape 1024x40000x16 > $OUT/team_${ts}_$run.log 2>&1
    echo "team size $ts run $run:" >> $OUT/summary.txt
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/team_${ts}_$run.log | head -2 >> $OUT/summary.txt
  done
done
el teams
patch -s -p1 < $p/few16_two_chain_warps.patch && patch -s -p1 < $p/units_from_memory.patch && el patched
left 380 && { timeout 100 $s build; el full_build; }
left 440 && { timeout 70 $s conformance; el conformance; }
left 480 && { timeout 100 $s test; el ctest; }
rm -f $OUT/runner_err.txt; $s pack
