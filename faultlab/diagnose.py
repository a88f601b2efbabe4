"""Triage of real failure logs: signatures found, causes ranked, culprits told from victims.

Logs are streamed in large blocks (memory stays flat however big the input): each
signature has literal fragments that any matching line must contain. One multi-literal
pass over a block finds them all (Hyperscan, where installed; else one bytes.find pass per
fragment, several times slower: benchmarks/bench_diagnose.py); only lines holding a fragment are decoded
and matched against the full pattern. Ranks are read from `[rankN]:`-style prefixes, or from
the file's name and path (rank3.log, rank_3/stderr.txt). Large inputs are shared out to
forked processes, whole files each.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import multiprocessing
import os
import re
import stat
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .causes import CAUSES_BY_ID
from .errors import BadInput
from .symptoms import SIGNATURES, SIGNATURES_BY_ID

BLOCK_BYTES = 4 << 20
BINARY_SNIFF_BYTES = 4096
PARALLEL_MIN_BYTES = 32 << 20  # below this, starting processes costs more than it saves
MAX_WORKERS = 16
LINES_PER_SIGNATURE = 3  # evidence lines kept per signature and source
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# torch's [rankN]: and [Rank N], mpirun's --tag-output [1,N]<stdout>:, srun --label's leading "N: ".
RANK_PREFIX = re.compile(r"\[(?:default)?rank(\d+)\]:|\brank(\d+)\]:|\[Rank (\d+)\]|^\[\d+,(\d+)\]<std(?:out|err)>:"
                         r"|^\s*(\d+): ")
RANK_IN_PATH = re.compile(r"(?:^|[/_.-])rank[_-]?(\d+)(?:[/_.-]|$)")
# Lines worth showing when no signature is known: found by the same literal search.
ERROR_FRAGMENTS = (b"Error", b"error", b"Exception", b"Traceback", b"failed", b"Failed", b"timed out",
                   b"Timed out", b"FATAL", b"fatal")
ERROR_LINES_KEPT = 20
ERROR_LINE = "error-line"  # the finder's label for them
NOT_IN_CATALOG = "not-in-catalog"  # the answer for a log whose cause the catalog does not hold

CULPRIT_WEIGHT = 3.0  # a culprit-side line says more about the cause than a victim's timeout
PRIOR_DECAY = 0.7  # a signature's suggested causes are listed most frequent first: each next one weighs 0.7 as much


@dataclasses.dataclass(frozen=True)
class Evidence:
    signature: str
    path: str
    line_number: int
    rank: int | None
    line: str


@dataclasses.dataclass(frozen=True)
class RankedCause:
    cause: str
    confidence: float  # share of the evidence weight, 0..1
    signatures: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    causes: tuple[RankedCause, ...]
    evidence: tuple[Evidence, ...]
    culprits: tuple[int, ...]  # ranks with their own (culprit-side) errors
    victims: tuple[int, ...]  # ranks with only waiting/teardown errors
    silent: tuple[int, ...]  # ranks known by their files that logged no error: torn down or still waiting
    error_lines: tuple[Evidence, ...]  # for "no known signature": the error lines seen
    next_check: str
    notes: tuple[str, ...]  # files skipped (binary, unreadable, empty)
    files: int
    bytes: int

    def answers(self) -> tuple[str, ...]:
        """Causes best first; "not in the catalog" when no known signature was found."""
        return tuple(ranked.cause for ranked in self.causes) or (NOT_IN_CATALOG,)

    @property
    def culprit(self) -> int | None:
        return self.culprits[0] if len(self.culprits) == 1 else None

    @property
    def culprit_node(self) -> int | None:
        return None


def _rank_of_path(path: str) -> int | None:
    match = RANK_IN_PATH.search(path.replace(os.sep, "/"))
    if not match:
        return None
    return int(next(group for group in match.groups() if group is not None))


def _rank_of_line(line: str) -> int | None:
    match = RANK_PREFIX.search(line)
    return int(next(group for group in match.groups() if group is not None)) if match else None


@dataclasses.dataclass
class _FileScan:
    evidence: list[Evidence]
    error_lines: list[Evidence]
    note: str | None
    size: int


def _scan_file(path: str) -> _FileScan:
    """Stream one file; keep a few lines per signature and rank."""
    file_rank = _rank_of_path(path)
    kept: collections.Counter = collections.Counter()
    evidence, errors = [], []
    size = 0
    try:
        with open(path, "rb") as stream:
            head = stream.read(BINARY_SNIFF_BYTES)
            if not head:
                return _FileScan([], [], f"{path}: empty", 0)
            if b"\0" in head:
                return _FileScan([], [], f"{path}: binary, skipped", 0)
            carry, line_base, block = b"", 0, head
            while block:
                size += len(block)
                data = carry + block
                cut = data.rfind(b"\n") + 1
                complete, carry = (data[:cut], data[cut:]) if cut else (b"", data)
                line_base = _scan_block(complete, path, file_rank, line_base, kept, evidence, errors)
                block = stream.read(BLOCK_BYTES)
            if carry:
                _scan_block(carry + b"\n", path, file_rank, line_base, kept, evidence, errors)
    except OSError as error:
        return _FileScan([], [], f"{path}: unreadable ({error.strerror or error})", 0)
    return _FileScan(evidence, errors, None, size)


class _LiteralFinder:
    """Every (offset, label) where one of the literals occurs in a block, in one pass."""

    def __init__(self, literals: list[tuple[bytes, str]]) -> None:
        self.literals = literals
        self.database = None
        self.scratch = None  # Hyperscan's scratch space, made on first use (in each forked process's copy)
        try:
            import hyperscan
        except ImportError:  # optional: the pure-Python search gives the same hits, slower
            return
        self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.database.compile(
            expressions=[re.escape(literal.decode()).encode() for literal, _ in literals],
            ids=list(range(len(literals))),
        )

    def find(self, block: bytes) -> list[tuple[int, str]]:
        found: list[tuple[int, str]] = []
        if self.database is not None:
            def on_match(index, start, end, flags, context):
                found.append((end - len(self.literals[index][0]), self.literals[index][1]))

            if self.scratch is None:
                import hyperscan

                self.scratch = hyperscan.Scratch(self.database)
            self.database.scan(block, match_event_handler=on_match, scratch=self.scratch)
            return found
        for literal, label in self.literals:
            start = block.find(literal)
            while start != -1:
                found.append((start, label))
                start = block.find(literal, start + 1)
        return sorted(found)  # in offset order, as Hyperscan reports them


_FINDER: _LiteralFinder | None = None


def _finder() -> _LiteralFinder:
    global _FINDER
    if _FINDER is None:
        literals = [(literal.encode(), signature.id) for signature in SIGNATURES for literal in signature.literals]
        _FINDER = _LiteralFinder(literals + [(fragment, ERROR_LINE) for fragment in ERROR_FRAGMENTS])
    return _FINDER


def _line_at(block: bytes, start: int) -> str:
    end = block.find(b"\n", start)
    raw = block[start:end if end != -1 else len(block)]
    return ANSI_ESCAPE.sub("", raw.decode("utf-8", errors="replace")).rstrip()


def _scan_block(block: bytes, path, file_rank, line_base, kept, evidence, errors) -> int:
    """Evidence and error lines of one block of whole lines; returns the line count so far.

    Line numbers are counted forward from one matching line to the next: a log repeating one
    error a million times is read once, not once per repetition."""
    hits: dict[int, set[str]] = collections.defaultdict(set)  # line start offset -> signature ids
    error_starts: set[int] = set()
    for offset, label in _finder().find(block):
        start = block.rfind(b"\n", 0, offset) + 1
        if label != ERROR_LINE:
            hits[start].add(label)
        elif len(errors) + len(error_starts) < ERROR_LINES_KEPT:
            error_starts.add(start)
    position, line_number = 0, line_base
    for start in sorted(hits.keys() | error_starts):
        line_number += block.count(b"\n", position, start)
        position = start
        line = _line_at(block, start)
        rank = _rank_of_line(line)
        rank = file_rank if rank is None else rank
        for signature_id in sorted(hits.get(start, ())):
            if kept[signature_id, rank] < LINES_PER_SIGNATURE and SIGNATURES_BY_ID[signature_id].regex.search(line):
                kept[signature_id, rank] += 1
                evidence.append(Evidence(signature_id, path, line_number + 1, rank, line))
        if start in error_starts:
            errors.append(Evidence(ERROR_LINE, path, line_number + 1, rank, line))
    return line_base + block.count(b"\n")


def log_files(paths: list[Path]) -> tuple[list[str], list[str], list[str]]:
    """Every regular file under `paths`; notes for what is skipped; the paths that do not exist.

    Only regular files are read: a FIFO or a device among the logs would block or never end."""
    files, notes, missing = [], [], []

    def add(path: str) -> None:
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            notes.append(f"{path}: unreadable ({error.strerror or error})")
            return
        if stat.S_ISREG(mode):
            files.append(path)
        else:
            notes.append(f"{path}: not a regular file, skipped")

    for path in paths:
        if path.is_dir():
            for root, _, names in os.walk(path, onerror=lambda error: notes.append(
                    f"{error.filename}: unreadable ({error.strerror or error})")):
                for name in sorted(names):
                    add(os.path.join(root, name))
        elif os.path.lexists(path):
            add(str(path))
        else:
            missing.append(f"{path}: no such file or directory")
    return files, notes, missing


def _scan_all(files: list[str], workers: int | None) -> list[_FileScan]:
    """Scan every file: in this process, or across forked processes where there is enough to share.

    The scan is CPU-bound and holds the GIL, so threads only add contention (measured slower
    than one thread); processes take whole files each. Forking a process that runs other
    threads is unsafe, so such a caller scans here."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = min(workers or cores, len(files), MAX_WORKERS)
    total = 0
    for path in files:
        with contextlib.suppress(OSError):  # gone since it was listed: _scan_file notes it
            total += os.path.getsize(path)
    if workers < 2 or total < PARALLEL_MIN_BYTES or threading.active_count() > 1:
        return [_scan_file(path) for path in files]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        chunk = max(1, len(files) // (workers * 8))  # many files per task: fewer round trips, still balanced
        return list(pool.map(_scan_file, files, chunksize=chunk))


def learned_counts(recordings, cause_of: dict[str, str]) -> dict[str, collections.Counter]:
    """signature -> cause -> how many recorded runs showed that signature with that cause."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for recording in recordings:
        cause = cause_of.get(recording.scenario_id)
        for signature in {symptom.id for symptom in recording.symptoms} if cause else ():
            counts[signature][cause] += 1
    return counts


def diagnose(paths: list[Path], cause_counts: dict[str, collections.Counter] | None = None,
             workers: int | None = None) -> Diagnosis:
    """Triage the logs at `paths`. `cause_counts[signature][cause]` counts recordings in
    which the signature appeared with that cause: evidence learned from the store."""
    files, notes, missing = log_files(paths)
    if missing and not files:
        raise BadInput("; ".join(missing))
    notes += missing
    scans = _scan_all(files, workers)
    evidence = [item for scan in scans for item in scan.evidence]
    notes += [scan.note for scan in scans if scan.note]
    roles = {s.id: s.role for s in SIGNATURES}
    suggests = {s.id: s.suggests for s in SIGNATURES}
    seen_on: dict[int, set[str]] = collections.defaultdict(set)
    for item in evidence:
        if item.rank is not None:
            seen_on[item.rank].add(item.signature)

    def own_error(ids: set[str]) -> bool:
        # A culprit-side signature, or a traceback of its own with no sign of waiting on others.
        victim = any(roles[i] == "victim" for i in ids)
        return any(roles[i] == "culprit" for i in ids) or ("python-exception" in ids and not victim)

    culprits = tuple(sorted(rank for rank, ids in seen_on.items() if own_error(ids)))
    named_by_file = {rank for rank in (_rank_of_path(path) for path in files) if rank is not None}
    victims = tuple(sorted(rank for rank, ids in seen_on.items()
                           if not own_error(ids) and any(roles[i] == "victim" for i in ids)))
    weights: collections.Counter = collections.Counter()
    supporting: dict[str, set[str]] = collections.defaultdict(set)
    for signature_id in {item.signature for item in evidence if suggests[item.signature]}:
        learned = (cause_counts or {}).get(signature_id, collections.Counter())
        candidates = collections.Counter({cause: PRIOR_DECAY ** order
                                          for order, cause in enumerate(suggests[signature_id])})
        for cause, count in learned.items():
            candidates[cause] += 2.0 * count
        total = sum(candidates.values())
        weight = CULPRIT_WEIGHT if roles[signature_id] == "culprit" else 1.0
        for cause, value in candidates.items():
            weights[cause] += weight * value / total
            supporting[cause].add(signature_id)
    if victims and any(not any(roles[i] == "culprit" and suggests[i] for i in seen_on[rank]) for rank in culprits):
        # A rank died of an error of its own that no signature names, while others waited on it.
        weights["rank-crash"] += CULPRIT_WEIGHT
        supporting["rank-crash"].add("python-exception")
    grand = sum(weights.values()) or 1.0
    causes = tuple(
        RankedCause(cause, round(value / grand, 3), tuple(sorted(supporting[cause])))
        for cause, value in weights.most_common()
        if cause in CAUSES_BY_ID
    )
    next_check = ""
    if len(causes) >= 2:
        first, second = CAUSES_BY_ID[causes[0].cause], CAUSES_BY_ID[causes[1].cause]
        next_check = f"To tell {first.id} from {second.id}: {first.confirm} / {second.confirm}"
    elif causes:
        next_check = CAUSES_BY_ID[causes[0].cause].confirm
    return Diagnosis(
        causes=causes,
        evidence=tuple(evidence),
        culprits=culprits,
        victims=victims,
        silent=tuple(sorted(named_by_file - set(seen_on))),
        error_lines=tuple(item for scan in scans for item in scan.error_lines)[:ERROR_LINES_KEPT] if not causes else (),
        next_check=next_check,
        notes=tuple(notes),
        files=len(files),
        bytes=sum(scan.size for scan in scans),
    )
