#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Registers, stack and spills of the CUDA kernels of one source file, without a GPU: compiles its
# object in a configured CUDA build (Ninja) again, keeping the PTX, and runs ptxas -v on it.
#   perf_tests/scripts/kernel_resources.sh [SOURCE] [KERNEL_REGEX]
#   (defaults: src/update/TernaryCounter_Update.cpp RowUpdateKernel; BUILD_DIR default build/cuda,
#   ARCH default sm_90). The object in the build is left as it was.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/cuda} arch=${ARCH:-sm_90}
source=${1:-src/update/TernaryCounter_Update.cpp} kernel=${2:-RowUpdateKernel}
target=$(cd "$build" && ninja -t targets all | grep -o "^[^:]*/$(basename "$source")\.o" | head -1)
[ -n "$target" ] || { echo "no object of $source in $build" >&2; exit 1; }
keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
command=$(cd "$build" && ninja -t commands "$target" | tail -1)
# The build's own command, its intermediate files kept and its object written elsewhere.
(cd "$build" && eval "${command/ -o $target / --keep --keep-dir=$keep -o $keep/object.o }") \
  >"$keep/log" 2>&1 || { tail -20 "$keep/log"; exit 1; }
ptx=$(ls "$keep"/*.ptx | head -1)
ptxas -arch="$arch" -O3 -v "$ptx" -o /dev/null 2>&1 | awk '
  /Function properties for/ { name = $NF; next }
  /stack frame/ { frame = $0; sub(/^ +/, "", frame); next }
  /Used [0-9]+ registers/ { print name; print "  " frame; sub(/^ptxas info *: */, ""); print "  " $0 }' |
  c++filt | grep -A2 -E "$kernel" | grep -v '^--$'
