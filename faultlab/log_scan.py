"""Streaming the logs: literal search, kept lines per signature and rank, files and processes.

Logs are streamed in large blocks (memory stays flat however big the input): each
signature has literal fragments that any matching line must contain. One pass over a block
finds them all (literal_search.py); only lines holding a fragment, and only while they can
still be kept, are decoded and matched against the full pattern.
Ranks are read from `[rankN]:`-style prefixes, or from the file's place in the job (its name and path:
log_inputs.py). Logs are read as people paste them too (entities, collectors' prefixes, hard
wraps: pasted.py). Large inputs are shared out to forked processes, whole files each.
"""

from __future__ import annotations

import bisect
import codecs
import collections
import contextlib
import dataclasses
import functools
import itertools
import multiprocessing
import os
import re
import threading
from concurrent.futures import ProcessPoolExecutor

from . import literal_search, log_facts, pasted, userfiles
from .errors import BadInput
from .literal_search import ERROR_LINE
from .line_ranks import TASK_LABEL_BYTES, TORCH_RANK_LABEL_BYTES, rank_of_line
from .log_inputs import JobPlace
from .symptoms import SIGNATURES, SIGNATURES_BY_ID

BLOCK_BYTES = 4 << 20
BINARY_SNIFF_BYTES = 4096
STAMP_REACH = 64 << 10  # where a file's first time stamp is looked for
PARALLEL_MIN_BYTES = 32 << 20  # below this, starting processes costs more than it saves
MAX_WORKERS = 16
LINE_WINDOW = 2000  # characters kept of a huge line, around what matched
LINE_CACHE_SIZE = 4096  # distinct lines remembered per file: a repeated error is decoded once
DENSITY_PROBE = 64 << 10  # bytes of a block probed for how often lines match
REPETITIVE_MIN_BYTES = 1 << 20  # smaller blocks are read line by line: the probe would cost more than it saves
DENSE_BYTES_PER_HIT = 400  # denser than a hit per 400 bytes: see whether a few lines repeat
REPETITION = 20  # a block is "a few lines repeated" with at most one distinct line per 20
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ERROR_LINES_KEPT = 20
ERROR_WORD = re.compile("rror|ailed|xception|atal|imed out")


@dataclasses.dataclass(frozen=True)
class Evidence:
    signature: str
    path: str
    line_number: int
    rank: int | None  # the line's own rank prefix, else its file's
    line: str
    place: JobPlace = JobPlace()  # its file's


def _as_read(text: str) -> str:
    """A line as signatures are matched against it: without terminal colours, a page's escapes undone."""
    return pasted.as_written(ANSI_ESCAPE.sub("", text)).rstrip()


def _matches(regex: re.Pattern, line: str) -> bool:
    """Whether a signature matches the line as written or without its collector's prefixes."""
    body = pasted.body(line)
    return bool(regex.search(body) or body is not line and regex.search(line))


@dataclasses.dataclass
class _FileScan:
    evidence: list[Evidence]
    error_lines: list[Evidence]
    note: str | None
    size: int  # bytes read: 0 for a file with no text
    place: JobPlace = JobPlace()
    first_stamp: tuple | None = None  # (when, line number) of its first stamped line (log_facts.first_stamp)
    path: str = ""


def _scan_file(path: str, place: JobPlace) -> _FileScan:
    try:
        with userfiles.open_regular(path) as stream:  # never blocks, even if a FIFO took its place
            return scan_stream(stream, path, place)
    except OSError as error:
        return _FileScan([], [], f"{path}: unreadable ({error.strerror or error})", 0, place)
    except BadInput as refused:
        return _FileScan([], [], f"{refused}, skipped", 0, place)


