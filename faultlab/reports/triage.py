"""Text and JSON for `faultlab diagnose` and `faultlab diagnose-accuracy`. Pure.

Evidence lines are shown whole up to a screen's worth; a longer line is cut around the part
its signature matched, so the deciding words always show.
"""

from __future__ import annotations

from tabulate import tabulate

from ..causes import CAUSES_BY_ID
from ..flight_recorder.view import flight_recorder_view
from ..serial import to_dict
from ..symptoms import SIGNATURES_BY_ID

LINE_SHOWN = 320  # characters of an evidence line shown before it is cut around its match
CONTEXT_BEFORE = 100  # of those, how many come before the matched part
EVIDENCE_SHOWN = 4  # lines per cause


def rank_ranges(ranks) -> str:
    """(0, 1, 2, 3, 5, 7, 8) -> '0-3, 5, 7-8 (7 ranks)': thousands of ranks stay one line."""
    spans: list[list[int]] = []
    for rank in ranks:
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    text = ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in spans)
    return f"{text} ({len(ranks)} ranks)" if len(ranks) > 1 else text


def shown_line(line: str, signature: str | None = None) -> str:
    """The line whole, or cut around what its signature matched when it is long."""
    if len(line) <= LINE_SHOWN:
        return line
    match = SIGNATURES_BY_ID[signature].regex.search(line) if signature in SIGNATURES_BY_ID else None
    start = max(0, (match.start() if match else 0) - CONTEXT_BEFORE)
    end = start + LINE_SHOWN
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def _evidence_line(item) -> str:
    where = (f"rank {item.rank}" if item.rank is not None
             else f"node {item.place.node}" if item.place.node is not None else "?")
    return f"       {item.path}:{item.line_number} [{where}] {shown_line(item.line, item.signature)}"


def diagnosis_text(found, top: int) -> str:
    lines = [f"Read {found.files} file(s), {found.bytes / 1e6:.1f} MB."]
    lines += [f"  note: {note}" for note in found.notes]
    if not found.causes:
        lines += _no_known_cause(found)
        return "\n".join(lines)
    lines.append("\nLikely causes:")
    for position, ranked in enumerate(found.causes[:top], 1):
        lines.append(f"  {position}. {ranked.cause} ({ranked.confidence:.0%}): {CAUSES_BY_ID[ranked.cause].title}")
        shown = {(e.path, e.line_number): e for e in found.evidence if e.signature in ranked.signatures}
        lines += [_evidence_line(e) for e in shown.values()][:EVIDENCE_SHOWN]
    lines.append(f"  Unknown / not in the catalog: {found.unknown:.0%}"
                 + ("  (more likely than any cause above together)" if found.unknown > 0.5 else ""))
    lines += _outside(found) + _reasons(found) + _ranks(found) + _flight_recorder(found)
    if found.next_check:
        lines.append(f"\nNext check: {found.next_check}")
    return "\n".join(lines)


def _flight_recorder(found) -> list[str]:
    evidence = found.flight_recorder
    if evidence is None or evidence.analysis is None:
        return []
    lines = ["", flight_recorder_view(evidence.capture)]
    lines += [f"torchrun error file {error.path}" + (f" [rank {error.rank}]" if error.rank is not None else "")
              + f": {error.message}" for error in evidence.error_files]
    return lines


def _no_known_cause(found) -> list[str]:
    if found.outside:
        lines = ["\nNo known cause: what the log shows is outside the catalog."]
        lines += _outside(found)
    elif found.error_lines:
        lines = ["\nNo known signature. Error lines found:"]
    else:
        lines = ["\nNo known signature, and no error line."]
    lines += [f"  {item.path}:{item.line_number}: {shown_line(item.line)}" for item in found.error_lines]
    return lines + _reasons(found) + _ranks(found)


def _reasons(found) -> list[str]:
    """What the rules read from the log around its lines, in words."""
    return ["\nRead from the log:"] + [f"  - {reason}" for reason in found.reasons] if found.reasons else []


def _outside(found) -> list[str]:
    lines = []
    for signature in found.outside:
        lines.append(f"  Outside the catalog: {SIGNATURES_BY_ID[signature].title}. {SIGNATURES_BY_ID[signature].meaning}")
        lines += [_evidence_line(e) for e in found.evidence if e.signature == signature][:2]
    return lines


