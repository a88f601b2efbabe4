"""Scoring a diagnosis against the answer key and the baseline comparison. Pure.

The rule (docs/scoring.md): cause 40, culprit 30, deviating ranks 15, fix 15 = 100, minus
the stated cost of every hint and piece of extra evidence taken, never below 0.
"""

from __future__ import annotations

import dataclasses
import math
import re

from .causes import CAUSES_BY_ID
from .errors import BadInput
from .textsafe import excerpt
from .faults import Target
from .records import Comparison
from .scenario import Scenario

CAUSE_POINTS = 40
CULPRIT_POINTS = 30
RANKS_POINTS = 15
FIX_POINTS = 15
MAX_POINTS = CAUSE_POINTS + CULPRIT_POINTS + RANKS_POINTS + FIX_POINTS

# What each kind of extra help costs, in points.
COSTS = {
    "hint": 5,  # each hint, in the scenario's order
    "log": 3,  # one rank's full stdout and stderr
    "launcher": 3,  # one node's launch command, environment and launcher log
    "network": 3,  # one simulated host's addresses, routes, listening ports and firewall rules
    "symptoms": 5,  # the matched signature catalog entries
    "fr": 5,  # every rank's Flight Recorder dump, analysed across ranks
    "debug": 5,  # a live re-run with a debug knob
}

_STOPWORDS = frozenset(
    (
        "a an and the of to in on or for with every each its it is be by as at from not no one "
        "that this then than into use call run set same node rank ranks job if their there when"
    ).split()
)


@dataclasses.dataclass(frozen=True)
class Answer:
    """A trainee's diagnosis of a drill."""

    cause: str
    culprit: Target
    ranks: tuple[int, ...]
    fix: str


@dataclasses.dataclass(frozen=True)
class Score:
    cause: float
    culprit: float
    ranks: float
    fix: float
    costs: int
    total: float
    max: int
    notes: tuple[str, ...]  # why each part scored what it did


def parse_culprit(text: str) -> Target:
    """'rank 3', 'node 1', 'job' (also 'r3', 'n1', '3' for a rank)."""
    cleaned = text.strip().lower()
    if cleaned in ("job", "all", "everyone", "the whole job"):
        return Target("job")
    match = re.fullmatch(r"(rank|node|r|n)?\s*(\d{1,9})", cleaned)
    if not match:
        raise BadInput(f"culprit {excerpt(text)}: say 'rank N', 'node N' or 'job'")
    kind = "node" if (match.group(1) or "rank").startswith("n") else "rank"
    return Target(kind, int(match.group(2)))


def parse_ranks(text) -> tuple[int, ...]:
    """'0,1, 3' or a list of ints; '' for none."""
    if isinstance(text, (list, tuple)):
        items = text
    else:
        items = [item for item in re.split(r"[\s,]+", str(text).strip()) if item]
    try:
        ranks = tuple(sorted({int(item) for item in items}))
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"deviating ranks {excerpt(text)}: give rank numbers, e.g. 0,1,3") from None
    if any(rank < 0 for rank in ranks):
        raise BadInput(f"deviating ranks {excerpt(text)}: ranks are not negative")
    return ranks


def check_cause(cause: str) -> str:
    if cause not in CAUSES_BY_ID:
        raise BadInput(f"cause {excerpt(cause)} is not in the cause catalog (see `faultlab causes`)")
    return cause


def _terms(text: str) -> set[str]:
    words = re.findall(r"[a-z_][a-z0-9_]+", text.lower())
    return {word for word in words if len(word) >= 4 and word not in _STOPWORDS}


def _culprit_points(answer: Target, key: Target, ranks_per_node: int) -> tuple[float, str]:
    if answer == key:
        return CULPRIT_POINTS, f"culprit {key.describe()}: right"
    if key.kind == "rank" and answer.kind == "node" and answer.index == key.index // ranks_per_node:
        return CULPRIT_POINTS / 2, f"culprit: node {answer.index} holds it, but it is {key.describe()}"
    if key.kind == "node" and answer.kind == "rank" and answer.index // ranks_per_node == key.index:
        return CULPRIT_POINTS / 2, f"culprit: rank {answer.index} is on it, but it is all of {key.describe()}"
    return 0.0, f"culprit: {answer.describe()} is not it (it is {key.describe()})"


