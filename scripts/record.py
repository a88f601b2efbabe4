"""Run scenarios live on this host, compare each with its shipped recording, and (with
--record-to) write the recordings. This is how the shipped recordings are made:

    python scripts/record.py --backend nccl --record-to recordings/   # on a GPU host: the GPU scenarios
    python scripts/record.py --backend gloo --record-to recordings/   # on a CPU host, as root: the CPU corpus

Prints one line per scenario: verdict, reproduced, seconds, and whether the signatures and
verdict agree with the shipped recording of that scenario made on the same kind of host.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from faultlab import recording_files, runner, scenario as scenarios
from faultlab.host import Host
from faultlab.launchers import LocalLauncher, RunOptions
from faultlab.store import Store


def _shipped(scenario_id: str, on_gpus: bool):
    """(file name, recording) of the scenario's shipped recording made on this kind of host, if any."""
    for path in recording_files.shipped_for(scenario_id):
        if path.name.endswith(".cpu.json") != on_gpus:
            return path.name, recording_files.read(path)[0]
    return None


def _agreement(recording, shipped) -> str:
    if shipped is None:
        return "no shipped recording"
    name, old = shipped
    same = ({s.id for s in old.symptoms} == {s.id for s in recording.symptoms}
            and old.comparison.verdict == recording.comparison.verdict)
    return f"{'agrees' if same else 'DIFFERS'} with {name}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record-to", type=Path, help="write each run's recording file here")
    parser.add_argument("--db", type=Path, help="recording store (default: a temporary one)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), help="only scenarios that run live on this backend here")
    parser.add_argument("scenario", nargs="*", help="scenario ids (default: all that run live here)")
    args = parser.parse_args()
    host = Host.probe()
    chosen = [scenarios.resolve(name) for name in args.scenario] or scenarios.load_all()
    db = args.db or Path(tempfile.mkdtemp(prefix="faultlab-record-")) / "faultlab.db"
    failures = 0
    with Store(db) as store:
        for item in chosen:
            here = host.availability(item)
            if not here.live or (args.backend and here.backend != args.backend):
                print(f"{item.id:28} skipped: {here.reason or f'runs on {here.backend} here'}")
                continue
            shipped = _shipped(item.id, on_gpus=here.backend == "nccl")
            started = time.monotonic()
            options = RunOptions(live_only=True, record_to=args.record_to, fresh_baseline=True)
            recording = runner.run_scenario(item, store, LocalLauncher(host), here.backend, options)
            failures += not recording.reproduced
            print(f"{item.id:28} {recording.comparison.verdict:14} reproduced={recording.reproduced!s:5} "
                  f"{time.monotonic() - started:6.1f}s  {_agreement(recording, shipped)}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
