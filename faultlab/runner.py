"""One scenario, live: plan, launch, match symptoms, compare with the healthy baseline, record.

This is the core behind `faultlab run` and `faultlab baseline`; the CLI only renders.
"""

from __future__ import annotations

import dataclasses
import datetime
import platform
import re
import socket
import uuid
from pathlib import Path

from . import compare, recordings, symptoms
from .errors import BadInput, EnvironmentProblem
from .launch import launch
from .plan import build_plan, choose_backend, gpus_on_host
from .records import RECORDING_FORMAT, Capture, Environment, Recording
from .scenario import Scenario
from .store import Store

# Debug knobs a run can be repeated with, and the environment each one sets on every node.
DEBUG_KNOBS: dict[str, dict[str, str]] = {
    "detail": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
    "cpp-info": {"TORCH_CPP_LOG_LEVEL": "INFO"},
    "nccl-info": {"NCCL_DEBUG": "INFO"},
    "nccl-trace": {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"},
}


def environment() -> Environment:
    """Versions and hardware of this host, as a recording states them. Imports torch."""
    import torch

    cuda = torch.version.cuda
    gpus: tuple[str, ...] = ()
    nccl = None
    if torch.cuda.is_available():
        gpus = tuple(torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count()))
        nccl = ".".join(str(part) for part in torch.cuda.nccl.version())
    driver = None
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as version:
            # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
            found = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", version.readline())
            driver = found.group(1) if found else None
    except OSError:
        pass
    import torch.distributed as dist

    return Environment(
        host=socket.gethostname(),
        platform=f"{platform.system()} {platform.machine()}",
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=cuda,
        nccl=nccl,
        gloo=dist.is_gloo_available(),
        gpus=gpus,
        driver=driver,
    )


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _new_id(scenario_id: str, kind: str) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{scenario_id}.{kind}.{stamp}.{uuid.uuid4().hex[:6]}"


def _debug_env(debug: str | None) -> dict[str, str]:
    if debug is None:
        return {}
    if debug not in DEBUG_KNOBS:
        raise BadInput(f"unknown debug knob {debug!r} (known: {', '.join(DEBUG_KNOBS)})")
    return DEBUG_KNOBS[debug]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    fresh_baseline: bool = False  # run the baseline again instead of reusing the stored one
    keep_logs: Path | None = None  # copy every raw log here
    debug: str | None = None  # a DEBUG_KNOBS key
    live_only: bool = False  # never replay a shipped recording
    record_to: Path | None = None  # also write the run and its baseline as a recording file


def _healthy_backend(scenario: Scenario, backend: str, host_gpus: int) -> tuple[str, str]:
    """The backend of the healthy baseline, and why. A healthy NCCL run needs a GPU per rank;
    with fewer, the baseline is a healthy gloo run of the same topology, never a made-up one."""
    if backend == "nccl" and host_gpus < scenario.topology.world_size:
        return "gloo", (
            f"no healthy NCCL run of {scenario.topology.world_size} ranks fits on {host_gpus} GPU(s): "
            "the baseline is a healthy gloo run of the same topology and the expected N(N-1)/2"
        )
    return backend, ""


def baseline_for(
    scenario: Scenario, backend: str, host_gpus: int, env: Environment, store: Store, options: RunOptions
) -> Recording:
    """The healthy run of the scenario's topology on `backend`: stored, or run live now."""
    backend, why = _healthy_backend(scenario, backend, host_gpus)
    topology = f"{scenario.topology.nodes}x{scenario.topology.ranks_per_node}"
    topology += "-hosts" if scenario.topology.hosts else ""
    if not options.fresh_baseline:
        cached = store.latest_baseline(topology, backend, env.torch, env.host)
        if cached is not None and cached.reproduced:
            return dataclasses.replace(cached, baseline_note=_join(cached.baseline_note, why))
    plan = build_plan(scenario, backend, healthy=True, host_gpus=host_gpus)
    keep = options.keep_logs / "baseline" if options.keep_logs else None
    capture = launch(plan, keep_logs=keep)
    found = symptoms.match_capture(capture)
    # Against itself, only exits and values can deviate: N(N-1)/2 on every rank, exit 0.
    healthy = compare.compare(capture, found, capture, found).verdict == "healthy"
    recording = Recording(
        id=_new_id(f"baseline-{topology}", "baseline"),
        format=RECORDING_FORMAT,
        scenario_id=f"baseline-{topology}",
        kind="baseline",
        live=True,
        source="live",
        recorded_at=_now(),
        environment=env,
        backend=backend,
        debug=None,
        capture=capture,
        symptoms=found,
        comparison=None,
        baseline_id=None,
        baseline_note=f"healthy {topology} run on {backend}",
        expected_signatures=(),
        missing_signatures=(),
        expected_verdict="healthy",
        reproduced=healthy,
    )
    store.save(recording)
    return dataclasses.replace(recording, baseline_note=_join(recording.baseline_note, why))


def _join(note: str, why: str) -> str:
    return f"{note} ({why})" if why else note


