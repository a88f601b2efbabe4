"""Process supervision: every process of a run is accounted for, and ended.

Agents live in their own process groups; workers a launcher starts as fresh interpreters
carry FAULTLAB_RUN=<run id> in their environment; every process asks Linux to kill it when
its parent dies. Ending a run is: SIGTERM to every agent's group (as torchrun does), a
grace period, SIGKILL, then a sweep for any process still carrying the run's marker. Run
directories whose faultlab was SIGKILLed are removed by the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

from ..errors import Terminated
from .rundir import RunDir

RUN_MARKER = "FAULTLAB_RUN"
KILL_GRACE_S = 0.5  # SIGTERM first, as torchrun does, then SIGKILL


def is_running(pid: int) -> bool:
    """Alive and not a zombie waiting for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class RunProcesses:
    """The agents of one launch (multiprocessing.Process, one per node), and the means to end them all."""

    def __init__(self, run_id: str, run_dir: RunDir) -> None:
        self.run_id = run_id
        self.run_dir = run_dir
        self.agents: list = []
        self.exit_times: dict[int, float] = {}  # agent index -> seconds since launch

    def note_exits(self, now: float) -> None:
        for index, agent in enumerate(self.agents):
            if agent.exitcode is not None:
                self.exit_times.setdefault(index, now)

    def all_exited(self) -> bool:
        return all(agent.exitcode is not None for agent in self.agents)

    def exit_codes(self) -> dict[int, int | None]:
        return {index: agent.exitcode for index, agent in enumerate(self.agents)}

    def still_working(self) -> bool:
        """Whether a live launcher is still in rendezvous or has a live worker, as opposed
        to only writing up the end of its workers."""
        for index, agent in enumerate(self.agents):
            if agent.exitcode is not None:
                continue
            pids = [pid for _, pid in self.run_dir.started_workers(index)]
            if not pids or any(is_running(pid) for pid in pids):
                return True
        return False

    def kill_node(self, index: int) -> None:
        """The node vanishes: its launcher and every worker in its group, SIGKILLed at once.
        The launcher dies with them and cannot note its workers' ends: they are noted here."""
        workers = [(slot, pid) for slot, pid in self.run_dir.started_workers(index) if is_running(pid)]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.agents[index].pid, signal.SIGKILL)
        for slot, _ in workers:
            if not slot.status.exists():
                slot.status.write_text(json.dumps({"code": -signal.SIGKILL, "t": time.time()}), encoding="utf-8")

    def kill_all(self) -> None:
        for agent in self.agents:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(agent.pid, signal.SIGTERM)
        end = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < end and not self.all_exited():
            time.sleep(0.02)
        for agent in self.agents:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(agent.pid, signal.SIGKILL)
        for agent in self.agents:
            agent.join(timeout=5)
        kill_marked_processes(self.run_id)


def kill_marked_processes(run_id: str, also: tuple[str, ...] = ()) -> int:
    """SIGKILL every process whose environment carries this run's marker and each `also`
    entry ("KEY=value": on a cluster node, the marker of what that node's script started,
    since the practice cluster's nodes share one machine and node 0's also runs the batch
    script's srun), except this process and its ancestors. Returns how many were killed."""
    wanted = {f"{RUN_MARKER}={run_id}".encode(), *(entry.encode() for entry in also)}
    spared = _ancestors()
    killed = 0
    for _ in range(20):  # a dying launcher may still start one: sweep until none is left
        found = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in spared:
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as environ:
                    if not wanted <= set(environ.read().split(b"\0")):
                        continue
                os.kill(int(entry.name), signal.SIGKILL)
                found += 1
            except (OSError, ProcessLookupError):
                continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed


def _ancestors() -> set[int]:
    """This process and every process above it, up to init."""
    pids, pid = set(), os.getpid()
    while pid > 0 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return pids


def remove_orphaned_run_dirs() -> None:
    """Run directories left by a faultlab that was SIGKILLed (nothing of it could clean up)."""
    for path, owner in RunDir.leftovers():
        if not is_running(owner):
            RunDir(path).remove()


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Let SIGTERM to faultlab clean up the run as Ctrl-C does."""

    def on_sigterm(signum, frame):
        raise Terminated

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> None:
    """`python -m faultlab.lab.supervise RUN_ID [KEY=VALUE...]`: the sweep, as a cluster node's
    script runs it once its launcher ended (a worker the launcher started as it was being
    killed outlives it)."""
    run_id, *also = argv if argv is not None else sys.argv[1:]
    kill_marked_processes(run_id, tuple(also))


if __name__ == "__main__":
    main()
