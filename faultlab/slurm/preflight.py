"""Preflight: the healthy experiment on a cluster's nodes, then on every pair to find the bad one.

The run across all N nodes shows whether the process group works at all (every rank must
hold N(N-1)/2 after its all_reduce). When it fails (or on request), every pair of nodes
runs it too: a node that fails in every pair it is in, while pairs without it pass, is
the bad node; a pair that fails while both its nodes pass elsewhere is a bad link. Every
check is an ordinary healthy recording of its topology on this cluster, stored; each
failing one is read by diagnose to say why.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from pathlib import Path

from .. import diagnose as diagnoses
from .. import scenario as scenarios
from ..causes import CAUSES_BY_ID
from ..errors import BadInput
from ..launchers import RunOptions
from ..records import Capture, Recording
from ..scenario import Scenario, Topology
from . import scheduler
from .launcher import SlurmLauncher
from .options import SlurmOptions

PHASES = ("init", "all_reduce", "destroy")


@dataclasses.dataclass(frozen=True)
class Check:
    """The healthy experiment on one group of nodes."""

    nodes: tuple[str, ...]
    recording: Recording
    phases: dict[str, float | None]  # phase -> the slowest rank's seconds in it (None: no rank finished it)
    why: str  # '' when healthy; else diagnose's leading cause, and the line that shows it

    @property
    def healthy(self) -> bool:
        return self.recording.reproduced


@dataclasses.dataclass(frozen=True)
class Preflight:
    nodes: tuple[str, ...]
    ranks_per_node: int
    backend: str
    checks: tuple[Check, ...]  # the run across all nodes first, then the pairs
    bad_nodes: tuple[str, ...]
    bad_links: tuple[tuple[str, str], ...]

    @property
    def healthy(self) -> bool:
        return all(check.healthy for check in self.checks)


def phase_times(capture: Capture) -> dict[str, float | None]:
    """Per phase, the longest any rank spent in it (begin to end)."""
    times: dict[str, float | None] = {}
    for phase in PHASES:
        spans = []
        for rank in capture.ranks:
            begins = [event.t for event in rank.events if event.phase == f"{phase}_begin"]
            ends = [event.t for event in rank.events if event.phase == f"{phase}_end"]
            if begins and ends:
                spans.append(ends[0] - begins[0])
        complete = len(spans) == len(capture.ranks)
        times[phase] = round(max(spans), 3) if spans and complete else None
    return times


def isolate(nodes: tuple[str, ...], pair_checks: list[Check]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(bad nodes, bad links) from the pair checks. A node is bad when every pair it is in
    fails and some pair without it passes; a failing pair of two otherwise good nodes is a bad link."""
    failed = {check.nodes for check in pair_checks if not check.healthy}
    passed = {check.nodes for check in pair_checks if check.healthy}
    bad = tuple(node for node in nodes
                if passed and all(pair in failed for pair in pair_checks_with(node, pair_checks)))
    links = tuple(pair for pair in sorted(failed) if not set(pair) & set(bad))
    return bad, links


def pair_checks_with(node: str, pair_checks: list[Check]) -> list[tuple[str, ...]]:
    return [check.nodes for check in pair_checks if node in check.nodes]


def _scenario(nodes: int, ranks_per_node: int, timeout_s: float) -> Scenario:
    healthy = scenarios.resolve("healthy")
    return dataclasses.replace(healthy, id=f"preflight-{nodes}x{ranks_per_node}",
                               topology=Topology(nodes=nodes, ranks_per_node=ranks_per_node),
                               timeout_s=timeout_s, deadline_s=None)


