#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Summarizes ncu's per-instruction CSV (`ncu -i R --page source --csv --print-source sass`):
where a kernel's warp instructions and stall samples go, by opcode, by stall reason, and for a
kernel with an fma loop, inside and outside it (the loop = the first to the last executed FFMA in
SASS order; code placed before or after it may still run every iteration, as a tile kernel's
loads and staging do), shared-memory wavefronts by opcode, and by the parts between a team
kernel's barriers.

    perf_tests/scripts/ncu_source_summary.py ncu_source_KERNEL.csv
"""
import collections
import csv
import re
import sys

ISSUE = "Warp Stall Sampling (All Samples)"
PREDICATED_ON = "Predicated-On Thread Instructions Executed"


def opcode(source):
    match = re.match(r"\s*(@!?U?P\w+\s+)?([A-Z0-9_]+(\.[A-Z0-9_]+)*)", source)
    return match.group(2) if match else source.strip()


def main(path):
    rows = list(csv.reader(open(path)))
    header, lines = rows[1], rows[2:]
    lines.sort(key=lambda r: int(r[0], 16))
    col = {name: i for i, name in enumerate(header)}
    stalls = [i for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    executed = lambda r: int(r[col["Instructions Executed"]] or 0)
    sampled = lambda r: int(r[col[ISSUE]] or 0)

    def stall_reasons(part):
        reasons = collections.Counter()
        for r in part:
            for i in stalls:
                reasons[header[i][len("stall_"):]] += int(r[i] or 0)
        return reasons

    def report(name, part):
        ops, reasons = collections.Counter(), stall_reasons(part)
        for r in part:
            ops[opcode(r[col["Source"]])] += executed(r)
        instructions, samples = sum(ops.values()), sum(reasons.values())
        print(f"== {name}: {instructions} warp instructions, {samples} stall samples")
        # A predicated instruction issues whether or not any thread runs it: count those that
        # none ran (e.g. one branch of a select the compiler made into predication).
        idle = sum(executed(r) for r in part if not int(r[col[PREDICATED_ON]] or 0))
        print(f"  predicated off in every thread: {idle} ({100 * idle / max(instructions, 1):.1f}%)")
        for op, n in ops.most_common(16):
            print(f"  {op:26s} {n:12d} {100 * n / max(instructions, 1):5.1f}%")
        print("  stall reasons: " + ", ".join(
            f"{k} {100 * v / max(samples, 1):.1f}%" for k, v in reasons.most_common(8)))

    report("kernel", lines)
    fmas = [k for k, r in enumerate(lines) if opcode(r[col["Source"]]) == "FFMA" and executed(r)]
    if fmas:
        report("before the fma loop (SASS order)", lines[: fmas[0]])
        report("fma loop", lines[fmas[0] : fmas[-1] + 1])
        report("after the fma loop (SASS order)", lines[fmas[-1] + 1 :])
    shared = [i for i, h in enumerate(header)
              if "Wavefronts Shared" in h and "Ideal" not in h and "Excessive" not in h]
    if shared:
        # A 16-byte read costs 4 wavefronts unless lanes pair up on addresses (then 2): the count
        # per instruction says which reads of a loop pay the most.
        waves, counts = collections.Counter(), collections.Counter()
        ratios = collections.defaultdict(collections.Counter)
        for r in lines:
            op, n = opcode(r[col["Source"]]), executed(r)
            w = int(r[shared[0]] or 0)
            if n and w:
                waves[op] += w
                counts[op] += n
                ratios[op][round(w / n, 2)] += n
        print(f"== shared-memory wavefronts ({header[shared[0]]}): {sum(waves.values())}")
        for op, w in waves.most_common(8):
            per = ", ".join(f"{k:g}: {v}" for k, v in sorted(ratios[op].items()))
            print(f"  {op:14s} {counts[op]:12d} instructions {w:12d} wavefronts"
                  f" ({w / counts[op]:.2f} each; instructions by wavefronts each: {per})")
    # A team kernel's phases end at its barriers: where its instructions and waits go by phase.
    bars = [k for k, r in enumerate(lines) if opcode(r[col["Source"]]).startswith("BAR.SYNC")]
    if bars:
        total = max(sum(sampled(r) for r in lines), 1)
        print("== between barriers (SASS order; a part ends with its barrier)")
        for first, last in zip([0] + [b + 1 for b in bars], bars + [len(lines) - 1]):
            part = lines[first : last + 1]
            n, samples = sum(executed(r) for r in part), sum(sampled(r) for r in part)
            if not n and not samples:
                continue
            reasons = stall_reasons(part)
            top = ", ".join(f"{k} {100 * v / max(sum(reasons.values()), 1):.0f}%"
                            for k, v in reasons.most_common(3))
            print(f"  {lines[first][0][-5:]}..{lines[last][0][-5:]} {n:12d} instructions"
                  f" {100 * samples / total:5.1f}% of samples ({top})")
    print("== most sampled instructions")
    for r in sorted(lines, key=lambda r: -sampled(r))[:20]:
        top = sorted(((header[i][6:], int(r[i] or 0)) for i in stalls), key=lambda kv: -kv[1])[:3]
        print(f"  {r[0][-5:]} {r[col['Source']].strip()[:48]:48s} {sampled(r):6d} {executed(r):10d} "
              + ", ".join(f"{k} {v}" for k, v in top if v))


if __name__ == "__main__":
    main(sys.argv[1])
