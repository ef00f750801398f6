#!/usr/bin/env bash
# One batched GPU session (the device machine bills by the minute): CUDA build, unit tests,
# conformance at several team sizes and row splits, sanitizers, then the perf driver.
#   perf_tests/scripts/gpu_session.sh STEPS...
#   STEPS from: build test conformance sanitize perf ncu ncu_source ab variants pack
# Expects .deps/kokkos_5.0.2.orig.tar.gz, .deps/kokkos-kernels-2fc2af19f.tar.gz and
# .deps/conformance/<cases> (copies of ../shared; the GPU machine reaches no code host),
# writes logs and JSON to $OUT (or ./out). BUILD_DIR (default build/cuda) names an already
# configured build instead, e.g. build/openmp to try the ab step on a host.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-out}
mkdir -p "$out"
build=${BUILD_DIR:-build/cuda}
perf=$build/perf_tests/ternary-counter-perf
runner=$build/examples/conformance/ternary-counter-conformance
cases=.deps/conformance
summary() { echo "$*" | tee -a "$out/summary.txt"; }
# The last word of a kernel-name regex, as a file name (the device returns plain names only).
file_name() { local name=${1##*.}; echo "${name//[^A-Za-z0-9_]/}"; }
# Builds the perf driver of the tree as it is and keeps a copy named NAME (log appended to LOG).
build_perf_as() {
  cmake --build $build --target ternary-counter-perf >>"$2" 2>&1 || { tail -20 "$2"; return 1; }
  cp $perf "/tmp/ternary-counter-perf-$1"
}
# PREFIX RUNS REPEAT ARGS NAMES...: RUNS rounds of the kept drivers NAMES, one after another
# (the machine's drift hits each alike), logs PREFIX_NAME_ROUND.log, their tables in the summary.
run_interleaved() {
  local prefix=$1 runs=$2 repeat=$3 args=$4 run name
  shift 4
  for run in $(seq "$runs"); do
    for name in "$@"; do
      /tmp/ternary-counter-perf-$name --repeat "$repeat" $args >"$out/${prefix}_${name}_$run.log" 2>&1
      summary "$prefix $name run $run:"
      grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" "$out/${prefix}_${name}_$run.log" | tee -a "$out/summary.txt"
    done
  done
}

for step in "$@"; do
  case $step in
  build)
    if [ "$build" = build/cuda ]; then
      cmake --preset cuda -G Ninja -DTernaryCounter_KOKKOS_TARBALL="$PWD/.deps/kokkos_5.0.2.orig.tar.gz" \
        -DTernaryCounter_KOKKOSKERNELS_SOURCE="$PWD/.deps/kokkos-kernels-2fc2af19f.tar.gz" \
        -DTernaryCounter_SHARED_CONFORMANCE_DIR="$PWD/$cases" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
    fi
    # A warm machine keeps its build folder, and the tree copied in keeps this machine's times:
    # a source changed there by a step and copied back unchanged here is older than its object
    # and would not be rebuilt.
    find src -type f -exec touch {} +
    cmake --build $build ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -30; exit 1; }
    summary "build: ok"
    ;;
  test)
    (cd $build && ctest --output-on-failure) >"$out/ctest.log" 2>&1
    summary "ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log")"
    grep -E "FAILED|SKIPPED" "$out/ctest.log" | head -20
    ;;
  conformance)
    bad=0; runs=0
    for d in "$cases"/*/; do
      n=$(basename "$d")
      for args in "" "--team-size 32" "--team-size 128" "--team-size 1024" "--rows-per-call 7" \
                  "--team-size 64 --rows-per-call 1" "--exec serial"; do
        o=/tmp/conf/$n; rm -rf "$o"; runs=$((runs + 1))
        if ! $runner $args "$d" "$o" 2>"$out/runner_err.txt"; then bad=$((bad + 1)); summary "FAIL run $n $args: $(cat "$out/runner_err.txt")"; continue; fi
        for f in codes_out.u8 scale_out.f32 v_out.f32; do
          cmp -s "$o/$f" "$d/spec_$f" || { bad=$((bad + 1)); summary "MISMATCH $n $args $f"; }
        done
        [ "$(cat "$o/skipped.txt")" = "$(cat "$d/spec_skipped.txt")" ] || { bad=$((bad + 1)); summary "MISMATCH $n $args skipped"; }
      done
    done
    summary "conformance: $runs runs, $bad mismatches"
    ;;
  sanitize)
    for tool in memcheck racecheck; do
      timeout ${SANITIZE_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 99 $build/unit_tests/ternary-counter-test-Cuda \
        --gtest_filter="${SANITIZE_FILTER:-*}" >"$out/sanitizer_$tool.log" 2>&1
      summary "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tail -1)"
    done
    ;;
  perf)
    $perf --json "$out/perf_cuda.json" ${PERF_ARGS:-} 2>&1 | tee "$out/perf.log" | tail -25
    ;;
  ncu)
    # Kokkos kernels all launch through one CUDA function: match the functor in the demangled name.
    for kernel in ${NCU_KERNELS:-TileGemm.*GradientProduct TileGemm.*ForwardProduct TileGemm.*BackwardInputProduct SmallBatchProduct RowUpdateKernel}; do
      ncu --clock-control none --kernel-name-base demangled --kernel-name regex:$kernel \
        --launch-skip 4 --launch-count 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats \
        $perf --shape ${NCU_SHAPE:-4096x4096x4096} --repeat 5 \
        >"$out/ncu_$(file_name "$kernel").log" 2>&1
      echo "== ncu $kernel"
      grep -E "Duration|Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Shared Memory Config|Memory \[%\]|Compute \(SM\)" "$out/ncu_$(file_name "$kernel").log" | head -24
    done
    ;;
  ncu_source)
    # Per-instruction counters (SASS, executed instructions, stall samples) of one launch of
    # NCU_KERNEL, as CSV: where a kernel's instructions go.
    kernel=${NCU_KERNEL:-RowUpdateKernel}
    name=$(file_name "$kernel")
    ncu --clock-control none --kernel-name-base demangled --kernel-name regex:$kernel \
      --launch-skip 4 --launch-count 1 --set full --import-source no -o "$out/ncu_source" \
      $perf --shape ${NCU_SHAPE:-4096x4096x256} --repeat 5 >"$out/ncu_source_run.log" 2>&1
    ncu -i "$out/ncu_source.ncu-rep" --page source --csv --print-source sass >"$out/ncu_source_$name.csv"
    ncu -i "$out/ncu_source.ncu-rep" --page details >"$out/ncu_details_$name.txt"
    python3 perf_tests/scripts/ncu_source_summary.py "$out/ncu_source_$name.csv" >"$out/ncu_summary_$name.txt"
    rm -f "$out/ncu_source.ncu-rep"
    grep -E "Duration|Executed Instructions  |Issue Slots Busy|Registers Per" "$out/ncu_details_$name.txt"
    ;;
  ab)
    # Interleaved A/B of the perf driver in one session: B is the working tree as built, A the
    # working tree with the patches AB_PATCHES (files made by `git diff`) reverted. The tree and
    # the build are B again afterwards. AB_ARGS: the driver's arguments (e.g. --shape ...).
    build_perf_as B "$out/ab_build.log" || exit 1
    for p in ${AB_PATCHES:?AB_PATCHES names the patches that make B}; do patch -s -R -p1 <"$p" || exit 1; done
    build_perf_as A "$out/ab_build.log"; built_a=$?
    for p in $(printf '%s\n' $AB_PATCHES | tac); do patch -s -p1 <"$p" || exit 1; done
    cmake --build $build --target ternary-counter-perf >>"$out/ab_build.log" 2>&1 || exit 1
    [ $built_a -eq 0 ] || { echo "ab: A does not build (ab_build.log)"; exit 1; }
    run_interleaved ab "${AB_RUNS:-2}" "${AB_REPEAT:-9}" "${AB_ARGS:-}" A B
    ;;
  variants)
    # Several changes in one session: each patch of VARIANTS (files made by `git diff`) applied
    # alone on top of the working tree (the base) and built in turn, then the base's and every
    # variant's driver run one after another, VARIANT_RUNS rounds (default 2) of VARIANT_ARGS.
    # The tree and the build are the base again afterwards.
    build_perf_as base "$out/variants_build.log" || exit 1
    names=base
    for p in ${VARIANTS:?VARIANTS names the patches to compare}; do
      name=$(basename "$p" .patch)
      patch -s -p1 <"$p" || exit 1
      build_perf_as "$name" "$out/variants_build.log"; built=$?
      patch -s -R -p1 <"$p" || exit 1
      [ $built -eq 0 ] || { echo "variants: $name does not build (variants_build.log)"; exit 1; }
      names="$names $name"
    done
    cmake --build $build --target ternary-counter-perf >>"$out/variants_build.log" 2>&1 || exit 1
    run_interleaved variant "${VARIANT_RUNS:-2}" "${VARIANT_REPEAT:-7}" "${VARIANT_ARGS:-}" $names
    ;;
  pack)
    # The device returns only a few files (8): everything but the summary into one archive
    # (appended to, so several packs in one call keep all).
    (cd "$out" && files=$(ls | grep -v -e '^summary.txt$' -e '^logs.tar$') &&
      [ -n "$files" ] && tar rf logs.tar $files && rm -f $files)
    ;;
  *) echo "unknown step $step"; exit 2 ;;
  esac
done
