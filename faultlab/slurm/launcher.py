"""SlurmLauncher: the scenario live on a SLURM cluster's nodes, as a member of the launcher seam.

One sbatch job per launch: as many nodes as the scenario's topology, one srun task per
node, each running torchrun with its slice of the faults (script.py). Given an allocation
(`jobid`), each launch is a job step of it instead (steps.py), on `nodelist` or its first
nodes. faultlab waits for every node's launcher to finish, or for the run's deadline
(counted from the moment the job starts, not from its time in the queue; for a step, from
just before its srun), then reads the shared run directory into an ordinary Capture. The job is cancelled at the deadline, on Ctrl-C or SIGTERM and on any
error, and faultlab returns only once squeue no longer lists it.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import platform
import time
import uuid
from pathlib import Path

from ..errors import EnvironmentProblem, Interrupted
from ..lab.capture import LaunchOutcome, read_capture
from ..lab.plan import LaunchPlan, build_plan
from ..lab.program import PROGRAM_NAME
from ..lab.rundir import RunDir
from ..lab.supervise import sigterm_as_interrupt
from ..launchers import LiveLauncher
from ..records import Capture, Environment
from ..scenario import Scenario
from . import scheduler, script, steps
from .options import SlurmOptions

FILE_POLL_S = 0.1  # how often the shared directory is looked at
QUEUE_POLL_S = 2.0  # how often squeue is asked (gently: a real controller serves many users)
SHARED_FS_GRACE_S = 5.0  # a finished job's last files may take this long to show on a shared file system
# Steps this process started in each allocation, across launchers (preflight makes one per group
# checked): each step gets a port of its own, so none meets a port its predecessor left behind.
STEPS_STARTED: collections.Counter = collections.Counter()


@dataclasses.dataclass(frozen=True)
class JobRun:
    """One submitted job, as far as faultlab followed it."""

    label: str  # "SLURM job 12", "SLURM step 12.3"
    record: dict  # job.json: start time, node list, master address and port
    hit_deadline: bool
    end_t: float  # seconds from the job's start to the end of the wait


class SlurmLauncher(LiveLauncher):
    def __init__(self, options: SlurmOptions) -> None:
        self.options = options
        self._cluster: str | None = None
        self._node_facts: dict | None = None  # node 0's facts from the latest run
        self.last_hosts: dict[int, str] = {}  # node index -> SLURM node name, in the latest run

    # --- what runs -------------------------------------------------------------------------

    def backend(self, scenario: Scenario) -> str:
        """nccl where the job asks for GPUs, else gloo; a scenario that needs GPUs needs them asked for."""
        if self.options.gpus_per_node:
            if scenario.topology.backend == "gloo":
                return "gloo"
            if self.options.gpus_per_node < scenario.topology.ranks_per_node:
                raise EnvironmentProblem(
                    f"scenario {scenario.id!r} runs {scenario.topology.ranks_per_node} rank(s) per node on nccl: "
                    f"--gpus-per-node {self.options.gpus_per_node} is too few")
            return "nccl"
        if scenario.requires_gpus or scenario.topology.backend == "nccl":
            raise EnvironmentProblem(f"scenario {scenario.id!r} needs GPUs: give --gpus-per-node")
        return "gloo"

    def plan(self, scenario: Scenario, backend: str, healthy: bool = False,
             extra_env: dict[str, str] | None = None) -> LaunchPlan:
        problem = script.refusal(scenario) if not healthy else None
        if problem:
            raise EnvironmentProblem(problem)
        return build_plan(scenario, backend, healthy=healthy, extra_env=extra_env, cluster_env=self.options.env_dict,
                          sweep=self.sweep)

    def job_script(self, scenario: Scenario, backend: str, run_dir: RunDir, run_id: str,
                   healthy: bool = False, extra_env: dict[str, str] | None = None) -> str:
        plan = self.plan(scenario, backend, healthy, extra_env)
        return self._render(scenario, plan, healthy, run_dir, run_id, self._step(plan, scenario, run_id))

    def _render(self, scenario: Scenario, plan: LaunchPlan, healthy: bool, run_dir: RunDir, run_id: str,
                step: script.StepTarget | None) -> str:
        return script.render(plan, self.options, run_dir=str(run_dir.root), run_id=run_id,
                             title=_title(scenario, healthy), job_name=f"faultlab-{scenario.id}", step=step)

    def _step(self, plan: LaunchPlan, scenario: Scenario, run_id: str) -> script.StepTarget | None:
        """Where the launch runs as a step of the allocation (None: a job of its own)."""
        job_id = self.options.jobid
        if job_id is None:
            return None
        held = scheduler.job_nodes(job_id)
        nodes = scheduler.expand_nodelist(self.options.nodelist) if self.options.nodelist else held
        outside = [node for node in nodes if node not in held]
        if outside:
            raise EnvironmentProblem(f"{', '.join(outside)}: not in allocation {job_id} ({', '.join(held)})")
        if len(nodes) < len(plan.nodes):
            raise EnvironmentProblem(f"allocation {job_id} has {len(nodes)} node(s) to use; the run needs "
                                     f"{len(plan.nodes)}")
        STEPS_STARTED[job_id] += 1
        return script.StepTarget(job_id, tuple(nodes[:len(plan.nodes)]), f"faultlab-{scenario.id}-{run_id}",
                                 script.step_port(job_id, STEPS_STARTED[job_id]))

    def new_run_dir(self, scenario: Scenario) -> tuple[RunDir, str]:
        run_id = uuid.uuid4().hex[:12]
        return RunDir(self.options.shared_dir.expanduser().resolve() / f"{scenario.id}-{run_id}"), run_id

    # --- the seam ----------------------------------------------------------------------------

    def cluster(self) -> str:
        if self._cluster is None:
            self._cluster = scheduler.cluster_name() or "unnamed"
        return self._cluster

    def environment(self) -> Environment:
        """Where the run was made: the cluster and partition (the key baselines are found by),
        with the versions the nodes reported (before any run: what options.python has here)."""
        facts = self._node_facts or _local_facts(self.options.python)
        return Environment(
            host=f"slurm:{self.cluster()}/{self.options.partition or 'default'}",
            platform=facts.get("platform", ""), python=facts.get("python", ""), torch=facts.get("torch", ""),
            cuda=None, nccl=None, gloo=True, gpus=(), driver=None,
        )

    def capture(self, scenario: Scenario, backend: str, *, healthy: bool = False,
                extra_env: dict[str, str] | None = None, keep_logs: Path | None = None) -> Capture:
        problem = scheduler.missing_commands()
        if problem:
            raise EnvironmentProblem(problem)
        plan = self.plan(scenario, backend, healthy, extra_env)
        run_dir, run_id = self.new_run_dir(scenario)
        try:
            run_dir.ranks.mkdir(parents=True)
            step = self._step(plan, scenario, run_id)
            run_dir.job_script.write_text(self._render(scenario, plan, healthy, run_dir, run_id, step),
                                          encoding="utf-8")
            job = self._run_job(plan, run_dir, step)
            return self._read(plan, run_dir, job)
        finally:
            if keep_logs is not None:
                run_dir.keep(keep_logs)
            run_dir.remove()

    # --- one job -----------------------------------------------------------------------------

    def _run_job(self, plan: LaunchPlan, run_dir: RunDir, step: script.StepTarget | None) -> JobRun:
        started = (steps.started(run_dir.job_script, run_dir.job_output, step.job_id, step.name) if step
                   else scheduler.submitted(run_dir.job_script, run_dir.job_output))
        try:
            with sigterm_as_interrupt(), started as job:
                record = self._wait_for_start(job, run_dir)
                hit_deadline, end_t = self._wait_for_end(job, run_dir, plan, record["t"])
                if hit_deadline:
                    job.cancel()
                return JobRun(job.label, record, hit_deadline, end_t)
        except KeyboardInterrupt:
            what = "step was cancelled" if step else "job was cancelled"
            raise Interrupted(f"interrupted: the SLURM {what} and has left the queue") from None

    def _wait_for_start(self, job, run_dir: RunDir) -> dict:
        """job.json, once the job runs; EnvironmentProblem if it ends first or waits too long."""
        give_up = time.monotonic() + self.options.queue_timeout_s
        next_ask = 0.0
        while True:
            record = _read_json(run_dir.job_record)
            if record:
                return record
            now = time.monotonic()
            if now >= next_ask:
                state = job.state()
                if state is None or state in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "COMPLETED"):
                    time.sleep(SHARED_FS_GRACE_S if state is None else 0)
                    record = _read_json(run_dir.job_record)
                    if record:
                        return record
                    raise EnvironmentProblem(f"{job.label} ended before it started the run: "
                                             f"{_tail(run_dir.job_output) or 'no output'}")
                next_ask = now + QUEUE_POLL_S
            if now >= give_up:
                raise EnvironmentProblem(f"{job.label} did not start within {self.options.queue_timeout_s:.0f} s "
                                         "(still queued); it was cancelled")
            time.sleep(FILE_POLL_S)

    def _wait_for_end(self, job, run_dir: RunDir, plan: LaunchPlan, t0: float) -> tuple[bool, float]:
        """(hit the deadline, seconds since the job started) once every node's launcher ended,
        the job left the queue, or the deadline came."""
        next_ask, gone_at = 0.0, None
        while True:
            if all(run_dir.node_exit(node.index).exists() for node in plan.nodes):
                return False, time.time() - t0
            if time.time() >= t0 + plan.deadline_s:
                return True, time.time() - t0
            now = time.monotonic()
            if gone_at is None and now >= next_ask:
                if job.state() in (None, "COMPLETING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
                    gone_at = now
                next_ask = now + QUEUE_POLL_S
            if gone_at is not None and now >= gone_at + SHARED_FS_GRACE_S:
                return False, time.time() - t0
            time.sleep(FILE_POLL_S)

    def _read(self, plan: LaunchPlan, run_dir: RunDir, job: JobRun) -> Capture:
        t0 = float(job.record["t"])
        starts = {node.index: _read_json(run_dir.node_start(node.index)) for node in plan.nodes}
        exits = {node.index: _read_json(run_dir.node_exit(node.index)) for node in plan.nodes}
        exit_times = {index: round(float(done["t"]) - t0, 3) for index, done in exits.items() if done}
        if job.hit_deadline:  # a launcher that ended only as the job was cancelled did not end in time
            exit_times = {index: t for index, t in exit_times.items() if t < plan.deadline_s}
        self._node_facts = starts.get(0) or self._node_facts
        master_port = int(job.record.get("master_port", 0))
        hosts = {index: (facts or {}).get("host", "?") for index, facts in starts.items()}
        self.last_hosts = hosts
        outcome = LaunchOutcome(
            t0=t0, end_t=job.end_t, hit_deadline=job.hit_deadline, master_port=master_port,
            agent_exits={index: (done["code"] if done else None) for index, done in exits.items()},
            agent_exit_times=exit_times,
            network=(f"{job.label} on {', '.join(hosts.values())} (cluster {self.cluster()}, "
                     f"partition {self.options.partition or 'default'}); store at "
                     f"{job.record.get('master_addr')}:{master_port}"),
        )
        capture = read_capture(plan, run_dir, outcome)
        nodes = tuple(
            dataclasses.replace(node, command=_command_line(plan, node.node, hosts[node.node],
                                                            job.record.get("master_addr", "?"), master_port))
            for node in capture.nodes
        )
        return dataclasses.replace(capture, nodes=nodes)


def _title(scenario: Scenario, healthy: bool) -> str:
    if healthy or not scenario.faults:
        return f"the healthy experiment on {scenario.topology.nodes} node(s) x {scenario.topology.ranks_per_node} rank(s)"
    faults = "; ".join(f"{fault.kind} on {fault.target.describe()}" for fault in scenario.faults)
    return f"scenario {scenario.id} ({faults})"


def _command_line(plan: LaunchPlan, index: int, host: str, master_addr: str, master_port: int) -> str:
    """What node `index` ran, as a shell would show it, with the addresses the job really used."""
    node = plan.nodes[index]
    env = " ".join(f"{key}={value}" for key, value in node.env)
    prefix = f"[{host}] " + (f"{env} " if env else "")
    if plan.launcher == "python":
        return f"{prefix}python {PROGRAM_NAME}"
    return (f"{prefix}torchrun --nnodes={node.nnodes} --nproc_per_node={node.nproc_per_node} "
            f"--node_rank={node.node_rank} --master_addr={node.master_addr or master_addr} "
            f"--master_port={master_port + node.master_port_offset} {PROGRAM_NAME}")


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not there yet, or still being written
        return None


def _tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return ""


def _local_facts(python: str) -> dict:
    """What `python` reports here, without importing torch (importlib.metadata)."""
    import subprocess

    facts = {"platform": f"{platform.system()} {platform.machine()}", "python": platform.python_version()}
    try:
        done = subprocess.run([python, "-c", script.NODE_FACTS, os.uname().nodename], capture_output=True,
                              text=True, timeout=30)
        facts.update(json.loads(done.stdout))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    return facts
