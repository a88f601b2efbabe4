"""Every process faultlab starts ends with the run: at the deadline, on Ctrl-C, when killed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faultlab.errors import ExitCode

from conftest import TEST_SCENARIOS, load, run_live, takes_ctrl_c

pytestmark = pytest.mark.live


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def run_namespaces(tree: set[int]) -> set[str]:
    """The network namespaces the run's processes live in, other than ours (read while alive)."""
    return {netns_of(pid) for pid in tree} - {None, netns_of(os.getpid())}


def assert_no_listener_left(namespaces: set[str], ports_before: set[int]) -> None:
    """No listening port remains: on the host's loopback, or in the run's own namespace,
    which must be gone with its sockets (no process left in it)."""
    assert listening_ports() <= ports_before
    if namespaces:
        holders = {int(p) for p in os.listdir("/proc") if p.isdigit() and netns_of(int(p)) in namespaces}
        assert not holders, f"processes {holders} still hold the run's network namespace"


def descendants(root: int) -> set[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {root}
    while frontier:
        children = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= children
        frontier = children
    return found


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def start_faultlab(db, scenario: str) -> subprocess.Popen:
    env = dict(os.environ, FAULTLAB_DB=str(db))
    return subprocess.Popen(
        [sys.executable, "-m", "faultlab.cli", "run", scenario],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell job would have
        preexec_fn=takes_ctrl_c,
    )


def wait_for_workers(process: subprocess.Popen, count: int, limit_s: float = 30) -> set[int]:
    """The run's process tree, once it has at least `count` processes below faultlab."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        tree = descendants(process.pid)
        if len(tree) >= count:
            time.sleep(0.5)  # let them get into the rendezvous
            return descendants(process.pid)
        time.sleep(0.05)
    raise AssertionError("the run never started its workers")


def wait_gone(pids: set[int], limit_s: float = 5) -> set[int]:
    end = time.monotonic() + limit_s
    while alive(pids) and time.monotonic() < end:
        time.sleep(0.05)
    return alive(pids)


def run_dirs() -> set[Path]:
    import tempfile

    return set(Path(tempfile.gettempdir()).glob("faultlab-run-*"))


def test_twenty_hang_runs_leave_nothing_behind(tmp_path, store):
    ports_before = listening_ports()
    dirs_before = run_dirs()
    hang = load(TEST_SCENARIOS / "hang-short.yaml")
    for _ in range(19):
        recording = run_live(hang, store)
        assert recording.comparison.verdict == "hung"
        assert recording.reproduced
    # The twentieth is interrupted with Ctrl-C while its workers wait in the rendezvous.
    process = start_faultlab(tmp_path / "interrupted.db", "wrong-master-port-rank")
    tree = wait_for_workers(process, count=2 + 4)  # two launchers, four workers
    namespaces = run_namespaces(tree)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == ExitCode.INTERRUPTED, err
    assert "interrupted" in err and "Traceback" not in err
    assert not wait_gone(tree), "processes of the interrupted run survived"
    assert_no_listener_left(namespaces, ports_before)
    ours = {f"faultlab-run-{os.getpid()}-", f"faultlab-run-{process.pid}-"}
    left = {path for path in run_dirs() - dirs_before if any(path.name.startswith(prefix) for prefix in ours)}
    assert not left, f"run directories survived: {left}"


def test_sigkill_of_faultlab_takes_its_tree_down(tmp_path, store):
    ports_before = listening_ports()
    process = start_faultlab(tmp_path / "killed.db", "wrong-master-port-rank")
    tree = wait_for_workers(process, count=2 + 4)
    namespaces = run_namespaces(tree)
    process.kill()
    process.wait()
    assert not wait_gone(tree), "launchers or workers outlived a SIGKILLed faultlab"
    assert_no_listener_left(namespaces, ports_before)
    orphans = {path for path in run_dirs() if path.name.startswith(f"faultlab-run-{process.pid}-")}
    assert orphans, "the killed run's directory is where the next run will find it"
    run_live(load(TEST_SCENARIOS / "hang-short.yaml"), store)
    assert not orphans & run_dirs(), "the next run removed the killed run's directory"


def test_a_nodes_sweep_ends_its_runs_leftovers_and_spares_its_own_shell_and_other_nodes():
    """What a cluster node's script runs once its launcher ended (faultlab/slurm/script.py): the
    practice cluster's nodes share one machine, node 0's also runs the batch script's srun (the
    run's marker, SLURM_NODEID=0, no node marker), and the sweeping shell carries the markers too."""
    def started(env: dict[str, str], command: list[str]) -> subprocess.Popen:
        return subprocess.Popen(command, env={**os.environ, "FAULTLAB_RUN": "sweep-test", **env},
                                stdout=subprocess.PIPE, text=True, start_new_session=True)

    leftover = started({"FAULTLAB_NODE": "sweep-test/0"}, ["sleep", "60"])
    other_node = started({"FAULTLAB_NODE": "sweep-test/1"}, ["sleep", "60"])
    batch_srun = started({"SLURM_NODEID": "0"}, ["sleep", "60"])
    try:
        shell = started({"FAULTLAB_NODE": "sweep-test/0"},
                        ["bash", "-c", f'"{sys.executable}" -m faultlab.lab.supervise "$FAULTLAB_RUN" '
                                       '"FAULTLAB_NODE=$FAULTLAB_NODE"; echo "the shell went on"'])
        out, _ = shell.communicate(timeout=30)
        assert out.strip() == "the shell went on"
        assert leftover.wait(timeout=5) == -signal.SIGKILL
        assert other_node.poll() is None and batch_srun.poll() is None
    finally:
        for process in (leftover, other_node, batch_srun):
            process.kill()
            process.wait()
