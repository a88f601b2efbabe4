"""Flight Recorder evidence from files as a real job leaves them, for `faultlab diagnose`.

torch writes one dump per rank to `<prefix><rank>` (TORCH_FR_DUMP_TEMP_FILE, older
TORCH_NCCL_DEBUG_INFO_TEMP_FILE; default /tmp/nccl_trace_rank_<rank>), a pickle. torchrun
writes each failed worker's error to the JSON file named by TORCHELASTIC_ERROR_FILE. Both
are found by content, beside logs or alone; every dump is read with the restricted
unpickler, so a crafted file is one BadInput line and nothing it names runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from ..errors import BadInput
from ..log_inputs import job_places
from .analysis import analyse
from .dumps import HostileDump, load_dump, rank_of_file
from .records import Analysis, FlightRecorderCapture, MissingDump

PICKLE_MAGIC = b"\x80"  # protocol 2 and later begin with PROTO
MAX_ERROR_FILE_BYTES = 4 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class ErrorFile:
    """One worker's error as torchrun's error handler wrote it."""

    path: str
    rank: int | None
    message: str  # its first line, e.g. "RuntimeError: Timed out waiting 5000ms ..."
    timestamp: str


@dataclasses.dataclass(frozen=True)
class DumpEvidence:
    capture: FlightRecorderCapture
    analysis: Analysis | None  # None when no dump was found
    error_files: tuple[ErrorFile, ...]
    causes: tuple[tuple[str, float], ...]  # causes the dumps point to, with their weight
    used: tuple[str, ...]  # the files read as dumps or error files (not logs)
    skipped: tuple[str, ...] = ()  # files that looked like dumps and were not (truncated, damaged), and why


def _files(paths: list[Path]) -> list[Path]:
    found = []
    for path in paths:
        if path.is_dir():
            for root, _, names in os.walk(path):
                found += [Path(root) / name for name in sorted(names)]
        elif path.is_file():
            found.append(path)
    return [path for path in found if path.is_file() and not path.is_symlink()]


def _looks_like_dump(path: Path) -> bool:
    if rank_of_file(path) is None:
        return False
    try:
        with open(path, "rb") as file:
            return file.read(1) == PICKLE_MAGIC
    except OSError:
        return False


def _error_file(path: Path, rank: int | None) -> ErrorFile | None:
    """torchrun's error file: {"message": {"message": "...", "extraInfo": {...}}} (or a string)."""
    if path.suffix != ".json":
        return None
    try:
        if path.stat().st_size > MAX_ERROR_FILE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or "message" not in data:
        return None
    message = data["message"]
    info = {}
    if isinstance(message, dict):
        info = message.get("extraInfo") or {}
        message = message.get("message", "")
    if not isinstance(message, str):
        return None
    first = next((line for line in message.splitlines() if line.strip()), "")
    return ErrorFile(str(path), rank, first.strip(),
                     str(info.get("timestamp", "")) if isinstance(info, dict) else "")


def suggested_causes(analysis: Analysis | None) -> tuple[tuple[str, float], ...]:
    """The causes a Flight Recorder analysis points to, strongest first."""
    if analysis is None or analysis.divergence_seq is None:
        return ()
    kinds = {finding.kind for finding in analysis.findings if finding.seq_id == analysis.divergence_seq}
    rows = {row.rank: row for row in analysis.progress}
    culprits = [rows[rank] for rank in analysis.culprits if rank in rows]
    if kinds & {"op-mismatch", "size-mismatch", "dtype-mismatch"}:
        return (("collective-mismatch", 1.0),)
    if culprits and all(not row.dumped for row in culprits):
        return (("frozen-rank", 0.5), ("rank-crash", 0.3), ("straggler-rank", 0.2))
    if culprits and all(row.dumped and row.last_enqueued is not None
                        and row.last_enqueued >= analysis.divergence_seq for row in culprits):
        return (("collective-mismatch", 1.0),)  # the culprit issued a collective no one else did
    if any(row.dumped and row.trigger == "deadline" for row in culprits):
        return (("straggler-rank", 0.7), ("collective-mismatch", 0.3))
    return (("collective-mismatch", 0.5), ("straggler-rank", 0.5))


def evidence_from_dumps(paths: list[Path]) -> DumpEvidence:
    """Every Flight Recorder dump and torchrun error file under `paths`, analysed across ranks."""
    files = _files([Path(path) for path in paths])
    dump_paths = [path for path in files if _looks_like_dump(path)]
    dumps, skipped = {}, []
    for path in dump_paths:
        try:
            dump = load_dump(path)
        except HostileDump:
            raise
        except BadInput as error:  # a damaged file among logs is noted, as diagnose notes binary files
            skipped.append(str(error))
            continue
        if dump.rank in dumps:
            raise BadInput(f"{path}: a second dump for rank {dump.rank} (also {dumps[dump.rank].source})")
        dumps[dump.rank] = dump
    # An error file's rank, as a log's: from its path below the inputs (log_inputs.job_places).
    places = job_places([Path(path) for path in paths], [str(path) for path in files])
    errors = [found for found in (_error_file(path, place.rank) for path, place in zip(files, places))
              if found is not None]
    members = {rank for dump in dumps.values() for group in dump.groups for rank in group.ranks}
    world = max(members | set(dumps), default=-1) + 1
    capture = FlightRecorderCapture(
        buffer_size=0,
        world_size=world,
        dumps=tuple(dumps[rank] for rank in sorted(dumps)),
        missing=tuple(MissingDump(rank, "no dump file") for rank in range(world) if rank not in dumps),
    )
    analysis = analyse(capture) if dumps else None
    return DumpEvidence(capture, analysis, tuple(errors), suggested_causes(analysis),
                        tuple(str(path) for path in dump_paths) + tuple(error.path for error in errors),
                        tuple(skipped))


FLIGHT_RECORDER = "flight-recorder"  # how dump evidence is named among a cause's signatures
