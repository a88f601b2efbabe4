"""Preflight: the healthy experiment on a cluster's nodes, then on every pair to find the bad one.

The run across all N nodes shows whether the process group works at all (every rank must
hold N(N-1)/2 after its all_reduce). When it fails (or on request), every pair of nodes
runs it too: a node that fails in every pair it is in, while pairs without it pass, is
the bad node; a pair that fails while both its nodes pass elsewhere is a bad link. Each
check's ranks then run the all_reduce bandwidth sweep (lab/sweep.py), and groups far below
the others' bus bandwidth name a slow node or link (bandwidth.py). Every check is a
healthy recording of its topology on this cluster, stored; each failing one is read by
diagnose to say why.

Checks are sbatch jobs of their own, or job steps of an allocation the user holds (inside
salloc or an sbatch job, or --jobid). `local_check` runs the same on this host alone.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import tempfile
from pathlib import Path

from .. import bandwidth
from .. import diagnose as diagnoses
from .. import scenario as scenarios
from ..causes import CAUSES_BY_ID
from ..errors import BadInput
from ..lab.sweep import Sweep, SweepSettings, read_sweep
from ..launchers import LiveLauncher, LocalLauncher, RunOptions
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
    sweep: Sweep | None = None  # the bandwidth sweep rank 0 printed (None: none ran, or it failed first)

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
    judgement: bandwidth.Judgement = bandwidth.Judgement(None, (), (), ())  # of the groups' sweeps
    allocation: str | None = None  # the job whose steps the checks were, or None (jobs of their own)

    @property
    def healthy(self) -> bool:
        return all(check.healthy for check in self.checks)

    @property
    def passed(self) -> bool:
        """Every check healthy and no pair slow: the cluster is fit for the job."""
        return self.healthy and not self.judgement.slow_groups


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


def _check(store, launcher: LiveLauncher, group: tuple[str, ...], ranks_per_node: int, timeout_s: float,
           backend: str) -> Check:
    scenario = _scenario(len(group), ranks_per_node, timeout_s)
    with tempfile.TemporaryDirectory(prefix="faultlab-preflight-") as logs:
        recording = launcher.baseline(scenario, backend, store, RunOptions(fresh_baseline=True, keep_logs=Path(logs)))
        hosts = launcher.last_hosts if isinstance(launcher, SlurmLauncher) else dict(enumerate(group))
        why = "" if recording.reproduced else _why(Path(logs), hosts, recording.capture)
    first = next((rank for rank in recording.capture.ranks if rank.rank == 0), None)
    sweep = read_sweep(first.stdout, recording.capture.world_size) if first and launcher.sweep else None
    return Check(group, recording, phase_times(recording.capture), why, sweep)


def in_allocation(options: SlurmOptions) -> SlurmOptions:
    """Inside salloc or an sbatch job (SLURM_JOB_ID and SLURM_JOB_NODELIST set), checks are
    steps of that allocation unless --jobid names another."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if options.jobid or not job_id or not os.environ.get("SLURM_JOB_NODELIST"):
        return options
    return dataclasses.replace(options, jobid=job_id)


def nodes_to_check(options: SlurmOptions, nodes: str | None) -> tuple[str, ...]:
    """The nodes to check: of the allocation (steps), else of --nodelist, else the usable
    nodes of the partition; `nodes` takes the first N of them, or names them ('n1,n3', 'n[1-2]')."""
    if options.jobid:
        pool = scheduler.job_nodes(options.jobid)
        if options.nodelist:
            pool = [node for node in scheduler.expand_nodelist(options.nodelist) if node in pool]
    elif options.nodelist:
        pool = scheduler.expand_nodelist(options.nodelist)
    else:
        pool = scheduler.partition_nodes(options.partition)
    excluded = set(scheduler.expand_nodelist(options.exclude)) if options.exclude else set()
    pool = [node for node in pool if node not in excluded]
    where = f"allocation {options.jobid}" if options.jobid else "the nodes to check"
    if nodes and not nodes.isdigit():
        chosen = scheduler.expand_nodelist(nodes)
        outside = [node for node in chosen if node not in pool]
        if outside:
            raise BadInput(f"--nodes {nodes}: {', '.join(outside)} not in {where} ({', '.join(pool) or 'none'})")
        pool = list(dict.fromkeys(chosen))
    elif nodes:
        if int(nodes) > len(pool):
            raise BadInput(f"--nodes {nodes}: only {len(pool)} node(s) in {where} ({', '.join(pool)})")
        pool = pool[:int(nodes)]
    if len(pool) < 2:
        raise BadInput(f"preflight needs at least 2 nodes; found {len(pool)} ({', '.join(pool) or 'none'})")
    return tuple(pool)


