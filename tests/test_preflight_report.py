"""The preflight report from hand-built results (no launch): the bandwidth table's columns and
the verdicts it draws from the checks and the sweeps."""

from types import SimpleNamespace

from faultlab import bandwidth
from faultlab.lab.sweep import Point, Sweep
from faultlab.reports.preflight import preflight_report
from faultlab.slurm.preflight import Check, Preflight

SIZES = [8 * 2 ** step for step in range(11)]  # 8 B .. 8 KiB


def _check(nodes, gbps, healthy=True):
    recording = SimpleNamespace(id=f"preflight-{'-'.join(nodes)}", reproduced=healthy,
                                capture=SimpleNamespace(duration_s=3.0))
    # busbw = algbw for two ranks: each size moves at `gbps`.
    sweep = Sweep(2, tuple(Point(size, size / (gbps * 1e9)) for size in SIZES), "done: every size up to 8192 B")
    return Check(nodes, recording, {"init": 1.0, "all_reduce": 0.1, "destroy": 0.2}, "" if healthy else "why", sweep)


def test_a_node_whose_every_pair_is_slow_is_named_and_every_fourth_size_is_a_column():
    nodes = ("n1", "n2", "n3")
    checks = (_check(("n1", "n2"), 0.03), _check(("n1", "n3"), 0.95), _check(("n2", "n3"), 0.02))
    judgement = bandwidth.judge(nodes, {check.nodes: check.sweep.peak_busbw for check in checks})
    report = preflight_report(Preflight(nodes, 1, "gloo", checks, (), (), judgement))
    assert "Verdict: healthy: every check passed." in report
    assert "slow node(s): n2" in report
    table = report[report.index("busbw GB/s by message size"):]
    header = next(line for line in table.splitlines() if line.startswith("nodes"))
    assert header.split()[1:] == ["8", "B", "128", "B", "2", "KiB", "8", "KiB"]


def test_a_node_whose_every_pair_failed_is_the_bad_node():
    nodes = ("n1", "n2", "n3")
    checks = (_check(("n1", "n2"), 0.9, healthy=False), _check(("n1", "n3"), 0.9), _check(("n2", "n3"), 0.9, healthy=False))
    report = preflight_report(Preflight(nodes, 1, "gloo", checks, ("n2",), ()))
    assert "Verdict: bad node(s): n2" in report and "n1, n2: why" in report
