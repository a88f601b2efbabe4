"""A LaunchPlan as one sbatch job script: readable on its own, correct when submitted by hand.

The script writes the program and a per-node launch script into the run directory (on a
file system every node sees), then `srun` starts one task per node. Each node runs torch's
own launcher (`python -m torch.distributed.run`, i.e. torchrun) with that node's slice of
the scenario: its environment, --nproc_per_node, --node_rank, --master_port. Every worker
runs faultlab's worker runtime, which writes the rank's stdout, stderr and phase events
next to the node's launcher log; faultlab reads the directory back when the job ends.

Pure: text in, text out. Nothing here submits anything.
"""

from __future__ import annotations

import dataclasses
import math
import shlex

from ..errors import EnvironmentProblem
from ..faults import FAULT_KINDS_BY_ID
from ..lab.plan import LaunchPlan, NodeLaunch
from ..lab.rundir import RunDir
from ..lab.supervise import RUN_MARKER
from ..scenario import Scenario
from .options import SlurmOptions

# Variables torchrun sets for its workers: a job submitted from inside another job must not pass them on.
LAUNCHER_OWNED_ENV = ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                      "GROUP_RANK", "ROLE_RANK", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
                      "TORCHELASTIC_RESTART_COUNT")
# The job's MASTER_PORT: fixed per job (from its id), so jobs sharing a node do not collide.
PORT_BASE, PORT_SPAN = 29500, 2000
# Added to the deadline for sbatch --time: starting interpreters, and SLURM's own wrap-up.
TIME_LIMIT_MARGIN_S = 60
WORKER_MODULE = "faultlab.lab.worker"
SUPERVISOR_MODULE = "faultlab.lab.supervise"
NODE_MARKER = "FAULTLAB_NODE"  # marks every process one node's script starts: what its sweep may end
# Paths inside the job, relative to its RUN_DIR variable (RunDir owns their names).
IN_JOB = RunDir("$RUN_DIR")
# What each node records as it starts: who it is and what it runs (the recording's environment).
NODE_FACTS = ("import json, platform, sys, time, importlib.metadata as m; print(json.dumps({'t': time.time(), "
              "'host': sys.argv[1], 'python': platform.python_version(), 'torch': m.version('torch'), "
              "'platform': platform.system() + ' ' + platform.machine()}))")

# Why a fault kind cannot be applied on a shared cluster (kinds not named here can).
REFUSED = {
    "wrong-master-addr": "it needs an address on the nodes' network where no host answers; faultlab sends "
                         "no traffic to addresses it did not make",
    "firewall": "it needs root on a node to add nftables rules; faultlab does not change a shared cluster's firewall",
    "link-down": "it needs root on a node to take its link down; faultlab does not change a shared cluster's network",
    "visible-gpus": "SLURM decides each node's CUDA_VISIBLE_DEVICES: ask for fewer GPUs with --gpus-per-node instead",
}


@dataclasses.dataclass(frozen=True)
class StepTarget:
    """Where a launch runs as a job step of an allocation instead of a job of its own."""

    job_id: str
    nodes: tuple[str, ...]
    name: str  # the step's name, unique per run: how squeue tells it apart
    master_port: int  # steps share their allocation's id: each gets a port of its own

    def srun_args(self) -> list[str]:
        return [f"--jobid={self.job_id}", f"--job-name={self.name}", f"--nodes={len(self.nodes)}",
                f"--ntasks={len(self.nodes)}", f"--nodelist={','.join(self.nodes)}",
                # Shares the allocation's CPUs with its other steps (a batch script's own, say).
                "--overlap"]


def step_port(job_id: str, ordinal: int) -> int:
    """MASTER_PORT of the allocation's `ordinal`-th step faultlab runs, in the batch jobs' range."""
    return PORT_BASE + (int(job_id) + ordinal) % PORT_SPAN


def refusal(scenario: Scenario) -> str | None:
    """Why `scenario` cannot run on a SLURM cluster, or None if every fault can be applied."""
    for fault in scenario.faults:
        if fault.kind in REFUSED:
            return f"scenario {scenario.id!r}: the {fault.kind} fault is not applied on a cluster: {REFUSED[fault.kind]}"
        if FAULT_KINDS_BY_ID[fault.kind].needs_hosts:
            return f"scenario {scenario.id!r}: the {fault.kind} fault exists only between simulated hosts"
    return None


