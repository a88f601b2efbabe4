"""A run's dumps -> FlightRecorderCapture (pure: reads files, starts nothing).

Each rank of a live run leaves its dump file (or none) and, in its events, what triggered
each dump; faultlab's deadline request notes the state each live rank was in when asked.
A rank without a dump gets the reason its ending gives: that is the evidence a frozen or
killed rank leaves.
"""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

from ..errors import BadInput
from .dumps import load_dump
from .records import FlightRecorderCapture, MissingDump, RankDump

TRIGGERS = ("exit", "error", "terminated", "deadline")


@dataclasses.dataclass(frozen=True)
class RankDumpFile:
    """What the run directory holds about one rank's dump."""

    rank: int
    path: Path
    trigger: str | None  # of its last dump, from its events
    ending: str  # RankCapture.ending
    exit_code: int | None
    state_when_asked: str | None  # /proc state at the deadline request ('T': stopped)


def _missing_reason(rank: RankDumpFile) -> str:
    if rank.ending == "never_started":
        return "never started"
    if rank.state_when_asked == "T":
        return "stopped (state T): could not answer"
    if rank.ending == "killed_at_deadline":
        return "did not answer at the deadline"
    if rank.exit_code is not None and rank.exit_code < 0:
        name = signal.Signals(-rank.exit_code).name if -rank.exit_code in signal.valid_signals() else str(-rank.exit_code)
        return f"killed by {name}"
    return "exited without one"


def read_run_dumps(ranks: list[RankDumpFile], buffer_size: int, world_size: int) -> FlightRecorderCapture:
    """Every rank's dump, or why it has none. Two workers claiming one rank keep the first."""
    dumps: dict[int, RankDump] = {}
    missing: dict[int, MissingDump] = {}
    for rank in sorted(ranks, key=lambda r: r.rank):
        if rank.rank in dumps:
            continue
        if rank.path.is_file():
            trigger = rank.trigger if rank.trigger in TRIGGERS else \
                ("deadline" if rank.ending == "killed_at_deadline" else "terminated")
            try:
                dumps[rank.rank] = load_dump(rank.path, rank.rank, trigger)
                missing.pop(rank.rank, None)
                continue
            except BadInput as error:
                missing[rank.rank] = MissingDump(rank.rank, f"unreadable dump: {error}")
                continue
        missing.setdefault(rank.rank, MissingDump(rank.rank, _missing_reason(rank)))
    for rank in range(world_size):
        if rank not in dumps and rank not in missing:
            missing[rank] = MissingDump(rank, "never started")
    return FlightRecorderCapture(
        buffer_size=buffer_size,
        world_size=world_size,
        dumps=tuple(dumps[rank] for rank in sorted(dumps)),
        missing=tuple(missing[rank] for rank in sorted(missing)),
    )
