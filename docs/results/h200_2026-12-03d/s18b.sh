#!/usr/bin/env bash
# Session 18 call 2: the candidate (paired lanes in backward_input's few-sample chains): build,
# ncu of its 16-sample forward and backward_input, ctest, then ncu of the forward with paired
# lanes (pairs_fwd.patch), the candidate's perf at the few-sample shapes, conformance.
cd "$(dirname "$0")/../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
$s build || exit 1; el built
cp build/cuda/perf_tests/ternary-counter-perf /tmp/perf-cand
for k in ForwardProduct BackwardInputProduct; do
  NCU_KERNEL="FewSampleProduct.*$k" NCU_SHAPE=16384x16384x16 timeout 90 $s ncu_source
  for f in $OUT/ncu_*_$k.*; do mv "$f" "${f%.*}_quarters.${f##*.}"; done
done; el ncu
timeout 200 $s test; el ctest
patch -s -p1 < .deps/mv/pairs_fwd.patch
cmake --build build/cuda --target ternary-counter-perf > $OUT/pairs_fwd_build.log 2>&1; el built pairs_fwd
NCU_KERNEL="FewSampleProduct.*ForwardProduct" NCU_SHAPE=16384x16384x16 timeout 90 $s ncu_source
for f in $OUT/ncu_*_ForwardProduct.*; do mv "$f" "${f%.*}_pairs.${f##*.}"; done; el ncu pairs
patch -s -R -p1 < .deps/mv/pairs_fwd.patch
for r in 1 2; do /tmp/perf-cand --repeat 7 --shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x4 --shape 4096x4096x16 > $OUT/perf_cand_$r.log 2>&1; done
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf_cand_*.log; el perf
cmake --build build/cuda --target ternary-counter-perf >/dev/null 2>&1
timeout 150 $s conformance; el conformance
rm -f $OUT/runner_err.txt
