#!/usr/bin/env bash
# Twenty-fourth session, call 4: forward's codes prefetched as pairs too (two adjacent runs
# along the depth of one row: 2 words held over the fmas, as many as its two extracted runs
# held; ptxas 126 registers, no spills), A/B'd against b189a1f (patches/fwd_pairs.patch
# reverted). Then the whole tree: ctest, the conformance runner, the default shapes' full run,
# ncu of forward at 4096x11008x4096.
#   bash docs/results/h200_2026-12-04c/s24d.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-04c/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
AB_PATCHES="$p/fwd_pairs.patch" AB_REPEAT=7 \
  AB_ARGS="--shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096 --shape 2048x2048x4096 --shape 4096x4096x256" \
  timeout 200 $s ab >/dev/null; el ab
left 280 && { $s build || exit 1; el "built all"; }
left 370 && { timeout 100 $s test; el ctest; }
left 430 && { timeout 60 $s conformance; el conformance; }
left 470 && { timeout 30 $s perf >/dev/null; el perf; grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt; }
left 480 && { NCU_KERNEL=ForwardProduct NCU_SHAPE=4096x11008x4096 timeout 30 $s ncu_source >> $OUT/summary.txt
  el ncu; head -24 $OUT/ncu_summary_ForwardProduct.txt >> $OUT/summary.txt; gzip -f $OUT/ncu_source_ForwardProduct.csv; }
rm -f $OUT/runner_err.txt; $s pack
