"""The preflight report: each check's nodes, verdict, phase times and bandwidth, then the bad or
slow node or link. Pure."""

from __future__ import annotations

import textwrap

from tabulate import tabulate

from .text import seconds_text

COLUMN_EVERY = 4  # the bandwidth table shows every 4th size (sizes double: 8 B, 128 B, 2 KiB, ...) and the largest


def preflight_report(result) -> str:
    """`result`: a slurm.preflight.Preflight."""
    where = f" as steps of allocation {result.allocation}" if result.allocation else ""
    lines = [
        f"Preflight of {len(result.nodes)} node(s) ({', '.join(result.nodes)}){where}, {result.ranks_per_node} "
        f"rank(s) per node on {result.backend}: init_process_group, all_reduce (every rank must hold N(N-1)/2), "
        "destroy_process_group.",
        "",
        _checks_table(result),
    ]
    lines += _bandwidth_lines(result)
    failed = [check for check in result.checks if not check.healthy]
    if failed:
        lines += ["", "Why the failed checks failed (diagnose on their logs):"]
        for check in failed:
            lines.append(textwrap.fill(f"{', '.join(check.nodes)}: {check.why}", width=100,
                                       initial_indent="  ", subsequent_indent="    "))
    lines += ["", _verdict(result)]
    slow = _slow_verdict(result)
    if slow:
        lines.append(textwrap.fill(slow, width=100, subsequent_indent="  "))
    lines.append(f"Recordings: {', '.join(check.recording.id for check in result.checks)}")
    return "\n".join(lines)


def _figure(sweep) -> str:
    """The group's peak busbw; with one rank (no link, busbw 0) the time of its smallest all_reduce."""
    if sweep is None or not sweep.points:
        return "-"
    return f"{sweep.peak_busbw:.3f}" if sweep.world > 1 else f"{sweep.points[0].seconds * 1e6:.1f}"


def _checks_table(result) -> str:
    rows = []
    slow = set(result.judgement.slow_groups)
    for check in result.checks:
        world = len(check.nodes) * result.ranks_per_node
        outcome = "FAILED" if not check.healthy else ("ok, SLOW" if check.nodes in slow else "ok")
        rows.append([
            ", ".join(check.nodes), world, f"{world * (world - 1) // 2:g}", outcome,
            *(seconds_text(check.phases[phase]) for phase in ("init", "all_reduce", "destroy")),
            seconds_text(check.recording.capture.duration_s), _figure(check.sweep),
        ])
    one_rank = all(len(check.nodes) * result.ranks_per_node == 1 for check in result.checks)
    return tabulate(rows, headers=["nodes", "ranks", "N(N-1)/2", "result", "init s", "all_reduce s", "destroy s",
                                   "job s", "8 B us" if one_rank else "busbw GB/s"],
                    tablefmt="simple", disable_numparse=True)


def _size_text(size: int) -> str:
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def _bandwidth_lines(result) -> list[str]:
    """busbw (algbw with one rank) at a few sizes, one row per group that ran the sweep."""
    swept = [check for check in result.checks if check.sweep and check.sweep.points]
    if not swept:
        return []
    sizes = sorted({point.bytes for check in swept for point in check.sweep.points})
    shown = [size for index, size in enumerate(sizes) if index % COLUMN_EVERY == 0]
    shown += [sizes[-1]] if (len(sizes) - 1) % COLUMN_EVERY else []
    one_rank = all(check.sweep.world == 1 for check in swept)
    rows = []
    for check in swept:
        by_size = {point.bytes: point for point in check.sweep.points}
        rows.append([", ".join(check.nodes)] + [
            "-" if size not in by_size else
            f"{by_size[size].seconds * 1e6:.1f}" if one_rank else f"{by_size[size].busbw(check.sweep.world):.4f}"
            for size in shown])
    measure = ("time us by message size (one rank: no link is crossed, the times are the call's own cost; "
               "busbw is 0, algbw in --json)" if one_rank
               else "busbw GB/s by message size, as nccl-tests define it")
    lines = ["", textwrap.fill(f"all_reduce {measure} ('-': past the byte or time budget):", width=100),
             tabulate(rows, headers=["nodes", *map(_size_text, shown)], tablefmt="simple", disable_numparse=True)]
    stopped = [f"{', '.join(check.nodes)}: {check.sweep.ending}" for check in swept if check.sweep.ending.startswith("stopped")]
    lines += [textwrap.fill(line, width=100, initial_indent="  ", subsequent_indent="    ") for line in stopped]
    return lines


def _verdict(result) -> str:
    if result.healthy:
        return "Verdict: healthy: every check passed."
    if result.bad_nodes:
        return (f"Verdict: bad node(s): {', '.join(result.bad_nodes)} (every pair with it failed; "
                "pairs without it passed). Drain it or fix it before the job.")
    if result.bad_links:
        pairs = "; ".join(" - ".join(pair) for pair in result.bad_links)
        return f"Verdict: bad link(s) between {pairs} (each node passes with others)."
    if len(result.checks) == 1 and len(result.nodes) == 2:
        return ("Verdict: the two nodes fail together; with two nodes faultlab cannot tell which one is "
                "at fault: add a third node known to be good.")
    if len(result.checks) == 1:
        return "Verdict: the run across all nodes failed (pairs not checked: --pairs never)."
    return "Verdict: failures not explained by one node or one link: see each check above."


def _slow_verdict(result) -> str:
    """What the bandwidth says, when the sweep ran."""
    from ..bandwidth import SLOW_FRACTION

    judged = result.judgement
    if not any(check.sweep for check in result.checks) or len(result.nodes) < 2:
        return ""
    if judged.reference is None:
        more = "--pairs always measures every pair" if len(result.nodes) > 2 else "add a third node"
        return f"Bandwidth: pairs are what is compared, and fewer than two were measured ({more})."
    rule = f"below {SLOW_FRACTION:g} x the median of each node's best pair, {judged.reference:.3f} GB/s busbw"
    if judged.slow_nodes:
        return (f"Bandwidth: slow node(s): {', '.join(judged.slow_nodes)} (every pair with it is {rule}; "
                "pairs without it are not). Check its links before the job.")
    if judged.slow_links:
        pairs = "; ".join(" - ".join(pair) for pair in judged.slow_links)
        return f"Bandwidth: slow link(s) between {pairs} ({rule}; each node is fast with others)."
    if judged.slow_groups:
        return f"Bandwidth: slow pair(s) {rule}, not explained by one node or link: see the table above."
    return f"Bandwidth: no pair {rule}."
