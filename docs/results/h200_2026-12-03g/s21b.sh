#!/usr/bin/env bash
# Session 21 call 3: the final code (f67e9d2: row scalars by one thread, a kernel for 16-byte
# gradient rows, teams fill the code table). Full build, ctest, the conformance runner, the
# driver against patches/before_final.patch (the session's change undone), the default and llm
# shapes, then compute-sanitizer on the row update's tests in what time is left.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03g/patches
perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 $s test; el ctest
left 250 && { timeout 70 $s conformance; el conformance; }
left 300 && VARIANT_REPEAT=7 VARIANTS="$p/before_final.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 150 $s variants >/dev/null; el variants
left 420 && { timeout 30 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
left 440 && { timeout 30 $perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1; tail -8 $OUT/perf_llm.log >> $OUT/summary.txt; el llm; }
left 470 && { SANITIZE_TIMEOUT=45 SANITIZE_FILTER='RowUpdateLoads.*:TeamSizes.*:Small/RowSplits.*' $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
