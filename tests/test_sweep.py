"""The all_reduce bandwidth sweep without a launch: its program text, its output read back,
pairs judged by their bus bandwidth, and the preflight report of them."""

from pathlib import Path

import pytest

from faultlab import bandwidth
from faultlab.lab.program import render_program
from faultlab.lab.sweep import Point, SweepSettings, parse_bytes, patch, read_sweep

# Rank 0's output of a pair on the practice cluster (gloo over veths, 2 cores, torch 2.13 CPU),
# 2026-12-03, cut to the first sizes and the end.
OUTPUT = """Rank 0: 1.0
# all_reduce bandwidth sweep on gloo: 2 rank(s), float32 sum, 2 warm-up + 5 timed iterations per size, up to 16777216 B or 3.0 s
#     size B     count      time us    algbw GB/s    busbw GB/s
           8         2       842.92        0.0000        0.0000
          16         4       764.81        0.0000        0.0000
     8388608   2097152      7315.23        1.1467        1.1467
# sweep stopped: before 16777216 B: about 0.1 s more would overrun the 3.0 s budget, 0.32 s timed
"""


# Rank 0's stdout on one NVIDIA H200 (torch 2.11.0+cu130, NCCL 2.28.9, driver 580.159.04),
# 2026-12-03: the sweep's program, byte for byte as preflight renders it for nccl (sha256
# checked there), launched by faultlab's local launcher (one node, one rank, a fresh worker).
H200 = Path(__file__).parent / "sweep_outputs" / "h200-nccl-1rank.stdout"


@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_the_sweep_is_python_inserted_before_destroy(backend):
    program = render_program(backend, 5, (patch(SweepSettings(max_bytes=1024, seconds=2.5)),))
    compile(program, "train.py", "exec")
    assert program.index("Rank {rank}: {x.item()}") < program.index("SWEEP_MAX_BYTES, SWEEP_SECONDS = 1024, 2.5") \
        < program.index("dist.destroy_process_group()")
    assert "all_reduce = dist.distributed_c10d.all_reduce" in program


def test_rank_0s_table_is_read_back():
    sweep = read_sweep(OUTPUT, world=2)
    assert [point.bytes for point in sweep.points] == [8, 16, 8388608]
    assert sweep.points[2].seconds == pytest.approx(7315.23e-6)
    assert sweep.peak_busbw == pytest.approx(8388608 / 7315.23e-6 / 1e9)  # 2 ranks: busbw = algbw
    assert sweep.ending.startswith("stopped: before 16777216 B")
    assert read_sweep("Rank 0: 1.0\n", world=2) is None


def test_one_rank_on_nccl_reads_back_with_no_bus_bandwidth():
    sweep = read_sweep(H200.read_text(), world=1)
    assert len(sweep.points) == 24 and sweep.points[-1].bytes == 64 * 2 ** 20 and sweep.ending.startswith("done")
    assert sweep.peak_busbw == 0.0  # one rank crosses no link
    assert all(point.seconds < 1e-4 for point in sweep.points)  # NCCL moves no data for one in-place rank


def test_busbw_follows_nccl_tests():
    point = Point(bytes=1_000_000, seconds=0.001)
    assert point.algbw() == pytest.approx(1.0)
    assert point.busbw(8) == pytest.approx(1.75) and point.busbw(2) == pytest.approx(1.0)
    assert point.busbw(1) == 0.0


@pytest.mark.parametrize("text, size", [("65536", 65536), ("64K", 65536), ("64M", 64 * 2 ** 20), ("1GiB", 2 ** 30),
                                        ("8", 8), ("big", None), ("-1", None), ("1.5M", None)])
def test_sizes(text, size):
    assert parse_bytes(text) == size


def test_three_nodes_one_slow_node():
    """Two of the three pairs hold n2: the median of each node's best pair is still the fast one."""
    judged = bandwidth.judge(("n1", "n2", "n3"), {("n1", "n2"): 0.02, ("n1", "n3"): 0.8, ("n2", "n3"): 0.017})
    assert judged.slow_nodes == ("n2",) and judged.slow_links == ()
    assert judged.reference == pytest.approx(0.8)
    assert set(judged.slow_groups) == {("n1", "n2"), ("n2", "n3")}


def test_a_slow_link_between_good_nodes():
    pairs = {("a", "b"): 1.0, ("a", "c"): 0.3, ("a", "d"): 0.9, ("b", "c"): 1.1, ("b", "d"): 1.0, ("c", "d"): 0.95}
    judged = bandwidth.judge(("a", "b", "c", "d"), pairs)
    assert judged.slow_nodes == () and judged.slow_links == (("a", "c"),)


def test_spread_within_the_threshold_flags_nothing():
    judged = bandwidth.judge(("a", "b", "c"), {("a", "b"): 0.77, ("a", "c"): 0.97, ("b", "c"): 0.9})
    assert judged.slow_groups == () and judged.slow_nodes == ()


def test_one_pair_is_not_compared():
    assert bandwidth.judge(("a", "b"), {("a", "b"): 0.01}) == bandwidth.Judgement(None, (), (), ())


@pytest.mark.parametrize("args, line", [
    (["--sweep-max-bytes", "lots"], "--sweep-max-bytes: 'lots' is not a size of at least 8 bytes"),
    (["--sweep-max-bytes", "4"], "--sweep-max-bytes: '4' is not a size of at least 8 bytes"),
    (["--jobid", "12a"], "--jobid: '12a' is not a SLURM job id"),
    (["--local", "--partition", "debug"], "--local checks this host alone"),
    (["--local", "--nodes", "2"], "--local checks this host alone"),
    (["--nodes", "1"], "--nodes 1: preflight needs at least 2 nodes"),
])
def test_bad_preflight_options_are_one_line(cli, args, line):
    result = cli("preflight", *args)
    assert result.exit_code == 2 and line in result.output and "Traceback" not in result.output


@pytest.mark.live
def test_local_preflight_sweeps_on_this_host(cli):
    """Two ranks under torch's launcher on this host (gloo without GPUs): the sweep reads back."""
    import json

    result = cli("preflight", "--local", "--ranks-per-node", 2, "--sweep-max-bytes", "64K", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["healthy"] and report["allocation"] is None
    sweep = report["checks"][0]["sweep"]
    assert sweep["ranks"] == 2 and [point["bytes"] for point in sweep["points"]][-1] == 65536
    assert all(point["busbw_gbps"] == pytest.approx(point["algbw_gbps"]) for point in sweep["points"])  # 2 ranks
    assert report["checks"][0]["recording"].startswith("baseline-1x2-sweep.")
