#!/usr/bin/env bash
# Twenty-sixth session, call 5, on the tree of 78352b4 (a chunk's samples loaded before its
# codes, patches/few_samples_first.patch): the whole build, ctest, the conformance runner, an
# interleaved A/B against the tree without the change (cbd7abd's kernels) on the few-sample
# shapes, the tree's few-sample run, and compute-sanitizer on Linear.* if time is left.
#   bash docs/results/h200_2026-12-06/s26e.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh p=docs/results/h200_2026-12-06/patches
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 120 $s test; el ctest
timeout 70 $s conformance; el conformance
AB_PATCHES=$p/few_samples_first.patch AB_RUNS=2 AB_REPEAT=5 \
  AB_ARGS="--shape 4096x11008x1 --shape 11008x4096x1 --shape 4096x4096x1 --shape 16384x16384x1 --shape 16384x16384x2 --shape 4096x11008x2 --shape 11008x4096x3 --shape 4096x4096x4 --shape 16384x16384x4 --shape 16384x16384x8 --shape 4096x4096x16 --shape 16384x16384x16" \
  timeout 240 $s ab >/dev/null; el ab
PERF_ARGS="--repeat 7 --shapes inference --shape 16384x16384x2 --shape 4096x11008x2 --shape 11008x4096x3 --shape 4096x4096x4 --shape 16384x16384x16" \
  timeout 60 $s perf >/dev/null; el "perf few-sample"
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt
left 470 && { SANITIZE_FILTER="Linear.*" SANITIZE_TIMEOUT=45 $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
