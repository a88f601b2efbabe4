"""A race (expect.attempts > 1) runs live again until its outcome shows: the launches, what
the recording says of the earlier runs, where their kept logs go, and what a scenario or a
bundle may say about attempts."""

import dataclasses

import pytest
import yaml

from faultlab import identity, recording_files, runner, scenario as scenarios
from faultlab.errors import BadInput
from faultlab.launchers import Launched, RunOptions
from faultlab.reports.text import run_report

from conftest import ROOT, load

RACE = load(ROOT / "scenarios" / "listen-backlog-overflow.yaml")
RECORDED_RUN, RECORDED_BASELINE = recording_files.read(ROOT / "recordings" / "listen-backlog-overflow.cpu.json")


class ScriptedLauncher:
    """Live captures given in advance, one per launch: the recorded healthy baseline's (which
    shows none of the race's signatures) for `misses` launches, then the recorded run's."""

    live = True

    def __init__(self, misses: int, keep_logs=None) -> None:
        self.misses, self.launches, self.keep_logs = misses, [], keep_logs

    def launch(self, scenario, backend, store, options):
        self.launches.append(options)
        if options.keep_logs:  # as a live launch writes its logs
            (options.keep_logs / "run").mkdir(parents=True)
            (options.keep_logs / "run" / "attempt").write_text(str(len(self.launches)))
        shows = len(self.launches) > self.misses
        capture = RECORDED_RUN.capture if shows else RECORDED_BASELINE.capture
        return Launched(capture=capture, baseline=RECORDED_BASELINE, environment=RECORDED_RUN.environment,
                        backend="gloo", debug=None, live=self.live, source="live", baseline_note="recorded baseline")


def test_a_race_that_shows_at_once_runs_once(store):
    launcher = ScriptedLauncher(misses=0)
    recording = runner.run_scenario(RACE, store, launcher, "gloo")
    assert len(launcher.launches) == 1 and recording.reproduced and recording.earlier_attempts == ()
    assert "a race, run live" not in run_report(RACE, recording)


def test_a_race_runs_again_until_it_shows_and_names_the_earlier_runs(store, tmp_path):
    launcher = ScriptedLauncher(misses=2)
    recording = runner.run_scenario(RACE, store, launcher, "gloo",
                                    RunOptions(fresh_baseline=True, keep_logs=tmp_path))
    assert RACE.expect.attempts == 3 and len(launcher.launches) == 3 and recording.reproduced
    missed = "healthy, without store-connect-reset-retry, store-somaxconn-warning"
    assert recording.earlier_attempts == (missed, missed)
    assert [options.fresh_baseline for options in launcher.launches] == [True, False, False]
    kept = {path.parent.name: path.read_text() for path in tmp_path.glob("*/attempt")}
    assert kept == {"run.attempt1": "1", "run.attempt2": "2", "run": "3"}
    report = run_report(RACE, recording, width=None)
    assert f"a race, run live 3 times: this is the last (run 1: {missed}; run 2: {missed})" in report
    assert store.get(recording.id).earlier_attempts == recording.earlier_attempts


def test_a_race_that_never_shows_stops_at_its_attempts(store):
    launcher = ScriptedLauncher(misses=5)
    recording = runner.run_scenario(RACE, store, launcher, "gloo")
    assert len(launcher.launches) == 3 and not recording.reproduced and len(recording.earlier_attempts) == 2


def test_a_scenario_without_attempts_and_a_replay_run_once(store):
    once = dataclasses.replace(RACE, expect=dataclasses.replace(RACE.expect, attempts=1))
    launcher = ScriptedLauncher(misses=5)
    assert not runner.run_scenario(once, store, launcher, "gloo").reproduced and len(launcher.launches) == 1
    replay = ScriptedLauncher(misses=5)
    replay.live = False
    assert not runner.run_scenario(RACE, store, replay, "gloo").earlier_attempts and len(replay.launches) == 1


def test_logs_set_aside_never_overwrite_earlier_ones(tmp_path):
    from faultlab.launchers import set_aside_run_logs

    for _ in range(2):
        (tmp_path / "run").mkdir()
        set_aside_run_logs(tmp_path, 1)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run.attempt1", "run.attempt1.2"]
    set_aside_run_logs(None, 1)  # no --logs: nothing to move


@pytest.mark.parametrize("attempts, message", [(0, "expect.attempts: 0 is outside 1..3"),
                                               (4, "expect.attempts: 4 is outside 1..3"),
                                               ("two", "expect.attempts")])
def test_a_scenario_may_ask_for_one_to_three_attempts(attempts, message):
    data = yaml.safe_load((ROOT / "scenarios" / "listen-backlog-overflow.yaml").read_text())
    data["expect"]["attempts"] = attempts
    with pytest.raises(BadInput, match=message):
        scenarios.parse(data, "race.yaml")


def test_a_bundle_cannot_smuggle_text_as_an_earlier_attempt():
    sneaky = dataclasses.replace(RECORDED_RUN, earlier_attempts=("healthy\x1b[2J",))
    with pytest.raises(BadInput, match=r"recording\.earlier_attempts\[0\]: .* is not how a live run ended"):
        identity.check_recording(sneaky, "recording")
    identity.check_recording(dataclasses.replace(RECORDED_RUN, earlier_attempts=("crashed",)), "recording")
