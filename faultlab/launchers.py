"""What launches a scenario: the seam between the run's bookkeeping and its execution.

A launcher turns a scenario into a `Launched`: the capture, the healthy baseline it is
compared with, and where and how it was made. `runner.run_scenario` takes any launcher
and does the rest (symptoms, comparison, the Recording, the store) the same way for all.

- LocalLauncher: live on this machine, through torch's elastic launcher (lab/).
- SlurmLauncher (slurm/): live on a SLURM cluster's nodes, each running torchrun.
- ReplayLauncher: a recording made live elsewhere (a GPU host, or an earlier run in the
  store), evaluated again here and labelled as a replay.

Which one a command uses is a choice made from `Host.availability`, never an exception
caught on the way.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from pathlib import Path

from . import compare, recording_files, symptoms
from .errors import BadInput, EnvironmentProblem
from .host import Host, environment
from .lab.plan import build_plan
from .lab.recorded_files import write_recorded
from .lab.sweep import SweepSettings
from .records import RECORDING_FORMAT, Capture, Comparison, Environment, Recording, Symptom
from .scenario import Scenario

# Debug knobs a run can be repeated with, and the environment each one sets on every node.
DEBUG_KNOBS: dict[str, dict[str, str]] = {
    "detail": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
    "cpp-info": {"TORCH_CPP_LOG_LEVEL": "INFO"},
    "nccl-info": {"NCCL_DEBUG": "INFO"},
    "nccl-trace": {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"},
}


@dataclasses.dataclass(frozen=True)
class RunOptions:
    fresh_baseline: bool = False  # run the baseline again instead of reusing the stored one
    keep_logs: Path | None = None  # copy every raw log here
    debug: str | None = None  # a DEBUG_KNOBS key
    live_only: bool = False  # never replay a shipped recording
    record_to: Path | None = None  # also write the run and its baseline as a recording file


@dataclasses.dataclass(frozen=True)
class Launched:
    """One launch of a scenario, before it is evaluated."""

    capture: Capture
    baseline: Recording | None  # the healthy run it is compared with (None for a baseline itself)
    environment: Environment  # where the capture was made
    backend: str
    debug: str | None
    live: bool
    source: str  # "live", or what was replayed and where it was recorded
    baseline_note: str


def new_id(scenario_id: str, kind: str) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{scenario_id}.{kind}.{stamp}.{uuid.uuid4().hex[:6]}"


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def build_recording(
    scenario_id: str, kind: str, launched: Launched, found: tuple[Symptom, ...], comparison: Comparison | None,
    expected: tuple[str, ...], missing: tuple[str, ...], expected_verdict: str, reproduced: bool,
    earlier_attempts: tuple[str, ...] = (),
) -> Recording:
    """The one place a Recording is made, for runs, replays and baselines alike."""
    return Recording(
        id=new_id(scenario_id, kind if kind == "baseline" or launched.live else "replay"),
        format=RECORDING_FORMAT,
        scenario_id=scenario_id,
        kind=kind,
        live=launched.live,
        source=launched.source,
        recorded_at=now(),
        environment=launched.environment,
        backend=launched.backend,
        debug=launched.debug,
        capture=launched.capture,
        symptoms=found,
        comparison=comparison,
        baseline_id=None if kind == "baseline" else launched.baseline.id,
        baseline_note=launched.baseline_note,
        expected_signatures=expected,
        missing_signatures=missing,
        expected_verdict=expected_verdict,
        reproduced=reproduced,
        earlier_attempts=earlier_attempts,
    )


def set_aside_run_logs(keep_logs: Path | None, attempt: int) -> None:
    """Before a race runs again: the kept logs of its run `attempt` move from run/ to
    run.attempt<N>/, so the last run's are always run/ and none is overwritten."""
    if keep_logs is None or not (keep_logs / "run").is_dir():
        return
    aside, again = keep_logs / f"run.attempt{attempt}", 1
    while aside.exists():  # left by an earlier command given the same directory
        again += 1
        aside = keep_logs / f"run.attempt{attempt}.{again}"
    (keep_logs / "run").rename(aside)


