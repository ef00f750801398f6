#!/usr/bin/env bash
# Session 19 call 2: (1) the tile engine's paired warps (eighteenth session's tilepairs) for the
# products of packed codes only, against HEAD at the large shapes; (2) the dense update's threads
# per row (--team-size 128 / 256 / 512) with HEAD, at the shapes whose rows hold several units
# per thread at the default 128.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03e/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built base
VARIANT_REPEAT=7 VARIANTS="$p/tilepairs_codes.patch" \
  VARIANT_ARGS="--shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096 --shape 4096x4096x256" \
  $s variants >/dev/null; el variants
for run in 1 2; do
  for ts in 128 256 512; do
    build/cuda/perf_tests/ternary-counter-perf --repeat 7 --team-size $ts --shape 4096x4096x16 \
      --shape 4096x11008x16 --shape 11008x4096x16 --shape 16384x16384x16 > $OUT/team_${ts}_$run.log 2>&1
    echo "team size $ts run $run:" >> $OUT/summary.txt
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/team_${ts}_$run.log | head -4 >> $OUT/summary.txt
  done
done; el team sizes
$s pack
