"""Startup at scale: the faults' plan data, the split-world and backlog signatures, and live
runs beyond the scenarios' own (the late node within its timeout; the backlog fix)."""

import dataclasses
import os
import subprocess

import pytest

from faultlab import diagnose, symptoms
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
    assert [node.start_delay_s for node in plan.nodes] == [14.0, 0.0]
    assert plan.deadline_s == healthy.deadline_s + 14.0


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
        dataclasses.replace(scenario.faults[0], params={"somaxconn": 4096, "overflow": "reset"}),))
    recording = run_live(fixed, store)
    found = {symptom.id for symptom in recording.symptoms}
    assert not found & {"store-connect-reset-retry", "store-somaxconn-warning"}, found
    assert recording.comparison.verdict == "healthy", recording.comparison.summary
    assert _root_somaxconn() == before and not _namespaces()
