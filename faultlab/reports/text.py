"""Text for people: run reports, the catalog, scores, programs. Pure.

Tables fit the terminal (100 columns when it cannot be told): long cells move below their
table; `width=None` keeps every cell on one line (`--wide`).
"""

from __future__ import annotations

import dataclasses
import shutil
import textwrap

from tabulate import tabulate

from ..flight_recorder.view import flight_recorder_view
from ..records import Recording
from ..serial import to_dict
from ..scenario import Scenario

ENDING_WORDS = {
    "exited": "exit {code}",
    "signaled": "signal {signal}",
    "torn_down": "torn down",
    "killed_at_deadline": "HUNG, killed",
    "never_started": "never started",
    "absent": "not launched",
}


def ending_text(ending: str, code: int | None) -> str:
    return ENDING_WORDS[ending].format(code=code, signal=-code if code else "?")


def value_text(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def seconds_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def as_json(record):
    """A record (or a list of them) as plain JSON data: dataclasses become objects."""
    if isinstance(record, (list, tuple)):
        return [as_json(item) for item in record]
    return to_dict(record) if dataclasses.is_dataclass(record) else record


def terminal_width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def rank_table(recording: Recording, width: int | None = 100) -> str:
    """Each rank next to the baseline; where the table would be wider than `width`, each
    rank's deviation goes on a line of its own below it."""
    headers = ["rank", "node/local", "value (expected)", "ended", "last phase", "s (baseline)"]
    rows, deviations = [], []
    for delta in recording.comparison.deltas:
        rows.append([
            delta.rank,
            f"{delta.node}/{delta.local_rank}",
            f"{value_text(delta.observed_value)} ({delta.expected_value:g})",
            ending_text(delta.ending, delta.exit_code),
            delta.last_phase,
            f"{seconds_text(delta.duration_s)} ({seconds_text(delta.baseline_duration_s)})",
        ])
        deviations.append("; ".join(delta.how) if delta.deviates else "ok")
    whole = tabulate([row + [how] for row, how in zip(rows, deviations)], headers=headers + ["deviation"])
    if width is None or max(len(line) for line in whole.splitlines()) <= width:
        return whole
    below = [line for delta, how in zip(recording.comparison.deltas, deviations) if delta.deviates
             for line in textwrap.wrap(how, width, initial_indent=f"  rank {delta.rank}: ",
                                       subsequent_indent="      ", break_on_hyphens=False)]
    return "\n".join([tabulate(rows, headers=headers), *(["Deviations:", *below] if below else [])])


def launcher_table(recording: Recording, width: int | None = 100) -> str:
    """How each node's launcher ended, and (below, wrapped) how it was launched."""
    if width is None:
        rows = [[node.node, node.command, _launcher_ended(node)] for node in recording.capture.nodes]
        return tabulate(rows, headers=["node", "launched as", "ended"], tablefmt="simple")
    rows = [[node.node, _launcher_ended(node)] for node in recording.capture.nodes]
    lines = [tabulate(rows, headers=["node", "ended"], tablefmt="simple")]
    for node in recording.capture.nodes:
        lines.append(textwrap.fill(f"$ {node.command}", width, initial_indent=f"  node {node.node}: ",
                                   subsequent_indent="      ", break_on_hyphens=False))
    return "\n".join(lines)


def _launcher_ended(node) -> str:
    return "running at deadline, killed" if node.exit_code is None else f"exit {node.exit_code}"


def symptom_lines(recording: Recording, width: int | None = 100) -> list[str]:
    """Each symptom with its whole line (wrapped to `width`); a bare exception line already
    shown by a signature is left out."""
    shown = {(s.source, s.line) for s in recording.symptoms if s.id != "python-exception"}
    symptoms = [s for s in recording.symptoms if s.id != "python-exception" or (s.source, s.line) not in shown]
    lines = []
    for symptom in sorted(symptoms, key=lambda s: (s.id == "python-exception", s.node, s.local_rank or -1, s.id)):
        times = f" (x{symptom.count})" if symptom.count > 1 else ""
        lines.append(f"  {symptom.source:<18} {symptom.id:<26} [{symptom.role}]{times}")
        excerpt = symptom.line.strip()
        lines += [f"      {excerpt}"] if width is None else textwrap.wrap(
            excerpt, width, initial_indent="      ", subsequent_indent="        ", break_on_hyphens=False)
    return lines


def _earlier_attempts(recording: Recording, width: int | None) -> list[str]:
    """A race's live runs before this one (none where it showed at once)."""
    if not recording.earlier_attempts:
        return []
    earlier = "; ".join(f"run {number}: {outcome}" for number, outcome in enumerate(recording.earlier_attempts, 1))
    return _wrapped(f"a race, run live {len(recording.earlier_attempts) + 1} times: this is the last ({earlier})",
                    width)


def run_report(scenario: Scenario, recording: Recording, show_explanation: bool = True,
               width: int | None = 100) -> str:
    capture = recording.capture
    topology = scenario.topology
    how = "live" if recording.live else "replayed"
    out = [
        f"{scenario.id}: {scenario.title}",
        *([] if recording.live else _wrapped(recording.source, width)),
        f"{how} on {recording.backend}, {topology.nodes} node(s) x {topology.ranks_per_node} rank(s), "
        f"timeout {capture.timeout_s:g}s, ran {capture.duration_s:.1f}s"
        + (f", debug knob: {recording.debug}" if recording.debug else ""),
        *_earlier_attempts(recording, width),
        f"network: {capture.network}",
        "",
        "Ticket:",
        textwrap.indent(textwrap.fill(scenario.ticket, min(width or 96, 96) - 2), "  "),
        "",
        "Launchers:",
        launcher_table(recording, width),
        "",
        *_wrapped(f"Per rank, against the healthy baseline ({recording.baseline_note}):", width),
        rank_table(recording, width),
        "",
        *([flight_recorder_view(capture.flight_recorder), ""] if capture.flight_recorder else []),
        "Symptoms found in the real output:" if recording.symptoms else "Symptoms: none matched.",
        *symptom_lines(recording, width),
        "",
        *_wrapped(f"Verdict: {recording.comparison.summary}", width),
        *[line for note in recording.comparison.launchers for line in _wrapped(f"  {note}", width)],
    ]
    if recording.reproduced:
        out += _wrapped(f"Reproduced: yes (expected {recording.expected_verdict}" + (
            f" with {', '.join(recording.expected_signatures)})" if recording.expected_signatures else ")"), width)
    else:
        reasons = []
        if recording.comparison.verdict != recording.expected_verdict:
            reasons.append(f"verdict {recording.comparison.verdict}, expected {recording.expected_verdict}")
        if recording.missing_signatures:
            reasons.append(f"missing signatures: {', '.join(recording.missing_signatures)}")
        out += _wrapped("Reproduced: NO (" + "; ".join(reasons) + ")", width)
    if show_explanation:
        out += ["", "What happened:", textwrap.indent(textwrap.fill(scenario.explain, min(width or 96, 96) - 2), "  ")]
    return "\n".join(out)


def _wrapped(line: str, width: int | None) -> list[str]:
    return [line] if width is None else textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False)


