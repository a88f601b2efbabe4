"""The whole catalog, run as `faultlab run --all` does, against its time budget: the sum of
the scenarios' timeouts plus 2 s per scenario (the goal: under it).

    python benchmarks/bench_suite.py

Prints each scenario's seconds next to its timeout + 2 s, then the totals and their ratio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="faultlab-bench-") as work:
        env = dict(os.environ, FAULTLAB_DB=str(Path(work) / "bench.db"))
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "faultlab.cli", "run", "--all", "--json"],
                                env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
    if not result.stdout.strip():
        sys.exit(f"faultlab run --all failed ({result.returncode}):\n{result.stderr[-2000:]}")
    rows = json.loads(result.stdout)
    budget = 0.0
    for row in rows:
        budget += row["timeout_s"] + 2
        how = "live" if row["live"] else "replay"
        print(f"{row['id']:24} {how:6} {row['seconds']:6.1f}s  (timeout + 2s = {row['timeout_s'] + 2:g}s)"
              f"{'' if row['reproduced'] else '  NOT REPRODUCED'}")
    print(f"whole catalog: {len(rows)} scenarios in {wall:.1f}s wall (baselines included), "
          f"budget {budget:.0f}s, ratio {wall / budget:.2f} (goal < 1)")


if __name__ == "__main__":
    main()
