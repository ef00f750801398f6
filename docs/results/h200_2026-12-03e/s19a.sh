#!/usr/bin/env bash
# Session 19 call 1: the eighteenth session's prepared patches measured against HEAD (5 few-sample
# shapes, 2 interleaved rounds), then quad_first applied: full build, ctest, conformance,
# sanitizers on Linear.*, ncu of its 16-sample forward; each step only while time is left.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03d/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built base
VARIANT_REPEAT=7 VARIANTS="$p/quad_first_prepared.patch $p/quad_first_pairs_fwd_prepared.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x4 --shape 16384x16384x1 --shape 4096x4096x16" \
  $s variants >/dev/null; el variants
patch -s -p1 <$p/quad_first_prepared.patch
$s build >/dev/null; el built quad_first
left 400 && { timeout 150 $s test; el ctest; }
left 430 && { timeout 110 $s conformance; el conformance; }
left 500 && { SANITIZE_FILTER='Linear.*' SANITIZE_TIMEOUT=40 $s sanitize; el sanitize; }
left 550 && { NCU_KERNEL="FewSampleProduct.*ForwardProduct" NCU_SHAPE=16384x16384x16 timeout 30 $s ncu_source; el ncu; }
rm -f $OUT/runner_err.txt; $s pack
