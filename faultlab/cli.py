"""The faultlab command line: parse, call one core function, render. No torch import here."""

from __future__ import annotations

import json
import sys
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
            results = runner.run_suite(catalog, store, options, progress=None if as_json else (
                lambda *finished: click.echo(render.suite_progress(*finished))))
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
    from . import experiment, render, scenario as scenarios
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
    click.echo(render.scenario_report(loaded))


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


def _trainee(name: str | None) -> str:
    import getpass
    import os

    return name or os.environ.get("FAULTLAB_TRAINEE") or getpass.getuser()


def _used(text: str | None) -> dict[str, int]:
    """'hint=1,log=2' -> {'hint': 1, 'log': 2}."""
    used = {}
    for item in filter(None, (text or "").split(",")):
        kind, _, count = item.partition("=")
        if not count.strip().isdigit():
            raise BadInput(f"--used {text!r}: write KIND=COUNT pairs, e.g. hint=1,log=2")
        used[kind.strip()] = int(count)
    return used


def _diagnosis_from(data: dict, where: str):
    from .score import Diagnosis, check_cause, parse_culprit, parse_ranks

    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a mapping with cause, culprit, ranks, fix")
    unknown = set(data) - {"cause", "culprit", "ranks", "fix", "used"}
    if unknown:
        raise BadInput(f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: cause, culprit, ranks, fix, used)")
    missing = [key for key in ("cause", "culprit", "fix") if key not in data]
    if missing:
        raise BadInput(f"{where}: missing {missing[0]!r}")
    used = data.get("used", {})
    if not isinstance(used, dict) or not all(isinstance(v, int) and v >= 0 for v in used.values()):
        raise BadInput(f"{where}.used: expected a mapping of help kinds to counts")
    try:
        diagnosis = Diagnosis(
            cause=check_cause(str(data["cause"])),
            culprit=parse_culprit(str(data["culprit"])),
            ranks=parse_ranks(data.get("ranks", [])),
            fix=str(data["fix"]),
        )
    except BadInput as error:
        raise BadInput(f"{where}: {error}") from None
    return diagnosis, dict(used)


def _interactive_drill(session) -> tuple:
    """The trainee's loop: ask for evidence, then answer. Returns the diagnosis."""
    from .causes import CAUSES
    from .score import Diagnosis, check_cause, parse_culprit, parse_ranks

    click.echo(session.briefing())
    click.echo("\nAsk for evidence or answer:\n" + session.menu())
    while True:
        command = click.prompt("\ndrill", default="answer", show_default=False).strip()
        verb, _, argument = command.partition(" ")
        try:
            if verb == "answer":
                break
            if verb == "log":
                click.echo(session.rank_log(int(argument)))
            elif verb == "launcher":
                click.echo(session.launcher(int(argument)))
            elif verb == "network":
                click.echo(session.network(int(argument)))
            elif verb == "symptoms":
                click.echo(session.symptoms())
            elif verb == "hint":
                click.echo(session.hint())
            elif verb == "debug":
                click.echo(session.debug(argument.strip()))
            elif verb == "causes":
                click.echo("\n".join(f"  {i:2}. {c.id}: {c.title}" for i, c in enumerate(CAUSES, 1)))
            else:
                click.echo(session.menu())
        except ValueError:
            click.echo(f"{verb} needs a number, e.g. '{verb} 0'")
        except FaultlabError as error:
            click.echo(f"faultlab: {error}")

    def ask(prompt, convert, **kwargs):
        while True:
            try:
                return convert(click.prompt(prompt, **kwargs))
            except FaultlabError as error:
                click.echo(f"faultlab: {error}")

    def cause_of(text):
        text = text.strip()
        if text.isdigit() and 1 <= int(text) <= len(CAUSES):
            return CAUSES[int(text) - 1].id
        return check_cause(text)

    return Diagnosis(
        cause=ask("Cause (id, or its number in `causes`)", cause_of),
        culprit=ask("Culprit (rank N, node N, or job)", parse_culprit),
        ranks=ask("Ranks that deviate from a healthy run (e.g. 0,2,3; empty for none)", parse_ranks, default=""),
        fix=ask("Fix", str),
    )


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
@click.pass_context
def drill(ctx, scenario, pack, pick_random, seed, trainee, replay, answers_file, cause, culprit, ranks, fix, used, as_json):
    """Drill a trainee: a broken job's ticket and evidence, a diagnosis, a score.

    Interactive by default. Give --answers FILE, or --cause/--culprit/--ranks/--fix, to
    answer without prompts (automation, tests)."""
    from . import drill as drills
    from . import scenario as scenarios
    from .serial import to_dict

    chosen = drills.choose(scenario, pack, pick_random, seed)
    flags = {"cause": cause, "culprit": culprit, "fix": fix}
    non_interactive = answers_file is not None or any(v is not None for v in flags.values()) or ranks is not None
    answers = None
    if answers_file is not None:
        data = scenarios.read_yaml(answers_file)
        single = isinstance(data, dict) and "cause" in data
        answers = {item.id: (data, str(answers_file)) for item in chosen} if single else {
            item.id: ((data or {}).get(item.id), f"{answers_file}: {item.id}") for item in chosen
        }
        for item_id, (entry, where) in answers.items():
            if entry is None:
                raise BadInput(f"{answers_file}: no answers for {item_id}")
            answers[item_id] = _diagnosis_from(entry, where)
    elif non_interactive:
        data = {key: value for key, value in flags.items() if value is not None}
        data["ranks"] = ranks or ""
        data["used"] = _used(used)
        answers = {item.id: _diagnosis_from(data, "options") for item in chosen}
    who = _trainee(trainee)
    results = []
    with _store(ctx) as store:
        for item in chosen:
            session = drills.DrillSession.start(item, store, replay=replay)
            if answers is not None:
                diagnosis, taken = answers[item.id]
                session.used.update(taken)
            else:
                diagnosis = _interactive_drill(session)
            result, _ = session.finish(diagnosis, who, pack)
            results.append(result)
            if as_json:
                continue
            if answers is not None:
                click.echo(session.briefing() + "\n")
            click.echo("\n" + session.debrief(result) + "\n")
    if as_json:
        _emit_json([to_dict(result) for result in results])
    elif len(results) > 1:
        total = sum(r.total for r in results)
        click.echo(f"{who}: {total:g} / {sum(r.max for r in results)} over {len(results)} drills")