def run_scenario(scenario: Scenario, store: Store, options: RunOptions = RunOptions()) -> Recording:
    """Run `scenario` live, or replay its shipped recording where this host cannot run it.
    The recording is compared with the healthy baseline, stored and returned."""
    extra_env = _debug_env(options.debug)
    host_gpus = gpus_on_host()
    try:
        backend = choose_backend(scenario, host_gpus)
    except EnvironmentProblem as problem:
        shipped = recordings.shipped_for(scenario.id)
        if options.live_only or not shipped or options.debug:
            reason = "--live refuses to replay" if options.live_only else (
                "a replay cannot add a debug knob" if options.debug and shipped else "no shipped recording to replay")
            raise EnvironmentProblem(f"{problem} ({reason})") from None
        return replay(scenario, shipped[0], store)
    env = environment()
    baseline = baseline_for(scenario, backend, host_gpus, env, store, options)
    plan = build_plan(scenario, backend, host_gpus=host_gpus, extra_env=extra_env)
    capture = launch(plan, keep_logs=options.keep_logs / "run" if options.keep_logs else None)
    recording = _record(scenario, capture, baseline, env, backend, options.debug, "live", True)
    store.save(recording)
    if options.record_to:
        recordings.write(options.record_to, recording, baseline)
    return recording


def replay(scenario: Scenario, path: Path, store: Store) -> Recording:
    """A shipped recording, evaluated again here exactly as a live capture would be."""
    run, baseline = recordings.read(path)
    if run.scenario_id != scenario.id:
        raise BadInput(f"{path}: records scenario {run.scenario_id!r}, not {scenario.id!r}")
    return _replay(scenario, run, baseline, path.name, store)


def replay_stored_or_shipped(scenario: Scenario, store: Store) -> Recording:
    """A replay of the newest live run of `scenario` in the store, else of its shipped recording."""
    stored = [r for r in store.recordings(scenario.id, kind="run") if r.live and r.baseline_id]
    if stored:
        run = stored[-1]
        return _replay(scenario, run, store.get(run.baseline_id), f"recording {run.id}", store)
    shipped = recordings.shipped_for(scenario.id)
    if not shipped:
        raise EnvironmentProblem(f"no recording of {scenario.id!r} to replay: run it live first")
    return replay(scenario, shipped[0], store)


def _replay(scenario: Scenario, run: Recording, baseline: Recording, name: str, store: Store) -> Recording:
    made = run.environment
    gpus = f"{len(made.gpus)} x {made.gpus[0]}" if made.gpus else "no GPU"
    source = (
        f"REPLAY of {name}, recorded live {run.recorded_at} on {made.host} ({gpus}, "
        f"driver {made.driver or '-'}, torch {made.torch}, NCCL {made.nccl or '-'}); not run on this machine"
    )
    baseline = dataclasses.replace(
        baseline, symptoms=symptoms.match_capture(baseline.capture), live=False,
        source=f"baseline of the replayed {name}, recorded live {baseline.recorded_at} on {baseline.environment.host}",
    )
    recording = _record(scenario, run.capture, baseline, made, run.backend, run.debug, source, False,
                        baseline_note=run.baseline_note)
    if not store.has(baseline.id):  # a shipped baseline travels with its replay (export), never as a local one
        store.save(baseline)
    store.save(recording)
    return recording


def evaluate(scenario: Scenario, capture: Capture, baseline_capture: Capture, baseline_symptoms, backend: str):
    """Symptoms, comparison and whether the run shows what the scenario expects. Pure."""
    found = symptoms.match_capture(capture)
    comparison = compare.compare(capture, found, baseline_capture, baseline_symptoms)
    expected = scenario.expect.signatures_for(backend)
    present = {symptom.id for symptom in found}
    missing = tuple(signature for signature in expected if signature not in present)
    reproduced = comparison.verdict == scenario.expect.verdict and not missing
    return found, comparison, expected, missing, reproduced


def _record(scenario, capture, baseline, env, backend, debug, source, live, baseline_note=None) -> Recording:
    found, comparison, expected, missing, reproduced = evaluate(
        scenario, capture, baseline.capture, baseline.symptoms, backend
    )
    return Recording(
        id=_new_id(scenario.id, "run" if live else "replay"),
        format=RECORDING_FORMAT,
        scenario_id=scenario.id,
        kind="run",
        live=live,
        source=source,
        recorded_at=_now(),
        environment=env,
        backend=backend,
        debug=debug,
        capture=capture,
        symptoms=found,
        comparison=comparison,
        baseline_id=baseline.id,
        baseline_note=baseline_note or f"{baseline.baseline_note}, recorded {baseline.recorded_at}",
        expected_signatures=expected,
        missing_signatures=missing,
        expected_verdict=scenario.expect.verdict,
        reproduced=reproduced,
    )


def run_suite(catalog, store: Store, options: RunOptions = RunOptions(), progress=None):
    """Every scenario of `catalog` in turn; returns (scenario, recording, seconds) triples.
    `progress`, if given, is called with (position, count, scenario, recording, seconds) as each finishes."""
    import time

    results = []
    for index, scenario in enumerate(catalog, 1):
        started = time.monotonic()
        scenario_options = dataclasses.replace(
            options, keep_logs=options.keep_logs / scenario.id if options.keep_logs else None
        )
        recording = run_scenario(scenario, store, scenario_options)
        seconds = time.monotonic() - started
        results.append((scenario, recording, seconds))
        if progress:
            progress(index, len(catalog), scenario, recording, seconds)
    return results
