"""A live many-rank CPU run with one faulty rank, then diagnose on its logs.

    python benchmarks/bench_many_ranks.py [--nodes 4] [--ranks-per-node 8] [--culprit 13]

Runs a rank-crash job of NODES x RANKS_PER_NODE gloo ranks live (the culprit raises before
the all_reduce), keeps every per-rank log, and runs `faultlab diagnose` on the directory:
prints the run's time, the log set's size, diagnose's time, and the culprits and victims
it names next to the truth.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from faultlab.scenario import read_yaml

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--ranks-per-node", type=int, default=8)
    parser.add_argument("--culprit", type=int, default=13)
    args = parser.parse_args()
    world = args.nodes * args.ranks_per_node
    data = read_yaml(ROOT / "scenarios" / "rank-crash.yaml")
    data["id"] = "rank-crash-many"
    data["topology"] = {"nodes": args.nodes, "ranks_per_node": args.ranks_per_node, "backend": "gloo"}
    (fault,) = data["faults"]
    fault["target"] = data["answer"]["culprit"] = {"rank": args.culprit}
    # Starting hundreds of workers on two cores takes far longer than the scenario's 5 s.
    data["timeout_s"] = max(data["timeout_s"], world // 4)
    with tempfile.TemporaryDirectory(prefix="faultlab-bench-") as work:
        scenario = Path(work) / "rank-crash-many.yaml"
        scenario.write_text(yaml.safe_dump(data, sort_keys=False))
        env = dict(os.environ, FAULTLAB_DB=str(Path(work) / "bench.db"))
        logs = Path(work) / "logs"
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "faultlab.cli", "run", str(scenario), "--logs", str(logs), "--json"],
                             env=env, capture_output=True, text=True)
        run_s = time.perf_counter() - started
        verdict = json.loads(run.stdout)["comparison"]["verdict"] if run.stdout.strip() else f"failed: {run.stderr[-500:]}"
        started = time.perf_counter()
        triage = subprocess.run([sys.executable, "-m", "faultlab.cli", "diagnose", str(logs / "run"), "--json"],
                                env=env, capture_output=True, text=True)
        if triage.returncode not in (0, 1):  # 1: no known signature, still a finding to print
            sys.exit(f"diagnose failed ({triage.returncode}): {triage.stderr.strip()}")
        found = json.loads(triage.stdout)
        diagnose_s = time.perf_counter() - started
    victims = sorted(set(range(world)) - {args.culprit})
    print(f"live run: {world} ranks on {args.nodes} simulated nodes, verdict {verdict}, {run_s:.1f}s")
    print(f"logs: {found['files']} files, {found['bytes'] / 1e6:.2f} MB; diagnose took {diagnose_s:.2f}s")
    print(f"top cause: {found['causes'][0]['cause'] if found['causes'] else 'none'}")
    print(f"culprits named: {found['culprits']} (truth: [{args.culprit}])")
    print(f"victims named: {len(found['victims'])}, silent (torn down before logging an error): {len(found['silent'])}, "
          f"together all the others: {sorted(found['victims'] + found['silent']) == victims}")


if __name__ == "__main__":
    main()
