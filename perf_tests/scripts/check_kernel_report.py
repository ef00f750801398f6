#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs ternary-counter-perf --kernels and checks its per-kernel report (the ctest
perf.kernel_report*).

  check_kernel_report.py PERF_EXE WORK_DIR --max-launches N -- [driver arguments...]

Checks, per shape: the table is printed; in the JSON, every row's time is >= 0 in every repeat
and the rows of each repeat add up to that repeat's recorded step (every interval goes to one
row); the sum of the rows' medians lies within half the fastest and 1.5 times the slowest
recorded step; the Kokkos kernels took time; the step launched between 1 and N Kokkos kernels,
as many as its kernel rows count; the byte model knows every kernel, copy and vendor row, and
gives a positive number of bytes per activation element. Exits 1 naming each failed check.
"""
import argparse
import json
import math
import os
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exe")
    parser.add_argument("work")
    parser.add_argument("--max-launches", type=int, required=True)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    driver_args = argv[split + 1:]
    os.makedirs(args.work, exist_ok=True)
    json_path = os.path.join(args.work, "kernel_report.json")
    if os.path.exists(json_path):
        os.remove(json_path)
    env = dict(os.environ, OMP_PROC_BIND="false")
    run = subprocess.run([args.exe, "--kernels", "--json", json_path] + driver_args, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(run.stdout)
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    if run.returncode != 0:
        print(f"FAIL: the driver exited with {run.returncode}")
        return 1
    check("kernels of one layer step" in run.stdout, "no kernel table in the output")
    check("launches per layer step:" in run.stdout, "no launch count in the output")
    check("bytes per activation element" in run.stdout, "no bytes per activation element")
    with open(json_path) as f:
        records = json.load(f)["records"]
    check(len(records) > 0, "no records in the JSON")
    for record in records:
        shape = f'{record["out"]}x{record["in"]}x{record["M"]} {record["precision"]}'
        report = record.get("kernel_report")
        if report is None:
            failures.append(f"{shape}: no kernel_report in the JSON")
            continue
        rows, steps = report["rows"], report["step_ms_samples"]
        check(len(rows) > 0 and len(steps) > 0, f"{shape}: no rows or no recorded steps")
        for k, step in enumerate(steps):
            total = 0.0
            for row in rows:
                ms = row["ms_samples"][k]
                check(ms >= -1e-6, f'{shape}: row {row["name"]} has {ms} ms in repeat {k}')
                total += ms
            check(abs(total - step) <= 1e-5 + 1e-6 * step,
                  f"{shape}: repeat {k}: the rows add up to {total} ms, the step took {step} ms")
        medians = sum(row["ms"] for row in rows)
        check(0.5 * min(steps) <= medians <= 1.5 * max(steps),
              f"{shape}: the rows' medians add up to {medians} ms, the recorded steps took "
              f"{min(steps)} to {max(steps)} ms")
        check(report["kernels_ms"] > 0, f"{shape}: the kernels took no time")
        launches = report["kokkos_launches"]
        check(1 <= launches <= args.max_launches,
              f"{shape}: {launches} Kokkos kernel launches, expected 1 to {args.max_launches}")
        counted = sum(row["launches"] for row in rows if row["kind"] == "kernel")
        check(counted == launches, f"{shape}: the kernel rows count {counted} launches, "
              f"the summary {launches}")
        check(report["unmodelled_rows"] == 0,
              f'{shape}: {report["unmodelled_rows"]} rows the byte model does not know: ' +
              ", ".join(row["name"] for row in rows
                        if row["kind"] in ("kernel", "copy", "vendor")
                        and row["model_bytes"] is None))
        per_element = report["bytes_per_activation_element"]
        check(per_element is not None and math.isfinite(per_element) and per_element > 0,
              f"{shape}: bytes per activation element {per_element}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"check_kernel_report: {len(records)} shapes ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
