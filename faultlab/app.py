"""The application: what each faultlab command does, as one call the CLI makes.

The CLI parses options, calls one function here, and renders what it returns with
reports/. The rules (which recordings a runbook uses, which scenarios a catalog lists as
live here, what a drill's answers file may hold) live here and in the core, not in the CLI.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from . import bundle
from . import drill as drills
from . import runbook as runbooks
from . import runner
from . import scenario as scenarios
from .causes import CAUSES, Cause
from .errors import BadInput
from .host import Availability, Host
from .launchers import RunOptions
from .lab.plan import program_for
from .lab.program import program_diff
from .records import Recording
from .scenario import Scenario


def open_store(path: Path | None, readonly: bool = False):
    """The recording store; `readonly` never creates it (commands that only read)."""
    from .store import Store

    return Store(path, readonly=readonly)


def probe_host() -> Host:
    return Host.probe()


def causes() -> tuple[Cause, ...]:
    return tuple(CAUSES)


def export_bundle(store, output: Path, scenario_ids: tuple[str, ...], trainees: tuple[str, ...]) -> tuple[int, int]:
    return bundle.export(store, output, scenario_ids, trainees)


def import_bundle(store, path: Path) -> tuple[int, int, int]:
    """(new recordings, new drills, records already there): all of the bundle, or nothing."""
    recordings, drills_ = bundle.read(path)
    new_recordings, new_drills = store.import_bundle(recordings, drills_)
    return new_recordings, new_drills, len(recordings) - new_recordings + len(drills_) - new_drills


def run(reference: str, store, host: Host, options: RunOptions) -> tuple[Scenario, Recording]:
    """One scenario (an id or a YAML file), live here or replayed."""
    scenario = scenarios.resolve(reference)
    return scenario, runner.run_here(scenario, store, host, options)


def run_on_cluster(reference: str, store, slurm, options: RunOptions) -> tuple[Scenario, Recording]:
    """One scenario live on a SLURM cluster's nodes (`slurm`: SlurmOptions)."""
    from .slurm.launcher import SlurmLauncher

    scenario = scenarios.resolve(reference)
    launcher = SlurmLauncher(slurm)
    return scenario, runner.run_scenario(scenario, store, launcher, launcher.backend(scenario), options)


def cluster_job_script(reference: str, slurm, options: RunOptions) -> str:
    """The sbatch script a SLURM run of the scenario submits, for a user to read or submit."""
    from .launchers import DEBUG_KNOBS
    from .slurm.launcher import SlurmLauncher

    scenario = scenarios.resolve(reference)
    launcher = SlurmLauncher(slurm)
    run_dir, run_id = launcher.new_run_dir(scenario)
    return launcher.job_script(scenario, launcher.backend(scenario), run_dir, run_id,
                               extra_env=DEBUG_KNOBS.get(options.debug or ""))


def preflight(store, slurm, host: Host | None, *, nodes: str | None, ranks_per_node: int, pairs: str,
              timeout_s: float, sweep: tuple[int, float] | None):
    """The healthy experiment across a cluster's nodes, then pairs of them (slurm/preflight.py),
    or with `host` on this host alone; each check with the bandwidth sweep `sweep` (its byte
    and time budgets; None for none)."""
    from .lab.sweep import SweepSettings
    from .slurm import preflight as checks
    from .slurm.options import SlurmOptions

    settings = SweepSettings(max_bytes=sweep[0], seconds=sweep[1]) if sweep else None
    if host is not None:
        if nodes or slurm != SlurmOptions():
            raise BadInput("--local checks this host alone: --nodes and SLURM options do not apply")
        return checks.local_check(store, host, ranks=ranks_per_node, timeout_s=timeout_s, sweep=settings)
    if nodes and nodes.isdigit() and int(nodes) < 2:
        raise BadInput(f"--nodes {nodes}: preflight needs at least 2 nodes")
    return checks.run(store, slurm, nodes=nodes, ranks_per_node=ranks_per_node, pairs=pairs, timeout_s=timeout_s,
                      sweep=settings)


def preflight_dict(result) -> dict:
    from .slurm import preflight as checks

    return checks.as_dict(result)


def run_all(store, host: Host, options: RunOptions, progress=None):
    """The whole catalog, one scenario after another."""
    return runner.run_suite(scenarios.load_all(), store, host, options, progress)


def baseline(reference: str, store, host: Host, keep_logs: Path | None) -> Recording:
    """A fresh healthy run of the scenario's topology, stored."""
    scenario = scenarios.resolve(reference)
    backend = runner.live_backend(scenario, host)
    options = RunOptions(fresh_baseline=True, keep_logs=keep_logs)
    return runner.LocalLauncher(host).baseline(scenario, backend, store, options)


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    scenario: Scenario
    here: Availability  # live, replay, or what it needs


