"""What a trainee sees in a drill: the briefing, the menu, each piece of evidence, the debrief."""

from __future__ import annotations

import textwrap

from tabulate import tabulate

from ..flight_recorder.view import flight_recorder_view
from ..launchers import DEBUG_KNOBS
from ..score import COSTS
from .text import ending_text, rank_table, seconds_text, symptom_lines, value_text

WIDTH = 92


def briefing(session) -> str:
    recording, scenario = session.recording, session.scenario
    capture = recording.capture
    origin = "" if recording.live else f"\n{recording.source}\n"
    rows = [
        [r.shown_rank, f"{r.node}/{r.local_rank}", value_text(r.value),
         ending_text(r.ending, r.exit_code), r.last_phase,
         seconds_text(r.end_t - r.start_t if r.start_t is not None else None)]
        for r in capture.ranks
    ]
    expected = recording.comparison.deltas[0].expected_value if recording.comparison.deltas else 0
    return "\n".join([
        f"{session.label}: difficulty {scenario.difficulty}, {len(capture.nodes)} node(s), "
        f"{capture.world_size} rank(s), {recording.backend}, timeout {capture.timeout_s:g}s{origin}",
        "",
        "Ticket:",
        textwrap.indent(textwrap.fill(scenario.ticket, WIDTH), "  "),
        "",
        f"What each rank did (a healthy run prints {expected:g} on every rank and exits 0):",
        tabulate(rows, headers=["rank", "node/local", "value", "ended", "last phase", "seconds"]),
    ])


def menu(session) -> str:
    rows = [
        ("log N", "rank N's full stdout and stderr", f"-{COSTS['log']}"),
        ("launcher N", "node N's launch command and launcher log", f"-{COSTS['launcher']}"),
        ("network N", "node N's ip addr, routes, ss -ltn, nft rules", f"-{COSTS['network']}"),
        ("symptoms", "the known signatures found in the logs", f"-{COSTS['symptoms']}"),
        ("fr", "every rank's Flight Recorder dump, across ranks", f"-{COSTS['fr']}"),
        ("debug KNOB", f"re-run live with {'/'.join(DEBUG_KNOBS)}", f"-{COSTS['debug']}"),
        ("hint", f"the next hint, one at a time ({session.hints_left} left)", f"-{COSTS['hint']} each"),
        ("causes", "the cause catalog", "free"),
        ("give up", "score 0 and see the answer", ""),
        ("answer", "give your diagnosis", ""),
    ]
    return "\n".join(f"  {command:<12} {what:<48} {cost}".rstrip() for command, what, cost in rows)


def rank_log(rank: int, workers) -> str:
    parts = []
    for r in workers:
        parts.append(f"--- rank {rank} (node {r.node}, local rank {r.local_rank}) stdout ---\n{r.stdout.rstrip()}")
        parts.append(f"--- rank {rank} stderr ---\n{r.stderr.rstrip()}")
    return "\n".join(parts)


def launcher(node) -> str:
    ended = "still running at the deadline, killed" if node.exit_code is None else f"exit {node.exit_code}"
    return f"--- node {node.node} ---\n$ {node.command}\n(ended: {ended})\n{node.log.rstrip()}"


def network(node) -> str:
    if node is None:
        return "this job ran on one host's loopback: there is no host network to look at"
    return f"--- node {node.node}, as read one second into the run ---\n{node.network}"


def symptoms(recording) -> str:
    return "\n".join(symptom_lines(recording)) or "no known signature matched"


def flight_recorder(recorder) -> str:
    if recorder is None:
        return "this recording was made without the Flight Recorder: there is no dump to read"
    return flight_recorder_view(recorder)


def hint(taken) -> str:
    if taken is None:
        return "no more hints"
    number, text = taken
    return f"Hint {number}: {text} (-{COSTS['hint']} points)"


def debug(knob: str, rerun) -> str:
    return f"Re-run with {knob}:\n" + symptoms(rerun)


def debrief(session, drill, others=()) -> str:
    scenario, recording = session.scenario, session.recording
    key = scenario.answer
    lines = [
        f"Score: {drill.total:g} / {drill.max}  (cause {drill.score_cause:g}, culprit {drill.score_culprit:g}, "
        f"ranks {drill.score_ranks:g}, fix {drill.score_fix:g}, help -{drill.costs}; {drill.seconds:.0f}s)",
        *[f"  - {note}" for note in drill.notes],
        "",
        f"It was {scenario.id}: {scenario.title}",
        f"Cause: {key.cause}; culprit: {key.culprit.describe()}; "
        f"deviating ranks: {list(recording.comparison.deviating_ranks)}",
        f"Fix: {key.fix}",
        "",
        "Per rank, against the healthy baseline:",
        rank_table(recording),
        "",
        "What happened:",
        textwrap.indent(textwrap.fill(scenario.explain, WIDTH), "  "),
    ]
    if others:
        total = sum(count for _, count in others)
        lines += ["", f"How {total} other drill(s) of this scenario were answered:"]
        lines += [f"  {count:3} x {cause}" + ("  (right)" if cause == key.cause else "") for cause, count in others]
    return "\n".join(lines)
