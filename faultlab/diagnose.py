"""Triage of real failure logs: signatures found, facts read, causes ranked, culprits named.

Logs are streamed in large blocks (memory stays flat however big the input): each
signature has literal fragments that any matching line must contain. One multi-literal
pass over a block finds them all (Hyperscan, where installed; else one bytes.find pass per
fragment, several times slower: benchmarks/bench_diagnose.py); only lines holding a fragment are decoded
and matched against the full pattern. Ranks are read from `[rankN]:`-style prefixes, or from
the file's name and path (rank3.log, rank_3/stderr.txt); nodes from the path (node1/...).
Large inputs are shared out to forked processes, whole files each. What the kept lines mean
is decided in cause_rules (facts from log_facts); this module scans and assembles.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import multiprocessing
import os
import re
import sqlite3
import stat
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import cause_rules
from .causes import CAUSES_BY_ID
from .errors import BadInput
from .log_facts import read_facts, untouched_pid
from .symptoms import SIGNATURES, SIGNATURES_BY_ID

BLOCK_BYTES = 4 << 20
BINARY_SNIFF_BYTES = 4096
PARALLEL_MIN_BYTES = 32 << 20  # below this, starting processes costs more than it saves
MAX_WORKERS = 16
LINE_WINDOW = 2000  # characters kept of a huge line, around what matched
LINE_CACHE_SIZE = 4096  # distinct lines remembered per file: a repeated error is decoded once
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# torch's [rankN]: and [Rank N], mpirun's --tag-output [1,N]<stdout>:, srun --label's leading "N: ".
RANK_PREFIX = re.compile(r"\[(?:default)?rank(\d+)\]:|\brank(\d+)\]:|\[Rank (\d+)\]|^\[\d+,(\d+)\]<std(?:out|err)>:"
                         r"|^\s*(\d+): ")
RANK_IN_PATH = re.compile(r"(?:^|[/_.-])rank[_-]?(\d+)(?:[/_.-]|$)")
NODE_IN_PATH = re.compile(r"(?:^|[/_.-])node[_-]?(\d+)(?:[/_.-]|$)")
# Lines worth showing when no signature is known: found by the same literal search.
ERROR_FRAGMENTS = (b"Error", b"error", b"Exception", b"Traceback", b"failed", b"Failed", b"timed out",
                   b"Timed out", b"FATAL", b"fatal")
ERROR_LINES_KEPT = 20
ERROR_LINE = "error-line"  # the finder's label for them
NOT_IN_CATALOG = "not-in-catalog"  # the answer for a log whose cause the catalog does not hold
STDIN = "-"
OWN_TRACEBACK = "own-traceback-among-waiters"  # a reading diagnose derives, not a line's signature


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
    confidence: float  # calibrated share, 0..1; what is left of 1 is "unknown / not in the catalog"
    signatures: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    causes: tuple[RankedCause, ...]
    unknown: float  # share of "unknown / not in the catalog"
    evidence: tuple[Evidence, ...]
    culprits: tuple[int, ...]  # ranks with their own (culprit-side) errors
    victims: tuple[int, ...]  # ranks with only waiting/teardown errors
    silent: tuple[int, ...]  # ranks known by their files that logged no error: torn down or still waiting
    culprit: int | None  # the one rank named at fault, where the log singles one out
    culprit_node: int | None
    culprit_reason: str
    reasons: tuple[str, ...]  # what the rules read from the facts, in words
    outside: tuple[str, ...]  # signatures of known failures outside the catalog
    error_lines: tuple[Evidence, ...]  # for "no known cause": the error lines seen
    next_check: str
    notes: tuple[str, ...]  # files skipped (binary, unreadable, empty)
    files: int
    bytes: int

    @property
    def exit_code(self) -> int:
        """0: causes found; 1: no known signature (nothing the catalog knows, or only failures outside it)."""
        return 0 if self.causes else 1

    def answers(self) -> tuple[str, ...]:
        """Answers best first, "not in the catalog" among them: first when it is more likely than
        all the catalog's causes together, else after the causes more likely than it."""
        causes = [ranked.cause for ranked in self.causes]
        if not causes or self.unknown > 0.5:
            return (NOT_IN_CATALOG, *causes)
        place = max(1, sum(1 for ranked in self.causes if ranked.confidence >= self.unknown))
        return (*causes[:place], NOT_IN_CATALOG, *causes[place:])