def catalog(host: Host) -> list[CatalogEntry]:
    return [CatalogEntry(item, host.availability(item)) for item in scenarios.load_all()]


def describe(reference: str, host: Host) -> CatalogEntry:
    scenario = scenarios.resolve(reference)
    return CatalogEntry(scenario, host.availability(scenario))


@dataclasses.dataclass(frozen=True)
class ProgramView:
    scenario: Scenario
    backend: str
    healthy: str
    broken: str
    diff: str  # '' when the scenario's faults are all in the launch


def program_view(reference: str, backend: str | None) -> ProgramView:
    """The healthy program and the broken one (renders without torch)."""
    scenario = scenarios.resolve(reference)
    backend = backend or ("nccl" if scenario.topology.backend == "nccl" else "gloo")
    healthy = program_for(scenario, backend, healthy=True)
    broken = program_for(scenario, backend)
    return ProgramView(scenario, backend, healthy, broken, program_diff(healthy, broken))


def select_for_runbook(store, causes: tuple[str, ...], platform: str | None,
                       recording_ids: tuple[str, ...]) -> runbooks.Runbook:
    """The runbook of the store's runs (or of the named recordings), filtered by cause and platform."""
    if store.missing:
        raise BadInput(f"{store.path}: no recordings yet: run some scenarios first (`faultlab run --all`)")
    cause_of = scenarios.cause_of_each()
    chosen = [store.get(rid) for rid in recording_ids] if recording_ids else store.recordings(kind="run")
    chosen = [r for r in chosen if (not causes or cause_of.get(r.scenario_id) in causes)
              and (not platform or runbooks.platform_of(r) == platform)]
    if not chosen:
        raise BadInput("no recordings match: run some scenarios first (`faultlab run --all`)")
    baselines = {}
    for recording in chosen:
        if recording.baseline_id and store.has(recording.baseline_id):
            baselines[recording.id] = store.get(recording.baseline_id)
    return runbooks.build(chosen, baselines, cause_of)


def write_output(path: Path, text: str) -> None:
    """A report the user asked to be written to a file: inert, as a terminal would show it
    (the file is read with cat too), and never over the store or an input."""
    from .textsafe import inert
    from .userfiles import write_text

    write_text(path, inert(text))


def drill_scenarios(name: str | None, pack: str | None, pick_random: bool, seed: int | None) -> list[Scenario]:
    return drills.choose(name, pack, pick_random, seed)


def drill_answers(chosen: list[Scenario], answers_file: Path | None, options: dict):
    """Answers given without prompts (a YAML file, or the options), or None for an interactive drill."""
    return drills.answers_for(chosen, answers_file, options)


def start_drill(scenario: Scenario, store, host: Host, replay: bool) -> drills.DrillSession:
    return drills.DrillSession.start(scenario, store, host, replay=replay)


def storm(clients: str, stagger_ms: str, wave: int, stores: str, somaxconn: int | None, timeout_s: float,
          progress=None):
    """The join storm on this machine: every (store, stagger, clients) cell, measured."""
    from . import storm as storms

    options = storms.StormOptions(
        clients=storms.parse_list(clients, "--clients", int),
        stagger_ms=storms.parse_list(stagger_ms, "--stagger-ms", float), wave=wave,
        stores=tuple(storms.STORES) if stores == "both" else (stores,), somaxconn=somaxconn, timeout_s=timeout_s)
    return storms.measure(options, progress)


def begin_command() -> None:
    """What every command does first: note the files it reads, make its output terminal-safe."""
    from . import textsafe, userfiles

    userfiles.begin_command()
    textsafe.guard_terminal()


def check_trainee(name: str) -> str:
    from . import identity

    identity.check(identity.TRAINEE, name, "trainee", "a trainee name (letters, digits, space, . _ @ + -)")
    return name


def check_pack(pack: str | None) -> None:
    if pack and pack not in scenarios.load_packs():
        raise BadInput(f"--pack {pack!r}: no such pack (known: {', '.join(scenarios.load_packs())})")


def triage(paths: list[Path], db: Path | None, stdin):
    """`faultlab diagnose`: real logs (and Flight Recorder dumps) read, causes ranked."""
    from . import diagnose

    return diagnose.triage(paths, db, stdin)


def triage_accuracy(case_files: list[Path]):
    from . import triage_accuracy as accuracy

    return accuracy.measure(case_files)
