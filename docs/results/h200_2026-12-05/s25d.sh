#!/usr/bin/env bash
# Twenty-fifth session, call 4: forward's few-sample chains with t staged as 16-bit halves
# (patches/few_half_weights.patch). The 16-sample forward is bound by the shared-memory pipe
# (L1/TEX 90%, seventeenth session); halves take half the wavefronts of the weights' stores and
# reads (an LDS.64 of 4 weights instead of an LDS.128), for a shift or mask per weight in the
# chains. ptxas: the 16-sample kernel 117 -> 130 registers, no spills; the two-chain-warp one
# 161 -> 168 with 16 bytes spilled. Variants step against the tree, then the variant's Linear.*
# tests (bit-exact against the host loops) if the device time allows.
#   bash docs/results/h200_2026-12-05/s25d.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-05/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=5 VARIANTS="$p/few_half_weights.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x1 --shape 4096x4096x16 --shape 11008x4096x16" \
  timeout 200 $s variants >/dev/null; el variants
patch -s -p1 < $p/few_half_weights.patch; touch src/impl/TernaryCounter_FewSampleProduct.hpp
cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build.log 2>&1 &&
  timeout 40 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear.log 2>&1
echo "few_half_weights Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/linear.log | tr '\n' ' ')" >> $OUT/summary.txt
el tests
rm -f $OUT/runner_err.txt; $s pack
