"""SLURM's own commands, as faultlab uses them: sbatch to submit, squeue to watch, scancel to end.

A submitted job is always cancelled and waited out of squeue before faultlab returns,
whatever happens (the end of the run, its deadline, Ctrl-C, an error): `submitted` is a
context manager that guarantees it, and yields a `Job` (steps.py has the same for a job
step inside an allocation).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

from ..errors import EnvironmentProblem

COMMAND_TIMEOUT_S = 30  # one sbatch, squeue or scancel call
POLL_S = 0.2
# How long a cancelled or finished job may stay in squeue (COMPLETING: SLURM's KillWait,
# epilogs) before faultlab reports it as left behind.
LEAVE_QUEUE_S = 90.0


def missing_commands() -> str | None:
    """What this machine lacks to submit jobs, in words; None if nothing."""
    missing = [name for name in ("sbatch", "squeue", "scancel", "scontrol") if shutil.which(name) is None]
    if missing:
        return f"SLURM's client commands are not installed here (missing: {', '.join(missing)})"
    return None


def _run(*command: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except FileNotFoundError:
        raise EnvironmentProblem(f"{command[0]} is not installed here") from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"{command[0]} did not answer within {COMMAND_TIMEOUT_S} s: is slurmctld up?") from None


def _first_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stderr or done.stdout).strip()
    return text.splitlines()[0] if text else f"exit status {done.returncode}"


def submit(script: Path, output: Path) -> str:
    """sbatch the script with its output file; returns the job id."""
    done = _run("sbatch", "--parsable", f"--output={output}", str(script))
    if done.returncode != 0:
        raise EnvironmentProblem(f"sbatch refused the job: {_first_line(done)}")
    return done.stdout.strip().split(";")[0]


def state(job_id: str) -> str | None:
    """The job's state as squeue shows it (PENDING, RUNNING, COMPLETING...), None once it left."""
    done = _run("squeue", "--noheader", f"--jobs={job_id}", "--format=%T")
    if done.returncode != 0:
        if "Invalid job id" in (done.stderr or ""):
            return None
        raise EnvironmentProblem(f"squeue failed: {_first_line(done)}")
    return done.stdout.strip() or None


def cancel(job_id: str) -> None:
    _run("scancel", job_id)


def job_steps(job_id: str) -> dict[str, str]:
    """The job's steps squeue lists: step name -> 'JOB.STEP'; none once the job left. A squeue
    that fails otherwise raises: an empty answer would read as 'every step ended'."""
    done = _run("squeue", "--noheader", "--steps", f"--jobs={job_id}", "--format=%i %j")
    if done.returncode != 0:
        if "Invalid job id" in (done.stderr or ""):
            return {}
        raise EnvironmentProblem(f"squeue failed: {_first_line(done)}")
    return {fields[1]: fields[0] for fields in map(str.split, done.stdout.splitlines()) if len(fields) == 2}


def wait_until_gone(job_id: str, limit_s: float = LEAVE_QUEUE_S) -> None:
    """Until squeue no longer lists the job."""
    wait_while(lambda: state(job_id) is not None, f"SLURM job {job_id}", limit_s)


def wait_while(still_there, label: str, limit_s: float) -> None:
    """Poll `still_there()` until it is false. A squeue that fails meanwhile (slurmctld busy) counts
    as 'still there' and is asked again; past `limit_s`, EnvironmentProblem names its last error."""
    end, unanswered = time.monotonic() + limit_s, ""
    while True:
        try:
            there, unanswered = still_there(), ""
        except EnvironmentProblem as problem:
            there, unanswered = True, f" ({problem})"
        if not there:
            return
        if time.monotonic() >= end:
            raise EnvironmentProblem(f"{label} is still there {limit_s:.0f} s after it was cancelled{unanswered}")
        time.sleep(POLL_S)


class Job:
    """A batch job faultlab submitted, as the launcher follows it."""

    def __init__(self, job_id: str) -> None:
        self.id = job_id
        self.label = f"SLURM job {job_id}"

    def state(self) -> str | None:
        return state(self.id)

    def cancel(self) -> None:
        cancel(self.id)


@contextlib.contextmanager
def submitted(script: Path, output: Path):
    """Submit; yield the Job; on the way out (however it comes) cancel the job unless it
    already left, and wait until squeue no longer lists it."""
    job_id = submit(script, output)
    try:
        yield Job(job_id)
    finally:
        try:
            ended = state(job_id) in (None, "COMPLETED", "COMPLETING")
        except EnvironmentProblem:
            ended = False  # squeue cannot tell now: cancel (a job that ended meanwhile ignores it)
        if not ended:
            with contextlib.suppress(EnvironmentProblem):
                cancel(job_id)
        wait_until_gone(job_id)


def cluster_name() -> str:
    """ClusterName from the controller's configuration ('' if it cannot be read)."""
    done = _run("scontrol", "show", "config")
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "ClusterName":
            return value.strip()
    return ""


def expand_nodelist(nodelist: str) -> list[str]:
    """'n[1-3]' -> ['n1', 'n2', 'n3'] (scontrol show hostnames)."""
    done = _run("scontrol", "show", "hostnames", nodelist)
    if done.returncode != 0:
        raise EnvironmentProblem(f"scontrol cannot expand the node list {nodelist!r}: {_first_line(done)}")
    return done.stdout.split()


def job_nodes(job_id: str) -> list[str]:
    """The nodes of a running job (an allocation faultlab runs steps in)."""
    done = _run("squeue", "--noheader", f"--jobs={job_id}", "--format=%T %N")
    fields = done.stdout.split()
    if done.returncode != 0 or not fields:
        raise EnvironmentProblem(f"SLURM job {job_id} is not in the queue: {_first_line(done)}")
    if fields[0] != "RUNNING" or len(fields) < 2:
        raise EnvironmentProblem(f"SLURM job {job_id} is {fields[0]}, not running: no nodes to run steps on")
    return expand_nodelist(fields[1])


def partition_nodes(partition: str | None) -> list[str]:
    """The nodes of a partition (the default one when None) that can take jobs."""
    command = ["sinfo", "--noheader", "--Node", "--format=%N %t"]
    if partition:
        command.append(f"--partition={partition}")
    done = _run(*command)
    if done.returncode != 0:
        raise EnvironmentProblem(f"sinfo failed: {_first_line(done)}")
    usable = ("idle", "mix", "alloc", "comp")
    nodes = [line.split()[0] for line in done.stdout.splitlines() if line.split()[1].rstrip("*~#$@") in usable]
    return list(dict.fromkeys(nodes))
