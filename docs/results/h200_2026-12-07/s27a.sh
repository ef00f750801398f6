#!/usr/bin/env bash
# Call 1 of the twenty-seventh session, run as the twenty-sixth prepared it (then
# docs/results/h200_next/next_session.sh; "not run" below is from then). The twenty-sixth
# session found that nvcc puts all of a few-sample decoding lane's global loads on one
# scoreboard, so staging a chunk waits for every load in flight, the next chunk's too: a
# decoder's loads are effectively one chunk ahead, whatever the ring's depth (call 4: deeper
# rings slower). A longer chunk then hides more of each memory latency behind the chains.
# few_narrow_wide_chunks.patch (a git diff against a2a54ed): forward of one or two samples on
# narrow layers (under 3 teams per multiprocessor: 4096 or 11008 columns on an H200) runs four
# decoding warps over 256-deep chunks of halves (teams of 160 threads, launch bound 2 teams,
# ptxas 120 registers, no spills); the rows of halves are compacted (half a row of floats) so
# the chunk fits the scratch; a partial last chunk may have 1-3 steps (chain_steps); Linear.*
# shapes for both paths. Every few-sample kernel's PTX changes (1-step-chunk kernels lose a dead
# copy of their chain), so the variants step covers all of them.
#   bash docs/results/h200_2026-12-07/s27a.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-07/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=5 VARIANTS="$p/few_narrow_wide_chunks.patch" \
  VARIANT_ARGS="--shape 4096x11008x1 --shape 11008x4096x1 --shape 4096x4096x1 --shape 4096x11008x2 --shape 4096x4096x2 --shape 16384x16384x1 --shape 16384x16384x2 --shape 11008x4096x3 --shape 4096x4096x4 --shape 16384x16384x8 --shape 4096x4096x16 --shape 16384x16384x16" \
  timeout 240 $s variants >/dev/null; el variants
v=few_narrow_wide_chunks
patch -s -p1 < $p/$v.patch; touch src/impl/TernaryCounter_FewSampleProduct.hpp unit_tests/Test_Linear.cpp
cmake --build build/cuda --target ternary-counter-test-Cuda > $OUT/test_build_$v.log 2>&1 &&
  timeout 60 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='Linear.*' > $OUT/linear_$v.log 2>&1
echo "$v Linear.*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/linear_$v.log | tr '\n' ' ')" >> $OUT/summary.txt
el "tests $v"
cmake --build build/cuda --target ternary-counter-perf > $OUT/ncu_build_$v.log 2>&1 &&
  NCU_KERNEL="FewSampleProduct.*ForwardProduct" NCU_SHAPE=4096x11008x1 timeout 60 $s ncu_source >> $OUT/summary.txt
patch -s -R -p1 < $p/$v.patch; el "ncu $v"
rm -f $OUT/runner_err.txt; $s pack