def time_limit(plan: LaunchPlan, options: SlurmOptions) -> str:
    """sbatch --time: the user's, else the run's deadline and a margin, in whole minutes."""
    if options.time:
        return options.time
    return str(max(1, math.ceil((plan.deadline_s + TIME_LIMIT_MARGIN_S) / 60)))


def sbatch_lines(plan: LaunchPlan, options: SlurmOptions, job_name: str) -> list[str]:
    lines = [f"--job-name={job_name}", f"--nodes={len(plan.nodes)}", "--ntasks-per-node=1",
             f"--time={time_limit(plan, options)}"]
    for flag, value in (("partition", options.partition), ("account", options.account),
                        ("nodelist", options.nodelist), ("exclude", options.exclude)):
        if value:
            lines.append(f"--{flag}={value}")
    if options.gpus_per_node:
        lines.append(f"--gpus-per-node={options.gpus_per_node}")
    lines.extend(options.sbatch_args)
    return [f"#SBATCH {shlex.quote(line)}" for line in lines]


def _batch_head() -> list[str]:
    """A batch job's id, nodes and MASTER_PORT (fixed per job: jobs sharing a node do not collide)."""
    return ["JOB_ID=$SLURM_JOB_ID NODES=$SLURM_JOB_NODELIST",
            f"MASTER_PORT=$(({PORT_BASE} + SLURM_JOB_ID % {PORT_SPAN}))"]


def _split_env(plan: LaunchPlan) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The environment every node shares, and what each node has on top of it (the faults)."""
    envs = [dict(node.env) for node in plan.nodes]
    common = {key: value for key, value in envs[0].items() if all(env.get(key) == value for env in envs)}
    return common, [{key: value for key, value in env.items() if key not in common} for env in envs]


def _exports(env: dict[str, str], indent: str = "") -> list[str]:
    return [f"{indent}export {key}={shlex.quote(value)}" for key, value in sorted(env.items())]


def _node_command(plan: LaunchPlan, node: NodeLaunch) -> str:
    """This node's launch: torchrun with its arguments, or (plain-python fault) the script itself."""
    offsets = ",".join(f"{local}:{offset}" for local, offset in node.worker_port_offsets)
    worker = f'-m {WORKER_MODULE} {node.index} "$RUN_DIR" "$MASTER_PORT" {shlex.quote(offsets)}'
    if plan.launcher == "python":
        return f'"$PYTHON" {worker}'
    master_addr = shlex.quote(node.master_addr) if node.master_addr else '"$MASTER_ADDR"'
    port = f"$((MASTER_PORT + {node.master_port_offset}))" if node.master_port_offset else '"$MASTER_PORT"'
    return (
        f'"$PYTHON" -m torch.distributed.run --nnodes={node.nnodes} --nproc_per_node={node.nproc_per_node} '
        f"--node_rank={node.node_rank} --master_addr={master_addr} --master_port={port} "
        f"--rdzv_conf=timeout={max(1, int(plan.timeout_s))} --max_restarts=0 --monitor_interval=0.1 \\\n"
        f"            {worker}"
    )


def node_script(plan: LaunchPlan, extra_env: list[dict[str, str]]) -> list[str]:
    """What each node runs (one srun task per node), as lines."""
    lines = [
        "#!/bin/bash",
        "# One node's part: its slice of the scenario, then torch's own launcher.",
        "node=$SLURM_NODEID",
        "# Marks what this script starts (the batch script's own srun, on node 0's machine, carries only the run's).",
        f'export {NODE_MARKER}="${RUN_MARKER}/$node"',
        "# On scancel SLURM signals every process of the step; this shell outlives the launcher (a trapped",
        "# signal waits for the running command), so the launcher stays in the job's process tree to the end.",
        "trap : TERM INT",
        f'exec >"{IN_JOB.launcher_log("$node")}" 2>&1',
        f'"$PYTHON" -c "{NODE_FACTS}" "$SLURMD_NODENAME" >"{IN_JOB.node_start("$node")}"',
        'case "$node" in',
    ]
    for node, env in zip(plan.nodes, extra_env):
        lines.append(f"    {node.index})")
        lines.extend(_exports(env, indent="        "))
        if plan.occupy_master_port and node.index == 0:
            lines.append("        # Something else already listens on MASTER_PORT on this node.")
            lines.append('        "$PYTHON" -c "import socket, time; s = socket.create_server((\'\', $MASTER_PORT)); '
                         'time.sleep(86400)" &')
            lines.append("        sleep 1")
        lines.append(f"        {_node_command(plan, node)}")
        lines.append("        code=$? ;;")
    lines += [
        "esac",
        "# End whatever of this node still carries the run's marker: the squatter, and a worker the",
        "# launcher started as it was being killed (no longer below the step: SLURM may not find it).",
        f'"$PYTHON" -m {SUPERVISOR_MODULE} "${RUN_MARKER}" "{NODE_MARKER}=${NODE_MARKER}"',
        f'printf \'{{"code": %d, "t": %s}}\\n\' "$code" "$(date +%s.%N)" >"{IN_JOB.node_exit("$node")}"',
        'exit "$code"',
    ]
    return lines


