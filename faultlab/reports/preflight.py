"""The preflight report: each check's nodes, verdict and phase times, then the bad node or link. Pure."""

from __future__ import annotations

import textwrap

from tabulate import tabulate

from .text import seconds_text


def preflight_report(result) -> str:
    """`result`: a slurm.preflight.Preflight."""
    expected = lambda check: len(check.nodes) * result.ranks_per_node  # noqa: E731
    rows = []
    for check in result.checks:
        world = expected(check)
        rows.append([
            ", ".join(check.nodes), world, f"{world * (world - 1) // 2:g}",
            "ok" if check.healthy else "FAILED",
            *(seconds_text(check.phases[phase]) for phase in ("init", "all_reduce", "destroy")),
            seconds_text(check.recording.capture.duration_s),
        ])
    lines = [
        f"Preflight of {len(result.nodes)} nodes ({', '.join(result.nodes)}), {result.ranks_per_node} rank(s) per node "
        f"on {result.backend}: init_process_group, all_reduce (every rank must hold N(N-1)/2), destroy_process_group.",
        "",
        tabulate(rows, headers=["nodes", "ranks", "N(N-1)/2", "result", "init s", "all_reduce s", "destroy s",
                                "job s"], tablefmt="simple", disable_numparse=True),
    ]
    failed = [check for check in result.checks if not check.healthy]
    if failed:
        lines += ["", "Why the failed checks failed (diagnose on their logs):"]
        for check in failed:
            lines.append(textwrap.fill(f"{', '.join(check.nodes)}: {check.why}", width=100,
                                       initial_indent="  ", subsequent_indent="    "))
    lines.append("")
    if result.healthy:
        lines.append("Verdict: healthy: every check passed.")
    elif result.bad_nodes:
        lines.append(f"Verdict: bad node(s): {', '.join(result.bad_nodes)} (every pair with it failed; "
                     "pairs without it passed). Drain it or fix it before the job.")
    elif result.bad_links:
        pairs = "; ".join(" - ".join(pair) for pair in result.bad_links)
        lines.append(f"Verdict: bad link(s) between {pairs} (each node passes with others).")
    elif len(result.checks) == 1 and len(result.nodes) == 2:
        lines.append("Verdict: the two nodes fail together; with two nodes faultlab cannot tell which one is "
                     "at fault: add a third node known to be good.")
    elif len(result.checks) == 1:
        lines.append("Verdict: the run across all nodes failed (pairs not checked: --pairs never).")
    else:
        lines.append("Verdict: failures not explained by one node or one link: see each check above.")
    lines.append(f"Recordings: {', '.join(check.recording.id for check in result.checks)}")
    return "\n".join(lines)
