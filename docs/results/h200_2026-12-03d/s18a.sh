#!/usr/bin/env bash
# Session 18 call 1: base vs pairs (FewSampleProduct lane bit 0 = sample group) vs tilepairs
# (TileGemm warps of 4x8 micro-tiles), then Linear.* on the tree with both, then ncu of the
# pairs' 16-sample forward.
cd "$(dirname "$0")/../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
BUILD_TARGETS=ternary-counter-perf $s build || exit 1; el built
VARIANT_REPEAT=5 VARIANTS=".deps/mv/pairs.patch .deps/mv/tilepairs.patch" VARIANT_ARGS="--shape 16384x16384x16 --shape 16384x16384x8 --shape 4096x4096x16 --shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096" $s variants >/dev/null; el variants
grep -h -E "variant|^ +[0-9]" $OUT/summary.txt | head -80
patch -s -p1 < .deps/mv/pairs.patch; patch -s -p1 < .deps/mv/tilepairs.patch
cmake --build build/cuda --target ternary-counter-test-Cuda ternary-counter-perf > $OUT/test_build.log 2>&1 || tail $OUT/test_build.log; el test built
build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_pairs.log 2>&1; echo "Linear rc=$?"; tail -3 $OUT/linear_pairs.log; el linear
NCU_KERNEL="FewSampleProduct.*ForwardProduct" NCU_SHAPE=16384x16384x16 timeout 150 $s ncu_source; el ncu
grep -h -A4 "wavefronts" $OUT/ncu_summary_*.txt
