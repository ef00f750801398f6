#!/usr/bin/env bash
# The check of issue 12 on a GPU: the vendor GEMM through KokkosBlas::gemm (this tree) against the
# direct cuBLAS calls it replaced (BASE, a `git archive` of a revision before the change, e.g.
# .deps/base_57f3686.tar), both built and run in one session on the same GPU, same shapes.
#   perf_tests/scripts/vendor_check_session.sh BASE_TAR [SHAPE...]
# Builds BASE's perf driver next to this tree's full build, then runs both drivers and
# compare_vendor.py (5% tolerance). Writes logs and JSON to $OUT (or ./out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-out}
mkdir -p "$out"
base_tar=$1
shift
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(4096x4096x4096 11008x4096x4096 1024x1024x8192 4096x4096x256)
args=()
for s in "${shapes[@]}"; do args+=(--shape "$s"); done

base=/tmp/vendor_base
rm -rf "$base" && mkdir -p "$base" && tar -xf "$base_tar" -C "$base" && cp -r .deps "$base/"
(cd "$base" && OUT="$out/base" BUILD_TARGETS=ternary-counter-perf \
  perf_tests/scripts/gpu_session.sh build) >"$out/base_build.txt" 2>&1 &
base_pid=$!
perf_tests/scripts/gpu_session.sh build
wait $base_pid || { echo "base build failed:"; tail -20 "$out/base_build.txt"; exit 1; }

# Alternate the two drivers so that a drift of the GPU's clocks hits both alike.
for round in 1 2; do
  "$base/build/cuda/perf_tests/ternary-counter-perf" "${args[@]}" --json "$out/vendor_base_$round.json" \
    >"$out/vendor_base_$round.log" 2>&1
  build/cuda/perf_tests/ternary-counter-perf "${args[@]}" --json "$out/vendor_new_$round.json" \
    >"$out/vendor_new_$round.log" 2>&1
  python3 perf_tests/scripts/compare_vendor.py "$out/vendor_base_$round.json" \
    "$out/vendor_new_$round.json" | tee "$out/vendor_compare_$round.txt"
done
