"""The faultlab command line: parse, make one application call (app.py holds the rules),
render one report. No torch is imported until a command needs this host's facts or a launch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .errors import BadInput, ExitCode, FaultlabError, exit_code_of, sigterm_raises_terminated
from .slurm.cli import preflight_options, slurm_options


class _Group(click.Group):
    """Turns every FaultlabError into one line on stderr and its exit code; no traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except FaultlabError as error:
            click.echo(f"faultlab: error: {error}", err=True)
            ctx.exit(int(error.exit_code))
        except KeyboardInterrupt as stop:
            click.echo("faultlab: interrupted", err=True)
            ctx.exit(int(exit_code_of(stop)))


class _Invocation:
    """What one command shares: the store, opened once on first use and closed at exit
    (click owns it), and this host's facts, probed once."""

    def __init__(self, ctx: click.Context, db: Path | None) -> None:
        self._ctx, self._db = ctx, db
        self._store = self._host = None

    @property
    def store(self):
        if self._store is None:
            from . import app

            self._store = self._ctx.with_resource(app.open_store(self._db))
        return self._store

    @property
    def stored(self):
        """The store for a read-only command: never created (nor its folder) where absent."""
        if self._store is None:
            from . import app

            self._store = self._ctx.with_resource(app.open_store(self._db, readonly=True))
        return self._store

    @property
    def host(self):
        if self._host is None:
            from . import app

            self._host = app.probe_host()
        return self._host


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

    Exit codes: 0 the run reproduced what the scenario expects; 1 it did not; 2 bad input
    (an unreadable store too); 3 this machine cannot run it; 130 interrupted; 143 terminated.
    """
    from . import app

    app.begin_command()
    ctx.call_on_close(sigterm_raises_terminated())
    ctx.obj = _Invocation(ctx, db)


@main.command()
@click.argument("scenario", required=False)
@click.option("--all", "run_all", is_flag=True, help="Run the whole catalog, one scenario after another, with a line of progress each; exit 0 only if every one reproduced.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole recording (with --all: a summary) as JSON.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), help="Keep the raw logs here: run/ and baseline/, each with ranks/node<N>-local<L>-rank<R>.{stdout,stderr,events,status}, node<N>.launcher.log and train.py; a replay writes the recorded ones, with RECORDED.txt saying where and when they were made.")
@click.option("--fresh-baseline", is_flag=True, help="Run the healthy baseline again instead of reusing the stored one.")
@click.option("--debug", "debug", metavar="KNOB", help="Run with a debug setting on every node: detail (TORCH_DISTRIBUTED_DEBUG=DETAIL), cpp-info (TORCH_CPP_LOG_LEVEL=INFO), nccl-info (NCCL_DEBUG=INFO), nccl-trace (TORCH_NCCL_TRACE_BUFFER_SIZE=2000, TORCH_NCCL_DUMP_ON_TIMEOUT=1).")
@click.option("--no-explain", is_flag=True, help="Leave out the explanation (what a drill would hide).")
@click.option("--wide", is_flag=True, help="Keep every table row and log line on one line, however wide.")
@click.option("--live", "live_only", is_flag=True, help="Run live or fail (exit 3): never replay a shipped recording.")
@click.option("--record-to", type=click.Path(file_okay=False, path_type=Path),
              help="Also write the run and its baseline as one recording file, DIR/<scenario>.<hardware>.json (how recordings/ is made).")
@slurm_options(print_script=True)
@click.pass_obj
def run(session, scenario, run_all, as_json, logs, fresh_baseline, debug, no_explain, wide, live_only, record_to,
        slurm):
    """Run SCENARIO (an id or a YAML file) live and compare it with the healthy baseline.

    Where this host cannot run it (a GPU scenario without the GPUs), the scenario's shipped
    recording is replayed instead, and labelled as a replay. With --all, every scenario of
    the catalog runs (GPU ones live or replayed), with a line of progress each. With
    --slurm, it runs on a SLURM cluster's nodes instead (docs/cluster.md)."""
    from . import app
    from .reports import text

    if run_all == bool(scenario):
        raise BadInput("give either a SCENARIO or --all")
    if run_all and slurm:
        raise BadInput("--slurm runs one SCENARIO at a time, not --all")
    options = app.RunOptions(fresh_baseline=fresh_baseline, keep_logs=logs, debug=debug,
                         live_only=live_only, record_to=record_to)
    if run_all:
        progress = None if as_json else (lambda *finished: click.echo(text.suite_progress(*finished)))
        results = app.run_all(session.store, session.host, options, progress)
        if as_json:
            _emit_json([text.suite_row(item, recording, seconds) for item, recording, seconds in results])
        else:
            click.echo("\n" + text.suite_summary(results))
        sys.exit(int(ExitCode.OK if all(r.reproduced for _, r, _ in results) else ExitCode.NOT_REPRODUCED))
    if slurm and slurm.print_script:
        click.echo(app.cluster_job_script(scenario, slurm.options, options), nl=False)
        return
    if slurm:
        loaded, recording = app.run_on_cluster(scenario, session.store, slurm.options, options)
    else:
        loaded, recording = app.run(scenario, session.store, session.host, options)
    if as_json:
        _emit_json(text.as_json(recording))
    else:
        width = None if wide else text.terminal_width()
        click.echo(text.run_report(loaded, recording, show_explanation=not no_explain, width=width))
        click.echo(f"\nRecording {recording.id} saved in {session.store.path}")
        if logs:
            click.echo(f"Raw logs kept in {logs}")
        if record_to and recording.live:
            click.echo(f"Recording file written to {record_to}")
    sys.exit(int(ExitCode.OK if recording.reproduced else ExitCode.NOT_REPRODUCED))


