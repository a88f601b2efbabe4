"""LaunchPlan -> processes, through torch's own elastic launcher, and back to a Capture.

One launcher agent per simulated node (torch's `elastic_launch`, the engine behind
torchrun), each in its own process group with its own environment, so a "wrong
MASTER_PORT on node 1" really is node 1's launcher dialing the wrong port. On gloo the
agents and workers are forked from this process after torch is imported once (the
expensive part of every torchrun start); with CUDA every worker is a fresh interpreter.

Every process is accounted for: agents live in their own process groups, workers started
with exec carry FAULTLAB_RUN=<id> in their environment, every process asks Linux to kill
it when its parent dies, and `launch` kills all of them at the deadline, on error and on
Ctrl-C before it returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import socket
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

from . import experiment, netns
from .errors import EnvironmentProblem, Interrupted
from .records import Capture, NodeCapture, PhaseEvent, RankCapture

LOOPBACK = "127.0.0.1"
RUN_MARKER = "FAULTLAB_RUN"
RUN_DIR_PREFIX = "faultlab-run-"  # + the owning faultlab's pid: orphans are found by it
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
KILL_GRACE_S = 0.5  # SIGTERM first, as torchrun does, then SIGKILL
# Past the deadline, a launcher whose workers have all ended may still be writing its
# failure report (torch imports its log formatter's dependencies on the first error).
LAUNCHER_WRAPUP_S = 10.0


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

    def master_addr(self, node: NodeLaunch) -> str:
        default = netns.host_address(0) if self.hosts else LOOPBACK
        return node.master_addr or default

    def local_addr(self, node: NodeLaunch) -> str:
        return netns.host_address(node.index) if self.hosts else LOOPBACK

    @property
    def world_size(self) -> int:
        return sum(node.nproc_per_node for node in self.nodes)

    @property
    def fork_workers(self) -> bool:
        return self.worker_start == "fork"


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


def _node_environment(plan: LaunchPlan, node: NodeLaunch, run_id: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in LAUNCHER_OWNED_ENV}
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's own default for several workers
    env[RUN_MARKER] = run_id
    env.update(dict(node.env))
    return env


def _run_node_agent(
    plan: LaunchPlan, node: NodeLaunch, master_port: int, run_dir: str, run_id: str, host_namespace: str | None
) -> None:
    """Body of a node's agent process (forked): become a launcher for this node."""
    if host_namespace:
        netns.enter(host_namespace)
    os.setpgid(0, 0)
    experiment.die_with_parent()
    log = Path(run_dir) / f"node{node.index}.launcher.log"
    experiment.redirect_std_streams(log, log)
    os.environ.clear()
    os.environ.update(_node_environment(plan, node, run_id))
    exit_code = 1
    try:
        if plan.launcher == "python":
            _run_without_launcher(plan, node, master_port, run_dir)
        _note_worker_exits(Path(run_dir) / "ranks", node.index)
        exit_code = _launch_workers(plan, node, master_port, run_dir, run_id)
    except BaseException:  # what torchrun would print before exiting 1
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)


def _note_worker_exits(ranks_dir: Path, node: int) -> None:
    """Record each worker's wait status (exit code, or the signal that killed it) the moment
    it dies, next to its logs. The launcher reaps its workers and reports only the first
    failure; waitid(WNOWAIT) reads the status and leaves the reaping to the launcher."""

    def on_child_exit(signum, frame):
        for events, pid in _started_workers(ranks_dir, node):
            status_file = events.with_suffix(".status")
            if status_file.exists():
                continue
            try:
                died = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except OSError:  # already reaped, or not ours
                continue
            if died is None:
                continue
            code = died.si_status if died.si_code == os.CLD_EXITED else -died.si_status
            status_file.write_text(json.dumps({"code": code, "t": time.time()}), encoding="utf-8")

    signal.signal(signal.SIGCHLD, on_child_exit)


