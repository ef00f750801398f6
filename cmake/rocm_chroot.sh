#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# A ROCm toolchain where the system has none: Debian unstable (ROCm >= 6.2, which Kokkos 5 needs;
# Debian 12's ROCm is 5.2) bootstrapped into a folder, then a command run inside it.
#
#   cmake/rocm_chroot.sh FOLDER                 prepare FOLDER (idempotent: a ready one is kept)
#   cmake/rocm_chroot.sh FOLDER COMMAND [ARG]...  prepare, then run COMMAND in FOLDER as root,
#                                               in the current directory
#
# The repository is bind-mounted at its own path inside FOLDER, so paths under it mean the same
# thing on both sides (files outside it must be copied in). Needs root, debootstrap and unshare. The
# mirror is the host's Debian mirror (ROCM_CHROOT_MIRROR overrides it); its Release file may have
# expired (snapshot mirrors), so apt inside skips that check. Extra packages for the chroot:
# ROCM_CHROOT_PACKAGES.
set -euo pipefail

[ $# -ge 1 ] || { sed -n '5,8p' "$0"; exit 2; }
mkdir -p "$1"
folder=$(realpath "$1")
shift
repo=$(realpath "$(dirname "$0")/..")
say() { echo "rocm_chroot: $*"; }

# hipcc and the HIP runtime headers, the build tools, the libraries the presets look for;
# rocBLAS for Kokkos Kernels' vendor gemm.
packages=(hipcc libamdhip64-dev librocblas-dev librocthrust-dev cmake ninja-build g++ make libopenblas-dev
  libgtest-dev nlohmann-json3-dev zlib1g-dev ${ROCM_CHROOT_PACKAGES:-})

mirror=${ROCM_CHROOT_MIRROR:-}
if [ -z "$mirror" ]; then
  # deb822 "URIs:" lines, else one-line "deb URL suite" entries; the first Debian one wins.
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    2>/dev/null | sed -nE 's/^URIs:[[:space:]]*(\S+).*/\1/p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?(\S+).*/\2/p' |
    grep -E '/debian/?$' | head -n 1 || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

apt_in() {
  chroot "$folder" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false "$@"
}

if [ ! -f "$folder/.rocm_chroot_bootstrapped" ]; then
  command -v debootstrap >/dev/null || {
    say "installing debootstrap on the host"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
  }
  # A bootstrap stopped halfway is not resumable: start over.
  find "$folder" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  say "debootstrap Debian unstable from $mirror into $folder (a few minutes)"
  debootstrap --variant=minbase unstable "$folder" "$mirror" | grep -E '^I: (Retrieving|Validating|Base)' |
    grep -vE '^I: (Retrieving|Validating) [a-z]' || true
  [ -x "$folder/usr/bin/apt-get" ] || { say "debootstrap failed"; exit 1; }
  echo 'Acquire::Check-Valid-Until "false";' >"$folder/etc/apt/apt.conf.d/99no-valid-until"
  touch "$folder/.rocm_chroot_bootstrapped"
fi

missing=()
for p in "${packages[@]}"; do
  chroot "$folder" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} (several minutes)"
  apt_in update -qq
  apt_in install -y -qq --no-install-recommends "${missing[@]}" >"$folder/.rocm_chroot_apt.log" 2>&1 || {
    tail -n 30 "$folder/.rocm_chroot_apt.log"
    say "apt-get install failed (log: $folder/.rocm_chroot_apt.log)"
    exit 1
  }
  apt_in clean
fi
say "ready: hipcc $(chroot "$folder" dpkg-query -W -f='${Version}' hipcc), HIP $(chroot "$folder" dpkg-query -W -f='${Version}' libamdhip64-dev)"

[ $# -gt 0 ] || exit 0
[ "$(pwd)" = "$repo" ] || [[ "$(pwd)" == "$repo"/* ]] || { say "run it from inside $repo"; exit 1; }
# The mounts live in a private mount namespace that ends with the command: none outlives it (a
# repository left mounted inside its own build folder would make `rm -rf build` reach the sources).
exec unshare --mount --propagation private /bin/sh -c '
  set -e
  folder=$1 repo=$2 dir=$3
  shift 3
  mount --bind /dev "$folder/dev"
  mount -t proc proc "$folder/proc"
  mkdir -p "$folder$repo"
  mount --bind "$repo" "$folder$repo"
  exec chroot "$folder" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$dir" "$@"' sh "$folder" "$repo" "$(pwd)" "$@"
