#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Compares the vendor timings of two ternary-counter-perf --json files of the same shapes.

  compare_vendor.py BASE.json NEW.json [--tolerance 0.05]

For checking that two builds run the same vendor GEMM (e.g. BASE calling cuBLAS directly, NEW
through KokkosBlas::gemm), both run on the same GPU one after the other. Prints, per shape and
per vendor timing, NEW / BASE of the medians, and exits 1 when one differs by more than the
tolerance (slower or faster: either says the two paths do not run the same GEMM).
"""
import argparse
import json
import sys

# Timings of the vendor GEMM alone: the paths that also run the library's own update
# (vendor_path_ms, vendor_layer_step_ms) change whenever that update does.
KEYS = ["vendor_gemm_ms", "vendor_forward_ms", "vendor_backward_input_ms"]


def records(path):
    with open(path) as f:
        data = json.load(f)
    return data["vendor_gemm"], {(r["out"], r["in"], r["M"]): r for r in data["records"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--tolerance", type=float, default=0.05)
    args = parser.parse_args()
    base_name, base = records(args.base)
    new_name, new = records(args.new)
    print(f"base: {base_name}\nnew:  {new_name}")
    print(f"{'out x in x M':>20} {'timing':>26} {'base ms':>10} {'new ms':>10} {'new/base':>9}")
    worst = 0.0
    for shape in sorted(base.keys() & new.keys()):
        for key in KEYS:
            if key not in base[shape] or key not in new[shape]:
                continue
            ratio = new[shape][key] / base[shape][key]
            worst = max(worst, abs(ratio - 1.0))
            flag = "" if abs(ratio - 1.0) <= args.tolerance else "  <-- outside tolerance"
            print(f"{'x'.join(map(str, shape)):>20} {key:>26} {base[shape][key]:10.3f} "
                  f"{new[shape][key]:10.3f} {ratio:9.3f}{flag}")
    missing = base.keys() ^ new.keys()
    if missing:
        print(f"shapes in only one file (ignored): {sorted(missing)}")
    print(f"largest difference: {100 * worst:.1f}% (tolerance {100 * args.tolerance:.0f}%)")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
