"""A job step inside an allocation the user already holds (salloc, an sbatch job, --jobid).

Instead of submitting a job, faultlab runs the job script here with bash: it writes the run
directory and starts `srun --jobid=JOB` on the chosen nodes, which makes one job step. The
step is followed in `squeue --steps` by its name (unique per run) and ended with
`scancel JOB.STEP`: on the way out of `started`, however it comes (the end of the run, its
deadline, Ctrl-C, an error), the step is cancelled unless it already ended, and faultlab
returns only once squeue no longer lists it and the local srun has exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from ..errors import EnvironmentProblem
from . import scheduler


class Step:
    """One job step, made by a local srun faultlab started."""

    def __init__(self, process: subprocess.Popen, job_id: str, name: str) -> None:
        self.process, self.job_id, self.name = process, job_id, name
        self.label = f"SLURM step of job {job_id}"

    def step_id(self) -> str | None:
        """'JOB.STEP' while squeue lists the step, else None."""
        step_id = scheduler.job_steps(self.job_id).get(self.name)
        if step_id is not None:
            self.label = f"SLURM step {step_id}"
        return step_id

    def state(self) -> str | None:
        """RUNNING while the step is listed, PENDING while srun waits for it, None once both ended."""
        if self.step_id() is not None:
            return "RUNNING"
        return "PENDING" if self.process.poll() is None else None

    def cancel(self) -> None:
        """scancel the step; an srun still waiting for its step, or whose step squeue cannot tell
        now, is stopped instead (srun ends its step when it is terminated)."""
        with contextlib.suppress(EnvironmentProblem):
            step_id = self.step_id()
            if step_id is not None:
                scheduler.cancel(step_id)
                return
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGTERM)

    def wait_until_gone(self, limit_s: float = scheduler.LEAVE_QUEUE_S) -> None:
        """Until squeue no longer lists the step and the local srun exited (killed at the limit)."""
        try:
            scheduler.wait_while(lambda: self.step_id() is not None or self.process.poll() is None,
                                 self.label, limit_s)
        except EnvironmentProblem:
            _signal_group(self.process, signal.SIGKILL)
            raise


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


@contextlib.contextmanager
def started(script: Path, output: Path, job_id: str, name: str):
    """Run the step's script (its srun makes the step); yield the Step; on the way out cancel
    it unless it ended, and wait until it left squeue and the local srun exited."""
    with open(output, "wb") as out:
        # Its own session: a Ctrl-C at the terminal reaches faultlab, which cancels the step;
        # srun would otherwise take the signal itself and leave the step to its own devices.
        process = subprocess.Popen(["bash", str(script)], stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    step = Step(process, job_id, name)
    try:
        yield step
    finally:
        try:
            step.cancel()
            step.wait_until_gone()
        finally:
            if process.poll() is None:
                _signal_group(process, signal.SIGKILL)
            process.wait()
