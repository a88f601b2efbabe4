"""The records of a run: what was captured, which symptoms matched, how it compares.

All are frozen dataclasses; `serial.to_dict` / `serial.from_dict` give their JSON form.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from .flight_recorder.records import FlightRecorderCapture

# How a worker's life ended, as faultlab could establish it.
Ending = Literal[
    "exited",  # the program ran to its end or raised; exit_code says which
    "signaled",  # killed by a signal the launcher reported (e.g. SIGKILL from the OOM killer)
    "torn_down",  # the launcher sent it SIGTERM after another worker failed
    "killed_at_deadline",  # still running at faultlab's deadline: it hung
    "never_started",  # its node's launcher never started it
]
# A RankDelta's ending may also be "absent": the baseline has the slot, the run never launched it.


@dataclasses.dataclass(frozen=True)
class PhaseEvent:
    phase: str  # start, init_begin, init_end, set_device_begin, ..., error, exit
    t: float  # seconds since the launch began


@dataclasses.dataclass(frozen=True)
class RankCapture:
    """One worker: where it ran, what it printed, how far it got and how it ended."""

    node: int  # index of the node in the plan
    local_rank: int
    expected_rank: int  # the global rank a correct launch gives this slot
    rank: int | None  # RANK the launcher gave it (None when it never started)
    pid: int | None
    stdout: str
    stderr: str
    events: tuple[PhaseEvent, ...]
    ending: Ending
    exit_code: int | None  # process exit status; negative: killed by that signal
    value: float | None  # the all_reduce result it printed, if any
    end_t: float  # seconds since launch when it ended (or was killed)

    @property
    def slot(self) -> str:
        return f"n{self.node}/l{self.local_rank}"

    @property
    def shown_rank(self) -> int:
        """The rank it was given, or (never started) the one a correct launch gives its slot."""
        return self.rank if self.rank is not None else self.expected_rank

    @property
    def last_phase(self) -> str:
        return self.events[-1].phase if self.events else "not started"

    @property
    def waiting_in(self) -> str | None:
        """The call it was blocked in when it ended, if its last phase is a *_begin."""
        last = self.last_phase
        return last[: -len("_begin")] if last.endswith("_begin") else None

    @property
    def waited_s(self) -> float | None:
        if self.waiting_in is None:
            return None
        return round(self.end_t - self.events[-1].t, 3)

    @property
    def start_t(self) -> float | None:
        return self.events[0].t if self.events else None


@dataclasses.dataclass(frozen=True)
class NodeCapture:
    """One launcher agent: its node's launch arguments and its own log."""

    node: int
    node_rank: int
    nnodes: int
    nproc_per_node: int
    master_port: int
    command: str  # how this node's launcher was started, as a shell would show it
    log: str
    exit_code: int | None
    env: dict[str, str]  # the environment the scenario set on this node
    # A simulated host's addresses, routes, listening ports and firewall; '' on one host's
    # loopback (and in recordings made before simulated hosts existed).
    network: str = ""


@dataclasses.dataclass(frozen=True)
class Capture:
    """Everything one launch left behind, read from its per-rank files and agent logs."""

    backend: str
    world_size: int  # as planned: nodes x ranks per node
    timeout_s: float
    deadline_s: float
    hit_deadline: bool
    duration_s: float
    network: str  # where the run's traffic went (netns.PRIVATE or netns.HOST)
    program: str
    ranks: tuple[RankCapture, ...]
    nodes: tuple[NodeCapture, ...]
    # Each rank's Flight Recorder dump, or why it has none; None in recordings made before
    # faultlab kept the recorder on.
    flight_recorder: FlightRecorderCapture | None = None

    def rank_for_slot(self, node: int, local_rank: int) -> RankCapture | None:
        for rank in self.ranks:
            if rank.node == node and rank.local_rank == local_rank:
                return rank
        return None


@dataclasses.dataclass(frozen=True)
class Symptom:
    """A signature of the catalog found in real output, with where it came from."""

    id: str
    title: str
    role: Literal["culprit", "victim", "neutral"]
    source: str  # "rank <r>" / "node <n> launcher"
    node: int
    local_rank: int | None  # None for a launcher line
    rank: int | None
    line: str  # the first matching line, verbatim
    count: int  # how many lines of that output matched


@dataclasses.dataclass(frozen=True)
class RankDelta:
    """One slot of the faulted run next to the same slot of the healthy baseline."""

    node: int
    local_rank: int
    rank: int | None
    expected_value: float
    observed_value: float | None
    baseline_ending: str
    ending: str
    exit_code: int | None
    last_phase: str
    baseline_duration_s: float | None
    duration_s: float | None
    waiting_in: str | None
    waited_s: float | None
    new_symptoms: tuple[str, ...]
    deviates: bool
    how: tuple[str, ...]  # short reasons: "value 1.0 != 6.0", "exit 1", "hung in all_reduce"


Verdict = Literal["healthy", "wrong-result", "crashed", "hung", "warnings-only"]


@dataclasses.dataclass(frozen=True)
class Comparison:
    verdict: Verdict
    summary: str
    deltas: tuple[RankDelta, ...]
    first_failure: str | None  # the slot that failed earliest, as the launcher would name it
    deviating_ranks: tuple[int, ...]
    launchers: tuple[str, ...]  # how each node's launcher ended, where it differs from the baseline


@dataclasses.dataclass(frozen=True)
class Environment:
    """Where a recording was made."""

    host: str
    platform: str
    python: str
    torch: str
    cuda: str | None
    nccl: str | None
    gloo: bool
    gpus: tuple[str, ...]
    driver: str | None


RECORDING_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Recording:
    """One run, whole: what ran, where, what it printed, what it meant."""

    id: str
    format: int
    scenario_id: str
    kind: Literal["run", "baseline"]
    live: bool  # run live by this faultlab; False for a replay of a recording made elsewhere
    source: str  # "live", or what was replayed and where it was recorded
    recorded_at: str  # ISO 8601, UTC
    environment: Environment
    backend: str
    debug: str | None  # the debug knob the run was made with
    capture: Capture
    symptoms: tuple[Symptom, ...]
    comparison: Comparison | None  # None for a baseline
    baseline_id: str | None
    baseline_note: str  # which baseline the comparison used, in words
    expected_signatures: tuple[str, ...]
    missing_signatures: tuple[str, ...]
    expected_verdict: str
    reproduced: bool
    # A race run again until its outcome showed: how each earlier live run ended ("healthy,
    # without store-connect-reset-retry"); that run's logs were not kept in the recording.
    earlier_attempts: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class DrillResult:
    """One finished drill, as stored per trainee."""

    id: str
    trainee: str
    pack: str | None
    scenario_id: str
    cause: str  # the right cause, for per-cause weak spots
    recording_id: str
    replay: bool
    answer_cause: str
    answer_culprit: str
    answer_ranks: tuple[int, ...]
    answer_fix: str
    used: dict[str, int]
    score_cause: float
    score_culprit: float
    score_ranks: float
    score_fix: float
    costs: int
    total: float
    max: int
    notes: tuple[str, ...]
    started_at: str
    seconds: float


@dataclasses.dataclass(frozen=True)
class LeaderboardRow:
    """One trainee on the leaderboard."""

    trainee: str
    drills: int
    mean: float
    best: float
    last_played: str


@dataclasses.dataclass(frozen=True)
class WeakSpot:
    """How drills of one cause went: the weakest causes are the ones to practise."""

    cause: str
    drills: int
    cause_right_pct: float
    culprit_right_pct: float
    mean: float
