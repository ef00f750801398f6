#!/usr/bin/env bash
# Twenty-fifth session, call 1 (prepared by the twenty-fourth): the order of the
# micro-tile's fmas. ncu (docs/results/h200_2026-12-04c, calls 2-4) puts the rest of forward's
# and backward_input's gap to cuBLAS in the fma loop's dispatch stalls (10-17% of its samples),
# which moved with ptxas's register choices and not with the source's fmas: most likely the
# register banks of an FFMA's three sources. Each chain's order over the depth stays, so the bits
# do; only the order of the 64 independent fmas of one depth changes, and with it which operand
# a run of FFMAs shares (operand reuse):
# - fma_column_major: b[f] held over 8 fmas instead of a[e];
# - fma_serpentine: rows alternately left to right and right to left (a row's last b is the
#   next row's first);
# - fwd_pairs_fma_*: the same with forward's codes prefetched as pairs (twenty-fourth session:
#   that removed forward's wait on its loads, 7% of its samples, but raised the loop's dispatch
#   stalls 9.8 -> 14.5%, net 1.5-2.5% slower).
# All three products run micro_fma (update_from_io's gradient too). ptxas, forward / backward_input
# / gradient InsideTiles kernels: base 128 / 127 / 128 registers, column_major 128 / 127 / 128,
# serpentine 127 / 128 / 128, fwd_pairs_fma_column_major 126 / 127, fwd_pairs_fma_serpentine
# 126 / 128; no spills. A winner still needs ctest, the conformance runner and the full run.
#   bash docs/results/h200_2026-12-05/s25a.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-05/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS="ternary-counter-perf" $s build || exit 1; el built
VARIANT_REPEAT=7 VARIANTS="$p/fma_column_major.patch $p/fma_serpentine.patch $p/fwd_pairs_fma_column_major.patch $p/fwd_pairs_fma_serpentine.patch" \
  VARIANT_ARGS="--shape 4096x4096x4096 --shape 11008x4096x4096 --shape 4096x11008x4096 --shape 4096x4096x256" \
  timeout 480 $s variants >/dev/null; el variants
rm -f $OUT/runner_err.txt; $s pack