def score(
    scenario: Scenario, comparison: Comparison, diagnosis: Answer, used: dict[str, int]
) -> Score:
    """Score `diagnosis`; `used` counts the help taken by kind (keys of COSTS)."""
    notes = []
    cause_points = CAUSE_POINTS if diagnosis.cause == scenario.answer.cause else 0.0
    notes.append(
        f"cause {diagnosis.cause}: right" if cause_points else f"cause {diagnosis.cause}: wrong (it is {scenario.answer.cause})"
    )
    culprit_points, note = _culprit_points(diagnosis.culprit, scenario.answer.culprit, scenario.topology.ranks_per_node)
    notes.append(note)
    truth = set(comparison.deviating_ranks)
    given = set(diagnosis.ranks)
    overlap = len(truth & given) / len(truth | given) if truth | given else 1.0
    ranks_points = RANKS_POINTS * overlap
    notes.append(f"deviating ranks {sorted(given)} vs {sorted(truth)}: {overlap:.0%} overlap")
    key_terms = _terms(scenario.answer.fix)
    needed = max(1, min(len(key_terms), math.ceil(0.4 * len(key_terms))))
    matched = key_terms & _terms(diagnosis.fix)
    fix_points = FIX_POINTS * min(1.0, len(matched) / needed) if key_terms else FIX_POINTS
    notes.append(f"fix: {len(matched)} of the {needed} key terms needed ({', '.join(sorted(matched)) or 'none'})")
    unknown = set(used) - set(COSTS)
    if unknown:
        raise BadInput(f"unknown kind of help {sorted(unknown)[0]!r} (known: {', '.join(COSTS)})")
    costs = sum(COSTS[kind] * count for kind, count in used.items())
    if costs:
        notes.append("help taken: " + ", ".join(f"{count} x {kind} (-{COSTS[kind] * count})" for kind, count in used.items() if count))
    earned = cause_points + culprit_points + ranks_points + fix_points
    return Score(
        cause=round(cause_points, 1),
        culprit=round(culprit_points, 1),
        ranks=round(ranks_points, 1),
        fix=round(fix_points, 1),
        costs=costs,
        total=round(max(0.0, earned - costs), 1),
        max=MAX_POINTS,
        notes=tuple(notes),
    )


ANSWER_KEYS = ("cause", "culprit", "ranks", "fix", "used")


def parse_used(text: str | None) -> dict[str, int]:
    """'hint=1,log=2' -> {'hint': 1, 'log': 2}: help already taken, each at its cost."""
    used = {}
    for item in filter(None, (text or "").split(",")):
        kind, _, count = item.partition("=")
        if not re.fullmatch(r"\d{1,6}", count.strip()):
            raise BadInput(f"--used {excerpt(text)}: write KIND=COUNT pairs, e.g. hint=1,log=2")
        used[kind.strip()] = int(count)
    return used


def answer_from_mapping(data, where: str) -> tuple[Answer, dict[str, int]]:
    """(answer, help used) from an answers mapping (a YAML file's, or the options'); BadInput names `where`."""
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a mapping with cause, culprit, ranks, fix")
    unknown = set(data) - set(ANSWER_KEYS)
    if unknown:
        raise BadInput(f"{where}: unknown key {excerpt(sorted(map(str, unknown))[0])} (allowed: {', '.join(ANSWER_KEYS)})")
    missing = [key for key in ("cause", "culprit", "fix") if key not in data]
    if missing:
        raise BadInput(f"{where}: missing {missing[0]!r}")
    used = data.get("used", {})
    if not isinstance(used, dict) or not all(isinstance(v, int) and v >= 0 for v in used.values()):
        raise BadInput(f"{where}.used: expected a mapping of help kinds to counts")
    try:
        answer = Answer(
            cause=check_cause(str(data["cause"])),
            culprit=parse_culprit(str(data["culprit"])),
            ranks=parse_ranks(data.get("ranks", [])),
            fix=str(data["fix"]),
        )
    except BadInput as error:
        raise BadInput(f"{where}: {error}") from None
    return answer, dict(used)
