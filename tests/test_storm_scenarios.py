"""Startup at scale: the faults' plan data, the split-world, backlog and shared-port signatures,
and live runs beyond the scenarios' own (the late node within its timeout; the backlog fix; two
jobs on one port with an --rdzv_id each)."""

import dataclasses
import os
import subprocess

import pytest

from faultlab import diagnose, recording_files, symptoms
from faultlab.lab.plan import build_plan

from conftest import ROOT, load, run_live

SCENARIOS = ROOT / "scenarios"
RESET_LINE = ("[W1203 08:39:06.744143151 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
              "172.31.213.1:29500 - retrying (try=0, timeout=20000ms, delay=627ms): Connection reset by peer")
SOMAXCONN_LINE = ("[W1203 08:39:04.199328412 TCPStore.cpp:294] [c10d] Starting store with 2 workers but somaxconn "
                  "is 1.This might cause instability during bootstrap, consider increasing it.")
CLIENTS_LINE = ("torch.distributed.DistStoreError: Timed out after 6 seconds waiting for clients. "
                "1/2 clients joined.")


def test_late_start_delays_only_that_node_and_extends_the_deadline():
    scenario = load(SCENARIOS / "late-store-host.yaml")
    plan, healthy = build_plan(scenario, "gloo"), build_plan(scenario, "gloo", healthy=True)
    assert [node.start_delay_s for node in plan.nodes] == [26.0, 0.0]
    assert plan.deadline_s == healthy.deadline_s + 26.0


def test_node_lost_is_plan_data_and_the_step_is_in_the_program():
    plan = build_plan(load(SCENARIOS / "store-host-lost.yaml"), "gloo")
    assert plan.node_losses == ((0, 1.0),)
    assert "time.sleep(4.0)  # the training step's forward and backward" in plan.program


def test_listen_backlog_sets_per_namespace_settings_on_the_store_host_only():
    plan = build_plan(load(SCENARIOS / "listen-backlog-overflow.yaml"), "gloo")
    assert plan.host_sysctls == ((0, "net.core.somaxconn", "1"), (0, "net.ipv4.tcp_abort_on_overflow", "1"))
    assert not build_plan(load(SCENARIOS / "listen-backlog-overflow.yaml"), "gloo", healthy=True).host_sysctls


def test_own_master_makes_the_node_host_a_store_of_its_own():
    plan = build_plan(load(SCENARIOS / "split-world.yaml"), "gloo")
    node = plan.nodes[1]
    assert node.node_rank == 0 and plan.master_addr(node) == "127.0.0.1"
    assert "--node_rank=0 --master_addr=127.0.0.1" in plan.command_line(node, 29500)


ASSIGNMENT_LINE = ("torch.distributed.DistStoreError: wait timeout after 5000ms, keys: "
                   "/job2/torchelastic/assigned_ranks/1")


def test_another_job_is_plan_data_on_the_same_hosts_and_port_started_earlier():
    scenario = load(SCENARIOS / "shared-master-port.yaml")
    plan, healthy = build_plan(scenario, "gloo"), build_plan(scenario, "gloo", healthy=True)
    assert [(node.job, node.host, node.node_rank, node.start_delay_s) for node in plan.nodes] == [
        (0, 0, 0, 2.0), (0, 1, 1, 2.0), (1, 0, 0, 0.0), (1, 1, 1, 0.0)]
    assert plan.world_size == healthy.world_size == 2 and plan.host_count == 2
    assert {plan.master_addr(node) for node in plan.nodes} == {"172.31.213.1"}
    assert plan.store_host(plan.nodes[1]) is plan.nodes[2]  # the other job's node 0 binds the port first
    assert plan.command_line(plan.nodes[2], 29500).startswith("[host 172.31.213.1] [another job] ")
    assert "--rdzv_id" not in plan.command_line(plan.nodes[0], 29500)  # torchrun's default id, as both jobs
    per_job = dataclasses.replace(scenario, faults=(
        dataclasses.replace(scenario.faults[0], params={**scenario.faults[0].params, "rdzv_id": "per-job"}),))
    assert [node.rdzv_id for node in build_plan(per_job, "gloo").nodes] == ["job2", "job2", "job1", "job1"]
    assert len(healthy.nodes) == 2


