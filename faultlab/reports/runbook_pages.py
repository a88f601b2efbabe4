"""The runbook as a page: Markdown, or one self-contained HTML file with per-rank timelines."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import jinja2
from markupsafe import Markup

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


@dataclasses.dataclass(frozen=True)
class _Bar:
    phase: str
    begin: float
    end: float
    x: float
    width: float
    colour: str


@dataclasses.dataclass(frozen=True)
class _Row:
    y: int
    label: str
    bars: tuple[_Bar, ...]
    end_x: float
    ending: str
    end_colour: str


@dataclasses.dataclass(frozen=True)
class Timeline:
    """The geometry of a timeline picture; templates/timeline.svg.j2 draws it."""

    title: str
    width: int
    height: int
    left: int
    span: float
    rows: tuple[_Row, ...]

    @property
    def axis_y(self) -> int:
        return 28 + 22 * len(self.rows) + 12

    @property
    def axis_end_x(self) -> float:
        return self.width - 150 - 20


def timeline(recording: Recording, title: str) -> Timeline:
    ranks = recording.capture.ranks
    span = max([r.end_t for r in ranks] + [0.001])
    width, left, row_height = 640, 120, 22
    scale = (width - left - 150) / span
    rows = []
    for index, rank in enumerate(ranks):
        bars = tuple(_Bar(phase, begin, end, left + begin * scale, max((end - begin) * scale, 1),
                          PHASE_COLOURS.get(phase, "#d9d9d9"))
                     for phase, begin, end in (_segments(rank) if rank.events else []))
        failed = rank.ending != "exited" or rank.exit_code != 0
        rows.append(_Row(y=28 + index * row_height, label=f"rank {rank.shown_rank} (n{rank.node}/l{rank.local_rank})",
                         bars=bars, end_x=left + rank.end_t * scale + 4, ending=ending_text(rank.ending, rank.exit_code),
                         end_colour=ENDING_COLOURS[rank.ending if rank.ending != "exited" or not failed else "signaled"]))
    return Timeline(title=title, width=width, height=30 + row_height * len(ranks) + 18, left=left, span=span,
                    rows=tuple(rows))


def timeline_svg(recording: Recording, title: str) -> Markup:
    """An inline SVG: one bar per rank, coloured by phase, with how it ended."""
    return Markup(_templates().get_template("timeline.svg.j2").render(t=timeline(recording, title)))


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

RECORDER_LIMITS = (
    "Every rank keeps a ring buffer of its collectives (TORCH_FR_BUFFER_SIZE): process group, "
    "sequence id, op, sizes, dtypes, state. Matching them across ranks by sequence id finds the first "
    "collective not every rank issued, or issued differently, and so the rank that diverged: the "
    "culprit of a hang whose logs show only victims. What it cannot show: values and the reduce op "
    "(a wrong ReduceOp or wrong data leaves identical dumps on every rank); anything before the first "
    "collective (rendezvous, ports, addresses, a missing set_device: empty buffers); why a rank "
    "stopped (a rank that is frozen or killed leaves no dump, which is itself the clue). On gloo, "
    "entries stay 'scheduled' and a collective that timed out counts as completed in pg_status."
)

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


def _fence(text: str) -> Markup:
    """`text` verbatim in a Markdown code fence longer than any backtick run inside it, so
    no log line can close the fence and become markup."""
    ticks = 3
    while "`" * ticks in text:
        ticks += 1
    return Markup(f"{'`' * ticks}\n{text}\n{'`' * ticks}")


def _markdown_escape(value):
    """Markdown's autoescaping: a value becomes text, never HTML (GitHub renders inline HTML);
    quotes stay readable, as they are harmless outside an attribute."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@functools.lru_cache(maxsize=None)
def _templates(markdown: bool = False):
    """HTML and SVG templates autoescape every value; Markdown ones escape it as Markdown text."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=not markdown, finalize=_markdown_escape if markdown else None,
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
    )
    environment.filters["fence"] = _fence
    return environment


def _render(name: str, book: Runbook) -> str:
    return _templates(markdown=name.endswith(".md.j2")).get_template(name).render(
        book=book, causes=CAUSES, causes_by_id=CAUSES_BY_ID, culprit_vs_victims=CULPRIT_VS_VICTIMS, recorder_limits=RECORDER_LIMITS,
        timeline_svg=timeline_svg, timeline_block=_timeline_block,
    )


def _timeline_block(recording: Recording, baseline: Recording | None) -> str:
    text = timeline_text(recording)
    return text if baseline is None else f"{text}\n\nhealthy baseline:\n{timeline_text(baseline)}"


def to_markdown(book: Runbook) -> str:
    return _render("runbook.md.j2", book)


def to_html(book: Runbook) -> str:
    return _render("runbook.html.j2", book)
