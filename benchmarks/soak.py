"""Fault soak: faultlab runs killed at random moments, two at a time into one store, then a
count of everything they could have left behind.

Each run is a hanging or crashing scenario, ended at a random moment (or not at all, if it
finishes first) by SIGINT, SIGTERM or SIGKILL sent to faultlab itself. Afterwards it counts
leaked processes, listening ports, network namespaces, firewall rules and run directories,
and checks the store: every run that said it saved a recording has it, whole; no row is
half-written. Goal: every count 0.

    flock /tmp/faultlab-live.lock .venv/bin/python benchmarks/soak.py --runs 200

Run directories of a SIGKILLed faultlab are removed by the next run (nothing of a killed
process can clean up): they are counted before and after one last, unkilled run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from faultlab.lab.netns import NAMESPACE_PREFIX  # noqa: E402
from faultlab.lab.rundir import RUN_DIR_PREFIX  # noqa: E402
from faultlab.lab.supervise import RUN_MARKER  # noqa: E402
from faultlab.store import Store  # noqa: E402

HANGING = ("port-in-use", "data-ports-blocked")  # data-ports-blocked: namespaces and nft rules, where root
CRASHING = ("rank-crash", "shape-mismatch")
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
SAVED = re.compile(r"^Recording (\S+) saved in ", re.MULTILINE)
# What a run's exit status may be: finished (0 reproduced, 1 not), or the signal's own code.
# Before faultlab's own code runs (Python still starting), a signal has its default effect.
EXPECTED_EXITS = {None: {0, 1}, signal.SIGINT: {0, 1, 130, -signal.SIGINT},
                  signal.SIGTERM: {0, 1, 143, -signal.SIGTERM}, signal.SIGKILL: {0, 1, -signal.SIGKILL}}


def faultlab(store: Path, scenario: str) -> list[str]:
    return [sys.executable, "-m", "faultlab.cli", "--db", str(store), "run", scenario]


def listening_ports() -> set[str]:
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            found |= {fields[1] for fields in (line.split() for line in list(lines)[1:]) if fields[3] == "0A"}
    return found


def namespaces() -> set[str]:
    if not shutil.which("ip"):
        return set()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return {name for name in listed if name.startswith(NAMESPACE_PREFIX)}


def firewall_rules() -> list[str]:
    if not shutil.which("nft"):
        return []
    ruleset = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout
    return [line.strip() for line in ruleset.splitlines() if line.strip()]


def run_dirs() -> set[str]:
    return {path.name for path in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*")}


def our_processes(store: Path) -> list[int]:
    """Processes of these runs still alive: faultlab's forks (same command line, naming this
    soak's store) and every worker (marked with RUN_MARKER in its environment)."""
    marker, store_arg = f"{RUN_MARKER}=".encode(), str(store).encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            continue
        if store_arg in cmdline or marker in environ:
            found.append(int(entry.name))
    return found


def snapshot() -> dict:
    return {"ports": listening_ports(), "namespaces": namespaces(), "rules": firewall_rules(), "dirs": run_dirs()}


