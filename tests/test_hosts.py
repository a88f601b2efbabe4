"""Simulated hosts: namespaces, veth links and firewall rules exist only while their run does."""

import os
import re
import signal
import subprocess

import pytest

from faultlab.lab import netns

from conftest import ROOT, load, run_live, this_host
from test_cleanup import start_faultlab, wait_for_workers, wait_gone

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not this_host().availability(load(ROOT / "scenarios" / "healthy-hosts.yaml")).live,
                       reason="simulated hosts need root and iproute2 (Host says why)"),
]


def faultlab_namespaces() -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listing.splitlines() if line.startswith(netns.NAMESPACE_PREFIX)]


def test_a_host_network_is_evidence(store):
    recording = run_live(load(ROOT / "scenarios" / "firewall-master-port.yaml"), store)
    master = recording.capture.nodes[0].network
    assert "172.31.213.1/24" in master and "tcp dport 29500 drop" in master and "LISTEN" in master
    assert "tcp dport" not in recording.capture.nodes[1].network


def test_twenty_runs_killed_and_interrupted_leave_no_namespace(tmp_path, store):
    healthy = load(ROOT / "scenarios" / "healthy-hosts.yaml")
    for _ in range(18):
        assert run_live(healthy, store).reproduced
        assert not faultlab_namespaces()
    for stop in (signal.SIGKILL, signal.SIGINT):
        process = start_faultlab(tmp_path / "stopped.db", "data-ports-blocked")
        tree = wait_for_workers(process, count=2 + 4)
        assert faultlab_namespaces(), "the run's hosts exist while it runs"
        if stop == signal.SIGKILL:
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGINT)
        process.communicate(timeout=60)
        assert not wait_gone(tree), "processes outlived the run"
    run_live(healthy, store)  # the next run removes what the killed one left
    assert not faultlab_namespaces()
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True, check=True).stdout
    ours = [line.split()[0] for line in links.splitlines() if re.match(r"fl[0-9a-f]{6}h\d+", line)]
    assert not ours, f"a run's veth link survived: {ours}"
