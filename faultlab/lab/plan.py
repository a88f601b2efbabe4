"""Scenario -> LaunchPlan: the healthy launch of the topology, then each fault applied to it.

The plan owns its types: what the launch executes is data, built here and nowhere else."""

from __future__ import annotations

import dataclasses
import os

from ..errors import EnvironmentProblem
from ..faults import FAULT_KINDS_BY_ID
from ..scenario import Scenario
from . import netns
from .draft import NodeDraft, PlanDraft
from .program import PROGRAM_NAME, render_program
from .sweep import SweepSettings
from .sweep import patch as sweep_patch

LOOPBACK = "127.0.0.1"

# Every simulated node talks over loopback: name it, rather than let gloo resolve the host
# name (which may point at a LAN address) or NCCL skip "lo" as it does by default.
LOOPBACK_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
HOSTS_ENV = {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}  # simulated hosts' link
# Every run keeps PyTorch's Flight Recorder on (the last 2000 collectives of each rank, as
# torch's docs suggest), so every recording carries each rank's dump.
FLIGHT_RECORDER_ENV = "TORCH_FR_BUFFER_SIZE"
FLIGHT_RECORDER_BUFFER = "2000"
# Variables torch reads once, when it is imported: a worker forked from a launcher that
# imported torch without them would ignore them, so their runs start fresh interpreters.
IMPORT_TIME_ENV = ("TORCH_DISTRIBUTED_DEBUG", "TORCH_CPP_LOG_LEVEL", "TORCH_SHOW_CPP_STACKTRACES", "TORCH_LOGS")
# How long past the job's own timeout a run may go before faultlab calls it hung.
HANG_GRACE_S = 1.5
# Workers that start as fresh interpreters (CUDA) first import torch and create a context.
EXEC_STARTUP_ALLOWANCE_S = 20.0


@dataclasses.dataclass(frozen=True)
class NodeLaunch:
    """How one simulated node's launcher is started: its torchrun arguments and environment."""

    index: int
    node_rank: int  # --node_rank
    nnodes: int  # --nnodes
    nproc_per_node: int  # --nproc_per_node
    master_port_offset: int = 0  # --master_port = the job's port + this
    env: tuple[tuple[str, str], ...] = ()  # extra environment of this node's launcher
    worker_port_offsets: tuple[tuple[int, int], ...] = ()  # (local_rank, offset) on MASTER_PORT
    master_addr: str | None = None  # --master_addr, where it differs from the job's
    start_delay_s: float = 0.0  # the launcher starts this long after the others
    job: int = 0  # 0: the scenario's job; 1: another job sharing its hosts
    host: int = 0  # the simulated host it runs on (with hosts: true)
    rdzv_id: str | None = None  # --rdzv_id; None: one id for every job, as torchrun's default 'none' is


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    backend: str  # "gloo" or "nccl"
    program: str  # the source every worker runs
    nodes: tuple[NodeLaunch, ...]
    timeout_s: float  # the process-group and rendezvous timeout of the job
    deadline_s: float  # faultlab kills everything this long after the launch began
    occupy_master_port: bool = False  # another process already listens on MASTER_PORT
    launcher: str = "torchrun"  # "python": each node runs the script itself, no launcher
    # "fork": workers are forked from a launcher that imported torch once (fast);
    # "exec": every worker is a fresh interpreter, as under torchrun (needed for CUDA).
    worker_start: str = "fork"
    # Simulated hosts: every node in a network namespace of its own (netns.SimulatedHosts),
    # with these changes to the network, as (node, ...) tuples.
    hosts: bool = False
    firewalls: tuple[tuple[int, str, str], ...] = ()  # (node, "master" | "data", "drop" | "reject")
    link_downs: tuple[tuple[int, float], ...] = ()  # (node, seconds after launch)
    host_sysctls: tuple[tuple[int, str, str], ...] = ()  # (node, name, value) inside that host's namespace
    # (node, seconds): the node's launcher and workers are SIGKILLed this long after its ranks
    # finished init, as a host that loses power or is preempted.
    node_losses: tuple[tuple[int, float], ...] = ()

    def master_addr(self, node: NodeLaunch) -> str:
        default = netns.host_address(0) if self.hosts else LOOPBACK
        return node.master_addr or default

    def local_addr(self, node: NodeLaunch) -> str:
        return netns.host_address(node.host) if self.hosts else LOOPBACK

    @property
    def host_count(self) -> int:
        return len({node.host for node in self.nodes})

    @property
    def world_size(self) -> int:
        """The scenario's job's ranks (another job on its hosts has a world of its own)."""
        return sum(node.nproc_per_node for node in self.nodes if node.job == 0)

    def store_host(self, node: NodeLaunch) -> NodeLaunch:
        """The launcher whose TCPStore this node's workers reach: of the launchers with node rank
        0 dialed at the same address, the one that starts first (it binds the port)."""
        hosts = [other for other in self.nodes
                 if other.node_rank == 0 and self.master_addr(other) == self.master_addr(node)
                 and other.master_port_offset == node.master_port_offset]
        return min(hosts, key=lambda other: other.start_delay_s) if hosts else self.nodes[0]

    @property
    def fork_workers(self) -> bool:
        return self.worker_start == "fork"

    def command_line(self, node: NodeLaunch, master_port: int) -> str:
        """The command line this node's launch stands for, with the environment the scenario set."""
        env = " ".join(f"{key}={value}" for key, value in node.env if key != "CUDA_VISIBLE_DEVICES" or self.backend == "nccl")
        prefix = f"{env} " if env else ""
        if self.launcher == "python":
            return f"{prefix}python {PROGRAM_NAME}"
        where = f"[host {self.local_addr(node)}] " if self.hosts else ""
        job = "[another job] " if node.job else ""
        rdzv_id = f"--rdzv_id={node.rdzv_id} " if node.rdzv_id else ""
        return (
            f"{where}{job}{prefix}torchrun --nnodes={node.nnodes} --nproc_per_node={node.nproc_per_node} "
            f"--node_rank={node.node_rank} --master_addr={self.master_addr(node)} "
            f"--master_port={master_port + node.master_port_offset} {rdzv_id}{PROGRAM_NAME}"
        )


