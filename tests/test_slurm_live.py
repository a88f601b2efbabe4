"""faultlab on a real SLURM cluster: the practice cluster of scripts/slurm-cluster (nodes in
network namespaces on this machine), through sbatch and srun. Needs root and SLURM's
packages (scripts/system-packages installs them); skipped, naming what is missing, without."""

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, TEST_SCENARIOS, load, takes_ctrl_c

from faultlab import app
from faultlab.lab.sweep import SweepSettings
from faultlab.launchers import RunOptions
from faultlab.slurm import preflight, scheduler
from faultlab.slurm.options import load_config

pytestmark = pytest.mark.live
CLUSTER = ROOT / "scripts" / "slurm-cluster"
STATE = "/run/faultlab-slurm"
NODES = ("n1", "n2", "n3")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "the practice SLURM cluster needs root (network namespaces, a bridge, slurmd)"
    missing = [name for name in ("ip", "munged", "slurmctld", "slurmd", "sbatch", "nft") if shutil.which(name) is None]
    if missing:
        return f"not installed: {', '.join(missing)} (scripts/system-packages installs them as root)"
    return None


def _cluster(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLUSTER), *args], capture_output=True, text=True, timeout=120)


def _node_processes() -> dict[str, list[str]]:
    """Processes in each node's namespace other than its slurmd: a job's leftovers."""
    left = {}
    for index in range(1, len(NODES) + 1):
        pids = subprocess.run(["ip", "netns", "pids", f"flslurm-n{index}"], capture_output=True, text=True).stdout.split()
        names = []
        for pid in pids:
            try:
                names.append(open(f"/proc/{pid}/comm").read().strip())
            except OSError:
                continue
        left[f"n{index}"] = [name for name in names if name != "slurmd"]
    return {node: names for node, names in left.items() if names}


@pytest.fixture(scope="module")
def cluster():
    """The practice cluster's settings; brought up for these tests (and down after) unless already up."""
    missing = _missing()
    if missing:
        pytest.skip(missing)
    already_up = _cluster("status").returncode == 0
    if not already_up:
        started = _cluster("up", str(len(NODES)))
        assert started.returncode == 0, started.stderr
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = f"{STATE}/slurm.conf"
    try:
        yield load_config(Path(f"{STATE}/faultlab.yaml"))
    finally:
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        if not already_up:
            _cluster("down")


@pytest.fixture
def slurm(cluster, tmp_path):
    return dataclasses.replace(cluster, shared_dir=tmp_path / "shared")


def _queue_is_empty():
    """No job in squeue and no process in any node but its slurmd (a job that just ended, such
    as salloc's, may still be COMPLETING for SLURM's KillWait)."""
    end = time.monotonic() + scheduler.LEAVE_QUEUE_S
    while scheduler._run("squeue", "--noheader").stdout.strip() and time.monotonic() < end:
        time.sleep(0.2)
    assert scheduler._run("squeue", "--noheader").stdout.strip() == ""
    assert _node_processes() == {}


def test_healthy_experiment_across_two_nodes(slurm, store):
    scenario, recording = app.run_on_cluster("healthy", store, slurm, RunOptions())
    assert recording.reproduced and recording.live and recording.comparison.verdict == "healthy"
    assert [rank.value for rank in recording.capture.ranks] == [6.0] * 4
    assert recording.environment.host.startswith("slurm:faultlab-practice/")
    assert "SLURM job" in recording.capture.network
    assert [node.command.split()[0] for node in recording.capture.nodes] == ["[n1]", "[n2]"]
    assert not list(slurm.shared_dir.iterdir())  # the run directory is read and removed
    _queue_is_empty()


def test_wrong_master_port_is_on_node_1_only(slurm, store):
    scenario, recording = app.run_on_cluster("wrong-master-port-node", store, slurm, RunOptions())
    assert recording.reproduced, recording.comparison.summary
    node0, node1 = recording.capture.nodes
    assert node1.master_port == node0.master_port + 1 and node1.command.startswith("[n2]")
    assert all(rank.ending == "never_started" for rank in recording.capture.ranks)
    _queue_is_empty()


