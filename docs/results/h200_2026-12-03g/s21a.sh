#!/usr/bin/env bash
# Session 21 call 2: the row update with the code table filled by the host (teams copy it), the
# row scalars formed by one thread, and a kernel of its own for 16-byte gradient rows (no
# predicated scalar loads). Full build, ctest, then the driver against patches/: before (the
# whole change undone), fill_per_team, scalars_per_thread, scalar_loads (each one part undone,
# scalar_loads: every row read a float at a time); the conformance runner; ncu source counters.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-03g/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 110 $s test; el ctest
left 240 && VARIANT_REPEAT=7 VARIANTS="$p/before.patch $p/fill_per_team.patch $p/scalars_per_thread.patch $p/scalar_loads.patch" \
  VARIANT_ARGS="--shape 4096x4096x16 --shape 11008x4096x16 --shape 4096x11008x16 --shape 16384x16384x16 --shape 2048x32768x16" \
  timeout 250 $s variants >/dev/null; el variants
left 480 && { timeout 70 $s conformance; el conformance; }
left 540 && { NCU_KERNEL=RowUpdateKernel NCU_SHAPE=4096x4096x256 timeout 40 $s ncu_source >> $OUT/summary.txt; el ncu
  head -20 $OUT/ncu_summary_RowUpdateKernel.txt >> $OUT/summary.txt; gzip -f $OUT/ncu_source_RowUpdateKernel.csv; }
rm -f $OUT/runner_err.txt; $s pack
