#!/usr/bin/env bash
# Prepared by the twenty-seventh session for the next device session (not run: no device was
# lent for it). few_narrow_four_samples.patch (a git diff against 462f38f): forward of three or
# four samples on narrow layers (under 3 teams per multiprocessor) runs the narrow kernel of one
# or two samples, four decoding warps over 256-deep chunks, with t staged as halves (floats do not
# fit 256-deep chunks in 48 KiB of scratch; ptxas 136 registers, no spills). Halves alone cost
# the 4-sample kernel 6-9% on narrower layers over 128-deep chunks (twenty-sixth session); the
# longer chunks gave one and two samples 15-22% (twenty-seventh). The Linear.* shapes of 3-4
# samples over 128-320 deep layers of few columns cover the narrow path's partial chunks.
# This script: the perf driver's build, the patch against the tree on seven shapes (2 interleaved
# runs, --repeat 7), the patched tree's Linear.*. If it wins, land it with a full build, ctest,
# the conformance runner and compute-sanitizer on Linear.* (gpu_session.sh).
#   bash docs/results/h200_next/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_next v=few_narrow_four_samples
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/$v.patch" \
  VARIANT_ARGS="--shape 11008x4096x3 --shape 11008x4096x4 --shape 4096x4096x3 --shape 4096x4096x4 --shape 4096x11008x4 --shape 4096x11008x1 --shape 16384x16384x4" \
  timeout 200 $s variants >/dev/null; el variants
patch -s -p1 < $p/$v.patch; touch src/impl/TernaryCounter_FewSampleProduct.hpp
cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build_$v.log 2>&1 &&
  timeout 60 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_$v.log 2>&1
echo "$v Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/linear_$v.log | tr '\n' ' ')" >> $OUT/summary.txt
patch -s -R -p1 < $p/$v.patch; el "tests $v"
rm -f $OUT/runner_err.txt; $s pack
