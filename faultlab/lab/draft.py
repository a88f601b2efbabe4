"""The launch as it is being built: the healthy plan of a topology, then each fault applied.

Fault kinds (faults.py) edit a PlanDraft; `plan.build_plan` freezes it into a LaunchPlan.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from .program import CodePatch


@dataclasses.dataclass
class NodeDraft:
    node_rank: int
    nnodes: int
    nproc_per_node: int
    master_port_offset: int = 0
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    worker_port_offsets: dict[int, int] = dataclasses.field(default_factory=dict)
    master_addr: str | None = None
    start_delay_s: float = 0.0  # the node's launcher starts this long after the others
    # 0: the scenario's job; 1: another job launched on the same hosts (its node N on node N's host).
    job: int = 0
    host: int | None = None  # the simulated host it runs on; None: its own index in the plan
    rdzv_id: str | None = None  # --rdzv_id; None: one id for every job of the run, as torchrun's default 'none' is


@dataclasses.dataclass
class PlanDraft:
    """The launch as it is being built: the healthy plan, then each fault applied in turn."""

    backend: str
    ranks_per_node: int
    gpus_per_node: int  # the GPUs each simulated node exposes (CUDA_VISIBLE_DEVICES)
    nodes: list[NodeDraft]
    patches: list[CodePatch] = dataclasses.field(default_factory=list)
    occupy_master_port: bool = False
    launcher: Literal["torchrun", "python"] = "torchrun"
    # Changes to the simulated hosts' network (topology hosts: true).
    firewalls: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)
    link_downs: list[tuple[int, float]] = dataclasses.field(default_factory=list)
    host_sysctls: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)  # (node, name, value)
    # Nodes that vanish while the job runs: (node, seconds after its ranks finished init).
    node_losses: list[tuple[int, float]] = dataclasses.field(default_factory=list)

    def slot_of_rank(self, rank: int) -> tuple[NodeDraft, int]:
        node_index, local_rank = divmod(rank, self.ranks_per_node)
        return self.nodes[node_index], local_rank


TargetKind = Literal["job", "node", "rank"]


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a fault applies: the whole job, one node (plan index), or one global rank."""

    kind: TargetKind
    index: int = 0

    def describe(self) -> str:
        return "the whole job" if self.kind == "job" else f"{self.kind} {self.index}"
