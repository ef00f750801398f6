#!/usr/bin/env bash
# Twenty-fourth session, call 2, on the tree of 5bd7915: the default shapes' full run (JSON for
# perf_tests/scripts/plot_ratios.py), then ncu's per-instruction counters of backward_input at
# 11008x4096x4096 and of forward at 4096x11008x4096: the same GEMM (4096 x 4096 outputs, depth
# 11008), where backward_input still runs 3-4% behind forward.
#   bash docs/results/h200_2026-12-04c/s24b.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
$s build || exit 1; el built
timeout 150 $s perf >/dev/null; el perf
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt
for ks in BackwardInputProduct:11008x4096x4096 ForwardProduct:4096x11008x4096; do
  k=${ks%%:*}
  NCU_KERNEL=$k NCU_SHAPE=${ks#*:} timeout 90 $s ncu_source >> $OUT/summary.txt; el "ncu $k"
  head -24 $OUT/ncu_summary_$k.txt >> $OUT/summary.txt
  gzip -f $OUT/ncu_source_$k.csv
done
$s pack
