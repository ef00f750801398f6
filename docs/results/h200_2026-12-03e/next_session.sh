#!/usr/bin/env bash
# Prepared for the next device session (not run): (1) the 16-sample products with two chain
# warps of 8 samples and two decoding warps sharing a one-step chunk, so that each scheduler has
# two chain warps at 16384 columns (the nineteenth session's ncu: one chain warp per scheduler,
# issuing about half its cycles); (2) rows of more than 512 units with one unit per thread in
# teams of 1024 (the default keeps 128 there; 512 threads with two units each lost); (3) the row
# update reading each unit a group at a time from memory, twice, instead of holding it in local
# memory (ptxas sm_90: stack frame 368 -> 16 bytes, no spills; CPU conformance at team size 2,
# 40 runs exact; the GPU's code update path has not run).
#   bash docs/results/h200_2026-12-03e/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03e/patches
perf=build/cuda/perf_tests/ternary-counter-perf
BUILD_TARGETS=ternary-counter-perf $s build || exit 1
VARIANT_REPEAT=7 VARIANTS="$p/few16_two_chain_warps.patch $p/units_from_memory.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 4096x4096x16 --shape 4096x4096x4096" \
  $s variants >/dev/null
for run in 1 2; do
  for ts in 0 128 1024; do
    arg=; [ $ts = 0 ] || arg="--team-size $ts"
    $perf --repeat 7 $arg --shape 2048x32768x16 --shape 1024x40000x16 > $OUT/team_${ts}_$run.log 2>&1
    echo "team size $ts run $run:" >> $OUT/summary.txt
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/team_${ts}_$run.log | head -2 >> $OUT/summary.txt
  done
done
$s pack
grep -E "variant|team size|^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/summary.txt
