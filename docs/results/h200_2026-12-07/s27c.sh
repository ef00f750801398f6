#!/usr/bin/env bash
# Twenty-seventh session, call 3, on the tree of 956342d (forward of one or two samples on
# narrow layers over 256-deep chunks): the whole build, ctest, the conformance runner, the
# default shapes' full run (JSON for perf_tests/scripts/plot_ratios.py), the few-sample
# shapes, and compute-sanitizer on Linear.*.
#   bash docs/results/h200_2026-12-07/s27c.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
left() { [ $(( $(date +%s) - t0 )) -lt "$1" ]; }
$s build || exit 1; el built
timeout 120 $s test; el ctest
timeout 70 $s conformance; el conformance
timeout 90 $s perf >/dev/null; el perf
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt
mv $OUT/perf.log $OUT/perf_default.log; mv $OUT/perf_cuda.json $OUT/perf_default_cuda.json
PERF_ARGS="--repeat 7 --shapes inference --shape 16384x16384x2 --shape 4096x11008x2 --shape 4096x4096x2 --shape 11008x4096x3 --shape 4096x4096x4 --shape 16384x16384x8 --shape 4096x4096x16 --shape 16384x16384x16" \
  timeout 80 $s perf >/dev/null; el "perf few-sample"
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" $OUT/perf.log >> $OUT/summary.txt
mv $OUT/perf.log $OUT/perf_few.log; mv $OUT/perf_cuda.json $OUT/perf_few_cuda.json
left 470 && { SANITIZE_FILTER="Linear.*" SANITIZE_TIMEOUT=60 $s sanitize; el sanitize; }
rm -f $OUT/runner_err.txt; $s pack