@main.command()
@click.argument("scenario", default="healthy")
@click.option("--json", "as_json", is_flag=True, help="Print the baseline recording as JSON.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), help="Keep the raw per-rank logs here.")
@click.pass_obj
def baseline(session, scenario, as_json, logs):
    """Run the healthy experiment on SCENARIO's topology (default: the healthy scenario) and store it."""
    from . import app
    from .reports import text

    recording = app.baseline(scenario, session.store, session.host, logs)
    if as_json:
        _emit_json(text.as_json(recording))
    else:
        click.echo(text.baseline_report(recording))
        click.echo(f"\nRecording {recording.id} saved in {session.store.path}")
    sys.exit(int(ExitCode.OK if recording.reproduced else ExitCode.NOT_REPRODUCED))


@main.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def list_scenarios(session, as_json):
    """The scenario catalog: id, title, cause, difficulty, and how it runs here (live, replay, or what it needs)."""
    from . import app
    from .reports import text

    entries = app.catalog(session.host)
    if as_json:
        _emit_json(text.catalog_rows(entries))
    else:
        click.echo(text.catalog_table(entries, session.host))


@main.command()
@click.argument("scenario")
@click.option("--code", is_flag=True, help="Print the healthy program and the broken one as a diff.")
@click.option("--backend", type=click.Choice(["gloo", "nccl"]), help="Render the program for this backend.")
@click.pass_obj
def show(session, scenario, code, backend):
    """Show SCENARIO: ticket, topology, faults, hints (and with --code, the program diff)."""
    from . import app
    from .reports import text

    if code:
        click.echo(text.program_view(app.program_view(scenario, backend)))
        return
    click.echo(text.scenario_report(app.describe(scenario, session.host)))


@main.command()
@click.option("--json", "as_json", is_flag=True)
def causes(as_json):
    """The cause catalog shared by scenarios, drills, runbooks and diagnose."""
    from . import app
    from .reports import text

    if as_json:
        _emit_json([text.as_json(cause) for cause in app.causes()])
        return
    click.echo(text.cause_table(app.causes()))


def _trainee(name: str | None) -> str:
    import getpass
    import os

    from . import app

    return app.check_trainee(name or os.environ.get("FAULTLAB_TRAINEE") or getpass.getuser())


@main.command()
@click.argument("scenario", required=False)
@click.option("--pack", help="Drill every scenario of this pack (see packs.yaml), or pick from it with --random.")
@click.option("--random", "pick_random", is_flag=True, help="Pick a scenario at random.")
@click.option("--seed", type=int, help="Seed for --random, to repeat a pick.")
@click.option("--trainee", help="Who is drilled (default: $FAULTLAB_TRAINEE, else your user name).")
@click.option("--replay", is_flag=True, help="Replay a recording (the store's newest, else a shipped one) instead of running live.")
@click.option("--answers", "answers_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Diagnosis from a YAML file (cause, culprit, ranks, fix, used); for a pack, a mapping by scenario id.")
@click.option("--cause", help="Non-interactive: the cause id.")
@click.option("--culprit", help="Non-interactive: 'rank N', 'node N' or 'job'.")
@click.option("--ranks", help="Non-interactive: the deviating ranks, e.g. 0,1,3.")
@click.option("--fix", help="Non-interactive: the fix, in words.")
@click.option("--used", help="Non-interactive: help already taken, e.g. hint=1,log=2 (each costs points).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.pass_obj
def drill(session, scenario, pack, pick_random, seed, trainee, replay, answers_file, cause, culprit, ranks, fix, used,
          as_json):
    """Drill a trainee: a broken job's ticket and evidence, a diagnosis, a score.

    Interactive by default. Give --answers FILE, or --cause/--culprit/--ranks/--fix, to
    answer without prompts (automation, tests)."""
    from . import app
    from .drill_prompt import interactive_answer
    from .reports import drill_screens, text

    chosen = app.drill_scenarios(scenario, pack, pick_random, seed)
    answers = app.drill_answers(chosen, answers_file, dict(cause=cause, culprit=culprit, ranks=ranks, fix=fix, used=used))
    who = _trainee(trainee)
    results = []
    for item in chosen:
        session_ = app.start_drill(item, session.store, session.host, replay)
        if answers is not None:
            answer, taken = answers[item.id]
            session_.used.update(taken)
        else:
            answer = interactive_answer(session_)
        result, _ = session_.finish(answer, who, pack) if answer else session_.give_up(who, pack)
        results.append(result)
        if as_json:
            continue
        if answers is not None:
            click.echo(drill_screens.briefing(session_) + "\n")
        click.echo("\n" + drill_screens.debrief(session_, result, session_.others(exclude=result.id)) + "\n")
    if as_json:
        _emit_json([text.as_json(result) for result in results])
    elif len(results) > 1:
        total = sum(r.total for r in results)
        click.echo(f"{who}: {total:g} / {sum(r.max for r in results)} over {len(results)} drills")


@main.command()
@click.option("--trainee", help="One trainee's history instead of the leaderboard.")
@click.option("--pack", help="Only drills of this pack.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def scores(session, trainee, pack, as_json):
    """The leaderboard and per-cause weak spots (or one trainee's history)."""
    from . import app
    from .reports import text

    app.check_pack(pack)
    store = session.stored
    if store.missing and not as_json:
        click.echo(f"No recordings yet: {store.path} does not exist (drill someone first).")
        return
    spots = store.weak_spots(pack=pack, trainee=trainee)
    if trainee:
        history = store.drills(trainee=trainee, pack=pack)
        if as_json:
            _emit_json({"history": [text.as_json(d) for d in history], "weak_spots": text.as_json(spots)})
            return
        click.echo(text.history_table(history))
    else:
        board = store.leaderboard(pack=pack)
        if as_json:
            _emit_json({"leaderboard": text.as_json(board), "weak_spots": text.as_json(spots)})
            return
        click.echo(text.leaderboard_table(board))
    click.echo("\nWeak spots by cause (weakest first):")
    click.echo(text.weak_spots_table(spots))


@main.command(name="export")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--scenario", "scenario_ids", multiple=True, help="Only recordings (and drills) of this scenario.")
@click.option("--trainee", "trainees", multiple=True, help="Only drills of this trainee.")
@click.pass_obj
def export_bundle(session, output, scenario_ids, trainees):
    """Write recordings and drill scores to a portable bundle file."""
    from . import app

    recordings, drills = app.export_bundle(session.stored, output, tuple(scenario_ids), tuple(trainees))
    click.echo(f"{output}: {recordings} recordings, {drills} drills")


@main.command(name="import")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_obj
def import_bundle(session, path):
    """Add a bundle's recordings and drills to the store: all of it, or nothing if it is invalid."""
    from . import app

    new_recordings, new_drills, already = app.import_bundle(session.store, path)
    click.echo(f"{path}: {new_recordings} new recordings, {new_drills} new drills ({already} already there)")


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "html"]), default="markdown", show_default=True)
@click.option("--cause", "causes", multiple=True, help="Only recordings of scenarios of this cause.")
@click.option("--platform", type=click.Choice(["cpu", "gpu"]), help="Only recordings made on this platform.")
@click.option("--recording", "recording_ids", multiple=True, help="Only these recordings (ids from `run`).")
@click.pass_obj
def runbook(session, output, fmt, causes, platform, recording_ids):
    """Write the runbook (symptom -> cause -> check -> fix) from the recordings in the store."""
    from . import app
    from .reports import runbook_pages

    book = app.select_for_runbook(session.stored, tuple(causes), platform, tuple(recording_ids))
    page = runbook_pages.to_html(book) if fmt == "html" else runbook_pages.to_markdown(book)
    if output is None:
        click.echo(page)
        return
    app.write_output(output, page)
    click.echo(f"{output}: {len(book.sections)} symptoms from {len(book.recordings)} recordings")


