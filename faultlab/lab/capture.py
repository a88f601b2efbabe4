"""The run directory, read back into a Capture. Pure: files in, records out, nothing started.

What the directory cannot tell (when the launch began and ended, whether the deadline
came first, how each agent process ended) arrives as a LaunchOutcome from the launch, so
the reader is tested on run directories built by hand.
"""

from __future__ import annotations

import dataclasses
import json
import re
import signal
from pathlib import Path

from ..flight_recorder.dumper import DUMP_EVENT, FLIGHT_RECORDER_EVENTS, buffer_size
from ..flight_recorder.records import FlightRecorderCapture
from ..flight_recorder.run_dumps import RankDumpFile, read_run_dumps
from ..records import Capture, NodeCapture, PhaseEvent, RankCapture
from .plan import LaunchPlan, NodeLaunch
from .rundir import RunDir, Slot

_VALUE_LINE = re.compile(r"^Rank (\d+): (\S+)$", re.MULTILINE)
# torch's launcher logs the workers it tears down ("Sending process 581 closing signal SIGTERM")
# and, in its failure report, each failed worker's exit code with its pid.
_TEARDOWN_LINE = re.compile(r"(?:Sending|Terminating|Closing) process (\d+) (?:closing|via) signal (SIG[A-Z]+)")
_FAILURE_EXITCODE = re.compile(r"exitcode\s*:\s*(-?\d+) \(pid: (\d+)\)")


@dataclasses.dataclass(frozen=True)
class LaunchOutcome:
    """What the launch observed beside the run directory."""

    t0: float  # wall-clock time the launch began; every time in the Capture is relative to it
    end_t: float  # seconds from t0 to the end of the wait (every agent exited, or the deadline)
    hit_deadline: bool
    master_port: int
    agent_exits: dict[int, int | None]  # node index -> exit code of its agent process (None: still running)
    agent_exit_times: dict[int, float]  # node index -> seconds since t0, for agents that exited in time
    network: str  # where the run's traffic went, in words
    evidence: dict[int, str] = dataclasses.field(default_factory=dict)  # simulated host -> network state


@dataclasses.dataclass(frozen=True)
class LauncherReport:
    """What a node's launcher log says about its workers."""

    torn_down: dict[int, str]  # pid -> the signal the launcher sent it
    reported_exit: dict[int, int]  # pid -> exit code in the launcher's failure report

    @classmethod
    def parse(cls, log: str) -> "LauncherReport":
        return cls(
            torn_down={int(pid): sig for pid, sig in _TEARDOWN_LINE.findall(log)},
            reported_exit={int(pid): int(code) for code, pid in _FAILURE_EXITCODE.findall(log)},
        )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _read_events(path: Path, t0: float) -> tuple[tuple[PhaseEvent, ...], dict]:
    """The phase events (times relative to t0), and the start record's fields with the
    exit code the worker wrote, if it got that far."""
    events, start_fields = [], {}
    for line in _read_text(path).splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line cut short by a kill
            continue
        if record["phase"].startswith(FLIGHT_RECORDER_EVENTS):  # dumps, not phases of the program
            continue
        events.append(PhaseEvent(phase=record["phase"], t=round(record["t"] - t0, 3)))
        if record["phase"] == "start":
            start_fields = record
        if record["phase"] == "exit":
            start_fields["exit_code"] = record.get("code")
    return tuple(events), start_fields


def _read_status(path: Path, t0: float) -> tuple[int, float] | None:
    """(wait status as an exit code, negative for a signal; seconds since launch), if noted."""
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
        return int(status["code"]), round(status["t"] - t0, 3)
    except (OSError, ValueError, KeyError):
        return None


@dataclasses.dataclass(frozen=True)
class WorkerTrace:
    """Everything known about one worker, from its files and its launcher's log."""

    events: tuple[PhaseEvent, ...]
    fields: dict  # the start record (pid, rank, ...), plus exit_code if it wrote one
    status: tuple[int, float] | None  # its wait status, as noted when it died

    @property
    def pid(self) -> int | None:
        return self.fields.get("pid")

    @property
    def exited_itself(self) -> bool:
        return "exit_code" in self.fields


def rank_ending(
    trace: WorkerTrace, report: LauncherReport, killed_at_deadline: bool, outcome: LaunchOutcome,
    deadline_s: float, agent_end_t: float,
) -> tuple[str, int | None, float]:
    """(ending, exit code, seconds since launch when it ended) of one worker. The order
    matters: a noted exit status is the strongest evidence, then the deadline, then the
    launcher's own account (it tears down everyone once one worker fails)."""
    status = trace.status
    reported = status[0] if status else report.reported_exit.get(trace.pid)
    if not trace.events:
        return "never_started", None, outcome.end_t
    if reported is not None and reported >= 0:
        return "exited", reported, status[1] if status else trace.events[-1].t
    died_after_deadline = status is None or status[1] >= deadline_s
    if killed_at_deadline and died_after_deadline and not trace.exited_itself:
        return "killed_at_deadline", reported or -int(signal.SIGKILL), outcome.end_t
    if trace.pid in report.torn_down and not trace.exited_itself:
        code = reported or -int(getattr(signal, report.torn_down[trace.pid]))
        return "torn_down", code, status[1] if status else agent_end_t
    if reported is not None:
        return "signaled", reported, status[1] if status else trace.events[-1].t
    if trace.exited_itself:
        return "exited", trace.fields["exit_code"], trace.events[-1].t
    return "torn_down", None, agent_end_t


