"""Facts of how workers ended, read from the launchers' lines: each failed worker's exit code, the ranks
torchrun's report names, where a line says a worker died by SIGABRT (torch's watchdog's way to end a rank whose
collective timed out) or by another signal, the signal that stopped a launcher, and the pids the launcher
terminated (the one it spared is the one that failed).
"""

from __future__ import annotations

import collections
import dataclasses
import re
import signal

from .symptoms import SIGNATURES_BY_ID

FAILED_WORKER = re.compile(r"exitcode:? ?(-?\d+)\)? local_rank: (\d+) \(pid: (\d+)\)")
ROOT_CAUSE_RANK = re.compile(r"rank\s*:\s*(\d+) \(local_rank: (\d+)\)")
# The signal that stopped a launcher (torchrun's agent, DeepSpeed's), by number or name.
LAUNCHER_SIGNAL = re.compile(r"got signal: (\d+)|Received (?:Signals\.)?(SIG[A-Z]+|\d+) death signal"
                             r"|Main process received (SIG[A-Z]+)")
# A killed-by-signal wording that names SIGABRT: by exit code (": -6", "= -6"), number, name or srun's and Open
# MPI's "Aborted". Read in the wording's own words only: a launcher's line may echo the command, arguments and all.
ABORT_SIGNAL = re.compile(r"[:=]\s*-6\b|\b(?i:signal) 6\b|SIGABRT|Aborted")
KILLED_BY_SIGNAL = SIGNATURES_BY_ID["killed-by-signal"]
# Exit codes of the signals that stop a worker from outside (SIGHUP, SIGINT, SIGTERM): no death of its own.
STOPPED_EXITS = (-1, -2, -15)
TERMINATED_PID = re.compile(r"process (\d+) (?:closing|via) signal SIGTERM|Killing subprocess (\d+)")


@dataclasses.dataclass
class Exits:
    failed_workers: list = dataclasses.field(default_factory=list)  # (exit code, local rank, pid, node or None)
    root_cause_ranks: list = dataclasses.field(default_factory=list)  # (rank, local rank)
    terminated_pids: set = dataclasses.field(default_factory=set)
    launcher_signals: set = dataclasses.field(default_factory=set)  # 'SIGHUP', 'SIGTERM' ... that stopped a launcher
    # (file, line number, line) of each line saying a worker died by SIGABRT, and of each naming another signal
    aborts: list = dataclasses.field(default_factory=list)
    other_signals: list = dataclasses.field(default_factory=list)
    signal_lines: collections.Counter = dataclasses.field(default_factory=collections.Counter)  # (file, rank) -> lines

    def read(self, item) -> None:
        """What one evidence line (.signature, .path, .line_number, .rank, .line, .place) says of how workers ended."""
        line = item.line
        for code, local_rank, pid in FAILED_WORKER.findall(line):
            self.failed_workers.append((int(code), int(local_rank), int(pid), item.place.node))
        for rank, local_rank in ROOT_CAUSE_RANK.findall(line):
            self.root_cause_ranks.append((int(rank), int(local_rank)))
        for pid, killed in TERMINATED_PID.findall(line):
            self.terminated_pids.add(int(pid or killed))
        for match in LAUNCHER_SIGNAL.finditer(line):
            name = next(group for group in match.groups() if group)
            self.launcher_signals.add(_signal_name(name))
        if item.signature == "killed-by-signal":
            wording = KILLED_BY_SIGNAL.regex.search(line)
            aborted = bool(wording and ABORT_SIGNAL.search(wording[0]))
            (self.aborts if aborted else self.other_signals).append((item.path, item.line_number, line))
            self.signal_lines[item.path, item.rank] += 1

    def signal_lines_cut(self) -> bool:
        """Some file and rank held as many killed-by-signal lines as diagnose keeps: another signal may be past them."""
        return any(count >= KILLED_BY_SIGNAL.keep for count in self.signal_lines.values())

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


def _signal_name(number_or_name: str) -> str:
    if not number_or_name.isdigit():
        return number_or_name
    try:
        return signal.Signals(int(number_or_name)).name
    except ValueError:
        return number_or_name
