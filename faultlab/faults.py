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
from .lab.draft import PlanDraft
from .lab.program import CodePatch
from .textsafe import excerpt

MAX_PORT_OFFSET = 1000  # MASTER_PORT + offset stays a port of this machine's ephemeral range
MAX_SECONDS = 600.0  # no longer than the longest timeout a scenario may have
MAX_RANKS_PER_NODE = 64  # as the topology's bound
MAX_NODES = 16
MAX_GPUS_PER_NODE = 16
MAX_NUMEL = 1 << 20  # elements of the all_reduce tensor: 4 MB of float32

TargetKind = Literal["job", "node", "rank"]


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a fault applies: the whole job, one node (plan index), or one global rank."""

    kind: TargetKind
    index: int = 0

    def describe(self) -> str:
        return "the whole job" if self.kind == "job" else f"{self.kind} {self.index}"


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


def _rank_guard(target: Target, body: str) -> str:
    """Code that runs `body` on the target rank only (or everywhere for a job-wide fault)."""
    if target.kind == "job":
        return body
    indented = "".join(f"    {line}\n" for line in body.splitlines())
    return f"if rank == {target.index}:\n{indented}"


def _master_port_offset(draft: PlanDraft, target: Target, params: dict) -> None:
    if target.kind == "node":
        draft.nodes[target.index].master_port_offset = params["offset"]
    else:
        node, local_rank = draft.slot_of_rank(target.index)
        node.worker_port_offsets[local_rank] = params["offset"]


def _port_in_use(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.occupy_master_port = True


def _skip_set_device(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("device", replace='device = "cpu"\nif BACKEND == "nccl":\n    device = "cuda"\n'))


def _rank_as_device(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(
        CodePatch(
            "device",
            replace='device = "cpu"\nif BACKEND == "nccl":\n    torch.cuda.set_device(rank)\n    device = "cuda"\n',
        )
    )


def _skip_destroy(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("shutdown", replace=""))
    if params["reinit"]:
        draft.patches.append(
            CodePatch(
                "after_shutdown",
                after=(
                    "\n# Evaluation: set up distributed again, as the training phase did.\n"
                    "dist.init_process_group(BACKEND, timeout=TIMEOUT)\n"
                ),
            )
        )


def _socket_ifname(draft: PlanDraft, target: Target, params: dict) -> None:
    variable = params["variable"] or ("NCCL_SOCKET_IFNAME" if draft.backend == "nccl" else "GLOO_SOCKET_IFNAME")
    nodes = draft.nodes if target.kind == "job" else [draft.nodes[target.index]]
    for node in nodes:
        node.env[variable] = params["ifname"]


def _launch_nproc(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.nodes[target.index].nproc_per_node = params["nproc_per_node"]


def _duplicate_node_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.nodes[target.index].node_rank = params["node_rank"]


def _crash(draft: PlanDraft, target: Target, params: dict) -> None:
    if params["mode"] == "sigkill":
        body = "os.kill(os.getpid(), 9)  # what the kernel's OOM killer does\n"
    else:
        body = f'raise RuntimeError("corrupt sample in shard {target.index}: cannot decode record 1832")\n'
    draft.patches.append(CodePatch("before_collective", after=_rank_guard(target, body)))


def _slow_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    body = f"time.sleep({params['seconds']})  # {params['work']} that only this rank does\n"
    if params["where"] == "collective":
        draft.patches.append(CodePatch("before_collective", after=_rank_guard(target, body)))
        return
    # Before init there is no process group yet: the launcher's RANK says who we are.
    if target.kind == "job":
        guarded = body.replace("that only this rank does", "on every rank")
    else:
        guarded = f'if int(os.environ["RANK"]) == {target.index}:\n    {body}'
    draft.patches.append(CodePatch("before_init", after=guarded))


# Faults whose evidence is the Flight Recorder happen mid-job: every rank first runs one
# training step (collective #1), so the divergence shows at a sequence id past the first.
TRAINING_STEP = "grads = torch.ones(1, device=device)\ndist.all_reduce(grads)  # training step 1\n"


def _after_training_step(draft: PlanDraft, body: str) -> None:
    if not any(patch.after.startswith(TRAINING_STEP) for patch in draft.patches if patch.point == "before_collective"):
        draft.patches.append(CodePatch("before_collective", after=TRAINING_STEP))
    draft.patches.append(CodePatch("before_collective", after=body))


def _freeze_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    body = "import signal\nos.kill(os.getpid(), signal.SIGSTOP)  # stopped: alive, silent, never resumed\n"
    _after_training_step(draft, _rank_guard(target, body))


def _extra_collective(draft: PlanDraft, target: Target, params: dict) -> None:
    body = ("val_loss = torch.ones(1, device=device)  # validation, only on this rank\n"
            "dist.all_reduce(val_loss)\n")
    _after_training_step(draft, _rank_guard(target, body))


def _swap_collectives(draft: PlanDraft, target: Target, params: dict) -> None:
    _after_training_step(draft, "config = torch.zeros(1, device=device)\n")
    draft.patches.append(CodePatch("collective", replace=(
        f"if rank == {target.index}:  # this rank syncs its config first\n"
        "    dist.broadcast(config, src=0)\n    dist.all_reduce(x)\n"
        "else:\n    dist.all_reduce(x)\n    dist.broadcast(config, src=0)\n")))


def _busy_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    body = (f"end = time.time() + {params['seconds']}  # {params['work']}, only on this rank\n"
            "w = torch.rand(64, 64)\nwhile time.time() < end:\n    w = torch.tanh(w @ w)\n")
    _after_training_step(draft, _rank_guard(target, body))


def _plain_python(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.launcher = "python"


def _shape_mismatch(draft: PlanDraft, target: Target, params: dict) -> None:
    body = f"x = torch.ones({params['numel']}, device=device) * rank  # this rank builds a different shape\n"
    draft.patches.append(CodePatch("tensor", after=_rank_guard(target, body)))


def _skip_collective(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(
        CodePatch(
            "collective",
            replace=f"if rank != {target.index}:  # this rank takes another branch\n    dist.all_reduce(x)\n",
        )
    )


def _reduce_op(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("collective", replace=f"dist.all_reduce(x, op=dist.ReduceOp.{params['op']})\n"))


def _force_backend(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("header", after=f"BACKEND = {params['backend']!r}  # hard-coded\n"))


def _visible_gpus(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.gpus_per_node = params["count"]


def _wrong_master_addr(draft: PlanDraft, target: Target, params: dict) -> None:
    from .lab.netns import UNANSWERED_ADDRESS

    draft.nodes[target.index].master_addr = UNANSWERED_ADDRESS


def _own_master(draft: PlanDraft, target: Target, params: dict) -> None:
    """The node's launch script fell back to "I am the master": node rank 0, MASTER_ADDR=localhost
    (written as 127.0.0.1: faultlab never resolves a name)."""
    nodes = draft.nodes if target.kind == "job" else [draft.nodes[target.index]]
    for node in nodes:
        node.node_rank = 0
        node.master_addr = "127.0.0.1"


def _late_start(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.nodes[target.index].start_delay_s = params["seconds"]


def _node_lost(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.node_losses.append((target.index, params["after_s"]))
    body = f"time.sleep({params['step_s']})  # the training step's forward and backward\n"
    draft.patches.append(CodePatch("before_collective", after=body))


def _listen_backlog(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.host_sysctls.append((target.index, "net.core.somaxconn", str(params["somaxconn"])))
    if params["overflow"] == "reset":
        draft.host_sysctls.append((target.index, "net.ipv4.tcp_abort_on_overflow", "1"))


def _firewall(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.firewalls.append((target.index, params["ports"], params["action"]))


def _link_down(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.link_downs.append((target.index, params["after_s"]))


FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        id="master-port-offset",
        summary="A node's launcher (or one rank's environment) uses MASTER_PORT + offset.",
        cause="wrong-master-port",
        layer="launch",
        targets=("node", "rank"),
        apply=_master_port_offset,
        params=(Param("offset", int, 1, "added to the job's MASTER_PORT", low=-MAX_PORT_OFFSET, high=MAX_PORT_OFFSET),),
    ),
    FaultKind(
        id="port-in-use",
        summary="Another process already listens on MASTER_PORT when the job starts.",
        cause="port-in-use",
        layer="launch",
        targets=("job",),
        apply=_port_in_use,
    ),
    FaultKind(
        id="skip-set-device",
        summary="The program never calls torch.cuda.set_device(local_rank).",
        cause="missing-set-device",
        layer="code",
        targets=("job",),
        apply=_skip_set_device,
        gpu_only=True,
    ),
    FaultKind(
        id="rank-as-device",
        summary="The program calls torch.cuda.set_device(rank) instead of local_rank.",
        cause="rank-as-device-id",
        layer="code",
        targets=("job",),
        apply=_rank_as_device,
        gpu_only=True,
    ),
    FaultKind(
        id="skip-destroy",
        summary="The program never calls destroy_process_group().",
        cause="missing-destroy-process-group",
        layer="code",
        targets=("job",),
        apply=_skip_destroy,
        params=(Param("reinit", bool, True, "initialize the process group again afterwards, as a second phase would"),),
    ),
    FaultKind(
        id="socket-ifname",
        summary="A node's GLOO_/NCCL_SOCKET_IFNAME names an interface the host lacks.",
        cause="wrong-socket-interface",
        layer="launch",
        targets=("node", "job"),
        apply=_socket_ifname,
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
        apply=_launch_nproc,
        params=(Param("nproc_per_node", int, 1, "the --nproc_per_node this node is launched with", low=1, high=MAX_RANKS_PER_NODE),),
    ),
    FaultKind(
        id="duplicate-node-rank",
        summary="A node is launched with a --node_rank another node already has.",
        cause="duplicate-node-rank",
        layer="launch",
        targets=("node",),
        apply=_duplicate_node_rank,
        params=(Param("node_rank", int, 0, "the --node_rank this node is launched with", low=0, high=MAX_NODES - 1),),
    ),
    FaultKind(
        id="crash-before-collective",
        summary="One rank dies before all_reduce: an exception, or SIGKILL as the OOM killer sends.",
        cause="rank-crash",
        layer="code",
        targets=("rank",),
        apply=_crash,
        params=(Param("mode", str, "exception", "how the rank dies", ("exception", "sigkill")),),
    ),
    FaultKind(
        id="slow-rank",
        summary="One rank (or every rank) does slow extra work before init or before the collective.",
        cause="straggler-rank",
        layer="code",
        targets=("rank", "job"),
        apply=_slow_rank,
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
        apply=_freeze_rank,
    ),
    FaultKind(
        id="extra-collective",
        summary="After a training step, one rank runs a validation all_reduce the others skip.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=_extra_collective,
    ),
    FaultKind(
        id="swap-collectives",
        summary="One rank issues broadcast then all_reduce; every other rank all_reduce then broadcast.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=_swap_collectives,
    ),
    FaultKind(
        id="busy-rank",
        summary="After a training step, one rank computes for a long time outside any collective.",
        cause="straggler-rank",
        layer="code",
        targets=("rank",),
        apply=_busy_rank,
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
        apply=_plain_python,
    ),
    FaultKind(
        id="shape-mismatch",
        summary="One rank all-reduces a tensor of another shape.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=_shape_mismatch,
        params=(Param("numel", int, 2, "elements in that rank's tensor", low=1, high=MAX_NUMEL),),
    ),
    FaultKind(
        id="skip-collective",
        summary="One rank takes a branch that skips the all_reduce.",
        cause="collective-mismatch",
        layer="code",
        targets=("rank",),
        apply=_skip_collective,
    ),
    FaultKind(
        id="reduce-op",
        summary="The all_reduce uses another reduce op than SUM.",
        cause="wrong-reduce-op",
        layer="code",
        targets=("job",),
        apply=_reduce_op,
        params=(Param("op", str, "MAX", "the ReduceOp used", ("MAX", "MIN", "PRODUCT", "BAND", "BOR")),),
    ),
    FaultKind(
        id="force-backend",
        summary="The program hard-codes a backend regardless of the host.",
        cause="nccl-without-gpu",
        layer="code",
        targets=("job",),
        apply=_force_backend,
        params=(Param("backend", str, "nccl", "the backend hard-coded", ("nccl", "gloo")),),
    ),
    FaultKind(
        id="visible-gpus",
        summary="Each node exposes fewer GPUs (CUDA_VISIBLE_DEVICES) than it runs ranks.",
        cause="too-few-gpus",
        layer="launch",
        targets=("job",),
        apply=_visible_gpus,
        params=(Param("count", int, 1, "GPUs visible on each node", low=0, high=MAX_GPUS_PER_NODE),),
        gpu_only=True,
    ),
    FaultKind(
        id="wrong-master-addr",
        summary="A node's launcher is given a --master_addr where no host answers.",
        cause="wrong-master-addr",
        layer="launch",
        targets=("node",),
        apply=_wrong_master_addr,
        needs_hosts=True,
    ),
    FaultKind(
        id="own-master",
        summary="A node (or every node) is launched as its own master: --node_rank=0 and "
        "--master_addr=localhost, so it hosts a store of its own and waits there for the others.",
        cause="split-world",
        layer="launch",
        targets=("node", "job"),
        apply=_own_master,
        needs_hosts=True,
    ),
    FaultKind(
        id="late-start",
        summary="A node's launcher starts seconds after the others (slow boot, image pull, a queue).",
        cause="late-store-host",
        layer="launch",
        targets=("node",),
        apply=_late_start,
        params=(Param("seconds", float, 3.0, "how long after the others the node's launcher starts"),),
    ),
    FaultKind(
        id="node-lost",
        summary="A node vanishes mid-job: its launcher and workers are SIGKILLed after init, as a host "
        "that loses power or is preempted.",
        cause="store-host-lost",
        layer="launch",
        targets=("node",),
        apply=_node_lost,
        params=(
            Param("after_s", float, 1.0, "seconds after the node's ranks finished init"),
            Param("step_s", float, 4.0, "the training step every rank runs between init and all_reduce"),
        ),
    ),
    FaultKind(
        id="listen-backlog",
        summary="A host's listen backlog (net.core.somaxconn, in its own namespace) is smaller than "
        "the ranks that connect to its store at once.",
        cause="listen-backlog-overflow",
        layer="launch",
        targets=("node",),
        apply=_listen_backlog,
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
        apply=_firewall,
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
        apply=_link_down,
        params=(Param("after_s", float, 1.0, "seconds after the launch", low=0, high=MAX_SECONDS),),
        needs_hosts=True,
    ),
)

FAULT_KINDS_BY_ID = {kind.id: kind for kind in FAULT_KINDS}
