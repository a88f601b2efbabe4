"""The runbook as a page: Markdown, or one self-contained HTML file with per-rank timelines."""

from __future__ import annotations

import html

from ..causes import CAUSES, CAUSES_BY_ID
from ..records import Recording
from ..runbook import Runbook
from .text import ending_text

# ---------------------------------------------------------------------------------------
# Timelines: every rank's phases, from its phase events.

PHASE_COLOURS = {
    "start": "#c9c9c9",  # started, before init
    "init": "#6fa8dc",
    "set_device": "#8e7cc3",
    "work": "#b6d7a8",  # between calls: the program's own work
    "all_reduce": "#f6b26b",
    "destroy": "#a2c4c9",
    "barrier": "#f6b26b",
    "broadcast": "#f6b26b",
    "all_gather": "#f6b26b",
}
ENDING_COLOURS = {"exited": "#38761d", "signaled": "#990000", "torn_down": "#b45f06",
                  "killed_at_deadline": "#cc0000", "never_started": "#999999"}


def _segments(rank) -> list[tuple[str, float, float]]:
    """(phase, start, end) spans of one rank, from its events."""
    spans, current, since = [], "start", rank.start_t or 0.0
    for event in rank.events[1:]:
        if event.phase.endswith("_begin"):
            spans.append((current, since, event.t))
            current, since = event.phase[: -len("_begin")], event.t
        elif event.phase.endswith("_end"):
            spans.append((current, since, event.t))
            current, since = "work", event.t
    spans.append((current, since, rank.end_t))
    return [(phase, begin, end) for phase, begin, end in spans if end > begin]


def timeline_svg(recording: Recording, title: str) -> str:
    """An inline SVG: one bar per rank, coloured by phase, with how it ended."""
    ranks = recording.capture.ranks
    span = max([r.end_t for r in ranks] + [0.001])
    width, left, row = 640, 120, 22
    height = 30 + row * len(ranks) + 18
    scale = (width - left - 150) / span
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{html.escape(title)}">',
             f'<text x="4" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    for index, rank in enumerate(ranks):
        y = 28 + index * row
        parts.append(f'<text x="4" y="{y + 13}" font-size="11">rank {rank.shown_rank} (n{rank.node}/l{rank.local_rank})</text>')
        for phase, begin, end in _segments(rank) if rank.events else []:
            colour = PHASE_COLOURS.get(phase, "#d9d9d9")
            parts.append(f'<rect x="{left + begin * scale:.1f}" y="{y}" width="{max((end - begin) * scale, 1):.1f}" '
                         f'height="16" fill="{colour}"><title>{html.escape(phase)}: {begin:.2f}-{end:.2f}s</title></rect>')
        end_x = left + rank.end_t * scale
        label = ending_text(rank.ending, rank.exit_code)
        colour = ENDING_COLOURS[rank.ending] if rank.ending != "exited" or rank.exit_code == 0 else ENDING_COLOURS["signaled"]
        parts.append(f'<text x="{end_x + 4:.1f}" y="{y + 13}" font-size="11" fill="{colour}">{html.escape(label)}</text>')
    axis_y = 28 + row * len(ranks) + 12
    parts.append(f'<text x="{left}" y="{axis_y}" font-size="10" fill="#666">0s</text>')
    parts.append(f'<text x="{left + span * scale - 20:.1f}" y="{axis_y}" font-size="10" fill="#666">{span:.2f}s</text>')
    parts.append("</svg>")
    return "".join(parts)