@main.command()
@click.option("--trainee", help="One trainee's history instead of the leaderboard.")
@click.option("--pack", help="Only drills of this pack.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def scores(ctx, trainee, pack, as_json):
    """The leaderboard and per-cause weak spots (or one trainee's history)."""
    from tabulate import tabulate

    from .serial import to_dict

    with _store(ctx) as store:
        if trainee:
            history = store.drills(trainee=trainee, pack=pack)
            spots = store.weak_spots(pack=pack, trainee=trainee)
            if as_json:
                _emit_json({"history": [to_dict(d) for d in history], "weak_spots": spots})
                return
            click.echo(tabulate([[d.started_at, d.scenario_id, d.pack or "-", "replay" if d.replay else "live",
                                  f"{d.total:g}/{d.max}", d.seconds] for d in history],
                                headers=["when", "scenario", "pack", "run", "score", "seconds"]))
        else:
            board = store.leaderboard(pack=pack)
            spots = store.weak_spots(pack=pack)
            if as_json:
                _emit_json({"leaderboard": board, "weak_spots": spots})
                return
            click.echo(tabulate(board, headers=["trainee", "drills", "mean", "best", "last played"]))
        click.echo("\nWeak spots by cause (weakest first):")
        click.echo(tabulate(spots, headers=["cause", "drills", "cause right %", "culprit right %", "mean score"]))


@main.command(name="export")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--scenario", "scenario_ids", multiple=True, help="Only recordings (and drills) of this scenario.")
@click.option("--trainee", "trainees", multiple=True, help="Only drills of this trainee.")
@click.pass_context
def export_bundle(ctx, output, scenario_ids, trainees):
    """Write recordings and drill scores to a portable bundle file."""
    from . import bundle

    with _store(ctx) as store:
        recordings, drills = bundle.export(store, output, tuple(scenario_ids), tuple(trainees))
    click.echo(f"{output}: {recordings} recordings, {drills} drills")


@main.command(name="import")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def import_bundle(ctx, path):
    """Add a bundle's recordings and drills to the store: all of it, or nothing if it is invalid."""
    from . import bundle

    recordings, drills = bundle.read(path)
    with _store(ctx) as store:
        new_recordings, new_drills = store.import_bundle(recordings, drills)
    click.echo(f"{path}: {new_recordings} new recordings, {new_drills} new drills "
               f"({len(recordings) - new_recordings + len(drills) - new_drills} already there)")


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "html"]), default="markdown", show_default=True)
@click.option("--cause", "causes", multiple=True, help="Only recordings of scenarios of this cause.")
@click.option("--platform", type=click.Choice(["cpu", "gpu"]), help="Only recordings made on this platform.")
@click.option("--recording", "recording_ids", multiple=True, help="Only these recordings (ids from `run`).")
@click.pass_context
def runbook(ctx, output, fmt, causes, platform, recording_ids):
    """Write the runbook (symptom -> cause -> check -> fix) from the recordings in the store."""
    from . import runbook as runbooks
    from . import scenario as scenarios
    from .serial import write_text_atomically

    cause_of = scenarios.cause_of_each()
    with _store(ctx) as store:
        if recording_ids:
            chosen = [store.get(recording_id) for recording_id in recording_ids]
        else:
            chosen = store.recordings(kind="run")
        chosen = [r for r in chosen if (not causes or cause_of.get(r.scenario_id) in causes)
                  and (not platform or runbooks.platform_of(r) == platform)]
        if not chosen:
            raise BadInput("no recordings match: run some scenarios first (`faultlab run --all`)")
        baselines = {}
        for recording in chosen:
            if recording.baseline_id:
                try:
                    baselines[recording.id] = store.get(recording.baseline_id)
                except BadInput:  # imported without its baseline: the timeline stands alone
                    pass
    book = runbooks.build(chosen, baselines, cause_of)
    text = runbooks.to_html(book) if fmt == "html" else runbooks.to_markdown(book)
    if output is None:
        click.echo(text)
        return
    write_text_atomically(output, text)
    click.echo(f"{output}: {len(book.sections)} symptoms from {len(book.recordings)} recordings")


