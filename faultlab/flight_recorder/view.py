"""The Flight Recorder view: a compact per-rank table, the divergence point and the culprit."""

from __future__ import annotations

import dataclasses
import textwrap

from tabulate import tabulate

from ..textsafe import inert
from .analysis import analyse, seq_text
from .records import Analysis, FlightRecorderCapture
from .torch_analyzer import agreement

MAX_OPS_SHOWN = 6
WIDTH = 100


def _ops(row, divergence: int | None) -> str:
    ops = list(row.ops)
    shown = ops[-MAX_OPS_SHOWN:]
    text = " ".join(("*" if divergence and op.split(":", 1)[0] == str(divergence) else "") + op for op in shown)
    return ("... " if len(ops) > len(shown) else "") + text


def _state(row) -> str:
    if not row.dumped:
        return "-"
    if row.pending:
        return "inside #" + ",".join(map(str, row.pending))
    if row.last_enqueued is None or row.last_enqueued < 1:
        return "before its first collective"
    if row.trigger == "error":  # gloo counts a collective that raised as completed
        return f"had raised (last: {seq_text(row.last_enqueued)})"
    return "outside any collective"


def flight_recorder_view(capture: FlightRecorderCapture) -> str:
    """Analyse the capture and render it, torch's analyzer's report and the agreement included."""
    analysis = analyse(capture)
    analysis = dataclasses.replace(analysis, torch_agreement=agreement(analysis, capture.torch_analyzer))
    return render_view(capture, analysis)


def render_view(capture: FlightRecorderCapture, analysis: Analysis) -> str:
    """The Flight Recorder section of a run's report, made inert: dumps and torch's analyzer run can come in
    someone else's bundle."""
    if capture.buffer_size == 0 and not capture.dumps:
        return "Flight Recorder: off for this run (TORCH_FR_BUFFER_SIZE unset)"
    rows = []
    for row in analysis.progress:
        rows.append([
            row.rank,
            row.trigger if row.dumped else "no dump",
            "-" if row.last_enqueued is None else seq_text(row.last_enqueued),
            "-" if row.last_completed is None else seq_text(row.last_completed),
            _state(row),
            _ops(row, analysis.divergence_seq),
        ])
    headers = ["rank", "dump", "enqueued", "completed", "at dump time", f"collectives of group {analysis.group}"]
    buffer = f"buffer {capture.buffer_size}; " if capture.buffer_size else ""
    # Long cells wrap so the report fits 100 columns, as the run report around it does.
    table = tabulate(rows, headers=headers, tablefmt="simple", maxcolwidths=[None, 20, 8, 9, 16, 24])
    prose = [f"  rank {row.rank}: no dump ({row.trigger})" for row in analysis.progress if not row.dumped]
    if analysis.divergence_seq is not None:
        prose.append(f"Divergence: #{analysis.divergence_seq} ({analysis.divergence_op}) in group {analysis.group}")
    prose += [f"  - {finding.kind}: {finding.text}" for finding in analysis.findings]
    culprit = ", ".join(f"rank {rank}" for rank in analysis.culprits) or "none named"
    prose.append(f"Culprit from the recorder: {culprit} — {analysis.reason}")
    if capture.torch_analyzer is not None:
        prose += _torch_section(capture, analysis).splitlines()
    lines = [f"Flight Recorder ({buffer}{len(capture.dumps)} of {capture.world_size} ranks dumped)", table]
    lines += [wrapped for line in prose
              for wrapped in textwrap.wrap(line, WIDTH, subsequent_indent=_indent_of(line) + "    ",
                                           break_on_hyphens=False) or [""]]
    return inert("\n".join(lines))


def _torch_section(capture: FlightRecorderCapture, analysis: Analysis) -> str:
    run = capture.torch_analyzer
    lines = [f"torch's analyzer ({run.command}):"]
    lines += [f"  normalised: {change}" for change in run.normalised]
    lines += ["  | " + line for line in run.output.splitlines()]
    if analysis.torch_agreement:
        lines.append(f"  compared: {analysis.torch_agreement}")
    return "\n".join(lines)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