def _read_rank(plan: LaunchPlan, node: NodeLaunch, local_rank: int, slot: Slot, report: LauncherReport,
               outcome: LaunchOutcome) -> RankCapture:
    events, fields = _read_events(slot.events, outcome.t0)
    trace = WorkerTrace(events, fields, _read_status(slot.status, outcome.t0))
    # A launcher still running at the deadline tore its workers down because faultlab
    # killed it: those workers hung, whatever the launcher's log says.
    killed_at_deadline = outcome.hit_deadline and node.index not in outcome.agent_exit_times
    agent_end_t = outcome.agent_exit_times.get(node.index, outcome.end_t)
    ending, exit_code, ended = rank_ending(trace, report, killed_at_deadline, outcome, plan.deadline_s, agent_end_t)
    stdout = _read_text(slot.stdout)
    rank = int(fields["rank"]) if fields.get("rank") not in (None, "") else None
    values = [float(v) for r, v in _VALUE_LINE.findall(stdout) if rank is None or int(r) == rank]
    return RankCapture(
        node=node.index,
        local_rank=local_rank,
        expected_rank=node.node_rank * node.nproc_per_node + local_rank,
        rank=rank,
        pid=trace.pid,
        stdout=stdout,
        stderr=_read_text(slot.stderr),
        events=events,
        ending=ending,
        exit_code=exit_code,
        value=values[-1] if values else None,
        end_t=round(ended, 3),
    )


def _read_node(plan: LaunchPlan, node: NodeLaunch, log: str, outcome: LaunchOutcome) -> NodeCapture:
    agent_exit = outcome.agent_exits.get(node.index)
    killed = outcome.hit_deadline and agent_exit in (None, -signal.SIGTERM, -signal.SIGKILL)
    return NodeCapture(
        node=node.index,
        node_rank=node.node_rank,
        nnodes=node.nnodes,
        nproc_per_node=node.nproc_per_node,
        master_port=outcome.master_port + node.master_port_offset,
        command=plan.command_line(node, outcome.master_port),
        network=outcome.evidence.get(node.host, ""),
        log=log,
        exit_code=None if killed else agent_exit,
        env=dict(node.env),
    )


def read_capture(plan: LaunchPlan, run_dir: RunDir, outcome: LaunchOutcome) -> Capture:
    nodes, ranks = [], []
    for node in plan.nodes:
        log = _read_text(run_dir.launcher_log(node.index))
        report = LauncherReport.parse(log)
        nodes.append(_read_node(plan, node, log, outcome))
        for local_rank in range(node.nproc_per_node):
            slot = run_dir.find_slot(node.index, local_rank)
            ranks.append(_read_rank(plan, node, local_rank, slot, report, outcome))
    return Capture(
        backend=plan.backend,
        world_size=plan.world_size,
        timeout_s=plan.timeout_s,
        deadline_s=plan.deadline_s,
        hit_deadline=outcome.hit_deadline,
        duration_s=round(outcome.end_t, 3),
        network=outcome.network,
        program=plan.program,
        ranks=tuple(ranks),
        nodes=tuple(nodes),
        flight_recorder=_read_flight_recorder(plan, run_dir, ranks),
    )


def _last_dump_trigger(events: Path) -> str | None:
    trigger = None
    for line in _read_text(events).splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("phase") == DUMP_EVENT and "bytes" in record:
            trigger = record.get("trigger")
    return trigger


def _read_flight_recorder(plan: LaunchPlan, run_dir: RunDir, ranks: list[RankCapture]) -> FlightRecorderCapture | None:
    """Every rank's dump, or why it has none (None when the run had the recorder off)."""
    size = buffer_size(dict(plan.nodes[0].env)) if plan.nodes else 0
    if size == 0:
        return None
    try:
        asked = json.loads(run_dir.dump_requests.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no deadline, so nobody was asked
        asked = {}
    files = []
    own_job = {node.index for node in plan.nodes if node.job == 0}
    for rank in (rank for rank in ranks if rank.node in own_job):
        slot = run_dir.find_slot(rank.node, rank.local_rank)
        files.append(RankDumpFile(rank.shown_rank, slot.flight_recorder, _last_dump_trigger(slot.events),
                                  rank.ending, rank.exit_code, asked.get(str(rank.pid))))
    return read_run_dumps(files, size, plan.world_size)
