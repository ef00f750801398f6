#!/usr/bin/env bash
# Session 21, prepared for a device session with little time (not run: this session's device
# time was spent): the final tree (f5a5a13, the source of f67e9d2) through the CUDA
# conformance runner only, each result written as it comes.
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-out}; mkdir -p $OUT
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a $OUT/summary.txt; }
BUILD_TARGETS=ternary-counter-conformance perf_tests/scripts/gpu_session.sh build || exit 1; el built
runner=build/cuda/examples/conformance/ternary-counter-conformance
for args in "" "--team-size 32" "--team-size 1024"; do
  for d in .deps/conformance/*/; do
    n=$(basename $d) o=/tmp/conf/$n; rm -rf $o
    $runner $args $d $o >/dev/null 2>&1 || { el "FAIL $n $args"; continue; }
    bad=0
    for f in codes_out.u8 scale_out.f32 v_out.f32; do cmp -s $o/$f $d/spec_$f || bad=$((bad + 1)); done
    [ "$(cat $o/skipped.txt)" = "$(cat $d/spec_skipped.txt)" ] || bad=$((bad + 1))
    el "$n ${args:-default}: $bad mismatching files"
  done
done
