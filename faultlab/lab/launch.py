"""LaunchPlan -> processes, through torch's own elastic launcher, and back to a Capture.

One launcher agent per simulated node (agent.py), each in its own process group with its
own environment. On gloo the agents and workers are forked from this process after torch
is imported once (the expensive part of every torchrun start); with CUDA every worker is a
fresh interpreter. The launch owns the run's temp directory, its network (a private
namespace, or simulated hosts) and its deadline; supervise.py ends every process before
`launch` returns, at the deadline, on error and on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
import uuid
from pathlib import Path

from ..errors import EnvironmentProblem, Interrupted, Terminated
from ..flight_recorder import dumper as flight_recorder
from ..records import Capture
from . import netns
from .agent import run_node_agent
from .capture import LaunchOutcome, read_capture
from .plan import LOOPBACK, LaunchPlan
from .rundir import RunDir
from .supervise import RunProcesses, remove_orphaned_run_dirs, sigterm_as_interrupt

# Past the deadline, a launcher whose workers have all ended may still be writing its
# failure report (torch imports its log formatter's dependencies on the first error).
LAUNCHER_WRAPUP_S = 10.0
TORCHRUN_DEFAULT_PORT = 29500  # simulated hosts have their own ports: use torchrun's default
EVIDENCE_AT_S = 1.0  # when each simulated host's addresses, ports and rules are read


def pick_master_port(offsets: set[int]) -> int:
    """A port free on loopback such that port + every offset is free too."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((LOOPBACK, 0))
            port = probe.getsockname()[1]
        if all(_port_is_free(port + offset) for offset in offsets if offset):
            return port
    raise EnvironmentProblem("no free loopback port found for MASTER_PORT after 50 tries")


def _port_is_free(port: int) -> bool:
    if not 0 < port < 65536:
        return False
    with socket.socket() as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _port_offsets(plan: LaunchPlan) -> set[int]:
    offsets = {node.master_port_offset for node in plan.nodes}
    return offsets | {offset for node in plan.nodes for _, offset in node.worker_port_offsets}


def launch(plan: LaunchPlan, keep_logs: Path | None = None) -> Capture:
    """Run the plan to its end or its deadline and return what it left behind."""
    import multiprocessing

    import torch.distributed  # noqa: F401  imported once here, inherited by every fork
    import torch.distributed.launcher.api  # noqa: F401

    run_id = uuid.uuid4().hex[:12]
    remove_orphaned_run_dirs()
    run_dir = RunDir.create(run_id)
    run_dir.program.write_text(plan.program, encoding="utf-8")
    processes = RunProcesses(run_id, run_dir)
    forker = multiprocessing.get_context("fork")
    try:
        with sigterm_as_interrupt(), _network(plan, run_id) as (network, hosts):
            master_port = TORCHRUN_DEFAULT_PORT if hosts else pick_master_port(_port_offsets(plan))
            if hosts:
                hosts.apply_firewalls(plan.firewalls, master_port)
                hosts.apply_sysctls(plan.host_sysctls)
            squatter = socket.create_server((LOOPBACK, master_port)) if plan.occupy_master_port else None
            try:
                t0 = time.time()
                for node in plan.nodes:
                    namespace = hosts.path(node.host) if hosts else None
                    agent = forker.Process(target=run_node_agent, name=f"faultlab-node{node.index}",
                                           args=(plan, node, master_port, run_dir, run_id, namespace))
                    agent.start()
                    processes.agents.append(agent)
                evidence: dict[int, str] = {}
                hit_deadline = _wait_for_agents(processes, plan, t0, hosts, evidence)
                end_t = time.time() - t0
                if hit_deadline:
                    _ask_for_dumps(plan, run_dir)
                if hosts and not evidence:
                    evidence.update(hosts.evidence_of_all())
                processes.kill_all()
            finally:
                if squatter is not None:
                    squatter.close()
        outcome = LaunchOutcome(t0=t0, end_t=end_t, hit_deadline=hit_deadline, master_port=master_port,
                                agent_exits=processes.exit_codes(), agent_exit_times=dict(processes.exit_times),
                                network=network, evidence=evidence)
        return read_capture(plan, run_dir, outcome)
    except KeyboardInterrupt as stop:
        raise Interrupted("interrupted: every process of the run was stopped",
                          by_sigterm=isinstance(stop, Terminated)) from None
    finally:
        processes.kill_all()
        if keep_logs is not None:
            run_dir.keep(keep_logs)
        run_dir.remove()


@contextlib.contextmanager
def _network(plan: LaunchPlan, run_id: str):
    """(description, SimulatedHosts or None) for the run's lifetime."""
    if plan.hosts:
        with netns.SimulatedHosts(run_id, plan.host_count) as hosts:
            yield (netns.SIMULATED_HOSTS, hosts)
    else:
        with netns.private_loopback() as network:
            yield (network, None)


class _NodeLosses:
    """Nodes the plan loses mid-job: each is killed `after_s` once all its ranks finished init."""

    def __init__(self, plan: LaunchPlan, processes: RunProcesses) -> None:
        self.pending = {node: after_s for node, after_s in plan.node_losses}
        self.ready_at: dict[int, float] = {}
        self.ranks = {node.index: node.nproc_per_node for node in plan.nodes}
        self.processes = processes

    def check(self) -> None:
        now = time.monotonic()
        for node, after_s in list(self.pending.items()):
            if node not in self.ready_at and self.processes.run_dir.count_reached(node, "init_end") >= self.ranks[node]:
                self.ready_at[node] = now
            if node in self.ready_at and now - self.ready_at[node] >= after_s:
                self.processes.kill_node(node)
                del self.pending[node]


def _wait_for_agents(processes: RunProcesses, plan: LaunchPlan, t0: float, hosts, evidence: dict) -> bool:
    """Wait until every launcher has exited; True if the deadline came first (a hang).
    Meanwhile take links down when the plan says, and read the hosts' network state."""
    deadline = time.monotonic() + plan.deadline_s
    pending_downs = sorted(plan.link_downs, key=lambda item: item[1])
    losses = _NodeLosses(plan, processes)
    while not processes.all_exited():
        elapsed = time.time() - t0
        while hosts and pending_downs and elapsed >= pending_downs[0][1]:
            hosts.set_link(pending_downs.pop(0)[0], up=False)
        losses.check()
        if hosts and not evidence and elapsed >= EVIDENCE_AT_S:
            evidence.update(hosts.evidence_of_all())
        now = time.monotonic()
        if now >= deadline and (now >= deadline + LAUNCHER_WRAPUP_S or processes.still_working()):
            break
        processes.note_exits(time.time() - t0)
        time.sleep(0.02)
    processes.note_exits(time.time() - t0)
    return not processes.all_exited()


def _ask_for_dumps(plan: LaunchPlan, run_dir: RunDir) -> None:
    """At the deadline, before the kill: every live worker that can answer writes its Flight
    Recorder dump; the state each was in is noted (a stopped one cannot answer)."""
    workers = []
    for node in plan.nodes:
        for slot, pid in run_dir.started_workers(node.index):
            try:
                ready = flight_recorder.READY_EVENT in slot.events.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if ready:  # it takes the request on a thread of its own; without one it would die of it
                workers.append((pid, slot.flight_recorder))
    states = flight_recorder.request_dumps(workers)
    run_dir.dump_requests.write_text(json.dumps({str(pid): state for pid, state in states.items()}), encoding="utf-8")
