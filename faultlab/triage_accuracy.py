"""How well diagnose names the known cause and culprit of logs whose cause is known.

A case file is a YAML list of {log, source, cause, established[, culprit]}: `log` is a file or
directory relative to the case file; `cause` is an id from the catalog, or `not-in-catalog`
when the thread established a cause the catalog does not hold (the right answer is then "no
known cause", not a confident guess); `culprit` is `rank N` or `node N` where the log shows
one. Diagnose runs on each with the cause catalog alone (no store), so the numbers depend only
on the code and the cases, never on what a machine has recorded.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from .causes import CAUSES_BY_ID
from .diagnose import NOT_IN_CATALOG, diagnose
from .errors import BadInput
from .scenario import read_yaml

REQUIRED_KEYS = {"log", "source", "cause", "established"}
CASE_KEYS = REQUIRED_KEYS | {"culprit"}
CULPRIT = re.compile(r"^(rank|node) (\d+)$")
CONFIDENCE_BANDS = (0.0, 0.3, 0.5, 0.7, 0.9, 1.0)


@dataclasses.dataclass(frozen=True)
class Case:
    log: Path
    source: str
    cause: str  # a catalog id, or NOT_IN_CATALOG
    established: str
    culprit: tuple[str, int] | None = None  # ("rank", 3) or ("node", 1)


@dataclasses.dataclass(frozen=True)
class CaseResult:
    case: Case
    ranked: tuple[str, ...]  # answers as diagnose ranked them, best first; NOT_IN_CATALOG among them
    culprit_rank: int | None  # the rank diagnose named as the culprit
    culprit_node: int | None  # the node diagnose named as the culprit's
    confidence: float | None  # the confidence diagnose showed for its first answer; None: it ranked no cause

    @property
    def position(self) -> int | None:
        """1 for a top-1 hit, None when the answer is not ranked at all."""
        return self.ranked.index(self.case.cause) + 1 if self.case.cause in self.ranked else None

    @property
    def culprit_hit(self) -> bool | None:
        """Whether diagnose named the case's culprit (None: the case names none)."""
        if self.case.culprit is None:
            return None
        level, number = self.case.culprit
        return (self.culprit_rank if level == "rank" else self.culprit_node) == number


@dataclasses.dataclass(frozen=True)
class Accuracy:
    results: tuple[CaseResult, ...]

    def top(self, k: int) -> float:
        hits = sum(1 for result in self.results if result.position is not None and result.position <= k)
        return hits / len(self.results)

    @property
    def causes(self) -> set[str]:
        return {result.case.cause for result in self.results}

    def culprit(self, level: str) -> tuple[int, int]:
        """(named right, cases) for cases whose culprit is given at `level` (rank or node)."""
        cases = [r for r in self.results if r.case.culprit and r.case.culprit[0] == level]
        return sum(1 for r in cases if r.culprit_hit), len(cases)

    def macro_f1(self) -> float:
        """The F1 of the first answer for each known cause ("not in the catalog" one of them), averaged
        over the causes: unlike top-1 (which equals micro-F1 when every case gets one answer), a cause
        that is rare in the cases weighs as much as a frequent one."""
        scores = []
        for cause in self.causes:
            answered = [r for r in self.results if r.ranked and r.ranked[0] == cause]
            hits = sum(1 for r in answered if r.case.cause == cause)
            actual = sum(1 for r in self.results if r.case.cause == cause)
            scores.append(2 * hits / (len(answered) + actual))
        return sum(scores) / len(scores) if scores else 0.0

    def calibration(self) -> list[tuple[float, float, int, int]]:
        """(from, to, cases, right first) for bands of the first answer's confidence: how often an
        answer shown at that confidence was the known cause. Cases where diagnose ranked no cause
        (it showed no confidence) are counted by `no_cause_ranked`."""
        ranked = [r for r in self.results if r.confidence is not None]
        bands = []
        for low, high in zip(CONFIDENCE_BANDS, CONFIDENCE_BANDS[1:]):
            shown = [r for r in ranked if low <= r.confidence < high or (high == 1.0 and r.confidence == 1.0)]
            bands.append((low, high, len(shown), sum(1 for r in shown if r.position == 1)))
        return bands

    @property
    def no_cause_ranked(self) -> tuple[int, int]:
        """(outside the catalog, cases) for cases where diagnose ranked no cause at all."""
        cases = [r for r in self.results if r.confidence is None]
        return sum(1 for r in cases if r.case.cause == NOT_IN_CATALOG), len(cases)

    @property
    def unknown(self) -> tuple[int, int]:
        """(answered "not in the catalog" first, cases whose cause is outside the catalog)."""
        cases = [r for r in self.results if r.case.cause == NOT_IN_CATALOG]
        return sum(1 for r in cases if r.position == 1), len(cases)


def load_cases(path: Path) -> list[Case]:
    data = read_yaml(path)
    if not isinstance(data, list) or not data:
        raise BadInput(f"{path}: expected a non-empty list of cases (log, source, cause, established)")
    return [_case(path, index, item) for index, item in enumerate(data)]


def _case(path: Path, index: int, item) -> Case:
    where = f"{path}: case {index + 1}"
    if not isinstance(item, dict):
        raise BadInput(f"{where}: expected a mapping with {', '.join(sorted(REQUIRED_KEYS))}")
    unknown, missing = sorted(set(item) - CASE_KEYS), sorted(REQUIRED_KEYS - set(item))
    if unknown or missing:
        raise BadInput(f"{where}: {'unknown' if unknown else 'missing'} key {(unknown or missing)[0]!r}")
    if item["cause"] not in CAUSES_BY_ID and item["cause"] != NOT_IN_CATALOG:
        raise BadInput(f"{where}: unknown cause {item['cause']!r} (see `faultlab causes`, or {NOT_IN_CATALOG})")
    culprit = None
    if "culprit" in item:
        match = CULPRIT.match(str(item["culprit"]))
        if not match:
            raise BadInput(f"{where}: culprit {item['culprit']!r} is not 'rank N' or 'node N'")
        culprit = (match[1], int(match[2]))
    log = path.parent / str(item["log"])
    if not log.exists():
        raise BadInput(f"{where}: {log}: no such file or directory")
    return Case(log, str(item["source"]), item["cause"], str(item["established"]), culprit)


def _first_confidence(found) -> float | None:
    """The confidence diagnose showed for its first answer ("not in the catalog" shows the unknown
    share); None where it ranked no cause at all."""
    if not found.causes:
        return None
    return found.unknown if found.answers()[0] == NOT_IN_CATALOG else found.causes[0].confidence


def evaluate(cases: list[Case]) -> Accuracy:
    results = []
    for case in cases:
        found = diagnose([case.log])
        results.append(CaseResult(case, found.answers(), found.culprit, found.culprit_node, _first_confidence(found)))
    return Accuracy(tuple(results))


def measure(case_files: list[Path]) -> Accuracy:
    """`faultlab diagnose-accuracy`: every case of every file, measured together."""
    return evaluate([case for path in case_files for case in load_cases(Path(path))])
