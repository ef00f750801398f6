#!/usr/bin/env bash
# Session 22 call 4: ncu's per-instruction counters of the row update (tree of e34dd20: the row
# sums load 4 groups at a time) at 4096 x 4096, to compare with the twenty-first session's call 2.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
NCU_KERNEL=RowUpdateKernel NCU_SHAPE=4096x4096x256 timeout 60 $s ncu_source >> $OUT/summary.txt; el ncu
head -40 $OUT/ncu_summary_RowUpdateKernel.txt >> $OUT/summary.txt; gzip -f $OUT/ncu_source_RowUpdateKernel.csv
rm -f $OUT/runner_err.txt; $s pack