def _recorded_logs(recording, directory, nodes):
    """The recording's logs of the given nodes, laid out as a run directory."""
    (directory / "ranks").mkdir(parents=True)
    for node in recording.capture.nodes:
        if node.node in nodes:
            (directory / f"node{node.node}.launcher.log").write_text(node.log)
    for rank in recording.capture.ranks:
        if rank.node in nodes and rank.stderr:
            (directory / "ranks" / f"node{rank.node}-local{rank.local_rank}.stderr").write_text(rank.stderr)


def test_diagnose_reads_a_bind_error_beside_a_rank_that_got_in_as_two_jobs_on_one_port(tmp_path):
    run, _ = recording_files.read(ROOT / "recordings" / "shared-master-port.cpu.json")
    _recorded_logs(run, tmp_path / "job", {0, 1})
    both = diagnose.diagnose([tmp_path / "job"])
    assert both.causes[0].cause == "shared-master-port", both.causes
    _recorded_logs(run, tmp_path / "node0", {0})  # the bind error alone: a stale holder is as likely
    assert diagnose.diagnose([tmp_path / "node0"]).causes[0].cause == "port-in-use"


def test_a_launcher_waiting_for_its_rank_assignment_reads_as_a_shared_port(tmp_path):
    assert "rank-assignment-timeout" in symptoms.match_text(ASSIGNMENT_LINE)
    (tmp_path / "node0.log").write_text("torch.distributed.DistNetworkError: The server socket has failed to listen "
                                        "on any local network address. port: 29500, useIpv6: false, code: -98, "
                                        "name: EADDRINUSE, message: address already in use\n")
    (tmp_path / "node1.log").write_text(ASSIGNMENT_LINE + "\n")
    assert diagnose.diagnose([tmp_path]).causes[0].cause == "shared-master-port"


def test_only_known_per_namespace_settings_are_ever_written():
    from faultlab.errors import EnvironmentProblem
    from faultlab.lab.netns import SimulatedHosts

    hosts = SimulatedHosts("test", 1)
    with pytest.raises(EnvironmentProblem, match="kernel.panic is not a per-namespace setting"):
        hosts.apply_sysctls([(0, "kernel.panic", "1")])


@pytest.mark.parametrize("nodes, split", [((0,), False), ((0, 1), True)])
def test_clients_joined_means_a_split_world_only_on_two_nodes(nodes, split):
    from faultlab.records import Capture, NodeCapture

    template = NodeCapture(node=0, node_rank=0, nnodes=2, nproc_per_node=2, master_port=29500, command="torchrun",
                           log=CLIENTS_LINE, exit_code=1, env={})
    launchers = tuple(dataclasses.replace(template, node=node) for node in nodes)
    silent = tuple(dataclasses.replace(template, node=node, log="") for node in range(2) if node not in nodes)
    capture = Capture(backend="gloo", world_size=4, timeout_s=5, deadline_s=20, hit_deadline=False, duration_s=12,
                      network="simulated hosts", program="", ranks=(), nodes=launchers + silent)
    found = {(s.id, s.node) for s in symptoms.match_capture(capture)}
    assert {("rendezvous-clients-timeout", node) for node in nodes} <= found
    assert any(signature == "split-world" for signature, _ in found) == split


def test_diagnose_reads_clients_joined_in_two_node_logs_as_a_split_world(tmp_path):
    (tmp_path / "node0.log").write_text(CLIENTS_LINE + "\n")
    one = diagnose.diagnose([tmp_path])
    assert "split-world" not in {item.signature for item in one.evidence}
    (tmp_path / "node1.log").write_text(CLIENTS_LINE + "\n")
    both = diagnose.diagnose([tmp_path])
    assert both.causes[0].cause == "split-world", both.causes


