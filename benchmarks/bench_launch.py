"""Side by side, in one run: the healthy 4-rank experiment through `faultlab run` against a
bare `torchrun --nproc_per_node=4` of the seed script, and how soon a hang gets its verdict.

    python benchmarks/bench_launch.py [--repeats 5]

Prints the median wall time of each (whole commands, process start to exit), their ratio
(target <= 0.5), and the hang scenario's launch-to-verdict time against its timeout + 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SEED_SCRIPT = """\
import os
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=5))
rank = dist.get_rank()
local_rank = int(os.environ["LOCAL_RANK"])
device = "cpu"
if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
    device = "cuda"
x = torch.ones(1, device=device) * rank
dist.all_reduce(x)
print(f"Rank {rank}: {x.item()}", flush=True)
dist.destroy_process_group()
"""

HEALTHY_1X4 = (ROOT / "scenarios" / "healthy.yaml").read_text().replace(
    "id: healthy", "id: healthy-1x4"
).replace("{nodes: 2, ranks_per_node: 2, backend: auto}", "{nodes: 1, ranks_per_node: 4, backend: gloo}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="faultlab-bench-"))
    try:
        (work / "seed.py").write_text(SEED_SCRIPT)
        scenario = work / "healthy-1x4.yaml"
        scenario.write_text(HEALTHY_1X4)
        env = dict(os.environ, FAULTLAB_DB=str(work / "bench.db"))
        faultlab = [sys.executable, "-m", "faultlab.cli", "run", str(scenario), "--no-explain"]
        timed(faultlab, env)  # stores the 1x4 baseline, as a user's first run does
        torchrun = shutil.which("torchrun") or sys.exit("torchrun not found on PATH")
        ours, bare = [], []
        for _ in range(args.repeats):  # interleaved, so both see the same machine load
            ours.append(timed(faultlab, env))
            bare.append(timed([torchrun, "--nproc_per_node=4", f"--master_port={free_port()}", str(work / "seed.py")], env))
        ours_s, bare_s = statistics.median(ours), statistics.median(bare)
        print(f"healthy 4-rank run, median of {args.repeats}:")
        print(f"  faultlab run (elastic_launch, torch imported once, workers forked): {ours_s:.2f} s")
        print(f"  bare torchrun --nproc_per_node=4 seed.py:                           {bare_s:.2f} s")
        print(f"  ratio faultlab / torchrun: {ours_s / bare_s:.2f} (target <= 0.50)")

        hang_scenario = ROOT / "tests" / "scenarios" / "hang-short.yaml"
        hang = subprocess.run(
            [sys.executable, "-m", "faultlab.cli", "run", str(hang_scenario), "--json"],
            env=env, capture_output=True, text=True,
        )
        recording = json.loads(hang.stdout)
        capture = recording["capture"]
        print("hang verdict (tests/scenarios/hang-short.yaml: every rank stuck before init):")
        print(f"  launch to verdict {capture['duration_s']:.2f} s, timeout {capture['timeout_s']:g} s, "
              f"budget timeout + 2 s = {capture['timeout_s'] + 2:g} s, verdict {recording['comparison']['verdict']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