def _interruptible() -> None:
    """A job started in the background of a shell inherits SIGINT ignored: give it back."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_run(store: Path, scenario: str, kill_signal, after_s: float) -> dict:
    process = subprocess.Popen(faultlab(store, scenario), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT, preexec_fn=_interruptible)
    sent = threading.Event()

    def kill() -> None:
        if kill_signal is not None and process.poll() is None:
            process.send_signal(kill_signal)
            sent.set()

    timer = threading.Timer(after_s, kill)
    timer.start()
    stdout, stderr = process.communicate(timeout=300)
    timer.cancel()
    signal_used = kill_signal if sent.is_set() else None
    return {"scenario": scenario, "signal": signal_used, "after_s": round(after_s, 2), "exit": process.returncode,
            "saved": SAVED.findall(stdout), "traceback": "Traceback" in stderr, "stderr": stderr[-400:]}


def establish(store: Path, scenarios: tuple[str, ...], outside: set[str]) -> dict[str, float]:
    """One unkilled run of each scenario: its baseline lands in the store, its length is measured.
    The recordings it saves go to `outside` (they are not the soak's)."""
    lengths = {}
    for scenario in scenarios:
        started = time.monotonic()
        result = subprocess.run(faultlab(store, scenario), capture_output=True, text=True, cwd=ROOT, timeout=300)
        if result.returncode not in (0, 1):
            raise SystemExit(f"{scenario} does not run here: {result.stderr.strip()[-300:]}")
        lengths[scenario] = time.monotonic() - started
        outside.update(SAVED.findall(result.stdout))
    return lengths


def check_store(store: Path, results: list[dict], outside: set[str]) -> dict:
    saved = {recording_id for result in results for recording_id in result["saved"]}
    integrity = sqlite3.connect(store).execute("PRAGMA integrity_check").fetchone()[0]
    half_written, ids = 0, set()
    with Store(store, readonly=True) as opened:
        rows = opened._rows("SELECT id, body FROM recordings")
        for recording_id, body in rows:
            ids.add(recording_id)
            try:
                opened._decode(body)
            except Exception:  # noqa: BLE001  any undecodable row is the finding
                half_written += 1
    killed_after_saving = [i for i in ids - saved - outside if ".baseline." not in i]
    return {"integrity": integrity, "rows": len(ids), "lost": len(saved - ids), "half_written": half_written,
            "saved_then_killed": len(killed_after_saving)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="faultlab-soak-"))
    store = work / "soak.db"
    scenarios = HANGING + CRASHING if os.geteuid() == 0 else (HANGING[0],) + CRASHING
    outside: set[str] = set()
    lengths = establish(store, scenarios, outside)
    before = snapshot()
    plans = [(rng.choice(scenarios), rng.choice(SIGNALS)) for _ in range(args.runs)]
    plans = [(scenario, sig, rng.uniform(0, 1.2 * lengths[scenario])) for scenario, sig in plans]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:  # two at a time into one store
        results = list(pool.map(lambda plan: one_run(store, *plan), plans))
    soak_s = time.monotonic() - started
    deadline = time.monotonic() + 15  # a SIGKILLed faultlab's workers end on their parent's death
    while our_processes(store) and time.monotonic() < deadline:
        time.sleep(0.5)
    after = snapshot()
    leaked = {
        "processes": len(our_processes(store)),
        "listening ports": len(after["ports"] - before["ports"]),
        "namespaces": len(after["namespaces"] - before["namespaces"]),
        "firewall rules": len(set(after["rules"]) - set(before["rules"])),
        "run dirs (before the next run)": len(after["dirs"] - before["dirs"]),
    }
    last = subprocess.run(faultlab(store, CRASHING[0]), capture_output=True, text=True, cwd=ROOT, timeout=300)
    outside.update(SAVED.findall(last.stdout))  # "the next run", unkilled
    leaked["run dirs (after the next run)"] = len(run_dirs() - before["dirs"])
    stored = check_store(store, results, outside)
    report(results, leaked, stored, soak_s, scenarios)
    shutil.rmtree(work, ignore_errors=True)


def report(results: list[dict], leaked: dict, stored: dict, soak_s: float, scenarios) -> None:
    by_signal = collections.Counter(signal.Signals(r["signal"]).name if r["signal"] else "finished first"
                                    for r in results)
    unexpected = [r for r in results if r["exit"] not in EXPECTED_EXITS[r["signal"]]]
    tracebacks = [r for r in results if r["traceback"]]
    print(f"{len(results)} runs of {', '.join(scenarios)} in {soak_s:.0f}s, two at a time into one store")
    print("ended by: " + ", ".join(f"{name} {count}" for name, count in sorted(by_signal.items())))
    print("exit codes: " + ", ".join(f"{code}: {count}" for code, count in
                                     sorted(collections.Counter(r["exit"] for r in results).items())))
    print(f"unexpected exit codes: {len(unexpected)}; runs with a traceback: {len(tracebacks)}")
    for result in (unexpected + tracebacks)[:5]:
        print("  ", json.dumps({k: v for k, v in result.items() if k != "saved"}, default=str))
    for what, count in leaked.items():
        print(f"leaked {what}: {count}")
    finished = sum(1 for r in results if r["saved"])
    print(f"store: {stored['rows']} rows (integrity {stored['integrity']}); runs that reported a saved recording: "
          f"{finished}; lost: {stored['lost']}; half-written: {stored['half_written']}; saved, then killed before "
          f"saying so: {stored['saved_then_killed']}")
    print(json.dumps({"runs": len(results), **leaked, "unexpected_exits": len(unexpected),
                      "tracebacks": len(tracebacks), **stored}))


if __name__ == "__main__":
    main()
