"""Logs as people paste them: undoing what the way from the machine to diagnose did to its lines.

Signatures are written against the machine's own wording, but a log that reaches diagnose has
often passed through a web page, a terminal or a log collector first:
- a page's HTML entities (`&#39;` for `'`) and typographic quotes or non-breaking spaces from a
  forum's rendering: the literal search looks for each literal as pages spell it too
  (`spellings`), and the lines it finds are read as the machine wrote them (`as_written`);
- prefixes that collectors put before every line (timestamps and levels, pdsh/DeepSpeed host
  labels, srun and mpirun labels, `name | ` of docker compose and kubectl, Ray's
  `(Actor pid=N, ip=A)`, torchrun's `--tee` label `[default0]:`, markdown quotes):
  signatures that anchor at the start of a line are matched against the line without them
  (`body`), while the line shown stays whole (srun's and mpirun's also name the task that printed
  the line: line_ranks.task_label);
- an error retyped by hand, one letter wrong ("invalid device ordinnal", "Connection refsued"): the
  error lines diagnose keeps are read again with each such word spelled as the signatures' literals
  spell it (`Respeller`); what a whole signature then matches counts, and the line is read with the
  words that signature needed respelled (the poster's other words as typed);
- in a file small enough to be a paste, long lines hard-wrapped at the terminal's width: every
  line of exactly the widest length is continued by the next one (`wrapped_lines`; a prefix that
  quoting or labelling put on every piece is taken off the continuations), and a signature
  broken by a wrap is matched across it; lines word-wrapped by an editor or a mail (broken at
  spaces, so of different lengths) are read joined too, as a guess;
- in such a file, the indentation all its lines share (a markdown code block's) is taken off
  (`dedented`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re

# How pages show the characters of a log that matter to its wording: escaped (html.escape's
# named entities, or numeric ones), or typographic quotes as a forum's rendering makes them.
_ESCAPED = ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"},
            {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})
_OPENING_AFTER = " \t([{<=:"  # a typographic quote after these opens, else it closes
_TYPOGRAPHIC = {"'": ("\u2018", "\u2019"), '"': ("\u201c", "\u201d")}
_AS_WRITTEN = {"&#39;": "'", "&#x27;": "'", "&apos;": "'", "&quot;": '"', "&#34;": '"', "&lt;": "<", "&gt;": ">",
               "&nbsp;": " ", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " ",
               "&amp;": "&"}  # &amp; last: an escaped entity ("&amp;lt;") stays the text it was
_PAGE_MARK_CHARACTERS = ("&", "\u2018", "\u2019", "\u201c", "\u201d", "\u00a0")
_PAGE_MARKS = re.compile("|".join(_PAGE_MARK_CHARACTERS))


def spellings(literal: str) -> set[str]:
    """`literal` as the machine wrote it and as pages show it (for the literal search)."""
    forms = {literal} | {"".join(style.get(char, char) for char in literal) for style in _ESCAPED}
    forms.add("".join(_typographic(literal, index) for index in range(len(literal))))
    return forms


def _typographic(text: str, index: int) -> str:
    pair = _TYPOGRAPHIC.get(text[index])
    if pair is None:
        return text[index]
    return pair[0] if index == 0 or text[index - 1] in _OPENING_AFTER else pair[1]


def as_written(line: str) -> str:
    """`line` with a page's entities and typographic quotes back to the ASCII the machine wrote."""
    if not _PAGE_MARKS.search(line):
        return line
    for shown, written in _AS_WRITTEN.items():
        line = line.replace(shown, written)
    return line


