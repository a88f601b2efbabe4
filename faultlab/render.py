"""Text for people: the per-rank table, symptoms and verdict of a recording. Pure."""

from __future__ import annotations

import textwrap

from tabulate import tabulate

from .records import Recording
from .scenario import Scenario

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


def rank_table(recording: Recording) -> str:
    comparison = recording.comparison
    rows = []
    for delta in comparison.deltas:
        rows.append(
            [
                delta.rank,
                f"{delta.node}/{delta.local_rank}",
                f"{value_text(delta.observed_value)} ({delta.expected_value:g})",
                ending_text(delta.ending, delta.exit_code),
                delta.last_phase,
                f"{seconds_text(delta.duration_s)} ({seconds_text(delta.baseline_duration_s)})",
                "; ".join(delta.how) if delta.deviates else "ok",
            ]
        )
    headers = ["rank", "node/local", "value (expected)", "ended", "last phase", "time s (baseline)", "deviation"]
    return tabulate(rows, headers=headers, tablefmt="simple")


def launcher_table(recording: Recording) -> str:
    rows = []
    for node in recording.capture.nodes:
        ended = "running at deadline, killed" if node.exit_code is None else f"exit {node.exit_code}"
        rows.append([node.node, node.command, ended])
    return tabulate(rows, headers=["node", "launched as", "ended"], tablefmt="simple")


def symptom_lines(recording: Recording, width: int = 160) -> list[str]:
    """Each symptom with its line; a bare exception line already shown by a signature is left out."""
    shown = {(s.source, s.line) for s in recording.symptoms if s.id != "python-exception"}
    symptoms = [s for s in recording.symptoms if s.id != "python-exception" or (s.source, s.line) not in shown]
    lines = []
    for symptom in sorted(symptoms, key=lambda s: (s.id == "python-exception", s.node, s.local_rank or -1, s.id)):
        excerpt = symptom.line.strip()
        if len(excerpt) > width:
            excerpt = excerpt[: width - 3] + "..."
        times = f" (x{symptom.count})" if symptom.count > 1 else ""
        lines.append(f"  {symptom.source:<18} {symptom.id:<26} [{symptom.role}]{times}")
        lines.append(f"      {excerpt}")
    return lines


def run_report(scenario: Scenario, recording: Recording, show_explanation: bool = True) -> str:
    capture = recording.capture
    topology = scenario.topology
    how = "live" if recording.live else "replayed"
    out = [
        f"{scenario.id}: {scenario.title}",
        *([] if recording.live else [recording.source]),
        f"{how} on {recording.backend}, {topology.nodes} node(s) x {topology.ranks_per_node} rank(s), "
        f"timeout {capture.timeout_s:g}s, ran {capture.duration_s:.1f}s"
        + (f", debug knob: {recording.debug}" if recording.debug else ""),
        f"network: {capture.network}",
        "",
        "Ticket:",
        textwrap.indent(textwrap.fill(scenario.ticket, 96), "  "),
        "",
        "Launchers:",
        launcher_table(recording),
        "",
        f"Per rank, against the healthy baseline ({recording.baseline_note}):",
        rank_table(recording),
        "",
        "Symptoms found in the real output:" if recording.symptoms else "Symptoms: none matched.",
        *symptom_lines(recording),
        "",
        f"Verdict: {recording.comparison.summary}",
        *[f"  {note}" for note in recording.comparison.launchers],
    ]
    if recording.reproduced:
        out.append(f"Reproduced: yes (expected {recording.expected_verdict}" + (
            f" with {', '.join(recording.expected_signatures)})" if recording.expected_signatures else ")"))
    else:
        reasons = []
        if recording.comparison.verdict != recording.expected_verdict:
            reasons.append(f"verdict {recording.comparison.verdict}, expected {recording.expected_verdict}")
        if recording.missing_signatures:
            reasons.append(f"missing signatures: {', '.join(recording.missing_signatures)}")
        out.append("Reproduced: NO (" + "; ".join(reasons) + ")")
    if show_explanation:
        out += ["", "What happened:", textwrap.indent(textwrap.fill(scenario.explain, 96), "  ")]
    return "\n".join(out)


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


def scenario_report(scenario: Scenario) -> str:
    """What `faultlab show` prints: everything but the answer and the explanation."""
    from .faults import FAULT_KINDS_BY_ID

    topology = scenario.topology
    lines = [
        f"{scenario.id}: {scenario.title} (difficulty {scenario.difficulty})",
        f"topology: {topology.nodes} node(s) x {topology.ranks_per_node} rank(s), backend {topology.backend}"
        + (f", {topology.gpus_per_node} GPU(s) per node" if topology.gpus_per_node else "")
        + (", each node on a simulated host" if topology.hosts else "")
        + (f"; needs {scenario.requires_gpus} GPU(s) live" if scenario.requires_gpus else "; live on CPU"),
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
