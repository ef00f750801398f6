#!/usr/bin/env bash
# Twenty-fifth session, call 2, on the tree with fwd_pairs_fma_serpentine applied (call 1's
# fastest variant: forward's codes prefetched as pairs too, the micro-tile's rows of fmas run
# serpentine): the whole build, ctest, the conformance runner, the default shapes' full run
# (JSON for perf_tests/scripts/plot_ratios.py), compute-sanitizer on Linear.*, and ncu's
# per-instruction counters of both products at the shapes of call 1's gap.
#   bash docs/results/h200_2026-12-05/s25b.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 120 $s test; el ctest
timeout 70 $s conformance; el conformance
timeout 60 $s perf >/dev/null; el perf
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt
left 380 && { SANITIZE_FILTER="Linear.*" SANITIZE_TIMEOUT=50 $s sanitize; el sanitize; }
for ks in ForwardProduct:4096x11008x4096 BackwardInputProduct:11008x4096x4096; do
  k=${ks%%:*}
  left 480 || break
  NCU_KERNEL=$k NCU_SHAPE=${ks#*:} timeout 50 $s ncu_source >> $OUT/summary.txt; el "ncu $k"
  head -24 $OUT/ncu_summary_$k.txt >> $OUT/summary.txt
  gzip -f $OUT/ncu_source_$k.csv
done
rm -f $OUT/runner_err.txt; $s pack
