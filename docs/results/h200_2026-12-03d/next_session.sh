#!/usr/bin/env bash
# Prepared for the next device session (not run): the two prepared patches against the tree,
# then the first of them applied and checked (Linear.*, ctest), everything packed for return.
#   bash docs/results/h200_2026-12-03d/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03d/patches
BUILD_TARGETS=ternary-counter-perf $s build || exit 1
VARIANT_REPEAT=7 VARIANTS="$p/quad_first_prepared.patch $p/quad_first_pairs_fwd_prepared.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x4 --shape 16384x16384x1 --shape 4096x4096x16" \
  $s variants >/dev/null
patch -s -p1 <$p/quad_first_prepared.patch
$s build test pack
grep -E "variant|^ +[0-9]+ +[0-9]+ +[0-9]+ \| +[0-9.]+ \|" $OUT/summary.txt
