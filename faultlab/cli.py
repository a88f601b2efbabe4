"""The faultlab command line: parse, call one core function, render. No torch import here."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import click

from .errors import BadInput, ExitCode, FaultlabError


class _Group(click.Group):
    """Turns every FaultlabError into one line on stderr and its exit code; no traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except FaultlabError as error:
            click.echo(f"faultlab: error: {error}", err=True)
            ctx.exit(int(error.exit_code))
        except KeyboardInterrupt:
            click.echo("faultlab: interrupted", err=True)
            ctx.exit(int(ExitCode.INTERRUPTED))


def _store(ctx):
    from .store import Store

    return Store(ctx.obj["db"])


def _emit_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="FAULTLAB_DB",
    help="Recording store (SQLite file). Default: $XDG_DATA_HOME/faultlab/faultlab.db.",
)
@click.version_option(package_name="faultlab")
@click.pass_context
def main(ctx, db):
    """faultlab: break real PyTorch distributed jobs on purpose, and learn to read the wreckage.

    Exit codes: 0 the run reproduced what the scenario expects; 1 it did not; 2 bad input;
    3 this machine cannot run it; 130 interrupted.
    """
    ctx.obj = {"db": db}


@main.command()
@click.argument("scenario", required=False)
@click.option("--all", "run_all", is_flag=True, help="Run the whole catalog, one scenario after another, with progress.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole recording (with --all: a summary) as JSON.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), help="Keep the raw per-rank logs in this directory.")
@click.option("--fresh-baseline", is_flag=True, help="Run the healthy baseline again instead of reusing the stored one.")
@click.option("--debug", "debug", metavar="KNOB", help="Re-run with a debug knob: detail, cpp-info, nccl-info, nccl-trace.")
@click.option("--no-explain", is_flag=True, help="Leave out the explanation (what a drill would hide).")
@click.option("--live", "live_only", is_flag=True, help="Run live or fail: never replay a shipped recording.")
@click.option("--record-to", type=click.Path(file_okay=False, path_type=Path),
              help="Also write the run and its baseline as a recording file in this directory.")
@click.pass_context
def run(ctx, scenario, run_all, as_json, logs, fresh_baseline, debug, no_explain, live_only, record_to):
    """Run SCENARIO (an id or a YAML file) live and compare it with the healthy baseline.

    Where this host cannot run it (a GPU scenario without the GPUs), the scenario's shipped
    recording is replayed instead, and labelled as a replay. With --all, every scenario of
    the catalog runs (GPU ones live or replayed), with a line of progress each."""
    from . import render, runner, scenario as scenarios
    from .serial import to_dict

    if run_all == bool(scenario):
        raise BadInput("give either a SCENARIO or --all")
    options = runner.RunOptions(fresh_baseline=fresh_baseline, keep_logs=logs, debug=debug,
                                live_only=live_only, record_to=record_to)
    if run_all:
        catalog = scenarios.load_all()
        with _store(ctx) as store:
            results = runner.run_suite(catalog, store, options, progress=None if as_json else click.echo)
        if as_json:
            _emit_json([render.suite_row(item, recording, seconds) for item, recording, seconds in results])
        else:
            click.echo("\n" + render.suite_summary(results))
        ctx.exit(int(ExitCode.OK if all(r.reproduced for _, r, _ in results) else ExitCode.NOT_REPRODUCED))
    loaded = scenarios.resolve(scenario)
    with _store(ctx) as store:
        recording = runner.run_scenario(loaded, store, options)
    if as_json:
        _emit_json(to_dict(recording))
    else:
        click.echo(render.run_report(loaded, recording, show_explanation=not no_explain))
        click.echo(f"\nRecording {recording.id} saved in {store.path}")
        if logs:
            click.echo(f"Raw logs kept in {logs}")
        if record_to:
            click.echo(f"Recording file written to {record_to}")
    ctx.exit(int(ExitCode.OK if recording.reproduced else ExitCode.NOT_REPRODUCED))


@main.command()
@click.argument("scenario", default="healthy")
@click.option("--json", "as_json", is_flag=True, help="Print the baseline recording as JSON.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), help="Keep the raw per-rank logs here.")
@click.pass_context
def baseline(ctx, scenario, as_json, logs):
    """Run the healthy experiment on SCENARIO's topology (default: the healthy scenario) and store it."""
    from . import render, runner, scenario as scenarios
    from .plan import choose_backend, gpus_on_host
    from .serial import to_dict

    loaded = scenarios.resolve(scenario)
    host_gpus = gpus_on_host()
    backend = choose_backend(loaded, host_gpus)
    options = runner.RunOptions(fresh_baseline=True, keep_logs=logs)
    with _store(ctx) as store:
        recording = runner.baseline_for(loaded, backend, host_gpus, runner.environment(), store, options)
    if as_json:
        _emit_json(to_dict(recording))
    else:
        click.echo(render.baseline_report(recording))
        click.echo(f"\nRecording {recording.id} saved in {store.path}")
    ctx.exit(int(ExitCode.OK if recording.reproduced else ExitCode.NOT_REPRODUCED))


@main.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def list_scenarios(as_json):
    """The scenario catalog: id, title, cause, difficulty, and whether it runs live here."""
    from tabulate import tabulate

    from . import scenario as scenarios
    from .plan import gpus_on_host

    loaded = scenarios.load_all()
    host_gpus = gpus_on_host()
    rows = []
    for item in loaded:
        live = "yes" if host_gpus >= item.requires_gpus else f"no: needs {item.requires_gpus} GPU(s)"
        rows.append({"id": item.id, "title": item.title, "cause": item.answer.cause,
                     "difficulty": item.difficulty, "live here": live})
    if as_json:
        _emit_json(rows)
    else:
        click.echo(tabulate(rows, headers="keys"))
        click.echo(f"\n{len(rows)} scenarios, {len({r['cause'] for r in rows})} causes; this host has {host_gpus} GPU(s).")


@main.command()
@click.argument("scenario")
@click.option("--code", is_flag=True, help="Print the healthy program and the broken one as a diff.")
@click.option("--backend", type=click.Choice(["gloo", "nccl"]), help="Render the program for this backend.")
def show(scenario, code, backend):
    """Show SCENARIO: ticket, topology, faults, hints (and with --code, the program diff)."""
    from . import experiment, scenario as scenarios
    from .faults import FAULT_KINDS_BY_ID
    from .plan import program_for

    loaded = scenarios.resolve(scenario)
    backend = backend or ("nccl" if loaded.topology.backend == "nccl" else "gloo")
    if code:
        healthy = program_for(loaded, backend, healthy=True)
        broken = program_for(loaded, backend)
        click.echo(f"# {experiment.PROGRAM_NAME}, the healthy program ({backend}):\n")
        click.echo(healthy)
        diff = experiment.program_diff(healthy, broken)
        if diff:
            click.echo(f"# What {loaded.id} changes in it:\n")
            click.echo(diff)
        else:
            click.echo(f"# {loaded.id} runs this program unchanged: its faults are in the launch.")
        return
    topology = loaded.topology
    lines = [
        f"{loaded.id}: {loaded.title} (difficulty {loaded.difficulty})",
        f"topology: {topology.nodes} node(s) x {topology.ranks_per_node} rank(s), backend {topology.backend}"
        + (f", {topology.gpus_per_node} GPU(s) per node" if topology.gpus_per_node else "")
        + (f"; needs {loaded.requires_gpus} GPU(s) live" if loaded.requires_gpus else "; live on CPU"),
        f"timeout: {loaded.timeout_s:g}s",
        "",
        "Ticket:",
        textwrap.indent(textwrap.fill(loaded.ticket, 96), "  "),
        "",
        "Faults:",
    ]
    for fault in loaded.faults or ():
        kind = FAULT_KINDS_BY_ID[fault.kind]
        params = ", ".join(f"{k}={v}" for k, v in fault.params.items())
        lines.append(f"  - {fault.kind} on {fault.target.describe()}" + (f" ({params})" if params else "") + f": {kind.summary}")
    if not loaded.faults:
        lines.append("  (none: the healthy run)")
    lines += ["", f"Expected: verdict {loaded.expect.verdict}; signatures {', '.join(loaded.expect.signatures) or '-'}"]
    if loaded.hints:
        lines += ["", "Hints:"] + [f"  {index}. {hint}" for index, hint in enumerate(loaded.hints, 1)]
    click.echo("\n".join(lines))


@main.command()
@click.option("--json", "as_json", is_flag=True)
def causes(as_json):
    """The cause catalog shared by scenarios, drills, runbooks and diagnose."""
    from dataclasses import asdict

    from tabulate import tabulate

    from .causes import CAUSES

    if as_json:
        _emit_json([asdict(cause) for cause in CAUSES])
        return
    click.echo(tabulate([[c.id, c.title] for c in CAUSES], headers=["cause", "title"]))


if __name__ == "__main__":
    sys.exit(main())
