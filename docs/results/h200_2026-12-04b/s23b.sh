#!/usr/bin/env bash
# Call 2: the row update's register cap for rows of up to 4096 weights (teams of 128 threads,
# LaunchBounds<128, N>): 7 teams per multiprocessor (72 registers), 6 (80), and 6 with the code
# update's loads 2 groups at a time or the row sums' 8 at a time (both spilled or lost at 64
# registers). All: no spills (kernel_resources.sh). The shapes whose rows are 4096 wide.
#   bash docs/results/h200_2026-12-04b/s23b.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04b/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/teams7.patch $p/teams6.patch $p/teams6_cu2.patch $p/teams6_rs8.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 1024x1024x16 --shape 4096x4096x256" \
  timeout 330 $s variants >/dev/null; el variants
$s pack