class Respeller:
    """Words one edit (a letter missing, extra, wrong or swapped) from a known word, spelled as it is.

    Known words are long (six letters or more), so one edit rarely turns one into another; and a
    respelled line counts only where a whole signature matches it. Candidates are found by deletions
    (a word and a typo of it share a form with one letter deleted), then checked."""

    WORD = re.compile(r"[A-Za-z]{6,}")
    LONGEST_LINE = 2000  # an error retyped by hand is short; a longer line is machine output
    TOKENS_REMEMBERED = 100_000

    def __init__(self, words) -> None:
        self.known: dict[str, str] = {}  # lower case -> as the literals spell it (RendezvousTimeoutError)
        for word in words:
            if self.WORD.fullmatch(word):
                self.known.setdefault(word.lower(), word)
        self.remembered: dict[str, str | None] = {}  # token -> its known word, as found so far
        self.by_deletion: dict[str, set[str]] = {}
        for word in self.known:
            for form in _deletions(word):
                self.by_deletion.setdefault(form, set()).add(word)

    def corrections(self, line: str) -> list[tuple[int, int, str]]:
        """(start, end, the word respelled) of each misspelt known word in `line`, in order."""
        if len(line) > self.LONGEST_LINE:
            return []
        found = []
        for match in self.WORD.finditer(line):
            token = match[0]
            lowered = token.lower()
            if lowered in self.remembered:
                word = self.remembered[lowered]
            else:
                word = self._known_word_for(lowered)
                if len(self.remembered) < self.TOKENS_REMEMBERED:
                    self.remembered[lowered] = word
            if word is not None:
                found.append((match.start(), match.end(), _in_case_of(token, self.known[word])))
        return found

    def _known_word_for(self, token: str) -> str | None:
        if token in self.known:
            return None
        forms = _deletions(token)
        # a letter missing from the typed token (it is a deletion of a known word), one extra (a deletion of it
        # is known), or one wrong or swapped (a deletion of each meets)
        candidates = set(self.by_deletion.get(token, ())) | (forms & self.known.keys())
        for form in forms:
            candidates |= self.by_deletion.get(form, set())
        matches = sorted(word for word in candidates if _one_edit_apart(token, word))
        return matches[0] if len(matches) == 1 else None


def with_corrections(line: str, corrections: list[tuple[int, int, str]]) -> str:
    pieces, last = [], 0
    for start, end, word in corrections:
        pieces += [line[last:start], word]
        last = end
    return "".join(pieces) + line[last:]


def _in_case_of(token: str, word: str) -> str:
    """`word` as the literals spell it, its first letter (or all of it) in the case the poster typed."""
    if token.isupper():
        return word.upper()
    return (word[0].upper() if token[0].isupper() else word[0].lower()) + word[1:]


def _deletions(word: str) -> set[str]:
    return {word[:index] + word[index + 1:] for index in range(len(word))}


def _one_edit_apart(typed: str, word: str) -> bool:
    if abs(len(typed) - len(word)) > 1 or typed == word:
        return False
    if len(typed) == len(word):
        differ = [index for index, (a, b) in enumerate(zip(typed, word)) if a != b]
        return len(differ) == 1 or (len(differ) == 2 and differ[1] == differ[0] + 1
                                    and typed[differ[0]] == word[differ[1]] and typed[differ[1]] == word[differ[0]])
    shorter, longer = sorted((typed, word), key=len)
    return any(longer[:index] + longer[index + 1:] == shorter for index in range(len(longer)))


_LEVEL = r"(?:\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?)"
_TRANSPORT_PREFIX = re.compile(
    r"(?:>[ ]?"  # a markdown quote
    r"|\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"  # a timestamp ...
    rf"(?:[ ]+(?:[-|:][ ]+)?{_LEVEL})?(?:[ ]+[-|:])?[ ]"  # ... with its level and separator
    r"|[\w.-]+[ ]+\|[ ]"  # docker compose / kubectl: "trainer-1  | "
    r"|(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w-]*\d[\w.-]*|\d+):[ ]"  # pdsh/DeepSpeed host, srun label
    r"|\[\d+,\d+\]<std(?:out|err)>:[ ]?"  # mpirun --tag-output
    r"|\((?:[\w.]+ )?pid=\d+(?:, ip=[\w.:]+)?\)[ ]|\(raylet(?:, ip=[\w.:]+)?\)[ ]"  # Ray's actors and raylet
    r"|\[(?:default)?rank\d+\]:[ ]?|\[default\d+\]:)")  # torch's own, and torchrun's --tee (role, local rank)
_PREFIXES_AT_MOST = 4
# Prefixes are short: they are looked for only this far into a line, which also bounds the
# patterns' backtracking on a huge line (a megabyte of "a1a1..." would otherwise take hours).
PREFIX_REACH = 160


def body(line: str) -> str:
    """`line` without the prefixes collectors put before it (several may stack)."""
    return line[sum(map(len, prefixes(line))):]


def prefixes(line: str) -> list[str]:
    """The prefixes collectors put before `line`, outermost first."""
    found, start = [], 0
    for _ in range(_PREFIXES_AT_MOST):
        match = _TRANSPORT_PREFIX.match(line, start, start + PREFIX_REACH)
        if not match:
            break
        found.append(match[0])
        start = match.end()
    return found


