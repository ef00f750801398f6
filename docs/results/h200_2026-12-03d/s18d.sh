#!/usr/bin/env bash
# Session 18 call 5: the tree as committed (sources touched: a clean rebuild): memcheck and
# racecheck of Linear.*, the few-sample shapes, then the perf driver's default shapes.
cd "$(dirname "$0")/../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
grep -n "paired_lanes =" src/impl/TernaryCounter_FewSampleProduct.hpp
BUILD_TARGETS="ternary-counter-test-Cuda ternary-counter-perf" $s build || exit 1; el built
SANITIZE_FILTER='Linear.*' SANITIZE_TIMEOUT=100 $s sanitize; el sanitize
build/cuda/perf_tests/ternary-counter-perf --repeat 7 --shape 16384x16384x16 --shape 16384x16384x8 --shape 16384x16384x4 --shape 16384x16384x1 --shape 4096x4096x16 > $OUT/perf_few.log 2>&1
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf_few.log; el few
PERF_ARGS="--repeat 7" $s perf; el perf
