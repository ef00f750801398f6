#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Plots a ternary-counter-perf JSON (--json FILE) as bars per shape: the time of forward,
backward_input, the whole layer step and update_from_io, each over its vendor counterpart of the
same run, and where the run has it the layer step over a BF16 tensor-core step (1 = as fast as the vendor library; lower is faster). Needs gnuplot (Debian package
gnuplot-nox).

    perf_tests/scripts/plot_ratios.py PERF.json [OUTPUT.png [LABEL]]   (default: PERF.png)

LABEL replaces the title's "git <revision>" (with the first 12 digits of the uncommitted diff's
hash when the tree was dirty).
"""
import json
import shutil
import subprocess
import sys

# (JSON key, legend): the ratios the driver writes per record.
SERIES = [
    ("forward_ratio", "forward / vendor x W^T"),
    ("backward_input_ratio", "backward_input / vendor grad_out W"),
    ("layer_step_ratio", "layer step / dense FP32 step"),
    ("ratio", "update_from_io / (SGEMM + dense update)"),
    ("layer_step_over_bf16", "layer step / BF16 tensor-core step"),
]


def main():
    if len(sys.argv) not in (2, 3, 4):
        sys.exit(__doc__)
    source = sys.argv[1]
    png = sys.argv[2] if len(sys.argv) >= 3 else source.rsplit(".", 1)[0] + ".png"
    if shutil.which("gnuplot") is None:
        sys.exit("plot_ratios.py: gnuplot not found (apt-get install gnuplot-nox)")
    try:
        with open(source) as f:
            run = json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"plot_ratios.py: cannot read {source}: {error}")
    records = run.get("records", [])
    # A peer the run had no figure for is written as 0 (the BF16 step off CUDA): left out.
    series = [(key, title) for key, title in SERIES if any(r.get(key, 0) > 0 for r in records)]
    if not records or not series:
        sys.exit(f"plot_ratios.py: {source} has no records with ratios")

    rows = []
    for r in records:
        shape = f"{r['out']}x{r['in']}x{r['M']}"
        rows.append(shape + " " + " ".join(f"{r.get(key, float('nan')):.4f}" for key, _ in series))
    highest = max(r.get(key, 0.0) for r in records for key, _ in series)
    vendor = run.get("vendor_gemm", "vendor GEMM").split(" (")[0]
    revision = run.get("git_revision", "unknown")
    diff = run.get("git_diff_sha256", "unknown")
    if diff:
        revision += f" (diff {diff[:12]})"
    label = sys.argv[3] if len(sys.argv) == 4 else f"git {revision}"
    title = (f"ternary-counter-perf, {run.get('backend', '?')} backend, {label}: "
             f"time over the vendor's ({vendor})")
    plots = ", ".join(
        f"$data using {i + 2}:xtic(1) title \"{t}\"" for i, (_, t) in enumerate(series))
    script = f"""
set terminal pngcairo size 1000,560 font ",10" noenhanced
set output "{png}"
set title "{title}"
set ylabel "time / vendor time (lower is faster)"
set xlabel "out x in x M"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:{max(1.2, highest * 1.15):.2f}]
set grid ytics
set key outside top center horizontal maxrows 2
set xtics rotate by -30
$data << EOD
{chr(10).join(rows)}
EOD
plot {plots}, 1 with lines dt 2 lw 2 lc rgb "black" title "vendor"
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(f"plot_ratios.py: wrote {png}")


if __name__ == "__main__":
    main()
