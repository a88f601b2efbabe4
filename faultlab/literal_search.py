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


class LiteralFinder:
    """Every (start, end, label) where one of the literals occurs in a block, in one pass; for a signature's
    prefilter pattern, the match's last character stands for it (its line is what the scan wants)."""

    def __init__(self, literals: list[tuple[bytes, str]], patterns: list[tuple[bytes, str]] = ()) -> None:
        self.literals = literals
        self.patterns = [(re.compile(pattern), label) for pattern, label in patterns]
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
        expressions += [pattern for pattern, _ in patterns]
        self.database.compile(expressions=expressions, ids=list(range(len(expressions))))

    def find(self, block: bytes) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if self.database is not None:
            literals, patterns = self.literals, self.patterns

            def on_match(index, start, end, flags, context):
                if index < len(literals):
                    found.append((end - len(literals[index][0]), end, literals[index][1]))
                else:
                    found.append((end - 1, end, patterns[index - len(literals)][1]))

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
        for pattern, label in self.patterns:
            found += [(match.end() - 1, match.end(), label) for match in pattern.finditer(block)]
        return sorted(found)  # in offset order, as Hyperscan reports them


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
        patterns = [(signature.prefilter.encode(), signature.id) for signature in searched if signature.prefilter]
        FINDERS[key] = LiteralFinder(literals, patterns)
    return FINDERS[key]
