"""Flight Recorder dumps: the restricted unpickler, the portable record, the cross-rank analysis."""

import dataclasses
import os
import pickle

import pytest
from conftest import ROOT
from flight_recorder_dumps import gloo_dump, write_dumps

from faultlab import diagnose, recording_files, serial
from faultlab.errors import BadInput
from faultlab.flight_recorder.analysis import analyse
from faultlab.flight_recorder.dumps import load_dump, parse_dump, torch_form, unpickle_plain
from faultlab.flight_recorder.evidence import evidence_from_dumps
from faultlab.flight_recorder.records import FlightRecorderCapture, MissingDump, TorchAnalyzerRun
from faultlab.flight_recorder.torch_analyzer import _torch_verdict, agreement
from faultlab.flight_recorder.view import render_view


def capture_of(dumps: dict[int, dict], world: int, missing=()) -> FlightRecorderCapture:
    parsed = tuple(parse_dump(raw, rank, "error", f"rank{rank}", "test") for rank, raw in sorted(dumps.items()))
    return FlightRecorderCapture(100, world, parsed, tuple(MissingDump(rank, why) for rank, why in missing))


class ShellOut:
    """A pickle that, loaded with pickle.load, would run a shell command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_crafted_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    dump = tmp_path / "nccl_trace_rank_0"
    dump.write_bytes(pickle.dumps({"version": "2.10", "entries": [ShellOut(marker)]}))
    with pytest.raises(BadInput) as raised:
        load_dump(dump)
    message = str(raised.value)
    assert message.startswith(f"{dump}: not a Flight Recorder dump:") and "system" in message
    assert "\n" not in message
    assert not marker.exists()


@pytest.mark.parametrize("data, why", [
    (pickle.dumps(ValueError("x")), "builtins.ValueError"),
    (b"\x80\x04\x95", "pickle data was truncated"),
    (pickle.dumps([1, 2]), "no 'entries' and 'version'"),
    (pickle.dumps({"version": "2.10", "entries": [{"collective_seq_id": "two"}]}), "collective_seq_id"),
])
def test_malformed_dumps_name_the_file_and_the_problem(tmp_path, data, why):
    dump = tmp_path / "fr_3"
    dump.write_bytes(data)
    with pytest.raises(BadInput, match=why) as raised:
        load_dump(dump)
    assert str(raised.value).startswith(str(dump))


def test_plain_data_with_tuples_and_sets_is_accepted():
    assert unpickle_plain(pickle.dumps({"a": (1, "b"), "c": [None, 2.5, b"x"]}), "here") == {
        "a": (1, "b"), "c": [None, 2.5, b"x"]}


def test_a_dump_becomes_a_portable_record_and_back(tmp_path):
    write_dumps(tmp_path, {1: gloo_dump(3, ["all_reduce", "broadcast"], 1)})
    dump = load_dump(tmp_path / "nccl_trace_rank_1")
    assert dump.rank == 1 and dump.groups[0].ranks == (0, 1, 2)
    assert [(e.seq_id, e.op, e.retired) for e in dump.entries] == [(1, "gloo:all_reduce", True),
                                                                    (2, "gloo:broadcast", False)]
    assert dump.entries[1].where == "train.py:12"
    capture = FlightRecorderCapture(100, 3, (dump,), (MissingDump(0, "no dump file"),))
    assert serial.from_dict(FlightRecorderCapture, serial.to_dict(capture)) == capture


def test_torch_form_keys_gloos_default_group_by_the_name_its_entries_use():
    dump = parse_dump(gloo_dump(2, ["all_reduce"], 1), 0, "exit", "r0", "test")
    raw, changes = torch_form(dump)
    assert list(raw["pg_config"]) == ["0"] and raw["pg_config"]["0"]["desc"] == "default_pg"
    assert changes == ["rank 0: pg_config key '' -> '0' (desc 'default_pg'), as its entries name it"]


def test_a_rank_that_never_issued_the_collective_is_the_culprit():
    capture = capture_of({0: gloo_dump(3, ["all_reduce"] * 2, 1), 1: gloo_dump(3, ["all_reduce"] * 2, 1),
                          2: gloo_dump(3, ["all_reduce"], 1)}, 3)
    analysis = analyse(capture)
    assert (analysis.divergence_seq, analysis.divergence_op, analysis.culprits) == (2, "all_reduce", (2,))
    assert analysis.findings[0].kind == "not-joined" and analysis.findings[0].ranks == (2,)
    assert "outside any collective" in analysis.reason
    view = render_view(capture, analysis)
    assert "*2:all_reduce" in view and "Culprit from the recorder: rank 2" in view


def test_the_view_shows_foreign_text_inert():
    """A bundle's recording carries torch's analyzer run as text someone else wrote: its control characters
    are shown, never sent to a terminal or a runbook page."""
    capture = capture_of({0: gloo_dump(2, ["all_reduce"], 1), 1: gloo_dump(2, ["all_reduce"], 1)}, 2)
    capture = dataclasses.replace(capture, torch_analyzer=TorchAnalyzerRun(
        "\x1b]0;pwned\x07", 0, "ok\x1b[2J", ("rank 0: \x1b[31m",)))
    view = render_view(capture, analyse(capture))
    assert "\x1b" not in view and "\x07" not in view and "^[]0;pwned^G" in view


def test_a_rank_without_a_dump_holding_up_the_others_is_the_culprit():
    waiting = gloo_dump(4, ["all_reduce"] * 2, 1)
    capture = capture_of({0: waiting, 1: waiting, 3: waiting}, 4, missing=[(2, "stopped (SIGSTOP)")])
    analysis = analyse(capture)
    assert (analysis.divergence_seq, analysis.culprits) == (2, (2,))
    assert [f.kind for f in analysis.findings] == ["no-dump"]
    assert "stopped (SIGSTOP)" in analysis.reason
    assert "no dump (stopped (SIGSTOP))" in render_view(capture, analysis)


def test_a_rank_that_issued_an_extra_collective_is_the_culprit():
    done = gloo_dump(4, ["all_reduce"] * 2, 2)
    capture = capture_of({0: gloo_dump(4, ["all_reduce"] * 3, 2), 1: done, 2: done, 3: done}, 4)
    analysis = analyse(capture)
    assert (analysis.divergence_seq, analysis.culprits) == (3, (0,))
    assert "extra collective" in analysis.reason


def test_the_rank_issuing_another_op_at_the_same_seq_is_the_culprit():
    ordered, swapped = ["all_reduce", "broadcast"], ["broadcast", "all_reduce"]
    capture = capture_of({0: gloo_dump(3, ordered, 0), 1: gloo_dump(3, swapped, 0), 2: gloo_dump(3, ordered, 0)}, 3)
    analysis = analyse(capture)
    assert (analysis.divergence_seq, analysis.culprits) == (1, (1,))
    assert analysis.findings[0].kind == "op-mismatch"


def test_a_size_mismatch_names_the_odd_rank():
    capture = capture_of({r: gloo_dump(3, ["all_reduce"], 0, sizes=[8 if r == 2 else 1]) for r in range(3)}, 3)
    analysis = analyse(capture)
    assert analysis.findings[0].kind == "size-mismatch" and analysis.culprits == (2,)


def test_two_ranks_split_one_against_one_name_no_culprit():
    capture = capture_of({0: gloo_dump(2, ["all_reduce"] * 2, 1), 1: gloo_dump(2, ["all_reduce"], 1)}, 2)
    analysis = analyse(capture)
    assert analysis.divergence_seq == 2 and analysis.culprits == ()
    assert "cannot tell" in analysis.reason


def test_healthy_dumps_show_no_divergence():
    capture = capture_of({r: gloo_dump(2, ["all_reduce"], 1) for r in range(2)}, 2)
    analysis = analyse(capture)
    assert analysis.divergence_seq is None and analysis.culprits == () and analysis.findings == ()
    assert "no reduce op" in analysis.reason


def test_empty_dumps_say_the_job_stopped_before_its_first_collective():
    # Measured with NCCL on an H200: ranks failing or stuck in communicator creation dump
    # an empty buffer (no group, no entry).
    empty = {"version": "2.10", "comm_lib_version": "2.28.9", "pg_config": {}, "pg_status": {}, "entries": []}
    analysis = analyse(capture_of({0: empty, 1: empty}, 2))
    assert analysis.culprits == () and "before its first" in analysis.reason
    assert "before its first" in render_view(capture_of({0: empty, 1: empty}, 2), analysis)


def test_the_dump_is_taken_from_the_recorder_that_recorded_collectives(monkeypatch):
    # A torch built with NCCL has two recorders; gloo's collectives are only in _dump_fr_trace's.
    import sys
    import types

    from faultlab.flight_recorder import dumper

    recorded = pickle.dumps(gloo_dump(2, ["all_reduce"], 1))
    empty = pickle.dumps({"entries": []})
    c10d = types.SimpleNamespace(_dump_nccl_trace=lambda **_: empty, _dump_fr_trace=lambda **_: recorded)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(_C=types.SimpleNamespace(_distributed_c10d=c10d)))
    assert dumper._dump_bytes() == recorded
    c10d._dump_fr_trace = lambda **_: empty
    assert dumper._dump_bytes() == empty


def test_evidence_from_a_directory_of_dumps_and_error_files(tmp_path):
    write_dumps(tmp_path / "dumps", {0: gloo_dump(3, ["all_reduce"] * 2, 1), 1: gloo_dump(3, ["all_reduce"] * 2, 1)})
    error = tmp_path / "attempt_0" / "rank_1" / "error.json"
    error.parent.mkdir(parents=True)
    error.write_text('{"message": {"message": "RuntimeError: Timed out waiting 5000ms for recv operation",'
                     ' "extraInfo": {"py_callstack": "...", "timestamp": "1796284666"}}}')
    (tmp_path / "rank0.log").write_text("RuntimeError: Timed out\n")
    evidence = evidence_from_dumps([tmp_path])
    assert [d.rank for d in evidence.capture.dumps] == [0, 1]
    assert evidence.capture.missing == (MissingDump(2, "no dump file"),)
    assert evidence.analysis.culprits == (2,)
    assert evidence.error_files[0].rank == 1 and evidence.error_files[0].message.startswith("RuntimeError: Timed out")
    assert str(tmp_path / "rank0.log") not in evidence.used
    assert evidence.causes[0][0] == "frozen-rank"


def test_an_error_files_rank_is_read_below_the_inputs_only(tmp_path):
    """As a log's: a directory above what was given ('case_rank_3') names no rank."""
    error = tmp_path / "case_rank_3" / "attempt_0" / "0" / "error.json"
    error.parent.mkdir(parents=True)
    error.write_text('{"message": "RuntimeError: boom"}')
    assert evidence_from_dumps([tmp_path / "case_rank_3"]).error_files[0].rank is None
    assert evidence_from_dumps([tmp_path]).error_files[0].rank == 3  # given the parent, the case is a rank