def test_rank_crash_culprit_is_rank_2_on_node_1(slurm, store):
    scenario, recording = app.run_on_cluster("rank-crash", store, slurm, RunOptions())
    assert recording.reproduced, recording.comparison.summary
    crashed = [rank for rank in recording.capture.ranks if "corrupt sample" in rank.stderr]
    assert [(rank.rank, rank.node) for rank in crashed] == [(2, 1)]
    _queue_is_empty()


def test_preflight_names_a_node_whose_interface_is_wrong(slurm, store):
    broken = _cluster("break", "n2", "ifname")
    assert broken.returncode == 0, broken.stderr
    try:
        result = preflight.run(store, slurm, nodes=None, ranks_per_node=1, pairs="on-failure", timeout_s=5)
    finally:
        _cluster("mend", "n2")
    assert not result.healthy and result.bad_nodes == ("n2",) and result.bad_links == ()
    assert [check.nodes for check in result.checks] == [NODES, ("n1", "n2"), ("n1", "n3"), ("n2", "n3")]
    assert [check.healthy for check in result.checks] == [False, False, True, False]
    assert all("wrong-socket-interface on n2" in check.why for check in result.checks if not check.healthy)
    assert result.checks[2].phases["all_reduce"] is not None
    _queue_is_empty()


@contextlib.contextmanager
def _allocation():
    """An allocation of every node (a batch job that only sleeps), cancelled on the way out."""
    job_id = scheduler._run("sbatch", "--parsable", f"--nodes={len(NODES)}", "--output=/dev/null",
                            "--wrap=sleep 600").stdout.strip()
    try:
        end = time.monotonic() + 30
        while scheduler.state(job_id) != "RUNNING":
            assert time.monotonic() < end, "the allocation never started"
            time.sleep(0.2)
        yield job_id
    finally:
        scheduler.cancel(job_id)
        scheduler.wait_until_gone(job_id)


def _faultlab() -> str:
    return str(Path(sys.executable).parent / "faultlab")


def test_preflight_inside_salloc_names_the_slow_node_by_bandwidth(cluster, tmp_path):
    """Inside salloc the checks are job steps of it; n2's link shaped to 100 Mbit/s stands out."""
    broken = _cluster("break", "n2", "slow", "100mbit")
    assert broken.returncode == 0, broken.stderr
    try:
        done = subprocess.run(
            ["salloc", f"--nodes={len(NODES)}", _faultlab(), "--db", str(tmp_path / "db"), "preflight",
             "--slurm-config", f"{STATE}/faultlab.yaml", "--shared-dir", str(tmp_path / "shared"), "--timeout", "5",
             "--pairs", "always", "--sweep-max-bytes", "4M", "--sweep-seconds", "1", "--json"],
            capture_output=True, text=True, timeout=150)
    finally:
        _cluster("mend", "n2")
    result = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr  # healthy, but not fit: a slow node
    assert result["healthy"] and result["allocation"] and result["allocation"] in done.stderr
    assert result["bandwidth"]["slow_nodes"] == ["n2"] and result["bandwidth"]["slow_links"] == []
    assert [check["nodes"] for check in result["checks"]] == [list(NODES), ["n1", "n2"], ["n1", "n3"], ["n2", "n3"]]
    for check in result["checks"]:
        assert check["sweep"]["ranks"] == len(check["nodes"]) and check["sweep"]["points"][0]["bytes"] == 8
    fast = result["checks"][2]["sweep"]
    assert fast["ending"].startswith("done") and fast["points"][-1]["bytes"] == 4 * 2 ** 20
    _queue_is_empty()


HANG_DEADLINE_S = 10.0


def _hang_launcher(options):
    """A SLURM launcher whose runs (not their healthy baselines) meet their deadline 10 s after
    the job starts, instead of the 20 s allowed for starting interpreters on a busy cluster:
    the workers here are up in 3-5 s, and hang-short's ranks sleep for 60."""
    from faultlab.slurm.launcher import SlurmLauncher

    launcher = SlurmLauncher(options)
    plan = launcher.plan

    def sooner(scenario, backend, healthy=False, extra_env=None):
        made = plan(scenario, backend, healthy, extra_env)
        return made if healthy else dataclasses.replace(made, deadline_s=HANG_DEADLINE_S)

    launcher.plan = sooner
    return launcher


