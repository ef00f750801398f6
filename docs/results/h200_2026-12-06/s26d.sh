#!/usr/bin/env bash
# Twenty-sixth session, call 4. Call 3's ncu had the one-sample kernels on narrow layers waiting
# on their global loads (long scoreboard 35-37% of the stall samples, issue slots 11-13% busy,
# DRAM 7%): each decoding lane keeps two chunks of loads in flight. Variants (each a git diff
# against cbd7abd): four (few_prefetch4) or three (few_prefetch3) chunks in flight in the
# one-column kernels (1-4 samples, both products; ptxas: 154-164 registers with four, no
# spills). Then the Linear.* tests of few_prefetch4.
#   bash docs/results/h200_2026-12-06/s26d.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-06/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=5 VARIANTS="$p/few_prefetch4.patch $p/few_prefetch3.patch" \
  VARIANT_ARGS="--shape 4096x11008x1 --shape 11008x4096x1 --shape 4096x4096x1 --shape 16384x16384x1 --shape 16384x16384x2 --shape 4096x11008x2 --shape 11008x4096x3 --shape 4096x4096x4 --shape 16384x16384x4 --shape 16384x16384x16" \
  timeout 300 $s variants >/dev/null; el variants
v=few_prefetch4
patch -s -p1 < $p/$v.patch; touch src/impl/TernaryCounter_FewSampleProduct.hpp
cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build_$v.log 2>&1 &&
  timeout 60 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_$v.log 2>&1
echo "$v Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/linear_$v.log | tr '\n' ' ')" >> $OUT/summary.txt
patch -s -R -p1 < $p/$v.patch; el "tests $v"
rm -f $OUT/runner_err.txt; $s pack
