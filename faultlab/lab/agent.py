"""One simulated node's launcher agent: a forked process that becomes torchrun for its node.

Each agent lives in its own process group, with its own environment (so "a wrong
MASTER_PORT on node 1" really is node 1's launcher dialing the wrong port), enters its
simulated host's network namespace where the plan has them, and runs torch's own
`elastic_launch`. It notes every worker's wait status the moment the worker dies, because
the launcher reaps them and reports only the first failure.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback

from . import netns
from .plan import LaunchPlan, NodeLaunch
from .rundir import RunDir
from .supervise import RUN_MARKER
from .worker import die_with_parent, redirect_std_streams, run_worker

# Variables a launcher reads or sets; a node starts without any inherited from our caller.
LAUNCHER_OWNED_ENV = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_RESTART_COUNT",
)


def node_environment(node: NodeLaunch, run_id: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in LAUNCHER_OWNED_ENV}
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's own default for several workers
    env[RUN_MARKER] = run_id
    env.update(dict(node.env))
    return env


def run_node_agent(
    plan: LaunchPlan, node: NodeLaunch, master_port: int, run_dir: RunDir, run_id: str, host_namespace: str | None
) -> None:
    """Body of a node's agent process (forked): become a launcher for this node."""
    if host_namespace:
        netns.enter(host_namespace)
    os.setpgid(0, 0)
    die_with_parent()
    log = run_dir.launcher_log(node.index)
    redirect_std_streams(log, log)
    environment = node_environment(node, run_id)  # read from the caller's environment, before it is cleared
    os.environ.clear()
    os.environ.update(environment)
    exit_code = 1
    time.sleep(node.start_delay_s)  # a node that comes up late (slow boot, image pull, queue)
    try:
        if plan.launcher == "python":
            _run_without_launcher(plan, node, run_dir)
        _note_worker_exits(run_dir, node.index)
        exit_code = _launch_workers(plan, node, master_port, run_dir, run_id)
    except BaseException:  # what torchrun would print before exiting 1
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)


def _note_worker_exits(run_dir: RunDir, node: int) -> None:
    """Record each worker's wait status (exit code, or the signal that killed it) the moment
    it dies, next to its logs. waitid(WNOWAIT) reads the status and leaves the reaping to
    the launcher."""

    def on_child_exit(signum, frame):
        for slot, pid in run_dir.started_workers(node):
            if slot.status.exists():
                continue
            try:
                died = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except OSError:  # already reaped, or not ours
                continue
            if died is None:
                continue
            code = died.si_status if died.si_code == os.CLD_EXITED else -died.si_status
            slot.status.write_text(json.dumps({"code": code, "t": time.time()}), encoding="utf-8")

    signal.signal(signal.SIGCHLD, on_child_exit)


def _worker_command(node: NodeLaunch, run_dir: RunDir, master_port: int, offsets: dict[int, int]) -> list[str]:
    """A worker as a fresh interpreter (CUDA, or import-time environment): faultlab.lab.worker."""
    offsets_arg = ",".join(f"{local}:{offset}" for local, offset in sorted(offsets.items()))
    return ["-m", "faultlab.lab.worker", str(node.index), str(run_dir.root), str(master_port), offsets_arg]


def _run_without_launcher(plan: LaunchPlan, node: NodeLaunch, run_dir: RunDir) -> None:
    """`python train.py` on this node: this process becomes the one worker, no torchrun."""
    if plan.fork_workers:
        try:
            run_worker(node.index, str(run_dir.root))
        except SystemExit as stop:
            os._exit(stop.code if isinstance(stop.code, int) else 1)
        os._exit(0)
    os.execv(sys.executable, [sys.executable, *_worker_command(node, run_dir, 0, {})])


def _launch_workers(plan: LaunchPlan, node: NodeLaunch, master_port: int, run_dir: RunDir, run_id: str) -> int:
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    port_offsets = dict(node.worker_port_offsets)
    if plan.fork_workers:
        store_host = plan.store_host(node)
        entrypoint = run_worker
        args = (node.index, str(run_dir.root), master_port, port_offsets, (store_host.index, store_host.nproc_per_node))
    else:
        entrypoint = sys.executable
        args = tuple(_worker_command(node, run_dir, master_port, port_offsets))
    config = LaunchConfig(
        min_nodes=node.nnodes,
        max_nodes=node.nnodes,
        nproc_per_node=node.nproc_per_node,
        run_id=node.rdzv_id or run_id,
        rdzv_backend="static",
        rdzv_endpoint=f"{plan.master_addr(node)}:{master_port + node.master_port_offset}",
        rdzv_configs={"rank": node.node_rank, "timeout": max(1, int(plan.timeout_s))},
        max_restarts=0,
        monitor_interval=0.1,
        start_method="fork" if plan.fork_workers else "spawn",
        local_addr=plan.local_addr(node),  # never look up this host's name
        logs_specs=DefaultLogsSpecs(log_dir=str(run_dir.torchelastic)),
    )
    try:
        elastic_launch(config, entrypoint)(*args)
    except ChildFailedError:
        traceback.print_exc()  # the "Root Cause (first observed failure)" block torchrun shows
        return 1
    return 0