WRAP_MIN_WIDTH = 60  # narrower "wraps" are ordinary short lines
# A paste is small (a GitHub comment holds 65,536 characters); a larger file was written by the
# program or its launcher, which do not wrap lines.
PASTE_BYTES = 64 << 10
WRAP_MAX_PIECES = 16  # a longer run of lines of one length is lines of one format, not a wrap
# How a line of its own begins (a rank's tag, a timestamp, NCCL's host:pid:tid, glog's level and
# date, a traceback and its indented frames, an exception, Lightning's lines of each process's start): never a
# wrapped line's continuation.
_RECORD_START = re.compile(
    r"\[(?:default)?rank\d+\]|\[Rank \d+\]|\[?\d{4}-\d{2}-\d{2}[ T]|\S+:\d+:\d+ \[\d+\] NCCL "
    r"|\[?[EWIF]\d{4} |\[[EWIF] [\w.]+:\d+\]|Traceback |[ \t]{2}"
    r"|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning): |\[\d+,\d+\]<std|\((?:[\w.]+ )?pid=\d+"
    r"|LOCAL_RANK: \d+ - |(?i:initializing (?:ddp|distributed)): |[GT]PU available: ")
_SAME_START = 8  # characters: a line that begins as the line before it did is the next record


def _own_line(line: str, before: str) -> bool:
    """Whether `line` begins a line of its own rather than continuing a wrapped one. Read past the
    collectors' prefixes: a prefix every line carries says nothing of where a record begins."""
    line, before = body(line), body(before)
    return bool(_RECORD_START.match(line, 0, PREFIX_REACH)) or line[:_SAME_START] == before[:_SAME_START]


@dataclasses.dataclass(frozen=True)
class WrappedLine:
    first: int  # index of its first piece
    pieces: list[str]
    whole: str | None  # the line joined again, where the wrap is sure: its pieces are not lines of their own
    # Readings that count only for what no piece says alone, surest first: a join whose dropped space cannot be
    # told (without a space, then with one at every break), or an editor's word wrap (a space at every break).
    guesses: tuple[str, ...] = ()

    @property
    def sure(self) -> bool:
        return self.whole is not None

    @property
    def readings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(((self.whole,) if self.sure else ()) + self.guesses))


def wrapped_lines(lines: list[str], word_breaks: set[int] = frozenset()) -> list[WrappedLine]:
    """Every line that a hard wrap or a word wrap may have split.

    A hard-wrapped paste's full lines all end at the terminal's edge: the widest length, each continued
    by the next line, unless that begins a line of its own (lines of one format, one per rank, are
    often all of one length). Several distinct full lines make the wrap sure; one makes it a guess,
    and a guess costs little: across its join, only what no piece matches alone is taken. Where the
    edge fell on a space the copy dropped it, so a line one shorter is full too: where the wrap is
    sure, its space is put back; a guess is read both with and without one. An editor's word wrap
    breaks at spaces, leaving lines of different lengths (and sometimes several of one): every join
    is also read with a space at each break, as a guess; word wraps are looked for only across the
    ends of the lines in `word_breaks` (where a signature's words run on into the next line)."""
    lengths = [len(line) for line in lines]
    text = "".join(lines)
    if any(mark in text for mark in _PAGE_MARK_CHARACTERS):  # a page escapes what the terminal had wrapped
        lengths = [len(as_written(line)) for line in lines]
    width = max(lengths[:-1], default=0)
    if width < WRAP_MIN_WIDTH:
        return []
    sure = len({piece for first, last in _runs(lines, lengths, width) for piece in lines[first:last]}) > 1
    wrapped = []
    for first, last in _runs(lines, lengths, width - 1):
        pieces = lines[first:last + 1]
        texts = _without_repeated_prefix(pieces)
        spaced = " ".join(texts)
        if sure:
            restored = [text if length == width else text + " " for length, text in zip(lengths[first:], texts[:-1])]
            whole = "".join(restored) + texts[-1]
            wrapped.append(WrappedLine(first, pieces, whole, (spaced,) if spaced != whole else ()))
        else:
            wrapped.append(WrappedLine(first, pieces, None, ("".join(texts), spaced)))
    taken = {index for line in wrapped for index in range(line.first, line.first + len(line.pieces))}
    runs = _word_wrapped_runs(lines, lengths, taken) if word_breaks else []
    for first, last in (run for run in runs if any(run[0] <= index < run[1] for index in word_breaks)):
        pieces = lines[first:last + 1]
        wrapped.append(WrappedLine(first, pieces, None, (" ".join(_without_repeated_prefix(pieces)),)))
    return sorted(wrapped, key=lambda line: line.first)


