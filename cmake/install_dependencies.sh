#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs what building and testing TernaryCounter needs on Debian/Ubuntu (run as root or with
# sudo available): a C++20 compiler, CMake >= 3.25, Ninja (the presets' generator: it builds on
# every core, where make by default builds one file at a time; make stays for projects without
# presets), git, GoogleTest, nlohmann_json (the checkpoint header's JSON reader, private to the
# library; CMake fetches it when it is missing), OpenBLAS (the host BLAS Kokkos Kernels calls for
# the CPU performance driver's vendor GEMM and the FP32 baseline), oneDNN (the int8 GEMM the
# driver compares the integer path with), OpenMPI (for
# TernaryCounter::Distributed, data-parallel training; the build uses it when it is there), zlib
# (the .gz data files), the Python package's build and tests (python3-dev, python3-numpy,
# pybind11-dev, python3-pytest; python3-torch for its PyTorch layer, about a minute to install;
# bible-kjv, the text python/examples/char_lm.py trains on, and python3-matplotlib, its plots),
# the kernel corpus of char_lm.py --corpus kernel (linux-source-6.1 at the version that
# python/examples/data/kernel_corpus.list names, when the archive still has it; then
# make_kernel_corpus.py writes /usr/share/ternarycounter/kernel_corpus.txt unless it is there
# with the list's checksum; a failure there is reported and the tests that need it skip)
# and the Fashion-MNIST data set the main job trains on (IDX files under
# /usr/share/datasets/fashion-mnist). Kokkos and Kokkos Kernels themselves are fetched by CMake at
# configure time. Extra package names given as arguments are installed too (CI adds clang for the
# fuzzers; examples/train/plot_accuracy.sh needs gnuplot-nox).
set -euo pipefail

packages=(g++ cmake ninja-build make git libgtest-dev nlohmann-json3-dev libopenblas-dev libdnnl-dev libopenmpi-dev openmpi-bin zlib1g-dev
  python3-dev python3-numpy python3-pytest pybind11-dev python3-torch bible-kjv python3-matplotlib dataset-fashion-mnist linux-source-6.1 "$@")
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus_list="$root/python/examples/data/kernel_corpus.list"
kernel_version="$(sed -n 's/^package: linux-source-6.1 //p' "$corpus_list")"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install_dependencies: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  versions="$(apt-cache madison linux-source-6.1)"
  for i in "${!missing[@]}"; do  # the corpus list's version of the kernel source, if still there
    if [ "${missing[$i]}" = linux-source-6.1 ] && grep -q "| *$kernel_version *|" <<<"$versions"; then
      missing[$i]="linux-source-6.1=$kernel_version"
    fi
  done
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
"${sudo_cmd[@]}" python3 "$root/python/examples/make_kernel_corpus.py" ||
  echo "install_dependencies: no kernel corpus (char_lm.py --corpus kernel and its test skip)" >&2