def run(store, options: SlurmOptions, *, nodes: str | None, ranks_per_node: int, pairs: str,
        timeout_s: float, sweep: SweepSettings | None = None) -> Preflight:
    options = in_allocation(options)
    names = nodes_to_check(options, nodes)
    backend = "nccl" if options.gpus_per_node else "gloo"
    if backend == "nccl" and ranks_per_node > options.gpus_per_node:
        raise BadInput(f"--ranks-per-node {ranks_per_node} is more than --gpus-per-node {options.gpus_per_node}")

    def check(group: tuple[str, ...]) -> Check:
        launcher = SlurmLauncher(dataclasses.replace(options, nodelist=",".join(group), exclude=None))
        launcher.sweep = sweep
        return _check(store, launcher, group, ranks_per_node, timeout_s, backend)

    full = check(names)
    pair_checks: list[Check] = []
    if len(names) > 2 and (pairs == "always" or (pairs == "on-failure" and not full.healthy)):
        pair_checks = [check(pair) for pair in itertools.combinations(names, 2)]
    bad, links = isolate(names, pair_checks)
    checks = (full, *pair_checks)
    return Preflight(names, ranks_per_node, backend, checks, bad, links, _judge(names, checks), options.jobid)


def local_check(store, host, *, ranks: int, timeout_s: float, sweep: SweepSettings | None) -> Preflight:
    """The same check on this host alone: `ranks` ranks under torch's launcher, on nccl with
    a GPU for each, else gloo."""
    backend = "nccl" if host.gpus >= ranks else "gloo"
    launcher = LocalLauncher(host)
    launcher.sweep = sweep
    name = os.uname().nodename
    check = _check(store, launcher, (name,), ranks, timeout_s, backend)
    return Preflight((name,), ranks, backend, (check,), (), ())


def _judge(names: tuple[str, ...], checks: tuple[Check, ...]) -> bandwidth.Judgement:
    figures = {check.nodes: check.sweep.peak_busbw for check in checks
               if len(check.nodes) == 2 and check.healthy and check.sweep and check.sweep.peak_busbw is not None}
    return bandwidth.judge(names, figures)


def _sweep_dict(sweep: Sweep | None) -> dict | None:
    if sweep is None:
        return None
    return {"ranks": sweep.world, "ending": sweep.ending, "peak_algbw_gbps": sweep.peak_algbw,
            "peak_busbw_gbps": sweep.peak_busbw,
            "points": [{"bytes": point.bytes, "time_us": round(point.seconds * 1e6, 2),
                        "algbw_gbps": point.algbw(), "busbw_gbps": point.busbw(sweep.world)}
                       for point in sweep.points]}


def as_dict(result: Preflight) -> dict:
    judged = result.judgement
    return {
        "nodes": list(result.nodes), "ranks_per_node": result.ranks_per_node, "backend": result.backend,
        "allocation": result.allocation,
        "healthy": result.healthy, "bad_nodes": list(result.bad_nodes), "bad_links": [list(p) for p in result.bad_links],
        "bandwidth": {"reference_busbw_gbps": judged.reference, "slow_fraction": bandwidth.SLOW_FRACTION,
                      "slow_groups": [list(group) for group in judged.slow_groups],
                      "slow_nodes": list(judged.slow_nodes), "slow_links": [list(p) for p in judged.slow_links]},
        "checks": [{"nodes": list(check.nodes), "healthy": check.healthy, "recording": check.recording.id,
                    "verdict": _verdict(check.recording), "duration_s": check.recording.capture.duration_s,
                    "phases_s": check.phases, "why": check.why, "sweep": _sweep_dict(check.sweep)}
                   for check in result.checks],
    }


def _verdict(recording: Recording) -> str:
    """healthy, or what went wrong, from the check against itself (every rank must hold N(N-1)/2)."""
    from .. import compare, symptoms

    found = symptoms.match_capture(recording.capture)
    return compare.compare(recording.capture, found, recording.capture, found).verdict