def _run_without_launcher(plan: LaunchPlan, node: NodeLaunch, master_port: int, run_dir: str) -> None:
    """`python train.py` on this node: this process becomes the one worker, no torchrun."""
    ranks_dir = str(Path(run_dir) / "ranks")
    if plan.fork_workers:
        try:
            experiment.run_worker(node.index, plan.program, ranks_dir)
        except SystemExit as stop:
            os._exit(stop.code if isinstance(stop.code, int) else 1)
        os._exit(0)
    program_file = str(Path(run_dir) / experiment.PROGRAM_NAME)
    os.execv(sys.executable, [sys.executable, "-m", "faultlab.experiment", str(node.index), program_file, ranks_dir, "0", ""])


def _launch_workers(plan: LaunchPlan, node: NodeLaunch, master_port: int, run_dir: str, run_id: str) -> int:
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    ranks_dir = str(Path(run_dir) / "ranks")
    port_offsets = dict(node.worker_port_offsets)
    if plan.fork_workers:
        store_host_workers = plan.nodes[0].nproc_per_node
        entrypoint = experiment.run_worker
        args = (node.index, plan.program, ranks_dir, master_port, port_offsets, store_host_workers)
    else:
        program_file = Path(run_dir) / experiment.PROGRAM_NAME
        offsets = ",".join(f"{local}:{offset}" for local, offset in sorted(port_offsets.items()))
        entrypoint = sys.executable
        args = ("-m", "faultlab.experiment", str(node.index), str(program_file), ranks_dir, str(master_port), offsets)
    config = LaunchConfig(
        min_nodes=node.nnodes,
        max_nodes=node.nnodes,
        nproc_per_node=node.nproc_per_node,
        run_id=run_id,
        rdzv_backend="static",
        rdzv_endpoint=f"{plan.master_addr(node)}:{master_port + node.master_port_offset}",
        rdzv_configs={"rank": node.node_rank, "timeout": max(1, int(plan.timeout_s))},
        max_restarts=0,
        monitor_interval=0.1,
        start_method="fork" if plan.fork_workers else "spawn",
        local_addr=plan.local_addr(node),  # never look up this host's name
        logs_specs=DefaultLogsSpecs(log_dir=str(Path(run_dir) / "torchelastic")),
    )
    try:
        elastic_launch(config, entrypoint)(*args)
    except ChildFailedError:
        traceback.print_exc()  # the "Root Cause (first observed failure)" block torchrun shows
        return 1
    return 0


