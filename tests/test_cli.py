"""Every command through CliRunner; the help path stays free of torch."""

import json
import subprocess
import sys

import pytest

from faultlab.causes import CAUSES
from faultlab.errors import ExitCode

from conftest import shipped_scenarios


def test_help_does_not_import_torch():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from faultlab.cli import main\n"
        "for args in (['--help'], ['run', '--help'], ['show', 'wrong-master-port-rank'], "
        "['show', 'skipped-destroy', '--code'], ['causes']):\n"
        "    result = CliRunner().invoke(main, args)\n"
        "    assert result.exit_code == 0, (args, result.output)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_command_is_documented():
    from faultlab.cli import main

    text = open("docs/cli.md", encoding="utf-8").read()
    for name in main.commands:
        assert f"## faultlab {name}" in text, f"docs/cli.md lacks a section for {name}"


def test_list_shows_every_scenario(cli):
    result = cli("list", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert sorted(row["id"] for row in rows) == sorted(p.stem for p in shipped_scenarios())
    by_id = {row["id"]: row for row in rows}
    assert by_id["healthy"]["here"] == "live" and by_id["healthy"]["how"] == "live (gloo)"
    assert by_id["wrong-master-port-rank"]["cause"] == "wrong-master-port"


def test_list_tells_each_scenario_how_it_runs_on_the_host_it_is_given(monkeypatch):
    """One answer per host: a fake host without root or GPUs, and one with both."""
    from faultlab import app
    from faultlab.host import Host

    bare = {e.scenario.id: e.here for e in app.catalog(Host(gpus=0, root=False, commands=frozenset()))}
    assert bare["healthy"].mode == "live"
    assert bare["healthy-hosts"].mode == "replay" and "needs root" in bare["healthy-hosts"].reason
    assert bare["healthy-hosts"].recording.name == "healthy-hosts.cpu.json"
    assert bare["missing-set-device"].mode == "replay" and bare["missing-set-device"].recording.name.endswith(".json")
    root_no_nft = {e.scenario.id: e.here for e in app.catalog(Host(gpus=0, root=True, commands=frozenset({"ip"})))}
    assert root_no_nft["healthy-hosts"].live and not root_no_nft["firewall-master-port"].live
    assert "`nft`" in root_no_nft["firewall-master-port"].reason
    gpu_host = {e.scenario.id: e.here for e in app.catalog(Host(gpus=8, root=True, commands=frozenset({"ip", "nft"})))}
    assert all(here.live for here in gpu_host.values())
    assert gpu_host["missing-set-device"].backend == "nccl" and gpu_host["healthy"].backend == "nccl"


def test_causes_lists_the_catalog(cli):
    result = cli("causes", "--json")
    assert result.exit_code == 0
    assert [c["id"] for c in json.loads(result.output)] == [c.id for c in CAUSES]


def test_show_code_prints_the_healthy_program_and_the_diff(cli):
    result = cli("show", "skipped-destroy", "--code")
    assert result.exit_code == 0
    assert "dist.init_process_group(BACKEND, timeout=TIMEOUT)" in result.output
    assert "-dist.destroy_process_group()" in result.output
    assert "+dist.init_process_group(BACKEND, timeout=TIMEOUT)" in result.output


def test_show_code_for_a_launch_fault_says_the_program_is_unchanged(cli):
    result = cli("show", "wrong-master-port-node", "--code")
    assert result.exit_code == 0
    assert "runs this program unchanged" in result.output


def test_show_code_renders_gpu_faults_for_nccl(cli):
    result = cli("show", "rank-as-device", "--code")
    assert "BACKEND = 'nccl'" in result.output
    assert "-    torch.cuda.set_device(local_rank)" in result.output
    assert "+    torch.cuda.set_device(rank)" in result.output


@pytest.mark.live
def test_run_json_healthy(cli):
    result = cli("run", "healthy", "--json")
    assert result.exit_code == ExitCode.OK, result.output
    recording = json.loads(result.output)
    assert recording["comparison"]["verdict"] == "healthy"
    assert [rank["value"] for rank in recording["capture"]["ranks"]] == [6.0] * 4
    assert recording["kind"] == "run" and recording["live"] is True


@pytest.mark.live
def test_run_keeps_raw_logs(cli, tmp_path):
    logs = tmp_path / "logs"
    result = cli("run", "skipped-destroy", "--logs", logs)
    assert result.exit_code == ExitCode.OK, result.output
    stderr = (logs / "run" / "ranks" / "node0-local1-rank1.stderr").read_text()
    assert "trying to initialize the default process group twice" in stderr
    assert (logs / "run" / "train.py").read_text().count("init_process_group") == 2


@pytest.mark.live
def test_baseline_command(cli):
    result = cli("baseline", "skipped-destroy")
    assert result.exit_code == ExitCode.OK, result.output
    assert "healthy 1x2 run on gloo: healthy" in result.output


@pytest.mark.live
def test_run_that_does_not_reproduce_exits_1(cli, tmp_path):
    text = open("scenarios/healthy.yaml", encoding="utf-8").read().replace("verdict: healthy", "verdict: crashed")
    path = tmp_path / "healthy-expecting-a-crash.yaml"
    path.write_text(text)
    result = cli("run", path)
    assert result.exit_code == ExitCode.NOT_REPRODUCED
    assert "Reproduced: NO (verdict healthy, expected crashed)" in result.output


def test_a_store_of_a_newer_version_is_refused_cleanly(tmp_path, cli):
    import sqlite3

    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as db:
        db.execute("CREATE TABLE recordings (id TEXT)")
        db.execute("PRAGMA user_version=99")
    result = cli("--db", newer, "scores")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "written by a newer faultlab" in result.output and "Traceback" not in result.output
