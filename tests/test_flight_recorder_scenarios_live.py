"""The scenarios where the Flight Recorder is the decisive evidence, run live: the recorder
names the culprit of the answer key, and the evidence travels through JSON, bundles and replay."""

import json

import pytest

from faultlab import serial
from faultlab.errors import ExitCode
from faultlab.flight_recorder.analysis import analyse
from faultlab.records import Recording

from conftest import ROOT, load, replay_file, run_live

DECISIVE = {"frozen-rank": 2, "extra-collective": 0, "collective-order": 1, "busy-rank": 1}


@pytest.mark.live
@pytest.mark.parametrize("name", sorted(DECISIVE))
def test_the_recorder_names_the_culprit(name, store):
    scenario = load(ROOT / "scenarios" / f"{name}.yaml")
    recording = run_live(scenario, store)
    assert recording.reproduced, recording.comparison.summary
    recorder = recording.capture.flight_recorder
    assert scenario.answer.culprit.kind == "rank" and scenario.answer.culprit.index == DECISIVE[name]
    assert analyse(recorder).culprits == (DECISIVE[name],)
    assert analyse(recorder).divergence_seq >= 2  # past the training step every rank completed


@pytest.mark.live
def test_frozen_rank_evidence_travels_through_json_bundles_and_replay(tmp_path, cli, monkeypatch):
    result = cli("run", "frozen-rank", "--json", "--record-to", tmp_path / "recordings")
    assert result.exit_code == ExitCode.OK, result.output
    data = json.loads(result.output[result.output.index("{"):])
    recorder = data["capture"]["flight_recorder"]
    assert [dump["rank"] for dump in recorder["dumps"]] == [0, 1, 3]
    assert recorder["missing"] == [{"rank": 2, "reason": "stopped (state T): could not answer"}]
    assert {dump["trigger"] for dump in recorder["dumps"]} == {"error"}
    recording = serial.from_dict(Recording, data)
    assert analyse(recording.capture.flight_recorder).culprits == (2,)

    bundle = tmp_path / "team.json"
    assert cli("export", "-o", bundle).exit_code == ExitCode.OK
    monkeypatch.setenv("FAULTLAB_DB", str(tmp_path / "other.db"))
    assert cli("import", bundle).exit_code == ExitCode.OK
    from faultlab.store import Store

    with Store(tmp_path / "other.db") as other:
        imported = [r for r in other.recordings() if r.scenario_id == "frozen-rank" and r.kind == "run"]
        assert imported and imported[0].capture.flight_recorder == recording.capture.flight_recorder
        (recorded,) = (tmp_path / "recordings").glob("frozen-rank.*.json")
        replayed = replay_file(load(ROOT / "scenarios" / "frozen-rank.yaml"), recorded, other)
    assert not replayed.live and replayed.reproduced
    assert analyse(replayed.capture.flight_recorder).culprits == (2,)


@pytest.mark.live
def test_diagnose_names_the_frozen_rank_from_a_real_run_directory(tmp_path, cli):
    logs = tmp_path / "logs"
    cli("run", "frozen-rank", "--logs", logs)
    logs = logs / "run"  # the faulted run's directory (a fresh store keeps its baseline's beside it)
    assert sorted(path.name for path in logs.rglob("*.fr")) == [
        "node0-local0-rank0.fr", "node0-local1-rank1.fr", "node1-local1-rank3.fr"]
    result = cli("diagnose", logs)
    assert result.exit_code == 0, result.output
    assert "Culprit: rank 2" in result.output and "(Flight Recorder:" in result.output
    assert "1. frozen-rank" in result.output