def _number_in(pattern: re.Pattern, text: str) -> int | None:
    match = pattern.search(text.replace(os.sep, "/"))
    return int(next(group for group in match.groups() if group is not None)) if match else None


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
    try:
        with open(path, "rb") as stream:
            return _scan_stream(stream, path)
    except OSError as error:
        return _FileScan([], [], f"{path}: unreadable ({error.strerror or error})", 0)


def _scan_stream(stream, path: str) -> _FileScan:
    """Stream one input; keep a few lines per signature and rank."""
    head = stream.read(BINARY_SNIFF_BYTES)
    if not head:
        return _FileScan([], [], f"{path}: empty", 0)
    if b"\0" in head:
        return _FileScan([], [], f"{path}: binary, skipped", 0)
    state = _BlockState(path, _number_in(RANK_IN_PATH, path))
    carry, block, size = b"", head, 0
    while block:
        size += len(block)
        data = carry + block
        cut = data.rfind(b"\n") + 1
        complete, carry = (data[:cut], data[cut:]) if cut else (b"", data)
        state.scan(complete)
        block = stream.read(BLOCK_BYTES)
    if carry:
        state.scan(carry + b"\n")
    return _FileScan(state.evidence, state.errors, None, size)


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
            literals = self.literals

            def on_match(index, start, end, flags, context):
                found.append((end - len(literals[index][0]), literals[index][1]))

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


_FINDERS: dict[bool, _LiteralFinder] = {}


def _finder(with_error_lines: bool = True) -> _LiteralFinder:
    """The literal search; without the error fragments once a file's error lines are all kept."""
    if with_error_lines not in _FINDERS:
        literals = [(literal.encode(), signature.id) for signature in SIGNATURES for literal in signature.literals]
        if with_error_lines:
            literals += [(fragment, ERROR_LINE) for fragment in ERROR_FRAGMENTS]
        _FINDERS[with_error_lines] = _LiteralFinder(literals)
    return _FINDERS[with_error_lines]


