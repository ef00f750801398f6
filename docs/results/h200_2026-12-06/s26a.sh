#!/usr/bin/env bash
# Prepared by the twenty-fifth session for the next device session (not run). Three questions
# about the few-sample forward's 16-bit staged weights (docs/PERFORMANCE.md, twenty-fifth
# session, call 4: one sample 0.204 -> 0.185 ms; 8 and 16 samples unchanged):
# 1. Do two to four samples (the same one-column chains, 8-deep groups) gain as one did?
#    few_half_weights_1to4.patch widens the halves to LaneColumns == 1 (ptxas: 2 samples
#    125 -> 123 registers, 4 samples 141 -> 135, no spills). Variants step, then its Linear.*.
# 2. With halves, 16 samples' weights and values fit 128-deep chunks in the 48 KB of scratch
#    (64-deep before): half the chunk barriers per depth, the decoding warps a whole step each.
#    few_half16_chunk128.patch (compact half rows; forward's one-chain-warp 16-sample kernel
#    only; ptxas 168 registers, 16 bytes spilled; the one-sample kernel's rows compacted too;
#    a Linear.* shape over a depth ending inside a chunk). Variants step, then its Linear.*.
# 3. Why did halving the weights' scratch wavefronts not move the 16-sample forward, which the
#    seventeenth session's ncu had bound by L1/TEX (90%)? ncu's source counters of it with halves
#    in every forward kernel (few_half_weights_all.patch), to set against
#    docs/results/h200_2026-12-03d/call2_ncu_* (wavefronts per opcode, MIO stalls).
#   bash docs/results/h200_2026-12-06/s26a.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-06/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/few_half_weights_1to4.patch $p/few_half16_chunk128.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x12 --shape 16384x16384x4 --shape 16384x16384x2 --shape 16384x16384x1 --shape 4096x4096x4 --shape 11008x4096x3 --shape 4096x11008x2" \
  timeout 280 $s variants >/dev/null; el variants
for v in few_half_weights_all; do
  left 380 || break
  patch -s -p1 < $p/$v.patch; touch src/impl/TernaryCounter_FewSampleProduct.hpp
  cmake --build build/cuda --target ternary-counter-perf > $OUT/ncu_build_$v.log 2>&1 || break
  NCU_KERNEL="FewSampleProduct.*ForwardProduct" NCU_SHAPE=16384x16384x16 timeout 90 $s ncu_source >> $OUT/summary.txt
  for f in $OUT/ncu_*_ForwardProduct.*; do [ -e "$f" ] && mv "$f" "${f%.*}_$v.${f##*.}"; done
  gzip -f $OUT/ncu_source_ForwardProduct_$v.csv
  patch -s -R -p1 < $p/$v.patch
  el "ncu $v"
done
for v in few_half_weights_1to4 few_half16_chunk128; do
  left 500 || break
  patch -s -p1 < $p/$v.patch; touch src/impl/TernaryCounter_FewSampleProduct.hpp unit_tests/Test_Linear.cpp
  cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build_$v.log 2>&1 &&
    timeout 40 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_$v.log 2>&1
  echo "$v Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/linear_$v.log | tr '\n' ' ')" >> $OUT/summary.txt
  patch -s -R -p1 < $p/$v.patch; el "tests $v"
done
rm -f $OUT/runner_err.txt; $s pack