@main.command(name="diagnose")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
@click.option("--top", default=3, show_default=True, type=click.IntRange(min=1), help="How many causes to show.")
@click.pass_context
def diagnose_logs(ctx, paths, as_json, top):
    """Triage real failure logs: likely causes, evidence, culprit.

    PATHS are files or directories; '-' (or no path, with a pipe on standard input) reads
    standard input. The recording store is read only if its file exists, and never created.

    Exit codes: 0 causes found; 1 no known signature (nothing the catalog knows, or only
    failures outside it); 2 bad input.
    """
    from . import app
    from .reports import triage

    stdin = sys.stdin.buffer
    if not paths and stdin.isatty():
        raise BadInput("no logs given: name files or directories, or pipe a log in ('-' reads standard input)")
    found = app.triage(list(paths), ctx.find_root().params.get("db"), stdin)
    if as_json:
        _emit_json(triage.diagnosis_json(found))
    else:
        click.echo(triage.diagnosis_text(found, top))
    ctx.exit(found.exit_code)


@main.command(name="diagnose-accuracy")
@click.argument("case_files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def diagnose_accuracy(case_files, as_json):
    """How well diagnose names the known cause and culprit of logs whose cause is known (YAML case
    lists): top-1 / top-3, culprit named at rank and node level, "not in the catalog" answered right."""
    from . import app
    from .reports import triage

    accuracy = app.triage_accuracy(list(case_files))
    if as_json:
        _emit_json(triage.accuracy_json(accuracy))
    else:
        click.echo(triage.accuracy_text(accuracy))


@main.command()
@click.option("--clients", default="8,16,32,64,256,1024", show_default=True, help="Client counts, comma-separated.")
@click.option("--stagger-ms", default="0", show_default=True, help="Gaps between waves, comma-separated (0 = all at once).")
@click.option("--wave", default=8, show_default=True, help="Clients started together (one node's ranks).")
@click.option("--store", "stores", type=click.Choice(["libuv", "legacy", "both"]), default="libuv", show_default=True,
              help="TCPStore backend: libuv (torch's default) or legacy (USE_LIBUV=0).")
@click.option("--somaxconn", type=int, help="The store host's listen backlog (its private namespace only).")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True, help="Each client's store timeout, seconds.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
def storm(clients, stagger_ms, wave, stores, somaxconn, timeout_s, fmt):
    """Join N clients to one TCPStore the way ranks do, at once or staggered: time to ready."""
    from . import app
    from .reports import storm as report_storm
    from .reports import text

    progress = (lambda cell: click.echo(report_storm.progress_line(cell), err=True)) if fmt == "text" else None
    report = app.storm(clients, stagger_ms, wave, stores, somaxconn, timeout_s, progress)
    if fmt == "json":
        _emit_json(text.as_json(report))
    else:
        click.echo(report_storm.html_report(report) if fmt == "html" else report_storm.text_report(report))


@main.command()
@preflight_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@slurm_options(required=True)
@click.pass_obj
def preflight(session, nodes, ranks_per_node, pairs, timeout_s, sweep, sweep_max_bytes, sweep_seconds, local,
              as_json, slurm):
    """Check a SLURM cluster's nodes with the healthy experiment before a big job.

    Runs it across all nodes (every rank must hold N(N-1)/2), then, if that fails (or with
    --pairs always), on every pair, and names the node or link at fault and why; each check
    sweeps all_reduce bandwidth, and a group far below the others names a slow node or link.
    Inside salloc or an sbatch job the checks are job steps of it (docs/cluster.md)."""
    from . import app
    from .reports.preflight import preflight_report

    result = app.preflight(session.store, slurm.options, session.host if local else None, nodes=nodes,
                           ranks_per_node=ranks_per_node, pairs=pairs, timeout_s=timeout_s,
                           sweep=(sweep_max_bytes, sweep_seconds) if sweep else None)
    if as_json:
        _emit_json(app.preflight_dict(result))
    else:
        click.echo(preflight_report(result))
    sys.exit(int(ExitCode.OK if result.passed else ExitCode.NOT_REPRODUCED))


if __name__ == "__main__":
    sys.exit(main())
