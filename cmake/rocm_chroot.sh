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
# thing on both sides (files outside it must be copied in). COMMAND gets a clean environment
# (PATH, HOME, LANG, TERM; pass others with `env NAME=value COMMAND`): the host's variables, e.g.
# LD_LIBRARY_PATH, would not fit the chroot's libraries. Needs root, debootstrap and unshare
# (util-linux). The mirror is the host's Debian archive (ROCM_CHROOT_MIRROR overrides it); its
# Release file may have expired (snapshot mirrors), so apt inside skips that check. About 5 GB.
# Extra packages for the chroot: ROCM_CHROOT_PACKAGES.
set -euo pipefail

[ $# -ge 1 ] || { sed -n '6,8p' "$0"; exit 2; }
mkdir -p "$1"
folder=$(realpath "$1")
shift
repo=$(realpath "$(dirname "$0")/..")
say() { echo "rocm_chroot: $*"; }
[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, chroot, mount)"; exit 1; }

# hipcc and the HIP runtime headers, the build tools, and what the presets look for: rocBLAS
# (Kokkos Kernels' vendor gemm on HIP), rocThrust (Kokkos' sort), OpenBLAS (the host BLAS), Open
# MPI (TernaryCounter::Distributed), GoogleTest, nlohmann_json, zlib.
packages=(hipcc libamdhip64-dev librocblas-dev librocthrust-dev cmake ninja-build g++ make
  libopenblas-dev libopenmpi-dev openmpi-bin libgtest-dev nlohmann-json3-dev zlib1g-dev
  ${ROCM_CHROOT_PACKAGES:-})

# The host's own Debian archive (apt's configured bases; the one ending in /debian/), so no
# address is written here.
mirror=${ROCM_CHROOT_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 2>/dev/null |
  grep -m 1 -E '/debian/$' || true)}
[ -n "$mirror" ] || { say "no Debian archive in the host's apt sources: set ROCM_CHROOT_MIRROR"; exit 1; }

apt_in() {
  chroot "$folder" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false "$@"
}

if [ ! -f "$folder/.rocm_chroot_bootstrapped" ]; then
  # Only an empty folder, or one this script began, is (re)filled: a bootstrap stopped halfway
  # does not resume, so it starts over.
  if [ -f "$folder/.rocm_chroot_partial" ]; then
    find "$folder" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  elif [ -n "$(ls -A "$folder")" ]; then
    say "$folder is neither empty nor a ROCm chroot: refusing to fill it"
    exit 1
  fi
  command -v debootstrap >/dev/null || {
    say "installing debootstrap on the host"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
  }
  touch "$folder/.rocm_chroot_partial"
  say "debootstrap Debian unstable from $mirror into $folder (a minute or two)"
  debootstrap --variant=minbase unstable "$folder" "$mirror" >"$folder.debootstrap.log" 2>&1 || {
    tail -n 30 "$folder.debootstrap.log"
    say "debootstrap failed (log: $folder.debootstrap.log)"
    exit 1
  }
  echo 'Acquire::Check-Valid-Until "false";' >"$folder/etc/apt/apt.conf.d/99no-valid-until"
  rm "$folder/.rocm_chroot_partial"
  touch "$folder/.rocm_chroot_bootstrapped"
fi

missing=()
for p in "${packages[@]}"; do
  chroot "$folder" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} (a minute or two)"
  apt_in update -qq
  apt_in install -y -qq --no-install-recommends "${missing[@]}" >"$folder/.rocm_chroot_apt.log" 2>&1 || {
    tail -n 30 "$folder/.rocm_chroot_apt.log"
    say "apt-get install failed (log: $folder/.rocm_chroot_apt.log)"
    exit 1
  }
  apt_in clean
fi
if [ $# -eq 0 ]; then
  say "ready: hipcc $(chroot "$folder" dpkg-query -W -f='${Version}' hipcc), HIP $(chroot "$folder" \
    dpkg-query -W -f='${Version}' libamdhip64-dev), rocBLAS $(chroot "$folder" dpkg-query -W \
    -f='${Version}' librocblas-dev)"
  exit 0
fi
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
  exec chroot "$folder" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$dir" "$@"
' sh "$folder" "$repo" "$(pwd)" "$@"
