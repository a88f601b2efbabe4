r"""Signature patterns on hostile lines: no pattern may take time that grows with the square of a line.

    python benchmarks/bench_hostile_lines.py [--repeat 4000]

A log from a stranger can hold one huge line made of a signature's own literal repeated (the
literal search then sends the line to that signature's pattern). For every signature and each
of its literals, the line is the literal and a filler repeated --repeat times; and, for every
run of three or more literal characters anywhere in its pattern, that run repeated with the
literal at the end (a run of "send" before an unbounded `\w*`). Printed side by side, worst first: how much
longer the search takes when the line is four times longer (4: linear; 16: time that grows with
the square of the line, as a pattern with an unbounded gap such as `.*`, `[^]]*` or `\w*` after
a repeated prefix takes), and its time as a ratio to the same pattern on an ordinary line of the
same length (a bounded gap scanned from every repeated prefix shows as a large ratio that stays
linear).
"""

from __future__ import annotations

import argparse
import time

try:  # the standard library's own regex parser: what text each alternative starts with
    from re import _constants as sre_constants, _parser as sre_parse
except ImportError:  # Python 3.10
    import sre_constants
    import sre_parse

from faultlab.symptoms import SIGNATURES_BY_ID

FILLERS = (" ", " a ", ": ", " (", "0 ")
ORDINARY = "step 1200 loss 2.3141 lr 0.000300 tokens/s 181234 "


def seconds(pattern, line: str) -> float:
    """The best of three searches: the least the clock and the collector add."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        pattern.search(line)
        best = min(best, time.perf_counter() - start)
    return best


def literal_runs(pattern: str) -> set[str]:
    """Every run of three or more literal characters in pattern, inside groups, alternatives and repeats too."""
    runs = set()

    def walk(items) -> None:
        run = ""
        for op, value in items:
            if op is sre_constants.LITERAL:
                run += chr(value)
                continue
            if len(run) >= 3:
                runs.add(run)
            run = ""
            if op is sre_constants.SUBPATTERN:
                walk(value[-1])
            elif op is sre_constants.BRANCH:
                for alternative in value[1]:
                    walk(alternative)
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                walk(value[2])
            elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
                walk(value[1])
        if len(run) >= 3:
            runs.add(run)

    walk(sre_parse.parse(pattern))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4000)
    args = parser.parse_args()
    rows = []
    for signature in SIGNATURES_BY_ID.values():
        lines = [(f"{literal + filler!r}", lambda n, piece=literal + filler: piece * n)
                 for literal in signature.literals for filler in FILLERS]
        lines += [(f"{text!r} repeated, then {signature.literals[0]!r}",
                   lambda n, text=text, last=signature.literals[0]: text * n + " " + last)
                  for text in literal_runs(signature.pattern)]
        for shown, hostile_line in lines:
            hostile, quarter = hostile_line(args.repeat), hostile_line(args.repeat // 4)
            ordinary = (ORDINARY * (len(hostile) // len(ORDINARY) + 1))[:len(hostile)]
            took = seconds(signature.regex, hostile)
            # below a millisecond the quarter line's time is mostly the clock's
            growth = took / seconds(signature.regex, quarter) if took >= 1e-3 else 0.0
            ratio = took / max(seconds(signature.regex, ordinary), 1e-6)
            rows.append((growth, ratio, signature.id, shown, len(hostile)))
    rows.sort(reverse=True)
    print(f"{'x4 line':>8} {'ratio':>8}  {'signature':32} hostile line (its length)")
    for growth, ratio, signature_id, shown, length in rows[:15]:
        print(f"{f'{growth:.1f}' if growth else '-':>8} {ratio:8.1f}  {signature_id:32} {shown} ({length} characters)")
    print(f"{len(rows)} hostile lines; the fastest-growing search grew {rows[0][0]:.1f} times for a line 4 times longer; "
          f"worst ratio to an ordinary line {max(row[1] for row in rows):.1f}")


if __name__ == "__main__":
    main()