def baseline_report(recording: Recording) -> str:
    rows = [
        [rank.rank, f"{rank.node}/{rank.local_rank}", value_text(rank.value), ending_text(rank.ending, rank.exit_code),
         seconds_text(rank.end_t - rank.start_t if rank.start_t is not None else None)]
        for rank in recording.capture.ranks
    ]
    state = "healthy" if recording.reproduced else "NOT HEALTHY"
    return "\n".join([
        f"Healthy baseline, {recording.baseline_note}: {state}, ran {recording.capture.duration_s:.1f}s",
        tabulate(rows, headers=["rank", "node/local", "value", "ended", "time s"]),
    ])


def suite_row(scenario: Scenario, recording: Recording, seconds: float) -> dict:
    return {
        "id": scenario.id,
        "cause": scenario.answer.cause,
        "live": recording.live,
        "verdict": recording.comparison.verdict,
        "expected": recording.expected_verdict,
        "reproduced": recording.reproduced,
        "missing_signatures": list(recording.missing_signatures),
        "seconds": round(seconds, 2),
        "timeout_s": scenario.timeout_s,
    }


def suite_progress(position: int, count: int, scenario: Scenario, recording: Recording, seconds: float) -> str:
    how = "live" if recording.live else "replay"
    state = "reproduced" if recording.reproduced else "NOT REPRODUCED"
    return (f"[{position:2}/{count}] {scenario.id:24} {how:6} {recording.comparison.verdict:14} "
            f"{state:15} {seconds:5.1f}s")


def suite_summary(results) -> str:
    reproduced = sum(1 for _, recording, _ in results if recording.reproduced)
    live = sum(1 for _, recording, _ in results if recording.live)
    total = sum(seconds for _, _, seconds in results)
    budget = sum(scenario.timeout_s + 2 for scenario, _, _ in results)
    failed = [scenario.id for scenario, recording, _ in results if not recording.reproduced]
    lines = [
        f"{reproduced} of {len(results)} scenarios reproduced ({live} live, {len(results) - live} replayed) "
        f"in {total:.0f}s (sum of timeouts + 2s each: {budget:.0f}s)"
    ]
    if failed:
        lines.append("not reproduced: " + ", ".join(failed))
    return "\n".join(lines)