def test_diagnose_reads_backlog_resets_and_the_somaxconn_warning(tmp_path):
    (tmp_path / "node0.launcher.log").write_text(SOMAXCONN_LINE + "\n")
    (tmp_path / "rank5.log").write_text(RESET_LINE + "\n")
    found = diagnose.diagnose([tmp_path])
    assert found.causes[0].cause == "listen-backlog-overflow", found.causes
    assert {"store-somaxconn-warning", "store-connect-reset-retry"} <= {item.signature for item in found.evidence}


@pytest.mark.parametrize("line, signature", [
    ("use_libuv was requested but PyTorch was built without libuv support, run with USE_LIBUV=0 to disable it.",
     "libuv-store-unavailable"),
    ("[E1203 09:00:00.1 TCPStoreLibUvBackend.cpp:123] [c10d] Failed to accept client due to too many open files",
     "libuv-store-server-error"),
    ("[E1203 09:00:00.1 TCPStoreBackend.cpp:456] [c10d] TCPStoreMasterDaemon::run() failed with exception: x",
     "legacy-store-server-error"),
])
def test_libuv_and_legacy_wordings_are_told_apart(line, signature):
    assert set(symptoms.match_text(line)) & {"libuv-store-unavailable", "libuv-store-server-error",
                                             "legacy-store-server-error"} == {signature}


def _namespaces():
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {line.split()[0] for line in done.stdout.splitlines() if line.startswith(f"fl-{os.getpid()}-")}


def _root_somaxconn():
    with open("/proc/sys/net/core/somaxconn") as handle:
        return handle.read()


@pytest.mark.live
def test_a_late_store_host_within_the_timeout_only_looks_slow(store):
    scenario = load(SCENARIOS / "late-store-host.yaml")
    late = dataclasses.replace(scenario, timeout_s=8.0, deadline_s=25.0, faults=(
        dataclasses.replace(scenario.faults[0], params={"seconds": 3.0}),))
    recording = run_live(late, store)
    assert recording.comparison.verdict == "healthy", recording.comparison.summary
    assert all(any(how.startswith("started ") and "later than in the baseline" in how for how in delta.how)
               for delta in recording.comparison.deltas)


@pytest.mark.live
def test_raising_the_backlog_fixes_the_overflow_and_leaves_nothing_behind(store):
    scenario = load(SCENARIOS / "listen-backlog-overflow.yaml")
    before = _root_somaxconn()
    fixed = dataclasses.replace(scenario, faults=(
        dataclasses.replace(scenario.faults[0], params={"somaxconn": 4096, "overflow": "reset"}),),
        expect=dataclasses.replace(scenario.expect, attempts=1))  # healthy is its outcome: once is enough
    recording = run_live(fixed, store)
    found = {symptom.id for symptom in recording.symptoms}
    assert not found & {"store-connect-reset-retry", "store-somaxconn-warning"}, found
    assert recording.comparison.verdict == "healthy", recording.comparison.summary
    assert _root_somaxconn() == before and not _namespaces()


@pytest.mark.live
def test_two_jobs_with_an_rdzv_id_each_wait_for_ranks_that_never_come_and_leave_nothing_behind(store):
    """With --rdzv_id per job the keys no longer collide: node 1 waits at the other job's store
    for its own rank assignment, and the other job, untouched, finishes."""
    scenario = load(SCENARIOS / "shared-master-port.yaml")
    per_job = dataclasses.replace(scenario, faults=(dataclasses.replace(
        scenario.faults[0], params={**scenario.faults[0].params, "rdzv_id": "per-job", "step_s": 8.0}),))
    recording = run_live(per_job, store)
    found = {(symptom.id, symptom.node) for symptom in recording.symptoms}
    assert {("address-in-use", 0), ("rank-assignment-timeout", 1)} <= found, found
    assert "/job2/torchelastic/assigned_ranks/1" in recording.capture.nodes[1].log
    other_job = [rank for rank in recording.capture.ranks if rank.node >= 2]
    assert [(rank.exit_code, rank.value) for rank in other_job] == [(0, 1.0), (0, 1.0)]
    assert not [rank for rank in recording.capture.ranks if rank.node < 2 and rank.start_t is not None]
    assert not _namespaces()