def test_a_step_in_an_allocation_is_cancelled_at_the_deadline(slurm, store):
    hang = load(TEST_SCENARIOS / "hang-short.yaml")
    from faultlab import runner

    with _allocation() as job_id:
        launcher = _hang_launcher(dataclasses.replace(slurm, jobid=job_id))
        recording = runner.run_scenario(hang, store, launcher, launcher.backend(hang), RunOptions())
        assert list(scheduler.job_steps(job_id)) == ["batch"]  # only the allocation's own
    assert recording.capture.hit_deadline and recording.comparison.verdict == "hung"
    assert f"SLURM step {job_id}." in recording.capture.network
    assert all(rank.ending == "killed_at_deadline" for rank in recording.capture.ranks)
    _queue_is_empty()


def test_ctrl_c_cancels_the_step(cluster, tmp_path):
    with _allocation() as job_id:
        command = [_faultlab(), "--db", str(tmp_path / "db"), "run", str(TEST_SCENARIOS / "hang-short.yaml"),
                   "--slurm-config", f"{STATE}/faultlab.yaml", "--shared-dir", str(tmp_path / "shared"),
                   "--jobid", job_id]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=takes_ctrl_c)
        try:
            end = time.monotonic() + 40
            while not [name for name in scheduler.job_steps(job_id) if name.startswith("faultlab-")]:
                assert process.poll() is None and time.monotonic() < end, "the step never started"
                time.sleep(0.2)
            time.sleep(1.0)
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 130, stderr
        assert "step was cancelled" in stderr and "Traceback" not in stderr
        assert list(scheduler.job_steps(job_id)) == ["batch"]
    _queue_is_empty()


def test_deadline_cancels_the_job(slurm, store):
    hang = load(TEST_SCENARIOS / "hang-short.yaml")
    from faultlab import runner

    launcher = _hang_launcher(slurm)
    recording = runner.run_scenario(hang, store, launcher, launcher.backend(hang), RunOptions())
    assert recording.capture.hit_deadline and recording.comparison.verdict == "hung"
    assert all(rank.ending == "killed_at_deadline" for rank in recording.capture.ranks)
    _queue_is_empty()


def test_ctrl_c_cancels_the_job(cluster, tmp_path):
    command = [str(Path(sys.executable).parent / "faultlab"), "--db", str(tmp_path / "db"), "run",
               str(TEST_SCENARIOS / "hang-short.yaml"), "--slurm-config", f"{STATE}/faultlab.yaml",
               "--shared-dir", str(tmp_path / "shared")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=takes_ctrl_c)
    try:
        end = time.monotonic() + 40
        while "RUNNING" not in scheduler._run("squeue", "--noheader", "--format=%T").stdout:
            assert process.poll() is None and time.monotonic() < end, "the job never started"
            time.sleep(0.2)
        time.sleep(1.0)  # the nodes' launchers are up
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    _queue_is_empty()


def test_cluster_comes_down_leaving_nothing(cluster, tmp_path):
    """Last: down (twice: idempotent) leaves no daemon, namespace, bridge or state; then up
    again, and no daemon keeps a file the caller had open (a flock lock held 40 minutes once)."""
    for _ in range(2):
        done = _cluster("down")
        assert done.returncode == 0, done.stderr
    assert not [line for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
                if line.startswith("flslurm-")]
    assert subprocess.run(["ip", "link", "show", "flslurm0"], capture_output=True).returncode != 0
    assert not os.path.exists(STATE)
    assert subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode != 0
    assert _cluster("status").returncode == 1
    held = tmp_path / "held.lock"
    with open(held, "w") as caller_file:  # open in the caller, inherited by `up` as flock's lock is
        started = subprocess.run([str(CLUSTER), "up", str(len(NODES))], capture_output=True, text=True, timeout=120,
                                 pass_fds=(caller_file.fileno(),))
    assert started.returncode == 0, started.stderr  # as the module found it (the fixture takes it down if it made it)
    daemons = subprocess.run(["pgrep", "-f", f"{STATE}/"], capture_output=True, text=True).stdout.split()
    assert len(daemons) >= 2 + len(NODES)  # munged, slurmctld, a slurmd per node
    for pid in daemons:
        with contextlib.suppress(FileNotFoundError):
            assert str(held) not in [os.path.realpath(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