class _RunProcesses:
    """The agents of one launch, and the means to end them all."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.agents: list = []
        self.exit_times: dict[int, float] = {}  # agent index -> seconds since launch

    def note_exits(self, now: float) -> None:
        for index, agent in enumerate(self.agents):
            if agent.exitcode is not None:
                self.exit_times.setdefault(index, now)

    def all_exited(self) -> bool:
        return all(agent.exitcode is not None for agent in self.agents)

    def still_working(self, ranks_dir: Path) -> bool:
        """Whether a live launcher is still in rendezvous or has a live worker, as opposed
        to only writing up the end of its workers."""
        for index, agent in enumerate(self.agents):
            if agent.exitcode is not None:
                continue
            pids = [pid for _, pid in _started_workers(ranks_dir, index)]
            if not pids or any(_is_running(pid) for pid in pids):
                return True
        return False

    def kill_all(self) -> None:
        for agent in self.agents:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(agent.pid, signal.SIGTERM)
        end = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < end and not self.all_exited():
            time.sleep(0.02)
        for agent in self.agents:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(agent.pid, signal.SIGKILL)
        for agent in self.agents:
            agent.join(timeout=5)
        kill_marked_processes(self.run_id)


def _started_workers(ranks_dir: Path, node: int) -> list[tuple[Path, int]]:
    """(events file, pid) of each worker of `node` that has started: its first event names its pid."""
    started = []
    for events in ranks_dir.glob(f"node{node}-local*.events"):
        try:
            with open(events, encoding="utf-8") as lines:
                started.append((events, int(json.loads(lines.readline())["pid"])))
        except (OSError, ValueError, KeyError):  # not written yet, or gone
            continue
    return started


def _is_running(pid: int) -> bool:
    """Alive and not a zombie waiting for its launcher to reap it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill_marked_processes(run_id: str) -> int:
    """SIGKILL every process whose environment carries this run's marker (workers that
    the launcher started in sessions of their own). Returns how many were killed."""
    marker = f"{RUN_MARKER}={run_id}".encode() + b"\0"
    killed = 0
    for _ in range(20):  # a dying launcher may still start one: sweep until none is left
        found = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as environ:
                    if marker not in environ.read():
                        continue
                os.kill(int(entry.name), signal.SIGKILL)
                found += 1
            except (OSError, ProcessLookupError):
                continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """Let SIGTERM to faultlab clean up the run as Ctrl-C does."""

    def on_sigterm(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def launch(plan: LaunchPlan, keep_logs: Path | None = None) -> Capture:
    """Run the plan to its end or its deadline and return what it left behind."""
    import multiprocessing

    import torch.distributed  # noqa: F401  imported once here, inherited by every fork
    import torch.distributed.launcher.api  # noqa: F401

    run_id = uuid.uuid4().hex[:12]
    offsets = {node.master_port_offset for node in plan.nodes}
    offsets |= {offset for node in plan.nodes for _, offset in node.worker_port_offsets}
    _remove_orphaned_run_dirs()
    run_dir = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-{run_id}-"))
    (run_dir / "ranks").mkdir()
    (run_dir / experiment.PROGRAM_NAME).write_text(plan.program, encoding="utf-8")
    processes = _RunProcesses(run_id)
    forker = multiprocessing.get_context("fork")
    try:
        with _sigterm_as_interrupt(), _network(plan, run_id) as (network, hosts):
            master_port = TORCHRUN_DEFAULT_PORT if hosts else pick_master_port(offsets)
            if hosts:
                _set_up_hosts(plan, hosts, master_port)
            squatter = socket.create_server((LOOPBACK, master_port)) if plan.occupy_master_port else None
            try:
                t0 = time.time()
                for node in plan.nodes:
                    agent = forker.Process(
                        target=_run_node_agent,
                        args=(plan, node, master_port, str(run_dir), run_id, hosts.path(node.index) if hosts else None),
                        name=f"faultlab-node{node.index}",
                    )
                    agent.start()
                    processes.agents.append(agent)
                evidence = {}
                hit_deadline = _wait_for_agents(processes, run_dir, plan, t0, hosts, evidence)
                end_t = time.time() - t0
                if hosts and not evidence:
                    evidence.update({node.index: hosts.evidence(node.index) for node in plan.nodes})
                processes.kill_all()
            finally:
                if squatter is not None:
                    squatter.close()
        return _read_capture(plan, run_dir, t0, end_t, hit_deadline, master_port, processes, network, evidence)
    except KeyboardInterrupt:
        raise Interrupted("interrupted: every process of the run was stopped") from None
    finally:
        processes.kill_all()
        if keep_logs is not None:
            _keep(run_dir, keep_logs)
        _remove_tree(run_dir)


TORCHRUN_DEFAULT_PORT = 29500  # simulated hosts have their own ports: use torchrun's default
EVIDENCE_AT_S = 1.0  # when each simulated host's addresses, ports and rules are read


@contextlib.contextmanager
def _network(plan: LaunchPlan, run_id: str):
    """(description, SimulatedHosts or None) for the run's lifetime."""
    if plan.hosts:
        with netns.SimulatedHosts(run_id, len(plan.nodes)) as hosts:
            yield (f"simulated hosts: node N at {netns.HOSTS_SUBNET}.N+1 on a private bridge", hosts)
    else:
        with netns.private_loopback() as network:
            yield (network, None)


def _set_up_hosts(plan: LaunchPlan, hosts, master_port: int) -> None:
    for node, ports, action in plan.firewalls:
        verdict = "drop" if action == "drop" else "reject with tcp reset"
        if ports == "master":  # on the master's host, as a firewall in front of the store
            hosts.add_firewall(0, [f'iifname "eth0" tcp dport {master_port} {verdict}'])
        else:  # new connections to anything but the store's port
            hosts.add_firewall(node, [f'iifname "eth0" tcp flags & (syn | ack) == syn tcp dport != {master_port} {verdict}'])


def _wait_for_agents(processes: _RunProcesses, run_dir: Path, plan: LaunchPlan, t0: float, hosts, evidence) -> bool:
    """Wait until every launcher has exited; True if the deadline came first (a hang).
    Meanwhile take links down when the plan says, and read the hosts' network state."""
    deadline = time.monotonic() + plan.deadline_s
    pending_downs = sorted(plan.link_downs, key=lambda item: item[1])
    while not processes.all_exited():
        elapsed = time.time() - t0
        while hosts and pending_downs and elapsed >= pending_downs[0][1]:
            hosts.set_link(pending_downs.pop(0)[0], up=False)
        if hosts and not evidence and elapsed >= EVIDENCE_AT_S:
            evidence.update({node.index: hosts.evidence(node.index) for node in plan.nodes})
        now = time.monotonic()
        if now >= deadline and (now >= deadline + LAUNCHER_WRAPUP_S or processes.still_working(run_dir / "ranks")):
            break
        processes.note_exits(time.time() - t0)
        time.sleep(0.02)
    processes.note_exits(time.time() - t0)
    return not processes.all_exited()


def _remove_orphaned_run_dirs() -> None:
    """Run directories left by a faultlab that was SIGKILLed (nothing of it could clean up)."""
    for path in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*"):
        owner = path.name[len(RUN_DIR_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not _is_running(int(owner)):
            _remove_tree(path)


def _keep(run_dir: Path, keep_logs: Path) -> None:
    import shutil

    keep_logs.mkdir(parents=True, exist_ok=True)
    for path in run_dir.rglob("*"):
        if path.is_file() and "torchelastic" not in path.parts:
            target = keep_logs / path.relative_to(run_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


_VALUE_LINE = re.compile(r"^Rank (\d+): (\S+)$", re.MULTILINE)
# torch's launcher logs the workers it tears down ("Sending process 581 closing signal SIGTERM")
# and, in its failure report, each failed worker's exit code with its pid.
_TEARDOWN_LINE = re.compile(r"(?:Sending|Terminating|Closing) process (\d+) (?:closing|via) signal (SIG[A-Z]+)")
_FAILURE_EXITCODE = re.compile(r"exitcode\s*:\s*(-?\d+) \(pid: (\d+)\)")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _read_events(path: Path, t0: float) -> tuple[tuple[PhaseEvent, ...], dict]:
    events, start_fields = [], {}
    for line in _read_text(path).splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line cut short by a kill
            continue
        events.append(PhaseEvent(phase=record["phase"], t=round(record["t"] - t0, 3)))
        if record["phase"] == "start":
            start_fields = record
        if record["phase"] == "exit":
            start_fields["exit_code"] = record.get("code")
    return tuple(events), start_fields


def launch_command(plan: LaunchPlan, node: NodeLaunch, master_port: int) -> str:
    """The command line this node's launch stands for, with the environment the scenario set."""
    env = " ".join(f"{key}={value}" for key, value in node.env if key != "CUDA_VISIBLE_DEVICES" or plan.backend == "nccl")
    prefix = f"{env} " if env else ""
    if plan.launcher == "python":
        return f"{prefix}python {experiment.PROGRAM_NAME}"
    where = f"[host {plan.local_addr(node)}] " if plan.hosts else ""
    return (
        f"{where}{prefix}torchrun --nnodes={node.nnodes} --nproc_per_node={node.nproc_per_node} "
        f"--node_rank={node.node_rank} --master_addr={plan.master_addr(node)} "
        f"--master_port={master_port + node.master_port_offset} {experiment.PROGRAM_NAME}"
    )


def _read_status(path: Path, t0: float) -> tuple[int, float] | None:
    """(wait status as an exit code, negative for a signal; seconds since launch), if noted."""
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
        return int(status["code"]), round(status["t"] - t0, 3)
    except (OSError, ValueError, KeyError):
        return None


def _read_capture(plan, run_dir: Path, t0, end_t, hit_deadline, master_port, processes, network, evidence) -> Capture:
    nodes, ranks = [], []
    ranks_dir = run_dir / "ranks"
    for node, agent in zip(plan.nodes, processes.agents):
        log = _read_text(run_dir / f"node{node.index}.launcher.log")
        torn_down = {int(pid): sig for pid, sig in _TEARDOWN_LINE.findall(log)}
        reported_exit = {int(pid): int(code) for code, pid in _FAILURE_EXITCODE.findall(log)}
        agent_exit = agent.exitcode
        agent_end_t = processes.exit_times.get(node.index, end_t)
        # A launcher still running at the deadline tore its workers down because faultlab
        # killed it: those workers hung, whatever the launcher's log says.
        killed_at_deadline = hit_deadline and node.index not in processes.exit_times
        nodes.append(
            NodeCapture(
                node=node.index,
                node_rank=node.node_rank,
                nnodes=node.nnodes,
                nproc_per_node=node.nproc_per_node,
                master_port=master_port + node.master_port_offset,
                command=launch_command(plan, node, master_port),
                network=evidence.get(node.index, ""),
                log=log,
                exit_code=None if hit_deadline and agent_exit in (None, -signal.SIGTERM, -signal.SIGKILL) else agent_exit,
                env=dict(node.env),
            )
        )
        for local_rank in range(node.nproc_per_node):
            stem = experiment.find_slot(ranks_dir, node.index, local_rank) or ranks_dir / experiment.slot_name(
                node.index, local_rank
            )
            events, fields = _read_events(stem.with_suffix(".events"), t0)
            stdout = _read_text(stem.with_suffix(".stdout"))
            pid = fields.get("pid")
            rank = int(fields["rank"]) if fields.get("rank") not in (None, "") else None
            values = [float(v) for r, v in _VALUE_LINE.findall(stdout) if rank is None or int(r) == rank]
            status = _read_status(stem.with_suffix(".status"), t0)
            reported = status[0] if status else reported_exit.get(pid)
            exited_itself = "exit_code" in fields
            died_after_deadline = status is None or status[1] >= plan.deadline_s
            if not events:
                ending, exit_code, ended = "never_started", None, end_t
            elif reported is not None and reported >= 0:
                ending, exit_code, ended = "exited", reported, status[1] if status else events[-1].t
            elif killed_at_deadline and died_after_deadline and not exited_itself:
                ending, exit_code, ended = "killed_at_deadline", reported or -int(signal.SIGKILL), end_t
            elif pid in torn_down and not exited_itself:
                ending, exit_code = "torn_down", reported or -int(getattr(signal, torn_down[pid]))
                ended = status[1] if status else agent_end_t
            elif reported is not None:
                ending, exit_code, ended = "signaled", reported, status[1] if status else events[-1].t
            elif exited_itself:
                ending, exit_code, ended = "exited", fields["exit_code"], events[-1].t
            else:
                ending, exit_code, ended = "torn_down", None, agent_end_t
            ranks.append(
                RankCapture(
                    node=node.index,
                    local_rank=local_rank,
                    expected_rank=node.node_rank * node.nproc_per_node + local_rank,
                    rank=rank,
                    pid=pid,
                    stdout=stdout,
                    stderr=_read_text(stem.with_suffix(".stderr")),
                    events=events,
                    ending=ending,
                    exit_code=exit_code,
                    value=values[-1] if values else None,
                    end_t=round(ended, 3),
                )
            )
    return Capture(
        backend=plan.backend,
        world_size=plan.world_size,
        timeout_s=plan.timeout_s,
        deadline_s=plan.deadline_s,
        hit_deadline=hit_deadline,
        duration_s=round(end_t, 3),
        network=network,
        program=plan.program,
        ranks=tuple(ranks),
        nodes=tuple(nodes),
    )
