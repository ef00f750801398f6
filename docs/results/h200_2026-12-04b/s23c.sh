#!/usr/bin/env bash
# Call 3: call 2 found fewer teams per multiprocessor slower (8 > 7 > 6); so more of them: 9
# teams of 128 threads (LaunchBounds<128, 9>, 56 registers; ptxas spills 20 bytes in the
# vector-row kernel), and 9 with the row sums' loads 2 groups at a time (24 bytes).
#   bash docs/results/h200_2026-12-04b/s23c.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04b/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/teams9.patch $p/teams9_rs2.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 1024x1024x16 --shape 4096x4096x256" \
  timeout 300 $s variants >/dev/null; el variants
$s pack
