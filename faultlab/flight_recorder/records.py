"""Flight Recorder evidence as records: portable, JSON-able, and free of pickles.

A rank's dump (torch's pickle of its collective ring buffer) becomes a `RankDump`; a rank
that could not dump (frozen, killed, never started) becomes a `MissingDump`, which is itself
evidence. `serial.to_dict` / `serial.from_dict` give their JSON form, as for every record.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

# What made a rank write its dump.
Trigger = Literal[
    "exit",  # the program ran to its end
    "error",  # the program raised (e.g. gloo's "Timed out waiting ...")
    "terminated",  # torchrun tore it down with SIGTERM after another rank failed
    "deadline",  # faultlab asked before killing a rank still running at the deadline
    "file",  # read from a file torch wrote (diagnose): how it was triggered is unknown
]


@dataclasses.dataclass(frozen=True)
class Frame:
    """One Python frame of the stack that issued a collective."""

    name: str
    filename: str
    line: int


@dataclasses.dataclass(frozen=True)
class Entry:
    """One collective in a rank's ring buffer."""

    record_id: int
    group: str  # process group name ('0' is the default group)
    group_desc: str  # e.g. 'default_pg'
    seq_id: int  # collective_seq_id: the n-th collective of this group on this rank
    p2p_seq_id: int
    is_p2p: bool
    op: str  # profiling_name, e.g. 'gloo:all_reduce', 'nccl:broadcast'
    state: str  # scheduled / started / completed (gloo leaves every entry 'scheduled')
    retired: bool  # torch has let go of the work: it finished (successfully or not)
    input_sizes: tuple[tuple[int, ...], ...]
    output_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    timeout_ms: int
    time_created_ns: int
    time_started_ns: int | None = None
    time_completed_ns: int | None = None
    frames: tuple[Frame, ...] = ()

    @property
    def op_name(self) -> str:
        """'all_reduce' for 'gloo:all_reduce'."""
        return self.op.split(":", 1)[-1]

    @property
    def where(self) -> str:
        """The innermost frame outside torch, as 'train.py:12', or ''."""
        for frame in reversed(self.frames):
            if "/torch/" not in frame.filename:
                return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.line}"
        return ""


@dataclasses.dataclass(frozen=True)
class GroupConfig:
    key: str  # the key of pg_config as dumped ('' for gloo's default group)
    name: str
    desc: str
    ranks: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class GroupStatus:
    """pg_status of one group: the last collective this rank enqueued, started, completed
    (-1: none). On gloo this is where completion shows; entries stay 'scheduled'."""

    group: str
    last_enqueued: int
    last_started: int
    last_completed: int


@dataclasses.dataclass(frozen=True)
class RankDump:
    rank: int
    trigger: Trigger
    source: str  # the file it was read from (its name in a run directory)
    version: str  # the dump format version torch wrote
    comm_lib_version: str  # NCCL version ('' on gloo)
    groups: tuple[GroupConfig, ...]
    status: tuple[GroupStatus, ...]
    entries: tuple[Entry, ...]

    def status_of(self, group: str) -> GroupStatus | None:
        for status in self.status:
            if status.group == group:
                return status
        return None


@dataclasses.dataclass(frozen=True)
class MissingDump:
    rank: int
    reason: str  # e.g. "stopped (SIGSTOP): could not answer", "killed by SIGKILL", "never started"


@dataclasses.dataclass(frozen=True)
class TorchAnalyzerRun:
    """What torch's own analyzer (`python -m torch.distributed.flight_recorder.fr_trace`) said."""

    command: str
    exit_code: int | None  # None: it could not be run
    output: str  # its report, warnings left out
    normalised: tuple[str, ...]  # what was changed in the dumps so it could read them


@dataclasses.dataclass(frozen=True)
class FlightRecorderCapture:
    """Every rank's Flight Recorder evidence from one run (or one directory of dumps)."""

    buffer_size: int  # TORCH_FR_BUFFER_SIZE the run had (0: the recorder was off)
    world_size: int
    dumps: tuple[RankDump, ...]
    missing: tuple[MissingDump, ...]
    torch_analyzer: TorchAnalyzerRun | None = None

    def dump_of(self, rank: int) -> RankDump | None:
        for dump in self.dumps:
            if dump.rank == rank:
                return dump
        return None


FindingKind = Literal["not-joined", "op-mismatch", "size-mismatch", "dtype-mismatch", "lagging", "no-dump"]


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: FindingKind
    group: str
    seq_id: int | None
    ranks: tuple[int, ...]  # the ranks it is about (missing, odd one out, lagging, without a dump)
    text: str


@dataclasses.dataclass(frozen=True)
class RankProgress:
    """Where one rank stood in one group when it dumped."""

    rank: int
    dumped: bool
    trigger: str  # how it dumped, or why it has no dump
    last_enqueued: int | None
    last_completed: int | None
    pending: tuple[int, ...]  # sequence ids enqueued but not completed: it is inside these
    ops: tuple[str, ...]  # 'seq:op' of its entries, oldest first


@dataclasses.dataclass(frozen=True)
class Analysis:
    """The cross-rank reading of a FlightRecorderCapture."""

    group: str  # the group the divergence is in (the default group when there is none)
    progress: tuple[RankProgress, ...]
    findings: tuple[Finding, ...]
    divergence_seq: int | None  # the first sequence id not joined alike by every rank
    divergence_op: str | None
    culprits: tuple[int, ...]
    reason: str  # why those ranks, in words; or what the recorder shows when nothing diverged
    torch_agreement: str  # where torch's analyzer and this analysis agree (or '' without it)
