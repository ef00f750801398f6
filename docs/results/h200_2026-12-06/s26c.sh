#!/usr/bin/env bash
# Twenty-sixth session, call 3: what holds the few-sample kernels on narrow layers at one sample
# (128 teams of 32 columns, one per multiprocessor, over a depth of 11008): ncu's source
# counters of forward at 4096x11008x1 (0.079 ms, 0.97x cuBLAS SGEMM) and backward_input at
# 11008x4096x1 (0.085 ms, 1.04x), on the tree of cbd7abd.
#   bash docs/results/h200_2026-12-06/s26c.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
for ks in ForwardProduct:4096x11008x1 BackwardInputProduct:11008x4096x1 ForwardProduct:16384x16384x1; do
  k=${ks%%:*} shape=${ks#*:}
  NCU_KERNEL="FewSampleProduct.*$k" NCU_SHAPE=$shape timeout 80 $s ncu_source >> $OUT/summary.txt
  for f in $OUT/ncu_*_$k.*; do [ -e "$f" ] && mv "$f" "${f%.*}_$shape.${f##*.}"; done
  gzip -f $OUT/ncu_source_${k}_$shape.csv
  el "ncu $k $shape"
  head -30 $OUT/ncu_summary_${k}_$shape.txt >> $OUT/summary.txt
  grep -E "Duration|Issue Slots Busy|Eligible Warps|No Eligible|DRAM Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Registers Per" $OUT/ncu_details_${k}_$shape.txt >> $OUT/summary.txt
done
rm -f $OUT/runner_err.txt; $s pack
