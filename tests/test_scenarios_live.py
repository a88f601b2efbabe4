"""Every shipped scenario: valid, and (where this host can) reproduced live."""

import pytest

from faultlab.errors import ExitCode

from conftest import load, run_live, shipped_scenarios, this_host

SCENARIO_FILES = shipped_scenarios()


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[p.stem for p in SCENARIO_FILES])
def test_scenario_file_is_valid(path):
    loaded = load(path)
    assert loaded.id == path.stem, "a scenario's id is its file name"
    assert loaded.ticket and loaded.explain and loaded.answer.fix


@pytest.mark.live
@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[p.stem for p in SCENARIO_FILES])
def test_scenario_reproduces_live(path, store, cli):
    loaded = load(path)
    here = this_host().availability(loaded)
    if here.mode == "replay":
        result = cli("run", loaded.id, "--live")
        assert result.exit_code == ExitCode.ENVIRONMENT
        assert here.reason in result.output and "--live refuses to replay" in result.output
        return  # test_replay.py covers it through its shipped recording
    recording = run_live(loaded, store)
    found = {symptom.id for symptom in recording.symptoms}
    assert recording.comparison.verdict == loaded.expect.verdict, recording.comparison.summary
    assert set(loaded.expect.signatures_for(recording.backend)) <= found
    assert recording.reproduced
    assert recording.live and recording.capture.ranks