def _window(line: str, regex: re.Pattern) -> str:
    """A huge line cut around what matched, so the deciding words stay."""
    if len(line) <= LINE_WINDOW:
        return line
    match = regex.search(line)
    start = max(0, (match.start() if match else 0) - LINE_WINDOW // 4)
    return ("…" if start else "") + line[start:start + LINE_WINDOW] + ("…" if start + LINE_WINDOW < len(line) else "")


class _BlockState:
    """One input's scan: kept lines, counts per (signature, rank), line numbers so far."""

    def __init__(self, path: str, file_rank: int | None) -> None:
        self.path, self.file_rank = path, file_rank
        self.kept: collections.Counter = collections.Counter()
        self.evidence: list[Evidence] = []
        self.errors: list[Evidence] = []
        self.line_base = 0
        self.cache: dict[bytes, tuple] = {}  # raw line -> (text, rank of the line, signature ids that match)

    def scan(self, block: bytes) -> None:
        """Evidence and error lines of one block of whole lines.

        Line numbers are counted forward from one matching line to the next, and a line seen
        before is not decoded or matched again: a log repeating one error a million times is read once."""
        want_errors = len(self.errors) < ERROR_LINES_KEPT
        hits: dict[int, set[str]] = collections.defaultdict(set)  # line start offset -> labels
        for offset, label in _finder(want_errors).find(block):
            hits[block.rfind(b"\n", 0, offset) + 1].add(label)
        position, line_number = 0, self.line_base
        for start in sorted(hits):
            line_number += block.count(b"\n", position, start)
            position = start
            labels = hits[start]
            end = block.find(b"\n", start)
            raw = block[start:end]
            known = self.cache.get(raw)
            if known is None:
                known = self._read(raw, labels)
            text, line_rank, matched = known
            rank = self.file_rank if line_rank is None else line_rank
            for signature_id in matched:
                if self.kept[signature_id, rank] < SIGNATURES_BY_ID[signature_id].keep:
                    self.kept[signature_id, rank] += 1
                    line = _window(text, SIGNATURES_BY_ID[signature_id].regex)
                    self.evidence.append(Evidence(signature_id, self.path, line_number + 1, rank, line))
            if ERROR_LINE in labels and len(self.errors) < ERROR_LINES_KEPT:
                self.errors.append(Evidence(ERROR_LINE, self.path, line_number + 1, rank, _window(text, re.compile("rror"))))
        self.line_base += block.count(b"\n")

    def _read(self, raw: bytes, labels: set[str]) -> tuple:
        text = ANSI_ESCAPE.sub("", raw.decode("utf-8", errors="replace")).rstrip()
        matched = tuple(sorted(label for label in labels if label != ERROR_LINE
                               and SIGNATURES_BY_ID[label].regex.search(text)))
        known = (text, _rank_of_line(text), matched)
        if len(self.cache) < LINE_CACHE_SIZE:
            self.cache[raw] = known
        return known


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


def learned_counts_from_store(path: Path, cause_of: dict[str, str]) -> dict[str, collections.Counter]:
    """Learned counts from a recording store, if that file exists: opened read-only, never
    created (diagnose must not leave a store, or its directories, behind)."""
    from .store import Store

    if not path.is_file():
        return {}

    class _ReadOnly(Store):
        def __init__(self) -> None:  # the store's readers, over a connection that cannot write
            self.path = path
            # Without a write-ahead log beside it nobody is writing: read the file as it is, leaving
            # no -wal/-shm files behind; with one, read through it (those files exist already).
            quiet = "" if Path(f"{path}-wal").exists() else "&immutable=1"
            self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro{quiet}", uri=True, timeout=30)

    try:
        store = _ReadOnly()
        try:
            return learned_counts(store.recordings(kind="run"), cause_of)
        finally:
            store.close()
    except sqlite3.Error as error:
        raise BadInput(f"{path}: cannot read the recording store: {error}") from None


def triage(paths: list[Path], store_path: Path | None, stdin=None) -> Diagnosis:
    """`faultlab diagnose`: counts learned from the store (only if its file exists), then diagnose.
    No path reads standard input."""
    from .scenario import cause_of_each
    from .store import default_path

    learned = learned_counts_from_store(Path(store_path) if store_path else default_path(), cause_of_each())
    return diagnose(paths or [Path(STDIN)], learned, stdin=stdin)


def diagnose(paths: list[Path], cause_counts: dict[str, collections.Counter] | None = None,
             workers: int | None = None, stdin=None) -> Diagnosis:
    """Triage the logs at `paths` ("-" for `stdin`, a binary stream). `cause_counts[signature][cause]`
    counts recordings in which the signature appeared with that cause: evidence learned from the store."""
    scans, notes = [], []
    reads_stdin = any(str(path) == STDIN for path in paths)
    if reads_stdin:
        if stdin is None:
            raise BadInput("-: standard input is not available here")
        scans.append(_scan_stream(stdin, "<stdin>"))
    files, file_notes, missing = log_files([path for path in paths if str(path) != STDIN])
    if missing and not files and not scans:
        raise BadInput("; ".join(missing))
    scans += _scan_all(files, workers)
    notes += file_notes + missing + [scan.note for scan in scans if scan.note]
    return _assemble(scans, files, notes, cause_counts, inputs=len(files) + reads_stdin)


def _assemble(scans, files, notes, cause_counts, inputs: int) -> Diagnosis:
    evidence = [item for scan in scans for item in scan.evidence]
    seen_on: dict[int, set[str]] = collections.defaultdict(set)
    for item in evidence:
        if item.rank is not None and SIGNATURES_BY_ID[item.signature].effect != "context":
            seen_on[item.rank].add(item.signature)
    culprits, victims = _roles(seen_on)
    present = {item.signature for item in evidence}
    facts = read_facts(evidence)
    extra = ()
    if victims and any(not any(cause_rules.is_primary(i) and SIGNATURES_BY_ID[i].role == "culprit"
                               for i in seen_on[rank]) for rank in culprits):
        # A rank died of an error of its own that no signature names, while others waited on it.
        extra = (("rank-crash", 0.7, OWN_TRACEBACK),)
    ranking = cause_rules.rank_causes(present, facts, cause_counts, extra)
    causes = tuple(RankedCause(cause, round(share, 3), signatures) for cause, share, signatures in ranking.causes
                   if cause in CAUSES_BY_ID)
    culprit, culprit_node, why = _name_culprit(culprits, victims, facts, evidence)
    named_by_file = {rank for rank in (_number_in(RANK_IN_PATH, path) for path in files) if rank is not None}
    return Diagnosis(
        causes=causes, unknown=round(ranking.unknown, 3), evidence=tuple(evidence), culprits=culprits,
        victims=victims, silent=tuple(sorted(named_by_file - set(seen_on))), culprit=culprit,
        culprit_node=culprit_node, culprit_reason=why, reasons=ranking.reasons, outside=ranking.outside,
        error_lines=tuple(item for scan in scans for item in scan.error_lines)[:ERROR_LINES_KEPT] if not causes else (),
        next_check=_next_check(causes), notes=tuple(notes), files=inputs, bytes=sum(scan.size for scan in scans),
    )


def _roles(seen_on: dict[int, set[str]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Ranks with errors of their own (culprits) and ranks that only waited or lost a peer (victims)."""
    def role_of(ids: set[str], role: str) -> bool:
        return any(SIGNATURES_BY_ID[i].role == role and SIGNATURES_BY_ID[i].effect != "context" for i in ids)

    def own_error(ids: set[str]) -> bool:
        # A culprit-side signature, or a traceback of its own with no sign of waiting on others.
        return role_of(ids, "culprit") or ("python-exception" in ids and not role_of(ids, "victim"))

    culprits = tuple(sorted(rank for rank, ids in seen_on.items() if own_error(ids)))
    victims = tuple(sorted(rank for rank, ids in seen_on.items() if not own_error(ids) and role_of(ids, "victim")))
    return culprits, victims


def _name_culprit(culprits, victims, facts, evidence) -> tuple[int | None, int | None, str]:
    """The one rank at fault, where the log singles one out, its node, and how it was told."""
    rank, why = None, ""
    if len(culprits) == 1:
        rank, why = culprits[0], "the only rank with an error of its own"
    elif len({local for _, local, _ in facts.failed_workers}) == 1 and not culprits:
        code, rank, pid = facts.failed_workers[0]
        why = f"the launcher saw local rank {rank} (pid {pid}) exit first, with code {code}"
        if len(facts.root_cause_ranks) == 1:
            rank = facts.root_cause_ranks[0][0]
    elif not culprits and untouched_pid(facts):
        pid, place = untouched_pid(facts)
        rank, why = place, f"the launcher sent SIGTERM to every worker but pid {pid}, which had already exited"
    node = None
    if rank is not None:
        nodes = {_number_in(NODE_IN_PATH, item.path) for item in evidence if item.rank == rank}
        node = nodes.pop() if len(nodes) == 1 else None
        if node is None and facts.per_node and (facts.nodes or 0) > 1:
            node = rank // facts.per_node
    return rank, node, why


def _next_check(causes) -> str:
    if len(causes) >= 2:
        first, second = CAUSES_BY_ID[causes[0].cause], CAUSES_BY_ID[causes[1].cause]
        return f"To tell {first.id} from {second.id}: {first.confirm} / {second.confirm}"
    return CAUSES_BY_ID[causes[0].cause].confirm if causes else ""
