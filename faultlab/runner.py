"""One scenario run end to end: choose what launches it, launch, match symptoms, compare
with the healthy baseline, build the Recording, store it.

This is the core behind `faultlab run`, `baseline` and drills; the CLI only renders.
"""

from __future__ import annotations

import dataclasses
import time

from . import compare, recording_files, symptoms
from .errors import EnvironmentProblem
from .host import Host
from .launchers import LocalLauncher, ReplayLauncher, RunOptions, build_recording, set_aside_run_logs
from .records import Capture, Recording
from .scenario import Scenario


def choose_launcher(scenario: Scenario, host: Host, options: RunOptions):
    """(launcher, backend) for a run of `scenario` here: live where the host can, else the
    replay of its shipped recording, else EnvironmentProblem saying what is missing."""
    availability = host.availability(scenario)
    if availability.live:
        return LocalLauncher(host), availability.backend
    if availability.mode == "replay" and not options.live_only and not options.debug:
        return ReplayLauncher.from_file(scenario, availability.recording), None
    why = ("--live refuses to replay" if options.live_only and availability.mode == "replay" else
           "a replay cannot add a debug knob" if options.debug and availability.mode == "replay" else
           "no shipped recording to replay")
    raise EnvironmentProblem(f"scenario {scenario.id!r} {availability.reason} ({why})")


def live_backend(scenario: Scenario, host: Host) -> str:
    """The backend of a live run here, or EnvironmentProblem naming what is missing."""
    availability = host.availability(scenario)
    if not availability.live:
        raise EnvironmentProblem(f"scenario {scenario.id!r} {availability.reason}")
    return availability.backend


def evaluate(scenario: Scenario, capture: Capture, baseline_capture: Capture, baseline_symptoms, backend: str):
    """Symptoms, comparison and whether the run shows what the scenario expects. Pure."""
    found = symptoms.match_capture(capture)
    comparison = compare.compare(capture, found, baseline_capture, baseline_symptoms)
    expected = scenario.expect.signatures_for(backend)
    present = {symptom.id for symptom in found}
    missing = tuple(signature for signature in expected if signature not in present)
    reproduced = comparison.verdict == scenario.expect.verdict and not missing
    return found, comparison, expected, missing, reproduced


def run_scenario(scenario: Scenario, store, launcher, backend: str | None,
                 options: RunOptions = RunOptions()) -> Recording:
    """Launch `scenario` with `launcher`, evaluate it against its baseline, store it. A race
    (expect.attempts > 1) runs live again until its outcome shows, at most that many times;
    the earlier runs are named in the recording, their logs set aside beside the last's."""
    earlier: list[str] = []
    while True:
        launched = launcher.launch(scenario, backend, store, options)
        found, comparison, expected, missing, reproduced = evaluate(
            scenario, launched.capture, launched.baseline.capture, launched.baseline.symptoms, launched.backend
        )
        if reproduced or not launched.live or len(earlier) + 1 >= scenario.expect.attempts:
            break
        # The shape identity.EARLIER_ATTEMPT checks when a bundle brings one.
        earlier.append(comparison.verdict + (f", without {', '.join(missing)}" if missing else ""))
        set_aside_run_logs(options.keep_logs, len(earlier))
        options = dataclasses.replace(options, fresh_baseline=False)  # the baseline just made stands
    recording = build_recording(scenario.id, "run", launched, found, comparison, expected, missing,
                                scenario.expect.verdict, reproduced, tuple(earlier))
    store.save(recording)
    if options.record_to and launched.live:
        recording_files.write(options.record_to, recording, launched.baseline)
    return recording


def run_here(scenario: Scenario, store, host: Host, options: RunOptions = RunOptions()) -> Recording:
    """Run `scenario` the way this host can: live, or the replay of its shipped recording."""
    launcher, backend = choose_launcher(scenario, host, options)
    return run_scenario(scenario, store, launcher, backend, options)


def run_suite(catalog, store, host: Host, options: RunOptions = RunOptions(), progress=None):
    """Every scenario of `catalog` in turn; returns (scenario, recording, seconds) triples.
    `progress`, if given, is called with (position, count, scenario, recording, seconds) as each finishes."""
    results = []
    for index, scenario in enumerate(catalog, 1):
        started = time.monotonic()
        scenario_options = dataclasses.replace(
            options, keep_logs=options.keep_logs / scenario.id if options.keep_logs else None
        )
        recording = run_here(scenario, store, host, scenario_options)
        seconds = time.monotonic() - started
        results.append((scenario, recording, seconds))
        if progress:
            progress(index, len(catalog), scenario, recording, seconds)
    return results