def scan_stream(stream, path: str, place: JobPlace = JobPlace()) -> _FileScan:
    """Stream one input; keep a few lines per signature and rank."""
    head = stream.read(BINARY_SNIFF_BYTES)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        stream = _Utf16AsUtf8(stream, head)
        head = stream.read(BINARY_SNIFF_BYTES)
    if not head:
        return _FileScan([], [], f"{path}: empty", 0, place)
    if b"\0" in head:
        return _FileScan([], [], f"{path}: binary, skipped", 0, place)
    # The first block is as large as the others: a paste, wrapped lines and all, is read whole.
    carry, block, size = b"", head + stream.read(BLOCK_BYTES - len(head)), 0
    state = _BlockState(path, place, may_be_paste=len(block) <= pasted.PASTE_BYTES)
    first_stamp = log_facts.first_stamp(block[:STAMP_REACH].decode("utf-8", "replace"))
    while block:
        size += len(block)
        data = carry + block
        block = stream.read(BLOCK_BYTES)
        if not block:  # the last one, with its unterminated line
            state.scan(data if data.endswith(b"\n") else data + b"\n")
            break
        cut = data.rfind(b"\n") + 1
        complete, carry = (data[:cut], data[cut:]) if cut else (b"", data)
        state.scan(complete)
    return _FileScan(state.evidence, state.errors, None, size, place, first_stamp, path)


class _Utf16AsUtf8:
    """A UTF-16 log (Windows PowerShell's `>` writes one) read as the UTF-8 the scan expects."""

    def __init__(self, stream, head: bytes) -> None:
        encoding = "utf-16-le" if head.startswith(codecs.BOM_UTF16_LE) else "utf-16-be"
        self.decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self.stream = stream
        self.pending = self.decoder.decode(head[len(codecs.BOM_UTF16_LE):]).encode()

    def read(self, size: int) -> bytes:
        while len(self.pending) < size:
            raw = self.stream.read(size)
            self.pending += self.decoder.decode(raw, final=not raw).encode()
            if not raw:
                break
        block, self.pending = self.pending[:size], self.pending[size:]
        return block


KEEP = {signature.id: signature.keep for signature in SIGNATURES}
# Signatures whose pattern excludes wordings (a negative lookaround, "not localhost"): a guess across a wrap does not
# undo what an exclusion refused in another reading.
EXCLUDING = frozenset(signature.id for signature in SIGNATURES if pasted.has_exclusions(signature.regex))


@functools.cache
def _respeller() -> pasted.Respeller:
    """Known words: the signatures' literals' whole words (a literal's first word, lower-case, may be cut)."""
    return pasted.Respeller(match[0] for signature in SIGNATURES for literal in signature.literals
                            for match in pasted.Respeller.WORD.finditer(literal)
                            if match.start() or not literal[0].islower())


@functools.lru_cache(maxsize=4096)  # the same error lines recur in every rank's file
def _retyped_matches(text: str) -> tuple[str, tuple[str, ...]]:
    """An error line read with the misspelt words a signature needed respelled (as a page's quotes are read
    as the machine wrote them, pasted.as_written), and the signatures it then matches (none: the line as is)."""
    corrections = _respeller().corrections(text)
    if not corrections:
        return text, ()
    retyped = pasted.with_corrections(text, corrections)
    labels = {label for _, _, label in literal_search.finder(False).find(retyped.encode())}
    matched = tuple(sorted(label for label in labels if _matches(SIGNATURES_BY_ID[label].regex, retyped)))
    spans = [found.span() for found in (SIGNATURES_BY_ID[label].regex.search(retyped) for label in matched) if found]
    needed, shift = [], 0
    for start, end, word in corrections:
        at = start + shift
        if any(span_start < at + len(word) and at < span_end for span_start, span_end in spans):
            needed.append((start, end, word))
        shift += len(word) - (end - start)
    return pasted.with_corrections(text, needed), matched


def _refused(regex: re.Pattern, text: str) -> int:
    """How many times `text` holds what `regex` asks and its exclusion refuses it there."""
    return sum(1 for wanted in pasted.without_exclusions(regex).finditer(text) if not regex.match(text, wanted.start()))