def _why(logs: Path, hosts: dict[int, str], capture: Capture) -> str:
    """Diagnose's leading cause for a failed check, with the node and the line that shows it."""
    found = diagnoses.diagnose([logs])
    if not found.causes:
        return "no known signature in the logs" + (f": {found.error_lines[0].line}" if found.error_lines else "")
    cause = CAUSES_BY_ID[found.causes[0].cause]
    node_of_rank = {rank.shown_rank: rank.node for rank in capture.ranks}
    culprit_nodes = sorted({hosts.get(node_of_rank.get(rank), "?") for rank in found.culprits})
    line = next((item.line for item in found.evidence if item.rank in found.culprits), None)
    line = line or (found.evidence[0].line if found.evidence else "")
    where = f" on {', '.join(culprit_nodes)}" if culprit_nodes else ""
    return f"{cause.id}{where}: {line.strip()[:160]}"


def _check(store, options: SlurmOptions, group: tuple[str, ...], ranks_per_node: int, timeout_s: float,
           backend: str) -> Check:
    launcher = SlurmLauncher(dataclasses.replace(options, nodelist=",".join(group), exclude=None))
    scenario = _scenario(len(group), ranks_per_node, timeout_s)
    with tempfile.TemporaryDirectory(prefix="faultlab-preflight-") as logs:
        recording = launcher.baseline(scenario, backend, store, RunOptions(fresh_baseline=True, keep_logs=Path(logs)))
        why = "" if recording.reproduced else _why(Path(logs), launcher.last_hosts, recording.capture)
    return Check(group, recording, phase_times(recording.capture), why)


def nodes_to_check(options: SlurmOptions, count: int | None) -> tuple[str, ...]:
    """The nodes of --nodelist, else the usable nodes of the partition; the first `count`."""
    nodes = scheduler.expand_nodelist(options.nodelist) if options.nodelist else scheduler.partition_nodes(options.partition)
    excluded = set(scheduler.expand_nodelist(options.exclude)) if options.exclude else set()
    nodes = [node for node in nodes if node not in excluded]
    if count:
        if count > len(nodes):
            raise BadInput(f"--nodes {count}: only {len(nodes)} node(s) to check ({', '.join(nodes)})")
        nodes = nodes[:count]
    if len(nodes) < 2:
        raise BadInput(f"preflight needs at least 2 nodes; found {len(nodes)} ({', '.join(nodes) or 'none'})")
    return tuple(nodes)


def run(store, options: SlurmOptions, *, nodes: int | None, ranks_per_node: int, pairs: str,
        timeout_s: float) -> Preflight:
    names = nodes_to_check(options, nodes)
    backend = "nccl" if options.gpus_per_node else "gloo"
    if backend == "nccl" and ranks_per_node > options.gpus_per_node:
        raise BadInput(f"--ranks-per-node {ranks_per_node} is more than --gpus-per-node {options.gpus_per_node}")
    full = _check(store, options, names, ranks_per_node, timeout_s, backend)
    pair_checks: list[Check] = []
    if len(names) > 2 and (pairs == "always" or (pairs == "on-failure" and not full.healthy)):
        for pair in itertools.combinations(names, 2):
            pair_checks.append(_check(store, options, pair, ranks_per_node, timeout_s, backend))
    bad, links = isolate(names, pair_checks)
    return Preflight(names, ranks_per_node, backend, (full, *pair_checks), bad, links)


def as_dict(result: Preflight) -> dict:
    return {
        "nodes": list(result.nodes), "ranks_per_node": result.ranks_per_node, "backend": result.backend,
        "healthy": result.healthy, "bad_nodes": list(result.bad_nodes), "bad_links": [list(p) for p in result.bad_links],
        "checks": [{"nodes": list(check.nodes), "healthy": check.healthy, "recording": check.recording.id,
                    "verdict": _verdict(check.recording), "duration_s": check.recording.capture.duration_s,
                    "phases_s": check.phases, "why": check.why} for check in result.checks],
    }


def _verdict(recording: Recording) -> str:
    """healthy, or what went wrong, from the check against itself (every rank must hold N(N-1)/2)."""
    from .. import compare, symptoms

    found = symptoms.match_capture(recording.capture)
    return compare.compare(recording.capture, found, recording.capture, found).verdict