def topology_name(scenario: Scenario) -> str:
    """'2x2' for 2 nodes of 2 ranks, '2x2-hosts' on simulated hosts."""
    topology = scenario.topology
    return f"{topology.nodes}x{topology.ranks_per_node}" + ("-hosts" if topology.hosts else "")


class LiveLauncher:
    """A launcher that runs the experiment for real: the run and its healthy baseline of the
    same topology, made the same way. A member gives `capture`, `environment` and
    `healthy_backend`; the baseline and the launch are the same for all."""

    live = True
    # The all_reduce bandwidth sweep every launch adds to the program (preflight), or None.
    sweep: SweepSettings | None = None

    def topology(self, scenario: Scenario) -> str:
        """The key of this launcher's baselines: a check with the sweep is a baseline of its own
        ('2x1-sweep'), never the baseline of a run without it (its times include the sweep)."""
        return topology_name(scenario) + ("-sweep" if self.sweep else "")

    def environment(self) -> Environment:
        raise NotImplementedError

    def capture(self, scenario: Scenario, backend: str, *, healthy: bool = False,
                extra_env: dict[str, str] | None = None, keep_logs: Path | None = None) -> Capture:
        raise NotImplementedError

    def healthy_backend(self, scenario: Scenario, backend: str) -> tuple[str, str]:
        return backend, ""

    def baseline(self, scenario: Scenario, backend: str, store, options: RunOptions) -> Recording:
        """The healthy run of the scenario's topology: the stored one, or run live now."""
        backend, why = self.healthy_backend(scenario, backend)
        topology, env = self.topology(scenario), self.environment()
        if not options.fresh_baseline:
            cached = store.latest_baseline(topology, backend, env.torch, env.host)
            if cached is not None and cached.reproduced:
                return dataclasses.replace(cached, baseline_note=_join(cached.baseline_note, why))
        keep = options.keep_logs / "baseline" if options.keep_logs else None
        capture = self.capture(scenario, backend, healthy=True, keep_logs=keep)
        found = symptoms.match_capture(capture)
        # Against itself, only exits and values can deviate: N(N-1)/2 on every rank, exit 0.
        healthy = compare.compare(capture, found, capture, found).verdict == "healthy"
        launched = Launched(capture=capture, baseline=None, environment=self.environment(), backend=backend, debug=None,
                            live=True, source="live", baseline_note=f"healthy {topology} run on {backend}")
        recording = build_recording(f"baseline-{topology}", "baseline", launched, found, None, (), (),
                                    "healthy", healthy)
        store.save(recording)
        return dataclasses.replace(recording, baseline_note=_join(recording.baseline_note, why))

    def launch(self, scenario: Scenario, backend: str, store, options: RunOptions) -> Launched:
        if options.debug is not None and options.debug not in DEBUG_KNOBS:
            raise BadInput(f"unknown debug knob {options.debug!r} (known: {', '.join(DEBUG_KNOBS)})")
        baseline = self.baseline(scenario, backend, store, options)
        capture = self.capture(scenario, backend, extra_env=DEBUG_KNOBS.get(options.debug or ""),
                               keep_logs=options.keep_logs / "run" if options.keep_logs else None)
        return Launched(capture=capture, baseline=baseline, environment=self.environment(), backend=backend,
                        debug=options.debug, live=True, source="live",
                        baseline_note=f"{baseline.baseline_note}, recorded {baseline.recorded_at}")


def _join(note: str, why: str) -> str:
    return f"{note} ({why})" if why else note


