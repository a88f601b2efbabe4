"""Signature patterns on hostile lines: no pattern may take time that grows with the square of a line.

    python benchmarks/bench_hostile_lines.py [--repeat 4000]

A log from a stranger can hold one huge line made of a signature's own literal repeated (the
literal search then sends the line to that signature's pattern). For every signature and each
of its literals, the line is the literal and a filler repeated --repeat times; the time to
search it is printed as a ratio to the time the same pattern takes on an ordinary line of the
same length, side by side, worst first. A pattern with an unbounded gap (`.*`, `[^]]*`) after
a repeated prefix shows as a ratio in the hundreds; bounded gaps keep every ratio small.
"""

from __future__ import annotations

import argparse
import time

from faultlab.symptoms import SIGNATURES_BY_ID

FILLERS = (" ", " a ", ": ", " (", "0 ")
ORDINARY = "step 1200 loss 2.3141 lr 0.000300 tokens/s 181234 "


def seconds(pattern, line: str) -> float:
    start = time.perf_counter()
    pattern.search(line)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4000)
    args = parser.parse_args()
    rows = []
    for signature in SIGNATURES_BY_ID.values():
        for literal in signature.literals:
            for filler in FILLERS:
                hostile = (literal + filler) * args.repeat
                ordinary = (ORDINARY * (len(hostile) // len(ORDINARY) + 1))[:len(hostile)]
                base = max(seconds(signature.regex, ordinary), 1e-6)
                rows.append((seconds(signature.regex, hostile) / base, signature.id, literal, filler, len(hostile)))
    rows.sort(reverse=True)
    print(f"{'ratio':>8}  {'signature':32} literal + filler (line length)")
    for ratio, signature_id, literal, filler, length in rows[:15]:
        print(f"{ratio:8.1f}  {signature_id:32} {literal + filler!r} ({length} characters)")
    print(f"{len(rows)} hostile lines; worst ratio {rows[0][0]:.1f}")


if __name__ == "__main__":
    main()