def scenario_report(entry) -> str:
    """What `faultlab show` prints: everything but the answer and the explanation, and how
    the scenario runs on this host."""
    from ..faults import FAULT_KINDS_BY_ID

    scenario = entry.scenario
    topology = scenario.topology
    lines = [
        f"{scenario.id}: {scenario.title} (difficulty {scenario.difficulty})",
        f"topology: {topology.nodes} node(s) x {topology.ranks_per_node} rank(s), backend {topology.backend}"
        + (f", {topology.gpus_per_node} GPU(s) per node" if topology.gpus_per_node else "")
        + (", each node on a simulated host" if topology.hosts else ""),
        f"here: {entry.here.describe()}" + (f" ({entry.here.reason})" if entry.here.mode == "replay" else ""),
        f"timeout: {scenario.timeout_s:g}s",
        "",
        "Ticket:",
        textwrap.indent(textwrap.fill(scenario.ticket, 96), "  "),
        "",
        "Faults:",
    ]
    for fault in scenario.faults:
        kind = FAULT_KINDS_BY_ID[fault.kind]
        params = ", ".join(f"{key}={value}" for key, value in fault.params.items())
        lines.append(f"  - {fault.kind} on {fault.target.describe()}" + (f" ({params})" if params else "") + f": {kind.summary}")
    if not scenario.faults:
        lines.append("  (none: the healthy run)")
    signatures = scenario.expect.signatures + scenario.expect.gloo_signatures + scenario.expect.nccl_signatures
    lines += ["", f"Expected: verdict {scenario.expect.verdict}; signatures {', '.join(signatures) or '-'}"]
    if scenario.hints:
        lines += ["", "Hints:"] + [f"  {index}. {hint}" for index, hint in enumerate(scenario.hints, 1)]
    return "\n".join(lines)


def catalog_rows(entries) -> list[dict]:
    return [{"id": e.scenario.id, "title": e.scenario.title, "cause": e.scenario.answer.cause,
             "difficulty": e.scenario.difficulty, "here": e.here.mode, "how": e.here.describe(),
             "needs": e.here.reason or None} for e in entries]


def catalog_table(entries, host, width: int | None = None) -> str:
    """The catalog with how each scenario runs here: live, a replay (of which recording), or
    what it needs. Where one line per scenario would not fit, each title goes below its row."""
    width = width or terminal_width()
    rows = [[e.scenario.id, e.scenario.answer.cause, str(e.scenario.difficulty), e.here.short()]
            for e in entries]
    headers = ["id", "cause", "level", "here"]
    table = tabulate([row + [e.scenario.title] for row, e in zip(rows, entries)], headers=headers + ["title"],
                     disable_numparse=True)
    if max(len(line) for line in table.splitlines()) > width:
        lines = tabulate(rows, headers=headers, disable_numparse=True).splitlines()
        titles = [textwrap.fill(e.scenario.title, width, initial_indent="    ", subsequent_indent="    ")
                  for e in entries]
        table = "\n".join(lines[:2] + [f"{row}\n{title}" for row, title in zip(lines[2:], titles)])
    live = sum(1 for e in entries if e.here.live)
    replay = sum(1 for e in entries if e.here.mode == "replay")
    causes = len({e.scenario.answer.cause for e in entries})
    summary = (f"{len(entries)} scenarios, {causes} causes: {live} live here, {replay} replayed from recordings, "
               f"{len(entries) - live - replay} cannot run here. This host: {host.gpus} GPU(s), "
               f"{'root' if host.root else 'not root'}; `faultlab show ID` says why a scenario is not live.")
    return f"{table}\n\n" + textwrap.fill(summary, width)


def program_view(view) -> str:
    from ..lab.program import PROGRAM_NAME

    lines = [f"# {PROGRAM_NAME}, the healthy program ({view.backend}):\n", view.healthy]
    if view.diff:
        lines += [f"# What {view.scenario.id} changes in it:\n", view.diff]
    else:
        lines.append(f"# {view.scenario.id} runs this program unchanged: its faults are in the launch.")
    return "\n".join(lines)


def cause_table(causes) -> str:
    return tabulate([[c.id, c.title] for c in causes], headers=["cause", "title"])


def history_table(history) -> str:
    return tabulate([[d.started_at, d.scenario_id, d.pack or "-", "replay" if d.replay else "live",
                      f"{d.total:g}/{d.max}", d.seconds] for d in history],
                    headers=["when", "scenario", "pack", "run", "score", "seconds"])


def _cells(row) -> list:
    return list(dataclasses.astuple(row)) if dataclasses.is_dataclass(row) else list(row)


def leaderboard_table(board) -> str:
    return tabulate([_cells(row) for row in board], headers=["trainee", "drills", "mean", "best", "last played"])


def weak_spots_table(spots) -> str:
    return tabulate([_cells(row) for row in spots],
                    headers=["cause", "drills", "cause right %", "culprit right %", "mean score"])
