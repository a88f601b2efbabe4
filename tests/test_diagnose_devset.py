"""Diagnose on real public failure logs whose cause their threads established."""

import pytest

from faultlab import triage_accuracy
from faultlab.errors import BadInput, ExitCode

from conftest import ROOT

DEVSET = ROOT / "tests" / "diagnose_devset"


SETS = ["cases.yaml", "cases-2.yaml", "heldout.yaml", "heldout-2.yaml", "heldout-3.yaml", "heldout-4.yaml"]


@pytest.mark.parametrize("name", SETS)
def test_every_case_is_sourced_and_readable(name):
    cases = triage_accuracy.load_cases(DEVSET / name)
    for case in cases:
        assert case.source.startswith("https://"), case
        assert case.established.strip(), case
        assert case.log.stat().st_size > 0, case


def test_development_set_accuracy():
    cases = [case for name in SETS for case in triage_accuracy.load_cases(DEVSET / name)]
    accuracy = triage_accuracy.evaluate(cases)
    assert len(cases) >= 30 and len(accuracy.causes) >= 8
    misses = [(r.case.log.name, r.case.cause, r.ranked[:3]) for r in accuracy.results if r.position != 1]
    assert accuracy.top(1) >= 0.85, misses
    assert accuracy.top(3) >= 0.95, misses
    culprits_named, culprit_cases = accuracy.culprit("rank")
    assert culprit_cases >= 5 and culprits_named / culprit_cases >= 0.8
    unknown_right, unknown_cases = accuracy.unknown
    assert unknown_cases >= 10 and unknown_right / unknown_cases >= 0.75


def test_live_runs_name_their_culprit_node():
    """faultlab's own live runs: the only cases that name a node (see the header of live-runs.yaml)."""
    accuracy = triage_accuracy.evaluate(triage_accuracy.load_cases(DEVSET / "live-runs.yaml"))
    assert accuracy.top(1) == 1.0 and accuracy.culprit("node") == (1, 1)


def test_a_bad_case_file_is_one_clear_error(tmp_path, cli):
    (tmp_path / "job.log").write_text("RuntimeError: Address already in use\n")
    cases = tmp_path / "cases.yaml"
    cases.write_text("- {log: job.log, source: https://example.invalid/1, cause: gremlins, established: x}\n")
    with pytest.raises(BadInput, match="case 1: unknown cause 'gremlins'"):
        triage_accuracy.load_cases(cases)
    cases.write_text("- {log: nowhere.log, source: s, cause: port-in-use, established: x}\n")
    result = cli("diagnose-accuracy", cases)
    assert result.exit_code == ExitCode.BAD_INPUT and "nowhere.log: no such file or directory" in result.output
    cases.write_text("- {log: job.log, source: s, cause: port-in-use, established: x}\n")
    result = cli("diagnose-accuracy", cases, "--json")
    assert result.exit_code == 0 and '"top1": 1.0' in result.output
