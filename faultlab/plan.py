"""Scenario -> LaunchPlan: the healthy launch of the topology, then each fault applied to it."""

from __future__ import annotations

import os

from . import experiment
from .errors import EnvironmentProblem
from .faults import FAULT_KINDS_BY_ID, NodeDraft, PlanDraft
from .launch import LaunchPlan, NodeLaunch
from .scenario import Scenario

# Every simulated node talks over loopback: name it, rather than let gloo resolve the host
# name (which may point at a LAN address) or NCCL skip "lo" as it does by default.
LOOPBACK_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
HOSTS_ENV = {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}  # simulated hosts' link
# Variables torch reads once, when it is imported: a worker forked from a launcher that
# imported torch without them would ignore them, so their runs start fresh interpreters.
IMPORT_TIME_ENV = ("TORCH_DISTRIBUTED_DEBUG", "TORCH_CPP_LOG_LEVEL", "TORCH_SHOW_CPP_STACKTRACES", "TORCH_LOGS")
# How long past the job's own timeout a run may go before faultlab calls it hung.
HANG_GRACE_S = 1.5
# Workers that start as fresh interpreters (CUDA) first import torch and create a context.
EXEC_STARTUP_ALLOWANCE_S = 20.0


def choose_backend(scenario: Scenario, host_gpus: int) -> str:
    """The backend a live run uses on a host with `host_gpus` GPUs.

    Raises EnvironmentProblem for a GPU scenario on a host with too few GPUs, or a
    simulated-hosts scenario where namespaces cannot be made: it is never run as something
    else under its name.
    """
    topology = scenario.topology
    if topology.hosts:
        from .netns import hosts_supported

        problem = hosts_supported()
        if problem:
            raise EnvironmentProblem(f"scenario {scenario.id!r}: {problem}")
    if topology.backend == "gloo":
        return "gloo"
    if topology.backend == "nccl":
        if host_gpus < scenario.requires_gpus:
            raise EnvironmentProblem(
                f"scenario {scenario.id!r} needs {scenario.requires_gpus} GPU(s) to run live on nccl; "
                f"this host has {host_gpus}"
            )
        return "nccl"
    wanted = topology.nodes * max(topology.gpus_per_node, topology.ranks_per_node)
    return "nccl" if host_gpus >= wanted else "gloo"


def gpus_on_host() -> int:
    """CUDA devices torch can see here (0 without a CUDA build). Imports torch."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


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


def _draft(scenario: Scenario, backend: str, healthy: bool, extra_env: dict[str, str] | None) -> PlanDraft:
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
        node.env.update(HOSTS_ENV if topology.hosts else LOOPBACK_ENV)
        node.env.update(scenario.env)
        node.env.update(extra_env or {})
    if not healthy:
        for fault in scenario.faults:
            FAULT_KINDS_BY_ID[fault.kind].apply(draft, fault.target, fault.params)
    return draft


def program_for(scenario: Scenario, backend: str, healthy: bool = False) -> str:
    """The program text a run of the scenario executes (renders without importing torch)."""
    draft = _draft(scenario, backend, healthy, None)
    return experiment.render_program(backend, scenario.timeout_s, tuple(draft.patches))


def build_plan(
    scenario: Scenario,
    backend: str,
    *,
    healthy: bool = False,
    host_gpus: int = 0,
    extra_env: dict[str, str] | None = None,
) -> LaunchPlan:
    """The launch of `scenario` on `backend`; `healthy` leaves every fault out (the baseline)."""
    draft = _draft(scenario, backend, healthy, extra_env)
    if backend == "nccl":
        if host_gpus < 1:
            raise EnvironmentProblem("the nccl backend needs a GPU; this host has none")
        for node, visible in zip(draft.nodes, _gpu_slices(len(draft.nodes), draft.gpus_per_node, host_gpus)):
            node.env.setdefault("CUDA_VISIBLE_DEVICES", visible)
    # CUDA cannot be initialized in a child forked from a process that imported torch.
    fork = backend == "gloo" and not any(
        key in node.env and os.environ.get(key) != node.env[key] for node in draft.nodes for key in IMPORT_TIME_ENV
    )
    startup = 0.0 if fork else EXEC_STARTUP_ALLOWANCE_S
    return LaunchPlan(
        backend=backend,
        program=experiment.render_program(backend, scenario.timeout_s, tuple(draft.patches)),
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
            )
            for index, node in enumerate(draft.nodes)
        ),
        timeout_s=scenario.timeout_s,
        deadline_s=(scenario.deadline_s or scenario.timeout_s + HANG_GRACE_S) + startup,
        occupy_master_port=draft.occupy_master_port,
        launcher=draft.launcher,
        worker_start="fork" if fork else "exec",
        hosts=scenario.topology.hosts,
        firewalls=tuple(draft.firewalls),
        link_downs=tuple(draft.link_downs),
    )