def timeline_text(recording: Recording, width: int = 48) -> str:
    """The same timeline in characters, for Markdown: one letter per phase."""
    letters = {"start": ".", "init": "i", "set_device": "d", "work": "-", "all_reduce": "A", "destroy": "x"}
    span = max([r.end_t for r in recording.capture.ranks] + [0.001])
    lines = []
    for rank in recording.capture.ranks:
        cells = [" "] * width
        for phase, begin, end in _segments(rank) if rank.events else []:
            for cell in range(int(begin / span * (width - 1)), int(end / span * (width - 1)) + 1):
                cells[min(cell, width - 1)] = letters.get(phase, "?")
        lines.append(f"rank {rank.shown_rank:>3} |{''.join(cells)}| {rank.ending.replace('_', ' ')} {rank.exit_code if rank.exit_code is not None else ''}".rstrip())
    lines.append(f"         0s{' ' * (width - 6)}{span:.2f}s   (. started  i init  - own work  A all_reduce  x destroy)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Markdown

CULPRIT_VS_VICTIMS = (
    "Most failed jobs show one culprit and many victims. The culprit fails on its own: its "
    "error is about itself (its device, its address, its code), it often ends first, and "
    "sometimes it prints nothing at all (killed by a signal, or torn down while still busy). "
    "The victims fail because of it: timeouts while waiting in init or in a collective, "
    "connections closed or reset by a peer, torn down by their launcher. torchrun's 'Root "
    "Cause (first observed failure)' is only the first failure it noticed, often a victim. "
    "Read the victims for who they were waiting for (a store key ending in a rank number, a "
    "peer address, the rank a monitored barrier names), then read that rank's own log."
)


def _reproduce(scenario_ids) -> str:
    return ", ".join(f"`faultlab run {scenario_id}`" for scenario_id in scenario_ids)


def to_markdown(book: Runbook) -> str:
    out = ["# Distributed training runbook", "",
           f"Generated by faultlab from {len(book.recordings)} recorded failures "
           f"(platforms recorded: {', '.join(book.platforms_recorded) or 'none'}).", ""]
    if book.platforms_missing:
        out += [f"> Never recorded on: {', '.join(book.platforms_missing)}. Nothing below describes "
                "those platforms.", ""]
    out += ["## Contents", "", "- [Symptoms](#symptoms)", "- [Telling the culprit from the victims](#telling-the-culprit-from-the-victims)",
            "- [Index by cause](#index-by-cause)", "- [Timelines](#timelines)", "", "## Symptoms", ""]
    for section in book.sections:
        out += [f"### {section.title}", "",
                f"Signature `{section.signature}` ({section.role}; seen on {', '.join(section.platforms)}). {section.meaning}", ""]
        if section.only_replayed:
            out += ["> Only seen in replayed recordings (made on other hardware); not reproduced on this host.", ""]
        out += ["What you see:", ""]
        for excerpt in section.excerpts:
            origin = "replayed recording" if excerpt.replayed else "live recording"
            out += ["```", excerpt.line, "```",
                    f"<sub>{excerpt.source} in `{excerpt.scenario_id}` ({origin} {excerpt.recording_id}; {excerpt.versions})</sub>", ""]
        out += ["Probable causes, most frequent in the recordings first:", ""]
        for rank, evidence in enumerate(section.causes, 1):
            cause = CAUSES_BY_ID.get(evidence.cause)
            if cause is None:
                out.append(f"{rank}. unknown cause ({evidence.recordings} recording(s): {', '.join(evidence.scenarios)})")
                continue
            out += [f"{rank}. **{cause.title}** (`{cause.id}`, {evidence.recordings} recording(s))",
                    f"   - Confirm: {cause.confirm}", f"   - Fix: {cause.fix}", f"   - Prevent: {cause.prevent}",
                    f"   - Reproduce: {_reproduce(evidence.scenarios)}"]
        out.append("")
    out += ["## Telling the culprit from the victims", "", CULPRIT_VS_VICTIMS, "",
            "Signatures by the side they are usually on:", ""]
    for role in ("culprit", "victim", "neutral"):
        ids = [s.signature for s in book.sections if s.role == role]
        if ids:
            out.append(f"- {role}: " + ", ".join(f"`{i}`" for i in ids))
    out += ["", "## Index by cause", ""]
    for cause in CAUSES:
        if cause.id == "healthy":
            continue
        seen = book.by_cause.get(cause.id)
        if seen:
            out.append(f"- **{cause.title}** (`{cause.id}`): " + ", ".join(f"`{s}`" for s in seen))
        elif cause.id in book.causes_without_recordings:
            out.append(f"- {cause.title} (`{cause.id}`): no recording yet, so no symptom is described.")
    out += ["", "## Timelines", "", "Each recorded failure, rank by rank, next to its healthy baseline.", ""]
    for recording in book.recordings:
        out += [f"### {recording.scenario_id}: {recording.comparison.verdict}", "", "```", timeline_text(recording)]
        baseline = book.baselines.get(recording.id)
        if baseline is not None:
            out += ["", "healthy baseline:", timeline_text(baseline)]
        out += ["```", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# HTML: one self-contained file, no requests, printable.

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}
pre{background:#f4f4f4;padding:.6em;overflow-x:auto;white-space:pre-wrap;word-break:break-all;font-size:12px}
h2{border-bottom:1px solid #ccc} .meta{color:#666;font-size:12px} .note{background:#fff4ce;padding:.4em .8em}
.pair{display:flex;flex-wrap:wrap;gap:1em} section{page-break-inside:avoid}
@media print{body{max-width:none} pre{white-space:pre-wrap}}
"""


def to_html(book: Runbook) -> str:
    esc = html.escape
    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Distributed training runbook</title>",
           f"<style>{_STYLE}</style></head><body><h1>Distributed training runbook</h1>",
           f"<p class='meta'>Generated by faultlab from {len(book.recordings)} recorded failures; platforms recorded: "
           f"{esc(', '.join(book.platforms_recorded) or 'none')}.</p>"]
    if book.platforms_missing:
        out.append(f"<p class='note'>Never recorded on: {esc(', '.join(book.platforms_missing))}.</p>")
    out.append("<h2 id='symptoms'>Symptoms</h2>")
    for section in book.sections:
        out.append(f"<section><h3 id='{esc(section.signature)}'>{esc(section.title)}</h3>"
                   f"<p>Signature <code>{esc(section.signature)}</code> ({esc(section.role)}; seen on "
                   f"{esc(', '.join(section.platforms))}). {esc(section.meaning)}</p>")
        if section.only_replayed:
            out.append("<p class='note'>Only seen in replayed recordings (made on other hardware).</p>")
        for excerpt in section.excerpts:
            origin = "replayed recording" if excerpt.replayed else "live recording"
            out.append(f"<pre>{esc(excerpt.line)}</pre><p class='meta'>{esc(excerpt.source)} in "
                       f"<code>{esc(excerpt.scenario_id)}</code> ({origin} {esc(excerpt.recording_id)}; {esc(excerpt.versions)})</p>")
        out.append("<ol>")
        for evidence in section.causes:
            cause = CAUSES_BY_ID.get(evidence.cause)
            if cause is None:
                out.append(f"<li>unknown cause ({evidence.recordings} recording(s))</li>")
                continue
            out.append(f"<li><b>{esc(cause.title)}</b> (<a href='#cause-{esc(cause.id)}'>{esc(cause.id)}</a>, "
                       f"{evidence.recordings} recording(s))<br>Confirm: {esc(cause.confirm)}<br>Fix: {esc(cause.fix)}"
                       f"<br>Prevent: {esc(cause.prevent)}<br>Reproduce: "
                       + ", ".join(f"<code>faultlab run {esc(s)}</code>" for s in evidence.scenarios) + "</li>")
        out.append("</ol></section>")
    out.append(f"<h2>Telling the culprit from the victims</h2><p>{esc(CULPRIT_VS_VICTIMS)}</p>")
    out.append("<h2>Index by cause</h2><ul>")
    for cause in CAUSES:
        if cause.id == "healthy":
            continue
        seen = book.by_cause.get(cause.id)
        text = (", ".join(f"<a href='#{esc(s)}'>{esc(s)}</a>" for s in seen) if seen
                else "no recording yet, so no symptom is described")
        out.append(f"<li id='cause-{esc(cause.id)}'><b>{esc(cause.title)}</b> ({esc(cause.id)}): {text}</li>")
    out.append("</ul><h2 id='timelines'>Timelines</h2><p>Each recorded failure, rank by rank, next to its healthy baseline. "
               "Colours: grey started, blue init, purple set_device, green own work, orange all_reduce, teal destroy.</p>")
    for recording in book.recordings:
        out.append(f"<section><h3>{esc(recording.scenario_id)}: {esc(recording.comparison.verdict)}</h3><div class='pair'>")
        out.append(timeline_svg(recording, f"{recording.scenario_id} ({'live' if recording.live else 'replayed'})"))
        baseline = book.baselines.get(recording.id)
        if baseline is not None:
            out.append(timeline_svg(baseline, "healthy baseline"))
        out.append("</div></section>")
    out.append("</body></html>")
    return "\n".join(out)