def _gpu_slices(nodes: int, gpus_per_node: int, host_gpus: int) -> list[str]:
    """CUDA_VISIBLE_DEVICES of each simulated node: its own GPUs while the host has enough,
    shared round-robin where it has fewer (as one GPU host simulating two 1-GPU nodes)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    physical = visible.split(",") if visible else [str(index) for index in range(max(host_gpus, 1))]
    slices = []
    for node in range(nodes):
        ids = [physical[(node * gpus_per_node + local) % len(physical)] for local in range(gpus_per_node)]
        slices.append(",".join(dict.fromkeys(ids)))
    return slices


def _draft(scenario: Scenario, backend: str, healthy: bool, extra_env: dict[str, str] | None,
           cluster_env: dict[str, str] | None = None) -> PlanDraft:
    """The healthy launch of the topology, then (unless `healthy`) every fault applied to it."""
    topology = scenario.topology
    draft = PlanDraft(
        backend=backend,
        ranks_per_node=topology.ranks_per_node,
        gpus_per_node=topology.gpus_per_node or topology.ranks_per_node,
        nodes=[
            NodeDraft(node_rank=index, nnodes=topology.nodes, nproc_per_node=topology.ranks_per_node)
            for index in range(topology.nodes)
        ],
    )
    for node in draft.nodes:
        if cluster_env is not None:
            node.env.update(cluster_env)
        else:
            node.env.update(HOSTS_ENV if topology.hosts else LOOPBACK_ENV)
        node.env[FLIGHT_RECORDER_ENV] = FLIGHT_RECORDER_BUFFER  # a scenario's env may change it
        node.env.update(scenario.env)
        node.env.update(extra_env or {})
    if not healthy:
        for fault in scenario.faults:
            FAULT_KINDS_BY_ID[fault.kind].apply(draft, fault.target, fault.params)
    return draft


def program_for(scenario: Scenario, backend: str, healthy: bool = False) -> str:
    """The program text a run of the scenario executes (renders without importing torch)."""
    draft = _draft(scenario, backend, healthy, None)
    return render_program(backend, scenario.timeout_s, tuple(draft.patches))


def build_plan(
    scenario: Scenario,
    backend: str,
    *,
    healthy: bool = False,
    host_gpus: int = 0,
    extra_env: dict[str, str] | None = None,
    cluster_env: dict[str, str] | None = None,
    sweep: SweepSettings | None = None,
) -> LaunchPlan:
    """The launch of `scenario` on `backend`; `healthy` leaves every fault out (the baseline).

    `cluster_env`, for nodes of a real cluster: every node's environment instead of this
    machine's loopback; the scheduler gives each node its GPUs, and every worker is a fresh
    interpreter started by torchrun. `sweep` adds the all_reduce bandwidth sweep to the
    program (healthy or not) and its time budget to the deadline."""
    draft = _draft(scenario, backend, healthy, extra_env, cluster_env)
    patches = tuple(draft.patches) + ((sweep_patch(sweep),) if sweep else ())
    if backend == "nccl" and cluster_env is None:
        if host_gpus < 1:
            raise EnvironmentProblem("the nccl backend needs a GPU; this host has none")
        for node, visible in zip(draft.nodes, _gpu_slices(len(draft.nodes), draft.gpus_per_node, host_gpus)):
            node.env.setdefault("CUDA_VISIBLE_DEVICES", visible)
    # CUDA cannot be initialized in a child forked from a process that imported torch.
    fork = backend == "gloo" and cluster_env is None and not any(
        key in node.env and os.environ.get(key) != node.env[key] for node in draft.nodes for key in IMPORT_TIME_ENV
    )
    startup = 0.0 if fork else EXEC_STARTUP_ALLOWANCE_S
    return LaunchPlan(
        backend=backend,
        program=render_program(backend, scenario.timeout_s, patches),
        nodes=tuple(
            NodeLaunch(
                index=index,
                node_rank=node.node_rank,
                nnodes=node.nnodes,
                nproc_per_node=node.nproc_per_node,
                master_port_offset=node.master_port_offset,
                env=tuple(sorted(node.env.items())),
                worker_port_offsets=tuple(sorted(node.worker_port_offsets.items())),
                master_addr=node.master_addr,
                start_delay_s=node.start_delay_s,
                job=node.job,
                host=index if node.host is None else node.host,
                rdzv_id=node.rdzv_id,
            )
            for index, node in enumerate(draft.nodes)
        ),
        timeout_s=scenario.timeout_s,
        deadline_s=(scenario.deadline_s or scenario.timeout_s + HANG_GRACE_S) + startup
        + max(node.start_delay_s for node in draft.nodes) + (sweep.seconds if sweep else 0.0),
        occupy_master_port=draft.occupy_master_port,
        launcher=draft.launcher,
        worker_start="fork" if fork else "exec",
        hosts=scenario.topology.hosts,
        firewalls=tuple(draft.firewalls),
        link_downs=tuple(draft.link_downs),
        host_sysctls=tuple(draft.host_sysctls),
        node_losses=tuple(draft.node_losses),
    )
