"""The registry of fault kinds: what each one changes, where it is live, which cause it stands for.

A fault changes either the launch (a node's or a rank's launch arguments and environment)
or the program (a code patch at a named injection point of the seed program). Kinds apply
themselves to a PlanDraft, which `lab.plan.build_plan` turns into a LaunchPlan.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Literal

from . import identity
from . import fault_edits as edits
from .lab.draft import PlanDraft, Target, TargetKind
from .textsafe import excerpt

MAX_PORT_OFFSET = 1000  # MASTER_PORT + offset stays a port of this machine's ephemeral range
MAX_SECONDS = 600.0  # no longer than the longest timeout a scenario may have
MAX_RANKS_PER_NODE = 64  # as the topology's bound
MAX_NODES = 16
MAX_GPUS_PER_NODE = 16
MAX_NUMEL = 1 << 20  # elements of the all_reduce tensor: 4 MB of float32

@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a fault kind, with the values that make physical sense: a number's
    range (low..high), a name's shape, or a list of choices."""

    name: str
    type: type
    default: object
    help: str
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    shape: tuple[re.Pattern, str] | None = None  # (pattern, what it is, in words)

    def problem(self, value) -> str | None:
        """Why `value` (already of the right type) cannot be this parameter; None if it can."""
        if self.choices and value not in self.choices:
            return f"{excerpt(value)} is not one of {', '.join(map(repr, self.choices))}"
        if self.low is not None and not identity.in_range(value, self.low, self.high):
            return f"{excerpt(value)} is outside {self.low:g}..{self.high:g}"
        if self.shape is not None and not identity.matches(self.shape[0], value):
            return f"{excerpt(value)} is not {self.shape[1]}"
        return None


@dataclasses.dataclass(frozen=True)
class FaultKind:
    id: str
    summary: str
    cause: str  # id in the cause catalog
    layer: Literal["launch", "code"]
    targets: tuple[TargetKind, ...]
    apply: Callable[[PlanDraft, Target, dict], None]
    params: tuple[Param, ...] = ()
    gpu_only: bool = False  # physically needs CUDA devices to mean anything
    needs_hosts: bool = False  # only exists between simulated hosts (topology hosts: true)
    needs_commands: tuple[str, ...] = ()  # system commands applying it needs (e.g. nft)


FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        id="master-port-offset",
        summary="A node's launcher (or one rank's environment) uses MASTER_PORT + offset.",
        cause="wrong-master-port",
        layer="launch",
        targets=("node", "rank"),
        apply=edits.master_port_offset,
        params=(Param("offset", int, 1, "added to the job's MASTER_PORT", low=-MAX_PORT_OFFSET, high=MAX_PORT_OFFSET),),
    ),
    FaultKind(
        id="port-in-use",
        summary="Another process already listens on MASTER_PORT when the job starts.",
        cause="port-in-use",
        layer="launch",
        targets=("job",),
        apply=edits.port_in_use,
    ),
    FaultKind(
        id="skip-set-device",
        summary="The program never calls torch.cuda.set_device(local_rank).",
        cause="missing-set-device",
        layer="code",
        targets=("job",),
        apply=edits.skip_set_device,
        gpu_only=True,
    ),
    FaultKind(
        id="rank-as-device",
        summary="The program calls torch.cuda.set_device(rank) instead of local_rank.",
        cause="rank-as-device-id",
        layer="code",
        targets=("job",),
        apply=edits.rank_as_device,
        gpu_only=True,
    ),
    FaultKind(
        id="skip-destroy",
        summary="The program never calls destroy_process_group().",
        cause="missing-destroy-process-group",
        layer="code",
        targets=("job",),
        apply=edits.skip_destroy,
        params=(Param("reinit", bool, True, "initialize the process group again afterwards, as a second phase would"),),
    ),
    FaultKind(
        id="socket-ifname",
        summary="A node's GLOO_/NCCL_SOCKET_IFNAME names an interface the host lacks.",
        cause="wrong-socket-interface",
        layer="launch",
        targets=("node", "job"),
        apply=edits.socket_ifname,
        params=(
            Param("ifname", str, "eth9", "the interface name set", shape=(identity.INTERFACE, "an interface name")),
            Param("variable", str, "", "GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME (default: the backend's)",
                  ("", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")),
        ),
    ),
    FaultKind(
        id="launch-nproc",
        summary="A node's launcher is given another --nproc_per_node.",
        cause="world-size-mismatch",
        layer="launch",
        targets=("node",),
        apply=edits.launch_nproc,
        params=(Param("nproc_per_node", int, 1, "the --nproc_per_node this node is launched with", low=1, high=MAX_RANKS_PER_NODE),),
    ),
    FaultKind(
        id="duplicate-node-rank",
        summary="A node is launched with a --node_rank another node already has.",
        cause="duplicate-node-rank",
        layer="launch",
        targets=("node",),
        apply=edits.duplicate_node_rank,
        params=(Param("node_rank", int, 0, "the --node_rank this node is launched with", low=0, high=MAX_NODES - 1),),
    ),
    FaultKind(
        id="crash-before-collective",
        summary="One rank dies before all_reduce: an exception, or SIGKILL as the OOM killer sends.",
        cause="rank-crash",
        layer="code",
        targets=("rank",),
        apply=edits.crash,
        params=(Param("mode", str, "exception", "how the rank dies", ("exception", "sigkill")),),
    ),
    FaultKind(
        id="slow-rank",
        summary="One rank (or every rank) does slow extra work before init or before the collective.",
        cause="straggler-rank",
        layer="code",
        targets=("rank", "job"),
        apply=edits.slow_rank,
        params=(
            Param("seconds", float, 10.0, "how long the extra work takes", low=0, high=MAX_SECONDS),
            Param("where", str, "collective", "before 'init' or before the 'collective'", ("init", "collective")),
            Param("work", str, "validation pass", "what the extra work is, as the code comment says",
                  shape=(identity.PHRASE, "a short phrase (letters, digits, spaces, , . ( ) / _ -)")),
        ),
    ),
    FaultKind(
        id="freeze-rank",
        summary="After a training step, one rank's process is stopped (SIGSTOP): alive, silent, holding the others.",
        cause="frozen-rank",
        layer="code",
        targets=("rank",),
        apply=edits.freeze_rank,
    ),
    FaultKind(
        id="extra-collective",
        summary="After a training step, one rank runs a validation all_reduce the others skip.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=edits.extra_collective,
    ),
    FaultKind(
        id="swap-collectives",
        summary="One rank issues broadcast then all_reduce; every other rank all_reduce then broadcast.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=edits.swap_collectives,
    ),
    FaultKind(
        id="busy-rank",
        summary="After a training step, one rank computes for a long time outside any collective.",
        cause="straggler-rank",
        layer="code",
        targets=("rank",),
        apply=edits.busy_rank,
        params=(
            Param("seconds", float, 60.0, "how long it computes"),
            Param("work", str, "re-ranking the eval set", "what the computation is, as the code comment says"),
        ),
    ),
    FaultKind(
        id="plain-python",
        summary="Every node runs the script with plain python instead of torchrun.",
        cause="no-launcher",
        layer="launch",
        targets=("job",),
        apply=edits.plain_python,
    ),
    FaultKind(
        id="shape-mismatch",
        summary="One rank all-reduces a tensor of another shape.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=edits.shape_mismatch,
        params=(Param("numel", int, 2, "elements in that rank's tensor", low=1, high=MAX_NUMEL),),
    ),
    FaultKind(
        id="skip-collective",
        summary="One rank takes a branch that skips the all_reduce.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=edits.skip_collective,
    ),
    FaultKind(
        id="reduce-op",
        summary="The all_reduce uses another reduce op than SUM.",
        cause="wrong-reduce-op",
        layer="code",
        targets=("job",),
        apply=edits.reduce_op,
        params=(Param("op", str, "MAX", "the ReduceOp used", ("MAX", "MIN", "PRODUCT", "BAND", "BOR")),),
    ),
    FaultKind(
        id="force-backend",
        summary="The program hard-codes a backend regardless of the host.",
        cause="nccl-without-gpu",
        layer="code",
        targets=("job",),
        apply=edits.force_backend,
        params=(Param("backend", str, "nccl", "the backend hard-coded", ("nccl", "gloo")),),
    ),
    FaultKind(
        id="visible-gpus",
        summary="Each node exposes fewer GPUs (CUDA_VISIBLE_DEVICES) than it runs ranks.",
        cause="too-few-gpus",
        layer="launch",
        targets=("job",),
        apply=edits.visible_gpus,
        params=(Param("count", int, 1, "GPUs visible on each node", low=0, high=MAX_GPUS_PER_NODE),),
        gpu_only=True,
    ),
    FaultKind(
        id="wrong-master-addr",
        summary="A node's launcher is given a --master_addr where no host answers.",
        cause="wrong-master-addr",
        layer="launch",
        targets=("node",),
        apply=edits.wrong_master_addr,
        needs_hosts=True,
    ),
    FaultKind(
        id="own-master",
        summary="A node (or every node) is launched as its own master: --node_rank=0 and "
        "--master_addr=localhost, so it hosts a store of its own and waits there for the others.",
        cause="split-world",
        layer="launch",
        targets=("node", "job"),
        apply=edits.own_master,
        needs_hosts=True,
    ),
    FaultKind(
        id="late-start",
        summary="A node's launcher starts seconds after the others (slow boot, image pull, a queue).",
        cause="late-store-host",
        layer="launch",
        targets=("node",),
        apply=edits.late_start,
        params=(Param("seconds", float, 3.0, "how long after the others the node's launcher starts"),),
    ),
    FaultKind(
        id="node-lost",
        summary="A node vanishes mid-job: its launcher and workers are SIGKILLed after init, as a host "
        "that loses power or is preempted.",
        cause="store-host-lost",
        layer="launch",
        targets=("node",),
        apply=edits.node_lost,
        params=(
            Param("after_s", float, 1.0, "seconds after the node's ranks finished init"),
            Param("step_s", float, 4.0, "the training step every rank runs between init and all_reduce"),
        ),
    ),
    FaultKind(
        id="other-job",
        summary="Another job of the same script and shape runs on the same hosts with the same "
        "MASTER_ADDR:MASTER_PORT, started seconds before this one (a sweep's sibling, both on the default port).",
        cause="shared-master-port",
        layer="launch",
        targets=("job",),
        apply=edits.other_job,
        params=(
            Param("lead_s", float, 2.0, "how long before this job the other job's launchers start", low=0, high=60),
            Param("step_s", float, 4.0, "the training step both jobs run between init and all_reduce",
                  low=0, high=MAX_SECONDS),
            Param("rdzv_id", str, "default", "'default': neither job passes --rdzv_id, so both run under "
                  "torchrun's default id and share the store's keys; 'per-job': each passes its own",
                  ("default", "per-job")),
        ),
        needs_hosts=True,
    ),
    FaultKind(
        id="listen-backlog",
        summary="A host's listen backlog (net.core.somaxconn, in its own namespace) is smaller than "
        "the ranks that connect to its store at once.",
        cause="listen-backlog-overflow",
        layer="launch",
        targets=("node",),
        apply=edits.listen_backlog,
        params=(
            Param("somaxconn", int, 4, "the host's net.core.somaxconn"),
            Param("overflow", str, "drop", "what the kernel does with a connection the full queue cannot take: "
                  "'drop' (Linux's default: the client retransmits its SYN after 1 s) or 'reset' "
                  "(net.ipv4.tcp_abort_on_overflow=1: a reset at once)", ("drop", "reset")),
        ),
        needs_hosts=True,
    ),
    FaultKind(
        id="firewall",
        summary="A host's firewall drops or rejects new connections: to MASTER_PORT (on the master's "
        "host), or to every other port (the data plane) on the target host.",
        cause="firewall",
        layer="launch",
        targets=("node",),
        apply=edits.firewall,
        params=(
            Param("ports", str, "master", "'master': the store's port; 'data': every other port", ("master", "data")),
            Param("action", str, "drop", "'drop': silence; 'reject': a TCP reset at once", ("drop", "reject")),
        ),
        needs_hosts=True,
        needs_commands=("nft",),
    ),
    FaultKind(
        id="link-down",
        summary="A host's network link goes down while the job runs.",
        cause="link-down",
        layer="launch",
        targets=("node",),
        apply=edits.link_down,
        params=(Param("after_s", float, 1.0, "seconds after the launch", low=0, high=MAX_SECONDS),),
        needs_hosts=True,
    ),
)

FAULT_KINDS_BY_ID = {kind.id: kind for kind in FAULT_KINDS}