class LocalLauncher(LiveLauncher):
    """Live on this machine: torch's own elastic launcher, one agent per simulated node."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._environment: Environment | None = None

    def environment(self) -> Environment:
        if self._environment is None:
            self._environment = environment()
        return self._environment

    def capture(self, scenario: Scenario, backend: str, *, healthy: bool = False,
                extra_env: dict[str, str] | None = None, keep_logs: Path | None = None) -> Capture:
        from .flight_recorder.torch_analyzer import with_torch_analysis
        from .lab.launch import launch

        plan = build_plan(scenario, backend, healthy=healthy, host_gpus=self.host.gpus, extra_env=extra_env,
                          sweep=self.sweep)
        capture = launch(plan, keep_logs=keep_logs)
        return capture if healthy else with_torch_analysis(capture)

    def healthy_backend(self, scenario: Scenario, backend: str) -> tuple[str, str]:
        """The backend of the healthy baseline, and why. A healthy NCCL run needs a GPU per
        rank; with fewer, the baseline is a healthy gloo run of the same topology, never a
        made-up one."""
        if backend == "nccl" and self.host.gpus < scenario.topology.world_size:
            return "gloo", (
                f"no healthy NCCL run of {scenario.topology.world_size} ranks fits on {self.host.gpus} GPU(s): "
                "the baseline is a healthy gloo run of the same topology and the expected N(N-1)/2"
            )
        return backend, ""


class ReplayLauncher:
    """A recording made live elsewhere, evaluated again here exactly as a live capture."""

    live = False

    def __init__(self, run: Recording, baseline: Recording, name: str) -> None:
        self.run, self.recorded_baseline, self.name = run, baseline, name

    @classmethod
    def from_file(cls, scenario: Scenario, path: Path) -> "ReplayLauncher":
        run, baseline = recording_files.read(path)
        if run.scenario_id != scenario.id:
            raise BadInput(f"{path}: records scenario {run.scenario_id!r}, not {scenario.id!r}")
        return cls(run, baseline, path.name)

    @classmethod
    def stored_or_shipped(cls, scenario: Scenario, store) -> "ReplayLauncher":
        """The newest live run of `scenario` in the store, else its shipped recording."""
        stored = [r for r in store.recordings(scenario.id, kind="run") if r.live and r.baseline_id]
        if stored:
            return cls(stored[-1], store.get(stored[-1].baseline_id), f"recording {stored[-1].id}")
        shipped = recording_files.shipped_for(scenario.id)
        if not shipped:
            raise EnvironmentProblem(f"no recording of {scenario.id!r} to replay: run it live first")
        return cls.from_file(scenario, shipped[0])

    def anonymous(self) -> "ReplayLauncher":
        """The same replay, labelled without the file's name (which names the scenario): for drills."""
        return ReplayLauncher(self.run, self.recorded_baseline, "a recording")

    def launch(self, scenario: Scenario, backend: str | None, store, options: RunOptions) -> Launched:
        if options.debug:
            raise EnvironmentProblem(f"{scenario.id}: a replay cannot add a debug knob")
        run, baseline = self.run, self.recorded_baseline
        made = run.environment
        gpus = f"{len(made.gpus)} x {made.gpus[0]}" if made.gpus else "no GPU"
        source = (f"REPLAY of {self.name}, recorded live {run.recorded_at} on {made.host} ({gpus}, "
                  f"driver {made.driver or '-'}, torch {made.torch}, NCCL {made.nccl or '-'}); not run on this machine")
        baseline = dataclasses.replace(
            baseline, symptoms=symptoms.match_capture(baseline.capture), live=False,
            source=f"baseline of the replayed {self.name}, recorded live {baseline.recorded_at} "
                   f"on {baseline.environment.host}",
        )
        if not store.has(baseline.id):  # a shipped baseline travels with its replay (export), never as a local one
            store.save(baseline)
        if options.keep_logs:
            write_recorded(run.capture, options.keep_logs / "run", source)
            write_recorded(baseline.capture, options.keep_logs / "baseline", baseline.source)
        return Launched(capture=run.capture, baseline=baseline, environment=made, backend=run.backend,
                        debug=run.debug, live=False, source=source, baseline_note=run.baseline_note)