def render(plan: LaunchPlan, options: SlurmOptions, *, run_dir: str, run_id: str, title: str,
           job_name: str, step: StepTarget | None = None) -> str:
    """The sbatch script of `plan`, writing everything under `run_dir`; with `step`, the
    script faultlab runs itself to start the launch as a step of that allocation."""
    if len({node.index for node in plan.nodes}) != len(plan.nodes):
        raise EnvironmentProblem("a plan's nodes must have distinct indexes")
    common, extra = _split_env(plan)
    node_lines = node_script(plan, extra)
    for text, delimiter in ((plan.program, "FAULTLAB_PROGRAM"), ("\n".join(node_lines), "FAULTLAB_NODE")):
        if delimiter in text.splitlines():
            raise EnvironmentProblem(f"the job's text contains its own heredoc delimiter {delimiter}")
    unset = " ".join(LAUNCHER_OWNED_ENV)
    srun = " ".join(["srun", *(step.srun_args() if step else []), "--ntasks-per-node=1", "--kill-on-bad-exit=0",
                     *map(shlex.quote, options.srun_args), f'bash "{IN_JOB.node_script}"'])
    return "\n".join([
        "#!/bin/bash",
        f"# faultlab: {title}",
        "# Each node runs torch's own launcher (torchrun) with its slice of the scenario; every rank's",
        "# output and phase events go to RUN_DIR, a directory every node must see. faultlab reads it",
        "# back when the job ends; after a job you submitted yourself: faultlab diagnose \"$RUN_DIR\".",
        *(_step_comment(step) if step else sbatch_lines(plan, options, job_name)),
        "set -uo pipefail",
        "",
        f"RUN_DIR={shlex.quote(run_dir)}",
        f"PYTHON={shlex.quote(options.python)}  # with torch and faultlab, the same path on every node",
        "export RUN_DIR PYTHON",
        f"export {RUN_MARKER}={shlex.quote(run_id)}  # marks every process of this run",
        f"unset {unset}",
        "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}",
        *_exports(common),
        *(_step_head(step) if step else _batch_head()),
        "# The store lives on the job's first node: its address as SLURM knows it (no name to resolve).",
        'first_node=$(scontrol show hostnames "$NODES" | head -n 1)',
        "MASTER_ADDR=$(scontrol show node \"$first_node\" | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p')",
        "export MASTER_ADDR MASTER_PORT",
        "",
        f'mkdir -p "{IN_JOB.ranks}"',
        f'cat >"{IN_JOB.program}" <<\'FAULTLAB_PROGRAM\'',
        plan.program.rstrip("\n"),
        "FAULTLAB_PROGRAM",
        f"cat >\"{IN_JOB.node_script}\" <<'FAULTLAB_NODE'",
        *node_lines,
        "FAULTLAB_NODE",
        "printf '{\"t\": %s, \"job\": \"%s\", \"nodes\": \"%s\", \"master_addr\": \"%s\", \"master_port\": %d}\\n' \\",
        f'    "$(date +%s.%N)" "$JOB_ID" "$NODES" "$MASTER_ADDR" "$MASTER_PORT" >"{IN_JOB.job_record}"',
        srun,
        "",
    ])


def _step_comment(step: StepTarget) -> list[str]:
    return [f"# Run by faultlab (bash, not sbatch) as a job step of allocation {step.job_id} on "
            f"{','.join(step.nodes)}: srun --jobid."]


def _step_head(step: StepTarget) -> list[str]:
    """The step's allocation, nodes and port."""
    return [
        f"JOB_ID={step.job_id}",
        f"NODES={shlex.quote(','.join(step.nodes))}",
        f"MASTER_PORT={step.master_port}",
    ]