def _rank_ranges(ranks) -> str:
    """(0, 1, 2, 3, 5, 7, 8) -> '0-3, 5, 7-8 (7 ranks)': thousands of ranks stay one line."""
    spans: list[list[int]] = []
    for rank in ranks:
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    text = ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in spans)
    return f"{text} ({len(ranks)} ranks)" if len(ranks) > 1 else text


@main.command(name="diagnose")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
@click.option("--top", default=3, show_default=True, help="How many causes to show.")
@click.pass_context
def diagnose_logs(ctx, paths, as_json, top):
    """Triage real failure logs (files or directories): likely causes, evidence, culprits."""
    from . import diagnose, scenario as scenarios
    from .causes import CAUSES_BY_ID
    from .serial import to_dict

    with _store(ctx) as store:
        learned = diagnose.learned_counts(store.recordings(kind="run"), scenarios.cause_of_each())
    found = diagnose.diagnose(list(paths), learned)
    if as_json:
        _emit_json(to_dict(found))
        return
    click.echo(f"Read {found.files} file(s), {found.bytes / 1e6:.1f} MB.")
    for note in found.notes:
        click.echo(f"  note: {note}")
    if not found.causes:
        click.echo("\nNo known signature. Error lines found:" if found.error_lines else "\nNo known signature, and no error line.")
        for item in found.error_lines:
            click.echo(f"  {item.path}:{item.line_number}: {item.line[:200]}")
        return
    click.echo("\nLikely causes:")
    for position, ranked in enumerate(found.causes[:top], 1):
        click.echo(f"  {position}. {ranked.cause} ({ranked.confidence:.0%}): {CAUSES_BY_ID[ranked.cause].title}")
        for item in [e for e in found.evidence if e.signature in ranked.signatures][:4]:
            where = f"rank {item.rank}" if item.rank is not None else "?"
            click.echo(f"       {item.path}:{item.line_number} [{where}] {item.line[:160]}")
    click.echo(f"\nCulprits (their own errors): {_rank_ranges(found.culprits) or 'none told apart'}")
    click.echo(f"Victims (waiting on others, or their connections cut): {_rank_ranges(found.victims) or 'none told apart'}")
    if found.silent:
        click.echo(f"Silent (no error of their own: torn down or still waiting): {_rank_ranges(found.silent)}")
    if found.next_check:
        click.echo(f"\nNext check: {found.next_check}")


@main.command(name="diagnose-accuracy")
@click.argument("case_files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def diagnose_accuracy(case_files, as_json):
    """Top-1 / top-3 accuracy of diagnose on logs whose cause is known (YAML case lists)."""
    from tabulate import tabulate

    from . import triage_accuracy

    accuracy = triage_accuracy.evaluate([case for path in case_files for case in triage_accuracy.load_cases(path)])
    rows = [[result.case.log.name, result.case.cause, result.position or "-", ", ".join(result.ranked[:3]) or "(none)"]
            for result in accuracy.results]
    if as_json:
        _emit_json({"cases": len(rows), "causes": len(accuracy.causes), "top1": accuracy.top(1),
                    "top3": accuracy.top(3), "results": [dict(zip(("log", "cause", "position", "ranked"), row))
                                                          for row in rows]})
        return
    click.echo(tabulate(rows, headers=["log", "known cause", "ranked", "diagnose's top 3"]))
    click.echo(f"\n{len(rows)} cases, {len(accuracy.causes)} causes: top-1 {accuracy.top(1):.1%}, "
               f"top-3 {accuracy.top(3):.1%}")


if __name__ == "__main__":
    sys.exit(main())
