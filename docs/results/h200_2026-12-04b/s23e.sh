#!/usr/bin/env bash
# Call 5: where backward_input's extra time goes at 4096x11008x4096 (1.37x cuBLAS against
# forward's 1.25x on the same engine): ncu's per-instruction counters of both inside-tile
# kernels at that shape, summarized by ncu_source_summary.py.
#   bash docs/results/h200_2026-12-04b/s23e.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" timeout 130 $s build || exit 1; el built
for k in BackwardInputProduct ForwardProduct; do
  NCU_KERNEL=$k NCU_SHAPE=4096x11008x4096 timeout 80 $s ncu_source >> $OUT/summary.txt; el "ncu $k"
  head -24 $OUT/ncu_summary_$k.txt >> $OUT/summary.txt
  gzip -f $OUT/ncu_source_$k.csv
done
$s pack
