#!/usr/bin/env bash
# Session 18 call 3: the candidate (base) against cap4 (at most four few-sample teams per
# multiprocessor) and cap4_pairs_fwd (cap4 with paired lanes in forward too); ncu launch stats.
cd "$(dirname "$0")/../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS=".deps/mv/cap4.patch .deps/mv/cap4_pairs_fwd.patch" VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x4 --shape 16384x16384x1 --shape 4096x4096x16" $s variants >/dev/null; el variants
grep -h -E "variant|^ +[0-9]+ +[0-9]+ +[0-9]+ \| +[0-9.]+ \|" $OUT/summary.txt
for p in "" .deps/mv/cap4_pairs_fwd.patch; do
  [ -n "$p" ] && patch -s -p1 < $p && cmake --build build/cuda --target ternary-counter-perf >/dev/null 2>&1
  NCU_KERNELS="FewSampleProduct.*ForwardProduct FewSampleProduct.*BackwardInputProduct" NCU_SHAPE=16384x16384x16 timeout 120 $s ncu > /dev/null
  for f in $OUT/ncu_*.log; do mv "$f" "${f%.log}_$(basename "${p:-base}" .patch).txt"; done
  grep -H -E "Duration|Elapsed Cycles|SM Active Cycles|Achieved Active Warps|Shared Memory Config|Block Limit (Sh|Reg)" $OUT/ncu_*_$(basename "${p:-base}" .patch).txt | sed 's/  */ /g'
done; el ncu
cd $OUT && tar czf logs.tgz *.log *.txt && rm -f *.log ncu_*.txt
