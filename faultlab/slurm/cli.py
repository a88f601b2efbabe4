"""The command-line face of SLURM: the options `run --slurm` and `preflight` share, and
`faultlab preflight`. Parses and renders only; no torch import."""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

import click

from ..errors import BadInput, ExitCode
from .options import SlurmOptions, check_time, load_config, parse_env


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
)
_NAMES = ("use_slurm", "slurm_config", "partition", "account", "time_limit", "gpus_per_node", "nodelist", "exclude",
          "sbatch_args", "srun_args", "slurm_env", "shared_dir")


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


@click.command()
@click.option("--nodes", type=click.IntRange(min=2), help="How many nodes to check (default: every usable node of the "
              "partition, or of --nodelist).")
@click.option("--ranks-per-node", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--pairs", type=click.Choice(["on-failure", "always", "never"]), default="on-failure", show_default=True,
              help="When to check every pair of nodes after the run across all of them.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 600), default=30.0, show_default=True,
              help="The process group's timeout in each check.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@slurm_options(required=True)
@click.pass_obj
def preflight(session, nodes, ranks_per_node, pairs, timeout_s, as_json, slurm):
    """Check a SLURM cluster's nodes with the healthy experiment before a big job.

    Runs the experiment across all nodes (init, all_reduce, destroy: every rank must hold
    N(N-1)/2), then, if it fails (or with --pairs always), on every pair of nodes, to name
    the node or link at fault and why. Every check is stored as a recording."""
    import json

    from . import preflight as checks
    from .report import preflight_report

    result = checks.run(session.store, slurm.options, nodes=nodes, ranks_per_node=ranks_per_node,
                        pairs=pairs, timeout_s=timeout_s)
    if as_json:
        click.echo(json.dumps(checks.as_dict(result), indent=2))
    else:
        click.echo(preflight_report(result))
    sys.exit(int(ExitCode.OK if result.healthy else ExitCode.NOT_REPRODUCED))