def test_torch_verdicts_are_read_and_compared():
    capture = capture_of({0: gloo_dump(3, ["all_reduce"] * 2, 1), 1: gloo_dump(3, ["all_reduce"] * 2, 1),
                          2: gloo_dump(3, ["all_reduce"], 1)}, 3)
    analysis = analyse(capture)
    output = "Not all ranks joining collective, sequence number: 2\nmissing ranks: {2}\n"
    assert _torch_verdict(output) == (2, (2,), "missing")
    from faultlab.flight_recorder.records import TorchAnalyzerRun

    said = agreement(analysis, TorchAnalyzerRun("fr_trace", 0, output, ()))
    assert said == "agree on the sequence id (#2); agree on the rank(s): [2]"
    assert "could not read" in agreement(analysis, TorchAnalyzerRun("fr_trace", 1, "KeyError: ('0', 2)", ()))


def test_a_runs_dump_files_become_a_capture_with_reasons_for_the_missing(tmp_path):
    from faultlab.flight_recorder.run_dumps import RankDumpFile, read_run_dumps

    write_dumps(tmp_path, {0: gloo_dump(4, ["all_reduce"] * 2, 1), 3: gloo_dump(4, ["all_reduce"] * 2, 1)}, "r")
    (tmp_path / "r1").write_bytes(b"not a pickle")
    files = [
        RankDumpFile(0, tmp_path / "r0", "deadline", "killed_at_deadline", -9, "S"),
        RankDumpFile(1, tmp_path / "r1", "error", "exited", 1, None),
        RankDumpFile(2, tmp_path / "r2", None, "killed_at_deadline", -9, "T"),
        RankDumpFile(3, tmp_path / "r3", None, "torn_down", -15, None),
    ]
    capture = read_run_dumps(files, 2000, 5)
    assert [(d.rank, d.trigger) for d in capture.dumps] == [(0, "deadline"), (3, "terminated")]
    reasons = {m.rank: m.reason for m in capture.missing}
    assert reasons[1].startswith("unreadable dump:") and reasons[2] == "stopped (state T): could not answer"
    assert reasons[4] == "never started"
    assert analyse(capture).culprits == (1, 2, 4)


