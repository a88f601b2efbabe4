"""The join storm for people: a table, a text plot for the terminal, an inline SVG for HTML. Pure."""

from __future__ import annotations

import dataclasses
import math

from markupsafe import Markup
from tabulate import tabulate

from ..storm import CARRIES_OVER, DOES_NOT_CARRY_OVER, StormCell, StormReport
from .runbook_pages import _templates as templates

BAR_WIDTH = 40
SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _stagger(cell: StormCell) -> str:
    return "none" if not cell.stagger_ms else f"{cell.stagger_ms:g} ms / {cell.wave}"


def ready_text(cell: StormCell) -> str:
    if cell.killed:
        return "HUNG, killed"
    if cell.ready_s is None:
        return f"{cell.failed} failed"
    return _seconds(cell.ready_s)


def progress_line(cell: StormCell) -> str:
    return f"  {cell.store} {cell.clients} clients, stagger {_stagger(cell)}: {ready_text(cell)}"


def table(report: StormReport) -> str:
    rows = [[cell.store, cell.clients, _stagger(cell), cell.somaxconn, _seconds(cell.spread_s), ready_text(cell),
             _seconds(cell.median_s), _seconds(cell.p99_s), cell.slow, cell.retries, cell.resets, cell.failed]
            for cell in report.cells]
    headers = ["store", "clients", "stagger", "backlog", "floor s", "ready s", "join median s", "join p99 s",
               "joins >=1 s", "retries", "resets", "failed"]
    return tabulate(rows, headers=headers, tablefmt="simple")


def _series(report: StormReport) -> dict[str, list[StormCell]]:
    """One line of the plot per (store, stagger), in the order measured."""
    series: dict[str, list[StormCell]] = {}
    for cell in report.cells:
        series.setdefault(f"{cell.store}, stagger {_stagger(cell)}", []).append(cell)
    return series


def _plotted(cell: StormCell) -> float | None:
    """What the plot shows: ready time, or for a cell with failures when its last client gave up."""
    return cell.ended_s


def text_plot(report: StormReport) -> str:
    """Horizontal bars of time-to-ready, grouped by client count, one bar per series."""
    values = [_plotted(cell) or 0.0 for cell in report.cells]
    top = max(values + [1e-9])
    labels = list(_series(report))
    lines = [f"time to ready (full bar = {top:.3f} s)"]
    for clients in sorted({cell.clients for cell in report.cells}):
        lines.append(f"{clients:>5} clients")
        for label, cells in _series(report).items():
            for cell in (c for c in cells if c.clients == clients):
                length = round(BAR_WIDTH * (_plotted(cell) or 0.0) / top)
                mark = "#" if cell.ready_s is not None else "x"
                lines.append(f"  {labels.index(label) + 1} {mark * length:<{BAR_WIDTH}} {ready_text(cell)}")
    lines.append("")
    lines += [f"  {index + 1} = {label}" for index, label in enumerate(labels)]
    lines.append("  # all joined; x some failed (bar: when the last one gave up)")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Line:
    label: str
    colour: str
    points: tuple[tuple[float, float, bool], ...]  # x, y, all joined

    @property
    def polyline(self) -> str:
        return " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in self.points)


@dataclasses.dataclass(frozen=True)
class _Plot:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    peak: float
    ticks: tuple[tuple[float, int], ...]  # x, clients
    lines: tuple[_Line, ...]


def _plot(report: StormReport, width: int = 640, height: int = 360) -> _Plot:
    """Time-to-ready against clients (log scale), one line per series."""
    left, right, top, bottom = 60, 200, 20, 40
    counts = sorted({cell.clients for cell in report.cells})
    low = math.log2(counts[0])
    high = math.log2(counts[-1]) if counts[-1] > counts[0] else low + 1
    peak = max([_plotted(cell) or 0.0 for cell in report.cells] + [1e-3])

    def x(clients: int) -> float:
        return left + (math.log2(clients) - low) / (high - low) * (width - left - right)

    def y(seconds: float | None) -> float:
        return height - bottom - (seconds or 0.0) / peak * (height - top - bottom)

    lines = tuple(_Line(label, SERIES_COLOURS[index % len(SERIES_COLOURS)],
                        tuple((x(c.clients), y(_plotted(c)), c.ready_s is not None) for c in cells))
                  for index, (label, cells) in enumerate(_series(report).items()))
    return _Plot(width, height, left, right, top, bottom, peak, tuple((x(n), n) for n in counts), lines)


def svg_plot(report: StormReport) -> Markup:
    return Markup(templates().get_template("storm.svg.j2").render(p=_plot(report)))


def text_report(report: StormReport) -> str:
    return "\n\n".join([
        f"Join storm: {report.network}; torch {report.torch_version}; {report.machine}; {report.made_at}",
        table(report), text_plot(report), caveats()])


def caveats() -> str:
    return f"Carries over to a real cluster: {CARRIES_OVER}\nDoes not: {DOES_NOT_CARRY_OVER}"


def html_report(report: StormReport) -> str:
    return templates().get_template("storm.html.j2").render(
        report=report, plot=svg_plot(report), table=table(report), carries_over=CARRIES_OVER,
        does_not=DOES_NOT_CARRY_OVER)
