#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# A/B of a patch with the perf driver, interleaved so that a drift of the machine (clocks,
# temperature, neighbours) hits both alike:
#   perf_tests/scripts/ab_compare.sh BUILD_DIR PATCH [DRIVER_ARGS...]
# A is the tree as it is (uncommitted changes included), B the same with PATCH (a `git diff`)
# applied. BUILD_DIR is a configured build of this checkout: each driver is built there in turn
# (only what the patch touches recompiles) and kept aside; the patch is then taken out again, even
# on failure or interrupt, and the build restored to A. Then RUNS rounds (default 3) run A and B
# one after the other (B first in every other round), each with DRIVER_ARGS (e.g. --shape
# 4096x4096x256 --repeat 9), and the script prints both drivers' tables per round and, per shape,
# every timing's best median over the rounds for A and B and B / A.
# Each run's log and JSON record go to OUT_DIR (default: a new folder under /tmp); the records
# name A's and B's trees by their revision and the hash of their uncommitted diff.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
build=$(cd "$1" && pwd)
patch_file=$(realpath "$2")
shift 2
runs=${RUNS:-3}
out=${OUT_DIR:-$(mktemp -d /tmp/ab_compare.XXXXXX)}
mkdir -p "$out"
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ "$(realpath "$source_dir")" != "$(realpath "$root")" ]; then
  echo "ab_compare: $build is a build of $source_dir, not of $root" >&2
  exit 2
fi
git -C "$root" apply --check "$patch_file" || {
  echo "ab_compare: $patch_file does not apply to the tree as it is" >&2
  exit 2
}
driver=$build/perf_tests/ternary-counter-perf
build_driver() {
  cmake --build "$build" --target ternary-counter-perf >>"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log" >&2; return 1; }
  cp "$driver" "$out/ternary-counter-perf-$1"
}

build_driver A
applied=0
restore() {
  if [ $applied = 1 ]; then
    git -C "$root" apply -R "$patch_file" && applied=0
    cmake --build "$build" --target ternary-counter-perf >>"$out/build.log" 2>&1 || true
  fi
}
trap restore EXIT INT TERM
git -C "$root" apply "$patch_file"
applied=1
build_driver B
restore
trap - EXIT INT TERM

for round in $(seq "$runs"); do
  order="A B"
  [ $((round % 2)) = 0 ] && order="B A"
  for side in $order; do
    "$out/ternary-counter-perf-$side" "$@" --json "$out/${side}_$round.json" >"$out/${side}_$round.log" 2>&1 ||
      { echo "ab_compare: $side failed in round $round:" >&2; tail -20 "$out/${side}_$round.log" >&2; exit 1; }
    echo "== round $round, $side: $(head -1 "$out/${side}_$round.log")"
    grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ +\|" "$out/${side}_$round.log" || true
  done
done

python3 - "$out" "$runs" <<'PYTHON'
import json
import sys

out, runs = sys.argv[1], int(sys.argv[2])
KEYS = ["forward_ms", "backward_input_ms", "from_io_ms", "layer_step_ms", "dense_update_ms",
        "vendor_gemm_ms"]
best = {}
for side in "AB":
    for run in range(1, runs + 1):
        with open(f"{out}/{side}_{run}.json") as f:
            data = json.load(f)
        for r in data["records"]:
            shape = (r["out"], r["in"], r["M"])
            for key in KEYS:
                if key in r:
                    slot = best.setdefault((shape, key), {})
                    slot[side] = min(slot.get(side, float("inf")), r[key])
print(f"best median over {runs} rounds (ms)")
print(f"{'out x in x M':>20} {'timing':>18} {'A':>10} {'B':>10} {'B/A':>7}")
for (shape, key), sides in sorted(best.items()):
    a, b = sides.get("A"), sides.get("B")
    if a is None or b is None:
        continue
    ratio = f"{b / a:7.3f}" if a > 0 else "      -"
    print(f"{'x'.join(map(str, shape)):>20} {key:>18} {a:10.3f} {b:10.3f} {ratio}")
PYTHON
echo "logs and records: $out"
