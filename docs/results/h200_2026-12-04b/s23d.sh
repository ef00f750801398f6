#!/usr/bin/env bash
# Call 4: the session's final tree (src unchanged since 59eea51's instructions) through the
# whole GPU check: full build, ctest, the conformance runner, the default shapes' full run.
#   bash docs/results/h200_2026-12-04b/s23d.sh   (carry .deps as gpu_session.sh needs)
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
s=perf_tests/scripts/gpu_session.sh
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
$s build || exit 1; el built
timeout 150 $s test; el test
timeout 90 $s conformance; el conformance
timeout 120 $s perf; el perf
rm -f $OUT/runner_err.txt; $s pack
