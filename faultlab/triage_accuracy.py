"""How well diagnose ranks the known cause of logs whose cause is known: top-1 / top-3 accuracy.

A case file is a YAML list of {log, source, cause, established}: `log` is a file or directory
relative to the case file. Diagnose runs on each with the cause catalog alone (no store), so
the numbers depend only on the code and the cases, never on what a machine has recorded.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .causes import CAUSES_BY_ID
from .diagnose import diagnose
from .errors import BadInput
from .scenario import read_yaml

CASE_KEYS = {"log", "source", "cause", "established"}


@dataclasses.dataclass(frozen=True)
class Case:
    log: Path
    source: str
    cause: str
    established: str


@dataclasses.dataclass(frozen=True)
class CaseResult:
    case: Case
    ranked: tuple[str, ...]  # causes as diagnose ranked them, best first

    @property
    def position(self) -> int | None:
        """1 for a top-1 hit, None when the cause is not ranked at all."""
        return self.ranked.index(self.case.cause) + 1 if self.case.cause in self.ranked else None


@dataclasses.dataclass(frozen=True)
class Accuracy:
    results: tuple[CaseResult, ...]

    def top(self, k: int) -> float:
        hits = sum(1 for result in self.results if result.position is not None and result.position <= k)
        return hits / len(self.results)

    @property
    def causes(self) -> set[str]:
        return {result.case.cause for result in self.results}


def load_cases(path: Path) -> list[Case]:
    data = read_yaml(path)
    if not isinstance(data, list) or not data:
        raise BadInput(f"{path}: expected a non-empty list of cases (log, source, cause, established)")
    cases = []
    for index, item in enumerate(data):
        where = f"{path}: case {index + 1}"
        if not isinstance(item, dict):
            raise BadInput(f"{where}: expected a mapping with {', '.join(sorted(CASE_KEYS))}")
        if set(item) != CASE_KEYS:
            wrong = sorted(set(item) - CASE_KEYS) or sorted(CASE_KEYS - set(item))
            raise BadInput(f"{where}: {'unknown' if set(item) - CASE_KEYS else 'missing'} key {wrong[0]!r}")
        if item["cause"] not in CAUSES_BY_ID:
            raise BadInput(f"{where}: unknown cause {item['cause']!r} (see `faultlab causes`)")
        log = path.parent / str(item["log"])
        if not log.exists():
            raise BadInput(f"{where}: {log}: no such file or directory")
        cases.append(Case(log, str(item["source"]), item["cause"], str(item["established"])))
    return cases


def evaluate(cases: list[Case]) -> Accuracy:
    return Accuracy(tuple(
        CaseResult(case, tuple(ranked.cause for ranked in diagnose([case.log]).causes)) for case in cases
    ))
