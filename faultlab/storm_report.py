"""The join storm for people: a table, a text plot for the terminal, an inline SVG for HTML. Pure."""

from __future__ import annotations

import html
import math

from tabulate import tabulate

from .storm import CARRIES_OVER, DOES_NOT_CARRY_OVER, StormCell, StormReport

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


def svg_plot(report: StormReport, width: int = 640, height: int = 360) -> str:
    """Time-to-ready against clients (log scale), one polyline per series; self-contained SVG."""
    left, right, top_margin, bottom = 60, 200, 20, 40
    counts = sorted({cell.clients for cell in report.cells})
    low, high = math.log2(counts[0]), math.log2(counts[-1]) if counts[-1] > counts[0] else math.log2(counts[0]) + 1
    peak = max([_plotted(cell) or 0.0 for cell in report.cells] + [1e-3])

    def x(clients: int) -> float:
        return left + (math.log2(clients) - low) / (high - low) * (width - left - right)

    def y(seconds: float) -> float:
        return height - bottom - seconds / peak * (height - top_margin - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11" role="img" aria-label="time to ready against clients">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#333"/>',
             f'<line x1="{left}" y1="{top_margin}" x2="{left}" y2="{height - bottom}" stroke="#333"/>',
             f'<text x="{left}" y="{top_margin - 6}">{peak:.2f} s</text>',
             f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle">clients</text>']
    parts += [f'<text x="{x(n):.1f}" y="{height - bottom + 14}" text-anchor="middle">{n}</text>' for n in counts]
    for index, (label, cells) in enumerate(_series(report).items()):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        points = " ".join(f"{x(c.clients):.1f},{y(_plotted(c) or 0.0):.1f}" for c in cells)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        parts += [f'<circle cx="{x(c.clients):.1f}" cy="{y(_plotted(c) or 0.0):.1f}" r="3" '
                  f'fill="{colour if c.ready_s is not None else "white"}" stroke="{colour}"/>' for c in cells]
        parts.append(f'<text x="{width - right + 8}" y="{top_margin + 14 * (index + 1)}" fill="{colour}">'
                     f'{html.escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def text_report(report: StormReport) -> str:
    return "\n\n".join([
        f"Join storm: {report.network}; torch {report.torch_version}; {report.machine}; {report.made_at}",
        table(report), text_plot(report), caveats()])


def caveats() -> str:
    return f"Carries over to a real cluster: {CARRIES_OVER}\nDoes not: {DOES_NOT_CARRY_OVER}"


def html_report(report: StormReport) -> str:
    head = html.escape(f"{report.network}; torch {report.torch_version}; {report.machine}; {report.made_at}")
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>faultlab join storm</title></head><body>\n"
            f"<h1>Join storm</h1>\n<p>{head}</p>\n{svg_plot(report)}\n<pre>{html.escape(table(report))}</pre>\n"
            f"<p><b>Carries over to a real cluster:</b> {html.escape(CARRIES_OVER)}</p>\n"
            f"<p><b>Does not:</b> {html.escape(DOES_NOT_CARRY_OVER)}</p>\n</body></html>\n")