def _ranks(found) -> list[str]:
    """Culprit and victims, only for logs whose ranks show a failure."""
    if not (found.culprits or found.victims or found.culprit is not None or found.culprit_node is not None):
        return []  # no rank shows a failure: nothing to tell apart
    if found.culprit is not None:
        node = f" on node {found.culprit_node}" if found.culprit_node is not None else ""
        lines = [f"\nCulprit: rank {found.culprit}{node} ({found.culprit_reason})"]
    elif found.culprit_node is not None:
        lines = [f"\nCulprit: node {found.culprit_node} ({found.culprit_reason})"]
    else:
        lines = ["\nCulprit: not singled out"]
    if found.culprits:
        lines.append(f"Ranks with errors of their own: {rank_ranges(found.culprits)}")
    if found.victims:
        lines.append(f"Victims (waiting on others, or their connections cut): {rank_ranges(found.victims)}")
    if found.silent:
        lines.append(f"Silent (no error of their own: torn down or still waiting): {rank_ranges(found.silent)}")
    return lines


def diagnosis_json(found) -> dict:
    return {**to_dict(found), "answers": list(found.answers())}


def _culprit_cell(result) -> str:
    if result.case.culprit is None:
        return ""
    level, number = result.case.culprit
    named = result.culprit_rank if level == "rank" else result.culprit_node
    return f"{level} {number}: " + ("named" if result.culprit_hit else f"named {named}" if named is not None else "not named")


def _ratio(hits_and_cases: tuple[int, int]) -> str:
    hits, cases = hits_and_cases
    return f"{hits}/{cases} ({hits / cases:.0%})" if cases else "no case names one"


def accuracy_text(accuracy) -> str:
    rows = [[result.case.log.name, result.case.cause, result.position or "-", ", ".join(result.ranked[:3]),
             _culprit_cell(result)] for result in accuracy.results]
    table = tabulate(rows, headers=["log", "known cause", "ranked", "diagnose's top 3", "culprit"])
    return (f"{table}\n\n{len(rows)} cases, {len(accuracy.causes)} causes: top-1 {accuracy.top(1):.1%}, "
            f"top-3 {accuracy.top(3):.1%}, top-5 {accuracy.top(5):.1%}; macro-F1 of the first answer "
            f"{accuracy.macro_f1():.3f}\n"
            f"culprit named: rank level {_ratio(accuracy.culprit('rank'))}, node level {_ratio(accuracy.culprit('node'))}\n"
            f"not in the catalog, answered first: {_ratio(accuracy.unknown)}\n"
            f"first answer right, by the confidence shown for it: "
            + "; ".join(f"{low:.0%}-{high:.0%} {right}/{cases}" + (f" ({right / cases:.0%})" if cases else "")
                        for low, high, cases, right in accuracy.calibration())
            + f"\nno cause ranked (no confidence shown): {accuracy.no_cause_ranked[1]} cases, "
              f"{accuracy.no_cause_ranked[0]} of them outside the catalog")


def accuracy_json(accuracy) -> dict:
    def pair(hits_and_cases):
        return {"named": hits_and_cases[0], "cases": hits_and_cases[1]}

    return {
        "cases": len(accuracy.results), "causes": len(accuracy.causes), "top1": accuracy.top(1), "top3": accuracy.top(3),
        "top5": accuracy.top(5), "macro_f1": accuracy.macro_f1(),
        "culprit_rank": pair(accuracy.culprit("rank")), "culprit_node": pair(accuracy.culprit("node")),
        "not_in_catalog": pair(accuracy.unknown),
        "calibration": [{"from": low, "to": high, "cases": cases, "right": right}
                        for low, high, cases, right in accuracy.calibration()],
        "no_cause_ranked": {"outside_the_catalog": accuracy.no_cause_ranked[0], "cases": accuracy.no_cause_ranked[1]},
        "results": [{"log": r.case.log.name, "cause": r.case.cause, "position": r.position, "ranked": list(r.ranked[:3]),
                     "confidence": r.confidence, "culprit": _culprit_cell(r) or None} for r in accuracy.results],
    }