def test_diagnose_reads_a_directory_of_dumps_alone(tmp_path, cli):
    waiting = gloo_dump(4, ["all_reduce"] * 2, 2)
    write_dumps(tmp_path, {0: waiting, 1: waiting, 3: waiting})
    result = cli("diagnose", tmp_path)
    assert result.exit_code == 0, result.output
    assert "Culprit: rank 2 (Flight Recorder: ranks 0, 1, 3 stood in #2 (all_reduce)" in result.output
    assert "1. frozen-rank" in result.output


def test_diagnose_refuses_a_crafted_dump_in_one_line(tmp_path, cli):
    marker = tmp_path / "ran"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "nccl_trace_rank_0").write_bytes(pickle.dumps(ShellOut(marker)))
    result = cli("diagnose", tmp_path / "logs")
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "not a Flight Recorder dump" in result.output
    assert not marker.exists()


def test_a_drill_offers_the_flight_recorder_at_its_cost(db):
    from click.testing import CliRunner

    from faultlab import score
    from faultlab.cli import main
    from faultlab.store import Store

    keys = "fr\nanswer\nfrozen-rank\nrank 2\n2\nfind what stopped rank 2's process and restart\n"
    result = CliRunner().invoke(main, ["--db", str(db), "drill", "frozen-rank", "--replay", "--trainee", "ida"],
                                input=keys, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"-{score.COSTS['fr']}" in result.output
    assert "no dump (stopped (state T): could not answer)" in result.output
    assert "Culprit from the recorder: rank 2" in result.output
    with Store(db) as store:
        (drill,) = store.drills(trainee="ida")
        assert drill.used == {"fr": 1}


def test_gloo_counting_a_timed_out_collective_as_completed_still_points_at_the_silent_rank():
    """Measured on gloo: ranks that timed out in #2 may dump with #2 'completed'."""
    timed_out = gloo_dump(4, ["all_reduce"] * 2, 2)
    capture = capture_of({0: timed_out, 1: timed_out, 3: timed_out}, 4, missing=[(2, "stopped (state T)")])
    analysis = analyse(capture)
    assert (analysis.divergence_seq, analysis.culprits) == (2, (2,))
    healthy_but_lost = FlightRecorderCapture(100, 2, tuple(
        parse_dump(gloo_dump(2, ["all_reduce"], 1), 0, "exit", "r0", "t") for _ in range(1)), (MissingDump(1, "x"),))
    assert analyse(healthy_but_lost).culprits == ()  # every rank that dumped finished: nothing held up


def test_a_damaged_dump_among_logs_is_noted_and_skipped(tmp_path):
    """Found by fuzzing: a file starting with the pickle header but cut short is not a dump to
    refuse the whole triage for; a crafted one (naming code) still is."""
    from click.testing import CliRunner

    from faultlab.cli import main

    (tmp_path / "rank_0").write_bytes(b"\x80")
    (tmp_path / "train.log").write_text("[rank0]: RuntimeError: boom\n")
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "none.db"), "diagnose", str(tmp_path)])
    assert result.exit_code in (0, 1), result.output
    assert "rank_0: not a Flight Recorder dump" in result.output


