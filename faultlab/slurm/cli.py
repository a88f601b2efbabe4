"""The SLURM options `run --slurm` and `preflight` share on the command line. Parses only;
no torch import."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import click

from ..errors import BadInput
from .options import SlurmOptions, check_jobid, check_time, load_config, parse_env


@dataclasses.dataclass(frozen=True)
class SlurmRequest:
    options: SlurmOptions
    print_script: bool = False


_OPTIONS = (
    click.option("--slurm", "use_slurm", is_flag=True, help="Run on a SLURM cluster (sbatch), one node per scenario node."),
    click.option("--slurm-config", type=click.Path(dir_okay=False, path_type=Path),
                 help="A YAML file of SLURM settings (implies --slurm; options given here win)."),
    click.option("--partition", help="sbatch --partition."),
    click.option("--account", help="sbatch --account."),
    click.option("--time", "time_limit", help="sbatch --time (default: the run's deadline plus a minute)."),
    click.option("--gpus-per-node", type=click.IntRange(min=0), help="GPUs per node (then nccl); default 0: gloo on CPU."),
    click.option("--nodelist", help="sbatch --nodelist, e.g. 'n[1-2]'."),
    click.option("--exclude", help="sbatch --exclude: nodes to leave out."),
    click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG", help="An extra sbatch argument (repeatable)."),
    click.option("--srun-arg", "srun_args", multiple=True, metavar="ARG", help="An extra srun argument (repeatable)."),
    click.option("--slurm-env", "slurm_env", multiple=True, metavar="KEY=VALUE",
                 help="Environment of every node, e.g. GLOO_SOCKET_IFNAME=eth0 (repeatable)."),
    click.option("--shared-dir", type=click.Path(file_okay=False, path_type=Path),
                 help="A directory every node sees, for run directories (default ~/.cache/faultlab/slurm-runs)."),
    click.option("--jobid", help="Run as job steps of this allocation you hold (srun --jobid), not new sbatch jobs "
                 "(preflight inside salloc or an sbatch job uses its own)."),
)
_NAMES = ("use_slurm", "slurm_config", "partition", "account", "time_limit", "gpus_per_node", "nodelist", "exclude",
          "sbatch_args", "srun_args", "slurm_env", "shared_dir", "jobid")


def slurm_request(values: dict, print_script: bool = False, required: bool = False) -> SlurmRequest | None:
    """The SLURM options given on the command line (over a config file), or None when the
    command runs locally."""
    wanted = required or values["use_slurm"] or values["slurm_config"] or print_script
    if not wanted:
        given = [name for name in _NAMES[2:] if values[name] not in (None, ())]
        if given:
            raise BadInput(f"--{given[0].replace('_', '-')} is a SLURM option: add --slurm")
        return None
    base = load_config(values["slurm_config"]) if values["slurm_config"] else SlurmOptions()
    env = dict(base.env)
    env.update(parse_env(values["slurm_env"], "--slurm-env"))
    options = base.merged(
        partition=values["partition"], account=values["account"], gpus_per_node=values["gpus_per_node"],
        time=check_time(values["time_limit"], "--time") if values["time_limit"] else None,
        nodelist=values["nodelist"], exclude=values["exclude"], shared_dir=values["shared_dir"],
        sbatch_args=base.sbatch_args + tuple(values["sbatch_args"]),
        srun_args=base.srun_args + tuple(values["srun_args"]), env=tuple(sorted(env.items())),
        jobid=check_jobid(values["jobid"], "--jobid") if values["jobid"] else None,
    )
    return SlurmRequest(options, print_script)


def slurm_options(print_script: bool = False, required: bool = False):
    """Adds the SLURM options to a command, which receives them as one `slurm` argument
    (a SlurmRequest, or None for a local run)."""

    def decorate(command):
        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            values = {name: kwargs.pop(name) for name in _NAMES}
            wants_script = kwargs.pop("print_script", False)
            kwargs["slurm"] = slurm_request(values, wants_script, required)
            return command(*args, **kwargs)

        decorated = wrapper
        if print_script:
            decorated = click.option("--print-script", is_flag=True,
                                     help="Print the sbatch job script instead of submitting it.")(decorated)
        for option in reversed(_OPTIONS):
            decorated = option(decorated)
        return decorated

    return decorate


def _byte_count(context, parameter, value):
    from ..lab.sweep import parse_bytes

    parsed = parse_bytes(value)
    if parsed is None or parsed < 8:
        raise BadInput(f"--sweep-max-bytes: {value!r} is not a size of at least 8 bytes (e.g. 65536, 64K, 64M)")
    return parsed


_PREFLIGHT_OPTIONS = (
    click.option("--nodes", metavar="N|NODES", help="The first N nodes (N >= 2), or these nodes ('n1,n3', "
                 "'n[1-2]'); default: every usable node of the partition, of --nodelist, or of the allocation."),
    click.option("--ranks-per-node", type=click.IntRange(min=1), default=1, show_default=True),
    click.option("--pairs", type=click.Choice(["on-failure", "always", "never"]), default="on-failure",
                 show_default=True, help="When to check every pair of nodes after the run across all of them "
                 "(always: to compare their bandwidth)."),
    click.option("--timeout", "timeout_s", type=click.FloatRange(1, 600), default=30.0, show_default=True,
                 help="The process group's timeout in each check, in seconds."),
    click.option("--sweep/--no-sweep", default=True, show_default=True,
                 help="Measure all_reduce bandwidth over a sweep of sizes in each check (algbw, busbw)."),
    click.option("--sweep-max-bytes", default="64M", show_default=True, callback=_byte_count,
                 help="The sweep's largest message: sizes double from 8 B up to it (e.g. 65536, 64K, 64M)."),
    click.option("--sweep-seconds", type=click.FloatRange(0.1, 600), default=10.0, show_default=True,
                 help="The sweep's time budget in each check: it stops before a size that would overrun it."),
    click.option("--local", is_flag=True, help="Check this host alone, without SLURM: --ranks-per-node ranks "
                 "under torch's launcher, on nccl with a GPU each, else gloo."),
)


def preflight_options(command):
    """The options of `faultlab preflight` besides the SLURM ones."""
    for option in reversed(_PREFLIGHT_OPTIONS):
        command = option(command)
    return command
