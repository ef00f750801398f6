#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Trains the ternary MLP and its FP32 Adam baseline on Fashion-MNIST with the same command line
# and plots the test accuracy per epoch of both (gnuplot, Debian package gnuplot-nox or gnuplot).
#   examples/train/plot_accuracy.sh [TRAIN_BINARY] [OUTPUT.png] [-- extra training arguments]
# Defaults: build/openmp/examples/train/ternary-counter-train, docs/fashion_mnist_accuracy.png.
# The two logs are kept next to the PNG (<name>.ternary.log, <name>.fp32.log).
set -euo pipefail
train=${1:-build/openmp/examples/train/ternary-counter-train}
png=${2:-docs/fashion_mnist_accuracy.png}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
command -v gnuplot >/dev/null || { echo "plot_accuracy.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }

logs=${png%.png}
"$train" --dataset fashion-mnist "$@" | tee "$logs.ternary.log"
"$train" --dataset fashion-mnist --fp32-baseline "$@" | tee "$logs.fp32.log"

# "epoch=3 loss=... test_acc=0.8712 ..." -> "3 0.8712"
table() { sed -n 's/^epoch=\([0-9]*\) .*test_acc=\([0-9.]*\).*/\1 \2/p' "$1"; }
bytes() { sed -n "s/^state: .*$1=\([0-9.]*\).*/\1/p" "$logs.ternary.log"; }
ternary_data=$(mktemp) fp32_data=$(mktemp)
trap 'rm -f "$ternary_data" "$fp32_data"' EXIT
table "$logs.ternary.log" >"$ternary_data"
table "$logs.fp32.log" >"$fp32_data"
[ -s "$ternary_data" ] && [ -s "$fp32_data" ] || { echo "plot_accuracy.sh: no epoch lines" >&2; exit 1; }

gnuplot <<GNUPLOT
set terminal pngcairo size 800,500 font ",11"
set output "$png"
set title "Fashion-MNIST, MLP $(sed -n 's/.*layers=\([0-9-]*\).*/\1/p' "$logs.ternary.log" | head -1): test accuracy per epoch"
set xlabel "epoch"
set ylabel "test accuracy"
set key bottom right
set grid
set xtics 1
plot "$ternary_data" using 1:2 with linespoints lw 2 pt 7 title "ternary counters ($(bytes ternary) byte/weight of training state)", \
     "$fp32_data" using 1:2 with linespoints lw 2 pt 5 title "FP32 + Adam ($(bytes fp32-adam) bytes/weight)", \
     0.8833 with lines dt 2 lc rgb "gray" title "FP32 MLP 256-128-100 of the data set's README (0.8833)"
GNUPLOT
echo "plot_accuracy.sh: wrote $png"