def _by_line(block: bytes, hits) -> list[tuple[int, str]]:
    """(start of its line, label) of each hit, in the search's order: each stretch of the block is looked through
    for line ends once (a huge line full of hits costs no more than its length). A hit holds no line end, so one
    that starts before the stretch already looked through is on the line found last."""
    found, line_start, looked_to = [], 0, 0
    for offset, _, label in hits:
        if offset > looked_to:
            newline = block.rfind(b"\n", looked_to, offset)
            line_start, looked_to = (newline + 1 if newline != -1 else line_start), offset
        found.append((line_start, label))
    return found


WORD_BREAK_REACH = 40  # bytes: how far a signature's pattern reaches past its literal, at most (a port and a code)
# A line end and the marks of a markdown quote after it: a paste quoted after its wrap carries them onto every
# piece, between the words the wrap split.
_LINE_END_AND_QUOTE = re.compile(rb"\n(?:>[ ]?)*")


def _word_breaks(block: bytes, finder: literal_search.LiteralFinder) -> set[int]:
    """Indices of the lines whose end a word wrap may have put inside a signature: a literal runs across the
    line end once it is read as a space, or a literal near a line's end (or start) belongs to a signature the
    line does not match alone (its rest may be on the next line, or the one before). One search of the
    block, and a pattern tried only at a line's edges: an ordinary file costs little."""
    lines = _LINE_END_AND_QUOTE.split(block) if b"\n>" in block else block.split(b"\n")
    text = b" ".join(lines)
    hits = finder.find(text)
    if not hits:
        return set()
    next_starts = list(itertools.accumulate(len(line) + 1 for line in lines))  # in `text`: where each next line starts
    breaks = set()
    for start, end, label in hits:
        index = bisect.bisect_right(next_starts, start)  # the line the literal begins on
        line_start, line_end = next_starts[index - 1] if index else 0, next_starts[index] - 1
        if end > line_end:
            breaks.add(index)
            continue
        near_end, near_start = line_end - end < WORD_BREAK_REACH, start - line_start < WORD_BREAK_REACH
        if (near_end or near_start) and not _matches(
                SIGNATURES_BY_ID[label].regex, _as_read(lines[index].decode(errors="replace"))):
            breaks.update(([index] if near_end else []) + ([index - 1] if near_start and index else []))
    return breaks


