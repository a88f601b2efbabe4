"""The join storm, measured side by side in one run: N clients joining one TCPStore all at
once against the same N staggered in waves, for the default listen backlog and a small one.

    flock /tmp/faultlab-live.lock python benchmarks/bench_storm.py [--stagger-ms 5] [--wave 8]
        [--small-backlog 16] [--store libuv|legacy|both]

Prints, per backlog, the table for N in {8, 16, 32, 64, 256, 1024}: time to ready at once and
staggered, their ratio (> 1: staggering was faster), and the joins that were slow (a second
or more: a dropped SYN waits 1 s for its retransmission) or logged a retry. Where no private network namespace can be made, the small-backlog half
is skipped (the host's own net.core.somaxconn is never changed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from faultlab import storm  # noqa: E402
from faultlab.reports import storm as storm_report  # noqa: E402
from faultlab.errors import EnvironmentProblem  # noqa: E402

SIZES = (8, 16, 32, 64, 256, 1024)


def side_by_side(report: storm.StormReport, stagger_ms: float) -> str:
    rows = []
    for store in dict.fromkeys(cell.store for cell in report.cells):
        for clients in SIZES:
            at_once, staggered = (next(c for c in report.cells if c.store == store and c.clients == clients
                                       and c.stagger_ms == gap) for gap in (0.0, stagger_ms))
            ratio = (f"{at_once.ended_s / staggered.ended_s:.2f}"
                     if at_once.ended_s and staggered.ended_s else "-")
            rows.append([store, clients, storm_report.ready_text(at_once), storm_report.ready_text(staggered), ratio,
                         f"{at_once.slow}/{at_once.retries}", f"{staggered.slow}/{staggered.retries}",
                         f"{staggered.spread_s:.3f}"])
    headers = ["store", "clients", "at once s", f"staggered s ({stagger_ms:g} ms/wave)", "ratio",
               "at once: slow/retries", "staggered: slow/retries", "stagger floor s"]
    return tabulate(rows, headers=headers, tablefmt="simple")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stagger-ms", type=float, default=5.0)
    parser.add_argument("--wave", type=int, default=8)
    parser.add_argument("--small-backlog", type=int, default=16)
    parser.add_argument("--store", choices=["libuv", "legacy", "both"], default="libuv")
    args = parser.parse_args()
    stores = ("libuv", "legacy") if args.store == "both" else (args.store,)
    for backlog in (None, args.small_backlog):
        options = storm.StormOptions(clients=SIZES, stagger_ms=(0.0, args.stagger_ms), wave=args.wave,
                                     stores=stores, somaxconn=backlog)
        try:
            report = storm.measure(options)
        except EnvironmentProblem as problem:
            print(f"\nbacklog {backlog}: skipped: {problem}")
            continue
        print(f"\nlisten backlog (net.core.somaxconn in the store host's namespace): {report.cells[0].somaxconn}"
              f"{'' if backlog is None else ' (set for this run)'}; {report.network}; torch {report.torch_version}; "
              f"{report.machine}; {report.made_at}")
        print(side_by_side(report, args.stagger_ms))
    print("\n" + storm_report.caveats())


if __name__ == "__main__":
    main()