def dedented(block: bytes) -> bytes:
    """A paste without the indentation all its lines share (a markdown code block's four spaces): read so,
    its lines begin as the machine wrote them, not each like an indented traceback frame. A paste of
    frames and their source lines alone (a traceback's cut middle) is indented as Python wrote it, and kept."""
    if block.lstrip(b"\r\n")[:1] not in (b" ", b"\t"):
        return block  # its first line is not indented: nothing is shared (the common case, read at no cost)
    lines = block.split(b"\n")
    indented = [(len(line) - len(line.lstrip(b" \t")), line) for line in lines if line.strip()]
    shared = len(os.path.commonprefix([line[:depth] for depth, line in indented])) if indented else 0
    outermost = [line[shared:] for depth, line in indented if depth == shared]
    if not shared or len(indented) < 2 or all(line.startswith(b'File "') for line in outermost):
        return block
    return b"\n".join(line[shared:] for line in lines)


def _word_wrapped_runs(lines: list[str], lengths: list[int], taken: set[int]) -> list[tuple[int, int]]:
    """(first, last) index of every run of lines that a word wrap may have made: long lines, each
    continued by the next (which carries no prefix of its own: a timestamp there begins a record), and
    each broken only because the next line's first word would have passed the run's widest line (a
    wrap breaks at the last space that fits). A run may end on the first piece of a hard wrap, never
    pass through one; a longer run than a wrap makes is lines of one format."""
    runs, index, last = [], 0, len(lines) - 1
    while index < last:
        first = index
        while (index < last and index not in taken and lengths[index] >= WRAP_MIN_WIDTH
               and _continues(lines[index + 1], lines[first])):
            index += 1
        if index - first >= WRAP_MAX_PIECES:
            continue
        width = max(lengths[first:index], default=0)
        end = first
        while end < index and lengths[end] + 1 + len(lines[end + 1].split(" ", 1)[0]) > width:
            end += 1
        if end > first:
            runs.append((first, end))
        index = max(end, first) + 1
    return runs


def _continues(line: str, first: str) -> bool:
    """Whether `line` may continue a word-wrapped line that began with `first`: not a line of its own, and
    no prefix but those the first piece carried (a quote, a label on every piece)."""
    carried = prefixes(line)
    return not _own_line(line, first) and carried == prefixes(first)[:len(carried)]


def _without_repeated_prefix(pieces: list[str]) -> list[str]:
    """The pieces with the prefixes the first one carries taken off the others: a wrapped paste
    quoted in markdown, or labelled by srun, carries the outer ones on every piece."""
    outer = prefixes(pieces[0])
    texts = pieces[:1]
    for piece in pieces[1:]:
        for prefix in outer:
            if not piece.startswith(prefix):
                break
            piece = piece[len(prefix):]
        texts.append(piece)
    return texts


def _runs(lines: list[str], lengths: list[int], full: int) -> list[tuple[int, int]]:
    """(first, last) index of every run of pieces at least `full` long and the piece that ends it."""
    runs, index, last = [], 0, len(lines) - 1
    while index < last:
        first = index
        while index < last and lengths[index] >= full and not _own_line(lines[index + 1], lines[first]):
            index += 1
        if 0 < index - first < WRAP_MAX_PIECES:
            runs.append((first, index))
        index += 1
    return runs


EXCLUSION_OPENINGS = ("(?!", "(?<!")  # a negative lookahead or lookbehind: a wording the pattern refuses


def has_exclusions(regex: re.Pattern) -> bool:
    """Whether `regex` refuses some wording (a negative lookahead or lookbehind)."""
    return any(opening in regex.pattern for opening in EXCLUSION_OPENINGS)


@functools.cache
def without_exclusions(regex: re.Pattern) -> re.Pattern:
    """`regex` without its exclusions: what it asks to be there. A wrap's readings differ only in spaces at its
    breaks, and a space guessed inside a word may escape an exclusion ("[localhos t]"): a reading that holds what
    the pattern asks and is refused by an exclusion tells the join is the refused wording."""
    pattern, kept, index, in_class = regex.pattern, [], 0, False
    while index < len(pattern):
        opening = None if in_class else next((o for o in EXCLUSION_OPENINGS if pattern.startswith(o, index)), None)
        if opening is not None:
            index = _group_end(pattern, index + len(opening))
            continue
        char = pattern[index]
        if char != "\\":
            in_class = char != "]" if in_class else char == "["
        step = 2 if char == "\\" else 1
        kept.append(pattern[index:index + step])
        index += step
    return re.compile("".join(kept), regex.flags)


def _group_end(pattern: str, index: int) -> int:
    """Where the group whose opening ends at `index` closes, past escapes and character classes."""
    depth, in_class = 1, False
    while depth:
        char = pattern[index]
        if char == "\\":
            index += 1
        elif in_class:
            in_class = char != "]"
        else:
            in_class = char == "["
            depth += {"(": 1, ")": -1}.get(char, 0)
        index += 1
    return index