# torch's analyzer's own reports, from the shipped recordings of faultlab's live runs (torch 2.13, gloo): the
# report pasted as a log, alone, is read for its cause and the rank it names.
@pytest.mark.parametrize("recording, first, culprit", [
    ("shape-mismatch", "collective-mismatch", 1),  # "Culprit rank 1; Error type: SIZE_OR_SYNTAX_MISMATCH"
    ("collective-order", "collective-mismatch", 1),  # COLLECTIVE_TYPE_MISMATCH
    ("extra-collective", "collective-mismatch", 0),  # every rank but 0 missing from collective 3: 0 issued it alone
    ("frozen-rank", "frozen-rank", 2),  # "we missed FR dumps from ranks ({2})"
    ("straggler-collective", None, None),  # "missing ranks: {0}": behind, or called something else: no culprit
])
def test_torchs_analyzer_report_pasted_as_a_log_is_read(tmp_path, recording, first, culprit):
    run, _ = recording_files.read(ROOT / "recordings" / f"{recording}.cpu.json")
    (tmp_path / "report.log").write_text(run.capture.flight_recorder.torch_analyzer.output + "\n")
    found = diagnose.diagnose([tmp_path / "report.log"])
    causes = [cause.cause for cause in found.causes]
    if first:
        assert causes[0] == first
    else:  # one missing rank alone: called something else, or behind
        assert set(causes[:3]) == {"collective-mismatch", "straggler-rank", "frozen-rank"}
    assert found.culprit == culprit


