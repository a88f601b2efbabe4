"""How each fault kind edits the draft of a launch: a code patch at an injection point of the
seed program, or a node's or a rank's launch arguments and environment. faults.py holds the
registry that names these edits."""

from __future__ import annotations

import dataclasses

from .lab.draft import PlanDraft, Target
from .lab.program import CodePatch


def _rank_guard(target: Target, body: str) -> str:
    """Code that runs `body` on the target rank only (or everywhere for a job-wide fault)."""
    if target.kind == "job":
        return body
    indented = "".join(f"    {line}\n" for line in body.splitlines())
    return f"if rank == {target.index}:\n{indented}"


def master_port_offset(draft: PlanDraft, target: Target, params: dict) -> None:
    if target.kind == "node":
        draft.nodes[target.index].master_port_offset = params["offset"]
    else:
        node, local_rank = draft.slot_of_rank(target.index)
        node.worker_port_offsets[local_rank] = params["offset"]


def port_in_use(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.occupy_master_port = True


def skip_set_device(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("device", replace='device = "cpu"\nif BACKEND == "nccl":\n    device = "cuda"\n'))


def rank_as_device(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(
        CodePatch(
            "device",
            replace='device = "cpu"\nif BACKEND == "nccl":\n    torch.cuda.set_device(rank)\n    device = "cuda"\n',
        )
    )


def skip_destroy(draft: PlanDraft, target: Target, params: dict) -> None:
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


def socket_ifname(draft: PlanDraft, target: Target, params: dict) -> None:
    variable = params["variable"] or ("NCCL_SOCKET_IFNAME" if draft.backend == "nccl" else "GLOO_SOCKET_IFNAME")
    nodes = draft.nodes if target.kind == "job" else [draft.nodes[target.index]]
    for node in nodes:
        node.env[variable] = params["ifname"]


def launch_nproc(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.nodes[target.index].nproc_per_node = params["nproc_per_node"]


def duplicate_node_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.nodes[target.index].node_rank = params["node_rank"]


def crash(draft: PlanDraft, target: Target, params: dict) -> None:
    if params["mode"] == "sigkill":
        body = "os.kill(os.getpid(), 9)  # what the kernel's OOM killer does\n"
    else:
        body = f'raise RuntimeError("corrupt sample in shard {target.index}: cannot decode record 1832")\n'
    draft.patches.append(CodePatch("before_collective", after=_rank_guard(target, body)))


def slow_rank(draft: PlanDraft, target: Target, params: dict) -> None:
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


def freeze_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    body = "import signal\nos.kill(os.getpid(), signal.SIGSTOP)  # stopped: alive, silent, never resumed\n"
    _after_training_step(draft, _rank_guard(target, body))


def extra_collective(draft: PlanDraft, target: Target, params: dict) -> None:
    body = ("val_loss = torch.ones(1, device=device)  # validation, only on this rank\n"
            "dist.all_reduce(val_loss)\n")
    _after_training_step(draft, _rank_guard(target, body))


def swap_collectives(draft: PlanDraft, target: Target, params: dict) -> None:
    _after_training_step(draft, "config = torch.zeros(1, device=device)\n")
    draft.patches.append(CodePatch("collective", replace=(
        f"if rank == {target.index}:  # this rank syncs its config first\n"
        "    dist.broadcast(config, src=0)\n    dist.all_reduce(x)\n"
        "else:\n    dist.all_reduce(x)\n    dist.broadcast(config, src=0)\n")))


def busy_rank(draft: PlanDraft, target: Target, params: dict) -> None:
    body = (f"end = time.time() + {params['seconds']}  # {params['work']}, only on this rank\n"
            "w = torch.rand(64, 64)\nwhile time.time() < end:\n    w = torch.tanh(w @ w)\n")
    _after_training_step(draft, _rank_guard(target, body))


def plain_python(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.launcher = "python"


def shape_mismatch(draft: PlanDraft, target: Target, params: dict) -> None:
    body = f"x = torch.ones({params['numel']}, device=device) * rank  # this rank builds a different shape\n"
    draft.patches.append(CodePatch("tensor", after=_rank_guard(target, body)))


def skip_collective(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(
        CodePatch(
            "collective",
            replace=f"if rank != {target.index}:  # this rank takes another branch\n    dist.all_reduce(x)\n",
        )
    )


def reduce_op(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("collective", replace=f"dist.all_reduce(x, op=dist.ReduceOp.{params['op']})\n"))


def force_backend(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.patches.append(CodePatch("header", after=f"BACKEND = {params['backend']!r}  # hard-coded\n"))


def visible_gpus(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.gpus_per_node = params["count"]


def wrong_master_addr(draft: PlanDraft, target: Target, params: dict) -> None:
    from .lab.netns import UNANSWERED_ADDRESS

    draft.nodes[target.index].master_addr = UNANSWERED_ADDRESS


def own_master(draft: PlanDraft, target: Target, params: dict) -> None:
    """The node's launch script fell back to "I am the master": node rank 0, MASTER_ADDR=localhost
    (written as 127.0.0.1: faultlab never resolves a name)."""
    nodes = draft.nodes if target.kind == "job" else [draft.nodes[target.index]]
    for node in nodes:
        node.node_rank = 0
        node.master_addr = "127.0.0.1"


def late_start(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.nodes[target.index].start_delay_s = params["seconds"]


TRAINING_STEP_SLEEP = "time.sleep({seconds})  # the training step's forward and backward\n"


def node_lost(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.node_losses.append((target.index, params["after_s"]))
    draft.patches.append(CodePatch("before_collective", after=TRAINING_STEP_SLEEP.format(seconds=params["step_s"])))


def other_job(draft: PlanDraft, target: Target, params: dict) -> None:
    """A second job of the same script and shape (a sweep's sibling), its node N on node N's
    host with the same MASTER_ADDR:MASTER_PORT, started `lead_s` before this one."""
    own = list(draft.nodes)
    for index, node in enumerate(own):
        draft.nodes.append(dataclasses.replace(node, env=dict(node.env), job=1, host=index, start_delay_s=0.0,
                                               rdzv_id="job1" if params["rdzv_id"] == "per-job" else None))
        node.start_delay_s += params["lead_s"]
        node.rdzv_id = "job2" if params["rdzv_id"] == "per-job" else None
    draft.patches.append(CodePatch("before_collective", after=TRAINING_STEP_SLEEP.format(seconds=params["step_s"])))


def listen_backlog(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.host_sysctls.append((target.index, "net.core.somaxconn", str(params["somaxconn"])))
    if params["overflow"] == "reset":
        draft.host_sysctls.append((target.index, "net.ipv4.tcp_abort_on_overflow", "1"))


def firewall(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.firewalls.append((target.index, params["ports"], params["action"]))


def link_down(draft: PlanDraft, target: Target, params: dict) -> None:
    draft.link_downs.append((target.index, params["after_s"]))
