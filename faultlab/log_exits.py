"""Facts of how workers ended, read from the launchers' lines: each failed worker's exit code, the ranks
torchrun's report names, the signal that killed a worker or stopped a launcher, and the pids the launcher
terminated (the one it spared is the one that failed).
"""

from __future__ import annotations

import dataclasses
import re
import signal

FAILED_WORKER = re.compile(r"exitcode:? ?(-?\d+)\)? local_rank: (\d+) \(pid: (\d+)\)")
ROOT_CAUSE_RANK = re.compile(r"rank\s*:\s*(\d+) \(local_rank: (\d+)\)")
# The signal that stopped a launcher (torchrun's agent, DeepSpeed's), by number or name.
LAUNCHER_SIGNAL = re.compile(r"got signal: (\d+)|Received (?:Signals\.)?(SIG[A-Z]+|\d+) death signal"
                             r"|Main process received (SIG[A-Z]+)")
# Which signal a killed-by-signal line names, by exit code (": -6", "= -6"), number or name; else SIGKILL.
ABORT_SIGNAL = re.compile(r"[:=]\s*-6\b|\b(?i:signal) 6\b|SIGABRT")
SEGV_SIGNAL = re.compile(r"[:=]\s*-11\b|\b(?i:signal) 11\b|SIGSEGV|Segmentation fault")
TERMINATED_PID = re.compile(r"process (\d+) (?:closing|via) signal SIGTERM|Killing subprocess (\d+)")


@dataclasses.dataclass
class Exits:
    failed_workers: list = dataclasses.field(default_factory=list)  # (exit code, local rank, pid)
    root_cause_ranks: list = dataclasses.field(default_factory=list)  # (rank, local rank)
    terminated_pids: set = dataclasses.field(default_factory=set)
    launcher_signals: set = dataclasses.field(default_factory=set)  # 'SIGHUP', 'SIGTERM' ... that stopped a launcher
    worker_signals: set = dataclasses.field(default_factory=set)  # 'SIGKILL', 'SIGABRT', 'SIGSEGV' that killed workers

    def read(self, signature: str, line: str) -> None:
        for code, local_rank, pid in FAILED_WORKER.findall(line):
            self.failed_workers.append((int(code), int(local_rank), int(pid)))
        for rank, local_rank in ROOT_CAUSE_RANK.findall(line):
            self.root_cause_ranks.append((int(rank), int(local_rank)))
        for pid, killed in TERMINATED_PID.findall(line):
            self.terminated_pids.add(int(pid or killed))
        for match in LAUNCHER_SIGNAL.finditer(line):
            name = next(group for group in match.groups() if group)
            self.launcher_signals.add(_signal_name(name))
        if signature == "killed-by-signal":
            self.worker_signals.add(_worker_signal(line))

    def untouched_pid(self) -> tuple[int, int] | None:
        """(pid, its place among the node's workers) of the one worker the launcher did not terminate.

        The launcher sends SIGTERM to every worker of its node except the one that already
        exited; workers are started in local-rank order, so their pids run consecutively."""
        pids = sorted(self.terminated_pids)
        if len(pids) < 2:
            return None
        gaps = [pid for pid in range(pids[0], pids[-1] + 1) if pid not in self.terminated_pids]
        if len(gaps) == 1 and pids[-1] - pids[0] < 4 * len(pids):
            return gaps[0], gaps[0] - pids[0]
        return None


def _worker_signal(line: str) -> str:
    """The signal a killed-by-signal line names (its wordings name only these three)."""
    if ABORT_SIGNAL.search(line):
        return "SIGABRT"
    return "SIGSEGV" if SEGV_SIGNAL.search(line) else "SIGKILL"


def _signal_name(number_or_name: str) -> str:
    if not number_or_name.isdigit():
        return number_or_name
    try:
        return signal.Signals(int(number_or_name)).name
    except ValueError:
        return number_or_name
