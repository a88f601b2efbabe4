"""Run every scenario this GPU host can run live on NCCL, record each, and compare with the
shipped recordings. This is also how the shipped GPU recordings are made:

    python scripts/gpu_check.py --record-to recordings/

Prints one line per scenario: verdict, reproduced, seconds, and whether the signatures and
verdict agree with the shipped recording of that scenario (if there is one).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from faultlab import recordings, runner, scenario as scenarios
from faultlab.errors import EnvironmentProblem
from faultlab.plan import choose_backend, gpus_on_host
from faultlab.store import Store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record-to", type=Path, help="write each run's recording file here")
    parser.add_argument("--db", type=Path, help="recording store (default: a temporary one)")
    parser.add_argument("scenario", nargs="*", help="scenario ids (default: all that run on nccl here)")
    args = parser.parse_args()
    host_gpus = gpus_on_host()
    if not host_gpus:
        print("no CUDA GPU visible: nothing to run live on NCCL here", file=sys.stderr)
        return 3
    chosen = [scenarios.resolve(name) for name in args.scenario] or scenarios.load_all()
    db = args.db or Path(tempfile.mkdtemp(prefix="faultlab-gpu-check-")) / "faultlab.db"
    failures = 0
    with Store(db) as store:
        for item in chosen:
            try:
                backend = choose_backend(item, host_gpus)
            except EnvironmentProblem as problem:
                print(f"{item.id:24} skipped: {problem}")
                continue
            if backend != "nccl":
                continue
            started = time.monotonic()
            options = runner.RunOptions(live_only=True, record_to=args.record_to, fresh_baseline=True)
            recording = runner.run_scenario(item, store, options)
            seconds = time.monotonic() - started
            shipped = recordings.shipped_for(item.id)
            agreement = "no shipped recording"
            if shipped:
                old, _ = recordings.read(shipped[0])
                same = ({s.id for s in old.symptoms} == {s.id for s in recording.symptoms}
                        and old.comparison.verdict == recording.comparison.verdict)
                agreement = f"{'agrees' if same else 'DIFFERS'} with {shipped[0].name}"
            failures += not recording.reproduced
            print(f"{item.id:24} {recording.comparison.verdict:14} reproduced={recording.reproduced!s:5} "
                  f"{seconds:6.1f}s  {agreement}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
