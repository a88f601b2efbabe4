"""The literal search: every signature's literal fragments found in a block of log text in one pass.

Any line a signature matches holds one of its literals (or, for a signature whose literal alone is common,
its two prefilter words in order), so only lines where one occurs are decoded and matched (log_scan.py). One multi-literal pass runs through Hyperscan where it is installed;
else one bytes.find pass per fragment gives the same hits, several times slower
(benchmarks/bench_diagnose.py).
"""

from __future__ import annotations

import re

from . import pasted
from .symptoms import SIGNATURES

# Lines worth showing when no signature is known: found by the same search.
ERROR_FRAGMENTS = (b"Error", b"error", b"Exception", b"Traceback", b"failed", b"Failed", b"timed out",
                   b"Timed out", b"FATAL", b"fatal")
ERROR_LINE = "error-line"  # the search's label for them
ACCELERATED = True  # Hyperscan, where installed (a test compares the two searches)
FINDERS: dict[tuple[bool, frozenset], LiteralFinder] = {}


class LiteralFinder:
    """Every (start, end, label) where one of the literals occurs in a block, in one pass; for a pair of words in
    order (Signature.prefilter), every place the second word follows the first on its line."""

    def __init__(self, literals: list[tuple[bytes, str]], in_order: list[tuple[bytes, bytes, str]] = ()) -> None:
        self.literals = literals
        self.in_order = [(first.lower(), second.lower(), label) for first, second, label in in_order]
        self.database = None
        self.scratch = None  # Hyperscan's scratch space, made on first use (in each forked process's copy)
        if not ACCELERATED:
            return
        try:
            import hyperscan
        except ImportError:  # optional: the pure-Python search gives the same hits, slower
            return
        self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        expressions = [re.escape(literal.decode()).encode() for literal, _ in literals]
        expressions += [b"(?i)" + re.escape(first) + rb"[^\n]*" + re.escape(second) for first, second, _ in self.in_order]
        self.database.compile(expressions=expressions, ids=list(range(len(expressions))))

    def find(self, block: bytes) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if self.database is not None:
            literals, in_order = self.literals, self.in_order

            def on_match(index, start, end, flags, context):
                if index < len(literals):
                    found.append((end - len(literals[index][0]), end, literals[index][1]))
                else:
                    _, second, label = in_order[index - len(literals)]
                    found.append((end - len(second), end, label))

            if self.scratch is None:
                import hyperscan

                self.scratch = hyperscan.Scratch(self.database)
            self.database.scan(block, match_event_handler=on_match, scratch=self.scratch)
            return found
        for literal, label in self.literals:
            start = block.find(literal)
            while start != -1:
                found.append((start, start + len(literal), label))
                start = block.find(literal, start + 1)
        if self.in_order:
            lowered = block.lower()  # ASCII case, as Hyperscan's
            for first, second, label in self.in_order:
                found += [(at, at + len(second), label) for at in _after_on_its_line(lowered, first, second)]
        return sorted(found)  # in offset order, as Hyperscan reports them


def _after_on_its_line(block: bytes, first: bytes, second: bytes) -> list[int]:
    """Where `second` occurs after `first` on the same line; each stretch looked through once (a huge line of
    either word costs no more than its length)."""
    found, looked_to, first_seen = [], 0, False
    at = block.find(second)
    while at != -1:
        newline = block.rfind(b"\n", looked_to, at)
        if newline != -1:
            looked_to, first_seen = newline + 1, False
        first_seen = first_seen or block.find(first, looked_to, at) != -1
        if first_seen:
            found.append(at)
        looked_to = max(looked_to, at - len(first) + 1)  # a first word starting later may still end before the next
        at = block.find(second, at + 1)
    return found


def finder(with_error_lines: bool = True, flags_found: frozenset = frozenset()) -> LiteralFinder:
    """The search for every signature's literals (and the error fragments, until a file's error lines are all
    kept), less the signatures of flags a file already showed (a few: a few such searches)."""
    key = (with_error_lines, flags_found)
    if key not in FINDERS:
        searched = [signature for signature in SIGNATURES if signature.id not in flags_found]
        literals = [(spelling.encode(), signature.id) for signature in searched if not signature.prefilter
                    for literal in signature.literals for spelling in pasted.spellings(literal)]
        if with_error_lines:
            literals += [(fragment, ERROR_LINE) for fragment in ERROR_FRAGMENTS]
        in_order = [(signature.prefilter[0].encode(), signature.prefilter[1].encode(), signature.id)
                    for signature in searched if signature.prefilter]
        FINDERS[key] = LiteralFinder(literals, in_order)
    return FINDERS[key]
