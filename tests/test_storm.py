"""The join storm: bad input, rendering of a hand-built report, and live cells (bounded)."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from faultlab import storm
from faultlab.reports import storm as storm_report
from faultlab.errors import ExitCode

SOMAXCONN = "/proc/sys/net/core/somaxconn"


def cell(clients, stagger_ms=0.0, ready=0.01, failed=0, store="libuv", slow=0, retries=0):
    return storm.StormCell(store=store, clients=clients, stagger_ms=stagger_ms, wave=8, somaxconn=16,
                           spread_s=(clients - 1) // 8 * stagger_ms / 1000, ready_s=None if failed else ready,
                           ended_s=ready, median_s=ready / 2, p99_s=ready, slow=slow, joined=clients - failed,
                           failed=failed, retries=retries, resets=retries // 2,
                           first_error="DistStoreError: timed out" if failed else None)


def report(*cells):
    return storm.StormReport(cells=cells, network="private <network>", torch_version="2.13.0+cpu",
                             machine="Linux, 2 CPUs", made_at="2026-12-03 08:00 UTC")


@pytest.mark.parametrize("args, named", [
    (["--clients", "8,x"], "--clients"),
    (["--clients", "0"], "--clients"),
    (["--clients", "5000"], "--clients"),
    (["--stagger-ms", "-1"], "--stagger-ms"),
    (["--wave", "0"], "--wave"),
    (["--somaxconn", "0"], "--somaxconn"),
    (["--timeout", "1000"], "--timeout"),
    (["--clients", ",".join(str(n) for n in range(1, 34)), "--stagger-ms", "0,5"], "cells"),
])
def test_bad_storm_options_get_one_line_and_start_nothing(cli, args, named):
    result = cli("storm", *args)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert named in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_storm_help_does_not_import_torch():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom faultlab.cli import main\n"
            "assert CliRunner().invoke(main, ['storm', '--help']).exit_code == 0\n"
            "assert CliRunner().invoke(main, ['storm', '--clients', 'x']).exit_code == 2\n"
            "assert 'torch' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_table_and_text_plot_show_every_cell_and_scale_the_bars():
    made = report(cell(8, ready=0.5), cell(1024, ready=2.0, slow=300, retries=40), cell(1024, 5.0, ready=1.0),
                  cell(64, 5.0, ready=2.0, failed=3))
    table = storm_report.table(made)
    assert "1024" in table and "3 failed" in table and "5 ms / 8" in table
    plot = storm_report.text_plot(made).splitlines()
    bars = [line for line in plot if line.startswith("  1 ") or line.startswith("  2 ")]
    lengths = {line.split()[-1]: line.count("#") for line in bars}
    assert lengths["2.000"] == storm_report.BAR_WIDTH and lengths["0.500"] == storm_report.BAR_WIDTH // 4
    assert any("x" * storm_report.BAR_WIDTH in line for line in plot), "a failed cell is drawn with x"


def test_svg_is_well_formed_escaped_and_has_a_line_per_series():
    made = report(cell(8), cell(64, ready=0.2), cell(8, 5.0), cell(64, 5.0, ready=0.05),
                  cell(8, store="legacy"), cell(64, store="legacy", ready=0.3))
    svg = ElementTree.fromstring(storm_report.svg_plot(made))
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == 3
    page = storm_report.html_report(made)
    assert "private &lt;network&gt;" in page and "<network>" not in page


def test_a_single_client_count_still_plots():
    ElementTree.fromstring(storm_report.svg_plot(report(cell(8), cell(8, 5.0))))


def _root_somaxconn():
    with open(SOMAXCONN) as handle:
        return handle.read()


def _children_named(word):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if word.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.live
def test_live_storm_without_a_small_backlog_everyone_joins(cli):
    result = cli("storm", "--clients", "8,64", "--stagger-ms", "0,2", "--store", "both", "--format", "json")
    assert result.exit_code == 0, result.output
    cells = json.loads(result.output)["cells"]
    assert len(cells) == 8
    assert all(c["joined"] == c["clients"] and c["failed"] == 0 and c["ready_s"] is not None for c in cells)
    assert not _children_named("faultlab.storm_join")


@pytest.mark.live
def test_live_small_backlog_overflows_at_once_and_staggering_avoids_it():
    if os.geteuid() != 0:
        pytest.skip("a small listen backlog needs root to make a private network namespace")
    before = _root_somaxconn()
    options = storm.StormOptions(clients=(128,), stagger_ms=(0.0, 10.0), wave=2, somaxconn=8, timeout_s=20)
    at_once, staggered = storm.measure(options).cells
    # a full accept queue shows as joins held a second for a SYN retransmission, or torch's retries
    assert at_once.slow + at_once.retries > 0, at_once
    assert staggered.slow == 0 and staggered.retries == 0, staggered
    assert at_once.joined == staggered.joined == 128
    assert _root_somaxconn() == before, "the host's own net.core.somaxconn must never change"
    assert not _children_named("faultlab.storm_join")
