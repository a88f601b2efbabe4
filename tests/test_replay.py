"""Shipped recordings, replayed: GPU scenarios made live on a GPU, and the CPU corpus made
live as root on a CPU machine (what hosts without root or GPUs replay, and what the fast
tests of comparisons and reports run on)."""

import json

import pytest

from faultlab import recording_files
from faultlab.errors import ExitCode

from conftest import ROOT, host_gpus, load, replay_file, shipped_scenarios

GPU_SCENARIOS = [p for p in shipped_scenarios() if load(p).requires_gpus]
RECORDING_FILES = sorted((ROOT / "recordings").glob("*.json"))


def test_every_gpu_scenario_has_a_shipped_recording():
    assert GPU_SCENARIOS
    for path in GPU_SCENARIOS:
        assert recording_files.shipped_for(path.stem), f"{path.stem} has no recording to replay on CPU machines"


def test_every_scenario_has_a_shipped_recording():
    """Whatever a host lacks (GPUs, root, nft), every scenario can at least be replayed."""
    for path in shipped_scenarios():
        assert recording_files.shipped_for(path.stem), f"{path.stem} has no shipped recording"


@pytest.mark.parametrize("path", RECORDING_FILES, ids=[p.stem for p in RECORDING_FILES])
def test_recording_was_made_live_and_says_where(path):
    run, baseline = recording_files.read(path)
    assert run.live and run.source == "live" and run.reproduced
    made = run.environment
    assert made.torch and made.host and made.platform and run.recorded_at
    if path.name.endswith(".cpu.json"):
        assert not made.gpus and run.backend == "gloo" and made.gloo
    else:
        assert made.gpus and made.driver and made.nccl and run.backend == "nccl"
        assert path.name.split(".")[1] == recording_files.hardware_tag(run)
    assert (ROOT / "scenarios" / f"{run.scenario_id}.yaml").exists()
    assert baseline.kind == "baseline" and baseline.reproduced


@pytest.mark.parametrize("path", RECORDING_FILES, ids=[p.stem for p in RECORDING_FILES])
def test_replay_reproduces_what_was_recorded(path, store):
    run, _ = recording_files.read(path)
    scenario = load(ROOT / "scenarios" / f"{run.scenario_id}.yaml")
    replayed = replay_file(scenario, path, store)
    assert not replayed.live and replayed.source.startswith(f"REPLAY of {path.name}")
    assert replayed.comparison == run.comparison, "the same comparison, computed again here"
    assert {s.id for s in replayed.symptoms} == {s.id for s in run.symptoms}
    assert replayed.reproduced, replayed.missing_signatures
    culprit = scenario.answer.culprit
    if culprit.kind == "rank":
        assert culprit.index in replayed.comparison.deviating_ranks


GPU_RECORDINGS = [path for path in RECORDING_FILES if not path.name.endswith(".cpu.json")]


@pytest.mark.parametrize("path", GPU_RECORDINGS, ids=[p.stem for p in GPU_RECORDINGS])
def test_gpu_replay_shows_the_culprit_by_its_own_errors(path, store):
    run, _ = recording_files.read(path)
    scenario = load(ROOT / "scenarios" / f"{run.scenario_id}.yaml")
    replayed = replay_file(scenario, path, store)
    culprit = scenario.answer.culprit
    own_errors = [s for s in replayed.symptoms if s.role == "culprit" and s.local_rank is not None]
    if culprit.kind == "rank":
        assert {s.rank for s in own_errors} == {culprit.index}
        assert culprit.index in replayed.comparison.deviating_ranks
    elif culprit.kind == "node":
        assert {s.node for s in own_errors} == {culprit.index}
    elif scenario.expect.verdict != "healthy":
        on_ranks = [s for s in replayed.symptoms if s.local_rank is not None and s.role != "victim"]
        assert {s.id for s in on_ranks} >= set(scenario.expect.signatures), "a job-wide fault shows on the ranks"


def test_cli_replays_missing_set_device_and_says_so(cli):
    if host_gpus():
        pytest.skip("this host has GPUs: the scenario runs live")
    result = cli("run", "missing-set-device")
    assert result.exit_code == ExitCode.OK, result.output
    words = " ".join(result.output.split())  # long lines wrap at the terminal's width
    assert "REPLAY of missing-set-device." in words and "not run on this machine" in words
    assert "NVIDIA H200" in words
    for rank in (0, 1):
        assert f"[rank{rank}]: Duplicate GPU detected : rank {rank} and rank {1 - rank} both on CUDA device" in result.output


def test_a_replays_logs_and_dumps_are_kept_and_diagnose_names_the_culprit(tmp_path, cli):
    if host_gpus():
        pytest.skip("this host has GPUs: the scenario runs live")
    logs = tmp_path / "logs"
    assert cli("run", "rank-as-device", "--logs", logs).exit_code == ExitCode.OK
    assert "recorded live" in (logs / "run" / "RECORDED.txt").read_text()
    dumps = sorted(path.name for path in (logs / "run" / "ranks").glob("*.fr"))
    assert dumps == ["node0-local0-rank0.fr", "node1-local0-rank1.fr"]
    result = cli("diagnose", logs / "run")
    words = " ".join(result.output.split())
    assert "1. rank-as-device-id" in words and "Culprit: rank 1 on node 1" in words, result.output
    assert "2 of 2 ranks dumped" in words and "before its first" in words


def test_a_tampered_recording_is_refused(tmp_path, cli, monkeypatch):
    document = json.loads((ROOT / "recordings" / "missing-set-device.h200x1.json").read_text())
    document["run"]["capture"]["ranks"][0]["exit_code"] = "one"
    (tmp_path / "missing-set-device.h200x1.json").write_text(json.dumps(document))
    monkeypatch.setenv("FAULTLAB_RECORDINGS", str(tmp_path))
    result = cli("run", "missing-set-device")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "run.capture.ranks[0].exit_code: expected int" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("path", RECORDING_FILES, ids=[p.stem for p in RECORDING_FILES])
def test_a_run_report_fits_100_columns(path, store):
    """What `faultlab run` prints in a 100-column terminal; --wide keeps long lines whole."""
    from faultlab.reports import text

    run, _ = recording_files.read(path)
    scenario = load(ROOT / "scenarios" / f"{run.scenario_id}.yaml")
    replayed = replay_file(scenario, path, store)
    report = text.run_report(scenario, replayed, width=100)
    too_wide = [line for line in report.splitlines() if len(line) > 100]
    assert not too_wide, too_wide
    wide = text.run_report(scenario, replayed, width=None)
    assert max(len(line) for line in wide.splitlines()) >= max(len(line) for line in report.splitlines())