def _entry(seq: int, missing: str, expected: str = "0, 1, 2, 3") -> str:
    return (f"Not all ranks joining collective, sequence number: {seq}\ninternal record id: {seq - 1}\n"
            f"group info: 0:default_pg\ncollective: nccl:all_reduce\nmissing ranks: {{{missing}}}\n"
            f"input sizes: [[1]]\noutput sizes: [[1]]\nworld size: 4\nexpected ranks: {{{expected}}}\n")


def test_each_analyzer_entry_is_read_with_its_own_group(tmp_path):
    # Two entries, in one report or in two: neither has every rank but one missing, so no rank called alone.
    (tmp_path / "report.log").write_text(_entry(3, "2, 3") + _entry(4, "1"))
    for inputs in ([tmp_path / "report.log"], [_written(tmp_path / "a.log", _entry(3, "2, 3")),
                                                _written(tmp_path / "b.log", _entry(4, "1"))]):
        found = diagnose.diagnose(inputs)
        assert found.culprit is None and found.causes[0].confidence < 0.5
    (tmp_path / "alone.log").write_text(_entry(3, "1") + _entry(4, "1, 2, 3"))
    found = diagnose.diagnose([tmp_path / "alone.log"])
    assert found.causes[0].cause == "collective-mismatch" and found.culprit == 0


def test_the_launchers_first_death_outranks_the_analyzers_missing_rank(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 2 "
                   "(pid: 103) of binary: /usr/bin/python\n" + _entry(41, "1"))
    assert diagnose.diagnose([log]).culprit == 2


def _written(path, text: str):
    path.write_text(text)
    return path
