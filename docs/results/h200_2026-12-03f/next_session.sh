#!/usr/bin/env bash
# Prepared for the next device session (not run): why the H200's row update loads each group's
# gradient as four 32-bit loads (call 2's ncu: LDG.E 2.06 per weight, no LDG.E.128) although
# both kernels hold a 16-byte path chosen by RowUpdateKernel::vector_rows. (1) ctest, whose
# RowUpdateLoads test checks that condition on CUDA allocations; (2) ncu source counters of the
# row update at 4096x4096 with the CSV kept (count LDG.E.128 against LDG.E); (3) HEAD against
# patches/force_vector.patch (the 16-byte path forced on; the driver's Views are aligned), which
# says what the vector loads are worth, and whether they appear at all.
#   bash docs/results/h200_2026-12-03f/next_session.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03f/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 build/cuda/unit_tests/ternary-counter-test-Cuda --gtest_filter='RowUpdateLoads.*:TeamSizes.*' > $OUT/unit_loads.log 2>&1
grep -E "OK|FAILED|Failure|Expected|Which is|PASSED" $OUT/unit_loads.log | head -20 >> $OUT/summary.txt; el unit
NCU_KERNEL=RowUpdateKernel NCU_SHAPE=4096x4096x256 timeout 90 $s ncu_source >> $OUT/summary.txt; el ncu
grep -E "^ +LDG" $OUT/ncu_summary_RowUpdateKernel.txt >> $OUT/summary.txt
grep -c "LDG.E.128" $OUT/ncu_source_RowUpdateKernel.csv >> $OUT/summary.txt; gzip -f $OUT/ncu_source_RowUpdateKernel.csv
left 300 && VARIANT_REPEAT=5 VARIANTS="$p/force_vector.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16" \
  timeout 200 $s variants >/dev/null; el variants
left 480 && { timeout 100 $s test; el ctest; }
rm -f $OUT/runner_err.txt; $s pack
