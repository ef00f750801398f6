#!/usr/bin/env bash
# Session 21 call 3: the final code (803b5d3: row scalars by one thread, a kernel for 16-byte
# gradient rows, teams fill the code table, g / denom through the row's reciprocal). Full
# build, ctest, all 2^46 mantissa pairs of the reciprocal quotient against the division, the
# conformance runner, the driver against patches/before_final.patch (the session's change
# undone) and divide_each.patch (the reciprocal undone), the default and llm shapes, then
# compute-sanitizer on the row update's tests in what time is left.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03g/patches
perf=build/cuda/perf_tests/ternary-counter-perf
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 $s test; el ctest
TERNARYCOUNTER_QUOTIENTS=all timeout 150 build/cuda/unit_tests/ternary-counter-test-Cuda \
  --gtest_filter='Quotients.*' > $OUT/quotients_all.log 2>&1; echo "quotients rc=$?" >> $OUT/summary.txt
grep -E "mantissa pairs|OK|FAILED" $OUT/quotients_all.log >> $OUT/summary.txt; el quotients
left 330 && { timeout 70 $s conformance; el conformance; }
left 380 && VARIANT_REPEAT=7 VARIANTS="$p/before_final.patch $p/divide_each.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 120 $s variants >/dev/null; el variants
left 480 && { timeout 30 $s perf | tail -22 >> $OUT/summary.txt; el perf; }
left 500 && { timeout 30 $perf --shapes llm --repeat 5 --json $OUT/perf_llm.json > $OUT/perf_llm.log 2>&1; tail -8 $OUT/perf_llm.log >> $OUT/summary.txt; el llm; }
left 520 && { SANITIZE_TIMEOUT=35 SANITIZE_FILTER='RowUpdateLoads.*:TeamSizes.*:Reference.Gradients*' $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
