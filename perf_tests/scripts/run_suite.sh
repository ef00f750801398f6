#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The benchmark suite on one machine, from an already built tree (any preset, any backend):
#   perf_tests/scripts/run_suite.sh BUILD_DIR OUT_DIR [CASES_DIR]
# 1. ctest in BUILD_DIR;
# 2. the conformance sweep: the conformance runner on every case of CASES_DIR (default
#    unit_tests/data/conformance; the shared SPEC suite works too) under 7 settings (the default
#    team size, 32, 128 and 1024 threads per row, 7 rows per call, 64 threads over one row per
#    call, the Serial backend), each output compared bit for bit with the case's spec_ files;
#    a team size the backend cannot run is reported as refused, not as a mismatch (cases with
#    spec_y_out / spec_grad_x_out, the int8 ones, compare those too);
# 3. the perf driver on its default shapes and on the few-sample shapes (--shapes inference),
#    each with a JSON record, and the MPI driver (when built and mpirun is found) on 1 and 2
#    ranks;
# 4. plots of each perf record (plot_ratios.py; skipped without gnuplot).
# Everything lands in OUT_DIR, with summary.txt; exits 1 when a test or a conformance run fails.
# Environment: SUITE_STEPS (the steps to run, default "tests conformance perf"), PERF_ARGS (extra
# arguments of both perf runs, e.g. "--repeat 9"), MPI_RANKS (default "1 2"), MPI_ARGS (arguments
# of the MPI driver), MPIRUN (default "mpirun").
set -uo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
cases=$(cd "${3:-$root/unit_tests/data/conformance}" && pwd) || exit 2
failed=0
steps=" ${SUITE_STEPS:-tests conformance perf} "
step() { [[ "$steps" == *" $1 "* ]]; }
summary() { echo "$*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"
summary "suite: build $build, cases $cases, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n)"

# 1. Unit and integration tests.
if step tests; then
  (cd "$build" && ctest --output-on-failure) >"$out/ctest.log" 2>&1
  rc=$?
  summary "ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log" || echo "rc=$rc")"
  [ $rc -eq 0 ] || failed=1
fi

# 2. The conformance sweep.
runner=$build/examples/conformance/ternary-counter-conformance
if ! step conformance; then
  :
elif [ -x "$runner" ]; then
  settings=("" "--team-size 32" "--team-size 128" "--team-size 1024" "--rows-per-call 7"
            "--team-size 64 --rows-per-call 1" "--exec serial")
  runs=0 bad=0 refused=0
  scratch=$(mktemp -d)
  for dir in "$cases"/*/; do
    [ -f "$dir/case.txt" ] || continue
    name=$(basename "$dir")
    for setting in "${settings[@]}"; do
      result=$scratch/result
      rm -rf "$result"
      runs=$((runs + 1))
      # shellcheck disable=SC2086  # a setting is several words
      if ! "$runner" $setting "$dir" "$result" 2>"$scratch/stderr"; then
        if grep -q "maximum" "$scratch/stderr"; then
          refused=$((refused + 1))
          echo "refused $name [$setting]: $(head -1 "$scratch/stderr")" >>"$out/conformance.log"
        else
          bad=$((bad + 1))
          echo "FAIL $name [$setting]: $(head -3 "$scratch/stderr")" | tee -a "$out/conformance.log"
        fi
        continue
      fi
      for file in codes_out.u8 scale_out.f32 v_out.f32 y_out.f32 grad_x_out.f32; do
        # The int8 cases also fix forward's and backward_input's outputs.
        [ -f "$dir/spec_$file" ] || continue
        if ! cmp -s "$result/$file" "$dir/spec_$file"; then
          bad=$((bad + 1))
          echo "MISMATCH $name [$setting] $file" | tee -a "$out/conformance.log"
        fi
      done
      if [ "$(cat "$result/skipped.txt")" != "$(cat "$dir/spec_skipped.txt")" ]; then
        bad=$((bad + 1))
        echo "MISMATCH $name [$setting] skipped rows" | tee -a "$out/conformance.log"
      fi
    done
  done
  rm -rf "$scratch"
  summary "conformance: $runs runs, $bad failures or mismatches, $refused refused by the backend"
  [ $bad -eq 0 ] || failed=1
else
  summary "conformance: skipped (no runner at $runner: configure with TernaryCounter_ENABLE_EXAMPLES)"
fi

# 3. The perf drivers, and 4. their plots.
perf=$build/perf_tests/ternary-counter-perf
plot() {
  if python3 "$root/perf_tests/scripts/plot_ratios.py" "$1" >>"$out/plots.log" 2>&1; then
    summary "plot: ${1%.json}.png"
  else
    summary "plot of $(basename "$1"): skipped ($(tail -1 "$out/plots.log"))"
  fi
}
if ! step perf; then
  :
elif [ -x "$perf" ]; then
  for set in default inference; do
    args=()
    [ "$set" = default ] || args=(--shapes "$set")
    # shellcheck disable=SC2086  # PERF_ARGS is several words
    if "$perf" "${args[@]}" ${PERF_ARGS:-} --json "$out/perf_$set.json" >"$out/perf_$set.log" 2>&1; then
      summary "perf ($set shapes): $out/perf_$set.json"
      plot "$out/perf_$set.json"
    else
      summary "perf ($set shapes): failed, see perf_$set.log"
      failed=1
    fi
  done
else
  summary "perf: skipped (no driver at $perf: configure with TernaryCounter_ENABLE_PERF_TESTS)"
fi
perf_mpi=$build/perf_tests/ternary-counter-perf-mpi
if step perf && [ -x "$perf_mpi" ] && command -v "${MPIRUN:-mpirun}" >/dev/null; then
  for ranks in ${MPI_RANKS:-1 2}; do
    # shellcheck disable=SC2086  # MPI_ARGS is several words
    if "${MPIRUN:-mpirun}" -np "$ranks" "$perf_mpi" ${MPI_ARGS:-} --json "$out/perf_mpi_np$ranks.json" \
      >"$out/perf_mpi_np$ranks.log" 2>&1; then
      summary "perf-mpi ($ranks ranks): $out/perf_mpi_np$ranks.json"
    else
      summary "perf-mpi ($ranks ranks): failed, see perf_mpi_np$ranks.log"
      failed=1
    fi
  done
fi
summary "suite: $([ $failed -eq 0 ] && echo passed || echo FAILED)"
exit $failed