def _window(line: str, regex: re.Pattern) -> str:
    """A huge line cut around what matched, so the deciding words stay."""
    if len(line) <= LINE_WINDOW:
        return line
    match = regex.search(line)
    start = max(0, (match.start() if match else 0) - LINE_WINDOW // 4)
    return ("…" if start else "") + line[start:start + LINE_WINDOW] + ("…" if start + LINE_WINDOW < len(line) else "")


class _BlockState:
    """One input's scan: kept lines, counts per (signature, rank), line numbers so far."""

    def __init__(self, path: str, place: JobPlace, may_be_paste: bool) -> None:
        self.path, self.place = path, place
        self.kept: collections.Counter = collections.Counter()
        self.evidence: list[Evidence] = []
        self.errors: list[Evidence] = []
        self.line_base = 0
        self.cache: dict[bytes, tuple] = {}  # raw line -> (text, rank of the line, signature ids that match)
        self.may_be_paste = may_be_paste  # small enough to have come through a terminal's copy
        self.joined_pieces: set[int] = set()  # line numbers of a surely wrapped line's pieces
        # Signatures whose lines only set a flag of the whole log (log_facts.FLAGS), once this file has one:
        # no longer searched for (a progress bar on every line)
        self.flags_found: set[str] = set()

    def scan(self, block: bytes) -> None:
        """Evidence and error lines of one block of whole lines.

        A line is decoded and matched only while it can still be kept: once every signature
        it could match has its lines for that rank, it is skipped unread, and a line seen before
        is not matched again. A block that repeats a few lines over and over is read as those
        few lines. Line numbers are counted only for lines that are kept."""
        if self.may_be_paste:
            block = pasted.dedented(block)
            self._scan_wrapped(block)
        want_errors = len(self.errors) < ERROR_LINES_KEPT
        finder = literal_search.finder(want_errors, frozenset(self.flags_found))
        if (len(block) >= REPETITIVE_MIN_BYTES and len(finder.find(block[:DENSITY_PROBE])) * DENSE_BYTES_PER_HIT
                > DENSITY_PROBE and self._scan_repetitive(block, finder)):
            return
        hits: dict[int, set[str]] = collections.defaultdict(set)  # line start offset -> labels
        for line_start, label in _by_line(block, finder.find(block)):
            hits[line_start].add(label)
        counted, line_number = 0, self.line_base
        for start in sorted(hits):
            raw = block[start:block.find(b"\n", start)]
            labels = hits[start] - self.flags_found if self.flags_found else hits[start]
            if not labels or raw not in self.cache and self._saturated(raw, labels):
                continue
            line_number += block.count(b"\n", counted, start)
            counted = start
            self._take(raw, labels, line_number + 1)
        self.line_base += block.count(b"\n")

    def _saturated(self, raw: bytes, labels: set[str]) -> bool:
        """Whether nothing of this line could still be kept (judged from its raw bytes)."""
        if b"\x1b" in raw or (ERROR_LINE in labels and len(self.errors) < ERROR_LINES_KEPT):
            return False
        rank = rank_of_line(raw, TORCH_RANK_LABEL_BYTES, TASK_LABEL_BYTES)
        rank = self.place.rank if rank is None else rank
        kept = self.kept
        for label in labels:
            if label != ERROR_LINE and kept[label, rank] < KEEP[label]:
                return False
        return True

    def _scan_repetitive(self, block: bytes, finder: literal_search.LiteralFinder) -> bool:
        """A block of a few lines repeated (one error flooding the log): match each distinct line
        once and keep the first occurrences, in order. False when the block is not like that."""
        lines = block.split(b"\n")
        lines.pop()  # the block ends with a newline
        distinct = dict.fromkeys(lines)
        if len(distinct) * REPETITION > len(lines):
            return False
        joined = b"\n".join(distinct) + b"\n"
        labels_of: dict[bytes, set[str]] = collections.defaultdict(set)
        line_ends: dict[int, int] = {}
        for start, label in _by_line(joined, finder.find(joined)):
            end = line_ends.setdefault(start, joined.find(b"\n", start))
            labels_of[joined[start:end]].add(label)
        occurrences = []
        for raw, labels in labels_of.items():
            wanted = max([SIGNATURES_BY_ID[label].keep for label in labels if label != ERROR_LINE]
                         + [ERROR_LINES_KEPT if ERROR_LINE in labels else 0])
            index = -1
            for _ in range(wanted):
                try:
                    index = lines.index(raw, index + 1)
                except ValueError:
                    break
                occurrences.append((index, raw))
        for index, raw in sorted(occurrences):
            self._take(raw, labels_of[raw], self.line_base + index + 1)
        self.line_base += len(lines)
        return True

    def _scan_wrapped(self, block: bytes) -> None:
        """Signatures on lines that a hard wrap or an editor's word wrap split, matched on the lines joined again."""
        block = block.replace(b"\r\n", b"\n")
        lines = block.decode("utf-8", errors="replace").split("\n")[:-1]
        finder, seen = literal_search.finder(False), set()
        for line in pasted.wrapped_lines(lines, _word_breaks(block, finder)):
            line_number = self.line_base + line.first + 1
            if line.sure:  # the pieces are not lines of their own: what they match is the whole line's
                self.joined_pieces.update(range(line_number, line_number + len(line.pieces)))
            labels = {label for reading in line.readings if reading not in seen
                      for _, _, label in finder.find(reading.encode())}
            seen.update(line.readings)
            if labels:
                self._take_across(line, labels, line_number)

    def _take_across(self, line: pasted.WrappedLine, labels: set[str], line_number: int) -> None:
        """Keep what the joined line matches: all of it where the wrap is sure (the whole line
        carries what the pieces cut: an address, a count), else, and for the guessed readings,
        only what no piece matches alone."""
        whole = _as_read(line.whole) if line.sure else None
        guesses = [_as_read(reading) for reading in line.guesses]
        pieces = [_as_read(piece) for piece in line.pieces]
        rank = rank_of_line(whole or guesses[0])
        rank = self.place.rank if rank is None else rank
        for signature_id in sorted(labels):
            regex = SIGNATURES_BY_ID[signature_id].regex
            if whole is not None and _matches(regex, whole):
                self._keep(signature_id, rank, line_number, whole)
                continue
            text = next((guess for guess in guesses if _matches(regex, guess)), None)
            if signature_id in EXCLUDING:
                # a wording the exclusion refuses that the join made (the pieces hold fewer): a space guessed
                # inside it ("[localhos t]") must not undo the refusal
                in_pieces = sum(_refused(regex, piece) for piece in pieces)
                if any(_refused(regex, reading) > in_pieces for reading in (whole, *guesses) if reading is not None):
                    continue
            if text is not None and not any(_matches(regex, piece) for piece in pieces):
                self._keep(signature_id, rank, line_number, text)

    def _keep(self, signature_id: str, rank: int | None, line_number: int, text: str) -> None:
        """One more line for a signature and rank, while it has room for more."""
        if self.kept[signature_id, rank] < SIGNATURES_BY_ID[signature_id].keep:
            self.kept[signature_id, rank] += 1
            line = _window(text, SIGNATURES_BY_ID[signature_id].regex)
            self.evidence.append(Evidence(signature_id, self.path, line_number, rank, line, self.place))
            if signature_id in log_facts.FLAGS:
                self.flags_found.add(signature_id)

    def _take(self, raw: bytes, labels: set[str], line_number: int) -> None:
        """Keep what the line matches, and its error line."""
        known = self.cache.get(raw)
        if known is None:
            known = self._read(raw, labels)
        text, line_rank, matched = known
        rank = self.place.rank if line_rank is None else line_rank
        for signature_id in matched if line_number not in self.joined_pieces else ():
            self._keep(signature_id, rank, line_number, text)
        if ERROR_LINE in labels and len(self.errors) < ERROR_LINES_KEPT:
            # a longer line is machine output, never retyped (and never a cache key)
            retyped, retyped_matches = (_retyped_matches(text) if len(text) <= pasted.Respeller.LONGEST_LINE
                                        else (text, ()))
            if line_number not in self.joined_pieces:
                for signature_id in set(retyped_matches) - set(matched):
                    self._keep(signature_id, rank, line_number, retyped)
            self.errors.append(Evidence(ERROR_LINE, self.path, line_number, rank, _window(text, ERROR_WORD),
                                        self.place))

    def _read(self, raw: bytes, labels: set[str]) -> tuple:
        text = _as_read(raw.decode("utf-8", errors="replace"))
        matched = tuple(sorted(label for label in labels
                               if label != ERROR_LINE and _matches(SIGNATURES_BY_ID[label].regex, text)))
        known = (text, rank_of_line(text), matched)
        if len(self.cache) < LINE_CACHE_SIZE:
            self.cache[raw] = known
        return known


def scan_all(files: list[str], places: list[JobPlace], workers: int | None) -> list[_FileScan]:
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
        return [_scan_file(path, place) for path, place in zip(files, places)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        chunk = max(1, len(files) // (workers * 8))  # many files per task: fewer round trips, still balanced
        return list(pool.map(_scan_file, files, places, chunksize=chunk))


