"""The literal search: every signature's literal fragments found in a block of log text in one pass.

Any line a signature matches holds one of its literals, so only lines where a literal occurs are
decoded and matched (log_scan.py). One multi-literal pass runs through Hyperscan where it is installed;
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
# Searches made for sets of signatures given up: files crafted to give up a different set each would otherwise
# cost a compiled search each. Past this many, the full search serves and the scan drops those signatures' hits.
FINDERS_MADE_MAX = 32


class LiteralFinder:
    """Every (start, end, label) where one of the literals occurs in a block, in one pass."""

    def __init__(self, literals: list[tuple[bytes, str]]) -> None:
        self.literals = literals
        self.database = None
        self.scratch = None  # Hyperscan's scratch space, made on first use (in each forked process's copy)
        if not ACCELERATED:
            return
        try:
            import hyperscan
        except ImportError:  # optional: the pure-Python search gives the same hits, slower
            return
        self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.database.compile(
            expressions=[re.escape(literal.decode()).encode() for literal, _ in literals],
            ids=list(range(len(literals))),
        )

    def find(self, block: bytes) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if self.database is not None:
            literals = self.literals

            def on_match(index, start, end, flags, context):
                found.append((end - len(literals[index][0]), end, literals[index][1]))

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
        return sorted(found)  # in offset order, as Hyperscan reports them


def finder(with_error_lines: bool = True, given_up: frozenset = frozenset()) -> LiteralFinder:
    """The search for every signature's literals (and the error fragments, until a file's error lines are all
    kept), less the context signatures a file's scan gave up (log_scan.CONTEXT_UNKEPT_MAX), while there are few
    such sets."""
    key = (with_error_lines, given_up)
    if key not in FINDERS and given_up and len(FINDERS) >= FINDERS_MADE_MAX:
        return finder(with_error_lines)
    if key not in FINDERS:
        literals = [(spelling.encode(), signature.id) for signature in SIGNATURES if signature.id not in given_up
                    for literal in signature.literals for spelling in pasted.spellings(literal)]
        if with_error_lines:
            literals += [(fragment, ERROR_LINE) for fragment in ERROR_FRAGMENTS]
        FINDERS[key] = LiteralFinder(literals)
    return FINDERS[key]
