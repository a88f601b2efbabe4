"""The capture reader on run directories built by hand: how each rank ended, told from its
files and its launcher's log, with nothing launched."""

import json

import pytest

from faultlab.lab.capture import LaunchOutcome, read_capture
from faultlab.lab.plan import LaunchPlan, NodeLaunch
from faultlab.lab.rundir import RunDir

T0 = 1_000_000.0
PLAN = LaunchPlan(
    backend="gloo", program="print('hi')\n", timeout_s=5, deadline_s=6.5,
    nodes=(NodeLaunch(index=0, node_rank=0, nnodes=2, nproc_per_node=5),
           NodeLaunch(index=1, node_rank=1, nnodes=2, nproc_per_node=1)),
)


def write_worker(run_dir: RunDir, node: int, local: int, rank: int, pid: int, phases, status=None, stdout=""):
    slot = run_dir.slot(node, local, rank)
    lines = [{"phase": "start", "t": T0 + 0.1, "pid": pid, "rank": str(rank), "world_size": "6", "local_rank": local}]
    for phase, t, *extra in phases:
        record = {"phase": phase, "t": T0 + t}
        if extra:
            record["code"] = extra[0]
        lines.append(record)
    slot.events.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"phase": "cut sh')
    slot.stdout.write_text(stdout)
    slot.stderr.write_text("")
    if status is not None:
        slot.status.write_text(json.dumps({"code": status[0], "t": T0 + status[1]}))


@pytest.fixture
def capture(tmp_path):
    run_dir = RunDir(tmp_path)
    run_dir.ranks.mkdir()
    # node 0, its launcher exited at 3.0 s: every way a worker of a finished launcher ends
    write_worker(run_dir, 0, 0, 0, 100, [("init_begin", 0.2), ("init_end", 0.5), ("exit", 0.9, 0)],
                 status=(0, 0.95), stdout="Rank 0: 15.0\n")
    write_worker(run_dir, 0, 1, 1, 101, [("init_begin", 0.2)], status=(-9, 1.5))  # OOM-killed
    write_worker(run_dir, 0, 2, 2, 102, [("init_begin", 0.2), ("error", 1.0), ("exit", 1.0, 1)], status=(1, 1.1))
    write_worker(run_dir, 0, 3, 3, 103, [("all_reduce_begin", 0.6)])  # torn down, status never noted
    # local rank 4 never started: no files at all
    run_dir.launcher_log(0).write_text(
        "W1203 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 103 closing signal SIGTERM\n"
        "  exitcode  : -9 (pid: 101)\n")
    # node 1, its launcher still running at the deadline: its worker hung
    write_worker(run_dir, 1, 0, 5, 200, [("init_begin", 0.2), ("init_end", 0.4), ("all_reduce_begin", 0.5)])
    run_dir.launcher_log(1).write_text("")
    outcome = LaunchOutcome(t0=T0, end_t=6.6, hit_deadline=True, master_port=29500,
                            agent_exits={0: 1, 1: None}, agent_exit_times={0: 3.0},
                            network="private network namespace (loopback only)")
    return read_capture(PLAN, run_dir, outcome)


def ended(capture, node, local):
    rank = capture.rank_for_slot(node, local)
    return rank.ending, rank.exit_code, rank.end_t


def test_each_ending_is_told_apart(capture):
    assert ended(capture, 0, 0) == ("exited", 0, 0.95)
    assert ended(capture, 0, 1) == ("signaled", -9, 1.5)
    assert ended(capture, 0, 2) == ("exited", 1, 1.1)
    assert ended(capture, 0, 3) == ("torn_down", -15, 3.0)
    assert ended(capture, 0, 4) == ("never_started", None, 6.6)
    assert ended(capture, 1, 0) == ("killed_at_deadline", -9, 6.6)


def test_what_each_rank_printed_and_where_it_waited(capture):
    first = capture.rank_for_slot(0, 0)
    assert first.value == 15.0 and first.rank == 0 and first.pid == 100
    assert [e.phase for e in first.events] == ["start", "init_begin", "init_end", "exit"], "a cut line is skipped"
    hung = capture.rank_for_slot(1, 0)
    assert hung.waiting_in == "all_reduce" and hung.waited_s == pytest.approx(6.1)
    never = capture.rank_for_slot(0, 4)
    assert never.rank is None and never.expected_rank == 4 and never.shown_rank == 4


def test_launchers_and_the_run(capture):
    node0, node1 = capture.nodes
    assert node0.exit_code == 1 and node1.exit_code is None, "a launcher killed at the deadline has no exit code"
    assert "--node_rank=1" in node1.command and "--master_port=29500" in node1.command
    assert capture.hit_deadline and capture.world_size == 6 and capture.duration_s == 6.6


def test_an_empty_run_directory_reads_as_nothing_started(tmp_path):
    run_dir = RunDir(tmp_path)
    outcome = LaunchOutcome(t0=T0, end_t=1.0, hit_deadline=False, master_port=1, agent_exits={0: 1, 1: 1},
                            agent_exit_times={0: 1.0, 1: 1.0}, network="host loopback")
    capture = read_capture(PLAN, run_dir, outcome)
    assert {rank.ending for rank in capture.ranks} == {"never_started"}
    assert [node.log for node in capture.nodes] == ["", ""]
