#!/usr/bin/env bash
# Twenty-fifth session, call 3: call 1's lesson (the order of a micro-tile's independent fmas
# moved the tile engine's dispatch stalls) tried on the few-sample chains, whose 16-sample fma
# loop had 12% dispatch stalls (nineteenth session). A chain lane runs LaneColumns x
# lane_samples chains (4 x 4 at 16 samples) per depth index; each chain keeps its order over the
# depth, so the bits stay. Variants on top of b4a254c: few_serpentine (a column's samples
# alternately up and down), few_sample_major (samples outer, columns inner). Then the
# serpentine tree's Linear.* tests (bit-exact against the host loops), and the other's if time
# is left.
#   bash docs/results/h200_2026-12-05/s25c.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-05/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/few_serpentine.patch $p/few_sample_major.patch" \
  VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x12 --shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16" \
  timeout 300 $s variants >/dev/null; el variants
for v in few_serpentine few_sample_major; do
  left 420 || break
  patch -s -p1 < $p/$v.patch
  touch src/impl/TernaryCounter_FewSampleProduct.hpp
  cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build_$v.log 2>&1 &&
    timeout 90 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_$v.log 2>&1
  echo "$v Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/linear_$v.log | tr '\n' ' ')" >> $OUT/summary.txt
  patch -s -R -p1 < $p/$v.patch
  el "tests $v"
done
rm -f $OUT/runner_err.txt; $s pack
