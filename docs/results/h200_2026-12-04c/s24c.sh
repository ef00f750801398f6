#!/usr/bin/env bash
# Twenty-fourth session, call 3: call 2's ncu has backward_input's fma loop waiting on its
# shared loads (short scoreboard 9.4% against forward's 2.8%) with 4 more registers held over
# it (two runs as loaded: 4 words, 2 scales). The working tree prefetches backward_input's codes
# as pairs of adjacent runs of one row (2 words, 1 scale; ptxas 127 registers, no spills);
# A/B'd against 5bd7915 (patches/bwd_pairs.patch reverted). Then, whatever the A/B says, the
# whole tree: ctest, the conformance runner, the default shapes' full run, and ncu of
# backward_input at 11008x4096x4096.
#   bash docs/results/h200_2026-12-04c/s24c.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04c/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
AB_PATCHES="$p/bwd_pairs.patch" AB_REPEAT=7 \
  AB_ARGS="--shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096 --shape 2048x2048x4096 --shape 4096x4096x256" \
  timeout 200 $s ab >/dev/null; el ab
left 300 && { $s build || exit 1; el "built all"; }
left 390 && { timeout 100 $s test; el ctest; }
left 450 && { timeout 60 $s conformance; el conformance; }
left 480 && { timeout 40 $s perf >/dev/null; el perf; grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt; }
left 500 && { NCU_KERNEL=BackwardInputProduct NCU_SHAPE=11008x4096x4096 timeout 40 $s ncu_source >> $OUT/summary.txt
  el ncu; head -24 $OUT/ncu_summary_BackwardInputProduct.txt >> $OUT/summary.txt; gzip -f $OUT/ncu_source_BackwardInputProduct.csv; }
rm -f $OUT/runner_err.txt; $s pack
